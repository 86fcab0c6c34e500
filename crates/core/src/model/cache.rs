//! A cache in front of a backend hop (`kind = "cache"`): its validated description, the key
//! space requests draw from, and the bounded LRU/FIFO store with TTLs (docs/MODEL.md, "Caches").

use super::dist::Dist;
use crate::engine::Nanos;
use std::sync::{Arc, Mutex, Weak};

/// Most keys a key space may have (the store indexes keys densely: 4 bytes per key, plus 8 per
/// key for a Zipf table).
pub const KEYS_MAX: u32 = 10_000_000;

/// How a request's key is drawn from `0..keys`.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyDistribution {
    /// Every key equally likely.
    Uniform,
    /// Key k (0-based rank) with probability ∝ 1/(k+1)^s.
    Zipf {
        /// The exponent s (> 0).
        s: f64,
        /// Cumulative probabilities, `cdf[k]` = P(key ≤ k); the last is 1 (shared by the specs
        /// with the same keys and exponent).
        cdf: Arc<[f64]>,
    },
}

impl KeyDistribution {
    /// A Zipf distribution over `keys` keys with exponent `s`. Its table is built once per
    /// (keys, s) while any spec holds it: variants that differ elsewhere share one (40 variants of
    /// a 10M-key cache held 40 tables of 80 MB before the memory estimate could refuse them).
    pub fn zipf(keys: u32, s: f64) -> KeyDistribution {
        type Tables = Vec<((u32, u64), Weak<[f64]>)>;
        static TABLES: Mutex<Tables> = Mutex::new(Vec::new());
        let id = (keys, s.to_bits());
        let mut tables = TABLES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        tables.retain(|(_, table)| table.strong_count() > 0);
        if let Some(cdf) = tables.iter().find(|(at, _)| *at == id).and_then(|(_, table)| table.upgrade()) {
            return KeyDistribution::Zipf { s, cdf };
        }
        let weights: Vec<f64> = (1..=keys).map(|k| f64::from(k).powf(-s)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w;
                acc / total
            })
            .collect();
        if let Some(last) = cdf.last_mut() {
            *last = 1.0;
        }
        let cdf: Arc<[f64]> = cdf.into();
        tables.push((id, Arc::downgrade(&cdf)));
        KeyDistribution::Zipf { s, cdf }
    }

    /// The key a uniform draw `u` in [0, 1) selects among `keys` keys (inverse CDF).
    pub fn key(&self, keys: u32, u: f64) -> u32 {
        match self {
            KeyDistribution::Uniform => ((u * f64::from(keys)) as u32).min(keys - 1),
            KeyDistribution::Zipf { cdf, .. } => (cdf.partition_point(|&c| c <= u) as u32).min(keys - 1),
        }
    }

    /// The probability of key `k` (0-based).
    pub fn probability(&self, keys: u32, k: u32) -> f64 {
        match self {
            KeyDistribution::Uniform => 1.0 / f64::from(keys),
            KeyDistribution::Zipf { cdf, .. } => cdf[k as usize] - if k == 0 { 0.0 } else { cdf[k as usize - 1] },
        }
    }
}

/// Which entry a full store evicts (read from its snake_case name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Eviction {
    /// The least recently used (a hit refreshes an entry).
    Lru,
    /// The oldest inserted (a hit changes nothing).
    Fifo,
}

/// A validated cache hop.
#[derive(Clone, Debug)]
pub struct CacheSpec {
    /// Size of the key space (1…[`KEYS_MAX`]).
    pub keys: u32,
    /// How a request's key is drawn.
    pub distribution: KeyDistribution,
    /// How long a filled entry lives (`Nanos::MAX`: forever).
    pub ttl: Nanos,
    /// Each entry's TTL is `ttl × U(1 − j, 1 + j)`; 0 for a fixed TTL.
    pub ttl_jitter: f64,
    /// Most entries held (`u32::MAX`: unbounded).
    pub capacity: u32,
    /// Which entry a full store evicts.
    pub eviction: Eviction,
    /// One miss per key goes to the backend; other misses for that key wait for its fill.
    pub coalesce: bool,
    /// Time to answer a lookup (hit or miss) before the hit's reply or the miss's backend call.
    pub hit_latency: Dist,
}

const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u32,
    expires_at: Nanos,
    prev: u32,
    next: u32,
}

/// A bounded key store with per-entry expiry and LRU or FIFO eviction: a doubly linked list
/// over slots (head = next victim) and a dense key → slot index. Every operation is O(1).
#[derive(Clone, Debug)]
pub struct Store {
    slots: Vec<Entry>,
    free: Vec<u32>,
    index: Vec<u32>,
    head: u32,
    tail: u32,
    len: u32,
    capacity: u32,
    eviction: Eviction,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A live entry.
    Hit,
    /// No entry (never filled, evicted, or flushed).
    Absent,
    /// An entry whose TTL had passed: removed, a miss.
    Expired,
}

