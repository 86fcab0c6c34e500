//! `retrystorm rare`: the probability of a rare overload by multilevel splitting.

use super::{overrides, table, CliError, RunArgs};
use crate::model::sim::split::ProgressFn;
use crate::report::files;
use crate::runner::rare::{check, Budget, RareEstimate, RareOutcome, RareSpec, RareStopped};
use crate::scenario::{Scenario, Variant};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// `--progress`: the command line's names of [`ProgressFn`] (the model derives no CLI trait).
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ProgressFlag {
    /// Attempts inside hop 0 (queued, in service, or waiting on its downstream calls).
    Backlog,
    /// Retries waiting on a backoff timer, at every hop.
    RetriesPending,
}

impl From<ProgressFlag> for ProgressFn {
    fn from(flag: ProgressFlag) -> Self {
        match flag {
            ProgressFlag::Backlog => ProgressFn::Backlog,
            ProgressFlag::RetriesPending => ProgressFn::RetriesPending,
        }
    }
}

/// Flags of `rare`.
#[derive(Debug, Args)]
pub struct RareArgs {
    #[command(flatten)]
    /// Scenario and run options.
    pub run: RunArgs,
    /// The level of the progress function that counts as tipped, e.g. --target 200.
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u64>)]
    pub target: u64,
    /// What is watched: hop 0's backlog, or the retries waiting on a backoff timer.
    #[arg(long, value_enum, default_value = "backlog")]
    pub progress: ProgressFlag,
    /// Levels the path is split at, evenly spaced up to the target (2 to 50).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u32>, default_value = "5")]
    pub levels: u32,
    /// Trials per level (10 to 1,000,000).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u32>, default_value = "1000")]
    pub effort: u32,
    /// Independent splitting runs, for the relative error (2 to 1,000).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u32>, default_value = "8")]
    pub repeats: u32,
    /// The time limit from the run's start (default: the scenario's horizon).
    #[arg(long, value_name = "DURATION")]
    pub within: Option<String>,
    /// Also run this many plain replications of the same event, for comparison.
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse_count::<u64>)]
    pub plain: Option<u64>,
    /// Wall time the whole command may take, e.g. 90s or 10m (`none`: no limit). Once spent, no
    /// trial starts: the estimate stops at its level and reports a bound.
    #[arg(long, value_name = "DURATION", default_value = DEFAULT_BUDGET)]
    pub time_budget: String,
}

/// `--time-budget`'s default: the docs' example finishes well within it on a laptop.
const DEFAULT_BUDGET: &str = "10m";

