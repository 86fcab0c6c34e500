//! Retry policies: attempt limits, deadlines, timeouts and the jitter family of docs/MODEL.md.

use super::breaker::BreakerSpec;
use super::budget::BudgetSpec;
use crate::engine::Nanos;
use rand::{Rng, RngExt};

/// Where a downstream call's deadline comes from (`deadline_mode`, by snake_case name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlineMode {
    /// A fresh deadline (the policy's own `deadline`, if any) from the moment the call starts.
    PerCall,
    /// gRPC-style: the call also inherits the moment its caller stops waiting (the caller
    /// attempt's timeout, itself bounded by the caller's deadline, up to the event's deadline).
    Propagate,
}

/// How a server's Retry-After is used (`retry_after`, by snake_case name; `true` and `false`
/// are read as `at_least` and `ignore`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAfterMode {
    /// Ignore it: the backoff alone decides.
    Ignore,
    /// Wait at least the Retry-After (max of backoff and Retry-After).
    AtLeast,
    /// Wait exactly the Retry-After (gRPC pushback, Polly).
    Exact,
    /// AWS SDKs (2026): the Retry-After clamped to [backoff, backoff + 5 s] (`aws`).
    #[serde(rename = "aws")]
    AwsClamp,
}

/// What a caller does with the reply to an attempt it already timed out on (`late_reply`, by
/// snake_case name; docs/MODEL.md, "Late replies").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LateReply {
    /// Drop it: only the awaited attempt's reply counts (the default).
    Ignore,
    /// A success that arrives while the request is still going ends it (latency from the
    /// request's creation) and stops its pending retries: a client that keeps an earlier
    /// attempt's reply channel open and takes whichever reply comes first.
    Accept,
}

/// The extra wait AWS allows beyond the computed backoff when honouring `x-amz-retry-after`.
pub const AWS_RETRY_AFTER_SLACK: Nanos = 5_000_000_000;

/// How the delay before retry k is drawn: the one definition of the jitter strategies. A
/// policy's `jitter = "…"` and the fields only that strategy uses are read into it through serde
/// (`scenario::tagged`): each variant is a strategy (its snake_case name), its fields the policy
/// fields it owns, with their defaults; another strategy's field is refused. The backoff shared by
/// every strategy (`base`, `multiplier`, `cap`: also the throttle delay's) stays on
/// [`RetryPolicy`].
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Jitter {
    /// Immediate retry (no backoff at all).
    None,
    /// exp(k), no jitter.
    Exponential,
    /// U(0, exp(k)).
    Full,
    /// exp(k)/2 + U(0, exp(k)/2).
    Equal,
    /// AWS: s₀ = base; s_k = min(cap, U(base, 3·s_{k−1})).
    Decorrelated,
    /// Polly v8: see [`decorrelated_v2_step`].
    #[serde(rename = "decorrelated_v2")]
    DecorrelatedV2,
    /// Finagle's `Backoff.decorrelatedJittered(base, cap)`: s₁ = base; s_{k+1} = s_k +
    /// U[0, min(3·s_k, cap) − s_k), the lower bound the previous sleep, not `base` as in AWS's.
    DecorrelatedFinagle,
    /// exp(k) × U(1−r, 1+r).
    Proportional {
        /// Half-width of the multiplicative band, in (0, 1] (gRPC's 0.2 by default).
        #[serde(default = "grpc_ratio")]
        ratio: f64,
    },
    /// A fixed table of delays: retry k waits `delays[k-1]` (the last entry repeats).
    Schedule {
        /// Delays before retry 1, 2, … (the policy's `schedule`; validation refuses an empty one).
        #[serde(rename = "schedule", default, deserialize_with = "crate::engine::time::de_nanos_list")]
        delays: Vec<Nanos>,
    },
}

/// Serde default of `ratio`: gRPC's connection-backoff jitter, ±20%.
fn grpc_ratio() -> f64 {
    0.2
}

