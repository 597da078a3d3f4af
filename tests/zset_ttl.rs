//! Sorted-set member TTLs (Garnet's ZEXPIRE family), under zwindow's
//! frozen clock (`DEBUG CLOCK`): the per-member reply codes of every
//! command and option as Garnet's documentation gives them, argument errors,
//! members vanishing at their deadline for every sorted-set command,
//! emptied keys disappearing with `zexpired` and `del`, the sweeper
//! reclaiming idle keys, ZADD dropping a TTL and ZINCRBY keeping it, the
//! interplay with window rules and MOVETO, and RENAME/COPY/MOVE carrying
//! the deadlines.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// The frozen start of every test (Unix ms).
const T0_MS: u64 = 1_800_000_000_000;

fn frozen(extra: &[&str]) -> (ZwindowServer, RawConn) {
    let mut args = vec!["--enable-debug-command", "yes"];
    args.extend_from_slice(extra);
    let z = ZwindowServer::start(&args);
    let mut c = z.conn();
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    (z, c)
}

fn advance(c: &mut RawConn, ms: u64) {
    c.cmd_str(&format!("DEBUG CLOCK ADVANCE {ms}"));
}

fn wait_for(mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(3), "not within 3 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn s(c: &mut RawConn, line: &str) -> String {
    String::from_utf8_lossy(&c.cmd_str(line)).into_owned()
}

/// The RESP2 text of an array of integers.
fn ints(v: &[i64]) -> String {
    let mut out = format!("*{}\r\n", v.len());
    for n in v {
        out.push_str(&format!(":{n}\r\n"));
    }
    out
}

