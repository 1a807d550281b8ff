"""Model resolution and the first-use download, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest
from tests.embedding.conftest import Loopback, closed_port_url, send

from kbdb.config import EmbeddingConfig
from kbdb.embedding import (
    KNOWN_MODELS,
    ModelSpec,
    OnnxEmbeddingProvider,
    RemoteFile,
    default_cache_dir,
    download_model,
    model_cache_dir,
    resolve_model,
)
from kbdb.embedding.sbert import DEFAULT_SETTINGS
from kbdb.errors import ModelNotAvailableError

Start = Callable[[Callable[[BaseHTTPRequestHandler], None]], Loopback]

MODEL_BYTES = bytes(range(256)) * 4096  # 1 MiB: several chunks
TOKENIZER_BYTES = b'{"version": "1.0", "model": {}}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def spec(model_sha: str = sha(MODEL_BYTES)) -> ModelSpec:
    return ModelSpec(
        name="tiny",
        repository="test/tiny",
        revision="0" * 40,
        files=(
            RemoteFile("model.onnx", "onnx/model.onnx", model_sha, len(MODEL_BYTES)),
            RemoteFile(
                "tokenizer.json", "tokenizer.json", sha(TOKENIZER_BYTES), len(TOKENIZER_BYTES)
            ),
        ),
        dimensions=4,
        settings=DEFAULT_SETTINGS,
    )


def file_server(files: dict[str, bytes]) -> Callable[[BaseHTTPRequestHandler], None]:
    def handle(h: BaseHTTPRequestHandler) -> None:
        data = files.get(h.path)
        if data is None:
            send(h, 404, b"not found")
        else:
            send(h, 200, data, Content_Type="application/octet-stream")

    return handle


SERVED = {"/m/onnx/model.onnx": MODEL_BYTES, "/m/tokenizer.json": TOKENIZER_BYTES}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def temporaries(folder: Path) -> list[str]:
    """Half-written files: downloads in flight (``.part``) and builds (``.tmp-``)."""
    return [n for n in leftovers(folder) if n.endswith(".part") or n.startswith(".tmp-")]


def test_download_lands_verified_bytes_and_reports_progress(
    loopback: Start, tmp_path: Path
) -> None:
    server = loopback(file_server(SERVED))
    seen: list[tuple[str, int, int | None]] = []
    dest = tmp_path / "cache" / "tiny"
    files = download_model(
        spec(), dest, base_url=server.url + "/m/", progress=lambda *a: seen.append(a)
    )
    assert files.model == dest / "model.onnx" and files.tokenizer == dest / "tokenizer.json"
    assert files.model.read_bytes() == MODEL_BYTES
    assert sha(files.tokenizer.read_bytes()) == sha(TOKENIZER_BYTES)
    assert leftovers(dest) == ["model.onnx", "tokenizer.json"]  # no temporary file left
    assert seen[0] == ("model.onnx", 0, len(MODEL_BYTES))
    assert ("model.onnx", len(MODEL_BYTES), len(MODEL_BYTES)) in seen
    assert seen[-1] == ("tokenizer.json", len(TOKENIZER_BYTES), len(TOKENIZER_BYTES))
    # Landed files are not fetched again.
    count = len(server.requests)
    download_model(spec(), dest, base_url=server.url + "/m")
    assert len(server.requests) == count


def test_checksum_mismatch_leaves_no_file(loopback: Start, tmp_path: Path) -> None:
    server = loopback(file_server(SERVED))
    dest = tmp_path / "tiny"
    with pytest.raises(ModelNotAvailableError) as err:
        download_model(spec(model_sha="0" * 64), dest, base_url=server.url + "/m")
    assert err.value.code == "MODEL_NOT_AVAILABLE"
    text = str(err.value)
    assert "checksum mismatch for model.onnx" in text and sha(MODEL_BYTES) in text
    assert "model.onnx, tokenizer.json" in text and str(dest) in text and "model_path" in text
    assert leftovers(dest) == []


def test_an_oversized_body_is_cut_off_and_leaves_no_file(loopback: Start, tmp_path: Path) -> None:
    # A server that streams more than the pinned size (no Content-Length: chunked) is
    # stopped at the pinned size, not read to its end.
    sent: list[int] = []

    def endless(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        block = b"\0" * (256 * 1024)
        try:
            for _ in range(256):  # 64 MiB offered for a 1 MiB file
                h.wfile.write(b"%x\r\n%s\r\n" % (len(block), block))
                sent.append(len(block))
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    server = loopback(endless)
    dest = tmp_path / "tiny"
    with pytest.raises(ModelNotAvailableError, match="sent more than the 1,048,576 bytes"):
        download_model(spec(), dest, base_url=server.url)
    assert leftovers(dest) == []
    assert sum(sent) < 64 * 1024 * 1024


def test_interrupted_transfer_leaves_no_partial_file(loopback: Start, tmp_path: Path) -> None:
    def cut(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(len(MODEL_BYTES)))
        h.end_headers()
        h.wfile.write(MODEL_BYTES[: len(MODEL_BYTES) // 2])
        h.wfile.flush()
        h.close_connection = True  # the server closes mid-body

    server = loopback(cut)
    dest = tmp_path / "tiny"
    with pytest.raises(ModelNotAvailableError, match="could not download") as err:
        download_model(spec(), dest, base_url=server.url)
    assert "model_path" in str(err.value)
    assert leftovers(dest) == []


def test_http_errors_and_offline_are_model_not_available(loopback: Start, tmp_path: Path) -> None:
    server = loopback(file_server({}))
    with pytest.raises(ModelNotAvailableError, match="HTTP 404"):
        download_model(spec(), tmp_path / "a", base_url=server.url)
    with pytest.raises(ModelNotAvailableError, match="ConnectError"):
        download_model(spec(), tmp_path / "b", base_url=closed_port_url())
    assert leftovers(tmp_path / "a") == [] and leftovers(tmp_path / "b") == []


UPSTREAM_SERVED = ("model.safetensors", "tokenizer.json", "config.json")


def serve_model_repo(
    loopback: Start, upstream: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Loopback, dict[str, str]]:
    """Serve upstream's own files in the repository's layout and point ``KBDB_MODEL_URL``
    at them; returns the server and the files' SHA-256 sums."""
    served = {f"/repo/{name}": (upstream / name).read_bytes() for name in UPSTREAM_SERVED}
    server = loopback(file_server(served))
    monkeypatch.setenv("KBDB_MODEL_URL", server.url + "/repo")
    return server, {name: sha(served[f"/repo/{name}"]) for name in UPSTREAM_SERVED}


