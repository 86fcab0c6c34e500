//! `retrystorm sweep` (a grid of parameter values, optionally one shard of it) and
//! `retrystorm merge` (shard directories back into the unsharded sweep's files).

use super::{baseline_index, cell_variants, overrides, table, CliError, RunArgs};
use crate::metrics::catalogue::Metric;
use crate::report::files;
use crate::report::sweep::{self as sweep_files, SweepHeader};
use crate::report::values;
use crate::runner::memory;
use crate::runner::sweep::{run_cells, Cell, CellResult, Grid, Shard, SweepResult};
use crate::scenario::{Scenario, ScenarioError, Variant};
use clap::Args;
use serde_json::json;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Flags of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    /// Scenario and run options.
    pub run: RunArgs,
    /// A parameter and its values, e.g. --vary tenant.main.clients=1000,10000 (repeatable; the
    /// first --vary changes slowest).
    #[arg(long, value_name = "PATH=V1,V2,…")]
    pub vary: Vec<String>,
    /// Run only the K-th of N deterministic slices of the grid (cells i with i mod N = K − 1),
    /// e.g. --shard 2/3; join the shard directories with `retrystorm merge`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Jitter strategies each cell runs (default: the scenario's variants, else
    /// none,exponential,full,equal,decorrelated).
    #[arg(long, value_delimiter = ',')]
    pub jitter: Vec<String>,
    /// Variant the others are compared with (paired differences; default: the first).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
}

/// Flags of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories (each written by `sweep --shard K/N` or `plan --shard K/N`).
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged sweep (default: the first directory's parent / merged).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into --out even if it holds files retrystorm did not write (they are left alone).
    #[arg(long)]
    pub force: bool,
    /// Refuse a merge whose memory estimate exceeds SIZE (e.g. 8GiB; default: half the machine's).
    #[arg(long, value_name = "SIZE", value_parser = crate::runner::memory::parse_size)]
    pub max_memory: Option<u64>,
}

fn bad(e: impl ToString) -> CliError {
    CliError::BadInput(e.to_string())
}

/// `cell 4 (tenant.main.clients=0)`: how messages name a cell.
fn cell_name(grid: &Grid, index: usize) -> String {
    let params: Vec<String> = grid.overrides(index).iter().map(|o| format!("{}={}", o.path, o.value)).collect();
    format!("cell {index} ({})", params.join(", "))
}

/// Loads every cell (so a bad value fails before anything runs, in every shard alike) and keeps
/// this shard's.
fn load_cells(args: &SweepArgs, grid: &Grid, shard: Option<Shard>) -> Result<Vec<Cell>, CliError> {
    let base = overrides(&args.run)?;
    let mut cells = Vec::new();
    let mut names: Option<Vec<String>> = None;
    for index in 0..grid.cells() {
        let with_cell: Vec<_> = base.iter().cloned().chain(grid.overrides(index)).collect();
        let load = || -> Result<(Scenario, Vec<Variant>), ScenarioError> {
            let scenario = Scenario::load(&args.run.scenario, &with_cell)?;
            let variants = cell_variants(&scenario, &args.jitter)?;
            Ok((scenario, variants))
        };
        let (scenario, variants) = load().map_err(|e| bad(format!("{}: {e}", cell_name(grid, index))))?;
        let these: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
        match &names {
            None => names = Some(these),
            Some(first) if *first != these => {
                return Err(bad(format!(
                    "{}: the variants differ from cell 0's; every cell must run the same variants",
                    cell_name(grid, index)
                )))
            }
            Some(_) => {}
        }
        if shard.is_none_or(|s| s.contains(index)) {
            cells.push(Cell { index, scenario, variants });
        }
    }
    Ok(cells)
}

