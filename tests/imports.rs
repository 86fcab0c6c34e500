//! The user's own numbers end to end: measured service times reproduce their percentiles, traces
//! drive the arrivals, imported policies resolve with their sources, and `init` writes scenarios
//! that `run` accepts.

mod common;

use common::{tenant_metric, values};
use retrystorm::runner::{run_study, RunOptions};
use retrystorm::scenario::Scenario;
use statrs::distribution::{ContinuousCDF, LogNormal, Normal};
use std::path::Path;
use std::process::{Command, Output};

fn retrystorm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).current_dir(dir).args(args).output().expect("binary runs")
}

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");

/// One uncontended hop (10 000 workers for ~4 requests in service at a time, no network) behind
/// a Poisson tenant: each request's latency is one service-time draw.
fn uncontended(service: &str, requests: u32) -> Scenario {
    let text = format!(
        "name = \"uncontended\"\nseed = 3\nhorizon = \"{}s\"\nreplications = 1\n\
         [[tenant]]\nname = \"t\"\nclients = 1000\narrival = {{ kind = \"poisson\", rate_per_s = 100.0 }}\npolicy = \"p\"\n\
         [policy.p]\njitter = \"full\"\nmax_attempts = 1\n\
         [[hop]]\nname = \"api\"\nworkers = 10000\nservice = {service}\n",
        requests / 100
    );
    Scenario::from_source("uncontended.toml", &text, &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// The empirical p-quantile of n draws has F(q̂) ≈ p with binomial sd √(p(1−p)/n). With z = 4.5
/// a correct sampler fails a given check with probability ≈ 7e-6. The latency histogram keeps
/// 3 significant digits, so values are known to ±0.1% more.
fn check_quantile(name: &str, p: f64, got_s: f64, n: f64, quantile: impl Fn(f64) -> f64) {
    const Z: f64 = 4.5;
    let half = Z * (p * (1.0 - p) / n).sqrt();
    let (lo, hi) = (quantile(p - half) * 0.999, quantile((p + half).min(1.0 - 1e-12)) * 1.001);
    assert!(lo <= got_s && got_s <= hi, "{name}: measured p{} = {got_s} s outside [{lo}, {hi}] (n = {n})", p * 100.0);
}

#[test]
fn an_uncontended_hop_reproduces_the_given_percentiles() {
    let n = 200_000;
    let s =
        uncontended("{ dist = \"empirical\", p50 = \"20ms\", p90 = \"45ms\", p99 = \"120ms\", p999 = \"300ms\" }", n);
    let study = run_study(&s, &s.run_variants(), &RunOptions { threads: Some(1), progress: false });
    let v = &study.variants[0];
    let requests = values(tenant_metric(v, "t", "requests"))[0];
    // Independent of the crate: linear between the given points from (0, 0), and above p99.9
    // the exponential tail continuing ln S between p99 and p99.9 (scale 180 ms / ln 10).
    let knots = [(0.0, 0.0), (0.5, 0.020), (0.9, 0.045), (0.99, 0.120), (0.999, 0.300)];
    let quantile = |u: f64| {
        if u >= 0.999 {
            return 0.300 + 0.180 / 10f64.ln() * (0.001 / (1.0 - u)).ln();
        }
        let i = knots.iter().position(|k| k.0 > u).expect("below the last knot");
        let ((u0, x0), (u1, x1)) = (knots[i - 1], knots[i]);
        x0 + (x1 - x0) * (u - u0) / (u1 - u0)
    };
    for (metric, p) in
        [("latency_s_p50", 0.5), ("latency_s_p90", 0.9), ("latency_s_p99", 0.99), ("latency_s_p999", 0.999)]
    {
        let got = values(tenant_metric(v, "t", metric))[0];
        check_quantile(metric, p, got, requests, quantile);
    }
}

#[test]
fn a_lognormal_fitted_to_two_percentiles_reproduces_them() {
    let n = 200_000;
    let s = uncontended("{ dist = \"lognormal\", p50 = \"15ms\", p99 = \"60ms\" }", n);
    let study = run_study(&s, &s.run_variants(), &RunOptions { threads: Some(1), progress: false });
    let v = &study.variants[0];
    let requests = values(tenant_metric(v, "t", "requests"))[0];
    // σ = ln(60/15) / z₀.₉₉ from statrs' normal, independently of the crate's fit.
    let z99 = Normal::new(0.0, 1.0).expect("normal").inverse_cdf(0.99);
    let fitted = LogNormal::new(0.015f64.ln(), 4f64.ln() / z99).expect("lognormal");
    for (metric, p) in [("latency_s_p50", 0.5), ("latency_s_p99", 0.99)] {
        let got = values(tenant_metric(v, "t", metric))[0];
        check_quantile(metric, p, got, requests, |u| fitted.inverse_cdf(u));
    }
}

#[test]
fn trace_timestamps_drive_the_arrivals_exactly_and_volume_scales_them() {
    let s = common::scenario("trace-growth", &[]);
    let study = run_study(&s, &s.run_variants(), &RunOptions { threads: Some(2), progress: false });
    let recorded = std::fs::read_to_string(format!("{SCENARIOS}/data/capture-timestamps.csv")).expect("data");
    let times: Vec<f64> =
        recorded.lines().filter(|l| !l.starts_with('#')).skip(1).map(|l| l.parse().expect("seconds")).collect();
    // `loop` replays with period last + mean gap (MODEL: the capture starts at 0): count the
    // replayed times before the 180 s horizon.
    let (first, last) = (times[0], times[times.len() - 1]);
    let period = last + (last - first) / (times.len() - 1) as f64;
    let replayed = (0..4).map(|k| times.iter().filter(|&&t| k as f64 * period + t < 180.0).count()).sum::<usize>();
    assert!(replayed > 3 * times.len() - 10, "the capture is replayed about three times");
    for (variant, volume) in [("today", 1.0), ("growth-3x", 3.0)] {
        let v = study.variants.iter().find(|v| v.name == variant).expect("variant");
        for r in values(tenant_metric(v, "orders", "requests")) {
            assert_eq!(r, replayed as f64 * volume, "{variant}: every recorded request, looped and scaled");
        }
    }
}

#[test]
fn per_second_rates_give_the_trace_volume_within_poisson_error() {
    let s = common::scenario("from-production", &["replications=2"]);
    let study = run_study(&s, &s.run_variants()[..1], &RunOptions { threads: Some(2), progress: false });
    let text = std::fs::read_to_string(format!("{SCENARIOS}/data/tuesday-rps.csv")).expect("data");
    // Each row is one second at `rps`: the expected count is their sum; Poisson sd = √sum.
    let expected: f64 = text
        .lines()
        .skip_while(|l| !l.starts_with("time"))
        .skip(1)
        .map(|l| l.split(',').nth(1).expect("rps").parse::<f64>().expect("number"))
        .sum();
    for r in values(tenant_metric(&study.variants[0], "checkout", "requests")) {
        assert!((r - expected).abs() < 4.5 * expected.sqrt(), "{r} requests, expected {expected}");
    }
}

#[test]
fn validate_prints_each_policy_with_the_source_of_every_value_and_set_overrides_imports() {
    let out = retrystorm(
        Path::new(SCENARIOS),
        &["validate", "from-production.toml", "--set", "policy.client.max_attempts=2"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    // A field's line, with its source when that went on the next line (100 columns at most).
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{text}");
    let line = |field: &str| {
        let i = lines
            .iter()
            .position(|l| l.trim_start().starts_with(field))
            .unwrap_or_else(|| panic!("no {field} in:\n{text}"));
        match lines.get(i + 1) {
            Some(next) if next.trim_start().starts_with('←') => format!("{} {}", lines[i], next.trim()),
            _ => lines[i].to_string(),
        }
    };
    assert!(line("base ").contains("100ms") && line("base ").contains("retryPolicy.initialBackoff"), "{text}");
    assert!(line("budget").contains("retryThrottling"), "{text}");
    assert!(line("max_attempts").contains(" 2 ") && line("max_attempts").contains("scenario"), "{text}");
    assert!(line("attempt_timeout").contains("default"), "{text}");
    // Unsupported fields of the imported file are named.
    assert!(text.contains("warning:") && text.contains("loadBalancingConfig"), "{text}");
}

#[test]
fn init_writes_scenarios_that_run_accepts_from_numbers_and_from_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let init = retrystorm(
        dir,
        &[
            "init",
            "plan.toml",
            "--rate",
            "200",
            "--capacity",
            "300",
            "--outage",
            "30s",
            "--hops",
            "api,db",
            "--preset",
            "aws-standard",
        ],
    );
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let text = std::fs::read_to_string(dir.join("plan.toml")).expect("written");
    assert!(
        text.starts_with("# plan:") && text.contains("preset = \"aws-standard\"") && text.contains("kind = \"outage\"")
    );
    let ran = retrystorm(dir, &["run", "plan.toml", "--replications", "1", "--quiet", "--out", "o1"]);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    // Refuses to overwrite.
    let again = retrystorm(dir, &["init", "plan.toml", "--rate", "5"]);
    assert_eq!(again.status.code(), Some(2));
    // From the user's files: a trace, a histogram and a retry config.
    std::fs::create_dir(dir.join("mine")).expect("mkdir");
    for f in ["tuesday-rps.csv", "checkout-latency.csv", "grpc-service-config.json"] {
        std::fs::copy(format!("{SCENARIOS}/data/{f}"), dir.join("mine").join(f)).expect("copy");
    }
    let from = retrystorm(
        dir,
        &[
            "init",
            "mine/prod.toml",
            "--from",
            "mine/tuesday-rps.csv",
            "--from",
            "mine/checkout-latency.csv",
            "--from",
            "mine/grpc-service-config.json",
            "--select",
            "shop.Checkout/PlaceOrder",
            "--outage",
            "20s",
        ],
    );
    assert!(from.status.success(), "{}", String::from_utf8_lossy(&from.stderr));
    let text = std::fs::read_to_string(dir.join("mine/prod.toml")).expect("written");
    for needle in
        ["file = \"tuesday-rps.csv\"", "file = \"checkout-latency.csv\"", "import = \"grpc-service-config.json\""]
    {
        assert!(text.contains(needle), "{needle} missing in:\n{text}");
    }
    let ran = retrystorm(
        dir,
        &["compare", "mine/prod.toml", "--replications", "1", "--quiet", "--out", "o2", "--jitter", "full"],
    );
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    // A file that is none of the three is refused with its name.
    std::fs::write(dir.join("notes.md"), "hello").expect("write");
    let bad = retrystorm(dir, &["init", "x.toml", "--from", "notes.md"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("notes.md"));
    assert!(!dir.join("x.toml").exists());
}

#[test]
fn an_init_scenario_with_an_outage_recovers_within_its_horizon() {
    // 500/s through api → db sized for 600/s, db down 30 s: the backlog the outage builds must
    // drain (and the recovery be seen) before the horizon init writes; at the old 120 s every
    // run read metastable, and api's 12 workers waiting in db's queue completed ≈ 505/s with a
    // backlog, so it never drained at any horizon.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let args = [
        "init",
        "s.toml",
        "--rate",
        "500",
        "--capacity",
        "600",
        "--outage",
        "30s",
        "--hops",
        "api,db",
        "--preset",
        "aws-standard",
    ];
    let init = retrystorm(dir, &args);
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let text = std::fs::read_to_string(dir.join("s.toml")).expect("written");
    assert!(text.contains("# horizon: the outage ends at 60 s"), "the estimate is stated:\n{text}");
    let ran = retrystorm(dir, &["compare", "s.toml", "--quiet", "--out", "o"]);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("o/summary.json")).expect("summary")).expect("json");
    let variants = summary["variants"].as_array().expect("variants");
    assert!(variants.len() >= 5, "the jitter variants");
    for v in variants {
        let m = &v["metrics"];
        assert_eq!(m["metastable"]["mean"], 0.0, "{}: {}", v["name"], m["metastable"]);
        assert_eq!(m["recovered"]["mean"], 1.0, "{}: {}", v["name"], m["recovered"]);
    }
    // At or above what the chain completes, no horizon covers the drain: said, not hidden.
    let tight = retrystorm(
        dir,
        &["init", "t.toml", "--rate", "600", "--capacity", "600", "--outage", "30s", "--hops", "api,db"],
    );
    assert!(tight.status.success(), "{}", String::from_utf8_lossy(&tight.stderr));
    let err = String::from_utf8_lossy(&tight.stderr);
    assert!(err.contains("never drains") && err.contains("--capacity"), "{err}");
}

#[test]
fn imported_retry_on_stops_retries_of_unlisted_failures() {
    // gRPC retries only UNAVAILABLE and RESOURCE_EXHAUSTED here: attempts that time out are not
    // retried, so with a 1 ms per-attempt timeout against a 5 ms service every request makes
    // exactly one attempt; listing timeouts makes it use all four.
    let text = |retry_on: &str| {
        format!(
            "name = \"r\"\nseed = 1\nhorizon = \"2s\"\n[[tenant]]\nname = \"t\"\nclients = 50\narrival = {{ kind = \"herd\", spread = \"1s\" }}\npolicy = \"p\"\n\
             [policy.p]\nimport = \"data/grpc-service-config.json\"\nselect = \"shop.Checkout/PlaceOrder\"\nattempt_timeout = \"1ms\"\n{retry_on}\
             [[hop]]\nname = \"api\"\nworkers = 100\nservice = {{ dist = \"constant\", mean = \"5ms\" }}\n"
        )
    };
    let attempts = |retry_on: &str| {
        let s = Scenario::from_source(&format!("{SCENARIOS}/r.toml"), &text(retry_on), &[])
            .unwrap_or_else(|e| panic!("{e}"));
        let study = run_study(&s, &s.run_variants(), &RunOptions { threads: Some(1), progress: false });
        values(common::metric(&study.variants[0], "attempts"))[0]
    };
    assert_eq!(attempts(""), 50.0);
    assert_eq!(attempts("retry_on = [\"transient\", \"timeout\"]\n"), 200.0);
}
