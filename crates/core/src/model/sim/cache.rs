//! A cache hop's side (`kind = "cache"`, docs/MODEL.md "Caches"): the lookup after the hit
//! latency, misses forwarded to the backend through the hop's call edges (`sim::graph`; in a
//! chain, the next hop), the fill when that call succeeds, coalesced misses, and `cache_flush` faults.
//!
//! Hooks: `server.rs::on_service_done` hands a cache hop's attempt to [`Simulation::cache_lookup`];
//! `server.rs::finish_job` calls [`Simulation::cache_settle`] first (fill, and the waiters of a
//! coalesced miss) and [`Simulation::cache_release`] last (answer those waiters the same way).
//!
//! The decisions (the key, hit or miss, coalescing, the fill and its TTL, flushes) are
//! [`super::cache_state`]'s; this file applies them.

use super::cache_state::Lookup;
use super::{Phase, Reply, Simulation};
use crate::engine::Handle;
use crate::model::FaultKind;

impl Simulation<'_> {
    /// The lookup, once the hit latency has passed: a hit answers at once; a miss is forwarded
    /// to the backend through the hop's call edges (a chain's: the next hop, with the hop's
    /// downstream policy), or, with coalescing and a
    /// miss for the same key already in flight, waits for that miss's outcome.
    pub(super) fn cache_lookup(&mut self, handle: Handle, hop: usize) {
        let b = self.bucket();
        let request_id = self.attempts.get(handle).expect("live").request_id;
        let spec = self.spec.hops[hop].cache().expect("a cache hop");
        let state = self.caches[hop].as_mut().expect("a cache hop has its state");
        let lookup = state.lookup(spec, handle, request_id, self.now);
        self.record.hop_series[hop][b].cache_lookups += 1;
        match lookup {
            Lookup::Hit => {
                self.record.hops[hop].cache_hits += 1;
                self.record.hop_series[hop][b].cache_hits += 1;
                self.finish_job(handle, Reply::Ok);
            }
            Lookup::JoinFlight => self.record.hops[hop].cache_coalesced += 1,
            Lookup::Miss => {
                self.record.hops[hop].cache_misses += 1;
                // The backend call goes through the hop's edges (a chain's cache has one, to the next hop).
                self.start_calls(handle, hop);
            }
        }
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
        let flushing = self.spec.active_faults(hop, self.now).any(|k| *k == FaultKind::CacheFlush);
        let state = self.caches[hop].as_mut().expect("a cache hop has its state");
        state.settle(spec, a.request_id, self.now, reply == Reply::Ok, flushing).unwrap_or_else(|key| {
            let (seed, replication) = (self.seed, self.replication);
            panic!("hop {hop}: a coalesced miss for key {key} ended with no entry in flight (seed {seed}, replication {replication})")
        })
    }

    /// At the end of `finish_job`: the misses that waited on a coalesced fill get its outcome.
    pub(super) fn cache_release(&mut self, waiting: Option<Vec<Handle>>, reply: Reply) {
        for w in waiting.into_iter().flatten() {
            self.finish_job(w, reply);
        }
    }
}
