//! Writing to a [`VectorIndex`]: learn-time appends and deletes (side files), the full
//! write of a rebuild, compaction; publishing the meta file and cleaning up.
//!
//! Every write starts from the meta file on disk, writes and fsyncs its data files, then
//! publishes the meta file by atomic rename, and only then deletes side files no state in
//! it names. Replacing `vectors.idx` takes two meta publishes around its rename (the first
//! keeps the old state as `[previous]`, see `meta`), so a crash at any point leaves a
//! state whose files are all on disk. Leftovers are collected by the next write.
//!
//! Side files: the append file holds every append since the last compaction (sorted,
//! rewritten whole on each change) and the tombstone file every dead `vectors.idx`
//! record. Compaction folds both into a new `vectors.idx` once they hold more than
//! [`compaction_threshold`] records, so a learn rewrites at most ~15 MB of side file at
//! 384 dimensions while `vectors.idx` is rewritten about once per 10% of growth.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;

use super::file::{records_to_bytes, RecordWriter};
use super::index::Snapshot;
use super::meta::{
    append_file, format_crc, is_side_or_temp_file, now_iso8601, tombstone_file, Meta, VectorState,
    BASE_FILE,
};
use super::tombstone::tombstones_to_bytes;
use super::{KbidHash, VectorIndex, COMPONENT_BYTES, FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::failpoint;
use crate::format::{create_temp, sync_dir, write_atomic};

/// Side records (appends + tombstones) below which compaction never runs on its own.
const MIN_SIDE_RECORDS: u64 = 1_024;
/// Side records above which compaction always runs.
const MAX_SIDE_RECORDS: u64 = 10_000;

/// Compaction runs when appends + tombstones exceed this: 10% of `vectors.idx`, clamped
/// to [1024, 10 000] records.
pub fn compaction_threshold(record_count: u32) -> u64 {
    (u64::from(record_count) / 10).clamp(MIN_SIDE_RECORDS, MAX_SIDE_RECORDS)
}

/// `vectors.idx` is written in aligned chunks of this size (a multiple of 2 MiB), so that
/// the page cache can hold it in huge folios that readers map with huge pages (see
/// `file::prefer_huge_pages`).
const WRITE_CHUNK_BYTES: usize = 4 << 20;

/// A fully written, fsynced `vectors.idx` under a temporary name; [`Staged::publish`]
/// renames it into place, dropping it unpublished removes it.
pub struct Staged {
    tmp: PathBuf,
    target: PathBuf,
    checksum: u32,
    published: bool,
}

/// Writes to `file` in chunks of exactly [`WRITE_CHUNK_BYTES`] (the last one shorter), so
/// every write starts at an aligned offset (also used for `vectors.q8`).
pub(super) struct ChunkWriter {
    pub(super) file: File,
    buf: Vec<u8>,
}

impl ChunkWriter {
    pub(super) fn new(file: File) -> ChunkWriter {
        ChunkWriter {
            file,
            buf: Vec::with_capacity(WRITE_CHUNK_BYTES),
        }
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let n = data.len().min(WRITE_CHUNK_BYTES - self.buf.len());
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == WRITE_CHUNK_BYTES {
            self.file.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }
}

impl Staged {
    /// Streams `records` (ascending kbids, `count` of them) into a temporary file in `dir`.
    pub fn write<'a>(
        dir: &Path,
        dimensions: u16,
        count: u32,
        records: impl Iterator<Item = (&'a KbidHash, &'a [u8])>,
    ) -> Result<Staged> {
        let target = dir.join(BASE_FILE);
        let (tmp, file) = create_temp(&target)?;
        let mut staged = Staged {
            tmp,
            target,
            checksum: 0,
            published: false,
        };
        let mut w = RecordWriter::new(ChunkWriter::new(file), &staged.target, dimensions, count)?;
        for (k, v) in records {
            w.push(k, v)?;
        }
        let (mut chunks, crc) = w.finish()?;
        chunks.flush().map_err(|e| Error::io(&staged.tmp, e))?;
        chunks
            .file
            .sync_all()
            .map_err(|e| Error::io(&staged.tmp, e))?;
        staged.checksum = crc;
        Ok(staged)
    }

    pub fn checksum(&self) -> u32 {
        self.checksum
    }

    /// Renames the file over `vectors.idx` and fsyncs the directory.
    pub fn publish(mut self) -> Result<()> {
        failpoint::hit("write.before_rename");
        crate::format::remove_squatting_dir(&self.target)?;
        fs::rename(&self.tmp, &self.target).map_err(|e| Error::io(&self.target, e))?;
        self.published = true;
        failpoint::hit("write.after_rename");
        sync_dir(self.target.parent().unwrap_or(Path::new(".")))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

fn check_watermark(w: u64) -> Result<()> {
    if w > i64::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "watermark {w} is larger than 2^63 - 1"
        )));
    }
    Ok(())
}

