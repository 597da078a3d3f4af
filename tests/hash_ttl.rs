//! Hash field TTLs (Redis 7.4's HEXPIRE family and Redis 8.0's HGETEX,
//! HSETEX, HGETDEL): differential against Redis 8.0 (built by `.ci/test`,
//! see `common::redis8_server`; these tests fail if it is missing) for
//! replies, errors and keyspace events in RESP2 and RESP3, with absolute
//! deadlines far in the future so replies compare exactly; and zwindow-only
//! tests of expiry itself under zwindow's frozen clock (`DEBUG CLOCK`):
//! fields vanish at their deadline for every hash command, emptied hashes
//! disappear with `hexpired` and `del`, the sweeper reclaims idle keys, and
//! RENAME/COPY/MOVE carry the deadlines.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Far-future deadlines (seconds and ms): replies never depend on "now".
const AT_S: u64 = 4_000_000_000;
const AT2_S: u64 = 3_900_000_000;

fn redis8_pair() -> (Servers, Pair) {
    let s = Servers::start_redis8(&[]);
    let p = s.pair();
    (s, p)
}

/// Runs `f` on a fresh Redis 8.0 pair in RESP2, then again in RESP3.
fn in_both_protocols8(f: impl Fn(&mut Pair)) {
    let (_s, mut p) = redis8_pair();
    f(&mut p);
    p.check_str("FLUSHALL");
    p.both_str("HELLO 3");
    f(&mut p);
}

#[test]
fn expire_family_matches_redis8() {
    in_both_protocols8(|p| {
        p.script(&[
            "HSET h a 1 b 2 c 3 d 4",
            "OBJECT ENCODING h",
            &format!("HEXPIREAT h {AT_S} FIELDS 2 b d"),
            "OBJECT ENCODING h",
            "HGETALL h",
            "HTTL h FIELDS 3 a x a",
            "HPTTL h FIELDS 2 a x",
            "HEXPIRETIME h FIELDS 3 a b x",
            "HPEXPIRETIME h FIELDS 3 a b x",
            // Conditions: GT/LT treat "no TTL" as infinite; NX/XX.
            &format!("HEXPIREAT h {AT2_S} GT FIELDS 2 b c"),
            &format!("HEXPIREAT h {AT2_S} LT FIELDS 3 b c a"),
            "HGETALL h",
            &format!("HPEXPIREAT h {} NX FIELDS 3 b c a", AT2_S * 1000 - 5),
            &format!("HPEXPIREAT h {} XX FIELDS 3 b c a", AT2_S * 1000 - 7),
            &format!("HPEXPIREAT h {} gt FIELDS 2 b b", AT2_S * 1000 + 1),
            "HPEXPIRETIME h FIELDS 4 a b c d",
            "HGETALL h",
            "HPERSIST h FIELDS 3 a b x",
            "HGETALL h",
            "HPEXPIRETIME h FIELDS 4 a b c d",
            // HSET drops a field's TTL (and moves it behind the TTL fields).
            "HSET h c 9",
            "HGETALL h",
            "HEXPIRETIME h FIELDS 1 c",
            // HINCRBY and HINCRBYFLOAT keep it.
            &format!("HEXPIREAT h {AT_S} FIELDS 2 a c"),
            "HSET h a 5",
            &format!("HEXPIREAT h {AT_S} FIELDS 1 a"),
            "HINCRBY h a 2",
            "HINCRBYFLOAT h a 0.5",
            "HEXPIRETIME h FIELDS 1 a",
            "HSETNX h a 1",
            "HEXPIRETIME h FIELDS 1 a",
            // Relative forms: the per-field codes.
            "HEXPIRE h 100 FIELDS 2 a zz",
            "HPEXPIRE h 100000 FIELDS 2 b zz",
            // A deadline already past deletes the field (2); the last one, the key.
            "HEXPIREAT h 1 FIELDS 2 a zz",
            "HGETALL h",
            "HPEXPIRE h 0 FIELDS 3 b c d",
            "EXISTS h",
            "TYPE h",
            // Missing keys.
            "HEXPIRE nokey 10 FIELDS 2 a b",
            "HTTL nokey FIELDS 2 a b",
            "HPERSIST nokey FIELDS 1 a",
            "HEXPIRETIME nokey FIELDS 1 a",
            // Listpack hashes never given a TTL.
            "HSET lp a 1",
            "HPERSIST lp FIELDS 2 a b",
            "HTTL lp FIELDS 2 a b",
            "OBJECT ENCODING lp",
            "HEXPIRE lp 100 FIELDS 1 zz",
            "OBJECT ENCODING lp",
            // Hashtable encoding.
            "HSET big a 1",
            &format!("HEXPIREAT big {AT_S} FIELDS 1 a"),
            "HSET big zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz 1",
            "OBJECT ENCODING big",
            "HEXPIRETIME big FIELDS 2 a zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
            &format!("HEXPIREAT big {AT2_S} LT FIELDS 1 a"),
            "HPEXPIRETIME big FIELDS 1 a",
            "HPERSIST big FIELDS 2 a a",
            "OBJECT ENCODING big",
            "HEXPIREAT big 1 FIELDS 1 a",
            "HLEN big",
        ]);
    });
}

