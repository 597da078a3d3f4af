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

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::sync::Notify;

use super::client::ClientHandle;
use crate::commands::{Args, Command, flags, lookup, resolve};

pub const OFF: u8 = 0;
pub const WRITE: u8 = 1;
pub const ALL: u8 = 2;

#[derive(Default)]
pub struct Pause {
    mode: AtomicU8,
    /// Unix ms at which the pause ends.
    end_ms: AtomicU64,
    /// Woken on CLIENT UNPAUSE.
    changed: Notify,
    /// Clients waiting for the pause to end (INFO's `blocked_clients`).
    pub waiting: AtomicU64,
}

impl Pause {
    /// Redis's `pauseClients`: the stronger mode and the later end win.
    pub fn pause(&self, mode: u8, end_ms: u64) {
        self.mode.fetch_max(mode, Relaxed);
        self.end_ms.fetch_max(end_ms, Relaxed);
        self.changed.notify_waiters();
    }

    pub fn unpause(&self) {
        self.mode.store(OFF, Relaxed);
        self.end_ms.store(0, Relaxed);
        self.changed.notify_waiters();
    }

    /// The pause in force now (OFF once its end has passed). The clock is
    /// read only while a pause is set: every command asks, and a clock
    /// read costs more than the rest of this check.
    pub fn mode(&self, clock: &crate::clock::Clock) -> u8 {
        let mode = self.mode.load(Relaxed);
        if mode != OFF && self.end_ms.load(Relaxed) < clock.now_ms() {
            self.unpause();
            return OFF;
        }
        mode
    }

    /// Waits while the pause holds a command of this kind; a killed client
    /// stops waiting.
    pub async fn wait(&self, clock: &crate::clock::Clock, writes: bool, client: &ClientHandle) {
        let held = |mode: u8| mode == ALL || (mode == WRITE && writes);
        if !held(self.mode(clock)) {
            return;
        }
        self.waiting.fetch_add(1, Relaxed);
        client.paused.store(true, Relaxed);
        while held(self.mode(clock)) && !client.killed.load(Relaxed) {
            let left = self.end_ms.load(Relaxed).saturating_sub(clock.now_ms());
            let nap = Duration::from_millis(left.clamp(1, 100));
            let changed = self.changed.notified();
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep(nap) => {}
            }
        }
        client.paused.store(false, Relaxed);
        self.waiting.fetch_sub(1, Relaxed);
    }
}

/// Whether a request is held by `CLIENT PAUSE … WRITE`: it may change the
/// dataset or replicate. `script_writes` says whether the EVAL/EVALSHA or
/// FCALL it names may write (not flagged `no-writes`).
pub fn may_replicate(
    args: &Args<'_>,
    queue: Option<&[crate::commands::OwnedArgs]>,
    script_writes: &dyn Fn(&Command, &Args<'_>) -> bool,
) -> bool {
    let Ok(cmd) = resolve(args) else {
        return false;
    };
    let one = |cmd: &Command, args: &Args<'_>| {
        if is_script(cmd) {
            return script_writes(cmd, args);
        }
        cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE)
    };
    if cmd.name == "exec" {
        return queue.is_some_and(|q| {
            q.iter().any(|a| {
                let a = a.args();
                lookup(a.get(0)).is_some() && resolve(&a).is_ok_and(|c| one(c, &a))
            })
        });
    }
    one(cmd, args)
}

fn is_script(cmd: &Command) -> bool {
    matches!(cmd.name, "eval" | "evalsha" | "fcall")
}
