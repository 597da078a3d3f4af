//! Keyspace notifications, compared message by message with redis-server
//! 7.0: both servers get `notify-keyspace-events KEA`, a subscriber on
//! `__key*__:*` on each, and the same command script (replies compared
//! too); then the two notification streams must be identical. The script
//! covers every command family in the table; families added later extend it.
mod common;

use std::time::Duration;

use common::*;

/// Runs `script` (a `SLEEP <ms>` line pauses) on both servers with
/// notifications on, and compares what the two subscribers received.
fn compare_notifications(script: &[&str]) {
    compare_notifications_on(Servers::start(), script)
}

/// [`compare_notifications`] against Redis 8.0.
fn compare_notifications8(script: &[&str]) {
    compare_notifications_on(Servers::start_redis8(&[]), script)
}

fn compare_notifications_on(s: Servers, script: &[&str]) {
    let mut p = s.pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut subs = [s.r.conn(), s.z.conn()];
    for sub in &mut subs {
        sub.send(&encode_cmd(&[b"PSUBSCRIBE", b"__key*__:*"]));
        sub.read_reply();
    }
    for line in script {
        if let Some(ms) = line.strip_prefix("SLEEP ") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
        } else {
            p.check_str(line);
        }
    }
    // A publication on a matching channel marks the end of the stream.
    p.check_str("PUBLISH __keyspace@0__:__end__ end");
    let [mut r, mut z] = subs;
    let collect = |c: &mut RawConn| {
        let mut msgs = Vec::new();
        loop {
            let m = c.read_reply();
            if m.windows(7).any(|w| w == b"__end__") {
                return msgs;
            }
            msgs.push(m);
        }
    };
    let (rm, zm) = (collect(&mut r), collect(&mut z));
    eprintln!("{} notifications from redis-server", rm.len());
    // Every script here modifies keys: an empty stream means no comparison.
    assert!(!rm.is_empty(), "redis-server sent no notifications");
    let show = |m: &[Vec<u8>]| {
        m.iter()
            .map(|x| escape(x))
            .collect::<Vec<_>>()
            .join("\n    ")
    };
    for (i, (a, b)) in rm.iter().zip(&zm).enumerate() {
        assert!(
            a == b,
            "notification {i} differs\n  redis:   {}\n  zwindow: {}\n  redis stream:\n    {}\n  zwindow stream:\n    {}",
            escape(a),
            escape(b),
            show(&rm),
            show(&zm)
        );
    }
    assert_eq!(
        rm.len(),
        zm.len(),
        "stream lengths differ\n  redis:\n    {}\n  zwindow:\n    {}",
        show(&rm),
        show(&zm)
    );
}

#[test]
fn strings_and_generic_keyspace_commands() {
    compare_notifications(&[
        "SET s v",
        "SET s v2 EX 100",
        "SET s v3 KEEPTTL",
        "SET n 1 NX",
        "SET n 2 XX",
        "SET n 3 NX",
        "SET s v GET",
        "SET nope v XX",
        "SET s v PX 100000 GET",
        "SET s v EXAT 4102444800",
        "GET s",
        "GET nokey",
        "DEL s nokey",
        "UNLINK n",
        "SET a 1",
        "RENAME a b",
        "RENAMENX b c",
        "SET d 1",
        "RENAMENX c d",
        "RENAME c c",
        "COPY c c2",
        "COPY c c2",
        "COPY c c2 REPLACE",
        "COPY c c3 DB 1",
        "MOVE c2 2",
        "EXPIRE c 100",
        "PEXPIRE c 100000",
        "EXPIREAT c 4102444800",
        "PEXPIREAT c 4102444800000",
        "EXPIRE c 100 NX",
        "PERSIST c",
        "PERSIST c",
        "EXPIRE c 0",
        "EXPIRE nokey 10",
        "SET past v",
        "PEXPIREAT past 1",
        "TOUCH d",
        "TYPE d",
        "EXISTS d",
        "TTL d",
        "OBJECT ENCODING d",
        "KEYS *",
        "DBSIZE",
        // Expiry by lazy access and by the active cycle.
        "SET e v PX 30",
        "SLEEP 150",
        "GET e",
        "SET f v",
        "PEXPIRE f 30",
        "SLEEP 150",
        "EXISTS f",
        "SELECT 1",
        "SET x 1",
        "DEL x",
        "SELECT 0",
        "SWAPDB 0 1",
        "SWAPDB 0 1",
        "FLUSHDB",
        "SET y 1",
        "FLUSHALL",
    ]);
}

