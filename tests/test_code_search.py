"""Navigating source code by name (``kbdb.search.fields``, the heading boost in
``kbdb.search.lexical``, docs/code.md): a query that is a definition's name as written
finds that definition before the definitions whose names only share its words, and the
library's definition before a test of the same name."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import kbdb
from kbdb.search.fields import (
    definition_names,
    identifier_key,
    in_test_code,
    names_the_definition,
)


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


FILES = {
    # A method and a test named after it (tokio's sync/semaphore.rs and
    # tests/sync_semaphore.rs, MIT, Copyright (c) Tokio Contributors).
    "src/sync/semaphore.rs": """
        /// Counting semaphore performing asynchronous permit acquisition.
        pub struct Semaphore {
            ll_sem: ll::Semaphore,
        }

        impl Semaphore {
            /// Creates a new semaphore with the initial number of permits.
            pub fn new(permits: usize) -> Self {
                Self { ll_sem: ll::Semaphore::new(permits) }
            }

            cfg_sync! {
                /// Acquires a permit from the semaphore, blocking the current thread until
                /// one is available.
                ///
                /// If the semaphore has been closed, this returns an [`AcquireError`].
                /// Otherwise, this returns a [`SemaphorePermit`] representing the
                /// acquired permit.
                ///
                /// This method is intended for use in synchronous code, such as inside
                /// [`spawn_blocking`] or when the semaphore is shared between asynchronous
                /// and synchronous code. It is the blocking equivalent of [`acquire`].
                ///
                /// # Panics
                ///
                /// This function panics if called within an asynchronous execution
                /// context.
                ///
                /// # Examples
                ///
                /// ```
                /// # #[cfg(not(target_family = "wasm"))]
                /// # {
                /// use std::sync::Arc;
                /// use tokio::sync::Semaphore;
                ///
                /// #[tokio::main(flavor = "current_thread")]
                /// async fn main() {
                ///     let semaphore = Arc::new(Semaphore::new(2));
                ///
                ///     let semaphore2 = semaphore.clone();
                ///     let blocking_task = tokio::task::spawn_blocking(move || {
                ///         // Inside a blocking context we cannot use `.await`, so we use
                ///         // `blocking_acquire` instead.
                ///         let _permit = semaphore2.blocking_acquire().unwrap();
                ///
                ///         // ... perform blocking work while holding the permit ...
                ///     });
                ///
                ///     blocking_task.await.unwrap();
                /// }
                /// # }
                /// ```
                ///
                /// [`AcquireError`]: crate::sync::AcquireError
                /// [`SemaphorePermit`]: crate::sync::SemaphorePermit
                /// [`spawn_blocking`]: crate::task::spawn_blocking
                /// [`acquire`]: Semaphore::acquire
                #[track_caller]
                #[cfg(feature = "sync")]
                pub fn blocking_acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError> {
                    crate::future::block_on(self.acquire())
                }
            }
        }
    """,
    "tests/sync_semaphore.rs": """
        use tokio::sync::Semaphore;

        #[test]
        fn blocking_acquire() {
            let sem = Semaphore::new(1);
            let permit = sem.blocking_acquire().unwrap();
            assert_eq!(sem.available_permits(), 0);
            drop(permit);
            assert_eq!(sem.available_permits(), 1);
        }

        #[test]
        #[cfg(not(target_family = "wasm"))] // spawns a thread, which wasm doesn't support
        fn blocking_acquire_waits_for_permit() {
            let sem = Arc::new(Semaphore::new(0));

            let sem2 = sem.clone();
            let handle = std::thread::spawn(move || {
                // Blocks until a permit becomes available.
                let _permit = sem2.blocking_acquire().unwrap();
            });

            sem.add_permits(1);
            handle.join().unwrap();
        }
    """,
    # A name defined only in tests is still found.
    "tests/rt_common.rs": """
        #[test]
        fn spawn_from_blocking() {
            let rt = rt();
            let out = rt.block_on(async move { spawn_blocking(|| 1).await });
            assert_eq!(out.unwrap(), 1);
        }
    """,
    # ``Stats::new`` and a function whose name has the same words.
    "src/runtime/stats.rs": """
        pub(crate) struct Stats {
            batch: u32,
        }

        impl Stats {
            pub(crate) fn new(worker_metrics: &WorkerMetrics) -> Stats {
                Stats { batch: worker_metrics.batch() }
            }
        }

        /// Stats for a worker that records nothing.
        pub(crate) fn new_stats() -> Stats {
            Stats::new(&WorkerMetrics::new())
        }
    """,
    # A method whose type's name holds the method's name (``U32Decoder::decode``), a
    # method of a type in a module, a generic method.
    "src/codec.rs": """
        struct U32Decoder;

        impl Decoder for U32Decoder {
            type Item = u32;
            type Error = io::Error;

            fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<u32>> {
                if buf.len() < 4 {
                    return Ok(None);
                }
                Ok(Some(buf.split_to(4).get_u32()))
            }
        }

        mod block_in_place_cases {
            use std::task::{Context, Poll};

            struct BlockInPlaceOnDrop;
            impl Future for BlockInPlaceOnDrop {
                type Output = ();

                fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
                    Poll::Pending
                }
            }
            impl Drop for BlockInPlaceOnDrop {
                fn drop(&mut self) {
                    tokio::task::block_in_place(|| {});
                }
            }
        }

        impl TaskTracker {
            pub fn spawn_local_on<F>(&self, task: F, local_set: &LocalSet) -> JoinHandle<F::Output>
            where
                F: Future + 'static,
            {
                local_set.spawn_local(self.track_future(task))
            }
        }
    """,
    "tests/task_tracker.rs": """
        mod spawn_local_on {
            #[test]
            fn spawn_then_close() {
                let tracker = TaskTracker::new();
                let local_set = LocalSet::new();
                tracker.spawn_local_on(async {}, &local_set);
                tracker.spawn_local_on(async {}, &local_set);
                tracker.close();
            }
        }
    """,
    # Python: a library function and a test helper of the same name.
    "pkg/matrices.py": '''
        def to_domain_matrix(rows, domain):
            """The rows as a matrix over ``domain``."""
            return DomainMatrix(rows, (len(rows), len(rows[0])), domain)
    ''',
    "pkg/tests/test_matrices.py": """
        def to_domain_matrix(rows):
            return DM(rows, ZZ)


        def test_rank():
            assert to_domain_matrix([[1, 2], [3, 4]]).rank() == 2


        def test_nullspace():
            assert to_domain_matrix([[1, 2], [2, 4]]).nullspace() == to_domain_matrix([[-2, 1]])
    """,
}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kbdb.KnowledgeBase]:
    root = tmp_path_factory.mktemp("repo")
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text))
    k = kbdb.KnowledgeBase.init(tmp_path_factory.mktemp("kb"))
    report = k.learn_path(root)
    assert not report.files_skipped
    yield k
    k.close()


def first(kb: kbdb.KnowledgeBase, query: str) -> tuple[str, str, int | None, int | None]:
    item = kb.search(query, mode="lexical", limit=1).items[0]
    return item.docids[0], item.heading, item.source.start_line, item.source.end_line


def test_the_library_definition_comes_before_a_test_of_the_same_name(
    kb: kbdb.KnowledgeBase,
) -> None:
    assert first(kb, "blocking_acquire") == (
        "src/sync/semaphore.rs",
        "Semaphore::blocking_acquire(&self) -> Result<SemaphorePermit<'_>, AcquireError>",
        13,  # its doc comment, inside cfg_sync! { … }
        63,
    )
    assert first(kb, "to_domain_matrix") == (
        "pkg/matrices.py",
        "to_domain_matrix(rows, domain)",
        1,
        3,
    )


def test_a_name_defined_only_in_tests_is_found(kb: kbdb.KnowledgeBase) -> None:
    assert first(kb, "spawn_from_blocking")[:2] == ("tests/rt_common.rs", "spawn_from_blocking()")


def test_the_definition_named_as_written_comes_before_one_with_the_same_words(
    kb: kbdb.KnowledgeBase,
) -> None:
    assert first(kb, "Stats::new")[:2] == (
        "src/runtime/stats.rs",
        "Stats::new(worker_metrics: &WorkerMetrics) -> Stats",
    )
    assert first(kb, "new_stats")[1] == "new_stats() -> Stats"
    assert first(kb, "U32Decoder::decode")[1] == (
        "U32Decoder::decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<u32>>"
    )
    assert first(kb, "U32Decoder")[1] == "struct U32Decoder"


def test_a_method_is_found_without_its_modules_and_type_parameters(
    kb: kbdb.KnowledgeBase,
) -> None:
    assert first(kb, "BlockInPlaceOnDrop::drop")[1:] == (
        "block_in_place_cases::BlockInPlaceOnDrop::drop(&mut self)",
        27,
        29,
    )
    docid, heading, _, _ = first(kb, "TaskTracker::spawn_local_on")
    assert docid == "src/codec.rs"
    assert heading.startswith("TaskTracker::spawn_local_on<F>(&self, task: F")


def test_definition_names_and_identifier_keys() -> None:
    names = definition_names(
        "TaskTracker::spawn_local_on<F>(&self, task: F) -> JoinHandle<F::Output>",
        "text/x-rust",
        "src/task.rs#impl TaskTracker/spawn_local_on",
    )
    assert names == ("spawn_local_on", "TaskTracker::spawn_local_on")
    assert definition_names("Map<K, Vec<V>>::get(&self)", "text/x-rust", "m.rs#impl Map/get") == (
        "get",
        "Map::get",
    )
    assert identifier_key("Config::parse_all") == identifier_key("config.ParseAll")
    assert identifier_key("Config::parse_all") == "config.parseall"
    method = ("drop", "cases::OnDrop::drop")
    assert names_the_definition(method, identifier_key("OnDrop::drop"))
    assert names_the_definition(method, identifier_key("cases.on_drop.drop"))
    assert names_the_definition(method, identifier_key("drop"))
    assert not names_the_definition(method, identifier_key("Drop::drop"))  # not at a separator
    # A type's heading is no qualified name: ``Config`` names it by its own name only.
    assert not names_the_definition(("Inner", "class Config.Inner"), identifier_key("Inner.x"))


@pytest.mark.parametrize(
    ("source_key", "test_code"),
    [
        ("tests/sync_semaphore.rs#blocking_acquire", True),
        ("tokio/src/runtime/tests/queue.rs#new_stats", True),
        ("sympy/core/tests/test_basic.py#test_subs", True),
        ("test_settings.py#helper", True),
        ("src/test/java/ParserTest.java#ParserTest", True),
        ("web/__tests__/app.js#render", True),
        ("web/app.test.ts#render", True),
        ("web/app.spec.ts#render", True),
        ("net/http/server_test.go#TestServe", True),
        ("src/lib.rs#tests/parses", True),  # #[cfg(test)] mod tests { fn parses() }
        ("src/sync/semaphore.rs#impl Semaphore/blocking_acquire", False),
        ("sympy/testing/runtests.py#SymPyTests/test", False),  # a method named test
        ("src/contest.rs#latest", False),
        ("src/runtime/tests.rs#parses", True),  # #[cfg(test)] mod tests; in its own file
        ("tokio-test/src/macros.rs#assert_ready", False),  # a library for tests
        (None, False),
    ],
)
def test_test_code_is_known_by_its_place(source_key: str | None, test_code: bool) -> None:
    assert in_test_code(source_key) is test_code


def test_markdown_headings_are_boosted_as_before(tmp_path: Path) -> None:
    """The ranks of code sections leave other sections alone: a Markdown heading with the
    query's words is boosted even when a code definition is named by the query."""
    root = tmp_path / "mixed"
    root.mkdir()
    (root / "notes.md").write_text("# Parse config\n\nHow the service reads its settings.\n")
    (root / "settings.py").write_text("def parse_config(path):\n    return open(path).read()\n")
    k = kbdb.KnowledgeBase.init(tmp_path / "kb")
    try:
        k.learn_path(root)
        items = k.search("parse_config", mode="lexical", limit=5, explain=True).items
        boosted = {i.heading for i in items if (i.explain or {}).get("heading_boost", 1.0) > 1}
        assert boosted == {"Parse config", "parse_config(path)"}
    finally:
        k.close()
