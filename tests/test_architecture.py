"""The house rules of the Python package, checked on its source: every module imports on
its own, the runtime imports form no cycle, no module reaches into another's private
names, SQL runs only in ``kbdb/store``, and ARCHITECTURE.md's module map names every room
and module there is."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "kbdb"

# Reaches into private names that are not another room's: the standard library's, and the
# Rust extension module, whose name is ``_core``.
ALLOWED_PRIVATE = {
    "os._exit",  # the documented way to exit without running atexit handlers again
    "atexit._ncallbacks",  # CPython's count of handlers: the CLI skips a flush when 0
}
PRIVATE_MODULES = {"_core", "_log"}
SQL_WORDS = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|PRAGMA|VACUUM)\b")


def modules() -> dict[str, Path]:
    """Every module of the package by name; the Rust extension by its stub."""
    out = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi")]):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import that runs, at module level or inside a function; not those under
    ``if TYPE_CHECKING``."""
    out: list[ast.Import | ast.ImportFrom] = []

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                walk(node.orelse)
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.append(node)
            for name in ("body", "orelse", "finalbody", "handlers"):
                sub = getattr(node, name, None)
                if isinstance(sub, list):
                    walk(sub)

    walk(tree.body)
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_package = path.name == "__init__.py"
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = mod.split(".") if is_package else mod.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
                ]
            graph[mod].update(t for t in targets if t in mods and t != mod)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, f"import cycles (function-level imports count): {found}"


def test_every_module_imports_on_its_own() -> None:
    names = [m for m in modules() if m != "kbdb.cli.__main__"]

    def load(name: str) -> tuple[str, str]:
        r = subprocess.run(
            [sys.executable, "-c", f"import {name}"], capture_output=True, text=True, check=False
        )
        return name, r.stderr.strip().splitlines()[-1] if r.returncode else ""

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = {n: err for n, err in pool.map(load, names) if err}
    assert not failed, failed


def _private_attributes(tree: ast.Module) -> set[str]:
    """The private attribute names a module defines: ``self._x = ...`` and class-level
    ``_x = ...`` (and annotated ones)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr.startswith("_"):
                out.add(t.attr)
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                names = []
                if isinstance(stmt, ast.Assign):
                    names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
                elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    names = [stmt.target.id]
                elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [stmt.name]
                out.update(n for n in names if n.startswith("_"))
    return out


def test_no_reaches_into_private_names() -> None:
    """A private name is used only in the module that defines it: no ``from m import _x``
    and no ``obj._x`` on another module's object."""
    reaches = []
    for mod, path in modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _private_attributes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                reaches.extend(
                    f"{mod}:{node.lineno}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_")
                    and not a.name.startswith("__")
                    and a.name not in PRIVATE_MODULES
                )
            elif isinstance(node, ast.Attribute):
                name = node.attr
                if not name.startswith("_") or name.startswith("__") or name in own:
                    continue
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                text = ast.unparse(node)
                if text not in ALLOWED_PRIVATE:
                    reaches.append(f"{mod}:{node.lineno}: {text}")
    assert not reaches, reaches


def test_sql_runs_only_in_the_store() -> None:
    found = []
    for mod, path in modules().items():
        if mod.startswith("kbdb.store"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "executescript")
            ):
                found.append(f"{mod}:{node.lineno}: {ast.unparse(node.func)}")
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and SQL_WORDS.match(node.value)
            ):
                found.append(f"{mod}:{node.lineno}: {node.value[:40]!r}")
    assert not found, found


def test_module_map_names_every_room_and_module() -> None:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    block = text.split("## Module map", 1)[1].split("```", 2)[1]
    python_part = block.split("python/kbdb/", 1)[1].split("rust/src/", 1)[0]
    listed = {m.group(1).rstrip("/") for m in re.finditer(r"^  (\S+)", python_part, re.M)}
    on_disk = {
        p.name if p.is_dir() else p.name
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.name != "__init__.py")
    }
    assert on_disk - listed == set(), f"not in ARCHITECTURE.md's module map: {on_disk - listed}"
    assert listed - on_disk == set(), f"in the module map but not on disk: {listed - on_disk}"
