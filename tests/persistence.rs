//! RDB persistence against redis-server 7.0.15: files and DUMP payloads
//! move both ways and answer identically, redis-check-rdb accepts
//! zwindow's files, data survives a restart, BGSAVE is a point-in-time
//! snapshot, and hostile RESTORE payloads are refused without harm.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::dataset::{assert_same, cmd, contents, ok, populate};
use common::{RawConn, RedisServer, ZwindowServer, parse_reply, redis8_server};

fn check_rdb(path: &std::path::Path) {
    let out = Command::new("redis-check-rdb")
        .arg(path)
        .output()
        .expect("run redis-check-rdb");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("RDB looks OK"),
        "redis-check-rdb: {text}"
    );
}

#[test]
fn zwindow_files_load_into_redis_and_back() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    populate(&mut c);
    ok(
        &mut c,
        "FUNCTION LOAD \"#!lua name=lib\nredis.register_function('f', function() return 7 end)\"",
    );
    let expected = contents(&mut c);
    assert_eq!(cmd(&mut c, &[b"SAVE"]), b"+OK\r\n");
    let file = z.dir().join("dump.rdb");
    check_rdb(&file);

    // redis-server 7.0 loads zwindow's file and answers the same.
    let r = RedisServer::start();
    std::fs::copy(&file, r.dir().join("dump.rdb")).unwrap();
    drop(r);
    let dir = common::PrivateDir::new("rdb-into-redis");
    std::fs::copy(&file, dir.0.join("dump.rdb")).unwrap();
    let r = RedisServer::start_with(&["--dir", dir.0.to_str().unwrap()]);
    let mut rc = r.conn();
    assert_same(&contents(&mut rc), &expected);
    assert_eq!(cmd(&mut rc, &[b"FCALL", b"f", b"0"]), b":7\r\n");

    // And redis-server's own file of that dataset loads into zwindow.
    assert_eq!(cmd(&mut rc, &[b"SAVE"]), b"+OK\r\n");
    let back = common::PrivateDir::new("rdb-from-redis");
    std::fs::copy(dir.0.join("dump.rdb"), back.0.join("dump.rdb")).unwrap();
    let z2 = ZwindowServer::start(&["--dir", back.0.to_str().unwrap()]);
    let mut c2 = z2.conn();
    assert_same(&contents(&mut c2), &expected);
    assert_eq!(cmd(&mut c2, &[b"FCALL", b"f", b"0"]), b":7\r\n");
}

