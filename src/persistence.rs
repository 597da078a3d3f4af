//! RDB persistence of the whole server: `SAVE`, the save points, the final
//! save at shutdown, `DEBUG RELOAD`, loading at startup, and the state
//! `INFO persistence` and `LASTSAVE` report.
//!
//! The format lives in [`crate::rdb`]; this module decides when a file is
//! written and where: `dir`/`dbfilename`, through a `temp-<pid>.rdb` file
//! that is fsynced and renamed over the old one, so a crash mid-save never
//! leaves a half-written `dump.rdb`.
//!
//! It works with the keyspace's [`Env`] and its own [`State`], and reaches
//! what lives above it (the script engine's function libraries, the AOF's
//! rewrite) through [`Host`], which the server implements; a background
//! save's thread holds the server as an `Arc<dyn Host>`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::clock::Clock;
use crate::config::Config;
use crate::keyspace::{Env, Keyspace};
use crate::rdb::file::{self, Extras, LoadStats, SaveOptions, Source};

/// What the files layer needs from the server: the data and the settings,
/// this module's state, and what lives above the files (the script
/// engine's function libraries, the AOF). It is also an RDB load's
/// [`file::Host`]. The server implements it; a background save holds it as
/// an `Arc<dyn Host>`, which outlives the command that started the save.
pub(crate) trait Host: file::Host + Send + Sync {
    /// What a keyspace view works with (the store, config, clock, …).
    fn env(&self) -> Env<'_>;
    /// This module's state.
    fn persistence(&self) -> &State;
    /// The function libraries' code, as a file carries it; None if the
    /// function engine could not be read.
    fn library_codes(&self) -> Option<Vec<Vec<u8>>>;
    /// Empties the function libraries (with the dataset, Redis's
    /// `emptyData`).
    fn flush_libraries(&self);
    /// An AOF rewrite runs in the background: a BGSAVE does not start
    /// beside it.
    fn aof_rewriting(&self) -> bool;
    /// What a save records of replication (`repl-stream-db`, `repl-id`,
    /// `repl-offset`), None outside a replication chain.
    fn repl_info(&self) -> Option<(usize, String, u64)> {
        None
    }
}

/// What INFO persistence reports beside the counters in `Stats`.
pub(crate) struct State {
    /// Unix seconds of the last successful save (or of startup), for
    /// LASTSAVE.
    pub(crate) last_save: AtomicU64,
    /// A background save is running.
    pub(crate) bgsave_in_progress: AtomicBool,
    /// The running one writes the file (not a replica's diskless stream).
    pub(crate) bgsave_to_file: AtomicBool,
    /// The last background save (or save-point save) succeeded (Redis's
    /// `lastbgsave_status`), which `stop-writes-on-bgsave-error` reads.
    pub(crate) last_bgsave_ok: AtomicBool,
    /// Unix seconds of the last failed attempt, so a failing save point
    /// retries every 5 seconds rather than at once (`CONFIG_BGSAVE_RETRY_DELAY`).
    last_bgsave_try: AtomicU64,
    pub(crate) last_bgsave_time_sec: AtomicI64,
    /// When the running background save started (Unix seconds).
    pub(crate) bgsave_started: AtomicU64,
    /// `BGSAVE SCHEDULE` asked for one while another ran.
    pub(crate) bgsave_scheduled: AtomicBool,
    /// The running background save to a file is to stop (Redis's
    /// `killRDBChild`): the replicas it was for went and no save point
    /// wants the file, or FLUSHALL emptied what it saves.
    pub(crate) bgsave_abort: AtomicBool,
    /// Successful saves since startup (`rdb_saves`).
    pub(crate) saves: AtomicU64,
    /// `server.dirty` when the running background save took its snapshot.
    dirty_before_bgsave: AtomicU64,
    pub(crate) last_load: Mutex<LoadStats>,
    /// SHUTDOWN already saved (or was told not to): the exit path must not.
    pub(crate) shutdown_handled: AtomicBool,
    pub(crate) loading: Loading,
}

