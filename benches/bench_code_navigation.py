"""Code navigation: find where a symbol is defined, in real repositories (docs/code.md).

Each repository is a plain tree of its source files (``git archive HEAD | tar -x``). Its
definitions are found *without* kbdb's splitter, so the answers do not lean on it:
Python files through the standard library's ``ast`` (functions, methods, classes, with
their class), Rust files by a line scan for ``fn``/``struct``/``enum``/``trait``/
``union``/``type``/``mod``/``macro_rules!`` items (an item indented under an ``impl X``
or ``trait X`` line belongs to ``X``). That scan also sees definitions that sit inside
macro calls, which tree-sitter leaves as token trees.

Queries, sampled with a fixed seed:

- **name**: a name defined exactly once in the repository (at least 4 characters, not a
  ``test…`` function), as written: ``parse_config``, ``JoinHandle``. Names are compared
  without case and underscores: no system compared can tell ``fourier_transform`` from
  ``FourierTransform``, so a name shared that way is no query;
- **qualified**: a method whose bare name is defined several times but whose owner and
  name together once: ``Basic.subs`` (Python), ``Builder::enable_io`` (Rust);
- **library**: a name defined once in library code and also in test code (a file in a
  ``tests``/``test`` folder, or named ``tests.*``/``test_*``/``*_test.*``), such as a test
  named after the method it tests; the answer is the library's definition. These are
  reported on their own: ``all`` is the names and qualified names.

The answer is the defining file and line. Systems, over the same files:

- **kbdb code**: the files learned by ``learn_path`` with the ``code`` extra (split by
  definition); success@1 when the first result's section is in the defining file and
  its lines hold the definition line (a section's lines are looked up by its kbid: the
  splitter is run again over the files);
- **kbdb text**: the same files renamed ``*.txt`` and learned as plain text, one section
  per file; success@1 when the first result is the defining file;
- **bm25s**: ``bm25s.BM25`` (lucene, its defaults) over whole files, tokenized by
  ``bm25s.tokenize`` with English stop words and the PyStemmer English stemmer;
  success@1 when the first file is the defining file.

Learning time: ``learn_path`` of the code tree and of the text tree into fresh knowledge
bases, the best of ``--rounds`` each; the ratio is code / text.

    python benches/bench_code_navigation.py --repo sympy=/tmp/kbdb-code/sympy \\
        --repo tokio=/tmp/kbdb-code/tokio
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import peak_rss_mb, print_table, write_result  # noqa: E402

SEED = 20261206
NAME_QUERIES = 200
QUALIFIED_QUERIES = 100
LIBRARY_QUERIES = 100
OVERALL = ("name", "qualified")  # the kinds ``all`` counts
EXTENSIONS = {".py": "python", ".rs": "rust"}


@dataclass(frozen=True)
class Definition:
    name: str
    owner: str | None  # the class, impl or trait it belongs to
    rel: str
    line: int  # the line of its ``def``/``fn``/``struct`` keyword, from 1


@dataclass(frozen=True)
class Query:
    kind: str  # "name" or "qualified"
    text: str
    rel: str
    line: int


# -- the definitions, found without kbdb -----------------------------------------------


def python_definitions(rel: str, text: str) -> list[Definition]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[Definition] = []
    stack: list[tuple[ast.AST, str | None]] = [(tree, None)]
    while stack:
        node, owner = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.append(Definition(child.name, owner, rel, child.lineno))
                if isinstance(child, ast.ClassDef):
                    stack.append((child, child.name))
                else:
                    stack.append((child, None))  # a nested function: no owner
            elif not isinstance(child, ast.expr):
                stack.append((child, owner))
    return out


_RUST_ITEM = re.compile(
    r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|default)\s+)*"
    r"(?:extern\s+\"[^\"]*\"\s+)?(fn|struct|enum|trait|union|type|mod)\s+([A-Za-z_]\w*)"
)
_RUST_MACRO = re.compile(r"^(\s*)macro_rules!\s+([A-Za-z_]\w*)")
_RUST_IMPL = re.compile(
    r"^(\s*)(?:unsafe\s+)?(impl|trait|pub\s+trait|pub\(crate\)\s+trait)\b(?:\s*<[^{]*?>)?\s+"
    r"(?:[\w:<>, ']+?\s+for\s+)?&?(?:'\w+\s+)?(?:dyn\s+)?([A-Za-z_]\w*(?:::\w+)*)"
)


def rust_definitions(rel: str, text: str) -> list[Definition]:
    out: list[Definition] = []
    owners: list[tuple[int, str]] = []  # (indent, name) of the open impl/trait blocks
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        indent = len(line) - len(line.lstrip())
        while owners and (
            indent < owners[-1][0] or (indent == owners[-1][0] and stripped.startswith("}"))
        ):
            owners.pop()
        impl = _RUST_IMPL.match(line)
        if impl and stripped.endswith("{"):
            name = impl.group(3).split("::")[-1]
            if impl.group(2) != "impl":
                out.append(Definition(name, None, rel, number))
            owners.append((indent, name))
            continue
        m = _RUST_ITEM.match(line)
        if m:
            owner = owners[-1][1] if owners and indent > owners[-1][0] else None
            kind = m.group(2)
            if kind == "mod" and not stripped.endswith("{"):
                continue  # ``mod name;`` declares a module whose file is its definition
            out.append(Definition(m.group(3), owner if kind == "fn" else None, rel, number))
            continue
        m = _RUST_MACRO.match(line)
        if m:
            out.append(Definition(m.group(2), None, rel, number))
    return out


def definitions(root: Path, files: list[str]) -> list[Definition]:
    out: list[Definition] = []
    for rel in files:
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        if rel.endswith(".py"):
            out.extend(python_definitions(rel, text))
        else:
            out.extend(rust_definitions(rel, text))
    return out


def _key(name: str) -> str:
    """A name as a case-insensitive search sees it: ``parse_config`` and ``ParseConfig``
    (or ``_parse_config``) cannot be told apart by any of the systems compared."""
    return name.replace("_", "").lower()


def build_queries(defs: list[Definition], separator: str) -> list[Query]:
    names = Counter(_key(d.name) for d in defs)
    pairs = Counter((_key(d.owner), _key(d.name)) for d in defs if d.owner)
    rng = random.Random(SEED)
    unique = [
        d
        for d in defs
        if names[_key(d.name)] == 1 and len(d.name) >= 4 and not d.name.lower().startswith("test")
    ]
    qualified = [
        d
        for d in defs
        if d.owner
        and names[_key(d.name)] > 1
        and pairs[(_key(d.owner), _key(d.name))] == 1
        and not d.name.lower().startswith("test")
        and not d.owner.lower().startswith("test")
    ]
    picked = rng.sample(unique, min(NAME_QUERIES, len(unique)))
    picked_q = rng.sample(qualified, min(QUALIFIED_QUERIES, len(qualified)))
    out = [Query("name", d.name, d.rel, d.line) for d in picked]
    out += [Query("qualified", f"{d.owner}{separator}{d.name}", d.rel, d.line) for d in picked_q]
    library_defs = Counter(_key(d.name) for d in defs if not in_tests(d.rel))
    tested = {_key(d.name) for d in defs if in_tests(d.rel)}
    library = [
        d
        for d in defs
        if not in_tests(d.rel)
        and library_defs[_key(d.name)] == 1
        and _key(d.name) in tested
        and len(d.name) >= 4
        and not d.name.lower().startswith("test")
    ]
    picked_l = rng.sample(library, min(LIBRARY_QUERIES, len(library)))
    out += [Query("library", d.name, d.rel, d.line) for d in picked_l]
    return out


_TEST_PATH = re.compile(r"(?:^|/)tests?/|(?:^|/)(?:tests?\.\w+|test_[^/]*)$|_tests?\.\w+$")


def in_tests(rel: str) -> bool:
    """Whether a file is test code by its path."""
    return bool(_TEST_PATH.search(rel))


# -- the trees and the systems ---------------------------------------------------------


def source_files(root: Path, extension: str) -> list[str]:
    """The source files a folder learn reads (kbdb's walk: ignore files, hidden names)."""
    from kbdb.ingest.walk import FileEntry, walk

    return [
        e.rel
        for e in walk(root)
        if isinstance(e, FileEntry) and e.rel.endswith(extension) and e.size > 0
    ]


def copy_tree(root: Path, files: list[str], dest: Path, suffix: str) -> None:
    for rel in files:
        target = dest / (rel + suffix)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, target)


