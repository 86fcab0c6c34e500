//! Invariant warnings: retry horizon ≤ provider window ≤ idempotency TTL, inner horizons strictly
//! smaller than their caller's, and attempts that can never end.

use super::checks::show;
use crate::model::{FaultKind, RetryPolicy, SimSpec};

/// The policies that call hop `h`: tenants' policies for hop 0, the previous hop's downstream
/// policy otherwise.
fn callers(spec: &SimSpec, h: usize) -> Vec<&RetryPolicy> {
    let mut indices: Vec<usize> = if h == 0 {
        spec.tenants.iter().map(|t| t.policy).collect()
    } else {
        spec.hops[h - 1].downstream_policy.into_iter().collect()
    };
    indices.sort_unstable();
    indices.dedup();
    indices.into_iter().map(|p| &spec.policies[p]).collect()
}

/// Warnings for `spec`, in a stable order.
pub fn warnings(spec: &SimSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (h, hop) in spec.hops.iter().enumerate() {
        for policy in callers(spec, h) {
            let horizon = policy.horizon_worst_case();
            if let (Some(store), Some(horizon)) = (&hop.idempotency, horizon) {
                if horizon > store.ttl {
                    out.push(format!(
                        "policy `{}` can retry for up to {} (un-jittered delays + attempt timeouts) but hop `{}` keeps idempotency keys for {}: late retries will be processed twice; set ttl ≥ {} (e.g. ttl = \"window+6h\")",
                        policy.name, show(horizon), hop.name, show(store.ttl), show(horizon)
                    ));
                }
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
        if h == 0 {
            continue;
        }
        let inner = callers(spec, h);
        for outer in callers(spec, h - 1) {
            for inner in &inner {
                if let (Some(o), Some(i)) = (outer.horizon_worst_case(), inner.horizon_worst_case()) {
                    if i >= o {
                        out.push(format!(
                            "hop `{}` retries hop `{}` for up to {} with policy `{}`, not strictly less than its caller's horizon {} (policy `{}`): give inner hops strictly smaller windows",
                            spec.hops[h - 1].name, hop.name, show(i), inner.name, show(o), outer.name
                        ));
                    }
                }
            }
        }
    }
    out
}
