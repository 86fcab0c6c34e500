//! Transparent huge pages for the large allocations: the global allocator of the binary and the
//! benches ([`HugePages`]) asks the kernel to back every allocation of at least
//! [`HUGE_MIN_BYTES`] with 2 MiB pages (`madvise(MADV_HUGEPAGE)`), as glibc does with
//! `GLIBC_TUNABLES=glibc.malloc.hugetlb=1`.
//!
//! Why: a retry reads its call from a random slot of a slab of a million calls or more. With
//! 4 KiB pages every such read also misses the TLB, and the page walk (two-dimensional under a
//! virtual machine) costs more than the cache miss itself; a software prefetch cannot hide it,
//! since the prefetch waits for the translation. With 2 MiB pages the slab of a million calls
//! (80 MB) needs 40 TLB entries instead of 20,000. Measured: 1M herd 10–15% less CPU time, and
//! the 10M herd's cost per client no longer grows with the page tables (docs/PERFORMANCE.md).
//!
//! It changes no result: memory content and allocation order are the same; only the page size
//! backing them differs. Where the kernel has huge pages off (`never`), or on other systems, the
//! advice is ignored or not given. Small allocations go straight to the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations of at least this many bytes are advised to use huge pages. Above glibc's largest
/// dynamic mmap threshold (32 MiB), so an advised block is always a mapping of its own, unmapped
/// when freed. With 4 MiB the 10M herd's peak memory grew from ~2.7 to 3.4 GiB (most likely
/// blocks carved from glibc's heap, whose advised ranges then back small allocations with whole
/// huge pages).
pub const HUGE_MIN_BYTES: usize = 64 << 20;

/// The system allocator, advising huge pages for large blocks (see the module documentation).
pub struct HugePages;

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, size: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    /// `MADV_HUGEPAGE` of Linux's `<sys/mman.h>` (the same on every architecture).
    const MADV_HUGEPAGE: std::ffi::c_int = 14;
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
    }
    if ptr.is_null() || size < HUGE_MIN_BYTES {
        return;
    }
    // The whole huge pages inside the block (madvise wants a page-aligned start).
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + size) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: [start, end) lies inside the block just allocated; MADV_HUGEPAGE only changes
        // how the kernel backs those pages, never their content. A failure (e.g. huge pages not
        // configured) is harmless and ignored.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _size: usize) {}

// SAFETY: every call is forwarded to `System` unchanged; `advise` only gives the kernel a hint
// about memory inside the returned block.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc(layout);
        advise(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = System.alloc_zeroed(layout);
        advise(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let ptr = System.realloc(ptr, layout, new_size);
        advise(ptr, new_size);
        ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks from the allocator are usable as from `System`, small and large, through growth.
    #[test]
    fn large_blocks_are_ordinary_memory() {
        let a = HugePages;
        for size in [64, HUGE_MIN_BYTES, 3 * HUGE_MIN_BYTES + 12_345] {
            let layout = Layout::from_size_align(size, 64).expect("valid layout");
            // SAFETY: a non-zero size, and every pointer is used within its block and freed once.
            unsafe {
                let p = a.alloc_zeroed(layout);
                assert!(!p.is_null() && (p as usize).is_multiple_of(64));
                assert_eq!(*p.add(size - 1), 0);
                *p.add(size - 1) = 7;
                let q = a.realloc(p, layout, 2 * size);
                assert_eq!(*q.add(size - 1), 7, "realloc keeps the content");
                a.dealloc(q, Layout::from_size_align(2 * size, 64).expect("valid layout"));
            }
        }
    }
}
