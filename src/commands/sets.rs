//! Set commands: SADD, SREM, SCARD, SISMEMBER, SMISMEMBER, SMEMBERS, SPOP,
//! SRANDMEMBER, SMOVE, SINTER/SINTERCARD/SINTERSTORE, SUNION/SUNIONSTORE,
//! SDIFF/SDIFFSTORE, SSCAN.
//!
//! The data structure and its encodings live in [`crate::types::set`]. The
//! set algebra follows Redis 7.0's `t_set.c` step for step where the result
//! is observable: SINTER walks the smallest input (stable sort by size) and
//! replies in its order; SUNION/SDIFF build a fresh set starting as an
//! intset and reply in that set's order; the *STORE forms store that set,
//! so an all-integer result is an `intset` even from `hashtable` inputs.

use super::count_arg;
use super::flags::*;
use super::hashes::scan_args;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::{Entry, HashedKey, Keyspace, Value, notify};
use crate::protocol::Reply;
use crate::types::set::SetLimits;
use crate::types::set::{Member, Set};
use crate::util::{eq_ic, glob_match};

const G: &str = "set";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("sadd", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(sadd as Handler))
        .doc(G, "1.0.0", "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", "Adds one or more members to a set. Creates the key if it doesn't exist.")
        .syntax("key member [member ...]"),
    Command::new("srem", -3, WRITE | FAST, Keys::ONE, &(srem as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of members to be removed.", "Removes one or more members from a set. Deletes the set if the last member was removed.")
        .syntax("key member [member ...]"),
    Command::new("scard", 2, READONLY | FAST, Keys::ONE, &(scard as Handler))
        .doc(G, "1.0.0", "O(1)", "Returns the number of members in a set.")
        .syntax("key"),
    Command::new("sismember", 3, READONLY | FAST, Keys::ONE, &(sismember as Handler))
        .doc(G, "1.0.0", "O(1)", "Determines whether a member belongs to a set.")
        .syntax("key member"),
    Command::new("smismember", -3, READONLY | FAST, Keys::ONE, &(smismember as Handler))
        .doc(G, "6.2.0", "O(N) where N is the number of elements being checked for membership", "Determines whether multiple members belong to a set.")
        .syntax("key member [member ...]"),
    Command::new("smembers", 2, READONLY, Keys::ONE, &(sinter as Handler))
        .doc(G, "1.0.0", "O(N) where N is the set cardinality.", "Returns all members of a set.")
        .syntax("key"),
    Command::new("spop", -2, WRITE | FAST, Keys::ONE, &(spop as Handler))
        .doc(G, "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.")
        .syntax("key [count]"),
    Command::new("srandmember", -2, READONLY, Keys::ONE, &(srandmember as Handler))
        .doc(G, "1.0.0", "Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", "Get one or multiple random members from a set")
        .syntax("key [count]"),
    Command::new("smove", 4, WRITE | FAST, Keys::TWO, &(smove as Handler))
        .doc(G, "1.0.0", "O(1)", "Moves a member from one set to another.")
        .syntax("source destination member"),
    Command::new("sinter", -2, READONLY, Keys::ALL_ARGS, &(sinter as Handler))
        .doc(G, "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Returns the intersect of multiple sets.")
        .syntax("key [key ...]"),
    Command::new("sintercard", -3, READONLY, Keys::NumKeys { count_at: 1, dest: None }, &(sintercard as Handler))
        .doc(G, "7.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Returns the number of members of the intersect of multiple sets.")
        .syntax("numkeys key [key ...] [LIMIT limit]"),
    Command::new("sinterstore", -3, WRITE | DENYOOM, Keys::ALL_ARGS, &(sinterstore as Handler))
        .doc(G, "1.0.0", "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets.", "Stores the intersect of multiple sets in a key.")
        .syntax("destination key [key ...]"),
    Command::new("sunion", -2, READONLY, Keys::ALL_ARGS, &(sunion as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Returns the union of multiple sets.")
        .syntax("key [key ...]"),
    Command::new("sunionstore", -3, WRITE | DENYOOM, Keys::ALL_ARGS, &(sunion as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Stores the union of multiple sets in a key.")
        .syntax("destination key [key ...]"),
    Command::new("sdiff", -2, READONLY, Keys::ALL_ARGS, &(sunion as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Returns the difference of multiple sets.")
        .syntax("key [key ...]"),
    Command::new("sdiffstore", -3, WRITE | DENYOOM, Keys::ALL_ARGS, &(sunion as Handler))
        .doc(G, "1.0.0", "O(N) where N is the total number of elements in all given sets.", "Stores the difference of multiple sets in a key.")
        .syntax("destination key [key ...]"),
    Command::new("sscan", -3, READONLY, Keys::ONE, &(sscan as Handler))
        .doc(G, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over members of a set.")
        .syntax("key cursor [MATCH pattern] [COUNT count]"),
];

/// The set at `key`: None if missing, WRONGTYPE for another type.
fn lookup<'a, 'n>(
    ks: &'a mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
    read: bool,
) -> Result<Option<&'a mut Set>, Error> {
    let key = key.into();
    let e = if read { ks.get_read(key) } else { ks.get(key) };
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Set(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(Error::WrongType),
    }
}

fn max_intset(ctx: &Ctx) -> SetLimits {
    ctx.shared.config.set_limits()
}

fn bulk_member(out: &mut Reply, m: Member<'_>) {
    m.with_bytes(|b| out.bulk(b));
}

/// Deletes a set a write emptied, as Redis does, with its `del` event
/// (part of the write's changes: no more counted).
fn delete_if_empty(ks: &mut Keyspace<'_>, key: &[u8]) {
    if lookup(ks, key, false)
        .ok()
        .flatten()
        .is_some_and(|s| s.is_empty())
    {
        ks.remove(key);
        ks.signal_by(key, notify::GENERIC, "del", 0);
    }
}

fn sadd(ctx: &mut Ctx) -> CmdResult {
    let (args, key, max) = (ctx.args, ctx.args.get(1), max_intset(ctx));
    match lookup(ctx.ks, key, false)? {
        None => {
            let s = Set::for_member(args.get(2), args.len() - 2, max);
            ctx.ks.set(key, Value::Set(s));
        }
        Some(s) => s.maybe_convert(args.len() - 2, max),
    }
    let Some(s) = lookup(ctx.ks, key, false)? else {
        return Err(Error::WrongType);
    };
    let mut added = 0;
    for i in 2..args.len() {
        added += s.add(args.get(i), max) as i64;
    }
    if added > 0 {
        ctx.ks.signal_by(key, notify::SET, "sadd", added as u64);
    }
    ctx.out.int(added);
    Ok(Done)
}

fn srem(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    let Some(s) = lookup(ctx.ks, key, false)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let mut removed = 0;
    for i in 2..args.len() {
        if s.remove(args.get(i)) {
            removed += 1;
            if s.is_empty() {
                break;
            }
        }
    }
    if removed > 0 {
        ctx.ks.signal_by(key, notify::SET, "srem", removed as u64);
        delete_if_empty(ctx.ks, key);
    }
    ctx.out.int(removed);
    Ok(Done)
}

fn scard(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let n = lookup(ctx.ks, key, true)?.map_or(0, |s| s.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn sismember(ctx: &mut Ctx) -> CmdResult {
    let m = ctx.args.get(2);
    let key = ctx.key(1);
    let found = lookup(ctx.ks, key, true)?.is_some_and(|s| s.contains(m));
    ctx.out.int(found as i64);
    Ok(Done)
}

fn smismember(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let s = lookup(ctx.ks, args.get(1), true)?;
    ctx.out.array(args.len() - 2);
    for i in 2..args.len() {
        let found = s.as_ref().is_some_and(|s| s.contains(args.get(i)));
        ctx.out.int(found as i64);
    }
    Ok(Done)
}

/// Members per SREM that SPOP with a count is logged as.
const SPOP_BATCH: usize = 1024;

fn spop(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    match ctx.argc() {
        2 => {
            let Some(s) = lookup(ctx.ks, key, false)? else {
                ctx.out.null();
                return Ok(Done);
            };
            let popped = s.pop(&mut rand::rng());
            match &popped {
                Some(m) => ctx.out.bulk(m),
                None => ctx.out.null(),
            }
            ctx.ks.signal(key, notify::SET, "spop");
            // The member, not the draw, is replayed.
            if let Some(m) = popped {
                ctx.propagate_as(|| crate::argv![b"SREM", key, m]);
            }
            delete_if_empty(ctx.ks, key);
            return Ok(Done);
        }
        3 => {}
        _ => return Err(Error::Syntax),
    }
    // Redis reports even a non-number as out of range here.
    let count = int_arg(ctx.args.get(2))
        .map_err(|_| Error::Static("ERR value is out of range, must be positive"))?;
    if count < 0 {
        return Err(Error::Static("ERR value is out of range, must be positive"));
    }
    let count = count as u64;
    let lim = max_intset(ctx);
    let Some(s) = lookup(ctx.ks, key, false)? else {
        ctx.out.set(0);
        return Ok(Done);
    };
    if count == 0 {
        ctx.out.set(0);
        return Ok(Done);
    }
    if count >= s.len() as u64 {
        // The whole set, replied as SUNION of it would (a fresh set's order).
        let all = std::mem::replace(s, Set::new_intset());
        // Redis replies SUNION of the key: an intset copies to an intset,
        // anything else to a fresh table.
        let mut copy = match all {
            Set::Intset(_) => Set::new_intset(),
            _ => Set::new_table(),
        };
        for m in all.iter() {
            copy.add_member(m, lim);
        }
        ctx.out.set(copy.len());
        for m in copy.iter() {
            bulk_member(ctx.out, m);
        }
        ctx.ks
            .signal_by(key, notify::SET, "spop", copy.len() as u64);
        let lazy = ctx.shared.config.lazyfree_lazy_server_del();
        ctx.ks.delete(key, lazy);
        ctx.ks.signal_by(key, notify::GENERIC, "del", 0);
        ctx.propagate_as(|| crate::argv![crate::keyspace::propagate::del_name(lazy), key]);
        return Ok(Done);
    }
    ctx.out.set(count as usize);
    let mut rng = rand::rng();
    let mut popped = Vec::new();
    for _ in 0..count {
        if let Some(m) = s.pop(&mut rng) {
            ctx.out.bulk(&m);
            popped.push(m);
        }
    }
    // Redis pops most of a set by moving the few that stay into a new set
    // (SPOP_MOVE_STRATEGY_MUL): a table's survivors start a listpack.
    if (s.len() as u64).saturating_mul(5) <= count && matches!(s, Set::Table(_)) {
        let mut rest = Set::new_listpack();
        let mut members: Vec<Vec<u8>> = s.iter().map(|m| m.to_bytes().into_owned()).collect();
        rand::seq::SliceRandom::shuffle(&mut members[..], &mut rng);
        for m in members {
            rest.add(&m, lim);
        }
        *s = rest;
    }
    ctx.ks
        .signal_by(key, notify::SET, "spop", popped.len() as u64);
    // SREMs of up to 1024 members each, as Redis 7.2+ logs them
    // (`spopWithCountCommand`'s batches).
    for batch in popped.chunks(SPOP_BATCH) {
        ctx.ks.also_propagate(|| {
            let mut argv = Vec::with_capacity(2 + batch.len());
            argv.push(b"SREM".to_vec());
            argv.push(key.to_vec());
            argv.extend(batch.iter().map(|m| m.to_vec()));
            argv
        });
    }
    ctx.prevent_propagation();
    Ok(Done)
}

fn srandmember(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    match ctx.argc() {
        2 => {
            let s = lookup(ctx.ks, key, true)?;
            match s.and_then(|s| s.random(&mut rand::rng())) {
                Some(m) => bulk_member(ctx.out, m),
                None => ctx.out.null(),
            }
            return Ok(Done);
        }
        3 => {}
        _ => return Err(Error::Syntax),
    }
    let l = count_arg(ctx.args.get(2))?;
    let Some(s) = lookup(ctx.ks, key, true)? else {
        ctx.out.array(0);
        return Ok(Done);
    };
    let count = l.unsigned_abs();
    let mut rng = rand::rng();
    if count == 0 {
        ctx.out.array(0);
    } else if l < 0 || count == 1 {
        // Independent picks; the reply grows with the count as Redis's does.
        ctx.out.array(count as usize);
        for _ in 0..count {
            // Past the output limit the client is closed: stop here.
            if ctx.out.past_cap() {
                break;
            }
            if let Some(m) = s.random(&mut rng) {
                bulk_member(ctx.out, m);
            }
        }
    } else if count >= s.len() as u64 {
        ctx.out.array(s.len());
        for m in s.iter() {
            bulk_member(ctx.out, m);
        }
    } else {
        ctx.out.array(count as usize);
        let out = &mut *ctx.out;
        s.sample(&mut rng, count as usize, |m| bulk_member(out, m));
    }
    Ok(Done)
}

fn smove(ctx: &mut Ctx) -> CmdResult {
    let (src, dst, m) = (ctx.args.get(1), ctx.args.get(2), ctx.args.get(3));
    let max = max_intset(ctx);
    let Some(s) = lookup(ctx.ks, src, false)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let in_src = s.contains(m);
    let dst_exists = lookup(ctx.ks, dst, false)?.is_some();
    if src == dst {
        ctx.out.int(in_src as i64);
        return Ok(Done);
    }
    let Some(s) = lookup(ctx.ks, src, false)? else {
        return Ok(Done);
    };
    if !s.remove(m) {
        ctx.out.int(0);
        return Ok(Done);
    }
    ctx.ks.notify(notify::SET, "srem", src);
    delete_if_empty(ctx.ks, src);
    if !dst_exists {
        ctx.ks.set(dst, Value::Set(Set::for_member(m, 1, max)));
    }
    ctx.ks.modified(src);
    if let Some(d) = lookup(ctx.ks, dst, false)?
        && d.add(m, max)
    {
        ctx.ks.signal(dst, notify::SET, "sadd");
    }
    ctx.out.int(1);
    Ok(Done)
}

/// Reads the sets named by `keys` (missing ones as None), failing with
/// WRONGTYPE if any key holds another type, before any work is done.
fn load_sets(ctx: &mut Ctx, keys: &[&[u8]]) -> Result<Vec<Option<Set>>, Error> {
    let mut sets = Vec::new();
    for &k in keys {
        sets.push(lookup(ctx.ks, k, true)?.map(|s| s.clone()));
    }
    Ok(sets)
}

/// Stores `result` at `dst` (or deletes `dst` if it is empty) and replies
/// with its size, as the *STORE commands do.
fn store(ctx: &mut Ctx, dst: &[u8], result: Set, event: &str) {
    let n = result.len();
    if n > 0 {
        ctx.ks.set(dst, Value::Set(result));
        ctx.ks.signal(dst, notify::SET, event);
    } else if ctx.ks.remove(dst).is_some() {
        ctx.ks.signal(dst, notify::GENERIC, "del");
    }
    ctx.out.int(n as i64);
}

/// SINTER and SMEMBERS (which is SINTER of one key in Redis 7.0).
fn sinter(ctx: &mut Ctx) -> CmdResult {
    let keys: Vec<&[u8]> = (1..ctx.argc()).map(|i| ctx.args.get(i)).collect();
    inter_generic(ctx, &keys, None, None)
}

fn sinterstore(ctx: &mut Ctx) -> CmdResult {
    let keys: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.args.get(i)).collect();
    let dst = ctx.args.get(1);
    inter_generic(ctx, &keys, Some(dst), None)
}

fn sintercard(ctx: &mut Ctx) -> CmdResult {
    let numkeys = int_arg(ctx.args.get(1))
        .ok()
        .filter(|&n| n >= 1)
        .ok_or(Error::Static("ERR numkeys should be greater than 0"))?;
    if numkeys > ctx.argc() as i64 - 2 {
        return Err(Error::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let first_opt = 2 + numkeys as usize;
    let mut limit = 0u64;
    let mut i = first_opt;
    while i < ctx.argc() {
        if eq_ic(ctx.args.get(i), "LIMIT") && i + 1 < ctx.argc() {
            limit = int_arg(ctx.args.get(i + 1))
                .ok()
                .filter(|&n| n >= 0)
                .ok_or(Error::Static("ERR LIMIT can't be negative"))? as u64;
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let keys: Vec<&[u8]> = (2..first_opt).map(|i| ctx.args.get(i)).collect();
    inter_generic(ctx, &keys, None, Some(limit))
}

/// Redis's `sinterGenericCommand`: `dst` for SINTERSTORE, `card_limit` for
/// SINTERCARD (0 = no limit).
fn inter_generic(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    dst: Option<&[u8]>,
    card_limit: Option<u64>,
) -> CmdResult {
    let sets = load_sets(ctx, keys)?;
    if sets.iter().any(Option::is_none) {
        match (dst, card_limit) {
            (Some(d), _) => store(ctx, d, Set::new_intset(), "sinterstore"),
            (None, Some(_)) => ctx.out.int(0),
            (None, None) => ctx.out.set(0),
        }
        return Ok(Done);
    }
    let mut sets: Vec<Set> = sets.into_iter().flatten().collect();
    // Stable, like glibc's merge-sort qsort: equal sizes keep key order.
    sets.sort_by_key(Set::len);
    let Some((first, rest)) = sets.split_first() else {
        ctx.out.set(0);
        return Ok(Done);
    };
    let in_all = |m: Member<'_>| rest.iter().all(|s| s.contains_member(m));
    match (dst, card_limit) {
        (None, Some(limit)) => {
            let mut n = 0u64;
            for m in first.iter() {
                if in_all(m) {
                    n += 1;
                    if n == limit {
                        break;
                    }
                }
            }
            ctx.out.int(n as i64);
        }
        (None, None) => {
            let mark = ctx.out.defer();
            let mut n = 0;
            for m in first.iter().filter(|&m| in_all(m)) {
                bulk_member(ctx.out, m);
                n += 1;
            }
            ctx.out.fill_set(mark, n);
        }
        (Some(d), _) => {
            let max = max_intset(ctx);
            // An intset's result starts an intset, any other a listpack;
            // an all-integer result ends an intset if it fits.
            let mut result = match first {
                Set::Intset(_) => Set::new_intset(),
                _ => Set::new_listpack(),
            };
            for m in first.iter().filter(|&m| in_all(m)) {
                result.add_member(m, max);
            }
            result.maybe_to_intset(max);
            store(ctx, d, result, "sinterstore");
        }
    }
    Ok(Done)
}

/// SUNION, SUNIONSTORE, SDIFF, SDIFFSTORE (Redis's
/// `sunionDiffGenericCommand`).
fn sunion(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.cmd.name;
    let is_store = name.ends_with("store");
    let diff = name.starts_with("sdiff");
    let first_key = if is_store { 2 } else { 1 };
    let keys: Vec<&[u8]> = (first_key..ctx.argc()).map(|i| ctx.args.get(i)).collect();
    let sets = load_sets(ctx, &keys)?;
    let max = max_intset(ctx);
    // The result starts an intset for a *STORE or when every input is
    // one, else a table (so SUNION/SDIFF replies come in table order).
    let mut result = if is_store || sets.iter().flatten().all(|s| matches!(s, Set::Intset(_))) {
        Set::new_intset()
    } else {
        Set::new_table()
    };
    if !diff {
        for s in sets.iter().flatten() {
            for m in s.iter() {
                result.add_member(m, max);
            }
        }
    } else if let Some(Some(first)) = sets.first() {
        // The same key given again as a subtrahend empties the result.
        let same = keys.iter().skip(1).any(|k| *k == keys[0]);
        if !same {
            let rest: Vec<&Set> = sets[1..].iter().flatten().collect();
            for m in first.iter() {
                if !rest.iter().any(|s| s.contains_member(m)) {
                    result.add_member(m, max);
                }
            }
        }
    }
    if is_store {
        let dst = ctx.args.get(1);
        store(
            ctx,
            dst,
            result,
            if diff { "sdiffstore" } else { "sunionstore" },
        );
    } else {
        ctx.out.set(result.len());
        for m in result.iter() {
            bulk_member(ctx.out, m);
        }
    }
    Ok(Done)
}

fn sscan(ctx: &mut Ctx) -> CmdResult {
    // As HSCAN: cursor, key, then options.
    super::scan_cursor(ctx.args.get(2))?;
    let key = ctx.key(1);
    let Some(s) = lookup(ctx.ks, key, true)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(Done);
    };
    let a = scan_args(ctx.args, 2, false)?;
    let mut items: Vec<Vec<u8>> = Vec::new();
    let next = s.scan(a.cursor, a.count, |m| {
        m.with_bytes(|b| {
            if a.pattern.is_none_or(|p| glob_match(p, b, false)) {
                items.push(b.to_vec());
            }
        })
    });
    ctx.out.array(2);
    ctx.out.bulk(itoa::Buffer::new().format(next).as_bytes());
    ctx.out.array(items.len());
    for m in items {
        ctx.out.bulk(&m);
    }
    Ok(Done)
}
