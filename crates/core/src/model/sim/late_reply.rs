//! Late replies (`late_reply = "accept"`, docs/MODEL.md, "Late replies").
//!
//! By default a caller that timed out on an attempt drops its reply when it comes: only the
//! awaited attempt's reply counts. A policy with `late_reply = "accept"` keeps the earlier
//! attempts' reply channels open, as a client does whose future completes after its timeout
//! fired or whose connection stays open: a *success* to one of the call's timed-out attempts
//! that arrives while the call is still going (waiting in its backoff, for a connection, or on a
//! later attempt) ends the call as a success — the request's latency from its creation — and
//! stops its pending retries. A late failure is dropped (the timeout was its failure already).
//!
//! Such a policy keeps its calls in the slab while they wait to retry and links them to their
//! attempts (`sim/links.rs`), so the late reply finds its call by its handle (stale once the call
//! ended) and the attempts still awaited; the plain loop (`sim/plain.rs`) and run-ahead
//! (`sim/run_ahead.rs`) do not take such scenarios.

use super::{CallEnd, Phase, Reply, Simulation};
use crate::engine::Handle;
use crate::model::LateReply;

impl Simulation<'_> {
    /// Whether a `reply` to an attempt of `call` whose caller stopped waiting on it after its
    /// timeout (not a hedge copy that lost its race) ends the call: a success, the call still
    /// live, and its policy accepts late replies.
    pub(super) fn takes_late_reply(&self, call: Handle, reply: Reply, lost_race: bool) -> bool {
        if lost_race || reply != Reply::Ok || !self.links.on {
            return false;
        }
        self.calls.get(call).is_some_and(|c| self.spec.policies[c.policy as usize].late_reply == LateReply::Accept)
    }

    /// A late success reached `call` from hop `hop` ([`Simulation::takes_late_reply`]): the
    /// attempts the call still awaits lose (their caller stops waiting; their work is wasted
    /// when it ends, cause `hedge`, as a copy that lost its race), the connection it held or
    /// waited for is let go, and the call ends as a success. Its pending retry timer, or an
    /// attempt start put off behind its client's work, finds it gone.
    pub(super) fn take_late_reply(&mut self, call: Handle, hop: usize) {
        let b = self.bucket();
        self.record.hops[hop].timely_ok += 1;
        self.record.hop_series[hop][b].timely_ok += 1;
        let copies = self.links.take_copies(call);
        let holds = copies.iter().any(|&h| self.attempts.get(h).is_some_and(|a| a.caller_waiting));
        for h in copies {
            let Some(a) = self.attempts.get_mut(h).filter(|a| a.caller_waiting) else { continue };
            a.lost_race = true;
            let a = self.stop_waiting(h).expect("live");
            if a.phase == Phase::Done {
                self.remove_attempt(h);
            }
        }
        if let Some(pool_hop) = self.leave_pool(call, holds) {
            self.release_connection_of(pool_hop);
        }
        // Giving the connection back can end this call's own caller in the same instant (see
        // `answer_caller`): the call is then gone, and the success reaches nobody.
        if self.calls.get(call).is_some() {
            self.budget_on_success(call, true);
            self.end_call(call, CallEnd::Succeeded);
        }
    }
}