impl Store {
    /// Upper bound of the bytes a store for `keys` keys holding at most `capacity` entries
    /// allocates: the key index, and the entry slots and free list (at most one per key, and
    /// up to twice the entries a `Vec` holds while it grows). For the memory estimate.
    pub fn bytes_bound(keys: u32, capacity: u32) -> u64 {
        let entries = u64::from(capacity.min(keys));
        u64::from(keys) * std::mem::size_of::<u32>() as u64
            + 2 * entries * (std::mem::size_of::<Entry>() + std::mem::size_of::<u32>()) as u64
    }

    /// An empty store for keys `0..keys` holding at most `capacity` entries.
    pub fn new(keys: u32, capacity: u32, eviction: Eviction) -> Store {
        Store {
            slots: Vec::new(),
            free: Vec::new(),
            index: vec![NONE; keys as usize],
            head: NONE,
            tail: NONE,
            len: 0,
            capacity,
            eviction,
        }
    }

    /// Entries held.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Looks `key` up at `now`: a live entry is a hit (and, under LRU, becomes the most recently
    /// used); an expired one is removed.
    pub fn lookup(&mut self, key: u32, now: Nanos) -> Lookup {
        let slot = self.index[key as usize];
        if slot == NONE {
            return Lookup::Absent;
        }
        if now >= self.slots[slot as usize].expires_at {
            self.remove(slot);
            return Lookup::Expired;
        }
        if self.eviction == Eviction::Lru {
            self.unlink(slot);
            self.push_back(slot);
        }
        Lookup::Hit
    }

