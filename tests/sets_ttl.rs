//! Set member TTLs (Redis 8.12's SEXPIRE family and SADDEX), under
//! zwindow's frozen clock (`DEBUG CLOCK`): the reply codes redis.io gives
//! (its examples replayed), argument errors, members vanishing at their
//! deadline for every set command, emptied keys disappearing with
//! `sexpired` and `del`, the sweeper reclaiming idle keys, SADDEX's
//! options, RENAME/COPY/MOVE/DUMP/RESTORE carrying the deadlines, DEBUG
//! DIGEST seeing them, and the AOF (with absolute times), RDB restarts and
//! a replica keeping them.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::repl::{digest, eventually, info_field, settle};
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

fn err(text: &str) -> String {
    format!("-{text}\r\n")
}

#[test]
fn the_pages_examples_replay() {
    let (_z, mut c) = frozen(&[]);
    // STTL's example.
    assert_eq!(
        s(&mut c, "STTL no-key MEMBERS 2 member1 member2"),
        ints(&[-2, -2])
    );
    assert_eq!(s(&mut c, "SADD myset member1 member2"), ":2\r\n");
    assert_eq!(
        s(&mut c, "SEXPIRE myset 300 MEMBERS 2 member1 member3"),
        ints(&[1, -2])
    );
    assert_eq!(
        s(&mut c, "STTL myset MEMBERS 3 member1 member2 member3"),
        ints(&[300, -1, -2])
    );
    // SEXPIRETIME's and SPEXPIRETIME's.
    let at_s = (T0_MS / 1000 + 300) as i64;
    assert_eq!(
        s(
            &mut c,
            "SEXPIRETIME myset MEMBERS 3 member1 member2 member3"
        ),
        ints(&[at_s, -1, -2])
    );
    assert_eq!(
        s(&mut c, "SPEXPIRE myset 300000 MEMBERS 1 member1"),
        ints(&[1])
    );
    assert_eq!(
        s(
            &mut c,
            "SPEXPIRETIME myset MEMBERS 3 member1 member2 member3"
        ),
        ints(&[T0_MS as i64 + 300_000, -1, -2])
    );
    assert_eq!(
        s(&mut c, "SPTTL myset MEMBERS 3 member1 member2 member3"),
        ints(&[300_000, -1, -2])
    );
    // SPERSIST's.
    assert_eq!(
        s(&mut c, "SEXPIRE myset 300 MEMBERS 2 member1 member2"),
        ints(&[1, 1])
    );
    assert_eq!(s(&mut c, "SPERSIST myset MEMBERS 1 member2"), ints(&[1]));
    assert_eq!(
        s(&mut c, "STTL myset MEMBERS 2 member1 member2"),
        ints(&[300, -1])
    );
    assert_eq!(
        s(&mut c, "SPERSIST myset MEMBERS 2 member2 member3"),
        ints(&[-1, -2])
    );
    // RESP3: the same arrays of integers.
    c.cmd_str("HELLO 3");
    assert_eq!(
        s(&mut c, "STTL myset MEMBERS 2 member1 member2"),
        ints(&[300, -1])
    );
}

