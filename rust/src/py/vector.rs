//! `kbdb._core.VectorIndex`: the vector index behind a frozen pyclass. Every call that
//! touches files or scans releases the GIL.
//!
//! Vectors cross as float32 bytes: a `bytes` object is borrowed without a copy; any other
//! object with the buffer protocol (a C-contiguous or not numpy `float32` array, a
//! `memoryview`, a `bytearray`) is copied once through `memoryview(obj).tobytes()`, since
//! the buffer C API is not in the 3.10 limited API. kbids cross as 32-character lower-case
//! hex strings.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMemoryView};

use crate::error::{Error, Result};
use crate::lexical::{format_kbid, parse_kbid};
use crate::vector::kernel;
use crate::vector::{KbidHash, OpenMode, Threads, VectorIndex};

#[pyclass(frozen, name = "VectorIndex", module = "kbdb._core")]
pub struct PyVectorIndex {
    inner: Arc<VectorIndex>,
}

/// The float32 bytes of `obj` (see the module docs), kept alive as a Python `bytes`.
fn float32_bytes<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    let view = PyMemoryView::from(obj).map_err(|_| {
        PyTypeError::new_err("vectors must be bytes or a float32 buffer (numpy array, memoryview)")
    })?;
    let format: String = view.getattr("format")?.extract()?;
    let itemsize: usize = view.getattr("itemsize")?.extract()?;
    let float32 = matches!(format.as_str(), "f" | "<f" | "=f") && itemsize == 4;
    let raw = matches!(format.as_str(), "B" | "b" | "c") && itemsize == 1;
    if !(float32 || raw) {
        return Err(Error::InvalidArgument(format!(
            "vectors must be float32 (buffer format 'f'), got format '{format}' of {itemsize} \
             bytes per item"
        ))
        .into());
    }
    Ok(view.call_method0("tobytes")?.cast_into::<PyBytes>()?)
}

/// Native-endian float32 bytes as the files' little-endian bytes (a no-op on x86_64 and
/// aarch64).
fn to_le(bytes: &[u8]) -> Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        Cow::Borrowed(bytes)
    } else {
        Cow::Owned(
            bytes
                .chunks_exact(4)
                .flat_map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]).to_le_bytes())
                .collect(),
        )
    }
}

fn to_kbids(kbids: &[String]) -> Result<Vec<KbidHash>> {
    kbids.iter().map(|k| parse_kbid(k)).collect()
}

