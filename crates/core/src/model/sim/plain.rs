//! The plain served path: the event loop of a scenario that uses none of the model's optional
//! features, for the queue-bound runs that maps, plans and sweeps spend their time in.
//!
//! A scenario *fits* ([`fits`]) when it has open-loop tenants (Poisson, profile, ramp, trace)
//! without invalid or poison payloads or client timing, retry policies without budget,
//! breaker, hedging, cancellation or requeues, one hop of one replica that is a plain service
//! (no cache, register, pool, downstream calls, idempotency store, autoscaling, fair or
//! prioritised queue, shedding or admission control; `effect`, `queue_limit`, `load_latency`,
//! any service and network distribution allowed) and no fault. Every other scenario runs the
//! general loop ([`Simulation::run_to_end`]).
//!
//! The loop here is the general one with what those conditions make void left out: the same
//! steps in the same order, the same random draws from the same streams, the same events pushed
//! at the same instants in the same order (so the event queue pops them in the same order), and
//! the same counters written by the same functions (`count_attempt_in`, `count_entry`,
//! `count_exit`, `next_retry`, `count_retry_scheduled_in`). What it saves is per event: queue
//! entries of 16 bytes instead of 80 (an event is its kind and its call's or attempt's handle,
//! a retrying call is kept in its slab slot), an attempt record of 40 bytes instead of 112, no hook that returns at once (budgets,
//! breakers, caches, pools, links, run-ahead, faults, balancers), and an effect history that is
//! a reference-counted record per live request instead of a window of them, kept only when a
//! request can make a second attempt.
//!
//! `sim::run` takes this loop for a scenario that fits; the record is the general loop's, value
//! for value (the tests at the end of this file compare the two over many seeds and shapes, and
//! the golden digests of the bundled scenarios did not move when it came in). Whoever adds a
//! feature to the model adds its field to a spec struct; the destructuring in [`fits`] names
//! every field, so it does not compile until the new field is judged here.

use super::accounting::{count_attempt_in, count_request_end, cut_before};
use super::cancel::{add_wasted_to, Waste};
use super::server::{count_entry, count_exit};
use super::{
    bucket_at, count_retry_scheduled_in, failure_of, retry_of, timeout_of, CallEnd, JitterState, Reply, Simulation,
};
use crate::engine::{EventQueue, Handle, KeyedDraws, Nanos};
use crate::metrics::{DlqReason, HopBucket, HopCounters, RunRecord, TenantBucket, TenantCounters};
use crate::model::dist::Dist;
use crate::model::load_latency::LoadLatency;
use crate::model::overload::{Admission, Discipline, OverloadSpec};
use crate::model::policy::RetryPolicy;
use crate::model::replicas::ReplicaSpec;
use crate::model::spec::{Arrival, HopKind, HopSpec, SimSpec, TenantSpec};
use rand::RngExt;
use std::collections::VecDeque;

/// Whether `spec` runs on the plain served path (see the module's comment).
pub(super) fn fits(spec: &SimSpec) -> bool {
    let SimSpec {
        name: _,
        horizon: _,
        drain_limit: _,
        bucket: _,
        max_events: _,
        recovery_hold: _,
        tenants,
        hops,
        policies,
        faults,
    } = spec;
    let [hop] = hops.as_slice() else { return false };
    faults.is_empty() && hop_fits(hop) && tenants.iter().all(tenant_fits) && policies.iter().all(policy_fits)
}

fn tenant_fits(tenant: &TenantSpec) -> bool {
    let TenantSpec { name: _, clients: _, arrival, policy: _, invalid_fraction, poison_fraction, timing } = tenant;
    let open_loop = match arrival {
        Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Ramp { .. } | Arrival::Trace(_) => true,
        Arrival::Herd { .. } | Arrival::Closed { .. } => false,
    };
    open_loop && *invalid_fraction == 0.0 && *poison_fraction == 0.0 && timing.is_zero()
}

fn policy_fits(policy: &RetryPolicy) -> bool {
    let RetryPolicy {
        name: _,
        jitter: _,
        base: _,
        multiplier: _,
        cap: _,
        attempts_max: _,
        deadline: _,
        attempt_timeout: _,
        // Only a hop's downstream call reads it.
        deadline_mode: _,
        retry_after: _,
        throttle_base: _,
        budget,
        breaker,
        preset: _,
        retry_on: _,
        hedge,
        cancel_on_timeout,
        requeue,
        // A late reply that ends its call needs the call kept in the slab and its attempts linked.
        late_reply,
    } = policy;
    budget.is_none()
        && breaker.is_none()
        && hedge.is_none()
        && !cancel_on_timeout
        && !requeue
        && *late_reply == crate::model::LateReply::Ignore
}

