//! Output files are written atomically (temporary file + rename): a failed or interrupted run
//! leaves the previous complete results, never a truncated file, and no temporary files behind a
//! finished run.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A scenario that runs in well under a second per replication.
const SCENARIO: &str = r#"name = "atomic"
horizon = "5s"
bucket = "100ms"
replications = 2

[[tenant]]
name = "main"
clients = 500
arrival = { kind = "herd", spread = "1s" }
policy = "client"

[policy.client]
jitter = "full"
base = "50ms"
cap = "2s"
max_attempts = 6

[[hop]]
name = "api"
workers = 2
service = { dist = "exponential", mean = "1ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "2s"
"#;

fn retrystorm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).current_dir(dir).args(args).output().expect("binary runs")
}

/// Name → bytes of every file in `dir`.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("output dir")
        .map(|e| {
            let path = e.expect("entry").path();
            (path.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&path).expect("readable"))
        })
        .collect()
}

fn workdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(tmp.path().join("atomic.toml"), SCENARIO).expect("write");
    tmp
}

fn run_ok(dir: &Path, extra: &[&str]) {
    let mut args = vec!["run", "atomic.toml", "--quiet", "--out", "out"];
    args.extend_from_slice(extra);
    let output = retrystorm(dir, &args);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// Temporary files (`.NAME.tmp-PID…`) in `files`.
fn temporaries(files: &BTreeMap<String, Vec<u8>>) -> Vec<&String> {
    files.keys().filter(|n| n.starts_with('.') || n.contains(".tmp")).collect()
}

#[test]
fn a_finished_run_leaves_complete_files_and_no_temporaries() {
    let tmp = workdir();
    run_ok(tmp.path(), &[]);
    let files = snapshot(&tmp.path().join("out"));
    for name in ["summary.json", "summary.csv", "timeseries.csv", "perf.json"] {
        assert!(files.contains_key(name), "{name} missing: {:?}", files.keys());
    }
    assert!(temporaries(&files).is_empty(), "left behind: {:?}", temporaries(&files));
    let summary: serde_json::Value = serde_json::from_slice(&files["summary.json"]).expect("complete JSON");
    assert_eq!(summary["scenario"], "atomic");
}

#[test]
fn a_run_refused_for_bad_input_leaves_the_previous_results_byte_for_byte() {
    let tmp = workdir();
    run_ok(tmp.path(), &[]);
    let before = snapshot(&tmp.path().join("out"));
    let refused = retrystorm(
        tmp.path(),
        &["run", "atomic.toml", "--quiet", "--out", "out", "--seed", "9", "--set", "policy.client.max_attempts=0"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert_eq!(snapshot(&tmp.path().join("out")), before, "a refused run touched the previous results");
}

#[test]
fn a_second_run_replaces_every_file_completely() {
    let tmp = workdir();
    run_ok(tmp.path(), &["--seed", "1"]);
    run_ok(tmp.path(), &["--seed", "2"]);
    let files = snapshot(&tmp.path().join("out"));
    assert!(temporaries(&files).is_empty(), "left behind: {:?}", temporaries(&files));
    let summary: serde_json::Value = serde_json::from_slice(&files["summary.json"]).expect("complete JSON");
    assert_eq!(summary["seed"], 2);
}

/// A killed run (SIGKILL, no chance to clean up) at various moments: every result file is either
/// the previous run's, byte for byte, or a complete new one. Temporary files may remain after a
/// SIGKILL, but never under a result's name.
#[test]
fn a_killed_run_never_leaves_a_truncated_result_file() {
    let tmp = workdir();
    run_ok(tmp.path(), &["--seed", "1"]);
    let old = snapshot(&tmp.path().join("out"));
    // The killed run takes about a second (40 000 clients × 20 replications), so the kills land
    // while it simulates, and the later ones possibly while it writes.
    for delay_ms in [0, 100, 300, 600, 900, 1200] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .current_dir(tmp.path())
            .args(["run", "atomic.toml", "--quiet", "--out", "out", "--seed", "2", "--replications", "20"])
            .args(["--set", "tenant.main.clients=40000", "--threads", "1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("binary starts");
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        child.wait().expect("reaped");
        let now = snapshot(&tmp.path().join("out"));
        for (name, bytes) in now.iter().filter(|(n, _)| !n.starts_with('.')) {
            if old.get(name) == Some(bytes) {
                continue;
            }
            // A new file must be complete: JSON parses, CSV rows all have the header's width,
            // SVG closes its root element, PNG ends with its IEND chunk.
            if name.ends_with(".svg") {
                let text = String::from_utf8_lossy(bytes);
                assert!(text.trim_end().ends_with("</svg>"), "{name} truncated after a kill at {delay_ms} ms");
            } else if name.ends_with(".png") {
                assert!(bytes.ends_with(&[0xAE, 0x42, 0x60, 0x82]), "{name} truncated after a kill at {delay_ms} ms");
            } else if name.ends_with(".json") {
                serde_json::from_slice::<serde_json::Value>(bytes)
                    .unwrap_or_else(|e| panic!("{name} truncated after a kill at {delay_ms} ms: {e}"));
            } else if name.ends_with(".csv") {
                let text = String::from_utf8(bytes.clone()).expect("UTF-8 CSV");
                assert!(text.ends_with('\n'), "{name} truncated after a kill at {delay_ms} ms");
                let mut reader = csv::Reader::from_reader(text.as_bytes());
                let width = reader.headers().expect("header").len();
                for row in reader.records() {
                    assert_eq!(row.expect("complete row").len(), width, "{name}: short row after a kill");
                }
            }
        }
    }
}
