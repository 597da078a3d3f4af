//! Lua scripting: differential tests against redis-server 7.0 (EVAL family,
//! conversions in RESP2 and RESP3, errors, sandbox, bit library, script
//! cache), a concurrency test of atomic read-modify-write scripts across
//! shards, and the BUSY / SCRIPT KILL behaviour of a long script.
mod common;

use std::time::{Duration, Instant};

use common::*;

/// EVAL `body` with `numkeys` and the rest on both servers; replies must match.
fn ev(p: &mut Pair, body: &str, rest: &[&str]) -> Vec<u8> {
    let mut args: Vec<&[u8]> = vec![b"EVAL", body.as_bytes()];
    args.extend(rest.iter().map(|s| s.as_bytes()));
    p.check(&args)
}

const CONVERSIONS: &[&str] = &[
    "return 1",
    "return 3.99",
    "return -3.99",
    "return 'x'",
    "return ''",
    "return true",
    "return false",
    "return nil",
    "return {1, 2, 3.9, 'x', true, false, nil, 4}",
    "return {1, {2, {3, 'deep'}}, {}}",
    "return {ok = 'FINE'}",
    "return {ok = 'a\\r\\nb'}",
    "return {err = 'My Error'}",
    "return {err = 'WRONG thing'}",
    "return {err = 12}",
    "return {ok = 12}",
    "return redis.status_reply('QUEUED')",
    "return redis.error_reply('x y')",
    "return redis.error_reply('-x')",
    "return redis.error_reply('My')",
    "return redis.error_reply(1)",
    "return redis.status_reply()",
    "return {double = 3.5}",
    "return {map = {a = 1}}",
    "return {set = {a = true}}",
    "return {big_number = '123456789012345678901234567890'}",
    "return redis.call('set', 'k', 1.5)",
    "return redis.call('get', 'k')",
    "return redis.call('set', 'k2', 0.1)",
    "return redis.call('get', 'k2')",
    "return redis.call('get', 'nokey')",
    "return {redis.call('get', 'nokey'), 'after'}",
    "return type(redis.call('get', 'nokey'))",
    "return redis.call('ping')",
    "return redis.call('ping').ok",
    "return redis.pcall('ping', 'a', 'b')",
    "return redis.pcall('ping', 'a', 'b').err",
    "return redis.call('del', 'k', 'k2', 3)",
    "return redis.call('exists', 'nokey')",
    "return type(redis.call('exists', 'nokey'))",
    "return redis.call('keys', 'nothing*')",
    "return #redis.call('time')",
    "return redis.call('time')[1] == redis.call('time')[1]",
    "redis.setresp(3) return redis.call('get', 'nokey')",
    "redis.setresp(3) return type(redis.call('get', 'nokey'))",
    "redis.setresp(3) return true",
    "redis.setresp(3) return false",
    "redis.setresp(3) return {double = 2.5}",
    "redis.setresp(3) return {map = {x = 'y'}}",
    "return {tostring(1e15), tostring(0.1), 2^53}",
    "return tonumber('0x10')",
    "return string.format('%5.2f', 3.14159)",
    "return #KEYS + #ARGV",
];

#[test]
fn conversions_resp2() {
    let (_s, mut p) = start_pair();
    for body in CONVERSIONS {
        ev(&mut p, body, &["0"]);
    }
    ev(
        &mut p,
        "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2]}",
        &["2", "a", "b", "c", "d"],
    );
    ev(
        &mut p,
        "return redis.call('set', KEYS[1], ARGV[1])",
        &["1", "kk", "vv"],
    );
    ev(&mut p, "return redis.call('get', KEYS[1])", &["1", "kk"]);
}

#[test]
fn conversions_resp3() {
    let (_s, mut p) = start_pair();
    // HELLO's reply names the server: not compared.
    p.both_str("HELLO 3");
    for body in CONVERSIONS {
        ev(&mut p, body, &["0"]);
    }
}

/// DEBUG PROTOCOL's RESP3 types as a script sees them (DEBUG is allowed
/// in scripts once `DEBUG SET-DISABLE-DENY-SCRIPTS 1`), the attribute
/// skipped as Redis's parser skips it.
#[test]
fn debug_protocol_types_in_scripts() {
    let s = Servers::start_with(&["--enable-debug-command", "yes"]);
    let mut p = s.pair();
    p.both_str("DEBUG SET-DISABLE-DENY-SCRIPTS 1");
    for kind in [
        "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "true",
        "false", "verbatim",
    ] {
        for resp in ["2", "3"] {
            ev(
                &mut p,
                &format!("redis.setresp({resp}) return redis.call('debug', 'protocol', '{kind}')"),
                &["0"],
            );
        }
    }
}

/// Lua 5.1 gives a C function 8,000 stack slots: Redis's `redis.call`
/// takes 7,999 arguments (its TCL "Script check unpack with massive
/// arguments"), and 8,000 fail in `unpack` on both servers.
#[test]
fn a_call_with_7999_arguments() {
    let (_s, mut p) = start_pair();
    for (n, call) in [(7999, "call"), (7998, "pcall"), (8000, "call")] {
        let body = format!(
            "local a = {{}} for i=1,{n} do a[i] = i end \
             return redis.{call}('lpush', KEYS[1], unpack(a))"
        );
        ev(&mut p, &body, &["1", "l"]);
    }
    ev(
        &mut p,
        "local a = {} for i=1,7998 do a[i] = 'k'..i end a[500] = {} \
         return redis.pcall('del', unpack(a))",
        &["0"],
    );
    ev(
        &mut p,
        "local a = {} for i=1,7998 do a[i] = 'k'..i end \
         return redis.acl_check_cmd('del', unpack(a))",
        &["0"],
    );
    p.check_str("LLEN l");
}

