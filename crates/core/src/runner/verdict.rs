//! The verdict: variants ranked under an [`Objective`], with the ones whose paired differences
//! are not significant called indistinguishable, and which variants meet every requirement.
//!
//! Variant A beats B when, going through the criteria in order, the first criterion on which
//! their paired difference (same seeds, replication by replication) has a 95% interval excluding
//! zero and their means differ by more than the criterion's tie threshold favours A. A criterion
//! on which they tie (not significant, within the threshold, or lacked by one of them, e.g. p99
//! latency without a success) passes to the next. Variants are ordered by requirements
//! met (all first), then by Copeland score (beaten minus beaten-by), then by their means on the
//! criteria in order; a variant indistinguishable from the one above shares its rank. The Pareto
//! front is the variants no other one dominates (at least as good on every criterion under the
//! same test, better on one). Variants run under different conditions (faults, load, topology)
//! are ranked only within their condition.

use super::compare::difference;
use crate::metrics::catalogue::Better;
use crate::metrics::objective::{Criterion, MetricRef, Objective, Scoped, Tie, Verdict as Met};
use crate::metrics::stats::StatRow;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A variant's condition: (aspect, words) pairs.
pub type Condition = Vec<(String, String)>;

/// One variant's metrics, as the verdict reads them.
pub struct Candidate<'a> {
    /// Variant name.
    pub name: &'a str,
    /// The name as people read it (`none — immediate retry`); the name when not set.
    pub label: String,
    /// What the variant runs under besides its policies: (aspect, words) such as
    /// ("faults", "recs: outage 10 s–20 s"). Variants whose conditions differ are not ranked
    /// against each other (empty: not known, one condition).
    pub condition: Vec<(String, String)>,
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
        Candidate { name, label: name.to_string(), condition: Vec::new(), metrics: Scoped { global, hops, tenants } }
    }

    /// The same candidate with its display label and condition.
    pub fn with_setup(self, label: String, condition: Vec<(String, String)>) -> Self {
        Candidate { label, condition, ..self }
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
    /// 1-based rank (within its condition when the variants compare conditions); variants that
    /// share it are indistinguishable.
    pub rank: usize,
    /// True when every requirement is met (and there are requirements).
    pub meets_all: Option<bool>,
    /// Per requirement.
    pub requirements: Vec<RequirementResult>,
    /// The criterion that put it below the variant ranked just above (None for the first or a tie).
    pub behind_on: Option<String>,
    /// True when no other variant (of its condition) is at least as good on every ranked metric
    /// and better on one (paired 95% intervals; differences that are not significant count as
    /// equal, tie thresholds do not apply).
    #[serde(default)]
    pub pareto_front: bool,
    /// For a non-dominated variant other than the recommendation: what it trades against it,
    /// in words ("+0.41 pp succeeded for 1.76× the peak after recovery ÷ capacity").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_off: Option<String>,
    /// The condition it was ranked within, when the variants compare conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
}

/// The ranking under an objective.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The answer in one line: the recommendation, or why there is none (filled by the report
    /// layer, which words it; empty from [`verdict`]).
    #[serde(default)]
    pub answer: String,
    /// The objective.
    pub objective: Objective,
    /// True when the study has one replication: differences are judged on single values.
    pub single_replication: bool,
    /// True when the variants differ by faults, load or topology, not only by policy: each
    /// condition is ranked on its own and no condition is ranked above another.
    #[serde(default)]
    pub compares_conditions: bool,
    /// Variants, best first (grouped by condition when `compares_conditions`).
    pub ranking: Vec<Ranked>,
    /// The variant recommended: the first-ranked, when it is alone in its rank, meets every
    /// requirement and the metrics the ranking needs were observed; `None` otherwise, with
    /// `abstain_reason` saying why.
    #[serde(default)]
    pub recommended: Option<String>,
    /// Why nothing is recommended (runs cut at a limit, no variant delivered, no variant meets
    /// every requirement, …); `None` when a variant is recommended.
    #[serde(default)]
    pub abstain_reason: Option<String>,
    /// For an every-tenant criterion (`tenant.*.success_ratio`): the tenant whose success the
    /// variants differ most on, the one tables and answers show for that criterion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// False when what the ranking needs was not observed (runs cut at a limit, no variant
    /// delivered): the entries are then listed without an order (every rank 1, no front).
    #[serde(default = "yes")]
    pub observed: bool,
}

