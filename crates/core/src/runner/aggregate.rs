//! A variant's replications folded into its results as they finish: running sums of the series,
//! the merged latency and retry-delay histograms, the per-replication scalars (for intervals and
//! paired differences). A finished run is reduced to a [`Digest`] on the thread that ran it; only
//! the digests of runs that finished ahead of their turn wait ([`window`] bounds them), so memory
//! does not grow with the number of replications (beyond their scalars).
//!
//! Digests are folded in task order whatever thread ran them, so every sum is taken in the same
//! order as when all the runs were held and folded at the end: the outcome does not depend on the
//! thread count, and it is bit for bit what it was.

use super::{col, MeanSeries, ReplicaSeries, StatRow, VariantResult, REPLICA_COLUMNS, SERIES_COLUMNS};
use crate::engine::time::ns_to_secs;
use crate::engine::Nanos;
use crate::metrics::delays::RetryDelays;
use crate::metrics::stats::Stat;
use crate::metrics::summary::{scalars, MetricRow, Scalars};
use crate::metrics::{HopBucket, ReplicaRecord, RunRecord, RunShape, TenantBucket};
use crate::model::SimSpec;
use crate::scenario::Variant;

/// Number of columns of a series row.
const SERIES_WIDTH: usize = SERIES_COLUMNS.len();

/// A series row.
type Row = [f64; SERIES_WIDTH];

/// A replica's series row.
type ReplicaRow = [f64; REPLICA_COLUMNS.len()];

/// What the study keeps of one finished run, reduced on the thread that ran it: its series as
/// the run counted them (rows are derived when the digest is folded), its scalars, its binned
/// delays and its latency histograms.
pub struct Digest {
    scalars: Scalars,
    hop_series: Vec<Vec<HopBucket>>,
    tenant_series: Vec<Vec<TenantBucket>>,
    replicas: Vec<ReplicaRecord>,
    delays: RetryDelays,
    latency: Vec<crate::metrics::Latencies>,
    truncated: Option<String>,
    /// Events, retries run ahead, attempts at every hop.
    pub counts: [u64; 3],
}

impl Digest {
    /// The run's first hop was overloaded before its trigger (its recovery not observable).
    pub fn overloaded_before_trigger(&self) -> bool {
        self.scalars.overloaded_before_trigger
    }
}

/// Bytes that runs in flight or waiting their turn may hold at once, beyond one per thread.
const WAITING_BYTES: u64 = 256 << 20;

/// The most runs taken and not yet folded at once, on `threads` threads, when one run holds
/// `run_bytes` until it is folded (`runner::memory` counts them): enough to keep every thread
/// busy while a run ahead of its turn waits, and no more than [`WAITING_BYTES`] allow beyond one
/// per thread.
pub fn window(threads: usize, run_bytes: u64) -> usize {
    let threads = threads.max(1);
    let affordable = usize::try_from(WAITING_BYTES / run_bytes.max(1)).unwrap_or(usize::MAX);
    (4 * threads + 4).min(affordable).max(threads)
}

/// Caps of the policies that clients use to call hop 0 (the ones whose delays are sampled):
/// their delays are point masses in the histogram.
pub fn client_caps(spec: &SimSpec) -> Vec<Nanos> {
    let mut caps: Vec<Nanos> = spec.tenants.iter().map(|t| spec.policies[t.policy].cap).collect();
    caps.sort_unstable();
    caps.dedup();
    caps
}

/// Reduces a finished run of `spec` to what its variant's results need.
pub fn digest(spec: &SimSpec, shape: &RunShape, record: RunRecord) -> Digest {
    let mut delays = RetryDelays::new(&client_caps(spec));
    delays.add(&record.retry_delays_ns);
    let attempts = record.hops.iter().map(|h| h.attempts).sum();
    let scalars = scalars(&record, shape);
    Digest {
        scalars,
        delays,
        truncated: record.truncated,
        counts: [record.events, record.retries_run_ahead, attempts],
        latency: record.tenants.into_iter().map(|t| t.latency_us).collect(),
        hop_series: record.hop_series,
        tenant_series: record.tenant_series,
        replicas: record.replicas,
    }
}

