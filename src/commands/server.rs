//! Server commands: COMMAND, INFO (whose text `info.rs` builds), CONFIG,
//! DBSIZE, FLUSHDB, FLUSHALL, TIME, SHUTDOWN, LASTSAVE, SWAPDB (MEMORY's
//! subcommands are in `memory.rs`, DEBUG's in `debug.rs`).

use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::flags::*;
use super::{
    CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, all_commands, docs, int_arg,
    lookup,
};
use crate::protocol::Reply;
use crate::util::{eq_ic, glob_match, parse_i64};

const G: &str = "server";

pub static COMMANDS: &[Command] = &[
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
    Command::new("wait", 3, NOSCRIPT, Keys::None, &(wait as Handler))
        .doc(G, "3.0.0", "O(1)", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.")
        .syntax("numreplicas timeout"),
    Command::new("role", 1, NOSCRIPT | LOADING | STALE | FAST, Keys::None, &(role as Handler))
        .doc(G, "2.8.12", "O(1)", "Returns the replication role."),
    Command::new("lolwut", -1, READONLY | FAST, Keys::None, &(lolwut as Handler))
        .doc(G, "5.0.0", "", "Displays computer art and the Redis version")
        .syntax("[VERSION version]"),
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
        -4,
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
        -4,
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
// Redis's command metadata (COMMAND INFO, GETKEYS, GETKEYSANDFLAGS)
// ---------------------------------------------------------------------------

/// What redis-server 7.0.15 reports about one of its commands beyond its
/// name, arity and flags; [`meta::META`](super::meta::META) holds one per
/// command and subcommand, generated from Redis's own command JSON files.
pub(crate) struct Meta {
    /// `parent|sub` for subcommands.
    pub(crate) name: &'static str,
    /// Only the test holding zwindow's table to Redis's reads this and
    /// `flags`: replies print the table's own.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) arity: i32,
    /// Every flag Redis declares, hidden ones included (lowercase).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) flags: &'static [&'static str],
    pub(crate) movablekeys: bool,
    /// The legacy (first, last, step) as COMMAND INFO prints it.
    pub(crate) range: [i32; 3],
    /// `@category` names, in the order Redis prints them.
    pub(crate) acl: &'static [&'static str],
    pub(crate) tips: &'static [&'static str],
    pub(crate) getkeys: Option<GetKeysProc>,
    pub(crate) key_specs: &'static [KeySpec],
}

/// One key spec (server.h `keySpec`).
pub(crate) struct KeySpec {
    pub(crate) notes: Option<&'static str>,
    /// [`ks`] bits.
    pub(crate) flags: u16,
    pub(crate) begin: Begin,
    pub(crate) find: Find,
}

/// Where a key spec starts looking.
pub(crate) enum Begin {
    Unknown,
    Index(i32),
    /// The argument after `keyword`, searched from `startfrom` (backwards
    /// from the end when negative).
    Keyword {
        keyword: &'static str,
        startfrom: i32,
    },
}

/// How a key spec finds its keys from where it starts.
pub(crate) enum Find {
    Unknown,
    Range {
        lastkey: i32,
        keystep: i32,
        limit: i32,
    },
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    },
}

/// Redis's key-spec flags (`CMD_KEY_*`).
pub(crate) mod ks {
    pub(crate) const RO: u16 = 1 << 0;
    pub(crate) const RW: u16 = 1 << 1;
    pub(crate) const OW: u16 = 1 << 2;
    pub(crate) const RM: u16 = 1 << 3;
    pub(crate) const ACCESS: u16 = 1 << 4;
    pub(crate) const UPDATE: u16 = 1 << 5;
    pub(crate) const INSERT: u16 = 1 << 6;
    pub(crate) const DELETE: u16 = 1 << 7;
    pub(crate) const NOT_KEY: u16 = 1 << 8;
    pub(crate) const INCOMPLETE: u16 = 1 << 9;
    pub(crate) const VARIABLE_FLAGS: u16 = 1 << 10;

