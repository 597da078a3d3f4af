//! Time windows in a cluster: window rules set or deleted on one zwindow
//! node reach every zwindow node over the cluster bus (module messages),
//! trim there and land in each node's config file; a redis-server node in
//! the same cluster ignores those messages and stays healthy; a node that
//! was down when rules changed catches up when it restarts from its
//! (stale) config file; MOVETO rules that could leave the key's slot are
//! refused (ZWINDOW SET, and `zwindow` directives at startup) and those
//! confined by a hash tag hand off; sorted-set member TTLs and hash field
//! TTLs move with their keys through MIGRATE and still expire there.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

/// Redis's default: long enough that a loaded machine does not see nodes
/// fail (and the cluster go down) under these tests, which are not about
/// failure detection.
const NODE_TIMEOUT: u64 = 15000;
const WAIT: Duration = Duration::from_secs(60);
/// A reply's time limit: generous, for a loaded machine.
const REPLY: Duration = Duration::from_secs(60);

/// One multi-node test at a time: each starts up to four servers, and
/// a loaded machine is what makes cluster tests flaky.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A connection with [`REPLY`] as its time limit.
fn patient(mut c: RawConn) -> RawConn {
    c.set_timeout(REPLY);
    c
}

use common::cluster::{cmd_line as cmd, lists_connected, raw_text as text};

/// Polls `check` until it holds, or fails with `what` and the last state.
fn wait_for(what: &str, check: impl FnMut() -> Result<(), String>) {
    common::cluster::wait_until(what, WAIT, check)
}

/// A zwindow cluster node started from a config file in its own
/// directory (so that it can be restarted from it).
struct Node {
    dir: PrivateDir,
    port: u16,
    cport: u16,
    server: Option<ZwindowServer>,
}

impl Node {
    fn new() -> Node {
        let dir = PrivateDir::new("cluster-windows");
        let (port, cport) = (free_port(), free_port());
        std::fs::write(
            dir.0.join("zwindow.conf"),
            format!(
                "bind 127.0.0.1\nport {port}\ncluster-enabled yes\ncluster-port {cport}\n\
                 cluster-node-timeout {NODE_TIMEOUT}\n"
            ),
        )
        .unwrap();
        let mut node = Node {
            dir,
            port,
            cport,
            server: None,
        };
        node.start();
        node
    }

    fn config_path(&self) -> PathBuf {
        self.dir.0.join("zwindow.conf")
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.config_path()).unwrap()
    }

    fn start(&mut self) {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.arg(self.config_path()).current_dir(&self.dir.0);
        self.server = Some(ZwindowServer::try_start_command(cmd).expect("start a node"));
    }

    fn stop(&mut self) {
        let mut server = self.server.take().expect("running");
        assert!(server.terminate(Duration::from_secs(10)).is_some());
    }

    fn conn(&self) -> RawConn {
        patient(self.server.as_ref().expect("running").conn())
    }

    fn id(&self) -> String {
        cmd(&mut self.conn(), "CLUSTER MYID")
    }
}

fn wait_state_ok(conn: &mut RawConn) {
    common::cluster::wait_state_ok(conn, WAIT)
}

/// MEETs every node (`ports`: client and bus ports) through the first,
/// gives the node of each connection its range of `ranges`, and waits
/// until all see each other connected and the cluster ok.
fn form_cluster(conns: &mut [RawConn], ports: &[(u16, u16)], ids: &[String], ranges: &[&str]) {
    for &(port, cport) in &ports[1..] {
        let reply = cmd(
            &mut conns[0],
            &format!("CLUSTER MEET 127.0.0.1 {port} {cport}"),
        );
        assert_eq!(reply, "+OK\r\n");
    }
    for c in conns.iter_mut() {
        wait_for("all connected", || lists_connected(c, ids));
    }
    for (c, range) in conns.iter_mut().zip(ranges) {
        let reply = cmd(c, &format!("CLUSTER ADDSLOTSRANGE {range}"));
        assert_eq!(reply, "+OK\r\n");
    }
    for c in conns.iter_mut() {
        wait_state_ok(c);
    }
}

/// A key `prefix` + n whose slot is in `lo..=hi`.
fn key_in(conn: &mut RawConn, prefix: &str, lo: i64, hi: i64) -> String {
    (0..)
        .map(|n| format!("{prefix}{n}"))
        .find(|k| {
            let slot = parse_reply(&conn.cmd(&[b"CLUSTER", b"KEYSLOT", k.as_bytes()])).int();
            (lo..=hi).contains(&slot)
        })
        .unwrap()
}

