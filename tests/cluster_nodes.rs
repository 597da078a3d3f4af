//! Cluster nodes talking over the bus (`network::bus`): zwindow nodes MEET
//! and converge, split the slots and redirect to each other (redis-cli
//! `-c` hops between them), a zwindow node and a redis-server 7.0.15 node
//! MEET and see each other as connected primaries (over TLS too), a
//! replica set by CLUSTER REPLICATE receives its primary's writes and is
//! promoted when that primary is killed, manual failovers (zwindow and
//! redis-server primaries), PUBLISH and SPUBLISH across nodes, `redis-cli
//! --cluster create`/`check`/`reshard`, restarts from nodes.conf, CLUSTER
//! RESET, unframeable bytes on the bus port, SIGTERM with live links.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Short, so that failure detection and the election fit in a test.
const NODE_TIMEOUT: u64 = 2000;
const WAIT: Duration = Duration::from_secs(20);
/// For tests not about failure detection: long enough that a loaded
/// machine does not fail nodes over under them.
const CALM_TIMEOUT: u64 = 6000;

/// A zwindow cluster node on free ports (its bus on `cport`).
fn zwindow_node() -> (ZwindowServer, u16) {
    zwindow_node_with_timeout(NODE_TIMEOUT)
}

/// The same with another node timeout: tests whose point is not failure
/// detection take a longer one, so that a loaded machine does not fail
/// nodes over under them.
fn zwindow_node_with_timeout(node_timeout: u64) -> (ZwindowServer, u16) {
    start_on_free_port(|cport| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", "0"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-port", &cport.to_string()])
            .args(["--cluster-node-timeout", &node_timeout.to_string()]);
        ZwindowServer::try_start_command(cmd)
    })
}

use common::cluster::{cmd_line as cmd, lists_connected, raw_text as text, redis_cli};

/// Polls `check` until it holds, or fails with `what` and the last state.
fn wait_for(what: &str, check: impl FnMut() -> Result<(), String>) {
    common::cluster::wait_until(what, WAIT, check)
}

/// A node's bus port, as its `CLUSTER NODES` line for myself says.
fn cluster_port(node: &ZwindowServer) -> u16 {
    let nodes = cmd(&mut node.conn(), "CLUSTER NODES");
    let line = nodes
        .lines()
        .find(|l| l.contains("myself"))
        .expect("myself");
    let addr = line.split(' ').nth(1).expect("address");
    let cport = addr.split('@').nth(1).expect("bus port");
    cport.split(',').next().unwrap().parse().expect("a port")
}

fn wait_state_ok(conn: &mut RawConn) {
    common::cluster::wait_state_ok(conn, WAIT)
}

/// Three zwindow primaries met through the first, slots split in three,
/// `cluster_state:ok` everywhere. Returns the servers and their ids.
fn three_primaries() -> (Vec<ZwindowServer>, Vec<String>) {
    three_primaries_with_timeout(CALM_TIMEOUT)
}

/// [`three_primaries`] with the node timeout `node_timeout`.
fn three_primaries_with_timeout(node_timeout: u64) -> (Vec<ZwindowServer>, Vec<String>) {
    let started: Vec<(ZwindowServer, u16)> = (0..3)
        .map(|_| zwindow_node_with_timeout(node_timeout))
        .collect();
    let cports: Vec<u16> = started.iter().map(|(_, c)| *c).collect();
    let nodes: Vec<ZwindowServer> = started.into_iter().map(|(n, _)| n).collect();
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| cmd(&mut n.conn(), "CLUSTER MYID"))
        .collect();
    let mut first = nodes[0].conn();
    for (n, cport) in nodes[1..].iter().zip(&cports[1..]) {
        let reply = cmd(
            &mut first,
            &format!("CLUSTER MEET 127.0.0.1 {} {cport}", n.port()),
        );
        assert_eq!(reply, "+OK\r\n");
    }
    for n in &nodes {
        let mut c = n.conn();
        wait_for("all three connected", || lists_connected(&mut c, &ids));
    }
    for (i, range) in ["0 5460", "5461 10922", "10923 16383"].iter().enumerate() {
        let reply = cmd(
            &mut nodes[i].conn(),
            &format!("CLUSTER ADDSLOTSRANGE {range}"),
        );
        assert_eq!(reply, "+OK\r\n");
    }
    for n in &nodes {
        wait_state_ok(&mut n.conn());
    }
    (nodes, ids)
}