#[test]
fn expire_family_reply_codes() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("ZADD z 1 a 2 b 3 c 4 d");
    // Garnet's documented codes: 1 set, 0 no such member.
    assert_eq!(s(&mut c, "ZEXPIRE z 100 MEMBERS 2 a x"), ints(&[1, 0]));
    assert_eq!(s(&mut c, "ZPEXPIRE z 50000 MEMBERS 1 b"), ints(&[1]));
    let at_s = T0_MS / 1000 + 200;
    assert_eq!(
        s(&mut c, &format!("ZEXPIREAT z {at_s} MEMBERS 1 c")),
        ints(&[1])
    );
    assert_eq!(
        s(
            &mut c,
            &format!("ZPEXPIREAT z {} MEMBERS 1 d", T0_MS + 300_000)
        ),
        ints(&[1])
    );
    assert_eq!(s(&mut c, "ZTTL z MEMBERS 3 a b x"), ints(&[100, 50, -2]));
    assert_eq!(
        s(&mut c, "ZPTTL z MEMBERS 4 a b c d"),
        ints(&[100_000, 50_000, 200_000, 300_000])
    );
    assert_eq!(
        s(&mut c, "ZEXPIRETIME z MEMBERS 2 c x"),
        ints(&[at_s as i64, -2])
    );
    assert_eq!(
        s(&mut c, "ZPEXPIRETIME z MEMBERS 1 d"),
        ints(&[(T0_MS + 300_000) as i64])
    );
    // NX / XX / GT / LT: -1 when the condition is not met; a member
    // without a TTL counts as an infinite one.
    c.cmd_str("ZADD z 5 e");
    assert_eq!(s(&mut c, "ZEXPIRE z 10 NX MEMBERS 2 a e"), ints(&[-1, 1]));
    assert_eq!(s(&mut c, "ZPERSIST z MEMBERS 1 e"), ints(&[1]));
    assert_eq!(s(&mut c, "ZEXPIRE z 10 XX MEMBERS 2 a e"), ints(&[1, -1]));
    assert_eq!(s(&mut c, "ZEXPIRE z 20 gt MEMBERS 2 a e"), ints(&[1, -1]));
    assert_eq!(s(&mut c, "ZEXPIRE z 20 GT MEMBERS 1 a"), ints(&[-1]));
    assert_eq!(s(&mut c, "ZEXPIRE z 30 LT MEMBERS 2 a e"), ints(&[-1, 1]));
    assert_eq!(s(&mut c, "ZEXPIRE z 15 LT MEMBERS 2 a e"), ints(&[1, 1]));
    assert_eq!(s(&mut c, "ZTTL z MEMBERS 2 a e"), ints(&[15, 15]));
    // ZPERSIST: 1 dropped, 0 no TTL, -1 no such member.
    assert_eq!(s(&mut c, "ZPERSIST z MEMBERS 3 a a x"), ints(&[1, 0, -1]));
    assert_eq!(s(&mut c, "ZTTL z MEMBERS 1 a"), ints(&[-1]));
    // A deadline already come, once the condition holds, sets (1) and
    // deletes the member now, as EXPIRE does a key; the last one, the key.
    assert_eq!(s(&mut c, "ZEXPIRE z 0 NX MEMBERS 1 b"), ints(&[-1]));
    assert_eq!(s(&mut c, "ZSCORE z b"), "$1\r\n2\r\n");
    assert_eq!(s(&mut c, "ZEXPIRE z 0 MEMBERS 2 a x"), ints(&[1, 0]));
    assert_eq!(s(&mut c, "ZEXPIREAT z 1 XX MEMBERS 1 b"), ints(&[1]));
    assert_eq!(
        s(&mut c, "ZRANGE z 0 -1"),
        "*3\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"
    );
    assert_eq!(
        s(&mut c, &format!("ZPEXPIREAT z {T0_MS} MEMBERS 3 c d e")),
        ints(&[1, 1, 1])
    );
    assert_eq!(s(&mut c, "EXISTS z"), ":0\r\n");
    // Missing keys: as missing members.
    assert_eq!(s(&mut c, "ZEXPIRE nokey 10 MEMBERS 2 a b"), ints(&[0, 0]));
    assert_eq!(s(&mut c, "ZPEXPIREAT nokey 10 NX MEMBERS 1 a"), ints(&[0]));
    assert_eq!(s(&mut c, "ZTTL nokey MEMBERS 2 a b"), ints(&[-2, -2]));
    assert_eq!(s(&mut c, "ZPTTL nokey MEMBERS 1 a"), ints(&[-2]));
    assert_eq!(s(&mut c, "ZEXPIRETIME nokey MEMBERS 1 a"), ints(&[-2]));
    assert_eq!(s(&mut c, "ZPEXPIRETIME nokey MEMBERS 1 a"), ints(&[-2]));
    assert_eq!(s(&mut c, "ZPERSIST nokey MEMBERS 1 a"), ints(&[-1]));
    // A skiplist-encoded set behaves the same.
    for i in 0..200 {
        c.cmd_str(&format!("ZADD big {i} m{i}"));
    }
    assert_eq!(s(&mut c, "OBJECT ENCODING big"), "$8\r\nskiplist\r\n");
    assert_eq!(
        s(&mut c, "ZPEXPIRE big 10 MEMBERS 2 m1 m199"),
        ints(&[1, 1])
    );
    advance(&mut c, 10);
    assert_eq!(s(&mut c, "ZCARD big"), ":198\r\n");
}

