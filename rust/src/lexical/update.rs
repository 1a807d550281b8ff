//! Writing to an [`Index`]: commit, rebuild, merge; publishing manifests and cleaning up.
//!
//! Every write starts from the manifest on disk (not the in-memory snapshot), writes and
//! fsyncs its data files, publishes the next generation's manifest by atomic rename, and
//! only then deletes files that manifest no longer names. A crash at any point leaves the
//! previous manifest and all its files intact; leftovers are collected by the next write.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use super::index::{load_snapshot, LoadedSegment, Snapshot};
use super::manifest::{is_engine_file, parse_segment_file, segment_file, tombstone_file};
use super::merge::{merge_segments, plan, MergeSource};
use super::{
    build_segment, format_kbid, Doc, Index, Kbid, Manifest, SegmentMeta, SegmentReader, Tombstones,
};
use crate::error::{Error, Result};
use crate::format::write_atomic;
use crate::text::Language;

fn check_unique(docs: &[Doc]) -> Result<()> {
    let mut seen = HashSet::with_capacity(docs.len());
    for d in docs {
        if !seen.insert(d.kbid) {
            return Err(Error::InvalidArgument(format!(
                "kbid {} is added twice",
                format_kbid(&d.kbid)
            )));
        }
    }
    Ok(())
}

fn check_watermark(w: u64) -> Result<()> {
    if w > i64::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "watermark {w} is larger than 2^63 - 1"
        )));
    }
    Ok(())
}

/// An empty manifest that continues the generation and segment numbering of whatever is
/// in `dir` (readable manifest or not), so no old file name is ever reused.
fn fresh_manifest(dir: &Path, analyzer_id: &str) -> Manifest {
    let old = Manifest::read(dir).ok();
    let mut next_id = old.as_ref().map_or(0, |m| m.next_segment_id);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if let Some(id) = parse_segment_file(&e.file_name().to_string_lossy()) {
                next_id = next_id.max(id + 1);
            }
        }
    }
    let mut m = Manifest::empty(analyzer_id);
    m.generation = old.map_or(1, |o| o.generation + 1);
    m.next_segment_id = next_id;
    m
}

/// Deletes engine files `m` no longer names (best effort: a failure only leaves garbage
/// for the next cleanup). Never touches other files (`vectors.idx`, …).
fn cleanup(dir: &Path, m: &Manifest) {
    let keep: HashSet<&str> = m.files().collect();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if is_engine_file(&name) && !keep.contains(name.as_str()) {
            crate::format::remove_entry(&e.path());
        }
    }
}

impl Index {
    /// Adds `adds` and tombstones `deletes` (and older copies of added kbids), publishes a
    /// manifest with `watermark`, then runs the merge policy. Returns terms per add.
    pub fn commit(&self, adds: &[Doc], deletes: &[Kbid], watermark: u64) -> Result<Vec<u32>> {
        check_watermark(watermark)?;
        check_unique(adds)?;
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let base = self.install(load_snapshot(&self.dir, Some(&self.snapshot()))?);
        if !base.segments.is_empty() && base.manifest.analyzer_id != self.analyzer.id() {
            return Err(Error::InvalidArgument(format!(
                "index {} was built with analyzer '{}', this build uses '{}' (rebuild it)",
                self.dir.display(),
                base.manifest.analyzer_id,
                self.analyzer.id()
            )));
        }
        let mut m = base.manifest.clone();
        m.generation += 1;
        m.watermark = watermark;
        m.analyzer_id = self.analyzer.id().to_string();
        let mut kill: Vec<Kbid> = deletes
            .iter()
            .copied()
            .chain(adds.iter().map(|d| d.kbid))
            .collect();
        kill.sort_unstable();
        kill.dedup();
        let mut segments = Vec::with_capacity(base.segments.len() + 1);
        for seg in &base.segments {
            let mut dead: Option<Tombstones> = None;
            for k in &kill {
                if let Some(ord) = seg.reader.ord_of(k)? {
                    if !seg.dead.as_ref().is_some_and(|t| t.contains(ord)) {
                        let t = dead.get_or_insert_with(|| match &seg.dead {
                            Some(t) => (**t).clone(),
                            None => Tombstones::new(seg.reader.doc_count()),
                        });
                        t.insert(ord);
                    }
                }
            }
            let mut meta = seg.meta.clone();
            let dead = match dead {
                None => seg.dead.clone(),
                Some(t) => {
                    meta.deleted = t.count();
                    if meta.deleted == meta.docs {
                        continue; // nothing live: drop the segment
                    }
                    let name = tombstone_file(&meta.file, m.generation);
                    write_atomic(&self.dir.join(&name), &t.to_bytes())?;
                    meta.tombstones = Some(name);
                    Some(Arc::new(t))
                }
            };
            segments.push(LoadedSegment {
                meta,
                reader: seg.reader.clone(),
                dead,
            });
        }
        let mut counts = Vec::new();
        if !adds.is_empty() {
            let (bytes, c) = build_segment(&self.analyzer, adds)?;
            counts = c;
            segments.push(self.write_segment(&mut m, &bytes, adds.len() as u32)?);
        }
        let snap = self.publish(m, segments)?;
        self.run_merges(snap, false)?;
        Ok(counts)
    }

