//! Hedged requests and cancellation on the caller's side: what a policy asks for.
//! The behaviour lives in `sim/hedge_state.rs` (the decisions), `sim/hedge.rs` and `sim/cancel.rs`.

use crate::engine::Nanos;
use crate::model::budget::GrpcTokens;

/// When a hedge is sent after an attempt that has not been answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HedgeAfter {
    /// A fixed delay after the attempt was sent.
    Fixed(Nanos),
    /// The q-th quantile (in (0, 1)) of the attempt latencies this policy has seen so far at
    /// this hop (see docs/MODEL.md, "Hedged requests").
    Quantile(f64),
}

/// `hedge = { after = "50ms" | "p95", max_share = 0.1, throttle = { .. } }`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgeSpec {
    /// When the hedge is sent.
    pub after: HedgeAfter,
    /// At most this share of attempts is hedged (a token bucket: each attempt sent earns
    /// `max_share`, a hedge costs one; 1 = no cap).
    pub max_share: f64,
    /// gRPC's retry throttling applied to hedges (gRFC A6): given as `hedge.throttle`, or the
    /// policy's own `grpc_throttle` budget.
    pub throttle: Option<HedgeThrottle>,
}

/// gRPC's retry throttling applied to hedges (gRFC A6, "Throttling Retry Attempts and Hedged
/// RPCs"): a bucket full at the start that loses one token per failed or timed-out attempt and
/// gains `token_ratio` per success (at most `max_tokens`); while it holds no more than half of
/// `max_tokens`, no hedge is sent. (The arithmetic is the budget kind `grpc_throttle`'s:
/// [`GrpcTokens`].)
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgeThrottle {
    /// The bucket's size and refill.
    pub tokens: GrpcTokens,
    /// The bucket is the policy's own `grpc_throttle` retry budget (A6 keeps one bucket per
    /// server name for retries and hedges); otherwise one bucket per (policy, called hop).
    pub shared: bool,
    /// `throttle.charge_unanswered = true` (not A6; off by default): an attempt still unanswered
    /// at its hedge delay also takes a token, whether or not a hedge is then sent.
    pub charge_unanswered: bool,
}

/// Latency samples a quantile hedge waits for before its first hedge.
pub const HEDGE_WARMUP_SAMPLES: u64 = 100;
/// The quantile is recomputed every this many samples.
pub const HEDGE_QUANTILE_REFRESH: u64 = 100;
/// Most hedge tokens a (policy, hop) pair can save up.
pub const HEDGE_TOKENS_MAX: f64 = 10.0;