    /// In the order Redis prints them (server.c `addReplyFlagsForKeyArgs`).
    pub(crate) const NAMES: [(u16, &str); 11] = [
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// db.c's getkeys procs, which find keys where the key specs cannot (or
/// cannot flag them): named after Redis's functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GetKeysProc {
    Sintercard,
    ZunionInterDiffStore,
    ZunionInterDiff,
    Eval,
    Function,
    Lmpop,
    Blmpop,
    Zmpop,
    SortRo,
    Sort,
    Migrate,
    Georadius,
    Xread,
    Set,
    Bitfield,
}

/// acl.c `ACLCommandCategories`: the order categories print in.
pub(crate) const ACL_ORDER: [&str; 21] = [
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

/// Redis's metadata of a table entry, if redis-server has that command.
pub(crate) fn meta_of(c: &Command, parent: Option<&Command>) -> Option<&'static Meta> {
    let meta = super::meta::META;
    let (p, sep): (&[u8], &[u8]) = match parent {
        Some(p) => (p.name.as_bytes(), b"|"),
        None => (b"", b""),
    };
    let want = || p.iter().chain(sep).chain(c.name.as_bytes()).copied();
    let find = |meta: &'static [Meta]| {
        meta.binary_search_by(|m| m.name.bytes().cmp(want()))
            .ok()
            .map(|i| &meta[i])
    };
    // Redis 7.0's, else the newer Redis's for commands 7.0 lacks.
    find(meta).or_else(|| find(super::meta_later::META_LATER))
}

/// A command's ACL categories, in Redis's order: Redis's own for its
/// commands; for zwindow's own, what Redis derives for a command declared
/// with only its group's category (server.c `setImplicitACLCategories`).
pub(crate) fn categories(
    c: &'static Command,
    meta: Option<&'static Meta>,
) -> impl Iterator<Item = &'static str> {
    let group = match c.group {
        "generic" => "@keyspace",
        "string" => "@string",
        "list" => "@list",
        "set" => "@set",
        "sorted-set" => "@sortedset",
        "hash" => "@hash",
        "pubsub" => "@pubsub",
        "connection" => "@connection",
        "transactions" => "@transaction",
        "scripting" => "@scripting",
        _ => "",
    };
    let implied = move |cat: &str| match cat {
        "@write" => c.has(WRITE),
        "@read" => c.has(READONLY) && group != "@scripting",
        "@admin" | "@dangerous" => c.has(ADMIN),
        "@pubsub" => c.has(PUBSUB) || group == cat,
        "@fast" => c.has(FAST),
        "@slow" => !c.has(FAST),
        "@blocking" => c.has(BLOCKING),
        _ => group == cat,
    };
    let own = ACL_ORDER
        .iter()
        .copied()
        .filter(move |cat| meta.is_none() && implied(cat));
    meta.map_or(&[][..], |m| m.acl).iter().copied().chain(own)
}

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
            Keys::NumKeys { .. } | Keys::Script { .. } | Keys::Streams
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

impl Meta {
    /// db.c `doesCommandHaveKeys`.
    pub(crate) fn has_keys(&self) -> bool {
        self.getkeys.is_some() || self.key_specs.iter().any(|s| s.flags & ks::NOT_KEY == 0)
    }

    /// db.c `getKeysFromCommandWithSpecs`: (argument index, key-spec flags)
    /// of each key of `argv` (the command's own arguments, name first).
    /// The key specs answer when they are reliable; otherwise, or when they
    /// fail on these arguments, the command's getkeys proc does.
    pub(crate) fn keys(&self, argv: &[&[u8]], out: &mut Vec<(usize, u16)>) {
        let specs = self.key_specs;
        let has_keyspec = specs.iter().any(|s| s.flags & ks::NOT_KEY == 0);
        let variable = specs.iter().any(|s| s.flags & ks::VARIABLE_FLAGS != 0);
        if has_keyspec && !variable && keys_from_specs(specs, argv, out) {
            return;
        }
        out.clear();
        if let Some(p) = self.getkeys {
            p.keys(argv, out);
        }
    }
}

