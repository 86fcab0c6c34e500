//! Pending-event queue benchmarks: the classic "hold" model at 10³ … 10⁷ pending events.
//!
//! A hold pops the earliest event and schedules one replacement an exponential delay later, so
//! the number pending stays fixed: it is the steady state of a simulation with that many clients
//! waiting. The radix heap is measured next to a `BinaryHeap` on (time, insertion number), the
//! structure it replaced, so a regression or a crossover shows up in the same report.
//!
//! A second group runs a bare M/M/1 loop on each queue: the speed floor of an event loop with no
//! metrics, against which the full simulator (`cargo bench --bench scenarios`) is judged.
//!
//! Run: `cargo bench --bench engine` (about a minute and a half). Throughput is in holds, or
//! events, per second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use retrystorm::engine::{EventQueue, Nanos};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::time::Duration;

/// Same size as the simulator's events (a tag and a generation-checked handle): 12 bytes.
type Payload = [u32; 3];

/// Mean delay of a rescheduled event: one second of virtual time, in nanoseconds, so that even
/// 10⁷ pending events are ~100 ns apart and ties are rare, as in a herd with full jitter.
const MEAN_DELAY_NS: f64 = 1e9;

/// Exponential delays from a fixed xorshift sequence: deterministic, and cheap enough that the
/// benchmark measures the queue rather than the random number generator.
struct Delays {
    table: Vec<Nanos>,
    next: usize,
}

impl Delays {
    fn new() -> Delays {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let table = (0..1 << 16)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                (-(1.0 - u).ln() * MEAN_DELAY_NS) as Nanos
            })
            .collect();
        Delays { table, next: 0 }
    }

    fn next(&mut self) -> Nanos {
        self.next = (self.next + 1) & (self.table.len() - 1);
        self.table[self.next]
    }
}

/// The two structures behind one interface, so both run the identical workload.
trait Hold {
    fn schedule(&mut self, at: Nanos, event: Payload);
    fn try_next(&mut self) -> Option<(Nanos, Payload)>;
    fn next(&mut self) -> (Nanos, Payload) {
        self.try_next().expect("hold keeps the queue full")
    }
}

impl Hold for EventQueue<Payload> {
    fn schedule(&mut self, at: Nanos, event: Payload) {
        self.push(at, event);
    }
    fn try_next(&mut self) -> Option<(Nanos, Payload)> {
        self.pop()
    }
}

/// The previous queue: a min-heap on (time, insertion number) for FIFO ties.
#[derive(Default)]
struct ReferenceHeap {
    heap: BinaryHeap<Reverse<(Nanos, u64, Payload)>>,
    seq_next: u64,
}

impl Hold for ReferenceHeap {
    fn schedule(&mut self, at: Nanos, event: Payload) {
        self.heap.push(Reverse((at, self.seq_next, event)));
        self.seq_next += 1;
    }
    fn try_next(&mut self) -> Option<(Nanos, Payload)> {
        self.heap.pop().map(|Reverse((at, _, event))| (at, event))
    }
}

fn hold_benchmark<Q: Hold>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    pending: usize,
    mut queue: Q,
) {
    let mut delays = Delays::new();
    for i in 0..pending {
        queue.schedule(delays.next(), [i as u32; 3]);
    }
    c.bench_function(BenchmarkId::new(name, pending), |b| {
        b.iter(|| {
            let (at, event) = queue.next();
            queue.schedule(at + delays.next(), black_box(event));
        })
    });
}

fn queue_hold(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_hold");
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements(1));
    for pending in [1_000, 10_000, 100_000, 1_000_000, 10_000_000] {
        hold_benchmark(&mut group, "radix_heap", pending, EventQueue::<Payload>::new());
        hold_benchmark(&mut group, "binary_heap", pending, ReferenceHeap::default());
    }
    group.finish();
}

/// What a bare M/M/1 loop schedules: no metrics, no retries, no hops.
#[derive(Clone, Copy)]
enum Bare {
    Arrival,
    Departure,
}

/// A bare M/M/1 loop (λ = 800/s, μ = 1,000/s, `customers` arrivals, exponential draws from
/// ChaCha8 as the simulator does) on any queue: the floor under `scenarios` bench `mm1`, which
/// simulates the same model with every metric on. Returns the number of events.
fn bare_mm1<Q: Hold>(queue: &mut Q, customers: u32) -> u64 {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut exp_ns = |mean_ns: f64| (-(1.0 - rng.random::<f64>()).ln() * mean_ns) as Nanos;
    let tag = |event: Bare| [event as u32, 0, 0];
    let (mut arrivals_left, mut waiting, mut busy, mut events) = (customers - 1, 0u32, false, 0u64);
    queue.schedule(exp_ns(1.25e6), tag(Bare::Arrival));
    while let Some((now, event)) = queue.try_next() {
        events += 1;
        if event[0] == Bare::Arrival as u32 {
            if arrivals_left > 0 {
                arrivals_left -= 1;
                queue.schedule(now + exp_ns(1.25e6), tag(Bare::Arrival));
            }
            if busy {
                waiting += 1;
            } else {
                busy = true;
                queue.schedule(now + exp_ns(1e6), tag(Bare::Departure));
            }
        } else if waiting > 0 {
            waiting -= 1;
            queue.schedule(now + exp_ns(1e6), tag(Bare::Departure));
        } else {
            busy = false;
        }
    }
    events
}

fn bare_loop(c: &mut Criterion) {
    let mut group = c.benchmark_group("bare_mm1");
    group.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
    let customers = 1_000_000;
    group.throughput(Throughput::Elements(bare_mm1(&mut ReferenceHeap::default(), customers)));
    group.bench_function(BenchmarkId::new("radix_heap", customers), |b| {
        b.iter(|| bare_mm1(&mut EventQueue::<Payload>::new(), customers))
    });
    group.bench_function(BenchmarkId::new("binary_heap", customers), |b| {
        b.iter(|| bare_mm1(&mut ReferenceHeap::default(), customers))
    });
    group.finish();
}

criterion_group!(benches, queue_hold, bare_loop);
criterion_main!(benches);