fn yes() -> bool {
    true
}

impl Verdict {
    /// The reference a table shows for `criterion`: an every-tenant reference at the tenant the
    /// variants differ most on, any other as it is.
    pub fn shown(&self, criterion: &Criterion) -> MetricRef {
        match (&self.tenant, criterion.metric.is_every_tenant()) {
            (Some(t), true) => criterion.metric.at_tenant(t),
            _ => criterion.metric.clone(),
        }
    }
}

/// Which of `a` and `b` is better on the first criterion that separates them (see
/// [`separates`]), and that criterion's index; `None` when none does.
pub fn compare_pair(objective: &Objective, a: &Candidate, b: &Candidate) -> Option<(Ordering, usize)> {
    (0..objective.rank.len()).find_map(|i| separates(objective, i, a, b).map(|o| (o, i)))
}

/// `Less` when `a` is better than `b` on criterion `index` of `objective`, `Greater` when
/// worse, `None` when they tie: the paired 95% interval includes zero, or the means differ by
/// no more than the criterion's tie threshold, or one of them lacks the metric.
pub fn separates(objective: &Objective, index: usize, a: &Candidate, b: &Candidate) -> Option<Ordering> {
    separates_by(objective, index, a, b, true)
}

/// As [`separates`], without the tie threshold when `practical` is false (any significant
/// difference counts: what the Pareto front and the trade-offs read).
///
/// Two rules keep a criterion from rewarding failure: a latency of succeeded requests
/// ([`Criterion::of_successes`]) does not count for a variant whose success ratio (same scope;
/// the system's for a hop) is significantly lower than the other's; and an every-tenant criterion
/// (`tenant.*.METRIC`) is judged tenant by tenant — a variant better for some tenant and worse for
/// none wins, and when tenants disagree the tenant whose values differ most (as a ratio; of the
/// failures for a success ratio) decides.
pub fn separates_by(
    objective: &Objective,
    index: usize,
    a: &Candidate,
    b: &Candidate,
    practical: bool,
) -> Option<Ordering> {
    let criterion = &objective.rank[index];
    let tie = practical.then(|| objective.tie_of(criterion));
    if !criterion.metric.is_every_tenant() {
        return separate_on(criterion, tie, a, b);
    }
    let mut decided: Vec<(Ordering, f64)> = Vec::new();
    for r in criterion.metric.expand(&a.metrics) {
        let one = Criterion { metric: r, better: criterion.better };
        if let Some(o) = separate_on(&one, tie, a, b) {
            decided.push((o, spread(&one, &[a, b]).unwrap_or(0.0)));
        }
    }
    if decided.iter().all(|(o, _)| *o == Ordering::Less) || decided.iter().all(|(o, _)| *o == Ordering::Greater) {
        return decided.first().map(|(o, _)| *o);
    }
    decided.iter().max_by(|x, y| x.1.total_cmp(&y.1)).map(|(o, _)| *o)
}

/// How far apart `candidates` are on `criterion` (one scope): the largest mean over the smallest
/// (of the failures, 1 − mean, for a success ratio); infinite when the smallest is 0 and the
/// largest is not, 1 when they agree, `None` when a mean is missing.
pub fn spread(criterion: &Criterion, candidates: &[&Candidate]) -> Option<f64> {
    let means: Vec<f64> = candidates
        .iter()
        .map(|c| criterion.metric.stat(&c.metrics).and_then(|s| s.mean))
        .map(|m| m.map(|m| if criterion.compares_loss() { 1.0 - m } else { m }.abs()))
        .collect::<Option<_>>()?;
    let (lo, hi) = means.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &m| (lo.min(m), hi.max(m)));
    Some(if hi == lo {
        1.0
    } else if lo == 0.0 {
        f64::INFINITY
    } else {
        hi / lo
    })
}

