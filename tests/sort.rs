//! Differential tests (zwindow vs redis-server 7.0) of SORT and SORT_RO:
//! lists, sets (intset and hashtable) and sorted sets; BY keys, hash
//! fields and `nosort`; LIMIT; GET `#` and patterns; ALPHA; ASC/DESC;
//! STORE (keyspace events, empty results, waking BLPOP); scripts and
//! MULTI; and a seeded random stream. In RESP2 and RESP3. A set's native
//! order (SORT … BY nosort on a hashtable set) is Redis's hash order, so
//! those replies are compared as multisets.
mod common;

use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn fixtures(p: &mut Pair) {
    p.script(&[
        "RPUSH l 3 1 2 10 -5 1.5 abc",
        "RPUSH n 3 1 2 10 -5 1.5 \" 7\" 0x10 inf -inf \"\"",
        "MSET w_3 30 w_1 10 w_2 20 w_10 5 w_abc 1 w_-5 -50",
        "HSET h_1 f a g 3",
        "HSET h_2 f b g 1",
        "HSET h_3 f c g 2",
        "SADD s 5 3 1 10",
        "SADD s2 b a c dd",
        "ZADD z 1 c 2 b 3 a 3 aa 0 zz",
    ]);
}

#[test]
fn basics() {
    in_both_protocols(|p| {
        fixtures(p);
        p.script(&[
            "SORT l",
            "SORT n",
            "SORT n DESC",
            "SORT n LIMIT 1 3",
            "SORT n LIMIT -1 3",
            "SORT n LIMIT 8 10",
            "SORT n LIMIT 100 10",
            "SORT n LIMIT 2 0",
            "SORT n LIMIT 0 -1",
            "SORT n LIMIT 3 -5 DESC",
            "SORT l ALPHA",
            "SORT l ALPHA DESC LIMIT 2 2",
            "SORT s",
            "SORT s DESC LIMIT 1 2",
            "SORT s2 ALPHA",
            "SORT s2",
            "SORT z",
            "SORT z ALPHA",
            "SORT z ALPHA DESC",
            "SORT missing",
            "SORT missing ALPHA LIMIT 0 1",
            "SET str x",
            "SORT str",
            "SORT l LIMIT",
            "SORT l LIMIT a b",
            "SORT l LIMIT 0",
            "SORT l foo",
            "SORT l STORE",
            "SORT l BY",
            "SORT l GET",
            "SORT_RO l STORE x",
            "SORT_RO l ALPHA",
            "SORT_RO s DESC",
            "SORT str foo",
            "SORT missing foo",
        ]);
    });
}

#[test]
fn by_and_get() {
    in_both_protocols(|p| {
        fixtures(p);
        p.script(&[
            "SORT l BY w_*",
            "SORT l BY w_* DESC",
            "SORT l BY w_* ALPHA",
            "SORT l BY w_* ALPHA DESC",
            "SORT l BY w_* GET # GET w_*",
            "SORT l BY w_* GET w_* GET nothing_* GET # GET nostar",
            "SORT l BY w_* LIMIT 1 2 DESC",
            "SORT l BY nothing_*",
            "SORT l BY nothing_* ALPHA",
            "SORT l BY h_*->g",
            "SORT l BY h_*->f ALPHA GET h_*->f GET h_*-> GET # GET h_*->nofield",
            "SORT l BY h_*-> ALPHA",
            "SORT l BY w_*->f",
            "SORT l BY nosort",
            "SORT l BY nosort DESC",
            "SORT l BY nosort LIMIT 2 3",
            "SORT l BY nosort DESC LIMIT 2 3",
            "SORT l BY nosort LIMIT 10 3",
            "SORT l BY nosort LIMIT 6 3",
            "SORT l BY nosort GET w_*",
            "SORT z BY nosort",
            "SORT z BY nosort DESC",
            "SORT z BY nosort LIMIT 1 2",
            "SORT z BY nosort DESC LIMIT 1 5",
            "SORT z BY nosort LIMIT 5 1",
            "SORT z BY w_*",
            "SORT s BY nosort",
            "SORT s BY w_*",
            "SORT s BY w_* GET # GET w_*",
            "SET fl_a 1.5",
            "SET fl_b x",
            "SORT l BY fl_*",
            "RPUSH ab a b",
            "SORT ab BY fl_*",
            "SORT ab BY fl_* ALPHA",
            "SET num_a nan",
            "SORT ab BY num_*",
            "SET num_a \" 2\"",
            "SET num_b \"3 \"",
            "SORT ab BY num_*",
            "SET num_b \"\"",
            "SORT ab BY num_*",
            "HSET hh_a x 1",
            "SORT ab BY hh_*",
            "SORT ab GET hh_*",
            // Last: Redis checks a stale `errno` after strtod, so once a
            // conversion overflowed, later SORTs on this connection may
            // report ERANGE that is not theirs (a Redis bug not copied).
            "SET num_a 1e400",
            "SET num_b 1e-400",
            "SORT ab BY num_*",
        ]);
        // A hashtable set's native order is its hash order.
        p.check_unordered_str("SORT s2 BY nosort");
        p.check_unordered_str("SORT s2 BY nosort GET #");
        // ALPHA BY missing keys: all tie, so the set's order stays.
        p.check_unordered_str("SORT s2 BY w_* ALPHA");
    });
}

