//! maxmemory against redis-server 8.0: the configuration's replies and
//! errors, OBJECT FREQ/IDLETIME per policy, the OOM refusals (plain
//! commands, MULTI, scripts) byte for byte; then eviction itself on zwindow
//! alone: memory held near the limit under a write load, the oldest keys
//! going first under allkeys-lru, only volatile keys under volatile-*, and
//! the `evicted` notification; the `used_memory` INFO reports under
//! eviction, and the hit ratio of a Zipf read-through workload, beside
//! redis-server's.
mod common;

use std::time::Duration;

use common::*;

#[test]
fn config_and_object_replies_match_redis() {
    in_both_protocols(|p| {
        p.script(&[
            "CONFIG GET maxmemory",
            "CONFIG GET maxmemory-policy",
            "CONFIG GET maxmemory-samples",
            "CONFIG GET maxmemory-eviction-tenacity",
            "CONFIG GET lfu-log-factor",
            "CONFIG GET lfu-decay-time",
            "CONFIG SET maxmemory-policy nope",
            "CONFIG SET MAXMEMORY-POLICY nope",
            "CONFIG SET maxmemory-policy nope nosuch 1",
            "CONFIG SET maxmemory-policy nope maxmemory-policy allkeys-lru",
            "CONFIG SET maxmemory-policy nope daemonize no",
            "CONFIG SET maxmemory 12x",
            "CONFIG SET maxmemory -1",
            "CONFIG SET maxmemory-samples 0",
            "CONFIG SET maxmemory-eviction-tenacity 101",
            "CONFIG SET maxmemory 1gb",
            "CONFIG GET maxmemory",
            "CONFIG SET maxmemory 100m",
            "CONFIG GET maxmemory",
            "CONFIG SET maxmemory-policy ALLKEYS-LRU",
            "CONFIG GET maxmemory-policy",
            "SET k v",
            "OBJECT FREQ k",
            // (An existing key's idle seconds may cross a second between the two
            // servers: the missing key's reply is exact.)
            "OBJECT IDLETIME nokey",
            "OBJECT FREQ nokey",
            "CONFIG SET maxmemory-policy allkeys-lfu",
            "OBJECT IDLETIME k",
            "SET fresh v",
            "OBJECT FREQ fresh",
            // The first access of a new key always counts (probability 1).
            "GET fresh",
            "OBJECT FREQ fresh",
            // An overwrite keeps the counter (and counts as an access: with
            // lfu-log-factor 0 every access increments, so both agree).
            "CONFIG SET lfu-log-factor 0",
            "SET fresh w",
            "OBJECT FREQ fresh",
            "CONFIG SET lfu-log-factor 10",
            "CONFIG SET maxmemory-policy volatile-ttl",
            "OBJECT FREQ k",
            "CONFIG SET maxmemory 0",
            "CONFIG SET maxmemory-policy noeviction",
            // What a replica does with maxmemory (the keyspace's replica
            // mode reads it), under both names.
            "CONFIG GET replica-ignore-maxmemory",
            "CONFIG GET slave-ignore-maxmemory",
            "CONFIG SET slave-ignore-maxmemory no",
            "CONFIG GET replica-ignore-maxmemory",
            "CONFIG SET replica-ignore-maxmemory maybe",
            "CONFIG SET replica-ignore-maxmemory yes",
        ]);
    });
}

#[test]
fn exec_of_queued_writes_aborts_over_the_limit() {
    let s = Servers::start();
    let (mut p, mut admin) = (s.pair(), s.pair());
    p.script(&["MULTI", "SET y 1", "GET y"]);
    admin.check_str("CONFIG SET maxmemory 1");
    p.check_str("EXEC");
    p.check_str("GET y");
    admin.check_str("CONFIG SET maxmemory 0");
    p.script(&["MULTI", "GET y"]);
    admin.check_str("CONFIG SET maxmemory 1");
    p.check_str("EXEC");
    admin.check_str("CONFIG SET maxmemory 0");
}

