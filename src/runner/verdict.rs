//! The verdict: variants ranked under an [`Objective`], with the ones whose paired differences
//! are not significant called indistinguishable, and which variants meet every requirement.
//!
//! Variant A beats B when, going through the criteria in order, the first criterion on which
//! their paired difference (same seeds, replication by replication) has a 95% interval excluding
//! zero favours A. A criterion on which they are indistinguishable (or that one of them lacks,
//! e.g. p99 latency without a success) passes to the next. Variants are ordered by requirements
//! met (all first), then by Copeland score (beaten minus beaten-by), then by their means on the
//! criteria in order; a variant indistinguishable from the one above shares its rank.

use super::compare::difference;
use crate::metrics::catalogue::Better;
use crate::metrics::objective::{Criterion, Objective, Scoped, Verdict as Met};
use crate::metrics::stats::StatRow;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// One variant's metrics, as the verdict reads them.
pub struct Candidate<'a> {
    /// Variant name.
    pub name: &'a str,
    /// Its metrics.
    pub metrics: Scoped<'a>,
}

impl<'a> Candidate<'a> {
    /// A candidate from a variant's rows.
    pub fn new(
        name: &'a str,
        global: &'a StatRow,
        hops: &'a [(String, StatRow)],
        tenants: &'a [(String, StatRow)],
    ) -> Self {
        Candidate { name, metrics: Scoped { global, hops, tenants } }
    }
}

/// How one variant fares against one requirement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequirementResult {
    /// The requirement as written (normalised).
    pub requirement: String,
    /// Met with 95% confidence, or not.
    pub verdict: Met,
    /// The mean of the metric.
    pub mean: Option<f64>,
    /// The one-sided 95% bound that was compared with the threshold (None: a null replication).
    pub bound: Option<f64>,
}

/// One variant's place in the ranking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// Variant name.
    pub variant: String,
    /// 1-based rank; variants that share it are indistinguishable.
    pub rank: usize,
    /// True when every requirement is met (and there are requirements).
    pub meets_all: Option<bool>,
    /// Per requirement.
    pub requirements: Vec<RequirementResult>,
    /// The criterion that put it below the variant ranked just above (None for the first or a tie).
    pub behind_on: Option<String>,
}

/// The ranking under an objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The objective.
    pub objective: Objective,
    /// True when the study has one replication: differences are judged on single values.
    pub single_replication: bool,
    /// Variants, best first.
    pub ranking: Vec<Ranked>,
}

/// Which of `a` and `b` is better on the first criterion that separates them with 95%
/// confidence (paired), and that criterion's index; `None` when none does.
pub fn compare_pair(objective: &Objective, a: &Candidate, b: &Candidate) -> Option<(Ordering, usize)> {
    objective.rank.iter().enumerate().find_map(|(i, c)| separates(c, a, b).map(|o| (o, i)))
}

/// `Less` when `a` is significantly better than `b` on `criterion`, `Greater` when worse.
fn separates(criterion: &Criterion, a: &Candidate, b: &Candidate) -> Option<Ordering> {
    let (sa, sb) = (criterion.metric.stat(&a.metrics)?, criterion.metric.stat(&b.metrics)?);
    if sa.values.len() != sb.values.len() {
        return None;
    }
    let d = difference(sa, sb).paired;
    let mean = d.mean?;
    let n = d.values.iter().flatten().count();
    let significant = if n >= 2 { d.ci95.is_some_and(|[lo, hi]| lo > 0.0 || hi < 0.0) } else { mean != 0.0 };
    if !significant {
        return None;
    }
    let a_higher = mean > 0.0;
    Some(match (criterion.better, a_higher) {
        (Better::Higher, true) | (Better::Lower, false) => Ordering::Less,
        _ => Ordering::Greater,
    })
}

