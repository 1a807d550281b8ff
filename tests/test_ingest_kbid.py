"""kbids are a stable on-disk format: golden values, normalization, source keys."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbdb.errors import InvalidArgumentError
from kbdb.ingest import canonical_content, compute_kbid, kbid_hash, source_key

# Pinned once; if this changes, every stored kbid and vectors.idx changes with it.
GOLDEN = "93eb4cf5b1d1d54f740d9cbad76369d9"
GOLDEN_EMPTY = "971760062303e6b2f8ee2070aee03367"
HEX32 = re.compile(r"[0-9a-f]{32}")


def test_golden_kbid() -> None:
    assert compute_kbid("text/markdown", "Install", "Run `pip install kbdb`.\n") == GOLDEN


def test_golden_kbid_of_empty_section() -> None:
    assert compute_kbid("text/markdown", "", "") == GOLDEN_EMPTY


def test_kbid_is_sha256_prefix_of_documented_form() -> None:
    form = "text/markdown\x00Install\x00Run `pip install kbdb`."
    assert hashlib.sha256(form.encode("utf-8")).hexdigest()[:32] == GOLDEN


def test_crlf_and_lf_give_the_same_kbid() -> None:
    lf = "line one\nline two\n\n```\ncode\n```\n"
    assert compute_kbid("text/markdown", "H", lf) == compute_kbid(
        "text/markdown", "H", lf.replace("\n", "\r\n")
    )
    assert compute_kbid("text/markdown", "H", lf) == compute_kbid(
        "text/markdown", "H", lf.replace("\n", "\r")
    )


def test_trailing_whitespace_and_edge_blank_lines_do_not_change_kbid() -> None:
    base = compute_kbid("text/markdown", "H", "alpha\nbeta")
    assert compute_kbid("text/markdown", "H", "alpha   \nbeta\t\n") == base
    assert compute_kbid("text/markdown", "H", "\n\n  \nalpha\nbeta\n\n\n") == base
    assert compute_kbid("text/markdown", "  H  ", "alpha\nbeta") == base


def test_visible_changes_change_kbid() -> None:
    base = compute_kbid("text/markdown", "H", "alpha\nbeta")
    assert compute_kbid("text/markdown", "H2", "alpha\nbeta") != base
    assert compute_kbid("text/markdown", "", "alpha\nbeta") != base
    assert compute_kbid("text/plain", "H", "alpha\nbeta") != base
    assert compute_kbid("text/markdown", "H", "alpha\n\nbeta") != base
    assert compute_kbid("text/markdown", "H", " alpha\nbeta") != base
    assert compute_kbid("text/markdown", "H", "alpha\nbeta.") != base


def test_heading_and_content_boundary_is_unambiguous() -> None:
    assert compute_kbid("text/markdown", "ab", "c") != compute_kbid("text/markdown", "a", "bc")


def test_type_is_case_insensitive() -> None:
    assert compute_kbid("Text/Markdown", "H", "x") == compute_kbid("text/markdown", "H", "x")


def test_unicode_nfc_in_content_and_heading() -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert compute_kbid("text/markdown", composed, composed) == compute_kbid(
        "text/markdown", decomposed, decomposed
    )


def test_lone_surrogate_is_invalid_argument() -> None:
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        compute_kbid("text/markdown", "H", "bad \ud800 text")


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("a\r\nb\rc\n", "a\nb\nc"),
        ("  indented  \n", "  indented"),
        ("\n\n\nx\n\n\ny\n\n", "x\n\n\ny"),
        ("   \n\t\n", ""),
        ("", ""),
        ("cafe\u0301", "caf\u00e9"),
        ("a\u00a0\nb", "a\nb"),
    ],
)
def test_canonical_content(raw: str, canonical: str) -> None:
    assert canonical_content(raw) == canonical


def test_source_key() -> None:
    assert source_key("guide/setup.md", ("Install", "Linux")) == "guide/setup.md#Install/Linux"
    assert source_key("notes.txt", ()) == "notes.txt#"
    assert source_key("my-doc", ["Only"]) == "my-doc#Only"


def test_kbid_hash_round_trip() -> None:
    raw = kbid_hash(GOLDEN)
    assert len(raw) == 16
    assert raw.hex() == GOLDEN


@pytest.mark.parametrize("bad", ["", "abc", "z" * 32, GOLDEN + "00"])
def test_kbid_hash_rejects_bad_kbids(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        kbid_hash(bad)


@given(st.text(), st.text(), st.sampled_from(["text/markdown", "text/plain", "image/png"]))
def test_kbid_shape(heading: str, content: str, mime: str) -> None:
    assert HEX32.fullmatch(compute_kbid(mime, heading, content))


@given(st.text())
def test_canonical_content_is_idempotent(content: str) -> None:
    once = canonical_content(content)
    assert canonical_content(once) == once
    assert "\r" not in once
    assert once == once.strip("\n")


@given(
    st.lists(
        st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=20)
    ),
    st.lists(st.sampled_from([" ", "\t", "  "]), min_size=1),
)
def test_kbid_ignores_line_endings_and_trailing_spaces(lines: list[str], pads: list[str]) -> None:
    lf = "\n".join(lines)
    padded = "\r\n".join(line + pads[i % len(pads)] for i, line in enumerate(lines))
    assert compute_kbid("text/markdown", "H", lf) == compute_kbid("text/markdown", "H", padded)
