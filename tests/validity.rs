//! Model validity against independent computations written from the sources: CoDel as
//! folly runs it, the gRFC A6 hedge throttle, balancer ties, crashes, Finagle's requeues, the
//! client's own timing, and the documented numbers.
//! Each reference here is a few lines written from the source's rule, not from the simulator.

mod common;

use common::trace_probe;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrystorm::model::sim::run;
use retrystorm::scenario::{parse_assignment, Scenario};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Validates inline scenario text (with `sets` applied); `dir` is where relative files are.
fn inline(dir: &std::path::Path, text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid --set")).collect();
    let file = dir.join("inline.toml");
    Scenario::from_source(file.to_str().expect("utf-8 path"), text, &sets).unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------------
// CoDel

/// folly's `Codel::overloaded_explicit_now` (folly/executors/Codel.cpp), transcribed from its
/// rule: the first sample after the interval's end opens the next interval, overloaded when the
/// previous minimum exceeded the target; a reset sample only sets the minimum and is kept; while
/// overloaded, a delay above 2 × target is sloughed.
struct FollyCodel {
    target: u64,
    interval: u64,
    interval_end: u64,
    min_delay: u64,
    reset: bool,
    overloaded: bool,
}

impl FollyCodel {
    fn new(target: u64, interval: u64) -> Self {
        FollyCodel { target, interval, interval_end: 0, min_delay: 0, reset: true, overloaded: false }
    }

    fn overloaded(&mut self, delay: u64, now: u64) -> bool {
        if now > self.interval_end && !self.reset {
            self.reset = true;
            self.interval_end = now + self.interval;
            self.overloaded = self.min_delay > self.target;
        }
        if self.reset {
            self.reset = false;
            self.min_delay = delay;
            return false;
        }
        self.min_delay = self.min_delay.min(delay);
        self.overloaded && delay > 2 * self.target
    }
}

/// A `workers`-server FIFO queue whose every dequeued task (a task that finds a free worker is
/// dequeued at once, with zero delay) is judged by [`FollyCodel`], as fbthrift's thread manager
/// does: the number of tasks sloughed. `arrivals` are sorted; `service(i)` is task i's service.
/// Panics when an arrival coincides with a service end (the order of a tie is a convention the
/// probe must not depend on).
fn reference_codel(arrivals: &[u64], mut service: impl FnMut(usize) -> u64, workers: usize, codel: FollyCodel) -> u64 {
    let mut codel = codel;
    let mut ends: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let (mut next, mut drops) = (0, 0);
    loop {
        let arrival = arrivals.get(next).copied();
        let end = ends.peek().map(|r| r.0);
        match (arrival, end) {
            (None, None) => return drops,
            (Some(a), Some(e)) if a == e => panic!("an arrival ties with a service end at {a} ns"),
            (Some(a), e) if e.is_none_or(|e| a < e) => {
                next += 1;
                if ends.len() < workers {
                    codel.overloaded(0, a);
                    ends.push(Reverse(a + service(next - 1)));
                } else {
                    queue.push_back(next - 1);
                }
            }
            (_, Some(now)) => {
                ends.pop();
                while let Some(i) = queue.pop_front() {
                    if codel.overloaded(now - arrivals[i], now) {
                        drops += 1;
                    } else {
                        ends.push(Reverse(now + service(i)));
                        break;
                    }
                }
            }
            (Some(_), None) => unreachable!("covered above"),
        }
    }
}

/// One hop, one-attempt calls, CoDel at 5 ms / 100 ms, arrivals from a timestamp trace (ms).
fn codel_trace_scenario(dir: &std::path::Path, times_ms: &[u64], workers: u32, service_ns: u64) -> Scenario {
    let trace: String =
        std::iter::once("t".to_string()).chain(times_ms.iter().map(|t| t.to_string())).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.join("times.csv"), trace + "\n").expect("write trace");
    let horizon = times_ms.last().expect("arrivals") + 1;
    let text = format!(
        r#"name = "codel-probe"
horizon = "{horizon}ms"
replications = 1

[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "trace", file = "times.csv", unit = "ms" }}
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1

[[hop]]
name = "server"
workers = {workers}
service = {{ dist = "constant", mean = "{service_ns}ns" }}
discipline = "codel"
"#
    );
    inline(dir, &text, &[])
}

#[test]
fn codel_drops_nothing_when_the_queue_drains_between_bursts() {
    // 3 requests every 50 ms, 10 ms of service, one worker: waits 0, 10 and 20 ms, and the queue
    // is empty 20 ms of every 50. Every interval sees a zero delay, so production CoDel (folly)
    // never turns overloaded: 0 drops of 600. Judging only the attempts that queued (10 and
    // 20 ms, both above the 5 ms target) made every interval overloaded and dropped 158.
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..200).flat_map(|k| [50 * k; 3]).collect();
    let s = codel_trace_scenario(dir.path(), &times, 1, 10_000_000);
    let ns: Vec<u64> = times.iter().map(|t| t * 1_000_000).collect();
    let reference = reference_codel(&ns, |_| 10_000_000, 1, FollyCodel::new(5_000_000, 100_000_000));
    let r = run(&s.base, s.seed, 0);
    assert_eq!(r.tenants[0].requests, 600);
    assert_eq!(reference, 0, "folly drops nothing here");
    assert_eq!(r.hops[0].dropped_expired, reference, "simulated CoDel drops vs folly's rule");
}

#[test]
fn codel_matches_follys_rule_under_a_standing_overload() {
    // One request every 8 ms into 10 ms of service (ρ = 1.25) for 4 s, then 2 s of nothing: a
    // standing queue, so both judge the intervals overloaded and slough the same tasks. The
    // service time (9.999999 ms) keeps service ends off the arrivals' 8 ms lattice (no ties).
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..500).map(|k| 8 * k).collect();
    let service = 9_999_999;
    let s = codel_trace_scenario(dir.path(), &times, 1, service);
    let ns: Vec<u64> = times.iter().map(|t| t * 1_000_000).collect();
    let reference = reference_codel(&ns, |_| service, 1, FollyCodel::new(5_000_000, 100_000_000));
    let r = run(&s.base, s.seed, 0);
    assert!(reference > 20, "the probe overloads: {reference} drops");
    assert_eq!(r.hops[0].dropped_expired, reference, "simulated CoDel drops vs folly's rule");
}

