//! The cluster bus's links as Redis 8.0.2 accounts for them, zwindow
//! against redis-server 8.0.2 run the same way: CLUSTER LINKS' send
//! queues (`send_msg_queue_mem`: an idle link's is the queue's own 48
//! bytes; each message queued adds its block and list node until
//! written), INFO's `mem_cluster_links` (a broadcast message counted
//! once), `cluster-link-sendbuf-limit` freeing links from the cron
//! (`total_cluster_links_buffer_limit_exceeded`), and a primary that
//! loses a slot to a newer claim through gossip deleting its keys there
//! and propagating the deletions to its replica (8.0's `delKeysInSlot`),
//! a redis-server replica of a zwindow primary included; the human
//! node name and CLUSTER FORGET's forgotten-node extension travelling
//! between zwindow and redis-server 8.0.2 nodes.

mod common;

use std::time::Duration;

use common::cluster::*;
use common::{Reply, parse_reply};

/// For tests not about failure detection: a loaded machine must not
/// fail nodes over under them.
const CALM_TIMEOUT: u64 = 15000;
const WAIT: Duration = Duration::from_secs(20);

use Kind::{Redis8 as R8, Zwindow as Z};

/// One test at a time: each runs a cluster.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn field<'a>(entry: &'a Reply, name: &str) -> &'a Reply {
    let Reply::Array(items) = entry else {
        panic!("a CLUSTER LINKS entry: {entry:?}");
    };
    let at = items
        .chunks(2)
        .position(|kv| matches!(&kv[0], Reply::Bulk(k) if k == name.as_bytes()))
        .unwrap_or_else(|| panic!("no {name} in {entry:?}"));
    &items[at * 2 + 1]
}

fn int(r: &Reply) -> i64 {
    match r {
        Reply::Int(n) => *n,
        other => panic!("an integer: {other:?}"),
    }
}

fn bulk(r: &Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("a bulk string: {other:?}"),
    }
}

/// One link of CLUSTER LINKS.
#[derive(Debug, Clone)]
struct Link {
    to: bool,
    node: String,
    ctime: i64,
    events: String,
    allocated: i64,
    used: i64,
}

fn links_of(reply: &Reply) -> Vec<Link> {
    let Reply::Array(entries) = reply else {
        panic!("CLUSTER LINKS: {reply:?}");
    };
    let mut links: Vec<Link> = entries
        .iter()
        .map(|e| Link {
            to: bulk(field(e, "direction")) == "to",
            node: bulk(field(e, "node")),
            ctime: int(field(e, "create-time")),
            events: bulk(field(e, "events")),
            allocated: int(field(e, "send-buffer-allocated")),
            used: int(field(e, "send-buffer-used")),
        })
        .collect();
    links.sort_by(|a, b| (a.to, &a.node).cmp(&(b.to, &b.node)));
    links
}

fn info_field(text: &str, name: &str) -> i64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .trim()
        .parse()
        .expect("a number")
}

fn info_text(r: &Reply) -> String {
    match r {
        Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("INFO: {other:?}"),
    }
}

/// What a transaction of 10 PUBLISHes of 10000 bytes added to node 0's
/// links, as CLUSTER LINKS and INFO show it before and after within the
/// transaction: each link's send queue growth (outbound links first) and
/// `mem_cluster_links`'s.
fn publish_growth(cluster: &Cluster) -> (Vec<i64>, i64) {
    let mut c = cluster.nodes[0].conn();
    assert_eq!(c.cmd(&[b"MULTI"]), b"+OK\r\n");
    for args in [&[b"CLUSTER" as &[u8], b"LINKS"][..], &[b"INFO", b"memory"]] {
        assert_eq!(c.cmd(args), b"+QUEUED\r\n");
    }
    let message = vec![b'x'; 10000];
    for _ in 0..10 {
        assert_eq!(c.cmd(&[b"PUBLISH", b"channel", &message]), b"+QUEUED\r\n");
    }
    for args in [&[b"CLUSTER" as &[u8], b"LINKS"][..], &[b"INFO", b"memory"]] {
        assert_eq!(c.cmd(args), b"+QUEUED\r\n");
    }
    let Reply::Array(res) = parse_reply(&c.cmd(&[b"EXEC"])) else {
        panic!("EXEC");
    };
    let (before, after) = (links_of(&res[0]), links_of(&res[12]));
    assert_eq!(before.len(), after.len(), "{before:?} {after:?}");
    let growth = before
        .iter()
        .zip(&after)
        .map(|(b, a)| {
            assert_eq!((b.to, &b.node), (a.to, &a.node));
            assert_eq!(a.allocated, a.used, "{a:?}");
            a.used - b.used
        })
        .collect();
    let mem = |r: &Reply| info_field(&info_text(r), "mem_cluster_links");
    (growth, mem(&res[13]) - mem(&res[1]))
}

