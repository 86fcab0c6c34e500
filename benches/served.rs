//! The served path's figures (docs/PERFORMANCE.md, "The plain served path"), timed alternated:
//! each round runs both programs of every pair once, the first of a pair first in even rounds and
//! second in odd ones, so that a slow stretch of the machine falls on both halves of a ratio.
//! A pair's figure is the median over the rounds of its ratio in that round, and beside it the
//! ratio of each program's fastest round (the runs the machine's other work disturbed least: one
//! program's time moves by ±15% from call to call here).
//! Criterion's `served` and `small_runs` groups of benches/scenarios.rs time the same programs
//! one after the other; on this shared machine their ratios moved by up to 0.1 from run to run.
//!
//! The pairs:
//! - the model ÷ its bare queue loop (benches/bare_queue) on metastable-collapse at a 10,000 s
//!   horizon and on M/M/1 at 2,000 s, in wall time and in the process's CPU time (goal ≤ 1.5×);
//! - M/M/1 as 2,000 replications of 1 s on one thread (`run_study`: each run, its summary and
//!   its folding into the variant's results) against one run of 2,000 s (`sim::run`): the fixed
//!   part is 1 − long ÷ short (goal < 10%);
//! - where the fixed part goes: the same 2,000 runs simulated alone in a loop, and each also
//!   summarised (`summary::scalars`), against the long run (the rest of `run_study` is the
//!   folding into the variant's results and the study around it);
//! - the same 2,000 replications on one thread ÷ on two (goal ≥ 1.9×), beside the machine's own
//!   scaling of their parallel part: the 2,000 runs with their summaries, taken from a shared
//!   counter by one plain thread ÷ by two that share nothing else (what no study can beat here).
//!
//! Each figure is given as the median round with the median's distribution-free 95% interval
//! (order statistics: the ranks a Binomial(rounds, ½) puts outside with at most 2.5% each side).
//!
//! It is never a test. `benches/served.sh` runs it with the load average before and after:
//!
//!   cargo bench --bench served -- [rounds]      (default 21; a round takes about 3.5 s)
//!
//! With `SERVED_ROUNDS` set it also prints every round's milliseconds (first/second) to stderr.
//! With one of `none`, `long`, `runs`, `summarised`, `study` instead of a number it runs that
//! program of the fixed part's pairs once and nothing else, for `benches/served_instructions.sh`,
//! which counts instructions (the machine's noise moves the fixed part's time by ±10 points).

mod bare_queue;

use retrystorm::engine::NS_PER_S;
use retrystorm::metrics::summary::scalars;
use retrystorm::model::sim;
use retrystorm::runner::{run_study, RunOptions};
use retrystorm::scenario::{parse_assignment, Scenario, Variant};
use std::hint::black_box;
use std::time::Instant;