/// Checks `vectors` holds `n` finite vectors of `dims` components; returns the record size
/// in bytes of one vector.
fn check_vectors(n: usize, vectors: &[u8], dims: usize) -> Result<usize> {
    let len = dims * COMPONENT_BYTES;
    if vectors.len() != n * len {
        return Err(Error::InvalidArgument(format!(
            "{n} kbids need {} bytes of float32 vectors ({dims} dimensions), got {}",
            n * len,
            vectors.len()
        )));
    }
    let bad = vectors
        .chunks_exact(COMPONENT_BYTES)
        .position(|c| !f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_finite());
    if let Some(p) = bad {
        return Err(Error::InvalidArgument(format!(
            "vector {} has a NaN or infinite component",
            p / dims
        )));
    }
    Ok(len)
}

/// Indices of `kbids` in ascending kbid order; a kbid given twice is an error.
fn sorted_order(kbids: &[KbidHash]) -> Result<Vec<usize>> {
    let mut order: Vec<usize> = (0..kbids.len()).collect();
    order.sort_unstable_by_key(|&i| kbids[i]);
    if let Some(w) = order.windows(2).find(|w| kbids[w[0]] == kbids[w[1]]) {
        return Err(Error::InvalidArgument(format!(
            "kbid {} is given twice",
            crate::lexical::format_kbid(&kbids[w[0]])
        )));
    }
    Ok(order)
}

fn next_generation(meta: &Meta) -> u64 {
    meta.vectors
        .generation
        .max(meta.previous.as_ref().map_or(0, |p| p.generation))
        + 1
}

/// Deletes side and temporary files `meta` does not name (best effort).
fn cleanup(dir: &Path, meta: &Meta) {
    let keep: HashSet<&str> = std::iter::once(&meta.vectors)
        .chain(&meta.previous)
        .flat_map(|s| s.side_files())
        .collect();
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if is_side_or_temp_file(&name) && !keep.contains(name.as_str()) {
            crate::format::remove_entry(&e.path());
        }
    }
}

/// Publishes `state` as the new `vectors.idx` (`staged`) with the two-step protocol.
fn publish_base(
    dir: &Path,
    staged: Staged,
    state: VectorState,
    old: Option<VectorState>,
) -> Result<Meta> {
    if let Some(old) = old {
        Meta {
            vectors: state.clone(),
            previous: Some(old),
        }
        .write(dir)?;
    }
    staged.publish()?;
    let meta = Meta {
        vectors: state,
        previous: None,
    };
    meta.write(dir)?;
    cleanup(dir, &meta);
    Ok(meta)
}

/// An empty index over whatever is in `dir` (`OpenMode::Reset`).
pub(super) fn publish_reset(dir: &Path, model_name: &str, dimensions: u16) -> Result<()> {
    let old = Meta::read(dir).ok().map(|(m, _)| m);
    let staged = Staged::write(dir, dimensions, 0, std::iter::empty())?;
    let mut state = VectorState::empty(model_name, dimensions, staged.checksum());
    state.generation = old.as_ref().map_or(1, next_generation);
    publish_base(dir, staged, state, None)?;
    super::q8::remove(dir);
    Ok(())
}

