//! `retrystorm plot DIR`: re-renders charts and the report from a run's files.

use super::CliError;
use clap::Args;
use std::path::PathBuf;

/// Flags of `plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// A run's output directory.
    pub dir: PathBuf,
}

/// Re-renders the charts of `args.dir`.
pub fn run(args: PlotArgs) -> Result<(), CliError> {
    Err(CliError::Failure(format!("plot {}: not implemented yet", args.dir.display())))
}
