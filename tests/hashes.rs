//! Differential tests (zwindow vs redis-server 7.0) of the hash commands, in
//! RESP2 and RESP3: every command and option including errors and wrong
//! types, listpack/hashtable encodings at both thresholds, exact reply order
//! for listpacks (insertion order) and order-insensitive comparison for
//! hashtables, HINCRBYFLOAT digits byte for byte, HRANDFIELD shapes, HSCAN,
//! and a seeded randomized command stream.
mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A reply with aggregate order erased: maps and RESP2 field/value arrays
/// (when `pairs`) become sorted pairs, other aggregates sorted elements.
fn normalized(reply: &[u8], pairs: bool) -> String {
    fn norm(r: &Reply, pairs: bool) -> String {
        match r {
            Reply::Map(kv) => {
                let mut v: Vec<String> = kv
                    .iter()
                    .map(|(k, v)| format!("{}=>{}", norm(k, false), norm(v, false)))
                    .collect();
                v.sort();
                format!("map{v:?}")
            }
            Reply::Array(a) | Reply::Set(a) if pairs => {
                let mut v: Vec<String> = a
                    .chunks(2)
                    .map(|c| {
                        c.iter()
                            .map(|x| norm(x, false))
                            .collect::<Vec<_>>()
                            .join("=>")
                    })
                    .collect();
                v.sort();
                format!("pairs{v:?}")
            }
            Reply::Array(a) | Reply::Set(a) => {
                let mut v: Vec<String> = a.iter().map(|x| norm(x, false)).collect();
                v.sort();
                format!("agg{v:?}")
            }
            other => format!("{other:?}"),
        }
    }
    norm(&parse_reply(reply), pairs)
}

/// Same command on both; equal up to order (`pairs`: field/value pairs kept
/// together).
fn check_unordered(p: &mut Pair, line: &str, pairs: bool) -> Vec<u8> {
    let (r, z) = p.both_str(line);
    if r != z && normalized(&r, pairs) != normalized(&z, pairs) {
        panic!(
            "zwindow differs from redis-server (unordered)\n  command: {line}\n  redis:   {}\n  zwindow: {}",
            escape(&r),
            escape(&z)
        );
    }
    r
}

/// Byte-exact comparison (no numeric float equivalence).
fn check_exact(p: &mut Pair, line: &str) {
    let (r, z) = p.both_str(line);
    assert_eq!(escape(&r), escape(&z), "byte mismatch for {line}");
}

/// HGETALL/HKEYS/HVALS of `key`: exact for a listpack, unordered otherwise.
fn check_dump(p: &mut Pair, key: &str) {
    let enc = p.check_str(&format!("OBJECT ENCODING {key}"));
    for cmd in ["HGETALL", "HKEYS", "HVALS"] {
        let line = format!("{cmd} {key}");
        if enc.starts_with(b"$8\r\nlistpack") {
            p.check_str(&line);
        } else {
            check_unordered(p, &line, cmd == "HGETALL");
        }
    }
}

/// Redis's field → value map for `key`.
fn redis_hash(p: &mut Pair, key: &str) -> BTreeMap<Vec<u8>, Vec<u8>> {
    match parse_reply(&p.r.cmd_str(&format!("HGETALL {key}"))) {
        Reply::Map(kv) => kv
            .into_iter()
            .map(|(k, v)| (k.bulk().to_vec(), v.bulk().to_vec()))
            .collect(),
        Reply::Array(a) => a
            .chunks(2)
            .map(|c| (c[0].bulk().to_vec(), c[1].bulk().to_vec()))
            .collect(),
        other => panic!("HGETALL: {other:?}"),
    }
}

