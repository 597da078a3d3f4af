//! zwindow as a replica of a real redis-server (7.0, and 8.0 for RDB v12):
//! the full sync (every type, other databases, disk and diskless loads,
//! `$len` and `$EOF:` transfers), the stream after it (SELECT, MULTI/EXEC,
//! EXPIRE, a script's effects), the replica's refusals, the master client,
//! a partial resync after the link was killed or the replica restarted,
//! promotion, and clients answered (-LOADING) during a long full sync on
//! every load path.

mod common;

use std::time::{Duration, Instant};

use common::dataset::{assert_same, contents, ok, populate};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer, escape, redis8_server};

/// A redis-server primary that starts a full sync at once.
fn primary(exe: Option<&str>, extra: &[&str]) -> RedisServer {
    let mut args = vec!["--repl-diskless-sync-delay", "0"];
    args.extend_from_slice(extra);
    match exe {
        Some(exe) => RedisServer::start_binary(exe, &args),
        None => RedisServer::start_with(&args),
    }
}

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

/// `field:value` of an INFO reply.
fn info_field(c: &mut RawConn, section: &str, field: &str) -> Option<String> {
    let reply = text(&c.cmd(&[b"INFO", section.as_bytes()]));
    reply.lines().find_map(|l| {
        l.strip_prefix(&format!("{field}:"))
            .map(|v| v.trim().to_string())
    })
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes a marker on the primary and waits until the replica has it:
/// everything the primary wrote before has been applied.
fn wait_caught_up(p: &mut RawConn, r: &mut RawConn, server: &ZwindowServer) {
    let marker = format!("marker-{}", rand_u64());
    ok(p, "SELECT 9");
    assert_eq!(p.cmd(&[b"SET", b"marker", marker.as_bytes()]), b"+OK\r\n");
    ok(p, "SELECT 0");
    let want = format!("${}\r\n{marker}\r\n", marker.len()).into_bytes();
    wait_for("the replica to catch up", Duration::from_secs(20), || {
        ok(r, "SELECT 9");
        let got = r.cmd(&[b"GET", b"marker"]);
        ok(r, "SELECT 0");
        got == want
    });
    let _ = server;
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(Instant::now().elapsed().as_nanos() as u64);
    h.finish()
}

/// `contents` without OBJECT ENCODING: a loaded value's encoding follows
/// the loader's thresholds (Redis 8.0 keeps a 300-element list a
/// listpack that zwindow, like Redis 7.0, loads as a quicklist).
fn values(c: &mut RawConn) -> Vec<(Vec<u8>, Vec<u8>)> {
    contents(c)
        .into_iter()
        .map(|(k, v)| {
            let type_end = v.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2);
            let mut rest = &v[type_end..];
            if rest.starts_with(b"$") {
                // Skip the encoding's bulk string.
                let len_end = rest.windows(2).position(|w| w == b"\r\n").unwrap_or(0);
                let len: usize = std::str::from_utf8(&rest[1..len_end])
                    .unwrap()
                    .parse()
                    .unwrap();
                rest = &rest[len_end + 2 + len + 2..];
            }
            // XINFO STREAM FULL's `active-time` came in Redis 7.2.
            let text = String::from_utf8_lossy(&[&v[..type_end], rest].concat())
                .replace("\"active-time\" <time> ", "");
            (text.into_bytes(), k)
        })
        .map(|(v, k)| (k, v))
        .collect()
}

