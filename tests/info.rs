//! INFO against redis-server 8.0.2 (and 7.0 for the figures): which
//! sections each selector prints; for every section, the names and order of
//! its fields; the counters of
//! commandstats, errorstats and latencystats after the same good, rejected
//! and failed commands on both servers; and values that prove the figures
//! are real (memory follows the data, byte counts follow the traffic, rates
//! follow the load).
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;

type Info = BTreeMap<String, Vec<(String, String)>>;

/// `section -> [(field, value)]` of an INFO reply (bulk or verbatim).
fn sections(reply: &[u8]) -> Info {
    let text = String::from_utf8_lossy(reply);
    let mut out: Info = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(name) = line.strip_prefix("# ") {
            current = name.to_lowercase();
            out.entry(current.clone()).or_default();
        } else if let Some((k, v)) = line.split_once(':')
            && !current.is_empty()
        {
            out.entry(current.clone())
                .or_default()
                .push((k.to_string(), v.to_string()));
        }
    }
    out
}

fn info(conn: &mut RawConn, args: &str) -> Info {
    sections(&conn.cmd_str(&format!("INFO {args}")))
}

/// One field's value; panics (naming it) if absent.
fn field(info: &Info, section: &str, name: &str) -> String {
    info.get(section)
        .and_then(|f| f.iter().find(|(k, _)| k == name))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no {name} in # {section}: {info:?}"))
}

