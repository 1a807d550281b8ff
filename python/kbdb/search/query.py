"""Parsing a query string into engine clauses and phrases (SPEC §4.1).

- Text in double quotes is a phrase: its terms must occur adjacently in one field. An
  unbalanced quote is treated as a space.
- Every other word is a clause. A clause matches through the term itself or any of its
  synonyms (weighted lower). The whole form of a split identifier is an optional clause: it
  adds to the score but is not required; each part also accepts the whole form.
"""

from __future__ import annotations

import re

from kbdb import _core
from kbdb.errors import InvalidArgumentError
from kbdb.search.synonyms import Synonyms

_QUOTED = re.compile(r'"([^"]*)"')

MAX_QUERY_TERMS = 1024
"""Distinct query terms accepted. A longer query (a pasted document) is refused with
INVALID_ARGUMENT rather than letting one search hold the engine for seconds."""


class ParsedQuery:
    """``clauses``: per distinct term, its (term, weight) alternatives and whether the
    clause is required (False: only the whole form of a split identifier); ``phrases``:
    (term, offset) runs; ``surfaces``: per clause, the word as the user typed it;
    ``required``: how many clauses are required; ``text``: the query as typed. A plain
    class: creating a dataclass costs a cold ``kbdb search`` about a millisecond."""

    __slots__ = ("clauses", "phrases", "required", "surfaces", "text")

    def __init__(
        self,
        clauses: tuple[tuple[tuple[tuple[str, float], ...], bool], ...],
        phrases: tuple[tuple[tuple[str, int], ...], ...],
        surfaces: tuple[str, ...],
        text: str = "",
    ) -> None:
        self.clauses = clauses
        self.phrases = phrases
        self.surfaces = surfaces
        self.text = text
        self.required = sum([req for _, req in clauses])

    @property
    def empty(self) -> bool:
        return not self.clauses


def query_tf_weight(count: int, k3: float) -> float:
    """How much a clause whose term occurs ``count`` times in the query weighs:
    ``(k3 + 1) · count / (k3 + count)`` (Robertson's query-term saturation), so 1 for one
    occurrence, nearly ``count`` itself for a large ``k3`` (Lucene's and bm25s's plain
    count) and always 1 at ``k3 = 0`` (a repeated word counted once)."""
    if count <= 1:
        return 1.0
    return (k3 + 1.0) * count / (k3 + count)


def parse_query(
    text: str,
    analyzer: _core.Analyzer,
    synonyms: Synonyms | None,
    query_tf_k3: float,
) -> ParsedQuery:
    """Analyze ``text`` into clauses (one per distinct term) and phrases. A term that
    occurs several times in the query is one clause whose weights are multiplied by
    ``query_tf_weight(occurrences, query_tf_k3)``."""
    pieces: list[tuple[str, bool]] = []  # (text, is_phrase)
    pos = 0
    for m in _QUOTED.finditer(text):
        pieces.append((text[pos : m.start()], False))
        pieces.append((m.group(1), True))
        pos = m.end()
    pieces.append((text[pos:], False))

    clauses: list[tuple[tuple[tuple[str, float], ...], bool]] = []
    surfaces: list[str] = []
    seen: dict[str, int] = {}
    repeats: dict[int, int] = {}  # clause -> occurrences, for the repeated ones only
    phrases: list[tuple[tuple[str, int], ...]] = []
    for piece, is_phrase in pieces:
        tokens = analyzer.query_tokens(piece.replace('"', " "))
        if is_phrase:
            parts = [(term, position) for term, _, position, optional in tokens if not optional]
            if len(parts) > 1:
                base = parts[0][1]
                phrases.append(tuple((t, p - base) for t, p in parts))
        # A split identifier is matched by all of its parts or by its whole form: each part
        # clause also accepts the whole form at 1/n weight, so a section that only writes
        # the whole form (``sqlite`` for the query ``SQLite``) still passes the strict pass.
        whole_of: dict[int, tuple[str, float]] = {}
        for i, (term, surface, _, optional) in enumerate(tokens):
            if optional:
                # The parts directly follow their whole form: scan that run only, so a
                # query of thousands of identifiers (10k terms) stays linear.
                part_idx = []
                j = i + 1
                while j < len(tokens) and tokens[j][1] == surface and not tokens[j][3]:
                    part_idx.append(j)
                    j += 1
                for j in part_idx:
                    whole_of[j] = (term, 1.0 / len(part_idx))
        for i, (term, surface, _, optional) in enumerate(tokens):
            if term in seen:
                i = seen[term]
                repeats[i] = repeats.get(i, 1) + 1
                if not optional and not clauses[i][1]:
                    clauses[i] = (clauses[i][0], True)
                continue
            alternatives: tuple[tuple[str, float], ...] = ((term, 1.0),)
            if i in whole_of and whole_of[i][0] != term:
                alternatives += (whole_of[i],)
            if synonyms is not None:
                alternatives += synonyms.alternatives(term)
            seen[term] = len(clauses)
            clauses.append((alternatives, not optional))
            surfaces.append(surface)
            if len(clauses) > MAX_QUERY_TERMS:
                raise InvalidArgumentError(
                    f"query has more than {MAX_QUERY_TERMS} distinct terms",
                    hint="search with a few short keyword queries instead of a whole text",
                )
    for i, n in repeats.items():
        factor = query_tf_weight(n, query_tf_k3)
        alts, required = clauses[i]
        clauses[i] = (tuple((t, w * factor) for t, w in alts), required)
    return ParsedQuery(tuple(clauses), tuple(phrases), tuple(surfaces), text)
