//! Bitmap commands on the string type: SETBIT, GETBIT, BITCOUNT, BITPOS,
//! BITOP, BITFIELD and BITFIELD_RO (Redis's `bitops.c`).
//!
//! They read and write a string's raw bytes, so they interplay with
//! SET/APPEND/SETRANGE/INCR exactly as in Redis: an int-encoded value is its
//! decimal text, and any write leaves the value `raw` (Redis unshares it
//! before editing in place). The bit algorithms live in
//! [`crate::types::bitmap`]. Argument checks follow Redis 7.0's order,
//! including its quirks: BITCOUNT looks the key up before parsing its range
//! (a missing key answers 0 whatever the arguments), BITPOS parses the bit
//! first.

use super::flags::*;
use super::strings::lookup_str;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::{Entry, Keyspace, Str, Value, notify};
use crate::types::bitmap::{self, BitOp, Overflow};
use crate::util::{eq_ic, parse_i64};

const G: &str = "bitmap";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("setbit", 4, WRITE | DENYOOM, Keys::ONE, &(setbit as Handler))
        .doc(G, "2.2.0", "O(1)", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.")
        .syntax("key offset value"),
    Command::new("getbit", 3, READONLY | FAST, Keys::ONE, &(getbit as Handler))
        .doc(G, "2.2.0", "O(1)", "Returns a bit value by offset.")
        .syntax("key offset"),
    Command::new("bitcount", -2, READONLY, Keys::ONE, &(bitcount as Handler))
        .doc(G, "2.6.0", "O(N)", "Counts the number of set bits (population counting) in a string.")
        .syntax("key [start end [BYTE | BIT]]"),
    Command::new("bitpos", -3, READONLY, Keys::ONE, &(bitpos as Handler))
        .doc(G, "2.8.7", "O(N)", "Finds the first set (1) or clear (0) bit in a string.")
        .syntax("key bit [start [end [BYTE | BIT]]]"),
    Command::new("bitop", -4, WRITE | DENYOOM, Keys::Range { first: 2, last: -1, step: 1 }, &(bitop as Handler))
        .doc(G, "2.6.0", "O(N)", "Performs bitwise operations on multiple strings, and stores the result.")
        .syntax("<AND | OR | XOR | NOT> destkey key [key ...]"),
    Command::new("bitfield", -2, WRITE | DENYOOM, Keys::ONE, &(bitfield as Handler))
        .doc(G, "3.2.0", "O(1) for each subcommand specified", "Performs arbitrary bitfield integer operations on strings.")
        .syntax("key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> ...]]"),
    Command::new("bitfield_ro", -2, READONLY | FAST, Keys::ONE, &(bitfield as Handler))
        .doc(G, "6.0.0", "O(1) for each subcommand specified", "Performs arbitrary read-only bitfield integer operations on strings.")
        .syntax("key [GET encoding offset [GET encoding offset ...]]"),
];

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// Redis's `getBitOffsetFromArgument`: a bit offset, or with `hash_bits`
/// (BITFIELD) also `#n`, meaning n fields of that width. Offsets are capped
/// so the string stays within proto-max-bulk-len.
fn bit_offset(ctx: &Ctx, arg: &[u8], hash_bits: Option<u32>) -> Result<u64, Error> {
    let (digits, mul) = match (arg.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&arg[1..], i64::from(bits)),
        _ => (arg, 1),
    };
    // Redis multiplies in C long long; wrapped results are rejected below
    // as negative, or pass as Redis's would.
    let off = parse_i64(digits)
        .ok_or(Error::Static(BAD_OFFSET))?
        .wrapping_mul(mul);
    let max = ctx.shared.config.proto_max_bulk_len();
    if off < 0 || (off >> 3) >= max {
        return Err(Error::Static(BAD_OFFSET));
    }
    Ok(off as u64)
}

/// Redis's `lookupStringForBitCommand`: the string at `key` grown with
/// zeros to hold bit `max_bit`, created (`raw`) if missing. Returns whether
/// it was created or grown.
fn string_for_write<'a>(
    ks: &'a mut Keyspace<'_>,
    key: &[u8],
    max_bit: u64,
) -> Result<(&'a mut Str, bool), Error> {
    let len = (max_bit >> 3) as usize + 1;
    let grown = match lookup_str(ks, key, false)? {
        None => {
            ks.set(key, Value::Str(Str::raw(vec![0; len])));
            true
        }
        Some(s) => {
            s.raw = true;
            s.plain = false;
            let grown = s.data.len() < len;
            if grown {
                s.zero_extend(len);
            }
            grown
        }
    };
    match ks.get(key) {
        Some(Entry {
            value: Value::Str(s),
            ..
        }) => Ok((s, grown)),
        _ => Err(Error::WrongType),
    }
}

