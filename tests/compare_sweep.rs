//! `compare`, `sweep` and `merge` end to end: determinism across thread counts, shards that merge
//! into the unsharded sweep byte for byte, merges that refuse mismatched shards, and the gain
//! from common random numbers.

mod common;
use common::*;
use retrystorm::runner::{run_study, RunOptions};
use retrystorm::scenario::{parse_assignment, Variant};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const HERD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/outage-herd.toml");

fn retrystorm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).args(args).output().expect("the binary runs")
}

fn ok(args: &[&str]) {
    let out = retrystorm(args);
    assert!(out.status.success(), "retrystorm {} failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

fn refused(args: &[&str]) -> String {
    let out = retrystorm(args);
    assert_eq!(out.status.code(), Some(2), "retrystorm {} should exit 2", args.join(" "));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", dir.display()))
}

fn same_files(a: &Path, b: &Path, files: &[&str]) {
    for file in files {
        assert!(read(a, file) == read(b, file), "{file} differs between {} and {}", a.display(), b.display());
    }
}

/// A small grid: 3 × 2 = 6 cells of 2 variants, 3 replications, a few hundred clients.
const SWEEP: [&str; 12] = [
    "sweep",
    HERD,
    "--vary",
    "tenant.main.clients=200,400,800",
    "--vary",
    "policy.client.base=50ms,100ms",
    "--jitter",
    "full,equal",
    "--replications",
    "3",
    "--quiet",
    "--out",
];

fn sweep(out: &Path, extra: &[&str]) {
    let mut args: Vec<&str> = SWEEP.to_vec();
    args.push(out.to_str().expect("utf-8 path"));
    args.extend(extra);
    ok(&args);
}

#[test]
fn compare_is_byte_identical_for_one_and_two_threads_and_reports_paired_differences() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (a, b) = (tmp.path().join("t1"), tmp.path().join("t2"));
    for (dir, threads) in [(&a, "1"), (&b, "2")] {
        let dir = dir.to_str().expect("utf-8");
        ok(&[
            "compare",
            HERD,
            "--set",
            "tenant.main.clients=500",
            "--replications",
            "4",
            "--threads",
            threads,
            "--quiet",
            "--out",
            dir,
        ]);
    }
    same_files(&a, &b, &["summary.json", "summary.csv", "timeseries.csv"]);
    let summary: Value = serde_json::from_slice(&read(&a, "summary.json")).expect("JSON");
    let comparisons = summary["comparisons"].as_array().expect("comparisons");
    let names: Vec<&str> = comparisons.iter().map(|c| c["variant"].as_str().expect("name")).collect();
    assert_eq!(names, ["exponential", "full", "equal", "decorrelated"]);
    assert!(comparisons.iter().all(|c| c["baseline"] == "none"));
    // Paired differences are differences of the per-replication values, replication by replication.
    let values = |v: usize| -> Vec<f64> {
        summary["variants"][v]["metrics"]["attempts"]["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|x| x.as_f64().expect("number"))
            .collect()
    };
    let d: Vec<f64> = comparisons[1]["metrics"]["attempts"]["values"]
        .as_array()
        .expect("d")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    let expected: Vec<f64> = values(2).iter().zip(values(0)).map(|(f, n)| f - n).collect();
    assert_eq!(d, expected);
    let csv = String::from_utf8(read(&a, "summary.csv")).expect("utf-8");
    assert_eq!(csv.lines().filter(|l| l.starts_with("full,paired_difference,none,attempts,")).count(), 1, "{csv}");

    let err = refused(&["compare", HERD, "--baseline", "fulll", "--quiet", "--out", a.to_str().expect("utf-8")]);
    assert!(err.contains("--baseline fulll") && err.contains("decorrelated"), "{err}");
}

#[test]
fn sweep_is_byte_identical_for_one_and_two_threads_and_has_one_row_per_cell_variant_metric() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let (a, b) = (tmp.path().join("t1"), tmp.path().join("t2"));
    sweep(&a, &["--threads", "1"]);
    sweep(&b, &["--threads", "2"]);
    same_files(&a, &b, &["sweep.json", "sweep.csv"]);

    let doc: Value = serde_json::from_slice(&read(&a, "sweep.json")).expect("sweep.json is JSON");
    assert_eq!(doc["sweep"]["cells"], 6);
    assert_eq!(doc["shard"], Value::Null);
    let rows = doc["rows"].as_array().expect("rows");
    let metrics = rows.iter().filter(|r| r["cell"] == 0 && r["variant"] == "full").count();
    assert!(metrics > 10, "{metrics} metrics per variant");
    assert_eq!(rows.len(), 6 * 2 * metrics);
    // The first --vary changes slowest: cell 3 is clients = 400 (second value), base = 100ms.
    let cell3 = rows.iter().find(|r| r["cell"] == 3).expect("cell 3");
    assert_eq!(cell3["params"]["tenant.main.clients"], 400);
    assert_eq!(cell3["params"]["policy.client.base"], "100ms");
    let requests = rows.iter().find(|r| r["cell"] == 3 && r["metric"] == "requests").expect("requests row");
    assert_eq!(requests["mean"], 400.0, "the cell's override reached the simulation");
    let equal =
        rows.iter().find(|r| r["cell"] == 3 && r["variant"] == "equal" && r["metric"] == "attempts").expect("row");
    assert_eq!(equal["diff"]["baseline"], "full");
    assert_eq!(equal["diff"]["n"], 3);
    let csv = String::from_utf8(read(&a, "sweep.csv")).expect("utf-8");
    assert_eq!(csv.lines().count(), 1 + rows.len());
    assert!(csv.starts_with("cell,tenant.main.clients,policy.client.base,variant,metric,mean,"), "{csv}");
}

#[test]
fn shards_merge_into_the_unsharded_sweep_byte_for_byte() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let whole = tmp.path().join("whole");
    sweep(&whole, &[]);
    let shards: Vec<_> = (1..=3).map(|k| tmp.path().join(format!("shard-{k}"))).collect();
    for (k, dir) in shards.iter().enumerate() {
        sweep(dir, &["--shard", &format!("{}/3", k + 1)]);
    }
    let shard2: Value = serde_json::from_slice(&read(&shards[1], "sweep.json")).expect("JSON");
    assert_eq!(shard2["shard"]["cells"], serde_json::json!([1, 4]));
    let merged = tmp.path().join("merged");
    let dirs: Vec<&str> = shards.iter().rev().map(|d| d.to_str().expect("utf-8")).collect();
    ok(&[&["merge"][..], &dirs, &["--out", merged.to_str().expect("utf-8")]].concat());
    same_files(&whole, &merged, &["sweep.json", "sweep.csv"]);

    // A grid smaller than the shard count: the last shard is empty and still merges.
    let small = ["--vary", "tenant.main.clients=200,400", "--jitter", "full", "--replications", "2", "--quiet"];
    let small_whole = tmp.path().join("small");
    ok(&[&["sweep", HERD][..], &small, &["--out", small_whole.to_str().expect("utf-8")]].concat());
    let mut small_dirs = Vec::new();
    for k in 1..=3 {
        let dir = tmp.path().join(format!("small-{k}"));
        let shard = format!("{k}/3");
        ok(&[&["sweep", HERD][..], &small, &["--shard", &shard, "--out", dir.to_str().expect("utf-8")]].concat());
        small_dirs.push(dir.to_str().expect("utf-8").to_string());
    }
    let small_merged = tmp.path().join("small-merged");
    let mut args = vec!["merge"];
    args.extend(small_dirs.iter().map(String::as_str));
    args.extend(["--out", small_merged.to_str().expect("utf-8")]);
    ok(&args);
    same_files(&small_whole, &small_merged, &["sweep.json", "sweep.csv"]);
}

