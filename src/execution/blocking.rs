//! Blocking commands (BLPOP, BZPOPMIN, BLMOVE, …): who waits for which key,
//! and handing data to them in arrival order.
//!
//! A blocking command first runs like any other; when there is nothing to
//! pop it returns `Outcome::Block` instead of replying, and the dispatcher queues
//! a [`Waiter`] on each of its keys while it still holds those keys' shard
//! locks, so no push can slip between "found nothing" and "waiting".
//!
//! A command that adds data calls `Keyspace::signal_ready(key)`. Once its
//! locks are released, [`serve`] re-runs the first waiter's own
//! command on that key (through the [`Dispatch`] seam, as every command run
//! from inside), under the locks the command table says it needs: the
//! command's handler is the one source of truth for what a wakeup does, and
//! FIFO order among waiters falls out of the queue. Nobody polls.
//!
//! Every waiter declares the type it takes data from (`list`, `zset`, …).
//! The mechanism, not each family, checks it: a ready key holding another
//! type (a BZPOPMIN key that became a list) leaves its waiters blocked, as
//! Redis does. A waiter whose key is ready re-runs its command whole, as
//! Redis 7.2+ re-executes it: every key read and checked again in the
//! command's order, so `BLPOP k1 k2` woken by a push to `k2` pops from `k1`
//! if that now holds data, and fails with WRONGTYPE if `k1` became a
//! string. An XREADGROUP waiter (`unblock_on_nokey`) is re-run too when
//! its key is deleted or retyped, to fail as the command would afresh.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use crate::blocked::Queues;
pub(crate) use crate::blocked::{Waiter, Waiting};
use crate::commands;
use crate::commands::Services;
use crate::commands::session::Client;
use crate::dispatch::{Called, Dispatch};
use crate::keyspace::{Key, Keyspace, ShardSet};
use crate::protocol::Reply;

/// A waiter released without data (timeout, CLIENT UNBLOCK): its command
/// counts as called, as Redis counted it when it blocked (zwindow counts a
/// blocking command when it is served). Released by `CLIENT UNBLOCK …
/// ERROR` (`error`), the call failed with an `UNBLOCKED` error reply, which
/// is returned.
pub(crate) fn unserved(shared: &Services, w: &Waiter, how: u8) -> Option<Vec<u8>> {
    let error = how == crate::clients::UNBLOCK_ERROR || how == crate::clients::UNBLOCK_ROLE;
    let msg = unblocked_error(how);
    if let Ok(cmd) = commands::resolve(&w.args.args()) {
        let stats = commands::CallStats::of(cmd);
        stats.calls.fetch_add(1, Ordering::Relaxed);
        if error {
            stats.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    error.then(|| {
        shared.count_error(msg.as_bytes());
        format!("-{msg}\r\n").into_bytes()
    })
}

/// The error of a wait ended by `CLIENT UNBLOCK … ERROR` or, for
/// [`UNBLOCK_ROLE`](crate::clients::UNBLOCK_ROLE), by a role change.
pub(crate) fn unblocked_error(how: u8) -> &'static str {
    if how == crate::clients::UNBLOCK_ROLE {
        UNBLOCKED_ROLE
    } else {
        "UNBLOCKED client unblocked via CLIENT UNBLOCK"
    }
}

/// The error a blocked client gets when this server becomes a replica;
/// its connection closes after it (Redis's `disconnectAllBlockedClients`).
const UNBLOCKED_ROLE: &str =
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)";

/// Queues `w` on each of its keys; the caller holds their shards.
pub(crate) fn register(shared: &Services, ks: &mut Keyspace<'_>, w: &Arc<Waiter>) {
    shared.blocking.entered();
    for key in &w.keys {
        ks.shard(key)
            .blocked
            .entry((w.db, key.clone()))
            .or_default()
            .push_back(w.clone());
    }
}

/// Ends a wait from the client's side (timeout, disconnect). Returns the
/// reply if the server served the waiter meanwhile.
pub(crate) fn cancel(
    shared: &Services,
    w: &Arc<Waiter>,
    rx: &mut oneshot::Receiver<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut set = ShardSet::default();
    for key in &w.keys {
        set.insert(shared.store.shard_of(key));
    }
    let mut guards = shared.store.lock(set);
    // Served while we were taking the locks?
    let _ = shared.blocking.finish(w);
    for shard in guards.iter_mut() {
        for key in &w.keys {
            remove_from(&mut shard.blocked, w.db, key, w);
        }
    }
    rx.try_recv().ok()
}

/// Serves waiters on keys that just received data.
pub(crate) fn serve(shared: &Arc<Services>, mut ready: Vec<(usize, Key)>) {
    let mut i = 0;
    while i < ready.len() {
        let (db, key) = ready[i].clone();
        i += 1;
        if ready[..i - 1].contains(&(db, key.clone())) {
            continue;
        }
        // Each waiter queued now is tried once, in arrival order. One
        // that finds nothing it can use (a key of another type: a list
        // waiter on a key that became a zset) does not stop the others;
        // a key that is gone does.
        // Once the key is gone, only waiters that fail on a gone key
        // (XREADGROUP's) have anything to learn.
        let mut gone = false;
        for w in queued(shared, db, &key) {
            if gone && !w.unblock_on_nokey {
                continue;
            }
            match try_serve(shared, &w, &key) {
                Served::Yes(more) => ready.extend(more),
                Served::NoData { key_left: false } => gone = true,
                Served::NoData { key_left: true } | Served::Gone => {}
            }
        }
    }
}

