//! Retry-budget calculator: how many attempts fit a provider's retry window, and the TTL after it.
//!
//! Reproduces the retry-budget guide's `RetryBudget.schedule` in integer nanoseconds, so
//! `sum(delays) + attempts × attempt_timeout ≤ window < window + margin = TTL` (never jittered).
//! The delays are the simulator's own ([`RetryPolicy::delay_before_retry`]): attempt n waits the
//! delay the simulator draws before retry n, with every jitter strategy of docs/MODEL.md under the
//! same name. Portable random rule (the guide's algorithm, not Python's Mersenne Twister values):
//! one `ChaCha8Rng::seed_from_u64(seed)` per schedule, read by the strategy as the simulator reads
//! its stream (one `f64` draw per delay for full, equal and proportional jitter).
//!
//! A jittered schedule shows what one seed's draws fit; configured as `max_attempts`, its count
//! meets fresh draws, whose worst case (every delay at its upper bound) can overrun the window. So
//! the report also gives the count whose worst case always fits, and the invariant is judged on it.

use std::collections::BTreeMap;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::engine::Nanos;
use crate::model::{Jitter, JitterState, RetryPolicy};

/// More attempts than this in one schedule means a runaway configuration.
pub const ATTEMPTS_MAX: usize = 100_000;
/// Longest hop chain a window is split across.
pub const HOPS_MAX: u32 = 64;
/// Most seeds the attempts distribution is computed over.
pub const SEEDS_MAX: u32 = 100_000;

/// What the calculator's fallible functions return.
pub type BudgetResult<T> = Result<T, BudgetError>;

/// Calculator inputs: `window_ns` is `--window`, …, `seeds_for_distribution` `--seeds`; hop i gets
/// floor(window / shrink^i) and the distribution spans seeds `seed`, `seed + 1`, … Start from
/// [`BudgetConfig::guide_defaults`]. Serialized with durations as [`Span`]s, without `_ns`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetConfig {
    /// The provider's retry window of hop 0 (`--window`), ns.
    #[serde(rename = "window", serialize_with = "span")]
    pub window_ns: u64,
    /// The first retry's delay before jitter (`--base`), ns.
    #[serde(rename = "base", serialize_with = "span")]
    pub base_ns: u64,
    /// Each delay is the one before times this (`--multiplier`, ≥ 1).
    pub multiplier: f64,
    /// No delay exceeds this (`--cap`), ns.
    #[serde(rename = "cap", serialize_with = "span")]
    pub cap_ns: u64,
    /// Each attempt may take this long before the next delay starts (`--attempt-timeout`), ns.
    #[serde(rename = "attempt_timeout", serialize_with = "span")]
    pub attempt_timeout_ns: u64,
    /// The idempotency TTL is the window plus this (`--margin`), ns.
    #[serde(rename = "margin", serialize_with = "span")]
    pub margin_ns: u64,
    /// The delay strategy, as in a scenario policy (`full` is the guide's choice).
    #[serde(serialize_with = "jitter_text")]
    pub jitter: Jitter,
    /// The seed of the jittered schedule shown (`--seed`).
    pub seed: u64,
    /// Hops in the chain, each with a window `shrink` times smaller than its caller's (`--hops`).
    pub hops: u32,
    /// How much smaller each inner hop's window is (`--shrink`, > 1).
    pub shrink: f64,
    /// Seeds the attempts distribution spans (`--seeds`).
    pub seeds_for_distribution: u32,
}

