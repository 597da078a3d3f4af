//! `zwindow --healthcheck`: is the zwindow server beside us answering?
//!
//! Made for the Docker image's HEALTHCHECK, which runs inside the
//! container but knows neither the port nor the password the server was
//! started with (`command: redis-server /etc/redis.conf`,
//! `--port 6380 --requirepass …`). It finds the server process (another
//! process running this same executable), reads that process's command
//! line and config file with the server's own loader to learn its port
//! and bind address (or its unix socket, when it listens on no TCP port),
//! and sends PING. `+PONG` is healthy, and so is
//! `-NOAUTH`: the server read and answered the command, and the check
//! needs no password (so none is stored anywhere, and a password changed
//! by CONFIG SET does not turn the check red).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Launch;

/// How long the connection and the reply may take.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Runs the check (on the server with this pid, else the one found):
/// `Ok` with the reply when healthy.
pub fn run(pid: Option<u32>) -> Result<String, String> {
    let pid = pid
        .or_else(server_pid)
        .ok_or("no zwindow server process found")?;
    let target = server_address(pid)?;
    let addr = match &target {
        Target::Tcp(a) => a.to_string(),
        Target::Unix(path) => path.display().to_string(),
    };
    let reply = ping(&target).map_err(|e| format!("{addr}: {e}"))?;
    if reply.starts_with("+PONG") || reply.starts_with("-NOAUTH") {
        Ok(format!("{addr}: {reply}"))
    } else {
        Err(format!("{addr}: {reply}"))
    }
}

/// Where the check connects.
enum Target {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Where the server listens: from its own command line and config file.
fn server_address(pid: u32) -> Result<Target, String> {
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let cmdline = std::fs::read(proc_dir.join("cmdline")).map_err(|e| e.to_string())?;
    let argv: Vec<Vec<u8>> = cmdline
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    // Relative paths in its command line are relative to its directory.
    if let Ok(cwd) = std::fs::read_link(proc_dir.join("cwd")) {
        let _ = std::env::set_current_dir(cwd);
    }
    let (bind, port, unixsocket) = match Launch::from_argv(&argv) {
        Ok(Launch::Run(startup)) => (
            startup.config.bind(),
            startup
                .config
                .port
                .load(std::sync::atomic::Ordering::Relaxed) as u16,
            startup.config.unixsocket.clone(),
        ),
        // A config read from stdin cannot be read again: assume defaults.
        _ => ("127.0.0.1".to_string(), 6379, String::new()),
    };
    // No TCP listener, only the unix socket (a relative path is relative
    // to the server's directory, where we are now).
    if !unixsocket.is_empty() && (port == 0 || bind.is_empty()) {
        return Ok(Target::Unix(unixsocket.into()));
    }
    // Loopback when the server listens on it (or on every interface),
    // else its first address.
    let host = bind
        .split_whitespace()
        .map(|a| a.trim_start_matches('-'))
        .find(|a| {
            matches!(
                *a,
                "*" | "0.0.0.0" | "127.0.0.1" | "::" | "::*" | "localhost"
            )
        })
        .map(|_| "127.0.0.1")
        .or_else(|| {
            bind.split_whitespace()
                .next()
                .map(|a| a.trim_start_matches('-'))
        })
        .unwrap_or("127.0.0.1")
        .to_string();
    let host = if host == "*" {
        "127.0.0.1".to_string()
    } else {
        host
    };
    (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .map(Target::Tcp)
        .ok_or_else(|| format!("cannot resolve {host}"))
}

/// The oldest other process running this executable.
fn server_pid() -> Option<u32> {
    let me = std::process::id();
    let exe = std::env::current_exe().ok()?;
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&pid| pid != me && same_exe(&exe, pid))
        .collect();
    pids.sort_unstable();
    pids.first().copied()
}

fn same_exe(exe: &Path, pid: u32) -> bool {
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe)
}

/// Sends PING and returns the first line of the reply.
fn ping(target: &Target) -> std::io::Result<String> {
    match target {
        Target::Tcp(addr) => {
            let conn = TcpStream::connect_timeout(addr, TIMEOUT)?;
            conn.set_read_timeout(Some(TIMEOUT))?;
            conn.set_write_timeout(Some(TIMEOUT))?;
            exchange(conn)
        }
        Target::Unix(path) => {
            let conn = std::os::unix::net::UnixStream::connect(path)?;
            conn.set_read_timeout(Some(TIMEOUT))?;
            conn.set_write_timeout(Some(TIMEOUT))?;
            exchange(conn)
        }
    }
}

/// Writes PING on `conn` and reads the reply's first line.
fn exchange(mut conn: impl Read + Write) -> std::io::Result<String> {
    conn.write_all(b"*1\r\n$4\r\nPING\r\n")?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 256];
    while !reply.ends_with(b"\r\n") && reply.len() < 1024 {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    Ok(String::from_utf8_lossy(&reply).trim_end().to_string())
}
