//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT
//! LOAD/EXISTS/FLUSH/KILL/HELP. The engine (sandbox, conversions, cache,
//! busy state) is in [`super::lua`]; functions are in `functions.rs`.
//!
//! EVAL-family commands use `Keys::All`: a script may touch keys it did not
//! declare (Redis allows it outside cluster mode), so it holds every shard,
//! which makes it atomic and, locking in the usual order, deadlock-free.

use super::flags::*;
use super::lua::{Engine, RunSpec, ldb};
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::util::eq_ic;

const G: &str = "scripting";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new(
        "eval",
        -3,
        NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE,
        Keys::Script { count_at: 2 },
        &(eval as Handler),
    )
    .doc(
        G,
        "2.6.0",
        "Depends on the script that is executed.",
        "Executes a server-side Lua script.",
    )
    .syntax("script numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "evalsha",
        -3,
        NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE,
        Keys::Script { count_at: 2 },
        &(evalsha as Handler),
    )
    .doc(
        G,
        "2.6.0",
        "Depends on the script that is executed.",
        "Executes a server-side Lua script by SHA1 digest.",
    )
    .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "eval_ro",
        -3,
        NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY,
        Keys::Script { count_at: 2 },
        &(eval_ro as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "Depends on the script that is executed.",
        "Executes a read-only server-side Lua script.",
    )
    .syntax("script numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "evalsha_ro",
        -3,
        NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY,
        Keys::Script { count_at: 2 },
        &(evalsha_ro as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "Depends on the script that is executed.",
        "Executes a read-only server-side Lua script by SHA1 digest.",
    )
    .syntax("sha1 numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "script",
        -2,
        0,
        Keys::None,
        &(super::server::container as Handler),
    )
    .doc(
        G,
        "2.6.0",
        "Depends on subcommand.",
        "A container for Lua scripts management commands.",
    )
    .subcommands(SCRIPT),
];

static SCRIPT: &[Command] = &[
    Command::new("load", 3, NOSCRIPT | STALE, Keys::None, &(script_load as Handler))
        .doc(G, "2.6.0", "O(N) with N being the length in bytes of the script body.", "Loads a server-side Lua script to the script cache.")
        .syntax("script"),
    Command::new("exists", -3, NOSCRIPT, Keys::None, &(script_exists as Handler))
        .doc(G, "2.6.0", "O(N) with N being the number of scripts to check (so checking a single script is an O(1) operation).", "Determines whether server-side Lua scripts exist in the script cache.")
        .syntax("sha1 [sha1 ...]"),
    Command::new("flush", -2, NOSCRIPT, Keys::None, &(script_flush as Handler))
        .doc(G, "2.6.0", "O(N) with N being the number of scripts in cache", "Removes all server-side Lua scripts from the script cache.")
        .syntax("[ASYNC | SYNC]"),
    Command::new("kill", 2, NOSCRIPT | ALLOW_BUSY, Keys::None, &(script_kill as Handler))
        .doc(G, "2.6.0", "O(1)", "Terminates a server-side Lua script during execution."),
    Command::new("debug", 3, NOSCRIPT, Keys::None, &(script_debug as Handler))
        .doc(G, "3.2.0", "O(1)", "Sets the debug mode of server-side Lua scripts.")
        .syntax("<YES | SYNC | NO>"),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(script_help as Handler))
        .doc(G, "5.0.0", "O(1)", "Returns helpful text about the different subcommands."),
];

fn eval(ctx: &mut Ctx) -> CmdResult {
    eval_generic(ctx, false, false)
}

fn evalsha(ctx: &mut Ctx) -> CmdResult {
    eval_generic(ctx, true, false)
}

fn eval_ro(ctx: &mut Ctx) -> CmdResult {
    eval_generic(ctx, false, true)
}

fn evalsha_ro(ctx: &mut Ctx) -> CmdResult {
    eval_generic(ctx, true, true)
}

