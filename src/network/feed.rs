//! A replica attached to this server: its full resync (the snapshot's RDB,
//! streamed diskless or written to `dbfilename` first), then the
//! replication stream taken from the backlog at its own pace, while its
//! `REPLCONF ACK`s are read (Redis's `syncCommand` onwards, the master
//! half of replication.c).
//!
//! The connection that sent SYNC/PSYNC turns into this feed once the
//! batch's replies are written ([`serve`]). Full resyncs are grouped as
//! Redis groups them: the first replica waiting starts a task that waits
//! `repl-diskless-sync-delay` (diskless) for others, until no other
//! snapshot runs (BGSAVE, an AOF rewrite: there is one at a time), then
//! takes one snapshot for every replica then waiting
//! ([`start_full_syncs`]).
//!
//! Redis 8.0's rdb channel: a capable replica's PSYNC that needs a full
//! resync is answered `+RDBCHANNELSYNC <client-id>` and waits
//! (`wait_bgsave`); the replica's second connection names that ID and asks
//! for the RDB only, and at its snapshot's instant the first connection
//! starts streaming from the snapshot's offset (`send_bulk_and_stream`),
//! online once the RDB is through. Rdb channels get snapshots of their
//! own, apart from other replicas' (Redis's `slave_req`).

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::sync::mpsc;

use crate::clients::ClientHandle;
use crate::commands::Services;
use crate::network::socket::{AfterRead, Socket, Wrote};
use crate::protocol::Parser;
use crate::replication::{Attach, Held, Replica, ReplicaState, SyncEvent, SyncRequest};
use crate::util::eq_ic;

/// Stream bytes taken from the backlog per write.
const TAKE: usize = 1 << 20;
/// RDB bytes per message of a diskless transfer.
const RDB_CHUNK: usize = 64 * 1024;
/// What a replica may send unread (it sends only ACKs).
const READ_LIMIT: usize = 1 << 20;
/// The feed's tick: kills, timeouts, keepalives are checked this often.
const TICK: Duration = Duration::from_millis(100);

/// Feeds the replica `attach` names over `stream` until it goes.
pub(crate) async fn serve(
    shared: &Arc<Services>,
    stream: &mut Socket,
    handle: &Arc<ClientHandle>,
    rbuf: &mut BytesMut,
    attach: Attach,
) {
    handle.role.store(crate::clients::ROLE_REPLICA, Relaxed);
    // The link reads the replica's acknowledgements into a buffer of its
    // own (a client's may be the thread's reusable one, given back).
    if rbuf.capacity() == 0 {
        rbuf.reserve(super::socket::QUERY_CHUNK);
    }
    let replica = attach.replica.clone();
    let name = format!("{}:{}", replica.ip, replica.port.load(Relaxed));
    let mut feed = Feed {
        shared,
        stream,
        handle,
        rbuf,
        replica: &replica,
        parser: Parser::new(shared.config.proto_max_bulk_len()),
        shutdown: shared.shutdown_rx(),
        tick: Box::pin(tokio::time::sleep(TICK)),
        disk_snapshot: false,
        delivered: false,
    };
    let ended = if attach.full {
        feed.full_sync(attach.pre_psync).await
    } else {
        Ok(())
    };
    let why = match ended {
        Ok(()) => feed.stream().await,
        Err(e) => e,
    };
    let feed_disk_snapshot = feed.disk_snapshot;
    if !feed.delivered
        && let Some(main) = feed.main_channel()
        && matches!(
            main.state(),
            ReplicaState::SendBulkAndStream | ReplicaState::WaitRdbChannel
        )
    {
        // The rdb channel failed: its main channel's stream is of no use
        // (Redis frees it when the snapshot fails).
        main.drop_it();
    }
    tracing::info!("Connection with replica {name} lost ({why}).");
    stop_useless_snapshot(shared, &replica, feed_disk_snapshot);
    shared
        .replication
        .detach(&replica, shared.clock.now_ms() / 1000);
    let (_, lag) = shared.config.min_replicas();
    shared.replication.refresh_good(lag, shared.clock.now_ms());
}

