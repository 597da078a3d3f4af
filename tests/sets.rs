//! Differential tests (zwindow vs redis-server 7.0) of the set commands, in
//! RESP2 and RESP3: every command and option including errors and wrong
//! types, intset/hashtable encodings at the thresholds, exact reply order
//! wherever Redis's order is deterministic (intsets, and results built as
//! intsets), membership-only checks where it is hash order or random, and a
//! seeded randomized command stream.
mod common;

use std::collections::BTreeSet;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The elements of an aggregate reply as a sorted list of raw frames.
fn sorted_elems(reply: &[u8]) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let (h, mut e) = split_aggregate(reply)?;
    e.sort();
    Some((h, e))
}

/// Same command on both; the replies must be equal up to element order.
fn check_unordered(p: &mut Pair, line: &str) -> Vec<u8> {
    let (r, z) = p.both_str(line);
    if r == z {
        return r;
    }
    match (sorted_elems(&r), sorted_elems(&z)) {
        (Some(a), Some(b)) if a == b => r,
        _ => panic!(
            "zwindow differs from redis-server (unordered)\n  command: {line}\n  redis:   {}\n  zwindow: {}",
            escape(&r),
            escape(&z)
        ),
    }
}

/// The bulk strings of a flat aggregate reply.
fn bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    parse_reply(reply)
        .array()
        .iter()
        .map(|r| match r {
            Reply::Bulk(b) => b.clone(),
            other => panic!("expected bulk, got {other:?}"),
        })
        .collect()
}

/// Redis's members of `key` (from the reference server).
fn redis_members(p: &mut Pair, key: &str) -> BTreeSet<Vec<u8>> {
    let r = p.r.cmd_str(&format!("SMEMBERS {key}"));
    bulks(&r).into_iter().collect()
}

#[test]
fn basic_commands() {
    in_both_protocols(|p| {
        p.script(&[
            "SADD s 3 1 2",
            "SADD s 2 4",
            "SADD s",
            "SCARD s",
            "SCARD missing",
            "SISMEMBER s 1",
            "SISMEMBER s 9",
            "SISMEMBER s a",
            "SISMEMBER missing 1",
            "SMISMEMBER s 1 9 a 4",
            "SMISMEMBER missing 1 2",
            "SMISMEMBER s",
            "SMEMBERS s",
            "SMEMBERS missing",
            "OBJECT ENCODING s",
            "SREM s 1 9",
            "SREM s",
            "SREM missing a",
            "SMEMBERS s",
            "SREM s 2 3 4",
            "EXISTS s",
            "SADD t a",
            "OBJECT ENCODING t",
            "SADD t 1",
            "SREM t a",
            "OBJECT ENCODING t",
            "SMEMBERS t",
            "SADD n -5 0 9223372036854775807 -9223372036854775808 007 -0",
            "OBJECT ENCODING n",
            "SADD i -5 0 9223372036854775807 -9223372036854775808 12",
            "OBJECT ENCODING i",
            "SMEMBERS i",
            "SSCAN i 0",
            "SADD big 9223372036854775808",
            "OBJECT ENCODING big",
            "SISMEMBER i 012",
            "SISMEMBER i 12",
        ]);
    });
}

#[test]
fn intset_threshold() {
    in_both_protocols(|p| {
        for i in 0..512 {
            p.check_str(&format!("SADD s {}", i * 3 - 700));
        }
        p.check_str("OBJECT ENCODING s");
        p.check_str("SMEMBERS s");
        p.check_str("SSCAN s 0 COUNT 5");
        p.check_str("SADD s 100000");
        p.check_str("OBJECT ENCODING s");
        check_unordered(p, "SMEMBERS s");
        check_unordered(p, "SPOP s 600");
        p.check_str("CONFIG SET set-max-intset-entries 3");
        p.script(&[
            "SADD c 1 2 3",
            "OBJECT ENCODING c",
            "SADD c 4",
            "OBJECT ENCODING c",
            "SREM c 1 2 3",
            "OBJECT ENCODING c",
            "SADD d 1 2 3 4",
            "OBJECT ENCODING d",
            "SUNIONSTORE u c d",
            "OBJECT ENCODING u",
            "SINTERSTORE u c d",
            "OBJECT ENCODING u",
            "SMEMBERS u",
            "CONFIG SET set-max-intset-entries 512",
        ]);
        p.check_str("CONFIG SET set-max-intset-entries 0");
        p.script(&["SADD z 1", "OBJECT ENCODING z"]);
        p.check_str("CONFIG SET set-max-intset-entries 512");
    });
}