#[test]
fn list_commands() {
    compare_notifications(&[
        "RPUSH l a b c",
        "LPUSH l z",
        "LPUSHX l y",
        "RPUSHX nol x",
        "LPUSHX nol x",
        "LINSERT l BEFORE a q",
        "LINSERT l AFTER nope q",
        "LSET l 0 w",
        "LREM l 1 q",
        "LREM l 1 nope",
        "LTRIM l 0 -1",
        "LPOP l",
        "RPOP l 1",
        "LPOP l 0",
        "LPOP nol",
        "LMOVE l l2 LEFT RIGHT",
        "RPOPLPUSH l2 l3",
        "LMPOP 1 l LEFT COUNT 10",
        "LTRIM l3 1 0",
        "RPUSH r 1 2",
        "LMOVE r r LEFT RIGHT",
        "RPOPLPUSH r r",
        "LRANGE r 0 -1",
        "LINDEX r 0",
        "LLEN r",
        "LPOS r 1",
        "LREM r 0 1",
        "LREM r 0 2",
        "RPUSH bl x y z",
        "BLPOP bl 0",
        "BRPOP bl 0",
        "BLMOVE bl bl2 LEFT LEFT 0",
        "BRPOPLPUSH bl2 bl3 0",
        "BLMPOP 0 1 bl3 RIGHT COUNT 3",
        "RPUSH t 1",
        "RENAME t t2",
        "LPOP t2 5",
    ]);
}

#[test]
fn a_woken_waiter_notifies_after_the_push() {
    let s = Servers::start();
    let mut p = s.pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut got = Vec::new();
    for (mut sub, mut waiter, mut pusher) in [
        (s.r.conn(), s.r.conn(), s.r.conn()),
        (s.z.conn(), s.z.conn(), s.z.conn()),
    ] {
        sub.send(&encode_cmd(&[b"PSUBSCRIBE", b"__keyevent@*"]));
        sub.read_reply();
        waiter.send(&encode_cmd(&[
            b"BLMOVE", b"src", b"dst", b"LEFT", b"RIGHT", b"0",
        ]));
        while !String::from_utf8_lossy(&pusher.cmd_str("INFO clients"))
            .contains("blocked_clients:1")
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        pusher.cmd_str("RPUSH src a");
        waiter.read_reply();
        let msgs: Vec<Vec<u8>> = (0..4).map(|_| sub.read_reply()).collect();
        got.push(msgs);
    }
    assert_eq!(
        got[0].iter().map(|m| escape(m)).collect::<Vec<_>>(),
        got[1].iter().map(|m| escape(m)).collect::<Vec<_>>()
    );
}

#[test]
fn hash_commands() {
    compare_notifications(&[
        "HSET h a 1 b 2",
        "HSET h a 1",
        "HSETNX h a 9",
        "HSETNX h c 3",
        "HMSET h d 4",
        "HINCRBY h n 5",
        "HINCRBYFLOAT h f 1.5",
        "HDEL h nope",
        "HDEL h a b",
        "HGET h c",
        "HGETALL h",
        "HDEL h c d n f",
        "HSET big k v",
        "DEL big",
    ]);
}

