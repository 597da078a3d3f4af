//! Multi-part AOF details against redis-server 8.0.2: the manifest's
//! INCR offsets (`startoffset`/`endoffset`) as 8.0.2 writes them, read both
//! ways between the two servers with `master_repl_offset` continuing from
//! them; and a BGREWRITEAOF whose child process is killed fails as Redis's
//! does (status, failure count, the INCR file it opened stays).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::dataset::{cmd, ok};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer};

fn field(c: &mut RawConn, section: &str, name: &str) -> String {
    let text = String::from_utf8_lossy(&cmd(c, &[b"INFO", section.as_bytes()])).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO {section}"))
        .trim()
        .to_string()
}

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap()
}

fn wait_for(c: &mut RawConn, section: &str, name: &str, value: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while field(c, section, name) != value {
        assert!(Instant::now() < deadline, "{name} never became {value}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's children (`pgrep -P`), from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok()),
            );
        }
    }
    out
}

fn zwindow(dir: &Path) -> ZwindowServer {
    ZwindowServer::start(&["--dir", dir.to_str().unwrap(), "--appendonly", "yes"])
}

fn redis8(dir: &Path) -> RedisServer {
    RedisServer::start_binary(
        &common::redis8_server(),
        &["--dir", dir.to_str().unwrap(), "--appendonly", "yes"],
    )
}

/// Writes counted by the replication offset: two commands, a transaction
/// (MULTI, two commands, EXEC), a command that changes nothing (not
/// propagated).
fn writes(c: &mut RawConn) {
    ok(c, "SET k1 v1");
    ok(c, "SET k2 v2");
    ok(c, "MULTI");
    cmd(c, &[b"SET", b"a", b"1"]);
    cmd(c, &[b"INCR", b"n"]);
    cmd(c, &[b"EXEC"]);
    cmd(c, &[b"DEL", b"missing"]);
}

/// What one server does: start empty, write, turn the AOF off (the end
/// offset is noted), on again (a rewrite), write, SHUTDOWN. The manifest
/// after each step, and `master_repl_offset` along the way.
/// A started server: a connection, and the server kept alive until dropped.
type Started = (RawConn, Box<dyn std::any::Any>);

fn offsets_run(start: &dyn Fn(&Path) -> Started) -> Vec<String> {
    let dir = PrivateDir::new("aof-offsets");
    let (mut c, server) = start(&dir.0);
    wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
    let mut seen = vec![manifest(&dir.0)];
    writes(&mut c);
    seen.push(field(&mut c, "replication", "master_repl_offset"));
    ok(&mut c, "CONFIG SET appendonly no");
    seen.push(manifest(&dir.0));
    ok(&mut c, "CONFIG SET appendonly yes");
    wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
    seen.push(manifest(&dir.0));
    ok(&mut c, "SET k3 v3");
    let _ = c.try_send(b"SHUTDOWN\r\n");
    let _ = c.try_read_reply(Duration::from_secs(10));
    drop(server);
    seen.push(manifest(&dir.0));
    seen
}

#[test]
fn incr_offsets_are_written_as_redis_writes_them() {
    let z = offsets_run(&|dir| {
        let s = zwindow(dir);
        (s.conn(), Box::new(s) as Box<dyn std::any::Any>)
    });
    let r = offsets_run(&|dir| {
        let s = redis8(dir);
        (s.conn(), Box::new(s) as Box<dyn std::any::Any>)
    });
    assert_eq!(z, r);
    // What both wrote, spelled out.
    assert_eq!(
        z[0],
        "file appendonly.aof.1.base.rdb seq 1 type b\n\
         file appendonly.aof.1.incr.aof seq 1 type i startoffset 0\n"
    );
    assert_eq!(z[1], "6");
    assert!(z[4].ends_with("startoffset 6 endoffset 7\n"), "{}", z[4]);
}

