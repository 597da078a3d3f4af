//! RESP wire protocol: inline and multibulk parsing and every protocol error of Redis 7.0's
//! networking.c, compared byte for byte (and open/closed state) with redis-server, plus
//! zwindow-only robustness tests (pipelining, split writes, nesting, huge lengths, garbage).
mod common;

use std::io::Write;
use std::thread;
use std::time::Duration;

use common::*;

/// Each input gets a fresh pair of connections (a protocol error closes them).
fn sessions(s: &Servers, inputs: &[&[u8]]) {
    for input in inputs {
        s.pair().check_raw_session(input);
    }
}

/// Each input must produce the same error reply and close both connections.
fn closes(s: &Servers, inputs: &[&[u8]]) {
    for input in inputs {
        s.pair().check_raw_closes(input);
    }
}

/// Each input must leave both servers waiting for more bytes.
fn pending(s: &Servers, inputs: &[&[u8]]) {
    for input in inputs {
        s.pair().check_raw_pending(input);
    }
}

// ---------------------------------------------------------------------------
// Inline commands
// ---------------------------------------------------------------------------

#[test]
fn inline_basic_commands() {
    let s = Servers::start();
    sessions(
        &s,
        &[
            b"PING\r\n",
            b"ping\r\n",
            b"PING hello\r\n",
            b"ECHO \"hello world\"\r\n",
            b"SET k 'a b'\r\nGET k\r\n",
            b"   ECHO    x    \r\n",
            b"ECHO \"a\\x41\\n\\t\\\\\\\"\"\r\n",
            b"ECHO 'a\\'b'\r\n",
            b"ECHO \"\"\r\n",
            b"FOO a b\r\n",
            b"ECHO\r\n",
        ],
    );
}

#[test]
fn inline_empty_lines_and_lf_endings() {
    let s = Servers::start();
    sessions(
        &s,
        &[
            b"\r\n",
            b"\n",
            b"\r\n\r\n\nPING\n",
            b"PING\nECHO x\n",
            b"   \r\n",
            b"SET a 1\nGET a\r\nDEL a\n",
        ],
    );
}

#[test]
fn inline_unbalanced_quotes() {
    let s = Servers::start();
    closes(
        &s,
        &[
            b"ECHO \"abc\r\n",
            b"ECHO \"a\"b\r\n",
            b"ECHO 'abc\r\n",
            b"ECHO 'a'b\r\n",
        ],
    );
}

#[test]
fn inline_too_big_request() {
    let s = Servers::start();
    let big = vec![b'a'; 70_000];
    closes(&s, &[&big]);
}

// ---------------------------------------------------------------------------
// Multibulk commands
// ---------------------------------------------------------------------------

#[test]
fn multibulk_basic_and_mixed_with_inline() {
    let s = Servers::start();
    sessions(
        &s,
        &[
            b"*1\r\n$4\r\nPING\r\n",
            b"*2\r\n$4\r\nECHO\r\n$3\r\na\r\n\r\n",
            b"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n",
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
            // The two bytes after a bulk payload are skipped, not checked.
            b"*1\r\n$4\r\nPINGxx",
            // Empty command name.
            b"*1\r\n$0\r\n\r\n",
            b"*2\r\n$3\r\nfoo\r\n$1\r\na\r\n",
        ],
    );
}

#[test]
fn multibulk_zero_and_negative_counts_are_ignored() {
    let s = Servers::start();
    sessions(
        &s,
        &[
            b"*0\r\n",
            b"*-1\r\n",
            b"*-5\r\n",
            b"*0\r\nPING\r\n",
            b"*-1\r\n*1\r\n$4\r\nPING\r\n",
        ],
    );
}

#[test]
fn multibulk_invalid_count() {
    let s = Servers::start();
    closes(
        &s,
        &[
            b"*abc\r\n",
            b"*\r\n",
            b"*+1\r\n",
            b"*01\r\n",
            b"* 1\r\n",
            b"*1.5\r\n",
            b"*1a\r\n",
            b"*2147483648\r\n",
            b"*9223372036854775808\r\n",
            b"*99999999999999999999999\r\n",
        ],
    );
}

#[test]
fn multibulk_large_counts_up_to_int_max_are_accepted() {
    let s = Servers::start();
    pending(&s, &[b"*1048576\r\n", b"*1048577\r\n", b"*2147483647\r\n"]);
}

#[test]
fn multibulk_invalid_bulk_length() {
    let s = Servers::start();
    closes(
        &s,
        &[
            b"*1\r\n$abc\r\n",
            b"*1\r\n$\r\n",
            b"*1\r\n$-1\r\n",
            b"*1\r\n$-5\r\n",
            b"*1\r\n$04\r\nPING\r\n",
            b"*1\r\n$+4\r\nPING\r\n",
            b"*1\r\n$536870913\r\n",
            b"*1\r\n$9223372036854775808\r\n",
            b"*2\r\n$4\r\nECHO\r\n$x\r\n",
        ],
    );
}