#[test]
fn errors_and_error_tables() {
    let (_s, mut p) = start_pair();
    p.check_str("SET s foo");
    for body in [
        "return x",
        "x = 1",
        "KEYS = 1",
        "return redis.call('nosuch')",
        "return redis.pcall('nosuch')",
        "local x = redis.call('nosuch') return x",
        "return redis.call('get')",
        "return redis.call('get', 's', 'x')",
        "return redis.call()",
        "return redis.call({})",
        "return redis.pcall({})",
        "return redis.call('object', 'foo', 'k')",
        "return redis.call('object')",
        "return redis.call('shutdown')",
        "return redis.call('eval', 'return 1', 0)",
        "return redis.call('script', 'load', 'return 1')",
        "error('boom')",
        "error({err = 'BAD thing'})",
        "error()",
        "error(12)",
        "return {pcall(error, {err = 'X y'})}",
        "return {pcall(redis.call, 'nosuch')}",
        "return {pcall(error, 'x')}",
        "return 1 +",
        "return redis.sha1hex()",
        "return redis.sha1hex('abc')",
        "return redis.setresp(4)",
        "return redis.setresp()",
        "return redis.log('a')",
        "return redis.log('x', 'a')",
        "return redis.log(9, 'a')",
        "return redis.log(redis.LOG_WARNING, 'hello', 1, {})",
        "return redis.set_repl(redis.REPL_ALL)",
        "return redis.set_repl(7)",
        "return redis.replicate_commands()",
        "return {redis.REPL_ALL, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_NONE, redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
        "#!lua\nreturn x",
        "#!lua flags=no-writes\nreturn redis.call('set', 'a', 1)",
        "#!lua flags=no-writes\nreturn redis.call('get', 's')",
        "#!lua flags=foo\nreturn 1",
        "#!luax\nreturn 1",
    ] {
        ev(&mut p, body, &["0"]);
    }
    p.script(&[
        "EVAL \"return 1\" -1",
        "EVAL \"return 1\" 2 a",
        "EVAL \"return 1\" abc",
        "EVAL_RO \"return redis.call('set', 'a', 1)\" 0",
        "EVAL_RO \"return redis.call('get', 's')\" 0",
        "EVAL",
        "EVAL \"return 1\"",
    ]);
}

#[test]
fn sandbox() {
    let (_s, mut p) = start_pair();
    for body in [
        "return io",
        "return print",
        "return loadfile",
        "return dofile",
        "return require",
        "return debug",
        "string.x = 1",
        "redis.call = nil",
        "rawset(_G, 'x', 1)",
        "setmetatable(_G, nil)",
        "return getmetatable('').__index == string",
        "return type(_G)",
        "return _G.redis == redis",
        "local n = 0 for k in pairs(redis) do n = n + 1 end return n > 10",
        "return loadstring('return 1')()",
        // Bytecode never loads: it fails as source text would.
        "return {loadstring(string.dump(function() return 1 end))}",
        "return loadstring(string.dump(function() return 1 end))()",
        "return {loadstring(string.dump(function() return 1 end), 'name')}",
        "return {loadstring(string.char(27) .. 'x\\ny')}",
        "return coroutine.wrap(function() coroutine.yield(5) end)()",
        "return tostring(math.random())",
        "return {math.random(100), math.random(5, 10)}",
        "return math.random(0)",
        "local t = {} t.x = 1 return t.x",
    ] {
        ev(&mut p, body, &["0"]);
    }
}

#[test]
fn bit_library() {
    let (_s, mut p) = start_pair();
    for body in [
        "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(7, 2), bit.bnot(0), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(1, 33), bit.ror(1, 1), bit.tobit(2^32 + 5), bit.tohex(255), bit.tohex(-1, 3)}",
        "return bit.tohex(65535, -4)",
        "return bit.tohex(65535, -2147483648)",
        "return bit.tohex(65535, 0)",
        "return bit.tohex(65535, 2147483647)",
        "return bit.bswap(0x12345678)",
        "return bit.band()",
        "return bit.band('x')",
        "return bit.tobit('12')",
    ] {
        ev(&mut p, body, &["0"]);
    }
}

#[test]
fn script_cache() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SCRIPT LOAD \"return 'loaded'\"",
        "SCRIPT EXISTS 7d1bbfd3c2e5c4d7b2d1a9e5d6ea1bd2c3c5c1e1 0000000000000000000000000000000000000000",
        "EVALSHA 0000000000000000000000000000000000000000 0",
        "EVALSHA short 0",
        "EVALSHA_RO 0000000000000000000000000000000000000000 0",
        "SCRIPT LOAD \"return 1 +\"",
        "SCRIPT FLUSH BAD",
        "SCRIPT FLUSH SYNC extra",
        "SCRIPT KILL",
        "SCRIPT HELP",
        "SCRIPT NOPE",
        "SCRIPT",
    ]);
    let sha = parse_reply(&p.check_str("SCRIPT LOAD \"return {ARGV[1], KEYS[1]}\""))
        .bulk()
        .to_vec();
    let sha = String::from_utf8(sha).unwrap();
    p.check_str(&format!("SCRIPT EXISTS {sha} {} nope", sha.to_uppercase()));
    p.check_str(&format!("EVALSHA {sha} 1 k a"));
    p.check_str(&format!("EVALSHA {} 1 k a", sha.to_uppercase()));
    p.check_str(&format!("EVALSHA_RO {sha} 1 k a"));
    p.check_str("EVAL \"return 'via eval'\" 0");
    p.check_str("SCRIPT EXISTS 2b6ea2ab3ba2c4b8c6b7d3f1c41d8c0f7a4e4b2e");
    p.check_str("SCRIPT FLUSH");
    p.check_str(&format!("SCRIPT EXISTS {sha}"));
    p.check_str(&format!("EVALSHA {sha} 1 k a"));
    p.check_str("SCRIPT FLUSH ASYNC");
    // INFO reports the cache.
    let info = p.z.cmd_str("INFO memory");
    let text = String::from_utf8_lossy(&info).into_owned();
    assert!(text.contains("number_of_cached_scripts:0"), "{text}");
    p.z.cmd_str("SCRIPT LOAD \"return 2\"");
    let text = String::from_utf8_lossy(&p.z.cmd_str("INFO memory")).into_owned();
    assert!(text.contains("number_of_cached_scripts:1"), "{text}");
    assert!(text.contains("used_memory_scripts:"), "{text}");
}