#[test]
fn set_commands() {
    compare_notifications(&[
        "SADD s a b c",
        "SADD s a",
        "SREM s nope",
        "SREM s a",
        "SMOVE s s2 b",
        "SMOVE s s2 nope",
        "SADD t1 7",
        "SPOP t1",
        "SADD t 1 2 3",
        "SPOP t 5",
        "SADD u x y",
        "SADD v y z",
        "SINTERSTORE w u v",
        "SUNIONSTORE w u v",
        "SDIFFSTORE w u u",
        "SDIFFSTORE w u v",
        "SREM s c",
    ]);
}

#[test]
fn sorted_sets_and_transactions() {
    compare_notifications(&[
        "ZADD z 1 a 2 b 3 c",
        "ZINCRBY z 1 a",
        "ZREM z b",
        "ZREMRANGEBYSCORE z 0 2",
        "ZADD z 1 x 2 y",
        "ZREMRANGEBYRANK z 0 0",
        "ZPOPMAX z",
        "ZADD a 1 m",
        "ZUNIONSTORE d 1 a",
        "ZRANGESTORE e a 0 -1",
        "MULTI",
        "SET m 1",
        "INCR m",
        "ZADD a 2 n",
        "EXEC",
        "ZPOPMIN a 5",
    ]);
}

/// Against Redis 8.0: since 7.2 XREADGROUP, XCLAIM and XAUTOCLAIM create
/// their consumer whether or not they serve or claim anything.
#[test]
fn streams() {
    compare_notifications8(&[
        "XADD s 1-1 a 1",
        "XADD s 2-1 b 2",
        "XADD s MAXLEN 1 3-1 c 3",
        "XADD s MAXLEN 5 4-1 d 4",
        "XADD nokey NOMKSTREAM 1-1 a 1",
        "XADD s 1-1 a 1",
        "XDEL s 3-1 9-9",
        "XDEL s 9-9",
        "XTRIM s MAXLEN 0",
        "XTRIM s MAXLEN 0",
        "XADD s 5-1 e 5",
        "XGROUP CREATE s g 0",
        "XGROUP CREATE s g 0",
        "XGROUP CREATE m g $ MKSTREAM",
        "XGROUP CREATECONSUMER s g c1",
        "XGROUP CREATECONSUMER s g c1",
        "XREADGROUP GROUP g c2 STREAMS s >",
        "XREADGROUP GROUP g c3 STREAMS s >",
        "XCLAIM s g c4 0 5-1",
        "XAUTOCLAIM s g c5 0 0",
        "XACK s g 5-1",
        "XGROUP SETID s g 0",
        "XGROUP DELCONSUMER s g c2",
        "XGROUP DELCONSUMER s g c9",
        "XGROUP DESTROY s g",
        "XGROUP DESTROY s g",
        "XSETID s 10-0",
        "COPY s s2",
        "RENAME s2 s3",
        "DEL s s3 m",
    ]);
}

/// `n` (new key) events, which `A` leaves out: one per key a command
/// creates, before the command's own event, and none for keys it updates.
#[test]
fn new_key_events() {
    compare_notifications(&[
        "CONFIG SET notify-keyspace-events KEAn",
        "SET s v",
        "SET s w",
        "MSET m1 a m2 b s x",
        "SETNX s y",
        "SETNX nx y",
        "INCR counter",
        "APPEND app x",
        "SETRANGE range 3 x",
        "LPUSH l a b",
        "RPUSH l c",
        "LMOVE l l2 LEFT RIGHT",
        "HSET h f v",
        "HINCRBY h2 f 1",
        "SADD set a b",
        "SMOVE set set2 a",
        "SUNIONSTORE set3 set set2",
        "ZADD z 1 a",
        "ZINCRBY z2 1 a",
        "ZUNIONSTORE z3 2 z z2",
        "XADD st 1-1 f v",
        "PFADD hll a",
        "GEOADD geo 13.36 38.11 palermo",
        "SETBIT bits 7 1",
        "BITOP OR bits2 bits",
        "RENAME s s2",
        "COPY s2 s3",
        "MOVE s3 1",
        "SET tmp v EX 100",
        "GETSET gs v",
        "SORT l STORE sorted",
    ]);
}
