//! A connection's session state ([`Client`]): what only its own commands
//! change — its database, user, transaction queue, watched keys,
//! subscriptions, CLIENT REPLY mode — and the per-connection tally of
//! calls not yet in the shared counters.
//!
//! It lives beside [`Ctx`](super::Ctx), which hands it to every handler;
//! what other connections may see of a client is its registry handle
//! ([`crate::clients::ClientHandle`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use bytes::Bytes;

use crate::clients::ClientHandle;
use crate::commands::{Args, CallStats, Command, OwnedArgs};
use crate::keyspace::{Key, WatchFlag};

/// A connection's private state: what only its own commands change.
///
/// Its fields are `pub(super)` where only the commands (MULTI/EXEC, WATCH,
/// the pub/sub family, RESET) change them, through the methods below from
/// anywhere else; `pub(crate)` where the execution layer or the connection
/// keeps its own per-client state here (the call tally, the batch clock,
/// CLIENT REPLY's progress, the held invalidations, a script's stand-in).
/// Where a sampled command stands in the check for what cluster mode
/// would refuse (`cluster_incompatible_ops`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompatCheck {
    /// Not sampled, or already counted: nothing more is checked.
    Off,
    /// Checked so far, its keys in this slot (None: no key yet).
    Slot(Option<u16>),
}

pub(crate) struct Client {
    pub(crate) handle: Arc<ClientHandle>,
    pub(crate) db: usize,
    /// Authenticated by AUTH/HELLO, or connected while the default user
    /// needed no password (Redis's `c->authenticated`).
    pub(crate) authenticated: bool,
    /// The ACL user commands run as; None for the server's own stand-ins,
    /// which run anything (Redis's NULL user).
    pub(crate) user: Option<Arc<crate::acl::User>>,
    /// [`crate::acl::Acl::generation`] when `user` was read.
    pub(crate) acl_generation: u64,
    /// Commands queued by MULTI; None outside a transaction.
    pub(super) multi: Option<Vec<OwnedArgs>>,
    /// A queued command failed to parse: EXEC will abort.
    pub(super) multi_error: bool,
    /// True while EXEC runs the queue (blocking commands must not block).
    pub(super) in_exec: bool,
    /// True for the client a script's `redis.call` runs as (TIME answers
    /// the script's frozen instant).
    pub(crate) in_script: bool,
    /// A standalone server's sampled check of the running command for
    /// what cluster mode would refuse (Redis 8.0's
    /// `cluster_compatibility_check_slot`): a script it runs goes on
    /// checking its calls from there.
    pub(crate) compat: CompatCheck,
    /// `SCRIPT DEBUG`: the mode (`lua::ldb::OFF|YES|SYNC`) the next EVAL
    /// is debugged in.
    pub(crate) ldb: u8,
    pub(super) watched: Vec<(usize, Key)>,
    pub(super) watch_flag: WatchFlag,
    pub(super) channels: HashSet<Bytes>,
    pub(super) patterns: HashSet<Bytes>,
    pub(super) shard_channels: HashSet<Bytes>,
    /// Commands run since the last flush into the server's counters (one
    /// shared atomic add per batch, not per command).
    pub(crate) commands: u64,
    /// The stand-in that re-runs a blocked command when one of its keys
    /// got data (MONITOR showed the command when it first ran).
    pub(crate) serving_waiter: bool,
    /// CLIENT REPLY's state.
    pub(crate) reply: ReplyMode,
    /// Tracking invalidations of this client's own keys, held until its
    /// reply is in the output buffer.
    pub(crate) tracking_held: crate::tracking::Pending,
    /// Memory was over `maxmemory` with nothing left to evict when this
    /// client's command was verified (Redis's `pre_command_oom_state`):
    /// scripts it starts refuse deny-OOM commands.
    pub(crate) oom: bool,
    /// The system clock reading (µs) that ended this client's previous
    /// command, while no await has passed since: the next command of the
    /// same batch starts and is dated by it instead of reading the clock
    /// again. Redis reads it twice per `call`; back-to-back pipelined
    /// commands share one reading between them. Cleared by whoever awaits.
    pub(crate) batch_clock: Option<u64>,
    /// The shards this batch wrote before it first let other clients run
    /// (see `execution::before_yield`); once it has, `batch_yielded`, and
    /// its writes mark their shards at once.
    pub(crate) batch_written: crate::keyspace::ShardSet,
    pub(crate) batch_yielded: bool,
    /// This connection's calls not yet in their command's shared counters.
    pub(crate) tally: CallTally,
    /// How many commands are running on this client, one inside another
    /// (EXEC's), while one runs.
    pub(crate) nesting: u32,
    /// µs of this batch's top-level commands, not yet in INFO's
    /// `eventloop_duration_cmd_sum`.
    pub(crate) cmd_usec: u64,
    /// What a replica's REPLCONF told before its SYNC/PSYNC.
    pub(crate) replica_capa: crate::replication::ReplicaCapa,
    /// Set by SYNC/PSYNC: once its replies are written, this connection
    /// feeds a replica (`network::feed`).
    pub(crate) attach: Option<crate::replication::Attach>,
    /// The replication offset after this client's last write (Redis's
    /// `c->woff`): what WAIT waits for replicas to acknowledge.
    pub(crate) woff: u64,
    /// Where the AOF's stream ended after this client's last write:
    /// what WAITAOF waits for the local fsync to reach.
    pub(crate) aof_woff: u64,
    /// The replica link's client, which applies this server's primary's
    /// stream (Redis's CLIENT_MASTER): obeyed whatever a client would be
    /// refused (`execution::verify`).
    pub(crate) master: bool,
    /// ASKING: the next command may use a slot this node imports (Redis's
    /// CLIENT_ASKING, cleared after that command outside MULTI).
    pub(crate) asking: bool,
    /// READONLY: a cluster replica serves this client's reads of its
    /// primary's slots (Redis's CLIENT_READONLY).
    pub(crate) cluster_readonly: bool,
}

