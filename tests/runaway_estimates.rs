//! Runaway classes, one test each, every refusal pinned to its exact message: 7,000
//! variants, 20,000 tenants, a 99,856-cell sweep, 50M clients × 2 replications and 2M buckets on
//! 16 threads are refused before anything is allocated or written; and past 24 tenants the
//! charts draw 24 and say what they left out (`report::charts::cap`).
//!
//! Each refusal's wall time is printed (`--nocapture`), not asserted: speed goals live in
//! benchmarks. docs/TESTING.md, "Runaway scenarios", records the times measured.

mod common;

use common::{listing, retrystorm, workdir};
use std::path::Path;
use std::time::Instant;

/// `--max-memory 4GiB` makes each outcome independent of the machine's memory.
const LIMIT: &str = "4GiB";

/// The fixes every memory refusal ends with.
const FIX: &str = "use fewer clients, replications, variants, cells or tenants, a wider bucket, fewer --threads, or raise --max-memory";

/// Runs `args` in `dir`: exit code 2, exactly `expect` on stderr, nothing written. Prints the
/// wall time of the refusal.
fn refused_quickly(dir: &Path, what: &str, args: &[&str], expect: &str) {
    let before = listing(dir);
    let started = Instant::now();
    let output = retrystorm(dir, args);
    let took = started.elapsed();
    eprintln!("{what}: refused in {took:?}");
    let text = String::from_utf8_lossy(&output.stderr).trim_end().to_string();
    assert_eq!(output.status.code(), Some(2), "{what}: {text}");
    assert_eq!(text, expect, "{what}");
    assert_eq!(listing(dir), before, "{what}: files written");
}

/// One API hop and the `client` policy; tenants or variants are appended.
const HEAD: &str = "name = \"wide\"\nhorizon = \"2s\"\n[policy.client]\njitter = \"full\"\n[[hop]]\nname = \"api\"\nservice = { dist = \"constant\", mean = \"1ms\" }\n";

/// `run good.toml` into `out` under [`LIMIT`], with `extra` arguments.
fn good<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "good.toml", "--quiet", "--out", "out", "--max-memory", LIMIT];
    args.extend_from_slice(extra);
    args
}

fn tenants(n: usize) -> String {
    let mut text = HEAD.to_string();
    for i in 0..n {
        text.push_str(&format!(
            "[[tenant]]\nname = \"t{i}\"\nclients = 1\narrival = {{ kind = \"herd\" }}\npolicy = \"client\"\n"
        ));
    }
    text
}

/// Rule: 7,000 variants' mean series are 4.2 GiB, refused. (6,000 fit since replications are
/// aggregated as they finish: their series are no longer held until the end.)
#[test]
fn seven_thousand_variants_are_refused_by_the_estimate() {
    let tmp = workdir();
    let dir = tmp.path();
    let mut text = format!(
        "{HEAD}[[tenant]]\nname = \"main\"\nclients = 5\narrival = {{ kind = \"herd\" }}\npolicy = \"client\"\n"
    );
    for i in 0..7_000 {
        text.push_str(&format!(
            "[[variant]]\nname = \"v{i}\"\nset = {{ \"policy.client.max_attempts\" = {} }}\n",
            i % 5 + 1
        ));
    }
    std::fs::write(dir.join("variants.toml"), text).expect("write");
    refused_quickly(
        dir,
        "7,000 variants",
        &["run", "variants.toml", "--quiet", "--out", "out", "--max-memory", LIMIT],
        &format!("error: this run would need about 4.3 GiB of memory (mean series and timeseries.csv: 4.2 GiB; per-replication metrics of 1 replication: 38.9 MiB; the tallest chart: 37.4 MiB), more than the limit of 4.0 GiB; {FIX}"),
    );
}