/// The `avg_ttl` of a keyspace line (`keys=…,expires=…,avg_ttl=…[,…]`).
fn avg_ttl(db: &str) -> f64 {
    db.split(',')
        .find_map(|kv| kv.strip_prefix("avg_ttl="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no avg_ttl in {db}"))
}

fn num(info: &Info, section: &str, name: &str) -> f64 {
    let v = field(info, section, name);
    v.trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{section}.{name} = {v:?}: {e}"))
}

/// One field of a fresh `INFO section`.
fn stat(conn: &mut RawConn, section: &str, name: &str) -> f64 {
    num(&info(conn, section), section, name)
}

/// zwindow's own section, on top of Redis's.
const ZWINDOW_ONLY: &[&str] = &["windows"];

/// Fields redis-server 8.0.2 prints that zwindow does not, each with its
/// reason: `(section, field, why)`. Otherwise Redis prints its allocator
/// figures (`allocator_*`, `mem_fragmentation_*`) with any allocator, not
/// only jemalloc, and zwindow prints the fields of every feature it lacks
/// (replication, persistence, defragmentation, tracking, shard channels)
/// with the value Redis shows when the feature is unused.
const REDIS_ONLY: &[(&str, &str, &str)] = &[(
    "modules",
    "module",
    "Debian's 8.0.2 lists its built-in vectorset module; zwindow has no modules",
)];

/// Fields zwindow has from a newer Redis (section, field, which).
const NEWER_REDIS: &[(&str, &str, &str)] = &[(
    "stats",
    "expired_subkeys",
    "Redis 7.4+: expired hash fields (zwindow counts sorted-set members too)",
)];

/// Sections whose lines depend on what ran (commands, error codes,
/// databases): compared as sets after the same commands on both servers.
const PER_ITEM: &[&str] = &[
    "commandstats",
    "errorstats",
    "latencystats",
    "keyspace",
    "keysizes",
];

#[test]
fn selectors_print_redis_sections() {
    let s = Servers::start_redis8(&[]);
    let (mut r, mut z) = (s.r.conn(), s.z.conn());
    for args in [
        "",
        "default",
        "all",
        "everything",
        "cpu",
        "cpu memory",
        "cpu all",
        "commandSTATS",
        "latencystats",
        "default latencystats",
        "latencystats commandstats",
        "everything server",
        "modules",
        "module_list",
        "sentinel",
        "nosuchsection",
        "SERVER clients",
        "threads",
        "threads stats",
        "debug",
        "everything debug",
    ] {
        let rs: Vec<String> = info(&mut r, args).into_keys().collect();
        let zs: Vec<String> = info(&mut z, args)
            .into_keys()
            .filter(|k| !ZWINDOW_ONLY.contains(&k.as_str()))
            .collect();
        assert_eq!(rs, zs, "INFO {args}");
    }
    // Redis's order of sections, zwindow's own before the keyspace.
    let text = String::from_utf8_lossy(&z.cmd_str("INFO everything")).to_string();
    let order: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# ")).collect();
    assert_eq!(
        order,
        [
            "Server",
            "Clients",
            "Memory",
            "Persistence",
            "Threads",
            "Stats",
            "Replication",
            "CPU",
            "Modules",
            "Commandstats",
            "Errorstats",
            "Latencystats",
            "Cluster",
            "Windows",
            "Keyspace",
            "Keysizes"
        ]
    );
    // One blank line between sections, none after the last: the reply ends
    // as Redis's.
    let redis = String::from_utf8_lossy(&r.cmd_str("INFO everything")).to_string();
    for t in [&text, &redis] {
        // (The reply's own CRLF follows the text's.)
        assert!(t.ends_with("\r\n\r\n"), "{t:?}");
        assert!(!t.contains("\r\n\r\n\r\n"), "{t:?}");
    }
}

/// The field names of `section`, less what is known to be one server's only.
fn names(info: &Info, section: &str) -> Vec<String> {
    info.get(section)
        .map(|f| {
            f.iter()
                .map(|(k, _)| k.clone())
                .filter(|k| {
                    !REDIS_ONLY
                        .iter()
                        .chain(NEWER_REDIS)
                        .any(|(s, n, _)| *s == section && n == k)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every section has Redis's fields, in Redis's order; the per-command and
/// per-database sections have the same lines after the same commands.
#[test]
fn every_section_has_redis_fields() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    p.both_str("CONFIG RESETSTAT");
    for line in [
        "SET a 1",
        "SET t 1 EX 1000",
        "SELECT 3",
        "SET b 1",
        "SELECT 0",
        "GET a",
        "GET nosuchkey",
        "LPUSH a x",
        "GET",
        "CONFIG GET maxmemory",
        "NOSUCHCOMMAND",
        "HSET h f v",
    ] {
        p.both_str(line);
    }
    let (ri, zi) = (info(&mut p.r, "everything"), info(&mut p.z, "everything"));
    let rs: BTreeSet<&String> = ri.keys().collect();
    let zs: BTreeSet<&String> = zi
        .keys()
        .filter(|k| !ZWINDOW_ONLY.contains(&k.as_str()))
        .collect();
    assert_eq!(rs, zs, "sections");
    for section in rs {
        let (rn, zn) = (names(&ri, section), names(&zi, section));
        if PER_ITEM.contains(&section.as_str()) {
            let set = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
            assert_eq!(set(rn), set(zn), "lines of # {section}");
        } else {
            assert_eq!(rn, zn, "fields of # {section}");
        }
    }
    // Fields with the same value on both, whatever the machine.
    for (section, name) in [
        ("server", "redis_mode"),
        ("server", "arch_bits"),
        ("server", "process_supervised"),
        ("server", "hz"),
        ("server", "io_threads_active"),
        ("clients", "connected_clients"),
        ("clients", "maxclients"),
        ("memory", "maxmemory"),
        ("memory", "maxmemory_policy"),
        ("memory", "total_system_memory"),
        ("persistence", "aof_enabled"),
        ("stats", "total_commands_processed"),
        ("stats", "keyspace_hits"),
        ("stats", "keyspace_misses"),
        ("stats", "total_error_replies"),
        ("stats", "total_reads_processed"),
        ("stats", "total_writes_processed"),
        ("stats", "client_query_buffer_limit_disconnections"),
        ("stats", "client_output_buffer_limit_disconnections"),
        ("stats", "acl_access_denied_auth"),
        ("stats", "acl_access_denied_cmd"),
        ("clients", "pubsub_clients"),
        ("clients", "watching_clients"),
        ("clients", "total_watched_keys"),
        ("clients", "total_blocking_keys"),
        ("threads", "io_thread_0"),
        ("replication", "role"),
        ("replication", "connected_slaves"),
        ("replication", "master_repl_offset"),
        ("cluster", "cluster_enabled"),
    ] {
        assert_eq!(
            field(&ri, section, name),
            field(&zi, section, name),
            "{section}.{name}"
        );
    }
    // Keyspace lines as Redis (the TTL estimate aside).
    let keyspace = |m: &Info| -> Vec<(String, String)> {
        m["keyspace"]
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.split(",avg_ttl").next().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    assert_eq!(keyspace(&ri), keyspace(&zi));
    // CPU time grows with work.
    let mut z = s.z.conn();
    let before = stat(&mut z, "cpu", "used_cpu_user");
    z.cmd_str("EVAL \"local x = 0 for i = 1, 2e7 do x = x + i end\" 0");
    let after = stat(&mut z, "cpu", "used_cpu_user");
    assert!(after > before, "used_cpu_user {before} -> {after}");
}

/// Server identity fields hold this process's figures.
#[test]
fn server_fields_are_this_process() {
    let s = Servers::start();
    let mut z = s.z.conn();
    let i = info(&mut z, "server replication memory");
    let hex40 = |v: &str| v.len() == 40 && v.bytes().all(|b| b.is_ascii_hexdigit());
    let run_id = field(&i, "server", "run_id");
    let replid = field(&i, "replication", "master_replid");
    assert!(hex40(&run_id) && hex40(&replid) && run_id != replid);
    assert_eq!(num(&i, "server", "tcp_port") as u16, s.z.port());
    assert_eq!(num(&i, "server", "process_id") as u32, s.z.pid());
    let now_s = num(&i, "server", "server_time_usec") / 1e6;
    let lru = num(&i, "server", "lru_clock");
    assert!(((now_s as u64 & 0xFF_FFFF) as f64 - lru).abs() <= 1.0);
    let exe = field(&i, "server", "executable");
    assert!(std::path::Path::new(&exe).exists(), "{exe}");
    assert!(field(&i, "server", "os").starts_with("Linux "));
    assert!(field(&i, "memory", "mem_allocator").starts_with("mimalloc-"));
    // Another start, another run ID.
    let other = ZwindowServer::start(&[]);
    let again = field(&info(&mut other.conn(), "server"), "server", "run_id");
    assert_ne!(run_id, again);
}

/// `--config FILE` shows as `config_file`, absolute.
#[test]
fn config_file_is_reported() {
    let dir = PrivateDir::new("info-config");
    let path = dir.0.join("zwindow.conf");
    std::fs::write(&path, "hz 10\n").unwrap();
    let z = ZwindowServer::start(&["--config", path.to_str().unwrap()]);
    let i = info(&mut z.conn(), "server");
    assert_eq!(
        field(&i, "server", "config_file"),
        path.display().to_string()
    );
}

/// used_memory follows the data: it grows by about the bytes stored and
/// falls back after FLUSHALL (on redis-server too, within the same bounds).
#[test]
fn used_memory_follows_the_data() {
    const VALUE: usize = 64 * 1024;
    const KEYS: usize = 64;
    const STORED: f64 = (VALUE * KEYS) as f64;
    let s = Servers::start();
    for (name, mut c) in [("redis", s.r.conn()), ("zwindow", s.z.conn())] {
        let before = info(&mut c, "memory");
        let used0 = num(&before, "memory", "used_memory");
        let value = "v".repeat(VALUE);
        for k in 0..KEYS {
            c.cmd(&[b"SET", format!("key:{k}").as_bytes(), value.as_bytes()]);
        }
        let full = info(&mut c, "memory");
        let used1 = num(&full, "memory", "used_memory");
        let grown = used1 - used0;
        assert!(
            (STORED * 0.9..=STORED * 1.5 + 1e6).contains(&grown),
            "{name}: used_memory {used0} -> {used1} after storing {STORED} bytes"
        );
        let dataset0 = num(&before, "memory", "used_memory_dataset");
        // redis-server 8.0.2 built with libc malloc (the oracle) counts
        // more overhead than allocation on an empty server: its unsigned
        // dataset figure wraps below zero.
        let dataset0 = if dataset0 > 1e18 { 0.0 } else { dataset0 };
        let dataset1 = num(&full, "memory", "used_memory_dataset");
        assert!(
            dataset1 - dataset0 >= STORED * 0.9,
            "{name}: used_memory_dataset {dataset0} -> {dataset1}"
        );
        assert!(num(&full, "memory", "used_memory_peak") >= used1);
        assert!(num(&full, "memory", "used_memory_rss") > 0.0);
        let startup = num(&full, "memory", "used_memory_startup");
        assert!(
            startup > 0.0 && startup <= used0,
            "{name}: startup {startup}"
        );
        let overhead = num(&full, "memory", "used_memory_overhead");
        assert!(
            overhead >= startup && overhead < used1,
            "{name}: {overhead}"
        );
        c.cmd_str("FLUSHALL");
        let after = info(&mut c, "memory");
        let used2 = num(&after, "memory", "used_memory");
        assert!(
            used1 - used2 >= STORED * 0.9,
            "{name}: used_memory {used1} -> {used2} after FLUSHALL"
        );
        // The peak remembers.
        assert!(num(&after, "memory", "used_memory_peak") >= used1);
        assert!(num(&after, "memory", "used_memory_peak_perc") < 100.0);
    }
}

/// total_net_input_bytes / total_net_output_bytes count exactly the bytes
/// on the wire (each server counts a request when it reads it, a reply when
/// it writes it); reads and writes count the round trips.
#[test]
fn net_bytes_count_the_traffic() {
    let s = Servers::start();
    for (name, mut c) in [("redis", s.r.conn()), ("zwindow", s.z.conn())] {
        let query = encode_cmd(&[b"INFO", b"stats"]);
        c.send(&query);
        let first = c.read_reply();
        let before = sections(&first);
        let mut sent = 0;
        let mut received = 0;
        let commands = [
            encode_cmd(&[b"SET", b"k", &[b'x'; 5000]]),
            encode_cmd(&[b"GET", b"k"]),
            encode_cmd(&[b"PING"]),
            encode_cmd(&[b"NOSUCHCOMMAND", b"arg"]),
        ];
        for cmd in &commands {
            c.send(cmd);
            sent += cmd.len();
            received += c.read_reply().len();
        }
        c.send(&query);
        let after = sections(&c.read_reply());
        let delta = |f: &str| num(&after, "stats", f) - num(&before, "stats", f);
        // The second INFO is counted before it runs; the first one's reply
        // after it was written.
        assert_eq!(
            delta("total_net_input_bytes") as usize,
            sent + query.len(),
            "{name}"
        );
        assert_eq!(
            delta("total_net_output_bytes") as usize,
            received + first.len(),
            "{name}"
        );
        assert_eq!(
            delta("total_reads_processed") as usize,
            commands.len() + 1,
            "{name}"
        );
        assert_eq!(
            delta("total_writes_processed") as usize,
            commands.len() + 1,
            "{name}"
        );
        assert_eq!(
            delta("total_commands_processed") as usize,
            commands.len(),
            "{name}"
        );
    }
}

/// The instantaneous rates follow the load and fall back without it.
#[test]
fn instantaneous_rates_follow_the_load() {
    let s = Servers::start();
    let mut z = s.z.conn();
    let i = info(&mut z, "stats");
    assert_eq!(num(&i, "stats", "instantaneous_ops_per_sec"), 0.0);
    let addr = s.z.addr();
    let load = std::thread::spawn(move || {
        let mut c = RawConn::connect(addr, "load");
        let batch: Vec<u8> = (0..50).flat_map(|_| encode_cmd(&[b"PING"])).collect();
        let end = Instant::now() + Duration::from_millis(1200);
        while Instant::now() < end {
            c.send(&batch);
            for _ in 0..50 {
                c.read_reply();
            }
        }
    });
    std::thread::sleep(Duration::from_millis(800));
    let busy = info(&mut z, "stats");
    let _ = load.join();
    assert!(
        num(&busy, "stats", "instantaneous_ops_per_sec") > 100.0,
        "{busy:?}"
    );
    assert!(num(&busy, "stats", "instantaneous_input_kbps") > 0.0);
    assert!(num(&busy, "stats", "instantaneous_output_kbps") > 0.0);
    // 16 samples of 100 ms: idle for longer than that, the rate is 0 again
    // (polled: on a loaded machine the sampler's ticks come late).
    std::thread::sleep(Duration::from_millis(1700));
    let deadline = Instant::now() + Duration::from_secs(10);
    while stat(&mut z, "stats", "instantaneous_ops_per_sec") != 0.0 {
        assert!(Instant::now() < deadline, "the rate never fell back to 0");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The clients section counts connections, blocked clients and those
/// with a timeout as redis-server does.
#[test]
fn clients_are_counted() {
    let s = Servers::start();
    let mut p = s.pair();
    let mut extra = vec![s.pair(), s.pair()];
    let (mut b1, mut b2) = (s.pair(), s.pair());
    for (c, line) in [(&mut b1, "BLPOP q1 100"), (&mut b2, "BLPOP q2 0")] {
        let args = split_args(line);
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        c.r.send(&encode_cmd(&refs));
        c.z.send(&encode_cmd(&refs));
    }
    std::thread::sleep(Duration::from_millis(200));
    let (ri, zi) = (info(&mut p.r, "clients"), info(&mut p.z, "clients"));
    for f in [
        "connected_clients",
        "blocked_clients",
        "clients_in_timeout_table",
    ] {
        assert_eq!(field(&ri, "clients", f), field(&zi, "clients", f), "{f}");
    }
    assert_eq!(field(&zi, "clients", "blocked_clients"), "2");
    assert_eq!(field(&zi, "clients", "clients_in_timeout_table"), "1");
    extra.clear();
    p.both_str("RPUSH q1 a");
    b1.r.read_reply();
    b1.z.read_reply();
    std::thread::sleep(Duration::from_millis(100));
    let (ri, zi) = (info(&mut p.r, "clients"), info(&mut p.z, "clients"));
    for f in ["blocked_clients", "clients_in_timeout_table"] {
        assert_eq!(field(&ri, "clients", f), field(&zi, "clients", f), "{f}");
    }
    // A large request shows as the recent largest input buffer.
    p.z.cmd(&[b"SET", b"big", &[b'x'; 100_000]]);
    let zi = info(&mut p.z, "clients");
    assert!(num(&zi, "clients", "client_recent_max_input_buffer") >= 100_000.0);
    p.z.cmd(&[b"GET", b"big"]);
    let zi = info(&mut p.z, "clients");
    assert!(num(&zi, "clients", "client_recent_max_output_buffer") >= 100_000.0);
}

/// latencystats: a line per command called since CONFIG RESETSTAT, with
/// the configured percentiles; CONFIG latency-tracking* as Redis.
#[test]
fn latencystats_follow_the_commands() {
    let s = Servers::start();
    let mut p = s.pair();
    let lines = |c: &mut RawConn| -> BTreeSet<String> {
        info(c, "latencystats")
            .remove("latencystats")
            .unwrap_or_default()
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    p.both_str("CONFIG RESETSTAT");
    for c in [&mut p.r, &mut p.z] {
        assert!(!lines(c).contains("latency_percentiles_usec_lpush"));
    }
    for line in ["LPUSH l a", "LPUSH l b", "GET", "SET s x", "LPUSH s x"] {
        p.both_str(line);
    }
    let (rl, zl) = (lines(&mut p.r), lines(&mut p.z));
    assert_eq!(rl, zl);
    assert!(zl.contains("latency_percentiles_usec_lpush"));
    // Rejected (arity) commands never ran.
    assert!(!zl.contains("latency_percentiles_usec_get"));
    // Values: the configured percentiles, in microseconds, ordered.
    let value = field(
        &info(&mut p.z, "latencystats"),
        "latencystats",
        "latency_percentiles_usec_lpush",
    );
    let parts: Vec<(&str, f64)> = value
        .split(',')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();
    assert_eq!(
        parts.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ["p50", "p99", "p99.9"]
    );
    assert!(parts[0].1 > 0.0 && parts[0].1 <= parts[1].1 && parts[1].1 <= parts[2].1);
    // The percentiles setting, its errors and its effect.
    for line in [
        "CONFIG GET latency-tracking",
        "CONFIG GET latency-tracking-info-percentiles",
        "CONFIG SET latency-tracking-info-percentiles \"0 0.1 7.50 99.99 100\"",
        "CONFIG GET latency-tracking-info-percentiles",
        "CONFIG SET latency-tracking-info-percentiles abc",
        "CONFIG SET latency-tracking-info-percentiles 101",
        "CONFIG SET latency-tracking-info-percentiles \"5  7\"",
        "CONFIG SET latency-tracking-info-percentiles 0x10",
        "CONFIG GET latency-tracking-info-percentiles",
        "CONFIG SET latency-tracking maybe",
    ] {
        p.check_str(line);
    }
    let keys = |c: &mut RawConn| -> Vec<String> {
        let v = field(
            &info(c, "latencystats"),
            "latencystats",
            "latency_percentiles_usec_lpush",
        );
        v.split(',')
            .map(|kv| kv.split('=').next().unwrap_or("").to_string())
            .collect()
    };
    p.check_str("CONFIG SET latency-tracking-info-percentiles \"0 50 99.99\"");
    assert_eq!(keys(&mut p.r), keys(&mut p.z));
    assert_eq!(keys(&mut p.z), ["p0", "p50", "p99.99"]);
    p.check_str("CONFIG SET latency-tracking-info-percentiles \"\"");
    assert_eq!(
        field(
            &info(&mut p.z, "latencystats"),
            "latencystats",
            "latency_percentiles_usec_lpush"
        ),
        ""
    );
    // Tracking off: the section is empty, on both.
    p.check_str("CONFIG SET latency-tracking no");
    p.check_str("CONFIG GET latency-tracking");
    assert!(lines(&mut p.r).is_empty() && lines(&mut p.z).is_empty());
}

/// Active expiry's figures: expired keys, the TTL estimate of each
/// database, the time spent.
#[test]
fn expiry_figures_follow_the_keys() {
    let s = Servers::start();
    let mut p = s.pair();
    let wait_for = |p: &mut Pair, what: &str, done: &dyn Fn(&Info) -> bool| -> (Info, Info) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (ri, zi) = (
                info(&mut p.r, "keyspace stats"),
                info(&mut p.z, "keyspace stats"),
            );
            if done(&ri) && done(&zi) {
                return (ri, zi);
            }
            assert!(Instant::now() < deadline, "{what}: {ri:?} {zi:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // Both servers' active expiry removes short-lived keys nobody reads.
    for k in 0..20 {
        p.both_str(&format!("SET gone:{k} v PX 1"));
    }
    wait_for(&mut p, "expired_keys", &|i| {
        num(i, "stats", "expired_keys") == 20.0 && !i["keyspace"].iter().any(|(k, _)| k == "db0")
    });
    // One more expiry cycle on the empty database resets its TTL estimate
    // (hz 10: a cycle every 100 ms), as Redis's does.
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The TTL estimate of the keys left (sampled by the next cycles).
    for k in 0..20 {
        p.both_str(&format!("SET live:{k} v EX 1000"));
    }
    let (ri, zi) = wait_for(&mut p, "avg_ttl", &|i| {
        avg_ttl(&field(i, "keyspace", "db0")) != 0.0
    });
    for i in [&ri, &zi] {
        let db0 = field(i, "keyspace", "db0");
        assert!(db0.starts_with("keys=20,expires=20,avg_ttl="), "{db0}");
        let ttl = avg_ttl(&db0);
        assert!(ttl > 900_000.0 && ttl <= 1_000_000.0, "{db0}");
    }
    assert_eq!(field(&zi, "stats", "expired_time_cap_reached_count"), "0");
    // With nothing left to expire, the stale share decays toward 0.
    assert!(num(&zi, "stats", "expired_stale_perc") < 100.0);
}

/// The same sequence on both servers leaves the same commandstats counters
/// (calls, rejected_calls, failed_calls; not the timings), errorstats and
/// stats counters; CONFIG RESETSTAT clears the same ones.
#[test]
fn commandstats_and_errorstats_count_as_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    p.both_str("CONFIG RESETSTAT");
    for line in [
        "SET a 1",
        "GET a",
        "GET",             // arity: rejected
        "CONFIG GET",      // subcommand arity: rejected
        "NOSUCHCOMMAND x", // unknown: an error, no cmdstat
        "LPUSH a x",       // WRONGTYPE: failed
        "INCR a",
        "SET s notanumber",
        "INCR s", // ERR not an integer: failed
        "MULTI",
        "GET a",
        "EXEC",
        "EXEC", // ERR EXEC without MULTI: rejected
    ] {
        p.both_str(line);
    }
    let stats = |m: Info, section: &str| -> Vec<(String, String)> {
        m.get(section)
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| !k.starts_with("cmdstat_config|resetstat") && k != "cmdstat_info")
            .map(|(k, v)| {
                // Drop the timings: usec and usec_per_call differ by nature.
                let kept: Vec<&str> = v.split(',').filter(|f| !f.starts_with("usec")).collect();
                (k, kept.join(","))
            })
            // Redis lists commands in its command dict's order.
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let ri = info(&mut p.r, "commandstats");
    let zi = info(&mut p.z, "commandstats");
    assert_eq!(stats(ri, "commandstats"), stats(zi, "commandstats"));
    let ri = info(&mut p.r, "errorstats");
    let zi = info(&mut p.z, "errorstats");
    assert_eq!(stats(ri, "errorstats"), stats(zi, "errorstats"));
    let counters = [
        "total_connections_received",
        "total_error_replies",
        "total_commands_processed",
        "keyspace_hits",
        "keyspace_misses",
        "total_reads_processed",
        "total_writes_processed",
        "rejected_connections",
    ];
    let pick =
        |m: Info| -> Vec<String> { counters.iter().map(|f| field(&m, "stats", f)).collect() };
    assert_eq!(pick(info(&mut p.r, "stats")), pick(info(&mut p.z, "stats")));
    // Pub/sub counts.
    let mut sub = s.pair();
    for c in [&mut sub.r, &mut sub.z] {
        // One confirmation per channel and pattern; one request at a time,
        // so that each server reads them in as many reads.
        c.send(&encode_cmd(&[b"SUBSCRIBE", b"c1", b"c2"]));
        c.read_reply();
        c.read_reply();
        c.send(&encode_cmd(&[b"PSUBSCRIBE", b"p*"]));
        c.read_reply();
    }
    let ps = |m: Info| {
        (
            field(&m, "stats", "pubsub_channels"),
            field(&m, "stats", "pubsub_patterns"),
        )
    };
    let (rps, zps) = (ps(info(&mut p.r, "stats")), ps(info(&mut p.z, "stats")));
    assert_eq!(rps, zps);
    assert_eq!(zps, ("2".into(), "1".into()));
    // A command refused in subscribed mode is an error, not a command run.
    sub.both_str("GET a");
    assert_eq!(pick(info(&mut p.r, "stats")), pick(info(&mut p.z, "stats")));
}

/// Waits until `check` holds of a fresh `INFO section` (at most 5 s).
fn wait_info(conn: &mut RawConn, section: &str, what: &str, check: impl Fn(&Info) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let i = info(conn, section);
        if check(&i) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {i:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The same actions on zwindow and redis-server 8.0.2 give the same Redis
/// 8 counters: WATCH, blocked clients (BLPOP on two keys, XREADGROUP),
/// subscribers, ACL denials of each kind, clients closed by their query or
/// output buffer limit, and what CONFIG RESETSTAT clears (not the ACL
/// denials, as Redis).
#[test]
fn redis8_counters_follow_the_same_actions() {
    let s = Servers::start_redis8(&[]);
    let mut seen: Vec<Vec<(String, String)>> = Vec::new();
    for (name, server_conn) in [
        ("redis", &(|| s.r.conn()) as &dyn Fn() -> RawConn),
        ("zwindow", &(|| s.z.conn()) as &dyn Fn() -> RawConn),
    ] {
        let mut a = server_conn();
        let mut figures = Vec::new();
        let mut note = |i: &Info, section: &str, field_name: &str| {
            figures.push((
                format!("{section}.{field_name}"),
                field(i, section, field_name),
            ));
        };
        // WATCH: two clients, two distinct keys.
        let mut w1 = server_conn();
        let mut w2 = server_conn();
        w1.cmd_str("WATCH k1 k2");
        w2.cmd_str("WATCH k1");
        let i = info(&mut a, "clients");
        assert_eq!(field(&i, "clients", "watching_clients"), "2", "{name}");
        assert_eq!(field(&i, "clients", "total_watched_keys"), "2", "{name}");
        w1.cmd_str("UNWATCH");
        let i = info(&mut a, "clients");
        note(&i, "clients", "watching_clients");
        note(&i, "clients", "total_watched_keys");
        // Blocked: BLPOP on two keys, XREADGROUP on a third (woken by its
        // deletion too).
        a.cmd_str("XGROUP CREATE s g $ MKSTREAM");
        let mut b1 = server_conn();
        b1.send(&encode_cmd(&[b"BLPOP", b"l1", b"l2", b"0"]));
        let mut b2 = server_conn();
        b2.send(&encode_cmd(&[
            b"XREADGROUP",
            b"GROUP",
            b"g",
            b"c",
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"s",
            b">",
        ]));
        wait_info(&mut a, "clients", name, |i| {
            field(i, "clients", "blocked_clients") == "2"
        });
        let i = info(&mut a, "clients");
        assert_eq!(field(&i, "clients", "total_blocking_keys"), "3", "{name}");
        assert_eq!(
            field(&i, "clients", "total_blocking_keys_on_nokey"),
            "1",
            "{name}"
        );
        a.cmd_str("LPUSH l2 x");
        b1.read_reply();
        wait_info(&mut a, "clients", name, |i| {
            field(i, "clients", "total_blocking_keys") == "1"
        });
        // Subscribers: one to a channel and a pattern, one to a pattern.
        let mut p1 = server_conn();
        p1.cmd_str("SUBSCRIBE ch");
        p1.cmd_str("PSUBSCRIBE p*");
        let mut p2 = server_conn();
        p2.cmd_str("PSUBSCRIBE q*");
        let i = info(&mut a, "clients");
        assert_eq!(field(&i, "clients", "pubsub_clients"), "2", "{name}");
        p2.cmd_str("PUNSUBSCRIBE");
        let i = info(&mut a, "clients");
        note(&i, "clients", "pubsub_clients");
        // ACL denials: a bad password, a command, a key, a channel.
        a.cmd_str("ACL SETUSER u on >pw +get +subscribe ~a* resetchannels &c*");
        let mut u = server_conn();
        u.cmd_str("AUTH u wrong");
        u.cmd_str("AUTH u pw");
        u.cmd_str("SET a 1");
        u.cmd_str("SET a 2");
        u.cmd_str("GET b");
        u.cmd_str("SUBSCRIBE d");
        let i = info(&mut a, "stats");
        for kind in ["auth", "cmd", "key", "channel"] {
            note(&i, "stats", &format!("acl_access_denied_{kind}"));
        }
        // The query buffer limit: a bulk announced as 3 MB, 1 MB allowed.
        a.cmd_str("CONFIG SET client-query-buffer-limit 1mb");
        let mut q = server_conn();
        q.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n");
        let chunk = vec![b'y'; 64 * 1024];
        for _ in 0..40 {
            if q.try_send(&chunk).is_err() {
                break;
            }
        }
        assert!(q.is_closed(Duration::from_secs(5)), "{name}");
        // The output buffer limit: a 200 KB reply, 100 KB allowed.
        a.cmd(&[b"SET", b"big", &vec![b'x'; 200_000]]);
        a.cmd_str("CONFIG SET client-output-buffer-limit \"normal 100000 0 0\"");
        let mut o = server_conn();
        o.send(&encode_cmd(&[b"GET", b"big"]));
        assert!(o.is_closed(Duration::from_secs(5)), "{name}");
        a.cmd_str("CONFIG SET client-output-buffer-limit \"normal 0 0 0\"");
        wait_info(&mut a, "stats", name, |i| {
            field(i, "stats", "client_output_buffer_limit_disconnections") == "1"
        });
        let i = info(&mut a, "stats");
        note(&i, "stats", "client_query_buffer_limit_disconnections");
        note(&i, "stats", "client_output_buffer_limit_disconnections");
        // The event loop: cycles counted, a slow command in the commands' time.
        let before = stat(&mut a, "stats", "eventloop_duration_cmd_sum");
        a.cmd_str("EVAL \"local x = 0 for i = 1, 2e6 do x = x + i end\" 0");
        let i = info(&mut a, "stats commandstats");
        let eval = field(&i, "commandstats", "cmdstat_eval");
        let usec: f64 = eval
            .split(',')
            .find_map(|kv| kv.strip_prefix("usec="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{eval}"));
        assert!(usec > 1000.0, "{name}: {eval}");
        assert!(num(&i, "stats", "eventloop_cycles") > 0.0, "{name}");
        assert!(
            num(&i, "stats", "eventloop_duration_cmd_sum") >= before + usec,
            "{name}: {i:?}"
        );
        assert!(
            num(&i, "stats", "eventloop_duration_sum")
                >= num(&i, "stats", "eventloop_duration_cmd_sum"),
            "{name}: {i:?}"
        );
        wait_info(&mut a, "stats", name, |i| {
            num(i, "stats", "instantaneous_eventloop_cycles_per_sec") > 0.0
                && num(i, "stats", "instantaneous_eventloop_duration_usec") > 0.0
        });
        // CONFIG RESETSTAT: the disconnections and the event loop start
        // over, the ACL denials stay.
        a.cmd_str("CONFIG RESETSTAT");
        let i = info(&mut a, "stats");
        assert!(num(&i, "stats", "eventloop_cycles") < 5.0, "{name}: {i:?}");
        // (CONFIG RESETSTAT's own time counts after it.)
        assert!(
            num(&i, "stats", "eventloop_duration_cmd_sum") < usec,
            "{name}: {i:?}"
        );
        note(&i, "stats", "client_query_buffer_limit_disconnections");
        note(&i, "stats", "client_output_buffer_limit_disconnections");
        note(&i, "stats", "acl_access_denied_cmd");
        // The listener line: the same binds, each server's port.
        let i = info(&mut a, "server");
        let port = field(&i, "server", "tcp_port");
        figures.push((
            "server.listener0".into(),
            field(&i, "server", "listener0").replace(&port, "PORT"),
        ));
        seen.push(figures);
    }
    assert_eq!(seen[0], seen[1]);
}

/// A unix socket is Redis's listener1 (its connection type's index), after
/// the TCP one, with its path as `bind`.
#[test]
fn listeners_as_redis8() {
    let dir = PrivateDir::new("info-listeners");
    let mut lines = Vec::new();
    for (name, path) in [("redis", "r.sock"), ("zwindow", "z.sock")] {
        let sock = dir.0.join(path);
        let sock = sock.to_str().unwrap();
        let mut c;
        let _server: Box<dyn std::any::Any> = if name == "redis" {
            let r = RedisServer::start_binary(&redis8_server(), &["--unixsocket", sock]);
            c = r.conn();
            Box::new(r)
        } else {
            // (zwindow's tests start it on port 0: with a unix socket, no TCP.)
            let port = free_port().to_string();
            let z = ZwindowServer::start(&["--unixsocket", sock, "--port", &port]);
            c = z.conn();
            Box::new(z)
        };
        let i = info(&mut c, "server");
        let port = field(&i, "server", "tcp_port");
        let listeners: Vec<String> = i["server"]
            .iter()
            .filter(|(k, _)| k.starts_with("listener"))
            .map(|(k, v)| format!("{k}:{}", v.replace(&port, "PORT").replace(sock, "SOCK")))
            .collect();
        lines.push(listeners);
    }
    assert_eq!(lines[0], lines[1]);
    assert_eq!(lines[0].len(), 2, "{:?}", lines[0]);
}

/// Redis 8's `INFO debug`: its fields, only when named; the most commands
/// one turn ran follows a pipeline; the cron's time grows; CONFIG
/// RESETSTAT clears them.
#[test]
fn debug_section_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut figures = Vec::new();
    for mut c in [s.r.conn(), s.z.conn()] {
        let names = |i: &Info| -> Vec<String> {
            i.get("debug")
                .map(|f| f.iter().map(|(k, _)| k.clone()).collect())
                .unwrap_or_default()
        };
        c.cmd_str("CONFIG RESETSTAT");
        // Ten PINGs in one write: one turn runs them all.
        c.send(&b"PING\r\n".repeat(10));
        for _ in 0..10 {
            c.read_reply();
        }
        let i1 = info(&mut c, "debug");
        assert!(
            num(&i1, "debug", "eventloop_cmd_per_cycle_max") >= 10.0,
            "{i1:?}"
        );
        assert!(num(&i1, "debug", "eventloop_duration_max") > 0.0, "{i1:?}");
        std::thread::sleep(Duration::from_millis(250));
        let i2 = info(&mut c, "debug");
        assert!(
            num(&i2, "debug", "eventloop_duration_cron_sum")
                > num(&i1, "debug", "eventloop_duration_cron_sum"),
            "{i1:?} {i2:?}"
        );
        assert!(!info(&mut c, "everything").contains_key("debug"));
        c.cmd_str("CONFIG RESETSTAT");
        let i3 = info(&mut c, "debug");
        assert!(
            num(&i3, "debug", "eventloop_cmd_per_cycle_max") < 10.0,
            "{i3:?}"
        );
        // No AOF: nothing (Redis times its empty flush call, a µs or so).
        assert!(
            num(&i2, "debug", "eventloop_duration_aof_sum") < 1000.0,
            "{i2:?}"
        );
        figures.push(names(&i2));
    }
    assert_eq!(figures[0], figures[1]);
}

/// Past 128 error codes Redis stops counting errors by code until CONFIG
/// RESETSTAT, keeping one `ERRORSTATS_DISABLED` entry (and saying so in
/// its log), as redis-server 8.0.2.
#[test]
fn errorstats_stop_past_128_codes_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    p.both_str("CONFIG RESETSTAT");
    for j in 1..=130 {
        p.check_str(&format!(
            "EVAL \"return redis.error_reply(string.format('%s my error message', ARGV[1]))\" 0 {j}"
        ));
    }
    p.check_str("GET");
    p.check_str("INFO errorstats");
    // The log is read from the server's stderr as it comes.
    let said =
        "Errorstats stopped adding new errors because the number of errors reached the limit";
    let deadline = Instant::now() + Duration::from_secs(5);
    while !s.z.log_tail().contains(said) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(s.z.log_tail().contains(said), "{}", s.z.log_tail());
    p.both_str("CONFIG RESETSTAT");
    p.check_str("GET");
    p.check_str("INFO errorstats");
}
