//! The random write stream: one entry per command of the table (and its
//! subcommands), each a template of Redis syntax expanded with random
//! arguments over a small key space per type, so commands meet each
//! other's keys, types, TTLs, groups and window rules.
//!
//! Template syntax: words are sent as they are; `{name}` is a random
//! argument (see [`Gen::arg`]); `[…]` is optional; `(a | b c)` picks one
//! alternative; `<…>` repeats one to three times; `#<…>` does the same,
//! preceded by the number of repetitions (`numkeys`, `FIELDS n`, …).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Which servers a template runs on.
#[derive(Clone, Copy, PartialEq)]
pub enum On {
    /// zwindow and Redis 8.0 (the other server compared).
    Both,
    /// zwindow only (its own commands, and those newer than Redis 8.0).
    Zwindow,
}

use On::{Both, Zwindow};

/// `(command-table name, relative weight, servers, template)`. The name
/// is what `COMMAND LIST FILTERBY ACLCAT write` calls it, so the test can
/// hold this table to the server's: a write command without a template
/// fails it.
#[rustfmt::skip]
pub const TEMPLATES: &[(&str, f64, On, &str)] = &[
    // Strings and counters.
    ("append", 1.0, Both, "APPEND {str} {val}"),
    ("decr", 1.0, Both, "DECR {int}"),
    ("decrby", 1.0, Both, "DECRBY {int} {incr}"),
    ("getdel", 1.0, Both, "GETDEL {str}"),
    ("getex", 1.0, Both, "GETEX {str} [{ttl}|PERSIST]"),
    ("getset", 1.0, Both, "GETSET {str} {val}"),
    ("incr", 1.0, Both, "INCR {int}"),
    ("incrby", 1.0, Both, "INCRBY {int} {incr}"),
    ("incrbyfloat", 1.0, Both, "INCRBYFLOAT {int} {fincr}"),
    ("increx", 1.0, Zwindow, "INCREX {int} [(BYINT {incr} | BYFLOAT {fincr})] [LBOUND {incr}] [UBOUND {incr}] [SATURATE] [({ttl} | PERSIST)]"),
    ("mset", 1.0, Both, "MSET <{str} {val}>"),
    ("msetex", 1.0, Zwindow, "MSETEX #<{str} {val}> [(NX | XX)] [({ttl} | KEEPTTL)]"),
    ("msetnx", 1.0, Both, "MSETNX <{str} {val}>"),
    ("psetex", 1.0, Both, "PSETEX {str} ({px} | {short}) {val}"),
    ("set", 2.0, Both, "SET {str} ({val} | {big}) [(NX | XX)] [({ttl} | KEEPTTL | PX {short})] [GET]"),
    ("setex", 1.0, Both, "SETEX {str} {ex} {val}"),
    ("setnx", 1.0, Both, "SETNX {str} {val}"),
    ("setrange", 1.0, Both, "SETRANGE {str} {byte} {val}"),
    // Bits and HyperLogLogs.
    ("bitfield", 1.0, Both, "BITFIELD {bits} <(GET {btype} {bit} | SET {btype} {bit} {incr} | INCRBY {btype} {bit} {incr} | OVERFLOW (WRAP | SAT | FAIL))>"),
    ("bitop", 1.0, Both, "BITOP ((AND | OR | XOR) {bits} {bits} <{bits}> | NOT {bits} {bits})"),
    ("setbit", 1.0, Both, "SETBIT {bits} {bit} (0 | 1)"),
    ("pfadd", 1.0, Both, "PFADD {hll} <{val}>"),
    ("pfdebug", 0.5, Both, "PFDEBUG (GETREG | ENCODING | TODENSE | DECODE) {hll}"),
    ("pfmerge", 1.0, Both, "PFMERGE {hll} <{hll}>"),
    // Keys.
    ("copy", 1.0, Both, "COPY {any} {any} [DB {db}] [REPLACE]"),
    ("del", 1.0, Both, "DEL <{any}>"),
    ("delex", 1.0, Zwindow, "DELEX {str} [(IFEQ {val} | IFNE {val})]"),
    ("expire", 1.0, Both, "EXPIRE {any} ({ex} | -1) [(NX | XX | GT | LT)]"),
    ("expireat", 1.0, Both, "EXPIREAT {any} ({exat} | 1) [(NX | XX | GT | LT)]"),
    // Weight 0: once per run, at the start (see `run_stream`).
    ("flushall", 0.0, Both, "FLUSHALL [(ASYNC | SYNC)]"),
    ("flushdb", 0.15, Both, "FLUSHDB [(ASYNC | SYNC)]"),
    ("migrate", 0.5, Both, "MIGRATE 127.0.0.1 {sink} ({any} 0 5000 [COPY] [REPLACE] | {empty} 0 5000 [COPY] REPLACE KEYS <{any}>)"),
    ("move", 1.0, Both, "MOVE {any} {db}"),
    ("persist", 1.0, Both, "PERSIST {any}"),
    ("pexpire", 1.0, Both, "PEXPIRE {any} ({px} | {short}) [(NX | XX | GT | LT)]"),
    ("pexpireat", 1.0, Both, "PEXPIREAT {any} {pxat} [(NX | XX | GT | LT)]"),
    ("rename", 1.0, Both, "RENAME {any} {any}"),
    ("renamenx", 1.0, Both, "RENAMENX {any} {any}"),
    ("restore", 1.0, Both, "RESTORE {any} (0 | {px}) {payload} [REPLACE] [IDLETIME 10]"),
    ("restore", 0.5, Both, "RESTORE {any} {pxat} {payload} [REPLACE] ABSTTL"),
    ("restore-asking", 0.5, Both, "RESTORE-ASKING {any} 0 {payload} [REPLACE]"),
    ("sort", 1.0, Both, "SORT ({list} | {set}) [LIMIT 0 {cnt}] [(ASC | DESC)] [ALPHA] STORE {list}"),
    ("swapdb", 0.3, Both, "SWAPDB {db} {db}"),
    ("unlink", 1.0, Both, "UNLINK <{any}>"),
    // Hashes, with Redis 8.0's field TTLs.
    ("hdel", 1.0, Both, "HDEL {hash} <{field}>"),
    ("hexpire", 1.0, Both, "HEXPIRE {hash} ({ex} | 0) [(NX | XX | GT | LT)] FIELDS #<{field}>"),
    ("hexpireat", 1.0, Both, "HEXPIREAT {hash} ({exat} | 1) [(NX | XX | GT | LT)] FIELDS #<{field}>"),
    ("hgetdel", 1.0, Both, "HGETDEL {hash} FIELDS #<{field}>"),
    ("hgetex", 1.0, Both, "HGETEX {hash} [({ttl} | PERSIST)] FIELDS #<{field}>"),
    ("hincrby", 1.0, Both, "HINCRBY {hash} {field} {incr}"),
    ("hincrbyfloat", 1.0, Both, "HINCRBYFLOAT {hash} {field} {fincr}"),
    ("hmset", 1.0, Both, "HMSET {hash} <{field} {val}>"),
    ("hpersist", 1.0, Both, "HPERSIST {hash} FIELDS #<{field}>"),
    ("hpexpire", 1.0, Both, "HPEXPIRE {hash} ({px} | {short}) [(NX | XX | GT | LT)] FIELDS #<{field}>"),
    ("hpexpireat", 1.0, Both, "HPEXPIREAT {hash} {pxat} [(NX | XX | GT | LT)] FIELDS #<{field}>"),
    ("hset", 2.0, Both, "HSET {hash} <{field} ({val} | {big})>"),
    ("hsetex", 1.0, Both, "HSETEX {hash} [(FNX | FXX)] [({ttl} | KEEPTTL | PX {short})] FIELDS #<{field} {val}>"),
    ("hsetnx", 1.0, Both, "HSETNX {hash} {field} {val}"),
    // Lists (blocking ones time out at once when there is nothing).
    ("blmove", 1.0, Both, "BLMOVE {list} {list} (LEFT | RIGHT) (LEFT | RIGHT) 0.01"),
    ("blmpop", 1.0, Both, "BLMPOP 0.01 #<{list}> (LEFT | RIGHT) [COUNT {cnt}]"),
    ("blpop", 1.0, Both, "BLPOP <{list}> 0.01"),
    ("brpop", 1.0, Both, "BRPOP <{list}> 0.01"),
    ("brpoplpush", 1.0, Both, "BRPOPLPUSH {list} {list} 0.01"),
    ("linsert", 1.0, Both, "LINSERT {list} (BEFORE | AFTER) {val} {val}"),
    ("lmove", 1.0, Both, "LMOVE {list} {list} (LEFT | RIGHT) (LEFT | RIGHT)"),
    ("lmpop", 1.0, Both, "LMPOP #<{list}> (LEFT | RIGHT) [COUNT {cnt}]"),
    ("lpop", 1.0, Both, "LPOP {list} [{cnt}]"),
    ("lpush", 2.0, Both, "LPUSH {list} <({val} | {big})>"),
    ("lpushx", 1.0, Both, "LPUSHX {list} <{val}>"),
    ("lrem", 1.0, Both, "LREM {list} {idx} {val}"),
    ("lset", 1.0, Both, "LSET {list} {idx} {val}"),
    ("ltrim", 1.0, Both, "LTRIM {list} {idx} {idx}"),
    ("rpop", 1.0, Both, "RPOP {list} [{cnt}]"),
    ("rpoplpush", 1.0, Both, "RPOPLPUSH {list} {list}"),
    ("rpush", 2.0, Both, "RPUSH {list} <({val} | {big} | {n})>"),
    ("rpushx", 1.0, Both, "RPUSHX {list} <{val}>"),
    // Sets.
    ("sadd", 2.0, Both, "SADD {set} <({member} | {n} | {big})>"),
    ("saddex", 1.0, Zwindow, "SADDEX {set} [(MNX | MXX)] [({ttl} | KEEPTTL | PX {short})] MEMBERS #<({member} | {n})>"),
    ("sexpire", 1.0, Zwindow, "SEXPIRE {set} ({ex} | 0) [(NX | XX | GT | LT)] MEMBERS #<({member} | {n})>"),
    ("sexpireat", 1.0, Zwindow, "SEXPIREAT {set} ({exat} | 1) [(NX | XX | GT | LT)] MEMBERS #<({member} | {n})>"),
    ("spersist", 1.0, Zwindow, "SPERSIST {set} MEMBERS #<({member} | {n})>"),
    ("spexpire", 1.0, Zwindow, "SPEXPIRE {set} ({px} | {short}) [(NX | XX | GT | LT)] MEMBERS #<({member} | {n})>"),
    ("spexpireat", 1.0, Zwindow, "SPEXPIREAT {set} {pxat} [(NX | XX | GT | LT)] MEMBERS #<({member} | {n})>"),
    ("sdiffstore", 1.0, Both, "SDIFFSTORE {set} <{set}>"),
    ("sinterstore", 1.0, Both, "SINTERSTORE {set} <{set}>"),
    ("smove", 1.0, Both, "SMOVE {set} {set} ({member} | {n})"),
    ("spop", 1.0, Both, "SPOP {set} [{cnt}]"),
    ("srem", 1.0, Both, "SREM {set} <({member} | {n})>"),
    ("sunionstore", 1.0, Both, "SUNIONSTORE {set} <{set}>"),
    // Sorted sets, with zwindow's member TTLs and window rules.
    ("bzmpop", 1.0, Both, "BZMPOP 0.01 #<{zset}> (MIN | MAX) [COUNT {cnt}]"),
    ("bzpopmax", 1.0, Both, "BZPOPMAX <{zset}> 0.01"),
    ("bzpopmin", 1.0, Both, "BZPOPMIN <{zset}> 0.01"),
    ("zadd", 2.0, Both, "ZADD {zset} [(NX | XX)] [(GT | LT)] [CH] <{score} ({member} | {big})>"),
    ("zadd", 2.0, Both, "ZADD ({win} <{wscore} {member}> | {winms} <{wms} {member}>)"),
    ("zadd", 0.5, Both, "ZADD {zset} INCR {score} {member}"),
    ("zadd", 1.0, Both, "ZADD {lex} 0 <{member}>"),
    ("zcollect", 0.5, Zwindow, "ZCOLLECT (<{zset}> | *)"),
    ("zdiffstore", 1.0, Both, "ZDIFFSTORE {zset} #<{zset}>"),
    ("zexpire", 1.0, Zwindow, "ZEXPIRE {zset} ({ex} | 0) [(NX | XX | GT | LT)] MEMBERS #<{member}>"),
    ("zexpireat", 1.0, Zwindow, "ZEXPIREAT {zset} ({exat} | 1) [(NX | XX | GT | LT)] MEMBERS #<{member}>"),
    ("zincrby", 1.0, Both, "ZINCRBY {zset} {score} {member}"),
    ("zinterstore", 1.0, Both, "ZINTERSTORE {zset} #<{zset}> [AGGREGATE (SUM | MIN | MAX)]"),
    ("zmpop", 1.0, Both, "ZMPOP #<{zset}> (MIN | MAX) [COUNT {cnt}]"),
    ("zpersist", 1.0, Zwindow, "ZPERSIST {zset} MEMBERS #<{member}>"),
    ("zpexpire", 1.0, Zwindow, "ZPEXPIRE {zset} ({px} | {short}) [(NX | XX | GT | LT)] MEMBERS #<{member}>"),
    ("zpexpireat", 1.0, Zwindow, "ZPEXPIREAT {zset} {pxat} [(NX | XX | GT | LT)] MEMBERS #<{member}>"),
    ("zpopmax", 1.0, Both, "ZPOPMAX {zset} [{cnt}]"),
    ("zpopmin", 1.0, Both, "ZPOPMIN {zset} [{cnt}]"),
    ("zrangestore", 1.0, Both, "ZRANGESTORE {zset} ({zset} ({idx} {idx} | {zmin} {zmax} BYSCORE [LIMIT 0 {cnt}]) | {lexz} {lexmin} {lexmax} BYLEX)"),
    ("zrem", 1.0, Both, "ZREM {zset} <{member}>"),
    ("zremrangebylex", 1.0, Both, "ZREMRANGEBYLEX {lexz} {lexmin} {lexmax}"),
    ("zremrangebyrank", 1.0, Both, "ZREMRANGEBYRANK {zset} {idx} {idx}"),
    ("zremrangebyscore", 1.0, Both, "ZREMRANGEBYSCORE {zset} {zmin} {zmax}"),
    ("zunionstore", 1.0, Both, "ZUNIONSTORE {zset} #<{zset}> [AGGREGATE (SUM | MIN | MAX)]"),
    ("zwindow|set", 0.5, Zwindow, "ZWINDOW SET ({winpat} {wdur} [S] | {winmspat} {wdur} MS) [MOVETO {list}]"),
    ("zwindow|del", 0.2, Zwindow, "ZWINDOW DEL ({winpat} | {winmspat})"),
    // Geo (sorted sets too).
    ("geoadd", 1.0, Both, "GEOADD {geo} [(NX | XX)] [CH] <{lon} {lat} {gmember}>"),
    ("georadius", 1.0, Both, "GEORADIUS {geo} 13.36 38.11 (200 | 2000) km [(ASC | DESC)] [COUNT {cnt}] (STORE | STOREDIST) {zset}"),
    ("georadiusbymember", 1.0, Both, "GEORADIUSBYMEMBER {geo} {gmember} 1000 km [COUNT {cnt}] (STORE | STOREDIST) {zset}"),
    ("geosearchstore", 1.0, Both, "GEOSEARCHSTORE {zset} {geo} (FROMMEMBER {gmember} | FROMLONLAT 13.36 38.11) (BYRADIUS 800 km | BYBOX 1000 1000 km) [(ASC | DESC)] [COUNT {cnt}] [STOREDIST]"),
    // Streams and their consumer groups.
    ("xack", 1.0, Both, "XACK {stream} {group} <{xid}>"),
    ("xadd", 2.0, Both, "XADD {stream} [NOMKSTREAM] [MAXLEN [(= | ~)] {n}] {xaddid} <{field} {val}>"),
    ("xadd", 0.5, Both, "XADD {stream} MINID [(= | ~)] {xid} {xaddid} {field} {val}"),
    ("xautoclaim", 1.0, Both, "XAUTOCLAIM {stream} {group} {consumer} (0 | 3600000) (0-0 | {xid}) [COUNT {cnt}] [JUSTID]"),
    ("xclaim", 1.0, Both, "XCLAIM {stream} {group} {consumer} (0 | 3600000) <{xid}> [(IDLE {n} | TIME {pastms})] [RETRYCOUNT {n}] [FORCE] [JUSTID] [LASTID {xid}]"),
    ("xackdel", 0.5, Zwindow, "XACKDEL {stream} {group} [(KEEPREF | DELREF | ACKED)] IDS #<{xid}>"),
    ("xdel", 1.0, Both, "XDEL {stream} <{xid}>"),
    ("xdelex", 0.5, Zwindow, "XDELEX {stream} [(KEEPREF | DELREF | ACKED)] IDS #<{xid}>"),
    ("xgroup|create", 1.0, Both, "XGROUP CREATE {stream} {group} ($ | 0 | {xid}) [MKSTREAM] [ENTRIESREAD {n}]"),
    ("xgroup|createconsumer", 1.0, Both, "XGROUP CREATECONSUMER {stream} {group} {consumer}"),
    ("xgroup|delconsumer", 0.5, Both, "XGROUP DELCONSUMER {stream} {group} {consumer}"),
    ("xgroup|destroy", 0.3, Both, "XGROUP DESTROY {stream} {group}"),
    ("xgroup|setid", 0.5, Both, "XGROUP SETID {stream} {group} ($ | 0 | {xid}) [ENTRIESREAD {n}]"),
    ("xreadgroup", 3.0, Both, "XREADGROUP GROUP {group} {consumer} [COUNT {cnt}] [NOACK] [BLOCK 10] STREAMS {stream} ({gt} | 0 | {xid})"),
    ("xsetid", 0.5, Both, "XSETID {stream} {xnext} [ENTRIESADDED {bign}] [MAXDELETEDID {xid}]"),
    ("xtrim", 1.0, Both, "XTRIM {stream} (MAXLEN [(= | ~)] {n} | MINID [(= | ~)] {xid}) [LIMIT {n}]"),
    // Functions and scripts (logged as the commands they run).
    ("function|delete", 0.3, Both, "FUNCTION DELETE {lib}"),
    ("function|flush", 0.1, Both, "FUNCTION FLUSH [(ASYNC | SYNC)]"),
    ("function|load", 0.5, Both, "FUNCTION LOAD [REPLACE] {libcode}"),
    ("function|restore", 0.3, Both, "FUNCTION RESTORE {fpayload} [(FLUSH | APPEND | REPLACE)]"),
    ("fcall", 1.0, Both, "FCALL (f0 1 {int} | f1 1 {hash} {field} {val} | f2 1 {stream} {group} {consumer})"),
    ("eval", 1.0, Both, "EVAL {script0} 2 {int} {list} {val}"),
    ("eval", 1.0, Both, "EVAL {script1} 2 {set} {str} {px}"),
    ("evalsha", 1.0, Both, "EVALSHA {sha0} 2 {int} {list} {val}"),
    // Not writes, but part of what a write stream does: the database it
    // runs in, and reads that expire, trim or cache.
    ("select", 3.0, Both, "SELECT {db}"),
    ("pfcount", 0.5, Both, "PFCOUNT {hll}"),
    ("(reads)", 2.0, Both, "(GET {str} | HGETALL {hash} | ZRANGE ({zset} | {win}) 0 -1 | LRANGE {list} 0 -1 | SMEMBERS {set} | XRANGE {stream} - + | XPENDING {stream} {group} | EXISTS {any} | SCAN 0 COUNT 3 | RANDOMKEY)"),
];

