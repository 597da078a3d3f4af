//! HyperLogLog against redis-server 7.0.15: the HLL bytes themselves (GET
//! after the same PFADDs must be byte-identical, through sparse growth,
//! opcode splits and merges and the promotion to dense at several
//! `hll-sparse-max-bytes`), PFCOUNT of one and many keys, PFMERGE, PFDEBUG,
//! values made by redis-server SET into zwindow, corrupted values (every
//! reply and the bytes left behind), keyspace events, MULTI and scripts,
//! in RESP2 and RESP3.
mod common;

use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// GET on both, byte for byte (no numeric leniency: these are HLL bytes).
fn same_bytes(p: &mut Pair, key: &str) -> Vec<u8> {
    let (r, z) = p.both_str(&format!("GET {key}"));
    assert!(
        r == z,
        "GET {key} differs\n  redis:   {}\n  zwindow: {}",
        escape(&r),
        escape(&z)
    );
    r
}

/// The payload of a bulk reply.
fn bulk_payload(reply: &[u8]) -> Vec<u8> {
    match parse_reply(reply) {
        Reply::Bulk(b) => b,
        other => panic!("not a bulk reply: {other:?}"),
    }
}

fn random_stream(seed: u64, resp3: bool, sparse_max: usize, steps: usize) {
    let (_s, mut p) = start_pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    p.check_str(&format!("CONFIG SET hll-sparse-max-bytes {sparse_max}"));
    let mut rng = StdRng::seed_from_u64(seed);
    let keys = ["h0", "h1", "h2", "h3"];
    // The element pool grows, so later PFADDs reach new registers and the
    // sets cross the sparse → dense threshold.
    let mut pool = 50usize;
    for step in 0..steps {
        pool += rng.random_range(0..8);
        let key = keys[rng.random_range(0..keys.len())];
        match rng.random_range(0..100) {
            0..70 => {
                let n = rng.random_range(0..12);
                let mut line = format!("PFADD {key}");
                for _ in 0..n {
                    line.push_str(&format!(" e{}", rng.random_range(0..pool)));
                }
                p.check_str(&line);
                same_bytes(&mut p, key);
            }
            70..80 => {
                p.check_str(&format!("PFCOUNT {key}"));
                same_bytes(&mut p, key);
            }
            80..87 => {
                let k2 = keys[rng.random_range(0..keys.len())];
                p.check_str(&format!("PFCOUNT {key} {k2} missing"));
            }
            87..93 => {
                let (a, b) = (
                    keys[rng.random_range(0..keys.len())],
                    keys[rng.random_range(0..keys.len())],
                );
                p.check_str(&format!("PFMERGE {key} {a} {b}"));
                same_bytes(&mut p, key);
            }
            93..96 => {
                p.check_str(&format!("PFDEBUG ENCODING {key}"));
                p.check_str(&format!("PFDEBUG DECODE {key}"));
            }
            96..98 => {
                p.check_str(&format!("PFDEBUG GETREG {key}"));
                same_bytes(&mut p, key);
            }
            _ => {
                if step % 3 == 0 {
                    p.check_str(&format!("DEL {key}"));
                } else {
                    p.check_str(&format!("PFDEBUG TODENSE {key}"));
                    same_bytes(&mut p, key);
                }
            }
        }
    }
    for k in keys {
        same_bytes(&mut p, k);
        p.check_str(&format!("PFCOUNT {k}"));
        p.check_str(&format!("OBJECT ENCODING {k}"));
    }
}

#[test]
fn random_pfadd_default_threshold_resp2() {
    random_stream(0x4811_0001, false, 3000, 1500);
}

#[test]
fn random_pfadd_small_threshold_resp3() {
    random_stream(0x4811_0002, true, 300, 1500);
}

#[test]
fn random_pfadd_large_threshold() {
    random_stream(0x4811_0003, false, 12000, 1200);
}

#[test]
fn big_pfadds_cross_into_dense() {
    let (_s, mut p) = start_pair();
    for round in 0..12 {
        let mut args: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), b"big".to_vec()];
        for i in 0..(40 * (round + 1)) {
            args.push(format!("x{round}-{i}").into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        p.check(&refs);
        same_bytes(&mut p, "big");
        p.check_str("PFDEBUG ENCODING big");
        p.check_str("PFCOUNT big");
    }
    p.check_str("PFCOUNT big big2");
}

