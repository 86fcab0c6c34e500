//! Test vectors of the budgets and breakers against the behaviour their sources document.

use super::*;
use crate::engine::{NS_PER_MS, NS_PER_S};
use crate::model::breaker::{BreakerPosition, BreakerSpec};
use crate::model::policy::{full_from_draw, RetryAfterMode};
use crate::scenario::policies::policy;
use crate::scenario::raw::RawPolicy;

fn preset(name: &str) -> crate::model::RetryPolicy {
    policy("p", &RawPolicy { preset: Some(name.to_string()), ..RawPolicy::default() }).expect("preset is valid")
}

#[test]
fn aws_2026_vectors_with_the_random_draw_forced_to_one() {
    let p = preset("aws-standard-2026");
    // Delays: b × 2^(i−1) × base with b = 1: 50 ms, then 100 ms.
    assert_eq!(full_from_draw(p.exp_delay(1), 1.0), 50 * NS_PER_MS);
    assert_eq!(full_from_draw(p.exp_delay(2), 1.0), 100 * NS_PER_MS);
    // Quota: 500 → 486 → 472 on two retries, back to 486 after the success (refund of the last cost).
    let budget = p.budget.as_ref().expect("quota").kind.clone();
    let mut state = budget.new_state();
    let tokens = |s: &BudgetState| s.tokens;
    assert_eq!(tokens(&state), 500.0);
    let first = budget.try_retry(&mut state, 0, FailureKind::Transient);
    assert_eq!((first, tokens(&state)), (Some(14.0), 486.0));
    let second = budget.try_retry(&mut state, 0, FailureKind::Transient);
    assert_eq!((second, tokens(&state)), (Some(14.0), 472.0));
    budget.on_success(&mut state, 0, second);
    assert_eq!(tokens(&state), 486.0);
    // A throttling retry costs 5 and waits b × 1 s.
    assert_eq!(budget.try_retry(&mut state, 0, FailureKind::Throttling), Some(5.0));
    assert_eq!(tokens(&state), 481.0);
    assert_eq!(full_from_draw(p.exp_delay_from(p.throttle_base.expect("1 s"), 1), 1.0), NS_PER_S);
    // x-amz-retry-after: 10000 (ms) is honoured up to the backoff + 5 s: 5,050 ms after a 50 ms backoff.
    assert_eq!(p.retry_after, RetryAfterMode::AwsClamp);
    assert_eq!(p.apply_retry_after(50 * NS_PER_MS, Some(10_000 * NS_PER_MS)), 5_050 * NS_PER_MS);
    // A success without retries adds 1, never above the capacity.
    let mut full = budget.new_state();
    budget.on_success(&mut full, 0, None);
    assert_eq!(tokens(&full), 500.0);
}

#[test]
fn aws_pre_2026_quota_prices_timeouts_at_ten() {
    let kind = preset("aws-standard").budget.expect("quota").kind;
    let mut state = kind.new_state();
    assert_eq!(kind.try_retry(&mut state, 0, FailureKind::Timeout), Some(10.0));
    assert_eq!(kind.try_retry(&mut state, 0, FailureKind::Transient), Some(5.0));
    // 485 tokens left: 97 more transient retries fit, the 98th does not.
    let granted = (0..200).filter(|_| kind.try_retry(&mut state, 0, FailureKind::Transient).is_some()).count();
    assert_eq!(granted, 97);
}

#[test]
fn grpc_throttling_stops_exactly_when_tokens_fall_to_half() {
    let kind = BudgetKind::GrpcThrottle { max_tokens: 10.0, token_ratio: 0.1 };
    let mut state = kind.new_state();
    // 10 tokens; each failure spends 1: after 4 failures 6 > 5 still allows, after 5 (tokens = 5) not.
    for failures in 1..=5 {
        kind.on_failure(&mut state, FailureKind::Transient, true);
        let allowed = kind.try_retry(&mut state, 0, FailureKind::Transient).is_some();
        assert_eq!(allowed, failures < 5, "after {failures} failures");
    }
    // One success adds 0.1: 5.1 > 5 allows again.
    kind.on_success(&mut state, 0, None);
    assert!(kind.try_retry(&mut state, 0, FailureKind::Transient).is_some());
}

#[test]
fn finagle_allows_twenty_percent_plus_ten_per_second() {
    let kind = BudgetKind::Finagle { ttl: 10 * NS_PER_S, percent: 0.2, min_retries_per_s: 10.0 };
    let mut state = kind.new_state();
    // 1,000 successful requests spread over 5 s, then retries at 5 s: 0.2 × 1000 + 10/s × 10 s
    // = 300 allowed. (finagle ≥ 20.8.1 deposits when a request succeeds, not when it starts:
    // requests that only start deposit nothing.)
    for i in 0..1000u64 {
        kind.on_request(&mut state, i * 5 * NS_PER_MS);
    }
    assert_eq!(kind.balance(&mut state, 5 * NS_PER_S), Some(100.0), "started requests deposit nothing");
    for i in 0..1000u64 {
        kind.on_success(&mut state, i * 5 * NS_PER_MS, None);
    }
    let now = 5 * NS_PER_S;
    let granted = (0..1000).filter(|_| kind.try_retry(&mut state, now, FailureKind::Transient).is_some()).count();
    assert_eq!(granted, 300);
    // Deposits expire after the ttl: 20 s later only the reserve (100) is left.
    let later = 30 * NS_PER_S;
    let granted = (0..1000).filter(|_| kind.try_retry(&mut state, later, FailureKind::Transient).is_some()).count();
    assert_eq!(granted, 100);
}

