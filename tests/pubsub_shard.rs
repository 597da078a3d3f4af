//! Sharded pub/sub on a standalone server: SSUBSCRIBE/SUNSUBSCRIBE replies
//! in RESP2 and RESP3, SPUBLISH delivery and counts, PUBSUB SHARDCHANNELS/
//! SHARDNUMSUB, subscribed mode, RESET, disconnect, CLIENT LIST's `ssub=`
//! and ACL channel rules, each run against zwindow and redis-server 7.0
//! with every reply compared.
mod common;

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

/// The `sub=`, `psub=`, `ssub=` and `flags=` fields of CLIENT LIST for the
/// client named `name`.
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
    let fields = ["sub=", "psub=", "ssub=", "flags="].map(|k| format!("{k}{}", field(k)));
    fields.join(" ").into_bytes()
}

#[test]
fn ssubscribe_spublish_sunsubscribe_resp2() {
    differential(|conn| {
        let (mut s, mut p) = (conn(), conn());
        let mut out = Vec::new();
        out.push(s.cmd_str("CLIENT SETNAME sub"));
        out.extend(replies(&mut s, "SSUBSCRIBE a b a", 3));
        // Shard counts are separate from channel and pattern counts.
        out.extend(replies(&mut s, "SUBSCRIBE a", 1));
        out.extend(replies(&mut s, "PSUBSCRIBE *", 1));
        out.push(sub_counts(&mut p, "sub"));
        out.push(p.cmd_str("SPUBLISH a x"));
        out.push(p.cmd_str("SPUBLISH b y"));
        out.push(p.cmd_str("SPUBLISH nobody z"));
        for _ in 0..2 {
            out.push(s.read_reply());
        }
        // PUBLISH reaches channel and pattern subscribers, not shard ones.
        out.push(p.cmd_str("PUBLISH b w"));
        out.push(s.read_reply());
        out.push(p.cmd_str("PUBSUB SHARDNUMSUB a b c"));
        out.push(p.cmd_str("PUBSUB SHARDNUMSUB"));
        out.push(p.cmd_str("PUBSUB NUMSUB a b"));
        out.push(p.cmd_str("PUBSUB SHARDCHANNELS b"));
        out.push(p.cmd_str("PUBSUB SHARDCHANNELS z*"));
        out.push(p.cmd_str("PUBSUB SHARDCHANNELS a b"));
        out.push(p.cmd_str("PUBSUB CHANNELS b"));
        out.push(p.cmd_str("PUBSUB HELP"));
        out.push(
            p.cmd_str("INFO stats")
                .starts_with(b"$")
                .to_string()
                .into_bytes(),
        );
        // Subscribed mode (RESP2): SSUBSCRIBE/SUNSUBSCRIBE allowed, SPUBLISH not.
        out.push(s.cmd_str("SPUBLISH a b"));
        out.push(s.cmd_str("PUBSUB SHARDCHANNELS"));
        out.push(s.cmd_str("PING"));
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "PUNSUBSCRIBE", 1));
        // Still subscribed to shard channels.
        out.push(s.cmd_str("GET x"));
        out.extend(replies(&mut s, "SUNSUBSCRIBE b zz", 2));
        out.push(sub_counts(&mut p, "sub"));
        out.extend(replies(&mut s, "SUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "SUNSUBSCRIBE", 1));
        out.push(sub_counts(&mut p, "sub"));
        // Out of subscribed mode again.
        out.push(s.cmd_str("GET x"));
        out.push(p.cmd_str("SPUBLISH a x"));
        out.push(p.cmd_str("SSUBSCRIBE"));
        out.push(p.cmd_str("SPUBLISH a"));
        out.push(p.cmd_str("SPUBLISH a b c"));
        // RESET leaves subscribed mode.
        out.extend(replies(&mut s, "SSUBSCRIBE c", 1));
        out.push(s.cmd_str("RESET"));
        out.push(p.cmd_str("PUBSUB SHARDNUMSUB c"));
        out.push(s.cmd_str("GET x"));
        out
    });
}

#[test]
fn ssubscribe_in_resp3_pushes_and_self_spublish() {
    differential(|conn| {
        let (mut s, mut p) = (conn(), conn());
        s.cmd_str("HELLO 3");
        let mut out = Vec::new();
        out.extend(replies(&mut s, "SSUBSCRIBE a", 1));
        out.extend(replies(&mut s, "SUBSCRIBE a", 1));
        out.push(s.cmd_str("GET x"));
        // A client publishing to itself sees the message before the count.
        out.extend(replies(&mut s, "SPUBLISH a self", 2));
        out.push(p.cmd_str("SPUBLISH a other"));
        out.push(s.read_reply());
        out.extend(replies(&mut s, "SUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "SUNSUBSCRIBE", 1));
        out.extend(replies(&mut s, "UNSUBSCRIBE", 1));
        out
    });
}

#[test]
fn ssubscribe_in_multi_is_refused() {
    differential(|conn| {
        let mut c = conn();
        vec![
            c.cmd_str("MULTI"),
            c.cmd_str("SSUBSCRIBE a"),
            c.cmd_str("SPUBLISH a b"),
            c.cmd_str("SUNSUBSCRIBE a"),
            c.cmd_str("EXEC"),
            c.cmd_str("PUBSUB SHARDCHANNELS"),
        ]
    });
}

#[test]
fn disconnect_drops_shard_subscriptions() {
    differential(|conn| {
        let mut p = conn();
        let mut s = conn();
        replies(&mut s, "SSUBSCRIBE a b", 2);
        drop(s);
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.cmd_str("PUBSUB SHARDCHANNELS") != b"*0\r\n" {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        vec![
            p.cmd_str("SPUBLISH a x"),
            p.cmd_str("PUBSUB SHARDNUMSUB a b"),
        ]
    });
}

#[test]
fn acl_channel_rules_apply_to_shard_channels() {
    differential(|conn| {
        let (mut admin, mut u) = (conn(), conn());
        let mut out = vec![admin.cmd_str("ACL SETUSER u on nopass +@all ~* resetchannels &ok*")];
        out.push(u.cmd_str("AUTH u x"));
        out.push(u.cmd_str("SPUBLISH no x"));
        out.push(u.cmd_str("SPUBLISH ok1 x"));
        out.push(u.cmd_str("SSUBSCRIBE ok1 no"));
        out.extend(replies(&mut u, "SSUBSCRIBE ok1 ok2", 2));
        out.push(u.cmd_str("SUNSUBSCRIBE no"));
        out.push(admin.cmd_str("ACL LOG RESET"));
        // Narrowing the user's channels disconnects its shard subscriber.
        out.push(admin.cmd_str("ACL SETUSER u resetchannels &ok1"));
        let deadline = Instant::now() + Duration::from_secs(5);
        while admin.cmd_str("PUBSUB SHARDNUMSUB ok1") != b"*2\r\n$3\r\nok1\r\n:0\r\n" {
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        }
        out.push(admin.cmd_str("PUBSUB SHARDCHANNELS"));
        out
    });
}

#[test]
fn shard_confirmations_survive_client_reply_off() {
    differential(|conn| {
        let (mut s, mut p) = (conn(), conn());
        s.cmd_str("HELLO 3");
        send(&mut s, "CLIENT REPLY OFF");
        let mut out = replies(&mut s, "SSUBSCRIBE ch", 1);
        out.push(p.cmd_str("SPUBLISH ch hello"));
        out.push(s.read_reply());
        out.extend(replies(&mut s, "SUNSUBSCRIBE ch", 1));
        send(&mut s, "CLIENT REPLY ON");
        out.push(s.read_reply());
        out
    });
}
