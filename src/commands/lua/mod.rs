//! Lua scripting (EVAL, functions): the engine, its sandbox, the script
//! cache and the "busy script" state other clients consult.
//!
//! One Lua 5.1 state (mlua, vendored) lives behind a mutex in [`Scripting`]
//! and is used only while a script runs or is loaded. One state rather than
//! one per connection because scripts are serialized anyway — EVAL-family
//! commands lock every shard (`Keys::All`), which makes a script atomic
//! across shards and deadlock-free — and because Redis has one state too,
//! so the script cache and the sandbox are built once.
//!
//! The sandbox is built by `bootstrap.lua`: scripts run with a read-only
//! view of the globals (unknown names fail with Redis's "nonexistent global
//! variable" text, writes with "Attempt to modify a readonly table"), no
//! `os`/`io`/`loadfile`/`dofile`/`require`, and Redis's error handler, which
//! turns every failure into an error table with the script position.
//!
//! `redis.call` builds [`OwnedArgs`], verifies them as Redis verifies a
//! script's command (`verify_from_script`) and runs them through the
//! execution layer's [`Dispatch`] handle, which EVAL and FCALL pass in, on
//! the script's already-locked
//! [`Keyspace`], into a scratch [`Reply`] that [`convert`] turns into Lua
//! values; commands see the one `now_ms` of the keyspace, so time is frozen
//! for the whole script.
//!
//! Busy scripts: [`Busy`] records which client runs a script and since when.
//! Scripts (and EXECs that queue one) run on one dedicated thread, the
//! script runner, never on a tokio worker: the caller's connection moves its
//! client state there and awaits the result. Other clients never block a
//! worker waiting for a script either: dispatch (one atomic load when no
//! script runs) tells the connection to await [`Busy::wait_end`] — the end
//! of the script or `busy-reply-threshold`, whichever comes first — and
//! retry; past the threshold, commands get BUSY at once and ALLOW_BUSY ones
//! (SCRIPT KILL, SHUTDOWN NOSAVE, …) run without touching shard locks. With
//! a blocking wait, two workers stuck behind one script would leave nobody
//! to serve SCRIPT KILL. SCRIPT KILL sets a flag that an instruction-count
//! hook turns into an error inside the script.

pub(crate) mod codecs;
pub(crate) mod convert;
pub(crate) mod dump;
pub(crate) mod functions;
pub(crate) mod ldb;
pub(crate) mod libs;

use std::borrow::Cow;

use crate::acl::catalog::Catalog;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value};
use parking_lot::{MappedMutexGuard, Mutex, MutexGuard};

use crate::acl::log::Context;
use crate::commands::Services;
use crate::commands::session::CompatCheck;
use crate::commands::{self, Args, Client, Command, OwnedArgs, ScriptError, flags};
use crate::dispatch::Dispatch;
use crate::keyspace::Keyspace;
use crate::keyspace::propagate::Target;
use crate::protocol::Reply;

pub(crate) const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
pub(crate) const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const KILLED: &str = "ERR Script killed by user with SCRIPT KILL...";

/// How many scripts loaded by EVAL are kept (Redis's `LRU_LIST_LENGTH`).
pub(crate) const EVAL_SCRIPTS_KEPT: usize = 500;

/// Chunk name of EVAL scripts (errors say `user_script:LINE:`).
const EVAL_CHUNK: &str = "@user_script";
/// Chunk name of function libraries.
const FUNCTION_CHUNK: &str = "@user_function";

/// What other clients may see of the running script.
#[derive(Default)]
pub(crate) struct Busy {
    running: AtomicBool,
    /// Client id of the script's caller.
    runner: AtomicU64,
    /// Milliseconds since `epoch` when the script started.
    started_ms: AtomicU64,
    kill: AtomicBool,
    /// The hook fires on every instruction since a kill (see [`install_hook`]).
    hook_escalated: AtomicBool,
    wrote: AtomicBool,
    /// FUNCTION LOAD's deadline (ms since `epoch`; 0 = none).
    load_deadline_ms: AtomicU64,
    /// The running function and its FCALL arguments (FUNCTION STATS).
    pub(crate) running_function: Mutex<Option<(String, Vec<Vec<u8>>)>>,
    is_function: AtomicBool,
    /// `busy-reply-threshold` for the running script (0: none) and its
    /// name (SHA1 or function), for the "Slow script detected" log line,
    /// written once per script (`slow_logged`).
    slow_after_ms: AtomicU64,
    slow_logged: AtomicBool,
    slow_name: Mutex<String>,
    epoch: std::sync::OnceLock<Instant>,
    /// Woken when a script ends.
    ended: tokio::sync::Notify,
}

/// Ends the busy state when a script returns (or unwinds).
pub(crate) struct BusyGuard<'a>(&'a Busy);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.running.store(false, Relaxed);
        self.0.slow_after_ms.store(0, Relaxed);
        self.0.kill.store(false, Relaxed);
        *self.0.running_function.lock() = None;
        self.0.ended.notify_waiters();
    }
}

impl Busy {
    fn now_ms(&self) -> u64 {
        self.epoch.get_or_init(Instant::now).elapsed().as_millis() as u64
    }

    pub(crate) fn begin(&self, client: u64, is_function: bool) -> BusyGuard<'_> {
        self.runner.store(client, Relaxed);
        self.started_ms.store(self.now_ms(), Relaxed);
        self.kill.store(false, Relaxed);
        self.wrote.store(false, Relaxed);
        self.is_function.store(is_function, Relaxed);
        self.running.store(true, Relaxed);
        BusyGuard(self)
    }

    /// True while a script started by someone other than `client` runs.
    pub(crate) fn running_for_other(&self, client: u64) -> bool {
        self.running.load(Relaxed) && self.runner.load(Relaxed) != client
    }

    /// Logs once, as Redis's `scriptInterrupt`, when the running script
    /// passes `busy-reply-threshold` (from then on other clients get BUSY).
    fn watch_slow(&self, threshold_ms: u64, name: &str) {
        self.slow_logged.store(false, Relaxed);
        *self.slow_name.lock() = name.to_string();
        self.slow_after_ms.store(threshold_ms.max(1), Relaxed);
    }

    fn note_if_slow(&self) {
        let after = self.slow_after_ms.load(Relaxed);
        if after == 0 || self.slow_logged.load(Relaxed) || !self.running.load(Relaxed) {
            return;
        }
        let elapsed = self.elapsed_ms();
        if elapsed >= after && !self.slow_logged.swap(true, Relaxed) {
            let kill = if self.is_function.load(Relaxed) {
                "FUNCTION KILL"
            } else {
                "SCRIPT KILL"
            };
            tracing::warn!(
                "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the {kill} command. Script name is: {}.",
                self.slow_name.lock()
            );
        }
    }

    /// Arms (or, with `None`, disarms) FUNCTION LOAD's timeout.
    pub(crate) fn set_load_deadline(&self, after: Option<u64>) {
        let at = after.map_or(0, |ms| self.now_ms() + ms.max(1));
        self.load_deadline_ms.store(at, Relaxed);
    }

    fn load_timed_out(&self) -> bool {
        let at = self.load_deadline_ms.load(Relaxed);
        at != 0 && self.now_ms() >= at
    }

    pub(crate) fn elapsed_ms(&self) -> u64 {
        self.now_ms().saturating_sub(self.started_ms.load(Relaxed))
    }

    pub(crate) fn is_running(&self) -> bool {
        self.running.load(Relaxed)
    }

    pub(crate) fn is_function(&self) -> bool {
        self.is_function.load(Relaxed)
    }

    /// Waits (without blocking the thread) until the script another client
    /// runs ends, or until it passes `threshold_ms` if it has not yet.
    pub(crate) async fn wait_end(&self, client: u64, threshold_ms: u64) {
        let notified = self.ended.notified();
        tokio::pin!(notified);
        // Registered before the check, so an end in between is not missed.
        notified.as_mut().enable();
        if !self.running_for_other(client) {
            return;
        }
        let elapsed = self.elapsed_ms();
        if elapsed < threshold_ms {
            let left = std::time::Duration::from_millis(threshold_ms - elapsed);
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(left) => {}
            }
        } else {
            notified.await;
        }
    }

    /// Shutdown: stops a running script even if it wrote (its shard locks
    /// would keep the background thread, and so the exit, waiting).
    pub(crate) fn force_kill(&self) {
        if self.running.load(Relaxed) {
            self.kill.store(true, Relaxed);
        }
    }

    /// SCRIPT KILL / FUNCTION KILL.
    pub(crate) fn kill(&self, by_function_kill: bool) -> Result<(), &'static str> {
        if !self.running.load(Relaxed) {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Relaxed) {
            return Err(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
            );
        }
        let is_function = self.is_function.load(Relaxed);
        if !by_function_kill && is_function {
            return Err(BUSY_FUNCTION);
        }
        if by_function_kill && !is_function {
            return Err(BUSY_EVAL);
        }
        self.kill.store(true, Relaxed);
        Ok(())
    }
}

