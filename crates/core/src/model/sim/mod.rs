//! The simulation of one replication: clients, calls, attempts and hops on the event queue.
//!
//! A *call* is one caller's effort to get an answer from one hop: the client's call to hop 0,
//! or hop h's call to hop h+1 while it serves an attempt. A call makes *attempts*; each attempt
//! is also the job the hop works on. The caller's attempt ends at the first of reply and timeout;
//! the hop keeps working on attempts whose caller gave up (wasted work, duplicates).

mod accounting;
mod autoscale;
mod balancer;
mod budgets;
mod cache;
mod cache_state;
mod cancel;
mod cancel_action;
mod delay_samples;
mod discipline;
mod graph;
mod hedge;
mod hedge_state;
mod history;
mod hop_queue;
mod late_reply;
mod links;
mod occ;
mod overload_state;
mod plain;
mod pool;
mod pool_state;
mod replicas;
mod run_ahead;
mod scoped;
mod server;
pub mod split;

pub use replicas::replica_state_bytes;

use super::arrivals::{first_requests, OpenLoop};
use super::budget::FailureKind;
use super::fault::FaultKind;
use super::policy::{DeadlineMode, JitterState};
use super::spec::{Arrival, SimSpec};
use crate::engine::{mix64, stream, stream_key, EventQueue, Handle, KeyedDraws, Nanos, Slab, StreamKind};
use crate::metrics::{DlqReason, HopBucket, Latencies, RunRecord};
use hop_queue::HopQueue;
use overload_state::OverloadState;
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
    /// Retryable 5xx (error, poison, downstream exhausted, a crash resetting the work in service).
    Failed,
    /// Retryable, and refused before any work began: the connection was refused (an outage) or
    /// the hop's overload control turned the attempt away (shed, queue full, admission limit,
    /// dropped from the queue) — what Finagle calls a NACK. Every policy treats it as `Failed`
    /// but one with `requeue`, which sends it again at once ([`Simulation::requeue`]).
    Refused,
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
    /// A client's call gets its reply (or timeout) once its process is free of the work queued
    /// before it ([`Simulation::caller_sees`], `ClientTiming::work`).
    ClientSees {
        call: Handle,
        reply: Reply,
    },
    /// A call's retry timer fired: the call rode in this event, out of the slab, while it waited
    /// (see [`Simulation::queue_retry`]); it goes back into the slab and starts its attempt.
    Retry {
        call: Call,
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
    /// Active health check: the balancer of hop `hop` probes its replicas.
    Probe {
        hop: u16,
    },
    /// A call waiting for a connection of hop `hop`'s pool reaches its acquire timeout.
    PoolTimeout {
        hop: u16,
    },
    /// Autoscaling: the controller of a hop decides (`sim::autoscale`).
    AutoscaleTick {
        hop: u16,
    },
    /// Autoscaling: launched units of a hop start serving.
    CapacityReady {
        hop: u16,
        units: u32,
    },
    /// An attempt's hedge delay passed: send a hedge if it is still unanswered (`sim/hedge.rs`).
    HedgeFire {
        attempt: Handle,
    },
    /// A caller's cancel reaches the hop of the attempt it gave up on (`sim/cancel.rs`).
    CancelArrive {
        attempt: Handle,
    },
    /// A crash of hop `hop` starts: the jobs it has waiting on their downstream calls stop
    /// (`sim/graph.rs`).
    CrashDownstream {
        hop: u16,
    },
    /// A `capacity` fault of hop `hop` ends: its workers back in force take queued attempts.
    CapacityRestored {
        hop: u16,
    },
}

#[derive(Clone, Copy, Debug)]
struct Call {
    request_id: u64,
    /// Identifies the call's jitter draws (see [`Simulation::caller_sees`] and `KeyedDraws`).
    draw_key: u64,
    created_at: Nanos,
    deadline_at: Nanos,
    /// The attempt this call was made for ([`NO_PARENT`] for a client's call; see [`Call::parent`]).
    parent: Handle,
    client: u32,
    attempts_made: u32,
    tenant: u16,
    hop: u16,
    policy: u16,
    payload: Payload,
    jitter: JitterState,
    /// The failure the last retry paid the budget for, if it paid (AWS refunds its cost on
    /// success, reading the cost back from its budget kind). One byte where a flag and the cost took nine.
    paid: Option<FailureKind>,
    /// Attempts of `attempts_made` that were requeues (`policy.requeue`): they do not count
    /// against `max_attempts` and add no backoff.
    requeues: u16,
    /// Requeues left in the current try ([`REQUEUES_UNSET`] until the try's first attempt sets
    /// them from the budget's balance; always 0 under a policy without `requeue`).
    requeues_left: u16,
    /// The client process has done its work on this call's next attempt
    /// ([`Simulation::wait_for_client_work`]); always false for a hop's call.
    worked: bool,
}

/// The `parent` of a call no attempt made (a client's). Kept out of an `Option` so that a call
/// fits in 80 bytes with its slab slot's generation (88 before this and the one-word jitter
/// state: 104): every retry reads its call from a random slot, so each byte is memory traffic.
const NO_PARENT: Handle = Handle::NONE;

/// A call's `requeues_left` before its try's first attempt has read the budget's balance.
const REQUEUES_UNSET: u16 = u16::MAX;

/// A new try's `requeues_left`: [`REQUEUES_UNSET`] under a policy that requeues (its first
/// attempt sizes them), 0 under any other, whose attempts then never look at the policy for it.
fn requeues_unset(policy: &crate::model::RetryPolicy) -> u16 {
    if policy.requeue {
        REQUEUES_UNSET
    } else {
        0
    }
}

/// Finagle's cap on one request's requeues, a share of the budget's balance when the request (a
/// try of it) starts (`Retries.MaxRequeuesPerReq`, "we don't want requeues to eat the entire
/// budget").
const REQUEUES_PER_BALANCE: f64 = 0.2;

impl Call {
    /// The attempt this call was made for, `None` for a client's call.
    fn parent(&self) -> Option<Handle> {
        (self.parent != NO_PARENT).then_some(self.parent)
    }

    /// Tries of the retry policy so far: the attempts made less the requeues among them.
    fn tries(&self) -> u32 {
        self.attempts_made - u32::from(self.requeues)
    }
}

