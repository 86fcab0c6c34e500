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

struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// Storage with O(1) insert/remove and stale-handle detection.
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { slots: Vec::new(), free: Vec::new(), live: 0 }
    }
}

impl<T> Slab<T> {
    /// Stores `value` and returns its handle.
    pub fn insert(&mut self, value: T) -> Handle {
        self.live += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            slot.value = Some(value);
            return Handle { index, generation: slot.generation };
        }
        let index = u32::try_from(self.slots.len()).expect("slab exceeds u32::MAX live entries");
        self.slots.push(Slot { generation: 0, value: Some(value) });
        Handle { index, generation: 0 }
    }

    /// The value behind `handle`, or `None` if it was removed (stale handle).
    pub fn get(&self, handle: Handle) -> Option<&T> {
        let slot = self.slots.get(handle.index as usize)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.value.as_ref()
    }

    /// Mutable access to the value behind `handle`, or `None` if stale.
    pub fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let slot = self.slots.get_mut(handle.index as usize)?;
        if slot.generation != handle.generation {
            return None;
        }
        slot.value.as_mut()
    }

    /// Removes and returns the value; the slot's generation moves on so old handles go stale.
    pub fn remove(&mut self, handle: Handle) -> Option<T> {
        let slot = self.slots.get_mut(handle.index as usize)?;
        if slot.generation != handle.generation {
            return None;
        }
        let value = slot.value.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(handle.index);
        self.live -= 1;
        Some(value)
    }

    /// The live values, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|slot| slot.value.as_ref())
    }

    /// Hints the cache to load the slot behind `handle` (no effect on results).
    pub fn prefetch(&self, handle: Handle) {
        if let Some(slot) = self.slots.get(handle.index as usize) {
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

    /// Slots allocated so far (live or free; never shrinks): the most values ever live at once.
    #[cfg(test)]
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
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
}
