//! Big pipelines written before any reply is read, side by side with
//! redis-server 7.0.15: a client that sends 19 MB of `SET`/`GET` with one
//! blocking write, then reads. Redis reads (and runs) while its replies
//! wait for the client to read them; a server that only writes once its
//! replies are out waits for a client that waits for it. Over TCP (on the
//! socket path `ZWINDOW_TEST_IO_URING` picks), a unix socket and TLS.
//! What is read meanwhile runs as it comes, as in Redis: a pipeline is not
//! bounded by `client-query-buffer-limit`, and a client that does not read
//! sees its output grow while what it sends takes effect.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode};

/// Requests per pipeline: 200,000 `SET`+`GET` pairs, 19 MB.
const PAIRS: usize = 200_000;
/// Long enough for a debug build on a busy machine, short enough that a
/// hang fails the test instead of the suite.
const PATIENCE: Duration = Duration::from_secs(30);

fn value(i: usize) -> Vec<u8> {
    format!("{i:0>50}").into_bytes()
}

/// The pipeline: `SET key <i, 50 bytes>` and `GET key` for each `i`.
fn pipeline(pairs: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs * 96);
    for i in 0..pairs {
        out.extend_from_slice(&encode_cmd(&[b"SET", b"key", &value(i)]));
        out.extend_from_slice(&encode_cmd(&[b"GET", b"key"]));
    }
    out
}