impl VectorIndex {
    /// The state on disk, reusing this object's maps where the files are unchanged.
    fn fresh(&self) -> Result<Snapshot> {
        self.load(Some(&self.snapshot()))
    }

    /// Builds `vectors.q8` for the installed snapshot's `vectors.idx` when the quantized
    /// scan is on and it is missing or stale; true if it built one. The caller holds the
    /// writer lock.
    fn sync_q8_locked(&self) -> Result<bool> {
        let snap = self.snapshot();
        if !self.quantized() || snap.q8.is_some() {
            return Ok(false);
        }
        super::q8::build(&self.dir, &snap.base)?;
        let mut fresh = (*snap).clone();
        self.attach_q8(&mut fresh, None)?;
        self.install(fresh);
        Ok(true)
    }

    /// After `vectors.idx` was replaced: a new `vectors.q8` when the quantized scan is
    /// on, else the old one is removed (it mirrors a `vectors.idx` that is gone).
    fn after_base_replaced(&self) -> Result<()> {
        if self.quantized() {
            self.sync_q8_locked().map(drop)
        } else {
            super::q8::remove(&self.dir);
            Ok(())
        }
    }

    /// Builds `vectors.q8` now if the quantized scan is on and it is missing or stale
    /// (turning the option on for an existing index); true if it built one.
    pub fn ensure_quantized(&self) -> Result<bool> {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.install(self.fresh()?);
        self.sync_q8_locked()
    }

    /// Learn-time additions: `vectors` holds `kbids.len()` vectors of `dimensions`
    /// little-endian f32s. An added kbid replaces its older vector. Publishes the meta
    /// file with `watermark`, then compacts if the side files passed the threshold.
    pub fn append(&self, kbids: &[KbidHash], vectors: &[u8], watermark: u64) -> Result<()> {
        check_watermark(watermark)?;
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let cur = self.fresh()?;
        let dims = usize::from(cur.state.dimensions);
        let len = check_vectors(kbids.len(), vectors, dims)?;
        let order = sorted_order(kbids)?;
        let new: Vec<(KbidHash, &[u8])> = order
            .iter()
            .map(|&i| (kbids[i], &vectors[i * len..(i + 1) * len]))
            .collect();
        let appends = merge_appends(&cur, &new);
        let mut tombs: Vec<KbidHash> = cur.tombstones.to_vec();
        tombs.extend(
            new.iter()
                .map(|(k, _)| *k)
                .filter(|k| cur.base.find(k).is_some()),
        );
        self.publish_side(&cur, appends, tombs, watermark)
    }

    /// Learn-time deletions: the vectors of `kbids` stop being live (unknown kbids are
    /// ignored). Publishes with `watermark`, then compacts past the threshold.
    pub fn delete(&self, kbids: &[KbidHash], watermark: u64) -> Result<()> {
        check_watermark(watermark)?;
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let cur = self.fresh()?;
        let gone: HashSet<&KbidHash> = kbids.iter().collect();
        let appends: Vec<(KbidHash, &[u8])> = side_records(&cur)
            .into_iter()
            .filter(|(k, _)| !gone.contains(k))
            .collect();
        let mut tombs: Vec<KbidHash> = cur.tombstones.to_vec();
        tombs.extend(kbids.iter().filter(|k| cur.base.find(k).is_some()));
        self.publish_side(&cur, appends, tombs, watermark)
    }

