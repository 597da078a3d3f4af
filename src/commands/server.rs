//! Server commands: COMMAND, INFO (whose text `info.rs` builds), CONFIG,
//! DBSIZE, FLUSHDB, FLUSHALL, TIME, SHUTDOWN, LASTSAVE, SWAPDB (MEMORY's
//! subcommands are in `memory.rs`, DEBUG's in `debug.rs`).

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::{
    CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, Services, all_commands, docs,
    int_arg, lookup,
};
use crate::protocol::Reply;
use crate::shutdown::Flags;
use crate::spec::metadata::{Begin, Find, KeySpec, categories, ks, meta_of};
use crate::util::{eq_ic, glob_match, parse_i64};

const G: &str = "server";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("command", -1, LOADING | STALE, Keys::None, &(command_list_all as Handler))
        .doc(G, "2.8.13", "O(N) where N is the total number of Redis commands", "Returns detailed information about all commands.")
        .subcommands(COMMAND),
    Command::new("info", -1, LOADING | STALE, Keys::None, &(super::info::info as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns information and statistics about the server.")
        .syntax("[section [section ...]]"),
    Command::new("config", -2, 0, Keys::None, &(container as Handler))
        .doc(G, "2.0.0", "Depends on subcommand.", "A container for server configuration commands.")
        .subcommands(CONFIG),
    Command::new("dbsize", 1, READONLY | FAST, Keys::All, &(dbsize as Handler)).doc(G, "1.0.0", "O(1)", "Returns the number of keys in the database."),
    Command::new("flushdb", -1, WRITE, Keys::All, &(flushdb as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of keys in the selected database", "Removes all keys from the current database.")
        .syntax("[ASYNC | SYNC]"),
    Command::new("flushall", -1, WRITE, Keys::All, &(flushall as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of keys in all databases", "Removes all keys from all databases.")
        .syntax("[ASYNC | SYNC]"),
    Command::new("monitor", 1, ADMIN | NOSCRIPT | LOADING | STALE, Keys::None, &(monitor as Handler))
        .doc(G, "1.0.0", "", "Listens for all requests received by the server in real-time."),
    Command::new("time", 1, LOADING | STALE | FAST, Keys::None, &(time as Handler)).doc(G, "2.6.0", "O(1)", "Returns the server time."),
    Command::new("lastsave", 1, LOADING | STALE | FAST, Keys::None, &(lastsave as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns the Unix timestamp of the last successful save to disk."),
    Command::new("shutdown", -1, ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY, Keys::None, &(shutdown as Handler))
        .doc(G, "1.0.0", "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)", "Synchronously saves the database(s) to disk and shuts down the Redis server.")
        .syntax("[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]"),
    Command::new("swapdb", 3, WRITE | FAST, Keys::All, &(swapdb as Handler))
        .doc(G, "4.0.0", "O(N) where N is the count of clients watching or blocking on keys from both databases.", "Swaps two Redis databases.")
        .syntax("index1 index2"),
    Command::new("memory", -2, 0, Keys::None, &(container as Handler))
        .doc(G, "4.0.0", "Depends on subcommand.", "A container for memory diagnostics commands.")
        .subcommands(super::memory::MEMORY),
    Command::new("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE, Keys::None, &(super::debug::debug as Handler))
        .doc(G, "1.0.0", "Depends on subcommand.", "A container for debugging commands (SLEEP, CLOCK, SET-ACTIVE-EXPIRE).")
        .syntax("subcommand [argument [argument ...]]"),
    Command::new("wait", 3, BLOCKING, Keys::None, &(wait as Handler))
        .doc(G, "3.0.0", "O(1)", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.")
        .syntax("numreplicas timeout"),
    Command::new("waitaof", 4, BLOCKING, Keys::None, &(waitaof as Handler))
        .doc(G, "7.2.0", "O(1)", "Blocks until all of the preceding write commands sent by the connection are written to the append-only file of the master and/or replicas.")
        .syntax("numlocal numreplicas timeout"),
    Command::new("role", 1, NOSCRIPT | LOADING | STALE | FAST, Keys::None, &(role as Handler))
        .doc(G, "2.8.12", "O(1)", "Returns the replication role."),
];

static COMMAND: &[Command] = &[
    Command::new(
        "count",
        2,
        LOADING | STALE,
        Keys::None,
        &(command_count as Handler),
    )
    .doc(G, "2.8.13", "O(1)", "Returns a count of commands."),
    Command::new(
        "list",
        -2,
        LOADING | STALE,
        Keys::None,
        &(command_list as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the total number of Redis commands",
        "Returns a list of command names.",
    )
    .syntax("[FILTERBY MODULE module-name | ACLCAT category | PATTERN pattern]"),
    Command::new(
        "info",
        -2,
        LOADING | STALE,
        Keys::None,
        &(command_info as Handler),
    )
    .doc(
        G,
        "2.8.13",
        "O(N) where N is the number of commands to look up",
        "Returns information about one, multiple or all commands.",
    )
    .syntax("[command-name [command-name ...]]"),
    Command::new(
        "docs",
        -2,
        LOADING | STALE,
        Keys::None,
        &(command_docs as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of commands to look up",
        "Returns documentary information about one, multiple or all commands.",
    )
    .syntax("[command-name [command-name ...]]"),
    Command::new(
        "getkeys",
        -3,
        LOADING | STALE,
        Keys::None,
        &(command_getkeys as Handler),
    )
    .doc(
        G,
        "2.8.13",
        "O(N) where N is the number of arguments to the command",
        "Extracts the key names from an arbitrary command.",
    )
    .syntax("command [arg [arg ...]]"),
    Command::new(
        "getkeysandflags",
        -3,
        LOADING | STALE,
        Keys::None,
        &(command_getkeysandflags as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of arguments to the command",
        "Extracts the key names and access flags for an arbitrary command.",
    )
    .syntax("command [arg [arg ...]]"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(command_help as Handler),
    )
    .doc(
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
        &(config_get as Handler),
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
        &(config_set as Handler),
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
        &(config_resetstat as Handler),
    )
    .doc(G, "2.0.0", "O(1)", "Resets the server's statistics."),
    Command::new(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(config_rewrite as Handler),
    )
    .doc(
        G,
        "2.8.0",
        "O(1)",
        "Persists the effective configuration to file.",
    ),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(config_help as Handler),
    )
    .doc(
        G,
        "5.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

/// The handler of a container command called without a known subcommand.
pub(crate) fn container(ctx: &mut Ctx) -> CmdResult {
    Err(Error::Owned(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(ctx.arg(1)),
        ctx.cmd.name.to_ascii_uppercase()
    )))
}

/// HELP for a container: one line of syntax and one of summary per subcommand.
pub(crate) fn help(ctx: &mut Ctx, parent: &str, subs: &[Command]) {
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
    Ok(Done)
}

fn command_count(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(all_commands().count() as i64);
    Ok(Done)
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
/// commands and subcommands (`parent|sub`) alike pass through the filter,
/// as in Redis's `commandListWithFilter`.
fn command_list(ctx: &mut Ctx) -> CmdResult {
    enum Filter<'a> {
        All,
        Module,
        AclCat(&'a [u8]),
        Pattern(&'a [u8]),
    }
    let filter = match ctx.argc() {
        2 => Filter::All,
        5 if eq_ic(ctx.arg(2), "FILTERBY") => {
            let (by, arg) = (ctx.args.get(3), ctx.args.get(4));
            if eq_ic(by, "MODULE") {
                Filter::Module
            } else if eq_ic(by, "ACLCAT") {
                Filter::AclCat(arg)
            } else if eq_ic(by, "PATTERN") {
                Filter::Pattern(arg)
            } else {
                return Err(Error::Syntax);
            }
        }
        _ => return Err(Error::Syntax),
    };
    let mut names = Vec::new();
    for c in all_commands() {
        let subs = c.subcommands.iter().map(move |s| (s, Some(c)));
        for (cmd, parent) in std::iter::once((c, None)).chain(subs) {
            let name = full_name(cmd, parent);
            let keep = match filter {
                Filter::All => true,
                // zwindow has no modules.
                Filter::Module => false,
                Filter::AclCat(cat) => categories(cmd, meta_of(cmd, parent))
                    .any(|c| c.as_bytes()[1..].eq_ignore_ascii_case(cat)),
                Filter::Pattern(p) => glob_match(p, name.as_bytes(), true),
            };
            if keep {
                names.push(name);
            }
        }
    }
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(Done)
}

/// `parent|sub` for a subcommand, the bare name otherwise.
fn full_name(c: &Command, parent: Option<&Command>) -> String {
    match parent {
        Some(p) => format!("{}|{}", p.name, c.name),
        None => c.name.to_string(),
    }
}

/// Finds `name` or `parent|sub`, as Redis's strict `lookupCommandBySds`:
/// a bare container name is the container, anything deeper is nothing.
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
            // Redis's addReplyNull: `$-1` in RESP2.
            None => ctx.out.null(),
        }
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// COMMAND INFO, GETKEYS, GETKEYSANDFLAGS: the table's entries with Redis's
// metadata for them (crate::spec::metadata).
// ---------------------------------------------------------------------------

/// One command's COMMAND INFO entry (server.c `addReplyCommandInfo`):
/// name, arity and flags from the table, the rest from Redis's metadata.
fn write_command_info(out: &mut Reply, c: &'static Command, parent: Option<&'static Command>) {
    let meta = meta_of(c, parent);
    out.array(10);
    out.bulk(full_name(c, parent).as_bytes());
    out.int(c.arity as i64);
    let movable = match meta {
        Some(m) => m.movablekeys,
        None => matches!(
            c.keys,
            Keys::NumKeys { .. } | Keys::NumPairs { .. } | Keys::Script { .. } | Keys::Streams
        ),
    };
    let flags = c.flags | if movable { MOVABLEKEYS } else { 0 };
    let names = || NAMES.iter().filter(move |(f, _)| flags & f != 0);
    out.set(names().count());
    for (_, n) in names() {
        out.simple(n);
    }
    let range = match (meta, c.keys) {
        (Some(m), _) => m.range,
        (None, Keys::Range { first, last, step }) => [first, last, step],
        (None, Keys::NumKeys { dest: Some(d), .. }) => [d as i32, d as i32, 1],
        _ => [0, 0, 0],
    };
    for n in range {
        out.int(n as i64);
    }
    out.set(categories(c, meta).count());
    for cat in categories(c, meta) {
        out.simple(cat);
    }
    let tips = meta.map_or(&[][..], |m| m.tips);
    out.set(tips.len());
    for t in tips {
        out.bulk(t.as_bytes());
    }
    write_key_specs(out, meta.map_or(&[][..], |m| m.key_specs));
    // Redis answers an empty set for a command without subcommands.
    if c.subcommands.is_empty() {
        out.set(0);
    } else {
        out.array(c.subcommands.len());
        for s in c.subcommands {
            write_command_info(out, s, Some(c));
        }
    }
}

fn write_key_flags(out: &mut Reply, flags: u16) {
    let names = || ks::NAMES.iter().filter(move |(f, _)| flags & f != 0);
    out.set(names().count());
    for (_, n) in names() {
        out.simple(n);
    }
}

/// server.c `addReplyCommandKeySpecs`.
fn write_key_specs(out: &mut Reply, specs: &[KeySpec]) {
    out.set(specs.len());
    for spec in specs {
        out.map(3 + spec.notes.is_some() as usize);
        if let Some(notes) = spec.notes {
            out.bulk(b"notes");
            out.bulk(notes.as_bytes());
        }
        out.bulk(b"flags");
        write_key_flags(out, spec.flags);
        out.bulk(b"begin_search");
        out.map(2);
        out.bulk(b"type");
        match spec.begin {
            Begin::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
            }
            Begin::Index(pos) => {
                out.bulk(b"index");
                out.bulk(b"spec");
                out.map(1);
                out.bulk(b"index");
                out.int(pos as i64);
            }
            Begin::Keyword { keyword, startfrom } => {
                out.bulk(b"keyword");
                out.bulk(b"spec");
                out.map(2);
                out.bulk(b"keyword");
                out.bulk(keyword.as_bytes());
                out.bulk(b"startfrom");
                out.int(startfrom as i64);
            }
        }
        out.bulk(b"find_keys");
        out.map(2);
        out.bulk(b"type");
        let fields = match spec.find {
            Find::Unknown => {
                out.bulk(b"unknown");
                out.bulk(b"spec");
                out.map(0);
                continue;
            }
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                out.bulk(b"range");
                [("lastkey", lastkey), ("keystep", keystep), ("limit", limit)]
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                out.bulk(b"keynum");
                [
                    ("keynumidx", keynumidx),
                    ("firstkey", firstkey),
                    ("keystep", keystep),
                ]
            }
        };
        out.bulk(b"spec");
        out.map(3);
        for (name, v) in fields {
            out.bulk(name.as_bytes());
            out.int(v as i64);
        }
    }
}

fn command_getkeys(ctx: &mut Ctx) -> CmdResult {
    getkeys(ctx, false)
}

fn command_getkeysandflags(ctx: &mut Ctx) -> CmdResult {
    getkeys(ctx, true)
}

/// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg ...]: server.c
/// `getKeysSubcommandImpl`, with its checks in its order.
fn getkeys(ctx: &mut Ctx, with_flags: bool) -> CmdResult {
    let argv: Vec<&[u8]> = ctx.args.iter().skip(2).collect();
    let invalid = || Error::Static("ERR Invalid command specified");
    // Redis's (non-strict) lookupCommand: a container's subcommand when one
    // is named, the container itself when it is alone.
    let base = lookup(argv.first().copied().unwrap_or_default()).ok_or_else(invalid)?;
    let (cmd, parent) = match argv.get(1) {
        Some(sub) if !base.subcommands.is_empty() => (
            super::lookup_sub(base, sub).ok_or_else(invalid)?,
            Some(base),
        ),
        _ => (base, None),
    };
    let meta = meta_of(cmd, parent);
    let has_keys = match meta {
        Some(m) => m.has_keys(),
        None => !matches!(cmd.keys, Keys::None | Keys::All),
    };
    if !has_keys {
        return Err(Error::Static("ERR The command has no key arguments"));
    }
    let (arity, argc) = (cmd.arity as i64, argv.len() as i64);
    if (arity > 0 && arity != argc) || argc < -arity {
        return Err(Error::Static(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let mut keys: Vec<(usize, u16)> = Vec::new();
    match meta {
        Some(m) => m.keys(&argv, &mut keys),
        // zwindow's own commands: the table's positions, without flags.
        None => {
            let owned = super::OwnedArgs::from_slices(&argv);
            cmd.key_indices(&owned.args(), |i| keys.push((i, 0)));
        }
    }
    if keys.is_empty() && !cmd.has(NO_MANDATORY_KEYS) {
        return Err(Error::Static("ERR Invalid arguments specified for command"));
    }
    ctx.out.array(keys.len());
    for (i, flags) in keys {
        let key = argv.get(i).copied().unwrap_or_default();
        if with_flags {
            ctx.out.array(2);
            ctx.out.bulk(key);
            write_key_flags(ctx.out, flags);
        } else {
            ctx.out.bulk(key);
        }
    }
    Ok(Done)
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
    Ok(Done)
}

fn command_help(ctx: &mut Ctx) -> CmdResult {
    // Redis 8.0.2's text (`commandCommand`'s help).
    super::observability::reply_help(
        ctx,
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    );
    Ok(Done)
}

fn config_get(ctx: &mut Ctx) -> CmdResult {
    let patterns: Vec<&[u8]> = ctx.args.iter().skip(2).collect();
    let found = ctx.shared.config.get_matching(&patterns);
    ctx.out.map(found.len());
    for (name, value) in found {
        ctx.out.bulk(name.as_bytes());
        ctx.out.bulk(value.as_bytes());
    }
    Ok(Done)
}

fn config_set(ctx: &mut Ctx) -> CmdResult {
    if !ctx.argc().is_multiple_of(2) {
        return Err(Error::Static("ERR syntax error"));
    }
    for i in (2..ctx.argc()).step_by(2) {
        if crate::config::is_sensitive(ctx.args.get(i)) {
            ctx.redact(i + 1);
        }
    }
    let pairs: Vec<(&[u8], &[u8])> = (2..ctx.argc())
        .step_by(2)
        .map(|i| (ctx.args.get(i), ctx.args.get(i + 1)))
        .collect();
    let local = ctx.client.handle.is_local();
    if let Some(refused) = pairs
        .iter()
        .find_map(|(name, _)| ctx.shared.config.protected_refused(name, local))
    {
        return Err(Error::Owned(refused));
    }
    // Redis's DENY_LOADING_CONFIG: settings a load in progress depends on
    // are refused while it runs; appendonly during an asynchronous
    // replica load too.
    let loading = &ctx.shared.persistence.loading;
    let refused = |name: &[u8]| {
        (loading.active() && (eq_ic(name, "dir") || eq_ic(name, "repl-diskless-load")))
            || (loading.asynchronous() && eq_ic(name, "appendonly"))
    };
    if pairs.iter().any(|(name, _)| refused(name)) {
        return Err(Error::Static(crate::persistence::LOADING));
    }
    let aof_was = ctx.shared.config.appendonly();
    ctx.shared.config.set_many(&pairs)?;
    // appendonly's effect (config.c `updateAppendonly`). During a load
    // the setting is only recorded: the load applies it when it ends
    // (Redis 8's `applyAppendOnlyConfig`).
    let aof_now = ctx.shared.config.appendonly();
    let applies = !loading.active();
    if applies && aof_now && !aof_was {
        if let Err(why) = crate::aof::start(ctx.shared.clone(), ctx.ks, ctx.client.in_exec) {
            let _ = ctx.shared.config.set_many(&[(b"appendonly", b"no")]);
            return Err(Error::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {why}"
            )));
        }
    } else if applies && !aof_now && aof_was {
        crate::aof::stop(&**ctx.shared);
    }
    // config.c `updateAofAutoGCEnabled`.
    if pairs
        .iter()
        .any(|(name, _)| crate::util::eq_ic(name, "aof-disable-auto-gc"))
    {
        crate::aof::delete_history_now(&ctx.shared.aof, &ctx.shared.config);
    }
    // config.c `updateSighandlerEnabled`.
    if pairs
        .iter()
        .any(|(name, _)| crate::util::eq_ic(name, "crash-log-enabled"))
    {
        crate::crash::set_enabled(ctx.shared.config.crash_log_enabled());
    }
    if pairs
        .iter()
        .any(|(name, _)| crate::util::eq_ic(name, "use-exit-on-panic"))
    {
        crate::crash::set_exit_on_panic(ctx.shared.config.use_exit_on_panic());
    }
    // requirepass is the default ACL user's password (config.c
    // `updateRequirePass`).
    if pairs
        .iter()
        .any(|(name, _)| crate::util::eq_ic(name, "requirepass"))
    {
        let pass = ctx.shared.config.requirepass();
        ctx.shared.acl.set_default_password(pass.as_deref());
    }
    if pairs.iter().any(|(name, _)| {
        crate::util::eq_ic(name, "maxmemory-clients") || crate::util::eq_ic(name, "maxmemory")
    }) {
        crate::commands::session::evict_clients(ctx.shared, true);
    }
    // `cluster-announce-*` and the flags myself shows apply at once, as
    // Redis's apply functions do (`clusterUpdateMyselfAnnouncedPorts`…).
    if let Some(cluster) = &ctx.shared.cluster
        && pairs
            .iter()
            .any(|(name, _)| name.len() > 8 && name[..8].eq_ignore_ascii_case(b"cluster-"))
    {
        cluster.cron(&ctx.shared.config, crate::clock::system_us() as i64 / 1000);
    }
    ctx.out.ok();
    Ok(Done)
}

fn config_resetstat(ctx: &mut Ctx) -> CmdResult {
    // What Redis's resetServerStats clears (not gauges, not the memory peak).
    ctx.shared.lazyfree.reset_stats();
    crate::util::child::reset_fork_stats();
    ctx.shared.scripting.evicted_scripts.store(0, Relaxed);
    let s = &ctx.shared.stats;
    for c in [
        &s.commands_processed,
        &s.cluster_incompatible_ops,
        &s.net_input_bytes,
        &s.net_output_bytes,
        &s.net_repl_input_bytes,
        &s.net_repl_output_bytes,
        &ctx.shared.replication.sync_full,
        &ctx.shared.replication.sync_partial_ok,
        &ctx.shared.replication.sync_partial_err,
        &s.rejected_connections,
        &s.error_replies,
        &s.dump_payload_sanitizations,
        &s.reads_processed,
        &s.writes_processed,
        &s.reply_buffer_expands,
        &s.reply_buffer_shrinks,
        &ctx.shared.clients.total_connections,
        &ctx.shared.clients.evicted,
        &ctx.shared.clients.output_limit_disconnections,
        &s.query_limit_disconnections,
        &s.el_cycles,
        &s.el_ns,
        &s.el_cron_ns,
        &s.el_aof_ns,
        &s.el_max_ns,
        &s.el_cmds_max,
        &s.el_cmd_usec,
        &ctx.shared.evictor.evicted_keys,
        &ctx.shared.evictor.over_total_ms,
        // INFO's expired_subkeys (Redis resets it as it does expired_keys).
        &ctx.shared.store.stats_expired_fields,
        &ctx.shared.store.stats_expired_members,
    ] {
        c.store(0, Relaxed);
    }
    s.instantaneous.reset();
    s.expire.reset();
    let errors = std::mem::take(&mut *ctx.shared.error_stats.lock());
    ctx.shared.free_error_table(errors);
    for c in all_commands() {
        for cmd in std::iter::once(c).chain(c.subcommands) {
            super::CallStats::of(cmd).reset();
        }
    }
    // Through the keyspace: inside EXEC every shard is already held.
    ctx.ks
        .for_each_shard(|shard| shard.stats = Default::default());
    ctx.out.ok();
    Ok(Done)
}

fn config_rewrite(ctx: &mut Ctx) -> CmdResult {
    rewrite_config(ctx.shared, false).map_err(Error::Owned)?;
    ctx.out.ok();
    Ok(Done)
}

/// `CONFIG REWRITE`'s work: also how a cluster node keeps the window
/// rules the cluster shares in its config file.
pub(crate) fn rewrite_config(shared: &Services, force_all: bool) -> Result<(), String> {
    let rules = shared.windows.list();
    // With an ACL file the users live there: the config keeps no `user` line.
    let users: Vec<Vec<u8>> = if shared.config.aclfile.is_empty() {
        shared
            .acl
            .file_text()
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        Vec::new()
    };
    shared.config.rewrite(&rules, &users, force_all)
}

fn config_help(ctx: &mut Ctx) -> CmdResult {
    // Redis 8.0.2's text (`configCommand`'s help).
    super::observability::reply_help(
        ctx,
        &[
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
        ],
    );
    Ok(Done)
}

fn dbsize(ctx: &mut Ctx) -> CmdResult {
    let n: usize = ctx.ks.dbs_mut().map(|d| d.keys.len()).sum();
    ctx.out.int(n as i64);
    Ok(Done)
}

/// Whether the flush asked for is ASYNC: the argument, else
/// `lazyfree-lazy-user-flush` (Redis's `getFlushCommandFlags`).
fn flush_mode(ctx: &Ctx) -> Result<bool, Error> {
    match ctx.argc() {
        1 => Ok(ctx.shared.config.lazyfree_lazy_user_flush()),
        2 if eq_ic(ctx.arg(1), "ASYNC") => Ok(true),
        2 if eq_ic(ctx.arg(1), "SYNC") => Ok(false),
        _ => Err(Error::Syntax),
    }
}

/// How a flush frees what it removes (Redis's `flushCommandCommon`): a
/// SYNC flush from a client that may block runs as an ASYNC one whose
/// client waits for the lazyfree thread (Redis 7.4+), so the server goes
/// on serving meanwhile; inside MULTI or a script it frees in place.
#[derive(Clone, Copy, PartialEq)]
enum Freeing {
    InPlace,
    Async,
    Blocking,
}

fn freeing(ctx: &Ctx, is_async: bool) -> Freeing {
    if is_async {
        Freeing::Async
    } else if ctx.client.can_block() && !ctx.client.master {
        Freeing::Blocking
    } else {
        Freeing::InPlace
    }
}

/// Empties one database in every (locked) shard, invalidating WATCHes on
/// keys that existed, as Redis 7.0's `signalFlushedDb` does. The watchers
/// are touched after the flush so that one that saw its key already expired
/// takes the deletion as no change, as Redis does. Lazily, the database's
/// tables go to the lazyfree thread, counting its keys (Redis's
/// `emptyDbAsync`). Returns how many keys went (Redis's `emptyData`, each
/// a change).
fn flush_db(ctx: &mut Ctx, db: usize, lazy: bool) -> u64 {
    let mut gone = Vec::new();
    let mut taken = Vec::new();
    let mut removed = 0u64;
    for shard in ctx.ks.shards_mut() {
        // Waiters on flushed keys are looked at again: some fail when their
        // key goes away (XREADGROUP).
        gone.extend(
            shard
                .blocked
                .keys()
                .filter(|(d, k)| *d == db && shard.dbs[db].keys.contains_key(k))
                .cloned(),
        );
        let existed: Vec<_> = shard
            .watched
            .keys()
            .filter(|(d, k)| *d == db && shard.dbs[db].keys.contains_key(k))
            .cloned()
            .collect();
        shard.cow_db(db);
        removed += shard.dbs[db].keys.len() as u64;
        if lazy {
            let mut old = std::mem::take(&mut shard.dbs[db]);
            // The histograms' allocation stays with the database.
            shard.dbs[db].sizes = std::mem::take(&mut old.sizes);
            shard.dbs[db].sizes.clear();
            taken.push(old);
        } else {
            shard.dbs[db].clear();
        }
        shard.schedule.clear_db(db);
        for (d, k) in existed {
            shard.touch_watched(d, &k);
        }
    }
    if lazy {
        ctx.shared.lazyfree.free(Box::new(taken), removed as usize);
    }
    ctx.ks.db_emptied(db);
    ctx.ks.ready.extend(gone);
    removed
}

/// The flush's answer: OK now, or OK once the lazyfree thread is done with
/// everything handed to it so far (Redis's `flushallSyncBgDone`).
fn flush_reply(ctx: &mut Ctx, freeing: Freeing) -> CmdResult {
    ctx.out.ok();
    if freeing != Freeing::Blocking {
        return Ok(Done);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    ctx.shared.lazyfree.when_done(move || {
        let _ = tx.send(());
    });
    Ok(super::Outcome::AwaitFree(rx))
}

fn flushdb(ctx: &mut Ctx) -> CmdResult {
    let freeing = freeing(ctx, flush_mode(ctx)?);
    let removed = flush_db(ctx, ctx.client.db, freeing != Freeing::InPlace);
    ctx.ks.dirty(removed);
    ctx.ks.invalidate_tracking_all();
    // Logged even when the database was empty, as Redis does.
    ctx.force_propagation();
    flush_reply(ctx, freeing)
}

fn flushall(ctx: &mut Ctx) -> CmdResult {
    let freeing = freeing(ctx, flush_mode(ctx)?);
    let mut removed = 0;
    for db in 0..ctx.shared.store.databases {
        removed += flush_db(ctx, db, freeing != Freeing::InPlace);
    }
    ctx.ks.dirty(removed);
    ctx.ks.invalidate_tracking_all();
    // A BGSAVE to the file running meanwhile is of the data just flushed:
    // it is stopped, and never replaces the file (Redis kills its child).
    // With save points set, the empty dataset is saved at once, so that a
    // restart does not bring back what was flushed (Redis's
    // `flushAllDataAndResetRDB`; the change counter starts again from 0).
    let p = &ctx.shared.persistence;
    if p.bgsave_in_progress.load(Relaxed) && p.bgsave_to_file.load(Relaxed) {
        p.bgsave_abort.store(true, Relaxed);
    }
    if !ctx.shared.config.save_points().is_empty() {
        let _ = crate::persistence::save_locked(&**ctx.shared, ctx.ks);
    }
    ctx.force_propagation();
    flush_reply(ctx, freeing)
}

/// MONITOR: from now on the client receives a line per command run
/// ([`crate::execution::monitor`]). Refused inside EXEC, as Redis refuses it
/// to a client that must get one reply per command; a second MONITOR
/// answers nothing, as in Redis.
fn monitor(ctx: &mut Ctx) -> CmdResult {
    if ctx.client.in_exec {
        return Err(Error::Static(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    if ctx.shared.monitors.add(&ctx.client.handle) {
        ctx.out.ok();
    }
    Ok(Done)
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
    Ok(Done)
}

/// WAIT numreplicas timeout: zwindow is always a master without replicas,
/// so no write is ever acknowledged and the answer is 0 at once (Redis also
/// answers at once when numreplicas is already met, as 0 is).
fn wait(ctx: &mut Ctx) -> CmdResult {
    let repl = &ctx.shared.replication;
    if repl.is_replica() {
        return Err(Error::Static(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.",
        ));
    }
    let replicas = int_arg(&ctx.args[1])?;
    let timeout = super::parse_ms_timeout(&ctx.args[2], ctx.shared.clock.now_ms())?;
    let offset = ctx.client.woff;
    let acked = repl.acked_count(offset);
    if acked as i64 >= replicas || !ctx.client.can_block() {
        ctx.out.int(acked as i64);
        return Ok(Done);
    }
    Ok(super::Outcome::WaitAcks(super::WaitAcks {
        offset,
        replicas: replicas as usize,
        timeout: (timeout > 0).then(|| std::time::Duration::from_millis(timeout as u64)),
        aof: None,
    }))
}

/// WAITAOF numlocal numreplicas timeout (replication.c `waitaofCommand`):
/// waits until this server's AOF (numlocal 1) and `numreplicas` replicas'
/// (their ACKs' FACK) have fsynced the client's last write; answers
/// [local, replicas] acknowledging it. Never waits in EXEC or a script.
fn waitaof(ctx: &mut Ctx) -> CmdResult {
    let numlocal = match parse_i64(&ctx.args[1]) {
        None => return Err(Error::NotInteger),
        Some(n) if !(0..=1).contains(&n) => {
            return Err(Error::Static(
                "ERR value is out of range, value must between 0 and 1",
            ));
        }
        Some(n) => n,
    };
    // getPositiveLongFromObjectOrReply: one text for both failures.
    let replicas = parse_i64(&ctx.args[2])
        .filter(|&n| n >= 0)
        .ok_or(Error::Static("ERR value is out of range, must be positive"))?;
    let timeout = super::parse_ms_timeout(&ctx.args[3], ctx.shared.clock.now_ms())?;
    let repl = &ctx.shared.replication;
    if repl.is_replica() {
        return Err(Error::Static(
            "ERR WAITAOF cannot be used with replica instances. Please also note that writes to replicas are just local and are not propagated.",
        ));
    }
    if numlocal > 0 && !ctx.shared.config.appendonly() {
        return Err(Error::Static(
            "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
        ));
    }
    let (offset, position) = (ctx.client.woff, ctx.client.aof_woff);
    let acked = repl.aof_acked_count(offset);
    let local = ctx.shared.aof.fsynced(position);
    if (acked as i64 >= replicas && (local || numlocal == 0)) || !ctx.client.can_block() {
        ctx.out.array(2);
        ctx.out.int(i64::from(local));
        ctx.out.int(acked as i64);
        return Ok(Done);
    }
    Ok(super::Outcome::WaitAcks(super::WaitAcks {
        offset,
        replicas: replicas as usize,
        timeout: (timeout > 0).then(|| std::time::Duration::from_millis(timeout as u64)),
        aof: Some(super::WaitAof {
            local: numlocal > 0,
            position,
        }),
    }))
}

/// ROLE: `master`, its offset and its online replicas (ip, port, acked
/// offset); or `slave`, its primary, the link's state and its offset.
fn role(ctx: &mut Ctx) -> CmdResult {
    use crate::replication::{LinkState, ReplicaState};
    let f = ctx.shared.replication.figures();
    let out = &mut *ctx.out;
    if let Some(p) = &f.primary {
        out.array(5);
        out.bulk(b"slave");
        out.bulk(p.host.as_bytes());
        out.int(i64::from(p.port));
        let state = match f.link {
            LinkState::Connect => "connect",
            LinkState::Connecting => "connecting",
            LinkState::Handshake => "handshake",
            LinkState::Transfer => "sync",
            LinkState::Connected => "connected",
        };
        out.bulk(state.as_bytes());
        let offset = if f.link == LinkState::Connected {
            f.offset as i64
        } else {
            -1
        };
        out.int(offset);
        return Ok(Done);
    }
    let online: Vec<_> = f
        .replicas
        .iter()
        .filter(|r| r.state() == ReplicaState::Online)
        .collect();
    out.array(3);
    out.bulk(b"master");
    out.int(f.offset as i64);
    out.array(online.len());
    for r in online {
        let ip = r.shown_ip();
        out.array(3);
        out.bulk(ip.as_bytes());
        out.bulk(r.port.load(Relaxed).to_string().as_bytes());
        out.bulk(r.ack_offset.load(Relaxed).to_string().as_bytes());
    }
    Ok(Done)
}

/// LOLWUT [VERSION v]: Redis 7.0 answers versions other than 5 and 6 (its
/// default is 7) with the bare version line; the art of 5 and 6 is not
/// drawn here, they get the same line.
fn lastsave(ctx: &mut Ctx) -> CmdResult {
    ctx.out
        .int(ctx.shared.persistence.last_save.load(Relaxed) as i64);
    Ok(Done)
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: saves first when asked
/// to or when save points exist (unless NOSAVE); a failed save keeps the
/// server running unless FORCE. A primary whose replicas have not
/// acknowledged every write waits for them first, up to
/// `shutdown-timeout`, unless NOW: the client waits with it, and is told
/// the shutdown failed if SHUTDOWN ABORT ends the wait.
fn shutdown(ctx: &mut Ctx) -> CmdResult {
    let mut flags = Flags::default();
    let mut abort = false;
    for a in ctx.args.iter().skip(1) {
        let flag = if eq_ic(a, "SAVE") {
            &mut flags.save
        } else if eq_ic(a, "NOSAVE") {
            &mut flags.nosave
        } else if eq_ic(a, "NOW") {
            &mut flags.now
        } else if eq_ic(a, "FORCE") {
            &mut flags.force
        } else if eq_ic(a, "ABORT") {
            &mut abort
        } else {
            return Err(Error::Syntax);
        };
        *flag = true;
    }
    if (flags.save && flags.nosave) || (abort && flags != Flags::default()) {
        return Err(Error::Syntax);
    }
    let shared = ctx.shared.clone();
    if abort {
        if !cancel_shutdown(&shared) {
            return Err(Error::Static("ERR No shutdown in progress."));
        }
        tracing::info!("Shutdown manually aborted.");
        ctx.out.ok();
        return Ok(Done);
    }
    if !flags.now && ctx.client.in_exec {
        return Err(Error::Static(
            "ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    // Redis's shutdownCommand: a script past busy-reply-threshold holds
    // the server, and only SHUTDOWN NOSAVE may end it.
    let busy = &shared.scripting.busy;
    if !flags.nosave
        && busy.running_for_other(ctx.client.handle.id)
        && busy.elapsed_ms() >= shared.config.busy_reply_threshold()
    {
        return Err(Error::Static(if busy.is_function() {
            crate::commands::lua::BUSY_FUNCTION
        } else {
            crate::commands::lua::BUSY_EVAL
        }));
    }
    // While the dataset loads nothing is saved: a half-loaded dataset must
    // not replace the file (Redis's `prepareForShutdown`).
    if shared.persistence.loading.active() {
        (flags.save, flags.nosave) = (false, true);
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    // One waiting already (a signal's, another SHUTDOWN's): this client
    // waits with it, its flags unchanged, as Redis blocks it.
    let tx = match shared.shutdown.join(tx) {
        Ok(()) => return Ok(super::Outcome::AwaitShutdown(rx)),
        Err(tx) => tx,
    };
    if begin_shutdown_wait(&shared, flags, Some(tx)) {
        return Ok(super::Outcome::AwaitShutdown(rx));
    }
    if finish_shutdown(&shared, flags).is_err() {
        return Err(Error::Static("ERR Errors trying to SHUTDOWN. Check logs."));
    }
    // Like Redis, a successful SHUTDOWN answers nothing: the connection closes.
    shared.stop.notify_one();
    Ok(Outcome::Close)
}

/// Redis's `prepareForShutdown` up to the wait: a primary with a replica
/// that has not acknowledged every write (`isReadyToShutdown`) holds
/// writes, asks its replicas for their offsets and waits, unless NOW or
/// `shutdown-timeout 0`. True when the wait has begun (the server ends
/// it: `server.rs`), false when the shutdown may finish at once.
pub(crate) fn begin_shutdown_wait(
    shared: &Services,
    flags: Flags,
    waiter: Option<tokio::sync::oneshot::Sender<()>>,
) -> bool {
    let timeout = shared.config.shutdown_timeout();
    if flags.now || timeout == 0 || replicas_in_sync(shared) {
        return false;
    }
    let deadline = shared.clock.now_ms() + timeout.saturating_mul(1000);
    if !shared.shutdown.begin(flags, deadline, waiter) {
        return false;
    }
    shared
        .replication
        .feed_command(&[b"REPLCONF", b"GETACK", b"*"]);
    shared.pause.hold_writes_for_shutdown(true);
    tracing::info!("Waiting for replicas before shutting down.");
    true
}

/// Redis's `finishShutdown` for a shutdown that does not wait (SHUTDOWN,
/// or a signal's): the final save, with writes held meanwhile so nothing
/// acknowledged after it is lost (Redis runs nothing else while it
/// saves), and let go again if the save fails and the server runs on.
pub(crate) fn finish_shutdown(shared: &Services, flags: Flags) -> Result<(), String> {
    shared.pause.hold_writes_for_shutdown(true);
    let saved = save_for_shutdown(shared, flags);
    if let Err(e) = &saved {
        tracing::warn!("{e}");
        tracing::warn!(
            "Errors trying to shut down the server. Check the logs for more information."
        );
        shared.pause.hold_writes_for_shutdown(false);
    }
    saved
}

/// Every replica acknowledged the whole stream (Redis's
/// `isReadyToShutdown`); true without replicas.
pub(crate) fn replicas_in_sync(shared: &Services) -> bool {
    let repl = &shared.replication;
    let offset = repl.offset();
    repl.replicas()
        .iter()
        .all(|r| r.ack_offset.load(Relaxed) == offset)
}

/// The end of a wait that does not exit (SHUTDOWN ABORT, a failed save):
/// writes flow again, its SHUTDOWN clients are told it failed.
pub(crate) fn cancel_shutdown(shared: &Services) -> bool {
    if !shared.shutdown.cancel() {
        return false;
    }
    shared.pause.hold_writes_for_shutdown(false);
    true
}

/// The first part of Redis's `finishShutdown`: a line per replica that is
/// still behind, and how many are in sync.
pub(crate) fn log_replicas_at_shutdown(shared: &Services) {
    let repl = &shared.replication;
    let offset = repl.offset();
    let now_ms = shared.clock.now_ms();
    let replicas = repl.replicas();
    let mut lagging = 0;
    for r in &replicas {
        let acked = r.ack_offset.load(Relaxed);
        if acked == offset {
            continue;
        }
        lagging += 1;
        tracing::info!(
            "Lagging replica {}:{} reported offset {} behind master, lag={}, state={}.",
            r.shown_ip(),
            r.port.load(Relaxed),
            offset.saturating_sub(acked),
            r.lag_secs(now_ms / 1000),
            r.state().name()
        );
    }
    if !replicas.is_empty() {
        tracing::info!(
            "{} of {} replicas are in sync when shutting down.",
            replicas.len() - lagging,
            replicas.len()
        );
    }
}

/// The save a shutdown makes (`finishShutdown`): with SAVE, or when save
/// points exist and not NOSAVE. An error unless it was written or FORCE
/// lets the server exit anyway; either way later saves on the way out
/// are skipped.
pub(crate) fn save_for_shutdown(shared: &Services, flags: Flags) -> Result<(), String> {
    if shared.persistence.shutdown_handled.load(Relaxed) {
        return Ok(());
    }
    // An AOF turned on whose first rewrite is still running holds no
    // dataset yet: exiting now would lose it.
    if shared.aof.waiting_first_rewrite() {
        if !flags.force {
            return Err("Writing initial AOF, can't exit.".into());
        }
        tracing::warn!("Writing initial AOF. Exit anyway.");
    }
    // A BGSAVE's child is stopped, its temp file removed (the save below,
    // if any, is the newer one); the AOF is written out before the RDB.
    crate::persistence::kill_bgsave_for_shutdown(&shared.persistence);
    shared.aof.flush_all();
    if flags.save || (!flags.nosave && !shared.config.save_points().is_empty()) {
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = crate::persistence::save_all(shared) {
            if !flags.force {
                return Err(format!("Error trying to save the DB, can't exit: {e}"));
            }
            tracing::warn!("Error trying to save the DB. Exit anyway.");
        }
    }
    // The manifest notes where the incremental file ends (Redis's
    // `updateCurIncrAofEndOffset`), before the connection closes.
    crate::aof::close_incr(shared);
    shared.persistence.shutdown_handled.store(true, Relaxed);
    Ok(())
}

fn swapdb(ctx: &mut Ctx) -> CmdResult {
    // A cluster node has database 0 only.
    if ctx.shared.cluster.is_some() {
        return Err(Error::Static("ERR SWAPDB is not allowed in cluster mode"));
    }
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
        shard.cow_db(a);
        shard.cow_db(b);
        shard.dbs.swap(a, b);
        shard.schedule.clear_db(a);
        shard.schedule.clear_db(b);
        if a != b {
            for (d, k, existed) in touched {
                shard.touch_swapped(d, &k, existed, now);
            }
        }
        // Every waiter of either database is looked at again: a key that
        // arrived may serve it, and one that left fails the waiters that
        // fail on a gone key (XREADGROUP), as Redis 7.0's SWAPDB does.
        for (d, k) in shard.blocked.keys() {
            if *d == a || *d == b {
                ready.push((*d, k.clone()));
            }
        }
    }
    ctx.ks.ready.extend(ready);
    if a != b {
        ctx.ks.db_replaced(a);
        ctx.ks.db_replaced(b);
    }
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
            crate::keyspace::windows::reschedule(ctx.ks, &k);
        }
    }
    ctx.ks.db = db;
    ctx.ks.dirty(1);
    ctx.shared
        .stats
        .cluster_incompatible_ops
        .fetch_add(1, Relaxed);
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}
