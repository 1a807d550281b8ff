//! [`VectorIndex`]: the vector index of one directory, and its snapshots. Writing lives in
//! `update`, the scan in `scan`.
//!
//! Concurrency: searches clone the current `Arc<Snapshot>` and run without locks; a
//! snapshot's maps stay valid after a writer unlinks or replaces the files. Writers are
//! serialized by the caller across processes (kbdb's write lock) and by a mutex within one
//! process; every write starts from the meta file on disk, so a stale `VectorIndex` never
//! overwrites another process's publish.
//!
//! Loading a snapshot: read the meta file; open the state in `[vectors]`, or, when
//! `vectors.idx` on disk is the one `[previous]` describes (a write between its two
//! renames), that one. If a file is missing or `vectors.idx` matches neither, re-read the
//! meta file: if it changed, a writer published in between and we retry; if not, the index
//! is corrupt.
//!
//! Cost: an ordinary open checks `vectors.idx` at [`Check::Bounded`] depth (header, counts,
//! size: one page), not its checksum or key order, so it does not read the file (1.5 GB at
//! 1M sections). The append file is small (compaction keeps it under 10,000 records) and is
//! always checked in full. Two cases still need the checksum and get [`Check::Full`]: a meta file with
//! `[previous]`, where the checksum is what tells the old `vectors.idx` from the new; and
//! `verify`. Without the checksum, a `vectors.idx` renamed in by a writer after we read the
//! meta file could pass for the one the meta file describes, so after opening, the meta
//! file is read again and the open retried if it changed (a writer publishes the meta file
//! with `[previous]` before it renames `vectors.idx`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::file::{Check, RecordWriter, VectorReader};
use super::filter::Bitset;
use super::meta::{Meta, VectorState, BASE_FILE, META_FILE};
use super::q8::{self, Q8Open, Q8Reader, Q8_FILE};
use super::scan::{scan_many, Part, Threads};
use super::tombstone::read_tombstones;
use super::{KbidHash, Score};
use crate::error::{Error, Result};
use crate::format::{write_atomic, write_new_atomic};

/// Queries scored together in one pass over the files by [`Snapshot::search_many`]: 16
/// at 384 dimensions are 24 KiB of f32, which stay in L1 beside the record being scored.
/// Past a few queries a pass is compute-bound (one dot product per record and query), so
/// more queries per pass would save no time, only evict them from L1.
pub const MAX_QUERIES_PER_PASS: usize = 16;

/// How often a reader re-reads the meta file after a concurrent publish moved files under
/// it, before giving up.
const OPEN_ATTEMPTS: usize = 8;

/// Everything one state of the meta file names, opened and cross-checked.
#[derive(Clone)]
pub struct Snapshot {
    /// The meta file as read (both tables).
    pub meta: Meta,
    meta_bytes: Vec<u8>,
    /// The state in effect (`meta.vectors`, or `meta.previous` mid-write).
    pub state: VectorState,
    pub base: Arc<VectorReader>,
    pub appends: Option<Arc<VectorReader>>,
    pub tombstones: Arc<Vec<KbidHash>>,
    /// Live records of `vectors.idx`; `None` when nothing is tombstoned.
    base_live: Option<Arc<Bitset>>,
    /// The quantized copy of `base`, when the quantized scan is on and `vectors.q8` is
    /// current (built from this `vectors.idx`).
    pub q8: Option<Arc<Q8Reader>>,
    /// Identity of the `vectors.q8` last examined (see [`q8_fingerprint`]), so that a
    /// missing or stale one is not re-validated on every reload.
    q8_seen: Option<Fingerprint>,
}

/// What `vectors.q8` holds relative to the current `vectors.idx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Q8Status {
    /// Built from the current `vectors.idx`: scanned when the quantized scan is on.
    Current,
    /// Built from another `vectors.idx`: ignored, replaced at the next write.
    Stale,
    /// No file.
    Missing,
}

impl Q8Status {
    pub fn name(self) -> &'static str {
        match self {
            Q8Status::Current => "current",
            Q8Status::Stale => "stale",
            Q8Status::Missing => "missing",
        }
    }
}

/// (length, modification time, inode) of a file: enough to notice a replacement.
type Fingerprint = (u64, Option<std::time::SystemTime>, u64);

fn q8_fingerprint(dir: &Path) -> Option<Fingerprint> {
    let m = std::fs::metadata(dir.join(Q8_FILE)).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.len(), m.modified().ok(), ino))
}

