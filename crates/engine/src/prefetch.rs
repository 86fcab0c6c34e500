//! A cache prefetch hint: start loading the memory the next event will touch while the current
//! one is handled.
//!
//! With a million clients, the state a retry belongs to is almost never in cache: one DRAM miss
//! per event dominated the 1M-client herd (see docs/PERFORMANCE.md). The queue can name the next
//! event (`EventQueue::peek`), so the simulation can prefetch its state one event ahead and the
//! miss overlaps useful work instead of stalling it.

/// Bytes in a cache line on every x86_64 part we run on.
const CACHE_LINE: usize = 64;

/// Asks the CPU to start loading every cache line `value` spans. A hint only: it cannot fault,
/// never changes what the program computes, and is a no-op on targets other than x86_64.
#[inline(always)]
pub fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = value as *const T as usize;
        let end = start + std::mem::size_of::<T>().max(1);
        let mut line = start & !(CACHE_LINE - 1);
        while line < end {
            // SAFETY: `_mm_prefetch` only hints the cache hierarchy: it does not dereference in
            // the language's sense, cannot fault even on an unmapped address, and writes nothing.
            // SSE is part of the x86_64 baseline, so the instruction always exists.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line as *const i8) };
            line += CACHE_LINE;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
