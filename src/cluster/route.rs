//! Which node serves a command (Redis 7.0.15's `getNodeByQuery`) and the
//! redirection a client gets when it is not this one
//! (`clusterRedirectClient`): `-MOVED`, `-ASK`, `-CROSSSLOT`, `-TRYAGAIN`,
//! `-CLUSTERDOWN`. The execution layer asks it for every keyed command of
//! a client (and EXEC's queue), the script engine for each `redis.call`.

use super::wire::NodeName;
use super::{Cluster, Inner};
use crate::acl::catalog::Catalog;
use crate::config::Config;
use crate::keyspace::slots::key_hash_slot;
use crate::protocol::Args;
use crate::spec::{Command, Keys, flags};

/// Why a command is not served here (`CLUSTER_REDIR_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirect {
    CrossSlot,
    /// Some keys of a multi-key command are missing in a slot being moved.
    Unstable,
    Down,
    DownReadOnly,
    Unbound,
    Moved(u16, NodeName),
    Ask(u16, NodeName),
}

/// What the routing needs to know about the client and its command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asker {
    /// The client sent ASKING (or the command is flagged `asking`).
    pub(crate) asking: bool,
    /// The client sent READONLY.
    pub(crate) readonly: bool,
    /// The command (or EXEC's queue, or the script) may write.
    pub(crate) write: bool,
    /// A client not on TLS: redirections name the nodes' ports of the
    /// client's kind (plaintext ones in a `tls-cluster`, TLS ones to a
    /// TLS client of a plaintext cluster).
    pub(crate) plaintext: bool,
}

/// Whether the routing looks at this command at all: Redis skips commands
/// without keys (no key specs and no movable keys), but not EXEC.
pub(crate) fn has_keys(cmd: &'static Command) -> bool {
    cmd.name == "exec" || is_pubsub_shard(cmd) || !matches!(cmd.keys, Keys::None | Keys::All)
}

/// SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE: their shard channels are routed as
/// keys (Redis's legacy key range covers them; zwindow's table gives them
/// no keys, since no shard holds a channel).
fn is_pubsub_shard(cmd: &Command) -> bool {
    matches!(cmd.name, "ssubscribe" | "sunsubscribe" | "spublish")
}

/// The one slot all keys of `cmd` run with `args` are in (`Ok(None)`: no
/// key), or `Err(())` if they span slots (Redis's
/// `areCommandKeysInSameSlot` for one command).
pub(crate) fn keys_slot(cmd: &'static Command, args: &Args<'_>) -> Result<Option<u16>, ()> {
    let mut slot = None;
    let mut cross = false;
    for_each_key(cmd, args, |key| {
        let s = key_hash_slot(key);
        cross |= slot.is_some_and(|first| first != s);
        slot.get_or_insert(s);
    });
    if cross { Err(()) } else { Ok(slot) }
}

/// Calls `f` with each key of `cmd` run with `args`, as Redis's
/// `getKeysFromCommand`: the command's getkeys procedure where it has one
/// (the movable-keys forms and SORT), else its legacy key range (which,
/// unlike the key specs, covers the shard channels of SPUBLISH and
/// SSUBSCRIBE).
pub(crate) fn for_each_key<'a>(
    cmd: &'static Command,
    args: &Args<'a>,
    mut f: impl FnMut(&'a [u8]),
) {
    if is_pubsub_shard(cmd) {
        let last = if cmd.name == "spublish" {
            2
        } else {
            args.len()
        };
        (1..last.min(args.len())).for_each(|i| f(args.get(i)));
        return;
    }
    match cmd.keys {
        Keys::Range { .. } if cmd.name != "sort" => cmd.key_indices(args, |i| f(args.get(i))),
        Keys::None | Keys::All => {}
        _ => {
            let mut out = Vec::new();
            match Catalog::get().id_of(cmd) {
                Some(id) => Catalog::get().keys(id, args, &mut out),
                None => cmd.key_indices(args, |i| out.push((i, 0))),
            }
            for (i, _) in out {
                f(args.get(i));
            }
        }
    }
}

