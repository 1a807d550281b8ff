//! Shared test helpers: deterministic random sections and a naive BM25F reference that
//! works straight from the documents (no index structures).

#![allow(dead_code, clippy::needless_range_loop)] // the reference reads like the formula

pub mod scifact;

use std::collections::HashMap;

use kbdb_core::lexical::{Clause, Doc, Kbid, Query, FIELD_COUNT};
use kbdb_core::text::Analyzer;

/// A small xorshift generator: deterministic test data without extra dependencies.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Words the analyzer keeps as they are (no stop words, no stemming changes that merge
/// two of them).
pub const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango",
    "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "kernel", "socket", "buffer",
    "vector",
];

pub fn kbid(i: u64) -> Kbid {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

fn text(rng: &mut Rng, max_words: usize, skew: bool) -> String {
    let n = rng.below(max_words + 1);
    let mut s = String::new();
    for _ in 0..n {
        // Zipf-ish: low indices are frequent.
        let i = if skew {
            let top = rng.below(WORDS.len()) + 1;
            rng.below(top)
        } else {
            rng.below(WORDS.len())
        };
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[i]);
    }
    s
}

/// Fields per section, as the engine has them.
pub const F: usize = FIELD_COUNT;

pub fn random_docs(rng: &mut Rng, first_id: u64, n: usize) -> Vec<Doc> {
    (0..n)
        .map(|i| Doc {
            kbid: kbid(first_id + i as u64),
            fields: [
                text(rng, 4, false),
                text(rng, 30, true),
                text(rng, 6, false),
                text(rng, 3, false),
                // Anchor text: most sections have none.
                if rng.below(4) == 0 {
                    text(rng, 4, false)
                } else {
                    String::new()
                },
            ],
        })
        .collect()
}

/// One analyzed doc: per field, term → positions, and field lengths.
pub struct Analyzed {
    pub kbid: Kbid,
    pub fields: [HashMap<String, Vec<u32>>; F],
    pub lens: [u32; F],
}

pub fn analyze(analyzer: &Analyzer, docs: &[Doc]) -> Vec<Analyzed> {
    docs.iter()
        .map(|d| {
            let mut a = Analyzed {
                kbid: d.kbid,
                fields: Default::default(),
                lens: [0; F],
            };
            for f in 0..F {
                analyzer.analyze(&d.fields[f], |t, pos, _, _| {
                    a.lens[f] += 1;
                    a.fields[f].entry(t.to_string()).or_default().push(pos);
                });
            }
            a
        })
        .collect()
}

pub struct RefQuery {
    pub clauses: Vec<(Vec<(String, f64)>, bool)>,
    pub phrases: Vec<Vec<(String, u32)>>,
    pub strict: bool,
    pub k1: f64,
    pub b: [f64; F],
    pub w: [f64; F],
}

fn phrase_matches(d: &Analyzed, ph: &[(String, u32)]) -> bool {
    (0..F).any(|f| {
        let Some(first) = d.fields[f].get(&ph[0].0) else {
            return false;
        };
        first.iter().any(|&p0| {
            p0 >= ph[0].1
                && ph.iter().all(|(t, off)| {
                    d.fields[f]
                        .get(t)
                        .is_some_and(|ps| ps.contains(&(p0 - ph[0].1 + off)))
                })
        })
    })
}

/// BM25F straight from the definition over `corpus` (the stats population) for the docs
/// in `live`; returns kbid → score for every matching doc.
pub fn reference_scores(
    corpus: &[Analyzed],
    live: &[&Analyzed],
    q: &RefQuery,
) -> HashMap<Kbid, f64> {
    let n = corpus.len() as f64;
    let mut avg = [0f64; F];
    for d in corpus {
        for f in 0..F {
            avg[f] += d.lens[f] as f64 / n;
        }
    }
    let df = |t: &str| {
        corpus
            .iter()
            .filter(|d| (0..F).any(|f| d.fields[f].contains_key(t)))
            .count() as f64
    };
    let has = |d: &Analyzed, t: &str| (0..F).any(|f| d.fields[f].contains_key(t));
    let strict = q.strict && (q.clauses.iter().any(|c| c.1) || !q.phrases.is_empty());
    let mut out = HashMap::new();
    for d in live {
        let matches = if strict {
            q.clauses
                .iter()
                .filter(|c| c.1)
                .all(|c| c.0.iter().any(|(t, _)| has(d, t)))
                && q.phrases.iter().all(|ph| phrase_matches(d, ph))
        } else {
            q.clauses.iter().any(|c| c.0.iter().any(|(t, _)| has(d, t)))
        };
        if !matches {
            continue;
        }
        let mut score = 0.0;
        for (alts, _) in &q.clauses {
            let mut best = 0f64;
            for (t, w) in alts {
                let mut tf = 0.0;
                for f in 0..F {
                    let c = d.fields[f].get(t).map_or(0, Vec::len) as f64;
                    if c > 0.0 {
                        let norm = if avg[f] > 0.0 {
                            1.0 - q.b[f] + q.b[f] * d.lens[f] as f64 / avg[f]
                        } else {
                            1.0
                        };
                        tf += q.w[f] * c / norm;
                    }
                }
                if tf > 0.0 {
                    let dft = df(t);
                    let idf = (1.0 + (n - dft + 0.5) / (dft + 0.5)).ln();
                    best = best.max(w * idf * tf / (q.k1 + tf));
                }
            }
            score += best;
        }
        out.insert(d.kbid, score);
    }
    out
}

/// `kernel` required, `alpha` optional, and the phrase "kernel alpha": a query that touches
/// postings, positions and explain, for the readers' damage tests.
pub fn kernel_alpha_query(require_all: bool) -> Query {
    let alts = |t: &str| vec![(t.to_string(), 1.0)];
    Query {
        clauses: vec![
            Clause {
                alternatives: alts("kernel"),
                required: true,
            },
            Clause {
                alternatives: alts("alpha"),
                required: false,
            },
        ],
        phrases: vec![vec![("kernel".into(), 0), ("alpha".into(), 1)]],
        limit: 20,
        explain: true,
        require_all,
        ..Query::default()
    }
}
