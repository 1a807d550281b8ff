//! The only PyO3 code: the `kbdb._core` module (contract: `python/kbdb/_core.pyi`).
//!
//! The binding layer is thin: arguments are converted to owned Rust values, the GIL is
//! released for the work (`py.detach`), and results are converted once. Errors become
//! Python exceptions in `errors` and nowhere else.

mod analyzer;
mod errors;
mod index;
mod neardup;
mod vector;

use pyo3::prelude::*;

use crate::lexical::{FIELD_ANCHOR, FIELD_BODY, FIELD_CODE, FIELD_HEADING, FIELD_PATH};
use crate::text::LANGUAGES;

/// The analyzer's languages as `(English name, ISO 639-1 code)`, by name.
#[pyfunction]
fn languages() -> Vec<(&'static str, &'static str)> {
    LANGUAGES.iter().map(|l| (l.name(), l.code())).collect()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("FIELD_HEADING", FIELD_HEADING)?;
    m.add("FIELD_BODY", FIELD_BODY)?;
    m.add("FIELD_CODE", FIELD_CODE)?;
    m.add("FIELD_PATH", FIELD_PATH)?;
    m.add("FIELD_ANCHOR", FIELD_ANCHOR)?;
    m.add_function(wrap_pyfunction!(languages, m)?)?;
    m.add_class::<analyzer::PyAnalyzer>()?;
    m.add_class::<index::PyIndex>()?;
    m.add_class::<index::PyHits>()?;
    m.add_class::<vector::PyVectorIndex>()?;
    neardup::register(m)?;
    Ok(())
}
