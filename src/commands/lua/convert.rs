//! Redis ↔ Lua value conversions, as Redis 7.0's `script_lua.c` does them.
//!
//! Redis → Lua reads the RESP bytes our own command handlers wrote into a
//! scratch [`Reply`] (a tiny reader: these bytes come from this server, but
//! it still never panics on a short or odd buffer) and builds the Lua value:
//! integer → number, bulk → string, nil bulk/array → false, status →
//! `{ok=…}`, error → `{err=…}`, and the RESP3 types as `{map=…}`,
//! `{set=…}`, `{double=…}`, booleans, `{big_number=…}`,
//! `{verbatim_string=…}`.
//!
//! Lua → Redis writes the script's return value into the caller's reply:
//! numbers truncate to integers, strings are bulks, `true` is 1 and `false`
//! nil in RESP2 (booleans after `redis.setresp(3)`), tables are checked for
//! `err`, `ok`, `double`, `big_number`, `verbatim_string`, `map`, `set`, and
//! otherwise read as an array up to the first nil.

use mlua::{Lua, Table, Value};

use crate::protocol::Reply;
use crate::protocol::reply::Frame;

/// Deepest table nesting converted to a reply (Redis stops at its Lua
/// stack limit with the same error).
const MAX_DEPTH: usize = 200;

/// Redis's `luaPushErrorBuff` text: `-CODE msg` keeps its code, anything
/// else gets `ERR`; line breaks at either end go.
pub(crate) fn error_text(buf: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = match buf.strip_prefix(b"-") {
        Some(rest) => match rest.iter().position(|&b| b == b' ') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (b"ERR", rest),
        },
        None => (b"ERR", buf),
    };
    let is_nl = |b: &u8| *b == b'\r' || *b == b'\n';
    let start = msg.iter().position(|b| !is_nl(b)).unwrap_or(msg.len());
    let end = msg.iter().rposition(|b| !is_nl(b)).map_or(start, |i| i + 1);
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend_from_slice(&msg[start..end.max(start)]);
    out
}

/// `{err = text}`; `ignore_stats` marks errors a command already counted.
pub(crate) fn error_table(lua: &Lua, text: &[u8], ignore_stats: bool) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(text))?)?;
    if ignore_stats {
        t.raw_set("ignore_error_stats_update", true)?;
    }
    Ok(Value::Table(t))
}

/// Converts one reply in `buf` to a Lua value: the reference the tests hold
/// [`reply_to_lua`] to (scripts' replies are converted from their frames).
#[cfg(test)]
fn resp_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<Value> {
    let mut r = RespReader { buf, pos: 0 };
    r.value(lua, 0)
}

/// Converts the reply a [`Reply::frames`] writer recorded to a Lua value,
/// as `resp_to_lua` converts the same reply's bytes.
pub(crate) fn reply_to_lua(lua: &Lua, reply: &Reply) -> mlua::Result<Value> {
    let mut r = FrameReader {
        frames: reply.recorded(),
        buf: &reply.buf,
        next: 0,
        raw: None,
    };
    r.value(lua, 0)
}

/// Walks recorded frames; pre-encoded runs ([`Frame::Raw`]) are read as
/// RESP, one value at a time, where they occur.
struct FrameReader<'a> {
    frames: &'a [Frame],
    buf: &'a [u8],
    next: usize,
    raw: Option<RespReader<'a>>,
}

