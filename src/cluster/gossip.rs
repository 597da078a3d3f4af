//! The cluster bus's protocol logic, as Redis 7.0.15's `cluster.c` runs it,
//! as a state machine without I/O: what a node does with each message it
//! receives ([`ClusterState::on_message`], `clusterProcessPacket`), every
//! 100 ms ([`ClusterState::cron`], `clusterCron`), and on `CLUSTER MEET`
//! ([`ClusterState::meet`], `clusterStartHandshake`). It mutates the
//! [`ClusterState`] and returns what else Redis's code does (connect,
//! send, close, save nodes.conf, switch the replication role, deliver a
//! PUBLISH) as [`Action`]s for the caller to carry out.
//!
//! Owned here: the handshake (MEET, renaming a handshake node from its
//! PONG), gossip (who is told about whom, learning new nodes, addresses),
//! failure detection (PFAIL after `cluster-node-timeout` without a PONG,
//! FAIL on a majority of primaries' reports, clearing it), epochs (the
//! current epoch, config epochs, collisions, bumps without consensus),
//! slot ownership by config epoch (`owner_not_claiming_slot` included) and
//! UPDATE messages, the cluster's ok/fail state, the replica election
//! (delay by rank, votes, taking the primary's slots), manual failover
//! (`CLUSTER FAILOVER [FORCE|TAKEOVER]`, MFSTART), replica migration to
//! orphaned primaries, and `CLUSTER FORGET`'s blacklist.
//!
//! Module messages are passed on as [`Action::Module`] (from known
//! senders, as Redis does) and sent by [`ClusterState::module_message`];
//! what they mean is the receiver's (`cluster::window_sync`). Not here:
//! the send-buffer limit of
//! links and the per-type statistics, which the network layer's bus
//! (`network::bus`) keeps.
//!
//! Links are the caller's connections, named by [`LinkId`]s that this
//! module hands out: outbound ones in [`Action::Connect`], inbound ones
//! from [`ClusterState::accept_link`].

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::state::ClusterState;
use super::wire::{
    Body, EXT_INTERNALSECRET, Gossip, Header, Ip, MFLAG0_FORCEACK, MFLAG0_PAUSED, Msg, NAME_LEN,
    NODE_FAIL, NODE_HANDSHAKE, NODE_MASTER, NODE_MEET, NODE_MIGRATE_TO, NODE_MYSELF, NODE_NOADDR,
    NODE_NOFAILOVER, NODE_PFAIL, NODE_SLAVE, NodeName, Ping, PingExt, SLOTS, STATE_FAIL, STATE_OK,
    Slots,
};

/// A bus connection, as the caller knows it.
pub type LinkId = u64;

/// `CLUSTER_FAIL_REPORT_VALIDITY_MULT`: a failure report is good for twice
/// the node timeout.
const FAIL_REPORT_VALIDITY_MULT: i64 = 2;
/// `CLUSTER_FAIL_UNDO_TIME_MULT`: a failed primary with slots is cleared
/// when reachable again after twice the node timeout.
const FAIL_UNDO_TIME_MULT: i64 = 2;
/// `CLUSTER_WRITABLE_DELAY`: a primary starting in a failed cluster waits
/// this long before it may call it ok.
const WRITABLE_DELAY: i64 = 2000;
/// `CLUSTER_MIN_REJOIN_DELAY`, `CLUSTER_MAX_REJOIN_DELAY`.
const MIN_REJOIN_DELAY: i64 = 500;
const MAX_REJOIN_DELAY: i64 = 5000;
/// `CLUSTER_BLACKLIST_TTL`: a forgotten node stays forgotten a minute.
const BLACKLIST_TTL: i64 = 60_000;
/// `CLUSTER_MF_TIMEOUT`: a manual failover's time limit.
const MF_TIMEOUT: i64 = 5000;
/// `CLUSTER_MF_PAUSE_MULT`: the primary pauses writes twice that long.
const MF_PAUSE_MULT: i64 = 2;
/// `CLUSTER_SLAVE_MIGRATION_DELAY`: how long a primary stays orphaned
/// before a replica moves to it.
const REPLICA_MIGRATION_DELAY: i64 = 5000;

/// `CLUSTER FAILOVER`'s option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailoverMode {
    /// Wait for the primary to pause and hand over its offset.
    Default,
    /// Do not wait for the primary; still ask for votes.
    Force,
    /// No votes: take a new epoch and the slots at once.
    Takeover,
}

/// Why `CLUSTER FAILOVER` refuses; the texts are Redis's replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailoverError {
    NotReplica,
    PrimaryUnknown,
    PrimaryDown,
}

impl std::fmt::Display for FailoverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailoverError::NotReplica => "ERR You should send CLUSTER FAILOVER to a replica",
            FailoverError::PrimaryUnknown => "ERR I'm a replica but my master is unknown to me",
            FailoverError::PrimaryDown => {
                "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"
            }
        })
    }
}

/// Why `CLUSTER FORGET` refuses; the texts are Redis's replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForgetError {
    Unknown(NodeName),
    Myself,
    MyPrimary,
}

impl std::fmt::Display for ForgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForgetError::Unknown(n) => {
                write!(
                    f,
                    "ERR Unknown node {}",
                    String::from_utf8_lossy(n.as_bytes())
                )
            }
            ForgetError::Myself => f.write_str("ERR I tried hard but I can't forget myself..."),
            ForgetError::MyPrimary => f.write_str("ERR Can't forget my master!"),
        }
    }
}

/// The settings the bus logic reads (`server.cluster_*`).
#[derive(Debug, Clone)]
pub struct BusConfig {
    /// `cluster-node-timeout` in ms.
    pub node_timeout: i64,
    /// `cluster-ping-interval` in ms (Redis 7.2's hidden test hook): how
    /// long after its last PONG a node is pinged; 0 for half the node
    /// timeout.
    pub ping_interval: i64,
    /// `cluster-announce-ip`, if set.
    pub announce_ip: Option<Vec<u8>>,
    /// The ports myself announces (client, plaintext client, bus).
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    /// `cluster-announce-hostname`; empty if none.
    pub hostname: Vec<u8>,
    /// `cluster-announce-human-nodename`; empty if none.
    pub human_nodename: Vec<u8>,
    /// `cluster-replica-validity-factor`.
    pub replica_validity_factor: i64,
    /// `repl-ping-replica-period` in seconds.
    pub repl_ping_replica_period: i64,
    /// `cluster-replica-no-failover`.
    pub replica_no_failover: bool,
    /// `cluster-require-full-coverage`.
    pub require_full_coverage: bool,
    /// `cluster-allow-replica-migration`.
    pub allow_replica_migration: bool,
    /// `cluster-migration-barrier`.
    pub migration_barrier: i64,
}

impl Default for BusConfig {
    fn default() -> Self {
        BusConfig {
            node_timeout: 15000,
            ping_interval: 0,
            announce_ip: None,
            port: 6379,
            pport: 0,
            cport: 16379,
            hostname: Vec::new(),
            human_nodename: Vec::new(),
            replica_validity_factor: 10,
            repl_ping_replica_period: 10,
            replica_no_failover: false,
            require_full_coverage: true,
            allow_replica_migration: true,
            migration_barrier: 1,
        }
    }
}

/// What the bus keeps per node beyond [`super::state::Node`]'s fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeBus {
    /// Our outbound link to it (`node->link`).
    pub link: Option<LinkId>,
    /// Its link to us, once its messages named it (`node->inbound_link`).
    pub inbound_link: Option<LinkId>,
    /// When the node was created (`ctime`): times out a handshake.
    pub ctime: i64,
    /// When any message from it last arrived (`data_received`).
    pub data_received: i64,
    /// Primaries that reported it PFAIL or FAIL, and when (`fail_reports`).
    pub fail_reports: Vec<(NodeName, i64)>,
    /// When we last voted for a replica of this primary (`voted_time`).
    pub voted_time: i64,
    /// Since when this primary has had no working replica
    /// (`orphaned_time`; 0: not orphaned).
    pub orphaned_time: i64,
}

/// One link's facts (`clusterLink`).
#[derive(Debug, Clone)]
struct LinkInfo {
    /// The node it belongs to; for an inbound link, once known.
    node: Option<NodeName>,
    inbound: bool,
    ctime: i64,
    /// The peer's address (`connPeerToString`), for inbound links.
    peer_ip: Vec<u8>,
    /// Our own address on it (`connSockName`), for inbound links.
    local_ip: Vec<u8>,
    /// Whether the connection is up (an outbound one starts connecting).
    connected: bool,
}

/// The bus's part of `clusterState`: links, the election, settings, and the
/// few facts from the replication side the election needs.
#[derive(Debug, Clone)]
pub struct BusState {
    pub config: BusConfig,
    /// The cluster's internal secret (Redis 8.0): 40 random hex
    /// characters at start, then the smallest any node sent in its ping
    /// extension, so every node ends with the same one.
    pub internal_secret: [u8; NAME_LEN],
    links: HashMap<LinkId, LinkInfo>,
    next_link: LinkId,
    iteration: u64,
    /// `server.cluster->state == CLUSTER_OK`.
    pub state_ok: bool,
    /// Primaries serving slots (`server.cluster->size`).
    pub size: usize,
    first_call_time: i64,
    among_minority_time: i64,
    pfail_nodes: usize,
    /// The election (`failover_auth_*`).
    pub failover_auth_time: i64,
    pub failover_auth_count: usize,
    pub failover_auth_sent: bool,
    pub failover_auth_rank: usize,
    pub failover_auth_epoch: u64,
    /// Myself's replication offset (`master_repl_offset` for a primary,
    /// `replicationGetSlaveOffset()` for a replica), kept by the caller.
    pub my_repl_offset: i64,
    /// A replica's data age in ms (since the last interaction with its
    /// primary, or since the link went down), kept by the caller.
    pub repl_data_age: i64,
    /// Forgotten nodes gossip may not add back, until when (ms)
    /// (`nodes_black_list`).
    blacklist: HashMap<NodeName, i64>,
    /// Manual failover (`mf_*`): when it times out (0: none), whether the
    /// replica may start the election, the replica a paused primary
    /// serves, the primary's paused offset (-1: not heard yet).
    pub mf_end: i64,
    pub mf_can_start: bool,
    pub mf_replica: Option<NodeName>,
    pub mf_primary_offset: i64,
    /// Slots whose owner no longer claims them in its messages
    /// (`owner_not_claiming_slot`): taken as unclaimed.
    not_claiming: Vec<bool>,
    rng: StdRng,
}

impl Default for BusState {
    fn default() -> Self {
        BusState {
            config: BusConfig::default(),
            links: HashMap::new(),
            next_link: 1,
            iteration: 0,
            state_ok: false,
            // As Redis 8.0's `clusterInit` sets it, until the state is
            // computed.
            size: 0,
            first_call_time: 0,
            among_minority_time: 0,
            pfail_nodes: 0,
            failover_auth_time: 0,
            failover_auth_count: 0,
            failover_auth_sent: false,
            failover_auth_rank: 0,
            failover_auth_epoch: 0,
            my_repl_offset: 0,
            repl_data_age: 0,
            blacklist: HashMap::new(),
            mf_end: 0,
            mf_can_start: false,
            mf_replica: None,
            mf_primary_offset: -1,
            not_claiming: vec![false; SLOTS],
            rng: StdRng::seed_from_u64(rand::random()),
            internal_secret: super::random_name().0,
        }
    }
}

impl BusState {
    /// Seeds the random choices (gossip picks, election delay, handshake
    /// names), for reproducible tests.
    pub fn seed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }
}

/// What the caller must do for the state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Open a bus connection to `ip:cport` as `link`; then report
    /// [`ClusterState::on_link_connected`] or [`ClusterState::on_link_closed`].
    Connect {
        link: LinkId,
        node: NodeName,
        ip: Vec<u8>,
        cport: u16,
    },
    /// Write `msg` on `link`.
    Send { link: LinkId, msg: Msg },
    /// Close `link` (it is forgotten already).
    Close { link: LinkId },
    /// Save nodes.conf (`clusterSaveConfig`), fsyncing it or not.
    SaveConfig { fsync: bool },
    /// The cluster's state changed to ok (true) or fail.
    StateChanged { ok: bool },
    /// Replicate from this primary (`replicationSetMaster`).
    ReplicateFrom { ip: Vec<u8>, port: u16 },
    /// Stop replicating: myself is a primary now (`replicationUnsetMaster`).
    BecomePrimary,
    /// Pause client writes until this time (ms): a primary in a manual
    /// failover (`pauseClients(PAUSE_DURING_FAILOVER)`).
    PauseWrites { until: i64 },
    /// End that pause.
    UnpauseWrites,
    /// Deliver a PUBLISH (or SPUBLISH) from the bus to local subscribers.
    Publish {
        channel: Bytes,
        message: Bytes,
        shard: bool,
    },
    /// Drop the keys of `slot`, if it has any: myself lost it to a newer
    /// config (`delKeysInSlot`, `propagate`: the replicas and the AOF
    /// hear of each deletion), or a replica's CLUSTER RESET empties its
    /// data (`emptyData`: they do not).
    DeleteKeysInSlot { slot: u16, propagate: bool },
    /// A module message from a known node arrived on `link`
    /// (`moduleCallClusterReceivers`).
    Module {
        link: LinkId,
        module_id: [u8; 8],
        module_type: u8,
        payload: Bytes,
    },
}

/// What one call must do before returning (`clusterDoBeforeSleep`'s todo
/// bits), and the actions so far.
#[derive(Default)]
struct Out {
    actions: Vec<Action>,
    save: bool,
    fsync: bool,
    update_state: bool,
    handle_failover: bool,
}

impl Out {
    fn save(&mut self, fsync: bool) {
        self.save = true;
        self.fsync |= fsync;
    }
}

/// Broadcast targets (`CLUSTER_BROADCAST_*`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Targets {
    All,
    LocalReplicas,
}

fn has_flag(flags: u16, f: u16) -> bool {
    flags & f != 0
}

impl ClusterState {
    /// A new cluster node named `name` (`clusterInit` without nodes.conf):
    /// a primary knowing only itself.
    pub fn with_myself(name: NodeName, config: BusConfig, now: i64) -> ClusterState {
        let mut state = ClusterState::new();
        let node = state.node_or_create(name);
        node.flags = NODE_MYSELF | NODE_MASTER;
        node.port = i32::from(config.port);
        node.pport = i32::from(config.pport);
        node.cport = i32::from(config.cport);
        node.hostname = config.hostname.clone();
        node.human_nodename = config.human_nodename.clone();
        if let Some(ip) = &config.announce_ip {
            node.ip = ip.clone();
        }
        node.bus.ctime = now;
        state.myself = Some(name);
        state.bus.config = config;
        state
    }

    /// A random node name (`getRandomHexChars`).
    pub fn random_name(&mut self) -> NodeName {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut name = [0u8; NAME_LEN];
        for b in &mut name {
            *b = HEX[self.bus.rng.random_range(0..16)];
        }
        NodeName(name)
    }

    fn myself_name(&self) -> NodeName {
        self.myself.unwrap_or(NodeName::NULL)
    }

    fn is_myself(&self, name: &NodeName) -> bool {
        self.myself.as_ref() == Some(name)
    }

    fn myself_is_primary(&self) -> bool {
        self.myself
            .and_then(|m| self.node(&m))
            .is_some_and(|n| n.is_primary())
    }

    /// A node as Redis's log lines name it: `<id> (<human node name>)`.
    fn described(&self, name: &NodeName) -> String {
        let human = self.node(name).map_or(&[][..], |n| &n.human_nodename[..]);
        format!(
            "{} ({})",
            String::from_utf8_lossy(name.as_bytes()),
            String::from_utf8_lossy(human)
        )
    }

    fn myself_primary(&self) -> Option<NodeName> {
        self.myself
            .and_then(|m| self.node(&m))
            .filter(|n| n.is_replica())
            .and_then(|n| n.primary)
    }

    fn flags_of(&self, name: &NodeName) -> u16 {
        self.node(name).map_or(0, |n| n.flags)
    }

    fn numslots(&self, name: &NodeName) -> usize {
        self.node(name).map_or(0, |n| n.slots.count())
    }

    /// Whether the cluster is ok as myself sees it.
    pub fn is_ok(&self) -> bool {
        self.bus.state_ok
    }

    // ---------------------------------------------------------------
    // Links
    // ---------------------------------------------------------------

    fn new_link_id(&mut self) -> LinkId {
        let id = self.bus.next_link;
        self.bus.next_link += 1;
        id
    }

    /// An inbound connection was accepted: its id, for the messages that
    /// come on it. `peer_ip` is the peer's address, `local_ip` ours on it.
    pub fn accept_link(&mut self, peer_ip: &[u8], local_ip: &[u8], now: i64) -> LinkId {
        let id = self.new_link_id();
        self.bus.links.insert(
            id,
            LinkInfo {
                node: None,
                inbound: true,
                ctime: now,
                peer_ip: peer_ip.to_vec(),
                local_ip: local_ip.to_vec(),
                connected: true,
            },
        );
        id
    }

    /// The outbound links that are open, with their nodes.
    pub fn outbound_links(&self) -> Vec<(LinkId, NodeName)> {
        self.nodes()
            .filter_map(|n| n.bus.link.map(|l| (l, n.name)))
            .collect()
    }

    /// `freeClusterLink`: forgets the link (and its node's hold on it).
    fn free_link(&mut self, link: LinkId, out: &mut Out) {
        let Some(info) = self.bus.links.remove(&link) else {
            return;
        };
        out.actions.push(Action::Close { link });
        if let Some(node) = info.node.and_then(|n| self.node_mut(&n)) {
            if node.bus.link == Some(link) {
                node.bus.link = None;
                node.link = false;
            }
            if node.bus.inbound_link == Some(link) {
                node.bus.inbound_link = None;
            }
        }
    }