/// Opens `dir/vectors.q8` against `base`: `Ok(None)` when missing or stale, an error when
/// corrupt.
fn open_q8(dir: &Path, base: &super::file::VectorReader) -> Result<(Q8Status, Option<Q8Reader>)> {
    match Q8Reader::open(&dir.join(Q8_FILE), base) {
        Ok(Q8Open::Current(r)) => Ok((Q8Status::Current, Some(r))),
        Ok(Q8Open::Stale { .. }) => Ok((Q8Status::Stale, None)),
        Err(e) if is_not_found(&e) => Ok((Q8Status::Missing, None)),
        Err(e) => Err(e),
    }
}

fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
}

fn open_state(
    dir: &Path,
    state: &VectorState,
    prev: Option<&Snapshot>,
    check: Check,
) -> Result<Snapshot> {
    let meta_path = dir.join(META_FILE);
    let base = match prev.filter(|p| p.state.expected_base() == state.expected_base()) {
        Some(p) => p.base.clone(),
        None => Arc::new(VectorReader::open_with(
            &dir.join(BASE_FILE),
            &state.expected_base(),
            check,
        )?),
    };
    let appends = match state.expected_appends() {
        None => None,
        Some((name, expect)) => Some(
            match prev.and_then(|p| {
                (p.state.appends.as_deref() == Some(name)
                    && p.state.append_checksum == state.append_checksum)
                    .then(|| p.appends.clone())
                    .flatten()
            }) {
                Some(a) => a,
                // Fully checked at any depth: compaction keeps it under 10,000 records.
                None => Arc::new(VectorReader::open(&dir.join(name), &expect)?),
            },
        ),
    };
    let tombstones = match &state.tombstones {
        None => Arc::new(Vec::new()),
        Some(name) => match prev.filter(|p| p.state.tombstones.as_ref() == Some(name)) {
            Some(p) => p.tombstones.clone(),
            None => Arc::new(read_tombstones(&dir.join(name))?),
        },
    };
    if tombstones.len() != state.tombstone_count as usize {
        return Err(Error::corrupt(
            &meta_path,
            format!(
                "the tombstone file holds {} kbids, the meta file says {}",
                tombstones.len(),
                state.tombstone_count
            ),
        ));
    }
    let base_live = if tombstones.is_empty() {
        None
    } else {
        let mut live = Bitset::full(base.len());
        for t in tombstones.iter() {
            let i = base.find(t).ok_or_else(|| {
                Error::corrupt(
                    &meta_path,
                    "a tombstone names a kbid absent from vectors.idx",
                )
            })?;
            live.remove(i);
        }
        Some(Arc::new(live))
    };
    if let Some(a) = &appends {
        for i in 0..a.len() {
            let live_in_base = base
                .find(a.kbid(i))
                .is_some_and(|j| base_live.as_ref().is_none_or(|l| l.contains(j)));
            if live_in_base {
                return Err(Error::corrupt(
                    &meta_path,
                    "an appended kbid is also live in vectors.idx",
                ));
            }
        }
    }
    Ok(Snapshot {
        meta: Meta {
            vectors: state.clone(),
            previous: None,
        },
        meta_bytes: Vec::new(),
        state: state.clone(),
        base,
        appends,
        tombstones,
        base_live,
        q8: None,
        q8_seen: None,
    })
}

fn open_meta(dir: &Path, meta: &Meta, prev: Option<&Snapshot>) -> Result<Snapshot> {
    // Only the checksum tells which state the `vectors.idx` on disk is mid-write.
    let check = match meta.previous {
        Some(_) => Check::Full,
        None => Check::Bounded,
    };
    match open_state(dir, &meta.vectors, prev, check) {
        Ok(s) => Ok(s),
        Err(first) => match &meta.previous {
            Some(old) => open_state(dir, old, prev, check).map_err(|_| first),
            None => Err(first),
        },
    }
}

/// Whether the meta file still holds `bytes`.
fn meta_unchanged(dir: &Path, bytes: &[u8]) -> bool {
    std::fs::read(dir.join(META_FILE)).is_ok_and(|now| now == bytes)
}

