//! Running a call's retries ahead of the clock while a fault refuses them.
//!
//! During an outage the herd's attempts are refused at the instant they arrive, and each refusal
//! schedules the next retry: most of the 1M-client herd's attempts did nothing but go through
//! the event queue and come back refused. When nothing anyone else does between now and the
//! retry can change what that retry meets, the retry is simulated at once, at its own time, with
//! the same steps and counters as its event would run (`Simulation::start_attempt` with the
//! clock set to the retry's time), and the next one after it, until a retry lands where it may
//! meet something else: that one is queued as before. It is event fusion across time for one
//! call, the way ARCHITECTURE.md's "Same-instant fusion" fuses within an instant. A client's
//! first attempt that the same rule lets through (at its own instant) takes the same path.
//!
//! What makes a retry at `at` safe to run now (all of it is checked, per retry):
//! - **its answer is a function of time alone**: one outage or throttle fault on the hop covers
//!   every instant from now to `at`, and no hang or error-rate fault (an answer drawn from the
//!   fault stream in arrival order, or an attempt that stays) touches that span. So every attempt
//!   anybody sends to the hop meanwhile is refused at the instant it arrives, and the retry's
//!   answer is the one the same fault scan gives at `at`;
//! - **the hop is empty now** (`in_flight == 0`): with the refusal throughout, it stays empty
//!   until `at`, so the in-flight level the retry records (`in_flight_max`) is the one it would
//!   record in order. No network delay (`answers_in_place`), one replica (no balancer state), no
//!   autoscaling, no cache;
//! - **it touches no state it shares**: the call is a client's (a hop's call ends into its
//!   parent's job), its policy has no budget and no breaker (shared or per-client token state,
//!   a local-rejection draw), and the scenario has no connection pool, no health-check probes
//!   (they ask whether calls are live) and no autoscaling. A request that ends early releases its
//!   side-effect history early (`sim/history.rs`), which only frees memory: nothing commits for
//!   a refused attempt, and a live orphaned attempt of the request keeps its own reference;
//! - **it would be simulated at all**: `at` is within the drain limit.
//!
//! Every counter such a retry writes is a sum or a maximum per time bucket, so writing it early
//! changes nothing; the two orders the run did depend on were made order-free for it: the end of
//! the last request (`completion_time_ns`, a maximum) and the retry-delay samples (the ones of the
//! lowest request ids, `DelaySamples`). The retry's jitter draw is keyed by (request, retry), not
//! sequential. What does change is the order in which the queue sees a chain's final retry (or a
//! client's next request) against other events due at the very same nanosecond, the FIFO tie
//! order; a test runs every bundled scenario both ways and compares every output. `max_events`
//! counts queued events only, so a run it cuts is cut at a different point.

use super::{Call, CallEnd, Reply, Simulation, NO_PARENT};
use crate::engine::{Handle, Nanos};
use crate::model::fault::FaultKind;
use crate::model::spec::SimSpec;

/// Which calls may run their retries ahead, and the chain being run.
#[derive(Clone)]
pub(super) struct RunAhead {
    /// Off for the comparison runs of the tests and benches ([`Simulation::without_run_ahead`]).
    pub(super) enabled: bool,
    /// Per hop: answers in place, one replica, no autoscaling, no cache.
    hops: Vec<bool>,
    /// Per policy: no budget, no breaker.
    policies: Vec<bool>,
    /// Retries run ahead (not queued), for `perf.json`.
    pub(super) retries: u64,
    /// Per hop: the last refusal scan ([`SimSpec::refusing_until`]) and the last fault answer a
    /// chain met, each with the span it holds for (see [`Held`]).
    refusal: Vec<Option<Held<Option<Nanos>>>>,
    answer: Vec<Option<Held<Reply>>>,
}

/// A fault scan's result on one hop and the span [`from`, `until`) it holds for: from the
/// instant it was asked at to the hop's next fault boundary ([`SimSpec::next_fault_change`]).
/// Between two boundaries the faults active at an instant, and the ones still ahead, are the
/// same sets, so `refusing_until` and the answer a fault forces at arrival are the same values.
/// (The answer is only ever asked inside a refusal, where no error-rate fault draws.)
#[derive(Clone, Copy)]
struct Held<T> {
    from: Nanos,
    until: Nanos,
    value: T,
}