def learn(tree: Path, rounds: int) -> tuple[Any, float, Any]:
    """The knowledge base of the best round, its learn time, and its temporary folder."""
    from kbdb import KnowledgeBase

    best: tuple[Any, float, Any] | None = None
    for _ in range(rounds):
        tmp = tempfile.TemporaryDirectory(prefix="bench-code-kb-")
        t0 = time.perf_counter()
        kb = KnowledgeBase.init(Path(tmp.name))
        kb.learn_path(tree, notable_only=True)
        seconds = time.perf_counter() - t0
        if best is None or seconds < best[1]:
            if best is not None:
                best[0].close()
                best[2].cleanup()
            best = (kb, seconds, tmp)
        else:
            kb.close()
            tmp.cleanup()
    assert best is not None
    return best


def section_lines(root: Path, files: list[str]) -> dict[str, list[tuple[str, int, int]]]:
    """kbid -> (file, first line, last line) of every section the code splitter makes."""
    from kbdb.ingest.code import split
    from kbdb.ingest.formats import EXTENSIONS as MIMES
    from kbdb.ingest.kbid import compute_kbid

    out: dict[str, list[tuple[str, int, int]]] = {}
    for rel in files:
        mime = MIMES[Path(rel).suffix]
        doc = split((root / rel).read_text(encoding="utf-8"), name=Path(rel).name)
        for s in doc.sections:
            kbid = compute_kbid(mime, s.heading, s.content)
            out.setdefault(kbid, []).append((rel, s.start_line or 0, s.end_line or 0))
    return out


