//! Differential tests (zwindow vs redis-server 7.0) of the string commands:
//! SET variants, GETSET/GETDEL/GETEX, MGET/MSET/MSETNX, APPEND, STRLEN,
//! GETRANGE/SUBSTR, SETRANGE, INCR/DECR family and INCRBYFLOAT (whose
//! replies are compared byte for byte, not numerically), OBJECT ENCODING,
//! keyspace notifications, and a randomized command stream; each in RESP2
//! and RESP3.
mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Like `Pair::check_str`, but the replies must be byte-identical (no
/// numeric comparison of floats): INCRBYFLOAT prints Redis 7.0's exact digits.
fn check_exact(p: &mut Pair, line: &str) {
    let (r, z) = p.both_str(line);
    assert_eq!(
        escape(&r),
        escape(&z),
        "byte mismatch for {line}\n  redis:   {}\n  zwindow: {}",
        escape(&r),
        escape(&z)
    );
}

#[test]
fn set_family() {
    in_both_protocols(|p| {
        p.script(&[
            "SETNX k v",
            "SETNX k w",
            "GET k",
            "SETEX k 100 v2",
            "TTL k",
            "SETEX k 0 v",
            "SETEX k -1 v",
            "SETEX k abc v",
            "SETEX k 9223372036854775807 v",
            "SETEX k 9223372036854775 v",
            "PSETEX k 9223372036854775807 v",
            "PSETEX k 100000 v3",
            "GET k",
            "PSETEX k 0 v",
            "SETEX k 10",
            "SETNX k",
            "GETSET k new",
            "GETSET missing x",
            "GET missing",
            "GETDEL k",
            "GETDEL k",
            "EXISTS k",
            "SET k v EX 10 EX 20",
            "TTL k",
            "SET k v EX abc FOO",
            "SET k v EX 10 PX 100",
            "SET k v KEEPTTL EX 10",
            "SET k v NX XX",
            "SET k v XX NX",
            "SET k v GET GET",
            "SET k v PERSIST",
            "SET k v EX",
            "SET k v EX 0",
            "SET k v PXAT 1",
            "EXISTS k",
            "SET k v2 XX GET",
            "SET k v3 NX GET",
            "SET nk v3 XX GET",
            "EXISTS nk",
        ]);
    });
}

#[test]
fn getex_options() {
    in_both_protocols(|p| {
        p.script(&[
            "SET k v",
            "GETEX k",
            "TTL k",
            "GETEX k EX 100",
            "TTL k",
            "GETEX k PX 200000",
            "TTL k",
            "GETEX k EXAT 4102444800",
            "TTL k",
            "GETEX k PERSIST",
            "TTL k",
            "GETEX k PERSIST",
            "GETEX k PXAT 4102444800123",
            "PEXPIRETIME k",
            "GETEX k EX 0",
            "GETEX k EX -5",
            "GETEX k EX abc",
            "GETEX k EX 9223372036854775807",
            "GETEX k EX 10 PX 10",
            "GETEX k EX 10 EX 20",
            "TTL k",
            "GETEX k PERSIST EX 10",
            "GETEX k EX 10 PERSIST",
            "GETEX k KEEPTTL",
            "GETEX k NX",
            "GETEX k EX",
            "GETEX k FOO",
            "GETEX missing EX 10",
            "GETEX missing EX abc",
            "GETEX k EXAT 1",
            "EXISTS k",
            "SET k v",
            "GETEX k PXAT 1",
            "EXISTS k",
        ]);
    });
}

#[test]
fn mget_mset_msetnx() {
    in_both_protocols(|p| {
        p.script(&[
            "MSET a 1 b 2 c 3",
            "MGET a b c missing",
            "MSET a",
            "MSET a 1 b",
            "MSETNX a 1 b",
            "MSETNX x 1 y 2",
            "MSETNX x 1 z 2",
            "MGET x y z",
            "MSET a 1 a 2",
            "GET a",
            "MSETNX q 1 q 2",
            "GET q",
            "MGET a",
            "MGET",
            "MSET",
            "OBJECT ENCODING a",
            "MSET big 12345678901234567890123 emb hello",
            "OBJECT ENCODING big",
            "OBJECT ENCODING emb",
        ]);
    });
}

#[test]
fn append_strlen_getrange_setrange() {
    in_both_protocols(|p| {
        let long = "x".repeat(50);
        p.script(&[
            "APPEND k hello",
            "OBJECT ENCODING k",
            "APPEND k ' world'",
            "GET k",
            "OBJECT ENCODING k",
            "STRLEN k",
            "STRLEN missing",
            "APPEND n 123",
            "OBJECT ENCODING n",
            "APPEND n 4",
            "OBJECT ENCODING n",
            "GET n",
            "APPEND n ''",
            "SET i 12",
            "APPEND i ''",
            "OBJECT ENCODING i",
            "GETRANGE k 0 4",
            "GETRANGE k -5 -1",
            "GETRANGE k 6 100",
            "GETRANGE k -100 2",
            "GETRANGE k 5 3",
            "GETRANGE k -1 -5",
            "GETRANGE k 0 -1",
            "GETRANGE k 0 -100",
            "GETRANGE k 100 200",
            "GETRANGE missing 0 -1",
            "GETRANGE k a 1",
            "GETRANGE k 0 b",
            "GETRANGE k -9223372036854775808 9223372036854775807",
            "SUBSTR k 1 3",
            "SET num 12345",
            "GETRANGE num 1 2",
            "SET e ''",
            "GETRANGE e 0 -1",
            "GETRANGE e 0 0",
            "SETRANGE k 6 WORLD",
            "GET k",
            "SETRANGE k 20 !",
            "GET k",
            "STRLEN k",
            "SETRANGE k -1 x",
            "SETRANGE k abc x",
            "SETRANGE k 3 ''",
            "SETRANGE nk 3 ''",
            "EXISTS nk",
            "SETRANGE nk 3 abc",
            "GET nk",
            "OBJECT ENCODING nk",
            "SET s2 42",
            "SETRANGE s2 0 ''",
            "OBJECT ENCODING s2",
            "SETRANGE s2 0 5",
            "OBJECT ENCODING s2",
            "GET s2",
            "SETRANGE big 536870912 x",
            "SETRANGE big 536870911 xy",
            "SETRANGE big 9223372036854775807 x",
            "EXISTS big",
            "SET t 1",
            "SETRANGE t 536870911 xy",
        ]);
        p.check_str(&format!("SET l {long}"));
        p.check_str("OBJECT ENCODING l");
        p.check_str(&format!("SET l44 {}", "y".repeat(44)));
        p.check_str("OBJECT ENCODING l44");
        p.check_str(&format!("SET l45 {}", "y".repeat(45)));
        p.check_str("OBJECT ENCODING l45");
    });
}

#[test]
fn incr_decr_family() {
    in_both_protocols(|p| {
        p.script(&[
            "INCR c",
            "INCR c",
            "DECR c",
            "INCRBY c 10",
            "DECRBY c 3",
            "OBJECT ENCODING c",
            "INCRBY c abc",
            "INCRBY c 1.5",
            "INCRBY c ''",
            "DECRBY c -9223372036854775808",
            "INCRBY c 9223372036854775807",
            "SET c 9223372036854775807",
            "INCR c",
            "SET c -9223372036854775808",
            "DECR c",
            "INCRBY c -1",
            "DECRBY c 1",
            "SET c 10",
            "DECRBY c 9223372036854775807",
            "SET f 1.5",
            "INCR f",
            "SET f ' 1'",
            "INCR f",
            "SET f 01",
            "INCR f",
            "SET f -0",
            "INCR f",
            "SET f 99999999999999999999",
            "INCR f",
            "SET t 5",
            "EXPIRE t 100",
            "INCR t",
            "TTL t",
            "SETRANGE r 0 12",
            "OBJECT ENCODING r",
            "INCR r",
            "OBJECT ENCODING r",
            "INCRBY neg -5",
            "DECR neg2",
            "INCRBY k 9223372036854775808",
        ]);
    });
}

#[test]
fn incrbyfloat_exact_digits() {
    in_both_protocols(|p| {
        // Single increments from a missing key, compared byte for byte.
        for by in [
            "0.1",
            "1000.1",
            "10000000000.1",
            "123456789.123",
            "3.0e3",
            "5.0e3",
            "-0.0",
            "1.5e-20",
            "-1.5e-20",
            "0x10",
            "0x1.8p1",
            "0.000003814697265625",
            "99999999999999999999",
            "1e308",
            "1e400",
            "-1e400",
            "2.5",
            "-2.5",
            "1e-17",
            "5e-18",
            "1.23456789012345678901234567890",
            "+7",
            ".5",
            "5.",
            "9223372036854775807",
            "-9223372036854775808",
            "1E+10",
            "3.14159265358979323846",
        ] {
            p.check_str("DEL k");
            check_exact(p, &format!("INCRBYFLOAT k {by}"));
            check_exact(p, "GET k");
            check_exact(p, "OBJECT ENCODING k");
        }
        // Chains of increments.
        p.check_str("DEL k");
        for by in [
            "0.1", "0.1", "0.1", "0.2", "-0.5", "10.5", "1e10", "-1e10", "0.3", "1000.1",
            "-1000.1", "7", "-3.25",
        ] {
            check_exact(p, &format!("INCRBYFLOAT k {by}"));
        }
        for line in [
            "SET s 10.50",
            "INCRBYFLOAT s 0.1",
            "INCRBYFLOAT s -5",
            "SET s 5.0e3",
            "INCRBYFLOAT s 2.0e2",
            "SET s 1",
            "INCRBYFLOAT s 1",
            "OBJECT ENCODING s",
            "INCR s",
            "OBJECT ENCODING s",
            "INCRBYFLOAT s inf",
            "INCRBYFLOAT s -inf",
            "INCRBYFLOAT s nan",
            "INCRBYFLOAT s abc",
            "INCRBYFLOAT s ''",
            "INCRBYFLOAT s ' 1'",
            "INCRBYFLOAT s 1e",
            "INCRBYFLOAT s 1e-5000",
            "INCRBYFLOAT s 1e5000",
            "SET s abc",
            "INCRBYFLOAT s 1",
            "INCRBYFLOAT s abc",
            "SET s inf",
            "INCRBYFLOAT s 1",
            "SET s 1e4932",
            "INCRBYFLOAT s 1e4932",
            "SET t 1",
            "EXPIRE t 100",
            "INCRBYFLOAT t 0.5",
            "TTL t",
        ] {
            check_exact(p, line);
        }
    });
}

#[test]
fn wrong_types() {
    in_both_protocols(|p| {
        p.script(&["SADD s a", "HSET h f v"]);
        for key in ["s", "h"] {
            for cmd in [
                "GET {}",
                "GETSET {} v",
                "GETDEL {}",
                "GETEX {}",
                "GETEX {} EX abc",
                "APPEND {} x",
                "STRLEN {}",
                "GETRANGE {} 0 1",
                "GETRANGE {} a 1",
                "SETRANGE {} 0 x",
                "SETRANGE {} 0 ''",
                "SETRANGE {} -1 x",
                "INCR {}",
                "DECR {}",
                "INCRBY {} 1",
                "INCRBY {} x",
                "DECRBY {} 1",
                "INCRBYFLOAT {} 1",
                "INCRBYFLOAT {} x",
                "SET {} v GET",
                "SETNX {} v",
                "MSETNX {} v",
                "MGET {} missing",
                "TYPE {}",
            ] {
                p.check_str(&cmd.replace("{}", key));
            }
        }
        p.script(&["SET s v", "TYPE s", "GET s"]);
    });
}

#[test]
fn arity_errors() {
    in_both_protocols(|p| {
        p.script(&[
            "SETNX k",
            "SETEX k 1",
            "PSETEX k 1",
            "GETSET k",
            "GETDEL",
            "GETDEL a b",
            "GETEX",
            "MGET",
            "APPEND k",
            "STRLEN",
            "GETRANGE k 0",
            "SUBSTR k 0",
            "SETRANGE k 0",
            "INCR",
            "INCR a b",
            "DECR",
            "INCRBY k",
            "DECRBY k",
            "INCRBYFLOAT k",
        ]);
    });
}

/// Keyspace notifications carry Redis's exact event names.
#[test]
fn keyspace_events() {
    let s = Servers::start();
    let mut p = s.pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut subs = s.pair();
    subs.check_str("PSUBSCRIBE __keyevent@0__:*");
    let script = [
        "SET a 1",
        "SETNX b 2",
        "SETEX c 100 3",
        "PSETEX d 100000 4",
        "GETSET a 5",
        "APPEND a x",
        "SETRANGE a 0 y",
        "SETRANGE a 0 ''",
        "INCR n",
        "DECRBY n 2",
        "INCRBYFLOAT n 1.5",
        "MSET m1 a m2 b",
        "MSETNX m3 a",
        "GETEX a EX 100",
        "GETEX a PERSIST",
        "GETEX a PERSIST",
        "GETDEL a",
        "SET e v",
        "GETEX e PXAT 1",
        "SET f v PXAT 1",
        "SET g v KEEPTTL",
        "PING",
    ];
    for line in script {
        p.check_str(line);
    }
    // Read notifications until the PING-free marker: compare the streams.
    p.check_str("SET zz__end 1");
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

/// A seeded random stream of string commands over a few keys; every reply
/// must match (INCRBYFLOAT byte-exactly).
#[test]
fn randomized_stream() {
    in_both_protocols(|p| {
        let mut rng = StdRng::seed_from_u64(0x5717_1265);
        let keys = ["a", "b", "c", "d"];
        let values = [
            "",
            "0",
            "1",
            "-7",
            "12",
            "abc",
            "3.5",
            "9223372036854775806",
            "x y",
        ];
        for _ in 0..2500 {
            let k = keys[rng.random_range(0..keys.len())];
            let k2 = keys[rng.random_range(0..keys.len())];
            let v = values[rng.random_range(0..values.len())];
            let n: i64 = rng.random_range(-20..20);
            let line = match rng.random_range(0..22) {
                0 => format!("SET {k} '{v}'"),
                1 => format!("SETNX {k} '{v}'"),
                2 => format!("GET {k}"),
                3 => format!("GETSET {k} '{v}'"),
                4 => format!("GETDEL {k}"),
                5 => format!("APPEND {k} '{v}'"),
                6 => format!("STRLEN {k}"),
                7 => format!("GETRANGE {k} {n} {}", rng.random_range(-20..20)),
                8 => format!("SETRANGE {k} {} '{v}'", rng.random_range(0..12)),
                9 => format!("INCR {k}"),
                10 => format!("DECRBY {k} {n}"),
                11 => format!(
                    "INCRBY {k} {}",
                    rng.random_range(-2..=2) * 4611686018427387903i64
                ),
                12 => format!(
                    "INCRBYFLOAT {k} {}",
                    ["0.1", "-1.5", "3e2", "1000.1", "-0.3"][rng.random_range(0..5)]
                ),
                13 => format!("MSET {k} '{v}' {k2} 1"),
                14 => format!("MSETNX {k} '{v}' {k2} 2"),
                15 => format!("MGET {k} {k2} nope"),
                16 => format!("OBJECT ENCODING {k}"),
                17 => format!("EXISTS {k}"),
                18 => format!("GETEX {k} PERSIST"),
                19 => format!("DEL {k}"),
                20 => format!("SADD {k} m"),
                _ => format!("SET {k} '{v}' GET"),
            };
            check_exact(p, &line);
        }
    });
}
