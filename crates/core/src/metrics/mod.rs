//! Metrics: what a run records (pure data), the scalar metrics derived from it, and statistics
//! across replications.

pub mod after;
pub mod balance;
pub mod capacity;
pub mod catalogue;
pub mod delays;
pub mod goodput;
pub mod latencies;
pub mod metastable;
pub mod objective;
pub mod pool;
pub mod recovery;
pub mod stats;
pub mod summary;

use crate::engine::Nanos;
use hdrhistogram::Histogram;
pub use latencies::Latencies;

/// Why a logical request went to the dead-letter queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DlqReason {
    /// `max_attempts` used up.
    Attempts,
    /// The deadline (from the event timestamp) would pass before the next retry.
    Deadline,
    /// The retry budget (or throttle) refused the retry.
    Budget,
}

/// Counters of one hop over a run.
#[derive(Clone, Debug, Default)]
pub struct HopCounters {
    /// Attempts that reached the hop's caller-side accounting (sent to this hop).
    pub attempts: u64,
    /// First tries.
    pub first_attempts: u64,
    /// Retries (attempt 2 and later).
    pub retries: u64,
    /// Replies with a success.
    pub ok_replies: u64,
    /// Attempts refused because the queue was full.
    pub overflow: u64,
    /// Service time spent on attempts whose caller had already given up.
    pub wasted_work_ns: u64,
    /// Side effects executed (effect hops only).
    pub executions: u64,
    /// Re-executions after the idempotency key expired.
    pub duplicates_ttl_expired: u64,
    /// Re-executions at a hop without an idempotency store.
    pub duplicates_no_key: u64,
    /// Deliveries acknowledged without a side effect because the key was live.
    pub deduplicated: u64,
    /// Deliveries answered with a retryable conflict because the key was in progress.
    pub in_progress_conflicts: u64,
    /// Claimed keys released because processing failed (the effect did not commit).
    pub released: u64,
    /// Service time spent in total.
    pub busy_ns: u64,
    /// Replies lost on the way back (`lost_reply` faults).
    pub lost_replies: u64,
    /// Attempts whose service a crash stopped (`outage` with `in_service` = `reset` or `lost`).
    pub crashed_in_service: u64,
    /// Services started (for the mean queue wait).
    pub services_started: u64,
    /// Sum of queue waits of started services.
    pub queue_wait_ns_sum: u128,
    // Overload control.
    /// Attempts shed at arrival by a queue-length threshold (`shed_queue_length`,
    /// `shed_retries_queue_length`).
    pub shed: u64,
    /// Queued attempts dropped at dequeue, unserved, because they expired (`codel`,
    /// `deadline_drop`).
    pub dropped_expired: u64,
    /// Attempts refused by admission control (concurrency limit, token bucket, AIMD).
    pub rejected_by_limit: u64,
    /// The connection pool of the hop's downstream calls, for hops with a `pool`.
    pub pool: Option<Box<pool::PoolCounters>>,
    // Autoscaling.
    /// Most workers the hop had (its `workers` without autoscaling).
    pub workers_peak: u32,
    /// Workers integrated over [0, horizon] (worker-nanoseconds: the capacity's cost).
    pub worker_ns: u128,
    /// Scale-ups: launched units that came online.
    pub scale_ups: u64,
    /// From the first trigger's start to the first launched units serving at or after it.
    pub scale_up_after_trigger_ns: Option<u64>,
    // Caches (`kind = "cache"`).
    /// Lookups answered from a live entry.
    pub cache_hits: u64,
    /// Misses forwarded to the backend.
    pub cache_misses: u64,
    /// Misses that waited for another miss's fill of the same key (`coalesce = true`).
    pub cache_coalesced: u64,
    // Hedging, cancellation, goodput.
    /// Attempts whose service ran to its end (any outcome): the hop's throughput.
    pub served: u64,
    /// Success replies that reached a caller still waiting for them: the hop's goodput.
    pub timely_ok: u64,
    /// Hedge attempts sent to the hop (also counted in `attempts`, not in `first_attempts` or
    /// `retries`).
    pub hedges: u64,
    /// Attempts cancelled because their caller gave up (`cancel_on_timeout`).
    pub cancelled: u64,
    /// Of `wasted_work_ns`: service run to the end for a caller that had timed out.
    pub wasted_timed_out_ns: u64,
    /// Of `wasted_work_ns`: service of the slower copy of a hedged attempt (to its end or to
    /// its cancellation).
    pub wasted_hedge_ns: u64,
    /// Of `wasted_work_ns`: service spent before a cancellation (caller timed out).
    pub wasted_cancelled_ns: u64,
    /// Of `wasted_work_ns`: service whose reply a `lost_reply` fault dropped.
    pub wasted_lost_reply_ns: u64,
}

