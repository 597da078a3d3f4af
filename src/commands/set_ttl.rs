//! Set member TTLs, as Redis 8.12 documents them: SEXPIRE, SPEXPIRE,
//! SEXPIREAT, SPEXPIREAT, STTL, SPTTL, SEXPIRETIME, SPEXPIRETIME, SPERSIST
//! and SADDEX. The data lives in [`crate::types::set`], expiry in
//! [`crate::keyspace::set_ttl`] (the schedule hash field TTLs use).
//!
//! Replies are the codes redis.io gives, which mirror the HEXPIRE family:
//! SEXPIRE and its variants answer per member -2 no such member (or no
//! key), 0 NX/XX/GT/LT not met, 1 set, 2 deleted (a deadline already come);
//! STTL and its variants -2 no such member, -1 no TTL, else the time;
//! SPERSIST -2, -1 no TTL, 1 dropped; SADDEX 1 added/updated, 0 when MNX
//! or MXX kept it from it (as HSETEX's FNX/FXX). Where the pages give no
//! error text, the hash commands' texts hold, with `MEMBERS` for `FIELDS`.
//!
//! Logged with absolute times: the SEXPIRE family as SPEXPIREAT with only
//! the members it set, SADDEX's EX/PX/EXAT as PXAT; members a deadline
//! already past deleted as one SREM each, as hash fields' HDELs.

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::hashes::{Cond, parse_expire, subkeys_arg};
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::keyspace::{Entry, Keyspace, Value, notify};
use crate::types::hash::NO_TTL;
use crate::types::set::Set;
use crate::util::{eq_ic, parse_i64};

const G: &str = "set";
const SINCE: &str = "8.12.0";
const ON: &str = "O(N) where N is the number of specified members";