def kbdb_code(kb: Any, queries: list[Query], lines: dict[str, Any]) -> dict[str, Any]:
    hits: dict[str, list[bool]] = {}
    failures = []
    for q in queries:
        items = kb.search(q.text, mode="lexical", limit=1).items
        ok = False
        if items:
            places = lines.get(items[0].kbid, [])
            ok = any(rel == q.rel and s <= q.line <= e for rel, s, e in places)
        hits.setdefault(q.kind, []).append(ok)
        if not ok:
            top = items[0] if items else None
            failures.append(
                {
                    "query": q.text,
                    "target": f"{q.rel}:{q.line}",
                    "first": f"{top.docids[0]} {top.heading}" if top else None,
                }
            )
    return {"by_kind": _rates(hits), "failures": failures}


def kbdb_text(kb: Any, queries: list[Query]) -> dict[str, Any]:
    hits: dict[str, list[bool]] = {}
    for q in queries:
        items = kb.search(q.text, mode="lexical", limit=1).items
        hits.setdefault(q.kind, []).append(bool(items) and q.rel + ".txt" in items[0].docids)
    return {"by_kind": _rates(hits)}


def bm25s_files(root: Path, files: list[str], queries: list[Query]) -> dict[str, Any]:
    try:
        import bm25s
        import Stemmer
    except ImportError as e:
        return {"status": f"not installed: {e}"}
    stemmer = Stemmer.Stemmer("english")
    texts = [(root / rel).read_text(encoding="utf-8", errors="replace") for rel in files]
    t0 = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    index_s = time.perf_counter() - t0
    hits: dict[str, list[bool]] = {}
    for q in queries:
        tokens = bm25s.tokenize(
            [q.text], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )
        ok = False
        if tokens[0]:
            docs, _ = retriever.retrieve(
                tokens, corpus=list(range(len(files))), k=1, show_progress=False, n_threads=0
            )
            ok = files[int(docs[0][0])] == q.rel
        hits.setdefault(q.kind, []).append(ok)
    return {"by_kind": _rates(hits), "index_s": index_s}


