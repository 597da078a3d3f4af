//! Shared integration-test harness: spawns zwindow and a reference redis-server 7.x,
//! offers a raw RESP connection, and a differential `Pair` that sends the same bytes to
//! both servers and compares the replies (byte-exact, except that floats compare numerically).
#![allow(dead_code)]

pub mod cluster;
pub mod dataset;
pub mod repl;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use redis_protocol::resp2::decode as resp2_decode;
use redis_protocol::resp2::types::OwnedFrame as R2;
use redis_protocol::resp3::decode::streaming as resp3_streaming;
use redis_protocol::resp3::types::{DecodedFrame, OwnedFrame as R3, Resp3Frame};

/// How long a test waits for a server to start.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Default read timeout for replies.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long `expect_closed` waits for the peer to close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// How many stderr lines of a server are kept for diagnostics.
const LOG_KEEP: usize = 200;

// ---------------------------------------------------------------------------
// zwindow
// ---------------------------------------------------------------------------

/// A running zwindow binary on an ephemeral port; killed on drop.
pub struct ZwindowServer {
    child: Child,
    port: u16,
    log: Arc<Mutex<VecDeque<String>>>,
    /// Its working directory, private like a reference server's.
    dir: PrivateDir,
}

/// Which socket path the suite's zwindow servers must take:
/// `ZWINDOW_TEST_IO_URING=1` io_uring (a server that falls back to epoll
/// fails its test), `=0` epoll (`--io-uring no`), unset the server's
/// default (io_uring where the kernel allows it). `.ci/test` runs the
/// suite once each way.
pub fn io_uring_requested() -> Option<bool> {
    match std::env::var("ZWINDOW_TEST_IO_URING").as_deref() {
        Ok("1") => Some(true),
        Ok("0") => Some(false),
        _ => None,
    }
}

/// The command-line arguments that put a zwindow on the path
/// [`io_uring_requested`] asks for.
pub fn io_uring_args() -> &'static [&'static str] {
    match io_uring_requested() {
        Some(true) => &["--io-uring", "yes"],
        Some(false) => &["--io-uring", "no"],
        None => &[],
    }
}

/// Strip ANSI escape sequences (tracing may colour its output).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c2 in chars.by_ref() {
                    if c2.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Parse the port out of a log line containing `listening on HOST:PORT`.
