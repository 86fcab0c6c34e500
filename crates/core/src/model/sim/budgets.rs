//! The simulation's side of retry budgets, client-side throttles and circuit breakers: which
//! instance a call uses (by scope) and when each is consulted.

use super::scoped::ScopeKey;
use super::{Call, Simulation};
use crate::engine::Handle;
use crate::model::budget::FailureKind;
use crate::model::SimSpec;
use rand::RngExt;

/// The budget and breaker instances of a call's policy, keyed by their scopes.
pub(super) fn scope_keys(spec: &SimSpec, call: &Call) -> (Option<ScopeKey>, Option<ScopeKey>) {
    scope_keys_of(spec, call.policy, call.tenant, call.client, call.hop)
}

/// The budget and breaker instances a call of `client` of `tenant` under `policy` to `hop` uses:
/// a budget kept per server name (`grpc_throttle`) is one instance per hop called.
pub(super) fn scope_keys_of(
    spec: &SimSpec,
    policy: u16,
    tenant: u16,
    client: u32,
    hop: u16,
) -> (Option<ScopeKey>, Option<ScopeKey>) {
    let p = &spec.policies[policy as usize];
    let key = |scope| ScopeKey::new(scope, policy, tenant, client);
    let budget =
        p.budget.as_ref().map(|b| if b.kind.per_server() { key(b.scope).at_server(hop) } else { key(b.scope) });
    (budget, p.breaker.as_ref().map(|b| key(b.scope)))
}

impl Simulation<'_> {
    /// [`scope_keys`] of `call` under this run's spec.
    pub(super) fn scope_keys(&self, call: &Call) -> (Option<ScopeKey>, Option<ScopeKey>) {
        scope_keys(self.spec, call)
    }

    pub(super) fn budget_on_request(&mut self, call_handle: Handle) {
        let call = self.calls.get(call_handle).expect("live");
        let (Some(key), _) = self.scope_keys(call) else { return };
        let kind = &self.spec.policies[call.policy as usize].budget.as_ref().expect("keyed").kind;
        let state = self.states.budget(key, || kind.new_state());
        kind.on_request(state, self.now);
    }

    /// Breaker open (or half-open without probes left), or adaptive throttling's coin says no.
    pub(super) fn rejected_locally(&mut self, call_handle: Handle) -> bool {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec)) = (breaker_key, policy.breaker.as_ref().filter(|b| !b.retries_only)) {
            let state = self.states.breaker(key, || spec.new_state());
            if !spec.allow(state, now) {
                return true;
            }
        }
        if let (Some(key), Some(spec)) = (budget_key, policy.budget.as_ref()) {
            let state = self.states.budget(key, || spec.kind.new_state());
            let p = spec.kind.local_reject_probability(state, now);
            if p > 0.0 && self.rngs.throttle[call.hop as usize].random::<f64>() < p {
                return true;
            }
        }
        false
    }

    /// The call's attempt failed with `failure` (`sent` unless it failed locally): the breaker
    /// records it, and the budget is told (gRPC's throttle charges it: `BudgetKind::on_failure`).
    pub(super) fn budget_on_failure(&mut self, call_handle: Handle, sent: bool, failure: FailureKind) {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec), true) = (breaker_key, policy.breaker.as_ref(), sent) {
            let state = self.states.breaker(key, || spec.new_state());
            spec.record(state, now, false);
        }
        if let (Some(key), Some(spec)) = (budget_key, policy.budget.as_ref()) {
            let state = self.states.budget(key, || spec.kind.new_state());
            spec.kind.on_failure(state, failure, policy.retry_on.allows(failure));
        }
    }

    pub(super) fn budget_allows_retry(&mut self, call_handle: Handle, failure: FailureKind) -> bool {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(breaker)) = (breaker_key, policy.breaker.as_ref().filter(|b| b.retries_only)) {
            let state = self.states.breaker(key, || breaker.new_state());
            if !breaker.allow(state, now) {
                return false;
            }
        }
        let Some(key) = budget_key else { return true };
        let tenant = call.tenant as usize;
        let spec = policy.budget.as_ref().expect("keyed");
        let settled = call.paid.is_some() && spec.kind.holds_retries();
        let state = self.states.budget(key, || spec.kind.new_state());
        if settled {
            // Envoy frees a retry's slot when its outcome is known, before the next decision.
            spec.kind.on_retry_settled(state);
        }
        let paid = spec.kind.try_retry(state, now, failure);
        let tokens = state.tokens;
        self.record_budget_decision(tenant, tokens, paid.is_some());
        let call = self.calls.get_mut(call_handle).expect("live");
        if paid.is_some() {
            call.paid = Some(failure);
        } else if settled {
            call.paid = None;
        }
        paid.is_some()
    }

    /// The requeues a new try of `call` may make: Finagle's `ceil(0.2 × balance)` of its
    /// budget now (a policy with `requeue` has a `finagle` budget: validated).
    pub(super) fn requeue_allowance(&mut self, call_handle: Handle) -> u16 {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (Some(key), _) = self.scope_keys(call) else { return 0 };
        let spec = self.spec.policies[call.policy as usize].budget.as_ref().expect("keyed");
        let state = self.states.budget(key, || spec.kind.new_state());
        let balance = spec.kind.balance(state, now).unwrap_or(0.0);
        // Below u16::MAX (the unset mark): 65,534 requeues in one try are beyond any real budget.
        (super::REQUEUES_PER_BALANCE * balance).ceil().min(f64::from(super::REQUEUES_UNSET - 1)) as u16
    }

    /// `call` ended or was cancelled (it is out of the slab): a concurrent-retries budget stops
    /// counting it and frees the retry slot it still held.
    pub(super) fn budget_on_call_end(&mut self, call: &Call) {
        let budget = self.spec.policies[call.policy as usize].budget.as_ref();
        let Some(budget) = budget.filter(|b| b.kind.holds_retries()) else { return };
        let (Some(key), _) = scope_keys(self.spec, call) else { return };
        let state = self.states.budget(key, || budget.kind.new_state());
        budget.kind.on_call_end(state, call.paid.is_some());
    }

    /// A reply that is not a failure: a success feeds the budget; both count as healthy calls
    /// for the breaker (a 4xx is the caller's fault, not the server's).
    pub(super) fn budget_on_success(&mut self, call_handle: Handle, succeeded: bool) {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let paid_for = call.paid;
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec)) = (breaker_key, policy.breaker.as_ref()) {
            let state = self.states.breaker(key, || spec.new_state());
            spec.record(state, now, true);
        }
        if let (Some(key), Some(spec), true) = (budget_key, policy.budget.as_ref(), succeeded) {
            let state = self.states.budget(key, || spec.kind.new_state());
            spec.kind.on_success(state, now, paid_for.map(|f| spec.kind.cost_of(f)));
        }
    }

    /// The budget series of `timeseries.csv`: one retry decision of tenant `tenant`'s budget,
    /// with the tokens left after it.
    fn record_budget_decision(&mut self, tenant: usize, tokens: f64, allowed: bool) {
        let b = self.bucket();
        let tb = &mut self.record.tenant_series[tenant][b];
        tb.budget_decisions += 1;
        tb.budget_denied += u32::from(!allowed);
        tb.budget_tokens_sum += tokens;
    }
}