/// `getNodeByQuery` for the commands of one request (one command, or
/// EXEC's queue): `Ok(slot)` when this node serves it (the slot of its
/// keys, `None` without keys), else the redirection. `exists` says whether
/// a key is in database 0 (asked only in a slot being moved).
pub(crate) fn route<'a>(
    inner: &Inner,
    config: &Config,
    top: &'static Command,
    commands: &[(&'static Command, Args<'a>)],
    asker: Asker,
    exists: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<Option<u16>, Redirect> {
    let me = inner.myself();
    let state = &inner.state;
    let mut first: Option<&[u8]> = None;
    let (mut slot, mut owner) = (0u16, None);
    let (mut migrating, mut importing, mut multiple) = (false, false, false);
    let (mut missing, mut existing) = (0usize, 0usize);
    let mut error = None;
    let pubsub_shard = commands
        .first()
        .is_some_and(|(c, _)| matches!(c.name, "ssubscribe" | "sunsubscribe" | "spublish"));
    for (cmd, args) in commands {
        for_each_key(cmd, args, |key| {
            if error.is_some() {
                return;
            }
            let this = key_hash_slot(key);
            match first {
                None => {
                    first = Some(key);
                    slot = this;
                    owner = state.slot_owner(slot).copied();
                    match owner {
                        None => {
                            error = Some(Redirect::Unbound);
                            return;
                        }
                        Some(n) if n == me && state.migrating_to(slot).is_some() => {
                            migrating = true
                        }
                        _ if state.importing_from(slot).is_some() => importing = true,
                        _ => {}
                    }
                }
                Some(f) if f != key => {
                    if this != slot {
                        error = Some(Redirect::CrossSlot);
                        return;
                    }
                    multiple = true;
                }
                Some(_) => {}
            }
            if (migrating || importing) && !pubsub_shard {
                if exists(key) {
                    existing += 1;
                } else {
                    missing += 1;
                }
            }
        });
    }
    if let Some(e) = error {
        return Err(e);
    }
    let Some(owner) = owner else {
        return Ok(None);
    };
    if !inner.ok() {
        if pubsub_shard {
            if config.cluster_setting("cluster-allow-pubsubshard-when-down") != "yes" {
                return Err(Redirect::Down);
            }
        } else if config.cluster_setting("cluster-allow-reads-when-down") != "yes" {
            return Err(Redirect::Down);
        } else if asker.write {
            return Err(Redirect::DownReadOnly);
        }
    }
    if (migrating || importing) && top.name == "migrate" {
        return Ok(Some(slot));
    }
    if migrating && missing > 0 {
        if existing > 0 {
            return Err(Redirect::Unstable);
        }
        let to = state.migrating_to(slot).copied().unwrap_or(NodeName::NULL);
        return Err(Redirect::Ask(slot, to));
    }
    if importing && (asker.asking || top.has(flags::ASKING)) {
        if multiple && missing > 0 {
            return Err(Redirect::Unstable);
        }
        return Ok(Some(slot));
    }
    if (asker.readonly || pubsub_shard) && !asker.write {
        let mine = state.node(&me);
        if mine.is_some_and(|m| m.is_replica() && m.primary == Some(owner)) {
            return Ok(Some(slot));
        }
    }
    if owner != me {
        return Err(Redirect::Moved(slot, owner));
    }
    Ok(Some(slot))
}

