"""``kbdb models``: the embedding models kbdb can download, and which are on disk."""

from __future__ import annotations

import click

from kbdb.cli.options import global_options, state
from kbdb.cli.render import console, emit_json
from kbdb.errors import KbNotFoundError


@click.command(short_help="The embedding models kbdb knows, and which are on disk.")
@global_options
def models() -> int:
    """List the catalog of embedding models: each downloads from its public repository at
    a pinned revision, its files checked by SHA-256, on first use. Set one with
    'kbdb config set embedding.model NAME' (then 'kbdb rebuild --reembed'). The knowledge
    base's configured model is marked with *; a folder of your own (embedding.model_path)
    is listed too."""
    from kbdb.config import load_config
    from kbdb.context import CONFIG_NAME, resolve
    from kbdb.embedding.model import catalog

    st = state()
    cfg, kbdir = None, None
    try:
        kbdir = resolve(st.db)
        cfg = load_config(kbdir / CONFIG_NAME).embedding
    except KbNotFoundError:
        pass  # outside a knowledge base the catalog is still worth listing
    rows = catalog(cfg, kbdir=kbdir)
    if st.json:
        emit_json({"models": rows})
        return 0
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("model", no_wrap=True)
    table.add_column("dim", justify="right")
    table.add_column("pooling")
    table.add_column("tokens", justify="right")
    table.add_column("prompts")
    table.add_column("languages", min_width=12)
    table.add_column("cached", no_wrap=True)
    for row in rows:
        mark = " *" if row["configured"] else ""
        prompts = [k for k in ("query", "document") if row[f"{k}_prompt"]]
        table.add_row(
            f"{row['name']}{mark}",
            str(row["dimensions"]),
            str(row["pooling"] or "?"),
            str(row["max_tokens"] or "?"),
            "both" if len(prompts) == 2 else (prompts[0] if prompts else "none"),
            str(row["languages"]),
            "yes" if row["on_disk"] else "no",
        )
    out = console()
    out.print(table)
    for row in rows:
        default = " (the default)" if row["default"] else ""
        out.print(f"{row['name']}{default}: {row['source']}", style="dim", markup=False)
        for k in ("query", "document"):
            if row[f"{k}_prompt"]:
                out.print(f"  {k} prompt: {row[f'{k}_prompt']!r}", style="dim", markup=False)
    return 0
