//! `retrystorm sweep` and `retrystorm merge`.

use super::{CliError, RunArgs};
use clap::Args;
use std::path::PathBuf;

/// Flags of `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    /// Scenario and run options.
    pub run: RunArgs,
    /// A parameter and its values, e.g. --vary tenant.main.clients=1000,10000 (repeatable).
    #[arg(long, value_name = "PATH=V1,V2,…")]
    pub vary: Vec<String>,
    /// Run only the K-th of N deterministic slices of the grid, e.g. --shard 2/3.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

/// Flags of `merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories.
    pub dirs: Vec<PathBuf>,
    /// Where to write the merged sweep (default: the first directory's parent / merged).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs a sweep.
pub fn run(_args: SweepArgs) -> Result<(), CliError> {
    Err(CliError::Failure("sweep: not implemented yet".into()))
}

/// Merges shard directories.
pub fn merge(_args: MergeArgs) -> Result<(), CliError> {
    Err(CliError::Failure("merge: not implemented yet".into()))
}