#[test]
fn three_zwindow_nodes_meet_split_the_slots_and_redirect() {
    let (nodes, _ids) = three_primaries();
    // Every node knows every slot's owner: MOVED to the right one.
    // "foo" is in slot 12182 (the third node's).
    let third = nodes[2].port();
    for n in &nodes[..2] {
        let reply = cmd(&mut n.conn(), "GET foo");
        assert_eq!(reply, format!("-MOVED 12182 127.0.0.1:{third}\r\n"));
    }
    assert_eq!(cmd(&mut nodes[2].conn(), "SET foo bar"), "+OK\r\n");
    // redis-cli -c follows the redirection from the first node.
    let out = std::process::Command::new("redis-cli")
        .args(["-c", "-p", &nodes[0].port().to_string(), "GET", "foo"])
        .output()
        .expect("run redis-cli");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "bar");
    // CLUSTER LINKS: a link each way with each other node.
    let links = parse_reply(&nodes[0].conn().cmd(&[b"CLUSTER", b"LINKS"]));
    assert_eq!(links.array().len(), 4, "{links:?}");
    // CLUSTER INFO counts the bus's messages by type, as Redis does.
    let info = cmd(&mut nodes[0].conn(), "CLUSTER INFO");
    for field in [
        "cluster_stats_messages_ping_sent:",
        "cluster_stats_messages_meet_sent:",
        "cluster_stats_messages_pong_received:",
    ] {
        assert!(info.contains(field), "{field} missing: {info}");
    }
}

#[test]
fn zwindow_and_redis_server_meet_as_connected_primaries() {
    let (z, _) = zwindow_node();
    let (r, rcport) = redis_cluster_node(NODE_TIMEOUT, &[]);
    let ids = vec![
        cmd(&mut z.conn(), "CLUSTER MYID"),
        cmd(&mut r.conn(), "CLUSTER MYID"),
    ];
    assert_eq!(
        cmd(
            &mut z.conn(),
            &format!("CLUSTER MEET 127.0.0.1 {} {rcport}", r.port())
        ),
        "+OK\r\n"
    );
    let (mut zc, mut rc) = (z.conn(), r.conn());
    wait_for("zwindow lists both connected", || {
        lists_connected(&mut zc, &ids)
    });
    wait_for("redis-server lists both connected", || {
        lists_connected(&mut rc, &ids)
    });
    for c in [&mut zc, &mut rc] {
        let nodes = cmd(c, "CLUSTER NODES");
        assert_eq!(nodes.matches("master").count(), 2, "{nodes}");
    }
    // Slots taken on either side are learnt by the other.
    assert_eq!(cmd(&mut zc, "CLUSTER ADDSLOTSRANGE 0 8191"), "+OK\r\n");
    assert_eq!(cmd(&mut rc, "CLUSTER ADDSLOTSRANGE 8192 16383"), "+OK\r\n");
    wait_state_ok(&mut zc);
    wait_state_ok(&mut rc);
    // "foo" is in slot 12182, redis-server's.
    assert_eq!(
        cmd(&mut zc, "GET foo"),
        format!("-MOVED 12182 127.0.0.1:{}\r\n", r.port())
    );
}

