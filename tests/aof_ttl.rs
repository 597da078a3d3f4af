//! Hash field and sorted-set member TTLs in the append-only file: every
//! deadline is logged as an absolute time in ms (HEXPIRE → HPEXPIREAT,
//! HSETEX EX → PXAT, HGETEX PX → HPEXPIREAT, ZEXPIRE → ZPEXPIREAT), so a
//! restart after the clock moved keeps each deadline where it was; fields
//! and members that go (a deadline already past, expiry) are logged as the
//! HDEL / ZREM they amount to. The hash commands' log is compared with what
//! redis-server 8.0 writes for the same commands (`common::redis8_server`).

mod common;

use std::path::Path;
use std::time::Duration;

use common::dataset::{cmd, ok};
use common::{PrivateDir, RawConn, RedisServer, ZwindowServer, escape, parse_reply, redis8_server};

/// A deadline far in the future, in seconds and in ms.
const AT_S: u64 = 4_000_000_000;
const AT_MS: u64 = 3_900_000_000_000;

fn start(dir: &Path, extra: &[&str]) -> ZwindowServer {
    let mut args = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
    ];
    args.extend_from_slice(extra);
    ZwindowServer::start(&args)
}

/// The commands of an incremental AOF, each as its arguments.
fn read_log(dir: &Path) -> Vec<Vec<Vec<u8>>> {
    let path = dir.join("appendonlydir").join("appendonly.aof.1.incr.aof");
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut cmds = Vec::new();
    let mut rest = &data[..];
    let line = |rest: &mut &[u8]| -> usize {
        let end = rest.windows(2).position(|w| w == b"\r\n").expect("a line");
        let n = std::str::from_utf8(&rest[1..end]).unwrap().parse().unwrap();
        *rest = &rest[end + 2..];
        n
    };
    while !rest.is_empty() {
        assert_eq!(rest[0], b'*', "{}", escape(rest));
        let argc = line(&mut rest);
        let mut argv = Vec::new();
        for _ in 0..argc {
            let len = line(&mut rest);
            argv.push(rest[..len].to_vec());
            rest = &rest[len + 2..];
        }
        cmds.push(argv);
    }
    cmds
}

