//! The server's global allocator: mimalloc, counting the bytes the program
//! holds, which INFO memory reports as `used_memory` (Redis's
//! `zmalloc_used_memory`).
//!
//! Why a counting wrapper rather than mimalloc's own figures: mimalloc
//! counts allocated bytes only when built with `MI_STAT` (a debug option
//! that updates shared atomics on every call); what it always tracks,
//! `mi_process_info`'s committed and resident memory, is OS pages, not the
//! bytes handed out. Counting here is exact (the requested sizes: Rust
//! passes the layout back on free, so no size lookup is needed) and cheap:
//! each thread adds to a counter on its own cache line — one uncontended
//! atomic add per allocation, no lock, no shared line bouncing between
//! cores — and INFO sums the counters.
//!
//! `main.rs` installs it; a process that does not (the library's unit
//! tests) reads [`allocated`] as `None`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};

use mimalloc::MiMalloc;

/// Counters, one per thread up to this many; later threads share them
/// (still exact: the adds are atomic).
const SLOTS: usize = 64;

/// A counter alone on its cache line (and the adjacent-line prefetcher's).
#[repr(align(128))]
struct Slot(AtomicIsize);

/// Bytes allocated minus bytes freed by the threads of each slot. A slot
/// may go negative (memory freed by another thread than the one that
/// allocated it); only the sum means anything.
static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicIsize::new(0)) }; SLOTS];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot, `usize::MAX` until its first allocation. A
    /// `Cell<usize>` needs no destructor, so the allocator may touch it at
    /// any point of a thread's life without allocating.
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn counter() -> &'static AtomicIsize {
    let i = SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == usize::MAX {
                i = NEXT_SLOT.fetch_add(1, Relaxed) % SLOTS;
                s.set(i);
            }
            i
        })
        .unwrap_or(0);
    &COUNTS[i % SLOTS].0
}

/// mimalloc, counting what it hands out.
pub struct CountingMimalloc;

// SAFETY: every call is forwarded unchanged to mimalloc's allocator; the
// counting on the side never touches the memory.
unsafe impl GlobalAlloc for CountingMimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { MiMalloc.alloc(layout) };
        if !p.is_null() {
            counter().fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !p.is_null() {
            counter().fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { MiMalloc.dealloc(ptr, layout) };
        counter().fetch_sub(layout.size() as isize, Relaxed);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            counter().fetch_add(
                (new_size as isize).wrapping_sub(layout.size() as isize),
                Relaxed,
            );
        }
        p
    }
}

/// Bytes currently allocated through [`CountingMimalloc`], or `None` when
/// it is not this process's allocator (nothing was ever counted: a process
/// running it holds allocations from before `main`).
pub fn allocated() -> Option<u64> {
    let sum = COUNTS
        .iter()
        .fold(0isize, |acc, s| acc.wrapping_add(s.0.load(Relaxed)));
    (sum > 0).then_some(sum as u64)
}

/// The calling thread's own counter: what it allocated minus what it
/// freed (shared with other threads only past [`SLOTS`] threads). The
/// difference of two reads brackets what this thread did in between
/// without what other threads did meanwhile, as eviction needs to measure
/// one deletion (Redis's `zmalloc_used_memory` delta, which is exact there
/// because the main thread is alone).
pub(crate) fn thread_net() -> i64 {
    counter().load(Relaxed) as i64
}

/// `mimalloc-<version>` when the counting allocator is in use, else the
/// system's (`libc`, as Redis names a build without its own allocator).
pub(crate) fn name() -> String {
    if allocated().is_none() {
        return "libc".into();
    }
    // SAFETY: a plain query of a constant.
    let v = unsafe { libmimalloc_sys::mi_version() };
    format!("mimalloc-{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
}

/// Memory mimalloc has committed from the OS (its pages, used or free),
/// when it is the allocator: what INFO reports as the allocator's active
/// and resident memory.
pub(crate) fn committed() -> Option<u64> {
    allocated()?;
    let mut commit = 0usize;
    // SAFETY: every out-parameter is nullable; one valid pointer is given.
    unsafe {
        libmimalloc_sys::mi_process_info(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut commit,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
    }
    Some(commit as u64)
}

/// Gives memory the program freed back to the operating system now.
///
/// mimalloc purges freed pages lazily, when the thread that freed them next
/// allocates; a connection that read one 8 MB request and went idle would
/// keep those pages resident until its next request. The background cron
/// calls this once a second (Redis relies on jemalloc's background purging
/// for the same effect), so idle connections give their memory back.
pub(crate) fn release_free_memory() {
    // SAFETY: mi_collect has no preconditions; it only walks mimalloc's own
    // structures (the calling thread's heap and the shared arenas).
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// `disable-thp yes` (Redis's default): no transparent huge pages for this
/// process, whatever the system setting, as Redis 7.0's `THPDisable`. A
/// huge page turns one touched byte into 2 MB of RSS and its copy-on-write
/// after a fork (BGSAVE) into a 2 MB copy. mimalloc is built not to ask for
/// them (`no_thp`); this covers systems where THP is `always`. Returns
/// false if the kernel refused.
pub fn disable_thp() -> bool {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and changes
    // nothing but this process's THP flag.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 }
}

/// mimalloc's own statistics report (MEMORY MALLOC-STATS), or None when
/// it is not the allocator.
pub(crate) fn stats_text() -> Option<String> {
    allocated()?;
    unsafe extern "C" fn append(msg: *const std::ffi::c_char, arg: *mut std::ffi::c_void) {
        // SAFETY: `arg` is the `String` passed below, alive for the call;
        // mimalloc passes a NUL-terminated message.
        unsafe {
            let out = &mut *arg.cast::<String>();
            out.push_str(&std::ffi::CStr::from_ptr(msg).to_string_lossy());
        }
    }
    let mut out = String::new();
    // SAFETY: the callback only appends to `out`, which outlives the call.
    unsafe {
        libmimalloc_sys::mi_stats_print_out(
            Some(append),
            (&mut out as *mut String).cast::<std::ffi::c_void>(),
        )
    };
    Some(out)
}
