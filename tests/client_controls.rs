//! CLIENT PAUSE/UNPAUSE, REPLY, NO-EVICT, NO-TOUCH, KILL filters and
//! LIST/INFO fields, compared with redis-server 7.0 (8.0.2 for what came
//! after 7.0) byte for byte where replies are deterministic, and by field
//! names and flags where they carry addresses.
mod common;

use std::time::{Duration, Instant};

use common::*;

#[test]
fn reply_kill_list_and_errors_match_redis() {
    differential(|conn| {
        let (mut a, mut b) = (conn(), conn());
        let mut out = Vec::new();
        // CLIENT REPLY: OFF and SKIP answer nothing; pushes still arrive.
        a.send(&encode_cmd(&[b"CLIENT", b"REPLY", b"OFF"]));
        a.send(&encode_cmd(&[b"SET", b"k", b"1"]));
        a.send(&encode_cmd(&[b"CLIENT", b"REPLY", b"ON"]));
        out.push(a.read_reply());
        a.send(&encode_cmd(&[b"CLIENT", b"REPLY", b"SKIP"]));
        a.send(&encode_cmd(&[b"GET", b"k"]));
        a.send(&encode_cmd(&[b"GET", b"k"]));
        out.push(a.read_reply());
        out.push(a.cmd_str("CLIENT REPLY maybe"));
        out.push(a.cmd_str("CLIENT NO-EVICT maybe"));
        out.push(a.cmd_str("CLIENT NO-EVICT on"));
        out.push(a.cmd_str("CLIENT PAUSE 10 NONE"));
        out.push(a.cmd_str("CLIENT PAUSE x"));
        out.push(a.cmd_str("CLIENT PAUSE -1"));
        out.push(a.cmd_str("CLIENT PAUSE 1 WRITE extra"));
        out.push(a.cmd_str("CLIENT UNPAUSE"));
        // CLIENT KILL's filters and errors.
        out.push(a.cmd_str("CLIENT KILL 1.2.3.4:5"));
        out.push(a.cmd_str("CLIENT KILL ID 0"));
        out.push(a.cmd_str("CLIENT KILL ID x"));
        out.push(a.cmd_str("CLIENT KILL TYPE nope"));
        out.push(a.cmd_str("CLIENT KILL USER nosuchuser"));
        out.push(a.cmd_str("CLIENT KILL SKIPME maybe"));
        out.push(a.cmd_str("CLIENT KILL FOO bar"));
        out.push(a.cmd_str("CLIENT KILL ID"));
        out.push(a.cmd_str("CLIENT KILL TYPE master"));
        out.push(a.cmd_str("CLIENT KILL TYPE replica"));
        out.push(a.cmd_str("CLIENT KILL TYPE pubsub"));
        b.cmd_str("SUBSCRIBE ch");
        out.push(a.cmd_str("CLIENT KILL TYPE pubsub"));
        let mut c = conn();
        c.cmd_str("PING");
        out.push(a.cmd_str("CLIENT KILL TYPE normal USER default"));
        out.push(
            c.try_read_reply(Duration::from_secs(2))
                .is_closed()
                .to_string()
                .into_bytes(),
        );
        out.push(a.cmd_str("CLIENT KILL TYPE normal SKIPME no"));
        let mut d = conn();
        out.push(d.cmd_str("CLIENT LIST TYPE nope"));
        out.push(d.cmd_str("CLIENT LIST ID x"));
        out.push(d.cmd_str("CLIENT LIST ID 999999"));
        out.push(d.cmd_str("CLIENT LIST FOO"));
        out.push(d.cmd_str("CLIENT LIST TYPE master"));
        out.push(d.cmd_str("CLIENT LIST TYPE pubsub"));
        out
    });
}

trait Closed {
    fn is_closed(&self) -> bool;
}

impl Closed for ReadOutcome {
    fn is_closed(&self) -> bool {
        matches!(self, ReadOutcome::Closed)
    }
}

