//! The data codecs Redis bundles into its Lua: `cjson` (lua-cjson 2.1.0),
//! `struct` (Roberto Ierusalimschy's lua_struct, as patched by Redis) and
//! `cmsgpack` (lua-cmsgpack 0.4.0), reimplemented in Rust because the
//! vendored Lua ships none of them.
//!
//! Each follows its C original step by step — same token names and error
//! texts, the same table walk (`lua_next` order, so object keys come out in
//! the order Redis prints them), cjson's `%.14g` numbers and sparse-array
//! rule, cmsgpack's smallest-encoding choice and 16-level nesting cut —
//! because scripts compare these strings byte for byte. Deviations, both on
//! inputs where the C code has undefined behaviour or unbounded recursion:
//! decoding nests at most 1000 levels in cmsgpack ("Bad data format in
//! input." beyond), and `struct` integers wider than 8 bytes keep only
//! their low 8 bytes. A map with a nil key fails with Lua's "table index
//! is nil", but with the script position in front (Redis has none there). MessagePack uses no crate: the C library's choices
//! (float32 when exact, str8, nil for functions) are simpler to write than
//! to coax out of `rmp`.
//!
//! Functions fail with plain messages; the bootstrap's wrapper adds the
//! caller's position, as `luaL_error` does.

use std::ffi::c_char;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::Relaxed};

use mlua::{LightUserData, Lua, MultiValue, Table, Value, Variadic};

use super::convert::fmt_g;
use super::libs::fail;

// ---------------------------------------------------------------- helpers

fn arg_count_error<T>(fname: &str) -> mlua::Result<T> {
    fail(format!(
        "bad argument #1 to '{fname}' (expected 1 argument)"
    ))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::LightUserData(_) => "userdata",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `luaL_checkstring`: strings and numbers (as Lua formats them).
fn check_bytes(v: Option<&Value>, pos: usize, fname: &str) -> mlua::Result<Vec<u8>> {
    match v {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(i)) => Ok(fmt_g(*i as f64, 14).into_bytes()),
        Some(Value::Number(n)) => Ok(fmt_g(*n, 14).into_bytes()),
        other => fail(format!(
            "bad argument #{pos} to '{fname}' (string expected, got {})",
            other.map_or("no value", |v| match v {
                Value::Nil => "nil",
                v => type_name(v),
            })
        )),
    }
}

/// `luaL_checknumber`: numbers and numeric strings.
fn check_number(v: Option<&Value>, pos: usize, fname: &str) -> mlua::Result<f64> {
    if let Some(n) = v.and_then(as_number) {
        return Ok(n);
    }
    if let Some(Value::String(s)) = v {
        let b = s.as_bytes();
        if let Some(n) = c_strtod_full(&b) {
            return Ok(n);
        }
    }
    fail(format!(
        "bad argument #{pos} to '{fname}' (number expected, got {})",
        v.map_or("no value", |v| match v {
            Value::Nil => "nil",
            v => type_name(v),
        })
    ))
}

unsafe extern "C" {
    fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64;
}

/// C's `strtod` on the front of `bytes` (up to a NUL): the value and the
/// number of bytes it read (0 when nothing parsed).
fn c_strtod(bytes: &[u8]) -> (f64, usize) {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let mut buf = Vec::with_capacity(end + 1);
    buf.extend_from_slice(&bytes[..end]);
    buf.push(0);
    let mut stop: *mut c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated and outlives the call; `stop` points
    // into it afterwards.
    let n = unsafe { strtod(buf.as_ptr() as *const c_char, &mut stop) };
    let used = (stop as usize).saturating_sub(buf.as_ptr() as usize);
    (n, used.min(end))
}

/// Lua's `lua_str2number`: the whole string (surrounding spaces allowed).
fn c_strtod_full(bytes: &[u8]) -> Option<f64> {
    let (n, used) = c_strtod(bytes);
    (used > 0 && bytes[used..].iter().all(|b| b.is_ascii_whitespace())).then_some(n)
}

fn is_null(v: &Value) -> bool {
    matches!(v, Value::LightUserData(p) if p.0.is_null())
}

// ---------------------------------------------------------------- cjson

/// lua-cjson's settings, changed by `cjson.encode_max_depth(n)` and the
/// like; one set per Lua engine, as in Redis (one per Lua state).
struct JsonCfg {
    encode_max_depth: AtomicUsize,
    decode_max_depth: AtomicUsize,
    /// `encode_invalid_numbers`: 0 off (NaN/Inf refused), 1 on, 2 `null`.
    encode_invalid_numbers: AtomicU8,
    /// Buffer reuse: changes allocation, never output; kept and reported.
    encode_keep_buffer: AtomicBool,
}

