//! Redis 7.0 functions: differential tests against redis-server 7.0 (FUNCTION
//! LOAD/LIST/DELETE/FLUSH/STATS/HELP, FCALL and FCALL_RO with keys, args and
//! reply conversions, every load and call error) in RESP2 and RESP3, and
//! FUNCTION STATS / FUNCTION KILL around a running function.
//!
//! Redis lists libraries and a library's functions in hash-table order
//! (random per process), zwindow in name order: listings compared here hold
//! one library, or libraries with one function, compared as multisets.
mod common;

use std::time::{Duration, Instant};

use common::*;

fn load(p: &mut Pair, code: &str) -> Vec<u8> {
    p.check(&[b"FUNCTION", b"LOAD", code.as_bytes()])
}

/// Libraries that fail to load, each with the error Redis gives.
const BAD_LIBRARIES: &[&str] = &[
    "return 1",
    "#!lua name=bad",
    "#!lua name=bad\n",
    "#!lua name=bad\nlocal x = 1",
    "#!lua\nreturn",
    "#!lua name=bad foo=bar\nreturn",
    "#!lua name=bad name=other\nreturn",
    "#!luax name=bad\nreturn",
    "#!lua name=bad-name\nreturn",
    "#!lua name=\nreturn",
    "#!lua name=bad\nredis.register_function('x', function() return 1 end",
    "#!lua name=bad\nredis.register_function('x', function() return 1 end, 3)",
    "#!lua name=bad\nredis.register_function()",
    "#!lua name=bad\nredis.register_function('x')",
    "#!lua name=bad\nredis.register_function({}, function() end)",
    "#!lua name=bad\nredis.register_function('x', 1)",
    "#!lua name=bad\nredis.register_function('x y', function() end)",
    "#!lua name=bad\nredis.register_function('', function() end)",
    "#!lua name=bad\nredis.register_function('g', function() end)\nredis.register_function('g', function() end)",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=function() end, flags={'bad'}}",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=function() end, flags={1}}",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=function() end, flags='no-writes'}",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=function() end, foo=1}",
    "#!lua name=bad\nredis.register_function{function_name='x'}",
    "#!lua name=bad\nredis.register_function{callback=function() end}",
    "#!lua name=bad\nredis.register_function{function_name={}, callback=function() end}",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=1}",
    "#!lua name=bad\nredis.register_function{function_name='x', callback=function() end, description={}}",
    "#!lua name=bad\nredis.call('ping')",
    "#!lua name=bad\nlocal x = string.len('a')",
    "#!lua name=bad\nerror('boom')",
    "#!lua name=bad\nredis.setresp(3)",
    "#!lua name=bad\nx = 5",
    "#!lua name=bad\nprint(1)",
    "#!lua name=bad\nredis.register_function('x', function() end)\nlocal t = KEYS",
    "#!lua name=bad\nwhile true do end",
    "#!lua name=\"bad\nreturn",
    "#!lua name=\"bad\"x\nreturn",
    "#!lua name=bad\tx\nreturn",
];

/// Function bodies whose FCALL replies are compared (called with keys
/// `k1 k2` and args `a1 a2 a3`).
const BODIES: &[&str] = &[
    "return 1",
    "return 3.99",
    "return 'x'",
    "return true",
    "return false",
    "return nil",
    "return {1, 2, 3.9, 'x', true, false, nil, 4}",
    "return {1, {2, {3, 'deep'}}, {}}",
    "return {ok = 'FINE'}",
    "return {err = 'My Error'}",
    "return {err = 'WRONG thing'}",
    "return redis.error_reply('x y')",
    "return {double = 3.5}",
    "return {map = {a = 1}}",
    "return {set = {a = true}}",
    "return keys",
    "return args",
    "return {#keys, #args}",
    "return {keys[2], args[3]}",
    "return redis.call('set', keys[1], args[1])",
    "return redis.call('get', keys[1])",
    "return redis.call('incr', keys[2])",
    "return redis.call('hset', keys[2], 'f', 'v')",
    "return redis.pcall('incr', 'nokey', 'extra')",
    "return redis.call('ping', 'a', 'b')",
    "return KEYS",
    "return x",
    "y = 1",
    "return redis.register_function",
    "return redis.setresp(3)",
    "redis.setresp(3) return redis.call('hgetall', 'h')",
    "redis.setresp(3) return {double = 0.1}",
    "return string.format('%d-%s', #args, args[1])",
    "return cjson.encode({a = 1})",
    "error('boom')",
    "error({err = 'CUSTOM err'})",
];