#[test]
fn store() {
    in_both_protocols(|p| {
        fixtures(p);
        p.script(&[
            "SORT l BY nosort STORE dst",
            "LRANGE dst 0 -1",
            "TYPE dst",
            "OBJECT ENCODING dst",
            "SORT l STORE dst2 GET w_* GET #",
            "LRANGE dst2 0 -1",
            "SORT l ALPHA STORE dst2",
            "LRANGE dst2 0 -1",
            "SET dst3 x EX 100",
            "SORT s STORE dst3",
            "TTL dst3",
            "LRANGE dst3 0 -1",
            "SORT missing STORE dst3",
            "EXISTS dst3",
            "SORT missing STORE dst3",
            "SORT l LIMIT 100 1 STORE dst",
            "EXISTS dst",
            "SORT s2 BY nosort STORE dst4",
            "LRANGE dst4 0 -1",
            "SORT s2 BY nosort STORE dst4 DESC",
            "LRANGE dst4 0 -1",
            "SORT s2 BY w_* ALPHA STORE dst4",
            "SORT l STORE l ALPHA",
            "LRANGE l 0 -1",
            "SORT z BY nosort STORE z",
            "TYPE z",
            "LRANGE z 0 -1",
        ]);
        p.check_unordered_str("LRANGE dst4 0 -1");
    });
}

