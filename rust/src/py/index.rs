//! `kbdb._core.Index` and `kbdb._core.Hits`: the lexical index behind a frozen pyclass.
//! Every call that touches files or scores releases the GIL.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::error::{Error, Result};
use crate::lexical::{
    parse_kbid, Bm25fParams, Clause, CorpusStats, Doc, GlobalStats, Hits, Index, Kbid, Query,
    FIELD_COUNT,
};
use crate::text::Language;

#[pyclass(frozen, name = "Index", module = "kbdb._core")]
pub struct PyIndex {
    inner: Arc<Index>,
}

/// `(kbid, heading, body, code, path, anchor)`.
type Section = (String, String, String, String, String, String);
/// Per field, in field order (`FIELD_NAMES`): a tuple in Python.
type PerField<T> = (T, T, T, T, T);
/// `(docs, field totals, {term: df})`: a collection's statistics, as `Index.search` takes
/// them and `Index.term_stats` gives each shard's part.
type Corpus = (u64, PerField<u64>, HashMap<String, u64>);

// `PerField` spells out FIELD_COUNT fields.
const _: () = assert!(FIELD_COUNT == 5);

fn from_tuple<T>(t: PerField<T>) -> [T; FIELD_COUNT] {
    [t.0, t.1, t.2, t.3, t.4]
}

fn to_tuple<T>([a, b, c, d, e]: [T; FIELD_COUNT]) -> PerField<T> {
    (a, b, c, d, e)
}
/// `(clause, term, field, score)`, as `Hits.explain` returns it.
type ExplainPart = (u32, String, &'static str, f32);

fn to_docs(sections: Vec<Section>) -> Result<Vec<Doc>> {
    sections
        .into_iter()
        .map(|(kbid, heading, body, code, path, anchor)| {
            Ok(Doc {
                kbid: parse_kbid(&kbid)?,
                fields: [heading, body, code, path, anchor],
            })
        })
        .collect()
}

fn to_kbids(kbids: &[String]) -> Result<Vec<Kbid>> {
    kbids.iter().map(|k| parse_kbid(k)).collect()
}

#[pymethods]
impl PyIndex {
    #[staticmethod]
    #[pyo3(signature = (path, *, create = false, reset = false, language = "english"))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        reset: bool,
        language: &str,
    ) -> PyResult<PyIndex> {
        let language = Language::parse(language)?;
        let index = py.detach(|| {
            if reset {
                Index::reset(&path, language)
            } else {
                Index::open_in(&path, create, language)
            }
        })?;
        Ok(PyIndex {
            inner: Arc::new(index),
        })
    }

    fn reload(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(py.detach(|| self.inner.reload())?)
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.inner.generation()
    }

    #[getter]
    fn watermark(&self) -> u64 {
        self.inner.watermark()
    }

    #[getter]
    fn analyzer_id(&self) -> String {
        self.inner.analyzer_id()
    }

    #[getter]
    fn doc_count(&self) -> u64 {
        self.inner.doc_count()
    }

    #[getter]
    fn segment_count(&self) -> usize {
        self.inner.segment_count()
    }

    fn size_bytes(&self) -> u64 {
        self.inner.size_bytes()
    }

    #[pyo3(signature = (adds, deletes, *, watermark))]
    fn commit(
        &self,
        py: Python<'_>,
        adds: Vec<Section>,
        deletes: Vec<String>,
        watermark: u64,
    ) -> PyResult<Vec<u32>> {
        Ok(py.detach(|| {
            let docs = to_docs(adds)?;
            let deletes = to_kbids(&deletes)?;
            self.inner.commit(&docs, &deletes, watermark)
        })?)
    }

    #[pyo3(signature = (docs, *, watermark))]
    fn rebuild(&self, py: Python<'_>, docs: Vec<Section>, watermark: u64) -> PyResult<Vec<u32>> {
        Ok(py.detach(|| self.inner.rebuild(&to_docs(docs)?, watermark))?)
    }

    #[pyo3(signature = (*, force = false))]
    fn merge(&self, py: Python<'_>, force: bool) -> PyResult<usize> {
        Ok(py.detach(|| self.inner.merge(force))?)
    }

    fn verify(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| self.inner.verify())
    }

    #[pyo3(signature = (
        clauses, *, phrases = Vec::new(), require_all = true, limit = 10, allow = None,
        k1 = 1.2, b = (0.75, 0.75, 0.75, 0.75, 0.75), weights = (2.0, 1.0, 1.0, 1.0, 2.0), explain = false,
        common_cutoff = 0.0, corpus = None
    ))]
    #[pyo3(
        text_signature = "(self, clauses, *, phrases=(), require_all=True, limit=10, \
        allow=None, k1=1.2, b=(0.75, 0.75, 0.75, 0.75, 0.75), weights=(2.0, 1.0, 1.0, 1.0, 2.0), explain=False, common_cutoff=0.0, corpus=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        clauses: Vec<(Vec<(String, f32)>, bool)>,
        phrases: Vec<Vec<(String, i64)>>,
        require_all: bool,
        limit: i64,
        allow: Option<Vec<String>>,
        k1: f32,
        b: PerField<f32>,
        weights: PerField<f32>,
        explain: bool,
        common_cutoff: f32,
        corpus: Option<Corpus>,
    ) -> PyResult<PyHits> {
        let hits = py.detach(|| {
            let q = to_query(
                clauses,
                phrases,
                require_all,
                limit,
                allow,
                k1,
                b,
                weights,
                explain,
                common_cutoff,
                corpus,
            )?;
            self.inner.search(&q)
        })?;
        Ok(PyHits { hits })
    }

    /// `(strict, relaxed)`: `search` with `require_all=True` and the phrases, and, when
    /// that has fewer than `relaxed_below` hits (or came from one evaluation with it),
    /// with `require_all=False` and no phrases; else `None`.
    #[pyo3(signature = (
        clauses, *, relaxed_below, phrases = Vec::new(), limit = 10, allow = None,
        k1 = 1.2, b = (0.75, 0.75, 0.75, 0.75, 0.75), weights = (2.0, 1.0, 1.0, 1.0, 2.0), explain = false,
        common_cutoff = 0.0, corpus = None
    ))]
    #[pyo3(
        text_signature = "(self, clauses, *, relaxed_below, phrases=(), limit=10, allow=None, \
        k1=1.2, b=(0.75, 0.75, 0.75, 0.75, 0.75), weights=(2.0, 1.0, 1.0, 1.0, 2.0), explain=False, common_cutoff=0.0, corpus=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn search_tiers(
        &self,
        py: Python<'_>,
        clauses: Vec<(Vec<(String, f32)>, bool)>,
        relaxed_below: usize,
        phrases: Vec<Vec<(String, i64)>>,
        limit: i64,
        allow: Option<Vec<String>>,
        k1: f32,
        b: PerField<f32>,
        weights: PerField<f32>,
        explain: bool,
        common_cutoff: f32,
        corpus: Option<Corpus>,
    ) -> PyResult<(PyHits, Option<PyHits>)> {
        let (strict, relaxed) = py.detach(|| {
            let q = to_query(
                clauses,
                phrases,
                true,
                limit,
                allow,
                k1,
                b,
                weights,
                explain,
                common_cutoff,
                corpus,
            )?;
            self.inner.search_tiers(&q, relaxed_below)
        })?;
        Ok((PyHits { hits: strict }, relaxed.map(|hits| PyHits { hits })))
    }

    /// `(docs, field totals, [df of each term])` of the current snapshot: this index's
    /// part of a collection's statistics (summed over shards, they are `search`'s
    /// `corpus`).
    fn term_stats(
        &self,
        py: Python<'_>,
        terms: Vec<String>,
    ) -> PyResult<(u64, PerField<u64>, Vec<u64>)> {
        let (stats, df) = py.detach(|| self.inner.term_stats(&terms))?;
        Ok((stats.docs, to_tuple(stats.field_totals), df))
    }

    fn __repr__(&self) -> String {
        format!(
            "Index(path={:?}, generation={}, doc_count={}, segments={})",
            self.inner.dir().display().to_string(),
            self.inner.generation(),
            self.inner.doc_count(),
            self.inner.segment_count()
        )
    }
}

