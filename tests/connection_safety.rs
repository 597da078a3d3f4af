//! Connection safety: protected mode (against redis-server's own text),
//! `maxclients` exact under concurrent connects, idle `timeout`, TCP
//! keepalive on accepted sockets, and a server out of file descriptors that
//! stays responsive without spinning.
//!
//! Non-loopback peers are made without any real network: a socket bound to
//! 127.0.0.2 before it connects has that address as its peer, and Redis
//! treats only `127.0.0.1` and `::1` as local.
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Connects to `to` from `from` (an address on the loopback interface).
fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::from((from, 0)).into())
        .expect("bind the client's source address");
    socket.connect(&to.into()).expect("connect");
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends PING and reads until the server closes or 2 s pass.
fn ping(mut s: TcpStream) -> Vec<u8> {
    let _ = s.write_all(b"PING\r\n");
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
        if got.ends_with(b"\r\n") && got.starts_with(b"+") {
            break;
        }
    }
    got
}

#[test]
fn protected_mode_denies_non_loopback_peers_as_redis() {
    let z = ZwindowServer::start(&["--bind", "127.0.0.2"]);
    let zaddr = SocketAddr::from(([127, 0, 0, 2], z.port()));
    let r = RedisServer::start_with(&["--bind", "127.0.0.1 127.0.0.2"]);
    let raddr = SocketAddr::from(([127, 0, 0, 2], r.port()));

    // A peer at 127.0.0.2: denied with Redis's text, then closed.
    let denied = ping(connect_from([127, 0, 0, 2], raddr));
    assert!(denied.starts_with(b"-DENIED Redis is running in protected mode"));
    assert_eq!(ping(connect_from([127, 0, 0, 2], zaddr)), denied);
    // 127.0.0.1 is local.
    assert_eq!(ping(connect_from([127, 0, 0, 1], zaddr)), b"+PONG\r\n");

    // Turned off from a local client, everyone is served.
    let mut local = connect_from([127, 0, 0, 1], zaddr);
    local
        .write_all(b"CONFIG SET protected-mode no\r\nCONFIG GET protected-mode\r\n")
        .unwrap();
    let mut buf = [0u8; 256];
    let mut got = Vec::new();
    while !got.ends_with(b"no\r\n") {
        let n = local.read(&mut buf).unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"+OK\r\n*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n");
    assert_eq!(ping(connect_from([127, 0, 0, 2], zaddr)), b"+PONG\r\n");

    // With a password, protected mode lets the client in to authenticate.
    let z = ZwindowServer::start(&["--bind", "127.0.0.2", "--requirepass", "s3cret"]);
    let zaddr = SocketAddr::from(([127, 0, 0, 2], z.port()));
    assert_eq!(
        ping(connect_from([127, 0, 0, 2], zaddr)),
        b"-NOAUTH Authentication required.\r\n"
    );
}

#[test]
fn maxclients_is_exact_under_concurrent_connects() {
    let z = ZwindowServer::start(&["--maxclients", "40"]);
    let mut first = z.conn();
    assert_eq!(first.cmd_str("PING"), b"+PONG\r\n");
    let addr = z.addr();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(100));
    let clients: Vec<_> = (0..100)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.write_all(b"PING\r\n").unwrap();
                let mut buf = [0u8; 64];
                let n = s.read(&mut buf).unwrap_or(0);
                let reply = buf[..n].to_vec();
                // Hold the connection until every client has its answer.
                (reply, s)
            })
        })
        .collect();
    let results: Vec<(Vec<u8>, TcpStream)> =
        clients.into_iter().map(|h| h.join().unwrap()).collect();
    let served = results.iter().filter(|(r, _)| r == b"+PONG\r\n").count();
    let refused = results
        .iter()
        .filter(|(r, _)| r == b"-ERR max number of clients reached\r\n")
        .count();
    assert_eq!(
        (served, refused),
        (39, 61),
        "40 slots, one taken by the first client"
    );
    drop(results);
    // Slots come back when clients leave.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut c = z.conn();
        if c.cmd_str("PING") == b"+PONG\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "slots never came back");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn idle_clients_are_closed_after_timeout_but_not_subscribers_or_blocked() {
    let z = ZwindowServer::start(&["--timeout", "1"]);
    let mut idle = z.conn();
    assert_eq!(idle.cmd_str("PING"), b"+PONG\r\n");
    let mut subscriber = z.conn();
    subscriber.send(b"SUBSCRIBE news\r\n");
    assert!(subscriber.read_reply().starts_with(b"*3\r\n"));
    let mut blocked = z.conn();
    blocked.send(b"BLPOP nothing 0\r\n");
    let mut active = z.conn();
    let started = Instant::now();
    // The active client keeps talking; the idle one is closed after more
    // than one whole second of silence, within the cron's period.
    while started.elapsed() < Duration::from_millis(2600) {
        assert_eq!(active.cmd_str("PING"), b"+PONG\r\n");
        std::thread::sleep(Duration::from_millis(200));
    }
    idle.expect_closed();
    let mut c = z.conn();
    assert_eq!(c.cmd_str("PUBLISH news hi"), b":1\r\n");
    assert!(subscriber.read_reply().starts_with(b"*3\r\n"));
    assert_eq!(c.cmd_str("RPUSH nothing x"), b":1\r\n");
    assert_eq!(blocked.read_reply(), b"*2\r\n$7\r\nnothing\r\n$1\r\nx\r\n");
    assert_eq!(
        c.cmd_str("CONFIG GET timeout"),
        b"*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n"
    );
}

