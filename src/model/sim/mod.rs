//! The simulation of one replication: clients, calls, attempts and hops on the event queue.
//!
//! A *call* is one caller's effort to get an answer from one hop: the client's call to hop 0,
//! or hop h's call to hop h+1 while it serves an attempt. A call makes *attempts*; each attempt
//! is also the job the hop works on. The caller's attempt ends at the first of reply and timeout;
//! the hop keeps working on attempts whose caller gave up (wasted work, duplicates).

mod accounting;
mod budgets;
mod cancel;
mod discipline;
mod hedge;
mod history;
mod hop_queue;
mod occ;
mod server;

use super::arrivals::{first_requests, next_poisson};
use super::budget::{BreakerState, BudgetState, FailureKind};
use super::policy::{DeadlineMode, JitterState};
use super::spec::{Arrival, SimSpec};
use super::trace::TraceCursor;
use crate::engine::{stream, EventQueue, Handle, Nanos, Slab, StreamKind};
use crate::metrics::{
    new_latency_histogram, DlqReason, HopBucket, HopCounters, RunRecord, TenantBucket, TenantCounters,
    RETRY_DELAY_RETRIES, RETRY_DELAY_SAMPLES_MAX,
};
use discipline::OverloadState;
use hdrhistogram::Histogram;
use hop_queue::{HopQueue, ScopeKey};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// What kind of event a logical request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Payload {
    Normal,
    Invalid,
    Poison,
}

/// A hop's answer to an attempt, or the caller's timeout.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reply {
    Ok,
    /// Non-retryable 4xx.
    Rejected,
    /// Retryable 5xx (outage, error, overflow, poison, downstream exhausted).
    Failed,
    /// 429 with a Retry-After.
    Throttled(Nanos),
    /// The caller's attempt timeout fired first.
    Timeout,
    /// Failed locally, never sent (breaker open, adaptive throttling).
    LocalReject,
}

/// How a call ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CallEnd {
    Succeeded,
    Rejected,
    Dlq(DlqReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Network,
    Queued,
    Service,
    Downstream,
    Replying,
    Done,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A Poisson/profile tenant's next arrival.
    PoissonArrival {
        tenant: u16,
    },
    /// A client's next request (closed loop, or herd with several requests per client).
    ClientNext {
        tenant: u16,
        client: u32,
    },
    AttemptStart {
        call: Handle,
    },
    AttemptArrive {
        attempt: Handle,
    },
    ServiceDone {
        attempt: Handle,
    },
    ReplyArrive {
        attempt: Handle,
    },
    AttemptTimeout {
        attempt: Handle,
    },
    /// OCC: the read's reply (with the version) is back at the client, which sends its write.
    OccReadBack {
        attempt: Handle,
    },
    /// OCC: the conditional write reaches the register.
    OccWrite {
        attempt: Handle,
    },
    /// An attempt's hedge delay passed: send a hedge if it is still unanswered (`sim/hedge.rs`).
    HedgeFire {
        attempt: Handle,
    },
}

struct Call {
    request_id: u64,
    /// Identifies the call's jitter draws (see [`jitter_position`]).
    draw_key: u64,
    created_at: Nanos,
    deadline_at: Nanos,
    parent: Option<Handle>,
    client: u32,
    attempts_made: u32,
    tenant: u16,
    hop: u16,
    policy: u16,
    payload: Payload,
    jitter: JitterState,
    /// What the last retry paid to the budget (AWS refunds it on success).
    last_cost: Option<f64>,
}

#[derive(Clone)]
struct Attempt {
    call: Handle,
    request_id: u64,
    /// The call's draw key mixed with the attempt number: keys the draws of downstream calls.
    draw_key: u64,
    arrived_at: Nanos,
    service_ns: Nanos,
    /// When the caller gives up on this attempt (its timeout or deadline), propagated to the hop.
    deadline_at: Nanos,
    tenant: u16,
    hop: u16,
    /// Retry tagging: attempt 2 or later of its call.
    retry: bool,
    payload: Payload,
    phase: Phase,
    caller_waiting: bool,
    reply: Reply,
    /// OCC: the register version the read returned.
    occ_version: u64,
    /// When the caller stops waiting for this attempt (its timeout, bounded by its call's
    /// deadline): what a propagated deadline hands to the hop's own downstream call.
    give_up_at: Nanos,
    /// The attempt claimed its request's idempotency key and must complete or release it.
    holds_key: bool,
    // Hedging and cancellation (issue 16).
    /// When the caller sent it (attempt latency for quantile hedges).
    sent_at: Nanos,
    /// When its service started (the part spent when it is cancelled in service).
    service_start: Nanos,
    /// Its caller stopped waiting because another copy answered first (wasted work: hedge).
    lost_race: bool,
}

