//! The registry of connected clients, for `CLIENT LIST/KILL/INFO`, INFO's
//! client counts, client eviction and pub/sub delivery.
//!
//! Each connection owns its session state privately (the commands layer's
//! `Client`); what other connections may need to see or do to it lives in
//! its [`ClientHandle`]: cheap atomics the owner updates as it goes, a kill
//! switch, and the queue through which pub/sub messages, tracking
//! invalidations and MONITOR lines reach it. The registry sits below
//! pub/sub, tracking and the commands, which all address clients through
//! it, and depends on nothing above the configuration.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, AtomicUsize,
    Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst},
};
use std::time::Instant;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

use crate::config::OutputLimit;

pub(crate) type ClientId = u64;

/// A message pushed to a subscribed client.
#[derive(Debug, Clone)]
pub(crate) enum Push {
    Message {
        channel: Bytes,
        payload: Bytes,
    },
    /// A shard-channel message (SPUBLISH).
    SMessage {
        channel: Bytes,
        payload: Bytes,
    },
    PMessage {
        pattern: Bytes,
        channel: Bytes,
        payload: Bytes,
    },
    /// The node stopped serving this shard channel's slot and dropped the
    /// channel (`pubsub::PubSub::drop_shard_slots`): the connection takes
    /// it out of the client's own set and writes the `sunsubscribe` push,
    /// whose count only it knows.
    ShardUnsubscribed {
        channel: Bytes,
    },
    /// Already encoded: a tracking invalidation or a MONITOR line.
    Raw(Bytes),
    /// From the clients' cron: give back the read buffer's unused room
    /// (all of it when `idle`), as Redis's `clientsCronResizeQueryBuffer`.
    ShrinkQuery {
        idle: bool,
    },
    /// What follows was caused by another client's batch: it may not be
    /// written before that batch's replies (see [`Gate`]).
    After(Arc<Gate>),
    /// Queued by the client's own command as it starts running (after its
    /// checks and evictions): what follows it was caused by the command
    /// and goes after its reply, as Redis 7.2+ defers pushes to the
    /// executing client (`pending_push_messages`); what precedes it (an
    /// invalidation of a key evicted for the command) goes before.
    CommandRuns,
}

/// What a queued message holds besides its bytes: its slot in the
/// connection's queue. Counted in [`Push::size`], so the memory eviction
/// leaves aside as on its way out (`Clients::pushes_in_flight`) is what
/// the allocator holds for it: a burst of invalidations of 1 KB keys to
/// ten clients that are slow to run otherwise left ~10% of itself counted
/// as data, and each eviction then paid for the messages of the last.
const QUEUE_SLOT: usize = std::mem::size_of::<Push>();

impl Push {
    /// The memory the queued message holds (its output bytes and its slot
    /// in the queue); 0 for the connection's control messages, which are
    /// not counted in `push_bytes`.
    pub(crate) fn size(&self) -> usize {
        QUEUE_SLOT
            + match self {
                Push::Message { channel, payload } | Push::SMessage { channel, payload } => {
                    channel.len() + payload.len() + 32
                }
                Push::PMessage {
                    pattern,
                    channel,
                    payload,
                } => pattern.len() + channel.len() + payload.len() + 48,
                Push::ShardUnsubscribed { channel } => channel.len() + 32,
                Push::Raw(b) => b.len(),
                Push::ShrinkQuery { .. } | Push::After(_) | Push::CommandRuns => return 0,
            }
    }
}

/// What other tasks can see of, and do to, one connection.
/// [`ClientHandle::role`]'s values.
pub(crate) const ROLE_NORMAL: u8 = 0;
pub(crate) const ROLE_REPLICA: u8 = 1;
pub(crate) const ROLE_MASTER: u8 = 2;

