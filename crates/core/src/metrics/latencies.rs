//! The latencies of one run: the exact samples while there are few, an HdrHistogram once there
//! are many. Every value read from it (quantiles, the largest as the quantile 1, the histogram
//! it adds to its variant's) is exactly what the HdrHistogram of the same samples gives: a short
//! run no longer pays for growing, walking and merging a histogram's whole counts array, which
//! was most of the fixed cost of a replication (docs/PERFORMANCE.md, "Many small runs"). Past
//! the exact samples, a run keeps HdrHistogram's counts array itself (`Counts`): recording is
//! an index and an increment, where HdrHistogram's `record` took about 67 instructions (two per
//! request, a twelfth of a queue-bound run's time); a histogram is made of the counts when one
//! is read.

use super::new_latency_histogram;
use hdrhistogram::Histogram;
use std::sync::OnceLock;

/// Samples kept exactly before they move into a histogram: 32 KiB, about the size of the
/// histogram's counts array for latencies of a few seconds.
pub const EXACT_MAX: usize = 4096;

/// Latencies in microseconds (see the module's documentation).
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    /// The samples, unsorted, while there are at most [`EXACT_MAX`] and `counts` is `None`.
    exact: Vec<u64>,
    /// Every sample, once there were more than [`EXACT_MAX`].
    counts: Option<Counts>,
}

/// HdrHistogram's counts array for the latency configuration ([`new_latency_histogram`]: 3
/// significant digits, lowest discernible value 1, so 2,048 sub-buckets of which the upper
/// 1,024 repeat at every power of two), indexed as HdrHistogram indexes it: a value's slot is
/// the one HdrHistogram's `record` increments, and [`lowest_at`] the lowest value of a slot, which
/// HdrHistogram records into the same slot. A test checks both against HdrHistogram.
#[derive(Clone, Debug, Default)]
struct Counts {
    counts: Vec<u64>,
    total: u64,
}

/// log2 of half the sub-buckets (HdrHistogram's `sub_bucket_half_count_magnitude`).
const HALF_MAGNITUDE: u32 = 10;
/// Sub-buckets less one (`sub_bucket_mask` with unit magnitude 0).
const SUB_BUCKET_MASK: u64 = (1 << (HALF_MAGNITUDE + 1)) - 1;
/// HdrHistogram's `leading_zero_count_base`: 64 − unit magnitude 0 − sub-bucket magnitude 11.
const LEADING_ZERO_BASE: u32 = 64 - (HALF_MAGNITUDE + 1);

/// The slot of `value` (HdrHistogram's `index_for`).
#[inline]
fn slot_of(value: u64) -> usize {
    let bucket = LEADING_ZERO_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = (value >> bucket) as usize;
    ((bucket as usize) << HALF_MAGNITUDE) + sub_bucket
}

/// The lowest value of slot `slot` (HdrHistogram's `value_for`).
fn lowest_at(slot: usize) -> u64 {
    let (bucket, sub_bucket) = ((slot >> HALF_MAGNITUDE) as u32, (slot & ((1 << HALF_MAGNITUDE) - 1)) as u64);
    match bucket {
        0 => sub_bucket,
        _ => (sub_bucket + (1 << HALF_MAGNITUDE)) << (bucket - 1),
    }
}

impl Counts {
    #[inline]
    fn record(&mut self, value: u64) {
        self.count(value);
        self.total += 1;
    }

    /// Every value of `values` recorded (the total counted once).
    fn record_all(&mut self, values: &[u64]) {
        for &value in values {
            self.count(value);
        }
        self.total += values.len() as u64;
    }

    /// `value`'s slot counted, the total left to the caller.
    #[inline]
    fn count(&mut self, value: u64) {
        let slot = slot_of(value);
        match self.counts.get_mut(slot) {
            Some(count) => *count += 1,
            None => self.grow_and_record(slot),
        }
    }

    #[cold]
    #[inline(never)]
    fn grow_and_record(&mut self, slot: usize) {
        self.counts.resize(slot + 1, 0);
        self.counts[slot] += 1;
    }

    /// Records every count into `into` (a histogram of the latency configuration).
    fn add_to(&self, into: &mut Histogram<u64>) {
        for (slot, &n) in self.counts.iter().enumerate().filter(|(_, &n)| n > 0) {
            into.record_n(lowest_at(slot), n).expect("auto-resizing histograms accept any u64");
        }
    }

    /// The counts of `other` added.
    fn extend(&mut self, other: &Counts) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, &theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.total += other.total;
    }
}

/// The exact samples [`Latencies::reserve_for`] makes room for when about `requests` are
/// expected: 4 standard deviations of a Poisson count above it (a count of hundreds exceeds it
/// about once in 30,000 runs, which then grow once), at most [`EXACT_MAX`].
pub fn room_for(requests: f64) -> usize {
    let requests = requests.max(0.0);
    ((requests + 4.0 * requests.sqrt()).ceil() as usize).min(EXACT_MAX)
}

