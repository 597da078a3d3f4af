//! CLUSTER, READONLY, READWRITE and ASKING as a Redis 7.0 server started
//! without `cluster-enabled` answers them: every one is refused with
//! `ERR This instance has cluster support disabled`, after the usual arity
//! and unknown-subcommand checks. They are in the table so COMMAND INFO
//! and DOCS match redis-server's, and so the script path refuses
//! `CLUSTER RESET` for its `noscript` flag as Redis does, before it runs.
//!
//! zwindow has no cluster mode; cluster clients talk to it as to one
//! standalone redis-server.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Error, Handler, Keys};

const G: &str = "cluster";

/// Redis's reply to every cluster command when cluster mode is off.
fn disabled(_ctx: &mut Ctx) -> CmdResult {
    Err(Error::Static(
        "ERR This instance has cluster support disabled",
    ))
}

/// The subcommands that change the cluster's configuration.
const ADMIN_LOADING: u32 = ADMIN | STALE | NO_ASYNC_LOADING;

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("cluster", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "3.0.0", "Depends on subcommand.", "A container for cluster commands")
        .subcommands(CLUSTER),
    Command::new("readonly", 1, FAST | LOADING | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Enables read queries for a connection to a cluster replica node"),
    Command::new("readwrite", 1, FAST | LOADING | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Disables read queries for a connection to a cluster replica node"),
    Command::new("asking", 1, FAST, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Sent by cluster clients after an -ASK redirect"),
];

#[rustfmt::skip]
static CLUSTER: &[Command] = &[
    Command::new("addslots", -3, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Assign new hash slots to receiving node")
        .syntax("slot [slot ...]"),
    Command::new("addslotsrange", -4, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Assign new hash slots to receiving node")
        .syntax("start-slot end-slot [start-slot end-slot ...]"),
    Command::new("bumpepoch", 2, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Advance the cluster config epoch"),
    Command::new("count-failure-reports", 3, ADMIN | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of failure reports", "Return the number of failure reports active for a given node")
        .syntax("node-id"),
    Command::new("countkeysinslot", 3, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Return the number of local keys in the specified hash slot")
        .syntax("slot"),
    Command::new("delslots", -3, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of hash slot arguments", "Set hash slots as unbound in receiving node")
        .syntax("slot [slot ...]"),
    Command::new("delslotsrange", -4, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of the slots between the start slot and end slot arguments.", "Set hash slots as unbound in receiving node")
        .syntax("start-slot end-slot [start-slot end-slot ...]"),
    Command::new("failover", -2, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Forces a replica to perform a manual failover of its master.")
        .syntax("[FORCE | TAKEOVER]"),
    Command::new("flushslots", 2, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Delete a node's own slots information"),
    Command::new("forget", 3, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Remove a node from the nodes table")
        .syntax("node-id"),
    Command::new("getkeysinslot", 4, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(log(N)) where N is the number of requested keys", "Return local key names in the specified hash slot")
        .syntax("slot count"),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "5.0.0", "O(1)", "Show helpful text about the different subcommands"),
    Command::new("info", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Provides info about Redis Cluster node state"),
    Command::new("keyslot", 3, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of bytes in the key", "Returns the hash slot of the specified key")
        .syntax("key"),
    Command::new("links", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of Cluster nodes", "Returns a list of all TCP links to and from peer nodes in cluster"),
    Command::new("meet", -4, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Force a node cluster to handshake with another node")
        .syntax("ip port [cluster-bus-port]"),
    Command::new("myid", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Return the node id"),
    Command::new("nodes", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Get Cluster config for the node"),
    Command::new("replicas", 3, ADMIN | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "5.0.0", "O(1)", "List replica nodes of the specified master node")
        .syntax("node-id"),
    Command::new("replicate", 3, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Reconfigure a node as a replica of the specified master node")
        .syntax("node-id"),
    Command::new("reset", -2, ADMIN | STALE | NOSCRIPT, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.", "Reset a Redis Cluster node")
        .syntax("[HARD | SOFT]"),
    Command::new("saveconfig", 2, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Forces the node to save cluster state on disk"),
    Command::new("set-config-epoch", 3, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Set the configuration epoch in a new node")
        .syntax("config-epoch"),
    Command::new("setslot", -4, ADMIN_LOADING, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "Bind a hash slot to a specific node")
        .syntax("slot IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE"),
    Command::new("shards", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "7.0.0", "O(N) where N is the total number of cluster nodes", "Get array of cluster slots to node mappings"),
    Command::new("slaves", 3, ADMIN | STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(1)", "List replica nodes of the specified master node")
        .syntax("node-id"),
    Command::new("slots", 2, STALE, Keys::None, &(disabled as Handler))
        .doc(G, "3.0.0", "O(N) where N is the total number of Cluster nodes", "Get array of Cluster slot to node mappings"),
];
