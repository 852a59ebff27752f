//! The fuzz targets' shared shell: runs a body of `gfxkit_fuzzing` under an allocator that
//! enforces the memory bound itself.
//!
//! libFuzzer's `-malloc_limit_mb` needs a sanitizer's allocator hooks, and `-rss_limit_mb`
//! only sees pages that were touched: without a sanitizer (`FUZZ_SANITIZER=none`), a reader
//! that asked for gigabytes it never wrote to would go unnoticed. [`Bounded`] counts every
//! allocation and aborts (a finding, saved by libFuzzer with its input) when one request,
//! or all live memory together, exceeds [`LIMIT`].
#![deny(unsafe_op_in_unsafe_fn)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most memory one input may hold at once, in one allocation or in all of them: the
/// same 512 MiB `scripts/fuzz` gives `-rss_limit_mb`.
pub const LIMIT: usize = 512 << 20;

/// The system allocator, with the live byte count checked against [`LIMIT`].
pub struct Bounded {
    live: AtomicUsize,
}

#[global_allocator]
static ALLOCATOR: Bounded = Bounded {
    live: AtomicUsize::new(0),
};

impl Bounded {
    /// Books `size` more bytes, or aborts when that passes the limit.
    fn book(&self, size: usize) {
        let live = self.live.fetch_add(size, Ordering::Relaxed) + size;
        if size > LIMIT || live > LIMIT {
            // No allocation here: the message is static and written straight to stderr.
            let msg: &[u8] = if size > LIMIT {
                b"==gfxkit-fuzz== one allocation larger than the 512 MiB limit\n"
            } else {
                b"==gfxkit-fuzz== live allocations passed the 512 MiB limit\n"
            };
            use std::io::Write;
            let _ = std::io::stderr().write_all(msg);
            std::process::abort();
        }
    }

    fn release(&self, size: usize) {
        self.live.fetch_sub(size, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` with the caller's arguments unchanged; the
// bookkeeping only reads the sizes.
unsafe impl GlobalAlloc for Bounded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.book(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.book(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) };
        self.release(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            self.book(new_size - layout.size());
        }
        // SAFETY: as for `alloc`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if new.is_null() {
            // The old block is still there, with its old size.
            if new_size > layout.size() {
                self.release(new_size - layout.size());
            }
        } else if new_size < layout.size() {
            self.release(layout.size() - new_size);
        }
        new
    }
}

/// Runs the body of the target `name` on `data` (the whole of every fuzz target).
pub fn run(name: &str, data: &[u8]) {
    let body = gfxkit_fuzzing::body(name).expect("a known fuzz target");
    body(data);
}
