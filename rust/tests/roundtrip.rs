//! Property tests: postings encode/decode round-trips (with seeks and positions), and
//! top-k selection against sort-and-truncate.

use kbdb_core::lexical::postings::{serialize_term, PostingsCursor, TermPostings, TERMINATED};
use kbdb_core::lexical::topk::{Scored, TopK};
use kbdb_core::lexical::FIELD_COUNT;
use proptest::prelude::*;

fn postings() -> impl Strategy<Value = TermPostings> {
    prop::collection::vec(
        (
            1u32..50,
            prop::array::uniform::<_, FIELD_COUNT>(0u32..4),
            any::<u32>(),
        ),
        1..400,
    )
    .prop_map(|rows| {
        let mut p = TermPostings::default();
        let mut doc = 0u32;
        for (i, (gap, mut tfs, seed)) in rows.into_iter().enumerate() {
            doc += if i == 0 { gap - 1 } else { gap };
            if tfs == [0; FIELD_COUNT] {
                tfs[1] = 1;
            }
            p.docs.push(doc);
            p.tfs.push(tfs);
            let mut s = seed;
            for tf in tfs {
                let mut pos = s % 7;
                for _ in 0..tf {
                    p.positions.push(pos);
                    s = s.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    pos += 1 + s % 5;
                }
            }
        }
        p
    })
}

proptest! {
    #[test]
    fn postings_round_trip(p in postings(), targets in prop::collection::vec(0u32..25_000, 0..20)) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        // Something before the term, so offsets are not trivially zero.
        a.extend_from_slice(&[9; 5]);
        b.extend_from_slice(&[9; 3]);
        let (po, qo) = serialize_term(&p, &mut a, &mut b).unwrap();
        let max_doc = p.docs.last().unwrap() + 1;
        let mut c = PostingsCursor::new(&a[po as usize..], &b[qo as usize..], p.len() as u32, max_doc).unwrap();
        let mut pos_i = 0;
        let mut buf = Vec::new();
        for i in 0..p.len() {
            prop_assert_eq!(c.doc(), p.docs[i]);
            prop_assert_eq!(c.tfs().unwrap(), p.tfs[i]);
            for f in 0..FIELD_COUNT {
                c.positions(f, &mut buf).unwrap();
                let tf = p.tfs[i][f] as usize;
                prop_assert_eq!(&buf[..], &p.positions[pos_i..pos_i + tf]);
                pos_i += tf;
            }
            c.advance().unwrap();
        }
        prop_assert_eq!(c.doc(), TERMINATED);

        let mut targets = targets;
        targets.sort_unstable();
        let mut c = PostingsCursor::new(&a[po as usize..], &b[qo as usize..], p.len() as u32, max_doc).unwrap();
        for t in targets {
            let want = p.docs.iter().copied().find(|&d| d >= t).unwrap_or(TERMINATED);
            prop_assert_eq!(c.seek(t).unwrap(), want);
        }
    }

    #[test]
    fn truncated_postings_never_panic(p in postings(), cut in 0usize..4000) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        serialize_term(&p, &mut a, &mut b).unwrap();
        let a = &a[..cut.min(a.len())];
        let b = &b[..(cut / 2).min(b.len())];
        if let Ok(mut c) = PostingsCursor::new(a, b, p.len() as u32, 1 << 20) {
            let mut buf = Vec::new();
            while c.doc() != TERMINATED {
                if c.positions(1, &mut buf).is_err() || c.advance().is_err() {
                    break;
                }
            }
        };
    }

    #[test]
    fn topk_matches_sort_and_truncate(
        items in prop::collection::vec((0u8..20, 0u32..1000), 0..300),
        k in 0usize..50,
    ) {
        let mut top = TopK::new(k);
        for &(s, key) in &items {
            top.push(Scored { score: f32::from(s) / 4.0, key });
        }
        let got: Vec<(f32, u32)> = top.into_sorted().into_iter().map(|x| (x.score, x.key)).collect();
        let mut want: Vec<(f32, u32)> = items.iter().map(|&(s, key)| (f32::from(s) / 4.0, key)).collect();
        want.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        want.truncate(k);
        prop_assert_eq!(got, want);
    }
}
