//! WAITAOF (Redis 7.2) against redis-server 8.0.2 (`ZWINDOW_REDIS8_SERVER`):
//! its argument errors and texts, the immediate answers (no AOF, EXEC,
//! scripts), the local fsync under each `appendfsync` (always: at once;
//! everysec: within the second; no: never, so the timeout answers), the
//! error a blocked WAITAOF gets when the AOF is turned off, and the
//! replicas' side: `REPLCONF ACK … FACK` between zwindow and redis-server
//! both ways.
mod common;

use std::time::{Duration, Instant};

use common::repl::{eventually, info_field};
use common::*;

#[test]
fn errors_and_immediate_answers_match_redis8() {
    let s = Servers::start_redis8(&[]);
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        p.script(&[
            "WAITAOF",
            "WAITAOF 1 0",
            "WAITAOF 0 0 0 0",
            "WAITAOF x 0 0",
            "WAITAOF 2 0 0",
            "WAITAOF -1 0 0",
            "WAITAOF 0 x 0",
            "WAITAOF 0 -1 0",
            "WAITAOF 0 0 x",
            "WAITAOF 0 0 -1",
            "WAITAOF 0 0 9223372036854775807",
            // WAIT and CLIENT PAUSE read their timeouts the same way (a
            // deadline past LLONG_MAX is out of range: it hung WAIT).
            "WAIT 2 9223372036854775808",
            "WAIT 2 9223372036854775807",
            "WAIT 2 -1",
            "WAIT 2 x",
            "CLIENT PAUSE 9223372036854775807",
            "CLIENT PAUSE 9223372036854775808",
            "CLIENT PAUSE -1",
            "WAITAOF 1 -1 0",
            "WAITAOF 1 0 0",
            "WAITAOF 0 0 0",
            "SET k v",
            "WAITAOF 0 0 0",
            "WAITAOF 0 1 20",
            "MULTI",
            "WAITAOF 0 1 0",
            "WAITAOF 1 0 0",
            "EXEC",
            "EVAL \"return redis.call('waitaof', 0, 1, 0)\" 0",
            "EVAL \"return redis.pcall('waitaof', 1, 0, 0)\" 0",
        ]);
    }
    // On a replica (of a primary that is not there): arguments first.
    let mut p = s.pair();
    let port = free_port().to_string();
    p.both_str(&format!("REPLICAOF 127.0.0.1 {port}"));
    p.script(&[
        "WAITAOF 0 0 0",
        "WAITAOF 2 0 0",
        "WAITAOF 1 0 0",
        "WAIT 0 0",
    ]);
    p.both_str("REPLICAOF NO ONE");
}

/// A blocked WAITAOF released by CLIENT UNBLOCK answers the counts so far
/// (or Redis's UNBLOCKED error).
#[test]
fn client_unblock_releases_waitaof_as_redis8() {
    let s = Servers::start_redis8(&[]);
    for how in ["", "TIMEOUT", "ERROR"] {
        let mut p = s.pair();
        let mut admin = s.pair();
        p.check_str("SET k v");
        let ids: Vec<i64> = [&mut p.r, &mut p.z]
            .into_iter()
            .map(|c| parse_reply(&c.cmd_str("CLIENT ID")).int())
            .collect();
        let cmd = encode_cmd(&[b"WAITAOF", b"0", b"1", b"0"]);
        p.r.send(&cmd);
        p.z.send(&cmd);
        for (c, id) in [(&mut admin.r, ids[0]), (&mut admin.z, ids[1])] {
            eventually("WAITAOF blocked", || {
                info_field(c, "clients", "blocked_clients") == "1"
            });
            assert_eq!(c.cmd_str(&format!("CLIENT UNBLOCK {id} {how}")), b":1\r\n");
        }
        let (r, z) = (p.r.read_reply(), p.z.read_reply());
        assert!(
            replies_equivalent(&r, &z),
            "{how}: {} vs {}",
            escape(&r),
            escape(&z)
        );
    }
}

/// One `line` on both servers at once (each may block for a while);
/// their replies.
fn both_at_once(p: &mut Pair, line: &str) -> (Vec<u8>, Vec<u8>) {
    let cmd = encode_cmd(
        &split_args(line)
            .iter()
            .map(|a| a.as_slice())
            .collect::<Vec<_>>(),
    );
    p.r.send(&cmd);
    p.z.send(&cmd);
    (p.r.read_reply(), p.z.read_reply())
}

