//! CLUSTER, READONLY, READWRITE and ASKING as Redis 7.0.15 answers them.
//!
//! Without `cluster-enabled`, every one is refused with `ERR This instance
//! has cluster support disabled`, after the usual arity and
//! unknown-subcommand checks; they are in the table so COMMAND INFO and
//! DOCS match redis-server's, and so the script path refuses `CLUSTER
//! RESET` for its `noscript` flag as Redis does, before it runs.
//!
//! In cluster mode they read and change the node table of
//! [`crate::cluster::Cluster`]; each change is saved to nodes.conf before
//! the reply, as Redis's `clusterBeforeSleep` does. There is no cluster
//! bus yet: MEET, REPLICATE and FAILOVER make Redis's checks and then say
//! so, LINKS is empty, and no node reports failures.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Error, Handler, Keys, Outcome};
use crate::cluster::gossip::FailoverMode;
use crate::cluster::state::{EndpointType, ReplyContext};
use crate::cluster::wire::{NODE_MASTER, NODE_SLAVE, NodeName, SLOTS};
use crate::cluster::{Cluster, Inner, nodes_conf};
use crate::util::parse_i64;

const G: &str = "cluster";

/// Redis's reply to every cluster command when cluster mode is off.
const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The cluster service, or the refusal of a server without cluster mode.
fn cluster<'c>(ctx: &Ctx<'c, '_>) -> Result<&'c Cluster, Error> {
    let shared: &'c std::sync::Arc<crate::commands::Services> = ctx.shared;
    shared.cluster.as_ref().ok_or(Error::Static(DISABLED))
}

fn now_ms() -> i64 {
    crate::clock::system_us() as i64 / 1000
}

/// Saves and re-evaluates after a change (`CLUSTER_TODO_SAVE_CONFIG |
/// CLUSTER_TODO_UPDATE_STATE`), once the shard channels of the slots the
/// change took from myself are dropped (before the reply, as Redis's
/// `clusterDelSlot` drops them).
fn changed(ctx: &Ctx, cluster: &Cluster, inner: &mut Inner, fsync: bool) {
    inner.drop_lost_channels(&ctx.shared.pubsub, ctx.shared.config.pubsub_output_limit());
    cluster.changed(inner, &ctx.shared.config, now_ms(), fsync);
}

/// `getSlotOrReply`.
fn slot_arg(arg: &[u8]) -> Result<u16, Error> {
    parse_i64(arg)
        .filter(|s| (0..SLOTS as i64).contains(s))
        .map(|s| s as u16)
        .ok_or(Error::Static("ERR Invalid or out of range slot"))
}

/// `clusterLookupNode`: a known node by its 40-character id.
fn lookup(inner: &Inner, arg: &[u8]) -> Option<NodeName> {
    NodeName::from_slice(arg).filter(|n| inner.state.node(n).is_some())
}

fn unknown_node(arg: &[u8]) -> Error {
    Error::Raw(format!("ERR Unknown node {}", String::from_utf8_lossy(arg)).into_bytes())
}

/// Keys in database 0 (`dictSize(server.db[0].dict)`): the slot index
/// holds exactly them.
fn db0_keys(ctx: &Ctx) -> usize {
    ctx.shared.store.slot_index().map_or(0, |i| i.len())
}

fn reply_context(ctx: &Ctx) -> ReplyContext {
    let config = &ctx.shared.config;
    let offset = ctx.shared.replication.offset() as i64;
    ReplyContext {
        endpoint: match config
            .cluster_setting("cluster-preferred-endpoint-type")
            .as_str()
        {
            "hostname" => EndpointType::Hostname,
            "unknown-endpoint" => EndpointType::UnknownEndpoint,
            _ => EndpointType::Ip,
        },
        tls_cluster: config.tls_setting("tls-cluster") == "yes",
        plaintext_client: !ctx.client.handle.tls,
        master_repl_offset: offset,
        replica_offset: ctx.shared.replication.replica_offset() as i64,
    }
}

/// A client is shown the ports of its connection's kind (Redis 7.2+'s
/// `shouldReturnTlsInfo`): `pport` when that is not the cluster's kind.
fn use_pport(ctx: &Ctx) -> bool {
    ctx.client.handle.tls != (ctx.shared.config.tls_setting("tls-cluster") == "yes")
}

