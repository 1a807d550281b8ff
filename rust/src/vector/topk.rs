//! The bounded top-k heap of the scan: O(n log k), no allocation after the first `k`
//! pushes, and a cached threshold so that most candidates are rejected by one comparison.
//!
//! Order: higher score first; ties by smaller kbid, so results do not depend on how the
//! records are split between `vectors.idx`, the append file and threads. NaN scores never
//! enter.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{KbidHash, Score};

/// A scored kbid; `Ord` puts the *worse* item *greater*, so the max-heap's top is the
/// current worst of the kept items.
#[derive(Debug, Clone, Copy)]
struct Entry {
    score: Score,
    kbid: KbidHash,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.kbid.cmp(&other.kbid))
    }
}

/// Keeps the best `k` (score, kbid) pairs pushed.
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
    /// The worst kept score once `k` are kept; -inf before.
    threshold: Score,
}

impl TopK {
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
            threshold: Score::NEG_INFINITY,
        }
    }

    /// Whether a candidate with `score` could enter (false for NaN and when `k` is 0).
    #[inline]
    pub fn would_accept(&self, score: Score) -> bool {
        self.k > 0 && score >= self.threshold
    }

    #[inline]
    pub fn push(&mut self, score: Score, kbid: KbidHash) {
        if !self.would_accept(score) {
            return;
        }
        let e = Entry { score, kbid };
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if e < *worst {
                *worst = e;
            }
        }
        if self.heap.len() == self.k {
            self.threshold = self.heap.peek().map_or(Score::NEG_INFINITY, |w| w.score);
        }
    }

    pub fn merge(mut self, other: TopK) -> TopK {
        for e in other.heap {
            self.push(e.score, e.kbid);
        }
        self
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<(KbidHash, Score)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.kbid, e.score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_best_and_breaks_ties_by_kbid() {
        let mut t = TopK::new(3);
        for (s, k) in [
            (1.0, 5u8),
            (3.0, 1),
            (2.0, 9),
            (2.0, 2),
            (0.5, 0),
            (3.0, 0),
            (f32::NAN, 3),
        ] {
            t.push(s, [k; 16]);
        }
        let got: Vec<_> = t.into_sorted().iter().map(|x| (x.1, x.0[0])).collect();
        assert_eq!(got, vec![(3.0, 0), (3.0, 1), (2.0, 2)]);
        let mut z = TopK::new(0);
        z.push(1.0, [0; 16]);
        assert!(z.into_sorted().is_empty());
    }
}
