//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! MULTI only opens a queue: the dispatcher queues every later command that
//! is not flagged `TX_CONTROL` and answers `+QUEUED`, and flags the
//! transaction (`client.multi_error`) when it rejects one, so EXEC answers
//! EXECABORT. EXEC is declared `Keys::All`, so by the time it runs the
//! dispatcher holds every shard: it runs the whole queue through
//! the execution layer's [`Dispatch`](crate::dispatch::Dispatch) handle on that one [`Keyspace`](crate::keyspace::Keyspace),
//! which makes the transaction atomic across shards (no other client sees a
//! part of it) and gives it a single "now".
//!
//! WATCH registers the client's shared flag under each key in the key's
//! shard; any write to the key (`Keyspace::signal`/`modified`, lazy expiry,
//! FLUSHDB, SWAPDB) sets it, and EXEC aborts with a null array if it is set
//! or if a key that was live when watched has logically expired by then
//! (Redis 7.0's `isWatchedKeyExpired`). EXEC, DISCARD, UNWATCH, RESET and
//! disconnecting drop the watches.

use std::sync::atomic::Ordering::{Acquire, Relaxed};

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome};
use crate::acl::user::Denied;
use crate::commands::Services;
use crate::commands::session::Client;
use crate::dispatch::Called;
use crate::protocol::Reply;

const G: &str = "transactions";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TX_CONTROL,
        Keys::None,
        &(multi as Handler),
    )
    .doc(G, "1.2.0", "O(1)", "Mark the start of a transaction block"),
    Command::new(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | TX_CONTROL,
        Keys::All,
        &(exec as Handler),
    )
    .doc(
        G,
        "1.2.0",
        "Depends on commands in the transaction",
        "Execute all commands issued after MULTI",
    ),
    Command::new(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TX_CONTROL,
        Keys::None,
        &(discard as Handler),
    )
    .doc(
        G,
        "2.0.0",
        "O(N), when N is the number of queued commands",
        "Discard all commands issued after MULTI",
    ),
    Command::new(
        "watch",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TX_CONTROL,
        Keys::ALL_ARGS,
        &(watch as Handler),
    )
    .doc(
        G,
        "2.2.0",
        "O(1) for every key.",
        "Watch the given keys to determine execution of the MULTI/EXEC block",
    )
    .syntax("key [key ...]"),
    // Not TX_CONTROL: inside MULTI, UNWATCH is queued, as in Redis.
    Command::new(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY,
        Keys::None,
        &(unwatch as Handler),
    )
    .doc(G, "2.2.0", "O(1)", "Forget about all watched keys"),
];

const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

fn multi(ctx: &mut Ctx) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::Static("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(Vec::new());
    ctx.client.multi_error = false;
    ctx.client.handle.multi.store(0, Relaxed);
    ctx.out.ok();
    Ok(Done)
}

fn discard(ctx: &mut Ctx) -> CmdResult {
    if ctx.client.multi.is_none() {
        return Err(Error::Static("ERR DISCARD without MULTI"));
    }
    end_multi(ctx.client);
    unwatch_all(ctx.shared, ctx.client);
    ctx.out.ok();
    Ok(Done)
}

fn exec(ctx: &mut Ctx) -> CmdResult {
    let Some(queue) = ctx.client.multi.take() else {
        return Err(Error::Static("ERR EXEC without MULTI"));
    };
    let aborted = ctx.client.multi_error;
    end_multi(ctx.client);
    // Every shard is held, so nothing can touch a watched key between this
    // check and the last queued command.
    let dirty = ctx.client.watch_flag.load(Acquire) || watched_key_expired(ctx);
    // Unwatch through the held shards: locking them again would deadlock.
    let watched = std::mem::take(&mut ctx.client.watched);
    ctx.client.handle.watching.store(0, Relaxed);
    for (db, key) in &watched {
        ctx.ks.shard(key).unwatch(*db, key, &ctx.client.watch_flag);
    }
    ctx.client.watch_flag.store(false, Relaxed);
    if aborted {
        return Err(Error::Static(EXECABORT));
    }
    if dirty {
        ctx.out.null_array();
        return Ok(Done);
    }
    ctx.client.in_exec = true;
    ctx.out.array(queue.len());
    let mut outcome = Done;
    for queued in &queue {
        let args = queued.args();
        // Queued commands resolved when queued; the table cannot change.
        match super::resolve(&args) {
            Ok(cmd) => {
                // multi.c: permissions are checked again at EXEC, in case
                // the rules changed since the command was queued.
                let context = crate::acl::log::Context::Multi;
                if let Err(denied) =
                    super::acl::acl_check(ctx.shared, ctx.client, cmd, &args, context)
                {
                    let reason = match denied {
                        Some(Denied::Command) => {
                            "no permission to execute the command or subcommand"
                        }
                        Some(Denied::Key) => "no permission to touch the specified keys",
                        Some(Denied::Channel) => {
                            "no permission to access one of the channels used as arguments"
                        }
                        None => "no permission",
                    };
                    ctx.out.error(&format!(
                        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
                    ));
                    continue;
                }
                match ctx
                    .dispatch
                    .call(ctx.client, ctx.out, ctx.ks, cmd, args, None)
                {
                    Called::Done => {}
                    // QUIT or a CLIENT KILL of itself: the connection closes
                    // once EXEC's reply is written.
                    Called::Close => outcome = Outcome::Close,
                    // Nothing blocks inside EXEC (`Client::can_block`), and the
                    // runner that runs an EXEC holding a script owns the engine.
                    other @ (Called::Blocked | Called::WaitScript | Called::Migrate) => {
                        debug_assert!(false, "EXEC's command answered {other:?}");
                        ctx.out.null();
                    }
                }
            }
            Err(e) => ctx.out.error(e.text()),
        }
    }
    ctx.client.in_exec = false;
    Ok(outcome)
}

