//! MIGRATE and RESTORE-ASKING against redis-server 7.0.15: the same
//! migrations run from a zwindow source and from a redis-server source,
//! into zwindow and into redis-server targets, compared reply by reply and
//! by what the targets then hold; argument errors byte for byte; a target
//! that never answers hits the timeout without stalling other clients.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::*;

/// A dataset of every value kind, some with TTLs, in db 0.
const DATA: &[&str] = &[
    "SET s hello",
    "SET n 12345",
    "SET big xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "PEXPIRE big 100000",
    "RPUSH l a b c 1 2",
    "SADD set x y z",
    "SADD iset 1 2 3",
    "HSET h f1 v1 f2 v2",
    "ZADD z 1 a 2.5 b -3 c",
    "PEXPIRE z 200000",
    "XADD x 1-1 f v",
    "XADD x 2-1 g w",
    "XGROUP CREATE x grp 0",
    "PFADD hll a b c",
];

/// What a key holds, read with its type's command (members sorted).
fn content(c: &mut RawConn, key: &str) -> String {
    let ty = String::from_utf8_lossy(&c.cmd_str(&format!("TYPE {key}"))).into_owned();
    let read = match ty.trim() {
        "+string" => format!("GET {key}"),
        "+list" => format!("LRANGE {key} 0 -1"),
        "+set" => format!("SORT {key} ALPHA"),
        "+hash" => format!("HGETALL {key}"),
        "+zset" => format!("ZRANGE {key} 0 -1 WITHSCORES"),
        "+stream" => format!("XRANGE {key} - +"),
        _ => return ty,
    };
    let ttl = String::from_utf8_lossy(&c.cmd_str(&format!("PTTL {key}"))).into_owned();
    let has_ttl = !ttl.starts_with(":-");
    format!("{ty} ttl:{has_ttl} {}", escape(&c.cmd_str(&read)))
}

/// A source and a target of each kind: `sources[i]` migrates into
/// `targets[i]`; every step's replies must match.
struct Setup {
    sources: [RawConn; 2],
    targets: [RawConn; 2],
    ports: [u16; 2],
}

impl Setup {
    /// Runs `line` on both sources, `{T}` standing for each one's target
    /// port; the replies must be equivalent.
    fn both(&mut self, line: &str) -> Vec<u8> {
        let mut replies = Vec::new();
        for i in 0..2 {
            let l = line.replace("{T}", &self.ports[i].to_string());
            replies.push(self.sources[i].cmd_str(&l));
        }
        assert!(
            replies_equivalent(&replies[0], &replies[1]),
            "{line}\n  zwindow source: {}\n  redis source:   {}",
            escape(&replies[0]),
            escape(&replies[1])
        );
        replies.pop().unwrap_or_default()
    }

    /// The same on both targets.
    fn targets_agree(&mut self, db: u32, keys: &[&str]) {
        for t in &mut self.targets {
            t.cmd_str(&format!("SELECT {db}"));
        }
        for key in keys {
            let a = content(&mut self.targets[0], key);
            let b = content(&mut self.targets[1], key);
            assert_eq!(a, b, "target contents of {key} in db {db}");
        }
    }
}

/// `MIGRATE` of `keys` (the KEYS form) to `port` on this host, database
/// `db`, 5 s timeout.
fn migrate_keys(port: u16, db: u32, keys: &[impl AsRef<str>]) -> String {
    let keys: Vec<&str> = keys.iter().map(AsRef::as_ref).collect();
    format!(
        "MIGRATE 127.0.0.1 {port} \"\" {db} 5000 KEYS {}",
        keys.join(" ")
    )
}

