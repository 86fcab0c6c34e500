//! What this machine charges for memory at the 1M- and 10M-client herds' sizes, measured in the
//! same run as the herds themselves (`benches/retake.sh`), so that their 10M ÷ 1M ratio can be
//! read against the machine's own scaling rather than against a figure quoted from elsewhere.
//!
//! Two probes, each at a small and a large size (ten times larger by default):
//! - **first touch**: writing one byte per 4 KiB page of a fresh allocation (the kernel maps
//!   and zeroes each page, and a virtual machine's host may have to back it first), as the herds
//!   do when their slab and queue grow to their peak;
//! - **random access**: a read-modify-write of one 128-byte, line-aligned record chosen at
//!   random among N, each prefetched a few accesses ahead, in an array advised to huge pages:
//!   what a retry does to its client's budget and breaker states (`model/sim/scoped.rs`).
//!
//! ```text
//! cargo bench --bench machine -- touch 238 2176      # MiB, each after a pause
//! cargo bench --bench machine -- access 1000000 10000000
//! ```
//! Not a test and not a criterion benchmark: a first touch happens once per allocation, so it
//! is timed once, after a pause (`PAUSE_S`) that lets freed memory go back to the host first.

use retrystorm::engine::mix64;
use retrystorm::engine::pages::advise_huge_pages;
use retrystorm::engine::prefetch::prefetch_read;
use std::time::{Duration, Instant};

/// Seconds to wait before each first-touch probe: Linux hands free pages back to a virtual
/// machine's host (free page reporting) after about two seconds.
const PAUSE_S: u64 = 5;

/// Accesses a record is prefetched ahead of its use (as the simulation's lookahead).
const AHEAD: usize = 8;

/// The budgeted herd's per-client slot: two cache lines.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Record {
    words: [u64; 16],
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let (probe, sizes) = args.split_first().unwrap_or_else(|| usage());
    let sizes: Vec<usize> = sizes.iter().map(|s| s.parse().unwrap_or_else(|_| usage())).collect();
    if sizes.is_empty() {
        usage();
    }
    match probe.as_str() {
        "touch" => {
            let times: Vec<f64> = sizes.iter().map(|&mib| first_touch(mib)).collect();
            for (mib, s) in sizes.iter().zip(&times) {
                println!("first touch of {mib} MiB: {s:.3} s ({:.2} ms per 100 MiB)", s * 1e5 / *mib as f64);
            }
            print_ratio("first touch", &sizes, &times);
        }
        "access" => {
            let times: Vec<f64> = sizes.iter().map(|&n| random_access(n)).collect();
            for (n, ns) in sizes.iter().zip(&times) {
                println!("random access among {n} records of 128 B: {ns:.1} ns per access");
            }
            // A run over ten times the clients makes ten times the accesses, each at the cost
            // measured for its size.
            let totals: Vec<f64> = sizes.iter().zip(&times).map(|(&n, ns)| ns * n as f64).collect();
            print_ratio("random access, as many accesses as records", &sizes, &totals);
        }
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: cargo bench --bench machine -- touch <MiB>... | access <records>...");
    std::process::exit(2)
}

/// How the last size's figure compares with the first's, against the ratio of the sizes.
fn print_ratio(what: &str, sizes: &[usize], figures: &[f64]) {
    if let (Some(&small), Some(&large), Some(&a), Some(&b)) =
        (sizes.first(), sizes.last(), figures.first(), figures.last())
    {
        if sizes.len() > 1 && a > 0.0 {
            println!("{what}: {:.1}x the size costs {:.1}x the time", large as f64 / small as f64, b / a);
        }
    }
}

/// Seconds to write one byte in each 4 KiB page of a fresh `mib`-MiB allocation.
fn first_touch(mib: usize) -> f64 {
    std::thread::sleep(Duration::from_secs(PAUSE_S));
    let bytes = mib << 20;
    let start = Instant::now();
    // Zeroed and this large, the allocation is a fresh mapping none of whose pages exist yet.
    let mut memory = vec![0u8; bytes];
    for page in memory.chunks_mut(4096) {
        page[0] = 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    std::hint::black_box(&memory);
    elapsed
}

/// Nanoseconds per access over `3 × n` accesses to random records among `n`, once every record
/// has been written (so no access is a first touch).
fn random_access(n: usize) -> f64 {
    let mut records = Vec::with_capacity(n);
    advise_huge_pages(&records);
    records.resize(n, Record::default());
    let accesses = 3 * n;
    // Record indices from the project's own SplitMix64 step over a counter.
    let mut counter = n as u64;
    let mut next = || {
        counter += 1;
        (mix64(counter) % n as u64) as usize
    };
    let mut ahead = [0usize; AHEAD];
    for slot in &mut ahead {
        *slot = next();
        prefetch_read(&records[*slot]);
    }
    let start = Instant::now();
    let mut sum = 0u64;
    for i in 0..accesses {
        let at = ahead[i % AHEAD];
        let upcoming = next();
        ahead[i % AHEAD] = upcoming;
        prefetch_read(&records[upcoming]);
        let record = &mut records[at];
        record.words[0] = record.words[0].wrapping_add(1);
        record.words[9] ^= record.words[0];
        sum = sum.wrapping_add(record.words[9]);
    }
    let elapsed = start.elapsed().as_secs_f64();
    std::hint::black_box(sum);
    elapsed * 1e9 / accesses as f64
}
