//! `sweep.json` and `sweep.csv`: a sweep in long format, one row per cell × variant × metric
//! (system scope), and the reading side of `retrystorm merge`.
//!
//! # sweep.json
//! Standard JSON with a fixed layout: the header and the shard on one line each, one line per row.
//! ```text
//! {
//!   "sweep": {"format":"retrystorm-sweep/1","scenario":"outage-herd","seed":42,"replications":10,
//!             "version":"0.1.0","baseline":"none","variants":["none","exponential",…],
//!             "vary":[{"path":"tenant.main.clients","values":[1000,10000,100000]}],"cells":3},
//!   "shard": null,
//!   "rows": [
//!     {"cell":0,"params":{"tenant.main.clients":1000},"variant":"none","metric":"attempts",
//!      "mean":10000.0,"sd":0.0,"ci95":[10000.0,10000.0],"n":10,"values":[…],"diff":null},
//!     {"cell":0,…,"variant":"full",…,"diff":{"baseline":"none","mean":-812.0,"sd":30.1,
//!      "ci95":[-833.5,-790.5],"n":10,"unpaired_mean":-812.0,"unpaired_ci95":[-850.2,-773.8]}},
//!     …
//!   ]
//! }
//! ```
//! (the `sweep` line is shown wrapped here; in the file it is one line.)
//! - `sweep.vary`: the axes in `--vary` order; cell i's value indices are i written in mixed
//!   radix with the last axis fastest. `cells` is the size of the whole grid.
//! - `shard`: `null` for a whole sweep (and for merged output); in a shard's directory
//!   `{"index":K,"count":N,"cells":[…]}`, the global indices of the cells it holds.
//! - rows are ordered by cell, then variant (in `variants` order), then metric. `mean`, `sd` and
//!   `ci95` are `null` when every replication's value is null (e.g. no recovery); `values` are
//!   the per-replication values; `n` counts the non-null ones.
//! - `diff` is `null` for the baseline variant; otherwise the paired difference
//!   variant − baseline over common random numbers (mean, sd, Student-t 95% CI, pairs `n`) and,
//!   for reference, the difference of the means and its Welch CI treating the samples as
//!   independent (`unpaired_mean` differs from `mean` only when some values are null).
//!
//! # sweep.csv
//! Columns `cell`, one column per varied path (the value as typed), `variant`, `metric`, `mean`,
//! `sd`, `ci95_low`, `ci95_high`, `n`, `diff_mean`, `diff_sd`, `diff_ci95_low`, `diff_ci95_high`,
//! `diff_n`, `unpaired_mean`, `unpaired_ci95_low`, `unpaired_ci95_high`; empty fields are nulls.
//!
//! # Merging
//! [`merge`] reassembles shard files by cell index from their text (lines of `sweep.json`,
//! records of `sweep.csv`), never by re-formatting numbers, so the merged files are byte-identical
//! to the files of the unsharded sweep.

use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;
use crate::report::format::csv_bytes;
use crate::runner::compare::Difference;
use crate::runner::sweep::{CellResult, Grid, Shard, CELLS_MAX};
use crate::scenario::input_file;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Value of `sweep.format`; bump when the layout changes.
pub const FORMAT: &str = "retrystorm-sweep/1";

/// What identifies a sweep: every shard of one sweep has the same header.
#[derive(Clone, Debug)]
pub struct SweepHeader {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant and cell.
    pub replications: u32,
    /// Baseline variant of the differences.
    pub baseline: String,
    /// Variant names, in order.
    pub variants: Vec<String>,
    /// The grid.
    pub grid: Grid,
    /// The model's digest (`crate::scenario::model_digest`): shards of other models differ here.
    pub model: String,
}

impl SweepHeader {
    fn json(&self) -> Value {
        let vary: Vec<Value> = self
            .grid
            .axes
            .iter()
            .map(|a| json!({"path": a.path, "values": a.values.iter().map(toml_to_json).collect::<Vec<_>>()}))
            .collect();
        json!({
            "format": FORMAT,
            "scenario": self.scenario,
            "seed": self.seed,
            "model": self.model,
            "replications": self.replications,
            "version": super::summary::VERSION,
            "baseline": self.baseline,
            "variants": self.variants,
            "vary": vary,
            "cells": self.grid.cells(),
        })
    }
}

