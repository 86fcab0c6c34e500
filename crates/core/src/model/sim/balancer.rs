//! The load balancer of one hop, as a state machine: which replica an arriving attempt goes to
//! (every `Balancer`, Envoy's panic threshold, only the active replicas), passive outlier
//! ejection from the outcomes the callers see, and active health probes. `sim/replicas.rs`
//! applies its decisions (per-replica records, probe events); the rules are docs/MODEL.md's,
//! "Replicas and load balancers".

use crate::engine::{stream, Nanos, StreamKind};
use crate::model::{Balancer, HealthCheck, ReplicaSpec};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

/// The balancer of one hop.
#[derive(Clone)]
pub(super) struct Lb {
    /// Index of replica 0 in `Simulation::hops`.
    pub base: u32,
    /// Replicas (with autoscaling of replicas: the most, all allocated).
    pub count: u32,
    /// Replicas the balancer routes to: `0..active` (autoscaling moves it; the others drain).
    pub active: u32,
    /// Attempts inside the hop over all its replicas.
    pub in_flight: u32,
    /// Round robin, and `least_connections` among ties: the replica the next pick starts from.
    next: u32,
    /// Random choices (`random`, `power_of_two`): the hop's own balancer stream.
    pub(super) rng: Option<ChaCha8Rng>,
    /// Per replica, when the balancer is health-aware (empty otherwise).
    health: Vec<Health>,
    /// Eligible replicas of the last pick (reused buffer).
    candidates: Vec<u32>,
}

/// What the balancer knows about one replica's health.
#[derive(Clone, Copy, Default)]
pub(super) struct Health {
    /// Active checks: consecutive failed and good probes, and the verdict.
    probes_failed: u32,
    probes_ok: u32,
    unhealthy_since: Option<Nanos>,
    /// Outlier detection: consecutive errors, ejections so far, end of the current ejection.
    errors: u32,
    ejections: u32,
    ejected_until: Nanos,
}

impl Health {
    #[inline]
    fn in_rotation(&self, now: Nanos) -> bool {
        self.unhealthy_since.is_none() && now >= self.ejected_until
    }
}

impl Lb {
    /// The balancer of hop `hop` with `spec`'s replicas, `active` of them routed to, replica 0
    /// at `base`; a balancer that draws gets its stream of the run.
    pub(super) fn new(spec: &ReplicaSpec, active: u32, base: u32, seed: u64, replication: u64, hop: usize) -> Lb {
        let random =
            matches!(spec.balancer, Balancer::Random | Balancer::PowerOfTwo | Balancer::LeastConnectionsRandom)
                && spec.count > 1;
        Lb {
            base,
            count: spec.count,
            active,
            in_flight: 0,
            next: 0,
            rng: random.then(|| stream(seed, replication, StreamKind::Balancer, hop as u32)),
            health: if spec.health_aware() { vec![Health::default(); spec.count as usize] } else { Vec::new() },
            candidates: Vec::new(),
        }
    }

