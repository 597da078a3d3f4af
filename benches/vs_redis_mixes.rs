//! End-to-end mixes: zwindow against redis-server, same workloads, same
//! in-process client, one run (`cargo bench --bench vs_redis_mixes`).
//!
//! `vs_redis.rs` is the per-command comparison (redis-benchmark driving one
//! command at a time, three servers); this one drives what one command line
//! cannot: request mixes that share keys (a heartbeat's ZADD then ZCOUNT,
//! a live-events window's add/trim/read), other data families and streams.
//!
//! The client is kept out of the measurement as far as it can be: raw RESP
//! over a TcpStream per connection, each batch of `depth` requests encoded
//! into a reused buffer before it is written, replies counted by scanning
//! frame boundaries (never decoded). A batch's latency is the time from its
//! write to its last reply byte, as redis-benchmark measures pipelines.
//! Servers run the workloads in alternation (zwindow, then redis-server, per
//! workload and depth), so a noisy neighbour on the machine hurts both alike.
//!
//! Besides throughput and latency, the server's own CPU time per request is
//! read from `/proc/<pid>/task/*/stat` (utime + stime of every thread before
//! and after), which is far less sensitive to the client sharing the cores
//! than throughput is.
//!
//! Knobs: `VS_REDIS_SECONDS` (per workload and depth, default 3),
//! `VS_REDIS_QUICK=1` (a smoke run: 0.3 s, 8 connections, 100k-member set),
//! `VS_REDIS_CONNS` (default 50), `REDIS_SERVER` (path of redis-server),
//! `VS_REDIS_ONLY` (comma-separated workload names as `Workload::key` spells
//! them, e.g. `heartbeat,zadd`: run only those, for profiling one workload),
//! `VS_REDIS_DEPTHS` (comma-separated pipeline depths, default `1,16`),
//! `VS_REDIS_ZWINDOW_ARGS` (extra zwindow flags, space-separated, e.g.
//! `--threads 2`), `VS_REDIS_ZWINDOW` (another zwindow binary, for A/B runs).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::{
    Server, clk_tck, cpu_ticks, encode, env_depths, env_selects, find_exe, frame_end, rss_kb,
    zwindow_under_test,
};

// ---------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Workload {
    /// ZADD hb:<event> <now> <viewer> + ZCOUNT hb:<event> <now-65000> +inf.
    Heartbeat,
    /// ZADD + ZREMRANGEBYSCORE window trim + ZRANGE last 10 + ZCARD.
    LiveEvents,
    /// ZRANGEBYSCORE big <now-60000> +inf LIMIT 0 50 over the loaded set.
    RangeLastMinute,
    /// ZADD + ZREMRANGEBYSCORE trim:<k> -inf (<now-1000>.
    Trim,
    /// ZADD zadd:<k> <now> <member>.
    Zadd,
    /// SET / GET, for reference.
    GetSet,
    /// PFADD into one of three HyperLogLogs.
    Pfadd,
    /// PFCOUNT of the three (a merge of their registers every time).
    Pfcount3,
    /// GEOSEARCH within 5 km of a random point among 100k, nearest 10.
    Geosearch,
    /// BITCOUNT of a 1 MB bitmap.
    Bitcount,
    /// SORT of a 10k-element list of numbers, first 10.
    Sort,
    /// XADD of a small sensor entry to one of 100 streams.
    Xadd,
    /// XADD then XREADGROUP `>` of new entries, on one of 100 streams.
    Xreadgroup,
}

