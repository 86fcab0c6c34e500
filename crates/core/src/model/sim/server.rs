//! The hop's side of an attempt: arrival, faults, queueing, service, side effects, reply.

use super::{Event, Payload, Phase, Reply, Simulation};
use crate::engine::{Handle, Nanos};
use crate::metrics::{HopBucket, HopCounters};
use crate::model::fault::InService;
use crate::model::{FaultKind, InProgress};
use rand::RngExt;

/// What happens to an attempt as it enters a hop ([`Simulation::enter_hop`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Arrival {
    /// A fault (or an invalid payload at the first hop) answers at once.
    Answered(Reply),
    /// A hang: the hop never answers.
    Unanswered,
    /// The hop takes the attempt in (service, queue, admission control, OCC).
    Admitted,
}

impl Simulation<'_> {
    pub(super) fn on_arrive(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("arriving attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        let (srv, answer) = self.enter_hop(hop, payload);
        let a = self.attempts.get_mut(handle).expect("arriving attempt is live");
        a.arrived_at = self.now;
        a.server = srv as u32;
        self.after_entry(handle, hop, srv, answer);
    }

    /// An attempt enters hop `hop`: the balancer picks its replica, which it counts in flight,
    /// and the answer forced at arrival is decided (see [`Arrival`]). Touches no attempt record:
    /// an attempt answered at once needs none ([`Simulation::send_attempt`]).
    pub(super) fn enter_hop(&mut self, hop: usize, payload: Payload) -> (usize, Arrival) {
        let b = self.bucket();
        let srv = self.route(hop, b);
        let state = &mut self.hops[srv];
        state.in_flight = state.in_flight.checked_add(1).expect("fewer than 2^32 attempts in flight at a hop");
        let lb = &mut self.lbs[hop];
        lb.in_flight = lb.in_flight.checked_add(1).expect("fewer than 2^32 attempts in flight at a hop");
        let (level, balanced) = (lb.in_flight, lb.count > 1);
        count_entry(&mut self.record.hop_series[hop][b], level);
        if balanced {
            self.replica_level(hop, srv, b);
        }
        let answer = match self.fault_reply(srv) {
            Some(None) => Arrival::Unanswered,
            Some(Some(reply)) => Arrival::Answered(reply),
            None if hop == 0 && payload == Payload::Invalid => Arrival::Answered(Reply::Rejected),
            None => Arrival::Admitted,
        };
        (srv, answer)
    }

    /// The rest of an arrival at replica `srv`, for an attempt in the slab.
    pub(super) fn after_entry(&mut self, handle: Handle, hop: usize, srv: usize, answer: Arrival) {
        match answer {
            Arrival::Unanswered => return self.drop_unanswered(handle),
            Arrival::Answered(reply) => return self.send_reply(handle, reply),
            Arrival::Admitted => {}
        }
        if self.spec.hops[hop].is_occ() {
            self.occ_read(handle, hop);
            return;
        }
        if self.hops[srv].overload.guarded && !self.admit(handle, hop, srv) {
            return;
        }
        if self.hops[srv].busy < self.effective_workers(srv) {
            self.hops[srv].queue.served_at_once(self.now);
            self.start_service(handle);
        } else {
            let b = self.bucket();
            self.enqueue(handle, hop, srv, b);
        }
    }

    /// The answer an active fault forces at arrival: `Some(None)` for a hang (no answer),
    /// `Some(Some(reply))` for a failure, `None` when the replica `srv` serves normally.
    pub(super) fn fault_reply(&mut self, srv: usize) -> Option<Option<Reply>> {
        let spec = self.spec;
        let (hop, replica) = (self.hops[srv].hop as usize, self.hops[srv].replica);
        for kind in spec.active_faults_on(hop, replica, self.now) {
            match *kind {
                FaultKind::Outage { .. } => return Some(Some(Reply::Refused)),
                FaultKind::Hang => return Some(None),
                FaultKind::Throttle { retry_after } => return Some(Some(Reply::Throttled(retry_after))),
                FaultKind::ErrorRate { p } => {
                    if self.rngs.faults[hop].random::<f64>() < p {
                        return Some(Some(Reply::Failed));
                    }
                }
                FaultKind::Slow { .. }
                | FaultKind::Capacity { .. }
                | FaultKind::LostReply { .. }
                | FaultKind::CacheFlush => {}
            }
        }
        None
    }

    pub(super) fn effective_workers(&self, srv: usize) -> u32 {
        let (hop, replica) = (self.hops[srv].hop as usize, self.hops[srv].replica);
        let limited = self.spec.active_faults_on(hop, replica, self.now).find_map(|kind| match *kind {
            FaultKind::Capacity { workers } => Some(workers),
            FaultKind::Outage { .. }
            | FaultKind::Hang
            | FaultKind::Throttle { .. }
            | FaultKind::ErrorRate { .. }
            | FaultKind::LostReply { .. }
            | FaultKind::Slow { .. }
            | FaultKind::CacheFlush => None,
        });
        limited.unwrap_or(self.hops[srv].workers)
    }

    /// Queues the end of every `capacity` fault within the run (see
    /// [`Simulation::on_capacity_restored`]).
    pub(super) fn schedule_capacity_restores(&mut self) {
        for f in &self.spec.faults {
            // One ending after the drain limit would only mark the run as cut there.
            if matches!(f.kind, FaultKind::Capacity { .. }) && f.to <= self.spec.drain_limit {
                self.queue.push(f.to, Event::CapacityRestored { hop: f.hop as u16 });
            }
        }
    }

    /// A `capacity` fault of `hop` ended: the workers it held back take queued attempts now.
    /// Without this, they waited for the next job to finish or start at the hop — for ever when
    /// nothing else was left to run there (an admission limit full of the queued attempts
    /// refuses every new one: the hop stayed wedged after the fault).
    pub(super) fn on_capacity_restored(&mut self, hop: usize) {
        for srv in 0..self.hops.len() {
            if self.hops[srv].hop as usize == hop {
                self.serve_queue(hop, srv);
            }
        }
    }

    pub(super) fn slow_factor(&self, srv: usize) -> f64 {
        let (hop, replica) = (self.hops[srv].hop as usize, self.hops[srv].replica);
        self.spec
            .active_faults_on(hop, replica, self.now)
            .map(|kind| match *kind {
                FaultKind::Slow { factor } => factor,
                FaultKind::Outage { .. }
                | FaultKind::Hang
                | FaultKind::Throttle { .. }
                | FaultKind::ErrorRate { .. }
                | FaultKind::LostReply { .. }
                | FaultKind::Capacity { .. }
                | FaultKind::CacheFlush => 1.0,
            })
            .product()
    }

    pub(super) fn start_service(&mut self, handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("served attempt is live");
        let (hop, srv) = (a.hop as usize, a.server as usize);
        a.phase = Phase::Service;
        let wait = now - a.arrived_at;
        let state = &mut self.hops[srv];
        state.busy = state.busy.checked_add(1).expect("fewer than 2^32 busy workers");
        let busy = state.busy;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.queue_wait_max_ns = bucket.queue_wait_max_ns.max(wait);
        self.record.hops[hop].services_started += 1;
        self.record.hops[hop].queue_wait_ns_sum += u128::from(wait);
        if hop == 0 && now < self.baseline_until {
            self.prefault_wait_us.record(wait / 1_000);
        }
        let base = self.spec.hops[hop].service.sample(&mut self.rngs.service[hop], busy);
        let mut factor = self.slow_factor(srv);
        if let Some(load) = self.spec.hops[hop].load_latency {
            factor *= load.factor_at(busy, self.effective_workers(srv));
        }
        let mut service = if factor == 1.0 { base } else { (base as f64 * factor).min(u64::MAX as f64) as Nanos };
        if let Some((at, _)) = self.crash_during(hop, srv, now, now.saturating_add(service)) {
            // The replica crashes before this service ends (or is down already): the work stops
            // there, and `on_service_done` ends the attempt as the outage's `in_service` says.
            service = at - now;
        }
        let a = self.attempts.get_mut(handle).expect("live");
        a.service_ns = service;
        a.service_start = now;
        self.record.hops[hop].busy_ns = self.record.hops[hop].busy_ns.saturating_add(service);
        self.queue.push(now.saturating_add(service), Event::ServiceDone { attempt: handle });
    }

    /// A crash (`outage` whose `in_service` is not `complete`) of replica `srv` of hop `hop`
    /// that stops a service from `start` to `end` (see [`crate::model::SimSpec::crash_during`]).
    /// A cache or register hop is one store and is not crashed this way.
    pub(super) fn crash_during(&self, hop: usize, srv: usize, start: Nanos, end: Nanos) -> Option<(Nanos, InService)> {
        let spec = &self.spec.hops[hop];
        if self.spec.faults.is_empty() || spec.cache().is_some() || spec.is_occ() {
            return None;
        }
        self.spec.crash_during(hop, self.hops[srv].replica, start, end)
    }

    pub(super) fn on_service_done(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("finishing attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        let (srv, start, end) = (a.server as usize, a.service_start, a.service_start.saturating_add(a.service_ns));
        if let Some((_, in_service)) = self.crash_during(hop, srv, start, end).filter(|&(at, _)| at == self.now) {
            return self.crashed_in_service(handle, hop, srv, in_service);
        }
        let b = self.bucket();
        self.record.hops[hop].served += 1;
        self.record.hop_series[hop][b].served += 1;
        let spec = &self.spec.hops[hop];
        if spec.cache().is_some() {
            return self.cache_lookup(handle, hop);
        }
        if spec.effect {
            if let Some(store) = &spec.idempotency {
                self.check_key(handle, store.in_progress);
                return;
            }
            if payload == Payload::Poison {
                self.finish_job(handle, Reply::Failed);
                return;
            }
            self.commit_without_store(handle);
        }
        self.run_handler(handle);
    }

    /// The replica crashed while serving `handle` (its service stopped at the crash instant):
    /// `reset`, the connection is reset and the caller gets a 503 now; `lost`, no reply ever
    /// comes (the caller's timeout fires). Either way its worker is free, and not `served`.
    pub(super) fn crashed_in_service(&mut self, handle: Handle, hop: usize, srv: usize, in_service: InService) {
        self.record.hops[hop].crashed_in_service += 1;
        match in_service {
            InService::Reset => self.finish_job(handle, Reply::Failed),
            InService::Lost => {
                let (seed, replication) = (self.seed, self.replication);
                let state = &mut self.hops[srv];
                state.busy = state.busy.checked_sub(1).unwrap_or_else(|| {
                    panic!("hop {hop}: a crashed job had no busy worker (seed {seed}, replication {replication})")
                });
                self.drop_unanswered(handle);
                self.serve_queue(hop, srv);
            }
            InService::Complete => unreachable!("a crash that lets work complete stops nothing"),
        }
    }

    /// The handler past the store: poison fails, otherwise the downstream call (if any) runs
    /// and the job ends with its outcome.
    fn run_handler(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("live");
        let (hop, payload) = (a.hop as usize, a.payload);
        if payload == Payload::Poison && self.spec.hops[hop].effect {
            self.finish_job(handle, Reply::Failed);
            return;
        }
        if self.spec.hops[hop].calls.is_empty() {
            self.finish_job(handle, Reply::Ok);
        } else {
            self.start_calls(handle, hop);
        }
    }

    fn commit_slot(&mut self, hop: usize, request_id: u64) -> &mut super::Commit {
        self.history.commit(hop, request_id)
    }

    /// Idempotency store, as real layers work: a live completed key returns the stored result
    /// (`deduplicated`); a key claimed by a delivery still in progress gets a retryable conflict
    /// or waits; otherwise the delivery claims the key and runs the handler, which completes the
    /// key on success and releases it on failure ([`Simulation::settle_key`]).
    fn check_key(&mut self, handle: Handle, mode: InProgress) {
        let now = self.now;
        let a = self.attempts.get(handle).expect("live");
        let (hop, tenant, request_id) = (a.hop as usize, a.tenant as usize, a.request_id);
        let commit = *self.commit_slot(hop, request_id);
        if commit.in_progress {
            match mode {
                InProgress::Conflict => {
                    self.record.hops[hop].in_progress_conflicts += 1;
                    self.record.tenants[tenant].in_progress_conflicts += 1;
                    self.finish_job(handle, Reply::Failed);
                }
                InProgress::Wait => self.waiters.entry((hop, request_id)).or_default().push(handle),
            }
        } else if commit.executions > 0 && now < commit.key_expires_at {
            self.record.hops[hop].deduplicated += 1;
            self.record.tenants[tenant].deduplicated += 1;
            self.finish_job(handle, Reply::Ok);
        } else {
            self.commit_slot(hop, request_id).in_progress = true;
            self.attempts.get_mut(handle).expect("live").holds_key = true;
            self.run_handler(handle);
        }
    }

    /// The job of the delivery holding the key ended: on success the effect commits and the key
    /// completes (live for the TTL); on failure the key is released. Then the deliveries waiting
    /// on it get the stored result, or the first of them claims the released key.
    pub(super) fn settle_key(&mut self, hop: usize, tenant: usize, request_id: u64, ok: bool) {
        let ttl = self.spec.hops[hop].idempotency.as_ref().expect("a key needs a store").ttl;
        let expires_at = self.now.saturating_add(ttl);
        let (seed, replication) = (self.seed, self.replication);
        let commit = self.commit_slot(hop, request_id);
        assert!(commit.in_progress, "settling a key nobody holds (seed {seed}, replication {replication})");
        commit.in_progress = false;
        let replay = commit.executions > 0;
        if ok {
            commit.executions += 1;
            commit.key_expires_at = expires_at;
        }
        let (counters, tc) = (&mut self.record.hops[hop], &mut self.record.tenants[tenant]);
        if !ok {
            counters.released += 1;
            tc.released += 1;
        } else if replay {
            // The key had completed before and expired: the effect runs a second time.
            counters.duplicates_ttl_expired += 1;
            tc.duplicates_ttl_expired += 1;
        }
        counters.executions += u64::from(ok);
        let Some(mut waiting) = self.waiters.remove(&(hop, request_id)) else { return };
        if ok {
            for w in waiting {
                let t = self.attempts.get(w).expect("a waiting delivery is live").tenant as usize;
                self.record.hops[hop].deduplicated += 1;
                self.record.tenants[t].deduplicated += 1;
                self.finish_job(w, Reply::Ok);
            }
        } else {
            let first = waiting.remove(0);
            if !waiting.is_empty() {
                self.waiters.insert((hop, request_id), waiting);
            }
            self.commit_slot(hop, request_id).in_progress = true;
            self.attempts.get_mut(first).expect("live").holds_key = true;
            self.run_handler(first);
        }
    }

    /// An effect hop without a store commits at service end; every re-execution is a duplicate.
    fn commit_without_store(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("live");
        let (hop, tenant, request_id) = (a.hop as usize, a.tenant as usize, a.request_id);
        let commit = self.commit_slot(hop, request_id);
        let replay = commit.executions > 0;
        commit.executions += 1;
        let counters = &mut self.record.hops[hop];
        counters.executions += 1;
        if replay {
            counters.duplicates_no_key += 1;
            self.record.tenants[tenant].duplicates_no_key += 1;
        }
    }

    /// The hop is done with an attempt it held a worker for: settle its idempotency key, free
    /// the worker, serve the queue, and send the reply.
    pub(super) fn finish_job(&mut self, handle: Handle, reply: Reply) {
        let coalesced = self.cache_settle(handle, reply);
        let a = self.attempts.get_mut(handle).expect("live");
        let (hop, srv, tenant, request_id) = (a.hop as usize, a.server as usize, a.tenant as usize, a.request_id);
        // The job is over from here on: settling its key answers the deliveries that waited on
        // it, and one of them may be this job's hedge copy, whose win cancels this one in the
        // same instant. A cancel finds it replying (nothing left to stop) instead of waiting
        // on its downstream call, which would free its worker a second time.
        a.phase = Phase::Replying;
        if std::mem::take(&mut a.holds_key) {
            self.settle_key(hop, tenant, request_id, reply == Reply::Ok);
        }
        let (seed, replication) = (self.seed, self.replication);
        let state = &mut self.hops[srv];
        state.busy = state.busy.checked_sub(1).unwrap_or_else(|| {
            panic!("hop {hop}: a job finished with no busy worker (seed {seed}, replication {replication})")
        });
        if self.hops[srv].overload.guarded {
            self.admission_sample(handle, hop, srv, reply);
        }
        self.serve_queue(hop, srv);
        self.send_reply(handle, reply);
        self.cache_release(coalesced, reply);
    }

    /// Free workers of replica `srv` of hop `hop` take queued attempts.
    pub(super) fn serve_queue(&mut self, hop: usize, srv: usize) {
        while self.hops[srv].busy < self.effective_workers(srv) {
            let Some(next) = self.next_queued(hop, srv) else { break };
            self.start_service(next);
        }
    }

    pub(super) fn send_reply(&mut self, handle: Handle, reply: Reply) {
        let now = self.now;
        let a = self.attempts.get_mut(handle).expect("replying attempt is live");
        let (hop, srv, caller_waiting) = (a.hop as usize, a.server as usize, a.caller_waiting);
        a.phase = Phase::Replying;
        a.reply = reply;
        self.count_reply(hop, srv, reply, caller_waiting);
        if self.reply_lost(srv) {
            let a = self.attempts.get_mut(handle).expect("live");
            a.phase = Phase::Done;
            let (waiting, service_ns) = (a.caller_waiting, a.service_ns);
            // The work was done for nothing: the caller never hears of it.
            self.add_wasted(hop, service_ns, super::cancel::Waste::LostReply);
            self.record.hops[hop].lost_replies += 1;
            if !waiting {
                self.remove_attempt(handle);
            }
            return;
        }
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        if net == 0 {
            // Event fusion: a reply with no network delay reaches its caller in this event.
            self.on_reply_arrive(handle);
        } else {
            self.queue.push(now.saturating_add(net), Event::ReplyArrive { attempt: handle });
        }
    }

    /// A reply leaves replica `srv` of hop `hop`: one fewer in flight, and the reply counted.
    #[inline]
    pub(super) fn count_reply(&mut self, hop: usize, srv: usize, reply: Reply, caller_waiting: bool) {
        let b = self.bucket();
        self.leave_hop(hop, srv);
        if self.lbs[hop].count > 1 {
            self.replica_replied(hop, srv, reply, caller_waiting, b);
        }
        count_exit(&mut self.record.hop_series[hop][b], &mut self.record.hops[hop], reply);
    }

    /// Whether an active `lost_reply` fault at replica `srv` drops this reply.
    fn reply_lost(&mut self, srv: usize) -> bool {
        let (hop, replica) = (self.hops[srv].hop as usize, self.hops[srv].replica);
        let p = self.spec.active_faults_on(hop, replica, self.now).find_map(|kind| match *kind {
            FaultKind::LostReply { p } => Some(p),
            FaultKind::Outage { .. }
            | FaultKind::Hang
            | FaultKind::Throttle { .. }
            | FaultKind::ErrorRate { .. }
            | FaultKind::Slow { .. }
            | FaultKind::Capacity { .. }
            | FaultKind::CacheFlush => None,
        });
        p.is_some_and(|p| self.rngs.faults[hop].random::<f64>() < p)
    }

    /// A hung hop never answers: the attempt ends on the server side without a reply.
    pub(super) fn drop_unanswered(&mut self, handle: Handle) {
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("live");
        a.phase = Phase::Done;
        let (hop, srv, waiting) = (a.hop as usize, a.server as usize, a.caller_waiting);
        self.leave_hop(hop, srv);
        self.record.hop_series[hop][b].left += 1;
        if !waiting {
            self.remove_attempt(handle);
        }
    }

    /// An attempt leaves replica `srv` of hop `hop` (replied or dropped): one fewer in flight there.
    #[inline]
    pub(super) fn leave_hop(&mut self, hop: usize, srv: usize) {
        let (seed, replication) = (self.seed, self.replication);
        let state = &mut self.hops[srv];
        state.in_flight = state.in_flight.checked_sub(1).unwrap_or_else(|| {
            panic!("hop {hop}: an attempt left with none in flight (seed {seed}, replication {replication})")
        });
        let lb = &mut self.lbs[hop];
        lb.in_flight = lb.in_flight.checked_sub(1).unwrap_or_else(|| {
            panic!(
                "hop {hop}: an attempt left the balancer with none in flight (seed {seed}, replication {replication})"
            )
        });
    }
}

/// What an attempt entering its hop at in-flight level `level` (itself included) adds to the
/// hop's bucket.
#[inline]
pub(super) fn count_entry(bucket: &mut HopBucket, level: u32) {
    bucket.in_flight_max = bucket.in_flight_max.max(level);
    bucket.entered += 1;
}

/// What an attempt leaving its hop with `reply` adds to the hop's bucket and counters.
#[inline]
pub(super) fn count_exit(bucket: &mut HopBucket, counters: &mut HopCounters, reply: Reply) {
    bucket.left += 1;
    if reply == Reply::Ok {
        bucket.successes += 1;
        counters.ok_replies += 1;
    } else {
        bucket.failures += 1;
    }
}
