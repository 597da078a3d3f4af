//! Redis 8.4's compare-and-set string commands (SET IFEQ/IFNE/IFDEQ/IFDNE,
//! DELEX, DIGEST, MSETEX) and Redis 8.8's INCREX. No installed redis-server
//! has them (8.0.2 is the newest), so these tests follow redis.io's command
//! pages: every option, reply (RESP2 and RESP3), error, keyspace
//! notification, and what each logs to the append-only file.
mod common;

use std::path::Path;

use common::repl::{digest, eventually, info_field, settle};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer, escape, find_redis_server};

/// One command and the exact reply bytes it must get.
fn expect(c: &mut RawConn, line: &str, want: &str) {
    let got = c.cmd_str(line);
    assert_eq!(escape(&got), escape(want.as_bytes()), "reply to {line}");
}

fn script(c: &mut RawConn, steps: &[(&str, &str)]) {
    for (line, want) in steps {
        expect(c, line, want);
    }
}

fn conn3(s: &ZwindowServer) -> RawConn {
    let mut c = s.conn();
    let hello = c.cmd_str("HELLO 3");
    assert!(hello.starts_with(b"%"), "{}", escape(&hello));
    c
}

/// "Hello world"'s digest, as redis.io's DIGEST page shows it.
const HELLO_DIGEST: &str = "b6acb9d84a38ff74";

#[test]
fn digest_replies() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    script(
        &mut c,
        &[
            ("SET key1 \"Hello world\"", "+OK\r\n"),
            ("DIGEST key1", &format!("$16\r\n{HELLO_DIGEST}\r\n")),
            ("DIGEST missing", "$-1\r\n"),
            ("RPUSH l a", ":1\r\n"),
            (
                "DIGEST l",
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            (
                "DIGEST",
                "-ERR wrong number of arguments for 'digest' command\r\n",
            ),
            (
                "DIGEST a b",
                "-ERR wrong number of arguments for 'digest' command\r\n",
            ),
            // An int-encoded value hashes its text.
            ("SET n 12345", "+OK\r\n"),
            ("SET s 12345x", "+OK\r\n"),
            ("SETRANGE s 5 ''", ":6\r\n"),
        ],
    );
    let n = c.cmd_str("DIGEST n");
    let s2 = c.cmd_str("DIGEST s");
    assert_ne!(n, s2);
    assert_eq!(n.len(), b"$16\r\n\r\n".len() + 16);
    let mut c3 = conn3(&s);
    expect(
        &mut c3,
        "DIGEST key1",
        &format!("$16\r\n{HELLO_DIGEST}\r\n"),
    );
    expect(&mut c3, "DIGEST missing", "_\r\n");
}