fn run_migrations(target_is_zwindow: bool) {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let (tz, tr);
    let ports;
    let targets: [RawConn; 2];
    if target_is_zwindow {
        tz = [
            ZwindowServer::start(&["--requirepass", "pw"]),
            ZwindowServer::start(&["--requirepass", "pw"]),
        ];
        ports = [tz[0].port(), tz[1].port()];
        targets = [tz[0].conn(), tz[1].conn()];
    } else {
        tr = [
            RedisServer::start_with(&["--requirepass", "pw"]),
            RedisServer::start_with(&["--requirepass", "pw"]),
        ];
        ports = [tr[0].port(), tr[1].port()];
        targets = [tr[0].conn(), tr[1].conn()];
    }
    let mut s = Setup {
        sources: [z.conn(), r.conn()],
        targets,
        ports,
    };
    for t in &mut s.targets {
        assert_eq!(t.cmd_str("AUTH pw"), b"+OK\r\n");
        t.cmd_str("ACL SETUSER mover on >secret +@all ~*");
    }
    for line in DATA {
        s.both(line);
    }
    // Without a password the target refuses: its error is forwarded.
    s.both("MIGRATE 127.0.0.1 {T} s 0 5000");
    s.both("MIGRATE 127.0.0.1 {T} s 0 5000 AUTH wrong");
    s.both("MIGRATE 127.0.0.1 {T} s 0 5000 AUTH pw");
    s.both("EXISTS s");
    s.both("MIGRATE 127.0.0.1 {T} n 0 5000 COPY AUTH2 mover secret");
    s.both("EXISTS n");
    s.both("MIGRATE 127.0.0.1 {T} n 0 5000 AUTH pw");
    s.both("MIGRATE 127.0.0.1 {T} n 0 5000 REPLACE AUTH pw");
    s.both("EXISTS n");
    s.both("MIGRATE 127.0.0.1 {T} \"\" 2 5000 AUTH pw KEYS big l set iset nosuch h");
    s.both("MIGRATE 127.0.0.1 {T} \"\" 0 5000 AUTH pw KEYS z x hll");
    s.both("MIGRATE 127.0.0.1 {T} \"\" 0 5000 AUTH pw KEYS nosuch other");
    s.both("MIGRATE 127.0.0.1 {T} nosuch 0 5000 AUTH pw");
    s.both("DBSIZE");
    s.targets_agree(0, &["s", "n", "z", "x", "hll"]);
    s.targets_agree(2, &["big", "l", "set", "iset", "h", "nosuch"]);
    // A key the target already has: BUSYKEY, the source keeps it.
    s.both("SET s again");
    s.targets[0].cmd_str("SELECT 0");
    s.targets[1].cmd_str("SELECT 0");
    s.both("MIGRATE 127.0.0.1 {T} s 0 5000 AUTH pw");
    s.both("GET s");
    // Inside MULTI and a script (where zwindow transfers in place).
    s.both("MULTI");
    s.both("MIGRATE 127.0.0.1 {T} s 5 5000 AUTH pw");
    s.both("EXEC");
    s.both("SET s2 v");
    s.both("EVAL \"return redis.call('migrate','127.0.0.1',ARGV[1],'s2','6','5000','AUTH','pw')\" 0 {T}");
    s.both("EXISTS s s2");
    s.targets_agree(5, &["s"]);
    s.targets_agree(6, &["s2"]);
    // A port nothing listens on.
    let closed = free_port();
    s.both("SET c 1");
    s.both(&format!("MIGRATE 127.0.0.1 {closed} c 0 500"));
    s.both("EXISTS c");
}

#[test]
fn migrate_into_redis_server_matches_redis() {
    run_migrations(false);
}

#[test]
fn migrate_into_zwindow_matches_redis() {
    run_migrations(true);
}

#[test]
fn argument_errors_match_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    // DUMP payloads carry Redis 8.0's RDB version under `rdb-version 12`.
    p.z.cmd_str("CONFIG SET rdb-version 12");
    p.check_str("SET k v");
    for line in [
        "MIGRATE h 1 k 0",
        "MIGRATE h 1 k 0 x",
        "MIGRATE h 1 k x 5",
        "MIGRATE h 1 k 0 5 FOO",
        "MIGRATE h 1 k 0 5 AUTH",
        "MIGRATE h 1 k 0 5 AUTH2 u",
        "MIGRATE h 1 k 0 5 KEYS a",
        "MIGRATE h 1 \"\" 0 5 KEYS",
        "MIGRATE h 1 \"\" 0 5 COPY REPLACE KEYS a b",
        "MIGRATE h 1 nosuch 0 5",
        "MIGRATE h 1 nosuch 0 x",
        "MIGRATE h 1 k 0 5 COPY FOO",
        "RESTORE-ASKING",
        "RESTORE-ASKING k 0 junk",
        "RESTORE-ASKING k x junk",
    ] {
        p.check_str(line);
    }
    // RESTORE-ASKING is RESTORE without cluster mode.
    let payload = p.check_str("DUMP k");
    let payload =
        &payload[payload.iter().position(|&b| b == b'\n').unwrap() + 1..payload.len() - 2];
    p.check(&[b"RESTORE-ASKING", b"k2", b"0", payload]);
    p.check(&[b"RESTORE-ASKING", b"k2", b"0", payload]);
    p.check(&[b"RESTORE-ASKING", b"k2", b"0", payload, b"REPLACE"]);
    p.check_str("GET k2");
}

