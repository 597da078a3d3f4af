//! MONITOR: the lines a monitoring client receives, compared with
//! redis-server 7.0 (timestamps and client ports masked): quoting as
//! `sdscatrepr`, scripts' commands as `[db lua]` after the script,
//! MULTI/EXEC order, EXECABORT, AUTH/HELLO redaction, admin commands hidden,
//! MONITOR refused inside a transaction.
mod common;

use std::time::Duration;

use common::*;

/// `+1700000000.123456 [0 127.0.0.1:5555] "get" "k"` → `+T [0 client] "get" "k"`.
fn mask(line: &[u8]) -> Vec<u8> {
    let s = String::from_utf8_lossy(line).into_owned();
    let Some(open) = s.find('[') else {
        return line.to_vec();
    };
    let Some(close) = s.find(']') else {
        return line.to_vec();
    };
    let inner = &s[open + 1..close];
    let (db, who) = inner.split_once(' ').unwrap_or((inner, ""));
    let who = if who == "lua" { "lua" } else { "client" };
    let ts_ok = s[1..open].trim().split_once('.').is_some_and(|(a, b)| {
        a.chars().all(|c| c.is_ascii_digit())
            && b.len() == 6
            && b.chars().all(|c| c.is_ascii_digit())
    });
    format!(
        "+{} [{db} {who}]{}",
        if ts_ok { "T" } else { "BAD" },
        &s[close + 1..]
    )
    .into_bytes()
}

#[test]
fn monitor_lines_match_redis() {
    differential(|conn| {
        let (mut m, mut c) = (conn(), conn());
        let mut out = vec![m.cmd_str("MONITOR")];
        // A second MONITOR answers nothing.
        m.send(&encode_cmd(&[b"MONITOR"]));
        c.cmd(&[b"SET", b"k", b"a \"quoted\"\r\n\t\x00\xff\\ v"]);
        c.cmd_str("GET k");
        c.cmd_str("SELECT 3");
        c.cmd_str("PING");
        c.cmd_str("SELECT 0");
        c.cmd_str("CONFIG GET maxclients");
        c.cmd_str("CLIENT LIST");
        c.cmd_str("AUTH onlypass");
        c.cmd_str("AUTH someone pass");
        c.cmd_str("AUTH a b c");
        c.cmd_str("HELLO 2 AUTH someone pass");
        c.cmd_str("HELLO 2 SETNAME x AUTH default pw");
        c.cmd_str("MULTI");
        c.cmd_str("INCR n");
        c.cmd_str("MONITOR");
        c.cmd_str("EXEC");
        c.cmd_str("MULTI");
        c.cmd_str("NOSUCHCOMMAND");
        c.cmd_str("EXEC");
        c.cmd_str("EVAL \"redis.call('set', KEYS[1], 'x') return redis.call('get', KEYS[1])\" 1 s");
        c.cmd_str("NOSUCHCOMMAND");
        c.cmd_str("SET onlyone");
        c.cmd_str("ECHO done");
        loop {
            let line = m.read_reply();
            let masked = mask(&line);
            let done = masked.ends_with(b"\"ECHO\" \"done\"\r\n");
            out.push(masked);
            if done {
                break;
            }
        }
        assert!(matches!(
            m.try_read_reply(Duration::from_millis(100)),
            ReadOutcome::Timeout
        ));
        out
    });
}
