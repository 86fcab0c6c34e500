//! Replicas of a hop behind a load balancer: the balancer's decisions applied
//! (routing, health probes, outlier ejections) and the per-replica counters.
//!
//! Every replica is one [`super::HopState`] (workers, queue, overload control) in the flat
//! `Simulation::hops`; hop `h`'s replicas sit at `lbs[h].base ..= lbs[h].base + count - 1`. An
//! attempt is routed when it arrives at its hop and remembers its replica (`Attempt::server`).
//!
//! Fast path: a hop with one replica routes to its `base` after one predictable test, draws no
//! random number and keeps no per-replica record, so single-replica scenarios run as before.
//!
//! The balancer's decisions (the pick, ejections, probe verdicts) are [`super::balancer`]'s;
//! this file applies them and keeps the per-replica records.

use super::{Event, Reply, Simulation};
use crate::engine::Nanos;
use crate::metrics::{ReplicaBucket, ReplicaRecord};
use crate::model::FaultKind;

/// Bytes one replica's state takes in a run (its `HopState` and the balancer's health record),
/// for the memory estimate: a hop holds one per replica it may have (`autoscale.max`).
pub fn replica_state_bytes() -> u64 {
    (std::mem::size_of::<super::HopState>() + std::mem::size_of::<super::balancer::Health>()) as u64
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

    /// The balancer's choice for an attempt arriving at `hop` (a replica index), from the
    /// replicas' loads.
    #[inline]
    fn pick(&mut self, hop: usize) -> u32 {
        let lb = &mut self.lbs[hop];
        let (hops, base) = (&self.hops, lb.base as usize);
        lb.pick(self.now, self.spec.hops[hop].replicas.balancer, |r| hops[base + r as usize].in_flight)
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

    /// Outlier detection sees one outcome of replica `server`; an ejection is recorded.
    fn outcome_seen(&mut self, hop: usize, server: usize, error: bool) {
        let now = self.now;
        let lb = &mut self.lbs[hop];
        let replica = server - lb.base as usize;
        let Some(until) = lb.outcome_seen(&self.spec.hops[hop].replicas, replica, error, now) else { return };
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
            if let Some(since) = self.lbs[hop].probe(&check, replica, crashed, now) {
                let r = self.rec(hop, self.lbs[hop].base as usize + replica as usize);
                self.out_of_rotation(r, since, now);
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
            for replica in 0..self.lbs[hop].health_records() {
                if let Some(since) = self.lbs[hop].close_unhealthy(replica) {
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

#[cfg(test)]
mod tests {
    /// A replica is priced at its hop state and the balancer's health record of it. The record
    /// is 40 bytes from its fields: four `u32` counters (16), `unhealthy_since: Option<Nanos>`
    /// (16 with its tag, aligned to 8) and `ejected_until: Nanos` (8).
    #[test]
    fn a_replica_is_priced_at_its_hop_state_and_its_40_byte_health_record() {
        assert_eq!(std::mem::size_of::<super::super::balancer::Health>(), 40);
        let hop_state = std::mem::size_of::<super::super::HopState>() as u64;
        assert!(hop_state > 40, "a hop state holds more than a health record");
        assert_eq!(super::replica_state_bytes(), hop_state + 40);
    }
}