struct Feed<'a> {
    shared: &'a Arc<Services>,
    stream: &'a mut Socket,
    handle: &'a Arc<ClientHandle>,
    rbuf: &'a mut BytesMut,
    replica: &'a Arc<Replica>,
    parser: Parser,
    shutdown: tokio::sync::watch::Receiver<bool>,
    /// The next tick, one timer for the feed's life rather than one per
    /// wait (a busy replica waits once per event-loop pass).
    tick: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// Its full sync's snapshot is written to `dbfilename` (not streamed).
    disk_snapshot: bool,
    /// An rdb channel's RDB went whole.
    delivered: bool,
}

/// Whether `replica` takes the stream now: online, or the main channel of
/// an rdb-channel replica whose RDB is on its way.
fn streams(replica: &Replica) -> bool {
    matches!(
        replica.state(),
        ReplicaState::Online | ReplicaState::SendBulkAndStream
    )
}

/// Redis's `replicaPutOnline` for an rdb channel's main channel.
fn put_online(replica: &Replica) {
    replica.set_state(ReplicaState::Online);
    tracing::info!(
        "Synchronization with replica {}:{} succeeded",
        replica.ip,
        replica.port.load(Relaxed)
    );
}

impl Feed<'_> {
    /// An rdb channel's main channel, while attached.
    fn main_channel(&self) -> Option<Arc<Replica>> {
        let id = self.replica.main_channel?;
        self.shared
            .replication
            .replicas()
            .into_iter()
            .find(|r| r.client_id == id)
    }

    /// Why the feed must end now, if it must.
    fn stop(&self) -> Option<&'static str> {
        if self.handle.killed.load(Relaxed) {
            Some("killed")
        } else if self.replica.dropped.load(Relaxed) {
            Some("dropped")
        } else if *self.shutdown.borrow() {
            Some("shutdown")
        } else {
            None
        }
    }

    /// Writes `bytes` whole, reading what the replica sends meanwhile.
    async fn write(&mut self, bytes: &mut Vec<u8>) -> Result<(), &'static str> {
        let mut over = false;
        let wrote = self
            .stream
            .write_all_reading(
                bytes,
                &mut 0,
                &self.handle.write,
                || {},
                self.rbuf,
                true,
                |rbuf, _| {
                    over = rbuf.len() > READ_LIMIT;
                    if over {
                        AfterRead::Stop
                    } else {
                        AfterRead::Write
                    }
                },
            )
            .await;
        self.handle.write.finish();
        let stats = &self.shared.stats;
        stats
            .net_repl_output_bytes
            .fetch_add(bytes.len() as u64, Relaxed);
        match wrote {
            Ok(Wrote::All) => self.acks(),
            Ok(Wrote::InputEnded) => Err("connection closed"),
            // A replica's acknowledgements are read as the writes go on
            // (`acks`): nothing pauses this write.
            Ok(Wrote::Stopped | Wrote::Paused) | Err(_) => Err("write error"),
        }
    }

    /// Handles what the replica sent: `REPLCONF ACK <offset> [FACK n]`.
    /// Anything else would be answered, and a reply on the replication
    /// link would corrupt the replica's stream: as Redis, the replica is
    /// disconnected, its command not run (Redis runs it first; a command
    /// on the keyspace it refuses, logging the error).
    fn acks(&mut self) -> Result<(), &'static str> {
        if self.rbuf.len() > READ_LIMIT {
            return Err("too much input from a replica");
        }
        let r = &self.shared.replication;
        loop {
            let req = match self.parser.next(self.rbuf, false) {
                Ok(Some(req)) => req,
                Ok(None) => break,
                Err(_) => return Err("protocol error"),
            };
            let is_ack = req.len() >= 3
                && req.get(0).is_some_and(|a| eq_ic(a, "replconf"))
                && req.get(1).is_some_and(|a| eq_ic(a, "ack"));
            if !is_ack && !req.is_empty() {
                rogue_command(self.shared, self.handle, &crate::protocol::Args::new(req));
                return Err("it sent a command");
            }
            if is_ack {
                let offset = req
                    .get(2)
                    .and_then(crate::util::parse_i64)
                    .unwrap_or(0)
                    .max(0) as u64;
                if self.replica.state() == ReplicaState::SendBulk && !self.replica.rdb_only {
                    // A diskless replica starts its stream on its first
                    // ACK, once it has loaded the RDB (Redis's
                    // `repl_start_cmd_stream_on_ack`).
                    self.replica.set_state(ReplicaState::Online);
                }
                if self.replica.state() == ReplicaState::SendBulkAndStream {
                    // An rdb channel's main channel: the replica loaded
                    // the RDB before this side saw its transfer end.
                    put_online(self.replica);
                }
                // `FACK <offset>` (7.2+): how far its AOF is fsynced.
                let fack = (req.len() >= 5 && req.get(3).is_some_and(|a| eq_ic(a, "fack")))
                    .then(|| req.get(4).and_then(crate::util::parse_i64))
                    .flatten()
                    .map(|n| n.max(0) as u64);
                r.ack(self.replica, offset, fack, self.shared.clock.now_ms());
                let (_, lag) = self.shared.config.min_replicas();
                r.refresh_good(lag, self.shared.clock.now_ms());
            }
        }
        let consumed = self.parser.consumed();
        bytes::Buf::advance(self.rbuf, consumed);
        self.parser.discard(consumed);
        Ok(())
    }

    /// Waits for input, a wake-up, the tick or the gate the stream is
    /// held at (see `Replication::take`); reads what came.
    async fn idle(&mut self) -> Result<(), &'static str> {
        let wake = self.replica.wake.notified();
        tokio::pin!(wake);
        // Registered before the check: a write in between wakes it.
        wake.as_mut().enable();
        let held = match self.shared.replication.held(self.replica) {
            // A write, or the gate it was held at opened, since `take`.
            Held::Ready if streams(self.replica) => return Ok(()),
            Held::Gate(gate) => Some(gate),
            _ => None,
        };
        let opened = async {
            match &held {
                Some(gate) => gate.wait().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wake => Ok(()),
            _ = opened => Ok(()),
            _ = self.tick.as_mut() => {
                let next = tokio::time::Instant::now() + TICK;
                self.tick.as_mut().reset(next);
                Ok(())
            }
            read = self.stream.read_buf(self.rbuf) => match read {
                Ok(0) | Err(_) => Err("connection closed"),
                Ok(n) => {
                    self.shared.stats.net_repl_input_bytes.fetch_add(n as u64, Relaxed);
                    self.acks()
                }
            },
        }
    }

    /// The full resync: queued for the next snapshot, `+FULLRESYNC` at its
    /// instant, then the RDB (`$EOF:` streamed, or `$len` from the file).
    async fn full_sync(&mut self, pre_psync: bool) -> Result<(), &'static str> {
        // Few RDB chunks wait per replica (256 KB): Redis's child writes
        // to the socket, and the primary's memory holds none of the RDB.
        let (tx, mut rx) = mpsc::channel(4);
        enqueue(self.shared, self.replica.clone(), tx);
        let mut keepalive = Instant::now();
        let mark: [u8; 40] =
            std::array::from_fn(|_| b"0123456789abcdef"[rand::random_range(0..16)]);
        let mut streaming = false;
        let mut soft_since = None;
        loop {
            if let Some(why) = self.stop() {
                return Err(why);
            }
            // The stream since the snapshot waits for it meanwhile, and
            // counts against its output limit as in Redis.
            if let Some(why) = self.over_limits(&mut soft_since) {
                return Err(why);
            }
            let event = tokio::select! {
                ev = rx.recv() => match ev {
                    Some(ev) => Some(ev),
                    None => return Err("the snapshot ended"),
                },
                r = self.idle() => { r?; None }
            };
            let Some(event) = event else {
                // Newlines keep the replica's connection alive while it
                // waits for the snapshot (Redis's replicationCron).
                if !streaming
                    && keepalive.elapsed() >= Duration::from_secs(1)
                    && !self.shared.cron_held()
                {
                    keepalive = Instant::now();
                    self.write(&mut b"\n".to_vec()).await?;
                }
                continue;
            };
            match event {
                SyncEvent::Start {
                    replid,
                    offset,
                    to_file,
                } => {
                    self.disk_snapshot = to_file;
                    if !pre_psync {
                        let line = format!("+FULLRESYNC {replid} {offset}\r\n");
                        self.write(&mut line.into_bytes()).await?;
                    }
                    if !to_file {
                        streaming = true;
                        let mut head = b"$EOF:".to_vec();
                        head.extend_from_slice(&mark);
                        head.extend_from_slice(b"\r\n");
                        self.write(&mut head).await?;
                    }
                }
                SyncEvent::Data(bytes) => self.write(&mut bytes.to_vec()).await?,
                SyncEvent::End(Err(_)) => return Err("the snapshot failed"),
                SyncEvent::End(Ok(None)) => {
                    self.write(&mut mark.to_vec()).await?;
                    if self.replica.rdb_only {
                        // It closes the connection once it has loaded the
                        // RDB; its main channel has the stream now.
                        self.replica.set_state(ReplicaState::SendBulk);
                        self.delivered = true;
                        tracing::info!(
                            "RDB transfer completed, rdb only replica ({}:{}) should be disconnected asap",
                            self.replica.ip,
                            self.replica.port.load(Relaxed)
                        );
                        if let Some(main) = self.main_channel()
                            && main.state() == ReplicaState::SendBulkAndStream
                        {
                            put_online(&main);
                        }
                        return Ok(());
                    }
                    // Its stream starts on its first ACK (see `acks`).
                    self.replica.set_state(ReplicaState::SendBulk);
                    tracing::info!(
                        "Streamed RDB transfer with replica {}:{} succeeded (socket). Waiting for REPLCONF ACK from replica to enable streaming",
                        self.replica.ip,
                        self.replica.port.load(Relaxed)
                    );
                    return Ok(());
                }
                SyncEvent::End(Ok(Some(path))) => {
                    self.replica.set_state(ReplicaState::SendBulk);
                    self.send_file(&path).await?;
                    if self.replica.rdb_only {
                        // REPLCONF rdb-only (redis-cli --rdb): no stream.
                        tracing::info!(
                            "RDB transfer completed, rdb only replica ({}:{}) should be disconnected asap",
                            self.replica.ip,
                            self.replica.port.load(Relaxed)
                        );
                        return Ok(());
                    }
                    self.replica.set_state(ReplicaState::Online);
                    tracing::info!(
                        "Synchronization with replica {}:{} succeeded",
                        self.replica.ip,
                        self.replica.port.load(Relaxed)
                    );
                    return Ok(());
                }
            }
        }
    }

    /// `$<len>\r\n` and the file's bytes.
    async fn send_file(&mut self, path: &std::path::Path) -> Result<(), &'static str> {
        let mut file = std::fs::File::open(path).map_err(|_| "can't open the RDB")?;
        let len = file.metadata().map_err(|_| "can't stat the RDB")?.len();
        self.write(&mut format!("${len}\r\n").into_bytes()).await?;
        let mut left = len;
        while left > 0 {
            if let Some(why) = self.stop() {
                return Err(why);
            }
            let mut chunk = vec![0u8; (left as usize).min(RDB_CHUNK * 4)];
            file.read_exact(&mut chunk)
                .map_err(|_| "can't read the RDB")?;
            left -= chunk.len() as u64;
            self.write(&mut chunk).await?;
        }
        Ok(())
    }

    /// The stream, from the replica's offset on, as it grows.
    async fn stream(&mut self) -> &'static str {
        // The bytes of one write, copied once from the backlog.
        let mut out = Vec::new();
        let why = self.stream_into(&mut out).await;
        drop(out);
        self.hold(0);
        why
    }

    /// Records that the writer holds `bytes` copied out of the backlog:
    /// replica output memory, which eviction does not count (INFO's
    /// `mem_clients_slaves` while the replica is attached).
    fn hold(&self, bytes: usize) {
        let before = self.replica.copied.swap(bytes, Relaxed);
        let all = &self.shared.replication.copied;
        if bytes >= before {
            all.fetch_add(bytes - before, Relaxed);
        } else {
            all.fetch_sub(before - bytes, Relaxed);
        }
    }

    async fn stream_into(&mut self, out: &mut Vec<u8>) -> &'static str {
        let r = &self.shared.replication;
        let mut soft_since: Option<Instant> = None;
        loop {
            if let Some(why) = self.stop() {
                return why;
            }
            if let Some(why) = self.over_limits(&mut soft_since) {
                return why;
            }
            if !streams(self.replica) {
                if let Err(why) = self.idle().await {
                    return why;
                }
                continue;
            }
            // Behind the connections that are ready: what their batches
            // feed goes out in this one write, as Redis writes a replica's
            // output once per event-loop pass, not once per client (a
            // task woken by a connection would otherwise run right after
            // it, tokio's LIFO slot).
            tokio::task::yield_now().await;
            out.clear();
            let Some(n) = r.take(self.replica, TAKE, out) else {
                return "its offset is no longer in the backlog";
            };
            if n == 0 {
                // Asleep: the next bytes fed wake it (once per burst;
                // while it writes, it is not woken: it takes again first).
                if let Err(why) = self.idle().await {
                    return why;
                }
                continue;
            }
            self.hold(out.capacity());
            if let Err(why) = self.write(out).await {
                return why;
            }
            // A burst's buffer is not kept past it.
            if out.capacity() > TAKE {
                *out = Vec::new();
                self.hold(0);
            }
        }
    }

    /// `client-output-buffer-limit replica`: what the replica has yet to
    /// take, against the hard and the soft limit; and `repl-timeout`
    /// without an ACK.
    fn over_limits(&self, soft_since: &mut Option<Instant>) -> Option<&'static str> {
        let limit = self.shared.config.replica_output_limit();
        let lag = self.shared.replication.lag_bytes(self.replica);
        let scheduled = || {
            self.handle.output_limit_closed.store(true, Relaxed);
            tracing::warn!(
                "Client id={} addr={} laddr={} scheduled to be closed ASAP for overcoming of output buffer limits.",
                self.handle.id,
                self.handle.addr,
                self.handle.laddr
            );
        };
        // A hard limit below `repl-backlog-size` is taken as that size
        // (Redis's `checkClientOutputBufferLimits`): what a replica may
        // continue from with +CONTINUE must not get it disconnected.
        let hard = match limit.hard {
            0 => 0,
            h => h.max(self.shared.config.repl_backlog_size()),
        };
        if hard > 0 && lag >= hard {
            scheduled();
            return Some("output buffer limit");
        }
        if limit.soft > 0 && lag >= limit.soft {
            let since = soft_since.get_or_insert_with(Instant::now);
            if since.elapsed().as_secs() >= limit.soft_secs {
                scheduled();
                return Some("output buffer limit");
            }
        } else {
            *soft_since = None;
        }
        let acked = self.replica.ack_time_ms.load(Relaxed);
        let timeout_ms = self.shared.config.repl_timeout() * 1000;
        if self.replica.state() == ReplicaState::Online
            && acked > 0
            && self.shared.clock.now_ms().saturating_sub(acked) > timeout_ms
        {
            tracing::warn!(
                "Disconnecting timedout replica (streaming sync): {}:{}",
                self.replica.ip,
                self.replica.port.load(Relaxed)
            );
            return Some("timeout");
        }
        None
    }
}