/// The dataset being loaded (at startup, by DEBUG RELOAD or DEBUG
/// LOADAOF), Redis's `server.loading`: while it is, commands without the
/// `loading` flag are refused with [`LOADING`] (`execution::verify`), and
/// INFO persistence reports the progress.
pub(crate) struct Loading {
    /// Loads under way: the startup load holds one from before the first
    /// connection is read until the AOF is open for appending, around the
    /// file loads within it.
    depth: AtomicU32,
    /// Unix seconds when it started.
    start_time: AtomicU64,
    total_bytes: AtomicU64,
    loaded_bytes: AtomicU64,
    /// Clients are answered (-LOADING) during this load. Redis serves
    /// them only from within its load loop — before each 1024th AOF
    /// command and after every 2 MB of RDB — so during a short load, or
    /// while the AOF's first base is written, a client just waits; so do
    /// zwindow's until this is set ([`Loading::wait_unless_served`]).
    served: AtomicBool,
    /// Woken when `served` is set and when the load ends.
    changed: tokio::sync::Notify,
    /// `loading-process-events-interval-bytes`: bytes read before the
    /// load answers clients.
    serve_after: AtomicU64,
    /// Redis's `async_loading`: a replica's full sync that keeps serving
    /// the old dataset until the new one replaces it (`repl-diskless-load
    /// swapdb` when the primary's history is the one this replica had).
    /// Clients are served, but commands flagged `no_async_loading` and
    /// `CONFIG SET appendonly` are refused with -LOADING.
    asynchronous: AtomicBool,
}

/// Redis 8's `loading-process-events-interval-bytes` by default: an RDB
/// load serves clients once it has read this much.
const SERVE_AFTER_BYTES: u64 = 512 * 1024;

/// The refusal of a command while the dataset loads.
pub(crate) const LOADING: &str = "LOADING Redis is loading the dataset in memory";

/// Marks the dataset loaded again when dropped.
pub(crate) struct LoadingGuard<'a>(&'a Loading);

/// Ends an asynchronous load when dropped.
pub(crate) struct AsyncLoadingGuard<'a>(&'a Loading);

impl Drop for AsyncLoadingGuard<'_> {
    fn drop(&mut self) {
        self.0.asynchronous.store(false, Relaxed);
    }
}

impl Drop for LoadingGuard<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl Default for Loading {
    fn default() -> Self {
        Loading {
            depth: AtomicU32::new(0),
            start_time: AtomicU64::new(0),
            total_bytes: AtomicU64::new(0),
            loaded_bytes: AtomicU64::new(0),
            served: AtomicBool::new(false),
            changed: tokio::sync::Notify::new(),
            serve_after: AtomicU64::new(SERVE_AFTER_BYTES),
            asynchronous: AtomicBool::new(false),
        }
    }
}

impl Loading {
    pub(crate) fn active(&self) -> bool {
        self.depth.load(Relaxed) > 0
    }

    /// Marks the dataset loading until [`Loading::leave`].
    pub(crate) fn enter(&self, now_secs: u64) {
        if self.depth.fetch_add(1, Relaxed) == 0 {
            self.start_time.store(now_secs, Relaxed);
            self.total_bytes.store(0, Relaxed);
            self.loaded_bytes.store(0, Relaxed);
            self.served.store(false, Relaxed);
        }
    }

    pub(crate) fn leave(&self) {
        if self.depth.fetch_sub(1, Relaxed) == 1 {
            self.changed.notify_waiters();
        }
    }

    /// From now on this load answers clients (with -LOADING).
    pub(crate) fn serve_clients(&self) {
        if !self.served.swap(true, Relaxed) {
            self.changed.notify_waiters();
        }
    }

    /// `loading-process-events-interval-bytes`, for the loads to come.
    pub(crate) fn set_serve_after(&self, bytes: u64) {
        self.serve_after.store(bytes, Relaxed);
    }

    /// Whether this load answers clients (with -LOADING) by now.
    pub(crate) fn served(&self) -> bool {
        self.served.load(Relaxed)
    }

    /// A connection's next batch waits while a load that does not serve
    /// clients (yet) runs.
    pub(crate) async fn wait_unless_served(&self) {
        crate::util::wait_until(&self.changed, || {
            !self.active() || self.served.load(Relaxed)
        })
        .await;
    }

