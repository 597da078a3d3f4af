//! What replication costs a primary: zwindow beside redis-server (and
//! valkey-server when there is one), in one run
//! (`cargo bench --bench replication`).
//!
//! Two measurements, each on every server in turn:
//!
//! 1. **CPU per write request with 0 and with 2 replicas.** `redis-benchmark
//!    -t set -P 16 -c 50 -n N -r 1000000 --csv`, then the same with `-t
//!    zadd` (each measured on its own, and both together), against the
//!    primary alone, then with two replicas attached and in sync
//!    (`connected_slaves:2` on the primary, `master_link_status:up` on
//!    both). `-r` makes every
//!    request a write that is propagated: without it SET rewrites one key and
//!    ZADD re-adds one member with score 0, which changes nothing, and a
//!    primary does not propagate a ZADD that changed nothing. The figure is
//!    the primary's CPU time per request, read from `/proc/<pid>/task/*/stat`
//!    (utime + stime of every thread) before the run and after the replicas
//!    have applied all of it (their `master_repl_offset` reached the
//!    primary's), so a stream still being written when redis-benchmark
//!    finishes is counted. The replicas run on the same machine; their CPU is
//!    not counted, but they take cores the primary could otherwise use, so
//!    the throughput printed per run is no cost figure. The issue's target:
//!    zwindow with two replicas costs at most 1.2× its CPU per write with
//!    none. The keyspace is flushed before every run (and before replicas
//!    attach, so their initial sync is small).
//! 2. **Full resync of K keys.** The primary holds K keys (`key:N` →
//!    `value:N`, what `DEBUG POPULATE` makes; zwindow has no DEBUG POPULATE,
//!    so every server is loaded with the same pipelined MSETs). A probe
//!    thread sends GET of random keys in a loop on one raw TCP connection,
//!    recording each round trip; then an empty replica is started and told
//!    `REPLICAOF 127.0.0.1 <primary>`, and the sync time is from that command
//!    until the replica reports `master_link_status:up` and
//!    `master_sync_in_progress:0` (so it includes the replica's load). The
//!    probe's p50/p99/max over that span show what the sync costs the
//!    primary's clients (redis-server forks for it; zwindow streams one
//!    fork-free snapshot); its p99 over the 300 ms before the sync is printed
//!    beside them as the machine's own noise. One row with
//!    `repl-diskless-sync yes`, one with `no` (the snapshot goes through the
//!    primary's `dbfilename` first); `repl-diskless-sync-delay 0` in both.
//!
//! Which replicas: `REPL_BENCH_REPLICAS=same` (the default) gives each
//! primary replicas of its own kind (zwindow replicates zwindow, redis-server
//! redis-server); `REPL_BENCH_REPLICAS=redis` gives zwindow redis-server
//! 7.0 replicas instead, for a zwindow whose replica side is missing or to
//! compare primaries with the same replicas. Valkey's RDB is newer than
//! redis-server 7.0 reads, so valkey-server always has valkey replicas.
//!
//! Every server runs each measurement in turn, the order rotating each round
//! (and, in measurement 1, whether 0 or 2 replicas come first); the figures
//! are medians over the rounds, and measurement 1's also minima (other work
//! on a shared machine only adds CPU time to a run, so the least disturbed
//! round is the closest to the writes' own cost). Each redis-benchmark
//! command line is printed, so a figure can be reproduced by hand. The
//! machine is shared and noisy: read the ratios, not the absolute figures.
//! To measure a change, give the build before it as a third server
//! (`VALKEY_SERVER=<old zwindow>`: it is then listed as valkey): all three
//! run in turn in one run.
//!
//! Servers: the release zwindow (`VS_REDIS_ZWINDOW`, `VS_REDIS_ZWINDOW_ARGS`
//! as in `vs_redis`), redis-server (`REDIS_SERVER` or PATH), valkey-server
//! (`VALKEY_SERVER` or PATH) when present. Each runs in a directory of its
//! own under the temp dir (removed at exit), so no dump.rdb is shared.
//! Knobs: `REPL_BENCH_REQUESTS` (per redis-benchmark test, default
//! 500,000), `REPL_BENCH_KEYS` (default 1,000,000), `REPL_BENCH_ROUNDS`
//! (default 3), `REPL_BENCH_QUICK=1` (smoke run: 50,000 requests, 100,000
//! keys, one round), `REPL_BENCH_REPLICAS=same|redis`.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::Rng;