#[test]
fn spop_and_srandmember() {
    in_both_protocols(|p| {
        p.script(&[
            "SPOP missing",
            "SPOP missing 3",
            "SPOP missing 0",
            "SPOP missing -1",
            "SPOP missing abc",
            "SPOP s 1 2",
            "SRANDMEMBER missing",
            "SRANDMEMBER missing 5",
            "SRANDMEMBER missing -5",
            "SRANDMEMBER missing 0",
            "SRANDMEMBER missing abc",
            "SRANDMEMBER missing -9223372036854775808",
            "SRANDMEMBER s 1 2",
            "SADD s 5 1 3",
            "SRANDMEMBER s 3",
            "SRANDMEMBER s 100",
            "SRANDMEMBER s 0",
            "SRANDMEMBER s -9223372036854775808",
            "SPOP s 0",
            "SPOP s -1",
            "SPOP s 1.5",
            "SPOP s 3",
            "EXISTS s",
            "SADD one x",
            "SPOP one",
            "EXISTS one",
            "SADD one x",
            "SRANDMEMBER one",
            "SRANDMEMBER one -3",
            "SRANDMEMBER one 1",
            "SPOP one 1",
            "EXISTS one",
        ]);
        // Random picks: compare shape and membership against Redis's set.
        p.check_str("SADD r a b c d e f g h 1 2");
        let members = redis_members(p, "r");
        for (line, want, distinct) in [
            ("SRANDMEMBER r 4", 4, true),
            ("SRANDMEMBER r 9", 9, true),
            ("SRANDMEMBER r -25", 25, false),
            ("SRANDMEMBER r 1", 1, true),
        ] {
            let z = bulks(&p.z.cmd_str(line));
            let r = bulks(&p.r.cmd_str(line));
            assert_eq!(z.len(), want, "{line}");
            assert_eq!(r.len(), want, "{line}");
            assert!(z.iter().all(|m| members.contains(m)), "{line}: {z:?}");
            if distinct {
                assert_eq!(z.iter().collect::<BTreeSet<_>>().len(), want, "{line}");
            }
        }
        for _ in 0..5 {
            let z = p.z.cmd_str("SRANDMEMBER r");
            assert!(members.contains(parse_reply(&z).bulk()));
        }
        // SPOP on zwindow, then the same members removed from Redis.
        for count in [3, 1] {
            let z = bulks(&p.z.cmd_str(&format!("SPOP r {count}")));
            assert_eq!(z.len(), count);
            let mut cmd: Vec<&[u8]> = vec![b"SREM", b"r"];
            cmd.extend(z.iter().map(|m| m.as_slice()));
            let removed = parse_reply(&p.r.cmd(&cmd)).int();
            assert_eq!(
                removed, count as i64,
                "SPOP returned non-members or repeats: {z:?}"
            );
        }
        let z = p.z.cmd_str("SPOP r");
        let m = parse_reply(&z).bulk().to_vec();
        assert_eq!(parse_reply(&p.r.cmd(&[b"SREM", b"r", &m])).int(), 1);
        check_unordered(p, "SMEMBERS r");
        p.check_str("SCARD r");
        check_unordered(p, "SPOP r 100");
        p.check_str("EXISTS r");
    });
}

#[test]
fn smove() {
    in_both_protocols(|p| {
        p.script(&[
            "SADD a 1 2 x",
            "SADD b 3",
            "SMOVE a b 1",
            "SMEMBERS b",
            "SMOVE a b 9",
            "SMOVE a b x",
            "OBJECT ENCODING b",
            "SMOVE missing b 1",
            "SET str v",
            "SMOVE missing str 1",
            "SMOVE a str 2",
            "SMOVE str a 2",
            "SMOVE a a 2",
            "SMOVE a a 9",
            "SMOVE a newset 2",
            "EXISTS a",
            "SMEMBERS newset",
            "OBJECT ENCODING newset",
            "SADD c 5",
            "SMOVE c b 5",
            "SMOVE c b 5",
            "EXISTS c",
            "SADD d 3",
            "SMOVE d b 3",
            "EXISTS d",
            "SMOVE a b",
        ]);
        check_unordered(p, "SMEMBERS b");
    });
}