#[test]
fn multibulk_max_bulk_length_is_accepted() {
    let s = Servers::start();
    pending(
        &s,
        &[b"*1\r\n$536870912\r\n", b"*2\r\n$4\r\nECHO\r\n$100\r\nabc"],
    );
}

#[test]
fn multibulk_expected_dollar() {
    let s = Servers::start();
    closes(
        &s,
        &[
            b"*1\r\nX\r\n",
            b"*1\r\n*1\r\n",
            b"*2\r\n$4\r\nECHO\r\n:1\r\n",
            b"*1\r\n+PING\r\n",
        ],
    );
}

#[test]
fn multibulk_too_big_count_strings() {
    let s = Servers::start();
    let mut mbulk = b"*".to_vec();
    mbulk.extend(std::iter::repeat_n(b'1', 70_000));
    let mut bulk = b"*1\r\n$".to_vec();
    bulk.extend(std::iter::repeat_n(b'1', 70_000));
    closes(&s, &[&mbulk, &bulk]);
}

#[test]
fn error_after_valid_commands_in_same_packet() {
    let s = Servers::start();
    sessions(
        &s,
        &[
            b"PING\r\n*1\r\nX\r\n",
            b"*1\r\n$4\r\nPING\r\n*abc\r\n",
            b"ECHO a\r\nECHO \"b\r\n",
        ],
    );
}

#[test]
fn quit_replies_ok_and_closes() {
    let s = Servers::start();
    s.pair().check_raw_closes(b"QUIT\r\n");
    s.pair().check_raw_closes(b"*1\r\n$4\r\nQUIT\r\n");
}

#[test]
fn unauthenticated_limits_with_requirepass() {
    let s = Servers::start_with(&["--requirepass", "pw"]);
    closes(
        &s,
        &[
            b"*11\r\n",
            b"*1\r\n$16385\r\n",
            b"*2\r\n$4\r\nAUTH\r\n$20000\r\n",
        ],
    );
    pending(&s, &[b"*10\r\n", b"*1\r\n$16384\r\n"]);
    // Once authenticated, the limits no longer apply.
    for input in [&b"*11\r\n"[..], b"*1\r\n$16385\r\n"] {
        let mut p = s.pair();
        p.check_raw(b"AUTH pw\r\n");
        p.check_raw_pending(input);
    }
    let mut p = s.pair();
    p.check_raw(b"AUTH pw\r\n");
    let big = "x".repeat(20_000);
    p.check(&[b"SET", b"big", big.as_bytes()]);
    p.check(&[b"GET", b"big"]);
}

/// A client that has not authenticated and pipelines without reading:
/// its -NOAUTH replies fill the 16 KB reply buffer, and past it (Redis
/// allows 1 KB, and its first block beyond counts 16 KB) the client is
/// closed with nothing written. Below it every reply arrives. Beside
/// redis-server 8.0, by the replies received and whether it closed.
#[test]
fn unauthenticated_output_is_limited_as_redis() {
    let s = Servers::start_with(&["--requirepass", "pw"]);
    let outcome = |port: u16, n: usize| {
        let mut c = RawConn::connect(([127, 0, 0, 1], port).into(), "pipeline");
        c.send(&b"PING\r\n".repeat(n));
        let mut replies = 0;
        loop {
            match c.try_read_reply(Duration::from_millis(500)) {
                ReadOutcome::Reply(r) => {
                    assert!(r.starts_with(b"-NOAUTH"), "{}", escape(&r));
                    replies += 1;
                }
                ReadOutcome::Closed => return (replies, true),
                ReadOutcome::Timeout => return (replies, false),
            }
        }
    };
    for (n, want) in [(400, (400, false)), (450, (450, false)), (1000, (0, true))] {
        assert_eq!(outcome(s.r.port(), n), want, "redis-server, {n} PINGs");
        assert_eq!(outcome(s.z.port(), n), want, "zwindow, {n} PINGs");
    }
}

#[test]
fn commands_before_auth_with_requirepass() {
    let s = Servers::start_with(&["--requirepass", "pw"]);
    // Before AUTH every reply is an error but the connection stays usable.
    let mut p = s.pair();
    for input in [
        &b"PING\r\n"[..],
        b"*1\r\n$4\r\nPING\r\n",
        b"ECHO x\r\n",
        b"AUTH wrong\r\n",
        b"AUTH default wrong\r\n",
        b"AUTH a b c\r\n",
        b"HELLO 3\r\n",
        b"FOO\r\n",
    ] {
        p.check_raw(input);
    }
    p.check_raw(b"AUTH pw\r\n");
    p.check_raw_session(b"PING\r\n");
    let mut p = s.pair();
    p.check_raw(b"AUTH default pw\r\n");
    p.check_raw_session(b"PING\r\n");
}

