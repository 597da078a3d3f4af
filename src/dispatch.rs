//! The seam through which code below the execution layer runs a command
//! of its own: EXEC's queued commands, a script's `redis.call`, the AOF's
//! replay, a blocked client being served (and, next, the replication
//! stream).
//!
//! Running a command means the execution layer's after-command work
//! (statistics, propagation, MONITOR, tracking, the slow log), which sits
//! above everything that needs to start one. So the execution layer
//! implements [`Dispatch`] and hands it down — in the command's context to
//! a handler, as a parameter to the AOF's loading — and whoever runs a
//! command from inside goes through it. A client's own request never
//! does: the execution layer runs it directly, so the hot path takes no
//! indirect call.
//!
//! The seam names no type of the layers above it: the client a command
//! runs as is the implementer's (`C`), and what became of the command is
//! told as [`Called`].

use crate::keyspace::{HashedKey, Keyspace};
use crate::protocol::Args;
use crate::protocol::Reply;
use crate::spec::Command;

/// Runs commands from inside, as clients of type `C`.
pub(crate) trait Dispatch<C> {
    /// Runs the resolved `cmd` as `client` on `ks`, a view whose shards
    /// the caller already holds, writing its reply (or its error reply)
    /// into `out`, with every after-command step a client's request gets.
    /// `first_key`: `args`' first key as the caller hashed it to plan its
    /// locks, if it did.
    fn call<'a>(
        &self,
        client: &mut C,
        out: &mut Reply,
        ks: &mut Keyspace<'_>,
        cmd: &'static Command,
        args: Args<'a>,
        first_key: Option<HashedKey<'a>>,
    ) -> Called;

    /// A client of no connection, for commands the server runs on its own
    /// behalf (Redis's fake clients: the AOF's replay). It is registered
    /// as any client until [`Dispatch::release`].
    fn detached_client(&self) -> C;

    /// Unregisters a client from [`Dispatch::detached_client`].
    fn release(&self, client: C);
}

/// What became of a command run through [`Dispatch::call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Called {
    /// It ran (or failed); its reply is written.
    Done,
    /// It ran; its client's connection closes once the reply is written
    /// (QUIT, CLIENT KILL of itself).
    Close,
    /// A blocking command found nothing to take: nothing was written.
    Blocked,
    /// It needs the script engine, which another client's script holds:
    /// nothing was done.
    WaitScript,
    /// MIGRATE's first step ran: nothing was written, and nothing runs its
    /// transfer from inside.
    Migrate,
}