/// Names in [`TEMPLATES`] that are not write commands of the table.
pub const NOT_WRITES: &[&str] = &["fcall", "eval", "evalsha", "select", "pfcount", "(reads)"];

/// Lua scripts the stream runs (`{script0}` … and their SHA1s, loaded
/// first with SCRIPT LOAD for EVALSHA).
pub const SCRIPTS: &[&str] = &[
    "redis.call('incr', KEYS[1]); return redis.call('rpush', KEYS[2], ARGV[1])",
    "local p = redis.call('spop', KEYS[1]); redis.call('set', KEYS[2], tostring(p), 'PX', ARGV[1]); return p",
];

/// Function libraries `{libcode}` loads (FCALL f0, f1, f2).
pub const LIBRARIES: &[&str] = &[
    "#!lua name=lib0\nredis.register_function('f0', function(keys, args) return redis.call('incr', keys[1]) end)",
    "#!lua name=lib1\nredis.register_function('f1', function(keys, args) return redis.call('hset', keys[1], args[1], args[2]) end)",
    "#!lua name=lib2\nredis.register_function('f2', function(keys, args) return redis.call('xreadgroup', 'GROUP', args[1], args[2], 'COUNT', '2', 'STREAMS', keys[1], '>') end)",
];

/// The key families and how many keys each has.
const FAMILIES: &[(&str, usize)] = &[
    ("str", 5),
    ("int", 3),
    ("bits", 3),
    ("hll", 3),
    ("list", 5),
    ("set", 5),
    ("zset", 5),
    ("win", 3),
    ("winms", 3),
    ("geo", 2),
    ("hash", 5),
    ("stream", 4),
    // Last: never an `{any}` key (see `{lexz}`).
    ("lex", 3),
];