impl Jitter {
    /// The scenario-file name of this strategy.
    pub fn name(&self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Exponential => "exponential",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::DecorrelatedV2 => "decorrelated_v2",
            Jitter::DecorrelatedFinagle => "decorrelated_finagle",
            Jitter::Proportional { .. } => "proportional",
            Jitter::Schedule { .. } => "schedule",
        }
    }
}

/// Which failures a policy retries (imported configs list retryable codes); the rest end the
/// call at once (counted as dlq, reason attempts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryOn {
    /// 5xx, connection refused, breaker or throttle rejection.
    pub transient: bool,
    /// 429 / throttling.
    pub throttling: bool,
    /// The attempt timed out.
    pub timeout: bool,
}

impl RetryOn {
    /// Retry every failure (the default).
    pub const ALL: RetryOn = RetryOn { transient: true, throttling: true, timeout: true };

    /// Whether a failure of `kind` is retried.
    pub fn allows(&self, kind: super::budget::FailureKind) -> bool {
        use super::budget::FailureKind;
        match kind {
            FailureKind::Transient => self.transient,
            FailureKind::Throttling => self.throttling,
            FailureKind::Timeout => self.timeout,
        }
    }
}

/// A validated retry policy (see docs/MODEL.md, "Retry policy").
#[derive(Clone, Debug)]
pub struct RetryPolicy {
    /// Scenario name of the policy.
    pub name: String,
    /// Delay strategy.
    pub jitter: Jitter,
    /// Un-jittered first delay.
    pub base: Nanos,
    /// Growth factor per retry (≥ 1).
    pub multiplier: f64,
    /// Largest delay (≥ base).
    pub cap: Nanos,
    /// Attempts including the first try (≥ 1).
    pub attempts_max: u32,
    /// Total time budget from the event timestamp.
    pub deadline: Option<Nanos>,
    /// Per-attempt timeout.
    pub attempt_timeout: Option<Nanos>,
    /// Whether a downstream call inherits its caller's remaining deadline.
    pub deadline_mode: DeadlineMode,
    /// How a server's Retry-After is used.
    pub retry_after: RetryAfterMode,
    /// Base delay after a throttling (429) error, if different from `base` (AWS: 1 s).
    pub throttle_base: Option<Nanos>,
    /// Retry budget or client-side throttle, if any.
    pub budget: Option<BudgetSpec>,
    /// Circuit breaker, if any.
    pub breaker: Option<BreakerSpec>,
    /// Where the values come from (preset name), for reports.
    pub preset: Option<String>,
    /// Which failures are retried.
    pub retry_on: RetryOn,
    /// Hedged requests, if any.
    pub hedge: Option<super::hedge::HedgeSpec>,
    /// When the caller gives up on an attempt (timeout, deadline, lost hedge race), the work it
    /// started downstream is cancelled (off by default).
    pub cancel_on_timeout: bool,
    /// Finagle's automatic requeues: an attempt refused before any work (connection refused,
    /// shed by overload control) is sent again at once, paid by the policy's `finagle` budget,
    /// at most `ceil(0.2 × balance)` times per try, outside `max_attempts` (off by default).
    pub requeue: bool,
    /// Whether a success arriving after its attempt's timeout still ends the call.
    pub late_reply: LateReply,
}

/// Per-call state some strategies carry between retries: one word, since a call's policy has
/// one strategy (8 bytes of every live call instead of 16).
#[derive(Clone, Copy, Debug, Default)]
pub struct JitterState {
    /// Decorrelated: the previous sleep (0 = none yet, use base). Decorrelated v2: the bits of
    /// the previous `next` value (`f64::to_bits`, exact; 0 is 0.0).
    prev: u64,
}

