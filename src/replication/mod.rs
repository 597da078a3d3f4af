//! Replication's state, shared by both roles: the replication IDs and
//! offset, the backlog, the replicas attached to this server, and the
//! link to this server's primary when it is a replica (Redis 7.0's PSYNC2).
//!
//! As a primary, this is a [`Sink`] of the propagated stream, the one the
//! AOF receives: each execution unit is encoded (with a `SELECT` when its
//! database differs from the stream's), appended to the backlog, and the
//! replicas' writers (`network::feed`) are woken to take it from there at
//! their own pace. One stream, one offset space: a zwindow replica gets
//! every command; for a redis-server replica the writer swaps zwindow's
//! own commands for what they amount to in Redis 7.0 plus `PING`s of the
//! same byte length ([`compat`]), so offsets agree whoever replicates.
//!
//! As a replica, the link (`network::link`) applies the primary's stream
//! and appends the same bytes here ([`Replication::feed_raw`]), so its
//! own replicas and its backlog carry the primary's stream verbatim, and
//! a promoted replica keeps the old ID as `replid2` for the others to
//! continue from.

pub(crate) mod backlog;
pub(crate) mod compat;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::clients::Gate;
use crate::keyspace::propagate::{Op, Sink};
pub(crate) use crate::protocol::encode_command as encode;
use backlog::Backlog;

/// A replication ID: 40 hex digits.
pub(crate) type ReplId = String;

pub(crate) fn random_replid() -> ReplId {
    (0..40)
        .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
        .collect()
}

/// The ID Redis prints for "none" (`replid2` of a server that never
/// changed ID).
pub(crate) fn null_replid() -> ReplId {
    "0".repeat(40)
}

/// An attached replica's progress, as INFO names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ReplicaState {
    /// Waiting for the snapshot its full sync will send.
    WaitBgsave = 0,
    /// Receiving the RDB.
    SendBulk = 1,
    /// Receiving the stream.
    Online = 2,
    /// The main channel of an rdb-channel replica (Redis 8.0), told
    /// `+RDBCHANNELSYNC` and waiting for its rdb channel's snapshot.
    WaitRdbChannel = 3,
    /// That main channel while the rdb channel gets the RDB: it gets the
    /// stream from the snapshot's offset meanwhile.
    SendBulkAndStream = 4,
}

impl ReplicaState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitBgsave | ReplicaState::WaitRdbChannel => "wait_bgsave",
            ReplicaState::SendBulk => "send_bulk",
            ReplicaState::Online => "online",
            ReplicaState::SendBulkAndStream => "send_bulk_and_stream",
        }
    }
}

/// A replica attached to this server, as the primary sees it.
pub(crate) struct Replica {
    /// Its connection's client ID.
    pub(crate) client_id: u64,
    /// The address it connected from (ip only).
    pub(crate) ip: String,
    /// `REPLCONF listening-port` (0 until told).
    pub(crate) port: AtomicUsize,
    /// `REPLCONF ip-address`, when announced.
    pub(crate) announced_ip: Mutex<Option<String>>,
    state: AtomicU8,
    /// The offset its last `REPLCONF ACK` reported.
    pub(crate) ack_offset: AtomicU64,
    /// The offset up to which its last `REPLCONF ACK … FACK` said its AOF
    /// is fsynced (Redis's `repl_aof_off`): what WAITAOF counts.
    pub(crate) aof_offset: AtomicU64,
    /// When that ACK arrived (ms, the server's clock).
    pub(crate) ack_time_ms: AtomicU64,
    /// The next offset its writer will take from the backlog: everything
    /// from it on is kept for it.
    pub(crate) next: AtomicU64,
    /// `REPLCONF capa eof`: it takes a diskless `$EOF:` transfer.
    pub(crate) capa_eof: bool,
    /// `REPLCONF capa zwindow`: it runs zwindow's own commands.
    pub(crate) capa_zwindow: bool,
    /// `REPLCONF capa rdb-channel-repl`, which only Redis 8.0+ replicas
    /// send: it runs Redis 8.0's commands (hash field TTLs, HSETEX).
    pub(crate) capa_redis8: bool,
    /// `REPLCONF rdb-only 1`: it wants the RDB and no stream.
    pub(crate) rdb_only: bool,
    /// `REPLCONF rdb-channel 1` and `main-ch-client-id`: the rdb channel
    /// of the replica whose main channel is this client ID.
    pub(crate) main_channel: Option<u64>,
    /// Told to go (output limit, REPLICAOF, shutdown): its writer ends.
    pub(crate) dropped: AtomicBool,
    pub(crate) wake: Notify,
    /// The bytes its writer holds, copied out of the backlog (its write
    /// buffer's capacity): replica output, like the shared buffer's part
    /// beyond the backlog (Redis's replicas reference the shared buffer
    /// instead of copying it).
    pub(crate) copied: AtomicUsize,
    /// Its writer found nothing to take and waits for bytes: the next
    /// feed wakes it, and clears this, so a burst of writes wakes it once
    /// rather than once per write ([`Replication::wake_replicas`]). Read
    /// and written under the replication lock only.
    asleep: AtomicBool,
}

impl Replica {
    pub(crate) fn state(&self) -> ReplicaState {
        match self.state.load(Relaxed) {
            0 => ReplicaState::WaitBgsave,
            1 => ReplicaState::SendBulk,
            3 => ReplicaState::WaitRdbChannel,
            4 => ReplicaState::SendBulkAndStream,
            _ => ReplicaState::Online,
        }
    }

    pub(crate) fn set_state(&self, s: ReplicaState) {
        self.state.store(s as u8, Relaxed);
    }

    pub(crate) fn drop_it(&self) {
        self.dropped.store(true, Relaxed);
        self.wake.notify_one();
    }

    /// The address it is shown under: its announced IP, else the one it
    /// connected from.
    pub(crate) fn shown_ip(&self) -> String {
        self.announced_ip
            .lock()
            .clone()
            .unwrap_or_else(|| self.ip.clone())
    }

    /// Seconds since its last ACK once online (Redis's `lag`), else 0.
    pub(crate) fn lag_secs(&self, now_secs: u64) -> u64 {
        if self.state() == ReplicaState::Online {
            now_secs.saturating_sub(self.ack_time_ms.load(Relaxed) / 1000)
        } else {
            0
        }
    }
}

/// What a replica told with REPLCONF before its SYNC/PSYNC (kept on its
/// client until then).
#[derive(Debug, Default, Clone)]
pub(crate) struct ReplicaCapa {
    pub(crate) port: usize,
    pub(crate) ip: Option<String>,
    pub(crate) eof: bool,
    pub(crate) psync2: bool,
    pub(crate) zwindow: bool,
    /// `capa rdb-channel-repl`: a Redis 8.0+ replica.
    pub(crate) redis8: bool,
    /// `capa rdb-channel-repl` while this server's `repl-rdb-channel` and
    /// `repl-diskless-sync` are on: a full sync is answered
    /// `+RDBCHANNELSYNC` (Redis's `SLAVE_CAPA_RDB_CHANNEL_REPL`).
    pub(crate) rdb_channel_repl: bool,
    /// `REPLCONF rdb-only 1`.
    pub(crate) rdb_only: bool,
    /// `REPLCONF rdb-channel 1`: this connection is an rdb channel.
    pub(crate) rdb_channel: bool,
    /// `REPLCONF main-ch-client-id`: its main channel's client ID.
    pub(crate) main_ch: Option<u64>,
}

