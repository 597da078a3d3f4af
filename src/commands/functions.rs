//! Function commands (Redis 7.0): FCALL, FCALL_RO and FUNCTION
//! LOAD/DELETE/FLUSH/LIST/STATS/KILL/DUMP/RESTORE/HELP. Libraries live in the
//! scripting engine (`super::lua::functions`).
//!
//! FCALL is wired exactly like EVAL (`Keys::All`, run on the script runner
//! thread, see `scripting.rs`): a function may touch any key, so it holds
//! every shard. FUNCTION STATS and KILL must answer while a function runs,
//! so they never take the engine: they read the busy state and counters.
//!
//! FUNCTION DUMP/RESTORE speak Redis 7.0's payload format
//! (`super::lua::dump`), so libraries move between zwindow and
//! redis-server in both directions.

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::lua::RunSpec;
use super::lua::dump;
use super::lua::functions::{FLAG_ALLOW_OOM, FLAG_ALLOW_STALE, FLAG_NAMES, FLAG_NO_WRITES};
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::util::{eq_ic, glob_match, parse_i64};

const G: &str = "scripting";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new(
        "fcall",
        -3,
        NOSCRIPT | SKIP_MONITOR | MAY_REPLICATE | NO_MANDATORY_KEYS | STALE,
        Keys::Script { count_at: 2 },
        &(fcall as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "Depends on the function that is executed.",
        "Invoke a function",
    )
    .syntax("function numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "fcall_ro",
        -3,
        NOSCRIPT | SKIP_MONITOR | NO_MANDATORY_KEYS | STALE | READONLY,
        Keys::Script { count_at: 2 },
        &(fcall_ro as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "Depends on the function that is executed.",
        "Invoke a read-only function",
    )
    .syntax("function numkeys [key [key ...]] [arg [arg ...]]"),
    Command::new(
        "function",
        -2,
        0,
        Keys::None,
        &(super::server::container as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "Depends on subcommand.",
        "A container for function commands",
    )
    .subcommands(FUNCTION),
];

static FUNCTION: &[Command] = &[
    Command::new(
        "load",
        -3,
        NOSCRIPT | WRITE | DENYOOM,
        Keys::None,
        &(function_load as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(1) (considering compilation time is redundant)",
        "Create a function with the given arguments (name, code, description)",
    )
    .syntax("[REPLACE] function-code"),
    Command::new(
        "delete",
        3,
        NOSCRIPT | WRITE,
        Keys::None,
        &(function_delete as Handler),
    )
    .doc(G, "7.0.0", "O(1)", "Delete a function by name")
    .syntax("library-name"),
    Command::new(
        "flush",
        -2,
        NOSCRIPT | WRITE,
        Keys::None,
        &(function_flush as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of functions deleted",
        "Deleting all functions",
    )
    .syntax("[ASYNC | SYNC]"),
    Command::new(
        "list",
        -2,
        NOSCRIPT,
        Keys::None,
        &(function_list as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of functions",
        "List information about all the functions",
    )
    .syntax("[LIBRARYNAME library-name-pattern] [WITHCODE]"),
    Command::new(
        "stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        Keys::None,
        &(function_stats as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(1)",
        "Return information about the function currently running (name, description, duration)",
    ),
    Command::new(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        Keys::None,
        &(function_kill as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(1)",
        "Kill the function currently in execution.",
    ),
    Command::new("dump", 2, NOSCRIPT, Keys::None, &(function_dump as Handler)).doc(
        G,
        "7.0.0",
        "O(N) where N is the number of functions",
        "Dump all functions into a serialized binary payload",
    ),
    Command::new(
        "restore",
        -3,
        NOSCRIPT | WRITE | DENYOOM,
        Keys::None,
        &(function_restore as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of functions on the payload",
        "Restore all the functions on the given payload",
    )
    .syntax("serialized-value [FLUSH | APPEND | REPLACE]"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(function_help as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    ),
];

fn fcall(ctx: &mut Ctx) -> CmdResult {
    fcall_generic(ctx, false)
}

fn fcall_ro(ctx: &mut Ctx) -> CmdResult {
    fcall_generic(ctx, true)
}

fn fcall_generic(ctx: &mut Ctx, ro: bool) -> CmdResult {
    let shared = ctx.shared.clone();
    // As in EVAL: busy before the engine guard, so it ends after it.
    let busy = shared.scripting.busy.clone();
    let _running = busy.begin(ctx.client.handle.id, true);
    let engine = shared.scripting.engine().map_err(Error::Owned)?;
    let Some(f) = engine.find_function(ctx.arg(1)) else {
        return Err(Error::Static("ERR Function not found"));
    };
    let nkeys = parse_i64(ctx.arg(2)).ok_or(Error::Static("ERR Bad number of keys provided"))?;
    if nkeys > (ctx.argc() - 3) as i64 {
        return Err(Error::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if nkeys < 0 {
        return Err(Error::Static("ERR Number of keys can't be negative"));
    }
    // Redis's `scriptPrepareForRun`, in its order.
    let no_writes = f.flags & FLAG_NO_WRITES != 0;
    if f.flags & crate::commands::lua::functions::FLAG_NO_CLUSTER != 0 {
        if ctx.shared.cluster.is_some() {
            return Err(Error::Static(super::scripting::NO_CLUSTER));
        }
        // What cluster mode would refuse (Redis 8.0 counts it whatever the
        // sample ratio).
        ctx.shared
            .stats
            .cluster_incompatible_ops
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    if f.flags & FLAG_ALLOW_STALE == 0 && super::scripting::running_stale(ctx.shared) {
        return Err(Error::Static(super::scripting::MASTERDOWN_FLAG));
    }
    if !no_writes && super::scripting::read_only_replica(ctx) {
        return Err(Error::Static(super::scripting::READONLY_FLAG));
    }
    if ro && !no_writes {
        return Err(Error::Static(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    if !no_writes
        && ctx
            .shared
            .replication
            .lacks_good_replicas(&ctx.shared.config)
    {
        return Err(Error::Refused(super::replication::NOREPLICAS));
    }
    if !no_writes && f.flags & FLAG_ALLOW_OOM == 0 && ctx.client.oom {
        return Err(Error::Static(super::scripting::OOM_FLAG));
    }

    let nkeys = nkeys as usize;
    let func = engine.registered(&f.func).map_err(Error::Owned)?;
    let name = f.name.clone();
    let args = ctx.args;
    *busy.running_function.lock() = Some((
        name.clone(),
        (0..args.len()).map(|i| args.get(i).to_vec()).collect(),
    ));
    let spec = RunSpec {
        name: &name,
        read_only: no_writes,
        keys: (3..3 + nkeys).map(|i| args.get(i)).collect(),
        argv: (3 + nkeys..args.len()).map(|i| args.get(i)).collect(),
        as_function: true,
        deny_oom: false,
        cross_slot: f.flags & crate::commands::lua::functions::FLAG_ALLOW_CROSS_SLOT != 0,
    };
    let mut engine = engine;
    ctx.script_error = engine.run(
        &shared,
        ctx.dispatch,
        ctx.client,
        ctx.ks,
        ctx.out,
        &func,
        spec,
    );
    Ok(Done)
}

fn function_load(ctx: &mut Ctx) -> CmdResult {
    let mut replace = false;
    let mut pos = 2;
    while pos < ctx.argc() - 1 {
        let a = ctx.arg(pos);
        pos += 1;
        if eq_ic(a, "REPLACE") {
            replace = true;
            continue;
        }
        return Err(Error::Owned(format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(a)
        )));
    }
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    let name = engine
        .load_library(ctx.arg(pos), replace)
        .map_err(Error::Owned)?;
    shared.scripting.update_stats(&mut engine);
    // Libraries are part of the dataset: always logged, as in Redis.
    ctx.force_propagation();
    ctx.out.bulk(name.as_bytes());
    Ok(Done)
}

fn function_delete(ctx: &mut Ctx) -> CmdResult {
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    if !engine.delete_library(&name) {
        return Err(Error::Static("ERR Library not found"));
    }
    shared.scripting.update_stats(&mut engine);
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

fn function_flush(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let is_async = match ctx.argc() {
        2 => ctx.shared.config.lazyfree_lazy_user_flush(),
        _ if eq_ic(ctx.arg(2), "SYNC") => false,
        _ if eq_ic(ctx.arg(2), "ASYNC") => true,
        _ => {
            return Err(Error::Static(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ));
        }
    };
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    // Redis's freeFunctionsAsync: many functions go to the lazyfree
    // thread, counted with the one engine.
    let functions = engine.function_count();
    if is_async && functions > crate::keyspace::lazyfree::THRESHOLD {
        let libraries = engine.take_libraries();
        shared.lazyfree.free(Box::new(libraries), functions + 1);
    } else {
        engine.flush_libraries();
    }
    shared.scripting.update_stats(&mut engine);
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

fn function_list(ctx: &mut Ctx) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<Vec<u8>> = None;
    let mut i = 2;
    while i < ctx.argc() {
        let a = ctx.arg(i);
        if !with_code && eq_ic(a, "WITHCODE") {
            with_code = true;
        } else if pattern.is_none() && eq_ic(a, "LIBRARYNAME") {
            if i + 1 >= ctx.argc() {
                return Err(Error::Static("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(ctx.arg(i).to_vec());
        } else {
            return Err(Error::Owned(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    let shared = ctx.shared.clone();
    let engine = shared.scripting.engine_for(ctx.client)?;
    let out = &mut *ctx.out;
    let libs: Vec<_> = engine
        .libraries
        .values()
        .filter(|l| {
            pattern
                .as_deref()
                .is_none_or(|p| glob_match(p, l.name.as_bytes(), true))
        })
        .collect();
    out.array(libs.len());
    for lib in libs {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(lib.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(lib.functions.len());
        for f in &lib.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names: Vec<&str> = FLAG_NAMES
                .iter()
                .enumerate()
                .filter(|(bit, _)| f.flags & (1 << bit) != 0)
                .map(|(_, n)| *n)
                .collect();
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&lib.code);
        }
    }
    Ok(Done)
}

fn function_stats(ctx: &mut Ctx) -> CmdResult {
    let sc = &ctx.shared.scripting;
    // As Redis: an EVAL script running is reported as the BUSY error.
    if sc.busy.is_running() && !sc.busy.is_function() {
        return Err(Error::Static(super::lua::BUSY_EVAL));
    }
    let out = &mut *ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    let running = if sc.busy.is_running() && sc.busy.is_function() {
        sc.busy.running_function.lock().clone()
    } else {
        None
    };
    match running {
        Some((name, args)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name.as_bytes());
            out.bulk(b"command");
            out.array(args.len());
            for a in &args {
                out.bulk(a);
            }
            out.bulk(b"duration_ms");
            out.int(sc.busy.elapsed_ms() as i64);
        }
        None => out.null(),
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(sc.libraries_count.load(Relaxed) as i64);
    out.bulk(b"functions_count");
    out.int(sc.functions_count.load(Relaxed) as i64);
    Ok(Done)
}

fn function_kill(ctx: &mut Ctx) -> CmdResult {
    ctx.shared
        .scripting
        .busy
        .kill(true)
        .map_err(Error::Static)?;
    ctx.out.ok();
    Ok(Done)
}

/// FUNCTION DUMP: every library in Redis's payload format, saying
/// `rdb-version`'s version.
fn function_dump(ctx: &mut Ctx) -> CmdResult {
    let shared = ctx.shared.clone();
    let engine = shared.scripting.engine_for(ctx.client)?;
    let payload = dump::encode(
        engine.libraries.values().map(|l| l.code.as_slice()),
        shared.config.rdb_version(),
    );
    ctx.out.bulk(&payload);
    Ok(Done)
}

/// FUNCTION RESTORE payload [FLUSH | APPEND | REPLACE], all or nothing.
fn function_restore(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 4 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    let policy = match ctx.argc() {
        3 => Policy::Append,
        _ if eq_ic(ctx.arg(3), "FLUSH") => Policy::Flush,
        _ if eq_ic(ctx.arg(3), "APPEND") => Policy::Append,
        _ if eq_ic(ctx.arg(3), "REPLACE") => Policy::Replace,
        _ => {
            return Err(Error::Static(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ));
        }
    };
    let codes = dump::decode(ctx.arg(2)).map_err(Error::Static)?;
    let shared = ctx.shared.clone();
    let mut engine = shared.scripting.engine_for(ctx.client)?;
    if policy == Policy::Append {
        for code in &codes {
            let (name, _) = super::lua::functions::parse_metadata(code).map_err(Error::Owned)?;
            if engine.libraries.contains_key(&name) {
                return Err(Error::Owned(format!("ERR Library {name} already exists")));
            }
        }
    }
    // Restore into the current set, putting it back on any failure.
    let saved: Vec<Vec<u8>> = engine.libraries.values().map(|l| l.code.clone()).collect();
    if policy == Policy::Flush {
        engine.flush_libraries();
    }
    for code in &codes {
        if let Err(e) = engine.load_library(code, policy != Policy::Append) {
            engine.flush_libraries();
            for old in &saved {
                let _ = engine.load_library(old, true);
            }
            shared.scripting.update_stats(&mut engine);
            return Err(Error::Owned(e));
        }
    }
    shared.scripting.update_stats(&mut engine);
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

fn function_help(ctx: &mut Ctx) -> CmdResult {
    super::scripting::help_lines(
        ctx,
        &[
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
            "HELP",
            "    Print this help.",
        ],
    );
    Ok(Done)
}
