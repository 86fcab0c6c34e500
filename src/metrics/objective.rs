//! What "better" means for a scenario: the metrics variants are ranked by, in order, and the
//! requirements a variant must meet (`[objective]` in a scenario, `--require` of `plan`).
//!
//! A metric reference is a catalogued metric name (`success_ratio`: the whole system), or
//! `hop.NAME.METRIC` / `tenant.NAME.METRIC` for one hop or tenant. A requirement is
//! `REFERENCE OP NUMBER` with OP one of `>=`, `<=`, `>`, `<`; a share may be written in percent
//! (`success_ratio >= 99.9%`).

use super::catalogue::{Better, Metric, Scope};
use super::stats::{Stat, StatRow};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::fmt;

/// A metric of one scope of a variant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetricRef {
    /// Whole system, or a hop or tenant named `name`.
    pub scope: Scope,
    /// The hop's or tenant's name (empty for the whole system).
    pub name: String,
    /// The metric.
    pub metric: Metric,
}

impl fmt::Display for MetricRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope {
            Scope::Global => write!(f, "{}", self.metric),
            Scope::Hop => write!(f, "hop.{}.{}", self.name, self.metric),
            Scope::Tenant => write!(f, "tenant.{}.{}", self.name, self.metric),
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
            (Scope::Hop, name, metric)
        } else if let Some(rest) = text.strip_prefix("tenant.") {
            let (name, metric) = rest.rsplit_once('.').ok_or_else(|| format!("`{text}`: write tenant.NAME.METRIC"))?;
            (Scope::Tenant, name, metric)
        } else {
            (Scope::Global, "", text)
        };
        let metric = Metric::from_name(metric).ok_or_else(|| {
            let near = crate::engine::text::closest(metric, Metric::ALL.iter().map(|m| m.name()));
            let hint = near.map(|n| format!(" (did you mean `{n}`?)")).unwrap_or_default();
            format!("`{metric}` is not a metric{hint}; metric names are those of summary.json, e.g. success_ratio, peak_after_over_capacity, latency_s_p99")
        })?;
        if !metric.def().scopes.has(scope) {
            let scope_word = match scope {
                Scope::Global => "the whole system",
                Scope::Hop => "a hop",
                Scope::Tenant => "a tenant",
            };
            return Err(format!("`{metric}` is not measured for {scope_word}"));
        }
        if scope != Scope::Global && name.is_empty() {
            return Err(format!("`{text}`: the hop or tenant name is empty"));
        }
        Ok(MetricRef { scope, name: name.to_string(), metric })
    }

    /// The statistic this reference points to in `v`, if that scope exists.
    pub fn stat<'a>(&self, v: &Scoped<'a>) -> Option<&'a Stat> {
        let row = match self.scope {
            Scope::Global => v.global,
            Scope::Hop => &v.hops.iter().find(|(n, _)| *n == self.name)?.1,
            Scope::Tenant => &v.tenants.iter().find(|(n, _)| *n == self.name)?.1,
        };
        row.get(self.metric)
    }

    /// Checks that the hop or tenant exists among `hops` / `tenants`.
    pub fn check_names(&self, hops: &[&str], tenants: &[&str]) -> Result<(), String> {
        let (names, what) = match self.scope {
            Scope::Global => return Ok(()),
            Scope::Hop => (hops, "hop"),
            Scope::Tenant => (tenants, "tenant"),
        };
        if names.contains(&self.name.as_str()) {
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
        // `99.9e-2` parses to the double nearest 0.999, as `0.999` does (99.9 / 100 would not).
        let literal = if percent { format!("{digits}e-2") } else { digits.to_string() };
        let value: f64 = literal
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("requirement `{text}`: `{number}` is not a number; {fix}"))?;
        Ok(Requirement { metric, op, threshold: value })
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
            _ => write!(f, "min {}", self.metric),
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
            b => b,
        };
        Ok(Criterion { metric, better })
    }
}

/// The ranking criteria (in order) and the requirements.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Objective {
    /// Criteria, most important first.
    pub rank: Vec<Criterion>,
    /// Requirements every acceptable variant meets.
    pub require: Vec<Requirement>,
}

impl Default for Objective {
    /// Success ratio first, then the peak after recovery over capacity, then p99 latency.
    fn default() -> Self {
        let rank = ["success_ratio", "peak_after_over_capacity", "latency_s_p99"]
            .map(|m| Criterion::parse(m).expect("catalogued"))
            .to_vec();
        Objective { rank, require: Vec::new() }
    }
}

impl Objective {
    /// Parses `rank` (empty: the default criteria) and `require`.
    pub fn parse(rank: &[String], require: &[String]) -> Result<Objective, String> {
        let rank = if rank.is_empty() {
            Objective::default().rank
        } else {
            rank.iter().map(|r| Criterion::parse(r)).collect::<Result<_, _>>()?
        };
        let require = require.iter().map(|r| Requirement::parse(r)).collect::<Result<_, _>>()?;
        Ok(Objective { rank, require })
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
        assert_eq!(r.metric.scope, Scope::Hop);
        assert_eq!(r.metric.name, "db");
        assert_eq!(r.op, Op::AtMost);
        assert_eq!(r.threshold, 2.0);
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
}
