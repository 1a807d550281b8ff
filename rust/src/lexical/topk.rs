//! Top-k selection with a bounded min-heap: O(n log k) and no allocation after the first
//! `k` pushes.
//!
//! Order: higher score first; ties by smaller key (kbid), so results do not depend on how
//! the index is segmented. NaN scores never enter (the scorer cannot produce them).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Score;

/// A scored item; `Ord` puts the *better* item *first* (smaller).
#[derive(Debug, Clone, Copy)]
pub struct Scored<K> {
    pub score: Score,
    pub key: K,
}

impl<K: Ord> PartialEq for Scored<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<K: Ord> Eq for Scored<K> {}
impl<K: Ord> PartialOrd for Scored<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord> Ord for Scored<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then_with(|| self.key.cmp(&other.key))
    }
}

/// Keeps the best `k` items pushed.
pub struct TopK<K: Ord> {
    k: usize,
    heap: BinaryHeap<Scored<K>>,
}

impl<K: Ord> TopK<K> {
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// The score an item needs to enter once the heap is full (ties may enter, on key).
    #[inline]
    pub fn threshold(&self) -> Option<Score> {
        if self.heap.len() < self.k {
            return None;
        }
        self.heap.peek().map(|w| w.score)
    }

    pub fn capacity(&self) -> usize {
        self.k
    }

    /// Whether an item with this score could enter (cheap pre-check before building a key).
    #[inline]
    pub fn would_accept(&self, score: Score) -> bool {
        self.k > 0
            && (self.heap.len() < self.k || self.heap.peek().is_some_and(|w| score >= w.score))
    }

    /// A score below which nothing enters: `-∞` while the heap has room, the worst kept
    /// score once full, `+∞` for `k = 0`. A score at or above it may enter
    /// ([`would_accept`](TopK::would_accept) decides), so a loop can test it alone. For
    /// scores that are not NaN, which the scorer never makes (parameters are validated).
    #[inline]
    pub fn bar(&self) -> Score {
        if self.k == 0 {
            Score::INFINITY
        } else if self.heap.len() < self.k {
            Score::NEG_INFINITY
        } else {
            self.heap.peek().map_or(Score::NEG_INFINITY, |w| w.score)
        }
    }

    #[inline]
    pub fn push(&mut self, item: Scored<K>) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            self.heap.push(item);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if item < *worst {
                *worst = item;
            }
        }
    }

    pub fn extend(&mut self, other: TopK<K>) {
        for item in other.heap {
            self.push(item);
        }
    }

    /// Best first.
    pub fn into_sorted(self) -> Vec<Scored<K>> {
        self.heap.into_sorted_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_best_and_breaks_ties_by_key() {
        let mut t = TopK::new(3);
        for (s, k) in [(1.0, 5), (3.0, 1), (2.0, 9), (2.0, 2), (0.5, 0), (3.0, 0)] {
            t.push(Scored { score: s, key: k });
        }
        let got: Vec<_> = t.into_sorted().iter().map(|x| (x.score, x.key)).collect();
        assert_eq!(got, vec![(3.0, 0), (3.0, 1), (2.0, 2)]);
    }

    #[test]
    fn bar_admits_every_score_that_may_enter() {
        assert_eq!(TopK::<u32>::new(0).bar(), Score::INFINITY);
        let mut t = TopK::new(2);
        assert_eq!(t.bar(), Score::NEG_INFINITY);
        t.push(Scored { score: 1.0, key: 1 });
        assert_eq!(t.bar(), Score::NEG_INFINITY);
        t.push(Scored { score: 3.0, key: 2 });
        assert_eq!(t.bar(), 1.0);
        // A tie at the bar may enter on its key.
        assert!(t.would_accept(1.0));
        t.push(Scored { score: 1.0, key: 0 });
        assert_eq!(t.into_sorted()[1].key, 0);
    }
}
