//! The one place where engine errors become Python exceptions.
//!
//! | `Error`                             | Python                                   |
//! |-------------------------------------|------------------------------------------|
//! | `Corrupt`                            | `kbdb.errors.IndexCorruptError`          |
//! | `FormatVersion`                      | `kbdb.errors.IndexFormatError` (a subclass) |
//! | `InvalidArgument`, `DimensionMismatch` | `kbdb.errors.InvalidArgumentError`    |
//! | `NotFound`                          | `kbdb.errors.NotFoundError`              |
//! | `Io`                                | `OSError` (by errno, so `FileNotFoundError` for ENOENT) |
//!
//! When `kbdb.errors` cannot be imported (the module used on its own), the fallbacks are
//! `RuntimeError`, `ValueError` and `LookupError`.

use pyo3::exceptions::{
    PyFileNotFoundError, PyLookupError, PyOSError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;

use crate::error::Error;

fn kbdb_error(py: Python<'_>, class: &str, msg: &str) -> Option<PyErr> {
    let cls = py.import("kbdb.errors").ok()?.getattr(class).ok()?;
    let exc = cls.call1((msg,)).ok()?;
    Some(PyErr::from_value(exc))
}

impl From<Error> for PyErr {
    fn from(err: Error) -> PyErr {
        let msg = err.to_string();
        match err {
            Error::Io { path, source } => {
                let file = path.to_string_lossy().into_owned();
                match (source.raw_os_error(), source.kind()) {
                    (Some(errno), _) => PyOSError::new_err((errno, msg, file)),
                    (None, std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(msg),
                    (None, _) => PyOSError::new_err(msg),
                }
            }
            Error::FormatVersion { .. } => Python::attach(|py| {
                kbdb_error(py, "IndexFormatError", &msg)
                    .unwrap_or_else(|| PyRuntimeError::new_err(msg))
            }),
            Error::Corrupt { .. } => Python::attach(|py| {
                kbdb_error(py, "IndexCorruptError", &msg)
                    .unwrap_or_else(|| PyRuntimeError::new_err(msg))
            }),
            Error::InvalidArgument(_) | Error::DimensionMismatch { .. } => Python::attach(|py| {
                kbdb_error(py, "InvalidArgumentError", &msg)
                    .unwrap_or_else(|| PyValueError::new_err(msg))
            }),
            Error::NotFound(_) => Python::attach(|py| {
                kbdb_error(py, "NotFoundError", &msg).unwrap_or_else(|| PyLookupError::new_err(msg))
            }),
        }
    }
}