impl Default for JsonCfg {
    fn default() -> JsonCfg {
        JsonCfg {
            encode_max_depth: AtomicUsize::new(1000),
            decode_max_depth: AtomicUsize::new(1000),
            encode_invalid_numbers: AtomicU8::new(0),
            encode_keep_buffer: AtomicBool::new(true),
        }
    }
}

/// lua-cjson's `json_enum_option` over `off`/`on`(/`null`): booleans or
/// those names; returns the index chosen, or `None` when no argument.
fn json_enum_arg(
    name: &str,
    args: &Variadic<Value>,
    options: &[&str],
) -> mlua::Result<Option<usize>> {
    if args.len() > 1 {
        return Err(mlua::Error::runtime(format!(
            "bad argument #2 to '{name}' (found too many arguments)"
        )));
    }
    match args.first() {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(*b as usize)),
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => {
            let text = v.to_string().unwrap_or_default();
            match options.iter().position(|o| *o == text) {
                Some(i) => Ok(Some(i)),
                None => Err(mlua::Error::runtime(format!(
                    "bad argument #1 to '{name}' (invalid option '{text}')"
                ))),
            }
        }
        Some(v) => Err(mlua::Error::runtime(format!(
            "bad argument #1 to '{name}' (string expected, got {})",
            v.type_name()
        ))),
    }
}

/// lua-cjson's `json_integer_option` for the depth limits (1..INT_MAX).
fn json_depth_arg(name: &str, args: &Variadic<Value>, slot: &AtomicUsize) -> mlua::Result<usize> {
    if args.len() > 1 {
        return Err(mlua::Error::runtime(format!(
            "bad argument #2 to '{name}' (found too many arguments)"
        )));
    }
    match args.first() {
        None | Some(Value::Nil) => {}
        Some(v) => {
            let n = as_number(v).ok_or_else(|| {
                mlua::Error::runtime(format!(
                    "bad argument #1 to '{name}' (number expected, got {})",
                    v.type_name()
                ))
            })?;
            let n = n as i64;
            if !(1..=i64::from(i32::MAX)).contains(&n) {
                return Err(mlua::Error::runtime(format!(
                    "bad argument #1 to '{name}' (expected integer between 1 and 2147483647)"
                )));
            }
            slot.store(n as usize, Relaxed);
        }
    }
    Ok(slot.load(Relaxed))
}
const SPARSE_RATIO: f64 = 2.0;
const SPARSE_SAFE: f64 = 10.0;