/// Scripts doing GET-compute-SET on keys of different shards from 8
/// clients end with exact totals: each script holds every shard.
#[test]
fn concurrent_read_modify_write_scripts_are_atomic() {
    let s = ZwindowServer::start(&[]);
    let keys = ["{a}cnt", "other-counter", "x:1", "zz-total"];
    const CLIENTS: usize = 8;
    const ROUNDS: usize = 150;
    let body = "for i, k in ipairs(KEYS) do \
                  local v = tonumber(redis.call('get', k) or '0') \
                  redis.call('set', k, v + i) \
                end return 1";
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let addr = s.addr();
            std::thread::spawn(move || {
                let mut conn = RawConn::connect(addr, "rmw");
                for r in 0..ROUNDS {
                    let mut args: Vec<&[u8]> = vec![b"EVAL", body.as_bytes(), b"4"];
                    args.extend(keys.iter().map(|k| k.as_bytes()));
                    assert_eq!(conn.cmd(&args), b":1\r\n");
                    // Plain commands from the same clients interleave freely.
                    let own = format!("plain:{c}");
                    let val = r.to_string();
                    conn.cmd(&[b"SET", own.as_bytes(), val.as_bytes()]);
                    assert_eq!(
                        conn.cmd(&[b"GET", own.as_bytes()]),
                        format!("${}\r\n{val}\r\n", val.len()).into_bytes()
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut conn = s.conn();
    for (i, k) in keys.iter().enumerate() {
        let want = ((i + 1) * CLIENTS * ROUNDS).to_string();
        assert_eq!(
            conn.cmd(&[b"GET", k.as_bytes()]),
            format!("${}\r\n{want}\r\n", want.len()).into_bytes(),
            "key {k}"
        );
    }
}

/// A script past busy-reply-threshold makes other clients get BUSY, SCRIPT
/// KILL stops it, and the caller sees Redis's kill error; same on both.
#[test]
fn busy_script_and_script_kill() {
    let servers = Servers::start();
    let body = "while true do end";
    let mut results = Vec::new();
    for addr in [servers.r.addr(), servers.z.addr()] {
        let mut admin = RawConn::connect(addr, "admin");
        assert_eq!(
            admin.cmd_str("CONFIG SET busy-reply-threshold 1000"),
            b"+OK\r\n"
        );
        let mut runner = RawConn::connect(addr, "runner");
        runner.set_timeout(Duration::from_secs(10));
        runner.send(&encode_cmd(&[b"EVAL", body.as_bytes(), b"0"]));
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(200));
        // Before the threshold another client waits; after it, BUSY.
        let mut other = RawConn::connect(addr, "other");
        other.set_timeout(Duration::from_secs(10));
        let busy = other.cmd_str("GET somekey");
        assert!(started.elapsed() >= Duration::from_millis(900));
        let ping = other.cmd_str("PING");
        let kill = admin.cmd_str("SCRIPT KILL");
        let killed = runner.read_reply();
        let after = other.cmd_str("PING");
        let notbusy = admin.cmd_str("SCRIPT KILL");
        results.push((busy, ping, kill, killed, after, notbusy));
    }
    let (r, z) = (&results[0], &results[1]);
    assert_eq!(escape(&r.0), escape(&z.0));
    assert!(r.0.starts_with(b"-BUSY Redis is busy running a script."));
    assert_eq!(escape(&r.1), escape(&z.1));
    assert_eq!(escape(&r.2), escape(&z.2));
    assert_eq!(z.2, b"+OK\r\n");
    assert_eq!(escape(&r.3), escape(&z.3));
    assert!(z.3.starts_with(b"-ERR Script killed by user with SCRIPT KILL..."));
    assert_eq!(z.4, b"+PONG\r\n");
    assert_eq!(escape(&r.5), escape(&z.5));
}

/// A script that wrote holds the server: SHUTDOWN is refused with BUSY,
/// SHUTDOWN NOSAVE ends the server at once — a client that reconnects the
/// moment its connection closes is refused. Same on both.
#[test]
fn shutdown_nosave_ends_a_script_that_wrote() {
    let servers = Servers::start_with(&["--save", ""]);
    let mut seen = Vec::new();
    for addr in [servers.r.addr(), servers.z.addr()] {
        let mut admin = RawConn::connect(addr, "admin");
        assert_eq!(admin.cmd_str("CONFIG SET lua-time-limit 10"), b"+OK\r\n");
        let mut runner = RawConn::connect(addr, "runner");
        runner.set_timeout(Duration::from_secs(10));
        runner.send(&encode_cmd(&[
            b"EVAL",
            b"redis.call('set', KEYS[1], 'y') while true do end",
            b"1",
            b"x",
        ]));
        std::thread::sleep(Duration::from_millis(200));
        let ping = admin.cmd_str("PING");
        let kill = admin.cmd_str("SCRIPT KILL");
        let shutdown = admin.cmd_str("SHUTDOWN");
        admin.send(&encode_cmd(&[b"SHUTDOWN", b"NOSAVE"]));
        let closed = admin.try_read_reply(Duration::from_secs(5));
        let refused = std::net::TcpStream::connect(addr).is_err();
        seen.push((ping, kill, shutdown, closed, refused));
    }
    let (r, z) = (&seen[0], &seen[1]);
    assert_eq!(escape(&r.0), escape(&z.0));
    assert!(z.0.starts_with(b"-BUSY Redis is busy running a script."));
    assert_eq!(escape(&r.1), escape(&z.1));
    assert!(z.1.starts_with(b"-UNKILLABLE"));
    assert_eq!(escape(&r.2), escape(&z.2));
    assert_eq!(z.2, z.0, "SHUTDOWN without NOSAVE: BUSY");
    assert!(
        matches!((&r.3, &z.3), (ReadOutcome::Closed, ReadOutcome::Closed)),
        "SHUTDOWN NOSAVE answers nothing"
    );
    assert!(
        r.4 && z.4,
        "the server still accepted a connection: {seen:?}"
    );
}

/// A script that wrote cannot be killed.
#[test]
fn script_that_wrote_is_unkillable() {
    let s = ZwindowServer::start(&[]);
    let mut admin = s.conn();
    admin.cmd_str("CONFIG SET lua-time-limit 100");
    let mut runner = s.conn();
    runner.set_timeout(Duration::from_secs(20));
    // Spins until SCRIPT KILL was refused (observed through the key it wrote
    // being readable only after it ends): bounded by an iteration count.
    runner.send(&encode_cmd(&[
        b"EVAL",
        b"redis.call('set', 'w', '1') local i = 0 while i < 30000000 do i = i + 1 end return i",
        b"0",
    ]));
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_busy = false;
    let mut reply = Vec::new();
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(150));
        reply = s.conn().cmd_str("SCRIPT KILL");
        if reply != b"-NOTBUSY No scripts in execution right now.\r\n" {
            saw_busy = true;
            break;
        }
    }
    assert!(saw_busy, "the script ended before SCRIPT KILL could see it");
    assert_eq!(
        reply,
        b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n"
    );
    assert_eq!(runner.read_reply(), b":30000000\r\n");
    assert_eq!(admin.cmd_str("GET w"), b"$1\r\n1\r\n");
}

/// The scheduling bug this guards against: clients connected before a
/// script started, whose commands arrive while it runs, must not pin the
/// server's worker threads — SCRIPT KILL from another already-connected
/// client is answered as soon as the threshold passes, not when the script
/// ends, and the waiting clients get BUSY then.
#[test]
fn waiting_clients_do_not_starve_script_kill() {
    let s = ZwindowServer::start(&[]);
    let mut admin = s.conn();
    admin.set_timeout(Duration::from_secs(10));
    assert_eq!(
        admin.cmd_str("CONFIG SET busy-reply-threshold 300"),
        b"+OK\r\n"
    );
    let mut waiters: Vec<RawConn> = (0..4).map(|_| s.conn()).collect();
    for w in &mut waiters {
        w.set_timeout(Duration::from_secs(10));
        assert_eq!(w.cmd_str("PING"), b"+PONG\r\n");
    }
    let mut runner = s.conn();
    runner.set_timeout(Duration::from_secs(20));
    // About 8 s of spinning unless killed.
    runner.send(&encode_cmd(&[
        b"EVAL",
        b"local i = 0 while i < 2000000000 do i = i + 1 end return i",
        b"0",
    ]));
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    for w in &mut waiters {
        w.send(&encode_cmd(&[b"GET", b"k"]));
    }
    // Each waiter is answered BUSY once the threshold passes, not when the
    // script ends.
    for w in &mut waiters {
        assert!(
            w.read_reply()
                .starts_with(b"-BUSY Redis is busy running a script.")
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "BUSY took {:?}",
        started.elapsed()
    );
    let kill_sent = Instant::now();
    assert_eq!(admin.cmd_str("SCRIPT KILL"), b"+OK\r\n");
    assert!(
        kill_sent.elapsed() < Duration::from_secs(1),
        "SCRIPT KILL took {:?}",
        kill_sent.elapsed()
    );
    assert!(
        runner
            .read_reply()
            .starts_with(b"-ERR Script killed by user with SCRIPT KILL...")
    );
    for w in &mut waiters {
        assert_eq!(w.cmd_str("PING"), b"+PONG\r\n");
    }
}

/// Before busy-reply-threshold, another client simply waits for the script
/// and then sees what it wrote (as behind Redis's single thread).
#[test]
fn clients_wait_for_a_short_script() {
    let s = ZwindowServer::start(&[]);
    let mut runner = s.conn();
    runner.send(&encode_cmd(&[
        b"EVAL",
        b"redis.call('set', KEYS[1], 'after') local i = 0 while i < 20000000 do i = i + 1 end return 1",
        b"1",
        b"k",
    ]));
    std::thread::sleep(Duration::from_millis(30));
    let mut others: Vec<RawConn> = (0..3).map(|_| s.conn()).collect();
    for o in &mut others {
        o.set_timeout(Duration::from_secs(10));
        o.send(&encode_cmd(&[b"GET", b"k"]));
    }
    assert_eq!(runner.read_reply(), b":1\r\n");
    for o in &mut others {
        assert_eq!(o.read_reply(), b"$5\r\nafter\r\n");
    }
}

/// The bundled codecs (cjson, struct, cmsgpack): encodings, round trips,
/// limits and error texts, in RESP2 and RESP3.
const CODECS: &[&str] = &[
    // lua-cjson's settings: each script restores the defaults it changed.
    r####"cjson.encode_max_depth(1) local ok, e = pcall(cjson.encode, {a={b=1}}) cjson.encode_max_depth(1000) return {tostring(ok), e}"####,
    r####"cjson.decode_max_depth(1) local ok, e = pcall(cjson.decode, '{"a":[1]}') cjson.decode_max_depth(1000) return {tostring(ok), e}"####,
    r####"local a = cjson.encode_invalid_numbers(true) local j = cjson.encode({0/0, 1/0, -1/0}) local b = cjson.encode_invalid_numbers('null') local k = cjson.encode({1/0}) cjson.encode_invalid_numbers(false) return {tostring(a), j, b, k, tostring(cjson.encode_invalid_numbers())}"####,
    r####"return {tostring(cjson.encode_keep_buffer(false)), tostring(cjson.encode_keep_buffer('on')), cjson.encode_max_depth(), cjson.decode_max_depth()}"####,
    "return cjson.encode_max_depth(0)",
    "return cjson.decode_max_depth('x')",
    "return cjson.encode_keep_buffer(1)",
    "return cjson.encode_invalid_numbers({})",
    "return cjson.encode_keep_buffer(true, 2)",
    r####"return cjson.encode({1,2,3.5,'a/b"\\', {x=1, y={true,false}}, 1e20, 0.1, 1/3, 12345678901234567})"####,
    r####"return cjson.encode({[1]=1,[3]=3})"####,
    r####"return cjson.encode({[1]=1,[30]=3})"####,
    r####"return cjson.encode(string.char(0,1,8,9,10,12,13,31,127,128,255))"####,
    r####"return cjson.encode({})"####,
    r####"return cjson.encode(0/0)"####,
    r####"return cjson.encode(1/0)"####,
    r####"return cjson.decode('x')"####,
    r####"return cjson.decode('[1,2')"####,
    r####"return cjson.encode(function() end)"####,
    r####"local t={} t[true]=1 return cjson.encode(t)"####,
    r####"return cjson.encode({a=1,b=2,c=3,d=4,e=5})"####,
    r####"return cjson.encode({a={b={c={1,2,{d='e'}}}}, f=cjson.null, [5]=3})"####,
    r####"return cjson.encode(-0.0)"####,
    r####"return cjson.encode({[1.5]=1})"####,
    r####"return cjson.encode(nil)"####,
    r####"return cjson.encode()"####,
    r####"return cjson.encode(1,2)"####,
    r####"return cjson.decode()"####,
    r####"return cjson.decode('{"a":[1,2,{"b":null}],"c":"\\u00e9\\ud83d\\ude00\\n","d":1.5e3,"e":true,"f":false}').c"####,
    r####"return cjson.encode(cjson.decode('{"a":[1,2,{"b":null}],"c":"x","d":1.5e3,"e":true,"f":false}'))"####,
    r####"return cjson.decode('[1,2,3]')"####,
    r####"return cjson.decode('"abc')"####,
    r####"return cjson.decode('"a\\qb"')"####,
    r####"return cjson.decode('"\\ud800"')"####,
    r####"return cjson.decode('{"a" 1}')"####,
    r####"return cjson.decode('{1:2}')"####,
    r####"return cjson.decode('[1,]')"####,
    r####"return cjson.decode('[1 2]')"####,
    r####"return cjson.decode('01')"####,
    r####"return cjson.decode('-')"####,
    r####"return cjson.decode('0x10')"####,
    r####"return cjson.decode('+5')"####,
    r####"return tostring(cjson.decode('nan'))"####,
    r####"return tostring(cjson.decode('-Infinity'))"####,
    r####"return cjson.decode('truex')"####,
    r####"return cjson.decode('  12  ')"####,
    r####"return cjson.decode('12 13')"####,
    r####"return cjson.decode('')"####,
    r####"return cjson.decode('a\0b')"####,
    r####"return type(cjson.decode('null'))"####,
    r####"return cjson.decode('null') == cjson.null"####,
    r####"return cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))"####,
    r####"return #cjson.encode(cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))"####,
    r####"local t = {} local c = t for i=1,1001 do c[1] = {} c = c[1] end return cjson.encode(t)"####,
    r####"return cjson.decode('{"a":1,"a":2}').a"####,
    r####"return cjson.decode(123)"####,
    r####"return cjson._NAME .. cjson._VERSION"####,
    r####"return cjson.encode({1, nil, 3})"####,
    r####"return cjson.encode({[0]=1})"####,
    r####"return cjson.encode({[-1]=1})"####,
    r####"return cjson.encode({1,2,3,x=1})"####,
    r####"return cjson.encode(12345678901234)"####,
    r####"return cjson.encode(0.000001)"####,
    r####"return cjson.encode(1e-7)"####,
    r####"return struct.pack('>i', 1)"####,
    r####"return struct.pack('<i', -2)"####,
    r####"return struct.pack('bBhHlLTiI', -1, 255, -300, 65535, -5, 7, 9, -3, 4)"####,
    r####"return {struct.unpack('bBhHlLTiI', struct.pack('bBhHlLTiI', -1, 255, -300, 65535, -5, 7, 9, -3, 4))}"####,
    r####"return struct.pack('>i3', 70000)"####,
    r####"return {struct.unpack('>i3', struct.pack('>i3', -70000))}"####,
    r####"return struct.pack('s', 'abc')"####,
    r####"return struct.pack('c5', 'abcdefg')"####,
    r####"return struct.pack('c5', 'abc')"####,
    r####"return struct.pack('c0', 'abc')"####,
    r####"return {struct.unpack('s', 'abc\0def')}"####,
    r####"return {struct.unpack('s', 'abc')}"####,
    r####"return {struct.unpack('bc0', struct.pack('bc0', 3, 'xyz'))}"####,
    r####"return {struct.unpack('c0', 'abc')}"####,
    r####"return {struct.unpack('>d', struct.pack('>d', 1.5))}"####,
    r####"return {struct.unpack('<f', struct.pack('<f', 0.1))}"####,
    r####"return struct.pack('!4 b i', 1, 2)"####,
    r####"return struct.pack('!3 b i', 1, 2)"####,
    r####"return struct.pack('z', 1)"####,
    r####"return struct.pack('i40', 1)"####,
    r####"return struct.size('!4bidxc3')"####,
    r####"return struct.size('s')"####,
    r####"return struct.size('c0')"####,
    r####"return struct.size('bz')"####,
    r####"return {struct.unpack('i', 'ab')}"####,
    r####"return {struct.unpack('b', 'abc', 2)}"####,
    r####"return {struct.unpack('b', 'abc', 0)}"####,
    r####"return {struct.unpack('b', 'abc', 4)}"####,
    r####"return struct.pack('i')"####,
    r####"return struct.pack('i', 'x')"####,
    r####"return struct.pack('i', '12')"####,
    r####"return struct.pack()"####,
    r####"return struct.pack('>i16', -1)"####,
    r####"return {struct.unpack('>I16', string.rep('\255', 16))}"####,
    r####"return {struct.unpack('>i16', string.rep('\255', 16))}"####,
    r####"return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)"####,
    r####"return cmsgpack.pack(1.5, 0.1, 1e300, -0.0, 1/0)"####,
    r####"return cmsgpack.pack('abc', string.rep('x', 31), string.rep('x', 32), string.rep('x', 256), string.rep('y', 70000))"####,
    r####"return cmsgpack.pack({1,2,3}, {a=1}, {}, {1,nil,3}, {[2]=1}, true, false, nil)"####,
    r####"return cmsgpack.pack(function() end)"####,
    r####"return cmsgpack.pack()"####,
    r####"return cmsgpack.pack({{{{{{{{{{{{{{{{{{{1}}}}}}}}}}}}}}}}}})"####,
    r####"return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1,2,{x='y'}}, true, 1.5, -5, 2^40))}"####,
    r####"return cmsgpack.unpack('')"####,
    r####"return cmsgpack.unpack('\205')"####,
    r####"return cmsgpack.unpack('\193')"####,
    r####"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}"####,
    r####"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1)}"####,
    r####"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2)}"####,
    r####"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 9)}"####,
    r####"return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), -1)}"####,
    r####"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)}"####,
    r####"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)}"####,
    r####"return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5)}"####,
    r####"return cmsgpack.unpack({})"####,
    r####"return cmsgpack._VERSION"####,
    r####"return cjson.encode(cmsgpack.unpack(cmsgpack.pack({a={1,2},b='c'})))"####,
    r####"return {cmsgpack.unpack('\196\2ab\217\1c')}"####,
    r####"return {cmsgpack.unpack('\196\2ab')}"####,
    r####"return {cmsgpack.unpack('\217\1c\218\0\1d\219\0\0\0\1e')}"####,
    r####"return {cmsgpack.unpack('\199\1\1c')}"####,
    r####"return 2^63"####,
    r####"return -2^63-5000"####,
    r####"return 0/0"####,
    r####"return struct.size('!2<>=bh')"####,
    r####"return struct.size('b%')"####,
];

#[test]
fn codecs_cjson_struct_cmsgpack() {
    let (_s, mut p) = start_pair();
    for body in CODECS {
        ev(&mut p, body, &["0"]);
    }
    p.both_str("HELLO 3");
    for body in CODECS {
        ev(&mut p, body, &["0"]);
    }
}

/// SHUTDOWN NOSAVE ends the server even while a script that wrote spins.
#[test]
fn shutdown_nosave_stops_a_running_script() {
    let mut s = ZwindowServer::start(&[]);
    let mut admin = s.conn();
    admin.cmd_str("CONFIG SET busy-reply-threshold 100");
    let mut runner = s.conn();
    runner.send(&encode_cmd(&[
        b"EVAL",
        b"redis.call('set', 'a', 'b') while true do end",
        b"0",
    ]));
    std::thread::sleep(Duration::from_millis(300));
    admin.send(b"SHUTDOWN NOSAVE\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.is_running() {
        assert!(Instant::now() < deadline, "zwindow did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Scripts over sorted sets: plain ones compared with redis-server, and a
/// windowed one on redis-server with the explicit trim the window replaces.
#[test]
fn scripts_over_plain_and_windowed_sorted_sets() {
    let s = Servers::start();
    let mut p = s.pair();
    let zscript = "redis.call('ZADD', KEYS[1], 1, 'a', 2.5, 'b', 3, 'c') \
                   local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES') \
                   local inc = redis.call('ZINCRBY', KEYS[1], ARGV[1], 'a') \
                   return {r, inc, redis.call('ZSCORE', KEYS[1], 'b'), redis.call('ZCARD', KEYS[1]), \
                           redis.call('ZRANK', KEYS[1], 'c'), redis.call('ZPOPMIN', KEYS[1])}";
    ev(&mut p, zscript, &["1", "z", "0.25"]);
    ev(&mut p, zscript, &["1", "other-undeclared-is-fine", "7"]);
    ev(
        &mut p,
        "return redis.pcall('ZADD', KEYS[1], 'nan', 'x')",
        &["1", "z"],
    );
    ev(
        &mut p,
        "redis.setresp(3) return redis.call('ZSCORE', KEYS[1], 'b')",
        &["1", "z"],
    );
    ev(
        &mut p,
        "return redis.call('ZINTERCARD', 2, KEYS[1], 'other-undeclared-is-fine')",
        &["1", "z"],
    );

    // Windowed: zwindow trims by rule, redis-server runs the trim itself.
    p.z.cmd_str("ZWINDOW SET w:* 100 MS");
    let now: u64 = {
        let t = parse_reply(&p.r.cmd_str("TIME"));
        let secs: u64 = String::from_utf8_lossy(t.array()[0].bulk())
            .parse()
            .unwrap();
        secs * 1000
    };
    let old = (now - 60_000).to_string();
    let far = (now + 3_600_000).to_string();
    let body = "redis.call('ZADD', KEYS[1], ARGV[1], 'old', ARGV[2], 'new') \
                return {redis.call('ZCARD', KEYS[1]), redis.call('ZRANGE', KEYS[1], 0, -1)}";
    let z = p.z.cmd(&[
        b"EVAL",
        body.as_bytes(),
        b"1",
        b"w:k",
        old.as_bytes(),
        far.as_bytes(),
    ]);
    let trim_then = format!(
        "{body_prefix} redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3]) \
         return {{redis.call('ZCARD', KEYS[1]), redis.call('ZRANGE', KEYS[1], 0, -1)}}",
        body_prefix = "redis.call('ZADD', KEYS[1], ARGV[1], 'old', ARGV[2], 'new')"
    );
    let cutoff = (now - 100).to_string();
    let r = p.r.cmd(&[
        b"EVAL",
        trim_then.as_bytes(),
        b"1",
        b"w:k",
        old.as_bytes(),
        far.as_bytes(),
        cutoff.as_bytes(),
    ]);
    assert_eq!(escape(&z), escape(&r));
}

/// Time stands still inside a script: a member that ages out while the
/// script runs is still there at the script's end, as `now` is fixed.
#[test]
fn a_script_sees_one_instant_of_a_windowed_set() {
    let z = ZwindowServer::start(&["--zwindow", "hb:*=300:ms"]);
    let mut c = z.conn();
    let t = parse_reply(&c.cmd_str("TIME"));
    let secs: u64 = String::from_utf8_lossy(t.array()[0].bulk())
        .parse()
        .unwrap();
    let micros: u64 = String::from_utf8_lossy(t.array()[1].bulk())
        .parse()
        .unwrap();
    let now_ms = secs * 1000 + micros / 1000;
    // Ages out 100 ms from now; the script spins for ~400 ms in between.
    let score = (now_ms - 200).to_string();
    let body = "redis.call('ZADD', KEYS[1], ARGV[1], 'u') \
                local before = redis.call('ZCARD', KEYS[1]) \
                local t0 = redis.call('TIME') \
                local spin = 0 \
                for i = 1, 40000000 do spin = spin + i end \
                local t1 = redis.call('TIME') \
                return {before, redis.call('ZCARD', KEYS[1]), t0[1] == t1[1] and t0[2] == t1[2] and 1 or 0}";
    let started = Instant::now();
    let reply = c.cmd(&[b"EVAL", body.as_bytes(), b"1", b"hb:1", score.as_bytes()]);
    assert!(
        started.elapsed() > Duration::from_millis(120),
        "the script must outlive the member"
    );
    assert_eq!(
        reply, b"*3\r\n:1\r\n:1\r\n:1\r\n",
        "one instant for the whole script"
    );
    assert_eq!(
        c.cmd_str("ZCARD hb:1"),
        b":0\r\n",
        "gone for the next command"
    );
}

/// Scripts that catch the kill error with `pcall`/`xpcall` and loop on, or
/// that build an endless table, still die by SCRIPT KILL, with the same
/// replies as redis-server (Redis's hook fires on every line once killed).
#[test]
fn pcall_loops_and_table_builds_are_killable() {
    let servers = Servers::start();
    let bodies = [
        "local f = function() while 1 do redis.call('ping') end end while 1 do pcall(f) end",
        "local f = function() while 1 do end end while 1 do pcall(f) end",
        "local f = function() while 1 do end end while 1 do xpcall(f, function(e) return e end) end",
        "while 1 do pcall(pcall, function() while 1 do end end) end",
        "local t = {} for i = 1, 1e9 do t[i] = i end",
    ];
    for body in bodies {
        let mut results = Vec::new();
        for addr in [servers.r.addr(), servers.z.addr()] {
            let mut admin = RawConn::connect(addr, "admin");
            admin.set_timeout(Duration::from_secs(10));
            assert_eq!(
                admin.cmd_str("CONFIG SET busy-reply-threshold 100"),
                b"+OK\r\n"
            );
            let mut runner = RawConn::connect(addr, "runner");
            runner.set_timeout(Duration::from_secs(10));
            runner.send(&encode_cmd(&[b"EVAL", body.as_bytes(), b"0"]));
            let start = Instant::now();
            while !admin.cmd_str("PING").starts_with(b"-BUSY") {
                assert!(start.elapsed() < Duration::from_secs(10), "never busy");
            }
            let kill = admin.cmd_str("SCRIPT KILL");
            let killed = runner.read_reply();
            let after = admin.cmd_str("PING");
            results.push((kill, killed, after));
        }
        let (r, z) = (&results[0], &results[1]);
        assert_eq!(z.0, b"+OK\r\n", "{body}");
        assert_eq!(escape(&r.0), escape(&z.0), "{body}");
        assert_eq!(escape(&r.1), escape(&z.1), "{body}");
        assert_eq!(z.2, b"+PONG\r\n", "{body}");
    }
}

/// `min-replicas-to-write` on a server without replicas: writes are refused
/// with NOREPLICAS (plain, in MULTI/EXEC, from scripts that declare flags
/// before they run, from legacy scripts at their first write), reads run.
#[test]
fn min_replicas_to_write_refuses_writes() {
    let (_s, mut p) = start_pair();
    p.check_str("SET x v");
    p.check_str("FUNCTION LOAD \"#!lua name=lib\nredis.register_function('w', function() return redis.call('set','x','f') end)\nredis.register_function{function_name='r', callback=function() return redis.call('get','x') end, flags={'no-writes'}}\"");
    p.check_str("CONFIG SET min-replicas-to-write 1");
    p.check_str("CONFIG GET min-replicas-to-write");
    p.check_str("CONFIG GET min-slaves-max-lag");
    p.check_str("SET x 1");
    p.check_str("GET x");
    p.check_str("INCR n");
    p.check_str("MULTI");
    p.check_str("GET x");
    p.check_str("SET x 2");
    p.check_str("EXEC");
    ev(
        &mut p,
        "#!lua flags=no-writes\nreturn redis.call('get','x')",
        &["1", "x"],
    );
    ev(&mut p, "return redis.call('get','x')", &["1", "x"]);
    ev(&mut p, "#!lua\nreturn redis.call('get','x')", &["1", "x"]);
    ev(
        &mut p,
        "return redis.pcall('set','x',1)['err']",
        &["1", "x"],
    );
    p.check_str("EVAL_RO \"#!lua\nreturn 1\" 0");
    p.check_str("FCALL r 0");
    p.check_str("FCALL w 0");
    p.check_str("CONFIG SET min-replicas-max-lag 0");
    p.check_str("SET x 3");
    p.check_str("CONFIG SET min-replicas-max-lag 10");
    p.check_str("CONFIG SET min-replicas-to-write 0");
    p.check_str("SET x 4");
    // Refusals count as rejected calls, as Redis counts them (usec aside;
    // redis-server lists commands in hash order).
    // (The harness pings redis-server while it starts.)
    let (r, z) = p.both_str("INFO commandstats");
    let (mut r, mut z) = (call_counts(&r), call_counts(&z));
    r.remove("ping");
    z.remove("ping");
    assert_eq!(r, z);
}

/// INFO commandstats as name → (calls, rejected_calls, failed_calls).
fn call_counts(info: &[u8]) -> std::collections::BTreeMap<String, (u64, u64, u64)> {
    let text = String::from_utf8_lossy(info);
    let field = |line: &str, name: &str| -> u64 {
        line.split([':', ','])
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or(u64::MAX)
    };
    text.lines()
        .filter_map(|l| {
            let (name, _) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let counts = (
                field(l, "calls"),
                field(l, "rejected_calls"),
                field(l, "failed_calls"),
            );
            Some((name.to_string(), counts))
        })
        .collect()
}

/// Redis 8.0 exposes `os.clock` (alone) to scripts, read-only like the
/// other libraries; every other `os` field is nil; functions get it too.
#[test]
fn os_clock_against_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    for body in [
        "return os",
        "return type(os)",
        "return type(os.clock)",
        "return type(os.clock())",
        "return os.clock() >= 0 and os.clock() < 1e9",
        "local a = os.clock() local x = 0 for i = 1, 100000 do x = x + i end return os.clock() >= a",
        "local n = 0 for k in pairs(os) do n = n + 1 end return n",
        "return os.time",
        "return os.time()",
        "return os.getenv('HOME')",
        "return os.execute('true')",
        "return os.exit(1)",
        "return os.date()",
        "os.clock = nil",
        "os.x = 1",
        "os = nil",
        "return rawget(os, 'clock') ~= nil",
        "return io",
    ] {
        ev(&mut p, body, &["0"]);
    }
    p.check_str("FUNCTION FLUSH");
    p.check(&[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=clk\nredis.register_function('clk', function() return type(os.clock()) end)",
    ]);
    p.check_str("FCALL clk 0");
    p.check(&[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=clk2\nlocal t = type(os)\nredis.register_function('clk2', function() return t end)",
    ]);
    p.check_str("FCALL clk2 0");
}

/// Redis 8.0 lets scripts and functions call the blocking list and
/// sorted-set commands (7.0 refused them as `noscript`); inside a script
/// they never wait: with nothing to pop they answer as a timeout.
#[test]
fn blocking_commands_in_scripts_against_redis8() {
    let s = Servers::start_redis8(&[]);
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        p.check_str("FLUSHALL");
        for body in [
            "return redis.pcall('blpop', KEYS[1], 0)",
            "return redis.pcall('brpop', KEYS[1], 1)",
            "return redis.pcall('blmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT', 0)",
            "return redis.pcall('brpoplpush', KEYS[1], KEYS[2], 0)",
            "return redis.pcall('bzpopmin', KEYS[3], 0)",
            "return redis.pcall('bzpopmax', KEYS[3], 0)",
            "return redis.pcall('blmpop', 0, 1, KEYS[1], 'LEFT')",
            "return redis.pcall('bzmpop', 0, 1, KEYS[3], 'MIN')",
            "redis.call('rpush', KEYS[1], 'a', 'b', 'c') return redis.call('blpop', KEYS[1], 0)",
            "return redis.call('blmove', KEYS[1], KEYS[2], 'LEFT', 'RIGHT', 0)",
            "return redis.call('brpoplpush', KEYS[1], KEYS[2], 0)",
            "redis.call('zadd', KEYS[3], 1, 'x', 2, 'y') return redis.call('bzpopmax', KEYS[3], 0)",
            "return redis.call('bzpopmin', KEYS[3], 0)",
        ] {
            ev(&mut p, body, &["3", "{k}l", "{k}d", "{k}z"]);
        }
        p.check_str("LRANGE {k}d 0 -1");
    }
}