use common::{
    Server, TempDir, clk_tck, cpu_ticks, encode, env_num, find_exe, frame_end, median,
    peer_servers, zwindow_under_test,
};

/// redis-benchmark's key space (`-r`): every SET and ZADD a distinct write.
const RANDOM_KEYS: u64 = 1_000_000;
/// How long a replica may take to attach and sync before the bench fails.
const SYNC_TIMEOUT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------
// Servers and replicas
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Zwindow,
    Redis,
    Valkey,
}

/// How to start one kind of server: its executable and flags.
#[derive(Clone)]
struct Exe {
    kind: Kind,
    name: &'static str,
    path: String,
    args: Vec<String>,
}

/// A primary under test and the replicas it gets.
struct Primary {
    exe: Exe,
    replica: Exe,
    srv: Server,
}

/// The setup and checks this bench adds to the shared `Server`.
impl Server {
    /// An integer INFO field, 0 when absent or unreadable.
    fn info_u64(&self, section: &str, field: &str) -> u64 {
        self.info(section, field)
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Whether this replica has finished its sync with its primary.
    fn in_sync(&self) -> bool {
        let Ok(reply) = self.command(&[b"INFO", b"replication"]) else {
            return false;
        };
        let text = String::from_utf8_lossy(&reply);
        text.contains("master_link_status:up") && text.contains("master_sync_in_progress:0")
    }

    /// `CONFIG SET name value`, panicking on an error reply.
    fn config_set(&self, name: &str, value: &str) {
        self.command(&[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()])
            .unwrap_or_else(|e| panic!("{}: CONFIG SET {name} {value}: {e}", self.name));
    }

    /// `REPLICAOF 127.0.0.1 port`; a refusal names the knob that avoids it.
    fn replicate(&self, port: u16) {
        if let Err(e) = self.command(&[b"REPLICAOF", b"127.0.0.1", port.to_string().as_bytes()]) {
            panic!(
                "{} refused REPLICAOF: {} (until zwindow's replica side is in this build, \
                 run with REPL_BENCH_REPLICAS=redis)",
                self.name,
                e.to_string().trim_end()
            );
        }
    }

    /// FLUSHALL, then `keys` keys `key:N` = `value:N` (as DEBUG POPULATE
    /// makes them), 1000 per MSET, 20 MSETs per round trip.
    fn populate(&self, keys: u64) {
        self.command(&[b"FLUSHALL"])
            .unwrap_or_else(|e| panic!("{}: FLUSHALL: {e}", self.name));
        let (per_cmd, per_trip) = (1000, 20);
        let mut i = 0;
        while i < keys {
            let mut buf = Vec::new();
            let mut cmds = 0;
            while cmds < per_trip && i < keys {
                let end = (i + per_cmd).min(keys);
                let mut owned: Vec<Vec<u8>> = vec![b"MSET".to_vec()];
                for j in i..end {
                    owned.push(format!("key:{j}").into_bytes());
                    owned.push(format!("value:{j}").into_bytes());
                }
                let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
                encode(&mut buf, &args);
                cmds += 1;
                i = end;
            }
            self.raw(&buf, cmds)
                .unwrap_or_else(|e| panic!("{}: loading: {e}", self.name));
        }
        assert_eq!(self.db_keys(), keys, "{}: keys after loading", self.name);
    }

    /// The keys in db 0 (`keys=` of INFO keyspace's `db0`), 0 if none.
    fn db_keys(&self) -> u64 {
        self.info("keyspace", "db0")
            .and_then(|v| v.split(',').next()?.strip_prefix("keys=")?.parse().ok())
            .unwrap_or(0)
    }
}

/// Polls `done` every 10 ms until it holds or `limit` passes; whether it held.
fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

impl Primary {
    /// Starts `n` empty replicas (each in a directory of its own: a replica
    /// that loads through a file writes it to its working directory) and
    /// attaches them; returns once all are in sync.
    fn attach(&self, tmp: &TempDir, n: usize, round: usize) -> Vec<Server> {
        let replicas: Vec<Server> = (0..n)
            .map(|i| {
                let dir = tmp.sub(&format!("{}-replica-{round}-{i}", self.exe.name));
                let r = Server::start_in(
                    self.replica.name,
                    &self.replica.path,
                    &self.replica.args,
                    Some(&dir),
                );
                r.replicate(self.srv.port());
                r
            })
            .collect();
        let synced = wait_until(SYNC_TIMEOUT, || {
            replicas.iter().all(Server::in_sync)
                && self.srv.info_u64("replication", "connected_slaves") == n as u64
        });
        assert!(
            synced,
            "{}: {n} {} replica(s) not in sync after {SYNC_TIMEOUT:?}",
            self.exe.name, self.replica.name
        );
        replicas
    }

