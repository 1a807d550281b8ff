//! `vectors-meta.toml`: what the vector index holds and how to check it.
//!
//! ```toml
//! meta_checksum = "1c291ca3"     # crc32 of every byte after this first line
//! # kbdb vector index metadata: written by the engine, do not edit
//! [vectors]
//! model_name = "all-MiniLM-L6-v2"          # the seed's five keys first
//! dimensions = 384
//! version = 1                              # vectors.idx format version
//! last_built = "2026-06-23T10:00:00Z"      # last full write (rebuild), UTC
//! section_count = 2847                     # live vectors: records - tombstones + appends
//! checksum = "89abcdef"                    # crc32 of vectors.idx
//! record_count = 2800                      # records in vectors.idx
//! watermark = 1234                         # store change-log seq applied
//! generation = 7                           # +1 per publish; names the side files
//! appends = "vectors-add.7.idx"            # absent when append_count = 0
//! append_count = 60
//! append_checksum = "0badf00d"             # crc32 of the append file
//! tombstones = "vectors-del.5.tomb"        # absent when tombstone_count = 0
//! tombstone_count = 13
//!
//! [previous]                               # only while vectors.idx is being replaced
//! ...                                      # the state before, same keys as [vectors]
//! ```
//!
//! `vectors.idx` cannot be renamed together with this file, so a write that replaces it
//! first publishes a meta file whose `[previous]` table still describes the old state,
//! then renames `vectors.idx`, then publishes the meta file without `[previous]`. A reader
//! uses whichever state's `checksum` the `vectors.idx` on disk has, so a crash between the
//! two renames leaves a consistent index either way (see `index` and `update`).
//!
//! The file is replaced by atomic rename. Side-file names are checked against their
//! patterns, so a damaged meta file can never point outside the index directory.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::file::Expected;
use super::FORMAT_VERSION;
use crate::error::{Error, Result};
use crate::format::write_atomic;

pub const META_FILE: &str = "vectors-meta.toml";
pub const BASE_FILE: &str = "vectors.idx";
const APPEND_PREFIX: &str = "vectors-add.";
const APPEND_SUFFIX: &str = ".idx";
const TOMBSTONE_PREFIX: &str = "vectors-del.";
const TOMBSTONE_SUFFIX: &str = ".tomb";
const HEADER_COMMENT: &str = "# kbdb vector index metadata: written by the engine, do not edit\n";

/// One state of the vector index: the seed's keys, then kbdb's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorState {
    pub model_name: String,
    pub dimensions: u16,
    pub version: u8,
    pub last_built: String,
    pub section_count: u64,
    pub checksum: String,
    pub record_count: u32,
    pub watermark: u64,
    pub generation: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appends: Option<String>,
    #[serde(default)]
    pub append_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstones: Option<String>,
    #[serde(default)]
    pub tombstone_count: u32,
}

/// The whole meta file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub vectors: VectorState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<VectorState>,
}

pub fn append_file(generation: u64) -> String {
    format!("{APPEND_PREFIX}{generation:x}{APPEND_SUFFIX}")
}

pub fn tombstone_file(generation: u64) -> String {
    format!("{TOMBSTONE_PREFIX}{generation:x}{TOMBSTONE_SUFFIX}")
}

fn generation_of(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let hex = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let ok = !hex.is_empty()
        && hex.len() <= 16
        && hex
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
    ok.then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

/// Whether `name` is a side file or an abandoned temporary of this module (what cleanup
/// may delete when unreferenced). `vectors.idx` and the meta file are not.
pub fn is_side_or_temp_file(name: &str) -> bool {
    generation_of(name, APPEND_PREFIX, APPEND_SUFFIX).is_some()
        || generation_of(name, TOMBSTONE_PREFIX, TOMBSTONE_SUFFIX).is_some()
        || (name.starts_with(".vectors") && name.contains(".tmp-"))
}

pub fn format_crc(crc: u32) -> String {
    format!("{crc:08x}")
}

fn parse_crc(s: &str) -> Option<u32> {
    let ok = s.len() == 8
        && s.bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
    ok.then(|| u32::from_str_radix(s, 16).ok()).flatten()
}

/// The current time as ISO 8601 UTC, `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_iso8601() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    iso8601(secs)
}

