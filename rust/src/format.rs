//! On-disk format helpers: footers, checksums, atomic writes, validated memory maps.
//!
//! Every binary file the engine writes is `payload ‖ footer`, the footer being
//! [`FOOTER_LEN`] = 24 bytes, little-endian:
//!
//! ```text
//! offset  size  field
//! 0       4     kind            b"SEGM" (segment), b"TOMB" (tombstones), ...
//! 4       4     format version  u32
//! 8       8     payload length  u64, must equal file length - FOOTER_LEN
//! 16      4     checksum        crc32 (crc32fast) of payload ‖ footer[0..16]
//! 20      4     magic           b"KBDB"
//! ```
//!
//! The magic comes last so that a truncated file is recognised by its last four bytes.
//! Validation order: length, magic, payload length, checksum, kind, version; a file whose
//! checksum is good but whose version differs is a [`Error::FormatVersion`], everything
//! else is [`Error::Corrupt`]. Nothing here panics on bad bytes.
//!
//! Two depths: [`validate`] checks everything, the checksum over the whole file included;
//! [`validate_footer`] checks everything but the checksum, reading only the 24-byte
//! footer. [`MappedFile::open`] (segments, which are large and mapped) does the second, so
//! that opening an index costs a few page reads however big it is; the full checksum is
//! [`MappedFile::verify_checksum`], run by `verify` (`kbdb check`). A file of at most
//! [`VERIFY_ON_OPEN_BYTES`] is checksummed on every open. Damage that the open misses is
//! still caught where the bytes are used: every decoder is bounds-checked and returns
//! [`Error::Corrupt`], never panics (see `docs/reliability.md`).
//!
//! Files are written with [`write_atomic`]: a temporary name in the same directory, fsync,
//! rename over the target, fsync the directory. A reader therefore sees either the old or
//! the new file, never a torn one, and a returned write survives power loss.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::failpoint;

/// Size of the footer in bytes.
pub const FOOTER_LEN: usize = 24;
/// The last four bytes of every engine file.
pub const MAGIC: [u8; 4] = *b"KBDB";

/// What a file holds; stored in the footer so that a file renamed to the wrong role is
/// caught.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FileKind(pub [u8; 4]);

impl FileKind {
    pub const SEGMENT: FileKind = FileKind(*b"SEGM");
    pub const TOMBSTONE: FileKind = FileKind(*b"TOMB");

    fn name(self) -> String {
        String::from_utf8_lossy(&self.0).to_lowercase()
    }
}

/// Appends the footer for `buf[..]` (the payload) to `buf`.
pub fn append_footer(buf: &mut Vec<u8>, kind: FileKind, version: u32) {
    let payload_len = buf.len() as u64;
    let start = buf.len();
    buf.extend_from_slice(&kind.0);
    buf.extend_from_slice(&version.to_le_bytes());
    buf.extend_from_slice(&payload_len.to_le_bytes());
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&buf[..start + 16]);
    buf.extend_from_slice(&hasher.finalize().to_le_bytes());
    buf.extend_from_slice(&MAGIC);
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

/// Checks `bytes` (a whole file), its checksum included, and returns its payload.
pub fn validate<'a>(
    path: &Path,
    bytes: &'a [u8],
    kind: FileKind,
    version: u32,
) -> Result<&'a [u8]> {
    let payload = check_frame(path, bytes)?;
    check_checksum(path, bytes)?;
    check_kind_and_version(path, bytes, kind, version)?;
    Ok(payload)
}

/// Checks `bytes` (a whole file) like [`validate`] but without the checksum: only the
/// footer is read, so the cost does not grow with the file.
pub fn validate_footer<'a>(
    path: &Path,
    bytes: &'a [u8],
    kind: FileKind,
    version: u32,
) -> Result<&'a [u8]> {
    let payload = check_frame(path, bytes)?;
    check_kind_and_version(path, bytes, kind, version)?;
    Ok(payload)
}

/// Length, magic and payload length; returns the payload.
fn check_frame<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a [u8]> {
    if bytes.len() < FOOTER_LEN {
        return Err(Error::corrupt(
            path,
            format!(
                "file is {} bytes, shorter than its {FOOTER_LEN}-byte footer",
                bytes.len()
            ),
        ));
    }
    let footer_at = bytes.len() - FOOTER_LEN;
    let footer = &bytes[footer_at..];
    if footer[20..24] != MAGIC {
        return Err(Error::corrupt(
            path,
            "bad magic (truncated or not a kbdb file)",
        ));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&footer[8..16]);
    let payload_len = u64::from_le_bytes(len);
    if payload_len != footer_at as u64 {
        return Err(Error::corrupt(
            path,
            format!("footer says {payload_len} payload bytes, file has {footer_at}"),
        ));
    }
    Ok(&bytes[..footer_at])
}

