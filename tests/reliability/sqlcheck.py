"""A static check that no SQL text passed to ``execute`` carries a value (docs/security.md).

Values must travel as ``?`` parameters. SQL text may still be assembled, but only from
pieces that are fixed when the code is written: string literals, module-level constants,
loop variables over literal tuples, lists filled with literals, and ``?`` placeholder runs
(``",".join("?" * n)``). Everything an interpolated piece is built from is traced back,
through assignments in the function and the module, to one of those. Whatever cannot be
traced (a parameter, an attribute, a call result) is reported, unless it is a function
parameter listed in ``ALLOWED_PARAMS`` with the reason every caller passes a constant.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

EXECUTE = {"execute", "executemany", "executescript"}

# (module path suffix, function, parameter): SQL pieces taken as arguments. Every call of
# these functions anywhere in the package is checked to pass fixed text for them.
ALLOWED_PARAMS: set[tuple[str, str, str]] = {
    ("maintenance/check.py", "_cycles", "column"),
    ("store/queries.py", "count", "table"),
    ("store/check.py", "iter_dangling", "column"),
    ("store/check.py", "iter_edges", "column"),
    ("store/queries.py", "one", "sql"),
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


class _Scope:
    def __init__(self, module: ast.Module, func: ast.AST | None, path: str) -> None:
        self.module = module
        self.func = func
        self.path = path

    def bindings(self, name: str) -> list[ast.AST]:
        """Every value bound to ``name`` in the function, else at module level: the
        assigned expression, or the For node (for loop variables), or the arg node."""
        out: list[ast.AST] = []
        for scope in (self.func, self.module):
            if scope is None:
                continue
            nodes = ast.walk(scope) if scope is self.func else ast.iter_child_nodes(scope)
            for node in nodes:
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if _binds(t, name):
                            out.append(node.value if isinstance(t, ast.Name) else node)
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    if _binds(node.target, name):
                        out.append(node.value)
                elif isinstance(node, ast.AugAssign) and _binds(node.target, name):
                    out.append(node.value)
                elif _loop_or_arg(node, name, scope is self.func):
                    out.append(node)
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("append", "extend", "insert")
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == name
                    and node.args
                ):
                    out.append(ast.List(elts=[node.args[-1]]))
            if out:
                return out
        return out


def _loop_or_arg(node: ast.AST, name: str, in_function: bool) -> bool:
    """``node`` binds ``name`` as a loop variable, or as a parameter of the function."""
    if isinstance(node, (ast.For, ast.comprehension)):
        return _binds(node.target, name)
    return isinstance(node, ast.arg) and node.arg == name and in_function


def _binds(target: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target))


def _enclosing(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    """Each node -> the innermost function that contains it."""
    owner: dict[ast.AST, ast.AST] = {}

    def visit(node: ast.AST, func: ast.AST | None) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if inner is not None:
                owner[child] = inner
            visit(child, inner)

    visit(tree, None)
    return owner


class Checker:
    def __init__(self, path: Path, rel: str, root: Path | None = None) -> None:
        self.rel = rel
        self.root = root
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.owner = _enclosing(self.tree)
        self.findings: list[Finding] = []

    def run(self) -> list[Finding]:
        for node in ast.walk(self.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in EXECUTE
                and node.args
            ):
                scope = _Scope(self.tree, self.owner.get(node), self.rel)
                problem = self.unsafe(node.args[0], scope, set())
                if problem:
                    self.findings.append(Finding(self.rel, node.lineno, problem))
        return self.findings

    def unsafe(self, e: ast.AST, scope: _Scope, seen: set[str]) -> str | None:
        """None when ``e`` is fixed SQL text, else what could not be traced."""
        if isinstance(e, ast.Constant):
            return None
        if isinstance(e, ast.JoinedStr):
            return self._all(e.values, scope, seen)
        if isinstance(e, ast.FormattedValue):
            return self.unsafe(e.value, scope, seen)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, ast.Mult) and _is_marks(e):
                return None
            if isinstance(e.op, ast.Mod):
                return f"%-formatting of SQL: {ast.unparse(e)[:80]}"
            return self._all([e.left, e.right], scope, seen)
        if isinstance(e, (ast.Tuple, ast.List, ast.Set)):
            return self._all(e.elts, scope, seen)
        if isinstance(e, ast.IfExp):
            return self._all([e.body, e.orelse], scope, seen)
        if isinstance(e, ast.Subscript):
            return self.unsafe(e.value, scope, seen)
        if isinstance(e, (ast.GeneratorExp, ast.ListComp)):
            # the loop variables are as safe as what they iterate over
            problem = self._all([g.iter for g in e.generators], scope, seen)
            bound = {
                n.id for g in e.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
            }
            return problem or self.unsafe(e.elt, scope, seen | bound)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
            if e.func.attr == "join" and isinstance(e.func.value, ast.Constant):
                return self._all(e.args, scope, seen)
            if e.func.attr == "format":
                return self._all(
                    [e.func.value, *e.args, *(k.value for k in e.keywords)], scope, seen
                )
        if isinstance(e, ast.Name):
            return self._name(e.id, scope, seen)
        return f"untraceable SQL piece: {ast.unparse(e)[:80]}"

    def _all(
        self, items: list[ast.AST] | list[ast.expr], scope: _Scope, seen: set[str]
    ) -> str | None:
        for item in items:
            problem = self.unsafe(item, scope, seen)
            if problem:
                return problem
        return None

    def _name(self, name: str, scope: _Scope, seen: set[str]) -> str | None:
        if name in seen:
            return None
        seen = seen | {name}
        bound = scope.bindings(name)
        if not bound:
            return self._imported(name, scope)
        for b in bound:
            if isinstance(b, ast.arg):
                func = getattr(scope.func, "name", "?")
                if any(
                    scope.path.endswith(mod) and func == fn and name == param
                    for mod, fn, param in ALLOWED_PARAMS
                ):  # its callers are checked by check_calls
                    continue
                return f"parameter {name!r} of {func}() reaches SQL text"
            if isinstance(b, (ast.For, ast.comprehension)):
                problem = self._loop(b, name, scope, seen)
            elif isinstance(b, ast.Assign):  # tuple unpacking: trace the whole value
                problem = self.unsafe(b.value, scope, seen)
            else:
                problem = self.unsafe(b, scope, seen)
            if problem:
                return problem
        return None

    def _loop(
        self, b: ast.For | ast.comprehension, name: str, scope: _Scope, seen: set[str]
    ) -> str | None:
        """A loop variable: safe when the iterable is. ``for part, marks in gen(...)``
        over a generator of this module checks only the yielded element at ``marks``."""
        it = b.iter
        if (
            isinstance(b.target, ast.Tuple)
            and isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
        ):
            index = next(
                i for i, t in enumerate(b.target.elts) if isinstance(t, ast.Name) and t.id == name
            )
            func = next(
                (
                    f
                    for f in ast.walk(self.tree)
                    if isinstance(f, ast.FunctionDef) and f.name == it.func.id
                ),
                None,
            )
            if func is not None:
                inner = _Scope(self.tree, func, self.rel)
                for y in ast.walk(func):
                    if isinstance(y, (ast.Yield, ast.Return)) and isinstance(y.value, ast.Tuple):
                        problem = self.unsafe(y.value.elts[index], inner, set())
                        if problem:
                            return problem
                return None
        return self.unsafe(it, scope, seen)

    def _imported(self, name: str, scope: _Scope) -> str | None:
        """A constant imported from another kbdb module: check it there."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kbdb"):
                alias = next((a for a in node.names if (a.asname or a.name) == name), None)
                if alias is not None and self.root:
                    rel = node.module.removeprefix("kbdb").strip(".").replace(".", "/") + ".py"
                    other = Checker(self.root / rel, rel, self.root)
                    scope = _Scope(other.tree, None, rel)
                    return other.unsafe(ast.Name(id=alias.name), scope, set())
        return f"{name!r} is not bound in the function or module"