    /// The connection of `link` failed or closed: forget it. The cron
    /// reconnects an outbound one.
    pub fn on_link_closed(&mut self, link: LinkId, now: i64) {
        // A connection that failed to open counts as a ping sent, so an
        // unreachable node times out (the `connConnect` error path).
        if let Some(info) = self.bus.links.get(&link)
            && !info.inbound
            && !info.connected
            && let Some(node) = info.node.and_then(|n| self.node_mut(&n))
            && node.ping_sent == 0
        {
            node.ping_sent = now;
        }
        let mut out = Out::default();
        self.free_link(link, &mut out);
    }

    /// An outbound connection from [`Action::Connect`] is up
    /// (`clusterLinkConnectHandler`): it starts with a MEET or a PING.
    pub fn on_link_connected(&mut self, link: LinkId, now: i64) -> Vec<Action> {
        let mut out = Out::default();
        let Some(info) = self.bus.links.get_mut(&link) else {
            return out.actions;
        };
        info.connected = true;
        let Some(name) = info.node else {
            return out.actions;
        };
        let Some(node) = self.node(&name) else {
            return out.actions;
        };
        let old_ping_sent = node.ping_sent;
        let meet = has_flag(node.flags, NODE_MEET);
        self.send_ping(
            link,
            if meet { Kind::Meet } else { Kind::Ping },
            now,
            &mut out,
        );
        if let Some(node) = self.node_mut(&name) {
            if old_ping_sent != 0 {
                node.ping_sent = old_ping_sent;
            }
            node.flags &= !NODE_MEET;
        }
        self.finish(out, now)
    }

    // ---------------------------------------------------------------
    // Nodes
    // ---------------------------------------------------------------

    /// `CLUSTER MEET ip port cport` (`clusterStartHandshake`): false if
    /// the address is bad or a handshake with it is under way.
    pub fn meet(&mut self, ip: &[u8], port: i32, cport: i32, now: i64) -> bool {
        let Some(norm) = std::str::from_utf8(ip)
            .ok()
            .and_then(|s| s.parse::<std::net::IpAddr>().ok())
        else {
            return false;
        };
        if !(1..=65535).contains(&port) || !(1..=65535).contains(&cport) {
            return false;
        }
        let norm = norm.to_string().into_bytes();
        let busy = self.nodes().any(|n| {
            has_flag(n.flags, NODE_HANDSHAKE)
                && n.ip.eq_ignore_ascii_case(&norm)
                && n.port == port
                && n.cport == cport
        });
        if busy {
            return false;
        }
        self.add_handshake_node(norm, port, 0, cport, NODE_HANDSHAKE | NODE_MEET, now);
        true
    }

    fn add_handshake_node(
        &mut self,
        ip: Vec<u8>,
        port: i32,
        pport: i32,
        cport: i32,
        flags: u16,
        now: i64,
    ) -> NodeName {
        let name = self.random_name();
        let node = self.node_or_create(name);
        node.flags = flags;
        node.ip = ip;
        node.port = port;
        node.pport = pport;
        node.cport = cport;
        node.bus.ctime = now;
        name
    }

    /// `clusterDelNode`: forget a node, its links and its reports.
    fn del_node(&mut self, name: &NodeName, out: &mut Out) {
        let links: Vec<LinkId> = self
            .bus
            .links
            .iter()
            .filter(|(_, l)| l.node.as_ref() == Some(name))
            .map(|(&id, _)| id)
            .collect();
        for link in links {
            self.free_link(link, out);
        }
        let names: Vec<NodeName> = self.nodes().map(|n| n.name).collect();
        for n in names {
            if let Some(node) = self.node_mut(&n) {
                node.bus.fail_reports.retain(|(who, _)| who != name);
            }
        }
        self.remove_node(name);
    }

    /// `clusterRenameNode`, and the links that name it.
    fn rename(&mut self, old: &NodeName, new: NodeName) {
        self.rename_node(old, new);
        for l in self.bus.links.values_mut() {
            if l.node.as_ref() == Some(old) {
                l.node = Some(new);
            }
        }
    }

    /// `CLUSTER FORGET`: drop a node and keep gossip from adding it back
    /// for a minute (`clusterBlacklistAddNode`, `clusterDelNode`).
    pub fn forget(&mut self, name: &NodeName, now: i64) -> Result<Vec<Action>, ForgetError> {
        if self.node(name).is_none() {
            return Err(ForgetError::Unknown(*name));
        }
        if self.is_myself(name) {
            return Err(ForgetError::Myself);
        }
        if self.myself_primary() == Some(*name) {
            return Err(ForgetError::MyPrimary);
        }
        self.blacklisted(name, now); // cleans up expired entries
        self.bus.blacklist.insert(*name, now + BLACKLIST_TTL);
        let mut out = Out::default();
        self.del_node(name, &mut out);
        out.update_state = true;
        out.save(false);
        Ok(self.finish(out, now))
    }

    /// `DEBUG CLUSTERLINK KILL`: frees `node`'s outbound link (`to`),
    /// its inbound one (`from`), or both; the cron reconnects.
    pub fn kill_links(&mut self, node: &NodeName, to: bool, from: bool) -> Vec<Action> {
        let Some(n) = self.node(node) else {
            return Vec::new();
        };
        let (outbound, inbound) = (n.bus.link, n.bus.inbound_link);
        let mut out = Out::default();
        for (link, wanted) in [(outbound, to), (inbound, from)] {
            if let (Some(link), true) = (link, wanted) {
                self.free_link(link, &mut out);
            }
        }
        out.actions
    }

    /// `CLUSTER RESET`'s `clusterDelNode` of every other node: their
    /// links are freed (the Close actions) and their reports dropped.
    pub fn forget_all_others(&mut self) -> Vec<Action> {
        let me = self.myself_name();
        let others: Vec<NodeName> = self.nodes().map(|n| n.name).filter(|n| *n != me).collect();
        let mut out = Out::default();
        for n in &others {
            self.del_node(n, &mut out);
        }
        out.actions
    }

    /// `clusterBlacklistExists` (after `clusterBlacklistCleanup`).
    fn blacklisted(&mut self, name: &NodeName, now: i64) -> bool {
        self.bus.blacklist.retain(|_, &mut until| until >= now);
        self.bus.blacklist.contains_key(name)
    }

    /// `clusterBumpConfigEpochWithoutConsensus` (`CLUSTER SETSLOT ...
    /// NODE` on an importing node, `CLUSTER FAILOVER TAKEOVER`): myself
    /// takes a new epoch unless its own is already the greatest and not 0.
    pub fn bump_epoch_without_consensus(&mut self, now: i64) -> (bool, Vec<Action>) {
        let me = self.myself_name();
        let max = self.max_epoch();
        let mine = self.node(&me).map_or(0, |n| n.config_epoch);
        let mut out = Out::default();
        let bumped = mine == 0 || mine != max;
        if bumped {
            // A peer's epoch may be anything: wrap as Redis's u64 does.
            self.current_epoch = self.current_epoch.wrapping_add(1);
            let epoch = self.current_epoch;
            if let Some(m) = self.node_mut(&me) {
                m.config_epoch = epoch;
            }
            out.save(true);
        }
        (bumped, self.finish(out, now))
    }

    /// `clusterSetNodeAsMaster`.
    fn set_node_as_primary(&mut self, name: &NodeName, out: &mut Out) {
        let Some(node) = self.node(name) else {
            return;
        };
        if node.is_primary() {
            return;
        }
        let old = node.primary;
        let myself = self.is_myself(name);
        if let Some(p) = old.and_then(|p| self.node_mut(&p)) {
            p.replicas.retain(|r| r != name);
        }
        if let Some(node) = self.node_mut(name) {
            if old.is_some() && !myself {
                node.flags |= NODE_MIGRATE_TO;
            }
            node.flags &= !NODE_SLAVE;
            node.flags |= NODE_MASTER;
            node.primary = None;
        }
        out.save(false);
        out.update_state = true;
    }

    /// `CLUSTER REPLICATE` / `clusterSetMaster`: myself becomes a replica
    /// of `primary` (myself must serve no slots).
    pub fn replicate(&mut self, primary: &NodeName, now: i64) -> Vec<Action> {
        let mut out = Out::default();
        self.set_primary(primary, &mut out);
        out.save(true);
        out.update_state = true;
        self.finish(out, now)
    }

    fn set_primary(&mut self, primary: &NodeName, out: &mut Out) {
        let me = self.myself_name();
        if self.is_myself(primary) || self.node(primary).is_none() {
            return;
        }
        let Some(myself) = self.node(&me) else {
            return;
        };
        let was_primary = myself.is_primary();
        let old = myself.primary;
        if was_primary {
            if let Some(m) = self.node_mut(&me) {
                m.flags &= !(NODE_MASTER | NODE_MIGRATE_TO);
                m.flags |= NODE_SLAVE;
            }
            // clusterCloseAllSlots
            for s in 0..SLOTS as u16 {
                self.set_migrating(s, None);
                self.set_importing(s, None);
            }
        } else if let Some(p) = old.and_then(|p| self.node_mut(&p)) {
            p.replicas.retain(|r| *r != me);
        }
        if let Some(m) = self.node_mut(&me) {
            m.primary = Some(*primary);
        }
        if let Some(id) = self.node(primary).map(|p| p.shard_id) {
            self.update_shard_id_saving(&me, id, out);
        }
        self.attach_replica(primary, &me);
        self.lose_slots_not_served(primary);
        if let Some(p) = self.node(primary) {
            let port = u16::try_from(p.port).unwrap_or(0);
            out.actions.push(Action::ReplicateFrom {
                ip: p.ip.clone(),
                port,
            });
        }
        self.reset_manual_failover(out);
    }

    // ---------------------------------------------------------------
    // Failure reports
    // ---------------------------------------------------------------

    /// `clusterNodeAddFailureReport`: true if the report is new.
    fn add_failure_report(&mut self, failing: &NodeName, sender: &NodeName, now: i64) -> bool {
        let Some(node) = self.node_mut(failing) else {
            return false;
        };
        if let Some(r) = node.bus.fail_reports.iter_mut().find(|(w, _)| w == sender) {
            r.1 = now;
            return false;
        }
        node.bus.fail_reports.push((*sender, now));
        true
    }

    fn del_failure_report(&mut self, node: &NodeName, sender: &NodeName, now: i64) -> bool {
        self.cleanup_failure_reports(node, now);
        let Some(node) = self.node_mut(node) else {
            return false;
        };
        let before = node.bus.fail_reports.len();
        node.bus.fail_reports.retain(|(w, _)| w != sender);
        before != node.bus.fail_reports.len()
    }

    /// `clusterNodeCleanupFailureReports`: drop reports older than twice
    /// the node timeout.
    fn cleanup_failure_reports(&mut self, node: &NodeName, now: i64) {
        let max = self.bus.config.node_timeout * FAIL_REPORT_VALIDITY_MULT;
        if let Some(node) = self.node_mut(node) {
            node.bus.fail_reports.retain(|&(_, t)| now - t <= max);
        }
    }

    /// `clusterNodeFailureReportsCount`.
    pub fn failure_reports(&mut self, node: &NodeName, now: i64) -> usize {
        self.cleanup_failure_reports(node, now);
        self.node(node).map_or(0, |n| n.bus.fail_reports.len())
    }

    /// `markNodeAsFailingIfNeeded`: PFAIL becomes FAIL when a majority of
    /// the primaries (myself included, if a primary) report it.
    fn mark_failing_if_needed(&mut self, name: &NodeName, now: i64, out: &mut Out) {
        let quorum = self.bus.size / 2 + 1;
        let flags = self.flags_of(name);
        if !has_flag(flags, NODE_PFAIL) || has_flag(flags, NODE_FAIL) {
            return;
        }
        let mut failures = self.failure_reports(name, now);
        if self.myself_is_primary() {
            failures += 1;
        }
        if failures < quorum {
            return;
        }
        tracing::info!(
            "Marking node {} as failing (quorum reached).",
            self.described(name)
        );
        if let Some(node) = self.node_mut(name) {
            node.flags &= !NODE_PFAIL;
            node.flags |= NODE_FAIL;
            node.fail_time = now;
        }
        // clusterSendFail
        let msg = self.msg(Body::Fail { about: *name });
        self.broadcast(&msg, out);
        out.update_state = true;
        out.save(false);
    }

    /// `clearNodeFailureIfNeeded`: a reachable replica or slotless primary
    /// is cleared at once; a primary with slots only when nobody took them
    /// over for a while.
    fn clear_failure_if_needed(&mut self, name: &NodeName, now: i64, out: &mut Out) {
        let undo = self.bus.config.node_timeout * FAIL_UNDO_TIME_MULT;
        let numslots = self.numslots(name);
        let Some(node) = self.node_mut(name) else {
            return;
        };
        if node.is_replica() || numslots == 0 {
            node.flags &= !NODE_FAIL;
            out.update_state = true;
            out.save(false);
        }
        if node.is_primary() && numslots > 0 && now - node.fail_time > undo {
            node.flags &= !NODE_FAIL;
            out.update_state = true;
            out.save(false);
        }
    }

    // ---------------------------------------------------------------
    // Messages out
    // ---------------------------------------------------------------

    /// `clusterBuildMessageHdr`.
    fn header(&self) -> Header {
        let me = self.myself_name();
        let myself = self.node(&me);
        let flags = myself.map_or(0, |n| n.flags);
        let primary = myself
            .filter(|n| n.is_replica())
            .and_then(|n| n.primary)
            .and_then(|p| self.node(&p))
            .or(myself);
        let cfg = &self.bus.config;
        Header {
            port: cfg.port,
            current_epoch: self.current_epoch,
            config_epoch: primary.map_or(0, |p| p.config_epoch),
            offset: self.bus.my_repl_offset.max(0) as u64,
            sender: me,
            myslots: primary.map_or_else(Slots::empty, |p| p.slots.clone()),
            slaveof: myself.and_then(|n| n.primary).unwrap_or(NodeName::NULL),
            myip: cfg.announce_ip.as_deref().map_or(Ip::NONE, Ip::new),
            pport: cfg.pport,
            cport: cfg.cport,
            flags,
            state: if self.bus.state_ok {
                STATE_OK
            } else {
                STATE_FAIL
            },
            mflags: [
                if flags & NODE_MASTER != 0 && self.bus.mf_end != 0 {
                    MFLAG0_PAUSED
                } else {
                    0
                },
                0,
                0,
            ],
        }
    }

    fn msg(&self, body: Body) -> Msg {
        Msg {
            header: self.header(),
            body,
        }
    }

    /// `clusterSetGossipEntry`.
    fn gossip_entry(&self, name: &NodeName) -> Option<Gossip> {
        let n = self.node(name)?;
        Some(Gossip {
            nodename: n.name,
            ping_sent: (n.ping_sent / 1000) as u32,
            pong_received: (n.pong_received / 1000) as u32,
            ip: Ip::new(&n.ip),
            port: u16::try_from(n.port).unwrap_or(0),
            cport: u16::try_from(n.cport).unwrap_or(0),
            flags: n.flags,
            pport: u16::try_from(n.pport).unwrap_or(0),
        })
    }

    /// `clusterSendPing`: a PING, PONG or MEET with gossip about
    /// max(3, nodes/10) random healthy nodes plus every PFAIL node.
    fn send_ping(&mut self, link: LinkId, kind: Kind, now: i64, out: &mut Out) {
        let Some(info) = self.bus.links.get(&link) else {
            return;
        };
        let (inbound, node) = (info.inbound, info.node);
        let total = self.nodes().count();
        let mut freshnodes = total.saturating_sub(2);
        let wanted = (total / 10).max(3).min(freshnodes);
        if !inbound
            && kind == Kind::Ping
            && let Some(n) = node.and_then(|n| self.node_mut(&n))
        {
            n.ping_sent = now;
        }
        let names: Vec<NodeName> = self.nodes().map(|n| n.name).collect();
        let mut chosen: Vec<NodeName> = Vec::new();
        let mut picked: HashSet<NodeName> = HashSet::new();
        let mut maxiterations = wanted * 3;
        while freshnodes > 0 && chosen.len() < wanted && maxiterations > 0 {
            maxiterations -= 1;
            let i = self.bus.rng.random_range(0..names.len());
            let this = &names[i];
            let Some(n) = self.node(this) else { continue };
            if n.is_myself() || has_flag(n.flags, NODE_PFAIL) {
                continue;
            }
            if has_flag(n.flags, NODE_HANDSHAKE | NODE_NOADDR)
                || (n.bus.link.is_none() && n.slots.is_empty())
            {
                freshnodes -= 1;
                continue;
            }
            if !picked.insert(*this) {
                continue;
            }
            chosen.push(*this);
            freshnodes -= 1;
        }
        let mut pfail_wanted = self.bus.pfail_nodes;
        for n in self.nodes() {
            if pfail_wanted == 0 {
                break;
            }
            if has_flag(n.flags, NODE_HANDSHAKE | NODE_NOADDR) || !has_flag(n.flags, NODE_PFAIL) {
                continue;
            }
            chosen.push(n.name);
            pfail_wanted -= 1;
        }
        let gossip = chosen.iter().filter_map(|n| self.gossip_entry(n)).collect();
        let mut extensions = Vec::new();
        // `writePingExt`'s order: hostname, human node name, forgotten
        // nodes, shard id, internal secret.
        if !self.bus.config.hostname.is_empty() {
            extensions.push(PingExt::Hostname(Bytes::from(
                self.bus.config.hostname.clone(),
            )));
        }
        if !self.bus.config.human_nodename.is_empty() {
            extensions.push(PingExt::HumanNodename(Bytes::from(
                self.bus.config.human_nodename.clone(),
            )));
        }
        // Each node myself forgot, for the TTL left in whole seconds
        // (Redis keeps the expiry in seconds of `server.unixtime`).
        let unixtime = now.div_euclid(1000);
        for (name, until) in &self.bus.blacklist {
            let expire = until.div_euclid(1000);
            if expire < unixtime {
                continue;
            }
            extensions.push(PingExt::ForgottenNode {
                name: *name,
                ttl: u64::try_from(expire - unixtime).unwrap_or(0),
            });
        }
        // Every message carries myself's shard id, as Redis 7.2 and later
        // (`writePingExt`); 7.0 skips the type.
        if let Some(me) = self.myself.and_then(|m| self.node(&m)) {
            extensions.push(PingExt::ShardId(me.shard_id));
        }
        extensions.push(PingExt::Other {
            ext_type: EXT_INTERNALSECRET,
            data: Bytes::copy_from_slice(&self.bus.internal_secret),
        });
        let ping = Ping { gossip, extensions };
        let body = match kind {
            Kind::Ping => Body::Ping(ping),
            Kind::Pong => Body::Pong(ping),
            Kind::Meet => Body::Meet(ping),
        };
        let msg = self.msg(body);
        out.actions.push(Action::Send { link, msg });
    }

