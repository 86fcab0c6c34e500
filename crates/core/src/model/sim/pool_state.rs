//! A connection pool's state and its decisions: how many connections are held, and the calls
//! waiting for one in FIFO order with the instant each started waiting. The simulation applies
//! the decisions (`sim/pool.rs`): counters, events, sending or failing the attempt.

use crate::engine::{Handle, Nanos};
use crate::model::graph::PoolSpec;
use std::collections::VecDeque;

/// A hop's pool at run time.
#[derive(Clone, Default)]
pub(super) struct PoolState {
    /// Connections held by attempts.
    in_use: u32,
    /// Calls waiting for a connection, with the time they started waiting (FIFO).
    waiting: VecDeque<(Handle, Nanos)>,
}

/// The answer to a call asking for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Acquire {
    /// A connection was free; the call holds it now.
    Got,
    /// None was free: the call waits at the back of the queue, now `waiters` long, until a
    /// connection comes free or, with an acquire timeout, until `timeout_at`.
    Wait { waiters: u32, timeout_at: Option<Nanos> },
    /// None was free and `queue_limit` calls already wait: the call is refused.
    Full,
}

/// What becomes of a connection given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Release {
    /// It goes to `call`, the one waiting longest (for `waited`), taken off the queue; the
    /// connection stays in use. If that call cannot use it (its deadline passed while it
    /// waited), the caller gives the same connection back again.
    To { call: Handle, waited: Nanos },
    /// Nobody waits: it is back in the pool.
    Freed,
}

impl PoolState {
    /// A call asks for a connection at `now`.
    #[inline]
    pub(super) fn acquire(&mut self, spec: PoolSpec, call: Handle, now: Nanos) -> Acquire {
        if self.in_use < spec.size {
            self.in_use += 1;
            return Acquire::Got;
        }
        if self.waiting.len() >= spec.queue_limit as usize {
            return Acquire::Full;
        }
        self.waiting.push_back((call, now));
        Acquire::Wait {
            waiters: self.waiting.len() as u32,
            timeout_at: spec.acquire_timeout.map(|timeout| now.saturating_add(timeout)),
        }
    }

    /// A connection is given back at `now`; `None` when none was in use (a bug of the caller).
    #[inline]
    pub(super) fn release(&mut self, now: Nanos) -> Option<Release> {
        if let Some((call, since)) = self.waiting.pop_front() {
            return Some(Release::To { call, waited: now - since });
        }
        self.in_use = self.in_use.checked_sub(1)?;
        Some(Release::Freed)
    }

    /// An acquire timeout of `timeout` fired at `now`: the call that waited that long, taken off
    /// the queue. Every waiter has the same timeout and the queue is FIFO, so the one it belongs
    /// to, if still waiting, is at the front; a front waiter that came later (the timeout's own
    /// waiter got a connection or left) is left waiting.
    #[inline]
    pub(super) fn timed_out(&mut self, timeout: Nanos, now: Nanos) -> Option<Handle> {
        let &(call, since) = self.waiting.front()?;
        if since.saturating_add(timeout) > now {
            return None;
        }
        self.waiting.pop_front();
        Some(call)
    }

    /// `call` stops waiting (it was cancelled); nothing happens when it does not wait.
    pub(super) fn leave(&mut self, call: Handle) {
        if let Some(i) = self.waiting.iter().position(|&(c, _)| c == call) {
            self.waiting.remove(i);
        }
    }

    /// Connections held.
    pub(super) fn in_use(&self) -> u32 {
        self.in_use
    }