/// In a quiet moment (no gossip queued or written meanwhile, which
/// zwindow's bus may do while the transaction runs), the growth is
/// exactly what redis-server 8.0.2 shows.
#[test]
fn publishes_fill_the_send_queues_as_redis_8_counts_them() {
    let _serial = serial();
    let redis = Cluster::create(&[R8, R8, R8], 0, CALM_TIMEOUT);
    // 10 blocks on each of the 2 outbound links, none inbound (links
    // sort inbound first); the blocks counted once in the memory, the
    // list nodes per link. redis-server too has moments that are not
    // quiet on a loaded machine (a link reconnecting), so it is asked
    // until it shows one.
    let quiet = |(g, mem): &(Vec<i64>, i64)| {
        g.len() == 4
            && g[0] == 0
            && g[1] == 0
            && g[2] > 100_000
            && g[2] == g[3]
            && *mem == g[2] + 10 * 24
    };
    let mut oracle = Vec::new();
    let (want, want_mem) = loop {
        let got = publish_growth(&redis);
        if quiet(&got) {
            break got;
        }
        oracle.push(got);
        assert!(oracle.len() < 10, "redis-server 8.0.2: {oracle:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    drop(redis);
    let ours = Cluster::create(&[Z, Z, Z], 0, CALM_TIMEOUT);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let got = publish_growth(&ours);
        if got == (want.clone(), want_mem) {
            return;
        }
        seen.push(got);
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("redis-server 8.0.2: {want:?} {want_mem}; zwindow: {seen:?}");
}

/// An idle link's queue is the list alone; a limit of 1 byte frees every
/// link of node 0 from its cron, counted in CLUSTER INFO; with the limit
/// gone they come back, newer.
fn links_over_the_limit(kind: Kind) {
    let cluster = Cluster::create(&[kind, kind, kind], 0, CALM_TIMEOUT);
    let mut c = cluster.nodes[0].conn();
    let links = || {
        links_of(&parse_reply(
            &cluster.nodes[0].conn().cmd(&[b"CLUSTER", b"LINKS"]),
        ))
    };
    // Every link up (an inbound one may come a moment after the outbound
    // ones on a loaded machine), one of them idle.
    wait_until("four links, one idle", WAIT, || {
        let l = links();
        match l.iter().find(|l| l.events == "r") {
            Some(idle) if l.len() == 4 && idle.allocated == 48 && idle.used == 48 => Ok(()),
            _ => Err(format!("{l:?}")),
        }
    });
    let exceeded = |c: &mut common::RawConn| {
        info_field(
            &text(&c.cmd(&[b"CLUSTER", b"INFO"])),
            "total_cluster_links_buffer_limit_exceeded",
        )
    };
    assert_eq!(exceeded(&mut c), 0);
    let old = links();
    assert_eq!(old.len(), 4, "{old:?}");
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"cluster-link-sendbuf-limit", b"1"]),
        b"+OK\r\n"
    );
    wait_until("links freed", WAIT, || {
        let n = exceeded(&mut c);
        if n >= 4 { Ok(()) } else { Err(format!("{n}")) }
    });
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"cluster-link-sendbuf-limit", b"0"]),
        b"+OK\r\n"
    );
    wait_until("links back", WAIT, || {
        let new = links();
        let newer = new.len() == 4
            && new
                .iter()
                .zip(&old)
                .all(|(n, o)| n.node == o.node && n.to == o.to && n.ctime > o.ctime);
        if newer {
            Ok(())
        } else {
            Err(format!("{new:?}"))
        }
    });
}

