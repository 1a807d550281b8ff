"""Reading a BEIR-format dataset: ``corpus.jsonl``, ``queries.jsonl`` and a qrels TSV.

- ``corpus.jsonl``: one JSON object per line with ``_id``, ``title`` and ``text``.
- ``queries.jsonl``: one JSON object per line with ``_id`` and ``text``; optionally a
  ``category`` (or ``metadata.category``) for per-category metrics.
- qrels: TSV rows ``query-id  corpus-id  score`` (graded, integer), with an optional header
  row. ``qrels`` may also be a BEIR ``qrels/`` folder, read as ``qrels/{split}.tsv``.

Only the queries that appear in the qrels are evaluated, as BEIR's ``GenericDataLoader``
does; a judged query missing from ``queries.jsonl`` is an error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbdb.errors import InvalidArgumentError
from kbdb.evaluation.category import category_of

__all__ = ["BeirDataset", "BeirDoc", "dataset_paths", "load_beir", "sha256_file"]

DEFAULT_SPLIT = "test"


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """A loaded dataset, restricted to the judged queries.

    Attributes:
        corpus: every document, in file order.
        queries: ``(query_id, text)`` of the judged queries, in qrels order.
        qrels: ``{query_id: {doc_id: relevance}}``.
        checksums: sha256 of the three files, keyed ``corpus``, ``queries``, ``qrels``.
        split: the qrels split name (the file stem).
        categories: ``{query_id: category}`` of the judged queries whose record names one
            (``category`` or ``metadata.category``), as text.
    """

    corpus: tuple[BeirDoc, ...]
    queries: tuple[tuple[str, str], ...]
    qrels: dict[str, dict[str, int]]
    checksums: dict[str, str]
    split: str
    categories: dict[str, str] = field(default_factory=dict)


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def dataset_paths(folder: Path, split: str = DEFAULT_SPLIT) -> tuple[Path, Path, Path]:
    """``(corpus, queries, qrels)`` of a BEIR dataset folder."""
    return folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels" / f"{split}.tsv"


def load_beir(corpus: Path, queries: Path, qrels: Path, *, split: str | None = None) -> BeirDataset:
    """Read and check a BEIR dataset.

    Args:
        corpus: ``corpus.jsonl``.
        queries: ``queries.jsonl``.
        qrels: a qrels TSV, or a ``qrels/`` folder (then ``split`` picks the file, default
            ``test``).
        split: the qrels split when ``qrels`` is a folder.

    Raises:
        InvalidArgumentError: a missing file, a malformed line (named by path and line
            number), or a judged query without text.
    """
    corpus, queries, qrels = Path(corpus), Path(queries), Path(qrels)
    if qrels.is_dir():
        qrels = qrels / f"{split or DEFAULT_SPLIT}.tsv"
    elif split is not None and qrels.stem != split:
        raise InvalidArgumentError(
            f"split {split!r} does not match the qrels file {qrels}",
            hint="pass the qrels/ folder to choose a split",
        )
    for p in (corpus, queries, qrels):
        if not p.is_file():
            raise InvalidArgumentError(f"no such file: {p}", hint="check the dataset paths")
    docs = tuple(
        BeirDoc(str(_field(o, "_id", corpus, n)), _text(o, "title"), _text(o, "text"))
        for n, o in _jsonl(corpus)
    )
    query_records = [(str(_field(o, "_id", queries, n)), o) for n, o in _jsonl(queries)]
    query_text = {q: _text(o, "text") for q, o in query_records}
    judged = _read_qrels(qrels)
    missing = [q for q in judged if q not in query_text]
    if missing:
        raise InvalidArgumentError(
            f"{len(missing)} judged queries are not in {queries} (first: {missing[0]!r})",
            hint="the queries and qrels files must come from the same dataset",
        )
    return BeirDataset(
        corpus=docs,
        queries=tuple((q, query_text[q]) for q in judged),
        qrels=judged,
        checksums={
            "corpus": sha256_file(corpus),
            "queries": sha256_file(queries),
            "qrels": sha256_file(qrels),
        },
        split=qrels.stem,
        categories={
            q: cat for q, o in query_records if q in judged and (cat := category_of(o)) is not None
        },
    )


def _jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    out: list[tuple[int, dict[str, Any]]] = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidArgumentError(f"{path}:{n}: invalid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise InvalidArgumentError(f"{path}:{n}: expected a JSON object")
            out.append((n, obj))
    return out


def _field(obj: dict[str, Any], key: str, path: Path, line: int) -> Any:
    if key not in obj or obj[key] is None:
        raise InvalidArgumentError(f"{path}:{line}: missing {key!r}")
    return obj[key]


def _text(obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cols = line.rstrip("\r\n").split("\t")
            if not line.strip():
                continue
            if len(cols) == 4:  # TREC layout: qid, iteration, docid, rel
                cols = [cols[0], cols[2], cols[3]]
            if len(cols) != 3:
                raise InvalidArgumentError(
                    f"{path}:{n}: expected 3 tab-separated columns (query-id, corpus-id, score)"
                )
            try:
                rel = int(cols[2])
            except ValueError:
                if n == 1:
                    continue  # the header row
                raise InvalidArgumentError(
                    f"{path}:{n}: score must be an integer (got {cols[2]!r})"
                ) from None
            judged.setdefault(cols[0], {})[cols[1]] = rel
    if not judged:
        raise InvalidArgumentError(f"{path}: no judgements")
    return judged
