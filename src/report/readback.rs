//! Rebuilds a run's [`ReportData`] (or a sweep's [`SweepData`]) from its output directory:
//! what `retrystorm plot DIR` needs.
//!
//! Reads `summary.json` (metrics, warnings), `timeseries.csv` (mean series), `scenario.json`
//! (configuration per variant), `delays.csv` and `latency.csv`. Floats are written with Rust's
//! shortest round-trip formatting, so the CSV values come back bit for bit.

use super::data::{DelayBin, ReportData, VariantData};
use super::data::{SweepAxis, SweepData};
use super::setup::VariantSetup;
use super::summary::{Scoped, Summary};
use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;
use crate::runner::{MeanSeries, ReplicaSeries, REPLICA_COLUMNS, SERIES_COLUMNS};
use crate::scenario::input_file::{self, Bounded, InputError, Limit};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A run directory that cannot be read back: the file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("`{path}`: {message}")]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

fn fail(path: &Path, message: impl Into<String>) -> ReadError {
    ReadError { path: path.to_path_buf(), message: message.into() }
}

/// The bound of every file `plot` reads: at most `max_bytes` (the command's memory limit).
fn limit(max_bytes: u64) -> Limit {
    Limit { bytes: max_bytes, holder: "a file that `plot` reads under --max-memory" }
}

/// Why `path` could not be opened, with the hint for a file that is missing or is not a run's.
fn unreadable(path: &Path, e: InputError) -> ReadError {
    let hint = if matches!(e, InputError::TooBig { .. }) {
        "; raise --max-memory if the machine can hold it"
    } else if e.is_wrong_file() {
        "; `plot` needs a directory written by `retrystorm run`, `compare`, `sweep`, `merge`, `map` or `plan` (rerun it to get the files charts need)"
    } else {
        ""
    };
    fail(path, format!("{e}{hint}"))
}

/// The text of `path` through [`input_file`]: a regular file of at most `max_bytes`.
fn read_text(path: &Path, max_bytes: u64) -> Result<String, ReadError> {
    input_file::read_text(path, limit(max_bytes)).map_err(|e| unreadable(path, e))
}

fn read_json(path: &Path, max_bytes: u64) -> Result<Value, ReadError> {
    serde_json::from_str(&read_text(path, max_bytes)?).map_err(|e| fail(path, format!("not valid JSON: {e}")))
}

/// The `map.json` or `plan.json` (`name`) in `dir` as its typed file, of at most `max_bytes`.
pub fn read_typed<T: serde::de::DeserializeOwned>(dir: &Path, name: &str, max_bytes: u64) -> Result<T, ReadError> {
    let path = dir.join(name);
    let value = read_json(&path, max_bytes)?;
    serde_json::from_value(value).map_err(|e| fail(&path, format!("not a {name} this version reads: {e}")))
}

/// The measured load chart (`load_measured.svg`) of a `compare --emulate` run, as the report
/// shows it; none when the file is missing (deleted after the run).
pub fn measured_chart(dir: &Path, max_bytes: u64) -> Result<Option<crate::report::charts::RenderedChart>, ReadError> {
    let path = dir.join("load_measured.svg");
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    Ok(Some(crate::report::charts::RenderedChart {
        stem: "load_measured".into(),
        caption: crate::report::charts::measured::CAPTION.into(),
        svg: read_text(&path, max_bytes)?,
        narrow_svg: None,
    }))
}

