//! Arrival generation: the sorted first requests of herd/closed tenants, and the open-loop
//! tenants' arrivals one after another (Poisson gaps, rate profiles, ramps, traces).

use super::spec::{Arrival, SimSpec, TenantSpec};
use super::trace::TraceCursor;
use crate::engine::{secs_to_ns, Nanos, NS_PER_S};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// The rate steps (`from`, rate per second) of an open-loop Poisson tenant (a constant rate is
/// one step at 0), as [`next_poisson`] reads them; `None` for any other arrival kind.
pub fn poisson_steps(arrival: &Arrival) -> Option<Vec<(Nanos, f64)>> {
    match arrival {
        Arrival::Poisson { rate_per_s } => Some(vec![(0, *rate_per_s)]),
        Arrival::Profile { steps } => Some(steps.clone()),
        Arrival::Herd { .. } | Arrival::Closed { .. } | Arrival::Trace(_) | Arrival::Ramp { .. } => None,
    }
}

/// An open-loop tenant's arrival process (Poisson, a rate profile, a ramp or a trace): each
/// arrival drawn after the one before from the tenant's arrival stream. The simulator and the
/// emulator read it the same way, so an emulated run sends its requests when the simulated
/// replication's arrive.
#[derive(Clone, Debug)]
pub enum OpenLoop {
    /// Poisson arrivals at piecewise-constant rates (`from`, rate per second): [`next_poisson`].
    Steps(Vec<(Nanos, f64)>),
    /// A rate going linearly from `from` to `to` over `over`: [`next_ramp`].
    Ramp {
        /// The rate per second at the start.
        from: f64,
        /// The rate per second at the end of the ramp (and after it).
        to: f64,
        /// How long the ramp takes.
        over: Nanos,
    },
    /// A replayed trace: its cursor.
    Trace(TraceCursor),
}

impl OpenLoop {
    /// The process of `arrival` at its start; `None` for herds and closed loops, whose clients
    /// send their first requests at drawn instants ([`first_requests`]).
    pub fn new(arrival: &Arrival) -> Option<OpenLoop> {
        match arrival {
            Arrival::Poisson { .. } | Arrival::Profile { .. } => poisson_steps(arrival).map(OpenLoop::Steps),
            &Arrival::Ramp { from_rate_per_s, rate_per_s, over } => {
                Some(OpenLoop::Ramp { from: from_rate_per_s, to: rate_per_s, over })
            }
            Arrival::Trace(a) => Some(OpenLoop::Trace(TraceCursor::new(a))),
            Arrival::Herd { .. } | Arrival::Closed { .. } => None,
        }
    }

    /// The next arrival after `now` (the arrival before, or 0 for the first) and before `end`.
    pub fn next(&mut self, now: Nanos, end: Nanos, rng: &mut ChaCha8Rng) -> Option<Nanos> {
        match self {
            OpenLoop::Steps(steps) => next_poisson(now, steps, end, rng),
            &mut OpenLoop::Ramp { from, to, over } => next_ramp(now, from, to, over, end, rng),
            OpenLoop::Trace(cursor) => cursor.next(now, end, rng),
        }
    }
}

/// Requests tenant `t` of `spec` issues in one replication: its herd's, its trace's within the
/// horizon, an open loop's at its highest rate throughout (so at least the mean count of a
/// Poisson stream), a closed loop's at its shortest cycle. The memory estimate and the room made
/// for the latency samples are sized by it.
pub fn tenant_requests(spec: &SimSpec, t: &TenantSpec) -> f64 {
    let horizon_s = spec.horizon as f64 / 1e9;
    match &t.arrival {
        Arrival::Herd { requests_per_client, .. } => f64::from(t.clients) * f64::from(*requests_per_client),
        Arrival::Poisson { rate_per_s } => rate_per_s * horizon_s,
        Arrival::Ramp { from_rate_per_s, rate_per_s, .. } => rate_per_s.max(*from_rate_per_s) * horizon_s,
        Arrival::Profile { steps } => steps.iter().map(|s| s.1).fold(0.0, f64::max) * horizon_s,
        Arrival::Trace(trace) => trace.requests_within(horizon_s),
        // A closed-loop client waits at least its think time plus the hops' mean latency.
        Arrival::Closed { think, .. } => {
            f64::from(t.clients) * spec.horizon as f64 / closed_loop_cycle_ns(spec, *think)
        }
    }
}