/// The link to this server's primary, when it is a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkState {
    /// Not connected yet (or reconnecting).
    Connect,
    Connecting,
    /// Handshake in progress.
    Handshake,
    /// Receiving the RDB of a full sync.
    Transfer,
    /// Streaming.
    Connected,
}

/// Where this server's primary is, when it is a replica.
#[derive(Debug, Clone)]
pub(crate) struct Primary {
    pub(crate) host: String,
    pub(crate) port: u16,
}

/// The replication state (one per server).
pub(crate) struct Replication {
    inner: Mutex<Inner>,
    /// Whether propagated commands are taken (a primary with a backlog).
    listening: AtomicBool,
    /// `master_repl_offset`, readable without the lock.
    offset: AtomicU64,
    /// Woken when a replica's ACK arrived (WAIT).
    pub(crate) acked: Notify,
    /// Clients blocked in WAIT or WAITAOF (counted in INFO's
    /// `blocked_clients`, as Redis counts them).
    pub(crate) waiting: AtomicUsize,
    /// Full resyncs, accepted and refused partial ones (INFO stats).
    pub(crate) sync_full: AtomicU64,
    pub(crate) sync_partial_ok: AtomicU64,
    pub(crate) sync_partial_err: AtomicU64,
    /// Woken when REPLICAOF changes the primary (the network layer's link
    /// supervisor, `network::link`, restarts the link).
    pub(crate) primary_changed: Notify,
    /// As a replica: the link's figures for INFO (`network::link` keeps
    /// them): the last time anything came from the primary (ms), the
    /// stream offset read so far (`slave_read_repl_offset`), since when
    /// the link is down (seconds, 0: up or never), and a full sync's
    /// transfer (bytes expected, -1 for `$EOF:`; bytes read).
    pub(crate) link_last_io_ms: AtomicU64,
    pub(crate) read_offset: AtomicU64,
    pub(crate) link_down_since: AtomicU64,
    pub(crate) transfer_size: std::sync::atomic::AtomicI64,
    pub(crate) transfer_read: AtomicU64,
    /// Replicas waiting for a full resync's snapshot, and whether a task
    /// that starts it runs (`network::feed`).
    pub(crate) sync_queue: Mutex<Vec<SyncRequest>>,
    pub(crate) sync_starter: AtomicBool,
    /// The snapshot to a file that replicas wait for, while it is made:
    /// a replica asking for a full resync meanwhile joins it.
    pub(crate) disk_sync: Mutex<Option<DiskSync>>,
    /// What every replica's writer holds copied out of the backlog
    /// ([`Replica::copied`]), those of replicas already detached but whose
    /// writer has not ended yet included: not counted by eviction, as Redis
    /// does not count the shared buffer it has yet to free.
    pub(crate) copied: AtomicUsize,
    /// `repl-backlog-size`, as the sink reads it (set when a replica
    /// attaches, at startup and by the cron after CONFIG SET).
    backlog_size: AtomicU64,
    /// FAILOVER's state (None: `no-failover`).
    pub(crate) failover: Mutex<Option<Failover>>,
    /// Whether a primary is set (mirrors `Inner::primary`).
    replica_flag: AtomicBool,
    /// As a replica: whether this server's ID and offset are a history
    /// the primary may continue (`PSYNC replid offset+1`), or it must ask
    /// for a full sync (`PSYNC ? -1`): Redis's `cached_master` being set.
    /// A server that starts as a replica has none unless its RDB file
    /// carried one; a master turned replica has its own.
    history: AtomicBool,
    /// The database the primary's stream last selected, as the link
    /// applies it (Redis's `server.master->db`), -1: no link; for the
    /// `repl-stream-db` a save writes.
    pub(crate) stream_db: std::sync::atomic::AtomicI64,
    /// What the main channel buffered of the stream while the rdb
    /// channel's RDB loads (Redis 8.0's `replica_full_sync_buffer_size`,
    /// in its 1 MB blocks), and the most it ever held (`_peak`).
    pub(crate) full_sync_buffer: AtomicU64,
    pub(crate) full_sync_buffer_peak: AtomicU64,
    /// DEBUG REPL-PAUSE's points (`PAUSE_*` bits) where the process
    /// stops itself (SIGSTOP) until a test continues it.
    pub(crate) debug_pause: AtomicU8,
    /// The rdb channel's load must stop (its main channel failed).
    pub(crate) load_abort: AtomicBool,
    /// Online replicas whose last ACK is within `min-replicas-max-lag`
    /// (Redis's `repl_good_slaves_count`), refreshed on every ACK and
    /// each second.
    good_replicas: AtomicUsize,
}

struct Inner {
    replid: ReplId,
    replid2: ReplId,
    /// The offset up to which `replid2` is valid (Redis's
    /// `second_replid_offset`), -1: none.
    second_offset: i64,
    backlog: Option<Backlog>,
    /// The positions of the stream's zwindow commands and what a
    /// redis-server replica receives there instead (same length), and
    /// whether a Redis 8.0 replica needs it too (the command is newer than
    /// 8.0 or zwindow's own) or runs the command itself.
    patches: std::collections::VecDeque<(u64, Bytes, bool)>,
    /// The database the stream last selected (Redis's `slaveseldb`).
    seldb: Option<usize>,
    replicas: Vec<Arc<Replica>>,
    /// Since when no replica is attached (seconds, for repl-backlog-ttl).
    alone_since: Option<u64>,
    primary: Option<Primary>,
    link: LinkState,
    /// The sink's encoding buffer, reused.
    scratch: Vec<u8>,
    /// Where the writes of batches whose replies have not left yet start
    /// in the stream, in order (see [`Replication::take`]).
    gates: std::collections::VecDeque<(u64, Arc<Gate>)>,
    /// Some replica's writer is `asleep`: the one thing a write checks
    /// while every writer is busy.
    asleep: bool,
}

/// See [`Replication::held`].
pub(crate) enum Held {
    /// There are bytes to take.
    Ready,
    /// Nothing new.
    Idle,
    /// The next bytes wait for this batch's replies.
    Gate(Arc<Gate>),
}

