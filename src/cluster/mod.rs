//! Cluster mode (issue 33): zwindow as a node of a Redis Cluster, beside
//! redis-server nodes, speaking the cluster bus as Redis 7.0 does. Its
//! state (the nodes, the slots, the epochs) and its bus (the links, the
//! gossip, failure detection) are built in steps; so far: the bus's wire
//! format, the node table ([`state`]) and its texts ([`nodes_conf`]:
//! nodes.conf and `CLUSTER NODES`), and the [`Cluster`] service a server
//! started with `cluster-enabled yes` holds: its node table behind a lock,
//! nodes.conf (loaded or created at startup, locked for the server's
//! lifetime, saved after every change); the cluster's health
//! (`clusterUpdateState`) is [`gossip`]'s, asked for here after a
//! command's change and every 100 ms. The bus's protocol logic is
//! [`gossip`]; its
//! sockets and tasks are the network layer's (`network::bus`), which
//! takes the actions commands submit here ([`Cluster::submit`]).
//!
//! Public so that the integration tests can play a cluster node with the
//! very bytes zwindow writes.

pub mod gossip;
pub mod nodes_conf;
pub(crate) mod route;
pub mod state;
pub(crate) mod window_sync;
pub mod wire;

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::config::{Config, OutputLimit};
use crate::pubsub::PubSub;
use state::{ClusterState, PORT_INCR};
use wire::{NODE_MASTER, NODE_MYSELF, NodeName, SLOTS};

/// The cluster service: the node table and what goes with it.
pub(crate) struct Cluster {
    inner: RwLock<Inner>,
    /// `cluster-config-file` as given (relative to `dir`, the working
    /// directory, as Redis opens it).
    path: PathBuf,
    /// Holds the `flock` on nodes.conf while the server runs
    /// (`clusterLockConfig`); never read.
    _lock: File,
    /// What commands asked the bus to do (CLUSTER FORGET's, REPLICATE's,
    /// FAILOVER's actions, PUBLISH's messages): the commands cannot reach
    /// the network layer, so the bus's driver takes them from here.
    submitted: parking_lot::Mutex<Vec<Submitted>>,
    wake: tokio::sync::Notify,
    /// What the bus counts for `CLUSTER INFO` and `CLUSTER LINKS`.
    pub(crate) stats: BusStats,
    /// The window rules shared with the other nodes. Lock order: after
    /// the keyspace's shards and after `inner`, never before either.
    pub(crate) rules: parking_lot::Mutex<window_sync::RuleSync>,
    /// Rule changes made on this node, not yet in `rules`.
    local_rules: parking_lot::Mutex<Vec<window_sync::Change>>,
}

/// What a command handed the bus ([`Cluster::submit`]).
pub(crate) enum Submitted {
    /// (Boxed: a message in flight is the common item, and small.)
    Action(Box<gossip::Action>),
    /// An [`gossip::Action::Send`], encoded and queued.
    Send(Outgoing),
}

/// A message on its way to a link's writer.
pub(crate) struct Outgoing {
    pub(crate) link: gossip::LinkId,
    pub(crate) msg_type: u16,
    pub(crate) block: Arc<Block>,
    /// What it counts for in the link's send queue ([`LinkMem::queue`]),
    /// once counted: a message for a link not yet open is counted when
    /// the bus queues it.
    pub(crate) charge: Option<usize>,
    /// Written only after the replies of the client batch that sent it
    /// (see [`crate::clients::Gate`]); None from the bus itself.
    pub(crate) after: Option<Arc<crate::clients::Gate>>,
}

/// `clusterMsg` types Redis counts (`CLUSTERMSG_TYPE_COUNT`).
pub(crate) const MSG_TYPES: usize = 11;

/// The bus's figures, kept by the network layer, shown by the commands.
pub(crate) struct BusStats {
    /// Messages sent and received by type (`stats_bus_messages_*`).
    pub(crate) sent: [AtomicU64; MSG_TYPES],
    pub(crate) received: [AtomicU64; MSG_TYPES],
    /// Links freed past `cluster-link-sendbuf-limit`.
    pub(crate) limit_exceeded: AtomicU64,
    /// `DEBUG DROP-CLUSTER-PACKET-FILTER`: messages of this type are
    /// dropped on arrival (-1: none).
    pub(crate) drop_filter: std::sync::atomic::AtomicI64,
    /// Each open link's memory, as CLUSTER LINKS and INFO show it.
    pub(crate) links: parking_lot::Mutex<HashMap<gossip::LinkId, Arc<LinkMem>>>,
    /// The bytes of the messages alive (see [`Block`]).
    blocks: Arc<AtomicUsize>,
}