/// Reads the meta file and opens what it names, retrying while concurrent publishes move
/// files under us (see the module docs).
pub(super) fn load_snapshot(dir: &Path, prev: Option<&Snapshot>) -> Result<Snapshot> {
    let mut last_bytes: Option<Vec<u8>> = None;
    let mut last_err = None;
    for _ in 0..OPEN_ATTEMPTS {
        let (meta, bytes) = Meta::read(dir)?;
        if last_bytes.as_ref() == Some(&bytes) {
            break;
        }
        match open_meta(dir, &meta, prev) {
            Ok(_) if meta.previous.is_none() && !meta_unchanged(dir, &bytes) => {
                // A writer published since we read the meta file (module docs): again.
                last_err = None;
            }
            Ok(mut snap) => {
                snap.meta = meta;
                snap.meta_bytes = bytes;
                return Ok(snap);
            }
            Err(e @ (Error::Corrupt { .. } | Error::FormatVersion { .. })) => last_err = Some(e),
            Err(e) if is_not_found(&e) => last_err = Some(e),
            Err(e) => return Err(e),
        }
        last_bytes = Some(bytes);
    }
    match last_err {
        Some(e) if is_not_found(&e) => Err(Error::corrupt(
            dir.join(META_FILE),
            format!("a listed file is missing: {e}"),
        )),
        Some(e) => Err(e),
        None => Err(Error::corrupt(dir.join(META_FILE), "could not be opened")),
    }
}

impl Snapshot {
    /// Whether record `i` of `vectors.idx` is live.
    pub fn base_is_live(&self, i: usize) -> bool {
        self.base_live.as_ref().is_none_or(|l| l.contains(i))
    }

    /// The stored little-endian f32 bytes of a live `kbid`.
    pub fn lookup(&self, kbid: &KbidHash) -> Option<&[u8]> {
        if let Some(a) = &self.appends {
            if let Some(i) = a.find(kbid) {
                return Some(a.vector_bytes(i));
            }
        }
        let i = self.base.find(kbid)?;
        self.base_is_live(i).then(|| self.base.vector_bytes(i))
    }

    /// Every live kbid, ascending.
    pub fn kbids(&self) -> Vec<KbidHash> {
        let mut out: Vec<KbidHash> = (0..self.base.len())
            .filter(|&i| self.base_is_live(i))
            .map(|i| *self.base.kbid(i))
            .collect();
        if let Some(a) = &self.appends {
            out.extend((0..a.len()).map(|i| *a.kbid(i)));
            out.sort_unstable();
        }
        out
    }

    /// Live vectors.
    pub fn count(&self) -> u64 {
        self.state.section_count
    }