impl<T: Copy> Held<T> {
    /// The held result if it holds at `t`.
    fn at(held: &Option<Held<T>>, t: Nanos) -> Option<Held<T>> {
        held.filter(|h| h.from <= t && t < h.until)
    }
}

impl RunAhead {
    pub(super) fn new(spec: &SimSpec, answers_in_place: &[bool]) -> RunAhead {
        // A client's own delays depend on how busy its tenant is, which running ahead skips.
        let scenario_ok =
            spec.hops.iter().all(|h| h.pool.is_none() && h.autoscale.is_none() && h.replicas.health_check.is_none())
                && spec.tenants.iter().all(|t| t.timing.is_zero());
        let hops = spec
            .hops
            .iter()
            .zip(answers_in_place)
            .map(|(h, &in_place)| in_place && h.replicas.count == 1 && h.cache().is_none())
            .collect();
        let policies = spec.policies.iter().map(|p| p.budget.is_none() && p.breaker.is_none() && !p.requeue).collect();
        let n = spec.hops.len();
        RunAhead { enabled: scenario_ok, hops, policies, retries: 0, refusal: vec![None; n], answer: vec![None; n] }
    }

    /// [`SimSpec::refusing_until`] on replica 0 of `hop` from `from`, asked again only past the
    /// span the last answer holds for.
    fn refusing_until(&mut self, spec: &SimSpec, hop: usize, from: Nanos) -> Option<Nanos> {
        if let Some(held) = Held::at(&self.refusal[hop], from) {
            return held.value;
        }
        let value = spec.refusing_until(hop, 0, from);
        self.refusal[hop] = Some(Held { from, until: spec.next_fault_change(hop, from), value });
        value
    }
}

impl SimSpec {
    /// How long from `from` on hop `hop` (replica `replica`) refuses every arriving attempt at
    /// once, by the same rule whatever else happens: the first instant it may not, or `None`
    /// when it may not at `from` already. The refusal holds on [`from`, `to`] exactly when
    /// `to` is before it: one outage or throttle fault spans [`from`, `to`], and no hang or
    /// error-rate fault touches it (see the module's comment).
    pub(crate) fn refusing_until(&self, hop: usize, replica: u32, from: Nanos) -> Option<Nanos> {
        let on_hop = self.faults.iter().filter(|f| f.hop == hop && f.replica.is_none_or(|r| r == replica));
        let (mut covered_until, mut spoiled_from) = (None::<Nanos>, Nanos::MAX);
        for f in on_hop.filter(|f| from < f.to) {
            match f.kind {
                FaultKind::Outage { .. } | FaultKind::Throttle { .. } if f.from <= from => {
                    covered_until = covered_until.max(Some(f.to));
                }
                FaultKind::Hang | FaultKind::ErrorRate { .. } => spoiled_from = spoiled_from.min(f.from),
                // Started after `from`: it covers nothing of [`from`, ...] yet.
                FaultKind::Outage { .. } | FaultKind::Throttle { .. } => {}
                // Replies lost or slowed, capacity dipped, a cache flushed: none refuses every
                // arriving attempt by rule, nor spoils a refusal (an attempt refused at
                // arrival is never served, so its reply and service time do not matter).
                FaultKind::LostReply { .. }
                | FaultKind::Slow { .. }
                | FaultKind::Capacity { .. }
                | FaultKind::CacheFlush => {}
            }
        }
        covered_until.map(|until| until.min(spoiled_from)).filter(|&until| from < until)
    }

    /// The first instant after `t` at which a fault of hop `hop` starts or ends (`Nanos::MAX`
    /// when none does): until then the faults active there, and so the answer a fault forces at
    /// arrival, stay what they are at `t`.
    pub(crate) fn next_fault_change(&self, hop: usize, t: Nanos) -> Nanos {
        let bounds = self.faults.iter().filter(|f| f.hop == hop).flat_map(|f| [f.from, f.to]);
        bounds.filter(|&b| b > t).min().unwrap_or(Nanos::MAX)
    }
}

