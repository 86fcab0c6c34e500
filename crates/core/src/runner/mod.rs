//! Runs variants × replications in parallel (rayon) and aggregates them into a [`Study`].
//!
//! Every (variant, replication) pair is an independent task with its own seeded streams; results
//! are collected in task order, so the outcome does not depend on the thread count.

pub(crate) mod aggregate;
pub mod compare;
pub mod emulation;
pub(crate) mod in_order;
pub mod map;
pub mod memory;
pub mod plan;
pub mod plan_range;
pub mod progress;
pub mod rare;
pub mod sweep;
pub mod verdict;

use crate::engine::Nanos;
use crate::metrics::RunRecord;
use crate::model::sim;
use crate::scenario::{Scenario, Variant};
use aggregate::Aggregate;
use compare::Comparison;
use in_order::run_in_order;
use progress::Progress;
use std::time::Instant;

/// How to execute (not what to simulate: that is the scenario).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Worker threads (None: rayon's default, one per core).
    pub threads: Option<usize>,
    /// Show a progress bar on stderr (only if stderr is a terminal).
    pub progress: bool,
}

pub use crate::metrics::stats::StatRow;
pub use emulation::{ClientDelayFit, ComparedRow, Emulation, MeasuredComparison};
pub use memory::parse_size;
pub use progress::{watch, Counts};

/// Mean time series of one scope (hop or tenant) of one variant.
#[derive(Clone, Debug)]
pub struct MeanSeries {
    /// Hop or tenant name.
    pub name: String,
    /// Per bucket, mean over replications of each column of [`SERIES_COLUMNS`].
    pub rows: Vec<[f64; SERIES_COLUMNS.len()]>,
}

/// Mean time series of one replica of one variant (`replicas.csv`).
#[derive(Clone, Debug)]
pub struct ReplicaSeries {
    /// `HOP[i]`.
    pub name: String,
    /// Per bucket, mean over replications of each column of [`REPLICA_COLUMNS`].
    pub rows: Vec<[f64; REPLICA_COLUMNS.len()]>,
}

/// Columns of `replicas.csv`: attempts routed to the replica, its success and failure replies,
/// the most attempts inside it, and 1 when it was out of rotation at some time in the bucket
/// (so its mean is the share of replications in which it was).
pub const REPLICA_COLUMNS: [&str; 5] = ["attempts", "successes", "failures", "in_flight_max", "out_of_rotation"];

/// Index of `workers` in [`SERIES_COLUMNS`]: the hop's workers at the bucket's end (moved by
/// autoscaling; 0 in tenant rows).
pub const WORKERS_COLUMN: usize = col::WORKERS;

/// Index of `attempts` in [`SERIES_COLUMNS`]: attempts in the bucket (a count, not a rate).
pub const ATTEMPTS_COLUMN: usize = col::ATTEMPTS;

