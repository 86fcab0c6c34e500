//! "What differs": every metric whose paired difference between some variant and the baseline
//! is significant, per scope (system, each hop, each tenant), as the rows of the terminal table;
//! the metrics equal in every variant collapse to one line.
//!
//! Row order: the verdict's own metrics first (what the ranking and requirements use), then the
//! rest by how far apart the variants are (the largest relative difference first; a share with
//! "higher is better" is measured on its failing side, so 90% vs 99.5% success counts as 10% vs
//! 0.5% failures). Rows that repeat another row are folded into it: a hop whose figures are the
//! system's (the first hop's peaks), a metric with exactly the same values as another in its
//! scope (`duplicates` and `duplicates (TTL expired)`), and the count behind a ratio when the
//! denominator is the same in every variant (`retries` beside `attempts`, `peak attempts/s`
//! beside `peak ÷ capacity`, `succeeded requests` beside `succeeded`).

use crate::metrics::catalogue::{Better, Metric, MetricScope, Unit};
use crate::metrics::stats::{Stat, StatRow};
use crate::runner::compare::difference;
use crate::runner::{Study, VariantResult};

/// Metrics that describe the run rather than compare variants.
const SKIP: [Metric; 3] = [Metric::Events, Metric::Requests, Metric::CapacityPerS];

/// (shown, folded, denominator): `folded` is not repeated beside `shown` when `denominator` has
/// the same values in every variant (`None`: the request count of the scope).
const IMPLIED: [(Metric, Metric, Option<Metric>); 4] = [
    (Metric::Attempts, Metric::Retries, None),
    (Metric::SuccessRatio, Metric::Succeeded, None),
    (Metric::PeakOverCapacity, Metric::PeakAttemptsPerS, Some(Metric::CapacityPerS)),
    (Metric::PeakAfterOverCapacity, Metric::PeakAfterPerS, Some(Metric::CapacityPerS)),
];

/// True when `a` and `b` differ: the paired 95% interval of a − b excludes zero (with one pair,
/// any difference), or one has a value where the other has none.
pub fn differs(a: &Stat, b: &Stat) -> bool {
    if a.values.len() != b.values.len() {
        return false;
    }
    let nulls_differ = a.values.iter().zip(&b.values).any(|(x, y)| x.is_some() != y.is_some());
    let d = difference(a, b).paired;
    let n = d.values.iter().flatten().count();
    let significant = match (d.mean, d.ci95) {
        (Some(m), _) if n == 1 => m != 0.0,
        (Some(_), Some([lo, hi])) => lo > 0.0 || hi < 0.0,
        _ => false,
    };
    nulls_differ || significant
}

/// One scope of every variant: its label (`system`, `hop db`, `tenant quiet`) and rows.
struct ScopeRows<'a> {
    label: String,
    scope: MetricScope,
    name: String,
    rows: Vec<&'a StatRow>,
}

/// One row of the "what differs" table.
#[derive(Clone, Debug)]
pub struct Row {
    /// `hop db · amplification ↓` (with what was folded into it).
    pub label: String,
    /// One cell per variant, in run order.
    pub cells: Vec<String>,
    /// True for a metric the verdict ranks by or requires.
    pub objective: bool,
    /// The metric.
    pub metric: Metric,
}

/// What the table shows: the rows that differ, and what is equal everywhere.
#[derive(Debug, Default)]
pub struct Differs {
    /// Rows that differ, most telling first.
    pub rows: Vec<Row>,
    /// Whole-system metrics equal in every variant.
    pub equal_system: Vec<Metric>,
    /// Per-hop and per-tenant figures equal in every variant (counted, not listed).
    pub equal_scoped: usize,
    /// Counts not repeated beside the ratio they are behind (`retries` beside `attempts`).
    pub implied: Vec<String>,
}

fn pick(v: &VariantResult, i: usize, hop: bool) -> Option<&StatRow> {
    if hop {
        v.hops.get(i).map(|x| &x.1)
    } else {
        v.tenants.get(i).map(|x| &x.1)
    }
}

fn scopes(study: &Study) -> Vec<ScopeRows<'_>> {
    let first = &study.variants[0];
    let mut out = vec![ScopeRows {
        label: "system".into(),
        scope: MetricScope::Global,
        name: String::new(),
        rows: study.variants.iter().map(|v| &v.metrics).collect(),
    }];
    for (hop, names) in [(true, &first.hops), (false, &first.tenants)] {
        for (i, (name, _)) in names.iter().enumerate() {
            let rows: Option<Vec<&StatRow>> = study.variants.iter().map(|v| pick(v, i, hop)).collect();
            if let Some(rows) = rows {
                let (word, scope) = if hop { ("hop", MetricScope::Hop) } else { ("tenant", MetricScope::Tenant) };
                out.push(ScopeRows { label: format!("{word} {name}"), scope, name: name.clone(), rows });
            }
        }
    }
    out
}

/// The stats of `metric` in every variant of a scope (None when a variant lacks it).
fn stats<'a>(scope: &ScopeRows<'a>, metric: Metric) -> Option<Vec<&'a Stat>> {
    scope.rows.iter().map(|r| r.get(metric)).collect()
}

/// Same per-replication values in every variant (nothing to compare).
fn same_everywhere(stats: &[&Stat]) -> bool {
    stats.iter().all(|s| s.values == stats[0].values)
}

/// Same per-replication values variant by variant (one row repeats the other).
fn same_rows(a: &[&Stat], b: &[&Stat]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.values == y.values)
}

