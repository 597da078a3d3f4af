//! Self-tests of the shared harness in `tests/common`: RESP framing and reply comparison.
mod common;

use common::*;

#[test]
fn framing_resp2_and_resp3() {
    let cases: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR x\r\n",
        b":12\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"$3\r\nfoo\r\n",
        b"*2\r\n$-1\r\n:1\r\n",
        b"_\r\n",
        b",1.5\r\n",
        b"#t\r\n",
        b"%1\r\n+a\r\n:1\r\n",
        b"~2\r\n:1\r\n:2\r\n",
        b">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n",
        b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
        b"=8\r\ntxt:abcd\r\n",
        b"(12345678901234567890\r\n",
        b"!5\r\nERR x\r\n",
        b"$?\r\n;2\r\nab\r\n;0\r\n",
        b"*?\r\n:1\r\n*?\r\n:2\r\n.\r\n.\r\n",
    ];
    for c in cases {
        let mut buf = c.to_vec();
        buf.extend_from_slice(b"+NEXT\r\n");
        assert_eq!(frame_len(&buf), Ok(Some(c.len())), "{}", escape(c));
        for cut in 0..c.len() {
            assert_eq!(frame_len(&c[..cut]), Ok(None), "{} cut {cut}", escape(c));
        }
    }
}

#[test]
fn float_equivalence() {
    assert!(replies_equivalent(
        b"$19\r\n0.10000000000000001\r\n",
        b"$3\r\n0.1\r\n"
    ));
    assert!(replies_equivalent(b",0.10000000000000001\r\n", b",0.1\r\n"));
    assert!(!replies_equivalent(b"$3\r\n0.1\r\n", b"$3\r\n0.2\r\n"));
    assert!(!replies_equivalent(b"$3\r\n0.1\r\n", b"+0.1\r\n"));
    assert!(!replies_equivalent(
        b"*1\r\n$1\r\na\r\n",
        b"*1\r\n$1\r\nb\r\n"
    ));
}

#[test]
fn script_args() {
    assert_eq!(
        split_args(r#"SET "a b" 'c d' "\x00\r\n" e"#),
        vec![
            b"SET".to_vec(),
            b"a b".to_vec(),
            b"c d".to_vec(),
            b"\x00\r\n".to_vec(),
            b"e".to_vec()
        ]
    );
}

#[test]
fn redis_reference_answers() {
    let r = RedisServer::start();
    let mut c = r.conn();
    assert_eq!(c.cmd(&[b"PING"]), b"+PONG\r\n");
    c.send(b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n");
    assert_eq!(c.read_reply(), b"+PONG\r\n");
    assert_eq!(c.read_reply(), b"+PONG\r\n");
}

#[test]
fn framing_non_utf8_errors() {
    let c: &[u8] = b"-ERR unknown command '\xcc\xd7', with args beginning with: \r\n";
    let mut buf = c.to_vec();
    buf.extend_from_slice(b"+NEXT\r\n");
    assert_eq!(frame_len(&buf), Ok(Some(c.len())));
    assert_eq!(frame_len(&c[..c.len() - 1]), Ok(None));
    let arr: &[u8] = b"*2\r\n-ERR \xff\r\n+OK\r\n";
    assert_eq!(frame_len(arr), Ok(Some(arr.len())));
}

#[test]
#[should_panic(expected = "zwindow differs from redis-server")]
fn pair_check_reports_mismatch() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    let mut p = Pair {
        z: a.conn(),
        r: b.conn(),
    };
    p.z.cmd(&[b"SET", b"k", b"1"]);
    p.check(&[b"GET", b"k"]);
}

#[test]
#[should_panic(expected = "then closed")]
fn pair_session_reports_close_mismatch() {
    let a = RedisServer::start();
    let b = RedisServer::start();
    let mut p = Pair {
        z: a.conn(),
        r: b.conn(),
    };
    // Only the "zwindow" side gets the bad bytes first, so it closes and redis does not.
    p.z.send(b"*1\r\nX\r\n");
    p.check_raw_session(b"PING\r\n");
}

/// Every reference redis-server and every zwindow runs in its own empty
/// directory, never the shared temp dir: a `dump.rdb` left there by
/// anything else cannot leak into a test's oracle.
#[test]
fn servers_run_in_private_empty_directories() {
    let (a, b) = (RedisServer::start(), RedisServer::start());
    assert_ne!(a.dir(), b.dir());
    for r in [&a, &b] {
        assert_ne!(r.dir(), std::env::temp_dir());
        let reply = r.conn().cmd_str("CONFIG GET dir");
        let dir = r.dir().to_string_lossy().into_owned();
        assert_eq!(
            escape(&reply),
            escape(format!("*2\r\n$3\r\ndir\r\n${}\r\n{dir}\r\n", dir.len()).as_bytes())
        );
        assert_eq!(
            std::fs::read_dir(r.dir()).unwrap().count(),
            0,
            "{dir} is not empty"
        );
    }
    let z = ZwindowServer::start(&[]);
    assert_ne!(z.dir(), std::env::temp_dir());
    assert_eq!(std::fs::read_dir(z.dir()).unwrap().count(), 0);
    let dir = a.dir().to_path_buf();
    drop(a);
    assert!(!dir.exists(), "the private directory outlived its server");
}
