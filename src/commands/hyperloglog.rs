//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE and the debugging pair
//! PFDEBUG and PFSELFTEST, as `hyperloglog.c`'s command half.
//!
//! An HLL is an ordinary string value whose bytes are Redis's own HLL
//! format ([`crate::types::hll`]), so GET/SET move HLLs between zwindow and
//! redis-server unchanged. Each command checks the value with Redis's
//! header test before touching it, and answers Redis's two error texts: a
//! string that is not an HLL (`WRONGTYPE Key is not a valid HyperLogLog
//! string value.`), and an HLL whose registers are inconsistent
//! (`INVALIDOBJ Corrupted HLL object detected`). Writes turn the string
//! `raw`, as Redis's `dbUnshareStringValue` does even for PFCOUNT.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::keyspace::{Entry, Keyspace, Str, Value, notify};
use crate::types::hll;

const G: &str = "hyperloglog";

const NOT_HLL: Error = Error::Static("WRONGTYPE Key is not a valid HyperLogLog string value.");
const CORRUPT: Error = Error::Static("INVALIDOBJ Corrupted HLL object detected");

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("pfadd", -2, WRITE | DENYOOM | FAST, Keys::ONE, &(pfadd as Handler))
        .doc(G, "2.8.9", "O(1) to add every element.", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.")
        .syntax("key [element [element ...]]"),
    Command::new("pfcount", -2, READONLY | MAY_REPLICATE, Keys::ALL_ARGS, &(pfcount as Handler))
        .doc(G, "2.8.9", "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).")
        .syntax("key [key ...]"),
    Command::new("pfmerge", -2, WRITE | DENYOOM, Keys::ALL_ARGS, &(pfmerge as Handler))
        .doc(G, "2.8.9", "O(N) to merge N HyperLogLogs, but with high constant times.", "Merges one or more HyperLogLog values into a single key.")
        .syntax("destkey [sourcekey [sourcekey ...]]"),
    Command::new("pfdebug", 3, WRITE | DENYOOM | ADMIN, Keys::Range { first: 2, last: 2, step: 1 }, &(pfdebug as Handler))
        .doc(G, "2.8.9", "N/A", "Internal commands for debugging HyperLogLog values.")
        .syntax("subcommand key"),
    Command::new("pfselftest", 1, ADMIN, Keys::None, &(pfselftest as Handler))
        .doc(G, "2.8.9", "N/A", "An internal command for testing HyperLogLog values.")
        .syntax(""),
];

/// The HLL string at `key` (Redis's `isHLLObjectOrReply`): None if
/// missing, WRONGTYPE for another type or a string that is not an HLL.
/// `read` counts a keyspace hit or miss.
fn lookup_hll<'a>(
    ks: &'a mut Keyspace<'_>,
    key: &[u8],
    read: bool,
) -> Result<Option<&'a mut Str>, Error> {
    let e = if read { ks.get_read(key) } else { ks.get(key) };
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::Str(s),
            ..
        }) if hll::is_hll(&s.data) => Ok(Some(s)),
        Some(Entry {
            value: Value::Str(_),
            ..
        }) => Err(NOT_HLL),
        Some(_) => Err(Error::WrongType),
    }
}

/// Looks `key` up for writing, creating an empty HLL if missing; true if
/// it was created.
fn hll_for_write(ks: &mut Keyspace<'_>, key: &[u8]) -> Result<bool, Error> {
    match lookup_hll(ks, key, false)? {
        Some(s) => {
            s.raw = true;
            Ok(false)
        }
        None => {
            ks.set(key, Value::Str(Str::raw(hll::new_sparse())));
            Ok(true)
        }
    }
}

/// The HLL just checked or created by [`hll_for_write`].
fn hll_data<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Option<&'a mut Str> {
    match ks.peek(key) {
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Some(s),
        _ => None,
    }
}

fn pfadd(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let sparse_max = ctx.shared.config.hll_sparse_max_bytes();
    // Redis counts the creation and each element that changed a register
    // as one change each.
    let mut updated = hll_for_write(ctx.ks, key)? as u64;
    let Some(s) = hll_data(ctx.ks, key) else {
        return Ok(Done);
    };
    let args = &ctx.args;
    s.with_vec(|data| {
        for ele in args.iter().skip(2) {
            updated += hll::add(data, ele, sparse_max).map_err(|_| CORRUPT)? as u64;
        }
        if updated > 0 {
            hll::invalidate_cache(data);
        }
        Ok::<(), Error>(())
    })?;
    if updated > 0 {
        ctx.ks.signal_by(key, notify::STRING, "pfadd", updated);
    }
    ctx.out.int((updated > 0) as i64);
    Ok(Done)
}