#[test]
fn redis_made_values_work_in_zwindow() {
    let (_s, mut p) = start_pair();
    let mut rng = StdRng::seed_from_u64(7);
    for (n, key) in [(5usize, "small"), (400, "mid"), (3000, "dense")] {
        // Made on redis-server only.
        let mut args: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), key.as_bytes().to_vec()];
        for _ in 0..n {
            args.push(format!("r{}", rng.random_range(0..1_000_000)).into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        p.r.cmd(&refs);
        let value = bulk_payload(&p.r.cmd(&[b"GET", key.as_bytes()]));
        p.z.cmd(&[b"SET", key.as_bytes(), &value]);
        same_bytes(&mut p, key);
        p.check_str(&format!("PFCOUNT {key}"));
        p.check_str(&format!("PFDEBUG ENCODING {key}"));
        p.check_str(&format!("PFADD {key} more1 more2 more3"));
        same_bytes(&mut p, key);
        p.check_str(&format!("PFMERGE m{key} {key} small"));
        same_bytes(&mut p, &format!("m{key}"));
        p.check_str(&format!("PFCOUNT {key} m{key}"));
        // And the other way round: zwindow's bytes in redis-server.
        let mine = bulk_payload(&p.z.cmd(&[b"GET", key.as_bytes()]));
        p.r.cmd(&[b"SET", b"back", &mine]);
        p.z.cmd(&[b"SET", b"back", &mine]);
        p.check_str("PFCOUNT back");
        p.check_str("PFADD back one-more");
        same_bytes(&mut p, "back");
    }
}

#[test]
fn corrupted_values_are_refused_like_redis() {
    let (_s, mut p) = start_pair();
    let mut rng = StdRng::seed_from_u64(0xbad);
    p.check_str("SET notanhll hello");
    for cmd in [
        "PFADD notanhll a",
        "PFCOUNT notanhll",
        "PFCOUNT notanhll x",
        "PFMERGE notanhll",
        "PFMERGE d notanhll",
        "PFDEBUG GETREG notanhll",
        "PFDEBUG NOSUCH missing",
        "PFDEBUG DECODE missing",
        "SET short HYLL",
        "PFADD short a",
        "LPUSH list a",
        "PFADD list a",
        "PFCOUNT x list",
        "PFMERGE list",
    ] {
        p.check_str(cmd);
    }
    for round in 0..400 {
        p.check_str("DEL h");
        let n = rng.random_range(0..if round % 4 == 0 { 3000 } else { 300 });
        let mut args: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), b"h".to_vec()];
        for i in 0..n {
            args.push(format!("{round}:{i}").into_bytes());
        }
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        p.check(&refs);
        for _ in 0..rng.random_range(1..4) {
            let len = match parse_reply(&p.check_str("STRLEN h")) {
                Reply::Int(n) => n as usize,
                other => panic!("{other:?}"),
            };
            // Mostly the opcodes; sometimes the header.
            let pos = if rng.random_bool(0.1) {
                rng.random_range(0..16)
            } else {
                rng.random_range(16.min(len - 1)..len)
            };
            let byte = [rng.random::<u8>()];
            p.check(&[b"SETRANGE", b"h", pos.to_string().as_bytes(), &byte]);
            if rng.random_bool(0.2) {
                p.check_str("APPEND h \"\\x00A\"");
            }
        }
        match rng.random_range(0..5) {
            0 => p.check_str("PFCOUNT h"),
            1 => p.check_str("PFCOUNT h h2"),
            2 => p.check_str("PFADD h a b c d e f g h i j"),
            3 => p.check_str("PFMERGE h2 h"),
            _ => p.check_str("PFDEBUG DECODE h"),
        };
        same_bytes(&mut p, "h");
        p.check_str("DEL h2");
    }
}

#[test]
fn pfdebug_and_selftest() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "PFADD h a b c",
        "PFDEBUG ENCODING h",
        "PFDEBUG DECODE h",
        "PFDEBUG encoding h",
        "PFDEBUG GETREG h",
        "PFDEBUG ENCODING h",
        "PFDEBUG DECODE h",
        "PFDEBUG TODENSE h",
        "PFDEBUG TODENSE h",
        "PFDEBUG wat h",
        "PFDEBUG GETREG",
        "PFADD",
        "PFSELFTEST x",
        "PFCOUNT",
        "PFMERGE",
        "GET h",
    ]);
    let z = p.z.cmd(&[b"PFSELFTEST"]);
    assert_eq!(z, b"+OK\r\n");
}

