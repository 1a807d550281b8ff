"""The numpy implementation of the near-duplicate signer, as it was before signing moved to
Rust (``kbdb._core.neardup_*``). Knowledge bases made before that hold band keys made by
this code, so the Rust signer must match it bit for bit: ``tests/test_neardup_core.py``
checks that on real corpus text. Slow (about 2,000 sections/s) and kept only here."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kbdb.knowledge.neardup import BANDS, PERMS, ROWS, SEED, SHINGLE

U64 = npt.NDArray[np.uint64]
_TOKEN = re.compile(r"\w+")
_FNV = 0x100000001B3
SIGN_CHUNK = 16_384
"""Shingles per vectorised MinHash step (PERMS x this uint64 values, 13 MB)."""


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def token_hashes(text: str) -> list[int]:
    """CRC-32 of each token's UTF-8 bytes (lone surrogates never reach a token)."""
    return [zlib.crc32(t.encode("utf-8", "surrogatepass")) for t in tokens(text)]


def _short_shingle(h: list[int]) -> U64:
    """The short-section rule: one shingle of all its tokens."""
    acc = len(h)
    for v in h:
        acc = (acc * _FNV + v) & 0xFFFFFFFFFFFFFFFF
    return np.array([acc], dtype=np.uint64)


def _shingle_hashes(h: U64, n: int) -> U64:
    acc = np.full(n, SHINGLE, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(SHINGLE):
            acc = acc * np.uint64(_FNV) + h[j : j + n]
        acc ^= acc >> np.uint64(29)
        acc *= np.uint64(0xBF58476D1CE4E5B9)
        acc ^= acc >> np.uint64(32)
    return acc


def shingles(text: str) -> U64:
    """Sorted, distinct shingle hashes (empty: no tokens)."""
    th = token_hashes(text)
    if not th:
        return np.zeros(0, dtype=np.uint64)
    if len(th) < SHINGLE:
        return _short_shingle(th)
    h = np.array(th, dtype=np.uint64)
    return np.unique(_shingle_hashes(h, len(h) - SHINGLE + 1))


def seeds() -> tuple[U64, U64]:
    rng = np.random.default_rng(SEED)
    s = rng.integers(0, 1 << 63, PERMS, dtype=np.uint64) * np.uint64(2)
    mul = rng.integers(1, 1 << 63, ROWS, dtype=np.uint64) | np.uint64(1)
    return s, mul


_SEEDS, _BAND_MUL = seeds()


def _mix(x: U64, s: U64) -> U64:
    with np.errstate(over="ignore"):
        z = x[None, :] ^ s[:, None]
        z ^= z >> np.uint64(30)
        z *= np.uint64(0xBF58476D1CE4E5B9)
        z ^= z >> np.uint64(27)
        z *= np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def minhash(sh: U64) -> U64:
    out: U64 = _mix(sh[:SIGN_CHUNK], _SEEDS).min(axis=1)
    for i in range(SIGN_CHUNK, len(sh), SIGN_CHUNK):
        out = np.minimum(out, _mix(sh[i : i + SIGN_CHUNK], _SEEDS).min(axis=1))
    return out


def band_keys_of(sig: U64) -> U64:
    rows = sig.reshape(-1, BANDS, ROWS)
    with np.errstate(over="ignore"):
        keys: U64 = (rows * _BAND_MUL[None, None, :]).sum(axis=2, dtype=np.uint64)
        keys += np.arange(BANDS, dtype=np.uint64)[None, :] * np.uint64(0x9E3779B97F4A7C15)
        keys ^= keys >> np.uint64(31)
        keys *= np.uint64(0x94D049BB133111EB)
        keys ^= keys >> np.uint64(29)
    return keys


def band_keys(sh: U64) -> U64:
    """``BANDS`` band keys of a non-empty shingle set."""
    out: U64 = band_keys_of(minhash(sh)[None, :])[0]
    return out


def batch_band_keys(texts: Sequence[str]) -> list[bytes | None]:
    """As ``kbdb.knowledge.neardup.batch_band_keys``: little-endian uint64 bytes, None: no
    tokens."""
    out: list[bytes | None] = []
    for text in texts:
        sh = shingles(text)
        out.append(None if len(sh) == 0 else band_keys(sh).astype("<u8").tobytes())
    return out
