//! Arrivals replayed from a production trace: request timestamps, or per-interval rates that
//! become a non-homogeneous Poisson process (piecewise-constant rate within each interval).
//!
//! The trace data is read once by `scenario::trace` and shared (`Arc`) by every variant and
//! replication; here it is only replayed. Draws come from the tenant's arrival stream.

use crate::engine::{secs_to_ns, Nanos, NS_PER_S};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// What the trace holds, as parsed (time 0 = the trace's first row).
#[derive(Debug, PartialEq)]
pub enum TraceData {
    /// Sorted request times.
    Times {
        /// One entry per request, non-decreasing.
        times: Vec<Nanos>,
        /// Length of one replay (last − first + the mean gap), used by `loop`.
        period: Nanos,
    },
    /// Consecutive intervals of constant rate: `(start, requests per second)`, first at 0.
    Rates {
        /// Steps sorted by start.
        steps: Vec<(Nanos, f64)>,
        /// End of the last interval (the replay length).
        period: Nanos,
    },
}

impl TraceData {
    /// The length of one replay of the trace, before `time_scale`.
    pub fn period(&self) -> Nanos {
        match self {
            TraceData::Times { period, .. } | TraceData::Rates { period, .. } => *period,
        }
    }

    /// Expected requests in one replay, before `volume_scale`.
    pub fn requests(&self) -> f64 {
        match self {
            TraceData::Times { times, .. } => times.len() as f64,
            TraceData::Rates { steps, period } => {
                let ends = steps.iter().skip(1).map(|s| s.0).chain([*period]);
                steps.iter().zip(ends).map(|(s, end)| s.1 * (end - s.0) as f64 / NS_PER_S as f64).sum()
            }
        }
    }
}

/// A tenant's trace arrival: the data and how it is replayed.
#[derive(Clone, Debug)]
pub struct TraceArrival {
    /// The file as given in the scenario (for reports).
    pub file: String,
    /// The parsed trace, shared.
    pub data: Arc<TraceData>,
    /// Replay speed: 10 replays the trace 10× faster (times divided by 10, rates multiplied).
    pub time_scale: f64,
    /// Volume factor: 3 triples the requests (rates × 3; each timestamp gives 3 requests on
    /// average: ⌊3⌋ copies plus one more with probability of the fractional part).
    pub volume_scale: f64,
    /// Replay again from the start when the trace ends before the horizon.
    pub looped: bool,
}

impl TraceArrival {
    /// Mean request rate over one replay, after both scales (for capacity figures and `init`).
    pub fn mean_rate_per_s(&self) -> f64 {
        let secs = self.data.period() as f64 / NS_PER_S as f64 / self.time_scale;
        self.data.requests() * self.volume_scale / secs.max(1e-9)
    }

    /// Requests replayed over `horizon_s` seconds: the mean rate over the horizon, and at most
    /// the whole trace (copies under `volume_scale` counted) when it is not looped.
    pub fn requests_within(&self, horizon_s: f64) -> f64 {
        let replayed = self.mean_rate_per_s() * horizon_s;
        if self.looped {
            replayed
        } else {
            replayed.min(self.data.requests() * self.volume_scale)
        }
    }

    fn scaled(&self, t: Nanos) -> Nanos {
        (t as f64 / self.time_scale) as Nanos
    }
}

/// Replay position of one tenant in one run.
#[derive(Clone, Debug)]
pub struct TraceCursor {
    arrival: TraceArrival,
    /// Next index into the times.
    next: usize,
    /// Completed replays.
    cycle: u64,
    /// Copies of the current timestamp still to emit, and that timestamp.
    pending: (u64, Nanos),
}

impl TraceCursor {
    /// A cursor at the start of the trace.
    pub fn new(arrival: &TraceArrival) -> Self {
        TraceCursor { arrival: arrival.clone(), next: 0, cycle: 0, pending: (0, 0) }
    }

    /// The next arrival at or after `now` and before `end`, drawing from the tenant's arrival
    /// stream `rng` (the Poisson exponentials, or the copies of a timestamp under volume_scale).
    pub fn next(&mut self, now: Nanos, end: Nanos, rng: &mut ChaCha8Rng) -> Option<Nanos> {
        let a = &self.arrival;
        match &*a.data {
            TraceData::Rates { steps, period } => next_rate(now, steps, *period, a, end, rng),
            TraceData::Times { times, period } => loop {
                if self.pending.0 > 0 {
                    self.pending.0 -= 1;
                    return Some(self.pending.1);
                }
                if self.next >= times.len() {
                    if !a.looped || times.is_empty() {
                        return None;
                    }
                    self.next = 0;
                    self.cycle += 1;
                }
                let raw = times[self.next].saturating_add(period.saturating_mul(self.cycle));
                self.next += 1;
                let at = a.scaled(raw).max(now);
                if at >= end {
                    return None;
                }
                let whole = a.volume_scale.floor();
                let frac = a.volume_scale - whole;
                let extra = u64::from(frac > 0.0 && rng.random::<f64>() < frac);
                self.pending = (whole as u64 + extra, at);
            },
        }
    }
}

