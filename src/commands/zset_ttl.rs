//! Sorted-set member TTLs, as Garnet's commands: ZEXPIRE, ZPEXPIRE,
//! ZEXPIREAT, ZPEXPIREAT, ZTTL, ZPTTL, ZEXPIRETIME, ZPEXPIRETIME, ZPERSIST
//! and ZCOLLECT. The data lives in [`crate::types::zset::ttl`], expiry in
//! [`crate::keyspace::zset_ttl`].
//!
//! Replies are the codes Garnet's documentation gives (the rule;
//! Garnet's server answers Redis's HEXPIRE codes instead, which clients of
//! HEXPIRE would expect — see the README): ZEXPIRE and its variants answer
//! per member 1 set, 0 no such member (or no key), -1 NX/XX/GT/LT not met;
//! a deadline that has already come still "sets" (1) and deletes the
//! member now, as EXPIRE does a key, once the condition holds. ZPERSIST
//! answers 1 dropped, 0 no TTL, -1 no such member; ZTTL and its variants
//! -1 no TTL, -2 no such member. Argument errors are the hash commands'
//! texts with `MEMBERS` for `FIELDS`.

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::hashes::{Cond, parse_expire, subkeys_arg};
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::keyspace::{Entry, Keyspace, Value, notify};
use crate::types::zset::ZSet;
use crate::types::zset::ttl::NO_TTL;

const G: &str = "sorted-set";

/// ZEXPIRE family: the timeout was set (or, already past, applied).
const SET_OK: i64 = 1;
/// ZEXPIRE family: no such member.
const NO_MEMBER: i64 = 0;
/// ZEXPIRE family: NX/XX/GT/LT not met.
const NO_CONDITION: i64 = -1;
/// ZPERSIST: the TTL was dropped / the member had none / no such member.
const PERSISTED: i64 = 1;
const NO_TTL_TO_DROP: i64 = 0;
const PERSIST_NO_MEMBER: i64 = -1;

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("zexpire", -6, WRITE | FAST, Keys::ONE, &(zexpire as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Set expiry for sorted set members using relative time to expire (seconds).")
        .syntax("key seconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("zpexpire", -6, WRITE | FAST, Keys::ONE, &(zpexpire as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Set expiry for sorted set members using relative time to expire (milliseconds).")
        .syntax("key milliseconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("zexpireat", -6, WRITE | FAST, Keys::ONE, &(zexpireat as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Set expiry for sorted set members using an absolute Unix timestamp (seconds).")
        .syntax("key unix-time-seconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("zpexpireat", -6, WRITE | FAST, Keys::ONE, &(zpexpireat as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Set expiry for sorted set members using an absolute Unix timestamp (milliseconds).")
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("zttl", -5, READONLY | FAST, Keys::ONE, &(zttl as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Returns the TTL in seconds of sorted set members.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("zpttl", -5, READONLY | FAST, Keys::ONE, &(zpttl as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Returns the TTL in milliseconds of sorted set members.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("zexpiretime", -5, READONLY | FAST, Keys::ONE, &(zexpiretime as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Returns the expiration time of sorted set members as a Unix timestamp, in seconds.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("zpexpiretime", -5, READONLY | FAST, Keys::ONE, &(zpexpiretime as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Returns the expiration time of sorted set members as a Unix timestamp, in msec.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("zpersist", -5, WRITE | FAST, Keys::ONE, &(zpersist as Handler))
        .doc(G, "0.1.0", "O(N) where N is the number of specified members", "Removes the expiration time of sorted set members.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    // Every shard: `ZCOLLECT *` visits every sorted set of the database.
    Command::new("zcollect", -2, WRITE, Keys::All, &(zcollect as Handler))
        .doc(G, "0.1.0", "O(K + M) where K is the number of keys given (every key of the database with *) and M the number of expired members removed", "Removes the expired members of sorted sets now.")
        .syntax("key [key ...]"),
];

/// The sorted set at `key`: None if missing, WRONGTYPE for another type.
fn lookup<'a>(
    ks: &'a mut Keyspace<'_>,
    key: &[u8],
    read: bool,
) -> Result<Option<&'a mut ZSet>, Error> {
    let e = if read { ks.get_read(key) } else { ks.get(key) };
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(z)),
        Some(_) => Err(Error::WrongType),
    }
}

/// `MEMBERS nummembers member …` with the MEMBERS word at `at`: checked as
/// the hash commands check `FIELDS`; returns the index of the first member.
fn members_arg(ctx: &Ctx, at: usize, bad_count: &'static str) -> Result<usize, Error> {
    subkeys_arg(ctx, at, "MEMBERS", bad_count)
}

/// What setting one member's deadline did.
enum Set {
    Code(i64),
    Deleted,
}

/// ZEXPIRE for one member: the condition first, then the deadline (one
/// already past deletes the member now).
/// `now`: [`Keyspace::expiry_now`](crate::keyspace::Keyspace::expiry_now).
fn set_member_expire(z: &mut ZSet, member: &[u8], at: u64, cond: Cond, now: Option<u64>) -> Set {
    let Some(prev) = z.expire_at(member) else {
        return Set::Code(NO_MEMBER);
    };
    if cond.refuses(prev, at, NO_TTL) {
        return Set::Code(NO_CONDITION);
    }
    if now.is_some_and(|now| at <= now) {
        z.remove(member);
        return Set::Deleted;
    }
    z.set_expire(member, at);
    Set::Code(SET_OK)
}

fn zexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, false)
}

fn zpexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, false)
}

fn zexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, true)
}