/// A directory one server wrote and closed loads in the other: the end
/// offset becomes `master_repl_offset` and leaves the manifest; without
/// one, the start offset plus the file's size is the offset.
#[test]
fn offsets_carry_over_between_redis_and_zwindow() {
    let dir = PrivateDir::new("aof-offsets-interop");
    {
        let r = redis8(&dir.0);
        let mut c = r.conn();
        wait_for(&mut c, "persistence", "aof_rewrite_in_progress", "0");
        writes(&mut c);
        let _ = c.try_send(b"SHUTDOWN\r\n");
        let _ = c.try_read_reply(Duration::from_secs(10));
    }
    assert!(manifest(&dir.0).contains("startoffset 0 endoffset 6"));
    {
        let z = zwindow(&dir.0);
        let mut c = z.conn();
        assert_eq!(field(&mut c, "replication", "master_repl_offset"), "6");
        assert_eq!(cmd(&mut c, &[b"GET", b"n"]), b"$1\r\n1\r\n");
        assert!(!manifest(&dir.0).contains("endoffset"));
        ok(&mut c, "SET k4 v4");
        // Killed: no end offset; the next start counts the file's bytes.
        drop(z);
    }
    let size = std::fs::metadata(dir.0.join("appendonlydir/appendonly.aof.1.incr.aof"))
        .unwrap()
        .len();
    let r = redis8(&dir.0);
    let mut c = r.conn();
    assert_eq!(
        field(&mut c, "replication", "master_repl_offset"),
        size.to_string()
    );
    assert_eq!(cmd(&mut c, &[b"GET", b"k4"]), b"$2\r\nv4\r\n");
    drop(r);
    let z = zwindow(&dir.0);
    let mut c = z.conn();
    assert_eq!(
        field(&mut c, "replication", "master_repl_offset"),
        size.to_string()
    );
}