#[test]
fn basic_commands() {
    in_both_protocols(|p| {
        p.script(&[
            "HSET h b 1 a 2 c 3",
            "HSET h a 20 d 4",
            "HSET h a",
            "HSET h a 1 b",
            "HMSET h a",
            "HMSET h x 1 y 2",
            "HMSET h x 1 y",
            "HSETNX h a 100",
            "HSETNX h z 26",
            "HSETNX n f v",
            "HGET h a",
            "HGET h nope",
            "HGET missing a",
            "HMGET h a nope b",
            "HMGET missing a b",
            "HLEN h",
            "HLEN missing",
            "HSTRLEN h a",
            "HSTRLEN h nope",
            "HSTRLEN missing a",
            "HEXISTS h a",
            "HEXISTS h nope",
            "HEXISTS missing a",
            "HGETALL h",
            "HKEYS h",
            "HVALS h",
            "HGETALL missing",
            "HKEYS missing",
            "HVALS missing",
            "OBJECT ENCODING h",
            "HDEL h a nope",
            "HDEL h a",
            "HDEL missing a",
            "HGETALL h",
            "HSET h a again",
            "HGETALL h",
            "HDEL h b c d x y z a",
            "EXISTS h",
            "HSET e '' ''",
            "HGET e ''",
            "HGETALL e",
            "HSET t f v",
            "EXPIRE t 100",
            "HSET t g w",
            "TTL t",
        ]);
    });
}

#[test]
fn listpack_thresholds() {
    in_both_protocols(|p| {
        // Entries: 512 (the default) stay compact, the 513th converts.
        for i in 0..512 {
            p.check_str(&format!("HSET h f{i} {i}"));
        }
        p.check_str("OBJECT ENCODING h");
        check_dump(p, "h");
        p.check_str("HSCAN h 0");
        p.check_str("HSET h f512 x");
        p.check_str("OBJECT ENCODING h");
        check_dump(p, "h");
        p.script(&["HDEL h f0 f1 f2 f3", "OBJECT ENCODING h", "HLEN h"]);
        // Values: 64 bytes stay compact, 65 convert; fields too.
        let v64 = "v".repeat(64);
        let v65 = "v".repeat(65);
        p.check_str(&format!("HSET a f {v64}"));
        p.check_str("OBJECT ENCODING a");
        p.check_str(&format!("HSET a f {v65}"));
        p.check_str("OBJECT ENCODING a");
        p.check_str(&format!("HSET b {v65} x"));
        p.check_str("OBJECT ENCODING b");
        p.check_str(&format!("HSETNX c {v65} x"));
        p.check_str("OBJECT ENCODING c");
        p.check_str("HSET c2 f x");
        p.check_str(&format!("HSETNX c2 f {v65}"));
        p.check_str("OBJECT ENCODING c2");
        p.check_str(&format!("HINCRBY d {v65} 1"));
        p.check_str("OBJECT ENCODING d");
        p.check_str(&format!("HINCRBYFLOAT e {v65} 1.5"));
        p.check_str("OBJECT ENCODING e");
        p.check_str(&format!("HMSET g a 1 {v65} 2"));
        p.check_str("OBJECT ENCODING g");
        // The thresholds are read from the live configuration.
        p.script(&[
            "CONFIG SET hash-max-listpack-entries 2",
            "CONFIG SET hash-max-listpack-value 4",
            "HSET s a 1 b 2",
            "OBJECT ENCODING s",
            "HSET s c 3",
            "OBJECT ENCODING s",
            "HSET s2 a 1234",
            "OBJECT ENCODING s2",
            "HSET s2 a 12345",
            "OBJECT ENCODING s2",
            "HSET s3 a 9999",
            "HINCRBY s3 a 1",
            "OBJECT ENCODING s3",
            "CONFIG SET hash-max-ziplist-entries 0",
            "HSET z a 1",
            "OBJECT ENCODING z",
            "CONFIG SET hash-max-listpack-entries 512",
            "CONFIG SET hash-max-listpack-value 64",
        ]);
    });
}