#[test]
fn expire_family_conditions_and_codes() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("SADD s a b c d");
    let at = T0_MS / 1000 + 1000;
    // NX / XX: a member without a TTL counts as "none".
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {at} XX MEMBERS 2 a x")),
        ints(&[0, -2])
    );
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {at} NX MEMBERS 2 a b")),
        ints(&[1, 1])
    );
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {} NX MEMBERS 1 a", at + 5)),
        ints(&[0])
    );
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {} XX MEMBERS 1 a", at + 5)),
        ints(&[1])
    );
    // GT / LT: no TTL is an infinite one.
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {} GT MEMBERS 2 a c", at + 1)),
        ints(&[0, 0])
    );
    assert_eq!(
        s(&mut c, &format!("SEXPIREAT s {} gt MEMBERS 1 a", at + 9)),
        ints(&[1])
    );
    assert_eq!(
        s(
            &mut c,
            &format!("SEXPIREAT s {} LT MEMBERS 2 a c", at + 100)
        ),
        ints(&[0, 1])
    );
    assert_eq!(
        s(&mut c, "SEXPIRETIME s MEMBERS 4 a b c d"),
        ints(&[at as i64 + 9, at as i64, at as i64 + 100, -1])
    );
    // A deadline already come deletes the member: 2; the last one, the key.
    assert_eq!(s(&mut c, "SEXPIRE s 0 MEMBERS 2 d zz"), ints(&[2, -2]));
    assert_eq!(s(&mut c, "SPEXPIREAT s 1 MEMBERS 1 c"), ints(&[2]));
    assert_eq!(s(&mut c, "SCARD s"), ":2\r\n");
    assert_eq!(s(&mut c, "SPEXPIRE s 0 MEMBERS 2 a b"), ints(&[2, 2]));
    assert_eq!(s(&mut c, "EXISTS s"), ":0\r\n");
    // No key: -2 for every member, and nothing created.
    assert_eq!(s(&mut c, "SEXPIRE nokey 10 MEMBERS 2 a b"), ints(&[-2, -2]));
    assert_eq!(s(&mut c, "SPERSIST nokey MEMBERS 1 a"), ints(&[-2]));
    assert_eq!(s(&mut c, "EXISTS nokey"), ":0\r\n");
    // An intset gets a TTL as a hashtable.
    c.cmd_str("SADD n 1 2 3");
    assert_eq!(s(&mut c, "OBJECT ENCODING n"), "$6\r\nintset\r\n");
    assert_eq!(s(&mut c, "SEXPIRE n 10 MEMBERS 1 2"), ints(&[1]));
    assert_eq!(s(&mut c, "OBJECT ENCODING n"), "$9\r\nhashtable\r\n");
    assert_eq!(s(&mut c, "SISMEMBER n 2"), ":1\r\n");
    // SADD of a member keeps its TTL; SREM drops it with the member.
    assert_eq!(s(&mut c, "SADD n 2"), ":0\r\n");
    assert_eq!(s(&mut c, "STTL n MEMBERS 1 2"), ints(&[10]));
    c.cmd_str("SREM n 2");
    c.cmd_str("SADD n 2");
    assert_eq!(s(&mut c, "STTL n MEMBERS 1 2"), ints(&[-1]));
}