#[test]
fn codel_drop_share_of_m_m_8_matches_follys_rule() {
    // 8 workers of Exp(50 ms) at ρ = 0.75 (λ = 120/s), Poisson arrivals, one attempt per call.
    // The reference is the same queue simulated independently (its own exponentials) with
    // folly's rule; the two drop shares are compared per replication with a two-sample
    // Student-t interval at 99.9%. (Judging only queued attempts dropped ~3.1% against ~2.1%.)
    let reps = 8;
    let horizon_s = 400.0;
    let (lambda, mean_service) = (120.0, 0.05);
    let text = format!(
        r#"name = "codel-mm8"
seed = 11
horizon = "{horizon_s}s"
replications = {reps}

[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "poisson", rate_per_s = {lambda} }}
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1

[[hop]]
name = "server"
workers = 8
service = {{ dist = "exponential", mean = "50ms" }}
discipline = "codel"
"#
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let s = inline(dir.path(), &text, &[]);
    let sim: Vec<f64> = (0..reps)
        .map(|r| {
            let rec = run(&s.base, s.seed, r);
            rec.hops[0].dropped_expired as f64 / rec.tenants[0].requests as f64
        })
        .collect();
    let reference: Vec<f64> = (0..reps)
        .map(|r| {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + r);
            let mut exp = |mean: f64| -(1.0 - rng.random::<f64>()).ln() * mean;
            let mut t = 0.0;
            let mut arrivals = Vec::new();
            loop {
                t += exp(1.0 / lambda);
                if t >= horizon_s {
                    break;
                }
                arrivals.push((t * 1e9) as u64);
            }
            let services: Vec<u64> = arrivals.iter().map(|_| (exp(mean_service) * 1e9) as u64).collect();
            let drops = reference_codel(&arrivals, |i| services[i], 8, FollyCodel::new(5_000_000, 100_000_000));
            drops as f64 / arrivals.len() as f64
        })
        .collect();
    let diff: Vec<f64> = sim.iter().zip(&reference).map(|(a, b)| a - b).collect();
    // Independent samples: the interval of the mean difference from the pooled spreads.
    let (m1, s1) = retrystorm::metrics::stats::mean_sd(&sim);
    let (m2, s2) = retrystorm::metrics::stats::mean_sd(&reference);
    let n = reps as f64;
    let se = (s1 * s1 / n + s2 * s2 / n).sqrt();
    let t999 = 4.14; // Student t, 0.9995 quantile, 14 degrees of freedom
    assert!(
        (m1 - m2).abs() <= t999 * se,
        "CoDel drop share: simulated {m1:.4} vs folly's rule {m2:.4} (se {se:.4}; per replication {diff:?})"
    );
    assert!(m2 > 0.005, "the probe drops something: {m2}");
}

// ---------------------------------------------------------------------------------------------
// The hedge throttle (gRFC A6) and the one token arithmetic

/// `clients` herd clients with one request each spread over `spread_s` seconds, policy lines
/// `policy`, 1,000 workers of Exp(10 ms) (no queueing at 200/s: 2 busy on average).
fn low_load_hedging(clients: u32, spread_s: u32, policy: &str) -> Scenario {
    let text = format!(
        r#"name = "hedge-probe"
seed = 6
horizon = "{}s"
replications = 1

[[tenant]]
name = "t"
clients = {clients}
arrival = {{ kind = "herd", start = "0s", spread = "{spread_s}s", requests_per_client = 1 }}
policy = "p"

[policy.p]
{policy}

[[hop]]
name = "server"
workers = 1000
service = {{ dist = "exponential", mean = "10ms" }}
"#,
        spread_s + 10
    );
    let dir = tempfile::tempdir().expect("temp dir");
    inline(dir.path(), &text, &[])
}

/// d = 10 ms × ln 10: P(S > d) = 0.1 exactly for S ~ Exp(10 ms), the p90 of the service.
const P90_OF_EXP_10MS_NS: u64 = 23_025_851;

#[test]
fn a_p90_hedge_without_failures_hedges_ten_percent_as_grpc_does() {
    // gRFC A6 ("Throttling Retry Attempts and Hedged RPCs"): "Every failed RPC will decrement
    // the token_count by 1. Every successful RPC will increment the token_count by tokenRatio."
    // With no failure the bucket stays full and never stops a hedge, so a hedge after the p90 of
    // the service is sent for P(S > d) = 10% of attempts (1,000 workers: no queueing). Charging
    // an attempt still unanswered at its hedge delay (the old rule) drained the bucket to its
    // threshold and let through only ~5.2%. Tolerance: 4σ of a binomial share over the attempts.
    let policy = format!(
        "jitter = \"none\"\nmax_attempts = 1\nhedge = {{ after = \"{P90_OF_EXP_10MS_NS}ns\", max_share = 1.0, throttle = {{ max_tokens = 10, token_ratio = 0.1 }} }}"
    );
    let s = low_load_hedging(20_000, 100, &policy);
    let r = run(&s.base, s.seed, 0);
    let h = &r.hops[0];
    let n = h.first_attempts as f64;
    let share = h.hedges as f64 / n;
    let tol = 4.0 * (0.1 * 0.9 / n).sqrt();
    assert!((share - 0.1).abs() < tol, "hedged share {share} vs gRPC's 0.1 ± {tol}");
    assert_eq!(r.tenants[0].succeeded, 20_000, "no failures in the probe");
}