    /// `clusterBroadcastMessage`: to every node we have a link to.
    fn broadcast(&self, msg: &Msg, out: &mut Out) {
        for n in self.nodes() {
            if has_flag(n.flags, NODE_MYSELF | NODE_HANDSHAKE) {
                continue;
            }
            if let Some(link) = n.bus.link {
                out.actions.push(Action::Send {
                    link,
                    msg: msg.clone(),
                });
            }
        }
    }

    /// `clusterPropagatePublish` / `clusterPropagatePublishShard`: a
    /// PUBLISH for every node we have a link to, an SPUBLISH for the other
    /// nodes of myself's shard (its primary and that primary's replicas).
    pub fn publish(&self, channel: Bytes, message: Bytes, shard: bool) -> Vec<Action> {
        let mut out = Out::default();
        if !shard {
            let msg = self.msg(Body::Publish { channel, message });
            self.broadcast(&msg, &mut out);
            return out.actions;
        }
        let me = self.myself_name();
        let primary = self.myself_primary().unwrap_or(me);
        let msg = self.msg(Body::PublishShard { channel, message });
        for n in self.nodes() {
            if n.name == me || (n.name != primary && n.primary != Some(primary)) {
                continue;
            }
            if let Some(link) = n.bus.link {
                out.actions.push(Action::Send {
                    link,
                    msg: msg.clone(),
                });
            }
        }
        out.actions
    }

    /// `clusterSendModule`: a module message on `link`, or to every node
    /// we have a link to.
    pub fn module_message(
        &self,
        link: Option<LinkId>,
        module_id: [u8; 8],
        module_type: u8,
        payload: Bytes,
    ) -> Vec<Action> {
        let mut out = Out::default();
        let msg = self.msg(Body::Module {
            module_id,
            module_type,
            payload,
        });
        match link {
            Some(link) if self.bus.links.contains_key(&link) => {
                out.actions.push(Action::Send { link, msg });
            }
            Some(_) => {}
            None => self.broadcast(&msg, &mut out),
        }
        out.actions
    }

    /// `CLUSTER LINKS`' facts: for every other node, its outbound link
    /// (`to`) and its inbound one (`from`): the link, the node, whether
    /// inbound, when it was made.
    pub fn node_links(&self) -> Vec<(LinkId, NodeName, bool, i64)> {
        let mut links = Vec::new();
        for n in self.nodes() {
            if n.is_myself() {
                continue;
            }
            for (link, inbound) in [(n.bus.link, false), (n.bus.inbound_link, true)] {
                if let Some(info) = link.and_then(|l| self.bus.links.get(&l).map(|i| (l, i))) {
                    links.push((info.0, n.name, inbound, info.1.ctime));
                }
            }
        }
        links
    }

    /// `clusterBroadcastPong`.
    fn broadcast_pong(&mut self, targets: Targets, now: i64, out: &mut Out) {
        let my_primary = self.myself_primary();
        let links: Vec<LinkId> = self
            .nodes()
            .filter(|n| !has_flag(n.flags, NODE_MYSELF | NODE_HANDSHAKE))
            .filter(|n| {
                targets == Targets::All
                    || (n.is_replica() && n.primary.is_some() && n.primary == my_primary)
            })
            .filter_map(|n| n.bus.link)
            .collect();
        for link in links {
            self.send_ping(link, Kind::Pong, now, out);
        }
    }

    /// `clusterSendUpdate`: tell the node on `link` about `about`'s slots
    /// (those it still claims).
    fn send_update(&self, link: Option<LinkId>, about: &NodeName, out: &mut Out) {
        let (Some(link), Some(n)) = (link, self.node(about)) else {
            return;
        };
        let mut slots = Slots::empty();
        for j in 0..SLOTS as u16 {
            if n.slots.contains(j) && !self.bus.not_claiming[usize::from(j)] {
                slots.insert(j);
            }
        }
        let msg = self.msg(Body::Update {
            config_epoch: n.config_epoch,
            node: n.name,
            slots,
        });
        out.actions.push(Action::Send { link, msg });
    }

    // ---------------------------------------------------------------
    // Messages in
    // ---------------------------------------------------------------

    /// `getNodeFromLinkAndMsg`.
    fn sender_of(&mut self, link: LinkId, hdr: &Header, out: &mut Out) -> Option<NodeName> {
        let info = self.bus.links.get(&link)?;
        if let Some(n) = info.node
            && self
                .node(&n)
                .is_some_and(|n| !has_flag(n.flags, NODE_HANDSHAKE))
        {
            return Some(n);
        }
        let link_node = info.node;
        let sender = self.node(&hdr.sender).map(|n| n.name)?;
        if link_node.is_none() {
            // setClusterNodeToInboundClusterLink
            let old = self.node(&sender).and_then(|n| n.bus.inbound_link);
            if let Some(old) = old
                && old != link
            {
                self.free_link(old, out);
            }
            if let Some(n) = self.node_mut(&sender) {
                n.bus.inbound_link = Some(link);
            }
            if let Some(l) = self.bus.links.get_mut(&link) {
                l.node = Some(sender);
            }
        }
        Some(sender)
    }

    /// `clusterProcessPacket`: one message that arrived on `link`.
    pub fn on_message(&mut self, link: LinkId, msg: &Msg, now: i64) -> Vec<Action> {
        let mut out = Out::default();
        if self.bus.links.contains_key(&link) {
            self.process(link, msg, now, &mut out);
        }
        self.finish(out, now)
    }