/// A connection's calls of one command not yet added to that command's
/// shared counters (INFO commandstats and latencystats). A pipeline
/// usually repeats one command, and three atomic adds per call to
/// counters every connection shares cost more than parsing the call did:
/// the connection adds its calls up and hands them over when another
/// command is about to run (so what that one reads is current, as it is
/// in Redis) and when its batch ends, before its replies are written.
/// Clients that do not batch (scripts' and blocked clients' stand-ins)
/// count each call at once.
#[derive(Default)]
pub(crate) struct CallTally {
    /// Set by the connection task, which flushes at the end of each batch.
    pub(crate) batching: bool,
    cmd: Option<&'static Command>,
    calls: u64,
    usec: u64,
    /// Calls by duration for 0–3 µs (a fast command's); longer ones are
    /// recorded at once.
    short: [u64; 4],
}

impl CallTally {
    /// Before `cmd` runs: hands over another command's calls.
    pub(crate) fn before(&mut self, cmd: &'static Command) {
        if self.cmd.is_some_and(|c| !std::ptr::eq(c, cmd)) {
            self.flush();
        }
    }

    /// Counts a call of `cmd` that took `usec` (into its latency histogram
    /// too with `latency`).
    pub(crate) fn add(&mut self, cmd: &'static Command, usec: u64, latency: bool) {
        if !self.batching {
            let stats = CallStats::of(cmd);
            stats.calls.fetch_add(1, Relaxed);
            stats.usec.fetch_add(usec, Relaxed);
            if latency {
                stats.latency.record_usec(usec);
            }
            return;
        }
        self.before(cmd);
        self.cmd = Some(cmd);
        self.calls += 1;
        self.usec += usec;
        if latency {
            match self.short.get_mut(usec as usize) {
                Some(n) => *n += 1,
                None => CallStats::of(cmd).latency.record_usec(usec),
            }
        }
    }

    /// Adds what was counted to the command's shared counters.
    pub(crate) fn flush(&mut self) {
        let Some(cmd) = self.cmd.take() else {
            return;
        };
        let stats = CallStats::of(cmd);
        stats
            .calls
            .fetch_add(std::mem::take(&mut self.calls), Relaxed);
        stats
            .usec
            .fetch_add(std::mem::take(&mut self.usec), Relaxed);
        for (usec, n) in self.short.iter_mut().enumerate() {
            if *n > 0 {
                stats
                    .latency
                    .record_usec_times(usec as u64, std::mem::take(n));
            }
        }
    }
}

/// CLIENT REPLY: whether this client's replies are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyMode {
    On,
    Off,
    /// CLIENT REPLY SKIP ran: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

impl Client {
    pub(crate) fn new(handle: Arc<ClientHandle>, auth_required: bool) -> Client {
        Client {
            handle,
            db: 0,
            authenticated: !auth_required,
            user: None,
            acl_generation: 0,
            multi: None,
            multi_error: false,
            compat: CompatCheck::Off,
            asking: false,
            cluster_readonly: false,
            in_exec: false,
            in_script: false,
            ldb: 0,
            watched: Vec::new(),
            watch_flag: Arc::new(AtomicBool::new(false)),
            channels: HashSet::new(),
            patterns: HashSet::new(),
            shard_channels: HashSet::new(),
            commands: 0,
            serving_waiter: false,
            reply: ReplyMode::On,
            tracking_held: Vec::new(),
            oom: false,
            batch_clock: None,
            batch_written: crate::keyspace::ShardSet(0),
            batch_yielded: false,
            tally: CallTally::default(),
            nesting: 0,
            cmd_usec: 0,
            replica_capa: Default::default(),
            attach: None,
            woff: 0,
            aof_woff: 0,
            master: false,
        }
    }

    /// A stand-in for a blocked client while the server serves it.
    pub(crate) fn for_waiter(handle: Arc<ClientHandle>, db: usize, resp3: bool) -> Client {
        let mut c = Client::new(handle, false);
        c.db = db;
        c.serving_waiter = true;
        c.handle.resp.store(if resp3 { 3 } else { 2 }, Relaxed);
        c
    }

