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
        let (aligned, len) = whole_pages_within(values.as_ptr() as usize, bytes);
        // SAFETY: the range lies inside this vector's own allocation (capacity, not length;
        // `whole_pages_within`), and MADV_HUGEPAGE only changes how the kernel backs those
        // pages, never their contents; a refusal (no THP, or a kernel without it) returns an
        // error we ignore.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}

/// The whole 4 KiB pages inside `[start, start + bytes)`, as (first page's address, length):
/// madvise wants a page-aligned start, and must not reach outside the allocation.
fn whole_pages_within(start: usize, bytes: usize) -> (usize, usize) {
    const PAGE: usize = 4096;
    let aligned = start.next_multiple_of(PAGE);
    (aligned, (start + bytes).saturating_sub(aligned) & !(PAGE - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The advised range starts on a page, ends on one, and stays inside the allocation.
    #[test]
    fn the_advised_range_is_the_whole_pages_inside_the_allocation() {
        assert_eq!(whole_pages_within(4096, 3 * 4096), (4096, 3 * 4096));
        assert_eq!(whole_pages_within(4096 + 16, 3 * 4096), (8192, 2 * 4096));
        assert_eq!(whole_pages_within(100, 4000), (4096, 0));
        for (start, bytes) in [(12_345, 9_000_000), (8_192, 8 << 20), (1, 1 << 20)] {
            let (first, len) = whole_pages_within(start, bytes);
            assert!(first % 4096 == 0 && len % 4096 == 0, "{start} {bytes}: not whole pages");
            assert!(first >= start && first + len <= start + bytes, "{start} {bytes}: outside");
            assert!(start + bytes - (first + len) < 4096 && first - start < 4096, "{start} {bytes}: a page left out");
        }
    }

    /// The advice runs on an array past the threshold (the test suite's own scenarios stay below
    /// it), and the array's contents and length are what they were: the hint changes how pages
    /// are backed, never what they hold.
    #[test]
    fn advising_a_large_array_keeps_its_contents() {
        let n = HUGE_PAGES_FROM_BYTES / std::mem::size_of::<u64>() + 3;
        let mut values: Vec<u64> = Vec::with_capacity(n);
        advise_huge_pages(&values);
        values.extend((0..n as u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        advise_huge_pages(&values);
        assert_eq!(values.len(), n);
        assert!(values.iter().enumerate().all(|(i, &v)| v == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    }
}