impl HopCounters {
    /// One attempt reaching the hop (a first try or a `retry`): counted over the run and in its
    /// time bucket. The one definition the simulator and the emulator count with.
    #[inline]
    pub fn count_attempt(&mut self, bucket: &mut HopBucket, retry: bool) {
        self.attempts += 1;
        bucket.attempts += 1;
        if retry {
            self.retries += 1;
            bucket.retries += 1;
        } else {
            self.first_attempts += 1;
            bucket.first_attempts += 1;
        }
    }
}

/// Counters of one tenant over a run.
#[derive(Clone, Debug)]
pub struct TenantCounters {
    /// Logical requests created.
    pub requests: u64,
    /// Terminal: succeeded.
    pub succeeded: u64,
    /// Terminal: non-retryable answer.
    pub rejected: u64,
    /// Terminal: dead-lettered (attempts or deadline exhausted).
    pub dlq: u64,
    /// Of `dlq`, those whose deadline ran out.
    pub dlq_deadline: u64,
    /// Of `dlq`, those whose retry budget refused the retry.
    pub dlq_budget: u64,
    /// Retries refused by a budget (any hop's calls for this tenant's requests).
    pub retries_denied: u64,
    /// Attempts failed locally without being sent (breaker open, adaptive throttling).
    pub local_rejections: u64,
    /// Attempts sent by the tenant's clients (to hop 0).
    pub attempts: u64,
    /// Retries sent by the tenant's clients.
    pub retries: u64,
    /// Duplicated side effects of this tenant's requests (ttl_expired, no_key).
    pub duplicates_ttl_expired: u64,
    /// See `duplicates_ttl_expired`.
    pub duplicates_no_key: u64,
    /// Deliveries deduplicated.
    pub deduplicated: u64,
    /// Deliveries answered with an in-progress conflict.
    pub in_progress_conflicts: u64,
    /// Idempotency keys released after a failed processing.
    pub released: u64,
    /// Event timestamp → success, in microseconds (recorded with [`TenantCounters::record_latency`]).
    pub latency_us: Latencies,
    /// The sum of the latencies in `latency_us`, in microseconds: their mean is this over the
    /// histogram's count, exactly, without walking the histogram (see `summary::latency_rows`).
    pub latency_sum_us: u128,
}

impl TenantCounters {
    /// A request that succeeded `us` microseconds after its event's timestamp.
    #[inline]
    pub fn record_latency(&mut self, us: u64) {
        self.latency_us.record(us);
        self.latency_sum_us += u128::from(us);
    }

    /// One attempt a client of the tenant sends to the entry hop (a first try or a `retry`):
    /// counted over the run and in its time bucket.
    #[inline]
    pub fn count_attempt(&mut self, bucket: &mut TenantBucket, retry: bool) {
        self.attempts += 1;
        bucket.attempts += 1;
        if retry {
            self.retries += 1;
            bucket.retries += 1;
        } else {
            bucket.first_attempts += 1;
        }
    }
}

impl Default for TenantCounters {
    fn default() -> Self {
        TenantCounters {
            requests: 0,
            succeeded: 0,
            rejected: 0,
            dlq: 0,
            dlq_deadline: 0,
            dlq_budget: 0,
            retries_denied: 0,
            local_rejections: 0,
            attempts: 0,
            retries: 0,
            duplicates_ttl_expired: 0,
            duplicates_no_key: 0,
            deduplicated: 0,
            in_progress_conflicts: 0,
            released: 0,
            latency_us: Latencies::new(),
            latency_sum_us: 0,
        }
    }
}

/// A histogram for latencies in microseconds, 3 significant digits, growing as needed.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

