"""Regenerate the README's benchmark table from ``benches/results/*.json``.

Only the text between ``<!-- bench:start -->`` and ``<!-- bench:end -->`` is rewritten.
Without those markers the README is left alone (a notice is printed, the exit code is 0).
Each result file contributes its ``headline`` rows, in the order of ``ORDER``.

    python benches/update_readme.py [--readme README.md] [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, read_result  # noqa: E402

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"
ORDER = (
    "quality",
    "navigation",
    "lexical_speed",
    "vector_scan",
    "embed",
    "embed_roofline",
    "learn",
    "neardup",
    "maintenance",
    "cold_start",
    "scale",
)
SOURCES = {
    "quality": "benches/bench_quality.py",
    "navigation": "benches/bench_navigation.py",
    "lexical_speed": "benches/bench_lexical_speed.py",
    "vector_scan": "benches/bench_vector_scan.py",
    "embed": "benches/bench_embed.py",
    "embed_roofline": "benches/embed_roofline.py",
    "learn": "benches/bench_learn.py",
    "neardup": "benches/bench_neardup.py",
    "maintenance": "benches/bench_maintenance.py",
    "cold_start": "benches/bench_cold_start.py",
    "scale": "benches/bench_scale.py",
}


def render(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown block between the markers (markers excluded)."""
    if not results:
        return "\n_No benchmark results yet: run `make bench`._\n"
    lines = [
        "",
        "| benchmark | kbdb | peers, same run |",
        "|---|---|---|",
    ]
    for name in ORDER:
        data = results.get(name)
        if data is None:
            continue
        for row in data.get("headline", []):
            lines.append(f"| {row['what']} | {row['kbdb']} | {row['peers']} |")
    first = next(iter(results.values()))
    m = first.get("machine", {})
    dates = sorted({d.get("date", "")[:10] for d in results.values()})
    scripts = ", ".join(f"`{SOURCES[n]}`" for n in ORDER if n in results)
    lines += [
        "",
        f"Measured {', '.join(dates)} on {m.get('cpu', '?')} ({m.get('cores', '?')} cores), "
        f"Python {m.get('python', '?')}, kbdb {m.get('versions', {}).get('kbdb', '?')}. "
        f"Ratios come from one run of each script ({scripts}); reproduce with `make bench`. "
        "Details, parameters and checksums: `benches/results/*.json`, `docs/benchmarks.md`.",
        "",
    ]
    hosts = _hosts(results)
    if len(hosts) > 1:
        # Same-run ratios stay comparable across hosts; absolute numbers do not.
        parts = [
            f"{platform}: {', '.join(f'`{SOURCES[n]}`' for n in names)}"
            for platform, names in hosts.items()
        ]
        lines[-1:-1] = [
            "",
            f"The results come from {len(hosts)} hosts of this machine class, whose CPUs "
            "differ: compare a row's ratio (kbdb against its peers in the same run), not "
            "absolute numbers across rows. " + "; ".join(parts) + ".",
        ]
    return "\n".join(lines)


def _hosts(results: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """The result names per host platform string, in ``ORDER``."""
    hosts: dict[str, list[str]] = {}
    for name in ORDER:
        data = results.get(name)
        if data is not None:
            machine = data.get("machine", {})
            platform = machine.get("platform", "unknown host")
            cpu = machine.get("cpu_id", {})
            if "cpu_family" in cpu:  # one platform string covers Zen 4 and Zen 5 hosts
                platform += f" (CPU family {cpu['cpu_family']}, model {cpu.get('model', '?')})"
            hosts.setdefault(platform, []).append(name)
    return hosts


def update(text: str, block: str) -> str | None:
    """``text`` with the block replaced, or None when the markers are missing."""
    start = text.find(START)
    end = text.find(END, start + len(START)) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    return text[: start + len(START)] + block + text[end:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if the table is out of date")
    args = ap.parse_args()
    results = {n: r for n in ORDER if (r := read_result(n)) is not None}
    if not args.readme.exists():
        print(f"update_readme: {args.readme} does not exist; nothing to do")
        return 0
    text = args.readme.read_text(encoding="utf-8")
    new = update(text, render(results))
    if new is None:
        print(f"update_readme: no {START} … {END} markers in {args.readme}; left unchanged")
        return 0
    if new == text:
        print("update_readme: README benchmark table is up to date")
        return 0
    if args.check:
        print("update_readme: README benchmark table is out of date")
        return 1
    args.readme.write_text(new, encoding="utf-8")
    print(f"update_readme: rewrote the benchmark table in {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
