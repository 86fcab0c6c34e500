//! Retry budgets, client-side throttles and circuit breakers (docs/MODEL.md, "Budgets, throttles,
//! breakers"). Each is a small state machine driven by the simulation's call outcomes.

use crate::engine::time::de_nanos;
use crate::engine::Nanos;
use crate::model::sliding::SlidingCounts;
use crate::model::tokens::TokenBucket;

/// Who shares one budget or breaker state (`scope`, by snake_case name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One state per client.
    Client,
    /// One state per tenant.
    Tenant,
    /// One state for everybody using the policy.
    Global,
}

/// Why an attempt failed, as a budget prices it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// 5xx or connection refused.
    Transient,
    /// The attempt timed out.
    Timeout,
    /// 429 / throttling error.
    Throttling,
}

/// A retry budget's parameters: the one definition of the budget kinds. A scenario's
/// `budget = { kind = "…", … }` is read into it through serde (`scenario::tagged`): each variant
/// is a kind (its snake_case name), its fields are the parameters that kind takes, with their
/// defaults; a field of another kind is refused.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(tag = "kind")]
pub enum BudgetKind {
    /// AWS SDK retry quota: a token bucket paying for retries, refunded on success.
    AwsQuota {
        /// Bucket size and initial content (500).
        #[serde(default = "whole::<500>")]
        capacity: f64,
        /// Cost of a retry after a transient error (5; 14 from 2026).
        #[serde(default = "whole::<5>")]
        retry_cost: f64,
        /// Cost of a retry after a timeout (10; 14 from 2026).
        #[serde(default = "whole::<10>")]
        timeout_cost: f64,
        /// Cost of a retry after a throttling error (5).
        #[serde(default = "whole::<5>")]
        throttling_cost: f64,
        /// Added on a success that needed no retry (1).
        #[serde(default = "whole::<1>")]
        no_retry_increment: f64,
    },
    /// gRPC retry throttling: retries only while tokens > max_tokens / 2.
    GrpcThrottle {
        /// Initial and maximum tokens (e.g. 10).
        #[serde(default = "whole::<10>")]
        max_tokens: f64,
        /// Tokens added per success (e.g. 0.1).
        #[serde(default = "tenths::<1>")]
        token_ratio: f64,
    },
    /// Finagle RetryBudget: `percent` of the recent successful requests plus `min_retries_per_s`,
    /// over `ttl` (finagle ≥ 20.8.1 deposits only for a request classified successful).
    Finagle {
        /// How long a request's deposit lasts (10 s).
        #[serde(default = "seconds::<10>", deserialize_with = "de_nanos")]
        #[schemars(with = "crate::engine::duration_schema::DurationString")]
        ttl: Nanos,
        /// Share of requests that may be retried (0.2).
        #[serde(default = "tenths::<2>")]
        percent: f64,
        /// Retries per second always allowed (10).
        #[serde(default = "whole::<10>")]
        min_retries_per_s: f64,
    },
    /// Google SRE per-client retry ratio: retries ≤ max(ratio × requests, min_retries) in a
    /// sliding window (Envoy's budget also always allows a few: min_retry_concurrency 3).
    Ratio {
        /// Allowed retries per request (0.1).
        #[serde(default = "tenths::<1>")]
        ratio: f64,
        /// Sliding window.
        #[serde(default = "seconds::<10>", deserialize_with = "de_nanos")]
        #[schemars(with = "crate::engine::duration_schema::DurationString")]
        window: Nanos,
        /// Retries always allowed per window (0 for the SRE rule, 3 for Envoy).
        #[serde(default)]
        min_retries: f64,
    },
    /// Google SRE client-side adaptive throttling: reject locally with
    /// p = max(0, (requests − k·accepts) / (requests + 1)) over `window`.
    AdaptiveThrottle {
        /// Multiplier on accepts (2).
        #[serde(default = "whole::<2>")]
        k: f64,
        /// Sliding window (2 min).
        #[serde(default = "seconds::<120>", deserialize_with = "de_nanos")]
        #[schemars(with = "crate::engine::duration_schema::DurationString")]
        window: Nanos,
    },
    /// Marc Brooker's token bucket: each request adds `per_request`, each retry costs 1.
    TokenBucket {
        /// Bucket size and initial content (5).
        #[serde(default = "whole::<5>")]
        capacity: f64,
        /// Tokens added per request (0.1).
        #[serde(default = "tenths::<1>")]
        per_request: f64,
    },
    /// Envoy's limit on *concurrent* retries per cluster (`circuit_breakers`): a retry may start
    /// while fewer than max(⌊budget_percent % × active⌋, min_retry_concurrency) retries are
    /// outstanding (Envoy's `RetryBudget`; `budget_percent = 0` is its `max_retries` breaker,
    /// default 3, which applies when no budget is configured). A retry is outstanding from the
    /// decision, through its backoff, until its attempt's outcome is known or its call ends;
    /// `active` is the calls live in the scope (docs/MODEL.md, "Envoy's concurrent retries").
    ConcurrentRetries {
        /// Percent of the active calls that may be retries at once (20).
        #[serde(default = "whole::<20>")]
        budget_percent: f64,
        /// Retries always allowed at once (3).
        #[serde(default = "count::<3>")]
        min_retry_concurrency: u32,
    },
}