/// The paired comparison of `a` and `b` on one criterion of one scope, with the tie threshold
/// `tie` when given (see [`separates_by`]).
fn separate_on(criterion: &Criterion, tie: Option<Tie>, a: &Candidate, b: &Candidate) -> Option<Ordering> {
    let order = significant(criterion, a, b)?;
    let (sa, sb) = (criterion.metric.stat(&a.metrics)?, criterion.metric.stat(&b.metrics)?);
    if let (Some(ma), Some(mb), Some(tie)) = (sa.mean, sb.mean, tie) {
        if tie.ties_on(criterion, ma, mb) {
            return None;
        }
    }
    if criterion.of_successes() {
        // A lower latency of successes is no gain when it comes from failing the slow requests.
        let scope = match criterion.metric.scope {
            crate::metrics::catalogue::MetricScope::Tenant => criterion.metric.clone(),
            crate::metrics::catalogue::MetricScope::Global | crate::metrics::catalogue::MetricScope::Hop => MetricRef {
                scope: crate::metrics::catalogue::MetricScope::Global,
                name: String::new(),
                metric: criterion.metric.metric,
            },
        };
        let success = Criterion {
            metric: MetricRef { metric: crate::metrics::catalogue::Metric::SuccessRatio, ..scope },
            better: Better::Higher,
        };
        let (winner, loser) = if order == Ordering::Less { (a, b) } else { (b, a) };
        if significant(&success, winner, loser) == Some(Ordering::Greater) {
            return None;
        }
    }
    Some(order)
}

