"""Time in search: since / until inside the ranking, the recency decay, sort by time, the
argument forms and their errors (docs/search.md, "Time")."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from tests.test_hybrid import _onnx_kb

import kbdb
from kbdb import clock
from kbdb.config import set_value
from kbdb.errors import ConfigInvalidError, InvalidArgumentError

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


class FakeClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> None:
        self.at += timedelta(**delta)


@pytest.fixture
def fake_clock() -> Iterator[FakeClock]:
    c = FakeClock(T0)
    clock.set_clock(c)
    yield c
    clock.set_clock(None)


def _learn_batches(kb: kbdb.KnowledgeBase, fake_clock: FakeClock) -> tuple[set[str], set[str]]:
    """50 old sections about pools, then 30 days later 15 new ones: (old, new) kbids."""
    old = kb.learn_many(
        kbdb.LearnItem(f"Connection pool: connection pool {i}.", docid=f"old-{i}")
        for i in range(50)
    )
    fake_clock.advance(days=30)
    new = kb.learn_many(
        kbdb.LearnItem(
            f"The connection pool change {i} raised the limit of the nightly batch job j{i} "
            "after the incident review found timeouts in the report service.",
            docid=f"new-{i}",
        )
        for i in range(15)
    )
    return {s.kbid for s in old.sections}, {s.kbid for s in new.sections}


def test_since_fills_whole_pages_from_inside_the_ranking(
    kb: kbdb.KnowledgeBase, fake_clock: FakeClock
) -> None:
    old, new = _learn_batches(kb, fake_clock)
    fake_clock.advance(days=1)
    # The old sections outrank the new ones (shorter, same words), so a post-filtered
    # page would be empty.
    assert {i.kbid for i in kb.search("connection pool").items} <= old
    first = kb.search("connection pool", since="7d")
    assert len(first.items) == 10 and {i.kbid for i in first.items} <= new
    assert first.total == 15 and first.has_more
    second = kb.search("connection pool", since="7d", offset=10)
    assert len(second.items) == 5 and {i.kbid for i in second.items} <= new
    assert not second.has_more
    assert {i.kbid for i in first.items} | {i.kbid for i in second.items} == new
    # until: the complement, and the same through a date and a timestamp.
    before = kb.search("connection pool", until="2026-03-15", limit=100)
    assert {i.kbid for i in before.items} == old
    stamp = (T0 + timedelta(days=30)).isoformat()
    assert {i.kbid for i in kb.search("connection pool", since=stamp, limit=100).items} == new
    assert kb.search("connection pool", since=T0 + timedelta(days=31)).total == 0
    # Combined with another filter.
    tagged = kb.search("connection pool", since="7d", docid="new-3")
    assert [i.kbid for i in tagged.items] and {i.kbid for i in tagged.items} <= new


def test_sort_recent_is_newest_first_over_every_match(
    kb: kbdb.KnowledgeBase, fake_clock: FakeClock
) -> None:
    _old, new = _learn_batches(kb, fake_clock)
    fake_clock.advance(days=1)
    latest = kb.learn("Connection pool emergency: pool drained at night.", docid="latest")
    res = kb.search("connection pool", sort="recent", limit=20)
    kbids = [i.kbid for i in res.items]
    assert kbids[0] == latest.sections[0].kbid
    assert set(kbids[1:16]) == new
    # Ties (one learn, one second) by relevance.
    scores = [i.score for i in res.items[1:16]]
    assert scores == sorted(scores, reverse=True)
    assert (
        kb.search("connection pool", sort="relevance").items == kb.search("connection pool").items
    )


def test_recency_half_life_decays_and_explains(tmp_path: Path, fake_clock: FakeClock) -> None:
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    a = kb.learn("Rotate the signing keys every quarter.", docid="a").sections[0].kbid
    fake_clock.advance(days=30)
    b = kb.learn("Rotate the signing keys every quarter now.", docid="b").sections[0].kbid
    before = kb.search("rotate signing keys").items
    plain = {i.kbid: i.score for i in before}
    confidence = {i.kbid: i.confidence for i in before}
    kb.close()
    set_value(tmp_path / "kb" / ".kbdb" / "worker.toml", "search.recency_half_life", "30d")
    kb = kbdb.KnowledgeBase.open(tmp_path / "kb")
    res = kb.search("rotate signing keys", explain=True)
    got = {i.kbid: i for i in res.items}
    assert got[a].score == pytest.approx(plain[a] * 0.5, rel=1e-5)
    assert got[b].score == pytest.approx(plain[b], rel=1e-5)
    assert res.items[0].kbid == b
    ex = got[a].explain
    assert ex is not None and ex["recency"]["factor"] == pytest.approx(0.5)
    assert ex["recency"]["half_life"] == "30d" and ex["recency"]["age_days"] == 30
    assert ex["sibling_boost"] == 1.0  # the decay is not folded into the other factors
    # Confidence measures the match, not its age.
    assert got[a].confidence == confidence[a] and got[b].confidence == confidence[b]
    kb.close()


def test_bad_config_and_arguments_say_what_is_accepted(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(ConfigInvalidError, match="30d"):
        set_value(kb.path / "worker.toml", "search.recency_half_life", "a month")
    for arg in ("since", "until", "as_of"):
        with pytest.raises(InvalidArgumentError, match=r"7d.*2026-11-01.*ISO-8601") as e:
            kb.search("x", **{arg: "last tuesday"})
        assert e.value.code == "INVALID_ARGUMENT" and arg in e.value.message
    with pytest.raises(InvalidArgumentError, match="relevance, recent"):
        kb.search("x", sort="oldest")


def test_vector_search_honours_since(tmp_path: Path, model: Path, fake_clock: FakeClock) -> None:
    kb = _onnx_kb(tmp_path / "kb", model)
    kb.learn("We chose Postgres because of JSONB support.", docid="db-old")
    fake_clock.advance(days=10)
    new = kb.learn("Our database is Postgres, picked for JSON columns.", docid="db-new")
    for mode in ("vector", "hybrid"):
        res = kb.search("database choice", mode=mode, since="5d")
        assert [i.kbid for i in res.items] == [new.sections[0].kbid], mode
        recent = kb.search("database choice", mode=mode, sort="recent", limit=2)
        assert recent.items[0].kbid == new.sections[0].kbid
    kb.close()


def test_cli_flags(
    kb: kbdb.KnowledgeBase, fake_clock: FakeClock, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from kbdb.cli.app import run

    kb.learn("Old fact about the queue.", docid="old")
    fake_clock.advance(days=3)
    kb.learn("New fact about the queue.", docid="new")
    db = ["--db", str(kb.path), "--json", "search", "queue"]

    def docids(*flags: str) -> list[str]:
        assert run([*db, *flags]) == 0
        return [d for i in json.loads(capsys.readouterr().out)["items"] for d in i["docids"]]

    assert docids("--since", "2d") == ["new"]
    assert docids("--until", "2d") == ["old"]
    assert docids("--sort", "recent") == ["new", "old"]
    assert docids("--as-of", "2026-03-02") == ["old"]
    assert docids("--as-of", "2026-03-04T00:00:00+00:00") == ["new", "old"] or docids(
        "--as-of", "2026-03-04T00:00:00+00:00"
    ) == ["old", "new"]
    assert run(["--db", str(kb.path), "search", "queue", "--since", "soon"]) == 2
    err = capsys.readouterr().err
    assert "kbdb: since must be" in err and "7d" in err and "ISO-8601" in err
