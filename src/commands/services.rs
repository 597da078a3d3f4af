//! The services commands run with, built once at startup and shared by
//! every connection behind one `Arc`: the data (store, window rules,
//! evictor), the settings, the clock, the registries (clients, pub/sub,
//! tracking, ACL users, MONITOR), the script engine, the files (persistence
//! state, AOF), and the counters INFO reports.
//!
//! Only the command layer and the layers above it (execution, network,
//! startup) hold it. The layers below get a narrow view instead and report
//! upward through a seam that these services implement here:
//! [`keyspace::Env`](crate::keyspace::Env) and
//! [`keyspace::Events`](crate::keyspace::Events) for the keyspace,
//! [`rdb::file::Host`](crate::rdb::file::Host),
//! [`persistence::Host`](crate::persistence::Host) and
//! [`aof::Host`](crate::aof::Host) for the files.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use tokio::sync::{Notify, watch};

use crate::blocked::Blocking;
use crate::clients::Clients;
use crate::clock::Clock;
use crate::config::Config;
use crate::keyspace::events::{Invalidated, OwnInvalidations};
use crate::keyspace::propagate::{Op, Sink};
use crate::keyspace::{Env, Events, Store};
use crate::pubsub::PubSub;

pub(crate) struct Services {
    pub(crate) store: Store,
    pub(crate) config: Config,
    pub(crate) clock: Clock,
    pub(crate) clients: Clients,
    pub(crate) pubsub: PubSub,
    pub(crate) tracking: crate::tracking::Tracking,
    /// CLIENT PAUSE's state.
    pub(crate) pause: crate::pause::Pause,
    /// A shutdown waiting for lagging replicas.
    pub(crate) shutdown: crate::shutdown::Shutdown,
    /// Clients in MONITOR mode.
    pub(crate) monitors: crate::commands::monitor::Monitors,
    pub(crate) blocking: Blocking,
    pub(crate) windows: crate::keyspace::windows::Windows,
    pub(crate) scripting: crate::commands::lua::Scripting,
    pub(crate) stats: crate::stats::Stats,
    /// ACL users and the ACL log.
    pub(crate) acl: crate::acl::Acl,
    /// INFO errorstats: error replies by their first word (`ERR`, `WRONGTYPE`, …).
    pub(crate) error_stats: parking_lot::Mutex<std::collections::BTreeMap<String, u64>>,
    /// SLOWLOG's entries.
    pub(crate) slowlog: parking_lot::Mutex<crate::slowlog::SlowLog>,
    /// LATENCY's events.
    pub(crate) latency: parking_lot::Mutex<crate::latency::Monitor>,
    /// The lazyfree thread and INFO's counts of it.
    pub(crate) lazyfree: crate::keyspace::lazyfree::LazyFree,
    /// Eviction under `maxmemory`: its candidate pool and counters.
    pub(crate) evictor: crate::keyspace::evict::Evictor,
    pub(crate) started: Instant,
    pub(crate) run_id: String,
    /// `DEBUG PAUSE-CRON 1`: the clients' cron stands still (Redis 7.2+'s
    /// `server.pause_cron`, for tests that must see a buffer before the
    /// cron trims it).
    pub(crate) cron_paused: std::sync::atomic::AtomicBool,
    /// DEBUG SLEEPs running. Redis's whole server stands still through
    /// one, its cron included: a primary's keepalives to waiting replicas
    /// stop, which is how Redis's tests freeze a primary.
    pub(crate) sleeping: std::sync::atomic::AtomicUsize,
    /// SAVE/BGSAVE's state, the last save's time (LASTSAVE) and loading.
    pub(crate) persistence: crate::persistence::State,
    /// MIGRATE's cached connections to target instances.
    pub(crate) migrate: crate::migrate::SocketCache,
    /// The append-only file, the sink of the propagated commands.
    pub(crate) aof: crate::aof::Aof,
    /// Replication's state (IDs, offset, backlog, replicas, the link to
    /// a primary), the other sink of the propagated commands.
    pub(crate) replication: crate::replication::Replication,
    /// Cluster mode's node table and nodes.conf (`cluster-enabled yes`);
    /// `None` for a standalone server, which every cluster check tests
    /// first.
    pub(crate) cluster: Option<crate::cluster::Cluster>,
    shutdown_tx: watch::Sender<bool>,
    /// Signalled by the SHUTDOWN command.
    pub(crate) stop: Notify,
}

/// Redis stops tracking new error codes past this many (a client could
/// otherwise grow the table with made-up ones, e.g. from scripts).
const ERROR_CODES_MAX: usize = 128;

