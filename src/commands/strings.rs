//! String commands: GET/SET and their variants (SETNX, SETEX, PSETEX,
//! GETSET, GETDEL, GETEX), MGET/MSET/MSETNX, APPEND, STRLEN,
//! GETRANGE/SUBSTR, SETRANGE and the INCR/DECR family; Redis 8.4's
//! compare-and-set commands (SET IFEQ/IFNE/IFDEQ/IFDNE, DELEX, DIGEST,
//! MSETEX) and Redis 8.8's bounded INCREX.
//!
//! SET, SETNX, SETEX and PSETEX share one implementation, [`set_generic`],
//! as in Redis's `t_string.c`, because their replies, option parsing and
//! expire-time errors must agree exactly. Every write picks the string
//! encoding Redis would report (see [`Str`]): values taken from arguments are
//! `int`/`embstr`/`raw` by content, in-place edits (APPEND, SETRANGE) are
//! `raw`, INCR results `int`, INCRBYFLOAT results are never `int`.
//! INCRBYFLOAT's long-double arithmetic lives in [`crate::types::ldouble`].

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::propagate::del_name;
use crate::keyspace::{Entry, HashedKey, Keyspace, Str, Value, notify};
use crate::types::ldouble::LDouble;
use crate::util::eq_ic;

const G: &str = "string";

