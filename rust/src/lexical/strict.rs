//! Strict matching: every required clause (any alternative) and every phrase term must
//! occur. Their postings are intersected leapfrog-style, driven by the rarest group, with
//! galloping seeks over the skip tables; survivors must then satisfy every phrase (all its
//! terms in one field at the given relative positions). Every survivor is scored.

use super::postings::{Malformed, TERMINATED};
use super::query::{SegmentSearch, Step};
use super::{DocOrd, FIELD_COUNT};

impl SegmentSearch<'_, '_> {
    /// Seeks every cursor of `group` to `target`; returns the smallest doc among them.
    fn group_seek(&mut self, group: &[usize], target: DocOrd) -> Step<DocOrd> {
        let mut min = TERMINATED;
        for &t in group {
            if let Some(c) = self.cursors[t].as_mut() {
                min = min.min(c.seek(target)?);
            }
        }
        Ok(min)
    }

    pub(super) fn run_strict(&mut self) -> Step<()> {
        let p = self.p;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (alts, required) in &p.clauses {
            if *required {
                groups.push(
                    alts.iter()
                        .map(|a| a.0)
                        .filter(|&t| self.cursors[t].is_some())
                        .collect(),
                );
            }
        }
        for ph in &p.phrases {
            groups.extend(
                ph.iter()
                    .map(|&(t, _)| vec![t])
                    .filter(|g| self.cursors[g[0]].is_some()),
            );
            if ph.iter().any(|&(t, _)| self.cursors[t].is_none()) {
                return Ok(());
            }
        }
        if groups.iter().any(Vec::is_empty) {
            return Ok(());
        }
        let cost = |g: &Vec<usize>| -> u64 {
            g.iter()
                .filter_map(|&t| self.cursors[t].as_ref())
                .map(|c| u64::from(c.df()))
                .sum()
        };
        groups.sort_by_key(cost);
        let (driver, rest) = groups.split_first().ok_or(Malformed("no groups"))?;
        let mut bufs = vec![Vec::new(); p.phrases.iter().map(Vec::len).max().unwrap_or(0)];
        let mut d = self.group_seek(driver, 0)?;
        'outer: while d != TERMINATED {
            for g in rest {
                let gd = self.group_seek(g, d)?;
                if gd != d {
                    d = self.group_seek(driver, gd)?;
                    continue 'outer;
                }
            }
            if self.live(d) && self.phrases_match(d, &mut bufs)? {
                self.total += 1;
                let score = self.score(d)?;
                self.offer(d, score)?;
            }
            d = self.group_seek(driver, d + 1)?;
        }
        Ok(())
    }

    /// Whether doc `d` (where every phrase term's cursor stands) has every phrase.
    fn phrases_match(&mut self, d: DocOrd, bufs: &mut [Vec<u32>]) -> Step<bool> {
        let p = self.p;
        'phrase: for ph in &p.phrases {
            'field: for f in 0..FIELD_COUNT {
                for (i, &(t, _)) in ph.iter().enumerate() {
                    let Some(c) = self.cursors[t].as_mut() else {
                        return Ok(false);
                    };
                    if c.doc() != d || c.tfs()?[f] == 0 {
                        continue 'field;
                    }
                    c.positions(f, &mut bufs[i])?;
                }
                let (first, off0) = (&bufs[0], ph[0].1);
                for &p0 in first {
                    let Some(start) = p0.checked_sub(off0) else {
                        continue;
                    };
                    let all = ph.iter().enumerate().skip(1).all(|(i, &(_, off))| {
                        start
                            .checked_add(off)
                            .is_some_and(|want| bufs[i].binary_search(&want).is_ok())
                    });
                    if all {
                        continue 'phrase;
                    }
                }
            }
            return Ok(false);
        }
        Ok(true)
    }
}