/// Reads the run in `dir`; each file may have at most `max_bytes`.
pub fn read_run(dir: &Path, max_bytes: u64) -> Result<ReportData, ReadError> {
    let (summary_path, summary) = read_summary(dir, max_bytes)?;
    let setups_path = dir.join("scenario.json");
    let setups = read_json(&setups_path, max_bytes)?;
    let setups: Vec<VariantSetup> = serde_json::from_value(setups["variants"].clone())
        .map_err(|e| fail(&setups_path, format!("unexpected shape: {e}")))?;
    let series = read_series(&dir.join("timeseries.csv"), max_bytes)?;
    let delays = read_delays(&dir.join("delays.csv"), max_bytes)?;
    let latency = read_latency(&dir.join("latency.csv"), max_bytes)?;
    let balanced = summary.variants.iter().any(|v| !v.replicas.is_empty());
    let replica_rows = if balanced { read_replicas(&dir.join("replicas.csv"), max_bytes)? } else { Vec::new() };
    if summary.variants.is_empty() {
        return Err(fail(&summary_path, "no variants"));
    }
    let mut variants = Vec::new();
    for v in summary.variants {
        let name = v.name;
        let setup = setups
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| fail(&setups_path, format!("no configuration for variant `{name}`")))?
            .setup
            .clone();
        let pick = |scope: &str, names: Vec<String>| -> Vec<MeanSeries> {
            names
                .into_iter()
                .map(|n| {
                    let rows = series.iter().find(|s| s.0 == name && s.1 == scope && s.2 == n).map(|s| s.3.clone());
                    MeanSeries { name: n, rows: rows.unwrap_or_default() }
                })
                .collect()
        };
        let hop_series = pick("hop", setup.hops.iter().map(|h| h.name.clone()).collect());
        let tenant_series = pick("tenant", setup.tenants.iter().map(|t| t.name.clone()).collect());
        let scoped = |rows: Vec<Scoped>| rows.into_iter().map(|s| (s.name, s.metrics)).collect();
        let replica_series = v
            .replicas
            .iter()
            .map(|r| ReplicaSeries {
                name: r.name.clone(),
                rows: replica_rows
                    .iter()
                    .find(|s| s.0 == name && s.1 == r.name)
                    .map(|s| s.2.clone())
                    .unwrap_or_default(),
            })
            .collect();
        variants.push(VariantData {
            replica_series,
            metrics: v.metrics,
            hops: scoped(v.hops),
            tenants: scoped(v.tenants),
            truncated: v.truncated,
            hop_series,
            tenant_series,
            delays: delays.iter().filter(|(n, _)| *n == name).map(|(_, b)| b.clone()).collect(),
            latency_us: latency.iter().filter(|(n, _, _)| *n == name).map(|&(_, us, c)| (us, c)).collect(),
            setup,
            name,
        });
    }
    Ok(ReportData {
        scenario: summary.scenario,
        seed: summary.seed,
        replications: summary.replications,
        version: summary.version,
        bucket_s: summary.bucket_s,
        warnings: summary.warnings,
        variants,
        objective: summary.objective,
        provenance: summary.provenance,
        emulation: summary.emulation,
    })
}

/// A run's `summary.json` (checked as `read_run` checks it) and its `timeseries.csv`, each of
/// at most `max_bytes`: what the Python package's `load` returns.
pub fn read_results(dir: &Path, max_bytes: u64) -> Result<(Summary, Vec<SeriesKey>), ReadError> {
    let (_, summary) = read_summary(dir, max_bytes)?;
    Ok((summary, read_series(&dir.join("timeseries.csv"), max_bytes)?))
}