impl Inner {
    /// Where the first write at or past `from` whose batch's replies have
    /// not left starts. Entries before `from` are of a stream replaced
    /// since (a new history), and hold nothing back.
    fn held_at(&self, from: u64) -> Option<(u64, &Arc<Gate>)> {
        self.gates
            .iter()
            .find(|(at, gate)| *at >= from && !gate.is_open())
            .map(|(at, gate)| (*at, gate))
    }
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            inner: Mutex::new(Inner {
                replid: random_replid(),
                replid2: null_replid(),
                second_offset: -1,
                backlog: None,
                patches: Default::default(),
                seldb: None,
                replicas: Vec::new(),
                alone_since: None,
                primary: None,
                link: LinkState::Connect,
                scratch: Vec::new(),
                gates: Default::default(),
                asleep: false,
            }),
            listening: AtomicBool::new(false),
            offset: AtomicU64::new(0),
            acked: Notify::new(),
            waiting: AtomicUsize::new(0),
            sync_full: AtomicU64::new(0),
            sync_partial_ok: AtomicU64::new(0),
            sync_partial_err: AtomicU64::new(0),
            primary_changed: Notify::new(),
            link_last_io_ms: AtomicU64::new(0),
            read_offset: AtomicU64::new(0),
            link_down_since: AtomicU64::new(0),
            transfer_size: std::sync::atomic::AtomicI64::new(0),
            transfer_read: AtomicU64::new(0),
            good_replicas: AtomicUsize::new(0),
            replica_flag: AtomicBool::new(false),
            sync_queue: Mutex::new(Vec::new()),
            sync_starter: AtomicBool::new(false),
            disk_sync: Mutex::new(None),
            failover: Mutex::new(None),
            copied: AtomicUsize::new(0),
            backlog_size: AtomicU64::new(1 << 20),
            history: AtomicBool::new(true),
            stream_db: std::sync::atomic::AtomicI64::new(-1),
            full_sync_buffer: AtomicU64::new(0),
            full_sync_buffer_peak: AtomicU64::new(0),
            debug_pause: AtomicU8::new(0),
            load_abort: AtomicBool::new(false),
        }
    }
}

/// DEBUG REPL-PAUSE after-fork: once a replication snapshot has started.
pub(crate) const PAUSE_AFTER_FORK: u8 = 1 << 1;
/// DEBUG REPL-PAUSE before-rdb-channel: before the rdb channel's PSYNC.
pub(crate) const PAUSE_BEFORE_RDB_CHANNEL: u8 = 1 << 2;
/// DEBUG REPL-PAUSE on-streaming-repl-buf: while the stream buffered
/// during an rdb-channel sync is applied.
pub(crate) const PAUSE_ON_STREAMING_REPL_BUF: u8 = 1 << 3;

impl Replication {
    /// Stops the process here if DEBUG REPL-PAUSE asked for `point`
    /// (Redis's `debugPauseProcess`: SIGSTOP, continued by SIGCONT).
    pub(crate) fn debug_pause_at(&self, point: u8) {
        if self.debug_pause.load(Relaxed) & point != 0 {
            tracing::info!("Process is about to stop.");
            // SAFETY: raise has no memory-safety preconditions.
            unsafe { libc::raise(libc::SIGSTOP) };
            tracing::info!("Process has been continued.");
        }
    }
}

/// The replicas INFO and ROLE list: an rdb channel whose main channel is
/// attached is not listed apart (Redis's `replicationCheckHasMainChannel`).
fn logical_replicas(all: &[Arc<Replica>]) -> Vec<Arc<Replica>> {
    all.iter()
        .filter(|r| {
            r.main_channel
                .is_none_or(|id| !all.iter().any(|m| m.client_id == id))
        })
        .cloned()
        .collect()
}

/// What a replica waiting for a full resync hears from its snapshot job.
pub(crate) enum SyncEvent {
    /// The snapshot's instant: `+FULLRESYNC replid offset`; whether the
    /// RDB goes to a file (sent with its length once made) rather than
    /// to the replicas' sockets.
    Start {
        replid: ReplId,
        offset: u64,
        to_file: bool,
    },
    /// RDB bytes of a diskless transfer.
    Data(Bytes),
    /// The RDB is complete: streamed (None) or in this file (disk-based);
    /// or the save failed.
    End(Result<Option<std::path::PathBuf>, String>),
}

/// A snapshot to a file for replicas, while it is made: what a replica
/// that joins it needs (its instant, and where the end is announced).
pub(crate) struct DiskSync {
    pub(crate) replid: ReplId,
    pub(crate) offset: u64,
    pub(crate) txs: Vec<tokio::sync::mpsc::Sender<SyncEvent>>,
    /// Whether replicas that ask now may join it (see
    /// `Replication::open_disk_sync`).
    pub(crate) joinable: bool,
}

/// Whether a replica may share a snapshot made for others: not an
/// rdb-only request (no stream) nor an rdb channel's (served alone).
fn may_join(replica: &Replica) -> bool {
    !replica.rdb_only && replica.main_channel.is_none()
}

/// `replica` joins `sync`: its stream starts at the snapshot's offset, and
/// it hears the snapshot's start now and its end with the others.
fn admit(sync: &mut DiskSync, replica: &Replica, tx: tokio::sync::mpsc::Sender<SyncEvent>) {
    replica.next.store(sync.offset + 1, Relaxed);
    // A fresh channel: room for the first event.
    let _ = tx.try_send(SyncEvent::Start {
        replid: sync.replid.clone(),
        offset: sync.offset,
        to_file: true,
    });
    sync.txs.push(tx);
    tracing::info!("Waiting for end of BGSAVE for SYNC");
}

/// A replica waiting for a full resync's snapshot to start.
pub(crate) struct SyncRequest {
    pub(crate) replica: Arc<Replica>,
    pub(crate) tx: tokio::sync::mpsc::Sender<SyncEvent>,
    pub(crate) since: std::time::Instant,
}

/// A FAILOVER in progress (Redis's `failover_state` and its target).
#[derive(Debug, Clone)]
pub(crate) struct Failover {
    /// The replica to hand over to (None: the first that catches up).
    pub(crate) target: Option<Primary>,
    pub(crate) force: bool,
    /// When waiting for the sync gives up (ms; 0: never).
    pub(crate) end_ms: u64,
    /// The handover started: this server is the target's replica now
    /// and its PSYNC carries `FAILOVER`.
    pub(crate) in_progress: bool,
}

/// A connection that SYNC/PSYNC turned into a replica's feed.
pub(crate) struct Attach {
    pub(crate) replica: Arc<Replica>,
    /// A full resync (else the stream continues from `replica.next`).
    pub(crate) full: bool,
    /// Plain SYNC: the old protocol, no `+FULLRESYNC` line.
    pub(crate) pre_psync: bool,
}

impl std::fmt::Debug for Attach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Attach(client {}, full {})",
            self.replica.client_id, self.full
        )
    }
}

/// What a PSYNC request gets.
pub(crate) enum Psync {
    /// `+CONTINUE`: the stream from this offset on.
    Continue { from: u64, replid: ReplId },
    /// A full resync.
    Full,
}

/// A full resync's instant: `+FULLRESYNC replid offset`, and what the
/// RDB records of replication at that offset (Redis's `rsi`).
pub(crate) struct FullSync {
    pub(crate) replid: ReplId,
    pub(crate) offset: u64,
    pub(crate) save_info: Option<(usize, ReplId, u64)>,
}

/// A snapshot of the figures INFO and ROLE print.
pub(crate) struct Figures {
    pub(crate) replid: ReplId,
    pub(crate) replid2: ReplId,
    pub(crate) offset: u64,
    pub(crate) second_offset: i64,
    /// (first byte offset, histlen), when a backlog exists.
    pub(crate) backlog: Option<(u64, u64)>,
    pub(crate) replicas: Vec<Arc<Replica>>,
    pub(crate) primary: Option<Primary>,
    pub(crate) link: LinkState,
}

impl Replication {
    /// `master_repl_offset`.
    pub(crate) fn offset(&self) -> u64 {
        self.offset.load(Relaxed)
    }