#[test]
fn redis_server_migrates_into_zwindow() {
    let r = RedisServer::start();
    let z = ZwindowServer::start(&[]);
    let mut rc = r.conn();
    let reference = RedisServer::start();
    let mut refc = reference.conn();
    let keys = ["s", "n", "big", "l", "set", "iset", "h", "z", "x", "hll"];
    for line in DATA {
        rc.cmd_str(line);
        refc.cmd_str(line);
    }
    assert_eq!(rc.cmd_str(&migrate_keys(z.port(), 3, &keys)), b"+OK\r\n");
    assert_eq!(rc.cmd_str("DBSIZE"), b":0\r\n");
    let mut zc = z.conn();
    zc.cmd_str("SELECT 3");
    for key in keys {
        assert_eq!(content(&mut zc, key), content(&mut refc, key), "{key}");
    }
}

/// A target that accepts and never answers: the command waits its timeout
/// and answers Redis's IOERR; meanwhile the same shards serve others.
#[test]
fn silent_target_times_out_without_blocking_the_shard() {
    let z = ZwindowServer::start(&["--shards", "1"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        let mut sink = [0u8; 4096];
        let deadline = Instant::now() + Duration::from_secs(5);
        sock.set_read_timeout(Some(Duration::from_millis(100))).ok();
        while Instant::now() < deadline {
            if let Ok(0) = sock.read(&mut sink) {
                break;
            }
        }
    });
    let mut c = z.conn();
    c.cmd_str("SET k v");
    let start = Instant::now();
    c.send(&encode_cmd(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.to_string().as_bytes(),
        b"k",
        b"0",
        b"1500",
    ]));
    // Another client, on the one shard, is served at once.
    let mut other = z.conn();
    for i in 0..20 {
        let t = Instant::now();
        assert_eq!(other.cmd_str(&format!("SET o{i} x")), b"+OK\r\n");
        assert_eq!(other.cmd_str("GET k"), b"$1\r\nv\r\n");
        assert!(
            t.elapsed() < Duration::from_millis(300),
            "stalled {:?}",
            t.elapsed()
        );
    }
    assert_eq!(
        c.read_reply(),
        b"-IOERR error or timeout reading to target instance\r\n"
    );
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_eq!(c.cmd_str("EXISTS k"), b":1\r\n");
    // The failed connection is not cached.
    let info = String::from_utf8_lossy(&c.cmd_str("INFO stats")).into_owned();
    assert!(info.contains("migrate_cached_sockets:0"), "{info}");
    hold.join().unwrap();
}

