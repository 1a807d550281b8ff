"""Write the one ranking table (every dev set × every system) into the README and
docs/search.md, between ``<!-- ranking:start -->`` and ``<!-- ranking:end -->``.

It reads ``benches/results/tune_ranking.json`` (bm25s, lexical with the defaults before and
after query term frequency and the path field), ``tune_fusion.json`` (vector and each
hybrid variant, on the same lexical defaults) and ``navigation.json``.

    python benches/ranking_table.py [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, read_result  # noqa: E402

START, END = "<!-- ranking:start -->", "<!-- ranking:end -->"
TARGETS = (ROOT / "README.md", ROOT / "docs" / "search.md")
SETS = (
    ("scifact", "SciFact"),
    ("cranfield", "Cranfield"),
    ("medline", "MEDLINE"),
    ("lisa", "LISA"),
    ("time", "TIME"),
    ("locomo", "LoCoMo (agent memory)"),
)
PARAPHRASE = ("paraphrase", "paraphrase (agent memories)")
PREVIOUS_FUSION = "previous default (rrf, coverage and gap ramps)"


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _m(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}"


def render() -> str:
    ranking = read_result("tune_ranking")
    fusion = read_result("tune_fusion")
    nav = read_result("navigation")
    if ranking is None or fusion is None:
        raise SystemExit("run benches/tune_ranking.py and benches/tune_fusion.py first")
    hybrid = fusion["ndcg@10"]
    shipped = fusion["shipped"]
    variants: list[tuple[str, str]] = [
        ("rrf k=60", "hybrid RRF k=60"),
        ("linear w=0.5", "hybrid linear 0.5"),
        (PREVIOUS_FUSION, "hybrid, previous default"),
        (shipped, "**hybrid adaptive (default)**"),
    ]
    previous = ranking.get("previous", {}).get("ndcg@10", {})
    head = ["set", "bm25s", "lexical, previous defaults", "**lexical now**", "vector"]
    head += [label for _, label in variants]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, name in (*SETS, PARAPHRASE):
        peer: dict[str, Any] = ranking["bm25s"].get(key) or {}
        lexical_now = ranking["after"]["ndcg@10"].get(key, hybrid["lexical"].get(key))
        row = [
            name,
            _f(peer.get("ndcg@10")) if key != "paraphrase" else "0.000",
            _f(previous.get(key)) if key != "paraphrase" else "0.000",
            _f(lexical_now),
            _f(hybrid["vector"].get(key)),
        ]
        row += [_f(hybrid.get(v, {}).get(key)) for v, _ in variants]
        lines.append("| " + " | ".join(row) + " |")
    out = [
        "nDCG@10 on every dev set, one run of each script (`benches/tune_ranking.py`, "
        "`benches/tune_fusion.py`); *previous defaults*: `k1 = 1.8`, `b = 0.9` for body and "
        "heading, `w_path = 2`, chosen on SciFact, Cranfield and MEDLINE alone. The "
        "paraphrase set is built so that no question shares a word with its answer.",
        "",
        *lines,
    ]
    held = ranking.get("held_out", {})
    loso = fusion.get("leave_one_set_out", {})
    if held or loso:
        out += [
            "",
            "Leave one collection out: each default chosen by the same rule on the other five "
            "collections, then scored on the one left out. Lexical: the margin over bm25s; "
            "hybrid: the margin by which it holds both goals (at or above the better arm less "
            "0.005, and at or above RRF k=60).",
            "",
            "| left out | lexical: margin over bm25s | lexical: the shipped defaults' margin "
            "| hybrid: margin held |",
            "|---|---|---|---|",
        ]
        after_margin = ranking["after"].get("margin", {})
        for key, name in SETS:
            h = held.get(key, {})
            f = loso.get(key, {}).get("margins", {})
            out.append(
                f"| {name} | {_m(h.get('margin'))} | {_m(after_margin.get(key))} "
                f"| {_m(f.get(key))} |"
            )
    if nav is not None:
        out += ["", "Navigation on the docker CLI reference (`benches/bench_navigation.py`):", ""]
        out += ["| queries | kbdb | bm25s over whole files |", "|---|---|---|"]
        for h in nav.get("headline", []):
            what = h["what"].replace("docker-cli navigation, ", "")
            out.append(
                f"| {what} | {h['kbdb']} | {h['peers'].replace('bm25s (whole files) ', '')} |"
            )
        before = ranking.get("previous", {}).get("navigation", {})
        after = ranking["after"].get("navigation", {})
        if before and after:
            out += [
                "",
                "Ranking alone (no paging), name success@1: previous defaults "
                f"{_f(before.get('name s@1'))}, now {_f(after.get('name s@1'))}; "
                f"descriptions {_f(before.get('description s@1'))} → "
                f"{_f(after.get('description s@1'))}.",
            ]
    return "\n".join(out)


def apply(text: str, table: str) -> str:
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no {START} … {END} markers")
    return pattern.sub(lambda _: f"{START}\n{table}\n{END}", text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if a file is out of date")
    args = ap.parse_args()
    table = render()
    stale = []
    for path in TARGETS:
        text = path.read_text(encoding="utf-8")
        new = apply(text, table)
        if new != text:
            if args.check:
                stale.append(path.name)
            else:
                path.write_text(new, encoding="utf-8")
    if stale:
        print("out of date: " + ", ".join(stale))
        return 1
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