/// SEXPIRE family, per member.
const NO_MEMBER: i64 = -2;
const NO_CONDITION: i64 = 0;
const SET_OK: i64 = 1;
const DELETED: i64 = 2;

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("sexpire", -6, WRITE | FAST, Keys::ONE, &(sexpire as Handler))
        .doc(G, SINCE, ON, "Set expiry for set member using relative time to expire (seconds)")
        .syntax("key seconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("spexpire", -6, WRITE | FAST, Keys::ONE, &(spexpire as Handler))
        .doc(G, SINCE, ON, "Set expiry for set member using relative time to expire (milliseconds)")
        .syntax("key milliseconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("sexpireat", -6, WRITE | FAST, Keys::ONE, &(sexpireat as Handler))
        .doc(G, SINCE, ON, "Set expiry for set member using an absolute Unix timestamp (seconds)")
        .syntax("key unix-time-seconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("spexpireat", -6, WRITE | FAST, Keys::ONE, &(spexpireat as Handler))
        .doc(G, SINCE, ON, "Set expiry for set member using an absolute Unix timestamp (milliseconds)")
        .syntax("key unix-time-milliseconds [NX | XX | GT | LT] MEMBERS nummembers member [member ...]"),
    Command::new("sttl", -5, READONLY | FAST, Keys::ONE, &(sttl as Handler))
        .doc(G, SINCE, ON, "Returns the TTL in seconds of a set member.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("spttl", -5, READONLY | FAST, Keys::ONE, &(spttl as Handler))
        .doc(G, SINCE, ON, "Returns the TTL in milliseconds of a set member.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("sexpiretime", -5, READONLY | FAST, Keys::ONE, &(sexpiretime as Handler))
        .doc(G, SINCE, ON, "Returns the expiration time of a set member as a Unix timestamp, in seconds.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("spexpiretime", -5, READONLY | FAST, Keys::ONE, &(spexpiretime as Handler))
        .doc(G, SINCE, ON, "Returns the expiration time of a set member as a Unix timestamp, in msec.")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("spersist", -5, WRITE | FAST, Keys::ONE, &(spersist as Handler))
        .doc(G, SINCE, ON, "Removes the expiration time for each specified member")
        .syntax("key MEMBERS nummembers member [member ...]"),
    Command::new("saddex", -5, WRITE | DENYOOM | FAST, Keys::ONE, &(saddex as Handler))
        .doc(G, SINCE, "O(N) where N is the number of members being added.", "Add one or more members to a given set key, and optionally set their expiration.")
        .syntax("key [MNX | MXX] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL] MEMBERS nummembers member [member ...]"),
];

/// The set at `key`: None if missing, WRONGTYPE for another type.
fn lookup<'a>(
    ks: &'a mut Keyspace<'_>,
    key: &[u8],
    read: bool,
) -> Result<Option<&'a mut Set>, Error> {
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

fn members_arg(ctx: &Ctx, at: usize, bad_count: &'static str) -> Result<usize, Error> {
    subkeys_arg(ctx, at, "MEMBERS", bad_count)
}

fn enable_set_ttls(ctx: &Ctx) {
    ctx.shared.store.set_ttls.store(true, Relaxed);
}

/// One member's new deadline under `cond` (`hashTypeSetEx`'s rules): one
/// already come deletes the member.
/// `now`: [`Keyspace::expiry_now`](crate::keyspace::Keyspace::expiry_now).
fn set_member_expire(s: &mut Set, member: &[u8], at: u64, cond: Cond, now: Option<u64>) -> i64 {
    let Some(prev) = s.expire_at(member) else {
        return NO_MEMBER;
    };
    if cond.refuses(prev, at, NO_TTL) {
        return NO_CONDITION;
    }
    if now.is_some_and(|now| at <= now) {
        s.remove(member);
        return DELETED;
    }
    s.set_expire(member, at);
    SET_OK
}

/// Deletes `key` if the command left its set empty, announcing it.
fn delete_if_empty(ctx: &mut Ctx, key: &[u8]) {
    let empty = matches!(
        ctx.ks.peek_raw(key),
        Some(Entry { value: Value::Set(s), .. }) if s.is_empty()
    );
    if empty {
        ctx.ks.remove_raw_entry(key);
        ctx.ks.signal(key, notify::GENERIC, "del");
    }
}

/// Logs members a deadline already past deleted, one SREM each.
fn log_deleted(ctx: &mut Ctx, key: &[u8], members: &[&[u8]]) {
    for m in members {
        ctx.ks.also_propagate(|| crate::argv![b"SREM", key, m]);
    }
}

fn sexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, false)
}

fn spexpire(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, false)
}

fn sexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, true, true)
}

fn spexpireat(ctx: &mut Ctx) -> CmdResult {
    expire_generic(ctx, false, true)
}

/// SEXPIRE, SPEXPIRE, SEXPIREAT, SPEXPIREAT, checked in HEXPIRE's order:
/// the key's type, the time, the MEMBERS block.
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
        ctx.prevent_propagation();
        return Ok(Done);
    }
    enable_set_ttls(ctx);
    let s = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let (mut set, mut deleted): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    for i in first..args.len() {
        let member = args.get(i);
        let res = set_member_expire(s, member, at, cond, expiry_now);
        match res {
            SET_OK => set.push(member),
            DELETED => deleted.push(member),
            _ => {}
        }
        ctx.out.int(res);
    }
    if set.len() + deleted.len() > 0 {
        let event = if deleted.is_empty() {
            "sexpire"
        } else {
            "srem"
        };
        ctx.ks.signal(key, notify::SET, event);
    }
    delete_if_empty(ctx, key);
    log_deleted(ctx, key, &deleted);
    if set.is_empty() {
        ctx.prevent_propagation();
        return Ok(Done);
    }
    ctx.propagate_as(|| super::absolute_expire_argv(b"SPEXPIREAT", args, members_at, at, &set));
    Ok(Done)
}

fn sttl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, true)
}

fn spttl(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, true)
}

fn sexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, true, false)
}

fn spexpiretime(ctx: &mut Ctx) -> CmdResult {
    ttl_generic(ctx, false, false)
}