fn hop_fits(hop: &HopSpec) -> bool {
    let HopSpec {
        name: _,
        workers: _,
        queue_limit: _,
        service: _,
        network: _,
        downstream_policy: _,
        idempotency,
        effect: _,
        fair,
        kind,
        overload,
        replicas,
        calls,
        calls_mode: _,
        pool,
        load_latency: _,
        autoscale,
    } = hop;
    let service = match kind {
        HopKind::Service => true,
        HopKind::Occ | HopKind::Cache(_) => false,
    };
    let OverloadSpec { discipline, shed_queue_length, shed_retries_queue_length, retry_priority, admission, reject: _ } =
        overload;
    let fifo = match discipline {
        Discipline::Fifo => true,
        Discipline::Lifo | Discipline::AdaptiveLifo { .. } | Discipline::Codel { .. } | Discipline::DeadlineDrop => {
            false
        }
    };
    let unguarded = match admission {
        Admission::None => true,
        Admission::TokenBucket { .. }
        | Admission::Concurrency { .. }
        | Admission::Aimd { .. }
        | Admission::Gradient { .. } => false,
    };
    let ReplicaSpec { count, balancer: _, health_check, outlier } = replicas;
    service
        && idempotency.is_none()
        && !fair
        && fifo
        && *shed_queue_length == u32::MAX
        && *shed_retries_queue_length == u32::MAX
        && !retry_priority
        && unguarded
        && *count == 1
        && health_check.is_none()
        && outlier.is_none()
        && calls.is_empty()
        && pool.is_none()
        && autoscale.is_none()
}

/// Runs replication `replication` of `spec`, which [`fits`], under master seed `seed`.
pub(super) fn run(spec: &SimSpec, seed: u64, replication: u64) -> RunRecord {
    debug_assert!(fits(spec));
    let mut sim = Simulation::new(spec, seed, replication);
    let (live, mut buffers) = Plain::new(&mut sim, SPARE.take().unwrap_or_default()).run();
    buffers.clear();
    SPARE.set(Some(buffers));
    sim.finish_counted(live)
}

thread_local! {
    /// The last run's buffers on this thread, emptied, for the next run: many short runs (maps,
    /// plans, sweeps) then make and fault in their event queue's buckets and chunks and their
    /// slots once per thread, not once per run (docs/PERFORMANCE.md, "Many small runs").
    static SPARE: std::cell::Cell<Option<Buffers>> = const { std::cell::Cell::new(None) };
}

/// The plain loop's containers, which a run leaves empty ([`Buffers::clear`]) for the next one.
#[derive(Default)]
struct Buffers {
    queue: EventQueue<Ev>,
    calls: Slots<PlainCall>,
    attempts: Slots<PlainAttempt>,
    requests: Slots<Request>,
    waiting: VecDeque<Handle>,
}

/// Slots kept past a run, of each kind (about 110 KiB of calls and 100 KiB of attempts): a run
/// that held more, such as a collapse's backlog, gives the rest back rather than keep it for
/// the thread's life.
const SLOTS_KEPT: usize = 1 << 11;

impl Buffers {
    /// Empty, as new ones are: the same records get the same handles, the queue pops the same
    /// events (its own test), so a run on reused buffers is value for value a run on new ones.
    /// Memory beyond [`SLOTS_KEPT`] slots goes back; the queue keeps at most its 256 buckets'
    /// chunks and its spare ones.
    fn clear(&mut self) {
        self.queue.clear();
        self.calls.clear();
        self.attempts.clear();
        self.requests.clear();
        self.waiting.clear();
        self.waiting.shrink_to(SLOTS_KEPT);
    }
}

/// What a plain event is (`sim::Event`'s kinds of the plain path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// An open-loop tenant's next arrival (`Event::PoissonArrival`).
    Arrival,
    /// A call's retry timer fired (`Event::Retry`; the call stays in its slot).
    Retry,
    /// `Event::AttemptArrive` and the others below, of the attempt named.
    Arrive,
    ServiceDone,
    ReplyArrive,
    Timeout,
}

/// A plain event in 8 bytes, so that a queue entry is 16 (the bare loop's), not 24: the handle's
/// generation in the high word, its kind in bits 29–31 and the slab index (or, for an arrival,
/// the tenant) in bits 0–28 of the low one.
#[derive(Clone, Copy, Debug)]
struct Ev(u64);

/// Bits of a slab index in an [`Ev`].
const INDEX_BITS: u32 = 29;

impl Ev {
    /// Kind `kind` of the call or attempt `handle`; panics past 2^29 live slots (12 GiB of
    /// attempts), which the memory estimate refuses long before.
    fn new(kind: Kind, handle: Handle) -> Ev {
        assert!(handle.index < 1 << INDEX_BITS, "more than 2^29 live calls or attempts on the plain path");
        Ev(u64::from(handle.generation) << 32 | (kind as u64) << INDEX_BITS | u64::from(handle.index))
    }

    fn arrival(tenant: u16) -> Ev {
        Ev::new(Kind::Arrival, Handle { index: u32::from(tenant), generation: 0 })
    }

    fn kind(self) -> Kind {
        match (self.0 >> INDEX_BITS) & 7 {
            0 => Kind::Arrival,
            1 => Kind::Retry,
            2 => Kind::Arrive,
            3 => Kind::ServiceDone,
            4 => Kind::ReplyArrive,
            5 => Kind::Timeout,
            bits => unreachable!("event kind {bits}: only `Ev::new` makes events"),
        }
    }

    fn handle(self) -> Handle {
        Handle { index: self.0 as u32 & ((1 << INDEX_BITS) - 1), generation: (self.0 >> 32) as u32 }
    }
}

