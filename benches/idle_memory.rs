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

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{Server, encode, rss_kb};

/// Runs the load against `addr`; returns the RSS growth in kB.
fn measure(pid: u32, addr: SocketAddr, clients: usize, mb: usize) -> u64 {
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kb(pid);
    let value = vec![b'x'; mb << 20];
    let mut request = Vec::new();
    encode(&mut request, &[b"SET", b"big", &value]);
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
    let z = Server::start(
        "zwindow",
        env!("CARGO_BIN_EXE_zwindow"),
        &["--bind", "127.0.0.1", "--save", ""].map(String::from),
    );
    let zgrowth = measure(z.pid(), z.addr, clients, mb);
    drop(z);
    let r = Server::start(
        "redis-server",
        &redis,
        &["--save", "", "--appendonly", "no"].map(String::from),
    );
    let rgrowth = measure(r.pid(), r.addr, clients, mb);
    drop(r);
    println!(
        "idle_memory: {clients} idle clients after one {mb} MB SET each, RSS growth 2 s later: \
         zwindow {} kB, redis-server {} kB, ratio {:.2}",
        zgrowth,
        rgrowth,
        zgrowth as f64 / rgrowth.max(1) as f64
    );
}