#[test]
fn ratio_budget_caps_retries_at_the_ratio_of_requests() {
    let kind = BudgetKind::Ratio { ratio: 0.1, min_retries: 0.0, window: 10 * NS_PER_S };
    let mut state = kind.new_state();
    for i in 0..500u64 {
        kind.on_request(&mut state, i * NS_PER_MS);
    }
    let granted = (0..500).filter(|_| kind.try_retry(&mut state, NS_PER_S, FailureKind::Transient).is_some()).count();
    assert_eq!(granted, 50);
}

#[test]
fn adaptive_throttle_rejects_with_the_sre_probability() {
    let kind = BudgetKind::AdaptiveThrottle { k: 2.0, window: 120 * NS_PER_S };
    let mut state = kind.new_state();
    // 100 requests, 30 accepted: the next request is rejected with p = (100 − 60)/(100 + 1).
    for _ in 0..100 {
        kind.local_reject_probability(&mut state, 0);
    }
    for _ in 0..30 {
        kind.on_success(&mut state, 0, None);
    }
    let p = kind.local_reject_probability(&mut state, 0);
    assert!((p - 40.0 / 101.0).abs() < 1e-12, "p = {p}");
    // All accepted: never reject.
    let mut healthy = kind.new_state();
    for _ in 0..50 {
        assert_eq!(kind.local_reject_probability(&mut healthy, 0), 0.0);
        kind.on_success(&mut healthy, 0, None);
    }
}

#[test]
fn breaker_opens_half_opens_and_closes_on_the_documented_counts() {
    let spec = BreakerSpec {
        scope: Scope::Global,
        window: 10 * NS_PER_S,
        threshold: 0.5,
        min_calls: 10,
        open_for: 5 * NS_PER_S,
        probes: 3,
        retries_only: false,
    };
    let mut s = spec.new_state();
    // 9 failures: below min_calls, stays closed.
    for _ in 0..9 {
        assert!(spec.allow(&mut s, 0));
        spec.record(&mut s, 0, false);
    }
    assert_eq!(s.position, BreakerPosition::Closed);
    // The 10th call makes 10 calls with ratio 1 ≥ 0.5: open until 5 s.
    spec.record(&mut s, NS_PER_S, false);
    assert_eq!(s.position, BreakerPosition::Open { until: 6 * NS_PER_S });
    assert!(!spec.allow(&mut s, 5 * NS_PER_S));
    // At 6 s it half-opens and lets exactly 3 probes through.
    let admitted = (0..5).filter(|_| spec.allow(&mut s, 6 * NS_PER_S)).count();
    assert_eq!(admitted, 3);
    // Three successful probes close it.
    for _ in 0..3 {
        spec.record(&mut s, 6 * NS_PER_S, true);
    }
    assert_eq!(s.position, BreakerPosition::Closed);
    // A failed probe re-opens it.
    let mut t = spec.new_state();
    t.position = BreakerPosition::HalfOpen { sent: 1, succeeded: 0 };
    spec.record(&mut t, 7 * NS_PER_S, false);
    assert_eq!(t.position, BreakerPosition::Open { until: 12 * NS_PER_S });
}

#[test]
fn token_bucket_pays_one_per_retry_and_refills_per_request() {
    let kind = BudgetKind::TokenBucket { capacity: 5.0, per_request: 0.1 };
    let mut state = kind.new_state();
    let granted = (0..10).filter(|_| kind.try_retry(&mut state, 0, FailureKind::Transient).is_some()).count();
    assert_eq!(granted, 5);
    for _ in 0..10 {
        kind.on_request(&mut state, 0);
    }
    assert!(kind.try_retry(&mut state, 0, FailureKind::Transient).is_some());
    assert!(kind.try_retry(&mut state, 0, FailureKind::Transient).is_none());
}

