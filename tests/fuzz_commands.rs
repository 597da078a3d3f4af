//! Every command in the table, fed random arguments over keys of every type:
//! the server must answer each one (a reply or an error, never a dropped
//! connection or a hang) and keep serving other clients. A panic in a handler
//! would kill its connection; a key-position bug trips a debug assertion.

mod common;

use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Commands that change the connection's framing or lifetime, or wait.
const SKIP: &[&str] = &[
    "quit",
    "reset",
    "shutdown",
    "client",
    "debug",
    "monitor",
    "subscribe",
    "psubscribe",
    "unsubscribe",
    "punsubscribe",
    "blpop",
    "brpop",
    "blmove",
    "brpoplpush",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
];

const TOKENS: &[&str] = &[
    "k1",
    "k2",
    "k3",
    "k4",
    "k5",
    "k6",
    "k7",
    "0",
    "1",
    "-1",
    "2",
    "3",
    "10",
    "-100",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "99999999999999999999",
    "1.5",
    "-0.5",
    "1e308",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "(1",
    "(-1",
    "[a",
    "(a",
    "-",
    "+",
    "*",
    "?",
    "[",
    "\\",
    "abc",
    "",
    "LIMIT",
    "WITHSCORES",
    "REV",
    "BYSCORE",
    "BYLEX",
    "NX",
    "XX",
    "GT",
    "LT",
    "CH",
    "INCR",
    "EX",
    "PX",
    "EXAT",
    "KEEPTTL",
    "GET",
    "COUNT",
    "MATCH",
    "TYPE",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "RANK",
    "MAXLEN",
    "WITHVALUES",
    "REPLACE",
    "DB",
    "ASYNC",
    "SYNC",
    "ID",
    "FILTERBY",
    "PATTERN",
    "MOVETO",
    "S",
    "MS",
    "24h",
    "65s",
    "LIBRARYNAME",
    "WITHCODE",
    "k8",
    "STREAMS",
    "GROUP",
    "NOACK",
    "MKSTREAM",
    "MINID",
    "~",
    "FORCE",
    "JUSTID",
    "IDLE",
    "ENTRIESREAD",
    "1-1",
    "0-1",
    "$",
    ">",
    "g",
    "return 1",
    "return redis.call('get', KEYS[1])",
];

fn random_args(rng: &mut StdRng, name: &str) -> Vec<Vec<u8>> {
    let mut args = vec![name.as_bytes().to_vec()];
    for _ in 0..rng.random_range(0..7) {
        if rng.random_bool(0.05) {
            let len = rng.random_range(0..64);
            args.push((0..len).map(|_| rng.random::<u8>()).collect());
        } else {
            args.push(
                TOKENS[rng.random_range(0..TOKENS.len())]
                    .as_bytes()
                    .to_vec(),
            );
        }
    }
    args
}

fn seed_keys(c: &mut RawConn) {
    c.cmd_str("FLUSHALL");
    c.cmd_str("SET k1 10");
    c.cmd_str("RPUSH k2 a b c 1 2");
    c.cmd_str("SADD k3 a b 1 2");
    c.cmd_str("HSET k4 f 1 g v");
    c.cmd_str("ZADD k5 1 a 2 b 3 c");
    let mut big = String::from("ZADD k6");
    for i in 0..200 {
        big.push_str(&format!(" {i} m{i}"));
    }
    c.cmd_str(&big);
    c.cmd_str("SADD k7 1 2 3");
    c.cmd_str("XADD k8 1-1 a 1");
    c.cmd_str("XADD k8 2-1 b 2 c 3");
    c.cmd_str("XGROUP CREATE k8 g 0");
    c.cmd_str("XREADGROUP GROUP g c COUNT 1 STREAMS k8 >");
}

#[test]
fn random_arguments_to_every_command_never_break_the_server() {
    let z = ZwindowServer::start(&["--zwindow", "k6=100s"]);
    let mut admin = z.conn();
    let names: Vec<String> = parse_reply(&admin.cmd_str("COMMAND LIST"))
        .array()
        .iter()
        .map(|r| String::from_utf8_lossy(r.bulk()).into_owned())
        .filter(|n| !n.contains('|') && !SKIP.contains(&n.as_str()))
        .collect();
    assert!(
        names.len() > 150,
        "the table lists {} commands",
        names.len()
    );
    let mut rng = StdRng::seed_from_u64(7);
    for name in &names {
        let mut c = z.conn();
        c.set_timeout(Duration::from_secs(10));
        seed_keys(&mut c);
        for _ in 0..150 {
            let args = random_args(&mut rng, name);
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            c.send(&encode_cmd(&refs));
            match c.try_read_reply(Duration::from_secs(10)) {
                ReadOutcome::Reply(_) => {}
                other => panic!("{} got {other:?}\n{}", show_args(&refs), z.log_tail()),
            }
            // MULTI would queue the rest; leave it at once.
            if name == "multi" {
                c.cmd_str("DISCARD");
            }
        }
        assert_eq!(admin.cmd_str("PING"), b"+PONG\r\n", "after {name}");
    }
}
