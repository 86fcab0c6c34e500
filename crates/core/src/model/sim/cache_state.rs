//! The decisions of one cache hop, as a state machine: a request's key, the lookup (hit, miss,
//! or a coalesced miss that joins the one in flight), the fill when a miss's backend call ends
//! (its TTL and jitter) and the `cache_flush` faults that empty the store. `sim/cache.rs`
//! applies them (counters, the backend call, the replies); the rules are docs/MODEL.md's,
//! "Caches".

use crate::engine::{stream, Handle, Nanos, StreamKind};
use crate::model::cache::{CacheSpec, Lookup as Stored, Store};
use crate::model::{FaultKind, SimSpec};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// The run-time state of one cache hop.
#[derive(Clone)]
pub(super) struct CacheState {
    store: Store,
    /// Keys and TTL jitter, read by random access at the request id (common random numbers: a
    /// request has the same key in every variant and on every retry).
    pub(super) rng: ChaCha8Rng,
    /// Coalescing: keys with a miss in flight to the backend, and the misses waiting for it.
    /// Only probed by key, never iterated.
    in_flight: HashMap<u32, Vec<Handle>>,
    /// Start times of this hop's `cache_flush` faults, sorted, and how many have been applied.
    flushes: Vec<Nanos>,
    flushed: usize,
}

/// What a lookup decided for an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// A live entry: answer success.
    Hit,
    /// Go to the backend (with coalescing, this miss is now the key's one in flight).
    Miss,
    /// Coalesced: a miss for the key is in flight, and the attempt now waits for its outcome.
    JoinFlight,
}

/// Word position of request `request_id`'s draws in its cache hop's stream: the key's uniform
/// at `4·id`, the fill's TTL jitter at `4·id + 2` (each f64 takes two 32-bit words).
fn draw_position(request_id: u64, ttl: bool) -> u128 {
    (u128::from(request_id) << 2) | if ttl { 2 } else { 0 }
}

impl CacheState {
    /// The state of every hop: `Some` for cache hops.
    pub(super) fn for_hops(spec: &SimSpec, seed: u64, replication: u64) -> Vec<Option<CacheState>> {
        spec.hops
            .iter()
            .enumerate()
            .map(|(hop, h)| {
                let c = h.cache()?;
                let flushes = spec
                    .faults
                    .iter()
                    .filter(|f| f.hop == hop && f.kind == FaultKind::CacheFlush)
                    .map(|f| f.from)
                    .collect();
                Some(CacheState::new(c, stream(seed, replication, StreamKind::Cache, hop as u32), flushes))
            })
            .collect()
    }

    /// An empty store for `spec`, drawing from `rng`, emptied at each of `flushes` (any order).
    fn new(spec: &CacheSpec, rng: ChaCha8Rng, mut flushes: Vec<Nanos>) -> CacheState {
        flushes.sort_unstable();
        CacheState {
            store: Store::new(spec.keys, spec.capacity.min(spec.keys), spec.eviction),
            rng,
            in_flight: HashMap::new(),
            flushes,
            flushed: 0,
        }
    }

    /// The key of request `request_id`: the uniform at its word position, through the key
    /// distribution.
    fn key(&mut self, spec: &CacheSpec, request_id: u64) -> u32 {
        self.rng.set_word_pos(draw_position(request_id, false));
        spec.distribution.key(spec.keys, self.rng.random::<f64>())
    }

    /// Empties the store for every `cache_flush` that has started by `now`. Flushes are applied
    /// lazily, at the next lookup or fill, which nothing in between can observe.
    fn apply_flushes(&mut self, now: Nanos) {
        while self.flushes.get(self.flushed).is_some_and(|&from| from <= now) {
            self.store.clear();
            self.flushed += 1;
        }
    }

