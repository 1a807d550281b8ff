//! `kbdb._core.neardup_*`: the near-duplicate signer (`crate::neardup`) for `kbdb.neardup`.
//!
//! Texts cross as `str`. One with lone surrogates (Python allows them; UTF-8 does not) is
//! read lossily: a surrogate becomes U+FFFD, which, like the surrogate in Python, is neither
//! a word character nor cased, so the tokens, hence the keys, are the same.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::neardup;

fn texts_of<'a>(texts: &'a [Bound<'_, PyString>]) -> Vec<Cow<'a, str>> {
    texts
        .iter()
        .map(|t| match t.to_str() {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(t.to_string_lossy().into_owned()),
        })
        .collect()
}

fn le_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Band keys of each text as little-endian uint64 bytes (`BANDS * 8`), None without tokens.
#[pyfunction]
pub fn neardup_band_keys<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
) -> Vec<Option<Bound<'py, PyBytes>>> {
    let strs = texts_of(&texts);
    let keys = py.detach(|| neardup::batch_band_keys(&strs));
    keys.into_iter()
        .map(|k| k.map(|k| PyBytes::new(py, &le_bytes(&k))))
        .collect()
}

/// Sorted distinct shingle hashes of each text, as little-endian uint64 bytes.
#[pyfunction]
pub fn neardup_shingles<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'py, PyString>>,
) -> Vec<Bound<'py, PyBytes>> {
    let strs = texts_of(&texts);
    let sets = py.detach(|| neardup::batch_shingles(&strs));
    sets.iter()
        .map(|s| PyBytes::new(py, &le_bytes(s)))
        .collect()
}

/// The tokens the signer sees (for tests: equality with the Python rules).
#[pyfunction]
pub fn neardup_tokens(py: Python<'_>, text: Bound<'_, PyString>) -> Vec<String> {
    let strs = texts_of(std::slice::from_ref(&text));
    py.detach(|| neardup::tokens(&strs[0]))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NEARDUP_PARAMS", neardup::PARAMS)?;
    m.add("NEARDUP_UNICODE", neardup::UNICODE_VERSION)?;
    m.add_function(wrap_pyfunction!(neardup_band_keys, m)?)?;
    m.add_function(wrap_pyfunction!(neardup_shingles, m)?)?;
    m.add_function(wrap_pyfunction!(neardup_tokens, m)?)?;
    Ok(())
}