/// Work for the script runner thread.
type Job = Box<dyn FnOnce() + Send>;

thread_local! {
    static ON_RUNNER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// True on the script runner thread.
pub(crate) fn on_runner() -> bool {
    ON_RUNNER.with(|c| c.get())
}

/// The shared scripting state (one per server).
#[derive(Default)]
pub(crate) struct Scripting {
    engine: Mutex<Option<Engine>>,
    /// The script runner's queue, started on first use. A detached thread
    /// rather than tokio's blocking pool: a runaway script must not keep
    /// the runtime (and so SHUTDOWN NOSAVE) from ending.
    runner: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<Job>>>,
    pub(crate) busy: Arc<Busy>,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call `noscript`
    /// commands (a testing hook of Redis's).
    pub(crate) allow_noscript: AtomicBool,
    /// Figures INFO reads without taking the engine (a script may hold it).
    pub(crate) cached_scripts: AtomicUsize,
    pub(crate) scripts_bytes: AtomicUsize,
    pub(crate) lua_memory: AtomicUsize,
    pub(crate) functions_count: AtomicUsize,
    pub(crate) libraries_count: AtomicUsize,
    pub(crate) functions_bytes: AtomicUsize,
    /// The Lua heap the function libraries hold (see
    /// [`Engine::functions_vm_bytes`]).
    pub(crate) functions_vm: AtomicUsize,
    /// INFO's `evicted_scripts` (CONFIG RESETSTAT zeroes it).
    pub(crate) evicted_scripts: std::sync::atomic::AtomicU64,
}

/// The flags a script declared (its `#!lua` line's, or its function's),
/// which replace its command's own `write`, `stale` and `denyoom` flags
/// (Redis's `scriptFlagsToCmdFlags`).
#[derive(Clone, Copy)]
pub(crate) struct Declared {
    pub(crate) no_writes: bool,
    pub(crate) allow_stale: bool,
}

impl Scripting {
    /// What EVAL/EVALSHA/FCALL (and their `_ro` forms) `args` declared,
    /// read before the command runs, as Redis's `evalGetCommandFlags` /
    /// `fcallGetCommandFlags` do for `processCommand`'s checks (a write on
    /// a read-only replica, stale data). `None` when nothing was declared:
    /// a script without a shebang (EVAL's compatibility mode), an unknown
    /// script or function, or while the engine is busy; the command's own
    /// flags hold then, and the script's start checks what it declared.
    pub(crate) fn declared(
        &self,
        cmd: &commands::Command,
        args: &commands::Args<'_>,
    ) -> Option<Declared> {
        if args.len() < 2 {
            return None;
        }
        if matches!(cmd.name, "eval" | "eval_ro") {
            let body = args.get(1);
            return (body.starts_with(b"#!") && parse_shebang(body).is_ok()).then(|| Declared {
                no_writes: shebang_has_flag(body, "no-writes"),
                allow_stale: shebang_has_flag(body, "allow-stale"),
            });
        }
        if !matches!(cmd.name, "evalsha" | "evalsha_ro" | "fcall" | "fcall_ro") {
            return None;
        }
        let g = self.engine.try_lock()?;
        let engine = g.as_ref()?;
        if cmd.name.starts_with("fcall") {
            let f = engine.find_function(args.get(1))?;
            return Some(Declared {
                no_writes: f.flags & functions::FLAG_NO_WRITES != 0,
                allow_stale: f.flags & functions::FLAG_ALLOW_STALE != 0,
            });
        }
        let sha = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
        let s = engine.scripts.get(&sha).filter(|s| s.shebang)?;
        Some(Declared {
            no_writes: s.no_writes,
            allow_stale: s.allow_stale,
        })
    }

    /// Whether EVAL/EVALSHA/FCALL `args` may write (its script or function
    /// is not flagged `no-writes`), for CLIENT PAUSE WRITE. Unknown
    /// scripts, and any while the engine is busy, count as writing.
    pub(crate) fn may_write(&self, cmd: &commands::Command, args: &commands::Args<'_>) -> bool {
        if cmd.name == "eval" {
            return !matches!(parse_shebang(args.get(1)), Ok((true, _)));
        }
        let Some(g) = self.engine.try_lock() else {
            return true;
        };
        let Some(engine) = g.as_ref() else {
            return true;
        };
        if cmd.name == "fcall" {
            return engine
                .find_function(args.get(1))
                .is_none_or(|f| f.flags & functions::FLAG_NO_WRITES == 0);
        }
        let sha = String::from_utf8_lossy(args.get(1)).to_ascii_lowercase();
        engine
            .scripts
            .get(&sha)
            .is_none_or(|s| !(s.shebang && s.no_writes))
    }

    /// The engine, built on first use (blocks while a script runs: for the
    /// script runner and EXEC, which hold every shard anyway).
    pub(crate) fn engine(&self) -> Result<MappedMutexGuard<'_, Engine>, String> {
        self.build(self.engine.lock())
    }

    fn build<'a>(
        &'a self,
        mut g: MutexGuard<'a, Option<Engine>>,
    ) -> Result<MappedMutexGuard<'a, Engine>, String> {
        if g.is_none() {
            *g = Some(Engine::new(self.busy.clone()).map_err(|e| format!("ERR {e}"))?);
        }
        Ok(MutexGuard::map(g, |e| match e {
            Some(e) => e,
            None => unreachable!("engine was just built"),
        }))
    }

    /// Queues `job` on the script runner thread.
    pub(crate) fn submit(&self, job: Job) {
        let tx = self.runner.get_or_init(|| {
            let (tx, rx) = std::sync::mpsc::channel::<Job>();
            let spawned = std::thread::Builder::new()
                .name("zwindow-scripts".into())
                // Deeply nested cjson/cmsgpack values recurse.
                .stack_size(32 << 20)
                .spawn(move || {
                    ON_RUNNER.with(|c| c.set(true));
                    while let Ok(job) = rx.recv() {
                        // A panicking job drops its reply channel (its
                        // caller sees the failure); the runner lives on.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                });
            if let Err(e) = spawned {
                tracing::error!("cannot start the script runner: {e}");
            }
            Mutex::new(tx)
        });
        // A send fails only if the thread could not start: the job (and its
        // reply channel) is dropped, which its caller reports.
        let _ = tx.lock().send(job);
    }

    /// The engine for a command that is not itself a script (SCRIPT LOAD,
    /// FUNCTION LIST, …). If another client's script holds it, this does
    /// not wait: it asks the connection to retry once the script ends.
    pub(crate) fn engine_for(
        &self,
        client: &mut Client,
    ) -> Result<MappedMutexGuard<'_, Engine>, commands::Error> {
        loop {
            if let Some(g) = self
                .engine
                .try_lock_for(std::time::Duration::from_millis(10))
            {
                return self.build(g).map_err(commands::Error::Owned);
            }
            if on_runner() {
                return self.engine().map_err(commands::Error::Owned);
            }
            if self.busy.running_for_other(client.handle.id) {
                // Dispatch answers BUSY or waits for the end on the retry.
                return Err(commands::Error::EngineBusy);
            }
        }
    }

    /// The function libraries' code, for an RDB file (none without taking
    /// the engine when no library exists). None if the engine stays held
    /// for a second (a script running while the caller holds shards).
    pub(crate) fn library_codes(&self) -> Option<Vec<Vec<u8>>> {
        if self.libraries_count.load(Relaxed) == 0 {
            return Some(Vec::new());
        }
        let g = self
            .engine
            .try_lock_for(std::time::Duration::from_secs(1))?;
        Some(
            g.as_ref()
                .map(|e| e.libraries.values().map(|l| l.code.clone()).collect())
                .unwrap_or_default(),
        )
    }

    pub(crate) fn update_stats(&self, e: &mut Engine) {
        self.evicted_scripts.fetch_add(e.take_evicted(), Relaxed);
        self.cached_scripts.store(e.scripts.len(), Relaxed);
        self.scripts_bytes.store(e.script_bytes, Relaxed);
        self.lua_memory.store(e.lua.used_memory(), Relaxed);
        self.libraries_count.store(e.libraries.len(), Relaxed);
        self.functions_count.store(e.function_count(), Relaxed);
        self.functions_bytes.store(e.library_bytes, Relaxed);
        self.functions_vm.store(e.functions_vm_bytes(), Relaxed);
    }
}

/// A compiled EVAL script.
pub(crate) struct Script {
    /// The compiled chunk in the Lua registry: a `Function` handle would
    /// hold a slot of mlua's reference stack, which Lua 5.1 caps near
    /// 8,000, so a long-lived cache of them runs out (50,000 SCRIPT LOADs
    /// must work, as in Redis).
    pub(crate) func: mlua::RegistryKey,
    /// `#!lua flags=no-writes`.
    pub(crate) no_writes: bool,
    /// `#!lua flags=allow-oom`: may write while memory is over `maxmemory`.
    pub(crate) allow_oom: bool,
    /// `#!lua flags=allow-stale`: may run on a replica whose link is down
    /// with `replica-serve-stale-data no`.
    pub(crate) allow_stale: bool,
    /// Has a `#!lua` line: its flags are checked before it runs (Redis
    /// 7.0 checks a legacy script's writes only as they happen).
    pub(crate) shebang: bool,
    /// `#!lua flags=no-cluster`: refused in cluster mode.
    pub(crate) no_cluster: bool,
    /// Loaded by EVAL: its place in the eviction order (see
    /// [`Engine::touch_script`]); None when SCRIPT LOAD brought it, which
    /// is never evicted.
    lru: Option<u64>,
    /// What it adds to INFO's `used_memory_scripts_eval`.
    bytes: usize,
    /// Its commands' keys may be in different slots (in cluster mode):
    /// `#!lua flags=allow-cross-slot-keys`, or no `#!lua` line at all.
    pub(crate) cross_slot: bool,
}

pub(crate) struct Engine {
    pub(crate) lua: Lua,
    /// What scripts see as their globals (read-only).
    pub(crate) env: Table,
    /// The real globals (KEYS and ARGV are set here).
    globals: Table,
    /// Rust entry points the bootstrap calls through (`call`, `setresp`, …).
    impl_tbl: Table,
    errhandler: Function,
    xpcall: Function,
    /// `function(f, k, a) return function() return f(k, a) end end`: an
    /// FCALL's function with its keys and arguments, for xpcall.
    runner: Function,
    pub(crate) scripts: HashMap<String, Script>,
    /// EVAL-loaded scripts, least recently used first (Redis 7.4+'s
    /// `lua_scripts_lru_list`), by a stamp that grows with every use.
    eval_lru: std::collections::BTreeMap<u64, String>,
    lru_clock: u64,
    /// Scripts evicted and not yet counted into INFO's `evicted_scripts`
    /// (see [`Engine::take_evicted`]).
    evicted: u64,
    /// The environment of every function library (see bootstrap.lua).
    fenv: Table,
    /// bootstrap.lua's `load_library(chunk)`.
    load_library: Function,
    /// `debug.getlocal`, kept for the debugger (scripts lose `debug`).
    getlocal: Function,
    busy: Arc<Busy>,
    /// Scripts run, for the periodic collection.
    runs: u32,
    /// FUNCTION libraries by name (sorted: FUNCTION LIST is deterministic).
    pub(crate) libraries: std::collections::BTreeMap<String, functions::Library>,
    /// INFO's script and library byte counts, kept as they change: summing
    /// them on every load made 50,000 loads quadratic.
    script_bytes: usize,
    pub(crate) library_bytes: usize,
    library_vm_bytes: usize,
    /// Lower-cased function name → its library (FCALL names are
    /// case-insensitive across libraries, as in Redis).
    function_index: HashMap<String, String>,
}

/// How one script runs.
pub(crate) struct RunSpec<'a> {
    /// Shown in errors: the SHA1 for EVAL, the function name for FCALL.
    pub(crate) name: &'a str,
    pub(crate) read_only: bool,
    pub(crate) keys: Vec<&'a [u8]>,
    pub(crate) argv: Vec<&'a [u8]>,
    /// FCALL passes KEYS and ARGV as arguments instead of globals.
    pub(crate) as_function: bool,
    /// A script without flags started over `maxmemory`: its deny-OOM
    /// commands fail until it wrote (Redis's `scriptVerifyOOM`).
    pub(crate) deny_oom: bool,
    /// Cluster mode: its commands' keys may be in different slots
    /// (Redis's `SCRIPT_ALLOW_CROSS_SLOT`).
    pub(crate) cross_slot: bool,
}

