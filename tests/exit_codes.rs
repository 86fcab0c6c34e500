//! A result file that cannot be written once the inputs were accepted is a failure, not bad
//! input: every command that writes exits with code 1 (and says which file).

use std::path::Path;
use std::process::Command;

fn retrystorm(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).current_dir(dir).args(args).output().expect("runs")
}

/// Makes `dir/name` a non-empty directory, so writing the file `name` there fails.
fn block(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir.join(name).join("blocker")).unwrap();
}

fn assert_write_failure(out: std::process::Output, file: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(file), "the message names `{file}`: {stderr}");
}

#[test]
fn a_failed_result_write_exits_with_1_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mm1.toml");
    let small = ["--replications", "2", "--set", "horizon=\"2s\"", "--quiet"];
    for command in ["run", "compare"] {
        let out = dir.join(command);
        block(&out, "summary.csv");
        let mut args = vec![command, scenario, "--out", out.to_str().unwrap()];
        args.extend(small);
        assert_write_failure(retrystorm(dir, &args), "summary.csv");
    }
    // sweep: two shards (one for merge), each blocked at sweep.csv after a good first run.
    let (one, two) = (dir.join("shard1"), dir.join("shard2"));
    for (shard, out) in [("1/2", &one), ("2/2", &two)] {
        let mut args = vec!["sweep", scenario, "--vary", "hop.server.workers=1,2", "--shard", shard];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(small);
        let ok = retrystorm(dir, &args);
        assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    }
    let blocked = dir.join("sweep-blocked");
    block(&blocked, "sweep.csv");
    let mut args = vec!["sweep", scenario, "--vary", "hop.server.workers=1,2", "--out", blocked.to_str().unwrap()];
    args.extend(small);
    assert_write_failure(retrystorm(dir, &args), "sweep.csv");
    let merged = dir.join("merged");
    block(&merged, "sweep.csv");
    let args = ["merge", one.to_str().unwrap(), two.to_str().unwrap(), "--out", merged.to_str().unwrap()];
    assert_write_failure(retrystorm(dir, &args), "sweep.csv");
    // plot: a finished run whose report.html cannot be replaced.
    let run = dir.join("plotted");
    let mut args = vec!["run", scenario, "--out", run.to_str().unwrap()];
    args.extend(small);
    assert!(retrystorm(dir, &args).status.success());
    std::fs::remove_file(run.join("report.html")).unwrap();
    block(&run, "report.html");
    assert_write_failure(retrystorm(dir, &["plot", run.to_str().unwrap()]), "report.html");
    // Still 2: a directory that holds no run.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(retrystorm(dir, &["plot", empty.to_str().unwrap()]).status.code(), Some(2));
}
