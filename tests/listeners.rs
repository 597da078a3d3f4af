//! The listeners, against redis-server 8.0 side by side: the `unixsocket`
//! (raw bytes, redis-cli `-s`, the redis crate, redis-py and ioredis over
//! it; CLIENT LIST / MONITOR / CLIENT KILL of its clients; protected mode
//! and maxclients; `unixsocketperm`; the stale file replaced and the file
//! removed at exit; `port 0` with only the socket; the error when it
//! cannot be bound), and every `bind` address (two of them reachable, an
//! optional `-` one skipped, a failing one refused with Redis's lines,
//! CONFIG SET `bind` and `port` all or nothing, with Redis's replies).
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    PrivateDir, RawConn, RedisServer, ZwindowServer, encode_cmd, escape, frame_len, free_port,
    io_uring_args, redis8_server, start_on_free_port,
};

/// A raw RESP connection over a unix socket.
struct UnixConn {
    stream: UnixStream,
    buf: Vec<u8>,
}

impl UnixConn {
    fn connect(path: &Path) -> UnixConn {
        let stream = UnixStream::connect(path)
            .unwrap_or_else(|e| panic!("connect to {}: {e}", path.display()));
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        UnixConn {
            stream,
            buf: Vec::new(),
        }
    }

    fn read_reply(&mut self) -> Vec<u8> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(n) = frame_len(&self.buf).expect("a RESP reply") {
                let rest = self.buf.split_off(n);
                return std::mem::replace(&mut self.buf, rest);
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("closed while waiting (partial: {})", escape(&self.buf)),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("read: {e} (partial: {})", escape(&self.buf)),
            }
        }
    }

    fn cmd(&mut self, line: &str) -> Vec<u8> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        self.stream.write_all(&encode_cmd(&args)).unwrap();
        self.read_reply()
    }

    /// The text of a bulk or simple reply.
    fn text(&mut self, line: &str) -> String {
        let reply = String::from_utf8(self.cmd(line)).unwrap();
        match reply.split_once("\r\n") {
            Some((head, rest)) if head.starts_with('$') => {
                rest.strip_suffix("\r\n").unwrap_or(rest).to_string()
            }
            _ => reply.trim_end().to_string(),
        }
    }
}