    /// Calls waiting.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(index: u32) -> Handle {
        Handle { index, generation: 0 }
    }

    fn spec(size: u32, queue_limit: u32, acquire_timeout: Option<Nanos>) -> PoolSpec {
        PoolSpec { size, acquire_timeout, queue_limit }
    }

    #[test]
    fn calls_get_free_connections_then_wait_then_are_refused_by_a_full_queue() {
        let (mut pool, s) = (PoolState::default(), spec(2, 2, Some(50)));
        assert_eq!(pool.acquire(s, h(0), 0), Acquire::Got);
        assert_eq!(pool.acquire(s, h(1), 1), Acquire::Got);
        assert_eq!(pool.acquire(s, h(2), 2), Acquire::Wait { waiters: 1, timeout_at: Some(52) });
        assert_eq!(pool.acquire(s, h(3), 3), Acquire::Wait { waiters: 2, timeout_at: Some(53) });
        assert_eq!(pool.acquire(s, h(4), 4), Acquire::Full, "two wait already: queue_limit 2");
        assert_eq!((pool.in_use(), pool.waiting()), (2, 2), "a refused call neither holds nor waits");
    }

    #[test]
    fn without_an_acquire_timeout_a_waiter_has_no_deadline_and_a_zero_queue_refuses_at_once() {
        let mut pool = PoolState::default();
        assert_eq!(pool.acquire(spec(1, 1, None), h(0), 0), Acquire::Got);
        assert_eq!(pool.acquire(spec(1, 1, None), h(1), 7), Acquire::Wait { waiters: 1, timeout_at: None });
        let mut pool = PoolState::default();
        assert_eq!(pool.acquire(spec(1, 0, None), h(0), 0), Acquire::Got);
        assert_eq!(pool.acquire(spec(1, 0, None), h(1), 0), Acquire::Full);
    }

    #[test]
    fn a_released_connection_goes_to_the_longest_waiter_first() {
        let (mut pool, s) = (PoolState::default(), spec(1, 10, None));
        pool.acquire(s, h(0), 0);
        for (i, at) in [(1, 10), (2, 20), (3, 30)] {
            pool.acquire(s, h(i), at);
        }
        assert_eq!(pool.release(100), Some(Release::To { call: h(1), waited: 90 }));
        assert_eq!(pool.release(100), Some(Release::To { call: h(2), waited: 80 }));
        assert_eq!(pool.release(130), Some(Release::To { call: h(3), waited: 100 }));
        assert_eq!(pool.in_use(), 1, "a handed-on connection stays in use");
        assert_eq!(pool.release(140), Some(Release::Freed));
        assert_eq!((pool.in_use(), pool.waiting()), (0, 0));
        assert_eq!(pool.release(150), None, "none in use: nothing to give back");
        assert_eq!(pool.acquire(s, h(4), 160), Acquire::Got, "a freed connection is taken again");
    }

    #[test]
    fn an_acquire_timeout_takes_only_a_front_waiter_whose_time_has_come() {
        let (mut pool, s) = (PoolState::default(), spec(1, 10, Some(50)));
        pool.acquire(s, h(0), 0);
        pool.acquire(s, h(1), 10); // times out at 60
        pool.acquire(s, h(2), 20); // times out at 70
        assert_eq!(pool.timed_out(50, 59), None, "not yet");
        assert_eq!(pool.timed_out(50, 60), Some(h(1)));
        assert_eq!(pool.timed_out(50, 60), None, "the next waiter's time has not come");
        // h(2) gets the connection before its timeout: the timeout then finds nobody.
        assert_eq!(pool.release(65), Some(Release::To { call: h(2), waited: 45 }));
        assert_eq!(pool.timed_out(50, 70), None);
        // A later waiter at the front is not taken by an earlier waiter's timeout.
        pool.acquire(s, h(3), 69);
        assert_eq!(pool.timed_out(50, 70), None);
        assert_eq!(pool.waiting(), 1);
    }

    #[test]
    fn a_cancelled_waiter_leaves_the_queue_and_the_order_of_the_others_holds() {
        let (mut pool, s) = (PoolState::default(), spec(1, 10, None));
        pool.acquire(s, h(0), 0);
        for i in 1..=3 {
            pool.acquire(s, h(i), u64::from(i));
        }
        pool.leave(h(2));
        pool.leave(h(9)); // not waiting: nothing happens
        assert_eq!(pool.waiting(), 2);
        assert_eq!(pool.release(10), Some(Release::To { call: h(1), waited: 9 }));
        assert_eq!(pool.release(10), Some(Release::To { call: h(3), waited: 7 }));
        assert_eq!(pool.release(10), Some(Release::Freed));
    }
}
