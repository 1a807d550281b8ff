"""Split source code into sections by definition, with tree-sitter (docs/code.md).

A function, method, class, struct, enum, trait, interface, impl or namespace is a
section. Its lines run from its doc comment (the comments and attributes right above it,
or its decorators) to its last line. A type's section holds its own lines but not those
of the definitions inside it, which are sections of their own, so no line is indexed
twice; a function keeps what is nested inside it. The lines between definitions (imports,
constants, top-level statements) are grouped into sections of their own, run by run.
Every non-blank line of the file is in exactly one section, parse errors or not:
tree-sitter recovers from errors, and what it cannot place stays top-level code. The
grammar leaves a macro call's arguments as tokens; a call whose tokens hold items
(Rust's ``cfg_rt! { pub fn spawn … }``, ``pin_project! { pub struct … }``) has them
parsed again, in place, and its definitions are sections as if the call were not there.

A section's heading is its qualified name and signature, ``Config.parse(self, path:
str) -> Config`` or ``class Config(Base)``; its heading path is the names of the
definitions around it and its own. A section over ``MAX_SECTION_LINES`` lines or
``MAX_SECTION_CHARS`` characters is cut, at line boundaries, into parts that keep the
heading, the last ones marked ``(part N)``.

The tree is walked with an explicit stack, and only into the bodies of types (never into
expressions or function bodies), so 10,000 nested brackets cost no Python recursion and
nothing per bracket; macro calls inside macro calls are parsed again at most
``MAX_MACRO_DEPTH`` deep.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbdb.ingest.codelang import (
    Grammar,
    function_value,
    grammar_for,
    macro_items,
    member_owner,
    name_node,
)
from kbdb.ingest.formats import FormatRejectedError
from kbdb.ingest.section import ParsedDocument, ParsedSection, unique_path

CODE_INVALID = "code_invalid"
"""Warning: the parser found syntax errors; the definitions it could not place stay in
the top-level code around them."""

MAX_SECTION_LINES = 400
"""The most lines one section holds; a longer definition is cut into parts."""

MAX_SECTION_CHARS = 24_000
"""The most characters one section holds (a line longer than this stays whole)."""

MAX_DEPTH = 6
"""Definitions nested deeper than this stay in the section of the one around them: the
heading levels run 1–6, and a chain of 10,000 nested classes must not make 10,000
heading paths of up to 10,000 names."""

MAX_MACRO_DEPTH = 4
"""Macro calls nested deeper than this stay unread, in the section around them: each
level parses the call's text again (``cfg_rt! { cfg_net! { pub fn … } }`` is two)."""

MAX_HEADING_CHARS = 200
"""A signature longer than this is cut, with an ellipsis."""

_SPACE = re.compile(r"\s+")
_HEADING_ENDS = (",", ";", "{", ":", "=>", "=")
_INNER_SPACE = re.compile(r"(?<=[(\[]) | (?=[)\]])")


@dataclass
class _Def:
    """A definition found in the tree: its lines (0-based, inclusive), its heading and
    where it sits."""

    start: int
    end: int
    heading: str
    path: tuple[str, ...]
    qualifier: str  # what a member's heading is prefixed with: "Config."
    parent: int | None
    depth: int


@dataclass
class _Scope:
    """The definitions being read at one level: a file, or a type's body."""

    parent: int | None
    depth: int
    claimed: int  # the last line taken by a definition of this scope (or the header)
    path: tuple[str, ...]
    qualifier: str
    kind: str = ""  # the node type of the type whose body this is ("" for a file)
    lead: int | None = None  # first line of the comment run just read, if any
    lead_end: int = -1


def split(data: bytes | str, *, name: str) -> ParsedDocument:
    """Split a source file by definition.

    Args:
        data: The file's text.
        name: The file's name; its extension picks the grammar.

    Returns:
        The sections in line order, each with its lines.

    Raises:
        FormatRejectedError: the extension has no grammar.
    """
    grammar = grammar_for(name)
    if grammar is None:
        raise FormatRejectedError(f"no grammar for {name}", skip_code="UNSUPPORTED_TYPE")
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    source = text.encode("utf-8")
    import tree_sitter

    parser = tree_sitter.Parser(grammar.language())
    tree = parser.parse(source)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    defs = _definitions(grammar, tree.root_node, source, parser)
    sections = _sections(defs, lines, name)
    warnings = (CODE_INVALID,) if tree.root_node.has_error else ()
    return ParsedDocument(None, None, (), tuple(sections), warnings)


