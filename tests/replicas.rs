//! zwindow as a primary with redis-server replicas (Debian's 7.0.15 and
//! the 8.0 built by `.ci/test`): full resync (diskless and through the
//! file), the stream, partial resync after the link drops, WAIT,
//! min-replicas-to-write, ROLE and INFO replication beside a redis-server
//! primary with the same replica, and zwindow's own commands reaching a
//! redis-server replica as what they amount to.

mod common;

use std::time::{Duration, Instant};

use common::dataset::{assert_same, contents, ok, populate};
use common::repl::{digest, eventually, info_field, settle};
use common::*;

/// A redis-server (`exe`) replica of the server on `port`, in sync.
fn replica_of(exe: &str, port: u16, extra: &[&str]) -> RedisServer {
    let p = port.to_string();
    let mut args = vec![
        "--replicaof",
        "127.0.0.1",
        &p,
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(extra);
    let r = RedisServer::start_binary(exe, &args);
    let mut c = r.conn();
    eventually("the replica's link", || {
        info_field(&mut c, "replication", "master_link_status") == "up"
    });
    r
}

/// Writes after the full sync: every kind the stream carries.
fn more_writes(c: &mut RawConn) {
    for line in [
        "SET after 1",
        "INCRBY after 41",
        "EXPIRE after 100000",
        "LPUSH biglist new",
        "SELECT 5",
        "HSET h5 a 1 b 2",
        "SELECT 0",
        "MULTI",
        "SADD strset d",
        "ZINCRBY smallz 1 a",
        "EXEC",
        "EVAL \"redis.call('set', KEYS[1], 'lua'); return redis.call('incr', KEYS[2])\" 2 luakey luactr",
        "SPOP bigset 3",
        "SET px v PX 100000",
        "DEL noise",
        "XADD st 4-0 z 1",
        "XACK st g1 1-1",
    ] {
        ok(c, line);
    }
}

/// `same_encodings`: Redis 8.0 re-encodes some values as it loads them
/// (a short quicklist becomes a listpack), so only values are compared.
fn full_sync_and_stream(exe: &str, diskless: &str, same_encodings: bool) {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        diskless,
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut zc = z.conn();
    populate(&mut zc);
    let r = replica_of(exe, z.port(), &[]);
    let mut rc = r.conn();
    more_writes(&mut zc);
    settle(&mut zc, &mut [&mut rc]);
    if same_encodings {
        assert_same(&contents(&mut zc), &contents(&mut rc));
    }
    assert_eq!(digest(&mut zc), digest(&mut rc), "DEBUG DIGEST");
    assert_eq!(info_field(&mut zc, "stats", "sync_full"), "1");
    // The replica ran every command of the stream without an error.
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}

#[test]
fn a_redis_7_replica_gets_the_dataset_and_the_stream_diskless() {
    full_sync_and_stream(&find_redis_server(), "yes", true);
}

#[test]
fn a_redis_7_replica_gets_the_dataset_and_the_stream_through_the_file() {
    full_sync_and_stream(&find_redis_server(), "no", true);
}

#[test]
fn a_redis_8_replica_gets_the_dataset_and_the_stream() {
    full_sync_and_stream(&redis8_server(), "yes", false);
}

/// The link cut (CLIENT KILL TYPE replica) twice: the replica continues
/// from the backlog (`+CONTINUE`), nothing lost.
#[test]
fn a_dropped_link_continues_with_a_partial_resync() {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let mut zc = z.conn();
    populate(&mut zc);
    let r = replica_of(&find_redis_server(), z.port(), &[]);
    let mut rc = r.conn();
    for round in 0..2 {
        settle(&mut zc, &mut [&mut rc]);
        let killed = parse_reply(&zc.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"replica"])).int();
        assert_eq!(killed, 1);
        for i in 0..100 {
            let k = format!("k{round}-{i}");
            zc.cmd(&[b"SET", k.as_bytes(), b"v"]);
        }
        eventually("the link back up", || {
            info_field(&mut rc, "replication", "master_link_status") == "up"
        });
    }
    settle(&mut zc, &mut [&mut rc]);
    assert_eq!(info_field(&mut zc, "stats", "sync_full"), "1");
    assert_eq!(info_field(&mut zc, "stats", "sync_partial_ok"), "2");
    assert_eq!(digest(&mut zc), digest(&mut rc));
}