const WORKLOADS: [Workload; 13] = [
    Workload::Heartbeat,
    Workload::LiveEvents,
    Workload::RangeLastMinute,
    Workload::Trim,
    Workload::Zadd,
    Workload::GetSet,
    Workload::Pfadd,
    Workload::Pfcount3,
    Workload::Geosearch,
    Workload::Bitcount,
    Workload::Sort,
    Workload::Xadd,
    Workload::Xreadgroup,
];

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Heartbeat => "heartbeat ZADD+ZCOUNT",
            Workload::LiveEvents => "live-events ZADD+trim+ZRANGE+ZCARD",
            Workload::RangeLastMinute => "ZRANGEBYSCORE last min (1M)",
            Workload::Trim => "ZADD+ZREMRANGEBYSCORE trim",
            Workload::Zadd => "ZADD",
            Workload::GetSet => "GET/SET",
            Workload::Pfadd => "PFADD",
            Workload::Pfcount3 => "PFCOUNT of 3 keys",
            Workload::Geosearch => "GEOSEARCH 5 km over 100k points",
            Workload::Bitcount => "BITCOUNT of 1 MB",
            Workload::Sort => "SORT of 10k, LIMIT 0 10",
            Workload::Xadd => "XADD",
            Workload::Xreadgroup => "XADD + XREADGROUP >",
        }
    }

    /// Short name for `VS_REDIS_ONLY`.
    fn key(self) -> &'static str {
        match self {
            Workload::Heartbeat => "heartbeat",
            Workload::LiveEvents => "live-events",
            Workload::RangeLastMinute => "range",
            Workload::Trim => "trim",
            Workload::Zadd => "zadd",
            Workload::GetSet => "getset",
            Workload::Pfadd => "pfadd",
            Workload::Pfcount3 => "pfcount",
            Workload::Geosearch => "geosearch",
            Workload::Bitcount => "bitcount",
            Workload::Sort => "sort",
            Workload::Xadd => "xadd",
            Workload::Xreadgroup => "xreadgroup",
        }
    }

    fn is_zset(self) -> bool {
        matches!(
            self,
            Workload::Heartbeat
                | Workload::LiveEvents
                | Workload::RangeLastMinute
                | Workload::Trim
                | Workload::Zadd
        )
    }

    /// The other data families (HLL, GEO, bitmaps, SORT).
    fn is_family(self) -> bool {
        !self.is_zset() && !self.is_stream() && self != Workload::GetSet
    }

    fn is_stream(self) -> bool {
        matches!(self, Workload::Xadd | Workload::Xreadgroup)
    }

    /// Appends the `n`-th request of a connection's stream.
    fn request(self, buf: &mut Vec<u8>, n: u64, rng: &mut Rng, now_ms: u64) {
        let mut num = itoa::Buffer::new();
        let now = now_ms.to_string();
        match self {
            Workload::Heartbeat => {
                // Pairs share the event: the ZCOUNT reads what the ZADD wrote.
                let event = format!("hb:{}", (n / 2).wrapping_mul(2654435761) % 100);
                if n.is_multiple_of(2) {
                    let viewer = format!("viewer:{}", rng.below(10_000));
                    zadd(buf, &event, &now, viewer.as_bytes());
                } else {
                    let since = (now_ms - 65_000).to_string();
                    encode(
                        buf,
                        &[b"ZCOUNT", event.as_bytes(), since.as_bytes(), b"+inf"],
                    );
                }
            }
            Workload::LiveEvents => {
                let key = format!("ev:{}", (n / 4).wrapping_mul(2654435761) % 1000);
                match n % 4 {
                    0 => {
                        let m = format!("contribution:{}", rng.below(1 << 30));
                        zadd(buf, &key, &now, m.as_bytes());
                    }
                    1 => trim_before(buf, &key, now_ms - 2_000),
                    2 => encode(buf, &[b"ZRANGE", key.as_bytes(), b"-10", b"-1"]),
                    _ => encode(buf, &[b"ZCARD", key.as_bytes()]),
                }
            }
            Workload::RangeLastMinute => {
                let since = (now_ms - 60_000).to_string();
                encode(
                    buf,
                    &[
                        b"ZRANGEBYSCORE",
                        b"big",
                        since.as_bytes(),
                        b"+inf",
                        b"LIMIT",
                        b"0",
                        b"50",
                    ],
                );
            }
            Workload::Trim => {
                let key = format!("trim:{}", (n / 2).wrapping_mul(2654435761) % 100);
                if n.is_multiple_of(2) {
                    let m = num.format(rng.below(1 << 40));
                    zadd(buf, &key, &now, m.as_bytes());
                } else {
                    trim_before(buf, &key, now_ms - 1_000);
                }
            }
            Workload::Zadd => {
                let key = format!("zadd:{}", rng.below(1000));
                let m = num.format(rng.below(1_000_000));
                zadd(buf, &key, &now, m.as_bytes());
            }
            Workload::GetSet => {
                let key = format!("key:{}", rng.below(10_000));
                if n.is_multiple_of(2) {
                    encode(buf, &[b"SET", key.as_bytes(), b"0123456789abcdef"]);
                } else {
                    encode(buf, &[b"GET", key.as_bytes()]);
                }
            }
            Workload::Pfadd => {
                let key = format!("hll:{}", n % 3);
                let e = format!("visitor:{}", rng.below(1 << 40));
                encode(buf, &[b"PFADD", key.as_bytes(), e.as_bytes()]);
            }
            Workload::Pfcount3 => encode(buf, &[b"PFCOUNT", b"hll:0", b"hll:1", b"hll:2"]),
            Workload::Geosearch => {
                let (lon, lat) = geo_point(rng);
                encode(
                    buf,
                    &[
                        b"GEOSEARCH",
                        b"geo",
                        b"FROMLONLAT",
                        lon.as_bytes(),
                        lat.as_bytes(),
                        b"BYRADIUS",
                        b"5",
                        b"km",
                        b"ASC",
                        b"COUNT",
                        b"10",
                    ],
                );
            }
            Workload::Bitcount => encode(buf, &[b"BITCOUNT", b"bitmap"]),
            Workload::Sort => encode(buf, &[b"SORT", b"numbers", b"LIMIT", b"0", b"10"]),
            Workload::Xadd => {
                let key = format!("sensors:{}", rng.below(100));
                encode(
                    buf,
                    &[
                        b"XADD",
                        key.as_bytes(),
                        b"*",
                        b"sensor",
                        b"42",
                        b"ts",
                        now.as_bytes(),
                    ],
                );
            }
            Workload::Xreadgroup => {
                // Pairs share the stream: the read finds what the XADD wrote.
                let key = format!("jobs:{}", (n / 2).wrapping_mul(2654435761) % 100);
                if n.is_multiple_of(2) {
                    encode(
                        buf,
                        &[b"XADD", key.as_bytes(), b"*", b"job", now.as_bytes()],
                    );
                } else {
                    encode(
                        buf,
                        &[
                            b"XREADGROUP",
                            b"GROUP",
                            b"workers",
                            b"w1",
                            b"COUNT",
                            b"10",
                            b"STREAMS",
                            key.as_bytes(),
                            b">",
                        ],
                    );
                }
            }
        }
    }
}