pub fn parse_listening_line(line: &str) -> Option<u16> {
    let line = strip_ansi(line);
    let idx = line.find("listening on ")?;
    let rest = &line[idx + "listening on ".len()..];
    let addr: &str = rest
        .split(|c: char| c.is_whitespace() || c == ',')
        .next()
        .unwrap_or("");
    let port = addr.rsplit(':').next()?;
    let digits: String = port.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

impl ZwindowServer {
    /// Spawn `zwindow --bind 127.0.0.1 --port 0 <extra_args>` and wait for its listening line.
    pub fn start(extra_args: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", "0"])
            .args(extra_args);
        Self::start_command(cmd)
    }

    /// Spawn a prepared command that runs zwindow (its own arguments, a
    /// config file, a wrapper script…) with port 0 somewhere in its
    /// configuration, and wait for its listening line. Runs in a private
    /// directory unless the command names one.
    pub fn start_command(cmd: Command) -> Self {
        Self::try_start_command(cmd).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::start`], or why the server did not come up (its log).
    pub fn try_start(extra_args: &[&str]) -> Result<Self, String> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", "0"])
            .args(extra_args);
        Self::try_start_command(cmd)
    }

    /// [`Self::start_command`], or why the server did not come up.
    pub fn try_start_command(mut cmd: Command) -> Result<Self, String> {
        let extra_args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let exe = cmd.get_program().to_string_lossy().into_owned();
        // ZWINDOW_TEST_IO_URING picks the suite's socket path (the binary's
        // own command line only: a wrapper script or a redis-server does not
        // take the flag), unless the test chose one itself.
        let own_binary =
            exe == env!("CARGO_BIN_EXE_zwindow") && !extra_args.iter().any(|a| a == "--io-uring");
        let uring = own_binary && io_uring_requested() == Some(true);
        if own_binary {
            cmd.args(io_uring_args());
        }
        let dir = PrivateDir::new("zwindow");
        if cmd.get_current_dir().is_none() {
            cmd.current_dir(&dir.0);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .env("NO_COLOR", "1");
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "info");
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("failed to spawn {exe}: {e}"));
        let stderr = child.stderr.take().expect("piped stderr");
        let log: Arc<Mutex<VecDeque<String>>> = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = mpsc::channel::<u16>();
        // The dataset loads after the listening line (connections are
        // answered -LOADING meanwhile): tests start on a loaded server, or
        // on one that stopped (the stream's end).
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        {
            let log = Arc::clone(&log);
            thread::spawn(move || {
                // Keep draining stderr for the life of the process so the pipe never fills.
                let mut reader = BufReader::new(stderr);
                let mut sent = false;
                let mut line = Vec::new();
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                    let text = String::from_utf8_lossy(&line).trim_end().to_string();
                    if !sent && let Some(port) = parse_listening_line(&text) {
                        let _ = tx.send(port);
                        sent = true;
                    }
                    if text.contains("Ready to accept connections") {
                        let _ = ready_tx.send(());
                    }
                    let mut log = log.lock().unwrap();
                    log.push_back(text);
                    if log.len() > LOG_KEEP {
                        log.pop_front();
                    }
                }
            });
        }
        let port = match rx.recv_timeout(START_TIMEOUT) {
            Ok(port) => port,
            Err(e) => {
                let status = child.try_wait().ok().flatten();
                let _ = child.kill();
                let _ = child.wait();
                let log = log.lock().unwrap();
                return Err(format!(
                    "zwindow did not log `listening on 127.0.0.1:PORT` within {START_TIMEOUT:?} \
                     ({e}; exit status: {status:?}); args {extra_args:?}; stderr:\n{}",
                    log.iter().cloned().collect::<Vec<_>>().join("\n")
                ));
            }
        };
        let _ = ready_rx.recv_timeout(START_TIMEOUT);
        if uring {
            let log = log.lock().unwrap();
            assert!(
                log.iter()
                    .any(|l| l.contains("Serving connections with io_uring")
                        || l.contains("io-uring needs threads 1")),
                "ZWINDOW_TEST_IO_URING is set but zwindow did not start io_uring:\n{}",
                log.iter().cloned().collect::<Vec<_>>().join("\n")
            );
        }
        Ok(ZwindowServer {
            child,
            port,
            log,
            dir,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A new raw connection to this server.
    pub fn conn(&self) -> RawConn {
        RawConn::connect(self.addr(), "zwindow")
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Send SIGTERM and wait up to `timeout` for the process to exit; its exit status.
    pub fn terminate(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        self.exit_status(timeout)
    }

    /// SIGKILL, and reap the process (a crash: nothing flushed).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits up to `timeout` for the process to exit by itself; its status.
    pub fn exit_status(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st);
            }
            thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last stderr lines of the server.
    pub fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap();
        log.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

impl ZwindowServer {
    /// The server's private working directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }
}

impl Drop for ZwindowServer {
    fn drop(&mut self) {
        if thread::panicking() {
            eprintln!(
                "--- zwindow (port {}) stderr tail ---\n{}",
                self.port,
                self.log_tail()
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// redis-server (the reference)
// ---------------------------------------------------------------------------

/// A running reference redis-server; killed on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    /// Its own empty working directory: a `dump.rdb` (or AOF) that anything
    /// else left in the shared temp directory must never load into it.
    dir: PrivateDir,
}

/// A fresh empty directory under the temp dir, removed on drop.
pub struct PrivateDir(pub std::path::PathBuf);

impl PrivateDir {
    pub fn new(what: &str) -> PrivateDir {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("zwindow-test-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a private test directory");
        PrivateDir(dir)
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn find_redis_server() -> String {
    if let Some(p) = std::env::var_os("REDIS_SERVER") {
        return p.to_string_lossy().into_owned();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let cand = dir.join("redis-server");
        if cand.is_file() {
            return cand.to_string_lossy().into_owned();
        }
    }
    panic!(
        "differential tests need redis-server 7.x on PATH; run `bash .ci/test` which installs it"
    );
}

/// The Redis 8.0 server that `.ci/test` builds from Debian trixie's source
/// package into `.cache/redis-8.0*/` (the oracle for commands Redis 7.0
/// lacks, such as hash field TTLs), named by `ZWINDOW_REDIS8_SERVER`.
/// Panics if it is missing: those tests must not pass by skipping.
pub fn redis8_server() -> String {
    match std::env::var_os("ZWINDOW_REDIS8_SERVER") {
        Some(p) if std::path::Path::new(&p).is_file() => p.to_string_lossy().into_owned(),
        other => panic!(
            "these tests compare with Redis 8.0; ZWINDOW_REDIS8_SERVER is {other:?}: \
             run `bash .ci/test` (it builds .cache/redis-8.0*/src/redis-server once and exports it)"
        ),
    }
}

/// The Valkey 9 server that `.ci/test` builds from Debian's newest valkey
/// 9.x source package into `.cache/valkey-9*/` (the second oracle, for the
/// commands Valkey 9 shares with Redis 8.x: hash field TTLs, SET IFEQ,
/// MSETEX), named by `ZWINDOW_VALKEY9_SERVER`. Panics if it is missing:
/// those tests must not pass by skipping.
pub fn valkey9_server() -> String {
    match std::env::var_os("ZWINDOW_VALKEY9_SERVER") {
        Some(p) if std::path::Path::new(&p).is_file() => p.to_string_lossy().into_owned(),
        other => panic!(
            "these tests compare with Valkey 9; ZWINDOW_VALKEY9_SERVER is {other:?}: \
             run `bash .ci/test` (it builds .cache/valkey-9*/src/valkey-server once and exports it)"
        ),
    }
}

/// A currently free TCP port on 127.0.0.1 (racy by nature; callers retry).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

impl RedisServer {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Start redis-server with extra command-line arguments (e.g. `--requirepass x`).
    pub fn start_with(extra_args: &[&str]) -> Self {
        Self::start_binary(&find_redis_server(), extra_args)
    }

    /// Start a given redis-server binary (e.g. [`redis8_server`]'s).
    pub fn start_binary(exe: &str, extra_args: &[&str]) -> Self {
        Self::try_start_binary(exe, extra_args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::start_with`], or why the server did not come up.
    pub fn try_start_with(extra_args: &[&str]) -> Result<Self, String> {
        Self::try_start_binary(&find_redis_server(), extra_args)
    }

    pub fn try_start_binary(exe: &str, extra_args: &[&str]) -> Result<Self, String> {
        let dir = PrivateDir::new("redis");
        let (child, port) = spawn_redis(exe, None, extra_args, &dir.0)?;
        Ok(RedisServer { child, port, dir })
    }

    /// Start redis-server with a config file (its first argument), then
    /// the harness's and the extra command-line directives.
    pub fn start_config(file: &std::path::Path, extra_args: &[&str]) -> Self {
        Self::start_config_binary(&find_redis_server(), file, extra_args)
    }

    /// [`Self::start_config`] with a given redis-server binary.
    pub fn start_config_binary(exe: &str, file: &std::path::Path, extra_args: &[&str]) -> Self {
        let dir = PrivateDir::new("redis");
        let (child, port) =
            spawn_redis(exe, Some(file), extra_args, &dir.0).unwrap_or_else(|e| panic!("{e}"));
        RedisServer { child, port, dir }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn conn(&self) -> RawConn {
        RawConn::connect(self.addr(), "redis")
    }

    /// The server's private working directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir.0
    }

    /// SIGKILL, and reap the process (a crash: nothing flushed).
    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawn redis-server on a free port and wait until it answers PING.
fn spawn_redis(
    exe: &str,
    file: Option<&std::path::Path>,
    extra_args: &[&str],
    dir: &std::path::Path,
) -> Result<(Child, u16), String> {
    let mut last_err = String::new();
    for _attempt in 0..5 {
        let port = free_port();
        let mut child = Command::new(exe)
            .args(file)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir)
            .args(extra_args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("failed to spawn {exe}: {e}"));
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                last_err = format!("redis-server exited early with {status} (port {port})");
                break;
            }
            if ping_ok(port) {
                return Ok((child, port));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                last_err = format!("redis-server did not answer PING on port {port}");
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
    Err(format!("could not start redis-server: {last_err}"))
}

/// One PING attempt; `true` on `+PONG` or `-NOAUTH` (the server is up either way).
/// Sends `sig` (`kill`'s form: `-TERM`, `-STOP`…) to process `pid`.
pub fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

pub fn ping_ok(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) if n > 0 => buf[..n].starts_with(b"+PONG") || buf[..n].starts_with(b"-NOAUTH"),
        _ => false,
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------
// RESP framing and comparison
// ---------------------------------------------------------------------------

/// Length of the first complete reply in `buf`, `None` if more bytes are needed.
///
/// RESP2 is tried first (it is the only way to read `$-1` / `*-1` nulls, which the RESP3
/// decoder would take as streamed types); anything RESP2 rejects goes to the RESP3
/// streaming decoder, which also handles pushes, attributes and streamed aggregates.
pub fn frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    match decoder_frame_len(buf) {
        Ok(r) => Ok(r),
        // redis-protocol insists on UTF-8 in simple strings and errors, but Redis echoes
        // arbitrary bytes there (`-ERR unknown command '\xff'`): frame those by hand.
        Err(e) => scan_frame(buf, 0).map_err(|e2| format!("{e}; {e2}")),
    }
}

/// Minimal hand-written RESP2/RESP3 framer: the end offset of the frame starting at `at`,
/// `None` if incomplete. Only used when the decoder rejects non-UTF-8 simple strings.
fn scan_frame(buf: &[u8], at: usize) -> Result<Option<usize>, String> {
    let Some(&kind) = buf.get(at) else {
        return Ok(None);
    };
    let Some(nl) = buf[at..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &buf[at + 1..at + nl];
    let mut off = at + nl + 2;
    let num = || -> Result<i64, String> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("bad length line {}", escape(line)))
    };
    match kind {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Ok(Some(off)),
        b'$' | b'!' | b'=' => {
            let n = num()?;
            if n < 0 {
                return Ok(Some(off));
            }
            let end = off + n as usize + 2;
            Ok((buf.len() >= end).then_some(end))
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = num()?;
            let mut count = n.max(0) as usize;
            if matches!(kind, b'%' | b'|') {
                count *= 2;
            }
            if kind == b'|' {
                count += 1; // the attributed frame follows the attribute map
            }
            for _ in 0..count {
                match scan_frame(buf, off)? {
                    Some(end) => off = end,
                    None => return Ok(None),
                }
            }
            Ok(Some(off))
        }
        other => Err(format!("unknown RESP type byte {}", escape(&[other]))),
    }
}

