//! The libraries Redis bundles into its Lua, written in Rust because the
//! vendored Lua 5.1 ships none of them: `bit` (Lua BitOp) and Redis's
//! deterministic `math.random` (rand48, reseeded before every script); the
//! data codecs (`cjson`, `struct`, `cmsgpack`) are in `codecs.rs`.
//!
//! Each function reports failure with a plain message; the bootstrap wraps
//! them so the message gets the caller's position, like `luaL_error` in C.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use mlua::{Lua, Table, Value, Variadic};

pub(crate) fn fail<T>(msg: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::RuntimeError(msg.into()))
}

/// A Lua number argument as Lua's `luaL_checknumber` sees it.
fn num(v: &Value, pos: usize, fname: &str) -> mlua::Result<f64> {
    match v {
        Value::Integer(i) => Ok(*i as f64),
        Value::Number(n) => Ok(*n),
        Value::String(s) => std::str::from_utf8(&s.as_bytes())
            .ok()
            .and_then(|s| crate::util::parse_f64(s.trim().as_bytes()))
            .map_or_else(|| bad_arg(pos, fname, "number", v), Ok),
        _ => bad_arg(pos, fname, "number", v),
    }
}

fn bad_arg<T>(pos: usize, fname: &str, want: &str, got: &Value) -> mlua::Result<T> {
    let got = match got {
        Value::Nil => "no value".to_string(),
        v => v.type_name().to_string(),
    };
    fail(format!(
        "bad argument #{pos} to '{fname}' ({want} expected, got {got})"
    ))
}

// ---------------------------------------------------------------- bit

/// BitOp's `tobit`: the number modulo 2^32 as a signed 32-bit integer.
fn tobit(x: f64) -> i32 {
    // BitOp adds 2^52+2^51 and reads the low word: rounding to nearest.
    let r = x + 6755399441055744.0;
    r.to_bits() as u32 as i32
}

fn bitarg(args: &[Value], i: usize, fname: &str) -> mlua::Result<i32> {
    Ok(tobit(num(
        args.get(i).unwrap_or(&Value::Nil),
        i + 1,
        fname,
    )?))
}

pub(crate) fn bit(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    type Fold = fn(i32, i32) -> i32;
    let folds: [(&str, Fold); 3] = [
        ("band", |a, b| a & b),
        ("bor", |a, b| a | b),
        ("bxor", |a, b| a ^ b),
    ];
    for (name, f) in folds {
        t.raw_set(
            name,
            lua.create_function(move |_, args: Variadic<Value>| {
                let mut acc = bitarg(&args, 0, name)?;
                for i in 1..args.len() {
                    acc = f(acc, bitarg(&args, i, name)?);
                }
                Ok(acc as f64)
            })?,
        )?;
    }
    t.raw_set(
        "tobit",
        lua.create_function(|_, args: Variadic<Value>| Ok(bitarg(&args, 0, "tobit")? as f64))?,
    )?;
    t.raw_set(
        "bnot",
        lua.create_function(|_, args: Variadic<Value>| Ok(!bitarg(&args, 0, "bnot")? as f64))?,
    )?;
    t.raw_set(
        "bswap",
        lua.create_function(|_, args: Variadic<Value>| {
            Ok(bitarg(&args, 0, "bswap")?.swap_bytes() as f64)
        })?,
    )?;
    type Shift = fn(i32, u32) -> i32;
    let shifts: [(&str, Shift); 5] = [
        ("lshift", |a, n| ((a as u32) << n) as i32),
        ("rshift", |a, n| ((a as u32) >> n) as i32),
        ("arshift", |a, n| a >> n),
        ("rol", |a, n| (a as u32).rotate_left(n) as i32),
        ("ror", |a, n| (a as u32).rotate_right(n) as i32),
    ];
    for (name, f) in shifts {
        t.raw_set(
            name,
            lua.create_function(move |_, args: Variadic<Value>| {
                let a = bitarg(&args, 0, name)?;
                let n = bitarg(&args, 1, name)? as u32 & 31;
                Ok(f(a, n) as f64)
            })?,
        )?;
    }
    t.raw_set(
        "tohex",
        lua.create_function(|_, args: Variadic<Value>| {
            let b = bitarg(&args, 0, "tohex")? as u32;
            let n = if args.len() > 1 {
                bitarg(&args, 1, "tohex")?
            } else {
                8
            };
            // As Redis's patched lua_bit.c: INT32_MIN has no negation
            // (CVE-2024-31449), and 0 digits give an empty string.
            let n = n.max(i32::MIN + 1);
            let (upper, n) = if n < 0 { (true, -n) } else { (false, n) };
            let n = n.min(8) as usize;
            let s = if upper {
                format!("{b:08X}")
            } else {
                format!("{b:08x}")
            };
            Ok(s[8 - n..].to_string())
        })?,
    )?;
    Ok(t)
}

