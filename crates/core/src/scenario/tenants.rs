//! Validation of `[[tenant]]`: clients, policy, failure fractions, client timing, and the
//! tenant's `arrival` (herd, Poisson, closed loop, profile, trace, ramp).

use super::checks::{count, finite_at_least, positive, probability, show, unknown, V};
use super::error::Invalid;
use super::kind_fields::{refuse_unread, ArrivalFields};
use super::names::{check_name, first_duplicate};
use super::raw::{RawArrival, RawScenario, RawTenant};
use crate::engine::{Nanos, NS_PER_S};
use crate::model::{Arrival, ClientTiming, TenantSpec};

/// Clients above this many are refused before anything is allocated.
pub const CLIENTS_MAX: i64 = 50_000_000;
/// Bytes of memory a client costs at most (arrival slot, request counter, call and attempt).
pub const BYTES_PER_CLIENT_MAX: u64 = 400;

/// The most a client's own delay (`client_timing`, each part) may add to a retry.
const CLIENT_DELAY_MAX: Nanos = 60 * NS_PER_S;

pub(super) fn tenants(raw: &RawScenario, policy_names: &[&str]) -> V<Vec<TenantSpec>> {
    if raw.tenant.is_empty() {
        return Err(Invalid::at("tenant", "no [[tenant]] is defined; add one with name, clients, arrival and policy"));
    }
    // Blame the tenant whose clients push the running total over the limit.
    let mut total: i64 = 0;
    for t in &raw.tenant {
        total = total.saturating_add(t.clients.max(0));
        if total > CLIENTS_MAX {
            let gib = total as f64 * BYTES_PER_CLIENT_MAX as f64 / (1u64 << 30) as f64;
            return Err(Invalid::at(
                &format!("tenant.{}.clients", t.name),
                format!("brings the total to {total} clients, which would need up to {gib:.1} GiB; at most {CLIENTS_MAX} are simulated in all"),
            ));
        }
    }
    for (i, t) in raw.tenant.iter().enumerate() {
        check_name(&t.name, "tenant", i)?;
    }
    if let Some(i) = first_duplicate(raw.tenant.iter().map(|t| t.name.as_str())) {
        let why = format!("`{}` is defined twice; tenant names must be unique", raw.tenant[i].name);
        return Err(Invalid::at(&format!("tenant.{i}.name"), why));
    }
    let mut out = Vec::new();
    for t in &raw.tenant {
        out.push(tenant(t, policy_names)?);
    }
    Ok(out)
}

fn tenant(t: &RawTenant, policy_names: &[&str]) -> V<TenantSpec> {
    let at = |field: &str| format!("tenant.{}.{field}", t.name);
    let clients = count(t.clients, &at("clients"), 1, CLIENTS_MAX)? as u32;
    let policy = policy_names
        .iter()
        .position(|p| *p == t.policy)
        .ok_or_else(|| unknown(&at("policy"), "policy", &t.policy, policy_names))?;
    let invalid_fraction = probability(t.invalid_fraction, &at("invalid_fraction"))?;
    let poison_fraction = probability(t.poison_fraction, &at("poison_fraction"))?;
    if invalid_fraction + poison_fraction > 1.0 {
        return Err(Invalid::at(
            &at("poison_fraction"),
            format!(
                "invalid_fraction {invalid_fraction} + poison_fraction {poison_fraction} exceed 1; lower one of them"
            ),
        ));
    }
    let arrival = arrival(&t.arrival, &at("arrival"))?;
    let timing = t.client_timing.as_ref().map_or_else(ClientTiming::default, |c| ClientTiming {
        overhead: c.overhead.map_or(0, |d| d.0),
        lateness: c.lateness.map_or(0, |d| d.0),
        lateness_per_1000_per_s: c.lateness_per_1000_per_s.map_or(0, |d| d.0),
        work: c.work.map_or(0, |d| d.0),
    });
    let on_retry = "a client's own delay on a retry is at most 1m (it is added to every retry)";
    for (field, value, limit) in [
        ("overhead", timing.overhead, on_retry),
        ("lateness", timing.lateness, on_retry),
        ("lateness_per_1000_per_s", timing.lateness_per_1000_per_s, on_retry),
        ("work", timing.work, "a client's work on an attempt is at most 1m (every attempt waits for it)"),
    ] {
        if value > CLIENT_DELAY_MAX {
            return Err(Invalid::at(&at(&format!("client_timing.{field}")), format!("is {}; {limit}", show(value))));
        }
    }
    Ok(TenantSpec { name: t.name.clone(), clients, arrival, policy, invalid_fraction, poison_fraction, timing })
}

