"""The languages ``kbdb.ingest.code`` splits: for each tree-sitter grammar, which syntax
nodes are definitions, which wrap one, which only group statements, and how a
definition's name is found (docs/code.md).

Node type names are the grammars' own (tree-sitter-python 0.25, -rust 0.24, -go 0.25,
-javascript 0.25, -typescript 0.23, -java 0.23, -c 0.24, -cpp 0.23). A grammar release
that renames a node type makes that construct top-level code again, never an error:
``tests/test_code.py`` pins one definition of every kind per language.
"""

from __future__ import annotations

import importlib
import posixpath
from dataclasses import dataclass, field
from functools import cache
from typing import Any

_C_DECLARATORS = frozenset(
    {
        "function_declarator",
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
    }
)
"""C and C++ declarator nodes around a function's name (``*f(int)``, ``&g()``)."""

_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
"""JavaScript values that make ``const f = …`` (or a class field) a function."""


@dataclass(frozen=True)
class Grammar:
    """How one grammar's syntax tree maps to definitions.

    Attributes:
        name: The language, for messages.
        module: The grammar package (``tree_sitter_python``).
        function: Its function returning the language pointer.
        separator: Joins a member to its enclosing type in headings (``Config.parse``).
        functions: Function-like definitions: their heading starts at their name, and
            what is nested inside them stays in their section.
        types: Type-like definitions: their heading starts at their first keyword, and
            the definitions in their ``body`` become sections of their own.
        wrappers: Nodes that wrap one definition (decorators, ``export``, ``template``),
            with the field holding it (None: the first named child that is one). The
            wrapper's lines belong to the definition.
        groups: Nodes whose children are read as if they stood in the enclosing scope
            (``#ifdef`` blocks, ``extern "C" { … }``), with the field holding them (None:
            the node itself).
        declarators: Nodes that declare one name bound to a function
            (``const parse = () => …``): the field of the name and of the value.
        comments: Comment nodes: a run of them right above a definition is its doc
            comment and belongs to its section.
        attached: Other nodes that belong to the definition below them (Rust's
            ``#[derive(…)]``).
        kept: Definitions that stay in the section of the type whose body holds them, as
            (definition, type) node types: a Rust ``type Item = u32;`` in an ``impl``
            is part of the implementation, while a ``type`` alias in a module is a
            section.
        macro_calls: Macro calls whose arguments the grammar leaves as unparsed tokens
            but that may hold definitions (Rust's ``cfg_rt! { pub fn spawn … }``): the
            tokens are parsed again as source (``macro_items``).
    """

    name: str
    module: str
    function: str = "language"
    separator: str = "."
    functions: frozenset[str] = frozenset()
    types: frozenset[str] = frozenset()
    wrappers: dict[str, str | None] = field(default_factory=dict)
    groups: dict[str, str | None] = field(default_factory=dict)
    declarators: dict[str, tuple[str, str]] = field(default_factory=dict)
    comments: frozenset[str] = frozenset({"comment"})
    attached: frozenset[str] = frozenset()
    kept: frozenset[tuple[str, str]] = frozenset()
    macro_calls: frozenset[str] = frozenset()

    def language(self) -> Any:
        return _language(self.module, self.function)


@cache
def _language(module: str, function: str) -> Any:
    import tree_sitter

    return tree_sitter.Language(getattr(importlib.import_module(module), function)())