impl Engine {
    /// An engine of its own, with its own busy state, for a debugging
    /// session of SCRIPT DEBUG YES (a fork's copy of the Lua state in
    /// Redis): other clients' scripts go on using the shared one.
    pub(crate) fn private() -> Result<Engine, String> {
        Engine::new(Arc::new(Busy::default())).map_err(|e| format!("ERR {e}"))
    }

    /// Whether this is the server's shared engine (whose figures INFO shows).
    pub(crate) fn is_shared(&self, shared: &Services) -> bool {
        Arc::ptr_eq(&self.busy, &shared.scripting.busy)
    }

    fn new(busy: Arc<Busy>) -> mlua::Result<Engine> {
        let engine_busy = busy.clone();
        // SAFETY: the debug library is needed to build Redis's error handler;
        // the bootstrap removes it from the globals right after.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG | StdLib::OS,
                LuaOptions::new(),
            )
        };
        let globals = lua.globals();
        let env = lua.create_table()?;
        let impl_tbl = lua.create_table()?;
        impl_tbl.raw_set(
            "errstr",
            lua.create_function(|_, v: Value| Ok(error_message(&v)))?,
        )?;
        impl_tbl.raw_set(
            "errtext",
            lua.create_function(|lua, s: mlua::LuaString| {
                let mut t = s.as_bytes().to_vec();
                if t.first() != Some(&b'-') {
                    t.insert(0, b'-');
                }
                lua.create_string(convert::error_text(&t))
            })?,
        )?;
        impl_tbl.raw_set(
            "sha1hex",
            lua.create_function(|_, v: Value| {
                let bytes = match &v {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => lua_number_string(*n).into_bytes(),
                    _ => Vec::new(),
                };
                Ok(sha1_hex(&bytes))
            })?,
        )?;
        impl_tbl.raw_set(
            "toint",
            lua.create_function(|_, v: Value| {
                Ok(match v {
                    Value::Integer(i) => i,
                    Value::Number(n) => n as i64,
                    Value::String(s) => std::str::from_utf8(&s.as_bytes())
                        .ok()
                        .and_then(|s| s.trim().parse::<f64>().ok())
                        .map_or(0, |n| n as i64),
                    _ => 0,
                })
            })?,
        )?;
        impl_tbl.raw_set(
            "log",
            lua.create_function(|_, (level, msg): (i64, mlua::LuaString)| {
                let msg = msg.to_string_lossy();
                match level {
                    0 => tracing::debug!(target: "script", "{msg}"),
                    1 => tracing::debug!(target: "script", "{msg}"),
                    2 => tracing::info!(target: "script", "{msg}"),
                    _ => tracing::warn!(target: "script", "{msg}"),
                }
                Ok(())
            })?,
        )?;
        impl_tbl.raw_set(
            "cmd_exists",
            lua.create_function(|_, name: mlua::LuaString| {
                Ok(commands::lookup(&name.as_bytes()).is_some())
            })?,
        )?;
        impl_tbl.raw_set("version", crate::version::REDIS_VERSION)?;
        impl_tbl.raw_set("killed", KILLED)?;
        impl_tbl.raw_set("version_num", redis_version_num())?;
        impl_tbl.raw_set("bit", libs::bit(&lua)?)?;
        impl_tbl.raw_set("cjson", codecs::cjson(&lua)?)?;
        impl_tbl.raw_set("struct", codecs::struct_lib(&lua)?)?;
        impl_tbl.raw_set("cmsgpack", codecs::cmsgpack(&lua)?)?;
        let rng = Arc::new(libs::Rand48::default());
        libs::install_random(&lua, &impl_tbl, rng)?;
        lua.set_named_registry_value(IMPL_KEY, impl_tbl.clone())?;
        impl_tbl.raw_set(
            "cwrap",
            lua.create_function(|lua, (f, mode): (Function, i64)| {
                // SAFETY: pushes one C closure over the two arguments.
                unsafe {
                    lua.exec_raw::<Function>((f, mode), |l| {
                        mlua::ffi::lua_pushcclosure(l, trampoline, 2);
                    })
                }
            })?,
        )?;
        impl_tbl.raw_set(
            "ldb_breakpoint",
            lua.create_function(|lua, ()| Ok(ldb::breakpoint(lua)))?,
        )?;
        impl_tbl.raw_set(
            "ldb_debug",
            lua.create_function(|lua, args: MultiValue| {
                ldb::debug_log(lua, args);
                Ok(())
            })?,
        )?;
        let getlocal: Function = globals.raw_get::<Table>("debug")?.raw_get("getlocal")?;
        let boot = lua
            .load(include_str!("bootstrap.lua"))
            .set_name("=[redis]")
            .into_function()?;
        let (errhandler, fenv, load_library): (Function, Table, Function) =
            boot.call((globals.clone(), env.clone(), impl_tbl.clone()))?;
        let xpcall: Function = globals.raw_get("xpcall")?;
        let runner = lua
            .load("return function(f, k, a) return function() return f(k, a) end end")
            .set_name("=[redis]")
            .call::<Function>(())?;
        install_hook(&lua, busy, HOOK_EVERY)?;
        Ok(Engine {
            lua,
            env,
            globals,
            impl_tbl,
            errhandler,
            xpcall,
            runner,
            scripts: HashMap::new(),
            eval_lru: Default::default(),
            lru_clock: 0,
            evicted: 0,
            fenv,
            load_library,
            getlocal,
            busy: engine_busy,
            runs: 0,
            libraries: Default::default(),
            script_bytes: 0,
            library_bytes: 0,
            library_vm_bytes: 0,
            function_index: HashMap::new(),
        })
    }

    /// Compiles `body` as a chunk named `chunk` with the sandboxed globals.
    pub(crate) fn compile(
        &self,
        code: &[u8],
        chunk: &str,
        env: &Table,
    ) -> Result<Function, String> {
        self.lua
            .load(code)
            .set_name(chunk)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                e => e.to_string(),
            })
    }

    /// SCRIPT LOAD / EVAL (`by_eval`): compiles and caches a script by
    /// its SHA1. A script EVAL brings is evictable: past
    /// [`EVAL_SCRIPTS_KEPT`] of them, the least recently used goes (Redis's
    /// `luaScriptsLRUAdd`), so clients sending ever new scripts do not fill
    /// the memory.
    pub(crate) fn load_script(&mut self, body: &[u8], by_eval: bool) -> Result<String, String> {
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (no_writes, code_start) = parse_shebang(body)?;
        let func = self
            .compile(&body[code_start..], EVAL_CHUNK, &self.env)
            .map_err(|m| format!("ERR Error compiling script (new function): {m}"))?;
        let func = self
            .lua
            .create_registry_value(func)
            .map_err(|e| format!("ERR Error compiling script (new function): {e}"))?;
        let bytes = body.len() + 64;
        self.script_bytes += bytes;
        let lru = if by_eval {
            while self.eval_lru.len() >= EVAL_SCRIPTS_KEPT {
                let Some((_, oldest)) = self.eval_lru.pop_first() else {
                    break;
                };
                if let Some(gone) = self.scripts.remove(&oldest) {
                    self.script_bytes -= gone.bytes;
                    self.evicted += 1;
                }
            }
            self.lru_clock += 1;
            self.eval_lru.insert(self.lru_clock, sha.clone());
            Some(self.lru_clock)
        } else {
            None
        };
        self.scripts.insert(
            sha.clone(),
            Script {
                func,
                lru,
                bytes,
                no_writes,
                allow_oom: shebang_has_flag(body, "allow-oom"),
                allow_stale: shebang_has_flag(body, "allow-stale"),
                shebang: body.starts_with(b"#!"),
                no_cluster: shebang_has_flag(body, "no-cluster"),
                cross_slot: !body.starts_with(b"#!")
                    || shebang_has_flag(body, "allow-cross-slot-keys"),
            },
        );
        Ok(sha)
    }

    /// A script ran: an evictable one becomes the most recently used
    /// (Redis's `evalGenericCommand` relinking its LRU node).
    pub(crate) fn touch_script(&mut self, sha: &str) {
        let Some(script) = self.scripts.get_mut(sha) else {
            return;
        };
        if let Some(stamp) = script.lru {
            self.eval_lru.remove(&stamp);
            self.lru_clock += 1;
            script.lru = Some(self.lru_clock);
            self.eval_lru.insert(self.lru_clock, sha.to_owned());
        }
    }

    /// Scripts evicted since the last call.
    pub(crate) fn take_evicted(&mut self) -> u64 {
        std::mem::take(&mut self.evicted)
    }

    /// Empties the script cache, handing its scripts to the caller (to
    /// free elsewhere: SCRIPT FLUSH ASYNC).
    pub(crate) fn take_scripts(&mut self) -> HashMap<String, Script> {
        self.eval_lru.clear();
        self.script_bytes = 0;
        std::mem::take(&mut self.scripts)
    }

    pub(crate) fn flush_scripts(&mut self) {
        self.scripts.clear();
        self.eval_lru.clear();
        self.script_bytes = 0;
        self.lua.expire_registry_values();
        self.lua.gc_collect().ok();
    }

    /// The function a registry key holds (a script's or a library's).
    pub(crate) fn registered(&self, key: &mlua::RegistryKey) -> Result<Function, String> {
        self.lua.registry_value(key).map_err(|e| format!("ERR {e}"))
    }

    fn busy(&self) -> &Busy {
        &self.busy
    }

    /// Runs `func` for the client of `caller`, writing its reply into `out`;
    /// returns the error the reply is, if it is one (for the statistics).
    /// The script's commands run through `dispatch`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        shared: &Arc<Services>,
        dispatch: &dyn Dispatch<Client>,
        caller: &Client,
        ks: &mut Keyspace<'_>,
        out: &mut Reply,
        func: &Function,
        spec: RunSpec<'_>,
    ) -> Option<ScriptError> {
        let lua = &self.lua;
        let mut failed = None;
        let busy = self.busy.clone();
        busy.watch_slow(shared.config.busy_reply_threshold(), spec.name);
        let result = (|| -> mlua::Result<()> {
            let keys = lua.create_table()?;
            for (i, k) in spec.keys.iter().enumerate() {
                keys.raw_set(i + 1, lua.create_string(k)?)?;
            }
            let argv = lua.create_table()?;
            for (i, a) in spec.argv.iter().enumerate() {
                argv.raw_set(i + 1, lua.create_string(a)?)?;
            }
            if !spec.as_function {
                self.globals.raw_set("KEYS", keys.clone())?;
                self.globals.raw_set("ARGV", argv.clone())?;
            }
            let mut client = Client::new(caller.handle.clone(), false);
            client.db = caller.db;
            client.in_script = true;
            // Commands run as the caller's ACL user (script.c).
            client.user = caller.user.clone();
            client.acl_generation = caller.acl_generation;
            let state = RefCell::new(RunState {
                shared,
                dispatch,
                client,
                ks,
                resp3: false,
                read_only: spec.read_only,
                deny_oom: spec.deny_oom,
                obey: caller.master,
                repl: Target::All,
                busy: &busy,
                cluster_slot: spec
                    .keys
                    .first()
                    .filter(|_| shared.cluster.is_some())
                    .map(|k| crate::keyspace::slots::key_hash_slot(k)),
                asking: caller.asking,
                cluster_readonly: caller.cluster_readonly,
                cross_slot: spec.cross_slot,
                compat: caller.compat,
            });
            let (ok, value, resp3) = lua.scope(|scope| {
                // One Rust entry point per run for everything that needs the
                // run's state (bootstrap.lua's `impl.rt(op, raise, ...)`):
                // each scoped function is garbage once the run ends, and
                // the collector runs only every GC_EVERY scripts.
                let rt = scope.create_function(|lua, args: StackArgs| match args.op {
                    RT_CALL => match state.try_borrow_mut() {
                        Ok(mut st) => st.redis_call(lua, args.raise, args.parts),
                        Err(_) => Err(mlua::Error::runtime(
                            "redis.call/pcall can only be called inside a script invocation",
                        )),
                    },
                    RT_SETRESP | RT_SET_REPL => {
                        let n = args
                            .parts
                            .ok()
                            .and_then(|p| p.first().and_then(|n| crate::util::parse_i64(n)))
                            .unwrap_or(0);
                        if let Ok(mut st) = state.try_borrow_mut() {
                            if args.op == RT_SETRESP {
                                st.resp3 = n == 3;
                            } else {
                                // redis.set_repl: where the commands called next go.
                                st.repl = Target::from_bits(n);
                            }
                        }
                        Ok((Value::Nil, false))
                    }
                    // redis.acl_check_cmd: the caller's user, no logging.
                    _ => {
                        let Ok(st) = state.try_borrow() else {
                            return Ok((Value::Nil, false));
                        };
                        let v = match args.parts {
                            Err(msg) => Value::String(lua.create_string(format!("ERR {msg}"))?),
                            Ok(parts) => {
                                let slices: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                                let owned = OwnedArgs::from_slices(&slices);
                                let argv = owned.args();
                                match lookup_command(&argv) {
                                    None => Value::Nil,
                                    Some(cmd) => Value::Boolean(
                                        st.client
                                            .user
                                            .as_ref()
                                            .is_none_or(|u| u.check(cmd, &argv).is_ok()),
                                    ),
                                }
                            }
                        };
                        Ok((v, false))
                    }
                })?;
                self.impl_tbl.raw_set("rt", rt)?;
                let ret: MultiValue = if spec.as_function {
                    let runner = self.runner.call::<Function>((func.clone(), keys, argv))?;
                    self.xpcall.call((runner, self.errhandler.clone()))?
                } else {
                    self.xpcall.call((func.clone(), self.errhandler.clone()))?
                };
                self.impl_tbl.raw_set("rt", Value::Nil)?;
                let mut it = ret.into_iter();
                let ok = matches!(it.next(), Some(Value::Boolean(true)));
                let value = it.next().unwrap_or(Value::Nil);
                let resp3 = state.borrow().resp3;
                Ok((ok, value, resp3))
            })?;
            // Redis's luaCallFunction: an error result counts in the
            // statistics unless it is a command's error passed on.
            let passed_on = |v: &Value| match v {
                Value::Table(t) => t
                    .raw_get::<Value>("ignore_error_stats_update")
                    .is_ok_and(|f| matches!(f, Value::Boolean(true))),
                _ => false,
            };
            if ok {
                if let Value::Table(t) = &value
                    && let Ok(Value::String(e)) = t.raw_get::<Value>("err")
                {
                    failed = Some(ScriptError {
                        text: e.as_bytes().to_vec(),
                        counted: !passed_on(&value),
                    });
                }
                convert::lua_to_reply(out, &value, resp3);
            } else {
                let text = script_error(&value, spec.name);
                failed = Some(ScriptError {
                    text: text.clone(),
                    counted: !passed_on(&value),
                });
                out.error_bytes(&text);
            }
            Ok(())
        })();
        if let Err(e) = result {
            let text = format!(
                "ERR Error running script {}, {}",
                spec.name,
                e.to_string().chars().take(100).collect::<String>()
            );
            out.error(&text);
            failed = Some(ScriptError {
                text: text.into_bytes(),
                counted: true,
            });
        }
        if !spec.as_function {
            let _ = self.globals.raw_set("KEYS", Value::Nil);
            let _ = self.globals.raw_set("ARGV", Value::Nil);
        }
        self.restore_hook();
        self.collect_now_and_then();
        if self.is_shared(shared) {
            shared.scripting.update_stats(self);
        }
        failed
    }

    /// Like Redis, collects now and then between scripts (and library
    /// loads) rather than let Lua's own pacing double the heap (and
    /// used_memory_lua) first.
    pub(crate) fn collect_now_and_then(&mut self) {
        self.runs = self.runs.wrapping_add(1);
        if self.runs.is_multiple_of(GC_EVERY) {
            // Registry slots of deleted libraries and replaced scripts go
            // with the collection.
            self.lua.expire_registry_values();
            let _ = self.lua.gc_collect();
        }
    }

    /// Attaches a debugging session on `client`'s socket for the EVAL of `body`:
    /// the next script run stops at its first line.
    pub(crate) fn debug_session(
        &self,
        client: Arc<crate::clients::ClientHandle>,
        body: &[u8],
        timeout_ms: u64,
    ) -> Result<ldb::Shared, String> {
        let session = ldb::Session::start(
            client,
            body,
            timeout_ms,
            self.env.clone(),
            self.getlocal.clone(),
        )
        .map_err(|e| e.to_string())?;
        let session: ldb::Shared = Arc::new(Mutex::new(session));
        ldb::install_hook(&self.lua, self.busy.clone()).map_err(|e| e.to_string())?;
        self.lua.set_app_data(session.clone());
        Ok(session)
    }

    /// Ends a debugging session: its last logs and `<endsession>` go to
    /// the client; the normal hook is back.
    pub(crate) fn end_debug_session(&self, session: &ldb::Shared) {
        self.lua.remove_app_data::<ldb::Shared>();
        ldb::end(session);
        self.busy.hook_escalated.store(false, Relaxed);
        if let Err(e) = install_hook(&self.lua, self.busy.clone(), HOOK_EVERY) {
            tracing::error!("cannot restore the script hook: {e}");
        }
    }

    /// Puts the every-`HOOK_EVERY` hook back after a killed script.
    fn restore_hook(&self) {
        if self.busy.hook_escalated.swap(false, Relaxed)
            && let Err(e) = install_hook(&self.lua, self.busy.clone(), HOOK_EVERY)
        {
            tracing::error!("cannot restore the script hook: {e}");
        }
    }
}