#[derive(Default)]
struct HopState {
    busy: u32,
    in_flight: u32,
    queue: HopQueue,
    overload: OverloadState,
    /// OCC register version.
    version: u64,
}

/// Side-effect history of one request at one effect hop, and its idempotency key.
#[derive(Clone, Copy, Default)]
struct Commit {
    /// Side effects committed.
    executions: u32,
    /// A delivery claimed the key and is still being processed (`in_progress`).
    in_progress: bool,
    /// The completed key lives until then (meaningful once `executions > 0`).
    key_expires_at: Nanos,
}

struct Rngs {
    arrivals: Vec<ChaCha8Rng>,
    payload: Vec<ChaCha8Rng>,
    service: Vec<ChaCha8Rng>,
    network: Vec<ChaCha8Rng>,
    faults: Vec<ChaCha8Rng>,
    jitter: Vec<ChaCha8Rng>,
    /// Adaptive throttling's local-rejection coin (per called hop): its own stream, so adding a
    /// probabilistic fault does not shift throttle decisions (common random numbers).
    throttle: Vec<ChaCha8Rng>,
}

impl Rngs {
    fn new(seed: u64, replication: u64, tenants: usize, hops: usize) -> Rngs {
        let many = |kind, n: usize| (0..n).map(|i| stream(seed, replication, kind, i as u32)).collect();
        Rngs {
            arrivals: many(StreamKind::Arrivals, tenants),
            payload: many(StreamKind::Payload, tenants),
            service: many(StreamKind::Service, hops),
            network: many(StreamKind::Network, hops),
            faults: many(StreamKind::Faults, hops),
            jitter: many(StreamKind::Jitter, hops),
            throttle: many(StreamKind::Throttle, hops),
        }
    }
}

/// One replication of one scenario variant.
pub struct Simulation<'a> {
    spec: &'a SimSpec,
    queue: EventQueue<Event>,
    now: Nanos,
    calls: Slab<Call>,
    attempts: Slab<Attempt>,
    hops: Vec<HopState>,
    /// Side-effect history per hop of the live requests (see [`history`]).
    history: history::EffectHistory,
    /// Deliveries waiting for an in-progress key (`in_progress = "wait"`), by (hop, request id),
    /// in arrival order. Only probed by key, never iterated.
    waiters: HashMap<(usize, u64), Vec<Handle>>,
    /// Master seed and replication, for the messages of internal assertions.
    seed: u64,
    replication: u64,
    budgets: HashMap<ScopeKey, BudgetState>,
    breakers: HashMap<ScopeKey, BreakerState>,
    requests_sent: Vec<Vec<u32>>,
    request_id_next: u64,
    rngs: Rngs,
    record: RunRecord,
    prefault_wait_us: Histogram<u64>,
    first_fault_start: Nanos,
    poisson_steps: Vec<Option<Vec<(Nanos, f64)>>>,
    /// Replay positions of trace tenants (None for the others).
    traces: Vec<Option<TraceCursor>>,
    /// Which attempts a call is waiting on and which call an attempt made downstream, kept only
    /// when some policy hedges or cancels (`sim/cancel.rs`).
    links: cancel::Links,
    /// Hedge tokens and latency quantiles per (policy, hop) (`sim/hedge.rs`).
    hedging: hedge::Hedging,
}

/// Runs replication `replication` of `spec` under master seed `seed`.
pub fn run(spec: &SimSpec, seed: u64, replication: u64) -> RunRecord {
    let mut sim = Simulation::new(spec, seed, replication);
    sim.run_to_end();
    sim.finish()
}