#[test]
fn argument_errors() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("SADD s a");
    c.cmd_str("SET str v");
    let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    let cases: &[(&str, String)] = &[
        (
            "SEXPIRE s 10 MEMBERS 0",
            err("ERR wrong number of arguments for 'sexpire' command"),
        ),
        (
            "SEXPIRE s 10 MEMBERS 0 a",
            err("ERR Parameter `numMembers` should be greater than 0"),
        ),
        (
            "SEXPIRE s 10 MEMBERS -1 a",
            err("ERR Parameter `numMembers` should be greater than 0"),
        ),
        (
            "SEXPIRE s 10 MEMBERS 2 a",
            err("ERR The `nummembers` parameter must match the number of arguments"),
        ),
        (
            "SEXPIRE s 10 FIELDS 1 a",
            err("ERR Mandatory argument MEMBERS is missing or not at the right position"),
        ),
        (
            "SEXPIRE s 10 NX XX MEMBERS 1 a",
            err("ERR Mandatory argument MEMBERS is missing or not at the right position"),
        ),
        (
            "SEXPIRE s abc MEMBERS 1 a",
            err("ERR value is not an integer or out of range"),
        ),
        (
            "SEXPIRE s -1 MEMBERS 1 a",
            err("ERR invalid expire time, must be >= 0"),
        ),
        (
            "SEXPIRE s 99999999999999 MEMBERS 1 a",
            err("ERR invalid expire time in 'sexpire' command"),
        ),
        ("SEXPIRE str 10 MEMBERS 1 a", wrongtype.to_string()),
        (
            "STTL s MEMBERS 0 a",
            err("ERR Number of members must be a positive integer"),
        ),
        (
            "STTL s MEMBERS 2 a",
            err("ERR The `nummembers` parameter must match the number of arguments"),
        ),
        (
            "STTL s MEMBER 1 a",
            err("ERR Mandatory argument MEMBERS is missing or not at the right position"),
        ),
        ("SPTTL str MEMBERS 1 a", wrongtype.to_string()),
        (
            "SPERSIST s MEMBERS x a",
            err("ERR Number of members must be a positive integer"),
        ),
        ("SPERSIST str MEMBERS 1 a", wrongtype.to_string()),
        (
            "SADDEX s MEMBERS",
            err("ERR wrong number of arguments for 'saddex' command"),
        ),
        ("SADDEX s MEMBERS 0 a", err("ERR invalid number of members")),
        (
            "SADDEX s MEMBERS 2 a",
            err("ERR wrong number of arguments for 'saddex' command"),
        ),
        (
            "SADDEX s EX 10 PX 10 MEMBERS 1 a",
            err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"),
        ),
        (
            "SADDEX s KEEPTTL EX 10 MEMBERS 1 a",
            err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified"),
        ),
        (
            "SADDEX s MNX MXX MEMBERS 1 a",
            err("ERR Only one of MXX or MNX arguments can be specified"),
        ),
        ("SADDEX s FOO MEMBERS 1 a", err("ERR unknown argument: FOO")),
        (
            "SADDEX s EX -5 MEMBERS 1 a",
            err("ERR invalid expire time, must be >= 0"),
        ),
        (
            "SADDEX s EX MEMBERS 1 a",
            err("ERR value is not an integer or out of range"),
        ),
        ("SADDEX s NX MEMBERS 1 a b", err("ERR unknown argument: NX")),
        ("SADDEX str MEMBERS 1 a", wrongtype.to_string()),
    ];
    for (line, want) in cases {
        assert_eq!(&s(&mut c, line), want, "{line}");
    }
    // Nothing changed.
    assert_eq!(s(&mut c, "SMEMBERS s"), "*1\r\n$1\r\na\r\n");
    assert_eq!(s(&mut c, "STTL s MEMBERS 1 a"), ints(&[-1]));
    // COMMAND INFO describes them as redis.io does.
    let info = s(&mut c, "COMMAND INFO sexpire saddex sttl");
    for want in ["sexpire", "saddex", "sttl", "@set", "denyoom"] {
        assert!(info.contains(want), "{want} in {info}");
    }
    assert_eq!(
        s(&mut c, "COMMAND GETKEYS SEXPIRE k 10 MEMBERS 1 a"),
        "*1\r\n$1\r\nk\r\n"
    );
}

/// `gone` expired, `live` not: every set command sees only `live`.
fn assert_invisible(c: &mut RawConn, key: &str) {
    let one = "*1\r\n$4\r\nlive\r\n";
    let checks: Vec<(String, String)> = vec![
        (format!("SCARD {key}"), ":1\r\n".into()),
        (format!("SISMEMBER {key} gone"), ":0\r\n".into()),
        (
            format!("SMISMEMBER {key} gone live"),
            "*2\r\n:0\r\n:1\r\n".into(),
        ),
        (format!("SMEMBERS {key}"), one.into()),
        (format!("SRANDMEMBER {key} 5"), one.into()),
        (
            format!("SRANDMEMBER {key} -3"),
            "*3\r\n$4\r\nlive\r\n$4\r\nlive\r\n$4\r\nlive\r\n".into(),
        ),
        (format!("SRANDMEMBER {key}"), "$4\r\nlive\r\n".into()),
        (format!("SINTER {key}"), one.into()),
        (format!("SUNION {key}"), one.into()),
        (format!("SDIFF {key}"), one.into()),
        (format!("SINTERCARD 1 {key}"), ":1\r\n".into()),
        (format!("SSCAN {key} 0"), format!("*2\r\n$1\r\n0\r\n{one}")),
        (format!("SORT {key} ALPHA"), one.into()),
        (format!("STTL {key} MEMBERS 1 gone"), ints(&[-2])),
        (format!("SPERSIST {key} MEMBERS 1 gone"), ints(&[-2])),
        (format!("SEXPIRE {key} 10 MEMBERS 1 gone"), ints(&[-2])),
        (format!("SREM {key} gone"), ":0\r\n".into()),
        (format!("SMOVE {key} other gone"), ":0\r\n".into()),
        (format!("SADDEX {key} MXX MEMBERS 1 gone"), ":0\r\n".into()),
    ];
    for (cmd, want) in checks {
        assert_eq!(s(c, &cmd), want, "{cmd}");
    }
}