/// The server side of our connection, as /proc/net/tcp lists it: (timer
/// kind, seconds until it fires). Kind 2 is the keepalive timer.
fn server_side_timer(server_port: u16, client_port: u16) -> Option<(u32, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    for line in table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port = |a: &str| u16::from_str_radix(a.rsplit(':').next()?, 16).ok();
        if port(f[1]) == Some(server_port) && port(f[2]) == Some(client_port) {
            let (kind, when) = f[5].split_once(':')?;
            let hz = 100; // jiffies in /proc/net/tcp's timer column (USER_HZ)
            return Some((
                u32::from_str_radix(kind, 16).ok()?,
                u64::from_str_radix(when, 16).ok()? / hz,
            ));
        }
    }
    None
}

#[test]
fn accepted_sockets_have_tcp_keepalive() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    assert_eq!(
        c.cmd_str("CONFIG GET tcp-keepalive"),
        b"*2\r\n$13\r\ntcp-keepalive\r\n$3\r\n300\r\n"
    );
    let s = TcpStream::connect(z.addr()).unwrap();
    let mut s2 = s.try_clone().unwrap();
    s2.write_all(b"PING\r\n").unwrap();
    let mut buf = [0u8; 16];
    let _ = s2.read(&mut buf).unwrap();
    let client_port = s.local_addr().unwrap().port();
    let (kind, secs) = server_side_timer(z.port(), client_port).expect("the server's socket");
    assert_eq!(kind, 2, "keepalive timer armed");
    assert!(
        (250..=300).contains(&secs),
        "first probe after ~300 s, got {secs}"
    );
    // Off for new connections once set to 0.
    assert_eq!(c.cmd_str("CONFIG SET tcp-keepalive 0"), b"+OK\r\n");
    let s = TcpStream::connect(z.addr()).unwrap();
    let mut s2 = s.try_clone().unwrap();
    s2.write_all(b"PING\r\n").unwrap();
    let _ = s2.read(&mut buf).unwrap();
    let (kind, _) = server_side_timer(z.port(), s.local_addr().unwrap().port()).unwrap();
    assert_eq!(kind, 0, "no timer without keepalive");
}

