//! Idle connections give their memory back: 200 clients each send one
//! 8 MB `SET big …` (the same key, so the data is 8 MB whatever the count)
//! and then stay connected and silent; two seconds later the server's RSS
//! growth is reported for zwindow and redis-server side by side
//! (`cargo bench --bench idle_memory`; `REDIS_SERVER` picks the oracle,
//! `IDLE_MEMORY_CLIENTS` and `IDLE_MEMORY_MB` change the load).
//!
//! A figure, not a timed test: RSS depends on the allocator and the
//! kernel, so the bench prints it for people to compare; the goal is at most
//! 20 MB of growth for the default load (redis-server: about 10 MB).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn start(exe: &str, extra: &[&str]) -> (Child, SocketAddr) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(exe)
        .args(extra)
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < deadline, "{exe} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, addr)
}

/// Runs the load against `addr`; returns the RSS growth in kB.
fn measure(pid: u32, addr: SocketAddr, clients: usize, mb: usize) -> u64 {
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(pid);
    let value = vec![b'x'; mb << 20];
    let mut request = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", value.len()).into_bytes();
    request.extend_from_slice(&value);
    request.extend_from_slice(b"\r\n");
    let mut held = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(&request).expect("send");
        let mut ok = [0u8; 5];
        s.read_exact(&mut ok).expect("reply");
        assert_eq!(&ok, b"+OK\r\n");
        held.push(s);
    }
    std::thread::sleep(Duration::from_secs(2));
    let after = rss_kb(pid);
    drop(held);
    after.saturating_sub(before)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` would too: run
    // only when asked as a bench.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let clients: usize = std::env::var("IDLE_MEMORY_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mb: usize = std::env::var("IDLE_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let redis = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
    let (mut z, zaddr) = start(
        env!("CARGO_BIN_EXE_zwindow"),
        &["--bind", "127.0.0.1", "--save", ""],
    );
    let zgrowth = measure(z.id(), zaddr, clients, mb);
    let _ = z.kill();
    let _ = z.wait();
    let (mut r, raddr) = start(&redis, &["--save", "", "--appendonly", "no"]);
    let rgrowth = measure(r.id(), raddr, clients, mb);
    let _ = r.kill();
    let _ = r.wait();
    println!(
        "idle_memory: {clients} idle clients after one {mb} MB SET each, RSS growth 2 s later: \
         zwindow {} kB, redis-server {} kB, ratio {:.2}",
        zgrowth,
        rgrowth,
        zgrowth as f64 / rgrowth.max(1) as f64
    );
}
