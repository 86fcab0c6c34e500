//! Huge pages for the few large arrays read at random: one state per client.
//!
//! A client-scoped budget or breaker keeps one state per client, and every retry reads its
//! client's at random: with ten million clients that is hundreds of MiB in 4 KiB pages, and
//! nearly every access misses the TLB, a page walk that a prefetch cannot hide (two-dimensional
//! in a virtual machine). On Linux with transparent huge pages in `madvise` mode (the common
//! default) an array can ask for 2 MiB pages; elsewhere, or when the kernel says no, nothing
//! changes. Only what the caller allocated exactly is advised, so no page is wasted beyond the
//! array's own last 2 MiB (a process-wide huge-page allocator cost the 10M herd ~0.8 GiB,
//! docs/PERFORMANCE.md).

/// Arrays smaller than this stay in small pages: they fit the TLB's reach anyway.
pub const HUGE_PAGES_FROM_BYTES: usize = 8 << 20;

/// Asks the kernel to back the allocation of `values` (its whole capacity) with huge pages when
/// it is at least [`HUGE_PAGES_FROM_BYTES`]. A hint: it never changes what the program computes.
pub fn advise_huge_pages<T>(values: &Vec<T>) {
    let bytes = values.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_PAGES_FROM_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        // madvise wants a page-aligned start: advise the whole pages inside the allocation.
        let start = values.as_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let len = (start + bytes).saturating_sub(aligned) & !(PAGE - 1);
        // SAFETY: the range lies inside this vector's own allocation (capacity, not length), and
        // MADV_HUGEPAGE only changes how the kernel backs those pages, never their contents; a
        // refusal (no THP, or a kernel without it) returns an error we ignore.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}