/// WAIT counts the replicas that acknowledged the caller's last write;
/// min-replicas-to-write refuses writes without enough fresh replicas.
#[test]
fn wait_and_min_replicas_to_write() {
    let z = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let mut zc = z.conn();
    // No replica: WAIT 0 answers at once, WAIT 1 after its timeout.
    assert_eq!(zc.cmd_str("WAIT 0 0"), b":0\r\n");
    let t = Instant::now();
    assert_eq!(zc.cmd_str("WAIT 1 200"), b":0\r\n");
    assert!(t.elapsed() >= Duration::from_millis(190));
    let r = replica_of(&find_redis_server(), z.port(), &[]);
    zc.cmd_str("SET a 1");
    assert_eq!(zc.cmd_str("WAIT 1 5000"), b":1\r\n");
    let t = Instant::now();
    assert_eq!(zc.cmd_str("WAIT 2 300"), b":1\r\n");
    assert!(t.elapsed() >= Duration::from_millis(290));
    // Inside MULTI it answers at once.
    zc.cmd_str("MULTI");
    zc.cmd_str("WAIT 5 0");
    assert_eq!(zc.cmd_str("EXEC"), b"*1\r\n:1\r\n");
    ok(&mut zc, "CONFIG SET min-replicas-max-lag 10");
    ok(&mut zc, "CONFIG SET min-replicas-to-write 1");
    eventually("a good replica", || {
        info_field(&mut zc, "replication", "min_slaves_good_slaves") == "1"
    });
    assert_eq!(zc.cmd_str("SET b 2"), b"+OK\r\n");
    ok(&mut zc, "CONFIG SET min-replicas-to-write 2");
    assert_eq!(
        zc.cmd_str("SET b 3"),
        b"-NOREPLICAS Not enough good replicas to write.\r\n"
    );
    drop(r);
}

/// ROLE and INFO replication of a primary with one replica, beside a
/// redis-server primary with one: the same shape and field names.
#[test]
fn role_and_info_replication_as_redis() {
    let z = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let rp = RedisServer::start_with(&["--repl-diskless-sync-delay", "0"]);
    let zr = replica_of(&find_redis_server(), z.port(), &[]);
    let rr = replica_of(&find_redis_server(), rp.port(), &[]);
    let (mut zc, mut rc) = (z.conn(), rp.conn());
    zc.cmd_str("SET a 1");
    rc.cmd_str("SET a 1");
    settle(&mut zc, &mut [&mut zr.conn()]);
    settle(&mut rc, &mut [&mut rr.conn()]);
    let names = |c: &mut RawConn| -> Vec<String> {
        let r = c.cmd_str("INFO replication");
        String::from_utf8_lossy(&r)
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
            .collect()
    };
    assert_eq!(names(&mut zc), names(&mut rc));
    let slave0 = |c: &mut RawConn| {
        let v = info_field(c, "replication", "slave0");
        // ip=…,port=…,state=online,offset=…,lag=…: the port differs.
        v.split(',')
            .filter(|kv| kv.starts_with("ip=") || kv.starts_with("state="))
            .collect::<Vec<_>>()
            .join(",")
    };
    assert_eq!(slave0(&mut zc), slave0(&mut rc));
    let role = |c: &mut RawConn, replica_port: u16| {
        let r = parse_reply(&c.cmd_str("ROLE"));
        let a = r.array();
        assert_eq!(a[0].bulk(), b"master");
        let replicas = a[2].array();
        assert_eq!(replicas.len(), 1);
        let one = replicas[0].array();
        assert_eq!(one[0].bulk(), b"127.0.0.1");
        assert_eq!(one[1].bulk(), replica_port.to_string().as_bytes());
        (
            a[1].int(),
            String::from_utf8_lossy(one[2].bulk())
                .parse::<i64>()
                .unwrap(),
        )
    };
    let (offset, acked) = role(&mut zc, zr.port());
    assert!(acked > 0 && acked <= offset, "acked {acked} of {offset}");
    role(&mut rc, rr.port());
    // A replica's view of its primary.
    let zrole = parse_reply(&zr.conn().cmd_str("ROLE"));
    assert_eq!(zrole.array()[0].bulk(), b"slave");
    assert_eq!(zrole.array()[3].bulk(), b"connected");
}