    /// Runs the client's commands as `user` from now on.
    pub(crate) fn set_user(&mut self, user: Arc<crate::acl::User>, generation: u64) {
        let mut name = self.handle.user.lock();
        if *name != user.name() {
            *name = user.name().to_vec();
        }
        drop(name);
        self.user = Some(user);
        self.acl_generation = generation;
    }

    pub(crate) fn resp3(&self) -> bool {
        self.handle.resp.load(Relaxed) == 3
    }

    pub(crate) fn in_subscribed_resp2(&self) -> bool {
        !self.resp3() && self.subscribed()
    }

    /// Subscribed to any channel, pattern or shard channel.
    pub(crate) fn subscribed(&self) -> bool {
        !self.channels.is_empty() || !self.patterns.is_empty() || !self.shard_channels.is_empty()
    }

    /// True when a blocking command may wait (not inside MULTI/EXEC).
    pub(crate) fn can_block(&self) -> bool {
        !self.in_exec && !self.in_script
    }

    /// Records the command for CLIENT LIST's `cmd=`. The idle clock is not
    /// touched here but by the connection, once per read and per blocked
    /// reply (as Redis updates `lastinteraction` on socket I/O), which saves
    /// a clock read per pipelined command.
    pub(crate) fn note_command(&self, cmd: &'static Command) {
        self.handle
            .last_cmd_ptr
            .store(cmd as *const Command as usize, Relaxed);
    }

    pub(crate) fn queue(&mut self, args: Args<'_>) {
        if let Some(q) = &mut self.multi {
            q.push(args.to_owned());
            self.handle.multi.store(q.len() as i32, Relaxed);
            let bytes: usize = args.iter().map(|a| a.len()).sum();
            self.handle.multi_mem.fetch_add(bytes, Relaxed);
        }
    }

    pub(crate) fn select(&mut self, db: usize) {
        self.db = db;
        self.handle.db.store(db, Relaxed);
    }

    /// Inside MULTI (commands are being queued).
    pub(crate) fn in_multi(&self) -> bool {
        self.multi.is_some()
    }

    /// The commands MULTI queued so far; None outside a transaction.
    pub(crate) fn queued(&self) -> Option<&[OwnedArgs]> {
        self.multi.as_deref()
    }

    /// A command was refused while MULTI queues: EXEC will abort (Redis's
    /// `flagTransaction`). Nothing outside a transaction.
    pub(crate) fn flag_transaction(&mut self) {
        if self.multi.is_some() {
            self.multi_error = true;
        }
    }

    /// Whether the client WATCHes any key.
    pub(crate) fn watching(&self) -> bool {
        !self.watched.is_empty()
    }

    /// On disconnect: takes the client's watches off their keys (which
    /// locks the keys' shards).
    pub(crate) fn unwatch_on_close(&mut self, store: &crate::keyspace::Store) {
        store.unwatch(&self.watched, &self.watch_flag);
        self.watched.clear();
    }

    /// Redis's estimate of what a client's own structures cost (64-bit
    /// sizes from `multiStateMemOverhead`, `pubsubMemOverhead` and the
    /// tracking prefixes' rax): a list node and a `watchedKey` per watched
    /// key, a list node per pattern, a dict entry and slot per channel, a
    /// rax node per prefix.
    pub(crate) fn structures_memory(&self, shared: &crate::commands::Services) -> usize {
        let h = &self.handle;
        let channels = |n: u32| {
            let n = n as usize;
            n * 24 + if n == 0 { 0 } else { n.next_power_of_two() * 8 }
        };
        let mut mem = self.watched.len() * (24 + 32)
            + h.psubs.load(Relaxed) as usize * 24
            + channels(h.subs.load(Relaxed))
            + channels(h.ssubs.load(Relaxed));
        if h.tracking.load(Relaxed) & crate::tracking::BCAST != 0 {
            mem += shared.tracking.prefixes_of(h.id).len() * 32;
        }
        mem
    }
}

/// Client eviction (`maxmemory-clients`) after `c`'s buffers changed:
/// notes its memory and disconnects the largest clients while all of them
/// together are over the limit. Costs one load while the limit is off.
pub(crate) fn account_memory(shared: &crate::commands::Services, c: &ClientHandle) {
    if shared.config.client_eviction_limit() == 0 {
        return;
    }
    shared.clients.note_memory(c);
    evict_clients(shared, false);
}

/// Disconnects clients while they hold more than `maxmemory-clients`
/// together (`refresh`: recount them all first, after a limit change).
pub(crate) fn evict_clients(shared: &crate::commands::Services, refresh: bool) {
    let limit = shared.config.client_eviction_limit();
    let evicted = shared
        .clients
        .evict(limit, refresh, |id| shared.monitors.is_monitor(id));
    shared.clients.evicted.fetch_add(evicted, Relaxed);
}