    /// An asynchronous load (see `asynchronous`) is under way.
    pub(crate) fn asynchronous(&self) -> bool {
        self.asynchronous.load(Relaxed)
    }

    /// Marks an asynchronous load under way until the guard is dropped.
    pub(crate) fn begin_async(&self) -> AsyncLoadingGuard<'_> {
        self.asynchronous.store(true, Relaxed);
        AsyncLoadingGuard(self)
    }

    /// Starts loading a file of `total_bytes` (Redis's `startLoading`),
    /// until the guard is dropped.
    pub(crate) fn begin(&self, now_secs: u64, total_bytes: u64) -> LoadingGuard<'_> {
        self.start_time.store(now_secs, Relaxed);
        self.total_bytes.store(total_bytes, Relaxed);
        self.loaded_bytes.store(0, Relaxed);
        if self.depth.fetch_add(1, Relaxed) == 0 {
            self.served.store(false, Relaxed);
        }
        LoadingGuard(self)
    }

    /// `bytes` more of the input were read.
    pub(crate) fn advance(&self, bytes: u64) {
        let loaded = self.loaded_bytes.fetch_add(bytes, Relaxed) + bytes;
        if loaded >= self.serve_after.load(Relaxed) && !self.served.load(Relaxed) {
            self.serve_clients();
        }
    }

    /// INFO persistence's `loading_*` lines while loading.
    pub(crate) fn info_fields(&self, now_secs: u64) -> Vec<(&'static str, String)> {
        let total = self.total_bytes.load(Relaxed);
        // A transfer ended by an `$EOF:` mark has no size: what was read
        // is shown as it is (Redis's `loading_loaded_bytes` over a
        // `loading_total_bytes` of 0).
        let loaded = match self.loaded_bytes.load(Relaxed) {
            loaded if total == 0 => loaded,
            loaded => loaded.min(total),
        };
        let started = self.start_time.load(Relaxed);
        let perc = if total == 0 {
            0.0
        } else {
            loaded as f64 * 100.0 / total as f64
        };
        let elapsed = now_secs.saturating_sub(started);
        // Redis's estimate: the time so far scaled by what is left.
        let eta = if elapsed == 0 {
            1
        } else {
            elapsed * total.saturating_sub(loaded).max(u64::from(total == 0)) / (loaded + 1)
        };
        vec![
            ("loading_start_time", started.to_string()),
            ("loading_total_bytes", total.to_string()),
            ("loading_rdb_used_mem", "0".into()),
            ("loading_loaded_bytes", loaded.to_string()),
            ("loading_loaded_perc", format!("{perc:.2}")),
            ("loading_eta_seconds", eta.to_string()),
        ]
    }
}

impl State {
    /// The state at startup, `now_secs` counting as the last save.
    pub(crate) fn new(now_secs: u64) -> Self {
        State {
            last_save: AtomicU64::new(now_secs),
            bgsave_in_progress: AtomicBool::new(false),
            last_bgsave_ok: AtomicBool::new(true),
            last_bgsave_try: AtomicU64::new(0),
            last_bgsave_time_sec: AtomicI64::new(-1),
            bgsave_started: AtomicU64::new(0),
            bgsave_scheduled: AtomicBool::new(false),
            bgsave_abort: AtomicBool::new(false),
            bgsave_to_file: AtomicBool::new(false),
            saves: AtomicU64::new(0),
            dirty_before_bgsave: AtomicU64::new(0),
            last_load: Mutex::new(LoadStats::default()),
            shutdown_handled: AtomicBool::new(false),
            loading: Loading::default(),
        }
    }
}

/// The text of Redis's MISCONF refusal.
pub(crate) const MISCONF: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

/// Whether writes are refused because the last background save failed
/// (Redis's `writeCommandsDeniedByDiskError`).
pub(crate) fn writes_denied(state: &State, config: &Config) -> bool {
    !state.last_bgsave_ok.load(Relaxed)
        && config.stop_writes_on_bgsave_error()
        && !config.save_points().is_empty()
}

