//! BM25F scoring (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
//! Beyond", Foundations and Trends in IR 3(4), 2009, §3.5 and eq. 3.19–3.20).
//!
//! Per query term t and document d, the fields' term frequencies are length-normalized
//! and weighted before the single saturation:
//!
//! ```text
//! tf̃(t,d)  = Σ_f w_f · tf_f(t,d) / (1 − b_f + b_f · len_f(d) / avglen_f)
//! score    = idf(t) · tf̃ / (k1 + tf̃)
//! idf(t)   = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! N, df and avglen_f are corpus-wide ([`CorpusStats`]): summed over all segments with
//! tombstoned docs included until a merge drops them, as Lucene does. A field that is empty
//! in the whole corpus (avglen 0) is normalized by 1. The per-doc factors
//! `w_f / norm_f` are computed once per document ([`FieldNorms`]) and shared by all terms.

use super::{Score, FIELD_COUNT};
use crate::error::{Error, Result};

/// BM25F parameters: saturation `k1`, per-field length normalization `b` and weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25fParams {
    pub k1: f32,
    pub b: [f32; FIELD_COUNT],
    pub weights: [f32; FIELD_COUNT],
}

impl Default for Bm25fParams {
    fn default() -> Self {
        Bm25fParams {
            k1: 1.2,
            b: [0.75; FIELD_COUNT],
            weights: [2.0, 1.0, 1.0, 1.0, 2.0],
        }
    }
}

/// The largest field weight accepted: far above any useful weight (the tuned ones are
/// 0–10). Since `tf_f ≤ len_f`, a field adds at most `w_f · max(avglen_f, tf_f)` to tf̃,
/// under 10⁶ · 2³² at this cap, so tf̃ and `idf · tf̃` stay far inside f32's range and no
/// score becomes NaN (∞/∞), which the evaluators would each rank differently.
pub const MAX_FIELD_WEIGHT: f32 = 1e6;

impl Bm25fParams {
    pub fn validate(&self) -> Result<()> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(Error::InvalidArgument(format!(
                "k1 must be >= 0, got {}",
                self.k1
            )));
        }
        for f in 0..FIELD_COUNT {
            let b = self.b[f];
            if !(0.0..=1.0).contains(&b) {
                return Err(Error::InvalidArgument(format!(
                    "b must be in [0, 1], got {b}"
                )));
            }
            let w = self.weights[f];
            if !(0.0..=MAX_FIELD_WEIGHT).contains(&w) {
                return Err(Error::InvalidArgument(format!(
                    "field weight must be from 0 to {MAX_FIELD_WEIGHT}, got {w}"
                )));
            }
        }
        Ok(())
    }
}

/// Corpus-wide statistics of one snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CorpusStats {
    /// Documents, tombstoned ones included.
    pub docs: u64,
    /// Sum of field lengths over those documents.
    pub field_totals: [u64; FIELD_COUNT],
}

impl CorpusStats {
    pub fn idf(&self, df: u64) -> Score {
        let n = self.docs as f64;
        let df = df as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as Score
    }

    pub fn avg_lens(&self) -> [f64; FIELD_COUNT] {
        let n = self.docs.max(1) as f64;
        self.field_totals.map(|t| t as f64 / n)
    }
}

/// Per-snapshot constants of the length normalization.
#[derive(Debug, Clone, Copy)]
pub struct FieldNorms {
    k1: Score,
    weights: [Score; FIELD_COUNT],
    /// `1 − b_f` (or 1 when the field is empty corpus-wide).
    base: [Score; FIELD_COUNT],
    /// `b_f / avglen_f` (or 0).
    slope: [Score; FIELD_COUNT],
}

impl FieldNorms {
    pub fn new(params: &Bm25fParams, stats: &CorpusStats) -> Self {
        let avg = stats.avg_lens();
        let mut base = [1.0; FIELD_COUNT];
        let mut slope = [0.0; FIELD_COUNT];
        for f in 0..FIELD_COUNT {
            if avg[f] > 0.0 {
                base[f] = 1.0 - params.b[f];
                slope[f] = (f64::from(params.b[f]) / avg[f]) as Score;
            }
        }
        FieldNorms {
            k1: params.k1,
            weights: params.weights,
            base,
            slope,
        }
    }