impl<'a> Simulation<'a> {
    /// Prepares a run; nothing is simulated until [`Simulation::run_to_end`].
    pub fn new(spec: &'a SimSpec, seed: u64, replication: u64) -> Self {
        let buckets = spec.bucket_count();
        let record = RunRecord {
            hops: vec![HopCounters::default(); spec.hops.len()],
            tenants: spec.tenants.iter().map(|_| TenantCounters::default()).collect(),
            hop_series: vec![vec![HopBucket::default(); buckets]; spec.hops.len()],
            tenant_series: vec![vec![TenantBucket::default(); buckets]; spec.tenants.len()],
            completion_time_ns: 0,
            in_flight: vec![0; spec.tenants.len()],
            events: 0,
            truncated: None,
            prefault_wait_p99_ns: None,
            retry_delays_ns: vec![Vec::new(); RETRY_DELAY_RETRIES],
        };
        let requests_sent = spec
            .tenants
            .iter()
            .map(|t| match t.arrival {
                Arrival::Herd { .. } => vec![0; t.clients as usize],
                _ => Vec::new(),
            })
            .collect();
        Simulation {
            spec,
            queue: EventQueue::new(),
            now: 0,
            calls: Slab::default(),
            attempts: Slab::default(),
            hops: spec
                .hops
                .iter()
                .map(|h| HopState {
                    queue: HopQueue::new(h.fair, spec.tenants.len(), h.overload.retry_priority, h.overload.discipline),
                    overload: OverloadState::new(&h.overload),
                    ..HopState::default()
                })
                .collect(),
            history: history::EffectHistory::new(spec.hops.len()),
            waiters: HashMap::new(),
            seed,
            replication,
            budgets: HashMap::new(),
            breakers: HashMap::new(),
            requests_sent,
            request_id_next: 0,
            rngs: Rngs::new(seed, replication, spec.tenants.len(), spec.hops.len()),
            record,
            prefault_wait_us: new_latency_histogram(),
            first_fault_start: spec.first_trigger_start().unwrap_or(Nanos::MAX),
            poisson_steps: spec.tenants.iter().map(|t| poisson_steps(&t.arrival)).collect(),
            traces: spec
                .tenants
                .iter()
                .map(|t| match &t.arrival {
                    Arrival::Trace(a) => Some(TraceCursor::new(a)),
                    _ => None,
                })
                .collect(),
            links: cancel::Links::new(spec),
            hedging: hedge::Hedging::default(),
        }
    }

    /// Processes events until none is left, the drain limit passes, or `max_events` is hit.
    pub fn run_to_end(&mut self) {
        let firsts = first_requests(&self.spec.tenants, &mut self.rngs.arrivals);
        self.schedule_poisson_starts();
        let mut cursor = 0;
        loop {
            let arrival_at = firsts.get(cursor).map(|f| f.0).filter(|&t| t < self.spec.horizon);
            let event_at = self.queue.peek_time();
            let take_arrival = match (arrival_at, event_at) {
                (Some(a), Some(e)) => a <= e,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let at = if take_arrival { arrival_at } else { event_at }.expect("one is present");
            if at > self.spec.drain_limit {
                self.record.truncated = Some(format!(
                    "drain limit reached at {:.3} s with requests still in flight",
                    crate::engine::time::ns_to_secs(self.spec.drain_limit)
                ));
                break;
            }
            if self.record.events >= self.spec.max_events {
                self.record.truncated = Some(format!("max_events = {} reached", self.spec.max_events));
                break;
            }
            self.record.events += 1;
            if take_arrival {
                let (t, tenant, client) = firsts[cursor];
                cursor += 1;
                self.advance_to(t);
                self.new_request(tenant, client);
            } else {
                let (t, event) = self.queue.pop().expect("peeked");
                self.advance_to(t);
                self.prefetch_next();
                self.dispatch(event);
            }
        }
    }

    /// Starts loading the state the next event will touch while this one is handled: with a
    /// million live calls, the slab slot of a retry's call is a cache miss otherwise.
    fn prefetch_next(&self) {
        match self.queue.peek() {
            Some((_, Event::AttemptStart { call })) => self.calls.prefetch(*call),
            Some((
                _,
                Event::AttemptArrive { attempt }
                | Event::ServiceDone { attempt }
                | Event::ReplyArrive { attempt }
                | Event::AttemptTimeout { attempt },
            )) => self.attempts.prefetch(*attempt),
            _ => {}
        }
    }

    fn advance_to(&mut self, t: Nanos) {
        assert!(t >= self.now, "time went backwards: {t} < {}", self.now);
        self.now = t;
    }

    fn schedule_poisson_starts(&mut self) {
        for (ti, steps) in self.poisson_steps.iter().enumerate() {
            if let Some(steps) = steps {
                let rng = &mut self.rngs.arrivals[ti];
                if let Some(at) = next_poisson(0, steps, self.spec.horizon, rng) {
                    self.queue.push(at, Event::PoissonArrival { tenant: ti as u16 });
                }
            }
        }
        for (ti, cursor) in self.traces.iter_mut().enumerate() {
            if let Some(at) = cursor.as_mut().and_then(|c| c.next(0, self.spec.horizon, &mut self.rngs.arrivals[ti])) {
                self.queue.push(at, Event::PoissonArrival { tenant: ti as u16 });
            }
        }
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::PoissonArrival { tenant } => self.on_poisson_arrival(tenant),
            Event::ClientNext { tenant, client } => self.new_request(tenant, client),
            // With cancellation, a call or attempt can be gone before its events fire.
            Event::AttemptStart { call } if self.links.on && self.calls.get(call).is_none() => {}
            Event::AttemptArrive { attempt } | Event::ServiceDone { attempt } | Event::ReplyArrive { attempt }
                if self.links.on && self.attempts.get(attempt).is_none() => {}
            Event::AttemptStart { call } => self.start_attempt(call),
            Event::AttemptArrive { attempt } => self.on_arrive(attempt),
            Event::ServiceDone { attempt } => self.on_service_done(attempt),
            Event::ReplyArrive { attempt } => self.on_reply_arrive(attempt),
            Event::AttemptTimeout { attempt } => self.on_timeout(attempt),
            Event::OccReadBack { attempt } => self.occ_send_write(attempt),
            Event::OccWrite { attempt } => self.occ_write(attempt),
            Event::HedgeFire { attempt } => self.on_hedge_fire(attempt),
        }
    }