/// A configuration the calculator refuses; the message names the flag, the value and the fix.
/// Fields: the values (ns), the first hop with a 0 window, a runaway schedule's window and seed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// Neither delays nor timeouts advance time: the schedule would never end.
    #[error("--base 0s and --attempt-timeout 0s: the schedule would never end; set either > 0")]
    ZeroProgress,
    /// Un-jittered immediate retries with no timeout: the schedule would never end.
    #[error("--jitter none retries at once, so with --attempt-timeout 0s the schedule would never end; set --attempt-timeout > 0")]
    ZeroProgressImmediate,
    /// A multiplier that is not finite or is below 1.
    #[error("--multiplier {0}: must be finite and >= 1 (delays never shrink); e.g. --multiplier 2")]
    Multiplier(f64),
    /// A cap below the base delay (cap, base).
    #[error("--cap {} is below --base {}: raise --cap or lower --base", human(.0), human(.1))]
    CapBelowBase(u64, u64),
    /// A hop count outside 1..=HOPS_MAX.
    #[error("--hops {0}: must be between 1 (no chain) and {HOPS_MAX}")]
    Hops(u32),
    /// A shrink factor that is not finite or not above 1.
    #[error("--shrink {0}: must be finite and > 1 so inner hops get smaller windows; e.g. 3")]
    Shrink(f64),
    /// A seed count outside 1..=SEEDS_MAX.
    #[error("--seeds {0}: the attempts distribution needs between 1 and {SEEDS_MAX} seeds")]
    Seeds(u32),
    /// Window plus margin overflows u64 nanoseconds (window, margin).
    #[error("--window {} + --margin {} overflows the TTL; shorten them", human(.0), human(.1))]
    TtlOverflow(u64, u64),
    /// An inner hop whose window rounds to 0 (the configuration, that hop).
    #[error(
        "--hops {}: hop {} of --window {} gets 0s, so hop {} cannot be smaller; use fewer --hops",
        .0.hops, .1, human(&.0.window_ns), .1 + 1
    )]
    HopWindowZero(Box<BudgetConfig>, u32),
    /// More than ATTEMPTS_MAX attempts fit the window (the configuration, the window, the seed).
    #[error(
        "more than {ATTEMPTS_MAX} attempts fit a {} window with --base {}, --multiplier {}, --cap \
         {}, --attempt-timeout {} (seed {}); raise --base or --attempt-timeout",
        human(.1), human(&.0.base_ns), .0.multiplier,
        human(&.0.cap_ns), human(&.0.attempt_timeout_ns), .2
    )]
    AttemptLimit(Box<BudgetConfig>, u64, u64),
}

impl BudgetConfig {
    /// The guide's example: base 2s, ×2, cap 1h, timeout 30s, margin 6h, full jitter, seed 7.
    pub fn guide_defaults(window_ns: u64) -> Self {
        const S: u64 = 1_000_000_000;
        Self {
            window_ns,
            base_ns: 2 * S,
            multiplier: 2.0,
            cap_ns: 3600 * S,
            attempt_timeout_ns: 30 * S,
            margin_ns: 6 * 3600 * S,
            jitter: Jitter::Full,
            seed: 7,
            hops: 1,
            shrink: 3.0,
            seeds_for_distribution: 200,
        }
    }

    /// Rejects configurations whose schedule never ends or whose report means nothing.
    pub fn validate(&self) -> BudgetResult<()> {
        use BudgetError as E;
        let (base, cap, timeout) = (self.base_ns, self.cap_ns, self.attempt_timeout_ns);
        let (window, margin, m) = (self.window_ns, self.margin_ns, self.multiplier);
        let (shrink, hops, seeds) = (self.shrink, self.hops, self.seeds_for_distribution);
        let fail = [
            (base == 0 && timeout == 0, E::ZeroProgress),
            (self.jitter == Jitter::None && timeout == 0, E::ZeroProgressImmediate),
            (!(m.is_finite() && m >= 1.0), E::Multiplier(m)),
            (cap < base, E::CapBelowBase(cap, base)),
            (!(1..=HOPS_MAX).contains(&hops), E::Hops(hops)),
            (!(shrink.is_finite() && shrink > 1.0), E::Shrink(shrink)),
            (!(1..=SEEDS_MAX).contains(&seeds), E::Seeds(seeds)),
            (window.checked_add(margin).is_none(), E::TtlOverflow(window, margin)),
        ];
        if let Some((_, error)) = fail.into_iter().find(|(failed, _)| *failed) {
            return Err(error);
        }
        // A hop with an inner hop needs a window above 0 for the inner one to be strictly smaller.
        let callers_ns = &hop_windows_ns(self)[..hops as usize - 1];
        match callers_ns.iter().position(|&w| w == 0) {
            Some(hop) => Err(E::HopWindowZero(Box::new(self.clone()), hop as u32)),
            None => Ok(()),
        }
    }
}

fn human(ns: &u64) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_nanos(*ns))
}

impl BudgetConfig {
    /// The simulator's retry policy with these backoff settings (attempts unbounded: the window
    /// decides how many fit).
    pub fn policy(&self) -> RetryPolicy {
        RetryPolicy::backoff("budget", self.jitter.clone(), self.base_ns, self.multiplier, self.cap_ns)
    }
}

fn jitter_text<S: serde::Serializer>(jitter: &Jitter, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&jitter_label(jitter))
}

/// `full`, `proportional(0.2)`, `schedule(5s, 5m)`: the strategy and its parameters.
fn jitter_label(jitter: &Jitter) -> String {
    match jitter {
        Jitter::Proportional { ratio } => format!("proportional({ratio})"),
        Jitter::Schedule { delays } => {
            let delays: Vec<String> = delays.iter().map(|d| human(d).to_string()).collect();
            format!("schedule({})", delays.join(", "))
        }
        other @ (Jitter::None
        | Jitter::Exponential
        | Jitter::Full
        | Jitter::Equal
        | Jitter::Decorrelated
        | Jitter::DecorrelatedV2
        | Jitter::DecorrelatedFinagle) => other.name().to_string(),
    }
}

