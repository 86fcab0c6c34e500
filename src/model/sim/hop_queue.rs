//! A hop's waiting room and the keys of budget and breaker instances.

use super::super::budget::Scope;
use crate::engine::{Handle, Nanos};
use crate::model::Discipline;
use std::collections::VecDeque;

/// One queued attempt and the instant from which dequeuing drops it instead of serving it
/// (`Nanos::MAX` unless the discipline is `deadline_drop`, where it is the caller's deadline, or
/// `codel`, where it is the arrival plus 2 × target while queued and [`Codel::judge`] decides).
#[derive(Clone, Copy)]
pub(super) struct Queued {
    pub handle: Handle,
    pub drop_at: Nanos,
}

/// A hop's waiting room: lanes of one FIFO, or per-tenant lanes served round-robin (`fair`);
/// with retry priority, a second set of lanes for retries served only when the first is empty.
/// The discipline picks the end a lane is served from and when a queued attempt expires.
pub(super) struct HopQueue {
    lanes: Vec<VecDeque<Queued>>,
    fair: bool,
    /// Lanes per priority class (tenants when fair, else 1).
    class_lanes: usize,
    priority: bool,
    discipline: Discipline,
    /// Round-robin position within each class.
    next: [usize; 2],
    len: usize,
    /// When the queue was last empty (now, while it is).
    last_empty: Nanos,
    codel: Codel,
}

/// Facebook's CoDel (folly's `Codel`, after Nichols and Jacobson): every `interval`, the hop is
/// *overloaded* for the next interval when the shortest queueing delay seen during the last one
/// exceeded `target` (a standing queue, not a burst); while overloaded, attempts that waited more
/// than 2 × `target` are dropped at dequeue.
#[derive(Default)]
struct Codel {
    interval_end: Nanos,
    min_delay: Nanos,
    overloaded: bool,
}

impl Codel {
    /// The popped attempt's new `drop_at`: `now` to drop it, `Nanos::MAX` to serve it. It was
    /// queued at `slough_at − 2 × target`.
    fn judge(&mut self, now: Nanos, slough_at: Nanos, target: Nanos, interval: Nanos) -> Nanos {
        let delay = (now + 2 * target).saturating_sub(slough_at);
        if now > self.interval_end {
            self.interval_end = now + interval;
            self.overloaded = self.min_delay > target;
            // A new interval starts with this sample; it is never dropped.
            self.min_delay = delay;
            return Nanos::MAX;
        }
        self.min_delay = self.min_delay.min(delay);
        if self.overloaded && delay > 2 * target {
            now
        } else {
            Nanos::MAX
        }
    }
}

impl Default for HopQueue {
    fn default() -> Self {
        HopQueue::new(false, 1, false, Discipline::Fifo)
    }
}

impl HopQueue {
    pub(super) fn new(fair: bool, tenants: usize, priority: bool, discipline: Discipline) -> Self {
        let class_lanes = if fair { tenants } else { 1 };
        let classes = if priority { 2 } else { 1 };
        HopQueue {
            lanes: vec![VecDeque::new(); class_lanes * classes],
            fair,
            class_lanes,
            priority,
            discipline,
            next: [0; 2],
            len: 0,
            last_empty: 0,
            codel: Codel::default(),
        }
    }

    /// True when the queue has not been empty for the last `interval` (CoDel's and adaptive
    /// LIFO's congestion rule in "Fail at Scale").
    fn congested(&self, now: Nanos, interval: Nanos) -> bool {
        self.len > 0 && now - self.last_empty >= interval
    }

    fn lane_of(&self, tenant: u16, retry: bool) -> usize {
        let lane = if self.fair { tenant as usize } else { 0 };
        lane + if self.priority && retry { self.class_lanes } else { 0 }
    }

    /// Queues `h` unless its lane (the tenant's, when fair) already holds `limit`. `deadline` is
    /// when the attempt's caller gives up (dropped at dequeue after it under `deadline_drop`).
    pub(super) fn push(
        &mut self,
        now: Nanos,
        tenant: u16,
        retry: bool,
        h: Handle,
        deadline: Nanos,
        limit: u32,
    ) -> bool {
        let lane = self.lane_of(tenant, retry);
        if self.lanes[lane].len() >= limit as usize {
            return false;
        }
        let drop_at = match self.discipline {
            Discipline::Fifo | Discipline::Lifo | Discipline::AdaptiveLifo { .. } => Nanos::MAX,
            Discipline::DeadlineDrop => deadline,
            Discipline::Codel { target, .. } => now.saturating_add(2 * target),
        };
        if self.len == 0 {
            self.last_empty = now;
        }
        self.lanes[lane].push_back(Queued { handle: h, drop_at });
        self.len += 1;
        true
    }

