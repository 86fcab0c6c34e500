//! The published experiments, reproduced — each claim asserted in the form its source
//! states it (orderings, ratios, formulas, the metastable flag). docs/EXPERIMENTS.md has the
//! full-size figures and the commands behind them.
//!
//! Statistics. Every run uses the scenario's fixed seed, so each test is deterministic; the
//! tolerances still come from the statistics, not from tuning: a mean is compared through its
//! two-sided 99% Student-t interval over replications, a share of replications (the metastable
//! flag) through its exact 99% Clopper–Pearson interval. "A beats B" means the intervals do not
//! overlap. Sizes are chosen so that the file runs in a few seconds in release mode.
//!
//! Brooker's open-loop amplification experiment (1 + f + f² + f³ at every failure rate of the
//! table, token bucket, 10% ratio, retry-only breaker) is asserted by
//! `independent_failures_amplify_by_the_geometric_sum` in tests/budgets_and_tenants.rs.

mod common;
use common::*;
use retrystorm::metrics::RunRecord;
use retrystorm::model::sim;
use retrystorm::runner::{run_study, Study, VariantResult};
use statrs::distribution::{Beta, ContinuousCDF};

/// Confidence level of every interval in this file.
const LEVEL: f64 = 0.99;

/// Runs the variants of `scenarios/<name>.toml` (with `sets` applied) whose names are in `keep`
/// (all of them when `keep` is empty).
fn run(name: &str, sets: &[&str], keep: &[&str]) -> Study {
    let s = scenario(name, sets);
    let variants: Vec<_> =
        s.variants.iter().filter(|v| keep.is_empty() || keep.contains(&v.name.as_str())).cloned().collect();
    assert!(!variants.is_empty(), "{name}: no variant among {keep:?}");
    run_study(&s, &variants, &Default::default())
}

fn variant<'a>(study: &'a Study, name: &str) -> &'a VariantResult {
    study.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

/// The 99% t-interval of the mean of `metric` of variant `name`.
fn ci(study: &Study, name: &str, metric_name: &str) -> (f64, f64) {
    t_interval(&values(metric(variant(study, name), metric_name)), LEVEL)
}

/// Exact two-sided Clopper–Pearson interval of a binomial share: `k` of `n` at `level`.
fn clopper_pearson(k: usize, n: usize, level: f64) -> (f64, f64) {
    let alpha = 1.0 - level;
    let (k_f, n_f) = (k as f64, n as f64);
    let lower = if k == 0 { 0.0 } else { Beta::new(k_f, n_f - k_f + 1.0).expect("k ≥ 1").inverse_cdf(alpha / 2.0) };
    let upper =
        if k == n { 1.0 } else { Beta::new(k_f + 1.0, n_f - k_f).expect("k < n").inverse_cdf(1.0 - alpha / 2.0) };
    (lower, upper)
}

/// The 99% interval of the share of replications of variant `v` flagged metastable.
fn metastable_share(v: &VariantResult) -> (f64, f64) {
    let flags = values(metric(v, "metastable"));
    let stuck = flags.iter().filter(|&&f| f == 1.0).count();
    clopper_pearson(stuck, flags.len(), LEVEL)
}

#[test]
fn aws_occ_at_100_writers_matches_the_posts_orderings_and_its_halving() {
    // The post's own size: 100 writers, 100 runs per strategy (the scenario's defaults).
    let study = run("aws-occ", &[], &[]);
    let writes = |v: &str| ci(&study, v, "attempts");
    let time = |v: &str| ci(&study, v, "completion_time_s");
    let jittered = ["full", "equal", "decorrelated"];
    // "No backoff" finishes fastest but does the most work.
    for other in ["exponential", "full", "equal", "decorrelated"] {
        assert!(writes("none").0 > writes(other).1, "none {:?} vs {other} {:?} writes", writes("none"), writes(other));
        assert!(time("none").1 < time(other).0, "none {:?} vs {other} {:?} time", time("none"), time(other));
    }
    // No-jitter exponential is the clear loser: more work than any jittered strategy, and the
    // longest completion time of all.
    for other in jittered {
        assert!(writes("exponential").0 > writes(other).1, "exponential vs {other} writes");
    }
    for other in ["none", "full", "equal", "decorrelated"] {
        assert!(time("exponential").0 > time(other).1, "exponential vs {other} time");
    }
    // "In the case with 100 contending clients, we've reduced our call count by more than half."
    assert!(
        writes("full").1 < 0.5 * writes("exponential").0,
        "full {:?} vs exponential {:?}",
        writes("full"),
        writes("exponential")
    );
    // Full and equal do "approximately the same" work — read as within 10% of each other (we
    // measure ~2%) — and decorrelated more than either.
    let (full, equal) = (metric(variant(&study, "full"), "attempts"), metric(variant(&study, "equal"), "attempts"));
    let (full_mean, equal_mean) = (full.mean.expect("present"), equal.mean.expect("present"));
    assert!((equal_mean - full_mean).abs() < 0.1 * full_mean, "full {full_mean} vs equal {equal_mean}");
    assert!(writes("decorrelated").0 > writes("full").1.max(writes("equal").1), "decorrelated writes");
    // Equal "does slightly more work than Full Jitter, and takes much longer"; full "uses less
    // work, but slightly more time" than decorrelated.
    assert!(writes("equal").0 > writes("full").1 && time("equal").0 > time("full").1, "equal vs full");
    assert!(
        time("decorrelated").1 < time("full").0,
        "decorrelated {:?} vs full {:?} time",
        time("decorrelated"),
        time("full")
    );
}

