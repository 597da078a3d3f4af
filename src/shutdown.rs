//! The shutdown in progress: Redis 7.0's wait for lagging replicas.
//!
//! A primary asked to stop (SIGTERM, SIGINT, SHUTDOWN without NOW) while
//! a replica has not acknowledged every write it was sent holds writes
//! and waits, up to `shutdown-timeout` seconds, for them to catch up, so
//! a stop does not lose what a replica was about to receive (Redis's
//! `prepareForShutdown` / `isReadyToShutdown` / `finishShutdown`). This
//! module is that wait's state: its deadline (INFO's
//! `shutdown_in_milliseconds`), the flags it finishes with, and the
//! SHUTDOWN clients blocked on it, answered with an error if it is
//! aborted (SHUTDOWN ABORT) or fails (a save that cannot be written).
//! Starting and finishing the wait is the server's (`server.rs`), which
//! owns the exit; deciding whether to wait, SHUTDOWN's and the server's
//! alike (`commands::server::prepare_shutdown`).

use parking_lot::Mutex;
use tokio::sync::{Notify, oneshot};

/// SHUTDOWN's options, and `shutdown-on-sigterm` / `-sigint`'s words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    pub(crate) save: bool,
    pub(crate) nosave: bool,
    pub(crate) now: bool,
    pub(crate) force: bool,
}

impl Flags {
    /// A `shutdown-on-sig*` value (already validated by CONFIG SET):
    /// `default` sets none.
    pub(crate) fn from_words(words: &str) -> Flags {
        let mut f = Flags::default();
        for w in words.split_whitespace() {
            match w.to_ascii_lowercase().as_str() {
                "save" => f.save = true,
                "nosave" => f.nosave = true,
                "now" => f.now = true,
                "force" => f.force = true,
                _ => {}
            }
        }
        f
    }

    /// The words of these flags as Redis shows a flags value (CONFIG GET,
    /// CONFIG REWRITE): in their declared order, `default` for none.
    pub(crate) fn words(&self) -> String {
        let set: Vec<&str> = [
            (self.save, "save"),
            (self.nosave, "nosave"),
            (self.now, "now"),
            (self.force, "force"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, w)| *w)
        .collect();
        if set.is_empty() {
            "default".into()
        } else {
            set.join(" ")
        }
    }
}

#[derive(Default)]
struct State {
    /// Unix ms at which the wait ends (Redis's `shutdown_mstime`); 0: no
    /// shutdown initiated.
    deadline_ms: u64,
    flags: Flags,
    /// SHUTDOWN clients waiting with it: dropping a sender tells its
    /// client the shutdown did not happen.
    waiters: Vec<oneshot::Sender<()>>,
    /// A signal asked for a shutdown not started yet (Redis's
    /// `shutdown_asap`; `Some(true)` for SIGINT): the server acts on it
    /// at its next tick, unless `DEBUG PAUSE-CRON` holds the ticks or
    /// SHUTDOWN ABORT takes it back first.
    requested: Option<bool>,
}

#[derive(Default)]
pub(crate) struct Shutdown {
    state: Mutex<State>,
    /// Wakes the server when a SHUTDOWN starts a wait or one is aborted.
    pub(crate) changed: Notify,
}

impl Shutdown {
    /// A wait is in progress (Redis's `isShutdownInitiated`).
    pub(crate) fn initiated(&self) -> bool {
        self.state.lock().deadline_ms != 0
    }

    /// INFO's `shutdown_in_milliseconds`, while a wait is in progress.
    pub(crate) fn remaining_ms(&self, now_ms: u64) -> Option<i64> {
        let deadline = self.state.lock().deadline_ms;
        (deadline != 0).then(|| deadline as i64 - now_ms as i64)
    }

    /// Starts the wait until `deadline_ms` (false if one is in progress
    /// already); `waiter` is SHUTDOWN's client, if it asked.
    pub(crate) fn begin(
        &self,
        flags: Flags,
        deadline_ms: u64,
        waiter: Option<oneshot::Sender<()>>,
    ) -> bool {
        let mut s = self.state.lock();
        if s.deadline_ms != 0 {
            return false;
        }
        s.deadline_ms = deadline_ms.max(1);
        s.flags = flags;
        s.waiters.extend(waiter);
        drop(s);
        self.changed.notify_one();
        true
    }