#[test]
fn expire_family_errors_match_redis8() {
    in_both_protocols8(|p| {
        p.script(&[
            "HSET h a 1",
            "SET s x",
            "HEXPIRE h 10 FIELDS 2 a",
            "HEXPIRE h 10 FIELDS 0 a",
            "HEXPIRE h 10 FIELDS -1 a",
            "HEXPIRE h 10 FIELDS x a",
            "HEXPIRE h 10 FOO 1 a",
            "HEXPIRE h 10 NX NX 1 a",
            "HEXPIRE h 10 NX FIELDS 1",
            "HEXPIRE h -1 FIELDS 1 a",
            "HEXPIRE h abc FIELDS 1 a",
            "HEXPIRE h 9999999999999999 FIELDS 1 a",
            "HPEXPIREAT h 70368744177664 FIELDS 1 a",
            "HEXPIREAT h 70368744178 FIELDS 1 a",
            "HPEXPIRE h 70368744177663 FIELDS 1 a",
            "HEXPIRE h 10 FIELDS",
            "HEXPIRE h 10",
            // The key's type is checked before anything else.
            "HEXPIRE s abc FIELDS 1 a",
            "HTTL s FOO 1 a",
            "HPERSIST s FOO 1 a",
            "HEXPIRETIME s FIELDS 1 a",
            "HTTL h FIELDS 0 a",
            "HTTL h FIELDS 2 a",
            "HTTL h FOO 1 a",
            "HTTL h FIELDS 1",
            "HPTTL h FIELDS x a",
            "HPERSIST h FIELDS 0 a",
            "HPERSIST h FIELDS 2 a",
            "HPEXPIRETIME h FIELD 1 a",
        ]);
    });
}