/// Rule: more tenants than the 1,000 supported are refused while loading, before the estimate;
/// 1,000 tenants are within the limits, their estimate (424.9 MiB, mostly the mean series) is
/// what a small --max-memory refuses.
#[test]
fn twenty_thousand_tenants_are_refused_and_a_thousand_are_estimated() {
    let tmp = workdir();
    let dir = tmp.path();
    std::fs::write(dir.join("tenants.toml"), tenants(20_000)).expect("write");
    refused_quickly(
        dir,
        "20,000 tenants",
        &["run", "tenants.toml", "--quiet", "--out", "out", "--max-memory", LIMIT],
        "error: tenants.toml:8:1: `tenant`: 20000 are defined; at most 1000 are supported: merge some of them",
    );
    std::fs::write(dir.join("thousand.toml"), tenants(1_000)).expect("write");
    refused_quickly(
        dir,
        "1,000 tenants under 64 MiB",
        &["run", "thousand.toml", "--quiet", "--out", "out", "--max-memory", "64MiB"],
        &format!("error: this run would need about 424.9 MiB of memory (mean series and timeseries.csv: 305.6 MiB; time series of up to 1 run(s) in flight or waiting their turn: 91.8 MiB; the tallest chart: 13.2 MiB), more than the limit of 64.0 MiB; {FIX}"),
    );
}

/// Rule: a sweep's grid is estimated before its cells are loaded: 316 × 316 = 99,856 cells of 5
/// jitter variants. Their output rows, held and read back for the charts (about 6 KB per cell ×
/// variant × metric, measured), are 112.8 GiB; a shard draws no charts, so its estimate is only
/// the loaded cells (2.5 GiB) and a small limit refuses it on those.
#[test]
fn a_99856_cell_sweep_is_refused_by_the_estimate() {
    let tmp = workdir();
    let dir = tmp.path();
    let values: Vec<String> = (1..=316).map(|c| c.to_string()).collect();
    let vary_a = format!("tenant.main.clients={}", values.join(","));
    let vary_b = format!("policy.client.max_attempts={}", values.join(","));
    let sweep = ["sweep", "good.toml", "--quiet", "--vary", &vary_a, "--vary", &vary_b, "--max-memory"];
    refused_quickly(
        dir,
        "99,856-cell sweep",
        &[&sweep[..], &[LIMIT]].concat(),
        &format!("error: this run would need about 115.3 GiB of memory (sweep.json and sweep.csv, 19971200 rows, held and read back for the charts: 112.8 GiB; 99856 loaded cell(s) and their results: 2.5 GiB; the program itself: 12.0 MiB), more than the limit of 4.0 GiB; {FIX}"),
    );
    refused_quickly(
        dir,
        "one shard of a 99,856-cell sweep under 64 MiB",
        &[&sweep[..], &["64MiB", "--shard", "1/100"]].concat(),
        &format!("error: this run would need about 2.5 GiB of memory (99856 loaded cell(s) and their results: 2.5 GiB; the program itself: 12.0 MiB; the tallest chart: 10.4 MiB), more than the limit of 64.0 MiB; {FIX}"),
    );
}

/// Rule: two runs of 50M clients each are in flight at once on two threads: 37.3 GiB.
#[test]
fn fifty_million_clients_at_two_replications_are_refused_by_the_estimate() {
    let tmp = workdir();
    let dir = tmp.path();
    refused_quickly(
        dir,
        "50M clients × 2 replications",
        &good(&["--set", "tenant.main.clients=50000000", "--replications", "2", "--threads", "2"]),
        &format!("error: this run would need about 37.3 GiB of memory (clients and their retry state, 2 run(s) at a time: 37.3 GiB; the program itself: 12.0 MiB; the tallest chart: 4.7 MiB), more than the limit of 4.0 GiB; {FIX}"),
    );
}

