//! The window sweeper under load: 1,000,000 members aging out across 10,000
//! idle keys, while a concurrent client measures its command latency.
//!
//! `cargo bench --bench window_sweep` starts the release `zwindow` with a
//! frozen clock, loads the keys, measures a probe client's latency for a
//! baseline period, then moves the clock past every member's deadline and
//! measures the same probe while the sweeper empties the keys. It prints the
//! sweep time and the probe's p50/p99/p99.9 in both phases.
//! `WINDOW_SWEEP_KEYS` and `WINDOW_SWEEP_MEMBERS` shrink the run.

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

fn start_server() -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args([
            "--port",
            "0",
            "--enable-debug-command",
            "yes",
            "--zwindow",
            "sweep:*=60000:ms",
            "--log-level",
            "warn,zwindow::server=info",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start zwindow");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let port = loop {
        let line = lines.next().expect("zwindow exited").unwrap();
        if let Some(rest) = line.split("listening on ").nth(1) {
            let addr = rest.split([',', ' ']).next().unwrap();
            break addr.rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, port)
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

fn main() {
    let keys = env_or("WINDOW_SWEEP_KEYS", 10_000);
    let members = env_or("WINDOW_SWEEP_MEMBERS", 100);
    let (mut child, port) = start_server();
    let mut c = Conn::open(port);
    c.cmd(&format!("DEBUG CLOCK FREEZE {T0_MS}"));

    let load = Instant::now();
    let mut batch = Vec::new();
    for k in 0..keys {
        let key = format!("sweep:{k}");
        let mut args: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), key.into_bytes()];
        for m in 0..members {
            args.push((T0_MS - 1000 + m as u64).to_string().into_bytes());
            args.push(format!("member:{m:06}").into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        encode(&refs, &mut batch);
        if k % 100 == 99 || k == keys - 1 {
            c.w.write_all(&batch).unwrap();
            for _ in 0..(k % 100 + 1) {
                read_reply(&mut c.r);
            }
            batch.clear();
        }
    }
    println!(
        "loaded {} members in {keys} keys in {:?}",
        keys * members,
        load.elapsed()
    );

    let stop = Arc::new(AtomicBool::new(false));
    let base = probe(port, stop.clone());
    std::thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    let baseline = base.join().unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let during = probe(port, stop.clone());
    std::thread::sleep(Duration::from_millis(100));
    let sweep = Instant::now();
    // Every loaded member is now older than the 60 s window.
    c.cmd("DEBUG CLOCK ADVANCE 61000");
    loop {
        let reply = c.cmd("INFO windows");
        let text = String::from_utf8_lossy(&reply);
        let swept: usize = text
            .lines()
            .find_map(|l| l.strip_prefix("window_expired_swept:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if swept >= keys * members || sweep.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let took = sweep.elapsed();
    stop.store(true, Ordering::Relaxed);
    let sweeping = during.join().unwrap();

    println!(
        "swept {} members in {took:?} ({:.0} members/s)",
        keys * members,
        (keys * members) as f64 / took.as_secs_f64()
    );
    report("probe baseline", &baseline);
    report("probe sweeping", &sweeping);
    let delta =
        percentile(&sweeping, 0.99).as_secs_f64() - percentile(&baseline, 0.99).as_secs_f64();
    println!("p99 change while sweeping: {:+.3} ms", delta * 1e3);
    let _ = child.kill();
    let _ = child.wait();
}