def _last_row(node: Any) -> int:
    """A node's last line: one that ends at the start of a line (a line comment with its
    newline) ends on the line before."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return int(end.row) - 1
    return int(end.row)


def _definitions(grammar: Grammar, root: Any, source: bytes, parser: Any) -> list[_Def]:
    """The definitions of the file in line order, parents before their members."""
    defs: list[_Def] = []
    # (children to read, their scope, how many macro calls they are inside)
    stack: list[tuple[Any, _Scope, int]] = [(iter(root.children), _Scope(None, 0, -1, (), ""), 0)]
    seen: dict[tuple[str, ...], int] = {}
    while stack:
        children, scope, expanded = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            continue
        first, last = int(child.start_point.row), _last_row(child)
        if child.type in grammar.macro_calls:
            scope.lead = None
            if expanded < MAX_MACRO_DEPTH:
                inner = _macro_tree(grammar, child, source, parser)
                if inner is not None:
                    stack.append((iter(inner.root_node.children), scope, expanded + 1))
            continue
        if child.type in grammar.comments or child.type in grammar.attached:
            if first <= scope.claimed:  # a comment trailing the previous definition
                continue
            if scope.lead is None or first > scope.lead_end + 1:
                scope.lead = first
            scope.lead_end = last
            continue
        if child.type in grammar.groups:
            group = grammar.groups[child.type]
            inner = child.child_by_field_name(group) if group else child
            if inner is not None:
                stack.append((iter(inner.children), scope, expanded))
            scope.lead = None
            continue
        found = _definition(grammar, child)
        lead, lead_end = scope.lead, scope.lead_end
        scope.lead = None
        if found is None or scope.depth >= MAX_DEPTH:
            continue
        node, head = found
        if (node.type, scope.kind) in grammar.kept:
            continue
        start = lead if lead is not None and lead_end >= first - 1 else first
        start = max(start, scope.claimed + 1)
        if last < start:  # shares its only line with what came before: stays there
            continue
        owner = member_owner(grammar, node)
        own_name, qualifier = _names(grammar, node, head, source, owner)
        base, prefix = scope.path, scope.qualifier
        if owner and not base and node.type in grammar.functions:  # a Go method
            base, prefix = (owner,), owner + grammar.separator
        heading = _heading(grammar, node, head, source, prefix)
        path = unique_path(base + (own_name,), seen)
        defs.append(_Def(start, last, heading, path, prefix, scope.parent, scope.depth))
        scope.claimed = last
        body = node.child_by_field_name("body") if node.type in grammar.types else None
        if body is not None:
            member = _Scope(
                len(defs) - 1,
                scope.depth + 1,
                int(node.start_point.row),
                path,
                prefix + qualifier + grammar.separator,
                node.type,
            )
            stack.append((iter(body.children), member, expanded))
    return defs


def _macro_tree(grammar: Grammar, node: Any, source: bytes, parser: Any) -> Any:
    """The tokens of a macro call that holds definitions, parsed as source of the file's
    language (None for other calls). Only the call's text is parsed, in place: its
    nodes keep their bytes and lines in the file."""
    inner = macro_items(grammar, node)
    if inner is None:
        return None
    parser.included_ranges = [inner]
    try:
        return parser.parse(source)
    finally:
        parser.included_ranges = []


def _definition(grammar: Grammar, node: Any) -> tuple[Any, Any] | None:
    """For a node that is (or wraps) a definition: the definition node and the node its
    heading starts at; else None."""
    head = node
    for _ in range(4):  # export default → template → class: a few wrappers at most
        if node.type in grammar.wrappers:
            field = grammar.wrappers[node.type]
            inner = node.child_by_field_name(field) if field else _first_definition(grammar, node)
            if inner is None:
                return None
            # A C ``typedef struct {…} name;`` starts its heading at ``typedef``; Python
            # decorators, ``export`` and ``template <…>`` stay out of the heading.
            head = node if field == "type" else inner
            node = inner
            continue
        break
    if node.type in grammar.functions:
        return node, head
    if node.type in grammar.types:
        if node.type.endswith("_specifier") and node.child_by_field_name("body") is None:
            return None  # ``struct point p;``: a use, not a definition
        return node, head
    if node.type in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        if len(declarators) == 1 and function_value(grammar, declarators[0]) is not None:
            return declarators[0], head
        return None
    if function_value(grammar, node) is not None:
        return node, head
    return None


def _first_definition(grammar: Grammar, node: Any) -> Any:
    for child in node.named_children:
        if _definition(grammar, child) is not None:
            return child
    return None


def _names(
    grammar: Grammar, node: Any, head: Any, source: bytes, owner: str | None
) -> tuple[str, str]:
    """A definition's name in heading paths, and what its members' headings are
    prefixed with."""
    bound = function_value(grammar, node)
    named = bound[0] if bound is not None else name_node(grammar, node)
    if named is not None:
        name = _collapse(source[named.start_byte : named.end_byte])
        if not name and head.type == "type_definition":
            name = _typedef_name(head, source)
        return name, name
    if head is not node and head.type == "type_definition":  # typedef struct {…} name;
        name = _typedef_name(head, source)
        return name, name
    if node.type == "impl_item" and owner:
        trait = node.child_by_field_name("trait")
        name = f"impl {_collapse(trait.text)} for {owner}" if trait else f"impl {owner}"
        return name, owner
    signature = _heading(grammar, node, head, source, "")
    return signature, owner or signature


def _typedef_name(node: Any, source: bytes) -> str:
    decl = node.child_by_field_name("declarator")
    return _collapse(source[decl.start_byte : decl.end_byte]) if decl is not None else ""


def _heading(grammar: Grammar, node: Any, head: Any, source: bytes, prefix: str) -> str:
    """``prefix`` + a function's name and signature, or a type's declaration line, up to
    its body."""
    body = node.child_by_field_name("body")
    bound = function_value(grammar, node)
    if bound is not None:
        named, value = bound
        body = value.child_by_field_name("body")
        params = value.child_by_field_name("parameters") or value.child_by_field_name("parameter")
        rest = _span(source, params, body) if params is not None else ""
        return _clip(prefix + _collapse(source[named.start_byte : named.end_byte]) + rest)
    named = name_node(grammar, node)
    if node.type in grammar.functions and named is not None:
        # A comment between the signature and the body (Python's ``def f(): # note``)
        # is not part of the signature.
        comment = next((c for c in node.children if c.type in grammar.comments), None)
        if comment is not None and (body is None or comment.start_byte < body.start_byte):
            body = comment
        if node.has_error:  # the body may be lost in the error: one line at most
            newline = source.find(b"\n", named.start_byte)
            if newline >= 0 and (body is None or newline < body.start_byte):
                body = None
        elif body is None:  # a declaration without a body: all of it
            return _clip(prefix + _collapse(source[named.start_byte : node.end_byte]))
        return _clip(prefix + _span(source, named, body))
    end = body.start_byte if body is not None and body.start_byte > head.start_byte else None
    if end is None and node.type == "macro_definition" and named is not None:
        end = named.end_byte
    if end is None:  # no body (Go's ``type X struct {``): the first line
        newline = source.find(b"\n", head.start_byte, node.end_byte)
        end = newline if newline >= 0 else node.end_byte
        if node.type == "type_declaration" and source[:end].rstrip().endswith(b"("):
            specs = [name_node(grammar, c) for c in node.named_children]
            names = ", ".join(_collapse(n.text) for n in specs if n is not None)
            return _clip(f"type ({names})")
    if named is not None and prefix and named.start_byte < end:
        text = (
            _collapse(source[head.start_byte : named.start_byte])
            + " "
            + prefix
            + _collapse(source[named.start_byte : end])
        )
        return _clip(text.strip())
    return _clip(_collapse(source[head.start_byte : end]))


def _span(source: bytes, first: Any, body: Any) -> str:
    """The collapsed text from ``first`` to the start of ``body`` (or ``first``'s line's
    end when there is no body)."""
    end = body.start_byte if body is not None and body.start_byte > first.start_byte else None
    if end is None:
        newline = source.find(b"\n", first.start_byte)
        end = newline if newline >= 0 else len(source)
    return _collapse(source[first.start_byte : end])


def _collapse(raw: bytes) -> str:
    """One line: whitespace runs as one space, none inside brackets' edges
    (``f(\n    self,\n)`` reads ``f(self,)``)."""
    text = _SPACE.sub(" ", raw.decode("utf-8", errors="replace")).strip()
    return _INNER_SPACE.sub("", text).replace(",)", ")")


def _clip(text: str) -> str:
    """A heading without what opens the body (``:``, ``{``, ``=>``), at most
    ``MAX_HEADING_CHARS`` long."""
    text = text.strip()
    for end in _HEADING_ENDS:
        if text.endswith(end):
            text = text[: -len(end)].rstrip()
    if len(text) > MAX_HEADING_CHARS:
        return text[: MAX_HEADING_CHARS - 1].rstrip() + "…"
    return text


def _sections(defs: list[_Def], lines: list[str], name: str) -> list[ParsedSection]:
    """Give every line to its innermost definition (or to top-level code), then cut the
    sections out in line order."""
    owner = [-1] * len(lines)
    for index, d in enumerate(defs):  # parents come first: members overwrite them
        end = min(d.end, len(lines) - 1)
        owner[d.start : end + 1] = [index] * (end - d.start + 1)
    rows: list[list[int]] = [[] for _ in defs]
    # Top-level code: one entry per run of lines outside every definition, placed by its
    # first line among the definitions.
    items: list[tuple[int, int]] = []  # (first line, definition index or -1 - run index)
    runs: list[list[int]] = []
    for row, who in enumerate(owner):
        if who >= 0:
            rows[who].append(row)
        elif runs and runs[-1][-1] == row - 1:
            runs[-1].append(row)
        else:
            runs.append([row])
    items.extend((d.start, i) for i, d in enumerate(defs))
    items.extend((run[0], -1 - i) for i, run in enumerate(runs))
    items.sort()
    out: list[ParsedSection] = []
    first_part: dict[int, int] = {}  # definition index -> its first section
    for _, key in items:
        if key < 0:
            run = _trim(runs[-1 - key], lines)
            for part in _parts(run, lines):
                out.append(_section(name, 0, None, (), part, lines, None))
            continue
        d = defs[key]
        parent = first_part.get(d.parent) if d.parent is not None else None
        level = min(len(d.path), 6)
        for n, part in enumerate(_parts(rows[key], lines)):
            if n == 0:
                first_part[key] = len(out)
                span = (d.start, d.end) if len(part) == len(rows[key]) else None
                out.append(_section(d.heading, level, parent, d.path, part, lines, span))
            else:
                heading = f"{d.heading} (part {n + 1})"
                path = d.path[:-1] + (f"{d.path[-1]} (part {n + 1})",)
                out.append(_section(heading, level, parent, path, part, lines, None))
    return out


def _trim(rows: list[int], lines: list[str]) -> list[int]:
    start, end = 0, len(rows)
    while start < end and not lines[rows[start]].strip():
        start += 1
    while end > start and not lines[rows[end - 1]].strip():
        end -= 1
    return rows[start:end]


def _parts(rows: list[int], lines: list[str]) -> list[list[int]]:
    """``rows`` cut into runs of at most ``MAX_SECTION_LINES`` lines and
    ``MAX_SECTION_CHARS`` characters (a part has at least one line)."""
    if not rows:
        return []
    parts: list[list[int]] = [[]]
    size = 0
    for row in rows:
        width = len(lines[row]) + 1
        if parts[-1] and (len(parts[-1]) >= MAX_SECTION_LINES or size + width > MAX_SECTION_CHARS):
            parts.append([])
            size = 0
        parts[-1].append(row)
        size += width
    return parts


def _section(
    heading: str,
    level: int,
    parent: int | None,
    path: tuple[str, ...],
    rows: list[int],
    lines: list[str],
    span: tuple[int, int] | None,
) -> ParsedSection:
    """One section of ``rows`` (blank lines in a row kept once). ``span``: the lines to
    cite when they are more than ``rows`` (a class around its methods)."""
    kept: list[str] = []
    for row in rows:
        line = lines[row]
        if line.strip() or (kept and kept[-1].strip()):
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    content = "\n".join(kept) + "\n" if kept else ""
    first, last = span if span is not None else (rows[0], rows[-1])
    return ParsedSection(
        heading=heading,
        level=level,
        parent=parent,
        content=content,
        body=content,
        code="",
        heading_path=path,
        start_line=first + 1,
        end_line=last + 1,
    )