#[derive(Clone)]
struct Attempt {
    call: Handle,
    request_id: u64,
    /// The call's draw key mixed with the attempt number: keys the draws of downstream calls.
    draw_key: u64,
    arrived_at: Nanos,
    service_ns: Nanos,
    /// When the caller gives up on this attempt (its timeout, bounded by its call's deadline):
    /// what the hop's discipline may drop it at, and what a propagated deadline hands to the
    /// hop's own downstream call.
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
    /// The attempt claimed its request's idempotency key and must complete or release it.
    holds_key: bool,
    /// The replica serving it (index into `Simulation::hops`), set when it arrives.
    server: u32,
    /// Progress of the hop's downstream calls for this job (`sim::graph`).
    calls: graph::JobCalls,
    // Hedging and cancellation.
    /// When the caller sent it (attempt latency for quantile hedges).
    sent_at: Nanos,
    /// When its service started (the part spent when it is cancelled in service).
    service_start: Nanos,
    /// Its caller stopped waiting because another copy answered first (wasted work: hedge).
    lost_race: bool,
    /// It counts in the effect history's live references of its request: only once its caller
    /// stopped waiting (see [`Simulation::stop_waiting`]); before, its call keeps the request live.
    retained: bool,
}

/// One replica of a hop (a hop without `replicas` is one replica).
#[derive(Clone, Default)]
struct HopState {
    busy: u32,
    in_flight: u32,
    queue: HopQueue,
    overload: OverloadState,
    /// OCC register version.
    version: u64,
    /// Its hop, and its index among the hop's replicas.
    hop: u16,
    replica: u32,
    /// Workers serving (the spec's, moved by autoscaling; a `capacity` fault overrides it).
    workers: u32,
    /// The autoscaling controller, for hops with `autoscale`.
    scaler: Option<Box<autoscale::Scaler>>,
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

#[derive(Clone)]
struct Rngs {
    arrivals: Vec<ChaCha8Rng>,
    payload: Vec<ChaCha8Rng>,
    service: Vec<ChaCha8Rng>,
    network: Vec<ChaCha8Rng>,
    faults: Vec<ChaCha8Rng>,
    /// Keys of the jitter draws per called hop (random access by draw key and retry).
    jitter: Vec<u64>,
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
            jitter: (0..hops).map(|i| stream_key(seed, replication, StreamKind::Jitter, i as u32)).collect(),
            throttle: many(StreamKind::Throttle, hops),
        }
    }
}

/// One replication of one scenario variant.
#[derive(Clone)]
pub struct Simulation<'a> {
    spec: &'a SimSpec,
    queue: EventQueue<Event>,
    now: Nanos,
    /// The time bucket `now` falls in, and when the next one starts (see [`Simulation::bucket`]).
    bucket_now: usize,
    bucket_until: Nanos,
    /// Some hop has a connection pool (without, no call looks for one).
    any_pool: bool,
    /// Some policy requeues refused attempts (`policy.requeue`): the requeue bookkeeping runs.
    any_requeue: bool,
    /// Some tenant's `client_timing` shifts its retries (`ClientTiming::shifts_retries`).
    any_client_timing: bool,
    /// Some tenant's process works on each attempt (`ClientTiming::work`).
    any_client_work: bool,
    /// Per tenant: when its client process is free of the work on the attempts before (see
    /// [`Simulation::wait_for_client_work`]).
    client_free_at: Vec<Nanos>,
    /// Per hop: an attempt arriving in the event that sent it is answered in place, without a
    /// slab slot, when the hop answers it at once ([`Simulation::arrive_in_place`]): no network
    /// delay either way (so the reply is in the same instant), no `lost_reply` fault that could
    /// keep it waiting for its timeout, and no cancellation or hedging that could reach it by
    /// its handle.
    answers_in_place: Vec<bool>,
    calls: Slab<Call>,
    /// Calls riding in their `Retry` events, out of `calls` ([`Simulation::queue_retry`]).
    calls_riding: usize,
    attempts: Slab<Attempt>,
    /// Per replica of every hop, hop by hop (see [`replicas`]).
    hops: Vec<HopState>,
    /// Per hop: its balancer.
    lbs: Vec<balancer::Lb>,
    /// Per hop: the connection pool of its downstream calls (unused without `pool`).
    pools: Vec<pool_state::PoolState>,
    /// Per hop: where its replicas start in `record.replicas`.
    replica_record_start: Vec<usize>,
    /// Side-effect history per hop of the live requests (see [`history`]).
    history: history::EffectHistory,
    /// Deliveries waiting for an in-progress key (`in_progress = "wait"`), by (hop, request id),
    /// in arrival order. Only probed by key, never iterated.
    waiters: HashMap<(usize, u64), Vec<Handle>>,
    /// Master seed and replication, for the messages of internal assertions.
    seed: u64,
    replication: u64,
    /// Budget and breaker states by scope.
    states: scoped::States,
    /// Requests each herd client sent (only for herds of more than one request per client).
    requests_sent: Vec<Vec<u32>>,
    request_id_next: u64,
    rngs: Rngs,
    record: RunRecord,
    /// Hop 0's queue waits that started before `baseline_until`: the recovery baseline
    /// (`RunRecord::prefault_wait_p99_ns`).
    prefault_wait_us: Latencies,
    /// The first trigger's start; 0 without a trigger, where recovery is not observable and no
    /// baseline is kept (it was a second latency sample per request that nothing read).
    baseline_until: Nanos,
    first_fault_start: Nanos,
    /// The arrival process of each open-loop tenant (None for herds and closed loops).
    open_loop: Vec<Option<OpenLoop>>,
    /// Hops with an autoscaling controller (empty: no autoscaling work per event).
    scaled_hops: Vec<u16>,
    /// Cache hops' stores (None for the other hops; see [`cache`] and [`cache_state`]).
    caches: Vec<Option<cache_state::CacheState>>,
    /// Which attempts a call is waiting on and which call an attempt made downstream, kept only
    /// when some policy hedges or cancels (`sim/links.rs`).
    links: links::Links,
    /// Hedge tokens and latency quantiles per (policy, hop) (`sim/hedge_state.rs`).
    hedging: hedge_state::Hedging,
    /// Retries simulated ahead of the clock while a fault refuses them (`sim/run_ahead.rs`).
    ahead: run_ahead::RunAhead,
    /// The retry-delay samples of the lowest request ids (`delay_samples::DelaySamples`).
    delay_samples: delay_samples::DelaySamples,
    /// Events show what they will touch so it loads early ([`Simulation::prefetch_pays`]).
    prefetching: bool,
    /// The scenario has at least [`PREFETCH_CLIENTS_MIN`] clients.
    many_clients: bool,
}

/// Clients from which per-client state is worth loading ahead ([`Simulation::prefetch_pays`]).
const PREFETCH_CLIENTS_MIN: u64 = 100_000;
/// Slab slots (calls and attempts) from which loading them ahead pays.
const PREFETCH_SLOTS_MIN: usize = 1 << 15;
/// The loop asks again whether prefetching pays every 1,024 events.
const PREFETCH_RECHECK_MASK: u64 = 1023;

