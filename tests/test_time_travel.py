"""Time travel: ``as_of=T`` answers exactly as a knowledge base that made only the changes
up to ``T`` (docs/search.md, "Time travel"), over random histories of learns (with
supersession), revisions, forgets and re-learns of forgotten content; and the validity
intervals that ``recall`` and ``history`` show."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.test_hybrid import _onnx_kb

import kbdb
from kbdb import clock

T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)
WORDS = ("alpha", "beta", "gamma", "delta", "pool", "cache", "deploy", "queue")
QUERIES = ("alpha", "beta gamma", "pool cache", "deploy queue alpha", '"gamma delta"')
DOCS = 3


@dataclass(frozen=True)
class Op:
    """One change, replayable on another knowledge base: the facade method and arguments."""

    method: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()

    def apply(self, kb: kbdb.KnowledgeBase) -> Any:
        return getattr(kb, self.method)(*self.args, **dict(self.kwargs))


# What the history generator draws: the kind of change and its random parts.
step = st.tuples(
    st.sampled_from(["learn", "learn", "learn", "revise", "forget", "relearn"]),
    st.integers(0, DOCS - 1),  # document
    st.integers(0, 2),  # heading
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
    st.integers(0, 10_000),  # which live section / forgotten content
)


def _stamp(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


@dataclass
class History:
    ops: list[tuple[datetime, Op]]


def run_history(
    kb: kbdb.KnowledgeBase, steps: list[Any], set_time: Callable[[datetime], None]
) -> History:
    """Apply ``steps`` to ``kb`` one minute apart; the concrete ops, for replaying."""
    unique = itertools.count()
    forgotten: list[tuple[int, str]] = []  # (document, content) of forgotten sections
    out: list[tuple[datetime, Op]] = []
    for i, (kind, doc, heading, words, pick) in enumerate(steps):
        at = _stamp(i + 1)
        set_time(at)
        text = " ".join(words) + f" u{next(unique)}"
        live = sorted(
            (s.kbid for d in range(DOCS) for s in _live_sections(kb, f"d{d}")),
        )
        if kind == "revise" and live:
            op = Op("revise", (live[pick % len(live)], text))
        elif kind == "forget" and live:
            kbid = live[pick % len(live)]
            (section,) = kb.recall(kbid).sections
            forgotten.append((int(section.docids[0][1:]), section.content))
            op = Op("forget", (kbid,))
        elif kind == "relearn" and forgotten:
            d, content = forgotten[pick % len(forgotten)]
            op = Op("learn", (content,), (("docid", f"d{d}"), ("title", f"Doc {d}")))
        else:
            content = f"## H{heading}\n\n{text}\n"
            op = Op(
                "learn",
                (content,),
                (("docid", f"d{doc}"), ("title", f"Doc {doc}"), ("replace", True)),
            )
        op.apply(kb)
        out.append((at, op))
    return History(out)


def _live_sections(kb: kbdb.KnowledgeBase, docid: str) -> tuple[Any, ...]:
    try:
        return kb.recall(docid=docid).sections
    except kbdb.KbdbError:
        return ()


def _results(kb: kbdb.KnowledgeBase, mode: str, **kw: Any) -> list[tuple[list[Any], int]]:
    out = []
    for query in QUERIES:
        res = kb.search(query, mode=mode, limit=50, **kw)
        out.append(([(i.kbid, i.score, i.relaxed) for i in res.items], res.total))
    return out


COMPARED = {"searches": 0, "items": 0}


def _same(got: list[tuple[list[Any], int]], want: list[tuple[list[Any], int]]) -> None:
    COMPARED["searches"] += len(got)
    COMPARED["items"] += sum(len(g) for g, _ in got)
    for (g, g_total), (w, w_total), query in zip(got, want, QUERIES, strict=True):
        assert [k for k, _, _ in g] == [k for k, _, _ in w], query
        assert [r for _, _, r in g] == [r for _, _, r in w], query
        for (_, gs, _), (_, ws, _) in zip(g, w, strict=True):
            assert gs == pytest.approx(ws, abs=1e-6), query
        assert g_total == w_total, query


@pytest.fixture
def clock_at() -> Iterator[Callable[[datetime], None]]:
    now = [T0]
    clock.set_clock(lambda: now[0])

    def set_time(at: datetime) -> None:
        now[0] = at

    yield set_time
    clock.set_clock(None)


def _check_as_of(
    make: Callable[[Path], kbdb.KnowledgeBase],
    steps: list[Any],
    cuts: list[int],
    modes: tuple[str, ...],
    set_time: Callable[[datetime], None],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kb = make(Path(tmp) / "main")
        try:
            hist = run_history(kb, steps, set_time)
            for n, cut in enumerate(sorted(set(cuts))):
                # A moment at an op (it counts: "at or before") or just before the next.
                k = cut % (len(hist.ops) + 1)
                at = _stamp(k) + (timedelta(seconds=30) if n % 2 else timedelta(0))
                replay = make(Path(tmp) / f"replay-{n}")
                try:
                    for when, op in hist.ops:
                        if when <= at:
                            set_time(when)
                            op.apply(replay)
                    # The snapshot's statistics are those of its live sections; a replayed
                    # index also counts its tombstones until a merge: rebuild it.
                    replay.rebuild(vectors=False)
                    for mode in modes:
                        _same(_results(kb, mode, as_of=at), _results(replay, mode))
                finally:
                    replay.close()
        finally:
            kb.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(step, min_size=3, max_size=14),
    cuts=st.lists(st.integers(0, 20), min_size=1, max_size=3),
)
def test_as_of_matches_a_replay_lexical(
    steps: list[Any], cuts: list[int], clock_at: Callable[[datetime], None]
) -> None:
    _check_as_of(kbdb.KnowledgeBase.init, steps, cuts, ("lexical",), clock_at)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(step, min_size=3, max_size=10),
    cuts=st.lists(st.integers(2, 10), min_size=1, max_size=2),
)
def test_as_of_matches_a_replay_vector_and_hybrid(
    steps: list[Any], cuts: list[int], clock_at: Callable[[datetime], None], model: Path
) -> None:
    _check_as_of(
        lambda p: _onnx_kb(p, model), steps, cuts, ("lexical", "vector", "hybrid"), clock_at
    )


def test_validity_intervals_in_recall_and_history(
    kb: kbdb.KnowledgeBase, clock_at: Callable[[datetime], None]
) -> None:
    clock_at(_stamp(1))
    first = kb.learn("The build runs on Jenkins.", docid="ci").sections[0].kbid
    clock_at(_stamp(2))
    second = kb.revise(first, "The build runs on GitHub Actions.").kbid
    (old,) = kb.recall(first).sections
    (new,) = kb.recall(second).sections
    assert (old.valid_from, old.valid_until) == ("2026-05-01T00:01:00Z", "2026-05-01T00:02:00Z")
    assert (new.valid_from, new.valid_until) == ("2026-05-01T00:02:00Z", None)
    versions = kb.history(second).to_dict()["versions"]
    assert [(v["valid_from"], v["valid_until"]) for v in versions] == [
        ("2026-05-01T00:01:00Z", "2026-05-01T00:02:00Z"),
        ("2026-05-01T00:02:00Z", None),
    ]
    # Forgotten, then learned again: live twice; recall shows the latest interval, and
    # as_of sees both.
    clock_at(_stamp(3))
    kb.forget(second)
    clock_at(_stamp(5))
    kb.learn("The build runs on GitHub Actions.", docid="ci")
    (again,) = kb.recall(second).sections
    assert (again.valid_from, again.valid_until) == ("2026-05-01T00:05:00Z", None)
    assert again.created_at == "2026-05-01T00:02:00Z"

    def found(at: datetime) -> list[str]:
        return [i.kbid for i in kb.search("build", as_of=at).items]

    assert found(_stamp(0)) == []
    assert found(_stamp(1)) == [first]
    assert found(_stamp(2)) == [second]
    assert found(_stamp(4)) == []
    assert found(_stamp(6)) == [second]


def test_sections_stored_before_the_validity_table_use_created_and_retired(
    kb: kbdb.KnowledgeBase, clock_at: Callable[[datetime], None]
) -> None:
    clock_at(_stamp(1))
    kbid = kb.learn("Legacy note about the queue.", docid="legacy").sections[0].kbid
    with kb.context.db.write() as conn:  # as a knowledge base made before the table
        conn.execute("DELETE FROM section_validity")
    (s,) = kb.recall(kbid).sections
    assert (s.valid_from, s.valid_until) == ("2026-05-01T00:01:00Z", None)
    clock_at(_stamp(3))
    kb.forget(kbid)
    (s,) = kb.recall(kbid).sections
    assert (s.valid_from, s.valid_until) == ("2026-05-01T00:01:00Z", "2026-05-01T00:03:00Z")
    assert [i.kbid for i in kb.search("queue", as_of=_stamp(2)).items] == [kbid]
    assert kb.search("queue", as_of=_stamp(3)).total == 0