/// The attempts whose delays (`delay(n)` before attempt n) plus one timeout each fit `window_ns`;
/// [`BudgetError::AttemptLimit`] past [`ATTEMPTS_MAX`] attempts.
fn fit(cfg: &BudgetConfig, window_ns: u64, seed: u64, mut delay: impl FnMut(u32) -> Nanos) -> BudgetResult<Vec<u64>> {
    let (mut delays_ns, mut elapsed_ns) = (Vec::new(), 0_u64);
    for attempt in 1.. {
        let delay_ns = delay(attempt);
        // A sum past u64::MAX exceeds any window: it ends the schedule like the guide's `>`.
        let projected_ns = elapsed_ns.checked_add(delay_ns);
        match projected_ns.and_then(|ns| ns.checked_add(cfg.attempt_timeout_ns)) {
            Some(projected_ns) if projected_ns <= window_ns => elapsed_ns = projected_ns,
            _ => return Ok(delays_ns),
        }
        if delays_ns.len() == ATTEMPTS_MAX {
            let cfg = Box::new(cfg.clone());
            return Err(BudgetError::AttemptLimit(cfg, window_ns, seed));
        }
        delays_ns.push(delay_ns);
    }
    unreachable!("the loop returns once the window is full or the attempt limit is reached")
}

/// [`schedule`], or [`BudgetError::AttemptLimit`] past [`ATTEMPTS_MAX`] attempts.
pub fn try_schedule(cfg: &BudgetConfig, window_ns: u64, seed: u64) -> BudgetResult<Vec<u64>> {
    let policy = cfg.policy();
    let (mut rng, mut state) = (ChaCha8Rng::seed_from_u64(seed), JitterState::default());
    fit(cfg, window_ns, seed, |attempt| policy.delay_before_retry(attempt, &mut state, &mut rng))
}

/// The most attempts whose worst case (every delay at the strategy's upper bound) fits
/// `window_ns`: the count that is safe to configure as `max_attempts`.
pub fn try_worst_case_schedule(cfg: &BudgetConfig, window_ns: u64) -> BudgetResult<Vec<u64>> {
    let policy = cfg.policy();
    fit(cfg, window_ns, cfg.seed, |attempt| policy.delay_upper_bound(attempt))
}

/// Worst-case time of `attempts` attempts with fresh jitter: every delay at its upper bound plus
/// one attempt timeout each (saturating).
pub fn worst_case_ns(cfg: &BudgetConfig, attempts: u32) -> u64 {
    let policy = cfg.policy();
    let delays = (1..=attempts).map(|n| policy.delay_upper_bound(n)).fold(0_u64, u64::saturating_add);
    delays.saturating_add(u64::from(attempts).saturating_mul(cfg.attempt_timeout_ns))
}

/// The guide's `RetryBudget.schedule`: the jittered delays (ns) that fit `window_ns` for `seed`.
/// Panics past [`ATTEMPTS_MAX`] attempts; [`try_schedule`] and [`compute`] return an error.
pub fn schedule(cfg: &BudgetConfig, window_ns: u64, seed: u64) -> Vec<u64> {
    try_schedule(cfg, window_ns, seed).unwrap_or_else(|error| panic!("{error}"))
}

/// Time a schedule reserves: its delays plus one attempt timeout per attempt (fits a u64 window).
fn scheduled_ns(delays_ns: &[u64], attempt_timeout_ns: u64) -> u64 {
    delays_ns.iter().sum::<u64>() + delays_ns.len() as u64 * attempt_timeout_ns
}

/// Hop i's window: floor(window / shrink^i) ns, kept strictly below hop i−1's while that is > 0.
fn hop_windows_ns(cfg: &BudgetConfig) -> Vec<u64> {
    let (mut windows_ns, mut divisor) = (vec![cfg.window_ns], 1.0);
    for hop in 1..cfg.hops as usize {
        divisor *= cfg.shrink;
        // Above 2^53 ns (~104 days) the f64 quotient can round up to the caller's window.
        let caller_ns = windows_ns[hop - 1].saturating_sub(1);
        windows_ns.push(((cfg.window_ns as f64 / divisor) as u64).min(caller_ns));
    }
    windows_ns
}

/// A duration in seconds and as a humantime string (`"3days 6h"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    /// The duration in seconds.
    pub seconds: f64,
    /// The duration in its two largest units ([`two_units`]).
    pub human: String,
}

