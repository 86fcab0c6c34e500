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
//!
//! A wall-clock [`Budget`] can end an estimate early: a trial is not started once it is spent,
//! a level some of whose trials were not run is unfinished, and what is left is a bound
//! ([`RareStopped`]), never the target's estimate. A budget never reached changes nothing.

use super::progress::Progress;
use crate::engine::Nanos;
use crate::model::sim::split::{branchable, ProgressFn, Stopped};
use crate::model::sim::Simulation;
use crate::model::SimSpec;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

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

/// A wall-clock limit on an estimate, checked before each trial starts (a clock read).
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// When the work began.
    pub started: Instant,
    /// How long it may take.
    pub limit: Duration,
}

impl Budget {
    /// A budget of `limit` from now.
    pub fn from_now(limit: Duration) -> Budget {
        Budget { started: Instant::now(), limit }
    }

    fn spent(&self) -> bool {
        self.started.elapsed() >= self.limit
    }
}

/// One splitting run: its estimate, its stages (the last one partial when the budget ended it),
/// the events it took, and how many stages it finished (all of them unless the budget was spent).
struct Run {
    p: f64,
    stages: Vec<Stage>,
    events: u64,
    finished: usize,
}

/// One stage's trials: a trial not run (the budget was spent) is `None`; a run one gives its
/// state when it reached the level, and its events.
fn stage_trials<'a>(
    effort: u32,
    budget: Option<&Budget>,
    trial: impl Fn(u32) -> (Option<Simulation<'a>>, u64) + Sync + Send,
) -> Vec<Option<(Option<Simulation<'a>>, u64)>> {
    (0..effort).into_par_iter().map(|i| (!budget.is_some_and(Budget::spent)).then(|| trial(i))).collect()
}

fn split_once(
    spec: &SimSpec,
    seed: u64,
    rare: &RareSpec,
    repeat: u32,
    progress: &Progress,
    budget: Option<&Budget>,
) -> Run {
    let mut run = Run { p: 1.0, stages: Vec::new(), events: 0, finished: 0 };
    let mut hits: Vec<Simulation> = Vec::new();
    for (k, &level) in rare.levels.iter().enumerate() {
        if k > 0 && hits.is_empty() {
            // Nothing to start from: the stage is skipped (finished, with no trial).
            run.stages.push(Stage { level, trials: 0, hits: 0 });
            run.finished += 1;
            progress.inc_by(u64::from(rare.effort));
            continue;
        }
        let outcomes = if k == 0 {
            // Stage 0 from the start: fresh replications (distinct across repeats).
            let first = u64::from(repeat) * u64::from(rare.effort);
            stage_trials(rare.effort, budget, |i| {
                let mut sim = Simulation::new(spec, seed, first + u64::from(i));
                sim.begin();
                let stopped = sim.run_until(rare.progress, level, rare.within_ns);
                let events = sim.events();
                progress.inc();
                ((stopped == Stopped::Level).then_some(sim), events)
            })
        } else {
            let starts = &hits;
            stage_trials(rare.effort, budget, |i| {
                let mut sim = starts[i as usize % starts.len()].clone();
                let before = sim.events();
                sim.reseed(key(repeat, k, i));
                let stopped = sim.run_until(rare.progress, level, rare.within_ns);
                let events = sim.events() - before;
                progress.inc();
                ((stopped == Stopped::Level).then_some(sim), events)
            })
        };
        let mut next = Vec::new();
        let mut trials = 0;
        for (sim, e) in outcomes.into_iter().flatten() {
            trials += 1;
            run.events += e;
            next.extend(sim);
        }
        run.stages.push(Stage { level, trials, hits: next.len() as u32 });
        if trials < rare.effort {
            return run;
        }
        run.finished += 1;
        run.p *= next.len() as f64 / f64::from(rare.effort);
        hits = next;
    }
    run
}

/// Estimates the probability of `rare`'s event for `spec` (already [`check`]ed).
pub fn estimate(spec: &SimSpec, seed: u64, rare: &RareSpec) -> RareEstimate {
    match estimate_counted(spec, seed, rare, &Progress::new(false, 0), None) {
        RareOutcome::Done(e) => e,
        RareOutcome::Stopped(s) => unreachable!("no budget, yet stopped at level {}", s.level),
    }
}

/// Trials [`estimate`] runs at most: every stage's of every repeat (a stage skipped because the
/// one before had no hit counts as run).
pub fn trials(rare: &RareSpec) -> u64 {
    u64::from(rare.repeats) * rare.levels.len() as u64 * u64::from(rare.effort)
}

