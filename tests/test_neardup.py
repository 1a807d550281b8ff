"""Near-duplicates at learn time (SPEC §3 ``near_duplicates``): the MinHash/LSH band table,
its exact verification, its upkeep through the change log, and precision and recall on a
corpus with known near-duplicates (docs/knowledge.md quotes the figures printed by
``pytest tests/test_neardup.py -k corpus -s``)."""

from __future__ import annotations

import random
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from tests import neardup_reference as ref

import kbdb
from kbdb.knowledge import neardup
from kbdb.store import signatures as sig

# The shared corpora beside the checkout, else the workplace copy (as .ci/run finds the model).
CORPORA = next(
    (
        p
        for p in (
            Path(__file__).resolve().parents[2] / "shared/corpora",
            Path("/work/shared/corpora"),
        )
        if (p / "tldr").is_dir()
    ),
    Path("/work/shared/corpora"),
)
PARA = (
    "Use the pg_dump tool to back up a PostgreSQL database to a single file, then restore it "
    "with pg_restore on the new server. Stop writes first, and check that the version of the "
    "client tools matches the server version, otherwise the restore fails halfway through "
    "with an error about an unsupported archive format."
)


def near(report: kbdb.LearnReport) -> dict[str, float]:
    return {d.kbid: d.similarity for s in report.sections for d in s.near_duplicates}


# -- the algorithm ----------------------------------------------------------------------


def test_s_curve_meets_the_recall_target_at_the_threshold() -> None:
    assert neardup.lsh_recall(0.85) >= 0.99999
    assert neardup.lsh_recall(0.95) > 0.9999999
    # Candidates far below the threshold stay rare, so verification stays cheap.
    assert neardup.lsh_recall(0.3) < 0.05
    assert neardup.lsh_recall(0.2) < 0.01


def test_identical_token_sequences_have_jaccard_one_and_band_keys() -> None:
    a = neardup.shingles("Hello, World! hello world")
    b = neardup.shingles("hello world HELLO world.")
    assert neardup.jaccard(a, b) == 1.0
    ka, kb_ = neardup.batch_band_keys(["Hello, World! hello world", "hello world HELLO world."])
    assert ka is not None and ka == kb_
    assert len(ka) == 8 * neardup.BANDS


def test_minhash_agreement_tracks_jaccard() -> None:
    # A linear hash family failed this (pairs at J = 0.97 agreed on half the values).
    rng = random.Random(3)
    words = [f"w{rng.randrange(5000)}" for _ in range(400)]
    edited = list(words)
    for i in rng.sample(range(400), 8):
        edited[i] = "changed"
    a, b = neardup.shingles(" ".join(words)), neardup.shingles(" ".join(edited))
    j = neardup.jaccard(a, b)
    agree = float((ref.minhash(a) == ref.minhash(b)).mean())
    assert 0.85 < j < 0.97
    assert abs(agree - j) < 0.12


def test_short_section_rule_one_shingle_of_all_tokens() -> None:
    assert len(neardup.shingles("single")) == 1
    assert neardup.jaccard(neardup.shingles("Single!"), neardup.shingles("single")) == 1.0
    assert neardup.jaccard(neardup.shingles("single"), neardup.shingles("other")) == 0.0
    assert len(neardup.shingles("  --- ")) == 0


def test_huge_section_is_signed_in_bounded_slices() -> None:
    # The reference signs in slices of SIGN_CHUNK shingles; Rust in one pass: same keys.
    text = " ".join(f"w{i % 5000} x{i % 7}" for i in range(3 * ref.SIGN_CHUNK))
    sh = neardup.shingles(text)
    assert len(sh) > ref.SIGN_CHUNK
    (batch,) = neardup.batch_band_keys([text])
    assert batch is not None and batch == ref.band_keys(sh).astype("<u8").tobytes()


def test_many_near_identical_sections_verify_a_bounded_number(kb: kbdb.KnowledgeBase) -> None:
    items = [kbdb.LearnItem(f"{PARA} Ticket {i}.", docid=f"t{i}") for i in range(300)]
    report = kb.learn_many(items)
    counts = [len(s.near_duplicates) for s in report.sections]
    assert max(counts) == neardup.MAX_REPORTED and min(counts) > 0


# -- learn-time reports -------------------------------------------------------------------


def test_small_edit_is_reported_with_its_jaccard(kb: kbdb.KnowledgeBase) -> None:
    first = kb.learn(PARA, title="backup", docid="a")
    assert near(first) == {}
    second = kb.learn(PARA.replace("new server", "target server"), title="backup", docid="b")
    found = near(second)
    assert list(found) == [first.sections[0].kbid]
    assert 0.85 <= found[first.sections[0].kbid] < 1.0


