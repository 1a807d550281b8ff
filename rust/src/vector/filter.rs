//! Record filters: a fixed-size bitset over one file's record indices, bit set = the
//! record may be scored. Built once per snapshot for tombstones (the live records of
//! `vectors.idx`) and per query for an allow-list; the scan tests it before any dot
//! product and gathers the set positions a block at a time.

/// A fixed-length bitset; bit `i` of word `i / 64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bitset {
    len: usize,
    words: Vec<u64>,
}

impl Bitset {
    /// All clear.
    pub fn new(len: usize) -> Bitset {
        Bitset {
            len,
            words: vec![0; len.div_ceil(64)],
        }
    }

    /// All set.
    pub fn full(len: usize) -> Bitset {
        let mut words = vec![u64::MAX; len.div_ceil(64)];
        if !len.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (len % 64)) - 1;
            }
        }
        Bitset { len, words }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets bit `i`; ignores `i >= len`.
    pub fn insert(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] |= 1 << (i % 64);
        }
    }

    /// Clears bit `i`; ignores `i >= len`.
    pub fn remove(&mut self, i: usize) {
        if i < self.len {
            self.words[i / 64] &= !(1 << (i % 64));
        }
    }

    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 == 1)
    }

    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Writes the set positions in `[*pos, end)` into `out`, in order, until `out` is full;
    /// advances `*pos` past the last position examined. Returns how many were written.
    pub fn fill(&self, pos: &mut usize, end: usize, out: &mut [u32]) -> usize {
        let end = end.min(self.len);
        let mut n = 0;
        while *pos < end && n < out.len() {
            let w = *pos / 64;
            let mut bits = self.words[w] >> (*pos % 64) << (*pos % 64);
            let word_end = ((w + 1) * 64).min(end);
            if word_end < (w + 1) * 64 {
                bits &= (1u64 << (word_end % 64)) - 1;
            }
            while bits != 0 && n < out.len() {
                let b = bits.trailing_zeros() as usize;
                out[n] = (w * 64 + b) as u32;
                n += 1;
                bits &= bits - 1;
            }
            *pos = if bits == 0 {
                word_end
            } else {
                w * 64 + bits.trailing_zeros() as usize
            };
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_visits_every_set_bit_once() {
        let len = 300;
        let mut b = Bitset::new(len);
        let set: Vec<usize> = (0..len).filter(|i| i % 7 == 0 || i % 64 == 63).collect();
        set.iter().for_each(|&i| b.insert(i));
        for cap in [1, 3, 64, 500] {
            for (start, end) in [(0, len), (5, 130), (64, 128), (299, 300), (10, 10)] {
                let mut got = Vec::new();
                let mut pos = start;
                let mut buf = vec![0u32; cap];
                loop {
                    let n = b.fill(&mut pos, end, &mut buf);
                    if n == 0 {
                        break;
                    }
                    got.extend(buf[..n].iter().map(|&x| x as usize));
                }
                let want: Vec<usize> = set
                    .iter()
                    .copied()
                    .filter(|&i| i >= start && i < end)
                    .collect();
                assert_eq!(got, want, "cap {cap} range {start}..{end}");
            }
        }
        assert_eq!(Bitset::full(70).count(), 70);
        assert!(!Bitset::full(70).contains(70));
    }
}