#[test]
fn set_conditions() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    let d = HELLO_DIGEST;
    let up = d.to_uppercase();
    script(
        &mut c,
        &[
            // IFEQ: only an existing, equal value; a missing key is not created.
            ("SET k v IFEQ v", "$-1\r\n"),
            ("EXISTS k", ":0\r\n"),
            ("SET k v", "+OK\r\n"),
            ("SET k w IFEQ x", "$-1\r\n"),
            ("GET k", "$1\r\nv\r\n"),
            ("SET k w IFEQ v", "+OK\r\n"),
            ("GET k", "$1\r\nw\r\n"),
            // IFNE: a missing key is created; an equal value is kept.
            ("SET n v IFNE x", "+OK\r\n"),
            ("GET n", "$1\r\nv\r\n"),
            ("SET n v IFNE v", "$-1\r\n"),
            ("SET n v2 IFNE x", "+OK\r\n"),
            ("SET n v3 IFNE v2", "$-1\r\n"),
            ("GET n", "$2\r\nv2\r\n"),
            // IFDEQ / IFDNE against DIGEST's hex, in either case.
            ("SET h \"Hello world\"", "+OK\r\n"),
            (&format!("SET h x IFDEQ 0{}", &d[1..]), "$-1\r\n"),
            (&format!("SET h x IFDNE {d}"), "$-1\r\n"),
            (&format!("SET h x IFDEQ {up}"), "+OK\r\n"),
            (&format!("SET h y IFDNE {d}"), "+OK\r\n"),
            ("GET h", "$1\r\ny\r\n"),
            ("SET nd x IFDEQ 0", "$-1\r\n"),
            ("EXISTS nd", ":0\r\n"),
            ("SET nd x IFDNE 0", "+OK\r\n"),
            ("GET nd", "$1\r\nx\r\n"),
            // GET replies the old value whether or not the condition held.
            ("SET k z IFEQ nope GET", "$1\r\nw\r\n"),
            ("GET k", "$1\r\nw\r\n"),
            ("SET k z GET IFEQ w", "$1\r\nw\r\n"),
            ("GET k", "$1\r\nz\r\n"),
            ("SET gm v IFEQ x GET", "$-1\r\n"),
            ("EXISTS gm", ":0\r\n"),
            // Another type: WRONGTYPE with a condition, untouched.
            ("RPUSH l a", ":1\r\n"),
            (
                "SET l v IFNE x",
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            (
                "SET l v IFEQ a GET",
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            ("TYPE l", "+list\r\n"),
            // Conditions with an expiry.
            ("SET k e IFEQ z EX 100", "+OK\r\n"),
            ("TTL k", ":100\r\n"),
            ("SET k e2 IFEQ e KEEPTTL", "+OK\r\n"),
            ("TTL k", ":100\r\n"),
            ("SET k e3 IFEQ e2", "+OK\r\n"),
            ("TTL k", ":-1\r\n"),
            ("SET k e4 IFEQ nope PX 5000", "$-1\r\n"),
            ("TTL k", ":-1\r\n"),
            // Grammar: one condition, never with NX/XX, always an argument.
            ("SET k v IFEQ", "-ERR syntax error\r\n"),
            ("SET k v IFEQ a IFNE b", "-ERR syntax error\r\n"),
            ("SET k v IFEQ a IFEQ b", "-ERR syntax error\r\n"),
            ("SET k v NX IFEQ a", "-ERR syntax error\r\n"),
            ("SET k v IFEQ a XX", "-ERR syntax error\r\n"),
            ("SET k v IFDEQ a NX", "-ERR syntax error\r\n"),
            (
                "SET k v ifne a ex 0",
                "-ERR invalid expire time in 'set' command\r\n",
            ),
            ("GET k", "$2\r\ne3\r\n"),
        ],
    );
    let mut c3 = conn3(&s);
    expect(&mut c3, "SET k v IFEQ nope", "_\r\n");
    expect(&mut c3, "SET k v IFEQ e3", "+OK\r\n");
}

#[test]
fn delex_replies() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    let d = HELLO_DIGEST;
    script(
        &mut c,
        &[
            ("DELEX missing", ":0\r\n"),
            ("SET k v", "+OK\r\n"),
            ("DELEX k", ":1\r\n"),
            ("EXISTS k", ":0\r\n"),
            // Without a condition any type goes, as with DEL.
            ("RPUSH l a", ":1\r\n"),
            ("DELEX l", ":1\r\n"),
            ("RPUSH l a", ":1\r\n"),
            (
                "DELEX l IFNE x",
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            ("SET k v", "+OK\r\n"),
            ("DELEX k IFEQ w", ":0\r\n"),
            ("DELEX k IFNE v", ":0\r\n"),
            ("DELEX k ifeq v", ":1\r\n"),
            ("SET k v", "+OK\r\n"),
            ("DELEX k IFNE w", ":1\r\n"),
            // A missing key meets no condition: nothing to delete.
            ("DELEX k IFNE w", ":0\r\n"),
            ("DELEX k IFDNE 0", ":0\r\n"),
            ("SET h \"Hello world\"", "+OK\r\n"),
            ("DELEX h IFDEQ 0", ":0\r\n"),
            (&format!("DELEX h IFDNE {d}"), ":0\r\n"),
            (&format!("DELEX h IFDEQ {}", d.to_uppercase()), ":1\r\n"),
            ("SET h \"Hello world\"", "+OK\r\n"),
            ("DELEX h IFDNE 0", ":1\r\n"),
            ("DELEX k IFEQ", "-ERR syntax error\r\n"),
            ("DELEX k IFXX v", "-ERR syntax error\r\n"),
            ("DELEX k IFEQ a b", "-ERR syntax error\r\n"),
            (
                "DELEX",
                "-ERR wrong number of arguments for 'delex' command\r\n",
            ),
        ],
    );
}

#[test]
fn msetex_replies() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    script(
        &mut c,
        &[
            ("MSETEX 2 a 1 b 2", ":1\r\n"),
            ("MGET a b", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"),
            ("TTL a", ":-1\r\n"),
            ("MSETEX 2 a 3 b 4 EX 100", ":1\r\n"),
            ("TTL b", ":100\r\n"),
            ("MSETEX 1 a 5 KEEPTTL", ":1\r\n"),
            ("TTL a", ":100\r\n"),
            ("MSETEX 1 a 6", ":1\r\n"),
            ("TTL a", ":-1\r\n"),
            ("MSETEX 1 a 7 PX 100000", ":1\r\n"),
            ("TTL a", ":100\r\n"),
            ("MSETEX 1 a 8 EXAT 4000000000", ":1\r\n"),
            ("EXPIRETIME a", ":4000000000\r\n"),
            ("MSETEX 1 a 9 PXAT 4000000000123", ":1\r\n"),
            ("PEXPIRETIME a", ":4000000000123\r\n"),
            // NX: none may exist; XX: all must.
            ("MSETEX 2 a x c y NX", ":0\r\n"),
            ("EXISTS c", ":0\r\n"),
            ("MSETEX 2 c x d y NX EX 10", ":1\r\n"),
            ("MSETEX 2 a x e y XX", ":0\r\n"),
            ("GET a", "$1\r\n9\r\n"),
            ("MSETEX 2 a x c y PX 5000 XX", ":1\r\n"),
            ("MGET a c", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
            // Any type is overwritten, as MSET does.
            ("RPUSH l v", ":1\r\n"),
            ("MSETEX 1 l s", ":1\r\n"),
            ("GET l", "$1\r\ns\r\n"),
            // Errors.
            (
                "MSETEX 1 a",
                "-ERR wrong number of arguments for 'msetex' command\r\n",
            ),
            ("MSETEX a 1 b 2", "-ERR invalid numkeys value\r\n"),
            ("MSETEX 0 a 1", "-ERR invalid numkeys value\r\n"),
            ("MSETEX -1 a 1", "-ERR invalid numkeys value\r\n"),
            ("MSETEX 2147483648 a 1", "-ERR invalid numkeys value\r\n"),
            (
                "MSETEX 2147483647 a 1",
                "-ERR wrong number of key-value pairs\r\n",
            ),
            ("MSETEX 2 a 1 b", "-ERR wrong number of key-value pairs\r\n"),
            ("MSETEX 1 a 1 bogus", "-ERR syntax error\r\n"),
            ("MSETEX 1 a 1 NX XX", "-ERR syntax error\r\n"),
            ("MSETEX 1 a 1 EX 10 PX 10", "-ERR syntax error\r\n"),
            ("MSETEX 1 a 1 KEEPTTL EX 10", "-ERR syntax error\r\n"),
            ("MSETEX 1 a 1 EX", "-ERR syntax error\r\n"),
            (
                "MSETEX 1 a 1 EX 0",
                "-ERR invalid expire time in 'msetex' command\r\n",
            ),
            (
                "MSETEX 1 a 1 EX x",
                "-ERR value is not an integer or out of range\r\n",
            ),
            ("GET a", "$1\r\nx\r\n"),
        ],
    );
    // Its keys, for cluster routing and COMMAND GETKEYS: every other argument.
    expect(
        &mut c,
        "COMMAND GETKEYS MSETEX 2 k1 v1 k2 v2 EX 10",
        "*2\r\n$2\r\nk1\r\n$2\r\nk2\r\n",
    );
}

/// The commands of an incremental AOF, each as its arguments joined by
/// spaces; a deadline computed from "now" shown as `<ms>`.
fn log_lines(dir: &Path) -> Vec<String> {
    let path = dir.join("appendonlydir").join("appendonly.aof.1.incr.aof");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    let mut rest = &data[..];
    let line = |rest: &mut &[u8]| -> usize {
        let end = rest.windows(2).position(|w| w == b"\r\n").expect("a line");
        let n = std::str::from_utf8(&rest[1..end]).unwrap().parse().unwrap();
        *rest = &rest[end + 2..];
        n
    };
    while !rest.is_empty() {
        assert_eq!(rest[0], b'*', "{}", escape(rest));
        let argc = line(&mut rest);
        let mut argv = Vec::new();
        for _ in 0..argc {
            let len = line(&mut rest);
            let a = String::from_utf8_lossy(&rest[..len]).into_owned();
            rest = &rest[len + 2..];
            argv.push(match a.parse::<u64>() {
                Ok(n) if n >= 1_000_000_000_000 && n != 4_000_000_000_123 => "<ms>".to_string(),
                _ => a,
            });
        }
        out.push(argv.join(" "));
    }
    out
}

fn aof_server(dir: &Path) -> ZwindowServer {
    ZwindowServer::start(&[
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ])
}

#[test]
fn cas_commands_log_their_effect() {
    let dir = PrivateDir::new("strings-cas-aof");
    let s = aof_server(&dir.0);
    let mut c = s.conn();
    for line in [
        "SET k v",
        "SET k w IFEQ nope",
        "SET k w IFEQ v",
        "SET k x IFNE v GET",
        "SET k y IFEQ x EX 100",
        "SET k z IFEQ y KEEPTTL",
        "SET k z2 IFDNE 0 PXAT 4000000000123",
        "DELEX k IFEQ nope",
        "DELEX k IFEQ z2",
        "SET j v",
        "DELEX j",
        "DELEX j",
        "MSETEX 2 a 1 b 2 NX EX 100",
        "MSETEX 2 a 1 b 2 NX",
        "MSETEX 1 a 3 XX KEEPTTL",
        "SET a 4",
        "DIGEST a",
    ] {
        let r = c.cmd_str(line);
        assert!(!r.starts_with(b"-"), "{line}: {}", escape(&r));
    }
    let lines = log_lines(&dir.0);
    let body: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("SELECT"))
        .collect();
    assert_eq!(
        body,
        [
            "SET k v",
            "SET k w",
            "SET k x",
            "SET k y PXAT <ms>",
            "SET k z KEEPTTL",
            "SET k z2 PXAT 4000000000123",
            "DEL k",
            "SET j v",
            "DEL j",
            "MULTI",
            "SET a 1 PXAT <ms>",
            "SET b 2 PXAT <ms>",
            "EXEC",
            "SET a 3 KEEPTTL",
            "SET a 4",
        ]
    );
    // Replayed after a restart, the log rebuilds the same values and deadlines.
    for line in [
        "INCREX n BYINT 4 EX 1000",
        "INCREX f BYFLOAT 0.1 PXAT 4000000000123",
    ] {
        c.cmd_str(line);
    }
    let before = state(&mut c);
    let mut s = s;
    s.terminate(std::time::Duration::from_secs(10));
    let s = aof_server(&dir.0);
    assert_eq!(state(&mut s.conn()), before);
}

/// Reads notifications until one names `end`.
fn events_until(sub: &mut RawConn, end: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let r = sub.read_reply();
        let parts = common::parse_reply(&r);
        let items = parts.array();
        let event = String::from_utf8_lossy(items[2].bulk()).into_owned();
        let key = String::from_utf8_lossy(items[3].bulk()).into_owned();
        let event = event.trim_start_matches("__keyevent@0__:").to_string();
        if key == end {
            return out;
        }
        out.push(format!("{event} {key}"));
    }
}

