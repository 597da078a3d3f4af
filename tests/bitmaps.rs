//! Differential tests (zwindow vs redis-server 7.0) of the bitmap commands
//! (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) and
//! LCS: fixed scripts of edge cases and errors, keyspace notifications, and
//! a seeded random stream that mixes them with SET/APPEND/SETRANGE/INCR/
//! GETRANGE/STRLEN on the same keys (int-encoded values included); each in
//! RESP2 and RESP3.
mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn setbit_getbit() {
    in_both_protocols(|p| {
        p.script(&[
            "SETBIT k 7 1",
            "SETBIT k 7 1",
            "SETBIT k 7 0",
            "GETBIT k 7",
            "GETBIT k 100000",
            "GET k",
            "OBJECT ENCODING k",
            "SETBIT k 4294967295 0",
            "STRLEN k",
            "DEL k",
            "SETBIT k 4294967296 1",
            "SETBIT k -1 1",
            "SETBIT k x 1",
            "SETBIT k 1 2",
            "SETBIT k 1 -1",
            "SETBIT k 1 x",
            "GETBIT k -1",
            "GETBIT k 4294967296",
            "SET i 12345",
            "GETBIT i 2",
            "SETBIT i 0 1",
            "OBJECT ENCODING i",
            "GET i",
            "INCR i",
            "SET j 7",
            "SETBIT j 2 1",
            "INCR j",
            "OBJECT ENCODING j",
            "LPUSH l a",
            "SETBIT l 0 1",
            "GETBIT l 0",
        ]);
    });
}

#[test]
fn bitcount_bitpos() {
    in_both_protocols(|p| {
        p.script(&[
            // Redis 7.2+: the range is checked before the key, so a missing
            // key with a bad range is an error, not 0 / -1.
            "BITCOUNT nokey 0",
            "BITCOUNT nokey a b",
            "BITCOUNT nokey 0 1 nybble",
            "BITPOS nokey 0 1 hello hello2",
            "BITPOS nokey 0 a b",
            "BITPOS nokey 1 0 1 nybble",
            "BITPOS nokey 1 0 1 bit",
            "SET s foobar",
            "BITCOUNT s",
            "BITCOUNT s 1 1",
            "BITCOUNT s 1",
            "BITCOUNT s 1 2 3 4",
            "BITCOUNT s 0 -1 BIT",
            "BITCOUNT s 5 30 bit",
            "BITCOUNT s 7 7 BIT",
            "BITCOUNT s -3 -1 BYTE",
            "BITCOUNT s -1 -2",
            "BITCOUNT s -1 -2 foo",
            "BITCOUNT s 0 1 foo",
            "BITCOUNT s a 1",
            "BITCOUNT s -100 100",
            "BITCOUNT missing 0 1 foo",
            "BITCOUNT missing a",
            "BITPOS s 1",
            "BITPOS s 0",
            "BITPOS s 2",
            "BITPOS s x",
            "BITPOS missing 1",
            "BITPOS missing 0",
            "BITPOS missing 0 x",
            "BITPOS s 1 2",
            "BITPOS s 0 2 -1",
            "BITPOS s 1 7 15 BIT",
            "BITPOS s 0 7 15 bit",
            "BITPOS s 1 7 15 foo",
            "BITPOS s 1 100",
            "BITPOS s 1 1 2 BIT extra",
            "SET ff \"\\xff\\xff\\xff\"",
            "BITPOS ff 0",
            "BITPOS ff 0 1",
            "BITPOS ff 0 0 -1",
            "BITPOS ff 0 3 9 BIT",
            "BITPOS ff 1 3 9 BIT",
            "SET z \"\\x00\\x00\\x01\"",
            "BITPOS z 1",
            "BITPOS z 1 0 1",
            "BITPOS z 0 23 23 BIT",
            "SET e \"\"",
            "BITPOS e 0",
            "BITPOS e 1",
            "BITCOUNT e",
            "BITCOUNT e 0 -1 BIT",
            "SET n 1234",
            "BITCOUNT n",
            "BITPOS n 1 1",
            "HSET h f v",
            "BITCOUNT h",
            "BITPOS h 1",
        ]);
    });
}

#[test]
fn bitop() {
    in_both_protocols(|p| {
        p.script(&[
            "SET a \"\\xf0\\xff\\x0f\"",
            "SET b \"\\x3c\"",
            "BITOP AND d a b",
            "GET d",
            "BITOP or d a b",
            "GET d",
            "BITOP XOR d a b missing",
            "GET d",
            "BITOP NOT d a",
            "GET d",
            "OBJECT ENCODING d",
            "BITOP NOT d a b",
            "BITOP nand d a",
            "SET d x EX 100",
            "BITOP AND d missing missing2",
            "EXISTS d",
            "SET d x EX 100",
            "BITOP OR d a",
            "TTL d",
            "LPUSH l x",
            "BITOP AND d a l",
            "BITOP AND l a",
            "TYPE l",
            "SET i 42",
            "BITOP NOT d i",
            "GET d",
        ]);
    });
}

