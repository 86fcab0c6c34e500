//! Hedged requests ("The Tail at Scale", Dean and Barroso 2013).
//!
//! A policy with `hedge = { after, max_share }` sends, for an attempt still unanswered `after`
//! it was sent, one more copy of it (a *hedge*) to the same hop. Both copies share the
//! attempt's timeout. The first success to come back wins: the call succeeds and the other copy
//! loses the race (its caller stops waiting; with `cancel_on_timeout` it is cancelled, otherwise
//! its work is wasted, cause `hedge`). A failed copy is ignored while the other is still awaited;
//! the call sees the outcome of the last copy. Hedges are attempts (amplification) but not
//! retries: they bypass retry budgets, breakers and throttles.
//!
//! The cap is a token bucket per (policy, called hop): each attempt sent (not a hedge) earns
//! `max_share` tokens (at most `HEDGE_TOKENS_MAX` saved), each hedge costs one, so at most
//! `max_share` of attempts (plus the ten saved) are hedged. The throttle (gRFC A6) is the
//! policy's `grpc_throttle` budget when it has one (one bucket for retries and hedges), else a
//! bucket per (policy, called hop); failed and timed-out attempts take a token, successes give
//! back `token_ratio`, and only with `charge_unanswered` does an attempt still unanswered at its
//! hedge delay take one too. `after = "pNN"` uses the NN-th percentile of the
//! latencies (the original attempt's send → the reply at the caller, whichever copy answered) of the
//! successful replies this (policy, hop) received
//! while its caller waited, recomputed every `HEDGE_QUANTILE_REFRESH` samples; no hedge is sent
//! before `HEDGE_WARMUP_SAMPLES` samples.
//!
//! The decisions (tokens, throttle arithmetic, quantile, race) are [`super::hedge_state`]'s;
//! this file applies them: it arms the `HedgeFire` event, sends the copy, counts it, and stops
//! waiting on the copies that lost.

use super::hedge_state::{throttle_at_delay, throttle_outcome, HedgeGo, Race};
use super::{Attempt, Event, Phase, Reply, Simulation};
use crate::engine::{Handle, Nanos};
use crate::model::{HedgeAfter, HedgeThrottle};

/// A hedge's draw key is its attempt's, mixed with this (its downstream calls draw apart).
const HEDGE_KEY: u64 = 0x4845_4447_4500_0000;