fn decoder_frame_len(buf: &[u8]) -> Result<Option<usize>, String> {
    if buf.is_empty() {
        return Ok(None);
    }
    let r2 = resp2_decode::decode(buf);
    if let Ok(Some((_, n))) = r2 {
        return Ok(Some(n));
    }
    match resp3_streaming::decode(buf) {
        Ok(None) => Ok(None),
        Ok(Some((DecodedFrame::Complete(_), n))) => Ok(Some(n)),
        Ok(Some((DecodedFrame::Streaming(_), n))) => {
            let mut off = n;
            let mut depth = 1usize;
            while depth > 0 {
                match resp3_streaming::decode(&buf[off..]) {
                    Ok(None) => return Ok(None),
                    Ok(Some((DecodedFrame::Streaming(_), n))) => {
                        depth += 1;
                        off += n;
                    }
                    Ok(Some((DecodedFrame::Complete(f), n))) => {
                        if f.is_end_stream_frame() {
                            depth -= 1;
                        }
                        off += n;
                    }
                    Err(e) => return Err(format!("bad streamed RESP3 frame: {e:?}")),
                }
            }
            Ok(Some(off))
        }
        Err(e3) => match r2 {
            // RESP2 says "incomplete": wait for more bytes.
            Ok(None) => Ok(None),
            _ => Err(format!("neither RESP2 nor RESP3: {e3:?}")),
        },
    }
}

