//! Server lifecycle contract: startup flags accepted for redis-server compatibility,
//! ephemeral-port logging, and shutdown on SIGTERM within a second.
mod common;

use std::time::Duration;

use common::*;

#[test]
fn accepts_redis_style_persistence_flags() {
    let mut z = ZwindowServer::start(&["--save", "", "--appendonly", "no"]);
    assert!(z.port() != 0);
    let mut c = z.conn();
    assert_eq!(escape(&c.cmd(&[b"PING"])), escape(b"+PONG\r\n"));
    assert!(z.is_running());
}

#[test]
fn two_servers_get_distinct_ephemeral_ports() {
    let a = ZwindowServer::start(&[]);
    let b = ZwindowServer::start(&[]);
    assert_ne!(a.port(), b.port());
}

#[test]
fn sigterm_shuts_down_within_a_second() {
    let mut z = ZwindowServer::start(&[]);
    // With an idle client connected, too.
    let mut c = z.conn();
    assert_eq!(escape(&c.cmd(&[b"PING"])), escape(b"+PONG\r\n"));
    let status = z.terminate(Duration::from_secs(1));
    assert!(
        status.is_some(),
        "zwindow still running 1 s after SIGTERM; stderr:\n{}",
        z.log_tail()
    );
}
