//! An insert-only hash table of strings for the indexer's interning: the keys live in one
//! byte arena and each entry has a dense index (its insertion order), so a batch's
//! vocabulary costs no allocation per key and frees in one go. `HashMap<Box<str>, _>` cost
//! a `malloc` per distinct key and a `free` per key at the end, which was a tenth of a
//! SciFact commit.
//!
//! Open addressing with linear probing, at most half full. A slot is a `u64`: the top 32 bits
//! of the key's hash over its entry index + 1 (0 is empty), so that a probe rejects other
//! keys without reading their entries. The hash is the analyzer's Fx hash.

use std::hash::Hasher;

use super::stem::{load_short, FxHasher};

#[derive(Clone, Copy)]
struct Entry<V> {
    start: usize,
    len: usize,
    value: V,
}

/// Strings to values, with dense indices; see the module doc.
pub(crate) struct StrTable<V> {
    bytes: Vec<u8>,
    entries: Vec<Entry<V>>,
    slots: Vec<u64>,
}

/// The first slot to probe for `hash` among `n` (a power of two): the top bits, which a
/// multiplicative hash mixes from every input bit (its low bits see only the low bytes).
#[inline(always)]
fn home(hash: u64, n: usize) -> usize {
    (hash >> (64 - n.trailing_zeros())) as usize
}

/// The slot word of entry `i` whose key hashes to `hash`.
#[inline(always)]
fn slot_word(hash: u64, i: usize) -> u64 {
    (hash & 0xffff_ffff_0000_0000) | (i as u64 + 1)
}

impl<V> Default for StrTable<V> {
    fn default() -> Self {
        StrTable {
            bytes: Vec::new(),
            entries: Vec::new(),
            slots: Vec::new(),
        }
    }
}

#[inline]
fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

/// The 8 bytes of `s` at `at` (in bounds: the caller checked).
#[inline(always)]
fn load8(s: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(w)
}

/// `a == b`, inline for the short keys of a vocabulary (a `memcmp` call costs more).
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return load_short(a) == load_short(b);
    }
    if n <= 16 {
        return load8(a, 0) == load8(b, 0) && load8(a, n - 8) == load8(b, n - 8);
    }
    a == b
}

/// Where a lookup ended: at the entry holding the key, or at the empty slot where it
/// would go.
pub(crate) enum Found {
    At(usize),
    Vacant { slot: usize, hash: u64 },
}

impl<V: Copy> StrTable<V> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Key `i` (in insertion order).
    #[inline]
    pub fn key(&self, i: usize) -> &str {
        let e = &self.entries[i];
        let b = &self.bytes[e.start..e.start + e.len];
        // Keys are copied from `&str`s whole, so each is UTF-8.
        std::str::from_utf8(b).unwrap_or_default()
    }

    #[inline]
    pub fn value(&self, i: usize) -> V {
        self.entries[i].value
    }

    /// Looks `key` up.
    #[inline(always)]
    pub fn find(&self, key: &str) -> Found {
        let hash = hash(key.as_bytes());
        if self.slots.is_empty() {
            return Found::Vacant { slot: 0, hash };
        }
        let mask = self.slots.len() - 1;
        let tag = hash & 0xffff_ffff_0000_0000;
        let mut slot = home(hash, self.slots.len());
        loop {
            let s = self.slots[slot];
            if s == 0 {
                return Found::Vacant { slot, hash };
            }
            if s & 0xffff_ffff_0000_0000 == tag {
                let i = (s as u32 - 1) as usize;
                let e = &self.entries[i];
                if same(&self.bytes[e.start..e.start + e.len], key.as_bytes()) {
                    return Found::At(i);
                }
            }
            slot = (slot + 1) & mask;
        }
    }

    #[inline]
    pub fn get(&self, key: &str) -> Option<V> {
        match self.find(key) {
            Found::At(i) => Some(self.entries[i].value),
            Found::Vacant { .. } => None,
        }
    }

    /// Adds `key`, which [`Self::find`] just reported vacant at `slot` (no insert in
    /// between); returns its index.
    pub fn insert_vacant(&mut self, key: &str, slot: usize, hash: u64, value: V) -> usize {
        let i = self.entries.len();
        // So that the slots stay at most 2^32 (see `grow`).
        assert!(i < 1 << 31, "fewer than 2^31 keys");
        self.entries.push(Entry {
            start: self.bytes.len(),
            len: key.len(),
            value,
        });
        self.bytes.extend_from_slice(key.as_bytes());
        if (i + 1) * 2 > self.slots.len() {
            self.grow(slot_word(hash, i));
        } else {
            self.slots[slot] = slot_word(hash, i);
        }
        i
    }

    /// Adds `key` if absent; returns its index and whether it was added.
    #[inline]
    pub fn insert(&mut self, key: &str, value: V) -> (usize, bool) {
        match self.find(key) {
            Found::At(i) => (i, false),
            Found::Vacant { slot, hash } => (self.insert_vacant(key, slot, hash, value), true),
        }
    }

    /// Doubles the slots (at least 64) and places every entry again, from its slot word
    /// alone: `home` needs only the hash bits the word keeps (at most 2^32 slots); then
    /// `pending`, the word of the entry being added.
    #[cold]
    fn grow(&mut self, pending: u64) {
        let n = (self.slots.len() * 2).max(64);
        let old = std::mem::replace(&mut self.slots, vec![0; n]);
        let mask = n - 1;
        let mut place = |word: u64| {
            let mut slot = home(word, n);
            while self.slots[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = word;
        };
        for word in old.into_iter().filter(|&w| w != 0) {
            place(word);
        }
        place(pending);
    }

    pub fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
        self.slots.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_find_and_indices() {
        let mut t: StrTable<u32> = StrTable::default();
        let words: Vec<String> = (0..5000).map(|i| format!("w{i}")).collect();
        for (i, w) in words.iter().enumerate() {
            assert_eq!(t.insert(w, i as u32 * 2), (i, true));
        }
        assert_eq!(t.insert("", 7), (5000, true));
        assert_eq!(t.insert("é数", 9), (5001, true));
        for (i, w) in words.iter().enumerate() {
            assert_eq!(t.insert(w, 0), (i, false));
            assert_eq!(t.get(w), Some(i as u32 * 2));
            assert_eq!(t.key(i), w);
        }
        assert_eq!(t.get(""), Some(7));
        assert_eq!(t.key(5001), "é数");
        assert_eq!(t.get("w5000"), None);
        assert_eq!(t.len(), 5002);
        t.clear();
        assert_eq!(t.len(), 0);
        assert_eq!(t.get("w1"), None);
        assert_eq!(t.insert("w1", 3), (0, true));
        assert_eq!(t.get("w1"), Some(3));
    }
}
