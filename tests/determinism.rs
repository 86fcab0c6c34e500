//! Determinism contract: same scenario + seed ⇒ byte-identical summary.json and timeseries.csv,
//! across repeated runs and thread counts, for every bundled scenario — and golden outputs: those
//! files' digests are recorded in `tests/golden/digests.txt`, so a change that moves any bundled
//! scenario's numbers fails here until it is re-blessed on purpose (`RETRYSTORM_BLESS=1 cargo test
//! --release --test determinism`) and said in CHANGELOG.md.

mod common;

use std::path::Path;
use std::process::Command;

/// Replications per golden run: small, so the whole set runs in seconds.
const REPLICATIONS: &str = "3";
/// The files whose bytes are the scenario's answer (perf.json holds wall times and is excluded).
const GOLDEN_FILES: [&str; 3] = ["summary.json", "timeseries.csv", "summary.csv"];

/// Runs `scenario` from the crate's directory by its relative path: `summary.json` records the
/// command line (provenance), so an absolute path would tie the digests to one checkout.
fn run(scenario: &Path, out: &Path, threads: u32) {
    let relative = scenario.strip_prefix(env!("CARGO_MANIFEST_DIR")).expect("a bundled scenario");
    let status = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", relative.to_str().expect("utf-8 path"), "--quiet", "--replications", REPLICATIONS])
        .args(["--threads", &threads.to_string(), "--out", out.to_str().expect("utf-8 path")])
        .status()
        .expect("binary runs");
    assert!(status.success(), "{} failed", scenario.display());
}

/// FNV-1a, 64 bits: a stable digest that needs no dependency (collisions are not a concern for
/// spotting an unintended change).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

fn golden_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/digests.txt")
}

/// `scenario file digest` lines, sorted as the scenarios are.
fn digest_lines(outs: &[(String, std::path::PathBuf)]) -> String {
    let mut text = String::from(
        "# Golden digests (FNV-1a 64) of every bundled scenario's outputs at --replications 3, seed as written.\n\
         # Re-bless deliberately: RETRYSTORM_BLESS=1 cargo test --release --test determinism, and say why in CHANGELOG.md.\n",
    );
    for (stem, dir) in outs {
        for file in GOLDEN_FILES {
            let bytes = std::fs::read(dir.join(file)).expect("written");
            text.push_str(&format!("{stem} {file} {:016x}\n", fnv1a(&bytes)));
        }
    }
    text
}

#[test]
fn bundled_scenarios_are_byte_identical_across_runs_and_threads_and_match_their_golden_digests() {
    let scenarios = common::bundled_scenarios();
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut firsts = Vec::new();
    for scenario in &scenarios {
        let stem = scenario.file_stem().unwrap().to_string_lossy().into_owned();
        let outs: Vec<_> = [(1, "a"), (2, "b"), (2, "c")]
            .iter()
            .map(|(threads, tag)| {
                let out = tmp.path().join(format!("{stem}-{tag}"));
                run(scenario, &out, *threads);
                out
            })
            .collect();
        for file in GOLDEN_FILES {
            let first = std::fs::read(outs[0].join(file)).expect("written");
            for other in &outs[1..] {
                let bytes = std::fs::read(other.join(file)).expect("written");
                assert!(first == bytes, "{file} of {} differs between runs/thread counts", scenario.display());
            }
        }
        firsts.push((stem, outs[0].clone()));
    }
    for (stem, dir) in &firsts {
        capacity_is_one_figure_and_no_served_rate_exceeds_it(stem, dir);
    }
    let actual = digest_lines(&firsts);
    if std::env::var_os("RETRYSTORM_BLESS").is_some() {
        std::fs::create_dir_all(golden_path().parent().unwrap()).expect("tests/golden");
        std::fs::write(golden_path(), &actual).expect("write digests");
        return;
    }
    let expected =
        std::fs::read_to_string(golden_path()).expect("tests/golden/digests.txt exists (bless to create it)");
    let changed: Vec<String> = actual
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| !expected.lines().any(|e| e == *l))
        .map(|l| {
            let mut parts = l.split(' ');
            format!("{} {}", parts.next().unwrap_or(""), parts.next().unwrap_or(""))
        })
        .collect();
    let gone: Vec<&str> =
        expected.lines().filter(|l| !l.starts_with('#')).filter(|e| !actual.lines().any(|a| a == *e)).collect();
    assert!(
        changed.is_empty() && gone.is_empty(),
        "golden outputs changed without a bless: {changed:?} (recorded lines not produced: {gone:?}); \
         if the change is deliberate, run RETRYSTORM_BLESS=1 cargo test --release --test determinism and \
         say why in CHANGELOG.md"
    );
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("written")).expect("valid JSON")
}

/// Every hop's capacity in scenario.json (the report's hop table and the charts' capacity lines)
/// is summary.json's `capacity_per_s` (one definition), and no hop's served rate
/// (`throughput_per_s`, services completed over the hop's serving span) exceeds it by more than
/// counting noise: the completions in a span are a renewal count of sd ≈ cv·√N with N ≥
/// capacity × horizon services, so 4 sd with cv ≤ 1 (constant, exponential and the bundled
/// measured distributions) is a relative excess of 4 ÷ √(capacity × horizon).
fn capacity_is_one_figure_and_no_served_rate_exceeds_it(stem: &str, dir: &Path) {
    let summary = json(&dir.join("summary.json"));
    let setup = json(&dir.join("scenario.json"));
    let variants = summary["variants"].as_array().expect("variants");
    for (v, s) in variants.iter().zip(setup["variants"].as_array().expect("variants")) {
        let horizon = s["horizon_s"].as_f64().expect("horizon_s");
        for (hop, info) in v["hops"].as_array().expect("hops").iter().zip(s["hops"].as_array().expect("hops")) {
            let at = format!("{stem} · {} · hop {}", v["name"], info["name"]);
            let reported = info["capacity_per_s"].as_f64();
            // Each replication's value is the one figure (their mean may differ in the last
            // bit: a sum of equal values divided by their count).
            for metric in hop["metrics"]["capacity_per_s"]["values"].as_array().expect("values") {
                assert_eq!(reported, metric.as_f64(), "{at}: the report's capacity is not summary.json's");
            }
            let Some(cap) = reported else { continue };
            let tolerance = 4.0 / (cap * horizon).sqrt();
            for rate in hop["metrics"]["throughput_per_s"]["values"].as_array().expect("values").iter() {
                let rate = rate.as_f64().unwrap_or(0.0);
                assert!(rate <= cap * (1.0 + tolerance), "{at}: served {rate}/s on a capacity of {cap}/s");
            }
        }
    }
    if stem == "stability-gc-death-spiral" {
        // 10 workers at 8 ms × e^(4u): the most completions per second are with 3 busy,
        // 3 ÷ (8 ms × e^1.2) = 112.9/s (all 10 busy: 22.9/s; the bare service time: 1,250/s).
        let cap = setup["variants"][0]["hops"][0]["capacity_per_s"].as_f64().expect("bounded");
        assert!((cap - 3.0 / (0.008 * 1.2f64.exp())).abs() < 1e-9, "gc-death-spiral capacity {cap}");
    }
}
