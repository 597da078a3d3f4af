//! A dataset of every type and encoding and a way to compare two servers'
//! contents, shared by the persistence tests (RDB and AOF).

use super::{RawConn, Reply, escape, parse_reply};

pub fn cmd(c: &mut RawConn, args: &[&[u8]]) -> Vec<u8> {
    c.cmd(args)
}

pub fn ok(c: &mut RawConn, line: &str) {
    let r = c.cmd_str(line);
    assert!(!r.starts_with(b"-"), "{line}: {}", escape(&r));
}

/// A dataset of every type and encoding: binary keys, a 1 MB value,
/// extreme scores, streams with groups, TTLs in several databases.
pub fn populate(c: &mut RawConn) {
    cmd(c, &[b"SET", b"bin\x00\xffkey", b"\x00\x01\x02"]);
    cmd(c, &[b"SET", b"big", &vec![b'x'; 1 << 20]]);
    let random: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    cmd(c, &[b"SET", b"noise", &random]);
    for line in [
        "SET int 12345",
        "SET neg -9223372036854775808",
        "SET short hello",
        "SET withttl v PX 100000000",
        "RPUSH list a b 1 2 -300 70000 4294967296",
        "SADD intset 1 2 3 -5 100000 9223372036854775807",
        "SADD strset a b c",
        "HSET smallhash f v n 1",
        "ZADD smallz 1 a 2.5 b -inf c inf d 0 e -0.25 f 123456789.125 g -1.7976931348623157e308 h",
        "XADD st 1-1 a 1 b 2",
        "XADD st 1-2 a 3 b 4",
        "XADD st 2-1 c x",
        "XADD st 3-0 a 5 b 6",
        "XGROUP CREATE st g1 0",
        "XGROUP CREATE st g2 $",
        "XREADGROUP GROUP g1 alice COUNT 2 STREAMS st >",
        "XREADGROUP GROUP g1 bob COUNT 1 STREAMS st >",
        "XDEL st 1-2",
        "XADD emptyst MAXLEN 0 * a b",
        "PFADD hll a b c d",
        "SELECT 3",
        "SET db3 x EX 100000",
        "ZADD z3 3 m",
        "SELECT 0",
    ] {
        ok(c, line);
    }
    for i in 0..300 {
        let (m, f, v) = (format!("m{i}"), format!("f{i}"), format!("{i}.25"));
        cmd(c, &[b"ZADD", b"bigz", v.as_bytes(), m.as_bytes()]);
        cmd(c, &[b"HSET", b"bighash", f.as_bytes(), v.as_bytes()]);
        cmd(c, &[b"RPUSH", b"biglist", v.as_bytes()]);
        cmd(c, &[b"SADD", b"bigset", m.as_bytes()]);
        cmd(c, &[b"XADD", b"bigst", b"*", f.as_bytes(), v.as_bytes()]);
    }
    for i in 0..600 {
        cmd(c, &[b"SADD", b"bigintset", i.to_string().as_bytes()]);
        cmd(c, &[b"PFADD", b"densehll", format!("e{i}").as_bytes()]);
    }
}

