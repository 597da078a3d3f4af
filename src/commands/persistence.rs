//! Persistence commands: SAVE, BGSAVE, and DUMP / RESTORE / RESTORE-ASKING
//! (a value in Redis's serialization, see [`crate::rdb`]).

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::{Entry, evict, notify};
use crate::rdb::RestoreError;
use crate::util::eq_ic;

const G: &str = "server";
const GK: &str = "generic";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("save", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, Keys::All, &(save as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of keys in all databases", "Synchronously saves the database(s) to disk."),
    Command::new("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, Keys::All, &(bgsave as Handler))
        .doc(G, "1.0.0", "O(1)", "Asynchronously saves the database(s) to disk.")
        .syntax("[SCHEDULE]"),
    Command::new("bgrewriteaof", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, Keys::All, &(bgrewriteaof as Handler))
        .doc(G, "1.0.0", "O(1)", "Asynchronously rewrites the append-only file to disk."),
    Command::new("dump", 2, READONLY, Keys::ONE, &(dump as Handler))
        .doc(GK, "2.6.0", "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).", "Returns a serialized representation of the value stored at a key.")
        .syntax("key"),
    Command::new("restore", -4, WRITE | DENYOOM, Keys::ONE, &(restore as Handler))
        .doc(GK, "2.6.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", "Creates a key from the serialized representation of a value.")
        .syntax("key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
    // What a cluster's MIGRATE sends; without cluster mode, RESTORE itself.
    Command::new("restore-asking", -4, WRITE | DENYOOM | ASKING, Keys::ONE, &(restore as Handler))
        .doc(G, "3.0.0", "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).", "An internal command for migrating keys in a cluster")
        .syntax("key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]"),
];

/// SAVE: writes the dataset in the foreground, every shard held.
fn save(ctx: &mut Ctx) -> CmdResult {
    if ctx.shared.persistence.bgsave_in_progress.load(Relaxed) {
        return Err(Error::Static("ERR Background save already in progress"));
    }
    match crate::persistence::save_locked(&**ctx.shared, ctx.ks) {
        Ok(()) => ctx.out.ok(),
        Err(_) => return Err(Error::Static("ERR")),
    }
    Ok(Done)
}

/// BGSAVE [SCHEDULE]: takes the snapshot now (this command holds every
/// shard) and writes it in the background. Inside EXEC it is scheduled, as
/// Redis does, and the save points' check starts it right after.
fn bgsave(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 2 || (ctx.argc() == 2 && !eq_ic(ctx.arg(1), "SCHEDULE")) {
        return Err(Error::Syntax);
    }
    let p = &ctx.shared.persistence;
    if p.bgsave_in_progress.load(Relaxed) {
        return Err(Error::Static("ERR Background save already in progress"));
    }
    let schedule = ctx.argc() == 2;
    if ctx.client.in_exec || (schedule && ctx.shared.aof.rewrite_in_progress.load(Relaxed)) {
        p.bgsave_scheduled.store(true, Relaxed);
        ctx.out.simple("Background saving scheduled");
        return Ok(Done);
    }
    crate::persistence::start_bgsave(ctx.shared.clone(), ctx.ks.shards_mut())
        .map_err(Error::Static)?;
    ctx.out.simple("Background saving started");
    Ok(Done)
}

/// BGREWRITEAOF: a new base from a point-in-time snapshot (this command
/// holds every shard) and a new incremental file (see [`crate::aof`]);
/// scheduled when a BGSAVE runs or inside EXEC, as Redis does.
fn bgrewriteaof(ctx: &mut Ctx) -> CmdResult {
    let aof = &ctx.shared.aof;
    if aof.rewrite_in_progress.load(Relaxed) {
        return Err(Error::Static(
            "ERR Background append only file rewriting already in progress",
        ));
    }
    if ctx.client.in_exec || ctx.shared.persistence.bgsave_in_progress.load(Relaxed) {
        aof.rewrite_scheduled.store(true, Relaxed);
        ctx.out
            .simple("Background append only file rewriting scheduled");
        return Ok(Done);
    }
    let reply = crate::aof::bgrewriteaof(ctx.shared.clone(), ctx.ks).map_err(Error::Owned)?;
    ctx.out.simple(reply);
    Ok(Done)
}

/// DUMP key: the value's payload, or nil.
fn dump(ctx: &mut Ctx) -> CmdResult {
    match ctx.ks.get_read(ctx.args.get(1)) {
        Some(e) => {
            let payload = crate::rdb::dump(&e.value, ctx.shared.config.rdb_version());
            ctx.out.bulk(&payload);
        }
        None => ctx.out.null(),
    }
    Ok(Done)
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], with
/// Redis 7.0's checks in its order: options, existing key, TTL, payload.
fn restore(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<i64>) = (None, None);
    let mut i = 4;
    while i < ctx.argc() {
        let a = ctx.args.get(i);
        let more = i + 1 < ctx.argc();
        if eq_ic(a, "REPLACE") {
            replace = true;
        } else if eq_ic(a, "ABSTTL") {
            absttl = true;
        } else if eq_ic(a, "IDLETIME") && more && freq.is_none() {
            let v = int_arg(ctx.args.get(i + 1))?;
            if v < 0 {
                return Err(Error::Static("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
            i += 1;
        } else if eq_ic(a, "FREQ") && more && idle.is_none() {
            let v = int_arg(ctx.args.get(i + 1))?;
            if !(0..=255).contains(&v) {
                return Err(Error::Static(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = Some(v);
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if !replace && ctx.ks.exists(key) {
        return Err(Error::Static("BUSYKEY Target key name already exists."));
    }
    let ttl = int_arg(ctx.args.get(2))?;
    if ttl < 0 {
        return Err(Error::Static("ERR Invalid TTL value, must be >= 0"));
    }
    // Redis checks deeply under `yes`, and under `clients` unless the
    // payload comes from the primary or a `skip-sanitize-payload` user.
    let deep = match ctx.shared.config.sanitize_dump_payload().as_str() {
        "yes" => true,
        "clients" => {
            !ctx.client.master && !ctx.client.user.as_ref().is_some_and(|u| u.skips_sanitize())
        }
        _ => false,
    };
    let restored = match crate::rdb::restore(ctx.args.get(3), &ctx.shared.config, deep) {
        Ok(v) => v,
        Err(RestoreError::Footer) => {
            return Err(Error::Static(
                "ERR DUMP payload version or checksum are wrong",
            ));
        }
        Err(RestoreError::Data) => return Err(Error::Static("ERR Bad data format")),
    };
    let deleted = replace && ctx.ks.remove(key).is_some();
    let mut at = ttl as u64;
    if ttl != 0 && !absttl {
        at = at.saturating_add(ctx.ks.now_ms);
    }
    if ttl != 0 && ctx.ks.expiry_now().is_some_and(|now| at <= now) {
        // Already expired: the key is gone, as if deleted.
        if deleted {
            ctx.ks.signal(key, notify::GENERIC, "del");
            // Logged as the server would free it (Redis 7.2+).
            let del: &[u8] = if ctx.shared.config.lazyfree_lazy_server_del() {
                b"UNLINK"
            } else {
                b"DEL"
            };
            ctx.propagate_as(|| crate::argv![del, key]);
        }
        ctx.out.ok();
        return Ok(Done);
    }
    if ttl != 0 && !absttl {
        // The TTL as an absolute time, so a replay expires it when this did.
        let args = ctx.args;
        ctx.propagate_as(|| {
            let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            v[2] = at.to_string().into_bytes();
            v.push(b"ABSTTL".to_vec());
            v
        });
    }
    ctx.shared
        .stats
        .dump_payload_sanitizations
        .fetch_add(restored.sanitizations, Relaxed);
    if restored.field_ttls {
        ctx.shared.store.field_ttls.store(true, Relaxed);
    }
    if restored.member_ttls {
        ctx.shared.store.member_ttls.store(true, Relaxed);
    }
    if restored.set_ttls {
        ctx.shared.store.set_ttls.store(true, Relaxed);
    }
    let mut entry = Entry::new(restored.value);
    entry.expire_at = if ttl == 0 { 0 } else { at };
    ctx.ks.set_entry(key, entry);
    // IDLETIME is kept under an LRU (or no) policy, FREQ under an LFU one.
    if let Some(lru) = evict::restored(&ctx.shared.config, ctx.ks.now_ms, idle, freq)
        && let Some(e) = ctx.ks.peek_raw(key)
    {
        e.set_lru(lru);
    }
    ctx.ks.signal(key, notify::GENERIC, "restore");
    ctx.ks.signal_ready(key);
    ctx.out.ok();
    Ok(Done)
}