def _rates(hits: dict[str, list[bool]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: {"queries": len(v), "success@1": sum(v) / len(v)} for k, v in hits.items()
    }
    every = [h for k, v in hits.items() if k in OVERALL for h in v]
    out["all"] = {"queries": len(every), "success@1": sum(every) / len(every) if every else 0.0}
    return out


def run_repo(label: str, root: Path, rounds: int, show: int) -> dict[str, Any]:
    counts = Counter(p.suffix for p in root.rglob("*") if p.suffix in EXTENSIONS)
    extension = counts.most_common(1)[0][0]
    separator = "." if extension == ".py" else "::"
    files = source_files(root, extension)
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    defs = definitions(root, files)
    queries = build_queries(defs, separator)
    with tempfile.TemporaryDirectory(prefix="bench-code-trees-") as tmp:
        code_tree, text_tree = Path(tmp) / "code", Path(tmp) / "text"
        copy_tree(root, files, code_tree, "")
        copy_tree(root, files, text_tree, ".txt")
        code_kb, code_s, code_tmp = learn(code_tree, rounds)
        text_kb, text_s, text_tmp = learn(text_tree, rounds)
    lines = section_lines(root, files)
    code = kbdb_code(code_kb, queries, lines)
    text = kbdb_text(text_kb, queries)
    stats = code_kb.stats() if hasattr(code_kb, "stats") else None
    for kb, tmp in ((code_kb, code_tmp), (text_kb, text_tmp)):
        kb.close()
        tmp.cleanup()
    bm = bm25s_files(root, files, queries)
    for f in code["failures"][:show]:
        print(f"  miss [{label}] {f['query']!r} -> {f['first']}  (want {f['target']})")
    return {
        "root": str(root),
        "language": EXTENSIONS[extension],
        "files": len(files),
        "bytes": sum((root / rel).stat().st_size for rel in files),
        "checksum": digest.hexdigest(),
        "definitions": len(defs),
        "sections": sum(len(v) for v in lines.values()),
        "queries": Counter(q.kind for q in queries),
        "learn_code_s": code_s,
        "learn_text_s": text_s,
        "learn_ratio": code_s / text_s,
        "kbdb_code": code,
        "kbdb_text": text,
        "bm25s": bm,
        "kb_stats": str(stats) if stats is not None else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", required=True, help="LABEL=DIR")
    ap.add_argument("--rounds", type=int, default=2, help="learn rounds (best kept)")
    ap.add_argument("--show", type=int, default=20, help="kbdb code misses to print")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    results: dict[str, Any] = {}
    rows = []
    for spec in args.repo:
        label, _, path = spec.partition("=")
        r = run_repo(label, Path(path), args.rounds, args.show)
        results[label] = r
        for kind in ("name", "qualified", "all", "library"):
            if kind not in r["kbdb_code"]["by_kind"]:
                continue
            bm = r["bm25s"].get("by_kind", {}).get(kind, {})
            rows.append(
                [
                    f"{label} {kind}",
                    r["kbdb_code"]["by_kind"][kind]["queries"],
                    r["kbdb_code"]["by_kind"][kind]["success@1"],
                    r["kbdb_text"]["by_kind"][kind]["success@1"],
                    bm.get("success@1", r["bm25s"].get("status")),
                ]
            )
        print(
            f"{label}: {r['files']} files, learn code {r['learn_code_s']:.1f}s, text "
            f"{r['learn_text_s']:.1f}s, ratio {r['learn_ratio']:.2f}"
        )
    print_table(
        "code navigation: success@1",
        ["repo, queries", "n", "kbdb code", "kbdb text", "bm25s files"],
        rows,
    )
    results["peak_rss_mb"] = peak_rss_mb()
    if not args.no_write:
        print(write_result("code_navigation", {"seed": SEED, "repos": results}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
