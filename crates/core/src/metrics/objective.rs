//! What "better" means for a scenario: the metrics variants are ranked by, in order, and the
//! requirements a variant must meet (`[objective]` in a scenario, `--require` of `plan`).
//!
//! A metric reference is a catalogued metric name (`success_ratio`: the whole system), or
//! `hop.NAME.METRIC` / `tenant.NAME.METRIC` for one hop or tenant. A requirement is
//! `REFERENCE OP NUMBER` with OP one of `>=`, `<=`, `>`, `<`; a share may be written in percent
//! (`success_ratio >= 99.9%`).

use super::catalogue::{Better, Metric, MetricScope};
use super::stats::{Stat, StatRow};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::fmt;

/// The tenant name that stands for every tenant (`tenant.*.success_ratio`): variants are compared
/// tenant by tenant (see `runner::verdict`), and a requirement must hold for each.
pub const EVERY_TENANT: &str = "*";

/// A metric of one scope of a variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricRef {
    /// Whole system, or a hop or tenant named `name` ([`EVERY_TENANT`]: each tenant).
    pub scope: MetricScope,
    /// The hop's or tenant's name (empty for the whole system).
    pub name: String,
    /// The metric.
    pub metric: Metric,
}

impl fmt::Display for MetricRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            MetricScope::Global => write!(f, "{}", self.metric),
            MetricScope::Hop => write!(f, "hop.{}.{}", self.name, self.metric),
            MetricScope::Tenant => write!(f, "tenant.{}.{}", self.name, self.metric),
        }
    }
}

impl Serialize for MetricRef {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The metrics of one variant that a reference can point into.
pub struct Scoped<'a> {
    /// Whole-system metrics.
    pub global: &'a StatRow,
    /// Per hop: name and metrics.
    pub hops: &'a [(String, StatRow)],
    /// Per tenant: name and metrics.
    pub tenants: &'a [(String, StatRow)],
}

impl MetricRef {
    /// Parses `METRIC`, `hop.NAME.METRIC` or `tenant.NAME.METRIC`.
    pub fn parse(text: &str) -> Result<MetricRef, String> {
        let text = text.trim();
        let (scope, name, metric) = if let Some(rest) = text.strip_prefix("hop.") {
            let (name, metric) = rest.rsplit_once('.').ok_or_else(|| format!("`{text}`: write hop.NAME.METRIC"))?;
            (MetricScope::Hop, name, metric)
        } else if let Some(rest) = text.strip_prefix("tenant.") {
            let (name, metric) = rest.rsplit_once('.').ok_or_else(|| format!("`{text}`: write tenant.NAME.METRIC"))?;
            (MetricScope::Tenant, name, metric)
        } else {
            (MetricScope::Global, "", text)
        };
        let metric = Metric::from_name(metric).ok_or_else(|| {
            let near = crate::engine::text::closest(metric, Metric::ALL.iter().map(|m| m.name()));
            let hint = near.map(|n| format!(" (did you mean `{n}`?)")).unwrap_or_default();
            format!("`{metric}` is not a metric{hint}; metric names are those of summary.json, e.g. success_ratio, peak_after_over_capacity, latency_s_p99")
        })?;
        if !metric.def().scopes.has(scope) {
            let scope_word = match scope {
                MetricScope::Global => "the whole system",
                MetricScope::Hop => "a hop",
                MetricScope::Tenant => "a tenant",
            };
            return Err(format!("`{metric}` is not measured for {scope_word}"));
        }
        if scope != MetricScope::Global && name.is_empty() {
            return Err(format!("`{text}`: the hop or tenant name is empty"));
        }
        Ok(MetricRef { scope, name: name.to_string(), metric })
    }

    /// True for `tenant.*.METRIC`: every tenant, compared tenant by tenant.
    pub fn is_every_tenant(&self) -> bool {
        self.scope == MetricScope::Tenant && self.name == EVERY_TENANT
    }

    /// The same metric at the tenant named `name` (for an every-tenant reference).
    pub fn at_tenant(&self, name: &str) -> MetricRef {
        MetricRef { scope: MetricScope::Tenant, name: name.to_string(), metric: self.metric }
    }

