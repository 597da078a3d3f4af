//! The append-only file, in Redis 7.0's multi-part layout: a directory
//! (`appenddirname`) holding a manifest (`<appendfilename>.manifest`), one
//! base file (an RDB image of the dataset at the last rewrite,
//! `<appendfilename>.<seq>.base.rdb`) and the incremental files written since
//! (`<appendfilename>.<seq>.incr.aof`, RESP commands).
//!
//! This module is a sink of the propagated command stream
//! ([`crate::keyspace::propagate`]): commands are encoded into a buffer
//! while their shard locks are held (so the file keeps the order of the
//! changes), written before the replies leave (each connection's batch,
//! and the background tick for background work), and fsynced as
//! `appendfsync` says — `always` before the reply is sent (by a syncer
//! thread whose one fsync covers every connection waiting, a group
//! commit), `everysec` by the background tick once a second.
//!
//! `BGREWRITEAOF` takes the same copy-on-write snapshot BGSAVE uses, and
//! at that instant (every shard held) starts a new incremental file, so the
//! new base plus the new incremental file are exactly the dataset; once
//! the base is written the manifest is swapped atomically (temporary file,
//! fsync, rename) and the old files are deleted. [`load`] reads it all back
//! at startup.
//!
//! Like [`crate::persistence`], below which it sits, it works with what the
//! server hands it as a [`Host`]: the data and settings, the persistence
//! state, the [`Aof`] itself, and the script engine's function libraries
//! (for a base file); a rewrite's thread holds it as an `Arc<dyn Host>`.

pub(crate) mod load;
mod rewrite;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU8, AtomicU64, Ordering::Relaxed};

use parking_lot::{Condvar, Mutex};

use crate::clock::Clock;
use crate::config::{Config, Fsync};
use crate::keyspace::propagate::{Op, Sink};
use crate::protocol::encode_command as encode;

/// What the AOF needs from the server: everything the RDB side of the
/// files needs ([`crate::persistence::Host`]), and the [`Aof`], which the
/// server owns as the sink of its propagated stream.
pub(crate) trait Host: crate::persistence::Host {
    fn aof(&self) -> &Aof;
    /// `master_repl_offset`, where a new incremental file starts.
    fn repl_offset(&self) -> u64;
    /// After loading the AOF at startup: `master_repl_offset` continues
    /// from where the last incremental file ended.
    fn set_repl_offset(&self, offset: u64);
}

/// `aof_state`: off, on, or on and waiting for the first rewrite (turned
/// on at runtime: commands are already appended to the new incremental
/// file, the manifest names it once the base is written).
const OFF: u8 = 0;
const ON: u8 = 1;
const WAIT_REWRITE: u8 = 2;

/// The writer's state and what INFO persistence reports of it.
pub(crate) struct Aof {
    state: AtomicU8,
    /// Encoded commands not yet written, and the database the file's last
    /// SELECT chose.
    pending: Mutex<Pending>,
    /// `pending` holds bytes (a write is due): one load on the reply path.
    has_pending: AtomicBool,
    /// The open incremental file and the manifest. Lock order: shards,
    /// then `file`, then `pending`.
    file: Mutex<Option<Files>>,
    pub(crate) rewrite_in_progress: AtomicBool,
    /// Set to stop the running rewrite (`CONFIG SET appendonly no`, as
    /// Redis kills its rewrite child); cleared when the next one starts.
    rewrite_abort: AtomicBool,
    /// The running rewrite's child process (0: none); see
    /// [`crate::util::child`].
    rewrite_child: AtomicI32,
    pub(crate) rewrite_scheduled: AtomicBool,
    /// `aof_rewrites_consecutive_failures` (Redis's
    /// `stat_aofrw_consecutive_failures`).
    consecutive_failures: AtomicU64,
    /// Redis's `aofRewriteLimited` state: minutes of the last delay, and
    /// the unix second before which no automatic rewrite starts (0: none).
    limit: Mutex<(u64, u64)>,
    last_bgrewrite_ok: AtomicBool,
    last_write_ok: AtomicBool,
    rewrites: AtomicU64,
    last_rewrite_time_sec: AtomicI64,
    /// Unix seconds when the running rewrite started.
    rewrite_started: AtomicU64,
    /// Bytes of the base and incremental files (`aof_current_size`).
    current_size: AtomicU64,
    /// `aof_current_size` after the last rewrite (`aof_base_size`).
    base_size: AtomicU64,
    /// Bytes of the current incremental file written but not fsynced.
    unsynced: AtomicU64,
    last_fsync_ms: AtomicU64,
    delayed_fsync: AtomicU64,
    /// `DEBUG AOF-FLUSH-SLEEP <µs>`: each write waits this long first
    /// (Redis's `aof_flush_sleep`, for tests of the reply order).
    pub(crate) flush_sleep_us: AtomicU64,
    /// Group commit under `appendfsync always`: bytes appended to
    /// `pending` and bytes written since start (across files), bytes known
    /// durable, the syncer's wake-up, and the connections waiting for
    /// their bytes to be durable.
    fed_total: AtomicU64,
    written_total: AtomicU64,
    synced_total: AtomicU64,
    sync_requested: Mutex<bool>,
    sync_wanted: Condvar,
    synced: tokio::sync::Notify,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    /// The database the stream's last SELECT chose (None: none yet in
    /// this file).
    selected_db: Option<usize>,
    /// The second of the last `#TS:` annotation (`aof-timestamp-enabled`).
    timestamp: u64,
}

/// Appends Redis's timestamp annotation (`#TS:<unix seconds>`), which
/// loaders skip and `redis-check-aof --truncate-to-timestamp` cuts at.
fn annotation(out: &mut Vec<u8>, secs: u64) {
    out.extend_from_slice(format!("#TS:{secs}\r\n").as_bytes());
}

/// The directory, its manifest and the incremental file appended to.
struct Files {
    manifest: Manifest,
    incr: File,
}