/// zwindow's own commands (member and field TTLs, window rules, HSETEX)
/// reach a redis-server replica as what they amount to: nothing for a
/// TTL, HSET for HSETEX's values, and the ZREMs of what expires or ages
/// out. The replica never receives a command it cannot run.
#[test]
fn zwindow_commands_reach_a_redis_replica_as_what_they_amount_to() {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let r = replica_of(&find_redis_server(), z.port(), &[]);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    for line in [
        "ZADD z 1 a 2 b 3 c",
        "ZEXPIRE z 1000 MEMBERS 1 a",
        "ZPEXPIRE z 1 MEMBERS 1 b",
        "HSETEX h PX 100000 FIELDS 2 f1 v1 f2 v2",
        "HSET h2 f v",
        "HPEXPIRE h2 1 FIELDS 1 f",
        "ZWINDOW SET w:* 1s",
        "ZADD w:1 0 old 99999999999 new",
    ] {
        ok(&mut zc, line);
    }
    std::thread::sleep(Duration::from_millis(50));
    // Lookups find what is due and log its removal.
    for line in ["ZRANGE z 0 -1", "HGETALL h2", "ZRANGE w:1 0 -1"] {
        zc.cmd_str(line);
    }
    settle(&mut zc, &mut [&mut rc]);
    for line in [
        "ZRANGE z 0 -1",
        "HMGET h f1 f2",
        "EXISTS h2",
        "ZRANGE w:1 0 -1",
    ] {
        assert_eq!(zc.cmd_str(line), rc.cmd_str(line), "{line}");
    }
    assert_eq!(rc.cmd_str("ZRANGE z 0 -1"), b"*2\r\n$1\r\na\r\n$1\r\nc\r\n");
    // Redis 7.0 has no field TTLs: `h`'s fields have them on zwindow,
    // which DEBUG DIGEST marks as Redis 7.4+ does. Without them the whole
    // dataset digests the same.
    ok(&mut zc, "HPERSIST h FIELDS 2 f1 f2");
    settle(&mut zc, &mut [&mut rc]);
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
    assert_eq!(digest(&mut zc), digest(&mut rc));
}

/// Members a window ages out at a RENAME's or COPY's destination are
/// handed off (RPUSHed to the rule's list, here the source) before the
/// source is taken, the order the stream logs them in: a zwindow replica
/// and a redis-server replica end with what the primary has.
#[test]
fn a_window_hand_off_at_a_rename_destination_replicates_in_order() {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
    ]);
    let port = z.port().to_string();
    let zr = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let r = replica_of(&find_redis_server(), z.port(), &[]);
    let (mut zc, mut zrc, mut rc) = (z.conn(), zr.conn(), r.conn());
    eventually("the zwindow replica's link", || {
        info_field(&mut zrc, "replication", "master_link_status") == "up"
    });
    for line in [
        "ZADD w 1 old",
        "RPUSH l a b",
        "ZWINDOW SET w 3600 MOVETO l",
        "RENAME l w",
        "ZADD w2 1 old",
        "RPUSH l2 a b",
        "ZWINDOW SET w2 3600 MOVETO l2",
        "COPY l2 w2 REPLACE",
    ] {
        ok(&mut zc, line);
    }
    let all = b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$3\r\nold\r\n";
    assert_eq!(zc.cmd_str("LRANGE w 0 -1"), all);
    assert_eq!(zc.cmd_str("EXISTS l"), b":0\r\n");
    assert_eq!(zc.cmd_str("LRANGE w2 0 -1"), all);
    settle(&mut zc, &mut [&mut zrc, &mut rc]);
    let d = digest(&mut zc);
    assert_eq!(digest(&mut zrc), d, "the zwindow replica");
    assert_eq!(digest(&mut rc), d, "the redis-server replica");
}

