//! Corrupt RESTORE payloads and RDB files against redis-server 7.0.15,
//! from Redis's `integration/corrupt-dump` unit: what Redis refuses
//! zwindow refuses, with the same reply, under `sanitize-dump-payload no`
//! and `yes`, and writes Redis's report lines; a corrupt file stops both
//! servers at startup. zwindow checks every payload in full whatever the
//! setting: the payloads redis-server 7.0 lets through its shallow check
//! (to assert on them later) zwindow refuses, and those are listed.

mod common;

use common::{RawConn, RedisServer, ZwindowServer};

/// Payloads of corrupt-dump.tcl, by test name.
const PAYLOADS: &[(&str, &[u8])] = &[
    (
        "hash ziplist, invalid entry len",
        b"\x0D\x1B\x1B\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04\x14\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xD9\x10\x54\x92\x15\xF5\x5F\x52",
    ),
    (
        "invalid zlbytes header",
        b"\x0D\x1B\x25\x00\x00\x00\x16\x00\x00\x00\x04\x00\x00\x02\x61\x00\x04\x02\x62\x00\x04\x02\x63\x00\x04\x02\x64\x00\xFF\x09\x00\xB7\xF7\x6E\x9F\x43\x43\x14\xC6",
    ),
    (
        "quicklist big ziplist prev len",
        b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x02\x00\x00\x02\x61\x00\x0E\x02\x62\x00\xFF\x09\x00\x49\x97\x30\xB2\x0D\xA1\xED\xAA",
    ),
    (
        "quicklist small ziplist prev len",
        b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x02\x00\x00\x02\x61\x00\x02\x02\x62\x00\xFF\x09\x00\xC7\x71\x03\x97\x07\x75\xB0\x63",
    ),
    (
        "quicklist ziplist wrong count",
        b"\x0E\x01\x13\x13\x00\x00\x00\x0E\x00\x00\x00\x03\x00\x00\x02\x61\x00\x04\x02\x62\x00\xFF\x09\x00\x4D\xE2\x0A\x2F\x08\x25\xDF\x91",
    ),
    (
        "quicklist encoded_len is 0",
        b"\x12\x01\x01\x00\x0A\x00\x8F\xC6\xC0\x57\x1C\x0A\xB3\x3C",
    ),
    (
        "stream with duplicate consumers",
        b"\x0F\x00\x00\x00\x00\x01\x07\x6D\x79\x67\x72\x6F\x75\x70\x00\x00\x00\x02\x04\x6E\x61\x6D\x65\x2A\x4C\xAA\x9A\x7D\x01\x00\x00\x00\x04\x6E\x61\x6D\x65\x2B\x4C\xAA\x9A\x7D\x01\x00\x00\x00\x0A\x00\xCC\xED\x8C\xA7\x62\xEE\xC7\xC8",
    ),
    (
        "hash empty zipmap",
        b"\x09\x02\x00\xFF\x09\x00\xC0\xF1\xB8\x67\x4C\x16\xAC\xE3",
    ),
    (
        "hash crash (a valid hash ziplist)",
        b"\x0D\x19\x19\x00\x00\x00\x16\x00\x00\x00\x06\x00\x00\xF1\x02\xF1\x02\xF2\x02\x02\x5F\x31\x04\xF3\x02\xF3\xFF\x09\x00\x38\xB8\x10\xC0\x8A\xF9\x16\xDF",
    ),
    (
        "zset ziplist entry lensize is 0",
        b"\x0C\x3D\x3D\x00\x00\x00\x3A\x00\x00\x00\x14\x00\x00\xF1\x02\xF1\x02\x02\x5F\x31\x04\xF2\x02\xF3\x02\xF3\x02\x02\x5F\x33\x04\xF4\x02\xEE\x02\xF5\x02\x02\x5F\x35\x04\xF6\x02\xF7\x02\xF7\x02\x02\x5F\x37\x04\xF8\x02\xF9\x02\xF9\x02\x02\x5F\x39\x04\xFA\xFF\x09\x00\xAE\xF9\x77\x2A\x47\x24\x33\xF6",
    ),
    (
        "stream bad lp_count",
        b"\x0F\x01\x10\x00\x00\x01\x73\xDE\xDF\x7D\x9B\x00\x00\x00\x00\x00\x00\x00\x00\x40\x42\x42\x00\x00\x00\x18\x00\x03\x01\x00\x01\x02\x01\x84\x69\x74\x65\x6D\x05\x85\x76\x61\x6C\x75\x65\x06\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x00\x01\x56\x01\x02\x01\x22\x01\x00\x01\x01\x01\x82\x5F\x31\x03\x05\x01\x02\x01\x2C\x01\x00\x01\x01\x01\x02\x01\x05\x01\xFF\x03\x81\x00\x00\x01\x73\xDE\xDF\x7D\xC7\x00\x01\x07\x6D\x79\x67\x72\x6F\x75\x70\x81\x00\x00\x01\x73\xDE\xDF\x7D\x9B\x00\x01\x00\x00\x01\x73\xDE\xDF\x7D\x9B\x00\x00\x00\x00\x00\x00\x00\x00\xF9\x7D\xDF\xDE\x73\x01\x00\x00\x01\x01\x05\x41\x6C\x69\x63\x65\xEB\x7D\xDF\xDE\x73\x01\x00\x00\x01\x00\x00\x01\x73\xDE\xDF\x7D\x9B\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\xB2\xA8\xA7\x5F\x1B\x61\x72\xD5",
    ),
    (
        "zset ziplist invalid tail offset",
        b"\x0C\x19\x19\x00\x00\x00\x02\x00\x00\x00\x06\x00\x00\xF1\x02\xF1\x02\x02\x5F\x31\x04\xF2\x02\xF3\x02\xF3\xFF\x09\x00\x4D\x72\x7B\x97\xCD\x9A\x70\xC1",
    ),
    (
        "quicklist ziplist tail followed by extra data",
        b"\x0E\x01\x11\x11\x00\x00\x00\x0A\x00\x00\x00\x01\x00\x00\xF6\xFF\xB0\x6C\x9C\xFF\x09\x00\x9C\x37\x47\x49\x4D\xDE\x94\xF5",
    ),
    (
        "stream with bad lpFirst",
        b"\x0F\x01\x10\x00\x00\x01\x7B\x0E\x52\xD2\xEC\x00\x00\x00\x00\x00\x00\x00\x00\x40\x42\x42\x00\x00\x00\x18\x00\x02\xF7\x01\x01\x02\x01\x84\x69\x74\x65\x6D\x05\x85\x76\x61\x6C\x75\x65\x06\x00\x01\x02\x01\x00\x01\x00\x01\x01\x01\x00\x01\x05\x01\x03\x01\x01\x01\x00\x01\x01\x01\x82\x5F\x31\x03\x05\x01\x02\x01\x01\x01\x01\x01\x01\x01\x02\x01\x05\x01\xFF\x02\x81\x00\x00\x01\x7B\x0E\x52\xD2\xED\x01\x01\x07\x6D\x79\x67\x72\x6F\x75\x70\x81\x00\x00\x01\x7B\x0E\x52\xD2\xED\x00\x01\x00\x00\x01\x7B\x0E\x52\xD2\xED\x00\x00\x00\x00\x00\x00\x00\x00\xED\xD2\x52\x0E\x7B\x01\x00\x00\x01\x01\x05\x41\x6C\x69\x63\x65\xED\xD2\x52\x0E\x7B\x01\x00\x00\x01\x00\x00\x01\x7B\x0E\x52\xD2\xED\x00\x00\x00\x00\x00\x00\x00\x00\x09\x00\xAC\x05\xC9\x97\x5D\x45\x80\xB3",
    ),
];