/// Rule: 1 µs buckets over a 1 s horizon (a 2 s run with its drain) are 2M buckets, the most
/// allowed, 244 MiB of series per run. Replications are folded into their variant as they
/// finish, so 40 of them hold no more than the runs in flight or waiting their turn (2 on 2
/// threads: 1.1 GiB in all, refused under 1 GiB); 16 threads hold 16 such runs: 4.4 GiB.
#[test]
fn two_million_buckets_hold_only_the_runs_in_flight() {
    let tmp = workdir();
    let dir = tmp.path();
    let args = ["--set", "bucket=1us", "--set", "horizon=1s", "--replications", "40"];
    let under = |limit: &'static str, threads: &'static str| {
        let mut all = vec!["run", "good.toml", "--quiet", "--out", "out", "--max-memory", limit, "--threads", threads];
        all.extend_from_slice(&args);
        all
    };
    refused_quickly(
        dir,
        "2M buckets × 40 replications on 2 threads, under 1 GiB",
        &under("1GiB", "2"),
        &format!("error: this run would need about 1.1 GiB of memory (mean series and timeseries.csv: 610.4 MiB; time series of up to 2 run(s) in flight or waiting their turn: 488.3 MiB; the program itself: 12.0 MiB), more than the limit of 1.0 GiB; {FIX}"),
    );
    refused_quickly(
        dir,
        "2M buckets × 40 replications on 16 threads",
        &under(LIMIT, "16"),
        &format!("error: this run would need about 4.4 GiB of memory (time series of up to 16 run(s) in flight or waiting their turn: 3.8 GiB; mean series and timeseries.csv: 610.4 MiB; the program itself: 12.0 MiB), more than the limit of 4.0 GiB; {FIX}"),
    );
}

/// Rule: a trace replayed at a million times its volume (trace-growth's capture, 2,674 requests a
/// minute, at `volume_scale = 1e6`) offers 45M requests a second to a hop that serves thousands:
/// its backlog grows for the whole run. It was accepted and killed by the system at 24 GB; the
/// requests waiting beyond the entry hop's capacity are now in the estimate (5.8 TiB), refused.
#[test]
fn a_trace_replayed_at_a_million_times_its_volume_is_refused_by_its_backlog() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = workdir();
    let out = tmp.path().join("out");
    let args = [
        "run",
        "scenarios/trace-growth.toml",
        "--set",
        "tenant.orders.arrival.volume_scale=1e6",
        "--threads",
        "2",
        "--quiet",
        "--max-memory",
        LIMIT,
        "--out",
        out.to_str().unwrap(),
    ];
    let output = retrystorm(root, &args);
    let text = String::from_utf8_lossy(&output.stderr).trim_end().to_string();
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert_eq!(text, format!("error: this run would need about 5.8 TiB of memory (requests waiting in an overload's backlog, 2 run(s) at a time (arrivals beyond the entry hop's capacity: a lower rate or more workers): 5.8 TiB; the program itself: 12.0 MiB; the tallest chart: 8.7 MiB), more than the limit of 4.0 GiB; {FIX}"));
    assert!(!out.exists(), "nothing written");
}