impl Redirect {
    /// The error reply (`clusterRedirectClient`), without the `-`.
    pub(crate) fn text(&self, inner: &Inner, config: &Config, plaintext: bool) -> String {
        // The port of the client's kind (`clusterNodeClientPort`).
        let use_pport = plaintext == (config.tls_setting("tls-cluster") == "yes");
        let address = |n: &NodeName| {
            let node = inner.state.node(n);
            let endpoint = match config
                .cluster_setting("cluster-preferred-endpoint-type")
                .as_str()
            {
                "hostname" => match node.map(|n| n.hostname.as_slice()) {
                    Some(h) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
                    _ => "?".to_string(),
                },
                "unknown-endpoint" => String::new(),
                _ => node.map_or(String::new(), |n| {
                    String::from_utf8_lossy(&n.ip).into_owned()
                }),
            };
            let port = node.map_or(0, |n| {
                if use_pport && n.pport != 0 {
                    n.pport
                } else {
                    n.port
                }
            });
            format!("{endpoint}:{port}")
        };
        match self {
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::Unstable => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::Down => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownReadOnly => {
                "CLUSTERDOWN The cluster is down and only accepts read commands".into()
            }
            Redirect::Unbound => "CLUSTERDOWN Hash slot not served".into(),
            Redirect::Moved(slot, n) => format!("MOVED {slot} {}", address(n)),
            Redirect::Ask(slot, n) => format!("ASK {slot} {}", address(n)),
        }
    }

    /// What a script's `redis.call` fails with instead
    /// (`scriptVerifyClusterState`).
    pub(crate) fn script_text(&self) -> &'static str {
        match self {
            Redirect::DownReadOnly => {
                "ERR Script attempted to execute a write command while the cluster is down and readonly"
            }
            Redirect::Down => "ERR Script attempted to execute a command while the cluster is down",
            _ => "ERR Script attempted to access a non local key in a cluster node",
        }
    }
}