#[test]
fn a_replica_follows_its_primary_and_takes_over_when_it_dies() {
    let (mut nodes, ids) = three_primaries_with_timeout(NODE_TIMEOUT);
    let (replica, _) = zwindow_node();
    let primary_cport = cluster_port(&nodes[2]);
    let replica_id = cmd(&mut replica.conn(), "CLUSTER MYID");
    let mut rc = replica.conn();
    assert_eq!(
        cmd(
            &mut rc,
            &format!("CLUSTER MEET 127.0.0.1 {} {primary_cport}", nodes[2].port())
        ),
        "+OK\r\n"
    );
    let mut all = ids.clone();
    all.push(replica_id.clone());
    wait_for("the replica knows everybody", || {
        lists_connected(&mut rc, &all)
    });
    assert_eq!(
        cmd(&mut rc, &format!("CLUSTER REPLICATE {}", ids[2])),
        "+OK\r\n"
    );
    // The primary's writes reach it ("foo" is the third node's).
    assert_eq!(cmd(&mut nodes[2].conn(), "SET foo bar"), "+OK\r\n");
    wait_for("the write replicated", || {
        let mut c = replica.conn();
        cmd(&mut c, "READONLY");
        let v = cmd(&mut c, "GET foo");
        if v == "bar" { Ok(()) } else { Err(v) }
    });
    let mut first = nodes[0].conn();
    wait_for("the primary lists its replica", || {
        let nodes = cmd(&mut first, "CLUSTER NODES");
        if nodes.contains(&format!("slave {}", ids[2])) {
            Ok(())
        } else {
            Err(nodes)
        }
    });
    // SIGKILL the primary: the replica is elected within twice the node
    // timeout and serves its slots.
    let dead = nodes.remove(2);
    let status = std::process::Command::new("kill")
        .args(["-KILL", &dead.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let killed = Instant::now();
    loop {
        let role = cmd(&mut rc, "ROLE");
        if role.contains("master") {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_millis(2 * NODE_TIMEOUT + 500),
            "not promoted after {:?}: {role}",
            killed.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    wait_for("the first node sends foo to the new primary", || {
        let reply = cmd(&mut first, "GET foo");
        if reply == format!("-MOVED 12182 127.0.0.1:{}\r\n", replica.port()) {
            Ok(())
        } else {
            Err(reply)
        }
    });
    assert_eq!(cmd(&mut rc, "GET foo"), "bar");
    drop(dead);
}

#[test]
fn publish_reaches_subscribers_on_other_nodes() {
    let (nodes, _ids) = three_primaries();
    let mut sub = nodes[1].conn();
    sub.cmd(&[b"SUBSCRIBE", b"news"]);
    assert_eq!(cmd(&mut nodes[0].conn(), "PUBLISH news hello"), ":0\r\n");
    let msg = parse_reply(&sub.read_reply());
    let parts: Vec<Vec<u8>> = msg.array().iter().map(|p| p.bulk().to_vec()).collect();
    assert_eq!(
        parts,
        vec![b"message".to_vec(), b"news".to_vec(), b"hello".to_vec()]
    );
}

#[test]
fn redis_cli_cluster_create_and_check_on_three_zwindow_nodes() {
    let nodes: Vec<ZwindowServer> = (0..3).map(|_| zwindow_node().0).collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .arg("--cluster-yes")
        .output()
        .expect("run redis-cli");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && shown.contains("[OK] All 16384 slots covered."),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for n in &nodes {
        wait_state_ok(&mut n.conn());
    }
    let out = std::process::Command::new("redis-cli")
        .args(["--cluster", "check", &addrs[0]])
        .output()
        .expect("run redis-cli");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success()
            && shown.contains("[OK] All nodes agree about slots configuration.")
            && shown.contains("[OK] All 16384 slots covered.")
            && !shown.contains("[WARNING]")
            && !shown.contains("[ERR]"),
        "{shown}"
    );
}

#[test]
fn sigterm_stops_a_node_with_live_links_at_once() {
    let (mut nodes, _ids) = three_primaries();
    let status = nodes[0].terminate(Duration::from_secs(1));
    assert!(status.is_some(), "still running a second after SIGTERM");
}

#[test]
fn cluster_reset_forgets_the_others_and_their_links() {
    let (nodes, _ids) = three_primaries();
    let mut c = nodes[1].conn();
    assert_eq!(cmd(&mut c, "CLUSTER RESET"), "+OK\r\n");
    std::thread::sleep(Duration::from_secs(1));
    let listed = cmd(&mut c, "CLUSTER NODES");
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let links = parse_reply(&c.cmd(&[b"CLUSTER", b"LINKS"]));
    assert_eq!(links.array().len(), 0, "{links:?}");
}

/// Reads from `s` until the peer closes (true) or `limit` passes.
fn closed_within(s: &mut std::net::TcpStream, limit: Duration) -> bool {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn bytes_that_cannot_be_framed_drop_the_link_not_the_node() {
    use std::io::Write;
    let (node, cport) = zwindow_node();
    let bus = std::net::SocketAddr::from(([127, 0, 0, 1], cport));
    let mut huge = b"RCmb".to_vec();
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    let mut short = b"RCmb".to_vec();
    short.extend_from_slice(&3u32.to_be_bytes());
    for bytes in [b"GET / HTTP/1.1\r\n\r\n".to_vec(), huge, short] {
        let mut s = std::net::TcpStream::connect(bus).unwrap();
        s.write_all(&bytes).unwrap();
        assert!(
            closed_within(&mut s, Duration::from_secs(2)),
            "link kept after {}",
            escape(&bytes)
        );
    }
    // A frame announcing 100 MB that never comes: nothing is held for it
    // up front, and the node goes on.
    let mut s = std::net::TcpStream::connect(bus).unwrap();
    let mut big = b"RCmb".to_vec();
    big.extend_from_slice(&(100u32 << 20).to_be_bytes());
    big.extend_from_slice(&[0u8; 64]);
    s.write_all(&big).unwrap();
    drop(s);
    assert_eq!(cmd(&mut node.conn(), "PING"), "+PONG\r\n");
}

#[test]
fn a_zwindow_replica_of_a_redis_server_primary_takes_over_by_manual_failover() {
    let (r, rcport) = redis_cluster_node(NODE_TIMEOUT, &[]);
    let (z, _) = zwindow_node();
    let ids = vec![
        cmd(&mut r.conn(), "CLUSTER MYID"),
        cmd(&mut z.conn(), "CLUSTER MYID"),
    ];
    let (mut rc, mut zc) = (r.conn(), z.conn());
    assert_eq!(
        cmd(
            &mut zc,
            &format!("CLUSTER MEET 127.0.0.1 {} {rcport}", r.port())
        ),
        "+OK\r\n"
    );
    assert_eq!(cmd(&mut rc, "CLUSTER ADDSLOTSRANGE 0 16383"), "+OK\r\n");
    wait_for("both connected", || lists_connected(&mut zc, &ids));
    wait_state_ok(&mut zc);
    assert_eq!(
        cmd(&mut zc, &format!("CLUSTER REPLICATE {}", ids[0])),
        "+OK\r\n"
    );
    assert_eq!(cmd(&mut rc, "SET foo bar"), "+OK\r\n");
    wait_for("redis-server's write on the zwindow replica", || {
        cmd(&mut zc, "READONLY");
        let v = cmd(&mut zc, "GET foo");
        if v == "bar" { Ok(()) } else { Err(v) }
    });
    wait_for("redis-server lists its zwindow replica", || {
        let nodes = cmd(&mut rc, "CLUSTER NODES");
        if nodes.contains(&format!("slave {}", ids[0])) {
            Ok(())
        } else {
            Err(nodes)
        }
    });
    // CLUSTER FAILOVER: redis-server pauses, hands over its offset and
    // votes; the roles swap.
    assert_eq!(cmd(&mut zc, "CLUSTER FAILOVER"), "+OK\r\n");
    wait_for("the roles swapped", || {
        let (zrole, rrole) = (cmd(&mut zc, "ROLE"), cmd(&mut rc, "ROLE"));
        if zrole.contains("master") && rrole.contains("slave") {
            Ok(())
        } else {
            Err(format!("zwindow {zrole} redis-server {rrole}"))
        }
    });
    assert_eq!(cmd(&mut zc, "SET foo baz"), "+OK\r\n");
    wait_for("zwindow's write on redis-server", || {
        cmd(&mut rc, "READONLY");
        let v = cmd(&mut rc, "GET foo");
        if v == "baz" { Ok(()) } else { Err(v) }
    });
}

/// `primaries` and a fourth zwindow node that meets them and replicates
/// the third, once that primary lists it.
fn three_primaries_and_a_replica_of_the_third(
    primaries: (Vec<ZwindowServer>, Vec<String>),
) -> (Vec<ZwindowServer>, Vec<String>, ZwindowServer) {
    let (nodes, ids) = primaries;
    let (replica, _) = zwindow_node_with_timeout(CALM_TIMEOUT);
    let mut rc = replica.conn();
    let cport = cluster_port(&nodes[2]);
    cmd(
        &mut rc,
        &format!("CLUSTER MEET 127.0.0.1 {} {cport}", nodes[2].port()),
    );
    let mut all = ids.clone();
    all.push(cmd(&mut rc, "CLUSTER MYID"));
    wait_for("the replica knows everybody", || {
        lists_connected(&mut rc, &all)
    });
    assert_eq!(
        cmd(&mut rc, &format!("CLUSTER REPLICATE {}", ids[2])),
        "+OK\r\n"
    );
    let mut primary = nodes[2].conn();
    wait_for("the primary lists its replica", || {
        let listed = cmd(&mut primary, "CLUSTER NODES");
        if listed.contains(&format!("slave {}", ids[2])) {
            Ok(())
        } else {
            Err(listed)
        }
    });
    (nodes, ids, replica)
}

#[test]
fn spublish_reaches_the_shards_replica() {
    let (nodes, _ids, replica) = three_primaries_and_a_replica_of_the_third(three_primaries());
    let mut primary = nodes[2].conn();
    // "foo" is in slot 12182, the third node's shard.
    let mut sub = replica.conn();
    sub.cmd(&[b"SSUBSCRIBE", b"foo"]);
    cmd(&mut primary, "SPUBLISH foo hello");
    let msg = parse_reply(&sub.read_reply());
    let parts: Vec<Vec<u8>> = msg.array().iter().map(|p| p.bulk().to_vec()).collect();
    assert_eq!(
        parts,
        vec![b"smessage".to_vec(), b"foo".to_vec(), b"hello".to_vec()]
    );
}

/// A READONLY client blocked in XREAD on a replica of the key's slot
/// owner stays blocked there (not redirected with -MOVED by the check of
/// blocked clients, Redis's `clusterRedirectBlockedClientIfNeeded`) and is
/// served by its primary's XADD (Redis's cluster suite's
/// 16-transactions-on-replica, "read-only blocking operations from
/// replica").
#[test]
fn a_readonly_blocked_xread_on_a_replica_is_served_by_its_primary() {
    let (nodes, _ids, replica) =
        three_primaries_and_a_replica_of_the_third(three_primaries_with_timeout(CALM_TIMEOUT));
    let mut rc = replica.conn();
    let mut primary = nodes[2].conn();
    wait_for("the replica's link", || {
        let info = text(&rc.cmd(&[b"INFO", b"replication"]));
        if info.contains("master_link_status:up") {
            Ok(())
        } else {
            Err(info)
        }
    });
    // "foo" is in slot 12182, the third node's shard.
    let mut reader = replica.conn();
    assert_eq!(cmd(&mut reader, "READONLY"), "+OK\r\n");
    reader.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"foo", b"$",
    ]));
    wait_for("the reader blocked", || {
        let info = text(&rc.cmd(&[b"INFO", b"clients"]));
        if info.contains("blocked_clients:1") {
            Ok(())
        } else {
            Err(info)
        }
    });
    // Several rounds of the check of blocked clients (ten a second).
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(cmd(&mut primary, "XADD foo 1-1 f v"), "1-1");
    reader.set_timeout(Duration::from_secs(10));
    assert_eq!(
        String::from_utf8_lossy(&reader.read_reply()),
        "*1\r\n*2\r\n$3\r\nfoo\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    );
    // Without READONLY the same read is redirected to the primary.
    let moved = cmd(&mut rc, "XREAD BLOCK 0 STREAMS foo $");
    assert!(moved.starts_with("-MOVED 12182 "), "{moved}");
}

#[test]
fn a_replica_restarted_from_its_nodes_conf_replicates_again() {
    let (nodes, ids) = three_primaries();
    let dir = PrivateDir::new("cluster-replica-restart");
    let start = |port: u16, cport: u16| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-port", &cport.to_string()])
            .args(["--cluster-node-timeout", &NODE_TIMEOUT.to_string()])
            .current_dir(&dir.0);
        ZwindowServer::try_start_command(cmd)
    };
    let (port, cport) = (free_port(), free_port());
    let mut replica = start(port, cport).expect("start the replica");
    let mut rc = replica.conn();
    let primary_cport = cluster_port(&nodes[2]);
    cmd(
        &mut rc,
        &format!("CLUSTER MEET 127.0.0.1 {} {primary_cport}", nodes[2].port()),
    );
    let mut all = ids.clone();
    all.push(cmd(&mut rc, "CLUSTER MYID"));
    wait_for("the replica knows everybody", || {
        lists_connected(&mut rc, &all)
    });
    assert_eq!(
        cmd(&mut rc, &format!("CLUSTER REPLICATE {}", ids[2])),
        "+OK\r\n"
    );
    let mut primary = nodes[2].conn();
    assert_eq!(cmd(&mut primary, "SET foo bar"), "+OK\r\n");
    let read_foo = |replica: &ZwindowServer, want: &str| {
        let mut c = replica.conn();
        cmd(&mut c, "READONLY");
        let v = cmd(&mut c, "GET foo");
        if v == want { Ok(()) } else { Err(v) }
    };
    wait_for("the write replicated", || read_foo(&replica, "bar"));
    assert!(replica.terminate(Duration::from_secs(5)).is_some());
    drop(replica);
    replica = start(port, cport).expect("restart the replica");
    assert_eq!(cmd(&mut primary, "SET foo baz"), "+OK\r\n");
    wait_for("the write after the restart replicated", || {
        read_foo(&replica, "baz")
    });
    let role = cmd(&mut replica.conn(), "ROLE");
    assert!(role.contains("slave"), "{role}");
}

/// `tls-cluster yes` arguments on `tls_port`, the bus on `cport`.
fn tls_cluster_args(tls_port: u16, cport: u16) -> Vec<String> {
    let mut args = tls_server_args(&tls_certs(), tls_port);
    for a in [
        "--cluster-enabled",
        "yes",
        "--tls-cluster",
        "yes",
        "--cluster-port",
        &cport.to_string(),
        "--cluster-node-timeout",
        &NODE_TIMEOUT.to_string(),
    ] {
        args.push(a.to_string());
    }
    args
}

#[test]
fn a_tls_cluster_of_zwindow_and_redis_server() {
    let cport = free_port();
    let (z, ztls) = start_on_free_port(|tls_port| {
        let args = tls_cluster_args(tls_port, cport);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ZwindowServer::try_start(&args)
    });
    let rcport = free_port();
    let (r, rtls) = start_on_free_port(|tls_port| {
        let mut args = tls_cluster_args(tls_port, rcport);
        args.extend(["--cluster-config-file".into(), "nodes.conf".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        RedisServer::try_start_with(&args)
    });
    let ids = vec![
        cmd(&mut z.conn(), "CLUSTER MYID"),
        cmd(&mut r.conn(), "CLUSTER MYID"),
    ];
    let (mut zc, mut rc) = (z.conn(), r.conn());
    assert_eq!(
        cmd(&mut zc, &format!("CLUSTER MEET 127.0.0.1 {rtls} {rcport}")),
        "+OK\r\n"
    );
    wait_for("zwindow lists both connected", || {
        lists_connected(&mut zc, &ids)
    });
    wait_for("redis-server lists both connected", || {
        lists_connected(&mut rc, &ids)
    });
    // zwindow announces both its ports: redis-server shows a plaintext
    // client the plaintext one (and a TLS client the TLS one).
    let listed = cmd(&mut rc, "CLUSTER NODES");
    assert!(
        listed.contains(&format!("127.0.0.1:{}@{cport}", z.port())),
        "{listed}"
    );
    // So does zwindow (Redis's `use_pport`): CLUSTER NODES and MOVED name
    // the plaintext ports to a plaintext client, as redis-server does.
    let mine = cmd(&mut zc, "CLUSTER NODES");
    assert!(
        mine.contains(&format!("127.0.0.1:{}@{cport} myself", z.port())),
        "{mine}"
    );
    assert!(
        mine.contains(&format!("127.0.0.1:{}@{rcport} master", r.port())),
        "{mine}"
    );
    assert_eq!(cmd(&mut rc, "CLUSTER ADDSLOTSRANGE 0 16383"), "+OK\r\n");
    wait_for("zwindow sees redis-server's slots", || {
        let answer = cmd(&mut zc, "GET foo");
        if answer.starts_with("-MOVED") {
            Ok(())
        } else {
            Err(answer)
        }
    });
    let moved = format!("-MOVED 12182 127.0.0.1:{}\r\n", r.port());
    assert_eq!(cmd(&mut zc, "GET foo"), moved);
    // A TLS client is shown the TLS ports.
    let certs = tls_certs();
    let file = |n: &str| certs.join(n).to_string_lossy().into_owned();
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &ztls.to_string(), "--tls"])
        .args(["--cacert", &file("ca.crt")])
        .args(["--cert", &file("client.crt"), "--key", &file("client.key")])
        .args(["GET", "foo"])
        .output()
        .expect("run redis-cli");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("MOVED 12182 127.0.0.1:{rtls}"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn redis_cli_creates_primaries_with_replicas_and_reshards() {
    let nodes: Vec<ZwindowServer> = (0..6)
        .map(|_| zwindow_node_with_timeout(CALM_TIMEOUT).0)
        .collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port()))
        .collect();
    let run = redis_cli;
    let mut create = vec!["--cluster", "create"];
    create.extend(addrs.iter().map(String::as_str));
    create.extend(["--cluster-replicas", "1", "--cluster-yes"]);
    let (ok, shown) = run(&create);
    assert!(
        ok && shown.contains("[OK] All 16384 slots covered."),
        "{shown}"
    );
    for n in &nodes {
        wait_state_ok(&mut n.conn());
    }
    // Three replicas, each known as one by every node.
    let mut first = nodes[0].conn();
    wait_for("three replicas everywhere", || {
        let listed = cmd(&mut first, "CLUSTER NODES");
        if listed.matches(" slave ").count() == 3 {
            Ok(())
        } else {
            Err(listed)
        }
    });
    // Keys, then a reshard of 100 slots (with their keys) between two
    // primaries: MIGRATE, SETSLOT … NODE, the new epoch gossiped.
    for i in 0..200 {
        let out = std::process::Command::new("redis-cli")
            .args(["-c", "-p", &nodes[0].port().to_string()])
            .args(["SET", &format!("key:{i}"), &i.to_string()])
            .output()
            .expect("run redis-cli");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "OK",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let owner_of = |slot: u16| -> String {
        let slots = parse_reply(&nodes[0].conn().cmd(&[b"CLUSTER", b"SLOTS"]));
        for range in slots.array() {
            let r = range.array();
            if (r[0].int()..=r[1].int()).contains(&i64::from(slot)) {
                let id = r[2].array()[2].bulk();
                return String::from_utf8_lossy(id).into_owned();
            }
        }
        panic!("slot {slot} unserved")
    };
    let from = owner_of(0);
    let to = owner_of(16383);
    let (ok, shown) = run(&[
        "--cluster",
        "reshard",
        &addrs[0],
        "--cluster-from",
        &from,
        "--cluster-to",
        &to,
        "--cluster-slots",
        "100",
        "--cluster-yes",
    ]);
    assert!(ok, "{shown}");
    wait_for("every node agrees after the reshard", || {
        let (ok, shown) = run(&["--cluster", "check", &addrs[0]]);
        if ok
            && shown.contains("[OK] All nodes agree about slots configuration.")
            && !shown.contains("[WARNING]")
            && !shown.contains("[ERR]")
        {
            Ok(())
        } else {
            Err(shown)
        }
    });
    assert_eq!(owner_of(0), to);
    for i in 0..200 {
        let out = std::process::Command::new("redis-cli")
            .args(["-c", "-p", &nodes[3].port().to_string()])
            .args(["GET", &format!("key:{i}")])
            .output()
            .expect("run redis-cli");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), i.to_string());
    }
}