impl RetryPolicy {
    /// A policy with only backoff settings: unbounded attempts, no deadline or timeout, Retry-After
    /// ignored, no budget or breaker (the budget calculator's delays).
    pub fn backoff(name: &str, jitter: Jitter, base: Nanos, multiplier: f64, cap: Nanos) -> RetryPolicy {
        RetryPolicy {
            name: name.to_string(),
            jitter,
            base,
            multiplier,
            cap,
            attempts_max: u32::MAX,
            deadline: None,
            attempt_timeout: None,
            deadline_mode: DeadlineMode::PerCall,
            retry_after: RetryAfterMode::Ignore,
            throttle_base: None,
            budget: None,
            breaker: None,
            preset: None,
            retry_on: RetryOn::ALL,
            hedge: None,
            cancel_on_timeout: false,
            requeue: false,
            late_reply: LateReply::Ignore,
        }
    }

    /// exp(k) = min(cap, base × multiplier^(k−1)); saturates, never overflows (k ≥ 1).
    pub fn exp_delay(&self, retry: u32) -> Nanos {
        self.exp_delay_from(self.base, retry)
    }

    /// exp(k) from another base (throttling errors use `throttle_base`).
    pub fn exp_delay_from(&self, base: Nanos, retry: u32) -> Nanos {
        assert!(retry >= 1, "retries are numbered from 1");
        // Doubling (the common multiplier) in integers: the same value as the float product
        // below whenever `base` and `cap` are exact in an f64 (below 2^53 ns, 104 days), since
        // scaling by a power of two is exact; `powi` was most of a retry's delay arithmetic.
        if self.multiplier == 2.0 && (1..1 << 53).contains(&base) && self.cap < 1 << 53 {
            // `base << shift` fits a u64 exactly when the shift is below base's leading zeros;
            // past that it is beyond the cap (below 2^53) anyway.
            let shift = retry - 1;
            return if shift < base.leading_zeros() { (base << shift).min(self.cap) } else { self.cap };
        }
        let factor = self.multiplier.powi((retry - 1).min(i32::MAX as u32) as i32);
        let raw = base as f64 * factor;
        if !raw.is_finite() || raw >= self.cap as f64 {
            self.cap
        } else {
            raw as Nanos
        }
    }

    /// The delay before a retry after a throttling error: full jitter from `throttle_base`
    /// (AWS) when one is set, else the ordinary delay.
    pub fn delay_after_throttle<R: Rng>(&self, retry: u32, state: &mut JitterState, rng: &mut R) -> Nanos {
        match self.throttle_base {
            Some(base) => full_from_draw(self.exp_delay_from(base, retry), rng.random()),
            None => self.delay_before_retry(retry, state, rng),
        }
    }

    /// The one retry decision after a failed attempt, shared by the simulator and the emulator:
    /// `None` when the policy gives up (`attempts_made` used up all attempts, or it does not retry
    /// this kind of failure), else the wait before the next attempt: the backoff (a throttling
    /// error's when it is one) combined with the server's Retry-After.
    #[inline]
    pub fn wait_after_failure<R: Rng>(
        &self,
        attempts_made: u32,
        failure: super::budget::FailureKind,
        retry_after: Option<Nanos>,
        state: &mut JitterState,
        rng: &mut R,
    ) -> Option<Nanos> {
        if attempts_made >= self.attempts_max || !self.retry_on.allows(failure) {
            return None;
        }
        let backoff = if failure == super::budget::FailureKind::Throttling {
            self.delay_after_throttle(attempts_made, state, rng)
        } else {
            self.delay_before_retry(attempts_made, state, rng)
        };
        Some(self.apply_retry_after(backoff, retry_after))
    }

    /// Combines the backoff with a server's Retry-After according to [`RetryAfterMode`].
    pub fn apply_retry_after(&self, backoff: Nanos, retry_after: Option<Nanos>) -> Nanos {
        let Some(after) = retry_after else { return backoff };
        match self.retry_after {
            RetryAfterMode::Ignore => backoff,
            RetryAfterMode::AtLeast => backoff.max(after),
            RetryAfterMode::Exact => after,
            RetryAfterMode::AwsClamp => after.max(backoff).min(backoff.saturating_add(AWS_RETRY_AFTER_SLACK)),
        }
    }