fn replicaof(r: &mut RawConn, p: &RedisServer) {
    let port = p.port().to_string();
    assert_eq!(
        r.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
}

/// Writes of the stream after the full sync: other databases, a
/// transaction, TTLs, a script's writes, deletions.
fn stream_writes(p: &mut RawConn) {
    for line in [
        "SET after 1",
        "SELECT 3",
        "SET in3 three",
        "HSET h3 a 1 b 2",
        "SELECT 0",
        "MULTI",
        "INCR counter",
        "LPUSH list tx",
        "SADD strset tx",
        "EXEC",
        "EXPIRE short 100000",
        "PEXPIREAT int 99999999999999",
        "SET gone soon PX 1",
        "DEL noise",
        "ZINCRBY smallz 10 a",
        "XADD st 4-0 d 7",
        "XACK st g1 1-1",
    ] {
        ok(p, line);
    }
    // Expired on the primary: its DEL reaches the replica.
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(p.cmd(&[b"EXISTS", b"gone"]), b":0\r\n");
    let r = p.cmd(&[
        b"EVAL",
        b"redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], ARGV[1]); return 1",
        b"2",
        b"scripted",
        b"scriptlist",
        b"v",
    ]);
    assert_eq!(r, b":1\r\n", "{}", escape(&r));
}

/// The whole scenario against one primary: full sync, stream, refusals.
fn full_sync_then_stream(p: &RedisServer, replica_args: &[&str]) {
    let mut pc = p.conn();
    populate(&mut pc);
    ok(&mut pc, "SELECT 3");
    ok(&mut pc, "SET before3 x");
    ok(&mut pc, "SELECT 0");
    let z = ZwindowServer::start(replica_args);
    let mut rc = z.conn();
    replicaof(&mut rc, p);
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_same(&values(&mut pc), &values(&mut rc));
    stream_writes(&mut pc);
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_same(&values(&mut pc), &values(&mut rc));
    // The TTLs arrived with the keys.
    let ttl = text(&rc.cmd(&[b"TTL", b"short"]));
    assert!(ttl.starts_with(':') && ttl != ":-1\r\n", "TTL short: {ttl}");
    assert_eq!(rc.cmd(&[b"EXISTS", b"gone"]), b":0\r\n");
    // A replica refuses writes from its clients.
    assert_eq!(
        rc.cmd(&[b"SET", b"x", b"1"]),
        &b"-READONLY You can't write against a read only replica.\r\n"[..]
    );
    // The primary's offset is acknowledged.
    let offset = info_field(&mut pc, "replication", "master_repl_offset").unwrap();
    let offset = offset.trim();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let slave = info_field(&mut pc, "replication", "slave0").unwrap_or_default();
        if slave.contains(&format!("offset={offset},")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica's ACK: {slave} (primary at {offset})\n{}",
            z.log_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn full_sync_and_stream_from_redis70_disk_load() {
    let p = primary(None, &[]);
    full_sync_then_stream(&p, &[]);
}

#[test]
fn full_sync_from_redis70_swapdb_with_len_transfer() {
    // `repl-diskless-sync no`: the RDB comes as `$<len>`.
    let p = primary(None, &["--repl-diskless-sync", "no"]);
    full_sync_then_stream(&p, &["--repl-diskless-load", "swapdb"]);
}

#[test]
fn full_sync_from_redis70_on_empty_db() {
    let p = primary(None, &[]);
    full_sync_then_stream(&p, &["--repl-diskless-load", "on-empty-db"]);
}

#[test]
fn full_sync_from_redis80_rdb12() {
    let p = primary(Some(&redis8_server()), &[]);
    full_sync_then_stream(&p, &[]);
}

#[test]
fn full_sync_from_redis80_diskless_load() {
    let p = primary(Some(&redis8_server()), &[]);
    full_sync_then_stream(&p, &["--repl-diskless-load", "swapdb"]);
}

#[test]
fn a_full_sync_replaces_what_the_replica_had() {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    ok(&mut pc, "SET theirs 1");
    for load in ["disabled", "swapdb", "on-empty-db"] {
        let z = ZwindowServer::start(&["--repl-diskless-load", load]);
        let mut rc = z.conn();
        ok(&mut rc, "SET mine 1");
        ok(&mut rc, "SELECT 4");
        ok(&mut rc, "SET mine4 1");
        ok(&mut rc, "SELECT 0");
        replicaof(&mut rc, &p);
        wait_caught_up(&mut pc, &mut rc, &z);
        assert_eq!(
            rc.cmd(&[b"EXISTS", b"mine", b"theirs"]),
            b":1\r\n",
            "{load}"
        );
        ok(&mut rc, "SELECT 4");
        assert_eq!(rc.cmd(&[b"DBSIZE"]), b":0\r\n", "{load}");
    }
}

/// A redis-server 7.0 primary holding `a`, and a zwindow replica caught up
/// with it: the primary, a connection to it, the replica, one to it.
fn synced_replica() -> (RedisServer, RawConn, ZwindowServer, RawConn) {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    ok(&mut pc, "SET a 1");
    let z = ZwindowServer::start(&[]);
    let mut rc = z.conn();
    replicaof(&mut rc, &p);
    wait_caught_up(&mut pc, &mut rc, &z);
    (p, pc, z, rc)
}

#[test]
fn the_master_client_killed_then_a_partial_resync() {
    let (p, mut pc, z, mut rc) = synced_replica();
    let list = text(&rc.cmd(&[b"CLIENT", b"LIST"]));
    assert!(
        list.lines()
            .any(|l| l.contains("flags=M") && l.contains(&format!(":{} ", p.port()))),
        "{list}"
    );
    let partial = |c: &mut RawConn| -> u64 {
        info_field(c, "stats", "sync_partial_ok")
            .unwrap()
            .parse()
            .unwrap()
    };
    let full = |c: &mut RawConn| -> u64 {
        info_field(c, "stats", "sync_full")
            .unwrap()
            .parse()
            .unwrap()
    };
    let (partial0, full0) = (partial(&mut pc), full(&mut pc));
    assert_eq!(rc.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"master"]), b":1\r\n");
    ok(&mut pc, "SET b 2");
    ok(&mut pc, "SELECT 2");
    ok(&mut pc, "SET c 3");
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_eq!(rc.cmd(&[b"GET", b"b"]), b"$1\r\n2\r\n");
    ok(&mut rc, "SELECT 2");
    assert_eq!(rc.cmd(&[b"GET", b"c"]), b"$1\r\n3\r\n");
    assert_eq!(partial(&mut pc), partial0 + 1, "a partial resync");
    assert_eq!(full(&mut pc), full0, "no second full sync");
    // Already there: nothing changes.
    let port = p.port().to_string();
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        &b"+OK Already connected to specified master\r\n"[..]
    );
}