    /// The references this one stands for in `v`: itself, or one per tenant of `v` for an
    /// every-tenant reference.
    pub fn expand(&self, v: &Scoped) -> Vec<MetricRef> {
        if self.is_every_tenant() {
            v.tenants.iter().map(|(n, _)| self.at_tenant(n)).collect()
        } else {
            vec![self.clone()]
        }
    }

    /// The statistic this reference points to in `v`, if that scope exists (none for an
    /// every-tenant reference: see [`MetricRef::expand`]).
    pub fn stat<'a>(&self, v: &Scoped<'a>) -> Option<&'a Stat> {
        if self.is_every_tenant() {
            return None;
        }
        let row = match self.scope {
            MetricScope::Global => v.global,
            MetricScope::Hop => &v.hops.iter().find(|(n, _)| *n == self.name)?.1,
            MetricScope::Tenant => &v.tenants.iter().find(|(n, _)| *n == self.name)?.1,
        };
        row.get(self.metric)
    }

    /// Checks that the hop or tenant exists among `hops` / `tenants`.
    pub fn check_names(&self, hops: &[&str], tenants: &[&str]) -> Result<(), String> {
        let (names, what) = match self.scope {
            MetricScope::Global => return Ok(()),
            MetricScope::Hop => (hops, "hop"),
            MetricScope::Tenant => (tenants, "tenant"),
        };
        if names.contains(&self.name.as_str()) || (self.is_every_tenant() && !names.is_empty()) {
            Ok(())
        } else {
            Err(format!("`{self}`: no {what} is named `{}`; the {what}s are {}", self.name, names.join(", ")))
        }
    }
}

/// A comparison operator of a requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>=`
    AtLeast,
    /// `<=`
    AtMost,
    /// `>`
    Above,
    /// `<`
    Below,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::AtLeast => ">=",
            Op::AtMost => "<=",
            Op::Above => ">",
            Op::Below => "<",
        }
    }

    fn holds(self, x: f64, threshold: f64) -> bool {
        match self {
            Op::AtLeast => x >= threshold,
            Op::AtMost => x <= threshold,
            Op::Above => x > threshold,
            Op::Below => x < threshold,
        }
    }

    /// True when the requirement wants the value high (`>=`, `>`).
    pub fn wants_high(self) -> bool {
        matches!(self, Op::AtLeast | Op::Above)
    }
}

/// `REFERENCE OP NUMBER`.
#[derive(Clone, Debug, PartialEq)]
pub struct Requirement {
    /// The metric constrained.
    pub metric: MetricRef,
    /// The comparison.
    pub op: Op,
    /// The threshold, in the metric's own unit (a share as a fraction).
    pub threshold: f64,
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.metric, self.op.text(), self.threshold)
    }
}

impl Serialize for Requirement {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Requirement {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Requirement::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// How one variant fares against one requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The one-sided 95% confidence bound is on the right side of the threshold.
    Met,
    /// It is not (or a replication has no value: e.g. never recovered).
    NotMet,
}

impl Requirement {
    /// Parses `REFERENCE OP NUMBER` (a `%` after the number divides it by 100).
    pub fn parse(text: &str) -> Result<Requirement, String> {
        let fix = "write METRIC OP NUMBER with OP one of >=, <=, >, <, e.g. \"success_ratio >= 0.999\"";
        let ops = [(">=", Op::AtLeast), ("<=", Op::AtMost), (">", Op::Above), ("<", Op::Below)];
        let (at, len, op) = ops
            .iter()
            .filter_map(|&(s, op)| text.find(s).map(|i| (i, s.len(), op)))
            .min_by_key(|&(i, len, _)| (i, usize::MAX - len))
            .ok_or_else(|| format!("requirement `{text}` has no comparison; {fix}"))?;
        let metric = MetricRef::parse(&text[..at]).map_err(|e| format!("requirement `{text}`: {e}"))?;
        let number = text[at + len..].trim();
        let (digits, percent) = match number.strip_suffix('%') {
            Some(d) => (d.trim(), true),
            None => (number, false),
        };
        let unit = metric.metric.def().unit;
        if percent && !matches!(unit, super::catalogue::Unit::Share | super::catalogue::Unit::Flag) {
            let own = match unit {
                super::catalogue::Unit::Seconds => "seconds, e.g. 0.05 for 50 ms",
                super::catalogue::Unit::PerSecond => "per second",
                super::catalogue::Unit::Times => "a multiple, e.g. 1.5",
                super::catalogue::Unit::Count | super::catalogue::Unit::Share | super::catalogue::Unit::Flag => {
                    "its own unit, a plain number"
                }
            };
            return Err(format!(
                "requirement `{text}`: `{number}` is a percentage, but `{}` is not a share; write the number in {own}",
                metric.metric
            ));
        }
        // `99.9e-2` parses to the double nearest 0.999, as `0.999` does (99.9 / 100 would not).
        let literal = if percent { format!("{digits}e-2") } else { digits.to_string() };
        let value: f64 = literal
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("requirement `{text}`: `{number}` is not a number; {fix}"))?;
        Ok(Requirement { metric, op, threshold: value })
    }

