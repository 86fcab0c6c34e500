//! Server-side overload control of a hop: queue discipline, shedding, retry priority and
//! admission control. All off by default, which is the plain FIFO hop.

use crate::engine::Nanos;

/// In which order a hop's queue is served and what it drops at dequeue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Discipline {
    /// First come, first served (the default).
    Fifo,
    /// Last come, first served.
    Lifo,
    /// FIFO while the queue is uncongested, LIFO while it is congested: the queue has not been
    /// empty for the last `interval` (Facebook, "Fail at Scale", 2015).
    AdaptiveLifo {
        /// Congestion window (Fail at Scale's N, 100 ms).
        interval: Nanos,
    },
    /// Controlled delay as Facebook runs it (folly's `Codel`; "Fail at Scale"): the hop is
    /// overloaded for an `interval` when the shortest queueing delay of the previous interval
    /// exceeded `target` (the CoDel paper's standing-queue test); while overloaded, attempts that
    /// waited more than 2 × `target` are dropped (503) at dequeue, unserved.
    Codel {
        /// Allowed wait while congested (M, 5 ms).
        target: Nanos,
        /// Congestion window and allowed wait otherwise (N, 100 ms).
        interval: Nanos,
    },
    /// FIFO, but an attempt whose caller has already given up (its attempt timeout or deadline,
    /// propagated with the attempt) is dropped at dequeue instead of being served.
    DeadlineDrop,
}

/// How a hop limits what it admits, checked at arrival before the queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Admission {
    /// Admit everything (the default).
    None,
    /// At most `limit` attempts inside the hop (queued, in service or waiting downstream).
    Concurrency {
        /// The limit (≥ 1).
        limit: u32,
    },
    /// A token bucket: `rate_per_s` tokens per second up to `burst`; an arrival takes one.
    TokenBucket {
        /// Refill rate (> 0).
        rate_per_s: f64,
        /// Bucket size (≥ 1), full at the start.
        burst: f64,
    },
    /// Additive-increase multiplicative-decrease concurrency limit (Netflix concurrency-limits'
    /// `AIMDLimit`): after each served attempt, a failure or a latency above `latency` multiplies
    /// the limit by `backoff`; otherwise, when at least half the limit is in use, it grows by 1.
    Aimd {
        /// Starting limit.
        initial: f64,
        /// Lower bound (≥ 1).
        min: f64,
        /// Upper bound.
        max: f64,
        /// Latency (arrival at the hop → reply) above which a sample counts as a drop.
        latency: Nanos,
        /// Multiplicative decrease, in (0, 1).
        backoff: f64,
    },
    /// Netflix concurrency-limits' `Gradient2Limit`: the ratio of a long-run average latency to
    /// the latest sample (× `tolerance`, clamped to [0.5, 1]) scales the limit, plus `queue_size`
    /// headroom, smoothed by `smoothing`; unchanged while less than half the limit is in use.
    Gradient {
        /// Starting limit.
        initial: f64,
        /// Lower bound (≥ 1).
        min: f64,
        /// Upper bound.
        max: f64,
        /// How much slower than the long-run average a sample may be before the limit falls (≥ 1).
        tolerance: f64,
        /// Weight of the new estimate, in (0, 1].
        smoothing: f64,
        /// Headroom added to the scaled limit.
        queue_size: f64,
        /// Samples in the long-run exponential average (its first 10 samples are a plain mean).
        long_window: u32,
    },
}

/// What an attempt refused by admission control is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejectReply {
    /// 503, retryable.
    Unavailable,
    /// 429 with this Retry-After.
    Throttled(Nanos),
}

/// A hop's overload control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverloadSpec {
    /// Queue discipline.
    pub discipline: Discipline,
    /// Arrivals finding this many queued are shed (503) (`u32::MAX`: never).
    pub shed_queue_length: u32,
    /// Retries finding this many queued are shed (503) (`u32::MAX`: never).
    pub shed_retries_queue_length: u32,
    /// First attempts are served before retries.
    pub retry_priority: bool,
    /// Admission control.
    pub admission: Admission,
    /// The answer to an attempt refused by admission control.
    pub reject: RejectReply,
}

impl Default for OverloadSpec {
    fn default() -> Self {
        OverloadSpec {
            discipline: Discipline::Fifo,
            shed_queue_length: u32::MAX,
            shed_retries_queue_length: u32::MAX,
            retry_priority: false,
            admission: Admission::None,
            reject: RejectReply::Unavailable,
        }
    }
}

impl Admission {
    /// True for the kinds that limit the attempts inside the hop (the limit is a time series).
    pub fn is_concurrency_limit(&self) -> bool {
        matches!(self, Admission::Concurrency { .. } | Admission::Aimd { .. } | Admission::Gradient { .. })
    }

    /// True for the kinds whose limit learns from the attempts the hop serves (AIMD, gradient).
    pub fn is_adaptive(&self) -> bool {
        matches!(self, Admission::Aimd { .. } | Admission::Gradient { .. })
    }
}

impl OverloadSpec {
    /// True when the hop does anything beyond today's FIFO with a length limit: the simulation
    /// then takes the slower path with admission and drop checks.
    pub fn is_active(&self) -> bool {
        *self != OverloadSpec::default()
    }
}