/// A histogram of the latency configuration, for its value equivalence (which does not depend on
/// the counts it holds).
fn config() -> &'static Histogram<u64> {
    static CONFIG: OnceLock<Histogram<u64>> = OnceLock::new();
    CONFIG.get_or_init(new_latency_histogram)
}

impl Latencies {
    /// No latency yet (allocates nothing).
    pub fn new() -> Latencies {
        Latencies::default()
    }

    /// Room, made once, for the latencies of a run expected to record about `requests`: a
    /// short run's samples then grow in one allocation, not about ten.
    pub fn reserve_for(&mut self, requests: f64) {
        if self.counts.is_none() {
            self.exact.reserve(room_for(requests).saturating_sub(self.exact.len()));
        }
    }

    /// One latency of `us` microseconds.
    #[inline]
    pub fn record(&mut self, us: u64) {
        if let Some(counts) = &mut self.counts {
            counts.record(us);
        } else if self.exact.len() < EXACT_MAX {
            self.exact.push(us);
        } else {
            self.move_into_counts(us);
        }
    }

    /// The sample past [`EXACT_MAX`]: every sample moves into the counts.
    #[cold]
    #[inline(never)]
    fn move_into_counts(&mut self, us: u64) {
        self.counts_mut().record(us);
    }

    /// The counts, made of the exact samples (which then go) if there are none yet.
    fn counts_mut(&mut self) -> &mut Counts {
        if self.counts.is_none() {
            let mut counts = Counts::default();
            counts.record_all(&self.exact);
            self.exact = Vec::new();
            self.counts = Some(counts);
        }
        self.counts.as_mut().expect("made above")
    }

