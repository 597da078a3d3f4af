//! `rdb_changes_since_last_save` moves by what each command changed, as
//! Redis counts `server.dirty` (one per element pushed, added, removed or
//! updated: `LPUSH k a b c` counts 3), compared with redis-server 8.0.2.
mod common;

use common::*;

fn changes(c: &mut RawConn) -> i64 {
    let info = String::from_utf8_lossy(&c.cmd_str("INFO persistence")).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rdb_changes_since_last_save in {info}"))
}

/// The change count of `cmd` after `setup` (each on an empty server).
fn delta(c: &mut RawConn, setup: &[&str], cmd: &str) -> (i64, Vec<u8>) {
    c.cmd_str("FLUSHALL");
    for line in setup {
        c.cmd_str(line);
    }
    let before = changes(c);
    let reply = c.cmd_str(cmd);
    (changes(c) - before, reply)
}

const CASES: &[(&[&str], &str)] = &[
    (&[], "SET k v"),
    (&[], "MSET a 1 b 2 c 3"),
    (&[], "MSETNX a 1 b 2 c 3"),
    (&["SET a 1"], "MSETNX a 1 b 2 c 3"),
    (&[], "LPUSH l a b c"),
    (&[], "RPUSH l a b c d"),
    (&["RPUSH l x"], "LPUSHX l a b c"),
    (&[], "LPUSHX l a b c"),
    (&["RPUSH l a b c d e"], "LPOP l 3"),
    (&["RPUSH l a b c d e"], "RPOP l 10"),
    (&["RPUSH l a b c d e"], "LPOP l"),
    (&["RPUSH l a b a c a"], "LREM l 0 a"),
    (&["RPUSH l a b c d e f"], "LTRIM l 1 2"),
    (&["RPUSH l a b c"], "LSET l 0 z"),
    (&["RPUSH l a b c"], "LINSERT l BEFORE b z"),
    (&["RPUSH l a b c"], "LMOVE l m LEFT RIGHT"),
    (&["RPUSH l a b c d"], "LMPOP 1 l LEFT COUNT 3"),
    (&["RPUSH l a b c d"], "BLMPOP 0 1 l RIGHT COUNT 2"),
    (&["RPUSH l a b c d"], "BLPOP l 0"),
    (&[], "SADD s a b c"),
    (&["SADD s a"], "SADD s a b c"),
    (&["SADD s a b c d"], "SREM s a b x"),
    (&["SADD s a b c d"], "SPOP s 3"),
    (&["SADD s a b c d"], "SPOP s 10"),
    (&["SADD s a b c d"], "SPOP s"),
    (&["SADD s a b", "SADD t b c"], "SMOVE s t a"),
    (&["SADD s a b c", "SADD t b c d"], "SINTERSTORE d s t"),
    (&["SADD s a b c", "SADD t b c d"], "SUNIONSTORE d s t"),
    (&[], "ZADD z 1 a 2 b 3 c"),
    (&["ZADD z 1 a"], "ZADD z 5 a 2 b 3 c"),
    (&["ZADD z 1 a"], "ZADD z CH 5 a 2 b"),
    (&["ZADD z 1 a"], "ZADD z INCR 5 a"),
    (&["ZADD z 1 a 2 b 3 c"], "ZREM z a b x"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "ZREMRANGEBYRANK z 0 2"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "ZREMRANGEBYSCORE z 2 3"),
    (&["ZADD z 0 a 0 b 0 c 0 d"], "ZREMRANGEBYLEX z [a [c"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "ZPOPMIN z 3"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "ZPOPMAX z"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "ZMPOP 1 z MIN COUNT 2"),
    (&["ZADD z 1 a 2 b 3 c 4 d"], "BZPOPMIN z 0"),
    (&["ZADD z 1 a"], "ZINCRBY z 2 a"),
    (&["ZADD z 1 a 2 b", "ZADD y 1 b 3 c"], "ZUNIONSTORE d 2 z y"),
    (&["ZADD z 1 a 2 b 3 c"], "ZRANGESTORE d z 0 -1"),
    (&[], "HSET h a 1 b 2 c 3"),
    (&["HSET h a 1"], "HSET h a 1 b 2 c 3"),
    (&[], "HMSET h a 1 b 2"),
    (&["HSET h a 1"], "HSETNX h b 2"),
    (&["HSET h a 1 b 2 c 3"], "HDEL h a b x"),
    (&["HSET h a 1"], "HINCRBY h a 2"),
    (&["HSET h a 1 b 2 c 3"], "HGETDEL h FIELDS 2 a b"),
    (&["HSET h a 1 b 2 c 3"], "HEXPIRE h 100 FIELDS 3 a b x"),
    (&["HSET h a 1 b 2 c 3"], "HEXPIRE h 0 FIELDS 2 a b"),
    (
        &["HSET h a 1 b 2 c 3", "HEXPIRE h 100 FIELDS 2 a b"],
        "HPERSIST h FIELDS 3 a b c",
    ),
    (&["HSET h a 1 b 2 c 3"], "HSETEX h EX 100 FIELDS 2 a 9 d 9"),
    (&["HSET h a 1 b 2 c 3"], "HGETEX h EX 100 FIELDS 2 a b"),
    (&["HSET h a 1 b 2 c 3"], "HGETEX h PERSIST FIELDS 2 a b"),
    (&[], "XADD x * a 1"),
    (
        &["XADD x 1-0 a 1", "XADD x 2-0 a 1", "XADD x 3-0 a 1"],
        "XDEL x 1-0 2-0 9-0",
    ),
    (
        &["XADD x 1-0 a 1", "XADD x 2-0 a 1", "XADD x 3-0 a 1"],
        "XTRIM x MAXLEN 1",
    ),
    (&["XADD x 1-0 a 1", "XADD x 2-0 a 1"], "XGROUP CREATE x g 0"),
    (
        &["XADD x 1-0 a 1", "XADD x 2-0 a 1", "XGROUP CREATE x g 0"],
        "XREADGROUP GROUP g c COUNT 10 STREAMS x >",
    ),
    (
        &[
            "XADD x 1-0 a 1",
            "XADD x 2-0 a 1",
            "XGROUP CREATE x g 0",
            "XREADGROUP GROUP g c COUNT 10 STREAMS x >",
        ],
        "XACK x g 1-0 2-0 3-0",
    ),
    (&["SET a 1", "SET b 2"], "DEL a b c"),
    (&["RPUSH l a b c d e f"], "LTRIM l 0 -1"),
    (&["RPUSH l a b c"], "LREM l 0 x"),
    (&["RPUSH l a a"], "LREM l 0 a"),
    (&["SADD s a b"], "SREM s a b"),
    (&["HSET h a 1 b 2"], "HDEL h a b"),
    (&["ZADD z 1 a 2 b"], "ZREM z a b"),
    (&["RPUSH l a"], "LMOVE l l LEFT RIGHT"),
    (&["SET a 1", "SET b 2"], "RENAME a b"),
    (&["ZADD z 1 a"], "ZADD z 1 a"),
    (&["ZADD z 1 a"], "ZADD z XX 2 a 3 b"),
    (&["RPUSH l a b c"], "SORT l STORE l"),
    (&["SET d x"], "SORT nosuch STORE d"),
    (&["SET a 1", "SET b 2"], "UNLINK a b"),
    (&["SET a 1"], "EXPIRE a 100"),
    (&["SET a 1"], "APPEND a 2"),
    (&["SET a 1"], "INCR a"),
    (&["SET a 1"], "GETDEL a"),
    (&["SET a 1"], "RENAME a b"),
    (&["SET a 1"], "COPY a b"),
    (&[], "SETBIT b 7 1"),
    (&["SET a abc", "SET b xyz"], "BITOP AND d a b"),
    (
        &[],
        "BITFIELD b SET u8 0 1 SET u8 8 2 INCRBY u8 0 1 GET u8 0",
    ),
    (&[], "PFADD p a b c"),
    (&["PFADD p a b"], "PFADD p a b"),
    (&["PFADD p a", "PFADD q b"], "PFMERGE d p q"),
    (&[], "GEOADD g 1 1 a 2 2 b"),
    (
        &["GEOADD g 1 1 a 2 2 b 3 3 c"],
        "GEOSEARCHSTORE d g FROMLONLAT 1 1 BYRADIUS 1000 km",
    ),
    (&["RPUSH l 3 1 2"], "SORT l STORE d"),
    (&["SET a 1", "SET b 2"], "FLUSHDB"),
    (&["SET a 1", "SET b 2"], "FLUSHALL"),
    (
        &["SET a 1", "SELECT 1", "SET b 1", "SELECT 0"],
        "SWAPDB 0 1",
    ),
    (
        &[],
        "EVAL \"redis.call('lpush', KEYS[1], 'a', 'b'); redis.call('sadd', 's', 'x', 'y', 'z')\" 1 l",
    ),
];

