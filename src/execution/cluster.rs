//! Cluster mode on the one path every command takes: a client's keyed
//! command (and EXEC's queue) is served here only if this node serves its
//! keys' slot; otherwise the client is redirected (Redis's
//! `processCommand` calling `getNodeByQuery` and `clusterRedirectClient`).
//! A standalone server never gets here: `Services::cluster` is `None`.

use crate::cluster::Cluster;
use crate::cluster::route::{self, Asker};
use crate::commands::session::{Client, CompatCheck};
use crate::commands::{Args, Command, Services, lua, resolve};
use crate::keyspace::{HashedKey, Keyspace, ShardSet};

/// What the routing decided for a client's command.
pub(super) enum Routed {
    Here,
    /// The redirection's error text (without its `-`).
    Redirect(String),
    /// A key's existence had to be checked while another client's script
    /// holds the shards: retry after it.
    WaitScript,
}

/// Routes `cmd` (EXEC: the queued commands) for `client`.
pub(super) fn route(
    shared: &Services,
    cluster: &Cluster,
    client: &Client,
    cmd: &'static Command,
    args: &Args<'_>,
    write: bool,
) -> Routed {
    let asker = Asker {
        asking: client.asking,
        readonly: client.cluster_readonly,
        write,
        plaintext: !client.handle.tls,
    };
    let mut busy = false;
    let mut exists = |key: &[u8]| match key_exists(shared, client, key) {
        Some(found) => found,
        None => {
            busy = true;
            false
        }
    };
    let result = if cmd.name == "exec" {
        // EXEC without MULTI is served here (and refused by EXEC).
        let Some(queue) = client.queued() else {
            return Routed::Here;
        };
        let commands: Vec<(&'static Command, Args<'_>)> = queue
            .iter()
            .filter_map(|a| {
                let args = a.args();
                resolve(&args).ok().map(|c| (c, args))
            })
            .collect();
        cluster.route(&shared.config, cmd, &commands, asker, &mut exists)
    } else {
        cluster.route(&shared.config, cmd, &[(cmd, *args)], asker, &mut exists)
    };
    if busy {
        return Routed::WaitScript;
    }
    match result {
        Ok(_) => Routed::Here,
        Err((_, text)) => Routed::Redirect(text),
    }
}

/// A standalone server with `cluster-compatibility-sample-ratio` set
/// checks that share of keyed commands, and EXEC's queue as one, for keys
/// in several slots, which cluster mode would refuse (Redis 8.0's
/// `processCommand` and `areCommandKeysInSameSlot`), counting them in
/// INFO's `cluster_incompatible_ops`. What it found is where a script the
/// command runs goes on checking from.
pub(super) fn sample_compatibility(
    shared: &Services,
    client: &Client,
    cmd: &'static Command,
    args: &Args<'_>,
) -> CompatCheck {
    if !crate::stats::compat_sampled(shared.config.cluster_compat_sample_ratio()) {
        return CompatCheck::Off;
    }
    let mut slot = None;
    let mut cross = false;
    let mut visit = |cmd: &'static Command, args: &Args<'_>| match route::keys_slot(cmd, args) {
        Err(()) => cross = true,
        Ok(Some(s)) => {
            cross |= slot.is_some_and(|first| first != s);
            slot.get_or_insert(s);
        }
        Ok(None) => {}
    };
    if cmd.name == "exec" {
        for queued in client.queued().unwrap_or_default() {
            let args = queued.args();
            if let Ok(cmd) = resolve(&args) {
                visit(cmd, &args);
            }
        }
    } else {
        visit(cmd, args);
    }
    if cross {
        shared
            .stats
            .cluster_incompatible_ops
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return CompatCheck::Off;
    }
    CompatCheck::Slot(slot)
}

