//! The Lua debugger (LDB): `SCRIPT DEBUG YES|SYNC` and the EVAL session it
//! turns the caller's next EVAL into, as Redis's eval.c `ldb*` functions.
//!
//! As in Redis, the session does direct I/O on the caller's socket from
//! inside the script's line hook rather than re-entering the server: the
//! connection's task is parked awaiting the script's result meanwhile, so
//! nothing else reads or writes that socket. The session works on its own
//! `dup` of the descriptor (it cannot be closed or reused under it) and
//! polls it with a short timeout, so SCRIPT KILL and shutdown (both set the
//! engine's kill flag) still end a session waiting for input, and a client
//! that goes away lets the script run on without stops, as in Redis. Every
//! byte read is bounded: arguments as `ldbReplParseCommand` bounds them
//! (at most 1024 of at most 1024 bytes), the buffer at 1 MB.
//!
//! The state lives in the Lua state's app data while a session runs, where
//! the hook, `redis.call` (which logs the commands and replies) and
//! `redis.debug`/`redis.breakpoint` find it.

use std::io::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use mlua::debug::{Debug, DebugEvent};
use mlua::{Function, HookTriggers, Lua, MultiValue, Table, Value, VmState};
use parking_lot::Mutex;

use super::Busy;
use crate::protocol::Reply;
use crate::protocol::reply::Frame;

/// `SCRIPT DEBUG` modes a client can be in (`Client::ldb`).
pub(crate) const OFF: u8 = 0;
pub(crate) const YES: u8 = 1;
pub(crate) const SYNC: u8 = 2;

const BREAKPOINTS_MAX: usize = 64;
const MAX_LEN_DEFAULT: usize = 256;
/// `LUA_MINSTACK / 2`: how deep value dumps go.
const MAX_VALUES_DEPTH: usize = 10;
/// Instructions between two count events (Redis's hook period).
const COUNT_EVERY: u32 = 100_000;
/// Redis's send timeout on the debugging connection.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a wait for input looks at the kill flag.
const POLL_MS: i32 = 100;

/// One debugging session's state (Redis's `struct ldbState`).
pub(crate) struct Session {
    fd: OwnedFd,
    client: Arc<crate::clients::ClientHandle>,
    src: Vec<Vec<u8>>,
    logs: Vec<Vec<u8>>,
    step: bool,
    luabp: bool,
    bp: Vec<i64>,
    maxlen: usize,
    maxlen_hint_sent: bool,
    cbuf: Vec<u8>,
    currentline: i64,
    /// Since the last stop: the timeout that stops an endless loop.
    since: Instant,
    timeout_ms: u64,
    env: Table,
    getlocal: Function,
}

pub(crate) type Shared = Arc<Mutex<Session>>;

