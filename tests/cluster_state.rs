//! The cluster's node table and its texts (`zwindow::cluster::state`,
//! `zwindow::cluster::nodes_conf`) against three real redis-server 8.0
//! nodes (their nodes.conf has Redis 7.2's auxiliary fields, shard ids): a primary with a replica, a primary with a hostname, a slot
//! being migrated between the two primaries. Each node's own nodes.conf
//! must load in our parser and come back out of our writer byte for byte,
//! and our `CLUSTER NODES`, `CLUSTER SLOTS` and `CLUSTER SHARDS` for the
//! loaded model must be the node's own replies.
//!
//! What Redis itself does not keep across a load, the test puts back
//! before comparing, and says so: a loaded node has no bus link (the file's
//! `connected` becomes `disconnected` on Redis's own next rewrite) and
//! Redis stamps a nonzero ping/pong time with the load's `mstime()`.

mod common;

use std::time::{Duration, Instant};

use common::cluster::{bulk_text, redis8_cluster_node};
use common::*;
use zwindow::cluster::nodes_conf;
use zwindow::cluster::state::{ClusterState, EndpointType, ReplyContext};

const WAIT: Duration = Duration::from_secs(20);
const HOSTNAME: &str = "b.node.test";

fn ok(server: &RedisServer, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let reply = server.conn().cmd(&args);
    assert_eq!(reply, b"+OK\r\n", "{args:?}");
}

fn text_of(server: &RedisServer, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    bulk_text(&server.conn().cmd(&args))
}

