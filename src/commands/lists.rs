//! List commands, blocking ones included: pushes, pops (with COUNT), LRANGE,
//! LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE/RPOPLPUSH, LMPOP, and
//! BLPOP/BRPOP/BLMOVE/BRPOPLPUSH/BLMPOP.
//!
//! Argument checks run in the order Redis's `t_list.c` runs them (some
//! commands look the key up before parsing numbers, others after), because
//! that order decides which error a client sees. A write that adds elements
//! calls `signal_ready` so blocked clients get served; a blocking command
//! that finds nothing returns `Outcome::Block` and replies nothing, and the
//! blocking machinery re-runs the same handler when data arrives — so each
//! blocking handler is written to be re-run from scratch.

use std::time::Duration;

use super::flags::*;
use super::{
    Args, Block, CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, count_arg, int_arg,
    parse_timeout,
};
use crate::keyspace::{Entry, HashedKey, Key, Keyspace, Value, notify};
use crate::types::list::{End, List};
use crate::types::stream::lp_int;
use crate::util::{eq_ic, parse_i64};

const G: &str = "list";
const PUSH_COMPLEXITY: &str = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.";
const ALL_BUT_LAST: Keys = Keys::Range {
    first: 1,
    last: -2,
    step: 1,
};

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("lpush", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(lpush as Handler))
        .doc(G, "1.0.0", PUSH_COMPLEXITY, "Prepend one or multiple elements to a list")
        .syntax("key element [element ...]"),
    Command::new("rpush", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(rpush as Handler))
        .doc(G, "1.0.0", PUSH_COMPLEXITY, "Append one or multiple elements to a list")
        .syntax("key element [element ...]"),
    Command::new("lpushx", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(lpushx as Handler))
        .doc(G, "2.2.0", PUSH_COMPLEXITY, "Prepend an element to a list, only if the list exists")
        .syntax("key element [element ...]"),
    Command::new("rpushx", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(rpushx as Handler))
        .doc(G, "2.2.0", PUSH_COMPLEXITY, "Append an element to a list, only if the list exists")
        .syntax("key element [element ...]"),
    Command::new("lpop", -2, WRITE | FAST, Keys::ONE, &(lpop as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of elements returned", "Remove and get the first elements in a list")
        .syntax("key [count]"),
    Command::new("rpop", -2, WRITE | FAST, Keys::ONE, &(rpop as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of elements returned", "Remove and get the last elements in a list")
        .syntax("key [count]"),
    Command::new("llen", 2, READONLY | FAST, Keys::ONE, &(llen as Handler))
        .doc(G, "1.0.0", "O(1)", "Get the length of a list")
        .syntax("key"),
    Command::new("lrange", 4, READONLY, Keys::ONE, &(lrange as Handler))
        .doc(G, "1.0.0", "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.", "Get a range of elements from a list")
        .syntax("key start stop"),
    Command::new("lindex", 3, READONLY, Keys::ONE, &(lindex as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).", "Get an element from a list by its index")
        .syntax("key index"),
    Command::new("lset", 4, WRITE | DENYOOM, Keys::ONE, &(lset as Handler))
        .doc(G, "1.0.0", "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).", "Set the value of an element in a list by its index")
        .syntax("key index element"),
    Command::new("linsert", 5, WRITE | DENYOOM, Keys::ONE, &(linsert as Handler))
        .doc(G, "2.2.0", "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).", "Insert an element before or after another element in a list")
        .syntax("key BEFORE | AFTER pivot element"),
    Command::new("lrem", 4, WRITE, Keys::ONE, &(lrem as Handler))
        .doc(G, "1.0.0", "O(N+M) where N is the length of the list and M is the number of elements removed.", "Remove elements from a list")
        .syntax("key count element"),
    Command::new("ltrim", 4, WRITE, Keys::ONE, &(ltrim as Handler))
        .doc(G, "1.0.0", "O(N) where N is the number of elements to be removed by the operation.", "Trim a list to the specified range")
        .syntax("key start stop"),
    Command::new("lpos", -3, READONLY, Keys::ONE, &(lpos as Handler))
        .doc(G, "6.0.6", "O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.", "Return the index of matching elements on a list")
        .syntax("key element [RANK rank] [COUNT num-matches] [MAXLEN len]"),
    Command::new("lmove", 5, WRITE | DENYOOM, Keys::TWO, &(lmove as Handler))
        .doc(G, "6.2.0", "O(1)", "Pop an element from a list, push it to another list and return it")
        .syntax("source destination wherefrom whereto"),
    Command::new("rpoplpush", 3, WRITE | DENYOOM, Keys::TWO, &(rpoplpush as Handler))
        .doc(G, "1.2.0", "O(1)", "Remove the last element in a list, prepend it to another list and return it")
        .syntax("source destination"),
    Command::new("lmpop", -4, WRITE, Keys::NumKeys { count_at: 1, dest: None }, &(lmpop as Handler))
        .doc(G, "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.", "Pop elements from a list")
        .syntax("numkeys key [key ...] where [COUNT count]"),
    Command::new("blpop", -3, WRITE | BLOCKING, ALL_BUT_LAST, &(blpop as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of provided keys.", "Remove and get the first element in a list, or block until one is available")
        .syntax("key [key ...] timeout"),
    Command::new("brpop", -3, WRITE | BLOCKING, ALL_BUT_LAST, &(brpop as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of provided keys.", "Remove and get the last element in a list, or block until one is available")
        .syntax("key [key ...] timeout"),
    Command::new("blmove", 6, WRITE | DENYOOM | BLOCKING, Keys::TWO, &(blmove as Handler))
        .doc(G, "6.2.0", "O(1)", "Pop an element from a list, push it to another list and return it; or block until one is available")
        .syntax("source destination wherefrom whereto timeout"),
    Command::new("brpoplpush", 4, WRITE | DENYOOM | BLOCKING, Keys::TWO, &(brpoplpush as Handler))
        .doc(G, "2.2.0", "O(1)", "Pop an element from a list, push it to another list and return it; or block until one is available")
        .syntax("source destination timeout"),
    Command::new("blmpop", -5, WRITE | BLOCKING, Keys::NumKeys { count_at: 2, dest: None }, &(blmpop as Handler))
        .doc(G, "7.0.0", "O(N+M) where N is the number of provided keys and M is the number of elements returned.", "Pop elements from a list, or block until one is available")
        .syntax("timeout numkeys key [key ...] where [COUNT count]"),
];

/// The list at `key` (write lookup): None if missing, WRONGTYPE if not a list.
fn list_mut<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Result<Option<&'a mut List>, Error> {
    match ks.get(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::List(l),
            ..
        }) => Ok(Some(l)),
        Some(_) => Err(Error::WrongType),
    }
}

/// Like [`list_mut`], counting a keyspace hit or miss (read commands).
fn list_read<'a, 'n>(
    ks: &'a mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
) -> Result<Option<&'a mut List>, Error> {
    match ks.get_read(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::List(l),
            ..
        }) => Ok(Some(l)),
        Some(_) => Err(Error::WrongType),
    }
}

/// Redis's `getPositiveLongFromObjectOrReply` with a custom message: any
/// parse failure or negative value gives `msg`.
fn non_negative(arg: &[u8], msg: &'static str) -> Result<i64, Error> {
    parse_i64(arg).filter(|&n| n >= 0).ok_or(Error::Static(msg))
}

/// `list-max-listpack-size`.
fn fill(ctx: &Ctx) -> i64 {
    ctx.shared.config.list_max_listpack_size()
}

/// Notifies a pop and deletes the key if the pop emptied it, else lets a
/// quicklist that shrank become a listpack (Redis's `listElementsRemoved`,
/// which counts each element popped as a change).
fn popped(ks: &mut Keyspace<'_>, key: &[u8], end: End, count: usize, emptied: bool, fill: i64) {
    ks.signal_by(key, notify::LIST, end.pop_event(), count as u64);
    if emptied {
        ks.remove(key);
        // The pops counted as the changes: deleting the emptied key is
        // part of them.
        ks.notify(notify::GENERIC, "del", key);
    } else if let Ok(Some(l)) = list_mut(ks, key) {
        l.shrink(fill);
    }
}

fn push_generic(ctx: &mut Ctx, end: End, only_existing: bool) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let elems = (2..args.len()).map(|i| args.get(i));
    let fill = fill(ctx);
    let len = match list_mut(ctx.ks, key)? {
        Some(l) => {
            l.grow_for(fill, elems.clone());
            for e in elems {
                l.push(end, e);
            }
            l.len()
        }
        None if only_existing => {
            ctx.out.int(0);
            return Ok(Done);
        }
        None => {
            let mut l = List::with_capacity(args.len() - 2);
            l.grow_for(fill, elems.clone());
            for e in elems {
                l.push(end, e);
            }
            let len = l.len();
            ctx.ks.set(key, Value::List(Box::new(l)));
            len
        }
    };
    // One change per element pushed (Redis's `server.dirty++` in the loop).
    ctx.ks
        .signal_by(key, notify::LIST, end.push_event(), (args.len() - 2) as u64);
    ctx.ks.signal_ready(key);
    ctx.out.int(len as i64);
    Ok(Done)
}

fn lpush(ctx: &mut Ctx) -> CmdResult {
    push_generic(ctx, End::Left, false)
}

fn rpush(ctx: &mut Ctx) -> CmdResult {
    push_generic(ctx, End::Right, false)
}

fn lpushx(ctx: &mut Ctx) -> CmdResult {
    push_generic(ctx, End::Left, true)
}

fn rpushx(ctx: &mut Ctx) -> CmdResult {
    push_generic(ctx, End::Right, true)
}

fn pop_generic(ctx: &mut Ctx, end: End) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    if args.len() > 3 {
        return Err(Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        )));
    }
    let count = match args.len() {
        3 => Some(non_negative(
            args.get(2),
            "ERR value is out of range, must be positive",
        )?),
        _ => None,
    };
    let fill = fill(ctx);
    let Some(l) = list_mut(ctx.ks, key)? else {
        match count {
            Some(_) => ctx.out.null_array(),
            None => ctx.out.null(),
        }
        return Ok(Done);
    };
    let popped_n = match count {
        Some(0) => {
            ctx.out.array(0);
            return Ok(Done);
        }
        Some(n) => {
            let n = (n as u64).min(l.len() as u64) as usize;
            ctx.out.array(n);
            for _ in 0..n {
                if let Some(e) = l.pop(end) {
                    ctx.out.bulk(&e);
                }
            }
            n
        }
        None => match l.pop(end) {
            Some(e) => {
                ctx.out.bulk(&e);
                1
            }
            None => {
                ctx.out.null();
                0
            }
        },
    };
    let emptied = l.is_empty();
    popped(ctx.ks, key, end, popped_n, emptied, fill);
    Ok(Done)
}