impl Session {
    /// Starts a session on (a duplicate of) `fd` for the script `body`.
    pub(crate) fn start(
        client: Arc<crate::clients::ClientHandle>,
        body: &[u8],
        timeout_ms: u64,
        env: Table,
        getlocal: Function,
    ) -> std::io::Result<Session> {
        // SAFETY: `fd` is the caller's open socket (its task keeps it open
        // while it awaits the script); the duplicate is owned here.
        let dup = unsafe { libc::fcntl(client.fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `dup` was just returned by fcntl and is owned by no one else.
        let fd = unsafe { OwnedFd::from_raw_fd(dup) };
        let mut body = body;
        while let [rest @ .., b'\n' | b'\r'] = body {
            body = rest;
        }
        Ok(Session {
            fd,
            client,
            src: body.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect(),
            logs: Vec::new(),
            step: true,
            luabp: false,
            bp: Vec::new(),
            maxlen: MAX_LEN_DEFAULT,
            maxlen_hint_sent: false,
            cbuf: Vec::new(),
            currentline: 0,
            since: Instant::now(),
            timeout_ms: if timeout_ms == 0 { 5000 } else { timeout_ms },
            env,
            getlocal,
        })
    }

    /// Redis's `ldbIsEnabled`: commands and errors are logged.
    fn enabled(&self) -> bool {
        self.step
    }

    fn log(&mut self, entry: impl Into<Vec<u8>>) {
        self.logs.push(entry.into());
    }

    fn log_with_maxlen(&mut self, mut entry: Vec<u8>) {
        let mut trimmed = false;
        if self.maxlen != 0 && entry.len() > self.maxlen {
            entry.truncate(self.maxlen);
            entry.extend_from_slice(b" ...");
            trimmed = true;
        }
        self.log(entry);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    /// Sends the logs as an array of status replies (`ldbSendLogs`).
    fn send_logs(&mut self) {
        let mut proto = format!("*{}\r\n", self.logs.len()).into_bytes();
        for mut l in self.logs.drain(..) {
            for b in &mut l {
                if *b == b'\r' || *b == b'\n' {
                    *b = b' ';
                }
            }
            proto.push(b'+');
            proto.extend_from_slice(&l);
            proto.extend_from_slice(b"\r\n");
        }
        // A failed write is seen by the next read, as in Redis.
        let _ = write_all(&self.fd, &proto);
    }

    fn source_line(&self, line: i64) -> &[u8] {
        usize::try_from(line - 1)
            .ok()
            .and_then(|i| self.src.get(i))
            .map_or(b"<out of range source code line>", Vec::as_slice)
    }

    fn log_source_line(&mut self, line: i64) {
        let bp = self.bp.contains(&line);
        let current = self.currentline == line;
        let prefix = match (current, bp) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut l = format!("{prefix}{line:<3} ").into_bytes();
        l.extend_from_slice(self.source_line(line));
        self.log(l);
    }

    fn list(&mut self, around: i64, context: i64) {
        for j in 1..=self.src.len() as i64 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j);
        }
    }

    fn break_cmd(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 1 {
            if self.bp.is_empty() {
                self.log("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log(format!("{} breakpoints set:", self.bp.len()));
                for l in self.bp.clone() {
                    self.log_source_line(l);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = crate::util::parse_i64(arg) else {
                let mut l = b"Invalid argument:'".to_vec();
                l.extend_from_slice(arg);
                l.push(b'\'');
                self.log(l);
                continue;
            };
            if line == 0 {
                self.bp.clear();
                self.log("All breakpoints removed.");
            } else if line > 0 {
                if self.bp.len() == BREAKPOINTS_MAX {
                    self.log("Too many breakpoints set.");
                } else if line <= self.src.len() as i64 && !self.bp.contains(&line) {
                    self.bp.push(line);
                    self.list(line, 1);
                } else {
                    self.log("Wrong line number.");
                }
            } else if let Some(i) = self.bp.iter().position(|&b| b == -line) {
                self.bp.remove(i);
                self.log("Breakpoint removed.");
            } else {
                self.log("No breakpoint in the specified line.");
            }
        }
    }

    fn maxlen_cmd(&mut self, argv: &[Vec<u8>]) {
        if argv.len() == 2 {
            let mut n = atoi(&argv[1]);
            self.maxlen_hint_sent = true;
            if n != 0 && n <= 60 {
                n = 60;
            }
            self.maxlen = n as usize;
        }
        if self.maxlen != 0 {
            self.log(format!(
                "<value> replies are truncated at {} bytes.",
                self.maxlen
            ));
        } else {
            self.log("<value> replies are unlimited.");
        }
    }

    fn parse_command(&self) -> Result<Option<Vec<Vec<u8>>>, ()> {
        parse_command(&self.cbuf)
    }
}

/// Parses one command from `buf` (`ldbReplParseCommand`, whose forgiving
/// parser this keeps): `Ok(None)` asks for more input.
fn parse_command(buf: &[u8]) -> Result<Option<Vec<Vec<u8>>>, ()> {
    if buf.is_empty() {
        return Ok(None);
    }
    let Some(star) = buf.iter().position(|&b| b == b'*') else {
        return Err(());
    };
    let mut p = star + 1;
    let Some(end) = find_crlf(buf, p) else {
        return Ok(None);
    };
    let argc = atoi(&buf[p..end]);
    if argc <= 0 || argc > 1024 {
        return Err(());
    }
    p = end + 2;
    let mut argv = Vec::with_capacity(argc as usize);
    while argv.len() < argc as usize {
        match buf.get(p) {
            None => return Ok(None),
            Some(b'$') => {}
            Some(_) => return Err(()),
        }
        let Some(end) = find_crlf(buf, p + 1) else {
            return Ok(None);
        };
        let len = atoi(&buf[p + 1..end]);
        if len <= 0 || len > 1024 {
            return Err(());
        }
        p = end + 2;
        let len = len as usize;
        if p + len + 2 > buf.len() {
            return Ok(None);
        }
        argv.push(buf[p..p + len].to_vec());
        p += len;
        if &buf[p..p + 2] != b"\r\n" {
            return Err(());
        }
        p += 2;
    }
    Ok(Some(argv))
}

/// C's `atoi`: leading spaces, a sign, digits; 0 if none.
fn atoi(s: &[u8]) -> i64 {
    let s = s.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut n: i64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add((d - b'0') as i64);
    }
    if neg { -n } else { n }
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?
        .windows(2)
        .position(|w| w == b"\r\n")
        .map(|i| from + i)
}

fn poll(fd: &OwnedFd, events: libc::c_short, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// Writes everything within the send timeout (the socket is non-blocking).
fn write_all(fd: &OwnedFd, mut data: &[u8]) -> std::io::Result<()> {
    let deadline = Instant::now() + SEND_TIMEOUT;
    let mut f = std::fs::File::from(fd.try_clone()?);
    while !data.is_empty() {
        match f.write(data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Err(e);
                }
                poll(fd, libc::POLLOUT, POLL_MS);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits for what the client sends (its connection hands it over through
/// the client's handle); `Ok(false)` once the client is gone. Kill
/// requests end the wait with the kill's error.
fn read_more(sess: &Shared, busy: &Busy) -> mlua::Result<bool> {
    let handle = sess.lock().client.clone();
    loop {
        if busy.kill.load(Relaxed) || handle.killed.load(Relaxed) {
            return Err(mlua::Error::RuntimeError(super::KILLED.into()));
        }
        let Some(data) = handle
            .debug_input
            .take(Duration::from_millis(POLL_MS as u64))
        else {
            return Ok(false);
        };
        if data.is_empty() {
            continue;
        }
        let mut s = sess.lock();
        s.cbuf.extend_from_slice(&data);
        if s.cbuf.len() > 1 << 20 {
            s.cbuf = Vec::new();
            return Err(mlua::Error::runtime("max client buffer reached"));
        }
        return Ok(true);
    }
}

/// `ldbEndSession`'s output: the remaining logs and `<endsession>`.
pub(crate) fn end(sess: &Shared) {
    let mut s = sess.lock();
    s.log("<endsession>");
    s.send_logs();
}

/// The running session, if any.
pub(crate) fn session(lua: &Lua) -> Option<Shared> {
    lua.app_data_ref::<Shared>().map(|s| s.clone())
}

/// Whether `redis.call` logs (an active session in step mode).
pub(crate) fn logging(lua: &Lua) -> Option<Shared> {
    session(lua).filter(|s| s.lock().enabled())
}

/// `redis.call`'s log of a command (`<redis> a b ...`).
pub(crate) fn log_command(sess: &Shared, argv: &[Vec<u8>]) {
    let mut l = b"<redis>".to_vec();
    for (j, a) in argv.iter().enumerate() {
        if j == 10 {
            l.extend_from_slice(format!(" ... ({} more)", argv.len() - j - 1).as_bytes());
            break;
        }
        l.push(b' ');
        l.extend_from_slice(a);
    }
    sess.lock().log(l);
}

/// A refused call's log (`luaPushErrorBuff`'s `<error> ...`).
pub(crate) fn log_error(sess: &Shared, msg: &[u8]) {
    let msg = msg.strip_prefix(b"-").unwrap_or(msg);
    let msg = msg.strip_prefix(b"ERR ").unwrap_or(msg);
    let mut l = b"<error> ".to_vec();
    l.extend_from_slice(msg);
    sess.lock().log(l);
}

/// A command's reply in human form (`ldbLogRedisReply`).
pub(crate) fn log_reply(sess: &Shared, reply: &Reply) {
    // Converting an error reply to Lua logs it first (Redis's
    // `redisProtocolToLuaType_Error` goes through `luaPushErrorBuff`).
    for f in reply.recorded() {
        if let Frame::Error(r) = f {
            let mut l = b"<error> -".to_vec();
            l.extend_from_slice(reply.buf.get(r.clone()).unwrap_or(&[]));
            sess.lock().log(l);
        }
    }
    let mut l = b"<reply> ".to_vec();
    let mut w = Human {
        frames: reply.recorded(),
        buf: &reply.buf,
        next: 0,
    };
    w.value(&mut l, 0);
    sess.lock().log_with_maxlen(l);
}

/// Walks a recorded reply as `ldbRedisProtocolToHuman` walks RESP.
struct Human<'a> {
    frames: &'a [Frame],
    buf: &'a [u8],
    next: usize,
}

impl Human<'_> {
    fn value(&mut self, o: &mut Vec<u8>, depth: usize) {
        let Some(frame) = self.frames.get(self.next) else {
            return;
        };
        self.next += 1;
        let bytes = |r: &std::ops::Range<usize>| self.buf.get(r.clone()).unwrap_or(&[]);
        match frame {
            Frame::Simple(r) => repr(o, &[b"+", bytes(r)].concat()),
            Frame::Error(r) => repr(o, &[b"-", bytes(r)].concat()),
            Frame::Int(n) => o.extend_from_slice(n.to_string().as_bytes()),
            Frame::Bulk(r) | Frame::Verbatim(r) => repr(o, bytes(r)),
            Frame::NullBulk | Frame::NullArray => o.extend_from_slice(b"NULL"),
            Frame::Null => o.extend_from_slice(b"(null)"),
            Frame::Bool(b) => o.extend_from_slice(if *b { b"#true" } else { b"#false" }),
            Frame::Double(x) => {
                o.extend_from_slice(b"(double) ");
                let mut tmp = [0u8; 40];
                o.extend_from_slice(crate::protocol::reply::format_double(*x, &mut tmp));
            }
            Frame::Array(n) | Frame::Push(n) => self.seq(o, *n, b"[", b"]", depth),
            Frame::Set(n) => self.seq(o, *n, b"~(", b")", depth),
            Frame::Map(n) => {
                o.push(b'{');
                for j in 0..*n {
                    self.nested(o, depth);
                    o.extend_from_slice(b" => ");
                    self.nested(o, depth);
                    if j + 1 != *n {
                        o.push(b',');
                    }
                }
                o.push(b'}');
            }
            Frame::Raw(r) => {
                let mut p = 0;
                resp_human(o, bytes(r), &mut p, depth);
            }
        }
    }

    fn nested(&mut self, o: &mut Vec<u8>, depth: usize) {
        if depth < 64 {
            self.value(o, depth + 1);
        }
    }

    fn seq(&mut self, o: &mut Vec<u8>, n: usize, open: &[u8], close: &[u8], depth: usize) {
        o.extend_from_slice(open);
        for j in 0..n {
            self.nested(o, depth);
            if j + 1 != n {
                o.push(b',');
            }
        }
        o.extend_from_slice(close);
    }
}

/// `ldbRedisProtocolToHuman` over pre-encoded RESP.
fn resp_human(o: &mut Vec<u8>, b: &[u8], p: &mut usize, depth: usize) {
    let Some(&t) = b.get(*p) else { return };
    let Some(end) = find_crlf(b, *p + 1) else {
        *p = b.len();
        return;
    };
    let line = &b[*p + 1..end];
    *p = end + 2;
    let n = atoi(line);
    let seq = |o: &mut Vec<u8>, count: i64, sep: &[u8], pairs: bool, p: &mut usize| {
        for j in 0..count.max(0) {
            if depth < 64 {
                resp_human(o, b, p, depth + 1);
                if pairs {
                    o.extend_from_slice(b" => ");
                    resp_human(o, b, p, depth + 1);
                }
            }
            if j != count - 1 {
                o.extend_from_slice(sep);
            }
        }
    };
    match t {
        b':' => o.extend_from_slice(line),
        b'$' | b'=' if n < 0 => o.extend_from_slice(b"NULL"),
        b'$' | b'=' => {
            let end = p.saturating_add(n as usize);
            repr(o, b.get(*p..end).unwrap_or(&[]));
            *p = end.saturating_add(2);
        }
        b'+' | b'-' => repr(o, &b[end - line.len() - 1..end]),
        b'*' | b'>' if n < 0 => o.extend_from_slice(b"NULL"),
        b'*' | b'>' => {
            o.push(b'[');
            seq(o, n, b",", false, p);
            o.push(b']');
        }
        b'~' => {
            o.extend_from_slice(b"~(");
            seq(o, n, b",", false, p);
            o.push(b')');
        }
        b'%' => {
            o.push(b'{');
            seq(o, n, b",", true, p);
            o.push(b'}');
        }
        b'_' => o.extend_from_slice(b"(null)"),
        b'#' => o.extend_from_slice(if line.first() == Some(&b't') {
            b"#true"
        } else {
            b"#false"
        }),
        b',' => {
            o.extend_from_slice(b"(double) ");
            o.extend_from_slice(line);
        }
        _ => {}
    }
}

/// Redis's `sdscatrepr`.
fn repr(out: &mut Vec<u8>, s: &[u8]) {
    crate::util::repr_into(out, s);
}

/// C's `%g`.
fn fmt_g(x: f64) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: the format takes one double; the buffer's size bounds it.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%g".as_ptr(), x) };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(buf.len() - 1)]).into_owned()
}

/// `ldbCatStackValueRec`: a readable dump of a Lua value.
fn cat_value(s: &mut Vec<u8>, v: &Value, level: usize) {
    if level == MAX_VALUES_DEPTH {
        s.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    let level = level + 1;
    match v {
        Value::String(x) => repr(s, &x.as_bytes()),
        Value::Boolean(b) => s.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => s.extend_from_slice(fmt_g(*i as f64).as_bytes()),
        Value::Number(n) => s.extend_from_slice(fmt_g(*n).as_bytes()),
        Value::Nil => s.extend_from_slice(b"nil"),
        Value::Table(t) => {
            let mut expected = 1.0;
            let mut is_array = true;
            let (mut r1, mut r2) = (Vec::new(), Vec::new());
            for (k, val) in t.pairs::<Value, Value>().flatten() {
                let kn = match k {
                    Value::Integer(i) => Some(i as f64),
                    Value::Number(n) => Some(n),
                    _ => None,
                };
                if is_array && kn != Some(expected) {
                    is_array = false;
                }
                cat_value(&mut r1, &val, level);
                r1.extend_from_slice(b"; ");
                r2.push(b'[');
                cat_value(&mut r2, &k, level);
                r2.extend_from_slice(b"]=");
                cat_value(&mut r2, &val, level);
                r2.extend_from_slice(b"; ");
                expected += 1.0;
            }
            r1.truncate(r1.len().saturating_sub(2));
            r2.truncate(r2.len().saturating_sub(2));
            s.push(b'{');
            s.extend_from_slice(if is_array { &r1 } else { &r2 });
            s.push(b'}');
        }
        other => {
            let name = match other {
                Value::Function(_) => "function",
                Value::UserData(_) => "userdata",
                Value::Thread(_) => "thread",
                Value::LightUserData(_) => "light-userdata",
                _ => "unknown",
            };
            s.extend_from_slice(format!("\"{name}@{:p}\"", other.to_pointer()).as_bytes());
        }
    }
}

fn log_value(sess: &Shared, prefix: &str, v: &Value) {
    let mut s = prefix.as_bytes().to_vec();
    cat_value(&mut s, v, 0);
    sess.lock().log_with_maxlen(s);
}

/// `redis.debug(...)`: `<debug> line N: v1, v2`.
pub(crate) fn debug_log(lua: &Lua, args: MultiValue) {
    let Some(sess) = session(lua) else { return };
    let mut s = format!("<debug> line {}: ", sess.lock().currentline).into_bytes();
    let n = args.len();
    for (i, v) in args.iter().enumerate() {
        cat_value(&mut s, v, 0);
        if i + 1 != n {
            s.extend_from_slice(b", ");
        }
    }
    sess.lock().log(s);
}

/// `redis.breakpoint()`: stops at the next line of a debugged script.
pub(crate) fn breakpoint(lua: &Lua) -> bool {
    match session(lua) {
        Some(s) => {
            s.lock().luabp = true;
            true
        }
        None => false,
    }
}

/// Installs the debugger's hook (lines, and every `COUNT_EVERY`
/// instructions for the timeout and the kill flag).
pub(crate) fn install_hook(lua: &Lua, busy: Arc<Busy>) -> mlua::Result<()> {
    lua.set_hook(
        HookTriggers::new()
            .every_line()
            .every_nth_instruction(COUNT_EVERY),
        move |lua, ar| {
            if busy.kill.load(Relaxed) {
                return Err(mlua::Error::RuntimeError(super::KILLED.into()));
            }
            line_hook(lua, ar, &busy)
        },
    )
}

/// `luaLdbLineHook`.
fn line_hook(lua: &Lua, ar: &Debug, busy: &Busy) -> mlua::Result<VmState> {
    let Some(sess) = session(lua) else {
        return Ok(VmState::Continue);
    };
    let line = ar.current_line().map_or(-1, |l| l as i64);
    let in_script = ar
        .source()
        .short_src
        .is_some_and(|s| s.contains("user_script"));
    let mut timeout = false;
    {
        // Only the script's own lines count: `redis.debug` and friends
        // are Lua code here, C in Redis (which has no line events).
        if !in_script {
            return Ok(VmState::Continue);
        }
        let mut s = sess.lock();
        s.currentline = line;
        let bp = s.bp.contains(&line) || s.luabp;
        if ar.event() == DebugEvent::Count && !s.step && !bp {
            if s.since.elapsed() >= Duration::from_millis(s.timeout_ms) {
                timeout = true;
                s.step = true;
            } else {
                return Ok(VmState::Continue);
            }
        }
        if !(s.step || bp) {
            return Ok(VmState::Continue);
        }
        let reason = if bp {
            if s.luabp {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        s.step = false;
        s.luabp = false;
        s.log(format!("* Stopped at {line}, stop reason = {reason}"));
        s.log_source_line(line);
        s.send_logs();
    }
    if !repl(lua, &sess, busy)? && timeout {
        return Err(mlua::Error::runtime(
            "timeout during Lua debugging with client closing connection",
        ));
    }
    sess.lock().since = Instant::now();
    Ok(VmState::Continue)
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

/// `ldbRepl`: serves debugger commands until one resumes the script.
/// `Ok(false)` when the client went away.
fn repl(lua: &Lua, sess: &Shared, busy: &Busy) -> mlua::Result<bool> {
    loop {
        let argv = loop {
            let parsed = sess.lock().parse_command();
            match parsed {
                Ok(Some(argv)) => break argv,
                Err(()) => return Err(mlua::Error::runtime("protocol error")),
                Ok(None) => {
                    if !read_more(sess, busy)? {
                        let mut s = sess.lock();
                        s.step = false;
                        s.bp.clear();
                        return Ok(false);
                    }
                }
            }
        };
        sess.lock().cbuf.clear();
        let name = argv[0].to_ascii_lowercase();
        let is = |a: &[u8], b: &[u8]| name == a || name == b;
        if is(b"h", b"help") {
            let mut s = sess.lock();
            for l in HELP {
                s.log(*l);
            }
        } else if is(b"s", b"step") || is(b"n", b"next") {
            sess.lock().step = true;
            return Ok(true);
        } else if is(b"c", b"continue") {
            return Ok(true);
        } else if is(b"t", b"trace") {
            trace(lua, sess);
        } else if is(b"m", b"maxlen") {
            sess.lock().maxlen_cmd(&argv);
        } else if is(b"b", b"break") {
            sess.lock().break_cmd(&argv);
        } else if is(b"e", b"eval") {
            eval(lua, sess, &argv);
        } else if is(b"a", b"abort") {
            return Err(mlua::Error::runtime("script aborted for user request"));
        } else if argv.len() > 1 && is(b"r", b"redis") {
            redis(lua, sess, &argv);
        } else if is(b"p", b"print") {
            if argv.len() == 2 {
                print(lua, sess, &argv[1]);
            } else {
                print_all(lua, sess);
            }
        } else if is(b"l", b"list") {
            let mut s = sess.lock();
            let mut around = s.currentline;
            let mut ctx = 5;
            if let Some(a) = argv.get(1) {
                let n = atoi(a);
                if n > 0 {
                    around = n;
                }
            }
            if let Some(c) = argv.get(2) {
                ctx = atoi(c);
            }
            s.list(around, ctx);
        } else if is(b"w", b"whole") {
            sess.lock().list(1, 1_000_000);
        } else {
            sess.lock()
                .log("<error> Unknown Redis Lua debugger command or wrong number of arguments.");
        }
        sess.lock().send_logs();
    }
}

/// `debug.getlocal(level, i)` at `level` frames above the hooked function.
fn local(getlocal: &Function, level: usize, i: i64) -> Option<(String, Value)> {
    // getlocal's own frame is level 0 of its view; the hooked function is 1.
    let (name, v): (Option<mlua::LuaString>, Value) = getlocal.call((level + 1, i)).ok()?;
    Some((name?.to_string_lossy(), v))
}

fn print(lua: &Lua, sess: &Shared, var: &[u8]) {
    let getlocal = sess.lock().getlocal.clone();
    let var = String::from_utf8_lossy(var);
    let mut level = 0;
    while lua.inspect_stack(level, |_| ()).is_some() {
        let mut i = 1;
        while let Some((name, v)) = local(&getlocal, level, i) {
            if name == var {
                log_value(sess, "<value> ", &v);
                return;
            }
            i += 1;
        }
        level += 1;
    }
    if var == "ARGV" || var == "KEYS" {
        let v: Value = lua.globals().raw_get(&*var).unwrap_or(Value::Nil);
        log_value(sess, "<value> ", &v);
    } else {
        sess.lock().log("No such variable.");
    }
}

fn print_all(lua: &Lua, sess: &Shared) {
    let getlocal = sess.lock().getlocal.clone();
    let mut vars = 0;
    if lua.inspect_stack(0, |_| ()).is_some() {
        let mut i = 1;
        while let Some((name, v)) = local(&getlocal, 0, i) {
            i += 1;
            if !name.contains("(*temporary)") {
                log_value(sess, &format!("<value> {name} = "), &v);
                vars += 1;
            }
        }
    }
    if vars == 0 {
        sess.lock()
            .log("No local variables in the current context.");
    }
}

fn trace(lua: &Lua, sess: &Shared) {
    let mut level = 0;
    while let Some((in_script, name, line)) = lua.inspect_stack(level, |ar| {
        (
            ar.source()
                .short_src
                .is_some_and(|s| s.contains("user_script")),
            ar.names().name.map(|n| n.into_owned()),
            ar.current_line().map_or(-1, |l| l as i64),
        )
    }) {
        if in_script {
            let mut s = sess.lock();
            s.log(format!(
                "{} {}:",
                if level == 0 { "In" } else { "From" },
                name.as_deref().unwrap_or("top level")
            ));
            s.log_source_line(line);
        }
        level += 1;
    }
    if level == 0 {
        sess.lock().log("<error> Can't retrieve Lua stack.");
    }
}

/// Runs `f(args)` as `lua_pcall` does: the error value, not mlua's.
fn pcall(lua: &Lua, f: Function, args: MultiValue) -> Result<Value, Value> {
    let pcall: Function = match lua.globals().raw_get("pcall") {
        Ok(p) => p,
        Err(_) => return Err(Value::Nil),
    };
    let mut all = MultiValue::new();
    all.push_back(Value::Function(f));
    all.extend(args);
    match pcall.call::<MultiValue>(all) {
        Ok(r) => {
            let mut it = r.into_iter();
            let ok = matches!(it.next(), Some(Value::Boolean(true)));
            let v = it.next().unwrap_or(Value::Nil);
            if ok { Ok(v) } else { Err(v) }
        }
        Err(e) => Err(Value::String(
            lua.create_string(e.to_string()).unwrap_or_else(|_| {
                // Out of memory building the text: report nothing.
                lua.create_string("").expect("empty string")
            }),
        )),
    }
}

fn error_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string_lossy(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => fmt_g(*n),
        _ => "(error object is not a string)".into(),
    }
}

/// `ldbEval`: the code as an expression, else as statements.
fn eval(lua: &Lua, sess: &Shared, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let env = sess.lock().env.clone();
    let load = |code: &[u8]| {
        lua.load(code)
            .set_name("@ldb_eval")
            .set_environment(env.clone())
            .into_function()
    };
    let f = match load(&[b"return ", &code[..]].concat()) {
        Ok(f) => f,
        Err(_) => match load(&code) {
            Ok(f) => f,
            Err(e) => {
                let msg = match e {
                    mlua::Error::SyntaxError { message, .. } => message,
                    e => e.to_string(),
                };
                sess.lock().log(format!("<error> {msg}"));
                return;
            }
        },
    };
    match pcall(lua, f, MultiValue::new()) {
        Ok(v) => log_value(sess, "<retval> ", &v),
        Err(e) => sess.lock().log(format!("<error> {}", error_text(&e))),
    }
}

/// `ldbRedis`: `redis.call` with logging forced on.
fn redis(lua: &Lua, sess: &Shared, argv: &[Vec<u8>]) {
    let env = sess.lock().env.clone();
    let call = env
        .get::<Table>("redis")
        .and_then(|r| r.get::<Function>("call"));
    let Ok(call) = call else { return };
    let mut args = MultiValue::new();
    for a in &argv[1..] {
        match lua.create_string(a) {
            Ok(s) => args.push_back(Value::String(s)),
            Err(_) => return,
        }
    }
    sess.lock().step = true;
    let _ = pcall(lua, call, args);
    sess.lock().step = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_ldb_repl_parse_command() {
        assert_eq!(parse_command(b""), Ok(None));
        assert_eq!(parse_command(b"no star"), Err(()));
        assert_eq!(parse_command(b"*1\r"), Ok(None));
        assert_eq!(parse_command(b"*0\r\n"), Err(()));
        assert_eq!(parse_command(b"*1025\r\n"), Err(()));
        assert_eq!(parse_command(b"*1\r\n"), Ok(None));
        assert_eq!(parse_command(b"*1\r\n$2\r\nab"), Ok(None));
        assert_eq!(parse_command(b"*1\r\n$0\r\n\r\n"), Err(()));
        assert_eq!(parse_command(b"*1\r\n$1025\r\n"), Err(()));
        assert_eq!(parse_command(b"*1\r\n:1\r\n"), Err(()));
        assert_eq!(parse_command(b"*1\r\n$2\r\nabXY"), Err(()));
        assert_eq!(
            parse_command(b"junk*2\r\n$1\r\nb\r\n$2\r\n10\r\n"),
            Ok(Some(vec![b"b".to_vec(), b"10".to_vec()]))
        );
    }

    #[test]
    fn atoi_and_g_as_c() {
        assert_eq!(atoi(b" 12x"), 12);
        assert_eq!(atoi(b"-3"), -3);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"99999999999999999999999"), i64::MAX);
        assert_eq!(fmt_g(1.0), "1");
        assert_eq!(fmt_g(0.1), "0.1");
        assert_eq!(fmt_g(1e20), "1e+20");
    }

    #[test]
    fn resp_as_human() {
        let mut o = Vec::new();
        let mut p = 0;
        resp_human(
            &mut o,
            b"*3\r\n:1\r\n$-1\r\n%1\r\n+a\r\n,1.5\r\n",
            &mut p,
            0,
        );
        assert_eq!(o, b"[1,NULL,{\"+a\" => (double) 1.5}]");
        let mut o = Vec::new();
        let mut p = 0;
        resp_human(&mut o, b"$99999999999\r\nab", &mut p, 0);
        assert_eq!(o, b"\"\"");
    }
}