/// The shortest a closed-loop client's cycle can be on average: its `think` time plus the
/// hops' mean service and network time (each request passes every hop once at best); at least
/// 1 ns. The horizon over it bounds a client's requests.
pub fn closed_loop_cycle_ns(spec: &SimSpec, think: Nanos) -> f64 {
    let latency_ns: f64 = spec.hops.iter().map(|h| h.service.mean_ns(1) + h.network.mean_ns(1)).sum();
    (think as f64 + latency_ns).max(1.0)
}

/// A client's first request: `(time, tenant, client)`.
pub type FirstRequest = (Nanos, u16, u32);

/// First requests of every herd and closed-loop client, sorted by (time, tenant, client).
///
/// Each tenant draws its clients' start offsets in client order from its own arrival stream.
pub fn first_requests(tenants: &[TenantSpec], rngs: &mut [ChaCha8Rng]) -> Vec<FirstRequest> {
    let total: usize = tenants
        .iter()
        .filter(|t| matches!(t.arrival, Arrival::Herd { .. } | Arrival::Closed { .. }))
        .map(|t| t.clients as usize)
        .sum();
    let mut firsts = Vec::with_capacity(total);
    for (ti, tenant) in tenants.iter().enumerate() {
        let (start, spread) = match tenant.arrival {
            Arrival::Herd { start, spread, .. } | Arrival::Closed { start, spread, .. } => (start, spread),
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Trace(_) | Arrival::Ramp { .. } => continue,
        };
        let rng = &mut rngs[ti];
        for client in 0..tenant.clients {
            let offset = (rng.random::<f64>() * spread as f64) as Nanos;
            firsts.push((start.saturating_add(offset), ti as u16, client));
        }
    }
    // Made in (tenant, client) order, so a stable sort by time alone gives the order of the
    // whole tuple (equal times by tenant, then client).
    sort_by_time(firsts)
}

/// Sorts first requests by time, stably: a least-significant-digit radix sort on the bits the
/// latest time uses, 11 bits a pass (three passes for a herd spread over a second, where a
/// comparison sort of a million requests took about 4% of the 1M-client herd's run).
fn sort_by_time(mut firsts: Vec<FirstRequest>) -> Vec<FirstRequest> {
    const BITS: u32 = 11;
    let latest = firsts.iter().map(|f| f.0).max().unwrap_or(0);
    let used = u64::BITS - latest.leading_zeros();
    let mut out = vec![(0, 0, 0); firsts.len()];
    let mut shift = 0;
    while shift < used {
        let digit = |f: &FirstRequest| ((f.0 >> shift) & ((1 << BITS) - 1)) as usize;
        let mut starts = vec![0usize; 1 << BITS];
        for f in &firsts {
            starts[digit(f)] += 1;
        }
        let mut next = 0;
        for start in &mut starts {
            (*start, next) = (next, next + *start);
        }
        for f in &firsts {
            let d = digit(f);
            out[starts[d]] = *f;
            starts[d] += 1;
        }
        std::mem::swap(&mut firsts, &mut out);
        shift += BITS;
    }
    firsts
}

/// The next arrival after `now` of a Poisson process with piecewise-constant rate `steps`
/// (`(from, rate_per_s)`, sorted, first from 0), by inversion of the integrated rate with one
/// Exp(1) draw. `None` if no arrival happens before `end`.
pub fn next_poisson(now: Nanos, steps: &[(Nanos, f64)], end: Nanos, rng: &mut ChaCha8Rng) -> Option<Nanos> {
    let u: f64 = rng.random();
    let mut work = -(1.0 - u).ln(); // Exp(1): expected arrivals to consume.
    let mut t = now;
    let mut i = steps.iter().rposition(|&(from, _)| from <= t).unwrap_or(0);
    while t < end {
        let rate = steps[i].1;
        let seg_end = steps.get(i + 1).map_or(end, |&(from, _)| from.min(end));
        let seg_secs = (seg_end - t) as f64 / NS_PER_S as f64;
        if rate > 0.0 && work <= rate * seg_secs {
            let at = t.saturating_add(secs_to_ns(work / rate));
            return (at < end).then_some(at);
        }
        work -= rate * seg_secs;
        t = seg_end;
        i += 1;
        if i >= steps.len() {
            break;
        }
    }
    None
}

