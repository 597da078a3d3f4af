//! Blocking list commands across several connections, run as the same
//! scenario against zwindow and redis-server 7.0 with every reply compared:
//! wakeups by pushes, FIFO order among waiters, timeouts and their replies,
//! BLMOVE's atomic hand-over, several keys, and disconnects while blocked.
mod common;

use std::time::{Duration, Instant};

use common::*;

fn cmd(c: &mut RawConn, line: &str) -> Vec<u8> {
    c.cmd_str(line)
}

fn send(c: &mut RawConn, line: &str) {
    let args = split_args(line);
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    c.send(&encode_cmd(&refs));
}

fn blocked_clients(c: &mut RawConn) -> usize {
    let info = String::from_utf8_lossy(&c.cmd_str("INFO clients")).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no blocked_clients in INFO: {info}"))
}

/// Waits until the server reports `n` blocked clients.
fn wait_blocked(c: &mut RawConn, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while blocked_clients(c) != n {
        assert!(
            Instant::now() < deadline,
            "never reached {n} blocked clients"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn hello3(c: &mut RawConn) {
    c.cmd_str("HELLO 3");
}

#[test]
fn push_from_another_client_serves_the_waiter() {
    differential(|conn| {
        let mut out = Vec::new();
        for resp3 in [false, true] {
            let (mut w, mut p) = (conn(), conn());
            if resp3 {
                hello3(&mut w);
            }
            send(&mut w, "BLPOP k 0");
            wait_blocked(&mut p, 1);
            out.push(cmd(&mut p, "RPUSH k a b"));
            out.push(w.read_reply());
            out.push(cmd(&mut p, "LRANGE k 0 -1"));
            send(&mut w, "BRPOP k2 0");
            wait_blocked(&mut p, 1);
            out.push(cmd(&mut p, "LPUSH k2 x y"));
            out.push(w.read_reply());
            send(&mut w, "BLMPOP 0 2 m1 m2 RIGHT COUNT 5");
            wait_blocked(&mut p, 1);
            out.push(cmd(&mut p, "RPUSH m2 1 2 3"));
            out.push(w.read_reply());
            out.push(cmd(&mut p, "EXISTS m2"));
            // The connection keeps working after a wakeup.
            out.push(cmd(&mut w, "PING"));
            out.push(cmd(&mut p, "FLUSHALL"));
        }
        out
    });
}

#[test]
fn waiters_are_served_first_come_first_served() {
    differential(|conn| {
        let mut p = conn();
        let mut ws: Vec<RawConn> = (0..3).map(|_| conn()).collect();
        for (i, w) in ws.iter_mut().enumerate() {
            send(w, "BLPOP k 0");
            wait_blocked(&mut p, i + 1);
        }
        let mut out = vec![cmd(&mut p, "RPUSH k a b c d")];
        for w in &mut ws {
            out.push(w.read_reply());
        }
        out.push(cmd(&mut p, "LRANGE k 0 -1"));
        // One element for three waiters: only the first wakes.
        for (i, w) in ws.iter_mut().enumerate() {
            send(w, "BRPOP q 0");
            wait_blocked(&mut p, i + 1);
        }
        out.push(cmd(&mut p, "LPUSH q only"));
        out.push(ws[0].read_reply());
        assert_eq!(
            ws[1].try_read_reply(Duration::from_millis(100)),
            ReadOutcome::Timeout
        );
        out.push(cmd(&mut p, "LPUSH q two three"));
        out.push(ws[1].read_reply());
        out.push(ws[2].read_reply());
        out
    });
}

#[test]
fn fractional_timeouts_expire_with_a_null_array() {
    differential(|conn| {
        let mut out = Vec::new();
        for resp3 in [false, true] {
            let mut w = conn();
            if resp3 {
                hello3(&mut w);
            }
            for line in [
                "BLPOP k 0.1",
                "BRPOP k k2 0.1",
                "BLMOVE k d LEFT RIGHT 0.1",
                "BRPOPLPUSH k d 0.1",
                "BLMPOP 0.1 1 k LEFT",
            ] {
                let t = Instant::now();
                out.push(cmd(&mut w, line));
                let took = t.elapsed();
                assert!(
                    took >= Duration::from_millis(95) && took < Duration::from_secs(2),
                    "{line} took {took:?}"
                );
            }
            out.push(cmd(&mut w, "EXISTS d"));
        }
        let mut p = conn();
        out.push(blocked_clients(&mut p).to_string().into_bytes());
        out
    });
}

#[test]
fn blmove_wakes_and_moves_atomically() {
    differential(|conn| {
        let (mut w, mut p) = (conn(), conn());
        send(&mut w, "BLMOVE src dst RIGHT LEFT 0");
        wait_blocked(&mut p, 1);
        // The move is complete before the pusher sees its own reply.
        let mut out = vec![
            cmd(&mut p, "RPUSH src a b"),
            cmd(&mut p, "LRANGE src 0 -1"),
            cmd(&mut p, "LRANGE dst 0 -1"),
        ];
        out.push(w.read_reply());
        // Chained: a BRPOPLPUSH waiting on dst is woken by the BLMOVE's push.
        let mut w2 = conn();
        send(&mut w2, "BRPOPLPUSH chain2 out 0");
        send(&mut w, "BLMOVE chain1 chain2 LEFT LEFT 0");
        wait_blocked(&mut p, 2);
        out.push(cmd(&mut p, "LPUSH chain1 x"));
        out.push(cmd(&mut p, "EXISTS chain1 chain2"));
        out.push(cmd(&mut p, "LRANGE out 0 -1"));
        out.push(w.read_reply());
        out.push(w2.read_reply());
        out
    });
}

#[test]
fn blocked_on_two_keys_served_by_the_second() {
    differential(|conn| {
        let (mut w, mut p) = (conn(), conn());
        send(&mut w, "BLPOP k1 k2 0");
        wait_blocked(&mut p, 1);
        let mut out = vec![cmd(&mut p, "RPUSH k2 v"), w.read_reply()];
        // Served on one key, the waiter is gone from the other.
        out.push(blocked_clients(&mut p).to_string().into_bytes());
        out.push(cmd(&mut p, "RPUSH k1 stays"));
        out.push(cmd(&mut p, "LRANGE k1 0 -1"));
        out
    });
}

#[test]
fn rename_onto_a_blocked_key_serves_it() {
    differential(|conn| {
        let (mut w, mut p) = (conn(), conn());
        send(&mut w, "BLPOP target 0");
        wait_blocked(&mut p, 1);
        vec![
            cmd(&mut p, "RPUSH tmp a b"),
            cmd(&mut p, "RENAME tmp target"),
            w.read_reply(),
            cmd(&mut p, "LRANGE target 0 -1"),
        ]
    });
}

#[test]
fn disconnect_while_blocked_leaves_no_waiter() {
    differential(|conn| {
        let mut p = conn();
        let mut w = conn();
        send(&mut w, "BLPOP k 0");
        wait_blocked(&mut p, 1);
        drop(w);
        wait_blocked(&mut p, 0);
        vec![cmd(&mut p, "RPUSH k a"), cmd(&mut p, "LRANGE k 0 -1")]
    });
}

#[test]
fn client_kill_while_blocked() {
    let s = Servers::start();
    for (mut w, mut p) in [(s.z.conn(), s.z.conn()), (s.r.conn(), s.r.conn())] {
        let id = String::from_utf8_lossy(&w.cmd_str("CLIENT ID"))
            .trim_start_matches(':')
            .trim()
            .to_string();
        send(&mut w, "BLPOP k 0");
        wait_blocked(&mut p, 1);
        assert_eq!(p.cmd_str(&format!("CLIENT KILL ID {id}")), b":1\r\n");
        assert!(w.is_closed(Duration::from_secs(2)), "{}", w.name);
        wait_blocked(&mut p, 0);
    }
}

#[test]
fn a_key_of_another_type_does_not_serve_the_waiter() {
    differential(|conn| {
        let (mut w, mut p) = (conn(), conn());
        send(&mut w, "BLPOP k1 k2 0");
        wait_blocked(&mut p, 1);
        let mut out = vec![cmd(&mut p, "SET str x"), cmd(&mut p, "RENAME str k1")];
        assert_eq!(
            w.try_read_reply(Duration::from_millis(100)),
            ReadOutcome::Timeout
        );
        out.push(blocked_clients(&mut p).to_string().into_bytes());
        out.push(cmd(&mut p, "RPUSH k2 v"));
        out.push(w.read_reply());
        out
    });
}

/// The `flags=` field of CLIENT LIST for the client named `name`.
fn client_flags(c: &mut RawConn, name: &str) -> String {
    let list = String::from_utf8_lossy(&c.cmd_str("CLIENT LIST")).into_owned();
    let line = list
        .lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"));
    line.split(' ')
        .find_map(|f| f.strip_prefix("flags="))
        .unwrap_or_else(|| panic!("no flags= in {line}"))
        .to_string()
}

/// CLIENT LIST shows a client parked in XREAD BLOCK or BLPOP with flag `b` (BullMQ's
/// tests wait for exactly that before adding jobs), and `N`, `x`, `P` otherwise.
#[test]
fn client_list_flags_mark_blocked_clients() {
    let (s, mut p) = start_pair();
    let mut waiters = [s.r.conn(), s.z.conn()];
    let flags = |p: &mut Pair| {
        let (r, z) = (client_flags(&mut p.r, "w"), client_flags(&mut p.z, "w"));
        assert_eq!(
            z, r,
            "CLIENT LIST flags= of client w: zwindow vs redis-server"
        );
        r
    };
    for w in &mut waiters {
        assert_eq!(w.cmd_str("CLIENT SETNAME w"), b"+OK\r\n");
    }
    let ids: Vec<String> = waiters
        .iter_mut()
        .map(|w| {
            let id = w.cmd_str("CLIENT ID");
            String::from_utf8_lossy(&id[1..id.len() - 2]).into_owned()
        })
        .collect();
    assert_eq!(flags(&mut p), "N");
    for (block, wake) in [
        ("XREAD BLOCK 0 STREAMS s $", "XADD s 1-1 f v"),
        ("BLPOP k 0", "RPUSH k a"),
    ] {
        for w in &mut waiters {
            send(w, block);
        }
        wait_blocked(&mut p.r, 1);
        wait_blocked(&mut p.z, 1);
        assert_eq!(flags(&mut p), "b");
        p.check_str(wake);
        let [wr, wz] = &mut waiters;
        assert_eq!(wz.read_reply(), wr.read_reply(), "{block} woken by {wake}");
        assert_eq!(flags(&mut p), "N");
        // Served, it is no longer blocked: there is nothing to unblock.
        let (r, z) = (
            p.r.cmd_str(&format!("CLIENT UNBLOCK {}", ids[0])),
            p.z.cmd_str(&format!("CLIENT UNBLOCK {}", ids[1])),
        );
        assert_eq!(
            (escape(&z), escape(&r)),
            (escape(b":0\r\n"), escape(b":0\r\n")),
            "CLIENT UNBLOCK of a served client: (zwindow, redis-server)"
        );
    }
    for w in &mut waiters {
        assert_eq!(w.cmd_str("MULTI"), b"+OK\r\n");
    }
    assert_eq!(flags(&mut p), "x");
    for w in &mut waiters {
        assert_eq!(w.cmd_str("DISCARD"), b"+OK\r\n");
        w.cmd_str("SUBSCRIBE ch");
    }
    assert_eq!(flags(&mut p), "P");
}

/// Redis 7.2+ processes a served waiter's command again, ACL included: a
/// user whose key permission was revoked while it waited gets NOPERM (and
/// the denial is logged), not the data.
#[test]
fn a_waiter_whose_permission_was_revoked_is_refused() {
    differential(|conn| {
        let (mut admin, mut w) = (conn(), conn());
        let mut out = vec![cmd(&mut admin, "ACL SETUSER blk on nopass +@all ~list*")];
        out.push(cmd(&mut w, "AUTH blk x"));
        send(&mut w, "BLPOP list1 0");
        wait_blocked(&mut admin, 1);
        out.push(cmd(&mut admin, "ACL SETUSER blk resetkeys ~other*"));
        out.push(cmd(&mut admin, "LPUSH list1 foo"));
        out.push(w.read_reply());
        out.push(cmd(&mut admin, "LLEN list1"));
        out.push(blocked_clients(&mut admin).to_string().into_bytes());
        let log = String::from_utf8_lossy(&admin.cmd_str("ACL LOG 1")).into_owned();
        out.push(format!("{}", log.contains("list1")).into_bytes());
        out
    });
}