    /// The delay before retry `retry` (k ≥ 1), advancing `state` for the stateful strategies.
    pub fn delay_before_retry<R: Rng>(&self, retry: u32, state: &mut JitterState, rng: &mut R) -> Nanos {
        match &self.jitter {
            Jitter::None => 0,
            Jitter::Exponential => self.exp_delay(retry),
            Jitter::Full => full_from_draw(self.exp_delay(retry), rng.random()),
            Jitter::Equal => {
                let e = self.exp_delay(retry);
                e / 2 + uniform_ns(rng, 0, e - e / 2)
            }
            Jitter::Decorrelated => {
                let prev = if state.prev == 0 { self.base } else { state.prev };
                let upper = prev.saturating_mul(3).max(self.base);
                let sleep = uniform_ns(rng, self.base, upper).min(self.cap);
                state.prev = sleep;
                sleep
            }
            Jitter::DecorrelatedFinagle => {
                let sleep = finagle_decorrelated_step(state.prev, self.base, self.cap, rng);
                state.prev = sleep;
                sleep
            }
            Jitter::DecorrelatedV2 => {
                let mut v2_prev = f64::from_bits(state.prev);
                let delay = decorrelated_v2_step(retry, rng.random::<f64>(), &mut v2_prev, self.base);
                state.prev = v2_prev.to_bits();
                delay.min(self.cap as f64) as Nanos
            }
            Jitter::Proportional { ratio } => {
                let e = self.exp_delay(retry) as f64;
                let u: f64 = rng.random();
                let scaled = e * (1.0 - ratio + 2.0 * ratio * u);
                if scaled >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    scaled as Nanos
                }
            }
            Jitter::Schedule { delays } => scheduled_delay(delays, retry),
        }
    }

    /// Worst-case time from the event timestamp to the last attempt's end: un-jittered delays
    /// (the upper end of every strategy's range) plus one attempt timeout per attempt, capped by
    /// the deadline. `None` when attempts are unbounded in time (no timeout and no deadline).
    pub fn horizon_worst_case(&self) -> Option<Nanos> {
        let timeout = self.attempt_timeout;
        let mut total: Nanos = 0;
        for retry in 1..self.attempts_max {
            total = total.saturating_add(self.delay_upper_bound(retry));
        }
        let attempts = u64::from(self.attempts_max);
        let with_timeouts = timeout.map(|t| total.saturating_add(t.saturating_mul(attempts)));
        match (with_timeouts, self.deadline) {
            (Some(h), Some(d)) => Some(h.min(d)),
            (Some(h), None) => Some(h),
            (None, Some(d)) => Some(d),
            (None, None) => None,
        }
    }

    /// With both a deadline and an attempt timeout: the most attempts whose worst case (delays at
    /// their upper bounds plus one timeout each) fits the deadline, if `attempts_max` does not fit
    /// (the guide's "retry horizon ≤ window": later attempts would be cut by the deadline).
    pub fn attempts_fitting_deadline(&self) -> Option<u32> {
        let (deadline, timeout) = (self.deadline?, self.attempt_timeout?);
        let mut total = timeout;
        for attempts in 1..self.attempts_max {
            total = total.saturating_add(self.delay_upper_bound(attempts)).saturating_add(timeout);
            if total > deadline {
                return Some(attempts);
            }
        }
        None
    }

    /// The largest delay the strategy can draw before retry `retry`.
    pub fn delay_upper_bound(&self, retry: u32) -> Nanos {
        match &self.jitter {
            Jitter::None => 0,
            Jitter::Exponential | Jitter::Full | Jitter::Equal => self.exp_delay(retry),
            Jitter::Decorrelated | Jitter::DecorrelatedV2 => self.cap,
            // base, then below 3× the previous sleep: base · 3^(k−1), within the cap.
            Jitter::DecorrelatedFinagle => {
                (1..retry.min(64)).fold(self.base.min(self.cap), |b, _| b.saturating_mul(3).min(self.cap))
            }
            Jitter::Proportional { ratio } => {
                let upper = self.exp_delay(retry) as f64 * (1.0 + ratio);
                upper.min(u64::MAX as f64) as Nanos
            }
            Jitter::Schedule { delays } => scheduled_delay(delays, retry),
        }
    }
}

