//! RDB version 12, as Redis 8.0 writes it, both ways.
//!
//! - A file redis-server 8.0.2 saves with every type in every encoding it
//!   writes (strings int/embstr/raw, LZF-compressed big values, lists as
//!   listpack and quicklist with a plain node, sets as intset, listpack and
//!   hashtable, sorted sets as listpack and skiplist, hashes as listpack,
//!   hashtable and both with field TTLs, streams with groups, PELs,
//!   consumers and deleted entries, key TTLs, several databases, a function
//!   library) loads into zwindow with the same `DEBUG DIGEST`, the same
//!   `DEBUG DIGEST-VALUE` per key, and the same full read-back of every
//!   key (the digest leaves out stream groups and TTL values).
//! - `rdb-version 12`: zwindow's file loads into redis-server 8.0.2 with
//!   the same digest; under the default 10 it loads into redis-server 7.0.15
//!   and passes its `redis-check-rdb`, unless a hash has field TTLs, which
//!   RDB 10 cannot carry: then the file is version 12 and 7.0 refuses it
//!   (never loads it with the TTLs silently gone).

mod common;

use std::process::Command;

use common::repl::{eventually, info_field, settle};

use common::dataset::{cmd, ok};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer, escape, parse_reply, redis8_server};

/// Fills `c` (a Redis 8.0 or zwindow) with every type in every encoding.
/// Hash field TTLs are far in the future: none is due while the test runs.
fn fill(c: &mut RawConn, field_ttls: bool) {
    // Strings: int, embstr, raw, a big compressible one (LZF), a big
    // incompressible one, binary.
    cmd(c, &[b"SET", b"s:bin\x00\xff", b"\x00\x01\x02"]);
    cmd(c, &[b"SET", b"s:big", &vec![b'x'; 1 << 20]]);
    let noise: Vec<u8> = (0..50_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    cmd(c, &[b"SET", b"s:noise", &noise]);
    let raw = "r".repeat(60);
    cmd(c, &[b"SET", b"s:raw", raw.as_bytes()]);
    for line in [
        "SET s:int 12345",
        "SET s:neg -9223372036854775808",
        "SET s:embstr hello",
        "SET s:ttl v PX 100000000",
        "RPUSH l:small a b 1 2 -300 70000 4294967296",
        "SADD set:int 1 2 3 -5 100000 9223372036854775807",
        "SADD set:lp a b c 1",
        "ZADD z:lp 1 a 2.5 b -inf c inf d 0 e -0.25 f 123456789.125 g",
        "HSET h:lp f v n 1",
        "PFADD hll:sparse a b c d",
        "XADD st 1-1 a 1 b 2",
        "XADD st 1-2 a 3 b 4",
        "XADD st 2-1 c x",
        "XADD st 3-0 a 5 b 6",
        "XADD st 4-0 a 7 b 8",
        "XGROUP CREATE st g1 0 ENTRIESREAD 0",
        "XGROUP CREATE st g2 $",
        "XGROUP CREATECONSUMER st g2 idle",
        "XREADGROUP GROUP g1 alice COUNT 2 STREAMS st >",
        "XREADGROUP GROUP g1 bob COUNT 2 STREAMS st >",
        "XCLAIM st g1 carol 0 3-0",
        "XACK st g1 1-1",
        "XDEL st 1-2 4-0",
        "XADD st:empty MAXLEN 0 * a b",
        "XADD st:set 5-5 f v",
        "XSETID st:set 9-9 ENTRIESADDED 42 MAXDELETEDID 7-7",
        "FUNCTION LOAD \"#!lua name=lib\nredis.register_function('f', function() return 7 end)\"",
        "SELECT 3",
        "SET db3 x EX 100000",
        "ZADD z3 3 m",
        "HSET h3 a b",
        "SELECT 9",
        "RPUSH l9 x y z",
        "SET s9 v PX 90000000",
        "SELECT 0",
    ] {
        ok(c, line);
    }
    // A big list (quicklist of several listpack nodes, compressible) and a
    // list with an element too big for a node (a plain node).
    for i in 0..2000 {
        let v = format!("element-{i}-{}", "p".repeat(i % 50));
        cmd(c, &[b"RPUSH", b"l:quick", v.as_bytes()]);
    }
    cmd(c, &[b"RPUSH", b"l:plain", b"a", &vec![b'q'; 20_000], b"b"]);
    for i in 0..300 {
        let (m, f, v) = (format!("m{i}"), format!("f{i}"), format!("{i}.25"));
        cmd(c, &[b"ZADD", b"z:skip", v.as_bytes(), m.as_bytes()]);
        cmd(c, &[b"HSET", b"h:table", f.as_bytes(), v.as_bytes()]);
        cmd(c, &[b"SADD", b"set:table", m.as_bytes()]);
        cmd(c, &[b"XADD", b"st:big", b"*", f.as_bytes(), v.as_bytes()]);
    }
    for i in 0..600 {
        cmd(c, &[b"SADD", b"set:bigint", i.to_string().as_bytes()]);
        cmd(c, &[b"PFADD", b"hll:dense", format!("e{i}").as_bytes()]);
    }
    // Big compressible values inside a listpack and a hashtable.
    cmd(c, &[b"HSET", b"h:lzf", b"f", &[b'z'; 40]]);
    cmd(c, &[b"HSET", b"h:table", b"big", &vec![b'y'; 10_000]]);
    if field_ttls {
        for line in [
            "HSET h:lpex f v g w k 3",
            "HEXPIRE h:lpex 100000 FIELDS 2 f k",
            "HSET h:persisted a 1 b 2",
            "HEXPIRE h:persisted 100000 FIELDS 1 a",
            "HPERSIST h:persisted FIELDS 1 a",
        ] {
            ok(c, line);
        }
        // 600 fields: past Redis 8.0's hash-max-listpack-entries (512).
        for i in 0..600 {
            let f = format!("f{i}");
            cmd(c, &[b"HSET", b"h:meta", f.as_bytes(), b"v"]);
        }
        // Field TTLs on a hash already a hashtable.
        for i in 0..600 {
            let f = format!("f{i}");
            if i % 3 == 0 {
                let at = (60_000_000_000_000u64 + i).to_string();
                let r = cmd(
                    c,
                    &[
                        b"HPEXPIREAT",
                        b"h:meta",
                        at.as_bytes(),
                        b"FIELDS",
                        b"1",
                        f.as_bytes(),
                    ],
                );
                assert_eq!(r, b"*1\r\n:1\r\n");
            }
        }
        ok(c, "SELECT 3");
        ok(c, "HSET h3ttl a 1 b 2");
        ok(c, "HPEXPIREAT h3ttl 60000000000000 FIELDS 1 b");
        ok(c, "EXPIRE h3ttl 100000");
        ok(c, "SELECT 0");
    }
}

/// Every key of every database, sorted, with the databases that hold one.
fn keys(c: &mut RawConn) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for db in 0..16u32 {
        ok(c, &format!("SELECT {db}"));
        let ks = parse_reply(&cmd(c, &[b"KEYS", b"*"]));
        let mut ks: Vec<Vec<u8>> = ks.array().iter().map(|k| k.bulk().to_vec()).collect();
        ks.sort();
        out.extend(ks.into_iter().map(|k| (db, k)));
    }
    ok(c, "SELECT 0");
    out
}

