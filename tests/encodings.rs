//! Differential tests (zwindow vs redis-server 8.0.2) of Redis 7.2+'s list
//! and set encodings: OBJECT ENCODING after each kind of change,
//! conversions at the exact limits, the configs, and the order listpack
//! sets reply in (insertion order).
mod common;

use common::*;

/// `n` space-separated elements `prefix0 prefix1 …`.
fn elems(prefix: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{prefix}{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn list_count_limit_grow_and_shrink() {
    let (_s, mut p) = start_pair();
    let five = elems("e", 5);
    let script = [
        "CONFIG SET list-max-listpack-size 4".to_string(),
        "RPUSH l a b c d".into(),
        "OBJECT ENCODING l".into(),
        "RPUSH l e".into(),
        "OBJECT ENCODING l".into(),
        "RPOP l".into(),
        "OBJECT ENCODING l".into(),
        "RPOP l 2".into(),
        "OBJECT ENCODING l".into(),
        // LINSERT and LSET grow the listpack check.
        "DEL l".into(),
        format!("RPUSH l {}", elems("x", 4)),
        "LINSERT l BEFORE nopivot y".into(),
        "OBJECT ENCODING l".into(),
        "DEL l".into(),
        format!("RPUSH l {}", elems("x", 4)),
        "LINSERT l BEFORE x0 y".into(),
        "OBJECT ENCODING l".into(),
        "LREM l 0 y".into(),
        "OBJECT ENCODING l".into(),
        "LTRIM l 0 1".into(),
        "OBJECT ENCODING l".into(),
        "LSET l 0 z".into(),
        "OBJECT ENCODING l".into(),
        format!("RPUSH m {five}"),
        "OBJECT ENCODING m".into(),
        "LMOVE m d RIGHT LEFT".into(),
        "OBJECT ENCODING m".into(),
        "OBJECT ENCODING d".into(),
        "LPOP m 2".into(),
        "OBJECT ENCODING m".into(),
        // 0 counts as 1.
        "CONFIG SET list-max-listpack-size 0".into(),
        "DEL l".into(),
        "RPUSH l a".into(),
        "OBJECT ENCODING l".into(),
        "RPUSH l b".into(),
        "OBJECT ENCODING l".into(),
        "CONFIG SET list-max-listpack-size -2".into(),
    ];
    let lines: Vec<&str> = script.iter().map(String::as_str).collect();
    p.script(&lines);
}

#[test]
fn list_size_limit_and_big_elements() {
    let (_s, mut p) = start_pair();
    let big = "v".repeat(4000);
    let small = "w".repeat(100);
    let script = [
        "CONFIG SET list-max-listpack-size -1".to_string(),
        format!("RPUSH l {big}"),
        "OBJECT ENCODING l".into(),
        format!("RPUSH l {small}"),
        "OBJECT ENCODING l".into(),
        "LPOP l".into(),
        "OBJECT ENCODING l".into(),
        // LSET checks the new value's length before replacing.
        format!("LSET l 0 {big}"),
        "OBJECT ENCODING l".into(),
        format!("LSET l 0 {small}"),
        "OBJECT ENCODING l".into(),
        // A 9000-byte element under a count limit: over the 8 kB safety limit.
        "CONFIG SET list-max-listpack-size 128".into(),
        format!("RPUSH k {}", "z".repeat(9000)),
        "OBJECT ENCODING k".into(),
        // Integers popped and pushed count no bytes.
        "CONFIG SET list-max-listpack-size -1".into(),
        format!("RPUSH n {} 12345", "q".repeat(4070)),
        "OBJECT ENCODING n".into(),
        "RPOPLPUSH n n".into(),
        "OBJECT ENCODING n".into(),
        "CONFIG SET list-max-listpack-size -2".into(),
    ];
    let lines: Vec<&str> = script.iter().map(String::as_str).collect();
    p.script(&lines);
}

#[test]
fn list_encoding_after_restore_reload_and_sort_store() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "RPUSH l c b a",
        "OBJECT ENCODING l",
        "SORT l ALPHA STORE s",
        "OBJECT ENCODING s",
        "CONFIG SET list-max-listpack-size 2",
        "SORT l ALPHA STORE s2",
        "OBJECT ENCODING s2",
        "CONFIG SET list-max-listpack-size -2",
        "DEBUG RELOAD",
        "OBJECT ENCODING l",
        "OBJECT ENCODING s2",
        "LRANGE s2 0 -1",
    ]);
    // A DUMP of a listpack list restores as a listpack on both servers.
    // The payloads match up to the footer (RDB version and CRC: zwindow's
    // DUMP says version 10).
    let (r, z) = p.both_str("DUMP l");
    assert_eq!(r.len(), z.len());
    assert_eq!(
        r[..r.len() - 12],
        z[..z.len() - 12],
        "one quicklist node, as Redis 7.2+ writes it"
    );
}