    fn process(&mut self, link: LinkId, msg: &Msg, now: i64, out: &mut Out) {
        let hdr = &msg.header;
        let sender = self.sender_of(link, hdr, out);
        let mut sender_current_epoch = 0;
        let mut sender_config_epoch = 0;
        // The window rules' own traffic (zwindow's, which a Redis node
        // never sends) is no proof of liveness: failure detection sees
        // what it would see between Redis nodes.
        let rules_traffic = matches!(
            &msg.body,
            Body::Module { module_id, .. } if *module_id == super::window_sync::MODULE_ID
        );
        if let Some(s) = sender.and_then(|s| self.node_mut(&s)) {
            if !rules_traffic {
                s.bus.data_received = now;
            }
            if !has_flag(s.flags, NODE_HANDSHAKE) {
                sender_current_epoch = hdr.current_epoch;
                sender_config_epoch = hdr.config_epoch;
                if sender_config_epoch > s.config_epoch {
                    s.config_epoch = sender_config_epoch;
                    out.save(true);
                }
                s.repl_offset = i64::try_from(hdr.offset).unwrap_or(i64::MAX);
                let offset = s.repl_offset;
                if sender_current_epoch > self.current_epoch {
                    self.current_epoch = sender_current_epoch;
                }
                // A manual failover: our primary paused at this offset.
                if self.bus.mf_end != 0
                    && sender.is_some()
                    && self.myself_primary() == sender
                    && hdr.mflags[0] & MFLAG0_PAUSED != 0
                    && self.bus.mf_primary_offset == -1
                {
                    self.bus.mf_primary_offset = offset;
                    self.handle_manual_failover(out);
                }
            }
        }
        let Some(info) = self.bus.links.get(&link) else {
            return;
        };
        let inbound = info.inbound;
        match &msg.body {
            Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => {
                let kind = match msg.body {
                    Body::Ping(_) => Kind::Ping,
                    Body::Pong(_) => Kind::Pong,
                    _ => Kind::Meet,
                };
                self.process_ping(
                    link,
                    inbound,
                    kind,
                    hdr,
                    p,
                    sender,
                    sender_config_epoch,
                    now,
                    out,
                );
            }
            Body::Fail { about } => {
                if sender.is_none() {
                    return;
                }
                let flags = self.flags_of(about);
                if self.node(about).is_some() && !has_flag(flags, NODE_FAIL | NODE_MYSELF) {
                    if let Some(n) = self.node_mut(about) {
                        n.flags |= NODE_FAIL;
                        n.flags &= !NODE_PFAIL;
                        n.fail_time = now;
                    }
                    out.update_state = true;
                    out.save(false);
                }
            }
            Body::Publish { channel, message } | Body::PublishShard { channel, message } => {
                if sender.is_some() {
                    out.actions.push(Action::Publish {
                        channel: channel.clone(),
                        message: message.clone(),
                        shard: matches!(msg.body, Body::PublishShard { .. }),
                    });
                }
            }
            Body::FailoverAuthRequest => {
                if let Some(s) = sender {
                    self.send_failover_auth_if_needed(&s, hdr, now, out);
                }
            }
            Body::FailoverAuthAck => {
                if let Some(s) = sender
                    && self.node(&s).is_some_and(|n| n.is_primary())
                    && self.numslots(&s) > 0
                    && sender_current_epoch >= self.bus.failover_auth_epoch
                {
                    self.bus.failover_auth_count += 1;
                    out.handle_failover = true;
                }
            }
            Body::Update {
                config_epoch,
                node,
                slots,
            } => {
                if sender.is_none() {
                    return;
                }
                let Some(n) = self.node(node) else { return };
                if n.config_epoch >= *config_epoch {
                    return;
                }
                if n.is_replica() {
                    self.set_node_as_primary(node, out);
                }
                if let Some(n) = self.node_mut(node) {
                    n.config_epoch = *config_epoch;
                }
                out.save(true);
                self.update_slots_config_with(node, *config_epoch, slots, out);
            }
            // A replica asks its primary to start a manual failover.
            Body::MfStart => {
                let Some(s) = sender else { return };
                let me = self.myself_name();
                if self.node(&s).and_then(|n| n.primary) != Some(me) {
                    return;
                }
                self.reset_manual_failover(out);
                self.bus.mf_end = now + MF_TIMEOUT;
                self.bus.mf_replica = Some(s);
                out.actions.push(Action::PauseWrites {
                    until: now + MF_TIMEOUT * MF_PAUSE_MULT,
                });
                self.send_ping(link, Kind::Ping, now, out);
            }
            Body::Module {
                module_id,
                module_type,
                payload,
            } => {
                // "Protect the module from unknown nodes."
                if sender.is_some() {
                    out.actions.push(Action::Module {
                        link,
                        module_id: *module_id,
                        module_type: *module_type,
                        payload: payload.clone(),
                    });
                }
            }
            Body::Unknown { .. } => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn process_ping(
        &mut self,
        link: LinkId,
        inbound: bool,
        kind: Kind,
        hdr: &Header,
        ping: &Ping,
        sender: Option<NodeName>,
        sender_config_epoch: u64,
        now: i64,
        out: &mut Out,
    ) {
        let me = self.myself_name();
        if kind != Kind::Pong {
            // Learn our own IP from the connection, unless announced.
            let my_ip_empty = self.node(&me).is_none_or(|n| n.ip.is_empty());
            if (kind == Kind::Meet || my_ip_empty) && self.bus.config.announce_ip.is_none() {
                let local = self
                    .bus
                    .links
                    .get(&link)
                    .map(|l| l.local_ip.clone())
                    .unwrap_or_default();
                if let Some(m) = self.node_mut(&me)
                    && !local.is_empty()
                    && m.ip != local
                {
                    m.ip = local;
                    out.save(false);
                }
            }
            if sender.is_none() && kind == Kind::Meet {
                let ip = self.announced_or_peer_ip(link, &hdr.myip);
                self.add_handshake_node(
                    ip,
                    i32::from(hdr.port),
                    i32::from(hdr.pport),
                    i32::from(hdr.cport),
                    NODE_HANDSHAKE,
                    now,
                );
                out.save(false);
                self.process_gossip(link, ping, now, out);
            }
            self.send_ping(link, Kind::Pong, now, out);
        }

        if !inbound {
            let Some(link_node) = self.bus.links.get(&link).and_then(|l| l.node) else {
                return;
            };
            let in_handshake = has_flag(self.flags_of(&link_node), NODE_HANDSHAKE);
            if in_handshake {
                if let Some(s) = sender {
                    // We know it already under its real name: update the
                    // address and drop the handshake node.
                    if self.update_address_if_needed(&s, link, hdr, out) {
                        out.save(false);
                        out.update_state = true;
                    }
                    self.del_node(&link_node, out);
                    return;
                }
                if hdr.sender.is_null() {
                    return;
                }
                self.rename(&link_node, hdr.sender);
                if let Some(n) = self.node_mut(&hdr.sender) {
                    n.flags &= !NODE_HANDSHAKE;
                    n.flags |= hdr.flags & (NODE_MASTER | NODE_SLAVE);
                }
                out.save(false);
            } else if link_node != hdr.sender {
                // The node at this address is another one now.
                if let Some(n) = self.node_mut(&link_node) {
                    n.flags |= NODE_NOADDR;
                    n.ip.clear();
                    n.port = 0;
                    n.pport = 0;
                    n.cport = 0;
                }
                self.free_link(link, out);
                out.save(false);
                return;
            }
        }

        if let Some(n) = sender.and_then(|s| self.node_mut(&s)) {
            n.flags = (n.flags & !NODE_NOFAILOVER) | (hdr.flags & NODE_NOFAILOVER);
        }

        if let Some(s) = sender
            && kind == Kind::Ping
            && !has_flag(self.flags_of(&s), NODE_HANDSHAKE)
            && self.update_address_if_needed(&s, link, hdr, out)
        {
            out.save(false);
            out.update_state = true;
        }

        if !inbound
            && kind == Kind::Pong
            && let Some(ln) = self.bus.links.get(&link).and_then(|l| l.node)
        {
            let flags = self.flags_of(&ln);
            if let Some(n) = self.node_mut(&ln) {
                n.pong_received = now;
                n.ping_sent = 0;
            }
            if has_flag(flags, NODE_PFAIL) {
                if let Some(n) = self.node_mut(&ln) {
                    n.flags &= !NODE_PFAIL;
                }
                out.save(false);
                out.update_state = true;
            } else if has_flag(flags, NODE_FAIL) {
                self.clear_failure_if_needed(&ln, now, out);
            }
        }

        let Some(sender) = sender else {
            return;
        };

        // The sender's role.
        if hdr.slaveof.is_null() {
            self.set_node_as_primary(&sender, out);
        } else {
            let primary = self.node(&hdr.slaveof).map(|n| n.name);
            if self.node(&sender).is_some_and(|n| n.is_primary()) {
                self.primary_turned_replica(&sender, primary, sender_config_epoch);
                if let Some(n) = self.node_mut(&sender) {
                    n.flags &= !(NODE_MASTER | NODE_MIGRATE_TO);
                    n.flags |= NODE_SLAVE;
                }
                out.save(false);
                out.update_state = true;
            }
            let current = self.node(&sender).and_then(|n| n.primary);
            if let Some(p) = primary
                && current != Some(p)
                && p != sender
            {
                if let Some(old) = current.and_then(|c| self.node_mut(&c)) {
                    old.replicas.retain(|r| *r != sender);
                }
                self.attach_replica(&p, &sender);
                // A replica joins its primary's shard when first attached.
                if let Some(id) = self.node(&p).map(|n| n.shard_id) {
                    self.update_shard_id_saving(&sender, id, out);
                }
                out.save(false);
            }
        }

        // The sender's slots.
        let sender_primary = match self.node(&sender) {
            Some(n) if n.is_primary() => Some(sender),
            Some(n) => n.primary,
            None => None,
        };
        let dirty = sender_primary
            .and_then(|p| self.node(&p))
            .is_some_and(|p| p.slots != hdr.myslots);
        let sender_is_primary = self.node(&sender).is_some_and(|n| n.is_primary());
        if sender_is_primary && dirty {
            self.update_slots_config_with(&sender, sender_config_epoch, &hdr.myslots, out);
        }
        if dirty {
            // Does it claim slots someone newer serves? Tell it.
            for j in 0..SLOTS as u16 {
                if !hdr.myslots.contains(j) {
                    continue;
                }
                let Some(owner) = self.slot_owner(j).copied() else {
                    continue;
                };
                if owner == sender || self.bus.not_claiming[usize::from(j)] {
                    continue;
                }
                if self
                    .node(&owner)
                    .is_some_and(|o| o.config_epoch > sender_config_epoch)
                {
                    let link = self.node(&sender).and_then(|n| n.bus.link);
                    self.send_update(link, &owner, out);
                    break;
                }
            }
        }

        if sender_is_primary
            && self.myself_is_primary()
            && sender_config_epoch == self.node(&me).map_or(0, |n| n.config_epoch)
        {
            self.handle_config_epoch_collision(&sender, out);
        }

        self.process_gossip(link, ping, now, out);
        // clusterProcessPingExt: no hostname extension means none.
        let hostname = ping.extensions.iter().find_map(|e| match e {
            PingExt::Hostname(h) => Some(h.to_vec()),
            _ => None,
        });
        let human_nodename = ping.extensions.iter().find_map(|e| match e {
            PingExt::HumanNodename(h) => Some(h.to_vec()),
            _ => None,
        });
        if let Some(n) = self.node_mut(&sender) {
            let hostname = hostname.unwrap_or_default();
            if n.hostname != hostname {
                n.hostname = hostname;
                out.save(false);
            }
            let human_nodename = human_nodename.unwrap_or_default();
            if n.human_nodename != human_nodename {
                n.human_nodename = human_nodename;
                out.save(false);
            }
        }
        // Nodes the sender forgot: forgotten here too, for as long, but
        // never myself nor my own primary.
        let me = self.myself_name();
        let my_primary = self.myself_primary();
        for e in &ping.extensions {
            if let PingExt::ForgottenNode { name, ttl } = e
                && *name != me
                && Some(*name) != my_primary
                && self.node(name).is_some()
            {
                let ttl_ms = i64::try_from(ttl.saturating_mul(1000)).unwrap_or(i64::MAX);
                let until = (now.div_euclid(1000) * 1000).saturating_add(ttl_ms);
                self.bus.blacklist.insert(*name, until);
                self.del_node(name, out);
                out.save(false);
                out.update_state = true;
            }
        }
        // No shard id extension (a 7.0 sender): its primary's id, so a
        // replica stays in its primary's shard and a primary keeps the
        // (random) one this node gave it.
        let shard_id = ping
            .extensions
            .iter()
            .find_map(|e| match e {
                PingExt::ShardId(id) => Some(*id),
                _ => None,
            })
            .or_else(|| self.top_primary(&sender).map(|p| p.shard_id));
        if let Some(id) = shard_id {
            self.update_shard_id_saving(&sender, id, out);
        }
        // The internal secret: the smaller one wins.
        for e in &ping.extensions {
            if let PingExt::Other {
                ext_type: EXT_INTERNALSECRET,
                data,
            } = e
                && let Some(theirs) = data.get(..NAME_LEN)
                && self.bus.internal_secret.as_slice() > theirs
            {
                self.bus.internal_secret.copy_from_slice(theirs);
            }
        }
    }

    /// [`ClusterState::update_shard_id`], with the save Redis asks for:
    /// fsynced when a primary's change reached its replicas.
    fn update_shard_id_saving(&mut self, name: &NodeName, id: NodeName, out: &mut Out) {
        let changed = self.update_shard_id(name, id);
        if !changed.is_empty() {
            out.save(changed.iter().any(|n| n != name));
        }
    }

    /// `nodeIp2String`: the announced IP, else the link's peer address.
    fn announced_or_peer_ip(&self, link: LinkId, myip: &Ip) -> Vec<u8> {
        if !myip.text().is_empty() {
            return myip.text().to_vec();
        }
        self.bus
            .links
            .get(&link)
            .map(|l| l.peer_ip.clone())
            .unwrap_or_default()
    }

    /// `nodeUpdateAddressIfNeeded`.
    fn update_address_if_needed(
        &mut self,
        name: &NodeName,
        link: LinkId,
        hdr: &Header,
        out: &mut Out,
    ) -> bool {
        let Some(node) = self.node(name) else {
            return false;
        };
        if node.bus.link == Some(link) {
            return false;
        }
        let ip = self.announced_or_peer_ip(link, &hdr.myip);
        if ip.is_empty() {
            return false;
        }
        let (port, pport, cport) = (
            i32::from(hdr.port),
            i32::from(hdr.pport),
            i32::from(hdr.cport),
        );
        if node.port == port && node.cport == cport && node.pport == pport && node.ip == ip {
            return false;
        }
        let old_link = node.bus.link;
        if let Some(n) = self.node_mut(name) {
            n.ip = ip.clone();
            n.port = port;
            n.pport = pport;
            n.cport = cport;
            n.flags &= !NODE_NOADDR;
        }
        if let Some(l) = old_link {
            self.free_link(l, out);
        }
        if self.myself_primary() == Some(*name) {
            out.actions
                .push(Action::ReplicateFrom { ip, port: hdr.port });
        }
        true
    }

    /// `clusterDelNodeSlots`.
    /// A primary now says it replicates `primary` (Redis 7.2 and later).
    /// In the same shard, that is a failover the observer missed: the
    /// sender's slots go to `primary`, made a primary with the sender's
    /// epoch, unless this node knows the sender by a newer epoch (a stale
    /// message: nothing moves). From another shard, the sender moved and
    /// loses its slots.
    fn primary_turned_replica(
        &mut self,
        sender: &NodeName,
        primary: Option<NodeName>,
        sender_config_epoch: u64,
    ) {
        let (Some(s), p) = (self.node(sender), primary.and_then(|p| self.node(&p))) else {
            return;
        };
        let Some(p) = p.filter(|p| p.shard_id == s.shard_id) else {
            self.del_node_slots(sender);
            return;
        };
        if s.config_epoch > sender_config_epoch {
            tracing::info!(
                "Ignore stale message from {} in shard {}; gossip config epoch: {}, current config epoch: {}",
                String::from_utf8_lossy(sender.as_bytes()),
                String::from_utf8_lossy(s.shard_id.as_bytes()),
                sender_config_epoch,
                s.config_epoch
            );
            return;
        }
        let new = p.name;
        for slot in 0..SLOTS as u16 {
            if self.slot_owner(slot) == Some(sender) {
                self.del_slot(slot);
                self.add_slot(&new, slot);
            }
        }
        let mut ignored = Out::default();
        self.set_node_as_primary(&new, &mut ignored);
        if let Some(n) = self.node_mut(&new) {
            n.config_epoch = sender_config_epoch;
        }
    }

    fn del_node_slots(&mut self, name: &NodeName) {
        for j in 0..SLOTS as u16 {
            if self.slot_owner(j) == Some(name) {
                self.del_slot(j);
            }
        }
    }

    /// `clusterProcessGossipSection`.
    fn process_gossip(&mut self, link: LinkId, ping: &Ping, now: i64, out: &mut Out) {
        let link_node = self.bus.links.get(&link).and_then(|l| l.node);
        let sender = link_node.filter(|n| self.node(n).is_some());
        let sender_is_primary = sender
            .and_then(|s| self.node(&s))
            .is_some_and(|n| n.is_primary());
        for g in &ping.gossip {
            let flags = g.flags;
            if let Some(node) = self.node(&g.nodename) {
                let name = node.name;
                if sender_is_primary && !node.is_myself() {
                    let s = sender.unwrap_or(NodeName::NULL);
                    if has_flag(flags, NODE_FAIL | NODE_PFAIL) {
                        if self.add_failure_report(&name, &s, now) {
                            tracing::info!(
                                target: "verbose",
                                "Node {} reported node {} as not reachable.",
                                self.described(&s),
                                self.described(&name),
                            );
                        }
                        self.mark_failing_if_needed(&name, now, out);
                    } else if self.del_failure_report(&name, &s, now) {
                        tracing::info!(
                            target: "verbose",
                            "Node {} reported node {} is back online.",
                            self.described(&s),
                            self.described(&name),
                        );
                    }
                }
                // Take a fresher PONG time when nobody suspects the node.
                let reports = self.failure_reports(&name, now);
                if let Some(node) = self.node_mut(&name)
                    && !has_flag(flags, NODE_FAIL | NODE_PFAIL)
                    && node.ping_sent == 0
                    && reports == 0
                {
                    let pongtime = i64::from(g.pong_received) * 1000;
                    if pongtime <= now + 500 && pongtime > node.pong_received {
                        node.pong_received = pongtime;
                    }
                }
                // A failed node that others see fine at a new address.
                let Some(node) = self.node(&name) else {
                    continue;
                };
                let port = i32::from(g.port);
                let cport = i32::from(g.cport);
                if has_flag(node.flags, NODE_FAIL | NODE_PFAIL)
                    && !has_flag(flags, NODE_NOADDR | NODE_FAIL | NODE_PFAIL)
                    && (!node.ip.eq_ignore_ascii_case(g.ip.text())
                        || node.port != port
                        || node.cport != cport)
                {
                    if let Some(l) = node.bus.link {
                        self.free_link(l, out);
                    }
                    if let Some(node) = self.node_mut(&name) {
                        node.ip = g.ip.text().to_vec();
                        node.port = port;
                        node.pport = i32::from(g.pport);
                        node.cport = cport;
                        node.flags &= !NODE_NOADDR;
                    }
                }
            } else if sender.is_some()
                && !has_flag(flags, NODE_NOADDR)
                && !g.nodename.is_null()
                && !self.blacklisted(&g.nodename, now)
            {
                // A node we did not know: add it; the cron connects to it.
                let node = self.node_or_create(g.nodename);
                node.flags = flags & !(NODE_MYSELF | NODE_MEET);
                node.ip = g.ip.text().to_vec();
                node.port = i32::from(g.port);
                node.pport = i32::from(g.pport);
                node.cport = i32::from(g.cport);
                node.bus.ctime = now;
            }
        }
    }

    /// `clusterHandleConfigEpochCollision`: of two primaries with the same
    /// config epoch, the one with the smaller name takes a new epoch.
    fn handle_config_epoch_collision(&mut self, sender: &NodeName, out: &mut Out) {
        let me = self.myself_name();
        let (Some(s), Some(m)) = (self.node(sender), self.node(&me)) else {
            return;
        };
        if s.config_epoch != m.config_epoch || !s.is_primary() || !m.is_primary() {
            return;
        }
        if sender.as_bytes() <= me.as_bytes() {
            return;
        }
        // A peer's epoch may be anything: wrap as Redis's u64 does.
        self.current_epoch = self.current_epoch.wrapping_add(1);
        let epoch = self.current_epoch;
        if let Some(m) = self.node_mut(&me) {
            m.config_epoch = epoch;
        }
        out.save(true);
    }

    /// `clusterUpdateSlotsConfigWith`: `sender` claims `slots` at
    /// `epoch`; take every claim newer than the current owner's, and
    /// follow our primary's slots if they all moved.
    fn update_slots_config_with(
        &mut self,
        sender: &NodeName,
        epoch: u64,
        slots: &Slots,
        out: &mut Out,
    ) {
        let me = self.myself_name();
        if *sender == me {
            return;
        }
        let curprimary = if self.myself_is_primary() {
            Some(me)
        } else {
            self.myself_primary()
        };
        let mut new_primary = None;
        let mut sender_slots = 0;
        let mut migrated_our_slots = 0;
        let mut dirty_slots = Vec::new();
        for j in 0..SLOTS as u16 {
            let owner = self.slot_owner(j).copied();
            if !slots.contains(j) {
                if owner == Some(*sender) {
                    self.bus.not_claiming[usize::from(j)] = true;
                }
                continue;
            }
            sender_slots += 1;
            if owner == Some(*sender) {
                self.bus.not_claiming[usize::from(j)] = false;
                continue;
            }
            if self.importing_from(j).is_some() {
                continue;
            }
            let older = self.bus.not_claiming[usize::from(j)]
                || match owner.and_then(|o| self.node(&o)) {
                    None => true,
                    Some(o) => o.config_epoch < epoch,
                };
            if older {
                if owner == Some(me) {
                    dirty_slots.push(j);
                }
                if owner.is_some() && owner == curprimary {
                    new_primary = Some(*sender);
                    migrated_our_slots += 1;
                }
                self.del_slot(j);
                self.add_slot(sender, j);
                self.bus.not_claiming[usize::from(j)] = false;
                out.save(true);
                out.update_state = true;
            }
        }
        let cur_numslots = curprimary.map_or(0, |c| self.numslots(&c));
        let grand = self
            .myself_primary()
            .and_then(|p| self.node(&p))
            .and_then(|p| p.primary)
            .filter(|g| *g != me);
        if let Some(np) = new_primary
            && cur_numslots == 0
            && (self.bus.config.allow_replica_migration || sender_slots == migrated_our_slots)
        {
            self.set_primary(&np, out);
            out.save(true);
            out.update_state = true;
        } else if let Some(g) = grand {
            self.set_primary(&g, out);
            out.save(true);
            out.update_state = true;
        } else {
            for j in dirty_slots {
                out.actions.push(Action::DeleteKeysInSlot {
                    slot: j,
                    propagate: true,
                });
            }
        }
    }

    /// `clusterSendFailoverAuthIfNeeded`: vote for a replica of a failed
    /// primary, once per epoch and once per primary in twice the node
    /// timeout, unless its claimed slots have a newer owner.
    fn send_failover_auth_if_needed(
        &mut self,
        requester: &NodeName,
        hdr: &Header,
        now: i64,
        out: &mut Out,
    ) {
        let me = self.myself_name();
        if !self.myself_is_primary() || self.numslots(&me) == 0 {
            return;
        }
        if hdr.current_epoch < self.current_epoch {
            return;
        }
        if self.last_vote_epoch == self.current_epoch {
            return;
        }
        let Some(node) = self.node(requester) else {
            return;
        };
        let force_ack = hdr.mflags[0] & MFLAG0_FORCEACK != 0;
        let Some(primary) = node.primary.filter(|_| node.is_replica()) else {
            return;
        };
        let Some(p) = self.node(&primary) else {
            return;
        };
        if !p.is_failed() && !force_ack {
            return;
        }
        if now - p.bus.voted_time < self.bus.config.node_timeout * 2 {
            return;
        }
        for j in 0..SLOTS as u16 {
            if !hdr.myslots.contains(j) {
                continue;
            }
            if let Some(o) = self.slot_owner(j).and_then(|o| self.node(o))
                && !self.bus.not_claiming[usize::from(j)]
                && o.config_epoch > hdr.config_epoch
            {
                return;
            }
        }
        self.last_vote_epoch = self.current_epoch;
        if let Some(p) = self.node_mut(&primary) {
            p.bus.voted_time = now;
        }
        out.save(true);
        // clusterSendFailoverAuth: on our link to the requester.
        if let Some(link) = self.node(requester).and_then(|n| n.bus.link) {
            let msg = self.msg(Body::FailoverAuthAck);
            out.actions.push(Action::Send { link, msg });
        }
    }

    /// `clusterGetSlaveRank`: how many replicas of our primary have a
    /// better offset than ours.
    fn replica_rank(&self) -> usize {
        let me = self.myself_name();
        let Some(p) = self.myself_primary().and_then(|p| self.node(&p)) else {
            return 0;
        };
        p.replicas
            .iter()
            .filter(|r| **r != me)
            .filter_map(|r| self.node(r))
            .filter(|r| {
                !has_flag(r.flags, NODE_NOFAILOVER) && r.repl_offset > self.bus.my_repl_offset
            })
            .count()
    }

    /// `clusterHandleSlaveFailover`: a replica of a failed primary waits
    /// 500 ms + random(500) + rank × 1 s, asks the primaries for votes at
    /// a new epoch, and takes over on a majority.
    fn handle_replica_failover(&mut self, now: i64, out: &mut Out) {
        let me = self.myself_name();
        let auth_age = now - self.bus.failover_auth_time;
        let quorum = self.bus.size / 2 + 1;
        let node_timeout = self.bus.config.node_timeout;
        let auth_timeout = (node_timeout * 2).max(2000);
        let auth_retry_time = auth_timeout * 2;
        let manual = self.bus.mf_end != 0 && self.bus.mf_can_start;
        let Some(primary) = self.myself_primary() else {
            return;
        };
        if self.myself_is_primary()
            || (!self.node(&primary).is_some_and(|p| p.is_failed()) && !manual)
            || (self.bus.config.replica_no_failover && !manual)
            || self.numslots(&primary) == 0
        {
            return;
        }
        let mut data_age = self.bus.repl_data_age;
        if data_age > node_timeout {
            data_age -= node_timeout;
        }
        let cfg = &self.bus.config;
        if cfg.replica_validity_factor != 0
            && data_age
                > cfg.repl_ping_replica_period * 1000 + node_timeout * cfg.replica_validity_factor
            && !manual
        {
            return;
        }
        if auth_age > auth_retry_time {
            let delay = 500 + self.bus.rng.random_range(0..500);
            self.bus.failover_auth_count = 0;
            self.bus.failover_auth_sent = false;
            self.bus.failover_auth_rank = self.replica_rank();
            self.bus.failover_auth_time = now + delay + self.bus.failover_auth_rank as i64 * 1000;
            // A manual failover starts at once.
            if self.bus.mf_end != 0 {
                self.bus.failover_auth_time = now;
                self.bus.failover_auth_rank = 0;
                out.handle_failover = true;
            }
            self.broadcast_pong(Targets::LocalReplicas, now, out);
            return;
        }
        if !self.bus.failover_auth_sent && self.bus.mf_end == 0 {
            let newrank = self.replica_rank();
            if newrank > self.bus.failover_auth_rank {
                let added = (newrank - self.bus.failover_auth_rank) as i64 * 1000;
                self.bus.failover_auth_time += added;
                self.bus.failover_auth_rank = newrank;
            }
        }
        if now < self.bus.failover_auth_time || auth_age > auth_timeout {
            return;
        }
        if !self.bus.failover_auth_sent {
            // A peer's epoch may be anything: wrap as Redis's u64 does.
            self.current_epoch = self.current_epoch.wrapping_add(1);
            self.bus.failover_auth_epoch = self.current_epoch;
            // clusterRequestFailoverAuth
            let mut msg = self.msg(Body::FailoverAuthRequest);
            if self.bus.mf_end != 0 {
                msg.header.mflags[0] |= MFLAG0_FORCEACK;
            }
            self.broadcast(&msg, out);
            self.bus.failover_auth_sent = true;
            out.save(true);
            out.update_state = true;
            return;
        }
        if self.bus.failover_auth_count >= quorum {
            let epoch = self.bus.failover_auth_epoch;
            if let Some(m) = self.node_mut(&me)
                && m.config_epoch < epoch
            {
                m.config_epoch = epoch;
            }
            self.replace_primary(now, out);
        }
    }

    /// `clusterFailoverReplaceYourMaster`: myself takes its primary's
    /// slots and tells everyone.
    fn replace_primary(&mut self, now: i64, out: &mut Out) {
        let me = self.myself_name();
        let Some(old) = self.myself_primary() else {
            return;
        };
        self.set_node_as_primary(&me, out);
        out.actions.push(Action::BecomePrimary);
        for j in 0..SLOTS as u16 {
            if self.node(&old).is_some_and(|o| o.slots.contains(j)) {
                self.del_slot(j);
                self.add_slot(&me, j);
            }
        }
        self.update_state(now, out);
        out.save(true);
        self.broadcast_pong(Targets::All, now, out);
        self.reset_manual_failover(out);
    }

    /// `CLUSTER FAILOVER [FORCE|TAKEOVER]` on a replica.
    pub fn failover(&mut self, mode: FailoverMode, now: i64) -> Result<Vec<Action>, FailoverError> {
        if self.myself_is_primary() {
            return Err(FailoverError::NotReplica);
        }
        let Some(primary) = self.myself_primary().and_then(|p| self.node(&p)) else {
            return Err(FailoverError::PrimaryUnknown);
        };
        if mode == FailoverMode::Default && (primary.is_failed() || primary.bus.link.is_none()) {
            return Err(FailoverError::PrimaryDown);
        }
        let primary_link = primary.bus.link;
        let mut out = Out::default();
        self.reset_manual_failover(&mut out);
        self.bus.mf_end = now + MF_TIMEOUT;
        match mode {
            FailoverMode::Takeover => {
                let (_, actions) = self.bump_epoch_without_consensus(now);
                out.actions.extend(actions);
                self.replace_primary(now, &mut out);
            }
            FailoverMode::Force => self.bus.mf_can_start = true,
            FailoverMode::Default => {
                // clusterSendMFStart
                if let Some(link) = primary_link {
                    let msg = self.msg(Body::MfStart);
                    out.actions.push(Action::Send { link, msg });
                }
            }
        }
        Ok(self.finish(out, now))
    }

    /// `resetManualFailover`.
    fn reset_manual_failover(&mut self, out: &mut Out) {
        if self.bus.mf_replica.is_some() {
            out.actions.push(Action::UnpauseWrites);
        }
        self.bus.mf_end = 0;
        self.bus.mf_can_start = false;
        self.bus.mf_replica = None;
        self.bus.mf_primary_offset = -1;
    }

    /// `clusterHandleManualFailover`: once our offset reaches the paused
    /// primary's, the election may start.
    fn handle_manual_failover(&mut self, out: &mut Out) {
        if self.bus.mf_end == 0 || self.bus.mf_can_start || self.bus.mf_primary_offset == -1 {
            return;
        }
        if self.bus.mf_primary_offset == self.bus.my_repl_offset {
            self.bus.mf_can_start = true;
            out.handle_failover = true;
        }
    }

    // ---------------------------------------------------------------
    // Cron and state
    // ---------------------------------------------------------------

    /// `clusterCron`, every 100 ms: connect, ping, detect failures, run
    /// the election.
    pub fn cron(&mut self, now: i64) -> Vec<Action> {
        let mut out = Out::default();
        self.bus.iteration += 1;
        let node_timeout = self.bus.config.node_timeout;
        let ping_interval = match self.bus.config.ping_interval {
            0 => node_timeout / 2,
            ms => ms,
        };
        let handshake_timeout = node_timeout.max(1000);
        self.bus.pfail_nodes = 0;

        let names: Vec<NodeName> = self.nodes().map(|n| n.name).collect();
        for name in &names {
            let Some(node) = self.node(name) else {
                continue;
            };
            if has_flag(node.flags, NODE_MYSELF | NODE_NOADDR) {
                continue;
            }
            let (flags, ctime, has_link) = (node.flags, node.bus.ctime, node.bus.link.is_some());
            if has_flag(flags, NODE_PFAIL) {
                self.bus.pfail_nodes += 1;
            }
            if has_flag(flags, NODE_HANDSHAKE) && now - ctime > handshake_timeout {
                self.del_node(name, &mut out);
                continue;
            }
            if !has_link && let Some(node) = self.node(name) {
                let (ip, cport) = (node.ip.clone(), node.cport);
                let link = self.new_link_id();
                self.bus.links.insert(
                    link,
                    LinkInfo {
                        node: Some(*name),
                        inbound: false,
                        ctime: now,
                        peer_ip: ip.clone(),
                        local_ip: Vec::new(),
                        connected: false,
                    },
                );
                if let Some(n) = self.node_mut(name) {
                    n.bus.link = Some(link);
                    n.link = true;
                }
                out.actions.push(Action::Connect {
                    link,
                    node: *name,
                    ip,
                    cport: u16::try_from(cport).unwrap_or(0),
                });
            }
        }

        // Every second, ping the node with the oldest PONG of five.
        if self.bus.iteration.is_multiple_of(10) && !names.is_empty() {
            let mut min: Option<(i64, LinkId)> = None;
            for _ in 0..5 {
                let i = self.bus.rng.random_range(0..names.len());
                let Some(n) = self.node(&names[i]) else {
                    continue;
                };
                let Some(link) = n.bus.link else { continue };
                if n.ping_sent != 0 || has_flag(n.flags, NODE_MYSELF | NODE_HANDSHAKE) {
                    continue;
                }
                if min.is_none_or(|(p, _)| p > n.pong_received) {
                    min = Some((n.pong_received, link));
                }
            }
            if let Some((_, link)) = min {
                self.send_ping(link, Kind::Ping, now, &mut out);
            }
        }

        let mut update_state = false;
        let (mut orphaned_primaries, mut max_replicas, mut my_replicas) = (0, 0, 0);
        let my_primary = self.myself_primary();
        let myself_replica = !self.myself_is_primary();
        let names: Vec<NodeName> = self.nodes().map(|n| n.name).collect();
        for name in &names {
            let Some(node) = self.node(name) else {
                continue;
            };
            if has_flag(node.flags, NODE_MYSELF | NODE_NOADDR | NODE_HANDSHAKE) {
                continue;
            }
            if myself_replica && node.is_primary() && !node.is_failed() {
                let ok = self.ok_replicas(name);
                if ok == 0 && !node.slots.is_empty() && has_flag(node.flags, NODE_MIGRATE_TO) {
                    orphaned_primaries += 1;
                }
                max_replicas = max_replicas.max(ok);
                if my_primary == Some(*name) {
                    my_replicas = ok;
                }
            }
            let ping_delay = now - node.ping_sent;
            let data_delay = now - node.bus.data_received;
            let link_ctime = node
                .bus
                .link
                .and_then(|l| self.bus.links.get(&l))
                .map(|l| l.ctime);
            // A link that stays silent for half the timeout is replaced.
            if let (Some(link), Some(ctime)) = (node.bus.link, link_ctime)
                && now - ctime > node_timeout
                && node.ping_sent != 0
                && ping_delay > node_timeout / 2
                && data_delay > node_timeout / 2
            {
                self.free_link(link, &mut out);
            }
            let Some(node) = self.node(name) else {
                continue;
            };
            if let Some(link) = node.bus.link
                && node.ping_sent == 0
                && now - node.pong_received > ping_interval
            {
                self.send_ping(link, Kind::Ping, now, &mut out);
                continue;
            }
            if let Some(link) = node.bus.link
                && self.bus.mf_end != 0
                && self.myself_is_primary()
                && self.bus.mf_replica == Some(*name)
            {
                self.send_ping(link, Kind::Ping, now, &mut out);
                continue;
            }
            if node.ping_sent == 0 {
                continue;
            }
            let delay = ping_delay.min(data_delay);
            if delay > node_timeout && !has_flag(node.flags, NODE_PFAIL | NODE_FAIL) {
                if let Some(n) = self.node_mut(name) {
                    n.flags |= NODE_PFAIL;
                }
                update_state = true;
                // Redis 8.0: the one primary of a single-shard cluster is
                // a quorum of its own.
                if self.myself_is_primary() && self.bus.size == 1 {
                    self.mark_failing_if_needed(name, now, &mut out);
                }
            }
        }

        // manualFailoverCheckTimeout
        if self.bus.mf_end != 0 && self.bus.mf_end < now {
            self.reset_manual_failover(&mut out);
        }
        if !self.myself_is_primary() {
            self.handle_manual_failover(&mut out);
            self.handle_replica_failover(now, &mut out);
            if orphaned_primaries > 0
                && max_replicas >= 2
                && my_replicas == max_replicas
                && self.bus.config.allow_replica_migration
            {
                self.handle_replica_migration(max_replicas, now, &mut out);
            }
        }
        if update_state || !self.bus.state_ok {
            out.update_state = true;
        }
        self.finish(out, now)
    }

    /// `clusterCountNonFailingSlaves`.
    fn ok_replicas(&self, primary: &NodeName) -> usize {
        self.node(primary).map_or(0, |p| {
            p.replicas
                .iter()
                .filter_map(|r| self.node(r))
                .filter(|r| !r.is_failed())
                .count()
        })
    }

    /// `clusterHandleSlaveMigration`: a replica of a primary with more
    /// than `cluster-migration-barrier` working replicas moves to a
    /// primary orphaned for 5 s, if it has the smallest name among the
    /// replicas of the best-served primaries.
    fn handle_replica_migration(&mut self, max_replicas: usize, now: i64, out: &mut Out) {
        let me = self.myself_name();
        if !self.bus.state_ok {
            return;
        }
        let Some(my_primary) = self.myself_primary() else {
            return;
        };
        let ok = self.node(&my_primary).map_or(0, |p| {
            p.replicas
                .iter()
                .filter_map(|r| self.node(r))
                .filter(|r| !has_flag(r.flags, NODE_FAIL | NODE_PFAIL))
                .count()
        });
        if ok as i64 <= self.bus.config.migration_barrier {
            return;
        }
        let mut candidate = me;
        let mut target = None;
        let names: Vec<NodeName> = self.nodes().map(|n| n.name).collect();
        for name in &names {
            let Some(node) = self.node(name) else {
                continue;
            };
            let okr = if node.is_primary() {
                self.ok_replicas(name)
            } else {
                0
            };
            let orphaned = !node.is_replica()
                && !node.is_failed()
                && has_flag(node.flags, NODE_MIGRATE_TO)
                && okr == 0;
            let has_slots = !node.slots.is_empty();
            let replicas = node.replicas.clone();
            if let Some(n) = self.node_mut(name) {
                if orphaned {
                    if target.is_none() && has_slots {
                        target = Some(*name);
                    }
                    if n.bus.orphaned_time == 0 {
                        n.bus.orphaned_time = now;
                    }
                } else {
                    n.bus.orphaned_time = 0;
                }
            }
            if okr == max_replicas {
                for r in replicas {
                    if r.as_bytes() < candidate.as_bytes() {
                        candidate = r;
                    }
                }
            }
        }
        if let Some(t) = target
            && candidate == me
            && self
                .node(&t)
                .is_some_and(|n| now - n.bus.orphaned_time > REPLICA_MIGRATION_DELAY)
        {
            self.set_primary(&t, out);
        }
    }

    /// `clusterUpdateState`: ok when every slot is served by a non-failed
    /// node (with full coverage) and a majority of primaries is reachable.
    fn update_state(&mut self, now: i64, out: &mut Out) {
        if self.bus.first_call_time == 0 {
            self.bus.first_call_time = now;
        }
        if self.myself_is_primary()
            && !self.bus.state_ok
            && now - self.bus.first_call_time < WRITABLE_DELAY
        {
            return;
        }
        let mut ok = true;
        if self.bus.config.require_full_coverage {
            // By name against the few failed nodes (a slot's owner is
            // always a known node: `remove_node` clears its slots): a
            // lookup per slot would hash 16384 names on every change, each
            // SETSLOT of a resharding.
            let failed: Vec<NodeName> = self
                .nodes()
                .filter(|n| n.is_failed())
                .map(|n| n.name)
                .collect();
            ok = (0..SLOTS as u16).all(|j| self.slot_owner(j).is_some_and(|o| !failed.contains(o)));
        }
        let mut size = 0;
        let mut reachable = 0;
        for n in self.nodes() {
            if n.is_primary() && !n.slots.is_empty() {
                size += 1;
                if !has_flag(n.flags, NODE_FAIL | NODE_PFAIL) {
                    reachable += 1;
                }
            }
        }
        self.bus.size = size;
        if reachable < size / 2 + 1 {
            ok = false;
            self.bus.among_minority_time = now;
        }
        if ok != self.bus.state_ok {
            let rejoin_delay = self
                .bus
                .config
                .node_timeout
                .clamp(MIN_REJOIN_DELAY, MAX_REJOIN_DELAY);
            if ok && self.myself_is_primary() && now - self.bus.among_minority_time < rejoin_delay {
                return;
            }
            tracing::warn!("Cluster state changed: {}", if ok { "ok" } else { "fail" });
            self.bus.state_ok = ok;
            out.actions.push(Action::StateChanged { ok });
        }
    }

    /// `clusterUpdateState` outside a bus call (a command's change, the
    /// server's cron, so that the startup and rejoin delays run out):
    /// whether the state changed.
    pub fn refresh_state(&mut self, now: i64) -> bool {
        let mut out = Out::default();
        self.update_state(now, &mut out);
        !out.actions.is_empty()
    }

    /// `clusterBeforeSleep`: the deferred work of one call.
    fn finish(&mut self, mut out: Out, now: i64) -> Vec<Action> {
        if out.handle_failover && !self.myself_is_primary() {
            out.handle_failover = false;
            self.handle_replica_failover(now, &mut out);
        }
        if out.update_state {
            self.update_state(now, &mut out);
        }
        if out.save {
            out.actions.push(Action::SaveConfig { fsync: out.fsync });
        }
        out.actions
    }
}

/// Which of the ping family to send.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Ping,
    Pong,
    Meet,
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::cluster::wire;

    const TIMEOUT: i64 = 2000;

    fn name(i: usize) -> NodeName {
        NodeName::from_slice(format!("{:040x}", i + 1).as_bytes()).unwrap()
    }

    fn config(i: usize) -> BusConfig {
        BusConfig {
            node_timeout: TIMEOUT,
            port: 7000 + i as u16,
            cport: 17000 + i as u16,
            ..BusConfig::default()
        }
    }

    /// An in-process cluster: every node's messages go through the wire
    /// encoder and decoder, over simulated connections, with a fake clock.
    struct Sim {
        nodes: Vec<ClusterState>,
        /// Stopped nodes: no cron, no messages in or out, no connections.
        down: Vec<bool>,
        /// Partition groups: only nodes of one group talk.
        group: Vec<u8>,
        /// (node, link) -> (peer node, peer's link)
        conns: HashMap<(usize, LinkId), (usize, LinkId)>,
        queue: VecDeque<(usize, LinkId, Vec<u8>)>,
        now: i64,
        /// Actions other than the network's, by node.
        log: Vec<Vec<Action>>,
    }

    impl Sim {
        fn new(n: usize) -> Sim {
            let now = 1_700_000_000_000;
            let nodes = (0..n)
                .map(|i| {
                    let mut s = ClusterState::with_myself(name(i), config(i), now);
                    s.bus.seed(i as u64 + 1);
                    s
                })
                .collect();
            Sim {
                nodes,
                down: vec![false; n],
                group: vec![0; n],
                conns: HashMap::new(),
                queue: VecDeque::new(),
                now,
                log: vec![Vec::new(); n],
            }
        }

        fn talk(&self, a: usize, b: usize) -> bool {
            !self.down[a] && !self.down[b] && self.group[a] == self.group[b]
        }

        fn apply(&mut self, i: usize, actions: Vec<Action>) {
            for a in actions {
                match a {
                    Action::Connect { link, cport, .. } => {
                        let j = (0..self.nodes.len())
                            .find(|&j| self.nodes[j].bus.config.cport == cport);
                        match j {
                            Some(j) if self.talk(i, j) => {
                                let peer =
                                    self.nodes[j].accept_link(b"127.0.0.1", b"127.0.0.1", self.now);
                                self.conns.insert((i, link), (j, peer));
                                self.conns.insert((j, peer), (i, link));
                                let more = self.nodes[i].on_link_connected(link, self.now);
                                self.apply(i, more);
                            }
                            _ => self.nodes[i].on_link_closed(link, self.now),
                        }
                    }
                    Action::Send { link, msg } => {
                        let bytes = wire::encode(&msg).unwrap();
                        if let Some(&(j, peer)) = self.conns.get(&(i, link))
                            && self.talk(i, j)
                        {
                            self.queue.push_back((j, peer, bytes));
                        }
                    }
                    Action::Close { link } => {
                        if let Some((j, peer)) = self.conns.remove(&(i, link)) {
                            self.conns.remove(&(j, peer));
                            if self.talk(i, j) {
                                self.nodes[j].on_link_closed(peer, self.now);
                            }
                        }
                    }
                    other => self.log[i].push(other),
                }
            }
        }

        fn deliver(&mut self) {
            let mut budget = 100_000;
            while let Some((j, link, bytes)) = self.queue.pop_front() {
                budget -= 1;
                assert!(budget > 0, "message storm");
                if self.down[j] {
                    continue;
                }
                let (msg, len) = wire::decode(&bytes).unwrap().unwrap();
                assert_eq!(len, bytes.len());
                let actions = self.nodes[j].on_message(link, &msg, self.now);
                self.apply(j, actions);
            }
        }

        /// Runs `ms` of cluster time, a cron round every 100 ms.
        fn run(&mut self, ms: i64) {
            let end = self.now + ms;
            while self.now < end {
                self.now += 100;
                for i in 0..self.nodes.len() {
                    if self.down[i] {
                        continue;
                    }
                    let actions = self.nodes[i].cron(self.now);
                    self.apply(i, actions);
                }
                self.deliver();
            }
        }

        /// Runs until `done` (checked every 100 ms), at most `ms`; the time
        /// it took.
        fn run_until(&mut self, ms: i64, mut done: impl FnMut(&Sim) -> bool) -> Option<i64> {
            let start = self.now;
            while self.now - start < ms {
                if done(self) {
                    return Some(self.now - start);
                }
                self.run(100);
            }
            done(self).then_some(self.now - start)
        }

        fn alive(&self) -> impl Iterator<Item = usize> + '_ {
            (0..self.nodes.len()).filter(|&i| !self.down[i])
        }

        fn knows_all(&self, i: usize, of: &[usize]) -> bool {
            of.iter().all(|&j| {
                self.nodes[i]
                    .node(&name(j))
                    .is_some_and(|n| !has_flag(n.flags, NODE_HANDSHAKE | NODE_NOADDR))
            }) && self.nodes[i].nodes().count() == of.len()
        }

        fn owner(&self, i: usize, slot: u16) -> Option<NodeName> {
            self.nodes[i].slot_owner(slot).copied()
        }
    }

