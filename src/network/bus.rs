//! The cluster bus's network service: the sockets and tasks around the
//! sans-IO protocol logic of [`crate::cluster::gossip`], as Redis 7.0's
//! `cluster.c` runs its bus. It owns the bus listeners (`cluster-port`,
//! else the client port + 10000, on every `bind` address), one task per
//! link (inbound, or outbound from an [`Action::Connect`]) that frames the
//! peer's bytes with [`wire::decode`] and hands each message to the state
//! machine under the cluster lock, each link's write queue, and the driver
//! that runs the 100 ms cron and the actions commands submit. Every
//! [`Action`] the state machine returns is carried out here: on the links,
//! on nodes.conf, on the replication role (as REPLICAOF does), on the
//! pause (as CLIENT PAUSE WRITE), on pub/sub and on the keyspace. The
//! window rules the nodes share (`cluster::window_sync`) ride on module
//! messages: their digests go out with the cron, and the rules received
//! are applied as ZWINDOW applies them (`commands::windows::apply_shared`).
//!
//! With `tls-cluster yes` the links speak TLS (as Redis 7.0 does, the
//! accepting side asks for the peer's certificate whatever
//! `tls-auth-clients` says).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc};

use crate::cluster::gossip::{Action, LinkId};
use crate::cluster::window_sync::{self, Change, RuleSpec};
use crate::cluster::{
    Block, BusStats, Cluster, Encoder, Inner, LinkMem, Outgoing, Submitted, wire,
};
use crate::commands::Services;

/// How often the driver runs the state machine's cron (`clusterCron`).
const CRON_PERIOD: Duration = Duration::from_millis(100);
/// A read's size; the buffer grows only with the bytes that arrive.
const READ_CHUNK: usize = 16 * 1024;

/// A message in a link's write queue: its bytes, what it counts for in
/// the link's send queue, and the client batch it waits for.
struct Queued {
    block: Arc<Block>,
    charge: usize,
    after: Option<Arc<crate::clients::Gate>>,
}

/// One link's side the rest of the bus sees: its write queue and how to
/// close it.
struct LinkHandle {
    tx: mpsc::UnboundedSender<Queued>,
    /// Its send queue and read buffer, as Redis counts them.
    mem: Arc<LinkMem>,
    /// Tells the link's task to stop.
    close: Arc<Notify>,
}

/// The same link as its task holds it: the queue to drain, the memory
/// to account, the signal to stop.
struct LinkEnd {
    rx: mpsc::UnboundedReceiver<Queued>,
    mem: Arc<LinkMem>,
    close: Arc<Notify>,
}

/// The bus: the server's services and the open links.
pub(crate) struct Bus {
    shared: Arc<Services>,
    /// The server's TLS contexts, for `tls-cluster`.
    tls: Arc<super::tls::Tls>,
    links: Mutex<HashMap<LinkId, LinkHandle>>,
    /// Bumped by every failover pause and its end, so that a pause's
    /// timer lifts only its own.
    pause_generation: AtomicU64,
}

fn now_ms() -> i64 {
    crate::clock::system_us() as i64 / 1000
}

/// Starts the bus of a cluster node (`clusterInit`'s listeners): binds
/// its port on the `bind` addresses (failing startup as Redis does when it
/// cannot) and spawns the accept loops and the driver.
pub(crate) fn start(shared: &Arc<Services>, tls: Arc<super::tls::Tls>) -> Result<(), String> {
    if shared.cluster.is_none() {
        return Ok(());
    }
    let config = &shared.config;
    let base = if config.tls_setting("tls-cluster") == "yes" {
        u32::from(config.tls_port())
    } else {
        config.port.load(Relaxed)
    };
    let cport = match config.cluster_setting("cluster-port").parse::<u32>() {
        Ok(p) if p != 0 => p,
        _ => base + crate::cluster::state::PORT_INCR as u32,
    };
    let cport = u16::try_from(cport).map_err(|_| format!("Invalid cluster port {cport}"))?;
    let addrs = crate::config::bind_addrs(&config.bind());
    let listeners = super::listen::bind_tcp(&addrs, cport, config.tcp_backlog)
        .map_err(|()| format!("Failed listening on port {cport} (cluster), aborting."))?;
    let bus = Arc::new(Bus {
        shared: shared.clone(),
        tls,
        links: Mutex::new(HashMap::new()),
        pause_generation: AtomicU64::new(0),
    });
    for listener in listeners {
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let listener = TcpListener::from_std(listener).map_err(|e| e.to_string())?;
        tokio::spawn(accept_loop(bus.clone(), listener));
    }
    tokio::spawn(drive(bus));
    Ok(())
}