pub(crate) struct ClientHandle {
    pub(crate) id: ClientId,
    /// The socket's file descriptor (CLIENT LIST's `fd=`).
    pub(crate) fd: i32,
    /// Request bytes read but not yet run, counted from the running
    /// request (CLIENT LIST's `qbuf=`), and the read buffer's spare room.
    pub(crate) qbuf: AtomicUsize,
    pub(crate) qbuf_free: AtomicUsize,
    /// Bytes at the read buffer's start that `qbuf` leaves out: the parsed
    /// part of a request whose big argument's body is on its way, which
    /// Redis drops from its query buffer (see `Parser::big_arg_start`).
    pub(crate) qbuf_parsed: AtomicUsize,
    /// The most request bytes the read buffer held since the clients'
    /// cron last looked (Redis's `querybuf_peak`): a buffer still needed
    /// at its size is not trimmed.
    pub(crate) qbuf_peak: AtomicUsize,
    /// Argument bytes queued by MULTI (CLIENT LIST's `multi-mem=`).
    pub(crate) multi_mem: AtomicUsize,
    pub(crate) addr: String,
    pub(crate) laddr: String,
    /// Connected through the unix socket (CLIENT LIST's `U` flag; always
    /// local).
    pub(crate) unix: bool,
    /// Connected over TLS: in a `tls-cluster`, a plaintext client is
    /// shown the nodes' plaintext ports (Redis's `use_pport`).
    pub(crate) tls: bool,
    pub(crate) created: Instant,
    /// The wall-clock second it connected (Redis's `ctime`): its age is
    /// counted in whole seconds of the clock, as Redis counts it.
    pub(crate) ctime_s: u64,
    pub(crate) name: Mutex<Option<Vec<u8>>>,
    pub(crate) lib_name: Mutex<Option<Vec<u8>>>,
    pub(crate) lib_ver: Mutex<Option<Vec<u8>>>,
    /// The name of the ACL user the client is authenticated as (CLIENT
    /// LIST's `user=`, CLIENT KILL USER, disconnecting a deleted user's
    /// clients).
    pub(crate) user: Mutex<Vec<u8>>,
    pub(crate) db: AtomicUsize,
    pub(crate) resp: AtomicU8,
    pub(crate) subs: AtomicU32,
    pub(crate) psubs: AtomicU32,
    pub(crate) ssubs: AtomicU32,
    /// Commands queued in MULTI, or -1 outside a transaction.
    pub(crate) multi: AtomicI32,
    /// What replication made of it: [`ROLE_NORMAL`], [`ROLE_REPLICA`] (a
    /// replica this server feeds) or [`ROLE_MASTER`] (this replica's link
    /// to its primary): CLIENT LIST's `S` / `M` and CLIENT KILL TYPE.
    pub(crate) role: AtomicU8,
    /// Address of the last command's table entry (0 = none yet).
    pub(crate) last_cmd_ptr: AtomicUsize,
    /// When the client last sent something, on [`crate::clock::coarse_ms`]'s
    /// clock.
    last_active_ms: AtomicU64,
    pub(crate) killed: AtomicBool,
    /// `REPLCONF rdb-channel 1`: a replica's rdb channel (CLIENT LIST's
    /// `C`).
    pub(crate) rdb_channel: AtomicBool,
    /// Killed for its output buffer limit (counted when it unregisters).
    pub(crate) output_limit_closed: AtomicBool,
    pub(crate) kill_notify: Notify,
    /// Client-side caching flags (tracking's `ON`, `BCAST`, …)
    /// and the client invalidations are redirected to (0: none).
    pub(crate) tracking: AtomicU32,
    pub(crate) tracking_redirect: AtomicU64,
    /// CLIENT NO-EVICT (CLIENT LIST's `e`).
    pub(crate) no_evict: AtomicBool,
    /// CLIENT NO-TOUCH: its commands (TOUCH excepted) leave keys' access
    /// times alone; CLIENT LIST's `T` flag.
    pub(crate) no_touch: AtomicBool,
    /// How many keys the client WATCHes (CLIENT LIST's `watch=`).
    pub(crate) watching: AtomicUsize,
    /// Held by CLIENT PAUSE (CLIENT LIST's `b`).
    pub(crate) paused: AtomicBool,
    /// True while the connection waits in a blocking command.
    pub(crate) blocked: AtomicBool,
    /// CLIENT UNBLOCK's request: 0 none, [`UNBLOCK_TIMEOUT`] or [`UNBLOCK_ERROR`].
    pub(crate) unblock: AtomicU8,
    pub(crate) unblock_notify: Notify,
    /// What the connection read while its Lua debugging session runs (the
    /// session, on the script runner, takes it: see `commands::lua::ldb`).
    pub(crate) debug_input: DebugInput,
    push_tx: mpsc::UnboundedSender<Push>,
    /// Bytes of pushes queued or buffered but not yet written to the
    /// socket: what the pub/sub output buffer limit measures.
    pub(crate) push_bytes: AtomicUsize,
    /// Bytes of the reply buffer a write has taken and not yet finished
    /// with, less the pushes in it (already in `push_bytes`): on the
    /// io_uring path it is held until the loop's next submit, while other
    /// connections' commands may run.
    pub(crate) out_pending: AtomicUsize,
    /// The output the connection holds and how much of it the socket took
    /// (see [`WriteProgress`]).
    pub(crate) write: Arc<WriteProgress>,
    /// Capacity of the connection's read and reply buffers after its last
    /// batch (INFO memory's `mem_clients_normal`).
    pub(crate) buffer_bytes: AtomicUsize,
    /// When (ms since `created`, plus one) the queue last went over the soft
    /// limit; 0 while under it.
    soft_over_since: AtomicU64,
    /// This client's part of [`Clients::memory`] (its last [`ClientHandle::memory`]).
    counted_mem: AtomicUsize,
    /// Unregistered: a [`Clients::note_memory`] racing its unregistering
    /// (another connection's eviction pass, a tracking message) must not
    /// count it again after its part was taken off for good.
    unregistered: AtomicBool,
    /// What its watched keys, subscriptions and tracking prefixes cost, as
    /// Redis estimates it (the session's `Client::structures_memory`); kept
    /// while client eviction is on.
    pub(crate) structures_mem: AtomicUsize,
    /// The gate of the batch the connection is running, once that batch
    /// delivered something to another client (see [`Gate`]); `gated` says
    /// whether there is one, so a batch that delivers nothing only loads
    /// a flag.
    batch_gate: Mutex<Option<Arc<Gate>>>,
    gated: AtomicBool,
    /// Gates of other batches whose writes this batch read (`--threads N`,
    /// see [`Gate`]).
    reads_after: Mutex<Vec<Arc<Gate>>>,
    /// Whether `reads_after` may hold any (one load per batch).
    reading_after: AtomicBool,
    /// The serial of the gate of the last `Push::After` queued here.
    last_after: AtomicU64,
}

/// Redis's per-client fixed reply buffer (`PROTO_REPLY_CHUNK_BYTES`):
/// what a client's output holds within it is not counted by the output
/// buffer limits.
pub(crate) const REPLY_CHUNK: usize = 16 * 1024;