fn arrival(a: &RawArrival, at: &str) -> V<Arrival> {
    let field = |f: &str| format!("{at}.{f}");
    let start = a.start.map_or(0, |d| d.0);
    let spread = a.spread.map_or(0, |d| d.0);
    let kind = super::tagged::read_name::<ArrivalKindName>(&a.kind)
        .map_err(|names| unknown(&field("kind"), "arrival kind", &a.kind, names))?;
    refuse_unread::<ArrivalFields>("arrival kind", &a.kind, &a.written(), at)?;
    match kind {
        ArrivalKindName::Trace => super::trace::arrival(a, at),
        ArrivalKindName::Ramp => ramp(a, at),
        ArrivalKindName::Herd => {
            let requests_per_client =
                count(a.requests_per_client.unwrap_or(1), &field("requests_per_client"), 1, 1_000_000)? as u32;
            Ok(Arrival::Herd { start, spread, requests_per_client })
        }
        ArrivalKindName::Poisson => {
            let rate = a.rate_per_s.ok_or_else(|| Invalid::at(at, "kind `poisson` needs rate_per_s, e.g. 40.0"))?;
            let rate_per_s = rate_value(rate, &field("rate_per_s"))?;
            if rate_per_s == 0.0 {
                return Err(Invalid::at(&field("rate_per_s"), "is 0; a Poisson tenant needs a positive rate"));
            }
            Ok(Arrival::Poisson { rate_per_s })
        }
        ArrivalKindName::Closed => Ok(Arrival::Closed { start, spread, think: a.think.map_or(0, |d| d.0) }),
        ArrivalKindName::Profile => {
            let steps = a.steps.as_ref().filter(|s| !s.is_empty()).ok_or_else(|| {
                Invalid::at(at, "kind `profile` needs steps, e.g. [{ from = \"0s\", rate_per_s = 40.0 }]")
            })?;
            if steps[0].from.0 != 0 {
                let first = show(steps[0].from.0);
                return Err(Invalid::at(
                    &field("steps"),
                    format!("the first step starts at {first}; it must start at \"0s\""),
                ));
            }
            let mut out = Vec::with_capacity(steps.len());
            for (i, s) in steps.iter().enumerate() {
                if i > 0 && s.from.0 <= steps[i - 1].from.0 {
                    return Err(Invalid::at(
                        &field("steps"),
                        format!(
                            "step {i} starts at {} which is not after the previous step; sort the steps by `from`",
                            show(s.from.0)
                        ),
                    ));
                }
                out.push((s.from.0, rate_value(s.rate_per_s, &field("steps"))?));
            }
            Ok(Arrival::Profile { steps: out })
        }
    }
}

fn rate_value(rate: f64, path: &str) -> V<f64> {
    finite_at_least(rate, 0.0, path, "a rate must be a finite number ≥ 0 (requests per second)")?;
    if rate > 1e9 {
        return Err(Invalid::at(path, format!("is {rate}; at most 1e9 requests per second are simulated")));
    }
    Ok(rate)
}

/// `{ kind = "ramp", from_rate_per_s = 0.0, rate_per_s = 300.0, over = "8s" }`.
fn ramp(a: &RawArrival, at: &str) -> V<Arrival> {
    let field = |f: &str| format!("{at}.{f}");
    let rate = a.rate_per_s.ok_or_else(|| {
        Invalid::at(at, "kind `ramp` needs rate_per_s (the rate at the end of the ramp) and over, e.g. rate_per_s = 300.0, over = \"8s\"")
    })?;
    let rate_per_s = rate_value(rate, &field("rate_per_s"))?;
    if rate_per_s == 0.0 {
        return Err(Invalid::at(&field("rate_per_s"), "is 0; the rate a ramp reaches must be positive"));
    }
    let from_rate_per_s = rate_value(a.from_rate_per_s.unwrap_or(0.0), &field("from_rate_per_s"))?;
    let over = a.over.ok_or_else(|| Invalid::at(at, "kind `ramp` needs over, the ramp's length, e.g. \"8s\""))?;
    let over = positive(over, &field("over"))?;
    Ok(Arrival::Ramp { from_rate_per_s, rate_per_s, over })
}

/// An arrival's `kind` as written (the validated arrival is `model::Arrival`, which carries
/// each kind's values); the names listed in messages come from this type, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ArrivalKindName {
    Herd,
    Poisson,
    Closed,
    Profile,
    Trace,
    Ramp,
}