/// The log as text lines, a deadline computed from "now" shown as `<ms>`
/// (the two servers' clocks differ by the time between their commands).
fn log_lines(dir: &Path) -> Vec<String> {
    read_log(dir)
        .iter()
        .map(|argv| {
            argv.iter()
                .map(|a| {
                    let s = String::from_utf8_lossy(a).into_owned();
                    match s.parse::<u64>() {
                        Ok(n) if n >= 1_000_000_000_000 && n != AT_MS && n != AT_S * 1000 => {
                            "<ms>".to_string()
                        }
                        _ => s,
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Hash field commands of every kind, with what each logs (see
/// `hash_field_commands_log_as_redis8_does`).
fn hash_field_script(c: &mut RawConn) {
    for line in [
        "HSET h0 x1 y1 x2 y2",
        // Past: both fields go, as two HDELs (in MULTI/EXEC).
        "HEXPIREAT h0 1 FIELDS 3 x1 x2 nofield",
        "HSET h1 f1 v1 f2 v2",
        // Nothing set: nothing logged.
        "HEXPIRE h1 10 XX FIELDS 3 f1 f2 nofield",
        "HPEXPIRE h1 200000 FIELDS 1 f1",
        // Only f2 meets NX: logged with f2 alone.
        "HPEXPIRE h1 300000 NX FIELDS 2 f1 f2",
        "HPEXPIRE h1 300000 FIELDS 1 nofield",
        &format!("HEXPIREAT h1 {AT_S} LT FIELDS 2 f1 f2"),
        &format!("HEXPIREAT h1 {AT_S} GT FIELDS 2 f1 nofield"),
        &format!("HPEXPIREAT h1 {AT_MS} FIELDS 1 f2"),
        "HPERSIST h1 FIELDS 2 f1 nofield",
        "HPERSIST h1 FIELDS 1 f1",
        "HSETEX h3 FIELDS 1 f1 v1",
        "HSETEX h3 FXX FIELDS 1 f1 v11",
        "HSETEX h3 FNX FIELDS 1 f2 v22",
        "HSETEX h3 KEEPTTL FIELDS 1 f2 v22",
        "HSETEX h3 FNX FIELDS 2 f1 v1 f2 v2",
        "HSETEX h3 EX 10000 FIELDS 1 f1 v111",
        "HSETEX h3 PX 10000000 FIELDS 1 f1 v111",
        &format!("HSETEX h3 PXAT {AT_MS} FIELDS 1 f1 v111"),
        &format!("HSETEX h3 EXAT {AT_S} FIELDS 1 f1 v111"),
        "HSETEX h3 PX 0 FIELDS 1 f1 v111",
        "HSETEX h3 PX 0 FIELDS 3 f1 v2 f2 v2 f3 v3",
        "HSETEX h4 FIELDS 3 f1 v1 f2 v2 f3 v3",
        "HGETEX h4 FIELDS 1 f1",
        "HGETEX h4 EX 10000 FIELDS 1 f1",
        "HGETEX h4 PX 10000000 FIELDS 2 f1 nofield",
        &format!("HGETEX h4 PXAT {AT_MS} FIELDS 1 f1"),
        &format!("HGETEX h4 EXAT {AT_S} FIELDS 1 f1"),
        "HGETEX h4 PX 0 FIELDS 1 f1",
        "HGETEX h4 PX 0 FIELDS 3 f1 f2 f3",
        "HSETEX h4 EX 1000 FIELDS 1 f4 v4",
        "HGETEX h4 PERSIST FIELDS 1 f4",
        "HGETEX h4 PERSIST FIELDS 1 f4",
        "HGETDEL h4 FIELDS 2 f4 nofield",
        "HGETDEL h4 FIELDS 1 nofield",
        "HSET h5 a 1 b 2",
        "HPEXPIRE h5 1 FIELDS 1 a",
    ] {
        ok(c, line);
    }
    // Expired (by a lookup or in the background): one HDEL.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(cmd(c, &[b"HGET", b"h5", b"a"]), b"$-1\r\n");
    ok(c, "HINCRBYFLOAT h5 b 1.5");
    // Expired in the background, with nothing looking the hash up (DBSIZE
    // does not): one HDEL per field, no DEL when the hash empties.
    let keys = parse_reply(&c.cmd_str("DBSIZE")).int();
    ok(c, "HSET h6 a 1 b 2 c 3");
    ok(c, "HPEXPIRE h6 1 FIELDS 3 a b c");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while parse_reply(&c.cmd_str("DBSIZE")).int() != keys {
        assert!(std::time::Instant::now() < deadline, "h6 did not expire");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `lines` with each run of consecutive lines starting with `prefix`
/// sorted (the order in which fields with one deadline expire is the
/// server's own).
fn sort_runs(mut lines: Vec<String>, prefix: &str) -> Vec<String> {
    let mut i = 0;
    while i < lines.len() {
        let n = lines[i..]
            .iter()
            .take_while(|l| l.starts_with(prefix))
            .count();
        lines[i..i + n].sort();
        i += n.max(1);
    }
    lines
}

/// The same commands leave the same log in zwindow as in Redis 8.0 (with
/// `appendonly yes`): relative deadlines as absolute ms, only the fields a
/// command set, fields it deleted as HDELs, HGETEX as HPEXPIREAT or
/// HPERSIST, HGETDEL as HDEL, a command that changed nothing not at all.
#[test]
fn hash_field_commands_log_as_redis8_does() {
    let r = RedisServer::start_binary(
        &redis8_server(),
        &["--appendonly", "yes", "--appendfsync", "always"],
    );
    let mut rc = r.conn();
    hash_field_script(&mut rc);
    let want = sort_runs(log_lines(r.dir()), "HDEL h6 ");

    let dir = PrivateDir::new("aof-ttl-redis8");
    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    hash_field_script(&mut c);
    let got = sort_runs(log_lines(&dir.0), "HDEL h6 ");
    assert_eq!(got, want, "zwindow's log (left) vs Redis 8.0's (right)");
    // A spot check that the comparison compares something.
    assert!(got.contains(&"HPEXPIREAT h1 <ms> NX FIELDS 1 f2".to_string()));
    assert!(got.contains(&"HSETEX h3 PXAT <ms> FIELDS 1 f1 v111".to_string()));
    assert!(got.ends_with(&["HDEL h6 a", "HDEL h6 b", "HDEL h6 c"].map(String::from)));
}

fn int(c: &mut RawConn, line: &str) -> i64 {
    parse_reply(&c.cmd_str(line)).int()
}

/// Every deadline in one list: fields of `h`, members of `z`.
fn deadlines(c: &mut RawConn) -> Vec<i64> {
    let mut v: Vec<i64> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|f| parse_reply(&c.cmd_str(&format!("HPEXPIRETIME h FIELDS 1 {f}"))).array()[0].int())
        .collect();
    v.extend(["m1", "m2", "m3"].iter().map(|m| {
        parse_reply(&c.cmd_str(&format!("ZPEXPIRETIME z MEMBERS 1 {m}"))).array()[0].int()
    }));
    v
}

/// Deadlines given relative to a clock 60 s behind the real one are the
/// same absolute times after a restart that reads the real clock: 100 s
/// became 40 s (less the time the restart took), and 30 s had already
/// passed.
#[test]
fn relative_ttls_keep_their_absolute_time_after_a_restart() {
    let dir = PrivateDir::new("aof-ttl-restart");
    let z = start(&dir.0, &["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    ok(&mut c, "DEBUG CLOCK ADVANCE -60000");
    for line in [
        "HSET h a 1 b 2 c 3 d 4 e 5 gone 6",
        "HEXPIRE h 100 FIELDS 1 a",
        "HPEXPIRE h 100000 FIELDS 1 b",
        "HSETEX h EX 100 FIELDS 1 c 3",
        "HSETEX h PX 100000 FIELDS 1 d 4",
        "HGETEX h EX 100 FIELDS 1 e",
        "HPEXPIRE h 30000 FIELDS 1 gone",
        // Logged as HSETEX … KEEPTTL: the new value keeps its deadline.
        "HINCRBYFLOAT h e 0.5",
        "ZADD z 1 m1 2 m2 3 m3 4 zgone",
        "ZEXPIRE z 100 MEMBERS 1 m1",
        "ZPEXPIRE z 100000 MEMBERS 1 m2",
        "ZEXPIRE z 30 MEMBERS 1 zgone",
    ] {
        ok(&mut c, line);
    }
    let at = int(&mut c, "DEBUG CLOCK GET") as u64 + 100_000;
    ok(&mut c, &format!("ZPEXPIREAT z {at} MEMBERS 1 m3"));
    let before = deadlines(&mut c);
    assert!(before.iter().all(|&t| t > 0), "{before:?}");
    drop(z);

    let z = start(&dir.0, &[]);
    let mut c = z.conn();
    assert_eq!(deadlines(&mut c), before);
    for f in ["a", "b", "c", "d", "e"] {
        let ttl = parse_reply(&c.cmd_str(&format!("HPTTL h FIELDS 1 {f}"))).array()[0].int();
        assert!((25_000..=40_000).contains(&ttl), "{f}: HPTTL {ttl}");
    }
    assert_eq!(c.cmd_str("HGET h e"), b"$3\r\n5.5\r\n");
    assert_eq!(c.cmd_str("HEXISTS h gone"), b":0\r\n");
    assert_eq!(c.cmd_str("ZSCORE z zgone"), b"$-1\r\n");
    assert_eq!(int(&mut c, "ZCARD z"), 3);
}

/// Sorted-set member TTLs and window trims log what they did: ZEXPIRE as
/// ZPEXPIREAT with the members it set, a deadline already past and expiry
/// as ZREM, ZCOLLECT and ZPERSIST of nothing not at all, a MOVETO hand-off
/// as the RPUSH on its list.
#[test]
fn member_ttls_and_trims_log_their_effects() {
    let dir = PrivateDir::new("aof-ttl-zset");
    let z = start(&dir.0, &["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    ok(&mut c, "DEBUG CLOCK FREEZE 1000000000000");
    for line in [
        "ZADD z 1 a 2 b 3 c 4 d",
        "ZEXPIRE z 100 NX MEMBERS 3 a b nomember",
        "ZEXPIRE z 200 NX MEMBERS 2 a c",
        "ZEXPIRE z 300 XX MEMBERS 1 d",
        "ZEXPIREAT z 1 MEMBERS 2 d nomember",
        "ZPERSIST z MEMBERS 1 d",
        "ZPERSIST z MEMBERS 1 b",
        "DEBUG CLOCK ADVANCE 150000",
        "ZCOLLECT z",
        "ZCOLLECT z",
        // Scores in ms; the clock reads 1000000150000.
        "ZWINDOW SET w:* 10s MS MOVETO done",
        "ZADD w:1 1000000145000 old 1000000149000 new",
        "DEBUG CLOCK ADVANCE 6000",
        "ZCARD w:1",
    ] {
        ok(&mut c, line);
    }
    let got: Vec<String> = read_log(&dir.0)
        .iter()
        .map(|argv| {
            argv.iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        // A lookup's trim comes in MULTI/EXEC, the sweeper's does not:
        // which one runs first is a race.
        .filter(|l| {
            !["ZWINDOW", "MULTI", "EXEC"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    let want = [
        "SELECT 0",
        "ZADD z 1 a 2 b 3 c 4 d",
        "ZPEXPIREAT z 1000000100000 NX MEMBERS 2 a b",
        "ZPEXPIREAT z 1000000200000 NX MEMBERS 1 c",
        "ZREM z d",
        "ZPERSIST z MEMBERS 1 b",
        "ZREM z a",
        "ZADD w:1 1000000145000 old 1000000149000 new",
        "ZREM w:1 old",
        "RPUSH done old",
    ];
    assert_eq!(got, want);
}
