//! The in-memory segment writer: analyzes a batch of sections in parallel and builds its
//! inverted index, then hands the sorted terms to the [`SegmentSerializer`].
//!
//! Docs are split into chunks (one per rayon thread or a few; at least [`CHUNK_DOCS`]);
//! each task indexes its chunk with its own [`TermIds`] and global ordinals (chunk base +
//! index), so concatenating the chunks' postings in chunk order keeps every posting list
//! sorted.
//!
//! A chunk's postings are streams in one arena ([`Postings`]): per term a chain of blocks
//! that double in size, so indexing a token allocates nothing and a batch's postings are a
//! few large allocations instead of three growing vectors per term. A term's stream holds,
//! per (doc, field) in which it occurs, the group `[ord, field << FIELD_SHIFT | count, positions]`.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use rayon::prelude::*;

use super::postings::TermPostings;
use super::segment::SegmentSerializer;
use super::{Doc, DocOrd, Kbid, FIELD_COUNT};
use crate::error::Result;
use crate::text::{Analyzer, FxHasher, TermIds};

/// Docs per parallel indexing task at least.
pub const CHUNK_DOCS: usize = 256;
/// Tasks per rayon thread at most, with more than one thread: a few, for balance. Fewer,
/// larger chunks build fewer vocabularies, each of which is merged afterwards; with one
/// thread there is nothing to balance and the batch is one chunk.
const TASKS_PER_THREAD: usize = 2;
/// Words in a term's first block (the last word of a block links to the next).
const FIRST_BLOCK: u32 = 8;
/// Words in a block at most.
const MAX_BLOCK: u32 = 1 << 12;
/// `last_doc` of a term not seen yet.
const NO_DOC: u32 = u32::MAX;

/// Where a term's stream is being written.
#[derive(Clone, Copy)]
struct TermState {
    /// First word of the stream.
    head: u32,
    /// Next word to write, and the current block's link word (where it is full).
    at: u32,
    end: u32,
    /// Size of the current block.
    block: u32,
    /// The current group's doc and field, and the index of its field-and-count word.
    last_doc: DocOrd,
    last_field: u32,
    count_at: u32,
}

/// A group's second word: the field in the top bits (as many as a field index needs: 3
/// for five fields), the count below.
const FIELD_BITS: u32 = usize::BITS - (FIELD_COUNT - 1).leading_zeros();
const FIELD_SHIFT: u32 = 32 - FIELD_BITS;
const COUNT_MASK: u32 = (1 << FIELD_SHIFT) - 1;

/// All terms' streams of one chunk; see the module doc.
#[derive(Default)]
struct Postings {
    arena: Vec<u32>,
    terms: Vec<TermState>,
}

fn arena_index(n: usize) -> u32 {
    u32::try_from(n).expect("a chunk's postings fit in 16 GiB")
}

/// Starts a block of `size` words; returns its first word.
#[inline]
fn new_block(arena: &mut Vec<u32>, size: u32) -> u32 {
    let at = arena_index(arena.len());
    arena_index(arena.len() + size as usize);
    arena.resize(arena.len() + size as usize, 0);
    at
}

/// Links a new block after `t`'s full one.
#[cold]
#[inline(never)]
fn next_block(arena: &mut Vec<u32>, t: &mut TermState) {
    let block = (t.block * 2).min(MAX_BLOCK);
    let b = new_block(arena, block);
    arena[t.end as usize] = b;
    t.at = b;
    t.end = b + block - 1;
    t.block = block;
}

#[inline(always)]
fn push(arena: &mut Vec<u32>, t: &mut TermState, value: u32) {
    if t.at == t.end {
        next_block(arena, t);
    }
    arena[t.at as usize] = value;
    t.at += 1;
}

