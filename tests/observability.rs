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
            "CONFIG GET slowlog-*",
            "CONFIG SET slowlog-log-slower-than -2",
            "CONFIG SET slowlog-max-len -1",
            "CONFIG SET slowlog-max-len 4",
            "CONFIG SET slowlog-log-slower-than 0",
            "SLOWLOG RESET",
            "SLOWLOG LEN",
            "SLOWLOG GET 0",
        ]);
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
