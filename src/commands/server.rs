//! Server commands: COMMAND, INFO (whose text `info.rs` builds), CONFIG,
//! DBSIZE, FLUSHDB, FLUSHALL, TIME, SHUTDOWN, LASTSAVE, SWAPDB, MEMORY and
//! DEBUG.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Error, Keys, all_commands, docs, int_arg, lookup};
use crate::protocol::Reply;
use crate::util::{eq_ic, glob_match};

const G: &str = "server";

pub static COMMANDS: &[Command] = &[
    Command::new("command", -1, LOADING | STALE, Keys::None, command_list_all)
        .doc(G, "2.8.13", "O(N) where N is the total number of Redis commands", "Returns detailed information about all commands.")
        .subcommands(COMMAND),
    Command::new("info", -1, LOADING | STALE, Keys::None, super::info::info)
        .doc(G, "1.0.0", "O(1)", "Returns information and statistics about the server.")
        .syntax("[section [section ...]]"),
    Command::new("config", -2, 0, Keys::None, container)
        .doc(G, "2.0.0", "Depends on subcommand.", "A container for server configuration commands.")
        .subcommands(CONFIG),
    Command::new("dbsize", 1, READONLY | FAST, Keys::All, dbsize).doc(G, "1.0.0", "O(1)", "Returns the number of keys in the database."),
    Command::new("flushdb", -1, WRITE, Keys::All, flushdb)
        .doc(G, "1.0.0", "O(N) where N is the number of keys in the selected database", "Removes all keys from the current database.")
        .syntax("[ASYNC | SYNC]"),
    Command::new("flushall", -1, WRITE, Keys::All, flushall)
        .doc(G, "1.0.0", "O(N) where N is the total number of keys in all databases", "Removes all keys from all databases.")
        .syntax("[ASYNC | SYNC]"),
    Command::new("time", 1, LOADING | STALE | FAST, Keys::None, time).doc(G, "2.6.0", "O(1)", "Returns the server time."),
    Command::new("lastsave", 1, LOADING | STALE | FAST, Keys::None, lastsave)
        .doc(G, "1.0.0", "O(1)", "Returns the Unix timestamp of the last successful save to disk."),
    Command::new("shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, Keys::None, shutdown)
        .doc(G, "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Synchronously saves the database(s) to disk and shuts down the Redis server.")
        .syntax("[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"),
    Command::new("swapdb", 3, WRITE | FAST, Keys::All, swapdb)
        .doc(G, "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases.", "Swaps two Redis databases.")
        .syntax("index1 index2"),
    Command::new("memory", -2, 0, Keys::None, container)
        .doc(G, "4.0.0", "Depends on subcommand.", "A container for memory diagnostics commands.")
        .subcommands(MEMORY),
    Command::new("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, Keys::None, debug)
        .doc(G, "1.0.0", "Depends on subcommand.", "A container for debugging commands (SLEEP, CLOCK, SET-ACTIVE-EXPIRE).")
        .syntax("subcommand [argument [argument ...]]"),
];

static MEMORY: &[Command] = &[
    Command::new(
        "usage",
        -3,
        READONLY,
        Keys::Range {
            first: 2,
            last: 2,
            step: 1,
        },
        memory_usage,
    )
    .doc(
        G,
        "4.0.0",
        "O(N) where N is the number of samples.",
        "Estimates the memory usage of a key.",
    )
    .syntax("key [SAMPLES count]"),
    Command::new("help", 2, LOADING | STALE, Keys::None, memory_help).doc(
        G,
        "4.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

/// MEMORY USAGE key [SAMPLES count]: the key's bytes, its entry and its
/// value's own accounting (exact rather than sampled, so SAMPLES is only
/// validated). Options are checked before the key, as Redis does.
fn memory_usage(ctx: &mut Ctx) -> CmdResult {
    let mut i = 3;
    while i < ctx.argc() {
        if eq_ic(ctx.arg(i), "SAMPLES") && i + 1 < ctx.argc() {
            if int_arg(ctx.arg(i + 1))? < 0 {
                return Err(Error::Syntax);
            }
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let key = ctx.args.get(2);
    match ctx.ks.peek(key) {
        Some(e) => {
            let usage =
                key.len() + std::mem::size_of::<crate::store::Entry>() + e.value.mem_usage();
            ctx.out.int(usage as i64);
        }
        None => ctx.out.null(),
    }
    Ok(())
}

fn memory_help(ctx: &mut Ctx) -> CmdResult {
    help(ctx, "MEMORY", MEMORY);
    Ok(())
}

static COMMAND: &[Command] = &[
    Command::new("count", 2, LOADING | STALE, Keys::None, command_count).doc(
        G,
        "2.8.13",
        "O(1)",
        "Returns a count of commands.",
    ),
    Command::new("list", -2, LOADING | STALE, Keys::None, command_list)
        .doc(
            G,
            "7.0.0",
            "O(N) where N is the total number of Redis commands",
            "Returns a list of command names.",
        )
        .syntax("[FILTERBY MODULE module-name | ACLCAT category | PATTERN pattern]"),
    Command::new("info", -2, LOADING | STALE, Keys::None, command_info)
        .doc(
            G,
            "2.8.13",
            "O(N) where N is the number of commands to look up",
            "Returns information about one, multiple or all commands.",
        )
        .syntax("[command-name [command-name ...]]"),
    Command::new("docs", -2, LOADING | STALE, Keys::None, command_docs)
        .doc(
            G,
            "7.0.0",
            "O(N) where N is the number of commands to look up",
            "Returns documentary information about one, multiple or all commands.",
        )
        .syntax("[command-name [command-name ...]]"),
    Command::new("getkeys", -3, LOADING | STALE, Keys::None, command_getkeys)
        .doc(
            G,
            "2.8.13",
            "O(N) where N is the number of arguments to the command",
            "Extracts the key names from an arbitrary command.",
        )
        .syntax("command [arg [arg ...]]"),
    Command::new("help", 2, LOADING | STALE, Keys::None, command_help).doc(
        G,
        "5.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

static CONFIG: &[Command] = &[
    Command::new(
        "get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        config_get,
    )
    .doc(
        G,
        "2.0.0",
        "O(N) when N is the number of configuration parameters provided",
        "Returns the effective values of configuration parameters.",
    )
    .syntax("parameter [parameter ...]"),
    Command::new(
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        config_set,
    )
    .doc(
        G,
        "2.0.0",
        "O(N) when N is the number of configuration parameters provided",
        "Sets configuration parameters in-flight.",
    )
    .syntax("parameter value [parameter value ...]"),
    Command::new(
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        config_resetstat,
    )
    .doc(G, "2.0.0", "O(1)", "Resets the server's statistics."),
    Command::new(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        config_rewrite,
    )
    .doc(
        G,
        "2.8.0",
        "O(1)",
        "Persists the effective configuration to file.",
    ),
    Command::new("help", 2, LOADING | STALE, Keys::None, config_help).doc(
        G,
        "5.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

/// The handler of a container command called without a known subcommand.
pub fn container(ctx: &mut Ctx) -> CmdResult {
    Err(Error::Owned(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(ctx.arg(1)),
        ctx.cmd.name.to_ascii_uppercase()
    )))
}

/// HELP for a container: one line of syntax and one of summary per subcommand.
pub fn help(ctx: &mut Ctx, parent: &str, subs: &[Command]) {
    ctx.out.array(1 + subs.len() * 2);
    ctx.out.simple(&format!(
        "{parent} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for s in subs {
        let line = format!("{} {}", s.name.to_ascii_uppercase(), s.syntax);
        ctx.out.simple(line.trim_end());
        ctx.out.simple(&format!("    {}", s.summary));
    }
}

fn command_list_all(ctx: &mut Ctx) -> CmdResult {
    let n = all_commands().count();
    ctx.out.array(n);
    for c in all_commands() {
        write_command_info(ctx.out, c, None);
    }
    Ok(())
}

fn command_count(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(all_commands().count() as i64);
    Ok(())
}

fn command_list(ctx: &mut Ctx) -> CmdResult {
    let filter = match ctx.argc() {
        2 => None,
        5 if eq_ic(ctx.arg(2), "FILTERBY") => {
            Some((ctx.arg(3).to_ascii_lowercase(), ctx.arg(4).to_vec()))
        }
        _ => return Err(Error::Syntax),
    };
    let mut names = Vec::new();
    for c in all_commands() {
        let keep = match &filter {
            None => true,
            Some((by, v)) if by == b"pattern" => glob_match(v, c.name.as_bytes(), true),
            Some((by, v)) if by == b"aclcat" => acl_categories(c)
                .iter()
                .any(|cat| cat.as_bytes()[1..].eq_ignore_ascii_case(v)),
            Some((by, _)) if by == b"module" => false,
            Some(_) => return Err(Error::Syntax),
        };
        if keep {
            names.push(c.name.to_string());
            for s in c.subcommands {
                if filter.is_none() {
                    names.push(format!("{}|{}", c.name, s.name));
                }
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(())
}

/// Finds `name` or `parent|sub`.
fn find(name: &[u8]) -> Option<(&'static Command, Option<&'static Command>)> {
    if let Some(bar) = name.iter().position(|&b| b == b'|') {
        let parent = lookup(&name[..bar])?;
        let sub = super::lookup_sub(parent, &name[bar + 1..])?;
        return Some((sub, Some(parent)));
    }
    lookup(name).map(|c| (c, None))
}

fn command_info(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() == 2 {
        return command_list_all(ctx);
    }
    ctx.out.array(ctx.argc() - 2);
    for i in 2..ctx.argc() {
        match find(ctx.args.get(i)) {
            Some((c, parent)) => write_command_info(ctx.out, c, parent),
            None => ctx.out.null_array(),
        }
    }
    Ok(())
}

fn acl_categories(c: &Command) -> Vec<&'static str> {
    let mut cats = Vec::new();
    if c.has(WRITE) {
        cats.push("@write");
    }
    if c.has(READONLY) {
        cats.push("@read");
    }
    cats.push(match c.group {
        "string" => "@string",
        "list" => "@list",
        "set" => "@set",
        "hash" => "@hash",
        "sorted-set" => "@sortedset",
        "pubsub" => "@pubsub",
        "connection" => "@connection",
        "transactions" => "@transaction",
        "scripting" => "@scripting",
        "generic" => "@keyspace",
        _ => "@admin",
    });
    cats.push(if c.has(FAST) { "@fast" } else { "@slow" });
    if c.has(BLOCKING) {
        cats.push("@blocking");
    }
    if c.has(ADMIN) {
        cats.push("@dangerous");
    }
    // Redis lists categories in the order of its ACL category bits.
    const ORDER: &[&str] = &[
        "@keyspace",
        "@read",
        "@write",
        "@set",
        "@sortedset",
        "@list",
        "@hash",
        "@string",
        "@bitmap",
        "@hyperloglog",
        "@geo",
        "@stream",
        "@pubsub",
        "@admin",
        "@fast",
        "@slow",
        "@blocking",
        "@dangerous",
        "@connection",
        "@transaction",
        "@scripting",
    ];
    cats.sort_by_key(|c| ORDER.iter().position(|o| o == c).unwrap_or(ORDER.len()));
    cats
}

fn write_command_info(out: &mut Reply, c: &Command, parent: Option<&Command>) {
    out.array(10);
    match parent {
        Some(p) => out.bulk(format!("{}|{}", p.name, c.name).as_bytes()),
        None => out.bulk(c.name.as_bytes()),
    }
    out.int(c.arity as i64);
    let mut names: Vec<&str> = NAMES
        .iter()
        .filter(|(f, _)| c.has(*f))
        .map(|(_, n)| *n)
        .collect();
    match c.keys {
        Keys::NumKeys { .. } => names.push("movablekeys"),
        // Scripts may declare no keys at all.
        Keys::Script { .. } => names.extend(["no_mandatory_keys", "movablekeys"]),
        _ => {}
    }
    out.set(names.len());
    for n in names {
        out.simple(n);
    }
    let (first, last, step) = match c.keys {
        Keys::Range { first, last, step } => (first, last, step),
        Keys::NumKeys { dest: Some(d), .. } => (d as i32, d as i32, 1),
        _ => (0, 0, 0),
    };
    out.int(first as i64);
    out.int(last as i64);
    out.int(step as i64);
    let cats = acl_categories(c);
    out.set(cats.len());
    for cat in cats {
        out.simple(cat);
    }
    out.set(0);
    out.array(0);
    out.array(c.subcommands.len());
    for s in c.subcommands {
        write_command_info(out, s, Some(c));
    }
}

fn command_docs(ctx: &mut Ctx) -> CmdResult {
    let mut found: Vec<(&Command, Option<&Command>)> = Vec::new();
    if ctx.argc() == 2 {
        found.extend(all_commands().map(|c| (c, None)));
    } else {
        for i in 2..ctx.argc() {
            if let Some(hit) = find(ctx.args.get(i)) {
                found.push(hit);
            }
        }
    }
    ctx.out.map(found.len());
    for (c, parent) in found {
        match parent {
            Some(p) => ctx.out.bulk(format!("{}|{}", p.name, c.name).as_bytes()),
            None => ctx.out.bulk(c.name.as_bytes()),
        }
        docs::write_docs(ctx.out, c, parent);
    }
    Ok(())
}

fn command_getkeys(ctx: &mut Ctx) -> CmdResult {
    let sub = super::OwnedArgs::from_slices(&ctx.args.iter().skip(2).collect::<Vec<_>>());
    let args = sub.args();
    let cmd = match super::resolve(&args) {
        Ok(c) => c,
        Err(e) if e.text().starts_with("ERR unknown command") => {
            return Err(Error::Static("ERR Invalid command specified"));
        }
        Err(_) => {
            return Err(Error::Static(
                "ERR Invalid number of arguments specified for command",
            ));
        }
    };
    let mut keys = Vec::new();
    cmd.key_indices(&args, |i| keys.push(args.get(i).to_vec()));
    // A script may declare no keys (its flags say no_mandatory_keys).
    if keys.is_empty() && !matches!(cmd.keys, Keys::Script { .. }) {
        return Err(Error::Static("ERR The command has no key arguments"));
    }
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(&k);
    }
    Ok(())
}

fn command_help(ctx: &mut Ctx) -> CmdResult {
    help(ctx, "COMMAND", COMMAND);
    Ok(())
}

fn config_get(ctx: &mut Ctx) -> CmdResult {
    let patterns: Vec<&[u8]> = ctx.args.iter().skip(2).collect();
    let found = ctx.shared.config.get_matching(&patterns);
    ctx.out.map(found.len());
    for (name, value) in found {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(())
}

fn config_set(ctx: &mut Ctx) -> CmdResult {
    if !ctx.argc().is_multiple_of(2) {
        return Err(Error::Owned(format!(
            "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
            String::from_utf8_lossy(ctx.arg(2))
        )));
    }
    let pairs: Vec<(&[u8], &[u8])> = (2..ctx.argc())
        .step_by(2)
        .map(|i| (ctx.args.get(i), ctx.args.get(i + 1)))
        .collect();
    ctx.shared.config.set_many(&pairs)?;
    ctx.out.ok();
    Ok(())
}

fn config_resetstat(ctx: &mut Ctx) -> CmdResult {
    // What Redis's resetServerStats clears (not gauges, not the memory peak).
    let s = &ctx.shared.stats;
    for c in [
        &s.commands_processed,
        &s.net_input_bytes,
        &s.net_output_bytes,
        &s.rejected_connections,
        &s.error_replies,
        &s.reads_processed,
        &s.writes_processed,
        &s.reply_buffer_expands,
        &s.reply_buffer_shrinks,
        &ctx.shared.clients.total_connections,
    ] {
        c.store(0, Relaxed);
    }
    s.instantaneous.reset();
    s.expire.reset();
    ctx.shared.error_stats.lock().clear();
    for c in all_commands() {
        for cmd in std::iter::once(c).chain(c.subcommands) {
            super::CallStats::of(cmd).reset();
        }
    }
    // Through the keyspace: inside EXEC every shard is already held.
    ctx.ks
        .for_each_shard(|shard| shard.stats = Default::default());
    ctx.out.ok();
    Ok(())
}

fn config_rewrite(_ctx: &mut Ctx) -> CmdResult {
    Err(Error::Static(
        "ERR The server is running without a config file",
    ))
}

fn config_help(ctx: &mut Ctx) -> CmdResult {
    help(ctx, "CONFIG", CONFIG);
    Ok(())
}

fn dbsize(ctx: &mut Ctx) -> CmdResult {
    let n: usize = ctx.ks.dbs_mut().map(|d| d.keys.len()).sum();
    ctx.out.int(n as i64);
    Ok(())
}

fn flush_mode(ctx: &Ctx) -> CmdResult {
    match ctx.argc() {
        1 => Ok(()),
        2 if eq_ic(ctx.arg(1), "ASYNC") || eq_ic(ctx.arg(1), "SYNC") => Ok(()),
        _ => Err(Error::Syntax),
    }
}

/// Empties one database in every (locked) shard, invalidating WATCHes on
/// keys that existed, as Redis 7.0's `signalFlushedDb` does. The watchers
/// are touched after the flush so that one that saw its key already expired
/// takes the deletion as no change, as Redis does.
fn flush_db(ctx: &mut Ctx, db: usize) {
    for shard in ctx.ks.shards_mut() {
        let existed: Vec<_> = shard
            .watched
            .keys()
            .filter(|(d, k)| *d == db && shard.dbs[db].keys.contains_key(k))
            .cloned()
            .collect();
        shard.dbs[db].keys.clear();
        shard.dbs[db].expires.clear();
        shard.schedule.clear_db(db);
        for (d, k) in existed {
            shard.touch_watched(d, &k);
        }
    }
}

fn flushdb(ctx: &mut Ctx) -> CmdResult {
    flush_mode(ctx)?;
    flush_db(ctx, ctx.client.db);
    ctx.out.ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx) -> CmdResult {
    flush_mode(ctx)?;
    for db in 0..ctx.shared.store.databases {
        flush_db(ctx, db);
    }
    ctx.out.ok();
    Ok(())
}

fn time(ctx: &mut Ctx) -> CmdResult {
    // A script sees one frozen instant, like every command it runs.
    let us = if ctx.client.in_script {
        ctx.ks.now_ms * 1000
    } else {
        ctx.shared.clock.now_us()
    };
    ctx.out.array(2);
    ctx.out.bulk_int((us / 1_000_000) as i64);
    ctx.out.bulk_int((us % 1_000_000) as i64);
    Ok(())
}

fn lastsave(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(ctx.shared.last_save.load(Relaxed) as i64);
    Ok(())
}

fn shutdown(ctx: &mut Ctx) -> CmdResult {
    let mut abort = false;
    for a in ctx.args.iter().skip(1) {
        if eq_ic(a, "ABORT") {
            abort = true;
        } else if !["NOSAVE", "SAVE", "NOW", "FORCE"]
            .iter()
            .any(|k| eq_ic(a, k))
        {
            return Err(Error::Syntax);
        }
    }
    if abort {
        return Err(Error::Static("ERR No shutdown in progress."));
    }
    // Like Redis, a successful SHUTDOWN answers nothing: the connection closes.
    ctx.shared.stop.notify_one();
    ctx.client.close_after_reply = true;
    Ok(())
}

fn swapdb(ctx: &mut Ctx) -> CmdResult {
    let parse = |a: &[u8], what: &'static str| int_arg(a).map_err(|_| Error::Static(what));
    let a = parse(ctx.arg(1), "ERR invalid first DB index")?;
    let b = parse(ctx.arg(2), "ERR invalid second DB index")?;
    let n = ctx.shared.config.databases as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(Error::Static("ERR DB index is out of range"));
    }
    let (a, b) = (a as usize, b as usize);
    let mut ready = Vec::new();
    let now = ctx.ks.now_ms;
    for shard in ctx.ks.shards_mut() {
        // (db, key, existed in db before the swap) for every watched key
        // present on either side.
        let touched: Vec<_> = shard
            .watched
            .keys()
            .filter(|(d, k)| {
                (*d == a || *d == b)
                    && (shard.dbs[a].keys.contains_key(k) || shard.dbs[b].keys.contains_key(k))
            })
            .map(|(d, k)| (*d, k.clone(), shard.dbs[*d].keys.contains_key(k)))
            .collect();
        shard.dbs.swap(a, b);
        shard.schedule.clear_db(a);
        shard.schedule.clear_db(b);
        if a != b {
            for (d, k, existed) in touched {
                shard.touch_swapped(d, &k, existed, now);
            }
        }
        for (d, k) in shard.blocked.keys() {
            if (*d == a || *d == b) && shard.dbs[*d].keys.contains_key(k) {
                ready.push((*d, k.clone()));
            }
        }
    }
    ctx.ks.ready.extend(ready);
    // Swapped keys sit in the other database now: schedule them afresh.
    let db = ctx.ks.db;
    for d in [a, b] {
        ctx.ks.db = d;
        let keys: Vec<Vec<u8>> = ctx
            .ks
            .dbs_mut()
            .flat_map(|x| x.keys.iter().map(|(k, _)| k.to_vec()).collect::<Vec<_>>())
            .collect();
        for k in keys {
            crate::windows::reschedule(ctx.ks, &k);
        }
    }
    ctx.ks.db = db;
    ctx.out.ok();
    Ok(())
}

fn debug(ctx: &mut Ctx) -> CmdResult {
    if !ctx.shared.config.debug_command {
        return Err(Error::Static(
            "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
        ));
    }
    let sub = ctx.arg(1);
    if eq_ic(sub, "SLEEP") && ctx.argc() == 3 {
        let secs = crate::util::parse_f64(ctx.arg(2))
            .filter(|s| (0.0..3600.0).contains(s))
            .ok_or(Error::NotFloat)?;
        std::thread::sleep(Duration::from_secs_f64(secs));
        ctx.out.ok();
    } else if eq_ic(sub, "CLOCK") && ctx.argc() >= 3 {
        // zwindow's controllable clock for tests:
        // DEBUG CLOCK FREEZE <unix-ms>|NOW, DEBUG CLOCK ADVANCE <ms>, DEBUG CLOCK RESUME, DEBUG CLOCK GET
        let op = ctx.arg(2);
        let clock = &ctx.shared.clock;
        if eq_ic(op, "FREEZE") && ctx.argc() == 4 {
            let at = if eq_ic(ctx.arg(3), "NOW") {
                clock.now_ms()
            } else {
                int_arg(ctx.arg(3))?.max(1) as u64
            };
            clock.freeze_at(at);
        } else if eq_ic(op, "ADVANCE") && ctx.argc() == 4 {
            clock.advance(int_arg(ctx.arg(3))?);
        } else if eq_ic(op, "RESUME") && ctx.argc() == 3 {
            clock.freeze_at(0);
        } else if !(eq_ic(op, "GET") && ctx.argc() == 3) {
            return Err(Error::Syntax);
        }
        ctx.out.int(clock.now_ms() as i64);
    } else if eq_ic(sub, "SHARD") && ctx.argc() == 3 {
        // DEBUG SHARD <key>: the shard owning a key (the hash seed is random
        // per process), so tests can spread keys over shards on purpose.
        ctx.out.int(ctx.shared.store.shard_of(ctx.arg(2)) as i64);
    } else if eq_ic(sub, "ACTIVE-EXPIRE-CYCLE") && ctx.argc() == 2 {
        if ctx.client.in_exec {
            // The cycle locks shards one by one; EXEC already holds them all.
            return Err(Error::Static(
                "ERR DEBUG ACTIVE-EXPIRE-CYCLE is not allowed inside a transaction",
            ));
        }
        // Runs one unbounded active-expiry pass now (tests use it instead of waiting).
        let shared = ctx.shared.clone();
        let n = crate::store::expire::cycle(&shared, Duration::from_secs(3600));
        ctx.out.int(n as i64);
    } else {
        return Err(Error::Owned(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'",
            String::from_utf8_lossy(sub)
        )));
    }
    Ok(())
}
