//! Hostile cases beyond the scenario corpus: output that stays where the user said
//! and is the run's alone, argument ranges, runaway scenarios refused up front, damaged run
//! directories that `plot` and `merge` refuse instead of panicking or hanging.
//!
//! Every refusal is pinned: exit code 2, one line, the exact message (with the temporary paths
//! replaced by `DIR`), and nothing written. How long a refusal takes is printed, never asserted
//! (speed goals live in benchmarks); a hang is what `scripts/replay-hostile.sh` catches, with a
//! timeout per command.

mod common;

use common::{listing, retrystorm, workdir, GOOD};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim_end().replace("\n", "\\n")
}

/// How long a refusal may take before it counts as a hang: generous (a refusal takes
/// milliseconds; the machine may be loaded), but finite, so that a FIFO read fails the test
/// instead of blocking it forever.
const HANG_S: u64 = 120;

/// Runs the binary with `args` in `dir` like [`retrystorm`], but kills it and fails when it has
/// not ended within [`HANG_S`] seconds.
fn retrystorm_within(dir: &Path, args: &[&str]) -> Output {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("read pipe");
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("stderr")));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed().as_secs() >= HANG_S {
            child.kill().expect("kill the hung binary");
            child.wait().expect("reap it");
            panic!("retrystorm {} hung: still running after {HANG_S} s", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    Output { status, stdout: stdout.join().expect("stdout"), stderr: stderr.join().expect("stderr") }
}

/// Runs `args` in `dir` (killed as hung after [`HANG_S`] s): exit code 2, exactly `expect` on
/// stderr (after `DIR` replaces the directory), nothing on stdout, and `dir` unchanged.
fn refused(dir: &Path, args: &[&str], expect: &str) {
    let before = listing(dir);
    let output = retrystorm_within(dir, args);
    let got = stderr(&output).replace(dir.to_str().expect("utf-8"), "DIR");
    assert_eq!(output.status.code(), Some(2), "retrystorm {}: {got}", args.join(" "));
    assert_eq!(got, expect, "retrystorm {}", args.join(" "));
    assert!(
        output.stdout.is_empty(),
        "retrystorm {}: stdout {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(listing(dir), before, "retrystorm {} wrote files", args.join(" "));
}

fn ok(dir: &Path, args: &[&str]) -> Output {
    let output = retrystorm(dir, args);
    assert!(output.status.success(), "retrystorm {}: {}", args.join(" "), stderr(&output));
    output
}

#[test]
fn a_scenario_name_never_leaves_the_output_directory() {
    let tmp = workdir();
    let dir = tmp.path();
    let rule = "the name is a label that also names the output directory output/NAME: use 1-64 letters, digits, `-`, `_` or `.`, starting with a letter or digit, e.g. name = \"outage-herd\" (choose where files go with --out)";
    for (name, problem) in [
        ("../../x", "`../../x` contains a path separator `/`"),
        ("/tmp/x", "`/tmp/x` contains a path separator `/`"),
        ("..", "`..` does not start with a letter or digit"),
        ("a\u{1b}b", "`a\\u{1b}b` contains a control character `\\u{1b}`"),
    ] {
        let set = format!("name={name}");
        let expect = format!("error: good.toml (--set name): `name`: {problem}; {rule}");
        refused(dir, &["run", "good.toml", "--quiet", "--set", &set], &expect);
    }
    // A valid name becomes output/NAME.
    ok(dir, &["run", "good.toml", "--quiet", "--set", "name=v1.2_ok-run"]);
    assert!(dir.join("output/v1.2_ok-run/summary.json").is_file());
}

#[test]
fn a_directory_holding_foreign_files_is_refused_unless_forced() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("mine")).expect("mkdir");
    std::fs::write(dir.join("mine/report.html"), b"my own report").expect("write");
    std::fs::write(dir.join("mine/summary.json"), b"{}").expect("write");
    refused(
        dir,
        &["run", "good.toml", "--quiet", "--out", "mine"],
        "error: output directory `mine` holds files retrystorm did not write (`report.html`, `summary.json`); choose an empty or new --out, or pass --force to write there anyway (files retrystorm did not write are left alone)",
    );
    std::fs::write(dir.join("mine/notes.txt"), b"keep me").expect("write");
    ok(dir, &["run", "good.toml", "--quiet", "--out", "mine", "--force"]);
    assert_eq!(std::fs::read(dir.join("mine/notes.txt")).expect("kept"), b"keep me");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("mine/manifest.json")).expect("manifest")).expect("JSON");
    let files: Vec<&str> = manifest["files"].as_array().expect("list").iter().filter_map(|f| f.as_str()).collect();
    assert!(files.contains(&"summary.json") && files.contains(&"report.html"), "{files:?}");
    assert!(!files.contains(&"notes.txt"), "the manifest claims a file we did not write: {files:?}");
    // notes.txt is still foreign: without --force the next run is refused.
    let again = retrystorm(dir, &["run", "good.toml", "--quiet", "--out", "mine"]);
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
}