#[test]
fn merge_refuses_missing_duplicate_and_foreign_shards() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = |name: &str| tmp.path().join(name).to_str().expect("utf-8").to_string();
    for k in 1..=2 {
        sweep(Path::new(&dir(&format!("s{k}"))), &["--shard", &format!("{k}/2")]);
    }
    sweep(Path::new(&dir("other-seed")), &["--shard", "2/2", "--seed", "7"]);
    let out = dir("merged");

    let err = refused(&["merge", &dir("s1"), "--out", &out]);
    assert!(err.contains("missing") && err.contains("2/2"), "{err}");
    let err = refused(&["merge", &dir("s1"), &dir("s2"), &dir("s2"), "--out", &out]);
    assert!(err.contains("in both"), "{err}");
    let err = refused(&["merge", &dir("s1"), &dir("other-seed"), "--out", &out]);
    assert!(err.contains("different sweeps") && err.contains("`seed`"), "{err}");
    let err = refused(&["merge", &dir("nowhere"), "--out", &out]);
    assert!(err.contains("sweep.json"), "{err}");
    assert!(!Path::new(&out).join("sweep.json").exists(), "a refused merge writes nothing");
}

#[test]
fn sweep_refuses_bad_grids_and_shards_with_exit_code_2() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let out = tmp.path().to_str().expect("utf-8");
    let err = refused(&["sweep", HERD, "--quiet", "--out", out]);
    assert!(err.contains("--vary"), "{err}");
    let err = refused(&["sweep", HERD, "--vary", "seed=1,2", "--out", out]);
    assert!(err.contains("--seed"), "{err}");
    let err = refused(&["sweep", HERD, "--vary", "tenant.main.clients=100", "--shard", "4/3", "--out", out]);
    assert!(err.contains("--shard"), "{err}");
    let err = refused(&["sweep", HERD, "--vary", "tenant.main.clients=100,-5", "--out", out]);
    assert!(err.contains("cell 1") && err.contains("clients"), "{err}");
}