#[test]
fn members_vanish_exactly_at_their_deadline() {
    for first in ["1", "x"] {
        let (_z, mut c) = frozen(&[]);
        // An intset or a hashtable before the first TTL.
        c.cmd_str(&format!("SADD s {first}"));
        c.cmd_str("SADD s gone live");
        c.cmd_str(&format!("SREM s {first}"));
        assert_eq!(s(&mut c, "SPEXPIRE s 1000 MEMBERS 1 gone"), ints(&[1]));
        advance(&mut c, 999);
        assert_eq!(s(&mut c, "SPTTL s MEMBERS 1 gone"), ints(&[1]));
        assert_eq!(s(&mut c, "SCARD s"), ":2\r\n", "first={first}");
        advance(&mut c, 1);
        assert_invisible(&mut c, "s");
        // DUMP and RESTORE: the payload has only what is live.
        let payload = c.cmd(&[b"DUMP", b"s"]);
        let payload = parse_reply(&payload).bulk().to_vec();
        assert_eq!(c.cmd(&[b"RESTORE", b"r", b"0", &payload[..]]), b"+OK\r\n");
        assert_eq!(s(&mut c, "SMEMBERS r"), "*1\r\n$4\r\nlive\r\n");
        // Store commands and pops see it gone too.
        c.cmd_str("SADD s other");
        c.cmd_str("SPEXPIRE s 10 MEMBERS 2 live other");
        c.cmd_str("SADD s keep");
        advance(&mut c, 10);
        assert_eq!(s(&mut c, "SUNIONSTORE d s"), ":1\r\n");
        assert_eq!(s(&mut c, "SPOP s"), "$4\r\nkeep\r\n");
        assert_eq!(s(&mut c, "EXISTS s"), ":0\r\n");
        // The stored copy has no TTL: it stays.
        advance(&mut c, 100);
        assert_eq!(s(&mut c, "SMEMBERS d"), "*1\r\n$4\r\nkeep\r\n");
    }
}

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
fn an_emptied_set_is_gone_with_sexpired_and_del() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "KEA"]);
    let mut sub = z.conn();
    sub.cmd_str("PSUBSCRIBE __keyevent@0__:*");
    c.cmd_str("SADD s a b");
    c.cmd_str("SPEXPIRE s 50 MEMBERS 1 a");
    c.cmd_str("SPEXPIRE s 60 MEMBERS 1 b");
    c.cmd_str("SPERSIST s MEMBERS 1 b");
    c.cmd_str("SPERSIST s MEMBERS 1 b");
    c.cmd_str("SPEXPIRE s 60 NX MEMBERS 1 a");
    c.cmd_str("SPEXPIRE s 60 MEMBERS 1 b");
    assert_eq!(
        events(&mut sub, 5),
        [
            "__keyevent@0__:sadd s",
            "__keyevent@0__:sexpire s",
            "__keyevent@0__:sexpire s",
            "__keyevent@0__:spersist s",
            "__keyevent@0__:sexpire s",
        ]
    );
    advance(&mut c, 50);
    assert_eq!(s(&mut c, "SCARD s"), ":1\r\n");
    assert_eq!(events(&mut sub, 1), ["__keyevent@0__:sexpired s"]);
    advance(&mut c, 10);
    assert_eq!(s(&mut c, "TYPE s"), "+none\r\n");
    assert_eq!(s(&mut c, "EXISTS s"), ":0\r\n");
    assert_eq!(s(&mut c, "DBSIZE"), ":0\r\n");
    assert_eq!(
        events(&mut sub, 2),
        ["__keyevent@0__:sexpired s", "__keyevent@0__:del s"]
    );
    // A past deadline deletes at once: srem, then del.
    c.cmd_str("SADD y a");
    c.cmd_str("SEXPIRE y 0 MEMBERS 1 a");
    assert_eq!(
        events(&mut sub, 3),
        [
            "__keyevent@0__:sadd y",
            "__keyevent@0__:srem y",
            "__keyevent@0__:del y"
        ]
    );
    // SADDEX: sadd, then sexpire.
    c.cmd_str("SADDEX x PX 5 MEMBERS 2 a b");
    assert_eq!(
        events(&mut sub, 2),
        ["__keyevent@0__:sadd x", "__keyevent@0__:sexpire x"]
    );
}

