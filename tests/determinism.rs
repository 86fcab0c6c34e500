//! Determinism contract: same scenario + seed ⇒ byte-identical summary.json and timeseries.csv,
//! across repeated runs and thread counts, for every bundled scenario.

mod common;

use std::path::Path;
use std::process::Command;

fn run(scenario: &Path, out: &Path, threads: u32) {
    let status = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["run", scenario.to_str().expect("utf-8 path"), "--quiet", "--replications", "3"])
        .args(["--threads", &threads.to_string(), "--out", out.to_str().expect("utf-8 path")])
        .status()
        .expect("binary runs");
    assert!(status.success(), "{} failed", scenario.display());
}

#[test]
fn bundled_scenarios_are_byte_identical_across_runs_and_threads() {
    let scenarios = common::bundled_scenarios();
    let tmp = tempfile::tempdir().expect("temp dir");
    for scenario in &scenarios {
        let outs: Vec<_> = [(1, "a"), (2, "b"), (2, "c")]
            .iter()
            .map(|(threads, tag)| {
                let out = tmp.path().join(format!("{}-{tag}", scenario.file_stem().unwrap().to_string_lossy()));
                run(scenario, &out, *threads);
                out
            })
            .collect();
        for file in ["summary.json", "timeseries.csv", "summary.csv"] {
            let first = std::fs::read(outs[0].join(file)).expect("written");
            for other in &outs[1..] {
                let bytes = std::fs::read(other.join(file)).expect("written");
                assert!(first == bytes, "{file} of {} differs between runs/thread counts", scenario.display());
            }
        }
    }
}