// ---------------------------------------------------------------------------
// Robustness (zwindow only)
// ---------------------------------------------------------------------------

/// The server is still alive and serving new connections.
fn assert_alive(z: &mut ZwindowServer) {
    assert!(z.is_running(), "zwindow exited");
    let mut c = z.conn();
    assert_eq!(
        escape(&c.cmd(&[b"PING"])),
        escape(b"+PONG\r\n"),
        "a fresh connection did not get PONG"
    );
}

/// Simple deterministic PRNG (xorshift64*).
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[test]
fn pipeline_10000_commands_in_one_write() {
    let mut z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    const N: usize = 10_000;
    let mut input = Vec::new();
    for i in 0..N {
        let v = i.to_string();
        input.extend_from_slice(&encode_cmd(&[b"ECHO", v.as_bytes()]));
    }
    // Write from another thread so that replies never back up against our write.
    let mut writer = c.stream().try_clone().unwrap();
    let t = thread::spawn(move || writer.write_all(&input));
    for i in 0..N {
        let v = i.to_string();
        let want = format!("${}\r\n{}\r\n", v.len(), v);
        let got = c.read_reply();
        assert_eq!(escape(&got), escape(want.as_bytes()), "reply #{i}");
    }
    t.join().unwrap().unwrap();
    assert_alive(&mut z);
}

#[test]
fn big_value_sent_in_small_pieces() {
    let mut z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    let value = random_bytes(7, 2 * 1024 * 1024);
    let input = encode_cmd(&[b"SET", b"big", &value]);
    for piece in input.chunks(16 * 1024) {
        c.send(piece);
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(c.read_reply(), b"+OK\r\n");
    let got = c.cmd(&[b"GET", b"big"]);
    let mut want = format!("${}\r\n", value.len()).into_bytes();
    want.extend_from_slice(&value);
    want.extend_from_slice(b"\r\n");
    assert!(got == want, "GET big returned a different value");
    assert_alive(&mut z);
}

#[test]
fn deeply_nested_arrays() {
    // Differential: the first nested `*` is a protocol error.
    let s = Servers::start();
    let nested = b"*1\r\n".repeat(100_000);
    s.pair().check_raw_closes(&nested);
    drop(s);
    // And zwindow survives it whatever it replies.
    let mut z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    let _ = c.try_send(&nested);
    let _ = c.is_closed(Duration::from_millis(200));
    assert_alive(&mut z);
}

#[test]
fn huge_declared_lengths_do_not_crash() {
    let mut z = ZwindowServer::start(&[]);
    let inputs: Vec<Vec<u8>> = vec![
        b"*2147483647\r\n".to_vec(),
        b"*2147483647\r\n$4\r\nECHO\r\n$1\r\na\r\n".to_vec(),
        b"*1048576\r\n".to_vec(),
        b"*1\r\n$536870912\r\nabc".to_vec(),
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n".to_vec(),
        b"*9223372036854775807\r\n".to_vec(),
        b"*1\r\n$9223372036854775807\r\n".to_vec(),
        b"*-9223372036854775808\r\n".to_vec(),
        b"*1\r\n$-9223372036854775808\r\n".to_vec(),
    ];
    // Keep all connections open at once, then close them all.
    let mut conns = Vec::new();
    for input in &inputs {
        let mut c = z.conn();
        let _ = c.try_send(input);
        conns.push(c);
    }
    assert_alive(&mut z);
    drop(conns);
    assert_alive(&mut z);
}

#[test]
fn random_garbage_does_not_crash() {
    let mut z = ZwindowServer::start(&[]);
    // 1 MB in one connection, then 16 x 64 KB, some starting like a real command.
    let mut c = z.conn();
    let _ = c.try_send(&random_bytes(1, 1024 * 1024));
    let _ = c.is_closed(Duration::from_millis(200));
    drop(c);
    assert_alive(&mut z);
    for seed in 2..18u64 {
        let mut input = match seed % 4 {
            0 => b"*3\r\n$3\r\nSET\r\n".to_vec(),
            1 => b"*".to_vec(),
            2 => b"ECHO ".to_vec(),
            _ => Vec::new(),
        };
        input.extend(random_bytes(seed, 64 * 1024));
        let mut c = z.conn();
        let _ = c.try_send(&input);
        let _ = c.is_closed(Duration::from_millis(50));
    }
    assert_alive(&mut z);
}