/// Field names of CLIENT INFO, in order (and flags), as redis-server 8.0.2
/// prints them.
#[test]
fn client_info_fields_and_flags_match_redis() {
    let s = Servers::start_redis8(&[]);
    let mut shapes = Vec::new();
    for mut c in [s.r.conn(), s.z.conn()] {
        c.cmd_str("CLIENT TRACKING on BCAST");
        c.cmd_str("CLIENT NO-EVICT on");
        c.cmd_str("CLIENT NO-TOUCH on");
        c.cmd_str("CLIENT SETINFO lib-name redis-py");
        c.cmd_str("CLIENT SETINFO lib-ver 5.0.1");
        c.cmd_str("WATCH a b c");
        c.cmd_str("MULTI");
        c.cmd_str("SET k v");
        let info = c.cmd_str("CLIENT INFO");
        c.cmd_str("DISCARD");
        let text = String::from_utf8_lossy(&info).into_owned();
        let line = text.lines().nth(1).unwrap_or_default().to_string();
        let shape: Vec<String> = line
            .split(' ')
            .map(|f| {
                let (k, v) = f.split_once('=').unwrap_or((f, ""));
                match k {
                    "flags" | "multi" | "multi-mem" | "cmd" | "user" | "redir" | "resp"
                    | "qbuf" | "db" | "sub" | "psub" | "ssub" | "events" | "watch" | "lib-name"
                    | "lib-ver" | "io-thread" => f.to_string(),
                    _ => {
                        let _ = v;
                        k.to_string()
                    }
                }
            })
            .collect();
        shapes.push(shape);
    }
    assert_eq!(shapes[0], shapes[1]);
}

/// CLIENT PAUSE WRITE holds writes (they wait, then run) and lets reads
/// through; ALL holds everything; expired keys are hidden but not deleted.
#[test]
fn pause_holds_writes_until_unpause() {
    let z = ZwindowServer::start(&[]);
    let (mut a, mut w, mut r) = (z.conn(), z.conn(), z.conn());
    assert_eq!(a.cmd_str("SET e 1 PX 300"), b"+OK\r\n");
    assert_eq!(a.cmd_str("CLIENT PAUSE 10000 WRITE"), b"+OK\r\n");
    w.send(&encode_cmd(&[b"SET", b"k", b"v"]));
    w.send(&encode_cmd(&[b"PUBLISH", b"c", b"m"]));
    assert!(matches!(
        w.try_read_reply(Duration::from_millis(200)),
        ReadOutcome::Timeout
    ));
    assert_eq!(r.cmd_str("GET k"), b"$-1\r\n");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(r.cmd_str("GET e"), b"$-1\r\n", "expired: hidden");
    let info = String::from_utf8_lossy(&r.cmd_str("INFO")).into_owned();
    assert!(
        info.contains("expired_keys:0"),
        "not deleted while paused: {info}"
    );
    assert!(info.contains("blocked_clients:1"), "{info}");
    assert!(String::from_utf8_lossy(&r.cmd_str("CLIENT LIST")).contains("flags=b"));
    assert_eq!(a.cmd_str("CLIENT UNPAUSE"), b"+OK\r\n");
    assert_eq!(w.read_reply(), b"+OK\r\n");
    assert_eq!(w.read_reply(), b":0\r\n");
    // ALL, with a timeout that ends the pause by itself.
    let start = Instant::now();
    assert_eq!(a.cmd_str("CLIENT PAUSE 300 ALL"), b"+OK\r\n");
    assert_eq!(r.cmd_str("GET k"), b"$1\r\nv\r\n");
    assert!(start.elapsed() >= Duration::from_millis(250));
    // Once the pause has ended, active expiry may delete `e` at any time.
    assert_eq!(r.cmd_str("GET e"), b"$-1\r\n");
    let info = String::from_utf8_lossy(&r.cmd_str("INFO")).into_owned();
    assert!(info.contains("expired_keys:1"), "expired once unpaused");
}