_PYTHON = Grammar(
    name="python",
    module="tree_sitter_python",
    functions=frozenset({"function_definition"}),
    types=frozenset({"class_definition"}),
    wrappers={"decorated_definition": "definition"},
)
_RUST = Grammar(
    name="rust",
    module="tree_sitter_rust",
    separator="::",
    # A trait's required method (``fn read(&mut self) -> usize;``) is a definition too.
    functions=frozenset({"function_item", "function_signature_item"}),
    types=frozenset(
        {
            *("struct_item", "enum_item", "union_item", "trait_item", "impl_item"),
            *("mod_item", "macro_definition", "type_item"),
        }
    ),
    comments=frozenset({"line_comment", "block_comment"}),
    attached=frozenset({"attribute_item"}),
    kept=frozenset({("type_item", "impl_item"), ("type_item", "trait_item")}),
    macro_calls=frozenset({"macro_invocation"}),
)
_GO = Grammar(
    name="go",
    module="tree_sitter_go",
    functions=frozenset({"function_declaration", "method_declaration"}),
    types=frozenset({"type_declaration"}),
)
_JS_FUNCTIONS = frozenset(
    {"function_declaration", "generator_function_declaration", "method_definition"}
)
_JS_DECLARATORS = {
    "variable_declarator": ("name", "value"),
    "field_definition": ("property", "value"),
}
_JAVASCRIPT = Grammar(
    name="javascript",
    module="tree_sitter_javascript",
    functions=_JS_FUNCTIONS,
    types=frozenset({"class_declaration"}),
    wrappers={"export_statement": "declaration"},
    declarators=_JS_DECLARATORS,
)
_TS_TYPES = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "interface_declaration",
        "enum_declaration",
        "type_alias_declaration",
        "internal_module",
        "module",
    }
)
_TS_WRAPPERS: dict[str, str | None] = {
    "export_statement": "declaration",
    "expression_statement": None,
}
_TS_DECLARATORS = {**_JS_DECLARATORS, "public_field_definition": ("name", "value")}
_TYPESCRIPT = Grammar(
    name="typescript",
    module="tree_sitter_typescript",
    function="language_typescript",
    functions=_JS_FUNCTIONS,
    types=_TS_TYPES,
    wrappers=_TS_WRAPPERS,
    declarators=_TS_DECLARATORS,
)
_TSX = Grammar(
    name="tsx",
    module="tree_sitter_typescript",
    function="language_tsx",
    functions=_JS_FUNCTIONS,
    types=_TS_TYPES,
    wrappers=_TS_WRAPPERS,
    declarators=_TS_DECLARATORS,
)
_JAVA = Grammar(
    name="java",
    module="tree_sitter_java",
    functions=frozenset(
        {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
    ),
    types=frozenset(
        {
            "class_declaration",
            "interface_declaration",
            "enum_declaration",
            "record_declaration",
            "annotation_type_declaration",
        }
    ),
    groups={"enum_body_declarations": None},
    comments=frozenset({"line_comment", "block_comment"}),
)
_C_GROUPS: dict[str, str | None] = {
    "preproc_if": None,
    "preproc_ifdef": None,
    "preproc_else": None,
    "preproc_elif": None,
    "preproc_elifdef": None,
    "linkage_specification": "body",
}
_C = Grammar(
    name="c",
    module="tree_sitter_c",
    functions=frozenset({"function_definition"}),
    types=frozenset({"struct_specifier", "union_specifier", "enum_specifier"}),
    wrappers={"type_definition": "type", "declaration": "type"},
    groups=_C_GROUPS,
)
_CPP = Grammar(
    name="c++",
    module="tree_sitter_cpp",
    separator="::",
    functions=frozenset({"function_definition"}),
    types=frozenset(
        {
            "struct_specifier",
            "union_specifier",
            "enum_specifier",
            "class_specifier",
            "namespace_definition",
        }
    ),
    wrappers={"type_definition": "type", "declaration": "type", "template_declaration": None},
    groups=_C_GROUPS,
)

_BY_EXTENSION: dict[str, Grammar] = {
    ".py": _PYTHON,
    ".pyi": _PYTHON,
    ".rs": _RUST,
    ".go": _GO,
    ".js": _JAVASCRIPT,
    ".mjs": _JAVASCRIPT,
    ".cjs": _JAVASCRIPT,
    ".jsx": _JAVASCRIPT,
    ".ts": _TYPESCRIPT,
    ".mts": _TYPESCRIPT,
    ".cts": _TYPESCRIPT,
    ".tsx": _TSX,
    ".java": _JAVA,
    ".c": _C,
    # A header may be C or C++; the C++ grammar reads both (C++ is nearly a superset).
    ".h": _CPP,
    ".cc": _CPP,
    ".cpp": _CPP,
    ".cxx": _CPP,
    ".c++": _CPP,
    ".hh": _CPP,
    ".hpp": _CPP,
    ".hxx": _CPP,
    ".h++": _CPP,
}


def grammar_for(name: str) -> Grammar | None:
    """The grammar of a file name's extension, or None."""
    return _BY_EXTENSION.get(posixpath.splitext(name)[1].lower())


def name_node(grammar: Grammar, node: Any) -> Any:
    """The node naming a definition, or None (a Rust ``impl``, an anonymous struct)."""
    if node.type == "function_definition" and grammar.name in ("c", "c++"):
        decl = node.child_by_field_name("declarator")
        while decl is not None and decl.type in _C_DECLARATORS:
            decl = decl.child_by_field_name("declarator")
        return decl
    if node.type == "type_declaration":  # Go: ``type X struct {…}`` or a ``type (…)`` group
        spec = next((c for c in node.named_children if c.type == "type_spec"), None)
        return spec.child_by_field_name("name") if spec is not None else None
    if node.type == "type_spec":
        return node.child_by_field_name("name")
    return node.child_by_field_name("name")


def function_value(grammar: Grammar, node: Any) -> tuple[Any, Any] | None:
    """For a declarator binding a name to a function (``const f = (x) => …``), its name
    node and the function node; else None."""
    fields = grammar.declarators.get(node.type)
    if fields is None:
        return None
    name, value = (node.child_by_field_name(f) for f in fields)
    if name is None or value is None or value.type not in _FUNCTION_VALUES:
        return None
    return name, value


_ITEM_TOKENS = frozenset({"fn", "struct", "enum", "union", "trait", "impl", "mod", "type"})
"""Tokens that start a Rust item: a macro's token tree holding one of them at its top
level, or a macro call (``cfg_rt! { cfg_net! { … } }``, ``macro_rules! name``), is read
as items."""


def macro_items(grammar: Grammar, node: Any) -> Any:
    """The tokens between the brackets of a macro call that holds definitions at its
    top level, as a ``tree_sitter.Range`` to parse again; else None (``assert!(x)``,
    ``thread_local! { static … }``, an empty call)."""
    if node.type not in grammar.macro_calls or not node.children:
        return None
    tree = node.children[-1]
    if tree.type != "token_tree" or tree.child_count < 3:
        return None
    tokens = tree.children
    if not any(
        t.type in _ITEM_TOKENS or (t.type == "!" and n.type in ("token_tree", "identifier"))
        for t, n in zip(tokens, tokens[1:], strict=False)
    ):
        return None
    import tree_sitter

    opening, closing = tokens[0], tokens[-1]
    return tree_sitter.Range(
        opening.end_point, closing.start_point, opening.end_byte, closing.start_byte
    )


def member_owner(grammar: Grammar, node: Any) -> str | None:
    """The type a definition belongs to without being nested in it: a Go method's
    receiver type, the type of a Rust ``impl``."""
    if node.type == "method_declaration" and grammar.name == "go":
        receiver = node.child_by_field_name("receiver")
        return _first_of_type(receiver, "type_identifier") if receiver is not None else None
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        if target is None:
            return None
        if target.type == "type_identifier":
            return str(target.text.decode())
        return _first_of_type(target, "type_identifier") or str(target.text.decode())
    return None


def _first_of_type(node: Any, type: str) -> str | None:
    """The text of the first descendant of ``type``, breadth first with a bounded queue:
    a receiver or an ``impl`` target is a few nodes deep."""
    queue = [node]
    for _ in range(64):
        if not queue:
            break
        current = queue.pop(0)
        if current.type == type:
            return str(current.text.decode())
        queue.extend(current.named_children)
    return None