#[test]
fn change_counts_match_redis8() {
    // No save points: FLUSHALL would save and start the count again.
    let s = Servers::start_redis8(&["--save", ""]);
    let (mut z, mut r) = (s.z.conn(), s.r.conn());
    let mut wrong = Vec::new();
    for (setup, cmd) in CASES {
        let (dz, rz) = delta(&mut z, setup, cmd);
        let (dr, rr) = delta(&mut r, setup, cmd);
        // Same kind of reply (SPOP and XADD * differ in their contents).
        assert_eq!(
            rz.first(),
            rr.first(),
            "{cmd}: zwindow {} redis {}",
            escape(&rz),
            escape(&rr)
        );
        if dz != dr {
            wrong.push(format!("{setup:?} {cmd}: zwindow {dz}, redis {dr}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "change counts differ:\n{}",
        wrong.join("\n")
    );
}

/// A blocked pop served by a push counts the push and the pop (Redis's
/// "BLPOP/BLMOVE should increase dirty").
#[test]
fn served_blocked_pops_count_as_redis8() {
    let s = Servers::start_redis8(&["--save", ""]);
    for (block, push) in [
        ("BLPOP lst 0", "LPUSH lst a"),
        ("BLMOVE lst lst1 LEFT LEFT 0", "LPUSH lst a"),
        ("BLMPOP 0 1 lst LEFT COUNT 5", "RPUSH lst a b c"),
        ("BZPOPMIN z 0", "ZADD z 1 a 2 b"),
    ] {
        let mut deltas = Vec::new();
        for addr in [s.z.addr(), s.r.addr()] {
            let mut c = RawConn::connect(addr, "ctl");
            let mut b = RawConn::connect(addr, "blocked");
            c.cmd_str("FLUSHALL");
            let before = changes(&mut c);
            let args = split_args(block);
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            b.send(&encode_cmd(&refs));
            for _ in 0..200 {
                let info = String::from_utf8_lossy(&c.cmd_str("INFO clients")).into_owned();
                if info.contains("blocked_clients:1\r") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            c.cmd_str(push);
            b.read_reply();
            deltas.push(changes(&mut c) - before);
        }
        assert_eq!(deltas[0], deltas[1], "{block} then {push}: zwindow, redis");
    }
}
