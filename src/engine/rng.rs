//! Deterministic random streams derived from the master seed.
//!
//! The rule (portable, documented in ARCHITECTURE.md): the ChaCha8 key is the 32 bytes
//! `master_seed (u64 LE) ‖ replication (u64 LE) ‖ 0 (16 bytes)`, and the ChaCha stream id is
//! `kind (u64) << 32 | index`. Every purpose (arrivals, service times per hop, jitter, …) has its
//! own stream, so changing a retry policy leaves the arrival times untouched: variants of one
//! comparison see the same arrivals (common random numbers).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a random stream is used for. The discriminant is part of the seeding rule: never renumber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum StreamKind {
    /// Arrival times and client start offsets (index: tenant).
    Arrivals = 1,
    /// Service times (index: hop).
    Service = 2,
    /// Network delays (index: hop).
    Network = 3,
    /// Backoff jitter (index: hop of the caller's target).
    Jitter = 4,
    /// Probabilistic faults such as `error_rate` (index: hop).
    Faults = 5,
    /// Payload mix: invalid and poison events (index: tenant).
    Payload = 6,
    /// Free for tests and tools (index: anything).
    Aux = 7,
    /// Adaptive throttling's local-rejection coin (index: hop of the caller's target).
    Throttle = 8,
    /// A cache hop's key of each request and the jitter of each fill's TTL, read by random
    /// access at the request id's position (index: hop).
    Cache = 9,
}

/// The random stream `kind`/`index` of replication `replication` under `master_seed`.
pub fn stream(master_seed: u64, replication: u64, kind: StreamKind, index: u32) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&master_seed.to_le_bytes());
    key[8..16].copy_from_slice(&replication.to_le_bytes());
    let mut rng = ChaCha8Rng::from_seed(key);
    rng.set_stream(((kind as u64) << 32) | u64::from(index));
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn value_stability() {
        // Fixed seed ⇒ fixed first values. If this changes, a dependency or the seeding rule
        // changed and every published result shifts: bump the version and say so.
        let mut rng = stream(42, 0, StreamKind::Arrivals, 0);
        let first: Vec<u64> = (0..3).map(|_| rng.random::<u64>()).collect();
        let mut again = stream(42, 0, StreamKind::Arrivals, 0);
        let second: Vec<u64> = (0..3).map(|_| again.random::<u64>()).collect();
        assert_eq!(first, second);
        assert_eq!(first, VALUE_STABILITY_42);
    }

    const VALUE_STABILITY_42: [u64; 3] =
        [8_545_297_730_243_593_968, 7_370_451_652_255_093_166, 15_917_065_720_992_843_468];

    #[test]
    fn range_draws_are_stable() {
        // The Poisson arrivals pick a client with `random_range`, between f64 draws of the same
        // stream: how many words a range draw consumes is part of the value contract. rand 0.8
        // rejected up to half the words for small ranges (here [0, 0, 399, 171_260_673, 0, 0, 651,
        // 463_257_365] from 14 words); rand 0.9+ samples by Canon's method.
        let mut rng = stream(42, 0, StreamKind::Arrivals, 0);
        let picks: Vec<u32> = RANGES.iter().map(|&n| rng.random_range(0..n)).collect();
        assert_eq!((picks, rng.get_word_pos()), (RANGE_STABILITY_42.to_vec(), RANGE_WORDS_42));
    }

    const RANGES: [u32; 8] = [1, 3, 1000, (1 << 31) + 1, 1, 3, 1000, (1 << 31) + 1];
    const RANGE_STABILITY_42: [u32; 8] = [0, 1, 214, 858_033_501, 0, 2, 79, 1_831_981_192];
    const RANGE_WORDS_42: u128 = 9;

    #[test]
    fn streams_differ() {
        let a: u64 = stream(1, 0, StreamKind::Service, 0).random();
        let b: u64 = stream(1, 0, StreamKind::Service, 1).random();
        let c: u64 = stream(1, 1, StreamKind::Service, 0).random();
        let d: u64 = stream(2, 0, StreamKind::Service, 0).random();
        assert!(a != b && a != c && a != d && b != c);
    }
}
