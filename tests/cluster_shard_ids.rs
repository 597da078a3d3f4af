//! Shard ids (Redis 7.2+) across mixed clusters: zwindow and redis-server
//! 8.0.2 nodes, each kind a replica of the other's primary, agree on every
//! node's shard id (a replica's is its primary's) — in CLUSTER MYSHARDID,
//! in the `shard-id=` field each node saves in its nodes.conf, and in the
//! grouping CLUSTER SHARDS shows on every node; zwindow keeps its shard id
//! across a restart; and redis-server 7.0.15 nodes, which skip the shard id
//! extension, keep working with zwindow nodes that send it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::cluster::*;
use common::*;

use Kind::{Redis as R7, Redis8 as R8, Zwindow as Z};

/// No failover wanted: a loaded machine must not fail nodes over.
const CALM_TIMEOUT: u64 = 15000;

/// One test at a time (each runs several nodes).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn cmd_text(node: &Node, args: &[&[u8]]) -> String {
    let mut c = node.conn();
    c.set_timeout(Duration::from_secs(30));
    text(&c.cmd(args))
}

fn myid(node: &Node) -> String {
    bulk_text(&node.conn().cmd(&[b"CLUSTER", b"MYID"]))
}

fn myshardid(node: &Node) -> String {
    bulk_text(&node.conn().cmd(&[b"CLUSTER", b"MYSHARDID"]))
}

/// The shard id each node line of `node`'s nodes.conf holds, by node id
/// (saved first with CLUSTER SAVECONFIG).
fn saved_shard_ids(node: &Node) -> BTreeMap<String, String> {
    assert_eq!(cmd_text(node, &[b"CLUSTER", b"SAVECONFIG"]), "OK");
    let conf = std::fs::read_to_string(node.dir().join("nodes.conf")).expect("nodes.conf");
    conf.lines()
        .filter(|l| !l.starts_with("vars"))
        .filter_map(|l| {
            let id = l.split(' ').next()?;
            let shard = l.split("shard-id=").nth(1)?.get(..40)?;
            Some((id.to_string(), shard.to_string()))
        })
        .collect()
}

/// CLUSTER SHARDS as a set of shards, each its node ids and its slots.
fn shards_view(node: &Node) -> BTreeSet<(BTreeSet<String>, Vec<i64>)> {
    let reply = parse_reply(&node.conn().cmd(&[b"CLUSTER", b"SHARDS"]));
    let Reply::Array(shards) = reply else {
        panic!("CLUSTER SHARDS: {reply:?}");
    };
    shards
        .into_iter()
        .map(|shard| {
            let Reply::Array(fields) = shard else {
                panic!("a shard: {shard:?}");
            };
            let mut slots = Vec::new();
            let mut ids = BTreeSet::new();
            for pair in fields.chunks(2) {
                match (&pair[0], &pair[1]) {
                    (Reply::Bulk(k), Reply::Array(v)) if k == b"slots" => {
                        slots = v
                            .iter()
                            .map(|s| match s {
                                Reply::Int(i) => *i,
                                other => panic!("a slot: {other:?}"),
                            })
                            .collect();
                    }
                    (Reply::Bulk(k), Reply::Array(nodes)) if k == b"nodes" => {
                        for n in nodes {
                            let Reply::Array(f) = n else {
                                panic!("a node: {n:?}")
                            };
                            let at = f
                                .iter()
                                .position(|x| matches!(x, Reply::Bulk(b) if b == b"id"))
                                .expect("an id field");
                            let Reply::Bulk(id) = &f[at + 1] else {
                                panic!("an id: {f:?}")
                            };
                            ids.insert(String::from_utf8_lossy(id).into_owned());
                        }
                    }
                    other => panic!("a shard field: {other:?}"),
                }
            }
            (ids, slots)
        })
        .collect()
}