    fn bucket(&self) -> usize {
        ((self.now / self.spec.bucket) as usize).min(self.record.hop_series[0].len() - 1)
    }

    fn on_poisson_arrival(&mut self, tenant: u16) {
        let ti = tenant as usize;
        let spec = &self.spec.tenants[ti];
        let rng = &mut self.rngs.arrivals[ti];
        let client = rng.random_range(0..spec.clients);
        let next = match self.traces[ti].as_mut() {
            Some(cursor) => cursor.next(self.now, self.spec.horizon, rng),
            None => {
                let steps = self.poisson_steps[ti].as_deref().expect("only open-loop tenants get these events");
                next_poisson(self.now, steps, self.spec.horizon, rng)
            }
        };
        if let Some(at) = next {
            self.queue.push(at, Event::PoissonArrival { tenant });
        }
        self.new_request(tenant, client);
    }

    fn new_request(&mut self, tenant: u16, client: u32) {
        let ti = tenant as usize;
        let spec = &self.spec.tenants[ti];
        if let Some(sent) = self.requests_sent[ti].get_mut(client as usize) {
            *sent += 1;
        }
        let u: f64 = self.rngs.payload[ti].random();
        let payload = if u < spec.invalid_fraction {
            Payload::Invalid
        } else if u < spec.invalid_fraction + spec.poison_fraction {
            Payload::Poison
        } else {
            Payload::Normal
        };
        let request_id = self.request_id_next;
        self.request_id_next += 1;
        self.record.tenants[ti].requests += 1;
        let b = self.bucket();
        self.record.tenant_series[ti][b].arrivals += 1;
        let policy = &self.spec.policies[spec.policy];
        let call = Call {
            request_id,
            draw_key: request_id,
            created_at: self.now,
            deadline_at: policy.deadline.map_or(Nanos::MAX, |d| self.now.saturating_add(d)),
            parent: None,
            client,
            attempts_made: 0,
            tenant,
            hop: 0,
            policy: spec.policy as u16,
            payload,
            jitter: JitterState::default(),
            last_cost: None,
        };
        let handle = self.insert_call(call);
        self.budget_on_request(handle);
        self.start_attempt(handle);
    }

