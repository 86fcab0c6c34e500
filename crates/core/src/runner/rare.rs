//! Rare events by fixed-effort multilevel splitting (docs/MODEL.md, "Rare events").
//!
//! The event: a progress function (hop 0's backlog, or the retries waiting on a timer) reaches
//! `target` before `within`, starting from the run's start. Levels `l₁ < l₂ < … < l_m = target`
//! split the path: stage 0 runs `effort` fresh replications until each reaches `l₁` (a hit,
//! whose state is saved) or the time limit; stage k starts `effort` trials from the hits of stage
//! k − 1 (taken in turn), each a copy of a saved state with its own random numbers
//! ([`Simulation::reseed`]), run until `l_{k+1}` or the time limit. The estimate is the product of
//! the stages' hit shares, unbiased for fixed effort. Its relative error comes from `repeats`
//! independent splitting runs (their standard error over their mean), so no independence between
//! stages is assumed.

use super::progress::Progress;
use crate::engine::Nanos;
use crate::model::sim::split::{branchable, ProgressFn, Stopped};
use crate::model::sim::Simulation;
use crate::model::SimSpec;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// What to estimate and how hard to try.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RareSpec {
    /// The progress function.
    pub progress: ProgressFn,
    /// Levels, increasing; the last is the target.
    pub levels: Vec<u64>,
    /// Trials per stage.
    pub effort: u32,
    /// The time limit (ns from the run's start).
    pub within_ns: Nanos,
    /// Independent splitting runs (for the relative error).
    pub repeats: u32,
}

/// One stage of one splitting run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stage {
    /// The level this stage tried to reach.
    pub level: u64,
    /// Trials run.
    pub trials: u32,
    /// Trials that reached the level in time.
    pub hits: u32,
}

/// The estimate of a variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RareEstimate {
    /// Mean of the repeats' estimates.
    pub p: f64,
    /// Standard error of `p` over the repeats ÷ `p` (None when `p` is 0 or there is one repeat).
    pub relative_error: Option<f64>,
    /// A 95% interval, `p` ± 1.96 standard errors (the lower end at least 0); `None` when `p`
    /// is 0 (no repeat saw the event: a 0–0 interval would claim a certainty the effort does
    /// not give; `p_upper95` bounds it instead).
    pub p_ci95: Option<[f64; 2]>,
    /// When `p` is 0: a one-sided 95% upper bound for the effort made ([`zero_hit_bound`]).
    pub p_upper95: Option<f64>,
    /// Per repeat: its estimate.
    pub repeat_p: Vec<f64>,
    /// Per stage, summed over the repeats: trials and hits (their ratio is the stage's
    /// conditional probability).
    pub stages: Vec<Stage>,
    /// Events simulated over every trial.
    pub events: u64,
}

/// Refuses a spec that cannot be split, or levels that do not increase.
pub fn check(spec: &SimSpec, rare: &RareSpec) -> Result<(), String> {
    branchable(spec)?;
    if rare.levels.is_empty() || rare.levels.windows(2).any(|w| w[0] >= w[1]) || rare.levels[0] == 0 {
        return Err(format!("levels {:?}: give increasing levels above 0", rare.levels));
    }
    if rare.effort == 0 || rare.repeats == 0 {
        return Err("effort and repeats must be at least 1".into());
    }
    Ok(())
}

/// A key for trial `trial` of stage `stage` of repeat `repeat` (distinct for distinct triples).
fn key(repeat: u32, stage: usize, trial: u32) -> u64 {
    (u64::from(repeat) << 40) ^ ((stage as u64) << 32) ^ u64::from(trial)
}

/// One splitting run: its estimate, its stages, and the events it took.
fn split_once(spec: &SimSpec, seed: u64, rare: &RareSpec, repeat: u32, progress: &Progress) -> (f64, Vec<Stage>, u64) {
    let mut stages = Vec::new();
    let mut events = 0u64;
    let mut p = 1.0;
    // Stage 0 from the start: fresh replications (distinct across repeats).
    let first = u64::from(repeat) * u64::from(rare.effort);
    let outcomes: Vec<(Option<Simulation>, u64)> = (0..rare.effort)
        .into_par_iter()
        .map(|i| {
            let mut sim = Simulation::new(spec, seed, first + u64::from(i));
            sim.begin();
            let stopped = sim.run_until(rare.progress, rare.levels[0], rare.within_ns);
            let events = sim.events();
            progress.inc();
            ((stopped == Stopped::Level).then_some(sim), events)
        })
        .collect();
    let mut hits: Vec<Simulation> = Vec::new();
    for (sim, e) in outcomes {
        events += e;
        hits.extend(sim);
    }
    stages.push(Stage { level: rare.levels[0], trials: rare.effort, hits: hits.len() as u32 });
    p *= hits.len() as f64 / f64::from(rare.effort);
    for (k, &level) in rare.levels.iter().enumerate().skip(1) {
        if hits.is_empty() {
            stages.push(Stage { level, trials: 0, hits: 0 });
            progress.inc_by(u64::from(rare.effort));
            continue;
        }
        let starts = &hits;
        let outcomes: Vec<(Option<Simulation>, u64)> = (0..rare.effort)
            .into_par_iter()
            .map(|i| {
                let mut sim = starts[i as usize % starts.len()].clone();
                let before = sim.events();
                sim.reseed(key(repeat, k, i));
                let stopped = sim.run_until(rare.progress, level, rare.within_ns);
                let events = sim.events() - before;
                progress.inc();
                ((stopped == Stopped::Level).then_some(sim), events)
            })
            .collect();
        let mut next = Vec::new();
        for (sim, e) in outcomes {
            events += e;
            next.extend(sim);
        }
        stages.push(Stage { level, trials: rare.effort, hits: next.len() as u32 });
        p *= next.len() as f64 / f64::from(rare.effort);
        hits = next;
    }
    (p, stages, events)
}

