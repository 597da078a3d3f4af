//! Generic keyspace commands: DEL, UNLINK, EXISTS, TYPE, KEYS, SCAN,
//! RANDOMKEY, RENAME, RENAMENX, COPY, MOVE, TOUCH, the EXPIRE family, TTL,
//! PERSIST and OBJECT. They work on every value type.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::{Entry, Value, notify};
use crate::util::{eq_ic, glob_match};

const G: &str = "generic";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("del", -2, WRITE, Keys::ALL_ARGS, &(del as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of keys that will be removed.", "Deletes one or more keys.")
        .syntax("key [key ...]"),
    Command::new("unlink", -2, WRITE | FAST, Keys::ALL_ARGS, &(del as Handler))
        .doc(G, "4.0.0", "O(1) for each key removed regardless of its size.", "Asynchronously deletes one or more keys.")
        .syntax("key [key ...]"),
    Command::new("exists", -2, READONLY | FAST, Keys::ALL_ARGS, &(exists as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of keys to check.", "Determines whether one or more keys exist.")
        .syntax("key [key ...]"),
    Command::new("type", 2, READONLY | FAST, Keys::ONE, &(type_cmd as Handler))
        .doc(G, "1.0.0", "O(1)", "Determines the type of value stored at a key.")
        .syntax("key"),
    Command::new("keys", 2, READONLY, Keys::All, &(keys as Handler))
        .doc(G, "1.0.0", "O(N) with N being the number of keys in the database", "Returns all key names that match a pattern.")
        .syntax("pattern"),
    Command::new("scan", -2, READONLY, Keys::All, &(scan as Handler))
        .doc(G, "2.8.0", "O(1) for every call. O(N) for a complete iteration.", "Iterates over the key names in the database.")
        .syntax("cursor [MATCH pattern] [COUNT count] [TYPE type]"),
    Command::new("randomkey", 1, READONLY, Keys::All, &(randomkey as Handler)).doc(G, "1.0.0", "O(1)", "Returns a random key name from the database."),
    Command::new("rename", 3, WRITE, Keys::TWO, &(rename as Handler))
        .doc(G, "1.0.0", "O(1)", "Renames a key and overwrites the destination.")
        .syntax("key newkey"),
    Command::new("renamenx", 3, WRITE | FAST, Keys::TWO, &(renamenx as Handler))
        .doc(G, "1.0.0", "O(1)", "Renames a key only when the target key name doesn't exist.")
        .syntax("key newkey"),
    Command::new("copy", -3, WRITE | DENYOOM, Keys::TWO, &(copy as Handler))
        .doc(G, "6.2.0", "O(N) worst case for collections, where N is the number of nested items.", "Copies the value of a key to a new key.")
        .syntax("source destination [DB destination-db] [REPLACE]"),
    Command::new("move", 3, WRITE | FAST, Keys::ONE, &(move_cmd as Handler))
        .doc(G, "1.0.0", "O(1)", "Moves a key to another database.")
        .syntax("key db"),
    Command::new("touch", -2, READONLY | FAST, Keys::ALL_ARGS, &(touch as Handler))
        .doc(G, "3.2.1", "O(N) where N is the number of keys that will be touched.", "Returns the number of existing keys out of those specified after updating the time they were last accessed.")
        .syntax("key [key ...]"),
    Command::new("expire", -3, WRITE | FAST, Keys::ONE, &(expire as Handler))
        .doc(G, "1.0.0", "O(1)", "Sets the expiration time of a key in seconds.")
        .syntax("key seconds [NX | XX | GT | LT]"),
    Command::new("pexpire", -3, WRITE | FAST, Keys::ONE, &(expire as Handler))
        .doc(G, "2.6.0", "O(1)", "Sets the expiration time of a key in milliseconds.")
        .syntax("key milliseconds [NX | XX | GT | LT]"),
    Command::new("expireat", -3, WRITE | FAST, Keys::ONE, &(expire as Handler))
        .doc(G, "1.2.0", "O(1)", "Sets the expiration time of a key to a Unix timestamp.")
        .syntax("key unix-time-seconds [NX | XX | GT | LT]"),
    Command::new("pexpireat", -3, WRITE | FAST, Keys::ONE, &(expire as Handler))
        .doc(G, "2.6.0", "O(1)", "Sets the expiration time of a key to a Unix milliseconds timestamp.")
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT]"),
    Command::new("ttl", 2, READONLY | FAST, Keys::ONE, &(ttl as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns the expiration time in seconds of a key.")
        .syntax("key"),
    Command::new("pttl", 2, READONLY | FAST, Keys::ONE, &(ttl as Handler))
        .doc(G, "2.6.0", "O(1)", "Returns the expiration time in milliseconds of a key.")
        .syntax("key"),
    Command::new("expiretime", 2, READONLY | FAST, Keys::ONE, &(ttl as Handler))
        .doc(G, "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix timestamp.")
        .syntax("key"),
    Command::new("pexpiretime", 2, READONLY | FAST, Keys::ONE, &(ttl as Handler))
        .doc(G, "7.0.0", "O(1)", "Returns the expiration time of a key as a Unix milliseconds timestamp.")
        .syntax("key"),
    Command::new("persist", 2, WRITE | FAST, Keys::ONE, &(persist as Handler))
        .doc(G, "2.2.0", "O(1)", "Removes the expiration time of a key.")
        .syntax("key"),
    Command::new("object", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "2.2.3", "Depends on subcommand.", "A container for object introspection commands.")
        .subcommands(OBJECT),
];

const OBJECT_KEY: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

static OBJECT: &[Command] = &[
    Command::new(
        "encoding",
        3,
        READONLY,
        OBJECT_KEY,
        &(object_encoding as Handler),
    )
    .doc(
        G,
        "2.2.3",
        "O(1)",
        "Returns the internal encoding of a Redis object.",
    )
    .syntax("key"),
    Command::new(
        "refcount",
        3,
        READONLY,
        OBJECT_KEY,
        &(object_refcount as Handler),
    )
    .doc(
        G,
        "2.2.3",
        "O(1)",
        "Returns the reference count of a value of a key.",
    )
    .syntax("key"),
    Command::new(
        "idletime",
        3,
        READONLY,
        OBJECT_KEY,
        &(object_idletime as Handler),
    )
    .doc(
        G,
        "2.2.3",
        "O(1)",
        "Returns the time since the last access to a Redis object.",
    )
    .syntax("key"),
    Command::new("freq", 3, READONLY, OBJECT_KEY, &(object_freq as Handler))
        .doc(
            G,
            "4.0.0",
            "O(1)",
            "Returns the logarithmic access frequency counter of a Redis object.",
        )
        .syntax("key"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(object_help as Handler),
    )
    .doc(
        G,
        "6.2.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

/// DEL and UNLINK: UNLINK, and DEL under `lazyfree-lazy-user-del`, free
/// large values on the lazyfree thread.
fn del(ctx: &mut Ctx) -> CmdResult {
    let lazy = eq_ic(ctx.arg(0), "unlink") || ctx.shared.config.lazyfree_lazy_user_del();
    let mut n = 0;
    for i in 1..ctx.argc() {
        let key = ctx.args.get(i);
        if ctx.ks.delete(key, lazy) {
            ctx.ks.signal(key, notify::GENERIC, "del");
            n += 1;
        }
    }
    ctx.out.int(n);
    Ok(Done)
}

fn exists(ctx: &mut Ctx) -> CmdResult {
    let n = (1..ctx.argc())
        .filter(|&i| ctx.ks.exists(ctx.args.get(i)))
        .count();
    ctx.out.int(n as i64);
    Ok(Done)
}

fn touch(ctx: &mut Ctx) -> CmdResult {
    let n = (1..ctx.argc())
        .filter(|&i| ctx.ks.get(ctx.args.get(i)).is_some())
        .count();
    ctx.out.int(n as i64);
    Ok(Done)
}

fn type_cmd(ctx: &mut Ctx) -> CmdResult {
    let name = ctx
        .ks
        .peek(ctx.args.get(1))
        .map_or("none", |e| e.value.type_name());
    ctx.out.simple(name);
    Ok(Done)
}

fn keys(ctx: &mut Ctx) -> CmdResult {
    let pattern = ctx.args.get(1);
    let now = ctx.ks.now_ms;
    let windows = &ctx.shared.windows;
    // Written as found (no copy of the keys): past the output limit, where
    // the client is closed, the walk stops, as Redis's KEYS does.
    let out = &mut *ctx.out;
    let header = out.defer();
    let mut n = 0;
    'dbs: for db in ctx.ks.dbs_mut() {
        for (k, e) in db.keys.iter() {
            if out.past_cap() {
                break 'dbs;
            }
            let live = (e.expire_at == 0 || e.expire_at > now)
                && !crate::keyspace::windows::is_dead(windows, e, k, now);
            if live && glob_match(pattern, k, false) {
                out.bulk(k);
                n += 1;
            }
        }
    }
    out.fill_array(header, n);
    Ok(Done)
}

/// Bits of a SCAN cursor that name the shard; the rest is the shard's
/// dict cursor, so a scan walks shard after shard with each dict's
/// guarantee intact.
const SHARD_BITS: u32 = 8;

fn scan(ctx: &mut Ctx) -> CmdResult {
    let cursor = super::scan_cursor(ctx.arg(1))?;
    let mut pattern: Option<&[u8]> = None;
    let mut count = 10usize;
    let mut type_filter: Option<&[u8]> = None;
    let mut i = 2;
    while i < ctx.argc() {
        let opt = ctx.args.get(i);
        if eq_ic(opt, "NOVALUES") {
            return Err(super::hashes::NOVALUES_ONLY_HSCAN);
        }
        if i + 1 >= ctx.argc() {
            return Err(Error::Syntax);
        }
        let val = ctx.args.get(i + 1);
        if eq_ic(opt, "MATCH") {
            pattern = Some(val);
        } else if eq_ic(opt, "COUNT") {
            let n = int_arg(val)?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            count = n as usize;
        } else if eq_ic(opt, "TYPE") {
            type_filter = Some(val);
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    let shards = ctx.shared.store.shard_count() as u64;
    let mut shard = cursor & ((1 << SHARD_BITS) - 1);
    let mut inner = cursor >> SHARD_BITS;
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let db = ctx.ks.db;
    let now = ctx.ks.now_ms;
    let windows = &ctx.shared.windows;
    let mut stale = Vec::new();
    while shard < shards && keys.len() < count {
        let s = ctx.ks.shard_at(shard as usize);
        inner = s.dbs[db].keys.scan(inner, count - keys.len(), |k, e| {
            let expired = e.expire_at != 0 && e.expire_at <= now;
            if expired || crate::keyspace::windows::is_dead(windows, e, k, now) {
                stale.push(k.to_vec());
                return;
            }
            if pattern.is_some_and(|p| !glob_match(p, k, false)) {
                return;
            }
            if type_filter.is_some_and(|t| !t.eq_ignore_ascii_case(e.value.type_name().as_bytes()))
            {
                return;
            }
            keys.push(k.to_vec());
        });
        if inner == 0 {
            shard += 1;
        }
    }
    // What SCAN passes over as gone is deleted (and logged) as a lookup
    // would, as Redis's SCAN expires the keys it meets.
    for k in stale {
        ctx.ks.prepare(&k[..]);
    }
    let next = if shard >= shards {
        0
    } else {
        (inner << SHARD_BITS) | shard
    };
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(keys.len());
    for k in keys {
        ctx.out.bulk(&k);
    }
    Ok(Done)
}

fn randomkey(ctx: &mut Ctx) -> CmdResult {
    let db = ctx.ks.db;
    for tries in 1..=100 {
        let sizes: Vec<usize> = ctx.ks.dbs_mut().map(|d| d.keys.len()).collect();
        let total: usize = sizes.iter().sum();
        if total == 0 {
            break;
        }
        let mut pick = rand::random_range(0..total);
        let shard = sizes.iter().position(|&n| {
            if pick < n {
                true
            } else {
                pick -= n;
                false
            }
        });
        let Some(shard) = shard else { break };
        let s = ctx.ks.shard_at(shard);
        let key = s.dbs[db].keys.random(&mut s.rng).map(|(k, _)| k.clone());
        if let Some(key) = key {
            if ctx.ks.expire_if_needed(&key) {
                // A replica keeps expired keys until its primary deletes
                // them, and a paused server (CLIENT PAUSE) deletes none:
                // when every key has a TTL, all may be expired, and Redis
                // 7.2+'s dbRandomKey returns one after 100 tries.
                if tries == 100
                    && (ctx.ks.replica_hides() || ctx.ks.expiry_paused())
                    && all_volatile(ctx)
                {
                    ctx.out.bulk(&key);
                    return Ok(Done);
                }
                continue;
            }
            ctx.out.bulk(&key);
            return Ok(Done);
        }
    }
    ctx.out.null();
    Ok(Done)
}

/// Whether every key of the current database has a TTL.
fn all_volatile(ctx: &mut Ctx) -> bool {
    ctx.ks.dbs_mut().all(|d| d.keys.len() == d.expires.len())
}

/// Moves `src` to `dst` keeping the TTL; the caller checked both.
fn do_rename(ctx: &mut Ctx, src: &[u8], dst: &[u8]) {
    // The destination is looked up before the source is taken, as Redis
    // does: what is due there goes first (members aged out of a window
    // are handed off, perhaps to `src`), in the order the stream logs it.
    ctx.ks.exists(dst);
    let Some(entry) = ctx.ks.remove(src) else {
        return;
    };
    let replaced = ctx.ks.remove(dst).is_some();
    ctx.ks.set_entry(dst, entry);
    // One change for the move (Redis's single `server.dirty++`).
    ctx.ks.modified(src);
    ctx.ks.modified_by(dst, 0);
    ctx.ks.notify(notify::GENERIC, "rename_from", src);
    ctx.ks.notify(notify::GENERIC, "rename_to", dst);
    let _ = replaced;
    ctx.ks.signal_ready(dst);
}

fn rename(ctx: &mut Ctx) -> CmdResult {
    let (src, dst) = (ctx.args.get(1), ctx.args.get(2));
    if !ctx.ks.exists(src) {
        return Err(Error::Static("ERR no such key"));
    }
    if src != dst {
        do_rename(ctx, src, dst);
    }
    ctx.out.ok();
    Ok(Done)
}

fn renamenx(ctx: &mut Ctx) -> CmdResult {
    let (src, dst) = (ctx.args.get(1), ctx.args.get(2));
    if !ctx.ks.exists(src) {
        return Err(Error::Static("ERR no such key"));
    }
    if src == dst || ctx.ks.exists(dst) {
        ctx.out.int(0);
        return Ok(Done);
    }
    do_rename(ctx, src, dst);
    ctx.out.int(1);
    Ok(Done)
}

fn db_index(ctx: &Ctx, arg: &[u8]) -> Result<usize, Error> {
    let n = int_arg(arg)?;
    if n < 0 || n as usize >= ctx.shared.config.databases {
        return Err(Error::Static("ERR DB index is out of range"));
    }
    Ok(n as usize)
}

fn copy(ctx: &mut Ctx) -> CmdResult {
    let (src, dst) = (ctx.args.get(1), ctx.args.get(2));
    let mut target_db = ctx.ks.db;
    let mut replace = false;
    let mut i = 3;
    while i < ctx.argc() {
        let opt = ctx.args.get(i);
        if eq_ic(opt, "REPLACE") {
            replace = true;
            i += 1;
        } else if eq_ic(opt, "DB") && i + 1 < ctx.argc() {
            target_db = db_index(ctx, ctx.args.get(i + 1))?;
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let src_db = ctx.ks.db;
    // A cluster node has database 0 only.
    if ctx.shared.cluster.is_some() && (src_db != 0 || target_db != 0) {
        return Err(Error::Static(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    if src == dst && src_db == target_db {
        return Err(Error::Static(
            "ERR source and destination objects are the same",
        ));
    }
    if src_db != 0 || target_db != 0 {
        incompatible(ctx);
    }
    if !ctx.ks.exists(src) {
        ctx.out.int(0);
        return Ok(Done);
    }
    // The destination is looked up before the source is read (see
    // `do_rename`): members its window hands off to `src` are copied, as
    // a replica running the logged hand-off and then COPY copies them.
    ctx.ks.db = target_db;
    let dst_exists = ctx.ks.exists(dst);
    ctx.ks.db = src_db;
    let Some(e) = ctx.ks.get(src) else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let mut copy = Entry::new(e.value.clone());
    copy.expire_at = e.expire_at;
    ctx.ks.db = target_db;
    let result = if dst_exists && !replace {
        0
    } else {
        ctx.ks.remove(dst);
        ctx.ks.set_entry(dst, copy);
        ctx.ks.signal(dst, notify::GENERIC, "copy_to");
        ctx.ks.signal_ready(dst);
        1
    };
    ctx.ks.db = src_db;
    ctx.out.int(result);
    Ok(Done)
}

/// Counts an operation cluster mode would refuse (INFO's
/// `cluster_incompatible_ops`).
fn incompatible(ctx: &Ctx) {
    ctx.shared
        .stats
        .cluster_incompatible_ops
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

fn move_cmd(ctx: &mut Ctx) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err(Error::Static("ERR MOVE is not allowed in cluster mode"));
    }
    let key = ctx.args.get(1);
    let target = db_index(ctx, ctx.args.get(2))?;
    let src_db = ctx.ks.db;
    if target == src_db {
        return Err(Error::Static(
            "ERR source and destination objects are the same",
        ));
    }
    incompatible(ctx);
    if !ctx.ks.exists(key) {
        ctx.out.int(0);
        return Ok(Done);
    }
    ctx.ks.db = target;
    let occupied = ctx.ks.exists(key);
    ctx.ks.db = src_db;
    if occupied {
        ctx.out.int(0);
        return Ok(Done);
    }
    if let Some(entry) = ctx.ks.remove(key) {
        // Redis adds the key to the target first (its `new` event), then
        // announces the move on both sides.
        ctx.ks.db = target;
        ctx.ks.set_entry(key, entry);
        ctx.ks.db = src_db;
        ctx.ks.signal(key, notify::GENERIC, "move_from");
        ctx.ks.db = target;
        ctx.ks.signal(key, notify::GENERIC, "move_to");
        ctx.ks.signal_ready(key);
        ctx.ks.db = src_db;
    }
    ctx.out.int(1);
    Ok(Done)
}

fn expire(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.cmd.name;
    let key = ctx.args.get(1);
    let (ms_unit, absolute) = match name {
        "expire" => (false, false),
        "pexpire" => (true, false),
        "expireat" => (false, true),
        _ => (true, true),
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for a in ctx.args.iter().skip(3) {
        if eq_ic(a, "NX") {
            nx = true;
        } else if eq_ic(a, "XX") {
            xx = true;
        } else if eq_ic(a, "GT") {
            gt = true;
        } else if eq_ic(a, "LT") {
            lt = true;
        } else {
            return Err(Error::Owned(format!(
                "ERR Unsupported option {}",
                String::from_utf8_lossy(a)
            )));
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Error::Static(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Error::Static(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let invalid = || Error::Owned(format!("ERR invalid expire time in '{name}' command"));
    let mut when = int_arg(ctx.args.get(2))?;
    if !ms_unit {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    let base = if absolute { 0 } else { ctx.ks.now_ms as i64 };
    let when = when.checked_add(base).ok_or_else(invalid)?;
    let Some(e) = ctx.ks.get(key) else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let current = (e.expire_at != 0).then_some(e.expire_at as i64);
    let refuse = (nx && current.is_some())
        || (xx && current.is_none())
        || (gt && current.is_none_or(|c| when <= c))
        || (lt && current.is_some_and(|c| when >= c));
    if refuse {
        ctx.out.int(0);
        return Ok(Done);
    }
    // While the AOF loads, a time already past is stored (Redis's
    // checkAlreadyExpired): the key expires once the server runs.
    if ctx.ks.expiry_now().is_some_and(|now| when <= now as i64) {
        let lazy = ctx.shared.config.lazyfree_lazy_server_del();
        ctx.ks.delete(key, lazy);
        ctx.ks.signal(key, notify::GENERIC, "del");
        ctx.propagate_as(|| crate::argv![crate::keyspace::propagate::del_name(lazy), key]);
    } else {
        ctx.ks.set_expire(key, when as u64);
        ctx.ks.signal(key, notify::GENERIC, "expire");
        // As PEXPIREAT with the absolute time, options kept (Redis's
        // expireGenericCommand rewrites arguments 0 and 2).
        let args = ctx.args;
        ctx.propagate_as(|| {
            let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            v[0] = b"PEXPIREAT".to_vec();
            v[2] = when.to_string().into_bytes();
            v
        });
    }
    ctx.out.int(1);
    Ok(Done)
}

fn ttl(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.cmd.name;
    let now = ctx.ks.now_ms as i64;
    let Some(e) = ctx.ks.peek(ctx.args.get(1)) else {
        ctx.out.int(-2);
        return Ok(Done);
    };
    if e.expire_at == 0 {
        ctx.out.int(-1);
        return Ok(Done);
    }
    let at = e.expire_at as i64;
    let left = (at - now).max(0);
    ctx.out.int(match name {
        "ttl" => (left + 500) / 1000,
        "pttl" => left,
        "expiretime" => at / 1000,
        _ => at,
    });
    Ok(Done)
}

fn persist(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let had = ctx.ks.get(key).is_some_and(|e| e.expire_at != 0);
    if had {
        ctx.ks.set_expire(key, 0);
        ctx.ks.signal(key, notify::GENERIC, "persist");
    }
    ctx.out.int(had as i64);
    Ok(Done)
}

fn object_encoding(ctx: &mut Ctx) -> CmdResult {
    match ctx.ks.peek(ctx.args.get(2)) {
        Some(e) => ctx.out.bulk(e.value.encoding().as_bytes()),
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn object_refcount(ctx: &mut Ctx) -> CmdResult {
    match ctx.ks.peek(ctx.args.get(2)) {
        Some(e) => ctx.out.int(refcount(ctx.shared, &e.value)),
        None => ctx.out.null(),
    }
    Ok(Done)
}

/// The refcount Redis reports for a value: the integers 0..10000 are
/// shared objects (OBJ_SHARED_REFCOUNT), everything else is owned by its
/// key. Redis stops sharing them while `maxmemory` is set with an LRU or
/// LFU policy (each value then carries its own access time); zwindow keeps
/// access times per key and shares nothing, so the reply follows the
/// settings in force when asked (Redis: when the value was written).
pub(crate) fn refcount(shared: &crate::commands::Services, v: &Value) -> i64 {
    let policy = shared.config.maxmemory_policy();
    let sharing = shared.config.maxmemory() == 0
        || !(policy.is_lfu()
            || matches!(
                policy,
                crate::config::Policy::AllkeysLru | crate::config::Policy::VolatileLru
            ));
    match v {
        Value::Str(s)
            if sharing
                && s.encoding() == "int"
                && crate::util::parse_i64(&s.data).is_some_and(|n| (0..10_000).contains(&n)) =>
        {
            i32::MAX as i64
        }
        _ => 1,
    }
}

fn object_idletime(ctx: &mut Ctx) -> CmdResult {
    let now = ctx.ks.now_ms;
    let Some(e) = ctx.ks.peek(ctx.args.get(2)) else {
        ctx.out.null();
        return Ok(Done);
    };
    if ctx.shared.config.maxmemory_policy().is_lfu() {
        return Err(Error::Static(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    let idle = crate::keyspace::evict::idle_ms(e.lru(), now) / 1000;
    ctx.out.int(idle as i64);
    Ok(Done)
}

fn object_freq(ctx: &mut Ctx) -> CmdResult {
    let now = ctx.ks.now_ms;
    let Some(e) = ctx.ks.peek(ctx.args.get(2)) else {
        ctx.out.null();
        return Ok(Done);
    };
    let config = &ctx.shared.config;
    if !config.maxmemory_policy().is_lfu() {
        return Err(Error::Static(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    let freq = crate::keyspace::evict::lfu_counter(e.lru(), now, config.lfu_decay_time());
    ctx.out.int(i64::from(freq));
    Ok(Done)
}

fn object_help(ctx: &mut Ctx) -> CmdResult {
    // Redis 8.0.2's text (`objectCommand`'s help).
    super::observability::reply_help(
        ctx,
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
    Ok(Done)
}
