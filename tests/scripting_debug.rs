//! The Lua debugger (SCRIPT DEBUG, LDB): sessions in sync mode compared
//! byte for byte with redis-server 7.0.15 (every debugger command, logs of
//! `redis.call`, `redis.debug`/`redis.breakpoint`, errors, RESP3, MULTI,
//! pipelines, `redis-cli --ldb-sync-mode` through a pipe), and zwindow's
//! own guarantees: a session whose client leaves, or that SCRIPT KILL
//! ends, does not hang the server.
mod common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Sends `args` on both connections; the raw replies must be identical.
fn same(p: &mut Pair, args: &[&str]) -> Vec<u8> {
    let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    let bytes = encode_cmd(&a);
    p.r.send(&bytes);
    let r = p.r.read_reply();
    p.z.send(&bytes);
    let z = p.z.read_reply();
    assert_eq!(
        escape(&r),
        escape(&z),
        "reply to {args:?} differs (left redis, right zwindow)"
    );
    r
}

/// Both connections were closed by the server after the session.
fn both_closed(p: &mut Pair) {
    for c in [&mut p.r, &mut p.z] {
        match c.try_read_reply(Duration::from_secs(5)) {
            ReadOutcome::Closed => {}
            ReadOutcome::Reply(r) => panic!("unexpected reply {}", escape(&r)),
            ReadOutcome::Timeout => panic!("connection not closed after the session"),
        }
    }
}

const SCRIPT: &str = "local a = 1\nlocal t = {1,2,'x',{k='v'}}\nredis.call('set','k',a)\nlocal v = redis.call('get','k')\nredis.debug('dbg', a, t)\nredis.breakpoint()\nlocal w = redis.pcall('nosuch')\nlocal function f(x)\n  return x + 1\nend\nlocal z = f(2)\nreturn v\n";

#[test]
fn every_debugger_command_answers_as_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    same(&mut p, &["SCRIPT", "DEBUG", "sync"]);
    same(&mut p, &["EVAL", SCRIPT, "1", "key", "arg1"]);
    for cmd in [
        &["help"][..],
        &["h"],
        &["p"],
        &["s"],
        &["next"],
        &["p"],
        &["print", "t"],
        &["p", "KEYS"],
        &["p", "ARGV"],
        &["p", "nothere"],
        &["l"],
        &["list", "2", "1"],
        &["l", "0", "0"],
        &["whole"],
        &["w"],
        &["b"],
        &["b", "5"],
        &["b", "5"],
        &["break"],
        &["b", "-5"],
        &["b", "-5"],
        &["b", "x"],
        &["b", "0"],
        &["b", "99"],
        &["b", "9", "11"],
        &["t"],
        &["e", "1+1"],
        &["eval", "KEYS[1]", "..", "'x'"],
        &["e", "error('x')"],
        &["e", "+"],
        &["e", "local q = 1"],
        &["r", "set", "a", "b"],
        &["redis", "hgetall", "zz"],
        &["r", "bad"],
        &["r", "incr", "a"],
        &[
            "r", "rpush", "l", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12",
        ],
        &["r", "lrange", "l", "0", "-1"],
        &["r", "get", "nokey"],
        &["m"],
        &["m", "5"],
        &["r", "lrange", "l", "0", "-1"],
        &["maxlen", "0"],
        &["e", "string.rep('x', 300)"],
        &["r"],
        &["zz"],
        &["hello\0world"],
        &["s"],
        &["s"],
        &["c"],
        &["p"],
        &["c"],
        &["t"],
        &["s"],
        &["s"],
        &["c"],
    ] {
        same(&mut p, cmd);
    }
    // The last `c` ended the script: <endsession>, then EVAL's reply.
    let r = p.r.read_reply();
    let z = p.z.read_reply();
    assert_eq!(escape(&r), escape(&z));
    both_closed(&mut p);
}

#[test]
fn session_errors_abort_and_resp3() {
    let s = Servers::start();
    // Abort; RESP3 for the final reply; a script that fails to compile.
    for (hello, body, cmds) in [
        (
            false,
            "local a = 1\nreturn a",
            &[&["s"][..], &["abort"]][..],
        ),
        (
            true,
            "return {1, 2.5, redis.call('ping')}",
            &[&["r", "hello", "3"][..], &["c"]],
        ),
        (false, "return +", &[]),
        (
            false,
            "redis.call('set','x','1')\nreturn redis.call('incr','x')",
            &[&["s"][..], &["s"]],
        ),
    ] {
        let mut p = s.pair();
        if hello {
            // (HELLO's reply holds the client id, which differs.)
            p.r.cmd_str("HELLO 3");
            p.z.cmd_str("HELLO 3");
        }
        same(&mut p, &["SCRIPT", "DEBUG", "SYNC"]);
        same(&mut p, &["EVAL", body, "0"]);
        for c in cmds {
            same(&mut p, c);
        }
        let r = p.r.read_reply();
        let z = p.z.read_reply();
        assert_eq!(escape(&r), escape(&z), "final reply of {body:?}");
        both_closed(&mut p);
    }
}