    /// Adds a SHUTDOWN client to the wait in progress; gives the sender
    /// back if there is none.
    pub(crate) fn join(&self, waiter: oneshot::Sender<()>) -> Result<(), oneshot::Sender<()>> {
        let mut s = self.state.lock();
        if s.deadline_ms == 0 {
            return Err(waiter);
        }
        s.waiters.push(waiter);
        Ok(())
    }

    /// The server exits: the wait is over, but its SHUTDOWN clients are
    /// kept waiting (their connections close with the process).
    pub(crate) fn finish(&self) -> Vec<oneshot::Sender<()>> {
        std::mem::take(&mut *self.state.lock()).waiters
    }

    /// SHUTDOWN clients waiting (INFO's `blocked_clients`).
    pub(crate) fn waiters(&self) -> usize {
        self.state.lock().waiters.len()
    }

    /// The wait's deadline and flags, if one is in progress.
    pub(crate) fn pending(&self) -> Option<(u64, Flags)> {
        let s = self.state.lock();
        (s.deadline_ms != 0).then_some((s.deadline_ms, s.flags))
    }

    /// A signal asks for a shutdown (`sigint`: SIGINT): false if one was
    /// asked for or started already (a second SIGINT exits at once).
    pub(crate) fn request(&self, sigint: bool) -> bool {
        let mut s = self.state.lock();
        if s.requested.is_some() || s.deadline_ms != 0 {
            return false;
        }
        s.requested = Some(sigint);
        true
    }

    /// The signal's request, if one waits to be acted on (it stays until
    /// [`Shutdown::settle`] or SHUTDOWN ABORT).
    pub(crate) fn requested(&self) -> Option<bool> {
        self.state.lock().requested
    }

    /// The signal's request was acted on: a wait began, or its save
    /// failed and the server runs on.
    pub(crate) fn settle(&self) {
        self.state.lock().requested = None;
    }

    /// Ends the wait without exiting (Redis's `cancelShutdown`): its
    /// SHUTDOWN clients are told it failed; or takes back a signal's
    /// request not acted on yet (Redis's `abortShutdown` clearing
    /// `shutdown_asap`). False if there was neither.
    pub(crate) fn cancel(&self) -> bool {
        let mut s = self.state.lock();
        if s.deadline_ms == 0 {
            let taken = s.requested.take().is_some();
            drop(s);
            self.changed.notify_one();
            return taken;
        }
        *s = State::default();
        drop(s);
        self.changed.notify_one();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_begun_once_and_cancel_tells_its_clients() {
        let s = Shutdown::default();
        assert!(!s.initiated());
        assert_eq!(s.remaining_ms(1000), None);
        let (tx, mut rx) = oneshot::channel();
        let flags = Flags::from_words("save now");
        assert!(s.begin(flags, 11_000, Some(tx)));
        assert!(!s.begin(Flags::default(), 99_000, None));
        assert_eq!(s.remaining_ms(1000), Some(10_000));
        assert_eq!(s.pending(), Some((11_000, flags)));
        assert!(rx.try_recv().is_err());
        assert!(s.cancel());
        assert!(matches!(
            rx.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert!(!s.initiated());
        assert!(!s.cancel());
    }

    #[test]
    fn a_signal_request_is_taken_back_by_cancel_and_settled_once_acted_on() {
        let s = Shutdown::default();
        assert!(s.request(false));
        assert!(!s.request(true), "a second signal is not a new request");
        assert_eq!(s.requested(), Some(false));
        assert!(s.cancel());
        assert_eq!(s.requested(), None);
        assert!(!s.cancel());
        assert!(s.request(true));
        s.settle();
        assert_eq!(s.requested(), None);
        // During a wait a signal asks for nothing new.
        assert!(s.begin(Flags::default(), 5_000, None));
        assert!(!s.request(false));
    }

    #[test]
    fn signal_flags_read_as_redis_writes_them() {
        assert_eq!(Flags::from_words("default"), Flags::default());
        let f = Flags::from_words("nosave now force");
        assert!(f.nosave && f.now && f.force && !f.save);
        assert_eq!(Flags::from_words("FORCE now").words(), "now force");
        assert_eq!(Flags::from_words("default").words(), "default");
    }
}
