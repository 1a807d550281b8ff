//! Helpers shared by the `vector_*` integration tests: a seeded generator, random
//! L2-normalized vectors, and a brute-force reference ranking.
#![allow(dead_code)]

use std::path::Path;

use kbdb_core::vector::{kernel, KbidHash, OpenMode, Snapshot, VectorIndex};

/// xorshift64*: deterministic, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    pub fn f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn kbid(&mut self) -> KbidHash {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        k[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        k
    }
}

pub fn unit_vector(rng: &mut Rng, dims: usize) -> Vec<f32> {
    let mut v: Vec<f32> = (0..dims).map(|_| rng.f32()).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// `n` distinct random kbids and their unit vectors as one little-endian byte buffer.
pub fn dataset(rng: &mut Rng, n: usize, dims: usize) -> (Vec<KbidHash>, Vec<u8>) {
    let mut kbids: Vec<KbidHash> = (0..n).map(|_| rng.kbid()).collect();
    kbids.sort_unstable();
    kbids.dedup();
    while kbids.len() < n {
        kbids.push(rng.kbid());
        kbids.sort_unstable();
        kbids.dedup();
    }
    // Shuffle so that writers must sort.
    for i in (1..kbids.len()).rev() {
        let j = rng.below(i + 1);
        kbids.swap(i, j);
    }
    let mut bytes = Vec::with_capacity(n * dims * 4);
    for _ in 0..n {
        for x in unit_vector(rng, dims) {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    (kbids, bytes)
}

/// The reference ranking: every live vector scored with the scan's kernel, sorted by
/// score descending then kbid ascending, truncated.
pub fn brute_force(live: &[(KbidHash, Vec<u8>)], q: &[f32], limit: usize) -> Vec<(KbidHash, f32)> {
    let k = kernel::best();
    let mut all: Vec<(KbidHash, f32)> = live.iter().map(|(id, v)| (*id, k.dot(q, v))).collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(limit);
    all
}

/// Every live (kbid, vector bytes) of a snapshot, via its public lookup.
pub fn live_set(snap: &Snapshot) -> Vec<(KbidHash, Vec<u8>)> {
    snap.kbids()
        .iter()
        .map(|k| (*k, snap.lookup(k).expect("a listed kbid is live").to_vec()))
        .collect()
}

/// A new index of model "m" in `dir`, with the quantized scan on or off.
pub fn create_index(dir: &Path, dims: u16, quantized: bool) -> VectorIndex {
    let ix = VectorIndex::open(
        dir,
        OpenMode::Create {
            model_name: "m".into(),
            dimensions: dims,
        },
    )
    .unwrap();
    ix.set_quantized(quantized).unwrap();
    ix
}

/// Little-endian bytes of `v` (a stored vector).
pub fn le(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