impl Postings {
    /// Adds the token of term `id` at `position` in field `f` of doc `ord`.
    #[inline]
    fn add(&mut self, id: u32, ord: DocOrd, f: usize, position: u32) {
        let id = id as usize;
        let Postings { arena, terms } = self;
        if id >= terms.len() {
            // Ids are given in order of first appearance: this is a new term.
            let b = new_block(arena, FIRST_BLOCK);
            terms.resize(
                id + 1,
                TermState {
                    head: b,
                    at: b,
                    end: b + FIRST_BLOCK - 1,
                    block: FIRST_BLOCK,
                    last_doc: NO_DOC,
                    last_field: 0,
                    count_at: 0,
                },
            );
        }
        let t = &mut terms[id];
        let f = f as u32;
        // A new group for a new (doc, field), and (never in practice) for a count that
        // would not fit in its bits.
        if t.last_doc != ord
            || t.last_field != f
            || arena[t.count_at as usize] & COUNT_MASK == COUNT_MASK
        {
            push(arena, t, ord);
            push(arena, t, f << FIELD_SHIFT);
            t.last_doc = ord;
            t.last_field = f;
            t.count_at = t.at - 1;
        }
        push(arena, t, position);
        arena[t.count_at as usize] += 1;
    }

    /// Appends term `id`'s postings to `out` (docs after `out`'s, as chunks follow each
    /// other).
    fn read_into(&self, id: usize, out: &mut TermPostings) {
        let t = self.terms[id];
        let mut r = StreamReader {
            arena: &self.arena,
            at: t.head,
            end: t.head + FIRST_BLOCK - 1,
            block: FIRST_BLOCK,
        };
        while r.at != t.at {
            let ord = r.next();
            let word = r.next();
            let f = (word >> FIELD_SHIFT) as usize;
            let n = word & COUNT_MASK;
            if out.docs.last() != Some(&ord) {
                out.docs.push(ord);
                out.tfs.push([0; FIELD_COUNT]);
            }
            if let Some(tfs) = out.tfs.last_mut() {
                tfs[f] += n;
            }
            for _ in 0..n {
                out.positions.push(r.next());
            }
        }
    }
}

/// Reads a term's stream, following the block links as [`push`] laid them.
struct StreamReader<'a> {
    arena: &'a [u32],
    at: u32,
    end: u32,
    block: u32,
}

impl StreamReader<'_> {
    #[inline]
    fn next(&mut self) -> u32 {
        if self.at == self.end {
            self.block = (self.block * 2).min(MAX_BLOCK);
            self.at = self.arena[self.end as usize];
            self.end = self.at + self.block - 1;
        }
        let v = self.arena[self.at as usize];
        self.at += 1;
        v
    }
}

/// One chunk's inverted index.
struct ChunkIndex {
    ids: TermIds,
    postings: Postings,
    lens: Vec<[u32; FIELD_COUNT]>,
}

fn index_chunk(analyzer: &Analyzer, base: DocOrd, docs: &[Doc]) -> ChunkIndex {
    let mut ids = TermIds::new();
    let mut postings = Postings::default();
    let bytes: usize = docs.iter().flat_map(|d| &d.fields).map(String::len).sum();
    // About a token per 8 bytes of prose, two words of group header per token or so, and
    // block slack: the arena rarely grows (a reallocation copies it).
    postings.arena.reserve(bytes / 2);
    let mut lens = Vec::with_capacity(docs.len());
    for (i, doc) in docs.iter().enumerate() {
        let ord = base + i as DocOrd;
        let mut row = [0u32; FIELD_COUNT];
        for (f, text) in doc.fields.iter().enumerate() {
            analyzer.analyze_ids(text, &mut ids, |id, position| {
                row[f] += 1;
                postings.add(id, ord, f, position);
            });
        }
        lens.push(row);
    }
    ChunkIndex {
        ids,
        postings,
        lens,
    }
}

