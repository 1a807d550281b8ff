"""What gets indexed for a section: the ``heading``, ``body``, ``code``, ``path`` and
``anchor`` fields (SPEC §3).

Fenced code blocks stay in a section's content but are indexed as the separate ``code``
field. A source-code section's comments are its body and its code the ``code`` field
(``kbdb.search.codefields``). A section's title and description count as heading text.
``path`` is the section's place in its document: the source file's name (without its
extension), the document's title and the headings above the section, so that every
section of a page carries the page's identity (a query for ``docker container ls`` or
``Get-Process`` finds the page's sections, not only its title section). ``anchor`` is the
section's anchor text, the labels of the links in other notes that point at it
(``section_anchors``, ``kbdb.store.queries.anchor_texts``); it is empty, and scores
nothing, in a knowledge base without links.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from kbdb.search.codefields import CODE_TYPES, code_fields

FIELD_NAMES = ("heading", "body", "code", "path", "anchor")
"""The lexical index's fields in field order, as ``explain`` names them (the engine's
``FIELD_*`` bits are ``1 << i`` in this order)."""

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_code(content: str) -> tuple[str, str]:
    """Split Markdown into (text outside fences, inner text of the fences)."""
    # No fence can open: the line walk would return the content unchanged. A one-character
    # test first (memchr-fast), since most sections have no backtick or tilde at all.
    if ("`" not in content or "```" not in content) and (
        "~" not in content or "~~~" not in content
    ):
        return content, ""
    body: list[str] = []
    code: list[str] = []
    fence: str | None = None
    for line in content.split("\n"):
        m = _FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
                fence = m.group(1)
                continue
            body.append(line)
        else:
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and (line[m.end() :].strip() == "")
            ):
                fence = None
                continue
            code.append(line)
    return "\n".join(body), "\n".join(code)


_COPY_SUFFIX = re.compile(r" \(\d+\)$")


def index_fields(
    heading: str,
    content: str,
    type: str,
    title: str | None,
    description: str | None,
    place: tuple[str | None, str | None, str | None] = (None, None, None),
    *,
    anchor: str = "",
    aliases: Sequence[str] = (),
) -> tuple[str, str, str, str, str]:
    """The (heading, body, code, path, anchor) texts the lexical index sees for one
    section. ``place`` is (source key, document title, document source path); ``anchor``
    the section's anchor text (``kbdb.store.queries.anchor_texts``); ``aliases`` its
    document's front-matter aliases."""
    head = " ".join(p for p in (heading, title if title and title != heading else None) if p)
    return (
        head,
        *body_fields(content, type, description),
        path_field(heading, *place, aliases=aliases),
        anchor,
    )


def path_field(
    heading: str,
    source_key: str | None,
    doc_title: str | None,
    source_path: str | None,
    *,
    aliases: Sequence[str] = (),
) -> str:
    """The ``path`` text: the file's name, the document title, its aliases and the
    ancestors' headings, each once, without the section's own heading (which is the
    ``heading`` field)."""
    parts: list[str] = []
    ancestors: list[str] = []
    if source_key and "#" in source_key:
        source, _, trail = source_key.partition("#")
        # A repeated path got " (2)" appended to its last heading; the rest of the trail
        # is the headings above this one. A "/" inside a heading splits it in two here,
        # which only matters for which words the field holds, not for their order.
        trail = _COPY_SUFFIX.sub("", trail)
        if heading and trail.endswith(heading):
            trail = trail[: -len(heading)]
        ancestors = [h for h in trail.split("/") if h]
        stem = file_stem(source) if source_path else ""
        if stem:
            parts.append(stem)
    if doc_title and doc_title != heading and doc_title not in ancestors:
        parts.append(doc_title)
    parts.extend(a for a in dict.fromkeys(aliases) if a not in parts)
    parts.extend(ancestors)
    return " ".join(parts)


