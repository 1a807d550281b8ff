//! SciFact (BEIR) for benches and timing tests: the corpus as sections (title → heading,
//! text → body) and the judged test queries parsed into clauses the way
//! `kbdb.search.query.parse_query` does without synonyms (one clause per distinct term; the
//! whole form of a split identifier is optional and also an alternative of each part at
//! 1/n weight). Phrases are ignored. `load` returns `None` when the dataset is missing.
//!
//! Kbids are the doc's line number as 16 big-endian bytes (`f"{i:032x}"` in Python).

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;

use kbdb_core::lexical::{Clause, Doc, Index, Kbid};
use kbdb_core::text::Analyzer;

pub struct SciFact {
    pub docs: Vec<Doc>,
    /// Per judged test query (in qrels order): its clauses.
    pub queries: Vec<Vec<Clause>>,
}

pub fn dir() -> PathBuf {
    std::env::var_os("SCIFACT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/datasets/scifact"))
}

pub fn kbid(i: usize) -> Kbid {
    (i as u128).to_be_bytes()
}

fn field(v: &serde_json::Value, key: &str) -> String {
    v.get(key)
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string()
}

/// The examples' first argument, a round count, or `default`.
pub fn rounds_arg(default: usize) -> usize {
    std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// [`load`], or an exit with status 2 and a message when the dataset is missing.
pub fn load_or_exit() -> SciFact {
    load().unwrap_or_else(|| {
        eprintln!("SciFact not found in {}", dir().display());
        std::process::exit(2)
    })
}

/// A new, empty index in a temporary directory (dropped with the directory).
pub fn empty_index() -> (tempfile::TempDir, Index) {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Index::open(dir.path(), true).expect("open");
    (dir, index)
}

pub fn load() -> Option<SciFact> {
    let dir = dir();
    let corpus = std::fs::read_to_string(dir.join("corpus.jsonl")).ok()?;
    let queries = std::fs::read_to_string(dir.join("queries.jsonl")).ok()?;
    let qrels = std::fs::read_to_string(dir.join("qrels/test.tsv")).ok()?;
    let docs = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let v: serde_json::Value = serde_json::from_str(l).expect("corpus line is JSON");
            Doc {
                kbid: kbid(i),
                fields: [
                    field(&v, "title"),
                    field(&v, "text"),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            }
        })
        .collect();
    let mut texts = HashMap::new();
    for l in queries.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(l).expect("query line is JSON");
        texts.insert(field(&v, "_id"), field(&v, "text"));
    }
    let analyzer = Analyzer::new();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for line in qrels.lines() {
        let id = line.split('\t').next().unwrap_or_default().to_string();
        if let Some(text) = texts.get(&id) {
            if !seen.contains(&id) {
                seen.push(id);
                out.push(clauses(&analyzer, text));
            }
        }
    }
    Some(SciFact { docs, queries: out })
}

/// `parse_query` without synonyms or phrases.
pub fn clauses(analyzer: &Analyzer, text: &str) -> Vec<Clause> {
    let tokens = analyzer.analyze_query(&text.replace('"', " "));
    let mut whole_of: HashMap<usize, (String, f32)> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.optional {
            let parts: Vec<usize> = (i + 1..tokens.len())
                .filter(|&j| tokens[j].surface == t.surface && !tokens[j].optional)
                .collect();
            for &j in &parts {
                whole_of.insert(j, (t.term.clone(), 1.0 / parts.len() as f32));
            }
        }
    }
    let mut out: Vec<Clause> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, t) in tokens.iter().enumerate() {
        if let Some(&c) = seen.get(&t.term) {
            if !t.optional {
                out[c].required = true;
            }
            continue;
        }
        let mut alternatives = vec![(t.term.clone(), 1.0)];
        if let Some((w, weight)) = whole_of.get(&i) {
            if *w != t.term {
                alternatives.push((w.clone(), *weight));
            }
        }
        seen.insert(t.term.clone(), out.len());
        out.push(Clause {
            alternatives,
            required: !t.optional,
        });
    }
    out
}