/// A primary frozen by DEBUG SLEEP while the replica waits for its
/// snapshot: no keepalive comes, and the replica gives up after its
/// `repl-timeout` as set now, lowered after the link started (Redis's
/// cron compares the last read with the current value).
#[test]
fn a_lowered_repl_timeout_applies_to_a_waiting_handshake() {
    let p = primary(
        None,
        &[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "1000",
            "--enable-debug-command",
            "yes",
        ],
    );
    let z = ZwindowServer::start(&[]);
    let mut rc = z.conn();
    replicaof(&mut rc, &p);
    let mut pc = p.conn();
    wait_for(
        "the replica to wait for a snapshot",
        Duration::from_secs(20),
        || info_field(&mut pc, "replication", "slave0").is_some_and(|s| s.contains("wait_bgsave")),
    );
    // Keepalives arrive every second meanwhile: the default timeout holds.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!z.log_tail().contains("Timeout connecting to the MASTER"));
    ok(&mut rc, "CONFIG SET repl-timeout 2");
    let mut sleeper = p.conn();
    sleeper.send(&common::encode_cmd(&[b"DEBUG", b"SLEEP", b"5"]));
    wait_for("the replica's timeout", Duration::from_secs(4), || {
        z.log_tail().contains("Timeout connecting to the MASTER...")
    });
    assert_eq!(sleeper.read_reply(), b"+OK\r\n");
}

#[test]
fn replicaof_no_one_makes_it_writable_again() {
    let (p, mut pc, _z, mut rc) = synced_replica();
    let port = p.port().to_string();
    assert_eq!(
        text(&rc.cmd(&[b"CONFIG", b"GET", b"replicaof"])),
        format!(
            "*2\r\n$9\r\nreplicaof\r\n${}\r\n127.0.0.1 {port}\r\n",
            10 + port.len()
        )
    );
    assert_eq!(rc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]), b"+OK\r\n");
    assert_eq!(rc.cmd(&[b"SET", b"x", b"1"]), b"+OK\r\n");
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$1\r\n1\r\n");
    assert_eq!(
        rc.cmd(&[b"CONFIG", b"GET", b"replicaof"]),
        &b"*2\r\n$9\r\nreplicaof\r\n$0\r\n\r\n"[..]
    );
    // The primary's writes no longer arrive.
    ok(&mut pc, "SET a 2");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$1\r\n1\r\n");
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", b"65536"]),
        &b"-ERR Invalid master port\r\n"[..]
    );
}

/// INFO replication's replica figures (the lead's INFO reads the link's
/// state) and the old ID kept as `master_replid2` after promotion.
#[test]
fn info_replication_on_a_replica() {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    let z = ZwindowServer::start(&[]);
    let mut rc = z.conn();
    replicaof(&mut rc, &p);
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_eq!(
        info_field(&mut rc, "replication", "role").as_deref(),
        Some("slave")
    );
    assert_eq!(
        info_field(&mut rc, "replication", "master_link_status").as_deref(),
        Some("up")
    );
    let id = info_field(&mut pc, "replication", "master_replid").unwrap();
    assert_eq!(rc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]), b"+OK\r\n");
    assert_eq!(
        info_field(&mut rc, "replication", "master_replid2"),
        Some(id)
    );
}

#[test]
fn stale_data_refused_while_the_link_is_down() {
    // Nothing listens there: the link stays down.
    let port = common::free_port().to_string();
    let z = ZwindowServer::start(&["--replica-serve-stale-data", "no"]);
    let mut rc = z.conn();
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
    assert_eq!(
        rc.cmd(&[b"GET", b"a"]),
        &b"-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n"[..]
    );
    // `stale` commands run.
    assert!(rc.cmd(&[b"INFO", b"server"]).starts_with(b"$"));
    assert_eq!(rc.cmd(&[b"REPLICAOF", b"NO", b"ONE"]), b"+OK\r\n");
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$-1\r\n");
}

