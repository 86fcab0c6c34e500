//! The bare queue loop: the served path of the model — Poisson arrivals, one FIFO hop with `W`
//! workers and an optional queue limit, network delays, a per-attempt timeout and immediate
//! retries — simulated with nothing but the radix heap, a `VecDeque` and one sequential ChaCha8
//! stream, counters only. It is the floor the full model is judged against on queue-bound runs
//! (`scenarios/metastable-collapse.toml`, `scenarios/mm1.toml`): the `served` group of
//! `benches/scenarios.rs` times both in one run, and `tests/bare_queue.rs` checks that its counts
//! agree with the simulator's over many seeds (the two draw different numbers, so they agree in
//! distribution, not run by run).
//!
//! The model, as the simulator has it (docs/MODEL.md, "Entities" and "One logical request, many
//! attempts"):
//! - requests arrive as a Poisson process whose rate is piecewise constant (`steps`), from 0 until
//!   the horizon; each request's first attempt is sent at once;
//! - an attempt's request leg and its reply leg each take an independent Exp(`network_mean`) delay
//!   (none when it is 0);
//! - at the hop an attempt starts service if fewer than `workers` are busy, else waits in a FIFO
//!   queue; a full queue (`queue_limit`) answers 503 at once. Service takes Exp(`mean`) or, for the
//!   load-dependent service, `base + per_inflight × busy` where `busy` counts the attempts in
//!   service including this one. The hop serves every attempt it took in, even one whose caller
//!   has timed out;
//! - the caller waits for the first of its attempt's reply and its timeout. A success ends the
//!   request; a 503 or a timeout retries at once while attempts are left (`max_attempts` counts the
//!   first try), else the request is dead-lettered. A reply after the timeout is ignored;
//! - nothing is processed after the drain limit; requests still open then are in flight.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrystorm::engine::{EventQueue, Nanos, NS_PER_MS, NS_PER_S};
use std::collections::VecDeque;

/// A hop's service time.
#[derive(Clone, Copy)]
pub enum Service {
    /// Exp(mean).
    Exponential { mean_ns: Nanos },
    /// `base + per_inflight × busy` (busy including the attempt being started).
    Load { base_ns: Nanos, per_inflight_ns: Nanos },
}

/// The parameters of a queue-bound run; [`METASTABLE_COLLAPSE`] and [`MM1`] mirror the bundled
/// scenarios (the benches set the horizon).
#[derive(Clone, Copy)]
pub struct Served {
    /// `(from, rate per second)`, sorted by `from`, the first at 0.
    pub steps: &'static [(Nanos, f64)],
    pub horizon_ns: Nanos,
    pub drain_limit_ns: Nanos,
    pub workers: u32,
    pub queue_limit: Option<u32>,
    pub service: Service,
    pub network_mean_ns: Nanos,
    pub attempt_timeout_ns: Option<Nanos>,
    pub max_attempts: u32,
}

/// `scenarios/metastable-collapse.toml`'s `no-backoff` variant (horizon 80 s as written).
pub const METASTABLE_COLLAPSE: Served = Served {
    steps: &[(0, 40.0), (20 * NS_PER_S, 80.0), (25 * NS_PER_S, 40.0)],
    horizon_ns: 80 * NS_PER_S,
    drain_limit_ns: 160 * NS_PER_S,
    workers: 1_000_000,
    queue_limit: None,
    service: Service::Load { base_ns: NS_PER_S, per_inflight_ns: 10 * NS_PER_MS },
    network_mean_ns: 100 * NS_PER_MS,
    attempt_timeout_ns: Some(3 * NS_PER_S),
    max_attempts: 3,
};

/// `scenarios/mm1.toml`: λ = 800/s, Exp(1 ms) service, one worker, no retries (horizon 250 s).
pub const MM1: Served = Served {
    steps: &[(0, 800.0)],
    horizon_ns: 250 * NS_PER_S,
    drain_limit_ns: 500 * NS_PER_S,
    workers: 1,
    queue_limit: None,
    service: Service::Exponential { mean_ns: NS_PER_MS },
    network_mean_ns: 0,
    attempt_timeout_ns: None,
    max_attempts: 1,
};

