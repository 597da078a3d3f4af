//! The bus's protocol logic (`zwindow::cluster::gossip`) against a real
//! redis-server 7.0 in cluster mode. A blocking harness here does the I/O
//! the state machine asks for (accepting and opening bus connections,
//! writing its messages, running its cron every 100 ms) and feeds it what
//! redis-server sends: redis-server MEETs us, both sides converge, we learn
//! the slots redis-server takes and it learns ours, the config epoch
//! collision is resolved, and when we go silent redis-server suspects us
//! (`fail?`).

mod common;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::cluster::{bulk_text, nodes_line};
use common::*;
use zwindow::cluster::gossip::{Action, BusConfig, LinkId};
use zwindow::cluster::state::ClusterState;
use zwindow::cluster::wire::{self, NodeName};

const NODE_TIMEOUT: i64 = 2000;
const WAIT: Duration = Duration::from_secs(15);
const OUR_ID: &[u8; 40] = b"5a5a000000000000000000000000000000000042";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One bus connection and the bytes read from it so far.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

/// Our node: the state machine, its listener and connections.
struct Harness {
    state: ClusterState,
    listener: TcpListener,
    conns: HashMap<LinkId, Conn>,
    last_cron: Instant,
}

impl Harness {
    fn new() -> Harness {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let config = BusConfig {
            node_timeout: NODE_TIMEOUT,
            port: free_port(),
            cport: listener.local_addr().unwrap().port(),
            ..BusConfig::default()
        };
        Harness {
            state: ClusterState::with_myself(NodeName(*OUR_ID), config, now_ms()),
            listener,
            conns: HashMap::new(),
            last_cron: Instant::now(),
        }
    }

    fn apply(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::Connect {
                    link, ip, cport, ..
                } => {
                    let addr: Option<SocketAddr> = std::str::from_utf8(&ip)
                        .ok()
                        .and_then(|ip| format!("{ip}:{cport}").parse().ok());
                    let stream = addr.and_then(|a| {
                        TcpStream::connect_timeout(&a, Duration::from_millis(500)).ok()
                    });
                    match stream {
                        Some(stream) => {
                            stream.set_nodelay(true).unwrap();
                            stream
                                .set_read_timeout(Some(Duration::from_millis(1)))
                                .unwrap();
                            self.conns.insert(
                                link,
                                Conn {
                                    stream,
                                    buf: Vec::new(),
                                },
                            );
                            let more = self.state.on_link_connected(link, now_ms());
                            self.apply(more);
                        }
                        None => self.state.on_link_closed(link, now_ms()),
                    }
                }
                Action::Send { link, msg } => {
                    let bytes = wire::encode(&msg).unwrap();
                    let failed = match self.conns.get_mut(&link) {
                        Some(c) => c.stream.write_all(&bytes).is_err(),
                        None => false,
                    };
                    if failed {
                        self.conns.remove(&link);
                        self.state.on_link_closed(link, now_ms());
                    }
                }
                Action::Close { link } => {
                    self.conns.remove(&link);
                }
                _ => {}
            }
        }
    }

    /// One round: accept, read and process, cron when due.
    fn step(&mut self) {
        while let Ok((stream, peer)) = self.listener.accept() {
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_millis(1)))
                .unwrap();
            stream.set_nodelay(true).unwrap();
            let local = stream.local_addr().unwrap().ip().to_string();
            let link = self.state.accept_link(
                peer.ip().to_string().as_bytes(),
                local.as_bytes(),
                now_ms(),
            );
            self.conns.insert(
                link,
                Conn {
                    stream,
                    buf: Vec::new(),
                },
            );
        }
        let links: Vec<LinkId> = self.conns.keys().copied().collect();
        for link in links {
            let mut chunk = [0u8; 16 * 1024];
            let mut closed = false;
            let mut msgs = Vec::new();
            if let Some(c) = self.conns.get_mut(&link) {
                match c.stream.read(&mut chunk) {
                    Ok(0) => closed = true,
                    Ok(n) => c.buf.extend_from_slice(&chunk[..n]),
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                    Err(_) => closed = true,
                }
                loop {
                    match wire::decode(&c.buf) {
                        Ok(Some((msg, len))) => {
                            c.buf.drain(..len);
                            msgs.push(msg);
                        }
                        Ok(None) => break,
                        Err(e) => panic!("undecodable bytes from redis-server: {e}"),
                    }
                }
            }
            for msg in msgs {
                let actions = self.state.on_message(link, &msg, now_ms());
                self.apply(actions);
            }
            if closed {
                self.conns.remove(&link);
                self.state.on_link_closed(link, now_ms());
            }
        }
        if self.last_cron.elapsed() >= Duration::from_millis(100) {
            self.last_cron = Instant::now();
            let actions = self.state.cron(now_ms());
            self.apply(actions);
        }
    }

    /// Runs the node until `check` says yes (checked every 50 ms).
    fn run_until(&mut self, what: &str, mut check: impl FnMut(&Harness) -> Result<(), String>) {
        let deadline = Instant::now() + WAIT;
        let mut last_check = Instant::now();
        loop {
            self.step();
            if last_check.elapsed() >= Duration::from_millis(50) {
                last_check = Instant::now();
                match check(self) {
                    Ok(()) => return,
                    Err(e) if Instant::now() > deadline => {
                        panic!("{what} not within {WAIT:?}: {e}")
                    }
                    Err(_) => {}
                }
            }
        }
    }
}

