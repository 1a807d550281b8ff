"""``contradictions`` (SPEC §8.5): sections of different documents that cover the same
ground below the near-duplicate threshold, grouped and ranked; lexical and vector."""

from __future__ import annotations

from pathlib import Path

import pytest

import kbdb
from kbdb.errors import InvalidArgumentError

BASE = (
    "The staging cluster runs three replicas of the api service behind the internal load "
    "balancer, and deploys happen from the main branch after the integration tests pass on "
    "the build server. Rollbacks use the previous image tag."
)
# The same ground, with a different claim: about 0.6 Jaccard against BASE.
CLAIM = BASE.replace("three replicas", "five replicas").replace(
    "from the main branch after the integration tests pass",
    "from release branches once the smoke tests are green",
)
UNRELATED = "Sourdough needs a ripe starter, strong flour, water, salt and a long cold proof."


def test_lexical_groups_overlapping_sections_of_different_documents(
    kb: kbdb.KnowledgeBase,
) -> None:
    a = kb.learn(BASE, docid="ops/runbook", tags=["ops"]).sections[0].kbid
    b = kb.learn(CLAIM, docid="wiki/deploys", tags=["ops"]).sections[0].kbid
    kb.learn(UNRELATED, docid="kitchen")
    res = kb.contradictions()
    assert res.method == "lexical" and res.threshold == 0.5
    assert len(res.groups) == 1
    group = res.groups[0]
    assert {m.kbid for m in group.sections} == {a, b}
    assert 0.5 <= group.similarity < 0.85
    assert {m.docids for m in group.sections} == {("ops/runbook",), ("wiki/deploys",)}
    assert all(m.snippet.startswith("The staging cluster") for m in group.sections)
    assert res.to_dict()["groups"][0]["sections"][0]["kbid"] in {a, b}


def test_near_duplicates_same_document_and_tags_are_left_out(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(BASE, docid="one", tags=["ops"])
    kb.learn(BASE.replace("three", "four"), docid="two")  # a near-duplicate: J >= 0.85
    assert kb.contradictions().groups == ()
    kb.learn_many([kbdb.LearnItem(CLAIM, docid="one")])  # same document as BASE
    res = kb.contradictions()
    # CLAIM pairs with the near-duplicate in "two" only (BASE shares its document).
    assert [sorted(d for m in g.sections for d in m.docids) for g in res.groups] == [["one", "two"]]
    assert kb.contradictions(tags=["ops"]).groups == ()


def test_forgotten_sections_leave_the_groups(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(BASE, docid="a")
    b = kb.learn(CLAIM, docid="b").sections[0].kbid
    assert kb.contradictions().groups
    kb.forget(b)
    assert kb.contradictions().groups == ()


def test_groups_are_ordered_and_limited(kb: kbdb.KnowledgeBase) -> None:
    kb.learn(BASE, docid="a")
    kb.learn(CLAIM, docid="b")
    other = (
        "Laptop policy: every disk is encrypted with a recovery key held by IT, screens lock "
        "after five idle minutes, and lost machines are reported to security within a day."
    )
    kb.learn(other, docid="c")
    kb.learn(other.replace("five idle minutes", "ten minutes without input"), docid="d")
    res = kb.contradictions(threshold=0.3)
    sims = [g.similarity for g in res.groups]
    assert len(sims) == 2 and sims == sorted(sims, reverse=True)
    assert len(kb.contradictions(threshold=0.3, limit=1).groups) == 1


@pytest.mark.parametrize("bad", [0, -0.1, 0.85, 0.9, 1.5, "x", True])
def test_bad_threshold_is_invalid_argument(kb: kbdb.KnowledgeBase, bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match="threshold"):
        kb.contradictions(threshold=bad)  # type: ignore[arg-type]


def test_bad_limit_is_invalid_argument(kb: kbdb.KnowledgeBase) -> None:
    with pytest.raises(InvalidArgumentError, match="limit"):
        kb.contradictions(limit=0)


def test_vector_method_with_the_real_model(tmp_path: Path) -> None:
    from tests.embedding.conftest import find_test_model
    from tests.test_hybrid import _onnx_kb

    with _onnx_kb(tmp_path / "kb", find_test_model()) as kb:
        a = kb.learn("The api service listens on port 8080 in production.", docid="a")
        b = kb.learn("In production the api service uses port 9090.", docid="b")
        kb.learn(UNRELATED, docid="c")
        res = kb.contradictions()
        assert res.method == "vector" and res.threshold == 0.75
        assert [{m.kbid for m in g.sections} for g in res.groups] == [
            {a.sections[0].kbid, b.sections[0].kbid}
        ]
        assert 0.75 <= res.groups[0].similarity < 0.92
