//! `late_reply = "accept"` against hand-computed timelines: one client, one worker, constant
//! service, no network delay, un-jittered backoff, so every instant below is exact.

mod common;

use retrystorm::model::sim::run;
use retrystorm::scenario::Scenario;

/// One request at t = 0 into one worker of constant 300 ms service; 3 attempts with a 200 ms
/// attempt timeout and un-jittered exponential backoff from `base_ms`; `late` is the policy's
/// late-reply choice ("" leaves the default).
fn probe(base_ms: u64, late: &str) -> retrystorm::metrics::RunRecord {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = format!(
        "jitter = \"exponential\"\nbase = \"{base_ms}ms\"\nmax_attempts = 3\nattempt_timeout = \"200ms\"\n{late}"
    );
    let s = common::trace_probe(dir.path(), &[0], &policy, 1, r#"{ dist = "constant", mean = "300ms" }"#, "");
    run(&s.base, s.seed, 0)
}

const MS: u64 = 1_000_000;

#[test]
fn a_late_success_ends_the_request_and_the_attempt_it_waits_on_loses() {
    // Backoff 50 ms, then 100 ms. Hand timeline:
    //   0    attempt 1 sent, served 0–300
    //   200  attempt 1 times out; retry 1 after 50 ms
    //   250  attempt 2 sent, queued behind attempt 1
    //   300  attempt 1's success arrives late.
    // ignore (today): dropped; attempt 2 served 300–600, times out at 450, retry 2 at 550
    //   (queued), attempt 2's reply dropped at 600, attempt 3 served 600–900, times out at 750:
    //   no attempts left, the request goes to the DLQ at 750; all 900 ms of service wasted on
    //   callers that had timed out.
    // accept: the request succeeds at 300 (latency 300 ms from its creation); attempt 2 loses
    //   (its caller stops waiting) and its 300 ms of service (300–600) are wasted as a losing
    //   copy's; no third attempt.
    let ignore = probe(50, "");
    assert_eq!(format!("{:?}", ignore.tenants[0]), format!("{:?}", probe(50, "late_reply = \"ignore\"").tenants[0]));
    let (t, h) = (&ignore.tenants[0], &ignore.hops[0]);
    assert_eq!((t.succeeded, t.dlq, t.attempts, t.retries), (0, 1, 3, 2));
    assert_eq!((h.timely_ok, h.ok_replies), (0, 3));
    assert_eq!((h.wasted_timed_out_ns, h.wasted_hedge_ns), (900 * MS, 0));
    assert_eq!(ignore.completion_time_ns, 750 * MS, "the DLQ at attempt 3's timeout");

    let accept = probe(50, "late_reply = \"accept\"");
    let (t, h) = (&accept.tenants[0], &accept.hops[0]);
    assert_eq!((t.succeeded, t.dlq, t.attempts, t.retries), (1, 0, 2, 1));
    assert_eq!(t.latency_sum_us, 300_000, "latency from the request's creation to the late reply");
    assert_eq!((h.timely_ok, h.ok_replies), (1, 2), "the late success reached a caller that took it");
    assert_eq!((h.wasted_timed_out_ns, h.wasted_hedge_ns), (0, 300 * MS), "attempt 2 ran 300–600 for nobody");
    assert_eq!(accept.completion_time_ns, 300 * MS);
}

#[test]
fn a_late_success_during_the_backoff_cancels_the_pending_retry() {
    // Backoff 150 ms: attempt 1 times out at 200 and its retry is due at 350; the late success
    // arrives at 300, during the backoff. accept: the request succeeds at 300 and the retry
    // never fires (one attempt, one retry scheduled, none fired). ignore: attempt 2 at 350,
    // served 350–650, times out at 550; retry 2 after 300 ms at 850, served 850–1150, times out
    // at 1050: DLQ.
    let ignore = probe(150, "");
    let t = &ignore.tenants[0];
    assert_eq!((t.succeeded, t.dlq, t.attempts), (0, 1, 3));
    assert_eq!(ignore.completion_time_ns, 1_050 * MS);

    let accept = probe(150, "late_reply = \"accept\"");
    let (t, h) = (&accept.tenants[0], &accept.hops[0]);
    assert_eq!((t.succeeded, t.dlq, t.attempts, t.retries), (1, 0, 1, 0));
    assert_eq!(t.latency_sum_us, 300_000);
    let scheduled: u64 = accept.hop_series[0].iter().map(|b| u64::from(b.retries_scheduled)).sum();
    let fired: u64 = accept.hop_series[0].iter().map(|b| u64::from(b.retries_fired)).sum();
    assert_eq!((scheduled, fired), (1, 0), "the retry was scheduled at 200 and cancelled at 300");
    assert_eq!((h.wasted_timed_out_ns, h.wasted_hedge_ns), (0, 0));
}

#[test]
fn a_late_failure_is_dropped_and_late_reply_refuses_cancel_on_timeout() {
    // A 503 that arrives after its timeout is no answer to take: the request goes on as under
    // `ignore` (every attempt fails; 3 attempts, DLQ).
    let dir = tempfile::tempdir().expect("temp dir");
    let text = |policy: &str| {
        format!(
            r#"name = "late"
horizon = "3s"
[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "herd", spread = "0s" }}
policy = "p"
[policy.p]
jitter = "exponential"
base = "50ms"
max_attempts = 3
attempt_timeout = "200ms"
{policy}
[[hop]]
name = "server"
service = {{ dist = "constant", mean = "300ms" }}
[[fault]]
hop = "server"
kind = "error_rate"
p = 1.0
from = "0s"
to = "1h"
"#
        )
    };
    let file = dir.path().join("late.toml");
    let parse = |policy: &str| Scenario::from_source(file.to_str().expect("utf-8"), &text(policy), &[]);
    let s = parse("late_reply = \"accept\"").unwrap_or_else(|e| panic!("{e}"));
    let r = run(&s.base, s.seed, 0);
    assert_eq!((r.tenants[0].succeeded, r.tenants[0].dlq, r.tenants[0].attempts), (0, 1, 3));

    let Err(e) = parse("late_reply = \"accept\"\ncancel_on_timeout = true") else { panic!("refused") };
    let message = e.to_string();
    assert!(message.contains("late_reply") && message.contains("cancel_on_timeout"), "{message}");
    let Err(e) = parse("late_reply = \"sometimes\"") else { panic!("refused") };
    let message = e.to_string();
    assert!(message.contains("late_reply") && message.contains("accept") && message.contains("ignore"), "{message}");
}