/// `Less` when `a` is significantly better than `b` on `criterion` (the paired 95% interval of
/// their difference excludes 0; with one replication, any difference), `Greater` when worse.
fn significant(criterion: &Criterion, a: &Candidate, b: &Candidate) -> Option<Ordering> {
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

/// True when `a` dominates `b`: significantly worse on no criterion and significantly better on
/// one (tie thresholds aside: the front shows the trade-offs they settle).
fn dominates(objective: &Objective, a: &Candidate, b: &Candidate) -> bool {
    let sides: Vec<Option<Ordering>> =
        (0..objective.rank.len()).map(|i| separates_by(objective, i, a, b, false)).collect();
    !sides.contains(&Some(Ordering::Greater)) && sides.contains(&Some(Ordering::Less))
}

/// Ranks `candidates` under `objective` (see the module documentation). Candidates whose
/// conditions differ are ranked within their condition, conditions in order of appearance.
pub fn verdict(objective: &Objective, candidates: &[Candidate]) -> Verdict {
    let mut groups: Vec<(&Condition, Vec<usize>)> = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        match groups.iter_mut().find(|(k, _)| **k == c.condition) {
            Some((_, members)) => members.push(i),
            None => groups.push((&c.condition, vec![i])),
        }
    }
    let compares_conditions = groups.len() > 1;
    let all: Vec<&Candidate> = candidates.iter().collect();
    let tenant = decisive_tenant(objective, &all);
    // Name a condition by the aspects that differ between conditions (faults, say), not all.
    let differs = |a: usize| groups.iter().any(|(k, _)| k.get(a) != groups[0].0.get(a));
    let mut ranking = Vec::with_capacity(candidates.len());
    let mut not_observed: Option<String> = None;
    for (condition, members) in &groups {
        let subset: Vec<&Candidate> = members.iter().map(|&i| &candidates[i]).collect();
        let (cut, finished): (Vec<&Candidate>, Vec<&Candidate>) = subset.iter().partition(|c| unfinished(c) > 0);
        let words = compares_conditions.then(|| {
            let parts: Vec<String> = condition
                .iter()
                .enumerate()
                .filter(|&(a, _)| differs(a))
                .map(|(_, (aspect, words))| format!("{aspect}: {words}"))
                .collect();
            parts.join("; ")
        });
        let mut group = rank_group(objective, &finished, tenant.as_deref());
        if !cut.is_empty() {
            // A variant whose runs were cut with requests in flight is ranked only when even its
            // best case (every request in flight succeeding) is behind the leader's success.
            let leader = group.first().and_then(|r| finished.iter().find(|c| c.name == r.variant));
            let success = Criterion::parse("success_ratio").expect("catalogued");
            let tie = objective.rank.iter().find(|c| c.metric == success.metric).map_or_else(
                || crate::metrics::objective::Tie::default_for(success.metric.metric),
                |c| objective.tie_of(c),
            );
            let lead = leader.and_then(|l| success.metric.stat(&l.metrics)).and_then(|s| s.mean);
            let behind = |c: &Candidate| match (lead, best_case_success(c)) {
                (Some(l), Some(b)) => b < l && !tie.ties_on(&success, l, b),
                _ => false,
            };
            if cut.iter().all(|c| behind(c)) {
                let base = group.len();
                for mut r in rank_group(objective, &cut, tenant.as_deref()) {
                    r.rank += base;
                    r.behind_on = Some(UNFINISHED.into());
                    r.pareto_front = false;
                    group.push(r);
                }
            } else {
                group.extend(rank_group(objective, &cut, tenant.as_deref()));
                let (k, n) = candidates.iter().fold((0, 0), |(k, n), c| {
                    let (ck, cn) = ones(c, crate::metrics::catalogue::Metric::Truncated);
                    (k + usize::from(unfinished(c) > 0) * ck, n + cn)
                });
                let which: Vec<String> = cut
                    .iter()
                    .map(|c| {
                        let best = best_case_success(c)
                            .map_or(String::new(), |b| format!(", at best {:.2}% succeeded", b * 100.0));
                        format!(
                            "{}: {} of {} runs{best}",
                            c.label,
                            unfinished(c),
                            ones(c, crate::metrics::catalogue::Metric::Truncated).1
                        )
                    })
                    .collect();
                not_observed.get_or_insert(format!(
                    "{k} of {n} runs were cut at a limit (the drain limit or max_events) with requests still in flight ({}), so their outcomes were not observed and could change the ranking",
                    which.join("; ")
                ));
            }
        }
        for mut r in group {
            r.condition.clone_from(&words);
            ranking.push(r);
        }
    }
    let single_replication =
        candidates.iter().any(|c| c.metrics.global.iter().next().is_some_and(|(_, s)| s.values.len() < 2));
    let mut v = Verdict {
        answer: String::new(),
        objective: objective.clone(),
        single_replication,
        compares_conditions,
        ranking,
        recommended: None,
        abstain_reason: None,
        tenant,
        observed: true,
    };
    if let Some(reason) = not_observed.or_else(|| unobserved(candidates)) {
        for r in &mut v.ranking {
            r.rank = 1;
            r.behind_on = None;
            r.pareto_front = false;
        }
        v.observed = false;
        v.abstain_reason = Some(reason);
        return v;
    }
    match abstain(&v) {
        Some(reason) => v.abstain_reason = Some(reason),
        None => v.recommended = v.ranking.first().map(|r| r.variant.clone()),
    }
    v
}

/// The tenant whose values the variants differ most on, for the first every-tenant criterion
/// of `objective` (see [`spread`]); `None` without such a criterion.
fn decisive_tenant(objective: &Objective, candidates: &[&Candidate]) -> Option<String> {
    let criterion = objective.rank.iter().find(|c| c.metric.is_every_tenant())?;
    let first = candidates.first()?;
    let mut best: Option<(String, f64)> = None;
    for r in criterion.metric.expand(&first.metrics) {
        let one = Criterion { metric: r, better: criterion.better };
        let s = spread(&one, candidates).unwrap_or(0.0);
        if best.as_ref().is_none_or(|(_, b)| s > *b) {
            best = Some((one.metric.name, s));
        }
    }
    best.map(|(n, _)| n)
}

/// What a variant's later entries say when its runs were cut with requests in flight.
pub const UNFINISHED: &str = "unfinished runs";