/// The old rule (`charge_unanswered = true`), from first principles: attempts at the given
/// times with services `s1` (and a hedge's `s2`), hedge delay `d`; a token bucket of 10 (full),
/// an unanswered attempt at d takes one token (the hedge goes if more than 5 were left before),
/// the call's success (at min(s1, d + s2) when hedged) gives back 0.1. Events in time order.
/// Returns the hedges sent.
fn reference_charge_unanswered(starts: &[f64], s1: &[f64], s2: &[f64], d: f64) -> u64 {
    // (time, kind, attempt): kind 0 = hedge delay passes, 1 = success.
    let mut events: Vec<(f64, u8, usize)> = Vec::new();
    for (i, &t) in starts.iter().enumerate() {
        if s1[i] > d {
            events.push((t + d, 0, i));
        } else {
            events.push((t + s1[i], 1, i));
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut heap: BinaryHeap<Reverse<(u64, u8, usize)>> =
        events.into_iter().map(|(t, k, i)| Reverse(((t * 1e9) as u64, k, i))).collect();
    let (mut tokens, mut hedges) = (10.0_f64, 0);
    while let Some(Reverse((t, kind, i))) = heap.pop() {
        if kind == 1 {
            tokens = (tokens + 0.1).min(10.0);
            continue;
        }
        let allowed = tokens > 5.0 + 1e-9;
        tokens = (tokens - 1.0).max(0.0);
        let end = if allowed {
            hedges += 1;
            s1[i].min(d + s2[i])
        } else {
            s1[i]
        };
        heap.push(Reverse((t + ((end - d) * 1e9) as u64, 1, i)));
    }
    hedges
}

#[test]
fn charge_unanswered_is_the_old_rule_and_hedges_about_half_as_often() {
    // The opt-in `charge_unanswered = true` is the rule this simulator used before (not A6):
    // the same probe as above, against the token chain simulated independently (its own
    // arrivals and exponentials). Both shares must agree within 4σ of the difference of two
    // binomial shares, and lie well below A6's 10%.
    let policy = format!(
        "jitter = \"none\"\nmax_attempts = 1\nhedge = {{ after = \"{P90_OF_EXP_10MS_NS}ns\", max_share = 1.0, throttle = {{ max_tokens = 10, token_ratio = 0.1, charge_unanswered = true }} }}"
    );
    let n = 20_000;
    let s = low_load_hedging(n, 100, &policy);
    let r = run(&s.base, s.seed, 0);
    let share = r.hops[0].hedges as f64 / r.hops[0].first_attempts as f64;
    let mut uniform = ChaCha8Rng::seed_from_u64(35);
    let starts: Vec<f64> = (0..n).map(|_| uniform.random::<f64>() * 100.0).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let mut exp = |mean: f64| -(1.0 - rng.random::<f64>()).ln() * mean;
    let s1: Vec<f64> = (0..n).map(|_| exp(0.010)).collect();
    let s2: Vec<f64> = (0..n).map(|_| exp(0.010)).collect();
    let reference =
        reference_charge_unanswered(&starts, &s1, &s2, P90_OF_EXP_10MS_NS as f64 / 1e9) as f64 / f64::from(n);
    let p = (share + reference) / 2.0;
    let tol = 4.0 * (2.0 * p * (1.0 - p) / f64::from(n)).sqrt();
    assert!(
        (share - reference).abs() < tol,
        "charge_unanswered: simulated {share} vs the token chain {reference} (± {tol})"
    );
    assert!(reference < 0.07, "the old rule hedges well below 10%: {reference}");
}

#[test]
fn hedges_and_retries_share_the_policys_grpc_bucket() {
    // gRFC A6 keeps one token bucket per server name for retries and hedges. A policy with a
    // `grpc_throttle` budget (10 tokens, 0.1 per success) and a hedge after 50 ms on a constant
    // 100 ms service (every attempt wants a hedge; the share cap of 1 never binds): ten calls
    // fail during an outage and empty the bucket, then each success gives back 0.1. A hedge goes
    // only while more than 5 tokens are left, so after the outage the first 51 calls (5.1
    // tokens) are not hedged and every later one is: 100 − 51 = 49 hedges. One call at a time
    // (1 s apart), so the count is exact.
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..110).map(|k| 500 + 1_000 * k).collect();
    let policy = "jitter = \"none\"\nmax_attempts = 1\nbudget = { kind = \"grpc_throttle\", scope = \"global\" }\nhedge = { after = \"50ms\", max_share = 1.0 }";
    let outage = "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"10s\"";
    let s = trace_probe(dir.path(), &times, policy, 4, r#"{ dist = "constant", mean = "100ms" }"#, outage);
    let r = run(&s.base, s.seed, 0);
    assert_eq!(r.tenants[0].succeeded, 100, "the ten calls in the outage fail, the rest succeed");
    assert_eq!(r.hops[0].hedges, 100 - 51, "hedges once the shared bucket holds more than half");
}

#[test]
fn ten_deposits_of_a_tenth_pay_for_a_hedge() {
    // The hedge cap is a token bucket: each attempt earns max_share = 0.1, a hedge costs 1.
    // Twenty sequential calls (1 s apart) of 100 ms, a hedge after 50 ms: the 10th and the 20th
    // attempts find one whole token (ten tenths, within the one token tolerance) and are hedged.
    // Binary floating point alone makes ten tenths 0.9999999999999999 and hedged only the 11th.
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..20).map(|k| 1_000 * k).collect();
    let policy = "jitter = \"none\"\nmax_attempts = 1\nhedge = { after = \"50ms\", max_share = 0.1 }";
    let s = trace_probe(dir.path(), &times, policy, 4, r#"{ dist = "constant", mean = "100ms" }"#, "");
    let r = run(&s.base, s.seed, 0);
    assert_eq!(r.hops[0].hedges, 2, "attempts 10 and 20 are hedged");
}

/// gRFC A6's retry throttle in front of a server that fails every attempt, from its rule: a
/// failure takes one token (not below zero), and a retry goes only while more than half of
/// `max_tokens` is left. The retries granted to `requests` sequential calls of at most
/// `max_attempts` attempts.
fn reference_a6_against_a_failing_server(requests: u32, max_attempts: u32, max_tokens: f64) -> u64 {
    let mut tokens = max_tokens;
    let mut retries = 0;
    for _ in 0..requests {
        for attempt in 1..=max_attempts {
            tokens = (tokens - 1.0).max(0.0);
            if attempt == max_attempts || tokens <= max_tokens / 2.0 {
                break;
            }
            retries += 1;
        }
    }
    retries
}

#[test]
fn a_grpc_throttle_keeps_one_bucket_per_server_called() {
    // gRFC A6: "throttling is per server name". One hop calls two servers with the same policy
    // (a global `grpc_throttle`: 10 tokens, 0.1 per success): `a` always answers, `b` is in an
    // outage. b's bucket sees only b's failures, so b gets exactly the retries of the rule for a
    // failing server (2 + 1 = 3), whatever a's successes do; one bucket shared by both (the
    // simulator before this) let a's successes pay for a fourth. One call at a time (1 s apart),
    // a answering in 0.5 ms, between b's refusals, so the counts are exact.
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..50).map(|k| 1_000 * k).collect();
    let graph = r#"calls = [{ hop = "a", policy = "down", stage = 0 }, { hop = "b", policy = "down", stage = 0 }]

[[hop]]
name = "a"
workers = 4
service = { dist = "constant", mean = "500us" }

[[hop]]
name = "b"
workers = 4
service = { dist = "constant", mean = "500us" }

[policy.down]
jitter = "none"
base = "1ms"
max_attempts = 3
budget = { kind = "grpc_throttle", scope = "global" }

[[fault]]
hop = "b"
kind = "outage"
from = "0s"
to = "100s""#;
    let s = trace_probe(
        dir.path(),
        &times,
        "jitter = \"none\"\nmax_attempts = 1",
        4,
        r#"{ dist = "constant", mean = "1ms" }"#,
        graph,
    );
    let r = run(&s.base, s.seed, 0);
    let expected = reference_a6_against_a_failing_server(50, 3, 10.0);
    assert_eq!(expected, 3);
    assert_eq!((r.hops[1].attempts, r.hops[1].retries), (50, 0), "a answers every first attempt");
    assert_eq!(r.hops[2].retries, expected, "b's retries: its own bucket, drained by its failures alone");
    assert_eq!(r.hops[2].attempts, 50 + expected);
}

// ---------------------------------------------------------------------------------------------
// Envoy's concurrent retries

/// Envoy's retry limit, from its rule (`ResourceManagerImpl`'s retries resource and
/// `RetryBudgetImpl`; the router takes the resource when it grants a retry and gives it back
/// when the retry's outcome is known): each call arriving at `times` (ms, sorted) fails at once
/// and asks for one retry, granted while fewer than `limit` retries are outstanding; a granted
/// retry is outstanding for `hold` ms (its back-off, then an attempt that fails at once). The
/// retries granted.
fn reference_concurrent_retries(times: &[u64], limit: usize, hold: f64) -> u64 {
    let mut outstanding: Vec<f64> = Vec::new();
    let mut granted = 0;
    for &t in times {
        outstanding.retain(|&end| end > t as f64);
        if outstanding.len() < limit {
            outstanding.push(t as f64 + hold);
            granted += 1;
        }
    }
    granted
}

#[test]
fn envoys_max_retries_breaker_bounds_the_retries_outstanding_at_once() {
    // Poisson arrivals at 20/s during an outage, one retry each after exactly 100.5 ms
    // (exponential back-off without jitter, its first delay the base; the half millisecond keeps every release off the whole-millisecond arrivals), at
    // most 3 outstanding (Envoy's default max_retries circuit breaker: budget_percent 0). The
    // simulator must grant exactly the retries the rule grants. A windowed ratio budget (the old
    // approximation: max(20% of the requests in 10 s, 3)) grants a different number.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let mut t = 0.0;
    let mut times: Vec<u64> = Vec::new();
    while times.len() < 2_000 {
        t += -50.0 * (1.0 - rng.random::<f64>()).ln();
        let ms = t.round() as u64;
        if times.last() != Some(&ms) {
            times.push(ms);
        }
    }
    let outage = format!(
        "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"{}ms\"",
        times[times.len() - 1] + 1_000
    );
    let policy =
        |budget: &str| format!("jitter = \"exponential\"\nbase = \"100500us\"\nmax_attempts = 2\nbudget = {budget}");
    let envoy = policy(
        "{ kind = \"concurrent_retries\", scope = \"tenant\", budget_percent = 0.0, min_retry_concurrency = 3 }",
    );
    let s = trace_probe(dir.path(), &times, &envoy, 4, r#"{ dist = "constant", mean = "1ms" }"#, &outage);
    let r = run(&s.base, s.seed, 0);
    let expected = reference_concurrent_retries(&times, 3, 100.5);
    let tenant = &r.tenants[0];
    assert_eq!(tenant.retries, expected, "retries granted (the rule's {expected} of {})", times.len());
    assert_eq!(tenant.retries_denied, times.len() as u64 - expected);
    // About Erlang B's share is refused (a loss system of 3 servers, offered 20/s × 0.1005 s):
    // the check that the probe exercises the limit at all.
    let denied = tenant.retries_denied as f64 / times.len() as f64;
    assert!((0.1..0.35).contains(&denied), "refused {denied}");
    let ratio = policy("{ kind = \"ratio\", scope = \"tenant\", ratio = 0.2, min_retries = 3.0, window = \"10s\" }");
    let old = trace_probe(dir.path(), &times, &ratio, 4, r#"{ dist = "constant", mean = "1ms" }"#, &outage);
    assert_ne!(run(&old.base, old.seed, 0).tenants[0].retries, expected, "the approximation differs");
}

// ---------------------------------------------------------------------------------------------
// Balancer ties

/// Four single-worker FIFO replicas fed by `arrivals` (s, sorted) with `services` (s), routed by
/// least connections (in flight = queued + in service) with ties broken by `tie` (the tied
/// replicas in index order and the pick number → the chosen one): each replica's share.
/// Written from the rule, not from the simulator: a replica's in-flight attempts are its
/// departure times still ahead (FIFO, one worker: departure = max(arrival, last departure) + S).
fn reference_least_connections(
    arrivals: &[f64],
    services: &[f64],
    mut tie: impl FnMut(&[usize], &mut usize) -> usize,
) -> [f64; 4] {
    let mut departures: [VecDeque<f64>; 4] = Default::default();
    let mut counts = [0u64; 4];
    let mut cursor = 0usize;
    for (&t, &s) in arrivals.iter().zip(services) {
        for d in departures.iter_mut() {
            while d.front().is_some_and(|&x| x <= t) {
                d.pop_front();
            }
        }
        let least = departures.iter().map(VecDeque::len).min().expect("4 replicas");
        let tied: Vec<usize> = (0..4).filter(|&r| departures[r].len() == least).collect();
        let r = tie(&tied, &mut cursor);
        let start = departures[r].back().map_or(t, |&last| last.max(t));
        departures[r].push_back(start + s);
        counts[r] += 1;
    }
    let n = arrivals.len() as f64;
    counts.map(|c| c as f64 / n)
}

/// Per replication, replica 0's share and the largest share, simulated (4 replicas of M/M/1,
/// Exp(1 ms), Poisson 400/s: ρ = 0.1) under `balancer`.
fn balanced_shares(balancer: &str, reps: u32) -> (Vec<f64>, Vec<f64>) {
    let text = format!(
        r#"name = "ties"
seed = 34
horizon = "50s"
replications = {reps}

[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "poisson", rate_per_s = 400.0 }}
policy = "once"

[policy.once]
jitter = "none"
max_attempts = 1

[[hop]]
name = "server"
replicas = 4
balancer = "{balancer}"
workers = 1
service = {{ dist = "exponential", mean = "1ms" }}
"#
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let s = inline(dir.path(), &text, &[]);
    let study = retrystorm::runner::run_study(
        &s,
        &s.run_variants(),
        &retrystorm::runner::RunOptions { threads: Some(2), progress: false },
    );
    let v = &study.variants[0];
    let stat = |rows: &retrystorm::metrics::stats::StatRow, name: &str| -> Vec<f64> {
        let m = retrystorm::metrics::catalogue::Metric::from_name(name).expect("catalogued");
        rows.get(m).unwrap_or_else(|| panic!("no {name}")).values.iter().map(|v| v.expect("a value")).collect()
    };
    let replica0 = &v.replicas.iter().find(|(n, _)| n == "server[0]").expect("replica 0").1;
    let hop = &v.hops.iter().find(|(n, _)| n == "server").expect("hop").1;
    (stat(replica0, "traffic_share"), stat(hop, "replica_share_max"))
}

/// The reference's replica-0 share over `reps` replications of 50 s (its own arrivals and
/// services), ties broken by `tie`.
fn reference_shares(reps: u64, mut tie: impl FnMut(&[usize], &mut usize, &mut ChaCha8Rng) -> usize) -> Vec<f64> {
    (0..reps)
        .map(|r| {
            let mut rng = ChaCha8Rng::seed_from_u64(3400 + r);
            let mut t = 0.0;
            let (mut arrivals, mut services) = (Vec::new(), Vec::new());
            loop {
                t += -(1.0 - rng.random::<f64>()).ln() / 400.0;
                if t >= 50.0 {
                    break;
                }
                arrivals.push(t);
                services.push(-(1.0 - rng.random::<f64>()).ln() * 0.001);
            }
            let mut tie_rng = ChaCha8Rng::seed_from_u64(9_000 + r);
            reference_least_connections(&arrivals, &services, |tied, cursor| tie(tied, cursor, &mut tie_rng))[0]
        })
        .collect()
}

/// The two means agree within 99.9% (two-sample Student t on independent replications).
fn agree(sim: &[f64], reference: &[f64], what: &str) {
    let (m1, s1) = retrystorm::metrics::stats::mean_sd(sim);
    let (m2, s2) = retrystorm::metrics::stats::mean_sd(reference);
    let se = (s1 * s1 / sim.len() as f64 + s2 * s2 / reference.len() as f64).sqrt();
    let t999 = 4.14; // Student t, 0.9995 quantile, 14 degrees of freedom
    assert!((m1 - m2).abs() <= t999 * se, "{what}: simulated {m1:.4} vs reference {m2:.4} (se {se:.4})");
}

#[test]
fn least_connections_round_robins_its_ties_and_spreads_traffic_evenly() {
    // 4 replicas of M/M/1 at ρ = 0.1: most arrivals find several replicas idle (a tie at 0).
    // HAProxy `leastconn` ("round-robin is performed within groups of servers of the same
    // load") and NGINX `least_conn` (tied servers "are tried in turn") spread ties in turn, so
    // each replica's share is 1/4 by symmetry; giving every tie to the lowest index sent replica
    // 0 ~71.5%. Checked against the reference (the same rule written above) and against 1/4:
    // the largest share (`replica_share_max`) of every replication within 4.4 binomial standard
    // deviations of 1/4 (taking ties in turn splits at least as evenly as independent uniform
    // picks, whose counts are binomial).
    let reps = 8;
    let (share0, share_max) = balanced_shares("least_connections", reps);
    let reference = reference_shares(u64::from(reps), |tied, cursor, _| {
        let r = *tied.iter().min_by_key(|&&r| (r + 4 - *cursor % 4) % 4).expect("a tie");
        *cursor = (r + 1) % 4;
        r
    });
    agree(&share0, &reference, "least_connections, replica 0's share");
    let sd = (0.25 * 0.75 / 20_000.0_f64).sqrt();
    for m in &share_max {
        assert!(*m < 0.25 + 4.4 * sd, "replica_share_max {m} vs 1/4 + {}", 4.4 * sd);
    }
}

#[test]
fn the_tie_rules_of_least_connections_random_and_first_match_their_references() {
    // `least_connections_random`: a uniformly random replica among the tied ones (even shares);
    // `least_connections_first`: the lowest index (Stability Sim's rule): replica 0 takes most
    // of the traffic at low load. Each against the reference with the same tie rule.
    let reps = 8;
    let (random0, random_max) = balanced_shares("least_connections_random", reps);
    let reference = reference_shares(u64::from(reps), |tied, _, rng| tied[rng.random_range(0..tied.len())]);
    agree(&random0, &reference, "least_connections_random, replica 0's share");
    assert!(random_max.iter().all(|&m| m < 0.27), "{random_max:?}");
    let (first0, _) = balanced_shares("least_connections_first", reps);
    let reference = reference_shares(u64::from(reps), |tied, _, _| tied[0]);
    agree(&first0, &reference, "least_connections_first, replica 0's share");
    assert!(first0.iter().all(|&s| s > 0.6), "the lowest index takes most: {first0:?}");
}

// ---------------------------------------------------------------------------------------------
// A crash drops what was in service

/// Two requests at t = 0 on one worker of 100 ms (the second queued), max 1 attempt with a
/// 300 ms timeout, and the server crashing at 50 ms for a second with `in_service` = `mode`.
fn crash_probe(mode: &str) -> retrystorm::metrics::RunRecord {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"300ms\"";
    let outage = format!(
        "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nin_service = \"{mode}\"\nfrom = \"50ms\"\nto = \"1s\""
    );
    let s = trace_probe(dir.path(), &[0, 0], policy, 1, r#"{ dist = "constant", mean = "100ms" }"#, &outage);
    run(&s.base, s.seed, 0)
}

#[test]
fn a_crash_resets_loses_or_completes_the_work_in_service_as_the_fault_says() {
    // From the rule, by hand: request 1 is served from 0; request 2 waits. At 50 ms the server
    // crashes. `reset` (the default): request 1's connection is reset — it fails at 50 ms after
    // 50 ms of work — and the crashed server serves nothing, so request 2, which its freed
    // worker would take, fails at once too: 0 succeed, 50 ms busy, 2 stopped. `lost`: the same
    // work, but no reply; both callers time out at 300 ms. `complete` (the old rule): request 1
    // finishes at 100 ms and request 2 is served 100–200 ms, during the outage: both succeed,
    // 200 ms busy.
    let reset = crash_probe("reset");
    assert_eq!(
        (reset.tenants[0].succeeded, reset.hops[0].busy_ns, reset.hops[0].crashed_in_service),
        (0, 50_000_000, 2)
    );
    assert_eq!(reset.hops[0].served, 0);
    assert_eq!(reset.completion_time_ns, 50_000_000, "reset: both callers hear of it at the crash");
    let lost = crash_probe("lost");
    assert_eq!((lost.tenants[0].succeeded, lost.hops[0].busy_ns, lost.hops[0].crashed_in_service), (0, 50_000_000, 2));
    assert_eq!(lost.completion_time_ns, 300_000_000, "lost: both callers wait for their timeout");
    let complete = crash_probe("complete");
    assert_eq!(
        (complete.tenants[0].succeeded, complete.hops[0].busy_ns, complete.hops[0].crashed_in_service),
        (2, 200_000_000, 0)
    );
}

#[test]
fn a_crash_reset_ejects_the_replica_at_once_instead_of_after_the_work_in_service() {
    // Two replicas behind round robin, 20 workers each (never full), constant 1.05 s service,
    // one request every 100 ms (at 13 ms past each tenth), Envoy-style ejection after 5
    // consecutive errors for 30 s. Replica 0 crashes at 5.05 s (to 8 s). By the rule: replica 0
    // takes the even arrivals; the ones it was serving at the crash (arrived after 4.0 s) are
    // reset at 5.05 s, ≥ 5 errors in a row, so it is ejected then and gets nothing after. Before
    // (`complete`), that work finished successfully during the outage and reset the error count
    // between the refusals, so the ejection came only after it and replica 0 took more traffic.
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..100).map(|k| 13 + 100 * k).collect();
    let crash = 5_050.0;
    let service = 1_050.0;
    let policy = "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"5s\"";
    let hop_extra = "replicas = 2\nbalancer = \"round_robin\"\noutlier_detection = { consecutive_errors = 5, base_ejection_time = \"30s\" }\n\n[[fault]]\nhop = \"server\"\nreplica = 0\nkind = \"outage\"\nfrom = \"5050ms\"\nto = \"8s\"";
    let probe = |extra: &str| {
        let s = trace_probe(dir.path(), &times, policy, 20, r#"{ dist = "constant", mean = "1050ms" }"#, extra);
        run(&s.base, s.seed, 0)
    };
    let r = probe(hop_extra);
    let to_replica0: Vec<f64> = times.iter().step_by(2).map(|&t| t as f64).filter(|&t| t < crash).collect();
    let ok = to_replica0.iter().filter(|&&t| t + service < crash).count() as u64;
    let in_service = to_replica0.len() as u64 - ok;
    assert!(in_service >= 5, "the probe has enough work in service to eject: {in_service}");
    let rec = r.replicas.iter().find(|x| x.replica == 0).expect("replica 0");
    assert_eq!(
        (rec.attempts, rec.ok_replies, rec.failed_replies, rec.ejections),
        (to_replica0.len() as u64, ok, in_service, 1),
        "replica 0: attempts, successes, failures, ejections"
    );
    let old = probe(&hop_extra.replace("kind = \"outage\"", "kind = \"outage\"\nin_service = \"complete\""));
    let rec_old = old.replicas.iter().find(|x| x.replica == 0).expect("replica 0");
    assert!(
        rec_old.attempts > rec.attempts,
        "complete: later ejection, more traffic ({} vs {})",
        rec_old.attempts,
        rec.attempts
    );
}

/// A crash of a hop while it waits on its downstream call: one request every 10 ms (at 0, 10, …,
/// 990 ms, one attempt each, 2 s timeout) to `server` (1 ms of work), which calls `back` (100 ms)
/// once; `server` crashes from 505 ms to 705 ms with `in_service` = `mode`.
fn crash_downstream_probe(dir: &std::path::Path, mode: &str) -> (Vec<u64>, retrystorm::metrics::RunRecord) {
    let times: Vec<u64> = (0..100).map(|k| 10 * k).collect();
    let policy = "jitter = \"none\"\nmax_attempts = 1\nattempt_timeout = \"2s\"";
    let graph = format!(
        r#"calls = [{{ hop = "back", policy = "down" }}]

[[hop]]
name = "back"
workers = 100
service = {{ dist = "constant", mean = "100ms" }}

[policy.down]
jitter = "none"
max_attempts = 1
attempt_timeout = "2s"

[[fault]]
hop = "server"
kind = "outage"
in_service = "{mode}"
from = "505ms"
to = "705ms""#
    );
    let s = trace_probe(dir, &times, policy, 100, r#"{ dist = "constant", mean = "1ms" }"#, &graph);
    (times, run(&s.base, s.seed, 0))
}

#[test]
fn a_crash_stops_the_work_waiting_on_its_downstream_call() {
    // By the rule: a request arriving at t is at `server` from t to t + 1 ms, then waits on
    // `back` until t + 101 ms. The crash at 505 ms finds the requests with t + 1 ≤ 505 < t + 101
    // waiting (410–500 ms: 10): `reset` fails them at once and cancels their calls to `back`;
    // the requests arriving during the crash (510–700 ms: 20) are refused. 30 fail, 70 succeed.
    // Before, the 10 waiting ones finished successfully through the crashed server.
    let dir = tempfile::tempdir().expect("temp dir");
    let (crash, back, to) = (505u64, 101u64, 705u64);
    let (times, reset) = crash_downstream_probe(dir.path(), "reset");
    let waiting = times.iter().filter(|&&t| t < crash && t + back > crash).count() as u64;
    let refused = times.iter().filter(|&&t| (crash..to).contains(&t)).count() as u64;
    assert_eq!((waiting, refused), (10, 20));
    let t = &reset.tenants[0];
    assert_eq!(t.succeeded, 100 - waiting - refused, "reset: the waiting and the refused fail");
    assert_eq!(reset.hops[0].crashed_in_service, waiting, "reset: the jobs waiting downstream are stopped");
    assert_eq!(reset.hops[1].cancelled, waiting, "their calls to back are cancelled");
    // `lost`: the same failures, but heard only at the callers' timeouts (2 s after arrival).
    let (_, lost) = crash_downstream_probe(dir.path(), "lost");
    assert_eq!((lost.tenants[0].succeeded, lost.hops[0].crashed_in_service), (100 - waiting - refused, waiting));
    assert_eq!(lost.completion_time_ns, (500 + 2_000) * 1_000_000, "the last waiting request times out at 2.5 s");
    // `complete`: the crash stops nothing: only the refused fail.
    let (_, complete) = crash_downstream_probe(dir.path(), "complete");
    assert_eq!(complete.tenants[0].succeeded, 100 - refused);
}

// ---------------------------------------------------------------------------------------------
// Documented numbers

#[test]
fn the_plan_example_on_mm1_answers_what_the_model_doc_says() {
    // docs/MODEL.md ("plan"): `retrystorm plan scenarios/mm1.toml --vary
    // tenant.customers.arrival.rate_per_s=100.0..1000.0 --find largest --require
    // 'latency_s_p99 <= 0.05'` answers N/s. The number is read from the doc, the command run,
    // and the answer must be N; it must also lie just below M/M/1's 907.9/s (the p99 of the time
    // in system, ln 100 / (μ − λ) with μ = 1,000/s, is 50 ms there), as judged on a 95% bound.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/MODEL.md")).expect("docs/MODEL.md");
    let at = doc.find("--find largest --require 'latency_s_p99 <= 0.05'` answers ").expect("the plan example");
    let rest = &doc[at..];
    let number = rest.split("answers ").nth(1).and_then(|r| r.split("/s").next()).expect("answers N/s");
    let documented: f64 = number.replace(',', "").parse().unwrap_or_else(|_| panic!("a number: {number}"));
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("plan");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(root)
        .args(["plan", "scenarios/mm1.toml", "--vary", "tenant.customers.arrival.rate_per_s=100.0..1000.0"])
        .args(["--find", "largest", "--require", "latency_s_p99 <= 0.05", "--quiet", "--threads", "2"])
        .args(["--out", out.to_str().expect("utf-8 path")])
        .status()
        .expect("retrystorm runs");
    assert!(status.success(), "plan failed");
    let csv = std::fs::read_to_string(out.join("plan.csv")).expect("plan.csv");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let chosen = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f[col("chosen")] == "true")
        .expect("a chosen value");
    let answer: f64 = chosen[col("value")].parse().expect("a number");
    assert_eq!(answer, documented, "plan answers {answer}/s; docs/MODEL.md says {documented}/s");
    let theory = 1000.0 - 20.0 * 100.0_f64.ln();
    assert!((theory - 907.9).abs() < 0.05, "{theory}");
    assert!(answer <= theory && answer > 0.99 * theory, "{answer}/s vs M/M/1's {theory:.1}/s");
}

// ---------------------------------------------------------------------------------------------
// Finagle's requeues

/// Finagle's `RequeueFilter` over its `RetryBudget`, transcribed from their rules (finagle-core
/// `service/RequeueFilter.scala` since commit f3a7326, finagle 20.8.1, `service/Retries.scala`,
/// `service/RetryBudget.scala`), in the budget's own integer units (1,000 to a retry): a request
/// deposits `percent × 1000` only when its response is classified successful, and here every
/// attempt is refused (an outage), so nothing is deposited; the reserve is
/// `min_retries_per_s × ttl × 1000`; a request may be requeued at most `ceil(0.2 × balance)`
/// times, balance = tokens / 1000 (integer division) when it starts; each requeue withdraws
/// 1,000 when the bucket holds it. Every request lies inside one ttl (nothing expires). Returns
/// the attempts of each request. (`tests/vendor_rules.rs` has the successes' deposits.)
fn reference_requeues(requests: usize, min_retries_per_s: u64, ttl_s: u64) -> Vec<u64> {
    let mut tokens: i64 = (min_retries_per_s * ttl_s * 1_000) as i64;
    (0..requests)
        .map(|_| {
            let mut left = (0.2 * (tokens / 1_000) as f64).ceil() as u64;
            let mut attempts = 1;
            while left > 0 && tokens >= 1_000 {
                tokens -= 1_000;
                left -= 1;
                attempts += 1;
            }
            attempts
        })
        .collect()
}

#[test]
fn finagle_requeues_refused_attempts_at_once_capped_by_its_budgets_balance() {
    // 40 requests, one every 100 ms, into a hop in an outage (connections refused) for the
    // whole run, under the `finagle` preset (3 attempts, 5–200 ms backoff, RetryBudget of 20%
    // plus 10/s over 10 s). Finagle requeues each refusal at once, outside the 3 attempts, at
    // most ceil(0.2 × balance) times per request, and once a request may not requeue its
    // failure is final: the first request makes 21 attempts at t = 0, the budget drains, and
    // the simulator must make exactly the attempts the reference makes, each request's all in
    // the bucket of its arrival (no backoff: nothing spills into the next one).
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<u64> = (0..40).map(|i| i * 100).collect();
    let outage = "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"1h\"";
    let s =
        trace_probe(dir.path(), &times, "preset = \"finagle\"", 1, r#"{ dist = "constant", mean = "1ms" }"#, outage);
    let r = run(&s.base, s.seed, 0);
    let expected = reference_requeues(times.len(), 10, 10);
    assert_eq!(expected[0], 21, "the first request: 20 requeues (ceil(0.2 × 100))");
    let t = &r.tenants[0];
    assert_eq!(t.attempts, expected.iter().sum::<u64>(), "attempts (reference per request: {expected:?})");
    assert_eq!(t.dlq_budget, times.len() as u64, "every request ends refused by its budget");
    assert_eq!(t.retries_denied, times.len() as u64);
    for (i, want) in expected.iter().enumerate() {
        let b = (times[i] * 1_000_000 / s.base.bucket) as usize;
        assert_eq!(u64::from(r.hop_series[0][b].attempts), *want, "bucket {b}: request {i}'s attempts, at once");
    }

    // A 503 from the application (error_rate) is no refusal: the same client retries it with
    // backoff, 3 attempts per request, and never requeues.
    let errors = "[[fault]]\nhop = \"server\"\nkind = \"error_rate\"\np = 1.0\nfrom = \"0s\"\nto = \"1h\"";
    let s =
        trace_probe(dir.path(), &times, "preset = \"finagle\"", 1, r#"{ dist = "constant", mean = "1ms" }"#, errors);
    let r = run(&s.base, s.seed, 0);
    assert_eq!(r.tenants[0].attempts, 3 * times.len() as u64, "3 attempts each");
    assert_eq!(r.tenants[0].dlq_budget, 0);

    // Without requeues (the same preset, `requeue = false`) an outage's refusals are retried as
    // any 503: 3 attempts each.
    let plain = "preset = \"finagle\"\nrequeue = false";
    let s = trace_probe(dir.path(), &times, plain, 1, r#"{ dist = "constant", mean = "1ms" }"#, outage);
    assert_eq!(run(&s.base, s.seed, 0).tenants[0].attempts, 3 * times.len() as u64);
}

#[test]
fn a_request_refused_by_a_full_queue_is_requeued_at_once_until_its_allowance_runs_out() {
    // Overload control's refusal is Finagle's NACK: one worker, no queue (queue_limit 0), 10 ms
    // service; two clients' requests at the same instant. The second is refused while the
    // first is in service and requeued at once — refused again in the same instant until its
    // requeues (its own client budget: ceil(0.2 × 100) = 20) run out: it ends refused by its
    // budget, having made 21 attempts, all in that instant.
    let dir = tempfile::tempdir().expect("temp dir");
    let text = r#"name = "shed"
horizon = "2s"
replications = 1

[[tenant]]
name = "t"
clients = 2
arrival = { kind = "herd", start = "0s", spread = "0s", requests_per_client = 1 }
policy = "p"

[policy.p]
preset = "finagle"

[[hop]]
name = "server"
workers = 1
queue_limit = 0
service = { dist = "constant", mean = "10ms" }
"#;
    let s = inline(dir.path(), text, &[]);
    let r = run(&s.base, s.seed, 0);
    let t = &r.tenants[0];
    assert_eq!((t.requests, t.succeeded, t.dlq_budget), (2, 1, 1), "one served, one refused by its budget");
    assert_eq!(t.attempts, 1 + 21, "1 served + 1 refused and requeued 20 times (ceil(0.2 × 100))");
    assert_eq!(r.hops[0].overflow, 21, "every requeue meets the full queue");
}

// ---------------------------------------------------------------------------------------------
// Client timing

/// `clients` herd clients at t = 0, one request each, into a hop refusing everything (an
/// outage), 4 attempts of un-jittered exponential backoff from 100 ms; `timing` is the
/// tenant's `client_timing` table (empty: none). Horizon 1 s, so 1 ms buckets. The instants
/// (ms) at which attempts were sent, one entry per attempt.
fn attempt_instants_ms(clients: u32, timing: &str) -> Vec<usize> {
    let dir = tempfile::tempdir().expect("temp dir");
    let timing = if timing.is_empty() { String::new() } else { format!("client_timing = {{ {timing} }}\n") };
    let text = format!(
        r#"name = "timing"
horizon = "1s"
replications = 1

[[tenant]]
name = "t"
clients = {clients}
arrival = {{ kind = "herd", start = "0s", spread = "0s", requests_per_client = 1 }}
policy = "p"
{timing}
[policy.p]
jitter = "exponential"
base = "100ms"
max_attempts = 4

[[hop]]
name = "server"
service = {{ dist = "constant", mean = "1ms" }}

[[fault]]
hop = "server"
kind = "outage"
from = "0s"
to = "1h"
"#
    );
    let s = inline(dir.path(), &text, &[]);
    assert_eq!(s.base.bucket, 1_000_000, "1 ms buckets");
    let r = run(&s.base, s.seed, 0);
    r.hop_series[0].iter().enumerate().flat_map(|(i, b)| std::iter::repeat_n(i, b.attempts as usize)).collect()
}

#[test]
fn a_clients_own_delays_shift_its_retries_and_the_busy_part_spreads_a_herds_wave() {
    // Backoff alone: attempts at 0, 100, 300 and 700 ms (delays 100, 200, 400).
    assert_eq!(attempt_instants_ms(1, ""), [0, 100, 300, 700]);
    // 1 ms of overhead and 2 ms of timer lateness: each retry 3 ms after its backoff, from the
    // failure before it: 0, 103, 306 (103 + 200 + 3), 709 (306 + 400 + 3).
    assert_eq!(attempt_instants_ms(1, r#"overhead = "1ms", lateness = "2ms""#), [0, 103, 306, 709]);
    // The busy part, 1 ms per 1,000 attempts/s: when a retry is decided, its bucket (1 ms) holds
    // the one attempt that just failed, 1,000/s: 1 ms more per retry: 0, 104, 308, 712.
    let one_ms = r#"overhead = "1ms", lateness = "2ms", lateness_per_1000_per_s = "1ms""#;
    assert_eq!(attempt_instants_ms(1, one_ms), [0, 104, 308, 712]);
    // Ten clients at once: the k-th refusal (k = 1…10) finds k attempts in the bucket, so the
    // first retries leave at 103 + k ms, one per millisecond, where without the busy part all ten
    // go at 103 ms: the same client delays, correlated through how busy the process is.
    let wave = attempt_instants_ms(10, one_ms);
    assert_eq!(&wave[..10], &[0; 10]);
    assert_eq!(&wave[10..20], &(104..114).collect::<Vec<_>>()[..]);
    let flat = attempt_instants_ms(10, r#"overhead = "1ms", lateness = "2ms""#);
    assert_eq!(&flat[10..20], &[103; 10]);
}

#[test]
fn a_clients_work_sends_its_attempts_one_at_a_time_and_it_sees_replies_when_free() {
    // 1 ms of work per attempt, ten clients due at 0: the k-th first try (k = 1…10) leaves at
    // k ms and is refused at once, but the process is busy until 10 ms with the tries after it:
    // all ten refusals are seen at 10 ms, as an event loop sees what arrived while it was busy.
    // So the ten retries fall due together at 110 ms and leave one per millisecond, 111…120;
    // seen at 120, they fall due at 320 (leaving 321…330), then at 730 (731…740).
    let at = |offset: usize| (1..=10).map(move |k| k + offset);
    let expected: Vec<usize> = at(0).chain(at(110)).chain(at(320)).chain(at(730)).collect();
    assert_eq!(attempt_instants_ms(10, r#"work = "1ms""#), expected);
    // 200 clients: the first tries keep the process busy until 200 ms; every refusal is seen
    // then, so the retries leave one per millisecond from 301 ms, where without the work all
    // 200 would go at 100 ms together.
    let busy = attempt_instants_ms(200, r#"work = "1ms""#);
    assert_eq!(&busy[..200], &(1..=200).collect::<Vec<_>>()[..]);
    assert_eq!(&busy[200..400], &(301..=500).collect::<Vec<_>>()[..]);
    assert_eq!(&attempt_instants_ms(200, "")[200..400], &[100; 200][..]);
    // The work adds to the retry shift of the other parts: with 1 ms of overhead as well, the
    // retries seen at 10 ms fall due at 111 (leaving 112…121), seen at 121 fall due at 322
    // (323…332), seen at 332 at 733 (734…743).
    let both: Vec<usize> = at(0).chain(at(111)).chain(at(322)).chain(at(733)).collect();
    assert_eq!(attempt_instants_ms(10, r#"work = "1ms", overhead = "1ms""#), both);
}