    /// A unit the AOF took while no backlog or replica takes the stream
    /// (Redis's `replicationFeedSlaves` moves `master_repl_offset` by one
    /// per propagated command then, which WAITAOF and the AOF manifest's
    /// offsets follow): `commands` commands, MULTI and EXEC included. A
    /// replica's offset is its primary's.
    pub(crate) fn advance_without_backlog(&self, commands: u64) {
        if self.listening.load(Relaxed) {
            return;
        }
        let g = self.inner.lock();
        if g.backlog.is_none() && g.replicas.is_empty() && g.primary.is_none() {
            self.offset.fetch_add(commands, Relaxed);
        }
    }

    /// After the AOF was loaded at startup (Redis's
    /// `updateReplOffsetAndResetEndOffset`): the offset its manifest says
    /// the last incremental file reached. No replica or backlog exists yet.
    pub(crate) fn set_offset_after_aof_load(&self, offset: u64) {
        let g = self.inner.lock();
        if g.backlog.is_none() && g.replicas.is_empty() {
            self.offset.store(offset, Relaxed);
        }
    }

    pub(crate) fn figures(&self) -> Figures {
        let g = self.inner.lock();
        Figures {
            replid: g.replid.clone(),
            replid2: g.replid2.clone(),
            offset: self.offset(),
            second_offset: g.second_offset,
            backlog: g.backlog.as_ref().map(|b| (b.first(), b.histlen())),
            replicas: logical_replicas(&g.replicas),
            primary: g.primary.clone(),
            link: g.link,
        }
    }

    /// The shared replication buffer's memory, split as Redis 7.0 splits
    /// it (`getMemoryOverheadData`, `freeMemoryGetNotCountedMemory`).
    pub(crate) fn buffer_memory(&self) -> BufferMemory {
        let g = self.inner.lock();
        let total = g.backlog.as_ref().map_or(0, |b| b.memory());
        let size = usize::try_from(self.backlog_size.load(Relaxed)).unwrap_or(usize::MAX);
        // Beyond `repl-backlog-size`, the buffer is held for the replicas
        // that have not taken it yet: theirs while any is attached.
        let (replicas, backlog) = if !g.replicas.is_empty() && total > size {
            (total - size, size)
        } else {
            (0, total)
        };
        // Eviction counts the backlog up to its size (and its chunks'
        // bookkeeping), never what replicas hold beyond it, so a slow
        // replica cannot make the primary evict its data.
        let bookkeeping = (size / backlog::CHUNK + 1) * size_of::<(u64, bytes::Bytes)>();
        let attached: usize = g.replicas.iter().map(|r| r.copied.load(Relaxed)).sum();
        let not_counted =
            total.saturating_sub(size.saturating_add(bookkeeping)) + self.copied.load(Relaxed);
        BufferMemory {
            total,
            backlog,
            replicas: replicas + attached,
            not_counted,
        }
    }

    pub(crate) fn replid(&self) -> ReplId {
        self.inner.lock().replid.clone()
    }

    /// DEBUG CHANGE-REPL-ID: a new ID, and no second one (Redis's
    /// `changeReplicationId` + `clearReplicationId2`).
    pub(crate) fn change_replid(&self) {
        let mut g = self.inner.lock();
        g.replid = random_replid();
        g.replid2 = null_replid();
        g.second_offset = -1;
    }

    /// Whether this server is a replica (REPLICAOF host port).
    pub(crate) fn primary(&self) -> Option<Primary> {
        self.inner.lock().primary.clone()
    }

    pub(crate) fn link_state(&self) -> LinkState {
        self.inner.lock().link
    }

    pub(crate) fn set_link_state(&self, s: LinkState) {
        self.inner.lock().link = s;
    }

    /// The replicas attached now.
    pub(crate) fn replicas(&self) -> Vec<Arc<Replica>> {
        self.inner.lock().replicas.clone()
    }

    /// Makes sure a backlog exists (Redis's `createReplicationBacklog`,
    /// when the first replica attaches or this server becomes a replica).
    fn ensure_backlog(&self, g: &mut Inner) {
        if g.backlog.is_none() {
            g.backlog = Some(Backlog::new(self.offset() + 1));
            g.patches.clear();
            // The first command after a backlog is created selects its
            // database.
            g.seldb = None;
        }
        self.listening
            .store(g.primary.is_none(), std::sync::atomic::Ordering::Release);
    }

    /// A replica's PSYNC `replid offset`: continue if the ID is ours (or
    /// our previous one up to where it was valid) and the backlog still
    /// holds `offset` (Redis's `masterTryPartialResynchronization`).
    pub(crate) fn try_partial(&self, replid: &[u8], offset: i64) -> Psync {
        let g = self.inner.lock();
        let ours = replid == g.replid.as_bytes();
        let previous = replid == g.replid2.as_bytes() && offset <= g.second_offset;
        if !(ours || previous) || offset < 0 {
            return Psync::Full;
        }
        match &g.backlog {
            Some(b) if b.covers(offset as u64) => Psync::Continue {
                from: offset as u64,
                replid: g.replid.clone(),
            },
            _ => Psync::Full,
        }
    }

    /// Attaches a replica whose stream starts at `from` (a partial
    /// resync) or, with None, at the offset of the snapshot its full sync
    /// will take (set then by [`Replication::begin_full_sync`]).
    pub(crate) fn attach(&self, client_id: u64, ip: String, capa: &ReplicaCapa) -> Arc<Replica> {
        let r = Arc::new(Replica {
            client_id,
            ip,
            port: AtomicUsize::new(capa.port),
            announced_ip: Mutex::new(capa.ip.clone()),
            state: AtomicU8::new(ReplicaState::WaitBgsave as u8),
            ack_offset: AtomicU64::new(0),
            aof_offset: AtomicU64::new(0),
            ack_time_ms: AtomicU64::new(0),
            next: AtomicU64::new(u64::MAX),
            capa_eof: capa.eof,
            capa_zwindow: capa.zwindow,
            capa_redis8: capa.redis8,
            rdb_only: capa.rdb_only,
            main_channel: capa.main_ch.filter(|_| capa.rdb_channel),
            dropped: AtomicBool::new(false),
            wake: Notify::new(),
            copied: AtomicUsize::new(0),
            asleep: AtomicBool::new(false),
        });
        let mut g = self.inner.lock();
        self.ensure_backlog(&mut g);
        g.alone_since = None;
        g.replicas.push(r.clone());
        r
    }

    /// Starts `replica`'s stream at `from` (partial resync).
    pub(crate) fn start_stream(&self, replica: &Replica, from: u64) {
        replica.next.store(from, Relaxed);
        replica.set_state(ReplicaState::Online);
    }