/// Serde default: the whole number `N`.
fn whole<const N: u32>() -> f64 {
    f64::from(N)
}

/// Serde default: the count `N`.
fn count<const N: u32>() -> u32 {
    N
}

/// Serde default: `N` tenths (correctly rounded, so `tenths::<1>() == 0.1`).
fn tenths<const N: u32>() -> f64 {
    f64::from(N) / 10.0
}

/// Serde default: `S` seconds.
fn seconds<const S: u64>() -> Nanos {
    S * crate::engine::NS_PER_S
}

impl Scope {
    /// The scope in words: `per client`, `per tenant`, `global`.
    pub fn words(self) -> &'static str {
        match self {
            Scope::Client => "per client",
            Scope::Tenant => "per tenant",
            Scope::Global => "global",
        }
    }
}

impl BudgetKind {
    /// The budget in words: `gRPC throttle (10 tokens, +0.1 per success)`.
    pub fn words(&self) -> String {
        match self {
            BudgetKind::AwsQuota { capacity, retry_cost, .. } => {
                format!("AWS retry quota ({capacity} tokens, {retry_cost} per retry)")
            }
            BudgetKind::GrpcThrottle { max_tokens, token_ratio } => {
                format!("gRPC throttle ({max_tokens} tokens, +{token_ratio} per success)")
            }
            BudgetKind::Finagle { percent, min_retries_per_s, .. } => {
                format!("Finagle budget ({}% of requests + {min_retries_per_s}/s)", percent * 100.0)
            }
            BudgetKind::Ratio { ratio, .. } => format!("retry ratio ≤ {ratio}"),
            BudgetKind::AdaptiveThrottle { k, .. } => format!("adaptive throttle (K = {k})"),
            BudgetKind::TokenBucket { capacity, per_request } => {
                format!("token bucket ({capacity} tokens, +{per_request} per request)")
            }
            BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } => {
                format!("concurrent retries ≤ max({budget_percent}% of active calls, {min_retry_concurrency})")
            }
        }
    }

    /// The scenario-file name of this kind.
    pub fn name(&self) -> &'static str {
        match self {
            BudgetKind::AwsQuota { .. } => "aws_quota",
            BudgetKind::GrpcThrottle { .. } => "grpc_throttle",
            BudgetKind::Finagle { .. } => "finagle",
            BudgetKind::Ratio { .. } => "ratio",
            BudgetKind::AdaptiveThrottle { .. } => "adaptive_throttle",
            BudgetKind::TokenBucket { .. } => "token_bucket",
            BudgetKind::ConcurrentRetries { .. } => "concurrent_retries",
        }
    }
}

/// gRFC A6 retry throttling's token arithmetic: a bucket of at most `max_tokens`, full at the
/// start, that loses one token per failed attempt (one answered with a retryable status, not a
/// client-side timeout: [`GrpcTokens::charges`]) and gains `token_ratio` per success, and
/// allows while it holds more than half. The budget kind `grpc_throttle` and hedging's
/// `throttle` (`model/hedge.rs`) both keep their bucket with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrpcTokens {
    /// Bucket size (and its start).
    pub max_tokens: f64,
    /// Tokens a success earns back.
    pub token_ratio: f64,
}