/// Values the server needs made before the stream starts.
pub struct Fixtures {
    /// DUMP payloads of one value of each type.
    pub payloads: Vec<Vec<u8>>,
    /// A FUNCTION DUMP payload.
    pub function_payload: Vec<u8>,
    /// SHA1s of [`SCRIPTS`].
    pub shas: Vec<String>,
    /// The port MIGRATE sends keys to.
    pub sink_port: u16,
}

/// A parsed template.
#[derive(Debug)]
enum Node {
    Word(String),
    Opt(Vec<Node>),
    Alt(Vec<Vec<Node>>),
    Rep(Vec<Node>, bool),
}

/// Parses a sequence up to one of `stops` (consumed by the caller).
fn parse_seq(toks: &[String], at: &mut usize, stops: &[&str]) -> Vec<Node> {
    let mut out = Vec::new();
    while *at < toks.len() && !stops.contains(&toks[*at].as_str()) {
        let t = toks[*at].clone();
        *at += 1;
        out.push(match t.as_str() {
            "[" | "(" => {
                let close = if t == "[" { "]" } else { ")" };
                let mut alts = vec![parse_seq(toks, at, &["|", close])];
                while toks.get(*at).map(String::as_str) == Some("|") {
                    *at += 1;
                    alts.push(parse_seq(toks, at, &["|", close]));
                }
                assert_eq!(
                    toks.get(*at).map(String::as_str),
                    Some(close),
                    "unclosed {t}"
                );
                *at += 1;
                if t == "[" {
                    Node::Opt(vec![Node::Alt(alts)])
                } else {
                    Node::Alt(alts)
                }
            }
            "<" | "#<" => {
                let body = parse_seq(toks, at, &[">"]);
                assert_eq!(toks.get(*at).map(String::as_str), Some(">"), "unclosed <");
                *at += 1;
                Node::Rep(body, t == "#<")
            }
            _ => Node::Word(t),
        });
    }
    out
}

