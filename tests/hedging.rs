//! Hedged requests and cancellation propagation against exact accounting and the
//! order statistics of exponential service times ("The Tail at Scale").

mod common;
use common::{metric, scenario, t_interval, values};
use retrystorm::metrics::RunRecord;
use retrystorm::model::sim::run;
use retrystorm::scenario::Scenario;

const NS: f64 = 1e9;

fn spec(toml: &str) -> Scenario {
    Scenario::from_source("test.toml", toml, &[]).unwrap_or_else(|e| panic!("{e}"))
}

fn records(s: &Scenario) -> Vec<RunRecord> {
    (0..u64::from(s.replications)).map(|r| run(&s.base, s.seed, r)).collect()
}

/// The file up to the client policy's table: `clients` herd clients sending one request each
/// from t = 0 (spread over `spread`), policy `p`.
fn header(clients: u32, spread: &str) -> String {
    format!(
        r#"
name = "t"
seed = 7
horizon = "20s"
bucket = "100ms"
replications = 1
[[tenant]]
name = "c"
clients = {clients}
arrival = {{ kind = "herd", start = "0s", spread = "{spread}", requests_per_client = 1 }}
policy = "p"
[policy.p]
"#
    )
}

/// One hop behind [`header`].
fn one_hop(clients: u32, spread: &str, workers: u32, policy: &str, service: &str) -> String {
    format!(
        r#"{}{policy}
[[hop]]
name = "server"
workers = {workers}
service = {service}
network = {{ dist = "constant", mean = "0s" }}
"#,
        header(clients, spread)
    )
}

const CONSTANT_100MS: &str = r#"{ dist = "constant", mean = "100ms" }"#;

#[test]
fn cancellation_stops_service_at_the_timeout_and_drops_queued_work() {
    // 200 requests spread over 10 s, 1,000 workers (no queue), constant 100 ms service, a 50 ms
    // attempt timeout and 3 attempts: every attempt times out. Without cancellation each
    // attempt's full 100 ms is wasted (timed out); with it the worker stops at 50 ms, so the
    // hop is busy exactly 50 ms per attempt, all of it wasted (cancelled).
    let policy = r#"jitter = "none"
base = "10ms"
max_attempts = 3
attempt_timeout = "50ms""#;
    for cancel in [false, true] {
        let p = format!("{policy}\ncancel_on_timeout = {cancel}");
        let r = &records(&spec(&one_hop(200, "10s", 1000, &p, CONSTANT_100MS)))[0];
        let h = &r.hops[0];
        assert_eq!(h.attempts, 600);
        let per = if cancel { 0.05 } else { 0.1 };
        assert!((h.busy_ns as f64 / NS - 600.0 * per).abs() < 1e-9, "cancel {cancel}: busy {}", h.busy_ns);
        assert_eq!(h.wasted_work_ns, h.busy_ns);
        let (timed_out, cancelled) = if cancel { (0, h.busy_ns) } else { (h.busy_ns, 0) };
        assert_eq!((h.wasted_timed_out_ns, h.wasted_cancelled_ns), (timed_out, cancelled));
        assert_eq!(h.cancelled, if cancel { 600 } else { 0 });
        assert_eq!(h.served, if cancel { 0 } else { 600 });
    }
    // One worker, 10 requests at once, 1 attempt: with cancellation the first is stopped at
    // 50 ms and the 9 queued are dropped unserved at the same instant: 50 ms of work in all
    // (FIFO without cancellation serves all ten: 1 s).
    let p = "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"50ms\"\ncancel_on_timeout = true";
    let r = &records(&spec(&one_hop(10, "0s", 1, p, CONSTANT_100MS)))[0];
    assert_eq!((r.hops[0].busy_ns, r.hops[0].cancelled), (50_000_000, 10));
    assert_eq!(r.tenants[0].dlq, 10);
}

/// client → front (10 ms, 1,000 workers) → back (100 ms): 100 requests over 10 s, one attempt
/// each; the client gives up after 50 ms (cancelling if `cancel`), the front after 1 s; network
/// delays `front_net` and `back_net` (constant).
fn chain(cancel: bool, front_net: &str, back_net: &str) -> String {
    format!(
        r#"{}jitter = "none"
max_attempts = 1
attempt_timeout = "50ms"
cancel_on_timeout = {cancel}
[policy.inner]
jitter = "none"
max_attempts = 1
attempt_timeout = "1s"
[[hop]]
name = "front"
workers = 1000
service = {{ dist = "constant", mean = "10ms" }}
network = {{ dist = "constant", mean = "{front_net}" }}
downstream_policy = "inner"
[[hop]]
name = "back"
workers = 1000
service = {{ dist = "constant", mean = "100ms" }}
network = {{ dist = "constant", mean = "{back_net}" }}
"#,
        header(100, "10s")
    )
}