    /// Six nodes that met in a chain; 0, 1, 2 primaries with a third of
    /// the slots each, 3, 4, 5 their replicas; converged.
    fn cluster() -> Sim {
        let mut sim = Sim::new(6);
        let now = sim.now;
        for i in 0..5 {
            assert!(sim.nodes[i].meet(b"127.0.0.1", 7001 + i as i32, 17001 + i as i32, now));
        }
        let all: Vec<usize> = (0..6).collect();
        let took = sim.run_until(20_000, |s| (0..6).all(|i| s.knows_all(i, &all)));
        assert!(
            took.is_some(),
            "no convergence: {:#?}",
            sim.nodes[0].nodes().collect::<Vec<_>>()
        );
        for (p, range) in [(0, 0..5461u16), (1, 5461..10923), (2, 10923..16384)] {
            for s in range {
                assert!(sim.nodes[p].add_slot(&name(p), s));
            }
        }
        for r in 3..6 {
            let actions = sim.nodes[r].replicate(&name(r - 3), sim.now);
            assert!(
                actions.iter().any(|a| matches!(a, Action::ReplicateFrom { port, .. } if *port == 7000 + (r - 3) as u16)),
                "{actions:?}"
            );
            sim.apply(r, actions);
        }
        let took = sim.run_until(20_000, |s| {
            (0..6).all(|i| {
                s.nodes[i].is_ok()
                    && [0, 5461, 10923]
                        .iter()
                        .zip(0..3)
                        .all(|(&slot, p)| s.owner(i, slot) == Some(name(p)))
            })
        });
        assert!(took.is_some(), "slots did not converge");
        sim
    }

