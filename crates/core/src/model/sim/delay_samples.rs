//! The retry-delay samples a run keeps for its delay charts (see [`DelaySamples`]).

use crate::engine::Nanos;
use crate::metrics::{RETRY_DELAY_RETRIES, RETRY_DELAY_SAMPLES_MAX};

/// The retry-delay samples a run keeps for its charts: per retry number, the delays of the
/// [`RETRY_DELAY_SAMPLES_MAX`] lowest request ids. The first ones taken in time order depended on
/// the order retries were scheduled in; these do not (a retry run ahead is scheduled early).
/// A request makes at most one retry of each number at hop 0, so ids are unique per number.
#[derive(Clone)]
pub(super) struct DelaySamples {
    kept: Vec<Kept>,
}

/// One retry number's candidates: fewer than twice the cap, all below `below`.
#[derive(Clone)]
struct Kept {
    samples: Vec<(u64, Nanos)>,
    /// Ids from here on cannot be among the lowest: the cap's worth below it are kept already.
    below: u64,
}

impl Kept {
    /// Keeps the cap's worth of lowest ids (and raises `below` to the first id dropped).
    fn trim(&mut self) {
        if self.samples.len() > RETRY_DELAY_SAMPLES_MAX {
            self.samples.select_nth_unstable(RETRY_DELAY_SAMPLES_MAX);
            self.below = self.samples[RETRY_DELAY_SAMPLES_MAX].0;
            self.samples.truncate(RETRY_DELAY_SAMPLES_MAX);
        }
    }
}

impl DelaySamples {
    pub(super) fn new() -> DelaySamples {
        DelaySamples { kept: vec![Kept { samples: Vec::new(), below: u64::MAX }; RETRY_DELAY_RETRIES] }
    }

    /// Retry `retry` (1-based) of request `request_id` waits `wait`. Amortised constant time: a
    /// candidate at or past `below` costs one comparison (a herd's retries come in about
    /// increasing id order), and the candidates are trimmed to the cap when they reach twice it.
    #[inline]
    pub(super) fn offer(&mut self, retry: u32, request_id: u64, wait: Nanos) {
        let Some(kept) = self.kept.get_mut(retry as usize - 1) else { return };
        if request_id >= kept.below {
            return;
        }
        kept.samples.push((request_id, wait));
        if kept.samples.len() >= 2 * RETRY_DELAY_SAMPLES_MAX {
            kept.trim();
        }
    }

    /// The samples per retry number, by request id.
    pub(super) fn into_samples(self) -> Vec<Vec<Nanos>> {
        self.kept
            .into_iter()
            .map(|mut kept| {
                kept.trim();
                kept.samples.sort_unstable();
                kept.samples.into_iter().map(|(_, wait)| wait).collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept samples are those of the lowest ids whatever the order they are offered in, and
    /// no more than the cap.
    #[test]
    fn delay_samples_keep_the_lowest_ids_in_any_order() {
        let n = 3 * RETRY_DELAY_SAMPLES_MAX as u64 + 17;
        // Ascending, descending, and a scrambled order (a bijection of 0..n by a multiplier coprime to n).
        let orders: [Vec<u64>; 3] =
            [(0..n).collect(), (0..n).rev().collect(), (0..n).map(|i| (i * 7_919) % n).collect()];
        for order in orders {
            let mut samples = DelaySamples::new();
            for &id in &order {
                samples.offer(2, id, id * 10);
            }
            let kept = samples.into_samples();
            let expected: Vec<Nanos> = (0..RETRY_DELAY_SAMPLES_MAX as u64).map(|id| id * 10).collect();
            assert_eq!(kept[1], expected);
            assert!(kept[0].is_empty() && kept[2].is_empty());
        }
        // Fewer than the cap: all of them, by id; retries past the last number are not kept.
        let mut samples = DelaySamples::new();
        for id in [5, 3, 9] {
            samples.offer(1, id, id);
        }
        samples.offer(RETRY_DELAY_RETRIES as u32 + 1, 1, 1);
        assert_eq!(samples.into_samples()[0], vec![3, 5, 9]);
    }
}
