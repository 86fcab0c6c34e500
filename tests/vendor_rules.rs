//! Presets and budgets against their vendors' rules, each transcribed here from the source it
//! cites (docs/PRESETS.md), not from the simulator: gRFC A6's retry throttle charges only the
//! failures the server answered with a status, and Finagle's `RequeueFilter` (≥ 20.8.1) deposits
//! into its `RetryBudget` only for a successful request.

mod common;

use retrystorm::model::sim::run;
use retrystorm::scenario::Scenario;

/// [`common::trace_probe`] in a fresh directory, service constant `service`.
fn probe(times_ms: &[u64], policy: &str, workers: u32, service: &str, extra: &str) -> Scenario {
    let dir = tempfile::tempdir().expect("temp dir");
    let service = format!("{{ dist = \"constant\", mean = \"{service}\" }}");
    common::trace_probe(dir.path(), times_ms, policy, workers, &service, extra)
}

// ---------------------------------------------------------------------------------------------
// gRFC A6 retry throttling

/// What one attempt of an RPC ended with, as gRFC A6's throttle sees it.
#[derive(Clone, Copy)]
enum A6Outcome {
    Ok,
    /// The server answered with a status; `retryable` when it is in the policy's retryable set.
    Status {
        retryable: bool,
    },
    /// The client gave up (attempt timeout or deadline): no status came back from the server.
    ClientTimeout,
}

/// gRFC A6 ("Throttling Retry Attempts and Hedged RPCs"), transcribed: `token_count` starts at
/// `max_tokens`; "each failed RPC with a status in the retryable set decrements token_count by
/// 1" (not below 0); "each successful RPC increments token_count by token_ratio" (not above
/// `max_tokens`); a retry is sent only while `token_count > max_tokens / 2`. A client-side
/// timeout carries no status from the server and so is no such failure. `outcome(r, a)` is
/// attempt `a` (from 1) of request `r`; requests go one at a time, each at most `max_attempts`
/// attempts. Returns the retries sent.
fn reference_a6(
    requests: usize,
    max_attempts: u32,
    max_tokens: f64,
    token_ratio: f64,
    outcome: impl Fn(usize, u32) -> A6Outcome,
) -> u64 {
    let mut tokens = max_tokens;
    let mut retries = 0;
    for r in 0..requests {
        for attempt in 1..=max_attempts {
            match outcome(r, attempt) {
                A6Outcome::Ok => {
                    tokens = (tokens + token_ratio).min(max_tokens);
                    break;
                }
                A6Outcome::Status { retryable: true } => tokens = (tokens - 1.0).max(0.0),
                A6Outcome::Status { retryable: false } => break,
                A6Outcome::ClientTimeout => {}
            }
            if attempt == max_attempts || tokens <= max_tokens / 2.0 {
                break;
            }
            retries += 1;
        }
    }
    retries
}

#[test]
fn a_grpc_throttle_is_not_charged_for_attempts_the_client_timed_out() {
    // 20 requests, one a second, 3 attempts each with no backoff, a 100 ms attempt timeout and a
    // `grpc_throttle` budget (10 tokens, 0.1 per success). For the first 10 s the server is slow
    // (300 ms of service: every attempt times out at the client); from 10 s it is in an outage
    // (every attempt refused: UNAVAILABLE, retryable). A6 charges the refusals only: the slow
    // spell leaves the bucket full (every request retries twice) and the outage then drains it
    // as for any failing server. Charging the timeouts (the simulator before) closed the
    // throttle within the slow spell: 3 retries in all instead of 23. From 20 s the server is
    // fast again (1 ms: `slow` ends), and the 5 requests then succeed at once.
    let times: Vec<u64> = (0..25).map(|k| 1_000 * k).collect();
    let policy = "jitter = \"none\"\nmax_attempts = 3\nattempt_timeout = \"100ms\"\n\
                  budget = { kind = \"grpc_throttle\", scope = \"global\" }";
    let faults = "[[fault]]\nhop = \"server\"\nkind = \"slow\"\nfactor = 300.0\nfrom = \"0s\"\nto = \"10s\"\n\
                  [[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"10s\"\nto = \"20s\"";
    let s = probe(&times, policy, 4, "1ms", faults);
    let r = run(&s.base, s.seed, 0);
    let expected = reference_a6(25, 3, 10.0, 0.1, |request, _| match request {
        0..10 => A6Outcome::ClientTimeout,
        10..20 => A6Outcome::Status { retryable: true },
        _ => A6Outcome::Ok,
    });
    assert_eq!(expected, 10 * 2 + 3, "the reference: 2 retries per slow request, then 2 + 1 in the outage");
    assert_eq!(r.tenants[0].retries, expected);
    assert_eq!((r.tenants[0].attempts, r.tenants[0].succeeded), (25 + expected, 5));
}

