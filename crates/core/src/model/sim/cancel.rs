//! Cancellation propagation and wasted work by cause.
//!
//! With `cancel_on_timeout = true` on a policy, a caller that gives up on an attempt (its
//! timeout, bounded by its deadline) or whose other hedge copy answered first cancels the
//! attempt. The cancel travels to the attempt's hop like a reply travels back: after one draw of
//! the hop's network delay (at once when it is 0), and acts on the attempt's phase *then*:
//! still on the wire (the cancel overtook it), it never enters the hop; queued, it
//! leaves the queue; in service, its worker is freed at that instant (the unspent service is
//! taken off `busy`); waiting on its own downstream call, that call is cancelled with every
//! attempt it is waiting on, recursively down the chain, and its idempotency key is released.
//! An attempt past its service (replying, or waiting on an in-progress key) is not cancelled;
//! its caller simply stops waiting. Off by default: no map is kept and no event changes.
//!
//! What a cancel does in each phase is decided by [`CancelAction`], the links it follows are
//! kept in [`Links`](super::links::Links); this file applies both.

use super::cancel_action::CancelAction;
use super::{Reply, Simulation};
use crate::engine::{Handle, Nanos};
use crate::metrics::HopCounters;

/// Why service time was wasted (its result never reached a caller that was still waiting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Waste {
    /// Run to the end for a caller that had timed out.
    TimedOut,
    /// The slower copy of a hedged attempt.
    Hedge,
    /// Spent before a cancellation (the caller timed out).
    Cancelled,
    /// The reply was lost (`lost_reply`).
    LostReply,
}

/// Counts `ns` of wasted service in a hop's counters `c` under `cause` (and in the total).
#[inline]
pub(super) fn add_wasted_to(c: &mut HopCounters, ns: Nanos, cause: Waste) {
    c.wasted_work_ns = c.wasted_work_ns.saturating_add(ns);
    let by_cause = match cause {
        Waste::TimedOut => &mut c.wasted_timed_out_ns,
        Waste::Hedge => &mut c.wasted_hedge_ns,
        Waste::Cancelled => &mut c.wasted_cancelled_ns,
        Waste::LostReply => &mut c.wasted_lost_reply_ns,
    };
    *by_cause = by_cause.saturating_add(ns);
}