fn config_get(node: &Node, name: &str) -> String {
    match parse_reply(&node.conn().cmd(&[b"CONFIG", b"GET", name.as_bytes()])) {
        Reply::Array(v) if v.len() == 2 => match &v[1] {
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("CONFIG GET {name}: {other:?}"),
        },
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

/// Starts a node of `kind`, has it meet `cluster`'s node 0 and replicate
/// `primary`'s id; returns it once it lists that primary as its own.
fn add_replica(cluster: &Cluster, kind: Kind, primary: &str) -> Node {
    let node = Node::start(kind, CALM_TIMEOUT);
    let port = cluster.nodes[0].port().to_string();
    let cport = config_get(&cluster.nodes[0], "cluster-port");
    assert_eq!(
        cmd_text(
            &node,
            &[
                b"CLUSTER",
                b"MEET",
                b"127.0.0.1",
                port.as_bytes(),
                cport.as_bytes()
            ]
        ),
        "OK"
    );
    wait_until(
        "the new node learns the primary",
        Duration::from_secs(30),
        || {
            let members = parse_nodes(&cmd_text(&node, &[b"CLUSTER", b"NODES"]));
            if members.iter().any(|m| m.id == primary) {
                Ok(())
            } else {
                Err(format!("{members:?}"))
            }
        },
    );
    assert_eq!(
        cmd_text(&node, &[b"CLUSTER", b"REPLICATE", primary.as_bytes()]),
        "OK"
    );
    node
}

/// Every node's saved view gives each listed node its own MYSHARDID, a
/// replica its primary's; the primaries' ids differ; CLUSTER SHARDS is the
/// same on every node and groups each primary with its replicas.
fn check_agreement(nodes: &[&Node]) -> Result<(), String> {
    let ids: Vec<String> = nodes.iter().map(|n| myid(n)).collect();
    let shard_of: BTreeMap<String, String> = nodes
        .iter()
        .zip(&ids)
        .map(|(n, id)| (id.clone(), myshardid(n)))
        .collect();
    let members = parse_nodes(&cmd_text(nodes[0], &[b"CLUSTER", b"NODES"]));
    if members.len() != nodes.len() {
        return Err(format!("not all known yet: {members:?}"));
    }
    let mut by_shard: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for m in &members {
        if let Some(p) = &m.replica_of
            && shard_of[&m.id] != shard_of[p]
        {
            return Err(format!("replica {} not in its primary's shard", m.id));
        }
        by_shard
            .entry(shard_of[&m.id].as_str())
            .or_default()
            .insert(m.id.clone());
    }
    let primaries = members.iter().filter(|m| m.primary).count();
    if by_shard.len() != primaries {
        return Err(format!("{primaries} primaries in shards {by_shard:?}"));
    }
    for (n, id) in nodes.iter().zip(&ids) {
        let saved = saved_shard_ids(n);
        if saved != shard_of {
            return Err(format!(
                "node {id} saved {saved:?}, the nodes say {shard_of:?}"
            ));
        }
    }
    let first = shards_view(nodes[0]);
    let grouping: BTreeSet<BTreeSet<String>> = first.iter().map(|(ids, _)| ids.clone()).collect();
    let want: BTreeSet<BTreeSet<String>> = by_shard.into_values().collect();
    if grouping != want {
        return Err(format!("CLUSTER SHARDS groups {grouping:?}, want {want:?}"));
    }
    for n in &nodes[1..] {
        let view = shards_view(n);
        if view != first {
            return Err(format!("CLUSTER SHARDS differ: {view:?} vs {first:?}"));
        }
    }
    Ok(())
}

/// zwindow and Redis 8.0.2 primaries, a Redis 8.0.2 replica of a zwindow
/// primary and a zwindow replica of a Redis 8.0.2 one: every node agrees on
/// every node's shard id.
#[test]
fn zwindow_and_redis_8_agree_on_shard_ids() {
    let _serial = serial();
    let cluster = Cluster::create(&[Z, R8, Z], 0, CALM_TIMEOUT);
    let z_primary = myid(&cluster.nodes[0]);
    let r_primary = myid(&cluster.nodes[1]);
    let r_replica = add_replica(&cluster, R8, &z_primary);
    let z_replica = add_replica(&cluster, Z, &r_primary);
    let all: Vec<&Node> = cluster
        .nodes
        .iter()
        .chain([&r_replica, &z_replica])
        .collect();
    wait_until(
        "every node agrees on the shard ids",
        Duration::from_secs(30),
        || check_agreement(&all),
    );
    assert_eq!(myshardid(&r_replica), myshardid(&cluster.nodes[0]));
    assert_eq!(myshardid(&z_replica), myshardid(&cluster.nodes[1]));
    // MYSHARDID's arity error as Redis 8.0's, on both kinds.
    for n in [&cluster.nodes[0], &cluster.nodes[1]] {
        assert_eq!(
            n.conn().cmd(&[b"CLUSTER", b"MYSHARDID", b"x"]),
            b"-ERR wrong number of arguments for 'cluster|myshardid' command\r\n"
        );
    }
}

/// A zwindow node's shard id survives a restart (nodes.conf's
/// `shard-id=`), a replica's too (its primary's), and CLUSTER RESET HARD
/// gives a new one, as Redis 8.0's.
#[test]
fn a_restarted_zwindow_node_keeps_its_shard_id() {
    let _serial = serial();
    let dirs = [PrivateDir::new("shard-a"), PrivateDir::new("shard-b")];
    let start = |d: &PrivateDir, port: u16| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "15000",
            ])
            .current_dir(&d.0);
        ZwindowServer::start_command(cmd)
    };
    let ports = [free_port(), free_port()];
    let mut a = start(&dirs[0], ports[0]);
    let mut b = start(&dirs[1], ports[1]);
    let id = |s: &ZwindowServer, sub: &[u8]| bulk_text(&s.conn().cmd(&[b"CLUSTER", sub]));
    let (a_id, a_shard, b_shard) = (id(&a, b"MYID"), id(&a, b"MYSHARDID"), id(&b, b"MYSHARDID"));
    assert_ne!(a_shard, b_shard);
    assert_eq!(a_shard.len(), 40);
    let p = ports[0].to_string();
    b.conn()
        .cmd(&[b"CLUSTER", b"MEET", b"127.0.0.1", p.as_bytes()]);
    wait_until("b replicates a", Duration::from_secs(30), || {
        let r = text(&b.conn().cmd(&[b"CLUSTER", b"REPLICATE", a_id.as_bytes()]));
        if r == "OK" { Ok(()) } else { Err(r) }
    });
    // The id b knew a by before a's first PING reached it was one b
    // made up (as Redis's `createClusterNode`): a's own replaces it, for
    // a and its replicas.
    wait_until("b takes a's shard id", Duration::from_secs(30), || {
        let got = id(&b, b"MYSHARDID");
        if got == a_shard { Ok(()) } else { Err(got) }
    });
    for s in [&a, &b] {
        assert_eq!(text(&s.conn().cmd(&[b"CLUSTER", b"SAVECONFIG"])), "OK");
    }
    a.kill();
    b.kill();
    drop((a, b));
    let a = start(&dirs[0], ports[0]);
    let b = start(&dirs[1], ports[1]);
    assert_eq!(id(&a, b"MYSHARDID"), a_shard);
    assert_eq!(id(&b, b"MYSHARDID"), a_shard);
    // RESET HARD: a new name and a new shard.
    assert_eq!(text(&a.conn().cmd(&[b"CLUSTER", b"RESET", b"HARD"])), "OK");
    let fresh = id(&a, b"MYSHARDID");
    assert_ne!(fresh, a_shard);
    assert_eq!(fresh.len(), 40);
}

