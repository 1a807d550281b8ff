"""Time in search: the ``since`` / ``until`` / ``as_of`` arguments, the recency decay
(``search.recency_half_life``) and ``sort="recent"`` (docs/search.md, "Time").

A section's time is when its live interval began (``kbdb.store.history``): when it was
learned, or learned again after being retired. Under ``as_of`` it is the interval live at
that moment, and ages count up to that moment instead of now.

- **Filters** become part of the allow set the ranking runs with (``store.queries
  .allowed_kbids``), never a filter over a page.
- **Decay** multiplies the final score of each candidate by ``0.5 ** (age / half_life)``:
  the lexical score after its boosts, the fused score of vector and hybrid searches.
- **Recent** orders the candidates newest first, ties by score. Lexical candidates are
  every match; vector and hybrid ones the fused candidate list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Literal, get_args

from kbdb import clock
from kbdb.config import DURATION_SECONDS, duration_seconds
from kbdb.errors import InvalidArgumentError
from kbdb.search.fusion import Fused
from kbdb.search.lexical import Ranking

if TYPE_CHECKING:
    from kbdb.search.lexical import Hit, LexicalSearcher
    from kbdb.search.query import ParsedQuery

Sort = Literal["relevance", "recent"]
SORTS: tuple[str, ...] = get_args(Sort)
STORE_FORMAT = clock.STORE_FORMAT
ACCEPTED = (
    "a duration back from now (30m, 12h, 7d, 2w), a date (2026-11-01, midnight UTC) or an "
    "ISO-8601 timestamp (2026-11-01T09:30:00Z; without a zone, UTC)"
)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")


def parse_moment(value: object, name: str, now: datetime) -> str:
    """``value`` (a string in one of the ``ACCEPTED`` forms, or a ``datetime``) as the
    store's UTC text, to the second (rounded down: stored times are whole seconds, so the
    comparisons do not change)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        seconds = duration_seconds(text)
        if seconds is not None:
            moment = now - timedelta(seconds=seconds)
        else:
            try:
                if _DATE.match(text):
                    moment = datetime.strptime(text, "%Y-%m-%d")
                else:
                    moment = datetime.fromisoformat(text.replace("z", "Z"))
            except ValueError:
                raise InvalidArgumentError(f"{name} must be {ACCEPTED} (got {value!r})") from None
    else:
        raise InvalidArgumentError(f"{name} must be {ACCEPTED} (got {value!r})")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime(STORE_FORMAT)