// ---------------------------------------------------------------- math.random

/// Redis's `redisLrand48` state and its `math.random`/`math.randomseed`.
/// Redis 7.0 never reseeds it between scripts: it starts from rand48's
/// default state when the server starts.
pub(crate) struct Rand48(AtomicU64);

impl Default for Rand48 {
    fn default() -> Self {
        Rand48(AtomicU64::new(0x1234_ABCD_330E))
    }
}

impl Rand48 {
    const A: u64 = 0x5DEECE66D;
    const MASK: u64 = (1 << 48) - 1;

    pub(crate) fn seed(&self, seed: i32) {
        self.0.store(
            (((seed as u32 as u64) << 16) | 0x330E) & Self::MASK,
            Relaxed,
        );
    }

    fn next(&self) -> i32 {
        let x = (self.0.load(Relaxed).wrapping_mul(Self::A).wrapping_add(0xB)) & Self::MASK;
        self.0.store(x, Relaxed);
        (x >> 17) as i32
    }

    fn random(&self) -> f64 {
        const MAX: i32 = i32::MAX;
        (self.next() % MAX) as f64 / MAX as f64
    }
}

pub(crate) fn install_random(lua: &Lua, impl_tbl: &Table, rng: Arc<Rand48>) -> mlua::Result<()> {
    let r = rng.clone();
    impl_tbl.raw_set(
        "math_random",
        lua.create_function(move |_, args: Variadic<Value>| {
            let x = r.random();
            match args.len() {
                0 => Ok(x),
                1 => {
                    let u = num(&args[0], 1, "random")?.floor();
                    if u < 1.0 {
                        return fail("bad argument #1 to 'random' (interval is empty)");
                    }
                    Ok((x * u).floor() + 1.0)
                }
                2 => {
                    let l = num(&args[0], 1, "random")?.floor();
                    let u = num(&args[1], 2, "random")?.floor();
                    if l > u {
                        return fail("bad argument #2 to 'random' (interval is empty)");
                    }
                    Ok((x * (u - l + 1.0)).floor() + l)
                }
                _ => fail("wrong number of arguments"),
            }
        })?,
    )?;
    impl_tbl.raw_set(
        "math_randomseed",
        lua.create_function(move |_, v: Value| {
            rng.seed(num(&v, 1, "randomseed")? as i64 as i32);
            Ok(())
        })?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_redis() {
        let r = Rand48::default();
        // Redis 7.0 after a start: EVAL "return tostring(math.random())" 0, twice.
        assert_eq!(format!("{:.14}", r.random()), "0.39646477363839");
        assert_eq!(format!("{:.14}", r.random()), "0.84048536971234");
    }

    #[test]
    fn tobit_wraps() {
        assert_eq!(tobit(4294967295.0), -1);
        assert_eq!(tobit(2147483648.0), i32::MIN);
        assert_eq!(tobit(-1.0), -1);
        assert_eq!(tobit(1.5), 2);
    }
}