/// The one entry errorstats keeps once it stopped counting by code.
const ERRORSTATS_DISABLED: &str = "ERRORSTATS_DISABLED";

impl Services {
    /// Whether the server's cron stands still: `DEBUG PAUSE-CRON 1`, or a
    /// DEBUG SLEEP running.
    pub(crate) fn cron_held(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.cron_paused.load(Relaxed) || self.sleeping.load(Relaxed) > 0
    }

    /// Counts one error reply for INFO errorstats (the error path only).
    pub(crate) fn count_error(&self, msg: &[u8]) {
        let msg = msg.strip_prefix(b"-").unwrap_or(msg);
        let code = msg.split(|&b| b == b' ').next().unwrap_or(msg);
        let code = String::from_utf8_lossy(code);
        self.stats.error_replies.fetch_add(1, Relaxed);
        let mut map = self.error_stats.lock();
        // Past the limit Redis stops counting by code (until CONFIG
        // RESETSTAT), says so in the log with the codes it had, and keeps
        // one entry that says it stopped (`incrementErrorCount`).
        if map.contains_key(ERRORSTATS_DISABLED) {
            return;
        }
        if let Some(n) = map.get_mut(code.as_ref()) {
            *n += 1;
        } else if map.len() < ERROR_CODES_MAX {
            map.insert(code.into_owned(), 1);
        } else {
            tracing::warn!(
                "Errorstats stopped adding new errors because the number of errors reached the limit, may be misuse of lua error_reply, please check INFO ERRORSTATS, this can be re-enabled via CONFIG RESETSTAT."
            );
            let codes: Vec<&str> = map.keys().map(String::as_str).collect();
            tracing::warn!("Current errors code list: {}", codes.join(", "));
            let old = std::mem::take(&mut *map);
            map.insert(ERRORSTATS_DISABLED.into(), 1);
            drop(map);
            self.free_error_table(old);
        }
    }

    /// Lets go of an error table (Redis's `freeErrorsRadixTreeAsync`): a
    /// large one is the lazyfree thread's, counted in `lazyfreed_objects`.
    pub(crate) fn free_error_table(&self, table: std::collections::BTreeMap<String, u64>) {
        /// Redis's `LAZYFREE_THRESHOLD`.
        const LAZY_OVER: usize = 64;
        let n = table.len();
        if n > LAZY_OVER {
            self.lazyfree.free(Box::new(table), n);
        }
    }

    pub(crate) fn new(config: Config, shards: usize) -> Services {
        let databases = config.databases;
        let clock = Clock::default();
        let now = clock.now_ms() / 1000;
        Services {
            store: Store::new(shards, databases),
            config,
            clock,
            clients: Clients::default(),
            pubsub: PubSub::default(),
            tracking: Default::default(),
            pause: Default::default(),
            shutdown: Default::default(),
            monitors: Default::default(),
            blocking: Blocking::default(),
            windows: Default::default(),
            scripting: Default::default(),
            stats: Default::default(),
            acl: crate::acl::Acl::new(),
            error_stats: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            lazyfree: Default::default(),
            evictor: Default::default(),
            started: Instant::now(),
            run_id: (0..40)
                .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
                .collect(),
            cron_paused: Default::default(),
            sleeping: Default::default(),
            persistence: crate::persistence::State::new(now),
            migrate: Default::default(),
            aof: Default::default(),
            replication: Default::default(),
            cluster: None,
            shutdown_tx: watch::channel(false).0,
            stop: Notify::new(),
        }
    }

    pub(crate) fn shutdown_rx(&self) -> watch::Receiver<bool> {
        self.shutdown_tx.subscribe()
    }

    /// Tells every connection and background task to finish.
    pub(crate) fn shut_down(&self) {
        let _ = self.shutdown_tx.send(true);
    }
}

impl Services {
    /// What a keyspace view works with (see [`Env`]): the data and the
    /// services below the keyspace, and this server as its [`Events`].
    pub(crate) fn env(&self) -> Env<'_> {
        Env {
            store: &self.store,
            config: &self.config,
            clock: &self.clock,
            windows: &self.windows,
            evictor: &self.evictor,
            pause: &self.pause,
            dirty: &self.stats.dirty,
            expire_stats: &self.stats.expire,
            latency: &self.latency,
            lazyfree: &self.lazyfree,
            events: self,
        }
    }
}