#[test]
fn cas_notifications() {
    let s = ZwindowServer::start(&["--notify-keyspace-events", "KEA"]);
    let mut sub = s.conn();
    sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
    let mut c = s.conn();
    for line in [
        "SET k v IFEQ nope",
        "SET k v IFNE nope",
        "SET k w IFEQ v EX 100",
        "DELEX k IFEQ nope",
        "DELEX k IFNE nope",
        "MSETEX 2 a 1 b 2 PX 100000",
        "MSETEX 1 a 1 NX",
        "MSETEX 1 a 3",
        "DELEX a",
        "DIGEST b",
        "SET end 1",
    ] {
        c.cmd_str(line);
    }
    assert_eq!(
        events_until(&mut sub, "end"),
        [
            "set k", "set k", "expire k", "del k", "set a", "expire a", "set b", "expire b",
            "set a", "del a",
        ]
    );
}

#[test]
fn increx_integers() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    script(
        &mut c,
        &[
            ("INCREX n", "*2\r\n:1\r\n:1\r\n"),
            ("INCREX n BYINT 5", "*2\r\n:6\r\n:5\r\n"),
            ("INCREX n byint -10", "*2\r\n:-4\r\n:-10\r\n"),
            ("OBJECT ENCODING n", "$3\r\nint\r\n"),
            // Out of an explicit bound: [current, 0], key untouched.
            ("INCREX n BYINT 10 UBOUND 5", "*2\r\n:-4\r\n:0\r\n"),
            ("INCREX n BYINT -10 LBOUND -5", "*2\r\n:-4\r\n:0\r\n"),
            ("INCREX n BYINT 10 UBOUND 5 SATURATE", "*2\r\n:5\r\n:9\r\n"),
            (
                "INCREX n BYINT -100 LBOUND 0 UBOUND 10 SATURATE",
                "*2\r\n:0\r\n:-5\r\n",
            ),
            ("INCREX n BYINT 3 LBOUND 0 UBOUND 3", "*2\r\n:3\r\n:3\r\n"),
            // Type limits act as bounds.
            ("SET m 9223372036854775806", "+OK\r\n"),
            ("INCREX m BYINT 2", "*2\r\n:9223372036854775806\r\n:0\r\n"),
            (
                "INCREX m BYINT 2 SATURATE",
                "*2\r\n:9223372036854775807\r\n:1\r\n",
            ),
            ("SET m -9223372036854775807", "+OK\r\n"),
            (
                "INCREX m BYINT -5 SATURATE",
                "*2\r\n:-9223372036854775808\r\n:-1\r\n",
            ),
            // A missing key out of bounds is not created.
            ("INCREX none BYINT 5 UBOUND 1", "*2\r\n:0\r\n:0\r\n"),
            ("EXISTS none", ":0\r\n"),
            (
                "INCREX none BYINT 5 UBOUND 1 SATURATE",
                "*2\r\n:1\r\n:1\r\n",
            ),
            // Errors.
            ("SET f 1.5", "+OK\r\n"),
            (
                "INCREX f",
                "-ERR value is not an integer or out of range\r\n",
            ),
            ("RPUSH l a", ":1\r\n"),
            (
                "INCREX l",
                "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            ),
            (
                "INCREX n BYINT x",
                "-ERR value is not an integer or out of range\r\n",
            ),
            (
                "INCREX n BYINT 1.5",
                "-ERR value is not an integer or out of range\r\n",
            ),
            (
                "INCREX n LBOUND 1.5",
                "-ERR value is not an integer or out of range\r\n",
            ),
            (
                "INCREX n LBOUND 5 UBOUND 1",
                "-ERR LBOUND must be less than or equal to UBOUND\r\n",
            ),
            ("INCREX n BYINT 1 BYINT 2", "-ERR syntax error\r\n"),
            ("INCREX n BYINT 1 BYFLOAT 2", "-ERR syntax error\r\n"),
            ("INCREX n BYINT", "-ERR syntax error\r\n"),
            ("INCREX n SATURATE SATURATE", "-ERR syntax error\r\n"),
            ("INCREX n LBOUND 1 LBOUND 2", "-ERR syntax error\r\n"),
            ("INCREX n EX 10 PX 10", "-ERR syntax error\r\n"),
            ("INCREX n EX 10 PERSIST", "-ERR syntax error\r\n"),
            ("INCREX n ENX", "-ERR syntax error\r\n"),
            ("INCREX n PERSIST ENX", "-ERR syntax error\r\n"),
            ("INCREX n BOGUS", "-ERR syntax error\r\n"),
            (
                "INCREX n EX 0",
                "-ERR invalid expire time in 'increx' command\r\n",
            ),
            (
                "INCREX n PX -1",
                "-ERR invalid expire time in 'increx' command\r\n",
            ),
            (
                "INCREX",
                "-ERR wrong number of arguments for 'increx' command\r\n",
            ),
            ("GET n", "$1\r\n3\r\n"),
        ],
    );
}