#[test]
fn redis_server_meets_our_state_machine_and_suspects_it_when_silent() {
    let (server, server_cport) =
        redis_cluster_node(NODE_TIMEOUT as u64, &["--logfile", "redis.log"]);
    let server_id = {
        let id = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"MYID"]));
        NodeName::from_slice(id.as_bytes()).unwrap()
    };
    let mut node = Harness::new();
    let our_id = NodeName(*OUR_ID);
    let (port, cport) = (node.state.bus.config.port, node.state.bus.config.cport);
    let reply = server.conn().cmd(&[
        b"CLUSTER",
        b"MEET",
        b"127.0.0.1",
        port.to_string().as_bytes(),
        cport.to_string().as_bytes(),
    ]);
    assert_eq!(reply, b"+OK\r\n");

    // Both sides converge: redis-server lists us as a connected master at
    // our address, and we know it by its name, out of handshake.
    let want_addr = format!("127.0.0.1:{port}@{cport}");
    node.run_until("redis-server listing our node", |h| {
        let line = nodes_line(&server, &our_id).ok_or("not listed")?;
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 8 || f[1] != want_addr || f[2] != "master" || f[7] != "connected" {
            return Err(line);
        }
        let n = h.state.node(&server_id).ok_or_else(|| {
            format!(
                "we do not know it: {:?}",
                h.state.nodes().collect::<Vec<_>>()
            )
        })?;
        if !n.is_primary() || n.flags & wire::NODE_HANDSHAKE != 0 {
            return Err(format!("our view of it: {n:?}"));
        }
        if n.cport != i32::from(server_cport) || n.port != i32::from(server.port()) {
            return Err(format!("its address as we see it: {n:?}"));
        }
        Ok(())
    });
    assert_eq!(node.state.nodes().count(), 2, "no handshake node left over");
    // Our own IP, learned from the MEET's connection.
    assert_eq!(node.state.node(&our_id).unwrap().ip, b"127.0.0.1");

    // redis-server takes half the slots, we take the other half: each
    // side learns the other's from its pings.
    let reply = server
        .conn()
        .cmd(&[b"CLUSTER", b"ADDSLOTSRANGE", b"0", b"8191"]);
    assert_eq!(reply, b"+OK\r\n");
    for slot in 8192..16384 {
        assert!(node.state.add_slot(&our_id, slot));
    }
    node.run_until("our state listing redis-server's slots", |h| {
        let n = h.state.node(&server_id).unwrap();
        if n.slots.count() != 8192 || !n.slots.contains(0) || !n.slots.contains(8191) {
            return Err(format!("{:?}", n.slots));
        }
        if h.state.slot_owner(0) != Some(&server_id) || h.state.slot_owner(16383) != Some(&our_id) {
            return Err("slot table".into());
        }
        Ok(())
    });
    node.run_until("redis-server listing our slots", |_| {
        let line = nodes_line(&server, &our_id).ok_or("not listed")?;
        if line.ends_with(" 8192-16383") {
            Ok(())
        } else {
            Err(line)
        }
    });
    // Both started at config epoch 0: the collision is resolved, the
    // smaller name moving to a new epoch, and both sides agree.
    node.run_until("distinct config epochs, agreed on both sides", |h| {
        let ours = h.state.node(&our_id).unwrap().config_epoch;
        let theirs = h.state.node(&server_id).unwrap().config_epoch;
        let epoch_in = |id: &NodeName| -> Option<u64> {
            nodes_line(&server, id)?.split(' ').nth(6)?.parse().ok()
        };
        let (r_ours, r_theirs) = (epoch_in(&our_id), epoch_in(&server_id));
        if ours == theirs || r_ours != Some(ours) || r_theirs != Some(theirs) {
            return Err(format!(
                "ours {ours} theirs {theirs}; redis-server: ours {r_ours:?} theirs {r_theirs:?}"
            ));
        }
        let mover = if our_id.as_bytes() < server_id.as_bytes() {
            ours
        } else {
            theirs
        };
        if mover == 0 {
            return Err("the smaller name did not move".into());
        }
        Ok(())
    });
    node.run_until("both sides calling the cluster ok", |h| {
        let info = String::from_utf8_lossy(&server.conn().cmd(&[b"CLUSTER", b"INFO"])).into_owned();
        if h.state.is_ok() && info.contains("cluster_state:ok") {
            Ok(())
        } else {
            Err(format!("ours ok: {}; {info}", h.state.is_ok()))
        }
    });

    // We go silent (no reads, no writes, no cron): redis-server suspects us
    // after its node timeout.
    let silent = Instant::now();
    let deadline = silent + WAIT;
    loop {
        let line = nodes_line(&server, &our_id).expect("still listed");
        let flags = line.split(' ').nth(2).unwrap_or("").to_owned();
        if flags.split(',').any(|f| f == "fail?") {
            assert!(
                silent.elapsed() >= Duration::from_millis(NODE_TIMEOUT as u64),
                "suspected too early: {line}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "never suspected: {line}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server_id(server: &RedisServer) -> NodeName {
    let id = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"MYID"]));
    NodeName::from_slice(id.as_bytes()).unwrap()
}