fn load_and_call(resp3: bool) {
    let (_s, mut p) = start_pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    for code in BAD_LIBRARIES {
        load(&mut p, code);
    }
    p.check_str("HSET h a 1");
    for (i, body) in BODIES.iter().enumerate() {
        let code = format!(
            "#!lua name=lib{i}\nredis.register_function('f{i}', function(keys, args) {body} end)"
        );
        assert_eq!(
            load(&mut p, &code),
            format!("${}\r\nlib{i}\r\n", 3 + i.to_string().len()).into_bytes()
        );
        let name = format!("f{i}");
        p.check(&[
            b"FCALL",
            name.as_bytes(),
            b"2",
            b"k1",
            b"k2",
            b"a1",
            b"a2",
            b"a3",
        ]);
        p.check(&[b"FCALL", name.to_uppercase().as_bytes(), b"0"]);
        p.check(&[b"FCALL_RO", name.as_bytes(), b"0"]);
    }
    // Every library holds one function: comparable as a multiset.
    p.check_unordered_str("FUNCTION LIST");
    p.check_unordered_str("FUNCTION LIST WITHCODE");
    p.check_str("FUNCTION LIST LIBRARYNAME lib1");
    p.check_str("FUNCTION LIST WITHCODE LIBRARYNAME lib2");
    p.check_str("FUNCTION LIST LIBRARYNAME lib3 WITHCODE");
    p.check_unordered_str("FUNCTION LIST LIBRARYNAME lib1*");
    p.check_str("FUNCTION LIST LIBRARYNAME LIB1");
    p.check_str("FUNCTION LIST LIBRARYNAME nothing*");
    p.check_str("FUNCTION STATS");
    p.check_str("FUNCTION DELETE lib0");
    p.check_str("FUNCTION DELETE lib0");
    p.check_str("FCALL f0 0");
    p.check_str("FUNCTION STATS");
    p.check_str("FUNCTION FLUSH");
    p.check_str("FUNCTION LIST");
    p.check_str("FUNCTION STATS");
    p.check_str("FCALL f1 0");
}

#[test]
fn load_and_call_resp2() {
    load_and_call(false);
}

#[test]
fn load_and_call_resp3() {
    load_and_call(true);
}

fn flags_and_replace(resp3: bool) {
    let (_s, mut p) = start_pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    load(
        &mut p,
        "#!lua name=ro\nredis.register_function{function_name='rget', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}",
    );
    load(
        &mut p,
        "#!lua name=rw\nredis.register_function('wset', function(keys, args) return redis.call('set', keys[1], args[1]) end)",
    );
    load(
        &mut p,
        "#!lua name=ro2\nredis.register_function{function_name='rset', callback=function(keys, args) return redis.call('set', keys[1], args[1]) end, flags={'NO-WRITES'}}",
    );
    load(
        &mut p,
        "#!lua name=allflags\nredis.register_function{function_name='af', callback=function() return 1 end, flags={'allow-cross-slot-keys', 'no-cluster', 'allow-stale', 'allow-oom', 'no-writes'}, description=42}",
    );
    p.script(&[
        "FCALL wset 1 k v",
        "FCALL rget 1 k",
        "FCALL_RO rget 1 k",
        "FCALL_RO wset 1 k v2",
        "FCALL rset 1 k v3",
        "FCALL_RO rset 1 k v3",
        "FCALL af 0",
        "FCALL_RO af 0",
        "GET k",
        "FUNCTION LIST LIBRARYNAME ro",
        "FUNCTION LIST LIBRARYNAME allflags WITHCODE",
        "FUNCTION LIST LIBRARYNAME rw",
        // Errors of FCALL.
        "FCALL nope 0",
        "FCALL nope x",
        "FCALL wset x",
        "FCALL wset -1",
        "FCALL wset 2 k",
        "FCALL wset 1.5 k",
        "FCALL wset",
        "FCALL_RO wset 5",
        // REPLACE and name collisions.
        "FUNCTION LOAD \"#!lua name=rw\nredis.register_function('x', function() return 1 end)\"",
        "FUNCTION LOAD \"#!lua name=other\nredis.register_function('wset', function() return 1 end)\"",
        "FUNCTION LOAD \"#!lua name=other\nredis.register_function('WSET', function() return 1 end)\"",
        "FUNCTION LOAD REPLACE \"#!lua name=other\nredis.register_function('rget', function() return 1 end)\"",
        "FUNCTION LOAD REPLACE \"#!lua name=rw\nredis.register_function('wset2', function() return 2 end)\"",
        "FCALL wset 1 k v",
        "FCALL wset2 0",
        "FUNCTION LIST LIBRARYNAME rw WITHCODE",
        "FUNCTION LOAD REPLACE \"#!lua name=rw\nredis.register_function('wset2', function() return 3 end\"",
        "FCALL wset2 0",
        "FUNCTION LOAD REPLACE \"#!lua name=rw\n\"",
        "FCALL wset2 0",
        "FUNCTION LOAD REPLACE REPLACE \"#!lua name=rw\nredis.register_function('wset2', function() return 4 end)\"",
        "FCALL wset2 0",
        "FUNCTION LOAD foo \"#!lua name=rw\nredis.register_function('wset2', function() return 4 end)\"",
        "FUNCTION LOAD REPLACE",
        "FUNCTION LOAD",
        // Other argument errors.
        "FUNCTION DELETE",
        "FUNCTION DELETE a b",
        "FUNCTION DELETE nolib",
        "FUNCTION FLUSH foo",
        "FUNCTION FLUSH SYNC ASYNC",
        "FUNCTION LIST LIBRARYNAME",
        "FUNCTION LIST foo",
        "FUNCTION LIST WITHCODE WITHCODE",
        "FUNCTION LIST LIBRARYNAME a LIBRARYNAME b",
        "FUNCTION FOO",
        "FUNCTION KILL",
        "FUNCTION HELP",
        "FUNCTION STATS",
        "FUNCTION STATS x",
        // Functions are not reachable from EVAL, nor registration.
        "EVAL \"redis.register_function('f', function() return 1 end)\" 0",
        "EVAL \"return redis.register_function\" 0",
        "FUNCTION FLUSH ASYNC",
        "FUNCTION STATS",
        "FUNCTION FLUSH sync",
    ]);
}