thread_local! {
    /// The stop request of the runs on this thread ([`set_stop_flag`]).
    static STOP: std::cell::RefCell<Option<std::sync::Arc<std::sync::atomic::AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Makes the runs on this thread stop early (cut, `stopped on request`) once `flag` is set: the
/// Python package sets it on Ctrl-C. A run reads it every [`STOP_CHECK_MASK`] + 1 events.
pub fn set_stop_flag(flag: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>) {
    STOP.with(|s| *s.borrow_mut() = flag);
}

/// This thread's stop flag ([`set_stop_flag`]), for the threads a runner starts.
pub fn stop_flag() -> Option<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    STOP.with(|s| s.borrow().clone())
}

/// A run asks whether it should stop when its event count is a multiple of this plus one: a
/// thread-local read every 4,096 events, a mask test on the others.
pub const STOP_CHECK_MASK: u64 = 4095;

/// Whether this thread's runs were asked to stop ([`set_stop_flag`]).
#[cold]
#[inline(never)]
fn stop_requested() -> bool {
    STOP.with(|s| s.borrow().as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed)))
}

/// Runs replication `replication` of `spec` under master seed `seed`.
///
/// A scenario that uses none of the model's optional features runs on the plain served path
/// (`sim/plain.rs`), whose record is the general loop's value for value; [`run_general`] runs
/// any scenario on the general loop.
pub fn run(spec: &SimSpec, seed: u64, replication: u64) -> RunRecord {
    if plain::fits(spec) {
        return plain::run(spec, seed, replication);
    }
    run_general(spec, seed, replication)
}

/// Whether [`run`] takes the plain served path for `spec` (its record is the general loop's either
/// way; the tests use this to know which path they compare).
pub fn takes_plain_path(spec: &SimSpec) -> bool {
    plain::fits(spec)
}

/// Runs replication `replication` of `spec` under master seed `seed` on the general event loop,
/// whatever the scenario (the tests and benches compare it with [`run`]).
pub fn run_general(spec: &SimSpec, seed: u64, replication: u64) -> RunRecord {
    let mut sim = Simulation::new(spec, seed, replication);
    sim.run_to_end();
    sim.finish()
}

impl<'a> Simulation<'a> {
    /// Prepares a run; nothing is simulated until [`Simulation::run_to_end`].
    pub fn new(spec: &'a SimSpec, seed: u64, replication: u64) -> Self {
        let buckets = spec.bucket_count();
        let (replica_records, replica_record_start) = Simulation::replica_records(spec, buckets);
        let mut bases = Vec::with_capacity(spec.hops.len());
        let mut servers = Vec::new();
        for (hop, h) in spec.hops.iter().enumerate() {
            bases.push(servers.len() as u32);
            servers.extend((0..h.replicas.count).map(|replica| HopState {
                queue: HopQueue::new(h.fair, spec.tenants.len(), h.overload.retry_priority, h.overload.discipline),
                overload: OverloadState::new(&h.overload),
                hop: hop as u16,
                replica,
                workers: h.workers,
                ..HopState::default()
            }));
        }
        let lbs = spec
            .hops
            .iter()
            .enumerate()
            .map(|(hop, h)| balancer::Lb::new(&h.replicas, h.replicas_at_start(), bases[hop], seed, replication, hop))
            .collect();
        let mut record = RunRecord::empty(spec.hops.len(), spec.tenants.len(), buckets);
        for (counters, t) in record.tenants.iter_mut().zip(&spec.tenants) {
            counters.latency_us.reserve_for(super::arrivals::tenant_requests(spec, t));
        }
        for (counters, h) in record.hops.iter_mut().zip(&spec.hops) {
            counters.pool = h.pool.map(|_| Box::default());
        }
        record.replicas = replica_records;
        let requests_sent = spec
            .tenants
            .iter()
            .map(|t| match t.arrival {
                // Counted only to know when a client is done; with one request each it is done
                // after its first (and a random access per first request is saved).
                Arrival::Herd { requests_per_client, .. } if requests_per_client > 1 => vec![0; t.clients as usize],
                Arrival::Herd { .. }
                | Arrival::Poisson { .. }
                | Arrival::Closed { .. }
                | Arrival::Profile { .. }
                | Arrival::Trace(_)
                | Arrival::Ramp { .. } => Vec::new(),
            })
            .collect();
        let answers_in_place: Vec<bool> = (0..spec.hops.len()).map(|hop| answers_in_place(spec, hop)).collect();
        let first_trigger = spec.first_trigger_start();
        Simulation {
            spec,
            queue: EventQueue::new(),
            now: 0,
            bucket_now: 0,
            bucket_until: spec.bucket,
            any_pool: spec.hops.iter().any(|h| h.pool.is_some()),
            any_requeue: spec.policies.iter().any(|p| p.requeue),
            any_client_timing: spec.tenants.iter().any(|t| t.timing.shifts_retries()),
            any_client_work: spec.tenants.iter().any(|t| t.timing.work > 0),
            client_free_at: vec![0; spec.tenants.len()],
            ahead: run_ahead::RunAhead::new(spec, &answers_in_place),
            answers_in_place,
            calls: Slab::default(),
            calls_riding: 0,
            attempts: Slab::default(),
            hops: servers,
            lbs,
            pools: spec.hops.iter().map(|_| pool_state::PoolState::default()).collect(),
            replica_record_start,
            history: history::EffectHistory::new(spec.hops.len(), spec.hops.iter().any(|h| h.effect)),
            waiters: HashMap::new(),
            seed,
            replication,
            states: scoped::States::new(spec),
            requests_sent,
            request_id_next: 0,
            rngs: Rngs::new(seed, replication, spec.tenants.len(), spec.hops.len()),
            record,
            prefault_wait_us: Latencies::new(),
            baseline_until: first_trigger.unwrap_or(0),
            first_fault_start: first_trigger.unwrap_or(Nanos::MAX),
            open_loop: spec.tenants.iter().map(|t| OpenLoop::new(&t.arrival)).collect(),
            scaled_hops: Vec::new(),
            caches: cache_state::CacheState::for_hops(spec, seed, replication),
            links: links::Links::new(spec),
            hedging: hedge_state::Hedging::default(),
            delay_samples: delay_samples::DelaySamples::new(),
            prefetching: true,
            many_clients: spec.tenants.iter().map(|t| u64::from(t.clients)).sum::<u64>() >= PREFETCH_CLIENTS_MIN,
        }
    }

    /// The same run with every retry queued (none run ahead of the clock, `sim/run_ahead.rs`):
    /// for the tests that compare the two, and the benches that time them.
    pub fn without_run_ahead(mut self) -> Self {
        self.ahead.enabled = false;
        self
    }