pub(crate) fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let cfg = Arc::new(JsonCfg::default());
    let c = cfg.clone();
    t.raw_set(
        "encode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return arg_count_error("encode");
            }
            let mut out = Vec::new();
            json_encode(&c, &args[0], 0, &mut out)?;
            lua.create_string(&out)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "decode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return arg_count_error("decode");
            }
            let data = check_bytes(args.first(), 1, "decode")?;
            json_decode(lua, &data, c.decode_max_depth.load(Relaxed))
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_max_depth",
        lua.create_function(move |_, args: Variadic<Value>| {
            json_depth_arg("encode_max_depth", &args, &c.encode_max_depth)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "decode_max_depth",
        lua.create_function(move |_, args: Variadic<Value>| {
            json_depth_arg("decode_max_depth", &args, &c.decode_max_depth)
        })?,
    )?;
    let c = cfg.clone();
    t.raw_set(
        "encode_invalid_numbers",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let options = ["off", "on", "null"];
            if let Some(i) = json_enum_arg("encode_invalid_numbers", &args, &options)? {
                c.encode_invalid_numbers.store(i as u8, Relaxed);
            }
            Ok(match c.encode_invalid_numbers.load(Relaxed) {
                2 => Value::String(lua.create_string("null")?),
                n => Value::Boolean(n == 1),
            })
        })?,
    )?;
    t.raw_set(
        "null",
        Value::LightUserData(LightUserData(std::ptr::null_mut())),
    )?;
    let c = cfg;
    t.raw_set(
        "encode_keep_buffer",
        lua.create_function(move |_, args: Variadic<Value>| {
            if let Some(i) = json_enum_arg("encode_keep_buffer", &args, &["off", "on"])? {
                c.encode_keep_buffer.store(i == 1, Relaxed);
            }
            Ok(c.encode_keep_buffer.load(Relaxed))
        })?,
    )?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn json_encode(cfg: &JsonCfg, v: &Value, depth: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(v).unwrap_or(0.0);
            match cfg.encode_invalid_numbers.load(Relaxed) {
                1 if !n.is_finite() => out.extend_from_slice(c_g_fmt_nonfinite(n).as_bytes()),
                2 if !n.is_finite() => out.extend_from_slice(b"null"),
                _ => json_number(n, out)?,
            }
        }
        Value::Boolean(true) => out.extend_from_slice(b"true"),
        Value::Boolean(false) => out.extend_from_slice(b"false"),
        Value::Nil => out.extend_from_slice(b"null"),
        v if is_null(v) => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            let depth = depth + 1;
            if depth > cfg.encode_max_depth.load(Relaxed) {
                return fail(format!("Cannot serialise, excessive nesting ({depth})"));
            }
            match json_array_length(t)? {
                Some(len) if len > 0 => {
                    out.push(b'[');
                    for i in 1..=len {
                        if i > 1 {
                            out.push(b',');
                        }
                        let item: Value = t.raw_get(i)?;
                        json_encode(cfg, &item, depth, out)?;
                    }
                    out.push(b']');
                }
                _ => {
                    out.push(b'{');
                    let mut comma = false;
                    for pair in t.clone().pairs::<Value, Value>() {
                        let (k, val) = pair?;
                        if comma {
                            out.push(b',');
                        }
                        comma = true;
                        match &k {
                            Value::Integer(_) | Value::Number(_) => {
                                out.push(b'"');
                                json_number(as_number(&k).unwrap_or(0.0), out)?;
                                out.extend_from_slice(b"\":");
                            }
                            Value::String(s) => {
                                json_string(&s.as_bytes(), out);
                                out.push(b':');
                            }
                            other => {
                                return fail(format!(
                                    "Cannot serialise {}: table key must be a number or string",
                                    type_name(other)
                                ));
                            }
                        }
                        json_encode(cfg, &val, depth, out)?;
                    }
                    out.push(b'}');
                }
            }
        }
        other => {
            return fail(format!(
                "Cannot serialise {}: type not supported",
                type_name(other)
            ));
        }
    }
    Ok(())
}

/// lua-cjson's `lua_array_length`: Some(max index) for a table whose keys
/// are all positive integers (0 for an empty one), None for an object.
fn json_array_length(t: &Table) -> mlua::Result<Option<usize>> {
    let mut max = 0f64;
    let mut items = 0f64;
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, _) = pair?;
        match as_number(&k) {
            Some(n) if n != 0.0 && n.floor() == n && n >= 1.0 => {
                max = max.max(n);
                items += 1.0;
            }
            _ => return Ok(None),
        }
    }
    if max > items * SPARSE_RATIO && max > SPARSE_SAFE {
        return fail("Cannot serialise table: excessively sparse array");
    }
    // C stores the maximum in an int.
    Ok(Some(max.min(i32::MAX as f64) as usize))
}

/// How Redis's lua-cjson writes NaN and the infinities once
/// `encode_invalid_numbers` is on (measured: `{0/0, 1/0, -1/0}` encodes as
/// `[nan,inf,-inf]`, whatever the NaN's sign bit).
fn c_g_fmt_nonfinite(n: f64) -> &'static str {
    if n.is_nan() {
        "nan"
    } else if n.is_sign_negative() {
        "-inf"
    } else {
        "inf"
    }
}

fn json_number(n: f64, out: &mut Vec<u8>) -> mlua::Result<()> {
    if n.is_nan() || n.is_infinite() {
        return fail("Cannot serialise number: must not be NaN or Inf");
    }
    out.extend_from_slice(fmt_g(n, 14).as_bytes());
    Ok(())
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            8 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            12 => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=31 | 127 => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
            c => out.push(c),
        }
    }
    out.push(b'"');
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Num(_) => "T_NUMBER",
            Tok::Bool(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(e) => e,
        }
    }
}

struct JsonParser<'a> {
    data: &'a [u8],
    pos: usize,
    depth: usize,
    max_depth: usize,
    /// The last string token's bytes.
    text: Vec<u8>,
}