#[test]
fn set_listpack_encoding_and_order() {
    let (_s, mut p) = start_pair();
    let script = [
        "SADD s c a b".to_string(),
        "OBJECT ENCODING s".into(),
        "SMEMBERS s".into(),
        "SSCAN s 0".into(),
        "SREM s a".into(),
        "SADD s z a".into(),
        "SMEMBERS s".into(),
        "SADD i 3 1 2".into(),
        "OBJECT ENCODING i".into(),
        "SADD i x".into(),
        "OBJECT ENCODING i".into(),
        "SMEMBERS i".into(),
        "SRANDMEMBER i 10".into(),
        "SMOVE i j x".into(),
        "OBJECT ENCODING j".into(),
        "SMOVE i j 1".into(),
        "OBJECT ENCODING j".into(),
        "SMEMBERS j".into(),
        // Limits: entries and value length.
        "CONFIG SET set-max-listpack-entries 3".into(),
        "CONFIG GET set-max-listpack-entries".into(),
        "CONFIG GET set-max-listpack-value".into(),
        "SADD e a b c".into(),
        "OBJECT ENCODING e".into(),
        "SADD e d".into(),
        "OBJECT ENCODING e".into(),
        "SADD f a b c d".into(),
        "OBJECT ENCODING f".into(),
        "CONFIG SET set-max-listpack-entries 128".into(),
        "CONFIG SET set-max-listpack-value 4".into(),
        "SADD g abcd".into(),
        "OBJECT ENCODING g".into(),
        "SADD g abcde".into(),
        "OBJECT ENCODING g".into(),
        "SADD h 12345 1".into(),
        "SADD h a".into(),
        "OBJECT ENCODING h".into(),
        "CONFIG SET set-max-listpack-value 64".into(),
        "SADD k 1 2 3".into(),
        "CONFIG SET set-max-intset-entries 2".into(),
        "SADD k 4".into(),
        "OBJECT ENCODING k".into(),
        "SADD m 1 2 3".into(),
        "OBJECT ENCODING m".into(),
        "CONFIG SET set-max-intset-entries 512".into(),
    ];
    let lines: Vec<&str> = script.iter().map(String::as_str).collect();
    p.script(&lines);
}

#[test]
fn set_algebra_result_encodings() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SADD a x 1 y 2 z",
        "SADD b 2 y 1 w",
        "SADD n 1 2 3",
        "SINTERSTORE d a b",
        "OBJECT ENCODING d",
        "SMEMBERS d",
        "SADD c 2 1 q",
        "SINTERSTORE d c n",
        "OBJECT ENCODING d",
        "SMEMBERS d",
        "SINTER a b",
        "SUNIONSTORE u a b",
        "OBJECT ENCODING u",
        "SMEMBERS u",
        "SUNIONSTORE u n n",
        "OBJECT ENCODING u",
        "SDIFFSTORE u a b",
        "OBJECT ENCODING u",
        "SMEMBERS u",
        "SDIFF n a",
        "DEBUG RELOAD",
        "OBJECT ENCODING a",
        "SMEMBERS a",
    ]);
}

