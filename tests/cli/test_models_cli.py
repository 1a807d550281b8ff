"""``kbdb models``: the catalog, which models are on disk, and the configured one."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import Kbdb, write


def test_models_lists_the_catalog_and_what_is_on_disk(tmp_path: Path, kbdb: Kbdb) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    res = kbdb("models", "--json", env=env)
    assert res.code == 0, res.err
    rows = {row["name"]: row for row in res.json()["models"]}
    assert {"all-MiniLM-L6-v2", "bge-small-en-v1.5", "multilingual-e5-small"} <= set(rows)
    default = rows["all-MiniLM-L6-v2"]
    assert default["default"] and default["pins_checked"] and default["on_disk"] is None
    assert default["source"].endswith("@1110a243fdf4706b3f48f1d95db1a4f5529b4d41")
    assert rows["multilingual-e5-small"]["document_prompt"] == "passage: "
    assert rows["bge-small-en-v1.5"]["pooling"] == "cls"
    # A model in the user cache is on disk.
    cached = tmp_path / "data" / "kbdb" / "models" / "bge-small-en-v1.5"
    write(cached, "model.onnx", b"onnx")
    write(cached, "tokenizer.json", "{}")
    rows = {row["name"]: row for row in kbdb("models", "--json", env=env).json()["models"]}
    assert rows["bge-small-en-v1.5"]["on_disk"] == str(cached)
    table = kbdb("models", env=env)
    assert table.code == 0 and "multilingual-e5-small" in table.out and "(the default)" in table.out


def test_models_marks_the_configured_model_and_lists_a_folder_of_ones_own(
    tmp_path: Path, kbdb: Kbdb
) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert kbdb("init").code == 0
    assert kbdb("config", "set", "embedding.model", "multilingual-e5-small").code == 0
    rows = kbdb("models", "--json", env=env).json()["models"]
    assert [r["name"] for r in rows if r["configured"]] == ["multilingual-e5-small"]
    mine = tmp_path / "mine"
    write(mine, "model.onnx", b"onnx")
    write(mine, "tokenizer.json", "{}")
    write(mine, "modules.json", '[{"type": "sentence_transformers.models.Pooling", "path": "p"}]')
    write(mine, "p/config.json", '{"pooling_mode_cls_token": true}')
    assert kbdb("config", "set", "embedding.model_path", str(mine)).code == 0
    rows = kbdb("models", "--json", env=env).json()["models"]
    configured = [r for r in rows if r["configured"]]
    assert len(configured) == 1 and configured[0]["source"].startswith(str(mine))
    assert configured[0]["pooling"] == "cls" and configured[0]["on_disk"] == str(mine)
    assert "*" in kbdb("models", env=env).out