/// Render bytes with control characters visible (`\r\n` stays visible as text).
pub fn escape(bytes: &[u8]) -> String {
    const MAX: usize = 4000;
    let mut s = String::new();
    for &b in bytes.iter().take(MAX) {
        match b {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    if bytes.len() > MAX {
        s.push_str(&format!("... ({} bytes total)", bytes.len()));
    }
    format!("\"{s}\"")
}

/// Render a command's arguments for messages.
pub fn show_args(args: &[&[u8]]) -> String {
    args.iter().map(|a| escape(a)).collect::<Vec<_>>().join(" ")
}

/// One token of a reply: type byte, header/payload bytes, and whether it is a payload.
#[derive(Debug)]
struct Tok<'a> {
    kind: u8,
    data: &'a [u8],
}

/// Flatten a complete (trusted) reply into an ordered token list. Length-prefixed payloads
/// become one token with the payload only, so a float printed differently but with a
/// different length still lines up.
fn tokenize(mut b: &[u8]) -> Result<Vec<Tok<'_>>, String> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let kind = b[0];
        let end = b
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| "unterminated line".to_string())?;
        let line = &b[1..end];
        b = &b[end + 2..];
        match kind {
            b'$' | b'=' | b'!' | b';' if line != b"?" && !line.starts_with(b"-") => {
                let len: usize = std::str::from_utf8(line)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| format!("bad length {}", escape(line)))?;
                if b.len() < len + 2 {
                    return Err("truncated payload".into());
                }
                out.push(Tok {
                    kind,
                    data: &b[..len],
                });
                b = &b[len + 2..];
            }
            _ => out.push(Tok { kind, data: line }),
        }
    }
    Ok(out)
}

fn as_f64(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    if s.is_empty() || s.trim() != s {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Whether two complete replies are equivalent: byte-equal, or token-equal where bulk
/// strings / RESP3 doubles that both parse as f64 compare numerically.
pub fn replies_equivalent(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    let (Ok(ta), Ok(tb)) = (tokenize(a), tokenize(b)) else {
        return false;
    };
    ta.len() == tb.len()
        && ta.iter().zip(tb.iter()).all(|(x, y)| {
            if x.kind != y.kind {
                return false;
            }
            if x.data == y.data {
                return true;
            }
            if (x.kind == b'$' || x.kind == b',')
                && let (Some(fx), Some(fy)) = (as_f64(x.data), as_f64(y.data))
            {
                return fx == fy || (fx.is_nan() && fy.is_nan());
            }
            false
        })
}

/// Split an aggregate reply (`*`, `~`, `>`) into its raw elements.
pub fn split_aggregate(reply: &[u8]) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    if !matches!(reply.first(), Some(b'*' | b'~' | b'>')) {
        return None;
    }
    let end = reply.windows(2).position(|w| w == b"\r\n")?;
    let header = reply[..end + 2].to_vec();
    let n: i64 = std::str::from_utf8(&reply[1..end]).ok()?.parse().ok()?;
    let mut off = end + 2;
    let mut elems = Vec::new();
    for _ in 0..n.max(0) {
        let len = frame_len(&reply[off..]).ok()??;
        elems.push(reply[off..off + len].to_vec());
        off += len;
    }
    Some((header, elems))
}

// ---------------------------------------------------------------------------
// A parsed reply, for checks that can't be byte comparisons
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
    /// RESP3 map (the decoder does not keep the wire order).
    Map(Vec<(Reply, Reply)>),
    Set(Vec<Reply>),
    Double(f64),
    Bool(bool),
    Push(Vec<Reply>),
    BigNumber(Vec<u8>),
    Verbatim(Vec<u8>),
}

fn from_r2(f: R2) -> Reply {
    match f {
        R2::SimpleString(s) => Reply::Simple(String::from_utf8_lossy(&s).into_owned()),
        R2::Error(e) => Reply::Error(e),
        R2::Integer(i) => Reply::Int(i),
        R2::BulkString(b) => Reply::Bulk(b),
        R2::Array(a) => Reply::Array(a.into_iter().map(from_r2).collect()),
        R2::Null => Reply::Nil,
    }
}

fn from_r3(f: R3) -> Reply {
    match f {
        R3::BlobString { data, .. } => Reply::Bulk(data),
        R3::BlobError { data, .. } => Reply::Error(String::from_utf8_lossy(&data).into_owned()),
        R3::SimpleString { data, .. } => Reply::Simple(String::from_utf8_lossy(&data).into_owned()),
        R3::SimpleError { data, .. } => Reply::Error(data),
        R3::Boolean { data, .. } => Reply::Bool(data),
        R3::Null => Reply::Nil,
        R3::Number { data, .. } => Reply::Int(data),
        R3::Double { data, .. } => Reply::Double(data),
        R3::BigNumber { data, .. } => Reply::BigNumber(data),
        R3::VerbatimString { data, .. } => Reply::Verbatim(data),
        R3::Array { data, .. } => Reply::Array(data.into_iter().map(from_r3).collect()),
        R3::Map { data, .. } => Reply::Map(
            data.into_iter()
                .map(|(k, v)| (from_r3(k), from_r3(v)))
                .collect(),
        ),
        R3::Set { data, .. } => Reply::Set(data.into_iter().map(from_r3).collect()),
        R3::Push { data, .. } => Reply::Push(data.into_iter().map(from_r3).collect()),
        R3::Hello { .. } => panic!("server sent a HELLO frame"),
        R3::ChunkedString(d) => Reply::Bulk(d),
    }
}