def test_unrelated_and_heavily_edited_are_not_reported(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(PARA, docid="a")
    other = "Deploy the web tier with a blue green switch at the load balancer every Tuesday."
    assert near(kb.learn(other, docid="b")) == {}
    words = PARA.split()
    half = " ".join(w if i % 3 else "changed" for i, w in enumerate(words))
    assert near(kb.learn(half, docid="c")) == {}


def test_identical_content_is_linked_not_reported(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(PARA, docid="a")
    again = kb.learn(PARA, docid="b")
    assert again.sections[0].status == "linked"
    assert near(again) == {}


def test_near_duplicates_within_one_learn(kb: kbdb.KnowledgeBase) -> None:
    report = kb.learn_many(
        [
            kbdb.LearnItem(PARA, docid="a"),
            kbdb.LearnItem(PARA.replace("halfway", "midway"), docid="b"),
        ]
    )
    a, b = report.sections
    assert [d.kbid for d in a.near_duplicates] == [b.kbid]
    assert [d.kbid for d in b.near_duplicates] == [a.kbid]


def test_retired_section_is_no_longer_a_near_duplicate(kb: kbdb.KnowledgeBase) -> None:
    old = kb.learn(PARA, docid="a").sections[0].kbid
    kb.learn("Something else entirely about gardening in spring.", docid="a", replace=False)
    kb.forget(old)
    assert near(kb.learn(PARA.replace("halfway", "midway"), docid="b")) == {}


def test_supersession_does_not_report_the_previous_version(kb: kbdb.KnowledgeBase) -> None:
    first = kb.learn(f"# Backups\n\n{PARA}", docid="ops")
    second = kb.learn(
        f"# Backups\n\n{PARA.replace('halfway', 'midway')}", docid="ops", replace=True
    )
    assert second.sections[0].superseded == first.sections[0].kbid
    assert near(second) == {}


def test_old_knowledge_base_is_backfilled_on_first_learn(kb: kbdb.KnowledgeBase) -> None:
    target = kb.learn(PARA, docid="a").sections[0].kbid
    db = kb.path / "kb.sqlite"
    kb.close()
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP TABLE neardup_bands; DROP TABLE neardup_sections;"
        " DELETE FROM meta WHERE key LIKE 'neardup_%';"
    )
    conn.close()
    with kbdb.KnowledgeBase.open(kb.path) as again:
        report = again.learn(PARA.replace("halfway", "midway"), docid="b")
        assert list(near(report)) == [target]


def test_rebuild_regenerates_the_band_table(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(PARA, docid="a")
    conn = sqlite3.connect(kb.path / "kb.sqlite")
    conn.execute("DELETE FROM neardup_bands")
    conn.commit()
    conn.close()
    kb.rebuild()
    assert near(kb.learn(PARA.replace("halfway", "midway"), docid="b"))


def test_forget_signatures_drops_rows(kb: kbdb.KnowledgeBase) -> None:
    k = kb.learn(PARA, docid="a").sections[0].kbid
    conn = sqlite3.connect(kb.path / "kb.sqlite", isolation_level=None)
    assert conn.execute("SELECT COUNT(*) FROM neardup_bands").fetchone()[0] == neardup.BANDS
    conn.execute("BEGIN")
    assert neardup.forget_signatures(conn, [k, "0" * 32]) == 1
    conn.execute("COMMIT")
    assert conn.execute("SELECT COUNT(*) FROM neardup_bands").fetchone()[0] == 0
    assert not sig.live_candidates(conn, k, per_band=64, limit=100)
    conn.close()


def test_threshold_comes_from_the_configuration(tmp_path: Path) -> None:
    from kbdb.config import set_value

    base = kbdb.KnowledgeBase.init(tmp_path / "kb")
    set_value(base.path / "worker.toml", "learn.near_duplicate_jaccard", "0.99")
    base.close()
    with kbdb.KnowledgeBase.open(tmp_path / "kb") as kb:
        kb.learn(PARA, docid="a")
        assert near(kb.learn(PARA.replace("halfway", "midway"), docid="b")) == {}


# -- the corpus: known near-duplicates from tldr and the Rust book ------------------------

_WORD = re.compile(r"[A-Za-z]{3,}")
_NUM = re.compile(r"\d+")
_VOCAB = ("system", "value", "careful", "memory", "archive", "quickly", "remote", "pattern")
Edit = Callable[[str, random.Random], str]


def _swap_word(t: str, rng: random.Random) -> str:
    m = rng.choice(list(_WORD.finditer(t)))
    return t[: m.start()] + rng.choice(_VOCAB) + t[m.end() :]


def _change_number(t: str, rng: random.Random) -> str:
    nums = list(_NUM.finditer(t))
    if not nums:
        return _swap_word(t, rng)
    m = rng.choice(nums)
    return t[: m.start()] + str(int(m.group()) + rng.randint(1, 9)) + t[m.end() :]


def _insert_word(t: str, rng: random.Random) -> str:
    m = rng.choice(list(_WORD.finditer(t)))
    return t[: m.end()] + " " + rng.choice(_VOCAB) + t[m.end() :]


def _transpose(t: str, rng: random.Random) -> str:
    ms = list(_WORD.finditer(t))
    i = rng.randrange(len(ms) - 1)
    a, b = ms[i], ms[i + 1]
    return t[: a.start()] + b.group() + t[a.end() : b.start()] + a.group() + t[b.end() :]


def _delete_sentence(t: str, rng: random.Random) -> str:
    parts = re.split(r"(?<=[.!?])\s+", t)
    total = len(neardup.tokens(t))
    small = [i for i, p in enumerate(parts) if 0 < len(neardup.tokens(p)) <= 0.08 * total]
    if len(parts) < 2 or not small:
        return _swap_word(t, rng)
    i = rng.choice(small)
    return " ".join(parts[:i] + parts[i + 1 :])


EDITS: tuple[Edit, ...] = (_swap_word, _change_number, _insert_word, _transpose, _delete_sentence)


def _rewrite(t: str, rng: random.Random, share: float) -> str:
    """Replace ``share`` of the words: same layout and topic, not a near-duplicate."""
    return _WORD.sub(lambda m: rng.choice(_VOCAB) if rng.random() < share else m.group(), t)


Original = tuple[str, str]  # (heading, content)


def build_corpus(
    seed: int = 7, n_tldr: int = 300, n_rust: int = 300, min_tokens: int = 50
) -> tuple[list[Original], list[tuple[int, str]], list[tuple[int, str]]]:
    """Originals (no two at J >= 0.85), positives (1-2 small edits of an original of 50+
    tokens) and negatives (a 20% rewrite of another original)."""
    from kbdb.ingest import split_markdown

    rng = random.Random(seed)
    tldr = sorted((CORPORA / "tldr" / "pages" / "common").glob("*.md"))
    book = sorted((CORPORA / "rust-book" / "src").glob("*.md"))
    pool: list[Original] = []
    for p in rng.sample(tldr, n_tldr):
        pool += [(s.heading, s.content) for s in split_markdown(p.read_text()).sections]
    rust = [(s.heading, s.content) for p in book for s in split_markdown(p.read_text()).sections]
    pool += rng.sample(rust, n_rust)
    kept: list[Original] = []
    sets = []
    for h, c in pool:
        sh = neardup.shingles(f"{h}\n{c}")
        # J >= 0.85 needs sizes within a factor 0.85 of each other: compare only those.
        close = (o for o in sets if 0.85 * len(o) <= len(sh) <= len(o) / 0.85)
        if len(sh) and all(neardup.jaccard(sh, o) < 0.85 for o in close):
            kept.append((h, c))
            sets.append(sh)
    long_ = [i for i, (h, c) in enumerate(kept) if len(neardup.tokens(f"{h}\n{c}")) >= min_tokens]
    rng.shuffle(long_)
    half = len(long_) // 2
    positives = []
    for i in long_[:half]:
        text = kept[i][1]
        while text == kept[i][1]:  # an edit that changes nothing is not a near-duplicate
            for _ in range(rng.choice((1, 2))):
                text = rng.choice(EDITS)(text, rng)
        positives.append((i, text))
    negatives = [(i, _rewrite(kept[i][1], rng, 0.2)) for i in long_[half:]]
    return kept, positives, negatives


def _doc(heading: str, content: str) -> str:
    return f"# {heading}\n\n{content}" if heading else content


@pytest.mark.skipif(not (CORPORA / "tldr").is_dir(), reason="shared corpora not present")
def test_corpus_precision_and_recall(kb: kbdb.KnowledgeBase) -> None:
    kept, positives, negatives = build_corpus()
    first = kb.learn_many(
        kbdb.LearnItem(_doc(h, c), docid=f"o/{n}") for n, (h, c) in enumerate(kept)
    )
    original: dict[int, str] = {}
    for s in first.sections:
        original.setdefault(int(s.docid.split("/")[1]), s.kbid)  # type: ignore[union-attr]
    assert not near(first), "the originals were chosen with no near-duplicates among them"
    tp = fp = fn = lsh_missed = exact = 0
    for tag, group in (("p", positives), ("n", negatives)):
        report = kb.learn_many(
            kbdb.LearnItem(_doc(kept[i][0], t), docid=f"{tag}/{i}") for i, t in group
        )
        by_doc: dict[str, set[str]] = {}
        for s in report.sections:
            by_doc.setdefault(s.docid or "", set()).update(d.kbid for d in s.near_duplicates)
        for i, text in group:
            found = by_doc[f"{tag}/{i}"]
            want = original[i]
            h, c = kept[i]
            j = neardup.jaccard(neardup.shingles(f"{h}\n{text}"), neardup.shingles(f"{h}\n{c}"))
            if j >= 0.85:
                exact += 1
                lsh_missed += want not in found
            if tag == "p":
                tp += want in found
                fn += want not in found
                fp += len(found - {want})
            else:
                fp += len(found)
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(
        f"\noriginals {len(kept)}, positives {len(positives)}, negatives {len(negatives)}:"
        f" precision {precision:.3f}, recall {recall:.3f} (tp {tp}, fp {fp}, fn {fn});"
        f" pairs at exact J >= 0.85: {exact}, missed by LSH: {lsh_missed}"
    )
    assert lsh_missed == 0  # P(miss) at J = 0.85 is 8e-6 per pair
    assert precision >= 0.99
    assert recall >= 0.9


# -- cosine, with the real embedding model --------------------------------------------------

ADR = "We chose Postgres as our database because of its JSONB support."


@pytest.fixture
def onnx_kb(tmp_path: Path) -> kbdb.KnowledgeBase:
    from tests.embedding.conftest import find_test_model
    from tests.test_hybrid import _onnx_kb

    return _onnx_kb(tmp_path / "kb", find_test_model())


def test_paraphrase_is_found_by_cosine_not_jaccard(onnx_kb: kbdb.KnowledgeBase) -> None:
    with onnx_kb as kb:
        first = kb.learn(ADR, docid="a").sections[0].kbid
        para = "We selected PostgreSQL as our database because it supports JSONB."
        assert neardup.jaccard(neardup.shingles(ADR), neardup.shingles(para)) < 0.5
        found = near(kb.learn(para, docid="b"))
        assert list(found) == [first]
        assert 0.92 <= found[first] < 1.0  # the cosine, since Jaccard did not pass


def test_same_topic_different_claim_is_not_a_near_duplicate(onnx_kb: kbdb.KnowledgeBase) -> None:
    with onnx_kb as kb:
        kb.learn(ADR, docid="a")
        other = "Postgres backups run nightly at two in the morning with pg_dump."
        assert near(kb.learn(other, docid="b")) == {}


def test_one_scan_for_many_sections_equals_one_scan_each(onnx_kb: kbdb.KnowledgeBase) -> None:
    """``vector_near_duplicates`` scores all new sections in one ``search_many`` pass; its
    answer must be what one ``search`` per section gave (the implementation it replaced)."""
    import numpy as np

    from kbdb.store import queries as q

    with onnx_kb as kb:
        kb.learn(
            f"# Decisions\n\n## Database\n\n{ADR}\n\n## Queue\n\n"
            "We use RabbitMQ for background jobs because it supports retries.\n\n"
            "## Cache\n\nRedis caches sessions for thirty minutes.\n",
            docid="a",
        )
        report = kb.learn(
            "# Choices\n\n## Db\n\nWe selected PostgreSQL as our database because it "
            "supports JSONB.\n\n## Jobs\n\nBackground jobs go through RabbitMQ, which "
            "supports retries.\n\n## Other\n\nThe office is closed on Fridays.\n",
            docid="b",
        )
        kbids = [s.kbid for s in report.sections]
        vectors = kb.context.vectors
        index = vectors.index()
        assert index is not None
        got = neardup.vector_near_duplicates(kb.context.db, vectors, kbids, 0.5)
        with kb.context.db.read() as conn:
            vecs = neardup.cached_vectors(conn, vectors, q.index_rows(conn, kbids))
        want: dict[str, dict[str, float]] = {}
        for k in kbids:
            found, scores = index.search(
                np.frombuffer(vecs[k], dtype=np.float32), limit=neardup.MAX_REPORTED + 1
            )
            hits = {
                f: round(float(s), 4)
                for f, s in zip(found, scores, strict=True)
                if f != k and s >= 0.5
            }
            if hits:
                want[k] = hits
        assert got == want
        assert len(got) >= 2  # the two paraphrases at least