fn query_vector(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::InvalidArgument(format!(
            "the query is {} bytes, not a whole number of float32s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn thread_count(threads: i64) -> Result<Threads> {
    usize::try_from(threads)
        .map(Threads::from_count)
        .map_err(|_| Error::InvalidArgument(format!("threads must be >= 0, got {threads}")))
}

fn open_mode(
    create: bool,
    reset: bool,
    dimensions: Option<u32>,
    model_name: Option<String>,
) -> Result<OpenMode> {
    if !create && !reset {
        return Ok(OpenMode::Existing);
    }
    let dimensions = dimensions
        .and_then(|d| u16::try_from(d).ok())
        .filter(|&d| d > 0)
        .ok_or_else(|| {
            Error::InvalidArgument("create and reset need dimensions between 1 and 65535".into())
        })?;
    let model_name = model_name
        .ok_or_else(|| Error::InvalidArgument("create and reset need a model_name".into()))?;
    Ok(if reset {
        OpenMode::Reset {
            model_name,
            dimensions,
        }
    } else {
        OpenMode::Create {
            model_name,
            dimensions,
        }
    })
}

/// The options `search` and `search_many` share, checked.
struct SearchArgs {
    limit: usize,
    allow: Option<Vec<String>>,
    threads: Threads,
    exact: bool,
    candidates: Option<usize>,
}

impl SearchArgs {
    fn new(
        limit: i64,
        allow: Option<Vec<String>>,
        threads: i64,
        exact: bool,
        candidates: Option<usize>,
    ) -> Result<SearchArgs> {
        Ok(SearchArgs {
            limit: usize::try_from(limit)
                .map_err(|_| Error::InvalidArgument(format!("limit must be >= 0, got {limit}")))?,
            allow,
            threads: thread_count(threads)?,
            exact,
            candidates,
        })
    }
}

impl PyVectorIndex {
    /// The scan behind `search` (`many` false: the buffer is one query, whose length the
    /// snapshot checks) and `search_many` (whole queries back to back), without the GIL.
    fn run_search(
        &self,
        py: Python<'_>,
        queries: &Bound<'_, PyAny>,
        many: bool,
        opts: SearchArgs,
    ) -> PyResult<Vec<(Vec<String>, Vec<f32>)>> {
        let data = float32_bytes(queries)?;
        let bytes = data.as_bytes();
        let hits = py.detach(|| {
            let all = query_vector(bytes)?;
            let snap = self.inner.snapshot();
            let dims = usize::from(snap.state.dimensions);
            let queries: Vec<&[f32]> = if !many {
                vec![&all[..]]
            } else if dims > 0 && all.len().is_multiple_of(dims) {
                all.chunks_exact(dims).collect()
            } else {
                return Err(Error::InvalidArgument(format!(
                    "the queries hold {} float32s, not a whole number of {dims}-dimensional \
                     vectors",
                    all.len()
                )));
            };
            let allow = opts.allow.as_deref().map(to_kbids).transpose()?;
            snap.search_many(
                &queries,
                opts.limit,
                allow.as_deref(),
                opts.threads,
                opts.exact,
                opts.candidates,
            )
        })?;
        Ok(hits
            .into_iter()
            .map(|h| h.into_iter().map(|(k, s)| (format_kbid(&k), s)).unzip())
            .collect())
    }
}

#[pymethods]
impl PyVectorIndex {
    #[staticmethod]
    #[pyo3(signature = (path, *, create = false, reset = false, dimensions = None, model_name = None, quantized_scan = false))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        create: bool,
        reset: bool,
        dimensions: Option<u32>,
        model_name: Option<String>,
        quantized_scan: bool,
    ) -> PyResult<PyVectorIndex> {
        let mode = open_mode(create, reset, dimensions, model_name)?;
        let index = py.detach(|| {
            let index = VectorIndex::open(&path, mode)?;
            if quantized_scan {
                index.set_quantized(true)?;
            }
            Ok::<_, Error>(index)
        })?;
        Ok(PyVectorIndex {
            inner: Arc::new(index),
        })
    }

    /// The dot-product kernel scans use on this CPU.
    #[staticmethod]
    fn kernel() -> &'static str {
        kernel::best().name()
    }

    /// The int8 kernel quantized scans use on this CPU.
    #[staticmethod]
    fn q8_kernel() -> &'static str {
        crate::vector::q8::best().name()
    }

    /// Candidates a quantized search for `limit` results rescores exactly.
    #[staticmethod]
    fn q8_candidates(limit: usize) -> usize {
        crate::vector::q8::candidates(limit)
    }

    /// Whether searches go through `vectors.q8` (when current) and writes keep it.
    #[getter]
    fn quantized_scan(&self) -> bool {
        self.inner.quantized()
    }

    fn set_quantized_scan(&self, py: Python<'_>, on: bool) -> PyResult<()> {
        Ok(py.detach(|| self.inner.set_quantized(on))?)
    }

    /// Whether the current snapshot scans `vectors.q8`.
    #[getter]
    fn quantized_ready(&self) -> bool {
        self.inner.snapshot().q8.is_some()
    }

    /// `"current"`, `"stale"` or `"missing"`: `vectors.q8` on disk against the current
    /// `vectors.idx`; INDEX_CORRUPT when it is damaged.
    fn q8_status(&self, py: Python<'_>) -> PyResult<&'static str> {
        Ok(py.detach(|| self.inner.q8_status())?.name())
    }

    /// Builds `vectors.q8` if the quantized scan is on and it is missing or stale (the
    /// caller holds kbdb's write lock); True if it built one.
    fn ensure_quantized(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(py.detach(|| self.inner.ensure_quantized())?)
    }

    fn reload(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(py.detach(|| self.inner.reload())?)
    }

    #[getter]
    fn dimensions(&self) -> u16 {
        self.inner.snapshot().state.dimensions
    }

    #[getter]
    fn model_name(&self) -> String {
        self.inner.snapshot().state.model_name.clone()
    }

    #[getter]
    fn count(&self) -> u64 {
        self.inner.snapshot().count()
    }

    #[getter]
    fn watermark(&self) -> u64 {
        self.inner.snapshot().state.watermark
    }

    #[getter]
    fn last_built(&self) -> String {
        self.inner.snapshot().state.last_built.clone()
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.inner.snapshot().state.generation
    }

    #[getter]
    fn side_count(&self) -> u64 {
        let s = self.inner.snapshot();
        u64::from(s.state.append_count) + u64::from(s.state.tombstone_count)
    }

    fn size_bytes(&self) -> u64 {
        self.inner.snapshot().size_bytes()
    }

    #[pyo3(signature = (kbids, vectors, *, watermark))]
    fn append(
        &self,
        py: Python<'_>,
        kbids: Vec<String>,
        vectors: &Bound<'_, PyAny>,
        watermark: u64,
    ) -> PyResult<()> {
        let data = float32_bytes(vectors)?;
        let bytes = data.as_bytes();
        Ok(py.detach(|| {
            let kbids = to_kbids(&kbids)?;
            self.inner.append(&kbids, &to_le(bytes), watermark)
        })?)
    }

    #[pyo3(signature = (kbids, *, watermark))]
    fn delete(&self, py: Python<'_>, kbids: Vec<String>, watermark: u64) -> PyResult<()> {
        Ok(py.detach(|| self.inner.delete(&to_kbids(&kbids)?, watermark))?)
    }

    #[pyo3(signature = (kbids, vectors, *, model_name, watermark, dimensions = None))]
    fn write(
        &self,
        py: Python<'_>,
        kbids: Vec<String>,
        vectors: &Bound<'_, PyAny>,
        model_name: String,
        watermark: u64,
        dimensions: Option<u32>,
    ) -> PyResult<()> {
        let dimensions = dimensions
            .map(|d| {
                u16::try_from(d).ok().filter(|&d| d > 0).ok_or_else(|| {
                    Error::InvalidArgument(format!("dimensions {d} is not between 1 and 65535"))
                })
            })
            .transpose()?;
        let data = float32_bytes(vectors)?;
        let bytes = data.as_bytes();
        Ok(py.detach(|| {
            let kbids = to_kbids(&kbids)?;
            self.inner
                .write(&kbids, &to_le(bytes), &model_name, dimensions, watermark)
        })?)
    }

    #[pyo3(signature = (*, force = false))]
    fn compact(&self, py: Python<'_>, force: bool) -> PyResult<bool> {
        Ok(py.detach(|| self.inner.compact(force))?)
    }

    fn get<'py>(
        &self,
        py: Python<'py>,
        kbids: Vec<String>,
    ) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let found: Vec<Option<Vec<u8>>> = py.detach(|| {
            let kbids = to_kbids(&kbids)?;
            let snap = self.inner.snapshot();
            Ok::<_, Error>(
                kbids
                    .iter()
                    .map(|k| snap.lookup(k).map(|v| to_le(v).into_owned()))
                    .collect(),
            )
        })?;
        Ok(found
            .into_iter()
            .map(|v| v.map(|v| PyBytes::new(py, &v)))
            .collect())
    }

    fn kbids(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| {
            self.inner
                .snapshot()
                .kbids()
                .iter()
                .map(format_kbid)
                .collect()
        })
    }

    /// The top `limit` (kbids, scores). With the quantized scan on and `vectors.q8`
    /// current, candidates come from the int8 copy and are rescored exactly; `exact`
    /// forces the f32 scan, `candidates` overrides how many are rescored.
    #[pyo3(signature = (query, *, limit = 10, allow = None, threads = 0, exact = false, candidates = None))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: &Bound<'_, PyAny>,
        limit: i64,
        allow: Option<Vec<String>>,
        threads: i64,
        exact: bool,
        candidates: Option<usize>,
    ) -> PyResult<(Vec<String>, Vec<f32>)> {
        let opts = SearchArgs::new(limit, allow, threads, exact, candidates)?;
        let mut hits = self.run_search(py, query, false, opts)?;
        Ok(hits.pop().unwrap_or_default())
    }

    /// `search` for several queries in one pass: `queries` holds whole query vectors
    /// back to back (a `(q, dimensions)` float32 array, or their bytes); element `i` of
    /// the result is exactly `search(queries[i], ...)`, but every stored vector is read
    /// once for all of them.
    #[pyo3(signature = (queries, *, limit = 10, allow = None, threads = 0, exact = false, candidates = None))]
    #[allow(clippy::too_many_arguments)]
    fn search_many(
        &self,
        py: Python<'_>,
        queries: &Bound<'_, PyAny>,
        limit: i64,
        allow: Option<Vec<String>>,
        threads: i64,
        exact: bool,
        candidates: Option<usize>,
    ) -> PyResult<Vec<(Vec<String>, Vec<f32>)>> {
        let opts = SearchArgs::new(limit, allow, threads, exact, candidates)?;
        self.run_search(py, queries, true, opts)
    }

    /// Reads every stored byte once; the benchmarks' memory-bandwidth yardstick.
    #[pyo3(signature = (*, threads = 0))]
    fn stream_read(&self, py: Python<'_>, threads: i64) -> PyResult<u64> {
        let threads = thread_count(threads)?;
        Ok(py.detach(|| self.inner.snapshot().stream_read(threads)))
    }

    fn verify(&self, py: Python<'_>) -> Vec<String> {
        py.detach(|| self.inner.verify())
    }

    fn __repr__(&self) -> String {
        let s = self.inner.snapshot();
        format!(
            "VectorIndex(path={:?}, model_name={:?}, dimensions={}, count={})",
            self.inner.dir().display().to_string(),
            s.state.model_name,
            s.state.dimensions,
            s.count()
        )
    }
}