/// Server CPU seconds (user + system) from /proc.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[test]
fn out_of_file_descriptors_the_server_stays_responsive_and_idle() {
    // A hard limit of 256 open files: the server cannot raise it, lowers
    // maxclients to fit (as Redis does) and must never spin on accept.
    let exe = env!("CARGO_BIN_EXE_zwindow");
    let dir = PrivateDir::new("zwindow-nofile");
    let port = free_port();
    let mut cmd = Command::new(exe);
    cmd.current_dir(&dir.0)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setrlimit is async-signal-safe; it runs in the child before exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 256,
                rlim_max: 256,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut first = loop {
        if let Ok(s) = TcpStream::connect(addr) {
            break s;
        }
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(20));
    };
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let conn = |s: &mut TcpStream, line: &[u8]| -> Vec<u8> {
        s.write_all(line).unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap();
        buf[..n].to_vec()
    };
    // maxclients lowered to the limit minus Redis's 32 reserved.
    assert_eq!(
        conn(&mut first, b"CONFIG GET maxclients\r\n"),
        b"*2\r\n$10\r\nmaxclients\r\n$3\r\n224\r\n"
    );
    // 600 clients connect and stay.
    let mut held = Vec::new();
    for _ in 0..600 {
        if let Ok(s) = TcpStream::connect(addr) {
            held.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id();
    let before = cpu_secs(pid);
    let started = Instant::now();
    // Saturated: the first client is still answered, promptly.
    for _ in 0..10 {
        let t = Instant::now();
        assert_eq!(conn(&mut first, b"PING\r\n"), b"+PONG\r\n");
        assert!(t.elapsed() < Duration::from_secs(1));
        std::thread::sleep(Duration::from_millis(150));
    }
    let used = cpu_secs(pid) - before;
    let share = used / started.elapsed().as_secs_f64();
    // A server spinning on accept takes a whole core. An idle one takes a
    // few percent (a debug build, its cron walking 224 clients): 2-4% here
    // over these 1.5 s, read in 10 ms ticks, and once 5.3% in CI on a
    // shared 2-core machine; the bound sits well between the two.
    assert!(
        share < 0.2,
        "server used {:.1}% of a core while saturated",
        share * 100.0
    );
    // Clients beyond the limit were told so rather than left hanging.
    let mut answered = 0;
    for s in held.iter_mut().take(300) {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let _ = s.write_all(b"PING\r\n");
        let mut buf = [0u8; 64];
        if let Ok(n) = s.read(&mut buf)
            && n > 0
        {
            answered += 1;
        }
    }
    assert!(
        answered >= 200,
        "only {answered} of 300 clients got an answer"
    );
    drop(held);
    // Room again once they leave.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(mut s) = TcpStream::connect(addr) {
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            if conn(&mut s, b"PING\r\n") == b"+PONG\r\n" {
                break;
            }
        }
        assert!(Instant::now() < deadline, "no room after clients left");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// CONFIG SET port moves the listener as Redis's does: a port in use fails
/// the whole CONFIG SET with Redis's error (every parameter keeps its
/// value and the server its port); a free one is listened on at once and
/// the old one closed, while open connections stay.
#[test]
fn config_set_port_rebinds_or_rolls_back() {
    let server = ZwindowServer::start(&[]);
    let mut c = server.conn();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port();
    let reply = c.cmd_str(&format!(
        "CONFIG SET maxmemory 10000001 port {busy_port} client-query-buffer-limit 10m"
    ));
    assert_eq!(
        reply,
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
    );
    assert_eq!(
        c.cmd_str("CONFIG GET maxmemory"),
        b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
    );
    assert_eq!(
        c.cmd_str("CONFIG GET client-query-buffer-limit"),
        b"*2\r\n$25\r\nclient-query-buffer-limit\r\n$10\r\n1073741824\r\n"
    );
    let old_port = server.port().to_string();
    let port_reply = |p: &str| format!("*2\r\n$4\r\nport\r\n${}\r\n{p}\r\n", p.len()).into_bytes();
    assert_eq!(c.cmd_str("CONFIG GET port"), port_reply(&old_port));
    assert_eq!(server.conn().cmd_str("PING"), b"+PONG\r\n");
    // The same port keeps its listener.
    assert_eq!(
        c.cmd_str(&format!("CONFIG SET port {old_port}")),
        b"+OK\r\n"
    );
    assert_eq!(server.conn().cmd_str("PING"), b"+PONG\r\n");

    // A free port (the busy one, released).
    drop(busy);
    assert_eq!(
        c.cmd_str(&format!("CONFIG SET port {busy_port}")),
        b"+OK\r\n"
    );
    let new_addr = SocketAddr::from(([127, 0, 0, 1], busy_port));
    assert_eq!(
        RawConn::connect(new_addr, "moved").cmd_str("PING"),
        b"+PONG\r\n"
    );
    assert_eq!(
        c.cmd_str("CONFIG GET port"),
        port_reply(&busy_port.to_string())
    );
    // The old listener closes once the accept loop took the new one.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(server.addr()).is_ok() {
        assert!(Instant::now() < deadline, "the old port still accepts");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.cmd_str("PING"), b"+PONG\r\n");
}
