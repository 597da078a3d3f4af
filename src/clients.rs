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

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed,
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
    /// Already encoded: a tracking invalidation or a MONITOR line.
    Raw(Bytes),
    /// From the clients' cron: give back the read buffer's unused room
    /// (all of it when `idle`), as Redis's `clientsCronResizeQueryBuffer`.
    ShrinkQuery {
        idle: bool,
    },
}

impl Push {
    pub(crate) fn size(&self) -> usize {
        match self {
            Push::Message { channel, payload } | Push::SMessage { channel, payload } => {
                channel.len() + payload.len() + 32
            }
            Push::PMessage {
                pattern,
                channel,
                payload,
            } => pattern.len() + channel.len() + payload.len() + 48,
            Push::Raw(b) => b.len(),
            Push::ShrinkQuery { .. } => 0,
        }
    }
}

/// What other tasks can see of, and do to, one connection.
pub(crate) struct ClientHandle {
    pub(crate) id: ClientId,
    /// The socket's file descriptor (CLIENT LIST's `fd=`).
    pub(crate) fd: i32,
    /// Request bytes read but not yet run, counted from the running
    /// request (CLIENT LIST's `qbuf=`), and the read buffer's spare room.
    pub(crate) qbuf: AtomicUsize,
    pub(crate) qbuf_free: AtomicUsize,
    /// Argument bytes queued by MULTI (CLIENT LIST's `multi-mem=`).
    pub(crate) multi_mem: AtomicUsize,
    pub(crate) addr: String,
    pub(crate) laddr: String,
    pub(crate) created: Instant,
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
    /// Address of the last command's table entry (0 = none yet).
    pub(crate) last_cmd_ptr: AtomicUsize,
    /// When the client last sent something, on [`crate::clock::coarse_ms`]'s
    /// clock.
    last_active_ms: AtomicU64,
    pub(crate) killed: AtomicBool,
    pub(crate) kill_notify: Notify,
    /// Client-side caching flags (tracking's `ON`, `BCAST`, …)
    /// and the client invalidations are redirected to (0: none).
    pub(crate) tracking: AtomicU32,
    pub(crate) tracking_redirect: AtomicU64,
    /// CLIENT NO-EVICT (CLIENT LIST's `e`).
    pub(crate) no_evict: AtomicBool,
    /// Held by CLIENT PAUSE (CLIENT LIST's `b`).
    pub(crate) paused: AtomicBool,
    /// True while the connection waits in a blocking command.
    pub(crate) blocked: AtomicBool,
    /// CLIENT UNBLOCK's request: 0 none, [`UNBLOCK_TIMEOUT`] or [`UNBLOCK_ERROR`].
    pub(crate) unblock: AtomicU8,
    pub(crate) unblock_notify: Notify,
    push_tx: mpsc::UnboundedSender<Push>,
    /// Bytes of pushes queued or buffered but not yet written to the
    /// socket: what the pub/sub output buffer limit measures.
    pub(crate) push_bytes: AtomicUsize,
    /// Bytes of the reply buffer a write has taken and not yet finished
    /// with, less the pushes in it (already in `push_bytes`): on the
    /// io_uring path it is held until the loop's next submit, while other
    /// connections' commands may run.
    pub(crate) out_pending: AtomicUsize,
    /// True while a write of the connection waits for room in its socket
    /// (a client that does not read keeps it true): its queued pushes are
    /// then held memory, not bytes on their way out (see
    /// [`Clients::pushes_in_flight`]). Set by the socket layer, which alone
    /// knows whether a write waited on the peer or only on the next submit
    /// of the io_uring path; cleared by the connection once it is written.
    pub(crate) writing: Arc<AtomicBool>,
    /// Capacity of the connection's read and reply buffers after its last
    /// batch (INFO memory's `mem_clients_normal`).
    pub(crate) buffer_bytes: AtomicUsize,
    /// When (ms since `created`, plus one) the queue last went over the soft
    /// limit; 0 while under it.
    soft_over_since: AtomicU64,
    /// This client's part of [`Clients::memory`] (its last [`ClientHandle::memory`]).
    counted_mem: AtomicUsize,
    /// What its watched keys, subscriptions and tracking prefixes cost, as
    /// Redis estimates it (the session's `Client::structures_memory`); kept
    /// while client eviction is on.
    pub(crate) structures_mem: AtomicUsize,
}

/// CLIENT UNBLOCK … TIMEOUT: the client gets its command's timeout reply.
pub(crate) const UNBLOCK_TIMEOUT: u8 = 1;
/// CLIENT UNBLOCK … ERROR: the client gets `-UNBLOCKED …`.
pub(crate) const UNBLOCK_ERROR: u8 = 2;