    /// The best `limit` live records for `query`, restricted to `allow` when given:
    /// through `vectors.q8` when this snapshot has one, else the exact f32 scan.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        allow: Option<&[KbidHash]>,
        threads: Threads,
    ) -> Result<Vec<(KbidHash, Score)>> {
        self.search_with(query, limit, allow, threads, false, None)
    }

    /// [`Snapshot::search`], with `exact` forcing the f32 scan even when a q8 copy is
    /// attached, and `candidates` overriding how many q8 candidates are rescored
    /// (default [`q8::candidates`]`(limit)`); for benchmarks and tests.
    pub fn search_with(
        &self,
        query: &[f32],
        limit: usize,
        allow: Option<&[KbidHash]>,
        threads: Threads,
        exact: bool,
        candidates: Option<usize>,
    ) -> Result<Vec<(KbidHash, Score)>> {
        let mut out = self.search_many(&[query], limit, allow, threads, exact, candidates)?;
        Ok(out.pop().unwrap_or_default())
    }

    /// [`Snapshot::search_with`] for several queries in one pass over the files: element
    /// `i` is exactly `search_with(queries[i], ..)` (scores bit for bit, ties by kbid),
    /// but every stored vector is read once for up to [`MAX_QUERIES_PER_PASS`] queries
    /// (see [`super::scan_many`]). Every query is checked as in `search_with` before any
    /// scan.
    pub fn search_many(
        &self,
        queries: &[&[f32]],
        limit: usize,
        allow: Option<&[KbidHash]>,
        threads: Threads,
        exact: bool,
        candidates: Option<usize>,
    ) -> Result<Vec<Vec<(KbidHash, Score)>>> {
        let dims = usize::from(self.state.dimensions);
        for query in queries {
            if query.len() != dims {
                return Err(Error::DimensionMismatch {
                    expected: dims,
                    found: query.len(),
                });
            }
            if query.iter().any(|x| !x.is_finite()) {
                return Err(Error::InvalidArgument(
                    "the query vector has a NaN or infinite component".into(),
                ));
            }
        }
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let (base_filter, append_filter) = match allow {
            None => (None, None),
            Some(allow) => {
                let mut b = Bitset::new(self.base.len());
                let mut a = Bitset::new(self.appends.as_ref().map_or(0, |a| a.len()));
                for k in allow {
                    if let Some(i) = self.appends.as_ref().and_then(|ap| ap.find(k)) {
                        a.insert(i);
                    } else if let Some(i) = self.base.find(k).filter(|&i| self.base_is_live(i)) {
                        b.insert(i);
                    }
                }
                (Some(b), Some(a))
            }
        };
        let base_part = Part {
            reader: &self.base,
            filter: base_filter.as_ref().or(self.base_live.as_deref()),
        };
        let append_part = self.appends.as_deref().map(|a| Part {
            reader: a,
            filter: append_filter.as_ref(),
        });
        let parts: Vec<Part<'_>> = std::iter::once(base_part).chain(append_part).collect();
        let q8 = self.q8.as_deref().filter(|_| !exact);
        let n = candidates.unwrap_or_else(|| q8::candidates(limit));
        let pass = |group: &[&[f32]]| match q8 {
            Some(q8) => q8::search_quantized_many(
                &self.base,
                q8,
                base_part.filter,
                append_part,
                group,
                limit,
                n,
                threads,
            ),
            None => scan_many(&parts, group, limit, threads),
        };
        Ok(queries
            .chunks(MAX_QUERIES_PER_PASS)
            .flat_map(pass)
            .collect())
    }

    /// Reads every record byte once (see [`super::stream_read`]).
    pub fn stream_read(&self, threads: Threads) -> u64 {
        let mut regions = vec![self.base.records()];
        regions.extend(self.appends.as_ref().map(|a| a.records()));
        super::scan::stream_read(&regions, threads)
    }

    /// Bytes of the files this snapshot uses, the meta file included.
    pub fn size_bytes(&self) -> u64 {
        let tomb = if self.tombstones.is_empty() {
            0
        } else {
            4 + 16 * self.tombstones.len() as u64 + crate::format::FOOTER_LEN as u64
        };
        self.meta_bytes.len() as u64
            + self.base.file_len() as u64
            + self.appends.as_ref().map_or(0, |a| a.file_len() as u64)
            + self.q8.as_ref().map_or(0, |q| q.file_len() as u64)
            + tomb
    }
}

/// The vector index in one directory.
pub struct VectorIndex {
    pub(super) dir: PathBuf,
    current: RwLock<Arc<Snapshot>>,
    /// Serializes writers within this process (the caller serializes processes).
    pub(super) writer: Mutex<()>,
    /// Whether searches use `vectors.q8` and writes keep it (`quantized_scan`).
    quantized: AtomicBool,
}

/// What `open` does when the meta file is missing or broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenMode {
    /// Fail with `Io` (not found) or `Corrupt`.
    Existing,
    /// Create an empty index of this model and dimensions when the meta file is missing.
    Create { model_name: String, dimensions: u16 },
    /// Publish an empty index over whatever is there (the caller holds the write lock).
    Reset { model_name: String, dimensions: u16 },
}

fn empty_base_bytes(dimensions: u16) -> Result<(Vec<u8>, u32)> {
    let w = RecordWriter::new(Vec::new(), Path::new(BASE_FILE), dimensions, 0)?;
    w.finish()
}

