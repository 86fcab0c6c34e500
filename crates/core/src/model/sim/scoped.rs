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
//!
//! When a tenant's policy scopes both its budget and its breaker to the client, a client's two
//! states sit side by side in one 128-byte, line-aligned [`Paired`] slot ([`States`]): a retry
//! reads both, and with ten million clients each array is a page-table walk per access (the
//! prefetch waits for it), so one array instead of two halves the walks.

use crate::model::breaker::BreakerState;
use crate::model::budget::{BudgetState, Scope};
use crate::model::SimSpec;
use std::collections::HashMap;

/// Key of a budget or breaker instance: its policy, and the tenant and client its scope keeps
/// (zeroed beyond the scope); for a budget kept per server name (`grpc_throttle`, gRFC A6), the
/// hop called is `server` (0, the entry hop, for a tenant's clients).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct ScopeKey {
    pub(super) policy: u16,
    pub(super) tenant: u16,
    pub(super) client: u32,
    pub(super) server: u16,
}

impl ScopeKey {
    /// The instance `scope` gives a call of `client` of `tenant` under `policy`.
    pub(super) fn new(scope: Scope, policy: u16, tenant: u16, client: u32) -> ScopeKey {
        let (tenant, client) = match scope {
            Scope::Global => (0, 0),
            Scope::Tenant => (tenant, 0),
            Scope::Client => (tenant, client),
        };
        ScopeKey { policy, tenant, client, server: 0 }
    }

    /// The same instance, kept apart for each hop called.
    pub(super) fn at_server(self, hop: u16) -> ScopeKey {
        ScopeKey { server: hop, ..self }
    }
}

/// The budget and breaker states of every scope.
#[derive(Clone)]
pub(super) struct States {
    budgets: ScopedStates<BudgetState>,
    breakers: ScopedStates<BreakerState>,
    /// Per tenant whose policy scopes both to the client: a fresh pair, and each client's pair
    /// (`None` for the other tenants, whose states are in `budgets` and `breakers`).
    paired: Vec<Option<(Paired, Vec<Paired>)>>,
}

/// One client's budget and breaker states, in two whole cache lines.
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Paired {
    budget: BudgetState,
    breaker: BreakerState,
}

// Two lines, not three: a state that grows must be laid out again (and the memory estimate,
// `runner/memory.rs`, counts the two states' own sizes).
const _: () = assert!(std::mem::size_of::<Paired>() == 128);

// The accessors are `#[inline]`: every retry of a budgeted or breaker-guarded call reads its
// states through them, and as calls they cost the budgeted 1M herd 7% more instructions.
impl States {
    pub(super) fn new(spec: &SimSpec) -> States {
        let paired = spec
            .tenants
            .iter()
            .map(|t| {
                let policy = &spec.policies[t.policy];
                match (&policy.budget, &policy.breaker) {
                    (Some(budget), Some(breaker))
                        if budget.scope == Scope::Client && breaker.scope == Scope::Client =>
                    {
                        let fresh = Paired { budget: budget.kind.new_state(), breaker: breaker.new_state() };
                        Some((fresh, Vec::new()))
                    }
                    _ => None,
                }
            })
            .collect();
        States { budgets: ScopedStates::new(spec), breakers: ScopedStates::new(spec), paired }
    }

    /// Where `key`'s pair lives (tenant, client), if its tenant pairs its states.
    #[inline]
    fn paired_slot(&self, key: ScopeKey) -> Option<(usize, usize)> {
        let slot = self.budgets.dense_slot(key)?;
        self.paired[slot.0].is_some().then_some(slot)
    }

    /// The pair of client `i` of the paired tenant `tenant`, made on first use.
    #[inline]
    fn pair(&mut self, tenant: usize, i: usize) -> &mut Paired {
        let clients = self.budgets.dense[tenant].1;
        let (fresh, pairs) = self.paired[tenant].as_mut().expect("a paired tenant");
        slot(pairs, i, clients, || fresh.clone())
    }

    /// The budget state of `key`, made by `make` on first use.
    #[inline]
    pub(super) fn budget(&mut self, key: ScopeKey, make: impl Fn() -> BudgetState) -> &mut BudgetState {
        match self.paired_slot(key) {
            Some((tenant, i)) => &mut self.pair(tenant, i).budget,
            None => self.budgets.entry(key, make),
        }
    }

    /// The breaker state of `key`, made by `make` on first use.
    #[inline]
    pub(super) fn breaker(&mut self, key: ScopeKey, make: impl Fn() -> BreakerState) -> &mut BreakerState {
        match self.paired_slot(key) {
            Some((tenant, i)) => &mut self.pair(tenant, i).breaker,
            None => self.breakers.entry(key, make),
        }
    }

