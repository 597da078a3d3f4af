//! The server's clock: Unix time in milliseconds, which tests can shift or
//! freeze through `DEBUG CLOCK` (only with `--enable-debug-command yes`).
//!
//! Everything time-dependent (key TTLs, window trimming, TIME) reads this
//! clock, never the system clock directly, so tests can move time forward
//! instead of sleeping.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

#[derive(Default)]
pub(crate) struct Clock {
    /// Added to the system time.
    offset_ms: AtomicI64,
    /// When non-zero, the clock stands still at this instant.
    frozen_ms: AtomicU64,
}

impl Clock {
    pub(crate) fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    pub(crate) fn now_us(&self) -> u64 {
        self.at_us(system_us())
    }

    /// This clock's time when the system clock read `sys_us` (from
    /// [`system_us`]), for a caller that needs that reading too.
    pub(crate) fn at_us(&self, sys_us: u64) -> u64 {
        let frozen = self.frozen_ms.load(Relaxed);
        if frozen != 0 {
            return frozen * 1000;
        }
        (sys_us as i64)
            .saturating_add(self.offset_ms.load(Relaxed).saturating_mul(1000))
            .max(0) as u64
    }

    /// Moves the clock by `ms` (negative moves it back).
    pub(crate) fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms, Relaxed);
        let frozen = self.frozen_ms.load(Relaxed);
        if frozen != 0 {
            self.frozen_ms
                .store(frozen.saturating_add_signed(ms).max(1), Relaxed);
        }
    }

    /// Stops the clock at `ms` (0 lets it run again from the real time plus offset).
    pub(crate) fn freeze_at(&self, ms: u64) {
        self.frozen_ms.store(ms, Relaxed);
    }
}

/// The system's real time in Unix microseconds, unshifted. A command's
/// duration is measured on it, as Redis's `call` does with `ustime()`, so
/// one reading both starts the measure and dates the command
/// ([`Clock::at_us`]): clock reads are a visible part of a request's cost.
pub(crate) fn system_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    // (Read directly rather than through `SystemTime`, whose conversion
    // to a duration since the epoch took a fifth of a reading's cost.)
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 || ts.tv_sec < 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// A monotonic clock in milliseconds that ticks only at the kernel's timer
/// interval (a few ms): reading it copies a value the kernel keeps, where
/// a precise clock reads the CPU's counter, which costs more than a request's
/// parsing on a virtual machine. For what is counted in seconds (idle time).
pub(crate) fn coarse_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_us_is_the_unix_time() {
        let std_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        assert!(system_us().abs_diff(std_us) < 1_000_000);
    }

    #[test]
    fn frozen_clock_moves_only_when_told() {
        let c = Clock::default();
        c.freeze_at(1_000);
        assert_eq!(c.now_ms(), 1_000);
        c.advance(500);
        assert_eq!(c.now_ms(), 1_500);
        c.freeze_at(0);
        assert!(c.now_ms() > 1_600_000_000_000);
    }
}