#[test]
fn replicaof_in_the_config_and_a_restart_continues_partially() {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    ok(&mut pc, "SET a 1");
    let dir = PrivateDir::new("replica");
    let start = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
        cmd.args(["--bind", "127.0.0.1", "--port", "0", "--save", ""])
            .args(["--replicaof", "127.0.0.1", &p.port().to_string()])
            .current_dir(&dir.0);
        ZwindowServer::start_command(cmd)
    };
    let mut z = start();
    let mut rc = z.conn();
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_eq!(rc.cmd(&[b"GET", b"a"]), b"$1\r\n1\r\n");
    let got = text(&rc.cmd(&[b"CONFIG", b"GET", b"replicaof"]));
    assert!(
        got.ends_with(&format!("127.0.0.1 {}\r\n", p.port())),
        "{got}"
    );
    assert_eq!(
        rc.cmd(&[b"CONFIG", b"SET", b"replicaof", b"no one"]),
        &b"-ERR CONFIG SET failed (possibly related to argument 'replicaof') - can't set immutable config\r\n"[..]
    );
    // The saved file records the replication ID and offset.
    assert_eq!(rc.cmd(&[b"SAVE"]), b"+OK\r\n");
    let rdb = std::fs::read(dir.0.join("dump.rdb")).unwrap();
    let id = info_field(&mut pc, "replication", "master_replid").unwrap();
    assert!(rdb.windows(7).any(|w| w == b"repl-id"), "no repl-id aux");
    assert!(
        rdb.windows(40).any(|w| w == id.as_bytes()),
        "not the primary's ID"
    );
    drop(rc);
    z.terminate(Duration::from_secs(5));
    let partial0: u64 = info_field(&mut pc, "stats", "sync_partial_ok")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Written while the replica was down: the primary's backlog has it.
    ok(&mut pc, "SET b 2");
    let z = start();
    let mut rc = z.conn();
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_eq!(
        rc.cmd(&[b"MGET", b"a", b"b"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
    let partial: u64 = info_field(&mut pc, "stats", "sync_partial_ok")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(partial, partial0 + 1, "the restart continued partially");
}

/// Redis propagates an approximate trim as the exact one it came to and
/// keeps its LIMIT (`XTRIM s MAXLEN = 100 LIMIT 100`), which a client may
/// not send but the primary may: the replica obeys it.
#[test]
fn an_exact_trim_with_limit_from_the_primary_is_obeyed() {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    let z = ZwindowServer::start(&[]);
    let mut rc = z.conn();
    replicaof(&mut rc, &p);
    wait_caught_up(&mut pc, &mut rc, &z);
    for i in 1..=300 {
        let id = format!("{i}-1");
        pc.cmd(&[b"XADD", b"s", id.as_bytes(), b"f", b"v"]);
    }
    ok(&mut pc, "XTRIM s MAXLEN ~ 10 LIMIT 100");
    ok(&mut pc, "XADD s MAXLEN ~ 10 LIMIT 100 * f v");
    wait_caught_up(&mut pc, &mut rc, &z);
    assert_eq!(rc.cmd(&[b"XLEN", b"s"]), pc.cmd(&[b"XLEN", b"s"]));
    assert_eq!(
        info_field(&mut rc, "stats", "total_error_replies").as_deref(),
        Some("0")
    );
}

/// The same script calls on a redis-server 7.0 replica and on a zwindow
/// one, both read-only with their link down: what a script's declared
/// flags allow before it runs (READONLY, MASTERDOWN) and what `redis.call`
/// refuses inside it (a write on a read-only replica, a non-`stale`
/// command on a stale one).
#[test]
fn scripts_on_a_read_only_and_stale_replica_match_redis() {
    let dead = common::free_port().to_string();
    let lib = "#!lua name=t\n\
        redis.register_function{function_name='ro', callback=function() return redis.call('get', 'x') end, flags={'no-writes'}}\n\
        redis.register_function{function_name='st', callback=function() return redis.call('get', 'x') end, flags={'allow-stale', 'no-writes'}}\n\
        redis.register_function{function_name='stw', callback=function() return redis.call('set', 'x', 1) end, flags={'allow-stale'}}\n\
        redis.register_function{function_name='w', callback=function() return redis.call('set', 'x', 1) end}\n\
        redis.register_function{function_name='info', callback=function() return redis.call('ping') end, flags={'allow-stale', 'no-writes'}}";
    let set = "return redis.call('set','x',1)";
    let calls: Vec<Vec<&[u8]>> = vec![
        vec![b"FCALL", b"w", b"0"],
        vec![b"FCALL", b"ro", b"0"],
        vec![b"EVAL", set.as_bytes(), b"0"],
        vec![b"EVAL", b"#!lua\nreturn redis.call('set','x',1)", b"0"],
        vec![
            b"EVAL",
            b"#!lua flags=no-writes\nreturn redis.call('set','x',1)",
            b"0",
        ],
        vec![
            b"EVALSHA",
            b"4cb91861d207e5689edc816618ab68f9d6de3b44",
            b"0",
        ],
        vec![b"EVAL", b"return redis.call('publish','c', 1)", b"0"],
        vec![b"CONFIG", b"SET", b"replica-serve-stale-data", b"no"],
        vec![b"FCALL", b"ro", b"0"],
        vec![b"FCALL", b"st", b"0"],
        vec![b"FCALL", b"stw", b"0"],
        vec![b"FCALL", b"info", b"0"],
        vec![b"EVAL", b"return 1", b"0"],
        vec![
            b"EVAL",
            b"#!lua flags=no-writes,allow-stale\nreturn redis.call('get','x')",
            b"0",
        ],
        vec![b"EVAL", b"#!lua flags=allow-stale\nreturn 1", b"0"],
    ];
    let run = |c: &mut RawConn| -> Vec<String> {
        assert!(
            c.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()])
                .starts_with(b"$")
        );
        assert!(
            c.cmd(&[b"SCRIPT", b"LOAD", set.as_bytes()])
                .starts_with(b"$40")
        );
        ok(c, &format!("REPLICAOF 127.0.0.1 {dead}"));
        calls.iter().map(|a| text(&c.cmd(a))).collect()
    };
    let r = RedisServer::start_with(&[]);
    let z = ZwindowServer::start(&[]);
    let want = run(&mut r.conn());
    let got = run(&mut z.conn());
    for ((a, w), g) in calls.iter().zip(&want).zip(&got) {
        assert_eq!(g, w, "{}", common::show_args(a));
    }
    // Nothing was written.
    let mut zc = z.conn();
    ok(&mut zc, "CONFIG SET replica-serve-stale-data yes");
    assert_eq!(zc.cmd(&[b"DBSIZE"]), b":0\r\n");
}