fn bundled(path: &str, sets: &[&str]) -> Scenario {
    let overrides: Vec<_> = sets.iter().map(|s| parse_assignment(s).expect("valid override")).collect();
    Scenario::load(path, &overrides).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The CPU time of the whole process (every thread, including the finished threads of earlier
/// pools), in nanoseconds.
fn process_cpu_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    t.tv_sec as u64 * NS_PER_S + t.tv_nsec as u64
}

/// Wall and CPU seconds of one call of `f`.
fn time(f: &mut dyn FnMut()) -> [f64; 2] {
    let (wall, cpu) = (Instant::now(), process_cpu_ns());
    f();
    [wall.elapsed().as_secs_f64(), (process_cpu_ns() - cpu) as f64 / NS_PER_S as f64]
}

/// Two programs whose ratio (first ÷ second) is a figure, and each round's timings.
struct Pair {
    name: &'static str,
    first: Box<dyn FnMut()>,
    second: Box<dyn FnMut()>,
    /// Per round: the first's and the second's [wall, cpu] seconds.
    rounds: Vec<[[f64; 2]; 2]>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// The distribution-free 95% interval of the median of `n` values, as the 0-based ranks of the
/// sorted values that bound it: the `j`-th lowest and the `j`-th highest (rank `n − 1 − j`) for
/// the largest `j` with P(Binomial(n, ½) < `j` + 1) ≤ 2.5%, which covers the median with at least
/// 95%; `None` below 6 values, where no such pair does.
fn median_interval_ranks(n: usize) -> Option<[usize; 2]> {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let binomial = Binomial::new(0.5, n as u64).expect("a binomial of p = 1/2");
    // P(Binomial < j + 1) = P(Binomial <= j).
    let j = (0..n / 2).take_while(|&j| binomial.cdf(j as u64) <= 0.025).last()?;
    Some([j, n - 1 - j])
}

impl Pair {
    fn new(name: &'static str, first: impl FnMut() + 'static, second: impl FnMut() + 'static) -> Pair {
        Pair { name, first: Box::new(first), second: Box::new(second), rounds: Vec::new() }
    }

    fn round(&mut self, first_first: bool) {
        let (a, b) = if first_first {
            let a = time(&mut self.first);
            (a, time(&mut self.second))
        } else {
            let b = time(&mut self.second);
            (time(&mut self.first), b)
        };
        self.rounds.push([a, b]);
    }

    /// The median over rounds of the ratio first ÷ second in `clock` (0 wall, 1 CPU), and the
    /// median's 95% interval if there are enough rounds for one.
    fn ratio(&self, clock: usize) -> (f64, Option<[f64; 2]>) {
        let mut ratios: Vec<f64> = self.rounds.iter().map(|r| r[0][clock] / r[1][clock]).collect();
        ratios.sort_by(f64::total_cmp);
        let interval = median_interval_ranks(ratios.len()).map(|[lo, hi]| [ratios[lo], ratios[hi]]);
        (median(ratios), interval)
    }

    /// The fastest round's milliseconds of the first and of the second, in wall time (each the
    /// run least disturbed by the machine's other work).
    fn fastest_ms(&self) -> [f64; 2] {
        [0, 1].map(|i| self.rounds.iter().map(|r| r[i][0] * 1e3).fold(f64::INFINITY, f64::min))
    }

    /// Three lines: the title, the ratio round by round (its median with the median's 95%
    /// interval in wall time, then the median in CPU time) and the ratio of the fastest rounds,
    /// each as `shown` shows a ratio.
    fn report(&self, title: &str, shown: impl Fn(f64) -> String) {
        let ((w, interval), (c, _)) = (self.ratio(0), self.ratio(1));
        let interval = interval.map_or("too few rounds for its interval".into(), |[lo, hi]| {
            format!("95% interval {} to {}", shown(lo), shown(hi))
        });
        let [a, b] = self.fastest_ms();
        println!("{title}");
        println!("  median round {} ({interval}), CPU {}", shown(w), shown(c));
        println!("  fastest rounds {a:.1} / {b:.1} ms: {}", shown(a / b));
    }
}

/// 2,000 runs of `scenario` (one replication each) with their summaries, on `threads` plain
/// threads that take them one by one from a shared counter and share nothing else.
fn runs_on(scenario: &Scenario, threads: usize) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let (next, shape) = (AtomicU64::new(0), scenario.base.run_shape());
    let work = || loop {
        let replication = next.fetch_add(1, Ordering::Relaxed);
        if replication >= 2_000 {
            break;
        }
        let record = sim::run(&scenario.base, scenario.seed, replication);
        black_box(scalars(&record, &shape));
        black_box(record);
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(work);
        }
        work();
    });
}

/// The programs of the fixed part's pairs, each alone once, for `benches/served_instructions.sh`
/// to count their instructions under valgrind: every one loads the same scenarios first, so that
/// `none` (loading only) is what the others' counts have in common.
const ALONE: [&str; 5] = ["none", "long", "runs", "summarised", "study"];

/// One run of `scenario` (the long run of the fixed part's pairs).
fn one_run(scenario: &Scenario) {
    black_box(sim::run(&scenario.base, scenario.seed, 0));
}

/// 2,000 runs of `scenario` (one replication each) in a loop, each also summarised if
/// `summarised`.
fn runs_in_a_loop(scenario: &Scenario, summarised: bool) {
    let shape = scenario.base.run_shape();
    for replication in 0..2_000 {
        let record = sim::run(&scenario.base, scenario.seed, replication);
        if summarised {
            black_box(scalars(&record, &shape));
        }
        black_box(record);
    }
}

/// The study of `scenario`'s `variants` on `threads` threads.
fn study(scenario: &Scenario, variants: &[Variant], threads: usize) {
    black_box(run_study(scenario, variants, &RunOptions { threads: Some(threads), ..RunOptions::default() }));
}