#[test]
fn keys_and_scan_skip_a_set_whose_members_all_expired() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("DEBUG SET-ACTIVE-EXPIRE 0");
    c.cmd_str("SADD s a b");
    c.cmd_str("SADD t a");
    c.cmd_str("SPEXPIRE s 10 MEMBERS 2 a b");
    advance(&mut c, 10);
    assert_eq!(s(&mut c, "KEYS *"), "*1\r\n$1\r\nt\r\n");
    assert_eq!(s(&mut c, "SCAN 0"), "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nt\r\n");
    assert_eq!(s(&mut c, "EXISTS s"), ":0\r\n");
}

#[test]
fn the_sweeper_reclaims_idle_sets() {
    let (z, mut c) = frozen(&["--notify-keyspace-events", "Es"]);
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyevent@0__:sexpired");
    let n = 200;
    for i in 0..n {
        c.cmd_str(&format!("SADD k{i} a b"));
        // Half lose one member, half lose both.
        let members = if i % 2 == 0 {
            "MEMBERS 1 a"
        } else {
            "MEMBERS 2 a b"
        };
        c.cmd_str(&format!("SPEXPIRE k{i} {} {members}", 10 + i));
    }
    // One big set with many deadlines, reclaimed in batches.
    for j in 0..2000 {
        c.cmd_str(&format!("SADDEX big PX {} MEMBERS 1 f{j}", 1 + j % 300));
    }
    c.cmd_str("SADD big keep");
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
    wait_for(|| s(&mut c, "SCARD big") == ":1\r\n");
    for i in (0..n).step_by(2) {
        assert_eq!(s(&mut c, &format!("SMEMBERS k{i}")), "*1\r\n$1\r\nb\r\n");
    }
    // Keys with member TTLs count in INFO keyspace's `subexpiry`.
    c.cmd_str("SADDEX sub PX 100000 MEMBERS 1 m");
    let db0 = info_field(&mut c, "keyspace", "db0");
    assert!(db0.ends_with("subexpiry=1"), "{db0}");
    let expired: u64 = info_field(&mut c, "stats", "expired_subkeys")
        .parse()
        .unwrap();
    assert!(expired >= 2000 + 300, "expired_subkeys {expired}");
}