    fn start_attempt(&mut self, call_handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let call = self.calls.get_mut(call_handle).expect("attempt of a live call");
        if call.attempts_made > 0 {
            self.record.hop_series[call.hop as usize][b].retries_fired += 1;
        }
        if now >= call.deadline_at {
            self.end_call(call_handle, CallEnd::Dlq(DlqReason::Deadline));
            return;
        }
        call.attempts_made += 1;
        let retry = call.attempts_made > 1;
        let (hop, tenant) = (call.hop as usize, call.tenant);
        if self.rejected_locally(call_handle) {
            self.record.tenants[tenant as usize].local_rejections += 1;
            self.caller_sees(call_handle, Reply::LocalReject);
            return;
        }
        let call = self.calls.get(call_handle).expect("live");
        let policy = &self.spec.policies[call.policy as usize];
        let timeout_at =
            policy.attempt_timeout.map_or(call.deadline_at, |t| now.saturating_add(t).min(call.deadline_at));
        let attempt = Attempt {
            call: call_handle,
            request_id: call.request_id,
            draw_key: mix64(call.draw_key ^ u64::from(call.attempts_made)),
            arrived_at: now,
            service_ns: 0,
            deadline_at: timeout_at,
            tenant,
            hop: hop as u16,
            retry,
            payload: call.payload,
            phase: Phase::Network,
            caller_waiting: true,
            reply: Reply::Failed,
            occ_version: 0,
            give_up_at: timeout_at,
            holds_key: false,
            sent_at: now,
            service_start: 0,
            lost_race: false,
        };
        self.count_attempt(hop, tenant as usize, retry, b);
        let handle = self.insert_attempt(attempt);
        if self.links.on {
            self.track_attempt(call_handle, handle, timeout_at);
        }
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(now.saturating_add(net), Event::AttemptArrive { attempt: handle });
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Event::AttemptTimeout { attempt: handle });
        }
    }

    fn call_downstream(&mut self, parent: Handle, hop: usize, policy: usize) {
        let now = self.now;
        let a = self.attempts.get_mut(parent).expect("live");
        a.phase = Phase::Downstream;
        let p = &self.spec.policies[policy];
        let own = p.deadline.map_or(Nanos::MAX, |d| now.saturating_add(d));
        let deadline_at = match p.deadline_mode {
            DeadlineMode::PerCall => own,
            DeadlineMode::Propagate => own.min(a.give_up_at),
        };
        let call = Call {
            request_id: a.request_id,
            draw_key: mix64(a.draw_key ^ ((hop as u64) << 48)),
            created_at: now,
            deadline_at,
            parent: Some(parent),
            // A hop calling the next one is one client of it (for client-scoped budgets).
            client: u32::MAX - (hop as u32),
            attempts_made: 0,
            tenant: a.tenant,
            hop: hop as u16,
            policy: policy as u16,
            payload: a.payload,
            jitter: JitterState::default(),
            last_cost: None,
        };
        let handle = self.insert_call(call);
        if self.links.on {
            self.links.child.insert(parent, handle);
        }
        self.budget_on_request(handle);
        self.start_attempt(handle);
    }

    fn on_reply_arrive(&mut self, handle: Handle) {
        let a = self.remove_attempt(handle).expect("a reply's attempt is live until it arrives");
        if !a.caller_waiting {
            let cause = if a.lost_race { cancel::Waste::Hedge } else { cancel::Waste::TimedOut };
            self.add_wasted(a.hop as usize, a.service_ns, cause);
            return;
        }
        if a.reply == Reply::Ok {
            let b = self.bucket();
            self.record.hops[a.hop as usize].timely_ok += 1;
            self.record.hop_series[a.hop as usize][b].timely_ok += 1;
        }
        if self.links.on && self.hedge_reply(handle, &a) {
            return;
        }
        self.caller_sees(a.call, a.reply);
    }

    fn on_timeout(&mut self, handle: Handle) {
        let Some(a) = self.attempts.get_mut(handle) else { return };
        if !a.caller_waiting {
            return;
        }
        a.caller_waiting = false;
        let call = a.call;
        if a.phase == Phase::Done {
            self.remove_attempt(handle);
        }
        if self.links.on && self.gave_up(handle, call) {
            return;
        }
        self.caller_sees(call, Reply::Timeout);
    }

    fn caller_sees(&mut self, call_handle: Handle, reply: Reply) {
        let (failure, retry_after) = match reply {
            Reply::Ok | Reply::Rejected => {
                self.budget_on_success(call_handle, reply == Reply::Ok);
                let end = if reply == Reply::Ok { CallEnd::Succeeded } else { CallEnd::Rejected };
                return self.end_call(call_handle, end);
            }
            Reply::Throttled(after) => (FailureKind::Throttling, Some(after)),
            Reply::Timeout => (FailureKind::Timeout, None),
            Reply::Failed | Reply::LocalReject => (FailureKind::Transient, None),
        };
        self.budget_on_failure(call_handle, reply != Reply::LocalReject);
        let now = self.now;
        let call = self.calls.get(call_handle).expect("caller of a live call");
        let spec = self.spec;
        let policy = &spec.policies[call.policy as usize];
        let tenant = call.tenant as usize;
        if call.attempts_made >= policy.attempts_max || !policy.retry_on.allows(failure) {
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Attempts));
        }
        let call = self.calls.get_mut(call_handle).expect("caller of a live call");
        let (retry, hop, deadline_at) = (call.attempts_made, call.hop, call.deadline_at);
        let rng = &mut self.rngs.jitter[hop as usize];
        rng.set_word_pos(jitter_position(call.draw_key, retry));
        let backoff = if failure == FailureKind::Throttling {
            policy.delay_after_throttle(retry, &mut call.jitter, rng)
        } else {
            policy.delay_before_retry(retry, &mut call.jitter, rng)
        };
        let wait = policy.apply_retry_after(backoff, retry_after);
        let at = now.saturating_add(wait);
        // The deadline is checked before the budget is asked, so a retry that would come too late
        // is not paid for.
        if at >= deadline_at {
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Deadline));
        }
        if !self.budget_allows_retry(call_handle, failure) {
            self.record.tenants[tenant].retries_denied += 1;
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Budget));
        }
        if hop == 0 {
            if let Some(samples) = self.record.retry_delays_ns.get_mut(retry as usize - 1) {
                if samples.len() < RETRY_DELAY_SAMPLES_MAX {
                    samples.push(wait);
                }
            }
        }
        let b = self.bucket();
        self.record.hop_series[hop as usize][b].retries_scheduled += 1;
        self.queue.push(at, Event::AttemptStart { call: call_handle });
    }

    fn end_call(&mut self, call_handle: Handle, end: CallEnd) {
        let call = self.remove_call(call_handle).expect("ending a live call");
        if self.links.on {
            self.links.forget(call_handle, call.parent);
        }
        if let Some(parent) = call.parent {
            let reply = match end {
                CallEnd::Succeeded => Reply::Ok,
                CallEnd::Rejected => Reply::Rejected,
                CallEnd::Dlq(_) => Reply::Failed,
            };
            self.finish_job(parent, reply);
            return;
        }
        self.end_request(&call, end);
    }

    fn schedule_next_request(&mut self, tenant: u16, client: u32) {
        let ti = tenant as usize;
        let think = match self.spec.tenants[ti].arrival {
            Arrival::Herd { requests_per_client, .. } => {
                let sent = self.requests_sent[ti][client as usize];
                if sent >= requests_per_client {
                    return;
                }
                0
            }
            Arrival::Closed { think, .. } => think,
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Trace(_) => return,
        };
        let at = self.now.saturating_add(think);
        if at < self.spec.horizon {
            self.queue.push(at, Event::ClientNext { tenant, client });
        }
    }
}

fn poisson_steps(arrival: &Arrival) -> Option<Vec<(Nanos, f64)>> {
    match arrival {
        Arrival::Poisson { rate_per_s } => Some(vec![(0, *rate_per_s)]),
        Arrival::Profile { steps } => Some(steps.clone()),
        _ => None,
    }
}

/// SplitMix64's finaliser: spreads a key over 64 bits (used to derive draw keys, not to draw).
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Where in a hop's jitter stream the draws before retry `retry` of a call start.
///
/// Each call reads its jitter at fixed positions of the ChaCha stream (random access), keyed by
/// its draw key: the request id for a client's call, a mix of the parent attempt's key and the hop
/// for a downstream call. So request r's retry k uses the same uniform draws whatever the other
/// requests do, and variants that differ only in their jitter formula compare draw for draw
/// (common random numbers). 64 words (32 draws) per retry, 1,024 retries per key before reuse.
fn jitter_position(draw_key: u64, retry: u32) -> u128 {
    let key = u128::from(mix64(draw_key) >> 6);
    ((key << 10) | u128::from(retry & 1023)) << 6
}
