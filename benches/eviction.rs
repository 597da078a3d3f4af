//! Eviction under a write flood: a server with `maxmemory 100mb` and
//! `allkeys-lru` takes 1 GB of 1 KB values (1M SETs on random keys through
//! redis-benchmark, 50 clients, pipeline 16); the bench reports the peak and
//! final RSS as a multiple of the limit, used_memory, keys kept and keys
//! evicted, for zwindow and redis-server side by side
//! (`cargo bench --bench eviction`; `REDIS_SERVER` picks the oracle,
//! `EVICTION_MB` the limit). The issue's bar: RSS within 1.2x the limit.
//!
//! A figure, not a timed test: RSS depends on the allocator and the kernel.

mod common;

use std::process::{Command, Stdio};

use common::{Server, proc_status_kb};

/// One INFO field as a number; for `db0` the `keys=` count.
fn info(srv: &Server, field: &str) -> u64 {
    srv.info("everything", field)
        .and_then(|v| {
            v.split(',')
                .next()?
                .trim_start_matches("keys=")
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn run(name: &'static str, exe: &str, limit_mb: u64) {
    let args = [
        "--save",
        "",
        "--appendonly",
        "no",
        "--maxmemory",
        &format!("{limit_mb}mb"),
        "--maxmemory-policy",
        "allkeys-lru",
    ]
    .map(String::from);
    let srv = Server::start(name, exe, &args);
    let port = srv.port();
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
    let pid = srv.pid();
    println!(
        "eviction {name:>12}: RSS {:.3}x the limit (peak {:.3}x), used_memory {:.3}x, \
         {} keys kept, {} evicted",
        (proc_status_kb(pid, "VmRSS:") * 1024) as f64 / limit,
        (proc_status_kb(pid, "VmHWM:") * 1024) as f64 / limit,
        info(&srv, "used_memory") as f64 / limit,
        info(&srv, "db0"),
        info(&srv, "evicted_keys"),
    );
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
