//! The bounded top-k heap of the scans: O(n log k), no allocation after the first `k`
//! pushes, and a cached threshold so that most candidates are rejected by one comparison.
//!
//! Order: higher score first; ties by smaller key (kbid, or q8 row, which is in kbid
//! order), so results do not depend on how the records are split between `vectors.idx`,
//! the append file and threads. NaN scores never enter.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::{KbidHash, Score};

/// A score the heap can rank: a total order, and the lowest value (the threshold before
/// `k` items are kept).
pub trait Rank: Copy + PartialOrd {
    const LOWEST: Self;
    fn rank(self, other: Self) -> Ordering;
}

impl Rank for f32 {
    const LOWEST: f32 = f32::NEG_INFINITY;
    #[inline]
    fn rank(self, other: f32) -> Ordering {
        self.total_cmp(&other)
    }
}

impl Rank for i32 {
    const LOWEST: i32 = i32::MIN;
    #[inline]
    fn rank(self, other: i32) -> Ordering {
        self.cmp(&other)
    }
}

/// A scored key; `Ord` puts the *worse* item *greater*, so the max-heap's top is the
/// current worst of the kept items.
#[derive(Debug, Clone, Copy)]
struct Entry<S, K> {
    score: S,
    key: K,
}

impl<S: Rank, K: Ord> PartialEq for Entry<S, K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<S: Rank, K: Ord> Eq for Entry<S, K> {}
impl<S: Rank, K: Ord> PartialOrd for Entry<S, K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<S: Rank, K: Ord> Ord for Entry<S, K> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .rank(self.score)
            .then_with(|| self.key.cmp(&other.key))
    }
}

/// Keeps the best `k` (score, key) pairs pushed: higher score first, ties by smaller key.
/// The f32 scan keeps kbids ([`TopK`]); the q8 scan keeps row numbers by integer score.
pub struct Top<S, K> {
    k: usize,
    heap: BinaryHeap<Entry<S, K>>,
    /// The worst kept score once `k` are kept; [`Rank::LOWEST`] before.
    threshold: S,
}

/// The f32 scan's heap: kbids by dot product.
pub type TopK = Top<Score, KbidHash>;

impl<S: Rank, K: Ord + Copy> Top<S, K> {
    pub fn new(k: usize) -> Top<S, K> {
        Top {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
            threshold: S::LOWEST,
        }
    }

    /// Whether a candidate with `score` could enter (false for NaN and when `k` is 0).
    #[inline]
    pub fn would_accept(&self, score: S) -> bool {
        self.k > 0 && score >= self.threshold
    }

    #[inline]
    pub fn push(&mut self, score: S, key: K) {
        if !self.would_accept(score) {
            return;
        }
        let e = Entry { score, key };
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if e < *worst {
                *worst = e;
            }
        }
        if self.heap.len() == self.k {
            self.threshold = self.heap.peek().map_or(S::LOWEST, |w| w.score);
        }
    }

    pub fn merge(mut self, other: Top<S, K>) -> Top<S, K> {
        for e in other.heap {
            self.push(e.score, e.key);
        }
        self
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<(K, S)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.key, e.score))
            .collect()
    }

    /// The kept keys in ascending key order.
    pub fn into_keys(self) -> Vec<K> {
        let mut keys: Vec<K> = self.heap.into_iter().map(|e| e.key).collect();
        keys.sort_unstable();
        keys
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

    #[test]
    fn integer_rows_keep_best_and_break_ties_by_row() {
        let mut t: Top<i32, u32> = Top::new(3);
        for (s, r) in [(5, 9u32), (7, 4), (5, 2), (1, 0), (7, 8), (5, 1)] {
            t.push(s, r);
        }
        assert_eq!(t.into_keys(), vec![1, 4, 8]);
        let mut a: Top<i32, u32> = Top::new(2);
        a.push(3, 5);
        let mut b = Top::new(2);
        b.push(3, 1);
        b.push(2, 0);
        assert_eq!(a.merge(b).into_keys(), vec![1, 5]);
    }
}
