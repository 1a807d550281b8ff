"""``kbdb learn PATHS... | -``: files, folders (recursive) or stdin (SPEC §3)."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import click

from kbdb.cli.options import global_options, ray_option, state, tags_option
from kbdb.cli.render import emit_json, learn_progress, render_learn, render_skipped
from kbdb.errors import InvalidArgumentError

STDIN_DOCID = "stdin"
_STDIN_ONLY = ("title", "type", "description", "section_type", "replace")


def _read_stdin(mime: str) -> str:
    """stdin as the ``content`` the API expects: text, or base64 for ``image/*``."""
    data = sys.stdin.buffer.read()
    if mime.startswith("image/"):
        return base64.b64encode(data).decode("ascii")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"stdin is not valid UTF-8 (at byte {exc.start})",
            hint="pipe UTF-8 text, or give --type image/... for image bytes",
        ) from None


@click.command(short_help="Learn files, folders or stdin (-).")
@click.argument("paths", nargs=-1, required=True, metavar="PATHS... | -")
@tags_option("Tag every learned section (comma-separated, repeatable).")
@click.option(
    "--docid",
    metavar="ID",
    help="Document id. Default: a file's path relative to the folder learned, "
    "or 'stdin'. With a folder, ID becomes a prefix: ID/relative/path.",
)
@click.option("--title", help="stdin only: the document's title (required for images).")
@click.option(
    "--type",
    "mime",
    metavar="MIME",
    help="stdin only: text/markdown (default), text/plain, text/html, application/json or image/*.",
)
@click.option("--description", help="stdin only: a description of the content.")
@click.option(
    "--section-type",
    metavar="KIND",
    help="stdin only: fact, decision, correction, procedure, reference, note, ...",
)
@click.option(
    "--replace",
    is_flag=True,
    help="stdin only: supersede earlier sections with the same source key.",
)
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="List every warning, near duplicate and skipped file "
    "(by default: counts per code and the first few of each).",
)
@ray_option("Read, split and embed the files")
@click.option(
    "--shards",
    "collection",
    type=click.Path(path_type=Path),
    metavar="COLLECTION",
    help="Learn into a sharded collection instead of --db: each document goes to the shard "
    "its docid routes to. With --ray, the shards are Ray actors on that cluster.",
)
@global_options
def learn(
    paths: tuple[str, ...],
    tags: tuple[str, ...],
    docid: str | None,
    title: str | None,
    mime: str | None,
    description: str | None,
    section_type: str | None,
    replace: bool,
    verbose: bool,
    ray: str | None,
    collection: Path | None,
) -> int:
    """Learn files and folders (recursively), or stdin with '-'.

    Markdown, text, HTML, JSON, images, and chat transcripts (.jsonl, or .json chat
    messages: a document per session, a section per turn; docs/conversations.md).
    Re-learning a file replaces its earlier version. A bad file (or transcript record) is
    reported on stderr and skipped, the rest goes on, and the exit code is 1.
    Warnings, near duplicates and skipped files are counted per code with the first few
    of each; --verbose lists every one, --json prints the full report.

    With --ray, files are read and split by Ray tasks and embedded by Ray actors; this
    process stores them, with the same result as a local learn (docs/scale.md).
    """
    st = state()
    stdin = "-" in paths
    if stdin and len(paths) > 1:
        raise click.UsageError("'-' (stdin) cannot be mixed with paths")
    given = {
        "title": title,
        "type": mime,
        "description": description,
        "section_type": section_type,
        "replace": replace or None,
    }
    if stdin and ray is not None:
        raise click.UsageError("--ray learns files and folders, not stdin ('-')")
    if not stdin and any(given[k] is not None for k in _STDIN_ONLY):
        used = ", ".join("--" + k.replace("_", "-") for k in _STDIN_ONLY if given[k] is not None)
        raise click.UsageError(f"{used} only apply to stdin ('-'); files carry their own")
    opened = _open_collection(collection, ray) if collection is not None else None
    with opened or st.open(model=True) as kb:
        if stdin:
            content_type = mime or "text/markdown"
            report = kb.learn(
                _read_stdin(content_type),
                type=content_type,
                title=title,
                description=description,
                docid=docid or STDIN_DOCID,
                tags=tags,
                replace=replace,
                section_type=section_type,
            )
        else:
            with learn_progress(st.interactive) as progress:
                # The text output prints only notable sections: keep only those (flat
                # memory on a large tree); --json prints every section.
                report = kb.learn_path(
                    *paths,
                    tags=tags,
                    docid=docid,
                    progress=progress,
                    notable_only=not st.json,
                    **({} if collection is not None else {"ray": ray}),
                )
    if st.json:
        emit_json(report.to_dict())
    elif not st.quiet:
        render_learn(report, verbose=verbose)
    render_skipped(report, verbose=verbose)
    return 1 if report.files_skipped else 0


def _open_collection(collection: Path, ray: str | None) -> Any:
    """The sharded collection a ``--shards`` learn writes to (its shards on Ray with
    ``--ray``)."""
    from kbdb.shard.coordinator import ShardedKnowledgeBase

    return ShardedKnowledgeBase.open(collection, ray=ray)