#[test]
fn increx_expiry() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    script(
        &mut c,
        &[
            ("INCREX k EX 100", "*2\r\n:1\r\n:1\r\n"),
            ("TTL k", ":100\r\n"),
            // No expiry option: the TTL stays, as with INCR.
            ("INCREX k", "*2\r\n:2\r\n:1\r\n"),
            ("TTL k", ":100\r\n"),
            // ENX: only a key without a TTL gets one.
            ("INCREX k EX 500 ENX", "*2\r\n:3\r\n:1\r\n"),
            ("TTL k", ":100\r\n"),
            ("INCREX k PX 200000", "*2\r\n:4\r\n:1\r\n"),
            ("TTL k", ":200\r\n"),
            ("INCREX k PERSIST", "*2\r\n:5\r\n:1\r\n"),
            ("TTL k", ":-1\r\n"),
            ("INCREX k EXAT 4000000000 ENX", "*2\r\n:6\r\n:1\r\n"),
            ("EXPIRETIME k", ":4000000000\r\n"),
            ("INCREX k PXAT 4000000000123", "*2\r\n:7\r\n:1\r\n"),
            ("PEXPIRETIME k", ":4000000000123\r\n"),
            // Skipped: TTL untouched.
            ("INCREX k UBOUND 7 PERSIST", "*2\r\n:7\r\n:0\r\n"),
            ("PEXPIRETIME k", ":4000000000123\r\n"),
            ("INCREX k UBOUND 7 PERSIST SATURATE", "*2\r\n:7\r\n:0\r\n"),
            ("PEXPIRETIME k", ":-1\r\n"),
        ],
    );
}