/// A variant's results so far: the digests of its first replications folded in (each run's
/// scalars kept in `per_replication`).
pub struct Aggregate<'a> {
    variant: &'a Variant,
    /// Replications the variant will have (the replica means divide by it as they add).
    replications: usize,
    per_replication: KeptScalars,
    hop_sums: Vec<Vec<Row>>,
    tenant_sums: Vec<Vec<Row>>,
    replica_sums: Vec<(usize, u32, Vec<ReplicaRow>)>,
    /// Per hop, per bucket: the fewest and the most attempts so far.
    attempts_range: Vec<Vec<[f64; 2]>>,
    delays: RetryDelays,
    /// The tenants' latencies pooled (exact samples while few: folding a short run's samples
    /// into an HdrHistogram one by one was a third of its fixed cost).
    latency: crate::metrics::Latencies,
    truncated: Vec<String>,
}

impl<'a> Aggregate<'a> {
    /// Nothing folded yet; `replications` digests will be.
    pub fn new(variant: &'a Variant, replications: usize) -> Aggregate<'a> {
        let spec = &variant.spec;
        Aggregate {
            variant,
            replications,
            per_replication: KeptScalars::default(),
            hop_sums: vec![Vec::new(); spec.hops.len()],
            tenant_sums: vec![Vec::new(); spec.tenants.len()],
            replica_sums: Vec::new(),
            attempts_range: vec![Vec::new(); spec.hops.len()],
            delays: RetryDelays::new(&client_caps(spec)),
            latency: crate::metrics::Latencies::new(),
            truncated: Vec::new(),
        }
    }

    /// Folds in the next replication's digest (replications in order: 0, 1, …).
    pub fn add(&mut self, digest: Digest) {
        let replication = self.per_replication.runs;
        let spec = &self.variant.spec;
        let bucket_s = ns_to_secs(spec.bucket);
        let hop_rows: Vec<Vec<Row>> = digest.hop_series.iter().map(|s| hop_columns(s, bucket_s)).collect();
        for (sum, rows) in self.hop_sums.iter_mut().zip(&hop_rows) {
            add_rows(sum, rows);
        }
        for ((sum, series), ten) in self.tenant_sums.iter_mut().zip(&digest.tenant_series).zip(&spec.tenants) {
            let start = spec.policies[ten.policy].budget.as_ref().map_or(0.0, |b| b.kind.new_state().tokens);
            add_rows(sum, &tenant_columns(series, bucket_s, start));
        }
        for (range, rows) in self.attempts_range.iter_mut().zip(&hop_rows) {
            let buckets = range.len().max(rows.len());
            // Buckets a run did not reach count 0 attempts, for it and for the runs before it.
            let unseen = if replication == 0 { [f64::INFINITY, f64::NEG_INFINITY] } else { [0.0, 0.0] };
            range.resize(buckets, unseen);
            for (b, [lo, hi]) in range.iter_mut().enumerate() {
                let c = rows.get(b).map_or(0.0, |r| r[col::ATTEMPTS]);
                (*lo, *hi) = (lo.min(c), hi.max(c));
            }
        }
        if replication == 0 {
            // The first run names the replicas and sets each series' length.
            self.replica_sums = digest
                .replicas
                .iter()
                .map(|r| (r.hop, r.replica, vec![[0.0; REPLICA_COLUMNS.len()]; r.series.len()]))
                .collect();
        }
        let n = self.replications as f64;
        for ((_, _, sum), r) in self.replica_sums.iter_mut().zip(&digest.replicas) {
            for (acc, b) in sum.iter_mut().zip(&r.series) {
                let row = [b.attempts, b.successes, b.failures, b.in_flight_max, b.out_of_rotation].map(f64::from);
                for (s, v) in acc.iter_mut().zip(row) {
                    *s += v / n;
                }
            }
        }
        self.delays.merge(&digest.delays);
        for l in &digest.latency {
            self.latency.extend(l);
        }
        if let Some(why) = digest.truncated {
            self.truncated.push(format!("replication {replication}: {why}"));
        }
        self.per_replication.push(digest.scalars, self.replications);
    }

    /// The variant's results.
    pub fn finish(self) -> VariantResult {
        let spec = &self.variant.spec;
        let n = self.per_replication.runs as f64;
        let KeptStats { global, hops, tenants, replicas } = self.per_replication.into_stats();
        let mean = |sums: Vec<Vec<Row>>| -> Vec<Vec<Row>> {
            sums.into_iter().map(|rows| rows.into_iter().map(|row| row.map(|s| s / n)).collect()).collect()
        };
        let hop_series = spec
            .hops
            .iter()
            .zip(mean(self.hop_sums))
            .map(|(hop, rows)| MeanSeries { name: hop.name.clone(), rows: hit_ratios(rows) })
            .collect();
        let tenant_series = spec
            .tenants
            .iter()
            .zip(mean(self.tenant_sums))
            .map(|(ten, rows)| MeanSeries { name: ten.name.clone(), rows })
            .collect();
        let named = |names: Vec<String>, rows: Vec<StatRow>| -> Vec<(String, StatRow)> {
            assert_eq!(names.len(), rows.len(), "a row of statistics per name");
            names.into_iter().zip(rows).collect()
        };
        let hops = named(spec.hops.iter().map(|hop| hop.name.clone()).collect(), hops);
        let tenants = named(spec.tenants.iter().map(|t| t.name.clone()).collect(), tenants);
        let mut names = Vec::new();
        let mut replica_series = Vec::new();
        for (hop, replica, rows) in self.replica_sums {
            let name = format!("{}[{}]", spec.hops[hop].name, replica);
            names.push(name.clone());
            replica_series.push(ReplicaSeries { name, rows });
        }
        let replicas = named(names, replicas);
        let latency_us =
            self.latency.to_histogram().iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
        VariantResult {
            attempts_range: self.attempts_range,
            replicas,
            replica_series,
            name: self.variant.name.clone(),
            spec: spec.clone(),
            metrics: global,
            hops,
            tenants,
            hop_series,
            tenant_series,
            retry_delays: self.delays,
            latency_us,
            truncated: self.truncated,
        }
    }
}

/// The runs' scalars, kept metric by metric beside the first run's rows (every run has the same
/// rows of the same metrics, asserted as each comes in): one column per metric, each with room
/// for every run made when the first comes in, so that no run allocates for them and the
/// statistics take each column as it is. Kept as each run's own vectors, they were thousands of
/// small allocations that stay, made between one short run and the next: each run then found
/// its own allocations in fresh memory, about 5% of a 1 s M/M/1 run's time; kept as one list run
/// after run, they were gathered into columns at the end, a serial copy of every value
/// (docs/PERFORMANCE.md). [`KeptScalars::into_stats`] summarises each metric over the runs.
#[derive(Default)]
struct KeptScalars {
    first: Option<Scalars>,
    /// One column per metric ([`rows`] order), each the runs' values in run order.
    columns: Vec<Vec<Option<f64>>>,
    runs: usize,
}

/// The rows of `scalars` in a fixed order: global, hops, tenants, replicas.
fn rows(scalars: &Scalars) -> impl Iterator<Item = &MetricRow> {
    std::iter::once(&scalars.global).chain(&scalars.hops).chain(&scalars.tenants).chain(&scalars.replicas)
}

impl KeptScalars {
    /// Keeps the next run's scalars (of `replications` in all).
    fn push(&mut self, scalars: Scalars, replications: usize) {
        match &self.first {
            None => {
                let width = rows(&scalars).map(Vec::len).sum::<usize>();
                self.columns = (0..width).map(|_| Vec::with_capacity(replications.max(1))).collect();
            }
            Some(first) => {
                let scopes = |s: &Scalars| [s.hops.len(), s.tenants.len(), s.replicas.len()];
                let same = scopes(first) == scopes(&scalars)
                    && rows(first)
                        .zip(rows(&scalars))
                        .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|((m, _), (n, _))| m == n));
                assert!(same, "replication {}: its scalars have other rows or metrics than the first's", self.runs);
            }
        }
        for (column, &(_, v)) in self.columns.iter_mut().zip(rows(&scalars).flatten()) {
            column.push(v);
        }
        if self.first.is_none() {
            self.first = Some(scalars);
        }
        self.runs += 1;
    }

    /// The statistics of every metric over the runs, in the first run's rows: each metric's
    /// column summarised with the metric's interval.
    fn into_stats(self) -> KeptStats {
        let Some(first) = self.first else { return KeptStats::default() };
        assert!(
            self.columns.len() == rows(&first).map(Vec::len).sum::<usize>()
                && self.columns.iter().all(|c| c.len() == self.runs),
            "every run's scalars kept, one column per metric"
        );
        let mut columns = self.columns.into_iter();
        let mut stat_row = |template: &MetricRow| -> StatRow {
            StatRow(
                template
                    .iter()
                    .map(|&(metric, _)| {
                        let values = columns.next().expect("a column per metric");
                        (metric, Stat::with_interval(values, metric.interval()))
                    })
                    .collect(),
            )
        };
        KeptStats {
            global: stat_row(&first.global),
            hops: first.hops.iter().map(&mut stat_row).collect(),
            tenants: first.tenants.iter().map(&mut stat_row).collect(),
            replicas: first.replicas.iter().map(&mut stat_row).collect(),
        }
    }
}