/// `ZADD key score member`.
fn zadd(buf: &mut Vec<u8>, key: &str, score: &str, member: &[u8]) {
    encode(buf, &[b"ZADD", key.as_bytes(), score.as_bytes(), member]);
}

/// The window trim: `ZREMRANGEBYSCORE key -inf (cutoff_ms`.
fn trim_before(buf: &mut Vec<u8>, key: &str, cutoff_ms: u64) {
    let cutoff = format!("({cutoff_ms}");
    encode(
        buf,
        &[
            b"ZREMRANGEBYSCORE",
            key.as_bytes(),
            b"-inf",
            cutoff.as_bytes(),
        ],
    );
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------
// Load generation
// ---------------------------------------------------------------------------

#[derive(Default)]
struct ConnResult {
    requests: u64,
    errors: u64,
    first_error: Option<String>,
    latencies_us: Vec<u32>,
}

async fn connection(
    addr: SocketAddr,
    workload: Workload,
    depth: usize,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Result<ConnResult, String> {
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut rng = Rng(seed | 1);
    let mut out = Vec::with_capacity(4096);
    let mut inb: Vec<u8> = Vec::with_capacity(1 << 16);
    let mut res = ConnResult::default();
    let mut n = 0u64;
    while !stop.load(Relaxed) {
        out.clear();
        let now = unix_ms();
        for _ in 0..depth {
            workload.request(&mut out, n, &mut rng, now);
            n += 1;
        }
        let started = Instant::now();
        s.write_all(&out).await.map_err(|e| e.to_string())?;
        inb.clear();
        let (mut pos, mut frames) = (0, 0);
        while frames < depth {
            match frame_end(&inb, pos)? {
                Some(end) => {
                    if inb[pos] == b'-' {
                        res.errors += 1;
                        res.first_error.get_or_insert_with(|| {
                            String::from_utf8_lossy(&inb[pos..end])
                                .trim_end()
                                .to_string()
                        });
                    }
                    pos = end;
                    frames += 1;
                }
                None => {
                    let len = inb.len();
                    inb.resize(len + (1 << 16), 0);
                    let got = s.read(&mut inb[len..]).await.map_err(|e| e.to_string())?;
                    inb.truncate(len + got);
                    if got == 0 {
                        return Err("server closed the connection".into());
                    }
                }
            }
        }
        res.latencies_us
            .push(started.elapsed().as_micros().min(u32::MAX as u128) as u32);
        res.requests += depth as u64;
    }
    Ok(res)
}

struct Measured {
    ops: f64,
    p50: f64,
    p99: f64,
    p999: f64,
    cpu_us_per_req: f64,
    rss_kb: u64,
    errors: u64,
}

fn percentile(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

fn measure(
    rt: &tokio::runtime::Runtime,
    srv: &Server,
    w: Workload,
    depth: usize,
    conns: usize,
    secs: f64,
) -> Measured {
    let cpu0 = cpu_ticks(srv.pid());
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let results: Vec<Result<ConnResult, String>> = rt.block_on(async {
        let tasks: Vec<_> = (0..conns)
            .map(|c| {
                tokio::spawn(connection(
                    srv.addr,
                    w,
                    depth,
                    0x9e37_79b9 * (c as u64 + 1),
                    Arc::clone(&stop),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        stop.store(true, Relaxed);
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
        }
        out
    });
    let elapsed = started.elapsed().as_secs_f64();
    let cpu1 = cpu_ticks(srv.pid());
    let mut lat = Vec::new();
    let (mut requests, mut errors) = (0u64, 0u64);
    for r in results {
        match r {
            Ok(r) => {
                requests += r.requests;
                errors += r.errors;
                if let Some(e) = r.first_error {
                    eprintln!("  {} {}: error reply: {e}", srv.name, w.name());
                }
                lat.extend(r.latencies_us);
            }
            Err(e) => panic!("{} {}: connection failed: {e}", srv.name, w.name()),
        }
    }
    lat.sort_unstable();
    let ticks = cpu1.saturating_sub(cpu0) as f64;
    Measured {
        ops: requests as f64 / elapsed,
        p50: percentile(&lat, 0.5),
        p99: percentile(&lat, 0.99),
        p999: percentile(&lat, 0.999),
        cpu_us_per_req: if requests == 0 {
            0.0
        } else {
            ticks / clk_tck() * 1e6 / requests as f64
        },
        rss_kb: rss_kb(srv.pid()),
        errors,
    }
}

// ---------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------

/// A point in a 2°×2° square around Paris, where the GEO data lives.
fn geo_point(rng: &mut Rng) -> (String, String) {
    let lon = 1.35 + rng.below(2_000_000) as f64 / 1_000_000.0;
    let lat = 47.85 + rng.below(2_000_000) as f64 / 1_000_000.0;
    (format!("{lon:.6}"), format!("{lat:.6}"))
}

/// The other families' data: three HLLs of 100k visitors, 100k GEO
/// points, a 1 MB bitmap, a 10k-number list (`members` scales them down
/// for quick runs).
fn load_families(srv: &Server, members: u64) {
    let scale = (members / 10).max(1000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut batch = |build: &mut dyn FnMut(&mut Vec<u8>, &mut Rng) -> usize| {
        let mut buf = Vec::new();
        let n = build(&mut buf, &mut rng);
        srv.raw(&buf, n)
            .unwrap_or_else(|e| panic!("{}: loading: {e}", srv.name));
    };
    for h in 0..3 {
        for chunk in 0..scale / 1000 {
            batch(&mut |buf, _| {
                let key = format!("hll:{h}");
                let mut owned: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), key.into_bytes()];
                owned.extend((0..1000).map(|i| format!("visitor:{h}:{chunk}:{i}").into_bytes()));
                let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
                encode(buf, &args);
                1
            });
        }
    }
    for chunk in 0..scale / 1000 {
        batch(&mut |buf, rng| {
            let mut owned: Vec<Vec<u8>> = vec![b"GEOADD".to_vec(), b"geo".to_vec()];
            for i in 0..1000 {
                let (lon, lat) = geo_point(rng);
                owned.push(lon.into_bytes());
                owned.push(lat.into_bytes());
                owned.push(format!("place:{chunk}:{i}").into_bytes());
            }
            let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
            encode(buf, &args);
            1
        });
    }
    batch(&mut |buf, _| {
        let bits = vec![0x5au8; 1 << 20];
        encode(buf, &[b"SET", b"bitmap", &bits]);
        1
    });
    for _ in 0..10 {
        batch(&mut |buf, rng| {
            let mut owned: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), b"numbers".to_vec()];
            owned.extend((0..1000).map(|_| rng.below(1_000_000_000).to_string().into_bytes()));
            let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
            encode(buf, &args);
            1
        });
    }
}

/// `used_memory` from INFO memory: each server's own count of the bytes
/// its allocator hands out.
fn used_memory(srv: &Server) -> u64 {
    srv.info("memory", "used_memory")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// The streams' setup: consumer groups for the XREADGROUP workload, then
/// `entries` sensor entries appended to one stream, returning the bytes per
/// entry that took by the server's own `used_memory`.
fn load_streams(srv: &Server, entries: u64) -> f64 {
    for k in 0..100 {
        let key = format!("jobs:{k}");
        srv.command(&[
            b"XGROUP",
            b"CREATE",
            key.as_bytes(),
            b"workers",
            b"$",
            b"MKSTREAM",
        ])
        .unwrap_or_else(|e| panic!("{}: XGROUP CREATE: {e}", srv.name));
    }
    let before = used_memory(srv);
    let mut sent = 0;
    while sent < entries {
        let n = (entries - sent).min(1000);
        let mut buf = Vec::new();
        for _ in 0..n {
            encode(
                &mut buf,
                &[
                    b"XADD",
                    b"sensor",
                    b"*",
                    b"sensor",
                    b"42",
                    b"ts",
                    b"1790000000000",
                ],
            );
        }
        srv.raw(&buf, n as usize)
            .unwrap_or_else(|e| panic!("{}: loading the stream: {e}", srv.name));
        sent += n;
    }
    used_memory(srv).saturating_sub(before) as f64 / entries as f64
}

/// Loads `members` 12-byte members with millisecond scores spread over the
/// last hour into `big`, 1000 per ZADD, 100 ZADDs per round trip.
fn load_big(srv: &Server, members: u64) {
    let now = unix_ms();
    let per_cmd = 1000u64;
    let per_trip = 100u64;
    let mut i = 0u64;
    while i < members {
        let mut buf = Vec::new();
        let mut cmds = 0;
        while cmds < per_trip && i < members {
            let end = (i + per_cmd).min(members);
            let mut owned: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), b"big".to_vec()];
            for j in i..end {
                let score = now - 3_600_000 + j * 3_600_000 / members;
                owned.push(score.to_string().into_bytes());
                owned.push(format!("m{j:011}").into_bytes());
            }
            let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
            encode(&mut buf, &args);
            cmds += 1;
            i = end;
        }
        srv.raw(&buf, cmds as usize)
            .unwrap_or_else(|e| panic!("{}: loading big: {e}", srv.name));
    }
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let quick = std::env::var("VS_REDIS_QUICK").is_ok_and(|v| v == "1");
    let secs: f64 = std::env::var("VS_REDIS_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 0.3 } else { 3.0 });
    let conns: usize = std::env::var("VS_REDIS_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 8 } else { 50 });
    let big_members: u64 = if quick { 100_000 } else { 1_000_000 };
    let depths = env_depths();
    let workloads: Vec<Workload> = WORKLOADS
        .into_iter()
        .filter(|w| env_selects(w.key()))
        .collect();

    let (zwindow_exe, zwindow_args) = zwindow_under_test();
    let mut servers = vec![Server::start("zwindow", &zwindow_exe, &zwindow_args)];
    match find_exe("REDIS_SERVER", "redis-server") {
        Some(exe) => servers.push(Server::start(
            "redis",
            &exe,
            &[
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ]
            .map(String::from),
        )),
        None => println!("redis-server not on PATH: measuring zwindow alone"),
    }
    println!(
        "vs_redis_mixes: {conns} connections, {secs} s per workload and depth, depths {depths:?}, CLK_TCK {}, zwindow {zwindow_exe} (pid {})",
        clk_tck(),
        servers[0].pid()
    );

    // Memory: one key with `big_members` members.
    let mut rss = Vec::new();
    for s in &servers {
        let before = rss_kb(s.pid());
        let t = Instant::now();
        load_big(s, big_members);
        if workloads.iter().any(|w| w.is_family()) {
            load_families(s, big_members);
        }
        if workloads.iter().any(|w| w.is_stream()) {
            let per_entry = load_streams(s, big_members);
            println!(
                "{:8} {big_members} entries `XADD sensor * sensor 42 ts 1790000000000`: {per_entry:.1} bytes per entry (used_memory)",
                s.name
            );
        }
        let after = rss_kb(s.pid());
        let card = s.command(&[b"ZCARD", b"big"]).expect("ZCARD big");
        println!(
            "{:8} loaded {big_members} members into one key in {:.2} s ({}): RSS {before} kB -> {after} kB",
            s.name,
            t.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&card).trim_end()
        );
        rss.push((before, after));
    }
    if let [z, r] = rss[..] {
        println!(
            "RSS after {big_members} members: zwindow {} kB, redis {} kB, ratio {:.2} (growth {} kB vs {} kB, ratio {:.2})",
            z.1,
            r.1,
            z.1 as f64 / r.1 as f64,
            z.1.saturating_sub(z.0),
            r.1.saturating_sub(r.0),
            z.1.saturating_sub(z.0) as f64 / r.1.saturating_sub(r.0).max(1) as f64
        );
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!();
    println!(
        "{:36} {:>2} | {:>9} {:>7} {:>7} {:>7} {:>7} {:>8} | {:>9} {:>7} {:>7} {:>7} {:>7} {:>8} | {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}",
        "workload",
        "P",
        "z ops/s",
        "p50ms",
        "p99ms",
        "p99.9",
        "cpu us",
        "RSS kB",
        "r ops/s",
        "p50ms",
        "p99ms",
        "p99.9",
        "cpu us",
        "RSS kB",
        "ops",
        "p50",
        "p99",
        "p99.9",
        "cpu",
        "RSS"
    );
    let mut cpu_ratios: Vec<(usize, f64)> = Vec::new();
    let mut family_ratios: Vec<(usize, f64)> = Vec::new();
    let mut stream_ratios: Vec<(usize, f64)> = Vec::new();
    for &w in &workloads {
        for &depth in &depths {
            let m: Vec<Measured> = servers
                .iter()
                .map(|s| measure(&rt, s, w, depth, conns, secs))
                .collect();
            let cell = |m: &Measured| {
                format!(
                    "{:>9.0} {:>7.3} {:>7.3} {:>7.3} {:>7.2} {:>8}",
                    m.ops, m.p50, m.p99, m.p999, m.cpu_us_per_req, m.rss_kb
                )
            };
            let z = cell(&m[0]);
            let (r, ratio) = match m.get(1) {
                Some(r) => {
                    let q = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
                    let cpu = q(m[0].cpu_us_per_req, r.cpu_us_per_req);
                    if w.is_zset() && cpu.is_finite() && cpu > 0.0 {
                        cpu_ratios.push((depth, cpu));
                    }
                    if w.is_family() && cpu.is_finite() && cpu > 0.0 {
                        family_ratios.push((depth, cpu));
                    }
                    if w.is_stream() && cpu.is_finite() && cpu > 0.0 {
                        stream_ratios.push((depth, cpu));
                    }
                    (
                        cell(r),
                        format!(
                            "{:>5.2} {:>5.2} {:>5.2} {:>5.2} {:>5.2} {:>5.2}",
                            q(m[0].ops, r.ops),
                            q(m[0].p50, r.p50),
                            q(m[0].p99, r.p99),
                            q(m[0].p999, r.p999),
                            cpu,
                            q(m[0].rss_kb as f64, r.rss_kb as f64)
                        ),
                    )
                }
                None => (String::new(), String::new()),
            };
            println!("{:36} {depth:>2} | {z} | {r} | {ratio}", w.name());
            for (s, m) in servers.iter().zip(&m) {
                if m.errors > 0 {
                    println!(
                        "  WARNING: {} answered {} requests with errors",
                        s.name, m.errors
                    );
                }
            }
        }
    }
    if servers.len() == 2 {
        println!();
        for (what, ratios) in [
            ("sorted-set workloads", &cpu_ratios),
            ("HLL/GEO/bitmap/SORT workloads", &family_ratios),
            ("stream workloads", &stream_ratios),
        ] {
            for &depth in &depths {
                let v: Vec<f64> = ratios
                    .iter()
                    .filter(|(d, _)| *d == depth)
                    .map(|(_, r)| *r)
                    .collect();
                if !v.is_empty() {
                    let g = (v.iter().map(|r| r.ln()).sum::<f64>() / v.len() as f64).exp();
                    println!(
                        "geometric mean of zwindow/redis server CPU per request, {what}, depth {depth}: {g:.3} ({} workloads)",
                        v.len()
                    );
                }
            }
        }
    }
    println!(
        "(ratios are zwindow / redis: ops > 1 is faster, latency, cpu and RSS < 1 are better)"
    );
}