pub(crate) fn options(config: &Config) -> SaveOptions<'static> {
    SaveOptions {
        compress: config.rdbcompression(),
        checksum: config.rdbchecksum(),
        version: config.rdb_version(),
        key_save_delay: config.rdb_key_save_delay(),
        abort: None,
    }
}

fn now_secs(clock: &Clock) -> u64 {
    clock.now_ms() / 1000
}

/// What the file carries beside the keys; None if the function engine
/// could not be read.
pub(crate) fn extras(host: &dyn Host) -> Option<Extras> {
    let env = host.env();
    Some(Extras {
        functions: host.library_codes()?,
        rules: env.windows.list(),
        used_mem: crate::alloc::allocated().unwrap_or(0),
        ctime_secs: now_secs(env.clock),
        repl: host.repl_info(),
    })
}

/// The foreground save's `temp-<pid>.rdb`, in the directory it writes.
fn foreground_temp_file(config: &Config) -> std::path::PathBuf {
    let path = config.rdb_path();
    let dir = path.parent().unwrap_or(Path::new("."));
    dir.join(format!("temp-{}.rdb", std::process::id()))
}

/// Deletes the foreground save's temp file, for an exit in the middle of
/// the save (Redis's `rdbRemoveTempFile` from its SIGINT handler).
pub(crate) fn remove_foreground_temp_file(config: &Config) {
    let _ = std::fs::remove_file(foreground_temp_file(config));
}

/// Writes `src` to `dir`/`dbfilename` through a temporary file.
/// Held while a save checks whether it was stopped and renames its file
/// into place.
static RENAME: Mutex<()> = Mutex::new(());