    /// Replaces everything with one segment built from `docs`. Works even when the current
    /// files are corrupt (it reads the old manifest only to continue its numbering).
    pub fn rebuild(&self, docs: &[Doc], watermark: u64) -> Result<Vec<u32>> {
        check_watermark(watermark)?;
        check_unique(docs)?;
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut m = fresh_manifest(&self.dir, self.analyzer.id());
        m.watermark = watermark;
        let (bytes, counts) = build_segment(&self.analyzer, docs)?;
        let segments = if docs.is_empty() {
            Vec::new()
        } else {
            vec![self.write_segment(&mut m, &bytes, docs.len() as u32)?]
        };
        self.publish(m, segments)?;
        Ok(counts)
    }

    /// Runs the merge policy (`force`: everything into one segment, tombstones dropped).
    /// Returns how many segments were merged.
    pub fn merge(&self, force: bool) -> Result<usize> {
        let _w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let base = self.install(load_snapshot(&self.dir, Some(&self.snapshot()))?);
        self.run_merges(base, force)
    }

    fn write_segment(&self, m: &mut Manifest, bytes: &[u8], docs: u32) -> Result<LoadedSegment> {
        let file = segment_file(m.next_segment_id);
        m.next_segment_id += 1;
        let path = self.dir.join(&file);
        write_atomic(&path, bytes)?;
        let reader = Arc::new(SegmentReader::open(&path)?);
        Ok(LoadedSegment {
            meta: SegmentMeta {
                file,
                docs,
                deleted: 0,
                tombstones: None,
            },
            reader,
            dead: None,
        })
    }

    fn publish(&self, mut m: Manifest, segments: Vec<LoadedSegment>) -> Result<Arc<Snapshot>> {
        m.segments = segments.iter().map(|s| s.meta.clone()).collect();
        m.doc_count = m.live_docs();
        m.write(&self.dir)?;
        let snap = self.install(Snapshot::new(m, segments));
        self.cleanup(&snap.manifest);
        Ok(snap)
    }

    /// Deletes engine files the manifest no longer names (best effort: a failure only
    /// leaves garbage for the next cleanup).
    fn cleanup(&self, m: &Manifest) {
        cleanup(&self.dir, m);
    }

    /// Publishes an empty index in `dir` whatever its current state (missing, corrupt or
    /// sound), then opens it for `language`: the way to repair an index that cannot be
    /// opened before a rebuild. The generation continues when the old manifest is
    /// readable. Caller holds the write lock.
    pub fn reset(dir: &Path, language: Language) -> Result<Index> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let m = fresh_manifest(dir, language.analyzer_id());
        m.write(dir)?;
        cleanup(dir, &m);
        Index::open_in(dir, false, language)
    }

    fn run_merges(&self, mut snap: Arc<Snapshot>, force: bool) -> Result<usize> {
        let mut merged = 0;
        loop {
            let metas: Vec<SegmentMeta> = snap.segments.iter().map(|s| s.meta.clone()).collect();
            let group: Vec<usize> = if force {
                let dirty = metas.iter().any(|s| s.deleted > 0);
                if metas.len() > 1 || dirty {
                    (0..metas.len()).collect()
                } else {
                    Vec::new()
                }
            } else {
                plan(&metas).into_iter().next().unwrap_or_default()
            };
            if group.is_empty() {
                return Ok(merged);
            }
            let sources: Vec<MergeSource<'_>> = group
                .iter()
                .map(|&i| MergeSource {
                    reader: &snap.segments[i].reader,
                    dead: snap.segments[i].dead.as_deref(),
                })
                .collect();
            let (bytes, docs) = merge_segments(&sources)?;
            let mut m = snap.manifest.clone();
            m.generation += 1;
            let mut segments: Vec<LoadedSegment> = Vec::with_capacity(metas.len());
            for (i, s) in snap.segments.iter().enumerate() {
                if i == group[0] && docs > 0 {
                    segments.push(self.write_segment(&mut m, &bytes, docs)?);
                }
                if !group.contains(&i) {
                    segments.push(LoadedSegment {
                        meta: s.meta.clone(),
                        reader: s.reader.clone(),
                        dead: s.dead.clone(),
                    });
                }
            }
            merged += group.len();
            snap = self.publish(m, segments)?;
            if force {
                return Ok(merged);
            }
        }
    }
}