impl Default for Aof {
    fn default() -> Self {
        Aof {
            state: AtomicU8::new(OFF),
            pending: Mutex::new(Pending::default()),
            has_pending: AtomicBool::new(false),
            file: Mutex::new(None),
            rewrite_in_progress: AtomicBool::new(false),
            rewrite_abort: AtomicBool::new(false),
            rewrite_child: AtomicI32::new(0),
            consecutive_failures: AtomicU64::new(0),
            limit: Mutex::new((0, 0)),
            rewrite_scheduled: AtomicBool::new(false),
            last_bgrewrite_ok: AtomicBool::new(true),
            last_write_ok: AtomicBool::new(true),
            rewrites: AtomicU64::new(0),
            last_rewrite_time_sec: AtomicI64::new(-1),
            rewrite_started: AtomicU64::new(0),
            current_size: AtomicU64::new(0),
            base_size: AtomicU64::new(0),
            unsynced: AtomicU64::new(0),
            last_fsync_ms: AtomicU64::new(0),
            delayed_fsync: AtomicU64::new(0),
            flush_sleep_us: AtomicU64::new(0),
            fed_total: AtomicU64::new(0),
            written_total: AtomicU64::new(0),
            synced_total: AtomicU64::new(0),
            sync_requested: Mutex::new(false),
            sync_wanted: Condvar::new(),
            synced: tokio::sync::Notify::new(),
        }
    }
}

impl Pending {
    /// Redis's `feedAppendOnlyFile`: a SELECT when the database changes.
    fn append(&mut self, db: usize, argv: &[impl AsRef<[u8]>]) {
        self.select(db);
        encode(&mut self.bytes, argv);
    }

    fn select(&mut self, db: usize) {
        if self.selected_db != Some(db) {
            let n = db.to_string();
            encode(&mut self.bytes, &[&b"SELECT"[..], n.as_bytes()]);
            self.selected_db = Some(db);
        }
    }
}

impl Sink for Aof {
    /// On, or turned on and its first rewrite running (which takes what
    /// comes after its snapshot); not while that rewrite is only
    /// scheduled (Redis's `feedAppendOnlyFile`).
    fn listening(&self) -> bool {
        match self.state.load(Relaxed) {
            OFF => false,
            WAIT_REWRITE => self.rewrite_in_progress.load(Relaxed),
            _ => true,
        }
    }

    fn feed(&self, ops: &[Op], transaction: bool) {
        // What is for replicas only (PUBLISH) is not logged.
        let mut logged = ops.iter().filter(|op| op.target.aof()).peekable();
        if logged.peek().is_none() {
            return;
        }
        let mut p = self.pending.lock();
        let before = p.bytes.len();
        // MULTI and EXEC for no database, the SELECT inside, as Redis 7.2+
        // logs a transaction.
        if transaction {
            encode(&mut p.bytes, &[b"MULTI"]);
        }
        for op in logged {
            p.append(op.db, &op.argv);
        }
        if transaction {
            encode(&mut p.bytes, &[b"EXEC"]);
        }
        self.fed_total
            .fetch_add((p.bytes.len() - before) as u64, Relaxed);
        self.has_pending.store(true, Relaxed);
    }

    fn feed_args(&self, db: usize, args: &crate::protocol::Args<'_>) {
        let mut p = self.pending.lock();
        let before = p.bytes.len();
        p.select(db);
        crate::protocol::encode_parts(&mut p.bytes, args.len(), args.iter());
        self.fed_total
            .fetch_add((p.bytes.len() - before) as u64, Relaxed);
        self.has_pending.store(true, Relaxed);
    }
}

impl Aof {
    pub(crate) fn enabled(&self) -> bool {
        self.state.load(Relaxed) != OFF
    }

    /// On, its first rewrite done (Redis's `fsynced_reploff != -1`): what
    /// it fsyncs counts for WAITAOF, and a replica's ACKs carry FACK.
    /// Turned on at runtime and its first rewrite not written yet: the
    /// files do not hold the dataset (Redis's `AOF_WAIT_REWRITE`).
    pub(crate) fn waiting_first_rewrite(&self) -> bool {
        self.state.load(Relaxed) == WAIT_REWRITE
    }

    pub(crate) fn on(&self) -> bool {
        self.state.load(Relaxed) == ON
    }

    /// Before the commands of second `now_secs` (Redis's
    /// `genAofTimestampAnnotationIfNeeded`): an annotation once a second.
    pub(crate) fn annotate_time(&self, now_secs: u64) {
        if !self.enabled() {
            return;
        }
        let mut p = self.pending.lock();
        if p.timestamp < now_secs {
            p.timestamp = now_secs;
            let before = p.bytes.len();
            annotation(&mut p.bytes, now_secs);
            self.fed_total
                .fetch_add((p.bytes.len() - before) as u64, Relaxed);
        }
    }

    /// Writes what is pending to the incremental file; with `fsync`, makes
    /// it durable too (everything written so far, by anyone).
    fn write_pending(&self, fsync: bool) {
        let mut files = self.file.lock();
        let bytes = {
            let mut p = self.pending.lock();
            self.has_pending.store(false, Relaxed);
            std::mem::take(&mut p.bytes)
        };
        let Some(f) = files.as_mut() else {
            self.discarded(bytes.len());
            return;
        };
        let sleep = self.flush_sleep_us.load(Relaxed);
        if sleep > 0 && !bytes.is_empty() {
            std::thread::sleep(std::time::Duration::from_micros(sleep));
        }
        if !bytes.is_empty() {
            match f.incr.write_all(&bytes) {
                Ok(()) => {
                    self.current_size.fetch_add(bytes.len() as u64, Relaxed);
                    self.unsynced.fetch_add(bytes.len() as u64, Relaxed);
                    self.written_total.fetch_add(bytes.len() as u64, Relaxed);
                    self.last_write_ok.store(true, Relaxed);
                }
                Err(e) => {
                    // Redis retries the whole buffer later; so do we.
                    tracing::warn!("Error writing to the AOF file: {e}");
                    self.last_write_ok.store(false, Relaxed);
                    let mut p = self.pending.lock();
                    let mut rest = bytes;
                    rest.append(&mut p.bytes);
                    p.bytes = rest;
                    self.has_pending.store(true, Relaxed);
                    return;
                }
            }
        }
        if fsync && self.unsynced.load(Relaxed) > 0 {
            if let Err(e) = f.incr.sync_data() {
                tracing::warn!("Can't persist the AOF file: fsync: {e}");
                self.last_write_ok.store(false, Relaxed);
                return;
            }
            self.unsynced.store(0, Relaxed);
        }
        if fsync {
            // Everything written so far is durable (read under the file
            // lock, so no write is half counted): WAITAOF's waiters learn.
            self.synced_total
                .fetch_max(self.written_total.load(Relaxed), Relaxed);
            self.synced.notify_waiters();
        }
    }