#[test]
fn oom_refusals_match_redis() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SET x 123",
        "CONFIG SET maxmemory 1",
        // Deny-OOM commands fail, others run.
        "SET y 1",
        "GET x",
        "DEL x",
        "SET x 123",
        "INCR n",
        "GET x",
        // MULTI: queuing is refused, and EXEC then aborts.
        "MULTI",
        "GET x",
        "EXEC",
        "MULTI",
        "DISCARD",
        // Scripts without flags fail on their first deny-OOM call.
        "EVAL \"redis.call('set','x',1) return 1\" 1 x",
        "EVAL \"return redis.call('get','x')\" 1 x",
        "EVAL \"return redis.pcall('set','x',1)\" 1 x",
        // Scripts with flags are refused at once unless allow-oom.
        "EVAL \"#!lua flags=\nreturn 1\" 0",
        "EVAL \"#!lua flags=allow-oom\nreturn redis.call('set','x',1)\" 1 x",
        "EVAL \"#!lua flags=no-writes\nreturn redis.call('get','x')\" 1 x",
        "CONFIG SET maxmemory 0",
        "SET y 1",
    ]);
}

/// Fills `conn`'s server with `n` keys of `size` bytes, pipelined.
fn fill(conn: &mut RawConn, prefix: &str, n: usize, size: usize, ttl: bool) {
    fill_keys(conn, prefix, 0..n, size, ttl);
}

fn fill_range(conn: &mut RawConn, prefix: &str, range: std::ops::Range<usize>, size: usize) {
    fill_keys(conn, prefix, range, size, false);
}

fn fill_keys(
    conn: &mut RawConn,
    prefix: &str,
    range: std::ops::Range<usize>,
    size: usize,
    ttl: bool,
) {
    let value = "v".repeat(size);
    for chunk in range.collect::<Vec<_>>().chunks(200) {
        let mut batch = Vec::new();
        for i in chunk {
            let key = format!("{prefix}{i}");
            if ttl {
                batch.extend(encode_cmd(&[
                    b"SET",
                    key.as_bytes(),
                    value.as_bytes(),
                    b"EX",
                    b"100000",
                ]));
            } else {
                batch.extend(encode_cmd(&[b"SET", key.as_bytes(), value.as_bytes()]));
            }
        }
        conn.send(&batch);
        for _ in chunk {
            let r = conn.read_reply();
            assert_eq!(r, b"+OK\r\n", "{}", escape(&r));
        }
    }
}

