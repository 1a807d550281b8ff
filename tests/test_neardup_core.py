"""The Rust near-duplicate signer (``kbdb._core.neardup_*``) against the numpy reference
that made the band keys of earlier knowledge bases (``tests/neardup_reference.py``): the
values must be bit-identical, so that stored bands stay valid under the same ``PARAMS``."""

from __future__ import annotations

import json
import random
import sqlite3
import struct
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from tests import neardup_reference as ref
from tests.test_neardup import CORPORA

import kbdb
from kbdb import _core
from kbdb.knowledge import neardup
from kbdb.store import signatures as sig

SCIFACT = CORPORA.parent / "datasets" / "scifact" / "corpus.jsonl"
SAMPLES = [
    "",
    " \n\t ",
    "--- ... !!!",
    "x",
    "Word",
    "two words",
    "ΟΔΟΣ ΟΔΟΣ. Σ aΣb ΑΣ, σΣ",  # final sigma in and out of word ends
    "İstanbul ǅemal ß ﬁne Ǆ ẞ",  # multi-char and title-case lower mappings
    "cafe\u0301 nai\u0308ve Ünïcode",  # combining marks are not word characters
    "日本語のテキスト、中文文本 한국어 ٣٤٥ ①②③ ½ Ⅻ",
    "snake_case kebab-case CamelCase x86_64 3.14 1e10 v2",
    "a\ud800b c\udfffd",  # lone surrogates (Python allows them): separators
    "emoji 👍🏽 mid👍word zero\u200bwidth",
]


def corpus_texts() -> list[str]:
    texts: list[str] = []
    if SCIFACT.exists():
        with SCIFACT.open(encoding="utf-8") as f:
            for line in f:
                d = json.loads(line)
                texts.append(f"{d.get('title', '')}\n{d.get('text', '')}")
    for p in sorted(CORPORA.rglob("*.md"))[:2000]:
        texts.append(p.read_text(encoding="utf-8", errors="replace"))
    if not texts:
        pytest.skip(f"no corpus text at {CORPORA}")
    return texts


def test_params_and_seeds_match_the_python_side() -> None:
    assert _core.NEARDUP_PARAMS == neardup.PARAMS


def test_band_keys_identical_on_samples() -> None:
    assert _core.neardup_band_keys(SAMPLES) == ref.batch_band_keys(SAMPLES)
    got = neardup.batch_band_keys(SAMPLES)
    assert got[0] is None and got[1] is None and got[2] is None
    assert all(k is not None and len(k) == 8 * neardup.BANDS for k in got[3:])


def test_band_keys_and_shingles_identical_on_real_corpus_text() -> None:
    texts = corpus_texts()
    # Short pieces too: single words, two-word heads, lines.
    rng = random.Random(7)
    for t in rng.sample(texts, min(500, len(texts))):
        words = t.split()
        texts.append(" ".join(words[:1]))
        texts.append(" ".join(words[:2]))
        texts.append(t.splitlines()[0] if t.strip() else t)
    got = neardup.batch_band_keys(texts)
    want = ref.batch_band_keys(texts)
    bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert not bad, f"{len(bad)} of {len(texts)} differ, first: {texts[bad[0]][:200]!r}"
    sample = rng.sample(texts, min(1500, len(texts)))
    for t, sh in zip(sample, neardup.shingles_many(sample), strict=True):
        assert np.array_equal(sh, ref.shingles(t))


