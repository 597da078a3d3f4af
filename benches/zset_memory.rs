//! Heap cost of the sorted-set encodings, compared with redis-server.
//!
//! The server's counting allocator (`zwindow::alloc`) measures exactly the
//! bytes our structures request. If `redis-server` is on PATH, the same data is loaded into a
//! private instance over a pipelined RESP connection and its `used_memory`
//! delta and `MEMORY USAGE` are reported next to ours.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, encode};
use zwindow::types::zset::{AddFlags, Limits, NotNan, ZSet};

#[path = "baseline/redis_zset.rs"]
#[allow(dead_code)]
mod redis_zset;

/// The server's own allocator, which counts the bytes requested of it
/// (`src/alloc.rs`): what a structure holds is the counter's growth while
/// it is built.
#[global_allocator]
static GLOBAL: zwindow::alloc::CountingMimalloc = zwindow::alloc::CountingMimalloc;

fn live() -> usize {
    zwindow::alloc::allocated().unwrap_or(0) as usize
}

const BIG: usize = 1_000_000;
const SMALL_SETS: usize = 100_000;
const SMALL_LEN: usize = 10;
const T0: u64 = 1_700_000_000_000;

fn member(i: usize) -> String {
    format!("m:{i:010}")
}

fn ours_big() -> (f64, usize, Duration) {
    let before = live();
    let t = Instant::now();
    let mut z = ZSet::new();
    for i in 0..BIG {
        let m = member(i);
        z.add(
            m.as_bytes(),
            NotNan::new((T0 + i as u64) as f64).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    let el = t.elapsed();
    let used = live() - before;
    assert_eq!(z.len(), BIG);
    let est = z.mem_usage();
    drop(z);
    (used as f64 / BIG as f64, est, el)
}

fn ours_big_random_order() -> f64 {
    // Same data inserted in a scrambled order: nodes split instead of
    // filling sequentially, the worst realistic fill factor.
    let before = live();
    let mut z = ZSet::new();
    let mut x: u64 = 12345;
    for _ in 0..BIG {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (x >> 33) as usize % (BIG * 4);
        let m = member(i);
        z.add(
            m.as_bytes(),
            NotNan::new((T0 + i as u64) as f64).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    let used = live() - before;
    used as f64 / z.len() as f64
}

/// The Redis port (`baseline/redis_zset.rs`) holding the same 1M members:
/// Redis's own shape, counted by the same allocator.
fn port_big() -> f64 {
    let before = live();
    let mut z = redis_zset::RedisZSet::default();
    for i in 0..BIG {
        z.add(member(i).as_bytes(), (T0 + i as u64) as f64);
    }
    let used = live() - before;
    assert_eq!(z.len(), BIG);
    used as f64 / BIG as f64
}

fn ours_small() -> (f64, f64) {
    let before = live();
    let mut sets = Vec::with_capacity(SMALL_SETS);
    let vec_bytes = live() - before;
    for s in 0..SMALL_SETS {
        let mut z = ZSet::new();
        for j in 0..SMALL_LEN {
            let m = member(j);
            z.add(
                m.as_bytes(),
                NotNan::new((T0 + (s * SMALL_LEN + j) as u64) as f64).unwrap_or_default(),
                AddFlags::default(),
                Limits::default(),
            )
            .ok();
        }
        sets.push(z);
    }
    let used = live() - before;
    let per_heap = (used - vec_bytes) as f64 / SMALL_SETS as f64;
    let per_total = used as f64 / SMALL_SETS as f64;
    drop(sets);
    (per_heap, per_total)
}

/// Deadline (ms) for member `i`: spread so members expire at distinct
/// times, as ZPEXPIREAT over a window would set them.
fn deadline(i: usize) -> u64 {
    T0 + 3_600_000 + (i as u64 * 7919) % 1_000_000
}

/// Bytes per member of one set of `n` 12-byte members with ms scores,
/// with or without a TTL on every member.
fn ours_big_ttl(n: usize, ttl: bool) -> f64 {
    let before = live();
    let mut z = ZSet::new();
    for i in 0..n {
        let m = member(i);
        z.add(
            m.as_bytes(),
            NotNan::new((T0 + i as u64) as f64).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
        if ttl {
            z.set_expire(m.as_bytes(), deadline(i));
        }
    }
    let used = live() - before;
    assert_eq!(z.len(), n);
    used as f64 / n as f64
}

const TTL_SETS: usize = 10_000;
const TTL_LEN: usize = 100;

/// Bytes per member over `TTL_SETS` sets of `TTL_LEN` members (the compact
/// encoding at the default limits), with or without a TTL on every member.
fn ours_small_ttl(ttl: bool) -> f64 {
    let before = live();
    let mut sets = Vec::with_capacity(TTL_SETS);
    for s in 0..TTL_SETS {
        let mut z = ZSet::new();
        for j in 0..TTL_LEN {
            let m = member(j);
            z.add(
                m.as_bytes(),
                NotNan::new((T0 + (s * TTL_LEN + j) as u64) as f64).unwrap_or_default(),
                AddFlags::default(),
                Limits::default(),
            )
            .ok();
            if ttl {
                z.set_expire(m.as_bytes(), deadline(s * TTL_LEN + j));
            }
        }
        sets.push(z);
    }
    let used = live() - before;
    used as f64 / (TTL_SETS * TTL_LEN) as f64
}

/// A private redis-server and one connection to it, for pipelined loads.
struct Redis {
    conn: BufReader<TcpStream>,
    // Last, so the connection closes before the server is killed.
    _srv: Server,
}

impl Redis {
    fn start() -> Option<Redis> {
        let args = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"].map(String::from);
        let srv = Server::try_start("redis-server", "redis-server", &args)?;
        let mut r = Redis {
            conn: BufReader::new(TcpStream::connect(srv.addr).ok()?),
            _srv: srv,
        };
        r.cmd(&["FLUSHALL"]);
        Some(r)
    }

    fn send(&mut self, args: &[&[u8]], out: &mut Vec<u8>) {
        encode(out, args);
    }

    fn read_reply(&mut self) -> String {
        let mut line = String::new();
        self.conn.read_line(&mut line).ok();
        if let Some(n) = line
            .strip_prefix('$')
            .and_then(|n| n.trim().parse::<usize>().ok())
        {
            let mut buf = vec![0; n + 2];
            self.conn.read_exact(&mut buf).ok();
            return String::from_utf8_lossy(&buf[..n]).into_owned();
        }
        line.trim().to_string()
    }

    fn cmd(&mut self, args: &[&str]) -> String {
        let mut out = Vec::new();
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.send(&a, &mut out);
        self.conn.get_mut().write_all(&out).ok();
        self.read_reply()
    }

    fn used_memory(&mut self) -> usize {
        let info = self.cmd(&["INFO", "memory"]);
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Sends commands built by `build(i, out)` for i in 0..n, 1000 per batch.
    fn pipeline(&mut self, n: usize, mut build: impl FnMut(&mut Self, usize, &mut Vec<u8>)) {
        let mut i = 0;
        while i < n {
            let end = (i + 1000).min(n);
            let mut out = Vec::new();
            for k in i..end {
                build(self, k, &mut out);
            }
            self.conn.get_mut().write_all(&out).ok();
            for _ in i..end {
                self.read_reply();
            }
            i = end;
        }
    }
}

fn main() {
    // Criterion-style flags from `cargo bench` are ignored.
    if std::env::var_os("ZSET_MEMORY_ADDS_ONLY").is_some() {
        // A fixed ZADD workload without TTLs, for instruction counts
        // (`valgrind --tool=callgrind`) that a loaded machine cannot skew.
        let (pm, _, took) = ours_big();
        let rnd = ours_big_random_order();
        let (small, _) = ours_small();
        println!("{pm:.1} B/member in {took:.2?}; scrambled {rnd:.1}; small {small:.1} B/set");
        return;
    }
    let (ours_pm, est, took) = ours_big();
    let rnd = ours_big_random_order();
    let (small_heap, small_total) = ours_small();
    println!(
        "zwindow: 1M members, sequential scores: {ours_pm:.1} B/member (mem_usage() says {:.1}), built in {took:.2?}",
        est as f64 / BIG as f64
    );
    println!("zwindow: 1M-ish members, scrambled insert order: {rnd:.1} B/member");
    println!(
        "redis port (skiplist + dict, same allocator): 1M members: {:.1} B/member",
        port_big()
    );
    println!(
        "zwindow: {SMALL_SETS} sets x {SMALL_LEN}: {small_heap:.1} B/set heap, {small_total:.1} B/set incl. the Vec<ZSet> slot"
    );

    let (plain, with) = (ours_big_ttl(BIG, false), ours_big_ttl(BIG, true));
    println!(
        "zwindow: member TTLs, 1M x 12B members: {plain:.1} B/member without, {with:.1} with: {:.1} B per member TTL",
        with - plain
    );
    let (plain, with) = (ours_small_ttl(false), ours_small_ttl(true));
    println!(
        "zwindow: member TTLs, {TTL_SETS} sets x {TTL_LEN}: {plain:.1} B/member without, {with:.1} with: {:.1} B per member TTL",
        with - plain
    );
    if std::env::var_os("ZSET_MEMORY_NO_REDIS").is_some() {
        return;
    }

    let Some(mut r) = Redis::start() else {
        println!("redis-server not available: skipping comparison");
        return;
    };
    let base = r.used_memory();
    r.pipeline(BIG, |r, i, out| {
        let s = (T0 + i as u64).to_string();
        let m = member(i);
        r.send(&[b"ZADD", b"big", s.as_bytes(), m.as_bytes()], out);
    });
    let after = r.used_memory();
    let redis_pm = (after - base) as f64 / BIG as f64;
    let mu: f64 = r
        .cmd(&["MEMORY", "USAGE", "big", "SAMPLES", "0"])
        .trim_start_matches(':')
        .parse()
        .unwrap_or(0.0);
    r.cmd(&["DEL", "big"]);
    let base = r.used_memory();
    r.pipeline(SMALL_SETS, |r, s, out| {
        let key = format!("s:{s}");
        let mut args: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), key.into_bytes()];
        for j in 0..SMALL_LEN {
            args.push((T0 + (s * SMALL_LEN + j) as u64).to_string().into_bytes());
            args.push(member(j).into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        r.send(&refs, out);
    });
    let after = r.used_memory();
    let redis_small = (after - base) as f64 / SMALL_SETS as f64;
    let mu_small: f64 = r
        .cmd(&["MEMORY", "USAGE", "s:0"])
        .trim_start_matches(':')
        .parse()
        .unwrap_or(0.0);
    println!();
    println!(
        "| case                         | zwindow | redis used_memory | redis MEMORY USAGE | ours/redis |"
    );
    println!(
        "|------------------------------|---------|-------------------|--------------------|------------|"
    );
    println!(
        "| 1M x 12B members (B/member)  | {ours_pm:7.1} | {redis_pm:17.1} | {:18.1} | {:10.2} |",
        mu / BIG as f64,
        ours_pm / redis_pm
    );
    println!(
        "| 100k sets x 10 (B/set)       | {small_heap:7.1} | {redis_small:17.1} | {mu_small:18.1} | {:10.2} |",
        small_heap / redis_small
    );
    println!(
        "(redis per-set figures include the key, its dict entry and robj; ours exclude the key)"
    );
}
