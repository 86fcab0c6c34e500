//! The body of the `scenario` fuzz target, shared with the stable-Rust smoke run in
//! `tests/properties.rs` (which includes this file): any bytes → parse → validate → a bounded run.
//!
//! The property: nothing panics. Bad input must come back as one `ScenarioError` line; a valid
//! scenario must simulate (the engine asserts that time never goes backwards and that requests
//! are conserved, so a violation is a panic too).

use retrystorm::model::{sim, SimSpec};
use retrystorm::scenario::Scenario;

/// Events one run may process: a runaway input is truncated, which is a normal outcome.
pub const EVENTS_MAX: u64 = 20_000;
/// Clients per tenant: validation admits millions, but allocating them per input is too slow.
pub const CLIENTS_MAX: u32 = 100;
/// Time-series buckets per run, for the same reason.
pub const BUCKETS_MAX: u64 = 2_000;

/// Parses, validates and (when valid) runs `data` as a scenario file; panics on any bug.
pub fn check_scenario_bytes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let scenario = match Scenario::from_source("fuzz.toml", text, &[]) {
        Ok(scenario) => scenario,
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty() && !message.contains('\n'), "not a one-line message: {message:?}");
            return;
        }
    };
    for variant in scenario.run_variants() {
        let record = sim::run(&bounded(variant.spec), scenario.seed, 0);
        assert!(record.events <= EVENTS_MAX, "max_events ignored: {} events", record.events);
    }
}

/// `spec` with its sizes clamped so that one input runs in milliseconds. Each change keeps the
/// spec valid (fewer clients, fewer events, wider buckets), so the run still checks the engine.
pub fn bounded(mut spec: SimSpec) -> SimSpec {
    spec.max_events = spec.max_events.min(EVENTS_MAX);
    for tenant in &mut spec.tenants {
        tenant.clients = tenant.clients.min(CLIENTS_MAX);
    }
    if spec.drain_limit / spec.bucket > BUCKETS_MAX {
        spec.bucket = spec.drain_limit / BUCKETS_MAX + 1;
    }
    spec
}

/// A tiny scenario the run-directory targets start from.
const BASE_SCENARIO: &str = r#"name = "fuzzbase"
horizon = "2s"
bucket = "100ms"
replications = 2
[[tenant]]
name = "main"
clients = 30
arrival = { kind = "herd", spread = "1s" }
policy = "client"
[policy.client]
jitter = "full"
max_attempts = 3
[[hop]]
name = "api"
service = { dist = "constant", mean = "5ms" }
[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "1s"
"#;

/// The files of a run directory that `plot` reads back.
pub const RUN_FILES: [&str; 5] = ["summary.json", "scenario.json", "timeseries.csv", "delays.csv", "latency.csv"];

fn cli(args: &[&str]) -> Result<(), retrystorm::cli::CliError> {
    retrystorm::cli::main_with_args(std::iter::once("retrystorm").chain(args.iter().copied()).map(Into::into))
}

/// A work directory per process holding a finished run (`run`) and two sweep shards
/// (`s1`, `s2`), written once by the command line itself.
fn base_dir() -> &'static std::path::Path {
    static BASE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("retrystorm-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        let scenario = dir.join("base.toml");
        std::fs::write(&scenario, BASE_SCENARIO).expect("write");
        let s = scenario.to_str().expect("utf-8");
        let at = |name: &str| dir.join(name).to_str().expect("utf-8").to_string();
        cli(&["compare", s, "--quiet", "--jitter", "full,none", "--out", &at("run")]).expect("base run");
        for k in ["1", "2"] {
            let shard = format!("{k}/2");
            let out = at(&format!("s{k}"));
            let args = [
                "sweep",
                s,
                "--quiet",
                "--vary",
                "tenant.main.clients=10,20,30",
                "--jitter",
                "full",
                "--shard",
                &shard,
                "--out",
                &out,
            ];
            cli(&args).expect("base shard");
        }
        dir
    })
}

/// A fresh copy of `from` (files only) under a new name; returns its path.
fn copy_dir(from: &std::path::Path, tag: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let to = base_dir().join(format!("{tag}-{n}"));
    std::fs::create_dir_all(&to).expect("copy dir");
    for entry in std::fs::read_dir(from).expect("readable") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().expect("name"))).expect("copy");
        }
    }
    to
}

/// `plot` of a run directory whose file `RUN_FILES[data[0] % 5]` holds `data[1..]`: it re-renders
/// or refuses (Err), never panics or hangs.
pub fn check_plot_bytes(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else { return };
    let dir = copy_dir(&base_dir().join("run"), "plot");
    std::fs::write(dir.join(RUN_FILES[usize::from(which) % RUN_FILES.len()]), body).expect("write");
    let _ = cli(&["plot", dir.to_str().expect("utf-8"), "--quiet"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `merge` of two shards, the first one's `sweep.json` (even `data[0]`) or `sweep.csv` (odd)
/// replaced by `data[1..]`: merges or refuses, never panics or hangs, and never writes into a
/// shard.
pub fn check_merge_bytes(data: &[u8]) {
    let Some((&which, body)) = data.split_first() else { return };
    let s1 = copy_dir(&base_dir().join("s1"), "shard");
    let s2 = copy_dir(&base_dir().join("s2"), "shard");
    std::fs::write(s1.join(if which % 2 == 0 { "sweep.json" } else { "sweep.csv" }), body).expect("write");
    let out = s1.with_extension("merged");
    let path = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
    let before: Vec<_> = std::fs::read_dir(&s2).expect("s2").map(|e| e.expect("entry").file_name()).collect();
    let _ = cli(&["merge", &path(&s1), &path(&s2), "--out", &path(&out)]);
    let after: Vec<_> = std::fs::read_dir(&s2).expect("s2").map(|e| e.expect("entry").file_name()).collect();
    assert_eq!(before, after, "merge wrote into a shard directory");
    for d in [s1, s2, out] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// The bytes of `file` in the base run (`dir` = "run") or the first shard (`dir` = "s1"), the
/// seeds the stable stand-in mutates.
pub fn base_file(dir: &str, file: &str) -> Vec<u8> {
    std::fs::read(base_dir().join(dir).join(file)).expect("base file")
}