#[pyclass(frozen, name = "Hits", module = "kbdb._core")]
pub struct PyHits {
    hits: Hits,
}

#[pymethods]
impl PyHits {
    #[getter]
    fn kbids(&self) -> Vec<String> {
        self.hits.kbids.clone()
    }

    #[getter]
    fn scores(&self) -> Vec<f32> {
        self.hits.scores.clone()
    }

    /// Per hit, its clauses' field masks as one `bytes` (a byte per clause): cheaper to
    /// make than a list of ints, and read the same way (indexing gives ints).
    #[getter]
    fn matched<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyBytes>> {
        self.hits
            .matched
            .iter()
            .map(|m| PyBytes::new(py, m))
            .collect()
    }

    #[getter]
    fn total(&self) -> u64 {
        self.hits.total
    }

    /// The positions of the hits in whose path field every required clause matched.
    #[getter]
    fn in_path(&self) -> Vec<u32> {
        self.hits.in_path.clone()
    }

    /// Per clause: required in the query but made optional as a common word.
    #[getter]
    fn common(&self) -> Vec<bool> {
        self.hits.common.clone()
    }

    /// The positions of the hits with neither body nor code text.
    #[getter]
    fn bodiless(&self) -> Vec<u32> {
        self.hits.bodiless.clone()
    }

    #[getter]
    fn clause_bounds(&self) -> Vec<f32> {
        self.hits.clause_bounds.clone()
    }

    #[getter]
    fn explain(&self) -> Option<Vec<Vec<ExplainPart>>> {
        self.hits.explain.as_ref().map(|e| {
            e.iter()
                .map(|hit| {
                    hit.iter()
                        .map(|c| (c.clause, c.term.clone(), c.field, c.score))
                        .collect()
                })
                .collect()
        })
    }

    fn __len__(&self) -> usize {
        self.hits.kbids.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "Hits(len={}, total={})",
            self.hits.kbids.len(),
            self.hits.total
        )
    }
}

/// The engine query of `Index.search`'s arguments.
#[allow(clippy::too_many_arguments)]
fn to_query(
    clauses: Vec<(Vec<(String, f32)>, bool)>,
    phrases: Vec<Vec<(String, i64)>>,
    require_all: bool,
    limit: i64,
    allow: Option<Vec<String>>,
    k1: f32,
    b: PerField<f32>,
    weights: PerField<f32>,
    explain: bool,
    common_cutoff: f32,
    corpus: Option<Corpus>,
) -> Result<Query> {
    let limit = usize::try_from(limit)
        .map_err(|_| Error::InvalidArgument(format!("limit must be >= 0, got {limit}")))?;
    Ok(Query {
        clauses: clauses
            .into_iter()
            .map(|(alternatives, required)| Clause {
                alternatives,
                required,
            })
            .collect(),
        phrases,
        require_all,
        limit,
        allow: allow.as_deref().map(to_kbids).transpose()?,
        params: Bm25fParams {
            k1,
            b: from_tuple(b),
            weights: from_tuple(weights),
        },
        explain,
        common_cutoff,
        corpus: corpus.map(|(docs, t, df)| GlobalStats {
            stats: CorpusStats {
                docs,
                field_totals: from_tuple(t),
            },
            df,
        }),
    })
}