/// Logs a command a replica sent that would have been answered, as
/// Redis's `logInvalidUseAndFreeClientAsync` does.
fn rogue_command(shared: &Services, handle: &ClientHandle, args: &crate::protocol::Args<'_>) {
    let name = match crate::commands::resolve(args) {
        Ok(cmd) => {
            use crate::spec::flags::{MAY_REPLICATE, READONLY, WRITE};
            let name = crate::commands::full_name(args, cmd);
            if cmd.has(READONLY) || cmd.has(WRITE) || cmd.has(MAY_REPLICATE) {
                tracing::warn!(
                    "== CRITICAL == This master is sending an error to its replica: 'Replica can't interact with the keyspace' after processing the command '{name}'"
                );
            }
            name
        }
        Err(_) => "<unknown>".to_string(),
    };
    let who = crate::commands::connection::client_info_line(shared, handle);
    tracing::warn!("Replica generated a reply to command '{name}', disconnecting it: {who}");
}

/// Redis's `freeClient` of a replica waiting for a snapshot to a file:
/// when no other replica waits for it and no save point wants the file,
/// the snapshot stops (Redis kills its child), so it spends no more time
/// and the next full sync can start at once.
fn stop_useless_snapshot(shared: &Services, replica: &Replica, disk_snapshot: bool) {
    // Waiting for a snapshot that started: `wait_bgsave` with its stream's
    // start set (Redis's SLAVE_STATE_WAIT_BGSAVE_END).
    let waits_for_it =
        |r: &Replica| r.state() == ReplicaState::WaitBgsave && r.next.load(Relaxed) != u64::MAX;
    if !disk_snapshot
        || !waits_for_it(replica)
        || !shared.config.save_points().is_empty()
        || !shared.persistence.bgsave_in_progress.load(Relaxed)
    {
        return;
    }
    let others = shared.replication.replicas();
    if others
        .iter()
        .any(|r| !std::ptr::eq(&**r, replica) && waits_for_it(r))
    {
        return;
    }
    shared.persistence.bgsave_abort.store(true, Relaxed);
}