impl Simulation<'_> {
    /// Counts `ns` of wasted service at `hop` under `cause` (and in the total).
    pub(super) fn add_wasted(&mut self, hop: usize, ns: Nanos, cause: Waste) {
        add_wasted_to(&mut self.record.hops[hop], ns, cause);
    }

    /// The caller stopped waiting on `attempt` (its timeout fired): cancel it if the call's
    /// policy says so. True when another copy of the attempt (a hedge) is still awaited, so the
    /// call does not see the timeout yet.
    ///
    /// Whether a copy is awaited is read *before* the cancel is sent: a cancel with no network
    /// delay acts at once, and freeing the worker lets the hop take its next queued attempt,
    /// where `codel` or `deadline_drop` may drop the other copy of this very call and answer it
    /// in the same instant; the call then sees that answer (and goes on: a retry, or its end)
    /// through the copy's reply, and must not see this timeout as well. Read after the cancel,
    /// the call saw two outcomes for one attempt: budgets touched a call already ended, a pooled
    /// connection was released twice, a request was let go twice in the effect history.
    pub(super) fn gave_up(&mut self, attempt: Handle, call: Handle) -> bool {
        let policy = self.calls.get(call).expect("a timed-out attempt's call is live").policy;
        let awaited = self.copy_awaited(call, attempt);
        self.hedge_throttle_outcome(call, super::Reply::Timeout, !awaited);
        if self.spec.policies[policy as usize].cancel_on_timeout {
            self.send_cancel(attempt);
        }
        awaited
    }

    /// Whether `call` still waits on an attempt other than `except`.
    pub(super) fn copy_awaited(&self, call: Handle, except: Handle) -> bool {
        self.links.awaits_other(call, except, |h| self.attempts.get(h).is_some_and(|a| a.caller_waiting))
    }

    /// The caller stops waiting on `handle` and sends it a cancel, which reaches the attempt's
    /// hop after a draw of the hop's network delay (an event) or, with no delay, acts at once.
    pub(super) fn send_cancel(&mut self, handle: Handle) {
        let Some(a) = self.stop_waiting(handle) else { return };
        let hop = a.hop as usize;
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        if net == 0 {
            self.cancel_attempt(handle);
        } else {
            self.queue.push(self.now.saturating_add(net), super::Event::CancelArrive { attempt: handle });
        }
    }

    /// Cancels `handle` (see the module documentation); a stale handle or finished work is left.
    pub(super) fn cancel_attempt(&mut self, handle: Handle) {
        let now = self.now;
        let Some(a) = self.stop_waiting(handle) else { return };
        let (hop, srv, tenant, retry) = (a.hop as usize, a.server as usize, a.tenant, a.retry);
        let (phase, lost_race, service_start, service_ns) = (a.phase, a.lost_race, a.service_start, a.service_ns);
        let action = CancelAction::of(phase, self.spec.hops[hop].is_occ(), now, service_start, service_ns);
        let mut coalesced = None;
        match action {
            CancelAction::Late => return,
            CancelAction::Over => {
                self.remove_attempt(handle);
                return;
            }
            CancelAction::Overtaken => {}
            CancelAction::Dequeued => {
                let removed = self.hops[srv].queue.remove(now, tenant, retry, handle);
                assert!(
                    removed,
                    "hop {hop}: a queued attempt is not in the queue (seed {}, replication {})",
                    self.seed, self.replication
                );
            }
            CancelAction::InService { unspent, .. } => {
                let c = &mut self.record.hops[hop];
                c.busy_ns =
                    c.busy_ns.checked_sub(unspent).expect("a cancelled service was counted in busy at its start");
            }
            CancelAction::Downstream { .. } => {
                // A cache miss cancelled while its backend call runs fills nothing, and the misses
                // coalesced on it get that failure (answered below, once the miss is gone), as
                // Go's singleflight shares a cancelled call's error; left waiting, they and
                // every later miss of the key would wait for ever.
                coalesced = self.cache_settle(handle, Reply::Failed);
                let children = self.links.take_children(handle);
                self.cancel_calls(&children);
                let a = self.attempts.get_mut(handle).expect("live");
                if std::mem::take(&mut a.holds_key) {
                    let request_id = a.request_id;
                    self.settle_key(hop, tenant as usize, request_id, false);
                }
            }
        }
        self.record.hops[hop].cancelled += 1;
        if let Some(spent) = action.spent() {
            // It was inside the hop: it leaves, and a worker it held takes the next attempt.
            let b = self.bucket();
            self.leave_hop(hop, srv);
            self.record.hop_series[hop][b].left += 1;
            if action.frees_worker() {
                let state = &mut self.hops[srv];
                state.busy = state.busy.checked_sub(1).unwrap_or_else(|| {
                    panic!(
                        "hop {hop}: cancelled work with no busy worker (seed {}, replication {})",
                        self.seed, self.replication
                    )
                });
            }
            self.add_wasted(hop, spent, if lost_race { Waste::Hedge } else { Waste::Cancelled });
        }
        self.remove_attempt(handle);
        if action.frees_worker() {
            self.serve_queue(hop, srv);
        }
        self.cache_release(coalesced, Reply::Failed);
    }

    /// Cancels the downstream calls of an attempt that was cancelled: every attempt they wait
    /// on is sent a cancel and the calls end without a reply (their pending retry timers find
    /// them gone).
    ///
    /// Every call is taken out first — its caller stops waiting on all its attempts (an attempt
    /// and its hedge), it leaves a pool's wait queue, it is removed — and only then are
    /// connections given back and cancels sent. A cancel acts at once when the hop has no
    /// network delay, and it can make the hop answer other attempts in that instant: a
    /// cancelled cache miss answers the misses coalesced on it, among them the call's own hedge
    /// copy; a freed worker takes the next queued attempt, which CoDel or deadline_drop may drop.
    /// With the call still waiting on that copy, the answer reached it (it retried or ended, and
    /// gave its connection back) and the cancel then gave the connection back a second time.
    pub(super) fn cancel_calls(&mut self, calls: &[Handle]) {
        let mut cancels = Vec::new();
        let mut releases = Vec::new();
        for &call in calls {
            let copies = self.links.take_copies(call);
            let holds = copies.iter().any(|&h| self.attempts.get(h).is_some_and(|a| a.caller_waiting));
            for &h in &copies {
                self.stop_waiting(h);
            }
            if let Some(hop) = self.leave_pool(call, holds) {
                releases.push(hop);
            }
            if let Some(removed) = self.remove_call(call) {
                self.budget_on_call_end(&removed);
            }
            cancels.extend(copies);
        }
        for hop in releases {
            self.release_connection_of(hop);
        }
        for h in cancels {
            self.send_cancel(h);
        }
    }
}