fn lpop(ctx: &mut Ctx) -> CmdResult {
    pop_generic(ctx, End::Left)
}

fn rpop(ctx: &mut Ctx) -> CmdResult {
    pop_generic(ctx, End::Right)
}

fn llen(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let n = list_read(ctx.ks, key)?.map_or(0, |l| l.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

/// Resolves a possibly negative index against `len`.
fn index_of(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { len + index } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// Clamps LRANGE/LTRIM's `start stop` to an inclusive index range, or None
/// when it selects nothing.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let mut start = if start < 0 { len + start } else { start };
    let mut stop = if stop < 0 { len + stop } else { stop };
    if start < 0 {
        start = 0;
    }
    if start > stop || start >= len {
        return None;
    }
    if stop >= len {
        stop = len - 1;
    }
    Some((start as usize, stop as usize))
}

fn lrange(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let start = int_arg(args.get(2))?;
    let stop = int_arg(args.get(3))?;
    let Some(l) = list_read(ctx.ks, args.get(1))? else {
        ctx.out.array(0);
        return Ok(Done);
    };
    match clamp_range(start, stop, l.len()) {
        None => ctx.out.array(0),
        Some((a, b)) => {
            ctx.out.array(b - a + 1);
            for e in l.range(a, b) {
                ctx.out.bulk(e);
            }
        }
    }
    Ok(Done)
}

fn lindex(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let Some(l) = list_read(ctx.ks, args.get(1))? else {
        ctx.out.null();
        return Ok(Done);
    };
    let index = int_arg(args.get(2))?;
    match index_of(index, l.len()).and_then(|i| l.get(i)) {
        Some(e) => ctx.out.bulk(e),
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn lset(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let fill = fill(ctx);
    let Some(l) = list_mut(ctx.ks, key)? else {
        return Err(Error::Static("ERR no such key"));
    };
    let index = int_arg(args.get(2))?;
    // Redis checks the growth before the index (a listpack may become a
    // quicklist even when the index is out of range).
    l.grow(fill, args.get(3).len(), 1);
    let ok = index_of(index, l.len()).is_some_and(|i| l.set(i, args.get(3)));
    if !ok {
        return Err(Error::Static("ERR index out of range"));
    }
    l.shrink(fill);
    ctx.ks.signal(key, notify::LIST, "lset");
    ctx.out.ok();
    Ok(Done)
}

fn linsert(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let after = if eq_ic(args.get(2), "AFTER") {
        true
    } else if eq_ic(args.get(2), "BEFORE") {
        false
    } else {
        return Err(Error::Syntax);
    };
    let fill = fill(ctx);
    let Some(l) = list_mut(ctx.ks, key)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    // Redis converts before it looks for the pivot (so even a missing
    // pivot may leave a quicklist).
    l.grow(fill, args.get(4).len(), 1);
    let pivot = args.get(3);
    let Some(at) = l.iter().position(|e| e == pivot) else {
        ctx.out.int(-1);
        return Ok(Done);
    };
    l.insert(at + after as usize, args.get(4));
    let len = l.len();
    ctx.ks.signal(key, notify::LIST, "linsert");
    ctx.out.int(len as i64);
    Ok(Done)
}

fn lrem(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let count = count_arg(args.get(2))?;
    let Some(l) = list_mut(ctx.ks, key)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let removed = l.remove(args.get(3), count.unsigned_abs(), count < 0);
    let emptied = l.is_empty();
    if removed > 0 && !emptied {
        let fill = fill(ctx);
        if let Some(l) = list_mut(ctx.ks, key)? {
            l.shrink(fill);
        }
    }
    // One change per element removed; deleting the emptied key is part
    // of them.
    if removed > 0 {
        ctx.ks.signal_by(key, notify::LIST, "lrem", removed);
    }
    if emptied {
        ctx.ks.remove(key);
        ctx.ks.signal_by(key, notify::GENERIC, "del", 0);
    }
    ctx.out.int(removed as i64);
    Ok(Done)
}

fn ltrim(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let start = int_arg(args.get(2))?;
    let stop = int_arg(args.get(3))?;
    let Some(l) = list_mut(ctx.ks, key)? else {
        ctx.out.ok();
        return Ok(Done);
    };
    let before = l.len();
    match clamp_range(start, stop, l.len()) {
        None => l.keep(l.len(), 0),
        Some((a, b)) => l.keep(a, b - a + 1),
    }
    let trimmed = (before - l.len()) as u64;
    let emptied = l.is_empty();
    if !emptied {
        let fill = fill(ctx);
        if let Some(l) = list_mut(ctx.ks, key)? {
            l.shrink(fill);
        }
    }
    // Redis notifies `ltrim` even when nothing was trimmed, and counts
    // one change per element trimmed (none: not propagated).
    ctx.ks.signal_by(key, notify::LIST, "ltrim", trimmed);
    if emptied {
        ctx.ks.remove(key);
        ctx.ks.signal_by(key, notify::GENERIC, "del", 0);
    }
    ctx.out.ok();
    Ok(Done)
}

fn lpos(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let elem = args.get(2);
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut j = 3;
    while j < args.len() {
        let opt = args.get(j);
        let more = j + 1 < args.len();
        if eq_ic(opt, "RANK") && more {
            j += 1;
            rank = count_arg(args.get(j))?;
            if rank == 0 {
                return Err(Error::Static(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if eq_ic(opt, "COUNT") && more {
            j += 1;
            count = Some(non_negative(args.get(j), "ERR COUNT can't be negative")?);
        } else if eq_ic(opt, "MAXLEN") && more {
            j += 1;
            maxlen = non_negative(args.get(j), "ERR MAXLEN can't be negative")?;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let Some(l) = list_read(ctx.ks, args.get(1))? else {
        match count {
            Some(_) => ctx.out.array(0),
            None => ctx.out.null(),
        }
        return Ok(Done);
    };
    // A negative rank searches from the tail. Redis negates with C
    // wrap-around, so RANK LONG_MIN stays negative and matches at once.
    let from_tail = rank < 0;
    if from_tail {
        rank = rank.wrapping_neg();
    }
    let len = l.len() as i64;
    let positions: Box<dyn Iterator<Item = (i64, &[u8])>> = if from_tail {
        Box::new(l.iter().rev().enumerate().map(|(i, e)| (i as i64, e)))
    } else {
        Box::new(l.iter().enumerate().map(|(i, e)| (i as i64, e)))
    };
    let deferred = count.map(|_| ctx.out.defer());
    let (mut matches, mut emitted) = (0i64, 0usize);
    let mut found = None;
    for (index, e) in positions {
        if maxlen != 0 && index >= maxlen {
            break;
        }
        if e != elem {
            continue;
        }
        matches += 1;
        let at = if from_tail { len - index - 1 } else { index };
        if matches >= rank {
            match count {
                Some(c) => {
                    emitted += 1;
                    ctx.out.int(at);
                    if c != 0 && matches.wrapping_sub(rank).wrapping_add(1) >= c {
                        break;
                    }
                }
                None => {
                    found = Some(at);
                    break;
                }
            }
        }
    }
    match deferred {
        Some(d) => ctx.out.fill_array(d, emitted),
        None => match found {
            Some(at) => ctx.out.int(at),
            None => ctx.out.null(),
        },
    }
    Ok(Done)
}

/// Moves one element from `src` to `dst` (Redis's `lmoveGenericCommand`).
/// Returns false, having written nothing, when `src` does not exist.
fn move_one(ctx: &mut Ctx, src: &[u8], dst: &[u8], from: End, to: End) -> Result<bool, Error> {
    let fill = fill(ctx);
    if list_mut(ctx.ks, src)?.is_none() {
        return Ok(false);
    }
    list_mut(ctx.ks, dst)?;
    let Some(l) = list_mut(ctx.ks, src)? else {
        return Ok(false);
    };
    let Some(elem) = l.pop(from) else {
        return Ok(false);
    };
    // Redis pushes the popped object, whose integers are not strings (and
    // so count no bytes in the growth check).
    let add = if lp_int(&elem).is_some() {
        0
    } else {
        elem.len()
    };
    let emptied = if src == dst {
        l.grow(fill, add, 1);
        l.push(to, &elem);
        l.shrink(fill);
        false
    } else {
        let emptied = l.is_empty();
        match list_mut(ctx.ks, dst)? {
            Some(d) => {
                d.grow(fill, add, 1);
                d.push(to, &elem);
            }
            None => {
                let mut d = List::new();
                d.grow(fill, add, 1);
                d.push(to, &elem);
                ctx.ks.set(dst, Value::List(Box::new(d)));
            }
        }
        if !emptied && let Some(l) = list_mut(ctx.ks, src)? {
            l.shrink(fill);
        }
        emptied
    };
    // Redis's order: the push on the destination, then the pop on the
    // source; only the pop counts as a change.
    ctx.ks.signal_by(dst, notify::LIST, to.push_event(), 0);
    ctx.ks.signal_ready(dst);
    ctx.ks.notify(notify::LIST, from.pop_event(), src);
    if emptied {
        ctx.ks.remove(src);
        ctx.ks.notify(notify::GENERIC, "del", src);
    }
    ctx.ks.modified(src);
    ctx.out.bulk(&elem);
    Ok(true)
}

fn end_arg(arg: &[u8]) -> Result<End, Error> {
    End::parse(arg).ok_or(Error::Syntax)
}

fn lmove(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let from = end_arg(args.get(3))?;
    let to = end_arg(args.get(4))?;
    if !move_one(ctx, args.get(1), args.get(2), from, to)? {
        ctx.out.null();
    }
    Ok(Done)
}

fn rpoplpush(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    if !move_one(ctx, args.get(1), args.get(2), End::Right, End::Left)? {
        ctx.out.null();
    }
    Ok(Done)
}

/// Parsed `numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
struct Mpop {
    first_key: usize,
    numkeys: usize,
    end: End,
    count: u64,
}

fn parse_mpop(args: &Args<'_>, numkeys_at: usize) -> Result<Mpop, Error> {
    let numkeys = parse_i64(args.get(numkeys_at))
        .filter(|&n| n >= 1)
        .ok_or(Error::Static("ERR numkeys should be greater than 0"))?;
    let where_at = (numkeys_at as u64)
        .saturating_add(numkeys as u64)
        .saturating_add(1);
    if where_at >= args.len() as u64 {
        return Err(Error::Syntax);
    }
    let where_at = where_at as usize;
    let end = end_arg(args.get(where_at))?;
    let mut count = None;
    let mut j = where_at + 1;
    while j < args.len() {
        if count.is_none() && eq_ic(args.get(j), "COUNT") && j + 1 < args.len() {
            j += 1;
            count = Some(
                parse_i64(args.get(j))
                    .filter(|&n| n >= 1)
                    .ok_or(Error::Static("ERR count should be greater than 0"))?
                    as u64,
            );
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(Mpop {
        first_key: numkeys_at + 1,
        numkeys: numkeys as usize,
        end,
        count: count.unwrap_or(1),
    })
}

/// Pops from the first non-empty list of an LMPOP/BLMPOP; false (nothing
/// written) if every list is empty.
fn mpop(ctx: &mut Ctx, m: &Mpop) -> Result<bool, Error> {
    let args = ctx.args;
    let fill = fill(ctx);
    for i in m.first_key..m.first_key + m.numkeys {
        let key = args.get(i);
        let Some(l) = list_mut(ctx.ks, key)? else {
            continue;
        };
        let n = m.count.min(l.len() as u64) as usize;
        ctx.out.array(2);
        ctx.out.bulk(key);
        ctx.out.array(n);
        for _ in 0..n {
            if let Some(e) = l.pop(m.end) {
                ctx.out.bulk(&e);
            }
        }
        let emptied = l.is_empty();
        popped(ctx.ks, key, m.end, n, emptied, fill);
        // LMPOP and BLMPOP are logged as [LR]POP key count.
        let n = n.to_string();
        ctx.propagate_as(|| crate::argv![pop_name(m.end), key, n]);
        return Ok(true);
    }
    Ok(false)
}

fn lmpop(ctx: &mut Ctx) -> CmdResult {
    let m = parse_mpop(&ctx.args, 1)?;
    if !mpop(ctx, &m)? {
        ctx.out.null_array();
    }
    Ok(Done)
}

/// Nothing to serve: wait for `keys`, or (inside MULTI/EXEC, where nothing
/// may block) reply the null Redis replies there.
fn block_on(
    ctx: &mut Ctx,
    keys: Vec<Key>,
    timeout: Option<Duration>,
    null_bulk: bool,
) -> CmdResult {
    if !ctx.client.can_block() {
        if null_bulk {
            ctx.out.null();
        } else {
            ctx.out.null_array();
        }
        return Ok(Done);
    }
    Ok(Outcome::Block(Block {
        keys,
        timeout,
        kind: "list",
        rerun: None,
        unblock_on_nokey: false,
    }))
}

fn bpop_generic(ctx: &mut Ctx, end: End) -> CmdResult {
    let args = ctx.args;
    let last = args.len() - 1;
    let timeout = parse_timeout(args.get(last), ctx.ks.now_ms)?;
    let fill = fill(ctx);
    for i in 1..last {
        let key = args.get(i);
        let Some(l) = list_mut(ctx.ks, key)? else {
            continue;
        };
        let Some(e) = l.pop(end) else {
            continue;
        };
        let emptied = l.is_empty();
        ctx.out.array(2);
        ctx.out.bulk(key);
        ctx.out.bulk(&e);
        popped(ctx.ks, key, end, 1, emptied, fill);
        ctx.propagate_as(|| crate::argv![pop_name(end), key]);
        return Ok(Done);
    }
    let keys = (1..last).map(|i| args.get(i).into()).collect();
    block_on(ctx, keys, timeout, false)
}

fn blpop(ctx: &mut Ctx) -> CmdResult {
    bpop_generic(ctx, End::Left)
}

fn brpop(ctx: &mut Ctx) -> CmdResult {
    bpop_generic(ctx, End::Right)
}

fn bmove_generic(ctx: &mut Ctx, from: End, to: End, timeout_at: usize) -> CmdResult {
    let args = ctx.args;
    let timeout = parse_timeout(args.get(timeout_at), ctx.ks.now_ms)?;
    let src = args.get(1);
    if !move_one(ctx, src, args.get(2), from, to)? {
        return block_on(ctx, vec![src.into()], timeout, true);
    }
    // Logged as the non-blocking form.
    ctx.propagate_as(|| {
        let mut v: Vec<Vec<u8>> = args.iter().take(timeout_at).map(|a| a.to_vec()).collect();
        v[0] = if timeout_at == 3 {
            b"RPOPLPUSH".to_vec()
        } else {
            b"LMOVE".to_vec()
        };
        v
    });
    Ok(Done)
}

/// The command popping at `end`.
fn pop_name(end: End) -> &'static [u8] {
    match end {
        End::Left => b"LPOP",
        End::Right => b"RPOP",
    }
}

fn blmove(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let from = end_arg(args.get(3))?;
    let to = end_arg(args.get(4))?;
    bmove_generic(ctx, from, to, 5)
}

fn brpoplpush(ctx: &mut Ctx) -> CmdResult {
    bmove_generic(ctx, End::Right, End::Left, 3)
}

fn blmpop(ctx: &mut Ctx) -> CmdResult {
    let m = parse_mpop(&ctx.args, 2)?;
    let timeout = parse_timeout(ctx.args.get(1), ctx.ks.now_ms)?;
    if !mpop(ctx, &m)? {
        let args = ctx.args;
        let keys = (m.first_key..m.first_key + m.numkeys)
            .map(|i| args.get(i).into())
            .collect();
        return block_on(ctx, keys, timeout, false);
    }
    Ok(Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_range_matches_redis() {
        assert_eq!(clamp_range(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp_range(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp_range(2, 1, 3), None);
        assert_eq!(clamp_range(3, 5, 3), None);
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(clamp_range(0, 0, 0), None);
    }
}