/// A message as written, shared by every link it is queued on (Redis's
/// `clusterMsgSendBlock`): counted in `mem_cluster_links` once, from its
/// encoding until the last link wrote it.
pub(crate) struct Block {
    bytes: Vec<u8>,
    alive: Arc<AtomicUsize>,
}

/// `clusterMsgSendBlock`'s fields before the message (`totlen` and
/// `refcount`, padded).
const BLOCK_HEADER: usize = 16;

impl Block {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its size as Redis counts it (`msgblock->totlen`).
    fn size(&self) -> usize {
        self.bytes.len() + BLOCK_HEADER
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        self.alive.fetch_sub(self.size(), Relaxed);
    }
}

/// Encodes messages into [`Block`]s, one for a run of equal messages (a
/// broadcast: Redis builds it once for every link).
pub(crate) struct Encoder<'a> {
    stats: &'a BusStats,
    last: Option<(wire::Msg, Arc<Block>)>,
}

impl<'a> Encoder<'a> {
    pub(crate) fn new(stats: &'a BusStats) -> Encoder<'a> {
        Encoder { stats, last: None }
    }

    pub(crate) fn encode(&mut self, msg: wire::Msg) -> Result<Arc<Block>, wire::TooLarge> {
        if let Some((last, block)) = &self.last
            && *last == msg
        {
            return Ok(block.clone());
        }
        let block = Block {
            bytes: wire::encode(&msg)?,
            alive: self.stats.blocks.clone(),
        };
        self.stats.blocks.fetch_add(block.size(), Relaxed);
        let block = Arc::new(block);
        self.last = Some((msg, block.clone()));
        Ok(block)
    }
}

/// A link's memory as Redis 8.0 counts it: its send queue
/// (`send_msg_queue_mem`: the list itself, then each message queued and
/// not yet written whole, its [`Block`] and its list node) and its read
/// buffer (`rcvbuf_alloc`).
pub(crate) struct LinkMem {
    queue: AtomicUsize,
    /// Messages queued and not yet written whole: while any, Redis's
    /// write handler is set (`events` shows `w`).
    pending: AtomicUsize,
    /// The read buffer's capacity.
    pub(crate) rcvbuf: AtomicUsize,
}

/// `sizeof(list)`: an empty send queue's size.
const SEND_QUEUE_LIST: usize = 48;
/// `sizeof(listNode)`: a queued message's entry.
const LIST_NODE: usize = 24;

impl Default for LinkMem {
    fn default() -> Self {
        LinkMem {
            queue: AtomicUsize::new(SEND_QUEUE_LIST),
            pending: AtomicUsize::new(0),
            rcvbuf: AtomicUsize::new(0),
        }
    }
}

impl LinkMem {
    /// `block` joins the send queue; returns what it counts for, to give
    /// back with [`LinkMem::written`].
    pub(crate) fn queue(&self, block: &Block) -> usize {
        let charge = LIST_NODE + block.size();
        self.queue.fetch_add(charge, Relaxed);
        self.pending.fetch_add(1, Relaxed);
        charge
    }

    /// A message queued for `charge` left the queue (written whole, or
    /// never queued after all).
    pub(crate) fn written(&self, charge: usize) {
        self.queue.fetch_sub(charge, Relaxed);
        self.pending.fetch_sub(1, Relaxed);
    }

    /// `send_msg_queue_mem`: CLUSTER LINKS' `send-buffer-allocated` and
    /// `send-buffer-used`, what `cluster-link-sendbuf-limit` limits.
    pub(crate) fn send_queue(&self) -> usize {
        self.queue.load(Relaxed)
    }

    /// Whether messages wait to be written.
    pub(crate) fn writing(&self) -> bool {
        self.pending.load(Relaxed) > 0
    }