    /// Where the stream fed to the AOF ends now, in bytes fed since start:
    /// a client's position after its last write, which WAITAOF waits for.
    pub(crate) fn fed_position(&self) -> u64 {
        self.fed_total.load(Relaxed)
    }

    /// Whether everything fed up to `position` is fsynced to the AOF
    /// (Redis's `fsynced_reploff >= c->woff`): never while the AOF is off
    /// or waiting for its first rewrite (Redis's `fsynced_reploff` of -1).
    pub(crate) fn fsynced(&self, position: u64) -> bool {
        self.on() && self.synced_total.load(Relaxed) >= position
    }

    /// Waits until some fsync ends (WAITAOF's wake-up). Register with
    /// `enable` before checking [`fsynced`](Self::fsynced).
    pub(crate) fn fsync_notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.synced.notified()
    }

    /// Before a batch's replies leave (Redis's `beforeSleep`): the batch's
    /// commands are written, and with `appendfsync always` made durable,
    /// so an acknowledged write survives a crash of the process or the
    /// machine.
    ///
    /// The fsync is a group commit: the connection waits (without holding
    /// the worker) for the syncer thread, which fsyncs everything written
    /// so far at once — what Redis's one fsync per event-loop pass gives
    /// it. One fsync per batch would serialize every connection behind
    /// the disk.
    pub(crate) async fn before_reply(&self, config: &Config) {
        if config.appendfsync() != Fsync::Always {
            if self.has_pending.load(Relaxed) {
                self.write_pending(false);
            }
            return;
        }
        // Everything fed so far, this batch's commands included (with
        // several workers another connection may be writing them: its
        // write ends before the syncer reads `written_total`, both under
        // the file lock).
        let target = self.fed_total.load(Relaxed);
        if self.synced_total.load(Relaxed) >= target {
            return;
        }
        if self.has_pending.load(Relaxed) {
            self.write_pending(false);
        }
        loop {
            let synced = self.synced.notified();
            tokio::pin!(synced);
            // Registered before the check: a sync ending in between wakes it.
            synced.as_mut().enable();
            if self.synced_total.load(Relaxed) >= target || !self.enabled() {
                return;
            }
            *self.sync_requested.lock() = true;
            self.sync_wanted.notify_one();
            synced.await;
        }
    }

    /// Bytes fed that will never be written (the AOF was off or turned
    /// off): they count as written and durable, so no one waits for them.
    fn discarded(&self, n: usize) {
        if n == 0 {
            return;
        }
        // Both advance by n: bytes written but not yet durable stay so.
        self.written_total.fetch_add(n as u64, Relaxed);
        self.synced_total.fetch_add(n as u64, Relaxed);
        self.synced.notify_waiters();
    }

    /// The syncer thread's loop (see [`Aof::before_reply`]): waits for a
    /// request, fsyncs what was written until then, releases the waiters.
    fn run_syncer(&self) {
        loop {
            {
                let mut requested = self.sync_requested.lock();
                while !*requested {
                    self.sync_wanted.wait(&mut requested);
                }
                *requested = false;
            }
            // Read together under the file lock: every byte counted in
            // `target` is in this file, or in an earlier one, fsynced when
            // a rewrite switched files.
            let (target, file) = {
                let files = self.file.lock();
                let target = self.written_total.load(Relaxed);
                (target, files.as_ref().map(|f| f.incr.try_clone()))
            };
            if let Some(file) = file {
                // A failed fsync releases the waiters all the same, as a
                // failed one did before the group commit, and is reported
                // in INFO's aof_last_write_status.
                match file.and_then(|f| f.sync_data()) {
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!("Can't persist the AOF file: fsync: {e}");
                        self.last_write_ok.store(false, Relaxed);
                    }
                }
            }
            self.synced_total.fetch_max(target, Relaxed);
            self.synced.notify_waiters();
        }
    }

    /// The tick (ten times a second): writes what background work
    /// (expiry, eviction, the sweeper) propagated, fsyncs once a second
    /// under `everysec`, and starts a scheduled or automatic rewrite.
    pub(crate) fn cron(&self, host: &Arc<dyn Host>) {
        let env = host.env();
        let enabled = self.enabled();
        if enabled {
            let now = env.clock.now_ms();
            let everysec = env.config.appendfsync() == Fsync::EverySec;
            let due = everysec && now.saturating_sub(self.last_fsync_ms.load(Relaxed)) >= 1000;
            if self.has_pending.load(Relaxed) || due {
                self.write_pending(due);
                if due {
                    self.last_fsync_ms.store(now, Relaxed);
                }
            }
        }
        if self.rewrite_in_progress.load(Relaxed)
            || host.persistence().bgsave_in_progress.load(Relaxed)
        {
            return;
        }
        let scheduled = self.rewrite_scheduled.load(Relaxed);
        let pct = env.config.auto_aof_rewrite_percentage();
        let min = env.config.auto_aof_rewrite_min_size();
        let size = self.current_size.load(Relaxed);
        let base = self.base_size.load(Relaxed).max(1);
        // A BGREWRITEAOF scheduled behind a BGSAVE runs whether the AOF is
        // on or not, as Redis's serverCron; growth triggers only when on.
        let auto = self.state.load(Relaxed) == ON
            && pct > 0
            && size > min
            && (size - base) * 100 / base >= pct;
        if (scheduled || auto) && !self.limited(env.clock.now_ms() / 1000) {
            if auto && !scheduled {
                tracing::info!(
                    "Starting automatic rewriting of AOF on {}% growth",
                    (size - base) * 100 / base
                );
            }
            let mut guards = env.store.lock(env.store.all_shards());
            let _ = start_rewrite(host.clone(), guards.iter_mut());
        }
    }

    /// Redis's `aofRewriteLimited`: after three failed rewrites in a row,
    /// the automatic and scheduled ones wait a minute, then two, four...
    /// up to an hour between tries (BGREWRITEAOF itself is never held).
    fn limited(&self, now_secs: u64) -> bool {
        const THRESHOLD: u64 = 3;
        const MAX_MINUTES: u64 = 60;
        let mut l = self.limit.lock();
        if self.consecutive_failures.load(Relaxed) < THRESHOLD {
            *l = (0, 0);
            return false;
        }
        if l.1 != 0 {
            if now_secs < l.1 {
                return true;
            }
            l.1 = 0;
            return false;
        }
        l.0 = if l.0 == 0 {
            1
        } else {
            (l.0 * 2).min(MAX_MINUTES)
        };
        l.1 = now_secs + l.0 * 60;
        tracing::warn!(
            "Background AOF rewrite has repeatedly failed and triggered the limit, will retry in {} minutes",
            l.0
        );
        true
    }

    /// Flushes and fsyncs everything (shutdown, turning the AOF off).
    pub(crate) fn flush_all(&self) {
        if self.file.lock().is_some() {
            self.write_pending(true);
        }
    }

    /// The directory, as configured (relative to the working directory,
    /// which `dir` sets).
    fn dir(config: &Config) -> PathBuf {
        PathBuf::from(config.appenddirname())
    }
}

