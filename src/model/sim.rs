//! The simulation of one replication: clients, calls, attempts and hops on the event queue.
//!
//! A *call* is one caller's effort to get an answer from one hop: the client's call to hop 0,
//! or hop h's call to hop h+1 while it serves an attempt. A call makes *attempts*; each attempt
//! is also the job the hop works on. The caller's attempt ends at the first of reply and timeout;
//! the hop keeps working on attempts whose caller gave up (wasted work, duplicates).

use super::arrivals::{first_requests, next_poisson};
use super::budget::{BreakerState, BudgetState, FailureKind, Scope};
use super::fault::FaultKind;
use super::policy::JitterState;
use super::spec::{Arrival, SimSpec};
use crate::engine::{stream, EventQueue, Handle, Nanos, Slab, StreamKind};
use crate::metrics::{
    new_latency_histogram, DlqReason, HopBucket, HopCounters, RunRecord, TenantBucket, TenantCounters,
    RETRY_DELAY_RETRIES, RETRY_DELAY_SAMPLES_MAX,
};
use hdrhistogram::Histogram;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, VecDeque};

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

struct Attempt {
    call: Handle,
    request_id: u64,
    /// The call's draw key mixed with the attempt number: keys the draws of downstream calls.
    draw_key: u64,
    arrived_at: Nanos,
    service_ns: Nanos,
    tenant: u16,
    hop: u16,
    payload: Payload,
    phase: Phase,
    caller_waiting: bool,
    reply: Reply,
    /// OCC: the register version the read returned.
    occ_version: u64,
}

#[derive(Default)]
struct HopState {
    busy: u32,
    in_flight: u32,
    queue: HopQueue,
    /// OCC register version.
    version: u64,
}

/// A hop's waiting room: one FIFO, or per-tenant FIFOs served round-robin (`fair`).
#[derive(Default)]
struct HopQueue {
    per_tenant: Vec<VecDeque<Handle>>,
    fair: bool,
    next: usize,
    len: usize,
}

impl HopQueue {
    fn new(fair: bool, tenants: usize) -> Self {
        HopQueue { per_tenant: vec![VecDeque::new(); if fair { tenants } else { 1 }], fair, next: 0, len: 0 }
    }

    /// Queues `h` unless its queue (the tenant's, when fair) already holds `limit`.
    fn push(&mut self, tenant: u16, h: Handle, limit: u32) -> bool {
        let q = &mut self.per_tenant[if self.fair { tenant as usize } else { 0 }];
        if q.len() >= limit as usize {
            return false;
        }
        q.push_back(h);
        self.len += 1;
        true
    }

