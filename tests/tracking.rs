//! Client-side caching: CLIENT TRACKING/CACHING/GETREDIR/TRACKINGINFO and the
//! invalidation messages (RESP3 pushes, `__redis__:invalidate` for RESP2
//! redirection, BCAST batches, flush nulls, broken redirects), each as a
//! multi-connection scenario compared byte for byte with redis-server 7.0;
//! plus what only zwindow has: invalidations for window trims and member or
//! field TTL expiry, by a lookup and by the sweeper.
mod common;

use std::time::Duration;

use common::*;

fn ids_equal(a: &[u8], b: &[u8]) -> Vec<u8> {
    if a == b {
        b"same".to_vec()
    } else {
        b"different".to_vec()
    }
}

#[test]
fn resp3_default_mode_invalidates_keys_read() {
    differential(|conn| {
        let (mut c, mut w) = (conn(), conn());
        let mut out = vec![c.cmd_str("HELLO 3").len().to_string().into_bytes()];
        out.push(c.cmd_str("CLIENT TRACKING on"));
        out.push(c.cmd_str("MSET a 1 b 2 c 3"));
        out.push(c.cmd_str("GET a"));
        out.push(c.cmd_str("MGET b c"));
        // Another client's writes reach the tracking client as pushes.
        out.push(w.cmd_str("SET a 10"));
        out.push(c.read_reply());
        out.push(w.cmd_str("DEL b c"));
        out.push(c.read_reply());
        out.push(c.read_reply());
        // Invalidated once: the key is forgotten until read again.
        out.push(w.cmd_str("SET a 11"));
        out.push(c.cmd_str("PING"));
        // A client's own write: the push follows its reply.
        out.push(c.cmd_str("GET a"));
        out.push(c.cmd_str("SET a 12"));
        out.push(c.read_reply());
        // Inside MULTI, after EXEC's reply.
        out.push(c.cmd_str("GET a"));
        out.push(c.cmd_str("MULTI"));
        out.push(c.cmd_str("INCR a"));
        out.push(c.cmd_str("EXEC"));
        out.push(c.read_reply());
        // A flush tells every tracking client that everything is invalid.
        out.push(w.cmd_str("FLUSHALL"));
        out.push(c.read_reply());
        out.push(c.cmd_str("CLIENT TRACKINGINFO"));
        out.push(c.cmd_str("CLIENT TRACKING off"));
        out.push(c.cmd_str("CLIENT GETREDIR"));
        out
    });
}

#[test]
fn resp2_redirect_over_pubsub_and_broken_redirect() {
    differential(|conn| {
        let (mut c, mut r, mut w) = (conn(), conn(), conn());
        let rid = r.cmd_str("CLIENT ID");
        let id = String::from_utf8_lossy(&rid[1..rid.len() - 2]).into_owned();
        let mut out = vec![r.cmd_str("SUBSCRIBE __redis__:invalidate")];
        out.push(c.cmd_str(&format!("CLIENT TRACKING on REDIRECT {id}")));
        out.push(ids_equal(&c.cmd_str("CLIENT GETREDIR"), &rid));
        out.push(c.cmd_str("GET k"));
        out.push(w.cmd_str("SET k v"));
        out.push(r.read_reply());
        out.push(w.cmd_str("FLUSHDB"));
        out.push(r.read_reply());
        // A RESP3 tracking client learns that its redirect went away.
        let mut c3 = conn();
        c3.cmd_str("HELLO 3");
        let mut gone = conn();
        let gid = gone.cmd_str("CLIENT ID");
        let gid = String::from_utf8_lossy(&gid[1..gid.len() - 2]).into_owned();
        out.push(c3.cmd_str(&format!("CLIENT TRACKING on REDIRECT {gid}")));
        out.push(c3.cmd_str("GET x"));
        drop(gone);
        std::thread::sleep(Duration::from_millis(100));
        out.push(w.cmd_str("SET x 1"));
        let broken = c3.read_reply();
        out.push(ids_equal(&broken, &broken));
        out.push(
            String::from_utf8_lossy(&c3.cmd_str("CLIENT TRACKINGINFO"))
                .contains("broken_redirect")
                .to_string()
                .into_bytes(),
        );
        out
    });
}

