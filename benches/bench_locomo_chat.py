"""LoCoMo through the conversation path, beside ``kbdb eval`` on the same turns
(docs/conversations.md, "LoCoMo").

The BEIR files of ``shared/datasets/locomo`` (one document a dialog turn, ``title``
``{speaker} · session {n} · {date and time}``) are turned back into chat logs: one JSONL file
a session, ``{speaker, time, text}`` records, in a temporary folder (the data is CC BY-NC and
never enters the repository). They are learned by ``kbdb learn`` (the API's ``learn_path``,
and the CLI once on a copy, to show the two agree), every judged query runs through
``KnowledgeBase.search``, and each hit is mapped back to its LoCoMo turn id by its kbid. In
the same run ``run_eval`` (``kbdb eval``) learns the BEIR files as they are. Both report
nDCG@10 and Recall@10 over the top 10 of each query, and the script writes
``benches/results/locomo_chat.json`` (``locomo_chat_hybrid.json`` with ``--mode hybrid``).

    python benches/bench_locomo_chat.py [--mode lexical|hybrid] [--model DIR]
        [--set KEY=VALUE]... [--title-heading]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import SHARED, fmt, print_table, sha256, write_result  # noqa: E402
from kbdb import KnowledgeBase  # noqa: E402
from kbdb.config import set_value  # noqa: E402
from kbdb.evaluation.beir import load_beir  # noqa: E402
from kbdb.evaluation.metrics import ndcg_at_k, recall_at_k  # noqa: E402
from kbdb.evaluation.run import run_eval  # noqa: E402
from kbdb.ingest import compute_kbid  # noqa: E402
from kbdb.ingest.chat import TURN_TYPE, parse_time, turn_heading  # noqa: E402

LOCOMO = SHARED / "datasets" / "locomo"
K = 10
_TITLE = re.compile(r"(?P<speaker>.+?) · session (?P<n>\d+) · (?P<when>.+)")
_ID = re.compile(r"c(?P<conv>\d+)-D(?P<session>\d+):(?P<turn>\d+)")


def write_chats(corpus: Path, out: Path, *, title_heading: bool = False) -> dict[str, list[str]]:
    """One JSONL chat log a session under ``out`` (``c{conv}/session-{n}.jsonl``), in turn
    order; returns kbid -> the LoCoMo turn ids learned as that section. ``title_heading``
    (a diagnostic): the record's speaker is the whole BEIR title and it has no time, so the
    turn's heading is the heading ``kbdb eval`` gives it."""
    sessions: dict[tuple[int, int], list[tuple[int, dict[str, str], str]]] = defaultdict(list)
    for line in corpus.open(encoding="utf-8"):
        doc = json.loads(line)
        title, ident = _TITLE.fullmatch(doc["title"]), _ID.fullmatch(doc["_id"])
        if title is None or ident is None:
            raise SystemExit(f"unexpected LoCoMo document {doc['_id']!r}: {doc['title']!r}")
        record = {"speaker": title["speaker"], "time": title["when"], "text": doc["text"]}
        if title_heading:
            record = {"speaker": doc["title"], "text": doc["text"]}
        key = (int(ident["conv"]), int(ident["session"]))
        sessions[key].append((int(ident["turn"]), record, doc["_id"]))
    kbids: dict[str, list[str]] = defaultdict(list)
    for (conv, session), turns in sessions.items():
        path = out / f"c{conv}" / f"session-{session:02d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        turns.sort(key=lambda t: t[0])
        with path.open("w", encoding="utf-8") as f:
            for _n, record, ident in turns:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
                speaker = " ".join(record["speaker"].split())
                when = parse_time(record["time"]) if "time" in record else None
                heading = turn_heading(speaker, when)
                kbids[compute_kbid(TURN_TYPE, heading, record["text"].strip())].append(ident)
    return kbids


def _open(root: Path, settings: dict[str, str]) -> KnowledgeBase:
    kb = KnowledgeBase.init(root)
    if settings:
        for key, value in settings.items():
            set_value(kb.path / "worker.toml", key, value)
        kb.close()
        kb = KnowledgeBase.open(root)
    return kb


def chat_path(
    chats: Path, kbids: dict[str, list[str]], mode: str, settings: dict[str, str], tmp: Path
) -> dict[str, Any]:
    """Learn the chat logs and rank every judged query; metrics over the turn ids."""
    dataset = load_beir(LOCOMO / "corpus.jsonl", LOCOMO / "queries.jsonl", LOCOMO / "qrels")
    with _open(tmp / "chat-kb", settings) as kb:
        started = time.perf_counter()
        report = kb.learn_path(chats)
        learn_s = time.perf_counter() - started
        if report.files_skipped:
            raise SystemExit(f"records skipped: {report.files_skipped[:3]}")
        ndcg: dict[str, float] = {}
        recall: list[float] = []
        for qid, text in dataset.queries:
            judged = dataset.qrels.get(qid, {})
            hits = kb.search(text, mode=mode, limit=K).items
            ranking = [ident for h in hits for ident in kbids.get(h.kbid, ())]
            ndcg[qid] = ndcg_at_k(ranking, judged, K)
            recall.append(recall_at_k(ranking, judged, K))
        stats = kb.stats()
    return {
        "documents": report.documents_added,
        "sections": report.sections_added,
        "sections_in_kb": stats.sections,
        "learn_s": round(learn_s, 3),
        "queries": len(ndcg),
        "ndcg@10": sum(ndcg.values()) / len(ndcg),
        "recall@10": sum(recall) / len(recall),
        "ndcg@10_by_category": by_category(ndcg),
    }