fn setbit(ctx: &mut Ctx) -> CmdResult {
    const BAD_BIT: &str = "ERR bit is not an integer or out of range";
    let key = ctx.args.get(1);
    let offset = bit_offset(ctx, ctx.args.get(2), None)?;
    let on = parse_i64(ctx.args.get(3)).ok_or(Error::Static(BAD_BIT))?;
    if on & !1 != 0 {
        return Err(Error::Static(BAD_BIT));
    }
    let (s, grown) = string_for_write(ctx.ks, key, offset)?;
    let old = bitmap::get_bit(&s.data, offset);
    let changed = grown || old != (on == 1);
    if changed {
        let byte = &mut s.data[(offset >> 3) as usize];
        let mask = 1u8 << (7 - (offset & 7));
        if on == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
        ctx.ks.signal(key, notify::STRING, "setbit");
    }
    ctx.out.int(i64::from(old));
    Ok(Done)
}

fn getbit(ctx: &mut Ctx) -> CmdResult {
    let offset = bit_offset(ctx, ctx.args.get(2), None)?;
    let key = ctx.key(1);
    let bit = lookup_str(ctx.ks, key, true)?.is_some_and(|s| bitmap::get_bit(&s.data, offset));
    ctx.out.int(i64::from(bit));
    Ok(Done)
}

/// BYTE or BIT, as BITCOUNT and BITPOS take it: true for BIT.
fn unit_arg(arg: &[u8]) -> Result<bool, Error> {
    if eq_ic(arg, "bit") {
        Ok(true)
    } else if eq_ic(arg, "byte") {
        Ok(false)
    } else {
        Err(Error::Syntax)
    }
}

/// Clamps a `start..=end` range (negative counts from the end) to a string
/// of `total` units as Redis does; None when it is empty.
fn clamp(mut start: i64, mut end: i64, total: i64) -> Option<(u64, u64)> {
    if start < 0 {
        start = start.saturating_add(total);
    }
    if end < 0 {
        end = end.saturating_add(total);
    }
    let start = start.max(0);
    let end = end.max(0).min(total - 1);
    (start <= end).then_some((start as u64, end as u64))
}

fn bitcount(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    // The range is parsed before the key is looked up, as Redis 7.2+
    // does: a bad range is an error even on a missing key.
    let range = match args.len() {
        2 => None,
        4 | 5 => {
            let start = int_arg(args.get(2))?;
            let end = int_arg(args.get(3))?;
            let bits = args.len() == 5 && unit_arg(args.get(4))?;
            Some((start, end, bits))
        }
        _ => return Err(Error::Syntax),
    };
    let Some(s) = lookup_str(ctx.ks, args.get(1), true)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let data = &s.data;
    let n = match range {
        None => bitmap::popcount(data),
        Some((start, end, _)) if start < 0 && end < 0 && start > end => 0,
        Some((start, end, bits)) => {
            let total = data.len() as i64 * if bits { 8 } else { 1 };
            match clamp(start, end, total) {
                None => 0,
                Some((f, l)) if bits => bitmap::popcount_bits(data, f, l),
                Some((f, l)) => bitmap::popcount(&data[f as usize..=l as usize]),
            }
        }
    };
    ctx.out.int(n as i64);
    Ok(Done)
}