impl GrpcTokens {
    /// More than half the bucket left (beyond the token tolerance): a retry (or hedge) may go.
    pub fn allows(&self, tokens: f64) -> bool {
        TokenBucket::above(tokens, self.max_tokens / 2.0)
    }

    /// Whether a failed attempt takes a token: gRFC A6 counts "failed RPCs", an RPC that ended
    /// with a status in the policy's retryable set (or pushback); an attempt the client timed
    /// out itself (its attempt timeout or deadline) ended with no status from the server and
    /// costs nothing, so a slow server does not close the throttle by being slow.
    pub fn charges(failure: FailureKind, retryable: bool) -> bool {
        match failure {
            FailureKind::Timeout => false,
            FailureKind::Transient | FailureKind::Throttling => retryable,
        }
    }

    /// The bucket after a failed attempt.
    pub fn after_failure(mut tokens: f64) -> f64 {
        TokenBucket::withdraw(&mut tokens, 1.0);
        tokens
    }

    /// The bucket after a success.
    pub fn after_success(&self, mut tokens: f64) -> f64 {
        TokenBucket::new(self.max_tokens).deposit(&mut tokens, self.token_ratio);
        tokens
    }
}

/// A budget and who shares it.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetSpec {
    /// The budget.
    pub kind: BudgetKind,
    /// Client, tenant or global.
    pub scope: Scope,
}

/// Window slot of requests (Finagle, ratio, adaptive throttling).
const REQUESTS: usize = 0;
/// Window slot of retries paid for (Finagle, ratio).
const RETRIES_PAID: usize = 1;
/// Window slot of accepted attempts (adaptive throttling).
const ACCEPTS: usize = 1;

/// The live state of one budget instance. Its kind ([`BudgetKind`]) says which part it uses:
/// the tokens (AWS quota, gRPC throttle, token bucket), the window (Finagle, ratio, adaptive
/// throttling) or the outstanding counts (concurrent retries), so each operation matches the
/// kind alone. Only the windowed and counting kinds allocate their part (boxed): a token bucket's
/// state is 16 bytes, not 104 (with a client-scoped budget, 10M clients hold 10M of these).
#[derive(Clone, Debug)]
pub struct BudgetState {
    /// Current tokens (concurrent retries: the retry slots free, for the budget series).
    pub tokens: f64,
    /// The window or the outstanding counts (windowed and counting kinds only).
    more: Option<Box<More>>,
}

/// The boxed part of a budget state: no larger than the window alone (the counts fit beside
/// the window's non-zero slot width, which tells the two apart).
#[derive(Clone, Debug)]
enum More {
    /// Requests and retries paid (or accepts) in a sliding window.
    Window(SlidingCounts<2>),
    /// Calls live in the scope and the retries outstanding among them (concurrent retries).
    Outstanding {
        /// Calls started and not ended.
        calls: u64,
        /// Retries granted whose outcome is not known yet.
        retries: u64,
    },
}

const _: () = assert!(std::mem::size_of::<More>() == std::mem::size_of::<SlidingCounts<2>>());

impl BudgetState {
    fn window(&mut self) -> &mut SlidingCounts<2> {
        counts(&mut self.more)
    }

    /// The outstanding counts of a concurrent-retries state.
    fn outstanding(&mut self) -> (&mut u64, &mut u64) {
        match self.more.as_deref_mut() {
            Some(More::Outstanding { calls, retries }) => (calls, retries),
            Some(More::Window(_)) | None => panic!("a concurrent-retries budget has its counts"),
        }
    }
}

/// The window of a windowed kind's state.
fn counts(more: &mut Option<Box<More>>) -> &mut SlidingCounts<2> {
    match more.as_deref_mut() {
        Some(More::Window(w)) => w,
        Some(More::Outstanding { .. }) | None => panic!("a windowed budget kind has its window"),
    }
}

