//! The cluster bus's wire format (`zwindow::cluster::wire`) against a real
//! redis-server 7.0 in cluster mode: the test plays a minimal node of its
//! own, with its own bus port, and redis-server must take it into its
//! cluster from our bytes alone. It decodes what redis-server sends (its
//! MEET, its PINGs with gossip about a second real node, its PONGs) and
//! answers with messages our encoder wrote.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::cluster::{bulk_text, nodes_line};
use common::*;
use zwindow::cluster::wire::{self, Body, Header, Ip, Msg, NodeName, Ping, PingExt};

/// How long any one expectation may take: redis-server's cluster cron
/// runs every 100 ms and pings a node every second or so.
/// Long for what it waits for: redis-server's gossip picks its entries at
/// random (with three nodes a PING leaves the third out about one time in
/// three) and pings each node about once a second, less often on a loaded
/// CI machine, where 8 s once saw six PINGs without it.
const WAIT: Duration = Duration::from_secs(20);
/// The fake node's name: 40 hex characters, as Redis's are.
const FAKE_ID: &[u8; 40] = b"fa4e000000000000000000000000000000000001";
const FAKE_HOSTNAME: &[u8] = b"fake-node.test";

fn myid(server: &RedisServer) -> NodeName {
    let id = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"MYID"]));
    NodeName::from_slice(id.as_bytes()).unwrap_or_else(|| panic!("odd node id {id:?}"))
}

/// The fake node: what it announces about itself.
#[derive(Clone)]
struct Fake {
    port: u16,
    cport: u16,
}

impl Fake {
    fn header(&self) -> Header {
        Header {
            port: self.port,
            sender: NodeName(*FAKE_ID),
            cport: self.cport,
            flags: wire::NODE_MASTER,
            state: wire::STATE_FAIL, // no slots covered, as any new node sees it
            ..Header::default()
        }
    }

    fn ping(&self, body: fn(Ping) -> Body) -> Vec<u8> {
        let msg = Msg {
            header: self.header(),
            body: body(Ping {
                gossip: vec![],
                extensions: vec![PingExt::Hostname(Bytes::from_static(FAKE_HOSTNAME))],
            }),
        };
        wire::encode(&msg).expect("encode")
    }
}

/// What a connection of the fake node saw: a message (and on which
/// connection), or why it could not read one.
enum Seen {
    Msg(usize, Box<Msg>),
    Error(String),
}

/// Reads messages off `stream` until `stop`, answering each PING and MEET
/// with a PONG, and reports them all.
fn serve_conn(
    conn: usize,
    mut stream: TcpStream,
    fake: Fake,
    tx: Sender<Seen>,
    stop: Arc<AtomicBool>,
) {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        loop {
            match wire::decode(&buf) {
                Ok(None) => break,
                Ok(Some((msg, len))) => {
                    buf.drain(..len);
                    let pong = matches!(msg.body, Body::Ping(_) | Body::Meet(_));
                    if pong && let Err(e) = stream.write_all(&fake.ping(Body::Pong)) {
                        let _ = tx.send(Seen::Error(format!("conn {conn}: write a PONG: {e}")));
                        return;
                    }
                    if tx.send(Seen::Msg(conn, Box::new(msg))).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Seen::Error(format!(
                        "conn {conn}: undecodable bytes from redis-server: {e}"
                    )));
                    return;
                }
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => return, // redis-server closed the link
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The fake node's bus listener: every connection redis-server opens to
/// it is served by [`serve_conn`]; connections are numbered from 0.
fn serve_bus(listener: TcpListener, fake: Fake, tx: Sender<Seen>, stop: Arc<AtomicBool>) {
    listener.set_nonblocking(true).unwrap();
    let mut next = 0;
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                let (fake, tx, stop) = (fake.clone(), tx.clone(), stop.clone());
                let conn = next;
                next += 1;
                thread::spawn(move || serve_conn(conn, stream, fake, tx, stop));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                let _ = tx.send(Seen::Error(format!("accept on the fake bus port: {e}")));
                return;
            }
        }
    }
}

/// Waits for a message for which `want` says yes, failing with `what`.
fn wait_for(
    rx: &Receiver<Seen>,
    what: &str,
    mut want: impl FnMut(usize, &Msg) -> bool,
) -> (usize, Msg) {
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Seen::Msg(conn, msg)) => {
                if want(conn, &msg) {
                    return (conn, *msg);
                }
                seen.push(format!(
                    "conn {conn}: type {} from {:?}",
                    msg.body.msg_type(),
                    msg.header.sender
                ));
            }
            Ok(Seen::Error(e)) => panic!("waiting for {what}: {e}"),
            Err(_) => panic!("no {what} within {WAIT:?}; saw instead: {seen:#?}"),
        }
    }
}