    fn publish_side(
        &self,
        cur: &Snapshot,
        appends: Vec<(KbidHash, &[u8])>,
        mut tombs: Vec<KbidHash>,
        watermark: u64,
    ) -> Result<()> {
        tombs.sort_unstable();
        tombs.dedup();
        let generation = next_generation(&cur.meta);
        let mut state = cur.state.clone();
        state.generation = generation;
        state.watermark = watermark;
        let same_appends = appends.len() == side_records(cur).len()
            && appends
                .iter()
                .zip(side_records(cur))
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1);
        if !same_appends {
            if appends.is_empty() {
                state.appends = None;
                state.append_checksum = None;
            } else {
                let (bytes, crc) = records_to_bytes(cur.state.dimensions, &appends)?;
                let name = append_file(generation);
                write_atomic(&self.dir.join(&name), &bytes)?;
                state.appends = Some(name);
                state.append_checksum = Some(format_crc(crc));
            }
            state.append_count = appends.len() as u32;
        }
        if tombs.as_slice() != cur.tombstones.as_slice() {
            if tombs.is_empty() {
                state.tombstones = None;
            } else {
                let name = tombstone_file(generation);
                write_atomic(&self.dir.join(&name), &tombstones_to_bytes(&tombs))?;
                state.tombstones = Some(name);
            }
            state.tombstone_count = tombs.len() as u32;
        }
        state.section_count = u64::from(state.record_count) - u64::from(state.tombstone_count)
            + u64::from(state.append_count);
        let meta = Meta {
            vectors: state,
            previous: None,
        };
        meta.write(&self.dir)?;
        cleanup(&self.dir, &meta);
        let snap = self.load(Some(cur))?;
        let side = u64::from(snap.state.append_count) + u64::from(snap.state.tombstone_count);
        let due = side > compaction_threshold(snap.state.record_count);
        self.install(snap);
        if due {
            self.compact_locked(true)?;
        }
        self.sync_q8_locked().map(drop)
    }

    /// Replaces the whole index (a rebuild): `vectors.idx` sorted from `kbids` and
    /// `vectors` (`dimensions`, default the current ones), no side files, `model_name`,
    /// `watermark`, `last_built` now. Works when the current files are corrupt.
    pub fn write(
        &self,
        kbids: &[KbidHash],
        vectors: &[u8],
        model_name: &str,
        dimensions: Option<u16>,
        watermark: u64,
    ) -> Result<()> {
        check_watermark(watermark)?;
        let dimensions = dimensions.unwrap_or(self.snapshot().state.dimensions);
        if dimensions == 0 {
            return Err(Error::InvalidArgument(
                "dimensions must be at least 1".into(),
            ));
        }
        let count = u32::try_from(kbids.len())
            .map_err(|_| Error::InvalidArgument("more than 2^32 - 1 vectors".into()))?;
        let len = check_vectors(kbids.len(), vectors, usize::from(dimensions))?;
        let order = sorted_order(kbids)?;
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let old_meta = Meta::read(&self.dir).ok().map(|(m, _)| m);
        let old_state = self.fresh().ok().map(|s| s.state.clone());
        let records = order
            .iter()
            .map(|&i| (&kbids[i], &vectors[i * len..(i + 1) * len]));
        let staged = Staged::write(&self.dir, dimensions, count, records)?;
        let state = VectorState {
            model_name: model_name.to_string(),
            dimensions,
            version: FORMAT_VERSION,
            last_built: now_iso8601(),
            section_count: u64::from(count),
            checksum: format_crc(staged.checksum()),
            record_count: count,
            watermark,
            generation: old_meta.as_ref().map_or(1, next_generation),
            appends: None,
            append_count: 0,
            append_checksum: None,
            tombstones: None,
            tombstone_count: 0,
        };
        publish_base(&self.dir, staged, state, old_state)?;
        // The old vectors.q8 mirrors the replaced vectors.idx (and may be what a rebuild
        // is repairing): gone before the new snapshot looks for one.
        super::q8::remove(&self.dir);
        self.install(self.load(None)?);
        self.after_base_replaced()
    }

    /// Folds the side files into a new `vectors.idx` when they passed the threshold, or
    /// whenever there are any with `force`. True if it compacted. Search results are the
    /// same before and after.
    pub fn compact(&self, force: bool) -> Result<bool> {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.compact_locked(force)
    }

    fn compact_locked(&self, force: bool) -> Result<bool> {
        let cur = self.fresh()?;
        let side = u64::from(cur.state.append_count) + u64::from(cur.state.tombstone_count);
        if side == 0 || (!force && side <= compaction_threshold(cur.state.record_count)) {
            self.install(cur);
            return Ok(false);
        }
        let count = u32::try_from(cur.state.section_count)
            .map_err(|_| Error::InvalidArgument("more than 2^32 - 1 vectors".into()))?;
        let base = (0..cur.base.len())
            .filter(|&i| cur.base_is_live(i))
            .map(|i| (cur.base.kbid(i), cur.base.vector_bytes(i)));
        let appends = side_records(&cur);
        let merged = merge_sorted(base, appends.iter().map(|(k, v)| (k, *v)));
        let staged = Staged::write(&self.dir, cur.state.dimensions, count, merged)?;
        let mut state = cur.state.clone();
        state.checksum = format_crc(staged.checksum());
        state.record_count = count;
        state.generation = next_generation(&cur.meta);
        state.appends = None;
        state.append_count = 0;
        state.append_checksum = None;
        state.tombstones = None;
        state.tombstone_count = 0;
        publish_base(&self.dir, staged, state, Some(cur.state.clone()))?;
        super::q8::remove(&self.dir);
        self.install(self.load(Some(&cur))?);
        self.after_base_replaced()?;
        Ok(true)
    }
}