#[test]
fn set_algebra() {
    in_both_protocols(|p| {
        p.script(&[
            "SADD i1 1 2 3 4 5",
            "SADD i2 3 4 5 6",
            "SADD i3 5 4 10",
            "SADD h1 a b c 3 4",
            "SADD h2 b c d 4",
            "SET str v",
            "SINTER i1 i2",
            "SINTER i1 i2 i3",
            "SINTER i1 missing",
            "SINTER missing",
            "SINTER i1 str",
            "SINTER missing str",
            "SINTER i1",
            "SINTER i1 h1",
            "SINTERCARD 2 i1 i2",
            "SINTERCARD 3 i1 i2 i3",
            "SINTERCARD 2 i1 i2 LIMIT 2",
            "SINTERCARD 2 i1 i2 LIMIT 0",
            "SINTERCARD 2 i1 i2 LIMIT 100",
            "SINTERCARD 2 i1 h1",
            "SINTERCARD 2 h1 h2",
            "SINTERCARD 1 missing",
            "SINTERCARD 2 i1 str",
            "SINTERCARD 0 i1",
            "SINTERCARD -1 i1",
            "SINTERCARD abc i1",
            "SINTERCARD 3 i1 i2",
            "SINTERCARD 1 i1 LIMIT -1",
            "SINTERCARD 1 i1 LIMIT abc",
            "SINTERCARD 1 i1 LIMIT",
            "SINTERCARD 1 i1 FOO 1",
            "SINTERCARD 1 i1 LIMIT 1 LIMIT 2",
            "SINTERCARD 1",
            "SINTERSTORE d i1 i2",
            "SMEMBERS d",
            "OBJECT ENCODING d",
            "SINTERSTORE d h1 h2",
            "OBJECT ENCODING d",
            "SINTERSTORE d i1 missing",
            "EXISTS d",
            "SINTERSTORE d i1 str",
            "SINTERSTORE str i1 i2",
            "TYPE str",
            "SET str v",
            "SUNION i1 i2 i3",
            "SUNION i1 missing",
            "SUNION missing",
            "SUNION i1 str",
            "SUNIONSTORE u i1 i2",
            "SMEMBERS u",
            "OBJECT ENCODING u",
            "SUNIONSTORE u missing",
            "EXISTS u",
            "SDIFF i1 i2",
            "SDIFF i1 i2 i3",
            "SDIFF i1 i1",
            "SDIFF i1 missing",
            "SDIFF missing i1",
            "SDIFF i1 str",
            "SDIFFSTORE df i1 i2",
            "SMEMBERS df",
            "SDIFFSTORE df i1 i1",
            "EXISTS df",
            "SDIFFSTORE df h1 h2 i1",
            "OBJECT ENCODING df",
            "SMEMBERS df",
            "SINTERSTORE",
            "SINTERSTORE d",
            "SUNIONSTORE d",
            "SDIFFSTORE d",
            "SINTER",
            "SUNION",
            "SDIFF",
        ]);
        for line in [
            "SUNION h1 h2",
            "SUNION i1 h2",
            "SINTER h1 h2",
            "SDIFF h1 i2",
            "SDIFF h1 h2",
            "SDIFF h1 i1",
            "SMEMBERS h1",
        ] {
            check_unordered(p, line);
        }
        p.script(&["SUNIONSTORE u h1 h2", "OBJECT ENCODING u", "SCARD u"]);
        // A store replaces any value type and drops the TTL.
        p.script(&[
            "SET dst v EX 100",
            "SUNIONSTORE dst i1",
            "TTL dst",
            "TYPE dst",
        ]);
    });
}