#[test]
fn hgetex_hsetex_hgetdel_match_redis8() {
    in_both_protocols8(|p| {
        p.script(&[
            "HSET h a 1 b 2 c 3",
            "HGETEX h FIELDS 2 a b",
            "OBJECT ENCODING h",
            &format!("HGETEX h EXAT {AT_S} FIELDS 3 a b zz"),
            "OBJECT ENCODING h",
            "HGETALL h",
            "HEXPIRETIME h FIELDS 3 a b c",
            &format!("HGETEX h PXAT {} FIELDS 1 c", AT2_S * 1000),
            "HGETALL h",
            "HGETEX h PERSIST FIELDS 2 a c",
            "HGETALL h",
            "HPEXPIRETIME h FIELDS 3 a b c",
            "HGETEX h EX 100 FIELDS 1 zz",
            "HGETEX h PX 100000 FIELDS 1 zz",
            "HGETEX h EX 0 FIELDS 1 a",
            "HGETEX h EXAT 1 FIELDS 2 b b",
            "HGETALL h",
            "HGETEX nokey EX 10 FIELDS 2 a b",
            "HGETEX nokey FIELDS 1 a",
            "HGETEX h FOO FIELDS 1 a",
            "HGETEX h PERSIST 1 a",
            "HGETEX h EXAT -5 FIELDS 1 a",
            "HGETEX h EX abc FIELDS 1 a",
            "HGETEX h EX 1 FIELDS 2 a",
            "HGETEX h FIELDS 0 a",
            // HSETEX.
            "HSETEX h2 FIELDS 1 x 1",
            "OBJECT ENCODING h2",
            "HSETEX h2 FNX FIELDS 1 x 1",
            "HSETEX h2 FXX FIELDS 2 x 1 y 2",
            &format!("HSETEX h2 FNX EXAT {AT_S} FIELDS 2 y 1 z 2"),
            "OBJECT ENCODING h2",
            &format!("HSETEX h2 FXX PXAT {} FIELDS 2 x 7 y 8", AT2_S * 1000),
            "HGETALL h2",
            "HPEXPIRETIME h2 FIELDS 3 x y z",
            "HSETEX h2 KEEPTTL FIELDS 1 x 5",
            "HPEXPIRETIME h2 FIELDS 1 x",
            "HSETEX h2 FIELDS 1 x 6",
            "HPEXPIRETIME h2 FIELDS 1 x",
            "HGETALL h2",
            "HSETEX h2 EX 100 FIELDS 1 w 1",
            "HSETEX h2 EXAT 1 FIELDS 2 x 1 q 2",
            "HGETALL h2",
            "HSETEX nokey2 FXX FIELDS 1 a 1",
            "EXISTS nokey2",
            "HSETEX nokey2 EXAT 1 FIELDS 1 a 1",
            "EXISTS nokey2",
            "HSETEX h2 FNX FXX FIELDS 1 x 5",
            "HSETEX h2 FXX FXX FIELDS 1 x 5",
            "HSETEX h2 EX 10 PX 10 FIELDS 1 x 5",
            "HSETEX h2 KEEPTTL EX 10 FIELDS 1 x 5",
            "HSETEX h2 EX",
            "HSETEX h2 FNX EX",
            "HSETEX h2 FOO FIELDS 1 x 5",
            "HSETEX h2 FIELDS 2 x 5",
            "HSETEX h2 FIELDS 0 x 5",
            "HSETEX h2 FIELDS abc x 5",
            "HSETEX h2 FIELDS 1 x 5 y",
            "HSETEX h2 FIELDS 1 x",
            "HSETEX h2 EX -1 FIELDS 1 a b",
            "HSETEX h2 EX 10 FIELDS 1",
            // HGETDEL.
            "HGETDEL h2 FIELDS 3 y y nope",
            "HGETALL h2",
            "HGETDEL h2 FIELDS 2 z w",
            "EXISTS h2",
            "HGETDEL h2 FIELDS 1 z",
            "HGETDEL h2 FIELD 1 z",
            "HGETDEL h2 FIELDS 0 z",
            "HGETDEL h2 FIELDS 2 z",
            // Wrong type first.
            "SET s x",
            "HGETEX s FOO FIELDS 1 a",
            "HSETEX s FIELDS 1 a 1",
            "HGETDEL s FOO 1 a",
        ]);
    });
}

/// COMMAND INFO (arity, flags, first/last/step, ACL categories, tips, key
/// specs) and the keys COMMAND GETKEYSANDFLAGS finds, as Redis 8.0 has them.
#[test]
fn command_info_and_keys_match_redis8() {
    in_both_protocols8(|p| {
        for name in [
            "hexpire",
            "hpexpire",
            "hexpireat",
            "hpexpireat",
            "httl",
            "hpttl",
            "hexpiretime",
            "hpexpiretime",
            "hpersist",
            "hgetex",
            "hsetex",
            "hgetdel",
        ] {
            p.check_str(&format!("COMMAND INFO {name}"));
            p.check_str(&format!("COMMAND LIST FILTERBY PATTERN {name}"));
        }
        for inv in [
            "HEXPIRE k 10 FIELDS 1 a",
            "HPEXPIRE k 10 NX FIELDS 1 a",
            "HEXPIREAT k 10 FIELDS 1 a",
            "HPEXPIREAT k 10 FIELDS 1 a",
            "HTTL k FIELDS 1 a",
            "HPTTL k FIELDS 1 a",
            "HEXPIRETIME k FIELDS 1 a",
            "HPEXPIRETIME k FIELDS 1 a",
            "HPERSIST k FIELDS 1 a",
            "HGETEX k EX 10 FIELDS 1 a",
            "HSETEX k FNX KEEPTTL FIELDS 1 a b",
            "HGETDEL k FIELDS 1 a",
        ] {
            p.check_str(&format!("COMMAND GETKEYS {inv}"));
            p.check_str(&format!("COMMAND GETKEYSANDFLAGS {inv}"));
        }
        p.check_str("COMMAND COUNT FOO");
    });
}