#[test]
fn bitfield() {
    in_both_protocols(|p| {
        p.script(&[
            "BITFIELD bf SET u8 0 255 GET u8 0 INCRBY u8 0 10",
            "BITFIELD bf OVERFLOW SAT INCRBY u8 0 1000 OVERFLOW FAIL INCRBY u8 0 -1000",
            "BITFIELD bf SET i8 #1 -5 GET i8 #1 GET u4 8 GET i64 0 GET u63 1",
            "BITFIELD bf GET u64 0",
            "BITFIELD bf GET i65 0",
            "BITFIELD bf GET i0 0",
            "BITFIELD bf GET x8 0",
            "BITFIELD bf GET I8 0",
            "BITFIELD bf SET U8 0 7",
            "BITFIELD bf INCRBY U8 0 1",
            "BITFIELD_RO bf GET I8 0",
            "BITFIELD bf GET \"\" 0",
            "BITFIELD bf OVERFLOW foo",
            "BITFIELD bf OVERFLOW",
            "BITFIELD bf GET u8",
            "BITFIELD bf SET u8 0",
            "BITFIELD bf SET u8 0 x",
            "BITFIELD bf FOO u8 0",
            "BITFIELD bf GET u8 #-1",
            "BITFIELD bf GET u8 -1",
            "BITFIELD bf GET u8 4294967295",
            "BITFIELD bf GET u8 4294967296",
            "BITFIELD bf GET u8 #536870911",
            "BITFIELD bf INCRBY i64 0 9223372036854775807 INCRBY i64 0 9223372036854775807",
            "BITFIELD bf OVERFLOW SAT INCRBY i64 0 9223372036854775807 INCRBY i64 0 -9223372036854775808",
            "BITFIELD bf OVERFLOW FAIL INCRBY i64 0 -9223372036854775808 INCRBY i64 0 -1",
            "BITFIELD bf OVERFLOW SAT SET u8 0 -1 GET u8 0 SET i8 0 200 GET i8 0",
            "BITFIELD bf OVERFLOW WRAP SET u8 0 -1 SET i8 0 200 GET i8 0",
            "BITFIELD bf OVERFLOW FAIL SET u8 0 256 SET i8 0 -129 GET u16 0",
            "BITFIELD bf INCRBY u63 3 -1 GET u63 3 INCRBY i1 0 1 INCRBY i1 0 1",
            "BITFIELD bf",
            "GET bf",
            "OBJECT ENCODING bf",
            "BITFIELD_RO bf GET u8 0 GET i4 3",
            "BITFIELD_RO bf SET u8 0 1",
            "BITFIELD_RO bf INCRBY u8 0 1",
            "BITFIELD_RO missing GET u8 0",
            "BITFIELD missing GET u8 0",
            "EXISTS missing",
            "BITFIELD fail OVERFLOW FAIL INCRBY u2 0 10",
            "EXISTS fail",
            "GET fail",
            "SET num 100",
            "BITFIELD num GET u8 0 SET u8 0 50 GET u8 8",
            "GET num",
            "LPUSH l a",
            "BITFIELD l GET u8 0",
            "BITFIELD l SET u8 0 1",
            "BITFIELD_RO l GET u8 0",
        ]);
    });
}

#[test]
fn lcs() {
    in_both_protocols(|p| {
        p.script(&[
            "MSET a ohmytext b mynewtext",
            "LCS a b",
            "LCS a b LEN",
            "LCS a b IDX",
            "LCS a b IDX MINMATCHLEN 4",
            "LCS a b IDX MINMATCHLEN 4 WITHMATCHLEN",
            "LCS a b idx withmatchlen",
            "LCS a b IDX LEN",
            "LCS a b LEN LEN",
            "LCS a b foo",
            "LCS a b MINMATCHLEN",
            "LCS a b MINMATCHLEN x",
            "LCS a b IDX MINMATCHLEN -3",
            "LCS a missing",
            "LCS a missing IDX",
            "LCS missing missing2 LEN",
            "LPUSH l x",
            "LCS a l",
            "LCS l a",
            "LCS l a foo",
            "SET c AAABBBCCC",
            "SET d ABCABCABCAAA",
            "LCS c d IDX WITHMATCHLEN",
            "LCS d c IDX WITHMATCHLEN",
            "SET n1 1234567",
            "SET n2 2468",
            "LCS n1 n2 IDX",
            "CONFIG SET proto-max-bulk-len 1000000",
            "SETRANGE big1 700 x",
            "SETRANGE big2 700 y",
            "LCS big1 big2 LEN",
            "SETRANGE big2 300 y",
            "LCS big2 big2 LEN",
            "CONFIG SET proto-max-bulk-len 536870912",
        ]);
    });
}

