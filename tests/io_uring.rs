//! The io_uring socket path (`--io-uring yes`) where its own mechanics
//! show: requests and replies larger than one provided buffer, a client
//! that floods requests without reading (the receive pauses and resumes),
//! a client leaving mid-reply, slots reused across many connections, and
//! the fallback to epoll with more than one thread. The rest of the suite
//! runs on this path with `ZWINDOW_TEST_IO_URING=1`.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::*;

fn start() -> ZwindowServer {
    let server = ZwindowServer::start(&["--io-uring", "yes"]);
    let log = server.log_tail();
    if !log.contains("Serving connections with io_uring") {
        // io_uring refused here (an old kernel, a seccomp filter): the
        // fallback is what runs, and these tests hold for it as well.
        eprintln!("io_uring unavailable, testing the epoll fallback:\n{log}");
    }
    server
}

#[test]
fn reports_its_setting() {
    let server = start();
    let mut c = server.conn();
    let reply = c.cmd(&[b"CONFIG", b"GET", b"io-uring"]);
    assert_eq!(reply, b"*2\r\n$8\r\nio-uring\r\n$3\r\nyes\r\n");
}

#[test]
fn values_larger_than_a_buffer_round_trip() {
    let server = start();
    let mut c = server.conn();
    let value: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(c.cmd(&[b"SET", b"big", &value]), b"+OK\r\n");
    let reply = c.cmd(&[b"GET", b"big"]);
    let mut expected = format!("${}\r\n", value.len()).into_bytes();
    expected.extend_from_slice(&value);
    expected.extend_from_slice(b"\r\n");
    assert!(reply == expected, "GET big: {} bytes back", reply.len());
}

#[test]
fn a_flood_without_reading_is_served_in_order() {
    let server = start();
    let mut c = server.conn();
    let big = vec![b'v'; 64 * 1024];
    assert_eq!(c.cmd(&[b"SET", b"big", &big]), b"+OK\r\n");
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    // Large replies fill the socket while large requests keep coming: the
    // server's pending input passes its limit, the receive is cancelled,
    // and re-armed once the replies drain.
    let rounds = 400;
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    let mut big_reply = format!("${}\r\n", big.len()).into_bytes();
    big_reply.extend_from_slice(&big);
    big_reply.extend_from_slice(b"\r\n");
    for i in 0..rounds {
        let value = vec![b'a' + (i % 26) as u8; 16 * 1024];
        requests.extend_from_slice(&encode_cmd(&[b"GET", b"big"]));
        requests.extend_from_slice(&encode_cmd(&[b"SET", format!("k{i}").as_bytes(), &value]));
        expected.extend_from_slice(&big_reply);
        expected.extend_from_slice(b"+OK\r\n");
    }
    requests.extend_from_slice(&encode_cmd(&[b"DBSIZE"]));
    expected.extend_from_slice(format!(":{}\r\n", rounds + 1).as_bytes());
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || writer.write_all(&requests).unwrap());
    std::thread::sleep(Duration::from_millis(300));
    let mut got = vec![0u8; expected.len()];
    stream.read_exact(&mut got).unwrap();
    sender.join().unwrap();
    assert!(got == expected, "replies out of order or lost");
}

#[test]
fn a_client_leaving_mid_reply_frees_its_slot() {
    let server = start();
    let mut c = server.conn();
    let value = vec![b'x'; 4_000_000];
    assert_eq!(c.cmd(&[b"SET", b"big", &value]), b"+OK\r\n");
    for _ in 0..20 {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.write_all(&encode_cmd(&[b"GET", b"big"])).unwrap();
        let mut first = [0u8; 16];
        s.read_exact(&mut first).unwrap();
        drop(s);
    }
    // Many short connections reuse the driver's slots.
    for _ in 0..200 {
        let mut s = server.conn();
        assert_eq!(s.cmd(&[b"PING"]), b"+PONG\r\n");
    }
    let mut ok = false;
    for _ in 0..50 {
        let info = c.query(&[b"INFO", b"clients"]);
        if String::from_utf8_lossy(info.bulk()).contains("connected_clients:1\r\n") {
            ok = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ok, "connections left behind");
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG\r\n");
}

#[test]
fn more_threads_fall_back_to_epoll() {
    let server = ZwindowServer::start(&["--io-uring", "yes", "--threads", "2"]);
    assert!(server.log_tail().contains("io-uring needs threads 1"));
    let mut c = server.conn();
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG\r\n");
}
