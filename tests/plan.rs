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

#[test]
fn plan_refuses_bad_requirements_and_ranges_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    for (args, says) in [
        (vec!["--vary", "hop.api.workers=8..1"], "the range is empty"),
        (vec!["--vary", "hop.api.workers=1..8", "--require", "succes_ratio >= 0.9"], "did you mean `success_ratio`"),
        (vec!["--vary", "hop.api.workers=1..8", "--require", "hop.db.attempts <= 9"], "no hop is named `db`"),
        (vec!["--vary", "hop.api.workers=0..8", "--require", "success_ratio >= 0.9"], "hop.api.workers=0"),
    ] {
        let mut all = vec!["plan", "scenarios/outage-herd.toml", "--quiet", "--out", out.to_str().unwrap()];
        all.extend(args);
        let o = retrystorm(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{all:?}: {err}");
        assert!(!out.exists(), "nothing written for {all:?}");
    }
}
