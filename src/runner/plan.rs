//! `plan`: the smallest value of a monotone integer parameter (say a hop's workers) at which a
//! variant meets every requirement with 95% confidence.
//!
//! Each probe runs the variant's replications on the study's seed (common random numbers across
//! probes, so neighbouring values differ by the parameter, not by noise). The search probes the
//! top of the range (nothing to find if it fails), the bottom (the answer if it passes), then
//! bisects between the largest failing and the smallest passing value: about log₂(range) + 2
//! probes. Bisection assumes monotonicity; the probes are checked for it afterwards and any
//! contradiction (a smaller value passing where a larger one fails, or a requirement's metric
//! significantly worse at a larger value) is reported as a warning.

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
    /// The parameter's value.
    pub value: i64,
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
    /// The smallest value meeting every requirement (None: not even the top of the range).
    pub chosen: Option<i64>,
    /// Every probe, by value.
    pub probes: Vec<Probe>,
    /// Monotonicity warnings.
    pub warnings: Vec<String>,
}

/// Everything `plan` answers, as `plan.json` holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanFile {
    /// Scenario name.
    pub scenario: String,
    /// Master seed (every probe uses it).
    pub seed: u64,
    /// Replications per probe.
    pub replications: u32,
    /// retrystorm version.
    pub version: String,
    /// The varied `--set` path.
    pub parameter: String,
    /// Lowest value searched.
    pub lo: i64,
    /// Highest value searched.
    pub hi: i64,
    /// The requirements (normalised text).
    pub requirements: Vec<String>,
    /// Every variant of the plan, in order (a shard plans some of them).
    pub variants: Vec<String>,
    /// `K/N` for one shard's file, None for a whole plan.
    pub shard: Option<String>,
    /// The answers, in variant order.
    pub plans: Vec<VariantPlan>,
}

/// Judges one probe's metrics against `requirements`.
pub fn judge(value: i64, metrics: &ProbeMetrics, requirements: &[Requirement]) -> Probe {
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

/// Searches `[lo, hi]` for the smallest value whose probe meets every requirement; `probe`
/// runs and judges one value. Returns the chosen value and the probes in value order.
pub fn search<E>(
    lo: i64,
    hi: i64,
    mut probe: impl FnMut(i64) -> Result<Probe, E>,
) -> Result<(Option<i64>, Vec<Probe>), E> {
    assert!(lo <= hi, "plan range {lo}..{hi} is empty");
    let mut probes = vec![probe(hi)?];
    let chosen = if !probes[0].meets_all {
        None
    } else if lo == hi {
        Some(hi)
    } else {
        probes.push(probe(lo)?);
        if probes[1].meets_all {
            Some(lo)
        } else {
            let (mut fail, mut pass) = (lo, hi);
            while pass - fail > 1 {
                let mid = fail + (pass - fail) / 2;
                let p = probe(mid)?;
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
    probes.sort_by_key(|p| p.value);
    Ok((chosen, probes))
}

/// Contradictions of monotonicity among `probes` (in value order): a value that meets every
/// requirement below one that does not, and for each requirement a larger value whose metric is
/// significantly worse (its 95% interval entirely on the worse side of the smaller value's).
pub fn monotonicity_warnings(probes: &[Probe], requirements: &[Requirement]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in probes.iter().enumerate() {
        if let Some(b) = probes[i + 1..].iter().find(|b| a.meets_all && !b.meets_all) {
            out.push(format!(
                "not monotone: {} meets every requirement but the larger {} does not; the answer assumes monotonicity",
                a.value, b.value
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
            if worse {
                out.push(format!(
                    "not monotone: {} is significantly worse at {} than at {} (means {:.4} and {:.4})",
                    req.metric,
                    w[1].value,
                    w[0].value,
                    sb.mean.unwrap_or(f64::NAN),
                    sa.mean.unwrap_or(f64::NAN),
                ));
                break;
            }
        }
    }
    out
}

/// Parses `PATH=LO..HI` (integers, LO ≤ HI).
pub fn parse_vary(text: &str) -> Result<(String, i64, i64), String> {
    let fix = "write --vary PATH=LO..HI with whole numbers, e.g. --vary hop.api.workers=1..256";
    let (path, range) = text.split_once('=').ok_or_else(|| format!("--vary `{text}`: {fix}"))?;
    let (lo, hi) = range.split_once("..").ok_or_else(|| format!("--vary `{text}`: no `..` in the range; {fix}"))?;
    let parse =
        |s: &str| s.trim().parse::<i64>().map_err(|_| format!("--vary `{text}`: `{s}` is not a whole number; {fix}"));
    let (lo, hi) = (parse(lo)?, parse(hi)?);
    if lo > hi {
        return Err(format!("--vary `{text}`: the range is empty ({lo} > {hi}); {fix}"));
    }
    if path.trim().is_empty() {
        return Err(format!("--vary `{text}`: the path is empty; {fix}"));
    }
    Ok((path.trim().to_string(), lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::catalogue::Metric;

    /// A probe whose recovery time is `30 × 8 / value` s in every one of 3 replications (± 1 s).
    fn synthetic(value: i64, requirements: &[Requirement]) -> Probe {
        let t = 240.0 / value as f64;
        let stat = Stat::from_values(vec![Some(t - 1.0), Some(t), Some(t + 1.0)]);
        let metrics =
            ProbeMetrics { global: StatRow(vec![(Metric::RecoveryTimeS, stat)]), hops: vec![], tenants: vec![] };
        judge(value, &metrics, requirements)
    }

    #[test]
    fn bisection_finds_the_smallest_passing_value_in_few_probes() {
        let req = vec![Requirement::parse("recovery_time_s <= 20").unwrap()];
        // 240 / v + 1 + t(0.95, 2) × 1 / √3 = 240 / v + 2.1547 ≤ 20 ⇔ v ≥ 13.45: the answer is 14.
        let mut calls = 0;
        let (chosen, probes) = search(1, 256, |v| {
            calls += 1;
            Ok::<_, ()>(synthetic(v, &req))
        })
        .unwrap();
        assert_eq!(chosen, Some(14));
        assert!(calls <= 10, "{calls} probes");
        assert!(probes.windows(2).all(|w| w[0].value < w[1].value));
        assert!(monotonicity_warnings(&probes, &req).is_empty());
        // Nothing in range: the top fails, one probe.
        let (none, probes) = search(1, 10, |v| Ok::<_, ()>(synthetic(v, &req))).unwrap();
        assert_eq!((none, probes.len()), (None, 1));
    }

    #[test]
    fn a_non_monotone_metric_is_reported() {
        let req = vec![Requirement::parse("recovery_time_s <= 20").unwrap()];
        let probes = vec![synthetic(16, &req), synthetic(4, &req)]
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.value = i as i64 + 1; // 1 passes (t = 15), 2 fails (t = 60)
                p
            })
            .collect::<Vec<_>>();
        let warnings = monotonicity_warnings(&probes, &req);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("1 meets every requirement but the larger 2"));
        assert!(parse_vary("hop.api.workers=8..2").unwrap_err().contains("empty"));
        assert_eq!(parse_vary("hop.api.workers=1..256").unwrap(), ("hop.api.workers".into(), 1, 256));
    }
}