#[test]
fn sscan() {
    in_both_protocols(|p| {
        p.script(&[
            "SADD s 1 2 3 10 20",
            "SSCAN s 0",
            "SSCAN s 0 MATCH 1*",
            "SSCAN s 0 MATCH *0 COUNT 1",
            "SSCAN s 7",
            "SSCAN s -1",
            "SSCAN s +0",
            "SSCAN s ''",
            "SSCAN s 18446744073709551615",
            "SSCAN s 18446744073709551616",
            "SSCAN s abc",
            "SSCAN s ' 1'",
            "SSCAN s 1x",
            "SSCAN s +",
            "SSCAN s 0 COUNT 0",
            "SSCAN s 0 COUNT -1",
            "SSCAN s 0 COUNT abc",
            "SSCAN s 0 COUNT",
            "SSCAN s 0 MATCH",
            "SSCAN s 0 TYPE set",
            "SSCAN s 0 FOO bar",
            "SSCAN missing 0",
            "SSCAN missing abc",
            "SET str v",
            "SSCAN str 0",
            "SSCAN str abc",
            "SSCAN s",
        ]);
        // A hashtable set: a full iteration returns every member.
        for i in 0..300 {
            p.check_str(&format!("SADD h m{i}"));
        }
        let want = redis_members(p, "h");
        let mut got = BTreeSet::new();
        let mut cursor = "0".to_string();
        let mut rounds = 0;
        loop {
            let r = parse_reply(&p.z.cmd_str(&format!("SSCAN h {cursor} COUNT 7")));
            let parts = r.array();
            cursor = String::from_utf8(parts[0].bulk().to_vec()).unwrap();
            for m in parts[1].array() {
                got.insert(m.bulk().to_vec());
            }
            rounds += 1;
            assert!(rounds < 1000, "SSCAN does not terminate");
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(got, want);
        // MATCH filters a table scan too.
        let r = parse_reply(&p.z.cmd_str("SSCAN h 0 MATCH m1? COUNT 1000"));
        let mut got: Vec<_> = r.array()[1]
            .array()
            .iter()
            .map(|m| m.bulk().to_vec())
            .collect();
        got.sort();
        let mut want: Vec<Vec<u8>> = (10..20).map(|i| format!("m{i}").into_bytes()).collect();
        want.sort();
        assert_eq!(got, want);
    });
}

#[test]
fn wrong_types_and_arity() {
    in_both_protocols(|p| {
        p.script(&["SET str v", "HSET h f v"]);
        for key in ["str", "h"] {
            for cmd in [
                "SADD {} a",
                "SREM {} a",
                "SCARD {}",
                "SISMEMBER {} a",
                "SMISMEMBER {} a b",
                "SMEMBERS {}",
                "SPOP {}",
                "SPOP {} 2",
                "SPOP {} -2",
                "SRANDMEMBER {}",
                "SRANDMEMBER {} 2",
                "SRANDMEMBER {} abc",
                "SINTER {}",
                "SINTERCARD 1 {}",
                "SINTERSTORE d {}",
                "SUNION {}",
                "SUNIONSTORE d {}",
                "SDIFF {}",
                "SDIFFSTORE d {}",
                "SSCAN {} 0",
            ] {
                p.check_str(&cmd.replace("{}", key));
            }
        }
        p.script(&[
            "SADD",
            "SADD s",
            "SREM s",
            "SCARD",
            "SCARD a b",
            "SISMEMBER s",
            "SMISMEMBER s",
            "SMEMBERS",
            "SMEMBERS a b",
            "SPOP",
            "SRANDMEMBER",
            "SMOVE a b",
            "SSCAN s",
        ]);
    });
}

/// A seeded random stream over a few keys and members (some integers, so
/// sets move between intset and hashtable). Hash-ordered replies compare
/// as multisets; random ones are checked for shape and membership.
#[test]
fn randomized_stream() {
    in_both_protocols(|p| {
        p.check_str("CONFIG SET set-max-intset-entries 6");
        let mut rng = StdRng::seed_from_u64(0x5e75);
        let keys = ["a", "b", "c"];
        let members = ["1", "2", "3", "5", "8", "13", "-4", "x", "y", "z", "07"];
        for _ in 0..3000 {
            let k = keys[rng.random_range(0..keys.len())];
            let k2 = keys[rng.random_range(0..keys.len())];
            let k3 = keys[rng.random_range(0..keys.len())];
            let pick = |rng: &mut StdRng| members[rng.random_range(0..members.len())];
            let (m1, m2, m3) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
            match rng.random_range(0..20) {
                0..=3 => {
                    p.check_str(&format!("SADD {k} {m1} {m2} {m3}"));
                }
                4 | 5 => {
                    p.check_str(&format!("SREM {k} {m1} {m2}"));
                }
                6 => {
                    p.check_str(&format!("SCARD {k}"));
                }
                7 => {
                    p.check_str(&format!("SMISMEMBER {k} {m1} {m2}"));
                }
                8 => {
                    p.check_str(&format!("SMOVE {k} {k2} {m1}"));
                }
                9 => {
                    p.check_str(&format!("OBJECT ENCODING {k}"));
                }
                10 => {
                    let enc = p.check_str(&format!("OBJECT ENCODING {k}"));
                    if enc.starts_with(b"$6\r\nintset") {
                        p.check_str(&format!("SMEMBERS {k}"));
                    } else {
                        check_unordered(p, &format!("SMEMBERS {k}"));
                    }
                }
                11 => {
                    // Results are built as new sets: Redis 7.2+ starts an
                    // intset only when every input is one (else a table),
                    // and an all-integer result small enough to stay an
                    // intset has Redis's exact order.
                    let op = ["SUNION", "SDIFF"][rng.random_range(0..2)];
                    let line = format!("{op} {k} {k2} {k3}");
                    let all_intsets = [k, k2, k3].iter().all(|key| {
                        let enc = p.check_str(&format!("OBJECT ENCODING {key}"));
                        enc.starts_with(b"$6\r\nintset") || enc.starts_with(b"$-1")
                    });
                    let r = check_unordered(p, &line);
                    let elems = bulks(&r);
                    let ints = all_intsets
                        && elems.len() <= 6
                        && elems.iter().all(|e| {
                            std::str::from_utf8(e)
                                .is_ok_and(|s| s.parse::<i64>().is_ok_and(|n| n.to_string() == s))
                        });
                    if ints {
                        p.check_str(&line);
                    }
                }
                12 => {
                    check_unordered(p, &format!("SINTER {k} {k2}"));
                }
                13 => {
                    p.check_str(&format!(
                        "SINTERCARD 2 {k} {k2} LIMIT {}",
                        rng.random_range(0..3)
                    ));
                }
                14 => {
                    let op = ["SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE"][rng.random_range(0..3)];
                    p.check_str(&format!("{op} {k} {k2} {k3}"));
                    p.check_str(&format!("OBJECT ENCODING {k}"));
                }
                15 => {
                    // SPOP on zwindow; mirror the removal on Redis.
                    let z = p.z.cmd_str(&format!("SPOP {k}"));
                    match parse_reply(&z) {
                        Reply::Nil => {
                            assert_eq!(parse_reply(&p.r.cmd_str(&format!("EXISTS {k}"))).int(), 0);
                        }
                        Reply::Bulk(m) => {
                            let removed = p.r.cmd(&[b"SREM", k.as_bytes(), &m]);
                            assert_eq!(parse_reply(&removed).int(), 1, "SPOP gave a non-member");
                        }
                        Reply::Error(e) => {
                            let r = p.r.cmd_str(&format!("TYPE {k}"));
                            assert!(e.starts_with("WRONGTYPE") && !r.starts_with(b"+set"));
                        }
                        other => panic!("SPOP: {other:?}"),
                    }
                }
                16 => {
                    let count: i64 = rng.random_range(-4..6);
                    let line = format!("SRANDMEMBER {k} {count}");
                    let set = redis_members(p, k);
                    let z = bulks(&p.z.cmd_str(&line));
                    let want = if count < 0 {
                        if set.is_empty() {
                            0
                        } else {
                            count.unsigned_abs() as usize
                        }
                    } else {
                        (count as usize).min(set.len())
                    };
                    assert_eq!(z.len(), want, "{line}");
                    assert!(z.iter().all(|m| set.contains(m)), "{line}");
                    if count > 0 {
                        assert_eq!(z.iter().collect::<BTreeSet<_>>().len(), want, "{line}");
                    }
                }
                17 => {
                    // Only an intset's SSCAN order and cursor are Redis's.
                    let enc = p.check_str(&format!("OBJECT ENCODING {k}"));
                    if enc.starts_with(b"$6\r\nintset") {
                        p.check_str(&format!("SSCAN {k} 0 MATCH {m1}"));
                    }
                }
                18 => {
                    p.check_str(&format!("DEL {k}"));
                }
                _ => {
                    p.check_str(&format!("SISMEMBER {k} {m1}"));
                }
            }
        }
        p.check_str("CONFIG SET set-max-intset-entries 512");
    });
}