/// The next arrival after `now` of a Poisson process whose rate goes linearly from `from` (per
/// second) at 0 to `to` at `over`, then stays at `to`: the integrated rate is inverted exactly
/// (a quadratic on the ramp) with one Exp(1) draw. `None` if no arrival happens before `end`.
pub fn next_ramp(now: Nanos, from: f64, to: f64, over: Nanos, end: Nanos, rng: &mut ChaCha8Rng) -> Option<Nanos> {
    let u: f64 = rng.random();
    let mut work = -(1.0 - u).ln();
    let mut t = now;
    if t < over {
        let over_s = over as f64 / NS_PER_S as f64;
        let slope = (to - from) / over_s;
        let rate_now = from + slope * (t as f64 / NS_PER_S as f64);
        let on_ramp = (rate_now + to) / 2.0 * ((over - t) as f64 / NS_PER_S as f64);
        if work <= on_ramp {
            // rate_now·x + slope·x²/2 = work, in the form that is stable for any sign of slope.
            let x = 2.0 * work / (rate_now + (rate_now * rate_now + 2.0 * slope * work).max(0.0).sqrt());
            let at = t.saturating_add(secs_to_ns(x)).min(over);
            return (at < end).then_some(at);
        }
        work -= on_ramp;
        t = over;
    }
    let at = t.saturating_add(secs_to_ns(work / to));
    (at < end).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The radix sort orders as a comparison sort of the whole tuple does, ties included, on
    /// times from a few values (many ties) to the full 64 bits.
    #[test]
    fn first_requests_sort_as_the_tuple_does() {
        use crate::engine::KeyedDraws;
        for (case, range) in [(0u64, 4u64), (1, 1 << 20), (2, 1 << 40), (3, u64::MAX)] {
            let mut rng = KeyedDraws::new(5, case, 0);
            let mut firsts: Vec<FirstRequest> = Vec::new();
            for tenant in 0..3u16 {
                for client in 0..5_000u32 {
                    let t = if range == u64::MAX { rng.random::<u64>() } else { rng.random_range(0..range) };
                    firsts.push((t, tenant, client));
                }
            }
            let mut expected = firsts.clone();
            expected.sort_unstable();
            assert_eq!(sort_by_time(firsts), expected, "times below {range}");
        }
        assert!(sort_by_time(Vec::new()).is_empty());
    }
    use crate::engine::{stream, StreamKind};

    #[test]
    fn ramp_counts_match_the_integrated_rate() {
        // 0 → 300/s over 8 s, then 300/s until 12 s: 1200 on the ramp, 1200 after. Counts on
        // [0,4), [4,8), [8,12) are Poisson with means 300, 900, 1200; 5 sd bounds each.
        let (over, end) = (8 * NS_PER_S, 12 * NS_PER_S);
        let mut rng = stream(11, 0, StreamKind::Aux, 2);
        let (mut t, mut counts) = (0, [0u32; 3]);
        while let Some(next) = next_ramp(t, 0.0, 300.0, over, end, &mut rng) {
            assert!(next >= t && next < end);
            t = next;
            counts[(t / (4 * NS_PER_S)) as usize] += 1;
        }
        for (c, mean) in counts.iter().zip([300.0f64, 900.0, 1200.0]) {
            assert!((f64::from(*c) - mean).abs() < 5.0 * mean.sqrt(), "{counts:?}");
        }
        // A falling ramp 100 → 20/s over 10 s: 600 expected.
        let (mut t, mut n) = (0, 0u32);
        while let Some(next) = next_ramp(t, 100.0, 20.0, 10 * NS_PER_S, 10 * NS_PER_S, &mut rng) {
            t = next;
            n += 1;
        }
        assert!((f64::from(n) - 600.0).abs() < 5.0 * 600f64.sqrt(), "{n}");
    }

    #[test]
    fn profile_rate_counts_match_their_integral() {
        // 40/s over [0,20) ∪ [25,60) and 80/s over [20,25): 40·55 + 80·5 = 2600 expected arrivals.
        // Poisson sd = √2600 ≈ 51; 4 sd is a tolerance a correct sampler almost never exceeds.
        let steps = [(0, 40.0), (20 * NS_PER_S, 80.0), (25 * NS_PER_S, 40.0)];
        let mut rng = stream(3, 0, StreamKind::Aux, 0);
        let (mut t, mut n, mut in_spike) = (0, 0u32, 0u32);
        while let Some(next) = next_poisson(t, &steps, 60 * NS_PER_S, &mut rng) {
            assert!(next >= t);
            t = next;
            n += 1;
            in_spike += u32::from((20 * NS_PER_S..25 * NS_PER_S).contains(&t));
        }
        assert!((f64::from(n) - 2600.0).abs() < 4.0 * 2600f64.sqrt(), "n = {n}");
        assert!((f64::from(in_spike) - 400.0).abs() < 4.0 * 20.0, "spike = {in_spike}");
    }
}