#[test]
fn a_rerun_removes_the_previous_runs_files_it_does_not_write_and_nothing_else() {
    let tmp = workdir();
    let dir = tmp.path();
    // Two tenants draw the tenant charts; the rerun with one tenant does not.
    let two = GOOD.replace(
        "[policy.client]",
        "[[tenant]]\nname = \"other\"\nclients = 5\narrival = { kind = \"herd\" }\npolicy = \"client\"\n\n[policy.client]",
    );
    std::fs::write(dir.join("two.toml"), two).expect("write");
    ok(dir, &["run", "two.toml", "--quiet", "--out", "out"]);
    let first: Vec<PathBuf> = listing(&dir.join("out"));
    let tenant_charts: Vec<&PathBuf> =
        first.iter().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("tenant_"))).collect();
    assert!(!tenant_charts.is_empty(), "two tenants draw tenant charts: {first:?}");
    ok(dir, &["run", "good.toml", "--quiet", "--out", "out"]);
    for chart in tenant_charts {
        assert!(!chart.exists(), "{} from the previous run is still there", chart.display());
    }
    assert!(dir.join("out/summary.json").is_file());
}

/// Writes `s1` and `s2`, the two shards of a 2-cell sweep of `good.toml`.
fn two_shards(dir: &Path) {
    for k in 1..=2 {
        let (shard, out) = (format!("{k}/2"), format!("s{k}"));
        let vary = ["--vary", "tenant.main.clients=10,20", "--jitter", "full"];
        let args = [&["sweep", "good.toml", "--quiet"][..], &vary, &["--shard", &shard, "--out", &out]].concat();
        ok(dir, &args);
    }
}

#[test]
fn out_pointing_at_a_file_and_merge_into_its_input_are_refused() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::write(dir.join("file"), b"x").expect("write");
    refused(
        dir,
        &["run", "good.toml", "--quiet", "--out", "file"],
        "error: --out `file` is a file, not a directory; give a directory path",
    );
    two_shards(dir);
    refused(
        dir,
        &["merge", "s1", "s2", "--out", "s2"],
        "error: merge --out `s2` is one of the shard directories it reads (`s2`); give a separate output directory",
    );
    refused(
        dir,
        &["merge", "s1", "s2", "--out", "./s1/../s1"],
        "error: merge --out `./s1/../s1` is one of the shard directories it reads (`s1`); give a separate output directory",
    );
    let merged = ok(dir, &["merge", "s1", "s2", "--out", "merged"]);
    assert!(String::from_utf8_lossy(&merged.stdout).contains("merged 2 shard(s)"));
    assert!(dir.join("merged/manifest.json").is_file());
}

/// A write that fails part-way (here `perf.json` is a directory, so the rename onto it fails)
/// is exit code 1, names the failing file and the complete ones; the manifest lists them.
#[test]
fn an_io_failure_mid_write_exits_1_naming_the_complete_files() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("out/perf.json/blocker")).expect("mkdir");
    let output = retrystorm(dir, &["run", "good.toml", "--quiet", "--out", "out", "--force"]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.starts_with("error: cannot write `out/perf.json`: "), "{text}");
    assert!(
        text.ends_with("; 3 file(s) are complete (summary.json, summary.csv, timeseries.csv, listed in manifest.json), the others are missing or from the previous run"),
        "{text}"
    );
    let manifest = std::fs::read_to_string(dir.join("out/manifest.json")).expect("manifest written");
    assert!(manifest.contains("\"timeseries.csv\"") && !manifest.contains("perf.json"), "{manifest}");
}

#[test]
fn flag_values_out_of_range_are_refused_not_clamped() {
    let tmp = workdir();
    let dir = tmp.path();
    let cases: [(&[&str], &str); 6] = [
        (&["--seed", "-1"], "error: invalid value '-1' for '--seed <SEED>': is negative; give an integer from 0 to 9223372036854775807 (see --help)"),
        (&["--seed", "18446744073709551615"], "error: invalid value '18446744073709551615' for '--seed <SEED>': is beyond the range; give an integer from 0 to 9223372036854775807 (see --help)"),
        (&["--threads", "10000"], "error: --threads 10000: at most 1024; more threads than cores only cost memory (leave it out for one per core)"),
        (&["--threads", "-2"], "error: invalid value '-2' for '--threads <THREADS>': is negative; give a whole number (see --help)"),
        (&["--max-memory", "lots"], "error: invalid value 'lots' for '--max-memory <SIZE>': unknown unit `lots`; write e.g. 8GiB, 512MiB or a number of bytes (see --help)"),
        (&["--set", "policy.clinet.jitter=none"], "error: good.toml (--set policy.clinet.jitter): `policy.clinet.jitter`: no policy named `clinet` (there are: client); did you mean `client`?"),
    ];
    for (extra, expect) in cases {
        let mut args = vec!["run", "good.toml", "--quiet", "--out", "out"];
        args.extend_from_slice(extra);
        refused(dir, &args, expect);
    }
    // The largest seed is accepted as given.
    ok(dir, &["run", "good.toml", "--quiet", "--out", "out", "--seed", "9223372036854775807"]);
    let summary = std::fs::read_to_string(dir.join("out/summary.json")).expect("summary");
    assert!(summary.contains("\"seed\": 9223372036854775807"), "the seed was changed");
}

