//! The seam through which the keyspace reports upward: what a change of
//! the data means for clients (notifications, client-side caches, blocked
//! clients) and for the propagated stream, implemented by the server that
//! owns those services.
//!
//! The keyspace cannot name pub/sub, client tracking, the blocking queues'
//! owner or the AOF: they sit above it. A [`Keyspace`](super::Keyspace)
//! holds one `&dyn Events` and calls it only when its own cheap checks say
//! something listens, so the indirection costs nothing on a plain write.
//! [`super::propagate::Sink`] is the same pattern for one consumer of the
//! stream; `Events` is where the keyspace meets all of them.

use super::Key;
use super::propagate::Op;

/// Keys whose client-side caches must go (None: every key, a flush),
/// collected during a command and sent once its locks are released.
pub(crate) type Invalidated = Vec<Option<Key>>;

/// Invalidations held for the client that caused them, until its reply is
/// written: (that client's id, the key or None for everything).
pub(crate) type OwnInvalidations = Vec<(u64, Option<Key>)>;

pub(crate) trait Events: Sync {
    /// Whether client-side caching was ever enabled: changed keys are
    /// collected only then.
    fn tracking_used(&self) -> bool;

    /// Sends the invalidations a view collected that no command's
    /// after-command step took (background expiry, eviction, the sweeper).
    fn send_invalidations(&self, invalidated: &mut Invalidated, own: &mut OwnInvalidations);

    /// Publishes a keyspace notification; `flags` (the
    /// `notify-keyspace-events` classes) already enable it.
    fn notify_keyspace(&self, flags: u32, db: usize, event: &str, key: &[u8]);

    /// Whether any client waits on a key: ready keys are collected only
    /// then.
    fn has_waiters(&self) -> bool;

    /// Bytes the allocator counts but eviction must not: what is queued
    /// to clients (it leaves on its own) and the replication backlog.
    fn pushes_in_flight(&self) -> u64;

    /// Whether changes are collected as commands (a sink of the propagated
    /// stream listens).
    fn propagating(&self) -> bool;

    /// One execution unit's commands, in order, to every sink;
    /// `transaction`: wrap them in MULTI/EXEC.
    fn feed(&self, ops: &[Op], transaction: bool);

    /// A unit of one command propagated verbatim, to every sink (see
    /// [`super::propagate::Sink::feed_args`]).
    fn feed_args(&self, db: usize, args: &crate::protocol::Args<'_>);
}

/// The events of a private dataset (SCRIPT DEBUG YES's copy): nothing is
/// notified, propagated, tracked or woken, as in Redis's forked session.
pub(crate) struct Silent;

impl Events for Silent {
    fn tracking_used(&self) -> bool {
        false
    }

    fn send_invalidations(&self, invalidated: &mut Invalidated, own: &mut OwnInvalidations) {
        invalidated.clear();
        own.clear();
    }

    fn notify_keyspace(&self, _flags: u32, _db: usize, _event: &str, _key: &[u8]) {}

    fn has_waiters(&self) -> bool {
        false
    }

    fn pushes_in_flight(&self) -> u64 {
        0
    }

    fn propagating(&self) -> bool {
        false
    }

    fn feed(&self, _ops: &[Op], _transaction: bool) {}

    fn feed_args(&self, _db: usize, _args: &crate::protocol::Args<'_>) {}
}
