//! Replicas of a hop behind a load balancer (issue 15): the balancer's pick, active health
//! probes and passive outlier ejection, and the per-replica counters.
//!
//! Every replica is one [`super::HopState`] (workers, queue, overload control) in the flat
//! `Simulation::hops`; hop `h`'s replicas sit at `lbs[h].base ..= lbs[h].base + count - 1`. An
//! attempt is routed when it arrives at its hop and remembers its replica (`Attempt::server`).
//!
//! Fast path: a hop with one replica routes to its `base` after one predictable test, draws no
//! random number and keeps no per-replica record, so single-replica scenarios run as before.

use super::{Event, Reply, Simulation};
use crate::engine::{stream, Nanos, StreamKind};
use crate::metrics::{ReplicaBucket, ReplicaRecord};
use crate::model::{Balancer, FaultKind, ReplicaSpec};
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
struct Health {
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
    fn in_rotation(&self, now: Nanos) -> bool {
        self.unhealthy_since.is_none() && now >= self.ejected_until
    }
}

/// Bytes one replica's state takes in a run (its `HopState` and the balancer's health record),
/// for the memory estimate: a hop holds one per replica it may have (`autoscale.max`).
pub fn replica_state_bytes() -> u64 {
    (std::mem::size_of::<super::HopState>() + std::mem::size_of::<Health>()) as u64
}

impl Lb {
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
}