/// BGREWRITEAOF forks a child; `kill -9` of it fails the rewrite: the
/// status is `err`, the failures are counted, the INCR file the rewrite
/// opened stays in the manifest, and the next rewrite succeeds.
fn killed_rewrite(pid: u32, c: &mut RawConn, dir: &Path) -> Vec<String> {
    wait_for(c, "persistence", "aof_rewrite_in_progress", "0");
    ok(c, "SET k v");
    ok(c, "CONFIG SET rdb-key-save-delay 10000000");
    assert_eq!(
        cmd(c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    let kids = children(pid);
    assert_eq!(kids.len(), 1, "one child process: {kids:?}");
    let _ = std::process::Command::new("kill")
        .args(["-9", &kids[0].to_string()])
        .status();
    wait_for(c, "persistence", "aof_rewrite_in_progress", "0");
    let mut seen = vec![
        field(c, "persistence", "aof_last_bgrewrite_status"),
        field(c, "persistence", "aof_rewrites_consecutive_failures"),
        manifest(dir),
    ];
    assert!(
        !dir.join(format!("temp-rewriteaof-bg-{}.aof", kids[0]))
            .exists(),
        "the child's file is removed"
    );
    ok(c, "CONFIG SET rdb-key-save-delay 0");
    assert_eq!(
        cmd(c, &[b"BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_for(c, "persistence", "aof_rewrite_in_progress", "0");
    seen.push(field(c, "persistence", "aof_last_bgrewrite_status"));
    seen.push(field(c, "persistence", "aof_rewrites_consecutive_failures"));
    seen
}

#[test]
fn a_killed_rewrite_child_fails_the_rewrite() {
    let zdir = PrivateDir::new("aof-killed-child-z");
    let z = zwindow(&zdir.0);
    let got = killed_rewrite(z.pid(), &mut z.conn(), &zdir.0);
    let rdir = PrivateDir::new("aof-killed-child-r");
    let r = redis8(&rdir.0);
    let want = killed_rewrite(r.pid(), &mut r.conn(), &rdir.0);
    assert_eq!(got, want);
    assert_eq!(got[0], "err");
    assert_eq!(got[1], "1");
    assert!(got[2].contains("appendonly.aof.2.incr.aof seq 2 type i"));
    assert_eq!(&got[3..], ["ok", "0"]);
}

/// BGSAVE's child too: killed, the save fails (`rdb_last_bgsave_status`).
#[test]
fn a_killed_bgsave_child_fails_the_save() {
    let run = |pid: u32, c: &mut RawConn| {
        ok(c, "SET k v");
        ok(c, "CONFIG SET rdb-key-save-delay 10000000");
        assert_eq!(cmd(c, &[b"BGSAVE"]), b"+Background saving started\r\n");
        let kids = children(pid);
        assert_eq!(kids.len(), 1, "one child process: {kids:?}");
        let _ = std::process::Command::new("kill")
            .args(["-9", &kids[0].to_string()])
            .status();
        wait_for(c, "persistence", "rdb_bgsave_in_progress", "0");
        field(c, "persistence", "rdb_last_bgsave_status")
    };
    let zdir = PrivateDir::new("bgsave-killed-z");
    let z = ZwindowServer::start(&["--dir", zdir.0.to_str().unwrap()]);
    let rdir = PrivateDir::new("bgsave-killed-r");
    let r = RedisServer::start_binary(
        &common::redis8_server(),
        &["--dir", rdir.0.to_str().unwrap()],
    );
    assert_eq!(run(z.pid(), &mut z.conn()), "err");
    assert_eq!(run(r.pid(), &mut r.conn()), "err");
}

/// The commands of an AOF file (RESP arrays of bulk strings).
fn aof_commands(bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    fn line(b: &[u8], at: &mut usize) -> Vec<u8> {
        let end = *at + b[*at..].windows(2).position(|w| w == b"\r\n").unwrap();
        let l = b[*at..end].to_vec();
        *at = end + 2;
        l
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let head = line(bytes, &mut at);
        assert_eq!(head[0], b'*', "{}", String::from_utf8_lossy(&head));
        let n: usize = std::str::from_utf8(&head[1..]).unwrap().parse().unwrap();
        let mut argv = Vec::new();
        for _ in 0..n {
            let len: usize = std::str::from_utf8(&line(bytes, &mut at)[1..])
                .unwrap()
                .parse()
                .unwrap();
            argv.push(bytes[at..at + len].to_vec());
            at += len + 2;
        }
        out.push(argv);
    }
    out
}

/// SPOP with a count is logged (and replicated) as SREMs of up to 1024
/// members each, as Redis 8.0 does: the counts of its arguments match.
#[test]
fn spop_with_count_is_logged_as_srem_batches() {
    let run = |c: &mut RawConn, dir: &Path| {
        wait_for(c, "persistence", "aof_rewrite_in_progress", "0");
        let mut sadd: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"myset".to_vec()];
        sadd.extend((1..=4000).map(|i: u32| i.to_string().into_bytes()));
        let args: Vec<&[u8]> = sadd.iter().map(Vec::as_slice).collect();
        assert_eq!(cmd(c, &args), b":4000\r\n");
        for n in ["1023", "1024", "1025", "5"] {
            cmd(c, &[b"SPOP", b"myset", n.as_bytes()]);
        }
        assert_eq!(cmd(c, &[b"SCARD", b"myset"]), b":923\r\n");
        let bytes = std::fs::read(dir.join("appendonlydir/appendonly.aof.1.incr.aof")).unwrap();
        aof_commands(&bytes)
            .into_iter()
            .filter(|argv| argv[0].eq_ignore_ascii_case(b"SREM"))
            .map(|argv| argv.len())
            .collect::<Vec<_>>()
    };
    let zdir = PrivateDir::new("spop-batches-z");
    let z = zwindow(&zdir.0);
    let got = run(&mut z.conn(), &zdir.0);
    let rdir = PrivateDir::new("spop-batches-r");
    let r = redis8(&rdir.0);
    let want = run(&mut r.conn(), &rdir.0);
    assert_eq!(got, want);
    assert_eq!(got, [1025, 1026, 1026, 3, 7]);
}