#[test]
fn cancellation_propagates_down_the_chain() {
    // client → front (10 ms) → back (100 ms). The client gives up after 50 ms; the front's own
    // call to the back would wait 1 s. With cancellation on the client's policy, the front's
    // attempt (waiting downstream) is cancelled at 50 ms and with it the back's attempt, which
    // had served 40 ms of its 100 ms: wasted 10 ms at the front and 40 ms at the back, per
    // attempt. Without it, the back finishes (its caller, the front, was still waiting: not
    // wasted there) and the front's 10 ms is wasted (its caller had gone).
    let toml = |cancel: bool| chain(cancel, "0s", "0s");
    let ms = |ns: u64| ns as f64 / 1e6;
    let off = &records(&spec(&toml(false)))[0];
    assert_eq!(ms(off.hops[0].wasted_timed_out_ns), 100.0 * 10.0);
    assert_eq!((off.hops[1].wasted_work_ns, off.hops[1].busy_ns), (0, 100 * 100_000_000));
    let on = &records(&spec(&toml(true)))[0];
    assert_eq!((ms(on.hops[0].wasted_cancelled_ns), ms(on.hops[0].wasted_timed_out_ns)), (100.0 * 10.0, 0.0));
    assert_eq!(ms(on.hops[1].wasted_cancelled_ns), 100.0 * 40.0);
    assert_eq!(ms(on.hops[1].busy_ns), 100.0 * 40.0);
    assert_eq!((on.hops[0].cancelled, on.hops[1].cancelled), (100, 100));
}

