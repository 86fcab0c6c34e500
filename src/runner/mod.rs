//! Runs variants × replications in parallel (rayon) and aggregates them into a [`Study`].
//!
//! Every (variant, replication) pair is an independent task with its own seeded streams; results
//! are collected in task order, so the outcome does not depend on the thread count.

pub mod compare;
pub mod map;
pub(crate) mod memory;
pub(crate) mod plan;
pub(crate) mod plan_range;
pub(crate) mod progress;
pub mod rare;
pub(crate) mod sweep;
pub mod verdict;

use crate::engine::time::ns_to_secs;
use crate::engine::Nanos;
use crate::metrics::stats::Stat;
use crate::metrics::summary::{scalars, MetricRow, Scalars};
use crate::metrics::{HopBucket, RunRecord, TenantBucket};
use crate::model::sim;
use crate::scenario::{Scenario, Variant};
use compare::Comparison;
use progress::Progress;
use rayon::prelude::*;
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
/// replies that reached a caller still waiting, per second (issue 16). `budget_tokens` and
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
    /// Retry-delay samples at hop 0 from all replications, per retry number (1-based index − 1).
    pub retry_delays_ns: Vec<Vec<u64>>,
    /// Latency samples (µs) for CDFs: the merged histogram's iterated values (value, count).
    pub latency_us: Vec<(u64, u64)>,
    /// Why replications stopped early, if any did (`replication N: reason`).
    pub truncated: Vec<String>,
    /// Per-replication scalars (kept for paired differences).
    pub per_replication: Vec<Scalars>,
    /// Per replica of the hops with more than one: `HOP[i]` and its metrics (issue 15).
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

/// What an emulated run measured about itself (`summary.json`'s `emulation`): how the machine
/// kept up with the scenario's clock.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emulation {
    /// Always true: these numbers come from the wire, not from the simulator.
    pub emulated: bool,
    /// Wall seconds per scenario second.
    pub time_scale: f64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Mean timer lateness measured before the run (wall seconds a sleep woke after its
    /// deadline); every sleep of the run asks to wake this much early.
    pub timer_lateness_calibration_mean_s: f64,
    /// Mean timer error during the run, over every service and backoff sleep: wall seconds
    /// between a deadline and the wake-up, early or late, after that correction.
    pub timer_lateness_mean_s: f64,
    /// Its 99th percentile.
    pub timer_lateness_p99_s: f64,
    /// Sleeps measured.
    pub timer_samples: u64,
    /// Mean time to open a connection and complete the HTTP/1.1 handshake (wall seconds).
    pub connect_mean_s: f64,
    /// Its 99th percentile.
    pub connect_p99_s: f64,
    /// Connections opened (one per attempt).
    pub connections: u64,
    /// CPU seconds the emulator's process used during the run (servers and clients together;
    /// `None` where the system does not say).
    pub cpu_s: Option<f64>,
    /// `cpu_s` ÷ (wall seconds × cores): 1 is every core busy (CPU saturation).
    pub cpu_share: Option<f64>,
    /// What the emulator warns about this machine (timers too late for the service times).
    pub warnings: Vec<String>,
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

/// A pool of `threads` workers (None: one per core).
pub fn thread_pool(threads: Option<usize>) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(threads.unwrap_or(0)).build().expect("thread pool")
}

/// Simulates on the current rayon pool, counting each finished run on `progress`.
///
/// Every (variant, replication) pair is one task; `collect` keeps task order whatever thread ran
/// a task, which is what makes the outcome independent of the thread count.
pub fn simulate(scenario: &Scenario, variants: &[Variant], progress: &Progress) -> Study {
    let replications = scenario.replications as usize;
    let tasks = variants.len() * replications;
    let started = Instant::now();
    let records: Vec<RunRecord> = (0..tasks)
        .into_par_iter()
        .map(|task| {
            let variant = &variants[task / replications];
            let record = sim::run(&variant.spec, scenario.seed, (task % replications) as u64);
            progress.inc();
            record
        })
        .collect();
    let wall_s = started.elapsed().as_secs_f64();
    assemble(scenario, variants, &records, scenario.replications, wall_s)
}