/// Where `name` is among `columns`, found at compile time (a constant naming a column that is
/// not there fails the build): readers name a column instead of repeating its position.
pub const fn column_index(columns: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < columns.len() {
        let (a, b) = (columns[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("no such column")
}

/// Columns of the hop time series (tenant series fill the ones that apply, others are 0).
///
/// `goodput_per_s` is successes per second (success replies of a hop; requests that succeeded,
/// for a tenant). `backlog` (hops only) is the number of attempts inside the hop (queued, in
/// service or waiting on downstream calls) at the bucket's end, and `retries_pending` (hops only)
/// the retries to the hop waiting on a backoff timer at the bucket's end. `throughput_per_s`
/// (hops only) is services completed per second, `timely_goodput_per_s` (hops only) success
/// replies that reached a caller still waiting, per second. `budget_tokens` and
/// `budget_denied` (tenants whose policy has a retry budget; 0 otherwise) are the mean tokens left
/// in the budget instance after the bucket's retry decisions (carried over buckets without one,
/// from the budget's starting tokens) and the retries it denied. Rows are written by column
/// name (`col`).
pub const SERIES_COLUMNS: [&str; 19] = [
    "attempts",
    "first_attempts",
    "retries",
    "successes",
    "failures",
    "queue_len_max",
    "in_flight",
    "queue_wait_max_s",
    "goodput_per_s",
    "backlog",
    "retries_pending",
    "admission_limit",
    "workers",
    "throughput_per_s",
    "timely_goodput_per_s",
    "budget_tokens",
    "budget_denied",
    "cache_lookups",
    "cache_hit_ratio",
];

/// The results of one variant.
#[derive(Clone, Debug)]
pub struct VariantResult {
    /// Variant name.
    pub name: String,
    /// The simulated configuration.
    pub spec: crate::model::SimSpec,
    /// Whole-system metrics.
    pub metrics: StatRow,
    /// Per hop: name and metrics.
    pub hops: Vec<(String, StatRow)>,
    /// Per tenant: name and metrics.
    pub tenants: Vec<(String, StatRow)>,
    /// Mean series per hop.
    pub hop_series: Vec<MeanSeries>,
    /// Mean series per tenant.
    pub tenant_series: Vec<MeanSeries>,
    /// Retry-delay histogram at hop 0, all replications pooled.
    pub retry_delays: crate::metrics::delays::RetryDelays,
    /// Latency samples (µs) for CDFs: the merged histogram's iterated values (value, count).
    pub latency_us: Vec<(u64, u64)>,
    /// Why replications stopped early, if any did (`replication N: reason`).
    pub truncated: Vec<String>,
    /// Per replica of the hops with more than one: `HOP[i]` and its metrics.
    pub replicas: Vec<(String, StatRow)>,
    /// Mean series per replica, same order.
    pub replica_series: Vec<ReplicaSeries>,
    /// Per hop, per bucket: the fewest and the most attempts in that bucket over the
    /// replications (the simulated range a measured run is drawn against; not written to files).
    pub attempts_range: Vec<Vec<[f64; 2]>>,
}

/// Everything a command produced: what `report` writes.
#[derive(Clone, Debug)]
pub struct Study {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant.
    pub replications: u32,
    /// Width of a series bucket.
    pub bucket: Nanos,
    /// Results per variant, in order.
    pub variants: Vec<VariantResult>,
    /// Invariant warnings.
    pub warnings: Vec<String>,
    /// Events taken from the queue across all tasks.
    pub events: u64,
    /// Retries run ahead of the clock across all tasks (no queued event; `RunRecord`).
    pub retries_run_ahead: u64,
    /// Attempts sent to any hop across all tasks (the denominator of events per attempt).
    pub attempts: u64,
    /// Wall-clock seconds the simulation took (not part of the determinism contract).
    pub wall_s: f64,
    /// Threads used.
    pub threads: usize,
    /// Paired differences of every other variant against the baseline (the first variant unless
    /// re-based with [`Study::set_baseline`]); empty with a single variant.
    pub comparisons: Vec<Comparison>,
    /// What the verdict ranks by and requires (the scenario's `[objective]`).
    pub objective: crate::metrics::objective::Objective,
    /// Where the run came from: the scenario file and its hash (the command line is filled in by
    /// the CLI).
    pub provenance: Provenance,
    /// Set when the results were measured on real sockets (`retrystorm emulate`), not simulated.
    pub emulation: Option<Emulation>,
}

/// Where a run came from, recorded in `summary.json` and the report.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Provenance {
    /// The command line, as given (empty when the library was called directly).
    pub command: Vec<String>,
    /// The `--set` overrides, as given.
    pub overrides: Vec<String>,
    /// The scenario file.
    pub scenario_file: String,
    /// FNV-1a 64 of the scenario file's text.
    pub scenario_hash: String,
}

impl Study {
    /// The ranking of the variants under the study's objective.
    pub fn verdict(&self) -> verdict::Verdict {
        let candidates: Vec<verdict::Candidate> =
            self.variants.iter().map(|v| verdict::Candidate::new(&v.name, &v.metrics, &v.hops, &v.tenants)).collect();
        verdict::verdict(&self.objective, &candidates)
    }

    /// The ranking of `candidates` (this study's variants, with their labels and conditions)
    /// under the study's objective.
    pub fn verdict_of(&self, candidates: &[verdict::Candidate]) -> verdict::Verdict {
        verdict::verdict(&self.objective, candidates)
    }

    /// Recomputes the comparisons against variant `baseline` (an index into `variants`).
    pub fn set_baseline(&mut self, baseline: usize) {
        self.comparisons = compare::comparisons(&self.variants, baseline);
    }
}

/// Runs that stopped early for one reason, over a study's (or a sweep's) groups of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    /// Why they stopped (e.g. the drain limit was reached).
    pub why: String,
    /// How many runs stopped for it.
    pub stopped: usize,
    /// How many runs there were in all.
    pub total: usize,
    /// Each group (a variant, a sweep cell's variant) with runs stopped for it, and how many.
    pub groups: Vec<(String, usize)>,
}

/// Groups the runs that stopped early by reason, in the order the reasons are first met; each
/// group's list holds `replication N: reason` entries ([`VariantResult::truncated`]) and every
/// group has `runs_each` runs. The one reading the table, the report and the sweep share.
pub fn truncations<'a>(groups: impl IntoIterator<Item = (String, &'a [String])>, runs_each: usize) -> Vec<Truncation> {
    let mut total = 0;
    let mut out: Vec<Truncation> = Vec::new();
    for (name, truncated) in groups {
        total += runs_each;
        for entry in truncated {
            let why = entry.split_once(": ").map_or(entry.as_str(), |(_, why)| why);
            let at = match out.iter().position(|t| t.why == why) {
                Some(at) => at,
                None => {
                    out.push(Truncation { why: why.to_string(), stopped: 0, total: 0, groups: Vec::new() });
                    out.len() - 1
                }
            };
            let t = &mut out[at];
            t.stopped += 1;
            match t.groups.iter_mut().find(|(g, _)| *g == name) {
                Some((_, n)) => *n += 1,
                None => t.groups.push((name.clone(), 1)),
            }
        }
    }
    for t in &mut out {
        t.total = total;
    }
    out
}