#[test]
fn saddex_options() {
    let (_z, mut c) = frozen(&[]);
    // Plain: SADD with MEMBERS.
    assert_eq!(s(&mut c, "SADDEX s MEMBERS 2 a b"), ":1\r\n");
    assert_eq!(s(&mut c, "STTL s MEMBERS 2 a b"), ints(&[-1, -1]));
    // MNX: none may exist; MXX: all must.
    assert_eq!(s(&mut c, "SADDEX s MNX EX 10 MEMBERS 2 a c"), ":0\r\n");
    assert_eq!(s(&mut c, "SISMEMBER s c"), ":0\r\n");
    assert_eq!(s(&mut c, "SADDEX s MXX EX 10 MEMBERS 2 a c"), ":0\r\n");
    assert_eq!(s(&mut c, "SADDEX nokey MXX MEMBERS 1 a"), ":0\r\n");
    assert_eq!(s(&mut c, "EXISTS nokey"), ":0\r\n");
    assert_eq!(s(&mut c, "SADDEX s MXX EX 10 MEMBERS 2 a b"), ":1\r\n");
    assert_eq!(s(&mut c, "STTL s MEMBERS 2 a b"), ints(&[10, 10]));
    assert_eq!(s(&mut c, "SADDEX s MNX PX 5000 MEMBERS 1 c"), ":1\r\n");
    assert_eq!(s(&mut c, "SPTTL s MEMBERS 1 c"), ints(&[5000]));
    // EXAT / PXAT; options in any order before MEMBERS.
    let at = T0_MS / 1000 + 77;
    assert_eq!(
        s(&mut c, &format!("SADDEX s EXAT {at} MXX MEMBERS 1 c")),
        ":1\r\n"
    );
    assert_eq!(s(&mut c, "SEXPIRETIME s MEMBERS 1 c"), ints(&[at as i64]));
    let at_ms = T0_MS + 1234;
    assert_eq!(
        s(&mut c, &format!("SADDEX s PXAT {at_ms} MEMBERS 1 d")),
        ":1\r\n"
    );
    assert_eq!(
        s(&mut c, "SPEXPIRETIME s MEMBERS 1 d"),
        ints(&[at_ms as i64])
    );
    // KEEPTTL: existing members keep theirs, new ones get none.
    assert_eq!(s(&mut c, "SADDEX s KEEPTTL MEMBERS 2 d e"), ":1\r\n");
    assert_eq!(
        s(&mut c, "SPEXPIRETIME s MEMBERS 2 d e"),
        ints(&[at_ms as i64, -1])
    );
    // Neither: existing members become persistent.
    assert_eq!(s(&mut c, "SADDEX s MEMBERS 1 d"), ":1\r\n");
    assert_eq!(s(&mut c, "STTL s MEMBERS 1 d"), ints(&[-1]));
    // A time already past: the members are gone (and so is the key if
    // nothing is left).
    assert_eq!(s(&mut c, "SADDEX s PXAT 1 MEMBERS 2 a zz"), ":1\r\n");
    assert_eq!(s(&mut c, "SMISMEMBER s a zz b"), "*3\r\n:0\r\n:0\r\n:1\r\n");
    assert_eq!(s(&mut c, "SADDEX t EX 0 MEMBERS 1 a"), ":1\r\n");
    assert_eq!(s(&mut c, "EXISTS t"), ":0\r\n");
    // The key and members may be option names.
    assert_eq!(
        s(&mut c, "SADDEX MEMBERS EX 5 MEMBERS 2 MEMBERS EX"),
        ":1\r\n"
    );
    assert_eq!(
        s(&mut c, "STTL MEMBERS MEMBERS 2 MEMBERS EX"),
        ints(&[5, 5])
    );
    advance(&mut c, 5000);
    assert_eq!(s(&mut c, "EXISTS MEMBERS"), ":0\r\n");
}

#[test]
fn rename_copy_move_dump_restore_and_digest_carry_member_ttls() {
    let (_z, mut c) = frozen(&[]);
    c.cmd_str("SADD s a b");
    let plain = digest(&mut c);
    c.cmd_str("SPEXPIRE s 100 MEMBERS 1 a");
    let with_ttl = digest(&mut c);
    assert_ne!(plain, with_ttl, "DEBUG DIGEST sees a member's TTL");
    c.cmd_str("SPEXPIRE s 200 MEMBERS 1 a");
    assert_ne!(digest(&mut c), with_ttl, "and its deadline");
    c.cmd_str("SPEXPIRE s 100 MEMBERS 1 a");
    assert_eq!(digest(&mut c), with_ttl);
    assert_eq!(s(&mut c, "RENAME s r"), "+OK\r\n");
    let at = ints(&[(T0_MS + 100) as i64]);
    assert_eq!(s(&mut c, "SPEXPIRETIME r MEMBERS 1 a"), at);
    assert_eq!(s(&mut c, "COPY r cp"), ":1\r\n");
    assert_eq!(s(&mut c, "SPEXPIRETIME cp MEMBERS 1 a"), at);
    let payload = parse_reply(&c.cmd(&[b"DUMP", b"r"])).bulk().to_vec();
    assert_eq!(c.cmd(&[b"RESTORE", b"rs", b"0", &payload[..]]), b"+OK\r\n");
    assert_eq!(
        s(&mut c, "SPEXPIRETIME rs MEMBERS 2 a b"),
        ints(&[(T0_MS + 100) as i64, -1])
    );
    assert_eq!(s(&mut c, "MOVE cp 1"), ":1\r\n");
    c.cmd_str("SELECT 1");
    assert_eq!(s(&mut c, "SPEXPIRETIME cp MEMBERS 1 a"), at);
    advance(&mut c, 100);
    assert_eq!(s(&mut c, "SMEMBERS cp"), "*1\r\n$1\r\nb\r\n");
    c.cmd_str("SELECT 0");
    assert_eq!(s(&mut c, "SMEMBERS r"), "*1\r\n$1\r\nb\r\n");
    assert_eq!(s(&mut c, "SMEMBERS rs"), "*1\r\n$1\r\nb\r\n");
    // The payload is still one redis-server 8.0 reads (the TTLs follow
    // the value, which it ignores).
    let r = RedisServer::start_binary(&redis8_server(), &[]);
    let mut rc = r.conn();
    assert_eq!(rc.cmd(&[b"RESTORE", b"k", b"0", &payload[..]]), b"+OK\r\n");
    assert_eq!(rc.cmd_str("SCARD k"), b":2\r\n");
}

