//! Helpers shared by the integration tests: load a bundled scenario, run it, read metrics.
#![allow(dead_code)]

use retrystorm::metrics::catalogue::Metric;
use retrystorm::metrics::stats::Stat;
use retrystorm::runner::{run_study, RunOptions, Study, VariantResult};
use retrystorm::scenario::{parse_assignment, Override, Scenario};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Loads `scenarios/<name>.toml` with `sets` (PATH=VALUE) applied.
pub fn scenario(name: &str, sets: &[&str]) -> Scenario {
    let overrides: Vec<Override> = sets.iter().map(|s| parse_assignment(s).expect("valid --set")).collect();
    let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    Scenario::load(&path, &overrides).unwrap_or_else(|e| panic!("{e}"))
}

/// Every bundled scenario file (`scenarios/*.toml`), sorted.
pub fn bundled_scenarios() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut list: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios/ exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    list.sort();
    assert!(list.len() >= 3, "expected the bundled scenarios in {}", dir.display());
    list
}

/// Runs the scenario's `run` variants on `threads` threads.
pub fn study(name: &str, sets: &[&str]) -> Study {
    let s = scenario(name, sets);
    run_study(&s, &s.run_variants(), &RunOptions { threads: Some(2), progress: false })
}

/// The catalogued metric named `name` (tests name metrics as the output files do).
pub fn catalogued(name: &str) -> Metric {
    Metric::from_name(name).unwrap_or_else(|| panic!("`{name}` is not in the metric catalogue"))
}

/// The system-wide metric `metric` of variant `v`.
pub fn metric<'a>(v: &'a VariantResult, metric: &str) -> &'a Stat {
    v.metrics.get(catalogued(metric)).unwrap_or_else(|| panic!("no metric {metric}"))
}

/// The metric `metric` of hop `hop` of variant `v`.
pub fn hop_metric<'a>(v: &'a VariantResult, hop: &str, metric: &str) -> &'a Stat {
    let (_, row) = v.hops.iter().find(|(n, _)| n == hop).unwrap_or_else(|| panic!("no hop {hop}"));
    row.get(catalogued(metric)).unwrap_or_else(|| panic!("no hop metric {metric}"))
}

/// The metric `metric` of tenant `tenant` of variant `v`.
pub fn tenant_metric<'a>(v: &'a VariantResult, tenant: &str, metric: &str) -> &'a Stat {
    let (_, row) = v.tenants.iter().find(|(n, _)| n == tenant).unwrap_or_else(|| panic!("no tenant {tenant}"));
    row.get(catalogued(metric)).unwrap_or_else(|| panic!("no tenant metric {metric}"))
}

/// Per-replication values (all present).
pub fn values(stat: &Stat) -> Vec<f64> {
    stat.values.iter().map(|v| v.expect("metric present in every replication")).collect()
}

/// Two-sided Student-t confidence interval of the mean of `xs` at `level`.
pub fn t_interval(xs: &[f64], level: f64) -> (f64, f64) {
    let (mean, sd) = retrystorm::metrics::stats::mean_sd(xs);
    let half = retrystorm::metrics::stats::ci_half_width(sd, xs.len(), level);
    (mean - half, mean + half)
}

/// Kolmogorov–Smirnov statistic of `samples` against `cdf`.
pub fn ks_statistic(samples: &mut [f64], cdf: impl Fn(f64) -> f64) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len() as f64;
    samples.iter().enumerate().fold(0.0, |d, (i, &x)| {
        let f = cdf(x);
        d.max((f - i as f64 / n).abs()).max(((i + 1) as f64 / n - f).abs())
    })
}

/// Critical value of the one-sample KS statistic at significance `alpha` for `n` samples
/// (asymptotic Kolmogorov distribution: c(α) = √(−ln(α/2)/2), accurate for n in the thousands).
pub fn ks_critical(n: usize, alpha: f64) -> f64 {
    (-(alpha / 2.0).ln() / 2.0).sqrt() / (n as f64).sqrt()
}

// The command-line tests: a valid scenario to start from, running the binary, a scratch
// directory holding it, and the listing that shows nothing was written.

/// A valid scenario the argument tests start from.
pub const GOOD: &str = r#"name = "good"
horizon = "2s"
replications = 1

[[tenant]]
name = "main"
clients = 20
arrival = { kind = "herd", spread = "1s" }
policy = "client"

[policy.client]
jitter = "full"
max_attempts = 3

[[hop]]
name = "api"
service = { dist = "constant", mean = "1ms" }
"#;

/// Runs the binary with `args` in `dir`.
pub fn retrystorm(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrystorm")).current_dir(dir).args(args).output().expect("binary runs")
}

/// A temporary directory holding `good.toml` ([`GOOD`]).
pub fn workdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    std::fs::write(tmp.path().join("good.toml"), GOOD).expect("write");
    tmp
}

/// Every path under `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() && !path.is_symlink() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Erlang C: probability that an arrival waits in an M/M/c queue with offered load `a` erlangs.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    let mut term = 1.0;
    let mut sum = 1.0; // k = 0
    for k in 1..c {
        term *= a / f64::from(k);
        sum += term;
    }
    let last = term * a / f64::from(c) * f64::from(c) / (f64::from(c) - a);
    last / (sum + last)
}

/// One tenant of one client sending one request at each of `times_ms` (a timestamp trace written
/// to `dir/times.csv`), under `[policy.p]` with the TOML lines `policy`, to one hop `server` of
/// `workers` with service distribution `service` (inline TOML); `extra` is appended (faults,
/// more hops). The horizon is 2 s past the last request.
pub fn trace_probe(dir: &Path, times_ms: &[u64], policy: &str, workers: u32, service: &str, extra: &str) -> Scenario {
    let trace: String =
        std::iter::once("t".to_string()).chain(times_ms.iter().map(|t| t.to_string())).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.join("times.csv"), trace + "\n").expect("write trace");
    let horizon = times_ms.last().expect("arrivals") + 2_000;
    let text = format!(
        r#"name = "probe"
horizon = "{horizon}ms"
replications = 1

[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "trace", file = "times.csv", unit = "ms" }}
policy = "p"

[policy.p]
{policy}

[[hop]]
name = "server"
workers = {workers}
service = {service}
{extra}
"#
    );
    let file = dir.join("inline.toml");
    Scenario::from_source(file.to_str().expect("utf-8 path"), &text, &[]).unwrap_or_else(|e| panic!("{e}"))
}