#[test]
fn argument_errors() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("ZADD z 1 a");
    c.cmd_str("SET s x");
    let cases: &[(&str, &str)] = &[
        (
            "ZEXPIRE z 10 MEMBERS 2 a",
            "-ERR The `nummembers` parameter must match the number of arguments\r\n",
        ),
        (
            "ZEXPIRE z 10 MEMBERS 0 a",
            "-ERR Parameter `numMembers` should be greater than 0\r\n",
        ),
        (
            "ZEXPIRE z 10 MEMBERS -1 a",
            "-ERR Parameter `numMembers` should be greater than 0\r\n",
        ),
        (
            "ZEXPIRE z 10 MEMBERS x a",
            "-ERR Parameter `numMembers` should be greater than 0\r\n",
        ),
        (
            "ZEXPIRE z 10 FIELDS 1 a",
            "-ERR Mandatory argument MEMBERS is missing or not at the right position\r\n",
        ),
        (
            "ZEXPIRE z 10 NX XX MEMBERS 1 a",
            "-ERR Mandatory argument MEMBERS is missing or not at the right position\r\n",
        ),
        (
            "ZEXPIRE z x MEMBERS 1 a",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "ZEXPIRE z -1 MEMBERS 1 a",
            "-ERR invalid expire time, must be >= 0\r\n",
        ),
        (
            "ZEXPIRE z 9999999999999999 MEMBERS 1 a",
            "-ERR invalid expire time in 'zexpire' command\r\n",
        ),
        (
            "ZPEXPIREAT z 99999999999999999 MEMBERS 1 a",
            "-ERR invalid expire time in 'zpexpireat' command\r\n",
        ),
        (
            "ZTTL z MEMBERS 0 a",
            "-ERR Number of members must be a positive integer\r\n",
        ),
        (
            "ZTTL z MEMBERS 2 a",
            "-ERR The `nummembers` parameter must match the number of arguments\r\n",
        ),
        (
            "ZPERSIST z FIELDS 1 a",
            "-ERR Mandatory argument MEMBERS is missing or not at the right position\r\n",
        ),
        (
            "ZEXPIRE s 10 MEMBERS 1 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        (
            "ZTTL s MEMBERS 1 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        (
            "ZPERSIST s MEMBERS 1 a",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
        (
            "ZEXPIRE z 10 MEMBERS",
            "-ERR wrong number of arguments for 'zexpire' command\r\n",
        ),
        (
            "ZTTL z MEMBERS",
            "-ERR wrong number of arguments for 'zttl' command\r\n",
        ),
        (
            "ZCOLLECT",
            "-ERR wrong number of arguments for 'zcollect' command\r\n",
        ),
    ];
    for (cmd, want) in cases {
        assert_eq!(s(&mut c, cmd), *want, "{cmd}");
    }
    // Nothing changed.
    assert_eq!(s(&mut c, "ZTTL z MEMBERS 1 a"), ints(&[-1]));
}

/// Every sorted-set command's view of `key` (member `gone`, scored 1, past
/// its deadline; `live`, scored 2, without TTL), as if `gone` had never
/// been there.
fn assert_invisible(c: &mut RawConn, key: &str) {
    let one = "*1\r\n$4\r\nlive\r\n";
    let checks: Vec<(String, String)> = vec![
        (format!("ZCARD {key}"), ":1\r\n".into()),
        (format!("ZSCORE {key} gone"), "$-1\r\n".into()),
        (
            format!("ZMSCORE {key} gone live"),
            "*2\r\n$-1\r\n$1\r\n2\r\n".into(),
        ),
        (format!("ZRANK {key} gone"), "$-1\r\n".into()),
        (format!("ZRANK {key} live"), ":0\r\n".into()),
        (format!("ZREVRANK {key} live"), ":0\r\n".into()),
        (format!("ZCOUNT {key} -inf +inf"), ":1\r\n".into()),
        (format!("ZLEXCOUNT {key} - +"), ":1\r\n".into()),
        (format!("ZRANGE {key} 0 -1"), one.into()),
        (format!("ZRANGE {key} -inf +inf BYSCORE"), one.into()),
        (format!("ZRANGEBYSCORE {key} -inf +inf"), one.into()),
        (format!("ZREVRANGEBYSCORE {key} +inf -inf"), one.into()),
        (format!("ZRANGEBYLEX {key} - +"), one.into()),
        (format!("ZREVRANGE {key} 0 -1"), one.into()),
        (
            format!("ZSCAN {key} 0"),
            "*2\r\n$1\r\n0\r\n*2\r\n$4\r\nlive\r\n$1\r\n2\r\n".into(),
        ),
        (format!("ZRANDMEMBER {key} 5"), one.into()),
        (
            format!("ZRANDMEMBER {key} -3"),
            "*3\r\n$4\r\nlive\r\n$4\r\nlive\r\n$4\r\nlive\r\n".into(),
        ),
        (format!("ZUNION 1 {key}"), one.into()),
        (format!("ZINTER 1 {key}"), one.into()),
        (format!("ZDIFF 1 {key}"), one.into()),
        (format!("ZINTERCARD 1 {key}"), ":1\r\n".into()),
        (format!("ZTTL {key} MEMBERS 1 gone"), ints(&[-2])),
        (format!("ZPERSIST {key} MEMBERS 1 gone"), ints(&[-1])),
        (format!("ZEXPIRE {key} 10 MEMBERS 1 gone"), ints(&[0])),
        (format!("ZREM {key} gone"), ":0\r\n".into()),
        (format!("ZADD {key} XX CH 5 gone"), ":0\r\n".into()),
    ];
    for (cmd, want) in checks {
        assert_eq!(s(c, &cmd), want, "{cmd}");
    }
}