@pytest.mark.skipif(
    unicodedata.unidata_version != _core.NEARDUP_UNICODE,
    reason="the tables follow Unicode 14 (Python 3.11); this interpreter's str.lower and \\w "
    "differ on characters added since (docs/knowledge.md)",
)
def test_tokens_identical_for_every_code_point() -> None:
    """Every code point but the surrogates, doubled, between letters and before a capital
    sigma (the final-sigma rule): tokens (hence CRC-32 hashes) equal
    ``re.findall(r"\\w+", s.lower())``. The Rust tables come from Python's own
    (scripts/gen_neardup_tables.py), so unassigned code points agree too."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for i in range(0, len(cps), 2048):
        part = cps[i : i + 2048]
        text = " ".join(f"{chr(c)}{chr(c)} a{chr(c)}B {chr(c)}Σ" for c in part)
        assert neardup.tokens(text) == ref.tokens(text), f"block at U+{part[0]:04X}"


def test_verification_sets_are_sorted_distinct() -> None:
    (sh,) = neardup.shingles_many(["b a b a b a c"])
    assert list(sh) == sorted(set(sh.tolist())) and len(sh) == 3
    assert neardup.shingles_many(["", "!!"])[0].size == 0


# -- the batched SQL side -----------------------------------------------------------------


def _one_query_per_band(
    conn: sqlite3.Connection, kbid: str, per_band: int, limit: int
) -> list[str]:
    """The candidate read as it was: one ``LIMIT``ed query per band key."""
    row = conn.execute("SELECT id, bands FROM neardup_sections WHERE kbid = ?", (kbid,)).fetchone()
    if row is None:
        return []
    sid, blob = row
    shared: dict[int, int] = {}
    for key in struct.unpack(f"<{len(blob) // 8}q", blob):
        for (other,) in conn.execute(
            "SELECT id FROM neardup_bands WHERE key = ? AND id != ? LIMIT ?", (key, sid, per_band)
        ):
            shared[other] = shared.get(other, 0) + 1
    best = sorted(shared, key=lambda i: (-shared[i], i))[:limit]
    names = sig.live_kbids_of_ids(conn, best)
    return [names[i] for i in best if i in names]


def test_batched_candidates_equal_one_query_per_band(kb: kbdb.KnowledgeBase) -> None:
    """Buckets larger than ``per_band`` (300 near-identical tickets), pairs, singletons and a
    retired section: the batched read returns what one query per band returned."""
    para = " ".join(corpus_texts()[0].split()[:80])
    items = [kbdb.LearnItem(f"{para} Ticket {i}.", docid=f"t{i}") for i in range(300)]
    items += [kbdb.LearnItem(t, docid=f"c{i}") for i, t in enumerate(corpus_texts()[1:200])]
    items += [kbdb.LearnItem(corpus_texts()[1] + " One more line.", docid="dup")]
    report = kb.learn_many(items)
    kbids = list(dict.fromkeys(s.kbid for s in report.sections))
    kb.forget(kbids[5])
    conn = sqlite3.connect(kb.path / "kb.sqlite")
    try:
        for per_band, limit in ((64, 100), (3, 5), (1, 1)):
            got = sig.live_candidates_many(conn, kbids, per_band=per_band, limit=limit)
            for k in kbids:
                assert got.get(k, []) == _one_query_per_band(conn, k, per_band, limit), k
        assert sum(1 for k in kbids if got.get(k)) > 300
    finally:
        conn.close()


def test_insert_many_ids_follow_one_insert_each(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "t.sqlite")
    sig.ensure_tables(conn)
    blobs = neardup.batch_band_keys(["alpha beta gamma", "delta epsilon", "alpha beta gamma"])
    conn.execute("INSERT INTO neardup_sections(kbid, bands) VALUES ('first', x'')")
    sig.insert_many(conn, [(f"k{i}", b) for i, b in enumerate(blobs) if b is not None])
    ids = conn.execute("SELECT id, kbid FROM neardup_sections ORDER BY id").fetchall()
    assert ids == [(1, "first"), (2, "k0"), (3, "k1"), (4, "k2")]
    shared = conn.execute(
        "SELECT COUNT(*) FROM neardup_bands WHERE id IN (2, 4) GROUP BY key HAVING COUNT(*) = 2"
    ).fetchall()
    assert len(shared) == neardup.BANDS  # identical texts share every bucket
    conn.close()
