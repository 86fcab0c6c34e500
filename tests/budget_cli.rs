//! `retrystorm budget` end to end: the guide's invariants through the command line.

use serde_json::Value;
use std::process::Command;

fn budget(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrystorm")).arg("budget").args(args).output().expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let (code, stdout, stderr) = budget(&all);
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(&stdout).expect("valid JSON")
}

fn secs(v: &Value) -> f64 {
    v["seconds"].as_f64().expect("seconds")
}

#[test]
fn scheduled_time_fits_the_window_for_200_seeds_and_the_ttl_outlives_it() {
    for seed in 0..200 {
        let seed = seed.to_string();
        let report = json(&["--window", "72h", "--seed", &seed, "--seeds", "1"]);
        let b = &report["budget"];
        assert!(secs(&b["scheduled"]) <= secs(&b["window"]), "seed {seed}");
        assert_eq!(secs(&b["window"]), 72.0 * 3600.0);
        assert_eq!(secs(&b["idempotency_ttl"]), 78.0 * 3600.0);
    }
}

#[test]
fn a_shorter_window_never_fits_more_attempts() {
    for seed in ["1", "2", "3", "42"] {
        let small = json(&["--window", "1h", "--seed", seed, "--seeds", "1"]);
        let large = json(&["--window", "72h", "--seed", seed, "--seeds", "1"]);
        let fitted = |r: &Value| r["budget"]["attempts_fitted"].as_u64().expect("count");
        assert!(fitted(&small) <= fitted(&large), "seed {seed}");
    }
}

#[test]
fn each_inner_hop_gets_a_strictly_smaller_window_that_its_schedule_fits() {
    let report = json(&["--window", "72h", "--hops", "3"]);
    let hops = report["hops"].as_array().expect("hops");
    assert_eq!(hops.len(), 3);
    for pair in hops.windows(2) {
        assert!(secs(&pair[1]["window"]) < secs(&pair[0]["window"]));
    }
    for hop in hops {
        assert!(secs(&hop["scheduled"]) <= secs(&hop["window"]));
        assert!(secs(&hop["idempotency_ttl"]) > secs(&hop["window"]));
    }
}

#[test]
fn impossible_budgets_are_refused_with_exit_code_2() {
    let (code, _, stderr) = budget(&["--window", "72h", "--base", "0s", "--attempt-timeout", "0s"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--base 0s and --attempt-timeout 0s"), "{stderr}");
    let (code, _, stderr) = budget(&["--window", "soon"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--window: invalid duration `soon`"), "{stderr}");
}