impl Bus {
    /// Whether links speak TLS (`tls-cluster`, read per connection).
    fn tls_cluster(&self) -> bool {
        self.shared.config.tls_setting("tls-cluster") == "yes"
    }

    fn cluster(&self) -> &Cluster {
        // `start` runs only in cluster mode, and the service stays.
        self.shared
            .cluster
            .as_ref()
            .expect("the bus runs in cluster mode")
    }

    /// Runs `f` on the state machine under the cluster lock, with its
    /// settings and the replication facts it reads brought up to date, and
    /// carries out the actions it returns once the lock is released.
    fn with_state(self: &Arc<Self>, f: impl FnOnce(&mut Inner, i64) -> Vec<Action>) {
        let actions = {
            let cluster = self.cluster();
            let mut inner = cluster.write();
            let now = now_ms();
            let config = cluster.bus_config(&inner, &self.shared.config);
            inner.state.bus.config = config;
            feed_replication(&self.shared, &mut inner, now);
            let actions = f(&mut inner, now);
            inner.drop_lost_channels(
                &self.shared.pubsub,
                self.shared.config.pubsub_output_limit(),
            );
            actions
        };
        self.apply(actions);
    }

    /// Carries out the state machine's actions, in order.
    fn apply(self: &Arc<Self>, actions: Vec<Action>) {
        let stats = &self.cluster().stats;
        let mut encoder = Encoder::new(stats);
        for action in actions {
            match action {
                Action::Connect {
                    link, ip, cport, ..
                } => {
                    let end = self.register(link);
                    tokio::spawn(connect(self.clone(), link, ip, cport, end));
                }
                Action::Send { link, msg } => self.send(&mut encoder, link, msg),
                Action::Close { link } => {
                    if let Some(h) = self.unregister(link) {
                        h.close.notify_one();
                    }
                }
                Action::SaveConfig { fsync } => {
                    let cluster = self.cluster();
                    let inner = cluster.read();
                    if let Err(e) = cluster.save(&inner, fsync) {
                        tracing::warn!("Fatal: can't update cluster config file: {e}");
                    }
                }
                // The state machine holds the health itself: only the
                // clients blocked on keys must hear of it.
                Action::StateChanged { .. } => crate::execution::redirect_blocked(&self.shared),
                Action::ReplicateFrom { ip, port } => self.replicate_from(ip, port),
                Action::BecomePrimary => {
                    if self.shared.replication.promote() {
                        tracing::info!("MASTER MODE enabled (cluster failover)");
                    }
                }
                Action::PauseWrites { until } => self.pause_writes(until),
                Action::UnpauseWrites => {
                    self.pause_generation.fetch_add(1, Relaxed);
                    self.shared.pause.hold_writes_for_failover(false);
                }
                Action::Publish {
                    channel,
                    message,
                    shard,
                } => {
                    let limit = self.shared.config.pubsub_output_limit();
                    let pubsub = &self.shared.pubsub;
                    if shard {
                        pubsub.spublish(limit, &channel, &message);
                    } else {
                        pubsub.publish(limit, &channel, &message);
                    }
                }
                Action::Module {
                    link,
                    module_id,
                    module_type,
                    payload,
                } => self.module_message(link, module_id, module_type, &payload),
                Action::DeleteKeysInSlot { slot, propagate } => {
                    let env = self.shared.env();
                    let guards = env.store.lock(env.store.all_shards());
                    let mut ks = crate::keyspace::Keyspace::new(env, guards, 0, env.clock.now_ms());
                    ks.delete_keys_in_slot(slot, propagate);
                }
            }
        }
    }