/// The output a connection holds in user space, as other tasks (CLIENT
/// LIST's `omem`, the output limits, eviction) need to see it: set by the
/// connection when it hands its replies to the socket (or yields midway
/// through a batch), advanced by the socket layer as the kernel takes
/// bytes, so a write the kernel took only in part counts only its rest.
#[derive(Default)]
pub(crate) struct WriteProgress {
    /// True while a write waits for room in its socket (a client that does
    /// not read keeps it true): its queued pushes are then held memory, not
    /// bytes on their way out (see [`Clients::pushes_in_flight`]). Set by
    /// the socket layer, which alone knows whether a write waited on the
    /// peer or only on the next submit of the io_uring path.
    pub(crate) stalled: AtomicBool,
    /// Bytes of output held (0 when none).
    pub(crate) len: AtomicUsize,
    /// How many of them the socket has taken.
    pub(crate) sent: AtomicUsize,
    /// Bytes of pushes among them (also in [`ClientHandle::push_bytes`]
    /// until the write ends).
    pub(crate) pushes: AtomicUsize,
}

impl WriteProgress {
    /// The connection holds `len` bytes of output, `pushes` of them pushes,
    /// the first `sent` taken by the socket already.
    pub(crate) fn hold(&self, len: usize, sent: usize, pushes: usize) {
        self.sent.store(sent, Relaxed);
        self.len.store(len, Release);
        self.pushes.store(pushes, Release);
    }

    /// The write ended (or the held output was dropped). The caller then
    /// lowers `push_bytes` by the pushes it held (with `Release`), so a
    /// reader in between counts them twice, never not at all.
    pub(crate) fn finish(&self) {
        self.stalled.store(false, Relaxed);
        self.pushes.store(0, Release);
        self.len.store(0, Release);
        self.sent.store(0, Relaxed);
    }

    /// Ends the write and lowers `push_bytes` by the `pushes` it carried.
    pub(crate) fn finish_with(&self, push_bytes: &AtomicUsize, pushes: usize) {
        self.finish();
        push_bytes.fetch_sub(pushes, Release);
    }
}

/// CLIENT UNBLOCK … TIMEOUT: the client gets its command's timeout reply.
pub(crate) const UNBLOCK_TIMEOUT: u8 = 1;
/// CLIENT UNBLOCK … ERROR: the client gets `-UNBLOCKED …`.
pub(crate) const UNBLOCK_ERROR: u8 = 2;
/// This server became a replica: its blocked clients get an error and are
/// closed (Redis's `disconnectAllBlockedClients`).
pub(crate) const UNBLOCK_ROLE: u8 = 3;

impl ClientHandle {
    /// Redis's `islocalClient`: a unix socket's client, or a TCP peer that
    /// is exactly 127.0.0.1 or ::1 (what `enable-…` settings' `local`
    /// value admits).
    pub(crate) fn is_local(&self) -> bool {
        let host = self.addr.rsplit_once(':').map_or("", |(h, _)| h);
        self.unix || matches!(host, "127.0.0.1" | "::1" | "[::1]")
    }

    /// Channels, patterns and shard channels subscribed to (Redis's
    /// CLIENT_PUBSUB flag is this being non-zero).
    pub(crate) fn subscriptions(&self) -> u32 {
        self.subs.load(Relaxed) + self.psubs.load(Relaxed) + self.ssubs.load(Relaxed)
    }

    /// CLIENT UNBLOCK: ends the client's blocking wait, if it is in one.
    pub(crate) fn request_unblock(&self, how: u8) -> bool {
        if !self.blocked.load(Relaxed) {
            return false;
        }
        self.unblock.store(how, Relaxed);
        self.unblock_notify.notify_one();
        true
    }

    pub(crate) fn kill(&self) {
        self.killed.store(true, Relaxed);
        self.kill_notify.notify_one();
    }

    /// The memory the client holds, as Redis's `getClientMemoryUsage` counts
    /// it (CLIENT LIST's `tot-mem` less the running command's arguments):
    /// the query buffer with its free room, the reply buffer, unwritten
    /// pushes and MULTI's queue.
    pub(crate) fn memory(&self) -> usize {
        let qbuf = self.qbuf.load(Relaxed) + self.qbuf_free.load(Relaxed);
        qbuf + self.reply_buffer()
            + self.push_bytes.load(Relaxed)
            + self.multi_mem.load(Relaxed)
            + self.structures_mem.load(Relaxed)
    }

    /// The reply buffer's size (CLIENT LIST's `rbs`): what the
    /// connection's buffers hold beyond the query buffer, at least Redis's
    /// initial 1 kB.
    pub(crate) fn reply_buffer(&self) -> usize {
        let query =
            self.qbuf.load(Relaxed) + self.qbuf_parsed.load(Relaxed) + self.qbuf_free.load(Relaxed);
        self.buffer_bytes
            .load(Relaxed)
            .saturating_sub(query)
            .max(1024)
    }