#[test]
fn increx_floats() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    script(
        &mut c,
        &[
            ("INCREX f BYFLOAT 1.5", "*2\r\n$3\r\n1.5\r\n$3\r\n1.5\r\n"),
            // INCRBYFLOAT's long-double digits.
            (
                "INCREX f BYFLOAT 1000.1",
                "*2\r\n$22\r\n1001.59999999999999998\r\n$22\r\n1000.09999999999999998\r\n",
            ),
            ("SET f 10", "+OK\r\n"),
            (
                "INCREX f BYFLOAT 0.5 UBOUND 10.25",
                "*2\r\n$2\r\n10\r\n$1\r\n0\r\n",
            ),
            (
                "INCREX f BYFLOAT 0.5 UBOUND 10.25 SATURATE",
                "*2\r\n$5\r\n10.25\r\n$4\r\n0.25\r\n",
            ),
            (
                "INCREX f BYFLOAT -20 LBOUND -1.5 SATURATE",
                "*2\r\n$4\r\n-1.5\r\n$6\r\n-11.75\r\n",
            ),
            ("OBJECT ENCODING f", "$6\r\nembstr\r\n"),
            (
                "INCREX f BYFLOAT 1e5000",
                "-ERR value is not a valid float\r\n",
            ),
            (
                "INCREX f BYFLOAT abc",
                "-ERR value is not a valid float\r\n",
            ),
            (
                "INCREX f BYFLOAT 1 UBOUND x",
                "-ERR value is not a valid float\r\n",
            ),
            (
                "INCREX f BYFLOAT 1 LBOUND 2 UBOUND 1.5",
                "-ERR LBOUND must be less than or equal to UBOUND\r\n",
            ),
            ("SET s abc", "+OK\r\n"),
            ("INCREX s BYFLOAT 1", "-ERR value is not a valid float\r\n"),
        ],
    );
    let mut c3 = conn3(&s);
    expect(&mut c3, "INCREX g BYFLOAT 2.5", "*2\r\n,2.5\r\n,2.5\r\n");
    expect(
        &mut c3,
        "INCREX g BYFLOAT 1 UBOUND 3",
        "*2\r\n,2.5\r\n,0\r\n",
    );
    expect(
        &mut c3,
        "INCREX g BYINT 1",
        "-ERR value is not an integer or out of range\r\n",
    );
}

