"""``kbdb eval``: retrieval quality and speed on a BEIR dataset (SPEC §15, docs/evaluation.md)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, emit_json

if TYPE_CHECKING:
    from kbdb.evaluation.category import CategoryNaming

MODES = ("lexical", "vector", "hybrid")
_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _settings(_ctx: click.Context, _param: click.Parameter, value: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in value or ():
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE such as search.k1=0.9 (got {item!r})")
        out[key.strip()] = val.strip()
    return out


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = bar.add_task(phase, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


@click.command(short_help="Measure search quality on a BEIR dataset.")
@click.option("--corpus", type=_FILE, required=True, help="corpus.jsonl (_id, title, text).")
@click.option("--queries", type=_FILE, required=True, help="queries.jsonl (_id, text).")
@click.option(
    "--qrels",
    type=click.Path(exists=True, path_type=Path),
    required=True,
    help="qrels TSV (query-id corpus-id score), or a qrels/ folder.",
)
@click.option(
    "--mode",
    "--algo",
    "mode",
    type=click.Choice(MODES),
    default="lexical",
    show_default=True,
    help="Search mode to evaluate.",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_settings,
    help="Override a worker.toml key for this run (repeatable).",
)
@click.option(
    "--limit",
    "-n",
    type=click.IntRange(1, 100),
    default=100,
    show_default=True,
    help="Results per query (Recall@100 needs 100).",
)
@click.option("--split", metavar="NAME", help="qrels split when --qrels is a folder (test).")
@click.option(
    "--per-query",
    "per_query",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also write one JSON line per judged query to FILE: its metrics, the ranks of its "
    "relevant documents and its top 10 hits.",
)
@click.option(
    "--categories",
    type=_FILE,
    metavar="FILE",
    help="Report nDCG@10, Recall@10 and MRR@10 per category, from FILE: a JSON object "
    '{"query_id": category} (else from each query\'s category or metadata.category).',
)
@click.option(
    "--category-names",
    "category_names",
    type=click.Choice(("locomo",)),
    help="Name the categories: locomo (1 multi-hop, 2 temporal, 3 open-domain, "
    "4 single-hop). Without it they are shown as given.",
)
@global_options
def eval_(
    corpus: Path,
    queries: Path,
    qrels: Path,
    mode: str,
    settings: dict[str, str],
    limit: int,
    split: str | None,
    per_query: Path | None,
    categories: Path | None,
    category_names: CategoryNaming | None,
) -> int:
    """Learn a BEIR corpus and report nDCG@10, Recall@10, Recall@100, MRR@10, queries/s
    and latency; per category when the queries have categories.

    Without --db the corpus goes into a temporary knowledge base; with --db it is learned
    there (created if missing) and --set applies in memory only: eval never edits your
    worker.toml.
    """
    from kbdb.evaluation.run import run_eval

    st = state()
    with _progress(st.interactive) as progress:
        report = run_eval(
            corpus,
            queries,
            qrels,
            mode=mode,
            db=Path(st.db) if st.db else None,
            settings=settings,
            limit=limit,
            split=split,
            progress=progress,
            per_query=per_query,
            categories=categories,
            category_names=category_names,
        )
    data = report.to_dict()
    if st.json:
        emit_json(data)
        return 0
    from rich.table import Table

    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(justify="right")
    for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
        table.add_row(key, f"{data[key]:.4f}")
    table.add_row("queries", str(data["queries"]))
    table.add_row("queries/s", f"{data['qps']:.1f}")
    table.add_row("latency p50 / p95", f"{data['p50_ms']:.2f} / {data['p95_ms']:.2f} ms")
    table.add_row(
        "learn",
        f"{data['index_s']:.2f} s, {data['documents']} documents, {data['sections']} sections",
    )
    table.add_row("mode / limit / split", f"{data['mode']} / {data['limit']} / {data['split']}")
    for key, value in data["settings"].items():
        table.add_row(f"--set {key}", value)
    if per_query is not None:
        table.add_row("per-query file", str(per_query))
    console().print(table)
    if data["categories"]:
        console().print(_category_table(data["categories"]))
    return 0


def _category_table(rows: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(box=None, padding=(0, 2), show_edge=False)
    table.add_column("category")
    for key in ("queries", "ndcg@10", "recall@10", "mrr@10"):
        table.add_column(key, justify="right")
    for row in rows:
        cat = "(none)" if row["category"] is None else row["category"]
        label = f"{cat} {row['name']}" if row["name"] else cat
        table.add_row(
            label,
            str(row["queries"]),
            *(f"{row[k]:.4f}" for k in ("ndcg@10", "recall@10", "mrr@10")),
        )
    return table