/// zwindow as the primary of a redis-server 7.0 replica: PUBLISH reaches
/// the replica's subscribers (Redis propagates it outside cluster mode),
/// and a script's `redis.set_repl` keeps what it wrote with REPL_NONE or
/// REPL_AOF from the replica.
#[test]
fn publish_and_set_repl_reach_a_replica_as_redis() {
    let z = ZwindowServer::start(&[]);
    let mut zc = z.conn();
    let r = RedisServer::start_with(&[]);
    let mut rc = r.conn();
    let port = z.port().to_string();
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
    wait_for("the link", Duration::from_secs(20), || {
        info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up")
    });
    let mut sub = r.conn();
    assert!(sub.cmd(&[b"SUBSCRIBE", b"news"]).starts_with(b"*3"));
    assert_eq!(zc.cmd(&[b"PUBLISH", b"news", b"hello"]), b":0\r\n");
    sub.set_timeout(Duration::from_secs(10));
    assert_eq!(
        sub.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
    let script = "redis.call('set','a','1'); redis.set_repl(redis.REPL_NONE); \
        redis.call('set','b','2'); redis.set_repl(redis.REPL_AOF); \
        redis.call('set','c','3'); redis.set_repl(redis.REPL_ALL); redis.call('set','d','4')";
    assert_eq!(zc.cmd(&[b"EVAL", script.as_bytes(), b"0"]), b"$-1\r\n");
    let want = b"*4\r\n$1\r\n1\r\n$-1\r\n$-1\r\n$1\r\n4\r\n".to_vec();
    wait_for("a and d on the replica", Duration::from_secs(20), || {
        rc.cmd(&[b"MGET", b"a", b"b", b"c", b"d"]) == want
    });
    assert_eq!(
        zc.cmd(&[b"MGET", b"a", b"b", b"c", b"d"]),
        b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n"
    );
}

/// `repl-diskless-load swapdb` when the primary continues this replica's
/// history (Redis's async loading, as integration/replication's "Diskless
/// load swapdb (async_loading)" tests): while the new RDB loads, clients
/// read the old data and call the old functions at once, never -LOADING
/// and never waiting for the load; then the new data and functions take
/// their place together. `key-load-delay` stretches the load itself (past
/// the transfer) to two seconds.
#[test]
fn async_loading_serves_the_old_data_until_the_swap() {
    let p = primary(
        None,
        &[
            "--repl-diskless-sync",
            "yes",
            "--save",
            "",
            "--enable-debug-command",
            "yes",
        ],
    );
    let mut pc = p.conn();
    let z = ZwindowServer::start(&[
        "--repl-diskless-load",
        "swapdb",
        "--replica-read-only",
        "no",
    ]);
    let mut rc = z.conn();
    replicaof(&mut rc, &p);
    wait_caught_up(&mut pc, &mut rc, &z);
    ok(&mut pc, "DEBUG POPULATE 2000 master 100");
    ok(&mut rc, "SET mykey myvalue");
    let lib = |v: &str| {
        format!("#!lua name=test\nredis.register_function('test', function() return '{v}' end)")
    };
    assert_eq!(
        rc.cmd(&[b"FUNCTION", b"LOAD", lib("hello1").as_bytes()]),
        b"$4\r\ntest\r\n"
    );
    assert_eq!(
        pc.cmd(&[b"FUNCTION", b"LOAD", lib("hello2").as_bytes()]),
        b"$4\r\ntest\r\n"
    );
    ok(&mut rc, "CONFIG SET key-load-delay 1000");
    // The replica's link dropped, and the backlog too small to continue
    // it: a full sync from the history the replica already has.
    ok(&mut pc, "MULTI");
    let big = vec![b'A'; 16384];
    pc.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"replica"]);
    pc.cmd(&[b"CONFIG", b"SET", b"repl-backlog-size", b"16384"]);
    for i in 0..10 {
        pc.cmd(&[b"SET", format!("big{i}").as_bytes(), &big]);
    }
    assert!(pc.cmd(&[b"EXEC"]).starts_with(b"*12\r\n"));
    wait_for("async loading", Duration::from_secs(20), || {
        info_field(&mut rc, "persistence", "async_loading").as_deref() == Some("1")
    });
    let started = Instant::now();
    assert_eq!(rc.cmd(&[b"GET", b"mykey"]), b"$7\r\nmyvalue\r\n");
    assert_eq!(rc.cmd(&[b"FCALL", b"test", b"0"]), b"$6\r\nhello1\r\n");
    assert_eq!(rc.cmd(&[b"DBSIZE"]), b":1\r\n");
    let took = started.elapsed();
    assert_eq!(
        info_field(&mut rc, "persistence", "async_loading").as_deref(),
        Some("1"),
        "the load ended before the reads: nothing was shown"
    );
    assert_eq!(
        info_field(&mut rc, "persistence", "loading").as_deref(),
        Some("0")
    );
    assert!(
        took < Duration::from_millis(500),
        "reads during async loading waited {took:?}"
    );
    wait_for("the swap", Duration::from_secs(30), || {
        info_field(&mut rc, "persistence", "async_loading").as_deref() == Some("0")
            && info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert_eq!(rc.cmd(&[b"GET", b"mykey"]), b"$-1\r\n");
    assert_eq!(rc.cmd(&[b"FCALL", b"test", b"0"]), b"$6\r\nhello2\r\n");
    assert_eq!(rc.cmd(&[b"DBSIZE"]), b":2010\r\n");
}

/// Clients of a read-only replica blocked in `XREAD BLOCK` (from an ID
/// and from `$`) are served by the primary's XADD when it arrives through
/// the stream, as are its subscribers by a PUBLISH, as redis-server
/// serves them at once (Redis's cluster suite's "read-only blocking
/// operations from replica"). What the master client caused waited for
/// its batch to end, which it never marked.
fn blocked_xread_served_from_the_stream(primary_port: u16, pc: &mut RawConn) {
    let z = ZwindowServer::start(&[]);
    let mut rc = z.conn();
    let port = primary_port.to_string();
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
    wait_caught_up(pc, &mut rc, &z);
    let mut from_id = z.conn();
    from_id.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"0",
    ]));
    let mut from_last = z.conn();
    from_last.send(&common::encode_cmd(&[
        b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$",
    ]));
    let mut sub = z.conn();
    assert!(sub.cmd(&[b"SUBSCRIBE", b"news"]).starts_with(b"*3"));
    wait_for("two blocked clients", Duration::from_secs(20), || {
        info_field(&mut rc, "clients", "blocked_clients").as_deref() == Some("2")
    });
    assert_eq!(
        pc.cmd(&[b"XADD", b"s", b"1-1", b"f", b"v"]),
        b"$3\r\n1-1\r\n"
    );
    assert_eq!(pc.cmd(&[b"PUBLISH", b"news", b"hi"]), b":0\r\n");
    let want = b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
    for c in [&mut from_id, &mut from_last] {
        c.set_timeout(Duration::from_secs(10));
        assert_eq!(text(&c.read_reply()), text(want));
    }
    sub.set_timeout(Duration::from_secs(10));
    assert_eq!(
        sub.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
    );
    // The blocking writes stay refused, as redis-server refuses them.
    assert_eq!(
        text(&rc.cmd(&[b"BLPOP", b"l", b"0"])),
        "-READONLY You can't write against a read only replica.\r\n"
    );
}