fn pfcount(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 2 {
        // The cardinality of the union, computed without writing anything.
        let mut max = vec![0u8; hll::REGISTERS];
        for key in ctx.args.iter().skip(1) {
            if let Some(s) = lookup_hll(ctx.ks, key, true)? {
                hll::merge_into(&mut max, &s.data).map_err(|_| CORRUPT)?;
            }
        }
        ctx.out.int(hll::count_raw(&max) as i64);
        return Ok(Done);
    }
    let key = ctx.args.get(1);
    let Some(s) = lookup_hll(ctx.ks, key, true)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    s.raw = true;
    let card = match hll::cached_card(&s.data) {
        Some(card) => card,
        None => {
            // The cache lives in the value, so refreshing it modifies the
            // key (WATCH sees it) though PFCOUNT is a read.
            let card = hll::count(&s.data).map_err(|_| CORRUPT)?;
            hll::set_cached_card(&mut s.data, card);
            ctx.ks.modified(key);
            card
        }
    };
    ctx.out.int(card as i64);
    Ok(Done)
}

fn pfmerge(ctx: &mut Ctx) -> CmdResult {
    let dest = ctx.args.get(1);
    let sparse_max = ctx.shared.config.hll_sparse_max_bytes();
    let mut max = vec![0u8; hll::REGISTERS];
    let mut use_dense = false;
    // The destination is a source too.
    for key in ctx.args.iter().skip(1) {
        if let Some(s) = lookup_hll(ctx.ks, key, true)? {
            use_dense |= !hll::is_sparse(&s.data);
            hll::merge_into(&mut max, &s.data).map_err(|_| CORRUPT)?;
        }
    }
    hll_for_write(ctx.ks, dest)?;
    let Some(s) = hll_data(ctx.ks, dest) else {
        return Ok(Done);
    };
    s.with_vec(|data| {
        if use_dense {
            hll::sparse_to_dense(data).map_err(|_| CORRUPT)?;
        }
        for (i, &m) in max.iter().enumerate() {
            if m != 0 {
                // Redis ignores this result: the destination was validated
                // as a source above.
                let _ = hll::set_register(data, i, m, sparse_max);
            }
        }
        hll::invalidate_cache(data);
        Ok::<(), Error>(())
    })?;
    // PFMERGE announces itself as a mass PFADD, as Redis does.
    ctx.ks.signal(dest, notify::STRING, "pfadd");
    ctx.out.ok();
    Ok(Done)
}

fn pfdebug(ctx: &mut Ctx) -> CmdResult {
    let sub = ctx.args.get(1);
    let key = ctx.args.get(2);
    // Redis 8.0's `PFDEBUG SIMD ON|OFF` picks the AVX2 register merge when
    // the build has it; zwindow has the portable code only, so it answers
    // as a Redis built without AVX2: `disabled` either way. (Redis follows
    // a bad argument's error with that status too; one reply here. The
    // command's arity, 3, leaves no other count to refuse.)
    if sub.eq_ignore_ascii_case(b"simd") {
        if !key.eq_ignore_ascii_case(b"on") && !key.eq_ignore_ascii_case(b"off") {
            return Err(Error::Static("ERR Argument must be ON or OFF"));
        }
        ctx.out.simple("disabled");
        return Ok(Done);
    }
    let Some(s) = lookup_hll(ctx.ks, key, false)? else {
        return Err(Error::Static("ERR The specified key does not exist"));
    };
    s.raw = true;
    if sub.eq_ignore_ascii_case(b"getreg") {
        let converted = s.with_vec(hll::sparse_to_dense).map_err(|_| CORRUPT)?;
        if converted {
            // Logged, so that replay converts it too (Redis's dirty++).
            ctx.ks.dirty(1);
        }
        let Some(s) = lookup_hll(ctx.ks, key, false)? else {
            return Ok(Done);
        };
        let regs = &s.data[hll::HDR..];
        ctx.out.array(hll::REGISTERS);
        for i in 0..hll::REGISTERS {
            ctx.out.int(hll::dense_get(regs, i) as i64);
        }
        return Ok(Done);
    }
    let data = &s.data;
    if sub.eq_ignore_ascii_case(b"decode") {
        if !hll::is_sparse(data) {
            return Err(Error::Static("ERR HLL encoding is not sparse"));
        }
        ctx.out.bulk(hll::decode_sparse(data).as_bytes());
    } else if sub.eq_ignore_ascii_case(b"encoding") {
        ctx.out.simple(if hll::is_sparse(data) {
            "sparse"
        } else {
            "dense"
        });
    } else if sub.eq_ignore_ascii_case(b"todense") {
        let converted = s.with_vec(hll::sparse_to_dense).map_err(|_| CORRUPT)?;
        ctx.out.int(converted as i64);
        if converted {
            ctx.ks.dirty(1);
        }
    } else {
        // Redis prints the subcommand as a C string.
        let name = sub.split(|&b| b == 0).next().unwrap_or_default();
        let mut msg = b"ERR Unknown PFDEBUG subcommand '".to_vec();
        msg.extend_from_slice(name);
        msg.push(b'\'');
        return Err(Error::Raw(msg));
    }
    Ok(Done)
}

fn pfselftest(ctx: &mut Ctx) -> CmdResult {
    let mut state = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x2545_f491_4f6c_dd1d, |d| d.as_nanos() as u64)
        | 1;
    let rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 32) as u32
    };
    match hll::selftest(rand, ctx.shared.config.hll_sparse_max_bytes()) {
        Ok(()) => ctx.out.ok(),
        Err(msg) => return Err(Error::Owned(format!("ERR {msg}"))),
    }
    Ok(Done)
}
