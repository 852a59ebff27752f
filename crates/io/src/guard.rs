//! Mapped inputs that another process cuts short while gfxkit reads them.
//!
//! A read of a mapped page that lies beyond the end of its file raises `SIGBUS`, which ends
//! the process. Files are cut short under a running scan in ordinary use: `cp new.so lib.so`
//! truncates `lib.so` in place before writing it again, and a census of a software stack runs
//! for hours while the stack is updated. Each mapping of an input is registered here while it
//! lives; a `SIGBUS` on a registered mapping puts zero-filled pages where the file's pages
//! were (from the faulting page to the mapping's end), marks the mapping and returns, so the
//! reader goes on over zeros. The reader's result is then thrown away: the owner asks
//! [`Guard::faulted`] when the reading is done ([`crate::Input::unchanged`]) and reports
//! the input as changed while it was read. A `SIGBUS` anywhere else goes to the handler that
//! was installed before (Rust's own, Python's `faulthandler`) or ends the process as it
//! would have.
//!
//! The handler touches atomics only and makes one system call (`mmap`, a plain system call on
//! Linux, which a signal handler may make); it saves and restores `errno`. It is installed
//! once, when the first mapping is registered (on Linux: elsewhere nothing is guarded).
//! Mappings beyond [`SLOTS`] at once (far more than the threads that read) are not guarded: a
//! truncation under them ends the process as before.

#![allow(unsafe_code)]

use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Once;

/// How many mappings can be guarded at once.
pub const SLOTS: usize = 1024;

/// One registered mapping. `seq` is odd while the slot is being written (a seqlock: the handler
/// skips a slot that changes under it, which is never the one it faulted on, as that mapping
/// is alive and registered for as long as it is read).
struct Slot {
    used: AtomicBool,
    seq: AtomicU32,
    start: AtomicUsize,
    len: AtomicUsize,
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    used: AtomicBool::new(false),
    seq: AtomicU32::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    faulted: AtomicBool::new(false),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();
#[cfg(target_os = "linux")]
static PAGE: AtomicUsize = AtomicUsize::new(4096);
/// Whether the handler is in place (it could not be installed: nothing is guarded).
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The `SIGBUS` action in place before gfxkit's, called for faults that are not on a guarded
/// mapping. Written once, before the handler is installed.
#[cfg(target_os = "linux")]
struct Previous(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);
// SAFETY: written once inside `INSTALL.call_once`, before the handler that reads it exists;
// only read after.
#[cfg(target_os = "linux")]
unsafe impl Sync for Previous {}
#[cfg(target_os = "linux")]
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()));

/// The registration of one mapping: unregistered when dropped, which must happen before the
/// mapping is unmapped (its owner declares it before the map).
#[derive(Debug)]
pub struct Guard {
    slot: Option<usize>,
}

impl Guard {
    /// Registers the mapping of `len` bytes at `start` (page-aligned, as every mapping is).
    pub fn watch(start: *const u8, len: usize) -> Guard {
        INSTALL.call_once(install);
        if !INSTALLED.load(Ordering::Acquire) || len == 0 {
            return Guard { slot: None };
        }
        let slot = TABLE.iter().position(|s| {
            s.used
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        if let Some(i) = slot {
            let s = &TABLE[i];
            s.seq.fetch_add(1, Ordering::Relaxed);
            fence(Ordering::Release);
            s.start.store(start as usize, Ordering::Relaxed);
            s.len.store(len, Ordering::Relaxed);
            s.faulted.store(false, Ordering::Relaxed);
            s.seq.fetch_add(1, Ordering::Release);
        }
        Guard { slot }
    }

    /// Whether a read of the mapping faulted (the file was cut short under it): its bytes
    /// from some page on read as zeros.
    pub fn faulted(&self) -> bool {
        self.slot
            .is_some_and(|i| TABLE[i].faulted.load(Ordering::Acquire))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            let s = &TABLE[i];
            s.seq.fetch_add(1, Ordering::Relaxed);
            fence(Ordering::Release);
            s.start.store(0, Ordering::Relaxed);
            s.len.store(0, Ordering::Relaxed);
            s.seq.fetch_add(1, Ordering::Release);
            s.used.store(false, Ordering::Release);
        }
    }
}

/// Elsewhere than on Linux nothing is guarded (a file cut short under its mapping ends the
/// process there, as it did).
#[cfg(not(target_os = "linux"))]
fn install() {}

/// Installs the handler, keeping the action it replaces.
#[cfg(target_os = "linux")]
fn install() {
    // SAFETY: `sysconf` has no precondition.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if page > 0 {
        PAGE.store(page as usize, Ordering::Relaxed);
    }
    // SAFETY: a zeroed `sigaction` is a valid value (no flags, an empty mask) that is then
    // filled in; `PREVIOUS` is written here only, before the handler can run.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        let previous = (*PREVIOUS.0.get()).as_mut_ptr();
        if libc::sigaction(libc::SIGBUS, &action, previous) == 0 {
            INSTALLED.store(true, Ordering::Release);
        }
    }
}