fn help(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    // Redis 8.0.2's text (`clusterCommandHelp` and `clusterCommandSpecial`).
    const LINES: &[&str] = &[
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id.",
        "MYSHARDID",
        "    Return the node's shard id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "REPLICAS <node-id>",
        "    Return <node-id> replicas.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "ADDSLOTS <slot> [<slot> ...]",
        "    Assign slots to current node.",
        "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Assign slots which are between <start-slot> and <end-slot> to current node.",
        "BUMPEPOCH",
        "    Advance the cluster config epoch.",
        "COUNT-FAILURE-REPORTS <node-id>",
        "    Return number of failure reports for <node-id>.",
        "DELSLOTS <slot> [<slot> ...]",
        "    Delete slots information from current node.",
        "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
        "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
        "FAILOVER [FORCE|TAKEOVER]",
        "    Promote current replica node to being a master.",
        "FORGET <node-id>",
        "    Remove a node from the cluster.",
        "FLUSHSLOTS",
        "    Delete current node own slots information.",
        "MEET <ip> <port> [<bus-port>]",
        "    Connect nodes into a working cluster.",
        "REPLICATE <node-id>",
        "    Configure current node as replica to <node-id>.",
        "RESET [HARD|SOFT]",
        "    Reset current node (default: soft).",
        "SET-CONFIG-EPOCH <epoch>",
        "    Set config epoch of current node.",
        "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
        "    Set slot state.",
        "SAVECONFIG",
        "    Force saving cluster configuration on disk.",
        "LINKS",
        "    Return information about all network links between this node and its peers.",
        "    Output format is an array where each array element is a map containing attributes of a link",
        "HELP",
        "    Print this help.",
    ];
    ctx.out.array(LINES.len());
    for line in LINES {
        ctx.out.simple(line);
    }
    Ok(Outcome::Done)
}

/// Redis's `addReplySubcommandSyntaxError`.
fn syntax_error(ctx: &Ctx) -> Error {
    Error::Raw(
        format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
            String::from_utf8_lossy(ctx.arg(1))
        )
        .into_bytes(),
    )
}

fn info(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let inner = cl.read();
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for slot in 0..SLOTS as u16 {
        let Some(node) = inner
            .state
            .slot_owner(slot)
            .and_then(|n| inner.state.node(n))
        else {
            continue;
        };
        assigned += 1;
        if node.is_failed() {
            fail += 1;
        } else if node.flags & crate::cluster::wire::NODE_PFAIL != 0 {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let me = inner.state.node(&inner.myself());
    let my_epoch = me.map_or(0, |n| inner.state.shown_epoch(n));
    let text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n{}\
         total_cluster_links_buffer_limit_exceeded:{}\r\n",
        if inner.ok() { "ok" } else { "fail" },
        inner.state.nodes().count(),
        inner.size(),
        inner.state.current_epoch,
        message_stats(&cl.stats),
        cl.stats
            .limit_exceeded
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    ctx.out.verbatim(text.as_bytes());
    Ok(Outcome::Done)
}

fn myid(ctx: &mut Ctx) -> CmdResult {
    let me = cluster(ctx)?.read().myself();
    ctx.out.bulk(me.as_bytes());
    Ok(Outcome::Done)
}

/// `CLUSTER MYSHARDID`: myself's shard id (Redis 7.2).
fn myshardid(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let inner = cl.read();
    let id = inner.state.node(&inner.myself()).map(|n| n.shard_id);
    drop(inner);
    match id {
        Some(id) => ctx.out.bulk(id.as_bytes()),
        None => return Err(Error::Static("ERR No shard ID yet")),
    }
    Ok(Outcome::Done)
}

fn nodes(ctx: &mut Ctx) -> CmdResult {
    let use_pport = use_pport(ctx);
    let text = nodes_conf::cluster_nodes(&cluster(ctx)?.read().state, use_pport);
    ctx.out.verbatim(&text);
    Ok(Outcome::Done)
}

fn slots(ctx: &mut Ctx) -> CmdResult {
    let rc = reply_context(ctx);
    let inner = cluster(ctx)?.read();
    inner.state.write_slots_reply(ctx.out, &rc);
    Ok(Outcome::Done)
}

fn shards(ctx: &mut Ctx) -> CmdResult {
    let rc = reply_context(ctx);
    let inner = cluster(ctx)?.read();
    inner.state.write_shards_reply(ctx.out, &rc);
    Ok(Outcome::Done)
}

fn keyslot(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    let slot = crate::keyspace::slots::key_hash_slot(ctx.arg(2));
    ctx.out.int(i64::from(slot));
    Ok(Outcome::Done)
}

fn countkeysinslot(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    let slot = parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(Error::Static("ERR Invalid slot"));
    }
    let n = ctx.shared.store.count_in_slot(slot as u16);
    ctx.out.int(n as i64);
    Ok(Outcome::Done)
}

fn getkeysinslot(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    let slot = parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?;
    let max = parse_i64(ctx.arg(3)).ok_or(Error::NotInteger)?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(Error::Static("ERR Invalid slot or number of keys"));
    }
    // Redis counts in an unsigned int: more than 2^32 asks for all.
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let keys = ctx.shared.store.keys_in_slot(slot as u16, max);
    ctx.out.array(keys.len());
    for key in &keys {
        ctx.out.bulk(key);
    }
    Ok(Outcome::Done)
}

