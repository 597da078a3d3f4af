//! Active expiry under load: 1,000,000 members or fields leaving 10,000
//! idle keys by each of zwindow's routes — a window rule aging members out,
//! sorted-set member TTLs (ZPEXPIREAT) and hash field TTLs (HPEXPIREAT) —
//! while a concurrent client measures its command latency.
//!
//! `cargo bench --bench window_sweep` starts the release `zwindow` with a
//! frozen clock for each route, loads the keys, measures a probe client's
//! latency for a baseline period, then moves the clock past every deadline
//! and measures the same probe while the sweeper empties the keys. It prints
//! the sweep time and the probe's p50/p99/p99.9 in both phases, and for the
//! TTL routes the bytes a TTL costs per member or field (`used_memory` with
//! TTLs less without, over the count). With `ZWINDOW_REDIS8_SERVER` set (a
//! Redis 8.0 `redis-server`, as `.ci/test` builds), the field route also runs
//! against it in real time, for its expiry time and memory per TTL.
//! `WINDOW_SWEEP_KEYS` and `WINDOW_SWEEP_MEMBERS` shrink the run;
//! `WINDOW_SWEEP_ROUTES` picks routes (`window,members,fields`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const T0_MS: u64 = 1_800_000_000_000;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Reads one simple reply line (these benches only get `:n`, `+OK`, `$n`
/// with a short body, or small arrays of bulks) and returns it.
fn read_reply(r: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("read");
    match line.first() {
        Some(b'$') => {
            let n: i64 = std::str::from_utf8(&line[1..line.len() - 2])
                .unwrap()
                .parse()
                .unwrap();
            if n >= 0 {
                let mut body = vec![0; n as usize + 2];
                r.read_exact(&mut body).expect("read bulk");
                line.extend(body);
            }
        }
        Some(b'*') => {
            let n: i64 = std::str::from_utf8(&line[1..line.len() - 2])
                .unwrap()
                .parse()
                .unwrap();
            for _ in 0..n.max(0) {
                line.extend(read_reply(r));
            }
        }
        _ => {}
    }
    line
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let w = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        w.set_nodelay(true).unwrap();
        let r = BufReader::new(w.try_clone().unwrap());
        Conn { w, r }
    }

    fn cmd(&mut self, line: &str) -> Vec<u8> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let mut buf = Vec::new();
        encode(&args, &mut buf);
        self.w.write_all(&buf).unwrap();
        read_reply(&mut self.r)
    }
}

/// Starts a server and reads its log until `ready` finds the port.
fn start(program: &str, args: &[&str], ready: impl Fn(&str) -> Option<u16>) -> (Child, u16) {
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start server");
    // zwindow logs on stderr, redis-server on stdout.
    let out: Box<dyn Read + Send> = if program.ends_with("zwindow") {
        Box::new(child.stderr.take().unwrap())
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let mut lines = BufReader::new(out).lines();
    let port = loop {
        let line = lines.next().expect("server exited").unwrap();
        if let Some(port) = ready(&line) {
            break port;
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, port)
}

fn start_zwindow() -> (Child, u16) {
    start(
        env!("CARGO_BIN_EXE_zwindow"),
        &[
            "--port",
            "0",
            "--enable-debug-command",
            "yes",
            "--zwindow",
            "sweep:*=60000:ms",
            "--save",
            "",
            "--log-level",
            "warn,zwindow::server=info",
        ],
        |line| {
            let rest = line.split("listening on ").nth(1)?;
            let addr = rest.split([',', ' ']).next()?;
            addr.rsplit(':').next()?.parse().ok()
        },
    )
}

/// A Redis 8.0 server on a free port (it logs no port, so one is picked).
fn start_redis8(program: &str) -> (Child, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = port.to_string();
    start(
        program,
        &["--port", &p, "--save", "", "--appendonly", "no"],
        |line| line.contains("Ready to accept connections").then_some(port),
    )
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Runs the probe until `stop`; returns its latencies, sorted.
fn probe(port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let mut c = Conn::open(port);
        let mut lat = Vec::new();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            c.cmd(&format!("ZADD probe:{} {i} m{}", i % 64, i % 1000));
            c.cmd(&format!("ZCOUNT probe:{} -inf +inf", i % 64));
            lat.push(t.elapsed() / 2);
            i += 1;
        }
        lat.sort();
        lat
    })
}