    fn pop(&mut self) -> Option<Handle> {
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

    fn len(&self) -> usize {
        self.len
    }
}

/// Key of a budget or breaker instance: (policy, tenant, client), zeroed beyond the scope.
type ScopeKey = (u16, u16, u32);

fn scope_key(scope: Scope, policy: u16, tenant: u16, client: u32) -> ScopeKey {
    match scope {
        Scope::Global => (policy, 0, 0),
        Scope::Tenant => (policy, tenant, 0),
        Scope::Client => (policy, tenant, client),
    }
}

/// Side-effect history of one request at one effect hop.
#[derive(Clone, Copy, Default)]
struct Commit {
    executions: u32,
    key_expires_at: Nanos,
}

struct Rngs {
    arrivals: Vec<ChaCha8Rng>,
    payload: Vec<ChaCha8Rng>,
    service: Vec<ChaCha8Rng>,
    network: Vec<ChaCha8Rng>,
    faults: Vec<ChaCha8Rng>,
    jitter: Vec<ChaCha8Rng>,
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
    commits: HashMap<(u16, u64), Commit>,
    budgets: HashMap<ScopeKey, BudgetState>,
    breakers: HashMap<ScopeKey, BreakerState>,
    requests_sent: Vec<Vec<u32>>,
    request_id_next: u64,
    rngs: Rngs,
    record: RunRecord,
    prefault_wait_us: Histogram<u64>,
    first_fault_start: Nanos,
    poisson_steps: Vec<Option<Vec<(Nanos, f64)>>>,
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
                .map(|h| HopState { queue: HopQueue::new(h.fair, spec.tenants.len()), ..HopState::default() })
                .collect(),
            commits: HashMap::new(),
            budgets: HashMap::new(),
            breakers: HashMap::new(),
            requests_sent,
            request_id_next: 0,
            rngs: Rngs::new(seed, replication, spec.tenants.len(), spec.hops.len()),
            record,
            prefault_wait_us: new_latency_histogram(),
            first_fault_start: spec.first_trigger_start().unwrap_or(Nanos::MAX),
            poisson_steps: spec.tenants.iter().map(|t| poisson_steps(&t.arrival)).collect(),
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
                self.dispatch(event);
            }
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
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::PoissonArrival { tenant } => self.on_poisson_arrival(tenant),
            Event::ClientNext { tenant, client } => self.new_request(tenant, client),
            Event::AttemptStart { call } => self.start_attempt(call),
            Event::AttemptArrive { attempt } => self.on_arrive(attempt),
            Event::ServiceDone { attempt } => self.on_service_done(attempt),
            Event::ReplyArrive { attempt } => self.on_reply_arrive(attempt),
            Event::AttemptTimeout { attempt } => self.on_timeout(attempt),
            Event::OccReadBack { attempt } => self.occ_send_write(attempt),
            Event::OccWrite { attempt } => self.occ_write(attempt),
        }
    }

    fn bucket(&self) -> usize {
        ((self.now / self.spec.bucket) as usize).min(self.record.hop_series[0].len() - 1)
    }

    fn on_poisson_arrival(&mut self, tenant: u16) {
        let ti = tenant as usize;
        let spec = &self.spec.tenants[ti];
        let rng = &mut self.rngs.arrivals[ti];
        let client = rng.gen_range(0..spec.clients);
        let steps = self.poisson_steps[ti].as_deref().expect("only poisson tenants get these events");
        if let Some(at) = next_poisson(self.now, steps, self.spec.horizon, rng) {
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
        let u: f64 = self.rngs.payload[ti].gen();
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
        let handle = self.calls.insert(call);
        self.budget_on_request(handle);
        self.start_attempt(handle);
    }

    fn start_attempt(&mut self, call_handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let call = self.calls.get_mut(call_handle).expect("attempt of a live call");
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
            tenant,
            hop: hop as u16,
            payload: call.payload,
            phase: Phase::Network,
            caller_waiting: true,
            reply: Reply::Failed,
            occ_version: 0,
        };
        self.count_attempt(hop, tenant as usize, retry, b);
        let handle = self.attempts.insert(attempt);
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(now.saturating_add(net), Event::AttemptArrive { attempt: handle });
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Event::AttemptTimeout { attempt: handle });
        }
    }

    fn count_attempt(&mut self, hop: usize, tenant: usize, retry: bool, b: usize) {
        let counters = &mut self.record.hops[hop];
        let bucket = &mut self.record.hop_series[hop][b];
        counters.attempts += 1;
        bucket.attempts += 1;
        if retry {
            counters.retries += 1;
            bucket.retries += 1;
        } else {
            counters.first_attempts += 1;
            bucket.first_attempts += 1;
        }
        if hop == 0 {
            let t = &mut self.record.tenants[tenant];
            let tb = &mut self.record.tenant_series[tenant][b];
            t.attempts += 1;
            tb.attempts += 1;
            if retry {
                t.retries += 1;
                tb.retries += 1;
            } else {
                tb.first_attempts += 1;
            }
        }
    }

    fn on_arrive(&mut self, handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("arriving attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        a.arrived_at = now;
        let state = &mut self.hops[hop];
        state.in_flight += 1;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.in_flight_max = bucket.in_flight_max.max(state.in_flight);
        if let Some(reply) = self.fault_reply(hop) {
            match reply {
                None => self.drop_unanswered(handle),
                Some(r) => self.send_reply(handle, r),
            }
            return;
        }
        if hop == 0 && payload == Payload::Invalid {
            self.send_reply(handle, Reply::Rejected);
            return;
        }
        if self.spec.hops[hop].occ {
            self.occ_read(handle, hop);
            return;
        }
        let spec = &self.spec.hops[hop];
        let workers = self.effective_workers(hop);
        let state = &mut self.hops[hop];
        if state.busy < workers {
            self.start_service(handle);
        } else if state.queue.push(self.attempts.get(handle).expect("live").tenant, handle, spec.queue_limit) {
            self.attempts.get_mut(handle).expect("live").phase = Phase::Queued;
            let bucket = &mut self.record.hop_series[hop][b];
            bucket.queue_len_max = bucket.queue_len_max.max(state.queue.len() as u32);
        } else {
            self.record.hops[hop].overflow += 1;
            self.send_reply(handle, Reply::Failed);
        }
    }

    /// OCC read: the register answers with its current version (no queue, no service time).
    fn occ_read(&mut self, handle: Handle, hop: usize) {
        let version = self.hops[hop].version;
        let a = self.attempts.get_mut(handle).expect("live");
        a.occ_version = version;
        a.phase = Phase::Service;
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(self.now.saturating_add(net), Event::OccReadBack { attempt: handle });
    }

    /// OCC: the client got the version and sends its conditional write.
    fn occ_send_write(&mut self, handle: Handle) {
        let hop = self.attempts.get(handle).expect("live").hop as usize;
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(self.now.saturating_add(net), Event::OccWrite { attempt: handle });
    }

    /// OCC write: succeeds iff the version read is still current, which then increments.
    fn occ_write(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("live");
        let state = &mut self.hops[a.hop as usize];
        let won = a.occ_version == state.version;
        if won {
            state.version += 1;
        }
        self.send_reply(handle, if won { Reply::Ok } else { Reply::Failed });
    }

    /// The answer an active fault forces at arrival: `Some(None)` for a hang (no answer),
    /// `Some(Some(reply))` for a failure, `None` when the hop serves normally.
    fn fault_reply(&mut self, hop: usize) -> Option<Option<Reply>> {
        let now = self.now;
        for fault in self.spec.faults.iter().filter(|f| f.hop == hop && f.active_at(now)) {
            match fault.kind {
                FaultKind::Outage => return Some(Some(Reply::Failed)),
                FaultKind::Hang => return Some(None),
                FaultKind::Throttle { retry_after } => return Some(Some(Reply::Throttled(retry_after))),
                FaultKind::ErrorRate { p } => {
                    if self.rngs.faults[hop].gen::<f64>() < p {
                        return Some(Some(Reply::Failed));
                    }
                }
                FaultKind::Slow { .. } | FaultKind::Capacity { .. } => {}
            }
        }
        None
    }

    fn effective_workers(&self, hop: usize) -> u32 {
        let now = self.now;
        let limited = self.spec.faults.iter().filter(|f| f.hop == hop && f.active_at(now)).find_map(|f| match f.kind {
            FaultKind::Capacity { workers } => Some(workers),
            _ => None,
        });
        limited.unwrap_or(self.spec.hops[hop].workers)
    }

    fn slow_factor(&self, hop: usize) -> f64 {
        let now = self.now;
        self.spec
            .faults
            .iter()
            .filter(|f| f.hop == hop && f.active_at(now))
            .map(|f| match f.kind {
                FaultKind::Slow { factor } => factor,
                _ => 1.0,
            })
            .product()
    }

    fn start_service(&mut self, handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("served attempt is live");
        let hop = a.hop as usize;
        a.phase = Phase::Service;
        let wait = now - a.arrived_at;
        let state = &mut self.hops[hop];
        state.busy += 1;
        let busy = state.busy;
        let bucket = &mut self.record.hop_series[hop][b];
        bucket.queue_wait_max_ns = bucket.queue_wait_max_ns.max(wait);
        self.record.hops[hop].services_started += 1;
        self.record.hops[hop].queue_wait_ns_sum += u128::from(wait);
        if hop == 0 && now < self.first_fault_start {
            self.prefault_wait_us.record(wait / 1_000).expect("auto-resizing histograms accept any u64");
        }
        let base = self.spec.hops[hop].service.sample(&mut self.rngs.service[hop], busy);
        let factor = self.slow_factor(hop);
        let service = if factor == 1.0 { base } else { (base as f64 * factor).min(u64::MAX as f64) as Nanos };
        self.attempts.get_mut(handle).expect("live").service_ns = service;
        self.record.hops[hop].busy_ns = self.record.hops[hop].busy_ns.saturating_add(service);
        self.queue.push(now.saturating_add(service), Event::ServiceDone { attempt: handle });
    }

    fn on_service_done(&mut self, handle: Handle) {
        let a = self.attempts.get(handle).expect("finishing attempt is live");
        let (hop, payload) = (a.hop as usize, a.payload);
        let spec = &self.spec.hops[hop];
        if spec.effect {
            if payload == Payload::Poison {
                self.finish_job(handle, Reply::Failed);
                return;
            }
            if !self.commit_effect(handle) {
                self.finish_job(handle, Reply::Ok);
                return;
            }
        }
        match spec.downstream_policy.filter(|_| hop + 1 < self.spec.hops.len()) {
            Some(policy) => self.call_downstream(handle, hop + 1, policy),
            None => self.finish_job(handle, Reply::Ok),
        }
    }

    /// Commits the side effect with `SET NX PX` semantics; false when the key was live
    /// (deduplicated: acknowledged without a side effect or a downstream call).
    fn commit_effect(&mut self, handle: Handle) -> bool {
        let now = self.now;
        let a = self.attempts.get(handle).expect("live");
        let (hop, tenant) = (a.hop as usize, a.tenant as usize);
        let store = self.spec.hops[hop].idempotency.as_ref().map(|s| s.ttl);
        let commit = self.commits.entry((a.hop, a.request_id)).or_default();
        let counters = &mut self.record.hops[hop];
        let tc = &mut self.record.tenants[tenant];
        if let Some(ttl) = store {
            if commit.executions > 0 && now < commit.key_expires_at {
                counters.deduplicated += 1;
                tc.deduplicated += 1;
                return false;
            }
            commit.key_expires_at = now.saturating_add(ttl);
            if commit.executions > 0 {
                counters.duplicates_ttl_expired += 1;
                tc.duplicates_ttl_expired += 1;
            }
        } else if commit.executions > 0 {
            counters.duplicates_no_key += 1;
            tc.duplicates_no_key += 1;
        }
        commit.executions += 1;
        counters.executions += 1;
        true
    }

    fn call_downstream(&mut self, parent: Handle, hop: usize, policy: usize) {
        let now = self.now;
        let a = self.attempts.get_mut(parent).expect("live");
        a.phase = Phase::Downstream;
        let deadline = self.spec.policies[policy].deadline;
        let call = Call {
            request_id: a.request_id,
            draw_key: mix64(a.draw_key ^ ((hop as u64) << 48)),
            created_at: now,
            deadline_at: deadline.map_or(Nanos::MAX, |d| now.saturating_add(d)),
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
        let handle = self.calls.insert(call);
        self.budget_on_request(handle);
        self.start_attempt(handle);
    }

    /// The hop is done with an attempt it held a worker for: free the worker, serve the queue,
    /// and send the reply.
    fn finish_job(&mut self, handle: Handle, reply: Reply) {
        let hop = self.attempts.get(handle).expect("live").hop as usize;
        self.hops[hop].busy -= 1;
        while self.hops[hop].busy < self.effective_workers(hop) {
            let Some(next) = self.hops[hop].queue.pop() else { break };
            self.start_service(next);
        }
        self.send_reply(handle, reply);
    }

    fn send_reply(&mut self, handle: Handle, reply: Reply) {
        let now = self.now;
        let b = self.bucket();
        let a = self.attempts.get_mut(handle).expect("replying attempt is live");
        let hop = a.hop as usize;
        a.phase = Phase::Replying;
        a.reply = reply;
        self.hops[hop].in_flight -= 1;
        let bucket = &mut self.record.hop_series[hop][b];
        if reply == Reply::Ok {
            bucket.successes += 1;
            self.record.hops[hop].ok_replies += 1;
        } else {
            bucket.failures += 1;
        }
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        self.queue.push(now.saturating_add(net), Event::ReplyArrive { attempt: handle });
    }

    /// A hung hop never answers: the attempt ends on the server side without a reply.
    fn drop_unanswered(&mut self, handle: Handle) {
        let a = self.attempts.get_mut(handle).expect("live");
        a.phase = Phase::Done;
        self.hops[a.hop as usize].in_flight -= 1;
        if !a.caller_waiting {
            self.attempts.remove(handle);
        }
    }

    fn on_reply_arrive(&mut self, handle: Handle) {
        let a = self.attempts.remove(handle).expect("a reply's attempt is live until it arrives");
        if !a.caller_waiting {
            let counters = &mut self.record.hops[a.hop as usize];
            counters.wasted_work_ns = counters.wasted_work_ns.saturating_add(a.service_ns);
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
            self.attempts.remove(handle);
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
        if call.attempts_made >= policy.attempts_max {
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Attempts));
        }
        if !self.budget_allows_retry(call_handle, failure) {
            self.record.tenants[tenant].retries_denied += 1;
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Budget));
        }
        let call = self.calls.get_mut(call_handle).expect("caller of a live call");
        let retry = call.attempts_made;
        let rng = &mut self.rngs.jitter[call.hop as usize];
        rng.set_word_pos(jitter_position(call.draw_key, retry));
        let backoff = if failure == FailureKind::Throttling {
            policy.delay_after_throttle(retry, &mut call.jitter, rng)
        } else {
            policy.delay_before_retry(retry, &mut call.jitter, rng)
        };
        if call.hop == 0 {
            if let Some(samples) = self.record.retry_delays_ns.get_mut(retry as usize - 1) {
                if samples.len() < RETRY_DELAY_SAMPLES_MAX {
                    samples.push(backoff);
                }
            }
        }
        let delay = policy.apply_retry_after(backoff, retry_after);
        let at = now.saturating_add(delay);
        if at >= call.deadline_at {
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Deadline));
        }
        self.queue.push(at, Event::AttemptStart { call: call_handle });
    }

    /// The budget and breaker instances of a call's policy, keyed by their scopes.
    fn scope_keys(&self, call: &Call) -> (Option<ScopeKey>, Option<ScopeKey>) {
        let policy = &self.spec.policies[call.policy as usize];
        let key = |scope| scope_key(scope, call.policy, call.tenant, call.client);
        (policy.budget.as_ref().map(|b| key(b.scope)), policy.breaker.as_ref().map(|b| key(b.scope)))
    }

    fn budget_on_request(&mut self, call_handle: Handle) {
        let call = self.calls.get(call_handle).expect("live");
        let (Some(key), _) = self.scope_keys(call) else { return };
        let kind = &self.spec.policies[call.policy as usize].budget.as_ref().expect("keyed").kind;
        let state = self.budgets.entry(key).or_insert_with(|| kind.new_state());
        kind.on_request(state, self.now);
    }

    /// Breaker open (or half-open without probes left), or adaptive throttling's coin says no.
    fn rejected_locally(&mut self, call_handle: Handle) -> bool {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec)) = (breaker_key, policy.breaker.as_ref()) {
            let state = self.breakers.entry(key).or_insert_with(|| spec.new_state());
            if !spec.allow(state, now) {
                return true;
            }
        }
        if let (Some(key), Some(spec)) = (budget_key, policy.budget.as_ref()) {
            let state = self.budgets.entry(key).or_insert_with(|| spec.kind.new_state());
            let p = spec.kind.local_reject_probability(state, now);
            if p > 0.0 && self.rngs.faults[call.hop as usize].gen::<f64>() < p {
                return true;
            }
        }
        false
    }

    fn budget_on_failure(&mut self, call_handle: Handle, sent: bool) {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec), true) = (breaker_key, policy.breaker.as_ref(), sent) {
            let state = self.breakers.entry(key).or_insert_with(|| spec.new_state());
            spec.record(state, now, false);
        }
        if let (Some(key), Some(spec)) = (budget_key, policy.budget.as_ref()) {
            let state = self.budgets.entry(key).or_insert_with(|| spec.kind.new_state());
            spec.kind.on_failure(state);
        }
    }

    fn budget_allows_retry(&mut self, call_handle: Handle, failure: FailureKind) -> bool {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let (Some(key), _) = self.scope_keys(call) else { return true };
        let spec = self.spec.policies[call.policy as usize].budget.as_ref().expect("keyed");
        let state = self.budgets.entry(key).or_insert_with(|| spec.kind.new_state());
        let paid = spec.kind.try_retry(state, now, failure);
        if let Some(cost) = paid {
            self.calls.get_mut(call_handle).expect("live").last_cost = Some(cost);
        }
        paid.is_some()
    }

    /// A reply that is not a failure: a success feeds the budget; both count as healthy calls
    /// for the breaker (a 4xx is the caller's fault, not the server's).
    fn budget_on_success(&mut self, call_handle: Handle, succeeded: bool) {
        let now = self.now;
        let call = self.calls.get(call_handle).expect("live");
        let last_cost = call.last_cost;
        let (budget_key, breaker_key) = self.scope_keys(call);
        let policy = &self.spec.policies[call.policy as usize];
        if let (Some(key), Some(spec)) = (breaker_key, policy.breaker.as_ref()) {
            let state = self.breakers.entry(key).or_insert_with(|| spec.new_state());
            spec.record(state, now, true);
        }
        if let (Some(key), Some(spec), true) = (budget_key, policy.budget.as_ref(), succeeded) {
            let state = self.budgets.entry(key).or_insert_with(|| spec.kind.new_state());
            spec.kind.on_success(state, now, last_cost);
        }
    }

    fn end_call(&mut self, call_handle: Handle, end: CallEnd) {
        let call = self.calls.remove(call_handle).expect("ending a live call");
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

    fn end_request(&mut self, call: &Call, end: CallEnd) {
        let now = self.now;
        let b = self.bucket();
        let ti = call.tenant as usize;
        let t = &mut self.record.tenants[ti];
        let tb = &mut self.record.tenant_series[ti][b];
        match end {
            CallEnd::Succeeded => {
                t.succeeded += 1;
                tb.successes += 1;
                t.latency_us.record((now - call.created_at) / 1_000).expect("auto-resizing histograms accept any u64");
            }
            CallEnd::Rejected => {
                t.rejected += 1;
                tb.failures += 1;
            }
            CallEnd::Dlq(reason) => {
                t.dlq += 1;
                t.dlq_deadline += u64::from(reason == DlqReason::Deadline);
                t.dlq_budget += u64::from(reason == DlqReason::Budget);
                tb.failures += 1;
            }
        }
        self.record.completion_time_ns = now;
        self.schedule_next_request(call.tenant, call.client);
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
            Arrival::Poisson { .. } | Arrival::Profile { .. } => return,
        };
        let at = self.now.saturating_add(think);
        if at < self.spec.horizon {
            self.queue.push(at, Event::ClientNext { tenant, client });
        }
    }

    /// Closes the books: in-flight counts, the conservation check, derived series.
    pub fn finish(mut self) -> RunRecord {
        // Requests not yet terminal are the ones the horizon (or a run limit) cut.
        let in_flight: Vec<u64> =
            self.record.tenants.iter().map(|t| t.requests - t.succeeded - t.rejected - t.dlq).collect();
        let live_top = self.count_live_top_calls();
        assert_eq!(
            in_flight.iter().sum::<u64>(),
            live_top,
            "conservation violated: requests ≠ succeeded + rejected + dlq + in_flight (scenario {})",
            self.spec.name
        );
        self.record.in_flight = in_flight;
        self.fill_in_flight_series();
        self.record.prefault_wait_p99_ns =
            (!self.prefault_wait_us.is_empty()).then(|| self.prefault_wait_us.value_at_quantile(0.99) * 1_000);
        self.record
    }

    /// Live calls made by clients (not by hops): the simulation's own count of unfinished
    /// requests, checked against the counters' in conservation.
    fn count_live_top_calls(&self) -> u64 {
        self.calls.iter().filter(|c| c.parent.is_none()).count() as u64
    }

    fn fill_in_flight_series(&mut self) {
        for ti in 0..self.spec.tenants.len() {
            let mut live: i64 = 0;
            let series = &mut self.record.tenant_series[ti];
            for bucket in series.iter_mut() {
                live += i64::from(bucket.arrivals) - i64::from(bucket.successes) - i64::from(bucket.failures);
                debug_assert!(live >= 0);
                bucket.in_flight = live.max(0) as u32;
            }
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