/// What redis-server 7.0 accepts under `sanitize-dump-payload no` (only
/// the listpack header is checked) and asserts on at the first read (the
/// unit's "stream bad lp_count - unsanitized").
const REDIS_ACCEPTS_UNSANITIZED: &[&str] = &["stream bad lp_count"];
/// What kills redis-server 7.0 in the RESTORE itself under
/// `sanitize-dump-payload no` (the unit restores it only under `yes`).
const REDIS_CRASHES_UNSANITIZED: &[&str] = &["stream with bad lpFirst"];

fn restore(c: &mut RawConn, key: &str, payload: &[u8]) -> String {
    String::from_utf8_lossy(&c.cmd(&[b"RESTORE", key.as_bytes(), b"0", payload, b"REPLACE"]))
        .into_owned()
}

fn set(c: &mut RawConn, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    assert_eq!(c.cmd(&args), b"+OK\r\n", "{args:?}");
}

#[test]
fn corrupt_payloads_get_redis_replies() {
    let args = ["--enable-debug-command", "yes", "--loglevel", "verbose"];
    let z = ZwindowServer::start(&args);
    let r = RedisServer::start_with(&args);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    for c in [&mut zc, &mut rc] {
        // A few payloads of the unit carry a wrong checksum.
        set(c, &["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]);
    }
    for mode in ["no", "yes", "clients"] {
        for c in [&mut zc, &mut rc] {
            set(c, &["CONFIG", "SET", "sanitize-dump-payload", mode]);
        }
        for (i, (name, payload)) in PAYLOADS.iter().enumerate() {
            let key = format!("k{i}");
            if mode == "no" && REDIS_CRASHES_UNSANITIZED.contains(name) {
                let zr = restore(&mut zc, &key, payload);
                assert_eq!(zr, "-ERR Bad data format\r\n", "zwindow, {name}");
                continue;
            }
            let (zr, rr) = (
                restore(&mut zc, &key, payload),
                restore(&mut rc, &key, payload),
            );
            if mode == "no" && REDIS_ACCEPTS_UNSANITIZED.contains(name) {
                assert_eq!(rr, "+OK\r\n", "redis-server, {name}");
                assert_eq!(zr, "-ERR Bad data format\r\n", "zwindow, {name}");
                continue;
            }
            assert_eq!(zr, rr, "sanitize-dump-payload {mode}: {name}");
        }
        if mode == "no" {
            // Redis's report, at verbose level, in the RESTORE's context.
            // The log is read on a thread: give it a moment.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            let mut log = z.log_tail();
            while !log.contains("rdb.c:2362") && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
                log = z.log_tail();
            }
            for line in [
                "Internal error in RDB reading offset 0, function at rdb.c:2275 -> Hash ziplist integrity check failed.",
                "function at rdb.c:2081 -> Ziplist integrity check failed.",
                "function at rdb.c:2543 -> Duplicate stream consumer detected.",
                "function at rdb.c:2130 -> Zipmap integrity check failed.",
                "function at rdb.c:2229 -> Zset ziplist integrity check failed.",
                "function at rdb.c:2362 -> Stream listpack integrity check failed.",
            ] {
                assert!(log.contains(line), "no {line:?} in the log:\n{log}");
            }
        }
    }
    // The valid one reads back the same.
    for c in [&mut zc, &mut rc] {
        assert_eq!(
            c.cmd(&[b"HSET", b"k8", b"394891450", b"1635910264"]),
            b":1\r\n"
        );
    }
    assert_eq!(
        zc.cmd(&[b"HGETALL", b"k8"]).len(),
        rc.cmd(&[b"HGETALL", b"k8"]).len()
    );
}

/// An RDB file holding the first payload's hash as its only key (RDB 10,
/// no checksum).
fn corrupt_file() -> Vec<u8> {
    let body = &PAYLOADS[0].1[1..PAYLOADS[0].1.len() - 10];
    let mut f = b"REDIS0010".to_vec();
    f.extend_from_slice(&[0xFE, 0, 13, 3]);
    f.extend_from_slice(b"key");
    f.extend_from_slice(body);
    f.push(0xFF);
    f.extend_from_slice(&[0; 8]);
    f
}

#[test]
fn a_corrupt_file_stops_the_server_as_redis_does() {
    let dir = common::PrivateDir::new("corrupt-rdb");
    std::fs::write(dir.0.join("dump.rdb"), corrupt_file()).unwrap();
    let d = dir.0.to_string_lossy().into_owned();
    let args = ["--dir", d.as_str(), "--sanitize-dump-payload", "no"];
    let redis = RedisServer::try_start_with(&args);
    assert!(redis.is_err(), "redis-server loaded the corrupt file");
    // zwindow listens before it loads: wait for its exit instead.
    let port = common::free_port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--bind", "127.0.0.1", "--port", port.as_str()])
        .args(args)
        .output()
        .expect("run zwindow");
    assert!(!out.status.success(), "zwindow loaded the corrupt file");
    let why =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    for line in [
        "Internal error in RDB reading offset 0, function at rdb.c:2275 -> Hash ziplist integrity check failed.",
        "Terminating server after rdb file reading failure.",
    ] {
        assert!(why.contains(line), "no {line:?} in:\n{why}");
    }
    assert_eq!(why.matches("integrity check failed").count(), 2, "{why}");
}

fn sanitizations(c: &mut RawConn) -> String {
    let info = String::from_utf8_lossy(&c.cmd(&[b"INFO", b"stats"])).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("dump_payload_sanitizations:"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// INFO's `dump_payload_sanitizations` counts the listpacks and intsets
/// Redis checks deeply: under `yes`, and under `clients` unless the user
/// is `skip-sanitize-payload`.
#[test]
fn sanitizations_are_counted_as_redis_counts_them() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let mut src = r.conn();
    for line in [
        "HSET h a 1 b 2",
        "ZADD z 1 a 2 b",
        "RPUSH l a b c",
        "SADD s 1 2 3",
        "XADD x 1-1 f v",
    ] {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        src.cmd(&args);
    }
    let dumps: Vec<Vec<u8>> = ["h", "z", "l", "s", "x"]
        .iter()
        .map(|k| {
            let reply = src.cmd(&[b"DUMP", k.as_bytes()]);
            let body = reply.splitn(2, |&b| b == b'\n').nth(1).unwrap();
            body[..body.len() - 2].to_vec()
        })
        .collect();
    let (mut zc, mut rc) = (z.conn(), r.conn());
    for c in [&mut zc, &mut rc] {
        set(
            c,
            &[
                "ACL",
                "SETUSER",
                "skipper",
                "on",
                "nopass",
                "+@all",
                "~*",
                "skip-sanitize-payload",
            ],
        );
    }
    for (mode, user) in [
        ("no", "default"),
        ("yes", "default"),
        ("clients", "default"),
        ("clients", "skipper"),
    ] {
        for c in [&mut zc, &mut rc] {
            set(c, &["AUTH", "default", ""]);
            set(c, &["CONFIG", "SET", "sanitize-dump-payload", mode]);
            if user != "default" {
                set(c, &["AUTH", user, "x"]);
            }
            for d in &dumps {
                assert_eq!(restore(c, "k", d), "+OK\r\n");
            }
        }
        assert_eq!(
            sanitizations(&mut zc),
            sanitizations(&mut rc),
            "{mode}, {user}"
        );
    }
    assert_ne!(sanitizations(&mut rc), "0");
}
