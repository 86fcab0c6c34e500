//! The pending-event queue: a min-heap on (time, insertion sequence), so ties are FIFO.

use super::time::Nanos;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    at: Nanos,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed so that `BinaryHeap` (a max-heap) pops the earliest event, then the oldest insert.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Pending events ordered by time; events at the same instant come out in insertion order.
///
/// The queue also owns the clock: `pop` advances `now`, and scheduling into the past is a bug.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq_next: u64,
    now: Nanos,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), seq_next: 0, now: 0, popped: 0 }
    }

    /// The current virtual time: the time of the last popped event.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Number of events popped so far.
    pub fn events_popped(&self) -> u64 {
        self.popped
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at absolute time `at`, which must not be in the past.
    pub fn push(&mut self, at: Nanos, event: E) {
        assert!(at >= self.now, "event scheduled in the past: at={at} now={}", self.now);
        let seq = self.seq_next;
        self.seq_next += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// Removes the earliest event and advances the clock to it.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let entry = self.heap.pop()?;
        assert!(entry.at >= self.now, "time went backwards: {} < {}", entry.at, self.now);
        self.now = entry.at;
        self.popped += 1;
        Some((entry.at, entry.event))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_are_fifo_and_time_is_ordered() {
        let mut q = EventQueue::new();
        for (at, id) in [(5, 'a'), (1, 'b'), (5, 'c'), (1, 'd'), (3, 'e'), (5, 'f')] {
            q.push(at, id);
        }
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'e', 'a', 'c', 'f']);
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_into_the_past_is_a_bug() {
        let mut q = EventQueue::new();
        q.push(10, ());
        q.pop();
        q.push(5, ());
    }
}