#[test]
fn scripts_and_multi() {
    in_both_protocols(|p| {
        fixtures(p);
        p.script(&[
            "EVAL \"return redis.call('sort', KEYS[1], 'by', 'nosort')\" 1 s2",
            "EVAL \"return redis.call('sort', KEYS[1], 'by', 'nosort', 'desc')\" 1 s2",
            "EVAL \"return redis.call('sort', KEYS[1], 'by', 'nosort')\" 1 s",
            "EVAL \"return redis.call('sort', KEYS[1], 'by', 'nosort')\" 1 z",
            "EVAL \"return redis.call('sort_ro', KEYS[1], 'by', 'w_*', 'get', '#', 'get', 'w_*')\" 1 l",
            "EVAL \"return redis.call('sort', KEYS[1], 'store', 'x')\" 1 s",
            "EVAL_RO \"return redis.call('sort', KEYS[1], 'store', 'x')\" 1 s",
            "EVAL_RO \"return redis.call('sort_ro', KEYS[1])\" 1 s",
            "EVAL \"return redis.call('sort', KEYS[1])\" 1 l",
            "MULTI",
            "SORT n",
            "SORT l BY w_* STORE m",
            "LRANGE m 0 -1",
            "SORT l",
            "EXEC",
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
        "RPUSH l 2 1",
        "SORT l STORE d",
        "SORT l STORE d",
        "SORT missing STORE d",
        "SORT missing STORE d",
        "SORT l",
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

/// SORT … STORE into a new list serves a client blocked in BLPOP on it.
#[test]
fn store_wakes_blocked_clients() {
    let s = Servers::start();
    let mut p = s.pair();
    let mut blocked = s.pair();
    p.check_str("RPUSH src 3 1 2");
    let cmd = encode_cmd(&[b"BLPOP", b"dst", b"5"]);
    blocked.r.send(&cmd);
    blocked.z.send(&cmd);
    std::thread::sleep(Duration::from_millis(200));
    p.check_str("SORT src STORE dst");
    let (r, z) = (blocked.r.read_reply(), blocked.z.read_reply());
    assert!(
        replies_equivalent(&r, &z),
        "{} vs {}",
        escape(&r),
        escape(&z)
    );
    assert_eq!(escape(&z), escape(b"*2\r\n$3\r\ndst\r\n$1\r\n1\r\n"));
    p.check_str("LRANGE dst 0 -1");
}

/// A seeded random stream of SORT invocations over lists, sets and sorted
/// sets that change between calls.
#[test]
fn randomized_stream() {
    in_both_protocols(|p| {
        let mut rng = StdRng::seed_from_u64(0x5027_0012);
        let elems = [
            "1", "2", "3", "10", "-1", "1.5", "a", "b", "x_1", "0x10", "",
        ];
        let srcs = ["L", "S", "Z", "none", "str"];
        p.check_str("SET str v");
        for _ in 0..800 {
            let e = elems[rng.random_range(0..elems.len())];
            let line = match rng.random_range(0..10) {
                0 => format!("RPUSH L \"{e}\""),
                1 => format!("LREM L 1 \"{e}\""),
                2 => format!("SADD S \"{e}\""),
                3 => format!("ZADD Z {} \"{e}\"", rng.random_range(-3..4)),
                4 => format!(
                    "SET w_{e} {}",
                    ["1", "2", "-3", "x", "1.5", "10"][rng.random_range(0..6)]
                ),
                5 => format!("HSET h_{e} f {}", rng.random_range(0..5)),
                _ => {
                    let src = srcs[rng.random_range(0..srcs.len())];
                    let mut l = format!("SORT {src}");
                    match rng.random_range(0..6) {
                        0 => l += " BY w_*",
                        1 => l += " BY h_*->f",
                        2 if src != "S" => l += " BY nosort",
                        _ => {}
                    }
                    if rng.random_bool(0.3) {
                        l += &format!(
                            " LIMIT {} {}",
                            rng.random_range(-1..5),
                            rng.random_range(-1..5)
                        );
                    }
                    for _ in 0..rng.random_range(0..3) {
                        l += [" GET #", " GET w_*", " GET h_*->f"][rng.random_range(0..3)];
                    }
                    if rng.random_bool(0.4) {
                        l += " DESC";
                    }
                    // ALPHA BY a missing key ties, and then the order of a
                    // sorted set's or set's elements is Redis's hash order.
                    if rng.random_bool(0.4) && !(l.contains("BY w_") || l.contains("BY h_")) {
                        l += " ALPHA";
                    }
                    if rng.random_bool(0.2) {
                        l += " STORE D";
                        p.check_str(&l);
                        p.check_str("LRANGE D 0 -1");
                        continue;
                    }
                    l
                }
            };
            p.check_str(&line);
        }
    });
}

/// Redis 8.0 lets SORT and SORT_RO use BY and GET patterns in cluster mode
/// when every key they form hashes to the sorted key's slot (a hash tag
/// closed before any wildcard, or a pattern without wildcards naming a key
/// of that slot); `GET #` is always allowed. Otherwise its error texts.
#[test]
fn sort_patterns_in_cluster_mode_against_redis8() {
    let (r, _) = start_on_free_port(|cport| {
        RedisServer::try_start_binary(
            &redis8_server(),
            &[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &cport.to_string(),
            ],
        )
    });
    let z = common::cluster::zwindow_cluster_node(5000);
    let mut p = Pair {
        z: z.conn(),
        r: r.conn(),
    };
    p.check_str("CLUSTER ADDSLOTSRANGE 0 16383");
    common::cluster::wait_state_ok(&mut p.r, Duration::from_secs(10));
    common::cluster::wait_state_ok(&mut p.z, Duration::from_secs(10));
    p.script(&[
        "RPUSH {u}list 3 1 2",
        "MSET {u}w_1 30 {u}w_2 20 {u}w_3 10 {u}o_1 a {u}o_2 b {u}o_3 c",
        "HSET {u}h_1 f 3",
        "HSET {u}h_2 f 1",
        "HSET {u}h_3 f 2",
        "SORT {u}list",
        "SORT {u}list BY {u}w_*",
        "SORT {u}list BY {u}w_* DESC GET {u}o_* GET #",
        "SORT {u}list BY {u}h_*->f GET {u}h_*->f",
        "SORT_RO {u}list BY {u}w_* GET {u}o_*",
        "SORT {u}list BY {u}w_* GET {u}o_* STORE {u}dst",
        "LRANGE {u}dst 0 -1",
        "SORT {u}list GET #",
        "SORT {u}list BY nosort GET # GET {u}o_*",
        "SORT {u}list GET {u}o_1",
        "SORT {u}list BY {}w_*",
        "SORT {u}list BY w_*",
        "SORT {u}list BY *{u}",
        "SORT {u}list BY {u*}",
        "SORT {u}list BY {v}w_*",
        "SORT {u}list BY \\{u}w_*",
        "SORT {u}list GET *",
        "SORT {u}list GET {v}o_*",
        "SORT {u}list GET o_1",
        "SORT {u}list GET # GET w_*",
        "SORT_RO {u}list BY w_*",
        "SORT_RO {u}list GET w_*",
        "SORT {u}list BY w_* GET w_*",
        "SORT {u}list GET w_* BY w_*",
        "SORT {u}list BY w_* FOO",
        "SORT {u}list FOO BY w_*",
        "SORT {u}list GET w_* STORE {u}dst",
    ]);
}