    /// Queues a pub/sub message without waiting for the client; false if
    /// the client is gone. A client whose unwritten pushes pass `limit` is
    /// disconnected (Redis's `client-output-buffer-limit pubsub`), so a
    /// subscriber that stops reading costs bounded memory.
    pub(crate) fn push(&self, msg: Push, limit: OutputLimit) -> bool {
        if self.killed.load(Relaxed) {
            return false;
        }
        // One `After` per causing batch and receiver: what follows it in
        // the queue waits for it too (a batch's later pushes come after
        // it), and a burst of invalidations must not double the queue.
        if let Some(gate) = gate_for(self)
            && self.last_after.swap(gate.serial, Relaxed) != gate.serial
        {
            let _ = self.push_tx.send(Push::After(gate));
        }
        self.push_bytes.fetch_add(msg.size(), Relaxed);
        if self.over_output_limit(self.output_buffer_usage() as u64, limit) {
            return false;
        }
        self.push_tx.send(msg).is_ok()
    }

    /// Queues `msg` with no output limit applied now: a message to the
    /// connection itself (the clients' cron's), or a tracking invalidation,
    /// whose receiver's limit the clients' cron applies (see
    /// [`ClientHandle::check_output_limit`]).
    pub(crate) fn push_unchecked(&self, msg: Push) -> bool {
        if self.killed.load(Relaxed) {
            return false;
        }
        if let Some(gate) = gate_for(self)
            && self.last_after.swap(gate.serial, Relaxed) != gate.serial
        {
            let _ = self.push_tx.send(Push::After(gate));
        }
        self.push_bytes.fetch_add(msg.size(), Relaxed);
        self.push_tx.send(msg).is_ok()
    }

    /// Output bytes the connection holds and the socket has not taken: what
    /// is left of the write in flight (or of the replies of a batch that
    /// yielded midway), and the pushes queued besides it.
    pub(crate) fn output_unwritten(&self) -> usize {
        let w = &self.write;
        // Read in the order opposite to the writer's stores (see
        // `WriteProgress`): a look racing a write's start or end counts
        // its pushes twice, never not at all.
        let pushes = self.push_bytes.load(Acquire);
        let in_write = w.pushes.load(Acquire);
        let len = w.len.load(Acquire);
        let sent = w.sent.load(Relaxed).min(len);
        (len - sent) + pushes.saturating_sub(in_write)
    }

    /// Redis's `getClientOutputBufferMemoryUsage` (CLIENT LIST's `omem`,
    /// and what the output buffer limits measure): the unwritten output
    /// past the client's fixed 16 KB reply buffer.
    pub(crate) fn output_buffer_usage(&self) -> usize {
        self.output_unwritten().saturating_sub(REPLY_CHUNK)
    }

    /// The clients' cron's look at the output limit of the client's class
    /// (`limit`), as Redis's `clientsCron` makes it: a client over its soft
    /// limit is closed once the limit's seconds passed, even when no more
    /// output comes; one back under it starts afresh. True if it was closed.
    pub(crate) fn check_output_limit(&self, limit: OutputLimit) -> bool {
        !self.killed.load(Relaxed)
            && self.over_output_limit(self.output_buffer_usage() as u64, limit)
    }

    /// Marks where the client's own running command starts pushing (see
    /// [`Push::CommandRuns`]).
    pub(crate) fn mark_command_runs(&self) {
        let _ = self.push_tx.send(Push::CommandRuns);
    }

    /// Closes the client for its output buffer, logged as Redis logs it.
    pub(crate) fn kill_for_output_limit(&self, queued: u64, which: &str) {
        if !self.killed.swap(true, Relaxed) {
            self.output_limit_closed.store(true, Relaxed);
            tracing::warn!(
                client = self.id,
                addr = %self.addr,
                queued,
                "Client id={} addr={} scheduled to be closed ASAP for overcoming of output buffer limits ({which} limit).",
                self.id,
                self.addr
            );
        }
        self.kill_notify.notify_one();
    }

    /// An output class's limit (the normal one for a reply batch, pub/sub's
    /// for pushes) applied to `bytes` queued (Redis's
    /// `checkClientOutputBufferLimits`): true if the client must be closed
    /// instead of being sent them.
    pub(crate) fn over_output_limit(&self, bytes: u64, limit: OutputLimit) -> bool {
        if limit.hard != 0 && bytes >= limit.hard {
            self.kill_for_output_limit(bytes, "hard");
            return true;
        }
        if limit.soft != 0 && bytes >= limit.soft {
            let now = self.created.elapsed().as_millis() as u64 + 1;
            let since = match self
                .soft_over_since
                .compare_exchange(0, now, Relaxed, Relaxed)
            {
                Ok(_) => now,
                Err(t) => t,
            };
            if now - since > limit.soft_secs * 1000 {
                self.kill_for_output_limit(bytes, "soft");
                return true;
            }
        } else {
            // Under the soft limit (or none): the next crossing starts its
            // own time.
            self.soft_over_since.store(0, Relaxed);
        }
        false
    }

    /// The gate of this connection's current batch, made on first use.
    fn batch_gate(&self) -> Arc<Gate> {
        let mut slot = self.batch_gate.lock();
        let gate = slot
            .get_or_insert_with(|| Arc::new(Gate::new(self.id)))
            .clone();
        self.gated.store(true, Release);
        gate
    }

    /// The gate of this connection's current batch, for a shard it wrote
    /// (see [`Gate`]).
    pub(crate) fn writing_gate(&self) -> Arc<Gate> {
        self.batch_gate()
    }

    /// Notes that this connection's batch read what another batch wrote
    /// and whose replies have not left: its own replies wait for that.
    pub(crate) fn read_after(&self, gate: &Arc<Gate>) {
        self.reading_after.store(true, Relaxed);
        let mut after = self.reads_after.lock();
        if !after.iter().any(|g| Arc::ptr_eq(g, gate)) {
            after.push(gate.clone());
        }
    }