/// Ranks `candidates` under `objective` (see the module documentation).
pub fn verdict(objective: &Objective, candidates: &[Candidate]) -> Verdict {
    let n = candidates.len();
    let requirements: Vec<Vec<RequirementResult>> = candidates
        .iter()
        .map(|c| {
            objective
                .require
                .iter()
                .map(|r| {
                    let stat = r.metric.stat(&c.metrics);
                    let (verdict, bound) = r.judge(stat);
                    RequirementResult { requirement: r.to_string(), verdict, mean: stat.and_then(|s| s.mean), bound }
                })
                .collect()
        })
        .collect();
    let meets: Vec<Option<bool>> =
        requirements.iter().map(|rs| (!rs.is_empty()).then(|| rs.iter().all(|r| r.verdict == Met::Met))).collect();
    let mut score = vec![0i64; n];
    for i in 0..n {
        for j in 0..n {
            if i != j {
                if let Some((Ordering::Less, _)) = compare_pair(objective, &candidates[i], &candidates[j]) {
                    score[i] += 1;
                    score[j] -= 1;
                }
            }
        }
    }
    let key = |i: usize, c: &Criterion| {
        let mean = c.metric.stat(&candidates[i].metrics).and_then(|s| s.mean);
        // Better first; missing values last.
        mean.map_or(f64::INFINITY, |m| if c.better == Better::Higher { -m } else { m })
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| {
        let met = |k: usize| u8::from(meets[k] != Some(false));
        met(j)
            .cmp(&met(i))
            .then(score[j].cmp(&score[i]))
            .then_with(|| {
                objective
                    .rank
                    .iter()
                    .map(|c| key(i, c).total_cmp(&key(j, c)))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
            .then(i.cmp(&j))
    });
    let mut ranking: Vec<Ranked> = Vec::with_capacity(n);
    for (pos, &i) in order.iter().enumerate() {
        let (rank, behind_on) = match pos.checked_sub(1).map(|p| order[p]) {
            None => (1, None),
            Some(prev) => {
                let sep = compare_pair(objective, &candidates[prev], &candidates[i]);
                let same_requirements = meets[prev] == meets[i];
                match sep {
                    _ if !same_requirements => (pos + 1, Some("requirements".to_string())),
                    None => (ranking[pos - 1].rank, None),
                    Some((_, c)) => (pos + 1, Some(objective.rank[c].metric.to_string())),
                }
            }
        };
        ranking.push(Ranked {
            variant: candidates[i].name.to_string(),
            rank,
            meets_all: meets[i],
            requirements: requirements[i].clone(),
            behind_on,
        });
    }
    let single_replication =
        candidates.iter().any(|c| c.metrics.global.iter().next().is_some_and(|(_, s)| s.values.len() < 2));
    Verdict { objective: objective.clone(), single_replication, ranking }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalogue::Metric;
    use crate::metrics::stats::Stat;

    fn row(success: &[f64], peak: &[f64]) -> StatRow {
        let s = |xs: &[f64]| Stat::from_values(xs.iter().map(|&x| Some(x)).collect());
        StatRow(vec![(Metric::SuccessRatio, s(success)), (Metric::PeakAfterOverCapacity, s(peak))])
    }

    #[test]
    fn ranks_lexicographically_with_ties_for_overlapping_intervals() {
        let rows = [
            ("exponential", row(&[1.0, 1.0, 1.0], &[10.0, 10.5, 10.2])),
            ("equal", row(&[1.0, 1.0, 1.0], &[3.3, 3.2, 3.4])),
            ("lossy", row(&[0.5, 0.52, 0.51], &[1.5, 1.6, 1.55])),
            ("equal-ish", row(&[1.0, 1.0, 1.0], &[3.1, 3.6, 3.3])),
        ];
        let empty: Vec<(String, StatRow)> = Vec::new();
        let c: Vec<Candidate> = rows.iter().map(|(n, r)| Candidate::new(n, r, &empty, &empty)).collect();
        let v = verdict(&Objective::default(), &c);
        let names: Vec<(&str, usize)> = v.ranking.iter().map(|r| (r.variant.as_str(), r.rank)).collect();
        // equal and equal-ish overlap on the peak: shared rank 1; exponential behind on the peak;
        // lossy last on success despite the lowest peak.
        assert_eq!(names, vec![("equal", 1), ("equal-ish", 1), ("exponential", 3), ("lossy", 4)]);
        assert_eq!(v.ranking[2].behind_on.as_deref(), Some("peak_after_over_capacity"));
        assert_eq!(v.ranking[3].behind_on.as_deref(), Some("success_ratio"));
        // A requirement puts those that meet it first, whatever the criteria say.
        let objective = Objective::parse(&[], &["peak_after_over_capacity <= 2".into()]).unwrap();
        let v = verdict(&objective, &c);
        assert_eq!(v.ranking[0].variant, "lossy");
        assert_eq!(v.ranking[0].meets_all, Some(true));
        assert_eq!(v.ranking[1].behind_on.as_deref(), Some("requirements"));
    }
}