#[test]
fn hincrby_and_hincrbyfloat() {
    in_both_protocols(|p| {
        p.script(&[
            "HINCRBY h n 5",
            "HINCRBY h n -7",
            "HINCRBY h n abc",
            "HINCRBY h n 1.5",
            "HINCRBY h n 9223372036854775808",
            "HSET h big 9223372036854775807 small -9223372036854775808 s abc f 1.5 sp ' 1'",
            "HINCRBY h big 1",
            "HINCRBY h big 0",
            "HINCRBY h small -1",
            "HINCRBY h small 1",
            "HINCRBY h s 1",
            "HINCRBY h f 1",
            "HINCRBY h sp 1",
            "HINCRBY missing f abc",
            "EXISTS missing",
            "HGETALL h",
        ]);
        for line in [
            "HINCRBYFLOAT h x 0.1",
            "HINCRBYFLOAT h x 0.2",
            "HINCRBYFLOAT h x 1000.1",
            "HINCRBYFLOAT h x -1000",
            "HINCRBYFLOAT h y 10000000000.1",
            "HINCRBYFLOAT h y 1e400",
            "HINCRBYFLOAT h z 5.0e3",
            "HINCRBYFLOAT h z 0x10",
            "HINCRBYFLOAT h n 1.5",
            "HINCRBYFLOAT h f 1",
            "HINCRBYFLOAT h s 1",
            "HINCRBYFLOAT h x abc",
            "HINCRBYFLOAT h x ''",
            "HINCRBYFLOAT h x inf",
            "HINCRBYFLOAT h x -inf",
            "HINCRBYFLOAT h x nan",
            "HINCRBYFLOAT missing2 f inf",
            "HINCRBYFLOAT missing2 f abc",
            "EXISTS missing2",
            "HSET h i inf",
            "HINCRBYFLOAT h i 1",
            "HSET h m 1e4932",
            "HINCRBYFLOAT h m 1e4932",
            "HGET h x",
            "HGET h y",
        ] {
            check_exact(p, line);
        }
    });
}

#[test]
fn hrandfield() {
    in_both_protocols(|p| {
        p.script(&[
            "HRANDFIELD missing",
            "HRANDFIELD missing 3",
            "HRANDFIELD missing -3 WITHVALUES",
            "HRANDFIELD missing 0",
            "HRANDFIELD missing abc",
            "HRANDFIELD missing 1 WITHVALUE",
            "HRANDFIELD missing 1 WITHVALUES x",
            "HSET h b 1 a 2 c 3",
            "HRANDFIELD h 0",
            "HRANDFIELD h 0 WITHVALUES",
            "HRANDFIELD h 3",
            "HRANDFIELD h 10",
            "HRANDFIELD h 10 WITHVALUES",
            "HRANDFIELD h 10 withvalues",
            "HRANDFIELD h -9223372036854775808",
            "HRANDFIELD h 9223372036854775807 WITHVALUES",
            "HRANDFIELD h -9223372036854775807 WITHVALUES",
            "HRANDFIELD h 4611686018427387904 WITHVALUES",
            "HRANDFIELD h abc",
            "HRANDFIELD h 1 foo",
            "HSET one f v",
            "HRANDFIELD one",
            "HRANDFIELD one 1",
            "HRANDFIELD one -3",
            "HRANDFIELD one -2 WITHVALUES",
            "HRANDFIELD one 1 WITHVALUES",
        ]);
        // Random picks: shape and membership against Redis's hash.
        for i in 0..20 {
            p.check_str(&format!("HSET r f{i} v{i}"));
        }
        let hash = redis_hash(p, "r");
        let resp3 = p.z.cmd_str("HELLO").starts_with(b"%");
        for (count, withvalues) in [
            (5i64, false),
            (5, true),
            (-30, false),
            (-30, true),
            (19, true),
            (1, true),
        ] {
            let line = format!(
                "HRANDFIELD r {count}{}",
                if withvalues { " WITHVALUES" } else { "" }
            );
            let reply = parse_reply(&p.z.cmd_str(&line));
            let items = reply.array();
            let n = count.unsigned_abs() as usize;
            let mut fields = Vec::new();
            if withvalues && resp3 {
                assert_eq!(items.len(), n, "{line}");
                for pair in items {
                    let pair = pair.array();
                    assert_eq!(
                        hash.get(pair[0].bulk()).map(|v| v.as_slice()),
                        Some(pair[1].bulk()),
                        "{line}"
                    );
                    fields.push(pair[0].bulk().to_vec());
                }
            } else if withvalues {
                assert_eq!(items.len(), 2 * n, "{line}");
                for pair in items.chunks(2) {
                    assert_eq!(
                        hash.get(pair[0].bulk()).map(|v| v.as_slice()),
                        Some(pair[1].bulk()),
                        "{line}"
                    );
                    fields.push(pair[0].bulk().to_vec());
                }
            } else {
                assert_eq!(items.len(), n, "{line}");
                for f in items {
                    assert!(hash.contains_key(f.bulk()), "{line}");
                    fields.push(f.bulk().to_vec());
                }
            }
            if count > 0 {
                assert_eq!(
                    fields.iter().collect::<BTreeSet<_>>().len(),
                    n,
                    "{line}: repeats"
                );
            }
        }
        let f = parse_reply(&p.z.cmd_str("HRANDFIELD r"));
        assert!(hash.contains_key(f.bulk()));
        // A whole hashtable-encoded hash comes back in hash order.
        for i in 20..600 {
            p.check_str(&format!("HSET r f{i} v{i}"));
        }
        check_unordered(p, "HRANDFIELD r 1000", false);
        check_unordered(p, "HRANDFIELD r 1000 WITHVALUES", !resp3);
    });
}