    /// The instant of a full sync's snapshot (the caller holds every
    /// shard): the stream of `replicas` starts after what was fed so far,
    /// with a `SELECT`. Returns (replid, offset) for `+FULLRESYNC`.
    pub(crate) fn begin_full_sync(&self, replicas: &[Arc<Replica>]) -> FullSync {
        let mut g = self.inner.lock();
        self.ensure_backlog(&mut g);
        g.seldb = None;
        let offset = self.offset();
        // They stay `wait_bgsave` while the snapshot is made (streamed
        // to them, diskless, as Redis's child does), as in Redis.
        for r in replicas {
            // An rdb-only replica gets no stream: nothing is kept for it.
            if !r.rdb_only {
                r.next.store(offset + 1, Relaxed);
            }
            // An rdb channel's main channel gets the stream from here on,
            // while the RDB goes over the rdb channel (Redis's
            // `replicationSetupSlaveForFullResync`).
            if let Some(id) = r.main_channel {
                match g
                    .replicas
                    .iter()
                    .find(|m| m.client_id == id && m.state() == ReplicaState::WaitRdbChannel)
                {
                    Some(main) => {
                        main.next.store(offset + 1, Relaxed);
                        main.set_state(ReplicaState::SendBulkAndStream);
                        main.wake.notify_one();
                        tracing::info!(
                            "Starting to deliver RDB and replication stream to replica: {}:{}",
                            main.ip,
                            main.port.load(Relaxed)
                        );
                    }
                    None => tracing::warn!(
                        "Starting to deliver RDB to replica {}:{} but it has no associated main channel",
                        r.ip,
                        r.port.load(Relaxed)
                    ),
                }
            }
        }
        FullSync {
            replid: g.replid.clone(),
            offset,
            // Read with the offset: the RDB's `repl-stream-db` must be the
            // database the stream after `offset` is in.
            save_info: self.save_info_locked(&g),
        }
    }

    /// A snapshot to a file for replicas starts: replicas that asked since
    /// their queue was taken join it now, later ones as they ask
    /// ([`Self::join_disk_sync`]), if `DiskSync::joinable`: one it was
    /// made for takes the stream (the backlog then holds it from the
    /// snapshot's offset). Its end is announced to all (`DiskSync::txs`).
    pub(crate) fn open_disk_sync(&self, mut sync: DiskSync) {
        let mut queue = self.sync_queue.lock();
        let mut current = self.disk_sync.lock();
        if sync.joinable {
            let (late, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut *queue)
                .into_iter()
                .partition(|w| may_join(&w.replica) && !w.tx.is_closed());
            *queue = rest;
            for w in late {
                admit(&mut sync, &w.replica, w.tx);
            }
        }
        *current = Some(sync);
    }

    /// Redis's `syncCommand` while a BGSAVE to disk runs for other
    /// replicas: `replica` joins it (its stream starts at the snapshot's
    /// offset, which the backlog still holds for those others), rather
    /// than waiting for a snapshot of its own. Gives `tx` back when it
    /// cannot: no such snapshot, or not one it may share (an rdb-only or
    /// rdb-channel request is served alone, as Redis's `slave_req` must
    /// match). The caller holds `sync_queue`'s lock, so a snapshot that
    /// opens meanwhile finds it in the queue.
    pub(crate) fn join_disk_sync(
        &self,
        replica: &Arc<Replica>,
        tx: tokio::sync::mpsc::Sender<SyncEvent>,
    ) -> Result<(), tokio::sync::mpsc::Sender<SyncEvent>> {
        let mut current = self.disk_sync.lock();
        match current.as_mut() {
            Some(sync) if sync.joinable && may_join(replica) => {
                admit(sync, replica, tx);
                Ok(())
            }
            _ => Err(tx),
        }
    }

    /// Detaches a replica (its connection ended).
    pub(crate) fn detach(&self, replica: &Replica, now_secs: u64) {
        let mut g = self.inner.lock();
        g.replicas.retain(|r| !std::ptr::eq(&**r, replica));
        if g.replicas.is_empty() {
            g.alone_since = Some(now_secs);
        }
        // What only it still needed goes now.
        self.append(&mut g, &[], self.backlog_size.load(Relaxed));
        drop(g);
        self.acked.notify_waiters();
    }

    /// Detaches the replica whose connection is client `client_id`, if
    /// one is (CLIENT KILL: Redis frees a killed replica at once, so INFO
    /// right after counts neither it nor what only it still needed).
    pub(crate) fn detach_client(&self, client_id: u64, now_secs: u64) {
        let found = self
            .inner
            .lock()
            .replicas
            .iter()
            .find(|r| r.client_id == client_id)
            .cloned();
        if let Some(r) = found {
            r.drop_it();
            self.detach(&r, now_secs);
        }
    }

    /// Up to `max` bytes of the stream from `replica.next`, appended to
    /// `out`, for a replica of kind `zwindow` (else with zwindow's commands
    /// swapped: see [`compat`]); 0 when it has everything. None when the
    /// backlog no longer holds its offset (it fell too far behind).
    ///
    /// Redis's order across connections: a command's reply never leaves
    /// later than what it caused another client to receive, a replica
    /// included (there a reader could see a write whose writer has no
    /// reply yet). A batch's writes reach the backlog as they run, while
    /// its replies leave at its end (after a script, say): so the stream
    /// stops where a batch's writes start until that batch's gate opens
    /// ([`Replication::held`] tells which).
    ///
    /// A take that finds nothing leaves the writer asleep: the next feed
    /// wakes it (`replica.wake`).
    pub(crate) fn take(&self, replica: &Replica, max: usize, out: &mut Vec<u8>) -> Option<usize> {
        let mut g = self.inner.lock();
        let from = replica.next.load(Relaxed);
        while g.gates.front().is_some_and(|(_, gate)| gate.is_open()) {
            g.gates.pop_front();
        }
        let max = match g.held_at(from) {
            Some((at, _)) => max.min(at.saturating_sub(from) as usize),
            None => max,
        };
        let b = g.backlog.as_ref()?;
        if !b.covers(from) {
            return None;
        }
        let start = out.len();
        let n = b.read_into(from, max, out);
        if !replica.capa_zwindow && n > 0 && !g.patches.is_empty() {
            compat::apply_patches(&g.patches, from, &mut out[start..], replica.capa_redis8);
        }
        replica.next.store(from + n as u64, Relaxed);
        if n == 0 {
            replica.asleep.store(true, Relaxed);
            g.asleep = true;
        }
        Some(n)
    }

    /// What `replica`'s stream waits for now: whether
    /// [`Replication::take`] would give it bytes, or it is held at a gate.
    pub(crate) fn held(&self, replica: &Replica) -> Held {
        let g = self.inner.lock();
        let from = replica.next.load(Relaxed);
        match g.held_at(from) {
            Some((at, gate)) if at == from => Held::Gate(gate.clone()),
            _ if from <= self.offset() => Held::Ready,
            _ => Held::Idle,
        }
    }

    /// Bytes `replica` has still to take.
    pub(crate) fn lag_bytes(&self, replica: &Replica) -> u64 {
        let next = replica.next.load(Relaxed);
        if next == u64::MAX {
            return 0;
        }
        (self.offset() + 1).saturating_sub(next)
    }

    /// Appends encoded stream bytes (the lock held), moving the offset and
    /// trimming what no replica needs past `repl-backlog-size`.
    fn append(&self, g: &mut Inner, bytes: &[u8], backlog_size: u64) {
        let Some(b) = g.backlog.as_mut() else {
            return;
        };
        b.append(bytes);
        self.offset.fetch_add(bytes.len() as u64, Relaxed);
        if b.may_trim(backlog_size) {
            Self::trim(g, backlog_size);
        }
    }