/// Queues a replica for the next full-resync snapshot and makes sure a
/// task will start it.
fn enqueue(shared: &Arc<Services>, replica: Arc<Replica>, tx: mpsc::Sender<SyncEvent>) {
    let r = &shared.replication;
    let mut queue = r.sync_queue.lock();
    let Err(tx) = r.join_disk_sync(&replica, tx) else {
        return;
    };
    queue.push(SyncRequest {
        replica,
        tx,
        since: Instant::now(),
    });
    drop(queue);
    if !r.sync_starter.swap(true, Relaxed) {
        tokio::spawn(start_full_syncs(shared.clone()));
    }
}

/// Starts the snapshots that waiting replicas need, as Redis's
/// `replicationCron` / `replicationStartPendingFork`: diskless, after
/// `repl-diskless-sync-delay` seconds from the first one waiting (or once
/// `repl-diskless-sync-max-replicas` wait); one snapshot serves all that
/// wait then. Ends when nobody waits.
async fn start_full_syncs(shared: Arc<Services>) {
    let r = &shared.replication;
    // The first look is at once: without a delay to wait for, Redis's
    // SYNC starts the snapshot in the command itself.
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::time::sleep(TICK).await;
        }
        let config = &shared.config;
        let ready = {
            let mut q = r.sync_queue.lock();
            // Replicas that went while waiting need no snapshot.
            q.retain(|w| !w.tx.is_closed() && !w.replica.dropped.load(Relaxed));
            if q.is_empty() {
                r.sync_starter.store(false, Relaxed);
                // One that arrived after the check finds the flag clear
                // and starts a task of its own.
                return;
            }
            // Rdb channels and the others are served by snapshots of their
            // own (Redis's `slave_req` must match): the first waiting
            // decides which this one is.
            let rdb_channel = q[0].replica.main_channel.is_some();
            let group = |w: &SyncRequest| w.replica.main_channel.is_some() == rdb_channel;
            let diskless = (config.repl_diskless_sync() || rdb_channel)
                && q.iter().filter(|w| group(w)).all(|w| w.replica.capa_eof);
            let delay = Duration::from_secs(config.repl_diskless_sync_delay());
            let max = config.repl_diskless_sync_max_replicas() as usize;
            let waited = q
                .iter()
                .map(|w| w.since.elapsed())
                .max()
                .unwrap_or_default();
            let due = !diskless
                || waited >= delay
                || (max > 0 && q.iter().filter(|w| group(w)).count() >= max);
            let busy = shared.persistence.bgsave_in_progress.load(Relaxed)
                || shared.aof.rewrite_in_progress.load(Relaxed);
            (due && !busy).then(|| {
                let (these, rest): (Vec<_>, Vec<_>) =
                    std::mem::take(&mut *q).into_iter().partition(group);
                *q = rest;
                (these, diskless)
            })
        };
        let Some((waiting, diskless)) = ready else {
            continue;
        };
        let shared2 = shared.clone();
        let started = tokio::task::spawn_blocking(move || begin(&shared2, waiting, diskless)).await;
        if matches!(started, Ok(true)) {
            r.debug_pause_at(crate::replication::PAUSE_AFTER_FORK);
        } else {
            tracing::warn!("Can't start the snapshot for a full resync; retrying");
        }
    }
}

