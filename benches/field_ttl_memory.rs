//! What a hash field TTL costs in memory: 10,000 hashes of 100 fields
//! (names `f0`…`f99`, 4-byte values), 1M fields in all, loaded into a fresh
//! server twice — once plain, once with every field given a TTL by
//! `HEXPIRE key 100000 FIELDS 100 …` — in the release `zwindow` and, with
//! `ZWINDOW_REDIS8_SERVER` set (a Redis 8.0 `redis-server`, as `.ci/test`
//! builds), in Redis 8.0 for the same commands.
//!
//! `cargo bench --bench field_ttl_memory` prints, per server and run, the
//! growth of `used_memory` (the allocator's count) and of the process's RSS
//! (`VmRSS`, what the machine pays, allocator slack and fragmentation
//! included) over the load, in bytes per field, and the difference between
//! the TTL run and the plain one: the cost of one field's TTL. The goal is
//! at most 16 bytes per field that has one. `FIELD_TTL_KEYS` and
//! `FIELD_TTL_FIELDS` change the shape.
//!
//! A figure, not a timed test: RSS depends on the allocator and the kernel.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn encode(args: &[String], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
}

/// Reads one reply: a line, plus a bulk's body or an array's elements.
fn read_reply(r: &mut BufReader<TcpStream>) -> Vec<u8> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("read");
    let n = || -> i64 {
        std::str::from_utf8(&line[1..line.len() - 2])
            .unwrap()
            .parse()
            .unwrap()
    };
    match line.first() {
        Some(b'$') if n() >= 0 => {
            let mut body = vec![0; n() as usize + 2];
            std::io::Read::read_exact(r, &mut body).expect("read bulk");
            line.extend(body);
        }
        Some(b'*') => {
            for _ in 0..n().max(0) {
                line.extend(read_reply(r));
            }
        }
        _ => {}
    }
    assert!(
        !line.starts_with(b"-"),
        "{}",
        String::from_utf8_lossy(&line)
    );
    line
}

struct Server {
    child: Child,
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Server {
    /// Starts `exe` on a free port and connects once it answers.
    fn start(exe: &str, extra: &[&str]) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port()
            .to_string();
        let mut args = vec!["--port", &port, "--save", "", "--appendonly", "no"];
        args.extend_from_slice(extra);
        let child = Command::new(exe)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {exe}: {e}"));
        let deadline = Instant::now() + Duration::from_secs(20);
        let w = loop {
            if let Ok(s) = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())) {
                break s;
            }
            assert!(Instant::now() < deadline, "{exe} did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        let r = BufReader::new(w.try_clone().unwrap());
        let mut s = Server { child, w, r };
        s.cmd(&["PING"]);
        s
    }

    fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(
            &args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            &mut buf,
        );
        self.w.write_all(&buf).unwrap();
        read_reply(&mut self.r)
    }

    fn used_memory(&mut self) -> u64 {
        let reply = self.cmd(&["INFO", "memory"]);
        String::from_utf8_lossy(&reply)
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory in INFO memory")
    }

    fn rss(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .expect("VmRSS")
            * 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Loads the hashes (with a TTL on every field if `ttl`), 100 keys per
/// pipelined batch; returns the growth of (used_memory, RSS) in bytes.
fn load(s: &mut Server, keys: usize, fields: usize, ttl: bool) -> (u64, u64) {
    // Let the server settle (lazy allocations of a first command, INFO's).
    s.cmd(&["SET", "warm", "up"]);
    s.cmd(&["DEL", "warm"]);
    let (mem0, rss0) = (s.used_memory(), s.rss());
    let names: Vec<String> = (0..fields).map(|f| format!("f{f}")).collect();
    let mut batch = Vec::new();
    let mut pending = 0;
    for k in 0..keys {
        let key = format!("h:{k}");
        let mut hset = vec!["HSET".to_string(), key.clone()];
        for (f, name) in names.iter().enumerate() {
            hset.push(name.clone());
            hset.push(format!("v{:03}", f % 1000));
        }
        encode(&hset, &mut batch);
        pending += 1;
        if ttl {
            let mut hexpire = vec![
                "HEXPIRE".to_string(),
                key,
                "100000".to_string(),
                "FIELDS".to_string(),
                fields.to_string(),
            ];
            hexpire.extend(names.iter().cloned());
            encode(&hexpire, &mut batch);
            pending += 1;
        }
        if k % 100 == 99 || k + 1 == keys {
            s.w.write_all(&batch).unwrap();
            for _ in 0..pending {
                read_reply(&mut s.r);
            }
            batch.clear();
            pending = 0;
        }
    }
    let dbsize = s.cmd(&["DBSIZE"]);
    assert_eq!(dbsize, format!(":{keys}\r\n").into_bytes());
    (s.used_memory() - mem0, s.rss().saturating_sub(rss0))
}

/// Both runs on fresh servers; prints bytes per field and per TTL.
fn measure(name: &str, exe: &str, extra: &[&str], keys: usize, fields: usize) {
    let n = (keys * fields) as f64;
    let mut runs = Vec::new();
    for ttl in [false, true] {
        let mut s = Server::start(exe, extra);
        let (mem, rss) = load(&mut s, keys, fields, ttl);
        println!(
            "{name:<14} {:<10} used_memory {:>6.1} B/field   RSS {:>6.1} B/field",
            if ttl { "with TTLs" } else { "plain" },
            mem as f64 / n,
            rss as f64 / n
        );
        runs.push((mem as f64, rss as f64));
    }
    println!(
        "{name:<14} a TTL costs {:.1} bytes per field by used_memory, {:.1} by RSS",
        (runs[1].0 - runs[0].0) / n,
        (runs[1].1 - runs[0].1) / n
    );
}

fn main() {
    let keys = env_or("FIELD_TTL_KEYS", 10_000);
    let fields = env_or("FIELD_TTL_FIELDS", 100);
    println!("{keys} hashes of {fields} fields; growth over the load:");
    measure(
        "zwindow",
        env!("CARGO_BIN_EXE_zwindow"),
        &["--log-level", "warn"],
        keys,
        fields,
    );
    match std::env::var("ZWINDOW_REDIS8_SERVER") {
        Ok(exe) if std::path::Path::new(&exe).is_file() => {
            measure("redis-server 8", &exe, &[], keys, fields)
        }
        _ => println!("(ZWINDOW_REDIS8_SERVER unset: no Redis 8.0 figures)"),
    }
}