fn report(name: &str, lat: &[Duration]) {
    println!(
        "{name:<16} {:>9} cmds  p50 {:>8.1?}  p99 {:>8.1?}  p99.9 {:>8.1?}",
        lat.len() * 2,
        percentile(lat, 0.50),
        percentile(lat, 0.99),
        percentile(lat, 0.999)
    );
}

/// One INFO field as a number (0 if absent).
fn info_num(c: &mut Conn, section: &str, name: &str) -> u64 {
    let reply = c.cmd(&format!("INFO {section}"));
    String::from_utf8_lossy(&reply)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// How members or fields leave their keys.
#[derive(Clone, Copy, PartialEq)]
enum Route {
    /// `sweep:*` keys under a 60 s window rule.
    Window,
    /// Sorted-set member TTLs.
    Members,
    /// Hash field TTLs.
    Fields,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Window => "window",
            Route::Members => "members",
            Route::Fields => "fields",
        }
    }

    /// The counter of removed members or fields, as (section, field).
    fn counter(self, redis: bool) -> (&'static str, &'static str) {
        match (self, redis) {
            (_, true) => ("stats", "expired_subkeys"),
            (Route::Window, _) => ("windows", "window_expired_swept"),
            (Route::Members, _) => ("windows", "expired_members"),
            (Route::Fields, _) => ("windows", "expired_fields"),
        }
    }
}

