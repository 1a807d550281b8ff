"""Child process of the corruption matrix: open a damaged knowledge base, try the user's
operations on it, then repair it with ``rebuild`` and print what happened as one JSON line.

Run as ``python corruption_probe.py KBPATH``. Every step records either ``ok`` or the
exception's type, module, ``code`` and message, so the parent can tell a clean
``KbdbError`` from a pyo3 ``PanicException``, a bare ``OSError`` or a hang (the parent's
timeout) or a crash (a negative return code).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from typing import Any

import kbdb

_KEEP = frozenset({"check_before", "lexical", "vector", "probe_stored", "check_after"})
QUERIES = ("pool", "one hour", "postgres jsonb", "deploy switch", "cache expiry")
PROBE_DOC = "# Probe\n\nA probe note about lighthouses written after the damage."


def results(kb: kbdb.KnowledgeBase, mode: str) -> list[list[tuple[str, float]]]:
    return [
        [(i.kbid, round(i.score, 5)) for i in kb.search(q, mode=mode, limit=10).items]
        for q in QUERIES
    ]


def vector_search(kb: kbdb.KnowledgeBase) -> dict[str, Any]:
    """Vector results, and whether the response said the vector index is stale."""
    res = [kb.search(q, mode="vector", limit=10) for q in QUERIES]
    return {
        "stale": any(r.vector_index_stale for r in res),
        "results": [[(i.kbid, round(i.score, 5)) for i in r.items] for r in res],
    }


def check(kb: kbdb.KnowledgeBase) -> dict[str, Any]:
    report = kb.check()
    return {"ok": report.ok, "errors": sorted({e.code for e in report.errors})}


def probe_stored(kb: kbdb.KnowledgeBase) -> bool:
    try:
        kb.recall(docid="probe")
    except kbdb.errors.NotFoundError:
        return False
    return True


def forget_probe(kb: kbdb.KnowledgeBase) -> None:
    # NotFoundError: the learn failed cleanly, nothing to drop
    with contextlib.suppress(kbdb.errors.NotFoundError):
        kb.forget(docid="probe")


def main(path: str) -> None:
    out: dict[str, Any] = {}

    def step(name: str, fn: Callable[[], Any]) -> Any:
        try:
            value = fn()
        except BaseException as e:  # noqa: BLE001 - a panic is a BaseException: record it
            out[name] = {
                "ok": False,
                "type": type(e).__name__,
                "module": type(e).__module__,
                "code": getattr(e, "code", None),
                "message": str(e)[:600],
            }
            return None
        out[name] = {"ok": True, "value": value} if name in _KEEP else {"ok": True}
        return value

    kb = step("open", lambda: kbdb.KnowledgeBase.open(path))
    if kb is not None:
        step("check_before", lambda: check(kb))
        step("lexical", lambda: results(kb, "lexical"))
        step("vector", lambda: vector_search(kb))
        step("learn", lambda: kb.learn(PROBE_DOC, docid="probe"))
        kb.close()
    # Repair: a fresh process-level open, rebuild, drop the probe, rebuild again (so the
    # index holds exactly what the undamaged one held), then the same searches.
    kb = step("reopen", lambda: kbdb.KnowledgeBase.open(path))
    if kb is not None:
        step("probe_stored", lambda: probe_stored(kb))
        if step("rebuild", kb.rebuild) is not None:
            step("forget", lambda: forget_probe(kb))
            step("rebuild2", kb.rebuild)
            out["after"] = {
                mode: step(f"after_{mode}", lambda m=mode: results(kb, m))
                for mode in ("lexical", "vector", "hybrid")
            }
            step("check_after", lambda: check(kb))
        kb.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