impl Cluster {
    /// [`route`] under the read lock; the error as the reply's text.
    pub(crate) fn route<'a>(
        &self,
        config: &Config,
        top: &'static Command,
        commands: &[(&'static Command, Args<'a>)],
        asker: Asker,
        exists: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Option<u16>, (Redirect, String)> {
        let inner = self.read();
        route(&inner, config, top, commands, asker, exists)
            .map_err(|r| (r, r.text(&inner, config, asker.plaintext)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::state::ClusterState;
    use crate::cluster::wire::{NODE_MASTER, NODE_MYSELF};
    use crate::protocol::OwnedArgs;

    fn name(c: u8) -> NodeName {
        NodeName([c; 40])
    }

    /// Myself (`a`) serves 0-8191, `b` (10.0.0.2:7001) the rest; state ok.
    fn two_nodes() -> Inner {
        let mut state = ClusterState::new();
        let (a, b) = (name(b'a'), name(b'b'));
        state.node_or_create(a).flags = NODE_MYSELF | NODE_MASTER;
        state.myself = Some(a);
        let nb = state.node_or_create(b);
        nb.flags = NODE_MASTER;
        nb.ip = b"10.0.0.2".to_vec();
        nb.port = 7001;
        for s in 0..16384u16 {
            state.add_slot(if s < 8192 { &a } else { &b }, s);
        }
        state.bus.state_ok = true;
        state.bus.size = 2;
        Inner::new(state)
    }

    fn run(
        inner: &Inner,
        argv: &[&str],
        asker: Asker,
        present: &[&str],
    ) -> Result<Option<u16>, String> {
        crate::commands::install();
        let config = Config::defaults();
        let slices: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let owned = OwnedArgs::from_slices(&slices);
        let args = owned.args();
        let cmd = crate::spec::lookup(args.get(0)).unwrap();
        let mut exists = |k: &[u8]| present.iter().any(|p| p.as_bytes() == k);
        route(inner, &config, cmd, &[(cmd, args)], asker, &mut exists)
            .map_err(|r| r.text(inner, &config, asker.plaintext))
    }

    #[test]
    fn served_moved_crossslot_unbound_down() {
        let mut inner = two_nodes();
        let none = Asker::default();
        // {b} is slot 3300 (mine), foo 12182 (b's).
        assert_eq!(run(&inner, &["get", "{b}x"], none, &[]), Ok(Some(3300)));
        assert_eq!(run(&inner, &["ping"], none, &[]), Ok(None));
        assert_eq!(
            run(&inner, &["get", "foo"], none, &[]),
            Err("MOVED 12182 10.0.0.2:7001".into())
        );
        assert_eq!(
            run(&inner, &["mget", "{b}x", "foo"], none, &[]),
            Err("CROSSSLOT Keys in request don't hash to the same slot".into())
        );
        // The same key twice is one key.
        assert_eq!(
            run(&inner, &["mget", "{b}x", "{b}x"], none, &[]),
            Ok(Some(3300))
        );
        inner.state.del_slot(3300);
        assert_eq!(
            run(&inner, &["get", "{b}x"], none, &[]),
            Err("CLUSTERDOWN Hash slot not served".into())
        );
        inner.state.bus.state_ok = false;
        assert_eq!(
            run(&inner, &["get", "{c}x"], none, &[]),
            Err("CLUSTERDOWN The cluster is down".into())
        );
    }

    #[test]
    fn migrating_and_importing() {
        let mut inner = two_nodes();
        let none = Asker::default();
        inner.state.set_migrating(3300, Some(name(b'b')));
        assert_eq!(
            run(&inner, &["get", "{b}x"], none, &["{b}x"]),
            Ok(Some(3300))
        );
        assert_eq!(
            run(&inner, &["get", "{b}x"], none, &[]),
            Err("ASK 3300 10.0.0.2:7001".into())
        );
        assert_eq!(
            run(&inner, &["mget", "{b}x", "{b}y"], none, &["{b}x"]),
            Err("TRYAGAIN Multiple keys request during rehashing of slot".into())
        );
        // MIGRATE itself is served while the slot moves.
        assert!(run(&inner, &["migrate", "h", "1", "{b}x", "0", "10"], none, &[]).is_ok());
        inner.state.set_importing(12182, Some(name(b'b')));
        assert_eq!(
            run(&inner, &["get", "foo"], none, &[]),
            Err("MOVED 12182 10.0.0.2:7001".into())
        );
        let asking = Asker {
            asking: true,
            ..Asker::default()
        };
        assert_eq!(run(&inner, &["get", "foo"], asking, &[]), Ok(Some(12182)));
        assert_eq!(
            run(&inner, &["mget", "foo", "{foo}x"], asking, &["foo"]),
            Err("TRYAGAIN Multiple keys request during rehashing of slot".into())
        );
        // RESTORE-ASKING needs no ASKING.
        assert_eq!(
            run(&inner, &["restore-asking", "foo", "0", "x"], none, &[]),
            Ok(Some(12182))
        );
    }

    #[test]
    fn a_replica_serves_reads_after_readonly() {
        let mut inner = two_nodes();
        let (a, b) = (name(b'a'), name(b'b'));
        // Myself becomes a replica of b.
        for s in 0..8192u16 {
            inner.state.del_slot(s);
            inner.state.add_slot(&b, s);
        }
        if let Some(me) = inner.state.node_mut(&a) {
            me.flags = NODE_MYSELF | crate::cluster::wire::NODE_SLAVE;
        }
        inner.state.attach_replica(&b, &a);
        let none = Asker::default();
        assert_eq!(
            run(&inner, &["get", "foo"], none, &[]),
            Err("MOVED 12182 10.0.0.2:7001".into())
        );
        let readonly = Asker {
            readonly: true,
            ..Asker::default()
        };
        assert_eq!(run(&inner, &["get", "foo"], readonly, &[]), Ok(Some(12182)));
        let write = Asker {
            readonly: true,
            write: true,
            ..Asker::default()
        };
        assert_eq!(
            run(&inner, &["set", "foo", "1"], write, &[]),
            Err("MOVED 12182 10.0.0.2:7001".into())
        );
    }
}