    /// A module message: the window rules' (another module's is ignored,
    /// as a Redis without that module ignores it).
    fn module_message(self: &Arc<Self>, link: LinkId, id: [u8; 8], msg_type: u8, payload: &[u8]) {
        if id != window_sync::MODULE_ID {
            return;
        }
        let received = self
            .cluster()
            .rules
            .lock()
            .on_message(link, msg_type, payload);
        let out = match received {
            Ok(out) => out,
            Err(e) => {
                tracing::warn!("window rules message from the cluster bus dropped: {e}");
                return;
            }
        };
        let patterns: Vec<Vec<u8>> = out
            .changes
            .iter()
            .map(|c| match c {
                Change::Set(rule) => rule.pattern.clone(),
                Change::Del(pattern) => pattern.clone(),
            })
            .collect();
        self.send_rules(out.sends);
        self.apply_rules(patterns, false);
    }

    /// Brings the node's rules in line with the shared table for
    /// `patterns`, on a blocking thread: it locks every shard, which a
    /// long script may hold, and the bus must keep answering meanwhile.
    fn apply_rules(&self, patterns: Vec<Vec<u8>>, local: bool) {
        if patterns.is_empty() {
            return;
        }
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || {
            crate::commands::windows::apply_shared(&shared, &patterns, local);
        });
    }

    /// Rule changes made by this node's clients: versioned in the shared
    /// table, sent to every node, kept in the config file.
    fn local_rules(self: &Arc<Self>) {
        let changes = self.cluster().take_local_rules();
        if changes.is_empty() {
            return;
        }
        let me = self.cluster().read().myself().0;
        let now = crate::util::unix_ms();
        let mut sends = Vec::new();
        let mut patterns = Vec::new();
        {
            let mut sync = self.cluster().rules.lock();
            if !sync.seeded() {
                sync.seed(self.shared.windows.list().iter().map(|r| RuleSpec::of(r)));
            }
            for change in changes {
                let out = match change {
                    Change::Set(rule) => {
                        patterns.push(rule.pattern.clone());
                        sync.local_set(me, rule, now)
                    }
                    Change::Del(pattern) => {
                        let out = sync.local_del(me, &pattern, now);
                        patterns.push(pattern);
                        out
                    }
                };
                sends.extend(out.sends);
            }
        }
        self.send_rules(sends);
        self.apply_rules(patterns, true);
    }

    /// The window rules' cron: the node's loaded rules enter the shared
    /// table once the dataset is loaded, then the digest goes out.
    fn rules_cron(self: &Arc<Self>) {
        let out = {
            let mut sync = self.cluster().rules.lock();
            if !sync.seeded() {
                if self.shared.persistence.loading.active() {
                    return;
                }
                sync.seed(self.shared.windows.list().iter().map(|r| RuleSpec::of(r)));
            }
            sync.cron(now_ms())
        };
        self.send_rules(out.sends);
    }

    fn send_rules(self: &Arc<Self>, sends: Vec<window_sync::Send>) {
        if sends.is_empty() {
            return;
        }
        let actions = {
            let cluster = self.cluster();
            let inner = cluster.read();
            cluster.rule_messages(&inner, sends)
        };
        self.apply(actions);
    }

    /// A primary in a manual failover holds writes until `until` (ms) or
    /// until told to stop (`pauseClients(PAUSE_DURING_FAILOVER, …)`): apart
    /// from CLIENT PAUSE, which neither sets nor lifts it.
    fn pause_writes(self: &Arc<Self>, until: i64) {
        let generation = self.pause_generation.fetch_add(1, Relaxed) + 1;
        self.shared.pause.hold_writes_for_failover(true);
        let wait = Duration::from_millis(u64::try_from(until - now_ms()).unwrap_or(0));
        let bus = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if bus.pause_generation.load(Relaxed) == generation {
                bus.shared.pause.hold_writes_for_failover(false);
            }
        });
    }

    /// A new link: its queue, and its memory for `CLUSTER LINKS` and
    /// INFO; the link task's end of them.
    fn register(&self, link: LinkId) -> LinkEnd {
        let (tx, rx) = mpsc::unbounded_channel();
        let handle = LinkHandle {
            tx,
            mem: Arc::new(LinkMem::default()),
            close: Arc::new(Notify::new()),
        };
        let end = LinkEnd {
            rx,
            mem: handle.mem.clone(),
            close: handle.close.clone(),
        };
        let cluster = self.cluster();
        cluster.stats.links.lock().insert(link, handle.mem.clone());
        self.links.lock().insert(link, handle);
        end
    }

    /// Forgets a link (if still known): its handle, to close it.
    fn unregister(&self, link: LinkId) -> Option<LinkHandle> {
        self.cluster().stats.links.lock().remove(&link);
        self.links.lock().remove(&link)
    }

    /// Queues `msg` on `link` (`clusterSendMessage`).
    fn send(&self, encoder: &mut Encoder<'_>, link: LinkId, msg: wire::Msg) {
        let msg_type = msg.body.msg_type();
        match encoder.encode(msg) {
            Ok(block) => self.queue(Outgoing {
                link,
                msg_type,
                block,
                charge: None,
                after: None,
            }),
            Err(e) => tracing::warn!("cluster bus message not sent: {e}"),
        }
    }

    /// Hands an encoded message to its link's writer, counted in the
    /// link's send queue until written whole.
    fn queue(&self, out: Outgoing) {
        let links = self.links.lock();
        let Some(h) = links.get(&out.link) else {
            return;
        };
        let charge = out.charge.unwrap_or_else(|| h.mem.queue(&out.block));
        let queued = Queued {
            block: out.block,
            charge,
            after: out.after,
        };
        if h.tx.send(queued).is_err() {
            h.mem.written(charge);
        } else {
            BusStats::count(&self.cluster().stats.sent, out.msg_type);
        }
    }

    /// `clusterNodeCronFreeLinkOnBufferLimitReached`, for every node's
    /// links: one whose send queue is over `cluster-link-sendbuf-limit`
    /// is freed (the cron connects again).
    fn free_links_over_limit(self: &Arc<Self>) {
        let limit = crate::config::parse_memory(
            self.shared
                .config
                .cluster_setting("cluster-link-sendbuf-limit")
                .as_bytes(),
        )
        .unwrap_or(0);
        let Ok(limit) = usize::try_from(limit) else {
            return;
        };
        if limit == 0 {
            return;
        }
        let node_links = self.cluster().read().state.node_links();
        for (link, node, inbound, _) in node_links {
            let Some(mem) = self.cluster().stats.link(link) else {
                continue;
            };
            let used = mem.send_queue();
            if used > limit {
                tracing::warn!(
                    "Freeing cluster link({} node {}, used memory: {used}) due to exceeding send buffer memory limit.",
                    if inbound { "from" } else { "to" },
                    String::from_utf8_lossy(node.as_bytes()),
                );
                self.drop_link(link);
                self.cluster().stats.limit_exceeded.fetch_add(1, Relaxed);
            }
        }
    }

    /// Closes `link` from this side (an error, a full queue) and tells the
    /// state machine, unless it closed it itself.
    fn drop_link(self: &Arc<Self>, link: LinkId) {
        let Some(h) = self.unregister(link) else {
            return;
        };
        h.close.notify_one();
        let mut inner = self.cluster().write();
        inner.state.on_link_closed(link, now_ms());
        inner.drop_lost_channels(
            &self.shared.pubsub,
            self.shared.config.pubsub_output_limit(),
        );
    }

    /// `clusterCron`'s last word: a replica (as nodes.conf says at
    /// startup) that replicates from nobody starts replicating from its
    /// primary once that primary's address is known.
    fn follow_known_primary(&self) {
        if self.shared.replication.primary().is_some() {
            return;
        }
        let target = {
            let inner = self.cluster().read();
            let me = inner.myself();
            inner
                .state
                .node(&me)
                .filter(|m| m.is_replica())
                .and_then(|m| m.primary)
                .and_then(|p| inner.state.node(&p))
                .filter(|p| p.flags & wire::NODE_NOADDR == 0 && !p.ip.is_empty())
                .map(|p| (p.ip.clone(), u16::try_from(p.port).unwrap_or(0)))
        };
        if let Some((ip, port)) = target {
            self.replicate_from(ip, port);
        }
    }

    /// `replicationSetMaster` for the cluster: as REPLICAOF host port.
    fn replicate_from(&self, ip: Vec<u8>, port: u16) {
        let host = String::from_utf8_lossy(&ip).into_owned();
        let primary = crate::replication::Primary {
            host: host.clone(),
            port,
        };
        if self.shared.replication.set_primary(primary) {
            crate::commands::replication::unblock_for_role_change(&self.shared.clients);
            tracing::info!("Connecting to MASTER {host}:{port}");
        }
    }
}