    /// The balancer's choice at `now` (a replica index, 0-based) among the replicas in rotation
    /// (all of them when fewer than half are, Envoy's panic threshold), among the active ones
    /// (`active`, moved by autoscaling). `load(r)` is replica r's attempts in flight.
    pub(super) fn pick(&mut self, now: Nanos, balancer: Balancer, load: impl Fn(u32) -> u32) -> u32 {
        let n = self.active;
        let restricted = !self.health.is_empty() && {
            self.candidates.clear();
            let health = &self.health;
            self.candidates.extend((0..n).filter(|&r| health[r as usize].in_rotation(now)));
            let k = self.candidates.len() as u32;
            k < n && 2 * k >= n
        };
        let k = if restricted { self.candidates.len() as u32 } else { n };
        let Lb { next, rng, candidates, health, .. } = self;
        let at = |i: u32| if restricted { candidates[i as usize] } else { i };
        match balancer {
            Balancer::RoundRobin => {
                // The next replica in turn that is in rotation.
                let mut r = *next % n;
                if restricted {
                    while !health[r as usize].in_rotation(now) {
                        r = (r + 1) % n;
                    }
                }
                *next = (r + 1) % n;
                r
            }
            Balancer::Random => at(rng.as_mut().expect("random balancers have a stream").random_range(0..k)),
            // One pass each: the least load, and among it the lowest index (`min_by_key` keeps
            // the first minimum) or the first at or after the cursor.
            Balancer::LeastConnectionsFirst => (0..k).map(at).min_by_key(|&r| load(r)).expect("a replica"),
            Balancer::LeastConnections => {
                // The first tied replica at or after the cursor, cyclically; the cursor then
                // moves past it.
                let from = *next % n;
                let r = (0..k).map(at).min_by_key(|&r| (load(r), (r + n - from) % n)).expect("a replica");
                *next = (r + 1) % n;
                r
            }
            Balancer::LeastConnectionsRandom => {
                let least = (0..k).map(|i| load(at(i))).min().expect("at least one replica");
                let tied = || (0..k).map(at).filter(|&r| load(r) == least);
                let ties = tied().count() as u32;
                let j = if ties == 1 {
                    0
                } else {
                    rng.as_mut().expect("random balancers have a stream").random_range(0..ties)
                };
                tied().nth(j as usize).expect("j < ties")
            }
            Balancer::PowerOfTwo => {
                if k == 1 {
                    return at(0);
                }
                let rng = rng.as_mut().expect("random balancers have a stream");
                let first = rng.random_range(0..k);
                let mut second = rng.random_range(0..k - 1);
                if second >= first {
                    second += 1;
                }
                let (a, c) = (at(first), at(second));
                if load(c) < load(a) {
                    c
                } else {
                    a
                }
            }
        }
    }

    /// Outlier detection (`spec.outlier`, if any) sees one outcome of `replica` at `now`
    /// (`error`: a 5xx or the caller's timeout; else a success). Returns the end of the
    /// ejection when this outcome ejects the replica: its consecutive errors reached the
    /// threshold and fewer than `spec.max_ejected` of the active replicas are out. Outcomes of
    /// an ejected replica are not counted.
    pub(super) fn outcome_seen(
        &mut self,
        spec: &ReplicaSpec,
        replica: usize,
        error: bool,
        now: Nanos,
    ) -> Option<Nanos> {
        let o = spec.outlier?;
        let h = &mut self.health[replica];
        if now < h.ejected_until {
            return None;
        }
        if !error {
            h.errors = 0;
            return None;
        }
        h.errors += 1;
        if h.errors < o.consecutive_errors {
            return None;
        }
        // Envoy's share is of the hosts in the cluster: the active replicas.
        let active = self.active;
        let ejected = self.health[..active as usize].iter().filter(|h| now < h.ejected_until).count() as u32;
        if ejected >= spec.max_ejected(active) {
            return None;
        }
        let h = &mut self.health[replica];
        h.errors = 0;
        h.ejections += 1;
        let time = o.base_ejection_time.saturating_mul(u64::from(h.ejections)).min(o.max_ejection_time);
        h.ejected_until = now.saturating_add(time);
        Some(h.ejected_until)
    }

    /// A health probe of `replica` at `now` (`crashed`: it failed). Returns when the replica
    /// was marked unhealthy if this probe brings it back into rotation (it was out from then to
    /// now).
    pub(super) fn probe(&mut self, check: &HealthCheck, replica: u32, crashed: bool, now: Nanos) -> Option<Nanos> {
        let h = &mut self.health[replica as usize];
        if crashed {
            h.probes_failed += 1;
            h.probes_ok = 0;
            if h.unhealthy_since.is_none() && h.probes_failed >= check.unhealthy_threshold {
                h.unhealthy_since = Some(now);
            }
            None
        } else {
            h.probes_ok += 1;
            h.probes_failed = 0;
            if h.probes_ok >= check.healthy_threshold {
                h.unhealthy_since.take()
            } else {
                None
            }
        }
    }

    /// Replicas with a health record (all of them when the balancer is health-aware, else none).
    pub(super) fn health_records(&self) -> usize {
        self.health.len()
    }