/// Runs one program of [`ALONE`] once.
fn alone(program: &str) {
    let short = bundled("scenarios/mm1.toml", &["horizon=1s", "replications=2000"]);
    let short_variants = short.run_variants();
    let long = bundled("scenarios/mm1.toml", &["horizon=2000s"]);
    match program {
        "none" => {}
        "long" => one_run(&long),
        "runs" => runs_in_a_loop(&short, false),
        "summarised" => runs_in_a_loop(&short, true),
        "study" => study(&short, &short_variants, 1),
        _ => unreachable!("checked against ALONE"),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; the one other argument is the number of rounds, or the name
    // of one program to run alone.
    let argument = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if let Some(program) = argument.as_deref().filter(|a| ALONE.contains(a)) {
        alone(program);
        return;
    }
    let rounds: usize = argument
        .map_or(21, |a| a.parse().unwrap_or_else(|_| panic!("rounds: a whole number or one of {ALONE:?}, not {a:?}")));
    let short = bundled("scenarios/mm1.toml", &["horizon=1s", "replications=2000"]);
    let short_variants = short.run_variants();
    let mut pairs = Vec::new();
    for (name, path, horizon_s, bare) in [
        ("metastable-collapse", "scenarios/metastable-collapse.toml", 10_000, bare_queue::METASTABLE_COLLAPSE),
        ("M/M/1", "scenarios/mm1.toml", 2_000, bare_queue::MM1),
    ] {
        let scenario = bundled(path, &[&format!("horizon={horizon_s}s")]);
        let bare = bare.with_horizon(horizon_s * NS_PER_S);
        pairs.push(Pair::new(
            name,
            move || {
                black_box(sim::run(&scenario.base, scenario.seed, 0));
            },
            move || {
                black_box(bare_queue::run(&bare, 42));
            },
        ));
    }
    let long = bundled("scenarios/mm1.toml", &["horizon=2000s"]);
    let (s1, v1, long_run) = (short.clone(), short_variants.clone(), long.clone());
    pairs.push(Pair::new("fixed part", move || study(&s1, &v1, 1), move || one_run(&long_run)));
    // Where the fixed part goes: the same 2,000 runs of 1 s simulated alone in a loop, and each
    // also summarised (`summary::scalars`), against the long run.
    for summarised in [false, true] {
        let (one_second, long) = (short.clone(), long.clone());
        pairs.push(Pair::new(
            if summarised { "runs and their summaries" } else { "runs alone" },
            move || runs_in_a_loop(&one_second, summarised),
            move || one_run(&long),
        ));
    }
    // The machine's own scaling of the same work: the 2,000 runs with their summaries, taken one
    // by one from a shared counter by one plain thread, then by two, nothing else shared.
    let one_second = std::sync::Arc::new(bundled("scenarios/mm1.toml", &["horizon=1s"]));
    let (on_one, on_two) = (one_second.clone(), one_second);
    pairs.push(Pair::new("the machine's two threads", move || runs_on(&on_one, 1), move || runs_on(&on_two, 2)));
    let (s2, v2) = (short.clone(), short_variants.clone());
    pairs.push(Pair::new("two threads", move || study(&s2, &v2, 1), move || study(&short, &short_variants, 2)));
    // One untimed round warms every program (code, allocator arenas, thread pools' first use).
    for pair in &mut pairs {
        pair.round(true);
        pair.rounds.clear();
    }
    for round in 0..rounds {
        for pair in &mut pairs {
            pair.round(round % 2 == 0);
        }
        eprint!("\rround {}/{rounds}", round + 1);
    }
    eprintln!();
    if std::env::var_os("SERVED_ROUNDS").is_some() {
        for pair in &pairs {
            let ms: Vec<String> =
                pair.rounds.iter().map(|r| format!("{:.0}/{:.0}", r[0][0] * 1e3, r[1][0] * 1e3)).collect();
            eprintln!("{}: {}", pair.name, ms.join(" "));
        }
    }
    println!("{rounds} rounds, each program of a pair alternately first; the median round (its 95% interval)");
    let times = |r: f64| format!("{r:.2}x");
    for pair in &pairs[..2] {
        pair.report(&format!("served {}: model / bare loop (goal <= 1.5x)", pair.name), times);
    }
    let part = |r: f64| format!("{:.1}%", (1.0 - 1.0 / r) * 100.0);
    pairs[2].report("fixed part: 2,000 runs of 1 s against one of 2,000 s (goal < 10%)", part);
    pairs[3].report("  of which the runs alone, simulated in a loop:", part);
    pairs[4].report("  and the runs with their summaries (summary::scalars):", part);
    pairs[6].report("two threads: 2,000 runs of 1 s on one thread / on two (goal >= 1.9x)", times);
    pairs[5].report("  the machine's own: the runs with their summaries on one plain thread / two", times);
}