    /// Processes events until none is left, the drain limit passes, or `max_events` is hit.
    pub fn run_to_end(&mut self) {
        let mut firsts = first_requests(&self.spec.tenants, &mut self.rngs.arrivals);
        self.schedule_poisson_starts();
        self.schedule_probes();
        self.schedule_capacity_restores();
        self.schedule_downstream_crashes();
        self.start_autoscaling();
        let mut cursor = 0;
        // Budget or breaker states to load ahead of first requests (below).
        let has_states = self.spec.policies.iter().any(|p| p.budget.is_some() || p.breaker.is_some());
        // Asked now, not first at the 1,024th event: a short run's first events were a twentieth
        // of its time, and hints that do not pay were most of theirs (docs/PERFORMANCE.md).
        self.prefetching = self.prefetch_pays();
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
            if accounting::cut_before(&mut self.record, self.spec, at, self.now) {
                break;
            }
            self.record.events += 1;
            if take_arrival {
                let (t, tenant, client) = firsts[cursor];
                cursor += 1;
                if cursor == firsts.len() {
                    // The last one: its 16 bytes per client (160 MB at 10M) go back now, for the
                    // calls and attempts the herd queues later, instead of staying to the end.
                    (firsts, cursor) = (Vec::new(), 0);
                }
                // First requests come in time order, their clients at random: a few ahead, start
                // loading the budget and breaker states the request will touch (one per client
                // when client-scoped, in arrays of millions), as `prefetch_next` does for events.
                if let Some(&(_, tenant, client)) = firsts.get(cursor + FIRSTS_AHEAD).filter(|_| has_states) {
                    let policy = self.spec.tenants[tenant as usize].policy as u16;
                    touches!(self).prefetch_states(policy, tenant, client, 0);
                }
                self.advance_to(t);
                self.new_request(tenant, client);
            } else {
                if self.record.events & PREFETCH_RECHECK_MASK == 0 {
                    self.prefetching = self.prefetch_pays();
                }
                if self.prefetching {
                    let touches = touches!(self);
                    let (t, event) = self.queue.pop_hinting(|e| touches.prefetch(e)).expect("peeked");
                    self.advance_to(t);
                    self.prefetch_next();
                    self.dispatch(event);
                } else {
                    let (t, event) = self.queue.pop().expect("peeked");
                    self.advance_to(t);
                    self.dispatch(event);
                }
            }
        }
        if self.record.truncated.is_none() {
            self.check_pools_drained();
            self.check_drained();
        }
    }

    /// Whether loading state ahead pays: with many clients (their budget, breaker and history
    /// states span megabytes) or many slab slots a retry's state is a cache miss otherwise; a
    /// small run's state stays in cache, and the hints only cost (about 8% of M/M/1's time).
    fn prefetch_pays(&self) -> bool {
        self.many_clients || self.calls.slots() + self.attempts.slots() >= PREFETCH_SLOTS_MIN
    }

    /// Starts loading the state the next event will touch while this one is handled: with a
    /// million live calls, the slab slot of a retry's call is a cache miss otherwise.
    /// (The queue also shows the events a few pops ahead, `EventQueue::pop_hinting`.)
    fn prefetch_next(&self) {
        if let Some((_, event)) = self.queue.peek() {
            touches!(self).prefetch(event);
        }
    }

    /// Some call is live: in the slab or riding in its retry event.
    fn calls_live(&self) -> bool {
        !self.calls.is_empty() || self.calls_riding > 0
    }

    fn advance_to(&mut self, t: Nanos) {
        assert!(t >= self.now, "time went backwards: {t} < {}", self.now);
        if !self.scaled_hops.is_empty() {
            self.accumulate_scalers(t);
        }
        self.move_clock(t);
    }

    /// Sets the clock to `t`, not before the current bucket's start, and keeps its bucket.
    #[inline]
    fn move_clock(&mut self, t: Nanos) {
        self.now = t;
        if t >= self.bucket_until {
            (self.bucket_now, self.bucket_until) = bucket_at(t, self.spec.bucket, self.record.hop_series[0].len());
        }
    }

    fn schedule_poisson_starts(&mut self) {
        for (ti, process) in self.open_loop.iter_mut().enumerate() {
            if let Some(at) = process.as_mut().and_then(|p| p.next(0, self.spec.horizon, &mut self.rngs.arrivals[ti])) {
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
            Event::ClientSees { call, .. } if self.links.on && self.calls.get(call).is_none() => {}
            Event::ClientSees { call, reply } => self.caller_sees_now(call, reply),
            Event::Retry { call } => {
                // Back into the slab (its request stayed live: no reference count moves); a
                // free list is last in, first out, so this is the slot freed most recently.
                self.calls_riding -= 1;
                let handle = self.calls.insert(call);
                self.start_attempt(handle);
            }
            Event::AttemptArrive { attempt } => self.on_arrive(attempt),
            Event::ServiceDone { attempt } => self.on_service_done(attempt),
            Event::ReplyArrive { attempt } => self.on_reply_arrive(attempt),
            Event::AttemptTimeout { attempt } => self.on_timeout(attempt),
            Event::OccReadBack { attempt } => self.occ_send_write(attempt),
            Event::OccWrite { attempt } => self.occ_write(attempt),
            Event::Probe { hop } => self.on_probe(hop as usize),
            Event::PoolTimeout { hop } => self.pool_timeout(hop as usize),
            Event::AutoscaleTick { hop } => self.on_autoscale_tick(hop),
            Event::CapacityReady { hop, units } => self.on_capacity_ready(hop, units),
            Event::HedgeFire { attempt } => self.on_hedge_fire(attempt),
            Event::CancelArrive { attempt } => self.cancel_attempt(attempt),
            Event::CrashDownstream { hop } => self.on_crash_downstream(hop as usize),
            Event::CapacityRestored { hop } => self.on_capacity_restored(hop as usize),
        }
    }

    /// The time bucket of `now` (the last one holds everything after it), kept by
    /// [`Simulation::advance_to`]: a 64-bit division per counter update was a measurable share
    /// of an attempt's cost (docs/PERFORMANCE.md).
    fn bucket(&self) -> usize {
        debug_assert_eq!(
            self.bucket_now,
            ((self.now / self.spec.bucket) as usize).min(self.record.hop_series[0].len() - 1)
        );
        self.bucket_now
    }

    fn on_poisson_arrival(&mut self, tenant: u16) {
        let ti = tenant as usize;
        let spec = &self.spec.tenants[ti];
        let rng = &mut self.rngs.arrivals[ti];
        let client = rng.random_range(0..spec.clients);
        let process = self.open_loop[ti].as_mut().expect("only open-loop tenants get arrival events");
        let next = process.next(self.now, self.spec.horizon, rng);
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
            parent: NO_PARENT,
            client,
            attempts_made: 0,
            tenant,
            hop: 0,
            policy: spec.policy as u16,
            payload,
            jitter: JitterState::default(),
            paid: None,
            requeues: 0,
            requeues_left: requeues_unset(policy),
            worked: false,
        };
        let deadline_at = call.deadline_at;
        let handle = self.insert_call(call);
        self.budget_on_request(handle);
        // A first attempt that meets only a refusal goes the way its retries will
        // (`sim/run_ahead.rs`); the check is the one a retry at `now` would pass.
        if self.now < deadline_at {
            if let Some(refused_until) = self.may_run_ahead(self.now, handle) {
                return self.run_ahead(self.now, handle, refused_until, true);
            }
        }
        self.start_attempt(handle);
    }

    /// A client's attempt first waits for its process (`ClientTiming::work`): behind the work on
    /// the attempts that fell due before it, it starts `work` after the process is free, by an
    /// `AttemptStart` event (the call stays in the slab). Whether it was put off.
    fn wait_for_client_work(&mut self, call_handle: Handle) -> bool {
        let now = self.now;
        let call = self.calls.get_mut(call_handle).expect("attempt of a live call");
        let work = self.spec.tenants[call.tenant as usize].timing.work;
        if call.parent != NO_PARENT || work == 0 || std::mem::take(&mut call.worked) {
            return false;
        }
        call.worked = true;
        let free = &mut self.client_free_at[call.tenant as usize];
        *free = (*free).max(now).saturating_add(work);
        let at = *free;
        self.queue.push(at, Event::AttemptStart { call: call_handle });
        true
    }

    fn start_attempt(&mut self, call_handle: Handle) {
        if self.any_client_work && self.wait_for_client_work(call_handle) {
            return;
        }
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
        let tenant = call.tenant;
        if call.requeues_left == REQUEUES_UNSET {
            // A try starts: Finagle sizes its requeues from the budget's balance now.
            let allowance = self.requeue_allowance(call_handle);
            self.calls.get_mut(call_handle).expect("live").requeues_left = allowance;
        }
        if self.rejected_locally(call_handle) {
            self.record.tenants[tenant as usize].local_rejections += 1;
            self.caller_sees(call_handle, Reply::LocalReject);
            return;
        }
        if self.call_is_pooled(call_handle) && !self.acquire_connection(call_handle) {
            return;
        }
        self.send_attempt(call_handle);
    }

    /// Sends the call's next attempt (already counted in `attempts_made`): the attempt's network
    /// delay and timeout. A pooled call comes here once it holds a connection.
    fn send_attempt(&mut self, call_handle: Handle) {
        let now = self.now;
        let b = self.bucket();
        let call = self.calls.get(call_handle).expect("live");
        let (hop, tenant, retry) = (call.hop as usize, call.tenant, call.attempts_made > 1);
        let timeout_at = attempt_timeout_at(self.spec, call, now);
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
            holds_key: false,
            server: 0,
            calls: graph::JobCalls::default(),
            sent_at: now,
            service_start: 0,
            lost_race: false,
            retained: false,
        };
        self.count_attempt(hop, tenant as usize, retry, b);
        let net = self.spec.hops[hop].network.sample(&mut self.rngs.network[hop], 0);
        if net == 0 && self.answers_in_place[hop] {
            return self.arrive_in_place(attempt, timeout_at);
        }
        let handle = self.insert_attempt(attempt);
        if self.links.on {
            self.track_attempt(call_handle, handle, timeout_at);
        }
        if net > 0 {
            self.queue.push(now.saturating_add(net), Event::AttemptArrive { attempt: handle });
        }
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Event::AttemptTimeout { attempt: handle });
        }
        if net == 0 {
            // Event fusion: an attempt with no network delay arrives in this event (see
            // ARCHITECTURE.md, "Same-instant fusion"); its timeout was queued first, as before.
            self.on_arrive(handle);
        }
    }

    /// An attempt that arrives in the event that sent it, at a hop whose replies come back in
    /// the same instant too (`answers_in_place`): when a fault answers it at once (an outage
    /// refusing every attempt of a herd), it never needs a slot in the slab, which is most of
    /// what such an attempt cost (docs/PERFORMANCE.md). Same steps, same order, same counts as
    /// through the slab: the timeout is queued before anything the arrival queues (with a
    /// handle nothing answers to, as the stored attempt's would be stale by then), and the
    /// reply is counted and reaches its caller as `send_reply` and `on_reply_arrive` do.
    fn arrive_in_place(&mut self, mut attempt: Attempt, timeout_at: Nanos) {
        let (hop, call) = (attempt.hop as usize, attempt.call);
        let (srv, answer) = self.enter_hop(hop, attempt.payload);
        if let server::Arrival::Answered(reply) = answer {
            if timeout_at != Nanos::MAX {
                self.queue.push(timeout_at, Event::AttemptTimeout { attempt: Handle::NONE });
            }
            self.count_reply(hop, srv, reply, true);
            debug_assert!(reply != Reply::Ok, "an answer forced at arrival is never a success");
            return self.answer_caller(call, reply);
        }
        attempt.server = srv as u32;
        let handle = self.insert_attempt(attempt);
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Event::AttemptTimeout { attempt: handle });
        }
        self.after_entry(handle, hop, srv, answer);
    }

    fn call_downstream(&mut self, parent: Handle, hop: usize, policy: usize) {
        let now = self.now;
        let a = self.attempts.get_mut(parent).expect("live");
        a.phase = Phase::Downstream;
        let p = &self.spec.policies[policy];
        let own = p.deadline.map_or(Nanos::MAX, |d| now.saturating_add(d));
        let deadline_at = match p.deadline_mode {
            DeadlineMode::PerCall => own,
            DeadlineMode::Propagate => own.min(a.deadline_at),
        };
        let call = Call {
            request_id: a.request_id,
            draw_key: mix64(a.draw_key ^ ((hop as u64) << 48)),
            created_at: now,
            deadline_at,
            parent,
            // A hop calling the next one is one client of it (for client-scoped budgets).
            client: u32::MAX - (hop as u32),
            attempts_made: 0,
            tenant: a.tenant,
            hop: hop as u16,
            policy: policy as u16,
            payload: a.payload,
            jitter: JitterState::default(),
            paid: None,
            requeues: 0,
            requeues_left: requeues_unset(p),
            worked: false,
        };
        let handle = self.insert_call(call);
        if self.links.on {
            self.links.add_child(parent, handle);
        }
        self.budget_on_request(handle);
        self.start_attempt(handle);
    }

    fn on_reply_arrive(&mut self, handle: Handle) {
        // The few fields the reply needs, not the whole attempt: moving its 112 bytes out of the
        // slab was a measurable share of every attempt (docs/PERFORMANCE.md).
        let a = self.attempts.get(handle).expect("a reply's attempt is live until it arrives");
        let (call, reply, hop, waiting) = (a.call, a.reply, a.hop as usize, a.caller_waiting);
        let (lost_race, service_ns) = (a.lost_race, a.service_ns);
        let hedged = (self.links.on && waiting).then(|| a.clone());
        self.remove_attempt(handle);
        if !waiting {
            if self.takes_late_reply(call, reply, lost_race) {
                return self.take_late_reply(call, hop);
            }
            let cause = if lost_race { cancel::Waste::Hedge } else { cancel::Waste::TimedOut };
            self.add_wasted(hop, service_ns, cause);
            return;
        }
        if reply == Reply::Ok {
            let b = self.bucket();
            self.record.hops[hop].timely_ok += 1;
            self.record.hop_series[hop][b].timely_ok += 1;
        }
        if let Some(a) = hedged {
            if self.hedge_reply(handle, &a) {
                return;
            }
        }
        self.answer_caller(call, reply);
    }

    /// The caller of `call` gets `reply` after giving back the connection it held. Handing that
    /// connection to a waiting call can, in the same instant, cancel this call's own caller (the
    /// waiter's attempt fails at once, its job fails, and the cancel reaches this call's parent
    /// job): the call is then gone (`cancel_calls`) and its reply is answered to nobody.
    fn answer_caller(&mut self, call: Handle, reply: Reply) {
        // Without a pool nothing runs between the reply and its caller: the call is live, and
        // the lookup below (every reply's cost) is only needed when releasing a connection can
        // start other work that ends the call first.
        if !self.any_pool {
            self.caller_sees(call, reply);
            return;
        }
        self.release_connection(call);
        if self.calls.get(call).is_some() {
            self.caller_sees(call, reply);
        }
    }

    fn on_timeout(&mut self, handle: Handle) {
        if !self.attempts.get(handle).is_some_and(|a| a.caller_waiting) {
            return;
        }
        let a = self.stop_waiting(handle).expect("live");
        let call = a.call;
        // An attempt still on its way has no replica; one whose reply is on its way was counted.
        let (hop, server, inside) =
            (a.hop as usize, a.server as usize, !matches!(a.phase, Phase::Network | Phase::Replying));
        if inside && self.lbs[hop].count > 1 {
            self.replica_timed_out(hop, server);
        }
        let a = self.attempts.get(handle).expect("live");
        if a.phase == Phase::Done {
            self.remove_attempt(handle);
        }
        if self.links.on && self.gave_up(handle, call) {
            return;
        }
        self.answer_caller(call, Reply::Timeout);
    }

    /// The caller of `call_handle` sees `reply`: at once, unless it is a client whose process
    /// is still busy with the work on attempts that fell due before (`ClientTiming::work`):
    /// then when that work is done, so that every reply arriving during one busy spell is seen
    /// at the same instant, as an event loop sees what arrived while it was busy.
    fn caller_sees(&mut self, call_handle: Handle, reply: Reply) {
        if self.any_client_work {
            let call = self.calls.get(call_handle).expect("a live call sees its reply");
            let free = self.client_free_at[call.tenant as usize];
            if call.parent == NO_PARENT && free > self.now {
                self.queue.push(free, Event::ClientSees { call: call_handle, reply });
                return;
            }
        }
        self.caller_sees_now(call_handle, reply);
    }

    fn caller_sees_now(&mut self, call_handle: Handle, reply: Reply) {
        let Some((failure, retry_after)) = failure_of(reply) else {
            self.budget_on_success(call_handle, reply == Reply::Ok);
            let end = if reply == Reply::Ok { CallEnd::Succeeded } else { CallEnd::Rejected };
            return self.end_call(call_handle, end);
        };
        self.budget_on_failure(call_handle, reply != Reply::LocalReject, failure);
        if self.any_requeue
            && reply == Reply::Refused
            && self.spec.policies[self.calls.get(call_handle).expect("live").policy as usize].requeue
        {
            return self.requeue(call_handle);
        }
        let (now, spec, jitter) = (self.now, self.spec, &self.rngs.jitter);
        let call = self.calls.get_mut(call_handle).expect("caller of a live call");
        let (tenant, hop, retry, request_id) = (call.tenant as usize, call.hop as usize, call.tries(), call.request_id);
        let draws = jitter_item_key(jitter, call);
        let (mut at, wait) = match next_retry(spec, draws, call, now, failure, retry_after) {
            Ok(next) => next,
            Err(reason) => return self.end_call(call_handle, CallEnd::Dlq(reason)),
        };
        if self.any_client_timing && call.parent == NO_PARENT && spec.tenants[tenant].timing.shifts_retries() {
            let timing = &spec.tenants[tenant].timing;
            // The client process fires the retry later than its backoff says (`ClientTiming`):
            // how busy it is is the attempts its tenant sent in this bucket so far, per second.
            let sent = self.record.tenant_series[tenant][self.bucket_now].attempts;
            at = at.saturating_add(timing.added(f64::from(sent) / crate::engine::time::ns_to_secs(spec.bucket)));
            if at >= call.deadline_at {
                return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Deadline));
            }
        }
        if !self.budget_allows_retry(call_handle, failure) {
            self.record.tenants[tenant].retries_denied += 1;
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Budget));
        }
        self.count_retry_scheduled(hop, retry, request_id, wait);
        if self.any_requeue {
            let call = self.calls.get_mut(call_handle).expect("live");
            call.requeues_left = requeues_unset(&spec.policies[call.policy as usize]);
        }
        self.schedule_retry(at, call_handle);
    }

    /// Finagle's `RequeueFilter`: an attempt refused before any work (`Reply::Refused`) goes
    /// again at once, with no backoff and outside `max_attempts`, while this try has requeues
    /// left (`ceil(0.2 × balance)` when it started) and the budget pays for one. Otherwise
    /// Finagle marks the failure non-retryable: the policy's retries do not take it up either,
    /// and the call ends, refused by its budget.
    fn requeue(&mut self, call_handle: Handle) {
        let call = self.calls.get(call_handle).expect("live");
        let (tenant, hop, left) = (call.tenant as usize, call.hop as usize, call.requeues_left);
        // (A call's requeues are counted in 16 bits: one that has made 65,535 stops there.)
        if left == 0 || call.requeues == u16::MAX || !self.budget_allows_retry(call_handle, FailureKind::Transient) {
            self.record.tenants[tenant].retries_denied += 1;
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Budget));
        }
        let call = self.calls.get_mut(call_handle).expect("live");
        call.requeues_left = left - 1;
        call.requeues += 1;
        let b = self.bucket();
        // A retry scheduled with no wait; not a backoff delay, so not among the delay samples.
        self.record.hop_series[hop][b].retries_scheduled += 1;
        self.schedule_retry(self.now, call_handle);
    }

    /// A retry is scheduled (see [`count_retry_scheduled_in`]).
    fn count_retry_scheduled(&mut self, hop: usize, retry: u32, request_id: u64, wait: Nanos) {
        let b = self.bucket();
        let bucket = &mut self.record.hop_series[hop][b];
        count_retry_scheduled_in(&mut self.delay_samples, bucket, hop, retry, request_id, wait);
    }

    /// Queues the call's next attempt at `at` (or [`Simulation::schedule_retry`] runs it ahead).
    /// Unless cancellation or hedging may reach the call
    /// by its handle meanwhile (`links.on`), the call leaves the slab and rides in the event:
    /// nothing else holds its handle while it waits (its attempts are answered; an orphaned one
    /// never looks at its call), and the event queue is read in order where a slab slot is a
    /// random access — the 1M-client herd's retries then touch no call slot, which was most of
    /// their time (docs/PERFORMANCE.md). Same instant, same order: the event takes the place the
    /// `AttemptStart` would have, so no result changes.
    fn queue_retry(&mut self, at: Nanos, call_handle: Handle) {
        if self.links.on {
            self.queue.push(at, Event::AttemptStart { call: call_handle });
        } else {
            let call = self.calls.remove(call_handle).expect("a retrying call is live");
            self.calls_riding += 1;
            self.queue.push(at, Event::Retry { call });
        }
    }

    fn end_call(&mut self, call_handle: Handle, end: CallEnd) {
        let call = self.remove_call(call_handle).expect("ending a live call");
        self.budget_on_call_end(&call);
        if self.links.on {
            self.links.forget(call_handle, call.parent());
        }
        if let Some(parent) = call.parent() {
            let reply = match end {
                CallEnd::Succeeded => Reply::Ok,
                CallEnd::Rejected => Reply::Rejected,
                CallEnd::Dlq(_) => Reply::Failed,
            };
            self.call_ended(parent, call.hop as usize, reply);
            return;
        }
        self.end_request(&call, end);
    }

    fn schedule_next_request(&mut self, tenant: u16, client: u32) {
        let ti = tenant as usize;
        let think = match self.spec.tenants[ti].arrival {
            Arrival::Herd { requests_per_client, .. } => {
                let sent = self.requests_sent[ti].get(client as usize).map_or(1, |&sent| sent);
                if sent >= requests_per_client {
                    return;
                }
                0
            }
            Arrival::Closed { think, .. } => think,
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Trace(_) | Arrival::Ramp { .. } => return,
        };
        let at = self.now.saturating_add(think);
        if at < self.spec.horizon {
            self.queue.push(at, Event::ClientNext { tenant, client });
        }
    }
}

