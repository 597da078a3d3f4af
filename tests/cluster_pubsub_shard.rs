//! Shard channels leave with their slot (Redis's `removeChannelsInSlot`):
//! when CLUSTER SETSLOT … NODE gives a slot to another primary, the old
//! owner's subscribers to the slot's shard channels (RESP2 and RESP3) get
//! a `sunsubscribe` push each, counting the shard channels they have
//! left, and its replica's subscribers get theirs once the bus tells the
//! replica; SSUBSCRIBE to the slot is then redirected with -MOVED, and a
//! subscription to another slot still receives. The same script runs on
//! a zwindow cluster and on a redis-server 7.0.15 one: same transcript.

mod common;

use std::time::Duration;

use common::RawConn;
use common::cluster::*;

/// Not a test of failure detection: a loaded machine must not fail nodes
/// over under it.
const CALM_TIMEOUT: u64 = 15000;

/// Two channels of one slot (3828, the first primary's); a third, of
/// another slot of the same primary, is picked by the script.
const A: &[u8] = b"{s}a";
const B: &[u8] = b"{s}b";

/// A reply's bytes as text, every node's port replaced by its index (the
/// two clusters' ports differ).
fn norm(cluster: &Cluster, reply: &[u8]) -> String {
    let mut s = String::from_utf8_lossy(reply).into_owned();
    for (i, n) in cluster.nodes.iter().enumerate() {
        s = s.replace(&n.port().to_string(), &format!("node{i}"));
    }
    s
}

/// The next reply on `conn`, waiting as long as the bus may take.
fn next(conn: &mut RawConn) -> Vec<u8> {
    conn.set_timeout(Duration::from_secs(30));
    conn.read_reply()
}

/// The script, on a cluster of three primaries with a replica each.
fn transcript(kind: Kind) -> Vec<String> {
    let cluster = Cluster::create(&[kind; 6], 1, CALM_TIMEOUT);
    let slot = key_slot(A);
    let ranges = slot_ranges(&mut cluster.nodes[0].conn());
    let owns = |port: u16, s: u16| {
        ranges
            .iter()
            .any(|&(lo, hi, p)| p == port && (lo..=hi).contains(&s))
    };
    let owner = (0..3)
        .find(|&i| owns(cluster.nodes[i].port(), slot))
        .expect("a primary serves the slot");
    let target = (0..3).find(|&i| i != owner).unwrap();
    let replica = cluster.replica_of(owner);
    let other = (0..)
        .map(|i| format!("other{i}"))
        .find(|c| {
            let s = key_slot(c.as_bytes());
            s != slot && owns(cluster.nodes[owner].port(), s)
        })
        .unwrap();
    let other = other.as_bytes();
    let (owner_id, target_id) = (cluster.id(owner), cluster.id(target));
    let mut log = Vec::new();
    let mut admin = cluster.nodes[owner].conn();
    let mut to = cluster.nodes[target].conn();

    // A RESP2 subscriber to both channels of the slot and one elsewhere,
    // a RESP3 one to one of them, and one on the replica.
    let mut resp2 = cluster.nodes[owner].conn();
    // (One slot per command: channels of two slots are CROSSSLOT.)
    log.push(norm(&cluster, &resp2.cmd(&[b"SSUBSCRIBE", B, A])));
    log.push(norm(&cluster, &resp2.read_reply()));
    log.push(norm(&cluster, &resp2.cmd(&[b"SSUBSCRIBE", other])));
    let mut resp3 = cluster.nodes[owner].conn();
    resp3.cmd(&[b"HELLO", b"3"]);
    log.push(norm(&cluster, &resp3.cmd(&[b"SSUBSCRIBE", A])));
    let mut on_replica = cluster.nodes[replica].conn();
    log.push(norm(&cluster, &on_replica.cmd(&[b"SSUBSCRIBE", B])));
    log.push(norm(&cluster, &admin.cmd(&[b"SPUBLISH", B, b"hi"])));
    log.push(norm(&cluster, &resp2.read_reply()));
    log.push(norm(&cluster, &next(&mut on_replica)));

    // The slot moves, as the cluster suite's 25-pubsubshard-slot-migration
    // moves it.
    let slot_s = slot.to_string();
    let setslot = |c: &mut RawConn, how: &str, id: &str| {
        c.cmd(&[
            b"CLUSTER",
            b"SETSLOT",
            slot_s.as_bytes(),
            how.as_bytes(),
            id.as_bytes(),
        ])
    };
    log.push(norm(
        &cluster,
        &setslot(&mut admin, "MIGRATING", &target_id),
    ));
    log.push(norm(&cluster, &setslot(&mut to, "IMPORTING", &owner_id)));
    log.push(norm(&cluster, &setslot(&mut admin, "NODE", &target_id)));
    // The old owner's subscribers are told at once, slot's channels in
    // their order, each count what is left.
    log.push(norm(&cluster, &resp2.read_reply()));
    log.push(norm(&cluster, &resp2.read_reply()));
    log.push(norm(&cluster, &resp3.read_reply()));
    log.push(norm(&cluster, &admin.cmd(&[b"PUBSUB", b"SHARDCHANNELS"])));
    log.push(norm(
        &cluster,
        &admin.cmd(&[b"PUBSUB", b"SHARDNUMSUB", A, B]),
    ));
    // The new owner claims it (a new epoch): the replica hears of it.
    log.push(norm(&cluster, &setslot(&mut to, "NODE", &target_id)));
    log.push(norm(&cluster, &next(&mut on_replica)));
    // Subscribing to the slot is redirected now, everywhere.
    log.push(norm(&cluster, &resp2.cmd(&[b"SSUBSCRIBE", A])));
    log.push(norm(&cluster, &resp3.cmd(&[b"SSUBSCRIBE", A])));
    log.push(norm(&cluster, &on_replica.cmd(&[b"SSUBSCRIBE", B])));
    // The RESP3 client left subscribed state; the RESP2 one did not, and
    // its other channel still delivers.
    log.push(norm(&cluster, &resp3.cmd(&[b"PING"])));
    log.push(norm(&cluster, &resp2.cmd(&[b"PING"])));
    log.push(norm(&cluster, &admin.cmd(&[b"SPUBLISH", other, b"still"])));
    log.push(norm(&cluster, &resp2.read_reply()));
    log
}