    /// Whether the variant `v` meets the requirement: [`Requirement::judge`] of its statistic, or
    /// for an every-tenant reference of each tenant's (met when every tenant meets it; the mean
    /// and bound shown are the worst tenant's). Returns the verdict, the mean and the bound.
    pub fn judge_in(&self, v: &Scoped) -> (Verdict, Option<f64>, Option<f64>) {
        if !self.metric.is_every_tenant() {
            let stat = self.metric.stat(v);
            let (verdict, bound) = self.judge(stat);
            return (verdict, stat.and_then(|s| s.mean), bound);
        }
        let mut worst: Option<(Verdict, Option<f64>, Option<f64>)> = None;
        for r in self.metric.expand(v) {
            let stat = r.stat(v);
            let (verdict, bound) = self.judge(stat);
            let this = (verdict, stat.and_then(|s| s.mean), bound);
            // NotMet before Met; among equals, the bound furthest on the wrong side.
            let worse =
                |a: &(Verdict, Option<f64>, Option<f64>), b: &(Verdict, Option<f64>, Option<f64>)| match (a.0, b.0) {
                    (Verdict::NotMet, Verdict::Met) => true,
                    (Verdict::Met, Verdict::NotMet) => false,
                    (Verdict::Met, Verdict::Met) | (Verdict::NotMet, Verdict::NotMet) => match (a.2, b.2) {
                        (None, _) => true,
                        (Some(_), None) => false,
                        (Some(x), Some(y)) => {
                            if self.op.wants_high() {
                                x < y
                            } else {
                                x > y
                            }
                        }
                    },
                };
            if worst.as_ref().is_none_or(|w| worse(&this, w)) {
                worst = Some(this);
            }
        }
        worst.unwrap_or((Verdict::NotMet, None, None))
    }

    /// Whether `stat` meets the requirement with 95% confidence: the one-sided Student-t 95%
    /// bound of the mean (lower for `>=`/`>`, upper for `<=`/`<`) is on the right side. A null
    /// replication (no value: never recovered, no success) fails; one replication is judged on
    /// its value alone.
    pub fn judge(&self, stat: Option<&Stat>) -> (Verdict, Option<f64>) {
        let Some(stat) = stat else { return (Verdict::NotMet, None) };
        if stat.values.is_empty() || stat.values.iter().any(Option::is_none) {
            return (Verdict::NotMet, None);
        }
        let bound = one_sided_bound(stat, self.op.wants_high());
        let met = bound.is_some_and(|b| self.op.holds(b, self.threshold));
        (if met { Verdict::Met } else { Verdict::NotMet }, bound)
    }
}

/// The one-sided 95% confidence bound of the mean of `stat`'s values: lower when `lower` is
/// true, else upper (the mean itself with one value or no spread).
pub fn one_sided_bound(stat: &Stat, lower: bool) -> Option<f64> {
    let xs: Vec<f64> = stat.values.iter().flatten().copied().collect();
    if xs.is_empty() {
        return None;
    }
    let (mean, sd) = super::stats::mean_sd(&xs);
    if xs.len() < 2 || sd == 0.0 {
        return Some(mean);
    }
    let t = StudentsT::new(0.0, 1.0, (xs.len() - 1) as f64).expect("n ≥ 2").inverse_cdf(0.95);
    let half = t * sd / (xs.len() as f64).sqrt();
    Some(if lower { mean - half } else { mean + half })
}