/// MSET/MSETNX keys: every other argument from the first.
const PAIRS: Keys = Keys::Range {
    first: 1,
    last: -1,
    step: 2,
};

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("get", 2, READONLY | FAST, Keys::ONE, &(get as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns the string value of a key.")
        .syntax("key"),
    Command::new("set", -3, WRITE | DENYOOM, Keys::ONE, &(set as Handler))
        .doc(G, "1.0.0", "O(1)", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.")
        .syntax("key value [NX | XX | IFEQ ifeq-value | IFNE ifne-value | IFDEQ ifdeq-digest | IFDNE ifdne-digest] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    Command::new("delex", -2, WRITE | FAST, Keys::ONE, &(delex as Handler))
        .doc(G, "8.4.0", "O(1) for IFEQ/IFNE, O(N) for IFDEQ/IFDNE where N is the length of the string value.", "Conditionally removes the specified key based on value or digest comparison.")
        .syntax("key [IFEQ ifeq-value | IFNE ifne-value | IFDEQ ifdeq-digest | IFDNE ifdne-digest]"),
    Command::new("digest", 2, READONLY | FAST, Keys::ONE, &(digest as Handler))
        .doc(G, "8.4.0", "O(N) where N is the length of the string value.", "Returns the XXH3 hash of a string value.")
        .syntax("key"),
    Command::new("msetex", -4, WRITE | DENYOOM, Keys::NumPairs { count_at: 1 }, &(msetex as Handler))
        .doc(G, "8.4.0", "O(N) where N is the number of keys to set.", "Atomically sets multiple string keys with a shared expiration in a single operation. Supports flexible argument parsing where condition and expiration flags can appear in any order.")
        .syntax("numkeys key value [key value ...] [NX | XX] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
    Command::new("setnx", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(setnx as Handler))
        .doc(G, "1.0.0", "O(1)", "Set the string value of a key only when the key doesn't exist.")
        .syntax("key value"),
    Command::new("setex", 4, WRITE | DENYOOM, Keys::ONE, &(setex as Handler))
        .doc(G, "2.0.0", "O(1)", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.")
        .syntax("key seconds value"),
    Command::new("psetex", 4, WRITE | DENYOOM, Keys::ONE, &(setex as Handler))
        .doc(G, "2.6.0", "O(1)", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.")
        .syntax("key milliseconds value"),
    Command::new("getset", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(getset as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns the previous string value of a key after setting it to a new value.")
        .syntax("key value"),
    Command::new("getdel", 2, WRITE | FAST, Keys::ONE, &(getdel as Handler))
        .doc(G, "6.2.0", "O(1)", "Returns the string value of a key after deleting the key.")
        .syntax("key"),
    Command::new("getex", -2, WRITE | FAST, Keys::ONE, &(getex as Handler))
        .doc(G, "6.2.0", "O(1)", "Returns the string value of a key after setting its expiration time.")
        .syntax("key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]"),
    Command::new("mget", -2, READONLY | FAST, Keys::ALL_ARGS, &(mget as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of keys to retrieve.", "Atomically returns the string values of one or more keys.")
        .syntax("key [key ...]"),
    Command::new("mset", -3, WRITE | DENYOOM, PAIRS, &(mset as Handler))
        .doc(G, "1.0.1", "O(N) where N is the number of keys to set.", "Atomically creates or modifies the string values of one or more keys.")
        .syntax("key value [key value ...]"),
    Command::new("msetnx", -3, WRITE | DENYOOM, PAIRS, &(mset as Handler))
        .doc(G, "1.0.1", "O(N) where N is the number of keys to set.", "Atomically modifies the string values of one or more keys only when all keys don't exist.")
        .syntax("key value [key value ...]"),
    Command::new("append", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(append as Handler))
        .doc(G, "2.0.0", "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.", "Appends a string to the value of a key. Creates the key if it doesn't exist.")
        .syntax("key value"),
    Command::new("strlen", 2, READONLY | FAST, Keys::ONE, &(strlen as Handler))
        .doc(G, "2.2.0", "O(1)", "Returns the length of a string value.")
        .syntax("key"),
    Command::new("getrange", 4, READONLY, Keys::ONE, &(getrange as Handler))
        .doc(G, "2.4.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", "Returns a substring of the string stored at a key.")
        .syntax("key start end"),
    Command::new("substr", 4, READONLY, Keys::ONE, &(getrange as Handler))
        .doc(G, "1.0.0", "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", "Returns a substring from a string value.")
        .syntax("key start end"),
    Command::new("setrange", 4, WRITE | DENYOOM, Keys::ONE, &(setrange as Handler))
        .doc(G, "2.2.0", "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.")
        .syntax("key offset value"),
    Command::new("incr", 2, WRITE | DENYOOM | FAST, Keys::ONE, &(incr as Handler))
        .doc(G, "1.0.0", "O(1)", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key"),
    Command::new("increx", -2, WRITE | DENYOOM | FAST, Keys::ONE, &(increx as Handler))
        .doc(G, "8.8.0", "O(1)", "Increments the numeric value of a key by a number and sets its expiration time. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key [BYFLOAT float | BYINT integer] [SATURATE] [LBOUND lowerbound] [UBOUND upperbound] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST] [ENX]"),
    Command::new("decr", 2, WRITE | DENYOOM | FAST, Keys::ONE, &(decr as Handler))
        .doc(G, "1.0.0", "O(1)", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key"),
    Command::new("incrby", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(incrby as Handler))
        .doc(G, "1.0.0", "O(1)", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key increment"),
    Command::new("decrby", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(decrby as Handler))
        .doc(G, "1.0.0", "O(1)", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key decrement"),
    Command::new("incrbyfloat", 3, WRITE | DENYOOM | FAST, Keys::ONE, &(incrbyfloat as Handler))
        .doc(G, "2.6.0", "O(1)", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.")
        .syntax("key increment"),
];

/// The string at `key`: None if missing, WRONGTYPE for another type.
/// `read` counts a keyspace hit or miss (Redis's `lookupKeyRead`).
pub(crate) fn lookup_str<'a, 'n>(
    ks: &'a mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
    read: bool,
) -> Result<Option<&'a mut Str>, Error> {
    let key = key.into();
    let e = if read { ks.get_read(key) } else { ks.get(key) };
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(Error::WrongType),
    }
}

/// Redis's `checkStringLength`: the size limit of a string built in place.
fn check_length(ctx: &Ctx, len: u64, append: u64) -> CmdResult {
    let total = len.checked_add(append);
    match total {
        Some(t) if t <= ctx.shared.config.proto_max_bulk_len().max(0) as u64 => Ok(Done),
        _ => Err(Error::Static(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        )),
    }
}

fn get(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    match lookup_str(ctx.ks, key, true)? {
        None => ctx.out.null(),
        Some(s) => ctx.out.bulk(&s.data),
    }
    Ok(Done)
}

/// Which of SET's mutually exclusive expiry options was given.
#[derive(Clone, Copy, PartialEq)]
enum ExpireOpt {
    None,
    Ex,
    Px,
    ExAt,
    PxAt,
    KeepTtl,
    Persist,
}

/// Options of SET and GETEX (Redis's `parseExtendedStringArgumentsOrReply`).
struct SetOpts<'a> {
    nx: bool,
    xx: bool,
    /// Redis 8.4's IFEQ/IFNE/IFDEQ/IFDNE and its argument.
    cond: Option<(Cond, &'a [u8])>,
    get: bool,
    expire: ExpireOpt,
    expire_arg: &'a [u8],
}

/// Parses options from `first` on. `for_set` selects SET's grammar
/// (NX/XX/GET/KEEPTTL) over GETEX's (PERSIST). Redis accepts a repeated
/// expiry option of the same kind (the last wins), so this does too.
fn parse_set_opts<'a>(
    ctx: &Ctx<'a, '_>,
    first: usize,
    for_set: bool,
) -> Result<SetOpts<'a>, Error> {
    let mut o = SetOpts {
        nx: false,
        xx: false,
        cond: None,
        get: false,
        expire: ExpireOpt::None,
        expire_arg: &[],
    };
    let args = ctx.args;
    let mut i = first;
    while i < args.len() {
        let opt = args.get(i);
        let has_next = i + 1 < args.len();
        let free_for = |kind: ExpireOpt| o.expire == ExpireOpt::None || o.expire == kind;
        if for_set && eq_ic(opt, "NX") && !o.xx && o.cond.is_none() {
            o.nx = true;
        } else if for_set && eq_ic(opt, "XX") && !o.nx && o.cond.is_none() {
            o.xx = true;
        } else if let Some(c) =
            Cond::parse(opt).filter(|_| for_set && has_next && !o.nx && !o.xx && o.cond.is_none())
        {
            o.cond = Some((c, args.get(i + 1)));
            i += 1;
        } else if for_set && eq_ic(opt, "GET") {
            o.get = true;
        } else if for_set && eq_ic(opt, "KEEPTTL") && free_for(ExpireOpt::KeepTtl) {
            o.expire = ExpireOpt::KeepTtl;
        } else if !for_set && eq_ic(opt, "PERSIST") && free_for(ExpireOpt::Persist) {
            o.expire = ExpireOpt::Persist;
        } else if let Some(kind) = expire_kind(opt).filter(|&k| has_next && free_for(k)) {
            o.expire = kind;
            o.expire_arg = args.get(i + 1);
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    Ok(o)
}

fn expire_kind(opt: &[u8]) -> Option<ExpireOpt> {
    [
        ("EX", ExpireOpt::Ex),
        ("PX", ExpireOpt::Px),
        ("EXAT", ExpireOpt::ExAt),
        ("PXAT", ExpireOpt::PxAt),
    ]
    .into_iter()
    .find(|(name, _)| eq_ic(opt, name))
    .map(|(_, k)| k)
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute expiry in ms.
fn expire_at_ms(ctx: &Ctx, kind: ExpireOpt, arg: &[u8]) -> Result<i64, Error> {
    let n = int_arg(arg)?;
    let invalid = || {
        Error::Owned(format!(
            "ERR invalid expire time in '{}' command",
            ctx.cmd.name
        ))
    };
    let seconds = matches!(kind, ExpireOpt::Ex | ExpireOpt::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid());
    }
    let ms = if seconds { n * 1000 } else { n };
    let at = if matches!(kind, ExpireOpt::Ex | ExpireOpt::Px) {
        ms.checked_add(ctx.ks.now_ms as i64).ok_or_else(invalid)?
    } else {
        ms
    };
    Ok(at)
}

/// Replies for a SET-family command that decided not to write.
enum Abort {
    Null,
    Zero,
}

/// The shared body of SET, SETNX, SETEX and PSETEX (Redis's
/// `setGenericCommand`).
fn set_generic(
    ctx: &mut Ctx,
    opts: &SetOpts,
    value: &[u8],
    ok_int: bool,
    abort: Abort,
) -> CmdResult {
    let key = ctx.args.get(1);
    let expire_at = match opts.expire {
        ExpireOpt::Ex | ExpireOpt::Px | ExpireOpt::ExAt | ExpireOpt::PxAt => {
            Some(expire_at_ms(ctx, opts.expire, opts.expire_arg)?)
        }
        _ => None,
    };
    if opts.get {
        match lookup_str(ctx.ks, key, true)? {
            None => ctx.out.null(),
            Some(s) => ctx.out.bulk(&s.data),
        }
    }
    let found = ctx.ks.exists(key);
    // A condition reads the current value, so it needs a string (or no key).
    let cond_failed = match opts.cond {
        Some((c, arg)) => {
            let cur = lookup_str(ctx.ks, key, false)?.map(|s| s.data.to_vec());
            !c.holds(cur.as_deref(), arg)
        }
        None => false,
    };
    if (opts.nx && found) || (opts.xx && !found) || cond_failed {
        if !opts.get {
            match abort {
                Abort::Null => ctx.out.null(),
                Abort::Zero => ctx.out.int(0),
            }
        }
        return Ok(Done);
    }
    let v = Value::Str(Str::new(value));
    match expire_at {
        Some(at) => {
            let mut e = Entry::new(v);
            e.expire_at = at.max(1) as u64;
            ctx.ks.set_entry(key, e);
        }
        None if opts.expire == ExpireOpt::KeepTtl => ctx.ks.set_keep_ttl(key, v),
        None => ctx.ks.set(key, v),
    }
    ctx.ks.signal(key, notify::STRING, "set");
    // Redis 7.0 stores even a time already past; the key expires on its
    // next access (or by active expiry), with the `expired` event then.
    if let Some(at) = expire_at {
        ctx.ks.notify(notify::GENERIC, "expire", key);
        // Logged with the absolute time, so a replay sets the same expiry;
        // a SET that gave PXAT itself is logged as it came, as Redis 7.2+
        // does (its GET included).
        if opts.expire != ExpireOpt::PxAt || opts.cond.is_some() {
            let at = at.max(1).to_string();
            ctx.propagate_as(|| crate::argv![b"SET", key, value, b"PXAT", at.as_bytes()]);
        }
    } else if opts.cond.is_some() {
        // The condition held: a replica sets the value unconditionally,
        // so a replayed SET cannot diverge on its own comparison.
        let keep = opts.expire == ExpireOpt::KeepTtl;
        ctx.propagate_as(|| {
            let mut argv = crate::argv![b"SET", key, value];
            if keep {
                argv.push(b"KEEPTTL".to_vec());
            }
            argv
        });
    } else if opts.get {
        // GET is for the reply only (Redis's setGenericCommand drops it).
        let args = ctx.args;
        ctx.propagate_as(|| {
            args.iter()
                .enumerate()
                .filter(|(i, a)| *i < 3 || !eq_ic(a, "GET"))
                .map(|(_, a)| a.to_vec())
                .collect()
        });
    }
    if !opts.get {
        if ok_int {
            ctx.out.int(1);
        } else {
            ctx.out.ok();
        }
    }
    Ok(Done)
}

fn set(ctx: &mut Ctx) -> CmdResult {
    let opts = parse_set_opts(ctx, 3, true)?;
    let value = ctx.args.get(2);
    set_generic(ctx, &opts, value, false, Abort::Null)
}

fn setnx(ctx: &mut Ctx) -> CmdResult {
    let opts = SetOpts {
        nx: true,
        xx: false,
        cond: None,
        get: false,
        expire: ExpireOpt::None,
        expire_arg: &[],
    };
    let value = ctx.args.get(2);
    set_generic(ctx, &opts, value, true, Abort::Zero)
}

fn setex(ctx: &mut Ctx) -> CmdResult {
    let opts = SetOpts {
        nx: false,
        xx: false,
        cond: None,
        get: false,
        expire: if ctx.cmd.name == "setex" {
            ExpireOpt::Ex
        } else {
            ExpireOpt::Px
        },
        expire_arg: ctx.args.get(2),
    };
    let value = ctx.args.get(3);
    set_generic(ctx, &opts, value, false, Abort::Null)
}

fn getset(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    match lookup_str(ctx.ks, key, true)? {
        None => ctx.out.null(),
        Some(s) => ctx.out.bulk(&s.data),
    }
    let value = ctx.args.get(2);
    ctx.ks.set(key, Value::Str(Str::new(value)));
    ctx.ks.signal(key, notify::STRING, "set");
    ctx.propagate_as(|| crate::argv![b"SET", key, value]);
    Ok(Done)
}

fn getdel(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    match lookup_str(ctx.ks, key, true)? {
        None => ctx.out.null(),
        Some(s) => {
            ctx.out.bulk(&s.data);
            let lazy = ctx.shared.config.lazyfree_lazy_user_del();
            ctx.ks.delete(key, lazy);
            ctx.ks.signal(key, notify::GENERIC, "del");
            ctx.propagate_as(|| crate::argv![del_name(lazy), key]);
        }
    }
    Ok(Done)
}

fn getex(ctx: &mut Ctx) -> CmdResult {
    let opts = parse_set_opts(ctx, 2, false)?;
    let key = ctx.args.get(1);
    let mark = ctx.out.len();
    match lookup_str(ctx.ks, key, true)? {
        None => {
            ctx.out.null();
            return Ok(Done);
        }
        Some(s) => ctx.out.bulk(&s.data),
    }
    let expire_at = match opts.expire {
        ExpireOpt::Ex | ExpireOpt::Px | ExpireOpt::ExAt | ExpireOpt::PxAt => {
            match expire_at_ms(ctx, opts.expire, opts.expire_arg) {
                Ok(at) => Some(at),
                Err(e) => {
                    ctx.out.truncate(mark);
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    let absolute = matches!(opts.expire, ExpireOpt::ExAt | ExpireOpt::PxAt);
    match expire_at {
        Some(at) if absolute && ctx.ks.expiry_now().is_some_and(|now| at <= now as i64) => {
            let lazy = ctx.shared.config.lazyfree_lazy_expire();
            ctx.ks.delete(key, lazy);
            ctx.ks.signal(key, notify::GENERIC, "del");
            ctx.propagate_as(|| crate::argv![del_name(lazy), key]);
        }
        Some(at) => {
            ctx.ks.set_expire(key, at as u64);
            ctx.ks.signal(key, notify::GENERIC, "expire");
            let at = at.to_string();
            ctx.propagate_as(|| crate::argv![b"PEXPIREAT", key, at.as_bytes()]);
        }
        None if opts.expire == ExpireOpt::Persist
            && ctx.ks.peek(key).is_some_and(|e| e.expire_at != 0) =>
        {
            ctx.ks.set_expire(key, 0);
            ctx.ks.signal(key, notify::GENERIC, "persist");
            ctx.propagate_as(|| crate::argv![b"PERSIST", key]);
        }
        None => {}
    }
    Ok(Done)
}

fn mget(ctx: &mut Ctx) -> CmdResult {
    let n = ctx.argc() - 1;
    ctx.out.array(n);
    for i in 1..=n {
        let key = ctx.args.get(i);
        match ctx.ks.get_read(key) {
            Some(Entry {
                value: Value::Str(s),
                ..
            }) => ctx.out.bulk(&s.data),
            _ => ctx.out.null(),
        }
    }
    Ok(Done)
}

/// MSET and MSETNX.
fn mset(ctx: &mut Ctx) -> CmdResult {
    let nx = ctx.cmd.name == "msetnx";
    if ctx.argc().is_multiple_of(2) {
        return Err(Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        )));
    }
    if nx
        && (1..ctx.argc())
            .step_by(2)
            .any(|i| ctx.ks.exists(ctx.args.get(i)))
    {
        ctx.out.int(0);
        return Ok(Done);
    }
    for i in (1..ctx.argc()).step_by(2) {
        let (key, value) = (ctx.args.get(i), ctx.args.get(i + 1));
        ctx.ks.set(key, Value::Str(Str::new(value)));
        ctx.ks.signal(key, notify::STRING, "set");
    }
    if nx {
        ctx.out.int(1);
    } else {
        ctx.out.ok();
    }
    Ok(Done)
}

fn append(ctx: &mut Ctx) -> CmdResult {
    let (key, add) = (ctx.args.get(1), ctx.args.get(2));
    let len = match lookup_str(ctx.ks, key, false)? {
        None => {
            // A new key stores the argument as SET would (int/embstr/raw).
            ctx.ks.set(key, Value::Str(Str::new(add)));
            add.len()
        }
        Some(s) => {
            let cur = s.data.len() as u64;
            check_length(ctx, cur, add.len() as u64)?;
            let Some(s) = lookup_str(ctx.ks, key, false)? else {
                return Ok(Done);
            };
            s.data.extend_from_slice(add);
            s.raw = true;
            s.data.len()
        }
    };
    ctx.ks.signal(key, notify::STRING, "append");
    ctx.out.int(len as i64);
    Ok(Done)
}

fn strlen(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let n = lookup_str(ctx.ks, key, true)?.map_or(0, |s| s.data.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn getrange(ctx: &mut Ctx) -> CmdResult {
    let mut start = int_arg(ctx.args.get(2))?;
    let mut end = int_arg(ctx.args.get(3))?;
    let key = ctx.key(1);
    let Some(s) = lookup_str(ctx.ks, key, true)? else {
        ctx.out.bulk(b"");
        return Ok(Done);
    };
    let len = s.data.len() as i64;
    if start < 0 && end < 0 && start > end {
        ctx.out.bulk(b"");
        return Ok(Done);
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0).min(len - 1);
    if start > end || len == 0 {
        ctx.out.bulk(b"");
    } else {
        ctx.out.bulk(&s.data[start as usize..=end as usize]);
    }
    Ok(Done)
}

fn setrange(ctx: &mut Ctx) -> CmdResult {
    let (key, value) = (ctx.args.get(1), ctx.args.get(3));
    let offset = int_arg(ctx.args.get(2))?;
    if offset < 0 {
        return Err(Error::Static("ERR offset is out of range"));
    }
    let offset = offset as u64;
    let cur_len = match lookup_str(ctx.ks, key, false)? {
        None if value.is_empty() => {
            ctx.out.int(0);
            return Ok(Done);
        }
        None => None,
        Some(s) if value.is_empty() => {
            let n = s.data.len();
            ctx.out.int(n as i64);
            return Ok(Done);
        }
        Some(s) => Some(s.data.len()),
    };
    check_length(ctx, offset, value.len() as u64)?;
    let (offset, end) = (offset as usize, offset as usize + value.len());
    if cur_len.is_none() {
        ctx.ks.set(key, Value::Str(Str::raw(Vec::new())));
    }
    let Some(s) = lookup_str(ctx.ks, key, false)? else {
        return Ok(Done);
    };
    if s.data.len() < end {
        s.zero_extend(end);
    }
    s.data[offset..end].copy_from_slice(value);
    s.raw = true;
    let n = s.data.len();
    ctx.ks.signal(key, notify::STRING, "setrange");
    ctx.out.int(n as i64);
    Ok(Done)
}

fn incr(ctx: &mut Ctx) -> CmdResult {
    incr_decr(ctx, 1)
}

fn decr(ctx: &mut Ctx) -> CmdResult {
    incr_decr(ctx, -1)
}

fn incrby(ctx: &mut Ctx) -> CmdResult {
    let by = int_arg(ctx.args.get(2))?;
    incr_decr(ctx, by)
}

fn decrby(ctx: &mut Ctx) -> CmdResult {
    let by = int_arg(ctx.args.get(2))?;
    if by == i64::MIN {
        return Err(Error::Static("ERR decrement would overflow"));
    }
    incr_decr(ctx, -by)
}

/// Redis's `incrDecrCommand`; the TTL survives (`dbOverwrite`).
fn incr_decr(ctx: &mut Ctx, by: i64) -> CmdResult {
    let key = ctx.args.get(1);
    let new = match lookup_str(ctx.ks, key, false)? {
        None => by,
        Some(s) => {
            let cur = crate::util::parse_i64(&s.data).ok_or(Error::NotInteger)?;
            let new = cur
                .checked_add(by)
                .ok_or(Error::Static("ERR increment or decrement would overflow"))?;
            *s = Str::from_int(new);
            new
        }
    };
    if !ctx.ks.exists(key) {
        ctx.ks.set(key, Value::Str(Str::from_int(new)));
    }
    ctx.ks.signal(key, notify::STRING, "incrby");
    ctx.out.int(new);
    Ok(Done)
}

/// Redis's `incrbyfloatCommand`: the key's type, then its value, then the
/// increment are checked, in that order.
fn incrbyfloat(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let cur = lookup_str(ctx.ks, key, false)?.map(|s| s.data.clone());
    let value = match &cur {
        Some(data) => LDouble::parse(data).ok_or(Error::NotFloat)?,
        None => LDouble::ZERO,
    };
    let by = LDouble::parse(ctx.args.get(2)).ok_or(Error::NotFloat)?;
    let text = value
        .checked_add(by)
        .ok_or(Error::Static("ERR increment would produce NaN or Infinity"))?
        .to_human();
    let new = Value::Str(Str::plain(text.into_bytes()));
    if cur.is_some() {
        ctx.ks.set_keep_ttl(key, new);
    } else {
        ctx.ks.set(key, new);
    }
    ctx.ks.signal(key, notify::STRING, "incrbyfloat");
    if let Some(Entry {
        value: Value::Str(s),
        ..
    }) = ctx.ks.peek(key)
    {
        ctx.out.bulk(&s.data);
        // The result, not the increment: float arithmetic is replayed
        // exactly as text (Redis's `SET key value KEEPTTL`).
        let text = s.data.clone();
        ctx.propagate_as(|| crate::argv![b"SET", key, &text, b"KEEPTTL"]);
    }
    Ok(Done)
}

/// The compare-and-set conditions of Redis 8.4 (SET and DELEX).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cond {
    /// The value equals the argument.
    Eq,
    /// The value differs from the argument (or there is no key).
    Ne,
    /// The value's [`digest_hex`] equals the argument.
    DigestEq,
    /// The value's digest differs from the argument (or there is no key).
    DigestNe,
}

impl Cond {
    fn parse(opt: &[u8]) -> Option<Cond> {
        [
            ("IFEQ", Cond::Eq),
            ("IFNE", Cond::Ne),
            ("IFDEQ", Cond::DigestEq),
            ("IFDNE", Cond::DigestNe),
        ]
        .into_iter()
        .find(|(name, _)| eq_ic(opt, name))
        .map(|(_, c)| c)
    }

    /// Whether the condition holds for the current value `cur` (None: no
    /// key). A missing key satisfies only the "not equal" forms. Digests
    /// compare as hex text without regard to case.
    fn holds(self, cur: Option<&[u8]>, arg: &[u8]) -> bool {
        let Some(cur) = cur else {
            return matches!(self, Cond::Ne | Cond::DigestNe);
        };
        match self {
            Cond::Eq => cur == arg,
            Cond::Ne => cur != arg,
            Cond::DigestEq => digest_hex(cur).as_bytes().eq_ignore_ascii_case(arg),
            Cond::DigestNe => !digest_hex(cur).as_bytes().eq_ignore_ascii_case(arg),
        }
    }
}

/// DIGEST's hash of a string value: XXH3 64-bit (seed 0) as 16 lowercase
/// hex digits, the form SET/DELEX's IFDEQ and IFDNE take back.
fn digest_hex(data: &[u8]) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(data))
}

fn digest(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    match lookup_str(ctx.ks, key, true)? {
        None => ctx.out.null(),
        Some(s) => {
            let hex = digest_hex(&s.data);
            ctx.out.bulk(hex.as_bytes());
        }
    }
    Ok(Done)
}

/// ```text
/// DELEX key [IFEQ value | IFNE value | IFDEQ digest | IFDNE digest]
/// ```
/// Without a condition it deletes a key of any type, as DEL; with one the
/// key must hold a string.
fn delex(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let cond = match ctx.argc() {
        2 => None,
        4 => Some((
            Cond::parse(ctx.args.get(2)).ok_or(Error::Syntax)?,
            ctx.args.get(3),
        )),
        _ => return Err(Error::Syntax),
    };
    let delete = match cond {
        None => ctx.ks.exists(key),
        Some((c, arg)) => match lookup_str(ctx.ks, key, false)? {
            None => false,
            Some(s) => c.holds(Some(&s.data), arg),
        },
    };
    if !delete {
        ctx.out.int(0);
        return Ok(Done);
    }
    ctx.ks.remove(key);
    ctx.ks.signal(key, notify::GENERIC, "del");
    let name = if cond.is_some() {
        b"DEL".as_slice()
    } else {
        del_name(ctx.shared.config.lazyfree_lazy_user_del())
    };
    ctx.propagate_as(|| crate::argv![name, key]);
    ctx.out.int(1);
    Ok(Done)
}

/// MSETEX's options after its pairs.
struct MsetexOpts<'a> {
    nx: bool,
    xx: bool,
    expire: ExpireOpt,
    expire_arg: &'a [u8],
}

/// Parses `numkeys` (at 1): the number of pairs. Redis bounds it to an
/// `int` and checks the pairs are there before reading any option.
fn msetex_pairs(args: &super::Args<'_>) -> Result<usize, Error> {
    let n = crate::util::parse_i64(args.get(1))
        .filter(|&n| n > 0 && n <= i64::from(i32::MAX))
        .ok_or(Error::Static("ERR invalid numkeys value"))? as usize;
    if n.saturating_mul(2) > args.len() - 2 {
        return Err(Error::Static("ERR wrong number of key-value pairs"));
    }
    Ok(n)
}

fn parse_msetex_opts<'a>(args: &super::Args<'a>, first: usize) -> Result<MsetexOpts<'a>, Error> {
    let mut o = MsetexOpts {
        nx: false,
        xx: false,
        expire: ExpireOpt::None,
        expire_arg: &[],
    };
    let mut i = first;
    while i < args.len() {
        let opt = args.get(i);
        let has_next = i + 1 < args.len();
        let free_for = |kind: ExpireOpt| o.expire == ExpireOpt::None || o.expire == kind;
        if eq_ic(opt, "NX") && !o.xx {
            o.nx = true;
        } else if eq_ic(opt, "XX") && !o.nx {
            o.xx = true;
        } else if eq_ic(opt, "KEEPTTL") && free_for(ExpireOpt::KeepTtl) {
            o.expire = ExpireOpt::KeepTtl;
        } else if let Some(kind) = expire_kind(opt).filter(|&k| has_next && free_for(k)) {
            o.expire = kind;
            o.expire_arg = args.get(i + 1);
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    Ok(o)
}

/// ```text
/// MSETEX numkeys key value [key value ...] [NX | XX]
///        [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]
/// ```
/// Replies 1 when every pair was set, 0 when NX/XX refused them all.
/// Logged as a SET of each pair with the expiry made absolute (PXAT),
/// without NX/XX (they held).
fn msetex(ctx: &mut Ctx) -> CmdResult {
    let n = msetex_pairs(&ctx.args)?;
    let opts = parse_msetex_opts(&ctx.args, 2 + 2 * n)?;
    let expire_at = match opts.expire {
        ExpireOpt::Ex | ExpireOpt::Px | ExpireOpt::ExAt | ExpireOpt::PxAt => {
            Some(expire_at_ms(ctx, opts.expire, opts.expire_arg)?.max(1) as u64)
        }
        _ => None,
    };
    let keys = || (0..n).map(|p| 2 + 2 * p);
    if (opts.nx && keys().any(|i| ctx.ks.exists(ctx.args.get(i))))
        || (opts.xx && !keys().all(|i| ctx.ks.exists(ctx.args.get(i))))
    {
        ctx.out.int(0);
        return Ok(Done);
    }
    for i in keys() {
        let (key, value) = (ctx.args.get(i), ctx.args.get(i + 1));
        let v = Value::Str(Str::new(value));
        match expire_at {
            Some(at) => {
                let mut e = Entry::new(v);
                e.expire_at = at;
                ctx.ks.set_entry(key, e);
            }
            None if opts.expire == ExpireOpt::KeepTtl => ctx.ks.set_keep_ttl(key, v),
            None => ctx.ks.set(key, v),
        }
        ctx.ks.signal(key, notify::STRING, "set");
        if expire_at.is_some() {
            ctx.ks.notify(notify::GENERIC, "expire", key);
        }
    }
    // Logged as one SET per pair (MULTI/EXEC around them, as several
    // propagated commands always are): every replica and every AOF reader
    // runs it, Redis 7.0 and 8.0 included, which have no MSETEX.
    let args = ctx.args;
    let keep = opts.expire == ExpireOpt::KeepTtl;
    ctx.prevent_propagation();
    for i in 0..n {
        ctx.ks.also_propagate(|| {
            let mut argv = vec![
                b"SET".to_vec(),
                args.get(2 + 2 * i).to_vec(),
                args.get(3 + 2 * i).to_vec(),
            ];
            if let Some(at) = expire_at {
                argv.push(b"PXAT".to_vec());
                argv.push(at.to_string().into_bytes());
            } else if keep {
                argv.push(b"KEEPTTL".to_vec());
            }
            argv
        });
    }
    ctx.out.int(1);
    Ok(Done)
}

/// INCREX's options; bounds stay text until the mode says how to read them.
struct IncrexOpts<'a> {
    /// BYFLOAT's text, or None for BYINT (`by`).
    by_float: Option<&'a [u8]>,
    by: i64,
    lbound: Option<&'a [u8]>,
    ubound: Option<&'a [u8]>,
    saturate: bool,
    expire: ExpireOpt,
    expire_arg: &'a [u8],
    enx: bool,
}

/// Parses INCREX's options from 2 on: each at most once, in any order;
/// ENX only with an expiry to set.
fn parse_increx_opts<'a>(args: &super::Args<'a>) -> Result<IncrexOpts<'a>, Error> {
    let mut o = IncrexOpts {
        by_float: None,
        by: 1,
        lbound: None,
        ubound: None,
        saturate: false,
        expire: ExpireOpt::None,
        expire_arg: &[],
        enx: false,
    };
    let mut by_seen = false;
    let mut i = 2;
    while i < args.len() {
        let opt = args.get(i);
        let next = (i + 1 < args.len()).then(|| args.get(i + 1));
        match next {
            Some(n) if eq_ic(opt, "BYINT") && !by_seen => {
                o.by = int_arg(n)?;
                by_seen = true;
            }
            Some(n) if eq_ic(opt, "BYFLOAT") && !by_seen => {
                o.by_float = Some(n);
                by_seen = true;
            }
            Some(n) if eq_ic(opt, "LBOUND") && o.lbound.is_none() => o.lbound = Some(n),
            Some(n) if eq_ic(opt, "UBOUND") && o.ubound.is_none() => o.ubound = Some(n),
            Some(n) if o.expire == ExpireOpt::None && expire_kind(opt).is_some() => {
                o.expire = expire_kind(opt).unwrap_or(ExpireOpt::None);
                o.expire_arg = n;
            }
            _ if eq_ic(opt, "SATURATE") && !o.saturate => {
                o.saturate = true;
                i += 1;
                continue;
            }
            _ if eq_ic(opt, "PERSIST") && o.expire == ExpireOpt::None => {
                o.expire = ExpireOpt::Persist;
                i += 1;
                continue;
            }
            _ if eq_ic(opt, "ENX") && !o.enx => {
                o.enx = true;
                i += 1;
                continue;
            }
            _ => return Err(Error::Syntax),
        }
        i += 2;
    }
    if o.enx && matches!(o.expire, ExpireOpt::None | ExpireOpt::Persist) {
        return Err(Error::Syntax);
    }
    Ok(o)
}

/// What an increment comes to against its bounds.
#[derive(Debug, PartialEq)]
enum Bounded<T> {
    /// Write `T`.
    Apply(T),
    /// Out of bounds without SATURATE: nothing changes.
    Skip,
}

const BOUNDS_ERR: &str = "ERR LBOUND must be less than or equal to UBOUND";

/// BYINT: `cur + by` within `[lo, hi]` (the type's limits where no bound
/// was given), clamped to them with `saturate`.
fn bound_int(cur: i64, by: i64, lo: i64, hi: i64, saturate: bool) -> Bounded<i64> {
    let sum = i128::from(cur) + i128::from(by);
    let clamped = sum.clamp(i128::from(lo), i128::from(hi));
    if clamped != sum && !saturate {
        return Bounded::Skip;
    }
    Bounded::Apply(clamped as i64)
}

/// BYFLOAT: as [`bound_int`] on long doubles; a sum too large for a long
/// double saturates only to an explicit bound on its side.
fn bound_float(
    cur: LDouble,
    by: LDouble,
    lo: Option<LDouble>,
    hi: Option<LDouble>,
    saturate: bool,
) -> Bounded<LDouble> {
    use std::cmp::Ordering::{Greater, Less};
    let sum = match cur.checked_add(by) {
        Some(s) => s,
        None => {
            let up = by.compare(LDouble::ZERO) == Greater;
            return match (saturate, if up { hi } else { lo }) {
                (true, Some(b)) => Bounded::Apply(b),
                _ => Bounded::Skip,
            };
        }
    };
    if let Some(l) = lo.filter(|&l| sum.compare(l) == Less) {
        return if saturate {
            Bounded::Apply(l)
        } else {
            Bounded::Skip
        };
    }
    if let Some(h) = hi.filter(|&h| sum.compare(h) == Greater) {
        return if saturate {
            Bounded::Apply(h)
        } else {
            Bounded::Skip
        };
    }
    Bounded::Apply(sum)
}

/// ```text
/// INCREX key [BYFLOAT increment | BYINT increment] [LBOUND lowerbound]
///        [UBOUND upperbound] [SATURATE]
///        [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST] [ENX]
/// ```
/// Replies [new value, increment applied]; an out-of-bounds result without
/// SATURATE replies [current value, 0] and changes nothing. Logged as the
/// SET of the result with the key's deadline after it as PXAT.
fn increx(ctx: &mut Ctx) -> CmdResult {
    let o = parse_increx_opts(&ctx.args)?;
    let key = ctx.args.get(1);
    let expire_at = match o.expire {
        ExpireOpt::Ex | ExpireOpt::Px | ExpireOpt::ExAt | ExpireOpt::PxAt => {
            Some(expire_at_ms(ctx, o.expire, o.expire_arg)?.max(1) as u64)
        }
        _ => None,
    };
    let cur = lookup_str(ctx.ks, key, false)?.map(|s| s.data.to_vec());
    let (value, reply_new, reply_by, event) = match o.by_float {
        None => {
            let cur = match &cur {
                Some(d) => crate::util::parse_i64(d).ok_or(Error::NotInteger)?,
                None => 0,
            };
            let lo = o.lbound.map(int_arg).transpose()?;
            let hi = o.ubound.map(int_arg).transpose()?;
            if let (Some(l), Some(h)) = (lo, hi)
                && l > h
            {
                return Err(Error::Static(BOUNDS_ERR));
            }
            let (lo, hi) = (lo.unwrap_or(i64::MIN), hi.unwrap_or(i64::MAX));
            match bound_int(cur, o.by, lo, hi, o.saturate) {
                Bounded::Skip => {
                    ctx.out.array(2);
                    ctx.out.int(cur);
                    ctx.out.int(0);
                    return Ok(Done);
                }
                Bounded::Apply(new) => {
                    let by = (i128::from(new) - i128::from(cur))
                        .clamp(i128::from(i64::MIN), i128::from(i64::MAX))
                        as i64;
                    (Str::from_int(new), Num::Int(new), Num::Int(by), "incrby")
                }
            }
        }
        Some(by) => {
            let cur = match &cur {
                Some(d) => LDouble::parse(d).ok_or(Error::NotFloat)?,
                None => LDouble::ZERO,
            };
            let by = LDouble::parse(by).ok_or(Error::NotFloat)?;
            let parse = |b: &[u8]| LDouble::parse(b).ok_or(Error::NotFloat);
            let lo = o.lbound.map(parse).transpose()?;
            let hi = o.ubound.map(parse).transpose()?;
            if let (Some(l), Some(h)) = (lo, hi)
                && l.compare(h) == std::cmp::Ordering::Greater
            {
                return Err(Error::Static(BOUNDS_ERR));
            }
            match bound_float(cur, by, lo, hi, o.saturate) {
                Bounded::Skip => {
                    ctx.out.array(2);
                    reply_float(ctx, &cur.to_human());
                    reply_float(ctx, "0");
                    return Ok(Done);
                }
                Bounded::Apply(new) => {
                    let text = new.to_human();
                    let by = new.checked_add(cur.neg()).map_or_else(
                        || {
                            if by.compare(LDouble::ZERO) == std::cmp::Ordering::Less {
                                "-inf"
                            } else {
                                "inf"
                            }
                            .to_string()
                        },
                        LDouble::to_human,
                    );
                    let stored = Str::plain(text.clone().into_bytes());
                    (stored, Num::Text(text), Num::Text(by), "incrbyfloat")
                }
            }
        }
    };
    let had_ttl = ctx.ks.peek(key).is_some_and(|e| e.expire_at != 0);
    ctx.ks.set_keep_ttl(key, Value::Str(value));
    ctx.ks.signal(key, notify::STRING, event);
    match (o.expire, expire_at) {
        (_, Some(_)) if o.enx && had_ttl => {}
        (_, Some(at)) => {
            ctx.ks.set_expire(key, at);
            ctx.ks.notify(notify::GENERIC, "expire", key);
        }
        (ExpireOpt::Persist, None) if had_ttl => {
            ctx.ks.set_expire(key, 0);
            ctx.ks.notify(notify::GENERIC, "persist", key);
        }
        _ => {}
    }
    if let Some(e) = ctx.ks.peek(key) {
        let at = e.expire_at;
        let text = match &e.value {
            Value::Str(s) => s.data.to_vec(),
            _ => Vec::new(),
        };
        ctx.propagate_as(|| {
            let mut argv = crate::argv![b"SET", key, &text];
            if at != 0 {
                argv.push(b"PXAT".to_vec());
                argv.push(at.to_string().into_bytes());
            }
            argv
        });
    }
    ctx.out.array(2);
    for n in [reply_new, reply_by] {
        match n {
            Num::Int(i) => ctx.out.int(i),
            Num::Text(t) => reply_float(ctx, &t),
        }
    }
    Ok(Done)
}

/// One number of INCREX's reply.
enum Num {
    Int(i64),
    Text(String),
}

/// A BYFLOAT number as INCRBYFLOAT prints it: a RESP2 bulk string, a
/// RESP3 double.
fn reply_float(ctx: &mut Ctx, text: &str) {
    let x = text.parse::<f64>().unwrap_or(0.0);
    ctx.out.double_text(x, text.as_bytes());
}

#[cfg(test)]
mod increx_tests {
    use super::*;

    /// BYFLOAT's text, BYINT's amount, SATURATE, ENX.
    type Parsed = (Option<Vec<u8>>, i64, bool, bool);

    fn increx_opts(line: &str) -> Result<Parsed, Error> {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let owned = super::super::OwnedArgs::from_slices(&words);
        let args = owned.args();
        parse_increx_opts(&args).map(|o| (o.by_float.map(<[u8]>::to_vec), o.by, o.saturate, o.enx))
    }

    #[test]
    fn increx_grammar() {
        assert_eq!(increx_opts("increx k"), Ok((None, 1, false, false)));
        assert_eq!(
            increx_opts("increx k saturate BYINT -3 ex 5 enx lbound 1"),
            Ok((None, -3, true, true))
        );
        assert_eq!(
            increx_opts("increx k BYFLOAT 1.5"),
            Ok((Some(b"1.5".to_vec()), 1, false, false))
        );
        for bad in [
            "increx k BYINT",
            "increx k BYINT 1 BYINT 1",
            "increx k BYFLOAT 1 BYINT 1",
            "increx k EX 1 PXAT 5",
            "increx k PERSIST PERSIST",
            "increx k ENX",
            "increx k ENX PERSIST",
            "increx k UBOUND",
            "increx k SATURATE SATURATE",
            "increx k FOO",
        ] {
            assert_eq!(increx_opts(bad), Err(Error::Syntax), "{bad}");
        }
        assert_eq!(increx_opts("increx k BYINT 1.5"), Err(Error::NotInteger));
    }

    #[test]
    fn msetex_grammar() {
        let parse = |line: &str| {
            let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            let owned = super::super::OwnedArgs::from_slices(&words);
            let args = owned.args();
            let n = msetex_pairs(&args)?;
            let o = parse_msetex_opts(&args, 2 + 2 * n)?;
            Ok::<_, Error>((n, o.nx, o.xx, o.expire == ExpireOpt::KeepTtl))
        };
        assert_eq!(parse("msetex 1 a 1"), Ok((1, false, false, false)));
        assert_eq!(
            parse("msetex 2 a 1 b 2 KEEPTTL nx"),
            Ok((2, true, false, true))
        );
        assert_eq!(parse("msetex 1 a 1 xx px 5"), Ok((1, false, true, false)));
        let numkeys = Err(Error::Static("ERR invalid numkeys value"));
        let pairs = Err(Error::Static("ERR wrong number of key-value pairs"));
        assert_eq!(parse("msetex 0 a 1"), numkeys);
        assert_eq!(parse("msetex 2147483648 a 1"), numkeys);
        assert_eq!(parse("msetex 2147483647 a 1"), pairs);
        assert_eq!(parse("msetex 2 a 1 b"), pairs);
        assert_eq!(parse("msetex 1 a 1 NX XX"), Err(Error::Syntax));
        assert_eq!(parse("msetex 1 a 1 KEEPTTL EX 1"), Err(Error::Syntax));
    }

    #[test]
    fn int_bounds() {
        use Bounded::*;
        assert_eq!(bound_int(5, 1, i64::MIN, i64::MAX, false), Apply(6));
        assert_eq!(bound_int(5, 10, 0, 10, false), Skip);
        assert_eq!(bound_int(5, 10, 0, 10, true), Apply(10));
        assert_eq!(bound_int(5, -10, 0, 10, true), Apply(0));
        assert_eq!(bound_int(5, -5, 0, 10, false), Apply(0));
        assert_eq!(bound_int(i64::MAX, 1, i64::MIN, i64::MAX, false), Skip);
        assert_eq!(
            bound_int(i64::MAX, 1, i64::MIN, i64::MAX, true),
            Apply(i64::MAX)
        );
        assert_eq!(
            bound_int(i64::MIN, -1, i64::MIN, i64::MAX, true),
            Apply(i64::MIN)
        );
    }

    #[test]
    fn float_bounds() {
        use Bounded::*;
        let p = |t: &str| LDouble::parse(t.as_bytes()).unwrap();
        let h = |b: Bounded<LDouble>| match b {
            Apply(x) => x.to_human(),
            Skip => "skip".into(),
        };
        assert_eq!(h(bound_float(p("1.5"), p("1"), None, None, false)), "2.5");
        assert_eq!(
            h(bound_float(p("1.5"), p("1"), None, Some(p("2")), false)),
            "skip"
        );
        assert_eq!(
            h(bound_float(p("1.5"), p("1"), None, Some(p("2")), true)),
            "2"
        );
        assert_eq!(
            h(bound_float(p("1.5"), p("-2"), Some(p("0")), None, true)),
            "0"
        );
        assert_eq!(
            h(bound_float(p("1.5"), p("-2"), Some(p("0")), None, false)),
            "skip"
        );
        let big = p("1e4932");
        assert_eq!(h(bound_float(big, big, None, None, true)), "skip");
        assert_eq!(h(bound_float(big, big, None, Some(p("7")), true)), "7");
    }
}

#[cfg(test)]
mod cas_tests {
    use super::*;

    #[test]
    fn digest_is_xxh3_as_redis_io_shows_it() {
        // redis.io's DIGEST example: SET key1 "Hello world".
        assert_eq!(digest_hex(b"Hello world"), "b6acb9d84a38ff74");
        assert_eq!(digest_hex(b"").len(), 16);
    }

    #[test]
    fn conditions_on_a_missing_key() {
        for (c, holds) in [
            (Cond::Eq, false),
            (Cond::Ne, true),
            (Cond::DigestEq, false),
            (Cond::DigestNe, true),
        ] {
            assert_eq!(c.holds(None, b"x"), holds, "{c:?}");
        }
    }

    #[test]
    fn conditions_on_a_value() {
        let d = digest_hex(b"v");
        assert!(Cond::Eq.holds(Some(b"v"), b"v"));
        assert!(!Cond::Eq.holds(Some(b"v"), b"V"));
        assert!(Cond::Ne.holds(Some(b"v"), b"w"));
        assert!(!Cond::Ne.holds(Some(b"v"), b"v"));
        assert!(Cond::DigestEq.holds(Some(b"v"), d.as_bytes()));
        assert!(Cond::DigestEq.holds(Some(b"v"), d.to_uppercase().as_bytes()));
        assert!(!Cond::DigestNe.holds(Some(b"v"), d.as_bytes()));
        assert!(Cond::DigestNe.holds(Some(b"v"), b"0"));
    }

    #[test]
    fn cond_names_are_case_insensitive() {
        assert_eq!(Cond::parse(b"ifeq"), Some(Cond::Eq));
        assert_eq!(Cond::parse(b"IfDnE"), Some(Cond::DigestNe));
        assert_eq!(Cond::parse(b"IFD"), None);
    }
}
