//! Redis 8.0's rdb-channel replication (`repl-rdb-channel`): a full sync's
//! RDB over a second connection while the first (the main channel) gets
//! the stream from the snapshot's offset, which the replica buffers until
//! the RDB is loaded. Both roles against redis-server 8.0.2, zwindow with
//! zwindow, and the fallback with a Redis 7.0 primary (which answers
//! `+FULLRESYNC` on the one connection).

mod common;

use common::dataset::{ok, populate};
use common::repl::{digest, eventually, info_field};
use common::*;

/// A server either kind, seen through a connection and its port.
struct Side {
    conn: RawConn,
    port: u16,
}

/// The primary's settings for a full sync that lasts (each key saved
/// 1 ms later): long enough to see it and to write meanwhile.
fn slow_snapshot(p: &mut RawConn) {
    ok(p, "CONFIG SET repl-diskless-sync yes");
    ok(p, "CONFIG SET repl-diskless-sync-delay 0");
    ok(p, "CONFIG SET repl-rdb-channel yes");
    for i in 0..1500 {
        let k = format!("k{i}");
        p.cmd(&[b"SET", k.as_bytes(), b"value"]);
    }
    ok(p, "CONFIG SET rdb-key-save-delay 1000");
}

/// A marker written on the primary reached the replica.
fn caught_up(p: &mut RawConn, r: &mut RawConn, marker: &str) {
    assert_eq!(p.cmd(&[b"SET", b"marker", marker.as_bytes()]), b"+OK\r\n");
    let want = format!("${}\r\n{marker}\r\n", marker.len()).into_bytes();
    eventually("the replica to catch up", || {
        r.cmd(&[b"GET", b"marker"]) == want
    });
}

/// The replica syncs from the primary over the rdb channel: the primary
/// shows the main channel `send_bulk_and_stream` and the rdb channel
/// with CLIENT LIST's `SC` while the RDB goes; what is written meanwhile
/// reaches the replica through its buffer (`replica_full_sync_buffer_peak`),
/// and later writes through the stream.
fn syncs_over_the_rdb_channel(mut p: Side, mut r: Side) {
    populate(&mut p.conn);
    slow_snapshot(&mut p.conn);
    ok(&mut r.conn, "CONFIG SET repl-rdb-channel yes");
    let port = p.port.to_string();
    r.conn.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    eventually("the main channel streaming during the RDB", || {
        info_field(&mut p.conn, "replication", "slave0").contains("state=send_bulk_and_stream")
    });
    let list = String::from_utf8_lossy(&p.conn.cmd(&[b"CLIENT", b"LIST"])).into_owned();
    assert!(
        list.lines().any(|l| l.contains(" flags=SC ")),
        "no rdb channel in CLIENT LIST:\n{list}"
    );
    // Two replica connections, one replica listed.
    assert_eq!(
        info_field(&mut p.conn, "replication", "connected_slaves"),
        "1"
    );
    for i in 0..200 {
        let k = format!("during{i}");
        p.conn.cmd(&[b"SET", k.as_bytes(), b"x"]);
    }
    ok(&mut p.conn, "CONFIG SET rdb-key-save-delay 0");
    eventually("the link up", || {
        info_field(&mut r.conn, "replication", "master_link_status") == "up"
    });
    ok(&mut p.conn, "INCRBY during0counter 5");
    ok(&mut p.conn, "SELECT 2");
    ok(&mut p.conn, "HSET h2 a 1");
    ok(&mut p.conn, "SELECT 0");
    caught_up(&mut p.conn, &mut r.conn, "m1");
    assert_eq!(r.conn.cmd(&[b"GET", b"during199"]), b"$1\r\nx\r\n");
    assert_eq!(r.conn.cmd(&[b"GET", b"during0counter"]), b"$1\r\n5\r\n");
    assert_eq!(digest(&mut p.conn), digest(&mut r.conn), "DEBUG DIGEST");
    let peak: u64 = info_field(&mut r.conn, "replication", "replica_full_sync_buffer_peak")
        .parse()
        .unwrap();
    assert!(peak > 0, "the stream was not buffered during the RDB");
    assert_eq!(
        info_field(&mut r.conn, "replication", "replica_full_sync_buffer_size"),
        "0"
    );
    // One full sync (the rdb channel's), the main channel online and the
    // rdb channel gone.
    assert_eq!(info_field(&mut p.conn, "stats", "sync_full"), "1");
    eventually("the replica online", || {
        info_field(&mut p.conn, "replication", "slave0").contains("state=online")
    });
    let list = String::from_utf8_lossy(&p.conn.cmd(&[b"CLIENT", b"LIST"])).into_owned();
    assert!(!list.contains("flags=SC"), "{list}");
    assert_eq!(info_field(&mut r.conn, "stats", "total_error_replies"), "0");
}

const DEBUG: [&str; 2] = ["--enable-debug-command", "yes"];

fn side(conn: RawConn, port: u16) -> Side {
    Side { conn, port }
}

#[test]
fn a_redis_8_primary_feeds_a_zwindow_replica_over_the_rdb_channel() {
    let p = RedisServer::start_binary(&redis8_server(), &DEBUG);
    let r = ZwindowServer::start(&DEBUG);
    syncs_over_the_rdb_channel(side(p.conn(), p.port()), side(r.conn(), r.port()));
}

#[test]
fn a_zwindow_primary_feeds_a_redis_8_replica_over_the_rdb_channel() {
    let p = ZwindowServer::start(&DEBUG);
    let r = RedisServer::start_binary(&redis8_server(), &DEBUG);
    syncs_over_the_rdb_channel(side(p.conn(), p.port()), side(r.conn(), r.port()));
}

#[test]
fn a_zwindow_primary_feeds_a_zwindow_replica_over_the_rdb_channel() {
    let p = ZwindowServer::start(&DEBUG);
    let r = ZwindowServer::start(&DEBUG);
    syncs_over_the_rdb_channel(side(p.conn(), p.port()), side(r.conn(), r.port()));
}

/// Without `repl-diskless-sync` the primary does not offer the rdb
/// channel (Redis's condition): the sync goes over the one connection.
#[test]
fn no_rdb_channel_without_diskless_sync() {
    let p = ZwindowServer::start(&DEBUG);
    let r = RedisServer::start_binary(&redis8_server(), &DEBUG);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    ok(&mut pc, "CONFIG SET repl-diskless-sync no");
    ok(&mut pc, "SET a 1");
    let port = p.port().to_string();
    rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    eventually("the link up", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    caught_up(&mut pc, &mut rc, "m2");
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$1\r\n1\r\n");
    assert_eq!(
        info_field(&mut rc, "replication", "replica_full_sync_buffer_peak"),
        "0"
    );
}

/// A Redis 7.0 primary ignores `capa rdb-channel-repl` and answers
/// `+FULLRESYNC`: the zwindow replica syncs over the one connection.
#[test]
fn a_redis_7_primary_falls_back_to_the_one_connection() {
    let p = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"]);
    let r = ZwindowServer::start(&DEBUG);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    ok(&mut pc, "SET a 1");
    let port = p.port().to_string();
    rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
    eventually("the link up", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    caught_up(&mut pc, &mut rc, "m3");
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$1\r\n1\r\n");
    assert_eq!(
        info_field(&mut rc, "replication", "replica_full_sync_buffer_peak"),
        "0"
    );
    assert_eq!(info_field(&mut pc, "stats", "sync_full"), "1");
}