/// Parse one complete reply (RESP2 or RESP3).
pub fn parse_reply(bytes: &[u8]) -> Reply {
    if let Ok(Some((f, _))) = resp2_decode::decode(bytes) {
        return from_r2(f);
    }
    match redis_protocol::resp3::decode::complete::decode(bytes) {
        Ok(Some((f, _))) => from_r3(f),
        // Non-UTF-8 simple strings/errors (see `frame_len`).
        _ if bytes.first() == Some(&b'-') => {
            Reply::Error(String::from_utf8_lossy(&bytes[1..bytes.len() - 2]).into_owned())
        }
        _ if bytes.first() == Some(&b'+') => {
            Reply::Simple(String::from_utf8_lossy(&bytes[1..bytes.len() - 2]).into_owned())
        }
        other => panic!("cannot parse reply {}: {other:?}", escape(bytes)),
    }
}

impl Reply {
    pub fn int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("expected integer reply, got {other:?}"),
        }
    }
    pub fn bulk(&self) -> &[u8] {
        match self {
            Reply::Bulk(b) => b,
            other => panic!("expected bulk reply, got {other:?}"),
        }
    }
    pub fn array(&self) -> &[Reply] {
        match self {
            Reply::Array(a) | Reply::Set(a) | Reply::Push(a) => a,
            other => panic!("expected array reply, got {other:?}"),
        }
    }
    /// Look up a field of a RESP3 map, or of a RESP2 flat key/value array.
    pub fn field(&self, key: &str) -> Option<&Reply> {
        let k_matches = |k: &Reply| match k {
            Reply::Bulk(b) => b == key.as_bytes(),
            Reply::Simple(s) => s == key,
            _ => false,
        };
        match self {
            Reply::Map(pairs) => pairs.iter().find(|(k, _)| k_matches(k)).map(|(_, v)| v),
            Reply::Array(a) => a
                .chunks(2)
                .find(|c| c.len() == 2 && k_matches(&c[0]))
                .map(|c| &c[1]),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// RawConn
// ---------------------------------------------------------------------------

/// What a bounded read found.
#[derive(Debug, PartialEq)]
pub enum ReadOutcome {
    Reply(Vec<u8>),
    Closed,
    Timeout,
}

/// A blocking raw RESP connection.
pub struct RawConn {
    stream: TcpStream,
    buf: Vec<u8>,
    pub name: String,
    timeout: Duration,
}

/// Encode a command as a RESP multibulk.
pub fn encode_cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl RawConn {
    pub fn connect(addr: SocketAddr, name: &str) -> Self {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect to {name} at {addr}: {e}"));
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        stream
            .set_write_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        RawConn {
            stream,
            buf: Vec::new(),
            name: name.to_string(),
            timeout: READ_TIMEOUT,
        }
    }

    pub fn set_timeout(&mut self, t: Duration) {
        self.timeout = t;
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Send raw bytes (panics on a write error).
    pub fn send(&mut self, bytes: &[u8]) {
        if let Err(e) = self.stream.write_all(bytes) {
            panic!("{}: write of {} bytes failed: {e}", self.name, bytes.len());
        }
    }

    /// Send raw bytes, reporting errors (the server may have closed).
    pub fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Read one complete reply within `timeout`, or tell why not.
    pub fn try_read_reply(&mut self, timeout: Duration) -> ReadOutcome {
        let deadline = Instant::now() + timeout;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match frame_len(&self.buf) {
                Ok(Some(n)) => {
                    let rest = self.buf.split_off(n);
                    let reply = std::mem::replace(&mut self.buf, rest);
                    return ReadOutcome::Reply(reply);
                }
                Ok(None) => {}
                Err(e) => panic!(
                    "{}: undecodable reply bytes ({e}): {}",
                    self.name,
                    escape(&self.buf)
                ),
            }
            let now = Instant::now();
            if now >= deadline {
                return ReadOutcome::Timeout;
            }
            self.stream
                .set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))
                .unwrap();
            match self.stream.read(&mut chunk) {
                Ok(0) => return ReadOutcome::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return ReadOutcome::Timeout;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return ReadOutcome::Closed,
            }
        }
    }

    /// Read exactly one complete reply (RESP2 or RESP3), panicking on close or timeout.
    pub fn read_reply(&mut self) -> Vec<u8> {
        match self.try_read_reply(self.timeout) {
            ReadOutcome::Reply(r) => r,
            ReadOutcome::Closed => panic!(
                "{}: connection closed while waiting for a reply (partial: {})",
                self.name,
                escape(&self.buf)
            ),
            ReadOutcome::Timeout => panic!(
                "{}: no complete reply within {:?} (partial: {})",
                self.name,
                self.timeout,
                escape(&self.buf)
            ),
        }
    }

    /// Encode `args` as a multibulk, send it, read one reply.
    pub fn cmd(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(&encode_cmd(args));
        self.read_reply()
    }

    /// `cmd` with whitespace-separated string arguments.
    pub fn cmd_str(&mut self, line: &str) -> Vec<u8> {
        let args = split_args(line);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        self.cmd(&refs)
    }

    /// `cmd` and parse the reply.
    pub fn query(&mut self, args: &[&[u8]]) -> Reply {
        parse_reply(&self.cmd(args))
    }

    /// `CONFIG GET pattern` as (name, value) pairs, sorted: comparable
    /// whatever order the server lists its settings in.
    pub fn config_pairs(&mut self, pattern: &str) -> Vec<(String, String)> {
        let reply = self.query(&[b"CONFIG", b"GET", pattern.as_bytes()]);
        let items: Vec<String> = reply
            .array()
            .iter()
            .map(|x| String::from_utf8_lossy(x.bulk()).into_owned())
            .collect();
        let mut pairs: Vec<(String, String)> = items
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        pairs.sort();
        pairs
    }

    /// Assert the server closes the connection (EOF or reset) without sending anything more.
    pub fn expect_closed(&mut self) {
        assert!(
            self.buf.is_empty(),
            "{}: expected the connection to be closed, but unread bytes are buffered: {}",
            self.name,
            escape(&self.buf)
        );
        match self.try_read_reply(CLOSE_TIMEOUT) {
            ReadOutcome::Closed => {}
            ReadOutcome::Timeout => panic!(
                "{}: expected the server to close the connection within {CLOSE_TIMEOUT:?}, \
                 but it stayed open (partial: {})",
                self.name,
                escape(&self.buf)
            ),
            ReadOutcome::Reply(r) => panic!(
                "{}: expected the connection to be closed, got another reply {}",
                self.name,
                escape(&r)
            ),
        }
    }

    /// Whether the server has closed the connection (waiting at most `wait`).
    pub fn is_closed(&mut self, wait: Duration) -> bool {
        matches!(self.try_read_reply(wait), ReadOutcome::Closed)
    }
}

