//! The side-effect history of effect hops, kept only for requests that are still live.
//!
//! A request is live while any call or attempt carries its id (orphaned attempts still running
//! after their caller gave up included). Ids are dense and sequential, so the history is a
//! window starting at the oldest live request: memory is bounded by the requests issued since
//! then, not by every request of the run (Poisson at its maximum rate used to grow 16 bytes per
//! request for the whole run). No lookup can reach a pruned id: only a live attempt commits.
//!
//! A scenario without an effect hop (every hop says `effect = false`; a chain's last hop is one
//! by default) never looks a commit up, so it keeps no history: no reference count per call and
//! attempt, each a random access into the window.

use super::{Attempt, Call, Commit, Simulation};
use crate::engine::Handle;

/// Live-reference counts and per-hop commits of the request ids from `base` on.
#[derive(Clone, Default)]
pub(super) struct EffectHistory {
    /// Some hop commits side effects: without one, nothing is counted or kept.
    on: bool,
    /// Id of the first request in the window.
    base: u64,
    /// Calls and attempts alive per request id.
    refs: Window<u32>,
    /// Per hop, the commits of the ids `base..` (only effect hops grow theirs).
    commits: Vec<Window<Commit>>,
    /// Longest the window has been.
    peak: usize,
}

impl EffectHistory {
    /// A history for `hops` hops, kept only when `on` (some hop is an effect hop).
    pub(super) fn new(hops: usize, on: bool) -> EffectHistory {
        EffectHistory { on, base: 0, refs: Window::default(), commits: vec![Window::default(); hops], peak: 0 }
    }

    fn slot(&self, request_id: u64) -> usize {
        let offset = request_id.checked_sub(self.base).expect("a live request is never pruned");
        usize::try_from(offset).expect("the live window fits in memory")
    }

    fn retain(&mut self, request_id: u64) {
        if !self.on {
            return;
        }
        let slot = self.slot(request_id);
        if self.refs.len() <= slot {
            self.refs.resize(slot + 1, 0);
            self.peak = self.peak.max(self.refs.len());
        }
        *self.refs.at(slot) += 1;
    }

    fn release(&mut self, request_id: u64) {
        if !self.on {
            return;
        }
        let slot = self.slot(request_id);
        let count = self.refs.at(slot);
        *count = count.checked_sub(1).expect("released once per call or attempt");
        while self.refs.front() == Some(&0) {
            self.refs.pop_front();
            for per_hop in &mut self.commits {
                per_hop.pop_front();
            }
            self.base += 1;
        }
    }

    /// Starts loading the reference count of `request_id` if it is in the window (no effect on
    /// results). A retry's call drops its reference when the attempt is its last, and an
    /// attempt its caller stops waiting on takes one: random accesses into a window of millions
    /// of requests when the herd is large.
    pub(super) fn prefetch(&self, request_id: u64) {
        let slot = request_id.wrapping_sub(self.base);
        if let Some(count) = usize::try_from(slot).ok().and_then(|slot| self.refs.get(slot)) {
            crate::engine::prefetch::prefetch_read(count);
        }
    }

    /// The commit record of `request_id` at `hop` (created empty on first use).
    pub(super) fn commit(&mut self, hop: usize, request_id: u64) -> &mut Commit {
        assert!(self.on, "a commit at hop {hop} of a scenario without effect hops");
        let slot = self.slot(request_id);
        let per_hop = &mut self.commits[hop];
        if per_hop.len() <= slot {
            per_hop.resize(slot + 1, Commit::default());
        }
        per_hop.at(slot)
    }

    /// Requests in the window of live ones (0 when every request was let go).
    pub(super) fn live(&self) -> usize {
        self.refs.len()
    }

    /// The longest the window of live request ids has been (tests check the bound).
    #[cfg(test)]
    pub(super) fn peak(&self) -> usize {
        self.peak
    }
}

/// A double-ended window of values in one `Vec` (the front is dropped by moving a start index,
/// and the dropped values are let go in bulk once they are half of it): unlike a `VecDeque`, its
/// one allocation can ask for huge pages. With ten million live requests the reference counts
/// are 40 MB read at random per retry, a page walk per access in 4 KiB pages.
#[derive(Clone, Default)]
struct Window<T> {
    values: Vec<T>,
    /// Index in `values` of the window's first value.
    start: usize,
}

impl<T: Clone> Window<T> {
    fn len(&self) -> usize {
        self.values.len() - self.start
    }

    fn get(&self, i: usize) -> Option<&T> {
        self.values.get(self.start + i)
    }

    /// The value at `i` (present).
    fn at(&mut self, i: usize) -> &mut T {
        &mut self.values[self.start + i]
    }

    fn front(&self) -> Option<&T> {
        self.get(0)
    }

    /// Grows the window to `len` values, the new ones `value`.
    fn resize(&mut self, len: usize, value: T) {
        let capacity = self.values.capacity();
        if self.start > 0 && self.start + len > capacity {
            // Let the dropped values go before asking for more room: the room then stays within
            // twice the longest window, as a `VecDeque`'s does.
            self.values.drain(..self.start);
            self.start = 0;
        }
        self.values.resize(self.start + len, value);
        if self.values.capacity() != capacity {
            crate::engine::pages::advise_huge_pages(&self.values);
        }
    }