#[test]
fn increx_logs_and_notifies() {
    let dir = PrivateDir::new("strings-increx-aof");
    let s = ZwindowServer::start(&[
        "--dir",
        dir.0.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--notify-keyspace-events",
        "KEA",
    ]);
    let mut sub = s.conn();
    sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
    let mut c = s.conn();
    for line in [
        "INCREX k",
        "INCREX k BYINT 5 EX 100",
        "INCREX k BYINT 5 UBOUND 3",
        "INCREX k EX 10 ENX",
        "INCREX k PERSIST",
        "INCREX k PERSIST",
        "INCREX f BYFLOAT 1.5 PXAT 4000000000123",
        "SET end 1",
    ] {
        let r = c.cmd_str(line);
        assert!(!r.starts_with(b"-"), "{line}: {}", escape(&r));
    }
    assert_eq!(
        events_until(&mut sub, "end"),
        [
            "incrby k",
            "incrby k",
            "expire k",
            "incrby k",
            "incrby k",
            "persist k",
            "incrby k",
            "incrbyfloat f",
            "expire f",
        ]
    );
    let lines = log_lines(&dir.0);
    let body: Vec<&str> = lines
        .iter()
        .map(String::as_str)
        .filter(|l| !l.starts_with("SELECT"))
        .collect();
    assert_eq!(
        body,
        [
            "SET k 1",
            "SET k 6 PXAT <ms>",
            "SET k 7 PXAT <ms>",
            "SET k 8",
            "SET k 9",
            "SET f 1.5 PXAT 4000000000123",
            "SET end 1",
        ]
    );
}