/// db.c `getKeysUsingKeySpecs` with the default search flags: `false`
/// where Redis returns -1 (an unknown or incomplete spec, or arguments the
/// spec cannot make sense of).
fn keys_from_specs(specs: &[KeySpec], argv: &[&[u8]], out: &mut Vec<(usize, u16)>) -> bool {
    // i64 throughout: Redis's int arithmetic never overflows on real
    // argument counts, and here nothing client-given can overflow either.
    let argc = argv.len() as i64;
    for spec in specs {
        if spec.flags & ks::NOT_KEY != 0 {
            continue;
        }
        let first = match spec.begin {
            Begin::Index(pos) => pos as i64,
            Begin::Keyword { keyword, startfrom } => {
                let startfrom = startfrom as i64;
                let (start, end) = if startfrom > 0 {
                    (startfrom, argc - 1)
                } else {
                    (argc + startfrom, 1)
                };
                let mut found = 0;
                let mut i = start;
                while i != end && (1..argc).contains(&i) {
                    if argv[i as usize].eq_ignore_ascii_case(keyword.as_bytes()) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            Begin::Unknown => return false,
        };
        let (first, last, step) = match spec.find {
            Find::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let (lastkey, limit) = (lastkey as i64, limit as i64);
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, keystep as i64)
            }
            Find::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                // Redis checks the relative index against argc.
                if keynumidx as i64 >= argc {
                    return false;
                }
                let at = usize::try_from(first + keynumidx as i64).ok();
                let numkeys = at.and_then(|at| argv.get(at)).and_then(|a| parse_i64(a));
                let Some(numkeys) = numkeys.filter(|&n| n >= 0) else {
                    return false;
                };
                let first = first + firstkey as i64;
                // Redis takes `(int)numkeys`.
                (first, first + (numkeys as i32) as i64 - 1, keystep as i64)
            }
            Find::Unknown => return false,
        };
        if last >= argc || last < first || first >= argc {
            return false;
        }
        let mut i = first;
        while i <= last {
            out.push((i as usize, spec.flags));
            i += step.max(1);
        }
        if spec.flags & ks::INCOMPLETE != 0 {
            return false;
        }
    }
    true
}

/// C's `atoi` (what Redis's genericGetKeys parses numkeys with): leading
/// whitespace, a sign, digits up to the first non-digit; out of range
/// saturates as `strtol` does, then truncates to `int`.
pub(crate) fn c_atoi(s: &[u8]) -> i32 {
    let mut rest = s;
    while let [b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r', tail @ ..] = rest {
        rest = tail;
    }
    let neg = rest.first() == Some(&b'-');
    if let [b'-' | b'+', tail @ ..] = rest {
        rest = tail;
    }
    let mut v: i128 = 0;
    for &d in rest.iter().take_while(|d| d.is_ascii_digit()) {
        v = (v * 10 + (d - b'0') as i128).min(i64::MAX as i128 + 1);
    }
    let v = if neg { -v } else { v };
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64 as i32
}