// ---------------------------------------------------------------------------
// Script parsing
// ---------------------------------------------------------------------------

/// Split a command line into arguments: space-separated; `"..."` takes escapes
/// (`\"`, `\\`, `\r`, `\n`, `\t`, `\xHH`) and may contain spaces; `'...'` is literal.
pub fn split_args(line: &str) -> Vec<Vec<u8>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b' ' {
            i += 1;
            continue;
        }
        let mut arg = Vec::new();
        if b[i] == b'"' {
            i += 1;
            loop {
                assert!(i < b.len(), "unterminated \" in script line {line:?}");
                match b[i] {
                    b'"' => {
                        i += 1;
                        break;
                    }
                    b'\\' => {
                        let c = b[i + 1];
                        i += 2;
                        match c {
                            b'r' => arg.push(b'\r'),
                            b'n' => arg.push(b'\n'),
                            b't' => arg.push(b'\t'),
                            b'0' => arg.push(0),
                            b'x' => {
                                let hex = std::str::from_utf8(&b[i..i + 2]).unwrap();
                                arg.push(u8::from_str_radix(hex, 16).unwrap());
                                i += 2;
                            }
                            other => arg.push(other),
                        }
                    }
                    c => {
                        arg.push(c);
                        i += 1;
                    }
                }
            }
        } else if b[i] == b'\'' {
            i += 1;
            let start = i;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            assert!(i < b.len(), "unterminated ' in script line {line:?}");
            arg.extend_from_slice(&b[start..i]);
            i += 1;
        } else {
            while i < b.len() && b[i] != b' ' {
                arg.push(b[i]);
                i += 1;
            }
        }
        out.push(arg);
    }
    out
}

// ---------------------------------------------------------------------------
// Differential pair
// ---------------------------------------------------------------------------

/// A zwindow server and a reference redis-server started with equivalent options.
pub struct Servers {
    pub z: ZwindowServer,
    pub r: RedisServer,
}

impl Servers {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Start both servers with the same extra arguments (e.g. `--requirepass`).
    /// The oracle is Redis 8.0 ([`redis8_server`]): zwindow answers as it.
    pub fn start_with(args: &[&str]) -> Self {
        Self::start_redis8(args)
    }

    /// zwindow and redis-server 7.0 (on PATH), for what must still
    /// interoperate with 7.0 (files, the replication stream).
    pub fn start_redis7(args: &[&str]) -> Self {
        Servers {
            z: ZwindowServer::start(args),
            r: RedisServer::start_with(args),
        }
    }

    /// zwindow and Redis 8.0 ([`redis8_server`]), with the same arguments.
    pub fn start_redis8(args: &[&str]) -> Self {
        Servers {
            z: ZwindowServer::start(args),
            r: RedisServer::start_binary(&redis8_server(), args),
        }
    }

    /// zwindow and Valkey 9 ([`valkey9_server`]), with the same arguments.
    pub fn start_valkey9(args: &[&str]) -> Self {
        Servers {
            z: ZwindowServer::start(args),
            r: RedisServer::start_binary(&valkey9_server(), args),
        }
    }

    /// A fresh pair of connections, one to each server.
    pub fn pair(&self) -> Pair {
        Pair {
            z: self.z.conn(),
            r: self.r.conn(),
        }
    }

    /// A fresh pair that has switched both connections to RESP `proto`
    /// ("2" or "3") with HELLO.
    pub fn pair_resp(&self, proto: &str) -> Pair {
        let mut p = self.pair();
        p.both_str(&format!("HELLO {proto}"));
        p
    }
}

/// One connection to zwindow (`z`) and one to redis-server (`r`), driven in lockstep.
pub struct Pair {
    pub z: RawConn,
    pub r: RawConn,
}

/// Start both servers and return them with a pair of connections.
pub fn start_pair() -> (Servers, Pair) {
    let s = Servers::start();
    let p = s.pair();
    (s, p)
}

fn mismatch(what: &str, input: &str, r: &[u8], z: &[u8]) -> ! {
    panic!(
        "zwindow differs from redis-server\n  {what}: {input}\n  redis:   {}\n  zwindow: {}",
        escape(r),
        escape(z)
    );
}