/// Keyspace events of every command, as a subscriber sees them.
#[test]
fn keyspace_events_match_redis8() {
    let s = Servers::start_redis8(&["--notify-keyspace-events", "KEA"]);
    let run = |mut c: RawConn, mut sub: RawConn| -> Vec<Vec<u8>> {
        sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
        sub.cmd_str("SUBSCRIBE end");
        for line in [
            "HSET h a 1 b 2 c 3",
            &format!("HEXPIREAT h {AT_S} FIELDS 2 a zz"),
            &format!("HEXPIREAT h {AT_S} NX FIELDS 1 a"),
            "HPERSIST h FIELDS 2 a b",
            "HPERSIST h FIELDS 1 a",
            "HEXPIREAT h 1 FIELDS 1 a",
            &format!("HGETEX h EXAT {AT_S} FIELDS 1 b"),
            "HGETEX h PERSIST FIELDS 1 b",
            "HGETEX h PERSIST FIELDS 1 b",
            "HGETEX h EXAT 1 FIELDS 1 b",
            &format!("HSETEX h EXAT {AT_S} FIELDS 1 d 4"),
            "HSETEX h KEEPTTL FIELDS 1 d 5",
            "HSETEX h FXX FIELDS 1 nope 5",
            "HSETEX h EXAT 1 FIELDS 1 e 5",
            "HGETDEL h FIELDS 2 c nope",
            "HGETDEL h FIELDS 1 nope",
            "HPEXPIREAT h 1 FIELDS 1 d",
            "HSETEX k2 EXAT 1 FIELDS 1 a 1",
        ] {
            c.cmd_str(line);
        }
        c.cmd_str("PUBLISH end .");
        let mut events = Vec::new();
        loop {
            let msg = parse_reply(&sub.read_reply());
            let parts = msg.array();
            let kind = parts[0].bulk();
            if kind == b"message" {
                break;
            }
            // pmessage pattern channel key
            let mut e = parts[2].bulk().to_vec();
            e.push(b' ');
            e.extend_from_slice(parts[3].bulk());
            events.push(e);
        }
        events
    };
    let r = run(s.r.conn(), s.r.conn());
    let z = run(s.z.conn(), s.z.conn());
    let show = |v: &[Vec<u8>]| {
        v.iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&z), show(&r));
}

// ---------------------------------------------------------------------------
// Expiry under zwindow's frozen clock.
// ---------------------------------------------------------------------------

/// The frozen start of every clock test (Unix ms).
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

/// Every hash command's view of `h` (fields `gone` with a passed deadline
/// and `live` without TTL), compared with what it would be if `gone` had
/// never been there.
fn assert_invisible(c: &mut RawConn, key: &str, gone: &str, live: &str) {
    let s = |c: &mut RawConn, l: &str| String::from_utf8_lossy(&c.cmd_str(l)).into_owned();
    assert_eq!(s(c, &format!("HGET {key} {gone}")), "$-1\r\n");
    assert_eq!(
        s(c, &format!("HMGET {key} {gone} {live}")),
        "*2\r\n$-1\r\n$1\r\nv\r\n"
    );
    assert_eq!(s(c, &format!("HEXISTS {key} {gone}")), ":0\r\n");
    assert_eq!(s(c, &format!("HSTRLEN {key} {gone}")), ":0\r\n");
    assert_eq!(s(c, &format!("HLEN {key}")), ":1\r\n");
    let one = format!("*1\r\n${}\r\n{live}\r\n", live.len());
    assert_eq!(s(c, &format!("HKEYS {key}")), one);
    assert_eq!(s(c, &format!("HVALS {key}")), "*1\r\n$1\r\nv\r\n");
    assert_eq!(
        s(c, &format!("HGETALL {key}")),
        format!("*2\r\n${}\r\n{live}\r\n$1\r\nv\r\n", live.len())
    );
    assert_eq!(
        s(c, &format!("HSCAN {key} 0")),
        format!(
            "*2\r\n$1\r\n0\r\n*2\r\n${}\r\n{live}\r\n$1\r\nv\r\n",
            live.len()
        )
    );
    for _ in 0..5 {
        assert_eq!(
            s(c, &format!("HRANDFIELD {key} -3")),
            format!("*3\r\n{0}{0}{0}", format!("${}\r\n{live}\r\n", live.len()))
        );
    }
    assert_eq!(s(c, &format!("HRANDFIELD {key} 5")), one);
    assert_eq!(
        s(c, &format!("HTTL {key} FIELDS 1 {gone}")),
        "*1\r\n:-2\r\n"
    );
    assert_eq!(
        s(c, &format!("HPERSIST {key} FIELDS 1 {gone}")),
        "*1\r\n:-2\r\n"
    );
    assert_eq!(
        s(c, &format!("HEXPIRE {key} 10 FIELDS 1 {gone}")),
        "*1\r\n:-2\r\n"
    );
    assert_eq!(
        s(c, &format!("HGETDEL {key} FIELDS 1 {gone}")),
        "*1\r\n$-1\r\n"
    );
    assert_eq!(
        s(c, &format!("HGETEX {key} FIELDS 1 {gone}")),
        "*1\r\n$-1\r\n"
    );
}