/// Runs a sweep (or one shard of it) and writes `sweep.json`, `sweep.csv` and `perf.json`.
pub fn run(args: SweepArgs) -> Result<(), CliError> {
    super::check_threads(args.run.threads)?;
    super::check_jitters(&args.jitter)?;
    let grid = Grid::parse(&args.vary).map_err(bad)?;
    let shard = args.shard.as_deref().map(Shard::parse).transpose().map_err(bad)?;
    // Cell 0 names the scenario, seed and variants: they are the same in every cell.
    let first = Scenario::load(&args.run.scenario, &overrides(&args.run)?)?;
    let probe = cell_variants(&first, &args.jitter)?;
    // Before loading every cell (slow for a huge grid): the estimate with cell 0's size for all.
    let threads = args.run.threads.unwrap_or_else(rayon::current_num_threads);
    let guess: Vec<_> = (0..grid.cells()).map(|_| (&first, probe.as_slice())).collect();
    let limit = args.run.max_memory.unwrap_or_else(super::default_memory_limit);
    crate::runner::memory::check(&crate::runner::memory::estimate_sweep(&guess, threads, shard.is_none()), limit)
        .map_err(bad)?;
    let cells = load_cells(&args, &grid, shard)?;
    let baseline = baseline_index(&probe, args.baseline.as_deref())?;
    let header = SweepHeader {
        scenario: first.name.clone(),
        seed: first.seed,
        replications: first.replications,
        baseline: probe[baseline].name.clone(),
        variants: probe.iter().map(|v| v.name.clone()).collect(),
        grid,
        model: crate::scenario::model_digest(&first.base, &probe),
    };
    let sized: Vec<_> = cells.iter().map(|c| (&c.scenario, c.variants.as_slice())).collect();
    super::check_memory(&crate::runner::memory::estimate_sweep(&sized, threads, shard.is_none()), &args.run)?;
    let out = args.run.out.clone().unwrap_or_else(|| {
        let dir = PathBuf::from("output").join(&first.name).join("sweep");
        shard.map_or(dir.clone(), |s| dir.join(format!("shard-{}-of-{}", s.index, s.count)))
    });
    let claim = super::claim(&out, args.run.force)?;
    let mut warnings: Vec<&String> = cells.iter().flat_map(|c| &c.scenario.warnings).collect();
    warnings.sort();
    warnings.dedup();
    for w in warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    let result = run_cells(&cells, baseline, args.run.threads, !args.run.quiet);
    // One group per cell and variant: the cell's entries read `variant: replication N: reason`.
    let grid = &header.grid;
    let groups: Vec<(String, Vec<String>)> = result
        .cells
        .iter()
        .flat_map(|c| {
            c.variants.iter().map(move |(name, _)| {
                let runs = c
                    .truncated
                    .iter()
                    .filter_map(|t| t.strip_prefix(name.as_str()).and_then(|r| r.strip_prefix(": ")))
                    .map(str::to_string)
                    .collect();
                (format!("{} `{name}`", cell_name(grid, c.index)), runs)
            })
        })
        .collect();
    let replications = cells.first().map_or(0, |c| c.scenario.replications as usize);
    for w in super::truncation_warnings(groups.iter().map(|(g, t)| (g.clone(), t.as_slice())), replications) {
        eprintln!("{w}");
    }
    let (json, csv) = sweep_files::sweep_files(&header, shard, &result.cells);
    let perf = perf_json(&header, &result);
    // A shard holds only part of the grid: its charts wait for `merge`.
    let charts = shard.is_none().then_some(limit);
    let written = write_sweep(&claim, &[("sweep.json", &json), ("sweep.csv", &csv), ("perf.json", &perf)], charts)?;
    let charts = written - 3;
    if !args.run.quiet {
        // Variants as people read them (`none — immediate retry`), from cell 0's configurations.
        let labels: Vec<(String, String)> = probe
            .iter()
            .map(|v| {
                (v.name.clone(), crate::report::setup::label_of(&v.name, &crate::report::setup::setup_of(&v.spec)))
            })
            .collect();
        let width = if args.run.wide { table::WIDE } else { table::WIDTH };
        print!("{}", sweep_table(&header, shard, &result.cells, &labels, width));
        let wrote =
            format!("wrote sweep.json, sweep.csv, perf.json and {charts} chart/report files to {}", out.display());
        print!("{}", table::fit(&wrote, width));
    }
    Ok(())
}