/// The footer's crc32 against the whole file; `bytes` passed [`check_frame`].
fn check_checksum(path: &Path, bytes: &[u8]) -> Result<()> {
    let footer_at = bytes.len() - FOOTER_LEN;
    let stored = le_u32(&bytes[footer_at..], 16);
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&bytes[..footer_at + 16]);
    let actual = hasher.finalize();
    if stored != actual {
        return Err(Error::corrupt(
            path,
            format!("checksum mismatch (stored {stored:08x}, computed {actual:08x})"),
        ));
    }
    Ok(())
}

/// Kind, then version; `bytes` passed [`check_frame`].
fn check_kind_and_version(path: &Path, bytes: &[u8], kind: FileKind, version: u32) -> Result<()> {
    let footer = &bytes[bytes.len() - FOOTER_LEN..];
    let found_kind = FileKind([footer[0], footer[1], footer[2], footer[3]]);
    if found_kind != kind {
        return Err(Error::corrupt(
            path,
            format!(
                "file kind is '{}', expected '{}'",
                found_kind.name(),
                kind.name()
            ),
        ));
    }
    let found = le_u32(footer, 4);
    if found != version {
        return Err(Error::FormatVersion {
            path: path.to_path_buf(),
            found,
            expected: version,
        });
    }
    Ok(())
}

/// Files of at most this size are checksummed whenever they are opened: reading a few
/// pages costs about what reading the footer's page does, and it catches damage that no
/// decoder would notice (a flipped byte inside a term of the dictionary, a field length).
pub const VERIFY_ON_OPEN_BYTES: u64 = 64 * 1024;

/// A read-only, validated memory map of one engine file.
pub struct MappedFile {
    path: PathBuf,
    map: Mmap,
    payload_len: usize,
}

impl MappedFile {
    /// Maps `path` and validates its footer (not the checksum: see the module docs). Only
    /// the last page of the file is read.
    pub fn open(path: &Path, kind: FileKind, version: u32) -> Result<MappedFile> {
        MappedFile::open_with(path, kind, version, false)
    }

    /// [`MappedFile::open`], checking the checksum too (before anything else is read)
    /// when `checksum` is set.
    pub fn open_with(
        path: &Path,
        kind: FileKind,
        version: u32,
        checksum: bool,
    ) -> Result<MappedFile> {
        let file = File::open(path).map_err(|e| Error::read(path, e))?;
        let stat = file.metadata().map_err(|e| Error::read(path, e))?;
        if !stat.is_file() {
            return Err(Error::corrupt(path, "not a regular file"));
        }
        let len = stat.len();
        if len < FOOTER_LEN as u64 {
            return Err(Error::corrupt(
                path,
                format!("file is {len} bytes, shorter than its {FOOTER_LEN}-byte footer"),
            ));
        }
        // SAFETY: engine files are immutable once published (written under a temporary name
        // and renamed into place, never modified in place; old ones are only unlinked, which
        // keeps the mapping valid). The length was checked to be non-zero above.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
        let payload_len = if checksum || len <= VERIFY_ON_OPEN_BYTES {
            validate(path, &map, kind, version)?.len()
        } else {
            validate_footer(path, &map, kind, version)?.len()
        };
        Ok(MappedFile {
            path: path.to_path_buf(),
            map,
            payload_len,
        })
    }

    pub fn payload(&self) -> &[u8] {
        &self.map[..self.payload_len]
    }