impl JsonParser<'_> {
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    /// The next token and the index it starts at.
    fn next(&mut self) -> (Tok, usize) {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let ch = self.at(self.pos);
        let single = match ch {
            b'{' => Some(Tok::ObjBegin),
            b'}' => Some(Tok::ObjEnd),
            b'[' => Some(Tok::ArrBegin),
            b']' => Some(Tok::ArrEnd),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return (t, start);
        }
        if ch == 0 {
            return (Tok::End, start);
        }
        let rest = &self.data[self.pos..];
        match ch {
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(),
            _ if rest.starts_with(b"true") => {
                self.pos += 4;
                (Tok::Bool(true), start)
            }
            _ if rest.starts_with(b"false") => {
                self.pos += 5;
                (Tok::Bool(false), start)
            }
            _ if rest.starts_with(b"null") => {
                self.pos += 4;
                (Tok::Null, start)
            }
            b'i' | b'I' | b'n' | b'N' | b'+' if self.is_invalid_number() => self.number(),
            _ => (Tok::Error("invalid token"), start),
        }
    }

    /// lua-cjson's `json_is_invalid_number` for the tokens it lets strtod
    /// read anyway (decode_invalid_numbers is on by default).
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.at(p) == b'+' {
            return true;
        }
        if self.at(p) == b'-' {
            p += 1;
        }
        if self.at(p) == b'0' {
            let c2 = self.at(p + 1);
            return (c2 | 0x20) == b'x' || c2.is_ascii_digit();
        }
        if self.at(p) <= b'9' {
            return false;
        }
        let word = |w: &[u8]| (0..3).all(|i| self.at(p + i).eq_ignore_ascii_case(&w[i]));
        word(b"inf") || word(b"nan")
    }

    fn number(&mut self) -> (Tok, usize) {
        let start = self.pos;
        let (n, used) = c_strtod(&self.data[self.pos..]);
        if used == 0 {
            return (Tok::Error("invalid number"), start);
        }
        self.pos += used;
        (Tok::Num(n), start)
    }

    fn string(&mut self) -> (Tok, usize) {
        let start = self.pos;
        self.pos += 1;
        self.text.clear();
        loop {
            let ch = self.at(self.pos);
            if ch == b'"' {
                break;
            }
            if ch == 0 {
                return (Tok::Error("unexpected end of string"), self.pos);
            }
            let mut c = ch;
            if ch == b'\\' {
                c = match self.at(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b'f' => 12,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return (Tok::Error("invalid unicode escape code"), self.pos);
                    }
                    _ => return (Tok::Error("invalid escape code"), self.pos),
                };
                self.pos += 1;
            }
            self.text.push(c);
            self.pos += 1;
        }
        self.pos += 1;
        (Tok::Str, start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let mut v = 0u32;
        for i in 0..4 {
            v = (v << 4) | (self.at(at + i) as char).to_digit(16)?;
        }
        Some(v)
    }

    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        // codepoint_to_utf8, which also encodes lone low surrogates.
        let b = &mut self.text;
        match cp {
            0..=0x7F => b.push(cp as u8),
            0x80..=0x7FF => b.extend([0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
            0x800..=0xFFFF => b.extend([
                0xE0 | (cp >> 12) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            0x10000..=0x1FFFFF => b.extend([
                0xF0 | (cp >> 18) as u8,
                0x80 | ((cp >> 12) & 0x3F) as u8,
                0x80 | ((cp >> 6) & 0x3F) as u8,
                0x80 | (cp & 0x3F) as u8,
            ]),
            _ => return false,
        }
        self.pos += len;
        true
    }

    fn error<T>(&self, expected: &str, tok: Tok, at: usize) -> mlua::Result<T> {
        fail(format!(
            "Expected {expected} but found {} at character {}",
            tok.name(),
            at + 1
        ))
    }

    fn value(&mut self, lua: &Lua, tok: Tok, at: usize) -> mlua::Result<Value> {
        Ok(match tok {
            Tok::Str => Value::String(lua.create_string(&self.text)?),
            Tok::Num(n) => Value::Number(n),
            Tok::Bool(b) => Value::Boolean(b),
            Tok::Null => Value::LightUserData(LightUserData(std::ptr::null_mut())),
            Tok::ObjBegin => self.object(lua)?,
            Tok::ArrBegin => self.array(lua)?,
            other => return self.error("value", other, at),
        })
    }

    fn descend(&mut self) -> mlua::Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return fail(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth, self.pos
            ));
        }
        Ok(())
    }

    fn object(&mut self, lua: &Lua) -> mlua::Result<Value> {
        self.descend()?;
        let t = lua.create_table()?;
        let (mut tok, mut at) = self.next();
        if tok == Tok::ObjEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        loop {
            if tok != Tok::Str {
                return self.error("object key string", tok, at);
            }
            let key = lua.create_string(&self.text)?;
            (tok, at) = self.next();
            if tok != Tok::Colon {
                return self.error("colon", tok, at);
            }
            (tok, at) = self.next();
            let v = self.value(lua, tok, at)?;
            t.raw_set(key, v)?;
            (tok, at) = self.next();
            if tok == Tok::ObjEnd {
                self.depth -= 1;
                return Ok(Value::Table(t));
            }
            if tok != Tok::Comma {
                return self.error("comma or object end", tok, at);
            }
            (tok, at) = self.next();
        }
    }

    fn array(&mut self, lua: &Lua) -> mlua::Result<Value> {
        self.descend()?;
        let t = lua.create_table()?;
        let (mut tok, mut at) = self.next();
        if tok == Tok::ArrEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        let mut i = 1;
        loop {
            let v = self.value(lua, tok, at)?;
            t.raw_set(i, v)?;
            i += 1;
            (tok, at) = self.next();
            if tok == Tok::ArrEnd {
                self.depth -= 1;
                return Ok(Value::Table(t));
            }
            if tok != Tok::Comma {
                return self.error("comma or array end", tok, at);
            }
            (tok, at) = self.next();
        }
    }
}

