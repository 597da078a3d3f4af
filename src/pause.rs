//! CLIENT PAUSE: holding clients' commands back for a while, as Redis 7.0.
//!
//! `CLIENT PAUSE ms ALL` holds every command; `WRITE` holds those that may
//! change the dataset or replicate (Redis's `is_may_replicate_command`: write
//! and may-replicate commands such as PUBLISH and PFCOUNT, EVAL/FCALL of
//! scripts not flagged `no-writes`, an EXEC whose queue holds one). A held
//! command waits — it is not refused — until `CLIENT UNPAUSE` or the pause's
//! end, then runs; in the meantime it counts as a blocked client. Repeated
//! pauses keep the longer end and the stronger mode, as Redis does. Commands
//! refused before that point of `verify` (unknown, wrong arity, NOAUTH,
//! ACL, OOM, …) are answered at once.
//!
//! This module is the pause's state and its wait, below the keyspace
//! (whose expiry stops while a pause is in force); which commands a pause
//! holds is the execution layer's to say (`execution::pause`).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::sync::Notify;

pub(crate) const OFF: u8 = 0;
pub(crate) const WRITE: u8 = 1;
pub(crate) const ALL: u8 = 2;

#[derive(Default)]
pub(crate) struct Pause {
    mode: AtomicU8,
    /// Unix ms at which the pause ends.
    end_ms: AtomicU64,
    /// Woken on CLIENT UNPAUSE.
    changed: Notify,
    /// Clients waiting for the pause to end (INFO's `blocked_clients`).
    pub(crate) waiting: AtomicU64,
    /// FAILOVER holds writes while its replica catches up (Redis's
    /// `PAUSE_DURING_FAILOVER`, apart from CLIENT PAUSE: CLIENT UNPAUSE
    /// does not lift it).
    failover: AtomicBool,
    /// A shutdown waiting for its replicas holds writes the same way
    /// (Redis's `PAUSE_DURING_SHUTDOWN`).
    shutdown: AtomicBool,
}

impl Pause {
    /// Redis's `pauseClients`: the stronger mode and the later end win.
    pub(crate) fn pause(&self, mode: u8, end_ms: u64) {
        self.mode.fetch_max(mode, Relaxed);
        self.end_ms.fetch_max(end_ms, Relaxed);
        self.changed.notify_waiters();
    }

    /// FAILOVER's own hold on writes, set and lifted apart from CLIENT
    /// PAUSE.
    pub(crate) fn hold_writes_for_failover(&self, on: bool) {
        self.failover.store(on, Relaxed);
        self.changed.notify_waiters();
    }

    /// The shutdown's hold on writes while replicas catch up.
    pub(crate) fn hold_writes_for_shutdown(&self, on: bool) {
        self.shutdown.store(on, Relaxed);
        self.changed.notify_waiters();
    }

    /// FAILOVER or a shutdown holds writes, whatever CLIENT PAUSE does.
    fn held_for_handover(&self) -> bool {
        self.failover.load(Relaxed) || self.shutdown.load(Relaxed)
    }

    pub(crate) fn unpause(&self) {
        self.mode.store(OFF, Relaxed);
        self.end_ms.store(0, Relaxed);
        self.changed.notify_waiters();
    }

    /// The pause in force now (OFF once its end has passed). The clock is
    /// read only while a pause is set: every command asks, and a clock
    /// read costs more than the rest of this check.
    pub(crate) fn mode(&self, clock: &crate::clock::Clock) -> u8 {
        let mode = self.mode.load(Relaxed);
        let floor = if self.held_for_handover() { WRITE } else { OFF };
        if mode != OFF && self.end_ms.load(Relaxed) < clock.now_ms() {
            self.unpause();
            return floor;
        }
        mode.max(floor)
    }

    /// Waits while the pause holds a command of this kind; a killed client
    /// stops waiting. `paused` and `killed` are the waiting client's flags
    /// (its registry handle's, which CLIENT LIST shows as `b`): the pause
    /// sets the one while it holds the client and watches the other.
    pub(crate) async fn wait(
        &self,
        clock: &crate::clock::Clock,
        writes: bool,
        paused: &AtomicBool,
        killed: &AtomicBool,
    ) {
        let held = |mode: u8| mode == ALL || (mode == WRITE && writes);
        if !held(self.mode(clock)) {
            return;
        }
        self.waiting.fetch_add(1, Relaxed);
        paused.store(true, Relaxed);
        while held(self.mode(clock)) && !killed.load(Relaxed) {
            let left = if self.held_for_handover() {
                100
            } else {
                self.end_ms.load(Relaxed).saturating_sub(clock.now_ms())
            };
            let nap = Duration::from_millis(left.clamp(1, 100));
            let changed = self.changed.notified();
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
        paused.store(false, Relaxed);
        self.waiting.fetch_sub(1, Relaxed);
    }
}
