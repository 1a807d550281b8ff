//! [`Index`]: the lexical index of one directory. Opens snapshots, commits batches,
//! rebuilds, merges and searches.
//!
//! Concurrency: searches clone the current `Arc<Snapshot>` and run without locks; a
//! snapshot's files stay valid while mapped even after a writer unlinks them. Writers are
//! serialized by the caller across processes (kbdb's write lock) and by `writer` within one
//! process; every write starts from the manifest on disk, so a stale `Index` object never
//! overwrites another process's commit. Publishing order: data files (fsynced), then the
//! manifest (atomic rename), then cleanup of unreferenced files.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rayon::prelude::*;

use super::bm25f::{CorpusStats, FieldNorms};
use super::manifest::{is_engine_file, parse_segment_file, segment_file, tombstone_file, MANIFEST_FILE};
use super::merge::{merge_segments, plan, MergeSource};
use super::query::{hit_details, search_segment, HitKey, Prepared, Query, SegmentView};
use super::termdict::TermInfo;
use super::topk::TopK;
use super::{build_segment, format_kbid, Doc, Manifest, SegmentMeta, SegmentReader, Tombstones};
use super::{Kbid, Score, FIELD_COUNT, FIELD_NAMES};
use crate::error::{Error, Result};
use crate::format::{write_atomic, write_new_atomic};
use crate::text::Analyzer;

/// How often a reader re-reads the manifest when a file it names has vanished (a
/// concurrent writer merged it away) before calling the index corrupt.
const OPEN_ATTEMPTS: usize = 8;

/// One contribution to a hit's score (`explain`).
#[derive(Debug, Clone, PartialEq)]
pub struct Contribution {
    pub clause: u32,
    pub term: String,
    pub field: &'static str,
    pub score: Score,
}

/// Ranked hits, best first, as columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hits {
    pub kbids: Vec<String>,
    pub scores: Vec<Score>,
    pub matched: Vec<Vec<u8>>,
    pub total: u64,
    pub explain: Option<Vec<Vec<Contribution>>>,
}

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
}

impl Snapshot {
    fn new(manifest: Manifest, segments: Vec<LoadedSegment>) -> Snapshot {
        let mut stats = CorpusStats::default();
        for s in &segments {
            stats.docs += u64::from(s.reader.doc_count());
            let t = s.reader.field_totals();
            for f in 0..FIELD_COUNT {
                stats.field_totals[f] += t[f];
            }
        }
        Snapshot { manifest, segments, stats }
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
            let d = format!("{} holds {} docs, the manifest says {}", meta.file, reader.doc_count(), meta.docs);
            return Err(Error::corrupt(&meta_path, d));
        }
        let dead = match &meta.tombstones {
            None => None,
            Some(name) => match old(&meta.file).filter(|s| s.meta.tombstones.as_ref() == Some(name)) {
                Some(s) => s.dead.clone(),
                None => Some(Arc::new(Tombstones::read(&dir.join(name))?)),
            },
        };
        if let Some(t) = &dead {
            if t.doc_count() != meta.docs || t.count() != meta.deleted {
                return Err(Error::corrupt(&meta_path, format!("{} disagrees with its segment", meta.file)));
            }
        }
        out.push(LoadedSegment { meta: meta.clone(), reader, dead });
    }
    Ok(out)
}

/// Reads the manifest and opens what it names, retrying when a file vanished under us.
fn load_snapshot(dir: &Path, prev: Option<&Snapshot>) -> Result<Snapshot> {
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
    Err(Error::corrupt(dir.join(MANIFEST_FILE), format!("a listed file is missing: {detail}")))
}

fn check_unique(docs: &[Doc]) -> Result<()> {
    let mut seen = HashSet::with_capacity(docs.len());
    for d in docs {
        if !seen.insert(d.kbid) {
            return Err(Error::InvalidArgument(format!("kbid {} is added twice", format_kbid(&d.kbid))));
        }
    }
    Ok(())
}

fn check_watermark(w: u64) -> Result<()> {
    if w > i64::MAX as u64 {
        return Err(Error::InvalidArgument(format!("watermark {w} is larger than 2^63 - 1")));
    }
    Ok(())
}

/// The lexical index in one directory.
pub struct Index {
    dir: PathBuf,
    analyzer: Arc<Analyzer>,
    current: RwLock<Arc<Snapshot>>,
    writer: Mutex<()>,
}

