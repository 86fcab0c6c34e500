//! `plan`: the smallest (or, with `--find largest`, the largest) value of a monotone parameter —
//! whole numbers such as a hop's workers, real numbers such as an arrival rate, or durations such
//! as a service time — at which a variant meets every requirement with 95% confidence.
//!
//! Each probe runs the variant's replications on the study's seed (common random numbers across
//! probes, so neighbouring values differ by the parameter, not by noise). The search probes the
//! end of the range that should pass (the top for `smallest`; nothing to find if it fails), the
//! other end (the answer if it passes), then bisects on the resolution's grid between the passing
//! and the failing value: about log₂(range ÷ resolution) + 2 probes. Bisection assumes
//! monotonicity; the probes are checked for it afterwards and any contradiction (for `smallest`, a
//! smaller value passing where a larger one fails, or a requirement's metric significantly worse
//! at a larger value; for `largest` the mirror image) is reported as a warning.

use super::plan_range::{whole, Find, Kind, Range};
use crate::metrics::objective::{Requirement, Scoped, Verdict as Met};
use crate::metrics::stats::{Stat, StatRow};
use serde::{Deserialize, Serialize};

/// The metrics one probe produced, per scope.
#[derive(Clone, Debug)]
pub struct ProbeMetrics {
    /// Whole-system metrics.
    pub global: StatRow,
    /// Per hop.
    pub hops: Vec<(String, StatRow)>,
    /// Per tenant.
    pub tenants: Vec<(String, StatRow)>,
}

/// One requirement at one probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeRequirement {
    /// The requirement (normalised text).
    pub requirement: String,
    /// The metric's mean, sd, 95% CI and per-replication values.
    pub stat: Option<Stat>,
    /// The one-sided 95% bound compared with the threshold (None: a replication had no value).
    pub bound: Option<f64>,
    /// Met or not.
    pub verdict: Met,
}

/// One probed value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    /// The parameter's value (seconds for a duration).
    #[serde(with = "whole")]
    pub value: f64,
    /// True when every requirement is met.
    pub meets_all: bool,
    /// Per requirement.
    pub requirements: Vec<ProbeRequirement>,
}

/// The answer for one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantPlan {
    /// Variant name.
    pub variant: String,
    /// Index of the variant among all the plan's variants (fixes its colour; shards keep it).
    pub index: usize,
    /// The smallest (largest) value meeting every requirement (None: not even the top (bottom)
    /// of the range).
    #[serde(serialize_with = "whole::option::serialize")]
    pub chosen: Option<f64>,
    /// Every probe, by value.
    pub probes: Vec<Probe>,
    /// Monotonicity warnings.
    pub warnings: Vec<String>,
    /// The second setting's value this search ran at (two-setting plans only).
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "whole::option::serialize")]
    pub at: Option<f64>,
}

/// The second setting of a two-setting plan (`--across`): swept at every value of its grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Across {
    /// The `--set` path.
    pub parameter: String,
    /// What its values are (durations in seconds).
    pub kind: Kind,
    /// Lowest value.
    #[serde(with = "whole")]
    pub lo: f64,
    /// Highest value.
    #[serde(with = "whole")]
    pub hi: f64,
    /// The grid step.
    #[serde(with = "whole")]
    pub step: f64,
}

impl Across {
    /// The swept range.
    pub fn range(&self) -> Range {
        Range { path: self.parameter.clone(), kind: self.kind, lo: self.lo, hi: self.hi, resolution: self.step }
    }

    /// The same from a parsed range.
    pub fn of(range: &Range) -> Across {
        Across { parameter: range.path.clone(), kind: range.kind, lo: range.lo, hi: range.hi, step: range.resolution }
    }
}

/// Most values `--across` may sweep: each is a full search.
pub const MAX_ACROSS_VALUES: usize = 64;

/// Everything `plan` answers, as `plan.json` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    /// Scenario name.
    pub scenario: String,
    /// Master seed (every probe uses it).
    pub seed: u64,
    /// Replications per probe.
    pub replications: u32,
    /// The model's digest ([`crate::scenario::model_digest`] of the scenario as run; empty in
    /// a file written before it was recorded, which `merge` refuses).
    #[serde(default)]
    pub model: String,
    /// retrystorm version.
    pub version: String,
    /// The varied `--set` path.
    pub parameter: String,
    /// What the parameter's values are (durations in seconds).
    #[serde(default)]
    pub kind: Kind,
    /// Which end of the passing values is the answer.
    #[serde(default)]
    pub find: Find,
    /// Lowest value searched.
    #[serde(with = "whole")]
    pub lo: f64,
    /// Highest value searched.
    #[serde(with = "whole")]
    pub hi: f64,
    /// The grid step the search stops at.
    #[serde(with = "whole", default = "one")]
    pub resolution: f64,
    /// The second setting, swept (two-setting plans only; each plan entry then has its `at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across: Option<Across>,
    /// The requirements (normalised text).
    pub requirements: Vec<String>,
    /// Every variant of the plan, in order (a shard plans some of them).
    pub variants: Vec<String>,
    /// `K/N` for one shard's file, None for a whole plan.
    pub shard: Option<String>,
    /// The answers, in variant order.
    pub plans: Vec<VariantPlan>,
}