    /// The bits of everything `doc_factors` depends on: equal keys give equal factors.
    pub fn key(&self) -> [u32; 3 * FIELD_COUNT] {
        let mut k = [0u32; 3 * FIELD_COUNT];
        for f in 0..FIELD_COUNT {
            k[f] = self.weights[f].to_bits();
            k[FIELD_COUNT + f] = self.base[f].to_bits();
            k[2 * FIELD_COUNT + f] = self.slope[f].to_bits();
        }
        k
    }

    /// `w_f / norm_f(d)` for a document with these field lengths.
    #[inline]
    pub fn doc_factors(&self, lens: [u32; FIELD_COUNT]) -> [Score; FIELD_COUNT] {
        let mut out = [0.0; FIELD_COUNT];
        for f in 0..FIELD_COUNT {
            let norm = self.base[f] + self.slope[f] * lens[f] as Score;
            out[f] = if norm > 0.0 {
                self.weights[f] / norm
            } else {
                0.0
            };
        }
        out
    }

    /// The saturated score of one term in one doc, and its pseudo-frequency tf̃.
    #[inline]
    pub fn score(
        &self,
        idf: Score,
        tfs: [u32; FIELD_COUNT],
        factors: [Score; FIELD_COUNT],
    ) -> Score {
        let tf = pseudo_tf(tfs, factors);
        if tf > 0.0 {
            idf * tf / (self.k1 + tf)
        } else {
            0.0
        }
    }
}

impl FieldNorms {
    /// [`FieldNorms::score`] of `n` postings at once, bit for bit: the field frequencies
    /// `tfs[f][j]` and length factors `factors[f][j]` of posting `j` in (one slice per
    /// field), scores out. A pass per field adds its `tf_f · factor_f` to each posting's
    /// tf̃ in [`pseudo_tf`]'s order, then one pass saturates: each pass is a plain loop
    /// over slices, so the products and the divisions of a block run as vector
    /// instructions instead of one dependent chain per posting.
    ///
    /// Only the fields of `fields` (bit `f`: field `f`) are added: the caller leaves out
    /// those whose frequencies are all 0 in these postings (an empty field of the block:
    /// the anchor field of a knowledge base without links, often code and path), whose
    /// `0 · factor` would add an exact +0.0. Their factors need not be filled.
    #[inline(always)]
    pub fn score_block(
        &self,
        idf: Score,
        tfs: [&[u32]; FIELD_COUNT],
        factors: [&[Score]; FIELD_COUNT],
        fields: u8,
        out: &mut [Score],
    ) {
        let n = out.len();
        out.fill(0.0);
        for f in (0..FIELD_COUNT).filter(|&f| fields >> f & 1 == 1) {
            for ((o, &tf), &factor) in out.iter_mut().zip(&tfs[f][..n]).zip(&factors[f][..n]) {
                *o += tf as Score * factor;
            }
        }
        let k1 = self.k1;
        for o in out.iter_mut() {
            let tf = *o;
            *o = if tf > 0.0 { idf * tf / (k1 + tf) } else { 0.0 };
        }
    }
}

/// tf̃ = Σ_f tf_f · w_f / norm_f.
#[inline]
pub fn pseudo_tf(tfs: [u32; FIELD_COUNT], factors: [Score; FIELD_COUNT]) -> Score {
    let mut t = 0.0;
    for f in 0..FIELD_COUNT {
        t += tfs[f] as Score * factors[f];
    }
    t
}