/// How far apart the variants are, 0 (equal) to 1 (one is zero or null where another is not).
fn spread(metric: Metric, stats: &[&Stat]) -> f64 {
    let def = metric.def();
    let bad_side = def.unit == Unit::Share && def.better == Better::Higher;
    let means: Vec<Option<f64>> = stats.iter().map(|s| s.mean.map(|m| if bad_side { 1.0 - m } else { m })).collect();
    if means.iter().any(Option::is_none) {
        return 1.0;
    }
    let means: Vec<f64> = means.into_iter().flatten().collect();
    let hi = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = means.iter().copied().fold(f64::INFINITY, f64::min);
    let scale = hi.abs().max(lo.abs());
    if scale > 0.0 {
        ((hi - lo) / scale).min(1.0)
    } else {
        0.0
    }
}

fn arrow(metric: Metric) -> &'static str {
    match metric.def().better {
        Better::Lower => " ↓",
        Better::Higher => " ↑",
        Better::Neither => "",
    }
}

/// The metric's words as a row label.
pub fn metric_label(metric: Metric) -> &'static str {
    metric.def().label.trim_end_matches(" (s)")
}

/// The rows of the "what differs" table (nothing with a single variant).
pub fn differing(study: &Study) -> Differs {
    let mut out = Differs::default();
    if study.variants.len() < 2 {
        return out;
    }
    let scopes = scopes(study);
    let trigger = study.variants.iter().any(|v| v.spec.trigger_end().is_some());
    let several = |scope: MetricScope| scopes.iter().filter(|s| s.scope == scope).count() > 1;
    let objective: Vec<(MetricScope, String, Metric)> = study
        .objective
        .rank
        .iter()
        .map(|c| &c.metric)
        .chain(study.objective.require.iter().map(|r| &r.metric))
        .map(|m| (m.scope, m.name.clone(), m.metric))
        .collect();
    // (objective position, spread, row, its stats); the system's rows come first.
    let mut ranked: Vec<(Option<usize>, f64, Row, Vec<&Stat>)> = Vec::new();
    for scope in &scopes {
        // A lone hop or tenant repeats the system figures: show only what the system row lacks.
        let lone = scope.scope != MetricScope::Global && !several(scope.scope);
        let metrics: Vec<Metric> = scope.rows[0].iter().map(|(m, _)| *m).collect();
        let differ = |m: Metric| stats(scope, m).is_some_and(|all| all.iter().skip(1).any(|s| differs(s, all[0])));
        let mut local: Vec<(Option<usize>, f64, Row, Vec<&Stat>)> = Vec::new();
        for &metric in &metrics {
            if SKIP.contains(&metric) || (lone && metric.def().scopes.global) {
                continue;
            }
            let Some(all) = stats(scope, metric) else { continue };
            if !differ(metric) {
                if scope.scope == MetricScope::Global {
                    out.equal_system.push(metric);
                } else {
                    out.equal_scoped += 1;
                }
                continue;
            }
            // The same values as a metric already shown in this scope.
            if let Some(row) = local.iter_mut().find(|r| same_rows(&r.3, &all)) {
                row.2.label.push_str(&format!(" = {}", metric_label(metric)));
                continue;
            }
            // The count behind a ratio shown beside it.
            let implied = IMPLIED.iter().any(|&(shown_metric, folded, denom)| {
                folded == metric && differ(shown_metric) && denominator_equal(scope, denom)
            });
            if implied {
                let label = metric_label(metric).to_string();
                if !out.implied.contains(&label) {
                    out.implied.push(label);
                }
                continue;
            }
            // An every-tenant reference (`tenant.*.success_ratio`) marks that metric at each tenant.
            let position = objective.iter().position(|(s, n, m)| {
                *s == scope.scope
                    && *m == metric
                    && (*n == scope.name
                        || (*n == crate::metrics::objective::EVERY_TENANT && *s == MetricScope::Tenant))
            });
            // With a trigger the run's peak is the one during it (the post-recovery peak has its row).
            let words = if trigger && metric == Metric::PeakOverCapacity {
                "peak during the trigger ÷ capacity"
            } else if trigger && metric == Metric::PeakAttemptsPerS {
                "peak attempts/s during the trigger"
            } else {
                metric_label(metric)
            };
            let row = Row {
                label: format!("{} · {words}{}", scope.label, arrow(metric)),
                cells: all.iter().map(|s| crate::report::values::value(metric, Some(s))).collect(),
                objective: position.is_some(),
                metric,
            };
            local.push((position, spread(metric, &all), row, all));
        }
        for row in local {
            // A hop or tenant whose figures are the system's: said on the system row.
            let system_twin = ranked.iter_mut().find(|r| {
                scope.scope != MetricScope::Global
                    && r.2.label.starts_with("system ·")
                    && r.2.metric == row.2.metric
                    && same_rows(&r.3, &row.3)
            });
            match system_twin {
                Some(twin) => {
                    twin.2.label.push_str(&format!(" (= {})", scope.label));
                    if row.0.is_some() {
                        twin.0 = twin.0.min(row.0).or(row.0);
                        twin.2.objective = true;
                    }
                }
                None => ranked.push(row),
            }
        }
    }
    // Objective rows in the objective's order, then the widest spread first (a stable sort:
    // ties keep the scope and catalogue order).
    ranked.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.1.partial_cmp(&a.1).unwrap_or(std::cmp::Ordering::Equal),
    });
    out.rows = ranked.into_iter().map(|r| r.2).collect();
    out
}

/// True when the denominator of an implied ratio has the same values in every variant.
fn denominator_equal(scope: &ScopeRows<'_>, denom: Option<Metric>) -> bool {
    let metric =
        denom.unwrap_or(if scope.scope == MetricScope::Hop { Metric::FirstAttempts } else { Metric::Requests });
    stats(scope, metric).is_some_and(|s| same_everywhere(&s))
}