/// Each runaway scenario is refused from its estimate, in well under a second, before any
/// output exists (`--max-memory 4GiB` makes the outcome independent of the machine).
#[test]
fn runaway_scenarios_are_refused_up_front_with_the_estimate() {
    let tmp = workdir();
    let dir = tmp.path();
    let cases: [(&[&str], &str); 4] = [
        (
            &["--set", "tenant.main.clients=50000000", "--replications", "2", "--threads", "2"],
            "clients and their retry state, 2 run(s) at a time: 37.3 GiB",
        ),
        (
            &["--set", "bucket=1us", "--set", "horizon=1s", "--replications", "40", "--threads", "16"],
            "time series of up to 16 run(s) in flight or waiting their turn: 3.8 GiB",
        ),
        (
            &[
                "--set",
                "tenant.main.clients=11000000",
                "--set",
                "policy.client.budget={ kind = \"token_bucket\", scope = \"client\" }",
                "--threads",
                "1",
            ],
            // 400 bytes per client and 16 for its token bucket (no window: `BudgetKind::state_bytes`).
            "clients and their retry state, 1 run(s) at a time: 4.3 GiB",
        ),
        (
            &["--set", "tenant.main.clients=20000000", "--threads", "1"],
            "clients and their retry state, 1 run(s) at a time: 7.5 GiB",
        ),
    ];
    for (extra, part) in cases {
        let mut args = vec!["run", "good.toml", "--quiet", "--out", "out", "--max-memory", "4GiB"];
        args.extend_from_slice(extra);
        let started = Instant::now();
        let before = listing(dir);
        let output = retrystorm(dir, &args);
        let text = stderr(&output);
        eprintln!("{args:?} took {:?}", started.elapsed());
        assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.starts_with("error: this run would need about "), "{text}");
        assert!(text.contains(part), "{args:?}: expected `{part}` in {text}");
        assert!(text.contains("more than the limit of 4.0 GiB; use fewer clients"), "{text}");
        assert_eq!(listing(dir), before, "{args:?} wrote files");
    }
}

#[test]
fn a_huge_sweep_grid_is_refused_before_its_cells_are_loaded() {
    let tmp = workdir();
    let dir = tmp.path();
    let values: Vec<String> = (1..=316).map(|c| c.to_string()).collect();
    let vary_a = format!("tenant.main.clients={}", values.join(","));
    let vary_b = format!("policy.client.max_attempts={}", values.join(","));
    let started = Instant::now();
    let output = retrystorm(
        dir,
        &["sweep", "good.toml", "--quiet", "--vary", &vary_a, "--vary", &vary_b, "--max-memory", "64MiB"],
    );
    eprintln!("took {:?}", started.elapsed());
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("99856 loaded cell(s) and their results"), "{text}");
}

#[test]
fn special_and_huge_files_are_refused_before_reading() {
    let tmp = workdir();
    let dir = tmp.path();
    let started = Instant::now();
    refused(
        dir,
        &["validate", "/dev/zero"],
        "error: /dev/zero: cannot read the scenario file: it is not a regular file (a device, FIFO or socket); give a .toml file",
    );
    let big = std::fs::File::create(dir.join("big.toml")).expect("create");
    big.set_len(100 << 20).expect("sparse file");
    refused(
        dir,
        &["validate", "big.toml"],
        "error: big.toml: cannot read the scenario file: it is 104857600 bytes, more than the 16777216 a scenario may have",
    );
    eprintln!("took {:?}", started.elapsed());
}

/// Suggestions on absurdly long names and duplicate checks over many tenants stay fast.
#[test]
fn long_names_and_many_tenants_are_refused_quickly() {
    let tmp = workdir();
    let dir = tmp.path();
    let long = "c".repeat(300_000);
    std::fs::write(dir.join("long.toml"), GOOD.replace("policy = \"client\"", &format!("policy = \"{long}\"")))
        .expect("write");
    let started = Instant::now();
    let output = retrystorm(dir, &["validate", "long.toml"]);
    let shown = "c".repeat(60);
    assert_eq!(
        stderr(&output),
        format!("error: long.toml:9:10: `tenant.main.policy`: unknown policy `{shown}…`; allowed: client")
    );
    // 70,000 tenants: more than the 1,000 validation allows (far below the 65,536 the u16 index
    // holds), refused without O(n²) work.
    let mut text = String::from("name = \"many\"\nhorizon = \"1s\"\n[policy.client]\njitter = \"full\"\n[[hop]]\nname = \"api\"\nservice = { dist = \"constant\", mean = \"1ms\" }\n");
    for i in 0..70_000 {
        text.push_str(&format!(
            "[[tenant]]\nname = \"t{i}\"\nclients = 1\narrival = {{ kind = \"herd\" }}\npolicy = \"client\"\n"
        ));
    }
    std::fs::write(dir.join("many.toml"), &text).expect("write");
    let output = retrystorm(dir, &["validate", "many.toml"]);
    assert_eq!(
        stderr(&output),
        "error: many.toml:8:1: `tenant`: 70000 are defined; at most 1000 are supported: merge some of them"
    );
    eprintln!("took {:?}", started.elapsed());
}

