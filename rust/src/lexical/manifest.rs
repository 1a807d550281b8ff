//! The manifest, `meta.toml`: which files make up the index at one generation.
//!
//! ```toml
//! checksum = "89abcdef"          # crc32 of every byte after this first line
//! # kbdb lexical index manifest: written by the engine, do not edit
//! format_version = 1
//! generation = 7                 # +1 per publish
//! watermark = 1234               # the store change-log seq this index has applied
//! analyzer_id = "..."
//! doc_count = 1000               # live sections
//! next_segment_id = 12
//!
//! [[segments]]
//! file = "seg-000000000000000b.seg"
//! docs = 1003                    # including tombstoned
//! deleted = 3
//! tombstones = "seg-000000000000000b.7.del"   # absent when deleted = 0
//! ```
//!
//! The manifest is replaced by atomic rename; file names are checked against their
//! patterns so a damaged manifest can never point outside the index directory.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::MANIFEST_FORMAT_VERSION;
use crate::error::{Error, Result};
use crate::format::write_atomic;

pub const MANIFEST_FILE: &str = "meta.toml";
const HEADER_COMMENT: &str = "# kbdb lexical index manifest: written by the engine, do not edit\n";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format_version: u32,
    pub generation: u64,
    pub watermark: u64,
    pub analyzer_id: String,
    pub doc_count: u64,
    pub next_segment_id: u64,
    #[serde(default)]
    pub segments: Vec<SegmentMeta>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentMeta {
    pub file: String,
    pub docs: u32,
    pub deleted: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstones: Option<String>,
}

impl SegmentMeta {
    pub fn live(&self) -> u32 {
        self.docs - self.deleted
    }
}

pub fn segment_file(id: u64) -> String {
    format!("seg-{id:016x}.seg")
}

pub fn tombstone_file(segment_file: &str, generation: u64) -> String {
    let stem = segment_file.strip_suffix(".seg").unwrap_or(segment_file);
    format!("{stem}.{generation:x}.del")
}

/// The segment id of a valid segment file name.
pub fn parse_segment_file(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("seg-")?.strip_suffix(".seg")?;
    if hex.len() != 16
        || !hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

fn valid_tombstone_name(segment_file: &str, name: &str) -> bool {
    let stem = segment_file.strip_suffix(".seg").unwrap_or(segment_file);
    name.strip_prefix(stem)
        .and_then(|r| r.strip_prefix('.'))
        .and_then(|r| r.strip_suffix(".del"))
        .is_some_and(|g| !g.is_empty() && g.len() <= 16 && g.bytes().all(|c| c.is_ascii_hexdigit()))
}

impl Manifest {
    pub fn empty(analyzer_id: &str) -> Manifest {
        Manifest {
            format_version: MANIFEST_FORMAT_VERSION,
            generation: 0,
            watermark: 0,
            analyzer_id: analyzer_id.to_string(),
            doc_count: 0,
            next_segment_id: 0,
            segments: Vec::new(),
        }
    }

    /// The serialized text, checksum line first.
    pub fn to_text(&self) -> Result<String> {
        let body = toml::to_string(self)
            .map_err(|e| Error::InvalidArgument(format!("cannot serialize the manifest: {e}")))?;
        let body = format!("{HEADER_COMMENT}{body}");
        Ok(format!(
            "checksum = \"{:08x}\"\n{body}",
            crc32fast::hash(body.as_bytes())
        ))
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        write_atomic(&dir.join(MANIFEST_FILE), self.to_text()?.as_bytes())
    }

    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::read(&path, e))?;
        Manifest::parse(&path, &bytes)
    }

    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Manifest> {
        let bad = |d: String| Error::corrupt(path, d);
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not utf-8".into()))?;
        let (first, body) = text
            .split_once('\n')
            .ok_or_else(|| bad("truncated".into()))?;
        let stored = first
            .strip_prefix("checksum = \"")
            .and_then(|r| r.strip_suffix('"'))
            .ok_or_else(|| bad("first line is not the checksum".into()))?;
        let actual = format!("{:08x}", crc32fast::hash(body.as_bytes()));
        if stored != actual {
            return Err(bad(format!(
                "checksum mismatch (stored {stored}, computed {actual})"
            )));
        }
        let m: Manifest =
            toml::from_str(body).map_err(|e| bad(format!("bad toml: {}", e.message())))?;
        if m.format_version != MANIFEST_FORMAT_VERSION {
            return Err(Error::FormatVersion {
                path: path.to_path_buf(),
                found: m.format_version,
                expected: MANIFEST_FORMAT_VERSION,
            });
        }
        m.check().map_err(bad)?;
        Ok(m)
    }

    fn check(&self) -> std::result::Result<(), String> {
        let mut live = 0u64;
        let mut ids = Vec::with_capacity(self.segments.len());
        for s in &self.segments {
            let id = parse_segment_file(&s.file).ok_or(format!("bad segment name '{}'", s.file))?;
            if id >= self.next_segment_id {
                return Err(format!("segment '{}' is not below next_segment_id", s.file));
            }
            ids.push(id);
            if s.deleted > s.docs || (s.deleted > 0) != s.tombstones.is_some() {
                return Err(format!(
                    "segment '{}' has inconsistent deletion counts",
                    s.file
                ));
            }
            if let Some(t) = &s.tombstones {
                if !valid_tombstone_name(&s.file, t) {
                    return Err(format!("bad tombstone name '{t}'"));
                }
            }
            live += u64::from(s.live());
        }
        ids.sort_unstable();
        if ids.windows(2).any(|w| w[0] == w[1]) {
            return Err("a segment is listed twice".into());
        }
        if live != self.doc_count {
            return Err(format!(
                "doc_count {} but segments hold {live} live docs",
                self.doc_count
            ));
        }
        Ok(())
    }

    /// File names this manifest references (besides itself).
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.segments
            .iter()
            .flat_map(|s| std::iter::once(s.file.as_str()).chain(s.tombstones.as_deref()))
    }

    pub fn live_docs(&self) -> u64 {
        self.segments.iter().map(|s| u64::from(s.live())).sum()
    }
}