impl ClientHandle {
    /// Redis's `islocalClient` for TCP: the peer is exactly 127.0.0.1 or
    /// ::1 (what `enable-…` settings' `local` value admits).
    pub(crate) fn is_local(&self) -> bool {
        let host = self.addr.rsplit_once(':').map_or("", |(h, _)| h);
        matches!(host, "127.0.0.1" | "::1" | "[::1]")
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
        self.buffer_bytes
            .load(Relaxed)
            .saturating_sub(self.qbuf.load(Relaxed) + self.qbuf_free.load(Relaxed))
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
        let queued = (self.push_bytes.fetch_add(msg.size(), Relaxed) + msg.size()) as u64;
        if self.over_output_limit(queued, limit) {
            return false;
        }
        self.push_tx.send(msg).is_ok()
    }

    /// Closes the client for its output buffer, logged as Redis logs it.
    fn kill_for_output_limit(&self, queued: u64, which: &str) {
        if !self.killed.swap(true, Relaxed) {
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
        if limit.hard != 0 && bytes > limit.hard {
            self.kill_for_output_limit(bytes, "hard");
            return true;
        }
        if limit.soft != 0 && bytes > limit.soft {
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
    evicting: Mutex<()>,
}

impl Clients {
    /// Registers a new connection; returns its handle and push queue.
    pub(crate) fn register(
        &self,
        addr: String,
        laddr: String,
        fd: i32,
    ) -> (Arc<ClientHandle>, mpsc::UnboundedReceiver<Push>) {
        let id = self.next_id.fetch_add(1, Relaxed) + 1;
        let (tx, rx) = mpsc::unbounded_channel();
        let h = Arc::new(ClientHandle {
            id,
            fd,
            qbuf: AtomicUsize::new(0),
            qbuf_free: AtomicUsize::new(0),
            multi_mem: AtomicUsize::new(0),
            addr,
            laddr,
            created: Instant::now(),
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
            last_cmd_ptr: AtomicUsize::new(0),
            last_active_ms: AtomicU64::new(crate::clock::coarse_ms()),
            killed: AtomicBool::new(false),
            kill_notify: Notify::new(),
            tracking: AtomicU32::new(0),
            tracking_redirect: AtomicU64::new(0),
            no_evict: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            blocked: AtomicBool::new(false),
            unblock: AtomicU8::new(0),
            unblock_notify: Notify::new(),
            push_tx: tx,
            push_bytes: AtomicUsize::new(0),
            out_pending: AtomicUsize::new(0),
            writing: Arc::new(AtomicBool::new(false)),
            buffer_bytes: AtomicUsize::new(0),
            soft_over_since: AtomicU64::new(0),
            counted_mem: AtomicUsize::new(0),
            structures_mem: AtomicUsize::new(0),
        });
        self.map.lock().insert(id, h.clone());
        self.total_connections.fetch_add(1, Relaxed);
        (h, rx)
    }

    pub(crate) fn unregister(&self, id: ClientId) {
        if let Some(c) = self.map.lock().remove(&id) {
            self.memory
                .fetch_sub(c.counted_mem.swap(0, Relaxed), Relaxed);
        }
    }

    /// Brings `c`'s part of the clients' memory total up to date (its
    /// connection calls this as its buffers change, while client eviction
    /// is on).
    pub(crate) fn note_memory(&self, c: &ClientHandle) {
        // A killed client's memory is on its way out (and evicting one
        // already took it off the total).
        let now = if c.killed.load(Relaxed) {
            0
        } else {
            c.memory()
        };
        let before = c.counted_mem.swap(now, Relaxed);
        if now >= before {
            self.memory.fetch_add(now - before, Relaxed);
        } else {
            self.memory.fetch_sub(before - now, Relaxed);
        }
        // Evicted meanwhile (evict took its part off before this added it
        // back): take it off again.
        if now != 0 && c.killed.load(Relaxed) {
            self.memory
                .fetch_sub(c.counted_mem.swap(0, Relaxed), Relaxed);
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
            for c in self.all() {
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
        for c in self.all() {
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

    pub(crate) fn count(&self) -> usize {
        self.map.lock().len()
    }

    pub(crate) fn get(&self, id: ClientId) -> Option<Arc<ClientHandle>> {
        self.map.lock().get(&id).cloned()
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
                } else if c.writing.load(Relaxed) {
                    0
                } else {
                    (c.push_bytes.load(Relaxed) + c.out_pending.load(Relaxed)) as u64
                }
            })
            .sum()
    }

    /// All clients, ordered by id (as CLIENT LIST prints them).
    pub(crate) fn all(&self) -> Vec<Arc<ClientHandle>> {
        let mut v: Vec<_> = self.map.lock().values().cloned().collect();
        v.sort_by_key(|c| c.id);
        v
    }
}