#[test]
fn pfcount_cache_and_encoding() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "PFADD h a b c",
        "OBJECT ENCODING h",
        "PFCOUNT h",
        "GET h",
        "PFADD h a",
        "GET h",
        "PFADD h zz",
        "PFCOUNT h h",
        "GET h",
        "PFCOUNT h",
        "GET h",
        "PFADD fresh",
        "PFADD fresh",
        "GET fresh",
        "PFCOUNT nosuch",
        "PFCOUNT nosuch other",
        "PFMERGE newdest",
        "GET newdest",
        "PFMERGE newdest h fresh",
        "GET newdest",
        "SET embstr 1",
        "CONFIG SET hll-sparse-max-bytes 1kb",
        "CONFIG GET hll-sparse-max-bytes",
        "CONFIG SET hll-sparse-max-bytes 3000",
    ]);
    // A value SET from a short HLL string is embstr until an HLL command
    // touches it (Redis's dbUnshareStringValue).
    let v = bulk_payload(&p.r.cmd(&[b"GET", b"h"]));
    p.check(&[b"SET", b"copy", &v]);
    p.check_str("OBJECT ENCODING copy");
    p.check_str("PFCOUNT copy");
    p.check_str("OBJECT ENCODING copy");
}

#[test]
fn multi_and_scripts() {
    for resp3 in [false, true] {
        let (_s, mut p) = start_pair();
        if resp3 {
            p.both_str("HELLO 3");
        }
        p.script(&[
            "MULTI",
            "PFADD h a b c",
            "PFCOUNT h",
            "PFMERGE h2 h",
            "PFADD notthere",
            "EXEC",
            "GET h2",
            "EVAL \"return redis.call('pfadd', KEYS[1], 'x', 'y')\" 1 s",
            "EVAL \"return redis.call('pfcount', KEYS[1], KEYS[2])\" 2 s h",
            "EVAL \"return redis.pcall('pfadd', KEYS[1], 'x')\" 1 h2x",
            "SET str abc",
            "EVAL \"return redis.pcall('pfadd', KEYS[1], 'x')\" 1 str",
            "EVAL \"return redis.call('pfdebug', 'decode', KEYS[1])\" 1 s",
            "GET s",
        ]);
    }
}

/// Reads the keyspace events a subscriber has received, until quiet.
fn drain(c: &mut RawConn) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let ReadOutcome::Reply(r) = c.try_read_reply(Duration::from_millis(300)) {
        out.push(r);
    }
    out
}

#[test]
fn keyspace_events() {
    let (s, mut p) = start_pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut subs = s.pair();
    subs.check_str("PSUBSCRIBE __key*__:*");
    p.script(&[
        "PFADD h a b",
        "PFADD h a",
        "PFCOUNT h",
        "PFMERGE d h",
        "PFMERGE d",
        "PFADD e",
        "PFDEBUG TODENSE h",
    ]);
    let (r, z) = (drain(&mut subs.r), drain(&mut subs.z));
    // pfadd ×2 (keyspace and keyevent) for each of h, d, d, e.
    assert_eq!(
        r.len(),
        8,
        "{:?}",
        r.iter().map(|x| escape(x)).collect::<Vec<_>>()
    );
    assert_eq!(
        r.iter().map(|x| escape(x)).collect::<Vec<_>>(),
        z.iter().map(|x| escape(x)).collect::<Vec<_>>()
    );
}

/// Redis 8.0's `PFDEBUG SIMD ON|OFF`: zwindow answers as a Redis built
/// without AVX2 (the answer depends on redis-server's build and CPU, so it
/// is not compared with the oracle), and counts the same either way.
#[test]
fn pfdebug_simd_answers_as_a_build_without_avx2() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    assert_eq!(c.cmd_str("PFADD h a b c"), b":1\r\n");
    assert_eq!(c.cmd_str("PFDEBUG SIMD ON"), b"+disabled\r\n");
    assert_eq!(c.cmd_str("PFCOUNT h"), b":3\r\n");
    assert_eq!(c.cmd_str("PFDEBUG simd off"), b"+disabled\r\n");
    assert_eq!(c.cmd_str("PFCOUNT h"), b":3\r\n");
    assert_eq!(
        c.cmd_str("PFDEBUG SIMD maybe"),
        b"-ERR Argument must be ON or OFF\r\n"
    );
    assert_eq!(
        c.cmd_str("PFDEBUG simd on extra"),
        b"-ERR wrong number of arguments for 'pfdebug' command\r\n"
    );
}
