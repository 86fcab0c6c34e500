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

#[test]
fn every_simulator_strategy_is_accepted_under_its_name() {
    // `none` retries at once, as in scenarios (it used to mean the un-jittered delay here).
    let report = json(&["--window", "1h", "--jitter", "none", "--seeds", "1"]);
    let delays: Vec<f64> =
        report["schedule"].as_array().expect("rows").iter().map(|r| r["delay_s"].as_f64().unwrap()).collect();
    assert_eq!(delays.len(), 120, "one attempt per 30 s timeout");
    assert!(delays.iter().all(|&d| d == 0.0), "{delays:?}");
    let report = json(&["--window", "1h", "--jitter", "exponential", "--seeds", "1"]);
    assert_eq!(report["schedule"][2]["delay_s"].as_f64(), Some(8.0));
    for extra in [
        &["--jitter", "full"][..],
        &["--jitter", "equal"],
        &["--jitter", "decorrelated"],
        &["--jitter", "decorrelated_v2"],
        &["--jitter", "proportional", "--ratio", "0.5"],
        &["--jitter", "schedule", "--schedule", "5s,5m,30m"],
    ] {
        let mut args = vec!["--window", "72h", "--seeds", "5"];
        args.extend_from_slice(extra);
        let report = json(&args);
        let b = &report["budget"];
        assert!(secs(&b["worst_case_scheduled"]) <= secs(&b["window"]), "{extra:?}");
        assert!(report["invariant_holds"].as_bool().expect("bool"), "{extra:?}");
    }
    let (code, _, stderr) = budget(&["--window", "1h", "--jitter", "fulll"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--jitter: unknown jitter `fulll`") && stderr.contains("did you mean `full`?"), "{stderr}");
    let (code, _, stderr) = budget(&["--window", "1h", "--jitter", "full", "--ratio", "0.2"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--ratio is only used by --jitter proportional"), "{stderr}");
}

#[test]
fn the_invariant_check_fails_when_the_ttl_does_not_outlast_the_window() {
    let (code, stdout, _) = budget(&["--window", "72h", "--margin", "0s", "--seeds", "1"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("horizon <= window < TTL    VIOLATED"), "{stdout}");
    assert_eq!(json(&["--window", "72h", "--margin", "0s", "--seeds", "1"])["invariant_holds"], false);
    // The guide's defaults with full jitter: 157 attempts fit seed 7's draws, but configured as
    // max_attempts their worst case is ~148 h; 81 always fit.
    let report = json(&["--window", "72h", "--seeds", "1"]);
    let b = &report["budget"];
    assert_eq!(b["attempts_fitted"], 157);
    assert_eq!(secs(&b["fitted_worst_case"]), 534_404.0);
    assert_eq!(b["fitted_count_fits"], false);
    assert_eq!(report["max_attempts"], 81);
    assert_eq!(report["invariant_holds"], true);
}

/// Rule: the text report of a chain (`--hops` > 1) has its hop table right after the answer, one row per hop
/// holding the same values as the JSON report (window, attempts fitted, scheduled time, the
/// count that always fits, TTL, whether the window is strictly smaller than its caller's); a
/// single hop's report has no hop table. Kills the mutant that deletes `!` in
/// `if !self.hops.is_empty()` of `BudgetReport::to_text` (the table's heading printed only for
/// a single hop), which no test noticed: none read the hop table's text.
#[test]
fn the_budget_report_of_a_chain_prints_its_hop_table_with_its_values_and_one_hop_prints_none() {
    let args = ["--window", "72h", "--hops", "3", "--shrink", "4", "--seeds", "1"];
    let (code, text, stderr) = budget(&args);
    assert_eq!(code, Some(0), "{stderr}");
    let report = json(&args);
    let hops = report["hops"].as_array().expect("hops");
    assert_eq!(hops.len(), 3);
    let table =
        text.split("\nhops (hop i gets window / 4^i)\n").nth(1).unwrap_or_else(|| panic!("no hop table: {text}"));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "  hop     window_s  attempts  scheduled_s  always fits        ttl_s  smaller");
    assert_eq!(lines.get(1 + hops.len()), Some(&""), "one row per hop, then a blank line: {table}");
    // The answer and the hop table come before the reasons (the table used to come last).
    assert!(
        text.find("max_attempts to configure") < text.find("\nhops (") && text.find("\nhops (") < text.find("\nwhy ")
    );
    for (line, hop) in lines[1..=hops.len()].iter().zip(hops) {
        let smaller = match hop["window_strictly_smaller"].as_bool() {
            None => "-",
            Some(true) => "yes",
            Some(false) => "NO",
        };
        let expect = [
            hop["hop"].to_string(),
            format!("{:.3}", secs(&hop["window"])),
            hop["attempts_fitted"].to_string(),
            format!("{:.3}", secs(&hop["scheduled"])),
            hop["worst_case_attempts"].to_string(),
            format!("{:.3}", secs(&hop["idempotency_ttl"])),
            smaller.to_string(),
        ];
        assert_eq!(line.split_whitespace().collect::<Vec<_>>(), expect, "{line}");
    }
    // The inner windows are the outer one divided by 4 and 16: 72 h, 18 h, 4.5 h.
    let windows: Vec<f64> = hops.iter().map(|h| secs(&h["window"])).collect();
    assert_eq!(windows, [259_200.0, 64_800.0, 16_200.0]);
    // One hop: no table, and no hops in the JSON either.
    let (code, single, _) = budget(&["--window", "72h", "--seeds", "1"]);
    assert_eq!(code, Some(0));
    assert!(!single.contains("\nhops (") && !single.contains("window_s"), "{single}");
    assert_eq!(json(&["--window", "72h", "--seeds", "1"])["hops"], Value::Array(Vec::new()));
}

/// The answer leads (line 2 of the text, not line 9 of 208), durations read in one or
/// two units, and the seed's schedule and histogram come only with `--details`.
#[test]
fn the_budget_answers_first_and_details_on_request() {
    let (code, text, stderr) = budget(&["--window", "72h", "--seeds", "20"]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1] == "  max_attempts to configure  81   (worst case 2 days 23 h, within the window of 3 days)",
        "{text}"
    );
    assert!(lines[2].starts_with("  idempotency TTL            3 days 6 h"), "{text}");
    assert!(lines.len() < 15 && !text.contains("delay_s"), "no schedule without --details: {text}");
    assert!(!text.contains("ms ") && !text.contains("us") && !text.contains("ns"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let (code, details, _) = budget(&["--window", "72h", "--seeds", "20", "--details"]);
    assert_eq!(code, Some(0));
    assert!(details.starts_with(&text[..text.find("  seed 7's schedule").expect("the hint")]), "{details}");
    assert!(details.contains("  attempt      delay_s      start_s\n") && details.lines().count() > 150);
}