#[test]
fn flags_and_replace_resp2() {
    flags_and_replace(false);
}

#[test]
fn flags_and_replace_resp3() {
    flags_and_replace(true);
}

#[test]
fn functions_in_multi() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "MULTI",
        "FUNCTION LOAD \"#!lua name=m\nredis.register_function('mf', function(keys, args) return redis.call('incr', keys[1]) end)\"",
        "FCALL mf 1 c",
        "FCALL mf 1 c",
        "EXEC",
        "GET c",
    ]);
}

/// Sends `FUNCTION RESTORE <each server's own payload> <extra...>` to both
/// servers and requires the same reply.
fn restore_own(p: &mut Pair, dr: &[u8], dz: &[u8], extra: &[&[u8]]) -> Vec<u8> {
    let mut ra: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", dr];
    ra.extend_from_slice(extra);
    let mut za: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", dz];
    za.extend_from_slice(extra);
    let r = p.r.cmd(&ra);
    let z = p.z.cmd(&za);
    assert_eq!(escape(&r), escape(&z), "RESTORE {:?}", extra);
    r
}

/// FUNCTION DUMP/RESTORE use Redis's payload format: a dump from either
/// server restores into the other; policies and errors match. (Dumps are not
/// byte-identical: Redis LZF-compresses long strings and lists libraries in
/// hash order; zwindow writes plain strings in name order.) zwindow writes
/// Redis 8.0's payload version under `rdb-version 12` (its default, 10,
/// keeps dumps restorable into Redis 7.0).
#[test]
fn dump_and_restore_interoperate_with_redis() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    p.z.cmd_str("CONFIG SET rdb-version 12");
    let lib = |name: &str| {
        format!(
            "#!lua name={name}\nredis.register_function('{name}_f', function(keys, args) return '{name}' end)"
        )
    };
    let empty = p.z.cmd_str("FUNCTION DUMP");
    assert_eq!(
        escape(&empty),
        escape(&p.r.cmd_str("FUNCTION DUMP")),
        "empty dumps are identical"
    );
    for name in ["alpha", "beta"] {
        let code = lib(name);
        p.check(&[b"FUNCTION", b"LOAD", code.as_bytes()]);
    }
    let dr = parse_reply(&p.r.cmd_str("FUNCTION DUMP")).bulk().to_vec();
    let dz = parse_reply(&p.z.cmd_str("FUNCTION DUMP")).bulk().to_vec();
    p.check_str("FUNCTION FLUSH");
    restore_own(&mut p, &dr, &dz, &[]);
    p.check_str("FCALL alpha_f 0");
    // APPEND fails on the first library of the dump that exists already:
    // Redis lists them in its dict's order, seeded at random per process,
    // so which name its error quotes varies from run to run.
    for policy in [&b"APPEND"[..], b"append"] {
        for (server, dump) in [(&mut p.r, &dr), (&mut p.z, &dz)] {
            let reply = server.cmd(&[b"FUNCTION", b"RESTORE", dump, policy]);
            assert!(
                [&b"alpha"[..], b"beta"].iter().any(|name| {
                    reply == [&b"-ERR Library "[..], name, b" already exists\r\n"].concat()
                }),
                "{}",
                escape(&reply)
            );
        }
    }
    for policy in [&b"REPLACE"[..], b"FLUSH", b"BOGUS"] {
        restore_own(&mut p, &dr, &dz, &[policy]);
    }
    restore_own(&mut p, &dr, &dz, &[b"FLUSH", b"x"]);
    let (mut bad_r, mut bad_z) = (dr.clone(), dz.clone());
    bad_r[4] ^= 0x20;
    bad_z[4] ^= 0x20;
    restore_own(&mut p, &bad_r, &bad_z, &[]);
    p.check(&[b"FUNCTION", b"RESTORE", b"garbage"]);
    p.check(&[b"FUNCTION", b"RESTORE", b""]);
    // One library at a time: Redis lists them in its randomly seeded
    // dict's order.
    p.check_str("FUNCTION LIST LIBRARYNAME alpha");
    p.check_str("FUNCTION LIST LIBRARYNAME beta");
    // Each server restores the other's dump and runs it.
    p.check_str("FUNCTION FLUSH");
    assert_eq!(p.z.cmd(&[b"FUNCTION", b"RESTORE", &dr]), b"+OK\r\n");
    assert_eq!(p.r.cmd(&[b"FUNCTION", b"RESTORE", &dz]), b"+OK\r\n");
    p.check_str("FCALL beta_f 0");
    // A long library (Redis compresses it with LZF) crosses over too.
    let long = format!("{}\n-- {}", lib("gamma"), "x".repeat(5000));
    p.check(&[b"FUNCTION", b"LOAD", long.as_bytes()]);
    let dr = parse_reply(&p.r.cmd_str("FUNCTION DUMP")).bulk().to_vec();
    let dz = parse_reply(&p.z.cmd_str("FUNCTION DUMP")).bulk().to_vec();
    p.check_str("FUNCTION FLUSH");
    assert_eq!(p.z.cmd(&[b"FUNCTION", b"RESTORE", &dr]), b"+OK\r\n");
    assert_eq!(p.r.cmd(&[b"FUNCTION", b"RESTORE", &dz]), b"+OK\r\n");
    p.check_str("FCALL gamma_f 0");
    p.check_str("FUNCTION LIST WITHCODE LIBRARYNAME gamma");
}