/// Width of a 95% interval.
fn width(ci: Option<[f64; 2]>) -> f64 {
    let [lo, hi] = ci.expect("interval present");
    hi - lo
}

#[test]
fn common_random_numbers_make_paired_intervals_narrower_than_unpaired_ones_on_outage_herd() {
    // Jitter strategies: replication r of `full` and `equal` sees the same herd arrivals, so their
    // attempt counts are positively correlated and the paired interval is narrower. With 60
    // replications the interval widths estimate √(1 − ρ) closely (ρ ≈ 0.35 here).
    let mut scenario = scenario("outage-herd", &["replications=60"]);
    let variants = scenario.jitter_variants(&["full".into(), "equal".into()]).expect("variants");
    let study = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let attempts =
        &study.comparisons[0].metrics.iter().find(|(m, _)| *m == catalogued("attempts")).expect("compared").1;
    let (paired, unpaired) = (width(attempts.paired.ci95), width(attempts.unpaired_ci95));
    assert!(paired < unpaired, "full − equal attempts: paired CI width {paired} ≥ unpaired {unpaired}");

    // Capacity: with workers 1 vs 2 the storm is the same draw for draw (no timeouts, so the
    // queue never feeds back into retries): attempts do not differ in any replication, so the
    // paired interval is exactly [0, 0] while the unpaired one only sees two noisy samples.
    scenario.replications = 10;
    let two = parse_assignment("hop.api.workers=2").expect("valid");
    let (doubled, _) = scenario.variant_with("two_workers", &[two]).expect("valid variant");
    let variants = vec![Variant { name: "one_worker".into(), spec: scenario.base.clone() }, doubled];
    let study = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    let attempts =
        &study.comparisons[0].metrics.iter().find(|(m, _)| *m == catalogued("attempts")).expect("compared").1;
    assert_eq!(attempts.paired.ci95, Some([0.0, 0.0]));
    assert!(width(attempts.unpaired_ci95) > 10.0, "unpaired {:?}", attempts.unpaired_ci95);
    assert!(metric(&study.variants[1], "latency_s_mean").mean < metric(&study.variants[0], "latency_s_mean").mean);
}

/// Every `±` half-width in `text` that has decimals has at most two significant digits
/// (precision follows the CI; a wide interval keeps its whole integer part).
fn half_widths_follow_the_interval(text: &str) {
    for part in text.split('±').skip(1) {
        let half: String =
            part.trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',').collect();
        if !half.contains('.') {
            continue;
        }
        let digits = half.replace([',', '.'], "");
        let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
        assert!(significant <= 2, "half-width `{half}` shows {significant} significant digits in …{part:.40}");
    }
}

#[test]
fn report_and_sweep_tables_format_values_as_the_terminal_table_does() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("c");
    let d = dir.to_str().expect("utf-8");
    ok(&["compare", HERD, "--set", "tenant.main.clients=300", "--replications", "3", "--quiet", "--out", d]);
    let html = String::from_utf8(read(&dir, "report.html")).expect("utf-8");
    let summary: Value = serde_json::from_slice(&read(&dir, "summary.json")).expect("JSON");
    // The report's summary cell is the terminal table's text for the same statistic (the cell's
    // value and interval sit in spans that keep each whole when the cell wraps).
    let html = html.replace("<span class=\"nw\">", "").replace("</span>", "");
    for (v, metric) in [(2, "success_ratio"), (1, "peak_over_capacity"), (3, "amplification")] {
        let stat: retrystorm::metrics::stats::Stat =
            serde_json::from_value(summary["variants"][v]["metrics"][metric].clone()).expect("a stat");
        let text = retrystorm::report::values::value(catalogued(metric), Some(&stat));
        assert!(html.contains(&format!("<td class=\"num\">{text}</td>")), "{metric}: `{text}` not in the report");
    }
    let table = &html[html.find("id=\"summary\"").expect("summary")..html.find("</table>").expect("table end")];
    half_widths_follow_the_interval(table);
    assert!(!table.contains("±0.000"), "{table}");

    let out = retrystorm(&[
        "sweep",
        HERD,
        "--vary",
        "tenant.main.clients=200,400",
        "--jitter",
        "full,equal",
        "--replications",
        "3",
        "--out",
        tmp.path().join("s").to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    half_widths_follow_the_interval(&stdout);
    // Shares print as percentages with CIs in percentage points; an exact value says so.
    assert!(stdout.contains(" pp") && stdout.contains("(exact)"), "{stdout}");
}
