//! The client mode whose backoff is the `backon` crate's (a widely used Rust retry library),
//! with its own jitter and random numbers: the simulator's model of that library is checked
//! against the library itself.
//!
//! backon's `ExponentialBuilder` with jitter waits d_k·(1 + U), U uniform in [0, 1), where
//! d_1 = min_delay and d_k = min(d_{k−1}·factor, max_delay) — d_k plus a uniform draw in
//! [0, d_k). The simulator's `equal` jitter waits e/2 + U(0, e/2) with e = min(cap,
//! base·multiplier^(k−1)): the same law when base = 2·min_delay and cap = 2·max_delay. So a
//! scenario policy with `jitter = "equal"` is run through backon configured with min_delay =
//! base/2, max_delay = cap/2, factor = multiplier and max_times = max_attempts − 1 (backon counts
//! retries, the scenario attempts).

use super::EmulateError;
use crate::engine::Nanos;
use crate::model::policy::{Jitter, RetryAfterMode, RetryOn, RetryPolicy};
use backon::BackoffBuilder;

/// Refuses policies backon cannot stand for, naming the field and the fix. `retry_after_sent`:
/// whether the scenario's servers send a Retry-After (a `throttle` fault), which the policy
/// would read and backon does not.
pub fn check(policy: &RetryPolicy, retry_after_sent: bool) -> Result<(), EmulateError> {
    let refuse = |what: &str| {
        Err(EmulateError::Refused(format!(
            "emulate --client backon: policy `{}` {what}; backon's exponential backoff with jitter is the simulator's `equal` jitter with base = 2 × min_delay and cap = 2 × max_delay (docs/MODEL.md, \"Emulation on real sockets\")",
            policy.name
        )))
    };
    if policy.jitter != Jitter::Equal {
        return refuse(&format!("has jitter = \"{}\": set jitter = \"equal\"", policy.jitter.name()));
    }
    if retry_after_sent && (policy.retry_after != RetryAfterMode::Ignore || policy.throttle_base.is_some()) {
        return refuse(
            "reads the Retry-After of the scenario's `throttle` fault (or has a throttle base), which backon does not: set retry_after = \"ignore\"",
        );
    }
    if policy.retry_on != RetryOn::ALL {
        return refuse("retries only some failures; backon's mode retries every failure");
    }
    if policy.attempts_max == u32::MAX {
        return refuse("has no attempt limit; give max_attempts");
    }
    Ok(())
}

/// backon's delays for one logical request, in nanoseconds (one per retry, `max_attempts − 1`
/// of them), jittered by backon from `seed`.
pub fn delays(policy: &RetryPolicy, seed: u64) -> impl Iterator<Item = Nanos> {
    let half = |ns: Nanos| std::time::Duration::from_nanos(ns / 2);
    backon::ExponentialBuilder::new()
        .with_min_delay(half(policy.base))
        .with_max_delay(half(policy.cap))
        .with_factor(policy.multiplier as f32)
        .with_max_times(policy.attempts_max.saturating_sub(1) as usize)
        .with_jitter()
        .with_jitter_seed(seed)
        .build()
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as Nanos)
}