/// The live waiters on a key in arrival order, dropping dead ones.
fn queued(shared: &Services, db: usize, key: &Key) -> Vec<Arc<Waiter>> {
    let mut shard = shared.store.lock_shard(shared.store.shard_of(key));
    let k = (db, key.clone());
    let Some(q) = shard.blocked.get_mut(&k) else {
        return Vec::new();
    };
    q.retain(|w| w.is_live());
    if q.is_empty() {
        shard.blocked.remove(&k);
        return Vec::new();
    }
    q.iter().cloned().collect()
}

fn try_serve(shared: &Arc<Services>, w: &Arc<Waiter>, key: &Key) -> Served {
    let args = w.args.args();
    let Ok(cmd) = commands::resolve(&args) else {
        return Served::Gone;
    };
    let plan = super::plan(shared, cmd, &args);
    let mut set = plan.shards;
    set.insert(shared.store.shard_of(key));
    let Ok(guards) = super::lock_planned(shared, w.db, cmd, &args, set, |s| {
        Ok::<_, std::convert::Infallible>(shared.store.lock(s))
    });
    let mut ks = Keyspace::new(shared.env(), guards, w.db, shared.clock.now_ms());
    if !w.is_live() {
        for k in &w.keys {
            let shard = ks.shard(k);
            remove_from(&mut shard.blocked, w.db, k, w);
        }
        return Served::Gone;
    }
    let mut out = Reply::with_resp3(w.resp3);
    // Looked at without effects (Redis 7.2+'s `LOOKUP_NOEFFECTS`): a key
    // past its TTL is no data for the waiter, but it is not deleted here;
    // its DEL is logged by whoever touches it next.
    let now = ks.expiry_now();
    let kind = ks
        .peek_raw(key)
        .filter(|e| !(e.expire_at != 0 && now.is_some_and(|now| e.expire_at <= now)))
        .map(|e| e.value.type_name());
    match kind {
        // The key holds what the waiter takes, or it re-runs whatever the
        // key became (XREADGROUP: to fail as a fresh command would).
        k if w.unblock_on_nokey || k == Some(w.kind) => {
            let mut client = Client::for_waiter(w.handle.clone(), w.db, w.resp3);
            // Redis 7.2+ processes the command again: its user's rules are
            // checked again, so permissions revoked meanwhile refuse it.
            if let Some(msg) = refused_now(shared, &mut client, cmd, &args) {
                commands::CallStats::of(cmd)
                    .rejected
                    .fetch_add(1, Ordering::Relaxed);
                shared.count_error(msg.as_bytes());
                out.error(&msg);
            } else {
                // Through the seam every command run from inside takes.
                let called = super::Dispatcher::new(shared).call(
                    &mut client,
                    &mut out,
                    &mut ks,
                    cmd,
                    args,
                    plan.first_key,
                );
                // The command counted as processed when it blocked, as in Redis.
                if called == Called::Blocked {
                    return Served::NoData {
                        key_left: ks.exists(key),
                    };
                }
            }
        }
        other => {
            return Served::NoData {
                key_left: other.is_some(),
            };
        }
    }
    for k in &w.keys {
        let shard = ks.shard(k);
        remove_from(&mut shard.blocked, w.db, k, w);
    }
    if let Some(tx) = shared.blocking.finish(w) {
        w.set_gate(crate::clients::gate_for(&w.handle));
        let _ = tx.send(out.buf);
    }
    Served::Yes(std::mem::take(&mut ks.ready))
}

/// The NOPERM error a waiter's command now gets from its user's rules
/// (acl.c `getAclErrorMessage`, not verbose), logged as any denial.
fn refused_now(
    shared: &Services,
    client: &mut Client,
    cmd: &'static commands::Command,
    args: &commands::Args<'_>,
) -> Option<String> {
    let name = client.handle.user.lock().clone();
    let user = shared.acl.get(&name)?;
    client.set_user(user, shared.acl.generation());
    let context = crate::acl::log::Context::Toplevel;
    match commands::acl::acl_check(shared, client, cmd, args, context) {
        Err(Some(denied)) => {
            let msg = denied.message(
                &name,
                crate::acl::catalog::Catalog::get().fullname(cmd),
                b"",
                false,
            );
            Some(format!("NOPERM {}", String::from_utf8_lossy(&msg)))
        }
        _ => None,
    }
}

enum Served {
    Yes(Vec<(usize, Key)>),
    /// The waiter stays blocked; `key_left` says whether the key still
    /// holds something another waiter might take.
    NoData {
        key_left: bool,
    },
    Gone,
}

fn remove_from(queues: &mut Queues, db: usize, key: &Key, w: &Arc<Waiter>) {
    let k = (db, key.clone());
    if let Some(q) = queues.get_mut(&k) {
        q.retain(|x| !Arc::ptr_eq(x, w));
        if q.is_empty() {
            queues.remove(&k);
        }
    }
}