/// The registered mapping holding `addr`, if any: (slot, start, length).
#[cfg(target_os = "linux")]
fn find(addr: usize) -> Option<(usize, usize, usize)> {
    TABLE.iter().enumerate().find_map(|(i, s)| {
        let before = s.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        let start = s.start.load(Ordering::Relaxed);
        let len = s.len.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if s.seq.load(Ordering::Relaxed) != before || len == 0 {
            return None;
        }
        (addr >= start && addr - start < len).then_some((i, start, len))
    })
}

#[cfg(target_os = "linux")]
extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler.
    let (code, addr) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // A read beyond the end of a mapped file (not a signal another process sent, whose
    // `si_addr` means nothing).
    let found = if code == libc::BUS_ADRERR {
        find(addr)
    } else {
        None
    };
    if let Some((i, start, len)) = found {
        let page = PAGE.load(Ordering::Relaxed);
        let from = addr & !(page - 1);
        let end = (start + len).div_ceil(page) * page;
        // SAFETY: this thread's `errno`, read to be put back should `mmap` fail and set it.
        let errno_before = unsafe { *libc::__errno_location() };
        // SAFETY: [from, end) lies inside the registered mapping, which its owner keeps mapped
        // while it is registered (and it is being read: this fault is a read of it). Replacing
        // those pages with private zero pages changes what the reader sees, never memory
        // anything else owns.
        let zeros = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            TABLE[i].faulted.store(true, Ordering::Release);
            return;
        }
        // SAFETY: `errno` of this thread, which the failed `mmap` set: the interrupted code
        // may be about to read its own.
        unsafe { *libc::__errno_location() = errno_before };
    }
    // Not a guarded mapping's fault: what would have happened without gfxkit.
    // SAFETY: `PREVIOUS` was written before this handler was installed.
    unsafe {
        let previous = &*(*PREVIOUS.0.get()).as_ptr();
        let f = previous.sa_sigaction;
        if f == libc::SIG_DFL || f == libc::SIG_IGN {
            // Back to the default action: the faulting read runs again and ends the process
            // with SIGBUS, as it would have.
            libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut());
        } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(f);
            f(sig, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(f);
            f(sig);
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_file_cut_short_under_its_mapping_reads_as_zeros_and_is_marked() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big.bin");
        let page = PAGE.load(Ordering::Relaxed).max(4096);
        std::fs::write(&p, vec![7u8; 8 * page]).unwrap();
        let file = std::fs::File::open(&p).unwrap();
        // SAFETY: the test's own file, cut short below on purpose.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        let guard = Guard::watch(map.as_ptr(), map.len());
        assert!(!guard.faulted());
        assert_eq!(map.iter().map(|&b| b as usize).sum::<usize>(), 7 * 8 * page);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(3 * page as u64)
            .unwrap();
        let sum: usize = map.iter().map(|&b| b as usize).sum();
        assert_eq!(
            sum,
            7 * 3 * page,
            "the pages beyond the new end read as zeros"
        );
        assert!(guard.faulted());
        drop(guard);
        drop(map);
        // A new mapping in the freed slot starts unmarked.
        std::fs::write(&p, vec![1u8; 2 * page]).unwrap();
        let file = std::fs::File::open(&p).unwrap();
        // SAFETY: as above.
        let map = unsafe { memmap2::Mmap::map(&file).unwrap() };
        let guard = Guard::watch(map.as_ptr(), map.len());
        assert_eq!(map.iter().filter(|&&b| b == 1).count(), 2 * page);
        assert!(!guard.faulted());
    }
}
