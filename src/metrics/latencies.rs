//! The latencies of one run: the exact samples while there are few, an HdrHistogram once there
//! are many. Every value read from it (quantiles, the largest, the histogram it adds to its
//! variant's) is exactly what the HdrHistogram of the same samples gives: a short run no longer
//! pays for growing, walking and merging a histogram's whole counts array, which was most of the
//! fixed cost of a replication (docs/PERFORMANCE.md, "Many small runs").

use super::new_latency_histogram;
use hdrhistogram::Histogram;
use std::sync::OnceLock;

/// Samples kept exactly before they move into a histogram: 32 KiB, about the size of the
/// histogram's counts array for latencies of a few seconds.
pub const EXACT_MAX: usize = 4096;

/// Latencies in microseconds (see the module's documentation).
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    /// The samples, unsorted, while there are at most [`EXACT_MAX`] and `histogram` is `None`.
    exact: Vec<u64>,
    /// Every sample, once there were more than [`EXACT_MAX`].
    histogram: Option<Histogram<u64>>,
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

    /// One latency of `us` microseconds.
    #[inline]
    pub fn record(&mut self, us: u64) {
        if let Some(h) = &mut self.histogram {
            h.record(us).expect("auto-resizing histograms accept any u64");
        } else if self.exact.len() < EXACT_MAX {
            self.exact.push(us);
        } else {
            self.move_into_histogram(us);
        }
    }

    /// The sample past [`EXACT_MAX`]: every sample moves into a histogram.
    #[cold]
    #[inline(never)]
    fn move_into_histogram(&mut self, us: u64) {
        let mut h = new_latency_histogram();
        for &v in self.exact.iter().chain([&us]) {
            h.record(v).expect("auto-resizing histograms accept any u64");
        }
        self.histogram = Some(h);
        self.exact = Vec::new();
    }

    /// The latencies recorded.
    pub fn len(&self) -> u64 {
        self.histogram.as_ref().map_or(self.exact.len() as u64, Histogram::len)
    }

    /// Whether none was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values at `quantiles` (each in (0, 1], ascending; panics otherwise), as HdrHistogram's
    /// `value_at_quantiles` gives them: the highest value equivalent to the sample of rank
    /// ⌈q·n⌉ (at least 1). `None` when empty.
    pub fn quantiles<const N: usize>(&self, quantiles: [f64; N]) -> Option<[u64; N]> {
        assert!(
            quantiles.iter().all(|&q| q > 0.0) && quantiles.is_sorted(),
            "quantiles {quantiles:?}: each above 0 (the lowest equivalent value at 0 is not offered), ascending"
        );
        if self.is_empty() {
            return None;
        }
        let mut out = [0; N];
        match &self.histogram {
            Some(h) => {
                for (o, v) in out.iter_mut().zip(h.value_at_quantiles(quantiles)) {
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

    /// The largest latency, as HdrHistogram's `max` gives it (the highest equivalent value);
    /// `None` when empty.
    pub fn max(&self) -> Option<u64> {
        match &self.histogram {
            Some(h) => (!h.is_empty()).then(|| h.max()),
            None => self.exact.iter().max().map(|&v| config().highest_equivalent(v)),
        }
    }

    /// Adds every latency to `into` (a histogram of the latency configuration).
    pub fn add_to(&self, into: &mut Histogram<u64>) {
        match &self.histogram {
            Some(h) => into.add(h).expect("histograms of one configuration add"),
            None => {
                for &v in &self.exact {
                    into.record(v).expect("auto-resizing histograms accept any u64");
                }
            }
        }
    }

    /// Adds every latency of `other`.
    pub fn extend(&mut self, other: &Latencies) {
        match &other.histogram {
            Some(h) => {
                let mut mine = self.to_histogram();
                mine.add(h).expect("histograms of one configuration add");
                self.histogram = Some(mine);
                self.exact = Vec::new();
            }
            None => {
                for &v in &other.exact {
                    self.record(v);
                }
            }
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
        assert_eq!(l.max(), (!h.is_empty()).then(|| h.max()), "{what}: max");
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

    #[test]
    fn the_exact_samples_become_a_histogram_past_the_limit() {
        let (l, _) = both(&vec![1_000; EXACT_MAX]);
        assert!(l.histogram.is_none(), "{EXACT_MAX} samples are kept exactly");
        let (l, _) = both(&vec![1_000; EXACT_MAX + 1]);
        assert!(l.histogram.is_some() && l.exact.is_empty(), "one more moves them into a histogram");
    }

    #[test]
    fn extending_pools_the_samples_of_both() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for (a, b) in [(10, 20), (EXACT_MAX, 5), (5, EXACT_MAX + 3), (EXACT_MAX + 1, EXACT_MAX + 1), (0, 0)] {
            let first: Vec<u64> = (0..a).map(|_| rng.random_range(0..10_000_000)).collect();
            let second: Vec<u64> = (0..b).map(|_| rng.random_range(0..10_000_000)).collect();
            let (mut l, _) = both(&first);
            l.extend(&both(&second).0);
            let all: Vec<u64> = first.iter().chain(&second).copied().collect();
            let (_, h) = both(&all);
            assert_eq!(l.to_histogram(), h, "{a} + {b} samples (seed 11)");
            assert_eq!(
                l.quantiles(QUANTILES).map(|q| q.to_vec()),
                (!h.is_empty()).then(|| h.value_at_quantiles(QUANTILES).collect())
            );
        }
    }
}
