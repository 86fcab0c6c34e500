//! Reporting: the output directory's files (JSON, CSV, charts), written atomically.

pub mod charts;
pub mod files;
pub mod summary;
pub mod sweep;

pub use files::OutputError;

use crate::runner::Study;
use std::path::{Path, PathBuf};

/// Writes `summary.json`, `summary.csv`, `timeseries.csv`, `perf.json` and the charts to `dir`.
pub fn write_study(dir: &Path, study: &Study) -> Result<Vec<PathBuf>, OutputError> {
    files::prepare_dir(dir)?;
    let mut written = Vec::new();
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
    put("summary.json", pretty(&summary::summary_json(study)))?;
    put("summary.csv", summary::summary_csv(study))?;
    put("timeseries.csv", summary::timeseries_csv(study))?;
    put("perf.json", pretty(&summary::perf_json(study)))?;
    written.extend(charts::write_charts(dir, study)?);
    Ok(written)
}