/// An RDB load's function libraries go to the script engine; its progress
/// to INFO's loading figures.
impl crate::rdb::file::Host for Services {
    fn load_library(&self, code: &[u8], replace: bool) -> Result<(), crate::rdb::RdbError> {
        let mut engine = self.scripting.engine().map_err(crate::rdb::RdbError::new)?;
        engine
            .load_library(code, replace)
            .map_err(|e| crate::rdb::RdbError::new(format!("Failed loading library: {e}")))?;
        self.scripting.update_stats(&mut engine);
        Ok(())
    }

    fn progress(&self, bytes: u64) {
        self.persistence.loading.advance(bytes);
    }

    fn aborted(&self) -> bool {
        self.replication
            .load_abort
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// What the files (RDB saves, the AOF) work with: this server's data and
/// settings, their state, and the script engine's function libraries.
impl crate::persistence::Host for Services {
    fn env(&self) -> Env<'_> {
        Services::env(self)
    }

    fn persistence(&self) -> &crate::persistence::State {
        &self.persistence
    }

    fn library_codes(&self) -> Option<Vec<Vec<u8>>> {
        self.scripting.library_codes()
    }

    fn flush_libraries(&self) {
        if self.scripting.libraries_count.load(Relaxed) > 0
            && let Ok(mut e) = self.scripting.engine()
        {
            e.flush_libraries();
            self.scripting.update_stats(&mut e);
        }
    }

    fn aof_rewriting(&self) -> bool {
        self.aof.rewrite_in_progress.load(Relaxed)
    }

    fn repl_info(&self) -> Option<(usize, String, u64)> {
        self.replication.save_info()
    }
}

impl crate::aof::Host for Services {
    fn aof(&self) -> &crate::aof::Aof {
        &self.aof
    }

    fn repl_offset(&self) -> u64 {
        self.replication.offset()
    }

    fn set_repl_offset(&self, offset: u64) {
        self.replication.set_offset_after_aof_load(offset);
    }
}

/// Where the keyspace's reports go: pub/sub, client tracking, the blocking
/// queues and the AOF all hang off the server.
impl Events for Services {
    fn tracking_used(&self) -> bool {
        self.tracking.used()
    }

    fn send_invalidations(&self, invalidated: &mut Invalidated, own: &mut OwnInvalidations) {
        let tracking = &self.tracking;
        if !invalidated.is_empty() {
            tracking.invalidate(&self.clients, invalidated, None, own);
        }
        if !own.is_empty() {
            tracking.push_pending(&self.clients, own);
        }
        tracking.broadcast(&self.clients);
    }

    fn notify_keyspace(&self, flags: u32, db: usize, event: &str, key: &[u8]) {
        let limit = self.config.pubsub_output_limit();
        self.pubsub.notify_keyspace(limit, flags, db, event, key);
    }

    fn has_waiters(&self) -> bool {
        self.blocking.has_waiters()
    }

    fn pushes_in_flight(&self) -> u64 {
        // What replicas hold of the replication buffer beyond the backlog
        // too: Redis's `mem_not_counted_for_evict`.
        self.clients.pushes_in_flight() + self.replication.buffer_memory().not_counted as u64
    }

    fn propagating(&self) -> bool {
        Sink::listening(&self.aof) || Sink::listening(&self.replication)
    }

    fn feed(&self, ops: &[Op], transaction: bool) {
        if self.aof_before_feed() {
            Sink::feed(&self.aof, ops, transaction);
            if !Sink::listening(&self.replication) {
                // Redis's `propagateNow`: the commands for both the AOF
                // and replicas, and the MULTI and EXEC around them.
                let n = ops
                    .iter()
                    .filter(|op| matches!(op.target, crate::keyspace::propagate::Target::All))
                    .count() as u64;
                let wrap = if transaction { 2 } else { 0 };
                self.replication.advance_without_backlog(n + wrap);
            }
        }
        if Sink::listening(&self.replication) {
            Sink::feed(&self.replication, ops, transaction);
        }
    }

    fn feed_args(&self, db: usize, args: &crate::protocol::Args<'_>) {
        if self.aof_before_feed() {
            Sink::feed_args(&self.aof, db, args);
            if !Sink::listening(&self.replication) {
                self.replication.advance_without_backlog(1);
            }
        }
        if Sink::listening(&self.replication) {
            Sink::feed_args(&self.replication, db, args);
        }
    }
}

impl Services {
    /// Whether the AOF takes this unit; it is annotated with the time
    /// first when `aof-timestamp-enabled` says so.
    fn aof_before_feed(&self) -> bool {
        let listening = Sink::listening(&self.aof);
        if listening && self.config.aof_timestamp_enabled() {
            self.aof.annotate_time(self.clock.now_ms() / 1000);
        }
        listening
    }
}