/// One time-series bucket of a hop.
#[derive(Clone, Copy, Debug, Default)]
pub struct HopBucket {
    /// Attempts arriving at the hop's caller side in the bucket.
    pub attempts: u32,
    /// Of which first tries.
    pub first_attempts: u32,
    /// Of which retries.
    pub retries: u32,
    /// Success replies sent.
    pub successes: u32,
    /// Failure replies sent (5xx, 429, 4xx, overflow).
    pub failures: u32,
    /// Largest queue length seen.
    pub queue_len_max: u32,
    /// Largest number of attempts inside the hop (queued + in service + waiting downstream).
    pub in_flight_max: u32,
    /// Longest queue wait among services started in the bucket.
    pub queue_wait_max_ns: u64,
    // Overload control.
    /// Concurrency limit in force at the last arrival of the bucket (`concurrency`, `aimd`;
    /// carried forward over buckets without arrivals; 0 without such a limit).
    pub admission_limit: u32,
    /// Attempts that entered the hop in the bucket (the backlog's inflow).
    pub entered: u32,
    /// Attempts that left the hop in the bucket (reply sent or dropped: the backlog's outflow).
    pub left: u32,
    /// Retries to this hop scheduled (a backoff timer set) in the bucket.
    pub retries_scheduled: u32,
    /// Backoff timers to this hop that fired in the bucket (retry sent, or ended locally).
    pub retries_fired: u32,
    /// Workers serving at the bucket's end (autoscaling; constant otherwise; faults not applied).
    pub workers: u32,
    /// Cache hops: lookups in the bucket (hits, misses forwarded and coalesced waits).
    pub cache_lookups: u32,
    /// Cache hops: lookups answered from a live entry.
    pub cache_hits: u32,
    // Goodput.
    /// Services that ran to their end in the bucket (throughput).
    pub served: u32,
    /// Success replies that reached a caller still waiting, in the bucket (goodput).
    pub timely_ok: u32,
}

/// One time-series bucket of a tenant.
#[derive(Clone, Copy, Debug, Default)]
pub struct TenantBucket {
    /// Logical requests created in the bucket.
    pub arrivals: u32,
    /// Attempts sent to hop 0.
    pub attempts: u32,
    /// Of which first tries.
    pub first_attempts: u32,
    /// Of which retries.
    pub retries: u32,
    /// Requests that succeeded in the bucket.
    pub successes: u32,
    /// Requests that ended rejected or dead-lettered in the bucket.
    pub failures: u32,
    /// Requests not yet terminal at the end of the bucket.
    pub in_flight: u32,
    // Retry budgets over time: recorded at each retry decision a budget makes.
    /// Retry decisions the tenant's budget made in the bucket.
    pub budget_decisions: u32,
    /// Of which denied.
    pub budget_denied: u32,
    /// Sum over those decisions of the tokens left in the budget instance after it.
    pub budget_tokens_sum: f64,
}

/// Everything one replication of one variant recorded.
#[derive(Clone, Debug, Default)]
pub struct RunRecord {
    /// Per hop, in chain order.
    pub hops: Vec<HopCounters>,
    /// Per tenant, in file order.
    pub tenants: Vec<TenantCounters>,
    /// Per hop, per bucket.
    pub hop_series: Vec<Vec<HopBucket>>,
    /// Per tenant, per bucket.
    pub tenant_series: Vec<Vec<TenantBucket>>,
    /// Time of the last terminal state.
    pub completion_time_ns: Nanos,
    /// Requests still in flight when the run stopped, per tenant.
    pub in_flight: Vec<u64>,
    /// Events taken from the event queue (a retry run ahead of the clock is none: see
    /// `retries_run_ahead`).
    pub events: u64,
    /// Retries simulated at once, ahead of the clock, while a fault refused them (model's
    /// `sim/run_ahead.rs`): they cost no queued event.
    pub retries_run_ahead: u64,
    /// Why the run stopped early, if it did (`max_events`, drain limit).
    pub truncated: Option<String>,
    /// When it stopped early: the run is complete before this instant (the drain limit, or the
    /// clock when `max_events` was hit); `None` when it ran to its end.
    pub cut_at_ns: Option<Nanos>,
    /// p99 of hop 0's queue wait before the first trigger, the recovery baseline (None without
    /// data, and without a trigger: recovery is not observable).
    pub prefault_wait_p99_ns: Option<u64>,
    /// Delays drawn before retry k at hop 0, for k = 1..=16 (delay histograms per strategy).
    pub retry_delays_ns: Vec<Vec<u64>>,
    /// Per replica of the hops with more than one (empty otherwise).
    pub replicas: Vec<ReplicaRecord>,
}