/// The snapshot's instant for `waiting` (every shard held), then its save
/// on the saver thread: to the replicas' sockets, or to `dbfilename`.
fn begin(shared: &Arc<Services>, waiting: Vec<SyncRequest>, diskless: bool) -> bool {
    let r = &shared.replication;
    let env = shared.env();
    let mut guards = env.store.lock(env.store.all_shards());
    let replicas: Vec<Arc<Replica>> = waiting.iter().map(|w| w.replica.clone()).collect();
    let sync = r.begin_full_sync(&replicas);
    let (replid, offset) = (sync.replid.clone(), sync.offset);
    let txs: Vec<mpsc::Sender<SyncEvent>> = waiting.into_iter().map(|w| w.tx).collect();
    for tx in &txs {
        let _ = tx.blocking_send(SyncEvent::Start {
            replid: replid.clone(),
            offset,
            to_file: !diskless,
        });
    }
    let host: Arc<dyn crate::persistence::Host> = shared.clone();
    let (target, done): (crate::persistence::SaveTarget, crate::persistence::SaveDone) = if diskless
    {
        let ends = txs.clone();
        (
            crate::persistence::SaveTarget::Stream(Box::new(Broadcast {
                txs,
                buf: Vec::with_capacity(RDB_CHUNK),
            })),
            Box::new(move |result| {
                for tx in ends {
                    let _ = tx.blocking_send(SyncEvent::End(result.clone().map(|()| None)));
                }
            }),
        )
    } else {
        let path = shared.config.rdb_path();
        // Replicas that ask meanwhile join it until its end is announced.
        r.open_disk_sync(crate::replication::DiskSync {
            replid: replid.clone(),
            offset,
            txs,
            joinable: replicas.iter().any(|r| !r.rdb_only),
        });
        let owner = shared.clone();
        (
            crate::persistence::SaveTarget::File,
            Box::new(move |result| {
                let txs = owner
                    .replication
                    .disk_sync
                    .lock()
                    .take()
                    .map(|sync| sync.txs)
                    .unwrap_or_default();
                for tx in txs {
                    let _ = tx
                        .blocking_send(SyncEvent::End(result.clone().map(|()| Some(path.clone()))));
                }
            }),
        )
    };
    let rdb_channel = replicas.iter().any(|r| r.main_channel.is_some());
    tracing::info!(
        "Starting BGSAVE for SYNC with target: {}{}",
        if diskless { "replicas sockets" } else { "disk" },
        if rdb_channel { " (rdb-channel)" } else { "" }
    );
    match crate::persistence::start_save(host, guards.iter_mut(), target, sync.save_info, done) {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("BGSAVE for replication failed: {e}");
            r.disk_sync.lock().take();
            false
        }
    }
}

