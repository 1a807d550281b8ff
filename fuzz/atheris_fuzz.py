"""Coverage-guided fuzzing of kbdb's text parsers with atheris.

    python fuzz/atheris_fuzz.py TARGET [--grow] [libFuzzer options, e.g. -runs=20000]

TARGET is one of ``markdown`` (the Markdown, HTML and typed-content splitters),
``analyzer`` (``kbdb._core.Analyzer``: terms, tokens, query tokens, snippets), ``query``
(``kb.search`` on a small knowledge base: phrases, quotes, operators) and ``config`` (the
``worker.toml`` loader). The seed corpus of each is ``fuzz/corpus/TARGET``; inputs that
ever broke a target are committed there and pinned as tests in
tests/reliability/test_hostile_input.py. ``make test-slow`` runs every target for a fixed
number of runs when atheris is installed (``pip install atheris``: wheels exist for
CPython 3.8-3.11 on Linux x86-64); the hypothesis properties of the same targets run in
every ``make test``.

Only the documented errors are allowed: ``InvalidArgumentError`` for a query,
``ConfigInvalidError`` for a configuration. Any other exception is a finding.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import atheris

with atheris.instrument_imports():
    import kbdb
    from kbdb import _core
    from kbdb.config import load_config
    from kbdb.errors import ConfigInvalidError, InvalidArgumentError
    from kbdb.ingest import split_document, split_html, split_markdown

_analyzer = _core.Analyzer()
_state: dict[str, Any] = {}


def _text(data: bytes) -> str:
    return atheris.FuzzedDataProvider(data).ConsumeUnicodeNoSurrogates(len(data))


def markdown(data: bytes) -> None:
    text = _text(data)
    for doc in (split_markdown(text), split_html(text)):
        for s in doc.sections:
            assert 0 <= s.level <= 6
    split_document(text, "text/plain")


def analyzer(data: bytes) -> None:
    text = _text(data)
    terms = _analyzer.terms(text)
    for _term, _pos, start, end in _analyzer.tokens(text):
        assert 0 <= start <= end <= len(text)
    _analyzer.query_tokens(text)
    _analyzer.snippet(text, terms[:3], 200)


def query(data: bytes) -> None:
    kb = _state.get("kb")
    if kb is None:
        root = Path(tempfile.mkdtemp(prefix="kbdb-fuzz-"))
        kb = kbdb.KnowledgeBase.init(root / "kb")
        kb.learn("# Connection pool\n\nThe pool keeps 20 connections.", docid="p")
        kb.learn("# 中文\n\n中文検索 parseHttpRequest snake_case", docid="z")
        _state["kb"] = kb
    try:
        res = kb.search(_text(data), limit=5)
    except InvalidArgumentError:
        return
    assert len(res.items) <= 5 and res.total >= len(res.items)


def config(data: bytes) -> None:
    path = _state.get("config")
    if path is None:
        path = Path(tempfile.mkdtemp(prefix="kbdb-fuzz-")) / "worker.toml"
        _state["config"] = path
    path.write_bytes(data)
    with contextlib.suppress(ConfigInvalidError):
        load_config(path)


TARGETS = {"markdown": markdown, "analyzer": analyzer, "query": query, "config": config}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(TARGETS)}}} [libFuzzer options]")
    target = sys.argv[1]
    corpus = Path(__file__).with_name("corpus") / target
    options = [a for a in sys.argv[2:] if a != "--grow"]
    # libFuzzer adds new inputs to the first corpus folder: a scratch one, unless --grow
    # asks to extend the committed corpus.
    dirs = [str(corpus)] if "--grow" in sys.argv else [tempfile.mkdtemp(), str(corpus)]
    args = [sys.argv[0], *options, *dirs]
    atheris.Setup(args, TARGETS[target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