#[test]
fn a_blocked_xread_on_a_replica_of_redis_is_served() {
    let p = primary(None, &[]);
    let mut pc = p.conn();
    blocked_xread_served_from_the_stream(p.port(), &mut pc);
}

#[test]
fn a_blocked_xread_on_a_replica_of_zwindow_is_served() {
    let p = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let mut pc = p.conn();
    blocked_xread_served_from_the_stream(p.port(), &mut pc);
}

/// `bind-source-addr`: the link to the primary leaves from that address
/// (the primary lists the replica by it), and from any address when it
/// cannot be bound, as Redis's best-effort bind.
#[test]
fn the_link_leaves_from_bind_source_addr() {
    let p = primary(None, &["--protected-mode", "no"]);
    let mut pc = p.conn();
    let z = ZwindowServer::start(&[]);
    let mut r = z.conn();
    ok(&mut r, "CONFIG SET bind-source-addr 127.0.0.2");
    assert_eq!(
        text(&r.cmd(&[b"CONFIG", b"GET", b"bind-source-addr"])),
        "*2\r\n$16\r\nbind-source-addr\r\n$9\r\n127.0.0.2\r\n"
    );
    replicaof(&mut r, &p);
    wait_for(
        "the replica listed from 127.0.0.2",
        Duration::from_secs(20),
        || {
            info_field(&mut pc, "replication", "slave0")
                .is_some_and(|s| s.contains("ip=127.0.0.2,"))
        },
    );
    // An address this machine does not have: the link is made anyway.
    ok(&mut r, "REPLICAOF NO ONE");
    ok(&mut r, "CONFIG SET bind-source-addr 192.0.2.77");
    replicaof(&mut r, &p);
    wait_for(
        "the replica listed from 127.0.0.1",
        Duration::from_secs(20),
        || {
            info_field(&mut pc, "replication", "slave0")
                .is_some_and(|s| s.contains("ip=127.0.0.1,"))
                && info_field(&mut r, "replication", "master_link_status").as_deref() == Some("up")
        },
    );
}

