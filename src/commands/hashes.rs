//! Hash commands: HSET/HMSET/HSETNX, HGET/HMGET, HDEL, HLEN, HSTRLEN,
//! HEXISTS, HKEYS/HVALS/HGETALL, HINCRBY/HINCRBYFLOAT, HRANDFIELD, HSCAN,
//! and field TTLs: HEXPIRE/HPEXPIRE/HEXPIREAT/HPEXPIREAT, HTTL/HPTTL,
//! HEXPIRETIME/HPEXPIRETIME, HPERSIST, HGETEX, HSETEX, HGETDEL. Expired
//! fields are removed before any command sees the key
//! ([`crate::keyspace::hash_ttl`]), so the older commands need no change
//! beyond HSET dropping a field's TTL and HINCRBY* keeping it.
//!
//! The data structure and its encoding rules live in
//! [`crate::types::hash`]; this file is argument parsing, reply shapes and
//! the order of checks, which follows Redis 7.0's `t_hash.c` so the same
//! bad input yields the same error. The HSCAN/SSCAN option parser is here
//! too ([`scan_args`]) and shared with `sets.rs`.

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Done, Error, Handler, Keys, count_arg, int_arg};
use crate::keyspace::{Entry, HashedKey, Keyspace, Value, notify};
use crate::protocol::Reply;
use crate::types::hash::{Hash, Limits, NO_TTL};
use crate::types::ldouble::LDouble;
use crate::util::{eq_ic, glob_match, parse_i64};

