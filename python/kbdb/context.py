"""``Context``: the open resources of one knowledge base, built once by ``KnowledgeBase``
and handed to every service (search, learn, knowledge, maintenance).

A knowledge base is a ``.kbdb/`` folder: ``kb.sqlite`` (the truth), ``worker.toml`` (the
configuration) and ``indexes/`` (derived, rebuildable). Only what opening a knowledge base
and a lexical search need is imported here: a cold ``kbdb search`` pays for every module
loaded at import.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from kbdb.config import Config, default_config_text, load_config
from kbdb.errors import InvalidArgumentError, KbLockedError, KbNotFoundError
from kbdb.index.lexical import LexicalIndex
from kbdb.index.vectors import VectorStore
from kbdb.languages import language_list, language_name
from kbdb.search.lexical import LexicalSearcher
from kbdb.search.synonyms import Synonyms, load_groups
from kbdb.store import DB_NAME, Database, WriteLock
from kbdb.store import links as link_store
from kbdb.store import queries as q

if TYPE_CHECKING:
    from kbdb.embedding import EmbeddingProvider
    from kbdb.index.snapshot import Snapshot, Snapshots

KBDB_DIR = ".kbdb"
CONFIG_NAME = "worker.toml"
INDEX_DIR = "indexes"
LOCK_NAME = "write.lock"


def lock_timeout() -> float:
    """How long a writer waits for the lock: ``KBDB_LOCK_TIMEOUT`` seconds, default 30."""
    raw = os.environ.get("KBDB_LOCK_TIMEOUT")
    try:
        return float(raw) if raw else 30.0
    except ValueError:
        raise InvalidArgumentError(
            f"KBDB_LOCK_TIMEOUT must be a number of seconds (got {raw!r})"
        ) from None


def resolve(path: str | os.PathLike[str] | None) -> Path:
    """Find the ``.kbdb`` folder: ``path`` (the folder or its parent), else ``KBDB_DB``,
    else the nearest ``.kbdb`` walking up from the current directory."""
    if path is None and os.environ.get("KBDB_DB"):
        path = os.environ["KBDB_DB"]
    if path is not None:
        p = Path(path).expanduser()
        for candidate in (p, p / KBDB_DIR):
            if (candidate / DB_NAME).is_file():
                return candidate.resolve()
        raise KbNotFoundError(f"no knowledge base at {p}", hint="run 'kbdb init'")
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / KBDB_DIR / DB_NAME).is_file():
            return d / KBDB_DIR
    raise KbNotFoundError(
        f"no knowledge base in {here} or any parent folder", hint="run 'kbdb init'"
    )


def create(path: str | os.PathLike[str], language: str | None = None) -> Path:
    """Create ``PATH/.kbdb`` (the configuration with its commented defaults, a
    ``.gitignore`` for the derived files, the database) unless it exists; its folder.
    ``language`` (a name or ISO 639-1 code) sets ``index.language`` in a new configuration;
    an existing knowledge base must already have it."""
    root = Path(path).expanduser()
    kbdir = root if root.name == KBDB_DIR else root / KBDB_DIR
    wanted = None if language is None else language_name(language)
    if language is not None and wanted is None:
        raise InvalidArgumentError(
            f"unknown language {language!r}", hint=f"valid languages: {language_list()}"
        )
    config = kbdir / CONFIG_NAME
    if wanted is not None and config.exists():
        current = load_config(config).index.language
        if current != wanted:
            raise InvalidArgumentError(
                f"the knowledge base at {kbdir} exists with index.language {current}",
                hint=f"to change it: 'kbdb config set index.language {wanted}', then"
                " 'kbdb rebuild'",
            )
    kbdir.mkdir(parents=True, exist_ok=True)
    if not config.exists():
        text = default_config_text()
        if wanted is not None:
            text = text.replace('language = "english"', f'language = "{wanted}"')
        config.write_text(text, encoding="utf-8")
    gitignore = kbdir / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text(f"{INDEX_DIR}/\n{LOCK_NAME}\n", encoding="utf-8")
    with WriteLock(kbdir / LOCK_NAME, timeout=lock_timeout()).hold():
        Database(kbdir / DB_NAME, create=True).close()
    return kbdir.resolve()


class Context:
    """The database, the writer lock, the lexical and vector indexes, the configuration
    and (through the vector store) the embedding provider of one open knowledge base.

    Safe to share between threads: the database keeps a connection per thread, and the
    indexes publish immutable snapshots."""

    def __init__(self, kbdir: Path, config: Config | None = None) -> None:
        self.path = kbdir
        self.config: Config = config if config is not None else load_config(kbdir / CONFIG_NAME)
        self.index_dir = kbdir / INDEX_DIR
        self.db = Database(kbdir / DB_NAME)
        if self.config.learn.links:
            self.db.commit_hooks.append(link_store.catch_up)
        self.lock = WriteLock(kbdir / LOCK_NAME, timeout=lock_timeout())
        self.index = LexicalIndex(
            self.index_dir, self.db, self.lock, language=self.config.index.language
        )
        self.vectors = VectorStore(self.index_dir, self.db, self.config.embedding, kbdir)
        self._synonyms: Synonyms | None = None
        self._synonyms_lock = threading.Lock()
        self._snapshots: Snapshots | None = None

    @property
    def provider(self) -> EmbeddingProvider:
        """The configured embedding provider, started on first use."""
        return self.vectors.provider

    def searcher(self) -> LexicalSearcher:
        """A lexical searcher over the index's current snapshot."""
        return LexicalSearcher(
            self.index.core, self.db, self.index.analyzer, self.synonyms(), self.config.search
        )

    def snapshot(self, at: str) -> Snapshot:
        """The indexes of the sections live at ``at`` (``index/snapshot.py``), built on
        first use and kept while the store does not change."""
        if self._snapshots is None:
            from kbdb.index.snapshot import Snapshots

            with self._synonyms_lock:
                if self._snapshots is None:
                    self._snapshots = Snapshots(self.db, self.config.index.language)
        return self._snapshots.get(at)

    def synonyms(self) -> Synonyms | None:
        """The synonym groups (built-in and ``synonyms.toml``), loaded once; None when
        ``search.synonyms`` is off."""
        if not self.config.search.synonyms:
            return None
        if self._synonyms is None:
            with self._synonyms_lock:
                if self._synonyms is None:
                    self._synonyms = Synonyms(load_groups(self.path), self.index.analyzer.terms)
        return self._synonyms

    def refresh_vectors(self) -> None:
        """Catch the vector index up when another process's learn left it behind (and the
        writer lock is free), as the lexical index does."""
        index = self.vectors.index()
        if index is None:
            return
        with self.db.read() as conn:
            head = q.max_seq(conn)
        if index.watermark >= head and not self.vectors.quantized_pending():
            return
        try:
            with self.lock.hold(timeout=0):
                self.vectors.catch_up()
        except KbLockedError:
            pass

    def close(self) -> None:
        if self._snapshots is not None:
            self._snapshots.close()
        self.index.close()
        self.db.close()