impl Span {
    fn from_ns(ns: u64) -> Self {
        let (seconds, human) = (ns as f64 / 1e9, two_units(ns));
        Self { seconds, human }
    }
}

/// A duration in its largest unit and the next one, the rest cut off (`2 days 23 h` for 2 days
/// 23 h 43 min: never more than the duration, so a schedule shown within its window is), or
/// below a minute as `2.5 s`, `316 ms`: the precision a planner reads; the exact seconds stay in
/// the JSON's `seconds`.
pub fn two_units(ns: u64) -> String {
    const UNITS: [(&str, &str, u64); 4] =
        [("day", "days", 86_400), ("h", "h", 3_600), ("min", "min", 60), ("s", "s", 1)];
    let secs = ns as f64 / 1e9;
    if secs < 60.0 {
        return crate::engine::time::fmt_secs(secs);
    }
    let name = |i: usize, n: u64| if n == 1 { UNITS[i].0 } else { UNITS[i].1 };
    let first = UNITS.iter().position(|u| secs >= u.2 as f64).expect("at least a minute");
    let step = UNITS[first + 1].2;
    let total = (secs / step as f64).floor() as u64 * step;
    let (major, minor) = (total / UNITS[first].2, total % UNITS[first].2 / step);
    if minor == 0 {
        format!("{major} {}", name(first, major))
    } else {
        format!("{major} {} {minor} {}", name(first, major), name(first + 1, minor))
    }
}

fn span<S: serde::Serializer>(ns: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    Span::from_ns(*ns).serialize(serializer)
}

/// What fits hop `hop`'s window for the report's seed (hops differ by their window alone): the
/// jittered count and its time; `fitted_worst_case`, what that count can take with fresh draws
/// (`fitted_count_fits`: within the window); `worst_case_attempts`, the most attempts whose worst
/// case always fits (un-jittered for full/equal jitter), the count to configure as `max_attempts`;
/// TTL = window + margin; `window_strictly_smaller`: `None` = hop 0, which has no caller.
#[derive(Debug, Clone, Serialize)]
pub struct WindowBudget {
    /// The hop (0: the client-facing one).
    pub hop: u32,
    /// This hop's retry window.
    pub window: Span,
    /// Whether this window is strictly smaller than the caller's (`None` for hop 0).
    pub window_strictly_smaller: Option<bool>,
    /// Attempts that fit the window for the report's seed.
    pub attempts_fitted: u32,
    /// The time those attempts take (delays and timeouts).
    pub scheduled: Span,
    /// What that count can take with fresh draws, every delay at its upper bound.
    pub fitted_worst_case: Span,
    /// Whether that worst case fits the window.
    pub fitted_count_fits: bool,
    /// The most attempts whose worst case always fits: the count to configure.
    pub worst_case_attempts: u32,
    /// The worst-case time of that count.
    pub worst_case_scheduled: Span,
    /// Window + margin: how long the idempotency key must live.
    pub idempotency_ttl: Span,
}

/// Attempt `attempt` (from 1) waits `delay_s`, so starts at `start_s` (delays + prior timeouts).
#[derive(Debug, Clone, Serialize)]
pub struct ScheduledAttempt {
    /// The attempt, from 1.
    pub attempt: u32,
    /// The delay waited before it, s.
    pub delay_s: f64,
    /// When it starts, s after the first attempt (delays + prior timeouts).
    pub start_s: f64,
}

/// Attempts fitted over seeds `seed`, `seed + 1`, …; `histogram` maps attempts to seed counts.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptsDistribution {
    /// The fewest attempts any seed fitted.
    pub attempts_min: u32,
    /// The most attempts any seed fitted.
    pub attempts_max: u32,
    /// The mean over the seeds.
    pub attempts_mean: f64,
    /// Attempts → how many seeds fitted that many.
    pub histogram: BTreeMap<u32, u32>,
}

/// What `retrystorm budget` prints ([`BudgetReport::to_text`] or JSON): `budget` is hop 0's, for
/// `inputs.seed` like `schedule`; `invariant_holds`: the worst case of `max_attempts` ≤ window <
/// TTL (the TTL strictly longer, so `--margin 0s` violates it); `max_attempts` is the count to
/// configure (hop 0's `worst_case_attempts`); `hops` needs hops > 1.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetReport {
    /// The configuration the report was computed from.
    pub inputs: BudgetConfig,
    /// Hop 0's budget, for `inputs.seed`.
    pub budget: WindowBudget,
    /// The count to configure: hop 0's `worst_case_attempts`.
    pub max_attempts: u32,
    /// Worst case of `max_attempts` ≤ window < TTL.
    pub invariant_holds: bool,
    /// Hop 0's jittered schedule for `inputs.seed`.
    pub schedule: Vec<ScheduledAttempt>,
    /// Attempts fitted across seeds.
    pub distribution: AttemptsDistribution,
    /// Every hop's budget when `inputs.hops` > 1, else empty.
    pub hops: Vec<WindowBudget>,
}