#[test]
fn local_fsync_as_redis8() {
    let s = Servers::start_redis8(&["--appendonly", "yes", "--auto-aof-rewrite-percentage", "0"]);
    let mut p = s.pair();
    // always: fsynced before the write's reply.
    p.check_str("CONFIG SET appendfsync always");
    p.check_str("INCR foo");
    p.check_str("WAITAOF 1 0 0");
    // everysec: within the second.
    p.check_str("CONFIG SET appendfsync everysec");
    p.check_str("INCR foo");
    let start = Instant::now();
    let (r, z) = both_at_once(&mut p, "WAITAOF 1 0 0");
    assert_eq!(r, b"*2\r\n:1\r\n:0\r\n");
    assert!(replies_equivalent(&r, &z), "zwindow: {}", escape(&z));
    assert!(start.elapsed() < Duration::from_secs(3));
    // no: never fsynced, so the timeout answers.
    p.check_str("CONFIG SET appendfsync no");
    p.check_str("INCR foo");
    let (r, z) = both_at_once(&mut p, "WAITAOF 1 0 50");
    assert_eq!(r, b"*2\r\n:0\r\n:0\r\n");
    assert!(replies_equivalent(&r, &z), "zwindow: {}", escape(&z));
    // A replica count is waited for too, and answered at the timeout.
    let (r, z) = both_at_once(&mut p, "WAITAOF 0 1 50");
    assert!(
        replies_equivalent(&r, &z),
        "{} vs {}",
        escape(&r),
        escape(&z)
    );
    // Blocked, then the AOF turned off: the error.
    p.check_str("INCR foo");
    let cmd = encode_cmd(&[b"WAITAOF", b"1", b"0", b"0"]);
    p.r.send(&cmd);
    p.z.send(&cmd);
    let mut admin = s.pair();
    // Blocked: counted in INFO as Redis counts it.
    for (name, c) in [("redis", &mut admin.r), ("zwindow", &mut admin.z)] {
        eventually(&format!("{name}: WAITAOF blocked"), || {
            String::from_utf8_lossy(&c.cmd_str("CLIENT LIST")).contains("flags=b")
        });
        assert_eq!(info_field(c, "clients", "blocked_clients"), "1", "{name}");
    }
    admin.check_str("CONFIG SET appendonly no");
    let (r, z) = (p.r.read_reply(), p.z.read_reply());
    assert!(
        r.starts_with(b"-ERR WAITAOF cannot be used"),
        "{}",
        escape(&r)
    );
    assert!(replies_equivalent(&r, &z), "zwindow: {}", escape(&z));
    p.check_str("WAITAOF 1 0 0");
    p.check_str("WAITAOF 0 0 0");
}

/// A primary counts the replicas whose FACK covers the client's write:
/// zwindow's primary with a redis-server 8.0 replica, and redis-server's
/// primary with a zwindow replica, answer as two redis-servers do.
#[test]
fn replicas_fack_between_zwindow_and_redis8() {
    let exe = redis8_server();
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    // Each primary with a replica of the other kind, plus the reference:
    // a redis-server primary with a redis-server replica.
    let zp = ZwindowServer::start(&[]);
    let rp = RedisServer::start_binary(&exe, &[]);
    let refp = RedisServer::start_binary(&exe, &[]);
    let with = |port: u16| {
        let mut a = vec![
            "--replicaof".to_string(),
            "127.0.0.1".into(),
            port.to_string(),
        ];
        a.extend(aof.iter().map(|s| s.to_string()));
        a
    };
    let zp_args = with(zp.port());
    let rp_args = with(rp.port());
    let ref_args = with(refp.port());
    let r_of_z = RedisServer::start_binary(&exe, &strs(&zp_args));
    let z_of_r = ZwindowServer::start(&strs(&rp_args));
    let r_of_ref = RedisServer::start_binary(&exe, &strs(&ref_args));
    for mut c in [r_of_z.conn(), z_of_r.conn(), r_of_ref.conn()] {
        eventually("the replica's link", || {
            info_field(&mut c, "replication", "master_link_status") == "up"
        });
    }
    let mut answers = Vec::new();
    for (name, mut c) in [
        ("zwindow", zp.conn()),
        ("redis", rp.conn()),
        ("reference", refp.conn()),
    ] {
        // The replica fsyncs (always) and answers GETACK with FACK; two
        // replicas never come, so the timeout answers.
        let seen: Vec<Vec<u8>> = [
            "SET k v",
            "WAITAOF 0 1 5000",
            "INCR n",
            "WAITAOF 0 1 5000",
            "WAITAOF 0 2 100",
            "WAIT 1 5000",
        ]
        .iter()
        .map(|l| c.cmd_str(l))
        .collect();
        answers.push((name, seen));
    }
    let reference = answers[2].1.clone();
    assert_eq!(reference[1], b"*2\r\n:0\r\n:1\r\n");
    for (name, seen) in &answers[..2] {
        for (i, (a, b)) in reference.iter().zip(seen).enumerate() {
            assert!(
                replies_equivalent(a, b),
                "{name} primary, reply {i}: {} vs reference {}",
                escape(b),
                escape(a)
            );
        }
    }
    // A replica without AOF sends no FACK: none counts.
    let mut c = z_of_r.conn();
    c.cmd_str("CONFIG SET appendonly no");
    let mut rc = rp.conn();
    rc.cmd_str("SET k w");
    let deadline = Instant::now() + Duration::from_secs(5);
    let reply = rc.cmd_str("WAITAOF 0 1 300");
    assert!(Instant::now() < deadline);
    // Its FACK so far still counts for the old write only: the new one
    // is acknowledged by WAIT, not by WAITAOF.
    assert_eq!(reply, b"*2\r\n:0\r\n:0\r\n", "{}", escape(&reply));
    assert_eq!(rc.cmd_str("WAIT 1 5000"), b":1\r\n");
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
