//! [`Index`]: the lexical index of one directory, and its snapshots. Writing lives in
//! `update`, searching in `search`.
//!
//! Concurrency: searches clone the current `Arc<Snapshot>` and run without locks; a
//! snapshot's files stay valid while mapped even after a writer unlinks them. Writers are
//! serialized by the caller across processes (kbdb's write lock) and by `writer` within one
//! process; every write starts from the manifest on disk, so a stale `Index` object never
//! overwrites another process's commit. Publishing order: data files (fsynced), then the
//! manifest (atomic rename), then cleanup of unreferenced files.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::bm25f::CorpusStats;
use super::cache::SnapshotCache;
use super::manifest::MANIFEST_FILE;
use super::{Manifest, SegmentMeta, SegmentReader, Tombstones};
use crate::error::{Error, Result};
use crate::format::write_new_atomic;
use crate::text::{Analyzer, Language};

/// How often a reader re-reads the manifest when a file it names has vanished (a
/// concurrent writer merged it away) before calling the index corrupt.
const OPEN_ATTEMPTS: usize = 8;

/// A segment with its current tombstones.
pub struct LoadedSegment {
    pub meta: SegmentMeta,
    pub reader: Arc<SegmentReader>,
    pub dead: Option<Arc<Tombstones>>,
}

/// Everything one manifest generation names, opened.
pub struct Snapshot {
    pub manifest: Manifest,
    pub segments: Vec<LoadedSegment>,
    pub stats: CorpusStats,
    /// What queries on this snapshot share (doc factors, term lookups).
    pub cache: SnapshotCache,
}

impl Snapshot {
    pub(super) fn new(manifest: Manifest, segments: Vec<LoadedSegment>) -> Snapshot {
        let mut stats = CorpusStats::default();
        for s in &segments {
            stats.docs += u64::from(s.reader.doc_count());
            for (total, t) in stats.field_totals.iter_mut().zip(s.reader.field_totals()) {
                *total += t;
            }
        }
        Snapshot {
            manifest,
            segments,
            stats,
            cache: SnapshotCache::default(),
        }
    }
}

fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

fn open_files(dir: &Path, m: &Manifest, prev: Option<&Snapshot>) -> Result<Vec<LoadedSegment>> {
    let meta_path = dir.join(MANIFEST_FILE);
    let old = |file: &str| prev.and_then(|p| p.segments.iter().find(|s| s.meta.file == file));
    let mut out = Vec::with_capacity(m.segments.len());
    for meta in &m.segments {
        let reader = match old(&meta.file) {
            Some(s) => s.reader.clone(),
            None => Arc::new(SegmentReader::open(&dir.join(&meta.file))?),
        };
        if reader.doc_count() != meta.docs {
            let d = format!(
                "{} holds {} docs, the manifest says {}",
                meta.file,
                reader.doc_count(),
                meta.docs
            );
            return Err(Error::corrupt(&meta_path, d));
        }
        let dead = match &meta.tombstones {
            None => None,
            Some(name) => {
                match old(&meta.file).filter(|s| s.meta.tombstones.as_ref() == Some(name)) {
                    Some(s) => s.dead.clone(),
                    None => Some(Arc::new(Tombstones::read(&dir.join(name))?)),
                }
            }
        };
        if let Some(t) = &dead {
            if t.doc_count() != meta.docs || t.count() != meta.deleted {
                return Err(Error::corrupt(
                    &meta_path,
                    format!("{} disagrees with its segment", meta.file),
                ));
            }
        }
        out.push(LoadedSegment {
            meta: meta.clone(),
            reader,
            dead,
        });
    }
    Ok(out)
}