fn cluster_meet(from: &RedisServer, port: u16, cport: u16) {
    let reply = from.conn().cmd(&[
        b"CLUSTER",
        b"MEET",
        b"127.0.0.1",
        port.to_string().as_bytes(),
        cport.to_string().as_bytes(),
    ]);
    assert_eq!(reply, b"+OK\r\n", "CLUSTER MEET");
}

/// `CLUSTER ADDSLOTSRANGE first last` on `server`.
fn add_slots_range(server: &RedisServer, (first, last): (&str, &str)) {
    let reply = server.conn().cmd(&[
        b"CLUSTER",
        b"ADDSLOTSRANGE",
        first.as_bytes(),
        last.as_bytes(),
    ]);
    assert_eq!(reply, b"+OK\r\n", "CLUSTER ADDSLOTSRANGE {first} {last}");
}

/// Three redis-server primaries and our node as a replica of the first:
/// when that primary dies, the other two mark it failed, vote for us, and
/// we take its slots at a new epoch, which they accept.
/// Three redis-server primaries (a third of the slots each) and our node
/// as a replica of the first, all converged.
fn three_primaries_and_our_replica() -> (Vec<(RedisServer, u16)>, Vec<NodeName>, Harness) {
    let servers: Vec<(RedisServer, u16)> = (0..3)
        .map(|_| redis_cluster_node(NODE_TIMEOUT as u64, &["--logfile", "redis.log"]))
        .collect();
    let ids: Vec<NodeName> = servers.iter().map(|(s, _)| server_id(s)).collect();
    let mut node = Harness::new();
    let our_id = NodeName(*OUR_ID);
    let (port, cport) = (node.state.bus.config.port, node.state.bus.config.cport);
    let a = &servers[0].0;
    for (s, c) in &servers[1..] {
        cluster_meet(a, s.port(), *c);
    }
    cluster_meet(a, port, cport);
    for ((s, _), range) in
        servers
            .iter()
            .zip([("0", "5460"), ("5461", "10922"), ("10923", "16383")])
    {
        add_slots_range(s, range);
    }
    node.run_until(
        "our state knowing the three primaries and their slots",
        |h| {
            for (id, slot) in ids.iter().zip([0u16, 5461, 10923]) {
                let n = h.state.node(id).ok_or("unknown primary")?;
                if n.flags & wire::NODE_HANDSHAKE != 0 || h.state.slot_owner(slot) != Some(id) {
                    return Err(format!("{n:?}"));
                }
            }
            if h.state.nodes().count() != 4 || !h.state.is_ok() {
                return Err(format!(
                    "{} nodes, ok {}",
                    h.state.nodes().count(),
                    h.state.is_ok()
                ));
            }
            Ok(())
        },
    );

    // We replicate the first primary (the caller would start PSYNC).
    let actions = node.state.replicate(&ids[0], now_ms());
    node.apply(actions);
    node.run_until(
        "every redis-server listing us as the first primary's replica",
        |_| {
            for (s, _) in &servers {
                let line = nodes_line(s, &our_id).ok_or("not listed")?;
                let f: Vec<&str> = line.split(' ').collect();
                if f.get(2) != Some(&"slave")
                    || f.get(3).map(|m| m.as_bytes()) != Some(&ids[0].0[..])
                {
                    return Err(line);
                }
            }
            Ok(())
        },
    );

    (servers, ids, node)
}