/// Instructions between two looks at the kill flag while a script runs
/// normally: often enough for SCRIPT KILL to act within milliseconds,
/// rarely enough to cost nothing measurable.
const HOOK_EVERY: u32 = 10_000;
/// Scripts between two full collections of the Lua heap (Redis steps its
/// collector every 50 scripts).
const GC_EVERY: u32 = 20;

/// Installs the instruction-count hook through which SCRIPT KILL, shutdown
/// and FUNCTION LOAD's timeout reach a running script as errors.
///
/// Once a kill is seen the hook re-installs itself to fire on every
/// instruction, as Redis's `luaMaskCountHook` switches to a line hook: the
/// error it raises can be caught by `pcall`, but the very next instruction
/// outside the `pcall` raises again, so no loop of `pcall`s (or `xpcall`
/// with a looping handler) outlives the kill. [`Engine::run`] puts the
/// normal hook back when the script has ended.
fn install_hook(lua: &Lua, busy: Arc<Busy>, every: u32) -> mlua::Result<()> {
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(every),
        move |lua, _| {
            if busy.kill.load(Relaxed) {
                if every != 1 {
                    busy.hook_escalated.store(true, Relaxed);
                    install_hook(lua, busy.clone(), 1)?;
                }
                Err(mlua::Error::RuntimeError(KILLED.into()))
            } else if busy.load_timed_out() {
                Err(mlua::Error::RuntimeError(functions::LOAD_TIMEOUT.into()))
            } else {
                busy.note_if_slow();
                Ok(mlua::VmState::Continue)
            }
        },
    )
}