/// What an estimate stopped by its [`Budget`] can still say: a bound, not the target's estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RareStopped {
    /// Why it stopped, in words (a wall-clock budget: not reproducible).
    pub reason: String,
    /// The budget, seconds.
    pub budget_s: f64,
    /// The level (1-based, of `levels`) a trial of which was not run, and its value.
    pub level_index: usize,
    /// That level's value.
    pub level: u64,
    /// Levels in all.
    pub levels: usize,
    /// The repeat (1-based) it stopped in; later repeats were not started.
    pub repeat: u32,
    /// Repeats asked for.
    pub repeats: u32,
    /// The last level every started repeat finished (`None`: none).
    pub reached: Option<u64>,
    /// The estimate of P(the progress function reaches `reached` in time): the started repeats'
    /// mean product of the hit shares of the levels up to it. The target is at least as hard to
    /// reach, so this estimates an upper bound on its probability, not the probability.
    pub p_reached: Option<f64>,
    /// A one-sided 95% upper bound on the target's probability (see [`stopped_bound`]).
    pub p_upper95: f64,
    /// How `p_upper95` was found.
    pub bound: String,
    /// Per started repeat: its product of the hit shares up to `reached`.
    pub repeat_p_reached: Vec<f64>,
    /// Per level, summed over the started repeats: the trials run and their hits (the stopped
    /// level's trials are those run before the budget was spent).
    pub stages: Vec<Stage>,
    /// Events simulated over every trial run.
    pub events: u64,
}

/// An estimate, or what is left of one its budget stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum RareOutcome {
    /// Every level of every repeat finished.
    Done(RareEstimate),
    /// The budget was spent first.
    Stopped(Box<RareStopped>),
}

/// [`estimate`], counting each trial on `progress` and starting no trial once `budget` is spent.
/// With a budget never reached the outcome is [`RareOutcome::Done`] and equals [`estimate`]'s.
pub fn estimate_counted(
    spec: &SimSpec,
    seed: u64,
    rare: &RareSpec,
    progress: &Progress,
    budget: Option<Budget>,
) -> RareOutcome {
    let mut runs: Vec<Run> = Vec::new();
    for r in 0..rare.repeats {
        let run = split_once(spec, seed, rare, r, progress, budget.as_ref());
        let stopped = run.finished < rare.levels.len();
        runs.push(run);
        if stopped {
            let limit = budget.map_or(0.0, |b| b.limit.as_secs_f64());
            return RareOutcome::Stopped(Box::new(stopped_at(rare, &runs, limit)));
        }
    }
    let repeat_p: Vec<f64> = runs.iter().map(|r| r.p).collect();
    let (p, sd) = crate::metrics::stats::mean_sd(&repeat_p);
    let n = repeat_p.len() as f64;
    let se = (repeat_p.len() > 1).then(|| sd / n.sqrt());
    let relative_error = se.filter(|_| p > 0.0).map(|se| se / p);
    let p_ci95 = se.filter(|_| p > 0.0).map(|se| [(p - 1.96 * se).max(0.0), p + 1.96 * se]);
    let stages = pooled(rare, &runs);
    let events = runs.iter().map(|r| r.events).sum();
    let p_upper95 = (p == 0.0).then(|| zero_hit_bound(&stages));
    RareOutcome::Done(RareEstimate { p, relative_error, p_ci95, p_upper95, repeat_p, stages, events })
}

/// Per level, the trials and hits of `runs` summed.
fn pooled(rare: &RareSpec, runs: &[Run]) -> Vec<Stage> {
    let mut stages: Vec<Stage> = rare.levels.iter().map(|&level| Stage { level, trials: 0, hits: 0 }).collect();
    for run in runs {
        for (total, stage) in stages.iter_mut().zip(&run.stages) {
            total.trials += stage.trials;
            total.hits += stage.hits;
        }
    }
    stages
}

/// What `runs` (the last one stopped by a budget of `budget_s`) say: [`stopped_bound`].
fn stopped_at(rare: &RareSpec, runs: &[Run], budget_s: f64) -> RareStopped {
    let last = runs.last().expect("a run stopped");
    let finished = last.finished;
    let stages = pooled(rare, runs);
    // Every started repeat finished the levels before the stopped repeat's stopped level.
    let repeat_p_reached: Vec<f64> =
        runs.iter().map(|run| run.stages[..finished].iter().map(|s| share(s, rare.effort)).product()).collect();
    let first: Vec<&Stage> = runs.iter().filter(|run| run.finished > 0).map(|run| &run.stages[0]).collect();
    let first_trials: u64 = first.iter().map(|s| u64::from(s.trials)).sum();
    let first_hits: u64 = first.iter().map(|s| u64::from(s.hits)).sum();
    let (p_upper95, bound) = stopped_bound(&repeat_p_reached, &stages[..finished], (first_hits, first_trials));
    RareStopped {
        reason: format!(
            "the time budget of {budget_s} s was spent: no trial starts after it, so where it stops depends on the machine's speed and load (not reproducible)"
        ),
        budget_s,
        level_index: finished + 1,
        level: rare.levels[finished],
        levels: rare.levels.len(),
        repeat: runs.len() as u32,
        repeats: rare.repeats,
        reached: finished.checked_sub(1).map(|i| rare.levels[i]),
        p_reached: (finished > 0).then(|| crate::metrics::stats::mean_sd(&repeat_p_reached).0),
        p_upper95,
        bound,
        repeat_p_reached,
        stages,
        events: runs.iter().map(|r| r.events).sum(),
    }
}