/// A [`Touches`] of the simulation's fields (borrowed one by one, so the queue can be popped
/// meanwhile).
macro_rules! touches {
    ($sim:expr) => {
        Touches {
            spec: $sim.spec,
            calls: &$sim.calls,
            attempts: &$sim.attempts,
            states: &$sim.states,
            history: &$sim.history,
        }
    };
}
use touches;

/// What a pending event will touch, so its loading can start early (no effect on results).
struct Touches<'s> {
    spec: &'s SimSpec,
    calls: &'s Slab<Call>,
    attempts: &'s Slab<Attempt>,
    states: &'s scoped::States,
    history: &'s history::EffectHistory,
}

impl Touches<'_> {
    /// Starts loading the call or attempt slot `event` will touch, or for a retry (its call is
    /// in the event) its request's reference count and the client's budget and breaker states:
    /// with client scope, one per client in arrays of millions, a cache miss per retry otherwise.
    fn prefetch(&self, event: &Event) {
        match event {
            Event::AttemptStart { call } | Event::ClientSees { call, .. } => self.calls.prefetch(*call),
            Event::AttemptArrive { attempt }
            | Event::ServiceDone { attempt }
            | Event::ReplyArrive { attempt }
            | Event::AttemptTimeout { attempt } => self.attempts.prefetch(*attempt),
            Event::Retry { call } => {
                self.history.prefetch(call.request_id);
                self.prefetch_states(call.policy, call.tenant, call.client, call.hop)
            }
            // Nothing of these is worth fetching ahead.
            Event::PoissonArrival { .. }
            | Event::ClientNext { .. }
            | Event::OccReadBack { .. }
            | Event::OccWrite { .. }
            | Event::Probe { .. }
            | Event::PoolTimeout { .. }
            | Event::AutoscaleTick { .. }
            | Event::CapacityReady { .. }
            | Event::HedgeFire { .. }
            | Event::CancelArrive { .. }
            | Event::CrashDownstream { .. }
            | Event::CapacityRestored { .. } => {}
        }
    }

    /// Starts loading the budget and breaker states a call of `client` of `tenant` under
    /// `policy` to `hop` will touch.
    fn prefetch_states(&self, policy: u16, tenant: u16, client: u32, hop: u16) {
        let (budget, breaker) = budgets::scope_keys_of(self.spec, policy, tenant, client, hop);
        self.states.prefetch(budget, breaker);
    }
}