/// Writes `data` files into the claimed directory, then (with `charts`, the command's memory
/// limit, which bounds the `sweep.json` read back) the sweep's charts and report drawn from
/// them, then the manifest; returns how many files were written. A failure part-way is exit
/// code 1 naming the complete files.
fn write_sweep(claim: &files::Claim, data: &[(&str, &[u8])], charts: Option<u64>) -> Result<usize, CliError> {
    let mut written = Vec::new();
    let mut write = || -> Result<(), files::OutputError> {
        for (name, bytes) in data {
            let path = claim.dir().join(name);
            files::write_atomic(&path, bytes)?;
            written.push(path);
        }
        if let Some(max_bytes) = charts {
            crate::report::render_sweep(claim.dir(), max_bytes, &mut written).map_err(|e| match e {
                crate::report::RenderError::Read(e) => files::OutputError {
                    path: e.path,
                    message: format!("reading back the sweep failed: {}", e.message),
                },
                crate::report::RenderError::Write(e) => e,
            })?;
        }
        claim.finish(&written)
    };
    match write() {
        Ok(()) => Ok(written.len()),
        Err(e) => Err(CliError::Failure(files::partial_failure(&e, &claim.abandon(&written)))),
    }
}

/// `perf.json` of a sweep (not part of the determinism contract).
fn perf_json(header: &SweepHeader, result: &SweepResult) -> Vec<u8> {
    let per_s = if result.wall_s > 0.0 { result.events as f64 / result.wall_s } else { 0.0 };
    let perf = json!({
        "scenario": header.scenario,
        "version": crate::report::summary::VERSION,
        "cells": result.cells.len(),
        "events": result.events,
        "wall_s": result.wall_s,
        "events_per_s": per_s,
        "threads": result.threads,
        "peak_memory_bytes": crate::report::summary::peak_memory_bytes(),
    });
    let mut text = serde_json::to_string_pretty(&perf).expect("JSON values serialise");
    text.push('\n');
    text.into_bytes()
}

/// Metrics of the stdout table: the headline ones, readable at a glance.
const TABLE_METRICS: [Metric; 5] =
    [Metric::SuccessRatio, Metric::PeakAfterOverCapacity, Metric::Dlq, Metric::PeakOverCapacity, Metric::Attempts];

/// A column heading: the whole-run peak is the one during the trigger (the post-recovery peak
/// has its own column).
fn table_heading(m: Metric) -> String {
    if m == Metric::PeakOverCapacity {
        "trigger peak/cap".into()
    } else {
        m.def().short.trim_end_matches(" s").to_string()
    }
}

