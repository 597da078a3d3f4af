//! Pub/sub: (P)SUBSCRIBE/(P)UNSUBSCRIBE replies in RESP2 and RESP3, message
//! delivery, PUBLISH counts, PUBSUB introspection and subscribed-mode
//! restrictions, each as a multi-connection scenario run against zwindow and
//! redis-server 7.0 with every reply compared; plus the pubsub output
//! buffer limit protecting the server from a subscriber that never reads.
mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use common::*;

fn send(c: &mut RawConn, line: &str) {
    let args = split_args(line);
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    c.send(&encode_cmd(&refs));
}

/// Sends `line` and reads `n` replies (a (un)subscribe answers one per name).
fn replies(c: &mut RawConn, line: &str, n: usize) -> Vec<Vec<u8>> {
    send(c, line);
    (0..n).map(|_| c.read_reply()).collect()
}

/// The `sub=` and `psub=` fields of CLIENT LIST for the client named `name`.
fn sub_counts(c: &mut RawConn, name: &str) -> Vec<u8> {
    let list = String::from_utf8_lossy(&c.cmd_str("CLIENT LIST")).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    let field = |k: &str| {
        line.split(' ')
            .find_map(|f| f.strip_prefix(k))
            .unwrap_or("?")
            .to_string()
    };
    format!("sub={} psub={}", field("sub="), field("psub=")).into_bytes()
}