fn info_field(conn: &mut RawConn, section: &str, name: &str) -> u64 {
    let text = String::from_utf8_lossy(&conn.cmd(&[b"INFO", section.as_bytes()])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
}

fn exists(conn: &mut RawConn, key: &str) -> bool {
    conn.query(&[b"EXISTS", key.as_bytes()]).int() == 1
}

#[test]
fn allkeys_lru_holds_memory_and_evicts_the_oldest() {
    const LIMIT: u64 = 20 << 20;
    let z = ZwindowServer::start(&["--maxmemory", "20mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = z.conn();
    c.cmd_str("CONFIG SET notify-keyspace-events Ee");
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyevent@0__:evicted");
    // 60 MB of 1 KB values, three times the limit, written over six
    // seconds: the LRU clock counts seconds, as Redis's.
    let (phases, per_phase) = (6, 10_000);
    for phase in 0..phases {
        if phase > 0 {
            std::thread::sleep(Duration::from_millis(1100));
        }
        fill_range(
            &mut c,
            "key:",
            phase * per_phase..(phase + 1) * per_phase,
            1000,
        );
    }
    let n = phases * per_phase;
    let used = info_field(&mut c, "memory", "used_memory");
    assert!(
        used <= LIMIT + LIMIT / 20,
        "used_memory {used} is more than 5% over the limit {LIMIT}"
    );
    assert!(
        used >= LIMIT - LIMIT / 5,
        "used_memory {used}: evicted far too much"
    );
    assert_eq!(info_field(&mut c, "memory", "maxmemory"), LIMIT);
    // Read together in one transaction: the background task may still be
    // evicting (a pass that ran out of time continues there).
    c.cmd_str("MULTI");
    c.cmd_str("INFO stats");
    c.cmd_str("DBSIZE");
    let both = parse_reply(&c.cmd_str("EXEC"));
    let stats = String::from_utf8_lossy(both.array()[0].bulk()).into_owned();
    let evicted: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("evicted_keys in INFO stats");
    let left = both.array()[1].int() as u64;
    assert_eq!(evicted + left, n as u64);
    // LRU (sampled): of the first second's keys almost none is left, of
    // the last second's almost all.
    let old = (0..per_phase)
        .filter(|i| exists(&mut c, &format!("key:{i}")))
        .count();
    let new = (n - per_phase..n)
        .filter(|i| exists(&mut c, &format!("key:{i}")))
        .count();
    assert!(
        old < per_phase / 20,
        "{old} of the oldest {per_phase} keys survived"
    );
    assert!(
        new > per_phase * 9 / 10,
        "only {new} of the newest {per_phase} keys survived"
    );
    // Each eviction was announced.
    sub.set_timeout(Duration::from_secs(5));
    let msg = parse_reply(&sub.read_reply());
    let parts = msg.array();
    assert_eq!(parts[0].bulk(), b"message");
    assert_eq!(parts[1].bulk(), b"__keyevent@0__:evicted");
    assert!(parts[2].bulk().starts_with(b"key:"));
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    let z = ZwindowServer::start(&["--maxmemory", "20mb", "--maxmemory-policy", "volatile-lru"]);
    let mut c = z.conn();
    fill(&mut c, "persistent:", 5_000, 1000, false);
    fill(&mut c, "volatile:", 40_000, 1000, true);
    for i in (0..5_000).step_by(97) {
        assert!(exists(&mut c, &format!("persistent:{i}")));
    }
    assert!(info_field(&mut c, "stats", "evicted_keys") > 0);
    // With the volatile keys gone, writes are refused.
    c.cmd_str("FLUSHALL");
    c.cmd_str("CONFIG SET maxmemory 1");
    c.cmd_str("SET a b");
    let r = c.cmd_str("SET a b");
    assert_eq!(
        r,
        b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    );
    assert_eq!(c.cmd_str("GET a"), b"$-1\r\n");
}

#[test]
fn every_policy_keeps_the_limit() {
    for policy in [
        "allkeys-lfu",
        "allkeys-random",
        "volatile-ttl",
        "volatile-random",
        "volatile-lfu",
    ] {
        let z = ZwindowServer::start(&["--maxmemory", "10mb", "--maxmemory-policy", policy]);
        let mut c = z.conn();
        fill(&mut c, "k", 30_000, 1000, true);
        let used = info_field(&mut c, "memory", "used_memory");
        assert!(used <= (10 << 20) * 21 / 20, "{policy}: used_memory {used}");
        assert!(info_field(&mut c, "stats", "evicted_keys") > 0, "{policy}");
    }
}

/// `used_memory` as the bare INFO reports it (every default section, as
/// the TCL suite's `s used_memory` reads it).
fn info_used_memory(conn: &mut RawConn) -> u64 {
    let text = String::from_utf8_lossy(&conn.cmd(&[b"INFO"])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// The TCL suite's "is the memory limit honoured" on one server: a limit
/// 100 KB above the memory of an emptied server, keys written until INFO
/// shows it nearly reached, then as many again under eviction. Returns how
/// far above the limit the bare INFO's `used_memory` was after each write
/// of the second half (negative: under it): the median and the worst.
fn limit_overshoot(conn: &mut RawConn, policy: &str) -> (i64, i64) {
    let setex = |conn: &mut RawConn, i: usize| {
        let key = format!("key:{i}");
        let r = conn.cmd(&[b"SETEX", key.as_bytes(), b"10000", b"x"]);
        assert_eq!(r, b"+OK\r\n", "{policy}: {}", escape(&r));
    };
    conn.cmd_str("SELECT 9");
    conn.cmd_str("SET a 1");
    conn.cmd_str("FLUSHALL");
    // Once before measuring: the first INFO allocates what it keeps.
    info_used_memory(conn);
    let limit = info_used_memory(conn) + 100 * 1024;
    let set = format!("CONFIG SET maxmemory {limit}");
    assert_eq!(conn.cmd_str(&set), b"+OK\r\n");
    let set = format!("CONFIG SET maxmemory-policy {policy}");
    assert_eq!(conn.cmd_str(&set), b"+OK\r\n");
    let mut n = 0;
    while info_used_memory(conn) + 4096 <= limit {
        setex(conn, n);
        n += 1;
        assert!(n < 100_000, "{policy}: 100 KB never filled");
    }
    assert!(n > 10, "{policy}: only {n} keys filled 100 KB");
    let mut overs = Vec::with_capacity(n);
    for i in n..2 * n {
        setex(conn, i);
        overs.push(info_used_memory(conn) as i64 - limit as i64);
    }
    assert!(info_field(conn, "stats", "evicted_keys") > 0, "{policy}");
    assert_eq!(conn.cmd_str("CONFIG SET maxmemory 0"), b"+OK\r\n");
    overs.sort_unstable();
    (overs[overs.len() / 2], overs[overs.len() - 1])
}

/// The memory INFO reports stays within a few KB of `maxmemory` while
/// eviction holds it there, as redis-server 8.0's does (the TCL suite
/// allows 4 KB). INFO's own scratch memory counts in the figure it
/// reports: once, its key size histograms took 30 KB of it (one dense
/// array per database), which eviction, measuring between commands,
/// never saw, so INFO showed 30 KB over the limit whatever it evicted.
#[test]
fn info_used_memory_keeps_the_limit_as_redis() {
    let s = Servers::start_with(&["--notify-keyspace-events", "KEA"]);
    let (mut z, mut r) = (s.z.conn(), s.r.conn());
    for policy in ["allkeys-lru", "allkeys-random", "volatile-ttl"] {
        let (zw, zw_worst) = limit_overshoot(&mut z, policy);
        let (redis, redis_worst) = limit_overshoot(&mut r, policy);
        eprintln!(
            "{policy}: over the limit (median, worst): zwindow {zw}, {zw_worst}; \
             redis-server {redis}, {redis_worst}"
        );
        // The median: a pass that runs out of its time budget (a debug
        // build's, on a loaded machine) leaves a moment over the limit to
        // the background task, as Redis's does.
        assert!(
            redis < 4096,
            "{policy}: redis-server {redis} over the limit"
        );
        assert!(
            zw < 4096,
            "{policy}: INFO's used_memory {zw} bytes over maxmemory (redis-server: {redis})"
        );
    }
    // What INFO allocates for itself besides the memory section (its other
    // sections' text so far, the keyspace pass's figures) is as small as
    // Redis's: a few KB, whatever the number of databases.
    for c in [&mut z, &mut r] {
        c.cmd_str("SELECT 15");
        for i in 0..200 {
            let key = format!("h:{i}");
            c.cmd(&[b"HSET", key.as_bytes(), b"f", b"v"]);
        }
        info_used_memory(c);
        info_field(c, "memory", "used_memory");
    }
    let extra = |c: &mut RawConn| {
        let memory_only = info_field(c, "memory", "used_memory") as i64;
        info_used_memory(c) as i64 - memory_only
    };
    let (zw, redis) = (extra(&mut z), extra(&mut r));
    eprintln!("INFO's own memory: zwindow {zw}, redis-server {redis}");
    assert!(
        zw < 4096 && zw < redis + 2048,
        "the bare INFO's used_memory is {zw} bytes above INFO memory's (redis-server: {redis})"
    );
}

/// A read-through cache on a Zipf-distributed key popularity (s = 1): GET a
/// key, SET it on a miss. Returns the hit ratio. Seeded, so both servers
/// see the same request stream.
fn zipf_hit_ratio(conn: &mut RawConn, keys: usize, ops: usize) -> f64 {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let mut cumulative = Vec::with_capacity(keys);
    let mut total = 0.0;
    for rank in 1..=keys {
        total += 1.0 / rank as f64;
        cumulative.push(total);
    }
    let mut rng = StdRng::seed_from_u64(7);
    let value = vec![b'v'; 500];
    let (mut hits, mut done) = (0, 0);
    while done < ops {
        let batch: Vec<String> = (0..200)
            .map(|_| {
                let x = rng.random::<f64>() * total;
                format!("key:{}", cumulative.partition_point(|&c| c < x))
            })
            .collect();
        let gets: Vec<u8> = batch
            .iter()
            .flat_map(|k| encode_cmd(&[b"GET", k.as_bytes()]))
            .collect();
        conn.send(&gets);
        let mut sets = Vec::new();
        let mut misses = 0;
        for k in &batch {
            if conn.read_reply() == b"$-1\r\n" {
                sets.extend(encode_cmd(&[b"SET", k.as_bytes(), &value]));
                misses += 1;
            } else {
                hits += 1;
            }
        }
        conn.send(&sets);
        for _ in 0..misses {
            assert_eq!(conn.read_reply(), b"+OK\r\n");
        }
        done += batch.len();
    }
    hits as f64 / done as f64
}

/// The eviction-quality bar: on the same Zipf read-through stream,
/// with a limit that holds about half of the keys the stream touches,
/// zwindow's sampled LRU and LFU keep a hit ratio within 5 points of
/// redis-server 7.0's.
///
/// The stream touches about 13,400 of its 40,000 keys, some 8 MB of
/// 500-byte values: the limit must sit well below that, or a server lean
/// enough per key never has to evict (8 MB once did, by a few kilobytes).
#[test]
fn zipf_hit_ratio_matches_redis_servers() {
    for policy in ["allkeys-lru", "allkeys-lfu"] {
        let args = ["--maxmemory", "4mb", "--maxmemory-policy", policy];
        let s = Servers::start_with(&args);
        let z = zipf_hit_ratio(&mut s.z.conn(), 40_000, 60_000);
        let r = zipf_hit_ratio(&mut s.r.conn(), 40_000, 60_000);
        let mut c = s.z.conn();
        assert!(info_field(&mut c, "stats", "evicted_keys") > 0, "{policy}");
        assert!(
            z >= r - 0.05,
            "{policy}: hit ratio {z:.4} on zwindow, {r:.4} on redis-server"
        );
        eprintln!("{policy}: hit ratio zwindow {z:.4}, redis-server {r:.4}");
    }
}

/// Keys evicted, and keys left, after the limit is lowered 40 KB below
/// what 300 keys with 1 KB names use while ten RESP3 clients that never
/// read their invalidations track every key (the TCL suite's "client
/// tracking don't cause eviction feedback loop").
fn tracking_eviction(server_conn: impl Fn() -> RawConn) -> (u64, u64) {
    let mut c = server_conn();
    for args in [
        ["CONFIG", "SET", "maxmemory", "0"],
        ["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
        ["CONFIG", "SET", "maxmemory-eviction-tenacity", "100"],
    ] {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(c.cmd(&args), b"+OK\r\n");
    }
    let mut trackers: Vec<RawConn> = (0..10).map(|_| server_conn()).collect();
    for t in &mut trackers {
        t.cmd(&[b"HELLO", b"3"]);
        assert_eq!(t.cmd(&[b"CLIENT", b"TRACKING", b"on"]), b"+OK\r\n");
    }
    for j in 0..300 {
        let key = format!("{j}{}", "x".repeat(1000));
        c.cmd(&[b"SET", key.as_bytes(), b"x"]);
        for t in &mut trackers {
            t.cmd(&[b"GET", key.as_bytes()]);
        }
    }
    // The clients' cron trims the query buffers that grew meanwhile.
    std::thread::sleep(Duration::from_millis(1100));
    let limit = info_field(&mut c, "memory", "used_memory") - 40_000;
    let limit = limit.to_string();
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"maxmemory", limit.as_bytes()]),
        b"+OK\r\n"
    );
    let evicted = info_field(&mut c, "stats", "evicted_keys");
    // Every command from here on checks the limit again, as the
    // invalidations of the evicted keys wait, unread, in ten buffers.
    let mut left = 0;
    for _ in 0..20 {
        left = c.query(&[b"DBSIZE"]).int() as u64;
    }
    drop(trackers);
    (evicted, left)
}

#[test]
fn unread_invalidations_do_not_feed_eviction() {
    let s = Servers::start();
    let (z_evicted, z_left) = tracking_eviction(|| s.z.conn());
    let (r_evicted, r_left) = tracking_eviction(|| s.r.conn());
    eprintln!("evicted/left: zwindow {z_evicted}/{z_left}, redis-server {r_evicted}/{r_left}");
    assert!(
        (10..=100).contains(&z_evicted) && (200..=300).contains(&z_left),
        "zwindow evicted {z_evicted} at once and kept {z_left} of 300 keys \
         (redis-server: {r_evicted}, {r_left})"
    );
}
