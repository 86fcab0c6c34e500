//! Budget and breaker instances by scope, dense per client.
//!
//! A client-scoped budget or breaker has one state per client: with millions of clients a
//! `HashMap<ScopeKey, _>` costs a hash and a random probe per lookup and about twice the state in
//! memory (and four times while it grows), which made 8M clients run out of memory. Here the
//! states of a tenant's own policy live in a `Vec` indexed by client id (tenant- and global-scoped
//! keys use index 0); only the keys no tenant's clients own — a hop calling the next one is the
//! client `u32::MAX − hop` of its downstream policy — stay in a map. A state is made on first use
//! (`new_state()` does not depend on time, so filling the slots below a new index with fresh states
//! is the same as making each on first use).

use super::hop_queue::ScopeKey;
use crate::model::SimSpec;
use std::collections::HashMap;

/// The states of one kind (budgets or breakers), by scope key.
pub(super) struct ScopedStates<S> {
    /// Per tenant: the policy its clients call with, its client count, and their states.
    dense: Vec<(u16, u32, Vec<S>)>,
    /// Keys outside the dense range (downstream calls' pseudo-clients, other policies).
    sparse: HashMap<ScopeKey, S>,
}

impl<S> ScopedStates<S> {
    pub(super) fn new(spec: &SimSpec) -> ScopedStates<S> {
        let dense = spec.tenants.iter().map(|t| (t.policy as u16, t.clients, Vec::new())).collect();
        ScopedStates { dense, sparse: HashMap::new() }
    }

    /// Where `key`'s state lives in `dense` (tenant, client), if it is a dense key: a client of
    /// a tenant calling with the tenant's own policy (or index 0 for a wider scope).
    fn dense_slot(&self, key: ScopeKey) -> Option<(usize, usize)> {
        let (policy, tenant, client) = key;
        let (own, clients, _) = self.dense.get(tenant as usize)?;
        (*own == policy && client < *clients).then_some((tenant as usize, client as usize))
    }

    /// The state of `key`, made by `make` on first use.
    pub(super) fn entry(&mut self, key: ScopeKey, make: impl Fn() -> S) -> &mut S {
        let Some((tenant, i)) = self.dense_slot(key) else {
            return self.sparse.entry(key).or_insert_with(make);
        };
        let (_, clients, states) = &mut self.dense[tenant];
        if states.len() <= i {
            if i > 0 {
                // Client-scoped: room for every client at once, not twice that by doubling.
                let capacity = states.capacity();
                states.reserve_exact((*clients as usize).saturating_sub(states.len()));
                if states.capacity() != capacity {
                    // Read at random per retry: in huge pages (once, as the room is made).
                    crate::engine::pages::advise_huge_pages(states);
                }
            }
            states.resize_with(i + 1, &make);
        }
        &mut states[i]
    }

    /// Starts loading the state of `key` if it is a dense one already made (no effect on results).
    pub(super) fn prefetch(&self, key: ScopeKey) {
        if let Some(state) = self.dense_slot(key).and_then(|(tenant, i)| self.dense[tenant].2.get(i)) {
            crate::engine::prefetch::prefetch_read(state);
        }
    }

    /// States made so far (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.dense.iter().map(|d| d.2.len()).sum::<usize>() + self.sparse.len()
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    /// A herd of 3,000 clients with a client-scoped token bucket and breaker in front of a
    /// two-hop chain whose inner call has its own client-scoped budget: one dense state per client
    /// and kind, and one sparse state for the hop calling the next (its pseudo-client).
    #[test]
    fn client_scoped_states_are_one_per_client_and_the_hop_pseudo_client_is_sparse() {
        let source = r#"name = "scoped"
horizon = "30s"
[[tenant]]
name = "main"
clients = 3000
arrival = { kind = "herd", start = "0s", spread = "1s", requests_per_client = 1 }
policy = "client"
[policy.client]
jitter = "full"
max_attempts = 4
budget = { kind = "token_bucket", capacity = 3, per_request = 0.5, scope = "client" }
breaker = { threshold = 0.5, window = "10s", min_calls = 5, open_for = "5s", scope = "client" }
[policy.inner]
jitter = "full"
max_attempts = 2
budget = { kind = "token_bucket", capacity = 10, scope = "client" }
[[hop]]
name = "api"
workers = 8
service = { dist = "constant", mean = "1ms" }
downstream_policy = "inner"
[[hop]]
name = "db"
workers = 8
service = { dist = "constant", mean = "1ms" }
[[fault]]
hop = "db"
kind = "outage"
from = "0s"
to = "2s"
"#;
        let scenario = Scenario::from_source("scoped.toml", source, &[]).expect("valid");
        let mut sim = super::super::Simulation::new(&scenario.base, 11, 0);
        sim.run_to_end();
        let (dense, sparse) = (sim.budgets.dense[0].2.len(), sim.budgets.sparse.len());
        assert_eq!((dense, sparse), (3000, 1), "budget states: every client once, the api's call to db once (seed 11)");
        assert_eq!(sim.breakers.len(), 3000, "breaker states: one per client (seed 11)");
        let record = sim.finish();
        assert_eq!(record.tenants[0].requests, 3000);
    }
}
