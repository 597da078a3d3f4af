//! A primary stopping while a replica lags behind waits for it (Redis
//! 7.0's `shutdown-timeout`): SIGTERM and SHUTDOWN hold writes, show
//! `shutdown_in_milliseconds`, and exit once the replica acknowledged
//! everything, or when the timeout is up; SHUTDOWN clients wait with it
//! and are told if SHUTDOWN ABORT ends the wait; NOW and
//! `shutdown-timeout 0` do not wait. The replica is paused with SIGSTOP,
//! as Redis's own tests pause it; the waiting clients' figures are
//! compared with a redis-server 8.0.2 primary in the same steps.

mod common;

use std::time::{Duration, Instant};

use common::repl::{eventually, info_field};
use common::*;

/// A zwindow replica of `port`, its link up.
fn zwindow_replica(port: u16) -> ZwindowServer {
    let p = port.to_string();
    let r = ZwindowServer::start(&["--replicaof", "127.0.0.1", &p, "--save", ""]);
    let mut c = r.conn();
    eventually("the replica's link", || {
        info_field(&mut c, "replication", "master_link_status") == "up"
    });
    r
}

/// Every replica acknowledged the primary's offset.
fn in_sync(primary: &mut RawConn) {
    assert_eq!(primary.cmd(&[b"WAIT", b"1", b"10000"]), b":1\r\n");
}

/// A zwindow primary (`args`) and its replica, in sync on `k` = 1; then
/// the replica paused and `k` = 2 written on the primary alone.
fn lagging(args: &[&str]) -> (ZwindowServer, ZwindowServer, RawConn) {
    let primary = ZwindowServer::start(args);
    let replica = zwindow_replica(primary.port());
    let mut c = primary.conn();
    assert_eq!(c.cmd(&[b"SET", b"k", b"1"]), b"+OK\r\n");
    in_sync(&mut c);
    signal(replica.pid(), "-STOP");
    assert_eq!(c.cmd(&[b"INCR", b"k"]), b":2\r\n");
    (primary, replica, c)
}

#[test]
fn sigterm_waits_for_a_paused_replica_then_exits() {
    let (mut primary, replica, mut c) = lagging(&["--save", ""]);
    signal(primary.pid(), "-TERM");
    eventually("the wait", || {
        info_field(&mut c, "server", "shutdown_in_milliseconds")
            .parse::<i64>()
            .is_ok_and(|ms| ms > 0)
    });
    // Writes are held meanwhile: this one waits for the end.
    let mut writer = primary.conn();
    writer.send(&encode_cmd(&[b"SET", b"held", b"1"]));
    assert!(matches!(
        writer.try_read_reply(Duration::from_millis(300)),
        ReadOutcome::Timeout
    ));
    assert!(primary.is_running(), "the primary waits for its replica");
    signal(replica.pid(), "-CONT");
    assert!(
        primary.exit_status(Duration::from_secs(10)).is_some(),
        "the primary exits once its replica caught up"
    );
    let mut r = replica.conn();
    assert_eq!(r.cmd(&[b"GET", b"k"]), b"$1\r\n2\r\n");
    let log = primary.log_tail();
    assert!(
        log.contains("Waiting for replicas before shutting down."),
        "{log}"
    );
    assert!(
        log.contains("1 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
    assert!(!log.contains("Lagging replica"), "{log}");
}

#[test]
fn the_timeout_ends_the_wait_and_names_the_lagging_replica() {
    let (mut primary, replica, _c) = lagging(&["--save", "", "--shutdown-timeout", "1"]);
    let asked = Instant::now();
    signal(primary.pid(), "-TERM");
    assert!(primary.exit_status(Duration::from_secs(10)).is_some());
    let took = asked.elapsed();
    signal(replica.pid(), "-CONT");
    assert!(took >= Duration::from_millis(900), "{took:?}");
    let log = primary.log_tail();
    assert!(log.contains("Lagging replica 127.0.0.1:"), "{log}");
    assert!(log.contains("state=online."), "{log}");
    assert!(
        log.contains("0 of 1 replicas are in sync when shutting down."),
        "{log}"
    );
}

#[test]
fn now_and_a_zero_timeout_do_not_wait() {
    for (args, how) in [
        (&["--save", ""][..], &[b"SHUTDOWN" as &[u8], b"NOW"][..]),
        (&["--save", "", "--shutdown-timeout", "0"], &[b"SHUTDOWN"]),
    ] {
        let mut primary = ZwindowServer::start(args);
        let replica = zwindow_replica(primary.port());
        let mut c = primary.conn();
        in_sync(&mut c);
        signal(replica.pid(), "-STOP");
        assert_eq!(c.cmd(&[b"INCR", b"k"]), b":1\r\n");
        c.send(&encode_cmd(how));
        assert!(
            primary.exit_status(Duration::from_secs(2)).is_some(),
            "{}",
            show_args(how)
        );
        signal(replica.pid(), "-CONT");
    }
}

/// Two SHUTDOWNs wait on a primary whose replica is paused; SHUTDOWN
/// ABORT ends the wait: what INFO showed and what each client got, and
/// whether writes flow again.
fn aborted(port: u16, replica_pid: u32) -> Vec<Vec<u8>> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = RawConn::connect(addr, "primary");
    in_sync(&mut c);
    signal(replica_pid, "-STOP");
    assert_eq!(c.cmd(&[b"INCR", b"k"]), b":1\r\n");
    let mut waiting: Vec<RawConn> = (0..2).map(|_| RawConn::connect(addr, "shutdown")).collect();
    for w in &mut waiting {
        w.send(&encode_cmd(&[b"SHUTDOWN"]));
    }
    eventually("two SHUTDOWNs waiting", || {
        info_field(&mut c, "clients", "blocked_clients") == "2"
    });
    let mut seen = vec![
        info_field(&mut c, "clients", "connected_clients").into_bytes(),
        info_field(&mut c, "clients", "blocked_clients").into_bytes(),
        c.cmd(&[b"SHUTDOWN", b"ABORT"]),
    ];
    for w in &mut waiting {
        seen.push(w.read_reply());
    }
    seen.push(c.cmd(&[b"SET", b"after", b"1"]));
    seen.push(c.cmd(&[b"SHUTDOWN", b"ABORT"]));
    signal(replica_pid, "-CONT");
    seen
}

#[test]
fn shutdown_abort_answers_the_waiting_clients_as_redis_8() {
    let mut redis = RedisServer::start_binary(&redis8_server(), &["--save", ""]);
    let p = redis.port().to_string();
    let redis_replica = RedisServer::start_binary(
        &redis8_server(),
        &["--save", "", "--replicaof", "127.0.0.1", &p],
    );
    let mut rc = redis_replica.conn();
    eventually("the redis replica's link", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    let want = aborted(redis.port(), redis_replica.pid());
    redis.kill();
    let primary = ZwindowServer::start(&["--save", ""]);
    let replica = zwindow_replica(primary.port());
    let got = aborted(primary.port(), replica.pid());
    let show = |v: &[Vec<u8>]| v.iter().map(|b| escape(b)).collect::<Vec<_>>();
    assert_eq!(show(&got), show(&want));
    assert_eq!(want[3], b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
    assert!(primary.log_tail().contains("Shutdown manually aborted."));
}