fn json_decode(lua: &Lua, data: &[u8], max_depth: usize) -> mlua::Result<Value> {
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return fail("JSON parser does not support UTF-16 or UTF-32");
    }
    let mut p = JsonParser {
        data,
        pos: 0,
        depth: 0,
        max_depth,
        text: Vec::new(),
    };
    let (tok, at) = p.next();
    let v = p.value(lua, tok, at)?;
    let (tok, at) = p.next();
    if tok != Tok::End {
        return p.error("the end", tok, at);
    }
    Ok(v)
}

// ---------------------------------------------------------------- struct

const MAXINTSIZE: usize = 32;
const MAXALIGN: usize = 8;

#[derive(Clone, Copy)]
struct Header {
    little: bool,
    align: usize,
}

struct Fmt<'a> {
    f: &'a [u8],
    i: usize,
}

impl Fmt<'_> {
    fn getnum(&mut self, df: usize) -> mlua::Result<usize> {
        if !self.f.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
            return Ok(df);
        }
        let mut a: usize = 0;
        while let Some(c) = self.f.get(self.i).filter(|c| c.is_ascii_digit()) {
            let d = (c - b'0') as usize;
            if a > (i32::MAX as usize) / 10 || a * 10 > (i32::MAX as usize) - d {
                return fail("integral size overflow");
            }
            a = a * 10 + d;
            self.i += 1;
        }
        Ok(a)
    }

    fn optsize(&mut self, opt: u8) -> mlua::Result<usize> {
        Ok(match opt {
            b'B' | b'b' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'x' => 1,
            b'c' => self.getnum(1)?,
            b'i' | b'I' => {
                let sz = self.getnum(4)?;
                if sz > MAXINTSIZE {
                    return fail(format!(
                        "integral size {sz} is larger than limit of {MAXINTSIZE}"
                    ));
                }
                sz
            }
            _ => 0,
        })
    }

    fn control(&mut self, opt: u8, h: &mut Header, fname: &str) -> mlua::Result<()> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.getnum(MAXALIGN)?;
                if a == 0 || !a.is_power_of_two() {
                    return fail(format!("alignment {a} is not a power of 2"));
                }
                h.align = a;
            }
            _ => {
                return fail(format!(
                    "bad argument #1 to '{fname}' (invalid format option '{}')",
                    opt as char
                ));
            }
        }
        Ok(())
    }
}

fn toalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

fn native() -> Header {
    Header {
        little: cfg!(target_endian = "little"),
        align: 1,
    }
}

fn struct_pack(lua: &Lua, mut args: Variadic<Value>) -> mlua::Result<mlua::LuaString> {
    let fmt = check_bytes(args.first(), 1, "pack")?;
    // C pushes a nil after the arguments: the first missing one is "nil".
    args.push(Value::Nil);
    let mut f = Fmt { f: &fmt, i: 0 };
    let mut h = native();
    let mut arg = 1usize;
    let mut out: Vec<u8> = Vec::new();
    while let Some(&opt) = f.f.get(f.i) {
        if opt == 0 {
            break;
        }
        f.i += 1;
        let mut size = f.optsize(opt)?;
        let pad = toalign(out.len(), &h, opt, size);
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(args.get(arg), arg + 1, "pack")?;
                arg += 1;
                let mut value: u64 = if n < 0.0 { (n as i64) as u64 } else { n as u64 };
                let mut buf = vec![0u8; size];
                let idx: Vec<usize> = if h.little {
                    (0..size).collect()
                } else {
                    (0..size).rev().collect()
                };
                for i in idx {
                    buf[i] = (value & 0xff) as u8;
                    value >>= 8;
                }
                out.extend_from_slice(&buf);
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(args.get(arg), arg + 1, "pack")? as f32;
                arg += 1;
                let b = if h.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'd' => {
                let n = check_number(args.get(arg), arg + 1, "pack")?;
                arg += 1;
                let b = if h.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                };
                out.extend_from_slice(&b);
            }
            b'c' | b's' => {
                let s = check_bytes(args.get(arg), arg + 1, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // luaL_argcheck reports the argument after the string
                    // (C increments `arg` first).
                    return fail(format!(
                        "bad argument #{} to 'pack' (string too short)",
                        arg + 1
                    ));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, &mut h, "pack")?,
        }
    }
    lua.create_string(&out)
}

