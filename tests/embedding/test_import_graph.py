"""The modules of ``kbdb.embedding`` import one another without a cycle: neither at module
level nor inside functions (a deferred import only hides a cycle until the function runs).

Imports under ``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import kbdb

PACKAGE = Path(kbdb.__file__).parent / "embedding"
PREFIX = "kbdb.embedding."


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> set[str]:
    """Sibling modules imported anywhere in ``tree`` outside ``if TYPE_CHECKING:``."""
    found: set[str] = set()
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                found |= _imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith(PREFIX):
                found.add(node.module.removeprefix(PREFIX).split(".")[0])
            elif node.module == "kbdb.embedding":
                found |= {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix(PREFIX).split(".")[0]
                for a in node.names
                if a.name.startswith(PREFIX)
            }
        found |= _imports(node)
    return found


def graph() -> dict[str, set[str]]:
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return {
        m: _imports(ast.parse((PACKAGE / f"{m}.py").read_text(encoding="utf-8"))) & modules
        for m in modules
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return [*stack[stack.index(n) :], n]
            if n not in state and (cycle := visit(n)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (cycle := visit(m)):
            return cycle
    return None


def test_the_graph_is_read() -> None:
    edges = graph()
    assert {"base", "provider", "local", "api", "model", "download"} <= set(edges)
    assert "base" in edges["local"] and "base" in edges["api"]
    assert {"local", "api"} <= edges["provider"]  # the factory's deferred imports count


def test_no_import_cycle_within_embedding() -> None:
    assert find_cycle(graph()) is None, " -> ".join(find_cycle(graph()) or [])


def test_a_cycle_would_be_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_public_names_still_import() -> None:
    import kbdb.embedding as emb

    for name in emb.__all__:
        assert getattr(emb, name) is not None, name
    provider = importlib.import_module("kbdb.embedding.provider")
    for name in ("EmbeddingProvider", "NullEmbeddingProvider", "MAX_BATCH", "finish_vectors"):
        assert getattr(provider, name) is getattr(importlib.import_module(PREFIX + "base"), name)
    model = importlib.import_module("kbdb.embedding.model")
    assert model.ModelFiles is emb.ModelFiles and model.KNOWN_MODELS is emb.KNOWN_MODELS


def test_each_module_imports_first_in_a_fresh_process() -> None:
    """Whatever module a program imports first, it loads (a cycle would fail on one)."""
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    for m in sorted(graph()):
        proc = subprocess.run(
            [sys.executable, "-c", code, PREFIX + m],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (m, proc.stderr)
