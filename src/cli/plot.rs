//! `retrystorm plot DIR`: re-renders charts and the report from a run's files, without simulating.

use super::CliError;
use crate::report;
use clap::Args;
use std::path::PathBuf;

/// Flags of `plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// An output directory (written by `run`, `compare`, `sweep`, `merge`, `map` or `plan`).
    pub dir: PathBuf,
    /// Print nothing on success.
    #[arg(long)]
    pub quiet: bool,
    /// Refuse any file of the directory larger than SIZE (e.g. 8GiB; default: half the
    /// machine's memory, the same default that bounds what a run writes).
    #[arg(long, value_name = "SIZE", value_parser = crate::runner::memory::parse_size)]
    pub max_memory: Option<u64>,
}

/// Re-renders the charts and `report.html` of `args.dir`.
pub fn run(args: PlotArgs) -> Result<(), CliError> {
    if !args.dir.is_dir() {
        return Err(CliError::BadInput(format!(
            "plot: `{}` is not a directory; give the output directory of a `run`, `compare`, `sweep`, `merge`, `map` or `plan`",
            args.dir.display()
        )));
    }
    // Both a directory that is not a run and one we cannot write to are the caller's to fix.
    let claim = report::Claim::reopen(&args.dir).map_err(|e| CliError::BadInput(format!("plot: {e}")))?;
    let mut written = Vec::new();
    let max_bytes = args.max_memory.unwrap_or_else(super::default_memory_limit);
    let rendered = report::render_dir(&args.dir, max_bytes, &mut written).map_err(|e| match e {
        report::RenderError::Read(e) => CliError::BadInput(format!("plot: {e}")),
        report::RenderError::Write(e) => {
            CliError::Failure(format!("plot: {}", report::files::partial_failure(&e, &claim.abandon(&written))))
        }
    });
    rendered?;
    claim.finish(&written).map_err(|e| CliError::Failure(format!("plot: {e}")))?;
    if !args.quiet {
        println!("re-rendered {} files in {}", written.len(), args.dir.display());
    }
    Ok(())
}