    /// Checks the footer's crc32 over the whole file (reads every byte).
    pub fn verify_checksum(&self) -> Result<()> {
        check_checksum(&self.path, &self.map)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the whole file in bytes.
    pub fn file_len(&self) -> usize {
        self.map.len()
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name beside `path`, `.<name>.tmp-<pid>-<n>`: unique within the
/// process, and recognizable by the cleanups that remove leftovers of a crashed write.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_dir(path).join(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Creates a new file at [`temp_path`]`(path)` for a large write that is then fsynced and
/// renamed over `path` by the caller: (its name, the open file).
pub fn create_temp(path: &Path) -> Result<(PathBuf, File)> {
    let tmp = temp_path(path);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    Ok((tmp, file))
}

/// Writes `bytes` to `path` atomically and durably (see the module docs).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let tmp = temp_path(path);
    let result = write_and_sync(&tmp, bytes).and_then(|()| {
        failpoint::hit("write.before_rename");
        remove_squatting_dir(path)?;
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        failpoint::hit("write.after_rename");
        sync_dir(&dir)
    });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Like [`write_atomic`], but fails with `AlreadyExists` instead of replacing `path`.
pub fn write_new_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let tmp = dir.join(format!(
        ".new.tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = write_and_sync(&tmp, bytes).and_then(|()| {
        // A hard link never replaces an existing file: this is an atomic create-if-absent.
        failpoint::hit("write.before_rename");
        fs::hard_link(&tmp, path).map_err(|e| Error::io(path, e))?;
        failpoint::hit("write.after_rename");
        sync_dir(&dir)
    });
    let _ = fs::remove_file(&tmp);
    result
}

/// Removes a directory found where an engine file is about to be published. The engine
/// never makes directories inside its index folder, so one there is damage (or a hostile
/// edit); a rename over it would fail and leave `rebuild` unable to repair the index.
pub fn remove_squatting_dir(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(|e| Error::io(path, e)),
        _ => Ok(()),
    }
}

/// Best-effort removal of a stale engine file, or of a directory squatting on its name.
pub fn remove_entry(path: &Path) {
    if fs::remove_file(path).is_err() {
        let _ = remove_squatting_dir(path);
    }
}

fn write_and_sync(tmp: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(|e| Error::io(tmp, e))?;
    let (head, tail) = bytes.split_at(bytes.len() / 2);
    file.write_all(head).map_err(|e| Error::io(tmp, e))?;
    failpoint::hit("write.mid");
    file.write_all(tail).map_err(|e| Error::io(tmp, e))?;
    file.sync_all().map_err(|e| Error::io(tmp, e))
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Fsyncs a directory so that renames and unlinks in it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        d.sync_all().map_err(|e| Error::io(dir, e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut buf = b"hello, segment".to_vec();
        append_footer(&mut buf, FileKind::SEGMENT, 3);
        buf
    }

    #[test]
    fn round_trip() {
        let buf = sample();
        let p = Path::new("x");
        assert_eq!(
            validate(p, &buf, FileKind::SEGMENT, 3).unwrap(),
            b"hello, segment"
        );
    }

    #[test]
    fn every_truncation_and_flip_is_an_error() {
        let buf = sample();
        let p = Path::new("x");
        for cut in 0..buf.len() {
            assert!(validate(p, &buf[..cut], FileKind::SEGMENT, 3).is_err());
        }
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut b = buf.clone();
                b[i] ^= 1 << bit;
                assert!(
                    validate(p, &b, FileKind::SEGMENT, 3).is_err(),
                    "byte {i} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn footer_check_reads_only_the_footer() {
        let buf = sample();
        let p = Path::new("x");
        let payload_len = buf.len() - FOOTER_LEN;
        for cut in 0..buf.len() {
            assert!(validate_footer(p, &buf[..cut], FileKind::SEGMENT, 3).is_err());
        }
        // A flipped payload byte passes the footer check, not the full one.
        let mut b = buf.clone();
        b[3] ^= 1;
        assert_eq!(
            validate_footer(p, &b, FileKind::SEGMENT, 3).unwrap().len(),
            payload_len
        );
        assert!(validate(p, &b, FileKind::SEGMENT, 3).is_err());
        // Every flip in the footer outside its checksum field fails the footer check.
        for i in
            (payload_len..buf.len()).filter(|&i| !(payload_len + 16..payload_len + 20).contains(&i))
        {
            let mut b = buf.clone();
            b[i] ^= 0x01;
            assert!(
                validate_footer(p, &b, FileKind::SEGMENT, 3).is_err(),
                "byte {i}"
            );
        }
    }

    #[test]
    fn mapped_file_checks_its_checksum_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seg");
        // Larger than VERIFY_ON_OPEN_BYTES: the open reads the footer only.
        let mut b = vec![7u8; VERIFY_ON_OPEN_BYTES as usize + 1];
        append_footer(&mut b, FileKind::SEGMENT, 3);
        b[0] ^= 1;
        write_atomic(&path, &b).unwrap();
        let m = MappedFile::open(&path, FileKind::SEGMENT, 3).unwrap();
        assert!(matches!(m.verify_checksum(), Err(Error::Corrupt { .. })));
        assert!(MappedFile::open_with(&path, FileKind::SEGMENT, 3, true).is_err());
    }

    #[test]
    fn a_small_file_is_checksummed_on_every_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seg");
        let mut b = sample();
        write_atomic(&path, &b).unwrap();
        assert!(MappedFile::open(&path, FileKind::SEGMENT, 3).is_ok());
        b[0] ^= 1;
        write_atomic(&path, &b).unwrap();
        assert!(matches!(
            MappedFile::open(&path, FileKind::SEGMENT, 3),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn version_and_kind_are_checked() {
        let buf = sample();
        let p = Path::new("x");
        assert!(matches!(
            validate(p, &buf, FileKind::SEGMENT, 4),
            Err(Error::FormatVersion {
                found: 3,
                expected: 4,
                ..
            })
        ));
        assert!(matches!(
            validate(p, &buf, FileKind::TOMBSTONE, 3),
            Err(Error::Corrupt { .. })
        ));
    }

    #[test]
    fn atomic_write_and_map() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.seg");
        write_atomic(&path, &sample()).unwrap();
        let m = MappedFile::open(&path, FileKind::SEGMENT, 3).unwrap();
        assert_eq!(m.payload(), b"hello, segment");
        assert!(write_new_atomic(&path, b"x").is_err());
        let leftovers = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1);
    }
}