    /// Drops what no replica needs past `backlog_size` (the lock held).
    fn trim(g: &mut Inner, backlog_size: u64) {
        // A replica told to go needs nothing more.
        let keep_from = g
            .replicas
            .iter()
            .filter(|r| !r.dropped.load(Relaxed))
            .map(|r| r.next.load(Relaxed))
            .min()
            .unwrap_or(u64::MAX);
        let Some(b) = g.backlog.as_mut() else {
            return;
        };
        b.trim(backlog_size, keep_from);
        let first = b.first();
        while g.patches.front().is_some_and(|(at, _, _)| *at < first) {
            g.patches.pop_front();
        }
    }

    /// Wakes the writers that wait for bytes (the lock held). A writer
    /// is `asleep` from a take that found nothing (under this lock, so
    /// no byte falls between the two), and is woken once: one busy
    /// writing takes what came meanwhile before it waits again, so a
    /// burst of writes costs it one wake-up, not one each (Redis writes
    /// a replica's output once per event-loop pass).
    fn wake_replicas(&self, g: &mut Inner) {
        if !std::mem::take(&mut g.asleep) {
            return;
        }
        for r in &g.replicas {
            if r.asleep.swap(false, Relaxed) {
                r.wake.notify_one();
            }
        }
    }

    /// The backlog size to keep (`repl-backlog-size`), set by the server.
    /// A smaller size trims the backlog at once (Redis's
    /// `resizeReplicationBacklog`): a replica's PSYNC right after must not
    /// continue from what the new size no longer keeps.
    pub(crate) fn set_backlog_size(&self, size: u64) {
        if self.backlog_size.swap(size, Relaxed) > size {
            let mut g = self.inner.lock();
            Self::trim(&mut g, size);
        }
    }

    /// One command of this server's own (PING, `REPLCONF GETACK *`) into
    /// the stream, with no `SELECT`.
    pub(crate) fn feed_command(&self, argv: &[&[u8]]) {
        let mut g = self.inner.lock();
        if g.backlog.is_none() || g.primary.is_some() {
            return;
        }
        let mut bytes = Vec::new();
        encode(&mut bytes, argv);
        self.append(&mut g, &bytes, self.backlog_size.load(Relaxed));
        self.wake_replicas(&mut g);
    }

    /// As a replica: bytes of the primary's stream that were applied, into
    /// the backlog and on to this server's own replicas (Redis's
    /// `replicationFeedStreamFromMasterStream`); `db`: the master client's
    /// database after them.
    pub(crate) fn feed_raw(&self, bytes: &[u8], db: usize) {
        let mut g = self.inner.lock();
        if g.backlog.is_none() {
            let next = self.offset() + 1;
            g.backlog = Some(Backlog::new(next));
        }
        self.append(&mut g, bytes, self.backlog_size.load(Relaxed));
        // The database the stream is in after these bytes, with them (a
        // full resync of our own replicas reads both at once).
        self.stream_db.store(db as i64, Relaxed);
        self.wake_replicas(&mut g);
    }

    /// As a replica, after a full sync from a primary with ID `replid` at
    /// `offset`: this server's history is the primary's now (Redis's
    /// `replicationCreateMasterClient` after `readSyncBulkPayload`): its
    /// ID and offset, no second ID, a fresh backlog; its own replicas
    /// resync.
    pub(crate) fn synced_from(&self, replid: &str, offset: u64) {
        let replicas = {
            let mut g = self.inner.lock();
            g.replid = replid.to_string();
            g.replid2 = null_replid();
            g.second_offset = -1;
            self.offset.store(offset, Relaxed);
            g.backlog = Some(Backlog::new(offset + 1));
            g.patches.clear();
            g.seldb = None;
            self.history.store(true, Relaxed);
            std::mem::take(&mut g.replicas)
        };
        for r in replicas {
            r.drop_it();
        }
    }

    /// As a replica, `+CONTINUE newid`: the primary's ID changed (it was
    /// promoted); ours follows, the old one valid up to here as
    /// `replid2` (so our replicas continue too).
    pub(crate) fn continue_with(&self, replid: &str) {
        let replicas = {
            let mut g = self.inner.lock();
            if g.replid == replid {
                return;
            }
            g.replid2 = std::mem::replace(&mut g.replid, replid.to_string());
            g.second_offset = self.offset() as i64 + 1;
            // Our own replicas must hear of the new ID: they reconnect
            // and continue (Redis's `disconnectSlaves`).
            std::mem::take(&mut g.replicas)
        };
        for r in replicas {
            r.drop_it();
        }
    }

    /// REPLICAOF host port: this server becomes (or moves) a replica.
    /// Its replicas stay, as in Redis 7.0 (`replicationSetMaster`): if the
    /// new primary continues our history they continue too; a new ID
    /// ([`Replication::continue_with`]) or a full sync's load
    /// ([`Replication::drop_replicas`]) lets them go. Returns false if it
    /// already replicates that primary.
    pub(crate) fn set_primary(&self, primary: Primary) -> bool {
        {
            let mut g = self.inner.lock();
            if g.primary
                .as_ref()
                .is_some_and(|p| p.host == primary.host && p.port == primary.port)
            {
                return false;
            }
            g.primary = Some(primary);
            self.replica_flag.store(true, Relaxed);
            g.link = LinkState::Connect;
            self.listening.store(false, Relaxed);
        }
        self.acked.notify_waiters();
        self.primary_changed.notify_waiters();
        true
    }

    /// A full sync is about to load: the history so far ends (Redis's
    /// `replicationAttachToNewMaster`): no PSYNC continues it, and our
    /// replicas, whose data is about to be replaced, reconnect and resync.
    pub(crate) fn drop_replicas(&self) {
        self.forget_history();
        let replicas = std::mem::take(&mut self.inner.lock().replicas);
        for r in replicas {
            r.drop_it();
        }
    }

    /// REPLICAOF NO ONE: a primary again; the history so far stays valid
    /// for replicas of the old primary as `replid2` (Redis's
    /// `shiftReplicationId`). Our own replicas are let go, to hear of the
    /// new ID: they reconnect and continue (Redis's
    /// `replicationUnsetMaster`). Returns false if it was not a replica.
    pub(crate) fn promote(&self) -> bool {
        let mut g = self.inner.lock();
        if g.primary.take().is_none() {
            return false;
        }
        self.replica_flag.store(false, Relaxed);
        g.replid2 = std::mem::replace(&mut g.replid, random_replid());
        g.second_offset = self.offset() as i64 + 1;
        g.link = LinkState::Connect;
        g.seldb = None;
        let listening = g.backlog.is_some();
        self.listening.store(listening, Relaxed);
        let replicas = std::mem::take(&mut g.replicas);
        drop(g);
        for r in replicas {
            r.drop_it();
        }
        self.primary_changed.notify_waiters();
        true
    }

    /// The replication cron's part (once a second): a backlog nobody used
    /// for `repl-backlog-ttl` seconds goes (a primary only; 0: never).
    pub(crate) fn cron(&self, now_secs: u64, ttl_secs: u64) {
        let mut g = self.inner.lock();
        if g.primary.is_some() || ttl_secs == 0 || !g.replicas.is_empty() {
            return;
        }
        if let Some(since) = g.alone_since
            && g.backlog.is_some()
            && now_secs.saturating_sub(since) >= ttl_secs
        {
            // A new ID: nobody can continue the history we no longer hold.
            g.replid = random_replid();
            g.replid2 = null_replid();
            g.second_offset = -1;
            g.backlog = None;
            g.patches.clear();
            self.listening.store(false, Relaxed);
        }
    }