/// A finished stage's hit share of `effort` trials (a skipped stage: 0).
fn share(stage: &Stage, effort: u32) -> f64 {
    f64::from(stage.hits) / f64::from(effort)
}

/// A one-sided 95% upper bound on the target's probability after a stopped estimate, and how it
/// was found. `repeat_p` are the started repeats' estimates of reaching the last level they all
/// finished, `finished` those levels pooled, and `first` the hits and trials of every finished
/// first level (fresh, independent replications). Reaching the target needs reaching every
/// level below it, so a bound on reaching a lower level bounds the target too:
/// - two or more repeats and a level all finished: their mean + 1.645 standard errors (the
///   normal approximation the 95% interval uses); their mean is 0: [`zero_hit_bound`];
/// - else the exact (Clopper–Pearson) bound on the first level's share from its trials;
/// - no first level finished: 1 (nothing was measured).
pub fn stopped_bound(repeat_p: &[f64], finished: &[Stage], (hits, trials): (u64, u64)) -> (f64, String) {
    if !finished.is_empty() && repeat_p.len() > 1 {
        let (p, sd) = crate::metrics::stats::mean_sd(repeat_p);
        if p == 0.0 {
            return (zero_hit_bound(finished), "zero-hit bound of the levels finished".into());
        }
        let upper = (p + 1.645 * sd / (repeat_p.len() as f64).sqrt()).min(1.0);
        return (upper, format!("mean of {} repeats + 1.645 standard errors", repeat_p.len()));
    }
    if trials == 0 {
        return (1.0, "nothing measured".into());
    }
    (binomial_upper95(hits, trials), format!("exact bound of the first level's {hits} of {trials}"))
}

/// The exact one-sided 95% upper bound on a probability after `hits` of `n` independent trials
/// (Clopper–Pearson): the p at which P(at most `hits` of n) = 0.05, the 95% quantile of
/// Beta(hits + 1, n − hits) (statrs' inverse regularized incomplete beta).
pub fn binomial_upper95(hits: u64, n: u64) -> f64 {
    if hits >= n {
        return 1.0;
    }
    if hits == 0 {
        return zero_hits_upper95(n);
    }
    statrs::function::beta::inv_beta_reg((hits + 1) as f64, (n - hits) as f64, 0.95)
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
    plain_counted(spec, seed, (progress, target, within), runs, &Progress::new(false, 0), None).0
}