impl Pair {
    /// Send `args` to both servers; assert equivalent replies; return redis's reply.
    pub fn check(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let bytes = encode_cmd(args);
        self.r.send(&bytes);
        let r = self.r.read_reply();
        self.z.send(&bytes);
        let z = self.z.read_reply();
        if !replies_equivalent(&r, &z) {
            mismatch("command", &show_args(args), &r, &z);
        }
        r
    }

    /// `check` with a script-syntax line (see [`split_args`]).
    pub fn check_str(&mut self, line: &str) -> Vec<u8> {
        let args = split_args(line);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        self.check(&refs)
    }

    /// Run every line of a script through `check_str`.
    pub fn script(&mut self, lines: &[&str]) {
        for line in lines {
            self.check_str(line);
        }
    }

    /// Send to both and return both raw replies `(redis, zwindow)` without comparing.
    pub fn both(&mut self, args: &[&[u8]]) -> (Vec<u8>, Vec<u8>) {
        let bytes = encode_cmd(args);
        self.r.send(&bytes);
        let r = self.r.read_reply();
        self.z.send(&bytes);
        let z = self.z.read_reply();
        (r, z)
    }

    pub fn both_str(&mut self, line: &str) -> (Vec<u8>, Vec<u8>) {
        let args = split_args(line);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        self.both(&refs)
    }

    /// Like `check`, but an aggregate reply's elements are compared as a multiset
    /// (for KEYS, SMEMBERS and other unordered replies).
    pub fn check_unordered_str(&mut self, line: &str) -> Vec<u8> {
        let (r, z) = self.both_str(line);
        if replies_equivalent(&r, &z) {
            return r;
        }
        match (split_aggregate(&r), split_aggregate(&z)) {
            (Some((hr, mut er)), Some((hz, mut ez))) if hr == hz => {
                er.sort();
                ez.sort();
                if er
                    .iter()
                    .zip(ez.iter())
                    .all(|(a, b)| replies_equivalent(a, b))
                {
                    return r;
                }
            }
            _ => {}
        }
        mismatch("command (unordered)", line, &r, &z)
    }

    /// Integer replies that may differ by `tol` (TTLs measured at slightly different times).
    pub fn check_int_near(&mut self, line: &str, tol: i64) -> i64 {
        let (r, z) = self.both_str(line);
        let (Reply::Int(ri), Reply::Int(zi)) = (parse_reply(&r), parse_reply(&z)) else {
            if replies_equivalent(&r, &z) {
                return i64::MIN;
            }
            mismatch("command (integer ± tolerance)", line, &r, &z)
        };
        if (ri - zi).abs() > tol {
            mismatch(&format!("command (integer ±{tol})"), line, &r, &z);
        }
        ri
    }

    /// Send raw bytes to both servers, read one reply each, assert equivalent.
    pub fn check_raw(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.r.send(bytes);
        let r = self.r.read_reply();
        self.z.send(bytes);
        let z = self.z.read_reply();
        if !replies_equivalent(&r, &z) {
            mismatch("raw input", &escape(bytes), &r, &z);
        }
        r
    }

    /// Raw input after which both servers must have replied and closed the connection.
    pub fn check_raw_closes(&mut self, bytes: &[u8]) -> Vec<u8> {
        let r = self.check_raw(bytes);
        self.r.expect_closed();
        self.z.expect_closed();
        r
    }

    /// Send complete raw input followed by a sentinel command; compare every reply up to
    /// the sentinel's (or up to the close), and the open/closed state afterwards.
    /// Returns redis's replies (without the sentinel's) and whether redis closed.
    pub fn check_raw_session(&mut self, bytes: &[u8]) -> (Vec<Vec<u8>>, bool) {
        const SENTINEL: &[u8] = b"*2\r\n$4\r\nECHO\r\n$12\r\n__sentinel__\r\n";
        const SENTINEL_REPLY: &[u8] = b"$12\r\n__sentinel__\r\n";
        let mut input = bytes.to_vec();
        input.extend_from_slice(SENTINEL);
        let collect = |c: &mut RawConn| -> (Vec<Vec<u8>>, bool) {
            // A server that already closed may reset the write; that's a close too.
            if c.try_send(&input).is_err() {
                return (Vec::new(), true);
            }
            let mut replies = Vec::new();
            loop {
                match c.try_read_reply(READ_TIMEOUT) {
                    ReadOutcome::Reply(r) if r == SENTINEL_REPLY => return (replies, false),
                    ReadOutcome::Reply(r) => replies.push(r),
                    ReadOutcome::Closed => return (replies, true),
                    ReadOutcome::Timeout => panic!(
                        "{}: neither the sentinel reply nor a close within {READ_TIMEOUT:?} \
                         after raw input {} (replies so far: {:?})",
                        c.name,
                        escape(bytes),
                        replies.iter().map(|r| escape(r)).collect::<Vec<_>>()
                    ),
                }
            }
        };
        let (rr, rclosed) = collect(&mut self.r);
        let (zr, zclosed) = collect(&mut self.z);
        let same = rr.len() == zr.len()
            && rr
                .iter()
                .zip(zr.iter())
                .all(|(a, b)| replies_equivalent(a, b));
        if !same || rclosed != zclosed {
            panic!(
                "zwindow differs from redis-server\n  raw input: {}\n  redis:   {:?} {}\n  zwindow: {:?} {}",
                escape(bytes),
                rr.iter().map(|r| escape(r)).collect::<Vec<_>>(),
                if rclosed {
                    "then closed"
                } else {
                    "and stayed open"
                },
                zr.iter().map(|r| escape(r)).collect::<Vec<_>>(),
                if zclosed {
                    "then closed"
                } else {
                    "and stayed open"
                },
            );
        }
        (rr, rclosed)
    }