/// `rare.json`.
#[derive(Debug, Serialize, Deserialize)]
struct RareFile {
    scenario: String,
    seed: u64,
    target: u64,
    within_s: f64,
    spec: RareSpec,
    variants: Vec<RareVariant>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RareVariant {
    variant: String,
    /// The estimate; absent when the time budget stopped it (`stopped` says what is left).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    estimate: Option<RareEstimate>,
    /// Set only when the time budget stopped the estimate: a bound, not the estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stopped: Option<Box<RareStopped>>,
    /// Plain replication of the same event: (hits, runs run).
    plain: Option<(u64, u64)>,
    /// Set only when the time budget stopped plain replication: the runs asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plain_asked: Option<u64>,
}

/// Highest `--target`: a level no run's backlog can reach (10¹² requests held in memory).
const TARGET_MAX: u64 = 1_000_000_000_000;

/// Most `--plain` runs.
const PLAIN_MAX: u64 = 1_000_000;

fn bad(e: impl ToString) -> CliError {
    CliError::BadInput(e.to_string())
}

/// `levels` evenly spaced levels up to `target` (whole numbers, increasing, duplicates dropped).
fn levels(target: u64, count: u32) -> Vec<u64> {
    // In u128: `target × k` of a target near u64::MAX would wrap in u64 (and split at the levels
    // of another event); each level is at most `target`, so it fits back.
    let mut out: Vec<u64> = (1..=u128::from(count))
        .map(|k| {
            let level = (u128::from(target) * k).div_ceil(u128::from(count)).max(1);
            u64::try_from(level).expect("a level is at most the target")
        })
        .collect();
    out.dedup();
    out
}

/// Runs `rare` and writes `rare.json`.
pub fn run(args: RareArgs) -> Result<(), CliError> {
    super::check_threads(args.run.threads)?;
    if !(2..=TARGET_MAX).contains(&args.target) {
        return Err(bad(format!(
            "--target {}: give a level from 2 to {TARGET_MAX} (a backlog or a count of pending retries: no run holds more requests than memory)",
            args.target
        )));
    }
    if let Some(n) = args.plain.filter(|&n| n == 0 || n > PLAIN_MAX) {
        return Err(bad(format!(
            "--plain {n}: give 1 to {PLAIN_MAX} plain runs (each runs to the time limit; splitting is what measures an event too rare for plain runs)"
        )));
    }
    if !(2..=50).contains(&args.levels) {
        return Err(bad(format!("--levels {}: give 2 to 50 levels", args.levels)));
    }
    if !(10..=1_000_000).contains(&args.effort) {
        return Err(bad(format!("--effort {}: give 10 to 1,000,000 trials per level", args.effort)));
    }
    let budget = time_budget(&args.time_budget)?;
    if !(2..=1000).contains(&args.repeats) {
        return Err(bad(format!("--repeats {}: give 2 to 1,000 (the relative error needs two or more)", args.repeats)));
    }
    let scenario = Scenario::load(&args.run.scenario, &overrides(&args.run)?)?;
    let variants: Vec<Variant> = scenario.run_variants();
    let within_ns = match &args.within {
        Some(text) => crate::engine::time::parse_duration(text)
            .map_err(|e| bad(format!("--within {text}: {e}; give a duration such as 1h")))?,
        None => scenario.base.horizon,
    };
    if within_ns == 0 {
        return Err(bad("--within 0: give a positive duration, e.g. --within 1h"));
    }
    // Runs stop at the drain limit (2 × horizon by default): a later limit could not be honoured.
    let end = scenario.base.drain_limit;
    if within_ns > end {
        let show = crate::engine::time::duration_words;
        return Err(bad(format!(
            "--within {}: beyond the end of the scenario's runs ({}, its drain_limit), so it could not be honoured; give at most --within {} or lengthen the run (--set drain_limit={})",
            args.within.as_deref().unwrap_or_default(),
            show(end),
            show(end),
            show(within_ns)
        )));
    }
    let rare = RareSpec {
        progress: args.progress.into(),
        levels: levels(args.target, args.levels),
        effort: args.effort,
        within_ns,
        repeats: args.repeats,
    };
    for v in &variants {
        check(&v.spec, &rare).map_err(|e| bad(format!("variant `{}`: {e}", v.name)))?;
    }
    // Saved states: one stage's hits (at most `effort`) plus the next stage's, each a copy of a
    // run; a run's record and state, from the run estimate.
    let threads = args.run.threads.unwrap_or_else(rayon::current_num_threads);
    let mut one = scenario.clone();
    one.replications = 1;
    let per_run = crate::runner::memory::estimate_run(&one, &variants[..1], 1);
    let copies = 2 * u64::from(args.effort) + threads as u64;
    let estimate_bytes = crate::runner::memory::Estimate {
        bytes: per_run.bytes.saturating_mul(copies),
        parts: vec![(format!("{copies} saved runs"), per_run.bytes.saturating_mul(copies))],
        events: per_run.events,
    };
    super::check_memory(&estimate_bytes, &args.run)?;
    let out = args.run.out.clone().unwrap_or_else(|| PathBuf::from("output").join(&scenario.name).join("rare"));
    let claim = super::claim(&out, args.run.force)?;
    for w in &scenario.warnings {
        eprintln!("{}", crate::cli::warning_text(w));
    }
    let pool = crate::runner::thread_pool(args.run.threads);
    // Progress over every trial and plain run, as compare and sweep show theirs.
    let total = variants.len() as u64 * (crate::runner::rare::trials(&rare) + args.plain.unwrap_or(0));
    let mut bar = crate::runner::progress::Progress::new(!args.run.quiet, total);
    if let Some(limit) = budget {
        bar = bar.with_message(format!("time budget {}", crate::engine::time::duration_words(limit.as_nanos() as u64)));
    }
    // The budget counts from here: loading and checking the scenario are not trials.
    let budget = budget.map(Budget::from_now);
    let results: Vec<RareVariant> = pool.install(|| {
        variants
            .iter()
            .map(|v| {
                let (estimate, stopped) =
                    match crate::runner::rare::estimate_counted(&v.spec, scenario.seed, &rare, &bar, budget) {
                        RareOutcome::Done(e) => (Some(e), None),
                        RareOutcome::Stopped(s) => (None, Some(s)),
                    };
                let plain = args.plain.map(|n| {
                    let event = (rare.progress, args.target, within_ns);
                    (crate::runner::rare::plain_counted(&v.spec, scenario.seed, event, n, &bar, budget), n)
                });
                RareVariant {
                    variant: v.name.clone(),
                    estimate,
                    stopped,
                    plain: plain.map(|((hits, ran), _)| (hits, ran)),
                    plain_asked: plain.filter(|((_, ran), n)| ran < n).map(|(_, n)| n),
                }
            })
            .collect()
    });
    bar.finish();
    let file = RareFile {
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        target: args.target,
        within_s: within_ns as f64 / 1e9,
        spec: rare,
        variants: results,
    };
    let mut json = serde_json::to_string_pretty(&file).expect("serialises");
    json.push('\n');
    let path = claim.dir().join("rare.json");
    let written = vec![path.clone()];
    let result = files::write_atomic(&path, json.as_bytes()).and_then(|()| claim.finish(&written));
    if let Err(e) = result {
        return Err(CliError::Failure(files::partial_failure(&e, &claim.abandon(&written))));
    }
    if let Some(s) = file.variants.iter().find_map(|v| v.stopped.as_ref()) {
        let warning = format!(
            "the time budget of {} s was spent before the estimate finished (level {} of {}, repeat {} of {}): rare.json and stdout give a bound, not the estimate; raise --time-budget or lower --effort",
            s.budget_s, s.level_index, s.levels, s.repeat, s.repeats
        );
        eprintln!("{}", crate::cli::warning_text(&warning));
    }
    if !args.run.quiet {
        let width = if args.run.wide { table::WIDE } else { table::WIDTH };
        for line in text(&file).lines() {
            print!("{}", table::fit(line, width));
        }
        println!("wrote rare.json to {}", out.display());
    }
    Ok(())
}

/// `--time-budget`: a positive duration, or `none` (no limit).
fn time_budget(text: &str) -> Result<Option<std::time::Duration>, CliError> {
    if text.trim() == "none" {
        return Ok(None);
    }
    let ns = crate::engine::time::parse_duration(text)
        .map_err(|e| bad(format!("--time-budget {text}: {e}; give a wall time such as 90s or 10m, or none")))?;
    if ns == 0 {
        return Err(bad("--time-budget 0: give a positive wall time, e.g. --time-budget 90s, or none for no limit"));
    }
    Ok(Some(std::time::Duration::from_nanos(ns)))
}

/// The lines of a variant the time budget stopped: where, why, and the bound that is left.
fn stopped_text(variant: &str, target: u64, s: &RareStopped) -> String {
    let reached = match (s.reached, s.p_reached) {
        (Some(level), Some(p)) => format!(
            "every started repeat finished level {level}, reached with p ≈ {p:.3e} — an estimate of reaching {level}, not {target}"
        ),
        (Some(_) | None, _) => "no level was finished by every started repeat".to_string(),
    };
    let bound = if s.p_upper95 < 1.0 {
        format!("p({target}) < {:.1e} at 95% ({})", s.p_upper95, s.bound)
    } else {
        "no bound below 1".to_string()
    };
    format!(
        "  {variant}: NOT ESTIMATED: stopped after {} s (--time-budget) at level {} of {} ({}) in repeat {} of {}; {reached}; {bound}; raise --time-budget or lower --effort. Stopped by wall time: not reproducible\n",
        s.budget_s, s.level_index, s.levels, s.level, s.repeat, s.repeats
    )
}

fn text(file: &RareFile) -> String {
    let progress = match file.spec.progress {
        ProgressFn::Backlog => "hop 0's backlog",
        ProgressFn::RetriesPending => "retries pending",
    };
    let mut out = format!(
        "{}: P({progress} reaches {} within {} s), multilevel splitting at levels {:?}, {} trials per level, {} repeats, seed {}\n",
        file.scenario, file.target, file.within_s, file.spec.levels, file.spec.effort, file.spec.repeats, file.seed
    );
    for v in &file.variants {
        if let Some(s) = &v.stopped {
            out.push_str(&stopped_text(&v.variant, file.target, s));
        }
        let Some(e) = &v.estimate else {
            plain_text(&mut out, v);
            continue;
        };
        let re = e.relative_error.map_or("n/a".to_string(), |r| format!("{:.0}%", r * 100.0));
        let ci = e.p_ci95.map_or(String::new(), |[lo, hi]| format!(", 95% interval {lo:.3e} – {hi:.3e}"));
        let stages: Vec<String> = e
            .stages
            .iter()
            .map(|s| {
                let share = if s.trials > 0 { f64::from(s.hits) / f64::from(s.trials) } else { 0.0 };
                format!("{}: {share:.3}", s.level)
            })
            .collect();
        match e.p_upper95 {
            Some(upper) => {
                let tried: u64 = e.stages.iter().map(|s| u64::from(s.trials)).sum();
                let stuck = match e.stages.iter().position(|s| s.hits == 0) {
                    Some(i) => {
                        let s = &e.stages[i];
                        format!(
                            "level {} of {} ({}) was not progressing: none of its {} trials reached it, so no later level was tried",
                            i + 1,
                            e.stages.len(),
                            s.level,
                            s.trials
                        )
                    }
                    None => format!("each repeat stopped at some level; {tried} trials in all"),
                };
                out.push_str(&format!(
                    "  {}: not seen: no repeat reached {}; {stuck}; p < {upper:.1e} at 95% (exact one-sided bound for the effort made), the effort was too small to measure it: raise --effort or --levels (or lower --target); per level {}\n",
                    v.variant,
                    file.target,
                    stages.join(", ")
                ));
            }
            None => out.push_str(&format!(
                "  {}: p = {:.3e} (relative error {re}{ci}); per level {}\n",
                v.variant,
                e.p,
                stages.join(", ")
            )),
        }
        plain_text(&mut out, v);
    }
    out
}

/// The plain replication line of `v`, if it ran any.
fn plain_text(out: &mut String, v: &RareVariant) {
    let Some((hits, runs)) = v.plain else {
        return;
    };
    let short = v.plain_asked.map_or(String::new(), |n| format!(" (the time budget stopped it: {runs} of {n} asked)"));
    if hits == 0 {
        out.push_str(&format!(
            "    plain replication: 0 of {runs} runs (p < {:.1e} at 95%, exact one-sided){short}\n",
            crate::runner::rare::zero_hits_upper95(runs)
        ));
    } else {
        out.push_str(&format!(
            "    plain replication: {hits} of {runs} runs ({:.3e}){short}\n",
            hits as f64 / runs as f64
        ));
    }
}