#[test]
fn script_debug_replies_as_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    for args in [
        &["SCRIPT", "DEBUG", "maybe"][..],
        &["SCRIPT", "DEBUG"],
        &["SCRIPT", "DEBUG", "yes", "no"],
        &["SCRIPT", "DEBUG", "no"],
        &["SCRIPT", "HELP"],
        &["MULTI"],
        &["SCRIPT", "DEBUG", "yes"],
        &["EXEC"],
        &["SCRIPT", "DEBUG", "YES"],
        &["EVALSHA", "0000000000000000000000000000000000000000", "0"],
        &["EVALSHA", "abc", "0"],
        &[
            "EVALSHA_RO",
            "0000000000000000000000000000000000000000",
            "0",
        ],
        &["SCRIPT", "DEBUG", "no"],
        &["EVAL", "return 1", "0"],
    ] {
        same(&mut p, args);
    }
    // In a pipeline, after a reply not yet written.
    let mut p = s.pair();
    let two = [
        encode_cmd(&[b"PING"]),
        encode_cmd(&[b"SCRIPT", b"DEBUG", b"sync"]),
    ]
    .concat();
    for c in [&mut p.r, &mut p.z] {
        c.send(&two);
    }
    for _ in 0..2 {
        let r = p.r.read_reply();
        let z = p.z.read_reply();
        assert_eq!(escape(&r), escape(&z));
    }
}

#[test]
fn debug_lua_stack_overflow_guard() {
    // unit/scripting "Test scripting debug lua stack overflow".
    let s = Servers::start();
    let mut p = s.pair();
    same(&mut p, &["SCRIPT", "DEBUG", "sync"]);
    same(&mut p, &["EVAL", "return 'hello'", "0"]);
    let mut args = vec!["redis"];
    args.extend(std::iter::repeat_n("test", 100));
    let reply = same(&mut p, &args);
    assert!(
        String::from_utf8_lossy(&reply).contains("Unknown Redis command called from script"),
        "{}",
        escape(&reply)
    );
}

fn redis_cli(port: u16, file: &std::path::Path, input: &str) -> String {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--ldb-sync-mode", "--eval"])
        .arg(file)
        .args(["foo", ",", "bar"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn redis_cli_ldb_sync_mode_through_a_pipe() {
    let s = Servers::start();
    let dir = PrivateDir::new("ldb");
    let file = dir.0.join("script.lua");
    std::fs::write(
        &file,
        "local a = KEYS[1]\nlocal b = ARGV[1]\nredis.call('set', a, b)\nreturn redis.call('get', a)\n",
    )
    .expect("script file");
    let input = "s\np\nr get foo\nl\nb 4\nc\nt\nc\n";
    let r = redis_cli(s.r.port(), &file, input);
    let z = redis_cli(s.z.port(), &file, input);
    assert!(r.contains("<reply> NULL"), "{r}");
    assert_eq!(r, z);
    // Sync mode kept the script's write.
    let mut p = s.pair();
    same(&mut p, &["GET", "foo"]);
}

#[test]
fn a_session_never_holds_the_server() {
    let z = ZwindowServer::start(&["--busy-reply-threshold", "300"]);
    // The client leaves while stopped in an endless loop: the loop runs on
    // unstopped until the debugger's timeout ends it.
    let mut c = z.conn();
    c.cmd_str("SCRIPT DEBUG sync");
    c.send(&encode_cmd(&[
        b"EVAL",
        b"local i = 0\nwhile true do i = i + 1 end",
        b"0",
    ]));
    let first = c.read_reply();
    assert!(
        escape(&first).contains("Stopped at 1"),
        "{}",
        escape(&first)
    );
    drop(c);
    let mut other = z.conn();
    let start = Instant::now();
    loop {
        let r = other.cmd_str("PING");
        if r == b"+PONG\r\n" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", escape(&r));
        std::thread::sleep(Duration::from_millis(100));
    }

    // SCRIPT KILL ends a session waiting for its client's input.
    let mut c = z.conn();
    c.cmd_str("SCRIPT DEBUG sync");
    c.send(&encode_cmd(&[b"EVAL", b"return 1", b"0"]));
    c.read_reply();
    let mut other = z.conn();
    let start = Instant::now();
    loop {
        let r = other.cmd_str("SCRIPT KILL");
        if r == b"+OK\r\n" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "{}", escape(&r));
        std::thread::sleep(Duration::from_millis(100));
    }
    let end = c.read_reply();
    assert!(escape(&end).contains("<endsession>"), "{}", escape(&end));
    let killed = c.read_reply();
    assert!(
        escape(&killed).contains("Script killed"),
        "{}",
        escape(&killed)
    );
    assert_eq!(other.cmd_str("PING"), b"+PONG\r\n");
}

#[test]
fn yes_mode_serves_others_and_drops_the_sessions_writes() {
    // Redis forks; zwindow copies the data: same contract either way.
    let s = Servers::start();
    let mut other = s.pair();
    same(&mut other, &["SET", "k", "orig"]);
    let mut p = s.pair();
    same(&mut p, &["SCRIPT", "DEBUG", "yes"]);
    same(
        &mut p,
        &[
            "EVAL",
            "redis.call('set', KEYS[1], 'new')\nredis.call('set', 'k2', 'x')\nreturn redis.call('get', KEYS[1])",
            "1",
            "k",
        ],
    );
    same(&mut p, &["s"]);
    same(&mut p, &["r", "get", "k"]);
    // The session is stopped: other clients, and their scripts, run.
    same(&mut other, &["GET", "k"]);
    same(
        &mut other,
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "k"],
    );
    same(&mut other, &["SET", "k3", "v"]);
    same(&mut p, &["c"]);
    let r = p.r.read_reply();
    let z = p.z.read_reply();
    assert_eq!(escape(&r), escape(&z));
    both_closed(&mut p);
    // The session's writes are gone; the others' stay.
    assert_eq!(same(&mut other, &["GET", "k"]), b"$4\r\norig\r\n");
    same(&mut other, &["EXISTS", "k2"]);
    same(&mut other, &["GET", "k3"]);
}
