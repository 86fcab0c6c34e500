//! End to end: noisy tenants, retry budgets, fair scheduling, amplification theory.

mod common;
use common::*;
use retrystorm::runner::{run_study, Study};

fn variants_study(name: &str, sets: &[&str]) -> Study {
    let s = scenario(name, sets);
    run_study(&s, &s.variants, &Default::default())
}

fn variant<'a>(study: &'a Study, name: &str) -> &'a retrystorm::runner::VariantResult {
    study.variants.iter().find(|v| v.name == name).unwrap_or_else(|| panic!("no variant {name}"))
}

#[test]
fn a_global_budget_lets_the_noisy_tenant_starve_the_quiet_one() {
    let study = variants_study("noisy-neighbor", &[]);
    let global = variant(&study, "global-budget");
    let tenant = variant(&study, "tenant-budget");
    // With one shared quota the quiet tenant's retries are refused in every replication.
    assert!(values(tenant_metric(global, "quiet", "retries_denied")).iter().all(|&d| d > 0.0));
    assert!(values(tenant_metric(tenant, "quiet", "retries_denied")).iter().all(|&d| d == 0.0));
    // Per-tenant quotas: the quiet tenant's success ratio is better, paired by seed (common random
    // numbers): the 99% CI of the per-replication difference lies above 0.
    let a = values(tenant_metric(tenant, "quiet", "success_ratio"));
    let b = values(tenant_metric(global, "quiet", "success_ratio"));
    let diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let (lo, hi) = t_interval(&diffs, 0.99);
    assert!(lo > 0.0, "quiet success ratio gain 99% CI [{lo}, {hi}] does not exclude 0");
}

#[test]
fn independent_failures_amplify_by_the_geometric_sum() {
    // Every failure rate of docs/EXPERIMENTS.md's table, at the scenario's own size (10
    // replications): the formula lies in the interval at each. Eight intervals are checked at
    // once, so each is at 1 − 0.01/8 (Bonferroni): a correct model fails the test with
    // probability ≤ 1%, not the ~8% of eight separate 99% intervals. The budgets' claims are
    // about high failure rates (at f = 0.05 the token bucket still tracks the formula).
    const RATES: [f64; 8] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0];
    let confidence = 1.0 - 0.01 / RATES.len() as f64;
    for f in RATES {
        let set = format!("fault.0.p={f}");
        let study = variants_study("brooker-retries", &[&set, "replications=10"]);
        let none = variant(&study, "no-budget");
        let expected = 1.0 + f + f * f + f * f * f;
        let (lo, hi) = t_interval(&values(metric(none, "amplification")), confidence);
        assert!(lo <= expected && expected <= hi, "f = {f}: {confidence} CI [{lo}, {hi}] misses {expected}");
        if f < 0.2 {
            continue;
        }
        // Google SRE: a 10% retry ratio keeps amplification at or below 1.1.
        let ratio = variant(&study, "ratio-10pct");
        for a in values(metric(ratio, "amplification")) {
            assert!(a <= 1.1, "f = {f}: ratio budget amplification {a}");
        }
        // The token bucket cuts it well below the unbudgeted figure.
        let bucket = metric(variant(&study, "token-bucket"), "amplification").mean.expect("present");
        assert!(bucket < 1.15 && bucket < expected, "f = {f}: token bucket {bucket}");
        // Brooker's retry breaker (no retries while > 10% of recent calls fail) cuts it too; it
        // still lets half-open probe retries through, so it sits between 1 and the unbudgeted sum.
        let breaker = values(metric(variant(&study, "retry-breaker-10pct"), "amplification"));
        let unbudgeted = values(metric(none, "amplification"));
        for (b, u) in breaker.iter().zip(&unbudgeted) {
            assert!(*b > 1.0 && b < u, "f = {f}: retry breaker {b} vs no budget {u}");
        }
    }
}

#[test]
fn fair_scheduling_isolates_the_quiet_tenant_under_overload() {
    // One worker at 5 ms: capacity 200/s against 220/s offered. FIFO queues quiet behind noisy;
    // per-tenant round-robin serves quiet's short queue at once.
    let base = ["hop.api.workers=1", "replications=3", "horizon=20s"];
    let fifo = study("noisy-neighbor", &base);
    let with_fair: Vec<&str> = base.iter().copied().chain(["hop.api.scheduling=fair"]).collect();
    let fair = study("noisy-neighbor", &with_fair);
    let p50 = |s: &Study| values(tenant_metric(&s.variants[0], "quiet", "latency_s_p50"));
    for (f, q) in p50(&fair).iter().zip(p50(&fifo)) {
        assert!(f * 10.0 < q, "fair p50 {f} s vs fifo p50 {q} s");
    }
}

#[test]
fn every_preset_runs_end_to_end() {
    // The outage-herd model with nothing but the preset in the policy.
    let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml"))
        .expect("bundled scenario");
    let start = template.find("[policy.client]").expect("policy table");
    let end = template.find("[[hop]]").expect("hop table");
    for preset in retrystorm::scenario::presets::names() {
        let text = format!("{}[policy.client]\npreset = \"{preset}\"\n\n{}", &template[..start], &template[end..]);
        let sets =
            ["replications=1", "tenant.main.clients=200"].map(|s| retrystorm::scenario::parse_assignment(s).unwrap());
        let s = retrystorm::scenario::Scenario::from_source(preset, &text, &sets).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.base.policies[0].preset.as_deref(), Some(preset));
        let study = run_study(&s, &s.run_variants(), &Default::default());
        let v = &study.variants[0];
        let terminal: f64 =
            ["succeeded", "rejected", "dlq", "in_flight"].iter().map(|m| metric(v, m).mean.unwrap()).sum();
        assert_eq!(terminal, 200.0, "{preset}");
        assert!(metric(v, "attempts").mean.unwrap() > 200.0, "{preset}: the outage forces retries");
    }
}