/// [`plain`], counting each run on `bar` and starting no run once `budget` is spent: the hits
/// and the runs run.
pub fn plain_counted(
    spec: &SimSpec,
    seed: u64,
    (progress, target, within): (ProgressFn, u64, Nanos),
    runs: u64,
    bar: &Progress,
    budget: Option<Budget>,
) -> (u64, u64) {
    (0..runs)
        .into_par_iter()
        .map(|r| {
            if budget.is_some_and(|b| b.spent()) {
                return (0, 0);
            }
            let mut sim = Simulation::new(spec, seed, 1_000_000_000 + r);
            sim.begin();
            let hit = sim.run_until(progress, target, within) == Stopped::Level;
            bar.inc();
            (u64::from(hit), 1)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P(X ≤ k) for X ~ Binomial(n, p), summed term by term (small n: no underflow).
    fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
        let mut term = (1.0 - p).powi(n as i32);
        let mut sum = term;
        for i in 0..k {
            term *= (n - i) as f64 / (i + 1) as f64 * p / (1.0 - p);
            sum += term;
        }
        sum
    }

    #[test]
    fn the_exact_binomial_bound_solves_its_equation() {
        // 1 of 10: the Clopper–Pearson one-sided 95% upper bound is 0.3942 (the upper end of the
        // two-sided 90% interval 0.0051–0.3942 in the tables).
        let b = binomial_upper95(1, 10);
        assert!((b - 0.3942).abs() < 5e-5, "{b}");
        for (k, n) in [(1, 10), (5, 200), (30, 100), (60, 100)] {
            let b = binomial_upper95(k, n);
            assert!((binomial_cdf(k, n, b) - 0.05).abs() < 1e-9, "{k} of {n}: {b}");
            assert!(b > k as f64 / n as f64 && b < 1.0, "{k} of {n}: {b}");
        }
        assert_eq!(binomial_upper95(0, 40), zero_hits_upper95(40));
        assert_eq!(binomial_upper95(7, 7), 1.0);
        // Large n (the sum in logs): near k/n + 1.645 √(p(1−p)/n) for k = 10,000 of 10⁶.
        let b = binomial_upper95(10_000, 1_000_000);
        let normal = 0.01 + 1.645 * (0.01f64 * 0.99 / 1e6).sqrt();
        assert!((b - normal).abs() < 5e-5, "{b} against {normal}");
    }

    fn stage(level: u64, trials: u32, hits: u32) -> Stage {
        Stage { level, trials, hits }
    }

    #[test]
    fn a_stopped_estimate_bounds_the_last_level_every_repeat_finished() {
        let rare =
            RareSpec { progress: ProgressFn::Backlog, levels: vec![10, 20, 30], effort: 100, within_ns: 1, repeats: 8 };
        let full = |a: u32, b: u32, c: u32| Run {
            p: f64::from(a * b * c) / 1e6,
            stages: vec![stage(10, 100, a), stage(20, 100, b), stage(30, 100, c)],
            events: 5,
            finished: 3,
        };
        // Two whole repeats, the third stopped in its second level after 40 trials.
        let partial = Run { p: 0.3, stages: vec![stage(10, 100, 30), stage(20, 40, 4)], events: 2, finished: 1 };
        let s = stopped_at(&rare, &[full(20, 10, 5), full(40, 20, 10), partial], 90.0);
        assert_eq!((s.level_index, s.level, s.levels, s.repeat, s.repeats), (2, 20, 3, 3, 8));
        assert_eq!(s.reached, Some(10));
        assert_eq!(s.repeat_p_reached, vec![0.2, 0.4, 0.3]);
        let p = 0.3;
        assert!((s.p_reached.expect("a level reached") - p).abs() < 1e-12);
        // sd of 0.2, 0.4, 0.3 is 0.1: the bound is 0.3 + 1.645 × 0.1 / √3.
        assert!((s.p_upper95 - (p + 1.645 * 0.1 / 3f64.sqrt())).abs() < 1e-12, "{}", s.p_upper95);
        assert_eq!(s.stages, vec![stage(10, 300, 90), stage(20, 240, 34), stage(30, 200, 15)]);
        assert_eq!(s.events, 12);
        assert!(s.reason.contains("not reproducible"), "{}", s.reason);

        // Stopped inside the first repeat after one level: the exact bound of its first level.
        let partial = Run { p: 0.3, stages: vec![stage(10, 100, 30), stage(20, 3, 0)], events: 2, finished: 1 };
        let s = stopped_at(&rare, &[partial], 90.0);
        assert_eq!((s.level_index, s.repeat, s.reached), (2, 1, Some(10)));
        assert_eq!(s.p_upper95, binomial_upper95(30, 100));

        // Stopped before any level was finished: nothing measured.
        let partial = Run { p: 1.0, stages: vec![stage(10, 2, 1)], events: 2, finished: 0 };
        let s = stopped_at(&rare, &[partial], 0.001);
        assert_eq!((s.level_index, s.reached, s.p_reached, s.p_upper95), (1, None, None, 1.0));
    }

    fn chain() -> SimSpec {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/rare-ctmc.toml"))
            .expect("fixture");
        crate::scenario::Scenario::from_source("rare-ctmc.toml", &text, &[]).expect("a valid scenario").base
    }

    #[test]
    fn a_spent_budget_stops_at_once_and_an_unspent_one_changes_nothing() {
        let spec = chain();
        let rare = RareSpec {
            progress: ProgressFn::Backlog,
            levels: vec![4, 8, 12],
            effort: 50,
            within_ns: 20_000_000_000,
            repeats: 2,
        };
        let bar = Progress::new(false, 0);
        let spent = Budget::from_now(Duration::ZERO);
        let RareOutcome::Stopped(s) = estimate_counted(&spec, 11, &rare, &bar, Some(spent)) else {
            panic!("a spent budget runs no trial");
        };
        assert_eq!((s.level_index, s.repeat, s.events, s.p_upper95), (1, 1, 0, 1.0));
        let ample = Budget::from_now(Duration::from_secs(1_000_000));
        assert_eq!(
            estimate_counted(&spec, 11, &rare, &bar, Some(ample)),
            RareOutcome::Done(estimate(&spec, 11, &rare))
        );
        let spent = Some(Budget::from_now(Duration::ZERO));
        assert_eq!(plain_counted(&spec, 11, (ProgressFn::Backlog, 12, rare.within_ns), 30, &bar, spent), (0, 0));
        let ample = Some(ample);
        let (_, runs) = plain_counted(&spec, 11, (ProgressFn::Backlog, 12, rare.within_ns), 30, &bar, ample);
        assert_eq!(runs, 30);
    }
}