    /// Fills `key` until `expires_at`: an existing entry is refreshed (and becomes the newest);
    /// a new one evicts the head when the store is full. Returns the evicted key, if any.
    pub fn insert(&mut self, key: u32, expires_at: Nanos) -> Option<u32> {
        let slot = self.index[key as usize];
        if slot != NONE {
            self.slots[slot as usize].expires_at = expires_at;
            self.unlink(slot);
            self.push_back(slot);
            return None;
        }
        if self.capacity == 0 {
            return None;
        }
        let mut evicted = None;
        if self.len >= self.capacity {
            let victim = self.head;
            evicted = Some(self.slots[victim as usize].key);
            self.remove(victim);
        }
        let entry = Entry { key, expires_at, prev: NONE, next: NONE };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = entry;
                s
            }
            None => {
                self.slots.push(entry);
                (self.slots.len() - 1) as u32
            }
        };
        self.index[key as usize] = slot;
        self.len += 1;
        self.push_back(slot);
        evicted
    }

    /// Empties the store (a `cache_flush`).
    pub fn clear(&mut self) {
        let mut s = self.head;
        while s != NONE {
            let next = self.slots[s as usize].next;
            self.index[self.slots[s as usize].key as usize] = NONE;
            s = next;
        }
        self.slots.clear();
        self.free.clear();
        self.head = NONE;
        self.tail = NONE;
        self.len = 0;
    }

    /// Keys from the next victim to the newest (for tests and assertions).
    pub fn order(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.len as usize);
        let mut s = self.head;
        while s != NONE {
            out.push(self.slots[s as usize].key);
            s = self.slots[s as usize].next;
        }
        out
    }

    fn remove(&mut self, slot: u32) {
        self.unlink(slot);
        let key = self.slots[slot as usize].key;
        self.index[key as usize] = NONE;
        self.free.push(slot);
        self.len -= 1;
    }

    fn unlink(&mut self, slot: u32) {
        let Entry { prev, next, .. } = self.slots[slot as usize];
        if prev == NONE {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
    }

    fn push_back(&mut self, slot: u32) {
        let tail = self.tail;
        let e = &mut self.slots[slot as usize];
        e.prev = tail;
        e.next = NONE;
        if tail == NONE {
            self.head = slot;
        } else {
            self.slots[tail as usize].next = slot;
        }
        self.tail = slot;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, StreamKind};
    use rand::RngExt;

    /// A plainly written LRU (a vector ordered oldest → newest) to check the linked one against.
    fn reference_lru(ops: &[(bool, u32)], capacity: usize) -> (Vec<bool>, Vec<u32>) {
        let mut order: Vec<u32> = Vec::new();
        let mut hits = Vec::new();
        for &(fill, key) in ops {
            let pos = order.iter().position(|&k| k == key);
            if fill {
                if let Some(p) = pos {
                    order.remove(p);
                } else if order.len() == capacity {
                    order.remove(0);
                }
                order.push(key);
            } else {
                hits.push(pos.is_some());
                if let Some(p) = pos {
                    order.remove(p);
                    order.push(key);
                }
            }
        }
        (hits, order)
    }

    #[test]
    fn lru_evicts_the_least_recently_used() {
        let mut s = Store::new(10, 3, Eviction::Lru);
        for k in [1, 2, 3] {
            assert_eq!(s.insert(k, Nanos::MAX), None);
        }
        assert_eq!(s.lookup(1, 0), Lookup::Hit); // 1 becomes the newest: order 2, 3, 1
        assert_eq!(s.insert(4, Nanos::MAX), Some(2));
        assert_eq!(s.order(), vec![3, 1, 4]);
        assert_eq!(s.lookup(2, 0), Lookup::Absent);
        assert_eq!(s.insert(3, Nanos::MAX), None); // a refill refreshes: 1, 4, 3
        assert_eq!(s.insert(5, Nanos::MAX), Some(1));
        assert_eq!(s.order(), vec![4, 3, 5]);
        assert_eq!(s.len(), 3);
    }

    #[test]
    fn fifo_ignores_hits() {
        let mut s = Store::new(10, 2, Eviction::Fifo);
        s.insert(1, Nanos::MAX);
        s.insert(2, Nanos::MAX);
        assert_eq!(s.lookup(1, 0), Lookup::Hit);
        assert_eq!(s.insert(3, Nanos::MAX), Some(1));
        assert_eq!(s.order(), vec![2, 3]);
    }

    #[test]
    fn lru_matches_a_plain_reference_on_random_operations() {
        let mut rng = stream(5, 0, StreamKind::Aux, 0);
        for capacity in [1usize, 2, 7, 30] {
            let ops: Vec<(bool, u32)> =
                (0..5000).map(|_| (rng.random::<f64>() < 0.4, rng.random_range(0..40u32))).collect();
            let mut s = Store::new(40, capacity as u32, Eviction::Lru);
            let mut hits = Vec::new();
            for &(fill, key) in &ops {
                if fill {
                    s.insert(key, Nanos::MAX);
                } else {
                    hits.push(s.lookup(key, 0) == Lookup::Hit);
                }
            }
            let (want_hits, want_order) = reference_lru(&ops, capacity);
            assert_eq!(hits, want_hits, "capacity {capacity}");
            assert_eq!(s.order(), want_order, "capacity {capacity}");
        }
    }

    #[test]
    fn entries_expire_at_their_ttl() {
        let mut s = Store::new(4, 4, Eviction::Lru);
        s.insert(0, 100);
        assert_eq!(s.lookup(0, 99), Lookup::Hit);
        assert_eq!(s.lookup(0, 100), Lookup::Expired);
        assert_eq!(s.lookup(0, 101), Lookup::Absent);
        assert!(s.is_empty());
    }

    #[test]
    fn clear_empties_and_the_store_refills() {
        let mut s = Store::new(5, 3, Eviction::Lru);
        for k in 0..5 {
            s.insert(k, Nanos::MAX);
        }
        s.clear();
        assert!(s.is_empty());
        assert!((0..5).all(|k| s.lookup(k, 0) == Lookup::Absent));
        s.insert(4, Nanos::MAX);
        assert_eq!(s.order(), vec![4]);
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let mut s = Store::new(3, 0, Eviction::Lru);
        assert_eq!(s.insert(1, Nanos::MAX), None);
        assert_eq!(s.lookup(1, 0), Lookup::Absent);
    }

    #[test]
    fn zipf_keys_follow_their_probabilities() {
        // 200,000 draws over 50 keys, s = 1.1: each key's count is binomial; 5 sd bounds.
        let (keys, n) = (50u32, 200_000u32);
        let d = KeyDistribution::zipf(keys, 1.1);
        let mut rng = stream(9, 0, StreamKind::Aux, 1);
        let mut counts = vec![0u32; keys as usize];
        for _ in 0..n {
            counts[d.key(keys, rng.random::<f64>()) as usize] += 1;
        }
        let h1: f64 = (1..=keys).map(|k| f64::from(k).powf(-1.1)).sum();
        for (k, &c) in counts.iter().enumerate() {
            let p = (k as f64 + 1.0).powf(-1.1) / h1;
            assert!((d.probability(keys, k as u32) - p).abs() < 1e-12);
            let (mean, sd) = (f64::from(n) * p, (f64::from(n) * p * (1.0 - p)).sqrt());
            assert!((f64::from(c) - mean).abs() < 5.0 * sd, "key {k}: {c} vs {mean:.0} ± {sd:.0}");
        }
        assert_eq!(KeyDistribution::Uniform.key(7, 0.999_999_999), 6);
        assert_eq!(d.key(keys, 0.0), 0);
    }
}