fn cport_of(server: &RedisServer) -> String {
    let reply = server.conn().cmd(&[b"CONFIG", b"GET", b"cluster-port"]);
    match parse_reply(&reply) {
        Reply::Array(a) => match &a[1] {
            Reply::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// A nodes text with the ping_sent and pong_received fields (the 5th and
/// 6th words of a node line) replaced by whether they were zero.
fn mask_times(text: &str) -> String {
    text.lines()
        .map(|line| {
            let mut words: Vec<String> = line.split(' ').map(str::to_owned).collect();
            if words.first().map(String::as_str) != Some("vars") && words.len() >= 8 {
                // ping_sent: whether a ping is in flight changes from one
                // moment to the next (a saved file and a later CLUSTER
                // NODES may differ), so it is not compared.
                words[4] = "P".into();
                let w = &mut words[5];
                *w = if w == "0" { "0".into() } else { "T".into() };
            }
            words.join(" ") + "\n"
        })
        .collect()
}

/// The view a node has of the cluster, minus what is only its own
/// (myself, times, links, the import/migrate entries): equal on all nodes
/// once they agree.
fn shared_view(nodes: &str) -> Vec<String> {
    let mut lines: Vec<String> = nodes
        .lines()
        .map(|line| {
            let w: Vec<&str> = line.split(' ').collect();
            let flags = w[2].replace("myself,", "");
            let slots: Vec<&str> = w[8..]
                .iter()
                .copied()
                .filter(|s| !s.starts_with('['))
                .collect();
            format!(
                "{} {} {} {} {} {}",
                w[0],
                w[1],
                flags,
                w[3],
                w[6],
                slots.join(" ")
            )
        })
        .collect();
    lines.sort();
    lines
}

/// A reply's RESP text with the value after each `replication-offset`
/// key replaced by 0: offsets move with the replication pings.
fn mask_offsets(reply: &[u8]) -> String {
    const KEY: &str = "replication-offset\r\n:";
    let text = String::from_utf8_lossy(reply);
    let mut parts = text.split(KEY);
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        out.push_str(KEY);
        out.push('0');
        out.push_str(part.trim_start_matches(|c: char| c.is_ascii_digit() || c == '-'));
    }
    out
}

/// The model loaded from `server`'s nodes.conf as it is right now
/// (SAVECONFIG first), with the link state and times of the file put
/// back, and the file's text.
fn load_saved(server: &RedisServer) -> (ClusterState, String) {
    ok(server, &["CLUSTER", "SAVECONFIG"]);
    let path = server.dir().join("nodes.conf");
    let file = std::fs::read_to_string(&path).expect("read nodes.conf");
    let now = 1_700_000_000_000;
    let loaded = nodes_conf::load_file(&path, now)
        .unwrap_or_else(|e| panic!("{e}\n{file}"))
        .expect("a nodes.conf");
    let mut state = loaded.state;
    // Redis stamps a nonzero time with the load's clock.
    for node in state.nodes() {
        assert!(node.ping_sent == 0 || node.ping_sent == now);
        assert!(node.pong_received == 0 || node.pong_received == now);
    }
    for line in file.lines().filter(|l| !l.starts_with("vars")) {
        let w: Vec<&str> = line.split(' ').collect();
        let name = zwindow::cluster::wire::NodeName::from_slice(w[0].as_bytes()).unwrap();
        let node = state.node_mut(&name).expect("a node of the file");
        node.ping_sent = w[4].parse().unwrap();
        node.pong_received = w[5].parse().unwrap();
        node.link = w[7] == "connected";
    }
    (state, file)
}

#[test]
fn nodes_conf_and_cluster_replies_match_redis() {
    let a = redis8_cluster_node(5000, &[]);
    let b = redis8_cluster_node(5000, &["--cluster-announce-hostname", HOSTNAME]);
    let c = redis8_cluster_node(5000, &[]);
    let servers = [&a, &b, &c];
    let ids: Vec<String> = servers
        .iter()
        .map(|s| text_of(s, &["CLUSTER", "MYID"]))
        .collect();

    for s in [&b, &c] {
        let (port, cport) = (s.port().to_string(), cport_of(s));
        ok(&a, &["CLUSTER", "MEET", "127.0.0.1", &port, &cport]);
    }
    // A serves two ranges around one slot of B's; B the rest.
    ok(
        &a,
        &["CLUSTER", "ADDSLOTSRANGE", "0", "5460", "5462", "8000"],
    );
    ok(
        &b,
        &["CLUSTER", "ADDSLOTSRANGE", "5461", "5461", "8001", "16383"],
    );
    let start = Instant::now();
    while !text_of(&c, &["CLUSTER", "NODES"]).contains(&ids[0]) {
        assert!(start.elapsed() < WAIT, "C never learnt of A");
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(&c, &["CLUSTER", "REPLICATE", &ids[0]]);

    // Converged: every node sees the same nodes, slots, epochs and roles,
    // no handshakes, all links up, and lists C as A's replica in SLOTS
    // (its offset known: it has synced).
    let start = Instant::now();
    loop {
        let views: Vec<String> = servers
            .iter()
            .map(|s| text_of(s, &["CLUSTER", "NODES"]))
            .collect();
        let same = views
            .iter()
            .all(|v| shared_view(v) == shared_view(&views[0]));
        let settled = views.iter().all(|v| {
            v.lines().count() == 3
                && !v.contains("handshake")
                && !v.contains("fail")
                && !v.contains("disconnected")
                && v.contains(HOSTNAME)
                && v.contains("slave ")
        });
        let slots_ok = servers.iter().all(|s| {
            let slots = s.conn().cmd(&[b"CLUSTER", b"SLOTS"]);
            String::from_utf8_lossy(&slots).contains(&ids[2])
        });
        if same && settled && slots_ok {
            break;
        }
        assert!(
            start.elapsed() < WAIT,
            "the cluster did not converge:\n{}",
            views.join("\n")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Only now the migration: a node importing a slot ignores what others
    // announce of it, so B must know A's slots first.
    ok(&a, &["CLUSTER", "SETSLOT", "100", "MIGRATING", &ids[1]]);
    ok(&b, &["CLUSTER", "SETSLOT", "100", "IMPORTING", &ids[0]]);

    for (i, server) in servers.iter().enumerate() {
        let (mut state, file) = load_saved(server);
        assert_eq!(
            state
                .myself
                .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned()),
            Some(ids[i].clone())
        );
        // The file has what the test set up: B's hostname, and myself's
        // side of the migration on A and B.
        assert!(file.contains(&format!(",{HOSTNAME},")), "{file}");
        match i {
            0 => assert!(file.contains(&format!(" [100->-{}]", ids[1])), "{file}"),
            1 => assert!(file.contains(&format!(" [100-<-{}]", ids[0])), "{file}"),
            _ => assert!(!file.contains('['), "{file}"),
        }
        // The writer gives back the file, byte for byte.
        assert_eq!(
            String::from_utf8(nodes_conf::config_text(&state)).unwrap(),
            file,
            "node {i}'s nodes.conf"
        );
        // And writes it: in place over a longer file, padded then cut.
        let copy = PrivateDir::new("nodes-conf");
        let path = copy.0.join("nodes.conf");
        std::fs::write(&path, "x".repeat(file.len() + 100)).unwrap();
        nodes_conf::save(&state, &path, true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), file);

        // CLUSTER NODES, times aside (all links are up).
        for node in state.nodes().map(|n| n.name).collect::<Vec<_>>() {
            state.node_mut(&node).unwrap().link = true;
        }
        let theirs = text_of(server, &["CLUSTER", "NODES"]);
        let ours = String::from_utf8(nodes_conf::cluster_nodes(&state, false)).unwrap();
        assert_eq!(
            mask_times(&ours),
            mask_times(&theirs),
            "node {i}'s CLUSTER NODES"
        );

        // CLUSTER SLOTS, byte for byte: a replica is listed once its
        // offset is known, and it is (it has synced).
        for node in state.nodes().map(|n| n.name).collect::<Vec<_>>() {
            state.node_mut(&node).unwrap().repl_offset = 1;
        }
        for (setting, endpoint) in [
            ("hostname", EndpointType::Hostname),
            ("unknown-endpoint", EndpointType::UnknownEndpoint),
            ("ip", EndpointType::Ip),
        ] {
            ok(
                server,
                &["CONFIG", "SET", "cluster-preferred-endpoint-type", setting],
            );
            let ctx = ReplyContext {
                endpoint,
                master_repl_offset: 1,
                replica_offset: 1,
                ..ReplyContext::default()
            };
            for resp3 in [false, true] {
                let mut conn = server.conn();
                if resp3 {
                    conn.cmd(&[b"HELLO", b"3"]);
                }
                let theirs = conn.cmd(&[b"CLUSTER", b"SLOTS"]);
                let ours = zwindow::cluster::state::slots_reply_bytes(&state, &ctx, resp3);
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&theirs),
                    "node {i}'s CLUSTER SLOTS ({setting}, RESP3 {resp3})"
                );

                // CLUSTER SHARDS, replication offsets aside, the shards in
                // any order (Redis 7.2+ walks its dict of shard ids).
                let theirs = conn.cmd(&[b"CLUSTER", b"SHARDS"]);
                let ours = zwindow::cluster::state::shards_reply_bytes(&state, &ctx, resp3);
                let shards = |reply: &[u8]| {
                    let (head, mut items) = split_aggregate(reply).expect("an array of shards");
                    items.sort();
                    (
                        head,
                        items.iter().map(|s| mask_offsets(s)).collect::<Vec<_>>(),
                    )
                };
                assert_eq!(
                    shards(&ours),
                    shards(&theirs),
                    "node {i}'s CLUSTER SHARDS ({setting}, RESP3 {resp3})"
                );
            }
        }
    }
}

/// A nodes.conf redis-server cannot read stops it at startup, with the
/// line our loader's error gives; our loader refuses the same files.
#[test]
fn unreadable_nodes_conf_stops_redis_with_our_error_text() {
    const A: &str = "e81faae933808478353a8cf8ff4a0a1e8e1fd152";
    let ok_line = format!("{A} 127.0.0.1:1@2 myself,master - 0 0 0 connected");
    let cases = [
        format!("{ok_line} 16384\n"),
        format!("{A} 127.0.0.1:1@2 master - 0 0 0 connected\n"),
        format!("{A} 127.0.0.1 myself,master - 0 0 0 connected\n"),
        format!("{ok_line}\nvars currentEpoch\n"),
        format!("{A} 127.0.0.1:1@2 myself,boss - 0 0 0 connected\n"),
    ];
    for text in cases {
        let err = nodes_conf::parse(text.as_bytes(), 0).expect_err(&text);
        let dir = PrivateDir::new("bad-nodes-conf");
        std::fs::write(dir.0.join("nodes.conf"), &text).unwrap();
        let log = dir.0.join("redis.log");
        let mut child = std::process::Command::new(find_redis_server())
            .args(["--port", &free_port().to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--cluster-enabled", "yes"])
            .args(["--cluster-port", &free_port().to_string()])
            .arg("--dir")
            .arg(&dir.0)
            .arg("--logfile")
            .arg(&log)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > WAIT {
                let _ = child.kill();
                let _ = child.wait();
                panic!("redis-server started with a bad nodes.conf:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(!status.success(), "{text}");
        let logged = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(
            logged.contains(&err.log_line()),
            "{text}: we say {:?}, Redis logged:\n{logged}",
            err.log_line()
        );
    }
}
