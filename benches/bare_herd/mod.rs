//! The bare herd loop: `scenarios/outage-herd.toml` with full jitter, simulated with nothing but
//! the radix heap, a FIFO and one sequential ChaCha8 stream — no metrics, no slab, no policy
//! objects, no random-access jitter. It is the floor the full model is judged against: the
//! `outage_herd` group of `benches/scenarios.rs` times both on the same herd in one run.
//!
//! The model, as the simulator has it: each client sends one request at a uniform offset in
//! [0, spread); during the outage [0, outage_end) the API refuses an attempt at once (no service
//! time) and the client retries after full jitter, u × min(cap, base × 2^(k−1)) before retry k,
//! until `max_attempts`; after the outage attempts queue FIFO for the one worker (constant
//! service, no timeouts); nothing is processed after the drain limit.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use retrystorm::engine::{stream_key, EventQueue, KeyedDraws, Nanos, StreamKind, NS_PER_MS, NS_PER_S};
use std::collections::VecDeque;

/// The herd's parameters; [`OUTAGE_HERD`] mirrors the bundled scenario.
pub struct Herd {
    pub clients: u32,
    pub spread_ns: Nanos,
    pub base_ns: Nanos,
    pub cap_ns: Nanos,
    pub max_attempts: u32,
    pub service_ns: Nanos,
    pub outage_end_ns: Nanos,
    pub drain_limit_ns: Nanos,
}

/// `scenarios/outage-herd.toml` (10,000 clients; the benches set `clients`), multiplier 2.
pub const OUTAGE_HERD: Herd = Herd {
    clients: 10_000,
    spread_ns: NS_PER_S,
    base_ns: 100 * NS_PER_MS,
    cap_ns: 10 * NS_PER_S,
    max_attempts: 10,
    service_ns: NS_PER_MS,
    outage_end_ns: 10 * NS_PER_S,
    drain_limit_ns: 240 * NS_PER_S,
};

/// What one bare run did.
pub struct BareRun {
    pub events: u64,
    pub attempts: u64,
    /// Σ over clients of (attempts made by that client)², for the variance of attempts per client.
    pub attempts_squared: u64,
}

impl BareRun {
    /// Sample variance of the attempts a client makes.
    pub fn attempts_variance(&self, clients: u32) -> f64 {
        let n = f64::from(clients);
        let mean = self.attempts as f64 / n;
        (self.attempts_squared as f64 - n * mean * mean) / (n - 1.0)
    }
}

const ATTEMPT: u32 = 0;
const DONE: u32 = 1;

/// How the bare loop draws its jitter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Draws {
    /// One sequential ChaCha8 stream (the floor: nothing but the next word).
    Sequential,
    /// The model's common-random-number draw: a fresh `KeyedDraws` keyed by (request, retry),
    /// as `Simulation::caller_sees` makes one per retry, so that variants compare draw for draw.
    Keyed,
}

/// Simulates `herd` once. Events are 12 bytes, as the simulator's: [kind, client, attempt number].
pub fn run(herd: &Herd, seed: u64) -> BareRun {
    run_with::<0>(herd, seed, Draws::Sequential)
}

/// The bare loop with `PAD` more 32-bit words in every event and the given draws: the steps from
/// the floor towards the model, to see what each costs on its own (docs/PERFORMANCE.md). With
/// `PAD = 15` an event is 72 bytes and a queue entry 80, the size of the model's (a retry's call
/// rides in its event). The padding is written and read back, so it is real memory traffic.
pub fn run_with<const PAD: usize>(herd: &Herd, seed: u64, draws: Draws) -> BareRun {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let jitter_key = stream_key(seed, 0, StreamKind::Jitter, 0);
    let mut queue = EventQueue::<([u32; 3], [u32; PAD])>::new();
    for client in 0..herd.clients {
        let at = (rng.random::<f64>() * herd.spread_ns as f64) as Nanos;
        queue.push(at, ([ATTEMPT, client, 1], [client; PAD]));
    }
    let (mut waiting, mut busy) = (VecDeque::new(), false);
    let mut run = BareRun { events: 0, attempts: 0, attempts_squared: 0 };
    while let Some((now, ([kind, client, attempt], pad))) = queue.pop() {
        if now > herd.drain_limit_ns {
            break;
        }
        run.events += 1;
        if kind == ATTEMPT {
            run.attempts += 1;
            if now < herd.outage_end_ns && attempt < herd.max_attempts {
                let exp = herd.base_ns.saturating_mul(1 << (attempt - 1).min(62)).min(herd.cap_ns);
                let u: f64 = match draws {
                    Draws::Sequential => rng.random(),
                    Draws::Keyed => KeyedDraws::new(jitter_key, u64::from(client), attempt).random(),
                };
                let delay = (u * exp as f64) as Nanos;
                queue.push(now + delay, ([ATTEMPT, client, attempt + 1], pad));
                continue;
            }
            run.attempts_squared += u64::from(attempt) * u64::from(attempt);
            if now < herd.outage_end_ns {
                continue; // refused, and no attempt left
            }
            if busy {
                waiting.push_back(client);
            } else {
                busy = true;
                queue.push(now + herd.service_ns, ([DONE, client, 0], pad));
            }
        } else if let Some(next) = waiting.pop_front() {
            queue.push(now + herd.service_ns, ([DONE, next, 0], pad));
        } else {
            busy = false;
        }
    }
    run
}