/// COMMAND INFO as Redis's `src/commands/*.json` describe them (arity,
/// flags, first/last/step, categories, key spec flags and search).
#[test]
fn command_info_entries() {
    let s = ZwindowServer::start(&[]);
    let mut c = s.conn();
    let head = |name: &str, arity: i64, flags: &[&str], range: [i64; 3], acl: &[&str]| {
        let mut out = format!(
            "*1\r\n*10\r\n${}\r\n{name}\r\n:{arity}\r\n*{}\r\n",
            name.len(),
            flags.len()
        );
        for f in flags {
            out += &format!("+{f}\r\n");
        }
        for n in range {
            out += &format!(":{n}\r\n");
        }
        out += &format!("*{}\r\n", acl.len());
        for a in acl {
            out += &format!("+{a}\r\n");
        }
        out
    };
    for (name, want) in [
        (
            "delex",
            head(
                "delex",
                -2,
                &["write", "fast"],
                [1, 1, 1],
                &["@write", "@string", "@fast"],
            ),
        ),
        (
            "digest",
            head(
                "digest",
                2,
                &["readonly", "fast"],
                [1, 1, 1],
                &["@read", "@string", "@fast"],
            ),
        ),
        (
            "increx",
            head(
                "increx",
                -2,
                &["write", "denyoom", "fast"],
                [1, 1, 1],
                &["@write", "@string", "@fast"],
            ),
        ),
        (
            "msetex",
            head(
                "msetex",
                -4,
                &["write", "denyoom", "movablekeys"],
                [0, 0, 0],
                &["@write", "@string", "@slow"],
            ),
        ),
    ] {
        let got = c.cmd_str(&format!("COMMAND INFO {name}"));
        assert!(
            got.starts_with(want.as_bytes()),
            "{name}\n  got:  {}\n  want: {}…",
            escape(&got),
            escape(want.as_bytes())
        );
    }
    let got = String::from_utf8_lossy(&c.cmd_str("COMMAND INFO msetex")).into_owned();
    assert!(got.contains("+OW\r\n+update\r\n"), "{got}");
    assert!(got.contains("$6\r\nkeynum\r\n"), "{got}");
    // msetex.json's tips: one key per shard, every shard must succeed.
    assert!(
        got.contains("request_policy:multi_shard\r\n$29\r\nresponse_policy:all_succeeded\r\n"),
        "{got}"
    );
    let got = String::from_utf8_lossy(&c.cmd_str("COMMAND INFO delex")).into_owned();
    assert!(
        got.contains("+RW\r\n+delete\r\n+variable_flags\r\n"),
        "{got}"
    );
}

