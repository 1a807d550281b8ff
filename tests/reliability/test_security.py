"""Security (the threat model is docs/security.md).

- learn does not follow a symlink out of the learn root, and says so;
- every SQL statement takes its values as parameters (a static check over python/kbdb);
- the embedding API key is in no log record, exception, result or file, through the
  whole life of a knowledge base that uses the api provider against a real server;
- import reads only the snapshot it is given and writes only the knowledge base.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from tests.embedding.conftest import Loopback, send
from tests.reliability.sqlcheck import check_source, check_tree

import kbdb
from kbdb.config import set_value
from kbdb.embedding import api as api_module
from kbdb.errors import EmbeddingFailedError, InvalidArgumentError, KbdbError
from kbdb.ingest import Skipped, walk

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "kbdb"

# -- symlinks --------------------------------------------------------------------------------


@pytest.fixture
def linked_tree(tmp_path: Path) -> Path:
    """docs/ with a note, a link to a note inside docs/, and links that leave docs/."""
    secret = tmp_path / "private" / "credentials.md"
    secret.parent.mkdir()
    secret.write_text("# Credentials\n\nthe vault passphrase is hunter2\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "note.md").write_text("# Note\n\nInside the root.\n", encoding="utf-8")
    (docs / "sub" / "alias.md").symlink_to(docs / "note.md")
    (docs / "leak.md").symlink_to(secret)
    (docs / "hop.md").symlink_to(docs / "sub" / "hop2.md")
    (docs / "sub" / "hop2.md").symlink_to(secret)  # a chain that ends outside
    (docs / "up.md").symlink_to(Path("..") / "private" / "credentials.md")  # relative
    (docs / "linked-dir").symlink_to(secret.parent, target_is_directory=True)
    return docs


def test_learn_does_not_follow_symlinks_out_of_the_root(
    kb: kbdb.KnowledgeBase, linked_tree: Path
) -> None:
    report = kb.learn_path(linked_tree)
    skipped = {Path(s.path).name: s for s in report.files_skipped}
    assert set(skipped) == {"leak.md", "hop.md", "hop2.md", "up.md"}
    secret = (linked_tree.parent / "private" / "credentials.md").resolve()
    for s in skipped.values():
        assert s.code == "OUTSIDE_ROOT"
        assert s.reason == f"symbolic link to {secret}, outside the learn root (not followed)"
    assert report.documents_added == 2  # note.md and the in-root alias
    assert kb.search("vault passphrase").total == 0
    assert kb.search("inside root").total == 1


def test_the_cli_says_so_and_exits_1(linked_tree: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KBDB_DB"}
    base = [sys.executable, "-m", "kbdb.cli", "--db", str(tmp_path / "kb")]
    subprocess.run([*base[:3], "init", str(tmp_path / "kb")], check=True, env=env)
    proc = subprocess.run(
        [*base, "--json", "learn", str(linked_tree)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    assert sorted(s["code"] for s in out["files_skipped"]) == ["OUTSIDE_ROOT"] * 4
    assert all("outside the learn root" in s["reason"] for s in out["files_skipped"])


def test_following_is_an_explicit_choice_of_the_walker(linked_tree: Path) -> None:
    default = [i for i in walk(linked_tree) if isinstance(i, Skipped)]
    assert {i.rel for i in default} == {"hop.md", "leak.md", "sub/hop2.md", "up.md"}
    followed = list(walk(linked_tree, follow_symlinks=True))
    assert not [i for i in followed if isinstance(i, Skipped)]
    assert "linked-dir/credentials.md" not in {i.rel for i in followed}  # folders: never


# -- SQL ---------------------------------------------------------------------------------------


def test_all_sql_is_parameterized() -> None:
    findings = check_tree(PACKAGE)
    assert not findings, "SQL text built from values:\n" + "\n".join(map(str, findings))


@pytest.mark.parametrize(
    "source",
    [
        "def f(c, name):\n    c.execute(f\"SELECT * FROM t WHERE n = '{name}'\")\n",
        "def f(c, name):\n    c.execute(\"SELECT * FROM t WHERE n = '%s'\" % name)\n",
        "def f(c, name):\n    c.execute('SELECT * FROM t WHERE n = {}'.format(name))\n",
        "def f(c, name):\n    sql = 'SELECT ' + name\n    c.execute(sql)\n",
        "def f(c, o):\n    c.executemany(f'INSERT INTO {o.table} VALUES (?)', [])\n",
        "def f(c, rows):\n    for r in rows:\n        c.execute(f'DELETE FROM t WHERE k = {r}')\n",
        "def f(c, ks):\n    c.execute(f\"SELECT 1 WHERE k IN ({','.join(ks)})\")\n",
    ],
)
def test_the_sql_check_catches_interpolated_values(source: str) -> None:
    assert check_source(source), source


@pytest.mark.parametrize(
    "source",
    [
        "def f(c, ks):\n    m = ','.join('?' * len(ks))\n"
        "    c.execute(f'SELECT 1 WHERE k IN ({m})', ks)\n",
        "COLS = 'a, b'\ndef f(c):\n    c.execute(f'SELECT {COLS} FROM t')\n",
        "def f(c):\n    for col in ('parent', 'superseded_by'):\n"
        "        c.execute(f'UPDATE t SET {col} = NULL')\n",
        "def f(c, tags):\n    w = ['1']\n    for t in tags:\n        w.append('k = ?')\n"
        "    c.execute(f\"SELECT 1 WHERE {' AND '.join(w)}\", tags)\n",
    ],
)
def test_the_sql_check_accepts_fixed_text(source: str) -> None:
    assert not check_source(source), source


# -- the API key -------------------------------------------------------------------------------

KEY = "sk-live-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
DIM = 8


def _vector(text: str) -> list[float]:
    import hashlib

    d = hashlib.sha256(text.encode()).digest()
    return [b - 127.5 for b in d[:DIM]]


class _Api:
    """An OpenAI-style embeddings server; ``mode`` switches it to failures that echo the
    key back (as some real services do in their error bodies)."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.auth: list[str] = []

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        self.auth.append(h.headers.get("Authorization", ""))
        if self.mode == "ok":
            texts = json.loads(h.body)["input"]  # type: ignore[attr-defined]
            data = [{"index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
            send(h, 200, json.dumps({"data": data}).encode(), Content_Type="application/json")
        elif self.mode == "401":
            body = {"error": f"invalid api key {h.headers.get('Authorization')}"}
            send(h, 401, json.dumps(body).encode(), Content_Type="application/json")
        else:
            send(h, 500, f"upstream failed for key={KEY}".encode(), Content_Type="text/plain")


@pytest.fixture
def api_kb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[kbdb.KnowledgeBase, _Api]]:
    monkeypatch.setenv("KBDB_API_KEY", KEY)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    # The retry path runs (and logs) in full; only its waits are skipped.
    monkeypatch.setattr(api_module.time, "sleep", lambda _s: None)
    api = _Api()
    with Loopback(api) as server:
        kb = kbdb.KnowledgeBase.init(tmp_path / "kb")
        cfg = kb.path / "worker.toml"
        for key, value in (
            ("embedding.api_url", server.url),
            ("embedding.model", "test-embed"),
            ("embedding.dimensions", str(DIM)),
            ("embedding.provider", "api"),
        ):
            set_value(cfg, key, value)
        kb.close()
        kb = kbdb.KnowledgeBase.open(tmp_path / "kb")
        yield kb, api
        kb.close()


def test_the_api_key_appears_nowhere(
    api_kb: tuple[kbdb.KnowledgeBase, _Api], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    kb, api = api_kb
    caplog.set_level(logging.DEBUG)
    shown: list[str] = []
    kb.learn("# Pool\n\nThe connection pool keeps 20 connections.", docid="pool")
    kb.learn(f"# Leaky\n\nSomeone pasted KBDB_API_KEY={KEY} here.", docid="leaky")
    shown.append(json.dumps(kb.search("pool", mode="hybrid").to_dict()))
    shown.append(json.dumps(kb.stats().to_dict()))
    shown.append(json.dumps(kb.check().to_dict()))
    kb.rebuild()
    failures: list[BaseException] = []
    for mode in ("401", "500"):
        api.mode = mode
        try:
            kb.rebuild(reembed=True)
        except EmbeddingFailedError as e:
            failures.append(e)
        report = kb.learn(f"# Failure {mode}\n\nLearned while the API fails.", docid=mode)
        assert report.sections[0].vector_embedding_failed  # stored lexically, and said so
        shown.append(json.dumps(report.to_dict()))
        try:
            kb.search("pool", mode="vector")
        except KbdbError as e:
            failures.append(e)
    assert len(failures) >= 2, failures
    assert all(a == f"Bearer {KEY}" for a in api.auth)  # it was sent, every time
    for e in failures:
        shown += [str(e), repr(e), json.dumps(e.to_dict()) if isinstance(e, KbdbError) else ""]
        assert e.__cause__ is None or KEY not in repr(e.__cause__)
    assert "retry 1 of" in caplog.text and "[redacted]" in caplog.text  # echoed, scrubbed
    shown.append(caplog.text)
    shown += [str(r.args) for r in caplog.records]
    leaky = [s for s in shown if KEY in s]
    # The one place the key may appear is the section whose content the user wrote it in.
    assert all("Someone pasted" in s for s in leaky), leaky
    secrets = kb.learn(f"# Again\n\ntoken {KEY}", docid="again").sections[0].warnings
    assert "possible_secret" in secrets
    kb.forget(docid="leaky")
    kb.forget(docid="again")
    kb.gc(prune_retired=True)  # physically removes what was learned by mistake
    kb.close()
    for path in (tmp_path / "kb").rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), f"the key is in {path}"


# -- import reads only its snapshot ----------------------------------------------------------


@pytest.fixture
def snapshot(kb: kbdb.KnowledgeBase, tmp_path: Path) -> Path:
    kb.learn("# A\n\nalpha note", docid="a")
    kb.learn("# B\n\nbeta note", docid="../../escape")
    out = tmp_path / "snap"
    kb.export(out)
    return out


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_hostile_docids_export_inside_the_target(snapshot: Path, tmp_path: Path) -> None:
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    outside = [p for p in files if snapshot not in p.parents and "kb" not in p.parts]
    assert outside == []
    assert all(".." not in p.relative_to(snapshot).parts for p in snapshot.rglob("*"))


def _catalog_escape(snap: Path) -> None:
    cat = snap / "kbdb-export.toml"
    text = cat.read_text(encoding="utf-8")
    (snap.parent / "outside.toml").write_text("docid = 'x'\n", encoding="utf-8")
    first = text.index('file = "documents/')
    end = text.index('"', first + len('file = "'))
    cat.write_text(text[:first] + 'file = "../outside.toml' + text[end:], encoding="utf-8")


def _catalog_symlink(snap: Path) -> None:
    cat = snap / "kbdb-export.toml"
    real = snap.parent / "catalog-elsewhere.toml"
    real.write_bytes(cat.read_bytes())
    cat.unlink()
    cat.symlink_to(real)


def _documents_symlink(snap: Path) -> None:
    docs = snap / "documents"
    moved = snap.parent / "docs-elsewhere"
    docs.rename(moved)
    docs.symlink_to(moved, target_is_directory=True)


def _section_escape_name(snap: Path) -> None:
    f = sorted(snap.glob("sections/*/*.md"))[0]
    (f.parent / "..%2f..%2fx.md").write_bytes(f.read_bytes())


@pytest.mark.parametrize(
    "damage", [_catalog_escape, _catalog_symlink, _documents_symlink, _section_escape_name]
)
def test_import_of_a_hostile_snapshot_is_refused_and_writes_nothing(
    snapshot: Path, tmp_path: Path, damage: object
) -> None:
    damage(snapshot)  # type: ignore[operator]
    watched = tmp_path
    before = _tree(watched)
    target = kbdb.KnowledgeBase.init(tmp_path / "target")
    try:
        with pytest.raises(InvalidArgumentError) as err:
            target.import_snapshot(snapshot)
        assert err.value.code == "INVALID_ARGUMENT" and err.value.hint
        assert target.stats().sections == 0
    finally:
        target.close()
    after = {k: v for k, v in _tree(watched).items() if not k.startswith("target/")}
    assert after == before
