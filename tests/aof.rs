//! The append-only file against redis-server 7.0.15: writes survive a
//! restart (and `kill -9` with `appendfsync always`), a cut-off last command
//! follows `aof-load-truncated`, BGREWRITEAOF swaps in a new base, expiry is
//! logged as absolute times, and appendonly directories move both ways
//! between zwindow and redis-server (`redis-check-aof` accepts zwindow's).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::dataset::{assert_same, cmd, contents, ok, populate};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer, encode_cmd, escape, parse_reply};

fn start(dir: &Path, extra: &[&str]) -> ZwindowServer {
    let mut args = vec!["--dir", dir.to_str().unwrap(), "--appendonly", "yes"];
    args.extend_from_slice(extra);
    ZwindowServer::start(&args)
}

/// redis-server with `dir` as its working directory and the AOF on.
fn start_redis(dir: &Path) -> RedisServer {
    RedisServer::start_with(&["--dir", dir.to_str().unwrap(), "--appendonly", "yes"])
}

/// Redis 8.0 ([`redis8_server`]) with an AOF in `dir`: the oracle for
/// what consumers look like since 7.2 (their `active-time`).
fn start_redis8(dir: &Path) -> RedisServer {
    RedisServer::start_binary(
        &common::redis8_server(),
        &["--dir", dir.to_str().unwrap(), "--appendonly", "yes"],
    )
}

/// The incremental file a fresh directory's first start opens.
fn first_incr(dir: &Path) -> PathBuf {
    dir.join("appendonlydir").join("appendonly.aof.1.incr.aof")
}

/// Both servers load the appendonly directory in `dir` (redis-server from
/// a copy, named after `what`) into `expected`.
fn both_load(dir: &Path, what: &str, expected: &[(Vec<u8>, Vec<u8>)]) {
    let z = start(dir, &[]);
    assert_same(&contents(&mut z.conn()), expected);
    drop(z);
    let rdir = PrivateDir::new(what);
    copy_dir(&dir.join("appendonlydir"), &rdir.0.join("appendonlydir"));
    let r = start_redis(&rdir.0);
    assert_same(&contents(&mut r.conn()), expected);
}

/// MGET of `keys` from a zwindow started again on `dir`.
fn mget_after_restart(dir: &Path, keys: &[&[u8]]) -> Vec<u8> {
    let z = start(dir, &[]);
    let mut args: Vec<&[u8]> = vec![b"MGET"];
    args.extend_from_slice(keys);
    cmd(&mut z.conn(), &args)
}

/// Runs zwindow on `dir` with `aof-load-truncated no` until it exits (it
/// should refuse to start): its exit status and output.
fn load_strictly(dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--port", "0", "--appendonly", "yes"])
        .args(["--aof-load-truncated", "no"])
        .args(["--dir", dir.to_str().unwrap()])
        .output()
        .unwrap()
}

fn repl_offset(c: &mut RawConn) -> String {
    let text = String::from_utf8_lossy(&cmd(c, &[b"INFO", b"replication"])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("master_repl_offset:"))
        .unwrap()
        .trim()
        .to_string()
}