/// What a client can read of one key: type, value, absolute TTLs (key and
/// hash fields), stream groups and consumers, its DEBUG DIGEST-VALUE.
fn read_back(c: &mut RawConn, db: u32, k: &[u8]) -> Vec<Vec<u8>> {
    ok(c, &format!("SELECT {db}"));
    let ty = cmd(c, &[b"TYPE", k]);
    let mut out = vec![ty.clone(), cmd(c, &[b"PEXPIRETIME", k])];
    let value: Vec<&[u8]> = match &ty[..] {
        b"+string\r\n" => vec![b"GET", k],
        b"+list\r\n" => vec![b"LRANGE", k, b"0", b"-1"],
        b"+set\r\n" => vec![b"SMEMBERS", k],
        b"+hash\r\n" => vec![b"HGETALL", k],
        b"+zset\r\n" => vec![b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"],
        _ => vec![b"XINFO", b"STREAM", k, b"FULL"],
    };
    let mut r = cmd(c, &value);
    assert!(!r.starts_with(b"-"), "{}: {}", escape(k), escape(&r));
    if ty == b"+set\r\n" {
        let mut m: Vec<Vec<u8>> = parse_reply(&r)
            .array()
            .iter()
            .map(|x| x.bulk().to_vec())
            .collect();
        m.sort();
        r = m.join(&b"\n"[..]);
    }
    if ty == b"+hash\r\n" {
        // Each field with its value and absolute deadline; in HGETALL's
        // order while the hash is small enough to be a listpack on both
        // sides (Redis 8.0's limit is 512 fields, zwindow's 7.0's 128),
        // sorted otherwise (a table's order is its own).
        let fields = parse_reply(&r);
        let pairs: Vec<(&[u8], &[u8])> = fields
            .array()
            .chunks(2)
            .map(|p| (p[0].bulk(), p[1].bulk()))
            .collect();
        let n = pairs.len().to_string();
        let mut q: Vec<&[u8]> = vec![b"HPEXPIRETIME", k, b"FIELDS", n.as_bytes()];
        q.extend(pairs.iter().map(|p| p.0));
        let times = parse_reply(&cmd(c, &q));
        let mut triples: Vec<Vec<u8>> = pairs
            .iter()
            .zip(times.array())
            .map(|((f, v), t)| {
                [f, &b"="[..], v, &b"@"[..], t.int().to_string().as_bytes()].concat()
            })
            .collect();
        if pairs.len() > 100 {
            triples.sort();
        }
        out.push(triples.join(&b"\n"[..]));
    } else {
        out.push(r);
    }
    out.push(cmd(c, &[b"DEBUG", b"DIGEST-VALUE", k]));
    ok(c, "SELECT 0");
    out
}

/// A reply for a failure message: escaped, at most 3000 characters.
fn short(b: &[u8]) -> String {
    escape(b).chars().take(3000).collect()
}

fn digest(c: &mut RawConn) -> Vec<u8> {
    cmd(c, &[b"DEBUG", b"DIGEST"])
}

/// Asserts two servers hold the same keys, read back the same, and digest
/// the same.
fn assert_same_dataset(z: &mut RawConn, r: &mut RawConn) {
    let ks = keys(r);
    assert!(ks.len() > 30, "{} keys", ks.len());
    assert_eq!(keys(z), ks, "the keys differ");
    for (db, k) in &ks {
        let (zv, rv) = (read_back(z, *db, k), read_back(r, *db, k));
        for (i, (a, b)) in zv.iter().zip(&rv).enumerate() {
            assert!(
                a == b,
                "db {db} key {} part {i}:\n zwindow {}\n redis   {}",
                escape(k),
                short(a),
                short(b)
            );
        }
        assert_eq!(zv.len(), rv.len());
    }
    assert_eq!(digest(z), digest(r), "DEBUG DIGEST");
    assert_eq!(cmd(z, &[b"FCALL", b"f", b"0"]), b":7\r\n");
    assert_eq!(
        cmd(z, &[b"FUNCTION", b"LIST", b"WITHCODE"]),
        cmd(r, &[b"FUNCTION", b"LIST", b"WITHCODE"])
    );
}

/// The file's version, from its header (`REDIS0012`).
fn version_of(file: &std::path::Path) -> u32 {
    let b = std::fs::read(file).unwrap();
    assert_eq!(&b[..5], b"REDIS", "not an RDB file");
    std::str::from_utf8(&b[5..9]).unwrap().parse().unwrap()
}

fn check_rdb(path: &std::path::Path) -> (bool, String) {
    let out = Command::new("redis-check-rdb")
        .arg(path)
        .output()
        .expect("run redis-check-rdb (7.0)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && text.contains("RDB looks OK"), text)
}

/// The encodings Redis 8.0 gave the keys: each one the test means to cover
/// is there (a change of Redis's thresholds must not hollow the test out).
fn assert_encodings(r: &mut RawConn) {
    for (k, enc) in [
        ("s:int", "int"),
        ("s:embstr", "embstr"),
        ("s:raw", "raw"),
        ("l:small", "listpack"),
        ("l:quick", "quicklist"),
        ("l:plain", "quicklist"),
        ("set:int", "intset"),
        ("set:lp", "listpack"),
        ("set:table", "hashtable"),
        ("set:bigint", "hashtable"),
        ("z:lp", "listpack"),
        ("z:skip", "skiplist"),
        ("h:lp", "listpack"),
        ("h:table", "hashtable"),
        ("h:lpex", "listpackex"),
        ("h:meta", "hashtable"), // with field TTLs: Redis 7.4's metadata form
    ] {
        let got = cmd(r, &[b"OBJECT", b"ENCODING", k.as_bytes()]);
        assert_eq!(
            got,
            format!("${}\r\n{enc}\r\n", enc.len()).into_bytes(),
            "{k}"
        );
    }
}

/// zwindow with `args`, DEBUG allowed.
fn zwindow(args: &[&str]) -> ZwindowServer {
    ZwindowServer::start(&[args, &["--enable-debug-command", "yes"][..]].concat())
}

/// Redis 8.0 in `dir`, DEBUG allowed.
fn redis8(dir: &PrivateDir) -> RedisServer {
    RedisServer::start_binary(
        &redis8_server(),
        &[
            "--dir",
            dir.0.to_str().unwrap(),
            "--enable-debug-command",
            "yes",
        ],
    )
}

#[test]
fn redis8_files_load_with_the_same_digest() {
    let rd = PrivateDir::new("v12-r8");
    let r = redis8(&rd);
    let mut rc = r.conn();
    fill(&mut rc, true);
    assert_encodings(&mut rc);
    ok(&mut rc, "SAVE");
    let file = rd.0.join("dump.rdb");
    assert_eq!(version_of(&file), 12);
    let zd = PrivateDir::new("v12-z");
    std::fs::copy(&file, zd.0.join("dump.rdb")).unwrap();
    let z = zwindow(&["--dir", zd.0.to_str().unwrap()]);
    assert_same_dataset(&mut z.conn(), &mut rc);
}

/// zwindow with `rdb-version 12` writes a file Redis 8.0 loads with the
/// same digest; the same data in Redis 8.0's own file loads back.
#[test]
fn zwindow_writes_version_12_that_redis8_loads() {
    let z = zwindow(&["--rdb-version", "12"]);
    let mut zc = z.conn();
    fill(&mut zc, true);
    ok(&mut zc, "SAVE");
    let file = z.dir().join("dump.rdb");
    assert_eq!(version_of(&file), 12);
    let rd = PrivateDir::new("v12-into-r8");
    std::fs::copy(&file, rd.0.join("dump.rdb")).unwrap();
    let r = redis8(&rd);
    assert_same_dataset(&mut zc, &mut r.conn());

    // DUMP under 12 is Redis 8.0's payload for every type: it restores
    // there, and Redis 8.0's payloads restore here.
    let mut rc = r.conn();
    for (db, k) in keys(&mut zc) {
        if db != 0 {
            continue;
        }
        let payload = parse_reply(&cmd(&mut zc, &[b"DUMP", &k])).bulk().to_vec();
        assert_eq!(
            &payload[payload.len() - 10..payload.len() - 8],
            &12u16.to_le_bytes(),
            "{}",
            escape(&k)
        );
        let theirs = parse_reply(&cmd(&mut rc, &[b"DUMP", &k])).bulk().to_vec();
        let copy = [&k[..], b":copy"].concat();
        assert_eq!(
            cmd(&mut rc, &[b"RESTORE", &copy, b"0", &payload]),
            b"+OK\r\n"
        );
        assert_eq!(
            cmd(&mut zc, &[b"RESTORE", &copy, b"0", &theirs]),
            b"+OK\r\n"
        );
        assert_eq!(
            cmd(&mut zc, &[b"DEBUG", b"DIGEST-VALUE", &copy]),
            cmd(&mut rc, &[b"DEBUG", b"DIGEST-VALUE", &copy]),
            "{}",
            escape(&k)
        );
    }
    assert_eq!(digest(&mut zc), digest(&mut rc));

    // FUNCTION DUMP payloads (version 12 both) restore both ways.
    let ours = parse_reply(&cmd(&mut zc, &[b"FUNCTION", b"DUMP"]))
        .bulk()
        .to_vec();
    let theirs = parse_reply(&cmd(&mut rc, &[b"FUNCTION", b"DUMP"]))
        .bulk()
        .to_vec();
    assert_eq!(&ours[ours.len() - 10..ours.len() - 8], &12u16.to_le_bytes());
    for (c, p) in [(&mut zc, &theirs), (&mut rc, &ours)] {
        assert_eq!(
            cmd(c, &[b"FUNCTION", b"RESTORE", p, b"REPLACE"]),
            b"+OK\r\n"
        );
        assert_eq!(cmd(c, &[b"FCALL", b"f", b"0"]), b":7\r\n");
    }
}

/// A Redis 8.0 replica of a zwindow primary under `rdb-version 12` gets
/// the whole dataset, field TTLs and consumers' active times included,
/// through the full resync's version 12 snapshot (diskless and on disk).
#[test]
fn a_redis8_replica_full_syncs_from_version_12() {
    for diskless in ["yes", "no"] {
        let z = zwindow(&[
            "--rdb-version",
            "12",
            "--repl-diskless-sync",
            diskless,
            "--repl-diskless-sync-delay",
            "0",
        ]);
        let mut zc = z.conn();
        fill(&mut zc, true);
        let port = z.port().to_string();
        let rd = PrivateDir::new("v12-replica");
        let r = RedisServer::start_binary(
            &redis8_server(),
            &[
                "--dir",
                rd.0.to_str().unwrap(),
                "--enable-debug-command",
                "yes",
                "--replicaof",
                "127.0.0.1",
                &port,
            ],
        );
        let mut rc = r.conn();
        eventually("the replica's link", || {
            info_field(&mut rc, "replication", "master_link_status") == "up"
        });
        settle(&mut zc, &mut [&mut rc]);
        assert_same_dataset(&mut zc, &mut rc);
    }
}

/// The AOF's base file is version 12 under `rdb-version 12` (and so is
/// `DEBUG RELOAD`'s file): zwindow restarts from it with every key, field
/// deadline and consumer as it was.
#[test]
fn version_12_bases_and_reloads_keep_everything() {
    let dir = PrivateDir::new("v12-aof");
    let d = dir.0.to_str().unwrap();
    let args = ["--dir", d, "--appendonly", "yes", "--rdb-version", "12"];
    let z = zwindow(&args);
    let mut zc = z.conn();
    fill(&mut zc, true);
    let before: Vec<_> = keys(&mut zc)
        .into_iter()
        .map(|(db, k)| read_back(&mut zc, db, &k))
        .collect();
    let digest_before = digest(&mut zc);
    ok(&mut zc, "DEBUG RELOAD");
    assert_eq!(version_of(&dir.0.join("dump.rdb")), 12);
    assert_eq!(digest(&mut zc), digest_before, "after DEBUG RELOAD");
    ok(&mut zc, "BGREWRITEAOF");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while String::from_utf8_lossy(&cmd(&mut zc, &[b"INFO", b"persistence"]))
        .contains("aof_rewrite_in_progress:1")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "BGREWRITEAOF did not end"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let base = std::fs::read_dir(dir.0.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".base.rdb"))
        .expect("an RDB base file");
    assert_eq!(version_of(&base), 12);
    drop(zc);
    drop(z);
    std::fs::remove_file(dir.0.join("dump.rdb")).unwrap();
    let z = zwindow(&args);
    let mut zc = z.conn();
    let after: Vec<_> = keys(&mut zc)
        .into_iter()
        .map(|(db, k)| read_back(&mut zc, db, &k))
        .collect();
    assert!(before == after, "the dataset changed across the restart");
    assert_eq!(digest(&mut zc), digest_before);
}

/// Under the default 10, zwindow's file loads into redis-server 7.0.15 and
/// passes its redis-check-rdb; a hash with field TTLs makes the file
/// version 12, which 7.0 refuses rather than loading without the TTLs.
#[test]
fn version_10_by_default_and_12_for_field_ttls() {
    let z = zwindow(&[]);
    let mut zc = z.conn();
    assert_eq!(
        cmd(&mut zc, &[b"CONFIG", b"GET", b"rdb-version"]),
        b"*2\r\n$11\r\nrdb-version\r\n$2\r\n10\r\n"
    );
    fill(&mut zc, false);
    ok(&mut zc, "SAVE");
    let file = z.dir().join("dump.rdb");
    assert_eq!(version_of(&file), 10);
    let (good, text) = check_rdb(&file);
    assert!(good, "redis-check-rdb: {text}");
    let rd = PrivateDir::new("v10-into-r7");
    std::fs::copy(&file, rd.0.join("dump.rdb")).unwrap();
    let r = RedisServer::start_with(&[
        "--dir",
        rd.0.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ]);
    let mut rc = r.conn();
    assert_eq!(digest(&mut zc), digest(&mut rc), "DEBUG DIGEST");
    for (db, k) in keys(&mut rc) {
        ok(&mut rc, &format!("SELECT {db}"));
        ok(&mut zc, &format!("SELECT {db}"));
        assert_eq!(
            cmd(&mut zc, &[b"DEBUG", b"DIGEST-VALUE", &k]),
            cmd(&mut rc, &[b"DEBUG", b"DIGEST-VALUE", &k]),
            "{}",
            escape(&k)
        );
    }
    ok(&mut zc, "SELECT 0");
    // DUMP payloads are version 10 too.
    let payload = parse_reply(&cmd(&mut zc, &[b"DUMP", b"st"]))
        .bulk()
        .to_vec();
    assert_eq!(
        &payload[payload.len() - 10..payload.len() - 8],
        &10u16.to_le_bytes()
    );

    // One hash field TTL: the file is version 12; 7.0 refuses it, 8.0
    // loads it with the TTL.
    ok(&mut zc, "HSET fttl a 1 b 2");
    ok(&mut zc, "HEXPIRE fttl 100000 FIELDS 1 a");
    // Through BGSAVE's snapshot (SAVE's path is taken below).
    ok(&mut zc, "BGSAVE");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while String::from_utf8_lossy(&cmd(&mut zc, &[b"INFO", b"persistence"]))
        .contains("rdb_bgsave_in_progress:1")
    {
        assert!(std::time::Instant::now() < deadline, "BGSAVE did not end");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(version_of(&file), 12);
    let (good, text) = check_rdb(&file);
    assert!(
        !good,
        "redis-check-rdb 7.0 accepted a version 12 file: {text}"
    );
    let r8d = PrivateDir::new("v10-ttl-into-r8");
    std::fs::copy(&file, r8d.0.join("dump.rdb")).unwrap();
    let r8 = redis8(&r8d);
    let mut r8c = r8.conn();
    assert_eq!(digest(&mut zc), digest(&mut r8c), "DEBUG DIGEST");
    let ttl = parse_reply(&cmd(&mut r8c, &[b"HTTL", b"fttl", b"FIELDS", b"1", b"a"]));
    assert!(ttl.array()[0].int() > 99_000);
    let r7d = PrivateDir::new("v10-ttl-into-r7");
    std::fs::copy(&file, r7d.0.join("dump.rdb")).unwrap();
    assert!(
        RedisServer::try_start_with(&["--dir", r7d.0.to_str().unwrap()]).is_err(),
        "redis-server 7.0 loaded a file it cannot read in full"
    );
    let payload = parse_reply(&cmd(&mut zc, &[b"DUMP", b"fttl"]))
        .bulk()
        .to_vec();
    assert_eq!(
        &payload[payload.len() - 10..payload.len() - 8],
        &12u16.to_le_bytes()
    );

    // Once no field has a TTL any more, the file is version 10 again.
    ok(&mut zc, "HPERSIST fttl FIELDS 1 a");
    ok(&mut zc, "SAVE");
    assert_eq!(version_of(&file), 10);
    let (good, text) = check_rdb(&file);
    assert!(good, "redis-check-rdb: {text}");
}

/// `rdb-version` is a setting like any other: CONFIG SET checks it, CONFIG
/// GET reads it (by name only: `CONFIG GET *` lists Redis's settings),
/// CONFIG REWRITE keeps it.
#[test]
fn rdb_version_is_configurable() {
    let dir = PrivateDir::new("v12-conf");
    let conf = dir.0.join("zwindow.conf");
    std::fs::write(&conf, "port 0\nbind 127.0.0.1\n").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_zwindow"));
    command.arg(&conf).args(["--dir", dir.0.to_str().unwrap()]);
    let z = ZwindowServer::start_command(command);
    let mut c = z.conn();
    let bad = cmd(&mut c, &[b"CONFIG", b"SET", b"rdb-version", b"11"]);
    assert!(
        bad.starts_with(b"-ERR CONFIG SET failed"),
        "{}",
        escape(&bad)
    );
    ok(&mut c, "CONFIG SET rdb-version 12");
    assert_eq!(
        cmd(&mut c, &[b"CONFIG", b"GET", b"rdb-version"]),
        b"*2\r\n$11\r\nrdb-version\r\n$2\r\n12\r\n"
    );
    let all = cmd(&mut c, &[b"CONFIG", b"GET", b"*"]);
    assert!(!String::from_utf8_lossy(&all).contains("rdb-version"));
    ok(&mut c, "SET k v");
    ok(&mut c, "SAVE");
    assert_eq!(version_of(&dir.0.join("dump.rdb")), 12);
    let payload = parse_reply(&cmd(&mut c, &[b"DUMP", b"k"])).bulk().to_vec();
    assert_eq!(
        &payload[payload.len() - 10..payload.len() - 8],
        &12u16.to_le_bytes()
    );
    ok(&mut c, "CONFIG REWRITE");
    let text = std::fs::read_to_string(&conf).unwrap();
    assert!(text.lines().any(|l| l == "rdb-version 12"), "{text}");
    ok(&mut c, "CONFIG SET rdb-version 10");
    ok(&mut c, "SAVE");
    assert_eq!(version_of(&dir.0.join("dump.rdb")), 10);
}
