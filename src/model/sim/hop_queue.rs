//! A hop's waiting room and the keys of budget and breaker instances.

use super::super::budget::Scope;
use crate::engine::Handle;
use std::collections::VecDeque;

/// A hop's waiting room: one FIFO, or per-tenant FIFOs served round-robin (`fair`).
#[derive(Default)]
pub(super) struct HopQueue {
    per_tenant: Vec<VecDeque<Handle>>,
    fair: bool,
    next: usize,
    len: usize,
}

impl HopQueue {
    pub(super) fn new(fair: bool, tenants: usize) -> Self {
        HopQueue { per_tenant: vec![VecDeque::new(); if fair { tenants } else { 1 }], fair, next: 0, len: 0 }
    }

    /// Queues `h` unless its queue (the tenant's, when fair) already holds `limit`.
    pub(super) fn push(&mut self, tenant: u16, h: Handle, limit: u32) -> bool {
        let q = &mut self.per_tenant[if self.fair { tenant as usize } else { 0 }];
        if q.len() >= limit as usize {
            return false;
        }
        q.push_back(h);
        self.len += 1;
        true
    }

    pub(super) fn pop(&mut self) -> Option<Handle> {
        let n = self.per_tenant.len();
        for i in 0..n {
            let idx = (self.next + i) % n;
            if let Some(h) = self.per_tenant[idx].pop_front() {
                self.next = (idx + 1) % n;
                self.len -= 1;
                return Some(h);
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