/// A running function: other clients get BUSY naming FUNCTION KILL, FUNCTION
/// STATS describes it, SCRIPT KILL refuses, FUNCTION KILL stops it.
#[test]
fn stats_and_kill_running_function() {
    let s = Servers::start();
    for (name, mut runner, mut other) in [
        ("redis", s.r.conn(), s.r.conn()),
        ("zwindow", s.z.conn(), s.z.conn()),
    ] {
        assert_eq!(
            other.cmd_str("CONFIG SET busy-reply-threshold 100"),
            b"+OK\r\n"
        );
        let code = "#!lua name=loop\nredis.register_function('lp', function() local x = 0 while true do x = x + 1 end end)";
        assert_eq!(
            runner.cmd(&[b"FUNCTION", b"LOAD", code.as_bytes()]),
            b"$4\r\nloop\r\n"
        );
        runner.send(&encode_cmd(&[b"FCALL", b"lp", b"0", b"arg"]));
        let start = Instant::now();
        loop {
            let r = other.cmd_str("PING");
            if r.starts_with(b"-BUSY") {
                assert_eq!(
                    r,
                    b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n",
                    "{name}"
                );
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{name}: never busy"
            );
        }
        let stats = other.cmd_str("FUNCTION STATS");
        let text = String::from_utf8_lossy(&stats).into_owned();
        assert!(
            text.starts_with("*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$2\r\nlp\r\n$7\r\ncommand\r\n*4\r\n$5\r\nFCALL\r\n$2\r\nlp\r\n$1\r\n0\r\n$3\r\narg\r\n$11\r\nduration_ms\r\n:"),
            "{name}: {text}"
        );
        assert!(text.ends_with("$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n"), "{name}: {text}");
        assert_eq!(
            other.cmd_str("SCRIPT KILL"),
            b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n",
            "{name}"
        );
        assert_eq!(other.cmd_str("FUNCTION KILL"), b"+OK\r\n", "{name}");
        assert_eq!(
            runner.read_reply(),
            b"-ERR Script killed by user with SCRIPT KILL... script: lp, on @user_function:2.\r\n",
            "{name}"
        );
        assert_eq!(other.cmd_str("PING"), b"+PONG\r\n", "{name}");
        assert_eq!(
            other.cmd_str("FUNCTION KILL"),
            b"-NOTBUSY No scripts in execution right now.\r\n",
            "{name}"
        );
        // An EVAL script: FUNCTION STATS and KILL answer SCRIPT KILL's BUSY.
        runner.send(&encode_cmd(&[
            b"EVAL",
            b"local x = 0 while true do x = x + 1 end",
            b"0",
        ]));
        let eval_busy: &[u8] =
            b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
        let start = Instant::now();
        while other.cmd_str("PING") != eval_busy {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{name}: never busy"
            );
        }
        assert_eq!(other.cmd_str("FUNCTION STATS"), eval_busy, "{name}");
        assert_eq!(other.cmd_str("FUNCTION KILL"), eval_busy, "{name}");
        assert_eq!(other.cmd_str("SCRIPT KILL"), b"+OK\r\n", "{name}");
        let killed = runner.read_reply();
        assert!(
            killed.starts_with(b"-ERR Script killed by user with SCRIPT KILL..."),
            "{name}: {}",
            escape(&killed)
        );
    }
}