/// Rule: the memory estimate prices one budget state at its bytes: 16 for the token kinds (the
/// `f64` tokens and the empty window pointer), and for the windowed kinds those 16 plus the
/// boxed window, 96 bytes (two `u32` counters in each of 10 slots, the slot width and index),
/// plus the allocator's 16-byte header: 128. Kills the `state_bytes` mutants of cargo-mutants
/// (→ 0, → 1, and `+` → `-` or `*` at either sum).
#[test]
fn a_budget_state_is_priced_at_its_bytes_and_its_boxed_window() {
    const S: u64 = NS_PER_S;
    let token_kinds = [
        preset("aws-standard").budget.expect("quota").kind,
        BudgetKind::GrpcThrottle { max_tokens: 10.0, token_ratio: 0.1 },
        BudgetKind::TokenBucket { capacity: 5.0, per_request: 0.1 },
    ];
    for kind in token_kinds {
        assert_eq!(kind.state_bytes(), 16, "{}", kind.name());
    }
    let windowed = [
        BudgetKind::Finagle { ttl: 10 * S, percent: 0.2, min_retries_per_s: 10.0 },
        BudgetKind::Ratio { ratio: 0.1, min_retries: 0.0, window: 10 * S },
        BudgetKind::AdaptiveThrottle { k: 2.0, window: 120 * S },
    ];
    for kind in windowed {
        assert_eq!(kind.state_bytes(), 16 + (8 + 8 + 10 * 2 * 4) + 16, "{}", kind.name());
    }
}

/// gRFC A6, one arithmetic for the retry budget and the hedge throttle: full at the start,
/// one token per failure (never below 0), `token_ratio` per success (never above the size),
/// allowed only while strictly more than half is left.
#[test]
fn grpc_tokens_allow_strictly_above_half_and_move_by_one_and_the_ratio() {
    let t = GrpcTokens { max_tokens: 10.0, token_ratio: 0.5 };
    let kind = BudgetKind::GrpcThrottle { max_tokens: 10.0, token_ratio: 0.5 };
    let mut state = kind.new_state();
    let mut tokens = t.max_tokens;
    assert_eq!(state.tokens, tokens, "both start full");
    let mut allowed = Vec::new();
    for _ in 0..6 {
        allowed.push(t.allows(tokens));
        assert_eq!(kind.try_retry(&mut state, 0, FailureKind::Transient).is_some(), t.allows(tokens));
        tokens = GrpcTokens::after_failure(tokens);
        kind.on_failure(&mut state, FailureKind::Transient, true);
        assert_eq!(state.tokens, tokens);
    }
    // 10, 9, 8, 7, 6 are above half; 5 is not.
    assert_eq!(allowed, [true, true, true, true, true, false]);
    assert_eq!(tokens, 4.0);
    assert!(t.allows(t.after_success(t.after_success(t.after_success(tokens)))), "5.5 > 5");
    assert_eq!(GrpcTokens::after_failure(0.5), 0.0);
    assert_eq!(t.after_success(9.8), 10.0);
}

/// Envoy's `RetryBudgetImpl` (source/common/upstream/resource_manager_impl.h): `canCreate()` is
/// `count() < max()`, `max()` = max(budget_percent / 100 × (active + pending), min_retry_concurrency)
/// converted to `uint64_t` (truncated); the retry resource is taken when a retry is granted and
/// given back when its outcome is known or the request ends (router/retry_state_impl.cc
/// `resetRetry`). Worked by hand: 40 active at 20% → 8; 14 → ⌊2.8⌋ = 2 < 3 → 3; 24 → 4.
#[test]
fn concurrent_retries_cap_outstanding_retries_as_envoys_retry_budget() {
    assert_eq!(concurrent_retry_limit(20.0, 3, 40), 8);
    assert_eq!(concurrent_retry_limit(20.0, 3, 14), 3);
    assert_eq!(concurrent_retry_limit(20.0, 3, 24), 4);
    assert_eq!(concurrent_retry_limit(0.0, 3, 1_000), 3, "budget_percent 0 is the max_retries breaker");
    let kind = BudgetKind::ConcurrentRetries { budget_percent: 20.0, min_retry_concurrency: 3 };
    let mut state = kind.new_state();
    for _ in 0..40 {
        kind.on_request(&mut state, 0);
    }
    assert_eq!(state.tokens, 8.0, "8 slots free");
    let granted = (0..20).filter(|_| kind.try_retry(&mut state, 0, FailureKind::Transient).is_some()).count();
    assert_eq!((granted, state.tokens), (8, 0.0));
    // One outcome known: its slot is free again; a call ending with its retry held frees one too,
    // and the active count falls: 39 active → ⌊7.8⌋ = 7, with 6 outstanding → 1 free.
    kind.on_retry_settled(&mut state);
    assert!(kind.try_retry(&mut state, 0, FailureKind::Timeout).is_some());
    assert!(kind.try_retry(&mut state, 0, FailureKind::Timeout).is_none());
    kind.on_call_end(&mut state, true);
    kind.on_call_end(&mut state, false);
    assert_eq!(state.tokens, 0.0, "38 active → 7, 7 outstanding");
    kind.on_call_end(&mut state, true);
    assert_eq!(state.tokens, 1.0, "37 active → 7, 6 outstanding");
    // Nothing else moves it: successes, failures and the window-free local check.
    kind.on_success(&mut state, 0, Some(1.0));
    kind.on_failure(&mut state, FailureKind::Transient, true);
    assert_eq!(kind.local_reject_probability(&mut state, 0), 0.0);
    assert_eq!(state.tokens, 1.0);
    // Its counts ride beside the window's slot width: the state is priced as a windowed one.
    assert_eq!(kind.state_bytes(), 16 + (8 + 8 + 10 * 2 * 4) + 16);
}