/// Whether `name` is a file the engine writes into an index directory (so cleanup may
/// delete it when unreferenced).
pub fn is_engine_file(name: &str) -> bool {
    if name.starts_with(".seg-") && name.contains(".tmp-") {
        return true;
    }
    if parse_segment_file(name).is_some() {
        return true;
    }
    name.ends_with(".del") && name.len() > 20 && name.is_char_boundary(20) && {
        let seg = format!("{}.seg", &name[..20]);
        parse_segment_file(&seg).is_some() && valid_tombstone_name(&seg, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest::empty("an-1");
        m.generation = 3;
        m.watermark = 99;
        m.next_segment_id = 2;
        m.doc_count = 9;
        m.segments.push(SegmentMeta {
            file: segment_file(0),
            docs: 5,
            deleted: 0,
            tombstones: None,
        });
        m.segments.push(SegmentMeta {
            file: segment_file(1),
            docs: 5,
            deleted: 1,
            tombstones: Some(tombstone_file(&segment_file(1), 3)),
        });
        m
    }

    #[test]
    fn round_trip_and_names() {
        let m = sample();
        let text = m.to_text().unwrap();
        assert_eq!(
            Manifest::parse(Path::new("meta.toml"), text.as_bytes()).unwrap(),
            m
        );
        assert_eq!(m.files().count(), 3);
        assert!(is_engine_file("seg-0000000000000001.seg"));
        assert!(is_engine_file("seg-0000000000000001.3.del"));
        assert!(!is_engine_file("seg-1.seg"));
        assert!(!is_engine_file("vectors.idx"));
        assert!(!is_engine_file("meta.toml"));
    }

    #[test]
    fn damage_is_detected() {
        let text = sample().to_text().unwrap();
        let p = Path::new("meta.toml");
        for cut in 0..text.len() {
            assert!(
                Manifest::parse(p, &text.as_bytes()[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let evil = sample();
        let mut evil2 = evil.clone();
        evil2.segments[0].file = "../../etc/passwd".into();
        let t = evil2.to_text().unwrap();
        assert!(matches!(
            Manifest::parse(p, t.as_bytes()),
            Err(Error::Corrupt { .. })
        ));
    }
}
