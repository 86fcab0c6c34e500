//! `retrystorm budget`: flags of the retry-budget calculator (defaults as in the guide).

use super::CliError;
use crate::retry_window::{compute, BudgetConfig};
use crate::scenario::policies::jitter;
use crate::scenario::raw::{parse_duration, Dur, RawPolicy};
use clap::Args;

/// Flags of `budget`; defaults as in the retry-budget guide.
#[derive(Debug, Args)]
pub struct BudgetArgs {
    /// Provider retry window, e.g. 72h.
    #[arg(long)]
    window: String,
    /// First backoff delay.
    #[arg(long, default_value = "2s")]
    base: String,
    /// Growth factor per retry (≥ 1).
    #[arg(long, default_value_t = 2.0)]
    multiplier: f64,
    /// Largest single delay.
    #[arg(long, default_value = "1h")]
    cap: String,
    /// Timeout reserved for every attempt.
    #[arg(long = "attempt-timeout", default_value = "30s")]
    attempt_timeout: String,
    /// Idempotency TTL margin over the window.
    #[arg(long, default_value = "6h")]
    margin: String,
    /// Delay strategy, as in scenario policies: none (retry at once), exponential (un-jittered),
    /// full, equal, decorrelated, decorrelated_v2, decorrelated_finagle, proportional, schedule.
    #[arg(long, default_value = "full")]
    jitter: String,
    /// Half-width of proportional jitter's band, in (0, 1] (gRPC 0.2, resilience4j 0.5).
    #[arg(long)]
    ratio: Option<f64>,
    /// Delays of `--jitter schedule`, comma-separated (e.g. 5s,5m,30m,2h); the last one repeats.
    #[arg(long)]
    schedule: Option<String>,
    /// Seed of the schedule shown.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Split the window across a chain of this many hops (inner windows strictly smaller).
    #[arg(long, default_value_t = 1)]
    hops: u32,
    /// Each inner hop's window is its caller's divided by this (> 1).
    #[arg(long, default_value_t = 3.0)]
    shrink: f64,
    /// Seeds for the distribution of attempts fitted (seed, seed+1, …).
    #[arg(long, default_value_t = 200)]
    seeds: u32,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also print the seed's whole schedule and the histogram of attempts fitted over seeds.
    #[arg(long)]
    details: bool,
}

fn duration(flag: &str, text: &str) -> Result<u64, CliError> {
    parse_duration(text).map_err(|e| CliError::BadInput(format!("--{flag}: {e}")))
}

/// Runs the calculator and prints its report.
pub fn run(args: BudgetArgs) -> Result<(), CliError> {
    let schedule = match &args.schedule {
        None => None,
        Some(text) => Some(text.split(',').map(|d| duration("schedule", d).map(Dur)).collect::<Result<Vec<_>, _>>()?),
    };
    let raw = RawPolicy { jitter: Some(args.jitter.clone()), ratio: args.ratio, schedule, ..RawPolicy::default() };
    if raw.ratio.is_some() && args.jitter != "proportional" {
        return Err(CliError::BadInput("--ratio is only used by --jitter proportional; remove it".into()));
    }
    if raw.schedule.is_some() && args.jitter != "schedule" {
        return Err(CliError::BadInput("--schedule is only used by --jitter schedule; remove it".into()));
    }
    // The scenario's own validation, so names, defaults and limits are the simulator's.
    let jitter = jitter(&args.jitter, &raw, &|field| format!("--{field}")).map_err(|e| {
        let message = match e.path.join(".").as_str() {
            "--schedule" => "--schedule: missing or empty; list the delays, e.g. --schedule 5s,5m,30m".to_string(),
            path => format!("{path}: {}", e.message),
        };
        CliError::BadInput(message)
    })?;
    let config = BudgetConfig {
        window_ns: duration("window", &args.window)?,
        base_ns: duration("base", &args.base)?,
        multiplier: args.multiplier,
        cap_ns: duration("cap", &args.cap)?,
        attempt_timeout_ns: duration("attempt-timeout", &args.attempt_timeout)?,
        margin_ns: duration("margin", &args.margin)?,
        jitter,
        seed: args.seed,
        hops: args.hops,
        shrink: args.shrink,
        seeds_for_distribution: args.seeds,
    };
    let report = compute(&config).map_err(|e| CliError::BadInput(e.to_string()))?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serialises");
        println!("{text}");
    } else {
        print!("{}", report.to_text(args.details));
    }
    Ok(())
}
