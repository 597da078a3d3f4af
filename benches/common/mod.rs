//! What the benches that drive a real server share: starting zwindow or
//! redis-server on a free port (`Server`), RESP requests and frame
//! boundaries (`encode`, `frame_end`), pipelined raw requests
//! (`Server::raw`), the `/proc` figures (`cpu_ticks`, `proc_status_kb`),
//! finding executables (`find_exe`), free ports, a temp dir removed at
//! exit and numeric knobs (`env_num`).
//!
//! Each bench includes it with `mod common;`; a bench that uses only part of
//! it would warn about the rest, hence the per-item `#[allow(dead_code)]`
//! (the pattern of Rust's `tests/common`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// RESP
// ---------------------------------------------------------------------------

/// Appends one request in RESP multibulk form.
#[allow(dead_code)]
pub fn encode(buf: &mut Vec<u8>, args: &[&[u8]]) {
    buf.push(b'*');
    buf.extend_from_slice(itoa::Buffer::new().format(args.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    for a in args {
        buf.push(b'$');
        buf.extend_from_slice(itoa::Buffer::new().format(a.len()).as_bytes());
        buf.extend_from_slice(b"\r\n");
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

fn parse_len(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// The end of the RESP2 frame starting at `i`, `Ok(None)` if incomplete.
#[allow(dead_code)]
pub fn frame_end(b: &[u8], i: usize) -> Result<Option<usize>, String> {
    if i >= b.len() {
        return Ok(None);
    }
    let Some(cr) = b[i..].windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line_end = i + cr;
    let after = line_end + 2;
    match b[i] {
        b'+' | b'-' | b':' => Ok(Some(after)),
        b'$' => {
            let n = parse_len(&b[i + 1..line_end]).ok_or("bad bulk length")?;
            if n < 0 {
                return Ok(Some(after));
            }
            let end = after + n as usize + 2;
            Ok((end <= b.len()).then_some(end))
        }
        b'*' => {
            let n = parse_len(&b[i + 1..line_end]).ok_or("bad array length")?;
            let mut p = after;
            for _ in 0..n.max(0) {
                match frame_end(b, p)? {
                    Some(e) => p = e,
                    None => return Ok(None),
                }
            }
            Ok(Some(p))
        }
        c => Err(format!("unexpected reply byte {c:#x}")),
    }
}

// ---------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------

/// A server process on a free local port, killed on drop.
pub struct Server {
    pub name: &'static str,
    child: Child,
    pub addr: SocketAddr,
}

#[allow(dead_code)]
impl Server {
    /// Starts `exe args --port P` (P free) and waits until it answers PING;
    /// panics if it cannot be spawned or does not answer within 10 s.
    pub fn start(name: &'static str, exe: &str, args: &[String]) -> Server {
        Self::start_in(name, exe, args, None)
    }

    /// As `start`, run from `dir` when given (where a server would find or
    /// leave a dump.rdb).
    pub fn start_in(name: &'static str, exe: &str, args: &[String], dir: Option<&Path>) -> Server {
        Self::try_start_in(name, exe, args, dir)
            .unwrap_or_else(|e| panic!("spawn {exe}: {e}"))
            .ready()
    }

    /// As `start`, `None` when `exe` cannot be spawned or does not answer.
    pub fn try_start(name: &'static str, exe: &str, args: &[String]) -> Option<Server> {
        let srv = Self::try_start_in(name, exe, args, None).ok()?;
        srv.wait_ready().then_some(srv)
    }

    fn try_start_in(
        name: &'static str,
        exe: &str,
        args: &[String],
        dir: Option<&Path>,
    ) -> std::io::Result<Server> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let mut cmd = Command::new(exe);
        cmd.args(args).args(["--port", &port.to_string()]);
        if let Some(dir) = dir {
            cmd.current_dir(dir);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        Ok(Server { name, child, addr })
    }

    /// Polls PING for up to 10 s; false if the server never answered.
    fn wait_ready(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.command(&[b"PING"]).is_err() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    fn ready(self) -> Server {
        assert!(
            self.wait_ready(),
            "{} did not answer PING on {}",
            self.name,
            self.addr
        );
        self
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// One blocking request, for setup; the raw reply.
    pub fn command(&self, args: &[&[u8]]) -> std::io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        encode(&mut buf, args);
        self.raw(&buf, 1)
    }

    /// Sends pre-encoded requests on a new connection and reads `count`
    /// replies; an error reply fails the whole call.
    pub fn raw(&self, bytes: &[u8], count: usize) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500))?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        s.write_all(bytes)?;
        let mut inb = Vec::new();
        let (mut pos, mut frames) = (0, 0);
        let mut chunk = vec![0u8; 1 << 16];
        while frames < count {
            match frame_end(&inb, pos).map_err(std::io::Error::other)? {
                Some(end) => {
                    if inb[pos] == b'-' {
                        return Err(std::io::Error::other(
                            String::from_utf8_lossy(&inb[pos..end]).into_owned(),
                        ));
                    }
                    pos = end;
                    frames += 1;
                }
                None => {
                    let n = s.read(&mut chunk)?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    inb.extend_from_slice(&chunk[..n]);
                }
            }
        }
        Ok(inb)
    }

    /// The text after `field:` in `INFO section`, `None` if the request
    /// failed or the field is absent.
    pub fn info(&self, section: &str, field: &str) -> Option<String> {
        let reply = self.command(&[b"INFO", section.as_bytes()]).ok()?;
        let prefix = format!("{field}:");
        String::from_utf8_lossy(&reply)
            .lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free local TCP port (free when asked).
#[allow(dead_code)]
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

/// A bench's temp dir (a directory per server inside), removed at exit;
/// declared before the servers, so dropped after them.
#[allow(dead_code)]
pub struct TempDir(pub std::path::PathBuf);

#[allow(dead_code)]
impl TempDir {
    /// `<temp dir>/<name>-<pid>`.
    pub fn new(name: &str) -> TempDir {
        TempDir(std::env::temp_dir().join(format!("{name}-{}", std::process::id())))
    }

    /// A new empty directory `name` inside.
    pub fn sub(&self, name: &str) -> std::path::PathBuf {
        let dir = self.0.join(name);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        dir
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------
// /proc and PATH
// ---------------------------------------------------------------------------

/// utime + stime of every thread of `pid`, in clock ticks.
#[allow(dead_code)]
pub fn cpu_ticks(pid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut total = 0;
    for t in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // Fields after the command name, which is in parentheses and may
        // hold spaces; that rest starts at field 3, utime is 14, stime 15.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let get = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
        total += get(14).unwrap_or(0) + get(15).unwrap_or(0);
    }
    total
}

/// Clock ticks per second (`getconf CLK_TCK`, 100 if that fails).
#[allow(dead_code)]
pub fn clk_tck() -> f64 {
    static TCK: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TCK.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A `/proc/<pid>/status` field in kB (`"VmRSS:"`, `"VmHWM:"` the peak),
/// 0 if unreadable.
#[allow(dead_code)]
pub fn proc_status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident set size of `pid` in kB.
#[allow(dead_code)]
pub fn rss_kb(pid: u32) -> u64 {
    proc_status_kb(pid, "VmRSS:")
}

/// The path in environment variable `env`, else the first `name` on PATH.
#[allow(dead_code)]
pub fn find_exe(env: &str, name: &str) -> Option<String> {
    if let Some(p) = std::env::var_os(env) {
        return Some(p.to_string_lossy().into_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// The servers zwindow is compared with that this machine has:
/// redis-server (`REDIS_SERVER` or PATH) and valkey-server (`VALKEY_SERVER`
/// or PATH), as (name, path), each announced with its version; a missing
/// one is announced as not measured.
#[allow(dead_code)]
pub fn peer_servers() -> Vec<(&'static str, String)> {
    let mut found = Vec::new();
    for (name, env, exe) in [
        ("redis", "REDIS_SERVER", "redis-server"),
        ("valkey", "VALKEY_SERVER", "valkey-server"),
    ] {
        match find_exe(env, exe) {
            Some(path) => {
                let version = std::process::Command::new(&path)
                    .arg("--version")
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .unwrap_or_default();
                println!("{name}: {path} ({version})");
                found.push((name, path));
            }
            None => println!("{exe} not found (set {env} or PATH): not measured"),
        }
    }
    found
}

/// Valkey 9, the tests' second oracle, when `ZWINDOW_VALKEY9_SERVER` names
/// it (`.ci/test` builds it from Debian's source package into
/// `.cache/valkey-9*/src/valkey-server`), as ("valkey9", path), announced
/// with its version like [`peer_servers`]'.
#[allow(dead_code)]
pub fn valkey9_peer() -> Option<(&'static str, String)> {
    let Some(path) = std::env::var_os("ZWINDOW_VALKEY9_SERVER") else {
        println!("valkey9: ZWINDOW_VALKEY9_SERVER is not set: not measured");
        return None;
    };
    let path = path.to_string_lossy().into_owned();
    let version = std::process::Command::new(&path)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("valkey9: {path} ({version})");
    Some(("valkey9", path))
}

// ---------------------------------------------------------------------------
// The vs_redis knobs
// ---------------------------------------------------------------------------

/// `VS_REDIS_DEPTHS`: comma-separated pipeline depths, default `1,16`.
#[allow(dead_code)]
pub fn env_depths() -> Vec<usize> {
    std::env::var("VS_REDIS_DEPTHS")
        .ok()
        .map(|v| v.split(',').filter_map(|d| d.trim().parse().ok()).collect())
        .filter(|d: &Vec<usize>| !d.is_empty())
        .unwrap_or_else(|| vec![1, 16])
}

/// Whether workload `key` runs: `VS_REDIS_ONLY` (comma-separated keys) is
/// unset or names it.
#[allow(dead_code)]
pub fn env_selects(key: &str) -> bool {
    std::env::var("VS_REDIS_ONLY")
        .ok()
        .is_none_or(|o| o.split(',').any(|k| k.trim() == key))
}

/// The zwindow to measure (`VS_REDIS_ZWINDOW`, else this build's) and its
/// flags: no save points, since a background save mid-run would skew the
/// figures (and leave a dump.rdb the next run loads), then
/// `VS_REDIS_ZWINDOW_ARGS`.
#[allow(dead_code)]
pub fn zwindow_under_test() -> (String, Vec<String>) {
    let exe =
        std::env::var("VS_REDIS_ZWINDOW").unwrap_or_else(|_| env!("CARGO_BIN_EXE_zwindow").into());
    let mut args = ["--bind", "127.0.0.1", "--log-level", "warn", "--save", ""]
        .map(String::from)
        .to_vec();
    args.extend(
        std::env::var("VS_REDIS_ZWINDOW_ARGS")
            .unwrap_or_default()
            .split_whitespace()
            .map(String::from),
    );
    (exe, args)
}

/// A numeric knob from the environment, `None` when unset or unreadable.
#[allow(dead_code)]
pub fn env_num(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The median of a run's figures (NaN for none).
#[allow(dead_code)]
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