/// A retry `retry` of request `request_id` at hop `hop` is scheduled to wait `wait`: its delay
/// sample (a client's call) and the hop's count in the bucket it is scheduled in.
#[inline]
fn count_retry_scheduled_in(
    samples: &mut delay_samples::DelaySamples,
    bucket: &mut HopBucket,
    hop: usize,
    retry: u32,
    request_id: u64,
    wait: Nanos,
) {
    if hop == 0 {
        samples.offer(retry, request_id, wait);
    }
    bucket.retries_scheduled += 1;
}

/// How many first requests ahead [`Simulation::run_to_end`] starts loading a request's state.
const FIRSTS_AHEAD: usize = 4;

/// The time-series bucket of instant `t` among `buckets` buckets of `width` (the last takes
/// everything later), and the instant the next one starts (`Nanos::MAX` in the last).
#[inline]
fn bucket_at(t: Nanos, width: Nanos, buckets: usize) -> (usize, Nanos) {
    let last = buckets - 1;
    let index = ((t / width) as usize).min(last);
    let until = if index == last { Nanos::MAX } else { (t / width + 1).saturating_mul(width) };
    (index, until)
}

/// The failure a reply is, with its Retry-After, or `None` for an answer that ends the call.
#[inline]
fn failure_of(reply: Reply) -> Option<(FailureKind, Option<Nanos>)> {
    match reply {
        Reply::Ok | Reply::Rejected => None,
        Reply::Throttled(after) => Some((FailureKind::Throttling, Some(after))),
        Reply::Timeout => Some((FailureKind::Timeout, None)),
        Reply::Failed | Reply::Refused | Reply::LocalReject => Some((FailureKind::Transient, None)),
    }
}