/// STTL, SPTTL, SEXPIRETIME, SPEXPIRETIME: -2 no such member, -1 no TTL,
/// else the time left or the deadline (seconds round up, as HTTL's).
fn ttl_generic(ctx: &mut Ctx, seconds: bool, relative: bool) -> CmdResult {
    let (args, key, now) = (ctx.args, ctx.args.get(1), ctx.ks.now_ms);
    let exists = lookup(ctx.ks, key, true)?.is_some();
    let first = members_arg(ctx, 2, "ERR Number of members must be a positive integer")?;
    let s = if exists {
        lookup(ctx.ks, key, true)?
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
        s.as_ref().and_then(|s| s.expire_at(m))
    });
    Ok(Done)
}

/// SPERSIST: 1 dropped, -1 had no TTL, -2 no such member.
fn spersist(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    // While the AOF loads no member is expired yet (see HPERSIST).
    let now = ctx.ks.expiry_now();
    let exists = lookup(ctx.ks, key, false)?.is_some();
    let first = members_arg(ctx, 2, "ERR Number of members must be a positive integer")?;
    ctx.out.array(args.len() - first);
    if !exists {
        for _ in first..args.len() {
            ctx.out.int(NO_MEMBER);
        }
        ctx.prevent_propagation();
        return Ok(Done);
    }
    let s = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let mut changed = false;
    for i in first..args.len() {
        let member = args.get(i);
        let n = match s.expire_at(member) {
            None => NO_MEMBER,
            Some(NO_TTL) => -1,
            Some(at) if now.is_some_and(|now| at < now) => NO_MEMBER,
            Some(_) => {
                s.set_expire(member, NO_TTL);
                changed = true;
                SET_OK
            }
        };
        ctx.out.int(n);
    }
    if changed {
        ctx.ks.signal(key, notify::SET, "spersist");
    } else {
        ctx.prevent_propagation();
    }
    Ok(Done)
}

/// SADDEX's options, parsed.
struct AddEx {
    mnx: bool,
    mxx: bool,
    keepttl: bool,
    /// The deadline (Unix ms) EX/PX/EXAT/PXAT gave.
    at: Option<u64>,
    /// Where a relative (or seconds) time option is, to log it as PXAT.
    relative_at: Option<usize>,
    /// The first member.
    first: usize,
}

/// SADDEX's arguments, in any order before the MEMBERS block, checked as
/// HSETEX checks its own.
fn parse_saddex(ctx: &Ctx) -> Result<AddEx, Error> {
    let (args, now) = (ctx.args, ctx.ks.now_ms);
    let arity = || {
        Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        ))
    };
    let one_ttl = "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified";
    let mut o = AddEx {
        mnx: false,
        mxx: false,
        keepttl: false,
        at: None,
        relative_at: None,
        first: 0,
    };
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
        if eq_ic(a, "MEMBERS") {
            if i + 2 >= args.len() {
                return Err(arity());
            }
            let n = parse_i64(args.get(i + 1))
                .filter(|&n| (1..=i32::MAX as i64).contains(&n))
                .ok_or(Error::Static("ERR invalid number of members"))?;
            if n as usize != args.len() - i - 2 {
                return Err(arity());
            }
            o.first = i + 2;
            break;
        } else if let Some((_, seconds, absolute)) = timed {
            if o.at.is_some() || o.keepttl {
                return Err(Error::Static(one_ttl));
            }
            if i + 1 >= args.len() {
                return Err(Error::Static("ERR missing expire time"));
            }
            let base = if absolute { 0 } else { now };
            o.at = Some(parse_expire(ctx, args.get(i + 1), seconds, base)?);
            o.relative_at = (seconds || !absolute).then_some(i);
            i += 1;
        } else if eq_ic(a, "KEEPTTL") {
            if o.at.is_some() || o.keepttl {
                return Err(Error::Static(one_ttl));
            }
            o.keepttl = true;
        } else if eq_ic(a, "MXX") || eq_ic(a, "MNX") {
            if o.mnx || o.mxx {
                return Err(Error::Static(
                    "ERR Only one of MXX or MNX arguments can be specified",
                ));
            }
            o.mxx = eq_ic(a, "MXX");
            o.mnx = !o.mxx;
        } else {
            return Err(Error::Owned(format!(
                "ERR unknown argument: {}",
                String::from_utf8_lossy(a)
            )));
        }
        i += 1;
    }
    if o.first == 0 {
        return Err(Error::Static(
            "ERR Mandatory argument MEMBERS is missing or not at the right position",
        ));
    }
    Ok(o)
}

