"""kbdb learn then kbdb search: output shapes, filters, paging and exit codes (SPEC §4)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb

RESULT_KEYS = {
    "items",
    "total",
    "offset",
    "limit",
    "has_more",
    "relaxed",
    "search_mode",
    "retrieval_method",
    "vector_index_stale",
    "retrieval_verdict",
}
ITEM_KEYS = {
    "kbid",
    "heading",
    "level",
    "parent",
    "type",
    "section_type",
    "docids",
    "tags",
    "snippet",
    "matched_terms",
    "matched_fields",
    "score",
    "confidence",
    "created_at",
}


def test_search_json_has_every_field_of_the_spec(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("--json", "search", "connection", "pool")
    assert res.code == 0, res.err
    data = res.json()
    assert set(data) >= RESULT_KEYS
    assert data["search_mode"] == data["retrieval_method"] == "lexical"
    assert data["total"] >= 1 and data["offset"] == 0 and data["limit"] == 10
    top = data["items"][0]
    assert set(top) >= ITEM_KEYS
    assert top["heading"] == "Connection pool"
    assert top["docids"] == ["db.md"]
    assert sorted(top["tags"]) == ["backend", "design"]
    assert "content" not in top and "explain" not in top
    assert {t.lower() for t in top["matched_terms"]} == {"connection", "pool"}


def test_json_option_after_the_command(learned: Path, kbdb: Kbdb) -> None:
    assert kbdb("search", "pool", "--json").json()["items"][0]["heading"] == "Connection pool"


def test_search_human_output_is_a_table_with_the_hit(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("search", "connection", "pool")
    assert res.code == 0, res.err
    assert "Connection pool" in res.out
    assert "db.md" in res.out
    assert "1-" in res.out and "lexical" in res.out
    assert "\x1b[" not in res.out  # no colour codes when piped


def test_no_hits_is_exit_0(learned: Path, kbdb: Kbdb) -> None:
    res = kbdb("--json", "search", "zeppelin")
    assert res.code == 0
    data = res.json()
    assert data["items"] == [] and data["total"] == 0
    human = kbdb("search", "zeppelin")
    assert human.code == 0 and "No results" in human.out


def test_content_and_explain(learned: Path, kbdb: Kbdb) -> None:
    top = kbdb("--json", "search", "pool", "--content", "--explain").json()["items"][0]
    assert "create_pool" in top["content"]
    assert top["explain"]
    human = kbdb("search", "pool", "--content", "--explain")
    assert human.code == 0 and "create_pool" in human.out and "explain #1" in human.out


def test_filters_and_paging(learned: Path, kbdb: Kbdb) -> None:
    assert kbdb("--json", "search", "tokens", "--tags", "design").json()["total"] >= 1
    assert kbdb("--json", "search", "tokens", "--tags", "design,nope").json()["total"] == 0
    assert kbdb("--json", "search", "tokens", "--docid", "db.md").json()["total"] == 0
    assert kbdb("--json", "search", "tokens", "--docid", "auth.md").json()["total"] >= 1
    assert kbdb("--json", "search", "tokens", "--type", "text/markdown").json()["total"] >= 1
    assert kbdb("--json", "search", "tokens", "--section-type", "fact").json()["total"] == 0
    first = kbdb("--json", "search", "the", "--limit", "1").json()
    if first["total"] > 1:
        assert first["has_more"] is True and len(first["items"]) == 1
        second = kbdb("--json", "search", "the", "--limit", "1", "--offset", "1").json()
        assert second["offset"] == 1
        assert second["items"][0]["kbid"] != first["items"][0]["kbid"]


def test_limit_out_of_range_is_a_usage_error(learned: Path, kbdb: Kbdb) -> None:
    for bad in ("0", "101", "x"):
        res = kbdb("search", "pool", "--limit", bad)
        assert res.code == 2, bad
        assert res.err.startswith("kbdb: ") and "Traceback" not in res.err


def test_vector_mode_without_a_provider(learned: Path, kbdb: Kbdb) -> None:
    for flag in ("--mode", "--algo"):
        res = kbdb("--json", "search", "pool", flag, "hybrid")
        assert res.code == 2
        assert res.err.startswith("kbdb: Vector search requires a configured embedding provider")
        assert res.json() == {
            "error": "Vector search requires a configured embedding provider",
            "code": "EMBEDDING_PROVIDER_NOT_CONFIGURED",
        }
    assert kbdb("search", "pool", "--mode", "sideways").code == 2


def test_search_without_mode_uses_search_default_mode(learned: Path, kbdb: Kbdb) -> None:
    from tests.embedding.conftest import find_test_model

    for key, value in (
        ("embedding.provider", "onnx"),
        ("embedding.model_path", str(find_test_model())),
        ("search.default_mode", "hybrid"),
    ):
        assert kbdb("config", "set", key, value).code == 0
    assert kbdb("rebuild").code == 0  # embeds the sections learned before the provider
    res = kbdb("--json", "search", "connection", "pool")
    assert res.code == 0, res.err
    assert (res.json()["search_mode"], res.json()["retrieval_method"]) == ("hybrid", "hybrid")
    explicit = kbdb("--json", "search", "connection", "pool", "--mode", "lexical")
    assert explicit.json()["search_mode"] == explicit.json()["retrieval_method"] == "lexical"
    human = kbdb("search", "connection", "pool")
    assert human.code == 0 and "mode hybrid" in human.out and human.err == ""


def test_default_mode_without_a_provider_falls_back_to_lexical(learned: Path, kbdb: Kbdb) -> None:
    assert kbdb("config", "set", "search.default_mode", "hybrid").code == 0
    res = kbdb("--json", "search", "connection", "pool")
    assert res.code == 0, res.err
    data = res.json()
    assert (data["search_mode"], data["retrieval_method"]) == ("hybrid", "lexical")
    assert data["vector_index_stale"] is False and data["total"] >= 1
    human = kbdb("search", "connection", "pool")
    assert human.code == 0 and "mode hybrid · retrieved lexical" in human.out
    assert "search.default_mode is hybrid but no embedding provider is configured" in human.err
    assert "kbdb config set search.default_mode lexical" in human.err
    # A named mode still needs the provider.
    assert kbdb("search", "pool", "--mode", "hybrid").code == 2


def test_learn_reports_and_skips_bad_files(tmp_path: Path, kbdb: Kbdb) -> None:
    from tests.cli.conftest import write

    assert kbdb("init").code == 0
    write(tmp_path, "notes/good.md", "# Good\n\nPlain words about kayaks.\n")
    bad = write(tmp_path, "notes/bad.md", b"# Bad\n\n\xff\xfe not utf-8\n")
    res = kbdb("--json", "learn", "notes")
    assert res.code == 1
    report = res.json()
    assert [s["path"] for s in report["files_skipped"]] == [str(bad)] or report["files_skipped"][0][
        "path"
    ].endswith("bad.md")
    assert "kbdb: skipped " in res.err and "bad.md" in res.err
    assert report["documents_added"] == 1
    assert kbdb("--json", "search", "kayaks").json()["total"] == 1


def test_learn_human_summary_and_quiet(tmp_path: Path, kbdb: Kbdb) -> None:
    from tests.cli.conftest import write

    assert kbdb("init").code == 0
    write(tmp_path, "a.md", "# A\n\nAlpha text.\n")
    res = kbdb("learn", "a.md")
    assert res.code == 0 and res.out.startswith("learned 1 new")
    write(tmp_path, "b.md", "# B\n\nBeta text.\n")
    quiet = kbdb("learn", "b.md", "-q")
    assert (quiet.code, quiet.out, quiet.err) == (0, "", "")


def test_learn_missing_path_and_misused_options(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    missing = kbdb("learn", "nope.md")
    assert missing.code == 2 and missing.err.startswith("kbdb: ")
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    misused = kbdb("learn", "a.md", "--title", "T")
    assert misused.code == 2 and "--title only apply to stdin" in misused.err
    assert kbdb("learn", "-", "a.md").code == 2
    assert kbdb("learn").code == 2


def test_search_min_confidence(learned: Path, kbdb: Kbdb) -> None:
    plain = kbdb("--json", "search", "connection", "pool").json()
    zero = kbdb("--json", "search", "connection", "pool", "--min-confidence", "0").json()
    assert zero == plain and plain["items"]
    empty = kbdb("--json", "search", "connection", "pool", "--min-confidence", "1")
    assert empty.code == 0, empty.err
    data = empty.json()
    assert data["items"] == [] and data["total"] == 0 and data["has_more"] is False
    assert data["retrieval_verdict"] == "unanswered"
    human = kbdb("search", "connection", "pool", "--min-confidence", "1")
    assert human.code == 0 and "unanswered" in human.out + human.err
    for bad in ("1.5", "-0.1", "nan", "high"):
        res = kbdb("search", "connection", "pool", "--min-confidence", bad)
        assert res.code == 2, (bad, res.err)
        assert res.err.startswith("kbdb: ") and "Traceback" not in res.err
    out_of_range = kbdb("search", "pool", "--min-confidence", "1.5")
    assert "min_confidence must be a number in [0, 1] (got 1.5)" in out_of_range.err