fn toml_to_json(value: &toml::Value) -> Value {
    serde_json::to_value(value).unwrap_or_else(|_| Value::String(value.to_string()))
}

/// A varied value as a CSV field: strings bare (`100ms`), others in TOML syntax.
#[allow(clippy::wildcard_enum_match_arm, reason = "a TOML value, not a kind: any other shape is shown as TOML")]
fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn stat_fields(stat: &Stat) -> serde_json::Map<String, Value> {
    let n = stat.values.iter().flatten().count();
    let mut m = serde_json::Map::new();
    m.insert("mean".into(), json!(stat.mean));
    m.insert("sd".into(), json!(stat.sd));
    m.insert("ci95".into(), json!(stat.ci95));
    m.insert("n".into(), json!(n));
    m
}

fn diff_json(baseline: &str, d: &Difference) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("baseline".into(), json!(baseline));
    m.extend(stat_fields(&d.paired));
    m.insert("unpaired_mean".into(), json!(d.unpaired_mean));
    m.insert("unpaired_ci95".into(), json!(d.unpaired_ci95));
    Value::Object(m)
}

/// One row of a cell: variant, metric, its stat and the difference vs the baseline.
struct Row<'a> {
    variant: &'a str,
    metric: Metric,
    stat: &'a Stat,
    diff: Option<(&'a str, &'a Difference)>,
}

fn cell_rows(cell: &CellResult) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for (variant, metrics) in &cell.variants {
        let comparison = cell.comparisons.iter().find(|c| &c.variant == variant);
        for (metric, stat) in metrics {
            let metric = *metric;
            let diff = comparison
                .and_then(|c| c.metrics.iter().find(|(m, _)| *m == metric).map(|(_, d)| (c.baseline.as_str(), d)));
            rows.push(Row { variant, metric, stat, diff });
        }
    }
    rows
}

/// The JSON lines of one cell's rows.
fn json_rows(header: &SweepHeader, cell: &CellResult) -> Vec<(usize, String)> {
    let params: serde_json::Map<String, Value> =
        header.grid.overrides(cell.index).iter().map(|o| (o.path.clone(), toml_to_json(&o.value))).collect();
    cell_rows(cell)
        .iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            m.insert("cell".into(), json!(cell.index));
            m.insert("params".into(), Value::Object(params.clone()));
            m.insert("variant".into(), json!(r.variant));
            m.insert("metric".into(), json!(r.metric.name()));
            m.extend(stat_fields(r.stat));
            m.insert("values".into(), json!(r.stat.values));
            m.insert("diff".into(), r.diff.map_or(Value::Null, |(b, d)| diff_json(b, d)));
            (cell.index, Value::Object(m).to_string())
        })
        .collect()
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

fn stat_csv(stat: &Stat) -> [String; 5] {
    let n = stat.values.iter().flatten().count();
    [num(stat.mean), num(stat.sd), num(stat.ci95.map(|c| c[0])), num(stat.ci95.map(|c| c[1])), n.to_string()]
}

fn csv_header(header: &SweepHeader) -> Vec<String> {
    let mut h = vec!["cell".to_string()];
    h.extend(header.grid.axes.iter().map(|a| a.path.clone()));
    h.extend(
        [
            "variant",
            "metric",
            "mean",
            "sd",
            "ci95_low",
            "ci95_high",
            "n",
            "diff_mean",
            "diff_sd",
            "diff_ci95_low",
            "diff_ci95_high",
            "diff_n",
            "unpaired_mean",
            "unpaired_ci95_low",
            "unpaired_ci95_high",
        ]
        .map(String::from),
    );
    h
}

fn csv_rows(header: &SweepHeader, cell: &CellResult) -> Vec<(usize, Vec<String>)> {
    let params: Vec<String> = header.grid.overrides(cell.index).iter().map(|o| label(&o.value)).collect();
    cell_rows(cell)
        .iter()
        .map(|r| {
            let mut record = vec![cell.index.to_string()];
            record.extend(params.iter().cloned());
            record.extend([r.variant.to_string(), r.metric.name().to_string()]);
            record.extend(stat_csv(r.stat));
            match r.diff {
                Some((_, d)) => {
                    record.extend(stat_csv(&d.paired));
                    let (lo, hi) = (d.unpaired_ci95.map(|c| c[0]), d.unpaired_ci95.map(|c| c[1]));
                    record.extend([num(d.unpaired_mean), num(lo), num(hi)]);
                }
                None => record.extend(std::iter::repeat_n(String::new(), 8)),
            }
            (cell.index, record)
        })
        .collect()
}