impl FrameReader<'_> {
    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > MAX_DEPTH {
            return Err(mlua::Error::runtime("reply nested too deeply"));
        }
        if let Some(raw) = &mut self.raw {
            if raw.pos < raw.buf.len() {
                return raw.value(lua, depth);
            }
            self.raw = None;
        }
        let (frames, buf) = (self.frames, self.buf);
        let Some(frame) = frames.get(self.next) else {
            return Ok(Value::Nil);
        };
        self.next += 1;
        let bytes = |r: &std::ops::Range<usize>| buf.get(r.clone()).unwrap_or(&[]);
        let single = |lua: &Lua, field: &str, v: Value| -> mlua::Result<Value> {
            let t = lua.create_table()?;
            t.raw_set(field, v)?;
            Ok(Value::Table(t))
        };
        Ok(match frame {
            Frame::Simple(r) => single(lua, "ok", Value::String(lua.create_string(bytes(r))?))?,
            Frame::Error(r) => {
                let mut text = b"-".to_vec();
                text.extend_from_slice(bytes(r));
                error_table(lua, &text, true)?
            }
            Frame::Int(n) => Value::Number(*n as f64),
            Frame::Bulk(r) => Value::String(lua.create_string(bytes(r))?),
            Frame::NullBulk | Frame::NullArray => Value::Boolean(false),
            Frame::Null => Value::Nil,
            Frame::Array(n) | Frame::Push(n) => {
                let t = lua.create_table()?;
                for i in 0..*n {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(i + 1, v)?;
                }
                Value::Table(t)
            }
            Frame::Map(n) => {
                let m = lua.create_table()?;
                for _ in 0..*n {
                    let k = self.value(lua, depth + 1)?;
                    let v = self.value(lua, depth + 1)?;
                    if !k.is_nil() {
                        m.raw_set(k, v)?;
                    }
                }
                single(lua, "map", Value::Table(m))?
            }
            Frame::Set(n) => {
                let s = lua.create_table()?;
                for _ in 0..*n {
                    let k = self.value(lua, depth + 1)?;
                    if !k.is_nil() {
                        s.raw_set(k, true)?;
                    }
                }
                single(lua, "set", Value::Table(s))?
            }
            Frame::Bool(b) => Value::Boolean(*b),
            Frame::Double(x) => single(lua, "double", Value::Number(*x))?,
            Frame::Verbatim(r) => {
                let v = lua.create_table()?;
                v.raw_set("string", lua.create_string(bytes(r))?)?;
                v.raw_set("format", lua.create_string("txt")?)?;
                single(lua, "verbatim_string", Value::Table(v))?
            }
            Frame::Raw(r) => {
                let mut raw = RespReader {
                    buf: bytes(r),
                    pos: 0,
                };
                // An attribute (DEBUG PROTOCOL attrib) is not shown to
                // scripts; when the run ends with it, the reply it
                // annotates is the next frame.
                if raw.buf.first() == Some(&b'|') {
                    raw.pos = 1;
                    let n = raw.int().max(0);
                    for _ in 0..n * 2 {
                        raw.value(lua, depth + 1)?;
                    }
                    if raw.pos >= raw.buf.len() {
                        return self.value(lua, depth);
                    }
                }
                let v = raw.value(lua, depth)?;
                self.raw = Some(raw);
                v
            }
        })
    }
}

struct RespReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl RespReader<'_> {
    fn line(&mut self) -> &[u8] {
        let rest = self.buf.get(self.pos..).unwrap_or(&[]);
        let end = rest.windows(2).position(|w| w == b"\r\n");
        match end {
            Some(e) => {
                self.pos += e + 2;
                &rest[..e]
            }
            None => {
                self.pos = self.buf.len();
                rest
            }
        }
    }

    fn int(&mut self) -> i64 {
        crate::util::parse_i64(self.line()).unwrap_or(0)
    }

    fn bulk(&mut self, len: i64) -> &[u8] {
        let len = len.max(0) as usize;
        let start = self.pos.min(self.buf.len());
        let end = start.saturating_add(len).min(self.buf.len());
        self.pos = end.saturating_add(2);
        &self.buf[start..end]
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        if depth > MAX_DEPTH {
            return Err(mlua::Error::runtime("reply nested too deeply"));
        }
        let Some(&kind) = self.buf.get(self.pos) else {
            return Ok(Value::Nil);
        };
        self.pos += 1;
        let single = |lua: &Lua, field: &str, v: Value| -> mlua::Result<Value> {
            let t = lua.create_table()?;
            t.raw_set(field, v)?;
            Ok(Value::Table(t))
        };
        Ok(match kind {
            b'+' => {
                let s = lua.create_string(self.line())?;
                single(lua, "ok", Value::String(s))?
            }
            b'-' => {
                let mut text = b"-".to_vec();
                text.extend_from_slice(self.line());
                error_table(lua, &text, true)?
            }
            b':' => Value::Number(self.int() as f64),
            b'$' => {
                let n = self.int();
                if n < 0 {
                    Value::Boolean(false)
                } else {
                    Value::String(lua.create_string(self.bulk(n))?)
                }
            }
            b'*' | b'>' => {
                let n = self.int();
                if n < 0 {
                    return Ok(Value::Boolean(false));
                }
                let t = lua.create_table()?;
                for i in 0..n {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(i + 1, v)?;
                }
                Value::Table(t)
            }
            b'%' => {
                let n = self.int().max(0);
                let m = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua, depth + 1)?;
                    let v = self.value(lua, depth + 1)?;
                    if !k.is_nil() {
                        m.raw_set(k, v)?;
                    }
                }
                single(lua, "map", Value::Table(m))?
            }
            b'~' => {
                let n = self.int().max(0);
                let s = lua.create_table()?;
                for _ in 0..n {
                    let k = self.value(lua, depth + 1)?;
                    if !k.is_nil() {
                        s.raw_set(k, true)?;
                    }
                }
                single(lua, "set", Value::Table(s))?
            }
            b'_' => {
                self.line();
                Value::Nil
            }
            b'#' => Value::Boolean(self.line() == b"t"),
            b',' => {
                let line = self.line();
                let x = match line {
                    b"inf" => f64::INFINITY,
                    b"-inf" => f64::NEG_INFINITY,
                    _ => std::str::from_utf8(line)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(f64::NAN),
                };
                single(lua, "double", Value::Number(x))?
            }
            b'(' => {
                let s = lua.create_string(self.line())?;
                single(lua, "big_number", Value::String(s))?
            }
            b'=' => {
                let n = self.int();
                let body = self.bulk(n);
                let (format, text) = if body.len() >= 4 {
                    (&body[..3], &body[4..])
                } else {
                    (&b"txt"[..], body)
                };
                let v = lua.create_table()?;
                v.raw_set("string", lua.create_string(text)?)?;
                v.raw_set("format", lua.create_string(format)?)?;
                single(lua, "verbatim_string", Value::Table(v))?
            }
            b'|' => {
                // Attributes are not shown to scripts: skip them, read the reply.
                let n = self.int().max(0);
                for _ in 0..n * 2 {
                    self.value(lua, depth + 1)?;
                }
                self.value(lua, depth)?
            }
            _ => {
                self.line();
                Value::Nil
            }
        })
    }
}