/// Envoy's `RetryBudgetImpl::max()`: max(budget_percent / 100 × active, min_retry_concurrency),
/// the product truncated to a whole number as Envoy's conversion to `uint64_t` does.
pub fn concurrent_retry_limit(budget_percent: f64, min_retry_concurrency: u32, active: u64) -> u64 {
    ((budget_percent / 100.0 * active as f64) as u64).max(u64::from(min_retry_concurrency))
}

impl BudgetKind {
    /// Bytes one state of this kind holds (its boxed part's heap block included, with the
    /// allocator's header), for the memory estimate.
    pub fn state_bytes(&self) -> u64 {
        let boxed = match self {
            BudgetKind::Finagle { .. }
            | BudgetKind::Ratio { .. }
            | BudgetKind::AdaptiveThrottle { .. }
            | BudgetKind::ConcurrentRetries { .. } => std::mem::size_of::<More>() as u64 + 16,
            BudgetKind::AwsQuota { .. } | BudgetKind::GrpcThrottle { .. } | BudgetKind::TokenBucket { .. } => 0,
        };
        std::mem::size_of::<BudgetState>() as u64 + boxed
    }

    /// A fresh state.
    pub fn new_state(&self) -> BudgetState {
        let tokens = |tokens: f64| BudgetState { tokens, more: None };
        let windowed =
            |window: Nanos| BudgetState { tokens: 0.0, more: Some(Box::new(More::Window(SlidingCounts::new(window)))) };
        match *self {
            BudgetKind::AwsQuota { capacity, .. } => tokens(capacity),
            BudgetKind::GrpcThrottle { max_tokens, .. } => tokens(max_tokens),
            BudgetKind::Finagle { ttl: window, .. }
            | BudgetKind::Ratio { window, .. }
            | BudgetKind::AdaptiveThrottle { window, .. } => windowed(window),
            BudgetKind::TokenBucket { capacity, .. } => tokens(capacity),
            BudgetKind::ConcurrentRetries { min_retry_concurrency, .. } => BudgetState {
                tokens: f64::from(min_retry_concurrency),
                more: Some(Box::new(More::Outstanding { calls: 0, retries: 0 })),
            },
        }
    }