#[test]
fn redis_servers_elect_our_replica_when_its_primary_dies() {
    let (servers, ids, mut node) = three_primaries_and_our_replica();
    let our_id = NodeName(*OUR_ID);
    // The first primary dies.
    let mut servers = servers.into_iter();
    drop(servers.next());
    let rest: Vec<(RedisServer, u16)> = servers.collect();
    node.run_until("our replica taking over", |h| {
        let me = h.state.node(&our_id).unwrap();
        if !me.is_primary() || h.state.slot_owner(0) != Some(&our_id) {
            return Err(format!("{:?}", h.state.node(&ids[0])));
        }
        Ok(())
    });
    let our_epoch = node.state.node(&our_id).unwrap().config_epoch;
    node.run_until(
        "the surviving redis-servers accepting the new primary",
        |_| {
            for (s, _) in &rest {
                let line = nodes_line(s, &our_id).ok_or("not listed")?;
                let f: Vec<&str> = line.split(' ').collect();
                if f.len() < 9
                    || f[2] != "master"
                    || f[6] != our_epoch.to_string()
                    || f[8] != "0-5460"
                {
                    return Err(line);
                }
                let old = nodes_line(s, &ids[0]).ok_or("old primary not listed")?;
                if !old.split(' ').nth(2).unwrap_or("").contains("fail") {
                    return Err(old);
                }
            }
            Ok(())
        },
    );
    // The new epoch is the greatest.
    for id in &ids[1..] {
        assert!(node.state.node(id).unwrap().config_epoch < our_epoch);
    }
}