/// What the replica election reads of replication (`my_repl_offset`, the
/// data age), kept up to date before every call into the state machine.
fn feed_replication(shared: &Services, inner: &mut Inner, now: i64) {
    let repl = &shared.replication;
    inner.state.bus.my_repl_offset = i64::try_from(repl.replica_offset()).unwrap_or(i64::MAX);
    inner.state.bus.repl_data_age = if repl.is_replica() {
        // Since the last interaction with the primary, or since the link
        // went down (its last I/O is when that was).
        let last = i64::try_from(repl.link_last_io_ms.load(Relaxed)).unwrap_or(0);
        (now - last).max(0)
    } else {
        0
    };
}

/// Accepts bus connections (`clusterAcceptHandler`).
async fn accept_loop(bus: Arc<Bus>, listener: TcpListener) {
    let mut shutdown = bus.shared.shutdown_rx();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("Error accepting cluster node: {e}");
                // Out of descriptors: do not spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        tokio::spawn(accepted_link(bus.clone(), stream, peer));
    }
}

/// An accepted connection becomes a link (after the TLS handshake with
/// `tls-cluster`).
async fn accepted_link(bus: Arc<Bus>, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let local = stream
        .local_addr()
        .map(|a| a.ip().to_canonical().to_string())
        .unwrap_or_default();
    let peer_ip = peer.ip().to_canonical().to_string();
    if bus.tls_cluster() {
        let Some(ctx) = bus.tls.context() else {
            return;
        };
        let mut shutdown = bus.shared.shutdown_rx();
        let accepted = tokio::select! {
            a = super::tls::accept_peer(&ctx, stream) => a,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok(stream) => new_inbound(bus, stream, &peer_ip, &local),
            Err(e) => tracing::warn!("Error accepting cluster node connection: {e}"),
        }
    } else {
        new_inbound(bus, stream, &peer_ip, &local);
    }
}