/// The policy's answer to a failure of the call's last attempt at `now`: when its next attempt
/// goes and how long it waits, or why the call goes to the DLQ instead (its attempts, or a retry
/// past its deadline: checked before any budget is asked, so a retry that would come too late is
/// not paid for). Draws the delay (updating the call's jitter state) from `draws`, the call's
/// [`jitter_item_key`]; the budget is the caller's.
#[inline]
fn next_retry(
    spec: &SimSpec,
    draws: u64,
    call: &mut Call,
    now: Nanos,
    failure: FailureKind,
    retry_after: Option<Nanos>,
) -> Result<(Nanos, Nanos), DlqReason> {
    let (policy, tries) = (&spec.policies[call.policy as usize], call.tries());
    retry_of(policy, draws, tries, &mut call.jitter, call.deadline_at, now, (failure, retry_after))
}

/// [`next_retry`] of a call given by its parts: its policy, its tries so far, its jitter state
/// and its deadline (the plain served path keeps no `Call`).
#[inline]
fn retry_of(
    policy: &crate::model::RetryPolicy,
    draws: u64,
    tries: u32,
    jitter: &mut JitterState,
    deadline_at: Nanos,
    now: Nanos,
    (failure, retry_after): (FailureKind, Option<Nanos>),
) -> Result<(Nanos, Nanos), DlqReason> {
    let rng = &mut KeyedDraws::at(draws, tries);
    let wait = policy.wait_after_failure(tries, failure, retry_after, jitter, rng).ok_or(DlqReason::Attempts)?;
    let at = now.saturating_add(wait);
    if at >= deadline_at {
        return Err(DlqReason::Deadline);
    }
    Ok((at, wait))
}