/// Connections are cached per host:port and closed after 10 s unused.
#[test]
fn cached_sockets_close_after_ten_idle_seconds() {
    let z = ZwindowServer::start(&[]);
    let target = RedisServer::start();
    let mut c = z.conn();
    let mut t = target.conn();
    let cached = |c: &mut RawConn| {
        let info = String::from_utf8_lossy(&c.cmd_str("INFO stats")).into_owned();
        info.lines()
            .find_map(|l| l.strip_prefix("migrate_cached_sockets:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    for i in 0..3 {
        c.cmd_str(&format!("SET k{i} v"));
        let line = format!("MIGRATE 127.0.0.1 {} k{i} 0 5000", target.port());
        assert_eq!(c.cmd_str(&line), b"+OK\r\n");
    }
    assert_eq!(cached(&mut c), "1");
    // One connection served the three (plus this one).
    let clients = String::from_utf8_lossy(&t.cmd_str("INFO clients")).into_owned();
    assert!(clients.contains("connected_clients:2"), "{clients}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while cached(&mut c) != "0" {
        assert!(
            Instant::now() < deadline,
            "the idle connection stayed cached"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A key written by another client while its transfer is in flight keeps
/// the new value (the target has the one sent); an untouched one moves.
#[test]
fn a_key_written_during_the_transfer_stays() {
    let z = ZwindowServer::start(&[]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A slow target: reads the request, waits, then acknowledges SELECT
    // and both RESTOREs.
    let target = std::thread::spawn(move || {
        use std::io::Write;
        let (mut sock, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.windows(7).filter(|w| w == b"RESTORE").count() < 2 {
            let n = sock.read(&mut buf).unwrap();
            assert!(n > 0, "the source closed early");
            got.extend_from_slice(&buf[..n]);
        }
        std::thread::sleep(Duration::from_millis(700));
        sock.write_all(b"+OK\r\n+OK\r\n+OK\r\n").unwrap();
    });
    let mut c = z.conn();
    c.cmd_str("SET moved v1");
    c.cmd_str("SET changed v1");
    c.send(&encode_cmd(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.to_string().as_bytes(),
        b"",
        b"0",
        b"5000",
        b"KEYS",
        b"moved",
        b"changed",
    ]));
    std::thread::sleep(Duration::from_millis(300));
    let mut other = z.conn();
    assert_eq!(other.cmd_str("SET changed v2"), b"+OK\r\n");
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.cmd_str("EXISTS moved"), b":0\r\n");
    assert_eq!(c.cmd_str("GET changed"), b"$2\r\nv2\r\n");
    drop(c);
    target.join().unwrap();
}

/// In cluster mode a write to a key in flight waits for the transfer, as
/// behind Redis's blocked server: the key leaves whole, and the write then
/// makes a new one here. (Kept here while the target held the old value,
/// the key was on both nodes, and `--cluster reshard` stopped on the
/// target's BUSYKEY when it moved the key again.)
#[test]
fn cluster_mode_a_write_waits_for_the_transfer() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let z = common::cluster::zwindow_cluster_node(15000);
    let mut c = z.conn();
    assert_eq!(c.cmd_str("CLUSTER ADDSLOTSRANGE 0 16383"), b"+OK\r\n");
    common::cluster::wait_state_ok(&mut c, Duration::from_secs(30));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let acked = Arc::new(AtomicBool::new(false));
    let acked_by_target = acked.clone();
    // A slow target: reads both RESTORE-ASKINGs, waits, then acknowledges
    // SELECT and them.
    let target = std::thread::spawn(move || {
        use std::io::Write;
        let (mut sock, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while got.windows(14).filter(|w| w == b"RESTORE-ASKING").count() < 2 {
            let n = sock.read(&mut buf).unwrap();
            assert!(n > 0, "the source closed early");
            got.extend_from_slice(&buf[..n]);
        }
        std::thread::sleep(Duration::from_millis(700));
        acked_by_target.store(true, Ordering::SeqCst);
        sock.write_all(b"+OK\r\n+OK\r\n+OK\r\n").unwrap();
    });
    c.cmd_str("SET {t}moved v1");
    c.cmd_str("SET {t}changed v1");
    c.send(&encode_cmd(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.to_string().as_bytes(),
        b"",
        b"0",
        b"5000",
        b"KEYS",
        b"{t}moved",
        b"{t}changed",
    ]));
    std::thread::sleep(Duration::from_millis(300));
    let mut other = z.conn();
    assert_eq!(other.cmd_str("APPEND {t}changed v2"), b":2\r\n");
    assert!(
        acked.load(Ordering::SeqCst),
        "the write ran while its key was in flight"
    );
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.cmd_str("EXISTS {t}moved"), b":0\r\n");
    assert_eq!(c.cmd_str("GET {t}changed"), b"$2\r\nv2\r\n");
    drop(c);
    target.join().unwrap();
}

/// A windowed sorted set whose old members a lookup hands off to a MOVETO
/// destination on another shard: both steps plan that shard's lock (a
/// debug build asserts any shard touched is locked).
#[test]
fn windowed_keys_migrate_with_their_hand_off() {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes", "--shards", "16"]);
    let target = RedisServer::start();
    let mut c = z.conn();
    c.cmd_str("DEBUG CLOCK FREEZE 1700000000000");
    let rule = "ZWINDOW SET folder:* 5s MS MOVETO folded";
    assert_eq!(c.cmd_str(rule), b"+OK\r\n");
    for i in 0..8 {
        c.cmd_str(&format!(
            "ZADD folder:{i} 1699999998000 old{i} 1700000000000 new"
        ));
    }
    // The old members fall out of the window, to be handed off at the
    // next lookup: MIGRATE's.
    c.cmd_str("DEBUG CLOCK ADVANCE 4000");
    let keys: Vec<String> = (0..8).map(|i| format!("folder:{i}")).collect();
    assert_eq!(
        c.cmd_str(&migrate_keys(target.port(), 0, &keys)),
        b"+OK\r\n"
    );
    assert_eq!(c.cmd_str("EXISTS folder:0 folder:7"), b":0\r\n");
    // The old members went to the destination, the rest to the target.
    assert_eq!(c.cmd_str("LLEN folded"), b":8\r\n");
    let mut t = target.conn();
    assert_eq!(t.cmd_str("ZRANGE folder:3 0 -1"), b"*1\r\n$3\r\nnew\r\n");
}
