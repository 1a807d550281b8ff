//! The crate's one error type. Every variant names the path or value it is about, so that
//! the Python layer can turn it into a `kbdb: <what> (<hint>)` message without guessing.

use std::path::PathBuf;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("i/o error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("index file {path} is corrupt: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("index file {path} has format version {found}, this build reads {expected}")]
    FormatVersion {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("dimension mismatch: expected {expected}, got {found}")]
    DimensionMismatch { expected: usize, found: usize },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("not found: {0}")]
    NotFound(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A failed open or read of an engine file. A directory standing where the file should
    /// be is damage to the index (`rebuild` replaces it), not an i/o problem of the machine,
    /// so it is `Corrupt` rather than `Io` (EISDIR from a read, ENODEV from a map).
    pub fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if path.is_dir() {
            return Error::corrupt(path, "a directory stands where the file should be");
        }
        Error::io(path, source)
    }

    pub fn corrupt(path: impl Into<PathBuf>, detail: impl Into<String>) -> Self {
        Error::Corrupt {
            path: path.into(),
            detail: detail.into(),
        }
    }
}