    /// Drops the first value, if any.
    fn pop_front(&mut self) {
        if self.start < self.values.len() {
            self.start += 1;
        }
        // Amortised: the values moved are at most the values dropped since the last time.
        if self.start >= 1024 && self.start * 2 >= self.values.len() {
            self.values.drain(..self.start);
            self.start = 0;
        }
    }
}

impl Simulation<'_> {
    /// Inserts a call, keeping its request live.
    pub(super) fn insert_call(&mut self, call: Call) -> Handle {
        self.history.retain(call.request_id);
        self.calls.insert(call)
    }

    /// Removes a call; its request may stop being live.
    pub(super) fn remove_call(&mut self, handle: Handle) -> Option<Call> {
        let call = self.calls.remove(handle)?;
        self.history.release(call.request_id);
        Some(call)
    }

    /// Inserts an attempt. Its caller waits on it, so its call keeps the request live: an
    /// attempt takes a reference of its own only once its caller stops waiting
    /// ([`Simulation::stop_waiting`]), the one way it can outlive its call. A retry during an
    /// outage thus touches no reference count (a random access into the window per attempt,
    /// a fifth of the 1M-client herd's time before).
    pub(super) fn insert_attempt(&mut self, attempt: Attempt) -> Handle {
        debug_assert!(attempt.caller_waiting && !attempt.retained, "a new attempt is awaited");
        self.attempts.insert(attempt)
    }

    /// The caller stops waiting on the attempt `handle` (timeout, cancel, or another copy
    /// answered): from now on the attempt keeps its request live itself, as its call may end
    /// first. The attempt, or `None` for a stale handle (it is gone already).
    pub(super) fn stop_waiting(&mut self, handle: Handle) -> Option<&Attempt> {
        let a = self.attempts.get_mut(handle)?;
        a.caller_waiting = false;
        if !a.retained {
            a.retained = true;
            self.history.retain(a.request_id);
        }
        Some(a)
    }

    /// Removes an attempt (false for a stale handle); its request may stop being live.
    pub(super) fn remove_attempt(&mut self, handle: Handle) -> bool {
        let Some(a) = self.attempts.get(handle) else { return false };
        let (retained, request_id) = (a.retained, a.request_id);
        self.attempts.discard(handle);
        if retained {
            self.history.release(request_id);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Window;
    use crate::scenario::Scenario;
    use rand::{RngExt, SeedableRng};
    use std::collections::VecDeque;

    /// A window is a `VecDeque` under any mix of growing, writing and popping the front, across
    /// many compactions (the start index passes 1,024 and half the values again and again).
    #[test]
    fn a_window_behaves_as_a_deque_through_its_compactions() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (mut window, mut deque) = (Window::<u32>::default(), VecDeque::<u32>::new());
        let mut compactions = 0;
        for step in 0..200_000u32 {
            let before = window.start;
            match rng.random_range(0..10) {
                0..=2 => {
                    let len = window.len() + rng.random_range(0..4);
                    window.resize(len, 0);
                    deque.resize(len, 0);
                }
                3..=5 if !deque.is_empty() => {
                    let i = rng.random_range(0..deque.len());
                    *window.at(i) += step;
                    deque[i] += step;
                }
                _ => {
                    window.pop_front();
                    deque.pop_front();
                }
            }
            compactions += usize::from(window.start < before);
            assert_eq!(window.len(), deque.len(), "step {step} (seed 3)");
            assert_eq!(window.front(), deque.front(), "step {step} (seed 3)");
            let i = rng.random_range(0..=deque.len());
            assert_eq!(window.get(i), deque.get(i), "step {step}, index {i} (seed 3)");
        }
        assert!(compactions > 10, "only {compactions} compactions: the test must cross many (seed 3)");
    }

    /// 200,000 Poisson requests through an effect hop, each done in 1 ms: the history holds the
    /// few requests in flight at a time (rate × latency ≈ 1, a few dozen at the peak), not every
    /// request of the run (what it held before: 200,000 × 16 bytes).
    #[test]
    fn the_effect_history_is_bounded_by_the_oldest_live_request() {
        let source = r#"name = "history"
horizon = "20s"
[[tenant]]
name = "main"
clients = 1
arrival = { kind = "poisson", rate_per_s = 10000 }
policy = "client"
[policy.client]
jitter = "full"
max_attempts = 3
[[hop]]
name = "api"
workers = 4
effect = true
idempotency = { ttl = "1h" }
service = { dist = "constant", mean = "100us" }
"#;
        let scenario = Scenario::from_source("history.toml", source, &[]).expect("valid");
        let mut sim = super::Simulation::new(&scenario.base, 7, 0);
        sim.run_to_end();
        let peak = sim.history.peak();
        // Calls and attempts are recycled too: their slabs never held more than the live ones.
        let slots = (sim.calls.slots(), sim.attempts.slots());
        let record = sim.finish();
        let requests: u64 = record.tenants.iter().map(|t| t.requests).sum();
        assert!(requests > 190_000, "only {requests} requests: the test must issue many");
        assert!(peak < 100, "the window reached {peak} request ids for {requests} requests (seed 7)");
        assert!(slots.0 < 100 && slots.1 < 100, "call and attempt slots {slots:?} for {requests} requests (seed 7)");
        assert_eq!(record.hops[0].executions, requests, "every request executed once (seed 7)");
    }
}