#[test]
fn members_vanish_exactly_at_their_deadline() {
    for big in [false, true] {
        let (_z, mut c) = frozen(&[]);
        c.cmd_str("ZADD z 1 gone 2 live");
        if big {
            c.cmd_str("CONFIG SET zset-max-listpack-entries 0");
            c.cmd_str("ZADD z 3 tmp");
            c.cmd_str("ZREM z tmp");
        }
        assert_eq!(s(&mut c, "ZPEXPIRE z 1000 MEMBERS 1 gone"), ints(&[1]));
        advance(&mut c, 999);
        assert_eq!(s(&mut c, "ZPTTL z MEMBERS 1 gone"), ints(&[1]));
        assert_eq!(s(&mut c, "ZCARD z"), ":2\r\n", "big={big}");
        advance(&mut c, 1);
        assert_invisible(&mut c, "z");
        // Store commands and pops see it gone too.
        c.cmd_str("ZPEXPIRE z 10 MEMBERS 1 live");
        c.cmd_str("ZADD z 7 other");
        c.cmd_str("ZPEXPIRE z 20 MEMBERS 1 other");
        advance(&mut c, 10);
        assert_eq!(s(&mut c, "ZUNIONSTORE d 1 z"), ":1\r\n");
        assert_eq!(s(&mut c, "ZPOPMIN z"), "*2\r\n$5\r\nother\r\n$1\r\n7\r\n");
        assert_eq!(s(&mut c, "EXISTS z"), ":0\r\n");
        // The stored copy has no TTL: it stays.
        advance(&mut c, 100);
        assert_eq!(s(&mut c, "ZCARD d"), ":1\r\n");
    }
}

#[test]
fn zadd_drops_a_ttl_and_zincrby_keeps_it() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("ZADD z 1 a 2 b 3 c 4 d");
    c.cmd_str("ZPEXPIRE z 100 MEMBERS 4 a b c d");
    c.cmd_str("ZADD z 1 a"); // same score: still a ZADD of the member
    c.cmd_str("ZADD z 9 b");
    c.cmd_str("ZINCRBY z 1 c");
    c.cmd_str("ZADD z INCR 1 d");
    assert_eq!(
        s(&mut c, "ZPTTL z MEMBERS 4 a b c d"),
        ints(&[-1, -1, 100, 100])
    );
    // A condition that stops the ZADD keeps the TTL.
    c.cmd_str("ZPEXPIRE z 100 MEMBERS 1 a");
    c.cmd_str("ZADD z NX 5 a");
    c.cmd_str("ZADD z GT 0 a");
    assert_eq!(s(&mut c, "ZPTTL z MEMBERS 1 a"), ints(&[100]));
    // A member removed and added again does not inherit its old TTL.
    c.cmd_str("ZPOPMIN z");
    c.cmd_str("ZADD z 1 a");
    assert_eq!(s(&mut c, "ZPTTL z MEMBERS 1 a"), ints(&[-1]));
    advance(&mut c, 100);
    assert_eq!(s(&mut c, "ZRANGE z 0 -1"), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
}

/// Reads (event, key) pairs from a `__keyevent@0__:*` subscriber.
fn events(sub: &mut RawConn, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let msg = parse_reply(&sub.read_reply());
            let parts = msg.array();
            format!(
                "{} {}",
                String::from_utf8_lossy(parts[2].bulk()),
                String::from_utf8_lossy(parts[3].bulk())
            )
        })
        .collect()
}