fn window_budget(cfg: &BudgetConfig, windows_ns: &[u64], hop: usize) -> BudgetResult<WindowBudget> {
    let window_ns = windows_ns[hop];
    // Always Some(true) past hop 0 (hop_windows_ns keeps inner windows strictly smaller; the
    // assert checks it), so cargo-mutants' `<` → `<=` here is equivalent (docs/TESTING.md).
    let window_strictly_smaller = (hop > 0).then(|| window_ns < windows_ns[hop - 1]);
    assert_ne!(window_strictly_smaller, Some(false), "hop {hop}: {cfg:?}");
    let delays_ns = try_schedule(cfg, window_ns, cfg.seed)?;
    let worst_ns = try_worst_case_schedule(cfg, window_ns)?;
    let scheduled = scheduled_ns(&delays_ns, cfg.attempt_timeout_ns);
    let worst = scheduled_ns(&worst_ns, cfg.attempt_timeout_ns);
    assert!(scheduled.max(worst) <= window_ns, "{cfg:?}");
    let fitted_worst_ns = worst_case_ns(cfg, delays_ns.len() as u32);
    Ok(WindowBudget {
        hop: hop as u32,
        window: Span::from_ns(window_ns),
        window_strictly_smaller,
        attempts_fitted: delays_ns.len() as u32,
        scheduled: Span::from_ns(scheduled),
        fitted_worst_case: Span::from_ns(fitted_worst_ns),
        fitted_count_fits: fitted_worst_ns <= window_ns,
        worst_case_attempts: worst_ns.len() as u32,
        worst_case_scheduled: Span::from_ns(worst),
        idempotency_ttl: Span::from_ns(window_ns + cfg.margin_ns), // validate() ruled out overflow.
    })
}

fn attempts_table(delays_ns: &[u64], attempt_timeout_ns: u64) -> Vec<ScheduledAttempt> {
    let mut start_ns = 0;
    let rows = delays_ns.iter().zip(1..).map(|(&delay_ns, attempt)| {
        start_ns += delay_ns;
        let (delay_s, start_s) = (delay_ns as f64 / 1e9, start_ns as f64 / 1e9);
        start_ns += attempt_timeout_ns;
        ScheduledAttempt { attempt, delay_s, start_s }
    });
    rows.collect()
}

fn distribution(cfg: &BudgetConfig) -> BudgetResult<AttemptsDistribution> {
    let mut histogram = BTreeMap::new();
    for offset in 0..u64::from(cfg.seeds_for_distribution) {
        let attempts = try_schedule(cfg, cfg.window_ns, cfg.seed.wrapping_add(offset))?.len();
        *histogram.entry(attempts as u32).or_insert(0) += 1;
    }
    let total: u64 = histogram.iter().map(|(&a, &n)| u64::from(a) * u64::from(n)).sum();
    Ok(AttemptsDistribution {
        attempts_min: *histogram.keys().next().expect("seeds >= 1"),
        attempts_max: *histogram.keys().next_back().expect("seeds >= 1"),
        attempts_mean: total as f64 / f64::from(cfg.seeds_for_distribution),
        histogram,
    })
}

/// Validates `cfg` and computes the whole report.
pub fn compute(cfg: &BudgetConfig) -> BudgetResult<BudgetReport> {
    cfg.validate()?;
    let windows_ns = hop_windows_ns(cfg);
    let budgets = (0..windows_ns.len()).map(|hop| window_budget(cfg, &windows_ns, hop));
    let mut hops = budgets.collect::<BudgetResult<Vec<_>>>()?;
    let budget = hops[0].clone();
    hops.retain(|_| cfg.hops > 1);
    let delays_ns = try_schedule(cfg, cfg.window_ns, cfg.seed)?;
    let max_attempts = budget.worst_case_attempts;
    let horizon_ns = worst_case_ns(cfg, max_attempts);
    // validate() ruled out overflow of window + margin.
    let ttl_ns = cfg.window_ns + cfg.margin_ns;
    Ok(BudgetReport {
        inputs: cfg.clone(),
        max_attempts,
        invariant_holds: horizon_ns <= cfg.window_ns && cfg.window_ns < ttl_ns,
        budget,
        schedule: attempts_table(&delays_ns, cfg.attempt_timeout_ns),
        distribution: distribution(cfg)?,
        hops,
    })
}