    /// The latencies recorded.
    pub fn len(&self) -> u64 {
        self.counts.as_ref().map_or(self.exact.len() as u64, |c| c.total)
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values at `quantiles` (each in (0, 1], ascending; panics otherwise), as HdrHistogram's
    /// `value_at_quantiles` gives them: the highest value equivalent to the sample of rank
    /// ⌈q·n⌉ (at least 1); the quantile 1 is the largest (HdrHistogram's `max`). `None` when
    /// empty.
    pub fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> Option<[u64; N]> {
        assert!(
            quantiles.iter().all(|&q| q > 0.0) && quantiles.is_sorted(),
            "quantiles {quantiles:?}: each above 0 (the lowest equivalent value at 0 is not offered), ascending"
        );
        if self.is_empty() {
            return None;
        }
        let mut out = [0; N];
        match &self.counts {
            Some(_) => {
                for (o, v) in out.iter_mut().zip(self.to_histogram().value_at_quantiles(quantiles)) {
                    *o = v;
                }
            }
            None => {
                // Each rank's sample by selection, not a sort: ranks ascend, so each selection
                // searches only the samples above the previous one.
                let mut values = self.exact.clone();
                let n = values.len();
                let mut from = 0;
                for (o, q) in out.iter_mut().zip(quantiles) {
                    let i = ((q.min(1.0) * n as f64).ceil() as usize).clamp(1, n) - 1;
                    values[from..].select_nth_unstable(i - from);
                    *o = config().highest_equivalent(values[i]);
                    from = i;
                }
            }
        }
        Some(out)
    }

    /// The value at one quantile in (0, 1] (see [`Latencies::quantiles`]).
    pub fn quantile(&self, quantile: f64) -> Option<u64> {
        self.quantiles([quantile]).map(|[v]| v)
    }

    /// Adds every latency to `into` (a histogram of the latency configuration).
    pub fn add_to(&self, into: &mut Histogram<u64>) {
        match &self.counts {
            Some(c) => c.add_to(into),
            None => {
                for &v in &self.exact {
                    into.record(v).expect("auto-resizing histograms accept any u64");
                }
            }
        }
    }

    /// Adds every latency of `other`.
    pub fn extend(&mut self, other: &Latencies) {
        match &other.counts {
            Some(theirs) => self.counts_mut().extend(theirs),
            // Both exact and within the limit: the samples are appended as they are.
            None if self.counts.is_none() && self.exact.len() + other.exact.len() <= EXACT_MAX => {
                self.exact.extend_from_slice(&other.exact);
            }
            None => self.counts_mut().record_all(&other.exact),
        }
    }

    /// The latencies as a histogram of the latency configuration.
    pub fn to_histogram(&self) -> Histogram<u64> {
        let mut h = new_latency_histogram();
        self.add_to(&mut h);
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const QUANTILES: [f64; 6] = [1e-9, 0.5, 0.9, 0.99, 0.999, 1.0];

    /// Reads everything a `Latencies` offers off it and off HdrHistogram's own histogram of the
    /// same samples.
    fn both(samples: &[u64]) -> (Latencies, Histogram<u64>) {
        let mut l = Latencies::new();
        let mut h = new_latency_histogram();
        for &v in samples {
            l.record(v);
            h.record(v).unwrap();
        }
        (l, h)
    }

    fn assert_same(samples: &[u64], what: &str) {
        let (l, h) = both(samples);
        assert_eq!(l.len(), h.len(), "{what}: count");
        let expected: Vec<u64> = h.value_at_quantiles(QUANTILES).collect();
        assert_eq!(l.quantiles(QUANTILES).map(|q| q.to_vec()), (!h.is_empty()).then_some(expected), "{what}");
        assert_eq!(l.quantile(1.0), (!h.is_empty()).then(|| h.max()), "{what}: the quantile 1 is HdrHistogram's max");
        let mut into = new_latency_histogram();
        l.add_to(&mut into);
        assert_eq!(into, h, "{what}: the histogram added to");
        assert_eq!(l.to_histogram(), h, "{what}: as a histogram");
    }

    #[test]
    fn every_reading_is_hdrhistograms_below_and_above_the_exact_limit() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for n in [0, 1, 2, 3, 10, 999, EXACT_MAX - 1, EXACT_MAX, EXACT_MAX + 1, 3 * EXACT_MAX] {
            // Values across every bucket size: 0, the exact first bucket, and up to hours.
            let samples: Vec<u64> = (0..n)
                .map(|_| {
                    let bits: u32 = rng.random_range(1..34);
                    if rng.random_bool(0.01) {
                        0
                    } else {
                        rng.random_range(0..1u64 << bits)
                    }
                })
                .collect();
            assert_same(&samples, &format!("{n} samples (seed 7)"));
        }
        assert_same(&[u64::MAX / 4, 1, 1 << 40], "huge values");
        assert_same(&[5; 100], "one value 100 times");
    }

    /// Rule: the room made for a run's expected latencies holds them without growing (a
    /// Poisson count 4 sd above its mean too), never more than the exact limit, none for none.
    /// (A tenant of one request gets room for 5: the memory estimate counts what is made.)
    #[test]
    fn the_room_made_holds_the_expected_samples_in_one_allocation() {
        for requests in [0.0, 1.0, 800.0, 3_000.0] {
            let mut l = Latencies::new();
            l.reserve_for(requests);
            let room = l.exact.capacity();
            assert!(room >= room_for(requests) && room_for(requests) <= EXACT_MAX, "{requests}");
            let most = (requests + 4.0 * requests.sqrt()) as usize;
            for v in 0..most as u64 {
                l.record(v);
            }
            assert_eq!(l.exact.capacity(), room, "{requests} expected, {most} recorded: no growth");
        }
        assert_eq!(room_for(1e9), EXACT_MAX);
        assert_eq!((room_for(-1.0), room_for(0.0), room_for(1.0)), (0, 0, 5));
    }

    #[test]
    fn the_exact_samples_become_a_histogram_past_the_limit() {
        let (l, _) = both(&vec![1_000; EXACT_MAX]);
        assert!(l.counts.is_none(), "{EXACT_MAX} samples are kept exactly");
        let (l, _) = both(&vec![1_000; EXACT_MAX + 1]);
        assert!(l.counts.is_some() && l.exact.is_empty(), "one more moves them into counts");
    }

    /// The hand-kept counts index values as HdrHistogram does: every value's slot holds
    /// HdrHistogram's count for it, and the slot's lowest value is HdrHistogram's lowest
    /// equivalent of the value, across every bucket up to `u64::MAX`.
    #[test]
    fn the_counts_are_indexed_as_hdrhistogram_indexes_them() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        let h = new_latency_histogram();
        let mut values: Vec<u64> = (0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1, (1u64 << b) + 1]).collect();
        values.extend((0..100_000).map(|_| {
            let shift = rng.random_range(0..64);
            rng.random_range(0..u64::MAX >> shift)
        }));
        values.push(u64::MAX);
        for v in values {
            let slot = slot_of(v);
            assert_eq!(lowest_at(slot), h.lowest_equivalent(v), "value {v}: slot {slot}");
            assert_eq!(slot_of(lowest_at(slot)), slot, "value {v}");
            let mut one = new_latency_histogram();
            one.record(v).unwrap();
            assert_eq!(one.count_at(lowest_at(slot)), 1, "value {v}");
        }
    }

    #[test]
    fn extending_pools_the_samples_of_both() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (a, b) in [
            (10, 20),
            (EXACT_MAX - 5, 5),
            (EXACT_MAX - 5, 6),
            (EXACT_MAX, 5),
            (5, EXACT_MAX + 3),
            (EXACT_MAX + 1, EXACT_MAX + 1),
            (0, 0),
        ] {
            let first: Vec<u64> = (0..a).map(|_| rng.random_range(0..10_000_000)).collect();
            let second: Vec<u64> = (0..b).map(|_| rng.random_range(0..10_000_000)).collect();
            let (mut l, _) = both(&first);
            l.extend(&both(&second).0);
            let all: Vec<u64> = first.iter().chain(&second).copied().collect();
            let (_, h) = both(&all);
            assert_eq!(l.to_histogram(), h, "{a} + {b} samples (seed 11)");
            assert_eq!(l.counts.is_none(), a + b <= EXACT_MAX, "{a} + {b}: exact while within the limit");
            assert_eq!(
                l.quantiles(QUANTILES).map(|q| q.to_vec()),
                (!h.is_empty()).then(|| h.value_at_quantiles(QUANTILES).collect())
            );
        }
    }
}