/// `(runs with a positive value, runs)` of a whole-system flag or count of `c`.
fn ones(c: &Candidate, m: crate::metrics::catalogue::Metric) -> (usize, usize) {
    c.metrics
        .global
        .get(m)
        .map_or((0, 0), |s| (s.values.iter().filter(|x| x.is_some_and(|x| x > 0.0)).count(), s.values.len()))
}

/// How many of `c`'s runs a limit cut while requests were still in flight (their outcome is not
/// known; a cut run whose requests had all ended lost only work nobody waited for).
fn unfinished(c: &Candidate) -> usize {
    use crate::metrics::catalogue::Metric;
    let (Some(cut), Some(flight)) = (c.metrics.global.get(Metric::Truncated), c.metrics.global.get(Metric::InFlight))
    else {
        return 0;
    };
    cut.values
        .iter()
        .zip(&flight.values)
        .filter(|(t, f)| t.is_some_and(|t| t > 0.0) && f.is_some_and(|f| f > 0.0))
        .count()
}

/// The best success ratio `c` could have reached had every request in flight at the cut
/// succeeded: the mean over runs of (succeeded + in flight) ÷ requests.
fn best_case_success(c: &Candidate) -> Option<f64> {
    use crate::metrics::catalogue::Metric;
    let get = |m: Metric| c.metrics.global.get(m);
    let (ok, flight, requests) = (get(Metric::SuccessRatio)?, get(Metric::InFlight)?, get(Metric::Requests)?);
    let per_run: Vec<f64> = ok
        .values
        .iter()
        .zip(&flight.values)
        .zip(&requests.values)
        .filter_map(|((s, f), r)| {
            let (s, f, r) = ((*s)?, (*f)?, (*r)?);
            (r > 0.0).then(|| s + f / r)
        })
        .collect();
    (!per_run.is_empty()).then(|| per_run.iter().sum::<f64>() / per_run.len() as f64)
}

/// Why what the ranking needs was not observed, if it was not: no variant delivered a request
/// (a ranking could only reward failing fastest).
fn unobserved(candidates: &[Candidate]) -> Option<String> {
    use crate::metrics::catalogue::Metric;
    let delivered =
        |c: &Candidate| c.metrics.global.get(Metric::SuccessRatio).and_then(|s| s.mean).is_some_and(|m| m > 0.0);
    if candidates.len() > 1 && !candidates.iter().any(delivered) {
        return Some("no variant delivered any request, so a ranking could only reward failing fastest".into());
    }
    None
}

/// Why the verdict recommends nothing among observed variants, if it does not: the variants
/// compare conditions, there is one variant, no variant meets every requirement, or the first
/// rank is shared.
fn abstain(v: &Verdict) -> Option<String> {
    if v.compares_conditions {
        return Some("the variants compare conditions (faults, load or topology), not policies".into());
    }
    let first = v.ranking.first()?;
    if v.ranking.len() == 1 {
        return Some("one variant, so nothing is compared".into());
    }
    if first.meets_all == Some(false) {
        return Some("no variant meets every requirement".into());
    }
    if v.ranking.get(1).is_some_and(|r| r.rank == first.rank) {
        return Some(
            "the first rank is shared: the leading variants are indistinguishable under the tie thresholds".into(),
        );
    }
    None
}