/// Whether the server's log shows `text` within 2 s (the log is read by
/// another thread, so a line may land just after the event it reports).
fn log_shows(z: &ZwindowServer, text: &str) -> bool {
    for _ in 0..40 {
        if z.log_tail().contains(text) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// `client-output-buffer-limit normal`: a reply batch over the hard limit
/// closes the client without an answer, as in Redis; a subscriber that
/// stops reading is closed by the pubsub limit.
#[test]
fn output_buffer_limits_close_clients() {
    let z = ZwindowServer::start(&[]);
    let mut a = z.conn();
    let big = vec![b'x'; 200_000];
    assert_eq!(a.cmd(&[b"SET", b"big", &big]), b"+OK\r\n");
    assert_eq!(
        a.cmd_str("CONFIG SET client-output-buffer-limit \"normal 100000 0 0\""),
        b"+OK\r\n"
    );
    let mut b = z.conn();
    b.send(&encode_cmd(&[b"GET", b"big"]));
    assert!(matches!(
        b.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    assert_eq!(a.cmd_str("GET nosuch"), b"$-1\r\n");
    a.cmd_str("CONFIG SET client-output-buffer-limit \"normal 0 0 0 pubsub 100000 0 0\"");
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE ch");
    // The subscriber never reads: its unwritten messages pass the limit.
    for _ in 0..100 {
        a.cmd(&[b"PUBLISH", b"ch", &big[..50_000]]);
    }
    std::thread::sleep(Duration::from_millis(300));
    let list = String::from_utf8_lossy(&a.cmd_str("CLIENT LIST")).into_owned();
    assert!(!list.contains("sub=1"), "{list}");
    // A monitor that never reads is a normal client: the normal limit.
    a.cmd_str("CONFIG SET client-output-buffer-limit \"normal 100000 0 0\"");
    let mut mon = z.conn();
    assert_eq!(mon.cmd_str("MONITOR"), b"+OK\r\n");
    for _ in 0..100 {
        a.cmd(&[b"SET", b"k", &big[..50_000]]);
    }
    std::thread::sleep(Duration::from_millis(300));
    let list = String::from_utf8_lossy(&a.cmd_str("CLIENT LIST")).into_owned();
    assert!(!list.contains("cmd=monitor"), "{list}");
    assert!(log_shows(&z, "output buffer limits"), "{}", z.log_tail());
}

/// `client-query-buffer-limit` closes a client whose pending request bytes
/// pass it; `proto-max-bulk-len` applies to open connections.
#[test]
fn query_buffer_and_bulk_limits_apply_to_open_clients() {
    let z = ZwindowServer::start(&[]);
    let mut a = z.conn();
    let mut b = z.conn();
    assert_eq!(b.cmd_str("PING"), b"+PONG\r\n");
    assert_eq!(
        a.cmd_str("CONFIG SET client-query-buffer-limit 1mb"),
        b"+OK\r\n"
    );
    // A bulk announced as 3 MB whose bytes keep coming.
    b.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n");
    let chunk = vec![b'y'; 64 * 1024];
    for _ in 0..40 {
        if b.try_send(&chunk).is_err() {
            break;
        }
    }
    assert!(matches!(
        b.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    assert!(log_shows(&z, "max query buffer length"), "{}", z.log_tail());
    // proto-max-bulk-len, lowered while `c` is connected, applies to it.
    let mut c = z.conn();
    assert_eq!(c.cmd_str("PING"), b"+PONG\r\n");
    assert_eq!(a.cmd_str("CONFIG SET proto-max-bulk-len 1mb"), b"+OK\r\n");
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n");
    assert_eq!(
        c.read_reply(),
        b"-ERR Protocol error: invalid bulk length\r\n"
    );
}

/// CONFIG SET timeout closes idle clients (not subscribers).
#[test]
fn config_set_timeout_closes_idle_clients() {
    let z = ZwindowServer::start(&[]);
    let mut a = z.conn();
    let mut idle = z.conn();
    let mut sub = z.conn();
    assert_eq!(idle.cmd_str("PING"), b"+PONG\r\n");
    sub.cmd_str("SUBSCRIBE ch");
    assert_eq!(a.cmd_str("CONFIG SET timeout 1"), b"+OK\r\n");
    let start = Instant::now();
    assert!(matches!(
        idle.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    assert!(start.elapsed() >= Duration::from_millis(900));
    assert_eq!(sub.cmd_str("PING"), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
}

/// `maxmemory-clients` as redis-server parses and prints it.
#[test]
fn maxmemory_clients_config_matches_redis() {
    let (_s, mut p) = start_pair();
    for v in [
        "10%", "3000000", "1mb", "0", "-5", "101%", "1.5", "abc", "100%",
    ] {
        p.check_str(&format!("CONFIG SET maxmemory-clients {v}"));
        p.check_str("CONFIG GET maxmemory-clients");
    }
}

/// Over `maxmemory-clients`, the largest client goes (here one holding a
/// 600 kB unfinished argument), counted in `evicted_clients`; a client with
/// `CLIENT NO-EVICT on` stays; a limit lowered under what clients hold
/// evicts at once.
#[test]
fn maxmemory_clients_evicts_the_largest_client() {
    let z = ZwindowServer::start(&[]);
    let mut control = z.conn();
    assert_eq!(control.cmd_str("CLIENT NO-EVICT on"), b"+OK\r\n");
    assert_eq!(
        control.cmd_str("CONFIG SET maxmemory-clients 500000"),
        b"+OK\r\n"
    );
    // The server may take the argument's whole size once its header is
    // in (as Redis does for a big argument) and evict the client while it
    // is still writing: the write then fails, which is the outcome wanted.
    let fill = |c: &mut RawConn| {
        let _ = c.try_send(b"*2\r\n$3\r\nGET\r\n$600000\r\n");
        let _ = c.try_send(&vec![b'v'; 600_000]);
    };
    let mut small = z.conn();
    assert_eq!(small.cmd_str("PING"), b"+PONG\r\n");
    let mut big = z.conn();
    fill(&mut big);
    assert!(matches!(
        big.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    assert_eq!(small.cmd_str("PING"), b"+PONG\r\n");
    let info = String::from_utf8_lossy(&control.cmd_str("INFO stats")).into_owned();
    assert!(info.contains("evicted_clients:1\r\n"), "{info}");
    // Exempt: keeps its buffer, and being over the limit alone, takes
    // every evictable client with it (`small`), as in Redis.
    let mut kept = z.conn();
    assert_eq!(kept.cmd_str("CLIENT NO-EVICT on"), b"+OK\r\n");
    fill(&mut kept);
    assert!(matches!(
        kept.try_read_reply(Duration::from_millis(300)),
        ReadOutcome::Timeout
    ));
    assert!(matches!(
        small.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    drop(kept);
    let deadline = Instant::now() + Duration::from_secs(5);
    while String::from_utf8_lossy(&control.cmd_str("CLIENT LIST")).contains("qbuf=6") {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    // A client under the limit goes when the limit is lowered under it.
    let mut mid = z.conn();
    mid.send(b"*2\r\n$3\r\nGET\r\n$300000\r\n");
    mid.send(&vec![b'v'; 200_000]);
    let list = |c: &mut RawConn| String::from_utf8_lossy(&c.cmd_str("CLIENT LIST")).into_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !list(&mut control).contains("qbuf=2000") {
        assert!(Instant::now() < deadline, "{}", list(&mut control));
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        control.cmd_str("CONFIG SET maxmemory-clients 200000"),
        b"+OK\r\n"
    );
    assert!(matches!(
        mid.try_read_reply(Duration::from_secs(5)),
        ReadOutcome::Closed
    ));
    let info = String::from_utf8_lossy(&control.cmd_str("INFO stats")).into_owned();
    assert!(info.contains("evicted_clients:3\r\n"), "{info}");
}

/// CLIENT NO-TOUCH (Redis 7.2): the client's commands leave keys' idle
/// time and LFU counter alone, in MULTI and scripts too, except TOUCH;
/// RESET turns it off. Both servers run side by side against redis-server
/// 8.0.2, so one wait ages the keys of both.
#[test]
fn no_touch_keeps_access_times_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut conns = [s.r.conn(), s.z.conn()];
    let keys = [
        "get",
        "touch",
        "multi",
        "script",
        "scripttouch",
        "off",
        "reset",
    ];
    for c in &mut conns {
        for k in keys {
            c.cmd_str(&format!("SET {k} v"));
        }
    }
    std::thread::sleep(Duration::from_millis(2100));
    let mut p = s.pair();
    p.script(&[
        "CLIENT NO-TOUCH",
        "CLIENT NO-TOUCH maybe",
        "CLIENT NO-TOUCH on extra",
        "CLIENT NO-TOUCH ON",
        "GET get",
        "TOUCH touch",
        "MULTI",
        "GET multi",
        "EXEC",
        "EVAL \"return redis.call('get', KEYS[1])\" 1 script",
        "EVAL \"return redis.call('touch', KEYS[1])\" 1 scripttouch",
        "EVAL \"return redis.call('client', 'no-touch', 'off')\" 0",
    ]);
    // Idle times as "touched" (0) or "kept" (2 or more), on each server.
    let idle = |c: &mut RawConn, k: &str| {
        let r = parse_reply(&c.cmd_str(&format!("OBJECT IDLETIME {k}")));
        if r.int() >= 2 { "kept" } else { "touched" }
    };
    let flags = |c: &mut RawConn| {
        let info = String::from_utf8_lossy(&c.cmd_str("CLIENT INFO")).into_owned();
        let f = info
            .split(' ')
            .find(|f| f.starts_with("flags="))
            .map(str::to_string);
        f.unwrap_or_default()
    };
    let r_flags = flags(&mut p.r);
    assert_eq!(r_flags, "flags=T");
    assert_eq!(flags(&mut p.z), r_flags);
    p.check_str("CLIENT NO-TOUCH off");
    p.check_str("GET off");
    p.check_str("CLIENT NO-TOUCH on");
    p.check_str("RESET");
    assert_eq!(flags(&mut p.z), "flags=N");
    p.check_str("GET reset");
    for k in keys {
        let (r, z) = (idle(&mut p.r, k), idle(&mut p.z, k));
        assert_eq!(z, r, "{k}: redis {r}, zwindow {z}");
    }
    assert_eq!(idle(&mut p.r, "get"), "kept");
    assert_eq!(idle(&mut p.r, "touch"), "touched");
    // LFU: the first access of a new key always counts (5 -> 6).
    p.check_str("CONFIG SET maxmemory-policy allkeys-lfu");
    p.script(&[
        "SET f1 v",
        "SET f2 v",
        "OBJECT FREQ f1",
        "CLIENT NO-TOUCH on",
        "GET f1",
        "SET f1 w",
        "OBJECT FREQ f1",
        "TOUCH f2",
        "OBJECT FREQ f2",
        "CLIENT NO-TOUCH off",
        "GET f1",
        "OBJECT FREQ f1",
    ]);
}

/// CLIENT KILL MAXAGE (Redis 7.4): kills clients at least that many
/// seconds old, with the other filters; its errors.
#[test]
fn kill_maxage_matches_redis8() {
    let s = Servers::start_redis8(&[]);
    let run = |conn: &dyn Fn() -> RawConn| {
        let mut a = conn();
        let mut out = Vec::new();
        for line in [
            "CLIENT KILL MAXAGE 0",
            "CLIENT KILL MAXAGE -5",
            "CLIENT KILL MAXAGE x",
            "CLIENT KILL MAXAGE 99999999999999999999",
            "CLIENT KILL MAXAGE",
            "CLIENT KILL MAXAGE 1 ID",
            "CLIENT KILL MAXAGE 100000",
        ] {
            out.push(a.cmd_str(line));
        }
        let mut old = conn();
        old.cmd_str("CLIENT SETNAME old");
        let mut old2 = conn();
        old2.cmd_str("SELECT 1");
        // Two wall-clock seconds later, whatever the sub-second phase.
        std::thread::sleep(Duration::from_millis(2100));
        let mut young = conn();
        young.cmd_str("PING");
        let id2 = String::from_utf8_lossy(&old2.cmd_str("CLIENT ID")).into_owned();
        let id2 = id2.trim_start_matches(':').trim().to_string();
        // Filters combine: this one matches nobody.
        out.push(a.cmd_str(&format!("CLIENT KILL MAXAGE 2 ID {id2} TYPE pubsub")));
        out.push(a.cmd_str(&format!("CLIENT KILL ID {id2} MAXAGE 2")));
        out.push(
            old2.try_read_reply(Duration::from_secs(2))
                .is_closed()
                .to_string()
                .into_bytes(),
        );
        // The caller (old enough too) is skipped; `young` is too young.
        out.push(a.cmd_str("CLIENT KILL MAXAGE 2"));
        out.push(young.cmd_str("PING"));
        out.push(
            old.try_read_reply(Duration::from_secs(2))
                .is_closed()
                .to_string()
                .into_bytes(),
        );
        out.push(a.cmd_str("CLIENT KILL MAXAGE 2 SKIPME no"));
        out
    };
    // Side by side, so one wait serves both.
    let (r, z) = std::thread::scope(|sc| {
        let r = sc.spawn(|| run(&|| s.r.conn()));
        let z = sc.spawn(|| run(&|| s.z.conn()));
        (r.join().unwrap(), z.join().unwrap())
    });
    assert_eq!(r.len(), z.len());
    for (i, (a, b)) in r.iter().zip(&z).enumerate() {
        assert!(
            replies_equivalent(a, b),
            "reply {i}\n  redis:   {}\n  zwindow: {}",
            escape(a),
            escape(b)
        );
    }
}
