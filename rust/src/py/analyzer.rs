//! `kbdb._core.Analyzer`: the text pipeline exposed for ingest (term counts, snippets) and
//! query parsing. Offsets cross the boundary as Python `str` (char) indices.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

use crate::error::Error;
use crate::text::{Analyzer, Language};

#[pyclass(frozen, name = "Analyzer", module = "kbdb._core")]
pub struct PyAnalyzer {
    inner: Arc<Analyzer>,
}

/// Maps byte offsets of `text` to char offsets; the identity for ASCII text.
struct CharOffsets(Option<Vec<u32>>);

impl CharOffsets {
    fn new(text: &str) -> Self {
        if text.is_ascii() {
            return CharOffsets(None);
        }
        let mut map = vec![0u32; text.len() + 1];
        let mut chars = 0u32;
        for (b, c) in text.char_indices() {
            for slot in &mut map[b..b + c.len_utf8()] {
                *slot = chars;
            }
            chars += 1;
        }
        map[text.len()] = chars;
        CharOffsets(Some(map))
    }

    fn get(&self, byte: usize) -> usize {
        match &self.0 {
            None => byte,
            Some(m) => m
                .get(byte)
                .copied()
                .unwrap_or_else(|| m.last().copied().unwrap_or(0)) as usize,
        }
    }
}

#[pymethods]
impl PyAnalyzer {
    #[new]
    #[pyo3(signature = (language = "english"))]
    fn new(language: &str) -> PyResult<Self> {
        Ok(PyAnalyzer {
            inner: Arc::new(Analyzer::for_language(Language::parse(language)?)),
        })
    }

    #[getter]
    fn id(&self) -> &'static str {
        self.inner.id()
    }

    /// The language's English name (`german`).
    #[getter]
    fn language(&self) -> &'static str {
        self.inner.language().name()
    }

    fn terms(&self, py: Python<'_>, text: &str) -> Vec<String> {
        py.detach(|| {
            let mut out = Vec::new();
            self.inner
                .analyze(text, |t, _, _, _| out.push(t.to_string()));
            out
        })
    }

    fn tokens(&self, py: Python<'_>, text: &str) -> Vec<(String, u32, usize, usize)> {
        py.detach(|| {
            let offsets = CharOffsets::new(text);
            let mut out = Vec::new();
            self.inner.analyze(text, |t, pos, start, end| {
                out.push((t.to_string(), pos, offsets.get(start), offsets.get(end)))
            });
            out
        })
    }

    fn query_tokens(&self, py: Python<'_>, text: &str) -> Vec<(String, String, u32, bool)> {
        py.detach(|| {
            self.inner
                .analyze_query(text)
                .into_iter()
                .map(|q| (q.term, q.surface, q.position, q.optional))
                .collect()
        })
    }

    /// The snippet of `text` for the analyzed `terms` (any iterable of str), and the
    /// highlight spans in it (char offsets), as `kbdb.search.snippet` documents.
    #[pyo3(signature = (text, terms, width = 200, fallback = None))]
    fn snippet(
        &self,
        py: Python<'_>,
        text: &str,
        terms: &Bound<'_, PyAny>,
        width: usize,
        fallback: Option<&str>,
    ) -> PyResult<(String, Vec<(usize, usize)>)> {
        let mut owned: Vec<String> = Vec::new();
        for t in terms.try_iter()? {
            owned.push(t?.extract()?);
        }
        Ok(py.detach(|| {
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            let s = self.inner.snippet(text, &refs, width, fallback);
            (s.text, s.highlights)
        }))
    }

    /// The snippet texts of a page of results in one call: each job is `(text, fallback,
    /// clauses)`, where `clauses` index `alternatives` (the analyzed terms of each query
    /// clause) and pick the terms that job's snippet looks for.
    #[pyo3(signature = (jobs, alternatives, *, width = 200))]
    fn snippets(
        &self,
        py: Python<'_>,
        jobs: Vec<(PyBackedStr, Option<PyBackedStr>, Vec<usize>)>,
        alternatives: Vec<Vec<PyBackedStr>>,
        width: usize,
    ) -> PyResult<Vec<String>> {
        // The texts are read in place (`PyBackedStr`: the str's own UTF-8), not copied.
        let texts = py.detach(|| {
            let mut terms: Vec<&str> = Vec::new();
            jobs.iter()
                .map(|(text, fallback, clauses)| {
                    terms.clear();
                    for &c in clauses {
                        let alts = alternatives.get(c).ok_or_else(|| {
                            Error::InvalidArgument(format!(
                                "clause {c} out of range ({} clauses)",
                                alternatives.len()
                            ))
                        })?;
                        terms.extend(alts.iter().map(|t| &**t));
                    }
                    terms.sort_unstable();
                    terms.dedup();
                    Ok(self
                        .inner
                        .snippet_text(text, &terms, width, fallback.as_deref()))
                })
                .collect::<Result<Vec<String>, Error>>()
        })?;
        Ok(texts)
    }

    fn __repr__(&self) -> String {
        format!("Analyzer(id={:?})", self.inner.id())
    }
}