#[test]
fn sendbuf_limit_frees_links_redis_8() {
    let _serial = serial();
    links_over_the_limit(R8);
}

#[test]
fn sendbuf_limit_frees_links_zwindow() {
    let _serial = serial();
    links_over_the_limit(Z);
}

/// A key on primary 0 reaches its replica; primary 1 bumps its epoch
/// and takes the key's slot (CLUSTER SETSLOT … NODE itself): node 0
/// learns it from gossip, deletes the key and sends the DEL to its
/// replica, which drops it too.
fn slot_lost_through_gossip(primary: Kind, replica: Kind) {
    let cluster = Cluster::create(
        &[primary, primary, primary, replica, replica, replica],
        1,
        CALM_TIMEOUT,
    );
    let key: &[u8] = b"FOO";
    let slot = key_slot(key).to_string();
    let slot = slot.as_bytes();
    // redis-cli gives node 0 slots 0-5460; FOO is in 3028.
    let mut p0 = cluster.nodes[0].conn();
    assert_eq!(p0.cmd(&[b"SET", key, b"TEST"]), b"+OK\r\n");
    let mut r0 = cluster.nodes[cluster.replica_of(0)].conn();
    assert_eq!(r0.cmd(&[b"READONLY"]), b"+OK\r\n");
    let count = |c: &mut common::RawConn| c.cmd(&[b"CLUSTER", b"COUNTKEYSINSLOT", slot]);
    wait_until("the key on the replica", WAIT, || {
        let r = r0.cmd(&[b"EXISTS", key]);
        if r == b":1\r\n" {
            Ok(())
        } else {
            Err(text(&r))
        }
    });
    assert_eq!(count(&mut r0), b":1\r\n");
    let mut p1 = cluster.nodes[1].conn();
    let id1 = cluster.id(1);
    assert_eq!(
        text(&p1.cmd(&[b"CLUSTER", b"BUMPEPOCH"])).split(' ').next(),
        Some("BUMPED")
    );
    assert_eq!(
        p1.cmd(&[b"CLUSTER", b"SETSLOT", slot, b"NODE", id1.as_bytes()]),
        b"+OK\r\n"
    );
    wait_until("the primary drops the slot's keys", WAIT, || {
        let r = count(&mut p0);
        if r == b":0\r\n" {
            Ok(())
        } else {
            Err(text(&r))
        }
    });
    wait_until("its replica drops them too", WAIT, || {
        let r = count(&mut r0);
        if r == b":0\r\n" {
            Ok(())
        } else {
            Err(text(&r))
        }
    });
}

#[test]
fn a_zwindow_primary_losing_a_slot_deletes_its_keys_on_its_replica() {
    let _serial = serial();
    slot_lost_through_gossip(Z, Z);
}

#[test]
fn a_zwindow_primary_losing_a_slot_deletes_its_keys_on_a_redis_8_replica() {
    let _serial = serial();
    slot_lost_through_gossip(Z, R8);
}

#[test]
fn a_redis_8_primary_losing_a_slot_deletes_its_keys_on_its_replica() {
    let _serial = serial();
    slot_lost_through_gossip(R8, R8);
}

/// nodes.conf of node `i`, read from its working directory.
fn nodes_conf(cluster: &Cluster, i: usize) -> String {
    std::fs::read_to_string(cluster.nodes[i].dir().join("nodes.conf")).unwrap_or_default()
}

/// Whether node `i`'s nodes.conf gives node `id` the human node name
/// `human` (Redis's `nodename=` auxiliary field).
fn conf_names(cluster: &Cluster, i: usize, id: &str, human: &str) -> Result<(), String> {
    let conf = nodes_conf(cluster, i);
    let line = conf.lines().find(|l| l.starts_with(id)).unwrap_or_default();
    if line.contains(&format!(",nodename={human},"))
        || line.contains(&format!(",nodename={human} "))
    {
        Ok(())
    } else {
        Err(conf)
    }
}