#[test]
fn dump_and_restore_move_values_both_ways() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let (mut zc, mut rc) = (z.conn(), r.conn());
    populate(&mut zc);
    populate(&mut rc);
    let expected = contents(&mut zc);
    fn copy_all(from: &mut RawConn, to: &mut RawConn) {
        for db in ["0", "3"] {
            ok(from, &format!("SELECT {db}"));
            ok(to, &format!("SELECT {db}"));
            let keys = parse_reply(&cmd(from, &[b"KEYS", b"*"]));
            for k in keys.array() {
                let k = k.bulk();
                let payload = parse_reply(&cmd(from, &[b"DUMP", k])).bulk().to_vec();
                let pttl = parse_reply(&cmd(from, &[b"PTTL", k]))
                    .int()
                    .max(0)
                    .to_string();
                let r = cmd(to, &[b"RESTORE", k, pttl.as_bytes(), &payload, b"REPLACE"]);
                assert_eq!(r, b"+OK\r\n", "{}", common::escape(k));
            }
        }
        ok(from, "SELECT 0");
        ok(to, "SELECT 0");
    }
    copy_all(&mut zc, &mut rc);
    copy_all(&mut rc, &mut zc);
    assert_same(&contents(&mut zc), &expected);
    assert_same(&contents(&mut rc), &expected);
    // Redis's refusals, byte for byte.
    let payload = parse_reply(&cmd(&mut zc, &[b"DUMP", b"short"]))
        .bulk()
        .to_vec();
    for c in [&mut zc, &mut rc] {
        assert_eq!(
            cmd(c, &[b"RESTORE", b"short", b"0", &payload]),
            b"-BUSYKEY Target key name already exists.\r\n"
        );
        assert_eq!(
            cmd(c, &[b"RESTORE", b"n", b"0", b"xx"]),
            b"-ERR DUMP payload version or checksum are wrong\r\n"
        );
        assert_eq!(
            cmd(c, &[b"RESTORE", b"n", b"-1", &payload]),
            b"-ERR Invalid TTL value, must be >= 0\r\n"
        );
        assert_eq!(
            cmd(c, &[b"RESTORE", b"n", b"0", &payload, b"IDLETIME", b"-1"]),
            b"-ERR Invalid IDLETIME value, must be >= 0\r\n"
        );
        assert_eq!(
            cmd(
                c,
                &[
                    b"RESTORE",
                    b"n",
                    b"0",
                    &payload,
                    b"FREQ",
                    b"1",
                    b"IDLETIME",
                    b"1"
                ]
            ),
            b"-ERR syntax error\r\n"
        );
        assert_eq!(
            cmd(
                c,
                &[
                    b"RESTORE",
                    b"n",
                    b"0",
                    &payload,
                    b"ABSTTL",
                    b"IDLETIME",
                    b"1000"
                ]
            ),
            b"+OK\r\n"
        );
        assert!(parse_reply(&cmd(c, &[b"OBJECT", b"IDLETIME", b"n"])).int() >= 1000);
        assert_eq!(
            cmd(c, &[b"RESTORE", b"gone", b"1", &payload, b"ABSTTL"]),
            b"+OK\r\n"
        );
        assert_eq!(cmd(c, &[b"EXISTS", b"gone"]), b":0\r\n");
    }
}

#[test]
fn hostile_restore_payloads_are_refused() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    populate(&mut c);
    let mut payloads = Vec::new();
    for k in [
        "list", "bigz", "smallz", "bighash", "st", "bigst", "intset", "noise",
    ] {
        payloads.push(
            parse_reply(&cmd(&mut c, &[b"DUMP", k.as_bytes()]))
                .bulk()
                .to_vec(),
        );
    }
    let crc = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..2000 {
        let mut p = payloads[round % payloads.len()].clone();
        let body = p.len() - 10;
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % body;
            p[i] = next() as u8;
        }
        if next() % 5 == 0 {
            let cut = (next() as usize) % body;
            p.drain(cut..body);
        }
        // A valid footer, so the body itself is what gets decoded.
        let n = p.len();
        let sum = crc.checksum(&p[..n - 8]);
        p[n - 8..].copy_from_slice(&sum.to_le_bytes());
        let r = cmd(&mut c, &[b"RESTORE", b"fuzz", b"0", &p, b"REPLACE"]);
        assert!(
            r == b"+OK\r\n" || r == b"-ERR Bad data format\r\n",
            "{}",
            common::escape(&r)
        );
    }
    assert_eq!(cmd(&mut c, &[b"PING"]), b"+PONG\r\n");
}