/// `dir`'s `summary.json` (at most `max_bytes`), parsed and refused when it holds numbers a run
/// never writes ([`check_summary`]), with its path for later messages.
fn read_summary(dir: &Path, max_bytes: u64) -> Result<(std::path::PathBuf, Summary), ReadError> {
    let summary_path = dir.join("summary.json");
    let summary = Summary::from_json(&read_text(&summary_path, max_bytes)?).map_err(|e| fail(&summary_path, e))?;
    check_summary(&summary).map_err(|e| fail(&summary_path, e))?;
    Ok((summary_path, summary))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// Largest magnitude of a number a run writes: beyond it (1e308, u64::MAX) a file was edited or
/// damaged, and charts would compute infinities from it.
pub const PLAUSIBLE_MAX: f64 = 1e15;

/// Is `x` a number a run could have written (finite, |x| ≤ [`PLAUSIBLE_MAX`])?
fn plausible(x: f64) -> bool {
    x.is_finite() && x.abs() <= PLAUSIBLE_MAX
}

/// Refuses a summary holding numbers a run never writes (a bucket width outside (0, 1e9] s, a
/// statistic beyond [`PLAUSIBLE_MAX`]): charts would loop or compute infinities from them.
fn check_summary(summary: &Summary) -> Result<(), String> {
    if !(summary.bucket_s > 0.0 && summary.bucket_s <= 1e9) {
        return Err(format!("`bucket_s` is {}; expected a positive number of seconds", summary.bucket_s));
    }
    for v in &summary.variants {
        let scoped = v.hops.iter().chain(&v.tenants).map(|s| (s.name.as_str(), &s.metrics));
        for (scope, row) in std::iter::once(("", &v.metrics)).chain(scoped) {
            for (metric, stat) in &row.0 {
                check_stat(stat).map_err(|m| {
                    let at = if scope.is_empty() { String::new() } else { format!(" `{scope}`") };
                    format!("variant `{}`{at}, metric `{}`: {m}", v.name, metric.name())
                })?;
            }
        }
    }
    Ok(())
}

/// A statistic from its JSON fields (`mean`, `sd`, `ci95`, `values`; nulls stay None).
fn stat_of(s: &Value) -> Stat {
    let ci95 = s["ci95"].as_array().and_then(|c| Some([c.first()?.as_f64()?, c.get(1)?.as_f64()?]));
    let values: Vec<Option<f64>> =
        s["values"].as_array().map(|a| a.iter().map(Value::as_f64).collect()).unwrap_or_default();
    Stat { mean: s["mean"].as_f64(), sd: s["sd"].as_f64(), ci95, values }
}

/// Refuses a statistic holding a number beyond what a run writes.
fn check_stat(stat: &Stat) -> Result<(), String> {
    let all = stat.mean.iter().chain(&stat.sd).chain(stat.ci95.iter().flatten()).chain(stat.values.iter().flatten());
    if let Some(x) = all.copied().find(|x| !plausible(*x)) {
        return Err(format!(
            "holds {x:e}, beyond what a run writes (|x| ≤ {PLAUSIBLE_MAX:e}); the file was edited or damaged: rerun the run"
        ));
    }
    Ok(())
}

/// A CSV of the run streamed through [`input_file`]: a regular file of at most `max_bytes`.
fn csv_reader(path: &Path, max_bytes: u64) -> Result<csv::Reader<Bounded>, ReadError> {
    Ok(csv::Reader::from_reader(input_file::open(path, limit(max_bytes)).map_err(|e| unreadable(path, e))?))
}

fn csv_error(path: &Path, e: impl std::fmt::Display) -> ReadError {
    fail(path, format!("malformed CSV: {e}"))
}

fn field<T: std::str::FromStr>(path: &Path, record: &csv::StringRecord, i: usize) -> Result<T, ReadError> {
    let line = record.position().map_or(0, |p| p.line());
    let text = record.get(i).unwrap_or("");
    text.parse().map_err(|_| fail(path, format!("line {line}: column {} is `{text}`, expected a number", i + 1)))
}

/// A float field that a run writes as a finite value of at least `min` and at most
/// [`PLAUSIBLE_MAX`].
fn number_field(path: &Path, record: &csv::StringRecord, i: usize, min: f64) -> Result<f64, ReadError> {
    let x: f64 = field(path, record, i)?;
    if plausible(x) && x >= min {
        return Ok(x);
    }
    let line = record.position().map_or(0, |p| p.line());
    Err(fail(
        path,
        format!(
            "line {line}: column {} is `{}`, beyond what a run writes (a finite number from {min} to {PLAUSIBLE_MAX:e}); rerun the run",
            i + 1,
            record.get(i).unwrap_or("")
        ),
    ))
}

/// A count field: a whole number of at most [`PLAUSIBLE_MAX`].
fn count_field<T: TryFrom<u64>>(path: &Path, record: &csv::StringRecord, i: usize) -> Result<T, ReadError> {
    let x: u64 = field(path, record, i)?;
    let line = record.position().map_or(0, |p| p.line());
    let refuse =
        || fail(path, format!("line {line}: column {} is {x}, beyond what a run writes; rerun the run", i + 1));
    if x as f64 > PLAUSIBLE_MAX {
        return Err(refuse());
    }
    T::try_from(x).map_err(|_| refuse())
}

/// A series of `timeseries.csv`: variant, scope (`hop`, `tenant`), name, rows from t = 0.
pub type SeriesKey = (String, String, String, Vec<[f64; SERIES_COLUMNS.len()]>);

/// `timeseries.csv` → (variant, scope, name, rows) in file order.
fn read_series(path: &Path, max_bytes: u64) -> Result<Vec<SeriesKey>, ReadError> {
    let mut reader = csv_reader(path, max_bytes)?;
    let mut out: Vec<SeriesKey> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, e))?;
        let mut row = [0.0; SERIES_COLUMNS.len()];
        for (c, x) in row.iter_mut().enumerate() {
            *x = number_field(path, &record, 4 + c, 0.0)?;
        }
        let key = (&record[0], &record[1], &record[2]);
        match out.last_mut() {
            Some(last) if (last.0.as_str(), last.1.as_str(), last.2.as_str()) == key => last.3.push(row),
            _ => out.push((key.0.to_string(), key.1.to_string(), key.2.to_string(), vec![row])),
        }
    }
    Ok(out)
}

type ReplicaRows = (String, String, Vec<[f64; REPLICA_COLUMNS.len()]>);