/// Registry key of the table of Rust entry points.
const IMPL_KEY: &str = "__redis_impl";

/// Trampoline modes (`impl.cwrap(f, mode)`).
const TRAMP_API: i64 = 0;
const TRAMP_LIB: i64 = 1;

/// A C function standing in front of a Lua or Rust function, because only
/// a C function keeps the caller's frame on a tail call (`return
/// redis.call(...)`) — which the error handler needs for `on
/// @user_script:LINE` — and only C can raise an arbitrary value. Mode 0
/// calls its target and lets errors through; mode 1 turns a Rust error into
/// a string with the caller's position, as `luaL_error` does in Redis's C
/// libraries; modes 2 and 3 are `redis.call`/`redis.pcall` (the target
/// returns the reply and whether to raise it).
unsafe extern "C-unwind" fn trampoline(l: *mut mlua::ffi::lua_State) -> std::ffi::c_int {
    use mlua::ffi::*;
    // SAFETY: called by Lua with the two upvalues cwrap gave it; no Rust
    // value with a destructor lives across the calls that may unwind.
    unsafe {
        let mode = lua_tointeger(l, lua_upvalueindex(2)) as i64;
        let n = lua_gettop(l);
        lua_pushvalue(l, lua_upvalueindex(1));
        lua_insert(l, 1);
        if mode == TRAMP_API {
            lua_call(l, n, LUA_MULTRET);
            return lua_gettop(l);
        }
        if mode == TRAMP_LIB {
            if lua_pcall(l, n, LUA_MULTRET, 0) != 0 {
                lua_getfield(l, LUA_REGISTRYINDEX, c"__redis_impl".as_ptr());
                lua_getfield(l, -1, c"errstr".as_ptr());
                lua_remove(l, -2);
                lua_insert(l, -2);
                lua_call(l, 1, 1);
                luaL_where(l, 1);
                lua_insert(l, -2);
                lua_concat(l, 2);
                lua_error(l);
            }
            return lua_gettop(l);
        }
        // redis.call (2) / redis.pcall (3): the target is impl.call.
        lua_pushboolean(l, (mode == 2) as std::ffi::c_int);
        lua_insert(l, 2);
        lua_call(l, n + 1, 2);
        if lua_toboolean(l, -1) != 0 {
            lua_pop(l, 1);
            lua_error(l);
        }
        lua_pop(l, 1);
        1
    }
}