    /// The gates noted by [`ClientHandle::read_after`], taken.
    pub(crate) fn take_reads_after(&self, into: &mut Vec<Arc<Gate>>) {
        if self.reading_after.swap(false, Relaxed) {
            into.append(&mut self.reads_after.lock());
        }
    }

    /// The connection's batch has handed its replies to the socket (or is
    /// over without any, or the connection is gone): what it caused other
    /// clients to receive may be written now. One flag load when the batch
    /// delivered nothing.
    #[inline]
    pub(crate) fn open_gate(&self) {
        if self.gated.load(Acquire) {
            self.gated.store(false, Release);
            if let Some(gate) = self.batch_gate.lock().take() {
                gate.open();
            }
        }
    }

    /// CLIENT LIST's `age` and CLIENT KILL MAXAGE's: whole seconds of the
    /// wall clock since the second it connected.
    pub(crate) fn age_secs(&self) -> u64 {
        (crate::clock::system_us() / 1_000_000).saturating_sub(self.ctime_s)
    }

    pub(crate) fn idle_secs(&self) -> u64 {
        crate::clock::coarse_ms().saturating_sub(self.last_active_ms.load(Relaxed)) / 1000
    }

    /// Every read from the socket calls this, so it reads the coarse clock:
    /// idle time is counted in seconds.
    pub(crate) fn touch(&self) {
        self.last_active_ms
            .store(crate::clock::coarse_ms(), Relaxed);
    }
}

/// Redis's order across connections: Redis writes every reply of one turn
/// of its event loop before it reads more input, so the reply to a command
/// leaves no later than anything the command caused another client to
/// receive (a blocked client served, a published message, an
/// invalidation), and so before anything those clients do in response.
/// Here a connection writes its batch's replies at the batch's end (after
/// a script's await, or in parallel with other threads), while the
/// receivers have tasks of their own: each delivery to another client
/// carries the gate of the causing connection's batch, which that
/// connection opens once the batch's replies are handed to its socket, and
/// the receiver waits for it before writing the delivery. Deliveries of
/// background work (expiry, the sweeper) have no causer and no gate.
///
/// With `--threads N` batches also run side by side, so a command can read
/// what another thread's batch wrote before that batch's replies left: a
/// shard keeps the gate of the batch that last wrote it
/// (`keyspace::Shard::writer`), and a reader's replies wait for it too
/// ([`ClientHandle::read_after`]).
#[derive(Debug)]
pub(crate) struct Gate {
    open: AtomicBool,
    notify: Notify,
    /// The connection whose batch it is.
    owner: ClientId,
    /// Unique over the process (never 0): tells one batch's gate from the
    /// next without comparing pointers that may be reused.
    serial: u64,
}

impl Gate {
    fn new(owner: ClientId) -> Gate {
        static SERIAL: AtomicU64 = AtomicU64::new(1);
        Gate {
            open: AtomicBool::new(false),
            notify: Notify::new(),
            owner,
            serial: SERIAL.fetch_add(1, Relaxed),
        }
    }

    /// The connection whose batch it is.
    pub(crate) fn owner(&self) -> ClientId {
        self.owner
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Acquire)
    }

    fn open(&self) {
        self.open.store(true, Release);
        self.notify.notify_waiters();
    }

    /// Ready once the causing batch's replies are on their way.
    pub(crate) async fn wait(&self) {
        crate::util::wait_until(&self.notify, || self.is_open()).await;
    }
}

/// Who causes what this thread delivers now (see [`Gate`]).
#[derive(Clone, Copy)]
enum Cause {
    /// Background work: no gate.
    Nobody,
    /// A connection's command: its current batch's gate, made on first use.
    Client(*const ClientHandle),
    /// Work deferred from a connection's batch (a client id and that
    /// batch's gate).
    Batch(ClientId, *const Arc<Gate>),
}

thread_local! {
    static CAUSE: Cell<Cause> = const { Cell::new(Cause::Nobody) };
}

/// Puts the previous cause back, whatever way the scope ends.
struct Restore(Cause);

impl Drop for Restore {
    fn drop(&mut self) {
        CAUSE.with(|c| c.set(self.0));
    }
}

/// Runs `f` (a command of `client`'s connection), whose deliveries to other
/// clients wait for the connection's current batch.
#[inline]
pub(crate) fn caused_by<R>(client: &ClientHandle, f: impl FnOnce() -> R) -> R {
    let _restore = Restore(CAUSE.with(|c| c.replace(Cause::Client(client))));
    f()
}

/// Runs `f`, work a batch deferred ([`deferred_gate`]), whose deliveries
/// wait for that batch.
pub(crate) fn caused_by_batch<R>(batch: &(ClientId, Arc<Gate>), f: impl FnOnce() -> R) -> R {
    let _restore = Restore(CAUSE.with(|c| c.replace(Cause::Batch(batch.0, &batch.1))));
    f()
}

/// The causing batch, for work it defers to another thread (which may run
/// after the batch's replies left): its gate is made now.
pub(crate) fn deferred_gate() -> Option<(ClientId, Arc<Gate>)> {
    match CAUSE.with(Cell::get) {
        Cause::Nobody => None,
        // SAFETY: `caused_by` set this from a reference that outlives its
        // scope, and put the previous cause back when the scope ended.
        Cause::Client(h) => unsafe { Some(((*h).id, (*h).batch_gate())) },
        // SAFETY: as above, from `caused_by_batch`.
        Cause::Batch(id, g) => unsafe { Some((id, (*g).clone())) },
    }
}

