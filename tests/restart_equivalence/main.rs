//! Restart equivalence: whatever a stream of writes did, the server's own
//! files bring back. A seeded random stream of every write command in the
//! table (see `writes.rs`; the test fails when the table has a write command
//! the generator lacks), in several databases, inside MULTI and scripts,
//! runs against a server; the dataset it left is then compared with what
//! a restart from the AOF (`appendfsync always` after `kill -9`, and
//! `everysec` after SHUTDOWN, each once with a BGREWRITEAOF racing the
//! writes), from an RDB (`SAVE`, `DEBUG RELOAD`), and redis-server 8.0
//! loading the same files bring back, and the other way round.
//!
//! The comparison is `DEBUG DIGEST` (computed as Redis computes it), plus
//! what the digest leaves out: each key's exact expiry time, consumer
//! groups (`XINFO STREAM … FULL`, consumers' seen times masked: replay
//! sets them to the time of the replay), functions, and zwindow's field
//! and member TTLs and window rules.

#[path = "../common/mod.rs"]
mod common;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    PrivateDir, RawConn, ReadOutcome, RedisServer, Reply, ZwindowServer, encode_cmd, escape,
    parse_reply,
};
use writes::{Fixtures, Gen, LIBRARIES, NOT_WRITES, SCRIPTS};

/// Databases the stream writes to (SELECT, MOVE, COPY DB, SWAPDB).
const DBS: usize = 3;
/// Commands per seed (MULTI blocks and scripts count as one).
const COMMANDS: usize = 1500;

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

/// A reply as text, with consumers' seen times masked, their active
/// times left out (Redis 7.0, one of the servers compared, has none) and
/// groups' lag masked: it is computed from the fields compared
/// (entries-read, entries-added, the IDs), by 8.0's rules on zwindow and
/// 7.0's on redis-server 7.0, which differ around tombstones.
fn render(r: &Reply) -> String {
    match r {
        Reply::Array(items) | Reply::Set(items) | Reply::Push(items) => {
            let mut parts = Vec::new();
            let (mut mask, mut skip) = (false, false);
            for item in items {
                if std::mem::take(&mut skip) {
                    continue;
                }
                if mask {
                    parts.push("<time>".to_string());
                    mask = false;
                    continue;
                }
                if matches!(item, Reply::Bulk(b) if b == b"active-time") {
                    skip = true;
                    continue;
                }
                mask = matches!(item, Reply::Bulk(b) if b == b"seen-time" || b == b"lag");
                parts.push(render(item));
            }
            format!("[{}]", parts.join(" "))
        }
        Reply::Bulk(b) => escape(b),
        other => format!("{other:?}"),
    }
}

fn select(c: &mut RawConn, db: usize) {
    let r = c.cmd(&[b"SELECT", db.to_string().as_bytes()]);
    assert_eq!(r, b"+OK\r\n", "SELECT {db}");
}

fn keys(c: &mut RawConn) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = parse_reply(&c.cmd(&[b"KEYS", b"*"]))
        .array()
        .iter()
        .map(|k| k.bulk().to_vec())
        .collect();
    keys.sort();
    keys
}

/// Lets every short TTL pass, then looks every key up, so that what has
/// expired (keys, fields, members) or aged out of a window is deleted —
/// and logged — before the dataset is read.
fn settle(c: &mut RawConn) {
    std::thread::sleep(Duration::from_millis(300));
    for db in 0..DBS {
        select(c, db);
        // SCAN deletes the expired keys it meets (KEYS only hides them).
        let mut cursor = b"0".to_vec();
        loop {
            let r = parse_reply(&c.cmd(&[b"SCAN", &cursor, b"COUNT", b"100"]));
            cursor = r.array()[0].bulk().to_vec();
            if cursor == b"0" {
                break;
            }
        }
        for k in keys(c) {
            c.cmd(&[b"EXISTS", &k]);
        }
    }
    select(c, 0);
}

/// A dataset as compared, and each key's contents as text, to show what
/// differs (not compared: Redis 7.0 prints scores at 17 digits).
struct State {
    cmp: BTreeMap<String, String>,
    contents: BTreeMap<String, String>,
}

