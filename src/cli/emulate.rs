//! `retrystorm emulate`: the scenario on real sockets (`crate::emulate`), one measured run per
//! variant, written as a run's files.

use super::{check_jitters, claim, parse_seed, result_command, table, CliError};
use crate::emulate::{self, EmulateError, Options};
use crate::runner::Emulation;
use crate::scenario::{parse_assignment, Override, Scenario};
use clap::Args;
use std::path::PathBuf;

/// Flags of `emulate`.
#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Scenario file (TOML).
    scenario: String,
    /// Wall seconds per scenario second: 10 runs the scenario 10× slower than its clock.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    time_scale: f64,
    /// Jitter strategies, one emulated run each (default: the scenario's variants, else itself).
    #[arg(long, value_delimiter = ',')]
    jitter: Vec<String>,
    /// Override a field, e.g. --set tenant.main.clients=1000 (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Master seed (overrides the file's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Output directory (default: output/<scenario name>-emulated).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stop each run after this many wall seconds, whatever is still in flight (at most 3600).
    #[arg(long, default_value_t = 120.0, allow_negative_numbers = true)]
    max_seconds: f64,
    /// Refuse scenarios that plan more logical requests than this per run.
    #[arg(long, default_value_t = 20_000)]
    max_requests: u64,
    /// Run even when this machine's timers are later than a tenth of the mean service time.
    #[arg(long)]
    allow_late: bool,
    /// Write into --out even if it holds files retrystorm did not write.
    #[arg(long)]
    force: bool,
    /// No table on stdout.
    #[arg(long)]
    quiet: bool,
}

/// Refuses time scales and limits outside their ranges, naming the flag and the fix.
fn check_options(args: &EmulateArgs) -> Result<Options, CliError> {
    if !(args.time_scale.is_finite() && (0.01..=1000.0).contains(&args.time_scale)) {
        return Err(CliError::BadInput(format!(
            "--time-scale {}: give a number from 0.01 to 1000 (wall seconds per scenario second; 1 = real time)",
            args.time_scale
        )));
    }
    if !(args.max_seconds.is_finite() && args.max_seconds > 0.0 && args.max_seconds <= 3600.0) {
        return Err(CliError::BadInput(format!(
            "--max-seconds {}: give a number of wall seconds above 0 and at most 3600",
            args.max_seconds
        )));
    }
    if args.max_requests == 0 {
        return Err(CliError::BadInput("--max-requests 0: give at least 1".into()));
    }
    Ok(Options {
        time_scale: args.time_scale,
        max_seconds: args.max_seconds,
        max_requests: args.max_requests,
        allow_late: args.allow_late,
    })
}

impl From<EmulateError> for CliError {
    fn from(e: EmulateError) -> Self {
        match e {
            EmulateError::Refused(m) => CliError::BadInput(m),
            EmulateError::Failed(m) => CliError::Failure(m),
        }
    }
}

/// Runs `emulate`.
pub fn run(args: EmulateArgs) -> Result<(), CliError> {
    let options = check_options(&args)?;
    let mut overrides: Vec<Override> =
        args.set.iter().map(|s| parse_assignment(s).map_err(CliError::BadInput)).collect::<Result<_, _>>()?;
    if let Some(seed) = args.seed {
        let seed = i64::try_from(seed).map_err(|_| CliError::BadInput(format!("--seed {seed}: beyond the range")))?;
        overrides.push(Override { path: "seed".into(), value: toml::Value::Integer(seed) });
    }
    let scenario = Scenario::load(&args.scenario, &overrides)?;
    let variants = if args.jitter.is_empty() {
        scenario.run_variants()
    } else {
        check_jitters(&args.jitter)?;
        scenario.jitter_variants(&args.jitter)?
    };
    // Everything refused before anything runs or is written.
    let checked: Vec<emulate::Preflight> = variants
        .iter()
        .map(|v| {
            emulate::preflight(&v.spec, &options).map_err(|e| match e {
                EmulateError::Refused(m) if variants.len() > 1 => {
                    CliError::BadInput(format!("variant `{}`: {m}", v.name))
                }
                other => other.into(),
            })
        })
        .collect::<Result<_, _>>()?;
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("output").join(format!("{}-emulated", scenario.name)));
    let claim = claim(&out, args.force)?;
    let mut records = Vec::with_capacity(variants.len());
    let mut measured: Vec<Emulation> = Vec::new();
    for (v, checked) in variants.iter().zip(&checked) {
        if !args.quiet {
            eprintln!("emulating `{}` on 127.0.0.1 at --time-scale {} …", v.name, options.time_scale);
        }
        let (record, emulation) = emulate::run(&v.spec, scenario.seed, &options, checked)?;
        for w in &emulation.warnings {
            eprintln!("warning: `{}`: {w}", v.name);
        }
        if let Some(why) = &record.truncated {
            eprintln!("warning: `{}` stopped early ({why}); its results are partial", v.name);
        }
        records.push(record);
        measured.push(emulation);
    }
    let wall_s = measured.iter().map(|e| e.wall_s).sum();
    let mut study = crate::runner::assemble(&scenario, &variants, &records, 1, wall_s);
    study.emulation = Some(merge(&measured));
    study.provenance.command = result_command(std::env::args());
    study.provenance.overrides = args.set.clone();
    let written = crate::report::write_study(&claim, &study).map_err(|e| CliError::Failure(e.to_string()))?;
    if !args.quiet {
        print!("{}", table::summary_table(&study, table::WIDTH));
        if let Some(e) = &study.emulation {
            println!(
                "measured on 127.0.0.1: timers {:.3} ms late on average (p99 {:.3} ms) over {} sleeps; connection set-up {:.3} ms (p99 {:.3} ms) over {} connections; {:.1} s of wall time",
                e.timer_lateness_mean_s * 1e3,
                e.timer_lateness_p99_s * 1e3,
                e.timer_samples,
                e.connect_mean_s * 1e3,
                e.connect_p99_s * 1e3,
                e.connections,
                e.wall_s
            );
        }
        println!("wrote {} files to {}", written.len(), out.display());
    }
    Ok(())
}

/// One emulation record over several runs: sums, means weighted by samples, the largest p99.
fn merge(runs: &[Emulation]) -> Emulation {
    let weighted = |value: fn(&Emulation) -> f64, weight: fn(&Emulation) -> u64| {
        let total: u64 = runs.iter().map(weight).sum();
        if total == 0 {
            0.0
        } else {
            runs.iter().map(|e| value(e) * weight(e) as f64).sum::<f64>() / total as f64
        }
    };
    let max = |value: fn(&Emulation) -> f64| runs.iter().map(value).fold(0.0, f64::max);
    Emulation {
        emulated: true,
        time_scale: runs.first().map_or(1.0, |e| e.time_scale),
        wall_s: runs.iter().map(|e| e.wall_s).sum(),
        timer_lateness_calibration_mean_s: max(|e| e.timer_lateness_calibration_mean_s),
        timer_lateness_mean_s: weighted(|e| e.timer_lateness_mean_s, |e| e.timer_samples),
        timer_lateness_p99_s: max(|e| e.timer_lateness_p99_s),
        timer_samples: runs.iter().map(|e| e.timer_samples).sum(),
        connect_mean_s: weighted(|e| e.connect_mean_s, |e| e.connections),
        connect_p99_s: max(|e| e.connect_p99_s),
        connections: runs.iter().map(|e| e.connections).sum(),
        warnings: runs.iter().flat_map(|e| e.warnings.iter().cloned()).collect(),
    }
}