fn bitpos(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let bit = int_arg(args.get(2))?;
    if bit != 0 && bit != 1 {
        return Err(Error::Static("ERR The bit argument must be 1 or 0."));
    }
    let bit = bit == 1;
    // The range is parsed before the key is looked up, as Redis 7.2+
    // does: a bad range is an error even on a missing key.
    let given = match args.len() {
        3 => None,
        4..=6 => {
            let start = int_arg(args.get(3))?;
            let bits = args.len() == 6 && unit_arg(args.get(5))?;
            let end = if args.len() >= 5 {
                Some(int_arg(args.get(4))?)
            } else {
                None
            };
            Some((start, end, bits))
        }
        _ => return Err(Error::Syntax),
    };
    let Some(s) = lookup_str(ctx.ks, args.get(1), true)? else {
        ctx.out.int(if bit { -1 } else { 0 });
        return Ok(Done);
    };
    let data = &s.data;
    let len = data.len() as i64;
    let (range, end_given) = match given {
        None => (
            clamp(0, len - 1, len).map(|(f, l)| (f * 8, l * 8 + 7)),
            false,
        ),
        Some((start, end, bits)) => {
            let end_given = end.is_some();
            let end = end.unwrap_or(len - 1);
            let range = if bits {
                clamp(start, end, len * 8)
            } else {
                clamp(start, end, len).map(|(f, l)| (f * 8, l * 8 + 7))
            };
            (range, end_given)
        }
    };
    // An empty range holds neither a 0 nor a 1.
    let Some((first, last)) = range else {
        ctx.out.int(-1);
        return Ok(Done);
    };
    let pos = match bitmap::find_bit(data, first, last, bit) {
        Some(p) => p as i64,
        // Looking for a 0 with no explicit end, the string counts as
        // zero-padded on the right.
        None if !bit && !end_given => (last + 1) as i64,
        None => -1,
    };
    ctx.out.int(pos);
    Ok(Done)
}