#[test]
fn repeated_jitters_and_equal_vary_values_are_refused() {
    let tmp = workdir();
    let dir = tmp.path();
    refused(
        dir,
        &["compare", "good.toml", "--quiet", "--jitter", "full,none,full"],
        "error: --jitter full,none,full: `full` is given twice; list each strategy once",
    );
    refused(
        dir,
        &["sweep", "good.toml", "--quiet", "--vary", "policy.client.base=10ms,10000us"],
        "error: --vary policy.client.base: the values `10ms` and `10000us` are the same; list each value once",
    );
    refused(
        dir,
        &["sweep", "good.toml", "--quiet", "--vary", "tenant.main.clients=2,2.0"],
        "error: --vary tenant.main.clients: the values `2` and `2.0` are the same; list each value once",
    );
}

/// Legal but probably unintended scenarios are run with a warning naming what is wrong.
#[test]
fn pointless_scenarios_are_warned_about() {
    let tmp = workdir();
    let dir = tmp.path();
    let with_faults = format!(
        "{GOOD}\n[[fault]]\nhop = \"api\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"10s\"\n\n[[fault]]\nhop = \"api\"\nkind = \"slow\"\nfactor = 2.0\nfrom = \"1s\"\nto = \"2s\"\n\n[[fault]]\nhop = \"api\"\nkind = \"error_rate\"\np = 0.5\nfrom = \"30s\"\nto = \"40s\"\n"
    );
    std::fs::write(dir.join("faults.toml"), with_faults).expect("write");
    let output = ok(dir, &["validate", "faults.toml"]);
    // Warnings wrap at 100 columns: read them unwrapped.
    let text = String::from_utf8_lossy(&output.stdout).replace("\n  ", " ");
    for expected in [
        "warning: a `error_rate` fault on hop `api` starts at 30s, after the run ends (drain limit 4s): it has no effect",
        "warning: faults `outage` [0s, 10s) and `slow` [1s, 2s) overlap on hop `api`: both apply at once",
        "warning: nothing can succeed in this scenario (a hop fails for the whole run, or every request is invalid or poison)",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    let late = GOOD
        .replace("spread = \"1s\" }", "start = \"5s\" }")
        .replace("[policy.client]", "[policy.client]\ndeadline = \"50ms\"\nbase = \"100ms\"");
    std::fs::write(dir.join("late.toml"), late).expect("write");
    let output = ok(dir, &["validate", "late.toml", "--set", "tenant.main.invalid_fraction=1"]);
    let text = String::from_utf8_lossy(&output.stdout).replace("\n  ", " ");
    for expected in [
        "warning: tenant `main` starts sending at 5s, at or after the horizon (2s): it sends nothing",
        "warning: tenant `main` has invalid_fraction = 1: every request it sends is rejected",
        "warning: policy `client` has a deadline of 50ms but its first backoff is 100ms: no retry fits before the deadline",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    // A healthy scenario gets none of them.
    let output = ok(dir, &["validate", "good.toml"]);
    assert!(
        !String::from_utf8_lossy(&output.stdout).contains("warning"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// An explicit `effect = false` on the only hop is honoured: no executions are counted.
#[test]
fn an_explicit_effect_false_is_honoured() {
    let tmp = workdir();
    let dir = tmp.path();
    ok(dir, &["run", "good.toml", "--quiet", "--out", "with", "--set", "hop.api.effect=false"]);
    ok(dir, &["run", "good.toml", "--quiet", "--out", "default"]);
    let executions = |out: &str| -> f64 {
        let text = std::fs::read_to_string(dir.join(out).join("summary.csv")).expect("summary.csv");
        let line = text
            .lines()
            .find(|l| l.contains(",hop,api,executions,"))
            .unwrap_or_else(|| panic!("no hop executions row in {out}/summary.csv"));
        line.split(',').nth(4).expect("mean column").parse().expect("number")
    };
    assert_eq!(executions("default"), 20.0, "the last hop is the effect hop by default: 20 requests, 20 executions");
    assert_eq!(executions("with"), 0.0, "effect = false was overridden");
}

/// 20,000 tenants or 7,000 variants would draw charts gigabytes tall and hold gigabytes of
/// series: refused from the estimate in well under a second of work (loading included).
#[test]
fn thousands_of_tenants_or_variants_are_refused_by_the_estimate() {
    let tmp = workdir();
    let dir = tmp.path();
    let head = "name = \"wide\"\nhorizon = \"2s\"\n[policy.client]\njitter = \"full\"\n[[hop]]\nname = \"api\"\nservice = { dist = \"constant\", mean = \"1ms\" }\n";
    let mut tenants = head.to_string();
    for i in 0..20_000 {
        tenants.push_str(&format!(
            "[[tenant]]\nname = \"t{i}\"\nclients = 1\narrival = {{ kind = \"herd\" }}\npolicy = \"client\"\n"
        ));
    }
    let mut variants = format!(
        "{head}[[tenant]]\nname = \"main\"\nclients = 5\narrival = {{ kind = \"herd\" }}\npolicy = \"client\"\n"
    );
    for i in 0..7_000 {
        variants.push_str(&format!(
            "[[variant]]\nname = \"v{i}\"\nset = {{ \"policy.client.max_attempts\" = {} }}\n",
            i % 5 + 1
        ));
    }
    for (file, text, part) in [
        // 20,000 tenants are refused by the tenant limit before the estimate is made.
        ("tenants.toml", tenants, "`tenant`: 20000 are defined; at most 1000 are supported"),
        ("variants.toml", variants, "mean series and timeseries.csv: 4.2 GiB"),
    ] {
        std::fs::write(dir.join(file), text).expect("write");
        let started = Instant::now();
        let output = retrystorm(dir, &["run", file, "--quiet", "--out", "out", "--max-memory", "4GiB"]);
        let text = stderr(&output);
        eprintln!("{file} took {:?}", started.elapsed());
        assert_eq!(output.status.code(), Some(2), "{file}: {text}");
        assert!(text.starts_with("error: ") && text.contains(part), "{file}: {text}");
        assert!(!dir.join("out").exists(), "{file}: output written");
    }
}

/// `merge` reads only regular files, and refuses before reading anything when its shard files
/// are more than its memory limit allows: 32 bytes held per byte of `sweep.json` and
/// `sweep.csv` read (measured: 30, docs/TESTING.md "Runaway scenarios"). Before: a
/// `sweep.json` that is `/dev/zero` grew without bound, a FIFO blocked it forever, and a merge
/// of many large shards had no estimate.
#[test]
fn merge_reads_only_regular_files_and_refuses_shards_beyond_its_memory_limit() {
    let tmp = workdir();
    let dir = tmp.path();
    two_shards(dir);
    std::fs::create_dir(dir.join("zero")).expect("mkdir");
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero/sweep.json")).expect("symlink");
    std::fs::create_dir(dir.join("fifo")).expect("mkdir");
    let mkfifo = std::process::Command::new("mkfifo").arg(dir.join("fifo/sweep.json")).status().expect("mkfifo");
    assert!(mkfifo.success());
    std::fs::create_dir_all(dir.join("folder/sweep.json")).expect("mkdir");
    for (name, what) in [
        ("zero", "it is not a regular file (a device, FIFO or socket)"),
        ("fifo", "it is not a regular file (a device, FIFO or socket)"),
        ("folder", "it is a directory"),
    ] {
        let expect = format!("error: {name}/sweep.json: {what}; merge takes directories written by `retrystorm sweep`");
        refused(dir, &["merge", name, "--out", "m"], &expect);
    }
    // The shard's sweep.csv goes through the same check.
    std::fs::create_dir(dir.join("csv-fifo")).expect("mkdir");
    std::fs::copy(dir.join("s2/sweep.json"), dir.join("csv-fifo/sweep.json")).expect("copy");
    let mkfifo = std::process::Command::new("mkfifo").arg(dir.join("csv-fifo/sweep.csv")).status().expect("mkfifo");
    assert!(mkfifo.success());
    refused(
        dir,
        &["merge", "s1", "csv-fifo", "--out", "m"],
        "error: csv-fifo/sweep.csv: it is not a regular file (a device, FIFO or socket); merge takes directories written by `retrystorm sweep`",
    );
    let size = |shard: &str, file: &str| std::fs::metadata(dir.join(shard).join(file)).expect("written").len();
    let input = size("s1", "sweep.json") + size("s1", "sweep.csv") + size("s2", "sweep.json") + size("s2", "sweep.csv");
    let needed = 32 * input;
    let below = (needed - 1).to_string();
    // Bytes as the estimate prints them: binary units, one decimal.
    let show = |bytes: u64| {
        let exponent = (1..=3).rev().find(|&e| bytes >= 1 << (10 * e)).unwrap_or(0);
        let value = bytes as f64 / (1u64 << (10 * exponent)) as f64;
        match exponent {
            0 => format!("{bytes} B"),
            e => format!("{value:.1} {}", ["KiB", "MiB", "GiB"][e - 1]),
        }
    };
    let expect = format!(
        "error: merge would need about {} of memory (2 shard(s) holding {} of sweep.json and sweep.csv, held, merged and read back for the charts), more than the limit of {}; merge the shards of a smaller grid or raise --max-memory",
        show(needed),
        show(input),
        show(needed - 1)
    );
    refused(dir, &["merge", "s1", "s2", "--out", "m", "--max-memory", &below], &expect);
    ok(dir, &["merge", "s1", "s2", "--out", "m", "--max-memory", &needed.to_string()]);
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Rule: `plot` reads a run directory's files only if they are regular files of at most
/// `--max-memory` bytes (default half the machine's memory, the limit a run's output was
/// estimated against), and refuses anything else promptly with exit 2, naming the file and
/// what to give instead. Before: a `summary.json` that is a FIFO blocked `plot` forever, one
/// that links to `/dev/zero` grew its memory without bound.
#[test]
fn plot_reads_only_regular_files_within_its_limit() {
    let tmp = workdir();
    let dir = tmp.path();
    ok(dir, &["run", "good.toml", "--quiet", "--out", "run"]);
    // `name`: a copy of the run (none for "sweep-…": a sweep directory) whose `file` is `kind`.
    let damaged = |name: &str, file: &str, kind: &str| {
        let to = dir.join(name);
        std::fs::create_dir(&to).expect("mkdir");
        if !name.starts_with("sweep-") {
            for entry in std::fs::read_dir(dir.join("run")).expect("run dir") {
                let entry = entry.expect("entry");
                std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
            }
        }
        let path = to.join(file);
        let _ = std::fs::remove_file(&path);
        match kind {
            "fifo" => mkfifo(&path),
            "zero" => std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink"),
            _ => std::fs::create_dir(&path).expect("mkdir"),
        }
    };
    let hint = "`plot` needs a directory written by `retrystorm run`, `compare`, `sweep`, `merge`, `map` or `plan` (rerun it to get the files charts need)";
    let special = "it is not a regular file (a device, FIFO or socket)";
    let rewrite = "rerun the run to rewrite it";
    for (name, file, kind) in [
        ("fifo", "summary.json", "fifo"),
        ("zero", "summary.json", "zero"),
        ("folder", "summary.json", "folder"),
        ("csv-fifo", "timeseries.csv", "fifo"),
        ("manifest-fifo", "manifest.json", "fifo"),
        ("sweep-fifo", "sweep.json", "fifo"),
    ] {
        damaged(name, file, kind);
        let what = if kind == "folder" { "it is a directory" } else { special };
        // The manifest is read by the directory's claim, before the run's files.
        let expect = match file {
            "manifest.json" => format!("error: plot: cannot read `{name}/{file}`: {what}; {rewrite}"),
            _ => format!("error: plot: `{name}/{file}`: {what}; {hint}"),
        };
        refused(dir, &["plot", "--quiet", name], &expect);
    }
    // A file above --max-memory is refused by its size, before it is read.
    let size = std::fs::metadata(dir.join("run/summary.json")).expect("summary").len();
    let below = (size - 1).to_string();
    refused(
        dir,
        &["plot", "--quiet", "run", "--max-memory", &below],
        &format!("error: plot: `run/summary.json`: it is {size} bytes, more than the {below} a file that `plot` reads under --max-memory may have; raise --max-memory if the machine can hold it"),
    );
    // The run's own files are plotted under the default limit.
    ok(dir, &["plot", "--quiet", "run"]);
}

/// Rule: merging `plan --shard K/N` directories reads each `plan.json` only if it is a regular
/// file (a FIFO once blocked `merge` forever) and refuses a directory, a FIFO or a link to
/// `/dev/zero` promptly with exit 2, whichever shard it is in.
#[test]
fn plan_merge_reads_only_regular_plan_files() {
    let tmp = workdir();
    let dir = tmp.path();
    let plan =
        ["plan", "good.toml", "--quiet", "--vary", "tenant.main.clients=1..20", "--require", "success_ratio>=0.5"];
    ok(dir, &[&plan[..], &["--shard", "1/2", "--out", "p1"]].concat());
    for name in ["fifo", "zero", "folder"] {
        std::fs::create_dir(dir.join(name)).expect("mkdir");
    }
    mkfifo(&dir.join("fifo/plan.json"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero/plan.json")).expect("symlink");
    std::fs::create_dir(dir.join("folder/plan.json")).expect("mkdir");
    let hint = "merge takes directories written by `retrystorm plan --shard K/N`";
    let special = "it is not a regular file (a device, FIFO or socket)";
    for (name, what) in [("fifo", special), ("zero", special), ("folder", "it is a directory")] {
        let expect = format!("error: `{name}/plan.json`: {what}; {hint}");
        refused(dir, &["merge", "p1", name, "--out", "m"], &expect);
        // First: a plan.json that is not a regular file still makes it a plan merge.
        refused(dir, &["merge", name, "p1", "--out", "m"], &expect);
    }
}

/// Rule: the data files a scenario names (a trace, a latency histogram) are read only if they
/// are regular files, and anything else is refused promptly at the field that names it. Issue
/// 17: a trace that is a FIFO blocked `validate` forever; a histogram linked to `/dev/zero` was
/// read for 64 MiB of zeros before failing.
#[test]
fn a_scenarios_data_files_are_read_only_if_regular() {
    let tmp = workdir();
    let dir = tmp.path();
    mkfifo(&dir.join("trace.csv"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.csv")).expect("symlink");
    std::fs::create_dir(dir.join("folder.csv")).expect("mkdir");
    let good = std::fs::read_to_string(dir.join("good.toml")).expect("good.toml");
    let herd = "arrival = { kind = \"herd\", spread = \"1s\" }";
    let service = "service = { dist = \"constant\", mean = \"1ms\" }";
    assert!(good.contains(herd) && good.contains(service), "GOOD changed: {good}");
    let trace = good.replace(herd, "arrival = { kind = \"trace\", file = \"trace.csv\" }");
    std::fs::write(dir.join("trace.toml"), trace).expect("write");
    for name in ["zero", "folder"] {
        let file = format!("service = {{ dist = \"empirical\", file = \"{name}.csv\" }}");
        std::fs::write(dir.join(format!("{name}.toml")), good.replace(service, &file)).expect("write");
    }
    let special = "it is not a regular file (a device, FIFO or socket)";
    let tail = "paths are relative to the scenario file";
    for (toml, at, file, what) in [
        ("trace.toml", "8:36: `tenant.main.arrival.file`", "trace.csv", special),
        ("zero.toml", "17:40: `hop.api.service.file`", "zero.csv", special),
        ("folder.toml", "17:40: `hop.api.service.file`", "folder.csv", "it is a directory"),
    ] {
        let expect = format!("error: {toml}:{at}: cannot read `{file}`: {what}; {tail}");
        refused(dir, &["validate", toml], &expect);
    }
}

/// Input files nested 100,000 levels deep — a YAML retry config (flow brackets, flow mappings,
/// block indentation), a gRPC JSON config, a scenario's TOML — never reach a parser's recursion
/// (a stack overflow) nor its slow path: exit code 2, one line naming the file and the
/// nesting, nothing written.
#[test]
fn deeply_nested_input_files_are_refused() {
    let tmp = workdir();
    let dir = tmp.path();
    let n = 100_000;
    let block: String = (0..3000).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
    let files = [
        ("r4j-brackets.yaml", format!("resilience4j.retry: {}{}\n", "[".repeat(n), "]".repeat(n))),
        ("r4j-mappings.yaml", format!("resilience4j.retry: {}1{}\n", "{a: ".repeat(n), "}".repeat(n))),
        ("envoy-block.yaml", format!("name: deep\n{block}")),
        ("grpc.json", format!("{{\"methodConfig\": {}{}}}\n", "[".repeat(n), "]".repeat(n))),
    ];
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).expect("write");
    }
    std::fs::write(dir.join("deep.toml"), format!("x = {}{}\n{GOOD}", "[".repeat(n), "]".repeat(n))).expect("write");
    let before = listing(dir);
    let mut cases: Vec<(Vec<String>, &str)> = files
        .iter()
        .map(|(name, _)| {
            let args = [
                "validate",
                "good.toml",
                "--set",
                &format!("policy.client.import={name}"),
                "--set",
                "policy.client.select=x",
            ];
            let needle = if name.ends_with(".json") {
                "recursion limit exceeded"
            } else {
                "nested deeper than 64 levels at line"
            };
            (args.iter().map(|s| s.to_string()).collect(), needle)
        })
        .collect();
    cases.push((vec!["validate".into(), "deep.toml".into()], "max recursion depth met"));
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = retrystorm_within(dir, &args);
        let got = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {got}");
        assert!(got.contains(needle) && !got.contains("\\n") && !got.contains("panicked"), "{args:?}: {got}");
        let file = args.iter().find_map(|a| a.strip_prefix("policy.client.import=")).unwrap_or("deep.toml");
        assert!(got.contains(file), "{args:?}: names {file}: {got}");
    }
    assert_eq!(listing(dir), before, "nothing written");
}

/// Round four: every range and count is bounded before use, by what the command can compute,
/// and the message names the flag, the value and the fix.
#[test]
fn ranges_and_counts_beyond_what_can_be_computed_are_refused() {
    let tmp = workdir();
    let dir = tmp.path();
    let plan = ["plan", "good.toml", "--quiet", "--vary", "hop.api.workers=1..4", "--require", "success_ratio >= 0.9"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&plan[..], extra, &["--out", "out"]].concat() };
    // A grid whose step count overflows (once a capacity-overflow panic), a width that
    // overflows (once a hang in the chart's axis after half the files were written).
    refused(
        dir,
        &with(&["--across", "policy.client.multiplier=1.0..1e300", "--across-step", "1e-300"]),
        "error: --across `policy.client.multiplier=1.0..1e300`: an end beyond ±1e15, where values lose whole-number precision and the grid cannot be computed; give a range within ±1e15",
    );
    refused(
        dir,
        &with(&["--across", "policy.client.multiplier=-1e308..1e308"]),
        "error: --across `policy.client.multiplier=-1e308..1e308`: an end beyond ±1e15, where values lose whole-number precision and the grid cannot be computed; give a range within ±1e15",
    );
    refused(
        dir,
        &with(&["--across", "policy.client.multiplier=1.0..1e15", "--across-step", "1e-300"]),
        "error: --across `policy.client.multiplier=1.0..1e15` at --across-step 1e-300: inf grid steps, more than the 9.007199254740992e15 the search can count; give a coarser --across-step (at least 1)",
    );
    refused(
        dir,
        &with(&["--across", "policy.client.multiplier=1.0..2.0", "--across-step", "1e-14"]),
        "error: --across `policy.client.multiplier=1.0..2.0` at --across-step 1e-14: a step below the 12 significant digits values are written with (neighbouring values would be equal); give --across-step at least 2e-11",
    );
    let rare = ["rare", "good.toml", "--quiet", "--out", "out"];
    let rare_with = |extra: &[&'static str]| -> Vec<&'static str> { [&rare[..], extra].concat() };
    // Near u64::MAX the levels' arithmetic wrapped and split at another event's levels.
    refused(
        dir,
        &rare_with(&["--target", "18446744073709551615"]),
        "error: --target 18446744073709551615: give a level from 2 to 1000000000000 (a backlog or a count of pending retries: no run holds more requests than memory)",
    );
    refused(
        dir,
        &rare_with(&["--target", "20", "--plain", "18446744073709551615"]),
        "error: --plain 18446744073709551615: give 1 to 1000000 plain runs (each runs to the time limit; splitting is what measures an event too rare for plain runs)",
    );
    // good.toml's runs end at its drain limit, 2 × its 2 s horizon.
    refused(
        dir,
        &rare_with(&["--target", "20", "--within", "10s"]),
        "error: --within 10s: beyond the end of the scenario's runs (4s, its drain_limit), so it could not be honoured; give at most --within 4s or lengthen the run (--set drain_limit=10s)",
    );
}

/// Round four: a flag two commands share is explained by the command given.
#[test]
fn a_bad_flag_value_is_explained_by_the_command_at_hand() {
    let tmp = workdir();
    let dir = tmp.path();
    refused(
        dir,
        &["rare", "good.toml", "--target", "30.5"],
        "error: invalid value '30.5' for '--target': is not a whole number; --target takes: The level of the progress function that counts as tipped, e.g. --target 200 (see --help)",
    );
    refused(
        dir,
        &["emulate", "good.toml", "--max-seconds", "x"],
        "error: invalid value 'x' for '--max-seconds': is not valid (invalid float literal); --max-seconds takes: Stop each run after this many wall seconds, whatever is still in flight (at most 3600) (see --help)",
    );
}

/// Round four: `plan` and its `merge` own their output directory as `run` does.
#[test]
fn plan_and_its_merge_own_their_output_directory() {
    let tmp = workdir();
    let dir = tmp.path();
    let plan = ["plan", "good.toml", "--quiet", "--vary", "hop.api.workers=1..3", "--require", "success_ratio >= 0.5"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { [&plan[..], extra].concat() };
    ok(dir, &with(&["--across", "policy.client.max_attempts=2..3", "--out", "p"]));
    assert!(dir.join("p/frontier.png").is_file() && dir.join("p/manifest.json").is_file());
    // A one-setting plan into the two-setting plan's directory leaves no frontier behind.
    ok(dir, &with(&["--out", "p"]));
    assert!(!dir.join("p/frontier.png").exists(), "the earlier plan's frontier.png is still there");
    assert!(dir.join("p/plan.png").is_file());
    std::fs::write(dir.join("p/notes.txt"), b"mine").expect("write");
    refused(
        dir,
        &with(&["--out", "p"]),
        "error: output directory `p` holds files retrystorm did not write (`notes.txt`); choose an empty or new --out, or pass --force to write there anyway (files retrystorm did not write are left alone)",
    );
    for k in 1..=2 {
        let (shard, out) = (format!("--shard={k}/2"), format!("--out=s{k}"));
        let args = [&plan[..], &["--jitter", "full,none"], &[shard.as_str(), out.as_str()]].concat();
        ok(dir, &args);
    }
    // Once this overwrote shard 1's plan.json.
    refused(
        dir,
        &["merge", "s1", "s2", "--out", "s1"],
        "error: merge --out `s1` is one of the shard directories it reads (`s1`); give a separate output directory",
    );
    refused(
        dir,
        &["merge", "s1", "s2", "--out", "p"],
        "error: output directory `p` holds files retrystorm did not write (`notes.txt`); choose an empty or new --out, or pass --force to write there anyway (files retrystorm did not write are left alone)",
    );
    ok(dir, &["merge", "s1", "s2", "--out", "m"]);
    assert!(dir.join("m/manifest.json").is_file());
}

/// Round four: an endpoint is validated before anything runs: a port beyond 65535 (once read as
/// port 80, "measuring" a dead endpoint) or 0, and two endpoints for one hop (once one was
/// silently dropped).
#[test]
fn target_endpoints_are_validated() {
    let tmp = workdir();
    let dir = tmp.path();
    let fix = "give HOP=http://127.0.0.1:PORT/PATH (a hop's name and a plain-HTTP URL)";
    for (url, port) in
        [("http://127.0.0.1:99999/", "99999"), ("http://127.0.0.1:0/", "0"), ("http://[::1]:70000/", "70000")]
    {
        let target = format!("api={url}");
        let expect = format!("error: --target {target}: port `{port}` is not a port (1 to 65535); {fix}");
        refused(dir, &["emulate", "good.toml", "--target", &target, "--out", "out"], &expect);
        refused(dir, &["compare", "good.toml", "--emulate", "--target", &target, "--out", "out"], &expect);
    }
    refused(
        dir,
        &["emulate", "good.toml", "--target", "api=http://127.0.0.1:9999/", "--target", "api=http://127.0.0.1:9998/"],
        "error: --target api=http://127.0.0.1:9998/: hop `api` already has a --target; give one endpoint per hop",
    );
}