    /// What the link itself holds: its read buffer, its queue and the
    /// queue's entries (the blocks are counted apart).
    fn own(&self) -> usize {
        self.rcvbuf.load(Relaxed) + SEND_QUEUE_LIST + LIST_NODE * self.pending.load(Relaxed)
    }
}

impl Default for BusStats {
    fn default() -> Self {
        BusStats {
            sent: Default::default(),
            received: Default::default(),
            limit_exceeded: AtomicU64::new(0),
            drop_filter: std::sync::atomic::AtomicI64::new(-1),
            links: Default::default(),
            blocks: Default::default(),
        }
    }
}

impl BusStats {
    /// Counts a message of `msg_type` (types past Redis's are not).
    pub(crate) fn count(counts: &[AtomicU64; MSG_TYPES], msg_type: u16) {
        if let Some(c) = counts.get(usize::from(msg_type)) {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// `link`'s memory, while it is open.
    pub(crate) fn link(&self, link: gossip::LinkId) -> Option<Arc<LinkMem>> {
        self.links.lock().get(&link).cloned()
    }

    /// INFO's `mem_cluster_links` (`stat_cluster_links_memory`): every
    /// link's read buffer and queue, and the messages alive, each once.
    pub(crate) fn links_memory(&self) -> usize {
        let links: usize = self.links.lock().values().map(|m| m.own()).sum();
        links + self.blocks.load(Relaxed)
    }
}

/// What the lock guards.
pub(crate) struct Inner {
    /// The node table and the bus's state, the cluster's health included:
    /// [`gossip`] owns `clusterUpdateState`, whoever asks for it.
    pub(crate) state: ClusterState,
    /// `cluster-announce-ip` as last applied to myself.
    announced_ip: String,
}

impl Inner {
    fn new(state: ClusterState) -> Inner {
        Inner {
            state,
            announced_ip: String::new(),
        }
    }

    /// `server.cluster->state == CLUSTER_OK`.
    pub(crate) fn ok(&self) -> bool {
        self.state.is_ok()
    }

    /// `server.cluster->size`: primaries serving at least one slot.
    pub(crate) fn size(&self) -> usize {
        self.state.bus.size
    }

    /// Myself's name (a cluster always has one).
    pub(crate) fn myself(&self) -> NodeName {
        self.state.myself.unwrap_or(NodeName::NULL)
    }

    /// Drops the shard channels of the slots myself stopped serving
    /// since the last call, telling their subscribers (Redis's
    /// `removeChannelsInSlot`, from `clusterDelSlot`). Whoever changed the
    /// state calls it before releasing the lock, so that the slots freed
    /// are never mistaken for later ones.
    pub(crate) fn drop_lost_channels(&mut self, pubsub: &PubSub, limit: OutputLimit) {
        let lost = self.state.take_lost_slots();
        pubsub.drop_shard_slots(limit, &lost);
    }

    /// Whether myself is a replica.
    pub(crate) fn myself_is_replica(&self) -> bool {
        self.state
            .node(&self.myself())
            .is_some_and(|n| n.is_replica())
    }
}

/// A new node name: 40 random hex digits (`getRandomHexChars`).
pub(crate) fn random_name() -> NodeName {
    let mut name = [0u8; wire::NAME_LEN];
    for b in name.iter_mut() {
        *b = b"0123456789abcdef"[rand::random_range(0..16)];
    }
    NodeName(name)
}

impl Cluster {
    /// Starts cluster mode as `clusterInit`: locks nodes.conf (creating
    /// it), loads it or makes a new identity and saves it, then sets
    /// myself's ports from the settings. The error is what Redis logs
    /// before it exits 1.
    pub(crate) fn open(config: &Config) -> Result<Cluster, String> {
        let path = PathBuf::from(config.cluster_setting("cluster-config-file"));
        let lock = lock_config(&path)?;
        let now_ms = crate::clock::system_us() as i64 / 1000;
        let mut state = match nodes_conf::load_file(&path, now_ms).map_err(|e| e.log_line())? {
            Some(loaded) => {
                for line in &loaded.log {
                    tracing::info!("{line}");
                }
                loaded.state
            }
            None => {
                let mut state = ClusterState::new();
                let name = random_name();
                state.node_or_create(name).flags = NODE_MYSELF | NODE_MASTER;
                state.myself = Some(name);
                tracing::info!(
                    "No cluster configuration found, I'm {}",
                    String::from_utf8_lossy(name.as_bytes())
                );
                nodes_conf::save(&state, &path, true)
                    .map_err(|_| "Fatal: can't update cluster config file.".to_string())?;
                state
            }
        };
        let (tls_cluster, base, cluster_port) = own_ports(config);
        state.tls_cluster = tls_cluster;
        if cluster_port == 0 && base > 65535 - PORT_INCR {
            return Err("Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.".into());
        }
        if let Some(myself) = state.myself
            && let Some(node) = state.node_mut(&myself)
        {
            derive_ports(config, tls_cluster, base, cluster_port, node);
            node.hostname = config
                .cluster_setting("cluster-announce-hostname")
                .into_bytes();
            node.human_nodename = config
                .cluster_setting("cluster-announce-human-nodename")
                .into_bytes();
        }
        // As Redis 8.0's `clusterInit` sets it (7.0 said 1), until the
        // state is computed.
        state.bus.size = 0;
        Ok(Cluster {
            inner: RwLock::new(Inner::new(state)),
            path,
            _lock: lock,
            submitted: parking_lot::Mutex::new(Vec::new()),
            wake: tokio::sync::Notify::new(),
            stats: BusStats::default(),
            rules: Default::default(),
            local_rules: Default::default(),
        })
    }

    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Inner> {
        self.inner.write()
    }

    /// Hands the bus actions to carry out (see `submitted`). Their
    /// messages join their links' send queues now, as Redis's
    /// `clusterSendMessage` queues them during the command: a command
    /// after this one in the same transaction sees them in CLUSTER LINKS
    /// and INFO. They are written once the client batch whose command
    /// sent them handed its replies to its socket (its gate), as Redis
    /// writes the bus after its clients' replies.
    pub(crate) fn submit(&self, actions: Vec<gossip::Action>) {
        if actions.is_empty() {
            return;
        }
        let after = crate::clients::deferred_gate().map(|(_, gate)| gate);
        let mut encoder = Encoder::new(&self.stats);
        let items: Vec<Submitted> = actions
            .into_iter()
            .filter_map(|action| match action {
                gossip::Action::Send { link, msg } => {
                    let msg_type = msg.body.msg_type();
                    match encoder.encode(msg) {
                        Ok(block) => Some(Submitted::Send(Outgoing {
                            link,
                            msg_type,
                            charge: self.stats.link(link).map(|m| m.queue(&block)),
                            block,
                            after: after.clone(),
                        })),
                        Err(e) => {
                            tracing::warn!("cluster bus message not sent: {e}");
                            None
                        }
                    }
                }
                action => Some(Submitted::Action(Box::new(action))),
            })
            .collect();
        self.submitted.lock().extend(items);
        self.wake.notify_one();
    }

    /// A window rule set or deleted on this node (ZWINDOW SET / DEL, not
    /// its primary's stream nor a load), for the bus to version and send
    /// to every node. Queued, not done here: the command holds the
    /// keyspace's shards, and routing holds `inner` while it locks a shard,
    /// so taking `inner` here could deadlock.
    pub(crate) fn window_rule_changed(&self, change: window_sync::Change) {
        self.local_rules.lock().push(change);
        self.wake.notify_one();
    }

    /// The local rule changes queued so far, for the bus's driver.
    pub(crate) fn take_local_rules(&self) -> Vec<window_sync::Change> {
        std::mem::take(&mut *self.local_rules.lock())
    }

    /// The window rules' messages as bus actions.
    pub(crate) fn rule_messages(
        &self,
        inner: &Inner,
        sends: Vec<window_sync::Send>,
    ) -> Vec<gossip::Action> {
        sends
            .into_iter()
            .flat_map(|s| {
                inner
                    .state
                    .module_message(s.link, window_sync::MODULE_ID, s.msg_type, s.payload)
            })
            .collect()
    }

    /// The actions submitted so far, for the bus's driver.
    pub(crate) fn take_submitted(&self) -> Vec<Submitted> {
        std::mem::take(&mut *self.submitted.lock())
    }

    /// Resolves once actions were submitted (or had been since the last
    /// wait).
    pub(crate) async fn submitted(&self) {
        self.wake.notified().await
    }

    /// The settings the bus's logic reads, from the config and myself's
    /// ports as [`Cluster::cron`] derives them.
    pub(crate) fn bus_config(&self, inner: &Inner, config: &Config) -> gossip::BusConfig {
        let setting = |name: &str, default: i64| -> i64 {
            config.cluster_setting(name).parse().unwrap_or(default)
        };
        let yes = |name: &str| config.cluster_setting(name) == "yes";
        let myself = inner.state.node(&inner.myself());
        let port =
            |f: fn(&state::Node) -> i32| myself.map_or(0, |n| u16::try_from(f(n)).unwrap_or(0));
        let ip = config.cluster_setting("cluster-announce-ip");
        gossip::BusConfig {
            node_timeout: setting("cluster-node-timeout", 15000).max(1),
            ping_interval: setting("cluster-ping-interval", 0).max(0),
            announce_ip: (!ip.is_empty()).then(|| ip.into_bytes()),
            port: port(|n| n.port),
            pport: port(|n| n.pport),
            cport: port(|n| n.cport),
            hostname: config
                .cluster_setting("cluster-announce-hostname")
                .into_bytes(),
            human_nodename: config
                .cluster_setting("cluster-announce-human-nodename")
                .into_bytes(),
            replica_validity_factor: setting("cluster-replica-validity-factor", 10),
            repl_ping_replica_period: config.repl_ping_period() as i64,
            replica_no_failover: yes("cluster-replica-no-failover"),
            require_full_coverage: yes("cluster-require-full-coverage"),
            allow_replica_migration: yes("cluster-allow-replica-migration"),
            migration_barrier: setting("cluster-migration-barrier", 1),
        }
    }

    /// Writes nodes.conf from `inner` (`clusterSaveConfig`).
    pub(crate) fn save(&self, inner: &Inner, fsync: bool) -> std::io::Result<()> {
        nodes_conf::save(&inner.state, &self.path, fsync)
    }

    /// What a change does before the reply (Redis's `clusterBeforeSleep`
    /// with `CLUSTER_TODO_UPDATE_STATE|CLUSTER_TODO_SAVE_CONFIG`): the
    /// health is recomputed and nodes.conf written.
    pub(crate) fn changed(&self, inner: &mut Inner, config: &Config, now_ms: i64, fsync: bool) {
        self.update_state(inner, config, now_ms);
        if let Err(e) = self.save(inner, fsync) {
            tracing::warn!("Fatal: can't update cluster config file: {e}");
        }
    }

    /// `verifyClusterConfigWithData`, once the dataset is loaded: a
    /// primary takes the unassigned slots it has keys for, and marks as
    /// importing those another node serves; keys outside database 0 stop
    /// startup. `keys_in` counts a slot's keys.
    pub(crate) fn verify_with_data(
        &self,
        keys_in: impl Fn(u16) -> usize,
        other_dbs_used: bool,
    ) -> Result<(), String> {
        let mut inner = self.write();
        if inner.myself_is_replica() {
            return Ok(());
        }
        if other_dbs_used {
            return Err(
                "You can't have keys in a DB different than DB 0 when in Cluster mode. Exiting."
                    .into(),
            );
        }
        let me = inner.myself();
        let mut changed = false;
        for slot in 0..SLOTS as u16 {
            if keys_in(slot) == 0
                || inner.state.slot_owner(slot) == Some(&me)
                || inner.state.importing_from(slot).is_some()
            {
                continue;
            }
            changed = true;
            match inner.state.slot_owner(slot).copied() {
                None => {
                    tracing::warn!(
                        "I have keys for unassigned slot {slot}. Taking responsibility for it."
                    );
                    inner.state.add_slot(&me, slot);
                }
                Some(owner) => {
                    tracing::warn!(
                        "I have keys for slot {slot}, but the slot is assigned to another node. Setting it to importing state."
                    );
                    inner.state.set_importing(slot, Some(owner));
                }
            }
        }
        if changed {
            self.save(&inner, true)
                .map_err(|_| "Fatal: can't update cluster config file.".to_string())?;
        }
        Ok(())
    }

    /// The cluster's health recomputed (`clusterUpdateState`, the bus's
    /// own, with the settings brought up to date as the bus does before
    /// every call).
    pub(crate) fn update_state(&self, inner: &mut Inner, config: &Config, now_ms: i64) {
        inner.state.bus.config = self.bus_config(inner, config);
        inner.state.refresh_state(now_ms);
    }

    /// The periodic work that needs no bus (part of `clusterCron`): the
    /// health, so that the startup and rejoin delays run out.
    pub(crate) fn cron(&self, config: &Config, now_ms: i64) {
        let mut inner = self.write();
        // `cluster-announce-*` set at runtime (Redis applies them at once
        // or in its cron): myself's ports, hostname and human node name
        // follow, and a new name is saved (`updateAnnouncedHostname`,
        // `updateAnnouncedHumanNodename`).
        let me = inner.myself();
        let (tls_cluster, base, cluster_port) = own_ports(config);
        let hostname = config
            .cluster_setting("cluster-announce-hostname")
            .into_bytes();
        let human_nodename = config
            .cluster_setting("cluster-announce-human-nodename")
            .into_bytes();
        let ip = config.cluster_setting("cluster-announce-ip");
        let no_failover = config.cluster_setting("cluster-replica-no-failover") == "yes";
        let ip_changed = inner.announced_ip != ip;
        let mut flags_changed = false;
        if let Some(node) = inner.state.node_mut(&me) {
            derive_ports(config, tls_cluster, base, cluster_port, node);
            flags_changed = node.hostname != hostname || node.human_nodename != human_nodename;
            node.hostname = hostname;
            node.human_nodename = human_nodename;
            // `clusterUpdateMyselfIp`: the announced IP, once set or
            // cleared (then learnt again from the bus).
            if ip_changed {
                node.ip = ip.as_bytes()[..ip.len().min(state::IP_MAX)].to_vec();
            }
            // `clusterUpdateMyselfFlags`.
            let flags = if no_failover {
                node.flags | wire::NODE_NOFAILOVER
            } else {
                node.flags & !wire::NODE_NOFAILOVER
            };
            flags_changed |= flags != node.flags;
            node.flags = flags;
        }
        if ip_changed {
            inner.announced_ip = ip;
        }
        if flags_changed {
            self.changed(&mut inner, config, now_ms, false);
        }
    }
}

/// `deriveAnnouncedPorts`: myself's client, plaintext and bus ports.
fn derive_ports(
    config: &Config,
    tls_cluster: bool,
    base: i32,
    cluster_port: i32,
    node: &mut state::Node,
) {
    let setting = |name: &str| -> i32 { config.cluster_setting(name).parse().unwrap_or(0) };
    node.cport = if cluster_port != 0 {
        cluster_port
    } else {
        base + PORT_INCR
    };
    // Redis 7.2+: the plaintext and TLS ports (announced, else the
    // server's), the cluster's kind in `port`, the other in `pport`.
    let or = |announced: i32, own: i32| if announced != 0 { announced } else { own };
    let tcp = or(
        setting("cluster-announce-port"),
        config.port.load(std::sync::atomic::Ordering::Relaxed) as i32,
    );
    let tls = or(
        setting("cluster-announce-tls-port"),
        i32::from(config.tls_port()),
    );
    (node.port, node.pport) = if tls_cluster { (tls, tcp) } else { (tcp, tls) };
    let bus = setting("cluster-announce-bus-port");
    if bus != 0 {
        node.cport = bus;
    }
}

/// `clusterLockConfig`: an exclusive `flock` on nodes.conf (created if
/// missing), so that two servers never share one; Redis's texts when it
/// cannot be had.
fn lock_config(path: &std::path::Path) -> Result<File, String> {
    let shown = path.display();
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            format!(
                "Can't open {shown} in order to acquire a lock: {}",
                crate::util::strerror(&e)
            )
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "Sorry, the cluster configuration file {shown} is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files."
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!(
            "Impossible to lock {shown}: {}",
            crate::util::strerror(&e)
        )),
    }
}

/// Myself's ports as configured: whether the cluster speaks TLS, the client
/// port nodes advertise (the TLS one in a TLS cluster) and `cluster-port`
/// (0: the client port + 10000).
fn own_ports(config: &Config) -> (bool, i32, i32) {
    let tls_cluster = config.tls_setting("tls-cluster") == "yes";
    let base = if tls_cluster {
        i32::from(config.tls_port())
    } else {
        config.port.load(std::sync::atomic::Ordering::Relaxed) as i32
    };
    let cluster_port = config.cluster_setting("cluster-port").parse().unwrap_or(0);
    (tls_cluster, base, cluster_port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_names_are_hex() {
        let n = random_name();
        assert!(n.as_bytes().iter().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(random_name(), n);
    }
}