fn bitop(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let name = args.get(1);
    let op = if eq_ic(name, "and") {
        BitOp::And
    } else if eq_ic(name, "or") {
        BitOp::Or
    } else if eq_ic(name, "xor") {
        BitOp::Xor
    } else if eq_ic(name, "not") {
        BitOp::Not
    } else {
        return Err(Error::Syntax);
    };
    if op == BitOp::Not && args.len() != 4 {
        return Err(Error::Static(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let mut srcs: Vec<Vec<u8>> = Vec::with_capacity(args.len() - 3);
    for i in 3..args.len() {
        let data = lookup_str(ctx.ks, args.get(i), true)?.map(|s| s.data.to_vec());
        srcs.push(data.unwrap_or_default());
    }
    let views: Vec<&[u8]> = srcs.iter().map(Vec::as_slice).collect();
    let res = bitmap::bitop(op, &views);
    let dest = args.get(2);
    let n = res.len();
    if n > 0 {
        ctx.ks.set(dest, Value::Str(Str::raw(res)));
        ctx.ks.signal(dest, notify::STRING, "set");
    } else if ctx.ks.remove(dest).is_some() {
        ctx.ks.signal(dest, notify::GENERIC, "del");
    }
    ctx.out.int(n as i64);
    Ok(Done)
}

/// One BITFIELD operation.
struct FieldOp {
    kind: OpKind,
    signed: bool,
    bits: u32,
    offset: u64,
    value: i64,
    overflow: Overflow,
}

#[derive(PartialEq)]
enum OpKind {
    Get,
    Set,
    IncrBy,
}

/// Redis's `getBitfieldTypeFromArgument`: `i1`…`i64` or `u1`…`u63`, lower case only
/// (Redis refuses `I8` and `U8`).
fn field_type(arg: &[u8]) -> Result<(bool, u32), Error> {
    let bad = Error::Static(
        "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
    );
    let signed = match arg.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(bad),
    };
    // Redis reads the width as a C string: it ends at a NUL.
    let digits = arg[1..].split(|&b| b == 0).next().unwrap_or(&[]);
    match parse_i64(digits) {
        Some(n) if n >= 1 && n <= if signed { 64 } else { 63 } => Ok((signed, n as u32)),
        _ => Err(bad),
    }
}

fn parse_field_ops(ctx: &Ctx) -> Result<Vec<FieldOp>, Error> {
    let args = ctx.args;
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < args.len() {
        let rem = args.len() - j - 1;
        let sub = args.get(j);
        let kind = if eq_ic(sub, "get") && rem >= 2 {
            OpKind::Get
        } else if eq_ic(sub, "set") && rem >= 3 {
            OpKind::Set
        } else if eq_ic(sub, "incrby") && rem >= 3 {
            OpKind::IncrBy
        } else if eq_ic(sub, "overflow") && rem >= 1 {
            let t = args.get(j + 1);
            overflow = if eq_ic(t, "wrap") {
                Overflow::Wrap
            } else if eq_ic(t, "sat") {
                Overflow::Sat
            } else if eq_ic(t, "fail") {
                Overflow::Fail
            } else {
                return Err(Error::Static("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(Error::Syntax);
        };
        let (signed, bits) = field_type(args.get(j + 1))?;
        let offset = bit_offset(ctx, args.get(j + 2), Some(bits))?;
        let value = if kind == OpKind::Get {
            0
        } else {
            int_arg(args.get(j + 3))?
        };
        j += if kind == OpKind::Get { 3 } else { 4 };
        ops.push(FieldOp {
            kind,
            signed,
            bits,
            offset,
            value,
            overflow,
        });
    }
    Ok(ops)
}

/// BITFIELD and BITFIELD_RO (Redis's `bitfieldGeneric`): every operation
/// is parsed before any runs; the string grows once, to the farthest bit
/// written.
fn bitfield(ctx: &mut Ctx) -> CmdResult {
    let ops = parse_field_ops(ctx)?;
    let key = ctx.args.get(1);
    let writes = ops.iter().filter(|o| o.kind != OpKind::Get);
    let Some(max_bit) = writes.map(|o| o.offset + u64::from(o.bits) - 1).max() else {
        // Read-only: a missing key reads as zeros.
        let data = lookup_str(ctx.ks, key, true)?.map_or(&[][..], |s| &s.data[..]);
        ctx.out.array(ops.len());
        for op in &ops {
            ctx.out.int(read_field(data, op));
        }
        return Ok(Done);
    };
    if ctx.cmd.name == "bitfield_ro" {
        return Err(Error::Static(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    let (s, grown) = string_for_write(ctx.ks, key, max_bit)?;
    ctx.out.array(ops.len());
    let mut changes = 0;
    for op in &ops {
        if op.kind == OpKind::Get {
            ctx.out.int(read_field(&s.data, op));
            continue;
        }
        let (reply, new) = if op.signed {
            let old = bitmap::get_signed(&s.data, op.offset, op.bits);
            let (incr, base) = match op.kind {
                OpKind::IncrBy => (op.value, old),
                _ => (0, op.value),
            };
            let over = bitmap::signed_overflow(base, incr, op.bits, op.overflow);
            let new = over.unwrap_or(base.wrapping_add(incr));
            let reply = if op.kind == OpKind::IncrBy { new } else { old };
            (
                (over.is_none() || op.overflow != Overflow::Fail).then_some(reply),
                new as u64,
            )
        } else {
            let old = bitmap::get_unsigned(&s.data, op.offset, op.bits);
            let (incr, base) = match op.kind {
                OpKind::IncrBy => (op.value, old),
                _ => (0, op.value as u64),
            };
            let over = bitmap::unsigned_overflow(base, incr, op.bits, op.overflow);
            let new = over.unwrap_or(base.wrapping_add(incr as u64));
            let reply = if op.kind == OpKind::IncrBy { new } else { old };
            (
                (over.is_none() || op.overflow != Overflow::Fail).then_some(reply as i64),
                new,
            )
        };
        match reply {
            Some(r) => {
                ctx.out.int(r);
                // As Redis 7.0, a write counts as a change only when it
                // made the string or altered its bits.
                let bytes =
                    (op.offset >> 3) as usize..=((op.offset + op.bits as u64 - 1) >> 3) as usize;
                let before: [u8; 9] = std::array::from_fn(|i| {
                    s.data
                        .get(bytes.start() + i)
                        .copied()
                        .filter(|_| bytes.start() + i <= *bytes.end())
                        .unwrap_or(0)
                });
                bitmap::set_unsigned(&mut s.data, op.offset, op.bits, new);
                let after: [u8; 9] = std::array::from_fn(|i| {
                    s.data
                        .get(bytes.start() + i)
                        .copied()
                        .filter(|_| bytes.start() + i <= *bytes.end())
                        .unwrap_or(0)
                });
                if grown || before != after {
                    changes += 1;
                }
            }
            // OVERFLOW FAIL: nothing written (and no event for it, though
            // the key was created), a null in the reply.
            None => ctx.out.null(),
        }
    }
    if changes > 0 {
        // One change per write that changed the value (or grew it).
        ctx.ks.signal_by(key, notify::STRING, "setbit", changes);
    } else if grown {
        // Every write failed (OVERFLOW FAIL), yet the string was made or
        // grown to reach them: Redis leaves that unlogged, so its replay
        // lacks the string. Counted (no event, as Redis), so it is logged.
        ctx.ks.dirty(1);
    }
    Ok(Done)
}

fn read_field(data: &[u8], op: &FieldOp) -> i64 {
    if op.signed {
        bitmap::get_signed(data, op.offset, op.bits)
    } else {
        bitmap::get_unsigned(data, op.offset, op.bits) as i64
    }
}
