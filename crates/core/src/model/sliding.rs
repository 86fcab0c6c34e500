//! Event counts over a sliding window, slot by slot: the retry budgets' request and retry counts
//! (Finagle, ratio, adaptive throttling) and the circuit breaker's successes and failures.

use crate::engine::Nanos;

/// Slots of a sliding window: counts older than one window fall out slot by slot.
const SLOTS: usize = 10;

/// Event counts over a sliding window of `SLOTS` slots (the window's resolution is window/SLOTS).
/// Counts are whole numbers kept as `u32` (half the memory of `f64`: with a client-scoped budget
/// and breaker, 10M clients hold 20M of these); sums are exact either way.
#[derive(Clone, Debug)]
pub struct SlidingCounts<const N: usize> {
    /// Never 0, which leaves [`More`] the niche that keeps it as small as the window.
    slot_ns: std::num::NonZeroU64,
    slot_index: u64,
    slots: [[u32; N]; SLOTS],
}

impl<const N: usize> SlidingCounts<N> {
    /// Empty counts over `window`.
    pub fn new(window: Nanos) -> Self {
        let slot_ns = std::num::NonZeroU64::new((window / SLOTS as u64).max(1)).expect("at least 1");
        SlidingCounts { slot_ns, slot_index: 0, slots: [[0; N]; SLOTS] }
    }

    fn advance(&mut self, now: Nanos) {
        let target = now / self.slot_ns.get();
        let steps = target.saturating_sub(self.slot_index).min(SLOTS as u64);
        for i in 1..=steps {
            self.slots[((self.slot_index + i) % SLOTS as u64) as usize] = [0; N];
        }
        self.slot_index = self.slot_index.max(target);
    }

    /// Adds `amount` (a whole count) to counter `counter` at `now`.
    pub fn add(&mut self, now: Nanos, counter: usize, amount: f64) {
        assert!(amount >= 0.0 && amount.fract() == 0.0 && amount <= f64::from(u32::MAX), "a count, not {amount}");
        self.advance(now);
        let slot = &mut self.slots[(self.slot_index % SLOTS as u64) as usize][counter];
        *slot = slot.checked_add(amount as u32).expect("fewer than 2^32 events in one window slot");
    }

    /// Sum of counter `counter` over the window ending at `now`.
    pub fn sum(&mut self, now: Nanos, counter: usize) -> f64 {
        self.advance(now);
        self.slots.iter().map(|s| f64::from(s[counter])).sum()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.slots = [[0; N]; SLOTS];
    }
}