fn write_file(
    config: &Config,
    src: &dyn Source,
    extras: &Extras,
    abort: Option<&AtomicBool>,
) -> std::io::Result<()> {
    let path = config.rdb_path();
    let dir = path.parent().unwrap_or(Path::new("."));
    // Redis's foreground `rdbSave`: `temp-<pid>.rdb`.
    let tmp = foreground_temp_file(config);
    let result = (|| {
        let f = std::fs::File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let opts = SaveOptions {
            abort,
            ..options(config)
        };
        file::write(&mut w, src, extras, opts)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        // A save stopped on purpose never replaces the file, even when it
        // was stopped after its last key: the check and the rename are one
        // step against any other save's rename (FLUSHALL stops a BGSAVE of
        // the data it flushed, then writes the empty dataset).
        let _renaming = RENAME.lock();
        if abort.is_some_and(|a| a.load(Relaxed)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "stopped",
            ));
        }
        std::fs::rename(&tmp, &path)?;
        // The rename is durable once the directory is.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Notes a successful save of the dataset as of `dirty_at_snapshot`
/// changes.
fn saved(host: &dyn Host, dirty_at_snapshot: u64) {
    let (env, p) = (host.env(), host.persistence());
    let _ = env.dirty.fetch_update(Relaxed, Relaxed, |d| {
        Some(d.saturating_sub(dirty_at_snapshot))
    });
    p.last_save.store(now_secs(env.clock), Relaxed);
    p.saves.fetch_add(1, Relaxed);
    p.last_bgsave_ok.store(true, Relaxed);
}

/// `SAVE` (and the shutdown save): writes the dataset the caller holds
/// every shard of, in the foreground.
pub(crate) fn save_locked(host: &dyn Host, ks: &mut Keyspace<'_>) -> Result<(), String> {
    let env = host.env();
    let extras = extras(host).ok_or("the function engine is busy")?;
    let dirty = env.dirty.load(Relaxed);
    let shards = file::Shards(ks.shards_mut().map(|s| &*s).collect());
    match write_file(env.config, &shards, &extras, None) {
        Ok(()) => {
            saved(host, dirty);
            tracing::info!("DB saved on disk");
            Ok(())
        }
        Err(e) => {
            tracing::warn!("Failed saving the DB: {e}");
            Err(e.to_string())
        }
    }
}

/// Saves with every shard locked here (shutdown, save points' fallback).
pub(crate) fn save_all(host: &dyn Host) -> Result<(), String> {
    let env = host.env();
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
    save_locked(host, &mut ks)
}

/// Loads `dir`/`dbfilename` at startup if it exists. An unreadable or
/// corrupt file is an error: the server refuses to start, as Redis does.
pub(crate) fn load_at_startup(host: &dyn Host) -> Result<(), String> {
    let (env, p) = (host.env(), host.persistence());
    let path = env.config.rdb_path();
    let data = match std::fs::read(&path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(format!(
                "Fatal error loading the DB {}: {e}. Exiting.",
                path.display()
            ));
        }
    };
    let started = std::time::Instant::now();
    let _loading = p.loading.begin(now_secs(env.clock), data.len() as u64);
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = Keyspace::new(env, guards, 0, env.clock.now_ms());
    let stats = file::load(&data, &mut ks, host, false).map_err(|e| {
        if e.1 == 0 {
            return format!(
                "Fatal error loading the DB {}: {e}. Exiting.",
                path.display()
            );
        }
        // A corrupt value: Redis runs its file check (`redis-check-rdb`),
        // which reports the same error again, then exits.
        tracing::warn!("--- RDB ERROR DETECTED ---");
        tracing::warn!("{e}");
        "Terminating server after rdb file reading failure.".to_string()
    })?;
    drop(ks);
    tracing::info!(
        "Done loading RDB, keys loaded: {}, keys expired: {}, empty keys skipped: {}.",
        stats.keys_loaded,
        stats.keys_expired,
        stats.empty_keys_skipped
    );
    tracing::info!(
        "DB loaded from disk: {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    *p.last_load.lock() = stats;
    Ok(())
}

/// Runs `f` with every shard held: those of a command that holds none are
/// taken here (in order); a command holding only some cannot take the rest
/// without risking a deadlock and fails.
pub(crate) fn with_all_shards<R>(
    ks: &mut Keyspace<'_>,
    f: impl FnOnce(&mut Keyspace<'_>) -> Result<R, String>,
) -> Result<R, String> {
    let all = ks.env.store.shard_count();
    let held = (0..all).filter(|&i| ks.holds(i)).count();
    if held == all {
        return f(ks);
    }
    if held != 0 {
        return Err("ERR this command needs the whole keyspace; run it outside MULTI".into());
    }
    ks.guards = ks.env.store.lock(ks.env.store.all_shards());
    let r = f(ks);
    ks.guards = crate::keyspace::Guards::None;
    r
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: save (unless NOSAVE), empty
/// every database and the function libraries (unless NOFLUSH), load the
/// file back (MERGE: its keys and libraries replace existing ones); the
/// caller holds every shard.
pub(crate) fn reload(
    host: &dyn Host,
    ks: &mut Keyspace<'_>,
    save: bool,
    flush: bool,
    merge: bool,
) -> Result<(), String> {
    let (env, p) = (host.env(), host.persistence());
    if save {
        save_locked(host, ks).map_err(|_| "ERR".to_string())?;
    }
    let load_error = "ERR Error trying to load the RDB dump, check server logs.".to_string();
    let data = std::fs::read(env.config.rdb_path()).map_err(|e| {
        tracing::warn!("DEBUG RELOAD: {e}");
        load_error.clone()
    })?;
    if flush {
        flush_all(host, ks);
    }
    let dirty = env.dirty.load(Relaxed);
    let _loading = p.loading.begin(now_secs(env.clock), data.len() as u64);
    let stats = file::load(&data, ks, host, merge).map_err(|e| {
        tracing::warn!("DEBUG RELOAD: {e}");
        load_error.clone()
    })?;
    // Loading is no change to the dataset.
    env.dirty.store(dirty, Relaxed);
    *p.last_load.lock() = stats;
    tracing::warn!("DB reloaded by DEBUG RELOAD");
    Ok(())
}

/// Empties every database and the function libraries (Redis's `emptyData`).
pub(crate) fn flush_all(host: &dyn Host, ks: &mut Keyspace<'_>) {
    flush_all_freeing(host, ks, false);
}

/// [`flush_all`], the databases' contents handed to the lazyfree thread
/// when `lazy` (a replica's `replica-lazy-flush`, Redis's `EMPTYDB_ASYNC`).
pub(crate) fn flush_all_freeing(host: &dyn Host, ks: &mut Keyspace<'_>, lazy: bool) {
    let lazyfree = ks.env.lazyfree;
    for shard in ks.shards_mut() {
        for db in shard.dbs.iter_mut() {
            if lazy {
                let n = db.keys.len();
                let mut old = std::mem::take(db);
                // The histograms' allocation stays with the database.
                db.sizes = std::mem::take(&mut old.sizes);
                db.sizes.clear();
                lazyfree.free(Box::new(old), n);
            } else {
                db.clear();
            }
        }
        shard.schedule = Default::default();
    }
    ks.db_emptied(0);
    host.flush_libraries();
}

/// A running snapshot, as the file writer reads it.
pub(crate) struct SnapshotSource<'a> {
    pub(crate) store: &'a crate::keyspace::Store,
    pub(crate) sizes: crate::keyspace::snapshot::Sizes,
}

impl Source for SnapshotSource<'_> {
    fn databases(&self) -> usize {
        self.sizes.dbs.len()
    }

    fn sizes(&self, db: usize) -> (usize, usize) {
        self.sizes.dbs[db]
    }

    fn field_ttls(&self) -> bool {
        self.sizes.field_ttls
    }

    fn for_each(
        &self,
        db: usize,
        f: &mut file::KeyFn<'_>,
        flush: &mut file::FlushFn<'_>,
    ) -> std::io::Result<()> {
        for idx in 0..self.store.shard_count() {
            self.store.snapshot_db(idx, db, f, flush)?;
        }
        Ok(())
    }
}

/// Starts a BGSAVE: takes the snapshot while the caller holds every shard
/// (`shards`), then writes it on a thread of its own (see
/// [`crate::keyspace::snapshot`] for why this is a point-in-time image),
/// which holds `host` until it is done.
pub(crate) fn start_bgsave<'s>(
    host: Arc<dyn Host>,
    shards: impl Iterator<Item = &'s mut crate::keyspace::Shard>,
) -> Result<(), &'static str> {
    start_save(host, shards, SaveTarget::File, None, Box::new(|_| {}))
}

