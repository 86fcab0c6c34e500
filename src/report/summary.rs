//! `summary.json`, `summary.csv`, `timeseries.csv` and `perf.json` in the output contract's shape.

use crate::engine::time::ns_to_secs;
use crate::metrics::catalogue::Metric;
use crate::metrics::objective::Objective;
use crate::report::format::{csv_bytes, exact_secs};
use crate::runner::compare::Difference;
use crate::runner::verdict::Verdict;
use crate::runner::{MeanSeries, StatRow, Study, REPLICA_COLUMNS, SERIES_COLUMNS};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The crate version written into every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The version of the `summary.json` format this build writes and reads (its shape, not the
/// crate's version). Bump it when a field changes meaning or shape.
pub const FORMAT_VERSION: u32 = 1;

/// `summary.json`: one typed definition that writes the file and reads it back (`plot`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant.
    pub replications: u32,
    /// The retrystorm version that wrote the file.
    pub version: String,
    /// [`FORMAT_VERSION`] of the file (absent in files written before it existed: version 1).
    #[serde(default = "first_format")]
    pub format_version: u32,
    /// Width of a time-series bucket, in seconds.
    pub bucket_s: f64,
    /// Per variant, in run order.
    pub variants: Vec<SummaryVariant>,
    /// Paired differences of each variant against the baseline.
    pub comparisons: Vec<SummaryComparison>,
    /// Invariant warnings.
    pub warnings: Vec<String>,
    /// What the verdict ranks by and requires (the scenario's `[objective]` or the default).
    #[serde(default)]
    pub objective: Objective,
    /// The variants ranked under the objective.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Command line, overrides, scenario file and its hash.
    #[serde(default)]
    pub provenance: crate::runner::Provenance,
    /// True when the numbers were measured on real sockets (`retrystorm emulate`); absent for a
    /// simulation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulated: bool,
    /// What the emulator measured about the machine; absent for a simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emulation: Option<crate::runner::Emulation>,
}

fn first_format() -> u32 {
    1
}

/// One variant's metrics in `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryVariant {
    /// Variant name.
    pub name: String,
    /// Whole-system metrics.
    pub metrics: StatRow,
    /// Per hop, in chain order.
    pub hops: Vec<Scoped>,
    /// Per tenant, in file order.
    pub tenants: Vec<Scoped>,
    /// Replications that stopped early, with the reason.
    pub truncated: Vec<String>,
    /// Per replica of the hops with more than one (`HOP[i]`), absent without such hops.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<Scoped>,
}

/// The metrics of one hop or tenant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scoped {
    /// Hop or tenant name.
    pub name: String,
    /// Its metrics.
    pub metrics: StatRow,
}

/// Paired differences vs the baseline: per variant and system metric, the mean, sd, Student-t
/// 95% CI, pair count and per-replication values of d_r = variant − baseline, plus the Welch
/// (unpaired) CI for reference (see `runner::compare`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryComparison {
    /// The variant.
    pub variant: String,
    /// The baseline it is compared with.
    pub baseline: String,
    /// Per system metric.
    #[serde(with = "crate::metrics::catalogue::as_map")]
    pub metrics: Vec<(Metric, SummaryDifference)>,
}

/// One metric's difference in `summary.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryDifference {
    /// Mean of the paired differences.
    pub mean: Option<f64>,
    /// Their sample sd.
    pub sd: Option<f64>,
    /// Their Student-t 95% CI.
    pub ci95: Option<[f64; 2]>,
    /// Pairs (replications where both sides have a value).
    pub n: usize,
    /// The per-replication differences.
    pub values: Vec<Option<f64>>,
    /// mean(variant) − mean(baseline).
    pub unpaired_mean: Option<f64>,
    /// Welch 95% CI of the same difference.
    pub unpaired_ci95: Option<[f64; 2]>,
}

impl SummaryDifference {
    fn of(d: &Difference) -> Self {
        let p = &d.paired;
        SummaryDifference {
            mean: p.mean,
            sd: p.sd,
            ci95: p.ci95,
            n: p.values.iter().flatten().count(),
            values: p.values.clone(),
            unpaired_mean: d.unpaired_mean,
            unpaired_ci95: d.unpaired_ci95,
        }
    }
}