/// The key of a call's jitter draws. Common random numbers: retry `k` of a call reads the same
/// draws in every variant, keyed by (its hop's jitter key, its draw key, k) without any
/// sequential state (`KeyedDraws`).
#[inline]
fn jitter_item_key(jitter_keys: &[u64], call: &Call) -> u64 {
    KeyedDraws::item_key(jitter_keys[call.hop as usize], call.draw_key)
}

/// When the caller stops waiting for an attempt sent at `now`: its policy's attempt timeout,
/// bounded by the call's deadline.
#[inline]
fn attempt_timeout_at(spec: &SimSpec, call: &Call, now: Nanos) -> Nanos {
    timeout_of(&spec.policies[call.policy as usize], call.deadline_at, now)
}

/// [`attempt_timeout_at`] of a call under `policy` with deadline `deadline_at`.
#[inline]
fn timeout_of(policy: &crate::model::RetryPolicy, deadline_at: Nanos, now: Nanos) -> Nanos {
    policy.attempt_timeout.map_or(deadline_at, |t| now.saturating_add(t).min(deadline_at))
}

/// See [`Simulation::answers_in_place`].
fn answers_in_place(spec: &SimSpec, hop: usize) -> bool {
    let lost_reply = spec.faults.iter().any(|f| f.hop == hop && matches!(f.kind, FaultKind::LostReply { .. }));
    spec.hops[hop].network.is_zero() && !lost_reply && !links::Links::needed(spec)
}

#[cfg(test)]
mod record_size_tests {
    /// Every retry reads its call from a random slab slot: the record must stay within 80 bytes
    /// with its slot's generation (see [`super::NO_PARENT`]); a field added to `Call` should
    /// move a cold one out, not grow the hot path's memory traffic.
    #[test]
    fn a_call_fits_in_80_bytes_with_its_slot() {
        assert_eq!(std::mem::size_of::<super::Call>(), 72);
        let slot = std::mem::size_of::<Option<super::Call>>() + std::mem::size_of::<u32>();
        assert!(slot <= 80, "a call's slot is {slot} bytes");
    }

    /// A retry carries its call (see [`super::Simulation::queue_retry`]): the event is the
    /// call plus nothing (the enum's tag sits in the call's unused bit patterns).
    #[test]
    fn an_event_is_its_call_and_a_queue_entry_80_bytes() {
        assert_eq!(std::mem::size_of::<super::Event>(), std::mem::size_of::<super::Call>());
        assert_eq!(std::mem::size_of::<(crate::engine::Nanos, super::Event)>(), 80);
    }

    /// A token bucket's state is its tokens (the window is only allocated for windowed kinds).
    #[test]
    fn a_budget_state_is_two_words() {
        assert_eq!(std::mem::size_of::<crate::model::budget::BudgetState>(), 16);
    }
}

#[cfg(test)]
mod in_place_tests {
    use crate::scenario::Scenario;

    /// Rule: answering an attempt in place (no slab slot, [`super::Simulation::arrive_in_place`])
    /// is an optimisation only: the record, event for event, is the one the slab path gives. The
    /// scenario has every answer forced at arrival (outage, throttle, error rate, invalid payload)
    /// and what follows it, on a balanced hop, with timeouts whose events then find no attempt.
    #[test]
    fn an_attempt_answered_in_place_records_what_the_slab_path_records() {
        let source = r#"name = "in-place"
horizon = "30s"
[[tenant]]
name = "herd"
clients = 3000
arrival = { kind = "herd", spread = "2s" }
policy = "client"
invalid_fraction = 0.05
[[tenant]]
name = "steady"
clients = 10
arrival = { kind = "poisson", rate_per_s = 200 }
policy = "client"
[policy.client]
jitter = "full"
max_attempts = 6
attempt_timeout = "300ms"
[[hop]]
name = "api"
workers = 2
replicas = 3
balancer = "power_of_two"
service = { dist = "exponential", mean = "2ms" }
[[fault]]
hop = "api"
kind = "outage"
from = "0s"
to = "3s"
[[fault]]
hop = "api"
kind = "throttle"
retry_after = "500ms"
from = "3s"
to = "5s"
[[fault]]
hop = "api"
kind = "error_rate"
p = 0.3
from = "5s"
to = "8s"
"#;
        let scenario = Scenario::from_source("in-place.toml", source, &[]).expect("valid");
        let run = |in_place: bool| {
            let mut sim = super::Simulation::new(&scenario.base, 11, 0);
            assert!(sim.answers_in_place[0], "the hop has no network delay and no lost_reply fault");
            sim.answers_in_place[0] = in_place;
            sim.run_to_end();
            format!("{:?}", sim.finish())
        };
        let (fast, slab) = (run(true), run(false));
        assert!(fast.contains("local_rejections"), "the record prints its counters");
        assert_eq!(fast, slab, "seed 11: the in-place path changed the record");
    }
}