fn zpexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, true)
}

/// ZEXPIRE, ZPEXPIRE, ZEXPIREAT, ZPEXPIREAT.
fn expire_generic(ctx: &mut Ctx, seconds: bool, absolute: bool) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let expiry_now = ctx.ks.expiry_now();
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let at = parse_expire(ctx, args.get(2), seconds, if absolute { 0 } else { now })?;
    let cond = Cond::parse(args.get(3));
    let members_at = if cond == Cond::None { 3 } else { 4 };
    let first = members_arg(
        ctx,
        members_at,
        "ERR Parameter `numMembers` should be greater than 0",
    )?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.int(NO_MEMBER);
        }
        return Ok(Done);
    }
    ctx.shared.store.member_ttls.store(true, Relaxed);
    let z = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let (mut set, mut deleted): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for i in first..args.len() {
        let member = args.get(i);
        let code = match set_member_expire(z, member, at, cond, expiry_now) {
            Set::Deleted => {
                deleted.push(member);
                SET_OK
            }
            Set::Code(code) => {
                if code == SET_OK {
                    set.push(member);
                }
                code
            }
        };
        ctx.out.int(code);
    }
    let emptied = z.is_empty();
    if !deleted.is_empty() {
        ctx.ks.signal(key, notify::ZSET, "zrem");
    }
    if !set.is_empty() {
        ctx.ks.signal(key, notify::ZSET, "zexpire");
    }
    if emptied {
        ctx.ks.remove_raw_entry(key);
        ctx.ks.signal(key, notify::GENERIC, "del");
    }
    // As HEXPIRE is logged: members whose deadline had come as the ZREM
    // they amount to, the others as ZPEXPIREAT with the absolute deadline
    // (a replay keeps it) and only the members it set.
    if !deleted.is_empty() {
        ctx.ks.also_propagate(|| {
            let mut v = crate::argv![b"ZREM", key];
            v.extend(deleted.iter().map(|m| m.to_vec()));
            v
        });
    }
    if set.is_empty() {
        ctx.prevent_propagation();
        return Ok(Done);
    }
    ctx.propagate_as(|| super::absolute_expire_argv(b"ZPEXPIREAT", args, members_at, at, &set));
    Ok(Done)
}

fn zttl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, true)
}

fn zpttl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, true)
}

fn zexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, false)
}

fn zpexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, false)
}

/// ZTTL, ZPTTL, ZEXPIRETIME, ZPEXPIRETIME: -2 no such member, -1 no TTL,
/// else the time left or the deadline (seconds round up, as HTTL's).
fn ttl_generic(ctx: &mut Ctx, seconds: bool, relative: bool) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let exists = lookup(ctx.ks, key, true)?.is_some();
    let first = members_arg(ctx, 2, "ERR Number of members must be a positive integer")?;
    let z = if exists {
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
    ttl.reply(ctx.out, args, first, |m| {
        z.as_ref().and_then(|z| z.expire_at(m))
    });
    Ok(Done)
}

/// ZPERSIST: 1 dropped, 0 had no TTL, -1 no such member.
fn zpersist(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let first = members_arg(ctx, 2, "ERR Number of members must be a positive integer")?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.int(PERSIST_NO_MEMBER);
        }
        return Ok(Done);
    }
    let z = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let mut changed = false;
    for i in first..args.len() {
        let member = args.get(i);
        let n = match z.expire_at(member) {
            None => PERSIST_NO_MEMBER,
            Some(NO_TTL) => NO_TTL_TO_DROP,
            Some(_) => {
                z.set_expire(member, NO_TTL);
                changed = true;
                PERSISTED
            }
        };
        ctx.out.int(n);
    }
    if changed {
        ctx.ks.signal(key, notify::ZSET, "zpersist");
    } else {
        ctx.prevent_propagation();
    }
    Ok(Done)
}

/// ZCOLLECT key [key …] | ZCOLLECT *: removes the expired members of the
/// given sorted sets (of every sorted set of the database with `*`) now,
/// announcing them as the sweeper would. Other types and missing keys are
/// skipped; replies OK.
fn zcollect(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let now = ctx.ks.now_ms;
    let keys: Vec<Vec<u8>> = if (1..args.len()).any(|i| args.get(i) == b"*") {
        let mut due = Vec::new();
        for db in ctx.ks.dbs_mut() {
            for (k, e) in db.keys.iter() {
                if let Value::ZSet(z) = &e.value
                    && z.min_deadline().is_some_and(|at| at <= now)
                {
                    due.push(k.to_vec());
                }
            }
        }
        due
    } else {
        (1..args.len()).map(|i| args.get(i).to_vec()).collect()
    };
    if ctx.ks.member_ttls() {
        for key in &keys {
            // Key TTLs and window trims first, as any lookup does.
            ctx.ks.prepare(key);
        }
    }
    // Logged as the ZREMs the removals amount to, never as itself (a
    // replay at another time would remove other members).
    ctx.prevent_propagation();
    ctx.out.ok();
    Ok(Done)
}