const G: &str = "hash";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("hset", -4, WRITE | DENYOOM | FAST, Keys::ONE, &(hset as Handler))
        .doc(G, "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", "Creates or modifies the value of a field in a hash.")
        .syntax("key field value [field value ...]"),
    Command::new("hmset", -4, WRITE | DENYOOM | FAST, Keys::ONE, &(hset as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of fields being set.", "Sets the values of multiple fields.")
        .syntax("key field value [field value ...]"),
    Command::new("hsetnx", 4, WRITE | DENYOOM | FAST, Keys::ONE, &(hsetnx as Handler))
        .doc(G, "2.0.0", "O(1)", "Sets the value of a field in a hash only when the field doesn't exist.")
        .syntax("key field value"),
    Command::new("hget", 3, READONLY | FAST, Keys::ONE, &(hget as Handler))
        .doc(G, "2.0.0", "O(1)", "Returns the value of a field in a hash.")
        .syntax("key field"),
    Command::new("hmget", -3, READONLY | FAST, Keys::ONE, &(hmget as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of fields being requested.", "Returns the values of all fields in a hash.")
        .syntax("key field [field ...]"),
    Command::new("hdel", -3, WRITE | FAST, Keys::ONE, &(hdel as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of fields to be removed.", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.")
        .syntax("key field [field ...]"),
    Command::new("hlen", 2, READONLY | FAST, Keys::ONE, &(hlen as Handler))
        .doc(G, "2.0.0", "O(1)", "Returns the number of fields in a hash.")
        .syntax("key"),
    Command::new("hstrlen", 3, READONLY | FAST, Keys::ONE, &(hstrlen as Handler))
        .doc(G, "3.2.0", "O(1)", "Returns the length of the value of a field.")
        .syntax("key field"),
    Command::new("hexists", 3, READONLY | FAST, Keys::ONE, &(hexists as Handler))
        .doc(G, "2.0.0", "O(1)", "Determines whether a field exists in a hash.")
        .syntax("key field"),
    Command::new("hkeys", 2, READONLY, Keys::ONE, &(hkeys as Handler))
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields in a hash.")
        .syntax("key"),
    Command::new("hvals", 2, READONLY, Keys::ONE, &(hvals as Handler))
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all values in a hash.")
        .syntax("key"),
    Command::new("hgetall", 2, READONLY, Keys::ONE, &(hgetall as Handler))
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields and values in a hash.")
        .syntax("key"),
    Command::new("hincrby", 4, WRITE | DENYOOM | FAST, Keys::ONE, &(hincrby as Handler))
        .doc(G, "2.0.0", "O(1)", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.")
        .syntax("key field increment"),
    Command::new("hincrbyfloat", 4, WRITE | DENYOOM | FAST, Keys::ONE, &(hincrbyfloat as Handler))
        .doc(G, "2.6.0", "O(1)", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.")
        .syntax("key field increment"),
    Command::new("hrandfield", -2, READONLY, Keys::ONE, &(hrandfield as Handler))
        .doc(G, "6.2.0", "O(N) where N is the number of fields returned", "Returns one or more random fields from a hash.")
        .syntax("key [count [WITHVALUES]]"),
    Command::new("hscan", -3, READONLY, Keys::ONE, &(hscan as Handler))
        .doc(G, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over fields and values of a hash.")
        .syntax("key cursor [MATCH pattern] [COUNT count]"),
    Command::new("hexpire", -6, WRITE | FAST, Keys::ONE, &(hexpire as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Set expiry for hash field using relative time to expire (seconds)")
        .syntax("key seconds [NX | XX | GT | LT] FIELDS numfields field [field ...]"),
    Command::new("hpexpire", -6, WRITE | FAST, Keys::ONE, &(hpexpire as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Set expiry for hash field using relative time to expire (milliseconds)")
        .syntax("key milliseconds [NX | XX | GT | LT] FIELDS numfields field [field ...]"),
    Command::new("hexpireat", -6, WRITE | FAST, Keys::ONE, &(hexpireat as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Set expiry for hash field using an absolute Unix timestamp (seconds)")
        .syntax("key unix-time-seconds [NX | XX | GT | LT] FIELDS numfields field [field ...]"),
    Command::new("hpexpireat", -6, WRITE | FAST, Keys::ONE, &(hpexpireat as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)")
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT] FIELDS numfields field [field ...]"),
    Command::new("httl", -5, READONLY | FAST, Keys::ONE, &(httl as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Returns the TTL in seconds of a hash field.")
        .syntax("key FIELDS numfields field [field ...]"),
    Command::new("hpttl", -5, READONLY | FAST, Keys::ONE, &(hpttl as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Returns the TTL in milliseconds of a hash field.")
        .syntax("key FIELDS numfields field [field ...]"),
    Command::new("hexpiretime", -5, READONLY | FAST, Keys::ONE, &(hexpiretime as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.")
        .syntax("key FIELDS numfields field [field ...]"),
    Command::new("hpexpiretime", -5, READONLY | FAST, Keys::ONE, &(hpexpiretime as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Returns the expiration time of a hash field as a Unix timestamp, in msec.")
        .syntax("key FIELDS numfields field [field ...]"),
    Command::new("hpersist", -5, WRITE | FAST, Keys::ONE, &(hpersist as Handler))
        .doc(G, "7.4.0", "O(N) where N is the number of specified fields", "Removes the expiration time for each specified field")
        .syntax("key FIELDS numfields field [field ...]"),
    Command::new("hgetex", -5, WRITE | FAST, Keys::ONE, &(hgetex as Handler))
        .doc(G, "8.0.0", "O(N) where N is the number of specified fields", "Get the value of one or more fields of a given hash key, and optionally set their expiration.")
        .syntax("key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST] FIELDS numfields field [field ...]"),
    Command::new("hsetex", -6, WRITE | DENYOOM | FAST, Keys::ONE, &(hsetex as Handler))
        .doc(G, "8.0.0", "O(N) where N is the number of fields being set.", "Set the value of one or more fields of a given hash key, and optionally set their expiration.")
        .syntax("key [FNX | FXX] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL] FIELDS numfields field value [field value ...]"),
    Command::new("hgetdel", -5, WRITE | FAST, Keys::ONE, &(hgetdel as Handler))
        .doc(G, "8.0.0", "O(N) where N is the number of specified fields", "Returns the value of a field and deletes it from the hash.")
        .syntax("key FIELDS numfields field [field ...]"),
];

/// The hash at `key`: None if missing, WRONGTYPE for another type.
fn lookup<'a, 'n>(
    ks: &'a mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
    read: bool,
) -> Result<Option<&'a mut Hash>, Error> {
    let key = key.into();
    let e = if read { ks.get_read(key) } else { ks.get(key) };
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Hash(h),
            ..
        }) => Ok(Some(h)),
        Some(_) => Err(Error::WrongType),
    }
}

/// The hash at `key`, created empty if missing (Redis's
/// `hashTypeLookupWriteOrCreate`).
fn lookup_or_create<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Result<&'a mut Hash, Error> {
    if lookup(ks, key, false)?.is_none() {
        ks.set(key, Value::Hash(Hash::new()));
    }
    lookup(ks, key, false)?.ok_or(Error::WrongType)
}

fn limits(ctx: &Ctx) -> Limits {
    Limits {
        entries: ctx.shared.config.hash_max_listpack_entries(),
        value: ctx.shared.config.hash_max_listpack_value(),
    }
}

/// HSET and HMSET.
fn hset(ctx: &mut Ctx) -> CmdResult {
    if !ctx.argc().is_multiple_of(2) {
        return Err(Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        )));
    }
    let (key, lim) = (ctx.args.get(1), limits(ctx));
    let args = ctx.args;
    let h = lookup_or_create(ctx.ks, key)?;
    h.reserve_new((args.len() - 2) / 2, lim);
    let mut created = 0;
    for i in (2..args.len()).step_by(2) {
        created += h.set(args.get(i), args.get(i + 1), lim) as i64;
    }
    // One change per pair, new or not (Redis's `(argc - 2) / 2`).
    ctx.ks
        .signal_by(key, notify::HASH, "hset", ((args.len() - 2) / 2) as u64);
    if ctx.cmd.name == "hmset" {
        ctx.out.ok();
    } else {
        ctx.out.int(created);
    }
    Ok(Done)
}

fn hsetnx(ctx: &mut Ctx) -> CmdResult {
    let (key, field, value, lim) = (
        ctx.args.get(1),
        ctx.args.get(2),
        ctx.args.get(3),
        limits(ctx),
    );
    let h = lookup_or_create(ctx.ks, key)?;
    if h.contains(field) {
        ctx.out.int(0);
        return Ok(Done);
    }
    h.set(field, value, lim);
    ctx.ks.signal(key, notify::HASH, "hset");
    ctx.out.int(1);
    Ok(Done)
}

fn hget(ctx: &mut Ctx) -> CmdResult {
    let field = ctx.args.get(2);
    let key = ctx.key(1);
    match lookup(ctx.ks, key, true)?.and_then(|h| h.get(field)) {
        Some(v) => ctx.out.bulk(v),
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn hmget(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let h = lookup(ctx.ks, args.get(1), true)?;
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        match h.as_ref().and_then(|h| h.get(args.get(i))) {
            Some(v) => ctx.out.bulk(v),
            None => ctx.out.null(),
        }
    }
    Ok(Done)
}

fn hdel(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    let Some(h) = lookup(ctx.ks, key, false)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let mut deleted = 0;
    for i in 2..args.len() {
        if h.remove(args.get(i)) {
            deleted += 1;
            if h.is_empty() {
                break;
            }
        }
    }
    let emptied = h.is_empty();
    if deleted > 0 {
        ctx.ks.signal_by(key, notify::HASH, "hdel", deleted as u64);
        if emptied {
            ctx.ks.remove(key);
            ctx.ks.signal_by(key, notify::GENERIC, "del", 0);
        }
    }
    ctx.out.int(deleted);
    Ok(Done)
}

fn hlen(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let n = lookup(ctx.ks, key, true)?.map_or(0, |h| h.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn hstrlen(ctx: &mut Ctx) -> CmdResult {
    let field = ctx.args.get(2);
    let key = ctx.key(1);
    let n = lookup(ctx.ks, key, true)?
        .and_then(|h| h.get(field))
        .map_or(0, |v| v.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn hexists(ctx: &mut Ctx) -> CmdResult {
    let field = ctx.args.get(2);
    let key = ctx.key(1);
    let found = lookup(ctx.ks, key, true)?.is_some_and(|h| h.contains(field));
    ctx.out.int(found as i64);
    Ok(Done)
}

fn hkeys(ctx: &mut Ctx) -> CmdResult {
    getall(ctx, true, false)
}

fn hvals(ctx: &mut Ctx) -> CmdResult {
    getall(ctx, false, true)
}

fn hgetall(ctx: &mut Ctx) -> CmdResult {
    getall(ctx, true, true)
}

/// HKEYS, HVALS, HGETALL (a map in RESP3).
fn getall(ctx: &mut Ctx, fields: bool, values: bool) -> CmdResult {
    let key = ctx.key(1);
    let h = lookup(ctx.ks, key, true)?;
    let n = h.as_ref().map_or(0, |h| h.len());
    if fields && values {
        ctx.out.map(n);
    } else {
        ctx.out.array(n);
    }
    if let Some(h) = h {
        for (f, v) in h.iter() {
            if fields {
                ctx.out.bulk(f);
            }
            if values {
                ctx.out.bulk(v);
            }
        }
    }
    Ok(Done)
}

fn hincrby(ctx: &mut Ctx) -> CmdResult {
    let (key, field, lim) = (ctx.args.get(1), ctx.args.get(2), limits(ctx));
    let by = int_arg(ctx.args.get(3))?;
    let h = lookup_or_create(ctx.ks, key)?;
    let cur = match h.get(field) {
        Some(v) => parse_i64(v).ok_or(Error::Static("ERR hash value is not an integer"))?,
        None => 0,
    };
    let new = cur
        .checked_add(by)
        .ok_or(Error::Static("ERR increment or decrement would overflow"))?;
    h.set_keep_ttl(field, itoa::Buffer::new().format(new).as_bytes(), lim);
    ctx.ks.signal(key, notify::HASH, "hincrby");
    ctx.out.int(new);
    Ok(Done)
}

fn hincrbyfloat(ctx: &mut Ctx) -> CmdResult {
    let (key, field, lim) = (ctx.args.get(1), ctx.args.get(2), limits(ctx));
    let by = LDouble::parse(ctx.args.get(3)).ok_or(Error::NotFloat)?;
    if matches!(by, LDouble::Inf { .. }) {
        return Err(Error::Static("ERR value is NaN or Infinity"));
    }
    let h = lookup_or_create(ctx.ks, key)?;
    let cur = match h.get(field) {
        Some(v) => LDouble::parse(v).ok_or(Error::Static("ERR hash value is not a float"))?,
        None => LDouble::ZERO,
    };
    let text = cur
        .checked_add(by)
        .ok_or(Error::Static("ERR increment would produce NaN or Infinity"))?
        .to_human();
    h.set_keep_ttl(field, text.as_bytes(), lim);
    let has_ttl = h.expire_at(field).is_some_and(|at| at != NO_TTL);
    ctx.ks.signal(key, notify::HASH, "hincrbyfloat");
    ctx.out.bulk(text.as_bytes());
    // The result, not the increment (Redis's `HSET key field value`); a
    // field with a TTL as HSETEX … KEEPTTL, which keeps it on replay where
    // HSET would drop it (Redis 8.0.2 logs HSET and loses it: redis#14218,
    // fixed by logging HSETEX KEEPTTL).
    if has_ttl {
        ctx.propagate_as(|| crate::argv![b"HSETEX", key, b"KEEPTTL", b"FIELDS", b"1", field, text]);
    } else {
        ctx.propagate_as(|| crate::argv![b"HSET", key, field, text]);
    }
    Ok(Done)
}

fn hrandfield(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    if ctx.argc() == 2 {
        let h = lookup(ctx.ks, key, true)?;
        match h.and_then(|h| h.random(&mut rand::rng())) {
            Some((f, _)) => ctx.out.bulk(f),
            None => ctx.out.null(),
        }
        return Ok(Done);
    }
    let l = count_arg(ctx.args.get(2))?;
    let withvalues = match ctx.argc() {
        3 => false,
        4 if eq_ic(ctx.args.get(3), "WITHVALUES") => {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
                return Err(Error::Static("ERR value is out of range"));
            }
            true
        }
        _ => return Err(Error::Syntax),
    };
    let Some(h) = lookup(ctx.ks, key, true)? else {
        ctx.out.array(0);
        return Ok(Done);
    };
    let count = l.unsigned_abs();
    if count == 0 {
        ctx.out.array(0);
        return Ok(Done);
    }
    let out = &mut *ctx.out;
    let resp3 = out.resp3;
    let header =
        |out: &mut Reply, n: u64| out.array(if withvalues && !resp3 { 2 * n } else { n } as usize);
    let emit = |out: &mut Reply, f: &[u8], v: &[u8]| {
        if withvalues && resp3 {
            out.array(2);
        }
        out.bulk(f);
        if withvalues {
            out.bulk(v);
        }
    };
    let mut rng = rand::rng();
    if l < 0 || count == 1 {
        // Repeats allowed: every pick is independent. The reply grows with
        // the client's count, as Redis's does, but nothing is reserved for it.
        header(out, count);
        for _ in 0..count {
            // Past the output limit the client is closed: stop here.
            if out.past_cap() {
                break;
            }
            if let Some((f, v)) = h.random(&mut rng) {
                emit(out, f, v);
            }
        }
    } else if count >= h.len() as u64 {
        header(out, h.len() as u64);
        for (f, v) in h.iter() {
            emit(out, f, v);
        }
    } else {
        header(out, count);
        h.sample(&mut rng, count as usize, |f, v| emit(out, f, v));
    }
    Ok(Done)
}

/// HSCAN/SSCAN arguments: the cursor (Redis's `parseScanCursorOrReply`,
/// i.e. `strtoul`: optional sign, wraps negatives, empty means 0) and the
/// MATCH/COUNT options, and HSCAN's NOVALUES (Redis 7.4).
pub(super) struct ScanArgs<'a> {
    pub(crate) cursor: u64,
    pub(crate) pattern: Option<&'a [u8]>,
    pub(crate) count: usize,
    pub(crate) no_values: bool,
}

/// Redis 8.0's reply to NOVALUES anywhere but in HSCAN (SCAN, SSCAN, ZSCAN).
pub(super) const NOVALUES_ONLY_HSCAN: Error =
    Error::Static("ERR NOVALUES option can only be used in HSCAN");

/// Parses `cursor [MATCH pattern] [COUNT count] [NOVALUES]` starting at
/// `at`, options in any order and checked left to right as Redis does;
/// NOVALUES is refused unless `hash` (the HSCAN of an existing hash).
pub(super) fn scan_args(args: Args<'_>, at: usize, hash: bool) -> Result<ScanArgs<'_>, Error> {
    let cursor = super::scan_cursor(args.get(at))?;
    let mut s = ScanArgs {
        cursor,
        pattern: None,
        count: 10,
        no_values: false,
    };
    let mut i = at + 1;
    while i < args.len() {
        let (opt, has_next) = (args.get(i), i + 1 < args.len());
        if eq_ic(opt, "NOVALUES") {
            if !hash {
                return Err(NOVALUES_ONLY_HSCAN);
            }
            s.no_values = true;
            i += 1;
            continue;
        }
        if eq_ic(opt, "COUNT") && has_next {
            let n = int_arg(args.get(i + 1))?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            s.count = n as usize;
        } else if eq_ic(opt, "MATCH") && has_next {
            let p = args.get(i + 1);
            s.pattern = (p != b"*").then_some(p);
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    Ok(s)
}

fn hscan(ctx: &mut Ctx) -> CmdResult {
    // Redis's order: the cursor, then the key, then the options (a missing
    // key answers an empty scan whatever options follow).
    super::scan_cursor(ctx.args.get(2))?;
    let key = ctx.key(1);
    let Some(h) = lookup(ctx.ks, key, true)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(Done);
    };
    let s = scan_args(ctx.args, 2, true)?;
    let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Redis 8.0 counts the fields sampled against COUNT (7.0 counted fields
    // and values both), matching the pattern or not.
    let next = h.scan(s.cursor, s.count, |f, v| {
        if s.pattern.is_none_or(|p| glob_match(p, f, false)) {
            let v = if s.no_values { Vec::new() } else { v.to_vec() };
            items.push((f.to_vec(), v));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(items.len() * if s.no_values { 1 } else { 2 });
    for (f, v) in items {
        ctx.out.bulk(&f);
        if !s.no_values {
            ctx.out.bulk(&v);
        }
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// Hash field TTLs (Redis 7.4: HEXPIRE…HPERSIST; Redis 8.0: HGETEX, HSETEX,
// HGETDEL). The order of checks and the error texts follow Redis 8.0's
// `t_hash.c`; the per-field codes are its `SetExRes` / `GetExpireTimeRes`.
// ---------------------------------------------------------------------------

/// Largest accepted deadline, Unix ms (Redis's `HFE_MAX_ABS_TIME_MSEC`).
const HFE_MAX_ABS_TIME_MSEC: i64 = ((1i64 << 48) - 1) >> 2;

/// Per-field results of setting a deadline.
const NO_FIELD: i64 = -2;
const NO_CONDITION: i64 = 0;
const SET_OK: i64 = 1;
const DELETED: i64 = 2;

/// HEXPIRE's (and ZEXPIRE's) `NX | XX | GT | LT`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cond {
    None,
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Cond {
    /// The option `opt`, or `None` when it is not one (the list word
    /// follows the time directly).
    pub(super) fn parse(opt: &[u8]) -> Cond {
        if eq_ic(opt, "NX") {
            Cond::Nx
        } else if eq_ic(opt, "XX") {
            Cond::Xx
        } else if eq_ic(opt, "GT") {
            Cond::Gt
        } else if eq_ic(opt, "LT") {
            Cond::Lt
        } else {
            Cond::None
        }
    }

    /// Whether the condition refuses replacing the deadline `prev` by `at`;
    /// `prev == no_ttl` (no TTL) counts as an infinite deadline.
    pub(super) fn refuses(self, prev: u64, at: u64, no_ttl: u64) -> bool {
        if prev == no_ttl {
            return matches!(self, Cond::Xx | Cond::Gt);
        }
        self == Cond::Nx || (self == Cond::Gt && prev >= at) || (self == Cond::Lt && prev <= at)
    }
}

/// Redis's `parseExpireTime`: a non-negative integer in seconds or
/// milliseconds, plus `base` (the command's instant, or 0 for absolute
/// times); the result in Unix ms.
pub(super) fn parse_expire(ctx: &Ctx, arg: &[u8], seconds: bool, base: u64) -> Result<u64, Error> {
    let bad = || {
        Error::Owned(format!(
            "ERR invalid expire time in '{}' command",
            ctx.cmd.name
        ))
    };
    let mut val = int_arg(arg)?;
    if val < 0 {
        return Err(Error::Static("ERR invalid expire time, must be >= 0"));
    }
    if seconds {
        if val > HFE_MAX_ABS_TIME_MSEC / 1000 {
            return Err(bad());
        }
        val *= 1000;
    }
    if val > HFE_MAX_ABS_TIME_MSEC - base as i64 {
        return Err(bad());
    }
    Ok(val as u64 + base)
}

/// `FIELDS numfields field …` with the FIELDS word at `at`: checks it as
/// Redis does and returns the index of the first field.
fn fields_arg(ctx: &Ctx, at: usize, bad_count: &'static str) -> Result<usize, Error> {
    subkeys_arg(ctx, at, "FIELDS", bad_count)
}

/// `WORD count name …` (`FIELDS`, or ZEXPIRE's `MEMBERS`) with the word at
/// `at`, checked as Redis checks `FIELDS`; returns the index of the first
/// name.
pub(super) fn subkeys_arg(
    ctx: &Ctx,
    at: usize,
    word: &str,
    bad_count: &'static str,
) -> Result<usize, Error> {
    if at >= ctx.argc() || !eq_ic(ctx.args.get(at), word) {
        return Err(Error::Owned(format!(
            "ERR Mandatory argument {word} is missing or not at the right position"
        )));
    }
    let n = match ctx.args.len() > at + 1 {
        true => parse_i64(ctx.args.get(at + 1)).filter(|&n| n >= 1),
        false => None,
    }
    .ok_or(Error::Static(bad_count))?;
    if n as u64 != (ctx.argc() - at - 2) as u64 {
        return Err(Error::Owned(format!(
            "ERR The `num{}` parameter must match the number of arguments",
            word.to_ascii_lowercase()
        )));
    }
    Ok(at + 2)
}

/// Redis's `hashTypeSetEx`: sets (`Some(at)`) or drops (`None`) one field's
/// deadline under `cond`, deleting the field if `at` has already come.
/// `now`: [`Keyspace::expiry_now`](crate::keyspace::Keyspace::expiry_now).
fn set_field_expire(
    h: &mut Hash,
    field: &[u8],
    at: Option<u64>,
    cond: Cond,
    now: Option<u64>,
) -> i64 {
    let Some(prev) = h.expire_at(field) else {
        return NO_FIELD;
    };
    let Some(at) = at else {
        if prev == NO_TTL {
            return NO_CONDITION;
        }
        h.set_expire(field, NO_TTL);
        return SET_OK;
    };
    if cond.refuses(prev, at, NO_TTL) {
        return NO_CONDITION;
    }
    if now.is_some_and(|now| at <= now) {
        h.remove(field);
        return DELETED;
    }
    h.set_expire(field, at);
    SET_OK
}

/// Deletes `key` if the command left its hash empty, announcing it (part
/// of the command's changes, not one more).
fn delete_if_empty(ctx: &mut Ctx, key: &[u8]) {
    let empty = matches!(
        ctx.ks.peek_raw(key),
        Some(Entry { value: Value::Hash(h), .. }) if h.is_empty()
    );
    if empty {
        ctx.ks.remove_raw_entry(key);
        ctx.ks.signal_by(key, notify::GENERIC, "del", 0);
    }
}

/// Logs fields a command deleted because their new deadline had already
/// come, one `HDEL` each (Redis's `propagateHashFieldDeletion`); the
/// command itself is then logged without them, or not at all.
fn log_deleted_fields(ctx: &mut Ctx, key: &[u8], fields: &[&[u8]]) {
    for f in fields {
        ctx.ks.also_propagate(|| crate::argv![b"HDEL", key, f]);
    }
}

fn enable_field_ttls(ctx: &Ctx) {
    ctx.shared
        .store
        .field_ttls
        .store(true, std::sync::atomic::Ordering::Relaxed);
}

fn hexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, false)
}

fn hpexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, false)
}

fn hexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, true)
}

fn hpexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, true)
}

/// HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT (`hexpireGenericCommand`).
fn expire_generic(ctx: &mut Ctx, seconds: bool, absolute: bool) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let expiry_now = ctx.ks.expiry_now();
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let at = parse_expire(ctx, args.get(2), seconds, if absolute { 0 } else { now })?;
    let cond = Cond::parse(args.get(3));
    let fields_at = if cond == Cond::None { 3 } else { 4 };
    let first = fields_arg(
        ctx,
        fields_at,
        "ERR Parameter `numFields` should be greater than 0",
    )?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.int(NO_FIELD);
        }
        return Ok(Done);
    }
    enable_field_ttls(ctx);
    let h = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    h.make_ex();
    let (mut set, mut deleted): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for i in first..args.len() {
        let field = args.get(i);
        let res = set_field_expire(h, field, Some(at), cond, expiry_now);
        match res {
            SET_OK => set.push(field),
            DELETED => deleted.push(field),
            _ => {}
        }
        ctx.out.int(res);
    }
    if set.len() + deleted.len() > 0 {
        let event = if deleted.is_empty() {
            "hexpire"
        } else {
            "hdel"
        };
        ctx.ks
            .signal_by(key, notify::HASH, event, (set.len() + deleted.len()) as u64);
    }
    delete_if_empty(ctx, key);
    log_deleted_fields(ctx, key, &deleted);
    if set.is_empty() {
        ctx.prevent_propagation();
        return Ok(Done);
    }
    // Logged as HPEXPIREAT with the absolute deadline, so a replay keeps
    // it, and with only the fields it set.
    ctx.propagate_as(|| super::absolute_expire_argv(b"HPEXPIREAT", args, fields_at, at, &set));
    Ok(Done)
}

fn httl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, true)
}

fn hpttl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, true)
}

fn hexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, false)
}

fn hpexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, false)
}

/// HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME (`httlGenericCommand`): -2 no
/// such field, -1 no TTL, else the time left or the deadline (seconds
/// round up).
fn ttl_generic(ctx: &mut Ctx, seconds: bool, relative: bool) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let exists = lookup(ctx.ks, key, true)?.is_some();
    let first = fields_arg(ctx, 2, "ERR Number of fields must be a positive integer")?;
    let h = if exists {
        lookup(ctx.ks, key, false)?
    } else {
        None
    };
    let ttl = super::SubkeyTtl {
        now,
        no_ttl: NO_TTL,
        seconds,
        relative,
    };
    ttl.reply(ctx.out, args, first, |f| {
        h.as_ref().and_then(|h| h.expire_at(f))
    });
    Ok(Done)
}

/// HPERSIST: 1 dropped, -1 had no TTL, -2 no such field.
fn hpersist(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    // While the AOF loads no field is expired yet: the file says when one
    // was (an HDEL of its own), and persisted before that it stays.
    let now = ctx.ks.expiry_now();
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let first = fields_arg(ctx, 2, "ERR Number of fields must be a positive integer")?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.int(NO_FIELD);
        }
        return Ok(Done);
    }
    let h = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let mut changed = false;
    for i in first..args.len() {
        let field = args.get(i);
        let n = match h.expire_at(field) {
            None => NO_FIELD,
            Some(NO_TTL) => -1,
            Some(at) if now.is_some_and(|now| at < now) => NO_FIELD,
            Some(_) => {
                h.set_expire(field, NO_TTL);
                changed = true;
                SET_OK
            }
        };
        ctx.out.int(n);
    }
    if changed {
        ctx.ks.signal(key, notify::HASH, "hpersist");
    } else {
        ctx.prevent_propagation();
    }
    Ok(Done)
}

/// HGETDEL key FIELDS numfields field …: the values, then the fields are gone.
fn hgetdel(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let first = fields_arg(ctx, 2, "ERR Number of fields must be a positive integer")?;
    ctx.out.array(args.len() - first);
    let mut h = if exists {
        lookup(ctx.ks, key, false)?
    } else {
        None
    };
    let mut deleted = 0;
    for i in first..args.len() {
        let field = args.get(i);
        match h.as_mut().and_then(|h| h.get(field)) {
            Some(v) => {
                ctx.out.bulk(v);
                if let Some(h) = h.as_mut() {
                    h.remove(field);
                }
                deleted += 1;
            }
            None => ctx.out.null(),
        }
    }
    if deleted == 0 {
        ctx.prevent_propagation();
        return Ok(Done);
    }
    ctx.ks.signal_by(key, notify::HASH, "hdel", deleted);
    delete_if_empty(ctx, key);
    // Logged as the HDEL it amounts to (the fields as given).
    ctx.propagate_as(|| {
        let mut v = crate::argv![b"HDEL", key];
        v.extend((first..args.len()).map(|i| args.get(i).to_vec()));
        v
    });
    Ok(Done)
}

/// HGETEX key [EX s | PX ms | EXAT t | PXAT t | PERSIST] FIELDS numfields field …
fn hgetex(ctx: &mut Ctx) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let expiry_now = ctx.ks.expiry_now();
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let opt = args.get(2);
    // (seconds, absolute) for the four time options.
    let timed = [
        ("EX", true, false),
        ("PX", false, false),
        ("EXAT", true, true),
        ("PXAT", false, true),
    ]
    .into_iter()
    .find(|(name, _, _)| eq_ic(opt, name));
    let persist = eq_ic(opt, "PERSIST");
    let (set, fields_at): (Option<Option<u64>>, usize) = match timed {
        Some((_, seconds, absolute)) => {
            let base = if absolute { 0 } else { now };
            (
                Some(Some(parse_expire(ctx, args.get(3), seconds, base)?)),
                4,
            )
        }
        None if persist => (Some(None), 3),
        None => (None, 2),
    };
    let first = fields_arg(
        ctx,
        fields_at,
        "ERR Number of fields must be a positive integer",
    )?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.null();
        }
        return Ok(Done);
    }
    if set.is_some_and(|at| at.is_some()) {
        enable_field_ttls(ctx);
    }
    let h = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    if set.is_some() {
        h.make_ex();
    }
    let (mut updated, mut deleted) = (0, Vec::new());
    for i in first..args.len() {
        let field = args.get(i);
        let Some(v) = h.get(field) else {
            ctx.out.null();
            continue;
        };
        ctx.out.bulk(v);
        if let Some(at) = set {
            match set_field_expire(h, field, at, Cond::None, expiry_now) {
                SET_OK => updated += 1,
                DELETED => deleted.push(field),
                _ => {}
            }
        }
    }
    // One change per field whose deadline moved or that went.
    let changes = (updated + deleted.len()) as u64;
    if updated > 0 {
        let event = if persist { "hpersist" } else { "hexpire" };
        ctx.ks.signal_by(key, notify::HASH, event, changes);
    } else if !deleted.is_empty() {
        ctx.ks.signal_by(key, notify::HASH, "hdel", changes);
    }
    delete_if_empty(ctx, key);
    log_deleted_fields(ctx, key, &deleted);
    // Never logged as itself: a new deadline as HPEXPIREAT (absolute ms),
    // PERSIST as HPERSIST, fields it deleted as their HDELs.
    match set {
        Some(at) if updated > 0 => ctx.propagate_as(|| {
            let mut v = match at {
                Some(at) => crate::argv![b"HPEXPIREAT", key, at.to_string()],
                None => crate::argv![b"HPERSIST", key],
            };
            v.extend((fields_at..args.len()).map(|i| args.get(i).to_vec()));
            v
        }),
        _ => ctx.prevent_propagation(),
    }
    Ok(Done)
}