def test_first_use_downloads_upstream_weights_builds_and_verifies_the_graph(
    loopback: Start,
    tmp_path: Path,
    upstream: Path,
    model_dir: Path,
    golden_min: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The loopback server plays the model's public repository with upstream's own bytes:
    # the download must deliver exactly the pinned bytes, and the graph kbdb builds from
    # them must reproduce sentence-transformers' vectors.
    _, sums = serve_model_repo(loopback, upstream, monkeypatch)
    cfg = EmbeddingConfig(provider="onnx")
    cache = tmp_path / "models"
    files = resolve_model(cfg, cache_dir=cache)
    folder = cache / "all-MiniLM-L6-v2"
    assert files.model.parent == folder and files.model.name.startswith("model-")
    assert files.settings == KNOWN_MODELS["all-MiniLM-L6-v2"].settings
    pinned = {f.name: f.sha256 for f in KNOWN_MODELS["all-MiniLM-L6-v2"].files}
    for name in UPSTREAM_SERVED:
        assert sha((folder / name).read_bytes()) == pinned[name] == sums[name]
    assert temporaries(folder) == []
    # The cache is used from now on, offline, and the graph is not built again.
    built = files.model.stat().st_mtime_ns
    monkeypatch.setenv("KBDB_MODEL_URL", closed_port_url())
    monkeypatch.setenv("KBDB_OFFLINE", "1")
    assert resolve_model(cfg, cache_dir=cache) == files
    assert files.model.stat().st_mtime_ns == built
    golden = np.load(model_dir / "reference_embeddings.npz")
    vectors = OnnxEmbeddingProvider(files).embed(list(golden["sentences"]))
    assert float((vectors * golden["embeddings"]).sum(axis=1).min()) >= max(golden_min, 0.9999)


def test_a_build_that_misses_the_golden_vectors_is_rejected_and_not_kept(
    loopback: Start, tmp_path: Path, upstream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A graph that computes something else (here: a builder that drops the last layer)
    # must fail the golden check, say so, and leave no built file behind.
    from kbdb.embedding import bert_onnx

    serve_model_repo(loopback, upstream, monkeypatch)
    real = bert_onnx.build_graph

    def one_layer_short(weights: dict, config: dict, folder: Path) -> object:
        return real(
            weights, {**config, "num_hidden_layers": config["num_hidden_layers"] - 1}, folder
        )

    monkeypatch.setattr(bert_onnx, "build_graph", one_layer_short)
    cache = tmp_path / "models"
    with pytest.raises(ModelNotAvailableError, match="golden vectors"):
        resolve_model(EmbeddingConfig(provider="onnx"), cache_dir=cache)
    assert list((cache / "all-MiniLM-L6-v2").glob("*.onnx")) == []
    assert temporaries(cache / "all-MiniLM-L6-v2") == []


def test_a_truncated_cached_file_is_fetched_again(loopback: Start, tmp_path: Path) -> None:
    server = loopback(file_server(SERVED))
    dest = tmp_path / "tiny"
    download_model(spec(), dest, base_url=server.url + "/m")
    (dest / "model.onnx").write_bytes(MODEL_BYTES[:10])
    download_model(spec(), dest, base_url=server.url + "/m")
    assert (dest / "model.onnx").read_bytes() == MODEL_BYTES


def test_resolution_order(tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kbdir = tmp_path / ".kbdb"
    env_dir = tmp_path / "env-model"
    cfg_dir = kbdir / "mine"
    for folder in (env_dir, cfg_dir):
        folder.mkdir(parents=True)
        (folder / "model.onnx").write_bytes(b"m")
        (folder / "tokenizer.json").write_bytes(b"t")
    monkeypatch.setenv("KBDB_MODEL_DIR", str(env_dir))
    assert (
        resolve_model(EmbeddingConfig(model_path="mine"), kbdir=kbdir).model
        == cfg_dir / "model.onnx"
    )
    assert resolve_model(EmbeddingConfig()).model == env_dir / "model.onnx"
    # A configured folder that lacks a file is an error, never a download.
    (env_dir / "tokenizer.json").unlink()
    monkeypatch.setenv("KBDB_MODEL_URL", closed_port_url())
    with pytest.raises(ModelNotAvailableError, match="KBDB_MODEL_DIR") as err:
        resolve_model(EmbeddingConfig())
    assert str(env_dir) in str(err.value) and "model_path" in str(err.value)


def test_user_cache_location_and_offline_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # conftest points XDG_DATA_HOME at tmp_path/xdg-data
    assert default_cache_dir() == tmp_path / "xdg-data" / "kbdb" / "models"
    assert model_cache_dir("org/name") == default_cache_dir() / "org--name"
    cached = model_cache_dir("all-MiniLM-L6-v2")
    monkeypatch.setenv("KBDB_OFFLINE", "1")
    with pytest.raises(ModelNotAvailableError, match="KBDB_OFFLINE forbids") as err:
        resolve_model(EmbeddingConfig(provider="onnx"))
    assert str(cached) in str(err.value) and "model_path" in str(err.value)
    monkeypatch.delenv("KBDB_OFFLINE")
    with pytest.raises(ModelNotAvailableError, match="only the catalog's models") as err:
        resolve_model(EmbeddingConfig(provider="onnx", model="some-other-model"))
    assert "all-MiniLM-L6-v2" in str(err.value) and "model_path" in str(err.value)
    monkeypatch.setenv("KBDB_MODEL_URL", closed_port_url())
    with pytest.raises(
        ModelNotAvailableError, match="could not download model.safetensors, tokenizer.json"
    ):
        resolve_model(EmbeddingConfig(provider="onnx"))
    assert leftovers(cached) == []


def test_the_facade_loads_the_model_up_front_reporting_download_bytes(
    loopback: Start, tmp_path: Path, upstream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the CLI does before a learn, search or rebuild that will embed: download under
    # its own progress bar, not in the middle of the learn bar.
    import kbdb
    from kbdb.evaluation.run import override_config as override

    server, _ = serve_model_repo(loopback, upstream, monkeypatch)
    kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
    kb = kbdb.KnowledgeBase.open(
        tmp_path / "kb", config=override(kb.config, {"embedding.provider": "onnx"})
    )
    seen: list[tuple[str, int, int | None]] = []
    kb.load_embedding_model(progress=lambda name, done, total: seen.append((name, done, total)))
    assert {name for name, _, _ in seen} == set(UPSTREAM_SERVED)
    for name in UPSTREAM_SERVED:
        last = [done for n, done, _ in seen if n == name][-1]
        assert last == (upstream / name).stat().st_size
    # Loaded: learning now embeds without another download, and hybrid search works.
    report = kb.learn("The model was downloaded up front.", title="up front")
    assert not report.sections[0].vector_embedding_failed
    assert len(server.requests) == len(UPSTREAM_SERVED)
    hits = kb.search("fetched ahead of time", mode="hybrid")
    assert hits.retrieval_method == "hybrid"
    assert [h.kbid for h in hits.items][:1] == [report.sections[0].kbid]
    kb.close()


def test_a_fresh_install_reaches_hybrid_search_in_one_command_sequence(
    loopback: Start, tmp_path: Path, upstream: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a new user types, with no model anywhere on the machine: init, choose the onnx
    # provider, learn, search. The first learn downloads upstream's bytes (served here on
    # loopback), builds the graph, and every later command works offline.
    import subprocess
    import sys

    from tests.cli.conftest import cli_env

    server, _ = serve_model_repo(loopback, upstream, monkeypatch)
    env = cli_env(XDG_DATA_HOME=str(tmp_path / "data"), KBDB_MODEL_URL=server.url + "/repo")
    env.pop("KBDB_MODEL_DIR", None)

    def kbdb(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kbdb.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
            check=False,
        )

    (tmp_path / "notes.md").write_text(
        "# Trains\n\nThe night train to Vienna leaves at 21:40 from platform 9.\n\n"
        "# Bread\n\nSourdough needs a starter fed twice a day.\n",
        encoding="utf-8",
    )
    for args in (("init",), ("config", "set", "embedding.provider", "onnx"), ("learn", "notes.md")):
        done = kbdb(*args)
        assert done.returncode == 0, done.stderr
    assert sorted(path.split("/repo/")[1] for path, _, _ in server.requests) == sorted(
        UPSTREAM_SERVED
    )
    env["KBDB_OFFLINE"] = "1"
    found = kbdb("search", "railway departure to Austria", "--mode", "hybrid", "--json")
    assert found.returncode == 0, found.stderr
    page = json.loads(found.stdout)
    assert page["retrieval_method"] == "hybrid" and not page["vector_index_stale"]
    assert page["items"][0]["heading"] == "Trains"