#[test]
fn a_grpc_throttle_is_charged_only_for_the_failures_its_policy_retries() {
    // A6 counts a failure "with a status in the retryable set". A policy that retries timeouts
    // only (`retry_on = ["timeout"]`) meets 503s (an error_rate fault, p = 1): none is retried and
    // none is charged, so when the server turns slow afterwards (a 300 ms service against a
    // 100 ms timeout) every request still retries twice. Here the 503s come first (0–10 s), the
    // timeouts after.
    let times: Vec<u64> = (0..20).map(|k| 1_000 * k).collect();
    let policy = "jitter = \"none\"\nmax_attempts = 3\nattempt_timeout = \"100ms\"\nretry_on = [\"timeout\"]\n\
                  budget = { kind = \"grpc_throttle\", scope = \"global\" }";
    let errors = "[[fault]]\nhop = \"server\"\nkind = \"error_rate\"\np = 1.0\nfrom = \"0s\"\nto = \"10s\"\n\
                  [[fault]]\nhop = \"server\"\nkind = \"slow\"\nfactor = 300.0\nfrom = \"10s\"\nto = \"100s\"";
    let s = probe(&times, policy, 4, "1ms", errors);
    let r = run(&s.base, s.seed, 0);
    let expected = reference_a6(20, 3, 10.0, 0.1, |request, _| {
        if request < 10 {
            A6Outcome::Status { retryable: false }
        } else {
            A6Outcome::ClientTimeout
        }
    });
    assert_eq!(expected, 10 * 2);
    assert_eq!(r.tenants[0].retries, expected);
}

// ---------------------------------------------------------------------------------------------
// Finagle's RetryBudget as RequeueFilter feeds it (finagle ≥ 20.8.1)

/// finagle-core `service/RequeueFilter.scala` at commit f3a7326 ("Retry budgets: only deposit
/// on success") and later, over `service/RetryBudget.scala`'s token bucket, in its integer units
/// (1,000 to a retry): `apply` sizes a request's requeues as `ceil(0.2 × balance)` (balance =
/// tokens / 1000, integer division) with no deposit first; each requeue withdraws 1,000 when the
/// bucket holds it; when the request's response is classified `Successful` it deposits
/// `percent × 1000`, and a failed one deposits nothing. The reserve is
/// `min_retries_per_s × ttl × 1000`; everything lies within one ttl (nothing expires). A request
/// either succeeds at once (`refused(i)` false) or has every attempt refused. Returns the
/// attempts of each request.
fn reference_requeue_filter(
    requests: usize,
    percent: f64,
    min_retries_per_s: u64,
    ttl_s: u64,
    refused: impl Fn(usize) -> bool,
) -> Vec<u64> {
    let mut tokens: i64 = (min_retries_per_s * ttl_s * 1_000) as i64;
    let deposit = (percent * 1_000.0) as i64;
    (0..requests)
        .map(|i| {
            let mut left = (0.2 * (tokens / 1_000) as f64).ceil() as u64;
            let mut attempts = 1;
            if refused(i) {
                while left > 0 && tokens >= 1_000 {
                    tokens -= 1_000;
                    left -= 1;
                    attempts += 1;
                }
            } else {
                tokens += deposit;
            }
            attempts
        })
        .collect()
}

#[test]
fn finagle_deposits_into_its_budget_only_for_successful_requests() {
    // 90 requests, one every 100 ms (all within the 10 s ttl), under the `finagle` preset into a
    // hop that answers in 1 ms, except in an outage from 1 s to 2 s and again from 6 s to 7 s
    // (connections refused: Finagle requeues them at once from its budget). The 50 successful
    // requests deposit 0.2 each; the refused ones nothing. Depositing on every request (finagle
    // before 20.8.1, and the simulator before) gave the second outage's requests 4 more tokens.
    let times: Vec<u64> = (0..90).map(|i| i * 100).collect();
    let refused = |i: usize| (10..20).contains(&i) || (60..70).contains(&i);
    let outages = "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"1s\"\nto = \"2s\"\n\
                   [[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"6s\"\nto = \"7s\"";
    let s = probe(&times, "preset = \"finagle\"", 1, "1ms", outages);
    let r = run(&s.base, s.seed, 0);
    let expected = reference_requeue_filter(times.len(), 0.2, 10, 10, refused);
    let t = &r.tenants[0];
    assert_eq!(t.succeeded, 70);
    for (i, want) in expected.iter().enumerate() {
        let b = (times[i] * 1_000_000 / s.base.bucket) as usize;
        assert_eq!(u64::from(r.hop_series[0][b].attempts), *want, "request {i}'s attempts (reference {expected:?})");
    }
    assert_eq!(t.attempts, expected.iter().sum::<u64>());
}