/// A ranking criterion: a metric and which way is better.
#[derive(Clone, Debug, PartialEq)]
pub struct Criterion {
    /// The metric.
    pub metric: MetricRef,
    /// Which way is better.
    pub better: Better,
}

impl fmt::Display for Criterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.better {
            Better::Higher => write!(f, "max {}", self.metric),
            Better::Lower | Better::Neither => write!(f, "min {}", self.metric),
        }
    }
}

impl Serialize for Criterion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Criterion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Criterion::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl Criterion {
    /// True when the metric is a share where higher is better (`success_ratio`): its relative
    /// differences are taken on what it misses (the failures), since near 100% 1% against 0.5%
    /// lost is twice the loss, however small the points.
    pub fn compares_loss(&self) -> bool {
        self.better == Better::Higher && self.metric.metric.def().unit == super::catalogue::Unit::Share
    }

    /// True when the metric is a latency of succeeded requests (`latency_s_p99`, …): it says
    /// nothing of the requests that failed, so it decides only between variants that deliver
    /// alike (see `runner::verdict`).
    pub fn of_successes(&self) -> bool {
        self.metric.metric.name().starts_with("latency_s_")
    }

    /// Parses `METRIC`, `min METRIC` or `max METRIC` (the catalogue's better direction when
    /// neither is written).
    pub fn parse(text: &str) -> Result<Criterion, String> {
        let text = text.trim();
        let (better, rest) = if let Some(r) = text.strip_prefix("min ") {
            (Some(Better::Lower), r)
        } else if let Some(r) = text.strip_prefix("max ") {
            (Some(Better::Higher), r)
        } else {
            (None, text)
        };
        let metric = MetricRef::parse(rest)?;
        let better = match better.unwrap_or(metric.metric.def().better) {
            Better::Neither => {
                return Err(format!(
                    "`{}` has no better direction; write \"min {rest}\" or \"max {rest}\"",
                    metric.metric
                ))
            }
            b @ (Better::Lower | Better::Higher) => b,
        };
        Ok(Criterion { metric, better })
    }
}

/// A practical threshold of a ranked metric: a difference no larger is a tie, and the next
/// criterion decides (`[objective] tie`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tie {
    /// Percentage points of a share (`"0.5pp"`): |a − b| × 100 ≤ this.
    Points(f64),
    /// Relative (`"10%"`, stored as 0.1): the larger is at most this much above the smaller; for
    /// a share where higher is better, of what it misses (the failures: [`Criterion::compares_loss`]).
    Relative(f64),
    /// In the metric's own unit (`0.1`): |a − b| ≤ this.
    Absolute(f64),
}

impl fmt::Display for Tie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Tie::Points(p) => write!(f, "{p}pp"),
            Tie::Relative(r) => write!(f, "{}%", r * 100.0),
            Tie::Absolute(a) => write!(f, "{a}"),
        }
    }
}

impl Serialize for Tie {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Tie {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Tie::parse_text(&text, None).map_err(serde::de::Error::custom)
    }
}

impl Tie {
    /// The fix every refused threshold names.
    pub const FIX: &'static str = "write \"0.5pp\" (percentage points, for a share such as success_ratio), \"10%\" (relative to the smaller value) or a number ≥ 0 in the metric's own unit (0.1)";

