//! Doubles in replies, byte for byte against redis-server 8.0.2.
//!
//! Redis 7.2+ prints every `addReplyDouble` with `d2string`: integers in
//! the ±2^62 window as integers, else `fpconv_dtoa`'s Grisu2 digits, which
//! are not always the shortest round-trip ones (38.76549185212588 prints
//! as `38.765491852125876`). The common harness compares doubles
//! numerically, so these tests compare raw reply bytes instead: seeded
//! random scores — random bit patterns, subnormals, tiny and huge
//! exponents, integer-valued doubles around 2^53/2^62/2^63, decimal
//! strings and their neighbouring ulps — through ZADD, ZSCORE, ZMSCORE,
//! ZRANGE WITHSCORES, ZINCRBY, ZADD INCR and ZSCAN (`%.17Lg` for a
//! skiplist), and
//! random coordinates through GEOADD + GEOPOS / GEOSEARCH WITHCOORD, in
//! RESP2 and RESP3, with both sorted-set encodings.
mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Sends `cmds` pipelined to each server, reads every reply, and asserts
/// the replies are the same bytes.
fn exact(p: &mut Pair, cmds: &[Vec<Vec<u8>>]) {
    let mut wire = Vec::new();
    for c in cmds {
        let refs: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
        wire.extend_from_slice(&encode_cmd(&refs));
    }
    p.r.send(&wire);
    let r: Vec<Vec<u8>> = cmds.iter().map(|_| p.r.read_reply()).collect();
    p.z.send(&wire);
    let z: Vec<Vec<u8>> = cmds.iter().map(|_| p.z.read_reply()).collect();
    for ((c, r), z) in cmds.iter().zip(&r).zip(&z) {
        assert!(
            r == z,
            "replies differ\n  command: {}\n  redis:   {}\n  zwindow: {}",
            c.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            escape(r),
            escape(z)
        );
    }
}