/// The records of the append file, ascending.
fn side_records(snap: &Snapshot) -> Vec<(KbidHash, &[u8])> {
    snap.appends.as_ref().map_or_else(Vec::new, |a| {
        (0..a.len())
            .map(|i| (*a.kbid(i), a.vector_bytes(i)))
            .collect()
    })
}

/// The current appends with `new` (ascending, distinct) merged in; `new` wins on ties.
fn merge_appends<'a>(
    snap: &'a Snapshot,
    new: &[(KbidHash, &'a [u8])],
) -> Vec<(KbidHash, &'a [u8])> {
    let old = side_records(snap);
    let mut out = Vec::with_capacity(old.len() + new.len());
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let take_new = j < new.len() && (i == old.len() || new[j].0 <= old[i].0);
        if take_new {
            if i < old.len() && old[i].0 == new[j].0 {
                i += 1;
            }
            out.push(new[j]);
            j += 1;
        } else {
            out.push(old[i]);
            i += 1;
        }
    }
    out
}

/// Merges two ascending record streams with distinct keys.
fn merge_sorted<'a>(
    a: impl Iterator<Item = (&'a KbidHash, &'a [u8])>,
    b: impl Iterator<Item = (&'a KbidHash, &'a [u8])>,
) -> impl Iterator<Item = (&'a KbidHash, &'a [u8])> {
    let mut a = a.peekable();
    let mut b = b.peekable();
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) => {
            if x.0 <= y.0 {
                a.next()
            } else {
                b.next()
            }
        }
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_is_clamped() {
        assert_eq!(compaction_threshold(0), 1_024);
        assert_eq!(compaction_threshold(50_000), 5_000);
        assert_eq!(compaction_threshold(4_000_000), 10_000);
    }

    #[test]
    fn chunk_writer_writes_every_byte_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut w = ChunkWriter {
            file: File::create(&path).unwrap(),
            buf: Vec::with_capacity(WRITE_CHUNK_BYTES),
        };
        let piece: Vec<u8> = (0..1_552u32).map(|i| (i % 251) as u8).collect();
        let mut want = Vec::new();
        for _ in 0..(WRITE_CHUNK_BYTES * 2 / piece.len() + 3) {
            w.write_all(&piece).unwrap();
            want.extend_from_slice(&piece);
        }
        w.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), want);
    }

    #[test]
    fn merges_keep_order() {
        let v: &[u8] = &[];
        let a = [[1u8; 16], [4; 16]];
        let b = [[2u8; 16], [3; 16], [9; 16]];
        let got: Vec<u8> = merge_sorted(a.iter().map(|k| (k, v)), b.iter().map(|k| (k, v)))
            .map(|(k, _)| k[0])
            .collect();
        assert_eq!(got, vec![1, 2, 3, 4, 9]);
    }
}