/// The next arrival after `now` of the piecewise-constant rate `steps` (unscaled trace time),
/// replayed with `a`'s scales and loop, by inversion of the integrated rate with one Exp(1) draw.
fn next_rate(
    now: Nanos,
    steps: &[(Nanos, f64)],
    period: Nanos,
    a: &TraceArrival,
    end: Nanos,
    rng: &mut ChaCha8Rng,
) -> Option<Nanos> {
    let u: f64 = rng.random();
    let mut work = -(1.0 - u).ln();
    let span = a.scaled(period).max(1);
    let rate_factor = a.time_scale * a.volume_scale;
    let mut t = now;
    while t < end {
        let (cycle_start, phase) = if a.looped {
            (t - t % span, t % span)
        } else if t >= span {
            return None;
        } else {
            (0, t)
        };
        // Scaled start of step i within a replay.
        let start = |i: usize| a.scaled(steps[i].0);
        let mut i = steps.partition_point(|s| a.scaled(s.0) <= phase).saturating_sub(1);
        while i < steps.len() {
            let seg_end = (cycle_start + if i + 1 < steps.len() { start(i + 1) } else { span }).min(end);
            let rate = steps[i].1 * rate_factor;
            let secs = seg_end.saturating_sub(t) as f64 / NS_PER_S as f64;
            if rate > 0.0 && work <= rate * secs {
                let at = t.saturating_add(secs_to_ns(work / rate));
                return (at < end).then_some(at);
            }
            work -= rate * secs;
            t = t.max(seg_end);
            if t >= end {
                return None;
            }
            i += 1;
        }
        if !a.looped {
            return None;
        }
        t = t.max(cycle_start + span);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, StreamKind};

    fn arrival(data: TraceData, time_scale: f64, volume_scale: f64, looped: bool) -> TraceArrival {
        TraceArrival { file: "t.csv".into(), data: Arc::new(data), time_scale, volume_scale, looped }
    }

    fn count(a: &TraceArrival, end: Nanos) -> (u64, Vec<Nanos>) {
        let mut rng = stream(5, 0, StreamKind::Aux, 0);
        let mut cursor = TraceCursor::new(a);
        let (mut t, mut n, mut all) = (0, 0, Vec::new());
        while let Some(next) = cursor.next(t, end, &mut rng) {
            assert!(next >= t, "time went backwards");
            t = next;
            n += 1;
            if all.len() < 1_000 {
                all.push(t);
            }
        }
        (n, all)
    }

    #[test]
    fn rates_become_a_poisson_process_scaled_and_looped() {
        // 10 s at 100/s then 10 s at 300/s = 4000 per replay; ×2 volume, looped over 40 s = 16 000.
        // Poisson sd = √16000 ≈ 126; 4 sd is a bound a correct sampler almost never exceeds.
        let data = TraceData::Rates { steps: vec![(0, 100.0), (10 * NS_PER_S, 300.0)], period: 20 * NS_PER_S };
        let a = arrival(data, 1.0, 2.0, true);
        let (n, _) = count(&a, 40 * NS_PER_S);
        assert!((n as f64 - 16_000.0).abs() < 4.0 * 16_000f64.sqrt(), "n = {n}");
        // 10× faster, no loop: the same 4000 requests in 2 s.
        let data = TraceData::Rates { steps: vec![(0, 100.0), (10 * NS_PER_S, 300.0)], period: 20 * NS_PER_S };
        let a = arrival(data, 10.0, 1.0, false);
        let (n, all) = count(&a, 40 * NS_PER_S);
        assert!((n as f64 - 4_000.0).abs() < 4.0 * 4_000f64.sqrt(), "n = {n}");
        assert!(all.iter().all(|&t| t < 2 * NS_PER_S));
    }

    #[test]
    fn timestamps_replay_exactly_with_copies_and_loops() {
        let data = TraceData::Times { times: vec![0, 1_000, 1_000, 4_000], period: 5_000 };
        let a = arrival(data, 1.0, 1.0, true);
        let (n, all) = count(&a, 10_000);
        assert_eq!(n, 8);
        assert_eq!(all, vec![0, 1_000, 1_000, 4_000, 5_000, 6_000, 6_000, 9_000]);
        let data = TraceData::Times { times: vec![0, 1_000, 1_000, 4_000], period: 5_000 };
        let (n, all) = count(&arrival(data, 2.0, 3.0, false), 10_000);
        assert_eq!(n, 12);
        assert_eq!(&all[..4], &[0, 0, 0, 500]);
        // Volume 0.5: thinning, 2 000 of 4 000 on average (binomial sd ≈ 32; 4 sd).
        let data = TraceData::Times { times: (0..4_000).collect(), period: 4_000 };
        let (n, _) = count(&arrival(data, 1.0, 0.5, false), 10_000);
        assert!((n as f64 - 2_000.0).abs() < 4.0 * 1_000f64.sqrt(), "n = {n}");
    }
}