/// Rule: past 24 tenants the tenant charts keep the 24 with the most requests (here t6…t29,
/// whose client counts are 7…30; the load chart draws the 4 busiest alone and sums the other 20)
/// and say, on the chart and in the report, what was left out; summary.json keeps every tenant.
#[test]
fn charts_of_many_tenants_are_capped_and_say_what_they_left_out() {
    let tmp = workdir();
    let dir = tmp.path();
    let mut text = String::from("name = \"wide\"\nseed = 1\nhorizon = \"2s\"\nbucket = \"1s\"\nreplications = 2\n\n[policy.p]\njitter = \"full\"\nbase = \"10ms\"\ncap = \"1s\"\nmax_attempts = 3\n\n[[hop]]\nname = \"api\"\nworkers = 4\nservice = { dist = \"constant\", mean = \"2ms\" }\n");
    for i in 0..30 {
        text.push_str(&format!(
            "\n[[tenant]]\nname = \"t{i}\"\nclients = {}\narrival = {{ kind = \"herd\", spread = \"1s\" }}\npolicy = \"p\"\n",
            i + 1
        ));
    }
    std::fs::write(dir.join("wide.toml"), text).expect("write");
    let output = retrystorm(dir, &["run", "wide.toml", "--quiet", "--out", "out"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let note = "Capped: 24 of 30 tenants drawn (those with the most requests); the other 6 are in summary.json and timeseries.csv";
    for chart in ["tenant_load.svg", "tenant_metrics.svg"] {
        let svg = std::fs::read_to_string(dir.join("out").join(chart)).expect("chart");
        assert!(svg.contains(note), "{chart} states the cap");
        // A tenant's name is a text line of its own (tenant_metrics) or in its panel's title.
        let named = |t: String| svg.lines().any(|l| l.trim() == t || l.contains(&format!("tenant {t} ·")));
        let drawn: Vec<usize> = (0..30).filter(|i| named(format!("t{i}"))).collect();
        if chart == "tenant_load.svg" {
            // Of the 24 kept, the load chart draws the 4 busiest alone and sums the other 20.
            assert_eq!(drawn, (26..30).collect::<Vec<_>>(), "{chart}: the 4 busiest of the 24 drawn alone");
            assert!(svg.contains("others (20 tenants summed)"), "{chart}: the other 20 kept are summed");
        } else {
            assert_eq!(drawn, (6..30).collect::<Vec<_>>(), "{chart}: the 24 tenants with the most requests");
        }
    }
    let html = std::fs::read_to_string(dir.join("out/report.html")).expect("report");
    assert!(html.contains(note), "the report says so too");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("out/summary.json")).expect("summary")).expect("JSON");
    let text = summary.to_string();
    assert!((0..30).all(|i| text.contains(&format!("\"t{i}\""))), "summary.json keeps every tenant");
}

/// The estimate of every bundled scenario against the peak resident memory its run measures
/// (`wait4`'s `ru_maxrss` of the child process, two threads both times): within 3× either way.
/// The estimate bounds the allocations it counts (plus the program itself) but not pending work
/// — calls, attempts and queued events —, so a scenario whose backlog grows peaks above it
/// (hedging at about 0.45, overload-shedding at 0.74). stability-lb-sinkholing, whose policy
/// allows 10,000 attempts, was the one exception (4.9×) while every replication's retry-delay
/// samples were held to the end; runs are now folded as they finish and it is at about 1.2×.
#[test]
fn estimates_are_within_three_times_the_measured_peak_of_every_bundled_scenario() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = env!("CARGO_MANIFEST_DIR");
    let bytes_of = |text: &str| -> f64 {
        let at = text.find("need about ").expect("an estimate") + "need about ".len();
        let mut words = text[at..].split_whitespace();
        let number: f64 = words.next().unwrap().parse().unwrap();
        let scale = match words.next().unwrap() {
            "B" => 1.0,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            other => panic!("unit {other}"),
        };
        number * scale
    };
    let mut report = Vec::new();
    for path in common::bundled_scenarios() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let file = path.to_str().unwrap();
        let out = tmp.path().join(&name);
        let base = ["run", file, "--quiet", "--threads", "2", "--out", out.to_str().unwrap()];
        let refused = retrystorm(Path::new(root), &[&base[..], &["--max-memory", "1"]].concat());
        let estimate = bytes_of(&String::from_utf8_lossy(&refused.stderr));
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_retrystorm"))
            .args(base)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("runs");
        let mut status = 0;
        // SAFETY: an all-zero rusage is a valid value, and wait4 writes it for our own child.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
        assert_eq!(pid, child.id() as libc::pid_t, "{name}: wait4");
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{name}: the run failed");
        let _ = child.try_wait();
        let peak = usage.ru_maxrss as f64 * 1024.0; // kilobytes on Linux
        let ratio = estimate / peak;
        report.push(format!(
            "{name}: estimate {:.1} MiB, peak {:.1} MiB, ratio {ratio:.2}",
            estimate / 1048576.0,
            peak / 1048576.0
        ));
        assert!((1.0 / 3.0..=3.0).contains(&ratio), "{}", report.last().unwrap());
    }
    eprintln!("{}", report.join("\n"));
}