/// Everything a client can see of databases 0 and 3, as raw replies.
pub fn contents(c: &mut RawConn) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for db in ["0", "3"] {
        ok(c, &format!("SELECT {db}"));
        let keys = parse_reply(&cmd(c, &[b"KEYS", b"*"]));
        let mut keys: Vec<Vec<u8>> = keys.array().iter().map(|k| k.bulk().to_vec()).collect();
        keys.sort();
        for k in keys {
            let ty = cmd(c, &[b"TYPE", &k]);
            // A live HyperLogLog is `raw` (it was modified in place), a
            // loaded one `embstr`: in Redis as in zwindow.
            let mut v = if k.ends_with(b"hll") {
                vec![]
            } else {
                vec![cmd(c, &[b"OBJECT", b"ENCODING", &k])]
            };
            let (sort, q): (bool, Vec<&[u8]>) = match &ty[..] {
                b"+string\r\n" => (false, vec![b"GET"]),
                b"+list\r\n" => (false, vec![b"LRANGE", b"0", b"-1"]),
                b"+set\r\n" => (true, vec![b"SMEMBERS"]),
                b"+hash\r\n" => (false, vec![b"HGETALL"]),
                b"+zset\r\n" => (false, vec![b"ZRANGE", b"0", b"-1", b"WITHSCORES"]),
                _ => (false, vec![b"XINFO", b"STREAM"]),
            };
            let mut args = q.clone();
            if q[0] == b"XINFO" {
                // XINFO STREAM key FULL, with each consumer's seen time
                // masked: a replay sets it to the time of the replay.
                args.extend_from_slice(&[&k[..], b"FULL"]);
            } else {
                args.insert(1, &k);
            }
            let mut r = cmd(c, &args);
            assert!(!r.starts_with(b"-"), "{}: {}", escape(&k), escape(&r));
            if q[0] == b"XINFO" {
                // Redis 7.0 shows no active time (7.2 added it), and the
                // stream type zwindow writes for 7.0 keeps none.
                r = masked(&parse_reply(&r))
                    .replace("\"active-time\" <time> ", "")
                    .into_bytes();
            }
            if sort {
                let mut m: Vec<Vec<u8>> = parse_reply(&r)
                    .array()
                    .iter()
                    .map(|x| x.bulk().to_vec())
                    .collect();
                m.sort();
                r = m.concat();
            }
            v.push(r);
            let ttl = parse_reply(&cmd(c, &[b"PTTL", &k])).int();
            v.push(if ttl > 0 {
                b"ttl".to_vec()
            } else {
                ttl.to_string().into_bytes()
            });
            out.push((
                [db.as_bytes(), b":", &k].concat(),
                [ty, v.concat()].concat(),
            ));
        }
    }
    ok(c, "SELECT 0");
    out
}

/// A reply as text, with consumers' seen (and active) times masked.
pub fn masked(r: &Reply) -> String {
    match r {
        Reply::Array(items) => {
            let mut parts = Vec::new();
            let mut mask = false;
            for item in items {
                parts.push(if mask {
                    "<time>".to_string()
                } else {
                    masked(item)
                });
                mask = matches!(item, Reply::Bulk(b) if b == b"seen-time" || b == b"active-time");
            }
            format!("[{}]", parts.join(" "))
        }
        Reply::Bulk(b) => escape(b),
        other => format!("{other:?}"),
    }
}

/// A value as [`contents`] gives it, with the encodings Redis 7.2 added
/// named as Redis 7.0 names them (a listpack list is a `quicklist`, a
/// listpack set a `hashtable`): these comparisons run against redis-server
/// 7.0 as well as 8.0 (tests/encodings.rs checks the 7.2+ names).
fn as_in_7_0(v: &[u8]) -> Vec<u8> {
    let swap = |from: &[u8], to: &[u8]| -> Option<Vec<u8>> {
        v.strip_prefix(from).map(|rest| [to, rest].concat())
    };
    swap(
        b"+list\r\n$8\r\nlistpack\r\n",
        b"+list\r\n$9\r\nquicklist\r\n",
    )
    .or_else(|| {
        swap(
            b"+set\r\n$8\r\nlistpack\r\n",
            b"+set\r\n$9\r\nhashtable\r\n",
        )
    })
    .unwrap_or_else(|| v.to_vec())
}

pub fn assert_same(a: &[(Vec<u8>, Vec<u8>)], b: &[(Vec<u8>, Vec<u8>)]) {
    assert_eq!(a.len(), b.len(), "key counts differ");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.0, y.0);
        assert!(
            as_in_7_0(&x.1) == as_in_7_0(&y.1),
            "{} differs:\n{}\n{}",
            escape(&x.0),
            escape(&x.1),
            escape(&y.1)
        );
    }
}