/// Lays out `sweep.json` from its header line, shard line and row lines.
fn assemble_json(header_line: &str, shard_line: &str, rows: &[&str]) -> Vec<u8> {
    let mut out = format!("{{\n  \"sweep\": {header_line},\n  \"shard\": {shard_line},\n  \"rows\": [\n");
    for (i, row) in rows.iter().enumerate() {
        out.push_str("    ");
        out.push_str(row);
        out.push_str(if i + 1 < rows.len() { ",\n" } else { "\n" });
    }
    out.push_str("  ]\n}\n");
    out.into_bytes()
}

fn assemble_csv<S: AsRef<[u8]>>(header: &[S], rows: &[&[S]]) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(header)?;
        for r in rows {
            w.write_record(r.iter())?;
        }
        Ok(())
    })
}

fn shard_line(shard: Option<Shard>, cells: &[CellResult]) -> String {
    match shard {
        None => "null".into(),
        Some(s) => {
            json!({"index": s.index, "count": s.count, "cells": cells.iter().map(|c| c.index).collect::<Vec<_>>()})
                .to_string()
        }
    }
}

/// `sweep.json` and `sweep.csv` of `cells` (ascending), for the whole grid or one shard.
pub fn sweep_files(header: &SweepHeader, shard: Option<Shard>, cells: &[CellResult]) -> (Vec<u8>, Vec<u8>) {
    let lines: Vec<String> = cells.iter().flat_map(|c| json_rows(header, c)).map(|(_, l)| l).collect();
    let json = assemble_json(
        &header.json().to_string(),
        &shard_line(shard, cells),
        &lines.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let records: Vec<Vec<String>> = cells.iter().flat_map(|c| csv_rows(header, c)).map(|(_, r)| r).collect();
    let csv = assemble_csv(&csv_header(header), &records.iter().map(Vec::as_slice).collect::<Vec<_>>());
    (json, csv)
}

/// Why shards cannot be merged (always bad input: exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MergeError(pub String);

/// One shard directory's files, as text pieces keyed by cell.
#[derive(Debug)]
pub struct ShardFiles {
    /// The directory.
    pub dir: PathBuf,
    header_line: String,
    header: Value,
    /// (index, count) of the shard; None for a whole sweep.
    shard: Option<(usize, usize)>,
    cells: Vec<usize>,
    json_rows: Vec<(usize, String)>,
    csv_header: csv::StringRecord,
    csv_rows: Vec<(usize, csv::StringRecord)>,
}

/// Bytes of the `sweep.json` and `sweep.csv` in shard directory `dir` that [`read_shard`] would
/// read (files that are missing or not regular count 0: it refuses them), for the memory estimate.
pub fn shard_bytes(dir: &Path) -> u64 {
    let size = |name: &str| std::fs::metadata(dir.join(name)).ok().filter(|m| m.is_file()).map_or(0, |m| m.len());
    size("sweep.json").saturating_add(size("sweep.csv"))
}

/// Reads `dir/sweep.json` and `dir/sweep.csv` written by `sweep` (with or without `--shard`),
/// each through [`input_file`] (a regular file: a FIFO would block `merge` forever, `/dev/zero`
/// never ends) of at most `max_bytes`.
pub fn read_shard(dir: &Path, max_bytes: u64) -> Result<ShardFiles, MergeError> {
    let limit = input_file::Limit { bytes: max_bytes, holder: "a shard's file (1/32 of --max-memory)" };
    let json_path = dir.join("sweep.json");
    let bad = |what: &str| {
        MergeError(format!("{}: {what}; merge takes directories written by `retrystorm sweep`", json_path.display()))
    };
    let text = input_file::read_text(&json_path, limit).map_err(|e| bad(&e.to_string()))?;
    let lines: Vec<&str> = text.lines().collect();
    let field = |i: usize, key: &str| {
        lines.get(i).and_then(|l| l.strip_prefix(&format!("  \"{key}\": "))).and_then(|l| l.strip_suffix(','))
    };
    let (Some(header_line), Some(shard_text)) = (field(1, "sweep"), field(2, "shard")) else {
        return Err(bad("not in the layout `sweep` writes"));
    };
    if lines.len() < 6
        || lines[3] != "  \"rows\": ["
        || lines[lines.len() - 2] != "  ]"
        || lines[lines.len() - 1] != "}"
    {
        return Err(bad("not in the layout `sweep` writes"));
    }
    let header: Value = serde_json::from_str(header_line).map_err(|e| bad(&format!("bad header ({e})")))?;
    if header.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(bad(&format!("not a `{FORMAT}` file")));
    }
    let cells_total = header.get("cells").and_then(Value::as_u64).ok_or_else(|| bad("no cell count"))?;
    // The grid a sweep can write: anything larger was edited, and would be enumerated below.
    let grid_cells = header.get("vary").and_then(Value::as_array).and_then(|axes| {
        axes.iter()
            .try_fold(1u64, |n, a| n.checked_mul(a.get("values").and_then(Value::as_array).map_or(0, Vec::len) as u64))
    });
    if cells_total == 0 || cells_total > CELLS_MAX as u64 || grid_cells != Some(cells_total) {
        return Err(bad(&format!(
            "the header's cell count {cells_total} is not the grid's ({}; at most {CELLS_MAX})",
            grid_cells.map_or("no `vary` list".to_string(), |g| g.to_string())
        )));
    }
    let cells_total = cells_total as usize;
    let shard_value: Value = serde_json::from_str(shard_text).map_err(|e| bad(&format!("bad shard line ({e})")))?;
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "a JSON value, not a kind: anything but null is read as a shard object"
    )]
    let (shard, cells) = match &shard_value {
        Value::Null => (None, (0..cells_total).collect()),
        v => {
            let get = |k: &str| v.get(k).and_then(Value::as_u64).map(|x| x as usize);
            let cells: Option<Vec<usize>> = v
                .get("cells")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|c| c.as_u64().map(|c| c as usize)).collect());
            match (get("index"), get("count"), cells) {
                (Some(k), Some(n), Some(c)) if 1 <= k && k <= n && n <= CELLS_MAX => (Some((k, n)), c),
                _ => return Err(bad("bad shard line")),
            }
        }
    };
    let mut json_rows = Vec::new();
    for line in &lines[4..lines.len() - 2] {
        let row_text = line.trim_start().trim_end_matches(',');
        let row: Value = serde_json::from_str(row_text).map_err(|e| bad(&format!("bad row ({e})")))?;
        let cell = row.get("cell").and_then(Value::as_u64).ok_or_else(|| bad("a row without `cell`"))? as usize;
        json_rows.push((cell, row_text.to_string()));
    }
    let csv_path = dir.join("sweep.csv");
    let bad_csv = |e: String| MergeError(format!("{}: {e}", csv_path.display()));
    let file = input_file::open(&csv_path, limit)
        .map_err(|e| bad_csv(format!("{e}; merge takes directories written by `retrystorm sweep`")))?;
    let mut reader = csv::Reader::from_reader(file);
    let csv_header = reader.headers().map_err(|e| bad_csv(e.to_string()))?.clone();
    let mut csv_rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad_csv(e.to_string()))?;
        let cell = record
            .get(0)
            .and_then(|c| c.parse::<usize>().ok())
            .ok_or_else(|| bad_csv("a row without a cell index".into()))?;
        csv_rows.push((cell, record));
    }
    let files = ShardFiles {
        dir: dir.to_path_buf(),
        header_line: header_line.to_string(),
        header,
        shard,
        cells,
        json_rows,
        csv_header,
        csv_rows,
    };
    files.check_rows_match_cells()?;
    Ok(files)
}