/// Starts the thread that fsyncs for `appendfsync always` (see
/// [`Aof::before_reply`]); it sleeps until asked and ends with the process.
pub(crate) fn spawn_syncer(host: Arc<dyn Host>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("zwindow-aofsync".into())
        .spawn(move || {
            // Redis's bio thread for AOF fsyncs: `bio-cpulist`.
            host.env().config.pin_thread("bio");
            host.aof().run_syncer()
        })
        .map(drop)
}

/// The files' tick, ten times a second until shutdown: the AOF's
/// ([`Aof::cron`]), then the save points' ([`crate::persistence::cron`]),
/// in that order, as Redis's `serverCron`.
pub(crate) async fn run(host: Arc<dyn Host>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    let saves: Arc<dyn crate::persistence::Host> = host.clone();
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                host.aof().cron(&host);
                crate::persistence::cron(&saves);
            }
            _ = shutdown.changed() => return,
        }
    }
}

/// A manifest's entry: file name, sequence number, type, and for an
/// incremental file of Redis 7.4+ the replication offsets it starts at
/// and (once closed gracefully) ends at (-1: not known).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileInfo {
    pub(crate) name: String,
    pub(crate) seq: u64,
    pub(crate) kind: u8,
    pub(crate) start_offset: i64,
    pub(crate) end_offset: i64,
}

impl FileInfo {
    pub(crate) fn new(name: String, seq: u64, kind: u8) -> FileInfo {
        FileInfo {
            name,
            seq,
            kind,
            start_offset: -1,
            end_offset: -1,
        }
    }
}

/// The manifest: the base file, files that a rewrite made history (to be
/// deleted), and the incremental files in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Manifest {
    base: Option<FileInfo>,
    history: Vec<FileInfo>,
    incrs: Vec<FileInfo>,
}

const BASE: u8 = b'b';
const HISTORY: u8 = b'h';
const INCR: u8 = b'i';

impl Manifest {
    /// Redis's `getAofManifestAsString`: base, history, incremental.
    pub(crate) fn to_text(&self) -> String {
        let mut s = String::new();
        for f in self.base.iter().chain(&self.history).chain(&self.incrs) {
            // Redis's `aofInfoFormat`: the end offset only beside a start.
            s.push_str(&format!(
                "file {} seq {} type {}",
                quoted(&f.name),
                f.seq,
                f.kind as char
            ));
            if f.start_offset != -1 {
                s.push_str(&format!(" startoffset {}", f.start_offset));
                if f.end_offset != -1 {
                    s.push_str(&format!(" endoffset {}", f.end_offset));
                }
            }
            s.push('\n');
        }
        s
    }

    fn last_base_seq(&self) -> u64 {
        self.base.as_ref().map_or(0, |b| b.seq)
    }

    fn last_incr_seq(&self) -> u64 {
        self.incrs.last().map_or(0, |i| i.seq)
    }

    /// A new base's name (`.rdb`, or `.aof` for a base of commands); the
    /// current one becomes history.
    fn new_base(&mut self, prefix: &str, rdb: bool) -> String {
        let seq = self.last_base_seq() + 1;
        let suffix = if rdb { "rdb" } else { "aof" };
        let name = format!("{prefix}.{seq}.base.{suffix}");
        // History lists the newest first (Redis adds at the list's head).
        if let Some(mut old) = self.base.take() {
            old.kind = HISTORY;
            self.history.insert(0, old);
        }
        self.base = Some(FileInfo::new(name.clone(), seq, BASE));
        name
    }

    /// A new incremental file's name; it starts at replication offset
    /// `start_offset` (Redis's `getNewIncrAofName`).
    fn new_incr(&mut self, prefix: &str, start_offset: u64) -> String {
        let seq = self.last_incr_seq() + 1;
        let name = format!("{prefix}.{seq}.incr.aof");
        self.incrs.push(FileInfo {
            start_offset: start_offset as i64,
            ..FileInfo::new(name.clone(), seq, INCR)
        });
        name
    }
}