fn new_inbound<S>(bus: Arc<Bus>, stream: S, peer_ip: &str, local: &str)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let link = {
        let mut inner = bus.cluster().write();
        inner
            .state
            .accept_link(peer_ip.as_bytes(), local.as_bytes(), now_ms())
    };
    let end = bus.register(link);
    tokio::spawn(run_link(bus, link, stream, end));
}

/// Opens an outbound link (`clusterLinkConnectHandler`): within the node
/// timeout, then the link runs as any other; on failure the state machine
/// is told, and its cron tries again.
async fn connect(bus: Arc<Bus>, link: LinkId, ip: Vec<u8>, cport: u16, end: LinkEnd) {
    let close = end.close.clone();
    let addr = std::str::from_utf8(&ip)
        .ok()
        .filter(|s| s.parse::<IpAddr>().is_ok());
    let source = bus.shared.config.bind_source_addr();
    let timeout = Duration::from_millis(
        u64::try_from(bus.cluster().read().state.bus.config.node_timeout)
            .unwrap_or(15000)
            .max(100),
    );
    let mut shutdown = bus.shared.shutdown_rx();
    let stream = match addr {
        Some(addr) => tokio::select! {
            r = tokio::time::timeout(timeout, super::outbound::connect(addr, cport, &source)) => r.ok().and_then(Result::ok),
            _ = close.notified() => return,
            _ = shutdown.changed() => return,
        },
        None => None,
    };
    let Some(stream) = stream else {
        bus.drop_link(link);
        return;
    };
    let _ = stream.set_nodelay(true);
    if bus.tls_cluster() {
        let host = String::from_utf8_lossy(&ip).into_owned();
        let handshake = tokio::select! {
            r = bus.tls.connect(&host, stream, timeout) => r,
            _ = close.notified() => return,
            _ = shutdown.changed() => return,
        };
        match handshake {
            Ok(stream) => {
                bus.with_state(|inner, now| inner.state.on_link_connected(link, now));
                run_link(bus, link, stream, end).await;
            }
            Err(e) => {
                tracing::debug!("cluster bus TLS handshake with {host}:{cport}: {e}");
                bus.drop_link(link);
            }
        }
        return;
    }
    bus.with_state(|inner, now| inner.state.on_link_connected(link, now));
    run_link(bus, link, stream, end).await;
}

