//! `retrystorm budget`: flags of the retry-budget calculator.

use super::CliError;
use clap::Args;

/// Flags of `budget`; defaults as in the retry-budget guide.
#[derive(Debug, Args)]
pub struct BudgetArgs {
    /// Provider retry window, e.g. 72h.
    #[arg(long)]
    window: String,
}

/// Runs the calculator.
pub fn run(_args: BudgetArgs) -> Result<(), CliError> {
    Err(CliError::Failure("budget: not wired yet".into()))
}