#[test]
fn fields_vanish_exactly_at_their_deadline() {
    for big in [false, true] {
        let (_z, mut c) = frozen(&[]);
        let live = if big { "l".repeat(100) } else { "l".into() };
        c.cmd_str(&format!("HSET h f v {live} v"));
        assert_eq!(
            c.cmd_str("HPEXPIRE h 1000 FIELDS 1 f"),
            b"*1\r\n:1\r\n",
            "big={big}"
        );
        assert_eq!(c.cmd_str("HPTTL h FIELDS 1 f"), b"*1\r\n:1000\r\n");
        assert_eq!(c.cmd_str("HTTL h FIELDS 1 f"), b"*1\r\n:1\r\n");
        assert_eq!(
            c.cmd_str("HPEXPIRETIME h FIELDS 1 f"),
            format!("*1\r\n:{}\r\n", T0_MS + 1000).as_bytes()
        );
        advance(&mut c, 999);
        assert_eq!(c.cmd_str("HPTTL h FIELDS 1 f"), b"*1\r\n:1\r\n");
        assert_eq!(c.cmd_str("HGET h f"), b"$1\r\nv\r\n");
        assert_eq!(c.cmd_str("HLEN h"), b":2\r\n");
        advance(&mut c, 1);
        assert_invisible(&mut c, "h", "f", &live);
        // Writes see it gone too: HSETNX sets it, HINCRBY starts from 0.
        c.cmd_str("HPEXPIRE h 10 FIELDS 1 x");
        c.cmd_str("HSET h n 5");
        c.cmd_str("HPEXPIRE h 10 FIELDS 1 n");
        advance(&mut c, 10);
        assert_eq!(c.cmd_str("HINCRBY h n 1"), b":1\r\n");
        assert_eq!(c.cmd_str("HTTL h FIELDS 1 n"), b"*1\r\n:-1\r\n");
        c.cmd_str("HPEXPIRE h 10 FIELDS 1 n");
        advance(&mut c, 10);
        assert_eq!(c.cmd_str("HSETNX h n 7"), b":1\r\n");
        assert_eq!(c.cmd_str("HGET h n"), b"$1\r\n7\r\n");
    }
}

#[test]
fn hset_drops_a_ttl_and_hincrby_keeps_it() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("HSET h a 1 b 2");
    c.cmd_str("HPEXPIRE h 100 FIELDS 2 a b");
    c.cmd_str("HSET h a 3");
    c.cmd_str("HINCRBY h b 1");
    advance(&mut c, 100);
    assert_eq!(c.cmd_str("HGETALL h"), b"*2\r\n$1\r\na\r\n$1\r\n3\r\n");
}

/// Reads (event, key) pairs from a `__keyevent@0__:*` subscriber until `n`.
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
fn an_emptied_hash_is_gone_with_hexpired_and_del() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "KEA"]);
    let mut sub = z.conn();
    sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
    c.cmd_str("HSET h a 1 b 2");
    c.cmd_str("HPEXPIRE h 50 FIELDS 1 a");
    c.cmd_str("HPEXPIRE h 60 FIELDS 1 b");
    assert_eq!(
        events(&mut sub, 3),
        [
            "__keyevent@0__:hset h",
            "__keyevent@0__:hexpire h",
            "__keyevent@0__:hexpire h"
        ]
    );
    advance(&mut c, 50);
    assert_eq!(c.cmd_str("HLEN h"), b":1\r\n");
    assert_eq!(events(&mut sub, 1), ["__keyevent@0__:hexpired h"]);
    advance(&mut c, 10);
    assert_eq!(c.cmd_str("TYPE h"), b"+none\r\n");
    assert_eq!(c.cmd_str("EXISTS h"), b":0\r\n");
    assert_eq!(c.cmd_str("KEYS *"), b"*0\r\n");
    assert_eq!(c.cmd_str("DBSIZE"), b":0\r\n");
    assert_eq!(
        events(&mut sub, 2),
        ["__keyevent@0__:hexpired h", "__keyevent@0__:del h"]
    );
}

