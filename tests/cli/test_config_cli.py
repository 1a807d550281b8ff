"""kbdb config show / set (SPEC §7)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb

from kbdb.config import Config, config_to_dict, default_config_text


def test_show_defaults(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    res = kbdb("config", "show")
    assert res.code == 0, res.err
    assert "[search]" in res.out and "k1 = 1.2" in res.out and 'provider = "none"' in res.out
    assert "# model_path is not set" in res.out
    assert kbdb("--json", "config", "show").json() == config_to_dict(Config())
    assert kbdb("config", "show", "search.k1").out == "1.2\n"
    assert kbdb("config", "show", "embedding.provider").out == "none\n"
    assert kbdb("--json", "config", "show", "search.synonyms").json() == {
        "key": "search.synonyms",
        "value": True,
    }
    assert kbdb("config", "show", "search.nope").code == 2


def test_set_keeps_comments_and_shows_the_default(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    res = kbdb("config", "set", "search.k1", "1.5")
    assert res.code == 0, res.err
    assert res.out == "search.k1 = 1.5\n"
    text = (tmp_path / ".kbdb" / "worker.toml").read_text(encoding="utf-8")
    assert "k1 = 1.5 # default: 1.2" in text
    for line in default_config_text().splitlines():
        if line != "# k1 = 1.2":
            assert line in text.splitlines()
    assert "k1 = 1.5  # default: 1.2" in kbdb("config", "show").out
    assert kbdb("--json", "config", "show").json()["search"]["k1"] == 1.5
    assert kbdb("--json", "search", "anything").code == 0  # the KB opens with it


def test_set_rejects_bad_values_with_exit_2(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    path = tmp_path / ".kbdb" / "worker.toml"
    for key, value, expected in [
        ("search.k1", "-1", "search.k1 must be a number > 0 (got -1)"),
        ("search.b_body", "1.5", "search.b_body must be a number from 0 to 1"),
        ("search.synonyms", "maybe", "search.synonyms must be true or false"),
        ("embedding.provider", "magic", 'must be one of "none", "onnx", "api"'),
        ("search.nope", "1", "unknown key"),
    ]:
        res = kbdb("config", "set", key, value)
        assert res.code == 2, (key, res.err)
        assert res.err.startswith("kbdb: ") and expected in res.err
        assert "worker.toml" in res.err and "Traceback" not in res.err
        assert path.read_text(encoding="utf-8") == default_config_text()


def test_set_can_repair_a_broken_value(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    path = tmp_path / ".kbdb" / "worker.toml"
    path.write_text("[search]\nk1 = -3 # tuned\n", encoding="utf-8")
    assert kbdb("config", "show").code == 2
    assert kbdb("config", "set", "search.k1", "0.9").code == 0
    assert path.read_text(encoding="utf-8") == "[search]\nk1 = 0.9 # tuned\n"


def test_set_json_and_quiet(tmp_path: Path, kbdb: Kbdb) -> None:
    assert kbdb("init").code == 0
    data = kbdb("--json", "config", "set", "search.default_limit", "3").json()
    assert data["search"]["default_limit"] == 3
    assert kbdb("-q", "config", "set", "search.fusion", "linear").out == ""
    assert kbdb("--json", "search", "x").json()["limit"] == 3


def test_config_outside_a_knowledge_base_is_exit_3(kbdb: Kbdb) -> None:
    assert kbdb("config", "show").code == 3
    assert kbdb("config", "set", "search.k1", "1").code == 3
