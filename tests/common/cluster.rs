//! Whole clusters for the multi-node tests: [`Cluster::create`] starts
//! nodes of given kinds (zwindow or redis-server 7.0.15), joins them with
//! `redis-cli --cluster create`, waits until every node agrees, and offers
//! what the tests then need (roles from CLUSTER NODES, `--cluster check`,
//! SIGKILL of a node); [`ClusterClient`] is a small cluster-aware client
//! that follows MOVED and ASK (with ASKING) as client libraries do, and
//! survives failing nodes by asking another for the slot map.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{
    RawConn, RedisServer, Reply, ZwindowServer, encode_cmd, frame_len, parse_reply,
    redis_cluster_node, start_on_free_port,
};

/// Which server a node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Zwindow,
    Redis,
    /// Redis 8.0 ([`super::redis8_server`]).
    Redis8,
}

/// One node of a [`Cluster`], either kind.
pub enum Node {
    Zwindow(ZwindowServer),
    Redis(RedisServer),
    Redis8(RedisServer),
}

impl Node {
    /// A cluster node of `kind` on free ports with `node_timeout` ms.
    pub fn start(kind: Kind, node_timeout: u64) -> Node {
        match kind {
            Kind::Zwindow => Node::Zwindow(zwindow_cluster_node(node_timeout)),
            Kind::Redis => Node::Redis(redis_cluster_node(node_timeout, &[]).0),
            Kind::Redis8 => Node::Redis8(redis8_cluster_node(node_timeout, &[])),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Node::Zwindow(_) => Kind::Zwindow,
            Node::Redis(_) => Kind::Redis,
            Node::Redis8(_) => Kind::Redis8,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Node::Zwindow(z) => z.port(),
            Node::Redis(r) | Node::Redis8(r) => r.port(),
        }
    }

    pub fn conn(&self) -> RawConn {
        match self {
            Node::Zwindow(z) => z.conn(),
            Node::Redis(r) | Node::Redis8(r) => r.conn(),
        }
    }

    /// Its working directory (where its nodes.conf is).
    pub fn dir(&self) -> &std::path::Path {
        match self {
            Node::Zwindow(z) => z.dir(),
            Node::Redis(r) | Node::Redis8(r) => r.dir(),
        }
    }

    /// SIGKILL, and reap the process: a crash, nothing flushed.
    pub fn kill(&mut self) {
        match self {
            Node::Zwindow(z) => z.kill(),
            Node::Redis(r) | Node::Redis8(r) => r.kill(),
        }
    }
}

/// A redis-server 8.0 node in cluster mode on free ports, with `extra`
/// arguments.
pub fn redis8_cluster_node(node_timeout: u64, extra: &[&str]) -> RedisServer {
    super::redis_cluster_node_of(&super::redis8_server(), node_timeout, extra).0
}

/// A zwindow node in cluster mode on free ports (its bus on its own).
pub fn zwindow_cluster_node(node_timeout: u64) -> ZwindowServer {
    start_on_free_port(|cport| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", "0"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-port", &cport.to_string()])
            .args(["--cluster-node-timeout", &node_timeout.to_string()]);
        ZwindowServer::try_start_command(cmd)
    })
    .0
}

/// A node's view of one cluster member, from its CLUSTER NODES line.
#[derive(Clone, Debug)]
pub struct Member {
    pub id: String,
    pub port: u16,
    pub primary: bool,
    /// The primary's id, for a replica.
    pub replica_of: Option<String>,
    pub failed: bool,
}

/// Parses CLUSTER NODES text.
pub fn parse_nodes(text: &str) -> Vec<Member> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() < 8 {
                return None;
            }
            let port = f[1].split('@').next()?.rsplit(':').next()?.parse().ok()?;
            Some(Member {
                id: f[0].to_string(),
                port,
                primary: f[2].contains("master"),
                replica_of: (f[3] != "-").then(|| f[3].to_string()),
                failed: f[2].contains("fail"),
            })
        })
        .collect()
}

/// The text of a bulk or simple reply (or the raw bytes of another).
pub fn text(reply: &[u8]) -> String {
    match parse_reply(reply) {
        Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        Reply::Simple(s) => s,
        _ => String::from_utf8_lossy(reply).into_owned(),
    }
}