impl Summary {
    /// The summary of a study.
    pub fn of(study: &Study) -> Summary {
        let scoped = |rows: &[(String, StatRow)]| -> Vec<Scoped> {
            rows.iter().map(|(name, metrics)| Scoped { name: name.clone(), metrics: metrics.clone() }).collect()
        };
        Summary {
            scenario: study.scenario.clone(),
            seed: study.seed,
            replications: study.replications,
            version: VERSION.to_string(),
            format_version: FORMAT_VERSION,
            bucket_s: ns_to_secs(study.bucket),
            variants: study
                .variants
                .iter()
                .map(|v| SummaryVariant {
                    name: v.name.clone(),
                    metrics: v.metrics.clone(),
                    hops: scoped(&v.hops),
                    tenants: scoped(&v.tenants),
                    truncated: v.truncated.clone(),
                    replicas: scoped(&v.replicas),
                })
                .collect(),
            comparisons: study
                .comparisons
                .iter()
                .map(|c| SummaryComparison {
                    variant: c.variant.clone(),
                    baseline: c.baseline.clone(),
                    metrics: c.metrics.iter().map(|(m, d)| (*m, SummaryDifference::of(d))).collect(),
                })
                .collect(),
            warnings: study.warnings.clone(),
            objective: study.objective.clone(),
            verdict: Some(super::verdict_text::for_study(study).0),
            provenance: study.provenance.clone(),
            emulated: study.emulation.is_some(),
            emulation: study.emulation.clone(),
        }
    }

    /// The file's bytes: pretty JSON (deterministic: fields in definition order, metrics in
    /// production order, shortest round-trip floats) and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self).expect("a summary serialises");
        text.push('\n');
        text.into_bytes()
    }

    /// Reads a summary, refusing a format version this build does not know.
    pub fn from_json(text: &str) -> Result<Summary, String> {
        let summary: Summary = serde_json::from_str(text).map_err(|e| format!("not a summary: {e}"))?;
        if summary.format_version != FORMAT_VERSION {
            return Err(format!(
                "format_version {} (this retrystorm reads {FORMAT_VERSION}); re-run the scenario with this version",
                summary.format_version
            ));
        }
        Ok(summary)
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `summary.csv`: one row per variant × scope × metric. Scopes `system`, `hop`, `tenant` and
/// `replica` (only with balanced hops) hold the metrics (`name`: the hop, tenant or `HOP[i]`); scope `paired_difference` holds variant − baseline
/// over common random numbers and `unpaired_difference` the Welch CI of the same difference
/// (`name`: the baseline; `sd` and `n` are empty for the unpaired rows).
pub fn summary_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "scope", "name", "metric", "mean", "sd", "ci95_low", "ci95_high", "n"])?;
        for v in &study.variants {
            let mut rows: Vec<(&str, &str, &StatRow)> = vec![("system", "", &v.metrics)];
            rows.extend(v.hops.iter().map(|(n, r)| ("hop", n.as_str(), r)));
            rows.extend(v.tenants.iter().map(|(n, r)| ("tenant", n.as_str(), r)));
            rows.extend(v.replicas.iter().map(|(n, r)| ("replica", n.as_str(), r)));
            for (scope, name, row) in rows {
                for (metric, s) in row {
                    let n = s.values.iter().flatten().count().to_string();
                    let (lo, hi) = (s.ci95.map(|c| c[0]), s.ci95.map(|c| c[1]));
                    w.write_record([
                        &v.name,
                        scope,
                        name,
                        metric.name(),
                        &num(s.mean),
                        &num(s.sd),
                        &num(lo),
                        &num(hi),
                        &n,
                    ])?;
                }
            }
        }
        for c in &study.comparisons {
            for (metric, d) in &c.metrics {
                let s = &d.paired;
                let n = s.values.iter().flatten().count().to_string();
                let (lo, hi) = (num(s.ci95.map(|c| c[0])), num(s.ci95.map(|c| c[1])));
                let mean = num(s.mean);
                w.write_record([
                    &c.variant,
                    "paired_difference",
                    &c.baseline,
                    metric.name(),
                    &mean,
                    &num(s.sd),
                    &lo,
                    &hi,
                    &n,
                ])?;
                let (lo, hi) = (num(d.unpaired_ci95.map(|c| c[0])), num(d.unpaired_ci95.map(|c| c[1])));
                let mean = num(d.unpaired_mean);
                w.write_record([
                    &c.variant,
                    "unpaired_difference",
                    &c.baseline,
                    metric.name(),
                    &mean,
                    "",
                    &lo,
                    &hi,
                    "",
                ])?;
            }
        }
        Ok(())
    })
}

