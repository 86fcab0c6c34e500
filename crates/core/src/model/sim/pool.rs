//! Connection pools: a hop's downstream calls go through `size` connections. An
//! attempt takes one before it is sent and holds it until its caller stops waiting for it (the
//! reply arrives or the attempt times out); a call that finds none free waits in FIFO order, at
//! most `queue_limit` of them, each at most `acquire_timeout`. A call refused by a full queue or
//! whose wait times out fails that attempt as a transient failure, which its policy may retry.
//! A hedge rides on its attempt's connection (a second stream on it, as HTTP/2 and gRPC do): the
//! call releases it once, when it stops waiting for both copies. A call cancelled because its
//! caller's attempt was (`cancel_on_timeout` up the chain) releases the connection it holds, or
//! leaves the wait queue ([`Simulation::leave_pool`]).
//!
//! The pool's state and its decisions are [`PoolState`](super::pool_state::PoolState)'s; this
//! file applies them: the pool's counters, the `PoolTimeout` event, sending or failing the attempt.

use super::pool_state::{Acquire, Release};
use super::{CallEnd, Event, Reply, Simulation};
use crate::engine::Handle;
use crate::metrics::pool::PoolCounters;
use crate::metrics::DlqReason;

impl Simulation<'_> {
    /// The calling hop whose pool the call `call` goes through, if that hop has a pool.
    fn pool_hop(&self, call: Handle) -> Option<usize> {
        if !self.any_pool {
            return None;
        }
        let parent = self.calls.get(call).expect("live call").parent()?;
        let hop = self.attempts.get(parent).expect("a job is live while its calls are").hop as usize;
        self.spec.hops[hop].pool.is_some().then_some(hop)
    }

    /// Whether the call's attempts need a connection of a pool.
    pub(super) fn call_is_pooled(&self, call: Handle) -> bool {
        self.pool_hop(call).is_some()
    }

    fn pool_counters(&mut self, hop: usize) -> &mut PoolCounters {
        self.record.hops[hop].pool.as_deref_mut().expect("a pooled hop records its pool")
    }

    /// Takes a connection for the call's next attempt: true when one was free; otherwise the
    /// call waits (and is sent by [`Simulation::release_connection`]) or fails at once.
    pub(super) fn acquire_connection(&mut self, call: Handle) -> bool {
        let hop = self.pool_hop(call).expect("pooled");
        let spec = self.spec.hops[hop].pool.expect("pooled");
        match self.pools[hop].acquire(spec, call, self.now) {
            Acquire::Got => {
                let c = self.pool_counters(hop);
                c.acquired += 1;
                c.wait_us.record(0).expect("auto-resizing histograms accept any u64");
                true
            }
            Acquire::Wait { waiters, timeout_at } => {
                let c = self.pool_counters(hop);
                c.waiters_peak = c.waiters_peak.max(waiters);
                if let Some(at) = timeout_at {
                    self.queue.push(at, Event::PoolTimeout { hop: hop as u16 });
                }
                false
            }
            Acquire::Full => {
                self.pool_counters(hop).queue_full += 1;
                self.caller_sees(call, Reply::Failed);
                false
            }
        }
    }

    /// The caller stopped waiting for an attempt of `call`: if the call is pooled, its connection
    /// goes to the call waiting longest, whose attempt is sent now (a waiter whose deadline passed
    /// while it waited is dead-lettered and the next one served), or back to the pool.
    pub(super) fn release_connection(&mut self, call: Handle) {
        if let Some(hop) = self.pool_hop(call) {
            self.release_connection_of(hop);
        }
    }

    /// A connection of hop `hop`'s pool comes free (see [`Simulation::release_connection`]).
    pub(super) fn release_connection_of(&mut self, hop: usize) {
        let now = self.now;
        loop {
            let Some(release) = self.pools[hop].release(now) else {
                panic!(
                    "hop {hop}: a connection was released with none in use (seed {}, replication {})",
                    self.seed, self.replication
                )
            };
            let Release::To { call: next, waited } = release else { return };
            if now >= self.calls.get(next).expect("a waiting call is live").deadline_at {
                self.end_call(next, CallEnd::Dlq(DlqReason::Deadline));
                continue;
            }
            let c = self.pool_counters(hop);
            c.acquired += 1;
            c.wait_ns_sum += u128::from(waited);
            c.wait_us.record(waited / 1_000).expect("auto-resizing histograms accept any u64");
            self.send_attempt(next);
            return;
        }
    }

    /// A pooled call is cancelled with its caller's attempt (`sim/cancel.rs`): a call still
    /// waiting for a connection leaves the wait queue (its acquire timeout then finds another
    /// waiter, or none, at the front and does nothing); a call holding one (`holds`: an attempt
    /// of it, or its hedge, is still awaited) returns its pool's hop, whose connection the caller
    /// gives back ([`Simulation::release_connection_of`]) once every cancelled call is gone.
    pub(super) fn leave_pool(&mut self, call: Handle, holds: bool) -> Option<usize> {
        let hop = self.pool_hop(call)?;
        if holds {
            return Some(hop);
        }
        self.pools[hop].leave(call);
        None
    }

    /// At the end of a run with no call left, every connection must be back and no call waiting:
    /// a leak is a bug, reported loudly with the seed.
    pub(super) fn check_pools_drained(&self) {
        if self.calls_live() {
            return; // a call still waits (e.g. a lost reply without a timeout): it may hold one
        }
        for (hop, state) in self.pools.iter().enumerate() {
            assert!(
                state.in_use() == 0 && state.waiting() == 0,
                "hop {hop}: {} connection(s) still in use and {} call(s) waiting after every call ended (seed {}, replication {})",
                state.in_use(),
                state.waiting(),
                self.seed,
                self.replication
            );
        }
    }

    /// An acquire timeout of hop `hop`'s pool fired: its waiter, if still waiting, fails.
    pub(super) fn pool_timeout(&mut self, hop: usize) {
        let timeout = self.spec.hops[hop].pool.and_then(|p| p.acquire_timeout).expect("only pools with a timeout");
        let Some(call) = self.pools[hop].timed_out(timeout, self.now) else { return };
        self.pool_counters(hop).acquire_timeouts += 1;
        self.caller_sees(call, Reply::Failed);
    }
}