/// Estimates the probability of `rare`'s event for `spec` (already [`check`]ed).
pub fn estimate(spec: &SimSpec, seed: u64, rare: &RareSpec) -> RareEstimate {
    estimate_counted(spec, seed, rare, &Progress::new(false, 0))
}

/// Trials [`estimate`] runs at most: every stage's of every repeat (a stage skipped because the
/// one before had no hit counts as run).
pub fn trials(rare: &RareSpec) -> u64 {
    u64::from(rare.repeats) * rare.levels.len() as u64 * u64::from(rare.effort)
}

/// [`estimate`], counting each trial on `progress`.
pub fn estimate_counted(spec: &SimSpec, seed: u64, rare: &RareSpec, progress: &Progress) -> RareEstimate {
    let runs: Vec<(f64, Vec<Stage>, u64)> =
        (0..rare.repeats).map(|r| split_once(spec, seed, rare, r, progress)).collect();
    let repeat_p: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let (p, sd) = crate::metrics::stats::mean_sd(&repeat_p);
    let n = repeat_p.len() as f64;
    let se = (repeat_p.len() > 1).then(|| sd / n.sqrt());
    let relative_error = se.filter(|_| p > 0.0).map(|se| se / p);
    let p_ci95 = se.filter(|_| p > 0.0).map(|se| [(p - 1.96 * se).max(0.0), p + 1.96 * se]);
    let mut stages: Vec<Stage> = rare.levels.iter().map(|&level| Stage { level, trials: 0, hits: 0 }).collect();
    for (_, s, _) in &runs {
        for (total, stage) in stages.iter_mut().zip(s) {
            total.trials += stage.trials;
            total.hits += stage.hits;
        }
    }
    let events = runs.iter().map(|r| r.2).sum();
    let p_upper95 = (p == 0.0).then(|| zero_hit_bound(&stages));
    RareEstimate { p, relative_error, p_ci95, p_upper95, repeat_p, stages, events }
}

/// The exact one-sided 95% upper bound on a probability after `n` trials with no hit:
/// 1 − 0.05^(1/n) (Clopper–Pearson; ≈ 3 ÷ n, the rule of three, for large n).
pub fn zero_hits_upper95(n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    1.0 - 0.05f64.powf(1.0 / n as f64)
}

/// An upper bound on the event's probability when no repeat saw it, from the stages pooled over
/// the repeats: the pooled hit shares of the stages before the first one with no hit at all,
/// times that stage's exact zero-hit bound for its trials (the later stages' shares are at most
/// 1). The stages before enter at their estimates, so it is the bound of the stage that saw
/// nothing, scaled by the estimated chance of reaching it. When every stage saw a hit somewhere
/// (each repeat died at a different level), the pooled product itself.
pub fn zero_hit_bound(stages: &[Stage]) -> f64 {
    let mut bound = 1.0;
    for s in stages {
        if s.hits == 0 {
            return bound * zero_hits_upper95(u64::from(s.trials));
        }
        bound *= f64::from(s.hits) / f64::from(s.trials);
    }
    bound
}

/// Plain replication of the same event: how many of `runs` fresh replications (numbered from
/// 10⁹, apart from the splitting's) see the progress function reach `target` within the limit.
pub fn plain(spec: &SimSpec, seed: u64, progress: ProgressFn, target: u64, within: Nanos, runs: u64) -> u64 {
    plain_counted(spec, seed, (progress, target, within), runs, &Progress::new(false, 0))
}

/// [`plain`], counting each run on `bar`.
pub fn plain_counted(
    spec: &SimSpec,
    seed: u64,
    (progress, target, within): (ProgressFn, u64, Nanos),
    runs: u64,
    bar: &Progress,
) -> u64 {
    (0..runs)
        .into_par_iter()
        .filter(|&r| {
            let mut sim = Simulation::new(spec, seed, 1_000_000_000 + r);
            sim.begin();
            let hit = sim.run_until(progress, target, within) == Stopped::Level;
            bar.inc();
            hit
        })
        .count() as u64
}
