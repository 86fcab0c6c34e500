//! Warnings for legal scenarios that are probably not what the author meant: a fault or
//! arrivals that can never matter, a deadline no retry fits in, nothing that can succeed.
//! (The model's invariant warnings live in `invariants.rs`.)

use super::checks::show;
use crate::model::{Arrival, FaultKind, SimSpec};

/// The warnings of `spec`, in a stable order.
pub fn warnings(spec: &SimSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (i, f) in spec.faults.iter().enumerate() {
        if f.from >= spec.drain_limit {
            out.push(format!(
                "a `{}` fault on hop `{}` starts at {}, after the run ends (drain limit {}): it has no effect",
                f.kind.name(),
                spec.hops[f.hop].name,
                show(f.from),
                show(spec.drain_limit)
            ));
        }
        // Faults of one kind never overlap (refused); different kinds on one hop may, and then
        // the hop is, say, down and slow at once: say so.
        if let Some(o) = spec.faults[..i].iter().find(|o| o.hop == f.hop && o.from < f.to && f.from < o.to) {
            out.push(format!(
                "faults `{}` [{}, {}) and `{}` [{}, {}) overlap on hop `{}`: both apply at once",
                o.kind.name(),
                show(o.from),
                show(o.to),
                f.kind.name(),
                show(f.from),
                show(f.to),
                spec.hops[f.hop].name
            ));
        }
    }
    for t in &spec.tenants {
        let start = match t.arrival {
            Arrival::Herd { start, .. } | Arrival::Closed { start, .. } => start,
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Trace(_) | Arrival::Ramp { .. } => 0,
        };
        if start >= spec.horizon {
            out.push(format!(
                "tenant `{}` starts sending at {}, at or after the horizon ({}): it sends nothing",
                t.name,
                show(start),
                show(spec.horizon)
            ));
        }
        if t.invalid_fraction >= 1.0 {
            out.push(format!("tenant `{}` has invalid_fraction = 1: every request it sends is rejected", t.name));
        }
        let policy = &spec.policies[t.policy];
        if let Some(deadline) = policy.deadline {
            if policy.attempts_max > 1 && policy.base >= deadline {
                out.push(format!(
                    "policy `{}` has a deadline of {} but its first backoff is {}: no retry fits before the deadline",
                    policy.name,
                    show(deadline),
                    show(policy.base)
                ));
            }
        }
    }
    // Calm (recovery) must hold longer than an attempt can wait: a window shorter than the
    // clients' attempt timeout can fall in the lull while every attempt waits out its timeout,
    // with no retry sent, and pass for calm.
    // Only where recovery can be judged: a trigger that ends before the horizon.
    let triggered = spec.trigger_end().is_some_and(|end| end < spec.horizon);
    let longest = spec
        .tenants
        .iter()
        .filter_map(|t| spec.policies[t.policy].attempt_timeout.map(|d| (d, &spec.policies[t.policy].name)))
        .max_by_key(|(d, _)| *d);
    if let Some((timeout, policy)) = longest.filter(|(d, _)| triggered && spec.recovery_hold < *d) {
        out.push(format!(
            "recovery_hold = \"{}\" is shorter than policy `{policy}`'s attempt_timeout of {} (the clients' calls to hop `{}`): a lull while attempts wait out their timeout, with no retry sent, would pass for calm; set recovery_hold = \"{}\" or longer",
            show(spec.recovery_hold),
            show(timeout),
            spec.hops[0].name,
            show(timeout)
        ));
    }
    let down_throughout = |h: usize| {
        spec.faults.iter().any(|f| {
            f.hop == h
                && f.from == 0
                && f.to >= spec.drain_limit
                && matches!(f.kind, FaultKind::Outage { .. } | FaultKind::Hang | FaultKind::ErrorRate { p: 1.0 })
        })
    };
    let all_invalid = spec.tenants.iter().all(|t| t.invalid_fraction + t.poison_fraction >= 1.0);
    // Only a hop every request must pass through (required calls made with probability 1 from
    // the entry point: every hop of a chain) stops all successes when it is down.
    let must_pass = super::graph::always_called(spec);
    if all_invalid || (0..spec.hops.len()).any(|h| must_pass[h] && down_throughout(h)) {
        out.push("nothing can succeed in this scenario (a hop fails for the whole run, or every request is invalid or poison)".to_string());
    }
    out
}