/// What every reply of [`pipeline`] is, in order.
fn expected(pairs: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(pairs * 62);
    for i in 0..pairs {
        out.extend_from_slice(b"+OK\r\n$50\r\n");
        out.extend_from_slice(&value(i));
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Writes the whole pipeline with one blocking write, then reads every
/// reply: what was read, or how it failed (the write or a read timing out
/// on a server that does not read while its replies wait).
fn run_pipeline(mut s: impl Read + Write, pairs: usize) -> Result<Vec<u8>, String> {
    let data = pipeline(pairs);
    let want = expected(pairs).len();
    let start = Instant::now();
    s.write_all(&data)
        .map_err(|e| format!("send failed after {:?}: {e}", start.elapsed()))?;
    let mut got = Vec::with_capacity(want);
    let mut buf = vec![0u8; 1 << 20];
    while got.len() < want {
        match s.read(&mut buf) {
            Ok(0) => return Err(format!("closed after {} reply bytes", got.len())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => return Err(format!("read failed after {} bytes: {e}", got.len())),
        }
    }
    eprintln!(
        "{} MB pipeline answered in {:?}",
        data.len() >> 20,
        start.elapsed()
    );
    Ok(got)
}

/// Every reply, in order; the last ones shown on a mismatch.
fn check(what: &str, got: Result<Vec<u8>, String>) {
    let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
    let want = expected(PAIRS);
    assert_eq!(got.len(), want.len(), "{what}: reply bytes");
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{what}: replies differ at byte {at}: got {} want {}",
            escape(&got[at..(at + 80).min(got.len())]),
            escape(&want[at..(at + 80).min(want.len())])
        );
    }
    // The last pair's replies, spelled out.
    let last = format!("+OK\r\n$50\r\n{:0>50}\r\n", PAIRS - 1);
    assert!(got.ends_with(last.as_bytes()), "{what}: last replies");
}

fn tcp(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.set_write_timeout(Some(PATIENCE)).unwrap();
    s
}

#[test]
fn a_pipeline_sent_whole_before_reading_is_answered_over_tcp() {
    let r = RedisServer::start();
    check("redis-server", run_pipeline(tcp(r.port()), PAIRS));
    let z = ZwindowServer::start(&[]);
    check("zwindow", run_pipeline(tcp(z.port()), PAIRS));
    // The connection goes on as usual afterwards, and so does the server.
    let mut c = z.conn();
    assert_eq!(
        c.cmd(&[b"GET", b"key"]),
        format!("$50\r\n{:0>50}\r\n", PAIRS - 1).into_bytes()
    );
}

#[test]
fn a_pipeline_sent_whole_before_reading_is_answered_over_a_unix_socket() {
    let dir = PrivateDir::new("pipelining");
    let zsock = dir.0.join("z.sock");
    let rsock = dir.0.join("r.sock");
    let _r = RedisServer::start_with(&["--unixsocket", rsock.to_str().unwrap()]);
    let (_z, _) = start_on_free_port(|port| {
        let port = port.to_string();
        ZwindowServer::try_start(&["--port", &port, "--unixsocket", zsock.to_str().unwrap()])
    });
    for (what, path) in [("redis-server", &rsock), ("zwindow", &zsock)] {
        let s = UnixStream::connect(path).expect("connect");
        s.set_read_timeout(Some(PATIENCE)).unwrap();
        s.set_write_timeout(Some(PATIENCE)).unwrap();
        check(what, run_pipeline(s, PAIRS));
    }
}

#[test]
fn a_pipeline_sent_whole_before_reading_is_answered_over_tls() {
    let certs = tls_certs();
    let file = |n: &str| certs.join(n);
    let (_r, rport) = start_on_free_port(|port| {
        let args = tls_server_args(&certs, port);
        RedisServer::try_start_with(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    // A query buffer limit far below the pipeline: what zwindow reads
    // while a TLS write waits runs as it comes too (see the next test).
    let (_z, zport) = start_on_free_port(|port| {
        let mut args = tls_server_args(&certs, port);
        args.extend(["--client-query-buffer-limit".into(), "1mb".into()]);
        ZwindowServer::try_start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let mut b = SslConnector::builder(SslMethod::tls()).unwrap();
    b.set_ca_file(file("ca.crt")).unwrap();
    b.set_certificate_file(file("client.crt"), SslFiletype::PEM)
        .unwrap();
    b.set_private_key_file(file("client.key"), SslFiletype::PEM)
        .unwrap();
    b.set_verify(SslVerifyMode::PEER);
    let connector = b.build();
    let connect = |port| {
        let mut cfg = connector.configure().unwrap();
        // The suite's certificates name no host.
        cfg.set_verify_hostname(false);
        cfg.connect("localhost", tcp(port)).expect("handshake")
    };
    // redis-server 7.0.15 answers, or drops the client midway with "Error
    // writing to client: SSL routines::bad length" (its TLS write retries
    // a write OpenSSL wants repeated with fewer bytes, with OpenSSL 3:
    // valkey-io/valkey#1135, fixed there by #1737): not a hang either.
    match run_pipeline(connect(rport), PAIRS) {
        Ok(got) => check("redis-server", Ok(got)),
        Err(e) => eprintln!("redis-server over TLS: {e}"),
    }
    // zwindow retries a pending write with the same bytes first, reading
    // (and running what it read) between.
    check("zwindow", run_pipeline(connect(zport), PAIRS));
}

/// A pipeline past `client-query-buffer-limit`, sent whole before any
/// reply is read, is answered whole, as by redis-server 8.0.2: what is
/// read while the replies wait runs as it comes (the query buffer holds
/// no more than what arrived since), so the limit bounds a request, not
/// a pipeline (over TLS: the test above).
#[test]
fn a_pipeline_past_the_query_buffer_limit_is_answered_as_by_redis() {
    let r = RedisServer::start_binary(&redis8_server(), &["--client-query-buffer-limit", "1mb"]);
    check("redis-server 8.0.2", run_pipeline(tcp(r.port()), PAIRS));
    let z = ZwindowServer::start(&["--client-query-buffer-limit", "1mb"]);
    check("zwindow", run_pipeline(tcp(z.port()), PAIRS));
    // A request past the limit still closes the client, with Redis's log line.
    let mut big = tcp(z.port());
    let huge = encode_cmd(&[b"SET", b"k", &vec![b'v'; 3 << 20]]);
    let _ = big.write_all(&huge);
    let mut byte = [0u8; 1];
    assert!(
        matches!(big.read(&mut byte), Ok(0) | Err(_)),
        "a 3 MB request fit a 1 MB query buffer"
    );
    let logged = || z.log_tail().contains("reached max query buffer length");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !logged() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(logged(), "{}", z.log_tail());
    // The server goes on.
    assert_eq!(z.conn().cmd(&[b"PING"]), b"+PONG\r\n");
}

/// What a client that does not read sends meanwhile runs at once, as in
/// Redis: its output grows (CLIENT LIST's `omem`, `tot-mem`) and what the
/// commands do is seen by the others, while its replies wait behind the
/// rest. Side by side with redis-server 8.0.2: the same steps, the same
/// outcome; then the client reads every reply, in order.
#[test]
fn what_a_client_not_reading_sends_runs_at_once_as_redis() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start_binary(&redis8_server(), &[]);
    let got: Vec<String> = [("zwindow", z.addr()), ("redis-server 8.0.2", r.addr())]
        .into_iter()
        .map(|(name, addr)| {
            let outcome = stalled_client_runs(addr);
            println!("{name}: {outcome}");
            outcome
        })
        .collect();
    assert_eq!(got[0], got[1]);
}

/// Fills a client's output (20 replies of 1 MB, unread) and then has it
/// set a key and name itself: whether another client sees both within 5
/// s, the stalled client's output then (over 8 MB or not), and whether
/// every reply arrives afterwards, in order.
fn stalled_client_runs(addr: std::net::SocketAddr) -> String {
    const BIG: usize = 1 << 20;
    let mut other = RawConn::connect(addr, "observer");
    other.cmd(&[b"SET", b"big", &vec![b'x'; BIG]]);
    other.cmd(&[b"DEL", b"marker"]);
    let mut stalled = TcpStream::connect(addr).unwrap();
    stalled.set_read_timeout(Some(PATIENCE)).unwrap();
    let mut gets = Vec::new();
    for _ in 0..20 {
        gets.extend_from_slice(&encode_cmd(&[b"GET", b"big"]));
    }
    stalled.write_all(&gets).unwrap();
    // Its output waits for it to read, by now.
    std::thread::sleep(Duration::from_millis(300));
    let mut later = encode_cmd(&[b"SET", b"marker", b"1"]);
    later.extend_from_slice(&encode_cmd(&[b"CLIENT", b"SETNAME", b"stalled"]));
    stalled.write_all(&later).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = false;
    let mut omem = 0u64;
    while Instant::now() < deadline {
        let marker = other.cmd(&[b"GET", b"marker"]);
        let list = String::from_utf8_lossy(&other.cmd(&[b"CLIENT", b"LIST"])).into_owned();
        let line = list.lines().find(|l| l.contains(" name=stalled "));
        if marker == b"$1\r\n1\r\n"
            && let Some(line) = line
        {
            omem = line
                .split(' ')
                .find_map(|f| f.strip_prefix("omem="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Every reply, in order, once it reads.
    let mut want = Vec::new();
    for _ in 0..20 {
        want.extend_from_slice(format!("${BIG}\r\n").as_bytes());
        want.extend_from_slice(&vec![b'x'; BIG]);
        want.extend_from_slice(b"\r\n");
    }
    want.extend_from_slice(b"+OK\r\n+OK\r\n");
    let mut got = vec![0u8; want.len()];
    let read = stalled.read_exact(&mut got).map(|()| got == want);
    format!(
        "seen while stalled: {seen}, omem over 8 MB: {}, replies in order: {read:?}",
        omem > 8 << 20
    )
}