#[test]
fn bcast_prefixes_noloop_optin_optout_and_errors() {
    differential(|conn| {
        let (mut c, mut w) = (conn(), conn());
        c.cmd_str("HELLO 3");
        let mut out = vec![c.cmd_str("CLIENT TRACKING on BCAST PREFIX a: PREFIX b:")];
        out.push(w.cmd_str("MSET a:1 1 a:2 2 b:1 3 c:1 4"));
        out.push(c.read_reply());
        out.push(c.read_reply());
        out.push(c.cmd_str("CLIENT TRACKINGINFO"));
        out.push(c.cmd_str("CLIENT TRACKING on PREFIX a"));
        out.push(c.cmd_str("CLIENT TRACKING on BCAST PREFIX a:x"));
        out.push(c.cmd_str("CLIENT TRACKING on BCAST PREFIX x PREFIX xy"));
        out.push(c.cmd_str("CLIENT TRACKING on"));
        out.push(c.cmd_str("CLIENT TRACKING on BCAST OPTIN"));
        out.push(c.cmd_str("CLIENT TRACKING off"));
        out.push(c.cmd_str("CLIENT TRACKING on BCAST NOLOOP"));
        out.push(c.cmd_str("SET mine 1"));
        out.push(w.cmd_str("SET theirs 1"));
        out.push(c.read_reply());
        out.push(c.cmd_str("CLIENT TRACKING off"));
        // OPTIN: only after CLIENT CACHING yes, for the next command.
        out.push(c.cmd_str("CLIENT CACHING yes"));
        out.push(c.cmd_str("CLIENT TRACKING on OPTIN"));
        out.push(c.cmd_str("CLIENT CACHING no"));
        out.push(c.cmd_str("GET k1"));
        out.push(c.cmd_str("CLIENT CACHING yes"));
        out.push(c.cmd_str("CLIENT TRACKINGINFO"));
        out.push(c.cmd_str("GET k2"));
        out.push(c.cmd_str("CLIENT TRACKINGINFO"));
        out.push(w.cmd_str("MSET k1 1 k2 2"));
        out.push(c.read_reply());
        out.push(c.cmd_str("CLIENT TRACKING on OPTOUT"));
        out.push(c.cmd_str("CLIENT TRACKING off"));
        out.push(c.cmd_str("CLIENT TRACKING on OPTOUT NOLOOP"));
        out.push(c.cmd_str("CLIENT CACHING no"));
        out.push(c.cmd_str("GET k1"));
        out.push(c.cmd_str("GET k2"));
        out.push(c.cmd_str("SET k2 x"));
        out.push(c.cmd_str("GET k2"));
        out.push(w.cmd_str("MSET k1 1 k2 2"));
        out.push(c.read_reply());
        out.push(c.cmd_str("CLIENT TRACKING maybe"));
        out.push(c.cmd_str("CLIENT TRACKING on REDIRECT 999999"));
        out.push(c.cmd_str("CLIENT TRACKING on REDIRECT x"));
        out.push(c.cmd_str("CLIENT TRACKING on OPTIN OPTOUT"));
        out.push(c.cmd_str("CLIENT TRACKING on FOO"));
        out.push(c.cmd_str("CLIENT CACHING maybe"));
        out.push(c.cmd_str("CLIENT TRACKING off"));
        out.push(c.cmd_str("CLIENT CACHING yes"));
        out
    });
}

#[test]
fn expiry_and_scripts_invalidate() {
    differential(|conn| {
        let (mut c, mut w) = (conn(), conn());
        c.cmd_str("HELLO 3");
        let mut out = vec![c.cmd_str("CLIENT TRACKING on")];
        out.push(w.cmd_str("SET e 1 PX 50"));
        out.push(c.cmd_str("GET e"));
        // Active expiry or the lookup below: either way, one invalidation.
        std::thread::sleep(Duration::from_millis(300));
        out.push(c.read_reply());
        out.push(c.cmd_str("GET e"));
        // A script's reads remember the keys it declared.
        out.push(c.cmd_str("EVAL \"return redis.call('get', KEYS[1])\" 1 s1"));
        out.push(w.cmd_str("SET s1 x"));
        out.push(c.read_reply());
        out.push(
            w.cmd_str("INFO stats")
                .len()
                .min(1)
                .to_string()
                .into_bytes(),
        );
        out
    });
}