impl VectorIndex {
    /// Opens the vector index in `dir` (see [`OpenMode`]).
    pub fn open(dir: &Path, mode: OpenMode) -> Result<VectorIndex> {
        let meta_path = dir.join(META_FILE);
        match &mode {
            OpenMode::Existing => {}
            OpenMode::Create {
                model_name,
                dimensions,
            } => {
                if !meta_path.exists() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                    let (bytes, crc) = empty_base_bytes(*dimensions)?;
                    // Racing creators write identical bytes here (same configuration).
                    write_atomic(&dir.join(BASE_FILE), &bytes)?;
                    let meta = Meta {
                        vectors: VectorState::empty(model_name, *dimensions, crc),
                        previous: None,
                    };
                    match write_new_atomic(&meta_path, meta.to_text()?.as_bytes()) {
                        Err(Error::Io { source, .. })
                            if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                        other => other?,
                    }
                }
            }
            OpenMode::Reset {
                model_name,
                dimensions,
            } => {
                std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                super::update::publish_reset(dir, model_name, *dimensions)?;
            }
        }
        let snap = load_snapshot(dir, None)?;
        Ok(VectorIndex {
            dir: dir.to_path_buf(),
            current: RwLock::new(Arc::new(snap)),
            writer: Mutex::new(()),
            quantized: AtomicBool::new(false),
        })
    }

    /// Whether the quantized scan is on.
    pub fn quantized(&self) -> bool {
        self.quantized.load(Ordering::Relaxed)
    }

    /// Turns the quantized scan on or off for this object. On: searches use
    /// `vectors.q8` when it is current (an error if it is corrupt), else the exact scan,
    /// and every write keeps it current (see `update`). Off: searches scan f32 only.
    pub fn set_quantized(&self, on: bool) -> Result<()> {
        self.quantized.store(on, Ordering::Relaxed);
        let cur = self.snapshot();
        let mut snap = (*cur).clone();
        snap.q8 = None;
        snap.q8_seen = None;
        if on {
            self.attach_q8(&mut snap, None)?;
        }
        self.install(snap);
        Ok(())
    }

    /// Attaches `vectors.q8` to `snap` when the quantized scan is on and it is current,
    /// reusing `prev`'s map when it mirrors the same `vectors.idx`.
    pub(super) fn attach_q8(&self, snap: &mut Snapshot, prev: Option<&Snapshot>) -> Result<()> {
        if !self.quantized() {
            return Ok(());
        }
        let crc = snap.base.checksum();
        let fp = q8_fingerprint(&self.dir);
        if let Some(p) = prev.filter(|p| p.base.checksum() == crc && p.q8_seen == fp) {
            snap.q8 = p.q8.clone();
            snap.q8_seen = p.q8_seen;
            return Ok(());
        }
        let (_, reader) = open_q8(&self.dir, &snap.base)?;
        snap.q8 = reader.map(Arc::new);
        snap.q8_seen = fp;
        Ok(())
    }

    /// The state on disk (see [`load_snapshot`]), with `vectors.q8` attached when on.
    pub(super) fn load(&self, prev: Option<&Snapshot>) -> Result<Snapshot> {
        let mut snap = load_snapshot(&self.dir, prev)?;
        self.attach_q8(&mut snap, prev)?;
        Ok(snap)
    }

    /// What `vectors.q8` on disk is for the current `vectors.idx` (validated; an error
    /// when it is corrupt).
    pub fn q8_status(&self) -> Result<Q8Status> {
        let snap = self.snapshot();
        Ok(open_q8(&self.dir, &snap.base)?.0)
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

    pub(super) fn install(&self, snap: Snapshot) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(snap);
    }

    /// Picks up a newer meta file; true if the snapshot changed.
    pub fn reload(&self) -> Result<bool> {
        let cur = self.snapshot();
        let path = self.dir.join(META_FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::read(&path, e))?;
        if bytes == cur.meta_bytes {
            // Another process may have built (or replaced) vectors.q8 meanwhile.
            if self.quantized() && cur.q8_seen != q8_fingerprint(&self.dir) {
                let mut snap = (*cur).clone();
                self.attach_q8(&mut snap, None)?;
                let changed = snap.q8.is_some() != cur.q8.is_some();
                self.install(snap);
                return Ok(changed);
            }
            return Ok(false);
        }
        let snap = self.load(Some(&cur))?;
        let changed = snap.meta_bytes != cur.meta_bytes;
        self.install(snap);
        Ok(changed)
    }

    /// Re-reads every file from disk (not this object's snapshot) and checks checksums,
    /// order, counts and values; returns the problems found (empty when sound).
    pub fn verify(&self) -> Vec<String> {
        let snap = match load_snapshot(&self.dir, None) {
            Ok(s) => s,
            Err(e) => return vec![e.to_string()],
        };
        let mut problems = Vec::new();
        for r in std::iter::once(&snap.base).chain(&snap.appends) {
            if let Err(e) = r.verify() {
                problems.push(e.to_string());
                continue;
            }
            let bad = (0..r.len()).find(|&i| {
                super::le_bytes_to_f32s(r.vector_bytes(i))
                    .iter()
                    .any(|x| !x.is_finite())
            });
            if let Some(i) = bad {
                problems.push(format!(
                    "{}: record {i} has a NaN or infinite component",
                    r.path().display()
                ));
            }
        }
        // vectors.q8 is checked whenever it exists: a stale one is not a problem (it is
        // ignored and replaced), a damaged one is.
        if let Err(e) = open_q8(&self.dir, &snap.base) {
            problems.push(e.to_string());
        }
        problems
    }
}