/// A client's call: what of `sim::Call` the plain path reads (48 bytes, where `Call` takes 72),
/// and the record of its request's side effects (when the hop is an effect hop).
#[derive(Clone, Copy)]
struct PlainCall {
    /// The request's id, which is also the draw key of a client's call.
    request_id: u64,
    created_at: Nanos,
    deadline_at: Nanos,
    jitter: JitterState,
    request: Handle,
    /// Attempts so far (a policy without requeues: every attempt is a try).
    attempts_made: u32,
    tenant: u16,
    policy: u16,
}

/// An attempt: what of `sim::Attempt` the plain path reads.
#[derive(Clone, Copy)]
struct PlainAttempt {
    call: Handle,
    request: Handle,
    arrived_at: Nanos,
    service_ns: Nanos,
    tenant: u16,
    caller_waiting: bool,
    /// Its caller stopped waiting: it holds a reference to its request of its own (effect hops).
    retained: bool,
    /// The hop's answer: a success, or a refusal by its full queue (the only two on this path).
    ok: bool,
}

/// A live request's side effects at the hop, and the call and attempts that keep it live (its
/// call, and each attempt whose caller stopped waiting): `EffectHistory` for one hop.
#[derive(Clone, Copy)]
struct Request {
    executions: u32,
    refs: u32,
}

/// Records addressed by generation-checked handles, as `engine::Slab` but in one `Vec` of
/// small `Copy` records: a lookup is one bounds check and a generation compare where the slab's
/// pages take two levels and an `Option`. A slot's generation is odd while it holds a record, and
/// moves on when the record goes, so a handle to a removed record finds nothing.
struct Slots<T> {
    slots: Vec<(u32, T)>,
    free: Vec<u32>,
}

impl<T> Default for Slots<T> {
    fn default() -> Self {
        Slots { slots: Vec::new(), free: Vec::new() }
    }
}