/// Loads `keys` keys of `members` each; with `ttl_at`, every one gets that
/// deadline (Unix ms) plus its key's share of a one-second spread.
fn load(c: &mut Conn, route: Route, keys: usize, members: usize, ttl_at: Option<u64>) {
    let mut batch = Vec::new();
    let mut pending = 0;
    for k in 0..keys {
        let key = match route {
            Route::Window => format!("sweep:{k}"),
            _ => format!("ttl:{k}"),
        };
        let mut args: Vec<Vec<u8>> = vec![
            if route == Route::Fields {
                "HSET"
            } else {
                "ZADD"
            }
            .into(),
            key.clone().into_bytes(),
        ];
        for m in 0..members {
            let name = format!("member:{m:06}").into_bytes();
            let value = (T0_MS - 1000 + m as u64).to_string().into_bytes();
            if route == Route::Fields {
                args.extend([name, value]);
            } else {
                args.extend([value, name]);
            }
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        encode(&refs, &mut batch);
        pending += 1;
        if let Some(at) = ttl_at {
            let cmd = if route == Route::Fields {
                "HPEXPIREAT"
            } else {
                "ZPEXPIREAT"
            };
            let word = if route == Route::Fields {
                "FIELDS"
            } else {
                "MEMBERS"
            };
            let mut args: Vec<Vec<u8>> = vec![
                cmd.into(),
                key.into_bytes(),
                (at + (k % 1000) as u64).to_string().into_bytes(),
                word.into(),
                members.to_string().into_bytes(),
            ];
            args.extend((0..members).map(|m| format!("member:{m:06}").into_bytes()));
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            encode(&refs, &mut batch);
            pending += 1;
        }
        if k % 100 == 99 || k == keys - 1 {
            c.w.write_all(&batch).unwrap();
            for _ in 0..pending {
                read_reply(&mut c.r);
            }
            batch.clear();
            pending = 0;
        }
    }
}

/// Bytes per member or field a TTL costs on the server at `port`: memory
/// with TTLs less without, for the same keys.
fn ttl_cost(c: &mut Conn, route: Route, keys: usize, members: usize, at: u64) -> f64 {
    c.cmd("FLUSHALL");
    let empty = info_num(c, "memory", "used_memory");
    load(c, route, keys, members, None);
    let plain = info_num(c, "memory", "used_memory") - empty;
    c.cmd("FLUSHALL");
    let empty = info_num(c, "memory", "used_memory");
    load(c, route, keys, members, Some(at));
    let with = info_num(c, "memory", "used_memory") - empty;
    let n = (keys * members) as f64;
    println!(
        "  used_memory per {}: {:.1} bytes without TTLs, {:.1} with",
        route.name(),
        plain as f64 / n,
        with as f64 / n
    );
    (with as f64 - plain as f64) / n
}

/// Waits until `route`'s counter reaches `total` (at most 60 s).
fn wait_removed(c: &mut Conn, route: Route, redis: bool, total: u64) -> u64 {
    let (section, name) = route.counter(redis);
    let start = Instant::now();
    loop {
        let n = info_num(c, section, name);
        if n >= total || start.elapsed() > Duration::from_secs(60) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn run_zwindow(route: Route, keys: usize, members: usize) {
    let total = (keys * members) as u64;
    let (mut child, port) = start_zwindow();
    let mut c = Conn::open(port);
    c.cmd(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    let deadline = T0_MS + 1000;
    if route != Route::Window {
        println!(
            "{}: a TTL costs {:.1} bytes per {} (used_memory with TTLs less without)",
            route.name(),
            ttl_cost(&mut c, route, keys, members, deadline),
            if route == Route::Fields {
                "field"
            } else {
                "member"
            },
        );
    } else {
        load(&mut c, route, keys, members, None);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let base = probe(port, stop.clone());
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let baseline = base.join().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let during = probe(port, stop.clone());
    std::thread::sleep(Duration::from_millis(100));
    let sweep = Instant::now();
    // Past every member's window (60 s) or deadline (T0 + 1 s + spread).
    c.cmd("DEBUG CLOCK ADVANCE 61000");
    let removed = wait_removed(&mut c, route, false, total);
    let took = sweep.elapsed();
    stop.store(true, Ordering::Relaxed);
    let sweeping = during.join().unwrap();
    let left = c.cmd("DBSIZE");

    println!(
        "{}: removed {removed} of {total} in {took:?} ({:.0}/s); DBSIZE after {}",
        route.name(),
        removed as f64 / took.as_secs_f64(),
        String::from_utf8_lossy(&left).trim()
    );
    report("probe baseline", &baseline);
    report("probe sweeping", &sweeping);
    let delta =
        percentile(&sweeping, 0.99).as_secs_f64() - percentile(&baseline, 0.99).as_secs_f64();
    println!("p99 change while sweeping: {:+.3} ms", delta * 1e3);
    let _ = child.kill();
    let _ = child.wait();
}

/// Hash field TTLs on Redis 8.0, in real time: memory per TTL, and how
/// long after the last deadline its active expiry took to remove them all.
fn run_redis8(program: &str, keys: usize, members: usize) {
    let total = (keys * members) as u64;
    let (mut child, port) = start_redis8(program);
    let mut c = Conn::open(port);
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    // Far enough ahead that loading finishes first.
    let cost = ttl_cost(&mut c, Route::Fields, keys, members, now() + 3_600_000);
    println!("redis 8.0 fields: a TTL costs {cost:.1} bytes per field");
    c.cmd("FLUSHALL");
    c.cmd("CONFIG RESETSTAT");
    let deadline = now() + 30_000;
    load(&mut c, Route::Fields, keys, members, Some(deadline));
    let last = deadline + 999;
    let stop = Arc::new(AtomicBool::new(false));
    let during = probe(port, stop.clone());
    std::thread::sleep(Duration::from_millis(last.saturating_sub(now())));
    let sweep = Instant::now();
    let removed = wait_removed(&mut c, Route::Fields, true, total);
    let took = sweep.elapsed();
    stop.store(true, Ordering::Relaxed);
    let lat = during.join().unwrap();
    println!(
        "redis 8.0 fields: removed {removed} of {total} within {took:?} after the last deadline"
    );
    report("probe (redis 8.0)", &lat);
    let _ = child.kill();
    let _ = child.wait();
}

fn main() {
    let keys = env_or("WINDOW_SWEEP_KEYS", 10_000);
    let members = env_or("WINDOW_SWEEP_MEMBERS", 100);
    let routes = std::env::var("WINDOW_SWEEP_ROUTES").unwrap_or("window,members,fields".into());
    for route in [Route::Window, Route::Members, Route::Fields] {
        if routes.split(',').any(|r| r == route.name()) {
            run_zwindow(route, keys, members);
        }
    }
    if routes.split(',').any(|r| r == "fields")
        && let Ok(redis8) = std::env::var("ZWINDOW_REDIS8_SERVER")
    {
        run_redis8(&redis8, keys, members);
    }
}