/// Retry `retry` of a fixed schedule waits its entry; past the end, the last entry repeats.
fn scheduled_delay(delays: &[Nanos], retry: u32) -> Nanos {
    let i = (retry as usize - 1).min(delays.len().saturating_sub(1));
    delays.get(i).copied().unwrap_or(0)
}

/// Full jitter from a uniform draw `u` in [0, 1]: ⌊u · exp⌋ (AWS writes it `b × r^i` with b the
/// draw; tests force the draw to 1 to get the un-jittered value).
pub fn full_from_draw(exp: Nanos, u: f64) -> Nanos {
    let u = u.clamp(0.0, 1.0);
    // Below 2^62 the product stays below 2^63, where a signed conversion rounds and truncates
    // exactly as the unsigned one, in one instruction each way (the unsigned ones branch).
    if exp < 1 << 62 {
        return (u * exp as i64 as f64) as i64 as Nanos;
    }
    full_from_draw_wide(exp, u)
}

/// [`full_from_draw`] from 2^62 ns (146 years) on, kept out of line: evaluated beside the
/// common case, its unsigned conversions cost every draw their branches.
#[cold]
#[inline(never)]
fn full_from_draw_wide(exp: Nanos, u: f64) -> Nanos {
    (u * exp as f64) as Nanos
}

/// Uniform integer nanoseconds in [lo, hi] (hi ≥ lo), via one f64 draw: lo + ⌊u·(hi−lo)⌋.
pub fn uniform_ns<R: Rng>(rng: &mut R, lo: Nanos, hi: Nanos) -> Nanos {
    assert!(hi >= lo, "uniform_ns: empty range [{lo}, {hi}]");
    let u: f64 = rng.random();
    lo + (u * (hi - lo) as f64) as Nanos
}

/// One step of Finagle's `Backoff.decorrelatedJittered(base, cap)` (finagle-core
/// `com/twitter/finagle/Backoff.scala`, `DecorrelatedJittered.next`): the first backoff is `base`
/// itself (`prev` 0: none yet); after a backoff `prev` the next is `prev + U[0, upper − prev)`
/// with `upper = cap` once `prev ≥ cap / 3`, else `3 · prev` — so it never shrinks, and stays at
/// `cap` once there (Finagle's `Const(maximum)`).
pub fn finagle_decorrelated_step<R: Rng>(prev: Nanos, base: Nanos, cap: Nanos, rng: &mut R) -> Nanos {
    if prev == 0 {
        return base.min(cap);
    }
    let upper = if prev >= cap / 3 { cap } else { prev * 3 };
    if upper <= prev {
        return prev;
    }
    uniform_ns(rng, prev, upper)
}