    /// At the end of a run: when `replica` is still marked unhealthy, since when (and it is no
    /// longer marked).
    pub(super) fn close_unhealthy(&mut self, replica: usize) -> Option<Nanos> {
        self.health[replica].unhealthy_since.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::OutlierDetection;

    const S: Nanos = 1_000_000_000;

    fn lb(count: u32, balancer: Balancer) -> Lb {
        Lb::new(&ReplicaSpec { count, balancer, ..ReplicaSpec::default() }, count, 0, 11, 0, 0)
    }

    fn outlier(consecutive_errors: u32, max_ejection_percent: f64) -> ReplicaSpec {
        ReplicaSpec {
            count: 4,
            outlier: Some(OutlierDetection {
                consecutive_errors,
                base_ejection_time: 30 * S,
                max_ejection_time: 70 * S,
                max_ejection_percent,
            }),
            ..ReplicaSpec::default()
        }
    }

    fn probing(count: u32, unhealthy_threshold: u32, healthy_threshold: u32) -> (ReplicaSpec, HealthCheck) {
        let check = HealthCheck { interval: S, unhealthy_threshold, healthy_threshold };
        (ReplicaSpec { count, health_check: Some(check), ..ReplicaSpec::default() }, check)
    }

    fn picks(lb: &mut Lb, now: Nanos, balancer: Balancer, loads: &[u32], times: usize) -> Vec<u32> {
        (0..times).map(|_| lb.pick(now, balancer, |r| loads[r as usize])).collect()
    }

    #[test]
    fn round_robin_takes_each_active_replica_in_turn() {
        let mut b = lb(3, Balancer::RoundRobin);
        assert_eq!(picks(&mut b, 0, Balancer::RoundRobin, &[9, 0, 0], 7), [0, 1, 2, 0, 1, 2, 0], "load is ignored");
        b.active = 2;
        assert_eq!(picks(&mut b, 0, Balancer::RoundRobin, &[0; 3], 4), [1, 0, 1, 0], "only the active replicas");
    }

    #[test]
    fn least_connections_takes_the_least_loaded_and_ties_in_turn() {
        let mut b = lb(3, Balancer::LeastConnections);
        let lc = Balancer::LeastConnections;
        assert_eq!(picks(&mut b, 0, lc, &[0, 0, 0], 4), [0, 1, 2, 0], "equal loads: in turn");
        assert_eq!(picks(&mut b, 0, lc, &[2, 1, 1], 3), [1, 2, 1], "the tied least, from the cursor on");
        assert_eq!(picks(&mut b, 0, lc, &[3, 0, 1], 2), [1, 1], "a single least wins every time");
    }

    #[test]
    fn least_connections_first_breaks_ties_to_the_lowest_index() {
        let mut b = lb(4, Balancer::LeastConnectionsFirst);
        assert_eq!(picks(&mut b, 0, Balancer::LeastConnectionsFirst, &[1, 0, 2, 0], 3), [1, 1, 1]);
        assert_eq!(picks(&mut b, 0, Balancer::LeastConnectionsFirst, &[0; 4], 2), [0, 0]);
    }

    #[test]
    fn least_connections_random_draws_among_the_tied_only() {
        let mut b = lb(4, Balancer::LeastConnectionsRandom);
        let got = picks(&mut b, 0, Balancer::LeastConnectionsRandom, &[0, 5, 0, 5], 200);
        assert!(got.iter().all(|&r| r == 0 || r == 2), "{got:?}");
        assert!(got.contains(&0) && got.contains(&2), "both tied replicas are drawn");
        let mut b = lb(4, Balancer::LeastConnectionsRandom);
        let before = b.rng.clone().expect("a stream");
        assert_eq!(picks(&mut b, 0, Balancer::LeastConnectionsRandom, &[3, 1, 2, 3], 5), [1; 5]);
        let mut untouched = before;
        let mut after = b.rng.expect("a stream");
        assert_eq!(after.random::<u64>(), untouched.random::<u64>(), "a single least draws nothing");
    }

    #[test]
    fn power_of_two_keeps_the_less_loaded_of_two_distinct_draws() {
        let mut b = lb(2, Balancer::PowerOfTwo);
        assert_eq!(picks(&mut b, 0, Balancer::PowerOfTwo, &[5, 0], 50), [1; 50], "two of two: always both");
        let mut b = lb(3, Balancer::PowerOfTwo);
        let got = picks(&mut b, 0, Balancer::PowerOfTwo, &[0, 4, 9], 300);
        assert!(!got.contains(&2), "the most loaded never wins a pair: {got:?}");
        assert!(got.contains(&1), "the middle one wins its pair with the most loaded");
        assert!(got.iter().filter(|&&r| r == 0).count() > 150, "the least loaded wins 2 pairs of 3");
    }

    #[test]
    fn random_reaches_every_active_replica() {
        let mut b = lb(4, Balancer::Random);
        b.active = 3;
        let got = picks(&mut b, 0, Balancer::Random, &[0; 4], 300);
        assert!(got.iter().all(|&r| r < 3));
        assert!((0..3).all(|r| got.contains(&r)));
    }

    #[test]
    fn consecutive_errors_eject_for_a_growing_capped_time() {
        let spec = outlier(3, 50.0);
        let mut b = Lb::new(&spec, 4, 0, 1, 0, 0);
        assert_eq!(b.outcome_seen(&spec, 1, true, 0), None);
        assert_eq!(b.outcome_seen(&spec, 1, true, 0), None);
        assert_eq!(b.outcome_seen(&spec, 1, false, 0), None, "a success resets the count");
        assert_eq!(b.outcome_seen(&spec, 1, true, 0), None);
        assert_eq!(b.outcome_seen(&spec, 1, true, 0), None);
        assert_eq!(b.outcome_seen(&spec, 1, true, S), Some(31 * S), "the third in a row ejects for the base time");
        let rr = Balancer::RoundRobin;
        assert_eq!(picks(&mut b, S, rr, &[0; 4], 3), [0, 2, 3], "skipped while ejected");
        for _ in 0..5 {
            assert_eq!(b.outcome_seen(&spec, 1, true, 2 * S), None, "not counted while ejected");
        }
        assert_eq!(picks(&mut b, 31 * S, rr, &[0; 4], 4), [0, 1, 2, 3], "back after the ejection time");
        for _ in 0..2 {
            b.outcome_seen(&spec, 1, true, 40 * S);
        }
        assert_eq!(b.outcome_seen(&spec, 1, true, 40 * S), Some(100 * S), "the second ejection lasts twice the base");
        for _ in 0..2 {
            b.outcome_seen(&spec, 1, true, 100 * S);
        }
        assert_eq!(b.outcome_seen(&spec, 1, true, 100 * S), Some(170 * S), "the third would last 90 s: capped at 70 s");
    }

    #[test]
    fn no_more_than_the_ejection_share_is_out_at_once() {
        // 10% of 4 replicas is 0.4: Envoy still ejects one, and only one.
        let spec = outlier(1, 10.0);
        let mut b = Lb::new(&spec, 4, 0, 1, 0, 0);
        assert_eq!(b.outcome_seen(&spec, 0, true, 0), Some(30 * S));
        assert_eq!(b.outcome_seen(&spec, 2, true, 0), None, "one is already out");
        assert_eq!(b.outcome_seen(&spec, 2, true, 30 * S), Some(60 * S), "the first came back");
    }

    #[test]
    fn probes_take_a_replica_out_and_bring_it_back() {
        let (spec, check) = probing(4, 2, 3);
        let mut b = Lb::new(&spec, 4, 0, 1, 0, 0);
        assert_eq!(b.probe(&check, 2, true, S), None);
        let rr = Balancer::RoundRobin;
        assert_eq!(picks(&mut b, S, rr, &[0; 4], 4), [0, 1, 2, 3], "one failed probe is not enough");
        assert_eq!(b.probe(&check, 2, true, 2 * S), None);
        assert_eq!(picks(&mut b, 2 * S, rr, &[0; 4], 3), [0, 1, 3], "unhealthy after two");
        assert_eq!(b.probe(&check, 2, false, 3 * S), None);
        assert_eq!(b.probe(&check, 2, true, 4 * S), None, "a failure restarts the good count");
        assert_eq!(b.probe(&check, 2, false, 5 * S), None);
        assert_eq!(b.probe(&check, 2, false, 6 * S), None);
        assert_eq!(b.probe(&check, 2, false, 7 * S), Some(2 * S), "healthy after three good ones, out since 2 s");
        assert_eq!(picks(&mut b, 7 * S, rr, &[0; 4], 4), [0, 1, 2, 3]);
        assert_eq!(b.probe(&check, 2, false, 8 * S), None, "already healthy");
    }

    #[test]
    fn fewer_than_half_in_rotation_routes_to_all() {
        let (spec, check) = probing(4, 1, 1);
        let mut b = Lb::new(&spec, 4, 0, 1, 0, 0);
        b.probe(&check, 0, true, S);
        b.probe(&check, 1, true, S);
        let lcf = Balancer::LeastConnectionsFirst;
        assert_eq!(picks(&mut b, S, lcf, &[0, 0, 1, 1], 2), [2, 2], "half in rotation: only those");
        b.probe(&check, 2, true, S);
        assert_eq!(picks(&mut b, S, lcf, &[0, 0, 1, 1], 2), [0, 0], "a quarter: the panic threshold routes to all");
        assert_eq!(b.health_records(), 4);
        assert_eq!(b.close_unhealthy(1), Some(S));
        assert_eq!(b.close_unhealthy(1), None, "closed once");
        assert_eq!(b.close_unhealthy(3), None, "never unhealthy");
    }

    #[test]
    fn one_of_three_in_rotation_is_below_the_panic_threshold() {
        // Envoy's panic threshold (50%): 1 healthy of 3 is 33%, so every replica takes traffic;
        // 2 of 3 is 67%, so only those two.
        let (spec, check) = probing(3, 1, 1);
        let mut b = Lb::new(&spec, 3, 0, 1, 0, 0);
        b.probe(&check, 0, true, S);
        let lcf = Balancer::LeastConnectionsFirst;
        assert_eq!(picks(&mut b, S, lcf, &[0, 0, 1], 2), [1, 1], "two of three in rotation: only those");
        b.probe(&check, 1, true, S);
        assert_eq!(picks(&mut b, S, lcf, &[0, 0, 1], 2), [0, 0], "one of three: the panic threshold routes to all");
        let rr = Balancer::RoundRobin;
        assert_eq!(picks(&mut b, S, rr, &[0; 3], 4), [0, 1, 2, 0], "round robin over all three");
    }

    #[test]
    fn least_connections_cursor_wraps_within_the_active_replicas() {
        // Equal loads, picks 0 and 1 of three; autoscaling leaves two active. The turn after
        // replica 1 was replica 2, which no longer takes traffic: among 0 and 1 it wraps to 0.
        let lc = Balancer::LeastConnections;
        let mut b = lb(3, lc);
        assert_eq!(picks(&mut b, 0, lc, &[0; 3], 2), [0, 1]);
        b.active = 2;
        assert_eq!(picks(&mut b, 0, lc, &[0; 3], 3), [0, 1, 0]);
    }

    #[test]
    fn power_of_two_gives_a_tie_to_the_first_draw() {
        // docs/MODEL.md: "ties: the first drawn" (Envoy's LEAST_REQUEST replaces its candidate only
        // with a strictly less loaded host). Replaying the stream: the first draw over 0..3, the
        // second over the two others.
        let p2 = Balancer::PowerOfTwo;
        let mut b = lb(3, p2);
        let mut replay = b.rng.clone().expect("a stream");
        let got = picks(&mut b, 0, p2, &[2; 3], 60);
        let first: Vec<u32> = (0..60)
            .map(|_| {
                let first = replay.random_range(0..3u32);
                let _second = replay.random_range(0..2u32);
                first
            })
            .collect();
        assert_eq!(got, first);
    }
}