    /// Starts loading the states of the budget key `budget` and the breaker key `breaker` if
    /// they are dense ones already made (no effect on results).
    #[inline]
    pub(super) fn prefetch(&self, budget: Option<ScopeKey>, breaker: Option<ScopeKey>) {
        if let Some((tenant, i)) = budget.and_then(|key| self.paired_slot(key)) {
            if let Some(pair) = self.paired[tenant].as_ref().and_then(|(_, pairs)| pairs.get(i)) {
                crate::engine::prefetch::prefetch_read(pair);
            }
            return;
        }
        budget.into_iter().for_each(|key| self.budgets.prefetch(key));
        breaker.into_iter().for_each(|key| self.breakers.prefetch(key));
    }
}

/// Slot `i` of a tenant's dense states for `clients` clients, the slots up to it made by `make`.
fn slot<S>(states: &mut Vec<S>, i: usize, clients: u32, make: impl Fn() -> S) -> &mut S {
    if states.len() <= i {
        if i > 0 {
            // Client-scoped: room for every client at once, not twice that by doubling.
            let capacity = states.capacity();
            states.reserve_exact((clients as usize).saturating_sub(states.len()));
            if states.capacity() != capacity {
                // Read at random per retry: in huge pages (once, as the room is made).
                crate::engine::pages::advise_huge_pages(states);
            }
        }
        states.resize_with(i + 1, &make);
    }
    &mut states[i]
}

/// The states of one kind (budgets or breakers), by scope key.
#[derive(Clone)]
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
    /// a tenant calling the entry hop with the tenant's own policy (or index 0 for a wider scope).
    #[inline]
    fn dense_slot(&self, key: ScopeKey) -> Option<(usize, usize)> {
        let ScopeKey { policy, tenant, client, server } = key;
        let (own, clients, _) = self.dense.get(tenant as usize)?;
        (*own == policy && client < *clients && server == 0).then_some((tenant as usize, client as usize))
    }

    /// The state of `key`, made by `make` on first use.
    #[inline]
    pub(super) fn entry(&mut self, key: ScopeKey, make: impl Fn() -> S) -> &mut S {
        let Some((tenant, i)) = self.dense_slot(key) else {
            return self.sparse.entry(key).or_insert_with(make);
        };
        let (_, clients, states) = &mut self.dense[tenant];
        slot(states, i, *clients, make)
    }

    /// Starts loading the state of `key` if it is a dense one already made (no effect on results).
    #[inline]
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
    /// two-hop chain whose inner call has its own client-scoped budget: one pair of states per
    /// client, and one sparse state for the hop calling the next (its pseudo-client).
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
        let states = &sim.states;
        let pairs = states.paired[0].as_ref().map(|(_, pairs)| pairs.len());
        assert_eq!(pairs, Some(3000), "budget and breaker states: every client once, side by side (seed 11)");
        let (dense, sparse) = (states.budgets.dense[0].2.len(), states.budgets.sparse.len());
        assert_eq!((dense, sparse), (0, 1), "budget states apart: only the api's call to db (seed 11)");
        assert_eq!(states.breakers.len(), 0, "no breaker state apart from its client's budget (seed 11)");
        let record = sim.finish();
        assert_eq!(record.tenants[0].requests, 3000);

        // A breaker of the whole tenant: nothing is paired, the budget states are the tenant's
        // own dense array again (one per client) and the breaker one state in its slot 0.
        let tenant_breaker =
            source.replace(r#"open_for = "5s", scope = "client""#, r#"open_for = "5s", scope = "tenant""#);
        assert_ne!(tenant_breaker, source, "the breaker's scope was replaced");
        let scenario = Scenario::from_source("scoped.toml", &tenant_breaker, &[]).expect("valid");
        let mut sim = super::super::Simulation::new(&scenario.base, 11, 0);
        sim.run_to_end();
        let states = &sim.states;
        assert!(states.paired[0].is_none(), "a tenant-scoped breaker pairs nothing (seed 11)");
        let (dense, sparse) = (states.budgets.dense[0].2.len(), states.budgets.sparse.len());
        assert_eq!((dense, sparse), (3000, 1), "budget states: every client once, the api's call to db once (seed 11)");
        assert_eq!(states.breakers.dense[0].2.len(), 1, "breaker state: the tenant's one (seed 11)");
        assert_eq!(states.breakers.len(), 1, "breaker states: the tenant's only (seed 11)");
    }
}