/// Polls `check` until it says yes, failing with its last word.
fn eventually(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + WAIT;
    loop {
        match check() {
            Ok(()) => return,
            Err(e) if Instant::now() > deadline => panic!("{what} not within {WAIT:?}: {e}"),
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Reads one whole message from `stream` within [`WAIT`].
fn read_msg(stream: &mut TcpStream) -> Msg {
    stream.set_read_timeout(Some(WAIT)).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match wire::decode(&buf) {
            Ok(Some((msg, _))) => return msg,
            Ok(None) => {}
            Err(e) => panic!("undecodable reply on redis-server's bus port: {e}"),
        }
        let n = stream
            .read(&mut chunk)
            .unwrap_or_else(|e| panic!("no reply on redis-server's bus port: {e}"));
        assert!(n > 0, "redis-server closed its bus port on our PING");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The fake node, running: its bus listener and connections on threads
/// of their own (stopped on drop), what they saw on `rx`.
struct FakeNode {
    fake: Fake,
    rx: Receiver<Seen>,
    stop: Arc<AtomicBool>,
}

impl FakeNode {
    /// A bus port of its own, a client port nobody calls.
    fn start() -> FakeNode {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let fake = Fake {
            port: free_port(),
            cport: listener.local_addr().unwrap().port(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        {
            let (fake, stop) = (fake.clone(), stop.clone());
            thread::spawn(move || serve_bus(listener, fake, tx, stop));
        }
        FakeNode { fake, rx, stop }
    }

    /// `ip:port@cport,hostname`, as `CLUSTER NODES` shows the fake node.
    fn addr(&self) -> String {
        format!(
            "127.0.0.1:{}@{},{}",
            self.fake.port,
            self.fake.cport,
            String::from_utf8_lossy(FAKE_HOSTNAME)
        )
    }

    /// `CLUSTER MEET` the fake node from `server`.
    fn meet_from(&self, server: &RedisServer) {
        let reply = server.conn().cmd(&[
            b"CLUSTER",
            b"MEET",
            b"127.0.0.1",
            self.fake.port.to_string().as_bytes(),
            self.fake.cport.to_string().as_bytes(),
        ]);
        assert_eq!(reply, b"+OK\r\n", "CLUSTER MEET of the fake node");
    }
}

impl Drop for FakeNode {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn redis_server_takes_our_node_into_its_cluster() {
    let (a, a_cport) = redis_cluster_node(3000, &[]);
    let a_id = myid(&a);

    let node = FakeNode::start();
    let (fake, rx) = (node.fake.clone(), &node.rx);

    node.meet_from(&a);

    // redis-server connects to our bus port and says MEET: we decode it.
    let (_, meet) = wait_for(rx, "a MEET from redis-server", |_, m| {
        matches!(m.body, Body::Meet(_))
    });
    let h = &meet.header;
    assert_eq!(
        h.sender, a_id,
        "MEET's sender is redis-server's CLUSTER MYID"
    );
    assert_eq!(h.port, a.port(), "MEET's client port");
    assert_eq!(h.cport, a_cport, "MEET's bus port");
    assert!(
        h.myslots.is_empty(),
        "a new node serves no slots: {:?}",
        h.myslots
    );
    assert!(h.slaveof.is_null(), "MEET's slaveof: {:?}", h.slaveof);
    // The sender's own flags, as it holds them: a master, itself. (MEET is
    // the message's type; the MEET flag is on its record of *us*.)
    assert_eq!(
        h.flags,
        wire::NODE_MASTER | wire::NODE_MYSELF,
        "MEET's flags"
    );
    assert_eq!(
        h.myip,
        Ip::NONE,
        "no cluster-announce-ip: the receiver takes the socket's"
    );
    let ping = meet.body.ping().unwrap();
    assert!(
        ping.gossip.is_empty(),
        "nobody to gossip about yet: {:?}",
        ping.gossip
    );
    // (Our PONG went back already: serve_conn answers every MEET and PING.)

    // Our PONG carried our name: redis-server now lists us by it, out of
    // handshake, a connected master at the address we announced, with the
    // hostname of our extension.
    let fake_id = NodeName(*FAKE_ID);
    let want_addr = node.addr();
    eventually("redis-server listing the fake node", || {
        check_listed(&a, &fake_id, &want_addr)
    });

    // Our own link to redis-server's bus port: a PING of ours gets its PONG.
    let mut out = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], a_cport))).unwrap();
    out.write_all(&fake.ping(Body::Ping)).unwrap();
    let pong = read_msg(&mut out);
    assert!(
        matches!(pong.body, Body::Pong(_)),
        "reply to our PING: {:?}",
        pong.body
    );
    assert_eq!(pong.header.sender, a_id);
    // redis-server took the link as ours (an inbound link from the fake node).
    let want = format!(
        "$4\r\nfrom\r\n$4\r\nnode\r\n$40\r\n{}",
        String::from_utf8_lossy(FAKE_ID)
    );
    eventually("CLUSTER LINKS showing our inbound link", || {
        let links = a.conn().cmd(&[b"CLUSTER", b"LINKS"]);
        if links.windows(want.len()).any(|w| w == want.as_bytes()) {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&links).into_owned())
        }
    });

    // A second real node: redis-server's PINGs to us now gossip about it.
    let (b, _) = redis_cluster_node(3000, &[]);
    let b_id = myid(&b);
    let reply = a.conn().cmd(&[
        b"CLUSTER",
        b"MEET",
        b"127.0.0.1",
        b.port().to_string().as_bytes(),
        cport_of(&b).to_string().as_bytes(),
    ]);
    assert_eq!(reply, b"+OK\r\n", "CLUSTER MEET of the second node");
    let (_, gossiping) = wait_for(
        rx,
        "a PING from redis-server gossiping about the second node",
        |_, m| {
            matches!(m.body, Body::Ping(_))
                && m.header.sender == a_id
                && m.body
                    .ping()
                    .is_some_and(|p| p.gossip.iter().any(|g| g.nodename == b_id))
        },
    );
    let g = gossiping
        .body
        .ping()
        .unwrap()
        .gossip
        .iter()
        .find(|g| g.nodename == b_id)
        .unwrap()
        .clone();
    assert_eq!(g.ip.text(), b"127.0.0.1", "gossip: {g:?}");
    assert_eq!(g.port, b.port(), "gossip: {g:?}");
    assert_eq!(g.cport, cport_of(&b), "gossip: {g:?}");
    assert_eq!(
        g.flags & wire::NODE_MASTER,
        wire::NODE_MASTER,
        "gossip: {g:?}"
    );
    assert_eq!(g.flags & wire::NODE_HANDSHAKE, 0, "gossip: {g:?}");

    // And still a healthy member of redis-server's cluster, at the address
    // our PINGs announced too.
    if let Err(e) = check_listed(&a, &fake_id, &want_addr) {
        panic!("after the gossip: {e}");
    }
}

/// Whether `server` lists `id` as a connected master (no `handshake`,
/// `fail?`, `fail` or `noaddr`) at `want_addr` (`ip:port@cport,hostname`).
fn check_listed(server: &RedisServer, id: &NodeName, want_addr: &str) -> Result<(), String> {
    let line = nodes_line(server, id).ok_or("not listed by its id")?;
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() < 8 {
        return Err(format!("short line {line:?}"));
    }
    if f[1] != want_addr {
        return Err(format!("address {} (want {want_addr}): {line:?}", f[1]));
    }
    if f[2] != "master" {
        return Err(format!("flags {} (want master only): {line:?}", f[2]));
    }
    if f[7] != "connected" {
        return Err(format!("link {}: {line:?}", f[7]));
    }
    Ok(())
}

/// A server's bus port, as `CONFIG GET cluster-port` says.
fn cport_of(server: &RedisServer) -> u16 {
    match parse_reply(&server.conn().cmd(&[b"CONFIG", b"GET", b"cluster-port"])) {
        Reply::Array(v) => match v.as_slice() {
            [_, Reply::Bulk(p)] => String::from_utf8_lossy(p).parse().expect("a port"),
            other => panic!("CONFIG GET cluster-port: {other:?}"),
        },
        other => panic!("CONFIG GET cluster-port: {other:?}"),
    }
}

/// Redis 8.0 sends ping extensions 7.0 does not know: its shard id
/// decodes as one (the id CLUSTER MYSHARDID gives), the internal secret
/// is kept opaque; and 8.0 takes our node too.
#[test]
fn redis_8_extensions_decode_and_are_kept_opaque() {
    let cport = free_port().to_string();
    let server = RedisServer::start_binary(
        &redis8_server(),
        &[
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-port",
            &cport,
        ],
    );
    let node = FakeNode::start();
    node.meet_from(&server);
    let (_, meet) = wait_for(&node.rx, "a MEET from Redis 8.0", |_, m| {
        matches!(m.body, Body::Meet(_))
    });
    // 8.0 flags every message as able to carry extensions, and sends them
    // to a node that showed the flag (our PONGs do): its PINGs then carry
    // its shard id.
    assert_ne!(meet.header.mflags[0] & wire::MFLAG0_EXT_DATA, 0, "{meet:?}");
    let mine = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"MYSHARDID"]));
    assert_eq!(mine.len(), 40, "{mine}");
    let shard_id = |m: &Msg| {
        m.body.ping().is_some_and(|p| {
            p.extensions
                .iter()
                .any(|e| matches!(e, PingExt::ShardId(id) if id.as_bytes() == mine.as_bytes()))
                && p.extensions.iter().any(|e| {
                    matches!(
                        e,
                        PingExt::Other {
                            ext_type: wire::EXT_INTERNALSECRET,
                            ..
                        }
                    )
                })
        })
    };
    wait_for(
        &node.rx,
        "a PING with Redis 8.0's shard id extension",
        |_, m| matches!(m.body, Body::Ping(_)) && shard_id(m),
    );
    let id = myid(&server);
    eventually("Redis 8.0 listing the fake node", || {
        check_listed(&server, &NodeName(*FAKE_ID), &node.addr())
    });
    assert_eq!(meet.header.sender, id);
}