/// ZWINDOW LIST as text: one line per rule, its words spaced.
fn rules(conn: &mut RawConn) -> String {
    let list = parse_reply(&conn.cmd(&[b"ZWINDOW", b"LIST"]));
    list.array()
        .iter()
        .map(|rule| {
            rule.array()
                .iter()
                .map(|w| String::from_utf8_lossy(w.bulk()).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn has_rule(node: &Node, pattern: &str) -> Result<(), String> {
    let list = rules(&mut node.conn());
    if list.contains(pattern) {
        Ok(())
    } else {
        Err(list)
    }
}

fn lacks_rule(node: &Node, pattern: &str) -> Result<(), String> {
    let list = rules(&mut node.conn());
    if list.contains(pattern) {
        Err(list)
    } else {
        Ok(())
    }
}

const RANGES: [&str; 4] = ["0 4095", "4096 8191", "8192 12287", "12288 16383"];
const BOUNDS: [(i64, i64); 4] = [(0, 4095), (4096, 8191), (8192, 12287), (12288, 16383)];

#[test]
fn rules_reach_every_zwindow_node_and_a_redis_server_node_stays_healthy() {
    let _serial = serial();
    let nodes: Vec<Node> = (0..3).map(|_| Node::new()).collect();
    let (redis, rcport) = redis_cluster_node(NODE_TIMEOUT, &[]);
    let mut conns: Vec<RawConn> = nodes.iter().map(Node::conn).collect();
    conns.push(patient(redis.conn()));
    let mut ports: Vec<(u16, u16)> = nodes.iter().map(|n| (n.port, n.cport)).collect();
    ports.push((redis.port(), rcport));
    let mut ids: Vec<String> = nodes.iter().map(Node::id).collect();
    ids.push(cmd(&mut patient(redis.conn()), "CLUSTER MYID"));
    form_cluster(&mut conns, &ports, &ids, &RANGES);

    // Set on the first node: every zwindow node lists it and trims by it.
    assert_eq!(cmd(&mut conns[0], "ZWINDOW SET win:* 100"), "+OK\r\n");
    for (i, node) in nodes.iter().enumerate() {
        wait_for("the rule listed", || has_rule(node, "win:*"));
        let (lo, hi) = BOUNDS[i];
        let key = key_in(&mut conns[i], "win:", lo, hi);
        assert_eq!(
            cmd(&mut conns[i], &format!("ZADD {key} 1 old 99999999999 new")),
            ":2\r\n"
        );
        let left = parse_reply(&conns[i].cmd(&[b"ZRANGE", key.as_bytes(), b"0", b"-1"]));
        let left: Vec<&[u8]> = left.array().iter().map(Reply::bulk).collect();
        assert_eq!(left, vec![&b"new"[..]], "node {i}");
        wait_for("the rule in the config file", || {
            let conf = node.config();
            if conf.contains("zwindow win:* 100s s") {
                Ok(())
            } else {
                Err(conf)
            }
        });
    }

    // Deleted on the second node: gone everywhere, config files too.
    assert_eq!(cmd(&mut conns[1], "ZWINDOW DEL win:*"), ":1\r\n");
    for node in &nodes {
        wait_for("the rule deleted", || lacks_rule(node, "win:*"));
        wait_for("the rule out of the config file", || {
            let conf = node.config();
            if conf.contains("zwindow win:*") {
                Err(conf)
            } else {
                Ok(())
            }
        });
    }

    // MOVETO: refused when the destination can leave the key's slot,
    // accepted with a hash tag, shared, and handing off on the owner.
    let refused = cmd(
        &mut conns[2],
        "ZWINDOW SET events:* 10 MOVETO {key}:expired",
    );
    assert_eq!(
        refused,
        "-ERR MOVETO destination must hash to the same slot as the key in cluster mode; \
         use a hash tag such as {tag}:* in the pattern and {key} or {tag} in the destination\r\n"
    );
    let refused = cmd(
        &mut conns[2],
        "ZWINDOW SET {events}:* 10 MOVETO {other}:expired",
    );
    assert!(
        refused.starts_with("-ERR MOVETO destination must hash"),
        "{refused}"
    );
    assert_eq!(
        cmd(
            &mut conns[2],
            "ZWINDOW SET {events}:* 10 MOVETO {key}:expired"
        ),
        "+OK\r\n"
    );
    let slot = parse_reply(&conns[0].cmd(&[b"CLUSTER", b"KEYSLOT", b"{events}:1"])).int();
    let owner = BOUNDS
        .iter()
        .position(|&(lo, hi)| (lo..=hi).contains(&slot))
        .unwrap();
    if owner < 3 {
        wait_for("the MOVETO rule on the owner", || {
            has_rule(&nodes[owner], "{events}:*")
        });
        let c = &mut conns[owner];
        assert_eq!(cmd(c, "ZADD {events}:1 1 aged"), ":1\r\n");
        assert_eq!(cmd(c, "ZCARD {events}:1"), ":0\r\n");
        assert!(cmd(c, "LRANGE {events}:1:expired 0 -1").contains("aged"));
    }
    for node in &nodes {
        wait_for("the MOVETO rule everywhere", || {
            has_rule(node, "{events}:*")
        });
    }

    // The redis-server node received the module messages, ignored them,
    // and it and everybody else see a healthy cluster.
    let mut rc = patient(redis.conn());
    wait_state_ok(&mut rc);
    let info = cmd(&mut rc, "CLUSTER INFO");
    let received = info
        .lines()
        .find_map(|l| l.strip_prefix("cluster_stats_messages_module_received:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        received > 0,
        "no module message reached redis-server: {info}"
    );
    // (Waited for, not asserted at once: on a loaded machine a node may
    // be late with a PONG for a moment; what must not happen is that the
    // module messages leave a node failed or the cluster down.)
    for c in conns.iter_mut() {
        wait_for("every node seeing every node healthy", || {
            lists_connected(c, &ids)
        });
        wait_state_ok(c);
    }
    // Redis still serves its own slots.
    let key = key_in(&mut rc, "r:", BOUNDS[3].0, BOUNDS[3].1);
    assert_eq!(cmd(&mut rc, &format!("SET {key} v")), "+OK\r\n");
}

#[test]
fn a_node_restarted_from_a_stale_config_catches_up() {
    let _serial = serial();
    let mut nodes: Vec<Node> = (0..3).map(|_| Node::new()).collect();
    let mut conns: Vec<RawConn> = nodes.iter().map(Node::conn).collect();
    let ports: Vec<(u16, u16)> = nodes.iter().map(|n| (n.port, n.cport)).collect();
    let ids: Vec<String> = nodes.iter().map(Node::id).collect();
    form_cluster(
        &mut conns,
        &ports,
        &ids,
        &["0 5460", "5461 10922", "10923 16383"],
    );
    assert_eq!(cmd(&mut conns[0], "ZWINDOW SET old:* 5"), "+OK\r\n");
    wait_for("the rule in the last node's config", || {
        let conf = nodes[2].config();
        if conf.contains("zwindow old:* 5s s") {
            Ok(())
        } else {
            Err(conf)
        }
    });
    // The last node goes down; meanwhile the rule is deleted and another
    // one set.
    nodes[2].stop();
    drop(conns.pop());
    assert_eq!(cmd(&mut conns[0], "ZWINDOW DEL old:*"), ":1\r\n");
    assert_eq!(cmd(&mut conns[1], "ZWINDOW SET new:* 7 MS"), "+OK\r\n");
    // It comes back from its config file, which still has the old rule.
    assert!(nodes[2].config().contains("zwindow old:*"));
    nodes[2].start();
    wait_for("the restarted node caught up", || {
        let list = rules(&mut nodes[2].conn());
        if list.contains("new:*") && !list.contains("old:*") {
            Ok(())
        } else {
            Err(list)
        }
    });
    wait_for("its config file caught up", || {
        let conf = nodes[2].config();
        if conf.contains("zwindow new:* 7ms ms") && !conf.contains("old:*") {
            Ok(())
        } else {
            Err(conf)
        }
    });
    // And the others did not take the stale rule back.
    for node in &nodes[..2] {
        lacks_rule(node, "old:*").expect("the deletion holds");
        has_rule(node, "new:*").expect("the new rule holds");
    }
}

#[test]
fn a_zwindow_directive_with_a_cross_slot_moveto_stops_a_cluster_node() {
    let _serial = serial();
    let err = ZwindowServer::try_start(&[
        "--cluster-enabled",
        "yes",
        "--zwindow",
        "events:*=10:moveto={key}:expired",
    ])
    .err()
    .expect("refused at startup");
    assert!(
        err.contains("zwindow rule 'events:*': MOVETO destination must hash to the same slot"),
        "{err}"
    );
    // The same rule confined by a hash tag starts.
    let ok = ZwindowServer::start(&[
        "--cluster-enabled",
        "yes",
        "--zwindow",
        "{events}:*=10:moveto={key}:expired",
    ]);
    let list = rules(&mut patient(ok.conn()));
    assert!(list.contains("{events}:*"), "{list}");
}

#[test]
fn member_and_field_ttls_move_with_their_keys_through_migrate() {
    let _serial = serial();
    let nodes: Vec<Node> = (0..2).map(|_| Node::new()).collect();
    let mut conns: Vec<RawConn> = nodes.iter().map(Node::conn).collect();
    let ports: Vec<(u16, u16)> = nodes.iter().map(|n| (n.port, n.cport)).collect();
    let ids: Vec<String> = nodes.iter().map(Node::id).collect();
    form_cluster(&mut conns, &ports, &ids, &["0 16383"]);
    let slot = parse_reply(&conns[0].cmd(&[b"CLUSTER", b"KEYSLOT", b"{m}"])).int();
    let (a, b) = (&ids[0], &ids[1]);
    {
        let c = &mut conns[0];
        assert_eq!(cmd(c, "ZADD {m}z 1 long 2 short 3 none"), ":3\r\n");
        assert_eq!(cmd(c, "ZEXPIRE {m}z 1000 MEMBERS 1 long"), "*1\r\n:1\r\n");
        assert_eq!(cmd(c, "ZPEXPIRE {m}z 1500 MEMBERS 1 short"), "*1\r\n:1\r\n");
        assert_eq!(cmd(c, "HSET {m}h long 1 short 2 none 3"), ":3\r\n");
        assert_eq!(cmd(c, "HEXPIRE {m}h 1000 FIELDS 1 long"), "*1\r\n:1\r\n");
        assert_eq!(cmd(c, "HPEXPIRE {m}h 1500 FIELDS 1 short"), "*1\r\n:1\r\n");
    }
    // Move the slot as redis-cli --cluster reshard does.
    assert_eq!(
        cmd(
            &mut conns[1],
            &format!("CLUSTER SETSLOT {slot} IMPORTING {a}")
        ),
        "+OK\r\n"
    );
    assert_eq!(
        cmd(
            &mut conns[0],
            &format!("CLUSTER SETSLOT {slot} MIGRATING {b}")
        ),
        "+OK\r\n"
    );
    let port = nodes[1].port.to_string();
    let reply = conns[0].cmd(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"",
        b"0",
        b"5000",
        b"KEYS",
        b"{m}z",
        b"{m}h",
    ]);
    assert_eq!(text(&reply), "+OK\r\n");
    for c in conns.iter_mut() {
        assert_eq!(
            cmd(c, &format!("CLUSTER SETSLOT {slot} NODE {b}")),
            "+OK\r\n"
        );
    }
    let c = &mut conns[1];
    // Remaining TTLs on the target: the long ones about 1000 s, none for
    // the member and field that had none.
    let ttls = parse_reply(&c.cmd(&[b"ZTTL", b"{m}z", b"MEMBERS", b"2", b"long", b"none"]));
    let ttls: Vec<i64> = ttls.array().iter().map(Reply::int).collect();
    assert!((900..=1000).contains(&ttls[0]) && ttls[1] == -1, "{ttls:?}");
    let ttls = parse_reply(&c.cmd(&[b"HTTL", b"{m}h", b"FIELDS", b"2", b"long", b"none"]));
    let ttls: Vec<i64> = ttls.array().iter().map(Reply::int).collect();
    assert!((900..=1000).contains(&ttls[0]) && ttls[1] == -1, "{ttls:?}");
    // The short ones still expire there.
    wait_for("the short member and field expired on the target", || {
        let z = cmd(c, "ZRANGE {m}z 0 -1");
        let h = cmd(c, "HKEYS {m}h");
        if !z.contains("short") && !h.contains("short") && z.contains("long") {
            Ok(())
        } else {
            Err(format!("{z} {h}"))
        }
    });
    assert_eq!(cmd(c, "ZCARD {m}z"), ":2\r\n");
    assert_eq!(cmd(c, "HLEN {m}h"), ":2\r\n");
    // Nothing is left on the source.
    let mut src = nodes[0].conn();
    assert!(cmd(&mut src, "ZCARD {m}z").starts_with("-MOVED"));
}