/// A connected link: its writer drains the queue; the reader frames the
/// peer's messages and feeds them to the state machine, until either side
/// closes, the state machine frees the link, or the server stops.
async fn run_link<S>(bus: Arc<Bus>, link: LinkId, stream: S, end: LinkEnd)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let LinkEnd { mut rx, mem, close } = end;
    let (mut rd, mut wr) = tokio::io::split(stream);
    let write_failed = close.clone();
    let written = mem.clone();
    let writer = tokio::spawn(async move {
        while let Some(queued) = rx.recv().await {
            if let Some(gate) = &queued.after {
                gate.wait().await;
            }
            if wr.write_all(queued.block.bytes()).await.is_err() {
                write_failed.notify_one();
                return;
            }
            written.written(queued.charge);
        }
    });
    let mut shutdown = bus.shared.shutdown_rx();
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    loop {
        buf.reserve(READ_CHUNK);
        mem.rcvbuf.store(buf.capacity(), Relaxed);
        let read = tokio::select! {
            r = rd.read_buf(&mut buf) => r,
            _ = close.notified() => break,
            _ = shutdown.changed() => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if !process(&bus, link, &mut buf) {
            break;
        }
        // As Redis goes back to its initial read buffer after a message
        // that grew it.
        if buf.is_empty() && buf.capacity() > READ_CHUNK {
            buf = BytesMut::with_capacity(READ_CHUNK);
        }
    }
    writer.abort();
    bus.drop_link(link);
}

/// Feeds every whole message in `buf` to the state machine; false when
/// the stream cannot be framed (the link must go, as in Redis).
fn process(bus: &Arc<Bus>, link: LinkId, buf: &mut BytesMut) -> bool {
    loop {
        match wire::decode(buf) {
            Ok(Some((msg, len))) => {
                buf.advance(len);
                let stats = &bus.cluster().stats;
                BusStats::count(&stats.received, msg.body.msg_type());
                if i64::from(msg.body.msg_type()) == stats.drop_filter.load(Relaxed) {
                    tracing::warn!("Dropping packet that matches debug drop filter");
                    continue;
                }
                bus.with_state(|inner, now| inner.state.on_message(link, &msg, now));
            }
            Ok(None) => return true,
            Err(e) => match e.skip_len() {
                // A frame Redis drops, keeping the link.
                Some(len) if len <= buf.len() => {
                    tracing::debug!("cluster bus: {e}");
                    buf.advance(len);
                }
                _ => {
                    tracing::warn!(
                        "Bad message length or signature received on the Cluster bus: {e}"
                    );
                    return false;
                }
            },
        }
    }
}

/// The driver: the cron every 100 ms, and what commands submit.
async fn drive(bus: Arc<Bus>) {
    let mut shutdown = bus.shared.shutdown_rx();
    let mut tick = tokio::time::interval(CRON_PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                bus.free_links_over_limit();
                bus.with_state(|inner, now| inner.state.cron(now));
                bus.follow_known_primary();
                bus.rules_cron();
            }
            _ = bus.cluster().submitted() => {}
            _ = shutdown.changed() => return,
        }
        for item in bus.cluster().take_submitted() {
            match item {
                Submitted::Action(action) => bus.apply(vec![*action]),
                Submitted::Send(out) => bus.queue(out),
            }
        }
        bus.local_rules();
    }
}
