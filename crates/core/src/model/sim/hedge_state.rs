//! The hedging decisions of one (policy, called hop), as a state machine: the cap's tokens, the
//! gRFC A6 throttle's arithmetic, the latency quantile and the hedge delay it gives, and how a
//! reply settles the race between an attempt's copies. `sim/hedge.rs` applies them (events,
//! copies, counters); the rules are in its module documentation and docs/MODEL.md, "Hedged
//! requests".

use super::Reply;
use crate::engine::Nanos;
use crate::metrics::new_latency_histogram;
use crate::model::budget::GrpcTokens;
use crate::model::hedge::{HEDGE_QUANTILE_REFRESH, HEDGE_TOKENS_MAX, HEDGE_WARMUP_SAMPLES};
use crate::model::tokens::TokenBucket;
use crate::model::{HedgeAfter, HedgeSpec, HedgeThrottle};
use hdrhistogram::Histogram;
use std::collections::HashMap;

/// Hedge state of one (policy, called hop).
#[derive(Clone)]
pub(super) struct HedgeState {
    tokens: f64,
    /// `throttle` of its own (not the budget's): the gRFC A6 bucket's tokens (`None` until first
    /// used: full).
    throttle_tokens: Option<f64>,
    latency_us: Histogram<u64>,
    samples: u64,
    /// The quantile delay in force (None until the warm-up is over).
    quantile_delay: Option<Nanos>,
}

/// Per (policy, hop): hedge tokens and latency quantiles.
#[derive(Clone, Default)]
pub(super) struct Hedging {
    state: HashMap<(u16, u16), HedgeState>,
}

impl Hedging {
    /// The state of (`policy`, `hop`), created at its first use.
    pub(super) fn get(&mut self, policy: u16, hop: u16) -> &mut HedgeState {
        self.state.entry((policy, hop)).or_insert_with(HedgeState::new)
    }
}

/// Whether a hedge whose delay passed goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HedgeGo {
    /// Send the copy (from the cap: a token was taken; from the throttle: ask the cap).
    Send,
    /// The throttle holds half or less of its bucket: no copy, and the cap is not asked.
    Throttled,
    /// No whole cap token left: no copy.
    Capped,
}

/// How a reply reaching a waiting caller settles the race between the attempt's copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Race {
    /// No other copy is awaited: the call sees this outcome.
    Last,
    /// A failed copy while another is still awaited: ignored, the call keeps waiting.
    KeepWaiting,
    /// A success while another copy is awaited: the call sees it and the others lose the race.
    Won,
}

impl Race {
    /// The race after a reply (`ok`: a success) on one copy, `other_awaited` when another copy
    /// is still awaited.
    #[inline]
    pub(super) fn settle(other_awaited: bool, ok: bool) -> Race {
        match (other_awaited, ok) {
            (false, _) => Race::Last,
            (true, false) => Race::KeepWaiting,
            (true, true) => Race::Won,
        }
    }

    /// The call sees this copy's outcome (so a throttle shared with the retry budget is fed by
    /// the budget's own hooks, not by hedging).
    #[inline]
    pub(super) fn caller_sees(self) -> bool {
        match self {
            Race::Last | Race::Won => true,
            Race::KeepWaiting => false,
        }
    }
}

impl HedgeState {
    fn new() -> HedgeState {
        HedgeState {
            tokens: 0.0,
            throttle_tokens: None,
            latency_us: new_latency_histogram(),
            samples: 0,
            quantile_delay: None,
        }
    }

    /// An attempt that is not a hedge was sent at `now`: it earns `max_share` cap tokens (at
    /// most [`HEDGE_TOKENS_MAX`] saved). Returns the instant its hedge fires, if one is armed:
    /// the fixed delay or the quantile in force (none during the warm-up), and only before the
    /// attempt's timeout at `timeout_at`.
    #[inline]
    pub(super) fn arm(&mut self, spec: &HedgeSpec, now: Nanos, timeout_at: Nanos) -> Option<Nanos> {
        TokenBucket::new(HEDGE_TOKENS_MAX).deposit(&mut self.tokens, spec.max_share);
        let delay = match spec.after {
            HedgeAfter::Fixed(d) => Some(d),
            HedgeAfter::Quantile(_) => self.quantile_delay,
        };
        delay.map(|d| now.saturating_add(d)).filter(|&at| at < timeout_at)
    }

    /// A hedge's delay passed with its caller still waiting and the throttle, if any, allowing
    /// it ([`throttle_at_delay`]): the copy goes if it can take one whole cap token.
    #[inline]
    pub(super) fn take_token(&mut self) -> HedgeGo {
        if TokenBucket::try_take(&mut self.tokens, 1.0) {
            HedgeGo::Send
        } else {
            HedgeGo::Capped
        }
    }