/// One line per cell × variant: the varied values, headline metrics and Δattempts vs baseline.
fn sweep_table(
    header: &SweepHeader,
    shard: Option<Shard>,
    cells: &[CellResult],
    labels: &[(String, String)],
    width: usize,
) -> String {
    let label = |name: &str| labels.iter().find(|(n, _)| n == name).map_or(name.to_string(), |(_, l)| l.clone());
    let mut head: Vec<String> = vec!["cell".into()];
    head.extend(header.grid.axes.iter().map(|a| a.path.rsplit('.').next().unwrap_or(&a.path).to_string()));
    head.push("variant".into());
    // Cells carry their unit (`19.3 s`), so the heading does not repeat it.
    head.extend(TABLE_METRICS.iter().map(|&m| table_heading(m)));
    head.push(format!("Δ{}", table::DIFF_METRIC));
    let mut rows = vec![head];
    for c in cells {
        let params: Vec<String> = header.grid.overrides(c.index).iter().map(|o| short_value(&o.value)).collect();
        for (variant, metrics) in &c.variants {
            let mut row = vec![c.index.to_string()];
            row.extend(params.iter().cloned());
            row.push(label(variant));
            row.extend(TABLE_METRICS.iter().map(|&m| values::value(m, metrics.get(m))));
            let diff = c.comparisons.iter().find(|x| &x.variant == variant);
            let paired =
                diff.and_then(|x| x.metrics.iter().find(|(m, _)| *m == table::DIFF_METRIC)).map(|(_, d)| &d.paired);
            row.push(if diff.is_some() { values::value(table::DIFF_METRIC, paired) } else { "baseline".into() });
            rows.push(row);
        }
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    let part = shard.map(|s| format!(", shard {}/{}", s.index, s.count)).unwrap_or_default();
    let mut title = String::new();
    let _ = writeln!(
        title,
        "{} sweep: {} of {}{part}, {}, seed {}; mean ±95% CI half-width (pp for percentages; \"exact\": all agree); Δ: paired vs {}",
        header.scenario,
        cells.len(),
        crate::report::format::count_of(header.grid.cells() as u64, "cell"),
        crate::report::format::count_of(u64::from(header.replications), "replication"),
        header.seed,
        label(&header.baseline)
    );
    out.push_str(&table::fit(&title, width));
    // The cell, its parameters and the variant name each row; the metric columns go into blocks
    // that fit `width`, each block repeating those key columns.
    let keys = 2 + header.grid.axes.len();
    let line_width = |columns: &[usize]| columns.iter().map(|&c| widths[c]).sum::<usize>() + 2 * (columns.len() - 1);
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = (0..keys).collect();
    for c in keys..widths.len() {
        current.push(c);
        if current.len() > keys + 1 && line_width(&current) > width {
            current.pop();
            blocks.push(std::mem::replace(&mut current, (0..keys).chain([c]).collect()));
        }
    }
    blocks.push(current);
    for (b, columns) in blocks.iter().enumerate() {
        if b > 0 {
            out.push('\n');
        }
        for row in &rows {
            let line: Vec<String> = columns.iter().map(|&c| format!("{:>w$}", row[c], w = widths[c])).collect();
            let _ = writeln!(out, "{}", line.join("  "));
        }
    }
    out
}

#[allow(clippy::wildcard_enum_match_arm, reason = "a TOML value, not a kind: any other shape is shown as TOML")]
fn short_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Float(x) => values::sig3(*x),
        other => other.to_string(),
    }
}

/// Merges shard directories into `sweep.json` and `sweep.csv`, byte-identical to the unsharded sweep.
pub fn merge(args: MergeArgs) -> Result<(), CliError> {
    let limit = args.max_memory.unwrap_or_else(super::default_memory_limit);
    // Any plan.json, even one that is not a regular file, is a plan merge (which refuses it).
    if args.dirs.first().is_some_and(|d| d.join("plan.json").symlink_metadata().is_ok()) {
        return super::plan::merge(&args.dirs, args.out, args.force, memory::merge_file_limit(limit));
    }
    if args.dirs.first().is_some_and(|d| d.join("map.json").symlink_metadata().is_ok()) {
        return super::map::merge(&args.dirs, args.out, args.force, memory::merge_file_limit(limit));
    }
    let Some(first) = args.dirs.first() else {
        return Err(bad("merge needs shard directories, e.g. retrystorm merge out/shard-1-of-3 out/shard-2-of-3 …"));
    };
    // What merge holds grows with the bytes it reads: refuse before reading them.
    let input_bytes = args.dirs.iter().map(|d| sweep_files::shard_bytes(d)).fold(0, u64::saturating_add);
    memory::check_merge(input_bytes, args.dirs.len(), limit).map_err(bad)?;
    let file_limit = memory::merge_file_limit(limit);
    let shards =
        args.dirs.iter().map(|d| sweep_files::read_shard(d, file_limit)).collect::<Result<Vec<_>, _>>().map_err(bad)?;
    let (json, csv) = sweep_files::merge(&shards).map_err(bad)?;
    // Everything `plot` will read back is checked before anything is written.
    let value: serde_json::Value = serde_json::from_slice(&json).map_err(|e| bad(format!("merged sweep.json: {e}")))?;
    crate::report::readback::sweep_from_json(&first.join("sweep.json"), &value).map_err(|e| bad(format!("{e}")))?;
    let out = args.out.clone().unwrap_or_else(|| first.parent().unwrap_or(Path::new(".")).join("merged"));
    super::check_merge_out(&args.dirs, &out)?;
    let claim = super::claim(&out, args.force)?;
    let charts = write_sweep(&claim, &[("sweep.json", &json), ("sweep.csv", &csv)], Some(limit))? - 2;
    println!("merged {} shard(s) into {} ({charts} chart/report files)", shards.len(), out.display());
    Ok(())
}