impl Served {
    /// The same run with horizon `horizon_ns` and its default drain limit (twice the horizon).
    pub fn with_horizon(self, horizon_ns: Nanos) -> Served {
        Served { horizon_ns, drain_limit_ns: 2 * horizon_ns, ..self }
    }
}

/// What one bare run counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub events: u64,
    pub requests: u64,
    pub attempts: u64,
    pub succeeded: u64,
    pub dlq: u64,
    pub in_flight: u64,
    /// Attempts refused by a full queue.
    pub overflow: u64,
    /// Services completed (including those whose caller had given up).
    pub served: u64,
}

/// Event kinds; an event is `[kind, attempt]` (8 bytes), the request's own index for `ARRIVAL`.
const ARRIVAL: u32 = 0;
const AT_HOP: u32 = 1;
const SERVICE_DONE: u32 = 2;
const REPLY: u32 = 3;
const TIMEOUT: u32 = 4;

/// One attempt: its request, and whether its caller still waits for it.
struct Attempt {
    request: u32,
    waiting: bool,
    /// The hop's answer: true for a success, false for a 503 from a full queue.
    ok: bool,
}

/// Draws Exp(mean) from the stream, in whole nanoseconds.
fn exp_ns(rng: &mut ChaCha8Rng, mean_ns: Nanos) -> Nanos {
    if mean_ns == 0 {
        return 0;
    }
    let u: f64 = rng.random();
    (-(1.0 - u).ln() * mean_ns as f64) as Nanos
}

/// The loop's state.
struct Loop<'s> {
    s: &'s Served,
    rng: ChaCha8Rng,
    queue: EventQueue<[u32; 2]>,
    attempts: Vec<Attempt>,
    free: Vec<u32>,
    /// Per request: the attempts made so far.
    made: Vec<u32>,
    waiting: VecDeque<u32>,
    busy: u32,
    /// Per attempt record: the events that named it since it was taken (see `settle`).
    seen: Vec<u8>,
    c: Counts,
}

/// Simulates `served` once with `seed`. With no network delay an attempt reaches the hop, and a
/// reply its caller, within the event that sent it (the model's same-instant fusion), so both
/// programs make the same events per attempt.
pub fn run(served: &Served, seed: u64) -> Counts {
    let mut l = Loop {
        s: served,
        rng: ChaCha8Rng::seed_from_u64(seed),
        queue: EventQueue::new(),
        attempts: Vec::new(),
        free: Vec::new(),
        made: Vec::new(),
        waiting: VecDeque::new(),
        busy: 0,
        seen: Vec::new(),
        c: Counts::default(),
    };
    if let Some(at) = l.next_arrival(0) {
        l.queue.push(at, [ARRIVAL, 0]);
    }
    while let Some((now, [kind, id])) = l.queue.pop() {
        if now > served.drain_limit_ns {
            break;
        }
        l.c.events += 1;
        match kind {
            ARRIVAL => {
                l.c.requests += 1;
                let request = l.made.len() as u32;
                l.made.push(1);
                l.send(now, request);
                if let Some(at) = l.next_arrival(now) {
                    l.queue.push(at, [ARRIVAL, 0]);
                }
            }
            AT_HOP => l.at_hop(now, id),
            SERVICE_DONE => l.service_done(now, id),
            REPLY => l.caller_sees(now, id, true),
            TIMEOUT => l.caller_sees(now, id, false),
            _ => unreachable!("event kinds are the five above"),
        }
    }
    l.c.in_flight = l.c.requests - l.c.succeeded - l.c.dlq;
    l.c
}