/// HSETEX key [FNX | FXX] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]
/// FIELDS numfields field value …: 1 if the fields were set, 0 if the
/// condition kept them from it.
fn hsetex(ctx: &mut Ctx) -> CmdResult {
    let (args, key, now, lim) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms, limits(ctx));
    let expiry_now = ctx.ks.expiry_now();
    let arity = || {
        Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        ))
    };
    let (mut fnx, mut fxx, mut keepttl) = (false, false, false);
    let mut at: Option<u64> = None;
    // Where the EX/PX/EXAT option is, to log it as PXAT.
    let mut relative_at: Option<usize> = None;
    let mut first = 0;
    let mut i = 2;
    while i < args.len() {
        let a = args.get(i);
        let timed = [
            ("EX", true, false),
            ("PX", false, false),
            ("EXAT", true, true),
            ("PXAT", false, true),
        ]
        .into_iter()
        .find(|(name, _, _)| eq_ic(a, name));
        if eq_ic(a, "FIELDS") {
            if i + 3 >= args.len() {
                return Err(arity());
            }
            let n = parse_i64(args.get(i + 1))
                .filter(|&n| (1..=i32::MAX as i64).contains(&n))
                .ok_or(Error::Static("ERR invalid number of fields"))?;
            let remaining = args.len() - i - 2;
            if remaining % 2 != 0 || n as usize != remaining / 2 {
                return Err(arity());
            }
            first = i + 2;
            break;
        } else if let Some((_, seconds, absolute)) = timed {
            if at.is_some() || keepttl {
                return Err(Error::Static(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                ));
            }
            if i + 1 >= args.len() {
                return Err(Error::Static("ERR missing expire time"));
            }
            let base = if absolute { 0 } else { now };
            at = Some(parse_expire(ctx, args.get(i + 1), seconds, base)?);
            relative_at = (seconds || !absolute).then_some(i);
            i += 1;
        } else if eq_ic(a, "KEEPTTL") {
            if at.is_some() || keepttl {
                return Err(Error::Static(
                    "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified",
                ));
            }
            keepttl = true;
        } else if eq_ic(a, "FXX") || eq_ic(a, "FNX") {
            if fnx || fxx {
                return Err(Error::Static(
                    "ERR Only one of FXX or FNX arguments can be specified",
                ));
            }
            fxx = eq_ic(a, "FXX");
            fnx = !fxx;
        } else {
            return Err(Error::Owned(format!(
                "ERR unknown argument: {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    if first == 0 {
        // Unreachable with HSETEX's arity (Redis asserts), kept total.
        return Err(arity());
    }
    let exists = lookup(ctx.ks, key, false)?.is_some();
    if !exists && fxx {
        ctx.prevent_propagation();
        ctx.out.int(0);
        return Ok(Done);
    }
    if fnx || fxx {
        let h = lookup(ctx.ks, key, false)?;
        let found = (first..args.len())
            .step_by(2)
            .filter(|&j| h.as_ref().is_some_and(|h| h.contains(args.get(j))))
            .count();
        let all = found == (args.len() - first) / 2;
        if (fnx && found > 0) || (fxx && !all) {
            ctx.prevent_propagation();
            ctx.out.int(0);
            return Ok(Done);
        }
    }
    if at.is_some() {
        enable_field_ttls(ctx);
    }
    let h = lookup_or_create(ctx.ks, key)?;
    if at.is_some() {
        h.make_ex();
    }
    let (mut updated, mut deleted) = (0, Vec::new());
    for j in (first..args.len()).step_by(2) {
        let (field, value) = (args.get(j), args.get(j + 1));
        if at.is_some() || keepttl {
            h.set_keep_ttl(field, value, lim);
        } else {
            h.set(field, value, lim);
        }
        if at.is_some() {
            match set_field_expire(h, field, at, Cond::None, expiry_now) {
                SET_OK => updated += 1,
                DELETED => deleted.push(field),
                _ => {}
            }
        }
    }
    // One change per field set (Redis's `field_count`).
    ctx.ks
        .signal_by(key, notify::HASH, "hset", ((args.len() - first) / 2) as u64);
    if deleted.len() + updated > 0 {
        let event = if deleted.is_empty() {
            "hexpire"
        } else {
            "hdel"
        };
        ctx.ks.notify(notify::HASH, event, key);
    }
    ctx.out.int(1);
    delete_if_empty(ctx, key);
    if !deleted.is_empty() {
        // A deadline already past: the fields were set and deleted, which
        // the HDELs say on their own.
        log_deleted_fields(ctx, key, &deleted);
        ctx.prevent_propagation();
    } else if let (Some(at), Some(opt)) = (at, relative_at) {
        // EX, PX and EXAT are logged as PXAT, so a replay keeps the deadline.
        ctx.propagate_as(|| {
            let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
            v[opt] = b"PXAT".to_vec();
            v[opt + 1] = at.to_string().into_bytes();
            v
        });
    }
    Ok(Done)
}