impl BudgetReport {
    /// A human-readable report for stdout: the answer first (the attempts to configure, the TTL,
    /// the invariant), then a chain's hop table, then why that count; with `details`, the seed's
    /// schedule and the distribution of attempts fitted over seeds.
    pub fn to_text(&self, details: bool) -> String {
        let (i, b, d) = (&self.inputs, &self.budget, &self.distribution);
        let (base, cap) = (two_units(i.base_ns), two_units(i.cap_ns));
        let (timeout, margin) = (two_units(i.attempt_timeout_ns), two_units(i.margin_ns));
        let (seed, jitter) = (i.seed, jitter_label(&i.jitter));
        let verdict = match (self.invariant_holds, i.margin_ns) {
            (true, _) => "holds".to_string(),
            (false, 0) => "VIOLATED: the TTL equals the window; give --margin > 0".to_string(),
            (false, _) => "VIOLATED".to_string(),
        };
        let mut out = format!("budget: window {}, base {base} x{}, cap {cap}", b.window.human, i.multiplier);
        out += &format!(", attempt timeout {timeout}, jitter {jitter}\n");
        out += &format!(
            "  max_attempts to configure  {}   (worst case {}, within the window of {})\n",
            self.max_attempts, b.worst_case_scheduled.human, b.window.human
        );
        out +=
            &format!("  idempotency TTL            {}   (the window + a {margin} margin)\n", b.idempotency_ttl.human);
        out += &format!("  horizon <= window < TTL    {verdict}\n");
        if !self.hops.is_empty() {
            out += &format!("\nhops (hop i gets window / {}^i)\n", i.shrink);
            out += "  hop     window_s  attempts  scheduled_s  always fits        ttl_s  smaller\n";
        }
        for h in &self.hops {
            let (hop, window_s, attempts) = (h.hop, h.window.seconds, h.attempts_fitted);
            let (scheduled_s, ttl_s) = (h.scheduled.seconds, h.idempotency_ttl.seconds);
            let smaller = h.window_strictly_smaller.map_or("-", |s| ["NO", "yes"][usize::from(s)]);
            out += &format!("  {hop:>3} {window_s:>12.3} {attempts:>9} {scheduled_s:>12.3} ");
            out += &format!("{:12} {ttl_s:12.3}  {smaller}\n", h.worst_case_attempts);
        }
        out += &format!(
            "\nwhy {}: the most attempts whose worst case (every delay at its largest) fits the window.\n",
            self.max_attempts
        );
        out += &format!(
            "  seed {seed}'s draws fit {} attempts in {}; their worst case is {}",
            b.attempts_fitted, b.scheduled.human, b.fitted_worst_case.human
        );
        out += if b.fitted_count_fits {
            ".\n"
        } else {
            ":\n  ! with fresh jitter that many can run past the window: do not configure them.\n"
        };
        let (seeds, mean) = (i.seeds_for_distribution, d.attempts_mean);
        out += &format!("  attempts fitted over {seeds} seeds from {seed}: ");
        out += &format!("min {}, max {}, mean {mean:.1}\n", d.attempts_min, d.attempts_max);
        if !details {
            out += &format!(
                "  seed {seed}'s schedule ({} attempts) and the histogram over seeds: add --details\n",
                self.schedule.len()
            );
            return out;
        }
        out += &format!("\nschedule (seed {seed})\n");
        out += match self.schedule.len() {
            0 => "  no attempt fits: the first delay plus one attempt timeout exceed the window\n",
            _ => "  attempt      delay_s      start_s\n",
        };
        for row in &self.schedule {
            let (attempt, delay_s, start_s) = (row.attempt, row.delay_s, row.start_s);
            out += &format!("  {attempt:>7} {delay_s:>12.3} {start_s:>12.3}\n");
        }
        out += &format!("\nattempts fitted over {seeds} seeds from {seed}\n  attempts  seeds\n");
        for (attempts, count) in &d.histogram {
            out += &format!("  {attempts:>8} {count:>6}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const H: u64 = 3600 * S;

    fn config(edit: impl FnOnce(&mut BudgetConfig)) -> BudgetConfig {
        let mut cfg = BudgetConfig::guide_defaults(72 * H);
        edit(&mut cfg);
        cfg
    }

    /// Every strategy of the simulator, by its scenario name.
    fn all_jitters() -> Vec<Jitter> {
        let schedule = Jitter::Schedule { delays: vec![5 * S, 300 * S, 1800 * S] };
        let proportional = Jitter::Proportional { ratio: 0.2 };
        let plain = [Jitter::None, Jitter::Exponential, Jitter::Full, Jitter::Equal, Jitter::Decorrelated];
        plain.into_iter().chain([Jitter::DecorrelatedV2, Jitter::DecorrelatedFinagle, proportional, schedule]).collect()
    }

    #[test]
    fn schedules_fit_their_window_and_jitter_and_shorter_windows_fit_fewer() {
        for jitter in all_jitters() {
            let cfg = config(|c| c.jitter = jitter.clone());
            let policy = cfg.policy();
            for seed in 0..50 {
                let (days_ns, hour_ns) = (schedule(&cfg, 72 * H, seed), schedule(&cfg, H, seed));
                assert!(scheduled_ns(&days_ns, 30 * S) <= 72 * H, "seed {seed} {cfg:?}");
                // Each delay lies in the strategy's range (the simulator's upper bound).
                for (n, &d) in (1..).zip(&days_ns) {
                    assert!(d <= policy.delay_upper_bound(n), "seed {seed} attempt {n} {cfg:?}");
                }
                // Same seed, same draws: the 1 h schedule is a prefix of the 72 h one.
                assert_eq!(hour_ns, days_ns[..hour_ns.len()], "seed {seed} {cfg:?}");
            }
        }
    }

    #[test]
    fn delays_are_the_simulators_under_the_same_names() {
        // `none` retries at once (it used to mean the un-jittered delay here, unlike scenarios).
        let none = schedule(&config(|c| c.jitter = Jitter::None), H, 1);
        assert_eq!(none.len(), 120, "an attempt every 30 s timeout");
        assert!(none.iter().all(|&d| d == 0));
        // Every strategy draws what the simulator draws from the same stream.
        for jitter in all_jitters() {
            let cfg = config(|c| c.jitter = jitter.clone());
            let policy = cfg.policy();
            let (mut rng, mut state) = (ChaCha8Rng::seed_from_u64(3), JitterState::default());
            let simulated = (1..).map(|k| policy.delay_before_retry(k, &mut state, &mut rng));
            let got = schedule(&cfg, 72 * H, 3);
            assert!(simulated.take(got.len()).eq(got.iter().copied()), "{}", jitter.name());
        }
    }

    #[test]
    fn the_invariant_can_fail_and_the_safe_count_is_the_worst_case_one() {
        // --margin 0s: TTL = window, which the guide forbids (the TTL must outlast the window).
        let report = compute(&config(|c| c.margin_ns = 0)).unwrap();
        assert!(!report.invariant_holds);
        assert!(report.to_text(true).contains("VIOLATED: the TTL equals the window"), "{}", report.to_text(true));
        // Full jitter fits far more attempts than the un-jittered worst case allows: configured as
        // max_attempts, that count can run far past the window with fresh draws.
        let report = compute(&config(|_| ())).unwrap();
        let b = &report.budget;
        assert!(b.attempts_fitted > 140, "{}", b.attempts_fitted);
        let expected_worst_s = 4094 + (u64::from(b.attempts_fitted) - 11) * 3600 + u64::from(b.attempts_fitted) * 30;
        assert_eq!(b.fitted_worst_case.seconds, expected_worst_s as f64);
        assert!(b.fitted_worst_case.seconds > 2.0 * b.window.seconds && !b.fitted_count_fits);
        assert!(report.to_text(true).contains("do not configure them"));
        assert_eq!((report.max_attempts, b.worst_case_attempts), (81, 81));
        assert_eq!(b.worst_case_scheduled.seconds, 258_524.0);
        assert!(report.invariant_holds);
    }

    #[test]
    fn inner_hops_get_strictly_smaller_windows_that_their_schedules_fit() {
        let cfg = config(|c| c.hops = 3);
        let report = compute(&cfg).unwrap();
        let windows_s = report.hops.iter().map(|h| h.window.seconds);
        assert!(windows_s.eq([259_200.0, 86_400.0, 28_800.0]));
        for (hop, h) in report.hops.iter().enumerate() {
            assert_eq!(h.window_strictly_smaller, (hop > 0).then_some(true));
            assert!(h.scheduled.seconds.max(h.worst_case_scheduled.seconds) <= h.window.seconds);
            assert_eq!(h.idempotency_ttl.seconds, h.window.seconds + 6.0 * 3600.0);
        }
        assert!(compute(&config(|_| ())).unwrap().hops.is_empty());
        let json = || serde_json::to_string(&compute(&cfg).unwrap()).unwrap();
        assert_eq!(json(), json(), "same inputs, same bytes");
    }

    #[test]
    fn unjittered_defaults_are_exact_and_the_ttl_outlasts_them() {
        // Delays 2, 4, …, 2048 s: 11 attempts ending at 4094 s + 11 × 30 s = 4424 s. Then 3600 s
        // (capped) + 30 s each: floor((259200 − 4424) / 3630) = 70 more, ending at 258524 s;
        // a 71st would end at 262154 s > 259200 s. So 81 attempts in 258524 s.
        let cfg = config(|c| c.jitter = Jitter::Exponential);
        let expected_s = (0..11).map(|n| 2 << n).chain([3600; 70]);
        assert!(schedule(&cfg, 72 * H, 123).into_iter().eq(expected_s.map(|s| s * S)));
        let report = compute(&cfg).unwrap();
        let b = &report.budget;
        assert_eq!((b.attempts_fitted, b.scheduled.seconds), (81, 258_524.0));
        assert_eq!((b.worst_case_attempts, b.worst_case_scheduled.seconds), (81, 258_524.0));
        assert_eq!(b.idempotency_ttl.human, "3 days 6 h"); // 78 h, never jittered: window + margin.
        assert!(b.idempotency_ttl.seconds > b.window.seconds && report.invariant_holds);
        assert!(b.fitted_count_fits && report.max_attempts == 81);
        assert_eq!(report.schedule[2].start_s, 2.0 + 4.0 + 8.0 + 2.0 * 30.0);
        // The guide's `>`: a schedule ending exactly at the window fits, 1 ns less does not.
        assert_eq!(schedule(&cfg, 258_524 * S, 0).len(), 81);
        assert_eq!(schedule(&cfg, 258_524 * S - 1, 0).len(), 80);
        // The capped power saturates instead of overflowing, even at n = 200 and ×1e6.
        let huge = config(|c| (c.base_ns, c.cap_ns, c.multiplier) = (1, u64::MAX, 1e6));
        assert_eq!(huge.policy().exp_delay(201), u64::MAX);
    }

    #[test]
    fn invalid_configurations_are_errors_naming_their_flag() {
        type Edit = fn(&mut BudgetConfig);
        let cases: [(Edit, &str); 12] = [
            (|c| (c.base_ns, c.attempt_timeout_ns) = (0, 0), "0s: the schedule would never end"),
            (|c| c.multiplier = 0.5, "--multiplier 0.5"),
            (|c| c.multiplier = f64::NAN, "--multiplier NaN"),
            (|c| c.cap_ns = S, "--cap 1s is below --base 2s"),
            (|c| c.hops = 0, "--hops 0"),
            (|c| c.hops = HOPS_MAX + 1, "--hops 65"),
            (|c| c.shrink = 1.0, "--shrink 1"),
            (|c| c.seeds_for_distribution = 0, "--seeds 0"),
            (|c| c.margin_ns = u64::MAX, "--margin"),
            (|c| (c.window_ns, c.hops) = (1, 3), "hop 1 of --window 1ns gets 0s, so hop 2"),
            (|c| (c.base_ns, c.cap_ns, c.attempt_timeout_ns) = (1, 1, 1), "than 100000"),
            (|c| (c.window_ns, c.margin_ns) = (u64::MAX, 0), "(seed 7)"),
        ];
        for (edit, message) in cases {
            let error = compute(&config(edit)).expect_err(message).to_string();
            assert!(error.contains(message), "{error:?} lacks {message:?}");
        }
    }

    #[test]
    fn a_window_below_one_timeout_fits_no_attempt() {
        for window_ns in [0, 10 * S, 30 * S - 1] {
            let report = compute(&BudgetConfig::guide_defaults(window_ns)).unwrap();
            let (b, d) = (&report.budget, &report.distribution);
            assert_eq!((b.attempts_fitted, b.worst_case_attempts, d.attempts_max), (0, 0, 0));
            assert!(report.to_text(true).contains("no attempt fits"));
        }
    }

    #[test]
    fn first_delays_for_seed_7_are_stable() {
        // A change here means the portable RNG rule (or rand/rand_chacha) changed: results move.
        let delays_ns = schedule(&config(|_| ()), 72 * H, 7);
        assert_eq!(delays_ns[..3], [315_592_194, 671_957_451, 5_634_209_024]);
    }

    #[test]
    fn durations_read_in_one_or_two_units() {
        assert_eq!(two_units(258_201_654_248_446), "2 days 23 h", "2 days 23 h 43 min 21.65 s, cut to the hour");
        assert_eq!(two_units(534_404 * S), "6 days 4 h");
        assert_eq!(two_units(280_800 * S), "3 days 6 h");
        assert_eq!(two_units(72 * H), "3 days");
        assert_eq!(two_units(86_400 * S), "1 day");
        assert_eq!(two_units(6 * H), "6 h");
        assert_eq!(two_units(3599 * S + S / 2), "59 min 59 s", "never rounded up");
        assert_eq!(two_units(65 * S), "1 min 5 s");
        assert_eq!(two_units(30 * S), "30 s");
        assert_eq!(two_units(S / 4), "250 ms");
    }
}