impl Index {
    /// Opens the index in `dir`; with `create`, an empty one is created if `meta.toml` is
    /// missing (racing creators are fine: the manifest is created with link-if-absent).
    pub fn open(dir: &Path, create: bool) -> Result<Index> {
        let analyzer = Arc::new(Analyzer::new());
        let meta = dir.join(MANIFEST_FILE);
        if create && !meta.exists() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            let text = Manifest::empty(analyzer.id()).to_text()?;
            match write_new_atomic(&meta, text.as_bytes()) {
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {}
                other => other?,
            }
        }
        let snap = load_snapshot(dir, None)?;
        Ok(Index { dir: dir.to_path_buf(), analyzer, current: RwLock::new(Arc::new(snap)), writer: Mutex::new(()) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The snapshot searches currently see.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn install(&self, snap: Snapshot) -> Arc<Snapshot> {
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
        let mut kill: Vec<Kbid> = deletes.iter().copied().chain(adds.iter().map(|d| d.kbid)).collect();
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
            segments.push(LoadedSegment { meta, reader: seg.reader.clone(), dead });
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
        let old = Manifest::read(&self.dir).ok();
        let mut next_id = old.as_ref().map_or(0, |m| m.next_segment_id);
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                if let Some(id) = parse_segment_file(&e.file_name().to_string_lossy()) {
                    next_id = next_id.max(id + 1);
                }
            }
        }
        let mut m = Manifest::empty(self.analyzer.id());
        m.generation = old.map_or(1, |o| o.generation + 1);
        m.watermark = watermark;
        m.next_segment_id = next_id;
        let (bytes, counts) = build_segment(&self.analyzer, docs)?;
        let segments =
            if docs.is_empty() { Vec::new() } else { vec![self.write_segment(&mut m, &bytes, docs.len() as u32)?] };
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
        Ok(LoadedSegment { meta: SegmentMeta { file, docs, deleted: 0, tombstones: None }, reader, dead: None })
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
        let keep: HashSet<&str> = m.files().collect();
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if is_engine_file(&name) && !keep.contains(name.as_str()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    fn run_merges(&self, mut snap: Arc<Snapshot>, force: bool) -> Result<usize> {
        let mut merged = 0;
        loop {
            let metas: Vec<SegmentMeta> = snap.segments.iter().map(|s| s.meta.clone()).collect();
            let group: Vec<usize> = if force {
                let dirty = metas.iter().any(|s| s.deleted > 0);
                if metas.len() > 1 || dirty { (0..metas.len()).collect() } else { Vec::new() }
            } else {
                plan(&metas).into_iter().next().unwrap_or_default()
            };
            if group.is_empty() {
                return Ok(merged);
            }
            let sources: Vec<MergeSource<'_>> = group
                .iter()
                .map(|&i| MergeSource { reader: &snap.segments[i].reader, dead: snap.segments[i].dead.as_deref() })
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
                    segments.push(LoadedSegment { meta: s.meta.clone(), reader: s.reader.clone(), dead: s.dead.clone() });
                }
            }
            merged += group.len();
            snap = self.publish(m, segments)?;
            if force {
                return Ok(merged);
            }
        }
    }

    /// Re-reads every file and checks checksums and structure; returns the problems found.
    pub fn verify(&self) -> Vec<String> {
        let m = match Manifest::read(&self.dir) {
            Ok(m) => m,
            Err(e) => return vec![e.to_string()],
        };
        let mut problems = Vec::new();
        for s in &m.segments {
            let path = self.dir.join(&s.file);
            match SegmentReader::open(&path).and_then(|r| r.check_all().map(|()| r)) {
                Ok(r) if r.doc_count() != s.docs => {
                    problems.push(format!("{} holds {} docs, the manifest says {}", path.display(), r.doc_count(), s.docs))
                }
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

    /// BM25F top-`limit` over the current snapshot.
    pub fn search(&self, q: &Query) -> Result<Hits> {
        let snap = self.snapshot();
        let mut p = Prepared::new(q, FieldNorms::new(&q.params, &snap.stats))?;
        let mut infos: Vec<Vec<Option<TermInfo>>> = Vec::with_capacity(snap.segments.len());
        for s in &snap.segments {
            let dict = s.reader.termdict()?;
            let row = p.terms.iter().map(|t| dict.get(t.as_bytes()).map_err(|m| s.reader.corrupt(m)));
            infos.push(row.collect::<Result<_>>()?);
        }
        for t in 0..p.terms.len() {
            let df: u64 = infos.iter().filter_map(|row| row[t]).map(|i| u64::from(i.df)).sum();
            p.idf[t] = snap.stats.idf(df);
        }
        let results = snap
            .segments
            .par_iter()
            .enumerate()
            .map(|(i, s)| {
                let allowed = match &q.allow {
                    None => None,
                    Some(kbids) => {
                        let mut set = Tombstones::new(s.reader.doc_count());
                        for k in kbids {
                            if let Some(o) = s.reader.ord_of(k)? {
                                set.insert(o);
                            }
                        }
                        Some(set)
                    }
                };
                let view = SegmentView {
                    index: i as u32,
                    reader: &s.reader,
                    dead: s.dead.as_deref(),
                    allowed: allowed.as_ref(),
                    infos: &infos[i],
                };
                search_segment(&p, &view, q.limit)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut top: TopK<HitKey> = TopK::new(q.limit);
        let mut hits = Hits::default();
        for (t, n) in results {
            top.extend(t);
            hits.total += n;
        }
        let mut explain = Vec::new();
        for item in top.into_sorted() {
            let (kbid, seg, ord) = item.key;
            let s = &snap.segments[seg as usize];
            let (mask, parts) = hit_details(&p, &s.reader, &infos[seg as usize], ord, q.explain)?;
            hits.kbids.push(format_kbid(&kbid));
            hits.scores.push(item.score);
            hits.matched.push(mask);
            if q.explain {
                explain.push(
                    parts
                        .into_iter()
                        .map(|(clause, t, f, score)| Contribution {
                            clause,
                            term: p.terms[t].clone(),
                            field: FIELD_NAMES[f],
                            score,
                        })
                        .collect(),
                );
            }
        }
        hits.explain = q.explain.then_some(explain);
        Ok(hits)
    }
}