/// Where a background save writes: `dir`/`dbfilename` (BGSAVE, and a
/// full resync's snapshot with `repl-diskless-sync no`), or a stream (a
/// diskless full resync: the replicas' sockets).
pub(crate) enum SaveTarget {
    File,
    Stream(Box<dyn std::io::Write + Send>),
}

/// What runs once a background save ended: whether it succeeded.
pub(crate) type SaveDone = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Starts a background save of the snapshot taken now (the caller holds
/// every shard) to `target`; `done` runs on the saver thread at the end.
/// `repl`: the replication info to record, when the caller read it at
/// the snapshot's instant (a full resync), else the current one.
/// A save to a stream is no save of the dataset: it changes neither
/// LASTSAVE nor the change count (Redis's socket-type RDB child).
pub(crate) fn start_save<'s>(
    host: Arc<dyn Host>,
    shards: impl Iterator<Item = &'s mut crate::keyspace::Shard>,
    target: SaveTarget,
    repl: Option<(usize, String, u64)>,
    done: SaveDone,
) -> Result<(), &'static str> {
    let (env, p) = (host.env(), host.persistence());
    if host.aof_rewriting() {
        return Err(
            "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        );
    }
    if p.bgsave_in_progress.swap(true, Relaxed) {
        return Err("ERR Background save already in progress");
    }
    p.bgsave_abort.store(false, Relaxed);
    let Some(mut extras) = extras(&*host) else {
        p.bgsave_in_progress.store(false, Relaxed);
        return Err("ERR");
    };
    if repl.is_some() {
        extras.repl = repl;
    }
    let sizes = env.store.begin_snapshot(shards);
    p.dirty_before_bgsave
        .store(env.dirty.load(Relaxed), Relaxed);
    p.bgsave_started.store(now_secs(env.clock), Relaxed);
    p.bgsave_scheduled.store(false, Relaxed);
    let to_file = matches!(target, SaveTarget::File);
    p.bgsave_to_file.store(to_file, Relaxed);
    // The child exists when BGSAVE replies, as Redis's forked one.
    let child = to_file.then(|| {
        let path = env.config.rdb_path();
        let dir = path.parent().unwrap_or(Path::new("."));
        let h = host.clone();
        let oom = env.config.bgchild_oom_score();
        crate::util::child::spawn_writing(
            &dir.join("temp").to_string_lossy(),
            "rdb",
            oom,
            move || h.persistence().bgsave_abort.store(true, Relaxed),
        )
    });
    let saver = host.clone();
    let spawned = std::thread::Builder::new()
        .name("zwindow-bgsave".into())
        .spawn(move || run_bgsave(saver, child, sizes, extras, target, done));
    if let Err(e) = spawned {
        tracing::warn!("Can't save in background: {e}");
        env.store.end_snapshot();
        p.bgsave_in_progress.store(false, Relaxed);
        return Err("ERR");
    }
    if to_file {
        tracing::info!("Background saving started");
    } else {
        tracing::info!("Background RDB transfer started");
    }
    Ok(())
}