def seconds_of(stamp: str) -> float:
    """A stored time as seconds since the epoch."""
    try:
        return datetime.strptime(stamp, STORE_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return datetime.fromisoformat(stamp).astimezone(timezone.utc).timestamp()


@dataclass(frozen=True)
class Timing:
    """The time arguments of one search, checked and normalized."""

    since: str | None = None
    until: str | None = None
    as_of: str | None = None
    sort: Sort = "relevance"
    half_life: float | None = None  # seconds; None: no decay
    half_life_text: str = ""
    now: str = ""  # what ages count up to: ``as_of``, else the time of the search

    @property
    def reorders(self) -> bool:
        """Whether the candidates' order depends on their time."""
        return self.sort == "recent" or self.half_life is not None

    def factor(self, start: str | None) -> float:
        """The decay factor of a section whose interval began at ``start``."""
        if self.half_life is None or start is None:
            return 1.0
        age = max(0.0, seconds_of(self.now) - seconds_of(start))
        return float(0.5 ** (age / self.half_life))

    def explain(self, start: str | None, factor: float) -> dict[str, object]:
        out: dict[str, object] = {"valid_from": start}
        if self.half_life is not None and start is not None:
            age = max(0.0, seconds_of(self.now) - seconds_of(start))
            out["age_days"] = round(age / DURATION_SECONDS["d"], 4)
            out["half_life"] = self.half_life_text
            out["factor"] = round(factor, 6)
        return out

    def order_hits(self, hits: list[Hit], starts: dict[str, str], explain: bool) -> list[Hit]:
        """Lexical hits decayed and ordered: strict above relaxed, then newest first for
        ``recent``, then by score."""
        keyed = []
        for h in hits:
            start = starts.get(h.kbid)
            f = self.factor(start)
            if f != 1.0:
                h.recency = f
                h.score *= f
                h.boost *= f  # the confidence divides the boosts back out
            if explain:
                h.extra = {**(h.extra or {}), "recency": self.explain(start, f)}
            keyed.append((h, _neg_time(start) if self.sort == "recent" else 0.0))
        keyed.sort(key=lambda p: (p[0].relaxed, p[1], -p[0].score, p[0].kbid))
        return [h for h, _ in keyed]

    def rerank(
        self,
        searcher: LexicalSearcher,
        parsed: ParsedQuery,
        ranking: Ranking,
        page_end: int,
        allow: list[str] | None,
        explain: bool,
    ) -> Ranking:
        """``ranking`` (a lexical one) decayed and ordered by these settings. Sorting by
        time needs every match; so does a decayed page that a match outside the candidates
        could still enter (its score, boosts at most, is no more than the lowest candidate's
        engine score times the largest boost), in which case every match is ranked."""
        complete = len(ranking.hits) >= ranking.total
        if not complete and self.sort == "recent":
            ranking = _rank_all(searcher, parsed, ranking, page_end, allow, explain)
            complete = True
        source = searcher.source
        with source.read() as conn:
            starts = source.starts(conn, [h.kbid for h in ranking.hits], self.as_of)
        hits = self.order_hits(ranking.hits, starts, explain)
        if not complete and hits:
            cfg = searcher.cfg
            cap = (
                (1.0 + max(cfg.sibling_boost, 0.0))
                * (1.0 + max(cfg.name_boost, 0.0))
                * (1.0 + max(cfg.heading_boost, 0.0))
            )
            floor = min(h.lexical_score or 0.0 for h in hits) * cap
            last = hits[min(page_end, len(hits)) - 1].score
            if len(hits) < page_end or last < floor:
                ranking = _rank_all(searcher, parsed, ranking, page_end, allow, explain)
                with source.read() as conn:
                    starts = source.starts(conn, [h.kbid for h in ranking.hits], self.as_of)
                hits = self.order_hits(ranking.hits, starts, explain)
        return Ranking(hits, ranking.total, ranking.relaxed)

    def order_fused(self, fused: list[Fused], starts: dict[str, str]) -> list[Fused]:
        """Fused candidates decayed (their fused score) and ordered as ``order_hits``."""
        out = [Fused(f.kbid, f.score * self.factor(starts.get(f.kbid)), *f[2:]) for f in fused]
        if self.sort == "recent":
            out.sort(key=lambda f: (_neg_time(starts.get(f.kbid)), -f.score, f.kbid))
        else:
            out.sort(key=lambda f: (-f.score, f.kbid))
        return out


def _neg_time(start: str | None) -> float:
    return 0.0 if start is None else -seconds_of(start)


def timing(
    since: object,
    until: object,
    as_of: object,
    sort: object,
    half_life: str,
) -> Timing | None:
    """The checked time arguments, or None when there are none (and no decay)."""
    nothing = since is None and until is None and as_of is None
    if nothing and sort in (None, "relevance") and not half_life:
        return None
    if sort is None:
        sort = "relevance"
    if sort not in SORTS:
        raise InvalidArgumentError(f"sort must be one of relevance, recent (got {sort!r})")
    now = clock.now()
    at = None if as_of is None else parse_moment(as_of, "as_of", now)
    lo = None if since is None else parse_moment(since, "since", now)
    hi = None if until is None else parse_moment(until, "until", now)
    seconds = duration_seconds(half_life) if half_life else None
    return Timing(
        since=lo,
        until=hi,
        as_of=at,
        sort=sort,  # type: ignore[arg-type]
        half_life=seconds,
        half_life_text=half_life,
        now=at if at is not None else now.strftime(STORE_FORMAT),
    )


def _rank_all(
    searcher: LexicalSearcher,
    parsed: ParsedQuery,
    ranking: Ranking,
    page_end: int,
    allow: list[str] | None,
    explain: bool,
) -> Ranking:
    return searcher.rank(
        parsed, want=max(ranking.total, page_end), page_end=page_end, allow=allow, explain=explain
    )