#[test]
fn subscribe_publish_unsubscribe_resp2() {
    differential(|conn| {
        let (mut s, mut p) = (conn(), conn());
        let mut out = Vec::new();
        out.push(s.cmd_str("CLIENT SETNAME sub"));
        out.extend(replies(&mut s, "SUBSCRIBE a b a", 3));
        out.extend(replies(&mut s, "PSUBSCRIBE n* a?", 2));
        out.push(sub_counts(&mut p, "sub"));
        out.push(p.cmd_str("PUBLISH a x"));
        out.push(p.cmd_str("PUBLISH nn y"));
        out.push(p.cmd_str("PUBLISH ab z"));
        out.push(p.cmd_str("PUBLISH nobody z"));
        for _ in 0..4 {
            out.push(s.read_reply());
        }
        out.push(p.cmd_str("PUBSUB NUMSUB a b c"));
        out.push(p.cmd_str("PUBSUB NUMSUB"));
        out.push(p.cmd_str("PUBSUB NUMPAT"));
        out.push(p.cmd_str("PUBSUB CHANNELS a"));
        out.push(p.cmd_str("PUBSUB CHANNELS z*"));
        out.push(p.cmd_str("PUBSUB CHANNELS a b"));
        out.push(p.cmd_str("PUBSUB NUMPAT x"));
        out.push(p.cmd_str("PUBSUB HELP x"));
        out.push(p.cmd_str("PUBSUB NOPE"));
        // Subscribed mode (RESP2) allows only the pub/sub commands, PING, QUIT, RESET.
        out.push(s.cmd_str("GET x"));
        out.push(s.cmd_str("PUBLISH a b"));
        out.push(s.cmd_str("PUBSUB NUMPAT"));
        out.push(s.cmd_str("PING"));
        out.push(s.cmd_str("PING hello"));
        out.extend(replies(&mut s, "UNSUBSCRIBE b zz", 2));
        out.extend(replies(&mut s, "PUNSUBSCRIBE n*", 1));
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        out.push(sub_counts(&mut p, "sub"));
        out.extend(replies(&mut s, "PUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "PUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        // Out of subscribed mode again.
        out.push(s.cmd_str("GET x"));
        out.push(p.cmd_str("PUBLISH a x"));
        out.push(p.cmd_str("PUBSUB NUMPAT"));
        out.push(p.cmd_str("SUBSCRIBE"));
        out.push(p.cmd_str("PSUBSCRIBE"));
        out.push(p.cmd_str("PUBLISH a"));
        // RESET leaves subscribed mode.
        out.extend(replies(&mut s, "SUBSCRIBE c", 1));
        out.push(s.cmd_str("RESET"));
        out.push(p.cmd_str("PUBSUB NUMSUB c"));
        out
    });
}

#[test]
fn subscribe_in_resp3_pushes_and_self_publish() {
    differential(|conn| {
        let (mut s, mut p) = (conn(), conn());
        s.cmd_str("HELLO 3");
        let mut out = Vec::new();
        out.extend(replies(&mut s, "SUBSCRIBE a", 1));
        out.extend(replies(&mut s, "PSUBSCRIBE a*", 1));
        // RESP3 clients keep their full command set while subscribed.
        out.push(s.cmd_str("GET x"));
        out.push(s.cmd_str("PING"));
        // A client publishing to itself sees the messages before the count.
        out.extend(replies(&mut s, "PUBLISH a self", 3));
        out.push(p.cmd_str("PUBLISH ab other"));
        out.push(s.read_reply());
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "PUNSUBSCRIBE x", 1));
        out.extend(replies(&mut s, "PUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        out
    });
}

#[test]
fn disconnect_drops_subscriptions() {
    differential(|conn| {
        let mut p = conn();
        let mut s = conn();
        replies(&mut s, "SUBSCRIBE a", 1);
        replies(&mut s, "PSUBSCRIBE x*", 1);
        drop(s);
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.cmd_str("PUBSUB NUMPAT") != b":0\r\n" {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        vec![p.cmd_str("PUBLISH a x"), p.cmd_str("PUBSUB CHANNELS")]
    });
}

#[test]
fn client_output_buffer_limit_config() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "CONFIG GET client-output-buffer-limit",
        "CONFIG SET client-output-buffer-limit \"pubsub 1 2\"",
        "CONFIG SET client-output-buffer-limit \"foo 1 2 3\"",
        "CONFIG SET client-output-buffer-limit \"pubsub x 1 1\"",
        "CONFIG SET client-output-buffer-limit \"pubsub -1 1 1\"",
        "CONFIG SET client-output-buffer-limit \"pubsub 1 1 -1\"",
        "CONFIG GET client-output-buffer-limit",
        "CONFIG SET client-output-buffer-limit \"normal 1 2 3 pubsub 4 5 6\"",
        "CONFIG GET client-output-buffer-limit",
        "CONFIG SET client-output-buffer-limit \"pubsub 1k 2KB 3 replica 10 20 30\"",
        "CONFIG GET client-output-buffer-limit",
        "CONFIG SET client-output-buffer-limit \"PUBSUB 32mb 8mb 60 slave 256mb 64mb 60 normal 0 0 0\"",
        "CONFIG GET client-output-buffer-limit",
        "CONFIG SET client-output-buffer-limit \"\"",
        "CONFIG GET client-output-buffer-limit",
    ]);
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn subscriber_that_never_reads_is_disconnected_at_the_hard_limit() {
    let z = ZwindowServer::start(&[]);
    let mut sub = z.conn();
    assert!(replies(&mut sub, "SUBSCRIBE flood", 1)[0].starts_with(b"*3\r\n"));
    let mut publisher = z.conn();
    let payload = vec![b'x'; 1 << 20];
    let before = rss_kb(z.pid());
    let mut delivered_to_none = 0;
    // 100 MB published; the subscriber reads nothing.
    for i in 0..100 {
        let t = Instant::now();
        let r = publisher.cmd(&[b"PUBLISH", b"flood", &payload]);
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "publish {i} stalled for {:?}",
            t.elapsed()
        );
        if r == b":0\r\n" {
            delivered_to_none += 1;
        }
    }
    let grown_mb = rss_kb(z.pid()).saturating_sub(before) / 1024;
    assert!(grown_mb < 80, "server memory grew by {grown_mb} MB");
    // Past the 32 MB hard limit the subscriber was dropped...
    assert!(
        delivered_to_none > 50,
        "subscriber still counted: {delivered_to_none}"
    );
    assert_eq!(
        publisher.cmd_str("PUBSUB NUMSUB flood"),
        b"*2\r\n$5\r\nflood\r\n:0\r\n"
    );
    // ...and its connection closed once the bytes already sent are read.
    let mut stream = sub.stream().try_clone().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0usize;
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("subscriber not disconnected after {total} bytes: {e}"),
        }
    }
    assert!(total < 40 << 20, "subscriber received {total} bytes");
    // The server carries on.
    assert_eq!(publisher.cmd_str("PING"), b"+PONG\r\n");
}

#[test]
fn soft_limit_disconnects_after_its_grace_period() {
    let z = ZwindowServer::start(&[]);
    let mut admin = z.conn();
    assert_eq!(
        admin.cmd_str("CONFIG SET client-output-buffer-limit \"pubsub 0 1mb 1\""),
        b"+OK\r\n"
    );
    let mut sub = z.conn();
    replies(&mut sub, "SUBSCRIBE s", 1);
    let payload = vec![b'y'; 1 << 20];
    let mut publisher = z.conn();
    // Over the soft limit (and the socket buffers), but not for long yet.
    for _ in 0..16 {
        publisher.cmd(&[b"PUBLISH", b"s", &payload]);
    }
    assert_eq!(
        publisher.cmd_str("PUBSUB NUMSUB s"),
        b"*2\r\n$1\r\ns\r\n:1\r\n"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let mut last = Vec::new();
    for _ in 0..4 {
        last = publisher.cmd(&[b"PUBLISH", b"s", &payload]);
    }
    assert_eq!(
        last, b":0\r\n",
        "still subscribed past the soft limit's grace"
    );
}
