//! The retry-delay histogram: delays drawn before each retry at the entry hop, binned as they
//! are recorded (log bins, with exact point masses at 0 and at a policy's cap), so a variant's
//! delays are pooled over any number of replications in memory that does not grow with them.

use crate::engine::time::ns_to_secs;
use crate::engine::Nanos;
use std::collections::BTreeMap;

/// Delay-histogram resolution: bins per decade of seconds (bin i covers [10^(i/N), 10^((i+1)/N)).
pub const DELAY_BINS_PER_DECADE: i32 = 20;

/// Count of the delays before retry `retry` that fell in `[low_s, high_s)`; a bin with
/// `low_s == high_s` is a point mass (exactly 0, or exactly a policy's cap).
#[derive(Clone, Debug, PartialEq)]
pub struct DelayBin {
    /// Retry number k (1 = the first retry).
    pub retry: u32,
    /// Lower bound, seconds.
    pub low_s: f64,
    /// Upper bound, seconds.
    pub high_s: f64,
    /// Number of delays.
    pub count: u64,
}

/// The histogram bin of a positive delay: i such that 10^(i/N) ≤ delay_s < 10^((i+1)/N).
pub fn delay_bin(delay_s: f64) -> i32 {
    let i = (delay_s.log10() * f64::from(DELAY_BINS_PER_DECADE)).floor() as i32;
    // log10 can land a hair off an exact power; nudge so the bounds always contain the value.
    if delay_bin_low(i) > delay_s {
        i - 1
    } else if delay_bin_low(i + 1) <= delay_s {
        i + 1
    } else {
        i
    }
}

/// Lower bound (seconds) of delay bin `i`.
pub fn delay_bin_low(i: i32) -> f64 {
    10f64.powf(f64::from(i) / f64::from(DELAY_BINS_PER_DECADE))
}

/// Where a delay is counted: a point mass at exactly 0 or exactly a cap, or a log bin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// Exactly this many nanoseconds (0, or a cap).
    Point(Nanos),
    /// Log bin i ([`delay_bin`]).
    Bin(i32),
}

/// The delays before each retry number, binned as they are added.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RetryDelays {
    /// The caps of the policies whose delays are sampled (exact point masses).
    caps_ns: Vec<Nanos>,
    /// Per retry number (index k = retry k + 1), count per key.
    counts: Vec<BTreeMap<Key, u64>>,
}

impl RetryDelays {
    /// An empty histogram whose point masses are 0 and `caps_ns`.
    pub fn new(caps_ns: &[Nanos]) -> RetryDelays {
        RetryDelays { caps_ns: caps_ns.to_vec(), counts: Vec::new() }
    }

    /// Counts `delays_ns[k]`, the delays drawn before retry k + 1.
    pub fn add(&mut self, delays_ns: &[Vec<u64>]) {
        if self.counts.len() < delays_ns.len() {
            self.counts.resize(delays_ns.len(), BTreeMap::new());
        }
        for (counts, samples) in self.counts.iter_mut().zip(delays_ns) {
            for &ns in samples {
                let key = if ns == 0 || self.caps_ns.contains(&ns) {
                    Key::Point(ns)
                } else {
                    Key::Bin(delay_bin(ns_to_secs(ns)))
                };
                *counts.entry(key).or_default() += 1;
            }
        }
    }

    /// Adds the counts of `other` (built with the same caps).
    pub fn merge(&mut self, other: &RetryDelays) {
        debug_assert_eq!(self.caps_ns, other.caps_ns, "delay histograms of one variant");
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), BTreeMap::new());
        }
        for (counts, theirs) in self.counts.iter_mut().zip(&other.counts) {
            for (&key, &count) in theirs {
                *counts.entry(key).or_default() += count;
            }
        }
    }

    /// The bins, by retry number, point masses first, then in increasing delay.
    pub fn bins(&self) -> Vec<DelayBin> {
        let mut out = Vec::new();
        for (k, counts) in self.counts.iter().enumerate() {
            for (&key, &count) in counts {
                let (low_s, high_s) = match key {
                    Key::Point(ns) => (ns_to_secs(ns), ns_to_secs(ns)),
                    Key::Bin(i) => (delay_bin_low(i), delay_bin_low(i + 1)),
                };
                out.push(DelayBin { retry: k as u32 + 1, low_s, high_s, count });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_bins_contain_their_values_and_keep_caps_exact() {
        for &s in &[0.001, 0.1, 0.2, 1.0, 3.2, 10.0, 0.0316] {
            let i = delay_bin(s);
            assert!(delay_bin_low(i) <= s && s < delay_bin_low(i + 1), "{s} not in bin {i}");
        }
        let cap = 10_000_000_000;
        let mut delays = RetryDelays::new(&[cap]);
        delays.add(&[vec![0, 0, cap], vec![cap]]);
        let mut more = RetryDelays::new(&[cap]);
        more.add(&[vec![150_000_000]]);
        delays.merge(&more);
        let bins = delays.bins();
        let at = |retry: u32, low: f64| bins.iter().find(|b| b.retry == retry && b.low_s == low).map(|b| b.count);
        assert_eq!(at(1, 0.0), Some(2));
        assert_eq!(at(1, 10.0), Some(1));
        assert_eq!(at(2, 10.0), Some(1));
        assert_eq!(bins.iter().map(|b| b.count).sum::<u64>(), 5);
        let bin = bins.iter().find(|b| b.retry == 1 && b.low_s > 0.0 && b.low_s < 10.0).expect("the 0.15 s bin");
        assert!(bin.low_s <= 0.15 && 0.15 < bin.high_s);
    }
}