fn one() -> f64 {
    1.0
}

impl PlanFile {
    /// The searched range.
    pub fn range(&self) -> Range {
        Range { path: self.parameter.clone(), kind: self.kind, lo: self.lo, hi: self.hi, resolution: self.resolution }
    }

    /// Checks that every answer follows from the file's own probes, as `merge` requires of a
    /// shard: each probe's value is in the range, its statistics follow from its per-replication
    /// values, its verdicts and bounds from those statistics, and the search run again over the
    /// recorded probes asks for exactly them and chooses the recorded value. A hand-edited or
    /// corrupted shard (a chosen value outside its range, a mean of 1e300, a negative probe) is
    /// refused with the variant and what does not follow.
    pub fn check(&self) -> Result<(), String> {
        let requirements = self.requirements.iter().map(|t| Requirement::parse(t)).collect::<Result<Vec<_>, _>>()?;
        let range = self.range();
        // The header as `plan` would accept it: ranges it can search, a shard label it writes.
        range.check(super::plan_range::VARY).map_err(|e| format!("range: {e}"))?;
        if let Some(a) = &self.across {
            a.range().check(super::plan_range::ACROSS).map_err(|e| format!("across: {e}"))?;
            if a.range().steps() as usize >= MAX_ACROSS_VALUES {
                return Err(format!("across: more than the {MAX_ACROSS_VALUES} values plan sweeps"));
            }
        }
        let shard = match &self.shard {
            Some(label) => Some(super::sweep::Shard::parse(label).map_err(|e| format!("shard \"{label}\": {e}"))?),
            None => None,
        };
        let ats: Vec<Option<f64>> =
            self.across.as_ref().map_or(vec![None], |a| a.range().grid().into_iter().map(Some).collect());
        let mut seen = Vec::new();
        for p in &self.plans {
            let name = format!("variant {} ({})", p.index, p.variant);
            if let Some(s) = shard.filter(|s| !s.contains(p.index)) {
                return Err(format!("{name}: not a variant of shard {}/{}", s.index, s.count));
            }
            if !ats.contains(&p.at) {
                return Err(format!("{name}: `at` {:?} is not a value of the second setting's grid", p.at));
            }
            if seen.contains(&(p.index, p.at.map(f64::to_bits))) {
                return Err(format!("{name}: searched twice at {:?}", p.at));
            }
            seen.push((p.index, p.at.map(f64::to_bits)));
        }
        for p in &self.plans {
            let name = format!("variant {} ({})", p.index, p.variant);
            if self.variants.get(p.index) != Some(&p.variant) {
                return Err(format!("{name} is not the plan's variant {}", p.index));
            }
            for probe in &p.probes {
                let at = range.show(probe.value);
                if !(self.lo..=self.hi).contains(&probe.value) {
                    return Err(format!(
                        "{name}: a probe at {at} is outside {}..{}",
                        range.show(self.lo),
                        range.show(self.hi)
                    ));
                }
                if probe.requirements.len() != requirements.len() {
                    return Err(format!(
                        "{name}: the probe at {at} judges {} requirement(s), not {}",
                        probe.requirements.len(),
                        requirements.len()
                    ));
                }
                for (r, req) in probe.requirements.iter().zip(&requirements) {
                    let derived =
                        r.stat.as_ref().map(|s| Stat::with_interval(s.values.clone(), req.metric.metric.interval()));
                    let same_stat = serde_json::to_value(&derived).ok() == serde_json::to_value(&r.stat).ok();
                    if r.requirement != req.to_string()
                        || !same_stat
                        || req.judge(r.stat.as_ref()) != (r.verdict, r.bound)
                    {
                        return Err(format!(
                            "{name}: at {at}, `{}` does not follow from its per-replication values",
                            r.requirement
                        ));
                    }
                }
                if probe.meets_all != probe.requirements.iter().all(|r| r.verdict == Met::Met) {
                    return Err(format!("{name}: at {at}, `meets_all` does not follow from its verdicts"));
                }
            }
            let again =
                search(&range, self.find, |value| p.probes.iter().find(|q| q.value == value).cloned().ok_or(value));
            match again {
                Err(value) => {
                    return Err(format!("{name}: the search probes {}, which is not recorded", range.show(value)));
                }
                Ok((chosen, probes)) if chosen != p.chosen || probes != p.probes => {
                    return Err(format!("{name}: the chosen value or the probes do not follow from the search"));
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }
}

/// A variant's cheapest combination in a two-setting plan: among its searches (`plans`, the
/// entries of one variant in the order of the second setting's values) that found a value, the
/// one with the least chosen value (`largest`: the greatest), ties going to the first, i.e. the
/// lowest value of the second setting. In a one-setting plan, the one entry if it found a value.
pub fn cheapest<'a>(plans: &[&'a VariantPlan], find: Find) -> Option<&'a VariantPlan> {
    let mut best: Option<&VariantPlan> = None;
    for &p in plans {
        let Some(v) = p.chosen else { continue };
        let better = best.and_then(|b| b.chosen).is_none_or(|b| match find {
            Find::Smallest => v < b,
            Find::Largest => v > b,
        });
        if better {
            best = Some(p);
        }
    }
    best
}