    /// Parses `"0.5pp"`, `"10%"` or `"0.1"`; `metric` (when known) refuses points on a metric
    /// that is not a share.
    pub fn parse_text(text: &str, metric: Option<Metric>) -> Result<Tie, String> {
        let t = text.trim();
        let number =
            |digits: &str| -> Option<f64> { digits.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0) };
        let bad = || format!("`{text}` is not a tie threshold; {}", Tie::FIX);
        if let Some(d) = t.strip_suffix("pp") {
            let v = number(d).ok_or_else(bad)?;
            if let Some(m) = metric.filter(|m| m.def().unit != super::catalogue::Unit::Share) {
                return Err(format!(
                    "`{text}`: percentage points are for shares, and `{m}` is not one; write \"10%\" (relative) or a number in its own unit"
                ));
            }
            Ok(Tie::Points(v))
        } else if let Some(d) = t.strip_suffix('%') {
            Ok(Tie::Relative(number(d).ok_or_else(bad)? / 100.0))
        } else {
            Ok(Tie::Absolute(number(t).ok_or_else(bad)?))
        }
    }

    /// The default threshold of `metric` (see docs/MODEL.md, "Ties"): 25% of the failures for the
    /// success ratio (0.5% against 0.6% lost ties, 0.5% against 1% does not), 0.1× capacity of
    /// the post-recovery peak, 10% of a latency; none (any significant difference counts) for
    /// every other metric.
    pub fn default_for(metric: Metric) -> Tie {
        if metric == Metric::SuccessRatio {
            Tie::Relative(0.25)
        } else if metric == Metric::PeakAfterOverCapacity {
            Tie::Absolute(0.1)
        } else if metric.name().starts_with("latency_s_") {
            Tie::Relative(0.1)
        } else {
            Tie::Absolute(0.0)
        }
    }

    /// True when means `a` and `b` of `criterion`'s metric differ by no more than the threshold:
    /// a relative threshold on a share where higher is better compares the failures (1 − a,
    /// 1 − b).
    pub fn ties_on(self, criterion: &Criterion, a: f64, b: f64) -> bool {
        match self {
            Tie::Relative(_) if criterion.compares_loss() => self.ties(1.0 - a, 1.0 - b),
            Tie::Relative(_) | Tie::Points(_) | Tie::Absolute(_) => self.ties(a, b),
        }
    }

    /// The threshold in words for `criterion` (`25% of the failures`, `2pp`, `10%`).
    pub fn words_for(self, criterion: &Criterion) -> String {
        match self {
            Tie::Relative(r) if criterion.compares_loss() => format!("{}% of the failures", r * 100.0),
            Tie::Relative(_) | Tie::Points(_) | Tie::Absolute(_) => self.to_string(),
        }
    }

    /// True when means `a` and `b` of a metric differ by no more than the threshold.
    pub fn ties(self, a: f64, b: f64) -> bool {
        // A threshold written in decimal (0.1) ties a difference that is the same decimal apart
        // (1.1 − 1.0 = 0.10000000000000009): compare with a little room for rounding.
        let d = (a - b).abs();
        let room = 1e-9 * a.abs().max(b.abs()).max(1.0);
        match self {
            Tie::Points(p) => d * 100.0 <= p + 100.0 * room,
            Tie::Relative(r) => d <= r * a.abs().min(b.abs()) + room,
            Tie::Absolute(x) => d <= x + room,
        }
    }
}

/// The ranking criteria (in order), their tie thresholds and the requirements.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Objective {
    /// Criteria, most important first.
    pub rank: Vec<Criterion>,
    /// Requirements every acceptable variant meets.
    pub require: Vec<Requirement>,
    /// Per ranked criterion (keyed by its metric reference): the difference under which two
    /// variants tie on it. Every criterion has an entry (its default when not written).
    #[serde(default)]
    pub tie: std::collections::BTreeMap<String, Tie>,
}

impl Default for Objective {
    /// Success ratio first, then the peak after recovery over capacity, then p99 latency.
    fn default() -> Self {
        let rank = ["success_ratio", "peak_after_over_capacity", "latency_s_p99"]
            .map(|m| Criterion::parse(m).expect("catalogued"))
            .to_vec();
        Objective::with_default_ties(rank, Vec::new())
    }
}

impl Objective {
    /// The default objective of a scenario with `tenants` tenants: with two or more, every
    /// tenant's success comes first (`tenant.*.success_ratio`: a policy that starves one tenant
    /// loses to one that does not, whatever the totals say), then the default criteria.
    pub fn default_for_tenants(tenants: usize) -> Objective {
        let mut o = Objective::default();
        if tenants >= 2 {
            let every = Criterion::parse(&format!("tenant.{EVERY_TENANT}.success_ratio")).expect("catalogued");
            o.rank.insert(0, every);
            o = Objective::with_default_ties(o.rank, o.require);
        }
        o
    }