/// A key's contents as text.
fn contents(c: &mut RawConn, k: &[u8], ty: &str) -> String {
    let q: &[&[u8]] = match ty {
        "+string" => &[b"GET"],
        "+list" => &[b"LRANGE", b"0", b"-1"],
        "+set" => &[b"SMEMBERS"],
        "+zset" => &[b"ZRANGE", b"0", b"-1", b"WITHSCORES"],
        "+hash" => &[b"HGETALL"],
        _ => &[b"XRANGE", b"-", b"+"],
    };
    let mut args = q.to_vec();
    args.insert(1, k);
    match c.query(&args) {
        Reply::Array(mut items) if ty == "+set" => {
            items.sort_by_key(render);
            render(&Reply::Array(items))
        }
        Reply::Array(items) if ty == "+hash" => {
            let mut pairs: Vec<String> = items
                .chunks(2)
                .map(|p| format!("{}={}", render(&p[0]), render(&p[1])))
                .collect();
            pairs.sort();
            pairs.join(" ")
        }
        r => render(&r),
    }
}

/// Everything of the dataset the comparison covers, by name. `zwindow`:
/// include what only zwindow has (field and member TTLs, window rules).
fn state(c: &mut RawConn, zwindow: bool) -> State {
    let mut out = BTreeMap::new();
    let mut details = BTreeMap::new();
    select(c, 0);
    out.insert(
        "dataset digest".into(),
        text(&c.cmd(&[b"DEBUG", b"DIGEST"])),
    );
    // Keys and keys with a TTL per database (avg_ttl moves with the clock).
    let keyspace = text(&c.cmd(&[b"INFO", b"keyspace"]));
    for line in keyspace.lines().filter(|l| l.starts_with("db")) {
        // (subexpiry, keys with field or member TTLs, is Redis 8.0's.)
        let counts: Vec<&str> = line
            .split(',')
            .filter(|f| !f.starts_with("avg_ttl") && (zwindow || !f.starts_with("subexpiry")))
            .collect();
        let (db, rest) = counts
            .join(",")
            .split_once(':')
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .unwrap_or_default();
        out.insert(format!("info keyspace {db}"), rest);
    }
    // Libraries in name order (Redis lists them in its dict's order).
    let mut libraries: Vec<String> = match c.query(&[b"FUNCTION", b"LIST", b"WITHCODE"]) {
        Reply::Array(libs) => libs.iter().map(render).collect(),
        other => panic!("FUNCTION LIST: {other:?}"),
    };
    libraries.sort();
    out.insert("functions".into(), libraries.join(" "));
    if zwindow {
        out.insert(
            "window rules".into(),
            render(&c.query(&[b"ZWINDOW", b"LIST"])),
        );
    }
    for db in 0..DBS {
        select(c, db);
        for k in keys(c) {
            let ty = text(&c.cmd(&[b"TYPE", &k]));
            let mut v = format!(
                "{} digest {} pexpiretime {}",
                ty.trim(),
                render(&c.query(&[b"DEBUG", b"DIGEST-VALUE", &k])),
                render(&c.query(&[b"PEXPIRETIME", &k]))
            );
            let items = |c: &mut RawConn, q: &[&[u8]]| -> Vec<Vec<u8>> {
                let mut args = q.to_vec();
                args.insert(1, &k);
                parse_reply(&c.cmd(&args))
                    .array()
                    .iter()
                    .map(|x| x.bulk().to_vec())
                    .collect()
            };
            let ttls = |c: &mut RawConn, cmd: &[u8], word: &[u8], of: Vec<Vec<u8>>| {
                let n = of.len().to_string();
                let mut args: Vec<&[u8]> = vec![cmd, &k, word, n.as_bytes()];
                args.extend(of.iter().map(|m| &m[..]));
                render(&c.query(&args))
            };
            match ty.trim() {
                "+stream" => {
                    v += &render(&c.query(&[b"XINFO", b"STREAM", &k, b"FULL"]));
                }
                // Redis 8.0 (the other server compared) has field TTLs too.
                "+hash" => {
                    let mut fields = items(c, &[b"HKEYS"]);
                    fields.sort();
                    v += &ttls(c, b"HPEXPIRETIME", b"FIELDS", fields);
                }
                "+zset" if zwindow => {
                    let members = items(c, &[b"ZRANGE", b"0", b"-1"]);
                    v += &ttls(c, b"ZPEXPIRETIME", b"MEMBERS", members);
                }
                "+set" if zwindow => {
                    let mut members = items(c, &[b"SMEMBERS"]);
                    members.sort();
                    if !members.is_empty() {
                        v += &ttls(c, b"SPEXPIRETIME", b"MEMBERS", members);
                    }
                }
                _ => {}
            }
            let name = format!("db{db} {}", escape(&k));
            details.insert(name.clone(), contents(c, &k, ty.trim()));
            out.insert(name, v);
        }
    }
    select(c, 0);
    State {
        cmp: out,
        contents: details,
    }
}

