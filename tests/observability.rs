//! SLOWLOG, LATENCY and MEMORY against redis-server 7.0: the replies and
//! error texts byte for byte where they are deterministic, and the parts
//! that are not (timestamps, durations, client ports, memory figures)
//! compared by shape.
mod common;

use common::*;

/// The arguments and client names of `SLOWLOG GET -1`, newest first: what
/// both servers must agree on (ids, times, durations and ports differ).
fn slowlog_args(conn: &mut RawConn) -> Vec<(Vec<String>, String)> {
    conn.query(&[b"SLOWLOG", b"GET", b"-1"])
        .array()
        .iter()
        .map(|e| {
            let e = e.array();
            assert_eq!(e.len(), 6);
            let args = e[3]
                .array()
                .iter()
                .map(|a| String::from_utf8_lossy(a.bulk()).into_owned())
                .collect();
            (args, String::from_utf8_lossy(e[5].bulk()).into_owned())
        })
        .collect()
}

#[test]
fn slowlog_replies_match_redis() {
    in_both_protocols(|p| {
        p.script(&[
            "SLOWLOG HELP",
            "SLOWLOG",
            "SLOWLOG NOPE",
            "SLOWLOG GET 1 2",
            "SLOWLOG GET -2",
            "SLOWLOG GET x",
            "SLOWLOG LEN 1",
            "SLOWLOG RESET",
            "CONFIG SET slowlog-log-slower-than -2",
            "CONFIG SET slowlog-max-len -1",
            "CONFIG SET slowlog-max-len 4",
            "CONFIG SET slowlog-log-slower-than 0",
            "SLOWLOG RESET",
            "SLOWLOG LEN",
            "SLOWLOG GET 0",
        ]);
        // One name each: Redis lists a pattern's matches in hash order.
        p.check_str("CONFIG GET slowlog-max-len");
        p.check_str("CONFIG GET slowlog-log-slower-than");
    });
}

#[test]
fn slowlog_entries_match_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    let long = "A".repeat(200);
    let many: Vec<String> = (0..40).map(|i| i.to_string()).collect();
    let lines = [
        "CONFIG SET slowlog-log-slower-than 0".to_string(),
        "CONFIG SET slowlog-max-len 100".to_string(),
        "SLOWLOG RESET".to_string(),
        "CLIENT SETNAME observer".to_string(),
        format!("SET k {long}"),
        format!("SADD s {}", many.join(" ")),
        // Passwords never reach the log.
        "AUTH secret".to_string(),
        "AUTH user secret".to_string(),
        "CONFIG SET requirepass \"\" slowlog-max-len 100".to_string(),
        // EXEC is not logged, the commands it runs are.
        "MULTI".to_string(),
        "INCR n".to_string(),
        "GET k".to_string(),
        "EXEC".to_string(),
        "EVAL \"return redis.call('incr', 'n')\" 0".to_string(),
    ];
    for l in &lines {
        p.both_str(l);
    }
    let r = slowlog_args(&mut p.r);
    let z = slowlog_args(&mut p.z);
    assert_eq!(r, z);
    // What the test above relies on really is in the log.
    let flat: Vec<String> = r.iter().map(|(a, _)| a.join(" ")).collect();
    assert!(flat.contains(&"AUTH (redacted)".to_string()), "{flat:?}");
    assert!(flat.iter().any(|a| a.ends_with("... (72 more bytes)")));
    assert!(flat.iter().any(|a| a.ends_with("... (11 more arguments)")));
    p.check_str("SLOWLOG LEN");
    p.check_str("CONFIG SET slowlog-max-len 2");
    p.check_str("SLOWLOG LEN");
    p.check_str("CONFIG SET slowlog-log-slower-than -1");
    p.check_str("SLOWLOG RESET");
    p.check_str("PING");
    p.check_str("SLOWLOG LEN");
}

/// The field names of a MEMORY STATS reply, with each value's RESP type
/// (the first byte of its frame).
fn stats_shape(conn: &mut RawConn) -> Vec<(String, u8)> {
    fn shape(r: &Reply) -> u8 {
        match r {
            Reply::Int(_) => b':',
            Reply::Map(_) => b'%',
            Reply::Double(_) => b',',
            Reply::Bulk(_) => b'$',
            _ => b'?',
        }
    }
    let reply = conn.query(&[b"MEMORY", b"STATS"]);
    let mut fields: Vec<(String, u8)> = match &reply {
        Reply::Map(kv) => kv
            .iter()
            .map(|(k, v)| (String::from_utf8_lossy(k.bulk()).into_owned(), shape(v)))
            .collect(),
        Reply::Array(a) => a
            .chunks(2)
            .map(|c| {
                (
                    String::from_utf8_lossy(c[0].bulk()).into_owned(),
                    shape(&c[1]),
                )
            })
            .collect(),
        other => panic!("MEMORY STATS: {other:?}"),
    };
    fields.sort();
    fields
}