#[test]
fn an_emptied_set_is_gone_with_zexpired_and_del() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "KEA"]);
    let mut sub = z.conn();
    sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
    c.cmd_str("ZADD z 1 a 2 b");
    c.cmd_str("ZPEXPIRE z 50 MEMBERS 1 a");
    c.cmd_str("ZPEXPIRE z 60 MEMBERS 1 b");
    c.cmd_str("ZPERSIST z MEMBERS 1 b");
    c.cmd_str("ZPEXPIRE z 60 MEMBERS 1 b");
    assert_eq!(
        events(&mut sub, 5),
        [
            "__keyevent@0__:zadd z",
            "__keyevent@0__:zexpire z",
            "__keyevent@0__:zexpire z",
            "__keyevent@0__:zpersist z",
            "__keyevent@0__:zexpire z",
        ]
    );
    advance(&mut c, 50);
    assert_eq!(s(&mut c, "ZCARD z"), ":1\r\n");
    assert_eq!(events(&mut sub, 1), ["__keyevent@0__:zexpired z"]);
    advance(&mut c, 10);
    assert_eq!(s(&mut c, "TYPE z"), "+none\r\n");
    assert_eq!(s(&mut c, "EXISTS z"), ":0\r\n");
    assert_eq!(s(&mut c, "DBSIZE"), ":0\r\n");
    assert_eq!(
        events(&mut sub, 2),
        ["__keyevent@0__:zexpired z", "__keyevent@0__:del z"]
    );
    // A past deadline deletes at once: zrem, then del.
    c.cmd_str("ZADD y 1 a");
    c.cmd_str("ZEXPIRE y 0 MEMBERS 1 a");
    assert_eq!(
        events(&mut sub, 3),
        [
            "__keyevent@0__:zadd y",
            "__keyevent@0__:zrem y",
            "__keyevent@0__:del y"
        ]
    );
}

#[test]
fn keys_and_scan_skip_a_set_whose_members_all_expired() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("DEBUG SET-ACTIVE-EXPIRE 0");
    c.cmd_str("ZADD z 1 a 2 b");
    c.cmd_str("ZPEXPIRE z 10 MEMBERS 2 a b");
    advance(&mut c, 10);
    assert_eq!(s(&mut c, "KEYS *"), "*0\r\n");
    assert_eq!(s(&mut c, "SCAN 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
    // A windowed set whose members went some by age, some by TTL.
    c.cmd_str("ZWINDOW SET w:* 10s");
    let now = T0_MS / 1000;
    c.cmd_str(&format!("ZADD w:1 {} aged {} ttl", now - 5, now));
    c.cmd_str("ZPEXPIRE w:1 100 MEMBERS 1 ttl");
    assert_eq!(s(&mut c, "KEYS *"), "*1\r\n$3\r\nw:1\r\n");
    advance(&mut c, 5000);
    assert_eq!(s(&mut c, "KEYS *"), "*0\r\n");
    assert_eq!(s(&mut c, "SCAN 0"), "*2\r\n$1\r\n0\r\n*0\r\n");
    assert_eq!(s(&mut c, "EXISTS w:1"), ":0\r\n");
}

#[test]
fn the_sweeper_reclaims_idle_sets() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "Ez"]);
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyevent@0__:zexpired");
    let n = 200;
    for i in 0..n {
        c.cmd_str(&format!("ZADD k{i} 1 a 2 b"));
        // Half lose one member, half lose both.
        let members = if i % 2 == 0 {
            "MEMBERS 1 a"
        } else {
            "MEMBERS 2 a b"
        };
        c.cmd_str(&format!("ZPEXPIRE k{i} {} {members}", 10 + i));
    }
    // One big set with many deadlines, reclaimed in batches.
    for j in 0..2000 {
        c.cmd_str(&format!("ZADD big {j} f{j}"));
    }
    c.cmd_str("ZADD big -1 keep");
    for j in 0..2000 {
        c.cmd_str(&format!("ZPEXPIRE big {} MEMBERS 1 f{j}", 1 + j % 300));
    }
    assert_eq!(s(&mut c, "DBSIZE"), format!(":{}\r\n", n + 1));
    advance(&mut c, 1000);
    // Nobody touches the keys: the sweeper does it.
    wait_for(|| s(&mut c, "DBSIZE") == format!(":{}\r\n", n / 2 + 1));
    let mut seen = 0;
    sub.set_timeout(Duration::from_secs(2));
    while seen < n {
        let msg = parse_reply(&sub.read_reply());
        if msg.array()[0].bulk() == b"message" {
            seen += 1;
        }
    }
    wait_for(|| s(&mut c, "ZCARD big") == ":1\r\n");
    for i in (0..n).step_by(2) {
        assert_eq!(
            s(&mut c, &format!("ZRANGE k{i} 0 -1 WITHSCORES")),
            "*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
        );
    }
}

