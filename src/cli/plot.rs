//! `retrystorm plot DIR`: re-renders charts and the report from a run's files, without simulating.

use super::CliError;
use crate::report;
use clap::Args;
use std::path::PathBuf;

/// Flags of `plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// A run's output directory (written by `run`, `compare`, `sweep` or `merge`).
    pub dir: PathBuf,
    /// Print nothing on success.
    #[arg(long)]
    pub quiet: bool,
}

/// Re-renders the charts and `report.html` of `args.dir`.
pub fn run(args: PlotArgs) -> Result<(), CliError> {
    if !args.dir.is_dir() {
        return Err(CliError::BadInput(format!(
            "plot: `{}` is not a directory; give the output directory of a `run`, `compare`, `sweep` or `merge`",
            args.dir.display()
        )));
    }
    let written = report::render_dir(&args.dir).map_err(|e| match CliError::from(e) {
        CliError::BadInput(m) => CliError::BadInput(format!("plot: {m}")),
        CliError::Failure(m) => CliError::Failure(format!("plot: {m}")),
    })?;
    if !args.quiet {
        println!("re-rendered {} files in {}", written.len(), args.dir.display());
    }
    Ok(())
}