    /// Raw input that leaves both servers waiting for more bytes: neither replies nor
    /// closes within a short grace period.
    pub fn check_raw_pending(&mut self, bytes: &[u8]) {
        const GRACE: Duration = Duration::from_millis(300);
        self.r.send(bytes);
        self.z.send(bytes);
        let r = self.r.try_read_reply(GRACE);
        let z = self.z.try_read_reply(GRACE);
        let show = |o: &ReadOutcome| match o {
            ReadOutcome::Reply(b) => format!("reply {}", escape(b)),
            ReadOutcome::Closed => "closed".to_string(),
            ReadOutcome::Timeout => "no reply, still open".to_string(),
        };
        assert_eq!(
            r,
            ReadOutcome::Timeout,
            "reference redis did not wait for more input after {}",
            escape(bytes)
        );
        if z != ReadOutcome::Timeout {
            panic!(
                "zwindow differs from redis-server\n  raw input: {}\n  redis:   {}\n  zwindow: {}",
                escape(bytes),
                show(&r),
                show(&z)
            );
        }
    }
}

/// Runs `f` on a fresh pair in RESP2, then again after HELLO 3 on both.
pub fn in_both_protocols(f: impl Fn(&mut Pair)) {
    let (_s, mut p) = start_pair();
    f(&mut p);
    p.check_str("FLUSHALL");
    // The HELLO replies differ in the client id only.
    p.both_str("HELLO 3");
    f(&mut p);
}

/// A multi-connection scenario: given a way to open connections to one
/// server, returns the replies it observed, in order.
pub type Scenario = fn(&dyn Fn() -> RawConn) -> Vec<Vec<u8>>;

/// Runs `scenario` on redis-server and on zwindow; every reply must match.
pub fn differential(scenario: Scenario) {
    let s = Servers::start();
    let r = scenario(&|| s.r.conn());
    let z = scenario(&|| s.z.conn());
    assert_eq!(r.len(), z.len(), "reply counts differ");
    for (i, (a, b)) in r.iter().zip(&z).enumerate() {
        assert!(
            replies_equivalent(a, b),
            "reply {i} differs\n  redis:   {}\n  zwindow: {}",
            escape(a),
            escape(b)
        );
    }
}

// ---------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------

/// The test certificates Redis's own `utils/gen-test-certs.sh` makes
/// (`ca`, `server`, `client`, `redis` certificates and keys, `redis.dh`),
/// which `.ci/test` generates into the TCL suite's `tests/tls/`
/// (`ZWINDOW_REDIS_TESTS`).
pub fn tls_certs() -> std::path::PathBuf {
    let suite = std::env::var_os("ZWINDOW_REDIS_TESTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-7.0.15")
        });
    let dir = suite.join("tests/tls");
    assert!(
        dir.join("ca.crt").is_file() && dir.join("redis.dh").is_file(),
        "no test certificates in {} (run `bash .ci/test`, which makes them with the suite's \
         utils/gen-test-certs.sh)",
        dir.display()
    );
    dir
}

/// A redis-server node in cluster mode (its nodes.conf in its private
/// directory), its bus on a free port of its own: the default, port +
/// 10000, overflows for the high ephemeral ports tests may get. Returns the
/// server and its bus port.
pub fn redis_cluster_node(node_timeout_ms: u64, extra: &[&str]) -> (RedisServer, u16) {
    redis_cluster_node_of(&find_redis_server(), node_timeout_ms, extra)
}

/// [`redis_cluster_node`] of a given redis-server binary.
pub fn redis_cluster_node_of(
    exe: &str,
    node_timeout_ms: u64,
    extra: &[&str],
) -> (RedisServer, u16) {
    start_on_free_port(|cport| {
        let cport = cport.to_string();
        let timeout = node_timeout_ms.to_string();
        let mut args = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            &cport,
            "--cluster-node-timeout",
            &timeout,
        ];
        args.extend_from_slice(extra);
        RedisServer::try_start_binary(exe, &args)
    })
}

/// Starts a server whose arguments name a port of their own beside the
/// ephemeral one (`tls-port`, a replica's announced port…): a free port
/// can be taken by another test before the server binds it, so a start
/// that fails is tried again on another port.
pub fn start_on_free_port<S>(mut start: impl FnMut(u16) -> Result<S, String>) -> (S, u16) {
    let mut last = String::new();
    for _ in 0..5 {
        let port = free_port();
        match start(port) {
            Ok(server) => return (server, port),
            Err(e) => last = e,
        }
    }
    panic!("no server started on a free port after 5 tries: {last}");
}

/// The TLS settings Redis's harness gives a server in TLS mode
/// (`tests/support/server.tcl`), on `tls_port`.
pub fn tls_server_args(certs: &std::path::Path, tls_port: u16) -> Vec<String> {
    let file = |name: &str| certs.join(name).to_string_lossy().into_owned();
    vec![
        "--tls-port".into(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        file("server.crt"),
        "--tls-key-file".into(),
        file("server.key"),
        "--tls-client-cert-file".into(),
        file("client.crt"),
        "--tls-client-key-file".into(),
        file("client.key"),
        "--tls-dh-params-file".into(),
        file("redis.dh"),
        "--tls-ca-cert-file".into(),
        file("ca.crt"),
    ]
}
