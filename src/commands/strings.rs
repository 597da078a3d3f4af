//! String commands: GET and SET (with every option) so far.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Error, Keys, int_arg};
use crate::store::{Entry, Str, Value, notify};
use crate::util::eq_ic;

const G: &str = "string";

pub static COMMANDS: &[Command] = &[
    Command::new("get", 2, READONLY | FAST, Keys::ONE, get)
        .doc(G, "1.0.0", "O(1)", "Returns the string value of a key.")
        .syntax("key"),
    Command::new("set", -3, WRITE | DENYOOM, Keys::ONE, set)
        .doc(G, "1.0.0", "O(1)", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.")
        .syntax("key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]"),
];

fn get(ctx: &mut Ctx) -> CmdResult {
    match ctx.ks.get_read(ctx.args.get(1)) {
        None => ctx.out.null(),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => ctx.out.bulk(&s.data),
        Some(_) => return Err(Error::WrongType),
    }
    Ok(())
}

#[derive(PartialEq)]
enum Expiry {
    Keep,
    None,
    At(i64),
}

fn set(ctx: &mut Ctx) -> CmdResult {
    let (key, value) = (ctx.args.get(1), ctx.args.get(2));
    let (mut nx, mut xx, mut get_old) = (false, false, false);
    let mut keepttl = false;
    // Redis accepts a repeated option (`EX 1 EX 2`: the last wins) but not
    // two different expiry kinds; values are validated after the syntax.
    let mut ttl: Option<(&str, &[u8])> = None;
    let mut i = 3;
    while i < ctx.argc() {
        let opt = ctx.args.get(i);
        let next = (i + 1 < ctx.argc()).then(|| ctx.args.get(i + 1));
        if eq_ic(opt, "NX") && !xx {
            nx = true;
        } else if eq_ic(opt, "XX") && !nx {
            xx = true;
        } else if eq_ic(opt, "GET") {
            get_old = true;
        } else if eq_ic(opt, "KEEPTTL") && ttl.is_none() {
            keepttl = true;
        } else if let (Some(unit), Some(v)) = (expire_unit(opt), next) {
            if keepttl || ttl.is_some_and(|(u, _)| u != unit) {
                return Err(Error::Syntax);
            }
            ttl = Some((unit, v));
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    let expiry = match ttl {
        None if keepttl => Expiry::Keep,
        None => Expiry::None,
        Some((unit, v)) => {
            let n = int_arg(v)?;
            let invalid = || Error::Static("ERR invalid expire time in 'set' command");
            let seconds = unit == "EX" || unit == "EXAT";
            if n <= 0 || (seconds && n > i64::MAX / 1000) {
                return Err(invalid());
            }
            let ms = if seconds { n * 1000 } else { n };
            let relative = unit == "EX" || unit == "PX";
            let base = if relative { ctx.ks.now_ms as i64 } else { 0 };
            Expiry::At(ms.checked_add(base).ok_or_else(invalid)?)
        }
    };
    let old = match ctx.ks.get(key) {
        None => None,
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Some(if get_old { Some(s.data.clone()) } else { None }),
        Some(_) if get_old => return Err(Error::WrongType),
        Some(_) => Some(None),
    };
    let exists = old.is_some();
    let reply_old = |ctx: &mut Ctx, old: Option<Option<Vec<u8>>>| match old.flatten() {
        Some(v) => ctx.out.bulk(&v),
        None => ctx.out.null(),
    };
    if (nx && exists) || (xx && !exists) {
        if get_old {
            reply_old(ctx, old);
        } else {
            ctx.out.null();
        }
        return Ok(());
    }
    let v = Value::Str(Str::new(value));
    match expiry {
        Expiry::Keep => ctx.ks.set_keep_ttl(key, v),
        Expiry::None => ctx.ks.set(key, v),
        Expiry::At(at) => {
            let mut e = Entry::new(v);
            e.expire_at = at.max(1) as u64;
            ctx.ks.set_entry(key, e);
        }
    }
    ctx.ks.signal(key, notify::STRING, "set");
    if let Expiry::At(at) = expiry {
        ctx.ks.notify(notify::GENERIC, "expire", key);
        // A time already past deletes the key at once, as Redis does.
        if at <= ctx.ks.now_ms as i64 {
            ctx.ks.expire_if_needed(key);
        }
    }
    if get_old {
        reply_old(ctx, old);
    } else {
        ctx.out.ok();
    }
    Ok(())
}

fn expire_unit(opt: &[u8]) -> Option<&'static str> {
    ["EX", "PX", "EXAT", "PXAT"]
        .into_iter()
        .find(|u| eq_ic(opt, u))
}