    /// The lookup of request `request_id`'s key at `now` for the attempt `handle`, once the hit
    /// latency has passed. An expired entry is removed; with coalescing, a miss becomes its
    /// key's flight and a later miss of that key joins it.
    pub(super) fn lookup(&mut self, spec: &CacheSpec, handle: Handle, request_id: u64, now: Nanos) -> Lookup {
        self.apply_flushes(now);
        let key = self.key(spec, request_id);
        match self.store.lookup(key, now) {
            Stored::Hit => return Lookup::Hit,
            Stored::Absent | Stored::Expired => {}
        }
        if spec.coalesce {
            if let Some(waiting) = self.in_flight.get_mut(&key) {
                waiting.push(handle);
                return Lookup::JoinFlight;
            }
            self.in_flight.insert(key, Vec::new());
        }
        Lookup::Miss
    }

    /// The backend call of request `request_id`'s miss ended at `now` (`ok`: it succeeded):
    /// the entry is filled for its TTL (jittered) unless it failed or a `cache_flush` window is
    /// open (`flushing`). With coalescing, hands back the misses that waited for it (`Some`);
    /// `Err(key)` when no miss of the key was in flight, which the simulation never does.
    pub(super) fn settle(
        &mut self,
        spec: &CacheSpec,
        request_id: u64,
        now: Nanos,
        ok: bool,
        flushing: bool,
    ) -> Result<Option<Vec<Handle>>, u32> {
        self.apply_flushes(now);
        let key = self.key(spec, request_id);
        if ok && !flushing {
            let lives = if spec.ttl == Nanos::MAX {
                Nanos::MAX
            } else if spec.ttl_jitter > 0.0 {
                self.rng.set_word_pos(draw_position(request_id, true));
                let u: f64 = self.rng.random();
                let j = spec.ttl_jitter;
                (spec.ttl as f64 * (1.0 - j + 2.0 * j * u)).round().max(1.0) as Nanos
            } else {
                spec.ttl
            };
            self.store.insert(key, now.saturating_add(lives));
        }
        if !spec.coalesce {
            return Ok(None);
        }
        self.in_flight.remove(&key).map(Some).ok_or(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::cache::{Eviction, KeyDistribution};
    use crate::model::Dist;
    use rand::SeedableRng;

    const S: Nanos = 1_000_000_000;

    fn spec(keys: u32, ttl: Nanos, ttl_jitter: f64, coalesce: bool) -> CacheSpec {
        CacheSpec {
            keys,
            distribution: KeyDistribution::Uniform,
            ttl,
            ttl_jitter,
            capacity: u32::MAX,
            eviction: Eviction::Lru,
            coalesce,
            hit_latency: Dist::Constant { mean: 0 },
        }
    }

    fn state(spec: &CacheSpec, flushes: Vec<Nanos>) -> CacheState {
        CacheState::new(spec, ChaCha8Rng::seed_from_u64(7), flushes)
    }

    fn h(index: u32) -> Handle {
        Handle { index, generation: 0 }
    }

    #[test]
    fn a_miss_fills_on_success_and_the_next_lookup_hits() {
        let spec = spec(1, Nanos::MAX, 0.0, false);
        let mut c = state(&spec, Vec::new());
        assert_eq!(c.lookup(&spec, h(1), 1, 0), Lookup::Miss, "an empty store misses");
        assert_eq!(c.lookup(&spec, h(2), 2, 0), Lookup::Miss, "without coalescing every miss goes to the backend");
        assert_eq!(c.settle(&spec, 1, S, false, false), Ok(None), "a failed backend call fills nothing");
        assert_eq!(c.lookup(&spec, h(3), 3, S), Lookup::Miss);
        assert_eq!(c.settle(&spec, 2, S, true, false), Ok(None));
        assert_eq!(c.lookup(&spec, h(4), 4, S), Lookup::Hit, "the success filled the key");
    }

    #[test]
    fn a_coalesced_miss_waits_for_the_fill_in_flight() {
        let spec = spec(1, Nanos::MAX, 0.0, true);
        let mut c = state(&spec, Vec::new());
        assert_eq!(c.lookup(&spec, h(1), 1, 0), Lookup::Miss);
        assert_eq!(c.lookup(&spec, h(2), 2, 0), Lookup::JoinFlight);
        assert_eq!(c.lookup(&spec, h(3), 3, 0), Lookup::JoinFlight);
        assert_eq!(c.settle(&spec, 1, S, false, false), Ok(Some(vec![h(2), h(3)])), "the waiters share the failure");
        assert_eq!(c.lookup(&spec, h(4), 4, S), Lookup::Miss, "no fill, and no flight left: a new miss");
        assert_eq!(c.settle(&spec, 4, S, true, false), Ok(Some(Vec::new())), "a flight nobody joined");
        assert_eq!(c.lookup(&spec, h(5), 5, S), Lookup::Hit);
        assert_eq!(c.settle(&spec, 5, S, true, false), Err(0), "no miss of key 0 in flight");
    }

    #[test]
    fn an_entry_expires_at_fill_plus_ttl() {
        let spec = spec(1, 5 * S, 0.0, false);
        let mut c = state(&spec, Vec::new());
        c.lookup(&spec, h(1), 1, 0);
        c.settle(&spec, 1, S, true, false).expect("not coalesced");
        assert_eq!(c.lookup(&spec, h(2), 2, 6 * S - 1), Lookup::Hit);
        assert_eq!(c.lookup(&spec, h(3), 3, 6 * S), Lookup::Miss, "a lookup at fill + TTL misses");
        assert_eq!(c.lookup(&spec, h(4), 4, 6 * S), Lookup::Miss, "the expired entry was removed");
    }

    #[test]
    fn a_jittered_ttl_stays_within_its_band_and_is_the_requests_own() {
        let spec = spec(1, 10 * S, 0.5, false);
        let lives = |request_id| {
            let mut c = state(&spec, Vec::new());
            c.settle(&spec, request_id, 0, true, false).expect("not coalesced");
            // The first instant the entry misses, by bisection over the band [5 s, 15 s].
            let (mut lo, mut hi) = (5 * S - 1, 15 * S + 1);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                let mut probe = c.clone();
                if probe.lookup(&spec, h(0), 0, mid) == Lookup::Hit {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi
        };
        let ttls: Vec<Nanos> = (0..20).map(lives).collect();
        assert!(ttls.iter().all(|&t| (5 * S..=15 * S).contains(&t)), "{ttls:?}");
        assert!(ttls.iter().any(|&t| t != ttls[0]), "each fill draws its own TTL: {ttls:?}");
        assert_eq!(lives(3), ttls[3], "a request's jitter is read at its own position");
    }

    #[test]
    fn a_request_keeps_its_key_on_every_lookup() {
        let spec = spec(1_000, Nanos::MAX, 0.0, false);
        let mut c = state(&spec, Vec::new());
        let keys: Vec<u32> = (0..50).map(|r| c.key(&spec, r)).collect();
        let again: Vec<u32> = (0..50).rev().map(|r| c.key(&spec, r)).collect();
        assert_eq!(keys, again.into_iter().rev().collect::<Vec<_>>(), "random access, not a sequence");
        assert!(keys.iter().all(|&k| k < 1_000));
        assert!(keys.iter().any(|&k| k != keys[0]), "requests draw different keys");
    }

    #[test]
    fn a_flush_empties_the_store_and_a_flush_window_drops_fills() {
        let spec = spec(1, Nanos::MAX, 0.0, false);
        let mut c = state(&spec, vec![20 * S, 10 * S]);
        c.settle(&spec, 1, 0, true, false).expect("not coalesced");
        assert_eq!(c.lookup(&spec, h(1), 1, 10 * S - 1), Lookup::Hit);
        assert_eq!(c.lookup(&spec, h(2), 2, 10 * S), Lookup::Miss, "flushed at the fault's start");
        c.settle(&spec, 2, 11 * S, true, true).expect("not coalesced");
        assert_eq!(c.lookup(&spec, h(3), 3, 12 * S), Lookup::Miss, "a fill inside the window is dropped");
        c.settle(&spec, 3, 12 * S, true, false).expect("not coalesced");
        assert_eq!(c.lookup(&spec, h(4), 4, 20 * S - 1), Lookup::Hit);
        assert_eq!(c.lookup(&spec, h(5), 5, 20 * S), Lookup::Miss, "the second flush, listed first, applies too");
    }
}