/// redis-server or zwindow, for [`a_long_full_sync_answers_loading`].
#[derive(Clone, Copy, Debug)]
enum Kind {
    Zwindow,
    Redis,
}

/// A server of `kind` started with `args`, kept alive by the box; a
/// connection to it and its port.
fn start(kind: Kind, args: &[&str]) -> (Box<dyn std::any::Any>, RawConn, u16) {
    match kind {
        Kind::Zwindow => {
            let z = ZwindowServer::start(args);
            let (c, port) = (z.conn(), z.port());
            (Box::new(z), c, port)
        }
        Kind::Redis => {
            let r = RedisServer::start_with(args);
            let (c, port) = (r.conn(), r.port());
            (Box::new(r), c, port)
        }
    }
}

/// A full sync whose payload (2.5 MB, sent slowly: `rdb-key-save-delay`
/// on the primary, `key-load-delay` on the replica) passes
/// `loading-process-events-interval-bytes` (2 MB in Redis 7.0, 512 KB since 7.2) answers the replica's
/// clients while it loads, as Redis's `rdbLoadProgressCallback` does on
/// every path: INFO with `loading:1` and the bytes read so far (an
/// `$EOF:`-marked diskless transfer has no total, and the count is shown
/// as it is), and -LOADING to a read. The client asks from before the
/// load starts until it is answered during the load: a replica that held
/// it until the load ended would answer `loading:0` with the link up.
/// `repl-diskless-load`: `swapdb` (a first sync: the history differs, so
/// not asynchronous) and `on-empty-db` (empty) parse the socket's bytes,
/// `disabled` the file written from them. redis-server 7.0 replicas
/// show the same.
/// `loading_loaded_bytes` of an `INFO persistence` reply (0 if absent).
fn loaded_bytes(info: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix("loading_loaded_bytes:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0)
}

fn a_long_full_sync_answers_loading(primary_kind: Kind, replica: Kind, mode: &str) {
    let what = format!("{replica:?} replica of {primary_kind:?}, repl-diskless-load {mode}");
    let (_primary, mut pc, port) = start(
        primary_kind,
        &[
            "--repl-diskless-sync",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
            "--rdbcompression",
            "no",
            "--save",
            "",
            "--enable-debug-command",
            "yes",
        ],
    );
    ok(&mut pc, "DEBUG POPULATE 2500 key 1000");
    ok(&mut pc, "CONFIG SET rdb-key-save-delay 1000");
    let (_replica, mut rc, _) = start(
        replica,
        &["--repl-diskless-load", mode, "--key-load-delay", "1000"],
    );
    rc.set_timeout(Duration::from_secs(60));
    let port = port.to_string();
    assert_eq!(
        rc.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]),
        b"+OK\r\n"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let get = loop {
        // One write: Redis answers both in one pass of its event loop
        // within the load.
        let mut pair = common::encode_cmd(&[b"INFO", b"persistence"]);
        pair.extend(common::encode_cmd(&[b"GET", b"key:1"]));
        rc.send(&pair);
        let info = text(&rc.read_reply());
        let get = text(&rc.read_reply());
        // zwindow answers from the first byte of a load, Redis only once
        // it has read its interval (2 MB in 7.0); wait for the progress
        // Redis would show.
        if info.contains("\r\nloading:1\r\n") {
            assert_eq!(
                get, "-LOADING Redis is loading the dataset in memory\r\n",
                "{what}"
            );
            if loaded_bytes(&info) > 1_000_000 {
                break get;
            }
        }
        let link = info_field(&mut rc, "replication", "master_link_status");
        assert!(
            link.as_deref() != Some("up"),
            "{what}: the load ended before a client saw 1 MB of its progress"
        );
        assert!(Instant::now() < deadline, "{what}: no load seen");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(
        get, "-LOADING Redis is loading the dataset in memory\r\n",
        "{what}"
    );
    wait_for(
        &format!("{what}: the sync"),
        Duration::from_secs(60),
        || info_field(&mut rc, "replication", "master_link_status").as_deref() == Some("up"),
    );
    assert_eq!(rc.cmd(&[b"DBSIZE"]), b":2500\r\n", "{what}");
}

#[test]
fn a_long_diskless_swapdb_load_answers_loading() {
    for (primary, replica) in [
        (Kind::Redis, Kind::Zwindow),
        (Kind::Redis, Kind::Redis),
        (Kind::Zwindow, Kind::Zwindow),
    ] {
        a_long_full_sync_answers_loading(primary, replica, "swapdb");
    }
}

#[test]
fn a_long_diskless_on_empty_db_load_answers_loading() {
    for (primary, replica) in [
        (Kind::Redis, Kind::Zwindow),
        (Kind::Redis, Kind::Redis),
        (Kind::Zwindow, Kind::Redis),
    ] {
        a_long_full_sync_answers_loading(primary, replica, "on-empty-db");
    }
}

#[test]
fn a_long_disk_load_answers_loading() {
    for replica in [Kind::Zwindow, Kind::Redis] {
        a_long_full_sync_answers_loading(Kind::Redis, replica, "disabled");
    }
}

/// `CONFIG SET appendonly` while a full sync loads is applied once it is
/// loaded (Redis's `restartAOFAfterSYNC` reads the setting then): turned
/// on during the load, the AOF is on after it; turned off, it stays off.
/// The same steps on a redis-server 8.0 replica give the same figures.
#[test]
fn appendonly_changed_during_a_full_sync_load_applies_after_it() {
    let p = primary(None, &["--enable-debug-command", "yes"]);
    let mut pc = p.conn();
    ok(&mut pc, "DEBUG POPULATE 10000 key 10");
    let steps = |r: &mut RawConn| -> Vec<String> {
        let mut seen = Vec::new();
        let port = p.port().to_string();
        for (before, during) in [("no", "yes"), ("yes", "no")] {
            ok(r, &format!("CONFIG SET appendonly {before}"));
            ok(r, "CONFIG SET key-load-delay 100");
            ok(r, "FLUSHALL");
            ok(r, "DEBUG POPULATE 1000");
            ok(r, &format!("REPLICAOF 127.0.0.1 {port}"));
            wait_for("the load", Duration::from_secs(20), || {
                info_field(r, "persistence", "loading").as_deref() == Some("1")
            });
            ok(r, &format!("CONFIG SET appendonly {during}"));
            seen.push(info_field(r, "persistence", "loading").unwrap_or_default());
            ok(r, "CONFIG SET key-load-delay 0");
            wait_for("the load's end", Duration::from_secs(20), || {
                info_field(r, "persistence", "loading").as_deref() == Some("0")
            });
            seen.push(info_field(r, "persistence", "aof_enabled").unwrap_or_default());
            ok(r, "REPLICAOF NO ONE");
        }
        seen
    };
    // Clients are answered during a load past this many bytes.
    let args = [
        "--enable-debug-command",
        "yes",
        "--loading-process-events-interval-bytes",
        "1024",
    ];
    let z = ZwindowServer::start(&args);
    let zwindow = steps(&mut z.conn());
    let r = RedisServer::start_binary(&redis8_server(), &args);
    let redis = steps(&mut r.conn());
    assert_eq!(zwindow, ["1", "1", "1", "0"]);
    assert_eq!(zwindow, redis, "zwindow, then redis-server 8.0");
}