/// What the commands leave, read back the same way on primary and replica.
fn state(c: &mut RawConn) -> Vec<String> {
    ["k", "j", "a", "b", "n", "f", "h"]
        .iter()
        .flat_map(|k| [format!("GET {k}"), format!("PEXPIRETIME {k}")])
        .map(|line| escape(&c.cmd_str(&line)))
        .collect()
}

const REPLICATED: &[&str] = &[
    "SET k v",
    "SET k w IFEQ nope",
    "SET k w IFEQ v EX 1000",
    "SET k x IFNE v KEEPTTL GET",
    "SET j v",
    "DELEX j IFEQ v",
    "SET h \"Hello world\"",
    "SET h y IFDEQ b6acb9d84a38ff74",
    "INCREX n BYINT 5 EX 1000",
    "INCREX n BYINT 5 UBOUND 7 SATURATE",
    "INCREX n PERSIST",
    "INCREX f BYFLOAT 1000.1 PX 500000",
    "INCREX f BYFLOAT 1 UBOUND 3",
];

/// A zwindow replica ends with the primary's values and deadlines (and
/// DEBUG DIGEST), MSETEX included; a redis-server 7.0 replica, which knows
/// none of these commands, applies what they are logged as.
#[test]
fn replicas_apply_the_logged_effects() {
    let p = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let port = p.port().to_string();
    let z = ZwindowServer::start(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--enable-debug-command",
        "yes",
    ]);
    let r = RedisServer::start_binary(&find_redis_server(), &["--replicaof", "127.0.0.1", &port]);
    let (mut pc, mut zc, mut rc) = (p.conn(), z.conn(), r.conn());
    for c in [&mut zc, &mut rc] {
        eventually("the replica's link", || {
            info_field(c, "replication", "master_link_status") == "up"
        });
    }
    for line in REPLICATED {
        let reply = pc.cmd_str(line);
        assert!(!reply.starts_with(b"-"), "{line}: {}", escape(&reply));
    }
    settle(&mut pc, &mut [&mut zc, &mut rc]);
    let want = state(&mut pc);
    assert_eq!(state(&mut zc), want, "zwindow replica");
    assert_eq!(state(&mut rc), want, "redis-server 7.0 replica");
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
    // MSETEX reaches both as SETs (Redis 7.0 has no MSETEX).
    for line in ["MSETEX 2 a 1 b 2 EX 1000", "MSETEX 1 a 3 XX KEEPTTL"] {
        pc.cmd_str(line);
    }
    let acked = pc.cmd_str("WAIT 2 10000");
    assert!(acked.starts_with(b":"), "{}", escape(&acked));
    eventually("the zwindow replica's offset", || {
        info_field(&mut zc, "replication", "slave_repl_offset")
            == info_field(&mut pc, "replication", "master_repl_offset")
    });
    let want = state(&mut pc);
    assert_eq!(state(&mut zc), want);
    assert_eq!(digest(&mut zc), digest(&mut pc));
    assert_eq!(
        state(&mut rc),
        want,
        "redis-server 7.0 replica after MSETEX"
    );
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}
