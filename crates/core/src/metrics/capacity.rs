//! A hop's capacity, defined once: the most attempts per second its workers can complete. Every
//! output that states a capacity (summary.json's `capacity_per_s`, the report's hop table, the
//! charts' capacity lines, `validate`'s and `init`'s load check) reads this definition through
//! [`super::HopShape::capacity_per_s`].

/// The capacity inputs of one hop, as plain data (the model fills them from its spec).
pub struct CapacityInputs<F: Fn(u32) -> f64> {
    /// Workers per replica (`None` for a hop without a worker limit, e.g. a cache).
    pub workers: Option<u32>,
    /// Replicas serving at the start.
    pub replicas: u32,
    /// Mean service time (ns) of an attempt served while `k` workers are busy (this one
    /// included), load-dependent latency applied.
    pub service_ns: F,
    /// True when `service_ns` does not depend on `k` (no load-dependent latency): the
    /// capacity is then reached with every worker busy and the scan is skipped.
    pub constant_service: bool,
    /// Mean time (ns) a worker stays held waiting on the hop's downstream calls when they answer
    /// without queueing.
    pub held_ns: f64,
}

/// Most busy-worker counts scanned for the best throughput (load-dependent latency).
const SCAN_MAX: u32 = 1_000_000;

/// The hop's capacity in attempts per second: the largest over the number of busy workers k
/// (1 ≤ k ≤ workers) of k ÷ (mean service time with k busy + mean time held on downstream
/// calls), times the replicas serving at the start. Without load-dependent latency the best k is
/// every worker (workers ÷ (service + held)); with it, a hop whose service slows down steeply
/// as it fills completes the most with only some workers busy. `None` when the hop has no
/// worker limit or takes no time (unbounded).
pub fn capacity_per_s<F: Fn(u32) -> f64>(inputs: &CapacityInputs<F>) -> Option<f64> {
    let workers = inputs.workers?;
    let per_s = |k: u32| {
        let time_ns = (inputs.service_ns)(k) + inputs.held_ns;
        (time_ns > 0.0).then(|| f64::from(k) * 1e9 / time_ns)
    };
    let best = if inputs.constant_service {
        per_s(workers)
    } else {
        (1..=workers.min(SCAN_MAX))
            .filter_map(per_s)
            .fold(None, |best: Option<f64>, r| Some(best.map_or(r, |b| b.max(r))))
    };
    best.map(|r| r * f64::from(inputs.replicas.max(1)))
}

/// The capacity while `workers_now` workers serve, of a hop whose capacity is `cap` with its
/// starting `workers_start` (autoscaling moves the workers; the capacity follows in proportion).
/// A level of 0 (not recorded) or equal to the start keeps `cap`.
pub fn capacity_with_workers(cap: f64, workers_now: f64, workers_start: f64) -> f64 {
    if workers_now <= 0.0 || workers_start <= 0.0 || workers_now == workers_start {
        cap
    } else {
        cap * workers_now / workers_start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_the_best_throughput_over_busy_workers() {
        // 10 workers at 8 ms × e^(4u): 1/(8 ms·e^0.4) = 83.8/s alone, 3 busy 112.9/s (the best),
        // all 10 busy 10/(8 ms·e^4) = 22.9/s.
        let service = |k: u32| 8e6 * (4.0 * f64::from(k) / 10.0).exp();
        let gc = CapacityInputs {
            workers: Some(10),
            replicas: 1,
            service_ns: service,
            constant_service: false,
            held_ns: 0.0,
        };
        let best = (1..=10).map(|k| f64::from(k) * 1e9 / service(k)).fold(0.0, f64::max);
        assert!((capacity_per_s(&gc).unwrap() - best).abs() < 1e-9);
        assert!((best - 3.0 / (0.008 * 1.2f64.exp())).abs() < 1e-9, "3 busy workers are the best");
        // Constant service: workers ÷ (service + held) × replicas; 4 workers at 1 ms held 1 ms
        // on a downstream call, 2 replicas: 2 × 4 ÷ 2 ms = 4,000/s.
        let chain =
            CapacityInputs { workers: Some(4), replicas: 2, service_ns: |_| 1e6, constant_service: true, held_ns: 1e6 };
        assert_eq!(capacity_per_s(&chain), Some(4000.0));
        // No worker limit, or no time taken: unbounded.
        let cache =
            CapacityInputs { workers: None, replicas: 1, service_ns: |_| 1e6, constant_service: true, held_ns: 0.0 };
        assert_eq!(capacity_per_s(&cache), None);
        let instant =
            CapacityInputs { workers: Some(1), replicas: 1, service_ns: |_| 0.0, constant_service: true, held_ns: 0.0 };
        assert_eq!(capacity_per_s(&instant), None);
    }
}