/// The RDB writer of a diskless transfer: chunks to every replica's feed,
/// each waiting (so a slow replica slows the save, as a full pipe slows
/// Redis's child). Fails once every replica went.
struct Broadcast {
    txs: Vec<mpsc::Sender<SyncEvent>>,
    buf: Vec<u8>,
}

impl Broadcast {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buf,
            Vec::with_capacity(RDB_CHUNK),
        ));
        self.txs
            .retain(|tx| tx.blocking_send(SyncEvent::Data(chunk.clone())).is_ok());
        if self.txs.is_empty() {
            return Err(std::io::Error::other("no replica left"));
        }
        Ok(())
    }
}

impl std::io::Write for Broadcast {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= RDB_CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

impl Drop for Broadcast {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

/// Replication's part of the server cron, once a second: the PING every
/// `repl-ping-replica-period` seconds into the stream, the good replicas
/// recounted, the backlog freed after `repl-backlog-ttl` alone.
pub(crate) fn cron(shared: &Services, seconds: u64) {
    let r = &shared.replication;
    let config = &shared.config;
    let now_ms = shared.clock.now_ms();
    let (_, lag) = config.min_replicas();
    r.refresh_good(lag, now_ms);
    let period = config.repl_ping_period().max(1);
    if seconds.is_multiple_of(period) && !r.replicas().is_empty() {
        r.feed_command(&[b"PING"]);
    }
    r.set_backlog_size(config.repl_backlog_size());
    r.cron(now_ms / 1000, config.repl_backlog_ttl());
}

/// FAILOVER's progress (Redis's `updateFailoverStatus`), ten times a
/// second: once the target (or, without one, any replica) has
/// acknowledged everything, this server becomes its replica, and its
/// PSYNC carries `FAILOVER`; past the timeout it gives up, or with FORCE
/// hands over anyway.
pub(crate) fn failover_cron(shared: &Services) {
    let r = &shared.replication;
    let mut guard = r.failover.lock();
    let Some(f) = guard.as_mut() else {
        return;
    };
    if f.in_progress {
        return;
    }
    let now = shared.clock.now_ms();
    let offset = r.offset();
    if f.end_ms > 0 && now >= f.end_ms {
        if f.force
            && let Some(target) = f.target.clone()
        {
            tracing::info!(
                "FAILOVER to {}:{} time out exceeded, failing over.",
                target.host,
                target.port
            );
            f.in_progress = true;
            drop(guard);
            hand_over(shared, target);
        } else {
            drop(guard);
            r.abort_failover(
                &shared.pause,
                &shared.config,
                "Replica never caught up before timeout",
            );
        }
        return;
    }
    let caught_up = |rep: &Replica| {
        rep.state() == ReplicaState::Online && rep.ack_offset.load(Relaxed) == offset
    };
    let target =
        match &f.target {
            Some(t) => r
                .find_replica(&t.host, t.port)
                .filter(|rep| caught_up(rep))
                .map(|_| t.clone()),
            None => r.replicas().iter().find(|rep| caught_up(rep)).map(|rep| {
                crate::replication::Primary {
                    host: rep.shown_ip(),
                    port: rep.port.load(Relaxed) as u16,
                }
            }),
        };
    if let Some(target) = target {
        tracing::info!(
            "Failover target {}:{} is synced, failing over.",
            target.host,
            target.port
        );
        f.target = Some(target.clone());
        f.in_progress = true;
        drop(guard);
        hand_over(shared, target);
    }
}

/// FAILOVER's handover: this server replicates its target now.
fn hand_over(shared: &Services, target: crate::replication::Primary) {
    shared
        .config
        .set_replicaof(Some((&target.host, target.port)));
    shared.replication.set_primary(target);
    crate::commands::replication::unblock_for_role_change(&shared.clients);
}