fn parse(template: &str) -> Vec<Node> {
    // `{ttl}`: any of the four ways to give a key a TTL.
    let template = template.replace("{ttl}", "(EX {ex} | PX {px} | EXAT {exat} | PXAT {pxat})");
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        let brace = word.starts_with('{') && !word.ends_with('}');
        match c {
            '#' if word.is_empty() && chars.peek() == Some(&'<') => {
                chars.next();
                toks.push("#<".to_string());
            }
            '[' | ']' | '(' | ')' | '|' | '<' | '>' if !brace => {
                if !word.is_empty() {
                    toks.push(std::mem::take(&mut word));
                }
                toks.push(c.to_string());
            }
            ' ' => {
                if !word.is_empty() {
                    toks.push(std::mem::take(&mut word));
                }
            }
            _ => word.push(c),
        }
    }
    if !word.is_empty() {
        toks.push(word);
    }
    let mut at = 0;
    let seq = parse_seq(&toks, &mut at, &[]);
    assert_eq!(at, toks.len(), "stray token in {template}");
    seq
}

/// One parsed template of [`TEMPLATES`].
struct Entry {
    name: &'static str,
    weight: f64,
    nodes: Vec<Node>,
}

/// The generator: seeded, so a failing seed replays exactly.
pub struct Gen {
    rng: StdRng,
    entries: Vec<Entry>,
    total: f64,
    fixtures: Fixtures,
    /// Whether zwindow's own templates run (see `{lexz}`).
    zwindow: bool,
    now_ms: u64,
    /// The next explicit stream ID's milliseconds (IDs only grow).
    next_ms: u64,
    /// Stream IDs added lately, for XDEL, XACK, XCLAIM, ….
    recent_ids: Vec<String>,
}

