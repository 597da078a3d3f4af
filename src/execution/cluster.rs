//! Cluster mode on the one path every command takes: a client's keyed
//! command (and EXEC's queue) is served here only if this node serves its
//! keys' slot; otherwise the client is redirected (Redis's
//! `processCommand` calling `getNodeByQuery` and `clusterRedirectClient`).
//! A standalone server never gets here: `Services::cluster` is `None`.

use crate::cluster::Cluster;
use crate::cluster::route::{self, Asker};
use crate::commands::session::Client;
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
