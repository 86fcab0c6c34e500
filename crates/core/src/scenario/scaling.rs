//! Validation of a hop's load-dependent latency (`load_latency`) and autoscaling (`autoscale`).

use super::checks::{count, finite_at_least, period, read_kind, unknown, Words, V};
use super::error::Invalid;
use super::raw::RawAutoscale;
use crate::engine::NS_PER_S;
use crate::model::{AutoscaleSpec, LoadLatency, ScaleMetric, ScaleUnit};

/// Largest multiplier parameter: beyond it every service time saturates the clock.
const FACTOR_MAX: f64 = 1e6;
/// Largest exponential rate: e^40 ≈ 2.4·10¹⁷ already turns 1 ns into 7 years.
const RATE_MAX: f64 = 40.0;

pub(super) fn load_latency(l: &toml::Table, at: &dyn Fn(&str) -> String) -> V<LoadLatency> {
    let table = at("");
    let words = Words {
        table: table.trim_end_matches('.'),
        field: at,
        family: "load_latency kind",
        siblings: &[],
        not_used: &|kind, _, _| format!("is not used by load_latency kind `{kind}`; remove it"),
        missing: &|kind, field| {
            let example = if field == "slope" { "1.0" } else { "4.0" };
            format!("kind `{kind}` needs {field}, e.g. {field} = {example}")
        },
    };
    let bounded = |value: f64, field: &str, max: f64, what: &str| -> V<f64> {
        let v = finite_at_least(value, 0.0, &at(field), &format!("{what} must be finite and within [0, {max}]"))?;
        if v > max {
            return Err(Invalid::at(&at(field), format!("is {v}; {what} must be within [0, {max}]")));
        }
        Ok(v)
    };
    Ok(match read_kind::<LoadLatency>(l, "kind", &words)? {
        LoadLatency::Linear { slope } => LoadLatency::Linear { slope: bounded(slope, "slope", FACTOR_MAX, "a slope")? },
        LoadLatency::Polynomial { coefficient, exponent } => {
            let coefficient = bounded(coefficient, "coefficient", FACTOR_MAX, "a coefficient")?;
            if !(exponent.is_finite() && exponent > 0.0 && exponent <= 100.0) {
                return Err(Invalid::at(
                    &at("exponent"),
                    format!("is {exponent}; an exponent must be within (0, 100], e.g. 3"),
                ));
            }
            LoadLatency::Polynomial { coefficient, exponent }
        }
        LoadLatency::Exponential { rate } => {
            LoadLatency::Exponential { rate: bounded(rate, "rate", RATE_MAX, "a rate (e^(rate·u) at utilisation u)")? }
        }
    })
}

/// The rule of a hop with `workers` per replica and `replicas` replicas in the file. A unit is
/// one replica (`unit = "replicas"`, the default when `replicas` > 1) or `step` workers of the
/// hop's one replica (`unit = "workers"`, the default otherwise).
pub(super) fn autoscale(
    a: &RawAutoscale,
    workers: u32,
    replicas: u32,
    at: &dyn Fn(&str) -> String,
) -> V<AutoscaleSpec> {
    let unit = match a.unit.as_deref() {
        None if replicas > 1 => ScaleUnit::Replicas,
        None => ScaleUnit::Workers,
        Some(name) => {
            super::tagged::read_name(name).map_err(|names| unknown(&at("unit"), "autoscale unit", name, names))?
        }
    };
    if unit == ScaleUnit::Workers && replicas > 1 {
        let why = format!(
            "is \"workers\", but the hop has replicas = {replicas}; scaling one replica's workers is not modelled: set unit = \"replicas\" (the balancer's replica count is scaled) or remove `replicas`"
        );
        return Err(Invalid::at(&at("unit"), why));
    }
    if unit == ScaleUnit::Replicas {
        if let Some(step) = a.step {
            let why = format!(
                "is {step}, but with unit = \"replicas\" a unit is one replica of the hop's {workers} worker(s); remove step (or set unit = \"workers\" on a one-replica hop)"
            );
            return Err(Invalid::at(&at("step"), why));
        }
    }
    let metric = match a.metric.as_deref() {
        None => ScaleMetric::Utilization,
        Some(name) => {
            super::tagged::read_name(name).map_err(|names| unknown(&at("metric"), "autoscale metric", name, names))?
        }
    };
    let table = at("");
    let table = table.trim_end_matches('.');
    let target = a.target.ok_or_else(|| {
        let example = if metric == ScaleMetric::Utilization { "0.6" } else { "10.0" };
        Invalid::at(table, format!("needs target, the {} to hold, e.g. target = {example}", metric.name()))
    })?;
    let fine = match metric {
        ScaleMetric::Utilization => target.is_finite() && target > 0.0 && target <= 1.0,
        ScaleMetric::QueuePerUnit => target.is_finite() && target > 0.0 && target <= 1e9,
    };
    if !fine {
        let range = if metric == ScaleMetric::Utilization { "(0, 1], e.g. 0.6" } else { "(0, 10⁹], e.g. 10" };
        return Err(Invalid::at(
            &at("target"),
            format!("is {target}; a {} target must be within {range}", metric.name()),
        ));
    }
    let period = a.evaluation_period.map_or(Ok(60 * NS_PER_S), |d| period(d, &at("evaluation_period")))?;
    let step = match unit {
        ScaleUnit::Replicas => workers,
        ScaleUnit::Workers => count(a.step.unwrap_or(1), &at("step"), 1, i64::from(workers))? as u32,
    };
    if unit == ScaleUnit::Workers && !workers.is_multiple_of(step) {
        let why = format!(
            "is {step}, but the hop starts with workers = {workers}, which is not a whole number of units of {step}; make workers a multiple of step"
        );
        return Err(Invalid::at(&at("step"), why));
    }
    let (initial, max_units, what) = match unit {
        ScaleUnit::Workers => (workers / step, 10_000_000 / i64::from(step), format!("units of {step} worker(s)")),
        ScaleUnit::Replicas => (replicas, super::replicas::MAX_REPLICAS, "replicas".to_string()),
    };
    let max =
        a.max.ok_or_else(|| Invalid::at(table, format!("needs max, the most {what}, e.g. max = {}", initial * 4)))?;
    let max = count(max, &at("max"), 1, max_units)? as u32;
    let min = count(a.min.unwrap_or(i64::from(initial.min(max))), &at("min"), 1, i64::from(max))? as u32;
    if unit == ScaleUnit::Replicas && !(min..=max).contains(&initial) {
        let why = format!(
            "starts with replicas = {initial}, outside autoscale [min, max] = [{min}, {max}] replicas; set replicas within {min}..={max}"
        );
        return Err(Invalid::at(table, why));
    }
    if !(min..=max).contains(&initial) {
        let why = format!(
            "starts with {initial} unit(s) of {step} worker(s) (workers = {workers}), outside autoscale [min, max] = [{min}, {max}]; set workers within {}..={}",
            min * step,
            max * step
        );
        return Err(Invalid::at(table, why));
    }
    Ok(AutoscaleSpec {
        metric,
        target,
        evaluation_period: period,
        scale_up_delay: a.scale_up_delay.map_or(60 * NS_PER_S, |d| d.0),
        scale_down_cooldown: a.scale_down_cooldown.map_or(300 * NS_PER_S, |d| d.0),
        min_units: min,
        max_units: max,
        step,
        unit,
        initial_units: initial,
    })
}