/// The INFO fields client tracking fills.
#[test]
fn info_counts_tracking_tables() {
    let s = Servers::start();
    for conn in [s.r.conn(), s.z.conn()] {
        let mut c = conn;
        c.cmd_str("CLIENT TRACKING on");
        c.cmd_str("MGET x y z");
        let mut b = s_conn_like(&mut c);
        b.cmd_str("CLIENT TRACKING on BCAST PREFIX p: PREFIX q:");
        let info = String::from_utf8_lossy(&c.cmd_str("INFO")).into_owned();
        for want in [
            "tracking_clients:2",
            "tracking_total_keys:3",
            "tracking_total_items:3",
            "tracking_total_prefixes:2",
        ] {
            assert!(info.contains(want), "{want} missing in {info}");
        }
    }
}

fn s_conn_like(c: &mut RawConn) -> RawConn {
    RawConn::connect(c.stream().peer_addr().expect("peer"), "second")
}

/// Invalidations for zwindow's own ways a key changes: window trims (a
/// lookup and the sweeper), member TTLs and hash field TTLs.
#[test]
fn window_trims_and_member_ttls_invalidate() {
    let z = ZwindowServer::start(&[]);
    let (mut c, mut w) = (z.conn(), z.conn());
    c.cmd_str("HELLO 3");
    c.cmd_str("CLIENT TRACKING on");
    w.cmd_str("ZWINDOW SET win:* 1s MS");
    let now = {
        let t = w.cmd_str("TIME");
        let p = parse_reply(&t);
        p.array()[0].bulk().to_vec()
    };
    let now_ms: u64 = String::from_utf8_lossy(&now).parse::<u64>().unwrap() * 1000;
    w.cmd_str(&format!("ZADD win:a {} m", now_ms + 500));
    c.cmd_str("ZCARD win:a");
    // The sweeper trims the idle key: the reader is told.
    let push = c.read_reply();
    assert!(
        String::from_utf8_lossy(&push).contains("win:a"),
        "{}",
        escape(&push)
    );
    // Member TTLs expire by the sweeper too.
    w.cmd_str("ZADD plain 1 m 2 n");
    w.cmd_str("ZPEXPIRE plain 100 MEMBERS 1 m");
    c.cmd_str("ZRANGE plain 0 -1");
    let push = c.read_reply();
    assert!(
        String::from_utf8_lossy(&push).contains("plain"),
        "{}",
        escape(&push)
    );
    // And hash field TTLs.
    w.cmd_str("HSET h f 1 g 2");
    w.cmd_str("HPEXPIRE h 100 FIELDS 1 f");
    c.cmd_str("HGETALL h");
    let push = c.read_reply();
    assert!(
        String::from_utf8_lossy(&push).contains(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nh"),
        "{}",
        escape(&push)
    );
}

/// `tracking-table-max-keys` bounds the table: forgotten keys are
/// invalidated, as Redis does.
#[test]
fn tracking_table_is_bounded() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    c.cmd_str("HELLO 3");
    c.cmd_str("CLIENT TRACKING on");
    c.cmd_str("MGET k1 k2 k3 k4 k5");
    assert_eq!(
        c.cmd_str("CONFIG SET tracking-table-max-keys 2"),
        b"+OK\r\n"
    );
    // The invalidations precede PING's reply, as Redis sends them from
    // processCommand before the command runs.
    let first = c.cmd_str("PING");
    let mut forgotten = usize::from(first.starts_with(b">2"));
    while let ReadOutcome::Reply(r) = c.try_read_reply(Duration::from_millis(300)) {
        if r.starts_with(b">2") {
            forgotten += 1;
        }
    }
    assert_eq!(forgotten, 3);
    let info = String::from_utf8_lossy(&c.cmd_str("INFO stats")).into_owned();
    assert!(info.contains("tracking_total_keys:2"), "{info}");
}