impl GetKeysProc {
    /// The keys of `argv` as Redis's proc finds them.
    fn keys(self, argv: &[&[u8]], out: &mut Vec<(usize, u16)>) {
        use GetKeysProc::*;
        use ks::*;
        let arg = |i: usize| argv.get(i).copied().unwrap_or_default();
        let argc = argv.len();
        match self {
            Sintercard | ZunionInterDiff | Lmpop | Zmpop => generic_keys(0, 1, 2, 1, argv, out),
            ZunionInterDiffStore => generic_keys(1, 2, 3, 1, argv, out),
            Eval | Function | Blmpop => generic_keys(0, 2, 3, 1, argv, out),
            SortRo => out.push((1, RO | ACCESS)),
            Sort => {
                out.push((1, RO | ACCESS));
                // The last STORE wins; LIMIT, GET and BY skip their
                // arguments, anything else is taken as a lone option.
                let mut store = None;
                let mut i = 2;
                while i < argc {
                    if eq_ic(arg(i), "limit") {
                        i += 2;
                    } else if eq_ic(arg(i), "store") && i + 1 < argc {
                        store = Some(i + 1);
                    } else if eq_ic(arg(i), "get") || eq_ic(arg(i), "by") {
                        i += 1;
                    }
                    i += 1;
                }
                out.extend(store.map(|s| (s, OW | UPDATE)));
            }
            Migrate => {
                let (mut first, mut num) = (3, 1);
                let mut i = 6;
                while argc > 6 && i < argc {
                    if eq_ic(arg(i), "keys") {
                        if arg(3).is_empty() {
                            first = i + 1;
                            num = argc - first;
                        } else {
                            // A syntax error MIGRATE itself reports.
                            num = 0;
                        }
                        break;
                    }
                    if eq_ic(arg(i), "auth") {
                        i += 1;
                    } else if eq_ic(arg(i), "auth2") {
                        i += 2;
                    }
                    i += 1;
                }
                out.extend((first..first + num).map(|i| (i, RW | ACCESS | DELETE)));
            }
            Georadius => {
                out.push((1, 0));
                let mut stored = None;
                let mut i = 5;
                while i < argc {
                    if (eq_ic(arg(i), "store") || eq_ic(arg(i), "storedist")) && i + 1 < argc {
                        stored = Some(i + 1);
                        i += 1;
                    }
                    i += 1;
                }
                out.extend(stored.map(|s| (s, 0)));
            }
            Xread => {
                let mut streams = None;
                let mut i = 1;
                while i < argc {
                    let a = arg(i);
                    if eq_ic(a, "block") || eq_ic(a, "count") {
                        i += 1;
                    } else if eq_ic(a, "group") {
                        i += 2;
                    } else if eq_ic(a, "streams") {
                        streams = Some(i);
                        break;
                    } else if !eq_ic(a, "noack") {
                        break;
                    }
                    i += 1;
                }
                let Some(at) = streams else { return };
                let num = argc - at - 1;
                if num == 0 || !num.is_multiple_of(2) {
                    return;
                }
                out.extend((at + 1..argc - num / 2).map(|i| (i, 0)));
            }
            Set => {
                // Exactly GET, as a C string (a NUL ends it).
                let is_get = |a: &[u8]| {
                    a.len() >= 3
                        && a[..3].eq_ignore_ascii_case(b"get")
                        && a.get(3).is_none_or(|&b| b == 0)
                };
                let flags = if argv.iter().skip(3).any(|a| is_get(a)) {
                    RW | ACCESS | UPDATE
                } else {
                    OW | UPDATE
                };
                out.push((1, flags));
            }
            Bitfield => {
                let mut readonly = true;
                let mut i = 2;
                while i < argc {
                    let rem = argc - i - 1;
                    let a = arg(i);
                    if eq_ic(a, "get") && rem >= 2 {
                        i += 2;
                    } else if (eq_ic(a, "set") || eq_ic(a, "incrby")) && rem >= 3 {
                        readonly = false;
                        break;
                    } else if eq_ic(a, "overflow") && rem >= 1 {
                        i += 1;
                    } else {
                        // A syntax error: safer to assume a write.
                        readonly = false;
                        break;
                    }
                    i += 1;
                }
                out.push((
                    1,
                    if readonly {
                        RO | ACCESS
                    } else {
                        RW | ACCESS | UPDATE
                    },
                ));
            }
        }
    }
}

