//! Invariant warnings (docs/MODEL.md, "Invariant warnings"): retry horizon ≤ provider window <
//! idempotency TTL (end to end at inner stores), inner horizons strictly smaller than their
//! caller's and shorter than its attempt timeout, and attempts that can never end.

use super::checks::show;
use crate::engine::Nanos;
use crate::model::{FaultKind, RetryPolicy, SimSpec};

/// The policies that call hop `h`: tenants' policies for hop 0 (the entry point), the policies
/// of the calls into `h` otherwise (in a chain, the previous hop's downstream policy).
fn callers(spec: &SimSpec, h: usize) -> Vec<&RetryPolicy> {
    let mut indices: Vec<usize> = if h == 0 {
        spec.tenants.iter().map(|t| t.policy).collect()
    } else {
        edges_into(spec, h).map(|(_, p)| p).collect()
    };
    indices.sort_unstable();
    indices.dedup();
    indices.into_iter().map(|p| &spec.policies[p]).collect()
}

/// The longest time over which deliveries of one event can reach hop `h`: the clients' worst-case
/// horizon plus every inner caller's down to `h` (an outer retry re-runs the inner calls with the
/// same key). `None` when some caller's attempts are unbounded in time.
fn end_to_end_horizon(spec: &SimSpec, h: usize) -> Option<Nanos> {
    let longest = callers(spec, h).iter().map(|p| p.horizon_worst_case()).collect::<Option<Vec<_>>>()?;
    let own = longest.into_iter().max().unwrap_or(0);
    // The longest path of callers above `h` (a chain: hops 0…h−1; a graph is acyclic).
    let mut above: Nanos = 0;
    let mut callers_seen: Vec<usize> = edges_into(spec, h).map(|(g, _)| g).collect();
    callers_seen.sort_unstable();
    callers_seen.dedup();
    for g in callers_seen {
        above = above.max(end_to_end_horizon(spec, g)?);
    }
    Some(above.saturating_add(own))
}

/// (calling hop, policy) of every call into hop `h`.
fn edges_into(spec: &SimSpec, h: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    spec.hops
        .iter()
        .enumerate()
        .flat_map(move |(g, hop)| hop.calls.iter().filter(move |e| e.hop == h).map(move |e| (g, e.policy)))
}

/// Warnings for `spec`, in a stable order.
pub fn warnings(spec: &SimSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (h, hop) in spec.hops.iter().enumerate() {
        if let Some(store) = hop.idempotency.as_ref().filter(|_| hop.effect) {
            store_warnings(spec, h, store.ttl, &mut out);
        }
        for policy in callers(spec, h) {
            if let Some(fit) = policy.attempts_fitting_deadline() {
                out.push(format!(
                    "policy `{}` allows {} attempts but only {fit} fit its {} deadline in the worst case (delays at their upper bounds + attempt timeouts): the deadline, not max_attempts, ends the retries (retry horizon ≤ window); set max_attempts ≤ {fit}",
                    policy.name, policy.attempts_max, show(policy.deadline.expect("checked"))
                ));
            }
            if policy.attempt_timeout.is_none() && policy.deadline.is_none() {
                let hangs = spec
                    .faults
                    .iter()
                    .any(|f| f.hop == h && matches!(f.kind, FaultKind::Hang | FaultKind::LostReply { .. }));
                if hangs {
                    out.push(format!(
                        "hop `{}` has a hang fault but policy `{}` has neither attempt_timeout nor deadline: those attempts never end (they stay in_flight)",
                        hop.name, policy.name
                    ));
                }
            }
        }
        let calling: Vec<usize> = edges_into(spec, h).map(|(g, _)| g).collect();
        for g in calling {
            inner_warnings(spec, g, h, &mut out);
        }
    }
    out
}

/// The guide's invariant at a store: retry horizon ≤ window (the caller's deadline) < TTL, the
/// horizon taken end to end because outer retries replay the same key to an inner store.
fn store_warnings(spec: &SimSpec, h: usize, ttl: Nanos, out: &mut Vec<String>) {
    let hop = &spec.hops[h].name;
    for policy in callers(spec, h) {
        if let Some(window) = policy.deadline.filter(|&w| ttl <= w) {
            out.push(format!(
                "hop `{hop}` keeps idempotency keys for {} but policy `{}` delivers for a window of {}: the TTL must be strictly longer than the window (retry horizon ≤ window < TTL); set ttl = \"window+6h\"",
                show(ttl), policy.name, show(window)
            ));
        }
    }
    match end_to_end_horizon(spec, h) {
        Some(horizon) if horizon >= ttl => out.push(format!(
            "deliveries of one event can reach hop `{hop}` for up to {} ({}un-jittered delays + attempt timeouts) but it keeps idempotency keys for {}: late retries will be processed twice; set ttl > {}",
            show(horizon),
            if h > 0 { "the callers' horizons end to end: " } else { "" },
            show(ttl),
            show(horizon)
        )),
        Some(_) => {}
        None => out.push(format!(
            "hop `{hop}` keeps idempotency keys for {} but a caller retries without attempt_timeout or deadline, so deliveries can come after any TTL; bound its policy",
            show(ttl)
        )),
    }
}

/// Hop `h` against its caller `g`: strictly smaller horizons, and the caller waiting for each
/// attempt at least as long as the inner hop may retry.
fn inner_warnings(spec: &SimSpec, g: usize, h: usize, out: &mut Vec<String>) {
    let (caller, hop) = (&spec.hops[g].name, &spec.hops[h].name);
    for outer in callers(spec, g) {
        for inner in spec.hops[g].calls.iter().filter(|e| e.hop == h).map(|e| &spec.policies[e.policy]) {
            let Some(i) = inner.horizon_worst_case() else { continue };
            if let Some(o) = outer.horizon_worst_case().filter(|&o| i >= o) {
                out.push(format!(
                    "hop `{caller}` retries hop `{hop}` for up to {} with policy `{}`, not strictly less than its caller's horizon {} (policy `{}`): give inner hops strictly smaller windows",
                    show(i), inner.name, show(o), outer.name
                ));
            }
            if let Some(t) = outer.attempt_timeout.filter(|&t| t < i) {
                out.push(format!(
                    "policy `{}` gives each attempt {} but hop `{caller}` may retry hop `{hop}` for up to {} (policy `{}`): the caller gives up and retries while the inner call is still retrying; make the inner horizon shorter than the caller's attempt timeout (or propagate the deadline: deadline_mode = \"propagate\")",
                    outer.name, show(t), show(i), inner.name
                ));
            }
        }
    }
}