def by_category(ndcg: dict[str, float]) -> dict[str, float]:
    """Mean nDCG@10 of each LoCoMo question category (README of the dataset)."""
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    cats = json.loads((LOCOMO / "queries_by_category.json").read_text(encoding="utf-8"))
    groups: dict[str, list[float]] = defaultdict(list)
    for qid, value in ndcg.items():
        groups[names.get(cats.get(qid), "other")].append(value)
    return {k: round(sum(v) / len(v), 4) for k, v in sorted(groups.items())}


def cli_learn(chats: Path, tmp: Path) -> dict[str, Any]:
    """``kbdb init`` and ``kbdb learn --json`` of the same logs, in a subprocess."""
    root = tmp / "cli-kb"
    root.mkdir()
    kbdb = [sys.executable, "-m", "kbdb.cli"]
    subprocess.run([*kbdb, "init", str(root)], check=True, capture_output=True)
    run = subprocess.run(
        [*kbdb, "learn", str(chats), "--db", str(root), "--json"],
        check=False,
        capture_output=True,
        text=True,
    )
    if run.returncode != 0:
        raise SystemExit(f"kbdb learn failed ({run.returncode}): {run.stderr}")
    rep = json.loads(run.stdout)
    return {"documents": rep["documents_added"], "sections": rep["sections_added"]}


def eval_path(mode: str, settings: dict[str, str], tmp: Path) -> dict[str, Any]:
    """``kbdb eval`` (``run_eval``) on the BEIR files, with nDCG@10 and Recall@10 from its
    per-query top 10."""
    per_query = tmp / "eval-per-query.jsonl"
    report = run_eval(
        LOCOMO / "corpus.jsonl",
        LOCOMO / "queries.jsonl",
        LOCOMO / "qrels",
        mode=mode,
        settings=settings,
        per_query=per_query,
    )
    ndcg: dict[str, float] = {}
    recall: list[float] = []
    for line in per_query.open(encoding="utf-8"):
        rec = json.loads(line)
        judged = {r["doc_id"]: r["gain"] for r in rec["relevant"]}
        ranking = [h["doc_id"] for h in rec["hits"]]
        ndcg[rec["query_id"]] = ndcg_at_k(ranking, judged, K)
        recall.append(recall_at_k(ranking, judged, K))
    return {
        "documents": report.documents,
        "sections": report.sections,
        "queries": report.queries,
        "ndcg@10": sum(ndcg.values()) / len(ndcg),
        "recall@10": sum(recall) / len(recall),
        "ndcg@10_by_category": by_category(ndcg),
        "report_ndcg@10": report.ndcg_at_10,
        "report_recall@100": report.recall_at_100,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("lexical", "hybrid"), default="lexical")
    ap.add_argument("--model", type=Path, help="ONNX sentence-transformers folder (hybrid)")
    ap.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a worker.toml setting for both paths, e.g. search.sibling_boost=0",
    )
    ap.add_argument(
        "--title-heading",
        action="store_true",
        help="diagnostic: give each turn the heading kbdb eval gives it (the BEIR title)",
    )
    args = ap.parse_args()
    if args.mode == "hybrid" and args.model is None:
        ap.error("--mode hybrid needs --model DIR")
    model = args.model if args.mode == "hybrid" else None
    settings = dict(kv.split("=", 1) for kv in args.settings)
    if model is not None:
        settings.update({"embedding.provider": "onnx", "embedding.model_path": str(model)})
    with tempfile.TemporaryDirectory(prefix="kbdb-locomo-") as name:
        tmp = Path(name)
        chats = tmp / "chats"
        kbids = write_chats(LOCOMO / "corpus.jsonl", chats, title_heading=args.title_heading)
        chat = chat_path(chats, kbids, args.mode, settings, tmp)
        cli = cli_learn(chats, tmp)
        beir = eval_path(args.mode, settings, tmp)
    if (cli["documents"], cli["sections"]) != (chat["documents"], chat["sections"]):
        raise SystemExit(f"the CLI learned {cli}, the API {chat}")
    rows = [
        ["kbdb learn (chat logs)", chat["documents"], chat["sections"], chat["ndcg@10"],
         chat["recall@10"]],
        ["kbdb eval (BEIR files)", beir["documents"], beir["sections"], beir["ndcg@10"],
         beir["recall@10"]],
    ]  # fmt: skip
    print_table(
        f"LoCoMo, {chat['queries']} judged queries, {args.mode}",
        ["path", "documents", "sections", "nDCG@10", "Recall@10"],
        [[r[0], r[1], r[2], fmt(r[3]), fmt(r[4])] for r in rows],
    )
    cats = chat["ndcg@10_by_category"]
    print_table(
        "nDCG@10 by question category",
        ["path", *cats],
        [
            ["chat logs", *(fmt(v) for v in cats.values())],
            ["BEIR files", *(fmt(beir["ndcg@10_by_category"][c]) for c in cats)],
        ],
    )
    name = "locomo_chat" if args.mode == "lexical" else f"locomo_chat_{args.mode}"
    if args.settings or args.title_heading:  # a diagnostic does not replace the result
        print(f"a diagnostic run: benches/results/{name}.json is left as it is")
        return
    path = write_result(
        name,
        {
            "mode": args.mode,
            "model": str(model) if model else None,
            "dataset": {
                f: sha256(LOCOMO / f) for f in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")
            },
            "chat": chat,
            "cli_learn": cli,
            "eval": beir,
            "delta_ndcg@10": chat["ndcg@10"] - beir["ndcg@10"],
            "delta_recall@10": chat["recall@10"] - beir["recall@10"],
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