impl Simulation<'_> {
    /// A new attempt of `call` was sent: remember it, earn hedge tokens and arm its hedge.
    pub(super) fn track_attempt(&mut self, call: Handle, attempt: Handle, timeout_at: Nanos) {
        let attempts = &self.attempts;
        let copies = self.links.attempts.entry(call).or_default();
        copies.retain(|&h| attempts.get(h).is_some_and(|a| a.caller_waiting));
        copies.push(attempt);
        let c = self.calls.get(call).expect("live");
        let (policy, hop) = (c.policy, c.hop);
        let Some(spec) = &self.spec.policies[policy as usize].hedge else { return };
        if let Some(at) = self.hedging.get(policy, hop).arm(spec, self.now, timeout_at) {
            self.queue.push(at, Event::HedgeFire { attempt });
        }
    }

    /// The hedge delay of `attempt` passed: if its caller still waits and a token is left,
    /// send a copy.
    pub(super) fn on_hedge_fire(&mut self, handle: Handle) {
        let now = self.now;
        let Some(a) = self.attempts.get(handle).filter(|a| a.caller_waiting) else { return };
        let call = a.call;
        let c = self.calls.get(call).expect("an awaited attempt's call is live");
        let (policy, hop) = (c.policy, c.hop);
        let go = match self.spec.policies[policy as usize].hedge.and_then(|h| h.throttle) {
            Some(t) => throttle_at_delay(self.throttle_level(call, t), &t),
            None => HedgeGo::Send,
        };
        // The cap is asked only when the throttle lets the hedge go.
        let go = if go == HedgeGo::Send { self.hedging.get(policy, hop).take_token() } else { go };
        if go != HedgeGo::Send {
            return;
        }
        let a = self.attempts.get(handle).expect("checked above");
        let copy = Attempt {
            draw_key: super::mix64(a.draw_key ^ HEDGE_KEY),
            arrived_at: now,
            service_ns: 0,
            phase: Phase::Network,
            reply: Reply::Failed,
            occ_version: 0,
            holds_key: false,
            // `sent_at` stays the original's: a winning hedge's latency is the caller's wait.
            service_start: 0,
            lost_race: false,
            retained: false,
            ..a.clone()
        };
        let (call, hop, tenant, timeout_at) = (copy.call, copy.hop as usize, copy.tenant as usize, copy.deadline_at);
        let b = self.bucket();
        let counters = &mut self.record.hops[hop];
        counters.attempts += 1;
        counters.hedges += 1;
        self.record.hop_series[hop][b].attempts += 1;
        if hop == 0 {
            self.record.tenants[tenant].attempts += 1;
            self.record.tenant_series[tenant][b].attempts += 1;
        }
        let h = self.insert_attempt(copy);
        self.links.attempts.entry(call).or_default().push(h);
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(now.saturating_add(net), Event::AttemptArrive { attempt: h });
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Event::AttemptTimeout { attempt: h });
        }
    }

    /// The level of the hedge throttle `t` of `call`'s policy: the policy's `grpc_throttle`
    /// budget (the instance of the call's scope) when shared, else the (policy, hop) bucket.
    fn throttle_level(&mut self, call: Handle, t: HedgeThrottle) -> &mut f64 {
        let c = self.calls.get(call).expect("a waiting caller's call is live");
        let (policy, hop) = (c.policy, c.hop);
        if t.shared {
            let (Some(key), _) = self.scope_keys(c) else { unreachable!("a shared throttle is the policy's budget") };
            let kind = &self.spec.policies[policy as usize].budget.as_ref().expect("a shared throttle's budget").kind;
            return &mut self.states.budget(key, || kind.new_state()).tokens;
        }
        self.hedging.get(policy, hop).throttle_level(&t)
    }

    /// `reply` (or a timeout) reached the caller of `call` on one attempt: feed the hedge
    /// throttle (gRFC A6: a failure or timeout takes a token, a success gives back
    /// `token_ratio`; a non-retryable rejection neither). `caller_sees` says the call sees this
    /// outcome (no other copy is awaited): a shared bucket is then fed by the budget's own hooks,
    /// so only the outcomes of copies the call does not see are counted here.
    pub(super) fn hedge_throttle_outcome(&mut self, call: Handle, reply: Reply, caller_sees: bool) {
        let policy = self.calls.get(call).expect("a waiting caller's call is live").policy;
        let Some(t) = self.spec.policies[policy as usize].hedge.and_then(|h| h.throttle) else { return };
        if t.shared && caller_sees {
            return;
        }
        throttle_outcome(self.throttle_level(call, t), &t, reply);
    }

    /// A reply reached a caller still waiting on `a` (already removed): feed the quantile, and
    /// settle the race with its other copy. True when the call keeps waiting (this copy failed
    /// and the other is still out).
    pub(super) fn hedge_reply(&mut self, handle: Handle, a: &Attempt) -> bool {
        let call = self.calls.get(a.call).expect("a waiting caller's call is live");
        let (policy, hop) = (call.policy, call.hop);
        let race = Race::settle(self.copy_awaited(a.call, handle), a.reply == Reply::Ok);
        self.hedge_throttle_outcome(a.call, a.reply, race.caller_sees());
        let spec = &self.spec.policies[policy as usize];
        if let (Some(hedge), Reply::Ok) = (spec.hedge, a.reply) {
            if let HedgeAfter::Quantile(q) = hedge.after {
                self.hedging.get(policy, hop).record_success(self.now - a.sent_at, q);
            }
        }
        match race {
            Race::Last => return false,
            Race::KeepWaiting => return true,
            Race::Won => {}
        }
        let cancel = spec.cancel_on_timeout;
        let losers: Vec<Handle> = self.links.attempts.get(&a.call).map_or_else(Vec::new, |v| v.clone());
        for h in losers.into_iter().filter(|&h| h != handle) {
            let Some(l) = self.attempts.get_mut(h).filter(|l| l.caller_waiting) else { continue };
            l.lost_race = true;
            let l = self.stop_waiting(h).expect("live");
            if cancel {
                self.send_cancel(h);
            } else if l.phase == Phase::Done {
                self.remove_attempt(h);
            }
        }
        false
    }
}