def check_calls(root: Path) -> list[Finding]:
    """Every call of an ``ALLOWED_PARAMS`` function passes fixed text for that parameter."""
    checkers = [
        Checker(p, p.relative_to(root).as_posix(), root) for p in sorted(root.rglob("*.py"))
    ]
    findings: list[Finding] = []
    for mod, fn, param in sorted(ALLOWED_PARAMS):
        (defining,) = [c for c in checkers if c.rel.endswith(mod)]
        (func,) = [
            f for f in ast.walk(defining.tree) if isinstance(f, ast.FunctionDef) and f.name == fn
        ]
        index = [a.arg for a in func.args.args].index(param)
        calls = 0
        for c in checkers:
            for call in ast.walk(c.tree):
                if not isinstance(call, ast.Call):
                    continue
                callee = call.func
                called = (
                    callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
                )
                if called != fn:
                    continue
                arg = next((k.value for k in call.keywords if k.arg == param), None)
                if arg is None and index < len(call.args):
                    arg = call.args[index]
                if arg is None:
                    continue
                calls += 1
                problem = c.unsafe(arg, _Scope(c.tree, c.owner.get(call), c.rel), set())
                if problem:
                    findings.append(Finding(c.rel, call.lineno, f"{fn}({param}=...): {problem}"))
        if not calls:
            findings.append(Finding(mod, func.lineno, f"{fn}() is allowed but never called"))
    return findings


def _is_marks(e: ast.BinOp) -> bool:
    """``"?" * n`` or ``["?"] * n``: a run of placeholders."""
    sides = (e.left, e.right)
    return any(
        (isinstance(s, ast.Constant) and s.value in ("?", "?,", ",?"))
        or (
            isinstance(s, ast.List)
            and all(isinstance(x, ast.Constant) and x.value == "?" for x in s.elts)
        )
        for s in sides
    )


def check_tree(root: Path) -> list[Finding]:
    findings: list[Finding] = []
    for path in sorted(root.rglob("*.py")):
        findings += Checker(path, path.relative_to(root).as_posix(), root).run()
    return findings + check_calls(root)


def check_source(source: str, name: str = "snippet.py") -> list[Finding]:
    """For the checker's own tests."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_text(source, encoding="utf-8")
        return Checker(p, name).run()