/// Splits a term's score over fields in proportion to each field's share of tf̃.
pub fn field_shares(
    score: Score,
    tfs: [u32; FIELD_COUNT],
    factors: [Score; FIELD_COUNT],
) -> [Score; FIELD_COUNT] {
    let total = pseudo_tf(tfs, factors);
    let mut out = [0.0; FIELD_COUNT];
    if total > 0.0 {
        for f in 0..FIELD_COUNT {
            out[f] = score * tfs[f] as Score * factors[f] / total;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula() {
        let params = Bm25fParams::default();
        let stats = CorpusStats {
            docs: 10,
            field_totals: [20, 100, 0, 0, 0],
        };
        let norms = FieldNorms::new(&params, &stats);
        let f = norms.doc_factors([1, 20, 0, 0, 0]);
        let s = norms.score(stats.idf(3), [1, 2, 0, 0, 0], f);
        let tf = 2.0 * 1.0 / (0.25 + 0.75 * 1.0 / 2.0) + 2.0 / (0.25 + 0.75 * 20.0 / 10.0);
        let idf = (1.0f64 + (10.0 - 3.0 + 0.5) / 3.5).ln();
        let want = idf * tf / (1.2 + tf);
        assert!((f64::from(s) - want).abs() < 1e-5, "{s} vs {want}");
        let shares = field_shares(s, [1, 2, 0, 0, 0], f);
        assert!((shares.iter().sum::<f32>() - s).abs() < 1e-5);
        assert!(params.validate().is_ok());
        assert!(Bm25fParams { k1: -1.0, ..params }.validate().is_err());
    }

    /// Field weights are capped so that no score overflows: at the cap, the largest
    /// possible frequencies in the shortest fields still give a finite score; past it the
    /// parameters are refused.
    #[test]
    fn weights_up_to_the_cap_keep_scores_finite() {
        let stats = CorpusStats {
            docs: 2,
            field_totals: [u64::from(u32::MAX); FIELD_COUNT],
        };
        let mut params = Bm25fParams {
            k1: 0.0,
            b: [1.0; FIELD_COUNT],
            weights: [MAX_FIELD_WEIGHT; FIELD_COUNT],
        };
        assert!(params.validate().is_ok());
        let norms = FieldNorms::new(&params, &stats);
        let worst = [u32::MAX; FIELD_COUNT];
        let s = norms.score(stats.idf(1), worst, norms.doc_factors(worst));
        assert!(s.is_finite() && s > 0.0, "{s}");
        for w in [MAX_FIELD_WEIGHT * 2.0, f32::INFINITY, f32::NAN, -1.0] {
            params.weights[1] = w;
            let err = params.validate().unwrap_err().to_string();
            assert!(err.contains("field weight must be from 0 to"), "{err}");
        }
    }

    /// A field no document has (the anchor field without links: average length 0) is
    /// normalized by 1 and adds an exact +0.0: every score has the same bits whatever its
    /// weight and `b`, and none is NaN or infinite.
    #[test]
    fn a_field_empty_corpus_wide_is_inert() {
        let anchor = FIELD_COUNT - 1;
        let stats = CorpusStats {
            docs: 7,
            field_totals: [9, 300, 40, 21, 0],
        };
        let base = Bm25fParams {
            k1: 1.2,
            b: [0.3, 0.85, 0.75, 1.0, 0.0],
            weights: [2.0, 1.0, 1.0, 3.0, 0.0],
        };
        let rows: [([u32; FIELD_COUNT], [u32; FIELD_COUNT]); 3] = [
            ([1, 2, 0, 1, 0], [2, 60, 0, 3, 0]),
            ([0, 5, 3, 0, 0], [1, 90, 12, 4, 0]),
            ([1, 0, 0, 0, 0], [1, 0, 0, 0, 0]),
        ];
        let scores = |params: &Bm25fParams| {
            let norms = FieldNorms::new(params, &stats);
            rows.map(|(tfs, lens)| {
                let factors = norms.doc_factors(lens);
                let one = norms.score(stats.idf(2), tfs, factors);
                let mut block = [0.0];
                let tfs_cols: [Vec<u32>; FIELD_COUNT] = std::array::from_fn(|f| vec![tfs[f]]);
                let fac_cols: [Vec<Score>; FIELD_COUNT] = std::array::from_fn(|f| vec![factors[f]]);
                let fields = (0..FIELD_COUNT).fold(0u8, |m, f| m | u8::from(tfs[f] > 0) << f);
                for mask in [0x1f, fields] {
                    norms.score_block(
                        stats.idf(2),
                        std::array::from_fn(|f| tfs_cols[f].as_slice()),
                        std::array::from_fn(|f| fac_cols[f].as_slice()),
                        mask,
                        &mut block,
                    );
                    assert_eq!(one.to_bits(), block[0].to_bits());
                }
                assert!(one.is_finite() && one > 0.0);
                one.to_bits()
            })
        };
        let want = scores(&base);
        for w in [0.0, 2.0, MAX_FIELD_WEIGHT] {
            for b in [0.0, 0.3, 1.0] {
                let mut params = base;
                params.weights[anchor] = w;
                params.b[anchor] = b;
                assert_eq!(scores(&params), want, "w {w}, b {b}");
            }
        }
    }
}
