//! A cache hop's side (`kind = "cache"`, docs/MODEL.md "Caches"): the lookup after the hit
//! latency, misses forwarded to the backend through the hop's call edges (`sim::graph`; in a
//! chain, the next hop), the fill when that call succeeds, coalesced misses, and `cache_flush` faults.
//!
//! Hooks: `server.rs::on_service_done` hands a cache hop's attempt to [`Simulation::cache_lookup`];
//! `server.rs::finish_job` calls [`Simulation::cache_settle`] first (fill, and the waiters of a
//! coalesced miss) and [`Simulation::cache_release`] last (answer those waiters the same way).

use super::{Phase, Reply, Simulation};
use crate::engine::{stream, Handle, Nanos, StreamKind};
use crate::model::cache::{Lookup, Store};
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

impl CacheState {
    /// The state of every hop: `Some` for cache hops.
    pub(super) fn for_hops(spec: &SimSpec, seed: u64, replication: u64) -> Vec<Option<CacheState>> {
        spec.hops
            .iter()
            .enumerate()
            .map(|(hop, h)| {
                let c = h.cache()?;
                let mut flushes: Vec<Nanos> = spec
                    .faults
                    .iter()
                    .filter(|f| f.hop == hop && f.kind == FaultKind::CacheFlush)
                    .map(|f| f.from)
                    .collect();
                flushes.sort_unstable();
                Some(CacheState {
                    store: Store::new(c.keys, c.capacity.min(c.keys), c.eviction),
                    rng: stream(seed, replication, StreamKind::Cache, hop as u32),
                    in_flight: HashMap::new(),
                    flushes,
                    flushed: 0,
                })
            })
            .collect()
    }
}

/// Word position of request `request_id`'s draws in its cache hop's stream: the key's uniform
/// at `4·id`, the fill's TTL jitter at `4·id + 2` (each f64 takes two 32-bit words).
fn draw_position(request_id: u64, ttl: bool) -> u128 {
    (u128::from(request_id) << 2) | if ttl { 2 } else { 0 }
}

impl Simulation<'_> {
    fn cache_state(&mut self, hop: usize) -> &mut CacheState {
        self.caches[hop].as_mut().expect("a cache hop has its state")
    }

    /// The key of request `request_id` at cache hop `hop`.
    fn cache_key(&mut self, hop: usize, request_id: u64) -> u32 {
        let spec = self.spec.hops[hop].cache().expect("a cache hop");
        let state = self.caches[hop].as_mut().expect("a cache hop has its state");
        state.rng.set_word_pos(draw_position(request_id, false));
        spec.distribution.key(spec.keys, state.rng.random::<f64>())
    }

    /// Empties the store for every `cache_flush` that has started by now. Flushes are applied
    /// lazily, at the next lookup or fill, which nothing in between can observe.
    fn apply_flushes(&mut self, hop: usize) {
        let now = self.now;
        let state = self.cache_state(hop);
        while state.flushes.get(state.flushed).is_some_and(|&from| from <= now) {
            state.store.clear();
            state.flushed += 1;
        }
    }

    /// The lookup, once the hit latency has passed: a hit answers at once; a miss is forwarded
    /// to the backend through the hop's call edges (a chain's: the next hop, with the hop's
    /// downstream policy), or, with coalescing and a
    /// miss for the same key already in flight, waits for that miss's outcome.
    pub(super) fn cache_lookup(&mut self, handle: Handle, hop: usize) {
        self.apply_flushes(hop);
        let b = self.bucket();
        let request_id = self.attempts.get(handle).expect("live").request_id;
        let key = self.cache_key(hop, request_id);
        let (now, coalesce) = (self.now, self.spec.hops[hop].cache().expect("a cache hop").coalesce);
        self.record.hop_series[hop][b].cache_lookups += 1;
        let state = self.caches[hop].as_mut().expect("a cache hop has its state");
        if state.store.lookup(key, now) == Lookup::Hit {
            self.record.hops[hop].cache_hits += 1;
            self.record.hop_series[hop][b].cache_hits += 1;
            self.finish_job(handle, Reply::Ok);
            return;
        }
        if coalesce {
            if let Some(waiting) = state.in_flight.get_mut(&key) {
                waiting.push(handle);
                self.record.hops[hop].cache_coalesced += 1;
                return;
            }
            state.in_flight.insert(key, Vec::new());
        }
        self.record.hops[hop].cache_misses += 1;
        // The backend call goes through the hop's edges (a chain's cache has one, to the next hop).
        self.start_calls(handle, hop);
    }

    /// At the start of `finish_job`: when `handle` is a miss whose backend call just ended, fill
    /// the entry on success (unless a `cache_flush` window is open) and hand back the misses that
    /// waited for it. `None` for every other job.
    pub(super) fn cache_settle(&mut self, handle: Handle, reply: Reply) -> Option<Vec<Handle>> {
        let a = self.attempts.get(handle).expect("live");
        let hop = a.hop as usize;
        let spec = self.spec.hops[hop].cache()?;
        if a.phase != Phase::Downstream {
            return None;
        }
        let request_id = a.request_id;
        self.apply_flushes(hop);
        let key = self.cache_key(hop, request_id);
        let flushing = self.spec.active_faults(hop, self.now).any(|k| *k == FaultKind::CacheFlush);
        let (now, ttl, jitter, coalesce) = (self.now, spec.ttl, spec.ttl_jitter, spec.coalesce);
        let (seed, replication) = (self.seed, self.replication);
        let state = self.cache_state(hop);
        if reply == Reply::Ok && !flushing {
            let lives = if ttl == Nanos::MAX {
                Nanos::MAX
            } else if jitter > 0.0 {
                state.rng.set_word_pos(draw_position(request_id, true));
                let u: f64 = state.rng.random();
                (ttl as f64 * (1.0 - jitter + 2.0 * jitter * u)).round().max(1.0) as Nanos
            } else {
                ttl
            };
            state.store.insert(key, now.saturating_add(lives));
        }
        if !coalesce {
            return None;
        }
        let waiting = state.in_flight.remove(&key).unwrap_or_else(|| {
            panic!("hop {hop}: a coalesced miss for key {key} ended with no entry in flight (seed {seed}, replication {replication})")
        });
        Some(waiting)
    }

    /// At the end of `finish_job`: the misses that waited on a coalesced fill get its outcome.
    pub(super) fn cache_release(&mut self, waiting: Option<Vec<Handle>>, reply: Reply) {
        for w in waiting.into_iter().flatten() {
            self.finish_job(w, reply);
        }
    }
}