/// Writes `src` to `dir`/`dbfilename` through `child` (see
/// [`crate::util::child`]), which writes `temp-<its pid>.rdb` as Redis's
/// child does; the parent renames it once the child exited cleanly.
/// Returns the encoding's outcome and the child's exit.
fn write_file_child(
    host: &Arc<dyn Host>,
    child: std::io::Result<(crate::util::child::Child, std::path::PathBuf)>,
    src: &dyn Source,
    extras: &Extras,
) -> (std::io::Result<()>, Option<crate::util::child::Exit>) {
    use crate::util::child::Exit;
    let (config, p) = (host.env().config, host.persistence());
    let path = config.rdb_path();
    let dir = path.parent().unwrap_or(Path::new("."));
    let (mut child, tmp) = match child {
        Ok(c) => c,
        Err(e) => return (Err(e), None),
    };
    let opts = SaveOptions {
        abort: Some(&p.bgsave_abort),
        ..options(config)
    };
    let encoded = file::write(&mut child, src, extras, opts);
    let exit = child.finish(encoded.is_ok());
    if encoded.is_ok() && exit == Exit::Code(0) {
        // Stopped after its last key (FLUSHALL, SHUTDOWN): never renamed
        // into place; the check and the rename are one step against other
        // saves (see `write_file`).
        let _renaming = RENAME.lock();
        if p.bgsave_abort.load(Relaxed) {
            let _ = std::fs::remove_file(&tmp);
            return (
                Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "stopped",
                )),
                Some(exit),
            );
        }
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return (Err(e), Some(exit));
        }
        // The rename is durable once the directory is.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    } else {
        let _ = std::fs::remove_file(&tmp);
    }
    (encoded, Some(exit))
}