/// Writes a script's return value as a reply. `script_resp3` is the
/// protocol the script chose with `redis.setresp`.
pub(crate) fn lua_to_reply(out: &mut Reply, v: &Value, script_resp3: bool) {
    write_value(out, v, script_resp3, 0);
}

fn write_value(out: &mut Reply, v: &Value, script_resp3: bool, depth: usize) {
    match v {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) => {
            if script_resp3 {
                out.boolean(*b);
            } else if *b {
                out.int(1);
            } else {
                out.null();
            }
        }
        Value::Integer(n) => out.int(*n),
        Value::Number(n) => out.int(c_to_i64(*n)),
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                out.error("ERR reached lua stack limit");
                return;
            }
            write_table(out, t, script_resp3, depth);
        }
        _ => out.null(),
    }
}

fn field(t: &Table, name: &str) -> Value {
    t.raw_get(name).unwrap_or(Value::Nil)
}

fn no_newlines(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

fn write_table(out: &mut Reply, t: &Table, script_resp3: bool, depth: usize) {
    if let Value::String(e) = field(t, "err") {
        let e = e.as_bytes();
        let end = e
            .iter()
            .rposition(|&b| b != b'\r' && b != b'\n')
            .map_or(0, |i| i + 1);
        out.error_bytes(&e[..end]);
        return;
    }
    if let Value::String(s) = field(t, "ok") {
        out.raw(b"+");
        out.raw(&no_newlines(&s.as_bytes()));
        out.raw(b"\r\n");
        return;
    }
    match field(t, "double") {
        Value::Number(x) => return out.double(x),
        Value::Integer(x) => return out.double(x as f64),
        _ => {}
    }
    if let Value::String(s) = field(t, "big_number") {
        let s = no_newlines(&s.as_bytes());
        if out.resp3 {
            out.raw(b"(");
            out.raw(&s);
            out.raw(b"\r\n");
        } else {
            out.bulk(&s);
        }
        return;
    }
    if let Value::Table(v) = field(t, "verbatim_string")
        && let (Value::String(format), Value::String(text)) =
            (field(&v, "format"), field(&v, "string"))
    {
        let (format, text) = (format.as_bytes(), text.as_bytes());
        if out.resp3 {
            let mut fmt = [b' '; 3];
            for (d, s) in fmt.iter_mut().zip(format.iter()) {
                *d = *s;
            }
            let mut b = itoa::Buffer::new();
            out.raw(b"=");
            out.raw(b.format(text.len() + 4).as_bytes());
            out.raw(b"\r\n");
            out.raw(&fmt);
            out.raw(b":");
            out.raw(&text);
            out.raw(b"\r\n");
        } else {
            out.bulk(&text);
        }
        return;
    }
    if let Value::Table(m) = field(t, "map") {
        let at = out.defer();
        let mut n = 0;
        for (k, v) in m.pairs::<Value, Value>().flatten() {
            write_value(out, &k, script_resp3, depth + 1);
            write_value(out, &v, script_resp3, depth + 1);
            n += 1;
        }
        out.fill_map(at, n);
        return;
    }
    if let Value::Table(s) = field(t, "set") {
        let at = out.defer();
        let mut n = 0;
        for (k, _) in s.pairs::<Value, Value>().flatten() {
            write_value(out, &k, script_resp3, depth + 1);
            n += 1;
        }
        out.fill_set(at, n);
        return;
    }
    let at = out.defer();
    let mut n = 0usize;
    loop {
        let v: Value = t.raw_get(n + 1).unwrap_or(Value::Nil);
        if v.is_nil() {
            break;
        }
        write_value(out, &v, script_resp3, depth + 1);
        n += 1;
    }
    out.fill_array(at, n);
}

pub(crate) use crate::util::{fmt_g, fmt_g17};

/// C's `(long long)` cast of a double as x86-64 does it: NaN and values
/// out of range become i64::MIN (Rust's `as` would saturate).
fn c_to_i64(n: f64) -> i64 {
    if n.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_like_lua_push_error() {
        assert_eq!(error_text(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(error_text(b"-x y\r\n"), b"x y");
        assert_eq!(error_text(b"-foo"), b"ERR foo");
        assert_eq!(error_text(b"boom"), b"ERR boom");
    }

    #[test]
    fn resp_round_trip() {
        let lua = Lua::new();
        let v = resp_to_lua(&lua, b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n").unwrap();
        let mut out = Reply::new();
        lua_to_reply(&mut out, &v, false);
        assert_eq!(out.buf, b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n");
        // Garbage never panics.
        for junk in [&b"*5\r\n"[..], b"$10\r\nab", b"%x", b"", b"=2\r\n"] {
            let _ = resp_to_lua(&lua, junk);
        }
    }

    /// A Lua value as text, tables with sorted keys, for comparisons.
    fn dump(v: &Value) -> String {
        match v {
            Value::Table(t) => {
                let mut items: Vec<String> = t
                    .clone()
                    .pairs::<Value, Value>()
                    .filter_map(Result::ok)
                    .map(|(k, v)| format!("{}={}", dump(&k), dump(&v)))
                    .collect();
                items.sort();
                format!("{{{}}}", items.join(","))
            }
            Value::String(s) => format!("{:?}", s.as_bytes()),
            other => format!("{other:?}"),
        }
    }

    /// The frames writer yields the values the bytes writer's RESP parses
    /// to, for every kind of element, in RESP2 and RESP3.
    #[test]
    fn frames_convert_like_bytes() {
        let lua = Lua::new();
        let write = |r: &mut Reply| {
            r.array(12);
            r.ok();
            r.simple("QUEUED");
            r.error("WRONGTYPE bad\r\nline");
            r.int(-7);
            r.bulk(b"a\r\nb");
            r.null();
            r.null_array();
            r.map(1);
            r.bulk_str("k");
            r.double(1.5);
            let at = r.defer();
            r.bulk(b"x");
            r.boolean(true);
            r.fill_set(at, 2);
            r.verbatim(b"text");
            let mut pre = Reply::with_resp3(r.resp3);
            pre.int(1);
            pre.bulk(b"two");
            r.array(2);
            let (head, tail) = pre.buf.split_at(3);
            r.raw(head);
            r.raw(tail);
            let mark = r.len();
            r.bulk(b"undone");
            r.truncate(mark);
            r.push(1);
            r.int(3);
        };
        for resp3 in [false, true] {
            let mut bytes = Reply::with_resp3(resp3);
            write(&mut bytes);
            let mut frames = Reply::frames(resp3);
            write(&mut frames);
            let a = dump(&resp_to_lua(&lua, &bytes.buf).unwrap());
            let b = dump(&reply_to_lua(&lua, &frames).unwrap());
            assert_eq!(a, b, "resp3={resp3}");
            let mut err = Reply::frames(resp3);
            err.error("ERR x");
            assert!(err.is_error() && !frames.is_error());
        }
    }
}
