//! Replication under load, differential: 50 clients write every data type
//! (strings, counters, TTLs, lists, hashes, sets, sorted sets, streams
//! with trimming and consumer groups, HyperLogLogs, bitmaps, MULTI/EXEC,
//! a writing script, DEL/RENAME, another database) for `REPL_LOAD_SECS`
//! (30 by default) while the link is cut twice (once from each side) and
//! the replica is shut down and restarted from its own dump.rdb. Each
//! reconnection must continue partially, as Redis 7.0 does, and at the
//! end both sides have the same `DEBUG DIGEST` and the replica has every
//! write a `WAIT` acknowledged. Run once with a zwindow replica of a
//! redis-server 7.0 primary, once with a redis-server 7.0 replica of a
//! zwindow primary.
//!
//! Each acknowledged write is recorded as a fact it leaves behind and
//! that nothing later undoes (every client owns its keys, and the keys a
//! fact names are never touched again the other way): `GET k` is `v`, a
//! counter is at least the value INCR answered, a list has (or no longer
//! has) an element, a stream has an entry, a group delivered past an ID…
//! The facts are checked on the primary (they must all hold: the test's
//! own model) and on the replica (those a WAIT covered must hold).

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{
    PrivateDir, RawConn, Reply, ZwindowServer, encode_cmd, escape, find_redis_server, free_port,
    parse_reply, ping_ok,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Writing clients.
const CLIENTS: usize = 50;
/// A client runs `WAIT 1 2000` after this many writes.
const WAIT_EVERY: usize = 200;
/// The database the "another db" writes go to.
const OTHER_DB: u8 = 3;

fn secs() -> u64 {
    std::env::var("REPL_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30)
}

fn text(r: &[u8]) -> String {
    String::from_utf8_lossy(r).into_owned()
}

/// `field` of INFO `section` (empty if absent).
fn info_field(c: &mut RawConn, section: &str, field: &str) -> String {
    let r = text(&c.cmd(&[b"INFO", section.as_bytes()]));
    r.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn stat(c: &mut RawConn, field: &str) -> u64 {
    info_field(c, "stats", field)
        .parse()
        .unwrap_or_else(|_| panic!("INFO stats {field}"))
}

/// Waits until `f` holds (`secs` at most).
fn eventually(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------
// Facts
// ---------------------------------------------------------------------------

/// What an acknowledged write leaves behind, in database `db`.
#[derive(Clone, Debug)]
struct Fact {
    db: u8,
    key: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// GET is this value.
    Str(Vec<u8>),
    /// GET contains this.
    Contains(String),
    /// GET is an integer at least this.
    AtLeast(i64),
    /// The key exists with a TTL.
    HasTtl,
    /// The key does not exist.
    Missing,
    /// LPOS finds (true) or does not find (false) the element.
    List(String, bool),
    /// HGET field is the value.
    Field(String, String),
    /// HGET field is an integer at least this.
    HashAtLeast(String, i64),
    /// ZSCORE is nil.
    NotScored(String),
    /// SISMEMBER.
    Member(String),
    /// ZSCORE is this.
    Score(String, i64),
    /// The stream has this entry.
    Entry(String),
    /// The stream has nothing before this ID (XTRIM MINID).
    NoneBefore(String),
    /// The group's last-delivered-id is at least this, and the entry is
    /// not pending (XREADGROUP, then XACK).
    Delivered(String, String),
    /// The HyperLogLog includes the element (PFADD changes no register).
    Hll(String),
    /// GETBIT is 1.
    Bit(u64),
}

impl Fact {
    fn new(db: u8, key: &str, kind: Kind) -> Fact {
        Fact {
            db,
            key: key.to_string(),
            kind,
        }
    }

    /// The commands whose replies decide the fact (none for HLL facts,
    /// checked apart).
    fn queries(&self) -> Vec<Vec<Vec<u8>>> {
        let k = self.key.as_bytes().to_vec();
        let q = |parts: &[&[u8]]| parts.iter().map(|p| p.to_vec()).collect::<Vec<_>>();
        match &self.kind {
            Kind::Str(_) | Kind::Contains(_) | Kind::AtLeast(_) => vec![q(&[b"GET", &k])],
            Kind::HasTtl => vec![q(&[b"PTTL", &k])],
            Kind::Missing => vec![q(&[b"EXISTS", &k])],
            Kind::List(e, _) => vec![q(&[b"LPOS", &k, e.as_bytes()])],
            Kind::Field(f, _) | Kind::HashAtLeast(f, _) => vec![q(&[b"HGET", &k, f.as_bytes()])],
            Kind::NotScored(m) => vec![q(&[b"ZSCORE", &k, m.as_bytes()])],
            Kind::Member(m) => vec![q(&[b"SISMEMBER", &k, m.as_bytes()])],
            Kind::Score(m, _) => vec![q(&[b"ZSCORE", &k, m.as_bytes()])],
            Kind::Entry(id) => vec![q(&[b"XRANGE", &k, id.as_bytes(), id.as_bytes()])],
            Kind::NoneBefore(id) => {
                let before = format!("({id}");
                vec![q(&[b"XRANGE", &k, b"-", before.as_bytes(), b"COUNT", b"1"])]
            }
            Kind::Delivered(g, id) => vec![
                q(&[b"XINFO", b"GROUPS", &k]),
                q(&[
                    b"XPENDING",
                    &k,
                    g.as_bytes(),
                    id.as_bytes(),
                    id.as_bytes(),
                    b"1",
                ]),
            ],
            Kind::Bit(off) => vec![q(&[b"GETBIT", &k, off.to_string().as_bytes()])],
            Kind::Hll(_) => vec![],
        }
    }

    /// Whether the replies to [`Self::queries`] show the fact.
    fn holds(&self, replies: &[Reply]) -> bool {
        let bulk = |r: &Reply| match r {
            Reply::Bulk(b) => Some(b.clone()),
            _ => None,
        };
        match &self.kind {
            Kind::Str(v) => bulk(&replies[0]).as_ref() == Some(v),
            Kind::Contains(s) => bulk(&replies[0]).is_some_and(|b| text(&b).contains(s.as_str())),
            Kind::AtLeast(n) => {
                bulk(&replies[0]).is_some_and(|b| text(&b).parse::<i64>().is_ok_and(|v| v >= *n))
            }
            Kind::HasTtl => matches!(replies[0], Reply::Int(t) if t > 0),
            Kind::Missing => matches!(replies[0], Reply::Int(0)),
            Kind::List(_, present) => matches!(replies[0], Reply::Int(_)) == *present,
            Kind::Field(_, v) => bulk(&replies[0]) == Some(v.as_bytes().to_vec()),
            Kind::HashAtLeast(_, n) => {
                bulk(&replies[0]).is_some_and(|b| text(&b).parse::<i64>().is_ok_and(|v| v >= *n))
            }
            Kind::NotScored(_) => matches!(replies[0], Reply::Nil),
            Kind::Member(_) => matches!(replies[0], Reply::Int(1)),
            Kind::Score(_, s) => bulk(&replies[0]) == Some(s.to_string().into_bytes()),
            Kind::Entry(_) => matches!(&replies[0], Reply::Array(a) if a.len() == 1),
            Kind::NoneBefore(_) => matches!(&replies[0], Reply::Array(a) if a.is_empty()),
            Kind::Delivered(g, id) => {
                let Reply::Array(groups) = &replies[0] else {
                    return false;
                };
                let delivered = groups.iter().any(|grp| {
                    let Reply::Array(kv) = grp else { return false };
                    let field = |name: &str| {
                        kv.chunks(2)
                            .find(|p| bulk(&p[0]).as_deref() == Some(name.as_bytes()))
                            .and_then(|p| bulk(&p[1]))
                    };
                    field("name").as_deref() == Some(g.as_bytes())
                        && field("last-delivered-id")
                            .is_some_and(|last| stream_id(&text(&last)) >= stream_id(id))
                });
                delivered && matches!(&replies[1], Reply::Array(a) if a.is_empty())
            }
            Kind::Bit(_) => matches!(replies[0], Reply::Int(1)),
            Kind::Hll(_) => unreachable!("checked apart"),
        }
    }
}

fn stream_id(id: &str) -> (u64, u64) {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
}

/// The facts of `facts` that do not hold on `c`. HyperLogLogs are read
/// with DUMP and restored on `scratch` (a writable server), where adding
/// an element they include changes nothing.
fn failing(c: &mut RawConn, scratch: &mut RawConn, facts: &[&Fact]) -> Vec<Fact> {
    let mut bad = Vec::new();
    // Pipelined, a batch at a time, SELECTing as the database changes.
    for batch in facts.chunks(500) {
        let mut wire = Vec::new();
        let mut shape = Vec::new();
        let mut db = None;
        for f in batch {
            let qs = f.queries();
            if qs.is_empty() {
                continue;
            }
            if db != Some(f.db) {
                wire.extend(encode_cmd(&[b"SELECT", f.db.to_string().as_bytes()]));
                shape.push(None);
                db = Some(f.db);
            }
            for q in &qs {
                let refs: Vec<&[u8]> = q.iter().map(|a| &a[..]).collect();
                wire.extend(encode_cmd(&refs));
            }
            shape.push(Some((*f, qs.len())));
        }
        c.send(&wire);
        for s in shape {
            match s {
                None => assert_eq!(c.read_reply(), b"+OK\r\n"),
                Some((f, n)) => {
                    let replies: Vec<Reply> =
                        (0..n).map(|_| parse_reply(&c.read_reply())).collect();
                    if !f.holds(&replies) {
                        bad.push(f.clone());
                    }
                }
            }
        }
    }
    assert_eq!(c.cmd(&[b"SELECT", b"0"]), b"+OK\r\n");
    // HyperLogLogs, by key.
    let mut hlls: Vec<&Fact> = facts
        .iter()
        .copied()
        .filter(|f| matches!(f.kind, Kind::Hll(_)))
        .collect();
    hlls.sort_by(|a, b| (a.db, &a.key).cmp(&(b.db, &b.key)));
    for group in hlls.chunk_by(|a, b| (a.db, &a.key) == (b.db, &b.key)) {
        let f0 = group[0];
        c.cmd(&[b"SELECT", f0.db.to_string().as_bytes()]);
        let dump = match parse_reply(&c.cmd(&[b"DUMP", f0.key.as_bytes()])) {
            Reply::Bulk(d) => d,
            _ => {
                bad.extend(group.iter().map(|f| (*f).clone()));
                continue;
            }
        };
        let r = scratch.cmd(&[b"RESTORE", b"hll", b"0", &dump, b"REPLACE"]);
        assert_eq!(r, b"+OK\r\n", "RESTORE: {}", escape(&r));
        for f in group {
            let Kind::Hll(e) = &f.kind else { continue };
            if scratch.cmd(&[b"PFADD", b"hll", e.as_bytes()]) != b":0\r\n" {
                bad.push((*f).clone());
            }
        }
    }
    assert_eq!(c.cmd(&[b"SELECT", b"0"]), b"+OK\r\n");
    bad
}

// ---------------------------------------------------------------------------
// Writers
// ---------------------------------------------------------------------------

/// What one client did.
#[derive(Default)]
struct Log {
    /// Acknowledged write commands.
    writes: u64,
    /// Of which covered by a WAIT that answered 1.
    wait_acked: u64,
    /// Facts, and how many of the first ones a WAIT covered.
    facts: Vec<Fact>,
    facts_acked: usize,
    /// WAITs run, and how many answered 0 (the link was down).
    waits: u64,
    waits_short: u64,
}

/// One client writing until `stop`.
struct Writer {
    c: RawConn,
    id: usize,
    rng: StdRng,
    log: Log,
    /// Acknowledged writes since the last WAIT.
    since_wait: u64,
}

impl Writer {
    fn key(&self, name: &str) -> String {
        format!("c{}:{name}", self.id)
    }

    /// Sends a write, which must succeed; its reply.
    fn write(&mut self, args: &[&[u8]]) -> Reply {
        let r = self.c.cmd(args);
        assert!(
            !r.starts_with(b"-"),
            "client {}: {} -> {}",
            self.id,
            args.iter().map(|a| escape(a)).collect::<Vec<_>>().join(" "),
            escape(&r)
        );
        self.log.writes += 1;
        self.since_wait += 1;
        parse_reply(&r)
    }

    fn fact(&mut self, key: &str, kind: Kind) {
        self.log.facts.push(Fact::new(0, key, kind));
    }

    fn int(r: &Reply) -> i64 {
        match r {
            Reply::Int(i) => *i,
            other => panic!("expected an integer: {other:?}"),
        }
    }

    fn bulk_text(r: &Reply) -> String {
        match r {
            Reply::Bulk(b) => text(b),
            other => panic!("expected a bulk string: {other:?}"),
        }
    }

    fn setup(&mut self) {
        let st = self.key("st");
        self.write(&[b"XGROUP", b"CREATE", st.as_bytes(), b"g", b"$", b"MKSTREAM"]);
    }

    /// One operation (one or a few writes), by `op`.
    fn step(&mut self, i: u64) {
        let n = i.to_string();
        let nb = n.as_bytes();
        let op = self.rng.random_range(0..23u32);
        match op {
            0 => {
                let k = self.key(&format!("str:{i}"));
                let v = format!("v{i}-{}", self.rng.random::<u32>());
                self.write(&[b"SET", k.as_bytes(), v.as_bytes()]);
                self.fact(&k, Kind::Str(v.into_bytes()));
            }
            1 => {
                let k = self.key("ctr");
                let r = self.write(&[b"INCR", k.as_bytes()]);
                self.fact(&k, Kind::AtLeast(Self::int(&r)));
            }
            2 => {
                let k = self.key(&format!("app:{}", i / 100));
                let piece = format!("<{i}>");
                self.write(&[b"APPEND", k.as_bytes(), piece.as_bytes()]);
                self.fact(&k, Kind::Contains(piece));
            }
            3 => {
                let k = self.key(&format!("sr:{i}"));
                let v = format!("x{i}");
                self.write(&[b"SETRANGE", k.as_bytes(), b"3", v.as_bytes()]);
                let mut want = vec![0u8; 3];
                want.extend_from_slice(v.as_bytes());
                self.fact(&k, Kind::Str(want));
            }
            4 => {
                let k = self.key(&format!("px:{i}"));
                self.write(&[b"SET", k.as_bytes(), nb, b"PX", b"3600000"]);
                self.fact(&k, Kind::HasTtl);
            }
            5 => {
                let k = self.key(&format!("ex:{i}"));
                self.write(&[b"SET", k.as_bytes(), nb]);
                self.write(&[b"EXPIRE", k.as_bytes(), b"3600"]);
                self.fact(&k, Kind::HasTtl);
            }
            6 | 7 => {
                let k = self.key("list");
                let e = format!("e{i}");
                if op == 6 {
                    self.write(&[b"RPUSH", k.as_bytes(), e.as_bytes()]);
                } else {
                    self.write(&[b"LPUSH", k.as_bytes(), e.as_bytes()]);
                }
                self.fact(&k, Kind::List(e, true));
            }
            8 => {
                // A queue: push, and pop what was pushed earliest.
                let k = self.key("queue");
                let e = format!("q{i}");
                self.write(&[b"RPUSH", k.as_bytes(), e.as_bytes()]);
                if let Reply::Bulk(popped) = self.write(&[b"LPOP", k.as_bytes()]) {
                    self.fact(&k, Kind::List(text(&popped), false));
                }
            }
            9 => {
                let k = self.key("hash");
                let (f, v) = (format!("f{i}"), format!("v{i}"));
                self.write(&[b"HSET", k.as_bytes(), f.as_bytes(), v.as_bytes()]);
                self.fact(&k, Kind::Field(f, v));
            }
            10 => {
                let k = self.key("set");
                let m = format!("m{i}");
                self.write(&[b"SADD", k.as_bytes(), m.as_bytes()]);
                self.fact(&k, Kind::Member(m));
            }
            11 => {
                let k = self.key("zset");
                let m = format!("m{i}");
                self.write(&[b"ZADD", k.as_bytes(), nb, m.as_bytes()]);
                self.fact(&k, Kind::Score(m, i as i64));
            }
            12 => {
                let k = self.key("st");
                let r = self.write(&[b"XADD", k.as_bytes(), b"*", b"f", nb]);
                self.fact(&k, Kind::Entry(Self::bulk_text(&r)));
            }
            13 => {
                // A consumer group: read one new entry, acknowledge it.
                let k = self.key("st");
                self.write(&[b"XADD", k.as_bytes(), b"*", b"g", nb]);
                let r = self.write(&[
                    b"XREADGROUP",
                    b"GROUP",
                    b"g",
                    b"consumer",
                    b"COUNT",
                    b"1",
                    b"STREAMS",
                    k.as_bytes(),
                    b">",
                ]);
                let id = Self::bulk_text(&r.array()[0].array()[1].array()[0].array()[0]);
                let acked = self.write(&[b"XACK", k.as_bytes(), b"g", id.as_bytes()]);
                assert_eq!(Self::int(&acked), 1);
                self.fact(&k, Kind::Delivered("g".into(), id));
            }
            14 => {
                let k = self.key("trimmed");
                let r = self.write(&[b"XADD", k.as_bytes(), b"*", b"f", nb]);
                let id = Self::bulk_text(&r);
                self.write(&[b"XTRIM", k.as_bytes(), b"MINID", id.as_bytes()]);
                self.fact(&k, Kind::NoneBefore(id));
            }
            15 => {
                let k = self.key("hll");
                let e = format!("e{i}");
                self.write(&[b"PFADD", k.as_bytes(), e.as_bytes()]);
                self.fact(&k, Kind::Hll(e));
            }
            16 => {
                let k = self.key("bits");
                let off = self.rng.random_range(0..100_000u64);
                self.write(&[b"SETBIT", k.as_bytes(), off.to_string().as_bytes(), b"1"]);
                self.fact(&k, Kind::Bit(off));
            }
            17 => {
                let (sk, ck, lk) = (
                    self.key(&format!("mx:{i}")),
                    self.key("ctr"),
                    self.key("list"),
                );
                let e = format!("mx{i}");
                assert_eq!(self.c.cmd(&[b"MULTI"]), b"+OK\r\n");
                for args in [
                    vec![&b"SET"[..], sk.as_bytes(), nb],
                    vec![&b"INCR"[..], ck.as_bytes()],
                    vec![&b"RPUSH"[..], lk.as_bytes(), e.as_bytes()],
                ] {
                    assert_eq!(self.c.cmd(&args), b"+QUEUED\r\n");
                }
                let r = self.write(&[b"EXEC"]);
                let a = r.array();
                assert_eq!(a.len(), 3, "EXEC: {r:?}");
                self.log.writes += 2;
                self.since_wait += 2;
                self.fact(&sk, Kind::Str(nb.to_vec()));
                self.fact(&ck, Kind::AtLeast(Self::int(&a[1])));
                self.fact(&lk, Kind::List(e, true));
            }
            18 => {
                let (sk, hk, ck) = (
                    self.key(&format!("lua:{i}")),
                    self.key("luahash"),
                    self.key("luactr"),
                );
                let r = self.write(&[
                    b"EVAL",
                    b"redis.call('set', KEYS[1], ARGV[1]); \
                      redis.call('hset', KEYS[2], ARGV[1], ARGV[1]); \
                      return redis.call('incr', KEYS[3])",
                    b"3",
                    sk.as_bytes(),
                    hk.as_bytes(),
                    ck.as_bytes(),
                    nb,
                ]);
                self.fact(&sk, Kind::Str(nb.to_vec()));
                self.fact(&hk, Kind::Field(n.clone(), n.clone()));
                self.fact(&ck, Kind::AtLeast(Self::int(&r)));
            }
            19 => {
                let (from, to) = (self.key(&format!("tmp:{i}")), self.key(&format!("ren:{i}")));
                self.write(&[b"SET", from.as_bytes(), nb]);
                self.write(&[b"RENAME", from.as_bytes(), to.as_bytes()]);
                self.fact(&from, Kind::Missing);
                self.fact(&to, Kind::Str(nb.to_vec()));
            }
            20 => {
                let k = self.key(&format!("del:{i}"));
                self.write(&[b"SADD", k.as_bytes(), nb]);
                self.write(&[b"DEL", k.as_bytes()]);
                self.fact(&k, Kind::Missing);
            }
            21 => {
                // Another database.
                let (sk, hk, zk) = (
                    self.key(&format!("db:{i}")),
                    self.key("dbhash"),
                    self.key("dbzset"),
                );
                let db = OTHER_DB.to_string();
                assert_eq!(self.c.cmd(&[b"SELECT", db.as_bytes()]), b"+OK\r\n");
                self.write(&[b"SET", sk.as_bytes(), nb]);
                let h = self.write(&[b"HINCRBY", hk.as_bytes(), b"n", b"1"]);
                self.write(&[b"ZINCRBY", zk.as_bytes(), b"1", nb]);
                assert_eq!(self.c.cmd(&[b"SELECT", b"0"]), b"+OK\r\n");
                let facts = [
                    Fact::new(OTHER_DB, &sk, Kind::Str(nb.to_vec())),
                    Fact::new(OTHER_DB, &hk, Kind::HashAtLeast("n".into(), Self::int(&h))),
                ];
                self.log.facts.extend(facts);
            }
            _ => {
                // A sorted set used as a priority queue: ZPOPMIN removes
                // the lowest score, never to be added again.
                let k = self.key("ranked");
                let m = format!("r{i}");
                self.write(&[b"ZADD", k.as_bytes(), nb, m.as_bytes()]);
                if i.is_multiple_of(2) {
                    let r = self.write(&[b"ZPOPMIN", k.as_bytes()]);
                    let popped = Self::bulk_text(&r.array()[0]);
                    self.fact(&k, Kind::NotScored(popped));
                }
            }
        }
    }
}

impl Writer {
    /// Writes until `stop`, with a `WAIT 1 2000` every [`WAIT_EVERY`]
    /// writes.
    fn run(mut self, stop: &AtomicBool) -> Log {
        self.setup();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            self.step(i);
            i += 1;
            if self.since_wait >= WAIT_EVERY as u64 {
                self.log.waits += 1;
                let n = parse_reply(&self.c.cmd(&[b"WAIT", b"1", b"2000"])).int();
                if n >= 1 {
                    self.log.wait_acked = self.log.writes;
                    self.log.facts_acked = self.log.facts.len();
                } else {
                    self.log.waits_short += 1;
                }
                self.since_wait = 0;
            }
        }
        self.log
    }
}

// ---------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum ServerKind {
    Zwindow,
    Redis,
}

/// A redis-server process of our own (the harness's picks its own port
/// and directory; a restart needs the same ones again).
struct RedisProc(Child);

impl Drop for RedisProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

enum Proc {
    Z(ZwindowServer),
    R(RedisProc),
}

/// The replica: which server, its port and its directory (kept across
/// the restart).
struct Replica {
    kind: ServerKind,
    port: u16,
    dir: PrivateDir,
    primary_port: u16,
    proc: Option<Proc>,
}

impl Replica {
    fn start(kind: ServerKind, primary_port: u16) -> Replica {
        let mut r = Replica {
            kind,
            port: 0,
            dir: PrivateDir::new("repl-load-replica"),
            primary_port,
            proc: None,
        };
        r.spawn();
        r
    }

    /// Starts the server on `self.port` (0: any, for zwindow) in `dir`,
    /// as a replica from its configuration.
    fn spawn(&mut self) {
        let pp = self.primary_port.to_string();
        let common = [
            "--save",
            "",
            "--enable-debug-command",
            "yes",
            "--repl-backlog-size",
            "64mb",
            "--replicaof",
            "127.0.0.1",
            &pp,
        ];
        match self.kind {
            ServerKind::Zwindow => {
                let mut cmd = Command::new(env!("CARGO_BIN_EXE_zwindow"));
                cmd.args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
                    .args(common)
                    .current_dir(&self.dir.0);
                let z = ZwindowServer::start_command(cmd);
                self.port = z.port();
                self.proc = Some(Proc::Z(z));
            }
            ServerKind::Redis => {
                if self.port == 0 {
                    self.port = free_port();
                }
                let child = Command::new(find_redis_server())
                    .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--appendonly", "no", "--daemonize", "no", "--dir"])
                    .arg(&self.dir.0)
                    .args(common)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("spawn redis-server");
                let p = RedisProc(child);
                eventually("the replica to answer PING", 10, || ping_ok(self.port));
                self.proc = Some(Proc::R(p));
            }
        }
    }

    fn conn(&self) -> RawConn {
        RawConn::connect(
            std::net::SocketAddr::from(([127, 0, 0, 1], self.port)),
            "replica",
        )
    }

    fn link_up(&self) -> bool {
        info_field(&mut self.conn(), "replication", "master_link_status") == "up"
    }

    /// SHUTDOWN SAVE (the dump.rdb records the primary's replication ID
    /// and offset), waits for the exit, and starts it again on the same
    /// port and directory.
    fn restart(&mut self) {
        let mut c = self.conn();
        c.send(&encode_cmd(&[b"SHUTDOWN", b"SAVE"]));
        assert!(
            c.is_closed(Duration::from_secs(20)),
            "SHUTDOWN did not close the connection"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let exited = match self.proc.as_mut() {
                Some(Proc::Z(z)) => !z.is_running(),
                Some(Proc::R(r)) => r.0.try_wait().ok().flatten().is_some(),
                None => true,
            };
            if exited {
                break;
            }
            assert!(Instant::now() < deadline, "the replica did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            self.dir.0.join("dump.rdb").is_file(),
            "SHUTDOWN SAVE left no dump.rdb"
        );
        self.proc = None;
        self.spawn();
    }

    fn log_tail(&self) -> String {
        match &self.proc {
            Some(Proc::Z(z)) => z.log_tail(),
            _ => String::new(),
        }
    }
}

/// The primary's resync counters.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Syncs {
    full: u64,
    partial: u64,
}

fn syncs(c: &mut RawConn) -> Syncs {
    Syncs {
        full: stat(c, "sync_full"),
        partial: stat(c, "sync_partial_ok"),
    }
}

/// After an event that breaks the link: waits for the primary to count
/// a resync, then for the replica's link to be up again; which it was.
fn reconnected(what: &str, p: &mut RawConn, replica: &Replica, before: Syncs) -> &'static str {
    eventually(&format!("a resync after {what}"), 30, || {
        let s = syncs(p);
        s.full + s.partial > before.full + before.partial
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !replica.link_up() {
        assert!(
            Instant::now() < deadline,
            "the link stayed down after {what}\n{}",
            replica.log_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = syncs(p);
    let how = if after.full > before.full {
        "full"
    } else {
        "partial"
    };
    eprintln!("{what}: {how} resync ({before:?} -> {after:?})");
    how
}

/// The whole scenario: `primary_port` serves the writers, the replica is
/// of `replica_kind`.
fn under_load(primary_port: u16, replica_kind: ServerKind) {
    let primary = || {
        RawConn::connect(
            std::net::SocketAddr::from(([127, 0, 0, 1], primary_port)),
            "primary",
        )
    };
    let mut p = primary();
    common::dataset::populate(&mut p);
    let mut replica = Replica::start(replica_kind, primary_port);
    eventually("the replica's first sync", 30, || replica.link_up());
    let start = syncs(&mut p);
    assert_eq!(start.full, 1, "{start:?}");

    let stop = AtomicBool::new(false);
    let total = Duration::from_secs(secs());
    let began = Instant::now();
    let mut events = Vec::new();
    let logs: Vec<Log> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|id| {
                let mut c = primary();
                c.set_timeout(Duration::from_secs(30));
                let w = Writer {
                    c,
                    id,
                    rng: StdRng::seed_from_u64(id as u64 * 7919 + 1),
                    log: Log::default(),
                    since_wait: 0,
                };
                let stop = &stop;
                s.spawn(move || w.run(stop))
            })
            .collect();
        let at = |frac: f64| {
            let t = total.mul_f64(frac);
            if let Some(left) = t.checked_sub(began.elapsed()) {
                std::thread::sleep(left);
            }
        };
        // The link cut from the primary's side.
        at(0.2);
        let before = syncs(&mut p);
        let killed = parse_reply(&p.cmd(&[b"CLIENT", b"KILL", b"TYPE", b"replica"])).int();
        assert_eq!(killed, 1, "CLIENT KILL TYPE replica");
        events.push((
            "link cut by the primary",
            reconnected("CLIENT KILL TYPE replica", &mut p, &replica, before),
        ));
        // The replica shut down and restarted from its dump.rdb.
        at(0.45);
        let before = syncs(&mut p);
        replica.restart();
        events.push((
            "replica restarted",
            reconnected("the replica's restart", &mut p, &replica, before),
        ));
        // The link cut from the replica's side.
        at(0.7);
        let before = syncs(&mut p);
        let killed = parse_reply(
            &replica
                .conn()
                .cmd(&[b"CLIENT", b"KILL", b"TYPE", b"master"]),
        )
        .int();
        assert_eq!(killed, 1, "CLIENT KILL TYPE master");
        events.push((
            "link cut by the replica",
            reconnected("CLIENT KILL TYPE master", &mut p, &replica, before),
        ));
        at(1.0);
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    // Everything written has reached the replica.
    assert_eq!(p.cmd(&[b"SET", b"the-end", b"1"]), b"+OK\r\n");
    assert_eq!(
        parse_reply(&p.cmd(&[b"WAIT", b"1", b"5000"])).int(),
        1,
        "WAIT 1 5000"
    );
    let mut rc = replica.conn();
    let offset = info_field(&mut p, "replication", "master_repl_offset");
    eventually("the replica's offset", 20, || {
        info_field(&mut rc, "replication", "slave_repl_offset") == offset
    });
    let (pd, rd) = (
        p.cmd(&[b"DEBUG", b"DIGEST"]),
        rc.cmd(&[b"DEBUG", b"DIGEST"]),
    );
    let end = syncs(&mut p);

    let writes: u64 = logs.iter().map(|l| l.writes).sum();
    let wait_acked: u64 = logs.iter().map(|l| l.wait_acked).sum();
    let waits: u64 = logs.iter().map(|l| l.waits).sum();
    let waits_short: u64 = logs.iter().map(|l| l.waits_short).sum();
    let facts: Vec<&Fact> = logs.iter().flat_map(|l| l.facts.iter()).collect();
    let acked: Vec<&Fact> = logs
        .iter()
        .flat_map(|l| l.facts[..l.facts_acked].iter())
        .collect();
    let partials = events.iter().filter(|e| e.1 == "partial").count();
    eprintln!(
        "{replica_kind:?} replica: {writes} writes by {CLIENTS} clients in {:.1} s, \
         {wait_acked} covered by a WAIT that answered 1 ({waits} WAITs, {waits_short} answered 0); \
         {} facts recorded, {} WAIT-acked; resyncs: {partials} partial, {} full \
         (primary: sync_full {} -> {}, sync_partial_ok {} -> {}); {events:?}",
        began.elapsed().as_secs_f64(),
        facts.len(),
        acked.len(),
        events.len() - partials,
        start.full,
        end.full,
        start.partial,
        end.partial,
    );

    assert_eq!(
        escape(&pd),
        escape(&rd),
        "DEBUG DIGEST differs between the primary and the replica"
    );
    assert!(writes > 1000, "only {writes} writes");
    assert!(wait_acked > 0, "no WAIT answered 1");
    // Every reconnection, the restart's included, continued from the
    // backlog, as with a redis-server 7.0 replica.
    assert_eq!(end.full, start.full, "a full resync: {events:?}");
    assert_eq!(end.partial, start.partial + 3, "{events:?}");

    // The test's model: every fact holds on the primary.
    let scratch_server = ZwindowServer::start(&["--save", ""]);
    let mut scratch = scratch_server.conn();
    let bad = failing(&mut p, &mut scratch, &facts);
    assert!(
        bad.is_empty(),
        "{} of {} facts do not hold on the primary: {:?}",
        bad.len(),
        facts.len(),
        &bad[..bad.len().min(10)]
    );
    // No WAIT-acknowledged write lost on the replica (nor any other).
    let bad = failing(&mut rc, &mut scratch, &acked);
    assert!(
        bad.is_empty(),
        "{} of {} WAIT-acknowledged facts lost on the replica: {:?}",
        bad.len(),
        acked.len(),
        &bad[..bad.len().min(10)]
    );
    let bad = failing(&mut rc, &mut scratch, &facts);
    assert!(
        bad.is_empty(),
        "{} of {} facts missing on the replica: {:?}",
        bad.len(),
        facts.len(),
        &bad[..bad.len().min(10)]
    );
    // The replica ran every command of the stream without an error.
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}

/// The options both primaries start with.
const PRIMARY_ARGS: &[&str] = &[
    "--enable-debug-command",
    "yes",
    "--repl-backlog-size",
    "64mb",
    "--repl-diskless-sync-delay",
    "0",
];

#[test]
fn a_zwindow_replica_of_a_redis_primary_under_load() {
    let r = common::RedisServer::start_with(PRIMARY_ARGS);
    under_load(r.port(), ServerKind::Zwindow);
}

#[test]
fn a_redis_replica_of_a_zwindow_primary_under_load() {
    let mut args = PRIMARY_ARGS.to_vec();
    args.extend(["--save", ""]);
    let z = ZwindowServer::start(&args);
    under_load(z.port(), ServerKind::Redis);
}
