//! `summary.json`, `summary.csv`, `timeseries.csv` and `perf.json` in the output contract's shape.

use crate::metrics::stats::Stat;
use crate::runner::compare::Difference;
use crate::runner::{MeanSeries, StatRow, Study, SERIES_COLUMNS};
use serde_json::{json, Map, Value};

/// The crate version written into every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

fn stat_json(stat: &Stat) -> Value {
    json!({"mean": stat.mean, "sd": stat.sd, "ci95": stat.ci95, "values": stat.values})
}

fn metrics_json(row: &StatRow) -> Value {
    Value::Object(row.iter().map(|(metric, stat)| (metric.name().to_string(), stat_json(stat))).collect::<Map<_, _>>())
}

/// The summary as JSON (deterministic: ordered maps, shortest round-trip floats).
pub fn summary_json(study: &Study) -> Value {
    let variants: Vec<Value> = study
        .variants
        .iter()
        .map(|v| {
            let scoped = |rows: &Vec<(String, StatRow)>| -> Vec<Value> {
                rows.iter().map(|(name, row)| json!({"name": name, "metrics": metrics_json(row)})).collect()
            };
            json!({
                "name": v.name,
                "metrics": metrics_json(&v.metrics),
                "hops": scoped(&v.hops),
                "tenants": scoped(&v.tenants),
                "truncated": v.truncated,
            })
        })
        .collect();
    json!({
        "scenario": study.scenario,
        "seed": study.seed,
        "replications": study.replications,
        "version": VERSION,
        "bucket_s": study.bucket as f64 / 1e9,
        "variants": variants,
        "comparisons": comparisons_json(study),
        "objective": study.objective,
        "verdict": study.verdict(),
        "warnings": study.warnings,
    })
}

/// Paired differences vs the baseline: per variant and system metric, the mean, sd, Student-t
/// 95% CI, pair count and per-replication values of d_r = variant − baseline, plus the Welch
/// (unpaired) CI for reference (see `runner::compare`).
fn comparisons_json(study: &Study) -> Value {
    let diff = |d: &Difference| {
        let n = d.paired.values.iter().flatten().count();
        json!({"mean": d.paired.mean, "sd": d.paired.sd, "ci95": d.paired.ci95, "n": n,
               "values": d.paired.values, "unpaired_mean": d.unpaired_mean, "unpaired_ci95": d.unpaired_ci95})
    };
    let list: Vec<Value> = study
        .comparisons
        .iter()
        .map(|c| {
            let metrics: Map<String, Value> = c.metrics.iter().map(|(m, d)| (m.name().to_string(), diff(d))).collect();
            json!({"variant": c.variant, "baseline": c.baseline, "metrics": metrics})
        })
        .collect();
    Value::Array(list)
}

fn csv_bytes(write: impl FnOnce(&mut csv::Writer<Vec<u8>>) -> csv::Result<()>) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    write(&mut w).expect("writing CSV to memory cannot fail");
    w.into_inner().expect("flushing to memory cannot fail")
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `summary.csv`: one row per variant × scope × metric. Scopes `system`, `hop` and `tenant` hold
/// the metrics (`name`: the hop or tenant); scope `paired_difference` holds variant − baseline
/// over common random numbers and `unpaired_difference` the Welch CI of the same difference
/// (`name`: the baseline; `sd` and `n` are empty for the unpaired rows).
pub fn summary_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "scope", "name", "metric", "mean", "sd", "ci95_low", "ci95_high", "n"])?;
        for v in &study.variants {
            let mut rows: Vec<(&str, &str, &StatRow)> = vec![("system", "", &v.metrics)];
            rows.extend(v.hops.iter().map(|(n, r)| ("hop", n.as_str(), r)));
            rows.extend(v.tenants.iter().map(|(n, r)| ("tenant", n.as_str(), r)));
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
    let last = |s: &MeanSeries| s.rows.iter().rposition(|r| r.iter().any(|&x| x != 0.0)).map_or(0, |i| i + 1);
    study.variants.iter().flat_map(|v| v.hop_series.iter().chain(&v.tenant_series)).map(last).max().unwrap_or(0)
}

/// `timeseries.csv`: mean over replications per bucket, per hop and tenant, per variant.
pub fn timeseries_csv(study: &Study) -> Vec<u8> {
    let buckets = active_buckets(study);
    let bucket_s = study.bucket as f64 / 1e9;
    csv_bytes(|w| {
        let mut header = vec!["variant", "scope", "name", "t_s"];
        header.extend(SERIES_COLUMNS);
        w.write_record(&header)?;
        for v in &study.variants {
            let scopes = v.hop_series.iter().map(|s| ("hop", s)).chain(v.tenant_series.iter().map(|s| ("tenant", s)));
            for (scope, series) in scopes {
                for (b, row) in series.rows.iter().take(buckets).enumerate() {
                    let mut record =
                        vec![v.name.clone(), scope.to_string(), series.name.clone(), (b as f64 * bucket_s).to_string()];
                    record.extend(row.iter().map(|x| x.to_string()));
                    w.write_record(&record)?;
                }
            }
        }
        Ok(())
    })
}

/// Peak resident memory of this process in bytes (Linux `VmHWM`), if known.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `perf.json`: events, wall time, events/s, threads, peak memory (not deterministic).
pub fn perf_json(study: &Study) -> Value {
    let per_s = if study.wall_s > 0.0 { study.events as f64 / study.wall_s } else { 0.0 };
    json!({
        "scenario": study.scenario,
        "version": VERSION,
        "events": study.events,
        "wall_s": study.wall_s,
        "events_per_s": per_s,
        "threads": study.threads,
        "replications": study.replications,
        "variants": study.variants.len(),
        "peak_memory_bytes": peak_memory_bytes(),
    })
}