/// The statistics over the runs of each row of [`Scalars`].
#[derive(Debug, Default, PartialEq)]
struct KeptStats {
    global: StatRow,
    hops: Vec<StatRow>,
    tenants: Vec<StatRow>,
    replicas: Vec<StatRow>,
}

/// Adds `rows` into `sum` bucket by bucket (a longer run lengthens the sum; missing buckets add
/// nothing).
fn add_rows(sum: &mut Vec<Row>, rows: &[Row]) {
    if sum.len() < rows.len() {
        sum.resize(rows.len(), [0.0; SERIES_WIDTH]);
    }
    for (acc, row) in sum.iter_mut().zip(rows) {
        for (s, v) in acc.iter_mut().zip(row) {
            *s += v;
        }
    }
}

/// A series row with the named columns set and every other column 0 (a tenant has no queue, a
/// hop no budget).
fn series_row(values: &[(usize, f64)]) -> Row {
    let mut row = [0.0; SERIES_WIDTH];
    for &(column, value) in values {
        row[column] = value;
    }
    row
}

fn hop_columns(series: &[HopBucket], bucket_s: f64) -> Vec<Row> {
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

fn tenant_columns(series: &[TenantBucket], bucket_s: f64, start_tokens: f64) -> Vec<Row> {
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
fn hit_ratios(mut rows: Vec<Row>) -> Vec<Row> {
    for row in &mut rows {
        let (lookups, hits) = (row[col::CACHE_LOOKUPS], row[col::CACHE_HIT_RATIO]);
        row[col::CACHE_HIT_RATIO] = if lookups > 0.0 { hits / lookups } else { 0.0 };
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::{KeptScalars, KeptStats};
    use crate::metrics::catalogue::Metric;
    use crate::metrics::stats::{Stat, StatRow};
    use crate::metrics::summary::{MetricRow, Scalars};

    fn scalars(run: u32, replicas: usize) -> Scalars {
        let v = |k: u32| (!k.is_multiple_of(3)).then(|| f64::from(run * 100 + k));
        Scalars {
            global: vec![(Metric::Requests, v(1)), (Metric::LatencySP50, v(2)), (Metric::Attempts, v(3))],
            hops: vec![vec![(Metric::Attempts, v(4))], vec![(Metric::Retries, v(5)), (Metric::Attempts, v(6))]],
            tenants: vec![vec![(Metric::Succeeded, v(7))]],
            replicas: (0..replicas).map(|r| vec![(Metric::Attempts, v(8 + r as u32))]).collect(),
            overloaded_before_trigger: false,
        }
    }

    /// Rule: the statistics of the kept scalars are each metric's, over the runs' values in their
    /// order, `None`s too, in the first run's rows.
    #[test]
    fn kept_scalars_give_each_metrics_statistics_over_the_runs() {
        let stat_row = |runs: &[Scalars], row: &dyn Fn(&Scalars) -> &MetricRow| {
            StatRow(
                row(&runs[0])
                    .iter()
                    .enumerate()
                    .map(|(i, &(metric, _))| {
                        let values = runs.iter().map(|s| row(s)[i].1).collect();
                        (metric, Stat::with_interval(values, metric.interval()))
                    })
                    .collect(),
            )
        };
        for replicas in [0, 2] {
            let runs: Vec<Scalars> = (0..5).map(|run| scalars(run, replicas)).collect();
            let mut kept = KeptScalars::default();
            for s in runs.clone() {
                kept.push(s, 5);
            }
            let stats = kept.into_stats();
            assert_eq!(stats.global, stat_row(&runs, &|s| &s.global));
            assert_eq!(stats.hops, (0..2).map(|h| stat_row(&runs, &|s| &s.hops[h])).collect::<Vec<_>>());
            assert_eq!(stats.tenants, vec![stat_row(&runs, &|s| &s.tenants[0])]);
            assert_eq!(stats.replicas, (0..replicas).map(|r| stat_row(&runs, &|s| &s.replicas[r])).collect::<Vec<_>>());
            assert_eq!(
                stats.global.0[0].1.values,
                (0..5).map(|run| Some(f64::from(run * 100 + 1))).collect::<Vec<_>>()
            );
        }
        assert_eq!(KeptScalars::default().into_stats(), KeptStats::default());
    }

    /// Rule: a run whose scalars have other rows or metrics than the first's is a bug, not a
    /// silent misreading.
    #[test]
    #[should_panic(expected = "replication 1: its scalars have other rows or metrics than the first's")]
    fn a_run_of_another_shape_is_refused_loudly() {
        let mut kept = KeptScalars::default();
        kept.push(scalars(0, 0), 2);
        kept.push(scalars(1, 1), 2);
    }
}