    fn epoch(sim: &Sim, viewer: usize, of: usize) -> u64 {
        sim.nodes[viewer].node(&name(of)).unwrap().config_epoch
    }

    #[test]
    fn meet_chain_converges_and_epoch_collisions_resolve() {
        let mut sim = cluster();
        // Replicas are known as such everywhere.
        for i in 0..6 {
            for r in 3..6 {
                let n = sim.nodes[i].node(&name(r)).unwrap();
                assert!(n.is_replica(), "node {i} sees {r} as {:x}", n.flags);
                assert_eq!(n.primary, Some(name(r - 3)));
            }
            // The same full slot table everywhere.
            for s in 0..SLOTS as u16 {
                assert_eq!(sim.owner(i, s), sim.owner(0, s));
            }
        }
        // All primaries started at config epoch 0: collisions give them
        // distinct epochs, and everyone agrees on them.
        let took = sim.run_until(30_000, |s| {
            let e: HashSet<u64> = (0..3).map(|p| epoch(s, p, p)).collect();
            e.len() == 3 && (0..6).all(|i| (0..3).all(|p| epoch(s, i, p) == epoch(s, p, p)))
        });
        assert!(
            took.is_some(),
            "epochs: {:?}",
            (0..3).map(|p| epoch(&sim, p, p)).collect::<Vec<_>>()
        );
        // The one with the greatest name never had to move.
        assert!(
            sim.log[0]
                .iter()
                .any(|a| matches!(a, Action::SaveConfig { fsync: true }))
        );
    }

    #[test]
    fn a_stopped_primary_fails_and_its_replica_takes_over() {
        let mut sim = cluster();
        sim.run(10_000); // settle the epochs
        let max_epoch = (0..6).map(|i| sim.nodes[i].current_epoch).max().unwrap();
        sim.down[0] = true;
        // PFAIL: after the node timeout without a PONG (pings go out at
        // half the timeout), so by 1.5 × timeout plus a cron round or two.
        let pfail = sim.run_until(2 * TIMEOUT, |s| {
            s.alive()
                .all(|i| s.nodes[i].node(&name(0)).unwrap().flags & (NODE_PFAIL | NODE_FAIL) != 0)
        });
        let pfail = pfail.expect("no PFAIL");
        assert!(pfail >= TIMEOUT, "PFAIL too early: {pfail} ms");
        let fail = sim.run_until(2 * TIMEOUT, |s| {
            s.alive()
                .all(|i| s.nodes[i].node(&name(0)).unwrap().is_failed())
        });
        assert!(fail.is_some(), "no FAIL everywhere");
        // The replica waits 500-1000 ms, asks for votes, gets two of three.
        let took = sim.run_until(4 * TIMEOUT, |s| {
            s.alive().all(|i| {
                s.owner(i, 0) == Some(name(3))
                    && s.owner(i, 5460) == Some(name(3))
                    && s.nodes[i].node(&name(3)).unwrap().is_primary()
            })
        });
        assert!(
            took.is_some(),
            "no takeover: {:?}",
            sim.nodes[1].node(&name(3))
        );
        assert!(sim.log[3].contains(&Action::BecomePrimary));
        let e3 = epoch(&sim, 3, 3);
        assert!(e3 > max_epoch, "epoch {e3} not bumped past {max_epoch}");
        for i in sim.alive() {
            assert_eq!(epoch(&sim, i, 3), e3);
        }
        let ok = sim.run_until(5_000, |s| s.alive().all(|i| s.nodes[i].is_ok()));
        assert!(ok.is_some(), "cluster not ok after the failover");
        // The old primary comes back: it sees its slots at a newer epoch
        // and turns into a replica of the new primary.
        sim.down[0] = false;
        let back = sim.run_until(20_000, |s| {
            s.nodes[0].node(&name(0)).unwrap().is_replica()
                && s.nodes[0].node(&name(0)).unwrap().primary == Some(name(3))
        });
        assert!(
            back.is_some(),
            "old primary did not follow: {:?}",
            sim.nodes[0].node(&name(0))
        );
        assert!(
            sim.log[0]
                .iter()
                .any(|a| matches!(a, Action::ReplicateFrom { port: 7003, .. }))
        );
    }

    #[test]
    fn a_partitioned_minority_does_not_elect() {
        let mut sim = cluster();
        sim.run(10_000);
        // Replica 3 (of primary 0) and primary 1 on one side.
        sim.group[3] = 1;
        sim.group[1] = 1;
        sim.run(6 * TIMEOUT);
        // The minority sees primary 0 unreachable but cannot get a FAIL
        // (one primary's report of three), so replica 3 stays a replica.
        assert!(sim.nodes[3].node(&name(0)).unwrap().flags & NODE_PFAIL != 0);
        assert!(!sim.nodes[3].node(&name(0)).unwrap().is_failed());
        assert!(sim.nodes[3].node(&name(3)).unwrap().is_replica());
        assert!(!sim.log[3].contains(&Action::BecomePrimary));
        assert!(!sim.nodes[3].is_ok() && !sim.nodes[1].is_ok());
        // The majority (0, 2 and replicas 4, 5) fails primary 1 over to 4.
        for i in [0, 2, 4, 5] {
            assert_eq!(sim.owner(i, 5461), Some(name(4)), "node {i}");
        }
        assert!(sim.nodes[0].is_ok());
    }

    // ---------------------------------------------------------------
    // Rule by rule, on one node fed hand-made messages.
    // ---------------------------------------------------------------

    const T0: i64 = 1_700_000_000_000;

    /// Myself (name 0, a primary) knowing nodes 1..=n (primaries), each
    /// with an outbound link that is up; and the links.
    fn fixture(n: usize) -> (ClusterState, HashMap<NodeName, LinkId>) {
        let mut s = ClusterState::with_myself(name(0), config(0), T0);
        s.bus.seed(7);
        for i in 1..=n {
            let node = s.node_or_create(name(i));
            node.flags = NODE_MASTER;
            node.ip = b"127.0.0.1".to_vec();
            node.port = 7000 + i as i32;
            node.cport = 17000 + i as i32;
            node.pong_received = T0;
        }
        let mut links = HashMap::new();
        for a in s.cron(T0) {
            if let Action::Connect { link, node, .. } = a {
                s.on_link_connected(link, T0);
                links.insert(node, link);
            }
        }
        // Every PING answered.
        for i in 1..=n {
            s.on_message(links[&name(i)], &pong_msg(hdr(i)), T0);
        }
        (s, links)
    }

    fn hdr(from: usize) -> Header {
        Header {
            sender: name(from),
            flags: NODE_MASTER,
            port: 7000 + from as u16,
            cport: 17000 + from as u16,
            ..Header::default()
        }
    }

    fn ping_msg(header: Header, gossip: Vec<Gossip>) -> Msg {
        Msg {
            header,
            body: Body::Ping(Ping {
                gossip,
                extensions: vec![],
            }),
        }
    }

    fn pong_msg(header: Header) -> Msg {
        Msg {
            header,
            body: Body::Pong(Ping::default()),
        }
    }

    fn gossip_about(i: usize, flags: u16) -> Gossip {
        Gossip {
            nodename: name(i),
            ping_sent: 0,
            pong_received: 0,
            ip: Ip::new(b"127.0.0.1"),
            port: 7000 + i as u16,
            cport: 17000 + i as u16,
            flags,
            pport: 0,
        }
    }