/// Simulates `variants` of `scenario` for its replications.
pub fn run_study(scenario: &Scenario, variants: &[Variant], options: &RunOptions) -> Study {
    let pool = thread_pool(options.threads);
    let progress = Progress::new(options.progress, (variants.len() * scenario.replications as usize) as u64);
    let study = pool.install(|| simulate(scenario, variants, &progress));
    progress.finish();
    Study { threads: pool.current_num_threads(), ..study }
}

/// A pool of `threads` workers (None: one per core); its runs stop when the calling thread's
/// stop flag is set (`sim::set_stop_flag`: the Python package's Ctrl-C).
pub fn thread_pool(threads: Option<usize>) -> rayon::ThreadPool {
    memory::keep_freed_memory();
    let stop = sim::stop_flag();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .start_handler(move |_| sim::set_stop_flag(stop.clone()))
        .build()
        .expect("thread pool")
}

/// Simulates on the current rayon pool, counting each finished run on `progress`.
///
/// Every (variant, replication) pair is one task. Each finished run is reduced to its digest on
/// the thread that ran it, and the digests are folded into their variant's results in task order
/// whatever thread ran them (`in_order`), which is what makes the outcome independent of the
/// thread count, and the memory independent of the number of replications.
pub fn simulate(scenario: &Scenario, variants: &[Variant], progress: &Progress) -> Study {
    let replications = scenario.replications as usize;
    let tasks = variants.len() * replications;
    let started = Instant::now();
    let shapes: Vec<_> = variants.iter().map(|v| v.spec.run_shape()).collect();
    let mut folded = Folded::new(variants, replications);
    let run_bytes = variants.iter().map(|v| memory::run_bytes(&v.spec)).max().unwrap_or(0);
    run_in_order(
        tasks,
        aggregate::window(rayon::current_num_threads(), run_bytes),
        |task| {
            let v = task / replications;
            let record = sim::run(&variants[v].spec, scenario.seed, (task % replications) as u64);
            progress.inc();
            aggregate::digest(&variants[v].spec, &shapes[v], record)
        },
        |task, digest| folded.add(task / replications, digest),
    );
    let wall_s = started.elapsed().as_secs_f64();
    folded.into_study(scenario, replications as u32, wall_s)
}

/// A study from finished runs: `replications` records per variant, in variant order (the
/// emulator's one measured run per variant).
pub fn assemble(
    scenario: &Scenario,
    variants: &[Variant],
    records: Vec<RunRecord>,
    replications: u32,
    wall_s: f64,
) -> Study {
    let per = replications.max(1) as usize;
    let mut folded = Folded::new(variants, per);
    for (task, record) in records.into_iter().enumerate() {
        let spec = &variants[task / per].spec;
        folded.add(task / per, aggregate::digest(spec, &spec.run_shape(), record));
    }
    folded.into_study(scenario, replications, wall_s)
}

/// Every variant's results so far, and the study's event counts.
struct Folded<'a> {
    variants: Vec<Aggregate<'a>>,
    /// Events, retries run ahead, attempts, over all runs.
    counts: [u64; 3],
    /// Per variant: its runs whose first hop was overloaded before the trigger.
    overloaded_before: Vec<u32>,
}