fn struct_unpack(lua: &Lua, args: Variadic<Value>) -> mlua::Result<MultiValue> {
    let fmt = check_bytes(args.first(), 1, "unpack")?;
    let data = check_bytes(args.get(1), 2, "unpack")?;
    let ld = data.len();
    let pos = match args.get(2) {
        None | Some(Value::Nil) => 1.0,
        v => check_number(v, 3, "unpack")?,
    } as i64;
    if pos <= 0 {
        return fail("bad argument #3 to 'unpack' (offset must be 1 or greater)");
    }
    let mut pos = (pos - 1) as usize;
    let mut f = Fmt { f: &fmt, i: 0 };
    let mut h = native();
    let mut res: Vec<Value> = Vec::new();
    let too_short = || fail("bad argument #2 to 'unpack' (data string too short)");
    while let Some(&opt) = f.f.get(f.i) {
        if opt == 0 {
            break;
        }
        f.i += 1;
        let mut size = f.optsize(opt)?;
        pos = pos.saturating_add(toalign(pos, &h, opt, size));
        if !(size <= ld && pos <= ld - size) {
            return too_short();
        }
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let bytes = &data[pos..pos + size];
                let mut l: u64 = 0;
                let order: Box<dyn Iterator<Item = &u8>> = if h.little {
                    Box::new(bytes.iter().rev())
                } else {
                    Box::new(bytes.iter())
                };
                for &b in order {
                    l = (l << 8) | b as u64;
                }
                let n = if opt.is_ascii_lowercase() {
                    let shift = ((size * 8).wrapping_sub(1) % 64) as u32;
                    let mask = u64::MAX << shift;
                    if l & mask != 0 {
                        l |= mask;
                    }
                    l as i64 as f64
                } else {
                    l as f64
                };
                res.push(Value::Number(n));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let v = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                res.push(Value::Number(v as f64));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let v = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                res.push(Value::Number(v));
            }
            b'c' => {
                if size == 0 {
                    let prev = res.last().and_then(as_number);
                    let Some(n) = prev else {
                        return fail("format 'c0' needs a previous size");
                    };
                    res.pop();
                    size = if n <= 0.0 { 0 } else { n as usize };
                    if !(size <= ld && pos <= ld - size) {
                        return too_short();
                    }
                }
                res.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(e) = data[pos..].iter().position(|&b| b == 0) else {
                    return fail("unfinished string in data");
                };
                res.push(Value::String(lua.create_string(&data[pos..pos + e])?));
                size = e + 1;
            }
            _ => f.control(opt, &mut h, "unpack")?,
        }
        pos += size;
    }
    res.push(Value::Number((pos + 1) as f64));
    Ok(MultiValue::from_iter(res))
}

fn struct_size(args: Variadic<Value>) -> mlua::Result<f64> {
    let fmt = check_bytes(args.first(), 1, "size")?;
    let mut f = Fmt { f: &fmt, i: 0 };
    let mut h = native();
    let mut pos = 0usize;
    while let Some(&opt) = f.f.get(f.i) {
        if opt == 0 {
            break;
        }
        f.i += 1;
        let size = f.optsize(opt)?;
        pos += toalign(pos, &h, opt, size);
        if opt == b's' {
            return fail("bad argument #1 to 'size' (option 's' has no fixed size)");
        } else if opt == b'c' && size == 0 {
            return fail("bad argument #1 to 'size' (option 'c0' has no fixed size)");
        }
        // Letters without a size (unknown ones too) are ignored here.
        if !opt.is_ascii_alphanumeric() {
            f.control(opt, &mut h, "size")?;
        }
        pos += size;
    }
    Ok(pos as f64)
}

pub(crate) fn struct_lib(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", lua.create_function(struct_pack)?)?;
    t.raw_set("unpack", lua.create_function(struct_unpack)?)?;
    t.raw_set("size", lua.create_function(|_, a| struct_size(a))?)?;
    Ok(t)
}