/// `cluster-announce-human-nodename` travels in the ping extension
/// both ways between zwindow and redis-server 8.0.2 nodes, each saving
/// the other's in nodes.conf; both refuse the same bad value.
#[test]
fn human_nodenames_travel_between_zwindow_and_redis_8() {
    let _serial = serial();
    let cluster = Cluster::create(&[Z, R8, Z], 0, CALM_TIMEOUT);
    let get = |i: usize| {
        cluster.nodes[i]
            .conn()
            .cmd(&[b"CONFIG", b"GET", b"cluster-announce-human-nodename"])
    };
    assert_eq!(get(0), get(1), "the default");
    for (i, name) in [(0, "zw-0"), (1, "r8-1")] {
        let set = |v: &str| {
            text(&cluster.nodes[i].conn().cmd(&[
                b"CONFIG",
                b"SET",
                b"cluster-announce-human-nodename",
                v.as_bytes(),
            ]))
        };
        // Both kinds refuse it alike (redis-server's text is the model).
        assert_eq!(
            set("bad!name"),
            "-ERR CONFIG SET failed (possibly related to argument 'cluster-announce-human-nodename') - Announced human node name contained invalid character\r\n",
            "node {i}"
        );
        assert_eq!(set(name), "OK", "node {i}");
    }
    let (id0, id1) = (cluster.id(0), cluster.id(1));
    wait_until("the names in every nodes.conf", WAIT, || {
        conf_names(&cluster, 1, &id0, "zw-0")?;
        conf_names(&cluster, 2, &id0, "zw-0")?;
        conf_names(&cluster, 0, &id1, "r8-1")?;
        conf_names(&cluster, 2, &id1, "r8-1")?;
        conf_names(&cluster, 0, &id0, "zw-0")
    });
}

/// CLUSTER FORGET spreads in the forgotten-node extension, between
/// zwindow and redis-server 8.0.2 either way: a reset node forgotten by
/// one node is forgotten by all.
#[test]
fn cluster_forget_spreads_between_zwindow_and_redis_8() {
    let _serial = serial();
    let cluster = Cluster::create(&[Z, R8, Z, R8], 0, CALM_TIMEOUT);
    let ids: Vec<String> = (0..4).map(|i| cluster.id(i)).collect();
    let forgotten_by = |who: &[usize], id: &str| -> Result<(), String> {
        for &i in who {
            let nodes = text(&cluster.nodes[i].conn().cmd(&[b"CLUSTER", b"NODES"]));
            if nodes.contains(id) {
                return Err(format!("node {i}: {nodes}"));
            }
        }
        Ok(())
    };
    // A redis-server node reset, forgotten by zwindow.
    let reset = cluster.nodes[3]
        .conn()
        .cmd(&[b"CLUSTER", b"RESET", b"HARD"]);
    assert_eq!(reset, b"+OK\r\n");
    let forget = cluster.nodes[0]
        .conn()
        .cmd(&[b"CLUSTER", b"FORGET", ids[3].as_bytes()]);
    assert_eq!(forget, b"+OK\r\n");
    wait_until("node 3 forgotten everywhere", WAIT, || {
        forgotten_by(&[0, 1, 2], &ids[3])
    });
    // A zwindow node reset, forgotten by redis-server.
    let reset = cluster.nodes[2]
        .conn()
        .cmd(&[b"CLUSTER", b"RESET", b"HARD"]);
    assert_eq!(reset, b"+OK\r\n");
    let forget = cluster.nodes[1]
        .conn()
        .cmd(&[b"CLUSTER", b"FORGET", ids[2].as_bytes()]);
    assert_eq!(forget, b"+OK\r\n");
    wait_until("node 2 forgotten everywhere", WAIT, || {
        forgotten_by(&[0, 1], &ids[2])
    });
}