#[test]
fn hscan() {
    in_both_protocols(|p| {
        p.script(&[
            "HSET h b 1 a 2 c 3 ab 4",
            "HSCAN h 0",
            "HSCAN h 5",
            "HSCAN h 0 MATCH a*",
            "HSCAN h 0 MATCH * COUNT 1",
            "HSCAN h 0 COUNT 0",
            "HSCAN h 0 COUNT abc",
            "HSCAN h 0 MATCH",
            "HSCAN h 0 TYPE hash",
            "HSCAN h abc",
            "HSCAN h -1",
            "HSCAN h ''",
            "HSCAN missing 0",
            "HSCAN missing abc",
            "HSCAN h",
        ]);
        for i in 0..700 {
            p.check_str(&format!("HSET big f{i} v{i}"));
        }
        let want = redis_hash(p, "big");
        let mut got = BTreeMap::new();
        let mut cursor = "0".to_string();
        let mut rounds = 0;
        loop {
            let r = parse_reply(&p.z.cmd_str(&format!("HSCAN big {cursor} COUNT 9")));
            let parts = r.array();
            cursor = String::from_utf8(parts[0].bulk().to_vec()).unwrap();
            for kv in parts[1].array().chunks(2) {
                got.insert(kv[0].bulk().to_vec(), kv[1].bulk().to_vec());
            }
            rounds += 1;
            assert!(rounds < 1000, "HSCAN does not terminate");
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(got, want);
        let r = parse_reply(&p.z.cmd_str("HSCAN big 0 MATCH f2?? COUNT 100000"));
        let fields: BTreeSet<Vec<u8>> = r.array()[1]
            .array()
            .chunks(2)
            .map(|kv| kv[0].bulk().to_vec())
            .collect();
        let expect: BTreeSet<Vec<u8>> = (200..300).map(|i| format!("f{i}").into_bytes()).collect();
        assert_eq!(fields, expect);
    });
}

#[test]
fn wrong_types_and_arity() {
    in_both_protocols(|p| {
        p.script(&["SET str v", "SADD set m"]);
        for key in ["str", "set"] {
            for cmd in [
                "HSET {} f v",
                "HMSET {} f v",
                "HSETNX {} f v",
                "HGET {} f",
                "HMGET {} f g",
                "HDEL {} f",
                "HLEN {}",
                "HSTRLEN {} f",
                "HEXISTS {} f",
                "HKEYS {}",
                "HVALS {}",
                "HGETALL {}",
                "HINCRBY {} f 1",
                "HINCRBY {} f x",
                "HINCRBYFLOAT {} f 1",
                "HINCRBYFLOAT {} f x",
                "HINCRBYFLOAT {} f inf",
                "HRANDFIELD {}",
                "HRANDFIELD {} 2",
                "HRANDFIELD {} 0",
                "HRANDFIELD {} x",
                "HSCAN {} 0",
                "HSCAN {} x",
            ] {
                p.check_str(&cmd.replace("{}", key));
            }
        }
        p.script(&[
            "HSET",
            "HSET h",
            "HSET h f",
            "HMSET h f",
            "HSETNX h f",
            "HGET h",
            "HMGET h",
            "HDEL h",
            "HLEN",
            "HSTRLEN h",
            "HEXISTS h",
            "HKEYS",
            "HVALS",
            "HGETALL",
            "HINCRBY h f",
            "HINCRBYFLOAT h f",
            "HRANDFIELD",
            "HSCAN h",
        ]);
    });
}

/// A seeded random stream over a few keys and fields with small listpack
/// limits, so hashes cross between encodings; hashtable dumps compare
/// order-insensitively.
#[test]
fn randomized_stream() {
    in_both_protocols(|p| {
        p.check_str("CONFIG SET hash-max-listpack-entries 5");
        p.check_str("CONFIG SET hash-max-listpack-value 6");
        let mut rng = StdRng::seed_from_u64(0x4a54);
        let keys = ["a", "b", "c"];
        let fields = ["f1", "f2", "f3", "f4", "f5", "f6", "longfield"];
        let values = ["1", "-2", "x", "", "3.5", "1234567", "007"];
        for _ in 0..3000 {
            let k = keys[rng.random_range(0..keys.len())];
            let f = fields[rng.random_range(0..fields.len())];
            let f2 = fields[rng.random_range(0..fields.len())];
            let v = values[rng.random_range(0..values.len())];
            match rng.random_range(0..16) {
                0..=2 => {
                    p.check_str(&format!("HSET {k} {f} '{v}' {f2} 1"));
                }
                3 => {
                    p.check_str(&format!("HSETNX {k} {f} '{v}'"));
                }
                4 | 5 => {
                    p.check_str(&format!("HDEL {k} {f} {f2}"));
                }
                6 => {
                    p.check_str(&format!("HGET {k} {f}"));
                }
                7 => {
                    p.check_str(&format!("HMGET {k} {f} {f2}"));
                }
                8 => {
                    p.check_str(&format!("HINCRBY {k} {f} {}", rng.random_range(-5..5)));
                }
                9 => {
                    check_exact(
                        p,
                        &format!(
                            "HINCRBYFLOAT {k} {f} {}",
                            ["0.1", "-1.5", "1000.1", "2e3"][rng.random_range(0..4)]
                        ),
                    );
                }
                10 => {
                    check_dump(p, k);
                }
                11 => {
                    p.check_str(&format!("HLEN {k}"));
                    p.check_str(&format!("HSTRLEN {k} {f}"));
                    p.check_str(&format!("HEXISTS {k} {f}"));
                }
                12 => {
                    let enc = p.check_str(&format!("OBJECT ENCODING {k}"));
                    if enc.starts_with(b"$8\r\nlistpack") {
                        p.check_str(&format!("HSCAN {k} 0 MATCH f*"));
                        p.check_str(&format!("HRANDFIELD {k} 100 WITHVALUES"));
                    }
                }
                13 => {
                    let count: i64 = rng.random_range(-4..6);
                    let hash = redis_hash(p, k);
                    let items = parse_reply(&p.z.cmd_str(&format!("HRANDFIELD {k} {count}")));
                    let items = items.array();
                    let want = if count < 0 {
                        if hash.is_empty() {
                            0
                        } else {
                            count.unsigned_abs() as usize
                        }
                    } else {
                        (count as usize).min(hash.len())
                    };
                    assert_eq!(items.len(), want);
                    assert!(items.iter().all(|i| hash.contains_key(i.bulk())));
                }
                14 => {
                    p.check_str(&format!("DEL {k}"));
                }
                _ => {
                    p.check_str(&format!("EXISTS {k}"));
                }
            }
        }
        p.check_str("CONFIG SET hash-max-listpack-entries 512");
        p.check_str("CONFIG SET hash-max-listpack-value 64");
    });
}

/// HSCAN NOVALUES (Redis 7.4) against Redis 8.0: listpack and hashtable
/// encodings, with MATCH and COUNT in any order, the cursor walk step by
/// step (8.0 counts the fields sampled against COUNT), and NOVALUES
/// refused by SCAN, SSCAN and ZSCAN with 8.0's text, checked in argument
/// order with the other options.
#[test]
fn hscan_novalues_against_redis8() {
    let s = Servers::start_redis8(&[]);
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        p.script(&[
            "FLUSHALL",
            "HSET h b 1 a 2 c 3 ab 4",
            "HSCAN h 0 NOVALUES",
            "HSCAN h 0 novalues MATCH a*",
            "HSCAN h 0 MATCH a* NOVALUES",
            "HSCAN h 0 NOVALUES NOVALUES COUNT 1",
            "HSCAN h 0 NOVALUES COUNT 0",
            "HSCAN h 0 COUNT 0 NOVALUES",
            "HSCAN h 0 NOVALUES MATCH",
            "HSCAN h 0 NOVALUES FOO",
            "HSCAN missing 0 NOVALUES",
            "HSCAN missing 0 FOO",
            "SADD s a b",
            "SSCAN s 0 NOVALUES",
            "SSCAN s 0 COUNT 0 NOVALUES",
            "SSCAN s 0 NOVALUES COUNT 0",
            "SSCAN missing 0 NOVALUES",
            "ZADD z 1 a",
            "ZSCAN z 0 NOVALUES",
            "ZSCAN z 0 MATCH * NOVALUES",
            "ZSCAN z 0 FOO NOVALUES",
            "SCAN 0 NOVALUES",
            "SCAN 0 COUNT 1 NOVALUES",
            "SCAN 0 NOVALUES COUNT",
            "SCAN 0 FOO NOVALUES",
            "SET str x",
            "HSCAN str 0 NOVALUES",
            // Fields with TTLs (listpackex encoding) scan as the others.
            "HSET t a 1 b 2 c 3",
            "HEXPIRE t 1000 FIELDS 2 a c",
            "HSCAN t 0 NOVALUES",
            "HSCAN t 0 MATCH a NOVALUES",
            "HSCAN t 0",
        ]);
        for i in 0..300 {
            p.check_str(&format!("HSET big f{i} v{i}"));
        }
        p.check_str("OBJECT ENCODING big");
        for (count, opts) in [
            (1, "NOVALUES"),
            (7, "NOVALUES MATCH f1*"),
            (10, ""),
            (3, ""),
        ] {
            let mut cursor = "0".to_string();
            for round in 0.. {
                assert!(round < 2000, "HSCAN does not terminate");
                let r = p.check_str(&format!("HSCAN big {cursor} COUNT {count} {opts}"));
                cursor = String::from_utf8(parse_reply(&r).array()[0].bulk().to_vec()).unwrap();
                if cursor == "0" {
                    break;
                }
            }
        }
    }
}
