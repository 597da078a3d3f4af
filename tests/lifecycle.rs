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

/// SIGTERM ends a server whose script never returns — one that can still
/// be killed and one that wrote (unkillable by SCRIPT KILL) — within a
/// second, with exit status 0.
#[test]
fn sigterm_stops_an_endless_script_within_a_second() {
    for body in [
        "local f = function() while 1 do end end while 1 do pcall(f) end",
        "redis.call('set', 'k', 'v') while 1 do pcall(function() while 1 do end end) end",
    ] {
        let mut z = ZwindowServer::start(&[]);
        let mut admin = z.conn();
        admin.cmd_str("CONFIG SET busy-reply-threshold 50");
        let mut runner = z.conn();
        runner.send(&encode_cmd(&[b"EVAL", body.as_bytes(), b"0"]));
        while !admin.cmd_str("PING").starts_with(b"-BUSY") {}
        let status = z.terminate(Duration::from_secs(1));
        let status = status.unwrap_or_else(|| {
            panic!(
                "still running 1 s after SIGTERM ({body}); stderr:\n{}",
                z.log_tail()
            )
        });
        assert!(status.success(), "{body}: {status:?}");
    }
}
