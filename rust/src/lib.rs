//! kbdb-core: the engine under kbdb.
//!
//! It owns the hot paths that the design card puts in Rust: the analyzer (`text`), the
//! lexical index as immutable segments with BM25F scoring (`lexical`), the vector index
//! with its SIMD top-k scan (`vector`), the near-duplicate signer (`neardup`: shingles,
//! MinHash, LSH band keys), and the on-disk format helpers (`format`). There
//! is no business logic here: the Python package decides what to index and when; this
//! crate decides how, quickly and safely.
//!
//! PyO3 lives only in `py/`, behind the `python` feature, so `cargo test` needs no Python.

pub mod error;
pub mod failpoint;
pub mod format;
pub mod lexical;
pub mod neardup;
pub mod simd;
pub mod text;
pub mod vector;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
