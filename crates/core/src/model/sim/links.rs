//! The links cancellation and hedging follow between calls and attempts: the downstream calls a
//! job waits on, and the attempts a call waits on. Kept only when some policy hedges, cancels or
//! takes late replies, or a crash can stop a hop while it waits on its calls ([`Links::needed`]); probed by key only,
//! never iterated. The simulation reads and updates them (`sim/cancel.rs`, `sim/hedge.rs`,
//! `end_call`).

use crate::engine::Handle;
use crate::model::SimSpec;
use std::collections::HashMap;

/// The call↔attempt links of a run.
#[derive(Clone, Default)]
pub(super) struct Links {
    /// Some policy hedges, cancels or takes late replies (or a calling hop crashes): the maps are
    /// kept, calls stay in the slab while they wait to retry, and stale events are skipped.
    pub on: bool,
    /// Parent attempt → the downstream calls it is waiting on (several in a parallel stage of a
    /// call graph).
    child: HashMap<Handle, Vec<Handle>>,
    /// Call → the attempts it sent since its last timeout (its current attempt and a hedge);
    /// `sim/hedge.rs` records them as it sends them.
    pub attempts: HashMap<Handle, Vec<Handle>>,
}

impl Links {
    pub(super) fn new(spec: &SimSpec) -> Links {
        Links { on: Links::needed(spec), ..Links::default() }
    }

    /// Some policy hedges, cancels or takes late replies (which end a call that may be waiting
    /// in its backoff or on a later attempt, `Simulation::take_late_reply`), or a crash can stop
    /// a hop while it waits on its downstream calls (which are then cancelled), so the links
    /// must be kept.
    pub(super) fn needed(spec: &SimSpec) -> bool {
        spec.policies
            .iter()
            .any(|p| p.cancel_on_timeout || p.hedge.is_some() || p.late_reply == crate::model::LateReply::Accept)
            || (0..spec.hops.len()).any(|h| !spec.hops[h].calls.is_empty() && spec.crashes(h))
    }

    /// The job `parent` made the downstream call `call`.
    #[inline]
    pub(super) fn add_child(&mut self, parent: Handle, call: Handle) {
        self.child.entry(parent).or_default().push(call);
    }

    /// The downstream calls `parent` waits on, in the order it made them, unlinked from it (it
    /// is cancelled, or its hop crashed, and they are cancelled with it).
    #[inline]
    pub(super) fn take_children(&mut self, parent: Handle) -> Vec<Handle> {
        self.child.remove(&parent).unwrap_or_default()
    }

    /// The attempts `call` sent since its last timeout, unlinked from it (it is cancelled).
    #[inline]
    pub(super) fn take_copies(&mut self, call: Handle) -> Vec<Handle> {
        self.attempts.remove(&call).unwrap_or_default()
    }

    /// Whether `call` still waits on an attempt other than `except`, `waiting` telling whether
    /// an attempt's caller still waits on it.
    #[inline]
    pub(super) fn awaits_other(&self, call: Handle, except: Handle, waiting: impl Fn(Handle) -> bool) -> bool {
        self.attempts.get(&call).is_some_and(|copies| copies.iter().any(|&h| h != except && waiting(h)))
    }

    /// A call ended: forget its attempts and its place under its parent attempt.
    #[inline]
    pub(super) fn forget(&mut self, call: Handle, parent: Option<Handle>) {
        self.attempts.remove(&call);
        if let Some(p) = parent {
            if let Some(children) = self.child.get_mut(&p) {
                children.retain(|&c| c != call);
                if children.is_empty() {
                    self.child.remove(&p);
                }
            }
        }
    }

