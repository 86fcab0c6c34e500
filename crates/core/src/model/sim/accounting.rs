//! Counting: attempts per hop and tenant, terminal states, and the books closed at the end of a
//! run (in-flight requests, the conservation check, derived series).

use super::{Call, CallEnd, Simulation};
use crate::engine::Nanos;
use crate::metrics::{DlqReason, HopBucket, HopCounters, RunRecord, TenantBucket, TenantCounters};
use crate::model::SimSpec;

/// What one attempt to a hop adds to the hop's run counters and time bucket, and for a client's
/// call (hop 0) to its tenant's.
#[inline]
pub(super) fn count_attempt_in(
    counters: &mut HopCounters,
    bucket: &mut HopBucket,
    tenant: Option<(&mut TenantCounters, &mut TenantBucket)>,
    retry: bool,
) {
    counters.count_attempt(bucket, retry);
    if let Some((t, tb)) = tenant {
        t.count_attempt(tb, retry);
    }
}

/// What a request made at `created_at` that ends at `now` as `end` adds to its tenant's counters
/// and time bucket (`tenant`) and to the run's completion time: the terminal state, and the
/// latency of a success.
#[inline(always)]
pub(super) fn count_request_end(
    (t, tb): (&mut TenantCounters, &mut TenantBucket),
    completion_time_ns: &mut Nanos,
    created_at: Nanos,
    end: CallEnd,
    now: Nanos,
) {
    match end {
        CallEnd::Succeeded => {
            t.succeeded += 1;
            tb.successes += 1;
            t.record_latency((now - created_at) / 1_000);
        }
        CallEnd::Rejected => {
            t.rejected += 1;
            tb.failures += 1;
        }
        CallEnd::Dlq(reason) => {
            t.dlq += 1;
            t.dlq_deadline += u64::from(reason == DlqReason::Deadline);
            t.dlq_budget += u64::from(reason == DlqReason::Budget);
            tb.failures += 1;
        }
    }
    // A maximum, not the last write: a retry run ahead of the clock ends its request early
    // (`sim/run_ahead.rs`).
    *completion_time_ns = (*completion_time_ns).max(now);
}

/// Whether a run stops before its next event, due at `at` (the clock is at `now`): past the
/// drain limit, with `max_events` handled, or asked to stop (`set_stop_flag`). The record says
/// where and why it was cut.
#[inline]
pub(super) fn cut_before(record: &mut RunRecord, spec: &SimSpec, at: Nanos, now: Nanos) -> bool {
    // The test of every event, apart from the writing of the cut (a call per event before).
    (at > spec.drain_limit
        || record.events >= spec.max_events
        || (record.events & super::STOP_CHECK_MASK == 0 && super::stop_requested()))
        && cut(record, spec, at, now)
}

/// [`cut_before`]'s cut (past one of the limits): the record says where and why.
#[cold]
#[inline(never)]
fn cut(record: &mut RunRecord, spec: &SimSpec, at: Nanos, now: Nanos) -> bool {
    if at > spec.drain_limit {
        record.cut_at_ns = Some(spec.drain_limit);
        record.truncated = Some(format!(
            "drain limit reached at {:.3} s with requests still in flight",
            crate::engine::time::ns_to_secs(spec.drain_limit)
        ));
    } else if record.events >= spec.max_events {
        record.cut_at_ns = Some(now);
        record.truncated = Some(format!("max_events = {} reached", spec.max_events));
    } else {
        record.cut_at_ns = Some(now);
        record.truncated = Some("stopped on request (interrupted)".to_string());
    }
    true
}