// ---- persistence and replication ----

fn start_in(dir: &Path, extra: &[&str]) -> ZwindowServer {
    let mut args = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    ZwindowServer::start(&args)
}

/// The commands of the incremental AOF, as text lines.
fn log_lines(dir: &Path) -> Vec<String> {
    let path = dir.join("appendonlydir").join("appendonly.aof.1.incr.aof");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = Vec::new();
    let mut rest = &data[..];
    let line = |rest: &mut &[u8]| -> usize {
        let end = rest.windows(2).position(|w| w == b"\r\n").expect("a line");
        let n = std::str::from_utf8(&rest[1..end]).unwrap().parse().unwrap();
        *rest = &rest[end + 2..];
        n
    };
    while !rest.is_empty() {
        let argc = line(&mut rest);
        let mut argv = Vec::new();
        for _ in 0..argc {
            let len = line(&mut rest);
            argv.push(String::from_utf8_lossy(&rest[..len]).into_owned());
            rest = &rest[len + 2..];
        }
        lines.push(argv.join(" "));
    }
    lines
}

fn deadlines(c: &mut RawConn) -> String {
    s(c, "SPEXPIRETIME s MEMBERS 6 a b c d e f")
}

#[test]
fn the_aof_logs_absolute_times_and_a_restart_keeps_them() {
    let dir = PrivateDir::new("sets-ttl-aof");
    let z = start_in(&dir.0, &[]);
    let mut c = z.conn();
    c.cmd_str("DEBUG SET-ACTIVE-EXPIRE 0");
    let now = parse_reply(&c.cmd_str("DEBUG CLOCK GET")).int() as u64;
    for line in [
        "SADD s a b c d e f gone",
        "SEXPIRE s 1000 MEMBERS 2 a nosuch",
        "SPEXPIRE s 1000000 NX MEMBERS 1 b",
        "SADDEX s EX 1000 MEMBERS 1 c",
        "SADDEX s PX 1000000 MEMBERS 1 d",
        "SEXPIRE s 1000 XX MEMBERS 1 e",
        "SPEXPIRE s 0 MEMBERS 1 gone",
        "SADDEX s KEEPTTL MEMBERS 1 a",
    ] {
        c.cmd_str(line);
    }
    c.cmd_str(&format!("SPEXPIREAT s {} MEMBERS 1 f", now + 1_000_000));
    c.cmd_str("SPERSIST s MEMBERS 1 e");
    let before = deadlines(&mut c);
    let lines = log_lines(&dir.0);
    // Relative times are logged as absolute ones; what changed nothing is
    // not logged; a deadline already past as the SREM it amounts to.
    let pxat = |l: &&String, w: &str| l.starts_with(w);
    assert!(
        lines
            .iter()
            .any(|l| pxat(&l, "SPEXPIREAT s ") && l.ends_with(" MEMBERS 1 a")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| pxat(&l, "SPEXPIREAT s ") && l.ends_with(" NX MEMBERS 1 b")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| pxat(&l, "SADDEX s PXAT ") && l.ends_with(" MEMBERS 1 c")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l == "SREM s gone"), "{lines:?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with("SEXPIRE ") || l.contains(" XX ")),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("KEEPTTL") || l.starts_with("SPERSIST")),
        "{lines:?}"
    );
    for l in lines
        .iter()
        .filter(|l| l.starts_with("SPEXPIREAT") || l.starts_with("SADDEX"))
    {
        let words: Vec<&str> = l.split(' ').collect();
        let at: u64 = match words.iter().position(|w| *w == "PXAT") {
            Some(i) => words[i + 1].parse().unwrap(),
            None => words[2].parse().unwrap(),
        };
        assert!(at >= now + 999_000, "{l}");
    }
    drop(z);
    // The AOF replayed.
    let z = start_in(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(deadlines(&mut c), before);
    assert_eq!(s(&mut c, "SISMEMBER s gone"), ":0\r\n");
    // An RDB written and read back (DEBUG RELOAD) keeps them too.
    assert_eq!(s(&mut c, "DEBUG RELOAD"), "+OK\r\n");
    assert_eq!(deadlines(&mut c), before);
    drop(z);
    let z = start_in(&dir.0, &["--appendonly", "no"]);
    let mut c = z.conn();
    assert_eq!(deadlines(&mut c), before, "the RDB at shutdown");
    assert_eq!(s(&mut c, "SCARD s"), ":6\r\n");
}

#[test]
fn a_replica_keeps_the_deadlines_and_drops_members_by_the_primarys_srem() {
    let p = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut pc = p.conn();
    // Some state before the full sync, some streamed after it.
    pc.cmd_str("SADD s a b c");
    pc.cmd_str("SPEXPIRE s 300 MEMBERS 1 a");
    let port = p.port().to_string();
    let r = ZwindowServer::start(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--enable-debug-command",
        "yes",
    ]);
    let mut rc = r.conn();
    eventually("the replica's link", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    pc.cmd_str("SADDEX s PX 400 MEMBERS 1 d");
    pc.cmd_str("SEXPIRE s 100000 MEMBERS 1 b");
    pc.cmd_str("SADDEX t EX 1000 MEMBERS 2 x y");
    settle(&mut pc, &mut [&mut rc]);
    for line in [
        "SPEXPIRETIME s MEMBERS 4 a b c d",
        "SPEXPIRETIME t MEMBERS 2 x y",
        "SMEMBERS t",
    ] {
        assert_eq!(s(&mut pc, line), s(&mut rc, line), "{line}");
    }
    assert_eq!(digest(&mut pc), digest(&mut rc));
    // After the deadlines, the replica's own readers already miss the
    // members; the primary's expiry sends the SREMs that remove them.
    std::thread::sleep(Duration::from_millis(450));
    assert_eq!(s(&mut rc, "SISMEMBER s a"), ":0\r\n");
    assert_eq!(s(&mut pc, "SCARD s"), ":2\r\n");
    settle(&mut pc, &mut [&mut rc]);
    assert_eq!(s(&mut rc, "SMEMBERS s"), s(&mut pc, "SMEMBERS s"));
    assert_eq!(digest(&mut pc), digest(&mut rc));
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}

#[test]
fn saddex_reaches_a_redis_7_replica_as_sadd() {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let port = z.port().to_string();
    let r = RedisServer::start_binary(&find_redis_server(), &["--replicaof", "127.0.0.1", &port]);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    eventually("the replica's link", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    for line in [
        "SADDEX s EX 1000 MEMBERS 2 a b",
        "SADDEX s MNX MEMBERS 1 c",
        "SEXPIRE s 1000 MEMBERS 1 c",
        "SPERSIST s MEMBERS 1 a",
        "SPEXPIRE s 1 MEMBERS 1 b",
    ] {
        zc.cmd_str(line);
    }
    std::thread::sleep(Duration::from_millis(20));
    zc.cmd_str("SMEMBERS s");
    settle(&mut zc, &mut [&mut rc]);
    let mut got = parse_reply(&rc.cmd_str("SMEMBERS s"))
        .array()
        .iter()
        .map(|m| String::from_utf8_lossy(m.bulk()).into_owned())
        .collect::<Vec<_>>();
    got.sort();
    assert_eq!(got, ["a", "c"]);
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}