/// The plan's entries grouped by variant, in variant order, each group in the order of the
/// second setting's values.
pub fn by_variant(plan: &PlanFile) -> Vec<Vec<&VariantPlan>> {
    let mut groups: Vec<Vec<&VariantPlan>> = Vec::new();
    for p in &plan.plans {
        match groups.last_mut() {
            Some(g) if g[0].index == p.index => g.push(p),
            Some(_) | None => groups.push(vec![p]),
        }
    }
    for g in &mut groups {
        g.sort_by(|a, b| a.at.unwrap_or(0.0).total_cmp(&b.at.unwrap_or(0.0)));
    }
    groups
}

/// Judges one probe's metrics against `requirements`.
pub fn judge(value: f64, metrics: &ProbeMetrics, requirements: &[Requirement]) -> Probe {
    let scoped = Scoped { global: &metrics.global, hops: &metrics.hops, tenants: &metrics.tenants };
    let requirements: Vec<ProbeRequirement> = requirements
        .iter()
        .map(|r| {
            let stat = r.metric.stat(&scoped);
            let (verdict, bound) = r.judge(stat);
            ProbeRequirement { requirement: r.to_string(), stat: stat.cloned(), bound, verdict }
        })
        .collect();
    Probe { value, meets_all: requirements.iter().all(|r| r.verdict == Met::Met), requirements }
}

/// Searches `range` (on its resolution's grid) for the smallest or largest value whose probe
/// meets every requirement; `probe` runs and judges one value. Returns the chosen value and the
/// probes in value order.
pub fn search<E>(
    range: &Range,
    find: Find,
    mut probe: impl FnMut(f64) -> Result<Probe, E>,
) -> Result<(Option<f64>, Vec<Probe>), E> {
    let top = range.steps();
    // Grid steps: the end that should pass, then the other.
    let (good, bad) = match find {
        Find::Smallest => (top, 0),
        Find::Largest => (0, top),
    };
    let mut probes = vec![probe(range.value(good))?];
    let chosen = if !probes[0].meets_all {
        None
    } else if top == 0 {
        Some(good)
    } else {
        probes.push(probe(range.value(bad))?);
        if probes[1].meets_all {
            Some(bad)
        } else {
            let (mut pass, mut fail) = (good, bad);
            while pass.abs_diff(fail) > 1 {
                let mid = pass.min(fail) + pass.abs_diff(fail) / 2;
                let p = probe(range.value(mid))?;
                if p.meets_all {
                    pass = mid;
                } else {
                    fail = mid;
                }
                probes.push(p);
            }
            Some(pass)
        }
    };
    probes.sort_by(|a, b| a.value.total_cmp(&b.value));
    Ok((chosen.map(|k| range.value(k)), probes))
}

/// Requests per run that ran out of attempts (`dlq` less those dead-lettered by a deadline or a
/// budget), run by run, from a probe's system metrics; `None` in a run without the counts.
pub fn exhausted_per_run(global: &StatRow) -> Vec<Option<f64>> {
    use crate::metrics::catalogue::Metric;
    let values = |m: Metric| global.get(m).map(|s| s.values.clone()).unwrap_or_default();
    let (dlq, deadline, budget) = (values(Metric::Dlq), values(Metric::DlqDeadline), values(Metric::DlqBudget));
    dlq.iter()
        .enumerate()
        .map(|(r, d)| {
            let other = |v: &[Option<f64>]| v.get(r).copied().flatten().unwrap_or(0.0);
            d.map(|d| d - other(&deadline) - other(&budget))
        })
        .collect()
}