/// The error reply of a failed script: `msg script: NAME, on SOURCE:LINE.`
fn script_error(err: &Value, name: &str) -> Vec<u8> {
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".into(),
        };
        let msg: String = msg.chars().take(100).collect();
        return format!("ERR Error running script {name}, {msg}")
            .trim_end_matches(['\r', '\n'])
            .as_bytes()
            .to_vec();
    };
    let as_text = |v: Value| -> Option<Vec<u8>> {
        match v {
            Value::String(s) => Some(s.as_bytes().to_vec()),
            Value::Integer(i) => Some(i.to_string().into_bytes()),
            Value::Number(n) => Some(lua_number_string(n).into_bytes()),
            _ => None,
        }
    };
    let msg = as_text(t.raw_get("err").unwrap_or(Value::Nil)).unwrap_or_default();
    let mut out = msg;
    if let (Some(source), Some(line)) = (
        as_text(t.raw_get("source").unwrap_or(Value::Nil)),
        as_text(t.raw_get("line").unwrap_or(Value::Nil)),
    ) {
        out.extend_from_slice(b" script: ");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b", on ");
        out.extend_from_slice(&source);
        out.push(b':');
        out.extend_from_slice(&line);
        out.push(b'.');
    }
    out
}

/// The text of an error value that crossed from Rust into Lua.
fn error_message(v: &Value) -> String {
    let mut e = match v {
        Value::Error(e) => &**e,
        Value::String(s) => return s.to_string_lossy(),
        other => return format!("{other:?}"),
    };
    loop {
        match e {
            mlua::Error::CallbackError { cause, .. } => e = cause,
            mlua::Error::WithContext { cause, .. } => e = cause,
            mlua::Error::RuntimeError(m) => return m.clone(),
            other => return other.to_string(),
        }
    }
}

/// Lua's `%.14g` for numbers turned into strings.
fn lua_number_string(n: f64) -> String {
    convert::fmt_g(n, 14)
}

fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