#[test]
fn memory_replies_match_redis() {
    in_both_protocols(|p| {
        p.script(&[
            "MEMORY HELP",
            "MEMORY",
            "MEMORY NOPE",
            "MEMORY STATS x",
            "MEMORY DOCTOR x",
            "MEMORY PURGE x",
            "MEMORY USAGE",
            "MEMORY USAGE nokey",
            "MEMORY USAGE nokey SAMPLES",
            "MEMORY USAGE nokey SAMPLES -1",
            "MEMORY USAGE nokey SAMPLES x",
            "MEMORY USAGE nokey FOO 1",
            "MEMORY USAGE nokey SAMPLES 0",
            "MEMORY PURGE",
        ]);
        // Figures differ; names, order and types do not.
        p.check_str("SET k v");
        p.check_str("SELECT 3");
        p.check_str("SET k v");
        p.check_str("SELECT 0");
        assert_eq!(stats_shape(&mut p.r), stats_shape(&mut p.z));
        // The oracle is built with libc malloc, which has no stats (a
        // plain bulk string); zwindow's allocator has, and says them as a
        // jemalloc build of Redis does: a verbatim string in RESP3.
        let z = p.z.cmd_str("MEMORY MALLOC-STATS");
        let resp3 = String::from_utf8_lossy(&p.z.cmd_str("CLIENT INFO")).contains("resp=3");
        assert_eq!(z[0], if resp3 { b'=' } else { b'$' }, "{}", escape(&z));
        p.check_str("FLUSHALL");
    });
}

#[test]
fn memory_usage_follows_the_value() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    c.cmd_str("SET small x");
    let big = "x".repeat(100_000);
    c.cmd(&[b"SET", b"big", big.as_bytes()]);
    let small = c.query(&[b"MEMORY", b"USAGE", b"small"]).int();
    let large = c.query(&[b"MEMORY", b"USAGE", b"big"]).int();
    assert!(small > 0 && small < 200, "{small}");
    assert!((100_000..110_000).contains(&large), "{large}");
    let text = String::from_utf8_lossy(&c.cmd_str("MEMORY DOCTOR")).into_owned();
    assert!(text.contains("Sam"), "{text}");
}

#[test]
fn latency_replies_match_redis() {
    in_both_protocols(|p| {
        p.script(&[
            "LATENCY HELP",
            "LATENCY HELP xxx",
            "LATENCY",
            "LATENCY NOPE",
            "LATENCY LATEST",
            "LATENCY LATEST x",
            "LATENCY HISTORY command",
            "LATENCY HISTORY",
            "LATENCY GRAPH command",
            "LATENCY RESET",
            "LATENCY RESET blabla other",
            "LATENCY DOCTOR",
            "CONFIG GET latency-monitor-threshold",
            "CONFIG SET latency-monitor-threshold -1",
            "CONFIG SET latency-monitor-threshold x",
            "CONFIG RESETSTAT",
            "LATENCY HISTOGRAM blabla",
            "LATENCY HISTOGRAM blabla blabla2 set get",
        ]);
        // One call each: the calls match, the buckets are timings.
        p.check_str("SET a b");
        p.check_str("GET a");
        let calls = |r: &[u8]| -> Vec<(String, i64)> {
            let mut v: Vec<(String, i64)> = match parse_reply(r) {
                Reply::Map(kv) => kv
                    .iter()
                    .map(|(k, v)| {
                        let Reply::Map(f) = v else { panic!("{v:?}") };
                        let calls = f
                            .iter()
                            .find(|(k, _)| k.bulk() == b"calls")
                            .map(|(_, v)| v.int());
                        (
                            String::from_utf8_lossy(k.bulk()).into_owned(),
                            calls.unwrap_or(-1),
                        )
                    })
                    .collect(),
                Reply::Array(a) => a
                    .chunks(2)
                    .map(|c| {
                        let f = c[1].array();
                        (
                            String::from_utf8_lossy(c[0].bulk()).into_owned(),
                            f[1].int(),
                        )
                    })
                    .collect(),
                other => panic!("{other:?}"),
            };
            v.sort();
            v
        };
        let (r, z) = p.both_str("LATENCY HISTOGRAM blabla set get config|resetstat");
        assert_eq!(calls(&r), calls(&z));
        p.check_str("CONFIG SET latency-monitor-threshold 0");
    });
}

#[test]
fn latency_events_are_recorded() {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.cmd_str("CONFIG SET latency-monitor-threshold 50");
    c.cmd_str("DEBUG SLEEP 0.1");
    let latest = c.query(&[b"LATENCY", b"LATEST"]);
    let e = latest.array()[0].array();
    assert_eq!(e[0].bulk(), b"command");
    assert!((100..1000).contains(&e[2].int()), "{latest:?}");
    let history = c.query(&[b"LATENCY", b"HISTORY", b"command"]);
    assert_eq!(history.array().len(), 1);
    let graph = String::from_utf8_lossy(&c.cmd_str("LATENCY GRAPH command")).into_owned();
    assert!(graph.contains("command - high"), "{graph}");
    let doctor = String::from_utf8_lossy(&c.cmd_str("LATENCY DOCTOR")).into_owned();
    assert!(doctor.contains("1. command: 1 latency spikes"), "{doctor}");
    // DEBUG SLEEP is the slow log's too (default threshold 10 ms).
    assert!(c.query(&[b"SLOWLOG", b"LEN"]).int() >= 1);
    assert_eq!(c.query(&[b"LATENCY", b"RESET"]).int(), 1);
    assert!(c.query(&[b"LATENCY", b"LATEST"]).array().is_empty());
}