/// A study from finished runs: `replications` records per variant, in variant order (the
/// simulator's, or the emulator's one measured run per variant).
pub fn assemble(
    scenario: &Scenario,
    variants: &[Variant],
    records: &[RunRecord],
    replications: u32,
    wall_s: f64,
) -> Study {
    let events = records.iter().map(|r| r.events).sum();
    let retries_run_ahead = records.iter().map(|r| r.retries_run_ahead).sum();
    let attempts = records.iter().flat_map(|r| &r.hops).map(|h| h.attempts).sum();
    let mut chunks = records.chunks(replications.max(1) as usize);
    let results: Vec<VariantResult> =
        variants.iter().map(|v| aggregate(v, chunks.next().expect("one chunk per variant"))).collect();
    let comparisons = if results.len() > 1 { compare::comparisons(&results, 0) } else { Vec::new() };
    Study {
        scenario: scenario.name.clone(),
        seed: scenario.seed,
        replications,
        bucket: scenario.base.bucket,
        variants: results,
        warnings: scenario.warnings.clone(),
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

fn stat_row(rows: &[&MetricRow]) -> StatRow {
    StatRow(
        rows[0]
            .iter()
            .enumerate()
            .map(|(i, (metric, _))| {
                (*metric, Stat::with_interval(rows.iter().map(|r| r[i].1).collect(), metric.interval()))
            })
            .collect(),
    )
}

fn aggregate(variant: &Variant, records: &[RunRecord]) -> VariantResult {
    let spec = &variant.spec;
    let bucket_s = ns_to_secs(spec.bucket);
    let shape = spec.run_shape();
    let per_replication: Vec<Scalars> = records.iter().map(|r| scalars(r, &shape)).collect();
    let globals: Vec<&MetricRow> = per_replication.iter().map(|s| &s.global).collect();
    let scope = |pick: &dyn Fn(&Scalars) -> &MetricRow| stat_row(&per_replication.iter().map(pick).collect::<Vec<_>>());
    let hops = spec.hops.iter().enumerate().map(|(h, hop)| (hop.name.clone(), scope(&|s| &s.hops[h]))).collect();
    let tenants =
        spec.tenants.iter().enumerate().map(|(t, ten)| (ten.name.clone(), scope(&|s| &s.tenants[t]))).collect();
    let hop_series = spec
        .hops
        .iter()
        .enumerate()
        .map(|(h, hop)| MeanSeries {
            name: hop.name.clone(),
            rows: hit_ratios(mean_rows(records, |r| hop_columns(&r.hop_series[h], bucket_s))),
        })
        .collect();
    let tenant_series = spec
        .tenants
        .iter()
        .enumerate()
        .map(|(t, ten)| MeanSeries {
            name: ten.name.clone(),
            rows: mean_rows(records, |r| {
                let start = spec.policies[ten.policy].budget.as_ref().map_or(0.0, |b| b.kind.new_state().tokens);
                tenant_columns(&r.tenant_series[t], bucket_s, start)
            }),
        })
        .collect();
    let mut retry_delays_ns = vec![Vec::new(); crate::metrics::RETRY_DELAY_RETRIES];
    for r in records {
        for (k, samples) in r.retry_delays_ns.iter().enumerate() {
            retry_delays_ns[k].extend_from_slice(samples);
        }
    }
    let mut latency = crate::metrics::new_latency_histogram();
    for r in records {
        for t in &r.tenants {
            latency.add(&t.latency_us).expect("same configuration");
        }
    }
    let latency_us = latency.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
    let truncated = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.truncated.as_ref().map(|why| format!("replication {i}: {why}")))
        .collect();
    let (replicas, replica_series) = replica_results(spec, records, &per_replication);
    let attempts_range = (0..spec.hops.len())
        .map(|h| {
            let buckets = records.iter().map(|r| r.hop_series[h].len()).max().unwrap_or(0);
            (0..buckets)
                .map(|b| {
                    let counts = records.iter().map(|r| r.hop_series[h].get(b).map_or(0.0, |x| f64::from(x.attempts)));
                    counts.fold([f64::INFINITY, f64::NEG_INFINITY], |[lo, hi], c| [lo.min(c), hi.max(c)])
                })
                .collect()
        })
        .collect();
    VariantResult {
        attempts_range,
        replicas,
        replica_series,
        name: variant.name.clone(),
        spec: spec.clone(),
        metrics: stat_row(&globals),
        hops,
        tenants,
        hop_series,
        tenant_series,
        retry_delays_ns,
        latency_us,
        truncated,
        per_replication,
    }
}

/// The per-replica rows and mean series of a variant (empty without balanced hops).
fn replica_results(
    spec: &crate::model::SimSpec,
    records: &[RunRecord],
    per_replication: &[Scalars],
) -> (Vec<(String, StatRow)>, Vec<ReplicaSeries>) {
    let Some(first) = records.first() else { return (Vec::new(), Vec::new()) };
    let n = records.len() as f64;
    let mut rows = Vec::new();
    let mut series = Vec::new();
    for (i, r) in first.replicas.iter().enumerate() {
        let name = format!("{}[{}]", spec.hops[r.hop].name, r.replica);
        rows.push((name.clone(), stat_row(&per_replication.iter().map(|s| &s.replicas[i]).collect::<Vec<_>>())));
        let mut sum = vec![[0.0; REPLICA_COLUMNS.len()]; r.series.len()];
        for rec in records {
            for (acc, b) in sum.iter_mut().zip(&rec.replicas[i].series) {
                let row = [b.attempts, b.successes, b.failures, b.in_flight_max, b.out_of_rotation].map(f64::from);
                for (s, v) in acc.iter_mut().zip(row) {
                    *s += v / n;
                }
            }
        }
        series.push(ReplicaSeries { name, rows: sum });
    }
    (rows, series)
}

/// Number of columns of a series row.
const SERIES_WIDTH: usize = SERIES_COLUMNS.len();

/// The index of each column of [`SERIES_COLUMNS`], by its name: rows are written through these,
/// never by position, so a column added, moved or renamed cannot shift the others.
mod col {
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

/// A series row with the named columns set and every other column 0 (a tenant has no queue, a
/// hop no budget).
fn series_row(values: &[(usize, f64)]) -> [f64; SERIES_WIDTH] {
    let mut row = [0.0; SERIES_WIDTH];
    for &(column, value) in values {
        row[column] = value;
    }
    row
}

fn hop_columns(series: &[HopBucket], bucket_s: f64) -> Vec<[f64; SERIES_WIDTH]> {
    let backlog = crate::metrics::after::backlog_levels(series);
    let pending = crate::metrics::after::pending_retry_levels(series);
    series
        .iter()
        .enumerate()
        .map(|(i, b)| {
            series_row(&[
                (col::ATTEMPTS, f64::from(b.attempts)),
                (col::FIRST_ATTEMPTS, f64::from(b.first_attempts)),
                (col::RETRIES, f64::from(b.retries)),
                (col::SUCCESSES, f64::from(b.successes)),
                (col::FAILURES, f64::from(b.failures)),
                (col::QUEUE_LEN_MAX, f64::from(b.queue_len_max)),
                (col::IN_FLIGHT, f64::from(b.in_flight_max)),
                (col::QUEUE_WAIT_MAX_S, ns_to_secs(b.queue_wait_max_ns)),
                (col::GOODPUT_PER_S, f64::from(b.successes) / bucket_s),
                (col::BACKLOG, backlog[i + 1] as f64),
                (col::RETRIES_PENDING, pending[i + 1] as f64),
                (col::ADMISSION_LIMIT, f64::from(b.admission_limit)),
                (col::WORKERS, f64::from(b.workers)),
                (col::THROUGHPUT_PER_S, f64::from(b.served) / bucket_s),
                (col::TIMELY_GOODPUT_PER_S, f64::from(b.timely_ok) / bucket_s),
                (col::CACHE_LOOKUPS, f64::from(b.cache_lookups)),
                // Hits for now: `hit_ratios` divides the means once they are averaged.
                (col::CACHE_HIT_RATIO, f64::from(b.cache_hits)),
            ])
        })
        .collect()
}

fn tenant_columns(series: &[TenantBucket], bucket_s: f64, start_tokens: f64) -> Vec<[f64; SERIES_WIDTH]> {
    let mut tokens = start_tokens;
    series
        .iter()
        .map(|b| {
            if b.budget_decisions > 0 {
                tokens = b.budget_tokens_sum / f64::from(b.budget_decisions);
            }
            series_row(&[
                (col::ATTEMPTS, f64::from(b.attempts)),
                (col::FIRST_ATTEMPTS, f64::from(b.first_attempts)),
                (col::RETRIES, f64::from(b.retries)),
                (col::SUCCESSES, f64::from(b.successes)),
                (col::FAILURES, f64::from(b.failures)),
                (col::IN_FLIGHT, f64::from(b.in_flight)),
                (col::GOODPUT_PER_S, f64::from(b.successes) / bucket_s),
                (col::BUDGET_TOKENS, tokens),
                (col::BUDGET_DENIED, f64::from(b.budget_denied)),
            ])
        })
        .collect()
}

/// The `cache_hit_ratio` column of averaged hop rows: it holds the mean hits until here, and
/// becomes mean hits ÷ mean lookups (the hit ratio pooled over replications; 0 without lookups).
fn hit_ratios(mut rows: Vec<[f64; SERIES_WIDTH]>) -> Vec<[f64; SERIES_WIDTH]> {
    for row in &mut rows {
        let (lookups, hits) = (row[col::CACHE_LOOKUPS], row[col::CACHE_HIT_RATIO]);
        row[col::CACHE_HIT_RATIO] = if lookups > 0.0 { hits / lookups } else { 0.0 };
    }
    rows
}

/// Per bucket, the mean over `records` of the rows `columns` derives from each record.
fn mean_rows(
    records: &[RunRecord],
    columns: impl Fn(&RunRecord) -> Vec<[f64; SERIES_WIDTH]>,
) -> Vec<[f64; SERIES_WIDTH]> {
    let n = records.len() as f64;
    let mut sum: Vec<[f64; SERIES_WIDTH]> = Vec::new();
    for r in records {
        let rows = columns(r);
        sum.resize(rows.len(), [0.0; SERIES_WIDTH]);
        for (acc, row) in sum.iter_mut().zip(rows) {
            for (s, v) in acc.iter_mut().zip(row) {
                *s += v;
            }
        }
    }
    sum.into_iter().map(|row| row.map(|s| s / n)).collect()
}
