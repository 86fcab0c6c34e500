//! `retrystorm plan`: the answer against a value derived independently of the search, the
//! determinism of the files, and shards merging into the unsharded plan byte for byte.

mod common;
use common::*;
use retrystorm::metrics::objective::one_sided_bound;
use std::process::Command;

fn retrystorm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("runs")
}

const SETS: [&str; 2] = ["policy.client.jitter=exponential", "tenant.main.clients=2000"];

fn plan_args(out: &str, extra: &[&'static str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "plan",
        "scenarios/outage-herd.toml",
        "--vary",
        "hop.api.workers=1..64",
        "--require",
        "peak_after_over_capacity <= 1",
        "--replications",
        "4",
        "--quiet",
        "--out",
        out,
    ]
    .map(String::from)
    .to_vec();
    for s in SETS {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_plan(out: &str, extra: &[&'static str]) -> std::process::Output {
    let args = plan_args(out, extra);
    retrystorm(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `merge` of the shard directories `s1` and `s2` under `dir` writes plan.json and plan.csv
/// byte-identical to the unsharded plan in `whole`.
fn assert_shards_merge_to(dir: &std::path::Path, whole: &str) {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let merged = retrystorm(&["merge", &path("s1"), &path("s2"), "--out", &path("m")]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    for file in ["plan.json", "plan.csv"] {
        let read = |d: &str| std::fs::read(dir.join(d).join(file)).unwrap();
        assert_eq!(read(whole), read("m"), "{file}: merged shards differ from the whole plan");
    }
}

#[test]
fn plan_answers_the_worker_count_the_wall_needs() {
    // Without jitter the post-outage arrivals do not depend on the API's workers (it fails fast
    // while down and every retry is scheduled before it is back), so peak_after_per_s is the
    // same at every worker count, and with capacity 1,000/s per worker the requirement
    // peak ÷ (1,000 W) ≤ 1 at the one-sided 95% bound holds exactly from W = ⌈bound / 1,000⌉.
    let study = study("outage-herd", &[SETS[0], SETS[1], "replications=4"]);
    let bound = one_sided_bound(hop_metric(&study.variants[0], "api", "peak_after_per_s"), false).unwrap();
    let expected = (bound / 1000.0).ceil() as i64;
    assert!(expected > 1, "the wall exceeds one worker's capacity: bound {bound}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let output = run_plan(out.to_str().unwrap(), &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["plans"][0]["chosen"].as_i64(), Some(expected), "bound {bound}");
    for file in ["plan.csv", "plan.svg", "plan.png", "report.html"] {
        assert!(out.join(file).is_file(), "{file} written");
    }
}

#[test]
fn plan_is_deterministic_and_shards_merge_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let jitter: [&'static str; 2] = ["--jitter", "exponential,full,equal"];
    assert!(run_plan(&path("a"), &jitter).status.success());
    assert!(run_plan(&path("b"), &[jitter[0], jitter[1], "--threads", "1"]).status.success());
    assert!(run_plan(&path("s1"), &[jitter[0], jitter[1], "--shard", "1/2"]).status.success());
    assert!(run_plan(&path("s2"), &[jitter[0], jitter[1], "--shard", "2/2"]).status.success());
    let merged = retrystorm(&["merge", &path("s1"), &path("s2"), "--out", &path("m")]);
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    for file in ["plan.json", "plan.csv"] {
        let read = |d: &str| std::fs::read(dir.path().join(d).join(file)).unwrap();
        assert_eq!(read("a"), read("b"), "{file}: thread count changed it");
        assert_eq!(read("a"), read("m"), "{file}: merged shards differ from the whole plan");
    }
    // One shard alone is refused, naming the missing variant.
    let alone = retrystorm(&["merge", &path("s1"), "--out", &path("x")]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&alone.stderr).contains("(full) is missing"));
}

/// Each case (extra flags after `plan scenarios/outage-herd.toml --quiet --out DIR`, the words
/// its message must hold) exits with code 2, that message and no panic, and writes nothing.
fn assert_refused(cases: Vec<(Vec<&str>, &str)>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    for (args, says) in cases {
        let mut all = vec!["plan", "scenarios/outage-herd.toml", "--quiet", "--out", out.to_str().unwrap()];
        all.extend(args);
        let o = retrystorm(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!out.exists(), "nothing written for {all:?}");
    }
}

#[test]
fn plan_refuses_bad_requirements_and_ranges_with_exit_code_2() {
    assert_refused(vec![
        (vec!["--vary", "hop.api.workers=8..1"], "the range is empty"),
        (vec!["--vary", "hop.api.workers=1..8", "--require", "succes_ratio >= 0.9"], "did you mean `success_ratio`"),
        (vec!["--vary", "hop.api.workers=1..8", "--require", "hop.db.attempts <= 9"], "no hop is named `db`"),
        (vec!["--vary", "hop.api.workers=0..8", "--require", "success_ratio >= 0.9"], "hop.api.workers=0"),
    ]);
}

fn plan_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap()
}

#[test]
fn largest_service_time_the_api_sustains_over_a_duration_range() {
    // Without jitter the post-outage wall does not depend on the API's speed (it fails fast while
    // down), so peak_after_over_capacity = peak_after_per_s × mean service time, and the largest
    // mean meeting `≤ 1` at the one-sided 95% bound is 1 / bound(peak_after_per_s), floored to
    // the 1 µs resolution (the grid starts at 20 µs, a multiple of 1 µs).
    let study = study("outage-herd", &[SETS[0], SETS[1], "replications=4"]);
    let bound = one_sided_bound(hop_metric(&study.variants[0], "api", "peak_after_per_s"), false).unwrap();
    let expected_us = (1e6 / bound).floor();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let mut args = plan_args(&path("a"), &["--find", "largest", "--resolution", "1us", "--jitter", "exponential,full"]);
    args[3] = "hop.api.service.mean=20us..1ms".into();
    let run = |args: &[String]| retrystorm(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let output = run(&args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let plan = plan_json(&dir.path().join("a"));
    assert_eq!((plan["kind"].as_str(), plan["find"].as_str()), (Some("duration"), Some("largest")));
    let chosen_us = plan["plans"][0]["chosen"].as_f64().unwrap() * 1e6;
    assert!((chosen_us - expected_us).abs() < 1.0 + 1e-6, "chosen {chosen_us} µs, expected {expected_us} µs");
    assert!(plan["plans"][0]["warnings"].as_array().unwrap().is_empty(), "{plan}");
    // The report says the answer in the parameter's unit.
    let html = std::fs::read_to_string(dir.path().join("a/report.html")).unwrap();
    assert!(html.contains(&format!("hop.api.service.mean = {:.3} ms", expected_us / 1e3)), "report answer");
    // Shards merge into the same plan.json and plan.csv.
    for (name, shard) in [("s1", "1/2"), ("s2", "2/2")] {
        let mut a = args.clone();
        a[10] = path(name);
        a.extend(["--shard".to_string(), shard.to_string()]);
        assert!(run(&a).status.success());
    }
    assert_shards_merge_to(dir.path(), "a");
}

#[test]
fn largest_arrival_rate_an_mm1_server_sustains_matches_queueing_theory() {
    // M/M/1 with μ = 1,000/s: the sojourn time is exponential with rate μ − λ, so its 99th
    // percentile is ln(100) / (μ − λ) and p99 ≤ 50 ms ⇔ λ ≤ 1,000 − 20 ln 100 = 907.9/s. Four
    // replications of 50 s (about 45,000 requests each, strongly autocorrelated at ρ ≈ 0.9)
    // estimate p99 to within about ±20%, i.e. λ within about ±18/s of the theory; the search
    // itself is exact to the resolution of 1/s.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    let o = retrystorm(&[
        "plan",
        "scenarios/mm1.toml",
        "--vary",
        "tenant.customers.arrival.rate_per_s=100.0..1000.0",
        "--find",
        "largest",
        "--require",
        "latency_s_p99 <= 0.05",
        "--replications",
        "4",
        "--set",
        "horizon=50s",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theory = 1000.0 - 20.0 * 100f64.ln();
    let plan = plan_json(&out);
    assert_eq!(plan["kind"].as_str(), Some("real"));
    let chosen = plan["plans"][0]["chosen"].as_f64().unwrap();
    assert!((chosen - theory).abs() <= 18.0, "chosen {chosen}/s, theory {theory:.1}/s");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("largest tenant.customers.arrival.rate_per_s"), "{stdout}");
    // Every probe below the answer meets the requirement and every one above fails (monotone).
    for p in plan["plans"][0]["probes"].as_array().unwrap() {
        assert_eq!(p["meets_all"].as_bool(), Some(p["value"].as_f64().unwrap() <= chosen), "{p}");
    }
}

#[test]
fn plan_refuses_bad_duration_and_rate_ranges_with_one_message() {
    let cases = vec![
        (vec!["--vary", "hop.api.service.mean=50ms..5ms"], "the range is empty (50ms > 5ms)"),
        (vec!["--vary", "hop.api.service.mean=5ms..fast"], "`fast` is not a number or a duration"),
        (vec!["--vary", "hop.api.service.mean=5ms..50"], "unit mismatch"),
        (vec!["--vary", "hop.api.service.mean=5ms..50ms", "--resolution", "0.1"], "unit mismatch"),
        (vec!["--vary", "hop.api.workers=1..8", "--resolution", "1ms"], "unit mismatch"),
        (vec!["--vary", "hop.api.workers=1..8", "--find", "biggest"], "invalid value 'biggest' for '--find"),
        // A duration range on a whole-number field: the scenario says which field and value.
        (vec!["--vary", "hop.api.workers=5ms..50ms"], "hop.api.workers=5ms"),
    ];
    assert_refused(
        cases
            .into_iter()
            .map(|(mut args, says)| {
                args.extend(["--require", "success_ratio >= 0.9"]);
                (args, says)
            })
            .collect(),
    );
}

/// The largest trigger a configuration absorbs: `--find largest` over the outage's length (the
/// README's example). Checked against runs made without the search: at the chosen length every
/// requirement holds at its one-sided 95% bound (recomputed here from the per-replication
/// values with `one_sided_bound`), one resolution step longer one fails — the boundary the
/// bisection claims, on the same seeds.
#[test]
fn largest_outage_a_configuration_absorbs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    let output = retrystorm(&[
        "plan",
        "scenarios/outage-herd.toml",
        "--vary",
        "fault.0.to=1s..60s",
        "--find",
        "largest",
        "--set",
        "hop.api.workers=64",
        "--set",
        "policy.client.jitter=exponential",
        "--replications",
        "4",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let plan = plan_json(&out);
    assert_eq!((plan["kind"].as_str(), plan["find"].as_str()), (Some("duration"), Some("largest")));
    let chosen = plan["plans"][0]["chosen"].as_f64().expect("an outage length is absorbed");
    let step = plan["resolution"].as_f64().unwrap();
    assert!((1.0..60.0).contains(&chosen), "{chosen}");
    let meets = |seconds: f64| {
        let to = format!("fault.0.to={}ms", (seconds * 1e3).round());
        let study =
            study("outage-herd", &["hop.api.workers=64", "policy.client.jitter=exponential", "replications=4", &to]);
        let v = &study.variants[0];
        let success = one_sided_bound(metric(v, "success_ratio"), true).unwrap();
        let peak = one_sided_bound(metric(v, "peak_after_over_capacity"), false).unwrap();
        success >= 0.999 && peak <= 1.0
    };
    assert!(meets(chosen), "the chosen {chosen} s must meet every requirement");
    assert!(!meets(chosen + step), "{} s (one step longer) must not", chosen + step);
}

/// The first search's answer at each value of the second setting, as a one-setting plan with
/// that value `--set` gives it.
#[test]
fn a_two_setting_plan_is_a_one_setting_plan_at_each_value_and_names_the_cheapest() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // Full jitter needs more attempts to outlast the 10 s outage than exponential does, so
    // success (and with it the answer) depends on max_attempts.
    let two: [&'static str; 8] = [
        "--jitter",
        "exponential,full",
        "--require",
        "success_ratio >= 0.99",
        "--across",
        "policy.client.max_attempts=6..14",
        "--across-step",
        "4",
    ];
    let whole = run_plan(&path("two"), &two);
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("two/plan.json")).unwrap()).unwrap();
    assert_eq!(plan["across"]["parameter"], "policy.client.max_attempts");
    let entries = plan["plans"].as_array().unwrap();
    assert_eq!(entries.len(), 6, "2 variants × max_attempts 6, 10, 14");
    let mut found = 0;
    for (k, at) in [6, 10, 14].into_iter().enumerate() {
        let set = format!("policy.client.max_attempts={at}");
        let one = format!("one-{at}");
        let mut args = plan_args(&path(&one), &["--jitter", "exponential,full", "--require", "success_ratio >= 0.99"]);
        args.extend(["--set".to_string(), set]);
        let o = retrystorm(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let single: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(&one).join("plan.json")).unwrap()).unwrap();
        for v in 0..2 {
            let e = &entries[v * 3 + k];
            assert_eq!(e["at"].as_i64(), Some(at));
            assert_eq!(e["chosen"], single["plans"][v]["chosen"], "{} at max_attempts {at}", e["variant"]);
            assert_eq!(e["probes"], single["plans"][v]["probes"], "{} at max_attempts {at}", e["variant"]);
            found += usize::from(!e["chosen"].is_null());
        }
    }
    assert!(found >= 2, "the frontier has answers to compare: {entries:?}");
    // The cheapest: the fewest workers, ties to the fewest attempts; the report says it.
    let report = std::fs::read_to_string(dir.path().join("two/report.html")).unwrap();
    for v in 0..2 {
        let mine: Vec<(i64, i64)> = entries[v * 3..v * 3 + 3]
            .iter()
            .filter_map(|e| Some((e["chosen"].as_i64()?, e["at"].as_i64().unwrap())))
            .collect();
        let name = entries[v * 3]["variant"].as_str().unwrap();
        match mine.iter().min() {
            Some((workers, at)) => assert!(
                report.contains(&format!(
                    "{name}: cheapest hop.api.workers = {workers} at policy.client.max_attempts = {at}"
                )),
                "{name}: {mine:?}"
            ),
            None => assert!(report.contains(&format!("{name}: no combination")), "{name}"),
        }
    }
    assert!(dir.path().join("two/frontier.png").is_file());
    // Shards merge into the same files.
    let shard = |k: &'static str, out: &str| {
        let mut extra: Vec<&'static str> = two.to_vec();
        extra.extend(["--shard", k]);
        assert!(run_plan(&path(out), &extra).status.success());
    };
    shard("1/2", "s1");
    shard("2/2", "s2");
    assert_shards_merge_to(dir.path(), "two");
}

#[test]
fn a_two_setting_plan_refuses_a_second_setting_it_cannot_sweep() {
    let cases = vec![
        (vec!["--across", "hop.api.workers=1..4"], "the same setting as --vary"),
        (vec!["--across", "policy.client.max_attempts=1..100"], "100 values"),
        (
            vec!["--across", "policy.client.max_attempts=9..2"],
            "--across `policy.client.max_attempts=9..2`: the range is empty",
        ),
        (vec!["--across", "policy.client.base=10ms..1s", "--across-step", "2"], "--across-step `2`: unit mismatch"),
        (vec!["--across-step", "2"], "--across"),
    ];
    assert_refused(
        cases
            .into_iter()
            .map(|(args, says)| {
                let mut all = vec!["--vary", "hop.api.workers=1..8"];
                all.extend(args);
                (all, says)
            })
            .collect(),
    );
}

/// One replication per probe is no confidence at all (the one-sided bound of one value is the
/// value): `plan` says so in its answer and its probes table instead of quoting a "95% bound", and
/// `compare`'s verdict names the run's value; with two or more the 95% wording stays.
#[test]
fn one_replication_is_never_called_95_percent_confidence() {
    let tmp = tempfile::tempdir().expect("temp dir");
    for (replications, expect, header) in [
        ("1", "on one run per probe, with no confidence", "bound (one run: its value)"),
        ("2", "with 95% confidence (2 replications per probe", "95% bound"),
    ] {
        let out = tmp.path().join(format!("plan{replications}"));
        let out_s = out.to_str().unwrap();
        let mut args = vec!["plan", "scenarios/mm1.toml", "--vary", "hop.server.workers=1..4"];
        args.extend(["--require", "latency_s_p99 <= 0.05", "--replications", replications, "--out", out_s]);
        let output = retrystorm(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8_lossy(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(expect), "{replications}: {text}");
        assert_eq!(text.contains("95% confidence"), replications != "1", "{text}");
        let html = std::fs::read_to_string(out.join("report.html")).expect("report");
        assert!(html.contains(&format!("<th>{header}</th>")), "{replications}: probes header");
        let (mean, meta) = if replications == "1" {
            ("value (one run: no CI)", "1 replication per probe")
        } else {
            ("mean ± 95% CI", "2 replications per probe")
        };
        assert!(html.contains(&format!("<th>{mean}</th>")) && html.contains(meta), "{replications}: {mean}, {meta}");
    }
    let out = tmp.path().join("compare1");
    let output = retrystorm(&[
        "compare",
        "scenarios/outage-herd.toml",
        "--replications",
        "1",
        "--set",
        "tenant.main.clients=2000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("(one run's value "), "{text}");
    assert!(!text.contains("95% bound"), "{text}");
}

/// `merge` re-derives every shard's answer from its own probes and refuses a shard whose chosen
/// value, statistics or probe values were edited (exit code 2, the file and the variant named,
/// nothing written); the shards as written merge.
#[test]
fn merge_refuses_tampered_plan_shards() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for k in ["1", "2"] {
        let shard = format!("{k}/2");
        let mut args = vec!["plan", "scenarios/mm1.toml", "--vary", "hop.server.workers=1..4", "--quiet"];
        let out = path(&format!("s{k}"));
        args.extend(["--require", "latency_s_p99 <= 0.05", "--replications", "2", "--jitter", "full,equal"]);
        args.extend(["--shard", &shard, "--out", &out]);
        let o = retrystorm(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let ok = retrystorm(&["merge", &path("s1"), &path("s2"), "--out", &path("ok")]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let original: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("s1/plan.json")).unwrap()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(&str, Edit, &str); 3] = [
        ("chosen", |p| p["chosen"] = 99.into(), "the chosen value or the probes do not follow from the search"),
        (
            "mean",
            |p| p["probes"][0]["requirements"][0]["stat"]["mean"] = 1e300.into(),
            "at 1, `latency_s_p99 <= 0.05` does not follow from its per-replication values",
        ),
        ("negative", |p| p["probes"][0]["value"] = (-5).into(), "a probe at -5 is outside 1..4"),
    ];
    for (name, edit, says) in cases {
        let mut tampered = original.clone();
        edit(&mut tampered["plans"][0]);
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("plan.json"), tampered.to_string()).unwrap();
        let out = path(&format!("m-{name}"));
        let o = retrystorm(&["merge", &path(name), &path("s2"), "--out", &out]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("{name}/plan.json`: variant 0 (full): {says}")), "{name}: {err}");
        assert!(err.contains("run its shard again"), "{err}");
        assert!(!std::path::Path::new(&out).exists(), "{name}: nothing written");
    }
}

#[test]
fn plan_says_when_capacity_cannot_meet_the_requirement() {
    // outage-herd with full jitter: 10 attempts whose delays are drawn short run out during the
    // 10 s outage, at any worker count (docs/MODEL.md's plan table: 92.6% success). The search
    // finds no value and says why, on stdout and in plan.json, and exits 0.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let args = |out: &str, jitter: &'static str, require: &'static str, workers: &'static str| {
        let o = retrystorm(&[
            "plan",
            "scenarios/outage-herd.toml",
            "--jitter",
            jitter,
            "--vary",
            workers,
            "--require",
            require,
            "--replications",
            "4",
            "--set",
            "tenant.main.clients=2000",
            "--out",
            out,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let plan: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(std::path::Path::new(out).join("plan.json")).unwrap())
                .unwrap();
        (String::from_utf8_lossy(&o.stdout).to_string(), plan)
    };
    let (stdout, plan) = args(out.to_str().unwrap(), "full", "success_ratio >= 0.999", "hop.api.workers=1..64");
    let p = &plan["plans"][0];
    assert_eq!(p["chosen"], serde_json::Value::Null);
    let said = "capacity cannot meet success_ratio >= 0.999";
    let warning = p["warnings"].as_array().unwrap().iter().find(|w| w.as_str().unwrap().contains(said));
    let warning = warning.unwrap_or_else(|| panic!("{}", p["warnings"])).as_str().unwrap();
    assert!(
        warning.contains("requests per run ran out of attempts during the fault (outage on api 0s–10s)"),
        "{warning}"
    );
    assert!(warning.contains("lengthen the retry horizon"), "{warning}");
    assert!(stdout.contains(said), "{stdout}");
    // The search's probes stay the search's (the bottom was run for the comparison only).
    let values: Vec<f64> = p["probes"].as_array().unwrap().iter().map(|q| q["value"].as_f64().unwrap()).collect();
    assert_eq!(values, [64.0]);
    // Exponential backoff's 10 attempts span 32.7 s, past the outage: none run out, so a range too
    // small for its load peak is the range's fault, and nothing is said of capacity.
    let out = dir.path().join("small");
    let (_, plan) = args(out.to_str().unwrap(), "exponential", "peak_after_over_capacity <= 1", "hop.api.workers=1..2");
    let p = &plan["plans"][0];
    assert_eq!(p["chosen"], serde_json::Value::Null);
    assert!(!p["warnings"].to_string().contains("capacity cannot"), "{}", p["warnings"]);
}