    /// The level of the throttle bucket of its own (full at its first use).
    pub(super) fn throttle_level(&mut self, t: &HedgeThrottle) -> &mut f64 {
        self.throttle_tokens.get_or_insert(t.tokens.max_tokens)
    }

    /// A success reached the caller `latency` after the original attempt was sent: a sample of
    /// the quantile `q`, which is recomputed every [`HEDGE_QUANTILE_REFRESH`] samples once
    /// [`HEDGE_WARMUP_SAMPLES`] are in (in microseconds, at least one).
    pub(super) fn record_success(&mut self, latency: Nanos, q: f64) {
        self.latency_us.record(latency / 1_000).expect("auto-resizing histograms accept any u64");
        self.samples += 1;
        if self.samples >= HEDGE_WARMUP_SAMPLES && self.samples.is_multiple_of(HEDGE_QUANTILE_REFRESH) {
            self.quantile_delay = Some(self.latency_us.value_at_quantile(q).max(1) * 1_000);
        }
    }
}

/// The throttle `t` at bucket level `level` when a hedge's delay passes: `Throttled` with half
/// or less left (the cap is then not asked), else `Send`. With `charge_unanswered` the unanswered attempt also takes a
/// token, after the answer (not gRFC A6, which counts failed attempts only; at saturation attempts
/// are slow well before they time out).
#[inline]
pub(super) fn throttle_at_delay(level: &mut f64, t: &HedgeThrottle) -> HedgeGo {
    let allowed = t.tokens.allows(*level);
    if t.charge_unanswered {
        *level = GrpcTokens::after_failure(*level);
    }
    if allowed {
        HedgeGo::Send
    } else {
        HedgeGo::Throttled
    }
}