#[test]
fn a_restart_keeps_data_and_zwindow_state() {
    let dir = common::PrivateDir::new("restart");
    let d = dir.0.to_str().unwrap();
    let mut z = ZwindowServer::start(&["--dir", d, "--zwindow", "win:*=1000h"]);
    let mut c = z.conn();
    populate(&mut c);
    ok(&mut c, "ZADD win:a 1 old");
    ok(&mut c, "ZWINDOW SET other:* 5h");
    ok(&mut c, "ZADD zt 1 a 2 b");
    ok(&mut c, "ZEXPIRE zt 100000 MEMBERS 1 a");
    ok(&mut c, "HSET ht f v g w");
    ok(&mut c, "HEXPIRE ht 100000 FIELDS 1 f");
    let expected = contents(&mut c);
    let status = z
        .terminate(Duration::from_secs(10))
        .expect("exits on SIGTERM");
    assert!(status.success());
    // A hash field TTL makes the file version 12 (README "RDB versions").
    let file = std::fs::read(dir.0.join("dump.rdb")).unwrap();
    assert_eq!(&file[..9], b"REDIS0012");
    let z2 = ZwindowServer::start(&["--dir", d]);
    let mut c2 = z2.conn();
    assert_same(&contents(&mut c2), &expected);
    assert_eq!(
        cmd(&mut c2, &[b"ZCARD", b"win:a"]),
        b":0\r\n",
        "window rule came back"
    );
    let rules = cmd(&mut c2, &[b"ZWINDOW", b"LIST"]);
    assert!(
        common::escape(&rules).contains("other:*"),
        "{}",
        common::escape(&rules)
    );
    assert!(
        parse_reply(&cmd(&mut c2, &[b"ZTTL", b"zt", b"MEMBERS", b"1", b"a"])).array()[0].int() > 0
    );
    assert!(
        parse_reply(&cmd(&mut c2, &[b"HTTL", b"ht", b"FIELDS", b"1", b"f"])).array()[0].int() > 0
    );
    // redis-server 8.0 loads the same file, with the field TTL and no
    // member TTLs (zwindow's own AUX record, which it skips).
    let rdir = common::PrivateDir::new("restart-redis");
    std::fs::copy(dir.0.join("dump.rdb"), rdir.0.join("dump.rdb")).unwrap();
    let r = RedisServer::start_binary(
        &common::redis8_server(),
        &["--dir", rdir.0.to_str().unwrap()],
    );
    let mut rc = r.conn();
    assert_eq!(cmd(&mut rc, &[b"HGET", b"ht", b"f"]), b"$1\r\nv\r\n");
    assert!(
        parse_reply(&cmd(&mut rc, &[b"HTTL", b"ht", b"FIELDS", b"1", b"f"])).array()[0].int() > 0
    );
    assert_eq!(cmd(&mut rc, &[b"ZCARD", b"zt"]), b":2\r\n");
}

#[test]
fn a_corrupt_file_stops_startup() {
    let dir = common::PrivateDir::new("corrupt");
    let d = dir.0.to_str().unwrap();
    let z = ZwindowServer::start(&["--dir", d]);
    let mut c = z.conn();
    populate(&mut c);
    ok(&mut c, "SAVE");
    drop(z);
    let path = dir.0.join("dump.rdb");
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--port", "0", "--dir", d])
        .output()
        .unwrap();
    assert!(!out.status.success());
    // As Redis: a byte that breaks a value's structure is caught as that
    // value loads ("Internal error in RDB", then "Terminating server after
    // rdb file reading failure."); one that does not, by the checksum at
    // the end ("Fatal error loading the DB"). Which depends on what the
    // middle byte is, so either stops startup.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Fatal error loading the DB")
            || err.contains("Terminating server after rdb file reading failure."),
        "{err}"
    );
}

