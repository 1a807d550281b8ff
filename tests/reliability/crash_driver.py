"""The writer that the crash harness kills (``test_crash.py``): random operations on one
knowledge base, each bracketed in an fsync'd journal.

    python -m tests.reliability.crash_driver KB JOURNAL SEED OPS [--model DIR]

Before an operation it journals ``{"intent": n, "add": [...], "remove": [...]}`` and after
it returns ``{"ack": n}``: ``add`` are the marker words that the operation makes
searchable, ``remove`` those it takes out of search. Every marker is a unique word, so the
harness can tell, word by word, what must be found after a crash: the effects of every
acknowledged operation, exactly; the one in flight, either way.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from pathlib import Path
from typing import Any

from kbdb import KnowledgeBase
from kbdb.evaluation.run import override_config


class Journal:
    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")  # end a line torn by the previous kill

    def write(self, entry: dict[str, Any]) -> None:
        os.write(self._fd, (json.dumps(entry) + "\n").encode())
        os.fsync(self._fd)


def replay(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The journal's state: marker → ``"live"`` or ``"gone"`` after every acknowledged
    operation, and the state of every section the driver knows (for revise and forget)."""
    words: dict[str, str] = {}
    known: dict[str, Any] = {"docs": {}, "sections": {}, "n": 0}
    pending: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return words, known
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # torn by the kill: an intent without its ack, so never acknowledged
        if "intent" in entry:
            pending[entry["intent"]] = entry
            known["n"] = max(known["n"], entry["intent"] + 1)
        elif "ack" in entry:
            done = pending.pop(entry["ack"])
            for w in done.get("remove", []):
                words[w] = "gone"
            for w in done.get("add", []):
                words[w] = "live"
            for doc, sections in done.get("docs", {}).items():
                if sections is None:
                    known["docs"].pop(doc, None)
                else:
                    known["docs"][doc] = sections
    # An op in flight at the crash: its words may or may not have changed.
    for entry in pending.values():
        for w in entry.get("add", []) + entry.get("remove", []):
            words[w] = "either"
        for doc in entry.get("docs", {}):
            known["docs"].pop(doc, None)  # its sections' state is unknown: leave it alone
    return words, known


def marker(n: int, part: str) -> str:
    """A unique word that the analyzer keeps whole: letters only (a digit would split it),
    ending in ``q`` (no stemmer suffix ends so)."""
    code = ""
    for _ in range(5):
        n, r = divmod(n, 20)
        code += "bcdfghjklmnpqstvwxyz"[r]
    return f"mk{code}{part}q"


def section(n: int, part: str) -> tuple[str, str]:
    word = marker(n, part)
    return word, f"## Part {part} of {n}\n\nThis paragraph carries the marker {word}.\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("kb", type=Path)
    ap.add_argument("journal", type=Path)
    ap.add_argument("seed", type=int)
    ap.add_argument("ops", type=int)
    ap.add_argument("--model", type=Path)
    args = ap.parse_args()
    _, known = replay(args.journal)
    rng = random.Random(args.seed)
    kb = KnowledgeBase.open(args.kb)
    if args.model:
        settings = {"embedding.provider": "onnx", "embedding.model_path": str(args.model)}
        kb = KnowledgeBase.open(args.kb, config=override_config(kb.config, settings))
    journal = Journal(args.journal)
    files = args.kb / "files"
    files.mkdir(exist_ok=True)
    n = known["n"]
    for i in range(args.ops):
        docs: dict[str, list[str]] = known["docs"]
        op = rng.choices(
            ["learn", "learn_file", "revise", "forget", "rebuild", "gc"],
            weights=[5, 3, 3, 2, 1, 1],
        )[0]
        if i == 0:
            op = "learn"  # so that every learn and file-write fail point is reached
        if op in ("revise", "forget") and not docs:
            op = "learn"
        entry: dict[str, Any] = {"intent": n, "op": op, "add": [], "remove": [], "docs": {}}
        if op in ("learn", "learn_file"):
            marks, parts = zip(*(section(n, p) for p in "ab"), strict=True)
            docid = f"doc{n}"
            key = docid if op == "learn" else f"files/{docid}.md"
            entry["add"] = list(marks)
            entry["docs"] = {key: list(marks)}
            journal.write(entry)
            text = f"# Document {n}\n\n" + "\n".join(parts)
            if op == "learn":
                kb.learn(text, docid=docid)
            else:
                (args.kb / key).write_text(text, encoding="utf-8")
                kb.learn_path(args.kb / key)
        elif op == "revise":
            docid = rng.choice(sorted(docs))
            old = rng.choice(docs[docid])
            new = marker(n, "r")
            body = f"This paragraph was revised to carry the marker {new}.\n"
            hits = kb.search(old, limit=5).items
            kbid = next(h.kbid for h in hits)  # every acknowledged marker is searchable
            rest = [w for w in docs[docid] if w != old]
            entry.update(add=[new], remove=[old], docs={docid: [*rest, new]})
            journal.write(entry)
            kb.revise(kbid, body)
        elif op == "forget":
            docid = rng.choice(sorted(docs))
            entry.update(remove=list(docs[docid]), docs={docid: None})
            journal.write(entry)
            if docid.startswith("files/"):
                (args.kb / docid).unlink()
                kbids = [h.kbid for w in docs[docid] for h in kb.search(w, limit=5).items]
                kb.forget(*kbids)
            else:
                kb.forget(docid=docid)
        else:
            journal.write(entry)
            if op == "rebuild":
                kb.rebuild()
            else:
                kb.gc()
        journal.write({"ack": n})
        n += 1
        known = replay(args.journal)[1]
    kb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