    /// Replicas whose last ACK covers `offset`.
    pub(crate) fn acked_count(&self, offset: u64) -> usize {
        self.inner
            .lock()
            .replicas
            .iter()
            .filter(|r| r.state() == ReplicaState::Online && r.ack_offset.load(Relaxed) >= offset)
            .count()
    }

    /// Replicas whose last FACK covers `offset` (Redis's
    /// `replicationCountAOFAcksByOffset`).
    pub(crate) fn aof_acked_count(&self, offset: u64) -> usize {
        self.inner
            .lock()
            .replicas
            .iter()
            .filter(|r| r.state() == ReplicaState::Online && r.aof_offset.load(Relaxed) >= offset)
            .count()
    }

    /// Recounts the good replicas (Redis's `refreshGoodSlavesCount`).
    pub(crate) fn refresh_good(&self, max_lag_secs: usize, now_ms: u64) {
        let good = self
            .inner
            .lock()
            .replicas
            .iter()
            .filter(|r| {
                r.state() == ReplicaState::Online
                    && now_ms.saturating_sub(r.ack_time_ms.load(Relaxed)) / 1000
                        <= max_lag_secs as u64
            })
            .count();
        self.good_replicas.store(good, Relaxed);
    }

    /// Online replicas with a fresh ACK (INFO's `min_slaves_good_slaves`).
    pub(crate) fn good_replicas(&self) -> usize {
        self.good_replicas.load(Relaxed)
    }

    /// Redis's `checkGoodReplicasStatus() == 0`: a primary with
    /// `min-replicas-to-write` and `min-replicas-max-lag` set and fewer
    /// good replicas refuses writes (`-NOREPLICAS`).
    pub(crate) fn lacks_good_replicas(&self, config: &crate::config::Config) -> bool {
        let (n, lag) = config.min_replicas();
        n > 0 && lag > 0 && !self.is_replica() && self.good_replicas() < n
    }

    /// `replicationGetSlaveOffset()`: a replica's offset in its primary's
    /// stream, 0 while it has none to continue (before its first sync,
    /// and from a full resync until that sync completes), so that the
    /// cluster hides a loading replica from `CLUSTER SLOTS`.
    pub(crate) fn replica_offset(&self) -> u64 {
        if self.is_replica() && !self.has_history() {
            0
        } else {
            self.offset()
        }
    }

    /// Whether the next PSYNC may ask to continue this server's history.
    pub(crate) fn has_history(&self) -> bool {
        self.history.load(Relaxed)
    }

    /// A full sync's payload is about to load, or this server started as
    /// a replica with no history of its own (Redis discards its cached
    /// master): until a full sync completes, PSYNC asks for one.
    pub(crate) fn forget_history(&self) {
        self.history.store(false, Relaxed);
    }

    /// At startup as a replica, the RDB file carried the replication ID
    /// and offset it was saved at (Redis's `rsi`, then
    /// `replicationCacheMasterUsingMyself`): the first PSYNC asks to
    /// continue from there.
    pub(crate) fn restore_history(&self, replid: &str, offset: u64, stream_db: usize) {
        let mut g = self.inner.lock();
        g.replid = replid.to_string();
        g.replid2 = null_replid();
        g.second_offset = -1;
        g.backlog = None;
        g.patches.clear();
        self.offset.store(offset, Relaxed);
        self.history.store(true, Relaxed);
        self.stream_db.store(stream_db as i64, Relaxed);
    }

    /// Before a primary loads its RDB at startup: a backlog from offset 0,
    /// so the deletions of keys the file holds already expired go into
    /// it (Redis's `createReplicationBacklog` with `RDBFLAGS_FEED_REPL`).
    pub(crate) fn before_startup_load(&self) {
        let mut g = self.inner.lock();
        if g.primary.is_some() {
            return;
        }
        self.ensure_backlog(&mut g);
    }

    /// After it: the file's replication info (`repl-id`, `repl-offset`)
    /// makes the restarted primary's history continue the old one's, so
    /// its replicas resync partially: the old ID becomes `replid2`, valid
    /// up to the saved offset, and what the load fed (those deletions)
    /// follows it. Without it, the backlog goes again (Redis's
    /// `loadDataFromDisk`).
    pub(crate) fn after_startup_load(&self, saved: Option<(&str, u64)>, now_secs: u64) {
        let mut g = self.inner.lock();
        if g.primary.is_some() {
            return;
        }
        let Some((replid, offset)) = saved else {
            g.backlog = None;
            g.patches.clear();
            self.listening.store(false, Relaxed);
            return;
        };
        g.replid2 = replid.to_string();
        g.second_offset = offset as i64 + 1;
        g.replid = random_replid();
        if let Some(b) = g.backlog.as_mut() {
            b.rebase(offset);
        }
        for (at, _, _) in g.patches.iter_mut() {
            *at += offset;
        }
        self.offset.fetch_add(offset, Relaxed);
        g.alone_since = Some(now_secs);
    }

    /// What a save records of replication (Redis's `rdbPopulateSaveInfo`):
    /// (`repl-stream-db`, `repl-id`, `repl-offset`), for a primary with a
    /// backlog or a replica that knows its stream's database; None else.
    pub(crate) fn save_info(&self) -> Option<(usize, ReplId, u64)> {
        self.save_info_locked(&self.inner.lock())
    }

    fn save_info_locked(&self, g: &Inner) -> Option<(usize, ReplId, u64)> {
        let db = if g.primary.is_none() {
            g.backlog.as_ref()?;
            g.seldb.unwrap_or(0)
        } else {
            usize::try_from(self.stream_db.load(Relaxed)).ok()?
        };
        Some((db, g.replid.clone(), self.offset()))
    }

    /// Whether this server replicates a primary (cheap: no lock).
    pub(crate) fn is_replica(&self) -> bool {
        self.replica_flag.load(Relaxed)
    }

    /// The end of a FAILOVER's handover: the target answered this
    /// server's `PSYNC … FAILOVER` (`accepted`: with `+CONTINUE` or a full
    /// resync), or refused it, and this server is a primary again
    /// (Redis's `abortFailover`). Writes are let go either way.
    pub(crate) fn failover_psync_result(
        &self,
        pause: &crate::pause::Pause,
        config: &crate::config::Config,
        accepted: bool,
    ) {
        let mut f = self.failover.lock();
        if !f.as_ref().is_some_and(|f| f.in_progress) {
            return;
        }
        let target = f.take().and_then(|f| f.target);
        drop(f);
        if !accepted {
            let to = target.map_or("any replica".to_string(), |t| {
                format!("{}:{}", t.host, t.port)
            });
            tracing::info!("FAILOVER to {to} aborted: Failover target rejected psync request");
            self.promote();
            config.set_replicaof(None);
        }
        pause.hold_writes_for_failover(false);
    }