/// Whether a key this client watched while it was live has logically
/// expired since (not yet deleted, or EXEC would already be dirty).
fn watched_key_expired(ctx: &mut Ctx) -> bool {
    let now = ctx.ks.now_ms;
    for (db, key) in &ctx.client.watched {
        if ctx
            .ks
            .shard(key)
            .watched_key_expired(*db, key, &ctx.client.watch_flag, now)
        {
            return true;
        }
    }
    false
}

fn watch(ctx: &mut Ctx) -> CmdResult {
    if ctx.client.multi.is_some() {
        return Err(Error::Static("ERR WATCH inside MULTI is not allowed"));
    }
    let (db, now, args) = (ctx.client.db, ctx.ks.now_ms, ctx.args);
    for key in args.iter().skip(1) {
        if ctx
            .ks
            .shard(key)
            .watch(db, key, &ctx.client.watch_flag, now)
        {
            ctx.client.watched.push((db, key.into()));
        }
    }
    let n = ctx.client.watched.len();
    ctx.client.handle.watching.store(n, Relaxed);
    ctx.out.ok();
    Ok(Done)
}

fn unwatch(ctx: &mut Ctx) -> CmdResult {
    unwatch_all(ctx.shared, ctx.client);
    ctx.out.ok();
    Ok(Done)
}

/// Answers an EXEC the dispatcher rejected before running it (wrong arity,
/// NOAUTH, subscribed mode): the transaction is discarded and the reason
/// wrapped in EXECABORT, as Redis's `execCommandAbort` does (dropping the
/// generic `ERR ` prefix, keeping specific ones such as `NOAUTH`).
pub(crate) fn abort_exec(shared: &Services, client: &mut Client, out: &mut Reply, reason: &str) {
    // MONITOR showed MULTI: it is shown the EXEC that ends it (Redis's
    // `execCommandAbort`).
    if shared.monitors.active() {
        let exec = crate::commands::OwnedArgs::from_slices(&[b"exec".as_slice()]);
        let limit = shared.config.normal_output_limit();
        shared
            .monitors
            .feed(client, client.db, &exec.args(), 0, limit);
    }
    end_multi(client);
    unwatch_all(shared, client);
    let reason = reason.strip_prefix("ERR ").unwrap_or(reason);
    out.error(&format!(
        "EXECABORT Transaction discarded because of: {reason}"
    ));
}

/// Drops the client's transaction and its WATCHes (Redis's
/// `discardTransaction`), as a cluster redirection of EXEC does.
pub(crate) fn discard_transaction(shared: &Services, client: &mut Client) {
    end_multi(client);
    unwatch_all(shared, client);
}

/// Leaves MULTI state (the queue itself is the caller's to drop).
fn end_multi(client: &mut Client) {
    client.multi = None;
    client.multi_error = false;
    client.handle.multi.store(-1, Relaxed);
    client.handle.multi_mem.store(0, Relaxed);
}

/// Drops every WATCH of the client and clears its dirty flag. Locks the
/// keys' shards itself, so never call it while holding shards: inside EXEC
/// the watches are already gone (EXEC drops them first) and this is a no-op.
fn unwatch_all(shared: &Services, client: &mut Client) {
    if !client.watched.is_empty() {
        shared.store.unwatch(&client.watched, &client.watch_flag);
        client.watched.clear();
    }
    client.handle.watching.store(0, Relaxed);
    client.watch_flag.store(false, Relaxed);
}