#[test]
fn zcollect_removes_due_members_of_named_keys_or_all() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "Ez"]);
    c.cmd_str("DEBUG SET-ACTIVE-EXPIRE 0");
    for k in ["a", "b", "c"] {
        c.cmd_str(&format!("ZADD {k} 1 x 2 y"));
        c.cmd_str(&format!("ZPEXPIRE {k} 10 MEMBERS 1 x"));
    }
    c.cmd_str("SET str v");
    advance(&mut c, 10);
    // Only ZCOLLECT looks at the keys (no sweeper, no lookup), so the
    // `zexpired` events are its work.
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyevent@0__:zexpired");
    assert_eq!(s(&mut c, "ZCOLLECT a str nokey"), "+OK\r\n");
    let key = |sub: &mut RawConn| {
        String::from_utf8_lossy(parse_reply(&sub.read_reply()).array()[2].bulk()).into_owned()
    };
    assert_eq!(key(&mut sub), "a");
    assert_eq!(s(&mut c, "ZCOLLECT *"), "+OK\r\n");
    let mut rest = [key(&mut sub), key(&mut sub)];
    rest.sort();
    assert_eq!(rest, ["b", "c"]);
    for k in ["a", "b", "c"] {
        assert_eq!(s(&mut c, &format!("ZRANGE {k} 0 -1")), "*1\r\n$1\r\ny\r\n");
    }
    assert_eq!(
        s(&mut c, "COMMAND GETKEYS ZCOLLECT a b"),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
}

#[test]
fn rename_copy_and_move_carry_member_ttls() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("ZADD z 1 a 2 b");
    c.cmd_str("ZPEXPIRE z 100 MEMBERS 1 a");
    assert_eq!(s(&mut c, "RENAME z r"), "+OK\r\n");
    let at = ints(&[(T0_MS + 100) as i64]);
    assert_eq!(s(&mut c, "ZPEXPIRETIME r MEMBERS 1 a"), at);
    assert_eq!(s(&mut c, "COPY r cp"), ":1\r\n");
    assert_eq!(s(&mut c, "ZPEXPIRETIME cp MEMBERS 1 a"), at);
    assert_eq!(s(&mut c, "MOVE cp 1"), ":1\r\n");
    c.cmd_str("SELECT 1");
    assert_eq!(s(&mut c, "ZPEXPIRETIME cp MEMBERS 1 a"), at);
    advance(&mut c, 100);
    // Expired in the other database by its own sweeper pass or lookup.
    assert_eq!(s(&mut c, "ZRANGE cp 0 -1"), "*1\r\n$1\r\nb\r\n");
    c.cmd_str("SELECT 0");
    assert_eq!(s(&mut c, "ZRANGE r 0 -1"), "*1\r\n$1\r\nb\r\n");
}