#[test]
fn keyspace_events() {
    let s = Servers::start();
    let mut p = s.pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut subs = s.pair();
    subs.check_str("PSUBSCRIBE __keyevent@0__:*");
    for line in [
        "SETBIT a 3 1",
        "SETBIT a 3 1",
        "SETBIT a 3 0",
        "SETBIT a 100 0",
        "BITFIELD b GET u8 0",
        "BITFIELD b SET u8 0 1",
        "BITFIELD b OVERFLOW FAIL INCRBY u2 0 10",
        "BITOP OR c a b",
        "BITOP AND c missing",
        "BITOP AND c missing",
        "SET zz__end 1",
    ] {
        p.check_str(line);
    }
    loop {
        let r = subs.r.read_reply();
        let z = subs.z.read_reply();
        assert!(
            replies_equivalent(&r, &z),
            "notification differs\n  redis:   {}\n  zwindow: {}",
            escape(&r),
            escape(&z)
        );
        if r.windows(8).any(|w| w == b"zz__end\r") {
            break;
        }
    }
}

/// BITCOUNT and BITPOS over a 1 MB string answer well within a test's
/// patience (u64-at-a-time loops), and SETBIT at the top offset works.
#[test]
fn large_strings() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SETRANGE big 1048575 \"\\x01\"",
        "BITCOUNT big",
        "BITPOS big 1",
        "BITPOS big 0 1000 -1",
        "BITCOUNT big 0 -1 BIT",
        "BITCOUNT big 5 8388606 BIT",
        "SETBIT big 8388600 1",
        "BITPOS big 1 -1",
        "BITOP NOT big2 big",
        "BITPOS big2 0",
        "BITCOUNT big2",
        "DEL big big2",
    ]);
    let started = std::time::Instant::now();
    for _ in 0..50 {
        p.check_str("SETRANGE big 1048575 \"\\x01\"");
        p.check_str("BITCOUNT big");
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// A seeded random stream of bitmap and string commands on four keys.
#[test]
fn randomized_stream() {
    in_both_protocols(|p| {
        let mut rng = StdRng::seed_from_u64(0xB175_0012);
        let keys = ["a", "b", "c", "d"];
        let values = [
            "",
            "0",
            "1",
            "-7",
            "12",
            "abc",
            "\"\\xff\\x00\\x0f\"",
            "foobar",
        ];
        let int = |rng: &mut StdRng| -> String {
            match rng.random_range(0..10) {
                0 => "-1".into(),
                1 => rng.random_range(-70..0).to_string(),
                2 => "x".into(),
                _ => rng.random_range(0..70).to_string(),
            }
        };
        for _ in 0..1500 {
            let k = keys[rng.random_range(0..keys.len())];
            let k2 = keys[rng.random_range(0..keys.len())];
            let v = values[rng.random_range(0..values.len())];
            let (i, j) = (int(&mut rng), int(&mut rng));
            let unit = ["", " BIT", " BYTE", " bad"][rng.random_range(0..4)];
            let ty = [
                "u8", "i8", "u1", "i1", "u16", "i13", "u63", "i64", "u5", "i3",
            ][rng.random_range(0..10)];
            let ow =
                ["", "OVERFLOW WRAP ", "OVERFLOW SAT ", "OVERFLOW FAIL "][rng.random_range(0..4)];
            let hash = if rng.random_bool(0.2) { "#" } else { "" };
            let bit = rng.random_range(0..2);
            let line = match rng.random_range(0..18) {
                0 => format!("SET {k} {v}"),
                1 => format!("APPEND {k} {v}"),
                2 => format!("SETRANGE {k} {} {v}", rng.random_range(0..12)),
                3 => format!("INCR {k}"),
                4 => format!("GETRANGE {k} {i} {j}"),
                5 => format!("STRLEN {k}"),
                6 => format!("SETBIT {k} {} {bit}", rng.random_range(0..100)),
                7 => format!("GETBIT {k} {}", rng.random_range(0..100)),
                8 => format!("BITCOUNT {k} {i} {j}{unit}"),
                9 => format!("BITCOUNT {k}"),
                10 => format!("BITPOS {k} {bit} {i} {j}{unit}"),
                11 => format!("BITPOS {k} {bit} {i}"),
                12 => format!(
                    "BITOP {} {k} {k2} {}",
                    ["AND", "OR", "XOR"][rng.random_range(0..3)],
                    keys[rng.random_range(0..4)]
                ),
                13 => format!("BITOP NOT {k} {k2}"),
                14 => format!(
                    "BITFIELD {k} {ow}{} {ty} {hash}{} {i} GET {ty} {hash}{}",
                    ["SET", "INCRBY"][rng.random_range(0..2)],
                    rng.random_range(0..40),
                    rng.random_range(0..40)
                ),
                15 => format!("BITFIELD_RO {k} GET {ty} {}", rng.random_range(0..60)),
                16 => format!(
                    "LCS {k} {k2} {}",
                    ["", "LEN", "IDX", "IDX WITHMATCHLEN MINMATCHLEN 2"][rng.random_range(0..4)]
                ),
                _ => format!("GET {k}"),
            };
            p.check_str(&line);
            if rng.random_bool(0.05) {
                p.check_str(&format!("OBJECT ENCODING {k}"));
            }
        }
    });
}