/// The gate a delivery to `target` carries now: none from background work
/// or to the causing client itself (its own pushes go with its replies).
pub(crate) fn gate_for(target: &ClientHandle) -> Option<Arc<Gate>> {
    match CAUSE.with(Cell::get) {
        Cause::Nobody => None,
        // SAFETY: `caused_by` set this from a reference that outlives its
        // scope, and put the previous cause back when the scope ended.
        Cause::Client(h) => unsafe { ((*h).id != target.id).then(|| (*h).batch_gate()) },
        // SAFETY: as above, from `caused_by_batch`.
        Cause::Batch(id, g) => unsafe { (id != target.id).then(|| (*g).clone()) },
    }
}

#[derive(Default)]
pub(crate) struct Clients {
    map: Mutex<HashMap<ClientId, Arc<ClientHandle>>>,
    next_id: AtomicU64,
    pub(crate) total_connections: AtomicU64,
    /// The clients' memory as last noted (see [`Clients::note_memory`]):
    /// what `maxmemory-clients` limits.
    memory: AtomicUsize,
    /// Clients disconnected by client eviction (INFO's `evicted_clients`).
    pub(crate) evicted: AtomicU64,
    /// Clients closed for their output buffer limit, replicas included
    /// (INFO's `client_output_buffer_limit_disconnections`).
    pub(crate) output_limit_disconnections: AtomicU64,
    evicting: Mutex<()>,
    /// The connection whose batch ran a script and has not yet handed its
    /// replies to its socket (see [`Turn`]).
    pub(crate) turn: Turn,
    /// Which connection's batch waits for which one's gate, to never close
    /// a cycle (see [`Clients::wait_gate`]).
    waits_for: Mutex<HashMap<ClientId, ClientId>>,
}

/// Redis's order for what a script wrote: a connection's batch awaits its
/// scripts (they run on the script thread), and other connections run
/// meanwhile; one that read what a script wrote (a job it pushed) could
/// answer, and its client act on it, before the script's reply left. So a
/// batch that runs a script holds the turn from that script until its
/// replies are handed to the socket, and other connections' commands that
/// lock keys wait for it, as they would in Redis's one event loop turn.
/// (Plain commands need no turn: a batch that does not await runs whole
/// before its thread serves anybody else.)
#[derive(Default)]
pub(crate) struct Turn {
    /// The holder's client id; 0 when nobody holds it.
    holder: AtomicU64,
    released: Notify,
}

impl Turn {
    /// Whether a connection other than `client` holds it.
    #[inline]
    pub(crate) fn held_by_other(&self, client: ClientId) -> bool {
        let holder = self.holder.load(Acquire);
        holder != 0 && holder != client
    }

    /// Takes it for `client`'s batch; false if another batch holds it.
    pub(crate) fn take(&self, client: ClientId) -> bool {
        match self.holder.compare_exchange(0, client, AcqRel, Acquire) {
            Ok(_) => true,
            Err(holder) => holder == client,
        }
    }

    /// `client`'s batch handed its replies to its socket (or ended): one
    /// load when it does not hold the turn.
    #[inline]
    pub(crate) fn release(&self, client: ClientId) {
        if self.holder.load(Relaxed) == client
            && self
                .holder
                .compare_exchange(client, 0, AcqRel, Relaxed)
                .is_ok()
        {
            self.released.notify_waiters();
        }
    }

    /// Waits until no other connection holds it.
    pub(crate) async fn wait(&self, client: ClientId) {
        crate::util::wait_until(&self.released, || !self.held_by_other(client)).await;
    }
}

