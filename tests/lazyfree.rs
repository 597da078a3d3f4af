//! Lazy freeing and script eviction, against redis-server 8.0.2: INFO's
//! `lazyfree_pending_objects` and `lazyfreed_objects` after UNLINK, the
//! `lazyfree-lazy-*` deletions, FLUSHALL/FLUSHDB (ASYNC, and SYNC run as a
//! blocking ASYNC one), FUNCTION FLUSH ASYNC and SCRIPT FLUSH ASYNC; and
//! the eviction of EVAL-loaded scripts past 500 (`evicted_scripts`).
mod common;

use common::repl::{eventually, info_field};
use common::*;

fn redis8_pair() -> (Servers, Pair) {
    let s = Servers::start_redis8(&[]);
    let p = s.pair();
    (s, p)
}

fn field(c: &mut RawConn, section: &str, name: &str) -> i64 {
    let v = info_field(c, section, name);
    v.parse()
        .unwrap_or_else(|_| panic!("INFO {section} {name}: {v:?}"))
}

/// Both servers' `lazyfreed_objects`, once nothing is pending.
fn lazyfreed(p: &mut Pair) -> (i64, i64) {
    for c in [&mut p.r, &mut p.z] {
        eventually("lazyfree_pending_objects to reach 0", || {
            field(c, "memory", "lazyfree_pending_objects") == 0
        });
    }
    (
        field(&mut p.r, "memory", "lazyfreed_objects"),
        field(&mut p.z, "memory", "lazyfreed_objects"),
    )
}

fn assert_lazyfreed(p: &mut Pair, expected: i64, what: &str) {
    let (r, z) = lazyfreed(p);
    assert_eq!(r, expected, "redis-server's lazyfreed_objects after {what}");
    assert_eq!(z, r, "zwindow's lazyfreed_objects after {what}");
}

/// SADD `key` with `n` members.
fn big_set(p: &mut Pair, key: &str, n: usize) {
    let members: Vec<String> = (0..n).map(|i| format!("member:{i}")).collect();
    let mut args: Vec<&[u8]> = vec![b"SADD", key.as_bytes()];
    args.extend(members.iter().map(|m| m.as_bytes()));
    p.check(&args);
}

#[test]
fn unlink_and_lazy_deletions_count_as_redis() {
    let (_s, mut p) = redis8_pair();
    p.check_str("CONFIG RESETSTAT");
    // A value of more than 64 allocations goes to the thread, a small one not.
    big_set(&mut p, "big", 1000);
    big_set(&mut p, "small", 10);
    p.script(&[
        "RPUSH list a b c",
        "SET s v",
        "UNLINK big small list s nosuch",
    ]);
    assert_lazyfreed(&mut p, 1, "UNLINK of one big and three small values");
    // A hash table of exactly 64 is freed in place; 65 goes.
    p.check_str("CONFIG SET set-max-listpack-entries 0");
    big_set(&mut p, "at", 64);
    big_set(&mut p, "over", 65);
    p.script(&["OBJECT ENCODING at", "UNLINK at over"]);
    assert_lazyfreed(&mut p, 2, "UNLINK of 64 and 65 members");
    // DEL frees in place, unless lazyfree-lazy-user-del.
    big_set(&mut p, "big", 1000);
    p.check_str("DEL big");
    assert_lazyfreed(&mut p, 2, "DEL");
    p.check_str("CONFIG SET lazyfree-lazy-user-del yes");
    big_set(&mut p, "big", 1000);
    p.check_str("DEL big");
    assert_lazyfreed(&mut p, 3, "DEL under lazyfree-lazy-user-del");
    // An overwritten value is a server deletion.
    p.check_str("CONFIG SET lazyfree-lazy-server-del yes");
    big_set(&mut p, "big", 1000);
    p.check_str("SET big v");
    assert_lazyfreed(
        &mut p,
        4,
        "SET over a big set under lazyfree-lazy-server-del",
    );
    // CONFIG RESETSTAT zeroes the count.
    p.check_str("CONFIG RESETSTAT");
    assert_lazyfreed(&mut p, 0, "CONFIG RESETSTAT");
}