#[test]
fn manual_failover_between_zwindow_nodes() {
    let (nodes, ids) = three_primaries();
    assert_eq!(
        cmd(&mut nodes[0].conn(), "FAILOVER"),
        "-ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.\r\n"
    );
    let (replica, _) = zwindow_node_with_timeout(CALM_TIMEOUT);
    let mut rc = replica.conn();
    let cport = cluster_port(&nodes[2]);
    cmd(
        &mut rc,
        &format!("CLUSTER MEET 127.0.0.1 {} {cport}", nodes[2].port()),
    );
    let mut all = ids.clone();
    all.push(cmd(&mut rc, "CLUSTER MYID"));
    wait_for("the replica knows everybody", || {
        lists_connected(&mut rc, &all)
    });
    assert_eq!(
        cmd(&mut rc, &format!("CLUSTER REPLICATE {}", ids[2])),
        "+OK\r\n"
    );
    let mut primary = nodes[2].conn();
    assert_eq!(cmd(&mut primary, "SET foo bar"), "+OK\r\n");
    wait_for("the write replicated", || {
        cmd(&mut rc, "READONLY");
        let v = cmd(&mut rc, "GET foo");
        if v == "bar" { Ok(()) } else { Err(v) }
    });
    wait_for("the primary lists its replica", || {
        let listed = cmd(&mut primary, "CLUSTER NODES");
        if listed.contains(&format!("slave {}", ids[2])) {
            Ok(())
        } else {
            Err(listed)
        }
    });
    // The primary pauses writes, hands over its offset, votes; the roles
    // swap and the old primary follows the new one.
    assert_eq!(cmd(&mut rc, "CLUSTER FAILOVER"), "+OK\r\n");
    wait_for("the roles swapped", || {
        let (new, old) = (cmd(&mut rc, "ROLE"), cmd(&mut primary, "ROLE"));
        if new.contains("master") && old.contains("slave") {
            Ok(())
        } else {
            Err(format!("replica {new} primary {old}"))
        }
    });
    // Writes are served again (the pause is lifted) by the new primary and
    // reach the old one.
    assert_eq!(cmd(&mut rc, "SET foo baz"), "+OK\r\n");
    wait_for("the old primary follows", || {
        let mut c = nodes[2].conn();
        cmd(&mut c, "READONLY");
        let v = cmd(&mut c, "GET foo");
        if v == "baz" { Ok(()) } else { Err(v) }
    });
}