/// A reply as the tests compare it: a bulk string's text, any other
/// reply's raw bytes (`+OK\r\n`, `-MOVED …\r\n`).
pub fn raw_text(reply: &[u8]) -> String {
    match parse_reply(reply) {
        Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::from_utf8_lossy(reply).into_owned(),
    }
}

/// `line`, its words split on spaces, sent on `conn`: [`raw_text`] of
/// the reply.
pub fn cmd_line(conn: &mut RawConn, line: &str) -> String {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    raw_text(&conn.cmd(&args))
}

/// Runs `redis-cli` with `args`: success and stdout+stderr.
pub fn redis_cli(args: &[&str]) -> (bool, String) {
    let out = Command::new("redis-cli")
        .args(args)
        .output()
        .expect("run redis-cli");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Polls `check` until it holds within `limit`, or panics with `what`
/// and the last state.
pub fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(()) => return,
            Err(last) if Instant::now() >= deadline => panic!("never {what}: {last}"),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Nodes joined by `redis-cli --cluster create`. Killed nodes stay in
/// `nodes` (dead); `alive` says which are not.
pub struct Cluster {
    pub nodes: Vec<Node>,
    pub alive: Vec<bool>,
    pub node_timeout: u64,
}

impl Cluster {
    /// Starts one node per `kinds` entry and runs `redis-cli --cluster
    /// create` with `replicas` replicas per primary. redis-cli makes the
    /// first `len / (replicas + 1)` addresses primaries (every node is on
    /// 127.0.0.1, so its interleaving by host keeps the order): the kinds
    /// listed first are the primaries, which is checked. Returns once every
    /// node says `cluster_state:ok` and lists every replica.
    pub fn create(kinds: &[Kind], replicas: usize, node_timeout: u64) -> Cluster {
        let nodes: Vec<Node> = kinds
            .iter()
            .map(|k| Node::start(*k, node_timeout))
            .collect();
        let cluster = Cluster {
            alive: vec![true; nodes.len()],
            nodes,
            node_timeout,
        };
        let addrs = cluster.addrs();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        let replicas = replicas.to_string();
        args.extend(["--cluster-replicas", &replicas, "--cluster-yes"]);
        let (ok, shown) = redis_cli(&args);
        assert!(
            ok && shown.contains("[OK] All 16384 slots covered."),
            "{shown}"
        );
        let primaries = kinds.len() / (replicas.parse::<usize>().unwrap() + 1);
        for i in 0..cluster.nodes.len() {
            wait_until(
                "a node agrees on the roles",
                Duration::from_secs(30),
                || {
                    let members = cluster.members(i);
                    let info = text(&cluster.nodes[i].conn().cmd(&[b"CLUSTER", b"INFO"]));
                    let roles_ok = members.len() == kinds.len()
                        && cluster.nodes.iter().enumerate().all(|(j, n)| {
                            members.iter().any(|m| {
                                m.port == n.port() && m.primary == (j < primaries) && !m.failed
                            })
                        });
                    if roles_ok && info.contains("cluster_state:ok") {
                        Ok(())
                    } else {
                        Err(format!("{members:?}\n{info}"))
                    }
                },
            );
        }
        // A replica that has not synced yet could never be promoted (its
        // data is as old as it gets): wait for every link (Redis's primary
        // delays a diskless sync by 5 s).
        for (i, n) in cluster.nodes.iter().enumerate().skip(primaries) {
            wait_until("a replica synced", Duration::from_secs(30), || {
                let info = text(&n.conn().cmd(&[b"INFO", b"replication"]));
                if info.contains("master_link_status:up") {
                    Ok(())
                } else {
                    Err(format!("node {i}: {info}"))
                }
            });
        }
        cluster
    }

    pub fn addrs(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect()
    }

    /// Ports of the nodes still running (client seeds).
    pub fn live_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .zip(&self.alive)
            .filter(|(_, a)| **a)
            .map(|(n, _)| n.port())
            .collect()
    }

    /// Node `i`'s CLUSTER NODES, parsed (a generous read timeout: a node
    /// of a loaded machine may be slow to answer while it loads its
    /// primary's data).
    pub fn members(&self, i: usize) -> Vec<Member> {
        let mut c = self.nodes[i].conn();
        c.set_timeout(Duration::from_secs(30));
        parse_nodes(&text(&c.cmd(&[b"CLUSTER", b"NODES"])))
    }

    /// CONFIG SET cluster-node-timeout on every live node: a cluster is
    /// created with a calm timeout (its first syncs must not look like
    /// failures on a loaded machine), then failure detection is quickened.
    pub fn set_node_timeout(&mut self, ms: u64) {
        let ms_text = ms.to_string();
        for (n, _) in self.nodes.iter().zip(&self.alive).filter(|(_, a)| **a) {
            let reply = n.conn().cmd(&[
                b"CONFIG",
                b"SET",
                b"cluster-node-timeout",
                ms_text.as_bytes(),
            ]);
            assert_eq!(reply, b"+OK\r\n", "{}", String::from_utf8_lossy(&reply));
        }
        self.node_timeout = ms;
    }

    /// The index of the node on `port`.
    pub fn index_of(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port() == port)
            .expect("a node of the cluster")
    }

    pub fn id(&self, i: usize) -> String {
        text(&self.nodes[i].conn().cmd(&[b"CLUSTER", b"MYID"]))
    }

    /// The index of node `i`'s replica (as node `i` sees it).
    pub fn replica_of(&self, i: usize) -> usize {
        let id = self.id(i);
        let m = self
            .members(i)
            .into_iter()
            .find(|m| m.replica_of.as_deref() == Some(&id))
            .expect("a replica");
        self.index_of(m.port)
    }

    /// SIGKILLs node `i`.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
        self.alive[i] = false;
    }

    /// `redis-cli --cluster check` through live node `i`: exit status and
    /// output, and whether it is clean (every slot covered, agreement, no
    /// open slot, no warning or error).
    pub fn check(&self, i: usize) -> (bool, String) {
        let addr = format!("127.0.0.1:{}", self.nodes[i].port());
        let (ok, shown) = redis_cli(&["--cluster", "check", &addr]);
        let clean = ok
            && shown.contains("[OK] All nodes agree about slots configuration.")
            && shown.contains("[OK] All 16384 slots covered.")
            && !shown.contains("[WARNING]")
            && !shown.contains("[ERR]");
        (clean, shown)
    }

    /// Waits until `--cluster check` is clean through every live node.
    pub fn wait_check_clean(&self) {
        for i in 0..self.nodes.len() {
            if self.alive[i] {
                wait_until(
                    "--cluster check clean",
                    Duration::from_secs(30),
                    || match self.check(i) {
                        (true, _) => Ok(()),
                        (false, shown) => Err(shown),
                    },
                );
            }
        }
    }

    /// Whether every live node says `cluster_state:ok`.
    pub fn state_ok_everywhere(&self) -> Result<(), String> {
        for (n, _) in self.nodes.iter().zip(&self.alive).filter(|(_, a)| **a) {
            let info = text(&n.conn().cmd(&[b"CLUSTER", b"INFO"]));
            if !info.contains("cluster_state:ok") {
                return Err(format!("port {}: {info}", n.port()));
            }
        }
        Ok(())
    }

    /// Sum of CLUSTER COUNTKEYSINSLOT over every slot of live primaries,
    /// and the sum of DBSIZE over them.
    pub fn count_keys(&self) -> (i64, i64) {
        let (mut by_slot, mut dbsize) = (0, 0);
        for (i, n) in self.nodes.iter().enumerate() {
            if !self.alive[i] {
                continue;
            }
            let mut c = n.conn();
            let me = self.members(i).into_iter().find(|m| m.port == n.port());
            if !me.is_some_and(|m| m.primary) {
                continue;
            }
            dbsize += parse_reply(&c.cmd(&[b"DBSIZE"])).int();
            for (lo, hi, port) in slot_ranges(&mut c) {
                if port != n.port() {
                    continue;
                }
                for slot in lo..=hi {
                    let s = slot.to_string();
                    by_slot +=
                        parse_reply(&c.cmd(&[b"CLUSTER", b"COUNTKEYSINSLOT", s.as_bytes()])).int();
                }
            }
        }
        (by_slot, dbsize)
    }

    /// `redis-cli --cluster reshard` of `slots` slots from node `from` to
    /// node `to`.
    pub fn reshard(&self, from: usize, to: usize, slots: usize) -> (bool, String) {
        let addr = format!("127.0.0.1:{}", self.nodes[to].port());
        let (from, to, slots) = (self.id(from), self.id(to), slots.to_string());
        redis_cli(&[
            "--cluster",
            "reshard",
            &addr,
            "--cluster-from",
            &from,
            "--cluster-to",
            &to,
            "--cluster-slots",
            &slots,
            "--cluster-yes",
        ])
    }
}

