//! A hop's waiting room and the keys of budget and breaker instances.

use super::super::budget::Scope;
use crate::engine::{Handle, Nanos};
use crate::model::Discipline;
use std::collections::VecDeque;

/// One queued attempt and the instant from which dequeuing drops it instead of serving it
/// (`Nanos::MAX` unless the discipline is `codel` or `deadline_drop`).
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
        }
    }

    /// True when the queue has not been empty for the last `interval` (CoDel's and adaptive
    /// LIFO's congestion rule in "Fail at Scale").
    fn congested(&self, now: Nanos, interval: Nanos) -> bool {
        self.len > 0 && now - self.last_empty >= interval
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
        let lane =
            if self.fair { tenant as usize } else { 0 } + if self.priority && retry { self.class_lanes } else { 0 };
        if self.lanes[lane].len() >= limit as usize {
            return false;
        }
        let drop_at = match self.discipline {
            Discipline::Fifo | Discipline::Lifo | Discipline::AdaptiveLifo { .. } => Nanos::MAX,
            Discipline::DeadlineDrop => deadline,
            Discipline::Codel { target, interval } => {
                now.saturating_add(if self.congested(now, interval) { target } else { interval })
            }
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
                if let Some(q) = if lifo { lane.pop_back() } else { lane.pop_front() } {
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