#[test]
fn a_cancel_travels_with_the_hops_network_delay_down_the_chain() {
    // The chain above with network delays: 3 ms each way to the front, 7 ms to the back. The
    // client's attempt leaves at t and reaches the front at t + 3; the front serves 10 ms and
    // calls the back at t + 13, which starts its 100 ms service at t + 20. The client gives up
    // at t + 50; its cancel reaches the front at t + 53 (one front network delay, as a reply
    // would take), and the front's cancel of its call reaches the back at t + 60: the back
    // serves from t + 20 to t + 60, 40 ms (with instant cancels it would stop at t + 50: 30 ms).
    let ms = |ns: u64| ns as f64 / 1e6;
    let r = &records(&spec(&chain(true, "3ms", "7ms")))[0];
    // The front's attempt: 10 ms served, then waiting downstream when its cancel arrives.
    assert_eq!(ms(r.hops[0].wasted_cancelled_ns), 100.0 * 10.0);
    // The back: from t + 20 to t + 60 (cancels after 3 ms + 7 ms of network); an instant cancel
    // would have stopped it at t + 50, after 30 ms.
    assert_eq!(ms(r.hops[1].wasted_cancelled_ns), 100.0 * 40.0);
    assert_eq!(ms(r.hops[1].busy_ns), 100.0 * 40.0);
    assert_eq!((r.hops[0].cancelled, r.hops[1].cancelled), (100, 100));
    // A queued attempt leaves the queue only when its cancel arrives: one worker, ten attempts
    // at once, a 50 ms timeout and 5 ms of network: the first is served from 5 ms to its cancel
    // at 55 ms (50 ms; an instant cancel: 45 ms); at that instant the others' cancels arrive too.
    let p = "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"50ms\"\ncancel_on_timeout = true";
    let one = one_hop(10, "0s", 1, p, CONSTANT_100MS).replace(r#"mean = "0s""#, r#"mean = "5ms""#);
    let r = &records(&spec(&one))[0];
    assert_eq!((r.hops[0].busy_ns, r.hops[0].cancelled), (50_000_000, 10));
    assert_eq!(r.hops[0].wasted_cancelled_ns, 50_000_000);
}

#[test]
fn hedging_is_capped_at_max_share_when_every_attempt_wants_a_hedge() {
    // Constant 100 ms service, hedge after 50 ms: every attempt is still unanswered at 50 ms,
    // so every one asks for a hedge and the token bucket (max_share = 0.1 per attempt) decides.
    // The share hedged must be 0.1 within a binomial tolerance (4σ of a share over n attempts;
    // the bucket is in fact tighter: at most its 10 saved tokens off).
    let policy =
        "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"1s\"\nhedge = { after = \"50ms\", max_share = 0.1 }";
    let r = &records(&spec(&one_hop(5000, "10s", 1000, policy, CONSTANT_100MS)))[0];
    let h = &r.hops[0];
    let first = h.first_attempts as f64;
    let share = h.hedges as f64 / first;
    let tol = 4.0 * (0.1 * 0.9 / first).sqrt();
    assert!((share - 0.1).abs() < tol, "hedged share {share} vs 0.1 ± {tol}");
    assert_eq!(h.attempts, h.first_attempts + h.hedges, "hedges count as attempts");
    // The original always wins (same service, sent 50 ms earlier): each hedge's 100 ms is wasted.
    assert_eq!(h.wasted_hedge_ns, h.hedges * 100_000_000);
    assert_eq!(r.tenants[0].succeeded, 5000);
}

/// Exponential service Exp(μ), no queueing, hedge after d, no cap: the latency is
/// T = min(S₁, d + S₂), so P(T > t) = e^{−μt} before d and e^{−μ(2t−d)} after.
fn hedged_tail(mu: f64, d: f64, p: f64) -> f64 {
    let before = -(1.0 - p).ln() / mu;
    if before < d {
        before
    } else {
        (d - (1.0 - p).ln() / mu) / 2.0
    }
}

#[test]
fn hedging_cuts_the_exponential_tail_as_the_minimum_of_two_services() {
    // Low load: 1,000 workers, 20,000 requests over 100 s (200/s × 10 ms = 2 busy). μ = 100/s,
    // d = 10 ms (μd = 1). Theory: E[T] = (1 − e^{−μd})/μ + e^{−μd}/(2μ) = 8.16 ms (10 ms
    // without hedging); p99 = (d + ln 100 / μ)/2 = 28.0 ms (46.1 ms); the share hedged is
    // P(S > d) = e^{−1} = 0.368. 8 replications; theory inside the 99% t-interval of the
    // replication means (p99: within 3 significant digits of the histogram too).
    let (mu, d) = (100.0_f64, 0.010_f64);
    let policy = "jitter = \"none\"\nmax_attempts = 1\nhedge = { after = \"10ms\", max_share = 1.0 }";
    let exp10 = r#"{ dist = "exponential", mean = "10ms" }"#;
    let mut s = spec(
        &one_hop(20_000, "100s", 1000, policy, exp10)
            .replace("horizon = \"20s\"", "horizon = \"110s\"")
            .replace("replications = 1", "replications = 8"),
    );
    s.replications = 8;
    let runs = records(&s);
    let mean_theory = (1.0 - (-mu * d).exp()) / mu + (-mu * d).exp() / (2.0 * mu);
    let means: Vec<f64> = runs.iter().map(|r| r.tenants[0].latency_us.to_histogram().mean() / 1e6).collect();
    let (lo, hi) = t_interval(&means, 0.99);
    assert!(lo <= mean_theory && mean_theory <= hi, "mean [{lo}, {hi}] vs {mean_theory}");
    let p99s: Vec<f64> =
        runs.iter().map(|r| r.tenants[0].latency_us.to_histogram().value_at_quantile(0.99) as f64 / 1e6).collect();
    let p99 = hedged_tail(mu, d, 0.99);
    let (lo, hi) = t_interval(&p99s, 0.99);
    assert!(lo * 0.999 <= p99 && p99 <= hi * 1.001, "p99 [{lo}, {hi}] vs {p99}");
    assert!(hi < 0.7 * (100.0_f64.ln() / mu), "the tail is cut from 46 ms");
    let shares: Vec<f64> = runs.iter().map(|r| r.hops[0].hedges as f64 / r.hops[0].first_attempts as f64).collect();
    let (lo, hi) = t_interval(&shares, 0.99);
    let e1 = (-1.0_f64).exp();
    assert!(lo <= e1 && e1 <= hi, "hedged share [{lo}, {hi}] vs e^-1");
}

#[test]
fn a_quantile_hedge_waits_for_its_warm_up_and_then_hedges_near_the_tail_share() {
    // after = "p90" on Exp(10 ms) service at low load: once 100 latencies are in, the delay d
    // is the running p90 of the callers' latencies. With hedging the latency T = min(S₁, d + S₂)
    // is ≤ d exactly when S₁ ≤ d, so the p90 of T is the p90 of S (23 ms) and the hedge fires
    // for P(S > d) = 10% of attempts: the rule is self-consistent. Tolerance: 4σ of a binomial
    // share over 20,000 attempts (0.0085) plus the quantile's own estimation error (the first
    // estimates use 100 samples), 0.01 in all. No hedge is sent during the warm-up.
    let policy = "jitter = \"none\"\nmax_attempts = 1\nhedge = { after = \"p90\", max_share = 1.0 }";
    let exp10 = r#"{ dist = "exponential", mean = "10ms" }"#;
    let r = &records(&spec(
        &one_hop(20_000, "100s", 1000, policy, exp10).replace("horizon = \"20s\"", "horizon = \"110s\""),
    ))[0];
    let share = r.hops[0].hedges as f64 / r.hops[0].first_attempts as f64;
    assert!((share - 0.1).abs() < 0.01, "hedged share {share}");
    let first_bucket_hedges = r.hop_series[0][0].attempts - r.hop_series[0][0].first_attempts;
    assert_eq!(first_bucket_hedges, 0, "no hedge in the first 100 ms (20 requests, warm-up)");
}

#[test]
fn a_throttled_hedge_does_not_make_the_knife_edge_storm_worse_a_share_capped_one_does() {
    // hedging.toml at ρ = 1.0 for 3 s: the same 20 replications (common random numbers) with no
    // hedge, a p95 hedge capped at 5% of attempts, and the same hedge under the throttle (gRFC
    // A6's bucket with `charge_unanswered`: an attempt still unanswered at its hedge delay counts
    // as a failure). Paired
    // per replication, the share-capped hedge loses success ratio (the 95% interval of the
    // difference lies below 0) and tips more replications into the storm; the throttled hedge's
    // difference interval reaches above -0.02 (2 pp, the non-inferiority margin) and it tips no
    // more replications than no hedging.
    let s = scenario("hedging", &[]);
    let names = ["edge-no-hedge", "edge-hedge-p95", "edge-hedge-p95-throttled"];
    let chosen: Vec<_> = s.run_variants().into_iter().filter(|v| names.contains(&v.name.as_str())).collect();
    assert_eq!(chosen.len(), 3);
    let study = retrystorm::runner::run_study(
        &s,
        &chosen,
        &retrystorm::runner::RunOptions { threads: Some(2), progress: false },
    );
    let by = |name: &str| study.variants.iter().find(|v| v.name == name).expect("variant");
    let success = |name: &str| values(metric(by(name), "success_ratio"));
    let metastable = |name: &str| values(metric(by(name), "metastable")).iter().sum::<f64>();
    let none = success("edge-no-hedge");
    let diff = |name: &str| -> (f64, f64) {
        let d: Vec<f64> = success(name).iter().zip(&none).map(|(x, y)| x - y).collect();
        t_interval(&d, 0.95)
    };
    let (capped_lo, capped_hi) = diff("edge-hedge-p95");
    assert!(
        capped_hi < 0.0,
        "share-capped hedge vs none: success difference [{capped_lo:.3}, {capped_hi:.3}] not below 0"
    );
    assert!(metastable("edge-hedge-p95") > metastable("edge-no-hedge"));
    let (throttled_lo, throttled_hi) = diff("edge-hedge-p95-throttled");
    assert!(
        throttled_lo > -0.02,
        "throttled hedge vs none: success difference [{throttled_lo:.4}, {throttled_hi:.4}] reaches below -2 pp (seed {})",
        s.seed
    );
    assert!(metastable("edge-hedge-p95-throttled") <= metastable("edge-no-hedge"));
    // The throttle did let hedges through (it is not simply off) and far fewer than the cap did.
    let hedges = |name: &str| metric(by(name), "hedges").mean.expect("hedges counted");
    assert!(
        hedges("edge-hedge-p95-throttled") > 100.0
            && hedges("edge-hedge-p95-throttled") < 0.5 * hedges("edge-hedge-p95")
    );
}
