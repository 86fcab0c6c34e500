//! Connection-pool counters of one hop and their scalar metrics: present only in the
//! rows of hops that have a `pool`, so scenarios without pools keep their outputs byte for byte.

use super::catalogue::{Metric, MetricRow};
use crate::engine::time::{ns_f64_to_secs, us_to_secs};
use hdrhistogram::Histogram;

/// What a hop's connection pool recorded over a run.
#[derive(Clone, Debug)]
pub struct PoolCounters {
    /// Connections handed out (at once or after a wait).
    pub acquired: u64,
    /// Sum of the waits of the connections handed out.
    pub wait_ns_sum: u128,
    /// Waits of the connections handed out, in microseconds (0 for an immediate one).
    pub wait_us: Histogram<u64>,
    /// Calls that waited `acquire_timeout` without a connection (the attempt failed).
    pub acquire_timeouts: u64,
    /// Calls refused because `queue_limit` calls were already waiting (the attempt failed).
    pub queue_full: u64,
    /// Most calls waiting at once.
    pub waiters_peak: u32,
}

impl Default for PoolCounters {
    fn default() -> Self {
        PoolCounters {
            acquired: 0,
            wait_ns_sum: 0,
            wait_us: super::new_latency_histogram(),
            acquire_timeouts: 0,
            queue_full: 0,
            waiters_peak: 0,
        }
    }
}

/// The metrics every catalogued pool metric is produced from, in catalogue order.
pub const POOL_METRICS: &[Metric] = &[
    Metric::PoolWaitSMean,
    Metric::PoolWaitSP99,
    Metric::PoolWaitersPeak,
    Metric::PoolAcquireTimeouts,
    Metric::PoolQueueFull,
];

/// The pool metrics of a hop with a pool.
pub fn pool_rows(c: &PoolCounters) -> MetricRow {
    let any = c.acquired > 0;
    vec![
        (Metric::PoolWaitSMean, any.then(|| ns_f64_to_secs(c.wait_ns_sum as f64) / c.acquired as f64)),
        (Metric::PoolWaitSP99, any.then(|| us_to_secs(c.wait_us.value_at_quantile(0.99) as f64))),
        (Metric::PoolWaitersPeak, Some(f64::from(c.waiters_peak))),
        (Metric::PoolAcquireTimeouts, Some(c.acquire_timeouts as f64)),
        (Metric::PoolQueueFull, Some(c.queue_full as f64)),
    ]
}