/// The ranking of candidates that share one condition.
fn rank_group(objective: &Objective, candidates: &[&Candidate], tenant: Option<&str>) -> Vec<Ranked> {
    let n = candidates.len();
    let requirements: Vec<Vec<RequirementResult>> = candidates
        .iter()
        .map(|c| {
            objective
                .require
                .iter()
                .map(|r| {
                    let (verdict, mean, bound) = r.judge_in(&c.metrics);
                    RequirementResult { requirement: r.to_string(), verdict, mean, bound }
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
                if let Some((Ordering::Less, _)) = compare_pair(objective, candidates[i], candidates[j]) {
                    score[i] += 1;
                    score[j] -= 1;
                }
            }
        }
    }
    // A variant that delivered nothing while another delivered is no trade-off, whatever its
    // load: it is off the front.
    let delivered = |i: usize| {
        candidates[i]
            .metrics
            .global
            .get(crate::metrics::catalogue::Metric::SuccessRatio)
            .and_then(|s| s.mean)
            .is_none_or(|m| m > 0.0)
    };
    let any_delivered = (0..n).any(delivered);
    let front: Vec<bool> = (0..n)
        .map(|i| {
            (delivered(i) || !any_delivered)
                && !(0..n).any(|j| j != i && dominates(objective, candidates[j], candidates[i]))
        })
        .collect();
    let key = |i: usize, c: &Criterion| {
        let shown = match (tenant, c.metric.is_every_tenant()) {
            (Some(t), true) => c.metric.at_tenant(t),
            _ => c.metric.clone(),
        };
        let mean = shown.stat(&candidates[i].metrics).and_then(|s| s.mean);
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
                let sep = compare_pair(objective, candidates[prev], candidates[i]);
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
            pareto_front: front[i],
            trade_off: None,
            condition: None,
        });
    }
    ranking
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

    #[test]
    fn a_small_significant_success_gain_is_a_tie_and_the_peak_decides() {
        // "lifo": +0.4 pp success (significant: every replication higher) with 1.9× the load
        // after recovery; "codel": 1.1×. Under the default 2 pp success tie codel ranks first;
        // with a 0 pp tie the strict order puts lifo first.
        let rows = [
            ("lifo", row(&[0.971, 0.972, 0.970, 0.971], &[1.90, 1.95, 1.88, 1.92])),
            ("codel", row(&[0.967, 0.968, 0.966, 0.967], &[1.10, 1.05, 1.12, 1.08])),
            ("fifo", row(&[0.967, 0.968, 0.966, 0.967], &[2.50, 2.55, 2.48, 2.52])),
        ];
        let empty: Vec<(String, StatRow)> = Vec::new();
        let c: Vec<Candidate> = rows.iter().map(|(n, r)| Candidate::new(n, r, &empty, &empty)).collect();
        let v = verdict(&Objective::default(), &c);
        let names: Vec<&str> = v.ranking.iter().map(|r| r.variant.as_str()).collect();
        assert_eq!(names, ["codel", "lifo", "fifo"]);
        assert_eq!(v.ranking[1].behind_on.as_deref(), Some("peak_after_over_capacity"));
        // The front: lifo (best success) and codel (best peak); fifo is dominated by codel.
        let front: Vec<bool> = v.ranking.iter().map(|r| r.pareto_front).collect();
        assert_eq!(front, [true, true, false]);
        let mut strict = Objective::default();
        strict.set_tie("success_ratio", "0pp").unwrap();
        let v = verdict(&strict, &c);
        assert_eq!(v.ranking[0].variant, "lifo");
    }

    #[test]
    fn variants_under_different_conditions_are_ranked_within_their_condition() {
        let rows = [
            ("healthy", row(&[1.0, 1.0, 1.0], &[0.5, 0.5, 0.5])),
            ("db-down", row(&[0.6, 0.62, 0.61], &[0.2, 0.21, 0.2])),
            ("db-down-jitter", row(&[0.7, 0.72, 0.71], &[0.2, 0.21, 0.2])),
        ];
        let empty: Vec<(String, StatRow)> = Vec::new();
        let cond = |f: &str| vec![("faults".to_string(), f.to_string()), ("hops".to_string(), "api, db".to_string())];
        let c: Vec<Candidate> = rows
            .iter()
            .map(|(n, r)| {
                let f = if *n == "healthy" { "none" } else { "outage at db" };
                Candidate::new(n, r, &empty, &empty).with_setup(n.to_string(), cond(f))
            })
            .collect();
        let v = verdict(&Objective::default(), &c);
        assert!(v.compares_conditions);
        let got: Vec<(&str, usize, Option<&str>)> =
            v.ranking.iter().map(|r| (r.variant.as_str(), r.rank, r.condition.as_deref())).collect();
        assert_eq!(
            got,
            [
                ("healthy", 1, Some("faults: none")),
                ("db-down-jitter", 1, Some("faults: outage at db")),
                ("db-down", 2, Some("faults: outage at db")),
            ]
        );
    }
}