def definition_names(heading: str, type: str, source_key: str | None) -> tuple[str, ...]:
    """What a query must be to be a section's whole heading (the heading boost): the
    heading. For a source-code section, the names of its definition instead: its own name,
    the last element of its heading path (``parse``; ``impl Config`` stays itself), and
    its qualified name, the heading before its parameters (``Config.parse``), so that a
    type's name finds the type before the constructors and ``impl`` blocks whose
    signatures repeat it, and ``Config::parse`` finds the method."""
    if type not in CODE_TYPES or not source_key or "#" not in source_key:
        return (heading,)
    trail = _COPY_SUFFIX.sub("", source_key.partition("#")[2])
    own = trail.rsplit("/", 1)[-1]
    qualified = heading.split("(", 1)[0].strip()
    for _ in range(_GENERIC_DEPTH):  # ``spawn_local_on<F>``, ``Map<K, Vec<V>>``
        unwrapped = _GENERICS.sub("", qualified)
        if unwrapped == qualified:
            break
        qualified = unwrapped
    return tuple(n for n in dict.fromkeys((own, qualified)) if n) or (heading,)


_GENERICS = re.compile(r"<[^<>]*>")
_GENERIC_DEPTH = 4
"""Type parameter lists nested deeper than this stay in a qualified name."""
_SEPARATORS = re.compile(r"\s*(?:::|\.|->)\s*")


def identifier_key(name: str) -> str:
    """A name as an identifier search compares it: without case and underscores, its
    separators one dot (``Config::parse_all``, ``config.ParseAll`` → ``config.parseall``)."""
    return _SEPARATORS.sub(".", name.strip()).replace("_", "").lower()


def names_the_definition(names: tuple[str, ...], key: str) -> bool:
    """Whether a query whose ``identifier_key`` is ``key`` is the name of a code
    section's definition (``definition_names``): its own name, its qualified name, or
    the end of its qualified name from a separator on (``Cache::get`` for
    ``store::Cache::get``)."""
    for name in names:
        own = identifier_key(name)
        if own == key or (" " not in name and own.endswith("." + key)):
            return True
    return False


_TEST_FILE = re.compile(
    r"(?:^|/)(?:tests?|__tests__)/"  # a tests/ or test/ folder
    r"|(?:^|/)(?:tests?\.\w+|test_[^/]*)$"  # tests.rs, test_config.py
    r"|_tests?\.\w+$|\.(?:test|spec)\.\w+$"  # config_test.go, app.test.js, app.spec.ts
)
_TEST_SCOPES = frozenset({"tests", "test"})


def in_test_code(source_key: str | None) -> bool:
    """Whether a code section is test code, by its place: its file (the path from the
    learned folder) is in a ``tests``, ``test`` or ``__tests__`` folder or named like a
    test file (``test_config.py``, ``config_test.go``, ``config.spec.ts``, ``tests.rs``),
    or it is inside a definition named ``tests`` or ``test`` (Rust's
    ``#[cfg(test)] mod tests { … }``)."""
    if not source_key:
        return False
    path, _, trail = source_key.partition("#")
    if _TEST_FILE.search(path):
        return True
    return any(name in _TEST_SCOPES for name in trail.split("/")[:-1])


def file_stem(path: str) -> str:
    """A file path's last component without its extension: a page's name."""
    return posixpath.splitext(posixpath.basename(path.replace("\\", "/")))[0]


def body_fields(content: str, type: str, description: str | None) -> tuple[str, str]:
    """The (body, code) texts of ``index_fields``: what a snippet is cut from is the body."""
    if type.startswith("image/"):
        return description or "", ""
    if type == "text/markdown":
        body, code = split_code(content)
    elif type == "application/json":
        # Here, not at the top: kbdb.ingest loads the whole ingest package (pathspec, the
        # HTML parser), which a search never needs.
        from kbdb.ingest.content import json_index_text

        body, code = json_index_text(content), ""
    elif type in CODE_TYPES:
        body, code = code_fields(content, type)
    else:
        body, code = content, ""
    if description:
        body = f"{description}\n{body}"
    return body, code