/// Our node as a voting primary: redis-server primaries A and B, A's
/// redis-server replica R, and our node serving a third of the slots. A
/// dies: the failure needs our report or B's and ours, and R's election
/// needs our vote (two of three primaries); R takes A's slots and we
/// follow.
#[test]
fn our_primary_votes_for_a_redis_replica() {
    let (a, _) = redis_cluster_node(NODE_TIMEOUT as u64, &["--logfile", "redis.log"]);
    let (b, b_cport) = redis_cluster_node(NODE_TIMEOUT as u64, &["--logfile", "redis.log"]);
    let (r, r_cport) = redis_cluster_node(NODE_TIMEOUT as u64, &["--logfile", "redis.log"]);
    let (a_id, r_id) = (server_id(&a), server_id(&r));
    let mut node = Harness::new();
    let our_id = NodeName(*OUR_ID);
    let (port, cport) = (node.state.bus.config.port, node.state.bus.config.cport);
    cluster_meet(&a, b.port(), b_cport);
    cluster_meet(&a, r.port(), r_cport);
    cluster_meet(&a, port, cport);
    for (s, range) in [(&a, ("0", "5460")), (&b, ("5461", "10922"))] {
        add_slots_range(s, range);
    }
    for slot in 10923..16384 {
        assert!(node.state.add_slot(&our_id, slot));
    }
    node.run_until("R knowing A", |_| {
        nodes_line(&r, &a_id)
            .filter(|l| !l.contains("handshake"))
            .map(|_| ())
            .ok_or_else(|| "no".to_string())
    });
    let reply = r
        .conn()
        .cmd(&[b"CLUSTER", b"REPLICATE", a_id.as_bytes().as_slice()]);
    assert_eq!(reply, b"+OK\r\n");
    node.run_until("a converged cluster", |h| {
        let rn = h.state.node(&r_id).ok_or("R unknown")?;
        if !rn.is_replica() || rn.primary != Some(a_id) {
            return Err(format!("R: {rn:?}"));
        }
        if !h.state.is_ok() || h.state.bus.size != 3 {
            return Err(format!("ok {} size {}", h.state.is_ok(), h.state.bus.size));
        }
        let info = String::from_utf8_lossy(&b.conn().cmd(&[b"CLUSTER", b"INFO"])).into_owned();
        if !info.contains("cluster_state:ok") {
            return Err(info);
        }
        Ok(())
    });

    // R must have synced with A, or its data is too old to fail over.
    node.run_until("R replicating A", |_| {
        let info = bulk_text(&r.conn().cmd(&[b"INFO", b"replication"]));
        if info.contains("master_link_status:up") {
            Ok(())
        } else {
            Err(info)
        }
    });
    let votes_before = node.state.last_vote_epoch;
    drop(a);
    node.run_until("R elected, we following", |h| {
        let rn = h.state.node(&r_id).unwrap();
        if !rn.is_primary() || h.state.slot_owner(0) != Some(&r_id) {
            return Err(format!(
                "R: {:x} owner of 0: {:?}; A {:?}; epochs cur {} vote {}; B: {}; R: {}",
                rn.flags,
                h.state.slot_owner(0),
                h.state.node(&a_id).map(|n| n.flags),
                h.state.current_epoch,
                h.state.last_vote_epoch,
                bulk_text(&b.conn().cmd(&[b"CLUSTER", b"NODES"])),
                bulk_text(&r.conn().cmd(&[b"CLUSTER", b"NODES"])),
            ));
        }
        if !h.state.node(&a_id).unwrap().is_failed() {
            return Err("A not failed".into());
        }
        Ok(())
    });
    assert!(
        node.state.last_vote_epoch > votes_before,
        "R could only win with our vote"
    );
    let line = nodes_line(&b, &r_id).unwrap();
    assert!(
        line.contains("master") && line.ends_with(" 0-5460"),
        "{line}"
    );
}

/// `CLUSTER FAILOVER` on our replica of a live redis-server primary: it
/// pauses on our MFSTART, sends its offset in PAUSED pings, the others
/// vote (FORCEACK), and the primary turns into our replica.
#[test]
fn manual_failover_of_a_redis_server_primary() {
    let (servers, ids, mut node) = three_primaries_and_our_replica();
    let our_id = NodeName(*OUR_ID);
    // Our "replication" is at the primary's offset (no writes: 0).
    let a = &servers[0].0;
    let info = bulk_text(&a.conn().cmd(&[b"INFO", b"replication"]));
    assert!(info.contains("master_repl_offset:0"), "{info}");
    let actions = node
        .state
        .failover(zwindow::cluster::gossip::FailoverMode::Default, now_ms())
        .expect("CLUSTER FAILOVER");
    eprintln!("failover actions: {actions:?}");
    eprintln!(
        "A's nodes: {}",
        bulk_text(&a.conn().cmd(&[b"CLUSTER", b"NODES"]))
    );
    eprintln!("our links: {:?}", node.state.outbound_links());
    node.apply(actions);
    node.run_until("the roles swapped", |h| {
        if !h.state.node(&our_id).unwrap().is_primary() || h.state.slot_owner(0) != Some(&our_id) {
            let log = std::fs::read_to_string(a.dir().join("redis.log")).unwrap_or_default();
            return Err(format!("mf_end {}; A's log:\n{log}", h.state.bus.mf_end));
        }
        let line = nodes_line(a, &ids[0]).ok_or("A not listed")?;
        let f: Vec<&str> = line.split(' ').collect();
        if f.get(2) != Some(&"myself,slave") || f.get(3).map(|m| m.as_bytes()) != Some(&OUR_ID[..])
        {
            return Err(line);
        }
        Ok(())
    });
    for (s, _) in &servers[1..] {
        let line = nodes_line(s, &our_id).unwrap();
        assert!(
            line.contains(" master ") && line.ends_with(" 0-5460"),
            "{line}"
        );
    }
}