/// When a search for the smallest value found none because requests ran out of attempts during
/// a fault, which capacity cannot bring back: the sentence saying so, else `None`.
///
/// `top` and `bottom` are the requests that ran out of attempts, run by run, at the two ends of
/// the range (`top` the end that should pass); `missed` what the top probe missed; `fault` the
/// scenario's faults in words (none: `None`, the failures are not an outage's). Capacity cannot
/// help when requests ran out at the top and their count does not fall with capacity: the top's
/// 95% interval (Student's t over its runs) is not entirely below the bottom's.
pub fn capacity_cannot_help(
    top: &[Option<f64>],
    bottom: &[Option<f64>],
    missed: &str,
    fault: Option<&str>,
) -> Option<String> {
    let fault = fault?;
    let known = |v: &[Option<f64>]| v.iter().flatten().copied().collect::<Vec<f64>>();
    let (top, bottom) = (known(top), known(bottom));
    let (mean, _) = crate::metrics::stats::mean_sd(&top);
    if top.is_empty() || mean <= 0.0 || bottom.len() < 2 || top.len() < 2 {
        return None;
    }
    let kind = crate::metrics::catalogue::Interval::Student;
    let [_, top_hi] = crate::metrics::stats::interval(&top, kind, 0.95);
    let [bottom_lo, _] = crate::metrics::stats::interval(&bottom, kind, 0.95);
    if top_hi < bottom_lo {
        return None;
    }
    Some(format!(
        "capacity cannot meet {missed}: {mean:.0} requests per run ran out of attempts during the fault ({fault}), as many at the top of the range as at the bottom; more capacity never brings them back: lengthen the retry horizon (max_attempts, cap) to cover the outage"
    ))
}