impl Gen {
    /// A generator over the templates `on` allows.
    pub fn new(seed: u64, zwindow: bool, fixtures: Fixtures, now_ms: u64) -> Gen {
        let entries: Vec<Entry> = TEMPLATES
            .iter()
            .filter(|t| zwindow || t.2 == Both)
            .map(|&(name, weight, _, text)| Entry {
                name,
                weight,
                nodes: parse(text),
            })
            .collect();
        let total = entries.iter().map(|e| e.weight).sum();
        Gen {
            rng: StdRng::seed_from_u64(seed),
            entries,
            total,
            fixtures,
            zwindow,
            now_ms,
            next_ms: 1_000,
            recent_ids: Vec::new(),
        }
    }

    /// The names this generator can produce.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.entries.iter().map(|e| e.name).collect();
        v.dedup();
        v
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.rng.random_range(0..n)
    }

    /// A random command: its table name and arguments.
    pub fn command(&mut self) -> (&'static str, Vec<Vec<u8>>) {
        let mut x = self.rng.random_range(0.0..self.total);
        let mut pick = self.entries.len() - 1;
        for (i, e) in self.entries.iter().enumerate() {
            if x < e.weight {
                pick = i;
                break;
            }
            x -= e.weight;
        }
        self.command_of(pick)
    }

    /// A random command of `name` (its first template).
    pub fn command_named(&mut self, name: &str) -> Vec<Vec<u8>> {
        let i = self
            .entries
            .iter()
            .position(|e| e.name == name)
            .unwrap_or_else(|| panic!("no template for {name}"));
        self.command_of(i).1
    }

    fn command_of(&mut self, i: usize) -> (&'static str, Vec<Vec<u8>>) {
        let nodes = std::mem::take(&mut self.entries[i].nodes);
        let mut out = Vec::new();
        self.expand(&nodes, &mut out);
        self.entries[i].nodes = nodes;
        (self.entries[i].name, out)
    }

    fn expand(&mut self, nodes: &[Node], out: &mut Vec<Vec<u8>>) {
        for n in nodes {
            match n {
                Node::Word(w) => match w.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
                    Some(name) => {
                        let a = self.arg(name);
                        out.push(a);
                    }
                    None => out.push(w.as_bytes().to_vec()),
                },
                Node::Opt(body) => {
                    if self.rng.random_bool(0.5) {
                        self.expand(body, out);
                    }
                }
                Node::Alt(alts) => {
                    let i = self.rng.random_range(0..alts.len());
                    self.expand(&alts[i], out);
                }
                Node::Rep(body, counted) => {
                    let times = self.rng.random_range(1..=3);
                    if *counted {
                        out.push(times.to_string().into_bytes());
                    }
                    for _ in 0..times {
                        self.expand(body, out);
                    }
                }
            }
        }
    }

    fn key(&mut self, family: &str) -> Vec<u8> {
        let n = FAMILIES.iter().find(|f| f.0 == family).map_or(3, |f| f.1);
        format!("{family}:{}", self.rng.random_range(0..n)).into_bytes()
    }

    fn one<T: Copy>(&mut self, of: &[T]) -> T {
        of[self.rng.random_range(0..of.len())]
    }

    fn int(&mut self, lo: i64, hi: i64) -> Vec<u8> {
        self.rng.random_range(lo..=hi).to_string().into_bytes()
    }

    /// The argument a `{name}` stands for.
    fn arg(&mut self, name: &str) -> Vec<u8> {
        let now_s = (self.now_ms / 1000) as i64;
        let now_ms = self.now_ms as i64;
        match name {
            "str" | "int" | "bits" | "hll" | "list" | "set" | "win" | "winms" | "geo" | "hash"
            | "stream" | "lex" => self.key(name),
            // Generic sorted-set commands meet windowed and geo keys too.
            "zset" => {
                let family = if self.chance(0.2) {
                    self.one(&["win", "winms", "geo"])
                } else {
                    "zset"
                };
                self.key(family)
            }
            "any" => {
                let family = self.one(&FAMILIES[..FAMILIES.len() - 1]).0;
                self.key(family)
            }
            // A lex range over members of different scores has no defined
            // answer, and Redis's depends on its skiplist's random levels
            // (a redis-server loading its own AOF may remove other members
            // than it did live): the stream both servers run keeps lex
            // ranges to sets whose members all score 0; zwindow's own
            // (deterministic) answer is held to its restarts on any set.
            "lexz" => {
                if self.zwindow && self.chance(0.5) {
                    self.arg("zset")
                } else {
                    self.key("lex")
                }
            }
            "val" => self
                .one(&[
                    "",
                    "a",
                    "b",
                    "hello",
                    "12",
                    "-3",
                    "3.5",
                    "10",
                    "x y",
                    "\u{0}\u{ff}",
                ])
                .as_bytes()
                .to_vec(),
            "big" => {
                let len = self.rng.random_range(65..300);
                let c = self.one(b"qrs");
                vec![c; len]
            }
            "n" => self.int(0, 5),
            "cnt" => self.int(1, 4),
            "idx" => self.int(-4, 4),
            "incr" => self.int(-10, 10),
            "bign" => self.int(100, 200),
            "fincr" => self.one(&["1.5", "-0.25", "3e2", "0.1", "-7"]).into(),
            "byte" => self.int(0, 20),
            "bit" => self.int(0, 70),
            "btype" => self.one(&["u8", "i5", "u1", "i16"]).into(),
            "member" => format!("m{}", self.rng.random_range(0..8)).into_bytes(),
            "field" => format!("f{}", self.rng.random_range(0..6)).into_bytes(),
            "gmember" => format!("g{}", self.rng.random_range(0..5)).into_bytes(),
            "score" => self
                .one(&[
                    "0", "1", "-1", "2.5", "inf", "-inf", "1e10", "3", "7", "-0.5",
                ])
                .into(),
            // Window rules span hours and scores are fresh (minutes old)
            // or weeks old, so no member ages out between the snapshot and
            // the restart.
            "wscore" | "wms" => {
                // Seconds or milliseconds, as the rule's unit.
                let unit = if name == "wms" { 1000 } else { 1 };
                let age = if self.chance(0.25) {
                    3_000_000
                } else {
                    self.rng.random_range(0..600)
                };
                (now_ms / 1000 * unit - age * unit).to_string().into_bytes()
            }
            "winpat" => self.one(&["win:*", "win:1"]).into(),
            "winmspat" => self.one(&["winms:*", "winms:2"]).into(),
            "wdur" => self.one(&["3600", "2h", "1d"]).into(),
            "lon" => self
                .one(&["13.361389", "15.087269", "2.35", "-0.12"])
                .into(),
            "lat" => self
                .one(&["38.115556", "37.502669", "48.85", "51.5"])
                .into(),
            "zmin" => self.one(&["-inf", "(1", "0", "2.5"]).into(),
            "zmax" => self.one(&["+inf", "(3", "7", "1"]).into(),
            "lexmin" => self.one(&["-", "[m2", "(m1"]).into(),
            "lexmax" => self.one(&["+", "[m5", "(m6"]).into(),
            // TTLs are days away, or already past, or a few milliseconds
            // (gone before the snapshot): never near the restart.
            "ex" => self.int(100_000, 200_000),
            "px" => self.int(100_000_000, 200_000_000),
            "short" => self.int(1, 40),
            "exat" => (now_s + self.rng.random_range(100_000..200_000))
                .to_string()
                .into_bytes(),
            "pxat" => (now_ms + self.rng.random_range(100_000_000..200_000_000))
                .to_string()
                .into_bytes(),
            "pastms" => (now_ms - self.rng.random_range(1_000..100_000))
                .to_string()
                .into_bytes(),
            "db" => self.int(0, 2),
            "empty" => Vec::new(),
            "sink" => self.fixtures.sink_port.to_string().into_bytes(),
            "payload" => {
                let i = self.rng.random_range(0..self.fixtures.payloads.len());
                self.fixtures.payloads[i].clone()
            }
            "fpayload" => self.fixtures.function_payload.clone(),
            "lib" => format!("lib{}", self.rng.random_range(0..LIBRARIES.len())).into_bytes(),
            "libcode" => self.one(LIBRARIES).into(),
            "script0" => SCRIPTS[0].into(),
            "script1" => SCRIPTS[1].into(),
            "sha0" => self.fixtures.shas[0].clone().into_bytes(),
            "group" => format!("g{}", self.rng.random_range(0..3)).into_bytes(),
            "consumer" => format!("c{}", self.rng.random_range(0..4)).into_bytes(),
            "gt" => b">".to_vec(),
            "xaddid" => {
                if self.chance(0.2) {
                    return b"*".to_vec();
                }
                self.next_ms += self.rng.random_range(0..2);
                let id = format!("{}-{}", self.next_ms, self.rng.random_range(0..3));
                self.recent_ids.push(id.clone());
                if self.recent_ids.len() > 40 {
                    self.recent_ids.remove(0);
                }
                id.into_bytes()
            }
            "xid" => {
                if self.recent_ids.is_empty() || self.chance(0.2) {
                    return format!("{}-0", self.rng.random_range(1..self.next_ms + 2))
                        .into_bytes();
                }
                let i = self.rng.random_range(0..self.recent_ids.len());
                self.recent_ids[i].clone().into_bytes()
            }
            "xnext" => format!("{}-5", self.next_ms + self.rng.random_range(0..3)).into_bytes(),
            other => panic!("unknown template argument {{{other}}}"),
        }
    }
}