/// Growth exponent of `metric` from `n_small` to twice as many writers without backoff, as a
/// 99% interval: ln(mean₂ₙ / meanₙ) / ln 2, its standard error by the delta method
/// (se of ln mean = sd / (mean √R)); with R = 100 replications the normal quantile applies.
fn doubling_exponent(n_small: u32, metric_name: &str) -> (f64, f64) {
    let log_mean_se = |n: u32| {
        let set = format!("tenant.writers.clients={n}");
        let study = run("aws-occ", &[&set], &["none"]);
        let xs = values(metric(&study.variants[0], metric_name));
        let (mean, sd) = retrystorm::metrics::stats::mean_sd(&xs);
        (mean.ln(), sd / (mean * (xs.len() as f64).sqrt()))
    };
    let ((small, se_small), (large, se_large)) = (log_mean_se(n_small), log_mean_se(2 * n_small));
    let exponent = (large - small) / std::f64::consts::LN_2;
    let half = 2.5758 * se_small.hypot(se_large) / std::f64::consts::LN_2;
    (exponent - half, exponent + half)
}

#[test]
fn aws_occ_without_backoff_does_quadratic_work_in_linear_time() {
    // "With N clients contending, the total amount of work done by the system increases with N²"
    // and "the time to complete all the updates grows linearly with contention". Doubling N
    // from 50 to 100 must multiply the writes by 2^e with e closer to 2 than to 1 or 3, and the
    // time by 2^e with e closer to 1 than to 0 or 2. (Lower-order terms keep e a little below 2
    // at this size: docs/EXPERIMENTS.md has the curve.)
    let work = doubling_exponent(50, "attempts");
    assert!(work.0 > 1.5 && work.1 < 2.5, "writes grow as N^e with e in {work:?}");
    let time = doubling_exponent(50, "completion_time_s");
    assert!(time.0 > 0.5 && time.1 < 1.5, "completion time grows as N^e with e in {time:?}");
}

/// Seconds after `from_s` until goodput is back: the start of the first 2-s window from which on
/// every 2-s window before the horizon completes at least half as many requests as arrive in it.
/// `None`: still collapsed in the last 5 s before the horizon. (A Poisson window of 80 arrivals
/// falls below half by chance with probability ~1e-6, so a healthy system never trips it.)
fn goodput_recovery_s(record: &RunRecord, bucket_s: f64, from_s: f64, horizon_s: f64) -> Option<f64> {
    let series = &record.tenant_series[0];
    let width = (2.0 / bucket_s).round() as usize;
    let (first, end) = ((from_s / bucket_s).round() as usize, (horizon_s / bucket_s).round() as usize);
    let healthy = |b: usize| {
        let (done, arrived) = series[b..b + width].iter().fold((0, 0), |(d, a), s| (d + s.successes, a + s.arrivals));
        2 * done >= arrived
    };
    let last_sick = (first..=end - width).rev().find(|&b| !healthy(b));
    match last_sick {
        None => Some(0.0),
        Some(b) if b + 5 > end - width => None,
        Some(b) => Some((b + 1) as f64 * bucket_s - from_s),
    }
}

