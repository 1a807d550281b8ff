//! Rough timings on the SciFact corpus (ignored by default; run with `--ignored
//! --nocapture`). Not a benchmark suite: `benches/` holds those.

use std::time::Instant;

use kbdb_core::lexical::{build_segment, Doc};
use kbdb_core::text::Analyzer;

fn scifact() -> Option<Vec<Doc>> {
    let path =
        std::env::var("SCIFACT").unwrap_or("/work/shared/datasets/scifact/corpus.jsonl".into());
    let text = std::fs::read_to_string(path).ok()?;
    let field = |line: &str, key: &str| -> String {
        let pat = format!("\"{key}\": \"");
        let Some(i) = line.find(&pat) else {
            return String::new();
        };
        let rest = &line[i + pat.len()..];
        let mut out = String::new();
        let mut esc = false;
        for c in rest.chars() {
            match (esc, c) {
                (true, _) => {
                    out.push(c);
                    esc = false
                }
                (false, '\\') => esc = true,
                (false, '"') => break,
                _ => out.push(c),
            }
        }
        out
    };
    Some(
        text.lines()
            .enumerate()
            .map(|(i, l)| {
                let mut kbid = [0u8; 16];
                kbid[..8].copy_from_slice(&(i as u64).to_be_bytes());
                Doc {
                    kbid,
                    fields: [field(l, "title"), field(l, "text"), String::new()],
                }
            })
            .collect(),
    )
}

#[test]
#[ignore]
fn build_scifact() {
    let Some(docs) = scifact() else { return };
    let analyzer = Analyzer::new();
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut n = 0usize;
            for d in &docs {
                for f in &d.fields {
                    analyzer.analyze(f, |_, _, _, _| n += 1);
                }
            }
        });
    });
    println!("analyze (cold thread): {:?}", t.elapsed());
    let t = Instant::now();
    let mut n = 0usize;
    for d in &docs {
        for f in &d.fields {
            analyzer.analyze(f, |_, _, _, _| n += 1);
        }
    }
    println!(
        "analyze (1 thread): {:?} for {} docs, {n} terms",
        t.elapsed(),
        docs.len()
    );
    let t = Instant::now();
    let (bytes, _) = build_segment(&analyzer, &docs).unwrap();
    println!("build_segment: {:?}, {} bytes", t.elapsed(), bytes.len());
}
