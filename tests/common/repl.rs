//! Waiting for replicas: INFO fields, a bounded wait, a primary and its
//! replicas settled at one offset (the replication tests over TCP and TLS).

use std::time::{Duration, Instant};

use super::{RawConn, parse_reply};

/// `field` of INFO `section` (empty if absent).
pub fn info_field(c: &mut RawConn, section: &str, field: &str) -> String {
    let r = c.cmd(&[b"INFO", section.as_bytes()]);
    String::from_utf8_lossy(&r)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Waits until `f` holds (20 s at most).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The primary's offset acknowledged by every replica (WAIT), then each
/// replica's offset equal to it.
pub fn settle(primary: &mut RawConn, replicas: &mut [&mut RawConn]) {
    let n = replicas.len().to_string();
    let acked = parse_reply(&primary.cmd(&[b"WAIT", n.as_bytes(), b"10000"])).int();
    assert_eq!(acked, replicas.len() as i64, "WAIT");
    let offset = info_field(primary, "replication", "master_repl_offset");
    for r in replicas.iter_mut() {
        eventually("the replica's offset", || {
            info_field(r, "replication", "slave_repl_offset") == offset
        });
    }
}

pub fn digest(c: &mut RawConn) -> Vec<u8> {
    c.cmd(&[b"DEBUG", b"DIGEST"])
}