/// Index past the last bucket with any activity in any variant (so files stay short).
pub fn active_buckets(study: &Study) -> usize {
    // The capacity level (`workers`) is never 0: it counts as activity only where it changes. A
    // budget's tokens are carried over idle buckets: they alone do not make a bucket active.
    let w = crate::runner::WORKERS_COLUMN;
    let tokens = SERIES_COLUMNS.iter().position(|&name| name == "budget_tokens");
    let active = |s: &MeanSeries, i: usize| {
        let r = &s.rows[i];
        r.iter().enumerate().any(|(c, &x)| x != 0.0 && c != w && Some(c) != tokens)
            || (i > 0 && r[w] != s.rows[i - 1][w])
    };
    let last = |s: &MeanSeries| (0..s.rows.len()).rposition(|i| active(s, i)).map_or(0, |i| i + 1);
    study.variants.iter().flat_map(|v| v.hop_series.iter().chain(&v.tenant_series)).map(last).max().unwrap_or(0)
}

/// `timeseries.csv`: mean over replications per bucket, per hop and tenant, per variant.
pub fn timeseries_csv(study: &Study) -> Vec<u8> {
    let buckets = active_buckets(study);
    csv_bytes(|w| {
        let mut header = vec!["variant", "scope", "name", "t_s"];
        header.extend(SERIES_COLUMNS);
        w.write_record(&header)?;
        for v in &study.variants {
            let scopes = v.hop_series.iter().map(|s| ("hop", s)).chain(v.tenant_series.iter().map(|s| ("tenant", s)));
            for (scope, series) in scopes {
                for (b, row) in series.rows.iter().take(buckets).enumerate() {
                    let mut record = vec![
                        v.name.clone(),
                        scope.to_string(),
                        series.name.clone(),
                        exact_secs(b as u64 * study.bucket),
                    ];
                    record.extend(row.iter().map(|x| x.to_string()));
                    w.write_record(&record)?;
                }
            }
        }
        Ok(())
    })
}

/// `replicas.csv`: mean over replications per bucket and replica of the balanced hops, per
/// variant (columns [`REPLICA_COLUMNS`]); `None` when no variant has a hop with replicas.
pub fn replicas_csv(study: &Study) -> Option<Vec<u8>> {
    if study.variants.iter().all(|v| v.replica_series.is_empty()) {
        return None;
    }
    let buckets = active_buckets(study);
    Some(csv_bytes(|w| {
        let mut header = vec!["variant", "replica", "t_s"];
        header.extend(REPLICA_COLUMNS);
        w.write_record(&header)?;
        for v in &study.variants {
            for series in &v.replica_series {
                for (b, row) in series.rows.iter().take(buckets).enumerate() {
                    let mut record = vec![v.name.clone(), series.name.clone(), exact_secs(b as u64 * study.bucket)];
                    record.extend(row.iter().map(|x| x.to_string()));
                    w.write_record(&record)?;
                }
            }
        }
        Ok(())
    }))
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `perf.json`: queued events, attempts, events per attempt, retries run ahead of the clock (no
/// event), wall time, events/s, threads, peak memory (not deterministic).
pub fn perf_json(study: &Study) -> Value {
    let per_s = if study.wall_s > 0.0 { study.events as f64 / study.wall_s } else { 0.0 };
    let per_attempt = if study.attempts > 0 { Some(study.events as f64 / study.attempts as f64) } else { None };
    json!({
        "scenario": study.scenario,
        "version": VERSION,
        "events": study.events,
        "attempts": study.attempts,
        "events_per_attempt": per_attempt,
        "retries_run_ahead": study.retries_run_ahead,
        "wall_s": study.wall_s,
        "events_per_s": per_s,
        "threads": study.threads,
        "replications": study.replications,
        "variants": study.variants.len(),
        "peak_memory_bytes": peak_memory_bytes(),
    })
}