/// Builds the bytes of one segment holding `docs` (ordinal = index in `docs`). Returns the
/// file bytes and, per doc, how many terms were indexed.
pub fn build_segment(analyzer: &Analyzer, docs: &[Doc]) -> Result<(Vec<u8>, Vec<u32>)> {
    let threads = rayon::current_num_threads();
    let tasks = if threads > 1 {
        threads * TASKS_PER_THREAD
    } else {
        1
    };
    let size = docs.len().div_ceil(tasks).max(CHUNK_DOCS);
    let chunks: Vec<ChunkIndex> = docs
        .par_chunks(size)
        .enumerate()
        .map(|(c, chunk)| index_chunk(analyzer, (c * size) as DocOrd, chunk))
        .collect();
    let lens: Vec<[u32; FIELD_COUNT]> =
        chunks.iter().flat_map(|c| c.lens.iter().copied()).collect();
    // Every distinct term, and per chunk its id there (`NO_DOC` where absent).
    let mut names: Vec<&str> = Vec::new();
    let mut local: Vec<Vec<u32>> = Vec::with_capacity(chunks.len());
    if let [only] = chunks.as_slice() {
        names = (0..only.ids.len() as u32)
            .map(|id| only.ids.term(id))
            .collect();
        local.push((0..names.len() as u32).collect());
    } else {
        let mut at: HashMap<&str, usize, BuildHasherDefault<FxHasher>> = HashMap::default();
        for c in &chunks {
            for id in 0..c.ids.len() as u32 {
                let name = c.ids.term(id);
                if !at.contains_key(name) {
                    at.insert(name, names.len());
                    names.push(name);
                }
            }
        }
        for c in &chunks {
            let mut map = vec![NO_DOC; names.len()];
            for id in 0..c.ids.len() as u32 {
                map[at[c.ids.term(id)]] = id;
            }
            local.push(map);
        }
    }
    let mut order: Vec<u32> = (0..names.len() as u32).collect();
    order.par_sort_unstable_by(|&a, &b| {
        names[a as usize]
            .as_bytes()
            .cmp(names[b as usize].as_bytes())
    });
    let mut ser = SegmentSerializer::new();
    let mut p = TermPostings::default();
    for &g in &order {
        p.clear();
        for (c, map) in chunks.iter().zip(&local) {
            let id = map[g as usize];
            if id != NO_DOC {
                c.postings.read_into(id as usize, &mut p);
            }
        }
        ser.add_term(names[g as usize].as_bytes(), &p)?;
    }
    drop(order);
    let kbids: Vec<Kbid> = docs.iter().map(|d| d.kbid).collect();
    let counts = lens.iter().map(|r| r.iter().sum()).collect();
    Ok((ser.finish(&kbids, &lens)?, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(n: usize) -> Vec<Doc> {
        let words = [
            "alpha",
            "Beta",
            "gamma,",
            "delta.",
            "the",
            "camelCase",
            "数据库",
            "x2",
        ];
        (0..n)
            .map(|i| {
                let body: Vec<&str> = (0..40)
                    .map(|k| words[(i * 7 + k * k) % words.len()])
                    .collect();
                Doc {
                    kbid: (i as u128).to_be_bytes(),
                    fields: [
                        format!("Doc {i}"),
                        body.join(" "),
                        format!("fn f{}() {{}}", i % 5),
                        format!("guide part{}", i % 3),
                        if i % 4 == 0 {
                            format!("see part{}", i % 3)
                        } else {
                            String::new()
                        },
                    ],
                }
            })
            .collect()
    }

    /// One chunk or several (more threads): the same segment, byte for byte.
    #[test]
    fn chunking_does_not_change_the_segment() {
        let docs = docs(3 * CHUNK_DOCS + 17);
        let analyzer = Analyzer::new();
        let build = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            pool.install(|| build_segment(&analyzer, &docs).expect("build"))
        };
        let one = build(1);
        assert_eq!(build(4), one);
        assert_eq!(one.1.len(), docs.len());
    }

    /// A term whose stream crosses many blocks reads back whole, in every field (the
    /// last one's index fills the field bits of a group's second word).
    #[test]
    fn long_streams_follow_their_block_links() {
        let mut p = Postings::default();
        let fields = FIELD_COUNT as u32;
        let n = fields as usize * MAX_BLOCK as usize;
        for i in 0..n as u32 {
            p.add(0, i / fields, (i % fields) as usize, i);
            p.add(1, i, 1, 7);
        }
        let mut out = TermPostings::default();
        p.read_into(0, &mut out);
        assert_eq!(out.docs, (0..n as u32 / fields).collect::<Vec<_>>());
        assert!(out.tfs.iter().all(|t| *t == [1; FIELD_COUNT]));
        assert_eq!(out.positions, (0..n as u32).collect::<Vec<_>>());
        let mut out = TermPostings::default();
        p.read_into(1, &mut out);
        assert_eq!(out.docs.len(), n);
        assert_eq!(out.positions, vec![7; n]);
    }
}