    /// An objective whose criteria all have their default tie thresholds.
    pub fn with_default_ties(rank: Vec<Criterion>, require: Vec<Requirement>) -> Objective {
        let tie = rank.iter().map(|c| (c.metric.to_string(), Tie::default_for(c.metric.metric))).collect();
        Objective { rank, require, tie }
    }

    /// Parses `rank` (empty: the default criteria) and `require`; default tie thresholds.
    pub fn parse(rank: &[String], require: &[String]) -> Result<Objective, String> {
        let rank = if rank.is_empty() {
            Objective::default().rank
        } else {
            rank.iter().map(|r| Criterion::parse(r)).collect::<Result<_, _>>()?
        };
        let require = require.iter().map(|r| Requirement::parse(r)).collect::<Result<_, _>>()?;
        Ok(Objective::with_default_ties(rank, require))
    }

    /// Sets the tie threshold of ranked metric `reference` from its text (`"0.5pp"`, `"10%"`,
    /// `0.1`); refuses a metric that is not ranked.
    pub fn set_tie(&mut self, reference: &str, text: &str) -> Result<(), String> {
        let metric = MetricRef::parse(reference)?;
        let key = metric.to_string();
        if !self.rank.iter().any(|c| c.metric == metric) {
            let ranked: Vec<String> = self.rank.iter().map(|c| c.metric.to_string()).collect();
            return Err(format!(
                "`{key}` is not ranked, so it has no tie; tie applies to the rank entries ({})",
                ranked.join(", ")
            ));
        }
        let tie = Tie::parse_text(text, Some(metric.metric)).map_err(|e| format!("{key} = {e}"))?;
        self.tie.insert(key, tie);
        Ok(())
    }

    /// The tie threshold of `criterion` (its default when the objective has none).
    pub fn tie_of(&self, criterion: &Criterion) -> Tie {
        self.tie
            .get(&criterion.metric.to_string())
            .copied()
            .unwrap_or_else(|| Tie::default_for(criterion.metric.metric))
    }

