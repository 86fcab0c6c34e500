//! Reporting: the output directory's files (JSON, CSV, charts, HTML), written atomically.

pub(crate) mod charts;
pub(crate) mod data;
pub(crate) mod files;
pub mod format;
pub(crate) mod html;
pub(crate) mod map;
pub(crate) mod plan;
pub(crate) mod readback;
pub(crate) mod reading;
pub(crate) mod setup;
pub mod summary;
pub(crate) mod sweep;
pub mod values;
pub mod verdict_text;

pub use files::{Claim, ClaimError, OutputError};
pub use readback::{read_results, ReadError, SeriesKey};

use crate::runner::Study;
use std::path::{Path, PathBuf};

/// Writes `summary.json`, `summary.csv`, `timeseries.csv`, `perf.json`, the chart data files,
/// the charts and `report.html` to the claimed directory, then its manifest; returns the files
/// written. A failure part-way names the files that are complete.
pub fn write_study(claim: &Claim, study: &Study) -> Result<Vec<PathBuf>, WriteError> {
    write_study_with(claim, study, &|_, _| Ok(()))
}

/// Writes further files into a run's directory, adding each complete one to the list.
pub type MoreFiles<'a> = dyn Fn(&Path, &mut Vec<PathBuf>) -> Result<(), OutputError> + 'a;

/// [`write_study`], then `more` writes further files into the directory (adding each complete
/// one to the list) before the manifest is written, so the manifest names them too.
pub fn write_study_with(claim: &Claim, study: &Study, more: &MoreFiles) -> Result<Vec<PathBuf>, WriteError> {
    let mut written = Vec::new();
    // `more` first: the report rendered from the files may show what it wrote.
    match more(claim.dir(), &mut written)
        .and_then(|()| write_study_files(claim.dir(), study, &mut written))
        .and_then(|()| claim.finish(&written))
    {
        Ok(()) => Ok(written),
        Err(error) => Err(WriteError::new(claim, error, &written)),
    }
}

/// A write that failed part-way: the error and the files that were complete.
#[derive(Debug, thiserror::Error)]
#[error("{}", files::partial_failure(.error, .complete))]
pub struct WriteError {
    /// What failed.
    pub error: OutputError,
    /// Names of the files this run completed.
    pub complete: Vec<String>,
}

impl WriteError {
    fn new(claim: &Claim, error: OutputError, written: &[PathBuf]) -> WriteError {
        WriteError { error, complete: claim.abandon(written) }
    }
}

fn write_study_files(dir: &Path, study: &Study, written: &mut Vec<PathBuf>) -> Result<(), OutputError> {
    let mut put = |name: &str, bytes: Vec<u8>| -> Result<(), OutputError> {
        let path = dir.join(name);
        files::write_atomic(&path, &bytes)?;
        written.push(path);
        Ok(())
    };
    let pretty = |v: &serde_json::Value| {
        let mut s = serde_json::to_string_pretty(v).expect("JSON values serialise");
        s.push('\n');
        s.into_bytes()
    };
    put("summary.json", summary::Summary::of(study).to_bytes())?;
    put("summary.csv", summary::summary_csv(study))?;
    put("timeseries.csv", summary::timeseries_csv(study))?;
    if let Some(bytes) = summary::replicas_csv(study) {
        put("replicas.csv", bytes)?;
    }
    put("perf.json", pretty(&summary::perf_json(study)))?;
    put("scenario.json", pretty(&data::scenario_json(study)))?;
    put("delays.csv", data::delays_csv(study))?;
    put("latency.csv", data::latency_csv(study))?;
    // Render from the files just written, exactly as `plot` will: one path, identical output.
    // They are this run's own files, their size already in its memory estimate: no bound.
    render_run_into(dir, u64::MAX, written).map_err(|e| match e {
        RenderError::Read(e) => {
            OutputError { path: e.path, message: format!("reading back the run failed: {}", e.message) }
        }
        RenderError::Write(e) => e,
    })
}

/// Why re-rendering a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The directory does not hold a readable run.
    #[error("{0}")]
    Read(#[from] readback::ReadError),
    /// A chart or the report could not be written.
    #[error("{0}")]
    Write(#[from] OutputError),
}

/// Renders the charts and `report.html` of the run or sweep in `dir` from its files (a sweep
/// when `dir` holds `sweep.json`, of any kind, and no `summary.json`), adding each complete file
/// to `written`. Each file read may have at most `max_bytes` (`readback`).
pub fn render_dir(dir: &Path, max_bytes: u64, written: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let has = |name: &str| dir.join(name).symlink_metadata().is_ok();
    if has("summary.json") {
        render_run_into(dir, max_bytes, written)
    } else if has("sweep.json") {
        render_sweep(dir, max_bytes, written)
    } else if has("map.json") {
        let map: crate::runner::map::MapFile = readback::read_typed(dir, "map.json", max_bytes)?;
        written.extend(map::render_map(dir, &map)?);
        Ok(())
    } else if has("plan.json") {
        let plan: crate::runner::plan::PlanFile = readback::read_typed(dir, "plan.json", max_bytes)?;
        written.extend(plan::render_plan(dir, &plan)?);
        Ok(())
    } else {
        render_run_into(dir, max_bytes, written)
    }
}

/// Renders the sweep charts and `report.html` of the sweep in `dir` from its `sweep.json` (of at
/// most `max_bytes`).
pub fn render_sweep(dir: &Path, max_bytes: u64, written: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let data = readback::read_sweep(dir, max_bytes)?;
    let mut rendered = charts::Rendered::default();
    let mut result = Ok(());
    for chart in charts::sweep::SweepChart::for_sweep(&data) {
        result = rendered.add(dir, &charts::sweep::SweepFigure { chart, data: &data });
        if result.is_err() {
            break;
        }
    }
    written.append(&mut rendered.files);
    result?;
    let report = dir.join("report.html");
    files::write_atomic(&report, html::sweep_html(&data, &rendered.charts).as_bytes())?;
    written.push(report);
    Ok(())
}

/// Renders every chart and `report.html` of the run in `dir` from its files (each of at most
/// `max_bytes`); returns the files written.
pub fn render_run(dir: &Path, max_bytes: u64) -> Result<Vec<PathBuf>, RenderError> {
    let mut written = Vec::new();
    render_run_into(dir, max_bytes, &mut written)?;
    Ok(written)
}

fn render_run_into(dir: &Path, max_bytes: u64, written: &mut Vec<PathBuf>) -> Result<(), RenderError> {
    let data = readback::read_run(dir, max_bytes)?;
    let mut rendered = charts::Rendered::default();
    // An emulated run compared with its simulation shows the measured load over the simulated
    // one first (drawn by `compare --emulate`, which alone has both; `plot` keeps it).
    if data.emulation.as_ref().is_some_and(|e| e.comparison.is_some()) {
        rendered.charts.extend(readback::measured_chart(dir, max_bytes)?);
    }
    let result = charts::write_charts(dir, &data, &mut rendered);
    written.append(&mut rendered.files);
    result?;
    let report = dir.join("report.html");
    files::write_atomic(&report, html::report_html(&data, &rendered.charts).as_bytes())?;
    written.push(report);
    Ok(())
}