#[test]
fn a_windowed_member_goes_at_whichever_comes_first_and_is_handed_off_once() {
    let (z, mut c) = frozen(&[]);
    assert_eq!(
        s(&mut c, "ZWINDOW SET fold:* 5s MOVETO {key}:due"),
        "+OK\r\n"
    );
    let now = T0_MS / 1000;
    // `early` ages out by the window in 1 s; `ttl` expires by TTL in
    // 200 ms; `late` would age out in 4 s but its TTL (2 s) comes first;
    // `stay` has a TTL after its window deadline.
    c.cmd_str(&format!(
        "ZADD fold:1 {} early {} ttl {} late {} stay {} keep",
        now - 4,
        now,
        now + 1 - 2,
        now,
        now + 100
    ));
    assert_eq!(s(&mut c, "ZPEXPIRE fold:1 200 MEMBERS 1 ttl"), ints(&[1]));
    assert_eq!(s(&mut c, "ZPEXPIRE fold:1 2000 MEMBERS 1 late"), ints(&[1]));
    assert_eq!(
        s(&mut c, "ZPEXPIRE fold:1 60000 MEMBERS 1 stay"),
        ints(&[1])
    );
    advance(&mut c, 200);
    // Lazily, on lookup: `ttl` is handed off.
    assert_eq!(s(&mut c, "ZCARD fold:1"), ":4\r\n");
    assert_eq!(s(&mut c, "LRANGE fold:1:due 0 -1"), "*1\r\n$3\r\nttl\r\n");
    advance(&mut c, 1000);
    // The sweeper (nobody reads the set): `early` by its window.
    wait_for(|| s(&mut c, "LLEN fold:1:due") == ":2\r\n");
    advance(&mut c, 1000);
    wait_for(|| s(&mut c, "LLEN fold:1:due") == ":3\r\n");
    advance(&mut c, 5000);
    wait_for(|| s(&mut c, "LLEN fold:1:due") == ":4\r\n");
    assert_eq!(
        s(&mut c, "LRANGE fold:1:due 0 -1"),
        "*4\r\n$3\r\nttl\r\n$5\r\nearly\r\n$4\r\nlate\r\n$4\r\nstay\r\n"
    );
    // Each once: nothing more arrives, and only `keep` is left.
    advance(&mut c, 60_000);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(s(&mut c, "LLEN fold:1:due"), ":4\r\n");
    assert_eq!(s(&mut c, "ZRANGE fold:1 0 -1"), "*1\r\n$4\r\nkeep\r\n");
    // A consumer blocked on the list is served by a TTL hand-off.
    c.cmd_str("DEL fold:1:due");
    c.cmd_str("ZADD fold:2 1e12 m");
    c.cmd_str("ZPEXPIRE fold:2 100 MEMBERS 1 m");
    let mut consumer = z.conn();
    consumer.send(b"*3\r\n$5\r\nBLPOP\r\n$10\r\nfold:2:due\r\n$1\r\n2\r\n");
    std::thread::sleep(Duration::from_millis(50));
    advance(&mut c, 100);
    consumer.set_timeout(Duration::from_secs(2));
    assert_eq!(
        consumer.read_reply(),
        b"*2\r\n$10\r\nfold:2:due\r\n$1\r\nm\r\n"
    );
}

/// The value of `name` in `INFO section`.
fn info_field(c: &mut RawConn, section: &str, name: &str) -> String {
    let text = s(c, &format!("INFO {section}"));
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_string()
}

#[test]
fn info_counts_volatile_and_expired_members_and_fields() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("ZADD z 1 a 2 b 3 c");
    c.cmd_str("ZPEXPIRE z 100 MEMBERS 2 a b");
    c.cmd_str("HSET h f1 v f2 v f3 v");
    c.cmd_str("HPEXPIRE h 200 FIELDS 1 f1");
    c.cmd_str("HSET plain f v");
    c.cmd_str("ZADD plainz 1 a");
    assert_eq!(info_field(&mut c, "windows", "volatile_keys"), "2");
    assert_eq!(info_field(&mut c, "windows", "volatile_members"), "2");
    assert_eq!(info_field(&mut c, "windows", "volatile_fields"), "1");
    assert_eq!(info_field(&mut c, "windows", "windowed_keys"), "0");
    assert_eq!(
        info_field(&mut c, "keyspace", "db0"),
        "keys=4,expires=0,avg_ttl=0,subexpiry=2"
    );
    // ZPERSIST and HPERSIST lower the counts; expiry moves them to the
    // expired counters.
    c.cmd_str("ZPERSIST z MEMBERS 1 b");
    assert_eq!(info_field(&mut c, "windows", "volatile_members"), "1");
    advance(&mut c, 300);
    assert_eq!(s(&mut c, "ZCARD z"), ":2\r\n");
    assert_eq!(s(&mut c, "HLEN h"), ":2\r\n");
    assert_eq!(info_field(&mut c, "windows", "volatile_keys"), "0");
    assert_eq!(info_field(&mut c, "windows", "volatile_members"), "0");
    assert_eq!(info_field(&mut c, "windows", "volatile_fields"), "0");
    assert_eq!(info_field(&mut c, "windows", "expired_members"), "1");
    assert_eq!(info_field(&mut c, "windows", "expired_fields"), "1");
    assert_eq!(info_field(&mut c, "stats", "expired_subkeys"), "2");
    assert_eq!(
        info_field(&mut c, "keyspace", "db0"),
        "keys=4,expires=0,avg_ttl=0,subexpiry=0"
    );
}