/// Redis's order across connections, a replica included: a write reaches
/// a replica no sooner than its command's reply leaves (on the replica a
/// reader could otherwise see it before its writer has a reply). A
/// script writes, then runs on for a while; a pipeline writes, then
/// sleeps (DEBUG SLEEP) in the same batch; with one thread and with two
/// (where the replica's feed runs beside the batch). A reader polls the
/// replica meanwhile.
#[test]
fn a_write_reaches_a_replica_after_its_reply() {
    for threads in ["1", "2"] {
        let z = ZwindowServer::start(&[
            "--repl-diskless-sync-delay",
            "0",
            "--enable-debug-command",
            "yes",
            "--threads",
            threads,
        ]);
        let r = replica_of(&find_redis_server(), z.port(), &[]);
        let mut zc = z.conn();
        let mut rc = r.conn();
        for (round, how) in ["script", "pipeline", "script", "pipeline"]
            .iter()
            .enumerate()
        {
            let key = format!("k{round}");
            let poller = {
                let key = key.clone();
                let mut rc = r.conn();
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(20);
                    while rc.cmd(&[b"GET", key.as_bytes()]) == b"$-1\r\n" {
                        assert!(
                            Instant::now() < deadline,
                            "the write never reached the replica"
                        );
                    }
                    Instant::now()
                })
            };
            let sent = Instant::now();
            let k = key.as_bytes();
            if *how == "script" {
                zc.send(&encode_cmd(&[
                    b"EVAL",
                    b"redis.call('set', KEYS[1], 'v'); for i = 1, 200000000 do end; return 1",
                    b"1",
                    k,
                ]));
            } else {
                let mut batch = encode_cmd(&[b"SET", k, b"v"]);
                for _ in 0..30 {
                    batch.extend(encode_cmd(&[b"DEBUG", b"SLEEP", b"0.01"]));
                }
                zc.send(&batch);
            }
            let first = zc.read_reply();
            let replied = Instant::now();
            if *how == "pipeline" {
                assert_eq!(first, b"+OK\r\n");
                for _ in 0..30 {
                    assert_eq!(zc.read_reply(), b"+OK\r\n");
                }
            } else {
                assert_eq!(first, b":1\r\n");
            }
            let seen = poller.join().unwrap();
            let ran = replied - sent;
            assert!(
                ran > Duration::from_millis(200),
                "{how}: ran {ran:?}, too short to tell"
            );
            // A little slack for this process's threads being scheduled
            // late; out of order, the replica has it for most of the run.
            assert!(
                seen + Duration::from_millis(100) >= replied,
                "threads {threads}, {how} {round}: the replica had the write {:?} before its \
                 reply arrived (the batch ran {ran:?})",
                replied - seen
            );
        }
        settle(&mut zc, &mut [&mut rc]);
    }
}

/// Two replicas that ask for a full resync while one snapshot to the file
/// is made share it, as with Redis (its "Waiting for end of BGSAVE for
/// SYNC"): the second joins the running one rather than waiting for a
/// snapshot of its own, and the first leaving does not stop it. Run on a
/// redis-server primary and on zwindow, with the same replicas.
#[test]
fn a_second_replica_joins_the_running_snapshot_as_redis() {
    let args = [
        "--enable-debug-command",
        "yes",
        "--repl-diskless-sync",
        "no",
        "--save",
        "",
        "--rdb-key-save-delay",
        "400000",
    ];
    let z = ZwindowServer::start(&args);
    let r = RedisServer::start_with(&args);
    let outcomes: Vec<_> = [z.port(), r.port()]
        .into_iter()
        .map(|port| {
            let mut pc = RawConn::connect(([127, 0, 0, 1], port).into(), "primary");
            for i in 0..10 {
                ok(&mut pc, &format!("SET k{i} {i}"));
            }
            let a = RedisServer::start_with(&[]);
            let b = RedisServer::start_with(&[]);
            let (mut ac, mut bc) = (a.conn(), b.conn());
            let p = port.to_string();
            ok(&mut ac, &format!("REPLICAOF 127.0.0.1 {p}"));
            eventually("the snapshot for the first replica", || {
                info_field(&mut pc, "persistence", "rdb_bgsave_in_progress") == "1"
            });
            ok(&mut bc, &format!("REPLICAOF 127.0.0.1 {p}"));
            eventually("both replicas waiting for it", || {
                ["slave0", "slave1"]
                    .iter()
                    .all(|s| info_field(&mut pc, "replication", s).contains("state=wait_bgsave"))
            });
            // The first goes: the snapshot (10 keys, 0.4 s each) still
            // serves the second. Stopped, a new one would start for the
            // second: a second fork (Redis's and zwindow's BGSAVE to a
            // file fork a child that writes it).
            std::thread::sleep(Duration::from_millis(200));
            ok(&mut ac, "REPLICAOF NO ONE");
            std::thread::sleep(Duration::from_millis(300));
            let kept = info_field(&mut pc, "persistence", "rdb_bgsave_in_progress");
            ok(&mut pc, "CONFIG SET rdb-key-save-delay 0");
            eventually("the second replica's link", || {
                info_field(&mut bc, "replication", "master_link_status") == "up"
            });
            let got = bc.cmd(&[b"GET", b"k9"]);
            (
                kept,
                info_field(&mut pc, "stats", "total_forks"),
                info_field(&mut pc, "stats", "sync_full"),
                got,
            )
        })
        .collect();
    assert_eq!(
        outcomes[0],
        (
            "1".to_string(),
            "1".to_string(),
            "2".to_string(),
            b"$1\r\n9\r\n".to_vec()
        )
    );
    assert_eq!(outcomes[0], outcomes[1], "zwindow, then redis-server");
}