/// Checks `numkeys` at index 2 as Redis does; returns it.
fn numkeys(ctx: &Ctx) -> Result<usize, Error> {
    let n = int_arg(ctx.arg(2))?;
    if n > (ctx.argc() - 3) as i64 {
        return Err(Error::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if n < 0 {
        return Err(Error::Static("ERR Number of keys can't be negative"));
    }
    Ok(n as usize)
}

fn eval_generic(ctx: &mut Ctx, by_sha: bool, ro: bool) -> CmdResult {
    if ctx.client.ldb == ldb::OFF {
        return eval_plain(ctx, by_sha, ro);
    }
    if by_sha {
        if ctx.arg(1).len() != 40 {
            return Err(noscript());
        }
        return Err(Error::Static(
            "ERR Please use EVAL instead of EVALSHA for debugging",
        ));
    }
    eval_debugging(ctx, ro)
}

/// Redis's `evalGenericCommandWithDebugging`: the script runs with the
/// debugger attached to this connection, which closes after the reply.
///
/// SYNC runs it as any script (it holds the server; its changes stay).
/// YES is Redis's forked session without a fork: the execution layer runs
/// this on a thread of its own over a private copy of the data
/// (`Store::private_copy`), and here it gets a Lua state of its own, so
/// other clients, and their scripts, are served meanwhile and the
/// session's changes are dropped with the copy.
fn eval_debugging(ctx: &mut Ctx, ro: bool) -> CmdResult {
    if ctx.client.handle.tls {
        ctx.client.ldb = ldb::OFF;
        return Err(Error::Static(
            "ERR The Lua debugger is not available on TLS connections",
        ));
    }
    let shared = ctx.shared.clone();
    let forked = ctx.client.ldb == ldb::YES;
    let mut private = if forked {
        Some(Engine::private().map_err(Error::Owned)?)
    } else {
        None
    };
    let client = ctx.client.handle.clone();
    let body = ctx.arg(1).to_vec();
    let start = |engine: &Engine| {
        engine
            .debug_session(client.clone(), &body, shared.config.busy_reply_threshold())
            .map_err(|e| Error::Owned(format!("ERR can't run EVAL in debugging mode: {e}")))
    };
    let session = match &private {
        Some(engine) => start(engine)?,
        None => start(&*shared.scripting.engine().map_err(Error::Owned)?)?,
    };
    if forked {
        tracing::warn!("Redis forked for debugging eval");
    } else {
        tracing::warn!("Redis synchronous debugging eval session started");
    }
    let result = match &mut private {
        Some(engine) => numkeys(ctx).and_then(|n| run_script(ctx, engine, n, false, ro)),
        None => eval_plain(ctx, false, ro),
    };
    match &private {
        Some(engine) => engine.end_debug_session(&session),
        None => shared
            .scripting
            .engine()
            .map_err(Error::Owned)?
            .end_debug_session(&session),
    }
    if forked {
        tracing::warn!("Lua debugging session child exiting");
    } else {
        tracing::warn!("Redis synchronous debugging eval session ended");
    }
    if let Err(e) = result {
        ctx.out.error_bytes(e.bytes());
    }
    Ok(super::Outcome::Close)
}

fn eval_plain(ctx: &mut Ctx, by_sha: bool, ro: bool) -> CmdResult {
    let nkeys = numkeys(ctx)?;
    let shared = ctx.shared.clone();
    // Busy from here (other clients' engine users wait rather than block);
    // declared before the engine guard so it ends after it.
    let busy = shared.scripting.busy.clone();
    let _running = busy.begin(ctx.client.handle.id, false);
    let mut engine = shared.scripting.engine().map_err(Error::Owned)?;
    run_script(ctx, &mut engine, nkeys, by_sha, ro)
}

/// Loads (EVAL) or finds (EVALSHA) the script in `engine`, checks its
/// flags and runs it.
fn run_script(
    ctx: &mut Ctx,
    engine: &mut Engine,
    nkeys: usize,
    by_sha: bool,
    ro: bool,
) -> CmdResult {
    let shared = ctx.shared.clone();
    let sha = if by_sha {
        let given = ctx.arg(1);
        if given.len() != 40 {
            return Err(noscript());
        }
        String::from_utf8_lossy(given).to_ascii_lowercase()
    } else {
        let sha = engine.load_script(ctx.arg(1), true).map_err(Error::Owned)?;
        if engine.is_shared(&shared) {
            shared.scripting.update_stats(engine);
        }
        sha
    };
    let Some(script) = engine.scripts.get(&sha) else {
        return Err(noscript());
    };
    // Scripts that declare flags are checked before they run, as Redis's
    // `scriptPrepareForRun` does.
    if script.shebang {
        if script.no_cluster {
            if shared.cluster.is_some() {
                return Err(Error::Static(NO_CLUSTER));
            }
            // What cluster mode would refuse (Redis 8.0 counts it whatever
            // the sample ratio).
            shared
                .stats
                .cluster_incompatible_ops
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if running_stale(&shared) && !script.allow_stale {
            return Err(Error::Static(MASTERDOWN_FLAG));
        }
        if !script.no_writes {
            if read_only_replica(ctx) {
                return Err(Error::Static(READONLY_FLAG));
            }
            if ro {
                return Err(Error::Static(
                    "ERR Can not execute a script with write flag using *_ro command.",
                ));
            }
            if shared.replication.lacks_good_replicas(&shared.config) {
                return Err(Error::Refused(super::replication::NOREPLICAS));
            }
            if ctx.client.oom && !script.allow_oom {
                return Err(Error::Static(OOM_FLAG));
            }
        }
    } else if running_stale(&shared) {
        return Err(Error::Static(MASTERDOWN));
    }
    let deny_oom = !script.shebang && ctx.client.oom;
    let func = engine.registered(&script.func).map_err(Error::Owned)?;
    let read_only = ro || script.no_writes;
    let args = ctx.args;
    let spec = RunSpec {
        name: &sha,
        read_only,
        keys: (3..3 + nkeys).map(|i| args.get(i)).collect(),
        argv: (3 + nkeys..args.len()).map(|i| args.get(i)).collect(),
        as_function: false,
        deny_oom,
        cross_slot: script.cross_slot,
    };
    ctx.script_error = engine.run(
        &shared,
        ctx.dispatch,
        ctx.client,
        ctx.ks,
        ctx.out,
        &func,
        spec,
    );
    engine.touch_script(&sha);
    Ok(Done)
}

/// A script with flags but not `allow-oom`, started over `maxmemory`
/// (Redis's `scriptPrepareForRun`).
pub(crate) const OOM_FLAG: &str =
    "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'";

/// A script with flags but not `allow-stale`, started on a replica whose
/// link is down with `replica-serve-stale-data no`.
/// A script flagged `no-cluster` on a cluster node (`scriptPrepareForRun`).
pub(crate) const NO_CLUSTER: &str = "ERR Can not run script on cluster, 'no-cluster' flag is set.";

pub(crate) const MASTERDOWN_FLAG: &str = "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script.";
/// A script without flags started in that state.
const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
/// A script with flags but not `no-writes`, started on a read-only replica.
pub(crate) const READONLY_FLAG: &str =
    "READONLY Can not run script with write flag on readonly replica";

/// Redis's `running_stale` in `scriptPrepareForRun`: a replica whose link
/// is down, with `replica-serve-stale-data no`.
pub(crate) fn running_stale(shared: &super::Services) -> bool {
    shared.replication.is_replica()
        && !shared.config.replica_serve_stale_data()
        && shared.replication.link_state() != crate::replication::LinkState::Connected
}

/// A read-only replica, for a caller that is not its primary (Redis's
/// `mustObeyClient`).
pub(crate) fn read_only_replica(ctx: &Ctx) -> bool {
    ctx.shared.replication.is_replica()
        && ctx.shared.config.replica_read_only()
        && !ctx.client.master
}

fn noscript() -> Error {
    Error::Static("NOSCRIPT No matching script. Please use EVAL.")
}

fn script_load(ctx: &mut Ctx) -> CmdResult {
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    let sha = engine
        .load_script(ctx.arg(2), false)
        .map_err(Error::Owned)?;
    shared.scripting.update_stats(&mut engine);
    ctx.out.bulk(sha.as_bytes());
    Ok(Done)
}

fn script_exists(ctx: &mut Ctx) -> CmdResult {
    let shared = ctx.shared.clone();
    let engine = shared.scripting.engine_for(ctx.client)?;
    ctx.out.array(ctx.argc() - 2);
    for i in 2..ctx.argc() {
        let sha = String::from_utf8_lossy(ctx.arg(i)).to_ascii_lowercase();
        ctx.out.int(engine.scripts.contains_key(&sha) as i64);
    }
    Ok(Done)
}

fn script_flush(ctx: &mut Ctx) -> CmdResult {
    let is_async = match ctx.argc() {
        2 => ctx.shared.config.lazyfree_lazy_user_flush(),
        3 if eq_ic(ctx.arg(2), "SYNC") => false,
        3 if eq_ic(ctx.arg(2), "ASYNC") => true,
        _ => {
            return Err(Error::Static(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ));
        }
    };
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    // Redis's freeLuaScriptsAsync: a large cache goes to the lazyfree
    // thread, counting its scripts.
    let scripts = engine.scripts.len();
    if is_async && scripts > crate::keyspace::lazyfree::THRESHOLD {
        let taken = engine.take_scripts();
        shared.lazyfree.free(Box::new(taken), scripts);
    }
    engine.flush_scripts();
    shared.scripting.update_stats(&mut engine);
    ctx.out.ok();
    Ok(Done)
}

/// SCRIPT DEBUG YES|SYNC|NO (`scriptCommand`'s DEBUG branch).
fn script_debug(ctx: &mut Ctx) -> CmdResult {
    // Replies of this batch (or EXEC's header) not yet written: the
    // session's own output could not follow them in order.
    if !ctx.out.is_empty() {
        return Err(Error::Static(
            "ERR SCRIPT DEBUG must be called outside a pipeline",
        ));
    }
    let mode = ctx.arg(2);
    ctx.client.ldb = if eq_ic(mode, "no") {
        ldb::OFF
    } else if eq_ic(mode, "yes") {
        ldb::YES
    } else if eq_ic(mode, "sync") {
        ldb::SYNC
    } else {
        return Err(Error::Static("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    ctx.out.ok();
    Ok(Done)
}

fn script_kill(ctx: &mut Ctx) -> CmdResult {
    ctx.shared
        .scripting
        .busy
        .kill(false)
        .map_err(Error::Static)?;
    ctx.out.ok();
    Ok(Done)
}

pub(crate) fn help_lines(ctx: &mut Ctx, lines: &[&str]) {
    ctx.out.array(lines.len());
    for l in lines {
        ctx.out.simple(l);
    }
}

fn script_help(ctx: &mut Ctx) -> CmdResult {
    help_lines(
        ctx,
        &[
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DEBUG (YES|SYNC|NO)",
            "    Set the debug mode for subsequent scripts executed.",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Print this help.",
        ],
    );
    Ok(Done)
}