fn run_bgsave(
    host: Arc<dyn Host>,
    child: Option<std::io::Result<(crate::util::child::Child, std::path::PathBuf)>>,
    sizes: crate::keyspace::snapshot::Sizes,
    extras: Extras,
    target: SaveTarget,
    done: SaveDone,
) {
    let (env, p) = (host.env(), host.persistence());
    env.config.pin_thread("bgsave");
    let host = &host;
    let started = std::time::Instant::now();
    let src = SnapshotSource {
        store: env.store,
        sizes,
    };
    let (result, exit, to_file) = match target {
        SaveTarget::File => {
            let child = child.unwrap_or_else(|| Err(std::io::Error::other("no child")));
            let (result, exit) = write_file_child(host, child, &src, &extras);
            (result, exit, true)
        }
        SaveTarget::Stream(w) => (
            file::write(w, &src, &extras, options(env.config)),
            None,
            false,
        ),
    };
    env.store.end_snapshot();
    p.last_bgsave_time_sec
        .store(started.elapsed().as_secs() as i64, Relaxed);
    use crate::util::child::Exit;
    let stopped = p.bgsave_abort.load(Relaxed);
    // Redis's `backgroundSaveDoneHandlerDisk`: the outcome is the child's.
    let result = match (result, exit) {
        (Ok(()), Some(Exit::Code(0)) | None) => Ok(()),
        (_, Some(Exit::Signal(sig))) if sig != libc::SIGUSR1 => {
            tracing::warn!("Background saving terminated by signal {sig}");
            p.last_bgsave_ok.store(false, Relaxed);
            p.last_bgsave_try.store(now_secs(env.clock), Relaxed);
            Err(None)
        }
        (Ok(()), Some(_)) if !stopped => Err(Some(std::io::Error::other(
            "the child process exited with an error",
        ))),
        (Ok(()), Some(_)) => Err(Some(std::io::Error::other("the save was stopped"))),
        (Err(e), _) => Err(Some(e)),
    };
    let outcome = match result {
        Err(None) => Err("terminated by signal".to_string()),
        Ok(()) if to_file => {
            saved(&**host, p.dirty_before_bgsave.load(Relaxed));
            tracing::info!("Background saving terminated with success");
            Ok(())
        }
        Ok(()) => {
            tracing::info!("Background RDB transfer terminated with success");
            Ok(())
        }
        // Stopped on purpose: not a failed save (Redis's child killed
        // with SIGUSR1 leaves `lastbgsave_status` alone).
        Err(Some(e)) if to_file && stopped => {
            tracing::warn!("Background saving stopped before it finished");
            Err(e.to_string())
        }
        Err(Some(e)) if to_file => {
            p.last_bgsave_ok.store(false, Relaxed);
            p.last_bgsave_try.store(now_secs(env.clock), Relaxed);
            tracing::warn!("Background saving error: {e}");
            Err(e.to_string())
        }
        Err(Some(e)) => {
            tracing::warn!("Background transfer error: {e}");
            Err(e.to_string())
        }
    };
    p.bgsave_in_progress.store(false, Relaxed);
    done(outcome);
}

/// Shutting down (Redis's `prepareForShutdown`): a running BGSAVE's child
/// is stopped and its temporary file removed, not waited for.
pub(crate) fn kill_bgsave_for_shutdown(state: &State) {
    if state.bgsave_in_progress.load(Relaxed) {
        tracing::warn!("There is a child saving an .rdb. Killing it!");
        state.bgsave_abort.store(true, Relaxed);
        wait_bgsave(state, std::time::Duration::from_secs(5));
    }
}

/// Waits (a bounded while) for a running BGSAVE to end, so a foreground
/// save that follows is the newest file.
pub(crate) fn wait_bgsave(state: &State, limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    while state.bgsave_in_progress.load(Relaxed) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// How long a failed save point waits before retrying (Redis's
/// `CONFIG_BGSAVE_RETRY_DELAY`).
const RETRY_DELAY_SECS: u64 = 5;

/// The save points' check, as Redis's `serverCron`: a BGSAVE when some
/// point's change count and age are both reached, or one was scheduled.
/// (The AOF's own tick runs first: see [`crate::aof::run`].)
pub(crate) fn cron(host: &Arc<dyn Host>) {
    let (env, p) = (host.env(), host.persistence());
    if p.bgsave_in_progress.load(Relaxed) {
        return;
    }
    let now = now_secs(env.clock);
    let dirty = env.dirty.load(Relaxed);
    let since = now.saturating_sub(p.last_save.load(Relaxed));
    let retry_ok = p.last_bgsave_ok.load(Relaxed)
        || now.saturating_sub(p.last_bgsave_try.load(Relaxed)) > RETRY_DELAY_SECS;
    let due = env
        .config
        .save_points()
        .into_iter()
        .find(|&(secs, changes)| dirty >= changes && since > secs && retry_ok);
    if let Some((secs, changes)) = due {
        tracing::info!("{changes} changes in {secs} seconds. Saving...");
    } else if !p.bgsave_scheduled.load(Relaxed) {
        return;
    }
    let mut guards = env.store.lock(env.store.all_shards());
    let _ = start_bgsave(host.clone(), guards.iter_mut());
}