/// Redis 7.0.15 nodes skip the shard id extension zwindow sends: a mixed
/// cluster still forms and checks clean, and zwindow puts a 7.0 replica in
/// its zwindow primary's shard and itself, as a replica, in the shard it
/// gave its 7.0 primary.
#[test]
fn redis_7_0_nodes_keep_working_with_zwindow_s_shard_ids() {
    let _serial = serial();
    let cluster = Cluster::create(&[Z, R7, Z], 0, CALM_TIMEOUT);
    let z_primary = myid(&cluster.nodes[0]);
    let r_primary = myid(&cluster.nodes[1]);
    let r_replica = add_replica(&cluster, R7, &z_primary);
    let z_replica = add_replica(&cluster, Z, &r_primary);
    let r_replica_id = myid(&r_replica);
    wait_until("the cluster checks clean", Duration::from_secs(30), || {
        let (clean, shown) = cluster.check(0);
        let members = parse_nodes(&cmd_text(&r_replica, &[b"CLUSTER", b"NODES"]));
        if clean && members.len() == 5 {
            Ok(())
        } else {
            Err(format!("{shown}\n{members:?}"))
        }
    });
    wait_until(
        "zwindow's view of the shards",
        Duration::from_secs(30),
        || {
            let z_saved = saved_shard_ids(&cluster.nodes[0]);
            let mine = myshardid(&cluster.nodes[0]);
            if z_saved.get(&r_replica_id) != Some(&mine) {
                return Err(format!("7.0 replica not in {mine}: {z_saved:?}"));
            }
            let replica_saved = saved_shard_ids(&z_replica);
            let theirs = replica_saved.get(&r_primary).cloned().unwrap_or_default();
            if myshardid(&z_replica) != theirs {
                return Err(format!(
                    "zwindow replica not in {theirs}: {replica_saved:?}"
                ));
            }
            Ok(())
        },
    );
    // The 7.0 nodes serve: a key in each primary's slots.
    let mut client = ClusterClient::new(&cluster.live_ports());
    let limit = Duration::from_secs(30);
    for i in 0..20 {
        let k = format!("k{i}");
        let (_, set) = client.call(&[b"SET", k.as_bytes(), b"v"], limit).unwrap();
        assert_eq!(text(&set), "OK");
        let (_, got) = client.call(&[b"GET", k.as_bytes()], limit).unwrap();
        assert_eq!(text(&got), "v");
    }
}
