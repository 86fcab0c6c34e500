//! A hop's waiting room.

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
#[derive(Clone)]
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

/// Facebook's CoDel (folly's `Codel::overloaded_explicit_now`, after Nichols and Jacobson), fed
/// the queueing delay of *every* attempt the hop starts, zero for one that found a free worker
/// (fbthrift's thread manager passes every task through it): the first sample after an interval
/// ends opens the next one, which is *overloaded* when the shortest delay seen during the last one
/// exceeded `target` (a standing queue, not a burst); while overloaded, attempts that waited more
/// than 2 × `target` are dropped at dequeue. As in folly, the sample that opens an interval is
/// never dropped, and the first interval opens at the second sample.
#[derive(Clone)]
struct Codel {
    interval_end: Nanos,
    min_delay: Nanos,
    overloaded: bool,
    /// folly's `codelResetDelay_`: the next sample restarts the interval's minimum.
    reset: bool,
}

impl Default for Codel {
    fn default() -> Self {
        Codel { interval_end: 0, min_delay: 0, overloaded: false, reset: true }
    }
}

impl Codel {
    /// One attempt's queueing `delay`: true to drop it.
    fn sample(&mut self, now: Nanos, delay: Nanos, target: Nanos, interval: Nanos) -> bool {
        if now > self.interval_end && !self.reset {
            self.reset = true;
            self.interval_end = now.saturating_add(interval);
            self.overloaded = self.min_delay > target;
        }
        if self.reset {
            self.reset = false;
            self.min_delay = delay;
            return false;
        }
        self.min_delay = self.min_delay.min(delay);
        self.overloaded && delay > 2 * target
    }

    /// The popped attempt's new `drop_at`: `now` to drop it, `Nanos::MAX` to serve it. It was
    /// queued at `slough_at − 2 × target`.
    fn judge(&mut self, now: Nanos, slough_at: Nanos, target: Nanos, interval: Nanos) -> Nanos {
        let delay = (now + 2 * target).saturating_sub(slough_at);
        if self.sample(now, delay, target, interval) {
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

    /// An attempt that found a free worker and is served without queueing: under `codel` its
    /// zero delay is a sample like any other (it is what shows the queue drained).
    pub(super) fn served_at_once(&mut self, now: Nanos) {
        if let Discipline::Codel { target, interval } = self.discipline {
            self.codel.sample(now, 0, target, interval);
        }
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
            Discipline::Fifo | Discipline::Codel { .. } | Discipline::DeadlineDrop => false,
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
        // folly: the first sample only sets the minimum (20); the second opens the first
        // interval (to 130), overloaded since 20 > target, and is kept as an opening sample.
        assert_eq!(q.pop(20).map(|e| e.drop_at), Some(Nanos::MAX));
        assert_eq!(q.pop(30).map(|e| e.drop_at), Some(Nanos::MAX), "an interval's first sample is kept");
        assert_eq!(q.pop(40).map(|e| e.drop_at), Some(40), "overloaded: waited 40 > 2 × target");
        // The next interval opens at the first sample after 130.
        assert_eq!(q.pop(150).map(|e| e.drop_at), Some(Nanos::MAX), "an interval's first sample is kept");
        assert_eq!(q.pop(151).map(|e| e.drop_at), Some(151));
    }

    #[test]
    fn codel_counts_an_attempt_served_at_once_as_a_zero_delay() {
        let (target, interval) = (5, 100);
        let mut q = HopQueue::new(false, 1, false, Discipline::Codel { target, interval });
        for i in 0..10 {
            q.push(0, 0, false, h(i), Nanos::MAX, 100);
        }
        q.pop(20);
        q.pop(30); // opens the interval to 130, overloaded
        q.served_at_once(60); // the queue drained once: the minimum is 0
        assert_eq!(q.pop(70).map(|e| e.drop_at), Some(70), "still overloaded until 130");
        assert_eq!(q.pop(150).map(|e| e.drop_at), Some(Nanos::MAX));
        assert_eq!(q.pop(160).map(|e| e.drop_at), Some(Nanos::MAX), "the last interval's minimum was 0");
    }

    #[test]
    fn deadline_drop_carries_the_callers_deadline() {
        let mut q = HopQueue::new(false, 1, false, Discipline::DeadlineDrop);
        q.push(0, 0, false, h(0), 42, 10);
        assert_eq!(q.pop(1).map(|e| e.drop_at), Some(42));
    }
}