/// The throttle `t` at bucket level `level` after an attempt's outcome `reply` (gRFC A6: a
/// failure the server answered takes a token, a success gives back `token_ratio`; a
/// non-retryable rejection neither, and nor does a timeout at the client, which has no status:
/// [`GrpcTokens::charges`]).
#[inline]
pub(super) fn throttle_outcome(level: &mut f64, t: &HedgeThrottle, reply: Reply) {
    *level = match reply {
        Reply::Ok => t.tokens.after_success(*level),
        Reply::Rejected | Reply::Timeout => *level,
        Reply::Failed | Reply::Refused | Reply::Throttled(_) | Reply::LocalReject => GrpcTokens::after_failure(*level),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn fixed(after: Nanos, max_share: f64) -> HedgeSpec {
        HedgeSpec { after: HedgeAfter::Fixed(after), max_share, throttle: None }
    }

    fn throttle(max_tokens: f64, token_ratio: f64, charge_unanswered: bool) -> HedgeThrottle {
        HedgeThrottle { tokens: GrpcTokens { max_tokens, token_ratio }, shared: false, charge_unanswered }
    }

    #[test]
    fn each_attempt_earns_max_share_and_each_hedge_costs_one_token() {
        let mut s = HedgeState::new();
        let spec = fixed(10 * MS, 0.1);
        assert_eq!(s.take_token(), HedgeGo::Capped, "no attempt sent yet: no token");
        for _ in 0..9 {
            s.arm(&spec, 0, Nanos::MAX);
        }
        assert_eq!(s.take_token(), HedgeGo::Capped, "nine attempts earn 0.9 tokens");
        s.arm(&spec, 0, Nanos::MAX);
        assert_eq!(s.take_token(), HedgeGo::Send, "ten deposits of 0.1 make one whole token");
        assert_eq!(s.take_token(), HedgeGo::Capped, "the token was spent");
    }

    #[test]
    fn at_most_ten_tokens_are_saved() {
        let mut s = HedgeState::new();
        let spec = fixed(10 * MS, 1.0);
        for _ in 0..50 {
            s.arm(&spec, 0, Nanos::MAX);
        }
        let sent = (0..50).take_while(|_| s.take_token() == HedgeGo::Send).count();
        assert_eq!(sent, HEDGE_TOKENS_MAX as usize);
    }

    #[test]
    fn a_fixed_delay_arms_before_the_timeout_only() {
        let mut s = HedgeState::new();
        let spec = fixed(50 * MS, 0.5);
        assert_eq!(s.arm(&spec, 1_000 * MS, 1_200 * MS), Some(1_050 * MS));
        assert_eq!(s.arm(&spec, 1_000 * MS, 1_050 * MS), None, "a hedge due at the timeout is not armed");
        assert_eq!(s.arm(&spec, Nanos::MAX - 1, Nanos::MAX), None, "the instant saturates, at the timeout");
    }

    #[test]
    fn a_quantile_delay_waits_for_the_warm_up_and_moves_every_refresh() {
        let mut s = HedgeState::new();
        let spec = HedgeSpec { after: HedgeAfter::Quantile(0.9), max_share: 1.0, throttle: None };
        for _ in 0..HEDGE_WARMUP_SAMPLES - 1 {
            s.record_success(20 * MS, 0.9);
        }
        assert_eq!(s.arm(&spec, 0, Nanos::MAX), None, "99 samples: still warming up");
        s.record_success(20 * MS, 0.9);
        let at = s.arm(&spec, 0, Nanos::MAX).expect("armed after 100 samples");
        assert!(at.abs_diff(20 * MS) <= 20 * MS / 1_000, "p90 of 20 ms samples is 20 ms (3 digits), got {at}");
        // 99 more samples at 50 ms: p90 of the 199 would be 50 ms, but the delay is only
        // recomputed at the 200th.
        for _ in 0..HEDGE_QUANTILE_REFRESH - 1 {
            s.record_success(50 * MS, 0.9);
        }
        assert_eq!(s.arm(&spec, 0, Nanos::MAX), Some(at), "unchanged between refreshes");
        s.record_success(50 * MS, 0.9);
        let at = s.arm(&spec, 0, Nanos::MAX).expect("armed");
        assert!(at.abs_diff(50 * MS) <= 50 * MS / 1_000, "p90 of 100 × 20 ms and 100 × 50 ms is 50 ms, got {at}");
    }

    #[test]
    fn a_sub_microsecond_quantile_is_one_microsecond() {
        let mut s = HedgeState::new();
        for _ in 0..HEDGE_WARMUP_SAMPLES {
            s.record_success(500, 0.5);
        }
        let spec = HedgeSpec { after: HedgeAfter::Quantile(0.5), max_share: 1.0, throttle: None };
        assert_eq!(s.arm(&spec, 0, Nanos::MAX), Some(1_000));
    }

    #[test]
    fn the_throttle_starts_full_and_refuses_at_half_or_less() {
        let t = throttle(10.0, 0.5, false);
        let mut s = HedgeState::new();
        let level = s.throttle_level(&t);
        assert_eq!(*level, 10.0, "full at the start");
        for _ in 0..4 {
            throttle_outcome(level, &t, Reply::Failed);
        }
        assert_eq!(throttle_at_delay(level, &t), HedgeGo::Send, "6 of 10 left: more than half");
        throttle_outcome(level, &t, Reply::Timeout);
        assert_eq!(*level, 6.0, "a timeout at the client has no status: no token (gRFC A6)");
        throttle_outcome(level, &t, Reply::Failed);
        assert_eq!(throttle_at_delay(level, &t), HedgeGo::Throttled, "5 of 10: half, refused");
        throttle_outcome(level, &t, Reply::Rejected);
        assert_eq!(*level, 5.0, "a non-retryable rejection neither takes nor gives");
        throttle_outcome(level, &t, Reply::Ok);
        assert_eq!(*level, 5.5, "a success gives back token_ratio");
        assert_eq!(throttle_at_delay(level, &t), HedgeGo::Send);
        for _ in 0..20 {
            throttle_outcome(level, &t, Reply::Ok);
        }
        assert_eq!(*level, 10.0, "never above max_tokens");
        assert_eq!(*s.throttle_level(&t), 10.0, "the level is kept in the state");
    }

    #[test]
    fn charge_unanswered_takes_a_token_after_answering() {
        let t = throttle(10.0, 0.1, true);
        let mut level = 6.0;
        assert_eq!(throttle_at_delay(&mut level, &t), HedgeGo::Send, "6 of 10 allows, before the charge");
        assert_eq!(level, 5.0, "the unanswered attempt took one");
        assert_eq!(throttle_at_delay(&mut level, &t), HedgeGo::Throttled, "5 of 10 refuses");
        assert_eq!(level, 4.0, "charged whether or not the hedge goes");
        let mut level = 6.0;
        throttle_at_delay(&mut level, &throttle(10.0, 0.1, false));
        assert_eq!(level, 6.0, "without charge_unanswered the delay costs nothing");
    }

    #[test]
    fn a_race_is_won_by_the_first_success_and_a_failure_waits_for_the_other_copy() {
        assert_eq!(Race::settle(false, true), Race::Last);
        assert_eq!(Race::settle(false, false), Race::Last, "the last copy's failure is the call's");
        assert_eq!(Race::settle(true, false), Race::KeepWaiting);
        assert_eq!(Race::settle(true, true), Race::Won);
        assert!(!Race::KeepWaiting.caller_sees());
        assert!(Race::Won.caller_sees() && Race::Last.caller_sees());
    }
}