impl RunRecord {
    /// A record with nothing counted yet: `hops` hops and `tenants` tenants, each with a series
    /// of `buckets` empty buckets (the simulator and the emulator each fill in what they add).
    pub fn empty(hops: usize, tenants: usize, buckets: usize) -> RunRecord {
        RunRecord {
            hops: vec![HopCounters::default(); hops],
            tenants: (0..tenants).map(|_| TenantCounters::default()).collect(),
            hop_series: vec![vec![HopBucket::default(); buckets]; hops],
            tenant_series: vec![vec![TenantBucket::default(); buckets]; tenants],
            in_flight: vec![0; tenants],
            retry_delays_ns: vec![Vec::new(); RETRY_DELAY_RETRIES],
            ..RunRecord::default()
        }
    }
}

/// What one replica of a balanced hop recorded over a run.
#[derive(Clone, Debug, Default)]
pub struct ReplicaRecord {
    /// Index of its hop.
    pub hop: usize,
    /// Its index among the hop's replicas (0-based).
    pub replica: u32,
    /// Attempts the balancer sent it.
    pub attempts: u64,
    /// Success replies it sent.
    pub ok_replies: u64,
    /// Failure replies it sent (5xx, 429, 4xx, overflow, shed).
    pub failed_replies: u64,
    /// Times outlier detection ejected it.
    pub ejections: u64,
    /// Time out of the balancer's rotation (ejected or marked unhealthy), clipped to the run.
    pub out_of_rotation_ns: u64,
    /// Per bucket.
    pub series: Vec<ReplicaBucket>,
}

/// One time-series bucket of a replica.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReplicaBucket {
    /// Attempts the balancer sent it in the bucket.
    pub attempts: u32,
    /// Success replies sent.
    pub successes: u32,
    /// Failure replies sent.
    pub failures: u32,
    /// Largest number of attempts inside it.
    pub in_flight_max: u32,
    /// 1 when it was out of rotation at some time in the bucket.
    pub out_of_rotation: u32,
}

/// What the scalar metrics need to know about the simulated system, as plain data (the model
/// fills it from its `SimSpec`; metrics do not depend on the model).
#[derive(Clone, Debug, PartialEq)]
pub struct RunShape {
    /// Width of a time-series bucket.
    pub bucket: Nanos,
    /// When arrivals stop.
    pub horizon: Nanos,
    /// How long calm must hold for recovery.
    pub recovery_hold: Nanos,
    /// End of the last fault or load spike, if any.
    pub trigger_end: Option<Nanos>,
    /// Start of the first fault or load spike, if any (the pre-trigger baseline ends there).
    pub first_trigger_start: Option<Nanos>,
    /// Per hop, in chain order.
    pub hops: Vec<HopShape>,
    /// Number of tenants.
    pub tenants: usize,
    /// The largest share of a tenant's requests answered with a failure by design (invalid or
    /// poison payloads): failures up to it are no overload.
    pub failing_by_design: f64,
}

/// A hop's capacity inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopShape {
    /// Workers (over the replicas serving at the start).
    pub workers: u32,
    /// The hop's capacity in attempts per second ([`capacity::capacity_per_s`]: the one
    /// definition every output reads); `None` when unbounded (no worker limit, no service time).
    pub capacity_per_s: Option<f64>,
    /// Mean service time of a lone request, in nanoseconds (the recovery baseline's floor).
    pub service_mean_alone_ns: f64,
}

/// How many retry-delay samples per retry number a run keeps for the delay charts.
pub const RETRY_DELAY_SAMPLES_MAX: usize = 20_000;
/// Retry numbers for which delays are sampled.
pub const RETRY_DELAY_RETRIES: usize = 16;