/// Contradictions of monotonicity among `probes` (in value order). For `smallest` (larger is
/// better): a value that meets every requirement below one that does not, and for each
/// requirement a larger value whose metric is significantly worse (its 95% interval entirely on
/// the worse side of the smaller value's). For `largest` (larger is worse) the mirror image: a
/// value that meets every requirement above one that does not, and a larger value whose metric
/// is significantly better.
pub fn monotonicity_warnings(probes: &[Probe], requirements: &[Requirement], range: &Range, find: Find) -> Vec<String> {
    let mut out = Vec::new();
    let show = |x: f64| range.show(x);
    for (i, a) in probes.iter().enumerate() {
        let contradiction = probes[i + 1..].iter().find(|b| match find {
            Find::Smallest => a.meets_all && !b.meets_all,
            Find::Largest => !a.meets_all && b.meets_all,
        });
        if let Some(b) = contradiction {
            let (meets, fails, which) = match find {
                Find::Smallest => (a.value, b.value, "larger"),
                Find::Largest => (b.value, a.value, "smaller"),
            };
            out.push(format!(
                "not monotone: {} meets every requirement but the {which} {} does not; the answer assumes monotonicity",
                show(meets),
                show(fails)
            ));
            break;
        }
    }
    for (r, req) in requirements.iter().enumerate() {
        for w in probes.windows(2) {
            let (Some(sa), Some(sb)) = (w[0].requirements[r].stat.as_ref(), w[1].requirements[r].stat.as_ref()) else {
                continue;
            };
            let (Some([alo, ahi]), Some([blo, bhi])) = (sa.ci95, sb.ci95) else { continue };
            let worse = if req.op.wants_high() { bhi < alo } else { blo > ahi };
            let better = if req.op.wants_high() { blo > ahi } else { bhi < alo };
            let (contradicts, how) = match find {
                Find::Smallest => (worse, "worse"),
                Find::Largest => (better, "better"),
            };
            if contradicts {
                out.push(format!(
                    "not monotone: {} is significantly {how} at {} than at {} (means {:.4} and {:.4})",
                    req.metric,
                    show(w[1].value),
                    show(w[0].value),
                    sb.mean.unwrap_or(f64::NAN),
                    sa.mean.unwrap_or(f64::NAN),
                ));
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalogue::Metric;

    /// A probe whose recovery time is `f(value)` s plus −1, 0 and +1 s in its 3 replications.
    fn probe_of(value: f64, f: impl Fn(f64) -> f64, requirements: &[Requirement]) -> Probe {
        let t = f(value);
        let stat = Stat::from_values(vec![Some(t - 1.0), Some(t), Some(t + 1.0)]);
        let metrics =
            ProbeMetrics { global: StatRow(vec![(Metric::RecoveryTimeS, stat)]), hops: vec![], tenants: vec![] };
        judge(value, &metrics, requirements)
    }

    /// The one-sided 95% bound's excess over the mean for the spread −1, 0, +1: t(0.95, 2) / √3.
    fn excess() -> f64 {
        crate::metrics::objective::one_sided_bound(&Stat::from_values(vec![Some(-1.0), Some(0.0), Some(1.0)]), false)
            .unwrap()
    }

    /// Recovery time `240 / value` s: more is better.
    fn synthetic(value: f64, requirements: &[Requirement]) -> Probe {
        probe_of(value, |v| 240.0 / v, requirements)
    }

    #[test]
    fn bisection_finds_the_smallest_passing_value_in_few_probes() {
        let req = vec![Requirement::parse("recovery_time_s <= 20").unwrap()];
        // 240 / v + t(0.95, 2) × 1 / √3 = 240 / v + 1.6859 ≤ 20 ⇔ v ≥ 13.10: the answer is 14.
        assert!((excess() - 2.919_986 / 3f64.sqrt()).abs() < 1e-5, "{}", excess());
        let mut calls = 0;
        let range = Range::parse("x=1..256", None).unwrap();
        let (chosen, probes) = search(&range, Find::Smallest, |v| {
            calls += 1;
            Ok::<_, ()>(synthetic(v, &req))
        })
        .unwrap();
        assert_eq!(chosen, Some(14.0));
        assert!(calls <= 10, "{calls} probes");
        assert!(probes.windows(2).all(|w| w[0].value < w[1].value));
        assert!(monotonicity_warnings(&probes, &req, &range, Find::Smallest).is_empty());
        // Nothing in range: the top fails, one probe.
        let small = Range::parse("x=1..10", None).unwrap();
        let (none, probes) = search(&small, Find::Smallest, |v| Ok::<_, ()>(synthetic(v, &req))).unwrap();
        assert_eq!((none, probes.len()), (None, 1));
        // Real-valued, resolution 0.01: the answer is the first grid point at or above 13.4527…
        let real = Range::parse("x=1.0..256.0", Some("0.01")).unwrap();
        let (chosen, probes) = search(&real, Find::Smallest, |v| Ok::<_, ()>(synthetic(v, &req))).unwrap();
        let exact = 240.0 / (20.0 - excess());
        assert_eq!(chosen, Some((exact * 100.0).ceil() / 100.0), "exact {exact}");
        assert!(probes.len() <= 17, "{} probes for 25,500 grid steps", probes.len());
    }

    #[test]
    fn largest_finds_the_most_load_that_still_meets_the_requirements() {
        // Recovery time v / 10 s: more is worse. v / 10 + 1.6859 ≤ 20 ⇔ v ≤ 183.14.
        let req = vec![Requirement::parse("recovery_time_s <= 20").unwrap()];
        let f = |v: f64| v / 10.0;
        let range = Range::parse("x=0.0..256.0", Some("0.5")).unwrap();
        let (chosen, probes) = search(&range, Find::Largest, |v| Ok::<_, ()>(probe_of(v, f, &req))).unwrap();
        let exact = 10.0 * (20.0 - excess());
        assert_eq!(chosen, Some((exact * 2.0).floor() / 2.0), "exact {exact}");
        assert!(monotonicity_warnings(&probes, &req, &range, Find::Largest).is_empty());
        // The same probes read as a `smallest` search contradict it.
        assert!(!monotonicity_warnings(&probes, &req, &range, Find::Smallest).is_empty());
        // Even the bottom fails: one probe, no answer.
        let high = Range::parse("x=200..256", None).unwrap();
        let (none, probes) = search(&high, Find::Largest, |v| Ok::<_, ()>(probe_of(v, f, &req))).unwrap();
        assert_eq!((none, probes.len()), (None, 1));
    }

    #[test]
    fn a_non_monotone_metric_is_reported() {
        let req = vec![Requirement::parse("recovery_time_s <= 20").unwrap()];
        let probes = vec![synthetic(16.0, &req), synthetic(4.0, &req)]
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.value = i as f64 + 1.0; // 1 passes (t = 15), 2 fails (t = 60)
                p
            })
            .collect::<Vec<_>>();
        let range = Range::parse("x=1..2", None).unwrap();
        let warnings = monotonicity_warnings(&probes, &req, &range, Find::Smallest);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("1 meets every requirement but the larger 2"));
        let warnings = monotonicity_warnings(&probes, &req, &range, Find::Largest);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