impl Clients {
    /// Waits until `gate` is open: the causing batch's replies are on their
    /// way, so `me`'s may follow. Batches running side by side (`--threads
    /// N`) can each have read what the other wrote; Redis, which runs one
    /// batch at a time, never does that, and there is no order to keep
    /// between them: the wait that would close a cycle is not made (one of
    /// them writes first) instead of both waiting forever.
    pub(crate) async fn wait_gate(&self, me: ClientId, gate: &Gate) {
        if gate.is_open() {
            return;
        }
        {
            let mut waits = self.waits_for.lock();
            let mut at = gate.owner;
            // Bounded: the map never holds a cycle, so the chain ends.
            while at != me {
                match waits.get(&at) {
                    Some(&next) => at = next,
                    None => break,
                }
            }
            if at == me {
                return;
            }
            waits.insert(me, gate.owner);
        }
        struct Done<'a>(&'a Mutex<HashMap<ClientId, ClientId>>, ClientId);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.lock().remove(&self.1);
            }
        }
        let _done = Done(&self.waits_for, me);
        gate.wait().await;
    }

    /// Registers a new connection; returns its handle and push queue.
    pub(crate) fn register(
        &self,
        addr: String,
        laddr: String,
        fd: i32,
        unix: bool,
        tls: bool,
    ) -> (Arc<ClientHandle>, mpsc::UnboundedReceiver<Push>) {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        let (tx, rx) = mpsc::unbounded_channel();
        let h = Arc::new(ClientHandle {
            id,
            fd,
            qbuf: AtomicUsize::new(0),
            qbuf_free: AtomicUsize::new(0),
            qbuf_parsed: AtomicUsize::new(0),
            qbuf_peak: AtomicUsize::new(0),
            multi_mem: AtomicUsize::new(0),
            addr,
            laddr,
            unix,
            tls,
            created: Instant::now(),
            ctime_s: crate::clock::system_us() / 1_000_000,
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_ver: Mutex::new(None),
            user: Mutex::new(b"default".to_vec()),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            subs: AtomicU32::new(0),
            psubs: AtomicU32::new(0),
            ssubs: AtomicU32::new(0),
            multi: AtomicI32::new(-1),
            role: AtomicU8::new(ROLE_NORMAL),
            last_cmd_ptr: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(crate::clock::coarse_ms()),
            killed: AtomicBool::new(false),
            rdb_channel: AtomicBool::new(false),
            output_limit_closed: AtomicBool::new(false),
            kill_notify: Notify::new(),
            tracking: AtomicU32::new(0),
            tracking_redirect: AtomicU64::new(0),
            no_evict: AtomicBool::new(false),
            no_touch: AtomicBool::new(false),
            watching: AtomicUsize::new(0),
            paused: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            unblock_notify: Notify::new(),
            debug_input: DebugInput::default(),
            push_tx: tx,
            push_bytes: AtomicUsize::new(0),
            out_pending: AtomicUsize::new(0),
            write: Arc::new(WriteProgress::default()),
            buffer_bytes: AtomicUsize::new(0),
            soft_over_since: AtomicU64::new(0),
            counted_mem: AtomicUsize::new(0),
            unregistered: AtomicBool::new(false),
            structures_mem: AtomicUsize::new(0),
            batch_gate: Mutex::new(None),
            gated: AtomicBool::new(false),
            reads_after: Mutex::new(Vec::new()),
            reading_after: AtomicBool::new(false),
            last_after: AtomicU64::new(0),
        });
        self.map.lock().insert(id, h.clone());
        self.total_connections.fetch_add(1, Relaxed);
        (h, rx)
    }

    pub(crate) fn unregister(&self, id: ClientId) {
        let removed = self.map.lock().remove(&id);
        if let Some(c) = removed {
            if c.output_limit_closed.load(Relaxed) {
                self.output_limit_disconnections.fetch_add(1, Relaxed);
            }
            // Flagged before its part is taken off (see `note_memory`).
            c.unregistered.store(true, SeqCst);
            self.memory
                .fetch_sub(c.counted_mem.swap(0, SeqCst), Relaxed);
        }
    }

    /// Brings `c`'s part of the clients' memory total up to date (its
    /// connection calls this as its buffers change, while client eviction
    /// is on).
    pub(crate) fn note_memory(&self, c: &ClientHandle) {
        // A killed client's memory is on its way out (and evicting one
        // already took it off the total).
        let now = if c.killed.load(Relaxed) || c.unregistered.load(Relaxed) {
            0
        } else {
            c.memory()
        };
        let before = c.counted_mem.swap(now, SeqCst);
        if now >= before {
            self.memory.fetch_add(now - before, Relaxed);
        } else {
            self.memory.fetch_sub(before - now, Relaxed);
        }
        // Evicted or unregistered meanwhile (its part was taken off before
        // this added it back): take it off again. A client unregistered
        // after this swap had its part taken off by `unregister`.
        if now != 0 && (c.killed.load(Relaxed) || c.unregistered.load(SeqCst)) {
            self.memory
                .fetch_sub(c.counted_mem.swap(0, SeqCst), Relaxed);
        }
    }

    /// [`Clients::note_memory`] for a client whose output another
    /// connection grew, while client eviction is on: its memory was
    /// counted (its connection notes it after every batch while eviction
    /// is on, and not otherwise), so nothing is done otherwise.
    pub(crate) fn note_memory_if_counted(&self, c: &ClientHandle) {
        if c.counted_mem.load(Relaxed) != 0 {
            self.note_memory(c);
        }
    }

    /// Redis's `evictClients`: while the normal and pub/sub clients use
    /// `limit` bytes or more together, disconnects the evictable ones
    /// (not `CLIENT NO-EVICT`, not monitors), largest first. Every
    /// client's figure is refreshed first (each connection keeps its own
    /// up to date only when it runs). Returns how many went.
    /// `refresh`: recount every client first (the limit was just set, so
    /// the total may be stale).
    pub(crate) fn evict(
        &self,
        limit: usize,
        refresh: bool,
        is_monitor: impl Fn(ClientId) -> bool,
    ) -> u64 {
        if refresh {
            for c in self.registered() {
                self.note_memory(&c);
            }
        }
        if limit == 0 || self.memory.load(Relaxed) < limit {
            return 0;
        }
        // One eviction pass at a time: two would both pick the largest.
        let _pass = self.evicting.lock();
        if self.memory.load(Relaxed) < limit {
            return 0;
        }
        let mut candidates: Vec<(usize, Arc<ClientHandle>)> = Vec::new();
        for c in self.registered() {
            if is_monitor(c.id) {
                // Redis counts monitors apart from the clients it evicts.
                self.memory
                    .fetch_sub(c.counted_mem.swap(0, Relaxed), Relaxed);
                continue;
            }
            self.note_memory(&c);
            if !c.no_evict.load(Relaxed) && !c.killed.load(Relaxed) {
                candidates.push((c.counted_mem.load(Relaxed), c));
            }
        }
        // Redis walks its buckets from the largest clients down.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0));
        let mut evicted = 0;
        for (_, c) in candidates {
            if self.memory.load(Relaxed) < limit {
                break;
            }
            tracing::info!(
                "Evicting client: id={} addr={} tot-mem={} (clients: {} of {limit})",
                c.id,
                c.addr,
                c.counted_mem.load(Relaxed),
                self.memory.load(Relaxed)
            );
            c.kill();
            self.memory
                .fetch_sub(c.counted_mem.swap(0, Relaxed), Relaxed);
            evicted += 1;
        }
        if self.memory.load(Relaxed) >= limit {
            tracing::warn!("Over client maxmemory after evicting all evictable clients");
        }
        evicted
    }

    /// Connected clients (INFO's `connected_clients`, `maxclients`): a
    /// killed one is no longer counted, though its task may not have run
    /// yet (see [`Clients::all`]).
    pub(crate) fn count(&self) -> usize {
        self.map
            .lock()
            .values()
            .filter(|c| !c.killed.load(Relaxed))
            .count()
    }

    /// The connected client `id`; none once it was killed (see
    /// [`Clients::all`]).
    pub(crate) fn get(&self, id: ClientId) -> Option<Arc<ClientHandle>> {
        self.map
            .lock()
            .get(&id)
            .filter(|c| !c.killed.load(Relaxed))
            .cloned()
    }

    /// Bytes of pushes queued to connections that are not stuck writing,
    /// and of the reply buffers they are writing: they leave as soon as
    /// those connections' tasks run or the io_uring path submits. Redis
    /// writes such output before it runs the next command, so eviction does
    /// not count them (else the invalidations of evicted keys, still
    /// queued, would make more keys go). Nor what killed clients hold
    /// (an evicted client's buffers, its task not run yet since): Redis
    /// frees a client it evicts at once, so keys are never evicted for it.
    pub(crate) fn pushes_in_flight(&self) -> u64 {
        self.map
            .lock()
            .values()
            .map(|c| {
                if c.killed.load(Relaxed) {
                    c.memory() as u64
                } else if c.write.stalled.load(Relaxed) {
                    0
                } else {
                    (c.push_bytes.load(Relaxed) + c.out_pending.load(Relaxed)) as u64
                }
            })
            .sum()
    }

    /// All connected clients, ordered by id (as CLIENT LIST prints them).
    /// A killed client is gone from the moment it is killed, whether or not
    /// its connection's task has run since to unregister it: Redis frees a
    /// client CLIENT KILL names at once, and one freed asynchronously (a
    /// subscriber whose ACL permission was revoked, an evicted client)
    /// before its event loop serves the next command. On a loaded machine
    /// the killer's next command can run before the killed connection's
    /// task is scheduled, so the registry, not the task, decides.
    pub(crate) fn all(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self
            .map
            .lock()
            .values()
            .filter(|c| !c.killed.load(Relaxed))
            .cloned()
            .collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// Every registered client, killed ones whose tasks have not ended
    /// yet included (their memory is still counted until they are seen).
    fn registered(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self.map.lock().values().cloned().collect();
        v.sort_by_key(|c| c.id);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two batches that each read what the other wrote: the second wait,
    /// which would close the cycle, is not made; the first ends when the
    /// second batch's gate opens.
    #[tokio::test]
    async fn a_wait_that_closes_a_cycle_is_not_made() {
        let clients = Arc::new(Clients::default());
        let (a, b) = (Arc::new(Gate::new(1)), Arc::new(Gate::new(2)));
        let first = {
            let (clients, b) = (clients.clone(), b.clone());
            tokio::spawn(async move { clients.wait_gate(1, &b).await })
        };
        // Client 1 now waits for client 2's batch.
        while !clients.waits_for.lock().contains_key(&1) {
            tokio::task::yield_now().await;
        }
        tokio::time::timeout(std::time::Duration::from_secs(5), clients.wait_gate(2, &a))
            .await
            .expect("client 2 does not wait for client 1, which waits for it");
        assert!(!first.is_finished());
        b.open();
        first.await.unwrap();
        assert!(clients.waits_for.lock().is_empty());
        // An open gate is never waited for.
        clients.wait_gate(2, &b).await;
    }
}

/// Input handed from a connection's task to its Lua debugging session:
/// bytes read and whether the input ended.
#[derive(Default)]
pub(crate) struct DebugInput {
    state: Mutex<(Vec<u8>, bool)>,
    ready: parking_lot::Condvar,
}

/// What the connection buffers for a session at most: beyond the session's
/// own 1 MB limit, the rest is dropped (the session fails first).
const DEBUG_INPUT_MAX: usize = 2 << 20;

impl DebugInput {
    /// The connection read `data` (empty: the input ended).
    pub(crate) fn feed(&self, data: &[u8]) {
        let mut s = self.state.lock();
        if data.is_empty() {
            s.1 = true;
        } else if s.0.len() < DEBUG_INPUT_MAX {
            s.0.extend_from_slice(data);
        }
        self.ready.notify_all();
    }

    /// Waits up to `timeout` for input: `Some(bytes)` (empty if none came),
    /// or `None` once the input ended.
    pub(crate) fn take(&self, timeout: std::time::Duration) -> Option<Vec<u8>> {
        let mut s = self.state.lock();
        if s.0.is_empty() && !s.1 {
            self.ready.wait_for(&mut s, timeout);
        }
        if !s.0.is_empty() {
            return Some(std::mem::take(&mut s.0));
        }
        if s.1 { None } else { Some(Vec::new()) }
    }
}