    /// Every metric reference the objective uses.
    pub fn references(&self) -> impl Iterator<Item = &MetricRef> {
        self.rank.iter().map(|c| &c.metric).chain(self.require.iter().map(|r| &r.metric))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_parse_scopes_operators_and_percent() {
        let r = Requirement::parse("hop.db.peak_after_over_capacity <= 2").unwrap();
        assert_eq!(r.metric.scope, MetricScope::Hop);
        assert_eq!(r.metric.name, "db");
        assert_eq!(r.op, Op::AtMost);
        assert_eq!(r.threshold, 2.0);
        let e = Requirement::parse("latency_s_p99 <= 50%").unwrap_err();
        assert!(e.contains("`50%` is a percentage") && e.contains("latency_s_p99") && e.contains("seconds"), "{e}");
        assert!(Requirement::parse("recovered >= 90%").is_ok(), "a flag's mean is a share of runs");
        let r = Requirement::parse("success_ratio>=99.9%").unwrap();
        assert_eq!((r.op, r.threshold), (Op::AtLeast, 0.999));
        assert_eq!(Requirement::parse("tenant.quiet.success_ratio > 0.9").unwrap().op, Op::Above);
        let e = Requirement::parse("sucess_ratio >= 0.9").unwrap_err();
        assert!(e.contains("did you mean `success_ratio`"), "{e}");
        assert!(Requirement::parse("success_ratio = 1").unwrap_err().contains("no comparison"));
        assert!(Requirement::parse("success_ratio >= lots").unwrap_err().contains("not a number"));
        assert!(Requirement::parse("tenant.x.overflow <= 1").unwrap_err().contains("not measured for a tenant"));
    }

    #[test]
    fn judging_uses_the_one_sided_bound_and_fails_nulls() {
        let r = Requirement::parse("recovery_time_s <= 30").unwrap();
        // Mean 28, sd √6, n 4: upper 95% bound 28 + t(0.95, 3) √6 / 2 = 28 + 2.3534 × 1.2247 = 30.88.
        let close = Stat::from_values(vec![Some(25.0), Some(28.0), Some(31.0), Some(28.0)]);
        let (v, bound) = r.judge(Some(&close));
        assert_eq!(v, Verdict::NotMet);
        assert!((bound.unwrap() - (28.0 + 2.3534 * 6f64.sqrt() / 2.0)).abs() < 1e-3);
        // The two-sided 95% interval's upper end (t = 3.182) would be 31.9: one-sided is tighter.
        let ok = Stat::from_values(vec![Some(26.0), Some(28.0), Some(30.0), Some(28.0)]);
        assert_eq!(r.judge(Some(&ok)).0, Verdict::Met);
        let clear = Stat::from_values(vec![Some(10.0), Some(11.0), Some(12.0)]);
        assert_eq!(r.judge(Some(&clear)).0, Verdict::Met);
        let never = Stat::from_values(vec![Some(10.0), None, Some(12.0)]);
        assert_eq!(r.judge(Some(&never)).0, Verdict::NotMet);
        assert_eq!(r.judge(None).0, Verdict::NotMet);
    }

    #[test]
    fn criteria_take_the_catalogue_direction_unless_told() {
        assert_eq!(Criterion::parse("success_ratio").unwrap().better, Better::Higher);
        assert_eq!(Criterion::parse("max hop.api.attempts").unwrap().better, Better::Higher);
        assert!(Criterion::parse("requests").unwrap_err().contains("no better direction"));
    }

    #[test]
    fn tie_thresholds_parse_and_apply() {
        assert_eq!(Tie::parse_text("0.5pp", Some(Metric::SuccessRatio)), Ok(Tie::Points(0.5)));
        assert_eq!(Tie::parse_text("10%", None), Ok(Tie::Relative(0.1)));
        assert_eq!(Tie::parse_text("0.1", None), Ok(Tie::Absolute(0.1)));
        assert!(Tie::parse_text("-1", None).unwrap_err().contains("\"0.5pp\""));
        assert!(Tie::parse_text("1pp", Some(Metric::LatencySP99)).unwrap_err().contains("percentage points"));
        // 0.4 pp within 0.5 pp; 0.6 pp not.
        assert!(Tie::Points(0.5).ties(0.971, 0.967));
        assert!(!Tie::Points(0.5).ties(0.973, 0.967));
        // 10% relative to the smaller: 66 ms ties 60 ms, 67 ms does not.
        assert!(Tie::Relative(0.1).ties(0.060, 0.066));
        assert!(!Tie::Relative(0.1).ties(0.060, 0.067));
        assert!(Tie::Absolute(0.1).ties(1.0, 1.1) && !Tie::Absolute(0.1).ties(1.0, 1.2));
        // Round trip through text (summary.json).
        for t in [Tie::Points(2.0), Tie::Relative(0.1), Tie::Absolute(0.1)] {
            assert_eq!(Tie::parse_text(&t.to_string(), None), Ok(t));
        }
        let mut o = Objective::default();
        assert_eq!(o.tie_of(&o.rank[0].clone()), Tie::Relative(0.25));
        // On the success ratio a relative threshold compares the failures: 0.5% against 0.6%
        // lost ties (1.2×), 0.5% against 1% does not, though both gaps are under a point.
        let success = o.rank[0].clone();
        assert!(success.compares_loss());
        assert!(Tie::Relative(0.25).ties_on(&success, 0.995, 0.994));
        assert!(!Tie::Relative(0.25).ties_on(&success, 0.995, 0.990));
        assert!(!Tie::Relative(0.25).ties_on(&success, 1.0, 0.9999), "none lost against some lost");
        assert!(Tie::Points(2.0).ties_on(&success, 0.995, 0.990), "points stay points");
        assert_eq!(Tie::Relative(0.25).words_for(&success), "25% of the failures");
        // With two tenants every tenant's success comes first.
        let t = Objective::default_for_tenants(2);
        assert_eq!(t.rank[0].metric.to_string(), "tenant.*.success_ratio");
        assert!(t.rank[0].metric.is_every_tenant());
        assert_eq!(Objective::default_for_tenants(1), Objective::default());
        assert!(o.set_tie("latency_s_p50", "10%").unwrap_err().contains("not ranked"));
        o.set_tie("success_ratio", "0.5pp").unwrap();
        assert_eq!(o.tie["success_ratio"], Tie::Points(0.5));
    }
}
