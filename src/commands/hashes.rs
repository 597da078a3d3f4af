//! Hash commands: HSET/HMSET/HSETNX, HGET/HMGET, HDEL, HLEN, HSTRLEN,
//! HEXISTS, HKEYS/HVALS/HGETALL, HINCRBY/HINCRBYFLOAT, HRANDFIELD, HSCAN.
//!
//! The data structure and its encoding rules live in
//! [`crate::types::hash`]; this file is argument parsing, reply shapes and
//! the order of checks, which follows Redis 7.0's `t_hash.c` so the same
//! bad input yields the same error. The HSCAN/SSCAN option parser is here
//! too ([`scan_args`]) and shared with `sets.rs`.

use super::flags::*;
use super::{Args, CmdResult, Command, Ctx, Done, Error, Keys, int_arg};
use crate::keyspace::{Entry, Keyspace, Value, notify};
use crate::protocol::Reply;
use crate::types::hash::{Hash, Limits};
use crate::types::ldouble::LDouble;
use crate::util::{eq_ic, glob_match, parse_i64};

const G: &str = "hash";

pub static COMMANDS: &[Command] = &[
    Command::new("hset", -4, WRITE | DENYOOM | FAST, Keys::ONE, hset)
        .doc(G, "2.0.0", "O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", "Creates or modifies the value of a field in a hash.")
        .syntax("key field value [field value ...]"),
    Command::new("hmset", -4, WRITE | DENYOOM | FAST, Keys::ONE, hset)
        .doc(G, "2.0.0", "O(N) where N is the number of fields being set.", "Sets the values of multiple fields.")
        .syntax("key field value [field value ...]"),
    Command::new("hsetnx", 4, WRITE | DENYOOM | FAST, Keys::ONE, hsetnx)
        .doc(G, "2.0.0", "O(1)", "Sets the value of a field in a hash only when the field doesn't exist.")
        .syntax("key field value"),
    Command::new("hget", 3, READONLY | FAST, Keys::ONE, hget)
        .doc(G, "2.0.0", "O(1)", "Returns the value of a field in a hash.")
        .syntax("key field"),
    Command::new("hmget", -3, READONLY | FAST, Keys::ONE, hmget)
        .doc(G, "2.0.0", "O(N) where N is the number of fields being requested.", "Returns the values of all fields in a hash.")
        .syntax("key field [field ...]"),
    Command::new("hdel", -3, WRITE | FAST, Keys::ONE, hdel)
        .doc(G, "2.0.0", "O(N) where N is the number of fields to be removed.", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.")
        .syntax("key field [field ...]"),
    Command::new("hlen", 2, READONLY | FAST, Keys::ONE, hlen)
        .doc(G, "2.0.0", "O(1)", "Returns the number of fields in a hash.")
        .syntax("key"),
    Command::new("hstrlen", 3, READONLY | FAST, Keys::ONE, hstrlen)
        .doc(G, "3.2.0", "O(1)", "Returns the length of the value of a field.")
        .syntax("key field"),
    Command::new("hexists", 3, READONLY | FAST, Keys::ONE, hexists)
        .doc(G, "2.0.0", "O(1)", "Determines whether a field exists in a hash.")
        .syntax("key field"),
    Command::new("hkeys", 2, READONLY, Keys::ONE, hkeys)
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields in a hash.")
        .syntax("key"),
    Command::new("hvals", 2, READONLY, Keys::ONE, hvals)
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all values in a hash.")
        .syntax("key"),
    Command::new("hgetall", 2, READONLY, Keys::ONE, hgetall)
        .doc(G, "2.0.0", "O(N) where N is the size of the hash.", "Returns all fields and values in a hash.")
        .syntax("key"),
    Command::new("hincrby", 4, WRITE | DENYOOM | FAST, Keys::ONE, hincrby)
        .doc(G, "2.0.0", "O(1)", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.")
        .syntax("key field increment"),
    Command::new("hincrbyfloat", 4, WRITE | DENYOOM | FAST, Keys::ONE, hincrbyfloat)
        .doc(G, "2.6.0", "O(1)", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.")
        .syntax("key field increment"),
    Command::new("hrandfield", -2, READONLY, Keys::ONE, hrandfield)
        .doc(G, "6.2.0", "O(N) where N is the number of fields returned", "Returns one or more random fields from a hash.")
        .syntax("key [count [WITHVALUES]]"),
    Command::new("hscan", -3, READONLY, Keys::ONE, hscan)
        .doc(G, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over fields and values of a hash.")
        .syntax("key cursor [MATCH pattern] [COUNT count]"),
];

/// The hash at `key`: None if missing, WRONGTYPE for another type.
fn lookup<'a>(
    ks: &'a mut Keyspace<'_>,
    key: &[u8],
    read: bool,
) -> Result<Option<&'a mut Hash>, Error> {
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
    let mut created = 0;
    for i in (2..args.len()).step_by(2) {
        created += h.set(args.get(i), args.get(i + 1), lim) as i64;
    }
    ctx.ks.signal(key, notify::HASH, "hset");
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
    match lookup(ctx.ks, ctx.args.get(1), true)?.and_then(|h| h.get(field)) {
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
        ctx.ks.signal(key, notify::HASH, "hdel");
        if emptied {
            ctx.ks.remove(key);
            ctx.ks.signal(key, notify::GENERIC, "del");
        }
    }
    ctx.out.int(deleted);
    Ok(Done)
}

fn hlen(ctx: &mut Ctx) -> CmdResult {
    let n = lookup(ctx.ks, ctx.args.get(1), true)?.map_or(0, |h| h.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn hstrlen(ctx: &mut Ctx) -> CmdResult {
    let field = ctx.args.get(2);
    let n = lookup(ctx.ks, ctx.args.get(1), true)?
        .and_then(|h| h.get(field))
        .map_or(0, |v| v.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn hexists(ctx: &mut Ctx) -> CmdResult {
    let field = ctx.args.get(2);
    let found = lookup(ctx.ks, ctx.args.get(1), true)?.is_some_and(|h| h.contains(field));
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
    let h = lookup(ctx.ks, ctx.args.get(1), true)?;
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
    h.set(field, itoa::Buffer::new().format(new).as_bytes(), lim);
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
    h.set(field, text.as_bytes(), lim);
    ctx.ks.signal(key, notify::HASH, "hincrbyfloat");
    ctx.out.bulk(text.as_bytes());
    Ok(Done)
}

/// Redis's `getRangeLongFromObjectOrReply(…, -LONG_MAX, LONG_MAX, …)`.
pub(super) fn count_arg(arg: &[u8]) -> Result<i64, Error> {
    match int_arg(arg)? {
        i64::MIN => Err(Error::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        n => Ok(n),
    }
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
/// MATCH/COUNT options.
pub(super) struct ScanArgs<'a> {
    pub cursor: u64,
    pub pattern: Option<&'a [u8]>,
    pub count: usize,
}

pub(super) fn parse_cursor(arg: &[u8]) -> Result<u64, Error> {
    let invalid = Error::Static("ERR invalid cursor");
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        return if arg.is_empty() { Ok(0) } else { Err(invalid) };
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(invalid);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add((c - b'0') as u64))
            .ok_or(Error::Static("ERR invalid cursor"))?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses `cursor [MATCH pattern] [COUNT count]` starting at `at`.
pub(super) fn scan_args(args: Args<'_>, at: usize) -> Result<ScanArgs<'_>, Error> {
    let cursor = parse_cursor(args.get(at))?;
    let mut s = ScanArgs {
        cursor,
        pattern: None,
        count: 10,
    };
    let mut i = at + 1;
    while i < args.len() {
        let (opt, has_next) = (args.get(i), i + 1 < args.len());
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
    parse_cursor(ctx.args.get(2))?;
    let Some(h) = lookup(ctx.ks, ctx.args.get(1), true)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(Done);
    };
    let s = scan_args(ctx.args, 2)?;
    let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Redis counts fields and values separately against COUNT.
    let next = h.scan(s.cursor, s.count.div_ceil(2), |f, v| {
        if s.pattern.is_none_or(|p| glob_match(p, f, false)) {
            items.push((f.to_vec(), v.to_vec()));
        }
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(items.len() * 2);
    for (f, v) in items {
        ctx.out.bulk(&f);
        ctx.out.bulk(&v);
    }
    Ok(Done)
}