    /// FAILOVER ABORT, or a timeout: back to no failover (a primary
    /// again if the handover had started).
    pub(crate) fn abort_failover(
        &self,
        pause: &crate::pause::Pause,
        config: &crate::config::Config,
        why: &str,
    ) -> bool {
        let Some(f) = self.failover.lock().take() else {
            return false;
        };
        let to = f.target.as_ref().map_or("any replica".to_string(), |t| {
            format!("{}:{}", t.host, t.port)
        });
        tracing::info!("FAILOVER to {to} aborted: {why}");
        if f.in_progress {
            self.promote();
            config.set_replicaof(None);
        }
        pause.hold_writes_for_failover(false);
        true
    }

    /// INFO's `master_failover_state`.
    pub(crate) fn failover_state(&self) -> &'static str {
        match &*self.failover.lock() {
            None => "no-failover",
            Some(f) if f.in_progress => "failover-in-progress",
            Some(_) => "waiting-for-sync",
        }
    }

    /// Whether this server's PSYNC asks its primary to take over
    /// (`PSYNC replid offset FAILOVER`).
    pub(crate) fn failover_in_progress(&self) -> bool {
        self.failover.lock().as_ref().is_some_and(|f| f.in_progress)
    }

    /// A replica this server feeds, by its announced address and port.
    pub(crate) fn find_replica(&self, host: &str, port: u16) -> Option<Arc<Replica>> {
        self.inner
            .lock()
            .replicas
            .iter()
            .find(|r| r.shown_ip() == host && r.port.load(Relaxed) == usize::from(port))
            .cloned()
    }

    /// A replica's `REPLCONF ACK offset [FACK aof-offset]`.
    pub(crate) fn ack(&self, replica: &Replica, offset: u64, fack: Option<u64>, now_ms: u64) {
        if offset > replica.ack_offset.load(Relaxed) {
            replica.ack_offset.store(offset, Relaxed);
        }
        if let Some(fack) = fack {
            replica.aof_offset.fetch_max(fack, Relaxed);
        }
        replica.ack_time_ms.store(now_ms, Relaxed);
        self.acked.notify_waiters();
    }
}

/// The shared replication buffer's memory ([`Replication::buffer_memory`]).
pub(crate) struct BufferMemory {
    /// All of it (`mem_total_replication_buffers`).
    pub(crate) total: usize,
    /// The backlog's part (`mem_replication_backlog`).
    pub(crate) backlog: usize,
    /// What only replicas still need, and what their writers copied out
    /// (`mem_clients_slaves`).
    pub(crate) replicas: usize,
    /// What eviction does not count (`mem_not_counted_for_evict`).
    pub(crate) not_counted: usize,
}

impl Replication {
    /// What a connection's batch writes from stream offset `at` on waits
    /// for that batch's replies (see [`Replication::take`]); background
    /// work (expiry, the sweeper) has no gate.
    fn note_gate(g: &mut Inner, at: u64) {
        if let Some((_, gate)) = crate::clients::deferred_gate()
            && !gate.is_open()
            && !g
                .gates
                .back()
                .is_some_and(|(_, last)| Arc::ptr_eq(last, &gate))
        {
            g.gates.push_back((at, gate));
        }
    }
}

impl Sink for Replication {
    fn listening(&self) -> bool {
        self.listening.load(Relaxed)
    }

    fn feed_args(&self, db: usize, args: &crate::protocol::Args<'_>) {
        let mut g = self.inner.lock();
        if g.backlog.is_none() || g.primary.is_some() {
            return;
        }
        let mut bytes = std::mem::take(&mut g.scratch);
        bytes.clear();
        if g.seldb != Some(db) {
            let mut n = itoa::Buffer::new();
            encode(&mut bytes, &[&b"SELECT"[..], n.format(db).as_bytes()]);
            g.seldb = Some(db);
        }
        Self::note_gate(&mut g, self.offset() + 1);
        let at = bytes.len();
        crate::protocol::encode_parts(&mut bytes, args.len(), args.iter());
        if compat::unknown_to_redis_7_0(args.get(0)) {
            let argv: Vec<&[u8]> = args.iter().collect();
            if let Some((replacement, to_8)) = compat::replacement(&argv, bytes.len() - at) {
                let base = self.offset() + 1;
                g.patches.push_back((base + at as u64, replacement, to_8));
            }
        }
        self.append(&mut g, &bytes, self.backlog_size.load(Relaxed));
        self.wake_replicas(&mut g);
        if bytes.capacity() <= 64 * 1024 {
            g.scratch = bytes;
        }
    }

    fn feed(&self, ops: &[Op], transaction: bool) {
        let mut g = self.inner.lock();
        if g.backlog.is_none() || g.primary.is_some() {
            return;
        }
        // A buffer kept between feeds: no allocation per write.
        let mut bytes = std::mem::take(&mut g.scratch);
        bytes.clear();
        // (offset of the command within `bytes`, its replacement)
        let mut patches: Vec<(usize, Bytes, bool)> = Vec::new();
        let mut seldb = g.seldb;
        let mut select = |bytes: &mut Vec<u8>, db: usize| {
            if seldb != Some(db) {
                let n = db.to_string();
                encode(bytes, &[&b"SELECT"[..], n.as_bytes()]);
                seldb = Some(db);
            }
        };
        // What is for the AOF only (a script's `redis.set_repl`) is not sent.
        let ops: Vec<&Op> = ops.iter().filter(|op| op.target.replicas()).collect();
        if ops.is_empty() {
            g.scratch = bytes;
            return;
        }
        // MULTI first, the SELECT inside it, as Redis 7.2+ sends a
        // transaction (`propagatePendingCommands`: MULTI for no database).
        if transaction {
            encode(&mut bytes, &[b"MULTI"]);
        }
        for op in ops {
            select(&mut bytes, op.db);
            let at = bytes.len();
            encode(&mut bytes, &op.argv);
            if let Some((replacement, to_8)) = compat::replacement(&op.argv, bytes.len() - at) {
                patches.push((at, replacement, to_8));
            }
        }
        if transaction {
            encode(&mut bytes, &[b"EXEC"]);
        }
        g.seldb = seldb;
        let base = self.offset() + 1;
        Self::note_gate(&mut g, base);
        for (at, r, to_8) in patches {
            g.patches.push_back((base + at as u64, r, to_8));
        }
        self.append(&mut g, &bytes, self.backlog_size.load(Relaxed));
        self.wake_replicas(&mut g);
        if bytes.capacity() <= 64 * 1024 {
            g.scratch = bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CONFIG SET repl-backlog-size to less drops what the new size does
    /// not keep at once: a replica's PSYNC right after gets a full resync,
    /// not +CONTINUE from bytes Redis would no longer hold.
    #[test]
    fn a_smaller_backlog_size_trims_at_once() {
        let r = Replication::default();
        r.set_backlog_size(1 << 20);
        r.feed_raw(&vec![b'x'; 200_000], 0);
        let replid = r.replid();
        assert!(matches!(
            r.try_partial(replid.as_bytes(), 1),
            Psync::Continue { from: 1, .. }
        ));
        r.set_backlog_size(16_384);
        assert!(matches!(r.try_partial(replid.as_bytes(), 1), Psync::Full));
        // What the new size keeps still continues.
        let recent = r.offset() - 1000;
        assert!(matches!(
            r.try_partial(replid.as_bytes(), recent as i64),
            Psync::Continue { .. }
        ));
    }
}