impl Simulation<'_> {
    /// Queues the call's retry at `at`, or, when nothing can change what it meets until then,
    /// runs it (and the ones after it) now (see the module's comment).
    pub(super) fn schedule_retry(&mut self, at: Nanos, call_handle: Handle) {
        if let Some(refused_until) = self.may_run_ahead(at, call_handle) {
            self.run_ahead(at, call_handle, refused_until, false);
        } else {
            self.queue_retry(at, call_handle);
        }
    }

    /// Runs the call's retries from the one at `at` on, each at its own time, while each is
    /// refused ([`Simulation::may_run_ahead`]); the first that may not run is queued, or the call
    /// ends. With `first_attempt`, the one at `at` is the call's first attempt (at `now`, from
    /// `new_request`): the same steps, counted as a first attempt, not a retry. A retry's steps are the ones `start_attempt`, `send_attempt`, `arrive_in_place` and
    /// `caller_sees` take for it, by the same functions (`count_attempt_in`, `count_entry`,
    /// `fault_reply`, `count_exit`, `next_retry`, `count_retry_scheduled_in`), without what the
    /// conditions make void: no budget or breaker to ask, no pool, no network delay to draw, no
    /// balancer, no in-flight round trip, no slab lookups (the call is worked on in a copy, put
    /// back before it is queued or ended).
    pub(super) fn run_ahead(&mut self, first_at: Nanos, handle: Handle, mut refused_until: Nanos, first_attempt: bool) {
        let saved_clock = (self.now, self.bucket_now, self.bucket_until);
        let spec = self.spec;
        let mut call: Call = *self.calls.get(handle).expect("a retrying call is live");
        let (hop, tenant) = (call.hop as usize, call.tenant as usize);
        let draws = super::jitter_item_key(&self.rngs.jitter, &call);
        let srv = self.lbs[hop].base as usize;
        // The counts of `start_attempt` (the retry fires), `count_attempt`, `enter_hop` and
        // `count_reply`, on the one bucket they all write: the hop is empty and has one
        // replica, so the in-flight count goes 0 → 1 → 0 and the level recorded is 1.
        debug_assert!(self.lbs[hop].count == 1 && self.lbs[hop].in_flight == 0, "one replica, empty");
        let buckets = self.record.hop_series[0].len();
        let mut at = first_at;
        let mut last_at;
        let mut retry = !first_attempt;
        let mut run = 0u64;
        // `refused_until` is the refusal's end seen from the chain's start (`may_run_ahead`): a
        // retry before it meets only refusal from any earlier retry of the chain too (a fault
        // spanning the start spans every later instant before its end, and a spoiler ahead of a
        // later instant is ahead of the start), so only a retry past it needs the question asked
        // again, from its own predecessor.
        let end = 'chain: loop {
            // A stretch of the chain over which the fault's answer holds (no fault of the hop
            // starts or ends): asked once, at its first retry, with the clock there. Later than
            // everything before it in the chain, so the clock's bucket is moved as the event loop
            // moves it; the saved clock is put back after the chain.
            self.move_clock(at);
            let (reply, answer_until) = match Held::at(&self.ahead.answer[hop], at) {
                Some(held) => (held.value, held.until),
                None => {
                    let Some(Some(reply)) = self.fault_reply(srv) else {
                        panic!(
                            "a retry run ahead at {at} ns was not refused at arrival (hop {hop}, seed {}, replication {})",
                            self.seed, self.replication
                        );
                    };
                    let until = spec.next_fault_change(hop, at);
                    self.ahead.answer[hop] = Some(Held { from: at, until, value: reply });
                    (reply, until)
                }
            };
            let (failure, retry_after) = super::failure_of(reply).expect("a refusal is a failure");
            let (mut b, mut bucket_until) = (self.bucket_now, self.bucket_until);
            // The books the stretch writes, borrowed once for it.
            let r = &mut self.record;
            let (series, counters) = (&mut r.hop_series[hop][..], &mut r.hops[hop]);
            let mut tenant_books = (hop == 0).then(|| (&mut r.tenants[tenant], &mut r.tenant_series[tenant][..]));
            loop {
                if at >= bucket_until {
                    (b, bucket_until) = super::bucket_at(at, spec.bucket, buckets);
                }
                run += u64::from(retry);
                debug_assert!(at < call.deadline_at, "next_retry keeps a retry before the deadline");
                call.attempts_made += 1;
                let timeout_at = super::attempt_timeout_at(spec, &call, at);
                if timeout_at != Nanos::MAX {
                    self.queue.push(timeout_at, super::Event::AttemptTimeout { attempt: Handle::NONE });
                }
                let bucket = &mut series[b];
                bucket.retries_fired += u32::from(retry);
                let tenant_bucket = tenant_books.as_mut().map(|(t, series)| (&mut **t, &mut series[b]));
                super::accounting::count_attempt_in(counters, bucket, tenant_bucket, retry);
                retry = true;
                super::server::count_entry(bucket, 1);
                super::server::count_exit(bucket, counters, reply);
                let number = call.attempts_made;
                last_at = at;
                match super::next_retry(spec, draws, &mut call, at, failure, retry_after) {
                    Err(reason) => break 'chain Some(CallEnd::Dlq(reason)),
                    Ok((next_at, wait)) => {
                        let request_id = call.request_id;
                        super::count_retry_scheduled_in(&mut self.delay_samples, bucket, hop, number, request_id, wait);
                        // From this retry's time to the next one's; the hop stays empty.
                        if next_at >= refused_until {
                            refused_until = self.ahead.refusing_until(spec, hop, at).unwrap_or(0);
                        }
                        let go_on = next_at <= spec.drain_limit && next_at < refused_until;
                        at = next_at;
                        if !go_on {
                            break 'chain None;
                        }
                        if at >= answer_until {
                            continue 'chain;
                        }
                    }
                }
            }
        };
        self.ahead.retries += run;
        *self.calls.get_mut(handle).expect("a retrying call is live") = call;
        // The end, or the queuing of the next retry, happens at the time of the last retry run.
        self.move_clock(last_at);
        match end {
            Some(end) => self.end_call(handle, end),
            None => self.queue_retry(at, handle),
        }
        (self.now, self.bucket_now, self.bucket_until) = saved_clock;
    }

    /// Whether call `call_handle`'s retry at `at` can run now (the module's comment, point by
    /// point). `self.now` is the time of the attempt that scheduled it.
    /// Returns the refusal's end seen from now ([`SimSpec::refusing_until`]) when it may, for
    /// [`Simulation::run_ahead`] to carry on from. The conditions that change with time are that
    /// `at` is within the drain limit and that the call's hop is empty now and refuses every
    /// arrival from now to `at`; the others hold for the whole of a call's chain.
    pub(super) fn may_run_ahead(&mut self, at: Nanos, call_handle: Handle) -> Option<Nanos> {
        if !self.ahead.enabled {
            return None;
        }
        let call = self.calls.get(call_handle).expect("a retrying call is live");
        let hop = call.hop as usize;
        let fixed = call.parent == NO_PARENT && self.ahead.hops[hop] && self.ahead.policies[call.policy as usize];
        if !fixed || at > self.spec.drain_limit || self.lbs[hop].in_flight != 0 {
            return None;
        }
        self.ahead.refusing_until(self.spec, hop, self.now).filter(|&until| at < until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::KeyedDraws;
    use crate::model::fault::Fault;
    use rand::RngExt;

    /// A spec of one hop, whose faults the tests set.
    fn one_hop() -> SimSpec {
        let source = "name = \"f\"\nhorizon = \"1s\"\n[[tenant]]\nname = \"t\"\nclients = 1\narrival = { kind = \"poisson\", rate_per_s = 1 }\npolicy = \"p\"\n[policy.p]\njitter = \"full\"\n[[hop]]\nname = \"a\"\nservice = { dist = \"constant\", mean = \"1ms\" }\n";
        crate::scenario::Scenario::from_source("f.toml", source, &[]).expect("valid").base
    }

    /// Fewer than `most` faults of every kind that matters to a refusal (and one that does
    /// not) on hops 0 and 1 (replica 0, 1 or all), starting before 100 and lasting 1 to 59.
    fn random_faults(rng: &mut KeyedDraws, most: usize) -> Vec<Fault> {
        let kinds = [
            FaultKind::Outage { in_service: crate::model::fault::InService::Reset },
            FaultKind::Throttle { retry_after: 5 },
            FaultKind::Hang,
            FaultKind::ErrorRate { p: 0.5 },
            FaultKind::Slow { factor: 2.0 },
        ];
        (0..rng.random_range(0..most))
            .map(|_| {
                let from = rng.random_range(0..100);
                Fault {
                    hop: rng.random_range(0..2),
                    replica: [None, Some(0), Some(1)][rng.random_range(0..3)],
                    kind: kinds[rng.random_range(0..kinds.len())].clone(),
                    from,
                    to: from + rng.random_range(1..60),
                }
            })
            .collect()
    }

    /// `refusing_until` against the rule as stated: `to` is before it exactly when one outage or
    /// throttle fault spans [`from`, `to`] and no hang or error-rate fault touches it; on random
    /// fault sets of every kind over two hops and two replicas, at random instants.
    #[test]
    fn refusing_until_is_the_rule_as_stated() {
        let mut spec = one_hop();
        let (mut checked, mut refusing) = (0, 0);
        for case in 0..2_000u64 {
            let mut rng = KeyedDraws::new(17, case, 0);
            spec.faults = random_faults(&mut rng, 5);
            for _ in 0..20 {
                let (hop, replica, from) = (rng.random_range(0..2), rng.random_range(0..2), rng.random_range(0..120));
                let until = spec.refusing_until(hop, replica, from);
                for to in from..170 {
                    let on_hop = spec.faults.iter().filter(|f| f.hop == hop && f.replica.is_none_or(|r| r == replica));
                    let spans = on_hop.clone().any(|f| {
                        matches!(f.kind, FaultKind::Outage { .. } | FaultKind::Throttle { .. })
                            && f.from <= from
                            && to < f.to
                    });
                    let touched = on_hop.clone().any(|f| {
                        matches!(f.kind, FaultKind::Hang | FaultKind::ErrorRate { .. }) && f.from <= to && from < f.to
                    });
                    let rule = spans && !touched;
                    assert_eq!(
                        until.is_some_and(|u| to < u),
                        rule,
                        "case {case}: [{from}, {to}] on hop {hop}/{replica}"
                    );
                    checked += 1;
                    refusing += u32::from(rule);
                }
            }
        }
        assert!(
            refusing > 10_000 && checked > 2 * refusing,
            "{refusing} of {checked} spans refused: the cases must mix"
        );
    }

    /// The memo of refusal scans gives what a fresh scan gives, at every instant, asked in time
    /// order (as chains ask) or in any order, on random fault sets of every kind.
    #[test]
    fn held_refusal_scans_equal_fresh_ones() {
        let mut spec = one_hop();
        let (mut asked, mut held) = (0, 0);
        for case in 0..1_000u64 {
            let mut rng = KeyedDraws::new(23, case, 0);
            spec.faults = random_faults(&mut rng, 6);
            let mut ahead = RunAhead::new(&spec, &[true]);
            let mut in_order: Vec<Nanos> = (0..40).map(|_| rng.random_range(0..170)).collect();
            let scrambled = in_order.clone();
            in_order.sort_unstable();
            for from in in_order.into_iter().chain(scrambled) {
                let was_held = Held::at(&ahead.refusal[0], from).is_some();
                assert_eq!(
                    ahead.refusing_until(&spec, 0, from),
                    spec.refusing_until(0, 0, from),
                    "case {case} at {from}"
                );
                (asked, held) = (asked + 1, held + u32::from(was_held));
            }
        }
        assert!(held > asked / 4 && held < asked, "{held} of {asked} answers held: the cases must mix");
    }
}