    /// The next attempt to serve or drop (the caller drops it when `drop_at <= now`).
    pub(super) fn pop(&mut self, now: Nanos) -> Option<Queued> {
        if self.len == 0 {
            return None;
        }
        let lifo = match self.discipline {
            Discipline::Lifo => true,
            Discipline::AdaptiveLifo { interval } => self.congested(now, interval),
            _ => false,
        };
        let n = self.class_lanes;
        for class in 0..self.lanes.len() / n {
            for i in 0..n {
                let idx = (self.next[class] + i) % n;
                let lane = &mut self.lanes[class * n + idx];
                if let Some(mut q) = if lifo { lane.pop_back() } else { lane.pop_front() } {
                    if let Discipline::Codel { target, interval } = self.discipline {
                        q.drop_at = self.codel.judge(now, q.drop_at, target, interval);
                    }
                    self.next[class] = (idx + 1) % n;
                    self.len -= 1;
                    if self.len == 0 {
                        self.last_empty = now;
                    }
                    return Some(q);
                }
            }
        }
        None
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Takes `h` out of the queue (a cancelled attempt), searching its lane from the oldest
    /// entry: cancelled attempts are mostly the oldest, and with cancellation on the queue holds
    /// only attempts whose caller still waits. False when `h` is not queued.
    pub(super) fn remove(&mut self, now: Nanos, tenant: u16, retry: bool, h: Handle) -> bool {
        let lane = self.lane_of(tenant, retry);
        let Some(at) = self.lanes[lane].iter().position(|q| q.handle == h) else { return false };
        self.lanes[lane].remove(at);
        self.len -= 1;
        if self.len == 0 {
            self.last_empty = now;
        }
        true
    }
}

/// Key of a budget or breaker instance: (policy, tenant, client), zeroed beyond the scope.
pub(super) type ScopeKey = (u16, u16, u32);

pub(super) fn scope_key(scope: Scope, policy: u16, tenant: u16, client: u32) -> ScopeKey {
    match scope {
        Scope::Global => (policy, 0, 0),
        Scope::Tenant => (policy, tenant, 0),
        Scope::Client => (policy, tenant, client),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(index: u32) -> Handle {
        Handle { index, generation: 0 }
    }

    fn drain(q: &mut HopQueue, now: Nanos) -> Vec<u32> {
        std::iter::from_fn(|| q.pop(now)).map(|e| e.handle.index).collect()
    }

    #[test]
    fn fifo_lifo_and_priority_orders() {
        let mut fifo = HopQueue::new(false, 1, false, Discipline::Fifo);
        let mut lifo = HopQueue::new(false, 1, false, Discipline::Lifo);
        let mut prio = HopQueue::new(false, 1, true, Discipline::Fifo);
        for i in 0..4 {
            let retry = i % 2 == 0;
            for q in [&mut fifo, &mut lifo, &mut prio] {
                assert!(q.push(0, 0, retry, h(i), Nanos::MAX, 10));
            }
        }
        assert_eq!(drain(&mut fifo, 0), [0, 1, 2, 3]);
        assert_eq!(drain(&mut lifo, 0), [3, 2, 1, 0]);
        assert_eq!(drain(&mut prio, 0), [1, 3, 0, 2], "first attempts (odd) before retries");
    }

    #[test]
    fn adaptive_lifo_turns_lifo_once_the_queue_has_not_been_empty_for_the_interval() {
        let mut q = HopQueue::new(false, 1, false, Discipline::AdaptiveLifo { interval: 100 });
        for i in 0..4 {
            q.push(10, 0, false, h(i), Nanos::MAX, 10);
        }
        assert_eq!(q.pop(50).map(|e| e.handle.index), Some(0), "calm: FIFO");
        assert_eq!(q.pop(110).map(|e| e.handle.index), Some(3), "not empty since 10: LIFO");
    }

    #[test]
    fn codel_drops_only_after_an_interval_whose_shortest_delay_exceeded_the_target() {
        let (target, interval) = (5, 100);
        let mut q = HopQueue::new(false, 1, false, Discipline::Codel { target, interval });
        for i in 0..10 {
            q.push(0, 0, false, h(i), Nanos::MAX, 100);
        }
        // First interval: not overloaded yet, every delay (≥ 20) exceeds the target.
        for t in [20, 30, 40] {
            assert_eq!(q.pop(t).map(|e| e.drop_at), Some(Nanos::MAX));
        }
        // Next interval: overloaded, delays > 2 × target are dropped (drop_at = now).
        assert_eq!(q.pop(150).map(|e| e.drop_at), Some(Nanos::MAX), "an interval's first sample is kept");
        assert_eq!(q.pop(151).map(|e| e.drop_at), Some(151));
    }

    #[test]
    fn deadline_drop_carries_the_callers_deadline() {
        let mut q = HopQueue::new(false, 1, false, Discipline::DeadlineDrop);
        q.push(0, 0, false, h(0), 42, 10);
        assert_eq!(q.pop(1).map(|e| e.drop_at), Some(42));
    }
}
