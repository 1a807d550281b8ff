"""Rust definitions written inside macro calls (``kbdb.ingest.code``, docs/code.md,
"Rust macro calls"): found, with their lines in the file, to a bounded depth."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.test_code import assert_no_line_lost, dedent, named, outline

import kbdb
from kbdb.ingest.code import MAX_MACRO_DEPTH, split


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[kbdb.KnowledgeBase]:
    k = kbdb.KnowledgeBase.init(tmp_path / "kb")
    yield k
    k.close()


RUST_MACROS = dedent("""
    use std::fmt;

    cfg_rt! {
        /// Task failed to execute to completion.
        pub struct JoinError {
            repr: Repr,
        }
    }

    impl RuntimeMetrics {
        pub fn num_workers(&self) -> usize {
            self.handle.inner.num_workers()
        }

        cfg_unstable_metrics! {
            /// Returns the number of tasks stolen.
            pub fn worker_steal_count(&self, worker: usize) -> u64 {
                self.handle.inner.worker_metrics(worker).steal_count()
            }

            cfg_64bit_metrics! {
                pub fn spawned_tasks_count(&self) -> u64 {
                    self.handle.inner.spawned_tasks_count()
                }
            }
        }
    }

    cfg_io_util! {
        mod lines;
        pub use lines::Lines;
    }

    thread_local! {
        static DEPTH: Cell<usize> = Cell::new(0);
    }

    macro_rules! cfg_rt {
        ($($item:item)*) => {
            $( #[cfg(feature = "rt")] $item )*
        }
    }
""")


def test_rust_definitions_inside_macro_calls() -> None:
    """The tokens of a macro call that holds items are parsed as Rust: its definitions
    are sections with their own lines, members of the ``impl`` around the call; the
    call's own lines stay with what is around it."""
    doc = split(RUST_MACROS, name="metrics.rs")
    assert outline(doc) == [
        ("metrics.rs", 1, 3),
        ("pub struct JoinError", 4, 7),
        ("metrics.rs", 8, 8),
        ("impl RuntimeMetrics", 10, 27),
        ("RuntimeMetrics::num_workers(&self) -> usize", 11, 13),
        ("RuntimeMetrics::worker_steal_count(&self, worker: usize) -> u64", 16, 19),
        ("RuntimeMetrics::spawned_tasks_count(&self) -> u64", 22, 24),
        ("metrics.rs", 29, 29),
        ("mod lines", 30, 30),
        ("metrics.rs", 31, 36),  # thread_local! holds no definition
        ("macro_rules! cfg_rt", 38, 42),  # a macro's own rules are not parsed
    ]
    lines = RUST_MACROS.split("\n")
    steal = named(doc, "RuntimeMetrics::worker_steal_count(&self, worker: usize) -> u64")
    assert steal.heading_path == ("impl RuntimeMetrics", "worker_steal_count")
    assert doc.sections[steal.parent or 0].heading == "impl RuntimeMetrics"
    assert steal.content.split("\n")[0].strip() == lines[steal.start_line - 1].strip()
    assert lines[steal.start_line - 1].strip() == "/// Returns the number of tasks stolen."
    assert lines[steal.end_line - 1] == "        }"
    impl = named(doc, "impl RuntimeMetrics")
    assert "cfg_unstable_metrics! {" in impl.content and "fn worker_steal_count" not in impl.content
    assert named(doc, "pub struct JoinError").content.startswith("    /// Task failed")
    assert_no_line_lost(RUST_MACROS, doc)


def test_nested_macro_calls_are_read_to_a_bounded_depth() -> None:
    def nested(depth: int) -> str:
        return "m! {\n" * depth + "fn inner() {}\n" + "}\n" * depth + "fn after() {}\n"

    doc = split(nested(MAX_MACRO_DEPTH), name="deep.rs")
    assert ("inner()", MAX_MACRO_DEPTH + 1, MAX_MACRO_DEPTH + 1) in outline(doc)
    deeper = nested(MAX_MACRO_DEPTH + 1)
    doc = split(deeper, name="deep.rs")
    assert [h for h, _, _ in outline(doc)] == ["deep.rs", "after()"]
    assert_no_line_lost(deeper, doc)


def test_a_definition_inside_a_macro_call_is_found_with_its_lines(
    kb: kbdb.KnowledgeBase, tmp_path: Path
) -> None:
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "metrics.rs").write_text(RUST_MACROS)
    kb.learn_path(folder)
    item = kb.search("worker_steal_count", mode="lexical", limit=1).items[0]
    assert item.heading == "RuntimeMetrics::worker_steal_count(&self, worker: usize) -> u64"
    assert (item.source.start_line, item.source.end_line) == (16, 19)
    assert kb.search("JoinError", mode="lexical", limit=1).items[0].heading == (
        "pub struct JoinError"
    )