    /// Kills the replicas and waits until the primary has let them go.
    fn detach(&self, replicas: Vec<Server>) {
        drop(replicas);
        let gone = wait_until(Duration::from_secs(10), || {
            self.srv.info_u64("replication", "connected_slaves") == 0
        });
        assert!(gone, "{}: replicas still connected", self.exe.name);
    }

    /// Waits (up to 30 s) until every replica applied all the primary wrote.
    fn caught_up(&self, replicas: &[Server]) {
        let target = self.srv.info_u64("replication", "master_repl_offset");
        let ok = wait_until(Duration::from_secs(30), || {
            replicas
                .iter()
                .all(|r| r.info_u64("replication", "master_repl_offset") >= target)
        });
        if !ok {
            println!(
                "  (warning: {}'s replicas had not reached offset {target} after 30 s)",
                self.exe.name
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Measurement 1: CPU per write request
// ---------------------------------------------------------------------------

/// The write tests, each run and measured on its own; the figures for
/// both are their sum.
const WRITE_TESTS: [&str; 2] = ["set", "zadd"];

/// redis-benchmark's arguments for one write test against `port`.
fn write_args(port: u16, test: &str, requests: u64) -> Vec<String> {
    [
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-t",
        test,
        "-P",
        "16",
        "-c",
        "50",
        "-n",
        &requests.to_string(),
        "-r",
        &RANDOM_KEYS.to_string(),
        "--csv",
    ]
    .map(String::from)
    .to_vec()
}

/// One write run: requests per second over both tests, and the primary's
/// CPU per request for both together, then for each test
/// ([`WRITE_TESTS`]' order).
#[derive(Clone, Copy)]
struct Writes {
    ops: f64,
    cpu_us: [f64; 1 + WRITE_TESTS.len()],
}

/// One write run against `p` with `replicas` attached, each test in turn:
/// the primary's CPU per request, until the replicas have applied
/// everything the test wrote.
fn write_run(bench: &str, p: &Primary, replicas: &[Server], requests: u64) -> Writes {
    let mut cpu_us = [0.0; 1 + WRITE_TESTS.len()];
    let (mut all_ticks, mut elapsed) = (0.0, 0.0);
    for (t, test) in WRITE_TESTS.iter().enumerate() {
        let args = write_args(p.srv.port(), test, requests);
        println!("  $ {bench} {}", shell_words(&args));
        let errors0 = p.srv.info_u64("stats", "total_error_replies");
        let cpu0 = cpu_ticks(p.srv.pid());
        let started = Instant::now();
        let out = Command::new(bench)
            .args(&args)
            .stderr(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("spawn {bench}: {e}"));
        elapsed += started.elapsed().as_secs_f64();
        p.caught_up(replicas);
        let ticks = cpu_ticks(p.srv.pid()).saturating_sub(cpu0) as f64;
        let text = String::from_utf8_lossy(&out.stdout);
        let tests = text.lines().filter(|l| !l.starts_with("\"test\"")).count();
        assert!(
            out.status.success() && tests == 1,
            "{}: unreadable redis-benchmark output: {text}",
            p.exe.name
        );
        let errors = p
            .srv
            .info_u64("stats", "total_error_replies")
            .saturating_sub(errors0);
        assert!(
            errors == 0,
            "{} answered {errors} writes with errors",
            p.exe.name
        );
        cpu_us[1 + t] = ticks / clk_tck() * 1e6 / requests as f64;
        all_ticks += ticks;
    }
    let total = (WRITE_TESTS.len() as u64 * requests) as f64;
    cpu_us[0] = all_ticks / clk_tck() * 1e6 / total;
    Writes {
        ops: total / elapsed,
        cpu_us,
    }
}

/// Measurement 1, one round for one primary: 0 replicas and 2, in the
/// order `two_first` says. Returns (0 replicas, 2 replicas).
fn write_round(
    bench: &str,
    p: &Primary,
    tmp: &TempDir,
    requests: u64,
    round: usize,
    two_first: bool,
) -> (Writes, Writes) {
    let flush = || {
        p.srv
            .command(&[b"FLUSHALL"])
            .unwrap_or_else(|e| panic!("{}: FLUSHALL: {e}", p.exe.name));
    };
    let alone = || {
        flush();
        write_run(bench, p, &[], requests)
    };
    let with_two = || {
        flush();
        let replicas = p.attach(tmp, 2, round);
        let w = write_run(bench, p, &replicas, requests);
        p.detach(replicas);
        w
    };
    let (zero, two) = if two_first {
        let two = with_two();
        (alone(), two)
    } else {
        let zero = alone();
        (zero, with_two())
    };
    for (n, w) in [(0, zero), (2, two)] {
        println!(
            "round {} {:8} {n} replicas ({:12}) {:>9.0} ops/s  cpu {:>6.3} us/req (set {:.3}, zadd {:.3})",
            round + 1,
            p.exe.name,
            p.replica.name,
            w.ops,
            w.cpu_us[0],
            w.cpu_us[1],
            w.cpu_us[2]
        );
    }
    (zero, two)
}

// ---------------------------------------------------------------------------
// Measurement 2: full resync under a reading client
// ---------------------------------------------------------------------------

/// One probe GET's start (since the probe's start) and round trip, in µs.
type Sample = (u64, u32);

/// A thread sending `GET key:<random below keys>` on one connection until
/// `stop`, one request at a time, recording each.
fn probe(
    addr: SocketAddr,
    keys: u64,
    stop: Arc<AtomicBool>,
    base: Instant,
) -> JoinHandle<Vec<Sample>> {
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).expect("probe: connect");
        s.set_nodelay(true).expect("probe: nodelay");
        s.set_read_timeout(Some(Duration::from_secs(120)))
            .expect("probe: timeout");
        let mut rng = rand::rng();
        let (mut req, mut inb) = (Vec::new(), Vec::new());
        let mut chunk = vec![0u8; 4096];
        let mut samples = Vec::new();
        while !stop.load(Relaxed) {
            req.clear();
            let key = format!("key:{}", rng.random_range(0..keys.max(1)));
            encode(&mut req, &[b"GET", key.as_bytes()]);
            let t0 = Instant::now();
            s.write_all(&req).expect("probe: write");
            inb.clear();
            loop {
                match frame_end(&inb, 0) {
                    Ok(Some(_)) => break,
                    Ok(None) => {}
                    Err(e) => panic!("probe: {e}"),
                }
                let n = s.read(&mut chunk).expect("probe: read");
                assert!(n > 0, "probe: connection closed");
                inb.extend_from_slice(&chunk[..n]);
            }
            assert!(inb.starts_with(b"$"), "probe: GET answered {inb:?}");
            let rtt = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
            samples.push(((t0 - base).as_micros() as u64, rtt));
        }
        samples
    })
}

#[derive(Clone, Copy)]
struct Resync {
    secs: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    gets: usize,
    before_p99_ms: f64,
}

/// The `q` quantile of sorted round trips, in ms.
fn quantile_ms(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    f64::from(sorted[i]) / 1000.0
}

/// One full resync of `p`'s keys to a new empty replica, under the probe.
fn resync(p: &Primary, tmp: &TempDir, keys: u64, round: usize, diskless: bool) -> Resync {
    p.srv
        .config_set("repl-diskless-sync", if diskless { "yes" } else { "no" });
    let dir = tmp.sub(&format!(
        "{}-resync-{round}-{}",
        p.exe.name,
        if diskless { "diskless" } else { "disk" }
    ));
    let replica = Server::start_in(p.replica.name, &p.replica.path, &p.replica.args, Some(&dir));
    let base = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let prober = probe(p.srv.addr, keys, stop.clone(), base);
    std::thread::sleep(Duration::from_millis(300));
    let from = base.elapsed().as_micros() as u64;
    let t0 = Instant::now();
    replica.replicate(p.srv.port());
    let synced = wait_until(SYNC_TIMEOUT, || replica.in_sync());
    let secs = t0.elapsed().as_secs_f64();
    let to = base.elapsed().as_micros() as u64;
    stop.store(true, Relaxed);
    let samples = prober.join().expect("probe thread");
    assert!(
        synced,
        "{}: {} replica not in sync after {SYNC_TIMEOUT:?}",
        p.exe.name, p.replica.name
    );
    assert_eq!(
        replica.db_keys(),
        keys,
        "{}: keys on the replica after the sync",
        p.exe.name
    );
    p.detach(vec![replica]);
    let pick = |lo: u64, hi: u64| {
        let mut v: Vec<u32> = samples
            .iter()
            .filter(|(at, _)| (lo..hi).contains(at))
            .map(|&(_, rtt)| rtt)
            .collect();
        v.sort_unstable();
        v
    };
    let during = pick(from, to);
    let before = pick(0, from);
    Resync {
        secs,
        p50_ms: quantile_ms(&during, 0.5),
        p99_ms: quantile_ms(&during, 0.99),
        max_ms: during.last().map_or(f64::NAN, |&m| f64::from(m) / 1000.0),
        gets: during.len(),
        before_p99_ms: quantile_ms(&before, 0.99),
    }
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

/// Arguments as a shell would need them to reproduce the command (an empty
/// one, `--save ""`, would otherwise vanish from the printed line).
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.is_empty() {
                "\"\"".to_string()
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Who replicates `kind` (see the header: `REPL_BENCH_REPLICAS`).
fn replica_for(primary: &Exe, redis: Option<&Exe>, redis_replicas: bool) -> Exe {
    match (primary.kind, redis) {
        (Kind::Zwindow, Some(r)) if redis_replicas => r.clone(),
        (Kind::Zwindow, None) if redis_replicas => {
            panic!("REPL_BENCH_REPLICAS=redis needs redis-server (REDIS_SERVER or PATH)")
        }
        _ => primary.clone(),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let quick = std::env::var("REPL_BENCH_QUICK").is_ok_and(|v| v == "1");
    let requests = env_num("REPL_BENCH_REQUESTS").unwrap_or(if quick { 50_000 } else { 500_000 });
    let keys = env_num("REPL_BENCH_KEYS").unwrap_or(if quick { 100_000 } else { 1_000_000 });
    let rounds = env_num("REPL_BENCH_ROUNDS").unwrap_or(if quick { 1 } else { 3 }) as usize;
    let mode = std::env::var("REPL_BENCH_REPLICAS").unwrap_or_else(|_| "same".into());
    let redis_replicas = match mode.as_str() {
        "same" => false,
        "redis" => true,
        other => panic!("REPL_BENCH_REPLICAS={other}: expected same or redis"),
    };
    let Some(bench) = find_exe("REDIS_BENCHMARK", "redis-benchmark") else {
        println!("redis-benchmark is not on PATH: nothing to measure");
        return;
    };

    // Every primary replicates without delay; `--save ""` everywhere, so no
    // background save runs mid-measurement.
    let repl = [
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]
    .map(String::from);
    let (zw_path, mut zw_args) = zwindow_under_test();
    zw_args.extend(repl.iter().cloned());
    let mut exes = vec![Exe {
        kind: Kind::Zwindow,
        name: "zwindow",
        path: zw_path,
        args: zw_args,
    }];
    for (name, path) in peer_servers() {
        let mut args = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            .map(String::from)
            .to_vec();
        args.extend(repl.iter().cloned());
        let kind = if name == "redis" {
            Kind::Redis
        } else {
            Kind::Valkey
        };
        exes.push(Exe {
            kind,
            name,
            path,
            args,
        });
    }
    let redis = exes.iter().find(|e| e.kind == Kind::Redis).cloned();
    let tmp = TempDir::new("repl_bench");
    let primaries: Vec<Primary> = exes
        .iter()
        .map(|exe| Primary {
            replica: replica_for(exe, redis.as_ref(), redis_replicas),
            srv: Server::start_in(exe.name, &exe.path, &exe.args, Some(&tmp.sub(exe.name))),
            exe: exe.clone(),
        })
        .collect();
    println!(
        "replication: {requests} requests per redis-benchmark test, {keys} keys to resync, {rounds} round(s), replicas: {mode}"
    );
    for p in &primaries {
        println!(
            "  {:8} {} {} (port {}); replicas: {} {}",
            p.exe.name,
            p.exe.path,
            shell_words(&p.exe.args),
            p.srv.port(),
            p.replica.path,
            shell_words(&p.replica.args)
        );
    }
    println!(
        "  the replicas run on this machine beside the primary: only the primary's CPU is counted"
    );

    // Measurement 1: writes[server] = (0 replicas, 2 replicas) per round.
    println!();
    println!("1. CPU per write request, 0 vs 2 replicas");
    let n = primaries.len();
    let mut writes = vec![Vec::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let si = (k + round) % n;
            let w = write_round(
                &bench,
                &primaries[si],
                &tmp,
                requests,
                round,
                round % 2 == 1,
            );
            writes[si].push(w);
        }
    }

    // Measurement 2: resyncs[server][diskless yes, no] per round.
    println!();
    println!("2. Full resync of {keys} keys under a GET probe");
    for p in &primaries {
        p.srv.populate(keys);
    }
    let modes = [true, false];
    let mut resyncs = vec![vec![Vec::new(); modes.len()]; n];
    for round in 0..rounds {
        for (mi, &diskless) in modes.iter().enumerate() {
            for k in 0..n {
                let si = (k + round) % n;
                let p = &primaries[si];
                let r = resync(p, &tmp, keys, round, diskless);
                println!(
                    "round {} {:8} -> {:12} diskless {:3} sync {:>7.3} s  GET p50 {:>7.3} p99 {:>7.3} max {:>8.3} ms ({} GETs; p99 before {:.3} ms)",
                    round + 1,
                    p.exe.name,
                    p.replica.name,
                    if diskless { "yes" } else { "no" },
                    r.secs,
                    r.p50_ms,
                    r.p99_ms,
                    r.max_ms,
                    r.gets,
                    r.before_p99_ms
                );
                resyncs[si][mi].push(r);
            }
        }
    }

    // The tables.
    println!();
    println!(
        "Over {rounds} round(s); replicas on the same machine (only the primary's CPU counts). Ratios, not absolute figures: the machine is shared."
    );
    println!();
    // Each figure as the median over the rounds, then as the minimum: on
    // a shared machine other work only adds CPU time (a preempted
    // primary's caches refill), so the least disturbed round is the
    // closest to what the writes themselves cost.
    let least = |v: Vec<f64>| v.into_iter().fold(f64::NAN, f64::min);
    for (label, pick) in [
        ("median", &median as &dyn Fn(Vec<f64>) -> f64),
        ("minimum", &least),
    ] {
        println!(
            "CPU per write request (redis-benchmark -t set, then -t zadd, -P 16 -c 50 -r {RANDOM_KEYS}), primary's us/req, 0 -> 2 replicas, {label} over the rounds:"
        );
        println!();
        println!("| primary | replicas | both | ratio | set | ratio | zadd | ratio |");
        println!("|---|---|---|---|---|---|---|---|");
        // ratio[server][both, set, zadd]
        let mut ratio = vec![[f64::NAN; 1 + WRITE_TESTS.len()]; n];
        for (i, p) in primaries.iter().enumerate() {
            let mut row = format!("| {} | {} |", p.exe.name, p.replica.name);
            for (t, r) in ratio[i].iter_mut().enumerate() {
                let zero = pick(writes[i].iter().map(|w| w.0.cpu_us[t]).collect());
                let two = pick(writes[i].iter().map(|w| w.1.cpu_us[t]).collect());
                *r = two / zero;
                row += &format!(" {zero:.3} -> {two:.3} | {:.2} |", *r);
            }
            println!("{row}");
        }
        println!();
        for (t, name) in ["both", "set", "zadd"].iter().enumerate() {
            let r = ratio[0][t];
            println!(
                "zwindow's 2/0 ratio ({label}), {name}: {r:.2} (target: at most 1.20: {})",
                if r <= 1.2 { "met" } else { "NOT met" }
            );
            for (i, p) in primaries.iter().enumerate().skip(1) {
                println!(
                    "  beside {}'s {:.2}: zwindow's ratio / {}'s = {:.2}",
                    p.exe.name,
                    ratio[i][t],
                    p.exe.name,
                    r / ratio[i][t]
                );
            }
        }
        println!();
    }
    println!();
    println!("Full resync of {keys} keys to one new replica, GET probe on the primary (ms):");
    println!();
    println!(
        "| primary | replica | diskless | sync s | GET p50 | GET p99 | GET max | GETs | p99 before |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut sync_secs = vec![vec![f64::NAN; modes.len()]; n];
    for (i, p) in primaries.iter().enumerate() {
        for (mi, &diskless) in modes.iter().enumerate() {
            let v = &resyncs[i][mi];
            let med = |f: fn(&Resync) -> f64| median(v.iter().map(f).collect());
            sync_secs[i][mi] = med(|r| r.secs);
            println!(
                "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {:.3} |",
                p.exe.name,
                p.replica.name,
                if diskless { "yes" } else { "no" },
                sync_secs[i][mi],
                med(|r| r.p50_ms),
                med(|r| r.p99_ms),
                med(|r| r.max_ms),
                med(|r| r.gets as f64),
                med(|r| r.before_p99_ms)
            );
        }
    }
    for (i, p) in primaries.iter().enumerate().skip(1) {
        println!();
        println!(
            "sync time, zwindow / {}: diskless {:.2}, through a file {:.2}",
            p.exe.name,
            sync_secs[0][0] / sync_secs[i][0],
            sync_secs[0][1] / sync_secs[i][1]
        );
    }
    drop(primaries);
    drop(tmp);
}