/// db.c `genericGetKeys`: `numkeys` keys (atoi-parsed, as Redis does) from
/// `first`, and the destination key, if any, after them. No flags.
fn generic_keys(
    store: usize,
    count_at: usize,
    first: usize,
    step: usize,
    argv: &[&[u8]],
    out: &mut Vec<(usize, u16)>,
) {
    let num = c_atoi(argv.get(count_at).copied().unwrap_or_default());
    if num < 1 || num as usize > (argv.len().saturating_sub(first)) / step {
        return;
    }
    out.extend((0..num as usize).map(|i| (first + i * step, 0)));
    if store != 0 {
        out.push((store, 0));
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
    Ok(Done)
}

fn command_help(ctx: &mut Ctx) -> CmdResult {
    help(ctx, "COMMAND", COMMAND);
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
    let aof_was = ctx.shared.config.appendonly();
    ctx.shared.config.set_many(&pairs)?;
    // appendonly's effect (config.c `updateAppendonly`).
    let aof_now = ctx.shared.config.appendonly();
    if aof_now && !aof_was {
        if let Err(why) = crate::aof::start(ctx.shared, ctx.ks) {
            let _ = ctx.shared.config.set_many(&[(b"appendonly", b"no")]);
            return Err(Error::Owned(format!(
                "ERR CONFIG SET failed (possibly related to argument 'appendonly') - {why}"
            )));
        }
    } else if !aof_now && aof_was {
        crate::aof::stop(ctx.shared);
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
        crate::execution::client::evict_clients(ctx.shared, true);
    }
    ctx.out.ok();
    Ok(Done)
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
        &ctx.shared.clients.evicted,
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
    Ok(Done)
}

fn config_rewrite(ctx: &mut Ctx) -> CmdResult {
    let rules = ctx.shared.windows.list();
    // With an ACL file the users live there: the config keeps no `user` line.
    let users: Vec<Vec<u8>> = if ctx.shared.config.aclfile.is_empty() {
        ctx.shared
            .acl
            .file_text()
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        Vec::new()
    };
    ctx.shared
        .config
        .rewrite(&rules, &users)
        .map_err(Error::Owned)?;
    ctx.out.ok();
    Ok(Done)
}

fn config_help(ctx: &mut Ctx) -> CmdResult {
    help(ctx, "CONFIG", CONFIG);
    Ok(Done)
}

fn dbsize(ctx: &mut Ctx) -> CmdResult {
    let n: usize = ctx.ks.dbs_mut().map(|d| d.keys.len()).sum();
    ctx.out.int(n as i64);
    Ok(Done)
}

fn flush_mode(ctx: &Ctx) -> CmdResult {
    match ctx.argc() {
        1 => Ok(Done),
        2 if eq_ic(ctx.arg(1), "ASYNC") || eq_ic(ctx.arg(1), "SYNC") => Ok(Done),
        _ => Err(Error::Syntax),
    }
}

/// Empties one database in every (locked) shard, invalidating WATCHes on
/// keys that existed, as Redis 7.0's `signalFlushedDb` does. The watchers
/// are touched after the flush so that one that saw its key already expired
/// takes the deletion as no change, as Redis does.
fn flush_db(ctx: &mut Ctx, db: usize) {
    let mut gone = Vec::new();
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
        shard.dbs[db].keys.clear();
        shard.dbs[db].expires.clear();
        shard.schedule.clear_db(db);
        for (d, k) in existed {
            shard.touch_watched(d, &k);
        }
    }
    ctx.ks.ready.extend(gone);
}