#[test]
fn metastable_collapse_sticks_without_backoff_and_recovers_with_brookers_backoff() {
    // Brooker's "simple collapse": the 5-s spike to 80/s (ending at 25 s) tips the system without
    // backoff into a state it does not leave; his backoff-and-jitter client recovers. The
    // scenario's 100 replications give a share interval of about ±0.12.
    let study = run("metastable-collapse", &[], &[]);
    let no_backoff = metastable_share(variant(&study, "no-backoff"));
    assert!(no_backoff.0 > 0.5, "no-backoff metastable share {no_backoff:?}: not stuck in most runs");
    let backoff = metastable_share(variant(&study, "backoff-jitter"));
    assert!(backoff.1 < 0.1, "backoff-jitter metastable share {backoff:?}: does not recover");
    // Retry delays far shorter than the overload only defer the retries: as stuck as no backoff.
    let short = metastable_share(variant(&study, "short-backoff"));
    assert!(short.0 > 0.5, "short-backoff metastable share {short:?}");
    // "Recovers within about 10 s": goodput is back within 10 s of the spike's end (99% interval).
    // `recovery_time_s` reads ~20 s here because it waits for the deferred retries to drain as well;
    // docs/EXPERIMENTS.md discusses the difference.
    let s = scenario("metastable-collapse", &[]);
    let spec = &s.variants.iter().find(|v| v.name == "backoff-jitter").expect("variant").spec;
    let seconds = |ns: u64| ns as f64 / 1e9;
    let (bucket_s, horizon_s) = (seconds(spec.bucket), seconds(spec.horizon));
    let spike_end_s = seconds(spec.trigger_end().expect("the spike"));
    let recoveries: Vec<f64> = (0..100)
        .map(|rep| {
            let record = sim::run(spec, s.seed, rep);
            goodput_recovery_s(&record, bucket_s, spike_end_s, horizon_s)
                .unwrap_or_else(|| panic!("replication {rep}: goodput never recovered (seed {})", s.seed))
        })
        .collect();
    let (low, high) = t_interval(&recoveries, LEVEL);
    assert!(high <= 10.0, "goodput recovery 99% CI [{low}, {high}] s is not within 10 s");
    // Without backoff the `metastable` flag equals "goodput never came back", in every one of the
    // scenario's 100 runs.
    let spec = &s.variants.iter().find(|v| v.name == "no-backoff").expect("variant").spec;
    for rep in 0..100 {
        let record = sim::run(spec, s.seed, rep);
        let scalars = retrystorm::metrics::summary::scalars(&record, &spec.run_shape());
        let flag = scalars.global.iter().find(|(m, _)| *m == retrystorm::metrics::catalogue::Metric::Metastable);
        let metastable = flag.and_then(|(_, v)| *v) == Some(1.0);
        let goodput_lost = goodput_recovery_s(&record, bucket_s, spike_end_s, horizon_s).is_none();
        assert_eq!(metastable, goodput_lost, "no-backoff replication {rep} (seed {})", s.seed);
    }
}

#[test]
fn sre_layers_multiply_attempts_and_the_two_rules_bound_them() {
    // The worst case of both chapters, a bottom layer that rejects everything: the counts are exact.
    let study = run("sre-layers", &["replications=2", "horizon=5s"], &[]);
    let amplification = |v: &str, hop: &str| values(hop_metric(variant(&study, v), hop, "amplification"));
    for (v, per_layer) in [("four-per-layer", 4.0), ("three-per-layer", 3.0)] {
        for (hop, depth) in [("frontend", 1), ("backend", 2), ("db", 3)] {
            let expected = f64::powi(per_layer, depth);
            assert!(amplification(v, hop).iter().all(|&a| a == expected), "{v} at {hop}: {:?}", amplification(v, hop));
        }
    }
    // A per-request limit of 3 attempts, retrying at one layer only: 3× at every layer below.
    assert!(amplification("per-request-3", "db").iter().all(|&a| a == 3.0));
    // A per-client retry ratio of 10% on top: "about 1.1×", and never above it.
    for a in amplification("retry-ratio-10pct", "db") {
        assert!((1.05..=1.1).contains(&a), "retry-ratio-10pct db amplification {a}");
    }
    // With p = 0.9 the growth is a product over layers of (1 − q^A)/(1 − q) (Wald's identity;
    // q = p at the bottom, then the failure probability q^A of the layer below): 9.99 for
    // four-per-layer, 9.42 for three-per-layer and 1 + p + p² = 2.71 ("just under 3X"). A
    // request's db count is heavy-tailed (up to 64, rarely), so the t-interval needs many requests
    // per replication and many replications: this part runs at the scenario's own size (30
    // replications of 4,000 requests). A first version with 10 replications of 1,000 missed the
    // formula at one seed; 20 other seeds showed no bias, but 10 skewed values are too few for the
    // interval to be trusted at its nominal level.
    let study = run("sre-layers", &["fault.0.p=0.9"], &["four-per-layer", "three-per-layer", "per-request-3"]);
    for (v, per_layer, layers) in [("four-per-layer", 4, 3), ("three-per-layer", 3, 3), ("per-request-3", 3, 1)] {
        let mut q: f64 = 0.9;
        let mut expected = 1.0;
        for _ in 0..layers {
            expected *= (1.0 - q.powi(per_layer)) / (1.0 - q);
            q = q.powi(per_layer);
        }
        let (low, high) = t_interval(&values(hop_metric(variant(&study, v), "db", "amplification")), LEVEL);
        assert!(low <= expected && expected <= high, "{v}: 99% CI [{low}, {high}] misses {expected}");
    }
}