/// Whether `key` is in database 0 and not expired, as Redis's lookup with
/// `LOOKUP_NOEXPIRE` sees it (nothing is deleted or touched); `None` when
/// another client's script holds its shard.
fn key_exists(shared: &Services, client: &Client, key: &[u8]) -> Option<bool> {
    let key = HashedKey::new(key);
    let mut set = ShardSet::default();
    set.insert(shared.store.shard_of(key));
    const TRY: std::time::Duration = std::time::Duration::from_millis(10);
    let guards = loop {
        if lua::on_runner() {
            break shared.store.lock(set);
        }
        if let Some(g) = shared.store.try_lock_for(set, TRY) {
            break g;
        }
        if shared.scripting.busy.running_for_other(client.handle.id) {
            return None;
        }
    };
    let mut ks = Keyspace::new(shared.env(), guards, 0, 0);
    let now = shared.clock.now_ms();
    Some(
        ks.peek_raw(key)
            .is_some_and(|e| e.expire_at == 0 || e.expire_at > now),
    )
}

/// Whether the routing looks at `cmd` at all (it has keys, or is EXEC).
pub(super) fn routed(cmd: &'static Command) -> bool {
    route::has_keys(cmd)
}

/// Clients blocked on keys this node no longer serves are answered with
/// the redirection and unblocked (Redis's
/// `clusterRedirectBlockedClientIfNeeded`, from its clients' cron): a
/// cluster down ends every wait (no write may come to serve it), a slot
/// given to another node (and not being imported) sends `-MOVED`, an
/// unbound one `-CLUSTERDOWN Hash slot not served`.
pub(crate) fn redirect_blocked(shared: &Services) {
    let Some(cluster) = &shared.cluster else {
        return;
    };
    if !shared.blocking.has_waiters() {
        return;
    }
    // The cluster's lock before the shards', in the routing's order: held
    // the other way round, a bus write waiting between would deadlock
    // (a waiting writer holds back new readers).
    let inner = cluster.read();
    // Not while a script holds the shards: the next round will do.
    let Some(mut guards) = shared.store.try_lock_for(
        shared.store.all_shards(),
        std::time::Duration::from_millis(1),
    ) else {
        return;
    };
    let mut waiters: Vec<std::sync::Arc<crate::blocked::Waiter>> = Vec::new();
    for shard in guards.iter_mut() {
        for queue in shard.blocked.values() {
            for w in queue {
                if !waiters.iter().any(|x| std::sync::Arc::ptr_eq(x, w)) {
                    waiters.push(w.clone());
                }
            }
        }
    }
    let me = inner.myself();
    for w in waiters {
        let text = if !inner.ok() {
            route::Redirect::Down
        } else {
            // All its keys are in one slot: the first tells.
            let Some(key) = w.keys.first() else {
                continue;
            };
            let slot = crate::keyspace::slots::key_hash_slot(key);
            // A READONLY client's read stays blocked on a replica of
            // the slot's owner, where it was served (Redis's
            // `clusterRedirectBlockedClientIfNeeded`).
            let replica_of_owner = |owner: &crate::cluster::wire::NodeName| {
                w.replica_read
                    && inner
                        .state
                        .node(&me)
                        .is_some_and(|m| m.is_replica() && m.primary == Some(*owner))
            };
            match inner.state.slot_owner(slot) {
                Some(n) if *n == me || replica_of_owner(n) => continue,
                _ if inner.state.importing_from(slot).is_some() => continue,
                Some(n) => route::Redirect::Moved(slot, *n),
                None => route::Redirect::Unbound,
            }
        }
        .text(&inner, &shared.config, !w.handle.tls);
        for shard in guards.iter_mut() {
            for key in &w.keys {
                let k = (w.db, key.clone());
                if let Some(q) = shard.blocked.get_mut(&k) {
                    q.retain(|x| !std::sync::Arc::ptr_eq(x, &w));
                    if q.is_empty() {
                        shard.blocked.remove(&k);
                    }
                }
            }
        }
        if let Some(tx) = shared.blocking.finish(&w) {
            shared.count_error(text.as_bytes());
            w.set_gate(crate::clients::gate_for(&w.handle));
            let _ = tx.send(format!("-{text}\r\n").into_bytes());
        }
    }
}