fn flushslots(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    if db0_keys(ctx) != 0 {
        return Err(Error::Static(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    let mut inner = cl.write();
    let me = inner.myself();
    for slot in 0..SLOTS as u16 {
        if inner.state.slot_owner(slot) == Some(&me) {
            inner.state.del_slot(slot);
        }
    }
    changed(ctx, cl, &mut inner, false);
    ctx.out.ok();
    Ok(Outcome::Done)
}

/// `checkSlotAssignmentsOrReply` over `start..=end`, marking `seen`.
fn check_slots(
    inner: &Inner,
    seen: &mut [bool],
    del: bool,
    start: u16,
    end: u16,
) -> Result<(), Error> {
    for slot in start..=end {
        let owned = inner.state.slot_owner(slot).is_some();
        if del && !owned {
            return Err(Error::Owned(format!(
                "ERR Slot {slot} is already unassigned"
            )));
        }
        if !del && owned {
            return Err(Error::Owned(format!("ERR Slot {slot} is already busy")));
        }
        let s = &mut seen[usize::from(slot)];
        if *s {
            return Err(Error::Owned(format!(
                "ERR Slot {slot} specified multiple times"
            )));
        }
        *s = true;
    }
    Ok(())
}

/// `clusterUpdateSlots`: the checked slots added to myself or unbound; an
/// importing state ends either way.
fn update_slots(
    ctx: &Ctx,
    cl: &Cluster,
    mut inner: parking_lot::RwLockWriteGuard<'_, Inner>,
    seen: &[bool],
    del: bool,
) {
    let me = inner.myself();
    for (slot, _) in seen.iter().enumerate().filter(|(_, s)| **s) {
        let slot = slot as u16;
        inner.state.set_importing(slot, None);
        if del {
            inner.state.del_slot(slot);
        } else {
            inner.state.add_slot(&me, slot);
        }
    }
    changed(ctx, cl, &mut inner, false);
}

fn addslots(ctx: &mut Ctx) -> CmdResult {
    edit_slots(ctx, false)
}

fn delslots(ctx: &mut Ctx) -> CmdResult {
    edit_slots(ctx, true)
}

fn edit_slots(ctx: &mut Ctx, del: bool) -> CmdResult {
    let cl = cluster(ctx)?;
    // Every argument parses before any is checked, as in Redis.
    let slots = (2..ctx.args.len())
        .map(|i| slot_arg(ctx.arg(i)))
        .collect::<Result<Vec<u16>, Error>>()?;
    let inner = cl.write();
    let mut seen = vec![false; SLOTS];
    for &slot in &slots {
        check_slots(&inner, &mut seen, del, slot, slot)?;
    }
    update_slots(ctx, cl, inner, &seen, del);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn addslotsrange(ctx: &mut Ctx) -> CmdResult {
    edit_slot_ranges(ctx, false)
}

fn delslotsrange(ctx: &mut Ctx) -> CmdResult {
    edit_slot_ranges(ctx, true)
}

fn edit_slot_ranges(ctx: &mut Ctx, del: bool) -> CmdResult {
    let cl = cluster(ctx)?;
    if ctx.args.len() % 2 == 1 {
        return Err(Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            super::full_name(&ctx.args, ctx.cmd)
        )));
    }
    let inner = cl.write();
    let mut seen = vec![false; SLOTS];
    for i in (2..ctx.args.len()).step_by(2) {
        let start = slot_arg(ctx.arg(i))?;
        let end = slot_arg(ctx.arg(i + 1))?;
        if start > end {
            return Err(Error::Owned(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        check_slots(&inner, &mut seen, del, start, end)?;
    }
    update_slots(ctx, cl, inner, &seen, del);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn setslot(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let mut inner = cl.write();
    if inner.myself_is_replica() {
        return Err(Error::Static("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(ctx.arg(2))?;
    let action = ctx.arg(3).to_ascii_lowercase();
    let argc = ctx.args.len();
    let me = inner.myself();
    let owner = inner.state.slot_owner(slot).copied();
    let mut fsync = false;
    let target = |inner: &Inner, unknown: &str| -> Result<NodeName, Error> {
        let arg = ctx.arg(4);
        let n = lookup(inner, arg).ok_or_else(|| {
            Error::Raw(format!("ERR {unknown} {}", String::from_utf8_lossy(arg)).into_bytes())
        })?;
        if inner.state.node(&n).is_some_and(|n| n.is_replica()) {
            return Err(Error::Static("ERR Target node is not a master"));
        }
        Ok(n)
    };
    match (action.as_slice(), argc) {
        (b"migrating", 5) => {
            if owner != Some(me) {
                return Err(Error::Owned(format!(
                    "ERR I'm not the owner of hash slot {slot}"
                )));
            }
            let n = target(&inner, "I don't know about node")?;
            inner.state.set_migrating(slot, Some(n));
        }
        (b"importing", 5) => {
            if owner == Some(me) {
                return Err(Error::Owned(format!(
                    "ERR I'm already the owner of hash slot {slot}"
                )));
            }
            let n = target(&inner, "I don't know about node")?;
            inner.state.set_importing(slot, Some(n));
        }
        (b"stable", 4) => {
            inner.state.set_importing(slot, None);
            inner.state.set_migrating(slot, None);
        }
        (b"node", 5) => {
            let n = target(&inner, "Unknown node")?;
            let keys = ctx.shared.store.count_in_slot(slot);
            if owner == Some(me) && n != me && keys != 0 {
                return Err(Error::Owned(format!(
                    "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
                )));
            }
            if keys == 0 && inner.state.migrating_to(slot).is_some() {
                inner.state.set_migrating(slot, None);
            }
            let was_mine = owner == Some(me);
            inner.state.del_slot(slot);
            inner.state.add_slot(&n, slot);
            // A primary left without slots follows the new owner as its
            // replica (`clusterSetMaster`, carried out by the bus).
            if was_mine
                && n != me
                && inner.state.slot_count(&me) == 0
                && ctx
                    .shared
                    .config
                    .cluster_setting("cluster-allow-replica-migration")
                    == "yes"
            {
                tracing::warn!(
                    "Configuration change detected. Reconfiguring myself as a replica of {}",
                    String::from_utf8_lossy(n.as_bytes())
                );
                let actions = inner.state.replicate(&n, now_ms());
                fsync = true;
                cl.submit(actions);
            }
            if n == me && inner.state.importing_from(slot).is_some() {
                if bump_epoch(&mut inner) {
                    tracing::warn!("configEpoch updated after importing slot {slot}");
                }
                inner.state.set_importing(slot, None);
            }
        }
        _ => {
            return Err(Error::Static(
                "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
            ));
        }
    }
    changed(ctx, cl, &mut inner, fsync);
    ctx.out.ok();
    Ok(Outcome::Done)
}

/// `clusterBumpConfigEpochWithoutConsensus`: a new epoch for myself unless
/// it already has the greatest one (and not 0).
fn bump_epoch(inner: &mut Inner) -> bool {
    let max = inner.state.max_epoch();
    let me = inner.myself();
    let mine = inner.state.node(&me).map_or(0, |n| n.config_epoch);
    if mine == 0 || mine != max {
        inner.state.current_epoch += 1;
        let epoch = inner.state.current_epoch;
        if let Some(n) = inner.state.node_mut(&me) {
            n.config_epoch = epoch;
        }
        tracing::warn!("New configEpoch set to {epoch}");
        true
    } else {
        false
    }
}

fn bumpepoch(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let mut inner = cl.write();
    let bumped = bump_epoch(&mut inner);
    let me = inner.myself();
    let epoch = inner.state.node(&me).map_or(0, |n| n.config_epoch);
    if bumped {
        changed(ctx, cl, &mut inner, true);
    }
    ctx.out.simple(&format!(
        "{} {epoch}",
        if bumped { "BUMPED" } else { "STILL" }
    ));
    Ok(Outcome::Done)
}

fn set_config_epoch(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let epoch = parse_i64(ctx.arg(2)).ok_or(Error::NotInteger)?;
    let mut inner = cl.write();
    let me = inner.myself();
    if epoch < 0 {
        return Err(Error::Owned(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    }
    if inner.state.nodes().count() > 1 {
        return Err(Error::Static(
            "ERR The user can assign a config epoch only when the node does not know any other node.",
        ));
    }
    if inner.state.node(&me).is_some_and(|n| n.config_epoch != 0) {
        return Err(Error::Static("ERR Node config epoch is already non-zero"));
    }
    let epoch = epoch as u64;
    if let Some(n) = inner.state.node_mut(&me) {
        n.config_epoch = epoch;
    }
    tracing::warn!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
    if inner.state.current_epoch < epoch {
        inner.state.current_epoch = epoch;
    }
    changed(ctx, cl, &mut inner, false);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn saveconfig(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let inner = cl.read();
    match cl.save(&inner, true) {
        Ok(()) => {
            ctx.out.ok();
            Ok(Outcome::Done)
        }
        Err(e) => {
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or(&text);
            Err(Error::Owned(format!(
                "ERR error saving the cluster node config: {text}"
            )))
        }
    }
}

fn count_failure_reports(ctx: &mut Ctx) -> CmdResult {
    let mut inner = cluster(ctx)?.write();
    let n = lookup(&inner, ctx.arg(2)).ok_or_else(|| unknown_node(ctx.arg(2)))?;
    let count = inner.state.failure_reports(&n, now_ms());
    ctx.out.int(count as i64);
    Ok(Outcome::Done)
}

fn replicas(ctx: &mut Ctx) -> CmdResult {
    let inner = cluster(ctx)?.read();
    let n = lookup(&inner, ctx.arg(2)).ok_or_else(|| unknown_node(ctx.arg(2)))?;
    let node = inner
        .state
        .node(&n)
        .ok_or_else(|| unknown_node(ctx.arg(2)))?;
    if node.is_replica() {
        return Err(Error::Static("ERR The specified node is not a master"));
    }
    // Each replica's `CLUSTER NODES` line, without its newline.
    let all = nodes_conf::cluster_nodes(&inner.state, use_pport(ctx));
    ctx.out.array(node.replicas.len());
    for r in &node.replicas {
        let line = all
            .split(|&b| b == b'\n')
            .find(|l| l.starts_with(r.as_bytes()))
            .unwrap_or(&[]);
        ctx.out.bulk(line);
    }
    Ok(Outcome::Done)
}

/// `clusterGetMessageTypeString`, by type.
const MSG_TYPE_NAMES: [&str; crate::cluster::MSG_TYPES] = [
    "ping",
    "pong",
    "meet",
    "fail",
    "publish",
    "auth-req",
    "auth-ack",
    "update",
    "mfstart",
    "module",
    "publishshard",
];

/// CLUSTER INFO's message counts: each type seen, then the total, sent
/// then received.
fn message_stats(stats: &crate::cluster::BusStats) -> String {
    let mut text = String::new();
    for (counts, dir) in [(&stats.sent, "sent"), (&stats.received, "received")] {
        let mut total = 0;
        for (name, c) in MSG_TYPE_NAMES.iter().zip(counts) {
            let n = c.load(std::sync::atomic::Ordering::Relaxed);
            if n != 0 {
                total += n;
                text.push_str(&format!("cluster_stats_messages_{name}_{dir}:{n}\r\n"));
            }
        }
        text.push_str(&format!("cluster_stats_messages_{dir}:{total}\r\n"));
    }
    text
}

/// CLUSTER LINKS: every other node's outbound (`to`) and inbound (`from`)
/// link, with its send queue's memory (Redis 8.0's `send_msg_queue_mem`,
/// shown as both the allocated and the used size); `w` among its events
/// while messages wait to be written.
fn links(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let links = cl.read().state.node_links();
    ctx.out.array(links.len());
    for (link, node, inbound, ctime) in links {
        let mem = cl.stats.link(link);
        let queued = mem.as_ref().map_or(0, |m| m.send_queue()) as i64;
        let writing = mem.as_ref().is_some_and(|m| m.writing());
        ctx.out.map(6);
        ctx.out.bulk(b"direction");
        ctx.out.bulk(if inbound { b"from" as &[u8] } else { b"to" });
        ctx.out.bulk(b"node");
        ctx.out.bulk(node.as_bytes());
        ctx.out.bulk(b"create-time");
        ctx.out.int(ctime);
        ctx.out.bulk(b"events");
        ctx.out.bulk(if writing { b"rw" as &[u8] } else { b"r" });
        ctx.out.bulk(b"send-buffer-allocated");
        ctx.out.int(queued);
        ctx.out.bulk(b"send-buffer-used");
        ctx.out.int(queued);
    }
    Ok(Outcome::Done)
}

fn reset(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let hard = match ctx.args.len() {
        2 => false,
        _ if ctx.arg(2).eq_ignore_ascii_case(b"hard") => true,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"soft") => false,
        3 => return Err(Error::Syntax),
        _ => return Err(syntax_error(ctx)),
    };
    if ctx.args.len() > 3 {
        return Err(syntax_error(ctx));
    }
    let mut inner = cl.write();
    let me = inner.myself();
    if !inner.myself_is_replica() && db0_keys(ctx) != 0 {
        return Err(Error::Static(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    if let Some(n) = inner.state.node_mut(&me)
        && n.is_replica()
    {
        // `clusterSetNodeAsMaster`, then `replicationUnsetMaster` and
        // `emptyData` (the bus carries them out, in this order).
        n.flags = (n.flags & !NODE_SLAVE) | NODE_MASTER;
        n.primary = None;
        let mut actions = vec![crate::cluster::gossip::Action::BecomePrimary];
        actions.extend(
            (0..SLOTS as u16)
                .filter(|&s| ctx.shared.store.count_in_slot(s) != 0)
                .map(|slot| crate::cluster::gossip::Action::DeleteKeysInSlot {
                    slot,
                    propagate: false,
                }),
        );
        cl.submit(actions);
    }
    for slot in 0..SLOTS as u16 {
        inner.state.set_importing(slot, None);
        inner.state.set_migrating(slot, None);
        inner.state.del_slot(slot);
    }
    // Their links go too (the bus closes them).
    let closed = inner.state.forget_all_others();
    cl.submit(closed);
    if hard {
        inner.state.current_epoch = 0;
        inner.state.last_vote_epoch = 0;
        if let Some(n) = inner.state.node_mut(&me) {
            n.config_epoch = 0;
        }
        tracing::warn!("configEpoch set to 0 via CLUSTER RESET HARD");
        let name = crate::cluster::random_name();
        inner.state.rename_myself(name);
        // A new shard too (`getRandomHexChars(myself->shard_id)`).
        inner
            .state
            .assign_shard_id(&name, crate::cluster::random_name());
        tracing::info!(
            "Node hard reset, now I'm {}",
            String::from_utf8_lossy(name.as_bytes())
        );
    }
    changed(ctx, cl, &mut inner, true);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn meet(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    if !matches!(ctx.args.len(), 4 | 5) {
        return Err(syntax_error(ctx));
    }
    let port = parse_i64(ctx.arg(3)).ok_or_else(|| {
        Error::Raw(
            format!(
                "ERR Invalid base port specified: {}",
                String::from_utf8_lossy(ctx.arg(3))
            )
            .into_bytes(),
        )
    })?;
    let cport = if ctx.args.len() == 5 {
        parse_i64(ctx.arg(4)).ok_or_else(|| {
            Error::Raw(
                format!(
                    "ERR Invalid bus port specified: {}",
                    String::from_utf8_lossy(ctx.arg(4))
                )
                .into_bytes(),
            )
        })?
    } else {
        port + i64::from(crate::cluster::state::PORT_INCR)
    };
    // `clusterStartHandshake`'s checks: an IP address and ports in range.
    let ip_ok = std::str::from_utf8(ctx.arg(2))
        .ok()
        .and_then(|s| s.parse::<std::net::IpAddr>().ok())
        .is_some();
    if !ip_ok || !(1..=65535).contains(&port) || !(1..=65535).contains(&cport) {
        return Err(Error::Raw(
            format!(
                "ERR Invalid node address specified: {}:{}",
                String::from_utf8_lossy(ctx.arg(2)),
                String::from_utf8_lossy(ctx.arg(3))
            )
            .into_bytes(),
        ));
    }
    // The handshake starts in the bus's next cron; one already under way
    // with this address is no error (Redis answers OK).
    cl.write()
        .state
        .meet(ctx.arg(2), port as i32, cport as i32, now_ms());
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn forget(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let mut inner = cl.write();
    let n = lookup(&inner, ctx.arg(2)).ok_or_else(|| unknown_node(ctx.arg(2)))?;
    let me = inner.myself();
    if n == me {
        return Err(Error::Static(
            "ERR I tried hard but I can't forget myself...",
        ));
    }
    let my_primary = inner.state.node(&me).and_then(|m| m.primary);
    if inner.myself_is_replica() && my_primary == Some(n) {
        return Err(Error::Static("ERR Can't forget my master!"));
    }
    let actions = inner
        .state
        .forget(&n, now_ms())
        .map_err(|e| Error::Owned(e.to_string()))?;
    changed(ctx, cl, &mut inner, false);
    cl.submit(actions);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn replicate(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    let mut inner = cl.write();
    let n = lookup(&inner, ctx.arg(2)).ok_or_else(|| unknown_node(ctx.arg(2)))?;
    let me = inner.myself();
    if n == me {
        return Err(Error::Static("ERR Can't replicate myself"));
    }
    if inner.state.node(&n).is_some_and(|n| n.is_replica()) {
        return Err(Error::Static(
            "ERR I can only replicate a master, not a replica.",
        ));
    }
    if !inner.myself_is_replica() && (inner.state.slot_count(&me) != 0 || db0_keys(ctx) != 0) {
        return Err(Error::Static(
            "ERR To set a master the node must be empty and without assigned slots.",
        ));
    }
    // `clusterSetMaster`: the bus carries out the replication switch.
    let actions = inner.state.replicate(&n, now_ms());
    changed(ctx, cl, &mut inner, true);
    cl.submit(actions);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn failover(ctx: &mut Ctx) -> CmdResult {
    let cl = cluster(ctx)?;
    if ctx.args.len() == 3
        && !ctx.arg(2).eq_ignore_ascii_case(b"force")
        && !ctx.arg(2).eq_ignore_ascii_case(b"takeover")
    {
        return Err(Error::Syntax);
    }
    if ctx.args.len() > 3 {
        return Err(syntax_error(ctx));
    }
    let mut inner = cl.write();
    if !inner.myself_is_replica() {
        return Err(Error::Static(
            "ERR You should send CLUSTER FAILOVER to a replica",
        ));
    }
    let me = inner.myself();
    if inner.state.node(&me).and_then(|m| m.primary).is_none() {
        return Err(Error::Static(
            "ERR I'm a replica but my master is unknown to me",
        ));
    }
    let mode = match ctx.args.len() {
        3 if ctx.arg(2).eq_ignore_ascii_case(b"force") => FailoverMode::Force,
        3 => FailoverMode::Takeover,
        _ => FailoverMode::Default,
    };
    let actions = inner
        .state
        .failover(mode, now_ms())
        .map_err(|e| Error::Owned(e.to_string()))?;
    drop(inner);
    cl.submit(actions);
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn asking(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    ctx.client.asking = true;
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn readonly(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster_readonly = true;
    ctx.out.ok();
    Ok(Outcome::Done)
}

fn readwrite(ctx: &mut Ctx) -> CmdResult {
    cluster(ctx)?;
    ctx.client.cluster_readonly = false;
    ctx.out.ok();
    Ok(Outcome::Done)
}

/// The subcommands that change the cluster's configuration.
const ADMIN_LOADING: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("cluster", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "3.0.0", "Depends on subcommand.", "A container for cluster commands")
        .subcommands(CLUSTER),
    Command::new("readonly", 1, FAST | LOADING | STALE, Keys::None, &(readonly as Handler))
        .doc(G, "3.0.0", "O(1)", "Enables read queries for a connection to a cluster replica node"),
    Command::new("readwrite", 1, FAST | LOADING | STALE, Keys::None, &(readwrite as Handler))
        .doc(G, "3.0.0", "O(1)", "Disables read queries for a connection to a cluster replica node"),
    Command::new("asking", 1, FAST, Keys::None, &(asking as Handler))
        .doc(G, "3.0.0", "O(1)", "Sent by cluster clients after an -ASK redirect"),
];

#[rustfmt::skip]
static CLUSTER: &[Command] = &[
    Command::new("addslots", -3, ADMIN_LOADING, Keys::None, &(addslots as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Assign new hash slots to receiving node")
        .syntax("slot [slot ...]"),
    Command::new("addslotsrange", -4, ADMIN_LOADING, Keys::None, &(addslotsrange as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Assign new hash slots to receiving node")
        .syntax("start-slot end-slot [start-slot end-slot ...]"),
    Command::new("bumpepoch", 2, ADMIN_LOADING, Keys::None, &(bumpepoch as Handler))
        .doc(G, "3.0.0", "O(1)", "Advance the cluster config epoch"),
    Command::new("count-failure-reports", 3, ADMIN | STALE, Keys::None, &(count_failure_reports as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of failure reports", "Return the number of failure reports active for a given node")
        .syntax("node-id"),
    Command::new("countkeysinslot", 3, STALE, Keys::None, &(countkeysinslot as Handler))
        .doc(G, "3.0.0", "O(1)", "Return the number of local keys in the specified hash slot")
        .syntax("slot"),
    Command::new("delslots", -3, ADMIN_LOADING, Keys::None, &(delslots as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Set hash slots as unbound in receiving node")
        .syntax("slot [slot ...]"),
    Command::new("delslotsrange", -4, ADMIN_LOADING, Keys::None, &(delslotsrange as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Set hash slots as unbound in receiving node")
        .syntax("start-slot end-slot [start-slot end-slot ...]"),
    Command::new("failover", -2, ADMIN_LOADING, Keys::None, &(failover as Handler))
        .doc(G, "3.0.0", "O(1)", "Forces a replica to perform a manual failover of its master.")
        .syntax("[FORCE | TAKEOVER]"),
    Command::new("flushslots", 2, ADMIN_LOADING, Keys::None, &(flushslots as Handler))
        .doc(G, "3.0.0", "O(1)", "Delete a node's own slots information"),
    Command::new("forget", 3, ADMIN_LOADING, Keys::None, &(forget as Handler))
        .doc(G, "3.0.0", "O(1)", "Remove a node from the nodes table")
        .syntax("node-id"),
    Command::new("getkeysinslot", 4, STALE, Keys::None, &(getkeysinslot as Handler))
        .doc(G, "3.0.0", "O(log(N)) where N is the number of requested keys", "Return local key names in the specified hash slot")
        .syntax("slot count"),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(help as Handler))
        .doc(G, "5.0.0", "O(1)", "Show helpful text about the different subcommands"),
    Command::new("info", 2, STALE, Keys::None, &(info as Handler))
        .doc(G, "3.0.0", "O(1)", "Provides info about Redis Cluster node state"),
    Command::new("keyslot", 3, STALE, Keys::None, &(keyslot as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of bytes in the key", "Returns the hash slot of the specified key")
        .syntax("key"),
    Command::new("links", 2, STALE, Keys::None, &(links as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of Cluster nodes", "Returns a list of all TCP links to and from peer nodes in cluster"),
    Command::new("meet", -4, ADMIN_LOADING, Keys::None, &(meet as Handler))
        .doc(G, "3.0.0", "O(1)", "Force a node cluster to handshake with another node")
        .syntax("ip port [cluster-bus-port]"),
    Command::new("myid", 2, STALE, Keys::None, &(myid as Handler))
        .doc(G, "3.0.0", "O(1)", "Return the node id"),
    Command::new("myshardid", 2, STALE, Keys::None, &(myshardid as Handler))
        .doc(G, "7.2.0", "O(1)", "Returns the shard ID of a node."),
    Command::new("nodes", 2, STALE, Keys::None, &(nodes as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Get Cluster config for the node"),
    Command::new("replicas", 3, ADMIN | STALE, Keys::None, &(replicas as Handler))
        .doc(G, "5.0.0", "O(1)", "List replica nodes of the specified master node")
        .syntax("node-id"),
    Command::new("replicate", 3, ADMIN_LOADING, Keys::None, &(replicate as Handler))
        .doc(G, "3.0.0", "O(1)", "Reconfigure a node as a replica of the specified master node")
        .syntax("node-id"),
    Command::new("reset", -2, ADMIN | STALE | NOSCRIPT, Keys::None, &(reset as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", "Reset a Redis Cluster node")
        .syntax("[HARD | SOFT]"),
    Command::new("saveconfig", 2, ADMIN_LOADING, Keys::None, &(saveconfig as Handler))
        .doc(G, "3.0.0", "O(1)", "Forces the node to save cluster state on disk"),
    Command::new("set-config-epoch", 3, ADMIN_LOADING, Keys::None, &(set_config_epoch as Handler))
        .doc(G, "3.0.0", "O(1)", "Set the configuration epoch in a new node")
        .syntax("config-epoch"),
    Command::new("setslot", -4, ADMIN_LOADING, Keys::None, &(setslot as Handler))
        .doc(G, "3.0.0", "O(1)", "Bind a hash slot to a specific node")
        .syntax("slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE"),
    Command::new("shards", 2, LOADING | STALE, Keys::None, &(shards as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of cluster nodes", "Get array of cluster slots to node mappings"),
    Command::new("slaves", 3, ADMIN | STALE, Keys::None, &(replicas as Handler))
        .doc(G, "3.0.0", "O(1)", "List replica nodes of the specified master node")
        .syntax("node-id"),
    Command::new("slots", 2, LOADING | STALE, Keys::None, &(slots as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Get array of Cluster slot to node mappings"),
];