/// What a stream left, once settled; never trivially empty.
fn settled_state(c: &mut RawConn, zwindow: bool) -> State {
    settle(c);
    let st = state(c, zwindow);
    assert_substantial(&st);
    st
}

/// Fails with every difference between two states, named.
fn assert_same(what: &str, expected: &State, got: &State) {
    let names: BTreeSet<&String> = expected.cmp.keys().chain(got.cmp.keys()).collect();
    let mut diffs = Vec::new();
    for n in names {
        let (a, b) = (expected.cmp.get(n), got.cmp.get(n));
        if a != b {
            diffs.push(format!(
                "  {n}:\n    expected: {a:?}\n              {:?}\n    got:      {b:?}\n              {:?}",
                expected.contents.get(n),
                got.contents.get(n)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{what}: {} of {} entries differ\n{}",
        diffs.len(),
        expected.cmp.len(),
        diffs.join("\n")
    );
}

/// The dataset is not trivially empty: keys in several databases, a
/// stream with a consumer group.
fn assert_substantial(st: &State) {
    let st = &st.cmp;
    let keys = st.keys().filter(|k| k.starts_with("db")).count();
    assert!(keys >= 20, "the stream left only {keys} keys: {st:#?}");
    let dbs: BTreeSet<&str> = st
        .keys()
        .filter_map(|k| k.split(' ').next())
        .filter(|d| d.starts_with("db"))
        .collect();
    assert!(dbs.len() >= 2, "the stream left keys in one database only");
}

/// Sends one command and reads its reply; the server must answer.
/// `ZWINDOW_EQUIV_TRACE=word` prints each command with an argument that
/// contains `word` (a key name, say), and every command that moves or
/// drops databases, with its reply: what to read when a seed fails.
fn send(c: &mut RawConn, argv: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
    c.send(&encode_cmd(&refs));
    let shown = || argv.iter().map(|a| escape(a)).collect::<Vec<_>>().join(" ");
    let reply = match c.try_read_reply(Duration::from_secs(10)) {
        ReadOutcome::Reply(r) => r,
        other => panic!("no reply ({other:?}) to {}", shown()),
    };
    if let Ok(word) = std::env::var("ZWINDOW_EQUIV_TRACE") {
        let word = word.as_bytes();
        let name = argv
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        let dbs: [&[u8]; 7] = [
            b"SELECT",
            b"SWAPDB",
            b"FLUSHDB",
            b"FLUSHALL",
            b"MULTI",
            b"EXEC",
            b"MOVE",
        ];
        if dbs.contains(&&name[..])
            || argv
                .iter()
                .any(|a| a.windows(word.len()).any(|w| w == word))
        {
            eprintln!("{}  -> {}", shown(), escape(&reply));
        }
    }
    reply
}

/// A debugging aid for a failing seed (`ZWINDOW_EQUIV_SHADOW=1`): after
/// each command the server reloads its own AOF (`DEBUG LOADAOF`), whose
/// dataset must equal the one it had; the first command after which it
/// does not is the one whose logging is wrong.
struct Shadow {
    file: std::path::PathBuf,
    offset: usize,
}

impl Shadow {
    fn new(live_dir: &Path) -> Shadow {
        Shadow {
            file: live_dir
                .join("appendonlydir")
                .join("appendonly.aof.1.incr.aof"),
            offset: 0,
        }
    }

    fn step(&mut self, live: &mut RawConn, what: &str) {
        if std::env::var("ZWINDOW_EQUIV_SHADOW").as_deref() == Ok("verbose") {
            eprintln!("step: {what}");
        }
        let data = std::fs::read(&self.file).unwrap_or_default();
        if std::env::var("ZWINDOW_EQUIV_SHADOW").as_deref() == Ok("verbose") {
            // The log as it was before the reload that failed, to read.
            let _ = std::fs::write(std::env::temp_dir().join("zwindow-equiv-shadow.aof"), &data);
        }
        let new = data[self.offset.min(data.len())..].to_vec();
        self.offset = data.len();
        // Twice: a key the active expiry deletes in between is not a fault.
        let mut same = false;
        for _ in 0..2 {
            let before = live.cmd(&[b"DEBUG", b"DIGEST"]);
            assert_eq!(live.cmd(&[b"DEBUG", b"LOADAOF"]), b"+OK\r\n");
            if live.cmd(&[b"DEBUG", b"DIGEST"]) == before {
                same = true;
                break;
            }
        }
        assert!(
            same,
            "after {what} the AOF no longer loads to the live dataset; it logged:\n{}",
            escape(&new)
        );
    }
}

/// What a stream ran.
#[derive(Default)]
struct Ran {
    /// Commands sent, by template name.
    names: BTreeMap<&'static str, usize>,
    /// Of which answered with an error.
    errors: usize,
    sent: usize,
}

impl Ran {
    fn note(&mut self, name: &'static str, reply: &[u8]) {
        *self.names.entry(name).or_default() += 1;
        self.sent += 1;
        if reply.starts_with(b"-") {
            self.errors += 1;
        }
    }
}

/// Runs each template once (so every write command is covered by every
/// run, the rare and destructive ones first), then `n` random commands,
/// some inside MULTI/EXEC or a script; `middle` runs halfway.
fn run_stream(c: &mut RawConn, g: &mut Gen, n: usize, mut middle: impl FnMut(&mut RawConn)) -> Ran {
    run_stream_shadowed(c, g, n, &mut middle, &mut None)
}

fn run_stream_shadowed(
    c: &mut RawConn,
    g: &mut Gen,
    n: usize,
    middle: &mut dyn FnMut(&mut RawConn),
    shadow: &mut Option<Shadow>,
) -> Ran {
    let mut step = |c: &mut RawConn, what: &dyn Fn() -> String| {
        if let Some(s) = shadow.as_mut() {
            s.step(c, &what());
        }
    };
    let shown = |argv: &[Vec<u8>]| argv.iter().map(|a| escape(a)).collect::<Vec<_>>().join(" ");
    let mut ran = Ran::default();
    for sha_script in SCRIPTS {
        send(
            c,
            &[
                b"SCRIPT".to_vec(),
                b"LOAD".to_vec(),
                sha_script.as_bytes().to_vec(),
            ],
        );
    }
    for name in g.names() {
        let argv = g.command_named(name);
        let r = send(c, &argv);
        ran.note(name, &r);
        step(c, &|| shown(&argv));
    }
    for i in 0..n {
        if i == n / 2 {
            middle(c);
        }
        if g.chance(0.04) {
            assert_eq!(send(c, &[b"MULTI".to_vec()]), b"+OK\r\n");
            let mut names = Vec::new();
            for _ in 0..2 + g.below(3) {
                let (name, argv) = g.command();
                let queued = send(c, &argv);
                names.push((name, queued));
            }
            let exec = send(c, &[b"EXEC".to_vec()]);
            for (name, queued) in names {
                ran.note(name, &queued);
            }
            ran.note("(multi)", &exec);
            step(c, &|| "a MULTI block".to_string());
        } else if g.chance(0.03) {
            // The command run by a script: logged as its effects.
            let (name, argv) = g.command();
            let mut wrapped = vec![
                b"EVAL".to_vec(),
                b"return redis.call(unpack(ARGV))".to_vec(),
                b"0".to_vec(),
            ];
            wrapped.extend(argv);
            let r = send(c, &wrapped);
            ran.note(name, &r);
            step(c, &|| shown(&wrapped));
        } else {
            let (name, argv) = g.command();
            let r = send(c, &argv);
            ran.note(name, &r);
            step(c, &|| shown(&argv));
        }
    }
    select(c, 0);
    ran
}

/// Every write command of the server's table has a template (and, in
/// zwindow's case, no template names a command the table lacks).
fn assert_covers_the_table(c: &mut RawConn, g: &Gen, zwindow: bool) {
    let writes: BTreeSet<String> =
        parse_reply(&c.cmd(&[b"COMMAND", b"LIST", b"FILTERBY", b"ACLCAT", b"write"]))
            .array()
            .iter()
            .map(|x| text(x.bulk()).to_lowercase())
            .collect();
    let names: BTreeSet<String> = g.names().iter().map(|s| s.to_string()).collect();
    let missing: Vec<&String> = writes.iter().filter(|w| !names.contains(*w)).collect();
    assert!(
        missing.is_empty(),
        "write commands the stream never runs: {missing:?}"
    );
    if zwindow {
        let extra: Vec<&String> = names
            .iter()
            .filter(|n| !writes.contains(*n) && !NOT_WRITES.contains(&n.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "templates for commands that are not writes: {extra:?}"
        );
    }
}

/// Values made on a scratch server before a stream: DUMP payloads of each
/// type, a FUNCTION DUMP payload, script SHA1s.
fn fixtures(sink_port: u16) -> Fixtures {
    let z = ZwindowServer::start(&["--save", ""]);
    let mut c = z.conn();
    for line in [
        "SET p:str hello",
        "SET p:int 12345",
        "RPUSH p:list a b 3",
        "SADD p:set a b c",
        "SADD p:intset 1 2 3",
        "ZADD p:zset 1 a 2.5 b",
        "HSET p:hash f v g w",
        "XADD p:stream 5-1 f v",
        "XGROUP CREATE p:stream pg 0",
        "XREADGROUP GROUP pg pc STREAMS p:stream >",
        "PFADD p:hll a b c",
    ] {
        let r = c.cmd_str(line);
        assert!(!r.starts_with(b"-"), "{line}: {}", escape(&r));
    }
    let mut payloads = Vec::new();
    for k in [
        "p:str", "p:int", "p:list", "p:set", "p:intset", "p:zset", "p:hash", "p:stream", "p:hll",
    ] {
        payloads.push(
            parse_reply(&c.cmd(&[b"DUMP", k.as_bytes()]))
                .bulk()
                .to_vec(),
        );
    }
    let lib = "#!lua name=lib9\nredis.register_function('f9', function(keys, args) return 9 end)";
    c.cmd(&[b"FUNCTION", b"LOAD", lib.as_bytes()]);
    let function_payload = parse_reply(&c.cmd(&[b"FUNCTION", b"DUMP"])).bulk().to_vec();
    let shas = SCRIPTS
        .iter()
        .map(|s| text(parse_reply(&c.cmd(&[b"SCRIPT", b"LOAD", s.as_bytes()])).bulk()))
        .collect();
    assert_eq!(LIBRARIES.len(), 3);
    Fixtures {
        payloads,
        function_payload,
        shas,
        sink_port,
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The arguments both servers start with: `dir`, the DEBUG command, no
/// save points, then `extra`.
fn args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--dir",
        dir.to_str().unwrap(),
        "--enable-debug-command",
        "yes",
    ];
    args.extend_from_slice(&["--save", ""]);
    args.extend_from_slice(extra);
    args
}

fn zwindow(dir: &Path, extra: &[&str]) -> ZwindowServer {
    ZwindowServer::start(&args(dir, extra))
}

/// redis-server 8.0, the oracle: scores in replies and digests are
/// printed as 8.0 prints them (7.0's `%.17g` differs in the last digit).
fn redis(dir: &Path, extra: &[&str]) -> RedisServer {
    RedisServer::start_binary(&common::redis8_server(), &args(dir, extra))
}

/// For a failing seed (`ZWINDOW_EQUIV_KEEP=path`): the AOF directory in
/// `dir`, copied to `path` + `suffix`, to replay by hand.
fn keep(dir: &Path, suffix: &str) {
    if let Ok(path) = std::env::var("ZWINDOW_EQUIV_KEEP") {
        copy_dir(
            &dir.join("appendonlydir"),
            Path::new(&format!("{path}{suffix}")),
        );
    }
}

/// Which server loads another's files.
#[derive(Clone, Copy)]
enum Server {
    Zwindow,
    Redis,
}

/// The files in `dir` (its AOF directory, or else its `dump.rdb`) copied
/// for `reader`, which must load them into `expected` (the commands both
/// servers have).
fn assert_loads(what: &str, dir: &Path, reader: Server, aof: bool, expected: &State) {
    let to = PrivateDir::new("equiv-reads");
    if aof {
        copy_dir(&dir.join("appendonlydir"), &to.0.join("appendonlydir"));
    } else {
        std::fs::copy(dir.join("dump.rdb"), to.0.join("dump.rdb")).unwrap();
    }
    let args: &[&str] = if aof { &["--appendonly", "yes"] } else { &[] };
    let got = match reader {
        Server::Zwindow => state(&mut zwindow(&to.0, args).conn(), false),
        Server::Redis => state(&mut redis(&to.0, args).conn(), false),
    };
    assert_same(what, expected, &got);
}

/// SHUTDOWN, and wait for the connection to close.
fn shutdown(mut c: RawConn) {
    c.send(&encode_cmd(&[b"SHUTDOWN"]));
    assert!(
        c.is_closed(Duration::from_secs(20)),
        "SHUTDOWN did not close the connection"
    );
}

fn info_field(c: &mut RawConn, name: &str) -> String {
    let t = text(&c.cmd(&[b"INFO", b"persistence"]));
    t.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in INFO persistence"))
        .trim()
        .to_string()
}

/// Waits for a running AOF rewrite to end, successfully.
fn wait_rewrite(c: &mut RawConn) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while info_field(c, "aof_rewrite_in_progress") != "0"
        || info_field(c, "aof_rewrite_scheduled") != "0"
    {
        assert!(Instant::now() < deadline, "the AOF rewrite did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(info_field(c, "aof_last_bgrewrite_status"), "ok");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn report(what: &str, ran: &Ran, st: &State) {
    let st = &st.cmp;
    eprintln!(
        "{what}: {} commands ({} distinct, {} errors), {} keys compared",
        ran.sent,
        ran.names.len(),
        ran.errors,
        st.keys().filter(|k| k.starts_with("db")).count()
    );
}

/// The seeds a test runs: its own, or `ZWINDOW_EQUIV_SEED` to replay one.
fn seeds(own: &[u64]) -> Vec<u64> {
    match std::env::var("ZWINDOW_EQUIV_SEED") {
        Ok(s) => vec![s.parse().expect("ZWINDOW_EQUIV_SEED is a number")],
        Err(_) => own.to_vec(),
    }
}

/// A stream against zwindow with the AOF on, then a restart from its own
/// files; the second seed races a BGREWRITEAOF with the writes.
fn aof_restart(fsync: &str, own_seeds: &[u64], kill: bool) {
    let sink = ZwindowServer::start(&["--save", ""]);
    for (i, seed) in seeds(own_seeds).into_iter().enumerate() {
        let dir = PrivateDir::new("equiv-aof");
        let aof = ["--appendonly", "yes", "--appendfsync", fsync];
        let z = zwindow(&dir.0, &aof);
        let mut c = z.conn();
        let mut g = Gen::new(seed, true, fixtures(sink.port()), now_ms());
        assert_covers_the_table(&mut c, &g, true);
        let mut shadow = std::env::var_os("ZWINDOW_EQUIV_SHADOW").map(|_| Shadow::new(&dir.0));
        let rewrite = i % 2 == 1 && shadow.is_none();
        let mut middle = |c: &mut RawConn| {
            if rewrite {
                let r = c.cmd(&[b"BGREWRITEAOF"]);
                assert!(r.starts_with(b"+"), "BGREWRITEAOF: {}", escape(&r));
            }
        };
        let ran = run_stream_shadowed(&mut c, &mut g, COMMANDS, &mut middle, &mut shadow);
        if rewrite {
            wait_rewrite(&mut c);
        }
        let before = settled_state(&mut c, true);
        if kill {
            drop(c);
            drop(z);
        } else {
            shutdown(c);
            drop(z);
        }
        keep(&dir.0, &format!("-{fsync}-{seed}"));
        let z = zwindow(&dir.0, &aof);
        let after = state(&mut z.conn(), true);
        let what = format!(
            "AOF ({fsync}{}), seed {seed}",
            if rewrite { ", BGREWRITEAOF midway" } else { "" }
        );
        assert_same(&what, &before, &after);
        report(&what, &ran, &before);
    }
}

#[test]
fn aof_appendfsync_always_brings_back_every_write_after_kill_9() {
    aof_restart("always", &[101, 102, 103], true);
}

#[test]
fn aof_appendfsync_everysec_brings_back_every_write_after_shutdown() {
    aof_restart("everysec", &[201, 202, 203], false);
}

#[test]
fn rdb_save_and_debug_reload_bring_back_every_write() {
    let sink = ZwindowServer::start(&["--save", ""]);
    for seed in seeds(&[301, 302]) {
        let dir = PrivateDir::new("equiv-rdb");
        let z = zwindow(&dir.0, &[]);
        let mut c = z.conn();
        let mut g = Gen::new(seed, true, fixtures(sink.port()), now_ms());
        let ran = run_stream(&mut c, &mut g, COMMANDS, |_| {});
        let before = settled_state(&mut c, true);
        assert_eq!(c.cmd(&[b"DEBUG", b"RELOAD"]), b"+OK\r\n");
        assert_same(
            &format!("DEBUG RELOAD, seed {seed}"),
            &before,
            &state(&mut c, true),
        );
        assert_eq!(c.cmd(&[b"SAVE"]), b"+OK\r\n");
        drop(c);
        drop(z);
        let z = zwindow(&dir.0, &[]);
        assert_same(
            &format!("SAVE and restart, seed {seed}"),
            &before,
            &state(&mut z.conn(), true),
        );
        report(&format!("RDB, seed {seed}"), &ran, &before);
    }
}

/// The same stream (the commands both have) against zwindow and against
/// redis-server 7.0, each with the AOF on and a SAVE at the end; each
/// server's files then load into the other. A server's own restart is the
/// reference for its AOF (Redis 7.0 logs less than it keeps in places,
/// such as a consumer's re-deliveries of its history, and zwindow must
/// load what Redis wrote as Redis does); its live dataset for its RDB.
#[test]
fn redis_and_zwindow_load_each_others_files() {
    let sink = ZwindowServer::start(&["--save", ""]);
    let aof = ["--appendonly", "yes"];
    for seed in seeds(&[401, 402]) {
        let fx = || fixtures(sink.port());
        let start_ms = now_ms();

        // zwindow writes; zwindow and redis-server read.
        let zdir = PrivateDir::new("equiv-z");
        let z = zwindow(&zdir.0, &aof);
        let mut c = z.conn();
        let mut g = Gen::new(seed, false, fx(), start_ms);
        let mut shadow = std::env::var_os("ZWINDOW_EQUIV_SHADOW").map(|_| Shadow::new(&zdir.0));
        let ran = run_stream_shadowed(&mut c, &mut g, COMMANDS, &mut |_| {}, &mut shadow);
        let live = settled_state(&mut c, false);
        assert_eq!(c.cmd(&[b"SAVE"]), b"+OK\r\n");
        shutdown(c);
        drop(z);
        keep(&zdir.0, "");
        let z = zwindow(&zdir.0, &aof);
        assert_same(
            "zwindow's AOF into zwindow",
            &live,
            &state(&mut z.conn(), false),
        );
        drop(z);
        assert_loads(
            "zwindow's AOF into redis-server",
            &zdir.0,
            Server::Redis,
            true,
            &live,
        );
        assert_loads(
            "zwindow's RDB into redis-server",
            &zdir.0,
            Server::Redis,
            false,
            &live,
        );
        report(&format!("zwindow's files, seed {seed}"), &ran, &live);

        // redis-server writes; redis-server and zwindow read.
        let rdir = PrivateDir::new("equiv-r");
        let r = redis(&rdir.0, &aof);
        let mut c = r.conn();
        let mut g = Gen::new(seed, false, fx(), start_ms);
        assert_covers_the_table(&mut c, &g, false);
        let ran = run_stream(&mut c, &mut g, COMMANDS, |_| {});
        let redis_live = settled_state(&mut c, false);
        assert_eq!(c.cmd(&[b"SAVE"]), b"+OK\r\n");
        shutdown(c);
        drop(r);
        keep(&rdir.0, "-redis");
        let r = redis(&rdir.0, &aof);
        let redis_reloaded = state(&mut r.conn(), false);
        drop(r);
        assert_loads(
            "redis-server's AOF into zwindow",
            &rdir.0,
            Server::Zwindow,
            true,
            &redis_reloaded,
        );
        assert_loads(
            "redis-server's RDB into zwindow",
            &rdir.0,
            Server::Zwindow,
            false,
            &redis_live,
        );
        report(
            &format!("redis-server's files, seed {seed}"),
            &ran,
            &redis_live,
        );
    }
}

/// `field` of INFO replication.
fn replication_field(c: &mut RawConn, name: &str) -> String {
    let t = text(&c.cmd(&[b"INFO", b"replication"]));
    t.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Waits until `replica`'s link to its primary is up.
fn wait_link_up(replica: &mut RawConn) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while replication_field(replica, "master_link_status") != "up" {
        assert!(Instant::now() < deadline, "the replica's link stayed down");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until every replica has applied all the primary had sent.
fn wait_replicated(primary: &mut RawConn, replicas: &mut [&mut RawConn]) {
    let offset =
        |c: &mut RawConn, name: &str| -> u64 { replication_field(c, name).parse().unwrap_or(0) };
    let want = offset(primary, "master_repl_offset");
    for r in replicas.iter_mut() {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = offset(r, "slave_repl_offset");
            if got >= want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "a replica stayed at offset {got} of {want}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Drops every set member's TTL (SPERSIST), in every database.
fn persist_set_members(c: &mut RawConn) {
    for db in 0..DBS {
        select(c, db);
        for k in keys(c) {
            if text(&c.cmd(&[b"TYPE", &k])).trim() != "+set" {
                continue;
            }
            let members: Vec<Vec<u8>> = parse_reply(&c.cmd(&[b"SMEMBERS", &k]))
                .array()
                .iter()
                .map(|m| m.bulk().to_vec())
                .collect();
            if members.is_empty() {
                continue;
            }
            let n = members.len().to_string();
            let mut args: Vec<&[u8]> = vec![b"SPERSIST", &k, b"MEMBERS", n.as_bytes()];
            args.extend(members.iter().map(|m| &m[..]));
            c.cmd(&args);
        }
    }
    select(c, 0);
}

/// The stream through replication: a zwindow replica and a redis-server
/// 7.0 replica attached to a zwindow primary before the stream runs. The
/// zwindow replica must end with everything its primary has (the same
/// comparison as the files': field and member TTLs and window rules
/// replicate between two zwindows); the redis-server replica with the
/// same contents (`DEBUG DIGEST`: Redis has no member TTLs or rules, and
/// gets what zwindow's own commands amount to).
#[test]
fn replicas_end_with_what_their_primary_has() {
    let sink = ZwindowServer::start(&["--save", ""]);
    for seed in seeds(&[501, 502]) {
        let pdir = PrivateDir::new("equiv-primary");
        let z = zwindow(&pdir.0, &["--repl-diskless-sync-delay", "0"]);
        let port = z.port().to_string();
        let replicaof = ["--replicaof", "127.0.0.1", port.as_str()];
        let zdir = PrivateDir::new("equiv-zreplica");
        let zr = zwindow(&zdir.0, &replicaof);
        let rdir = PrivateDir::new("equiv-rreplica");
        let rr = redis(&rdir.0, &replicaof);
        let (mut zrc, mut rrc) = (zr.conn(), rr.conn());
        wait_link_up(&mut zrc);
        wait_link_up(&mut rrc);

        let mut c = z.conn();
        let mut g = Gen::new(seed, true, fixtures(sink.port()), now_ms());
        let ran = run_stream(&mut c, &mut g, COMMANDS, |_| {});
        let before = settled_state(&mut c, true);
        wait_replicated(&mut c, &mut [&mut zrc, &mut rrc]);
        // Neither replica refused a command of the stream.
        for (name, r) in [("zwindow", &mut zrc), ("redis-server", &mut rrc)] {
            let failed: Vec<String> = text(&r.cmd(&[b"INFO", b"commandstats"]))
                .lines()
                .filter(|l| !l.contains("rejected_calls=0,failed_calls=0"))
                .filter(|l| l.starts_with("cmdstat_"))
                .map(str::to_string)
                .collect();
            assert!(
                failed.is_empty(),
                "the {name} replica answered the stream with errors, seed {seed}: {failed:#?}\n{}",
                text(&r.cmd(&[b"INFO", b"errorstats"]))
            );
        }
        assert_same(
            &format!("a zwindow replica, seed {seed}"),
            &before,
            &state(&mut zrc, true),
        );
        // Redis 7.0 cannot hold set member TTLs, which DEBUG DIGEST counts
        // (as Redis 8 counts hash field TTLs): the primary drops them
        // first (SPERSIST reaches the redis-server replica as nothing).
        persist_set_members(&mut c);
        wait_replicated(&mut c, &mut [&mut rrc]);
        let primary = state(&mut c, false);
        // Named differences first (what both servers have: keys, values,
        // TTLs, groups, functions), then the digest.
        assert_same(
            &format!("a redis-server 8.0 replica, seed {seed}"),
            &primary,
            &state(&mut rrc, false),
        );
        assert_eq!(
            text(&rrc.cmd(&[b"DEBUG", b"DIGEST"])),
            primary.cmp["dataset digest"],
            "a redis-server 8.0 replica's DEBUG DIGEST, seed {seed}"
        );
        report(&format!("through replicas, seed {seed}"), &ran, &before);
    }
}