/// 20 clients move value between counters inside MULTI while BGSAVE runs:
/// the file's total is exact.
#[test]
fn bgsave_is_a_point_in_time_snapshot() {
    let dir = common::PrivateDir::new("bgsave");
    let d = dir.0.to_str().unwrap().to_string();
    let z = ZwindowServer::start(&["--dir", &d, "--save", ""]);
    let mut c = z.conn();
    const COUNTERS: usize = 50;
    const TOTAL: i64 = 1_000_000;
    let mut pipeline = Vec::new();
    for i in 0..200_000 {
        pipeline.extend(common::encode_cmd(&[
            b"SET",
            format!("filler:{i}").as_bytes(),
            b"some value",
        ]));
    }
    c.send(&pipeline);
    for _ in 0..200_000 {
        c.read_reply();
    }
    for i in 0..COUNTERS {
        let v = if i == 0 { TOTAL } else { 0 };
        ok(&mut c, &format!("SET counter:{i} {v}"));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let movers: Vec<_> = (0..20)
        .map(|t| {
            let mut m = z.conn();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n += 1;
                    let a = format!("counter:{}", (n * 7 + t) % COUNTERS as u64);
                    let b = format!("counter:{}", (n * 13 + t * 3) % COUNTERS as u64);
                    m.send(
                        &[
                            common::encode_cmd(&[b"MULTI"]),
                            common::encode_cmd(&[b"DECRBY", a.as_bytes(), b"3"]),
                            common::encode_cmd(&[b"INCRBY", b.as_bytes(), b"3"]),
                            common::encode_cmd(&[b"EXEC"]),
                        ]
                        .concat(),
                    );
                    for _ in 0..4 {
                        m.read_reply();
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(cmd(&mut c, &[b"BGSAVE"]), b"+Background saving started\r\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = String::from_utf8_lossy(&cmd(&mut c, &[b"INFO", b"persistence"])).into_owned();
        if info.contains("rdb_bgsave_in_progress:0") {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            break;
        }
        assert!(Instant::now() < deadline, "BGSAVE did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for m in movers {
        m.join().unwrap();
    }
    check_rdb(&dir.0.join("dump.rdb"));
    // The saved file, loaded into redis-server: the counters sum exactly.
    let rdir = common::PrivateDir::new("bgsave-redis");
    std::fs::copy(dir.0.join("dump.rdb"), rdir.0.join("dump.rdb")).unwrap();
    let r = RedisServer::start_with(&["--dir", rdir.0.to_str().unwrap()]);
    let mut rc = r.conn();
    let mut sum = 0i64;
    for i in 0..COUNTERS {
        let v = parse_reply(&cmd(&mut rc, &[b"GET", format!("counter:{i}").as_bytes()]));
        sum += std::str::from_utf8(v.bulk())
            .unwrap()
            .parse::<i64>()
            .unwrap();
    }
    assert_eq!(sum, TOTAL);
    assert_eq!(
        cmd(&mut rc, &[b"DBSIZE"]),
        format!(":{}\r\n", 200_000 + COUNTERS).as_bytes()
    );
}

#[test]
fn save_points_and_shutdown_options() {
    let dir = common::PrivateDir::new("savepoints");
    let d = dir.0.to_str().unwrap();
    let z = ZwindowServer::start(&["--dir", d, "--save", "1 1"]);
    let mut c = z.conn();
    assert_eq!(
        cmd(&mut c, &[b"CONFIG", b"SET", b"dir", b"/tmp"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config\r\n"
    );
    assert_eq!(
        cmd(&mut c, &[b"CONFIG", b"GET", b"save"]),
        b"*2\r\n$4\r\nsave\r\n$3\r\n1 1\r\n"
    );
    ok(&mut c, "SET a 1");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.0.join("dump.rdb").exists() {
        assert!(Instant::now() < deadline, "the save point did not save");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        cmd(&mut c, &[b"SHUTDOWN", b"SAVE", b"NOSAVE"]),
        b"-ERR syntax error\r\n"
    );
    assert_eq!(
        cmd(&mut c, &[b"SHUTDOWN", b"ABORT"]),
        b"-ERR No shutdown in progress.\r\n"
    );
    ok(&mut c, "SET b 2");
    c.send(&common::encode_cmd(&[b"SHUTDOWN", b"NOSAVE"]));
    c.expect_closed();
    let z2 = ZwindowServer::start(&["--dir", d]);
    let mut c2 = z2.conn();
    assert_eq!(cmd(&mut c2, &[b"GET", b"a"]), b"$1\r\n1\r\n");
    assert_eq!(
        cmd(&mut c2, &[b"GET", b"b"]),
        b"$-1\r\n",
        "NOSAVE kept the old file"
    );
}

/// The RDB files of Redis's own test suite (versions 3 to 10: zipmaps,
/// ziplists, intsets, quicklists of ziplists, empty keys, an old Lua
/// script AUX field) load into zwindow as into redis-server 7.0.
#[test]
fn redis_test_suite_files_load_as_in_redis() {
    // Where tests/tcl_suite.rs finds the suite (fetched by `.ci/test`).
    let suite = std::env::var_os("ZWINDOW_REDIS_TESTS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-7.0.15")
        });
    let assets = suite.join("tests/assets");
    for name in [
        "encodings",
        "hash-ziplist",
        "hash-zipmap",
        "list-quicklist",
        "zset-ziplist",
        "scriptbackup",
        "corrupt_empty_keys",
    ] {
        let file = assets.join(format!("{name}.rdb"));
        let (zd, rd) = (
            common::PrivateDir::new("asset-z"),
            common::PrivateDir::new("asset-r"),
        );
        std::fs::copy(&file, zd.0.join("dump.rdb")).unwrap();
        std::fs::copy(&file, rd.0.join("dump.rdb")).unwrap();
        let z = ZwindowServer::start(&["--dir", zd.0.to_str().unwrap()]);
        let r = RedisServer::start_with(&["--dir", rd.0.to_str().unwrap()]);
        let expected = contents(&mut r.conn());
        assert_same(&contents(&mut z.conn()), &expected);
    }
    // A corrupt ziplist stops startup.
    let dir = common::PrivateDir::new("asset-corrupt");
    std::fs::copy(assets.join("corrupt_ziplist.rdb"), dir.0.join("dump.rdb")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--port", "0", "--dir", dir.0.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// Redis 8.0 writes RDB 12 (7.2's set listpacks and stream v3, 7.4's hash
/// field TTLs in both hash encodings): zwindow loads it, TTLs included.
#[test]
fn redis8_files_load_with_field_ttls() {
    let rd = common::PrivateDir::new("r8");
    let r = RedisServer::start_binary(&common::redis8_server(), &["--dir", rd.0.to_str().unwrap()]);
    let mut rc = r.conn();
    for line in [
        "SADD strs a b c",
        "SADD ints 1 2 3",
        "RPUSH l a b 1",
        "HSET small f v g w",
        "HEXPIRE small 100000 FIELDS 1 f",
        "XADD st 1-1 a 1",
        "XGROUP CREATE st g 0",
        "XREADGROUP GROUP g c1 STREAMS st >",
    ] {
        ok(&mut rc, line);
    }
    for i in 0..200 {
        cmd(
            &mut rc,
            &[b"HSET", b"big", format!("f{i}").as_bytes(), b"v"],
        );
    }
    ok(&mut rc, "HEXPIRE big 100000 FIELDS 1 f7");
    ok(&mut rc, "SAVE");
    let zd = common::PrivateDir::new("r8-z");
    std::fs::copy(rd.0.join("dump.rdb"), zd.0.join("dump.rdb")).unwrap();
    let z = ZwindowServer::start(&["--dir", zd.0.to_str().unwrap()]);
    let mut zc = z.conn();
    for key in ["strs", "ints", "l", "small", "big"] {
        let q: &[u8] = match key {
            "strs" | "ints" => b"SCARD",
            "l" => b"LLEN",
            _ => b"HLEN",
        };
        assert_eq!(
            cmd(&mut zc, &[q, key.as_bytes()]),
            cmd(&mut rc, &[q, key.as_bytes()])
        );
    }
    for (key, field) in [("small", "f"), ("big", "f7")] {
        let ttl = parse_reply(&cmd(
            &mut zc,
            &[b"HTTL", key.as_bytes(), b"FIELDS", b"1", field.as_bytes()],
        ));
        assert!(ttl.array()[0].int() > 99_000, "{key}");
    }
    assert_eq!(
        cmd(&mut zc, &[b"XPENDING", b"st", b"g"]),
        cmd(&mut rc, &[b"XPENDING", b"st", b"g"])
    );
}

/// A failed background save refuses writes with MISCONF while
/// `stop-writes-on-bgsave-error` is on, as Redis does.
#[test]
fn a_failed_bgsave_stops_writes() {
    let z = ZwindowServer::start(&["--enable-protected-configs", "yes"]);
    let mut c = z.conn();
    let gone = common::PrivateDir::new("gone");
    let path = gone.0.to_str().unwrap().to_string();
    ok(&mut c, &format!("CONFIG SET dir {path}"));
    std::fs::remove_dir_all(&gone.0).unwrap();
    ok(&mut c, "SET a 1");
    assert_eq!(cmd(&mut c, &[b"SAVE"]), b"-ERR\r\n");
    ok(&mut c, "BGSAVE");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&cmd(&mut c, &[b"INFO", b"persistence"])).into_owned();
        if info.contains("rdb_last_bgsave_status:err") {
            break;
        }
        assert!(Instant::now() < deadline, "{info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = cmd(&mut c, &[b"SET", b"b", b"2"]);
    assert!(
        r.starts_with(b"-MISCONF Redis is configured to save RDB snapshots"),
        "{}",
        common::escape(&r)
    );
    assert_eq!(cmd(&mut c, &[b"GET", b"a"]), b"$1\r\n1\r\n");
    ok(&mut c, "CONFIG SET stop-writes-on-bgsave-error no");
    assert_eq!(cmd(&mut c, &[b"SET", b"b", b"2"]), b"+OK\r\n");
}

/// FLUSHALL with save points set saves the empty dataset at once, as
/// redis-server does: the change counter starts again from 0.
#[test]
fn flushall_with_save_points_saves_as_redis() {
    let r = RedisServer::start();
    let z = ZwindowServer::start(&[]);
    for c in [&mut r.conn(), &mut z.conn()] {
        assert_eq!(
            c.cmd(&[b"CONFIG", b"SET", b"save", b"3600 1 300 100 60 10000"]),
            b"+OK\r\n"
        );
        ok(c, "SET key value");
        ok(c, "FLUSHALL");
        let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"persistence"])).into_owned();
        assert!(info.contains("rdb_changes_since_last_save:0\r\n"), "{info}");
    }
}

/// A BGSAVE running when FLUSHALL empties the data is of the data
/// flushed: it is stopped and never replaces the file, so a restart
/// finds the empty dataset, as redis-server 8.0.2 (which kills its
/// child) leaves it; the change counter is 0 after the flush on both.
#[test]
fn flushall_stops_a_running_bgsave_as_redis_8() {
    let mut counts = Vec::new();
    let debug = ["--enable-debug-command", "yes"];
    let r = RedisServer::start_binary(&redis8_server(), &debug);
    let z = ZwindowServer::start(&debug);
    for c in [&mut r.conn(), &mut z.conn()] {
        ok(c, "CONFIG SET save \"3600 1 300 100 60 10000\"");
        for i in 0..20 {
            ok(c, &format!("SET k{i} v"));
        }
        // Each key takes 100 ms to save: the BGSAVE runs for 2 s.
        ok(c, "CONFIG SET rdb-key-save-delay 100000");
        ok(c, "BGSAVE");
        ok(c, "FLUSHALL");
        let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"persistence"])).into_owned();
        counts.push(info.contains("rdb_changes_since_last_save:0\r\n"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while String::from_utf8_lossy(&c.cmd(&[b"INFO", b"persistence"]))
            .contains("rdb_bgsave_in_progress:1")
        {
            assert!(Instant::now() < deadline, "the BGSAVE never ended");
            std::thread::sleep(Duration::from_millis(20));
        }
        ok(c, "CONFIG SET rdb-key-save-delay 0");
        // What a restart would load: the file left behind.
        ok(c, "DEBUG RELOAD NOSAVE");
        assert_eq!(c.cmd(&[b"DBSIZE"]), b":0\r\n");
    }
    assert_eq!(counts, [true, true]);
}
