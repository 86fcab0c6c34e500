//! A slab of reusable slots addressed by generation-checked handles.
//!
//! Attempts and calls live only while in flight; reusing their slots keeps memory proportional
//! to what is pending, not to the run's length. A stale event (a timeout for an attempt that was
//! answered long ago) carries an old generation and is recognised as stale.

/// A typed index into a [`Slab`]: slot plus generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Handle {
    /// Slot index.
    pub index: u32,
    /// Generation of the slot when the handle was issued.
    pub generation: u32,
}

impl Handle {
    /// A handle no slab ever issues ([`Slab::insert`] stops short of index `u32::MAX`), so every
    /// lookup with it finds nothing: for "no call" and for events whose attempt was never stored.
    pub const NONE: Handle = Handle { index: u32::MAX, generation: u32::MAX };
}

#[derive(Clone)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Slots per page (a power of two: an index splits into page and offset by shift and mask).
const PAGE_BITS: u32 = 9;
const PAGE: usize = 1 << PAGE_BITS;

/// Storage with O(1) insert/remove and stale-handle detection.
///
/// Slots live in fixed pages of `PAGE` rather than one growing vector: growing never copies
/// the live values or holds the old and new buffers at once (a million-entry slab doubled by
/// copying up to a gigabyte at 10M clients), and pages come from the same heap the event queue's
/// chunks return to, so the attempts queued after an outage reuse the memory the retries waiting
/// in the event queue gave back.
#[derive(Clone)]
pub struct Slab<T> {
    pages: Vec<Vec<Slot<T>>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { pages: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its handle.
    pub fn insert(&mut self, value: T) -> Handle {
        self.live += 1;
        if let Some(index) = self.free.pop() {
            let slot = self.slot_mut(index).expect("a freed slot stays allocated");
            slot.value = Some(value);
            return Handle { index, generation: slot.generation };
        }
        if self.pages.last().is_none_or(|page| page.len() == PAGE) {
            self.pages.push(Vec::with_capacity(PAGE));
        }
        let index = (self.pages.len() - 1) * PAGE + self.pages.last().map_or(0, Vec::len);
        let index =
            u32::try_from(index).ok().filter(|&i| i != u32::MAX).expect("slab exceeds u32::MAX - 1 live entries");
        self.pages.last_mut().expect("a page was just ensured").push(Slot { generation: 0, value: Some(value) });
        Handle { index, generation: 0 }
    }

    fn slot(&self, index: u32) -> Option<&Slot<T>> {
        self.pages.get(index as usize >> PAGE_BITS)?.get(index as usize & (PAGE - 1))
    }

    fn slot_mut(&mut self, index: u32) -> Option<&mut Slot<T>> {
        self.pages.get_mut(index as usize >> PAGE_BITS)?.get_mut(index as usize & (PAGE - 1))
    }

    /// The value behind `handle`, or `None` if it was removed (stale handle).
    pub fn get(&self, handle: Handle) -> Option<&T> {
        let slot = self.slot(handle.index)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.value.as_ref()
    }

    /// Mutable access to the value behind `handle`, or `None` if stale.
    pub fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let slot = self.slot_mut(handle.index)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.value.as_mut()
    }

    /// Removes and returns the value; the slot's generation moves on so old handles go stale.
    pub fn remove(&mut self, handle: Handle) -> Option<T> {
        let slot = self.slot_mut(handle.index)?;
        if slot.generation != handle.generation {
            return None;
        }
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(handle.index);
        self.live -= 1;
        Some(value)
    }

    /// Removes the value behind `handle` without handing it back (dropped in its slot, never
    /// moved: for large values a moved-out copy nobody reads still costs its bytes); false if
    /// the handle is stale.
    pub fn discard(&mut self, handle: Handle) -> bool {
        let Some(slot) = self.slot_mut(handle.index) else { return false };
        if slot.generation != handle.generation || slot.value.is_none() {
            return false;
        }
        slot.value = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(handle.index);
        self.live -= 1;
        true
    }

    /// The live values, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.pages.iter().flatten().filter_map(|slot| slot.value.as_ref())
    }

    /// The live values with their handles, in slot order.
    pub fn iter_handles(&self) -> impl Iterator<Item = (Handle, &T)> {
        self.pages.iter().enumerate().flat_map(|(p, page)| {
            page.iter().enumerate().filter_map(move |(o, slot)| {
                let index = ((p << PAGE_BITS) + o) as u32;
                slot.value.as_ref().map(|v| (Handle { index, generation: slot.generation }, v))
            })
        })
    }

    /// Hints the cache to load the slot behind `handle` (no effect on results).
    pub fn prefetch(&self, handle: Handle) {
        if let Some(slot) = self.slot(handle.index) {
            super::prefetch::prefetch_read(slot);
        }
    }

    /// Number of live values.
    pub fn len(&self) -> usize {
        self.live
    }

    /// True when no value is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Slots allocated so far (live or free; never shrinks): the most values ever live at once,
    /// and how much memory a random access may range over.
    pub fn slots(&self) -> usize {
        self.pages.iter().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_handles_are_detected() {
        let mut slab = Slab::default();
        let a = slab.insert(1);
        assert_eq!(slab.remove(a), Some(1));
        let b = slab.insert(2);
        assert_eq!(b.index, a.index);
        assert_eq!(slab.get(a), None);
        assert_eq!(slab.get(b), Some(&2));
        assert_eq!(slab.len(), 1);
    }

    /// Handles stay valid across pages, and freed slots are reused before new ones are made.
    #[test]
    fn many_pages_of_slots_keep_their_values() {
        let mut slab = Slab::default();
        let n = 3 * PAGE + 5;
        let handles: Vec<Handle> = (0..n).map(|i| slab.insert(i)).collect();
        assert!(handles.iter().enumerate().all(|(i, &h)| slab.get(h) == Some(&i)));
        assert_eq!(slab.remove(handles[PAGE + 1]), Some(PAGE + 1));
        let again = slab.insert(7);
        assert_eq!((again.index, again.generation), (handles[PAGE + 1].index, 1));
        assert_eq!(slab.get(handles[PAGE + 1]), None, "the old handle is stale");
        assert_eq!((slab.len(), slab.slots(), slab.iter().count()), (n, n, n));
        *slab.get_mut(handles[n - 1]).expect("live") += 1;
        assert_eq!(slab.get(handles[n - 1]), Some(&n));
    }
}