#[test]
fn flushes_count_their_keys_as_redis() {
    let (_s, mut p) = redis8_pair();
    let fill = |p: &mut Pair| {
        for db in ["0", "1"] {
            p.check_str(&format!("SELECT {db}"));
            for i in 0..50 {
                p.check_str(&format!("SET k{i} v"));
            }
        }
        p.check_str("SELECT 0");
    };
    p.check_str("CONFIG RESETSTAT");
    fill(&mut p);
    p.check_str("FLUSHALL ASYNC");
    assert_lazyfreed(&mut p, 100, "FLUSHALL ASYNC of 100 keys");
    // A SYNC flush runs as a blocking ASYNC one: counted by its reply.
    fill(&mut p);
    p.check_str("FLUSHDB");
    assert_eq!(field(&mut p.z, "memory", "lazyfreed_objects"), 150);
    assert_lazyfreed(&mut p, 150, "FLUSHDB");
    p.check_str("FLUSHALL SYNC");
    assert_eq!(field(&mut p.z, "memory", "lazyfreed_objects"), 200);
    assert_lazyfreed(&mut p, 200, "FLUSHALL SYNC");
    // Inside MULTI it frees in place.
    fill(&mut p);
    p.script(&["MULTI", "FLUSHALL", "EXEC"]);
    assert_lazyfreed(&mut p, 200, "FLUSHALL in MULTI");
    p.check_str("DBSIZE");
}

fn library(name: &str) -> String {
    format!("#!lua name={name}\nredis.register_function('{name}', function() return 1 end)")
}

#[test]
fn function_flush_async_frees_lazily_as_redis() {
    let (_s, mut p) = redis8_pair();
    p.check_str("CONFIG RESETSTAT");
    for i in 0..10 {
        p.check(&[b"FUNCTION", b"LOAD", library(&format!("few{i}")).as_bytes()]);
    }
    p.check_str("FUNCTION FLUSH ASYNC");
    assert_lazyfreed(&mut p, 0, "FUNCTION FLUSH ASYNC of 10 functions");
    for i in 0..300 {
        p.check(&[b"FUNCTION", b"LOAD", library(&format!("lib{i}")).as_bytes()]);
    }
    for c in [&mut p.r, &mut p.z] {
        let vm = field(c, "memory", "used_memory_vm_functions");
        assert!(
            vm > 100_000,
            "used_memory_vm_functions {vm} after 300 libraries"
        );
    }
    p.check_str("FUNCTION FLUSH ASYNC");
    // The functions and the one engine.
    assert_lazyfreed(&mut p, 301, "FUNCTION FLUSH ASYNC of 300 functions");
    for c in [&mut p.r, &mut p.z] {
        let vm = field(c, "memory", "used_memory_vm_functions");
        assert!(vm < 40_000, "used_memory_vm_functions {vm} after the flush");
    }
    p.script(&["FUNCTION LIST", "FUNCTION STATS"]);
    p.check(&[b"FUNCTION", b"LOAD", library("again").as_bytes()]);
    p.check_str("FCALL again 0");
}

#[test]
fn script_flush_async_frees_lazily_as_redis() {
    let (_s, mut p) = redis8_pair();
    p.check_str("CONFIG RESETSTAT");
    for i in 0..100 {
        p.check(&[b"SCRIPT", b"LOAD", format!("return {i}").as_bytes()]);
    }
    p.check_str("SCRIPT FLUSH ASYNC");
    assert_lazyfreed(&mut p, 100, "SCRIPT FLUSH ASYNC of 100 scripts");
    for i in 0..10 {
        p.check(&[b"SCRIPT", b"LOAD", format!("return {i}").as_bytes()]);
    }
    p.check_str("SCRIPT FLUSH ASYNC");
    assert_lazyfreed(&mut p, 100, "SCRIPT FLUSH ASYNC of 10 scripts");
}