/// A file name as a manifest holds it: quoted with escapes when it has
/// spaces, quotes or control characters (Redis's `sdscatrepr`).
fn quoted(name: &str) -> String {
    if !name
        .chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '\\' || c.is_control())
    {
        return name.to_string();
    }
    let mut q = String::from("\"");
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                q.push('\\');
                q.push(c);
            }
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Writes `manifest` through a temporary file and a rename, fsyncing both
/// the file and the directory (Redis's `persistAofManifest`).
fn persist_manifest(dir: &Path, prefix: &str, manifest: &Manifest) -> std::io::Result<()> {
    let tmp = dir.join(format!("temp-{prefix}.manifest"));
    let path = dir.join(format!("{prefix}.manifest"));
    let mut f = File::create(&tmp)?;
    f.write_all(manifest.to_text().as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    sync_dir(dir);
    Ok(())
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The bytes of the files the manifest loads (base and incrementals, not
/// history): what `aof_current_size` reports.
fn live_size(dir: &Path, manifest: &Manifest) -> u64 {
    manifest
        .base
        .iter()
        .chain(&manifest.incrs)
        .map(|f| file_size(&dir.join(&f.name)))
        .sum()
}

/// Deletes the history files and forgets them (Redis's `aofDelHistoryFiles`).
fn delete_history(dir: &Path, prefix: &str, manifest: &mut Manifest) {
    if manifest.history.is_empty() {
        return;
    }
    for h in std::mem::take(&mut manifest.history) {
        tracing::info!("Removing the history file {} in the background", h.name);
        let _ = std::fs::remove_file(dir.join(&h.name));
    }
    if let Err(e) = persist_manifest(dir, prefix, manifest) {
        tracing::warn!("Can't persist the AOF manifest: {e}");
    }
}

/// `CONFIG SET aof-disable-auto-gc no` (Redis's `aofDelHistoryFiles`):
/// the history files kept meanwhile go now.
pub(crate) fn delete_history_now(aof: &Aof, config: &Config) {
    if config.aof_keep_history() {
        return;
    }
    if let Some(f) = aof.file.lock().as_mut() {
        delete_history(&Aof::dir(config), &config.appendfilename(), &mut f.manifest);
    }
}

/// Writes a base of `src` to `path` (through a temporary file): an RDB
/// image, or commands when `rdb` is false (`aof-use-rdb-preamble no`).
fn write_base(
    config: &Config,
    path: &Path,
    rdb: bool,
    src: &dyn crate::rdb::file::Source,
    extras: &crate::rdb::file::Extras,
    abort: Option<&AtomicBool>,
) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let result = (|| {
        let f = File::create(&tmp)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        encode_base(&mut w, config, rdb, src, extras, abort)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A base of `src` into `w`: an RDB image, or commands.
fn encode_base(
    w: &mut dyn Write,
    config: &Config,
    rdb: bool,
    src: &dyn crate::rdb::file::Source,
    extras: &crate::rdb::file::Extras,
    abort: Option<&AtomicBool>,
) -> std::io::Result<()> {
    let opts = crate::rdb::file::SaveOptions {
        abort,
        ..crate::persistence::options(config)
    };
    if rdb {
        crate::rdb::file::write(w, src, extras, opts)
    } else {
        let ts = config.aof_timestamp_enabled().then_some(extras.ctime_secs);
        rewrite::write(w, src, extras, opts, ts)
    }
}

/// The incremental file a rewrite started while the AOF is being turned
/// on appends to until the base exists (Redis's `getTempIncrAofName`); it
/// is renamed to its manifest name when the rewrite succeeds.
fn temp_incr_name(prefix: &str) -> String {
    format!("temp-{prefix}.incr")
}

/// After loading at startup with `appendonly yes` (Redis's
/// `aofOpenIfNeededOnServerStart`): creates the directory, a base of the
/// (empty) dataset when there are no files yet, and opens the last
/// incremental file (a new one if the manifest has none) for appending.
pub(crate) fn open_at_startup(host: &dyn Host, mut manifest: Manifest) -> Result<(), String> {
    let (env, aof) = (host.env(), host.aof());
    let dir = Aof::dir(env.config);
    let prefix = env.config.appendfilename();
    // Redis's `updateReplOffsetAndResetEndOffset`: the offset continues
    // from the last incremental file's end (then forgotten: appending
    // moves it), or its start plus its size.
    if let Some(last) = manifest.incrs.last_mut() {
        let offset = if last.end_offset != -1 {
            std::mem::replace(&mut last.end_offset, -1)
        } else {
            last.start_offset.max(0) + file_size(&dir.join(&last.name)) as i64
        };
        host.set_repl_offset(offset.max(0) as u64);
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        )
    })?;
    if manifest.base.is_none() && manifest.incrs.is_empty() {
        let rdb = env.config.aof_use_rdb_preamble();
        let name = manifest.new_base(&prefix, rdb);
        let guards = env.store.lock(env.store.all_shards());
        let mut ks = crate::keyspace::Keyspace::new(env, guards, 0, env.clock.now_ms());
        let extras = crate::persistence::extras(host).ok_or("the function engine is busy")?;
        let shards = crate::rdb::file::Shards(ks.shards_mut().map(|s| &*s).collect());
        write_base(env.config, &dir.join(&name), rdb, &shards, &extras, None)
            .map_err(|e| format!("Can't create the AOF base file {name}: {e}"))?;
        tracing::info!("Creating AOF base file {name} on server start");
    }
    if manifest.incrs.is_empty() {
        let name = manifest.new_incr(&prefix, host.repl_offset());
        tracing::info!("Creating AOF incr file {name} on server start");
    }
    let last = manifest
        .incrs
        .last()
        .map(|i| i.name.clone())
        .unwrap_or_default();
    let incr = open_append(&dir.join(&last))
        .map_err(|e| format!("Can't open the append-only file {last}: {e}"))?;
    persist_manifest(&dir, &prefix, &manifest)
        .map_err(|e| format!("Can't persist the AOF manifest: {e}"))?;
    let size = live_size(&dir, &manifest);
    aof.current_size.store(size, Relaxed);
    if aof.base_size.load(Relaxed) == 0 {
        let base = manifest
            .base
            .as_ref()
            .map_or(0, |b| file_size(&dir.join(&b.name)));
        aof.base_size.store(base, Relaxed);
    }
    if !host.env().config.aof_keep_history() {
        delete_history(&dir, &prefix, &mut manifest);
    }
    *aof.file.lock() = Some(Files { manifest, incr });
    aof.pending.lock().selected_db = None;
    aof.state.store(ON, Relaxed);
    Ok(())
}

/// `BGREWRITEAOF`'s reply when it started.
const REWRITE_STARTED: &str = "Background append only file rewriting started";

/// Starts a rewrite; the caller holds every shard (`shards`). Opens the
/// new incremental file now — everything after this instant goes there —
/// and writes the new base from the snapshot on a thread of its own, which
/// holds `host` until it is done.
fn start_rewrite<'s>(
    host: Arc<dyn Host>,
    shards: impl Iterator<Item = &'s mut crate::keyspace::Shard>,
) -> Result<(), String> {
    let (env, aof) = (host.env(), host.aof());
    if aof.rewrite_in_progress.load(Relaxed) || host.persistence().bgsave_in_progress.load(Relaxed)
    {
        return Err("ERR a background save or rewrite is running".into());
    }
    let Some(extras) = crate::persistence::extras(&*host) else {
        return Err("ERR the function engine is busy".into());
    };
    let prefix = env.config.appendfilename();
    let dir = Aof::dir(env.config);
    std::fs::create_dir_all(&dir).map_err(|e| {
        tracing::warn!(
            "Can't open or create append-only dir {}: {e}",
            dir.display()
        );
        "ERR Can't create the append-only dir".to_string()
    })?;
    // The switch to a new incremental file, at the snapshot's instant.
    let manifest = {
        let mut files = aof.file.lock();
        let bytes = std::mem::take(&mut aof.pending.lock().bytes);
        let mut manifest = match files.as_mut() {
            Some(f) => {
                if !bytes.is_empty() && f.incr.write_all(&bytes).is_ok() {
                    aof.current_size.fetch_add(bytes.len() as u64, Relaxed);
                }
                // Counted written and durable either way: nobody waits on
                // them past the switch.
                let written =
                    aof.written_total.fetch_add(bytes.len() as u64, Relaxed) + bytes.len() as u64;
                let _ = f.incr.sync_data();
                aof.synced_total.fetch_max(written, Relaxed);
                aof.synced.notify_waiters();
                f.manifest.clone()
            }
            // Turning the AOF on: the files found on disk are replaced.
            None => {
                aof.discarded(bytes.len());
                load::read_manifest(&dir, &prefix).unwrap_or_default()
            }
        };
        // With the AOF off, the rewrite only writes a new base (Redis's
        // `rewriteAppendOnlyFileBackground` opens no incremental file).
        if aof.state.load(Relaxed) == OFF {
            *files = None;
            manifest
        } else {
            let name = manifest.new_incr(&prefix, host.repl_offset());
            let waiting = aof.state.load(Relaxed) == WAIT_REWRITE;
            let opened = if waiting {
                // Truncated: a failed try's leftovers are no part of the new one.
                File::create(dir.join(temp_incr_name(&prefix)))
            } else {
                open_append(&dir.join(&name))
            };
            let incr = opened.map_err(|e| {
                tracing::warn!("Can't open the append-only file {name}: {e}");
                "ERR Can't open the new incremental AOF file".to_string()
            })?;
            if aof.state.load(Relaxed) == ON
                && let Err(e) = persist_manifest(&dir, &prefix, &manifest)
            {
                tracing::warn!("Can't persist the AOF manifest: {e}");
                let _ = std::fs::remove_file(dir.join(&name));
                return Err("ERR Can't persist the AOF manifest".into());
            }
            aof.pending.lock().selected_db = None;
            aof.unsynced.store(0, Relaxed);
            *files = Some(Files {
                manifest: manifest.clone(),
                incr,
            });
            manifest
        }
    };
    let sizes = env.store.begin_snapshot(shards);
    aof.rewrite_abort.store(false, Relaxed);
    // The child exists when BGREWRITEAOF replies (and before INFO says a
    // rewrite runs), as Redis's forked one.
    let h = host.clone();
    let oom = env.config.bgchild_oom_score();
    let child = crate::util::child::spawn_writing("temp-rewriteaof-bg", "aof", oom, move || {
        h.aof().rewrite_abort.store(true, Relaxed)
    });
    if let Ok((c, _)) = &child {
        aof.rewrite_child.store(c.pid(), Relaxed);
    }
    aof.rewrite_in_progress.store(true, Relaxed);
    aof.rewrite_scheduled.store(false, Relaxed);
    aof.rewrite_started
        .store(env.clock.now_ms() / 1000, Relaxed);
    let writer = host.clone();
    let spawned = std::thread::Builder::new()
        .name("zwindow-aofrw".into())
        .spawn(move || run_rewrite(writer, child, sizes, extras, dir, prefix, manifest));
    if let Err(e) = spawned {
        tracing::warn!("Can't rewrite append only file in background: {e}");
        env.store.end_snapshot();
        aof.rewrite_in_progress.store(false, Relaxed);
        return Err("ERR Can't rewrite append only file in background".into());
    }
    tracing::info!("Background append only file rewriting started");
    Ok(())
}

fn run_rewrite(
    host: Arc<dyn Host>,
    child: std::io::Result<(crate::util::child::Child, PathBuf)>,
    sizes: crate::keyspace::snapshot::Sizes,
    extras: crate::rdb::file::Extras,
    dir: PathBuf,
    prefix: String,
    mut manifest: Manifest,
) {
    use crate::util::child::Exit;
    let (env, aof) = (host.env(), host.aof());
    env.config.pin_thread("aof-rewrite");
    let started = std::time::Instant::now();
    let src = crate::persistence::SnapshotSource {
        store: env.store,
        sizes,
    };
    let rdb = env.config.aof_use_rdb_preamble();
    let (encoded, exit, tmp) = match child {
        Ok((mut child, tmp)) => {
            let encoded = encode_base(
                &mut child,
                env.config,
                rdb,
                &src,
                &extras,
                Some(&aof.rewrite_abort),
            );
            let exit = child.finish(encoded.is_ok());
            (encoded, Some(exit), tmp)
        }
        Err(e) => (Err(e), None, PathBuf::new()),
    };
    env.store.end_snapshot();
    aof.rewrite_child.store(0, Relaxed);
    aof.last_rewrite_time_sec
        .store(started.elapsed().as_secs() as i64, Relaxed);
    let stopped = aof.rewrite_abort.load(Relaxed);
    // Redis's `backgroundRewriteDoneHandler`: the outcome is the child's.
    let outcome: Result<(), Option<String>> = match (encoded, exit) {
        (Ok(()), Some(Exit::Code(0))) => Ok(()),
        (_, Some(Exit::Signal(sig))) if sig != libc::SIGUSR1 || stopped => {
            tracing::warn!("Background AOF rewrite terminated by signal {sig}");
            Err((sig != libc::SIGUSR1).then(String::new))
        }
        (Err(e), _) => Err(Some(format!("Background AOF rewrite failed: {e}"))),
        (Ok(()), _) => Err(Some("Background AOF rewrite terminated with error".into())),
    };
    let waiting = aof.state.load(Relaxed) == WAIT_REWRITE;
    let result = outcome.and_then(|()| {
        tracing::info!("Background AOF rewrite terminated with success");
        // The manifest as of now (the incremental file opened at the
        // start is the last one; a later rewrite cannot have run).
        let mut files = aof.file.lock();
        if let Some(f) = files.as_ref() {
            manifest = f.manifest.clone();
        }
        let name = manifest.new_base(&prefix, rdb);
        let fail = |what: String| Some(what);
        std::fs::rename(&tmp, dir.join(&name)).map_err(|e| {
            fail(format!(
                "Error trying to rename the temporary AOF base file {} into {name}: {e}",
                tmp.display()
            ))
        })?;
        tracing::info!(
            "Successfully renamed the temporary AOF base file {} into {name}",
            tmp.display()
        );
        if waiting && let Some(incr) = manifest.incrs.last() {
            let temp = temp_incr_name(&prefix);
            std::fs::rename(dir.join(&temp), dir.join(&incr.name)).map_err(|e| {
                let _ = std::fs::remove_file(dir.join(&name));
                fail(format!(
                    "Error trying to rename the temporary AOF incr file {temp} into {}: {e}",
                    incr.name
                ))
            })?;
            tracing::info!(
                "Successfully renamed the temporary AOF incr file {temp} into {}",
                incr.name
            );
        }
        // Every incremental file but the one opened at the start (when
        // the AOF is on) is in the new base (Redis's
        // `markRewrittenIncrAofAsHistory`: newest first, at the head).
        let keep = if files.is_some() {
            manifest.incrs.pop()
        } else {
            None
        };
        let mut olds = std::mem::take(&mut manifest.incrs);
        for old in &mut olds {
            old.kind = HISTORY;
        }
        manifest.history.splice(0..0, olds);
        manifest.incrs.extend(keep);
        persist_manifest(&dir, &prefix, &manifest)
            .map_err(|e| fail(format!("Can't persist the AOF manifest: {e}")))?;
        if files.is_some() {
            let size = live_size(&dir, &manifest);
            aof.current_size.store(size, Relaxed);
            aof.base_size.store(size, Relaxed);
        }
        if !env.config.aof_keep_history() {
            delete_history(&dir, &prefix, &mut manifest);
        }
        if let Some(f) = files.as_mut() {
            f.manifest = manifest.clone();
        }
        Ok(())
    });
    match result {
        Ok(()) => {
            aof.state
                .compare_exchange(WAIT_REWRITE, ON, Relaxed, Relaxed)
                .ok();
            aof.last_bgrewrite_ok.store(true, Relaxed);
            aof.consecutive_failures.store(0, Relaxed);
            aof.rewrites.fetch_add(1, Relaxed);
            tracing::info!("Background AOF rewrite finished successfully");
        }
        Err(failed) => {
            if let Some(msg) = failed {
                if !msg.is_empty() {
                    tracing::warn!("{msg}");
                }
                aof.last_bgrewrite_ok.store(false, Relaxed);
                aof.consecutive_failures.fetch_add(1, Relaxed);
            }
            // Redis's `aofRemoveTempFile`.
            let _ = std::fs::remove_file(&tmp);
            // Turning the AOF on failed this time: what the temporary
            // incremental file holds is dropped, and a new try scheduled
            // (Redis's `aofDelTempIncrAofFile`).
            let by_server = stopped && exit == Some(Exit::Signal(libc::SIGUSR1));
            if by_server {
                // `CONFIG SET appendonly no` (Redis's `killAppendOnlyChild`
                // cleans up without the done handler).
                let _ = std::fs::remove_file(dir.join(temp_incr_name(&prefix)));
            } else if aof.state.load(Relaxed) == WAIT_REWRITE {
                let mut files = aof.file.lock();
                if let Some(f) = files.as_mut() {
                    f.manifest.incrs.pop();
                }
                let dropped = std::mem::take(&mut aof.pending.lock().bytes);
                aof.discarded(dropped.len());
                let temp = temp_incr_name(&prefix);
                tracing::info!("Removing the temp incr aof file {temp} in the background");
                let _ = std::fs::remove_file(dir.join(&temp));
                aof.rewrite_scheduled.store(true, Relaxed);
            }
        }
    }
    aof.rewrite_in_progress.store(false, Relaxed);
}

/// `CONFIG SET appendonly yes` (Redis's `startAppendOnly`): appending
/// starts at once, to a new incremental file; the base follows from a
/// rewrite, and the manifest names them both once it is written.
/// After a load at startup (Redis 8's `applyAppendOnlyConfig`): the AOF
/// follows an `appendonly` that CONFIG SET changed while the load ran,
/// turned on (rewritten from the loaded data) or off.
pub(crate) fn apply_config(host: Arc<dyn Host>) -> Result<(), String> {
    let env = host.env();
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = crate::keyspace::Keyspace::new(env, guards, 0, env.clock.now_ms());
    match (env.config.appendonly(), host.aof().enabled()) {
        (true, false) => start(host.clone(), &mut ks, false),
        (false, true) => {
            stop(&*host);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Behind a BGSAVE, or inside EXEC, the rewrite is scheduled instead: the
/// cron starts it once nothing runs (until then nothing is appended: the
/// rewrite's snapshot will hold it all).
pub(crate) fn start(
    host: Arc<dyn Host>,
    ks: &mut crate::keyspace::Keyspace<'_>,
    in_exec: bool,
) -> Result<(), String> {
    let aof = host.aof();
    if aof.enabled() {
        return Ok(());
    }
    let p = host.persistence();
    if p.bgsave_in_progress.load(Relaxed) || in_exec {
        aof.state.store(WAIT_REWRITE, Relaxed);
        aof.rewrite_scheduled.store(true, Relaxed);
        if in_exec {
            tracing::info!(
                "AOF was enabled during a transaction. An AOF background was scheduled to start when possible."
            );
        } else {
            tracing::info!(
                "AOF was enabled but there is already another background operation. An AOF background was scheduled to start when possible."
            );
        }
        return Ok(());
    }
    aof.state.store(WAIT_REWRITE, Relaxed);
    let started =
        crate::persistence::with_all_shards(ks, |ks| start_rewrite(host.clone(), ks.shards_mut()));
    if let Err(e) = started {
        tracing::warn!(
            "Redis needs to enable the AOF but can't trigger a background AOF rewrite operation. Check the above logs for more info about the error. ({e})"
        );
        aof.state.store(OFF, Relaxed);
        *aof.file.lock() = None;
        return Err("Unable to turn on AOF. Check server logs.".into());
    }
    Ok(())
}

/// `CONFIG SET appendonly no` (Redis's `stopAppendOnly`): a running
/// rewrite is stopped and waited for, as Redis's `killAppendOnlyChild`
/// (its log line is Redis's, which operators and Redis's tests look for).
pub(crate) fn stop(host: &dyn Host) {
    let aof = host.aof();
    if !aof.enabled() {
        return;
    }
    if aof.rewrite_in_progress.load(Relaxed) {
        tracing::info!(
            "Killing running AOF rewrite child: {}",
            aof.rewrite_child.load(Relaxed)
        );
        aof.rewrite_abort.store(true, Relaxed);
        // The writer checks the flag between batches of keys and while it
        // sleeps `rdb-key-save-delay`: it ends within milliseconds.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while aof.rewrite_in_progress.load(Relaxed) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    aof.flush_all();
    close_incr(host);
    aof.state.store(OFF, Relaxed);
    aof.rewrite_scheduled.store(false, Relaxed);
    *aof.file.lock() = None;
    let dropped = std::mem::take(&mut aof.pending.lock().bytes);
    aof.discarded(dropped.len());
    aof.has_pending.store(false, Relaxed);
}

/// Closing the AOF gracefully (turned off, shutdown): the manifest notes
/// where the incremental file ends in the replication stream (Redis's
/// `updateCurIncrAofEndOffset`; not critical, so a failure is ignored).
pub(crate) fn close_incr(host: &dyn Host) {
    let aof = host.aof();
    if aof.state.load(Relaxed) != ON {
        return;
    }
    let config = host.env().config;
    let mut files = aof.file.lock();
    if let Some(f) = files.as_mut()
        && let Some(last) = f.manifest.incrs.last_mut()
    {
        last.end_offset = host.repl_offset() as i64;
        let _ = persist_manifest(&Aof::dir(config), &config.appendfilename(), &f.manifest);
    }
}

/// `BGREWRITEAOF`.
pub(crate) fn bgrewriteaof(
    host: Arc<dyn Host>,
    ks: &mut crate::keyspace::Keyspace<'_>,
) -> Result<&'static str, String> {
    let aof = host.aof();
    if aof.rewrite_in_progress.load(Relaxed) {
        return Err("ERR Background append only file rewriting already in progress".into());
    }
    if host.persistence().bgsave_in_progress.load(Relaxed) {
        aof.rewrite_scheduled.store(true, Relaxed);
        return Ok("Background append only file rewriting scheduled");
    }
    crate::persistence::with_all_shards(ks, |ks| start_rewrite(host.clone(), ks.shards_mut()))
        .map_err(|_| "ERR Can't execute an AOF background rewriting. Please check the server logs for more information.".to_string())?;
    Ok(REWRITE_STARTED)
}

/// `DEBUG LOADAOF`: writes out what is pending, empties the dataset and
/// loads the files back, replaying their commands through `dispatch`; the
/// caller holds every shard. The replayed commands are not logged again.
pub(crate) fn debug_loadaof<C>(
    host: &dyn Host,
    ks: &mut crate::keyspace::Keyspace<'_>,
    dispatch: &dyn crate::dispatch::Dispatch<C>,
) -> Result<(), String> {
    let aof = host.aof();
    aof.flush_all();
    crate::persistence::flush_all(host, ks);
    let state = aof.state.swap(OFF, Relaxed);
    // The replayed commands run on this command's keyspace view while
    // nothing listens, so nothing isolates their propagation state: a
    // replayed FLUSHALL's "log me anyway" would otherwise stay set and
    // log this DEBUG LOADAOF itself, which every later load would replay.
    let own = std::mem::take(&mut ks.prop);
    let loaded = load::load_files(host, ks, dispatch);
    ks.prop = own;
    aof.state.store(state, Relaxed);
    loaded.map(|_| {
        // Redis's `server.dirty = 0`: what was loaded is no change to save.
        host.env().dirty.store(0, Relaxed);
        tracing::warn!("Append Only File loaded by DEBUG LOADAOF")
    })
}

/// INFO persistence's `aof_*` lines, as Redis 7.0 prints them.
pub(crate) fn info_fields(aof: &Aof, clock: &Clock) -> Vec<(&'static str, String)> {
    let state = aof.state.load(Relaxed);
    let now = clock.now_ms() / 1000;
    let rewriting = aof.rewrite_in_progress.load(Relaxed);
    let ok = |b: bool| if b { "ok" } else { "err" }.to_string();
    let mut v = vec![
        ("aof_enabled", u8::from(state != OFF).to_string()),
        ("aof_rewrite_in_progress", u8::from(rewriting).to_string()),
        (
            "aof_rewrite_scheduled",
            u8::from(aof.rewrite_scheduled.load(Relaxed)).to_string(),
        ),
        (
            "aof_last_rewrite_time_sec",
            aof.last_rewrite_time_sec.load(Relaxed).to_string(),
        ),
        (
            "aof_current_rewrite_time_sec",
            if rewriting {
                now.saturating_sub(aof.rewrite_started.load(Relaxed))
                    .to_string()
            } else {
                "-1".into()
            },
        ),
        (
            "aof_last_bgrewrite_status",
            ok(aof.last_bgrewrite_ok.load(Relaxed)),
        ),
        ("aof_rewrites", aof.rewrites.load(Relaxed).to_string()),
        (
            "aof_rewrites_consecutive_failures",
            aof.consecutive_failures.load(Relaxed).to_string(),
        ),
        ("aof_last_write_status", ok(aof.last_write_ok.load(Relaxed))),
        ("aof_last_cow_size", "0".into()),
        ("module_fork_in_progress", "0".into()),
        ("module_fork_last_cow_size", "0".into()),
    ];
    if state != OFF {
        let pending = aof.pending.lock().bytes.len();
        v.extend([
            (
                "aof_current_size",
                aof.current_size.load(Relaxed).to_string(),
            ),
            ("aof_base_size", aof.base_size.load(Relaxed).to_string()),
            (
                "aof_pending_rewrite",
                u8::from(aof.rewrite_scheduled.load(Relaxed)).to_string(),
            ),
            ("aof_buffer_length", pending.to_string()),
            ("aof_pending_bio_fsync", "0".into()),
            (
                "aof_delayed_fsync",
                aof.delayed_fsync.load(Relaxed).to_string(),
            ),
        ]);
    }
    v
}
