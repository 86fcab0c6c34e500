//! Tests that pin the rules cargo-mutants found unguarded: each names the rule it
//! protects and fails when the code computing it changes (a `*` for a `/`, a constant, a
//! comparison). See docs/TESTING.md, "Mutation testing", for the command and scores.
//!
//! Equivalent mutant (cargo-mutants, crates/core/src/metrics/recovery.rs): `w + slow` → `w - slow` in
//! `calm_window_start`'s prefix sums. A window is calm only if no bucket in it is slow, judged
//! as `w1 == w0`; counting slow buckets down (wrapping) instead of up changes the count over
//! exactly the same windows, so no test can tell the two apart.

use retrystorm::metrics::recovery::recovery_time_ns;
use retrystorm::metrics::{HopBucket, RunRecord};
use retrystorm::scenario::Scenario;

/// An outage over [0, 2 s), 100 ms buckets, a 500 ms hold, 1 ms service at hop 0.
const OUTAGE: &str = r#"name = "recovery"
horizon = "10s"
bucket = "100ms"
recovery_hold = "500ms"

[[tenant]]
name = "main"
clients = 10
arrival = { kind = "herd", spread = "1s" }
policy = "client"

[policy.client]
jitter = "full"
max_attempts = 3

[[hop]]
name = "api"
service = { dist = "constant", mean = "1ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "2s"
"#;

fn spec() -> retrystorm::model::SimSpec {
    Scenario::from_source("recovery.toml", OUTAGE, &[]).expect("valid").base
}

/// A record whose hop-0 series has `attempts`/`retries`/`wait` per bucket from the closure.
fn record(
    spec: &retrystorm::model::SimSpec,
    prefault_p99_ns: Option<u64>,
    bucket: impl Fn(usize) -> HopBucket,
) -> RunRecord {
    let mut record = RunRecord::empty(spec.hops.len(), spec.tenants.len(), spec.bucket_count());
    record.hop_series[0] = (0..spec.bucket_count()).map(bucket).collect();
    record.prefault_wait_p99_ns = prefault_p99_ns;
    record
}

fn hop_bucket(attempts: u32, retries: u32, wait_ns: u64) -> HopBucket {
    HopBucket {
        attempts,
        retries,
        first_attempts: attempts - retries,
        queue_wait_max_ns: wait_ns,
        ..HopBucket::default()
    }
}

/// Rule: recovery time = start of the first calm window (retries ≤ 5% of attempts over the
/// hold) minus the end of the last fault. Retries stop at bucket 35 (3.5 s): 3.5 − 2 = 1.5 s.
#[test]
fn recovery_time_is_the_first_calm_window_after_the_fault_end() {
    let spec = spec();
    let rec = record(&spec, None, |b| if b < 35 { hop_bucket(100, 50, 0) } else { hop_bucket(100, 0, 0) });
    assert_eq!(recovery_time_ns(&rec, &spec.run_shape()), Some(1_500_000_000));
    // 5% retries are still calm, 6% are not: the threshold is inclusive and exactly 5%.
    let five = record(&spec, None, |b| if b < 35 { hop_bucket(100, 50, 0) } else { hop_bucket(100, 5, 0) });
    assert_eq!(recovery_time_ns(&five, &spec.run_shape()), Some(1_500_000_000));
    let six = record(&spec, None, |b| if b < 35 { hop_bucket(100, 50, 0) } else { hop_bucket(100, 6, 0) });
    assert_eq!(recovery_time_ns(&six, &spec.run_shape()), None, "6% retries throughout is never calm: metastable");
}

/// Rule: a bucket is slow when its longest queue wait exceeds twice the baseline, the baseline
/// being the pre-fault p99 wait floored at one mean service time. Baseline 10 ms here: 15 ms is
/// not slow, 21 ms is (the calm window then starts after it, at bucket 23: 0.3 s).
#[test]
fn a_slow_bucket_is_one_above_twice_the_baseline_wait() {
    let spec = spec();
    let ms = 1_000_000;
    let with_wait = |wait| record(&spec, Some(10 * ms), move |b| hop_bucket(100, 0, if b == 22 { wait } else { 0 }));
    assert_eq!(recovery_time_ns(&with_wait(15 * ms), &spec.run_shape()), Some(0), "15 ms < 2 × 10 ms is calm");
    assert_eq!(recovery_time_ns(&with_wait(20 * ms), &spec.run_shape()), Some(0), "exactly 2× is still calm");
    assert_eq!(
        recovery_time_ns(&with_wait(21 * ms), &spec.run_shape()),
        Some(300_000_000),
        "21 ms > 2 × 10 ms is slow"
    );
    // Without a pre-fault measurement the floor is the 1 ms mean service: 2.5 ms is slow.
    let floor = record(&spec, None, move |b| hop_bucket(100, 0, if b == 22 { 2_500_000 } else { 0 }));
    assert_eq!(recovery_time_ns(&floor, &spec.run_shape()), Some(300_000_000));
    let under = record(&spec, None, move |b| hop_bucket(100, 0, if b == 22 { 1_900_000 } else { 0 }));
    assert_eq!(recovery_time_ns(&under, &spec.run_shape()), Some(0));
}

/// Rule: a run's recovery cannot be judged without a trigger, when its trigger lasts to the horizon, or when
/// nothing at all (no attempt, no success) happened after it; a run still attempting after it,
/// or whose only later activity is successes of attempts made during it, is judged.
#[test]
fn recovery_is_unobservable_only_without_time_or_activity_after_the_trigger() {
    use retrystorm::metrics::recovery::{recovery_outcome, RecoveryOutcome};
    let spec = spec();
    let shape = spec.run_shape();
    // Hop 0 calms down at 3.5 s (1.5 s after the fault); the tenant's buckets from the fault's
    // end (bucket 20) on hold `attempts` and `successes`.
    let after_fault = |retries_until: usize, attempts: u32, successes: u32| {
        let mut r =
            record(&spec, None, |b| if b < retries_until { hop_bucket(100, 50, 0) } else { hop_bucket(100, 0, 0) });
        for t in r.tenant_series[0].iter_mut().skip(20) {
            t.attempts = attempts;
            t.successes = successes;
        }
        r
    };
    assert_eq!(recovery_outcome(&after_fault(35, 0, 0), &shape), RecoveryOutcome::NotObservable);
    assert_eq!(recovery_outcome(&after_fault(35, 10, 0), &shape), RecoveryOutcome::Recovered(1_500_000_000));
    assert_eq!(recovery_outcome(&after_fault(35, 0, 10), &shape), RecoveryOutcome::Recovered(1_500_000_000));
    assert_eq!(recovery_outcome(&after_fault(usize::MAX, 10, 0), &shape), RecoveryOutcome::Metastable);
    // A fault to the horizon leaves no time to recover in, whatever happened.
    let to_horizon =
        Scenario::from_source("to.toml", &OUTAGE.replace("to = \"2s\"", "to = \"10s\""), &[]).expect("valid").base;
    assert_eq!(recovery_outcome(&after_fault(35, 10, 10), &to_horizon.run_shape()), RecoveryOutcome::NotObservable);
    // Without any trigger there is nothing to recover from: not observable, calm or not (a
    // system overloaded on its own must not read "recovered after 0 s").
    let calm = Scenario::from_source("calm.toml", &OUTAGE[..OUTAGE.find("[[fault]]").expect("fault")], &[])
        .expect("valid")
        .base;
    for record in [after_fault(35, 10, 10), after_fault(usize::MAX, 10, 0)] {
        assert_eq!(recovery_outcome(&record, &calm.run_shape()), RecoveryOutcome::NotObservable);
        assert_eq!(recovery_time_ns(&record, &calm.run_shape()), None);
    }
}

/// Rule: every window that fits in the series is judged, the last one included: 10 buckets,
/// a 5-bucket hold, calm from bucket 5 to the end: the window starting at 5 is found; it does
/// not count when it starts at `before` (the horizon), nor does a 6-bucket hold fit.
#[test]
fn the_last_window_that_fits_in_the_series_is_judged() {
    use retrystorm::metrics::recovery::calm_window_start;
    let series: Vec<HopBucket> =
        (0..10).map(|b| if b < 5 { hop_bucket(100, 50, 0) } else { hop_bucket(100, 0, 0) }).collect();
    assert_eq!(calm_window_start(&series, 5, 0, 10, 1.0), Some(5));
    assert_eq!(calm_window_start(&series, 5, 0, 5, 1.0), None, "a window starting at `before` does not count");
    assert_eq!(calm_window_start(&series, 6, 0, 10, 1.0), None, "a 6-bucket hold does not fit in the calm tail");
}

fn policy(extra: &str) -> retrystorm::model::policy::RetryPolicy {
    let source =
        OUTAGE.replace("max_attempts = 3", &format!("max_attempts = 5\nbase = \"100ms\"\ncap = \"20s\"\n{extra}"));
    let spec = Scenario::from_source("policy.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).base;
    spec.policies[0].clone()
}

/// Rule: after a throttling error with `throttle_base` set, the delay is full jitter over
/// throttle_base × 2^(k−1): uniform on [0, 2 s] for k = 2 with a 1 s base, mean 1 s. 20,000
/// draws: standard error 2/√12/√20000 ≈ 4.1 ms, so ±25 ms is six standard errors (seed 17).
#[test]
fn the_backoff_after_a_throttle_is_full_jitter_from_throttle_base() {
    use rand::SeedableRng;
    let p = policy("throttle_base = \"1s\"");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let mut state = retrystorm::model::policy::JitterState::default();
    let n = 20_000;
    let draws: Vec<u64> = (0..n).map(|_| p.delay_after_throttle(2, &mut state, &mut rng)).collect();
    assert!(draws.iter().all(|&d| d <= 2_000_000_000), "a draw beyond 2 s");
    let mean_s = draws.iter().map(|&d| d as f64 / 1e9).sum::<f64>() / n as f64;
    assert!((mean_s - 1.0).abs() < 0.025, "mean {mean_s} s, expected 1 s (seed 17)");
    let zeros = draws.iter().filter(|&&d| d == 0).count();
    assert!(zeros < 5, "{zeros} zero delays: the backoff after a throttle collapsed");
    // Without throttle_base, a throttle gets the ordinary backoff: the same draws as a retry.
    let plain = policy("");
    let (mut a, mut b) = (rand_chacha::ChaCha8Rng::seed_from_u64(3), rand_chacha::ChaCha8Rng::seed_from_u64(3));
    let (mut sa, mut sb) = (Default::default(), Default::default());
    for k in 1..5 {
        assert_eq!(plain.delay_after_throttle(k, &mut sa, &mut a), plain.delay_before_retry(k, &mut sb, &mut b));
    }
}

fn breaker(threshold: f64, min_calls: u32, probes: u32) -> retrystorm::model::BreakerSpec {
    retrystorm::model::BreakerSpec {
        scope: retrystorm::model::Scope::Global,
        window: 10_000_000_000,
        threshold,
        min_calls,
        open_for: 1_000_000_000,
        probes,
        retries_only: false,
    }
}

/// Rule: a closed breaker opens when failures / calls in the window reach the threshold (and
/// at least min_calls were made). 3 failures in 10 calls is 0.3: open at threshold 0.3, not at
/// 0.31 (a `*` for the `/` would give 30 and open at both; a ratio over successes, 3/7, too).
#[test]
fn a_breaker_opens_at_its_failure_ratio() {
    use retrystorm::model::breaker::BreakerPosition;
    let run = |threshold: f64| {
        let spec = breaker(threshold, 10, 1);
        let mut state = spec.new_state();
        for i in 0..10u64 {
            spec.record(&mut state, i, i < 7);
        }
        matches!(state.position, BreakerPosition::Open { .. })
    };
    assert!(run(0.3), "3 failures in 10 calls reach a 0.3 threshold");
    assert!(!run(0.31), "0.3 < 0.31: the breaker must stay closed");
    assert!(!run(0.42), "3/7 (failures over successes) is not the ratio");
}

/// Rule: half-open lets exactly `probes` trial calls through, and closes only when all of them
/// succeed; one failing probe reopens it.
#[test]
fn a_half_open_breaker_counts_its_probes() {
    use retrystorm::model::breaker::BreakerPosition;
    let spec = breaker(0.5, 2, 3);
    let mut state = spec.new_state();
    spec.record(&mut state, 0, false);
    spec.record(&mut state, 1, false);
    assert!(matches!(state.position, BreakerPosition::Open { .. }));
    let later = 2_000_000_000;
    let allowed = (0..5).filter(|_| spec.allow(&mut state, later)).count();
    assert_eq!(allowed, 3, "half-open admits exactly the 3 probes");
    spec.record(&mut state, later, true);
    spec.record(&mut state, later, true);
    assert!(matches!(state.position, BreakerPosition::HalfOpen { .. }), "2 of 3 probes do not close it");
    spec.record(&mut state, later, true);
    assert!(matches!(state.position, BreakerPosition::Closed), "3 of 3 close it");
    // After closing, the window starts empty: one failure out of one call is below min_calls 2.
    spec.record(&mut state, later + 1, false);
    assert!(matches!(state.position, BreakerPosition::Closed), "the window was not cleared on closing");
}

/// Proportional jitter (gRPC) draws from exp(k) × [1 − ratio, 1 + ratio]: its largest delay, used
/// by the deadline-fit and horizon warnings, is exp(k) × (1 + ratio).
/// Rule: the proportional strategy's upper bound is exp(k) × (1 + ratio), exactly.
#[test]
fn the_proportional_upper_bound_is_exp_times_one_plus_ratio() {
    let proportional = |ratio: f64| {
        let source = OUTAGE
            .replace("jitter = \"full\"", &format!("jitter = \"proportional\"\nratio = {ratio}\nbase = \"100ms\""));
        Scenario::from_source("policy.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).base.policies[0].clone()
    };
    let p = proportional(0.5);
    // base 100 ms, multiplier 2, cap 20 s: exp(1) = 100 ms, exp(3) = 400 ms.
    assert_eq!(p.delay_upper_bound(1), 150_000_000);
    assert_eq!(p.delay_upper_bound(3), 600_000_000);
    let narrow = proportional(0.2);
    assert_eq!(narrow.delay_upper_bound(2), 240_000_000);
    // And no draw exceeds it, while the largest of many draws comes close (within 1 %).
    use rand::SeedableRng;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
    let mut state = retrystorm::model::policy::JitterState::default();
    let max = (0..2_000).map(|_| p.delay_before_retry(1, &mut state, &mut rng)).max().expect("draws");
    assert!(max <= 150_000_000 && max > 148_500_000, "largest draw {max} ns vs bound 150 ms (seed 17)");
}

/// Rule: a sliding window of W counts what happened in the last W, slot by slot: an event
/// leaves exactly when its slot (W/10 wide) is reused one window later, and later events stay.
#[test]
fn the_sliding_window_drops_an_event_one_window_later_and_keeps_the_rest() {
    use retrystorm::model::sliding::SlidingCounts;
    const S: u64 = 1_000_000_000;
    let mut w = SlidingCounts::<2>::new(10 * S); // ten 1 s slots
    w.add(S / 2, 0, 1.0); // slot 0
    w.add(3 * S + S / 2, 0, 1.0); // slot 3
    w.add(3 * S + S / 2, 1, 5.0); // another counter, same slot
    assert_eq!(w.sum(9 * S + S / 2, 0), 2.0, "both events are within the last 10 s");
    assert_eq!(w.sum(10 * S + S / 2, 0), 1.0, "slot 0 is reused at 10 s: the 0.5 s event left");
    w.add(10 * S + S / 2, 0, 4.0); // lands in the reused slot 0, beside the 3.5 s event
    assert_eq!(w.sum(12 * S, 0), 5.0);
    assert_eq!(w.sum(12 * S, 1), 5.0, "counters are separate");
    assert_eq!(w.sum(13 * S + S / 2, 0), 4.0, "slot 3 is reused at 13 s: the 3.5 s event left");
    assert_eq!(w.sum(13 * S + S / 2, 1), 0.0);
    assert_eq!(w.sum(25 * S, 0), 0.0, "a whole window later nothing is left");
}

/// A three-hop chain api → svc → db (no jitter: horizons are attempts × timeouts): client
/// 3 × 1 s, inner 2 × 500 ms, deep 10 × 2 s, so deliveries reach db for up to 24 s end to end.
/// The scenario keys and tenant are OUTAGE's; its policies and hops follow.
const CHAIN_POLICIES_AND_HOPS: &str = r#"[policy.client]
jitter = "none"
base = "100ms"
max_attempts = 3
attempt_timeout = "1s"

[policy.inner]
jitter = "none"
base = "100ms"
max_attempts = 2
attempt_timeout = "500ms"

[policy.deep]
jitter = "none"
base = "100ms"
max_attempts = 10
attempt_timeout = "2s"

[[hop]]
name = "api"
service = { dist = "constant", mean = "1ms" }
downstream_policy = "inner"

[[hop]]
name = "svc"
service = { dist = "constant", mean = "1ms" }
downstream_policy = "deep"

[[hop]]
name = "db"
service = { dist = "constant", mean = "1ms" }
idempotency = { ttl = "1s" }
"#;

fn chain() -> String {
    let head = &OUTAGE[..OUTAGE.find("[policy.client]").expect("OUTAGE has a client policy")];
    format!("{head}{CHAIN_POLICIES_AND_HOPS}")
}

fn chain_warnings(set: &[&str]) -> Vec<String> {
    let overrides: Vec<_> = set.iter().map(|s| retrystorm::scenario::parse_assignment(s).expect("parses")).collect();
    Scenario::from_source("chain.toml", &chain(), &overrides).unwrap_or_else(|e| panic!("{e}")).warnings
}

/// Rule: the inner-horizon warning names the pair where it happens (svc calling db), not the
/// first hop or the same hop twice.
#[test]
fn an_inner_horizon_warning_names_the_calling_hop_and_the_called_hop() {
    let w = chain_warnings(&[]);
    let inner: Vec<&String> = w.iter().filter(|m| m.contains("not strictly less than its caller's horizon")).collect();
    assert_eq!(inner.len(), 1, "{w:?}");
    assert!(inner[0].starts_with("hop `svc` retries hop `db` for up to 20s with policy `deep`"), "{}", inner[0]);
    assert!(inner[0].contains("its caller's horizon 1s (policy `inner`)"), "{}", inner[0]);
}

/// Rule: a TTL equal to the end-to-end horizon is too short (late deliveries at exactly the
/// horizon would find the key gone): the warning fires at ttl = horizon and not one ns above.
#[test]
fn a_ttl_equal_to_the_end_to_end_horizon_warns_and_one_nanosecond_more_does_not() {
    let late =
        |w: &[String]| w.iter().any(|m| m.starts_with("deliveries of one event can reach hop `db` for up to 24s"));
    assert!(late(&chain_warnings(&["hop.db.idempotency.ttl=24s"])));
    assert!(!late(&chain_warnings(&["hop.db.idempotency.ttl=24000000001ns"])));
}

/// Rule: a hang (or lost-reply) fault at a hop whose calling policy has neither attempt_timeout
/// nor deadline warns that those attempts never end; a timeout, or the fault on another hop,
/// silences it.
#[test]
fn a_hang_without_any_timeout_warns_only_where_the_hang_is() {
    let hang = |extra: &str| {
        let source = OUTAGE
            .replace("kind = \"outage\"", "kind = \"hang\"")
            .replace("max_attempts = 3", &format!("max_attempts = 3\n{extra}"));
        Scenario::from_source("hang.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).warnings
    };
    let w = hang("");
    assert!(
        w.iter().any(|m| m == "hop `api` has a hang fault but policy `client` has neither attempt_timeout nor deadline: those attempts never end (they stay in_flight)"),
        "{w:?}"
    );
    let bounded = hang("attempt_timeout = \"1s\"");
    assert!(!bounded.iter().any(|m| m.contains("has a hang fault")), "{bounded:?}");
    let lost = OUTAGE.replace("kind = \"outage\"", "kind = \"lost_reply\"\np = 0.5");
    let w = Scenario::from_source("lost.toml", &lost, &[]).unwrap_or_else(|e| panic!("{e}")).warnings;
    assert!(w.iter().any(|m| m.starts_with("hop `api` has a hang fault")), "{w:?}");
    // Two hops, the hang on the second: the client's policy calling the first hop is not named.
    let chain = chain().replace("idempotency = { ttl = \"1s\" }", "").replace("attempt_timeout = \"2s\"", "")
        + "\n[[fault]]\nhop = \"db\"\nkind = \"hang\"\nfrom = \"0s\"\nto = \"1s\"\n";
    let w = Scenario::from_source("chain.toml", &chain, &[]).unwrap_or_else(|e| panic!("{e}")).warnings;
    let hangs: Vec<&String> = w.iter().filter(|m| m.contains("has a hang fault")).collect();
    assert_eq!(hangs.len(), 1, "{w:?}");
    assert!(hangs[0].starts_with("hop `db` has a hang fault but policy `deep`"), "{}", hangs[0]);
}

/// `retrystorm budget` with equal jitter over 1 h (base 2 s, ×2, cap 1 h, 30 s timeouts).
fn equal_budget() -> retrystorm::retry_window::BudgetConfig {
    let mut cfg = retrystorm::retry_window::BudgetConfig::guide_defaults(3_600_000_000_000);
    cfg.jitter = retrystorm::model::Jitter::Equal;
    cfg.seeds_for_distribution = 40;
    cfg
}

/// Rule: equal jitter waits uniformly in [exp(k)/2, exp(k)] before attempt k; the schedule
/// checked is not empty (a check over no rows cannot fail), and each row's `delay_s` is the
/// delay the simulator draws, in seconds, and `start_s` the delays plus prior timeouts.
#[test]
fn the_budget_schedule_rows_are_equal_jitter_delays_and_their_starts() {
    let cfg = equal_budget();
    let report = retrystorm::retry_window::compute(&cfg).expect("valid");
    let delays = retrystorm::retry_window::schedule(&cfg, cfg.window_ns, cfg.seed);
    assert!(delays.len() >= 5, "a 1 h window fits several attempts, got {}", delays.len());
    assert_eq!(report.schedule.len(), delays.len());
    let policy = cfg.policy();
    let mut start_ns = 0_u64;
    for (k, (row, &d)) in (1..).zip(report.schedule.iter().zip(&delays)) {
        let exp = policy.exp_delay(k);
        assert!(d >= exp / 2 && d <= exp, "attempt {k}: {d} ns outside [{}, {exp}]", exp / 2);
        assert_eq!(row.attempt, k);
        assert_eq!(row.delay_s, d as f64 / 1e9, "attempt {k}");
        start_ns += d;
        assert_eq!(row.start_s, start_ns as f64 / 1e9, "attempt {k}");
        start_ns += cfg.attempt_timeout_ns;
    }
}

/// Rule: the attempts distribution counts, per number of attempts fitted, the seeds seed,
/// seed + 1, … that fit it; min, max and mean are those of the per-seed counts, computed here
/// independently from each seed's schedule.
#[test]
fn the_budget_attempts_histogram_and_mean_are_the_per_seed_counts() {
    let cfg = equal_budget();
    let report = retrystorm::retry_window::compute(&cfg).expect("valid");
    let counts: Vec<u32> = (0..u64::from(cfg.seeds_for_distribution))
        .map(|i| retrystorm::retry_window::schedule(&cfg, cfg.window_ns, cfg.seed + i).len() as u32)
        .collect();
    let mut expected = std::collections::BTreeMap::new();
    for &c in &counts {
        *expected.entry(c).or_insert(0_u32) += 1;
    }
    let d = &report.distribution;
    assert!(expected.len() >= 2, "equal jitter over 40 seeds fits different counts: {expected:?}");
    assert_eq!(d.histogram, expected);
    assert_eq!(d.attempts_min, *counts.iter().min().expect("seeds"));
    assert_eq!(d.attempts_max, *counts.iter().max().expect("seeds"));
    let mean = counts.iter().map(|&c| f64::from(c)).sum::<f64>() / counts.len() as f64;
    assert!((d.attempts_mean - mean).abs() < 1e-12, "mean {} vs {mean}", d.attempts_mean);
}

/// Rule: an inner horizon equal to its caller's is not strictly less and warns; one nanosecond
/// shorter does not (svc retries db with `deep`: 2 attempts × its timeout against `inner`'s 1 s).
#[test]
fn an_inner_horizon_equal_to_its_callers_warns_and_one_nanosecond_less_does_not() {
    let inner_warns = |timeout: &str| {
        let w = chain_warnings(&["policy.deep.max_attempts=2", &format!("policy.deep.attempt_timeout={timeout}")]);
        w.iter().any(|m| m.starts_with("hop `svc` retries hop `db` for up to") && m.contains("its caller's horizon 1s"))
    };
    assert!(inner_warns("500ms"), "2 × 500 ms = 1 s is not strictly less than 1 s");
    assert!(!inner_warns("499999999ns"), "2 × 499,999,999 ns < 1 s");
}

/// Rule: the caller's attempt timeout must cover the inner horizon: `inner` gives each attempt
/// 500 ms, so an inner horizon of exactly 500 ms is fine and one nanosecond more warns.
#[test]
fn an_attempt_timeout_shorter_than_the_inner_horizon_warns_and_an_equal_one_does_not() {
    let gives_up = |timeout: &str| {
        let w = chain_warnings(&["policy.deep.max_attempts=1", &format!("policy.deep.attempt_timeout={timeout}")]);
        w.iter().any(|m| m.starts_with("policy `inner` gives each attempt 500ms but hop `svc` may retry hop `db`"))
    };
    assert!(!gives_up("500ms"), "an inner horizon equal to the attempt timeout fits it");
    assert!(gives_up("500000001ns"), "one nanosecond longer does not");
}

/// Rule: the late-delivery warning of an inner store says the horizon is the callers' end to
/// end; at the entry hop (hop 0) the horizon is the clients' own and it says not.
#[test]
fn a_late_delivery_warning_says_end_to_end_only_at_inner_stores() {
    let inner = chain_warnings(&[]);
    let at_db: Vec<&String> =
        inner.iter().filter(|m| m.starts_with("deliveries of one event can reach hop `db`")).collect();
    assert_eq!(at_db.len(), 1, "{inner:?}");
    assert!(at_db[0].contains("for up to 24s (the callers' horizons end to end: un-jittered delays"), "{}", at_db[0]);
    let source = chain()
        .replace("idempotency = { ttl = \"1s\" }", "")
        .replace("downstream_policy = \"inner\"", "downstream_policy = \"inner\"\nidempotency = { ttl = \"1s\" }");
    let entry = Scenario::from_source("entry.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).warnings;
    let at_api: Vec<&String> =
        entry.iter().filter(|m| m.starts_with("deliveries of one event can reach hop `api`")).collect();
    assert_eq!(at_api.len(), 1, "{entry:?}");
    assert!(at_api[0].contains("for up to 3s (un-jittered delays + attempt timeouts)"), "{}", at_api[0]);
}

/// Rule: proportional jitter without a `ratio` is gRPC's connection backoff, ±20% (MODEL.md's
/// default); a mutant defaulting it to 1.0 (delays from 0 to 2×) survived the policy tests.
#[test]
fn proportional_jitter_defaults_to_grpcs_twenty_percent() {
    use retrystorm::model::policy::Jitter;
    let source = OUTAGE.replace("jitter = \"full\"", "jitter = \"proportional\"");
    let spec = Scenario::from_source("p.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).base;
    let Jitter::Proportional { ratio } = spec.policies[0].jitter else {
        panic!("proportional expected, got {:?}", spec.policies[0].jitter)
    };
    assert_eq!(ratio, 0.2);
}

/// Rule: `retry_on` retries exactly the failure kinds it lists: each flag answers for its own
/// kind and no other (a mutant answering `true` for every kind survived the policy tests).
#[test]
fn retry_on_allows_exactly_the_listed_failure_kinds() {
    use retrystorm::model::budget::FailureKind;
    use retrystorm::model::RetryOn;
    let kinds = [FailureKind::Transient, FailureKind::Throttling, FailureKind::Timeout];
    for mask in 0..8u8 {
        let on = RetryOn { transient: mask & 1 != 0, throttling: mask & 2 != 0, timeout: mask & 4 != 0 };
        let allowed: Vec<bool> = kinds.iter().map(|&k| on.allows(k)).collect();
        assert_eq!(allowed, vec![mask & 1 != 0, mask & 2 != 0, mask & 4 != 0], "retry_on mask {mask:03b}");
    }
    assert!(kinds.iter().all(|&k| RetryOn::ALL.allows(k)), "the default retries every failure");
}

/// Rule: with a deadline and an attempt timeout, the attempts that fit are counted from the worst
/// case, delays at their upper bounds plus one timeout each. Un-jittered 1 s × 2^(k−1), 1 s
/// timeouts: 2 attempts end by 3 s, 3 by 6 s, 4 by 11 s. A 10 s deadline fits 3 of 5; an 11 s
/// one fits all 4 of 4 (`None`: max_attempts is not cut); no deadline, nothing to fit.
#[test]
fn the_attempts_that_fit_a_deadline_are_counted_from_the_worst_case() {
    let with = |fields: &str| {
        let source = OUTAGE.replace(
            "jitter = \"full\"\nmax_attempts = 3",
            &format!("jitter = \"exponential\"\nbase = \"1s\"\ncap = \"20s\"\nattempt_timeout = \"1s\"\n{fields}"),
        );
        let spec = Scenario::from_source("fit.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).base;
        spec.policies[0].attempts_fitting_deadline()
    };
    assert_eq!(with("max_attempts = 5\ndeadline = \"10s\""), Some(3));
    assert_eq!(with("max_attempts = 5\ndeadline = \"11s\""), Some(4));
    assert_eq!(with("max_attempts = 4\ndeadline = \"11s\""), None, "4 attempts end exactly at the deadline");
    assert_eq!(with("max_attempts = 5"), None, "no deadline");
}

/// Rule: a budget given by its kind alone takes the defaults docs/MODEL.md lists ("Budgets,
/// throttles, breakers"): AWS 500 / 5 / 10 / 5 / +1, gRPC 10 tokens / 0.1, Finagle 10 s / 20 % /
/// 10 per s, ratio 0.1 over 10 s with no minimum, adaptive k = 2 over 2 min, token bucket 5 /
/// 0.1. Kills the serde-default mutants of crates/core/src/model/budget.rs (`whole`, `tenths`, `seconds`
/// returning a constant, `/` → `%` or `*` in `tenths`, `*` → `+` or `/` in `seconds`).
#[test]
fn a_budget_given_by_its_kind_alone_takes_the_documented_defaults() {
    use retrystorm::model::BudgetKind as K;
    const S: u64 = 1_000_000_000;
    let kind = |name: &str| {
        let budget = policy(&format!("budget = {{ kind = \"{name}\", scope = \"client\" }}")).budget;
        budget.unwrap_or_else(|| panic!("{name}: no budget")).kind
    };
    let aws = K::AwsQuota {
        capacity: 500.0,
        retry_cost: 5.0,
        timeout_cost: 10.0,
        throttling_cost: 5.0,
        no_retry_increment: 1.0,
    };
    assert_eq!(kind("aws_quota"), aws);
    assert_eq!(kind("grpc_throttle"), K::GrpcThrottle { max_tokens: 10.0, token_ratio: 0.1 });
    assert_eq!(kind("finagle"), K::Finagle { ttl: 10 * S, percent: 0.2, min_retries_per_s: 10.0 });
    assert_eq!(kind("ratio"), K::Ratio { ratio: 0.1, window: 10 * S, min_retries: 0.0 });
    assert_eq!(kind("adaptive_throttle"), K::AdaptiveThrottle { k: 2.0, window: 120 * S });
    assert_eq!(kind("token_bucket"), K::TokenBucket { capacity: 5.0, per_request: 0.1 });
}

/// Rule: a budget schedule never ends only when nothing advances time: `--base 0s` together
/// with `--attempt-timeout 0s`, or `--jitter none` (retries at once) with `--attempt-timeout
/// 0s`. Either alone is valid: with base 0 each attempt still takes its 30 s timeout (1 h fits
/// 3600 / 30 = 120), and with 0 s timeouts exponential delays 2, 4, …, 1024 s fit 1 h (2046 s;
/// the next, 2048 s, would end at 4094 s). Kills crates/core/src/retry_window.rs's `&&` → `||` and `==` → `!=`
/// in `validate`'s first two checks.
#[test]
fn a_budget_schedule_is_refused_only_when_nothing_advances_time() {
    use retrystorm::model::Jitter;
    use retrystorm::retry_window::{compute, BudgetConfig, BudgetError};
    const S: u64 = 1_000_000_000;
    let config = |base_ns: u64, attempt_timeout_ns: u64, jitter: Jitter| BudgetConfig {
        base_ns,
        attempt_timeout_ns,
        jitter,
        seeds_for_distribution: 1,
        ..BudgetConfig::guide_defaults(3600 * S)
    };
    let base_zero = compute(&config(0, 30 * S, Jitter::Exponential)).expect("base 0 s with 30 s timeouts is valid");
    assert_eq!(base_zero.budget.attempts_fitted, 120);
    let no_timeout = compute(&config(2 * S, 0, Jitter::Exponential)).expect("0 s timeouts with a backoff are valid");
    assert_eq!((no_timeout.budget.attempts_fitted, no_timeout.budget.scheduled.seconds), (10, 2046.0));
    assert_eq!(compute(&config(0, 0, Jitter::Exponential)).err(), Some(BudgetError::ZeroProgress));
    assert_eq!(compute(&config(2 * S, 0, Jitter::None)).err(), Some(BudgetError::ZeroProgressImmediate));
}

/// Rule: the budget report names its delay strategy as a scenario writes it, with its
/// parameters (`full`, `proportional(0.2)`, `schedule(5s, 5m)`), in the JSON `inputs.jitter`
/// and on the text's first line. Kills `jitter_label` → `""` or `"xyzzy"` (crates/core/src/retry_window.rs).
#[test]
fn the_budget_report_names_its_jitter_with_its_parameters() {
    use retrystorm::model::Jitter;
    use retrystorm::retry_window::{compute, BudgetConfig};
    const S: u64 = 1_000_000_000;
    let cases = [
        (Jitter::Full, "full"),
        (Jitter::Proportional { ratio: 0.2 }, "proportional(0.2)"),
        (Jitter::Schedule { delays: vec![5 * S, 300 * S] }, "schedule(5s, 5m)"),
    ];
    for (jitter, label) in cases {
        let cfg = BudgetConfig { jitter, seeds_for_distribution: 1, ..BudgetConfig::guide_defaults(3600 * S) };
        let report = compute(&cfg).expect("valid");
        let json = serde_json::to_value(&report).expect("serializes");
        assert_eq!(json["inputs"]["jitter"], label);
        let text = report.to_text(true);
        let first = text.lines().next().expect("a first line");
        assert!(first.ends_with(&format!(", attempt timeout 30 s, jitter {label}")), "{first}");
    }
}

/// Rule: the idempotency TTL is window + margin, and the guide's invariant horizon ≤ window <
/// TTL holds as soon as the TTL outlasts the window, here by one nanosecond (`--margin 0s`
/// violates it: crates/core/src/retry_window.rs's unit tests). Kills `+` → `*` in `compute`'s TTL (crates/core/src/retry_window.rs):
/// window × margin also exceeds the window for the 6 h default margin, but not for 1 ns.
#[test]
fn a_ttl_one_nanosecond_past_the_window_holds_the_budget_invariant() {
    use retrystorm::retry_window::{compute, BudgetConfig};
    const S: u64 = 1_000_000_000;
    let cfg = BudgetConfig {
        margin_ns: 1,
        jitter: retrystorm::model::Jitter::Exponential,
        seeds_for_distribution: 1,
        ..BudgetConfig::guide_defaults(3600 * S)
    };
    let report = compute(&cfg).expect("valid");
    // Exponential delays 2, 4, …, 1024 s and 30 s timeouts: 10 attempts end at 2,346 s ≤ 1 h.
    assert_eq!((report.max_attempts, report.budget.worst_case_scheduled.seconds), (10, 2346.0));
    assert!(report.budget.idempotency_ttl.seconds > 3600.0, "1 h + 1 ns, not 1 h × 1");
    assert!(report.invariant_holds, "a TTL 1 ns longer than the window outlasts it");
}

/// Rule: a backlog has cleared once it is back to its normal level, the largest level at the
/// bucket boundaries up to the first trigger's start — the boundary at or just before the start
/// included — and at least the hop's workers.
///
/// 100 ms buckets, one worker, a fault over [250 ms, 500 ms). Per-bucket entered − left:
/// +2, +4, +3, +3, then −2 six times, so the backlog at boundaries 0 … 10 (0 … 1 s) is
/// 0, 2, 6, 9, 12, 10, 8, 6, 4, 2, 0. The boundaries before the start (250 ms) are 0, 100 and
/// 200 ms: normal level max(0, 2, 6, 1 worker) = 6. From the trigger's end (boundary 5) the first
/// level ≤ 6 is boundary 7 (700 ms): cleared 700 − 500 = 200 ms after it. Leaving out the 200 ms
/// boundary (normal 2) would clear at boundary 9 (0.4 s); counting post-trigger levels as normal
/// (12) would clear at once (0 s).
#[test]
fn a_backlog_clears_at_its_largest_level_up_to_the_trigger_start() {
    use retrystorm::metrics::after::after_trigger;
    let source = OUTAGE
        .replace("from = \"0s\"", "from = \"250ms\"")
        .replace("to = \"2s\"", "to = \"500ms\"")
        .replace("name = \"api\"", "name = \"api\"\nworkers = 1");
    let spec = Scenario::from_source("cleared.toml", &source, &[]).unwrap_or_else(|e| panic!("{e}")).base;
    let shape = spec.run_shape();
    assert_eq!((shape.first_trigger_start, shape.trigger_end), (Some(250_000_000), Some(500_000_000)));
    assert_eq!((shape.bucket, shape.hops[0].workers), (100_000_000, 1));
    let net = [2, 4, 3, 3, -2, -2, -2, -2, -2, -2];
    let rec = record(&spec, None, |b| {
        let n: i32 = net.get(b).copied().unwrap_or(0);
        HopBucket { entered: n.max(0) as u32, left: (-n).max(0) as u32, ..HopBucket::default() }
    });
    let after = after_trigger(&rec.hop_series[0], &shape, 0, shape.hops[0].capacity_per_s);
    assert_eq!(after.backlog_cleared_s, Some(0.2), "normal level 6 (the 200 ms boundary): 700 ms − 500 ms");
}

// Hedging (crates/core/src/model/sim/hedge_state.rs and hedge.rs). Each scenario below is deterministic: herd clients, constant
// service and network delays, so the counts follow from the timeline written beside each test.

/// One run of `toml` (replication 0).
fn run_toml(toml: &str) -> RunRecord {
    let s = Scenario::from_source("rule.toml", toml, &[]).unwrap_or_else(|e| panic!("{e}"));
    retrystorm::model::sim::run(&s.base, s.seed, 0)
}

/// `clients` herd clients sending one request each over `spread`, policy `p` (`policy`), one
/// hop "server" (1,000 workers, constant `service` and `network`), then `rest` (more of its keys,
/// further hops, faults).
fn hedged_hop(clients: u32, spread: &str, policy: &str, service: &str, network: &str, rest: &str) -> String {
    format!(
        r#"name = "hedge-rule"
seed = 7
horizon = "20s"
[[tenant]]
name = "c"
clients = {clients}
arrival = {{ kind = "herd", start = "0s", spread = "{spread}", requests_per_client = 1 }}
policy = "p"
[policy.p]
jitter = "none"
max_attempts = 1
{policy}
[[hop]]
name = "server"
workers = 1000
service = {{ dist = "constant", mean = "{service}" }}
network = {{ dist = "constant", mean = "{network}" }}
{rest}"#
    )
}

/// Rule: a hedge is armed only when its delay falls strictly before the attempt's timeout
/// (a copy sent at the instant its caller gives up could never be waited for). 100 requests,
/// 100 ms of service, a 50 ms timeout, one hedge token per attempt (`max_share = 1`): a hedge
/// 1 ns before the timeout goes for every attempt, one at the timeout for none. Kills `<` →
/// `<=` in `track_attempt` (the hedge's event, queued before the timeout's, would fire first)
/// and, in crates/core/src/model/sim/cancel.rs, `&&` → `||` in `copy_awaited` (a copy that timed out still
/// counted as awaited: the call never saw its hedge time out and never ended).
#[test]
fn a_hedge_is_armed_only_when_its_delay_falls_before_the_attempt_timeout() {
    for (after, hedges) in [("49999999ns", 100), ("50ms", 0)] {
        let policy = format!("attempt_timeout = \"50ms\"\nhedge = {{ after = \"{after}\", max_share = 1.0 }}");
        let r = run_toml(&hedged_hop(100, "10s", &policy, "100ms", "0s", ""));
        let h = &r.hops[0];
        assert_eq!((h.hedges, h.attempts), (hedges, 100 + hedges), "hedge after {after}, timeout 50 ms");
        assert_eq!(r.tenants[0].dlq, 100, "hedge after {after}: every call ends, timed out");
    }
}

/// Rule: a hedge starts with no service of its own: work a copy never did is never counted as
/// wasted, so wasted work is at most the work done. 10 requests at t = 0 (the ten tokens the
/// hedge bucket can save: all hedged), 10 ms network delay each way, 100 ms of service, a 55 ms
/// timeout, a hedge after 40 ms, an outage over [45 ms, 55 ms) that lets work in service
/// complete. Each original is in service over [10, 110) ms; its hedge, sent at 40 ms, is
/// refused at 50 ms and its refusal reaches the caller at 60 ms, after both copies timed out
/// at 55 ms. The original's 100 ms are wasted (timed out) and nothing else: wasted = busy =
/// 10 × 100 ms. Kills deleting `service_ns: 0` from the copy in `on_hedge_fire` (the copy
/// inherited the original's 100 ms and wasted twice the work done).
#[test]
fn a_hedge_refused_without_service_wastes_no_work() {
    let policy = "attempt_timeout = \"55ms\"\nhedge = { after = \"40ms\", max_share = 1.0 }";
    let outage =
        "[[fault]]\nhop = \"server\"\nkind = \"outage\"\nin_service = \"complete\"\nfrom = \"45ms\"\nto = \"55ms\"\n";
    let r = run_toml(&hedged_hop(10, "0s", policy, "100ms", "10ms", outage));
    let h = &r.hops[0];
    assert_eq!((h.hedges, h.served), (10, 10), "every original served, every hedge refused");
    assert_eq!(h.busy_ns, 10 * 100_000_000);
    assert_eq!((h.wasted_work_ns, h.wasted_timed_out_ns), (h.busy_ns, h.busy_ns), "wasted work is the work done");
    assert_eq!(r.tenants[0].succeeded, 0);
}

/// Rule: a hedge draws apart from its original (its own draw key): the coin of each downstream
/// edge is tossed again for the copy. client → server (10 ms) → b, the edge taken with probability
/// 1/2, b in an outage for the whole run (the call fails, and with it the job); the client
/// hedges every attempt after 1 ms. A request succeeds when at least one of its two copies
/// skips the edge: 1 − (1/2)² = 3/4 of 4,000 (σ = 0.7%; within 3 points). Kills deleting the
/// copy's `draw_key` in `on_hedge_fire`: with the original's key both copies toss the same
/// coin and half the requests succeed.
#[test]
fn a_hedge_tosses_its_own_coin_for_a_downstream_edge() {
    let policy = "attempt_timeout = \"1s\"\nhedge = { after = \"1ms\", max_share = 1.0 }\n[policy.inner]\njitter = \"none\"\nmax_attempts = 1";
    let b = r#"calls = [{ hop = "b", policy = "inner", probability = 0.5 }]
[[hop]]
name = "b"
workers = 1000
service = { dist = "constant", mean = "1ms" }
network = { dist = "constant", mean = "0s" }
[[fault]]
hop = "b"
kind = "outage"
from = "0s"
to = "20s"
"#;
    let r = run_toml(&hedged_hop(4000, "10s", policy, "10ms", "0s", b));
    assert_eq!(r.hops[0].hedges, 4000, "every attempt is hedged (10 ms of service, hedge after 1 ms)");
    let t = &r.tenants[0];
    let ratio = t.succeeded as f64 / t.requests as f64;
    assert!((ratio - 0.75).abs() < 0.03, "success ratio {ratio} vs 1 − (1/2)² = 0.75");
}

/// Rule: a hedge is an attempt in every count of its hop — the run's total and its time series —
/// and, sent by a client to the entry hop, in its tenant's total and series too (a hedge sent by
/// an inner hop is not the tenant's). client → server → b, both policies hedging every attempt
/// after 5 ms of 10 ms services, no cancellation: each request is 2 attempts at server (its
/// original and its hedge), each of those jobs calls b once and hedges that call: 4 attempts at b.
/// Kills `+=` → `-=`/`*=` on the hop series', the tenant's and the tenant series' attempt
/// counts and `hop == 0` → `!=` in `on_hedge_fire`.
#[test]
fn a_hedge_counts_as_an_attempt_of_its_hop_and_only_at_the_entry_hop_of_its_tenant() {
    let n = 100u64;
    let policy = "attempt_timeout = \"1s\"\nhedge = { after = \"5ms\", max_share = 1.0 }";
    let b = r#"downstream_policy = "p"
[[hop]]
name = "b"
workers = 1000
service = { dist = "constant", mean = "10ms" }
network = { dist = "constant", mean = "0s" }
"#;
    let r = run_toml(&hedged_hop(n as u32, "10s", policy, "10ms", "0s", b));
    assert_eq!((r.hops[0].attempts, r.hops[0].hedges), (2 * n, n));
    assert_eq!((r.hops[1].attempts, r.hops[1].hedges), (4 * n, 2 * n));
    for (h, hop) in r.hops.iter().enumerate() {
        let series: u64 = r.hop_series[h].iter().map(|b| u64::from(b.attempts)).sum();
        assert_eq!(series, hop.attempts, "hop {h}: its series counts every attempt, hedges included");
    }
    let t = &r.tenants[0];
    assert_eq!(t.attempts, 2 * n, "the tenant's attempts are those sent to the entry hop");
    let series: u64 = r.tenant_series[0].iter().map(|b| u64::from(b.attempts)).sum();
    assert_eq!(series, t.attempts);
    assert_eq!(t.succeeded, n);
}

/// One call a second: a `trace` arrival at 0.5 s, 1.5 s, … (`calls` of them) with policy lines
/// `policy` (max_attempts 1, no jitter), one hop "server" of 4 workers with `service` (constant),
/// then `rest` (faults); the horizon is 2 s past the last call. Replication 0 of its run.
fn one_call_a_second(calls: u64, policy: &str, service: &str, rest: &str) -> RunRecord {
    let times: Vec<u64> = (0..calls).map(|k| 500 + 1_000 * k).collect();
    traced(&times, calls + 2, "", &format!("max_attempts = 1\n{policy}"), 4, service, rest)
}

/// One request at each of `times_ms` (a `trace` arrival, in ms), scenario lines `top` (after the
/// horizon, `horizon_s` seconds), policy lines `policy` (no jitter), one hop "server" of `workers`
/// workers with constant `service` and no network delay, then `rest` (more of its keys, faults).
/// Replication 0 of its run.
fn traced(
    times_ms: &[u64],
    horizon_s: u64,
    top: &str,
    policy: &str,
    workers: u32,
    service: &str,
    rest: &str,
) -> RunRecord {
    let dir = tempfile::tempdir().expect("temp dir");
    let times: Vec<String> = times_ms.iter().map(u64::to_string).collect();
    std::fs::write(dir.path().join("times.csv"), format!("t\n{}\n", times.join("\n"))).expect("write trace");
    let toml = format!(
        r#"name = "traced"
horizon = "{horizon_s}s"
{top}
[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "trace", file = "times.csv", unit = "ms" }}
policy = "p"
[policy.p]
jitter = "none"
{policy}
[[hop]]
name = "server"
workers = {workers}
service = {{ dist = "constant", mean = "{service}" }}
network = {{ dist = "constant", mean = "0s" }}
{rest}"#
    );
    let file = dir.path().join("rule.toml");
    let s = Scenario::from_source(file.to_str().expect("utf-8 path"), &toml, &[]).unwrap_or_else(|e| panic!("{e}"));
    retrystorm::model::sim::run(&s.base, s.seed, 0)
}

/// Rule: with a shared gRFC A6 bucket (a `grpc_throttle` budget), the outcome the call sees is
/// counted once, by the budget, and only a copy's outcome the call does not see (a copy failing
/// while the other is still awaited) by the hedge code. One call at a time (1 s apart), 100 ms
/// of service, a hedge after 50 ms when more than 5 of the 10 tokens are left, each success
/// giving back 0.1, each failure taking 1 (`hedges_and_retries_share_the_policys_grpc_bucket`
/// in tests/validity.rs, extended by a second outage):
/// - 10 calls in an outage over [0, 10 s): refused at once, never hedged; the bucket empties.
/// - 60 successes: the first 51 bring it to 5.1 unhedged, the other 9 are hedged: 6.0.
/// - 2 calls in an outage over [70 s, 72 s): 4.0.
/// - 40 successes: 11 unhedged (5.1), 29 hedged.
///
/// 38 hedges. Counting a success the call sees twice when its hedge is still out (`||` → `&&`
/// or `==` → `!=` in `hedge_reply`'s `caller_sees`) ends the second phase at 6.9 and gives 27
/// or 47; counting a failure the call sees twice (`||` → `&&`, or deleting the `!`) leaves 2.9
/// or 2.0 after the second outage: 27 or 18.
#[test]
fn a_shared_hedge_throttle_counts_each_outcome_the_call_sees_once() {
    let policy =
        "budget = { kind = \"grpc_throttle\", scope = \"global\" }\nhedge = { after = \"50ms\", max_share = 1.0 }";
    let outages = [("0s", "10s"), ("70s", "72s")]
        .map(|(from, to)| format!("[[fault]]\nhop = \"server\"\nkind = \"outage\"\nfrom = \"{from}\"\nto = \"{to}\"\n"))
        .concat();
    let r = one_call_a_second(112, policy, "100ms", &outages);
    assert_eq!(r.tenants[0].succeeded, 100, "the twelve calls in the outages fail, the rest succeed");
    assert_eq!(r.hops[0].hedges, 9 + 29);
}

/// Rule: a quantile hedge delay is recomputed every 100 latencies, not at each one. One call
/// at a time (1 s apart), constant 10 ms of service made 100 ms (`slow`, × 10) from the 101st
/// call on; a hedge after the p90 of the latencies, one token per attempt. Calls 1–100 are the
/// warm-up (no hedge); their p90, 10 ms, is the delay from then on, so calls 101–200 (100 ms)
/// are all hedged. At the 200th latency the p90 becomes 100 ms (its histogram bucket's top,
/// above the 100 ms the original answers in): calls 201–250 are not hedged. 100 hedges.
/// Recomputed at every latency (`&&` → `||`), the p90 reaches 100 ms once 12 of 112 latencies
/// are slow, and only 12 calls are hedged.
#[test]
fn a_quantile_hedge_delay_is_recomputed_every_hundred_latencies() {
    let policy = "hedge = { after = \"p90\", max_share = 1.0 }";
    let slow = "[[fault]]\nhop = \"server\"\nkind = \"slow\"\nfactor = 10.0\nfrom = \"100s\"\nto = \"252s\"\n";
    let r = one_call_a_second(250, policy, "10ms", slow);
    assert_eq!(r.tenants[0].succeeded, 250);
    assert_eq!(r.hops[0].hedges, 100, "calls 101–200 hedged after the warm-up's p90");
}

/// Rule: gRFC A6 charges a shared bucket only for failures the server answered with a status; a
/// timeout at the client takes no token, neither the one the call sees (the budget's hook) nor
/// a copy's it does not see (its hedge is still awaited; the hedge code's). One call a second,
/// 70 ms of service, an 80 ms timeout, a hedge after 50 ms when more than 5 of the 10 tokens
/// are left: 4 calls in a hang over [0, 4 s) are hedged and both their copies time out, which
/// leaves the bucket full, so the 40 calls after are hedged too: 44 hedges. (Charging every
/// timeout, the rule before issue 65, gave 3 + 19 = 22.)
#[test]
fn a_shared_hedge_throttle_takes_no_token_for_a_timeout() {
    let policy = "attempt_timeout = \"80ms\"\nbudget = { kind = \"grpc_throttle\", scope = \"global\" }\nhedge = { after = \"50ms\", max_share = 1.0 }";
    let hang = "[[fault]]\nhop = \"server\"\nkind = \"hang\"\nfrom = \"0s\"\nto = \"4s\"\n";
    let r = one_call_a_second(44, policy, "70ms", hang);
    assert_eq!((r.tenants[0].succeeded, r.tenants[0].dlq), (40, 4), "the four calls in the hang time out");
    assert_eq!(r.hops[0].hedges, 44, "every call hedged: no timeout took a token");
}

/// Rule: the admission-limit series is 0 at a hop without a concurrency limit, even one whose
/// other overload controls (a shed threshold) make it check every arrival. 100 requests, one
/// hop guarded by `shed_queue_length` alone. Kills `is_concurrency_limit` → `true`
/// (crates/core/src/model/overload.rs): the hop's unlimited limit (infinite) was recorded as 4,294,967,295.
#[test]
fn a_hop_without_a_concurrency_limit_records_no_admission_limit() {
    let r = run_toml(&hedged_hop(100, "10s", "", "10ms", "0s", "shed_queue_length = 5\n"));
    assert_eq!(r.tenants[0].succeeded, 100);
    assert!(r.hop_series[0].iter().all(|b| b.admission_limit == 0), "no limit series without a limit");
}

// Overload control (crates/core/src/model/sim/discipline.rs). Each run below is deterministic: requests at
// traced instants, constant service, no network delay; the counts follow from the timeline
// written beside each test.

/// Rule: a concurrency limit admits an arrival while the attempts inside, the arrival included,
/// are at most the limit, and its `admission_limit` series carries the limit over buckets
/// without arrivals (docs/MODEL.md, "Admission control"). Ten requests at 0 s, one at 5 s, 100
/// workers (never the bound), 100 ms of service, a limit of 4: the first four are admitted (1,
/// 2, 3, 4 inside), each of the next six finds 5 inside and is refused at once; the one at 5 s
/// finds the hop empty. 1 s buckets over the run and its drain (to 2 × the 10 s horizon: 21):
/// the limit, 4, in every one, those without an arrival (all but 0 and 5) included. Kills
/// `fill_limit_series` → `()` and deleting its `!` (the buckets without arrivals read 0).
#[test]
fn a_concurrency_limit_admits_up_to_its_limit_and_its_series_carries_it_over_quiet_buckets() {
    let times = [vec![0; 10], vec![5_000]].concat();
    let limit = "admission = { kind = \"concurrency\", limit = 4 }\n";
    let r = traced(&times, 10, "bucket = \"1s\"", "max_attempts = 1", 100, "100ms", limit);
    assert_eq!((r.hops[0].rejected_by_limit, r.tenants[0].succeeded), (6, 5));
    let series: Vec<u32> = r.hop_series[0].iter().map(|b| b.admission_limit).collect();
    assert_eq!(series, vec![4; 21], "the limit in every bucket");
}

/// Rule (Netflix `AIMDLimit`): after a served attempt no slower than `latency`, the limit grows
/// by 1 when at least half of it is in use (the finishing attempt counted); a slower one
/// multiplies it by `backoff`. Limit 6, three requests at 0 s, 100 ms of service (exactly the
/// 100 ms `latency`: not slower), one at 1 s reading the limit into the 1 s bucket. The first to
/// finish sees 3 inside: 2 × 3 ≥ 6, the limit becomes 7; the next two see 2 and 1 (< 7 / 2).
/// The series (1 s buckets to twice the 3 s horizon): 6, then 7 in the other six. Kills `>` →
/// `>=` on the latency (each sample halves the limit: 1 from the 1 s bucket on) and `>=` → `<`
/// on the half in use (it grows at the two later samples instead: 8).
#[test]
fn an_aimd_limit_grows_by_one_when_half_used_and_not_slower_than_its_latency() {
    let aimd = "admission = { kind = \"aimd\", initial = 6, min = 1, max = 10, latency = \"100ms\", backoff = 0.5 }\n";
    let r = traced(&[0, 0, 0, 1_000], 3, "bucket = \"1s\"", "max_attempts = 1", 100, "100ms", aimd);
    assert_eq!(r.tenants[0].succeeded, 4);
    let series: Vec<u32> = r.hop_series[0].iter().map(|b| b.admission_limit).collect();
    assert_eq!(series, [6, 7, 7, 7, 7, 7, 7]);
}

// Balancers (crates/core/src/model/sim/balancer.rs). Deterministic runs: traced requests, constant service.

/// The records of hop `hop`'s replicas, in replica order.
fn replica_records(r: &RunRecord, hop: usize) -> Vec<&retrystorm::metrics::ReplicaRecord> {
    r.replicas.iter().filter(|x| x.hop == hop).collect()
}

/// Rule: `power_of_two` compares two *distinct* replicas. Two replicas of one worker, 100 ms
/// of service, requests in pairs 10 ms apart, one pair a second (100 pairs): the first of a
/// pair finds both idle, the second finds one busy and the other idle, and of two distinct
/// replicas it takes the idle one. Every pair splits: 100 attempts each, no queueing, at most
/// one attempt inside a replica in any bucket. Kills `>=` → `<` in the second draw (the same
/// replica drawn twice: the second request queues behind the first) and `replica_level` → `()`
/// (no level recorded).
#[test]
fn power_of_two_compares_two_distinct_replicas() {
    let times: Vec<u64> = (0..100).flat_map(|k| [1_000 * k, 1_000 * k + 10]).collect();
    let p2c = "replicas = 2\nbalancer = \"power_of_two\"\n";
    let r = traced(&times, 101, "bucket = \"1s\"", "max_attempts = 1", 1, "100ms", p2c);
    assert_eq!(r.hops[0].queue_wait_ns_sum, 0, "no request waited");
    for rec in replica_records(&r, 0) {
        assert_eq!(rec.attempts, 100, "replica {}: one of each pair", rec.replica);
        let peaks: Vec<u32> = rec.series[..100].iter().map(|b| b.in_flight_max).collect();
        assert_eq!(peaks, vec![1; 100], "replica {}: one attempt inside in each second", rec.replica);
    }
}

/// Rule: `least_connections` takes its ties in turn: the first tied replica at or after a
/// cursor that moves past each pick. Three replicas of one worker, one request a second done in
/// 100 ms: every arrival finds all three idle (a tie at 0), so request k goes to replica k mod 3
/// — in bucket k, an attempt at that replica only. Kills `%` → `/` or `+`, `-` → `+` and `+` →
/// `-` or `*` in the cursor's distance `(r + n - from) % n` (another order repeats or skips a
/// replica).
#[test]
fn least_connections_takes_its_ties_in_turn() {
    let times: Vec<u64> = (0..9).map(|k| 1_000 * k).collect();
    let lc = "replicas = 3\nbalancer = \"least_connections\"\n";
    let r = traced(&times, 10, "bucket = \"1s\"", "max_attempts = 1", 1, "100ms", lc);
    for rec in replica_records(&r, 0) {
        let buckets: Vec<u32> = rec.series[..9].iter().map(|b| b.attempts).collect();
        let expected: Vec<u32> = (0..9).map(|k| u32::from(k % 3 == rec.replica)).collect();
        assert_eq!(buckets, expected, "replica {}", rec.replica);
    }
}

/// Rule (Envoy's panic threshold): the balancer routes around replicas out of rotation only
/// while at least half of them are in it; with fewer it routes to all. Three replicas behind
/// round robin, health probes every 500 ms (one failed probe marks a replica unhealthy), an
/// outage on `down` of them for the whole run, ten requests at 1.0, 1.1, …, 1.9 s (after the
/// probe at 0.5 s). One down: 2 of 3 in rotation, the down one gets nothing (0, 5, 5). Two
/// down: 1 of 3 is below half, round robin over all: 4, 3, 3, the attempts at the down ones
/// refused. A replica still unhealthy at the end is out of rotation until the run's last event,
/// the probe at 2.5 s: 2 s. Kills `&&` → `||` and `*` → `+` in `pick`'s `k < n && 2 * k >= n`
/// (1 of 3 counted as half: all ten requests to the healthy replica), `close_replica_books` →
/// `()` (0 s out of rotation) and `+=` → `*=` on a replica series' successes and failures.
#[test]
fn a_balancer_routes_around_unhealthy_replicas_only_while_half_are_healthy() {
    let times: Vec<u64> = (0..10).map(|k| 1_000 + 100 * k).collect();
    for (down, attempts) in [(1, [0, 5, 5]), (2, [4, 3, 3])] {
        let outages: String = (0..down)
            .map(|replica| {
                format!(
                    "[[fault]]\nhop = \"server\"\nreplica = {replica}\nkind = \"outage\"\nfrom = \"0s\"\nto = \"3s\"\n"
                )
            })
            .collect();
        let hop = format!("replicas = 3\nhealth_check = {{ interval = \"500ms\", unhealthy_threshold = 1, healthy_threshold = 1 }}\n{outages}");
        let r = traced(&times, 3, "", "max_attempts = 1", 1, "10ms", &hop);
        let recs = replica_records(&r, 0);
        assert_eq!(recs.iter().map(|x| x.attempts).collect::<Vec<_>>(), attempts, "{down} down");
        for x in &recs {
            let down = x.replica < down;
            assert_eq!(x.out_of_rotation_ns, if down { 2_000_000_000 } else { 0 }, "replica {}", x.replica);
            assert_eq!((x.ok_replies, x.failed_replies), if down { (0, x.attempts) } else { (x.attempts, 0) });
            let (ok, failed) =
                x.series.iter().fold((0, 0), |(o, f), b| (o + u64::from(b.successes), f + u64::from(b.failures)));
            assert_eq!(
                (ok, failed),
                (x.ok_replies, x.failed_replies),
                "replica {}: the series sum to the totals",
                x.replica
            );
        }
    }
}

/// Rule: each balanced hop keeps its own replica records, found from its first replica's place
/// among all the hops' replicas, and a hop of one replica keeps none. server (one replica) calls
/// back (2 replicas), which calls db (3 replicas, outlier detection on), both round robin; six
/// requests, one a second: back's replicas take 3 each, db's 2 each, all successes. db's first
/// replica is the 4th of all (after server's and back's) and its first record the 3rd. Kills the
/// index arithmetic of `rec` and `outcome_seen` (`server − base + start`), which only a balanced
/// hop after another can see, and `count > 1` → `>=` in `replica_records` (a record for server).
#[test]
fn each_balanced_hop_keeps_its_own_replica_records() {
    let times: Vec<u64> = (0..6).map(|k| 1_000 * k).collect();
    let hop = |name: &str, replicas: u32, rest: &str| {
        format!("[[hop]]\nname = \"{name}\"\nreplicas = {replicas}\nservice = {{ dist = \"constant\", mean = \"10ms\" }}\n{rest}")
    };
    let chain = format!(
        "downstream_policy = \"p\"\n{}{}",
        hop("back", 2, "downstream_policy = \"p\"\n"),
        hop("db", 3, "outlier_detection = { consecutive_errors = 5 }\n")
    );
    let r = traced(&times, 7, "", "max_attempts = 1", 1, "10ms", &chain);
    assert_eq!(r.tenants[0].succeeded, 6);
    let rows: Vec<(usize, u32, u64, u64)> =
        r.replicas.iter().map(|x| (x.hop, x.replica, x.attempts, x.ok_replies)).collect();
    assert_eq!(rows, vec![(1, 0, 3, 3), (1, 1, 3, 3), (2, 0, 2, 2), (2, 1, 2, 2), (2, 2, 2, 2)]);
}

/// Rule: the caller's timeouts are errors for outlier ejection (Envoy counts a timeout as a
/// gateway error in `consecutive_5xx`), and an ejected replica is marked out of rotation in each
/// bucket its ejection touches. Three replicas of four workers behind round robin, outlier
/// detection after 2 consecutive errors for 5 s; replica 0 hangs for the whole run, the policy
/// gives up on an attempt after 50 ms; nine requests, one a second from 0 s. Requests 0 and 3 go
/// to replica 0 and time out at 0.05 s and 3.05 s: ejected over [3.05 s, 8.05 s) (2 of 3 in
/// rotation is at least half, so the balancer routes around it). Requests 4, 5 go to 1, 2; 6 and
/// 8 find replica 0 ejected and go to 1, 7 to 2: attempts 2, 4, 3, one ejection, 5 s out of
/// rotation, flagged in the 1 s buckets 3 to 8 only. Kills `replica_timed_out` → `()` (no
/// ejection: 3, 3, 3); it also fails on the bucket arithmetic of `out_of_rotation` (`/` → `%` or
/// `*` at either end of `(from / bucket, (to − 1) / bucket)`: other buckets flagged, or an
/// inverted range), which tests/replicas.rs and tests/combined.rs catch as well.
#[test]
fn a_callers_timeouts_eject_a_hung_replica_for_the_buckets_it_is_out() {
    let times: Vec<u64> = (0..9).map(|k| 1_000 * k).collect();
    let hop = "replicas = 3\noutlier_detection = { consecutive_errors = 2, base_ejection_time = \"5s\" }\n\
               [[fault]]\nhop = \"server\"\nreplica = 0\nkind = \"hang\"\nfrom = \"0s\"\nto = \"10s\"\n";
    let r = traced(&times, 10, "bucket = \"1s\"", "max_attempts = 1\nattempt_timeout = \"50ms\"", 4, "10ms", hop);
    let recs = replica_records(&r, 0);
    assert_eq!(recs.iter().map(|x| x.attempts).collect::<Vec<_>>(), [2, 4, 3]);
    assert_eq!(recs.iter().map(|x| x.ejections).collect::<Vec<_>>(), [1, 0, 0]);
    assert_eq!(recs.iter().map(|x| x.out_of_rotation_ns).collect::<Vec<_>>(), [5_000_000_000, 0, 0]);
    for x in &recs {
        let flagged: Vec<usize> =
            x.series.iter().enumerate().filter(|(_, b)| b.out_of_rotation == 1).map(|(b, _)| b).collect();
        let expected: Vec<usize> = if x.replica == 0 { (3..=8).collect() } else { Vec::new() };
        assert_eq!(flagged, expected, "replica {}", x.replica);
    }
    assert_eq!(r.tenants[0].succeeded, 7, "the seven requests to replicas 1 and 2");
}
