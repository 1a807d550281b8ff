"""The corruption matrix (SPEC §1, §6.3, §13).

Every file kind of a real knowledge base with the onnx provider (``kb.sqlite``,
``worker.toml``, the lexical manifest, a segment, a tombstone file, ``vectors.idx``, the
vector append and tombstone side files, ``vectors-meta.toml``) gets every fault (truncation
at 0, 7 bytes, half, mid-footer and one byte short; a bit flip in the middle and in the
first byte; a zeroed 4 KiB page; deletion; the file replaced by a directory). A child
process (``corruption_probe.py``) then opens the knowledge base, runs ``check``, a lexical
and a vector search and a learn, and repairs it with ``rebuild``. Each case runs in its own
process with a timeout, so a panic, a segfault or a hang is seen as such.

The expected outcome of each case is in ``EXPECTED`` below: one table. Index faults must
give ``INDEX_CORRUPT`` (or heal or flag staleness by design) and ``rebuild`` must restore
search results identical to the undamaged knowledge base; database faults must give a
``KbdbError`` carrying SQLite's message and the path; configuration faults must give
``CONFIG_INVALID`` or read as the valid configuration they have become.

``make test`` runs ``QUICK``; ``make test-slow`` runs the whole matrix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.embedding.conftest import find_test_model
from tests.reliability.corruption_lib import (
    FAULTS,
    KINDS,
    Outcome,
    build_reference,
    damaged_copy,
    probe,
)

LEXICAL_KINDS = ("meta.toml", "segment", "tombstones")
VECTOR_KINDS = ("vectors.idx", "vectors-add", "vectors-del", "vectors-meta.toml")
TEXT_ONLY_FAULTS = {"bitflip-text": ("kb.sqlite",)}


def expected(kind: str, fault: str) -> str:
    """The outcome class of one case (see ``check_outcome`` for what each one asserts)."""
    if fault == "none":
        return "clean"
    if kind in LEXICAL_KINDS or kind in VECTOR_KINDS:
        special = {
            # A missing manifest means "no index yet": open builds it (SPEC §1).
            ("meta.toml", "delete"): "self-heal",
            # A missing vector meta file means "never built": searches say stale.
            ("vectors-meta.toml", "delete"): "stale",
            # Opening reads a segment's footer and header and vectors.idx's header, not
            # their checksums (docs/reliability.md): damage past those is found by check,
            # or where a search decodes it.
            ("segment", "bitflip-middle"): "found-by-check",
            ("vectors.idx", "bitflip-middle"): "found-by-check",
        }
        return special.get((kind, fault), "corrupt")
    if kind == "kb.sqlite":
        return {
            "delete": "kb-not-found",
            "directory": "kb-not-found",
            # SQLite never reads these bytes: the tail past the last page, free space.
            "truncate-footer": "db-unused-bytes",
            "truncate-1": "db-unused-bytes",
            "bitflip-middle": "db-unused-bytes",
            "bitflip-text": "db-content",
        }.get(fault, "db-error")
    assert kind == "worker.toml"
    return {
        # What is left is valid TOML without [embedding]: provider "none" (SPEC §7).
        "truncate-0": "config-defaults",
        "truncate-7": "config-defaults",
        "delete": "config-defaults",
        # The damage falls in the commented defaults: the configuration is unchanged.
        "truncate-half": "config-comment",
        "truncate-footer": "config-comment",
        "truncate-1": "config-comment",
        "bitflip-middle": "config-comment",
    }.get(fault, "config-invalid")


def cases() -> list[tuple[str, str]]:
    return [
        (kind, fault)
        for kind in KINDS
        for fault in FAULTS
        if kind in TEXT_ONLY_FAULTS.get(fault, (kind,))
    ]


QUICK = {
    ("segment", "bitflip-middle"),
    ("vectors.idx", "truncate-footer"),
    ("meta.toml", "directory"),
    ("kb.sqlite", "zero-page-0"),
}

EXPECTED = {case: expected(*case) for case in cases()}


def _params() -> Iterator[Any]:
    for kind, fault in cases():
        marks = () if (kind, fault) in QUICK else (pytest.mark.slow,)
        yield pytest.param(kind, fault, id=f"{kind}-{fault}", marks=marks)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_reference(tmp_path_factory.mktemp("reference") / "kb", find_test_model())


@pytest.fixture(scope="module")
def baseline(reference: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    copy = damaged_copy(reference, tmp_path_factory.mktemp("baseline") / "kb", "kb.sqlite", "none")
    outcome = probe(copy)
    steps = outcome.steps
    assert outcome.returncode == 0, outcome.stderr
    assert all(v["ok"] for v in steps.values() if isinstance(v, dict) and "ok" in v), steps
    assert all(steps["after"][m] for m in ("lexical", "vector", "hybrid"))
    return steps


def failed(steps: dict[str, Any], name: str) -> dict[str, Any]:
    step = steps[name]
    assert step["ok"] is False, f"{name} succeeded on a damaged knowledge base: {steps}"
    return step


def succeeded(steps: dict[str, Any], name: str) -> Any:
    step = steps[name]
    assert step["ok"] is True, f"{name} failed: {step}"
    return step.get("value")


def check_outcome(kind: str, fault: str, kbdir: Path, out: Outcome, base: dict[str, Any]) -> None:
    """What every case promises, then what its outcome class promises."""
    assert not out.timed_out, f"hang: {out.stderr[-2000:]}"
    assert out.returncode == 0, f"crash (return code {out.returncode}): {out.stderr[-2000:]}"
    steps = out.steps
    assert steps, f"no report from the probe: {out.stderr[-2000:]}"
    for name, step in steps.items():
        if isinstance(step, dict) and step.get("ok") is False:
            assert step["type"] != "PanicException", f"{name} panicked: {step}"
            assert step["code"] is not None, f"{name} raised a non-kbdb error: {step}"
    cls = EXPECTED[(kind, fault)]
    lexical_before = base["lexical"]["value"]
    if cls in ("clean", "config-comment", "db-unused-bytes", "self-heal"):
        assert all(v["ok"] for v in steps.values() if isinstance(v, dict) and "ok" in v), steps
        # An index rebuilt on open scores like a rebuild: tombstoned sections no longer
        # count in the collection statistics.
        rebuilt = cls == "self-heal"
        assert succeeded(steps, "lexical") == (
            base["after"]["lexical"] if rebuilt else lexical_before
        )
        assert succeeded(steps, "vector") == base["vector"]["value"]
        assert succeeded(steps, "check_before")["ok"]
        assert steps["after"] == base["after"]
    elif cls == "corrupt":
        succeeded(steps, "open")
        lexical_file = kind in LEXICAL_KINDS
        if lexical_file:
            err = failed(steps, "lexical")
        else:
            assert succeeded(steps, "lexical") == lexical_before
            err = failed(steps, "vector")
        assert err["code"] == "INDEX_CORRUPT", err
        assert "rebuild" in err["message"], err
        assert str(kbdir / "indexes") in err["message"], err
        assert failed(steps, "learn")["code"] == "INDEX_CORRUPT"
        # ... after its database commit: the content is kept, and rebuild indexes it
        assert succeeded(steps, "probe_stored") is True
        before = succeeded(steps, "check_before")
        assert not before["ok"] and before["errors"], before
        _repaired(steps, base)
    elif cls == "found-by-check":
        succeeded(steps, "open")
        before = succeeded(steps, "check_before")
        assert not before["ok"] and "checksum_mismatch" in before["errors"], before
        # A search that reads the damage says so; one that does not gives the undamaged
        # results, never different ones.
        for mode, want in (("lexical", lexical_before), ("vector", base["vector"]["value"])):
            step = steps[mode]
            if step["ok"]:
                assert step["value"] == want, (mode, step)
            else:
                assert step["code"] == "INDEX_CORRUPT", step
                assert "rebuild" in step["message"], step
        # A learn writes new files; it fails only if it had to read the damaged one.
        if not steps["learn"]["ok"]:
            assert steps["learn"]["code"] == "INDEX_CORRUPT", steps["learn"]
        assert succeeded(steps, "probe_stored") is True
        _repaired(steps, base)
    elif cls == "stale":
        assert succeeded(steps, "lexical") == lexical_before
        assert succeeded(steps, "vector")["stale"] is True
        _repaired(steps, base)
    elif cls in ("db-error", "kb-not-found"):
        err = failed(steps, "open")
        if cls == "db-error":
            assert err["code"] == "INDEX_CORRUPT" and err["type"] == "DatabaseError", err
            assert str(kbdir / "kb.sqlite") in err["message"], err
            assert "cannot use database" in err["message"] or "schema" in err["message"], err
        else:
            assert err["code"] == "KB_NOT_FOUND", err
        assert failed(steps, "reopen")["code"] == err["code"]
    elif cls == "db-content":
        before = succeeded(steps, "check_before")
        assert not before["ok"] and "checksum_mismatch" in before["errors"], before
    elif cls == "config-invalid":
        err = failed(steps, "open")
        assert err["code"] == "CONFIG_INVALID", err
        assert "worker.toml" in err["message"], err
    elif cls == "config-defaults":
        assert succeeded(steps, "lexical") == lexical_before
        assert failed(steps, "vector")["code"] == "EMBEDDING_PROVIDER_NOT_CONFIGURED"
        succeeded(steps, "learn")
    else:  # pragma: no cover - the table names only the classes above
        raise AssertionError(cls)


def _repaired(steps: dict[str, Any], base: dict[str, Any]) -> None:
    """``rebuild`` repaired the fault: identical results in every mode, ``check`` ok."""
    succeeded(steps, "rebuild")
    assert steps["after"] == base["after"], "rebuild did not restore the same results"
    assert succeeded(steps, "check_after") == {"ok": True, "errors": []}


@pytest.mark.parametrize(("kind", "fault"), list(_params()))
def test_corruption(
    kind: str,
    fault: str,
    reference: Path,
    baseline: dict[str, Any],
    tmp_path: Path,
) -> None:
    kbdir = damaged_copy(reference, tmp_path / "case", kind, fault)
    check_outcome(kind, fault, kbdir, probe(kbdir), baseline)


def test_every_file_kind_and_fault_is_in_the_matrix(reference: Path) -> None:
    """The reference knowledge base holds exactly one file of each kind, and nothing in
    ``.kbdb`` is left out of the matrix but the lock and .gitignore."""
    from tests.reliability.corruption_lib import kind_file

    covered = {kind_file(reference, k) for k in KINDS}
    on_disk = {p for p in reference.rglob("*") if p.is_file()}
    other_segments = set(reference.glob("indexes/seg-*.seg")) - covered
    assert on_disk - covered - other_segments == {
        reference / "write.lock",
        reference / ".gitignore",
    }
    assert len(cases()) == len(KINDS) * (len(FAULTS) - 1) + 1