#[test]
fn a_killed_primary_restarted_brings_the_cluster_back() {
    let dirs: Vec<PrivateDir> = (0..3).map(|_| PrivateDir::new("cluster-restart")).collect();
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let start = |i: usize| {
        let (port, cport) = ports[i];
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-port", &cport.to_string()])
            .args(["--cluster-node-timeout", &NODE_TIMEOUT.to_string()])
            .current_dir(&dirs[i].0);
        ZwindowServer::try_start_command(cmd).expect("start a node")
    };
    let mut nodes: Vec<ZwindowServer> = (0..3).map(start).collect();
    let ids: Vec<String> = nodes
        .iter()
        .map(|n| cmd(&mut n.conn(), "CLUSTER MYID"))
        .collect();
    for &(port, cport) in &ports[1..] {
        cmd(
            &mut nodes[0].conn(),
            &format!("CLUSTER MEET 127.0.0.1 {port} {cport}"),
        );
    }
    for n in &nodes {
        let mut c = n.conn();
        wait_for("all three connected", || lists_connected(&mut c, &ids));
    }
    for (i, range) in ["0 5460", "5461 10922", "10923 16383"].iter().enumerate() {
        cmd(
            &mut nodes[i].conn(),
            &format!("CLUSTER ADDSLOTSRANGE {range}"),
        );
    }
    for n in &nodes {
        wait_state_ok(&mut n.conn());
    }
    let dead = nodes.remove(0);
    let status = std::process::Command::new("kill")
        .args(["-KILL", &dead.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    drop(dead);
    for n in &nodes {
        let mut c = n.conn();
        wait_for("cluster_state:fail", || {
            let info = cmd(&mut c, "CLUSTER INFO");
            if info.contains("cluster_state:fail") {
                Ok(())
            } else {
                Err(info)
            }
        });
    }
    nodes.insert(0, start(0));
    for n in &nodes {
        wait_state_ok(&mut n.conn());
    }
}