// ---------------------------------------------------------------- cmsgpack

const MSGPACK_MAX_NESTING: usize = 16;
const MSGPACK_MAX_DECODE_DEPTH: usize = 1000;

fn mp_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend([0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend((n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend((n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend((n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend([0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend((n as i16).to_be_bytes());
    } else if n >= -2147483648 {
        out.push(0xd2);
        out.extend((n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend(n.to_be_bytes());
    }
}

fn mp_len(len: usize, small: Option<(u8, usize)>, codes: [u8; 3], out: &mut Vec<u8>) {
    if let Some((base, limit)) = small
        && len < limit
    {
        out.push(base | len as u8);
    } else if codes[0] != 0 && len <= 0xff {
        out.extend([codes[0], len as u8]);
    } else if len <= 0xffff {
        out.push(codes[1]);
        out.extend((len as u16).to_be_bytes());
    } else {
        out.push(codes[2]);
        out.extend((len as u32).to_be_bytes());
    }
}

fn mp_encode(v: &Value, level: usize, out: &mut Vec<u8>) -> mlua::Result<()> {
    match v {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => {
            let n = as_number(v).unwrap_or(0.0);
            if !n.is_infinite() && (n as i64) as f64 == n {
                mp_int(n as i64, out);
            } else if (n as f32) as f64 == n {
                out.push(0xca);
                out.extend((n as f32).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend(n.to_be_bytes());
            }
        }
        Value::String(s) => {
            let b = s.as_bytes();
            mp_len(b.len(), Some((0xa0, 32)), [0xd9, 0xda, 0xdb], out);
            out.extend_from_slice(&b);
        }
        Value::Table(t) if level < MSGPACK_MAX_NESTING => {
            // table_is_an_array: positive int keys without holes.
            let mut count = 0usize;
            let mut max = 0f64;
            let mut array = true;
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, _) = pair?;
                match as_number(&k) {
                    Some(n) if n > 0.0 && (n as i32) as f64 == n => {
                        count += 1;
                        max = max.max(n);
                    }
                    _ => {
                        array = false;
                        break;
                    }
                }
            }
            if array && max as usize == count {
                mp_len(count, Some((0x90, 16)), [0, 0xdc, 0xdd], out);
                for i in 1..=count {
                    let item: Value = t.raw_get(i)?;
                    mp_encode(&item, level + 1, out)?;
                }
            } else {
                // Two passes rather than collecting the pairs: every Lua
                // value held from Rust takes a slot of mlua's reference
                // stack, which a 100k-key table would exhaust.
                let len = t.clone().pairs::<Value, Value>().count();
                mp_len(len, Some((0x80, 16)), [0, 0xde, 0xdf], out);
                for pair in t.clone().pairs::<Value, Value>() {
                    let (k, val) = pair?;
                    mp_encode(&k, level + 1, out)?;
                    mp_encode(&val, level + 1, out)?;
                }
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

enum MpErr {
    Eof,
    BadFmt,
    Key(&'static str),
}

struct MpCur<'a> {
    d: &'a [u8],
    p: usize,
}

impl MpCur<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], MpErr> {
        if self.d.len() - self.p < n {
            return Err(MpErr::Eof);
        }
        let s = &self.d[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> Result<u64, MpErr> {
        Ok(self.take(n)?.iter().fold(0u64, |a, &b| (a << 8) | b as u64))
    }

    fn decode(&mut self, lua: &Lua, depth: usize) -> Result<Value, MpErr> {
        let lua_err = |_| MpErr::BadFmt;
        if depth > MSGPACK_MAX_DECODE_DEPTH {
            return Err(MpErr::BadFmt);
        }
        let c = self.be(1)? as u8;
        let num = |n: f64| Ok(Value::Number(n));
        match c {
            0x00..=0x7f => num(c as f64),
            0xe0..=0xff => num(c as i8 as f64),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xcc => num(self.be(1)? as f64),
            0xcd => num(self.be(2)? as f64),
            0xce => num(self.be(4)? as f64),
            0xcf => num(self.be(8)? as f64),
            0xd0 => num(self.be(1)? as u8 as i8 as f64),
            0xd1 => num(self.be(2)? as u16 as i16 as f64),
            0xd2 => num(self.be(4)? as u32 as i32 as f64),
            0xd3 => num(self.be(8)? as i64 as f64),
            0xca => num(f32::from_bits(self.be(4)? as u32) as f64),
            0xcb => num(f64::from_bits(self.be(8)?)),
            // 0.4.0 reads no bin types.
            0xa0..=0xbf | 0xd9 | 0xda | 0xdb => {
                let len = match c {
                    0xa0..=0xbf => (c & 0x1f) as usize,
                    0xd9 => self.be(1)? as usize,
                    0xda => self.be(2)? as usize,
                    _ => self.be(4)? as usize,
                };
                let s = self.take(len)?;
                Ok(Value::String(lua.create_string(s).map_err(lua_err)?))
            }
            0x90..=0x9f | 0xdc | 0xdd => {
                let len = match c {
                    0x90..=0x9f => (c & 0x0f) as usize,
                    0xdc => self.be(2)? as usize,
                    _ => self.be(4)? as usize,
                };
                let t = lua.create_table().map_err(lua_err)?;
                for i in 1..=len {
                    let v = self.decode(lua, depth + 1)?;
                    t.raw_set(i, v).map_err(lua_err)?;
                }
                Ok(Value::Table(t))
            }
            0x80..=0x8f | 0xde | 0xdf => {
                let len = match c {
                    0x80..=0x8f => (c & 0x0f) as usize,
                    0xde => self.be(2)? as usize,
                    _ => self.be(4)? as usize,
                };
                let t = lua.create_table().map_err(lua_err)?;
                for _ in 0..len {
                    let k = self.decode(lua, depth + 1)?;
                    let v = self.decode(lua, depth + 1)?;
                    // lua_rawset fails on these keys in C too.
                    if matches!(k, Value::Nil) {
                        return Err(MpErr::Key("table index is nil"));
                    }
                    if as_number(&k).is_some_and(f64::is_nan) {
                        return Err(MpErr::Key("table index is NaN"));
                    }
                    t.raw_set(k, v).map_err(lua_err)?;
                }
                Ok(Value::Table(t))
            }
            _ => Err(MpErr::BadFmt),
        }
    }
}

fn mp_unpack_full(lua: &Lua, s: &[u8], limit: i64, offset: i64) -> mlua::Result<MultiValue> {
    let decode_all = limit == 0 && offset == 0;
    let len = s.len() as i64;
    if offset < 0 || limit < 0 {
        return fail(format!(
            "Invalid request to unpack with offset of {offset} and limit of {len}."
        ));
    } else if offset > len {
        return fail(format!(
            "Start offset {offset} greater than input length {len}."
        ));
    }
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    let mut cur = MpCur {
        d: s,
        p: offset as usize,
    };
    let mut out = Vec::new();
    let mut cnt = 0;
    while cur.p < s.len() && cnt < limit {
        match cur.decode(lua, 0) {
            Ok(v) => out.push(v),
            Err(MpErr::Eof) => return fail("Missing bytes in input."),
            Err(MpErr::BadFmt) => return fail("Bad data format in input."),
            Err(MpErr::Key(msg)) => return fail(msg),
        }
        cnt += 1;
    }
    if !decode_all {
        let next = if cur.p == s.len() { -1 } else { cur.p as i64 };
        out.insert(0, Value::Number(next as f64));
    }
    Ok(MultiValue::from_iter(out))
}

fn opt_int(v: Option<&Value>, pos: usize, fname: &str, df: i64) -> mlua::Result<i64> {
    match v {
        None | Some(Value::Nil) => Ok(df),
        v => Ok(check_number(v, pos, fname)? as i64),
    }
}

pub(crate) fn cmsgpack(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return fail::<mlua::LuaString>(
                    "bad argument #0 to 'pack' (MessagePack pack needs input.)",
                );
            }
            let mut out = Vec::new();
            for a in args.iter() {
                mp_encode(a, 0, &mut out)?;
            }
            lua.create_string(&out)
        })?,
    )?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: Variadic<Value>| {
            let s = check_bytes(args.first(), 1, "unpack")?;
            mp_unpack_full(lua, &s, 0, 0)
        })?,
    )?;
    t.raw_set(
        "unpack_one",
        lua.create_function(|lua, args: Variadic<Value>| {
            let offset = opt_int(args.get(1), 2, "unpack_one", 0)?;
            let s = check_bytes(args.first(), 1, "unpack_one")?;
            mp_unpack_full(lua, &s, 1, offset)
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        lua.create_function(|lua, args: Variadic<Value>| {
            let limit = check_number(args.get(1), 2, "unpack_limit")? as i64;
            let offset = opt_int(args.get(2), 3, "unpack_limit", 0)?;
            let s = check_bytes(args.first(), 1, "unpack_limit")?;
            mp_unpack_full(lua, &s, limit, offset)
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}