impl<T: Copy> Slots<T> {
    #[inline]
    fn insert(&mut self, value: T) -> Handle {
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.0 = slot.0.wrapping_add(1);
            slot.1 = value;
            return Handle { index, generation: slot.0 };
        }
        let index =
            u32::try_from(self.slots.len()).ok().filter(|&i| i != u32::MAX).expect("fewer than 2^32 − 1 records");
        self.slots.push((1, value));
        Handle { index, generation: 1 }
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<&T> {
        self.slots.get(handle.index as usize).filter(|slot| slot.0 == handle.generation).map(|slot| &slot.1)
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        self.slots.get_mut(handle.index as usize).filter(|slot| slot.0 == handle.generation).map(|slot| &mut slot.1)
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<T> {
        let slot = self.slots.get_mut(handle.index as usize).filter(|slot| slot.0 == handle.generation)?;
        slot.0 = slot.0.wrapping_add(1);
        self.free.push(handle.index);
        Some(slot.1)
    }

    fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// No record, as a new `Slots` (the next insert gets index 0, generation 1), keeping the
    /// memory of at most [`SLOTS_KEPT`] slots.
    fn clear(&mut self) {
        self.slots.clear();
        self.free.clear();
        self.slots.shrink_to(SLOTS_KEPT);
        self.free.shrink_to(SLOTS_KEPT);
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The plain loop's state; the record, the random streams, the clock and the arrival processes
/// are the simulation's own.
struct Plain<'s, 'a> {
    sim: &'s mut Simulation<'a>,
    spec: &'a SimSpec,
    queue: EventQueue<Ev>,
    calls: Slots<PlainCall>,
    attempts: Slots<PlainAttempt>,
    requests: Slots<Request>,
    /// The hop's FIFO queue.
    waiting: VecDeque<Handle>,
    /// The hop's run counters and time series, out of the record while the loop runs (one
    /// index fewer per count) and put back at its end.
    hop: HopCounters,
    series: Vec<HopBucket>,
    /// The tenants' counters and series and the run's completion time, the same way.
    tenants: Vec<TenantCounters>,
    tenant_series: Vec<Vec<TenantBucket>>,
    completion_time_ns: Nanos,
    /// The clock, its time bucket and when the next bucket starts (`Simulation::now`,
    /// `bucket_now`, `bucket_until`, written back at the end).
    now: Nanos,
    b: usize,
    bucket_until: Nanos,
    busy: u32,
    in_flight: u32,
    workers: u32,
    queue_limit: usize,
    service: &'a Dist,
    network: &'a Dist,
    load_latency: Option<LoadLatency>,
    /// The hop commits side effects (`HopSpec::effect`).
    effect: bool,
    /// Requests keep a record of their executions: the hop commits side effects and some
    /// policy makes more than one attempt (with one attempt per request, none executes twice).
    tracked: bool,
    /// No network delay either way: an attempt arrives in the event that sent it
    /// (`Simulation::answers_in_place`).
    in_place: bool,
}

impl<'s, 'a> Plain<'s, 'a> {
    fn new(sim: &'s mut Simulation<'a>, buffers: Buffers) -> Self {
        let spec = sim.spec;
        let hop = &spec.hops[0];
        let hop_counters = std::mem::take(&mut sim.record.hops[0]);
        let series = std::mem::take(&mut sim.record.hop_series[0]);
        let tenants = std::mem::take(&mut sim.record.tenants);
        let tenant_series = std::mem::take(&mut sim.record.tenant_series);
        let (completion_time_ns, now, b, bucket_until) =
            (sim.record.completion_time_ns, sim.now, sim.bucket_now, sim.bucket_until);
        Plain {
            sim,
            spec,
            queue: buffers.queue,
            calls: buffers.calls,
            attempts: buffers.attempts,
            requests: buffers.requests,
            waiting: buffers.waiting,
            hop: hop_counters,
            series,
            tenants,
            tenant_series,
            completion_time_ns,
            now,
            b,
            bucket_until,
            busy: 0,
            in_flight: 0,
            workers: hop.workers,
            queue_limit: hop.queue_limit as usize,
            service: &hop.service,
            network: &hop.network,
            load_latency: hop.load_latency,
            effect: hop.effect,
            tracked: hop.effect && spec.policies.iter().any(|p| p.attempts_max > 1),
            in_place: hop.network.is_zero(),
        }
    }

    /// The event loop of `Simulation::run_to_end`; the client calls still live at its end, and
    /// the containers for the next run.
    fn run(mut self) -> (u64, Buffers) {
        let spec = self.spec;
        for (ti, process) in self.sim.open_loop.iter_mut().enumerate() {
            let process = process.as_mut().expect("every tenant of the plain path is open-loop");
            if let Some(at) = process.next(0, spec.horizon, &mut self.sim.rngs.arrivals[ti]) {
                self.queue.push(at, Ev::arrival(ti as u16));
            }
        }
        // Popped before the limits are checked (the general loop peeks first): an event past
        // them ends the run, and nothing reads the queue after it.
        while let Some((at, event)) = self.queue.pop() {
            let record = &mut self.sim.record;
            if cut_before(record, spec, at, self.now) {
                break;
            }
            record.events += 1;
            assert!(at >= self.now, "time went backwards: {at} < {}", self.now);
            self.move_clock(at);
            let handle = event.handle();
            match event.kind() {
                Kind::Arrival => self.on_arrival(handle.index as u16),
                Kind::Retry => self.start_attempt(handle),
                Kind::Arrive => self.on_arrive(handle),
                Kind::ServiceDone => self.on_service_done(handle),
                Kind::ReplyArrive => self.on_reply_arrive(handle),
                Kind::Timeout => self.on_timeout(handle),
            }
        }
        if self.sim.record.truncated.is_none() {
            self.check_drained();
        }
        // The hop's books, as the general loop leaves them for `finish`.
        self.sim.record.hops[0] = std::mem::take(&mut self.hop);
        self.sim.record.hop_series[0] = std::mem::take(&mut self.series);
        self.sim.record.tenants = std::mem::take(&mut self.tenants);
        self.sim.record.tenant_series = std::mem::take(&mut self.tenant_series);
        self.sim.record.completion_time_ns = self.completion_time_ns;
        (self.sim.now, self.sim.bucket_now, self.sim.bucket_until) = (self.now, self.b, self.bucket_until);
        self.sim.hops[0].busy = self.busy;
        self.sim.hops[0].in_flight = self.in_flight;
        self.sim.lbs[0].in_flight = self.in_flight;
        let live = self.calls.len() as u64;
        let Plain { queue, calls, attempts, requests, waiting, .. } = self;
        (live, Buffers { queue, calls, attempts, requests, waiting })
    }

    /// `Simulation::move_clock`, on the loop's own clock.
    #[inline]
    fn move_clock(&mut self, t: Nanos) {
        self.now = t;
        if t >= self.bucket_until {
            (self.b, self.bucket_until) = bucket_at(t, self.spec.bucket, self.series.len());
        }
    }

    /// `Simulation::on_poisson_arrival`.
    fn on_arrival(&mut self, tenant: u16) {
        let (spec, ti) = (self.spec, tenant as usize);
        let now = self.now;
        let rng = &mut self.sim.rngs.arrivals[ti];
        // The client is drawn as the general loop draws it (the stream's next values depend on
        // it), though nothing on this path reads it. Of one client, `random_range(0..1)` takes one
        // `u32` of the stream and gives 0 (rand's widening multiply, which never draws again for
        // a range of 1): that `u32` alone is taken, without the range's arithmetic.
        match spec.tenants[ti].clients {
            1 => _ = rand::Rng::next_u32(rng),
            clients => _ = rng.random_range(0..clients),
        }
        let process = self.sim.open_loop[ti].as_mut().expect("an open-loop tenant");
        if let Some(at) = process.next(now, spec.horizon, rng) {
            self.queue.push(at, Ev::arrival(tenant));
        }
        self.new_request(tenant);
    }

    /// `Simulation::new_request` (no payload draw: with no invalid or poison fraction the
    /// payload stream decides nothing).
    fn new_request(&mut self, tenant: u16) {
        let (spec, ti, now, b) = (self.spec, tenant as usize, self.now, self.b);
        let request_id = self.sim.request_id_next;
        self.sim.request_id_next += 1;
        self.tenants[ti].requests += 1;
        self.tenant_series[ti][b].arrivals += 1;
        let policy = spec.tenants[ti].policy;
        let deadline = spec.policies[policy].deadline;
        let request =
            if self.tracked { self.requests.insert(Request { executions: 0, refs: 1 }) } else { Handle::NONE };
        let handle = self.calls.insert(PlainCall {
            request_id,
            created_at: now,
            deadline_at: deadline.map_or(Nanos::MAX, |d| now.saturating_add(d)),
            jitter: JitterState::default(),
            request,
            attempts_made: 0,
            tenant,
            policy: policy as u16,
        });
        self.start_attempt(handle);
    }

    /// `Simulation::start_attempt` and `send_attempt`.
    fn start_attempt(&mut self, call_handle: Handle) {
        let (now, b) = (self.now, self.b);
        let c = self.calls.get_mut(call_handle).expect("attempt of a live call");
        if c.attempts_made > 0 {
            self.series[b].retries_fired += 1;
        }
        if now >= c.deadline_at {
            return self.end_call(call_handle, CallEnd::Dlq(DlqReason::Deadline));
        }
        c.attempts_made += 1;
        let (tenant, retry, request) = (c.tenant, c.attempts_made > 1, c.request);
        let timeout_at = timeout_of(&self.spec.policies[c.policy as usize], c.deadline_at, now);
        let ti = tenant as usize;
        count_attempt_in(
            &mut self.hop,
            &mut self.series[b],
            Some((&mut self.tenants[ti], &mut self.tenant_series[ti][b])),
            retry,
        );
        let net = self.network_delay();
        let attempt = PlainAttempt {
            call: call_handle,
            request,
            arrived_at: now,
            service_ns: 0,
            tenant,
            caller_waiting: true,
            retained: false,
            ok: false,
        };
        if net == 0 && self.in_place {
            // `arrive_in_place`: entered before it is stored, its timeout queued before
            // anything its arrival queues.
            self.enter_hop();
            let handle = self.attempts.insert(attempt);
            if timeout_at != Nanos::MAX {
                self.queue.push(timeout_at, Ev::new(Kind::Timeout, handle));
            }
            return self.after_entry(handle);
        }
        let handle = self.attempts.insert(attempt);
        if net > 0 {
            self.queue.push(now.saturating_add(net), Ev::new(Kind::Arrive, handle));
        }
        if timeout_at != Nanos::MAX {
            self.queue.push(timeout_at, Ev::new(Kind::Timeout, handle));
        }
        if net == 0 {
            self.on_arrive(handle);
        }
    }

    /// A network leg's delay (none drawn where the hop has no network delay: its distribution
    /// is the constant 0, which draws nothing).
    #[inline]
    fn network_delay(&mut self) -> Nanos {
        if self.in_place {
            return 0;
        }
        self.network.sample(&mut self.sim.rngs.network[0], 0)
    }

    /// `Simulation::enter_hop`: one more in flight, counted (no fault answers it).
    fn enter_hop(&mut self) {
        let b = self.b;
        self.in_flight = self.in_flight.checked_add(1).expect("fewer than 2^32 attempts in flight at a hop");
        count_entry(&mut self.series[b], self.in_flight);
    }

    /// `Simulation::on_arrive`.
    fn on_arrive(&mut self, handle: Handle) {
        self.enter_hop();
        let now = self.now;
        self.attempts.get_mut(handle).expect("arriving attempt is live").arrived_at = now;
        self.after_entry(handle);
    }

    /// `Simulation::after_entry` and `enqueue`.
    fn after_entry(&mut self, handle: Handle) {
        if self.busy < self.workers {
            return self.start_service(handle);
        }
        if self.waiting.len() >= self.queue_limit {
            self.hop.overflow += 1;
            return self.send_reply(handle, Reply::Refused);
        }
        self.waiting.push_back(handle);
        let b = self.b;
        let bucket = &mut self.series[b];
        bucket.queue_len_max = bucket.queue_len_max.max(self.waiting.len() as u32);
    }

    /// `Simulation::start_service`.
    fn start_service(&mut self, handle: Handle) {
        let (now, b) = (self.now, self.b);
        let a = self.attempts.get_mut(handle).expect("served attempt is live");
        let wait = now - a.arrived_at;
        self.busy = self.busy.checked_add(1).expect("fewer than 2^32 busy workers");
        let busy = self.busy;
        let sim = &mut *self.sim;
        let bucket = &mut self.series[b];
        bucket.queue_wait_max_ns = bucket.queue_wait_max_ns.max(wait);
        let counters = &mut self.hop;
        counters.services_started += 1;
        counters.queue_wait_ns_sum += u128::from(wait);
        if now < sim.baseline_until {
            sim.prefault_wait_us.record(wait / 1_000);
        }
        let base = self.service.sample(&mut sim.rngs.service[0], busy);
        // `slow_factor` is 1 without faults: the factor is the load's alone.
        let factor = self.load_latency.map_or(1.0, |load| load.factor_at(busy, self.workers));
        let service = if factor == 1.0 { base } else { (base as f64 * factor).min(u64::MAX as f64) as Nanos };
        a.service_ns = service;
        let counters = &mut self.hop;
        counters.busy_ns = counters.busy_ns.saturating_add(service);
        self.queue.push(now.saturating_add(service), Ev::new(Kind::ServiceDone, handle));
    }

    /// `Simulation::on_service_done`, `commit_without_store`, `run_handler` and `finish_job`.
    fn on_service_done(&mut self, handle: Handle) {
        let b = self.b;
        self.hop.served += 1;
        self.series[b].served += 1;
        if self.effect {
            let a = self.attempts.get(handle).expect("finishing attempt is live");
            let replay = self.tracked && {
                let request = self.requests.get_mut(a.request).expect("a served attempt's request is live");
                request.executions += 1;
                request.executions > 1
            };
            self.hop.executions += 1;
            if replay {
                self.hop.duplicates_no_key += 1;
                self.tenants[a.tenant as usize].duplicates_no_key += 1;
            }
        }
        let (seed, replication) = (self.sim.seed, self.sim.replication);
        self.busy = self.busy.checked_sub(1).unwrap_or_else(|| {
            panic!("hop 0: a job finished with no busy worker (seed {seed}, replication {replication})")
        });
        // `serve_queue`: the worker takes the next queued attempt before this one's reply goes.
        while self.busy < self.workers {
            let Some(next) = self.waiting.pop_front() else { break };
            self.start_service(next);
        }
        self.send_reply(handle, Reply::Ok);
    }

    /// `Simulation::send_reply` and `count_reply`.
    fn send_reply(&mut self, handle: Handle, reply: Reply) {
        debug_assert!(matches!(reply, Reply::Ok | Reply::Refused), "the plain hop answers {reply:?}");
        let (now, b) = (self.now, self.b);
        self.attempts.get_mut(handle).expect("replying attempt is live").ok = reply == Reply::Ok;
        let (seed, replication) = (self.sim.seed, self.sim.replication);
        self.in_flight = self.in_flight.checked_sub(1).unwrap_or_else(|| {
            panic!("hop 0: an attempt left with none in flight (seed {seed}, replication {replication})")
        });
        count_exit(&mut self.series[b], &mut self.hop, reply);
        let net = self.network_delay();
        if net == 0 {
            self.on_reply_arrive(handle);
        } else {
            self.queue.push(now.saturating_add(net), Ev::new(Kind::ReplyArrive, handle));
        }
    }

    /// `Simulation::on_reply_arrive`.
    fn on_reply_arrive(&mut self, handle: Handle) {
        let a = self.attempts.remove(handle).expect("a reply's attempt is live until it arrives");
        if a.retained {
            self.release(a.request);
        }
        if !a.caller_waiting {
            // The hop worked for a caller that had given up.
            return add_wasted_to(&mut self.hop, a.service_ns, Waste::TimedOut);
        }
        if a.ok {
            let b = self.b;
            self.hop.timely_ok += 1;
            self.series[b].timely_ok += 1;
        }
        self.caller_sees(a.call, if a.ok { Reply::Ok } else { Reply::Refused });
    }

    /// `Simulation::on_timeout` and `stop_waiting`.
    fn on_timeout(&mut self, handle: Handle) {
        let Some(a) = self.attempts.get_mut(handle).filter(|a| a.caller_waiting) else { return };
        a.caller_waiting = false;
        let call = a.call;
        if self.tracked && !std::mem::replace(&mut a.retained, true) {
            self.requests.get_mut(a.request).expect("a waited-on attempt's request is live").refs += 1;
        }
        self.caller_sees(call, Reply::Timeout);
    }

    /// `Simulation::caller_sees_now` and `schedule_retry` (nothing runs ahead without faults).
    fn caller_sees(&mut self, call_handle: Handle, reply: Reply) {
        let Some((failure, retry_after)) = failure_of(reply) else {
            let end = if reply == Reply::Ok { CallEnd::Succeeded } else { CallEnd::Rejected };
            return self.end_call(call_handle, end);
        };
        let (now, spec, b) = (self.now, self.spec, self.b);
        let c = self.calls.get_mut(call_handle).expect("caller of a live call");
        let (retry, request_id) = (c.attempts_made, c.request_id);
        // `jitter_item_key` of a client's call (hop 0, draw key = request id).
        let draws = KeyedDraws::item_key(self.sim.rngs.jitter[0], request_id);
        let policy = &spec.policies[c.policy as usize];
        let (at, wait) = match retry_of(policy, draws, retry, &mut c.jitter, c.deadline_at, now, (failure, retry_after))
        {
            Ok(next) => next,
            Err(reason) => return self.end_call(call_handle, CallEnd::Dlq(reason)),
        };
        let bucket = &mut self.series[b];
        count_retry_scheduled_in(&mut self.sim.delay_samples, bucket, 0, retry, request_id, wait);
        self.queue.push(at, Ev::new(Kind::Retry, call_handle));
    }

    /// `Simulation::end_call` and `end_request`.
    fn end_call(&mut self, call_handle: Handle, end: CallEnd) {
        let call = self.calls.remove(call_handle).expect("ending a live call");
        if self.tracked {
            self.release(call.request);
        }
        let (now, b) = (self.now, self.b);
        let ti = call.tenant as usize;
        let tenant = (&mut self.tenants[ti], &mut self.tenant_series[ti][b]);
        count_request_end(tenant, &mut self.completion_time_ns, call.created_at, end, now);
    }

    /// One fewer call or attempt keeps `request` live; the last lets it go.
    fn release(&mut self, request: Handle) {
        let r = self.requests.get_mut(request).expect("a released request is live");
        r.refs = r.refs.checked_sub(1).expect("released once per call or attempt");
        if r.refs == 0 {
            self.requests.remove(request);
        }
    }

    /// `Simulation::check_drained`, for what this loop holds.
    fn check_drained(&self) {
        if !self.calls.is_empty() {
            return;
        }
        let (seed, replication) = (self.sim.seed, self.sim.replication);
        let leaks = [
            (self.attempts.len(), "attempt(s) still live"),
            (self.busy as usize, "busy worker(s)"),
            (self.in_flight as usize, "attempt(s) in flight"),
            (self.waiting.len(), "attempt(s) queued"),
            (self.requests.len(), "request(s) still live in the effect history"),
        ];
        for (n, what) in leaks {
            assert!(
                n == 0,
                "{n} {what} after every call ended (scenario {}, seed {seed}, replication {replication}, plain path)",
                self.spec.name
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fits;
    use crate::engine::KeyedDraws;
    use crate::model::SimSpec;
    use crate::scenario::Scenario;
    use rand::RngExt;

    /// The plain path's record and the general loop's, as text (every field, every histogram
    /// value and series bucket).
    fn both(spec: &SimSpec, seed: u64, replication: u64) -> (String, String) {
        assert!(fits(spec), "scenario {} does not fit the plain path", spec.name);
        let plain = format!("{:?}", super::run(spec, seed, replication));
        let general = format!("{:?}", super::super::run_general(spec, seed, replication));
        (plain, general)
    }

    /// Every event, call and attempt is memory traffic: an event is 8 bytes (a queue entry 16, as
    /// the bare loop's), a call 48 and an attempt 40 (with their slots' generations, 56 and 48).
    #[test]
    fn plain_records_are_small() {
        assert_eq!(std::mem::size_of::<super::Ev>(), 8);
        assert_eq!(std::mem::size_of::<super::PlainCall>(), 48);
        assert_eq!(std::mem::size_of::<super::PlainAttempt>(), 40);
        assert_eq!(std::mem::size_of::<(u32, super::PlainAttempt)>(), 48);
    }

    /// Rule: the plain path is an optimisation only. Every bundled scenario variant that fits
    /// runs to the general loop's record, value for value, in several replications; the
    /// queue-bound workloads of the speed goal (M/M/1, M/M/c, metastable-collapse) are among
    /// them, and scenarios with a feature (the others) do not fit.
    #[test]
    fn every_bundled_variant_that_fits_records_what_the_general_loop_records() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios");
        let mut fitting = Vec::new();
        let mut paths: Vec<_> = std::fs::read_dir(dir).expect("scenarios/").flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "toml")) {
            let scenario = Scenario::load(path.to_str().expect("utf-8"), &[]).unwrap_or_else(|e| panic!("{e}"));
            for variant in scenario.run_variants() {
                if !fits(&variant.spec) {
                    continue;
                }
                // Long bundled horizons are cut short: equality, not statistics, is the point.
                let mut spec = variant.spec.clone();
                spec.horizon = spec.horizon.min(60_000_000_000);
                spec.drain_limit = spec.drain_limit.min(spec.horizon.saturating_mul(3));
                for replication in 0..3 {
                    let (plain, general) = both(&spec, scenario.seed, replication);
                    assert_eq!(
                        plain, general,
                        "{} / {}: replication {replication} (seed {})",
                        scenario.name, variant.name, scenario.seed
                    );
                }
                fitting.push(format!("{}/{}", scenario.name, variant.name));
            }
        }
        for expected in ["mm1/", "mmc/", "metastable-collapse/no-backoff", "metastable-collapse/backoff-jitter"] {
            assert!(fitting.iter().any(|f| f.starts_with(expected)), "{expected} should fit: {fitting:?}");
        }
        assert!(!fitting.iter().any(|f| f.starts_with("outage-herd/")), "a herd does not fit: {fitting:?}");
    }

    /// Rule: a run on the buffers an earlier run left on its thread (that run cut with events
    /// queued and calls, attempts and requests live) records what a run on new ones records.
    #[test]
    fn a_run_on_reused_buffers_is_a_run_on_new_ones() {
        let load = |path: &str, sets: &[&str]| {
            let overrides: Vec<_> =
                sets.iter().map(|s| crate::scenario::parse_assignment(s).expect("override")).collect();
            let path = format!("{}/../../scenarios/{path}", env!("CARGO_MANIFEST_DIR"));
            Scenario::load(&path, &overrides).unwrap_or_else(|e| panic!("{e}"))
        };
        let mut earlier = load("metastable-collapse.toml", &["horizon=30s"]).base;
        earlier.max_events = 5_000;
        let mut later = load("metastable-collapse.toml", &["horizon=10s"]).base;
        later.hops[0].effect = true;
        assert!(fits(&earlier) && fits(&later));
        let on_new = {
            let later = later.clone();
            std::thread::spawn(move || format!("{:?}", super::run(&later, 3, 1))).join().expect("a run")
        };
        let on_reused = std::thread::spawn(move || {
            let first = super::run(&earlier, 5, 0);
            assert!(
                first.truncated.is_some(),
                "the earlier run is cut with work pending: {} events, {:?}",
                first.events,
                first.truncated
            );
            assert!(first.hops[0].attempts > 500, "and has queued");
            format!("{:?}", super::run(&later, 3, 1))
        })
        .join()
        .expect("two runs");
        assert_eq!(on_reused, on_new);
    }

    /// One random scenario of the plain path's shape: 1–3 open-loop tenants, 1–2 policies of
    /// any jitter, attempts, timeout and deadline, one hop of 1–4 workers with or without a
    /// queue limit, effect, load-dependent latency and network delay, and a horizon, drain
    /// limit and event cap that cut some runs short.
    fn random_source(rng: &mut KeyedDraws) -> String {
        let mut s = format!("name = \"plain\"\nhorizon = \"{}ms\"\nbucket = \"100ms\"\n", rng.random_range(500..3_000));
        if rng.random_bool(0.3) {
            s += &format!("drain_limit = \"{}ms\"\n", rng.random_range(3_000..6_000));
        }
        if rng.random_bool(0.2) {
            s += &format!("max_events = {}\n", rng.random_range(200..5_000));
        }
        let policies = rng.random_range(1..=2);
        for t in 0..rng.random_range(1..=3) {
            let arrival = match rng.random_range(0..3) {
                0 => format!("{{ kind = \"poisson\", rate_per_s = {} }}", rng.random_range(50..1_500)),
                1 => format!(
                    "{{ kind = \"profile\", steps = [{{ from = \"0s\", rate_per_s = {} }}, {{ from = \"300ms\", rate_per_s = {} }}] }}",
                    rng.random_range(50..500),
                    rng.random_range(200..2_000)
                ),
                _ => format!("{{ kind = \"ramp\", from_rate_per_s = 10, rate_per_s = {}, over = \"1s\" }}", rng.random_range(100..1_500)),
            };
            s += &format!(
                "[[tenant]]\nname = \"t{t}\"\nclients = {}\narrival = {arrival}\npolicy = \"p{}\"\n",
                rng.random_range(1..500),
                rng.random_range(0..policies)
            );
        }
        for p in 0..policies {
            let jitter = ["none", "full", "equal", "decorrelated"][rng.random_range(0..4)];
            s += &format!(
                "[policy.p{p}]\njitter = \"{jitter}\"\nbase = \"{}ms\"\ncap = \"{}ms\"\nmax_attempts = {}\n",
                rng.random_range(0..50),
                rng.random_range(50..400),
                rng.random_range(1..6)
            );
            if rng.random_bool(0.7) {
                s += &format!("attempt_timeout = \"{}ms\"\n", rng.random_range(2..60));
            }
            if rng.random_bool(0.3) {
                s += &format!("deadline = \"{}ms\"\n", rng.random_range(20..500));
            }
        }
        let service = match rng.random_range(0..4) {
            0 => format!("{{ dist = \"exponential\", mean = \"{}us\" }}", rng.random_range(200..4_000)),
            1 => format!("{{ dist = \"constant\", mean = \"{}us\" }}", 500 * rng.random_range(1..8)),
            2 => format!("{{ dist = \"lognormal\", mean = \"{}us\", sd = \"1ms\" }}", rng.random_range(200..4_000)),
            _ => format!(
                "{{ dist = \"load\", base = \"{}us\", per_inflight = \"100us\" }}",
                rng.random_range(200..2_000)
            ),
        };
        s += &format!(
            "[[hop]]\nname = \"h\"\nworkers = {}\nservice = {service}\neffect = {}\n",
            rng.random_range(1..=4),
            rng.random_bool(0.5)
        );
        if rng.random_bool(0.4) {
            s += &format!("queue_limit = {}\n", rng.random_range(0..20));
        }
        // Constant delays (with a constant service) put events at the same instant: ties, which
        // the event queue orders by push, so the two loops must push in the same order.
        match rng.random_range(0..4) {
            0 | 1 => {
                s += &format!("network = {{ dist = \"exponential\", mean = \"{}us\" }}\n", rng.random_range(100..3_000))
            }
            2 => s += &format!("network = {{ dist = \"constant\", mean = \"{}us\" }}\n", 500 * rng.random_range(1..4)),
            _ => {}
        }
        if rng.random_bool(0.3) {
            s += "load_latency = { kind = \"polynomial\", coefficient = 3.0, exponent = 2.0 }\n";
        }
        s
    }

    /// Rule: over 300 random scenarios of the plain path's shape (overflowing queues, timeouts
    /// racing replies, deadlines, duplicates at an effect hop, runs cut by the drain limit or
    /// the event cap), the plain path records what the general loop records, value for value.
    #[test]
    fn random_plain_scenarios_record_what_the_general_loop_records() {
        let mut rng = KeyedDraws::new(2026, 12, 6);
        let (mut cut, mut timeouts, mut overflows, mut duplicates) = (0, 0, 0, 0);
        for case in 0..300u64 {
            let source = random_source(&mut rng);
            let scenario = Scenario::from_source("plain.toml", &source, &[])
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{source}"));
            let (plain, general) = both(&scenario.base, case, case % 3);
            assert_eq!(plain, general, "case {case} (seed {case}):\n{source}");
            let record = super::super::run_general(&scenario.base, case, case % 3);
            cut += usize::from(record.truncated.is_some());
            timeouts += usize::from(record.hops[0].wasted_timed_out_ns > 0);
            overflows += usize::from(record.hops[0].overflow > 0);
            duplicates += usize::from(record.hops[0].duplicates_no_key > 0);
        }
        // The cases must reach every path the comparison is about.
        for (n, what) in
            [(cut, "cut short"), (timeouts, "with timeouts"), (overflows, "overflowing"), (duplicates, "duplicating")]
        {
            assert!(n >= 10, "only {n} of 300 random runs {what}");
        }
    }
}