fn info_field(c: &mut RawConn, name: &str) -> String {
    let text = String::from_utf8_lossy(&cmd(c, &[b"INFO", b"persistence"])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO persistence"))
        .trim()
        .to_string()
}

/// Waits for the running rewrite to end.
fn wait_rewrite(c: &mut RawConn) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while info_field(c, "aof_rewrite_in_progress") != "0"
        || info_field(c, "aof_rewrite_scheduled") != "0"
    {
        assert!(Instant::now() < deadline, "rewrite did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(info_field(c, "aof_last_bgrewrite_status"), "ok");
}

/// Writes the rewrites cover, after the dataset: relative expiries,
/// float increments, random pops, blocking pops, a script, a transaction,
/// several databases.
fn more_writes(c: &mut RawConn) {
    for line in [
        "SET later 1",
        "EXPIRE later 100000",
        "SET ex v EX 100000",
        "SETEX setex 100000 v",
        "PSETEX psetex 100000000 v",
        "INCRBYFLOAT float 1.5",
        "INCRBYFLOAT float 0.25",
        "HSET fh f 1",
        "HINCRBYFLOAT fh f 2.5",
        "SADD popme a b c d e f",
        "SPOP popme",
        "SPOP popme 2",
        "RPUSH bl x y z",
        "BLPOP bl 0",
        "BRPOPLPUSH bl bl2 0",
        "ZADD bz 1 a 2 b 3 c",
        "BZPOPMIN bz 0",
        "ZMPOP 1 bz MAX COUNT 1",
        "EVAL \"redis.call('set', KEYS[1], 'fromlua'); return redis.call('incr', KEYS[2])\" 2 luak luacount",
        "MULTI",
        "SET tx1 a",
        "SELECT 5",
        "SET tx5 b",
        "SELECT 0",
        "EXEC",
        "SELECT 3",
        "GETEX db3 PX 90000000",
        "GETSET gs new",
        "SELECT 0",
        "DEL short",
    ] {
        ok(c, line);
    }
}

fn check_aof(manifest: &Path) {
    let out = Command::new("redis-check-aof")
        .arg(manifest)
        .output()
        .expect("run redis-check-aof");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("is valid"),
        "redis-check-aof: {text}"
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn writes_survive_a_restart_and_load_into_redis() {
    let dir = PrivateDir::new("aof-restart");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(info_field(&mut c, "aof_enabled"), "1");
    populate(&mut c);
    more_writes(&mut c);
    let expected = contents(&mut c);
    // kill -9: what was acknowledged is in the file already.
    drop(z);
    check_aof(&dir.0.join("appendonlydir/appendonly.aof.manifest"));
    // redis-server 7.0.15 loads zwindow's directory and answers the same.
    both_load(&dir.0, "aof-into-redis", &expected);
}

#[test]
fn bgrewriteaof_makes_a_new_base_and_history_goes() {
    let dir = PrivateDir::new("aof-rewrite");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    populate(&mut c);
    // The new INCR file starts where the replication stream is (Redis 8's
    // `startoffset`: one per command while no backlog exists).
    let offset = repl_offset(&mut c);
    assert_eq!(
        cmd(&mut c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_rewrite(&mut c);
    assert_eq!(info_field(&mut c, "aof_rewrites"), "1");
    more_writes(&mut c);
    let expected = contents(&mut c);
    let aofdir = dir.0.join("appendonlydir");
    let manifest = std::fs::read_to_string(aofdir.join("appendonly.aof.manifest")).unwrap();
    assert_eq!(
        manifest,
        format!(
            "file appendonly.aof.2.base.rdb seq 2 type b\n\
             file appendonly.aof.2.incr.aof seq 2 type i startoffset {offset}\n"
        )
    );
    let mut names: Vec<String> = std::fs::read_dir(&aofdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "appendonly.aof.2.base.rdb",
            "appendonly.aof.2.incr.aof",
            "appendonly.aof.manifest"
        ]
    );
    check_aof(&aofdir.join("appendonly.aof.manifest"));
    // The base (RDB, compressed) plus what followed it.
    let size: u64 = info_field(&mut c, "aof_current_size").parse().unwrap();
    let on_disk: u64 = ["appendonly.aof.2.base.rdb", "appendonly.aof.2.incr.aof"]
        .iter()
        .map(|n| std::fs::metadata(aofdir.join(n)).unwrap().len())
        .sum();
    assert_eq!(size, on_disk);
    drop(z);
    both_load(&dir.0, "aof-rewrite-redis", &expected);
}

/// `aof-use-rdb-preamble no`: the rewrite's base is commands
/// (`appendonly.aof.2.base.aof`, Redis's `rewriteAppendOnlyFileRio` form:
/// RPUSH/SADD/ZADD/HMSET batches, a stream's XADDs, XSETID, groups and
/// their pending entries), which `redis-check-aof` accepts and which
/// zwindow and redis-server both load into the same dataset. zwindow's
/// own state rides as its commands: a window rule and member TTLs.
#[test]
fn a_base_of_commands_without_the_rdb_preamble() {
    let dir = PrivateDir::new("aof-no-preamble");
    let z = start(&dir.0, &["--aof-use-rdb-preamble", "no"]);
    let mut c = z.conn();
    populate(&mut c);
    // A pending entry whose stream entry was deleted does not survive a
    // base of commands, in Redis either: XCLAIM skips a missing entry.
    ok(&mut c, "XACK st g1 1-2");
    let offset = repl_offset(&mut c);
    ok(&mut c, "BGREWRITEAOF");
    wait_rewrite(&mut c);
    more_writes(&mut c);
    let expected = contents(&mut c);
    let aofdir = dir.0.join("appendonlydir");
    let manifest = std::fs::read_to_string(aofdir.join("appendonly.aof.manifest")).unwrap();
    assert_eq!(
        manifest,
        format!(
            "file appendonly.aof.2.base.aof seq 2 type b\n\
             file appendonly.aof.2.incr.aof seq 2 type i startoffset {offset}\n"
        )
    );
    let base = std::fs::read(aofdir.join("appendonly.aof.2.base.aof")).unwrap();
    assert!(base.starts_with(b"*"), "{}", escape(&base[..40]));
    check_aof(&aofdir.join("appendonly.aof.manifest"));
    drop(z);
    both_load(&dir.0, "aof-no-preamble-redis", &expected);

    // zwindow's own state: a rule, sorted-set, set and hash member TTLs.
    let dir = PrivateDir::new("aof-no-preamble-zw");
    let z = start(&dir.0, &["--aof-use-rdb-preamble", "no"]);
    let mut c = z.conn();
    for line in [
        "ZWINDOW SET w:* 3600000 MS MOVETO old:{key}",
        "ZADD z 1 a 2 b",
        "ZPEXPIREAT z 4000000000000 MEMBERS 1 a",
        "SADD s a b",
        "SPEXPIREAT s 4000000000000 MEMBERS 1 b",
        "HSET h f v g w",
        "HPEXPIREAT h 4000000000000 FIELDS 1 g",
    ] {
        ok(&mut c, line);
    }
    ok(&mut c, "BGREWRITEAOF");
    wait_rewrite(&mut c);
    let probes = [
        "ZWINDOW GET w:1",
        "ZPEXPIRETIME z MEMBERS 2 a b",
        "SPEXPIRETIME s MEMBERS 2 a b",
        "HPEXPIRETIME h FIELDS 2 f g",
    ];
    let before: Vec<Vec<u8>> = probes.iter().map(|p| c.cmd_str(p)).collect();
    drop(z);
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    let after: Vec<Vec<u8>> = probes.iter().map(|p| c.cmd_str(p)).collect();
    assert_eq!(before, after);
    assert!(before[0].starts_with(b"*5"), "{}", escape(&before[0]));
}

#[test]
fn zwindow_loads_redis_appendonly_dir() {
    let rdir = PrivateDir::new("redis-aof");
    let r = start_redis(&rdir.0);
    let mut rc = r.conn();
    populate(&mut rc);
    ok(&mut rc, "BGREWRITEAOF");
    wait_rewrite(&mut rc);
    more_writes(&mut rc);
    let expected = contents(&mut rc);
    // A clean stop: with `appendfsync everysec` redis-server may hold the
    // last writes back from the file for up to 2 s, which kill -9 loses.
    rc.send(&encode_cmd(&[b"SHUTDOWN", b"NOSAVE"]));
    rc.expect_closed();
    drop(r);
    let z = start(&rdir.0, &[]);
    assert_same(&contents(&mut z.conn()), &expected);
}

#[test]
fn appendfsync_always_keeps_a_write_acknowledged_before_kill_9() {
    let dir = PrivateDir::new("aof-always");
    let z = start(&dir.0, &["--appendfsync", "always"]);
    let mut c = z.conn();
    set_keys(&mut c, 200);
    // Dropping kills with SIGKILL right after the last reply.
    drop(z);
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(cmd(&mut c, &[b"DBSIZE"]), b":200\r\n");
    assert_eq!(cmd(&mut c, &[b"GET", b"k199"]), b"$1\r\nv\r\n");
}

#[test]
fn config_set_appendonly_writes_a_base_first() {
    let dir = PrivateDir::new("aof-config-set");
    let z = ZwindowServer::start(&["--dir", dir.0.to_str().unwrap()]);
    let mut c = z.conn();
    ok(&mut c, "SET before 1");
    assert_eq!(
        cmd(&mut c, &[b"CONFIG", b"SET", b"appendonly", b"yes"]),
        b"+OK\r\n"
    );
    wait_rewrite(&mut c);
    ok(&mut c, "SET after 2");
    assert_eq!(info_field(&mut c, "aof_enabled"), "1");
    drop(z);
    assert_eq!(
        mget_after_restart(&dir.0, &[b"before", b"after"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
}

/// `CONFIG SET appendonly no` stops a running rewrite at once (Redis kills
/// its rewrite child, and says so in its log); the last rewrite's status
/// stays `ok`, and a new BGREWRITEAOF is accepted.
#[test]
fn turning_the_aof_off_stops_a_running_rewrite() {
    let dir = PrivateDir::new("aof-off-stops-rewrite");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    wait_rewrite(&mut c);
    ok(&mut c, "SET k v");
    ok(&mut c, "CONFIG SET rdb-key-save-delay 10000000");
    assert_eq!(
        cmd(&mut c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    assert_eq!(info_field(&mut c, "aof_rewrite_in_progress"), "1");
    let started = Instant::now();
    ok(&mut c, "CONFIG SET appendonly no");
    // The key's 10 s delay is not waited out.
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(info_field(&mut c, "aof_rewrite_in_progress"), "0");
    assert_eq!(info_field(&mut c, "aof_last_bgrewrite_status"), "ok");
    assert!(z.log_tail().contains("Killing running AOF rewrite child"));
    ok(&mut c, "CONFIG SET rdb-key-save-delay 0");
    assert_eq!(
        cmd(&mut c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_rewrite(&mut c);
}

/// A BGREWRITEAOF scheduled behind a BGSAVE runs once the save ends, with
/// the AOF off too (as Redis's serverCron).
#[test]
fn a_rewrite_scheduled_behind_bgsave_runs_with_the_aof_off() {
    let dir = PrivateDir::new("aof-scheduled-off");
    let z = ZwindowServer::start(&["--dir", dir.0.to_str().unwrap()]);
    let mut c = z.conn();
    ok(&mut c, "SET k v");
    ok(&mut c, "CONFIG SET rdb-key-save-delay 500000");
    assert_eq!(cmd(&mut c, &[b"BGSAVE"]), b"+Background saving started\r\n");
    assert_eq!(
        cmd(&mut c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting scheduled\r\n"
    );
    ok(&mut c, "CONFIG SET rdb-key-save-delay 0");
    wait_rewrite(&mut c);
    assert!(dir.0.join("appendonlydir").is_dir());
}

/// A key given 100 s when the server's clock read 60 s earlier than the
/// real one has 40 s left after a restart, not a fresh 100 s.
#[test]
fn expiry_is_logged_as_absolute_time() {
    let dir = PrivateDir::new("aof-expiry");
    let z = start(&dir.0, &["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    ok(&mut c, "DEBUG CLOCK ADVANCE -60000");
    for line in [
        "SET a v",
        "EXPIRE a 100",
        "SET b v EX 100",
        "SETEX c 100 v",
        "SET d v",
        "GETEX d PX 100000",
        "SET e v",
        "PEXPIRE e 100000",
    ] {
        ok(&mut c, line);
    }
    drop(z);
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    for k in ["a", "b", "c", "d", "e"] {
        let pttl = parse_reply(&cmd(&mut c, &[b"PTTL", k.as_bytes()])).int();
        assert!((35_000..=40_000).contains(&pttl), "{k}: PTTL {pttl}");
    }
}

/// Writes a few commands, kills the server, and cuts the incremental file
/// in the middle of a last command appended to it.
fn truncated_dir() -> PrivateDir {
    let dir = PrivateDir::new("aof-truncated");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    ok(&mut c, "SET kept 1");
    ok(&mut c, "RPUSH list a b");
    drop(z);
    let incr = first_incr(&dir.0);
    let mut bytes = std::fs::read(&incr).unwrap();
    bytes.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$4\r\nlost\r\n$5\r\nva");
    std::fs::write(&incr, &bytes).unwrap();
    dir
}

#[test]
fn a_truncated_tail_is_dropped_with_aof_load_truncated() {
    let dir = truncated_dir();
    let incr = first_incr(&dir.0);
    let before = std::fs::metadata(&incr).unwrap().len();
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(cmd(&mut c, &[b"GET", b"kept"]), b"$1\r\n1\r\n");
    assert_eq!(cmd(&mut c, &[b"EXISTS", b"lost"]), b":0\r\n");
    // The log reaches the test through a reader thread: wait for the line.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !z
        .log_tail()
        .contains("!!! Truncating the AOF appendonly.aof.1.incr.aof at offset")
    {
        assert!(Instant::now() < deadline, "{}", z.log_tail());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The cut part is gone from the file; new writes follow the last whole command.
    assert!(std::fs::metadata(&incr).unwrap().len() < before);
    ok(&mut c, "SET next 2");
    drop(z);
    assert_eq!(
        mget_after_restart(&dir.0, &[b"kept", b"next"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
}

#[test]
fn a_truncated_tail_stops_startup_without_aof_load_truncated() {
    let dir = truncated_dir();
    let out = load_strictly(&dir.0);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Unexpected end of file reading the append only file"),
        "{err}"
    );
}

#[test]
fn corrupt_files_are_errors_not_panics() {
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "bad type",
            b"file a.aof seq 1 type x\n",
            "Unknown AOF file type",
        ),
        (
            "a path",
            b"file ../a.aof seq 1 type i\n",
            "File can't be a path",
        ),
        (
            "short",
            b"file a.aof seq 1\n",
            "Invalid AOF manifest file format",
        ),
        (
            "missing",
            b"file nothere.aof seq 1 type i\n",
            "doesn't exist",
        ),
    ];
    for (what, manifest, expect) in cases {
        let dir = PrivateDir::new("aof-corrupt");
        let aofdir = dir.0.join("appendonlydir");
        std::fs::create_dir_all(&aofdir).unwrap();
        std::fs::write(aofdir.join("appendonly.aof.manifest"), manifest).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_zwindow"))
            .args([
                "--port",
                "0",
                "--appendonly",
                "yes",
                "--dir",
                dir.0.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}");
        assert!(
            err.contains(expect) && !err.contains("panicked"),
            "{what}: {err}"
        );
    }
    // Hostile command bytes: huge counts and lengths, bad framing.
    let bodies: &[&[u8]] = &[
        b"*99999999999\r\n$3\r\nSET\r\n",
        b"*2\r\n$99999999999999\r\nx\r\n",
        b"*1\r\n$-5\r\n",
        b"*1\r\n$3\r\nPINGX\r\n",
        b"garbage\r\n",
        b"*1\r\n$4\r\nNOPE\r\n",
    ];
    for body in bodies {
        let dir = PrivateDir::new("aof-hostile");
        let aofdir = dir.0.join("appendonlydir");
        std::fs::create_dir_all(&aofdir).unwrap();
        std::fs::write(
            aofdir.join("appendonly.aof.manifest"),
            "file appendonly.aof.1.incr.aof seq 1 type i\n",
        )
        .unwrap();
        std::fs::write(aofdir.join("appendonly.aof.1.incr.aof"), body).unwrap();
        let out = load_strictly(&dir.0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{}", common::escape(body));
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// What the incremental file holds: key expiry as DEL, a script as the
/// commands it ran inside MULTI/EXEC, SPOP as SREM, a read as nothing.
#[test]
fn the_log_holds_the_effects() {
    let dir = PrivateDir::new("aof-effects");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    ok(&mut c, "SET gone v PX 20");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(cmd(&mut c, &[b"GET", b"gone"]), b"$-1\r\n");
    ok(
        &mut c,
        "EVAL \"redis.call('set','a','1'); redis.call('set','b','2')\" 0",
    );
    ok(&mut c, "SADD s only");
    ok(&mut c, "SPOP s");
    ok(&mut c, "GET a");
    let incr = first_incr(&dir.0);
    let text = String::from_utf8_lossy(&std::fs::read(incr).unwrap()).replace("\r\n", " ");
    let want = "*2 $6 SELECT $1 0 *5 $3 SET $4 gone $1 v $4 PXAT";
    assert!(text.starts_with(want), "{text}");
    // Past the deadline's `$13 <ms>`.
    let tail = text
        .split_once(" PXAT ")
        .unwrap()
        .1
        .splitn(3, ' ')
        .nth(2)
        .unwrap();
    assert_eq!(
        tail,
        "*2 $3 DEL $4 gone *1 $5 MULTI *3 $3 set $1 a $1 1 *3 $3 set $1 b $1 2 *1 $4 EXEC \
         *3 $4 SADD $1 s $4 only *3 $4 SREM $1 s $4 only "
    );
}

#[test]
fn other_clients_get_loading_while_the_aof_reloads() {
    let dir = PrivateDir::new("aof-loading");
    // 400 commands at 5 ms each: a load of about two seconds.
    let z = start(
        &dir.0,
        &["--enable-debug-command", "yes", "--key-load-delay", "5000"],
    );
    let mut c = z.conn();
    for i in 0..400 {
        let k = format!("k{i}");
        assert_eq!(cmd(&mut c, &[b"SET", k.as_bytes(), b"v"]), b"+OK\r\n");
    }
    // A transaction queued before the reload, run during it.
    let mut tx = z.conn();
    ok(&mut tx, "MULTI");
    assert_eq!(cmd(&mut tx, &[b"GET", b"k1"]), b"+QUEUED\r\n");
    let mut loader = z.conn();
    loader.send(&encode_cmd(&[b"DEBUG", b"LOADAOF"]));
    let deadline = Instant::now() + Duration::from_secs(5);
    while cmd(&mut c, &[b"PING"]) == b"+PONG\r\n" {
        assert!(Instant::now() < deadline, "the reload never showed");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Refused without the `loading` flag; INFO, CONFIG and SELECT run.
    assert_eq!(
        cmd(&mut c, &[b"GET", b"k1"]),
        b"-LOADING Redis is loading the dataset in memory\r\n"
    );
    assert_eq!(info_field(&mut c, "loading"), "1");
    assert!(
        info_field(&mut c, "loading_total_bytes")
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert_eq!(cmd(&mut c, &[b"SELECT", b"0"]), b"+OK\r\n");
    assert_eq!(
        cmd(&mut tx, &[b"EXEC"]),
        b"-EXECABORT Transaction discarded because of: LOADING Redis is loading the dataset in memory\r\n"
    );
    assert_eq!(loader.read_reply(), b"+OK\r\n");
    assert_eq!(info_field(&mut c, "loading"), "0");
    assert_eq!(cmd(&mut c, &[b"DBSIZE"]), b":400\r\n");
}

/// `n` keys `k0`… written one acknowledged SET at a time.
fn set_keys(c: &mut RawConn, n: usize) {
    for i in 0..n {
        let k = format!("k{i}");
        assert_eq!(cmd(c, &[b"SET", k.as_bytes(), b"v"]), b"+OK\r\n");
    }
}

/// Starts zwindow in `dir` with a slow load (5 ms a key) and connects as
/// soon as it listens: `start` would wait for the end of the load.
fn start_loading(dir: &Path, extra: &[&str]) -> (std::process::Child, RawConn) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--key-load-delay",
            "5000",
        ])
        .args(extra)
        .current_dir(dir)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let port = loop {
        let mut line = String::new();
        assert!(std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0);
        if let Some(p) = common::parse_listening_line(line.trim_end()) {
            break p;
        }
    };
    // The rest of the log is drained so the pipe never fills.
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    (
        child,
        RawConn::connect(([127, 0, 0, 1], port).into(), "zwindow"),
    )
}

#[test]
fn a_shutdown_while_loading_saves_nothing() {
    let dir = PrivateDir::new("shutdown-loading");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    set_keys(&mut c, 300);
    drop(z);
    // Save points are on: a SHUTDOWN after the load would save.
    let (mut child, mut c) = start_loading(&dir.0, &["--appendonly", "yes", "--save", "3600 1"]);
    assert_eq!(info_field(&mut c, "loading"), "1");
    c.send(&encode_cmd(&[b"SHUTDOWN"]));
    assert!(matches!(
        c.try_read_reply(Duration::from_secs(5)),
        common::ReadOutcome::Closed
    ));
    assert!(child.wait().unwrap().success());
    assert!(
        !dir.0.join("dump.rdb").exists(),
        "a half-loaded dataset was saved"
    );
}

#[test]
fn connections_are_answered_while_the_dataset_loads_at_startup() {
    let dir = PrivateDir::new("aof-startup-loading");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    set_keys(&mut c, 300);
    drop(z);
    let (mut child, mut c) = start_loading(&dir.0, &["--appendonly", "yes"]);
    assert_eq!(
        cmd(&mut c, &[b"PING"]),
        b"-LOADING Redis is loading the dataset in memory\r\n"
    );
    assert_eq!(info_field(&mut c, "loading"), "1");
    let deadline = Instant::now() + Duration::from_secs(20);
    while cmd(&mut c, &[b"PING"]) != b"+PONG\r\n" {
        assert!(Instant::now() < deadline, "the load never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cmd(&mut c, &[b"DBSIZE"]), b":300\r\n");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn timestamp_annotations_are_written_and_skipped() {
    let dir = PrivateDir::new("aof-ts");
    let z = start(&dir.0, &["--aof-timestamp-enabled", "yes"]);
    let mut c = z.conn();
    ok(&mut c, "SET a 1");
    std::thread::sleep(Duration::from_millis(1300));
    ok(&mut c, "SET b 2");
    drop(z);
    let incr = dir
        .0
        .join("appendonlydir")
        .join("appendonly.aof.1.incr.aof");
    let text = String::from_utf8(std::fs::read(&incr).unwrap()).unwrap();
    let stamps: Vec<&str> = text.lines().filter(|l| l.starts_with("#TS:")).collect();
    assert_eq!(stamps.len(), 2, "{text:?}");
    assert!(text.starts_with("#TS:"), "{text:?}");
    check_aof(&dir.0.join("appendonlydir").join("appendonly.aof.manifest"));
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(
        cmd(&mut c, &[b"MGET", b"a", b"b"]),
        b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    );
}

/// 50 clients write until the server is killed with SIGKILL; returns
/// (writes acknowledged, acknowledged writes missing after a restart).
fn acknowledged_but_lost(fsync: &str, threads: &str) -> (usize, usize) {
    const CLIENTS: usize = 50;
    let dir = PrivateDir::new("aof-kill9");
    let z = start(&dir.0, &["--appendfsync", fsync, "--threads", threads]);
    let addr = z.addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = RawConn::connect(addr, "writer");
                // Keys t:0, t:1, … in order: the acknowledged ones are a prefix.
                let mut acked = 0usize;
                while acked < 100_000 && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let k = format!("{t}:{acked}");
                    if c.try_send(&encode_cmd(&[b"SET", k.as_bytes(), b"v"]))
                        .is_err()
                    {
                        break;
                    }
                    match c.try_read_reply(Duration::from_secs(5)) {
                        common::ReadOutcome::Reply(r) if r == b"+OK\r\n" => acked += 1,
                        _ => break,
                    }
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // SIGKILL while the writes are in flight.
    drop(z);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked: Vec<usize> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    let mut lost = 0;
    for (t, &n) in acked.iter().enumerate().filter(|(_, n)| **n > 0) {
        let keys: Vec<String> = (0..n).map(|i| format!("{t}:{i}")).collect();
        let mut args: Vec<&[u8]> = vec![b"EXISTS"];
        args.extend(keys.iter().map(|k| k.as_bytes()));
        let reply = String::from_utf8(cmd(&mut c, &args)).unwrap();
        let found: usize = reply.trim_start_matches(':').trim_end().parse().unwrap();
        lost += n - found;
    }
    (acked.iter().sum(), lost)
}

/// `kill -9` of the process (not of the machine) loses no acknowledged
/// write under either policy: the commands reach the file (the kernel's
/// page cache) before their replies leave; `everysec` only bounds what a
/// machine crash loses. The figures are printed for the README.
#[test]
fn kill_9_under_load_loses_no_acknowledged_write() {
    // Two workers too: connections then write each other's commands.
    for (fsync, threads) in [("everysec", "1"), ("always", "1"), ("always", "2")] {
        let (acked, lost) = acknowledged_but_lost(fsync, threads);
        println!(
            "appendfsync {fsync}, threads {threads}: {acked} writes acknowledged by 50 clients, {lost} lost"
        );
        assert!(acked > 0);
        assert_eq!(lost, 0, "appendfsync {fsync}, threads {threads}");
    }
}

/// Consumer groups change without their stream changing: every such
/// change (XGROUP, XREADGROUP with and without NOACK, history re-reads,
/// XACK, XCLAIM, XAUTOCLAIM, in MULTI and in a script) is logged, so a
/// restart, and redis-server loading the files, bring back the groups,
/// consumers, PELs, delivery counts and times, last IDs and read counters.
const GROUP_SCRIPT: &[&str] = &[
    "XADD s 1-1 a 1",
    "XADD s 2-1 a 2",
    "XADD s 3-1 a 3",
    "XADD s 4-1 a 4",
    "XADD s 5-1 a 5",
    "XGROUP CREATE s g 0",
    "XGROUP CREATE s g2 $ ENTRIESREAD 5",
    "XREADGROUP GROUP g alice COUNT 3 STREAMS s >",
    "XREADGROUP GROUP g bob NOACK COUNT 1 STREAMS s >",
    "XREADGROUP GROUP g alice STREAMS s 0",
    "XREADGROUP GROUP g carol STREAMS s 0",
    "XACK s g 1-1",
    "XCLAIM s g dave 0 2-1",
    "XCLAIM s g dave 0 3-1 JUSTID RETRYCOUNT 7",
    "XDEL s 3-1",
    "XAUTOCLAIM s g erin 0 0 COUNT 10",
    "XCLAIM s g frank 0 5-1 FORCE LASTID 9-9",
    "XGROUP SETID s g2 2-1 ENTRIESREAD 2",
    "XGROUP CREATECONSUMER s g2 x",
    "XGROUP CREATECONSUMER s g2 y",
    "XGROUP DELCONSUMER s g2 y",
    "XGROUP CREATE s g3 0",
    "XGROUP DESTROY s g3",
    "MULTI",
    "XREADGROUP GROUP g2 zed STREAMS s >",
    "XACK s g2 4-1",
    "EXEC",
    "EVAL \"return redis.call('XREADGROUP', 'GROUP', 'g2', 'zed', 'STREAMS', KEYS[1], '0')\" 1 s",
    "XGROUP CREATE t tg $ MKSTREAM",
    "XADD t 7-1 f v",
    "XREADGROUP GROUP tg c1 STREAMS t >",
];

fn groups_of(c: &mut RawConn) -> Vec<String> {
    ["s", "t"]
        .iter()
        .map(|k| {
            let r = cmd(c, &[b"XINFO", b"STREAM", k.as_bytes(), b"FULL"]);
            assert!(r.starts_with(b"*"), "XINFO STREAM {k} FULL: {}", escape(&r));
            common::dataset::masked(&parse_reply(&r))
        })
        .collect()
}

#[test]
fn consumer_groups_survive_a_restart_both_ways() {
    let zdir = PrivateDir::new("aof-groups");
    let z = start(&zdir.0, &[]);
    let mut c = z.conn();
    for line in GROUP_SCRIPT {
        ok(&mut c, line);
    }
    let live = groups_of(&mut c);
    // The state is what the script built, not an empty one.
    assert!(
        live[0].contains("\"frank\"") && live[0].contains("\"9-9\""),
        "{live:?}"
    );
    assert!(
        live[0]
            .contains("\"erin\" \"seen-time\" <time> \"active-time\" <time> \"pel-count\" Int(1)"),
        "{live:?}"
    );
    drop(z);
    let z = start(&zdir.0, &[]);
    assert_eq!(
        groups_of(&mut z.conn()),
        live,
        "zwindow restarted from its AOF"
    );
    drop(z);
    let rdir = PrivateDir::new("aof-groups-into-redis");
    copy_dir(&zdir.0.join("appendonlydir"), &rdir.0.join("appendonlydir"));
    let r = start_redis8(&rdir.0);
    assert_eq!(
        groups_of(&mut r.conn()),
        live,
        "redis-server loading zwindow's AOF"
    );
    drop(r);

    // redis-server writes; zwindow loads what a restarted redis-server has.
    let rdir = PrivateDir::new("aof-groups-redis");
    let r = start_redis8(&rdir.0);
    let mut rc = r.conn();
    for line in GROUP_SCRIPT {
        ok(&mut rc, line);
    }
    rc.send(&encode_cmd(&[b"SHUTDOWN"]));
    rc.expect_closed();
    drop(r);
    let r = start_redis8(&rdir.0);
    let reloaded = groups_of(&mut r.conn());
    drop(r);
    let zdir = PrivateDir::new("aof-groups-from-redis");
    copy_dir(&rdir.0.join("appendonlydir"), &zdir.0.join("appendonlydir"));
    let z = start(&zdir.0, &[]);
    assert_eq!(
        groups_of(&mut z.conn()),
        reloaded,
        "zwindow loading redis-server's AOF"
    );
}

/// An approximate stream trim is logged as the exact one it came to, as
/// Redis logs it (so a replay, whatever its node layout and without the
/// LIMIT cap, trims the same entries), and redis-server replays it so.
#[test]
fn approximate_stream_trims_are_logged_exactly() {
    let dir = PrivateDir::new("aof-xtrim");
    let z = start(&dir.0, &["--stream-node-max-entries", "4"]);
    let mut c = z.conn();
    for i in 1..=20 {
        let id = format!("{i}-1");
        cmd(&mut c, &[b"XADD", b"s", id.as_bytes(), b"f", b"v"]);
    }
    // Whole nodes of 4 go; LIMIT caps the work at one node.
    assert_eq!(
        cmd(
            &mut c,
            &[b"XTRIM", b"s", b"MAXLEN", b"~", b"2", b"LIMIT", b"4"]
        ),
        b":4\r\n"
    );
    ok(&mut c, "XADD s MINID ~ 15 21-1 f v");
    let len = cmd(&mut c, &[b"XLEN", b"s"]);
    let text =
        String::from_utf8_lossy(&std::fs::read(first_incr(&dir.0)).unwrap()).replace("\r\n", " ");
    assert!(
        text.contains("*7 $5 XTRIM $1 s $6 MAXLEN $1 = $2 16 $5 LIMIT $1 4 "),
        "{text}"
    );
    assert!(
        text.contains("*8 $4 XADD $1 s $5 MINID $1 = $4 13-1 $4 21-1 "),
        "{text}"
    );
    drop(z);
    let rdir = PrivateDir::new("aof-xtrim-redis");
    copy_dir(&dir.0.join("appendonlydir"), &rdir.0.join("appendonlydir"));
    let r = start_redis(&rdir.0);
    assert_eq!(cmd(&mut r.conn(), &[b"XLEN", b"s"]), len);
    let z = start(&dir.0, &[]);
    assert_eq!(cmd(&mut z.conn(), &[b"XLEN", b"s"]), len);
}