#[test]
fn spop_most_of_a_table_leaves_a_listpack() {
    let (_s, mut p) = start_pair();
    let members = elems("member", 200);
    let script = [
        format!("SADD t {members}"),
        "OBJECT ENCODING t".to_string(),
        // 10 of 200: popped one by one, still a table.
        "SPOP t 10".into(),
        "OBJECT ENCODING t".into(),
        "SCARD t".into(),
        // 180 of 190: the 10 that stay move into a new listpack.
        "SPOP t 180".into(),
        "OBJECT ENCODING t".into(),
        "SCARD t".into(),
    ];
    for line in &script {
        if line.starts_with("SPOP") {
            // Which members go is random: compare the count only.
            let (r, z) = p.both_str(line);
            assert_eq!(
                r.split(|&b| b == b'\n').next(),
                z.split(|&b| b == b'\n').next()
            );
        } else {
            p.check_str(line);
        }
    }
}

/// The payload of a DUMP reply.
fn payload(dump: &[u8]) -> &[u8] {
    &dump[dump.iter().position(|&b| b == b'\n').unwrap() + 1..dump.len() - 2]
}

#[test]
fn set_listpack_in_rdb_10_and_12() {
    // rdb-version 10 (the default): a plain set, which Redis 7.0 loads;
    // Redis 8.0's type 20 payload restores as a listpack in its order.
    let (_s, mut p) = start_pair();
    p.script(&[
        "SADD s c a b 1",
        "DEBUG RELOAD",
        "OBJECT ENCODING s",
        "SMEMBERS s",
    ]);
    let z = p.z.cmd_str("DUMP s");
    assert_eq!(payload(&z)[0], 2, "RDB_TYPE_SET under version 10");
    let r = p.r.cmd_str("DUMP s");
    assert_eq!(payload(&r)[0], 20, "RDB_TYPE_SET_LISTPACK");
    for srv in [&mut p.r, &mut p.z] {
        srv.cmd(&[b"RESTORE", b"s2", b"0", payload(&r)]);
    }
    p.script(&["OBJECT ENCODING s2", "SMEMBERS s2"]);
    // zwindow's own payload restores the same on both.
    for srv in [&mut p.r, &mut p.z] {
        srv.cmd(&[b"RESTORE", b"s3", b"0", payload(&z)]);
    }
    p.script(&["OBJECT ENCODING s3", "SMEMBERS s3"]);

    // rdb-version 12: type 20, byte for byte as Redis 8.0 writes it.
    let s = Servers {
        z: ZwindowServer::start(&["--rdb-version", "12"]),
        r: RedisServer::start_binary(&redis8_server(), &[]),
    };
    let mut p = s.pair();
    p.script(&[
        "SADD s c a b 1",
        "DEBUG RELOAD",
        "OBJECT ENCODING s",
        "SMEMBERS s",
    ]);
    p.check_str("DUMP s");
}

#[test]
fn quicklist_nodes_decide_the_way_back() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "CONFIG SET list-max-listpack-size 4",
        // Two nodes of four; popping both ends leaves two nodes of one:
        // not one node, so still a quicklist.
        "RPUSH l a b c d e f g h",
        "OBJECT ENCODING l",
        "LPOP l 3",
        "RPOP l 3",
        "OBJECT ENCODING l",
        "LLEN l",
        // One end emptied: one node left.
        "LPOP l",
        "OBJECT ENCODING l",
        // LREM drops emptied nodes.
        "DEL l",
        "RPUSH l a b c d x y z w",
        "LREM l 0 x",
        "LREM l 0 y",
        "LREM l 0 z",
        "LREM l 0 w",
        "LREM l 0 d",
        "LREM l 0 c",
        "OBJECT ENCODING l",
        // LTRIM is pops at both ends.
        "DEL l",
        "RPUSH l a b c d e f g h i j",
        "LTRIM l 3 4",
        "OBJECT ENCODING l",
        "LTRIM l 0 0",
        "OBJECT ENCODING l",
        // Pushes at the head cut nodes from the head.
        "DEL l",
        "LPUSH l a b c d e f g h i",
        "RPOP l 6",
        "OBJECT ENCODING l",
        "RPOP l",
        "OBJECT ENCODING l",
        "CONFIG SET list-max-listpack-size -2",
    ]);
}