impl Simulation<'_> {
    #[inline]
    pub(super) fn count_attempt(&mut self, hop: usize, tenant: usize, retry: bool, b: usize) {
        let r = &mut self.record;
        let tenant = (hop == 0).then(|| (&mut r.tenants[tenant], &mut r.tenant_series[tenant][b]));
        count_attempt_in(&mut r.hops[hop], &mut r.hop_series[hop][b], tenant, retry);
    }

    pub(super) fn end_request(&mut self, call: &Call, end: CallEnd) {
        let now = self.now;
        let b = self.bucket();
        let (r, ti) = (&mut self.record, call.tenant as usize);
        let tenant = (&mut r.tenants[ti], &mut r.tenant_series[ti][b]);
        count_request_end(tenant, &mut r.completion_time_ns, call.created_at, end, now);
        self.schedule_next_request(call.tenant, call.client);
    }

    /// Closes the books: in-flight counts, the conservation check, derived series.
    pub fn finish(self) -> RunRecord {
        let live_top = self.count_live_top_calls();
        self.finish_counted(live_top)
    }

    /// [`Simulation::finish`] with the client calls still live counted by the loop that ran
    /// (`sim/plain.rs` keeps its own).
    pub(super) fn finish_counted(mut self, live_top: u64) -> RunRecord {
        // Requests not yet terminal are the ones the horizon (or a run limit) cut.
        let (seed, replication) = (self.seed, self.replication);
        let in_flight: Vec<u64> = self
            .record
            .tenants
            .iter()
            .map(|t| {
                let ended = t.succeeded + t.rejected + t.dlq;
                t.requests.checked_sub(ended).unwrap_or_else(|| {
                    panic!(
                        "{ended} requests ended but only {} began (seed {seed}, replication {replication})",
                        t.requests
                    )
                })
            })
            .collect();
        assert_eq!(
            in_flight.iter().sum::<u64>(),
            live_top,
            "conservation violated: requests ≠ succeeded + rejected + dlq + in_flight (scenario {})",
            self.spec.name
        );
        self.record.in_flight = in_flight;
        self.record.retries_run_ahead = self.ahead.retries;
        self.record.retry_delays_ns =
            std::mem::replace(&mut self.delay_samples, super::delay_samples::DelaySamples::new()).into_samples();
        self.close_replica_books();
        for (h, lb) in self.lbs.iter().enumerate() {
            let flow: i64 = self.record.hop_series[h].iter().map(|b| i64::from(b.entered) - i64::from(b.left)).sum();
            assert_eq!(
                flow,
                i64::from(lb.in_flight),
                "backlog series out of step with hop {h}'s attempts (scenario {})",
                self.spec.name
            );
        }
        self.fill_in_flight_series();
        self.fill_limit_series();
        self.fill_capacity_series();
        self.record.prefault_wait_p99_ns = self.prefault_wait_us.quantile(0.99).map(|us| us * 1_000);
        self.record
    }

    /// At the end of a run whose events ran out with no call left (not cut by the drain limit or
    /// `max_events`), everything a request held has been given back: no attempt is left, every
    /// replica has no busy worker, nothing in flight and nothing queued, no cancel or hedge link,
    /// no delivery waits on an idempotency key, and no request is live in the effect history.
    /// A leak is a bug of the model, reported loudly with the seed (`check_pools_drained` does
    /// the same for connection pools).
    pub(super) fn check_drained(&self) {
        if self.calls_live() {
            return; // a call still waits (a hang or lost reply without a timeout): it holds its work
        }
        let (seed, replication) = (self.seed, self.replication);
        let leak = |what: String| -> ! {
            panic!(
                "{what} after every call ended (scenario {}, seed {seed}, replication {replication})",
                self.spec.name
            )
        };
        if let Some(a) = self.attempts.iter().next() {
            leak(format!(
                "{} attempt(s) still live (one at hop {} in phase {:?}, its caller {}waiting)",
                self.attempts.len(),
                a.hop,
                a.phase,
                if a.caller_waiting { "" } else { "not " }
            ));
        }
        for state in &self.hops {
            if state.busy != 0 || state.in_flight != 0 || state.queue.len() != 0 {
                leak(format!(
                    "hop {} replica {}: {} busy worker(s), {} attempt(s) in flight, {} queued",
                    state.hop,
                    state.replica,
                    state.busy,
                    state.in_flight,
                    state.queue.len()
                ));
            }
        }
        for (hop, lb) in self.lbs.iter().enumerate() {
            if lb.in_flight != 0 {
                leak(format!("hop {hop}: {} attempt(s) in flight at its balancer", lb.in_flight));
            }
        }
        let (downstream, attempts) = self.links.left();
        if downstream != 0 || attempts != 0 {
            leak(format!("{downstream} downstream link(s) and {attempts} attempt link(s) left"));
        }
        if !self.waiters.is_empty() {
            leak(format!("{} delivery queue(s) still waiting on an idempotency key", self.waiters.len()));
        }
        if self.history.live() != 0 {
            leak(format!("{} request(s) still live in the effect history", self.history.live()));
        }
    }

    /// Live calls made by clients (not by hops): the simulation's own count of unfinished
    /// requests, checked against the counters' in conservation. A call waiting for its retry
    /// rides in its event (`Simulation::queue_retry`), so the pending events are counted too.
    pub(super) fn count_live_top_calls(&self) -> u64 {
        // Only the retry events carry a call; no other kind needs counting here.
        let riding =
            self.queue.iter().filter_map(|e| if let super::Event::Retry { call } = e { Some(call) } else { None });
        let top = self.calls.iter().chain(riding).filter(|c| c.parent().is_none()).count();
        top as u64
    }

    pub(super) fn fill_in_flight_series(&mut self) {
        for ti in 0..self.spec.tenants.len() {
            let mut live: i64 = 0;
            let series = &mut self.record.tenant_series[ti];
            for bucket in series.iter_mut() {
                live += i64::from(bucket.arrivals) - i64::from(bucket.successes) - i64::from(bucket.failures);
                bucket.in_flight = u32::try_from(live).unwrap_or_else(|_| {
                    panic!(
                        "tenant {ti}: {live} requests in flight in a bucket (seed {}, replication {})",
                        self.seed, self.replication
                    )
                });
            }
        }
    }
}
