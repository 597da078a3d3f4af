//! INFO commandstats for blocking commands as Redis 8.0 counts them: a
//! call that blocks is counted once, when it is served or times out (not
//! when it blocks), and `rejected_calls` / `failed_calls` as 8.0.2 counts
//! them; compared with redis-server 8.0.2.
mod common;

use common::*;
use std::time::Duration;

/// `calls`, `rejected_calls` and `failed_calls` of every cmdstat line
/// (the times differ between servers).
fn counts(c: &mut RawConn) -> Vec<String> {
    let info = String::from_utf8_lossy(&c.cmd_str("INFO commandstats")).into_owned();
    let mut lines: Vec<String> = info
        .lines()
        .filter_map(|l| l.strip_prefix("cmdstat_"))
        .filter(|l| !l.starts_with("info:") && !l.starts_with("config"))
        .map(|l| {
            let (name, fields) = l.split_once(':').unwrap();
            let kept: Vec<&str> = fields
                .split(',')
                .filter(|f| f.starts_with("calls=") || f.contains("_calls="))
                .collect();
            format!("{name}:{}", kept.join(","))
        })
        .collect();
    lines.sort();
    lines
}

struct Side {
    ctl: RawConn,
    blocked: RawConn,
    other: RawConn,
}

impl Side {
    fn new(addr: std::net::SocketAddr) -> Side {
        let mut blocked = RawConn::connect(addr, "blocked");
        blocked.cmd_str("CLIENT SETNAME blocked");
        Side {
            ctl: RawConn::connect(addr, "ctl"),
            blocked,
            other: RawConn::connect(addr, "other"),
        }
    }
}

/// Waits until `n` clients are blocked.
fn wait_blocked(c: &mut RawConn, n: usize) {
    let want = format!("blocked_clients:{n}\r");
    for _ in 0..200 {
        let info = String::from_utf8_lossy(&c.cmd_str("INFO clients")).into_owned();
        if info.contains(&want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("never {n} blocked clients");
}

#[test]
fn blocked_calls_count_when_served_or_timed_out_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut sides = [Side::new(s.z.addr()), Side::new(s.r.addr())];
    let mut snapshots: Vec<[Vec<String>; 2]> = Vec::new();
    let mut snap = |sides: &mut [Side; 2], what: &str| {
        let z = counts(&mut sides[0].ctl);
        let r = counts(&mut sides[1].ctl);
        assert_eq!(z, r, "after {what}");
        snapshots.push([z, r]);
    };
    for s in sides.iter_mut() {
        s.ctl.cmd_str("CONFIG RESETSTAT");
    }
    // Blocks: not counted yet.
    for s in sides.iter_mut() {
        s.blocked.send(&encode_cmd(&[b"BLPOP", b"l", b"0"]));
        wait_blocked(&mut s.ctl, 1);
    }
    snap(&mut sides, "BLPOP blocked");
    // Served: counted once.
    for s in sides.iter_mut() {
        s.other.cmd_str("RPUSH l a");
        s.blocked.read_reply();
    }
    snap(&mut sides, "BLPOP served");
    // Timed out: counted once.
    for s in sides.iter_mut() {
        s.blocked.cmd_str("BLPOP nosuch 0.05");
    }
    snap(&mut sides, "BLPOP timed out");
    // Served at once (data there), failed (wrong type), rejected (arity,
    // bad timeout).
    for s in sides.iter_mut() {
        s.other.cmd_str("RPUSH l b");
        s.other.cmd_str("SET str v");
        s.blocked.cmd_str("BLPOP l 0");
        s.blocked.cmd_str("BLPOP str 0");
        s.blocked.cmd_str("BLPOP l");
        s.blocked.cmd_str("BLPOP l notanumber");
        s.blocked.cmd_str("BLMOVE nosuch dst LEFT RIGHT 0.05");
        s.blocked.cmd_str("BZPOPMIN nosuch 0.05");
        s.blocked.cmd_str("XREAD BLOCK 50 STREAMS nosuch $");
    }
    snap(&mut sides, "other blocking calls");
    // A blocked client unblocked by CLIENT UNBLOCK, and one whose key
    // became another type.
    for s in sides.iter_mut() {
        s.blocked.send(&encode_cmd(&[b"BLPOP", b"l2", b"0"]));
        wait_blocked(&mut s.ctl, 1);
        let id = String::from_utf8_lossy(&s.other.cmd_str("CLIENT LIST")).into_owned();
        let id = id
            .lines()
            .find(|l| l.contains("name=blocked"))
            .and_then(|l| l.split(' ').next())
            .and_then(|f| f.strip_prefix("id="))
            .unwrap()
            .to_string();
        s.other.cmd_str(&format!("CLIENT UNBLOCK {id}"));
        s.blocked.read_reply();
    }
    snap(&mut sides, "CLIENT UNBLOCK");
}