fn cmd(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// A score argument: a double printed so strtod reads it back exactly, or
/// a decimal string as a client would type it.
fn score(rng: &mut StdRng) -> String {
    let finite = |b: u64| {
        let x = f64::from_bits(b);
        x.is_finite().then_some(x)
    };
    let x = match rng.random_range(0..10) {
        // Any bit pattern.
        0 | 1 => match finite(rng.random()) {
            Some(x) => x,
            None => return "inf".into(),
        },
        // Subnormals.
        2 => f64::from_bits(rng.random::<u64>() & 0x800F_FFFF_FFFF_FFFF),
        // Tiny and huge exponents.
        3 => {
            let e: u64 = if rng.random_bool(0.5) {
                rng.random_range(1..40)
            } else {
                rng.random_range(0x7D0..0x7FF)
            };
            f64::from_bits((rng.random::<u64>() & 0x800F_FFFF_FFFF_FFFF) | (e << 52))
        }
        // Integer-valued, around the places where the integer fast path
        // stops: 2^53, 2^62 (LLONG_MAX/2), 2^63, 2^64.
        4 => {
            let base = [
                0.0,
                9007199254740992.0,
                4611686018427387904.0,
                9223372036854775808.0,
                18446744073709551616.0,
            ][rng.random_range(0..5)];
            let b: f64 = base + f64::from(rng.random_range(-3000i32..3000)) * 1024.0;
            let x = if base == 0.0 {
                f64::from(rng.random::<i32>())
            } else {
                b
            };
            let x = f64::from_bits(x.to_bits().wrapping_add(rng.random_range(0..3)));
            if rng.random_bool(0.5) { -x } else { x }
        }
        // Decimal strings as typed: a few digits, a point, an exponent.
        5 | 6 => {
            let digits = rng.random_range(1..=20);
            let mut s = String::new();
            if rng.random_bool(0.3) {
                s.push('-');
            }
            for i in 0..digits {
                s.push(char::from(b'0' + rng.random_range(u8::from(i == 0)..10)));
            }
            if digits > 1 && rng.random_bool(0.7) {
                s.insert(s.len() - rng.random_range(1..digits), '.');
            }
            if rng.random_bool(0.5) {
                s.push_str(&format!("e{}", rng.random_range(-30i32..30)));
            } else if rng.random_bool(0.1) {
                s.push_str(&format!("e{}", rng.random_range(-320i32..300)));
            }
            return s;
        }
        // The neighbours of a short decimal: Grisu2 is not shortest there.
        7 | 8 => {
            let d: f64 = format!(
                "{}.{}e{}",
                rng.random_range(1..100_000),
                rng.random_range(0..100_000),
                rng.random_range(-12i32..12)
            )
            .parse()
            .unwrap();
            f64::from_bits(d.to_bits().wrapping_add_signed(rng.random_range(-4i64..=4)))
        }
        _ => {
            return [
                "0",
                "-0",
                "inf",
                "-inf",
                "+inf",
                "0.1",
                "5e-324",
                "1.7976931348623157e308",
                "2.2250738585072014e-308",
                "38.76549185212588",
                "1e23",
                "-0.0",
            ][rng.random_range(0..12)]
            .into();
        }
    };
    format!("{x:e}")
}

fn zset_stream(s: &Servers, proto: &str, seed: u64, batches: usize) {
    let mut p = s.pair_resp(proto);
    let mut rng = StdRng::seed_from_u64(seed);
    for b in 0..batches {
        // Both encodings: listpack up to 128 members, skiplist beyond.
        let n = if b % 3 == 2 { 200 } else { 60 };
        let scores: Vec<String> = (0..n).map(|_| score(&mut rng)).collect();
        let mut cmds = vec![cmd(&["DEL", "z", "zi", "zj"])];
        let mut zadd = cmd(&["ZADD", "z"]);
        for (i, sc) in scores.iter().enumerate() {
            zadd.push(sc.as_bytes().to_vec());
            zadd.push(format!("m{i}").into_bytes());
        }
        cmds.push(zadd);
        let mut zmscore = cmd(&["ZMSCORE", "z"]);
        for (i, sc) in scores.iter().enumerate() {
            let m = format!("m{i}");
            cmds.push(cmd(&["ZSCORE", "z", &m]));
            cmds.push(cmd(&["ZINCRBY", "zi", sc, &m]));
            cmds.push(cmd(&["ZADD", "zj", "INCR", sc, &m]));
            zmscore.push(m.into_bytes());
        }
        cmds.push(zmscore);
        cmds.push(cmd(&["ZRANGE", "z", "0", "-1", "WITHSCORES"]));
        cmds.push(cmd(&["ZRANGE", "zi", "0", "-1", "WITHSCORES", "REV"]));
        cmds.push(cmd(&["OBJECT", "ENCODING", "z"]));
        if n <= 128 {
            // Listpack ZSCAN hands back the stored d2string text.
            cmds.push(cmd(&["ZSCAN", "z", "0", "COUNT", "1000"]));
        }
        exact(&mut p, &cmds);
        if n > 128 {
            // A skiplist's ZSCAN prints %.17Lg, in dict order: compare
            // the (member, score text) pairs as sets.
            let pairs = |c: &mut RawConn| {
                let r = parse_reply(&c.cmd(&[b"ZSCAN", b"z", b"0", b"COUNT", b"1000"]));
                let parts = r.array();
                assert_eq!(parts[0].bulk(), b"0");
                let mut v: Vec<(Vec<u8>, Vec<u8>)> = parts[1]
                    .array()
                    .chunks(2)
                    .map(|e| (e[0].bulk().to_vec(), e[1].bulk().to_vec()))
                    .collect();
                v.sort();
                v
            };
            let (r, z) = (pairs(&mut p.r), pairs(&mut p.z));
            assert_eq!(r.len(), n);
            for (r, z) in r.iter().zip(&z) {
                assert!(
                    r == z,
                    "ZSCAN of a skiplist: redis {} {}, zwindow {} {}",
                    escape(&r.0),
                    escape(&r.1),
                    escape(&z.0),
                    escape(&z.1)
                );
            }
        }
    }
}

#[test]
fn zset_scores_resp2() {
    let s = Servers::start();
    zset_stream(&s, "2", 0x00D0_0B1E, 100);
}

#[test]
fn zset_scores_resp3() {
    let s = Servers::start();
    zset_stream(&s, "3", 0x00F9_C04F, 100);
}

/// A coordinate as a client writes it: a few or many decimals.
fn coord(rng: &mut StdRng, limit: f64) -> String {
    let x = rng.random_range(-limit..limit);
    match rng.random_range(0..3) {
        0 => format!("{x:.6}"),
        1 => format!("{x:.3}"),
        _ => format!("{x}"),
    }
}

#[test]
fn geo_coordinates() {
    let s = Servers::start();
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        let mut rng = StdRng::seed_from_u64(0x6E0 + u64::from(proto == "3"));
        for _ in 0..20 {
            let n = 100;
            let mut cmds = vec![cmd(&["DEL", "g"])];
            let mut geoadd = cmd(&["GEOADD", "g"]);
            for i in 0..n {
                geoadd.push(coord(&mut rng, 180.0).into_bytes());
                geoadd.push(coord(&mut rng, 85.05112878).into_bytes());
                geoadd.push(format!("p{i}").into_bytes());
            }
            cmds.push(geoadd);
            let mut geopos = cmd(&["GEOPOS", "g"]);
            for i in 0..n {
                let m = format!("p{i}");
                cmds.push(cmd(&[
                    "GEOSEARCH",
                    "g",
                    "FROMMEMBER",
                    &m,
                    "BYRADIUS",
                    "0",
                    "m",
                    "WITHCOORD",
                    "ASC",
                    "COUNT",
                    "1",
                ]));
                cmds.push(cmd(&["ZSCORE", "g", &m]));
                geopos.push(m.into_bytes());
            }
            cmds.push(geopos);
            exact(&mut p, &cmds);
        }
    }
}

/// Hand-picked values whose 8.0.2 text is not the shortest round trip,
/// and the layout boundaries of `emit_digits`.
#[test]
fn hand_picked() {
    let s = Servers::start();
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        let mut cmds = Vec::new();
        for sc in [
            "38.76549185212588",
            "1e23",
            "1000000000000000.2",
            "14169.626117023414",
            "7.036870839547745e+177",
            "1e-6",
            "1.5e-6",
            "1e-7",
            "123456.5",
            "0.0001234",
            "1e21",
            "1e22",
            "4611686018427387904",
            "4611686018427388928",
            "-4611686018427387904",
            "-4611686018427388928",
            "9223372036854775808",
            "5e-324",
            "-0",
        ] {
            cmds.push(cmd(&["ZADD", "h", sc, "m"]));
            cmds.push(cmd(&["ZSCORE", "h", "m"]));
        }
        exact(&mut p, &cmds);
    }
}
