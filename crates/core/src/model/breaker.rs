//! Circuit breakers: the parameters (`breaker = { … }` of a policy), the position (closed, open
//! until an instant, half-open with its probes) and the decisions: may an attempt go, and what its
//! outcome does to the position.

use crate::engine::Nanos;
use crate::model::budget::Scope;
use crate::model::sliding::SlidingCounts;

/// A circuit breaker's parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerSpec {
    /// Client, tenant or global.
    pub scope: Scope,
    /// Sliding window over which the failure ratio is computed.
    pub window: Nanos,
    /// Failure ratio at which the breaker opens, in (0, 1].
    pub threshold: f64,
    /// Calls in the window needed before it may open.
    pub min_calls: u32,
    /// How long it stays open before half-opening.
    pub open_for: Nanos,
    /// Trial calls let through when half-open; all must succeed to close.
    pub probes: u32,
    /// Only retries are stopped while open (Brooker's retry breaker); first tries always go.
    pub retries_only: bool,
}

/// Breaker position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerPosition {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Calls fail fast until the instant given.
    Open {
        /// When it half-opens.
        until: Nanos,
    },
    /// `probes` trial calls may pass.
    HalfOpen {
        /// Trial calls let through so far.
        sent: u32,
        /// Trial calls that succeeded.
        succeeded: u32,
    },
}

/// The live state of one circuit breaker.
#[derive(Clone, Debug)]
pub struct BreakerState {
    /// Where it is.
    pub position: BreakerPosition,
    /// Successes (0) and failures (1) over the window, while closed.
    counts: SlidingCounts<2>,
}

impl BreakerSpec {
    /// A closed breaker.
    pub fn new_state(&self) -> BreakerState {
        BreakerState { position: BreakerPosition::Closed, counts: SlidingCounts::new(self.window) }
    }

    /// May an attempt be sent now? (Open ⇒ no; half-open ⇒ only the probes.)
    pub fn allow(&self, state: &mut BreakerState, now: Nanos) -> bool {
        if let BreakerPosition::Open { until } = state.position {
            if now < until {
                return false;
            }
            state.position = BreakerPosition::HalfOpen { sent: 0, succeeded: 0 };
        }
        match &mut state.position {
            BreakerPosition::HalfOpen { sent, .. } if *sent >= self.probes => false,
            BreakerPosition::HalfOpen { sent, .. } => {
                *sent += 1;
                true
            }
            BreakerPosition::Closed | BreakerPosition::Open { .. } => true,
        }
    }

    /// Records an attempt's outcome.
    pub fn record(&self, state: &mut BreakerState, now: Nanos, success: bool) {
        match &mut state.position {
            BreakerPosition::Closed => {
                state.counts.add(now, usize::from(!success), 1.0);
                let failures = state.counts.sum(now, 1);
                let calls = failures + state.counts.sum(now, 0);
                if calls >= f64::from(self.min_calls) && failures / calls >= self.threshold {
                    state.position = BreakerPosition::Open { until: now.saturating_add(self.open_for) };
                }
            }
            BreakerPosition::HalfOpen { succeeded, .. } => {
                if !success {
                    state.position = BreakerPosition::Open { until: now.saturating_add(self.open_for) };
                } else {
                    *succeeded += 1;
                    if *succeeded >= self.probes {
                        state.position = BreakerPosition::Closed;
                        state.counts.clear();
                    }
                }
            }
            BreakerPosition::Open { .. } => {}
        }
    }
}