/// Civil date from Unix seconds (Howard Hinnant's `civil_from_days`).
fn iso8601(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

impl VectorState {
    /// An empty index of `dimensions` for `model_name`, its `vectors.idx` having `checksum`.
    pub fn empty(model_name: &str, dimensions: u16, checksum: u32) -> VectorState {
        VectorState {
            model_name: model_name.to_string(),
            dimensions,
            version: FORMAT_VERSION,
            last_built: now_iso8601(),
            section_count: 0,
            checksum: format_crc(checksum),
            record_count: 0,
            watermark: 0,
            generation: 1,
            appends: None,
            append_count: 0,
            append_checksum: None,
            tombstones: None,
            tombstone_count: 0,
        }
    }

    /// What `vectors.idx` must be.
    pub fn expected_base(&self) -> Expected {
        Expected {
            dimensions: self.dimensions,
            record_count: self.record_count,
            checksum: parse_crc(&self.checksum).unwrap_or(0),
        }
    }

    /// The append file and what it must be.
    pub fn expected_appends(&self) -> Option<(&str, Expected)> {
        let name = self.appends.as_deref()?;
        Some((
            name,
            Expected {
                dimensions: self.dimensions,
                record_count: self.append_count,
                checksum: self
                    .append_checksum
                    .as_deref()
                    .and_then(parse_crc)
                    .unwrap_or(0),
            },
        ))
    }

    /// Side files this state references.
    pub fn side_files(&self) -> impl Iterator<Item = &str> {
        self.appends
            .as_deref()
            .into_iter()
            .chain(self.tombstones.as_deref())
    }

    fn check(&self) -> std::result::Result<(), String> {
        if self.dimensions == 0 {
            return Err("dimensions is 0".into());
        }
        if parse_crc(&self.checksum).is_none() {
            return Err(format!("bad checksum '{}'", self.checksum));
        }
        match (&self.appends, &self.append_checksum) {
            (None, None) if self.append_count == 0 => {}
            (Some(name), Some(crc)) if self.append_count > 0 => {
                if generation_of(name, APPEND_PREFIX, APPEND_SUFFIX).is_none() {
                    return Err(format!("bad append file name '{name}'"));
                }
                if parse_crc(crc).is_none() {
                    return Err(format!("bad append checksum '{crc}'"));
                }
            }
            _ => return Err("inconsistent append file, count and checksum".into()),
        }
        match &self.tombstones {
            None if self.tombstone_count == 0 => {}
            Some(name) if self.tombstone_count > 0 => {
                if generation_of(name, TOMBSTONE_PREFIX, TOMBSTONE_SUFFIX).is_none() {
                    return Err(format!("bad tombstone file name '{name}'"));
                }
            }
            _ => return Err("inconsistent tombstone file and count".into()),
        }
        if self.tombstone_count > self.record_count {
            return Err("more tombstones than records".into());
        }
        let live = u64::from(self.record_count) - u64::from(self.tombstone_count)
            + u64::from(self.append_count);
        if live != self.section_count {
            return Err(format!(
                "section_count {} but records - tombstones + appends = {live}",
                self.section_count
            ));
        }
        Ok(())
    }
}

impl Meta {
    /// The serialized text, checksum line first.
    pub fn to_text(&self) -> Result<String> {
        let body = toml::to_string(self).map_err(|e| {
            Error::InvalidArgument(format!("cannot serialize the vector meta: {e}"))
        })?;
        let body = format!("{HEADER_COMMENT}{body}");
        Ok(format!(
            "meta_checksum = \"{}\"\n{body}",
            format_crc(crc32fast::hash(body.as_bytes()))
        ))
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        write_atomic(&dir.join(META_FILE), self.to_text()?.as_bytes())
    }

    /// Reads and parses the meta file; also returns its raw bytes (to notice changes).
    pub fn read(dir: &Path) -> Result<(Meta, Vec<u8>)> {
        let path = dir.join(META_FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::read(&path, e))?;
        Ok((Meta::parse(&path, &bytes)?, bytes))
    }

    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Meta> {
        let bad = |d: String| Error::corrupt(path, d);
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not utf-8".into()))?;
        let (first, body) = text
            .split_once('\n')
            .ok_or_else(|| bad("truncated".into()))?;
        let stored = first
            .strip_prefix("meta_checksum = \"")
            .and_then(|r| r.strip_suffix('"'))
            .ok_or_else(|| bad("first line is not the meta_checksum".into()))?;
        let actual = format_crc(crc32fast::hash(body.as_bytes()));
        if stored != actual {
            return Err(bad(format!(
                "checksum mismatch (stored {stored}, computed {actual})"
            )));
        }
        let m: Meta =
            toml::from_str(body).map_err(|e| bad(format!("bad toml: {}", e.message())))?;
        for s in std::iter::once(&m.vectors).chain(&m.previous) {
            if s.version != FORMAT_VERSION {
                return Err(Error::FormatVersion {
                    path: path.to_path_buf(),
                    found: u32::from(s.version),
                    expected: u32::from(FORMAT_VERSION),
                });
            }
            s.check().map_err(bad)?;
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Meta {
        let mut s = VectorState::empty("all-MiniLM-L6-v2", 384, 0xdead_beef);
        s.record_count = 10;
        s.tombstones = Some(tombstone_file(3));
        s.tombstone_count = 2;
        s.appends = Some(append_file(3));
        s.append_count = 4;
        s.append_checksum = Some(format_crc(7));
        s.section_count = 12;
        s.generation = 3;
        Meta {
            vectors: s,
            previous: None,
        }
    }

    #[test]
    fn round_trip_seed_keys_and_damage() {
        let m = sample();
        let text = m.to_text().unwrap();
        assert!(text.contains("[vectors]\nmodel_name = \"all-MiniLM-L6-v2\"\ndimensions = 384\n"));
        assert!(text.contains("section_count = 12\n"));
        let p = Path::new("vectors-meta.toml");
        assert_eq!(Meta::parse(p, text.as_bytes()).unwrap(), m);
        for cut in 0..text.len() {
            assert!(
                Meta::parse(p, &text.as_bytes()[..cut]).is_err(),
                "cut {cut}"
            );
        }
        let mut evil = m.clone();
        evil.vectors.appends = Some("../../etc/passwd".into());
        let t = evil.to_text().unwrap();
        assert!(matches!(
            Meta::parse(p, t.as_bytes()),
            Err(Error::Corrupt { .. })
        ));
        let mut v2 = m.clone();
        v2.vectors.version = 2;
        let t = v2.to_text().unwrap();
        assert!(matches!(
            Meta::parse(p, t.as_bytes()),
            Err(Error::FormatVersion { .. })
        ));
    }

    #[test]
    fn names_and_dates() {
        assert!(is_side_or_temp_file(&append_file(0x1f)));
        assert!(is_side_or_temp_file(&tombstone_file(2)));
        assert!(is_side_or_temp_file(".vectors.idx.tmp-12-3"));
        assert!(!is_side_or_temp_file("vectors.idx"));
        assert!(!is_side_or_temp_file(META_FILE));
        assert!(!is_side_or_temp_file("vectors-add.XY.idx"));
        assert_eq!(iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601(951_782_400 + 3_661), "2000-02-29T01:01:01Z");
        assert_eq!(iso8601(1_782_208_800), "2026-06-23T10:00:00Z");
    }
}