/// CLUSTER SLOTS on `c`: (first, last, primary port) per range.
pub fn slot_ranges(c: &mut RawConn) -> Vec<(u16, u16, u16)> {
    ranges_of(&parse_reply(&c.cmd(&[b"CLUSTER", b"SLOTS"])))
}

fn ranges_of(reply: &Reply) -> Vec<(u16, u16, u16)> {
    let Reply::Array(ranges) = reply else {
        return Vec::new();
    };
    ranges
        .iter()
        .filter_map(|r| match r {
            Reply::Array(r) if r.len() >= 3 => match (&r[0], &r[1], &r[2]) {
                (Reply::Int(lo), Reply::Int(hi), Reply::Array(p)) if p.len() >= 2 => match p[1] {
                    Reply::Int(port) => Some((*lo as u16, *hi as u16, port as u16)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The hash slot of `key` (CRC16 of the hash tag or the key, mod 16384).
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter()
                .position(|&b| b == b'}')
                .filter(|&close| close > 0)
                .map(|close| &rest[..close])
        })
        .unwrap_or(key);
    let mut crc: u16 = 0;
    for &b in tagged {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc & 16383
}

/// A fallible blocking connection (a node may die under it).
struct Link {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Link {
    fn open(port: u16) -> std::io::Result<Link> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        Ok(Link {
            stream,
            buf: Vec::new(),
        })
    }

    /// Sends `cmds` pipelined; their replies in order.
    fn call(&mut self, cmds: &[&[&[u8]]]) -> std::io::Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for c in cmds {
            out.extend(encode_cmd(c));
        }
        self.stream.write_all(&out)?;
        let mut replies = Vec::new();
        while replies.len() < cmds.len() {
            match frame_len(&self.buf) {
                Ok(Some(n)) => replies.push(self.buf.drain(..n).collect()),
                Ok(None) => {
                    let mut chunk = [0u8; 16384];
                    let n = self.stream.read(&mut chunk)?;
                    if n == 0 {
                        return Err(std::io::ErrorKind::UnexpectedEof.into());
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                Err(e) => return Err(std::io::Error::other(e)),
            }
        }
        Ok(replies)
    }
}

/// A cluster-aware client: a slot map refreshed from CLUSTER SLOTS,
/// MOVED updating it, ASK answered with ASKING on the named node,
/// TRYAGAIN / CLUSTERDOWN / a dead node retried after a pause.
pub struct ClusterClient {
    seeds: Vec<u16>,
    slots: Vec<u16>,
    links: HashMap<u16, Link>,
    /// Redirections followed (MOVED, ASK) and retries after errors.
    pub moved: u64,
    pub asked: u64,
    pub retried: u64,
}

impl ClusterClient {
    pub fn new(seeds: &[u16]) -> ClusterClient {
        let mut c = ClusterClient {
            seeds: seeds.to_vec(),
            slots: vec![0; 16384],
            links: HashMap::new(),
            moved: 0,
            asked: 0,
            retried: 0,
        };
        c.refresh();
        c
    }

    /// Reloads the slot map from the first seed or known node that answers.
    fn refresh(&mut self) {
        let mut ports: Vec<u16> = self.seeds.clone();
        ports.extend(self.slots.iter().copied().filter(|p| *p != 0));
        ports.sort_unstable();
        ports.dedup();
        for port in ports {
            let Ok(mut link) = Link::open(port) else {
                continue;
            };
            let Ok(replies) = link.call(&[&[b"CLUSTER", b"SLOTS"]]) else {
                continue;
            };
            let ranges = ranges_of(&parse_reply(&replies[0]));
            if ranges.is_empty() {
                continue;
            }
            for (lo, hi, p) in ranges {
                for s in lo..=hi {
                    self.slots[usize::from(s)] = p;
                }
            }
            return;
        }
    }

    /// Runs `args` (whose key is `args[1]`) on the slot's owner, following
    /// redirections, for up to `limit`: the reply and the port of the node
    /// that gave it, or the last error.
    pub fn call(&mut self, args: &[&[u8]], limit: Duration) -> Result<(u16, Vec<u8>), String> {
        let slot = usize::from(key_slot(args[1]));
        let deadline = Instant::now() + limit;
        let mut ask: Option<u16> = None;
        let mut last = String::new();
        while Instant::now() < deadline {
            let port = ask.unwrap_or(self.slots[slot]);
            let asking = ask.take().is_some();
            let result = match self.link(port) {
                Ok(link) if asking => link.call(&[&[b"ASKING"], args]).map(|mut r| r.remove(1)),
                Ok(link) => link.call(&[args]).map(|mut r| r.remove(0)),
                Err(e) => Err(e),
            };
            let reply = match result {
                Ok(reply) => reply,
                Err(e) => {
                    last = format!("port {port}: {e}");
                    self.links.remove(&port);
                    self.retried += 1;
                    std::thread::sleep(Duration::from_millis(100));
                    self.refresh();
                    continue;
                }
            };
            let shown = String::from_utf8_lossy(&reply).into_owned();
            let target = || -> Option<u16> { shown.trim_end().rsplit(':').next()?.parse().ok() };
            if shown.starts_with("-MOVED ") {
                self.moved += 1;
                if let Some(p) = target() {
                    self.slots[slot] = p;
                }
            } else if shown.starts_with("-ASK ") {
                self.asked += 1;
                ask = target();
            } else if shown.starts_with("-TRYAGAIN") || shown.starts_with("-CLUSTERDOWN") {
                self.retried += 1;
                last = shown;
                std::thread::sleep(Duration::from_millis(50));
                self.refresh();
            } else {
                return Ok((port, reply));
            }
        }
        Err(last)
    }

    /// Sends `args` (no key) to the node on `port`.
    pub fn call_on(&mut self, port: u16, args: &[&[u8]]) -> Result<Vec<u8>, String> {
        let r = self
            .link(port)
            .and_then(|l| l.call(&[args]))
            .map(|mut r| r.remove(0));
        if r.is_err() {
            self.links.remove(&port);
        }
        r.map_err(|e| e.to_string())
    }

    fn link(&mut self, port: u16) -> std::io::Result<&mut Link> {
        match self.links.entry(port) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => Ok(e.insert(Link::open(port)?)),
        }
    }
}

/// The text of a bulk-string reply.
pub fn bulk_text(reply: &[u8]) -> String {
    match parse_reply(reply) {
        Reply::Bulk(b) => String::from_utf8(b).expect("UTF-8 reply"),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

/// `CLUSTER NODES`' line for `id`, if listed (the tests that play a node
/// against redis-server, and those that compare zwindow's texts with it).
pub fn nodes_line(server: &RedisServer, id: &zwindow::cluster::wire::NodeName) -> Option<String> {
    let nodes = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"NODES"]));
    let id = String::from_utf8_lossy(id.as_bytes()).into_owned();
    nodes
        .lines()
        .find(|l| l.split(' ').next() == Some(id.as_str()))
        .map(str::to_owned)
}

/// `CLUSTER NODES` on `conn` lists `ids` (and nothing else), every one
/// connected, none in handshake or failing.
pub fn lists_connected(conn: &mut RawConn, ids: &[String]) -> Result<(), String> {
    let nodes = cmd_line(conn, "CLUSTER NODES");
    let lines: Vec<&str> = nodes.lines().collect();
    let ok = lines.len() == ids.len()
        && ids.iter().all(|id| {
            lines.iter().any(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                f.len() >= 8
                    && f[0] == id
                    && f[7] == "connected"
                    && !f[2].contains("handshake")
                    && !f[2].contains("fail")
            })
        });
    if ok { Ok(()) } else { Err(nodes) }
}

/// Waits up to `limit` for `CLUSTER INFO` on `conn` to say `cluster_state:ok`.
pub fn wait_state_ok(conn: &mut RawConn, limit: Duration) {
    wait_until("cluster_state:ok", limit, || {
        let info = cmd_line(conn, "CLUSTER INFO");
        if info.contains("cluster_state:ok") {
            Ok(())
        } else {
            Err(info)
        }
    });
}