#[test]
fn the_sweeper_reclaims_idle_hashes() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "Eh"]);
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyevent@0__:hexpired");
    let n = 200;
    for i in 0..n {
        c.cmd_str(&format!("HSET k{i} a 1 b 2"));
        // Half lose one field, half lose both.
        let fields = if i % 2 == 0 {
            "FIELDS 1 a"
        } else {
            "FIELDS 2 a b"
        };
        c.cmd_str(&format!("HPEXPIRE k{i} {} {fields}", 10 + i));
    }
    // One big hash with many deadlines, reclaimed in batches.
    for j in 0..2000 {
        c.cmd_str(&format!("HSET big f{j} v"));
    }
    c.cmd_str("HSET big keep v");
    for j in 0..2000 {
        c.cmd_str(&format!("HPEXPIRE big {} FIELDS 1 f{j}", 1 + j % 300));
    }
    assert_eq!(c.cmd_str("DBSIZE"), format!(":{}\r\n", n + 1).as_bytes());
    advance(&mut c, 1000);
    // Nobody touches the keys: the sweeper does it.
    wait_for(|| c.cmd_str("DBSIZE") == format!(":{}\r\n", n / 2 + 1).as_bytes());
    let mut seen = 0;
    sub.set_timeout(Duration::from_secs(2));
    while seen < n {
        let msg = parse_reply(&sub.read_reply());
        if msg.array()[0].bulk() == b"message" {
            seen += 1;
        }
    }
    wait_for(|| c.cmd_str("HLEN big") == b":1\r\n");
    for i in (0..n).step_by(2) {
        assert_eq!(
            c.cmd_str(&format!("HGETALL k{i}")),
            b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n"
        );
    }
}

#[test]
fn rename_copy_and_move_carry_field_ttls() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("HSET h a 1 b 2");
    c.cmd_str("HPEXPIRE h 100 FIELDS 1 a");
    assert_eq!(c.cmd_str("RENAME h r"), b"+OK\r\n");
    let at = format!("*1\r\n:{}\r\n", T0_MS + 100);
    assert_eq!(c.cmd_str("HPEXPIRETIME r FIELDS 1 a"), at.as_bytes());
    assert_eq!(c.cmd_str("COPY r cp"), b":1\r\n");
    assert_eq!(c.cmd_str("HPEXPIRETIME cp FIELDS 1 a"), at.as_bytes());
    assert_eq!(c.cmd_str("OBJECT ENCODING cp"), b"$10\r\nlistpackex\r\n");
    assert_eq!(c.cmd_str("MOVE cp 1"), b":1\r\n");
    c.cmd_str("SELECT 1");
    assert_eq!(c.cmd_str("HPEXPIRETIME cp FIELDS 1 a"), at.as_bytes());
    advance(&mut c, 100);
    assert_eq!(c.cmd_str("HGETALL cp"), b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    c.cmd_str("SELECT 0");
    assert_eq!(c.cmd_str("HGETALL r"), b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
}

#[test]
fn watch_sees_field_expiry_as_a_change_only_when_fields_go() {
    let (z, mut c) = frozen(&[]);
    c.cmd_str("HSET h a 1 b 2");
    c.cmd_str("HPEXPIRE h 100 FIELDS 1 a");
    c.cmd_str("WATCH h");
    // Reading before the deadline changes nothing.
    z.conn().cmd_str("HGETALL h");
    c.cmd_str("MULTI");
    c.cmd_str("HLEN h");
    assert_eq!(c.cmd_str("EXEC"), b"*1\r\n:2\r\n");
    c.cmd_str("WATCH h");
    advance(&mut c, 100);
    z.conn().cmd_str("HGETALL h");
    c.cmd_str("MULTI");
    c.cmd_str("HLEN h");
    assert_eq!(c.cmd_str("EXEC"), b"*-1\r\n");
}