/// SADDEX key [MNX | MXX] [EX s | PX ms | EXAT t | PXAT t | KEEPTTL]
/// MEMBERS nummembers member …: 1 if the members were added (or updated),
/// 0 if MNX or MXX kept them from it. Without KEEPTTL, members already in
/// the set take the command's TTL (none without EX/PX/EXAT/PXAT).
fn saddex(ctx: &mut Ctx) -> CmdResult {
    let (args, key) = (ctx.args, ctx.args.get(1));
    let max = ctx.shared.config.set_limits();
    let expiry_now = ctx.ks.expiry_now();
    let o = parse_saddex(ctx)?;
    let exists = lookup(ctx.ks, key, false)?.is_some();
    if !exists && o.mxx {
        ctx.prevent_propagation();
        ctx.out.int(0);
        return Ok(Done);
    }
    if o.mnx || o.mxx {
        let s = lookup(ctx.ks, key, false)?;
        let found = (o.first..args.len())
            .filter(|&j| s.as_ref().is_some_and(|s| s.contains(args.get(j))))
            .count();
        if (o.mnx && found > 0) || (o.mxx && found != args.len() - o.first) {
            ctx.prevent_propagation();
            ctx.out.int(0);
            return Ok(Done);
        }
    }
    if o.at.is_some() {
        enable_set_ttls(ctx);
    }
    if !exists {
        ctx.ks.set(
            key,
            Value::Set(Set::for_member(
                args.get(o.first),
                args.len() - o.first,
                max,
            )),
        );
    }
    let s = lookup(ctx.ks, key, false)?.ok_or(Error::WrongType)?;
    let (mut added, mut ttl_set, mut changed) = (0, 0, false);
    let mut deleted: Vec<&[u8]> = Vec::new();
    for j in o.first..args.len() {
        let m = args.get(j);
        if s.add(m, max) {
            added += 1;
        } else if !o.keepttl && o.at.is_none() && s.expire_at(m).is_some_and(|a| a != NO_TTL) {
            // Re-added without KEEPTTL: the member is persistent again.
            s.set_expire(m, NO_TTL);
            changed = true;
        }
        if let Some(at) = o.at {
            match set_member_expire(s, m, at, Cond::None, expiry_now) {
                SET_OK => ttl_set += 1,
                DELETED => deleted.push(m),
                _ => {}
            }
        }
    }
    if added > 0 {
        ctx.ks.signal(key, notify::SET, "sadd");
    } else if changed || ttl_set > 0 || !deleted.is_empty() {
        ctx.ks.modified(key);
    }
    if ttl_set > 0 {
        ctx.ks.notify(notify::SET, "sexpire", key);
    }
    if !deleted.is_empty() {
        ctx.ks.notify(notify::SET, "srem", key);
    }
    ctx.out.int(1);
    delete_if_empty(ctx, key);
    if !deleted.is_empty() {
        // A deadline already past: the members were added and deleted,
        // which the SREMs say on their own.
        log_deleted(ctx, key, &deleted);
        ctx.prevent_propagation();
    } else if added == 0 && !changed && ttl_set == 0 {
        ctx.prevent_propagation();
    } else if let (Some(at), Some(opt)) = (o.at, o.relative_at) {
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