/// `replicas.csv` → (variant, replica, rows) in file order.
fn read_replicas(path: &Path, max_bytes: u64) -> Result<Vec<ReplicaRows>, ReadError> {
    let mut reader = csv_reader(path, max_bytes)?;
    let mut out: Vec<ReplicaRows> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, e))?;
        let mut row = [0.0; REPLICA_COLUMNS.len()];
        for (c, x) in row.iter_mut().enumerate() {
            *x = number_field(path, &record, 3 + c, 0.0)?;
        }
        match out.last_mut() {
            Some(last) if (last.0.as_str(), last.1.as_str()) == (&record[0], &record[1]) => last.2.push(row),
            _ => out.push((record[0].to_string(), record[1].to_string(), vec![row])),
        }
    }
    Ok(out)
}

fn read_delays(path: &Path, max_bytes: u64) -> Result<Vec<(String, DelayBin)>, ReadError> {
    let mut reader = csv_reader(path, max_bytes)?;
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, e))?;
        let bin = DelayBin {
            retry: count_field(path, &record, 1)?,
            low_s: number_field(path, &record, 2, 0.0)?,
            high_s: number_field(path, &record, 3, 0.0)?,
            count: count_field(path, &record, 4)?,
        };
        out.push((record[0].to_string(), bin));
    }
    Ok(out)
}

fn read_latency(path: &Path, max_bytes: u64) -> Result<Vec<(String, u64, u64)>, ReadError> {
    let mut reader = csv_reader(path, max_bytes)?;
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(path, e))?;
        out.push((record[0].to_string(), count_field(path, &record, 1)?, count_field(path, &record, 2)?));
    }
    Ok(out)
}

/// Reads `sweep.json` in `dir` (a whole sweep, a merged one, or one shard's part), of at most
/// `max_bytes`.
pub fn read_sweep(dir: &Path, max_bytes: u64) -> Result<SweepData, ReadError> {
    let path = dir.join("sweep.json");
    let json = read_json(&path, max_bytes)?;
    sweep_from_json(&path, &json)
}

/// The sweep in `json` (the contents of `path`, for messages).
pub fn sweep_from_json(path: &Path, json: &Value) -> Result<SweepData, ReadError> {
    let path = path.to_path_buf();
    let bad = |what: &str| fail(&path, format!("missing or malformed `{what}`"));
    let header = &json["sweep"];
    let variants = strings(&header["variants"]);
    if variants.is_empty() {
        return Err(bad("sweep.variants"));
    }
    let axes = header["vary"]
        .as_array()
        .ok_or_else(|| bad("sweep.vary"))?
        .iter()
        .map(|a| {
            let values = a["values"].as_array().ok_or_else(|| bad("sweep.vary[].values"))?;
            // As typed: `10000`, `"100ms"`, `"full"` (no thousands separators, which would read as
            // list separators in `clients ∈ {1000, 3000}`).
            let labels: Vec<String> =
                values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), String::from)).collect();
            let numbers = values.iter().map(number_of).collect::<Option<Vec<f64>>>();
            let path = a["path"].as_str().ok_or_else(|| bad("sweep.vary[].path"))?.to_string();
            Ok(SweepAxis { path, labels, numbers })
        })
        .collect::<Result<Vec<_>, ReadError>>()?;
    let mut stats = std::collections::BTreeMap::new();
    for row in json["rows"].as_array().ok_or_else(|| bad("rows"))? {
        let cell = row["cell"].as_u64().ok_or_else(|| bad("rows[].cell"))? as usize;
        let name = row["variant"].as_str().ok_or_else(|| bad("rows[].variant"))?;
        let v = variants.iter().position(|n| n == name).ok_or_else(|| bad("rows[].variant"))?;
        let metric = row["metric"].as_str().and_then(Metric::from_name).ok_or_else(|| bad("rows[].metric"))?;
        let stat = stat_of(row);
        check_stat(&stat).map_err(|m| fail(&path, format!("row of cell {cell}, metric `{}`: {m}", metric.name())))?;
        stats.insert((cell, v, metric), stat);
    }
    Ok(SweepData {
        scenario: header["scenario"].as_str().ok_or_else(|| bad("sweep.scenario"))?.to_string(),
        seed: header["seed"].as_u64().ok_or_else(|| bad("sweep.seed"))?,
        replications: header["replications"].as_u64().ok_or_else(|| bad("sweep.replications"))? as u32,
        variants,
        axes,
        stats,
    })
}

/// A swept value's position: the number itself, or a duration (`"100ms"`) in seconds.
#[allow(clippy::wildcard_enum_match_arm, reason = "a JSON value, not a kind: only numbers and strings hold a number")]
fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            s.parse::<f64>().ok().or_else(|| humantime::parse_duration(s.trim()).ok().map(|d| d.as_secs_f64()))
        }
        _ => None,
    }
}