#[test]
fn a_capacity_loss_trigger_is_survived_below_a_threshold_and_self_sustaining_above_it() {
    // Huang et al. (OSDI 2022): whether a trigger tips the system into a metastable state depends on
    // its size and duration. The trigger is a `slow` fault from 20 s (service times × 1/(1 − loss)),
    // without the spike; the retry policy is no-backoff. 20 replications per cell.
    let cell_of = |seconds: u32, loss: f64, variant: &str, replications: u32| {
        let sets = [
            format!("replications={replications}"),
            r#"tenant.clients.arrival={ kind = "poisson", rate_per_s = 40.0 }"#.to_string(),
            format!(
                r#"fault=[{{ hop = "server", kind = "slow", factor = {}, from = "20s", to = "{}s" }}]"#,
                1.0 / (1.0 - loss),
                20 + seconds
            ),
        ];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        run("metastable-collapse", &sets, &[variant])
    };
    let cell = |seconds: u32, loss: f64, variant: &str| cell_of(seconds, loss, variant, 20);
    // Short or mild triggers are survived …
    for (seconds, loss) in [(1, 0.5), (10, 0.1)] {
        let share = metastable_share(&cell(seconds, loss, "no-backoff").variants[0]);
        assert!(share.1 < 0.5, "{seconds} s at {loss} capacity loss: metastable share {share:?}");
    }
    // "A 10% loss never tips the system however long it lasts", with or without backoff.
    for variant in ["no-backoff", "backoff-jitter"] {
        let flags = values(metric(&cell(20, 0.1, variant).variants[0], "metastable"));
        assert!(flags.iter().all(|&f| f == 0.0), "{variant}, 20 s at 10%: {flags:?}");
    }
    // Backoff moves the boundary: a 5-s, 50% trigger tips (nearly) every no-backoff run but few
    // with Brooker's backoff (the docs' 100 replications, so that "few" is told from "half"); it
    // does not remove it: a 20-s, 30% trigger, longer than the backoff window, tips both.
    let tipped = |seconds, loss, variant| metastable_share(&cell(seconds, loss, variant).variants[0]);
    let no_backoff = tipped(5, 0.5, "no-backoff");
    let backoff = metastable_share(&cell_of(5, 0.5, "backoff-jitter", 100).variants[0]);
    assert!(no_backoff.0 > 0.5 && backoff.1 < 0.5, "5 s at 50%: {no_backoff:?} vs {backoff:?}");
    for variant in ["no-backoff", "backoff-jitter"] {
        let share = tipped(20, 0.3, variant);
        assert!(share.0 > 0.5, "{variant}, 20 s at 30%: metastable share {share:?}");
    }
    // … a long, deep one is not, and the overload outlives it: in the last 10 s of arrivals, 60 s
    // after the trigger ended, attempts still exceed the most the server can ever complete
    // (n / (1 + 0.01 n) < 100/s).
    let study = cell(10, 0.5, "no-backoff");
    let stuck = &study.variants[0];
    let share = metastable_share(stuck);
    assert!(share.0 > 0.5, "10 s at 0.5 capacity loss: metastable share {share:?}");
    let attempts = &stuck.hop_series[0].rows;
    let rate: f64 = attempts[70..80].iter().map(|row| row[0]).sum::<f64>() / 10.0;
    assert!(rate > 100.0, "attempts/s at 70–80 s: {rate}");
}
