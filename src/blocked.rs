//! Blocked clients as data: who waits on which key ([`Waiter`], queued per
//! shard in [`Queues`], which each keyspace shard holds under its lock), and
//! how many wait ([`Blocking`]), so a write looks at the queues only when
//! somebody does. Serving them — re-running a waiter's command when its key
//! gets data — is the execution layer's (`execution::blocking`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::clients::{ClientHandle, Gate};
use crate::protocol::OwnedArgs;
use crate::types::key::Key;

/// A queued waiter, its reply channel and its timeout.
pub(crate) type Waiting = (Arc<Waiter>, oneshot::Receiver<Vec<u8>>, Option<Duration>);

/// One blocked client.
pub(crate) struct Waiter {
    pub(crate) handle: Arc<ClientHandle>,
    pub(crate) db: usize,
    pub(crate) keys: Vec<Key>,
    /// The type the command takes data from, as `TYPE` names it.
    pub(crate) kind: &'static str,
    pub(crate) args: OwnedArgs,
    pub(crate) resp3: bool,
    /// Whether this waiter re-runs its command when a key it waits on is
    /// deleted or changes type (XREADGROUP's, Redis's `unblock_on_nokey`):
    /// the command then fails as it would if sent afresh.
    pub(crate) unblock_on_nokey: bool,
    /// A read by a client that sent READONLY (cluster mode): a replica of
    /// the key's slot owner keeps it waiting rather than redirecting it
    /// (see `execution::redirect_blocked`).
    pub(crate) replica_read: bool,
    /// Taken by whoever finishes the wait: the server with a reply, or the
    /// client itself on timeout or disconnect.
    slot: Mutex<Option<oneshot::Sender<Vec<u8>>>>,
    /// The gate of the batch that served it (see [`Gate`]): its reply may
    /// not leave before that batch's.
    gate: Mutex<Option<Arc<Gate>>>,
}

impl Waiter {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        handle: Arc<ClientHandle>,
        db: usize,
        keys: Vec<Key>,
        kind: &'static str,
        args: OwnedArgs,
        resp3: bool,
        unblock_on_nokey: bool,
        replica_read: bool,
    ) -> (Arc<Waiter>, oneshot::Receiver<Vec<u8>>) {
        let (tx, rx) = oneshot::channel();
        let w = Arc::new(Waiter {
            handle,
            db,
            keys,
            kind,
            args,
            resp3,
            unblock_on_nokey,
            replica_read,
            slot: Mutex::new(Some(tx)),
            gate: Mutex::new(None),
        });
        (w, rx)
    }

    /// Notes the gate of the batch serving it, before its reply is sent.
    pub(crate) fn set_gate(&self, gate: Option<Arc<Gate>>) {
        *self.gate.lock() = gate;
    }

    /// The gate its reply waits for, once it is served.
    pub(crate) fn take_gate(&self) -> Option<Arc<Gate>> {
        self.gate.lock().take()
    }

    /// Whether the client still waits (not served, timed out or gone).
    pub(crate) fn is_live(&self) -> bool {
        self.slot.lock().as_ref().is_some_and(|tx| !tx.is_closed())
    }
}

/// Per-shard queues of waiters, by (db, key).
pub(crate) type Queues = std::collections::HashMap<(usize, Key), VecDeque<Arc<Waiter>>>;

/// How many clients wait, so that a write asks the queues only when
/// somebody does.
#[derive(Default)]
pub(crate) struct Blocking {
    waiting: AtomicUsize,
}

impl Blocking {
    /// Cheap test on every write: is anybody blocked at all?
    pub(crate) fn has_waiters(&self) -> bool {
        self.waiting.load(Ordering::Acquire) > 0
    }

    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// A waiter was queued.
    pub(crate) fn entered(&self) {
        self.waiting.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends `w`'s wait, whoever finishes it first (the server serving it,
    /// or the client on timeout or disconnect): its reply channel, if
    /// nobody took it before.
    pub(crate) fn finish(&self, w: &Waiter) -> Option<oneshot::Sender<Vec<u8>>> {
        let tx = w.slot.lock().take()?;
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        Some(tx)
    }
}