/// `REDIS_VERSION_NUM`: 0x00MMmmpp.
fn redis_version_num() -> i64 {
    let mut parts = crate::version::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// Reads a `#!lua` first line: (no-writes, where the code starts). The
/// newline stays with the code so line numbers match the script.
fn parse_shebang(body: &[u8]) -> Result<(bool, usize), String> {
    if !body.starts_with(b"#!") {
        return Ok((false, 0));
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut no_writes = false;
    for p in parts {
        if let Some(list) = p.strip_prefix("flags=") {
            for f in list.split(',').filter(|f| !f.is_empty()) {
                match f {
                    "no-writes" => no_writes = true,
                    "allow-oom" | "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                    _ => return Err(format!("ERR Unexpected flag in script shebang: {f}")),
                }
            }
        } else {
            return Err(format!("ERR Unknown lua shebang option: {p}"));
        }
    }
    Ok((no_writes, end))
}

/// A script's command arguments as bytes (numbers as Redis prints them),
/// or Redis's error for any other type.
fn script_args<'a>(
    args: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<Vec<u8>>, &'static str> {
    args.into_iter()
        .map(|a| match a {
            Value::String(s) => Ok(s.as_bytes().to_vec()),
            Value::Integer(i) => Ok(convert::fmt_g17(*i as f64).into_bytes()),
            Value::Number(n) => Ok(convert::fmt_g17(*n).into_bytes()),
            _ => Err(ARGS_NOT_STRINGS),
        })
        .collect()
}

const ARGS_NOT_STRINGS: &str = "Lua redis lib command arguments must be strings or integers";

/// bootstrap.lua's `impl.rt(op, raise, ...)`: `redis.call`/`redis.pcall`
/// (`raise` on an error), `redis.setresp`, `redis.set_repl` and
/// `redis.acl_check_cmd`.
const RT_CALL: i64 = 0;
const RT_SETRESP: i64 = 1;
const RT_SET_REPL: i64 = 2;

/// The arguments of `impl.rt`: the operation, the raise flag, then the
/// command's arguments as bytes, read straight off the Lua stack. mlua's
/// own conversion would hold each one in its reference stack, which Lua
/// 5.1 limits to 8,000 slots as it limits a C function's stack, with
/// references of its own already there: Redis takes up to 7,999
/// (`redis.call(cmd, unpack(t))`, "Script check unpack with massive
/// arguments").
struct StackArgs {
    op: i64,
    raise: bool,
    parts: Result<Vec<Vec<u8>>, &'static str>,
}

impl mlua::FromLuaMulti for StackArgs {
    fn from_lua_multi(values: MultiValue, _: &Lua) -> mlua::Result<Self> {
        let mut values = values.iter();
        let op = match values.next() {
            Some(Value::Integer(i)) => *i,
            Some(Value::Number(n)) => *n as i64,
            _ => RT_CALL,
        };
        // Lua's truth, as `lua_toboolean` below.
        let raise = !matches!(
            values.next(),
            None | Some(Value::Nil | Value::Boolean(false))
        );
        Ok(StackArgs {
            op,
            raise,
            parts: script_args(values),
        })
    }

    // mlua's hidden hook for a callback's arguments, kept to in step with
    // its pinned version (Cargo.lock): the values stay where Lua put them.
    unsafe fn from_stack_multi(nvals: i32, lua: &mlua::state::RawLua) -> mlua::Result<Self> {
        use mlua::ffi;
        let state = lua.state();
        // SAFETY (every block below): the callback's `nvals` arguments are
        // the top of `state`'s stack; they are read in place, then popped.
        let (op, raise) = unsafe {
            (
                if nvals > 0 {
                    ffi::lua_tonumber(state, -nvals) as i64
                } else {
                    RT_CALL
                },
                nvals > 1 && ffi::lua_toboolean(state, 1 - nvals) != 0,
            )
        };
        let from = (2 - nvals).min(0);
        let mut parts = Vec::with_capacity((-from) as usize);
        let mut bad = false;
        for idx in from..0 {
            // `lua_tolstring` is only called on strings (it would turn a
            // number into a string in place).
            let part = unsafe {
                match ffi::lua_type(state, idx) {
                    ffi::LUA_TSTRING => {
                        let mut len = 0;
                        let p = ffi::lua_tolstring(state, idx, &mut len);
                        std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec()
                    }
                    ffi::LUA_TNUMBER => {
                        convert::fmt_g17(ffi::lua_tonumber(state, idx)).into_bytes()
                    }
                    _ => {
                        bad = true;
                        break;
                    }
                }
            };
            parts.push(part);
        }
        // Off the stack once read: the reply is pushed where they were,
        // and a callback may only push beyond 8,000 slots by asking Lua,
        // which refuses (Redis's C function replies into the slots Lua
        // keeps free above its arguments).
        unsafe { ffi::lua_pop(state, nvals) };
        Ok(StackArgs {
            op,
            raise,
            parts: if bad {
                Err(ARGS_NOT_STRINGS)
            } else {
                Ok(parts)
            },
        })
    }
}

/// server.c `lookupCommand` (not strict): a container's subcommand when
/// one is named, else the command itself.
fn lookup_command(args: &crate::commands::Args<'_>) -> Option<&'static crate::commands::Command> {
    let cmd = commands::lookup(args.get(0))?;
    if !cmd.subcommands.is_empty() && args.len() >= 2 {
        return commands::lookup_sub(cmd, args.get(1));
    }
    Some(cmd)
}

/// Whether a script's `#!lua` line declares `flag`.
fn shebang_has_flag(body: &[u8], flag: &str) -> bool {
    if !body.starts_with(b"#!") {
        return false;
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    String::from_utf8_lossy(&body[..end])
        .split(' ')
        .filter_map(|p| p.strip_prefix("flags="))
        .any(|list| list.split(',').any(|f| f == flag))
}

/// Redis's `evalGetCommandFlags` for deny-OOM: a script with a `#!lua`
/// line is deny-OOM unless it declares `allow-oom` or `no-writes`.
pub(crate) fn script_denies_oom(body: &[u8]) -> bool {
    body.starts_with(b"#!")
        && parse_shebang(body).is_ok()
        && !shebang_has_flag(body, "allow-oom")
        && !shebang_has_flag(body, "no-writes")
}

/// What `redis.call` needs while one script runs.
struct RunState<'a, 'k> {
    shared: &'a Arc<Services>,
    dispatch: &'a dyn Dispatch<Client>,
    client: Client,
    ks: &'a mut Keyspace<'k>,
    resp3: bool,
    read_only: bool,
    deny_oom: bool,
    /// The script was started by this server's primary (Redis's
    /// `mustObeyClient`): a read-only replica does not refuse its writes.
    obey: bool,
    /// `redis.set_repl`'s choice for the commands it calls next.
    repl: Target,
    busy: &'a Busy,
    /// Cluster mode: the slot the script's keys are in so far (Redis's
    /// `original_c->slot`: its declared keys', else its first call's).
    cluster_slot: Option<u16>,
    /// The caller's ASKING and READONLY (script.c copies them to the
    /// script's client).
    asking: bool,
    cluster_readonly: bool,
    cross_slot: bool,
    /// A standalone server's check of the calls for what cluster mode
    /// would refuse, from where the caller's command left it.
    compat: CompatCheck,
}

impl RunState<'_, '_> {
    /// Runs one command; returns its reply as a Lua value and whether the
    /// caller must raise it (`redis.call` on an error).
    fn redis_call(
        &mut self,
        lua: &Lua,
        raise: bool,
        args: Result<Vec<Vec<u8>>, &'static str>,
    ) -> mlua::Result<(Value, bool)> {
        if args.as_ref().is_ok_and(Vec::is_empty) {
            let e = convert::error_table(
                lua,
                b"Please specify at least one argument for this redis lib call",
                false,
            )?;
            return Ok((e, raise));
        }
        let parts = match args {
            Ok(parts) => parts,
            Err(msg) => {
                let e = convert::error_table(lua, msg.as_bytes(), false)?;
                return Ok((e, raise));
            }
        };
        let debugging = ldb::logging(lua);
        if let Some(d) = &debugging {
            ldb::log_command(d, &parts);
        }
        let slices: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let owned = OwnedArgs::from_slices(&slices);
        let argv = owned.args();
        let deny = |msg: &[u8]| -> mlua::Result<(Value, bool)> {
            if let Some(d) = &debugging {
                ldb::log_error(d, msg);
            }
            Ok((convert::error_table(lua, msg, true)?, raise))
        };
        let wrote = self.busy.wrote.load(Relaxed);
        let cmd = match verify_from_script(
            self.shared,
            &mut self.client,
            &argv,
            self.read_only,
            wrote,
            self.deny_oom,
            self.obey,
        ) {
            Ok(cmd) => cmd,
            Err(msg) => {
                // Counted here, as script.c's `scriptCall` counts a refused
                // call; the script's own error then passes it on uncounted.
                self.shared.count_error(msg.as_bytes());
                return deny(format!("-{msg}").as_bytes());
            }
        };
        if cmd.has(flags::WRITE) {
            self.busy.wrote.store(true, Relaxed);
        }
        if let Some(msg) = self.cluster_refusal(cmd, &argv) {
            commands::CallStats::of(cmd).rejected.fetch_add(1, Relaxed);
            self.shared.count_error(msg.as_bytes());
            return deny(format!("-{msg}").as_bytes());
        }
        self.check_compatibility(cmd, &argv);
        // The reply as values: no RESP encoding to parse back.
        let mut out = Reply::frames(self.resp3);
        // Nothing blocks in a script (`Client::can_block`), nor closes.
        self.ks.prop.script_target = self.repl;
        let _ = self
            .dispatch
            .call(&mut self.client, &mut out, self.ks, cmd, argv, None);
        self.ks.prop.script_target = Target::All;
        self.shared
            .stats
            .commands_processed
            .fetch_add(std::mem::take(&mut self.client.commands), Relaxed);
        let is_err = out.is_error();
        if let Some(d) = &debugging {
            ldb::log_reply(d, &out);
        }
        let v = convert::reply_to_lua(lua, &out)?;
        Ok((v, raise && is_err))
    }
}

/// Resolves and verifies a command a script runs with `redis.call`, with
impl RunState<'_, '_> {
    /// script.c `scriptVerifyClusterState`: in cluster mode a script's
    /// command must use keys this node serves, all in one slot.
    fn cluster_refusal(&mut self, cmd: &'static Command, argv: &Args<'_>) -> Option<&'static str> {
        let cluster = self.shared.cluster.as_ref()?;
        if self.obey {
            return None;
        }
        let asker = crate::cluster::route::Asker {
            asking: self.asking,
            readonly: self.cluster_readonly,
            write: cmd.has(flags::WRITE),
            // A script's client has no connection (Redis: `c->conn` NULL):
            // the cluster's own kind (`shouldReturnTlsInfo`'s default).
            plaintext: self.shared.config.tls_setting("tls-cluster") != "yes",
        };
        let ks = &mut *self.ks;
        let now = ks.now_ms;
        let mut exists = |key: &[u8]| {
            ks.peek_raw(key)
                .is_some_and(|e| e.expire_at == 0 || e.expire_at > now)
        };
        match cluster.route(
            &self.shared.config,
            cmd,
            &[(cmd, *argv)],
            asker,
            &mut exists,
        ) {
            Err((redirect, _)) => Some(redirect.script_text()),
            Ok(Some(_)) if self.cross_slot => None,
            Ok(Some(slot)) => match self.cluster_slot {
                None => {
                    self.cluster_slot = Some(slot);
                    None
                }
                Some(s) if s != slot => {
                    Some("ERR Script attempted to access keys that do not hash to the same slot")
                }
                Some(_) => None,
            },
            Ok(None) => None,
        }
    }
}

impl RunState<'_, '_> {
    /// Redis 8.0's `scriptCheckClusterCompatibility` on a standalone
    /// server: a call whose keys span slots, or (unless the script may
    /// cross slots) whose slot differs from the script's so far, counts
    /// once in `cluster_incompatible_ops`, and the run checks no more.
    fn check_compatibility(&mut self, cmd: &'static Command, argv: &Args<'_>) {
        let CompatCheck::Slot(so_far) = self.compat else {
            return;
        };
        let (cross, slot) = match crate::cluster::route::keys_slot(cmd, argv) {
            Ok(slot) => (false, slot),
            Err(()) => (true, None),
        };
        let differs = match (so_far, slot) {
            _ if self.cross_slot => false,
            (Some(a), Some(b)) => a != b,
            _ => false,
        };
        if cross || differs {
            self.shared
                .stats
                .cluster_incompatible_ops
                .fetch_add(1, Relaxed);
            self.compat = CompatCheck::Off;
        } else if so_far.is_none() && !self.cross_slot {
            self.compat = CompatCheck::Slot(slot);
        }
    }
}

/// Redis 7.0's texts (`scriptCall`): the checks differ from a client's (no
/// auth or MULTI; no scripts or blocking from scripts; no writes from
/// read-only scripts), the path after them is the same as a client's
/// command (the [`Dispatch`] handle).
///
/// A refusal counts as a rejected call of the command, as Redis counts it.
/// `wrote`: the script already wrote, so server state (missing replicas)
/// may no longer fail it.
fn verify_from_script(
    shared: &Services,
    client: &mut Client,
    args: &Args<'_>,
    read_only: bool,
    wrote: bool,
    deny_oom: bool,
    obey: bool,
) -> Result<&'static Command, Cow<'static, str>> {
    let mut cmd = commands::lookup(args.get(0)).ok_or(Cow::Borrowed(
        "ERR Unknown Redis command called from script",
    ))?;
    if !cmd.subcommands.is_empty() && args.len() >= 2 {
        cmd = commands::lookup_sub(cmd, args.get(1)).ok_or(Cow::Borrowed(
            "ERR Unknown Redis command called from script",
        ))?;
    }
    let mut refusal = script_refusal(shared, client, cmd, args, read_only, wrote, obey);
    if refusal.is_none()
        && deny_oom
        && !wrote
        && cmd.has(flags::DENYOOM)
        && shared.config.maxmemory() != 0
    {
        refusal = Some(commands::OOM.into());
    }
    if let Some(msg) = refusal {
        commands::CallStats::of(cmd).rejected.fetch_add(1, Relaxed);
        return Err(msg);
    }
    Ok(cmd)
}

fn script_refusal(
    shared: &Services,
    client: &mut Client,
    cmd: &'static Command,
    args: &Args<'_>,
    read_only: bool,
    wrote: bool,
    obey: bool,
) -> Option<Cow<'static, str>> {
    let argc = args.len() as i32;
    if (cmd.arity > 0 && cmd.arity != argc) || argc < -cmd.arity {
        return Some("ERR Wrong number of args calling Redis command from script".into());
    }
    if cmd.has(flags::NOSCRIPT) && !shared.scripting.allow_noscript.load(Relaxed) {
        return Some("ERR This Redis command is not allowed from script".into());
    }
    // script.c `scriptVerifyAllowStale`.
    if !cmd.has(flags::STALE) && commands::scripting::running_stale(shared) {
        return Some("ERR Can not execute the command on a stale replica".into());
    }
    // script.c `scriptVerifyACL`, with acl.c `getAclErrorMessage`'s texts.
    match commands::acl::acl_check(shared, client, cmd, args, Context::Lua) {
        Ok(()) => {}
        Err(Some(denied)) => {
            let user = client.user.as_ref().map_or(&b"default"[..], |u| u.name());
            let msg = denied.message(user, Catalog::get().fullname(cmd), b"", false);
            return Some(
                format!(
                    "ERR ACL failure in script: {}",
                    String::from_utf8_lossy(&msg)
                )
                .into(),
            );
        }
        Err(None) => {
            return Some(
                "ERR The user executing the script lacking the permissions for the command".into(),
            );
        }
    }
    // May-replicate commands (PUBLISH, …) count as writes in scripts, so
    // that read-only scripts may run during CLIENT PAUSE WRITE.
    if read_only && (cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE)) {
        return Some("ERR Write commands are not allowed from read-only scripts.".into());
    }
    // script.c `scriptVerifyWriteCommandAllow`: once the script wrote,
    // the server's state can no longer fail it halfway.
    if cmd.has(flags::WRITE) && !wrote {
        if !obey && shared.replication.is_replica() && shared.config.replica_read_only() {
            return Some("READONLY You can't write against a read only replica.".into());
        }
        if crate::persistence::writes_denied(&shared.persistence, &shared.config) {
            return Some(crate::persistence::MISCONF.into());
        }
        if shared.replication.lacks_good_replicas(&shared.config) {
            return Some(commands::replication::NOREPLICAS.into());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs() {
        assert_eq!(parse_shebang(b"return 1"), Ok((false, 0)));
        assert_eq!(parse_shebang(b"#!lua\nreturn 1"), Ok((false, 5)));
        assert_eq!(
            parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1"),
            Ok((true, 31))
        );
        assert!(parse_shebang(b"#!lua flags=foo\n").is_err());
        assert!(parse_shebang(b"#!luax\n").is_err());
    }

    #[test]
    fn version_num() {
        assert_eq!(redis_version_num(), 0x08_00_02);
    }

    #[test]
    fn sha1() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }
}
