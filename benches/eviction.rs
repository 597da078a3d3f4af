//! Eviction under a write flood: a server with `maxmemory 100mb` and
//! `allkeys-lru` takes 1 GB of 1 KB values (1M SETs on random keys through
//! redis-benchmark, 50 clients, pipeline 16); the bench reports the peak and
//! final RSS as a multiple of the limit, used_memory, keys kept and keys
//! evicted, for zwindow and redis-server side by side
//! (`cargo bench --bench eviction`; `REDIS_SERVER` picks the oracle,
//! `EVICTION_MB` the limit). The issue's bar: RSS within 1.2x the limit.
//!
//! A figure, not a timed test: RSS depends on the allocator and the kernel.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `VmRSS` or `VmHWM` (the peak) of a process, in bytes.
fn proc_status_bytes(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0)
        * 1024
}

fn start(exe: &str, port: u16, limit_mb: u64) -> Child {
    let child = Command::new(exe)
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--maxmemory", &format!("{limit_mb}mb")])
        .args(["--maxmemory-policy", "allkeys-lru"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{exe} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// One INFO field (inline command, read until the bulk reply ends).
fn info(port: u16, field: &str) -> u64 {
    let mut s = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).expect("connect");
    s.write_all(b"INFO everything\r\n").expect("send");
    let mut r = BufReader::new(s);
    let mut header = String::new();
    r.read_line(&mut header).expect("reply");
    let len: usize = header.trim()[1..].parse().expect("bulk length");
    let mut body = vec![0; len + 2];
    std::io::Read::read_exact(&mut r, &mut body).expect("body");
    let text = String::from_utf8_lossy(&body);
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|v| {
            v.split(',')
                .next()?
                .trim_start_matches("keys=")
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn run(name: &str, exe: &str, limit_mb: u64) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut child = start(exe, port, limit_mb);
    let status = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-t", "set", "-d", "1024"])
        .args([
            "-n",
            "1000000",
            "-r",
            "100000000",
            "-c",
            "50",
            "-P",
            "16",
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("redis-benchmark (apt-get install redis-tools)");
    assert!(status.success(), "redis-benchmark failed");
    let limit = (limit_mb << 20) as f64;
    let pid = child.id();
    println!(
        "eviction {name:>12}: RSS {:.3}x the limit (peak {:.3}x), used_memory {:.3}x, \
         {} keys kept, {} evicted",
        proc_status_bytes(pid, "VmRSS:") as f64 / limit,
        proc_status_bytes(pid, "VmHWM:") as f64 / limit,
        info(port, "used_memory") as f64 / limit,
        info(port, "db0"),
        info(port, "evicted_keys"),
    );
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    // `cargo test --benches` passes no --bench: run only as a bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let limit_mb = std::env::var("EVICTION_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    run("zwindow", env!("CARGO_BIN_EXE_zwindow"), limit_mb);
    run("redis-server", &redis, limit_mb);
}