/// Libraries that load: what their top level may use, and what their
/// functions see when called.
#[test]
fn load_time_environment() {
    let (_s, mut p) = start_pair();
    for code in [
        "#!lua name=a\nlocal function helper(x) return x * 2 end\nredis.register_function('dbl', function(keys, args) return helper(tonumber(args[1])) end)",
        "#!lua name=b\nredis.log(redis.LOG_WARNING, 'loading b')\nlocal v = redis.REDIS_VERSION_NUM\nredis.register_function('ver', function() return {redis.REDIS_VERSION, v} end)\nreturn 5",
        "#!lua name=c\nlocal f = function(keys, args) return string.rep(args[1], 3) end\nredis.register_function{function_name='rep', callback=f, description='repeats'}\nredis.register_function{FUNCTION_NAME='rep2', CALLBACK=f, FLAGS={}}",
        "#!lua name=d\nlocal count = 0\nredis.register_function('counter', function() count = count + 1 return count end)",
        "#!lua name=\"quoted\"\nredis.register_function('qf', function() return 1 end)",
        "#!lua \"name=q2\"\nredis.register_function('qf2', function() return 1 end)",
        "#!lua name=e\nredis.register_function(12, function() return 'twelve' end)",
        "#!lua name=f\nredis.register_function('inner', function() return redis.register_function('x', function() end) end)",
    ] {
        load(&mut p, code);
    }
    p.script(&[
        "FCALL dbl 0 21",
        "FCALL ver 0",
        "FCALL rep 0 ab",
        "FCALL rep2 0 ab",
        "FCALL counter 0",
        "FCALL counter 0",
        "FCALL 12 0",
        "FCALL inner 0",
        "FUNCTION LIST LIBRARYNAME e",
        "FUNCTION LIST LIBRARYNAME quoted",
        "FCALL qf2 0",
        "FUNCTION LIST LIBRARYNAME d WITHCODE",
        "FUNCTION STATS",
        "FUNCTION DELETE c",
        "FUNCTION STATS",
    ]);
    // INFO's function counters.
    for key in ["number_of_functions:", "number_of_libraries:"] {
        let (r, z) = p.both_str("INFO memory");
        let line = |reply: &[u8]| {
            String::from_utf8_lossy(reply)
                .lines()
                .find(|l| l.starts_with(key))
                .map(str::to_owned)
        };
        assert!(line(&r).is_some(), "{key}");
        assert_eq!(line(&r), line(&z), "{key}");
    }
}