/// A CLIENT LIST / CLIENT INFO line as (field, value) pairs, in order.
fn fields(line: &str) -> Vec<(String, String)> {
    line.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn field(line: &str, name: &str) -> String {
    fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {name}= in {line}"))
}

/// zwindow and redis-server, each with a TCP port on 127.0.0.1 and a unix
/// socket (`extra` added to both command lines), as Redis's test harness
/// starts its servers.
struct UnixPair {
    z: ZwindowServer,
    r: RedisServer,
    zsock: PathBuf,
    rsock: PathBuf,
    _dir: PrivateDir,
}

fn start_unix_pair(extra: &[&str]) -> UnixPair {
    let dir = PrivateDir::new("sockets");
    let zsock = dir.0.join("z.sock");
    let rsock = dir.0.join("r.sock");
    let zpath = zsock.to_str().unwrap();
    let rpath = rsock.to_str().unwrap();
    let (z, _) = start_on_free_port(|port| {
        let port = port.to_string();
        let mut zargs = vec!["--port", &port, "--unixsocket", zpath];
        zargs.extend_from_slice(extra);
        ZwindowServer::try_start(&zargs)
    });
    let mut rargs = vec!["--unixsocket", rpath];
    rargs.extend_from_slice(extra);
    UnixPair {
        z,
        r: RedisServer::start_binary(&redis8_server(), &rargs),
        zsock,
        rsock,
        _dir: dir,
    }
}

#[test]
fn unix_socket_clients_look_as_in_redis() {
    let s = start_unix_pair(&["--unixsocketperm", "700"]);
    for (name, sock) in [("redis-server", &s.rsock), ("zwindow", &s.zsock)] {
        let meta = std::fs::metadata(sock).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(meta.file_type().is_socket(), "{name}: not a socket");
        assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{name}");
    }
    let mut z = UnixConn::connect(&s.zsock);
    let mut r = UnixConn::connect(&s.rsock);
    for (c, sock) in [(&mut z, &s.zsock), (&mut r, &s.rsock)] {
        assert_eq!(c.cmd("SET k v"), b"+OK\r\n");
        assert_eq!(c.cmd("GET k"), b"$1\r\nv\r\n");
        let info = c.text("CLIENT INFO");
        let at = format!("{}:0", sock.display());
        assert_eq!(field(&info, "addr"), at, "{info}");
        assert_eq!(field(&info, "laddr"), at, "{info}");
        assert_eq!(field(&info, "flags"), "U", "{info}");
        assert_eq!(
            c.text("CONFIG GET unixsocket"),
            format!(
                "*2\r\n$10\r\nunixsocket\r\n${}\r\n{}",
                sock.as_os_str().len(),
                sock.display()
            )
        );
    }
    // The same fields in the same order, the same replies otherwise.
    let (zi, ri) = (z.text("CLIENT INFO"), r.text("CLIENT INFO"));
    let names = |l: &str| fields(l).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(names(&zi), names(&ri), "\nzwindow: {zi}\nredis:   {ri}");
    for line in [
        "CONFIG GET unixsocketperm",
        "CONFIG SET unixsocket /tmp/elsewhere.sock",
        "CONFIG SET unixsocketperm 777",
        "CLIENT NO-EVICT on",
    ] {
        assert_eq!(
            String::from_utf8_lossy(&z.cmd(line)),
            String::from_utf8_lossy(&r.cmd(line)),
            "{line}"
        );
    }
    // Flags keep Redis's order (U before e).
    assert_eq!(field(&z.text("CLIENT INFO"), "flags"), "Ue");
    assert_eq!(field(&r.text("CLIENT INFO"), "flags"), "Ue");

    // A TCP client sees the unix ones in CLIENT LIST, counted in INFO, and
    // kills them by address.
    for (tcp, sock, unix) in [
        (&mut s.z.conn(), &s.zsock, &mut z),
        (&mut s.r.conn(), &s.rsock, &mut r),
    ] {
        let list = String::from_utf8(tcp.cmd_str("CLIENT LIST")).unwrap();
        let at = format!(" addr={}:0 ", sock.display());
        assert_eq!(list.matches(&at).count(), 1, "{list}");
        let info = String::from_utf8(tcp.cmd_str("INFO clients")).unwrap();
        assert!(info.contains("connected_clients:2\r\n"), "{info}");
        let kill = format!("CLIENT KILL ADDR {}:0", sock.display());
        assert_eq!(tcp.cmd_str(&kill), b":1\r\n");
        let mut byte = [0u8; 1];
        assert_eq!(unix.stream.read(&mut byte).unwrap_or(0), 0, "killed");
    }
}

/// MONITOR names a unix client by the socket's path, as Redis does.
#[test]
fn monitor_shows_unix_clients_as_redis() {
    let s = start_unix_pair(&[]);
    for (sock, mut monitor) in [(&s.zsock, s.z.conn()), (&s.rsock, s.r.conn())] {
        assert_eq!(monitor.cmd_str("MONITOR"), b"+OK\r\n");
        UnixConn::connect(sock).cmd("PING");
        let line = String::from_utf8(monitor.read_reply()).unwrap();
        let want = format!("[0 unix:{}] \"PING\"", sock.display());
        assert!(line.ends_with(&format!("{want}\r\n")), "{line}");
    }
}

/// Protected mode serves unix clients (they are local), and so does
/// `enable-protected-configs local`; maxclients refuses them with Redis's text.
#[test]
fn unix_clients_are_local_and_counted() {
    let s = start_unix_pair(&[
        "--protected-mode",
        "yes",
        "--enable-protected-configs",
        "local",
    ]);
    for sock in [&s.zsock, &s.rsock] {
        let mut c = UnixConn::connect(sock);
        assert_eq!(c.cmd("PING"), b"+PONG\r\n");
        assert_eq!(c.cmd("CONFIG SET dbfilename unix.rdb"), b"+OK\r\n");
        assert_eq!(c.cmd("CONFIG SET maxclients 1"), b"+OK\r\n");
        let mut refused = UnixConn::connect(sock);
        let mut got = Vec::new();
        let _ = refused.stream.read_to_end(&mut got);
        assert_eq!(
            String::from_utf8_lossy(&got),
            "-ERR max number of clients reached\r\n"
        );
    }
}

#[test]
fn unix_socket_from_client_tools_and_libraries() {
    let s = start_unix_pair(&[]);
    let path = s.zsock.to_str().unwrap();

    let cli = Command::new("redis-cli")
        .args(["-s", path, "SET", "from", "redis-cli"])
        .output()
        .expect("run redis-cli");
    assert_eq!(String::from_utf8_lossy(&cli.stdout), "OK\n");

    for url in [format!("redis+unix://{path}"), format!("unix://{path}")] {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut con = client
            .get_connection()
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let got: String = redis::cmd("GET").arg("from").query(&mut con).unwrap();
        assert_eq!(got, "redis-cli", "{url}");
        let _: () = redis::cmd("SET")
            .arg("crate")
            .arg(&url)
            .query(&mut con)
            .unwrap();
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/test`",
        python.display()
    );
    let py = Command::new(&python)
        .args([
            "-c",
            "import sys, redis\n\
             r = redis.Redis(unix_socket_path=sys.argv[1])\n\
             r.set('py', 'unix')\n\
             print(r.get('py').decode(), r.client_info()['flags'])",
            path,
        ])
        .output()
        .expect("run python");
    assert_eq!(
        String::from_utf8_lossy(&py.stdout),
        "unix U\n",
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );

    assert!(
        root.join("tests/node/node_modules/ioredis").exists(),
        "tests/node/node_modules/ioredis is missing: run `bash .ci/test`"
    );
    let node = Command::new("node")
        .current_dir(root.join("tests/node"))
        .args([
            "--input-type=module",
            "-e",
            "import Redis from 'ioredis';\n\
             const r = new Redis({ path: process.argv[1] });\n\
             await r.set('node', 'unix');\n\
             console.log(await r.get('node'), await r.get('py'));\n\
             r.disconnect();",
            path,
        ])
        .output()
        .expect("run node");
    assert_eq!(
        String::from_utf8_lossy(&node.stdout),
        "unix unix\n",
        "{}",
        String::from_utf8_lossy(&node.stderr)
    );
}

/// Starts zwindow with `args` (no TCP listener expected) and returns it
/// once it logs `ready`, with its stderr lines so far.
fn spawn_zwindow(args: &[&str], dir: &Path, ready: &str) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(args)
        .args(io_uring_args())
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zwindow");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                let done = line.contains(ready);
                lines.push(line);
                if done {
                    // The rest of the log drains into the channel unread.
                    std::mem::forget(rx);
                    return (child, lines);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(_) => {}
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("zwindow did not log {ready:?}:\n{}", lines.join("\n"));
}

/// `port 0` with a unix socket listens on it alone (Redis's meaning of
/// port 0); a stale file at the path is replaced; the healthcheck PINGs
/// it there; the file goes at exit.
#[test]
fn unix_socket_alone_with_port_0() {
    let dir = PrivateDir::new("unix-only");
    let sock = dir.0.join("only.sock");
    std::fs::write(&sock, "left by a crashed server").unwrap();
    let path = sock.to_str().unwrap();
    let ready = format!("The server is now ready to accept connections at {path}");
    let (mut child, log) = spawn_zwindow(
        &["--port", "0", "--unixsocket", path, "--save", ""],
        &dir.0,
        &ready,
    );
    assert!(
        !log.iter()
            .any(|l| l.contains("Ready to accept connections tcp")),
        "{log:?}"
    );
    let mut c = UnixConn::connect(&sock);
    assert_eq!(c.cmd("PING"), b"+PONG\r\n");
    assert_eq!(c.text("CONFIG GET port"), "*2\r\n$4\r\nport\r\n$1\r\n0");
    // No TCP socket: the process listens on nothing but the unix one.
    let pid = child.id();
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(
                l.strip_prefix("socket:[")?
                    .trim_end_matches(']')
                    .to_string(),
            )
        })
        .collect();
    let mut tcp_listeners = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for row in text.lines().skip(1) {
            let cols: Vec<&str> = row.split_whitespace().collect();
            // State 0A is LISTEN; column 9 the socket's inode.
            if cols.get(3) == Some(&"0A")
                && cols.get(9).is_some_and(|i| inodes.iter().any(|x| x == i))
            {
                tcp_listeners.push(row.to_string());
            }
        }
    }
    assert!(!inodes.is_empty(), "no socket found in /proc/{pid}/fd");
    // The Docker image's healthcheck finds it there.
    let check = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--healthcheck", &pid.to_string()])
        .output()
        .expect("run the healthcheck");
    let said = String::from_utf8_lossy(&check.stdout).into_owned();
    drop(c);
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()));
    let status = child.wait().unwrap();
    assert!(
        tcp_listeners.is_empty(),
        "zwindow listens on TCP with port 0 and a unix socket: {tcp_listeners:?}"
    );
    assert!(status.success(), "{status}");
    assert_eq!(said, format!("healthy: {path}: +PONG\n"));
    assert!(!sock.exists(), "the socket file is removed at exit");
}

/// Runs a server that should fail to start; its exit code and log.
fn failed_start(exe: &str, args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let mut cmd = Command::new(exe);
    cmd.args(args).current_dir(dir).env("NO_COLOR", "1");
    if exe == env!("CARGO_BIN_EXE_zwindow") {
        cmd.args(io_uring_args());
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{exe} {args:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut log = String::new();
    let _ = child.stdout.take().unwrap().read_to_string(&mut log);
    let _ = child.stderr.take().unwrap().read_to_string(&mut log);
    (status.code(), log)
}

/// Startup failures: exit status 1 and Redis's log lines, for a unix
/// socket that cannot be bound, a bind address that cannot, and nothing
/// to listen on.
#[test]
fn listener_failures_stop_startup_as_in_redis() {
    let dir = PrivateDir::new("fail");
    let port = free_port().to_string();
    let long = format!("/tmp/{}.sock", "a".repeat(120));
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec!["--port", "0", "--unixsocket", "/nonexistent-dir/x.sock"],
            vec!["Failed opening Unix socket: bind: No such file or directory".into()],
        ),
        (
            vec!["--port", "0", "--unixsocket", &long],
            vec![
                "Failed opening Unix socket: unix socket path too long (130), must be under 108"
                    .into(),
            ],
        ),
        (
            vec!["--port", &port, "--bind", "127.0.0.1 192.0.2.1"],
            vec![
                format!(
                    "Warning: Could not create server TCP listening socket 192.0.2.1:{port}: bind: Cannot assign requested address"
                ),
                format!("Failed listening on port {port} (TCP), aborting."),
            ],
        ),
        (
            vec!["--port", &port, "--bind", ""],
            vec!["Configured to not listen anywhere, exiting.".into()],
        ),
    ];
    let redis = Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    assert!(!redis.is_empty(), "redis-server is not on PATH");
    for (args, lines) in cases {
        let mut args = args.clone();
        args.extend(["--save", ""]);
        for exe in [redis.as_str(), env!("CARGO_BIN_EXE_zwindow")] {
            let (code, log) = failed_start(exe, &args, &dir.0);
            assert_eq!(code, Some(1), "{exe} {args:?}:\n{log}");
            for line in &lines {
                assert!(
                    log.contains(line.as_str()),
                    "{exe} {args:?}: no {line:?} in\n{log}"
                );
            }
        }
    }
}

/// An address zwindow can bind beside 127.0.0.1: IPv6's loopback where
/// the machine has it, else another IPv4 loopback address.
fn second_loopback() -> &'static str {
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        "::1"
    } else {
        "127.0.0.2"
    }
}

fn connect(host: &str, port: u16) -> std::io::Result<std::net::TcpStream> {
    let addr: std::net::SocketAddr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
    .parse()
    .unwrap();
    std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))
}

/// PING over a new TCP connection to `host:port`.
fn pings(host: &str, port: u16) -> bool {
    let Ok(mut s) = connect(host, port) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

#[test]
fn every_bind_address_is_served() {
    let second = second_loopback();
    let bind = format!("127.0.0.1 {second} -192.0.2.1");
    let z = ZwindowServer::start(&["--bind", &bind]);
    let port = z.port();
    assert!(pings("127.0.0.1", port));
    assert!(pings(second, port), "{}", z.log_tail());
    // The optional address that is not this machine's was skipped, saying so.
    let warning = format!(
        "Warning: Could not create server TCP listening socket 192.0.2.1:{port}: bind: Cannot assign requested address"
    );
    assert!(z.log_tail().contains(&warning), "{}", z.log_tail());
    // A client of the second address is shown by it, as Redis shows it.
    let mut c = connect(second, port).unwrap();
    c.write_all(&encode_cmd(&[b"CLIENT", b"INFO"])).unwrap();
    let mut reply = vec![0u8; 4096];
    let n = c.read(&mut reply).unwrap();
    let line = String::from_utf8_lossy(&reply[..n]).into_owned();
    let shown = |h: &str| {
        if h.contains(':') {
            format!("[{h}]")
        } else {
            h.to_string()
        }
    };
    assert_eq!(
        field(&line, "laddr"),
        format!("{}:{port}", shown(second)),
        "{line}"
    );
    assert!(
        field(&line, "addr").starts_with(&format!("{}:", shown(second))),
        "{line}"
    );
    let mut conn = z.conn();
    assert_eq!(
        String::from_utf8(conn.cmd_str("CONFIG GET bind")).unwrap(),
        format!("*2\r\n$4\r\nbind\r\n${}\r\n{bind}\r\n", bind.len())
    );
}

/// CONFIG SET bind and port, all or nothing: the same replies as
/// redis-server's, and the server listens where they say.
#[test]
fn config_set_bind_and_port_as_redis() {
    let second = second_loopback();
    let (z, r) = (ZwindowServer::start(&[]), RedisServer::start());
    let (mut zc, mut rc) = (z.conn(), r.conn());
    let (zport, rport) = (z.port(), r.port());
    let mut both = |line: &str| -> String {
        let (rr, zr) = (rc.cmd_str(line), zc.cmd_str(line));
        assert_eq!(escape(&zr), escape(&rr), "{line}");
        String::from_utf8(zr).unwrap()
    };
    let too_many = format!("CONFIG SET bind \"{}\"", vec!["127.0.0.1"; 17].join(" "));
    for line in [
        "CONFIG SET bind \"127.0.0.1 192.0.2.1\"",
        "CONFIG SET bind 999.999.999.999",
        "CONFIG SET bind \"127.0.0.1 127.0.0.1\"",
        too_many.as_str(),
    ] {
        assert!(both(line).contains("CONFIG SET failed"), "{line}");
        both("CONFIG GET bind");
        assert!(
            pings("127.0.0.1", zport) && pings("127.0.0.1", rport),
            "{line}"
        );
    }
    both(&format!(
        "CONFIG SET bind \"127.0.0.1 {second} -192.0.2.1\""
    ));
    both("CONFIG GET bind");
    for port in [zport, rport] {
        assert!(pings("127.0.0.1", port) && pings(second, port));
    }
    // No address: no new client, the connected ones stay.
    both("CONFIG SET bind \"\"");
    both("CONFIG GET bind");
    assert!(!pings("127.0.0.1", zport) && !pings("127.0.0.1", rport));
    both(&format!("CONFIG SET bind \"{second} 127.0.0.1\""));
    // A new port moves every address.
    let (znew, rnew) = (free_port(), free_port());
    let (zr, rr) = (
        zc.cmd_str(&format!("CONFIG SET port {znew}")),
        rc.cmd_str(&format!("CONFIG SET port {rnew}")),
    );
    assert_eq!(
        (zr.as_slice(), rr.as_slice()),
        (&b"+OK\r\n"[..], &b"+OK\r\n"[..])
    );
    for port in [znew, rnew] {
        assert!(
            pings("127.0.0.1", port) && pings(second, port),
            "port {port}"
        );
    }
    assert!(!pings("127.0.0.1", zport) && !pings(second, zport));
    // A port that is taken fails it, and the server stays where it was.
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let taken = taken.local_addr().unwrap().port();
    let fail = format!("CONFIG SET port {taken}");
    let (zr, rr) = (zc.cmd_str(&fail), rc.cmd_str(&fail));
    assert_eq!(escape(&zr), escape(&rr));
    assert!(
        escape(&zr).contains("Unable to listen on this port"),
        "{}",
        escape(&zr)
    );
    assert!(pings("127.0.0.1", znew) && pings(second, znew));
    drop(RawConn::connect(
        std::net::SocketAddr::from(([127, 0, 0, 1], znew)),
        "zwindow",
    ));
}