impl Simulation<'_> {
    /// The server (index into `hops`) an attempt arriving at `hop` goes to.
    #[inline]
    pub(super) fn route(&mut self, hop: usize, b: usize) -> usize {
        let lb = &self.lbs[hop];
        if lb.count == 1 {
            return lb.base as usize;
        }
        let replica = self.pick(hop);
        let lb = &self.lbs[hop];
        let server = (lb.base + replica) as usize;
        let i = self.rec(hop, server);
        let r = &mut self.record.replicas[i];
        r.attempts += 1;
        r.series[b].attempts += 1;
        server
    }

    /// Index into `record.replicas` of server `server` of hop `hop` (the record lists only the
    /// replicas of balanced hops).
    fn rec(&self, hop: usize, server: usize) -> usize {
        server - self.lbs[hop].base as usize + self.replica_record_start[hop]
    }

    /// The balancer's choice among the replicas in rotation (all of them when fewer than half
    /// are, Envoy's panic threshold), among the active ones (`Lb::active`, moved by autoscaling).
    fn pick(&mut self, hop: usize) -> u32 {
        let now = self.now;
        let balancer = self.spec.hops[hop].replicas.balancer;
        let lb = &mut self.lbs[hop];
        let n = lb.active;
        let restricted = !lb.health.is_empty() && {
            lb.candidates.clear();
            lb.candidates.extend((0..n).filter(|&r| lb.health[r as usize].in_rotation(now)));
            let k = lb.candidates.len() as u32;
            k < n && 2 * k >= n
        };
        let k = if restricted { lb.candidates.len() as u32 } else { n };
        let at = |lb: &Lb, i: u32| if restricted { lb.candidates[i as usize] } else { i };
        match balancer {
            Balancer::RoundRobin => {
                // The next replica in turn that is in rotation.
                let mut r = lb.next % n;
                if restricted {
                    while !lb.health[r as usize].in_rotation(now) {
                        r = (r + 1) % n;
                    }
                }
                lb.next = (r + 1) % n;
                r
            }
            Balancer::Random => {
                let i = lb.rng.as_mut().expect("random balancers have a stream").random_range(0..k);
                at(lb, i)
            }
            Balancer::LeastConnections | Balancer::LeastConnectionsRandom | Balancer::LeastConnectionsFirst => {
                let Lb { base, next, rng, candidates, .. } = lb;
                let base = *base as usize;
                let load = |r: u32| self.hops[base + r as usize].in_flight;
                let at = |i: u32| if restricted { candidates[i as usize] } else { i };
                match balancer {
                    // One pass each: the least load, and among it the lowest index (`min_by_key`
                    // keeps the first minimum) or the first at or after the cursor.
                    Balancer::LeastConnectionsFirst => (0..k).map(at).min_by_key(|&r| load(r)).expect("a replica"),
                    Balancer::LeastConnections => {
                        // The first tied replica at or after the cursor, cyclically; the cursor
                        // then moves past it.
                        let from = *next % n;
                        let r = (0..k).map(at).min_by_key(|&r| (load(r), (r + n - from) % n)).expect("a replica");
                        *next = (r + 1) % n;
                        r
                    }
                    Balancer::RoundRobin | Balancer::Random | Balancer::PowerOfTwo => {
                        unreachable!("the outer match took {balancer:?}")
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
                }
            }
            Balancer::PowerOfTwo => {
                if k == 1 {
                    return at(lb, 0);
                }
                let rng = lb.rng.as_mut().expect("random balancers have a stream");
                let first = rng.random_range(0..k);
                let mut second = rng.random_range(0..k - 1);
                if second >= first {
                    second += 1;
                }
                let (a, c) = (at(lb, first), at(lb, second));
                let base = lb.base as usize;
                if self.hops[base + c as usize].in_flight < self.hops[base + a as usize].in_flight {
                    c
                } else {
                    a
                }
            }
        }
    }

    /// A reply leaves replica `server` of a balanced hop: counted, and seen by outlier detection
    /// when the caller still waits for it (Envoy's router no longer sees a reset request).
    pub(super) fn replica_replied(&mut self, hop: usize, server: usize, reply: Reply, caller_waiting: bool, b: usize) {
        let i = self.rec(hop, server);
        let r = &mut self.record.replicas[i];
        let ok = reply == Reply::Ok;
        if ok {
            r.ok_replies += 1;
            r.series[b].successes += 1;
        } else {
            r.failed_replies += 1;
            r.series[b].failures += 1;
        }
        if caller_waiting {
            match reply {
                Reply::Ok => self.outcome_seen(hop, server, false),
                Reply::Failed | Reply::Refused => self.outcome_seen(hop, server, true),
                // Outlier detection counts a 5xx as a failure and a success as good; a 4xx or
                // a 429 is neither (timeouts are counted by `replica_timed_out`).
                Reply::Rejected | Reply::Throttled(_) | Reply::Timeout | Reply::LocalReject => {}
            }
        }
    }

    /// The caller of an attempt served by replica `server` timed out: an error for outlier
    /// detection (Envoy counts a timeout as a gateway error in `consecutive_5xx`).
    pub(super) fn replica_timed_out(&mut self, hop: usize, server: usize) {
        self.outcome_seen(hop, server, true);
    }

    /// Outlier detection sees one outcome of replica `server`.
    fn outcome_seen(&mut self, hop: usize, server: usize, error: bool) {
        let Some(o) = self.spec.hops[hop].replicas.outlier else { return };
        let now = self.now;
        let lb = &mut self.lbs[hop];
        let replica = server - lb.base as usize;
        let h = &mut lb.health[replica];
        if now < h.ejected_until {
            return;
        }
        if !error {
            h.errors = 0;
            return;
        }
        h.errors += 1;
        if h.errors < o.consecutive_errors {
            return;
        }
        // Envoy's share is of the hosts in the cluster: the active replicas.
        let active = lb.active;
        let ejected = lb.health[..active as usize].iter().filter(|h| now < h.ejected_until).count() as u32;
        if ejected >= self.spec.hops[hop].replicas.max_ejected(active) {
            return;
        }
        let h = &mut lb.health[replica];
        h.errors = 0;
        h.ejections += 1;
        let time = o.base_ejection_time.saturating_mul(u64::from(h.ejections)).min(o.max_ejection_time);
        h.ejected_until = now.saturating_add(time);
        let until = h.ejected_until;
        let r = self.rec(hop, server);
        self.record.replicas[r].ejections += 1;
        self.out_of_rotation(r, now, until);
    }

    /// Records replica record `r` out of rotation over `[from, to)` (clipped to the run).
    fn out_of_rotation(&mut self, r: usize, from: Nanos, to: Nanos) {
        let end = self.spec.drain_limit.min(self.now.max(to));
        let to = to.min(end);
        let rec = &mut self.record.replicas[r];
        rec.out_of_rotation_ns += to.saturating_sub(from);
        let bucket = self.spec.bucket;
        let last = rec.series.len().saturating_sub(1);
        let (first, past) = ((from / bucket) as usize, (to.saturating_sub(1) / bucket) as usize);
        for b in rec.series[first.min(last)..=past.min(last)].iter_mut() {
            b.out_of_rotation = 1;
        }
    }

    /// Schedules the first probe of every hop with active health checks.
    pub(super) fn schedule_probes(&mut self) {
        for (hop, h) in self.spec.hops.iter().enumerate() {
            if let Some(check) = h.replicas.health_check {
                self.queue.push(check.interval, Event::Probe { hop: hop as u16 });
            }
        }
    }

    /// Probes every replica of `hop`: a crashed replica (an `outage` or `hang` fault active on
    /// it) fails the probe. Then the next probe, while arrivals may come or calls are live.
    pub(super) fn on_probe(&mut self, hop: usize) {
        let now = self.now;
        let spec = self.spec;
        let check = spec.hops[hop].replicas.health_check.expect("only hops with health checks are probed");
        for replica in 0..self.lbs[hop].count {
            let crashed = spec
                .active_faults_on(hop, replica, now)
                .any(|k| matches!(k, FaultKind::Outage { .. } | FaultKind::Hang));
            let h = &mut self.lbs[hop].health[replica as usize];
            if crashed {
                h.probes_failed += 1;
                h.probes_ok = 0;
                if h.unhealthy_since.is_none() && h.probes_failed >= check.unhealthy_threshold {
                    h.unhealthy_since = Some(now);
                }
            } else {
                h.probes_ok += 1;
                h.probes_failed = 0;
                if h.probes_ok >= check.healthy_threshold {
                    if let Some(since) = h.unhealthy_since.take() {
                        let r = self.rec(hop, self.lbs[hop].base as usize + replica as usize);
                        self.out_of_rotation(r, since, now);
                    }
                }
            }
        }
        let next = now.saturating_add(check.interval);
        if next < spec.horizon || self.calls_live() {
            self.queue.push(next, Event::Probe { hop: hop as u16 });
        }
    }

    /// At the end of a run: replicas still marked unhealthy count as out of rotation until now.
    pub(super) fn close_replica_books(&mut self) {
        for hop in 0..self.lbs.len() {
            for replica in 0..self.lbs[hop].health.len() {
                if let Some(since) = self.lbs[hop].health[replica].unhealthy_since.take() {
                    let r = self.rec(hop, self.lbs[hop].base as usize + replica);
                    let now = self.now;
                    self.out_of_rotation(r, since, now);
                }
            }
        }
        let (seed, replication) = (self.seed, self.replication);
        for (hop, lb) in self.lbs.iter().enumerate() {
            let base = lb.base as usize;
            let sum: u32 = self.hops[base..base + lb.count as usize].iter().map(|s| s.in_flight).sum();
            assert_eq!(
                sum, lb.in_flight,
                "hop {hop}: replicas hold {sum} attempts but the balancer counted {} (seed {seed}, replication {replication})",
                lb.in_flight
            );
        }
    }

    /// Per-replica records for the hops with more than one replica, and where each hop's start.
    pub(super) fn replica_records(spec: &crate::model::SimSpec, buckets: usize) -> (Vec<ReplicaRecord>, Vec<usize>) {
        let mut records = Vec::new();
        let mut starts = Vec::with_capacity(spec.hops.len());
        for (hop, h) in spec.hops.iter().enumerate() {
            starts.push(records.len());
            if h.replicas.count > 1 {
                records.extend((0..h.replicas.count).map(|replica| ReplicaRecord {
                    hop,
                    replica,
                    series: vec![ReplicaBucket::default(); buckets],
                    ..ReplicaRecord::default()
                }));
            }
        }
        (records, starts)
    }

    /// Notes the in-flight level of replica `server` of a balanced hop in bucket `b`.
    pub(super) fn replica_level(&mut self, hop: usize, server: usize, b: usize) {
        let level = self.hops[server].in_flight;
        let i = self.rec(hop, server);
        let r = &mut self.record.replicas[i];
        let bucket = &mut r.series[b];
        bucket.in_flight_max = bucket.in_flight_max.max(level);
    }
}