    fn sent(actions: &[Action]) -> Vec<(LinkId, &Msg)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send { link, msg } => Some((*link, msg)),
                _ => None,
            })
            .collect()
    }

    fn slots_of(range: std::ops::Range<u16>) -> Slots {
        let mut s = Slots::empty();
        for j in range {
            s.insert(j);
        }
        s
    }

    #[test]
    fn meet_checks_the_address_and_starts_a_handshake() {
        let mut s = ClusterState::with_myself(name(0), config(0), T0);
        assert!(!s.meet(b"not-an-ip", 7001, 17001, T0));
        assert!(!s.meet(b"127.0.0.1", 0, 17001, T0));
        assert!(!s.meet(b"127.0.0.1", 7001, 65536, T0));
        assert!(s.meet(b"127.0.0.1", 7001, 17001, T0));
        assert!(
            !s.meet(b"127.0.0.1", 7001, 17001, T0),
            "handshake in progress"
        );
        let hs = s.nodes().find(|n| !n.is_myself()).unwrap().clone();
        assert_eq!(hs.flags, NODE_HANDSHAKE | NODE_MEET);
        // The cron connects; the connection starts with a MEET.
        let actions = s.cron(T0 + 100);
        let Some(Action::Connect {
            link, ip, cport, ..
        }) = actions.first().cloned()
        else {
            panic!("{actions:?}")
        };
        assert_eq!((ip.as_slice(), cport), (b"127.0.0.1".as_slice(), 17001));
        let actions = s.on_link_connected(link, T0 + 110);
        assert!(matches!(sent(&actions)[0].1.body, Body::Meet(_)));
        assert_eq!(s.node(&hs.name).unwrap().flags & NODE_MEET, 0);
        // The PONG names it: the handshake node is renamed, a master now.
        let actions = s.on_message(link, &pong_msg(hdr(5)), T0 + 120);
        let n = s.node(&name(5)).expect("renamed");
        assert_eq!(n.flags, NODE_MASTER);
        assert!(s.node(&hs.name).is_none());
        assert!(actions.contains(&Action::SaveConfig { fsync: false }));
        assert_eq!(n.pong_received, T0 + 120);
    }

    #[test]
    fn a_handshake_times_out() {
        let mut s = ClusterState::with_myself(name(0), config(0), T0);
        assert!(s.meet(b"127.0.0.1", 7001, 17001, T0));
        let actions = s.cron(T0 + 100);
        let Some(Action::Connect { link, .. }) = actions.first().cloned() else {
            panic!()
        };
        s.cron(T0 + TIMEOUT);
        assert_eq!(s.nodes().count(), 2);
        let actions = s.cron(T0 + TIMEOUT + 1);
        assert_eq!(s.nodes().count(), 1, "handshake node dropped");
        assert!(actions.contains(&Action::Close { link }));
    }

    #[test]
    fn an_unknown_meet_makes_a_handshake_node_and_gets_a_pong() {
        let mut s = ClusterState::with_myself(name(0), config(0), T0);
        let link = s.accept_link(b"10.0.0.9", b"10.0.0.1", T0);
        // A PING from a stranger: a PONG, but no node.
        let actions = s.on_message(link, &ping_msg(hdr(3), vec![]), T0);
        assert!(matches!(sent(&actions)[0].1.body, Body::Pong(_)));
        assert_eq!(s.nodes().count(), 1);
        let meet = Msg {
            header: hdr(3),
            body: Body::Meet(Ping::default()),
        };
        let actions = s.on_message(link, &meet, T0);
        let pong = sent(&actions)[0].1.clone();
        assert!(matches!(pong.body, Body::Pong(_)));
        assert_eq!(pong.header.sender, name(0));
        let hs = s.nodes().find(|n| !n.is_myself()).unwrap();
        assert_eq!(hs.flags, NODE_HANDSHAKE);
        assert_eq!(
            (hs.ip.as_slice(), hs.port, hs.cport),
            (b"10.0.0.9".as_slice(), 7003, 17003)
        );
        // Myself's IP, learned from the connection.
        assert_eq!(s.node(&name(0)).unwrap().ip, b"10.0.0.1");
    }

    #[test]
    fn gossip_from_a_known_node_adds_the_nodes_it_knows() {
        let (mut s, links) = fixture(1);
        let g = vec![
            gossip_about(2, NODE_MASTER),
            gossip_about(3, NODE_MASTER | NODE_NOADDR),
        ];
        s.on_message(links[&name(1)], &ping_msg(hdr(1), g), T0 + 10);
        let n = s.node(&name(2)).expect("learned");
        assert_eq!((n.port, n.cport, n.flags), (7002, 17002, NODE_MASTER));
        assert!(s.node(&name(3)).is_none(), "no address, not added");
        // An unknown sender's gossip teaches nothing.
        let stranger = s.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        s.on_message(
            stranger,
            &ping_msg(hdr(9), vec![gossip_about(4, NODE_MASTER)]),
            T0,
        );
        assert!(s.node(&name(4)).is_none());
    }

    #[test]
    fn a_ping_carries_max_3_or_a_tenth_plus_pfail_nodes() {
        let (mut s, links) = fixture(30);
        let actions = s.cron(T0 + TIMEOUT / 2 + 1);
        let pings = sent(&actions);
        assert_eq!(pings.len(), 30, "everyone pinged at half the timeout");
        for (_, m) in &pings {
            let g = &m.body.ping().unwrap().gossip;
            assert_eq!(g.len(), 3, "31 nodes: max(3, 3)");
            assert!(g.iter().all(|g| g.nodename != name(0)));
        }
        // Two PFAIL nodes join every ping's gossip (the cron counts them).
        for i in [4, 5] {
            s.node_mut(&name(i)).unwrap().flags |= NODE_PFAIL;
        }
        s.cron(T0 + TIMEOUT / 2 + 2);
        let mut out = Out::default();
        s.send_ping(links[&name(1)], Kind::Ping, T0 + TIMEOUT, &mut out);
        let g = &sent(&out.actions)[0].1.body.ping().unwrap().gossip;
        assert_eq!(g.len(), 5);
        assert_eq!(g.iter().filter(|g| g.flags & NODE_PFAIL != 0).count(), 2);
    }

    #[test]
    fn pfail_after_the_node_timeout_cleared_by_a_pong() {
        let (mut s, links) = fixture(1);
        let l = links[&name(1)];
        // Half the timeout without a PONG: a PING.
        let actions = s.cron(T0 + TIMEOUT / 2);
        assert!(sent(&actions).is_empty());
        let actions = s.cron(T0 + TIMEOUT / 2 + 1);
        assert!(
            matches!(sent(&actions)[..], [(link, m)] if link == l && matches!(m.body, Body::Ping(_)))
        );
        let ping_sent = T0 + TIMEOUT / 2 + 1;
        assert_eq!(s.node(&name(1)).unwrap().ping_sent, ping_sent);
        s.cron(ping_sent + TIMEOUT);
        assert_eq!(s.node(&name(1)).unwrap().flags & NODE_PFAIL, 0);
        s.cron(ping_sent + TIMEOUT + 1);
        assert_ne!(s.node(&name(1)).unwrap().flags & NODE_PFAIL, 0);
        // The silent link was replaced by a new one (Redis frees a link
        // with no data for half the timeout): the PONG comes on that.
        let l2 = s.node(&name(1)).unwrap().bus.link.unwrap();
        assert_ne!(l2, l);
        s.on_link_connected(l2, ping_sent + TIMEOUT + 2);
        s.on_message(l2, &pong_msg(hdr(1)), ping_sent + TIMEOUT + 2);
        let n = s.node(&name(1)).unwrap();
        assert_eq!((n.flags & NODE_PFAIL, n.ping_sent), (0, 0));
    }

    #[test]
    fn ok_only_with_every_slot_after_the_delays() {
        let mut s = ClusterState::with_myself(name(0), config(0), T0);
        s.bus.config.node_timeout = 15000;
        s.bus.config.require_full_coverage = true;
        s.refresh_state(T0);
        // Within the writable delay nothing is computed.
        assert!(!s.refresh_state(T0 + 1_000));
        assert_eq!((s.is_ok(), s.bus.first_call_time), (false, T0));
        // Past it, without slots: a minority (no primary serves a slot).
        assert!(!s.refresh_state(T0 + 2_500));
        for slot in 0..SLOTS as u16 {
            s.add_slot(&name(0), slot);
        }
        // The rejoin delay (node timeout, at most 5 s) since the minority.
        assert!(!s.refresh_state(T0 + 7_000));
        assert!(s.refresh_state(T0 + 7_500));
        assert!(s.is_ok());
        assert_eq!(s.bus.size, 1);
        s.del_slot(7);
        assert!(s.refresh_state(T0 + 7_600));
        assert!(!s.is_ok(), "slot 7 unserved");
        s.bus.config.require_full_coverage = false;
        assert!(s.refresh_state(T0 + 7_700));
        assert!(s.is_ok(), "full coverage not required");
    }

    #[test]
    fn fail_needs_a_majority_of_primaries_and_is_broadcast() {
        let (mut s, links) = fixture(3);
        // Three primaries serve slots (1, 2 and myself): quorum 2.
        s.add_slot(&name(0), 0);
        s.add_slot(&name(1), 1);
        s.add_slot(&name(2), 2);
        let mut out = Out::default();
        s.update_state(T0 + 5000, &mut out);
        assert_eq!(s.bus.size, 3);
        s.node_mut(&name(1)).unwrap().flags |= NODE_PFAIL;
        // Node 3 serves no slots but is a primary: its report counts (Redis
        // counts reports from any primary).
        let mut h = hdr(2);
        h.myslots = slots_of(2..3);
        let actions = s.on_message(
            links[&name(2)],
            &ping_msg(h, vec![gossip_about(1, NODE_MASTER | NODE_PFAIL)]),
            T0 + 10,
        );
        assert!(s.node(&name(1)).unwrap().is_failed());
        let fails: Vec<_> = sent(&actions)
            .into_iter()
            .filter(|(_, m)| m.body == Body::Fail { about: name(1) })
            .collect();
        assert_eq!(fails.len(), 3, "FAIL to every linked node");
    }

    #[test]
    fn a_replica_s_report_does_not_count_and_reports_expire() {
        let (mut s, links) = fixture(3);
        for (i, slot) in [(0, 0), (1, 1), (2, 2)] {
            s.add_slot(&name(i), slot);
        }
        let mut out = Out::default();
        s.update_state(T0 + 5000, &mut out);
        // Myself a replica of 3: no vote of its own.
        s.set_primary(&name(3), &mut out);
        s.node_mut(&name(1)).unwrap().flags |= NODE_PFAIL;
        let mut h = hdr(2);
        h.myslots = slots_of(2..3);
        s.on_message(
            links[&name(2)],
            &ping_msg(h.clone(), vec![gossip_about(1, NODE_PFAIL)]),
            T0,
        );
        assert!(!s.node(&name(1)).unwrap().is_failed(), "1 of 2");
        assert_eq!(s.failure_reports(&name(1), T0 + 2 * TIMEOUT), 1);
        assert_eq!(
            s.failure_reports(&name(1), T0 + 2 * TIMEOUT + 1),
            0,
            "expired"
        );
        // A report from a replica is not taken.
        s.node_mut(&name(2)).unwrap().flags = NODE_SLAVE;
        let mut h = hdr(2);
        h.flags = NODE_SLAVE;
        h.slaveof = name(3);
        s.on_message(
            links[&name(2)],
            &ping_msg(h, vec![gossip_about(1, NODE_PFAIL)]),
            T0,
        );
        assert_eq!(s.failure_reports(&name(1), T0), 0);
    }

    #[test]
    fn fail_messages_and_clearing_fail() {
        let (mut s, links) = fixture(2);
        let stranger = s.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        let fail = |about| Msg {
            header: hdr(9),
            body: Body::Fail { about },
        };
        s.on_message(stranger, &fail(name(1)), T0);
        assert!(
            !s.node(&name(1)).unwrap().is_failed(),
            "unknown sender ignored"
        );
        let mut m = fail(name(1));
        m.header = hdr(2);
        s.on_message(links[&name(2)], &m, T0 + 1);
        let n = s.node(&name(1)).unwrap();
        assert!(n.is_failed() && n.fail_time == T0 + 1);
        // Slotless primary reachable again: cleared on its PONG.
        s.on_message(links[&name(1)], &pong_msg(hdr(1)), T0 + 2);
        assert!(!s.node(&name(1)).unwrap().is_failed());
        // A primary with slots: only after twice the timeout.
        s.add_slot(&name(1), 5);
        s.on_message(links[&name(2)], &m, T0 + 3);
        let mut h = hdr(1);
        h.myslots = slots_of(5..6);
        s.on_message(links[&name(1)], &pong_msg(h.clone()), T0 + 3 + 2 * TIMEOUT);
        assert!(s.node(&name(1)).unwrap().is_failed());
        s.on_message(links[&name(1)], &pong_msg(h), T0 + 4 + 2 * TIMEOUT);
        assert!(!s.node(&name(1)).unwrap().is_failed());
    }

    #[test]
    fn a_newer_config_epoch_takes_slots_an_older_one_gets_an_update() {
        let (mut s, links) = fixture(2);
        s.node_mut(&name(1)).unwrap().config_epoch = 5;
        for j in 0..10 {
            s.add_slot(&name(1), j);
        }
        // Node 2 claims 0..5 at epoch 4: stale, it gets an UPDATE about 1.
        let mut h = hdr(2);
        h.config_epoch = 4;
        h.myslots = slots_of(0..5);
        let actions = s.on_message(links[&name(2)], &ping_msg(h.clone(), vec![]), T0);
        assert_eq!(s.slot_owner(0), Some(&name(1)));
        let upd = sent(&actions)
            .into_iter()
            .find(|(_, m)| matches!(m.body, Body::Update { .. }))
            .expect("an UPDATE");
        assert_eq!(upd.0, links[&name(2)]);
        assert!(
            matches!(&upd.1.body, Body::Update { config_epoch: 5, node, slots } if *node == name(1) && slots.count() == 10)
        );
        // At epoch 6 it wins them.
        h.config_epoch = 6;
        let actions = s.on_message(links[&name(2)], &ping_msg(h, vec![]), T0);
        assert_eq!(s.slot_owner(0), Some(&name(2)));
        assert_eq!(s.slot_owner(5), Some(&name(1)));
        assert_eq!(s.node(&name(1)).unwrap().slots.count(), 5);
        assert!(actions.contains(&Action::SaveConfig { fsync: true }));
        // An UPDATE message about node 1 at epoch 7 gives it 0..10 back.
        let upd = Msg {
            header: hdr(2),
            body: Body::Update {
                config_epoch: 7,
                node: name(1),
                slots: slots_of(0..10),
            },
        };
        s.on_message(links[&name(2)], &upd, T0);
        assert_eq!(s.slot_owner(0), Some(&name(1)));
        assert_eq!(s.node(&name(1)).unwrap().config_epoch, 7);
    }

    #[test]
    fn losing_all_our_slots_makes_us_a_replica_of_the_winner() {
        let (mut s, links) = fixture(1);
        for j in 0..3 {
            s.add_slot(&name(0), j);
        }
        let mut h = hdr(1);
        h.config_epoch = 3;
        h.myslots = slots_of(0..3);
        let actions = s.on_message(links[&name(1)], &ping_msg(h, vec![]), T0);
        let me = s.node(&name(0)).unwrap();
        assert!(me.is_replica() && me.primary == Some(name(1)));
        assert!(actions.contains(&Action::ReplicateFrom {
            ip: b"127.0.0.1".to_vec(),
            port: 7001
        }));
    }

    #[test]
    fn config_epoch_collision_the_smaller_name_moves() {
        let (mut s, links) = fixture(2);
        s.current_epoch = 4;
        s.node_mut(&name(0)).unwrap().config_epoch = 4;
        // Name 0 < name 1: myself moves to a new epoch.
        let mut h = hdr(1);
        h.config_epoch = 4;
        h.current_epoch = 4;
        let actions = s.on_message(links[&name(1)], &ping_msg(h, vec![]), T0);
        assert_eq!(s.current_epoch, 5);
        assert_eq!(s.node(&name(0)).unwrap().config_epoch, 5);
        assert!(actions.contains(&Action::SaveConfig { fsync: true }));
        // Seen from the greater name (3), a smaller-named primary (1) with
        // the same epoch: the other one moves, not myself.
        let mut t = ClusterState::with_myself(name(3), config(3), T0);
        let l = t.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        t.node_or_create(name(1)).flags = NODE_MASTER;
        let mut h = hdr(1);
        h.config_epoch = 0;
        t.on_message(l, &ping_msg(h, vec![]), T0);
        assert_eq!(t.node(&name(3)).unwrap().config_epoch, 0);
        assert_eq!(t.current_epoch, 0);
    }

    #[test]
    fn votes_one_per_epoch_only_for_a_failed_primary() {
        let (mut s, links) = fixture(3);
        s.add_slot(&name(0), 0);
        s.add_slot(&name(1), 1);
        // Node 2 a replica of node 1.
        s.node_mut(&name(2)).unwrap().flags = NODE_SLAVE;
        s.attach_replica(&name(1), &name(2));
        s.current_epoch = 3;
        let req = |epoch| {
            let mut h = hdr(2);
            h.flags = NODE_SLAVE;
            h.slaveof = name(1);
            h.current_epoch = epoch;
            h.myslots = slots_of(1..2);
            Msg {
                header: h,
                body: Body::FailoverAuthRequest,
            }
        };
        let acks = |a: &[Action]| {
            sent(a)
                .iter()
                .filter(|(_, m)| m.body == Body::FailoverAuthAck)
                .count()
        };
        let l2 = links[&name(2)];
        assert_eq!(acks(&s.on_message(l2, &req(4), T0)), 0, "its primary is up");
        s.node_mut(&name(1)).unwrap().flags |= NODE_FAIL;
        assert_eq!(acks(&s.on_message(l2, &req(3), T0)), 0, "old epoch");
        let a = s.on_message(l2, &req(4), T0);
        assert_eq!(acks(&a), 1);
        assert_eq!(s.last_vote_epoch, 4);
        assert!(a.contains(&Action::SaveConfig { fsync: true }));
        assert_eq!(acks(&s.on_message(l2, &req(4), T0)), 0, "voted this epoch");
        assert_eq!(
            acks(&s.on_message(l2, &req(5), T0 + 2 * TIMEOUT - 1)),
            0,
            "voted for this primary lately"
        );
        assert_eq!(acks(&s.on_message(l2, &req(6), T0 + 2 * TIMEOUT)), 1);
    }

    #[test]
    fn a_replica_s_messages_carry_its_primary_s_slots_and_epoch() {
        let (mut s, _) = fixture(1);
        s.node_mut(&name(1)).unwrap().config_epoch = 9;
        s.add_slot(&name(1), 42);
        s.bus.my_repl_offset = 1234;
        s.replicate(&name(1), T0);
        let h = s.header();
        assert_eq!(h.slaveof, name(1));
        assert_eq!(h.config_epoch, 9);
        assert!(h.myslots.contains(42) && h.myslots.count() == 1);
        assert_eq!(h.flags, NODE_MYSELF | NODE_SLAVE);
        assert_eq!(h.offset, 1234);
        assert_eq!((h.port, h.cport), (7000, 17000));
    }

    #[test]
    fn the_replica_election_waits_by_rank_and_needs_a_majority() {
        let (mut s, _) = fixture(4);
        // Primaries 1, 2, 3 with slots; myself and 4 replicas of 1.
        for (i, j) in [(1, 1), (2, 2), (3, 3)] {
            s.add_slot(&name(i), j);
        }
        s.replicate(&name(1), T0);
        s.node_mut(&name(4)).unwrap().flags = NODE_SLAVE;
        s.attach_replica(&name(1), &name(4));
        s.node_mut(&name(4)).unwrap().repl_offset = 100; // ahead of us
        let mut out = Out::default();
        s.update_state(T0 + 5000, &mut out);
        assert_eq!(s.bus.size, 3);
        s.node_mut(&name(1)).unwrap().flags |= NODE_FAIL;
        let now = T0 + 10_000;
        s.cron(now);
        let wait = s.bus.failover_auth_time - now;
        assert_eq!(s.bus.failover_auth_rank, 1);
        assert!((1500..2000).contains(&wait), "{wait}");
        let a = s.cron(s.bus.failover_auth_time - 1);
        assert!(
            sent(&a)
                .iter()
                .all(|(_, m)| m.body != Body::FailoverAuthRequest)
        );
        let epoch = s.current_epoch;
        let a = s.cron(s.bus.failover_auth_time);
        let reqs = sent(&a)
            .into_iter()
            .filter(|(_, m)| m.body == Body::FailoverAuthRequest)
            .count();
        assert_eq!(reqs, 4, "to every linked node");
        assert_eq!(s.current_epoch, epoch + 1);
        // One ack of a needed two: nothing; the second: myself takes over.
        let ack = |i: usize, epoch| {
            let mut h = hdr(i);
            h.current_epoch = epoch;
            h.myslots = slots_of(i as u16..i as u16 + 1);
            Msg {
                header: h,
                body: Body::FailoverAuthAck,
            }
        };
        let t = s.bus.failover_auth_time + 10;
        // Votes come on the voters' own links to us.
        let links: HashMap<NodeName, LinkId> = [2, 3]
            .into_iter()
            .map(|i| (name(i), s.accept_link(b"127.0.0.1", b"127.0.0.1", t)))
            .collect();
        s.on_message(links[&name(2)], &ack(2, epoch + 1), t);
        assert!(s.node(&name(0)).unwrap().is_replica());
        assert_eq!(s.bus.failover_auth_count, 1);
        let a = s.on_message(links[&name(3)], &ack(3, epoch + 1), t);
        assert!(a.contains(&Action::BecomePrimary));
        let me = s.node(&name(0)).unwrap();
        assert!(me.is_primary());
        assert_eq!(me.config_epoch, epoch + 1);
        assert_eq!(s.slot_owner(1), Some(&name(0)));
        let pongs = sent(&a)
            .into_iter()
            .filter(|(_, m)| matches!(m.body, Body::Pong(_)))
            .count();
        assert_eq!(pongs, 4, "PONG to everyone");
    }

    #[test]
    fn forget_refuses_myself_and_my_primary_and_blacklists_a_minute() {
        let (mut s, links) = fixture(2);
        assert_eq!(s.forget(&name(9), T0), Err(ForgetError::Unknown(name(9))));
        assert_eq!(
            s.forget(&name(0), T0).unwrap_err().to_string(),
            "ERR I tried hard but I can't forget myself..."
        );
        s.replicate(&name(1), T0);
        assert_eq!(
            s.forget(&name(1), T0).unwrap_err().to_string(),
            "ERR Can't forget my master!"
        );
        let actions = s.forget(&name(2), T0).unwrap();
        assert!(s.node(&name(2)).is_none());
        assert!(actions.contains(&Action::Close {
            link: links[&name(2)]
        }));
        assert!(actions.contains(&Action::SaveConfig { fsync: false }));
        // Gossip does not bring it back within the minute; after, it does.
        let g = vec![gossip_about(2, NODE_MASTER)];
        let l1 = links[&name(1)];
        s.on_message(l1, &ping_msg(hdr(1), g.clone()), T0 + BLACKLIST_TTL);
        assert!(s.node(&name(2)).is_none());
        s.on_message(l1, &ping_msg(hdr(1), g), T0 + BLACKLIST_TTL + 1);
        assert!(s.node(&name(2)).is_some());
    }

    #[test]
    fn bumping_the_epoch_without_consensus() {
        let (mut s, _) = fixture(1);
        s.node_mut(&name(1)).unwrap().config_epoch = 3;
        s.current_epoch = 3;
        let (bumped, actions) = s.bump_epoch_without_consensus(T0);
        assert!(bumped);
        assert_eq!(s.current_epoch, 4);
        assert_eq!(s.node(&name(0)).unwrap().config_epoch, 4);
        assert!(actions.contains(&Action::SaveConfig { fsync: true }));
        // Already the greatest: nothing.
        assert!(!s.bump_epoch_without_consensus(T0).0);
        assert_eq!(s.current_epoch, 4);
    }

    #[test]
    fn publish_from_a_known_node_is_delivered() {
        let (mut s, links) = fixture(1);
        let m = |h| Msg {
            header: h,
            body: Body::Publish {
                channel: Bytes::from_static(b"ch"),
                message: Bytes::from_static(b"hi"),
            },
        };
        let a = s.on_message(links[&name(1)], &m(hdr(1)), T0);
        assert_eq!(
            a,
            vec![Action::Publish {
                channel: Bytes::from_static(b"ch"),
                message: Bytes::from_static(b"hi"),
                shard: false
            }]
        );
        let stranger = s.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        assert!(s.on_message(stranger, &m(hdr(9)), T0).is_empty());
    }

    #[test]
    fn hostnames_go_out_in_the_extension_and_come_in_from_it() {
        let mut cfg = config(0);
        cfg.hostname = b"me.example".to_vec();
        let mut s = ClusterState::with_myself(name(0), cfg, T0);
        s.node_or_create(name(1)).flags = NODE_MASTER;
        let l = s.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        let mut p = ping_msg(hdr(1), vec![]);
        if let Body::Ping(ping) = &mut p.body {
            ping.extensions
                .push(PingExt::Hostname(Bytes::from_static(b"them.example")));
        }
        let a = s.on_message(l, &p, T0);
        assert_eq!(s.node(&name(1)).unwrap().hostname, b"them.example");
        let pong = sent(&a)[0].1;
        let mine = s.node(&name(0)).unwrap().shard_id;
        assert_eq!(
            pong.body.ping().unwrap().extensions,
            vec![
                PingExt::Hostname(Bytes::from_static(b"me.example")),
                PingExt::ShardId(mine),
                PingExt::Other {
                    ext_type: EXT_INTERNALSECRET,
                    data: Bytes::copy_from_slice(&s.bus.internal_secret)
                }
            ]
        );
        // A ping without the extension: no hostname any more.
        s.on_message(l, &ping_msg(hdr(1), vec![]), T0);
        assert!(s.node(&name(1)).unwrap().hostname.is_empty());
    }

    #[test]
    fn human_nodenames_go_out_after_the_hostname_and_come_in() {
        let mut cfg = config(0);
        cfg.human_nodename = b"node-0".to_vec();
        let mut s = ClusterState::with_myself(name(0), cfg, T0);
        s.node_or_create(name(1)).flags = NODE_MASTER;
        let l = s.accept_link(b"127.0.0.1", b"127.0.0.1", T0);
        let mut p = ping_msg(hdr(1), vec![]);
        if let Body::Ping(ping) = &mut p.body {
            ping.extensions
                .push(PingExt::HumanNodename(Bytes::from_static(b"node-1")));
        }
        let a = s.on_message(l, &p, T0);
        assert_eq!(s.node(&name(1)).unwrap().human_nodename, b"node-1");
        assert_eq!(
            s.described(&name(1)),
            format!("{} (node-1)", String::from_utf8_lossy(name(1).as_bytes()))
        );
        let exts = &sent(&a)[0].1.body.ping().unwrap().extensions;
        assert_eq!(
            exts[0],
            PingExt::HumanNodename(Bytes::from_static(b"node-0"))
        );
        assert!(matches!(exts[1], PingExt::ShardId(_)));
        // A ping without it: none any more.
        s.on_message(l, &ping_msg(hdr(1), vec![]), T0);
        assert!(s.node(&name(1)).unwrap().human_nodename.is_empty());
    }

    #[test]
    fn forgotten_nodes_spread_with_their_ttl_but_never_myself_or_my_primary() {
        let (mut s, links) = fixture(4);
        s.forget(&name(2), T0).unwrap();
        // Myself's pings name it with the seconds left.
        let mut out = Out::default();
        s.send_ping(links[&name(1)], Kind::Ping, T0 + 20_000, &mut out);
        let exts = &sent(&out.actions)[0].1.body.ping().unwrap().extensions;
        let ttl = exts.iter().find_map(|e| match e {
            PingExt::ForgottenNode { name: n, ttl } if *n == name(2) => Some(*ttl),
            _ => None,
        });
        let left = (T0 + BLACKLIST_TTL) / 1000 - (T0 + 20_000) / 1000;
        assert_eq!(ttl, Some(left as u64));
        // A peer's: forgotten here for as long; myself and my primary stay.
        s.replicate(&name(1), T0);
        let mut p = ping_msg(hdr(3), vec![]);
        if let Body::Ping(ping) = &mut p.body {
            for i in [0, 1, 4] {
                ping.extensions.push(PingExt::ForgottenNode {
                    name: name(i),
                    ttl: 30,
                });
            }
        }
        let a = s.on_message(links[&name(3)], &p, T0);
        assert!(s.node(&name(0)).is_some() && s.node(&name(1)).is_some());
        assert!(s.node(&name(4)).is_none());
        assert!(a.contains(&Action::SaveConfig { fsync: false }));
        let g = vec![gossip_about(4, NODE_MASTER)];
        s.on_message(links[&name(3)], &ping_msg(hdr(3), g.clone()), T0 + 30_000);
        assert!(s.node(&name(4)).is_none());
        s.on_message(links[&name(3)], &ping_msg(hdr(3), g), T0 + 30_001);
        assert!(s.node(&name(4)).is_some());
    }

    #[test]
    fn a_single_shard_primary_marks_a_silent_node_failed_alone() {
        // Myself the one primary with slots; 2 answers, 1 falls silent.
        let (mut s, links) = fixture(2);
        s.add_slot(&name(0), 0);
        let mut out = Out::default();
        s.update_state(T0 + 5000, &mut out);
        assert_eq!(s.bus.size, 1);
        s.cron(T0 + TIMEOUT / 2 + 1);
        let ping_sent = T0 + TIMEOUT / 2 + 1;
        s.on_message(links[&name(2)], &pong_msg(hdr(2)), ping_sent + 1);
        let actions = s.cron(ping_sent + TIMEOUT + 1);
        let n = s.node(&name(1)).unwrap();
        assert!(n.is_failed(), "{:x}", n.flags);
        assert!(
            sent(&actions)
                .iter()
                .any(|(_, m)| matches!(m.body, Body::Fail { about } if about == name(1)))
        );
    }

    fn ping_with_shard(from: usize, slaveof: Option<usize>, shard: Option<NodeName>) -> Msg {
        let mut h = hdr(from);
        if let Some(p) = slaveof {
            h.slaveof = name(p);
            h.flags = NODE_SLAVE;
        }
        let mut m = ping_msg(h, vec![]);
        if let (Body::Ping(ping), Some(id)) = (&mut m.body, shard) {
            ping.extensions.push(PingExt::ShardId(id));
        }
        m
    }

    #[test]
    fn shard_ids_come_from_the_extension_and_replicas_take_their_primary_s() {
        let (mut s, links) = fixture(3);
        let ids: Vec<NodeName> = (0..4).map(|i| s.node(&name(i)).unwrap().shard_id).collect();
        // Random and distinct at creation.
        assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 4);
        let sa = NodeName(*b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        let sb = NodeName(*b"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
        // A primary's extension is its id.
        let a = s.on_message(links[&name(1)], &ping_with_shard(1, None, Some(sa)), T0);
        assert_eq!(s.node(&name(1)).unwrap().shard_id, sa);
        assert!(
            a.iter().any(|x| matches!(x, Action::SaveConfig { .. })),
            "{a:?}"
        );
        // A replica attaching takes its primary's id, whatever it says.
        s.on_message(links[&name(2)], &ping_with_shard(2, Some(1), Some(sb)), T0);
        assert_eq!(s.node(&name(2)).unwrap().shard_id, sa);
        // The primary's new id goes to its replicas, fsynced.
        let a = s.on_message(links[&name(1)], &ping_with_shard(1, None, Some(sb)), T0);
        assert_eq!(s.node(&name(2)).unwrap().shard_id, sb);
        assert!(a.contains(&Action::SaveConfig { fsync: true }), "{a:?}");
        // A 7.0 sender (no extension): a primary keeps the id it has, a
        // replica its primary's.
        s.on_message(links[&name(3)], &ping_with_shard(3, None, None), T0);
        assert_eq!(s.node(&name(3)).unwrap().shard_id, ids[3]);
        s.on_message(links[&name(3)], &ping_with_shard(3, Some(1), None), T0);
        assert_eq!(s.node(&name(3)).unwrap().shard_id, sb);
        // Myself replicating a primary joins its shard.
        let (mut s, _) = fixture(1);
        s.node_mut(&name(1)).unwrap().shard_id = sa;
        s.replicate(&name(1), T0);
        assert_eq!(s.node(&name(0)).unwrap().shard_id, sa);
    }

    #[test]
    fn the_smallest_internal_secret_wins_and_goes_out() {
        let (mut s, links) = fixture(1);
        s.bus.internal_secret = [b'5'; NAME_LEN];
        let with = |secret: u8| {
            let mut m = ping_with_shard(1, None, None);
            if let Body::Ping(p) = &mut m.body {
                p.extensions.push(PingExt::Other {
                    ext_type: EXT_INTERNALSECRET,
                    data: Bytes::from(vec![secret; NAME_LEN]),
                });
            }
            m
        };
        s.on_message(links[&name(1)], &with(b'7'), T0);
        assert_eq!(s.bus.internal_secret, [b'5'; NAME_LEN]);
        s.on_message(links[&name(1)], &with(b'3'), T0);
        assert_eq!(s.bus.internal_secret, [b'3'; NAME_LEN]);
        // The PONG to that PING went first, as Redis's; the next has it.
        let a = s.on_message(links[&name(1)], &with(b'4'), T0);
        let pong = sent(&a)[0].1;
        assert!(
            pong.body
                .ping()
                .unwrap()
                .extensions
                .contains(&PingExt::Other {
                    ext_type: EXT_INTERNALSECRET,
                    data: Bytes::from(vec![b'3'; NAME_LEN])
                }),
            "{pong:?}"
        );
    }

    #[test]
    fn cluster_ping_interval_pings_sooner_than_half_the_timeout() {
        let pinged = |interval: i64| {
            let (mut s, _) = fixture(1);
            s.bus.config.ping_interval = interval;
            // Well under half the 15 s timeout since the last PONG.
            let later = T0 + 1000;
            s.cron(later);
            s.node(&name(1)).unwrap().ping_sent == later
        };
        assert!(!pinged(0));
        assert!(pinged(100));
    }

    #[test]
    fn a_primary_turned_replica_of_its_own_shard_hands_it_its_slots() {
        let (mut s, links) = fixture(2);
        for i in 1..3 {
            let n = s.node_mut(&name(i)).unwrap();
            n.flags = NODE_MASTER;
        }
        let sa = NodeName(*b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        s.assign_shard_id(&name(1), sa);
        s.assign_shard_id(&name(2), sa);
        for slot in 0..10 {
            s.add_slot(&name(1), slot);
        }
        s.node_mut(&name(1)).unwrap().config_epoch = 3;
        // Node 1 now replicates node 2 (same shard), epoch 4: a failover
        // this node missed. Node 2 takes the slots and the epoch.
        let mut m = ping_with_shard(1, Some(2), Some(sa));
        m.header.config_epoch = 4;
        m.header.myslots = slots_of(0..10);
        s.on_message(links[&name(1)], &m, T0);
        assert_eq!(s.slot_owner(5), Some(&name(2)));
        assert!(s.node(&name(2)).unwrap().is_primary());
        assert_eq!(s.node(&name(2)).unwrap().config_epoch, 4);
        assert!(s.node(&name(1)).unwrap().is_replica());
    }

    #[test]
    fn manual_failover_pauses_the_primary_and_swaps_roles() {
        let mut sim = cluster();
        sim.run(10_000);
        assert_eq!(
            sim.nodes[0].failover(FailoverMode::Default, sim.now),
            Err(FailoverError::NotReplica)
        );
        let now = sim.now;
        let actions = sim.nodes[3].failover(FailoverMode::Default, now).unwrap();
        assert!(
            sent(&actions).iter().any(|(_, m)| m.body == Body::MfStart),
            "{actions:?}"
        );
        sim.apply(3, actions);
        sim.deliver();
        // The primary paused writes for twice the manual failover time.
        assert!(sim.log[0].contains(&Action::PauseWrites {
            until: now + 2 * MF_TIMEOUT
        }));
        assert_eq!(sim.nodes[0].bus.mf_replica, Some(name(3)));
        // The replica sees the paused offset (ours matches: 0), asks for
        // votes with FORCEACK though its primary is fine, and wins.
        let took = sim.run_until(MF_TIMEOUT, |s| {
            s.alive().all(|i| {
                s.owner(i, 0) == Some(name(3)) && s.nodes[i].node(&name(0)).unwrap().is_replica()
            })
        });
        assert!(took.is_some(), "no swap: {:?}", sim.nodes[3].bus);
        assert!(sim.log[3].contains(&Action::BecomePrimary));
        // The old primary follows the new one and unpauses.
        assert!(sim.log[0].contains(&Action::UnpauseWrites));
        assert!(
            sim.log[0]
                .iter()
                .any(|a| matches!(a, Action::ReplicateFrom { port: 7003, .. }))
        );
        assert!(!sim.nodes[0].node(&name(0)).unwrap().is_failed());
    }

    #[test]
    fn failover_takeover_needs_no_votes() {
        let mut sim = cluster();
        sim.run(10_000);
        // Cut replica 4 off from everyone: no votes to be had.
        sim.group[4] = 1;
        let max = (0..6).map(|i| sim.nodes[i].max_epoch()).max().unwrap();
        let actions = sim.nodes[4]
            .failover(FailoverMode::Takeover, sim.now)
            .unwrap();
        assert!(actions.contains(&Action::BecomePrimary));
        assert_eq!(sim.owner(4, 5461), Some(name(4)));
        assert!(epoch(&sim, 4, 4) > max);
        sim.apply(4, actions);
        // Healed, the others take its claim at the newer epoch.
        sim.group[4] = 0;
        let took = sim.run_until(20_000, |s| {
            s.alive().all(|i| s.owner(i, 5461) == Some(name(4)))
        });
        assert!(took.is_some());
        // FORCE without a reachable primary is allowed, default is not.
        let mut lone = Sim::new(2);
        lone.nodes[1].node_or_create(name(0)).flags = NODE_MASTER;
        lone.nodes[1].replicate(&name(0), lone.now);
        assert_eq!(
            lone.nodes[1].failover(FailoverMode::Default, lone.now),
            Err(FailoverError::PrimaryDown)
        );
        assert!(
            lone.nodes[1]
                .failover(FailoverMode::Force, lone.now)
                .is_ok()
        );
        assert!(lone.nodes[1].bus.mf_can_start);
    }

    #[test]
    fn slots_taken_from_myself_or_my_primary_lose_their_shard_channels() {
        let mut sim = cluster();
        sim.run(10_000);
        for n in &mut sim.nodes {
            n.take_lost_slots();
        }
        // Replica 4 takes over primary 1's slots: as Redis's
        // `clusterFailoverReplaceYourMaster`, it is a primary already when
        // it frees them, so its own subscribers stay.
        sim.group[4] = 1;
        let actions = sim.nodes[4]
            .failover(FailoverMode::Takeover, sim.now)
            .unwrap();
        sim.apply(4, actions);
        assert_eq!(sim.nodes[4].take_lost_slots(), Vec::<u16>::new());
        sim.group[4] = 0;
        let took = sim.run_until(20_000, |s| {
            s.alive().all(|i| s.owner(i, 5461) == Some(name(4)))
        });
        assert!(took.is_some());
        // The old primary loses every slot it served, in order, then, as
        // it becomes the new primary's replica (Redis 8's
        // `removeAllNotOwnedShardChannelSubscriptions`), every slot that
        // shard does not serve; the other shards' nodes lose none.
        let lost: Vec<u16> = (5461..10923).collect();
        let lost_by_1 = sim.nodes[1].take_lost_slots();
        assert_eq!(lost_by_1[..lost.len()], lost[..]);
        let mut rest = lost_by_1[lost.len()..].to_vec();
        rest.sort_unstable();
        let not_served: Vec<u16> = (0..5461).chain(10923..16384).collect();
        assert_eq!(rest, not_served);
        for i in [0, 2, 3, 4, 5] {
            assert_eq!(
                sim.nodes[i].take_lost_slots(),
                Vec::<u16>::new(),
                "node {i}"
            );
        }
        // A replica loses its primary's slots with it (DELSLOTS there,
        // heard through the gossip of the emptied slot table).
        let (mut s, _) = fixture(2);
        s.add_slot(&name(1), 7);
        s.add_slot(&name(2), 8);
        s.replicate(&name(1), T0);
        // Becoming node 1's replica: every slot node 1 does not serve.
        let not_served: Vec<u16> = (0..SLOTS as u16).filter(|&x| x != 7).collect();
        assert_eq!(s.take_lost_slots(), not_served);
        s.del_slot(8);
        assert_eq!(s.take_lost_slots(), Vec::<u16>::new());
        s.del_slot(7);
        assert_eq!(s.take_lost_slots(), vec![7]);
    }

    #[test]
    fn a_slot_its_owner_stopped_claiming_goes_to_any_claimant() {
        let (mut s, links) = fixture(2);
        s.node_mut(&name(1)).unwrap().config_epoch = 5;
        s.add_slot(&name(1), 0);
        s.add_slot(&name(1), 1);
        // Node 1 now claims only slot 1 (it dropped 0): the slot stays in
        // the table but counts as unclaimed.
        let mut h = hdr(1);
        h.config_epoch = 5;
        h.myslots = slots_of(1..2);
        s.on_message(links[&name(1)], &ping_msg(h, vec![]), T0);
        assert_eq!(s.slot_owner(0), Some(&name(1)));
        // Node 2 at an older epoch takes it, and gets no UPDATE for it.
        let mut h = hdr(2);
        h.config_epoch = 1;
        h.myslots = slots_of(0..1);
        let a = s.on_message(links[&name(2)], &ping_msg(h, vec![]), T0);
        assert_eq!(s.slot_owner(0), Some(&name(2)));
        assert!(
            sent(&a)
                .iter()
                .all(|(_, m)| !matches!(m.body, Body::Update { .. }))
        );
    }

    #[test]
    fn a_peer_s_extreme_epochs_and_offsets_do_not_panic() {
        let (mut s, links) = fixture(1);
        let mut h = hdr(1);
        h.current_epoch = u64::MAX;
        h.offset = u64::MAX;
        // Same config epoch (0) as myself, greater name: myself bumps.
        s.on_message(links[&name(1)], &ping_msg(h, vec![]), T0);
        assert_eq!(s.node(&name(1)).unwrap().repl_offset, i64::MAX);
        let _ = s.bump_epoch_without_consensus(T0);
        s.cron(T0 + 100);
    }

    #[test]
    fn a_spare_replica_migrates_to_an_orphaned_primary() {
        let mut sim = Sim::new(7);
        let now = sim.now;
        for i in 0..6 {
            assert!(sim.nodes[i].meet(b"127.0.0.1", 7001 + i as i32, 17001 + i as i32, now));
        }
        let all: Vec<usize> = (0..7).collect();
        assert!(
            sim.run_until(20_000, |s| (0..7).all(|i| s.knows_all(i, &all)))
                .is_some()
        );
        for (p, range) in [(0, 0..5461u16), (1, 5461..10923), (2, 10923..16384)] {
            for j in range {
                sim.nodes[p].add_slot(&name(p), j);
            }
        }
        // 3 and 6 replicate 0; 4 replicates 1; 5 replicates 2.
        for (r, p) in [(3, 0), (6, 0), (4, 1), (5, 2)] {
            let a = sim.nodes[r].replicate(&name(p), sim.now);
            sim.apply(r, a);
        }
        assert!(
            sim.run_until(20_000, |s| (0..7).all(|i| s.nodes[i].is_ok()))
                .is_some()
        );
        sim.run(5_000);
        // Primary 2 loses its only replica: after 5 s, the replica of 0
        // with the smallest name (3) moves to it; 6 stays.
        sim.down[5] = true;
        let moved = sim.run_until(30_000, |s| {
            s.nodes[3].node(&name(3)).unwrap().primary == Some(name(2))
        });
        assert!(moved.is_some(), "{:?}", sim.nodes[3].node(&name(3)));
        assert!(moved.unwrap() > REPLICA_MIGRATION_DELAY);
        assert_eq!(sim.nodes[6].node(&name(6)).unwrap().primary, Some(name(0)));
        assert!(
            sim.log[3]
                .iter()
                .any(|a| matches!(a, Action::ReplicateFrom { port: 7002, .. }))
        );
    }
}