impl<'a> Folded<'a> {
    fn new(variants: &'a [Variant], replications: usize) -> Folded<'a> {
        Folded {
            variants: variants.iter().map(|v| Aggregate::new(v, replications)).collect(),
            counts: [0; 3],
            overloaded_before: vec![0; variants.len()],
        }
    }

    fn add(&mut self, variant: usize, digest: aggregate::Digest) {
        for (total, n) in self.counts.iter_mut().zip(digest.counts) {
            *total += n;
        }
        self.overloaded_before[variant] += u32::from(digest.overloaded_before_trigger());
        self.variants[variant].add(digest);
    }

    fn into_study(self, scenario: &Scenario, replications: u32, wall_s: f64) -> Study {
        let results: Vec<VariantResult> = self.variants.into_iter().map(Aggregate::finish).collect();
        let comparisons = if results.len() > 1 { compare::comparisons(&results, 0) } else { Vec::new() };
        let [events, retries_run_ahead, attempts] = self.counts;
        let mut warnings = scenario.warnings.clone();
        for (v, &n) in results.iter().zip(&self.overloaded_before).filter(|(_, &n)| n > 0) {
            warnings.push(format!(
                "variant `{}`: in {n} of {replications} runs the first hop was already overloaded before the trigger (over 5% of its replies failures beyond invalid or poison payloads, or a tenth of its attempts still inside with a queue): there is no healthy state to recover to, so their recovery is not observable rather than \"recovered\"; give the hops capacity above the load before the fault",
                v.name
            ));
        }
        Study {
            scenario: scenario.name.clone(),
            seed: scenario.seed,
            replications,
            bucket: scenario.base.bucket,
            variants: results,
            warnings,
            events,
            retries_run_ahead,
            attempts,
            wall_s,
            threads: rayon::current_num_threads(),
            comparisons,
            objective: scenario.objective.clone(),
            provenance: Provenance {
                scenario_file: scenario.file.clone(),
                scenario_hash: scenario.source_hash(),
                ..Provenance::default()
            },
            emulation: None,
        }
    }
}

/// The index of each column of [`SERIES_COLUMNS`], by its name: rows are written through these,
/// never by position, so a column added, moved or renamed cannot shift the others.
pub(crate) mod col {
    use super::{column_index, SERIES_COLUMNS};
    pub const ATTEMPTS: usize = column_index(&SERIES_COLUMNS, "attempts");
    pub const FIRST_ATTEMPTS: usize = column_index(&SERIES_COLUMNS, "first_attempts");
    pub const RETRIES: usize = column_index(&SERIES_COLUMNS, "retries");
    pub const SUCCESSES: usize = column_index(&SERIES_COLUMNS, "successes");
    pub const FAILURES: usize = column_index(&SERIES_COLUMNS, "failures");
    pub const QUEUE_LEN_MAX: usize = column_index(&SERIES_COLUMNS, "queue_len_max");
    pub const IN_FLIGHT: usize = column_index(&SERIES_COLUMNS, "in_flight");
    pub const QUEUE_WAIT_MAX_S: usize = column_index(&SERIES_COLUMNS, "queue_wait_max_s");
    pub const GOODPUT_PER_S: usize = column_index(&SERIES_COLUMNS, "goodput_per_s");
    pub const BACKLOG: usize = column_index(&SERIES_COLUMNS, "backlog");
    pub const RETRIES_PENDING: usize = column_index(&SERIES_COLUMNS, "retries_pending");
    pub const ADMISSION_LIMIT: usize = column_index(&SERIES_COLUMNS, "admission_limit");
    pub const WORKERS: usize = column_index(&SERIES_COLUMNS, "workers");
    pub const THROUGHPUT_PER_S: usize = column_index(&SERIES_COLUMNS, "throughput_per_s");
    pub const TIMELY_GOODPUT_PER_S: usize = column_index(&SERIES_COLUMNS, "timely_goodput_per_s");
    pub const BUDGET_TOKENS: usize = column_index(&SERIES_COLUMNS, "budget_tokens");
    pub const BUDGET_DENIED: usize = column_index(&SERIES_COLUMNS, "budget_denied");
    pub const CACHE_LOOKUPS: usize = column_index(&SERIES_COLUMNS, "cache_lookups");
    pub const CACHE_HIT_RATIO: usize = column_index(&SERIES_COLUMNS, "cache_hit_ratio");
}