    /// A new logical call starts (a ratio or token bucket counts every request, whatever its
    /// fate; a concurrent-retries budget counts it active until it ends,
    /// [`BudgetKind::on_call_end`]). Finagle deposits only on success ([`BudgetKind::on_success`]).
    pub fn on_request(&self, state: &mut BudgetState, now: Nanos) {
        match self {
            BudgetKind::Ratio { .. } => state.window().add(now, REQUESTS, 1.0),
            BudgetKind::TokenBucket { capacity, per_request } => {
                TokenBucket::new(*capacity).deposit(&mut state.tokens, *per_request)
            }
            &BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } => {
                *state.outstanding().0 += 1;
                Self::refresh_slots(state, budget_percent, min_retry_concurrency);
            }
            BudgetKind::Finagle { .. }
            | BudgetKind::AwsQuota { .. }
            | BudgetKind::GrpcThrottle { .. }
            | BudgetKind::AdaptiveThrottle { .. } => {}
        }
    }

    /// A concurrent-retries state's `tokens`: the retry slots free now (never below 0).
    fn refresh_slots(state: &mut BudgetState, budget_percent: f64, min_retry_concurrency: u32) {
        let (&mut calls, &mut retries) = state.outstanding();
        let limit = concurrent_retry_limit(budget_percent, min_retry_concurrency, calls);
        state.tokens = limit.saturating_sub(retries) as f64;
    }

    /// The outcome of a retry this state granted is known (Envoy's `resetRetry`, at the next
    /// retry decision): its slot is free again. Concurrent retries only; a no-op for the others.
    pub fn on_retry_settled(&self, state: &mut BudgetState) {
        if let &BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } = self {
            let retries = state.outstanding().1;
            *retries = retries.checked_sub(1).expect("a settled retry was outstanding");
            Self::refresh_slots(state, budget_percent, min_retry_concurrency);
        }
    }

    /// A call ends (or is cancelled); `holds_retry` when a retry it was granted is still
    /// outstanding. Concurrent retries only; a no-op for the others.
    pub fn on_call_end(&self, state: &mut BudgetState, holds_retry: bool) {
        if let &BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } = self {
            let (calls, retries) = state.outstanding();
            *calls = calls.checked_sub(1).expect("an ending call was counted");
            if holds_retry {
                *retries = retries.checked_sub(1).expect("a held retry was outstanding");
            }
            Self::refresh_slots(state, budget_percent, min_retry_concurrency);
        }
    }

    /// Whether the calls of this kind hold a retry between its grant and its outcome (their
    /// `paid` flag then means "holds a slot"): concurrent retries only.
    pub fn holds_retries(&self) -> bool {
        match self {
            BudgetKind::ConcurrentRetries { .. } => true,
            BudgetKind::AwsQuota { .. }
            | BudgetKind::GrpcThrottle { .. }
            | BudgetKind::Finagle { .. }
            | BudgetKind::Ratio { .. }
            | BudgetKind::AdaptiveThrottle { .. }
            | BudgetKind::TokenBucket { .. } => false,
        }
    }

    /// Probability that an attempt is rejected locally before it is sent (adaptive throttling);
    /// counts the attempt as a request of the window.
    pub fn local_reject_probability(&self, state: &mut BudgetState, now: Nanos) -> f64 {
        let BudgetKind::AdaptiveThrottle { k, .. } = self else { return 0.0 };
        let w = state.window();
        let requests = w.sum(now, REQUESTS);
        let accepts = w.sum(now, ACCEPTS);
        w.add(now, REQUESTS, 1.0);
        ((requests - k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// Whether one instance serves each hop called (gRFC A6 keeps one retry-throttle bucket
    /// per server name, shared by the retries and hedges of every call to that server).
    pub fn per_server(&self) -> bool {
        matches!(self, BudgetKind::GrpcThrottle { .. })
    }

    /// An attempt failed with `failure` (before the retry decision); `retryable` when the call's
    /// policy retries that failure. gRPC spends a token for a failure the server answered with a
    /// status in the retryable set (gRFC A6, [`GrpcTokens::charges`]); the others do nothing here.
    pub fn on_failure(&self, state: &mut BudgetState, failure: FailureKind, retryable: bool) {
        if let BudgetKind::GrpcThrottle { .. } = self {
            if GrpcTokens::charges(failure, retryable) {
                state.tokens = GrpcTokens::after_failure(state.tokens);
            }
        }
    }

    /// What a retry after `failure` pays when [`BudgetKind::try_retry`] allows it (the one
    /// definition: `try_retry` returns it, and a call, which keeps only the failure it paid for,
    /// reads it back here for the refund).
    pub fn cost_of(&self, failure: FailureKind) -> f64 {
        match self {
            BudgetKind::AwsQuota { retry_cost, timeout_cost, throttling_cost, .. } => match failure {
                FailureKind::Transient => *retry_cost,
                FailureKind::Timeout => *timeout_cost,
                FailureKind::Throttling => *throttling_cost,
            },
            BudgetKind::GrpcThrottle { .. }
            | BudgetKind::Finagle { .. }
            | BudgetKind::Ratio { .. }
            | BudgetKind::AdaptiveThrottle { .. } => 0.0,
            BudgetKind::TokenBucket { .. } | BudgetKind::ConcurrentRetries { .. } => 1.0,
        }
    }

    /// Finagle's `RetryBudget.balance`: the whole retries the budget would allow now (its
    /// tokens, 1,000 to a retry, divided down to an integer), which caps a request's requeues
    /// (`policy.requeue`); `None` for the other kinds, which have no such balance.
    pub fn balance(&self, state: &mut BudgetState, now: Nanos) -> Option<f64> {
        match self {
            &BudgetKind::Finagle { ttl, percent, min_retries_per_s } => {
                let credit = Self::finagle_credit(state, now, ttl, percent, min_retries_per_s);
                // With the tolerance of every token comparison: ten 0.1 deposits are one token.
                Some((credit + crate::model::tokens::EPS).floor().max(0.0))
            }
            BudgetKind::AwsQuota { .. }
            | BudgetKind::GrpcThrottle { .. }
            | BudgetKind::Ratio { .. }
            | BudgetKind::AdaptiveThrottle { .. }
            | BudgetKind::TokenBucket { .. }
            | BudgetKind::ConcurrentRetries { .. } => None,
        }
    }

    /// A Finagle budget's retries available now: `percent` of the successful requests within `ttl` plus
    /// the reserve (`min_retries_per_s × ttl`), less the retries paid within `ttl`.
    fn finagle_credit(state: &mut BudgetState, now: Nanos, ttl: Nanos, percent: f64, min_retries_per_s: f64) -> f64 {
        let reserve = min_retries_per_s * crate::engine::time::ns_to_secs(ttl);
        let w = state.window();
        percent * w.sum(now, REQUESTS) + reserve - w.sum(now, RETRIES_PAID)
    }

    /// A windowed budget with `allowed` retries left pays for one when it covers it.
    fn pay_in_window(window: &mut SlidingCounts<2>, now: Nanos, allowed: f64) -> bool {
        let covered = TokenBucket::covers(allowed, 1.0);
        if covered {
            window.add(now, RETRIES_PAID, 1.0);
        }
        covered
    }

    /// May the call retry now? On yes, the retry is paid for; returns the cost paid (AWS refunds
    /// it on success; concurrent retries: the one slot it holds), or `None` to refuse.
    pub fn try_retry(&self, state: &mut BudgetState, now: Nanos, failure: FailureKind) -> Option<f64> {
        let cost = self.cost_of(failure);
        let granted = match self {
            // The kinds that pay in tokens pay the cost itself.
            BudgetKind::AwsQuota { .. } | BudgetKind::TokenBucket { .. } => {
                TokenBucket::try_take(&mut state.tokens, cost)
            }
            &BudgetKind::GrpcThrottle { max_tokens, token_ratio } => {
                GrpcTokens { max_tokens, token_ratio }.allows(state.tokens)
            }
            &BudgetKind::Finagle { ttl, percent, min_retries_per_s } => {
                let credit = Self::finagle_credit(state, now, ttl, percent, min_retries_per_s);
                Self::pay_in_window(state.window(), now, credit)
            }
            BudgetKind::Ratio { ratio, min_retries, .. } => {
                let w = state.window();
                let allowed = (ratio * w.sum(now, REQUESTS)).max(*min_retries) - w.sum(now, RETRIES_PAID);
                Self::pay_in_window(w, now, allowed)
            }
            BudgetKind::AdaptiveThrottle { .. } => true,
            &BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } => {
                let (&mut calls, retries) = state.outstanding();
                let granted = *retries < concurrent_retry_limit(budget_percent, min_retry_concurrency, calls);
                *retries += u64::from(granted);
                Self::refresh_slots(state, budget_percent, min_retry_concurrency);
                granted
            }
        };
        granted.then_some(cost)
    }

    /// An attempt succeeded; `last_cost` is what its last retry paid (None if it was the first try).
    pub fn on_success(&self, state: &mut BudgetState, now: Nanos, last_cost: Option<f64>) {
        match self {
            BudgetKind::AwsQuota { capacity, no_retry_increment, .. } => {
                TokenBucket::new(*capacity).deposit(&mut state.tokens, last_cost.unwrap_or(*no_retry_increment));
            }
            &BudgetKind::GrpcThrottle { max_tokens, token_ratio } => {
                state.tokens = GrpcTokens { max_tokens, token_ratio }.after_success(state.tokens);
            }
            BudgetKind::AdaptiveThrottle { .. } => state.window().add(now, ACCEPTS, 1.0),
            // finagle ≥ 20.8.1 (commit f3a7326, "Retry budgets: only deposit on success"):
            // `RequeueFilter.apply` deposits when the request's response is classified
            // `ResponseClass.Successful`, not for every request; a failed or ignorable one
            // deposits nothing, so an outage leaves the budget its reserve alone.
            BudgetKind::Finagle { .. } => state.window().add(now, REQUESTS, 1.0),
            // A concurrent retry's slot is freed where its call ends ([`BudgetKind::on_call_end`]).
            BudgetKind::Ratio { .. } | BudgetKind::TokenBucket { .. } | BudgetKind::ConcurrentRetries { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