/// One step of Polly v8's decorrelated jitter v2 (Tim Skillman's "AWS-style" refinement).
///
/// t = (k−1) + u; next = 2^t · tanh(√(4t)); delay = (next − prev) · base / 1.4; prev = next.
/// Returned in nanoseconds as f64 (before the cap). `u` is a uniform draw in [0, 1).
pub fn decorrelated_v2_step(retry: u32, u: f64, prev: &mut f64, base: Nanos) -> f64 {
    const P_FACTOR: f64 = 4.0;
    const RP_SCALING_FACTOR: f64 = 1.0 / 1.4;
    let t = f64::from(retry - 1) + u;
    let next = t.exp2() * (P_FACTOR * t).sqrt().tanh();
    let delay = (next - *prev) * RP_SCALING_FACTOR * base as f64;
    *prev = next;
    if delay.is_finite() {
        delay.max(0.0)
    } else {
        f64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{NS_PER_MS, NS_PER_S};

    fn policy(jitter: Jitter) -> RetryPolicy {
        RetryPolicy { attempts_max: 10, ..RetryPolicy::backoff("p", jitter, 100 * NS_PER_MS, 2.0, 10 * NS_PER_S) }
    }

    #[test]
    fn exp_delay_doubles_then_caps_and_never_overflows() {
        let p = policy(Jitter::Exponential);
        let ms: Vec<u64> = (1..=9).map(|k| p.exp_delay(k) / NS_PER_MS).collect();
        assert_eq!(ms, vec![100, 200, 400, 800, 1600, 3200, 6400, 10_000, 10_000]);
        assert_eq!(p.exp_delay(64), p.cap);
        assert_eq!(p.exp_delay(u32::MAX), p.cap);
    }

    /// exp(k) in floating point, as the general path computes it for any multiplier.
    fn exp_delay_by_float(p: &RetryPolicy, base: Nanos, retry: u32) -> Nanos {
        let raw = base as f64 * p.multiplier.powi((retry - 1).min(i32::MAX as u32) as i32);
        if !raw.is_finite() || raw >= p.cap as f64 {
            p.cap
        } else {
            raw as Nanos
        }
    }

    proptest::proptest! {
        /// The integer doubling path gives exactly what the float product gives (results must
        /// not change with the arithmetic), on and around the cap and at huge retry numbers.
        #[test]
        fn integer_doubling_equals_the_float_product(
            base in 1u64..(1 << 53),
            cap in 0u64..(1 << 53),
            retry in proptest::prop_oneof![1u32..70, 60u32..=u32::MAX],
        ) {
            let p = RetryPolicy::backoff("p", Jitter::Exponential, base, 2.0, cap);
            proptest::prop_assert_eq!(p.exp_delay_from(base, retry), exp_delay_by_float(&p, base, retry));
        }
    }

    #[test]
    fn integer_doubling_matches_the_float_product_at_the_cap_boundary() {
        for (base, cap) in [(1, 1), (3, 12), (3, 11), (3, 13), ((1 << 53) - 1, (1 << 53) - 1), (7, 0)] {
            let p = RetryPolicy::backoff("p", Jitter::Exponential, base, 2.0, cap);
            for retry in [1, 2, 3, 4, 52, 53, 54, 63, 64, 65, u32::MAX] {
                assert_eq!(p.exp_delay_from(base, retry), exp_delay_by_float(&p, base, retry), "{base} {cap} {retry}");
            }
        }
    }

    #[test]
    fn schedule_repeats_its_last_entry() {
        let p = policy(Jitter::Schedule { delays: vec![0, 5, 300] });
        let mut s = JitterState::default();
        let mut rng = crate::engine::stream(1, 0, crate::engine::StreamKind::Aux, 0);
        let got: Vec<u64> = (1..=5).map(|k| p.delay_before_retry(k, &mut s, &mut rng)).collect();
        assert_eq!(got, vec![0, 5, 300, 300, 300]);
    }

    #[test]
    fn worst_case_horizon_adds_timeouts() {
        let mut p = policy(Jitter::Full);
        p.attempts_max = 3;
        p.attempt_timeout = Some(NS_PER_S);
        // 100 ms + 200 ms of delays + 3 × 1 s of timeouts.
        assert_eq!(p.horizon_worst_case(), Some(3_300 * NS_PER_MS));
        p.deadline = Some(2 * NS_PER_S);
        assert_eq!(p.horizon_worst_case(), Some(2 * NS_PER_S));
    }
}