impl Loop<'_> {
    /// The next arrival after `from`, drawn step by step (a gap that crosses a step boundary
    /// restarts there at the new rate: the process is memoryless).
    fn next_arrival(&mut self, from: Nanos) -> Option<Nanos> {
        let s = self.s;
        let mut t = from;
        loop {
            if t >= s.horizon_ns {
                return None;
            }
            let step = s.steps.iter().rposition(|&(at, _)| at <= t).expect("steps start at 0");
            let rate = s.steps[step].1;
            let end = s.steps.get(step + 1).map_or(s.horizon_ns, |&(at, _)| at.min(s.horizon_ns));
            if rate > 0.0 {
                let u: f64 = self.rng.random();
                let gap = (-(1.0 - u).ln() / rate * NS_PER_S as f64) as Nanos;
                if t + gap < end {
                    return Some(t + gap);
                }
            }
            t = end;
        }
    }

    /// Sends an attempt of `request` (already counted in `made`).
    fn send(&mut self, now: Nanos, request: u32) {
        self.c.attempts += 1;
        let record = Attempt { request, waiting: true, ok: false };
        let id = match self.free.pop() {
            Some(id) => {
                self.attempts[id as usize] = record;
                id
            }
            None => {
                self.attempts.push(record);
                self.seen.push(0);
                (self.attempts.len() - 1) as u32
            }
        };
        if let Some(timeout) = self.s.attempt_timeout_ns {
            self.queue.push(now + timeout, [TIMEOUT, id]);
        }
        match exp_ns(&mut self.rng, self.s.network_mean_ns) {
            0 => self.at_hop(now, id),
            net => self.queue.push(now + net, [AT_HOP, id]),
        }
    }

    fn at_hop(&mut self, now: Nanos, id: u32) {
        let s = self.s;
        if self.busy < s.workers {
            self.busy += 1;
            let service = service_ns(s, &mut self.rng, self.busy);
            self.queue.push(now + service, [SERVICE_DONE, id]);
        } else if s.queue_limit.is_some_and(|limit| self.waiting.len() >= limit as usize) {
            self.c.overflow += 1;
            self.attempts[id as usize].ok = false;
            self.reply(now, id);
        } else {
            self.waiting.push_back(id);
        }
    }

    fn service_done(&mut self, now: Nanos, id: u32) {
        self.c.served += 1;
        self.attempts[id as usize].ok = true;
        match self.waiting.pop_front() {
            Some(next) => {
                let service = service_ns(self.s, &mut self.rng, self.busy);
                self.queue.push(now + service, [SERVICE_DONE, next]);
            }
            None => self.busy -= 1,
        }
        self.reply(now, id);
    }

    /// The hop's answer leaves for the caller.
    fn reply(&mut self, now: Nanos, id: u32) {
        match exp_ns(&mut self.rng, self.s.network_mean_ns) {
            0 => self.caller_sees(now, id, true),
            net => self.queue.push(now + net, [REPLY, id]),
        }
    }

    /// The caller sees attempt `id`'s reply (`replied`) or its timeout.
    fn caller_sees(&mut self, now: Nanos, id: u32, replied: bool) {
        let a = &mut self.attempts[id as usize];
        if a.waiting {
            a.waiting = false;
            let (request, ok) = (a.request as usize, a.ok);
            if replied && ok {
                self.c.succeeded += 1;
            } else if self.made[request] < self.s.max_attempts {
                self.made[request] += 1;
                self.send(now, request as u32);
            } else {
                self.c.dlq += 1;
            }
        }
        // The record is reused once the last event that names it (its reply and its timeout)
        // has passed.
        let seen = &mut self.seen[id as usize];
        *seen += 1;
        let due = if self.s.attempt_timeout_ns.is_some() { 2 } else { 1 };
        if *seen == due {
            *seen = 0;
            self.free.push(id);
        }
    }
}

fn service_ns(s: &Served, rng: &mut ChaCha8Rng, busy: u32) -> Nanos {
    match s.service {
        Service::Exponential { mean_ns } => exp_ns(rng, mean_ns),
        Service::Load { base_ns, per_inflight_ns } => base_ns + per_inflight_ns * u64::from(busy),
    }
}
