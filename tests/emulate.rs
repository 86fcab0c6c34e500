//! The emulator on real sockets: 127.0.0.1 only, each run a few hundred requests and a few
//! seconds of wall time (a hard `max_seconds` stops it whatever happens).

use retrystorm::emulate::{self, Options};
use retrystorm::metrics::catalogue::Metric;
use retrystorm::runner::{run_study, RunOptions, Study};
use retrystorm::scenario::Scenario;
use std::process::Command;

/// An outage-herd in small: 300 clients in the first second, full jitter (8 attempts), an outage of the
/// first 3 s, capacity 200 requests/s (2 workers at 10 ms). About 6 s of wall time.
const TINY_HERD: &str = r#"
name = "tiny-herd"
seed = 7
horizon = "10s"
bucket = "100ms"
replications = 20

[[tenant]]
name = "main"
clients = 300
arrival = { kind = "herd", start = "0s", spread = "1s", requests_per_client = 1 }
policy = "client"

[policy.client]
jitter = "full"
base = "100ms"
multiplier = 2.0
cap = "2s"
max_attempts = 8

[[hop]]
name = "api"
workers = 2
service = { dist = "constant", mean = "10ms" }

[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "3s"
"#;

fn values(study: &Study, metric: Metric) -> Vec<f64> {
    study.variants[0].metrics.get(metric).expect("catalogued").values.iter().flatten().copied().collect()
}

fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

#[test]
fn a_small_herd_on_loopback_agrees_with_the_simulation() {
    let scenario = Scenario::from_source("tiny-herd", TINY_HERD, &[]).unwrap_or_else(|e| panic!("{e}"));
    let variants = scenario.run_variants();
    let simulated = run_study(&scenario, &variants, &RunOptions { threads: Some(2), progress: false });
    // A loaded test machine may be late; the run records it rather than refusing.
    let options = Options { time_scale: 1.0, max_seconds: 30.0, max_requests: 1_000, allow_late: true };
    let spec = &variants[0].spec;
    let checked = emulate::preflight(spec, &options).unwrap_or_else(|e| panic!("{e}"));
    let (record, emulation) = emulate::run(spec, scenario.seed, &options, &checked).unwrap_or_else(|e| panic!("{e}"));
    assert!(emulation.emulated && emulation.connections > 0 && emulation.timer_samples > 0);
    assert!(record.truncated.is_none(), "the run stopped early: {:?}", record.truncated);
    let measured = retrystorm::runner::assemble(&scenario, &variants, &[record], 1, emulation.wall_s);
    let got = |m: Metric| measured.variants[0].metrics.mean(m).expect("measured");
    // Every request reached a terminal state and every attempt reached the server on the wire.
    assert_eq!(got(Metric::Requests), 300.0);
    for metric in [Metric::Amplification, Metric::SuccessRatio] {
        // One emulated run against 20 simulated ones: the measurement is one more draw from
        // the run-to-run distribution, so its tolerance is a prediction band, 4 sd · √(1 + 1/n)
        // (normal theory: a false failure about once in 16,000 runs), with the sd estimated
        // from the replications. Both metrics vary from run to run here (full jitter decides
        // which retries fall after the outage), so the band is not a point.
        let sims = values(&simulated, metric);
        let (mean, sd) = mean_sd(&sims);
        assert!(sd > 0.0, "{metric:?}: no spread among the replications");
        let tolerance = 4.0 * sd * (1.0 + 1.0 / sims.len() as f64).sqrt();
        let value = got(metric);
        assert!(
            (value - mean).abs() <= tolerance,
            "{metric:?}: measured {value}, simulated {mean} ± {tolerance} (sd {sd}); timers {} s off on average",
            emulation.timer_lateness_mean_s
        );
    }
}

#[test]
fn an_unsupported_feature_is_refused_by_name_with_exit_code_2_and_nothing_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .args(["emulate", "scenarios/chain-amplification.toml", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("a chain of 3 hops") && stderr.contains("not emulated"), "{stderr}");
    assert!(!out.exists(), "a refused run wrote {}", out.display());
    // A fault kind the emulator does not reproduce is named too.
    let scenario = dir.path().join("lost.toml");
    let text = TINY_HERD.replace("kind = \"outage\"", "kind = \"lost_reply\"\np = 0.5");
    std::fs::write(&scenario, text).expect("write scenario");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("emulate")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("binary runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`lost_reply` fault"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn an_emulated_run_is_marked_and_plot_renders_it_unchanged() {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = dir.path().join("tiny.toml");
    // Smaller still: 100 clients, a 1 s outage (about 3 s of wall time).
    let text = TINY_HERD.replace("clients = 300", "clients = 100").replace("to = \"3s\"", "to = \"1s\"");
    std::fs::write(&scenario, text).expect("write scenario");
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_retrystorm"))
        .arg("emulate")
        .arg(&scenario)
        .args(["--allow-late", "--max-seconds", "30", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("binary runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary")).expect("json");
    assert_eq!(summary["emulated"], serde_json::Value::Bool(true));
    assert_eq!(summary["replications"], 1);
    assert_eq!(summary["variants"][0]["metrics"]["requests"]["mean"], 100.0);
    let series = std::fs::read_to_string(out.join("timeseries.csv")).expect("timeseries");
    assert!(series.lines().count() > 10, "a series per bucket");
    let plot = Command::new(env!("CARGO_BIN_EXE_retrystorm")).arg("plot").arg(&out).output().expect("binary runs");
    assert!(plot.status.success(), "{}", String::from_utf8_lossy(&plot.stderr));
}