/// Reads the manifest and opens what it names, retrying when a file vanished under us.
pub(super) fn load_snapshot(dir: &Path, prev: Option<&Snapshot>) -> Result<Snapshot> {
    let mut last = None;
    for _ in 0..OPEN_ATTEMPTS {
        let manifest = Manifest::read(dir)?;
        match open_files(dir, &manifest, prev) {
            Ok(segments) => return Ok(Snapshot::new(manifest, segments)),
            Err(e) if is_not_found(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    let detail = last.map(|e| e.to_string()).unwrap_or_default();
    Err(Error::corrupt(
        dir.join(MANIFEST_FILE),
        format!("a listed file is missing: {detail}"),
    ))
}

/// The lexical index in one directory.
pub struct Index {
    pub(super) dir: PathBuf,
    pub(super) analyzer: Arc<Analyzer>,
    current: RwLock<Arc<Snapshot>>,
    /// Serializes writers within this process (the caller serializes processes).
    pub(super) writer: Mutex<()>,
}

impl Index {
    /// Opens the index in `dir` with the English analyzer; see [`Index::open_in`].
    pub fn open(dir: &Path, create: bool) -> Result<Index> {
        Self::open_in(dir, create, Language::English)
    }

    /// Opens the index in `dir`, to be written with the analyzer of `language`; with
    /// `create`, an empty one is created if `meta.toml` is missing (racing creators are
    /// fine: the manifest is created with link-if-absent). An index built by another
    /// analyzer opens (its `analyzer_id` says so); commits to it fail until a rebuild.
    pub fn open_in(dir: &Path, create: bool, language: Language) -> Result<Index> {
        let analyzer = Arc::new(Analyzer::for_language(language));
        let meta = dir.join(MANIFEST_FILE);
        if create && !meta.exists() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            let text = Manifest::empty(analyzer.id()).to_text()?;
            match write_new_atomic(&meta, text.as_bytes()) {
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                other => other?,
            }
        }
        let snap = load_snapshot(dir, None)?;
        Ok(Index {
            dir: dir.to_path_buf(),
            analyzer,
            current: RwLock::new(Arc::new(snap)),
            writer: Mutex::new(()),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The snapshot searches currently see.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn install(&self, snap: Snapshot) -> Arc<Snapshot> {
        let snap = Arc::new(snap);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = snap.clone();
        snap
    }

    /// Picks up a newer manifest; true if the snapshot changed.
    pub fn reload(&self) -> Result<bool> {
        let cur = self.snapshot();
        if Manifest::read(&self.dir)? == cur.manifest {
            return Ok(false);
        }
        let snap = load_snapshot(&self.dir, Some(&cur))?;
        let changed = snap.manifest != cur.manifest;
        self.install(snap);
        Ok(changed)
    }

    pub fn generation(&self) -> u64 {
        self.snapshot().manifest.generation
    }

    pub fn watermark(&self) -> u64 {
        self.snapshot().manifest.watermark
    }

    pub fn analyzer_id(&self) -> String {
        self.snapshot().manifest.analyzer_id.clone()
    }

    pub fn doc_count(&self) -> u64 {
        self.snapshot().manifest.doc_count
    }

    pub fn segment_count(&self) -> usize {
        self.snapshot().segments.len()
    }

    /// Bytes of every file the current snapshot uses, the manifest included.
    pub fn size_bytes(&self) -> u64 {
        let snap = self.snapshot();
        let manifest = snap.manifest.to_text().map(|t| t.len() as u64).unwrap_or(0);
        let files: u64 = snap
            .segments
            .iter()
            .map(|s| s.reader.file_len() as u64 + s.dead.as_ref().map_or(0, |t| t.file_len()))
            .sum();
        manifest + files
    }

    /// Re-reads every file and checks checksums and structure; returns the problems found.
    /// This is where a segment's checksum is checked (opening reads only its footer and
    /// header, see `format`), so it reads the whole index.
    pub fn verify(&self) -> Vec<String> {
        let m = match Manifest::read(&self.dir) {
            Ok(m) => m,
            Err(e) => return vec![e.to_string()],
        };
        let mut problems = Vec::new();
        for s in &m.segments {
            let path = self.dir.join(&s.file);
            match SegmentReader::open_with(&path, true).and_then(|r| r.check_all().map(|()| r)) {
                Ok(r) if r.doc_count() != s.docs => problems.push(format!(
                    "{} holds {} docs, the manifest says {}",
                    path.display(),
                    r.doc_count(),
                    s.docs
                )),
                Ok(_) => {}
                Err(e) => problems.push(e.to_string()),
            }
            if let Some(t) = &s.tombstones {
                let path = self.dir.join(t);
                match Tombstones::read(&path) {
                    Ok(t) if t.count() != s.deleted || t.doc_count() != s.docs => {
                        problems.push(format!("{} disagrees with the manifest", path.display()))
                    }
                    Ok(_) => {}
                    Err(e) => problems.push(e.to_string()),
                }
            }
        }
        problems
    }
}