    /// The links left: jobs with downstream calls, and calls with attempts (both 0 once every
    /// call has ended).
    pub(super) fn left(&self) -> (usize, usize) {
        (self.child.len(), self.attempts.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(index: u32) -> Handle {
        Handle { index, generation: 0 }
    }

    #[test]
    fn a_jobs_calls_are_taken_in_order_and_an_ended_call_leaves_its_parent() {
        let mut links = Links::default();
        let (job, other) = (h(100), h(101));
        for call in [h(1), h(2), h(3)] {
            links.add_child(job, call);
        }
        links.add_child(other, h(4));
        links.forget(h(2), Some(job));
        assert_eq!(links.take_children(job), [h(1), h(3)]);
        assert_eq!(links.take_children(job), [], "taken once");
        assert_eq!(links.left(), (1, 0));
        links.forget(h(4), Some(other));
        assert_eq!(links.left(), (0, 0), "a job whose last call ended is forgotten");
        links.forget(h(5), None); // a client's call: no parent, nothing linked
        assert_eq!(links.left(), (0, 0));
    }

    #[test]
    fn a_call_awaits_another_copy_only_while_its_caller_waits_on_it() {
        let mut links = Links::default();
        let (call, first, hedge) = (h(1), h(10), h(11));
        // What `sim/hedge.rs` records: the attempt, then its hedge copy.
        links.attempts.insert(call, vec![first, hedge]);
        assert!(links.awaits_other(call, first, |_| true));
        assert!(links.awaits_other(call, hedge, |_| true));
        assert!(!links.awaits_other(call, first, |a| a != hedge), "the hedge is no longer awaited");
        assert!(links.awaits_other(call, first, |a| a == hedge), "the attempt's own state does not count");
        assert!(!links.awaits_other(h(2), first, |_| true), "a call without copies awaits none");
        assert_eq!(links.take_copies(call), [first, hedge]);
        assert!(!links.awaits_other(call, first, |_| true), "taken: nothing is awaited");
        assert_eq!(links.left(), (0, 0));
    }

    /// `api` calls `db`; the policies neither hedge nor cancel and nothing crashes, unless
    /// `policy` or `fault` adds it.
    fn spec(policy: &str, fault: &str) -> SimSpec {
        let source = format!(
            r#"name = "links"
horizon = "1s"
[[tenant]]
name = "t"
clients = 1
arrival = {{ kind = "poisson", rate_per_s = 10 }}
policy = "client"
[policy.client]
jitter = "none"
max_attempts = 2
attempt_timeout = "100ms"
{policy}
[policy.inner]
jitter = "none"
max_attempts = 1
attempt_timeout = "50ms"
[[hop]]
name = "api"
service = {{ dist = "constant", mean = "1ms" }}
calls = [{{ hop = "db", policy = "inner" }}]
[[hop]]
name = "db"
service = {{ dist = "constant", mean = "1ms" }}
{fault}"#
        );
        crate::scenario::Scenario::from_source("links.toml", &source, &[]).expect("valid").base
    }

    #[test]
    fn links_are_kept_only_for_a_hedge_a_cancel_a_late_reply_or_a_crash_of_a_calling_hop() {
        let crash = |hop: &str| format!("[[fault]]\nhop = \"{hop}\"\nkind = \"outage\"\nfrom = \"0s\"\nto = \"1s\"\n");
        let cases = [
            ("", String::new(), false, "a call graph alone"),
            ("cancel_on_timeout = true", String::new(), true, "a cancelling policy"),
            ("hedge = { after = \"10ms\", max_share = 0.1 }", String::new(), true, "a hedging policy"),
            ("", crash("api"), true, "a crash of the hop that makes calls"),
            ("", crash("db"), false, "a crash of a hop that makes none"),
            ("late_reply = \"accept\"", String::new(), true, "a policy that takes late replies"),
            ("late_reply = \"ignore\"", String::new(), false, "a policy that drops late replies"),
        ];
        for (policy, fault, needed, what) in cases {
            let spec = spec(policy, &fault);
            assert_eq!(Links::needed(&spec), needed, "{what}");
            assert_eq!(Links::new(&spec).on, needed, "{what}");
        }
    }

    #[test]
    fn an_ended_call_forgets_its_copies() {
        let mut links = Links::default();
        links.attempts.insert(h(1), vec![h(10)]);
        links.add_child(h(100), h(1));
        links.forget(h(1), Some(h(100)));
        assert_eq!(links.take_copies(h(1)), []);
        assert_eq!(links.left(), (0, 0));
    }
}