fn flushdb(ctx: &mut Ctx) -> CmdResult {
    flush_mode(ctx)?;
    flush_db(ctx, ctx.client.db);
    ctx.ks.invalidate_tracking_all();
    // Logged even when the database was empty, as Redis does.
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

fn flushall(ctx: &mut Ctx) -> CmdResult {
    flush_mode(ctx)?;
    for db in 0..ctx.shared.store.databases {
        flush_db(ctx, db);
    }
    ctx.ks.invalidate_tracking_all();
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
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
    int_arg(&ctx.args[1])?;
    let timeout = parse_i64(&ctx.args[2]).ok_or(Error::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    if timeout < 0 {
        return Err(Error::Static("ERR timeout is negative"));
    }
    ctx.out.int(0);
    Ok(Done)
}

/// ROLE: a master with replication offset 0 and no replicas.
fn role(ctx: &mut Ctx) -> CmdResult {
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(0);
    ctx.out.array(0);
    Ok(Done)
}

/// LOLWUT [VERSION v]: Redis 7.0 answers versions other than 5 and 6 (its
/// default is 7) with the bare version line; the art of 5 and 6 is not
/// drawn here, they get the same line.
fn lolwut(ctx: &mut Ctx) -> CmdResult {
    if ctx.args.len() >= 3 && eq_ic(&ctx.args[1], "VERSION") {
        int_arg(&ctx.args[2])?;
    }
    ctx.out
        .verbatim(format!("Redis ver. {}\n", crate::server::REDIS_VERSION).as_bytes());
    Ok(Done)
}

fn lastsave(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(ctx.shared.last_save.load(Relaxed) as i64);
    Ok(Done)
}

/// SHUTDOWN [NOSAVE | SAVE] [NOW] [FORCE] [ABORT]: saves first when asked
/// to or when save points exist (unless NOSAVE); a failed save keeps the
/// server running unless FORCE. zwindow has no replicas to wait for, so
/// NOW changes nothing, and no shutdown is ever in progress to ABORT.
fn shutdown(ctx: &mut Ctx) -> CmdResult {
    let (mut save, mut nosave, mut now, mut force, mut abort) = (false, false, false, false, false);
    for a in ctx.args.iter().skip(1) {
        let flag = if eq_ic(a, "SAVE") {
            &mut save
        } else if eq_ic(a, "NOSAVE") {
            &mut nosave
        } else if eq_ic(a, "NOW") {
            &mut now
        } else if eq_ic(a, "FORCE") {
            &mut force
        } else if eq_ic(a, "ABORT") {
            &mut abort
        } else {
            return Err(Error::Syntax);
        };
        *flag = true;
    }
    if (save && nosave) || (abort && (save || nosave || now || force)) {
        return Err(Error::Syntax);
    }
    if abort {
        return Err(Error::Static("ERR No shutdown in progress."));
    }
    let _ = now;
    let shared = ctx.shared.clone();
    // While the dataset loads nothing is saved: a half-loaded dataset must
    // not replace the file (Redis's `prepareForShutdown`).
    if shared.persistence.loading.active() {
        (save, nosave) = (false, true);
    }
    if save || (!nosave && !shared.config.save_points().is_empty()) {
        crate::persistence::wait_bgsave(&shared, Duration::from_secs(60));
        tracing::info!("Saving the final RDB snapshot before exiting.");
        if let Err(e) = crate::persistence::save_all(&shared)
            && !force
        {
            tracing::warn!("Error trying to save the DB, can't exit: {e}");
            return Err(Error::Static("ERR Errors trying to SHUTDOWN. Check logs."));
        }
    }
    shared.persistence.shutdown_handled.store(true, Relaxed);
    // Like Redis, a successful SHUTDOWN answers nothing: the connection closes.
    shared.stop.notify_one();
    Ok(Outcome::Close)
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
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

#[cfg(test)]
mod tests {
    use super::super::meta::META;
    use super::*;

    #[test]
    fn meta_is_sorted_for_binary_search() {
        for w in META
            .windows(2)
            .chain(super::super::meta_later::META_LATER.windows(2))
        {
            assert!(
                w[0].name.as_bytes() < w[1].name.as_bytes(),
                "{} ≥ {}",
                w[0].name,
                w[1].name
            );
        }
    }

    /// Every table entry Redis also has declares Redis's arity and flags
    /// (the ones zwindow models; `COMMAND INFO` prints the table's).
    #[test]
    fn table_matches_redis_arity_and_flags() {
        // Flags Redis hides and zwindow has no use for.
        const UNMODELED: &[&str] = &[
            "sentinel",
            "only_sentinel",
            "protected",
            "touches_arbitrary_keys",
        ];
        let mut mismatches = Vec::new();
        for c in all_commands() {
            let subs = c.subcommands.iter().map(move |s| (s, Some(c)));
            for (cmd, parent) in std::iter::once((c, None)).chain(subs) {
                let Some(m) = meta_of(cmd, parent) else {
                    continue;
                };
                let mut ours: Vec<&str> = NAMES
                    .iter()
                    .chain(&[(MAY_REPLICATE, "may_replicate")])
                    .filter(|(f, _)| cmd.has(*f))
                    .map(|(_, n)| *n)
                    .collect();
                let mut redis: Vec<&str> = m
                    .flags
                    .iter()
                    .copied()
                    .filter(|f| !UNMODELED.contains(f))
                    .collect();
                ours.sort_unstable();
                redis.sort_unstable();
                // Redis's own xread.json names `blocking` twice.
                redis.dedup();
                if ours != redis || cmd.arity != m.arity {
                    mismatches.push(format!(
                        "{}: arity {} flags {ours:?}, Redis: arity {} flags {redis:?}",
                        m.name, cmd.arity, m.arity
                    ));
                }
            }
        }
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }

    fn keys_of(line: &str) -> Vec<(String, u16)> {
        // `''` stands for an empty argument.
        let argv: Vec<&[u8]> = line
            .split(' ')
            .map(|a| if a == "''" { &b""[..] } else { a.as_bytes() })
            .collect();
        let name = String::from_utf8_lossy(argv[0]).to_lowercase();
        let meta = META
            .iter()
            .find(|m| m.name == name)
            .expect("a Redis command");
        let mut out = Vec::new();
        meta.keys(&argv, &mut out);
        out.into_iter()
            .map(|(i, f)| (String::from_utf8_lossy(argv[i]).into_owned(), f))
            .collect()
    }

    #[test]
    fn keys_from_specs_and_procs() {
        use ks::*;
        let k = |s: &str, f: u16| (s.to_string(), f);
        assert_eq!(keys_of("SET k v"), [k("k", OW | UPDATE)]);
        assert_eq!(keys_of("SET k v GET"), [k("k", RW | ACCESS | UPDATE)]);
        assert_eq!(
            keys_of("ZUNIONSTORE d 2 a b WEIGHTS 1 2"),
            [
                k("d", OW | UPDATE),
                k("a", RO | ACCESS),
                k("b", RO | ACCESS)
            ]
        );
        // numkeys only atoi can read: the proc answers, destination last.
        assert_eq!(
            keys_of("ZUNIONSTORE d +2 a b"),
            [k("a", 0), k("b", 0), k("d", 0)]
        );
        assert_eq!(keys_of("ZUNIONSTORE d 5 a b"), []);
        assert_eq!(keys_of("EVAL s 0 a"), []);
        assert_eq!(
            keys_of("EVAL s 2 a b c"),
            [k("a", RW | ACCESS | UPDATE), k("b", RW | ACCESS | UPDATE)]
        );
        assert_eq!(
            keys_of("MSET a 1 b 2"),
            [k("a", OW | UPDATE), k("b", OW | UPDATE)]
        );
        assert_eq!(
            keys_of("SORT s BY x STORE d LIMIT 0 1"),
            [k("s", RO | ACCESS), k("d", OW | UPDATE)]
        );
        assert_eq!(
            keys_of("XREAD COUNT 2 STREAMS a b 0 0"),
            [k("a", RO | ACCESS), k("b", RO | ACCESS)]
        );
        assert_eq!(keys_of("MIGRATE h p k 0 5"), [k("k", RW | ACCESS | DELETE)]);
        // The KEYS spec is incomplete: the proc answers, and only for an
        // empty key argument.
        let m = RW | ACCESS | DELETE;
        assert_eq!(
            keys_of("MIGRATE h p '' 0 5 COPY KEYS a b"),
            [k("a", m), k("b", m)]
        );
        assert_eq!(keys_of("MIGRATE h p k 0 5 KEYS a b"), []);
    }

    #[test]
    fn atoi_as_c() {
        for (s, n) in [
            ("12", 12),
            (" +3x", 3),
            ("-4", -4),
            ("x", 0),
            ("", 0),
            ("99999999999999999999", -1),
        ] {
            assert_eq!(c_atoi(s.as_bytes()), n, "{s}");
        }
    }
}
