//! Validation of a hop's replicas and load balancer: `replicas`, `balancer`, `health_check`,
//! `outlier_detection`, and the `replica` of a fault (docs/MODEL.md, "Replicas and
//! load balancers").

use super::checks::{count, finite_at_least, positive, unknown, V};
use super::error::Invalid;
use super::raw::RawHop;
use crate::engine::NS_PER_S;
use crate::model::{Balancer, HealthCheck, OutlierDetection, ReplicaSpec};

/// Most replicas one hop may have (the flat per-replica state is indexed by `u32`, and the
/// per-replica series and summary rows grow with it).
pub(super) const MAX_REPLICAS: i64 = 1_000;

/// Most workers a hop may have over all its replicas (its capacity in the metrics is a `u32`).
const MAX_TOTAL_WORKERS: u64 = 10_000_000;

/// `slots`: the most replicas when autoscaling scales them (`autoscale.max`), all allocated.
pub(super) fn replicas(h: &RawHop, workers: u32, slots: Option<u32>, at: &dyn Fn(&str) -> String) -> V<ReplicaSpec> {
    let n = count(h.replicas.unwrap_or(1), &at("replicas"), 1, MAX_REPLICAS)? as u32;
    if let Some(max) = slots {
        if u64::from(max) * u64::from(workers) > MAX_TOTAL_WORKERS {
            let why = format!("is {max} replicas with {workers} workers each; a hop may have at most {MAX_TOTAL_WORKERS} workers over all its replicas");
            return Err(Invalid::at(&at("autoscale.max"), why));
        }
    }
    let n = slots.unwrap_or(n);
    // One replica keeps the hop's own workers limit (a cache hop has unbounded workers).
    if n > 1 && u64::from(n) * u64::from(workers) > MAX_TOTAL_WORKERS {
        let why = format!("is {n} with {workers} workers each; a hop may have at most {MAX_TOTAL_WORKERS} workers over all its replicas");
        return Err(Invalid::at(&at("replicas"), why));
    }
    let balancer = match &h.balancer {
        None => Balancer::RoundRobin,
        Some(name) => {
            super::tagged::read_name(name).map_err(|names| unknown(&at("balancer"), "balancer", name, names))?
        }
    };
    let health_check = match &h.health_check {
        None => None,
        Some(c) => Some(HealthCheck {
            interval: super::checks::period(c.interval, &at("health_check.interval"))?,
            unhealthy_threshold: count(
                c.unhealthy_threshold.unwrap_or(2),
                &at("health_check.unhealthy_threshold"),
                1,
                1_000,
            )? as u32,
            healthy_threshold: count(c.healthy_threshold.unwrap_or(1), &at("health_check.healthy_threshold"), 1, 1_000)?
                as u32,
        }),
    };
    let outlier = match &h.outlier_detection {
        None => None,
        Some(o) => {
            let base = o
                .base_ejection_time
                .map_or(Ok(30 * NS_PER_S), |d| positive(d, &at("outlier_detection.base_ejection_time")))?;
            let max = o
                .max_ejection_time
                .map_or(Ok(base.max(300 * NS_PER_S)), |d| positive(d, &at("outlier_detection.max_ejection_time")))?;
            if max < base {
                let why = format!(
                    "is {} but base_ejection_time is {}; the longest ejection cannot be shorter than the first",
                    super::checks::show(max),
                    super::checks::show(base)
                );
                return Err(Invalid::at(&at("outlier_detection.max_ejection_time"), why));
            }
            let percent = o.max_ejection_percent.unwrap_or(10.0);
            let path = at("outlier_detection.max_ejection_percent");
            finite_at_least(percent, 0.0, &path, "it must be a percentage in [0, 100] (Envoy's default is 10)")?;
            if percent > 100.0 {
                return Err(Invalid::at(
                    &path,
                    format!("is {percent}; it must be a percentage in [0, 100] (Envoy's default is 10)"),
                ));
            }
            Some(OutlierDetection {
                consecutive_errors: count(
                    o.consecutive_errors.unwrap_or(5),
                    &at("outlier_detection.consecutive_errors"),
                    1,
                    1_000_000,
                )? as u32,
                base_ejection_time: base,
                max_ejection_time: max,
                max_ejection_percent: percent,
            })
        }
    };
    if n == 1 {
        let single = [
            ("balancer", h.balancer.is_some()),
            ("health_check", health_check.is_some()),
            ("outlier_detection", outlier.is_some()),
        ];
        if let Some((field, _)) = single.iter().find(|(_, set)| *set) {
            let why = "has no effect on a hop with one replica (nothing to balance or take out of rotation); set replicas = 2 or more, or remove it";
            return Err(Invalid::at(&at(field), why));
        }
    }
    Ok(ReplicaSpec { count: n, balancer, health_check, outlier })
}

/// The `replica` of fault `i` on hop `hop_name` with `replicas` replicas: `None` for the whole hop.
pub(super) fn fault_replica(value: Option<i64>, i: usize, hop_name: &str, replicas: u32) -> V<Option<u32>> {
    let Some(r) = value else { return Ok(None) };
    if r < 0 || r >= i64::from(replicas) {
        let range = if replicas == 1 {
            "it has one replica (replica 0); remove `replica` to hit the whole hop, or give the hop `replicas = N`"
                .to_string()
        } else {
            format!("its replicas are numbered 0 to {} (0-based); remove `replica` to hit the whole hop", replicas - 1)
        };
        let why = format!(
            "is {r}, but hop `{hop_name}` has {replicas} replica{}: {range}",
            if replicas == 1 { "" } else { "s" }
        );
        return Err(Invalid::at(&format!("fault.{i}.replica"), why));
    }
    Ok(Some(r as u32))
}