impl ShardFiles {
    fn name(&self) -> String {
        match self.shard {
            Some((k, n)) => format!("{} (shard {k}/{n})", self.dir.display()),
            None => format!("{} (whole sweep)", self.dir.display()),
        }
    }

    fn check_rows_match_cells(&self) -> Result<(), MergeError> {
        let listed: std::collections::BTreeSet<usize> = self.cells.iter().copied().collect();
        for (file, found) in [
            ("sweep.json", self.json_rows.iter().map(|r| r.0).collect::<std::collections::BTreeSet<_>>()),
            ("sweep.csv", self.csv_rows.iter().map(|r| r.0).collect()),
        ] {
            if found != listed {
                return Err(MergeError(format!(
                    "{}: {file} holds rows for cells {found:?} but the shard lists cells {listed:?}; the directory is damaged, re-run that shard",
                    self.name()
                )));
            }
        }
        Ok(())
    }
}

/// Joins shards into the `sweep.json` and `sweep.csv` the unsharded sweep writes.
///
/// Refuses shards of different sweeps (scenario, seed, replications, version, variants, baseline
/// or grid differ), of different shard counts, and sets of shards with a cell missing or twice.
pub fn merge(shards: &[ShardFiles]) -> Result<(Vec<u8>, Vec<u8>), MergeError> {
    let Some(first) = shards.first() else {
        return Err(MergeError("merge needs at least one shard directory".into()));
    };
    for other in &shards[1..] {
        if other.header_line != first.header_line {
            return Err(MergeError(header_mismatch(first, other)));
        }
        if other.csv_header != first.csv_header {
            return Err(MergeError(format!("{} and {}: sweep.csv columns differ", first.name(), other.name())));
        }
        if let (Some((_, n1)), Some((_, n2))) = (first.shard, other.shard) {
            if n1 != n2 {
                return Err(MergeError(format!(
                    "{} and {} split the grid differently; merge shards of one --shard K/N series",
                    first.name(),
                    other.name()
                )));
            }
        }
    }
    let cells_total = first.header["cells"].as_u64().expect("checked when read") as usize;
    let mut owner: BTreeMap<usize, &ShardFiles> = BTreeMap::new();
    for s in shards {
        for &c in &s.cells {
            if c >= cells_total {
                return Err(MergeError(format!("{}: cell {c} is outside the grid of {cells_total} cells", s.name())));
            }
            if let Some(previous) = owner.insert(c, s) {
                return Err(MergeError(format!(
                    "cell {c} is in both {} and {}; give each shard once",
                    previous.name(),
                    s.name()
                )));
            }
        }
    }
    let missing: Vec<usize> = (0..cells_total).filter(|c| !owner.contains_key(c)).collect();
    if !missing.is_empty() {
        let hint = match first.shard {
            Some((_, n)) => {
                let mut wanted: Vec<usize> = missing.iter().map(|c| c % n + 1).collect();
                wanted.dedup();
                wanted.sort_unstable();
                wanted.dedup();
                format!(
                    "; run or add shard(s) {}",
                    wanted.iter().map(|k| format!("{k}/{n}")).collect::<Vec<_>>().join(", ")
                )
            }
            None => String::new(),
        };
        let shown: Vec<String> = missing.iter().take(10).map(usize::to_string).collect();
        return Err(MergeError(format!(
            "{} of {cells_total} cells are missing (cells {}{}){hint}",
            missing.len(),
            shown.join(", "),
            if missing.len() > 10 { ", …" } else { "" }
        )));
    }
    // Stable sorts by cell: rows of one cell keep their (variant, metric) order.
    let mut json_rows: Vec<&(usize, String)> = shards.iter().flat_map(|s| &s.json_rows).collect();
    json_rows.sort_by_key(|r| r.0);
    let mut csv_rows: Vec<&(usize, csv::StringRecord)> = shards.iter().flat_map(|s| &s.csv_rows).collect();
    csv_rows.sort_by_key(|r| r.0);
    let json = assemble_json(&first.header_line, "null", &json_rows.iter().map(|r| r.1.as_str()).collect::<Vec<_>>());
    let header: Vec<&str> = first.csv_header.iter().collect();
    let records: Vec<Vec<&str>> = csv_rows.iter().map(|r| r.1.iter().collect()).collect();
    let csv = assemble_csv(&header, &records.iter().map(Vec::as_slice).collect::<Vec<_>>());
    Ok((json, csv))
}

fn header_mismatch(a: &ShardFiles, b: &ShardFiles) -> String {
    let keys =
        ["scenario", "seed", "model", "replications", "version", "variants", "baseline", "vary", "cells", "format"];
    let differing = keys.iter().find(|k| a.header.get(**k) != b.header.get(**k)).copied().unwrap_or("header");
    let show = |s: &ShardFiles| s.header.get(differing).map_or("?".into(), Value::to_string);
    format!(
        "{} and {} come from different sweeps: `{differing}` is {} vs {}; merge only shards of one sweep command",
        a.name(),
        b.name(),
        show(a),
        show(b)
    )
}