#[test]
fn eval_scripts_past_500_are_evicted_as_redis() {
    let (_s, mut p) = redis8_pair();
    p.check_str("CONFIG RESETSTAT");
    let loaded: Vec<Vec<u8>> = (0..10)
        .map(|i| {
            p.check(&[
                b"SCRIPT",
                b"LOAD",
                format!("return 'loaded {i}'").as_bytes(),
            ])
        })
        .collect();
    let sha = |i: usize| {
        let body = format!("return {i}");
        let r = p_sha(&body);
        (body, r)
    };
    for i in 0..600 {
        p.check(&[b"EVAL", sha(i).0.as_bytes(), b"0"]);
        if i == 50 {
            // Used again: the most recent, so it outlives its neighbours.
            p.check(&[b"EVALSHA", sha(0).1.as_bytes(), b"0"]);
        }
    }
    for c in [&mut p.r, &mut p.z] {
        assert_eq!(field(c, "stats", "evicted_scripts"), 100);
        assert_eq!(field(c, "memory", "number_of_cached_scripts"), 510);
    }
    // The oldest EVAL scripts are gone ("return 0" was used late).
    for i in [0, 1, 99, 100, 101, 599] {
        p.check(&[b"SCRIPT", b"EXISTS", sha(i).1.as_bytes()]);
        p.check(&[b"EVALSHA", sha(i).1.as_bytes(), b"0"]);
    }
    // What SCRIPT LOAD brought stays.
    for reply in &loaded {
        let text = String::from_utf8_lossy(reply);
        let hex = text.lines().nth(1).unwrap_or("").trim().to_string();
        let exists = p.check(&[b"SCRIPT", b"EXISTS", hex.as_bytes()]);
        assert_eq!(exists, b"*1\r\n:1\r\n");
    }
    p.check_str("CONFIG RESETSTAT");
    for c in [&mut p.r, &mut p.z] {
        assert_eq!(field(c, "stats", "evicted_scripts"), 0);
    }
}

/// A script's SHA1, as Redis names it.
fn p_sha(body: &str) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// A replica's old data, flushed for a full sync, is freed lazily under
/// `replica-lazy-flush` (counting its keys), in place without it.
#[test]
fn replica_lazy_flush_counts_the_old_keys_as_redis() {
    fn old_keys_lazyfreed(primary: u16, mut replica: RawConn, lazy: &str) -> i64 {
        replica.cmd_str(&format!("CONFIG SET replica-lazy-flush {lazy}"));
        replica.cmd_str("CONFIG RESETSTAT");
        for i in 0..40 {
            replica.cmd_str(&format!("SET old{i} v"));
        }
        let port = primary.to_string();
        replica.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()]);
        eventually("the full sync", || {
            info_field(&mut replica, "replication", "master_link_status") == "up"
        });
        eventually("lazyfree_pending_objects to reach 0", || {
            field(&mut replica, "memory", "lazyfree_pending_objects") == 0
        });
        let n = field(&mut replica, "memory", "lazyfreed_objects");
        replica.cmd_str("REPLICAOF NO ONE");
        n
    }
    let primaries = Servers::start_redis8(&[]);
    let replicas = Servers::start_redis8(&[]);
    primaries.pair().script(&["SET fresh 1"]);
    for lazy in ["yes", "no"] {
        let r = old_keys_lazyfreed(primaries.r.port(), replicas.r.conn(), lazy);
        let z = old_keys_lazyfreed(primaries.z.port(), replicas.z.conn(), lazy);
        assert_eq!(r, if lazy == "yes" { 40 } else { 0 });
        assert_eq!(z, r, "replica-lazy-flush {lazy}");
    }
}
