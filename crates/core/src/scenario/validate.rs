//! Validation: a [`RawScenario`] becomes a [`SimSpec`] whose every value is in range, or an
//! [`Invalid`] naming the field, the value and the fix.

use super::checks::{count, positive, show, V};
use super::error::Invalid;
use super::raw::{Dur, RawScenario};
use crate::engine::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::{Arrival, HopSpec, SimSpec, TenantSpec};

/// Time-series buckets above this many are refused.
pub const BUCKETS_MAX: u64 = 2_000_000;
/// Most tenants, hops and policies a scenario may define: the simulation keeps their indices in
/// `u16` (and hop indices in the top bits of draw keys), so larger counts would be truncated.
pub const TENANTS_MAX: usize = 1_000;
/// See [`TENANTS_MAX`].
pub const HOPS_MAX: usize = 64;
/// See [`TENANTS_MAX`].
pub const POLICIES_MAX: usize = 1_000;

/// Top-level values that are not part of the simulated system.
#[derive(Clone, Debug)]
pub struct Meta {
    /// Master seed.
    pub seed: u64,
    /// Independent replications.
    pub replications: u32,
}

/// Validates the whole file; warnings are invariant violations that do not stop a run.
pub fn validate(raw: &RawScenario) -> V<(Meta, SimSpec, Vec<String>)> {
    super::names::scenario_name(&raw.name)?;
    super::import::begin(&raw.base_dir);
    let seed = raw.seed.unwrap_or(1);
    let seed =
        u64::try_from(seed).map_err(|_| Invalid::at("seed", format!("is {seed}; use a non-negative integer")))?;
    let replications = count(raw.replications.unwrap_or(1), "replications", 1, 10_000)? as u32;
    let horizon = positive(raw.horizon, "horizon")?;
    let bucket = raw.bucket.map_or(Ok(default_bucket(horizon)), |b| positive(b, "bucket"))?;
    let drain_limit = match raw.drain_limit {
        Some(Dur(d)) if d < horizon => {
            return Err(Invalid::at("drain_limit", format!("is {} but must be ≥ horizon ({})", show(d), show(horizon))))
        }
        Some(Dur(d)) => d,
        None => horizon.saturating_mul(2),
    };
    if drain_limit / bucket > BUCKETS_MAX {
        return Err(Invalid::at(
            "bucket",
            format!(
                "{} gives {} time-series buckets over the {} run (at most {BUCKETS_MAX}); use a wider bucket",
                show(bucket),
                drain_limit / bucket,
                show(drain_limit)
            ),
        ));
    }
    let max_events = count(raw.max_events.unwrap_or(2_000_000_000), "max_events", 1, i64::MAX)? as u64;
    let recovery_hold = raw.recovery_hold.map_or(5 * NS_PER_S, |d| d.0);
    for (path, n, max) in [
        ("tenant", raw.tenant.len(), TENANTS_MAX),
        ("hop", raw.hop.len(), HOPS_MAX),
        ("policy", raw.policy.len(), POLICIES_MAX),
    ] {
        if n > max {
            return Err(Invalid::at(path, format!("{n} are defined; at most {max} are supported: merge some of them")));
        }
    }
    let policy_names: Vec<&str> = raw.policy.keys().map(String::as_str).collect();
    let policies = raw.policy.iter().map(|(name, p)| super::policies::policy(name, p)).collect::<V<Vec<_>>>()?;
    let tenants = super::tenants::tenants(raw, &policy_names)?;
    let hops = super::hops::hops(raw, &policy_names, &policies, &tenants)?;
    let faults = super::faults::faults(&raw.fault, &hops)?;
    time_advances(&tenants, &hops)?;
    let spec = SimSpec {
        name: raw.name.clone(),
        horizon,
        drain_limit,
        bucket,
        max_events,
        recovery_hold,
        tenants,
        hops,
        policies,
        faults,
    };
    let mut warnings = super::import::take_warnings();
    warnings.extend(super::invariants::warnings(&spec));
    warnings.extend(super::sanity::warnings(&spec));
    warnings.extend(super::graph::warnings(&spec));
    Ok((Meta { seed, replications }, spec, warnings))
}

/// A closed loop with no think time against hops that answer in zero time would issue requests
/// forever at one instant: simulated time never advances, and memory runs out.
fn time_advances(tenants: &[TenantSpec], hops: &[HopSpec]) -> V<()> {
    let instant = hops.iter().all(|h| h.service.mean_ns(1) == 0.0 && h.network.mean_ns(1) == 0.0);
    let stuck = tenants.iter().find(|t| matches!(t.arrival, Arrival::Closed { think: 0, .. }));
    match stuck {
        Some(t) if instant => Err(Invalid::at(
            &format!("tenant.{}.arrival.think", t.name),
            "is 0 and every hop answers in 0 time (service and network means 0), so simulated time would never advance; give think or a hop's service a positive duration",
        )),
        _ => Ok(()),
    }
}

fn default_bucket(horizon: Nanos) -> Nanos {
    (horizon / 1_000).max(NS_PER_MS)
}