#[test]
fn shard_subscribers_leave_with_their_slot_as_in_redis() {
    let zwindow = transcript(Kind::Zwindow);
    let want = |s: &str| s.to_string();
    let expected_head = [
        want("*3\r\n$10\r\nssubscribe\r\n$4\r\n{s}b\r\n:1\r\n"),
        want("*3\r\n$10\r\nssubscribe\r\n$4\r\n{s}a\r\n:2\r\n"),
    ];
    assert_eq!(zwindow[..2], expected_head, "{zwindow:#?}");
    assert!(
        zwindow[2].starts_with("*3\r\n$10\r\nssubscribe\r\n") && zwindow[2].ends_with(":3\r\n"),
        "{zwindow:#?}"
    );
    let slot = key_slot(A);
    let rest = [
        want(">3\r\n$10\r\nssubscribe\r\n$4\r\n{s}a\r\n:1\r\n"),
        want("*3\r\n$10\r\nssubscribe\r\n$4\r\n{s}b\r\n:1\r\n"),
        want(":1\r\n"),
        want("*3\r\n$8\r\nsmessage\r\n$4\r\n{s}b\r\n$2\r\nhi\r\n"),
        want("*3\r\n$8\r\nsmessage\r\n$4\r\n{s}b\r\n$2\r\nhi\r\n"),
        want("+OK\r\n"),
        want("+OK\r\n"),
        want("+OK\r\n"),
        want("*3\r\n$12\r\nsunsubscribe\r\n$4\r\n{s}a\r\n:2\r\n"),
        want("*3\r\n$12\r\nsunsubscribe\r\n$4\r\n{s}b\r\n:1\r\n"),
        want(">3\r\n$12\r\nsunsubscribe\r\n$4\r\n{s}a\r\n:0\r\n"),
    ];
    assert_eq!(zwindow[3..14], rest, "{zwindow:#?}");
    assert!(
        !zwindow[14].contains("{s}") && zwindow[14].starts_with("*1\r\n"),
        "only the other channel is left: {zwindow:#?}"
    );
    assert_eq!(
        zwindow[15],
        "*4\r\n$4\r\n{s}a\r\n:0\r\n$4\r\n{s}b\r\n:0\r\n"
    );
    assert_eq!(zwindow[16], "+OK\r\n");
    assert_eq!(
        zwindow[17], "*3\r\n$12\r\nsunsubscribe\r\n$4\r\n{s}b\r\n:0\r\n",
        "the replica's subscriber: {zwindow:#?}"
    );
    for moved in &zwindow[18..21] {
        assert!(
            moved.starts_with(&format!("-MOVED {slot} 127.0.0.1:node")),
            "{zwindow:#?}"
        );
    }
    assert_eq!(zwindow[21], "+PONG\r\n");
    assert_eq!(zwindow[22], "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    assert_eq!(zwindow[23], ":1\r\n");
    assert!(zwindow[24].starts_with("*3\r\n$8\r\nsmessage\r\n"));
    // redis-server 7.0.15 says the same.
    let redis = transcript(Kind::Redis);
    assert_eq!(zwindow, redis);
}
