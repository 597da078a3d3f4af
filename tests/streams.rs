//! Differential tests of the stream commands against redis-server 8.0:
//! scripted edge cases and errors, a seeded random command stream with
//! explicit IDs (RESP2 and RESP3, small and default node sizes), consumer
//! groups and claims, XINFO, and blocking XREAD/XREADGROUP.
//!
//! Only time-dependent fields are masked, by name: XPENDING's idle time,
//! XINFO CONSUMERS' `idle` and `inactive`, and XINFO STREAM FULL's
//! `seen-time`, `active-time` (when set) and
//! delivery times (any integer that is a millisecond timestamp). Claims use
//! min-idle times of 0 or an hour, so which entries qualify never depends
//! on timing.
mod common;

use std::time::Duration;

use common::repl::{eventually, info_field};
use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// An idle or inactive time: any duration reads 0; `inactive`'s -1 (never
/// active) stays.
fn mask_idle(x: &mut Reply) {
    if let Reply::Int(i) = x
        && *i >= 0
    {
        *i = 0;
    }
}

/// Replaces time-dependent integers with 0.
fn mask(r: &mut Reply, cmd: &str) {
    fn walk(r: &mut Reply, cmd: &str) {
        match r {
            Reply::Int(i) if *i >= 1_000_000_000_000 => *i = 0,
            Reply::Array(a) | Reply::Set(a) | Reply::Push(a) => {
                // XPENDING's extended rows: id, consumer, idle, deliveries.
                if cmd == "XPENDING"
                    && a.len() == 4
                    && matches!(a[0], Reply::Bulk(_))
                    && matches!(a[1], Reply::Bulk(_))
                {
                    a[2] = Reply::Int(0);
                }
                let mut idle_next = false;
                for x in a.iter_mut() {
                    if idle_next {
                        mask_idle(x);
                    }
                    idle_next = matches!(x, Reply::Bulk(b) if b == b"idle" || b == b"inactive");
                    walk(x, cmd);
                }
            }
            Reply::Map(m) => {
                for (k, v) in m.iter_mut() {
                    if matches!(k, Reply::Bulk(b) if b == b"idle" || b == b"inactive") {
                        mask_idle(v);
                    }
                    walk(v, cmd);
                }
                // The decoder does not keep a map's wire order.
                m.sort_by_key(|(k, _)| format!("{k:?}"));
            }
            _ => {}
        }
    }
    walk(r, cmd)
}

fn check_masked(p: &mut Pair, args: &[&[u8]]) -> Vec<u8> {
    let name = String::from_utf8_lossy(args[0]).to_ascii_uppercase();
    let (r, z) = p.both(args);
    if replies_equivalent(&r, &z) {
        return r;
    }
    let (mut pr, mut pz) = (parse_reply(&r), parse_reply(&z));
    mask(&mut pr, &name);
    mask(&mut pz, &name);
    assert_eq!(
        pr,
        pz,
        "zwindow differs from redis-server\n  command: {}\n  redis:   {}\n  zwindow: {}",
        show_args(args),
        escape(&r),
        escape(&z)
    );
    r
}

fn check_masked_str(p: &mut Pair, line: &str) -> Vec<u8> {
    let args = split_args(line);
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    check_masked(p, &refs)
}

#[test]
fn scripted_edge_cases() {
    let s = Servers::start_redis8(&[]);
    for resp3 in [false, true] {
        let mut p = s.pair();
        if resp3 {
            p.both_str("HELLO 3");
        }
        p.check_str("FLUSHALL");
        for line in [
            "XADD s 1-1 a 1",
            "XADD s 1-1 a 1",
            "XADD s 0-0 a 1",
            "XADD s 0 a 1",
            "XADD s 1-* b 2",
            "XADD s 1 c 3",
            "XADD s 2-* c 3 d 4",
            "XADD s 5-5 f",
            "XADD s",
            "XADD s NOMKSTREAM",
            "XADD nokey NOMKSTREAM 1-1 a 1",
            "EXISTS nokey",
            "XADD s MAXLEN",
            "XADD s MAXLEN x 9 a 1",
            "XADD s MAXLEN -1 9 a 1",
            "XADD s MAXLEN 1 MINID 1 9 a 1",
            "XADD s LIMIT 5 9 a 1",
            "XADD s MAXLEN 5 LIMIT 5 9 a 1",
            "XADD s MAXLEN ~ 5 LIMIT -1 9 a 1",
            "XADD s MINID - 9 a 1",
            "XADD s 3-x a 1",
            "XADD s -1 a 1",
            "XADD s ' 7-01' a 1",
            "XADD s +8 a 1",
            "XADD s 18446744073709551615-18446744073709551615 a 1",
            "XADD s 18446744073709551615-* a 1",
            "XADD s * a 1",
            "XLEN s",
            "XLEN nokey",
            "XRANGE s - +",
            "XRANGE s (1-1 +",
            "XRANGE s - (7-1",
            "XRANGE s 18446744073709551615-18446744073709551615 +",
            "XRANGE s (18446744073709551615-18446744073709551615 +",
            "XRANGE s - (0-0",
            "XRANGE s (- +",
            "XRANGE s - + COUNT 0",
            "XRANGE s - + COUNT -3",
            "XRANGE s - + COUNT 2",
            "XRANGE s - + COUNT",
            "XRANGE s - + COUNT x",
            "XRANGE s x +",
            "XRANGE s 2 2",
            "XRANGE nokey - +",
            "XREVRANGE s + - COUNT 3",
            "XREVRANGE s 5 1",
            "XDEL s 1-1 1-1 9-9",
            "XDEL s x",
            "XDEL nokey 1-1",
            "XLEN s",
            "XTRIM s",
            "XTRIM s MAXLEN",
            "XTRIM s MAXLEN 1 x",
            "XTRIM s MAXLEN ~ 1",
            "XTRIM s MINID 5 LIMIT 3",
            "XTRIM s MINID ~ 5 LIMIT 3",
            "XTRIM s MINID = 5",
            "XTRIM nokey MAXLEN 0",
            "XRANGE s - +",
            "SET str v",
            "XADD str 1 a 1",
            "XLEN str",
            "XRANGE str - +",
            "TYPE s",
            "OBJECT ENCODING s",
            "XSETID s 1-1",
            "XSETID s 99-99",
            "XSETID s 99-99 ENTRIESADDED 0",
            "XSETID s 99-99 ENTRIESADDED -1",
            "XSETID s 99-99 MAXDELETEDID 100-1",
            "XSETID s 100-0 ENTRIESADDED 50 MAXDELETEDID 99-0",
            "XSETID s 98-0",
            "XSETID nokey 1-1",
            "XSETID s - ",
            "XSETID s 100-0 FOO",
            "XINFO STREAM s",
            "XINFO STREAM s FULL",
            "XINFO STREAM s FULL COUNT 1",
            "XINFO STREAM s FULL COUNT",
            "XINFO STREAM s FOO",
            "XINFO STREAM nokey",
            "XINFO STREAM str",
            "XINFO HELP",
            "XINFO HELP x",
            "XINFO FOO s",
            "XGROUP HELP",
            "XGROUP FOO",
            "XGROUP CREATE nokey g $",
            "XGROUP CREATE nokey g - MKSTREAM",
            "XGROUP CREATE nokey g $ MKSTREAM",
            "XGROUP CREATE nokey g $ MKSTREAM",
            "XGROUP CREATE s g 0 ENTRIESREAD -2",
            "XGROUP CREATE s g 0 ENTRIESREAD 2 FOO",
            "XGROUP CREATE s g 0 ENTRIESREAD 2",
            "XGROUP CREATE s g2 $",
            "XGROUP CREATE str g 0",
            "XGROUP SETID s nog 0",
            "XGROUP SETID s g 0 FOO",
            "XGROUP SETID s g 0 ENTRIESREAD 1",
            "XGROUP SETID s g2 -",
            "XGROUP SETID nokey2 g 0",
            "XGROUP CREATECONSUMER s g c1",
            "XGROUP CREATECONSUMER s g c1",
            "XGROUP CREATECONSUMER s nog c1",
            "XGROUP DELCONSUMER s g c9",
            "XINFO GROUPS s",
            "XINFO GROUPS nokey",
            "XINFO CONSUMERS s nog",
            "XREAD STREAMS s",
            "XREAD STREAMS s 0",
            "XREAD COUNT 2 STREAMS s 0",
            "XREAD COUNT 2 STREAMS s nokey 0 0",
            "XREAD STREAMS s $",
            "XREAD STREAMS s str 0 0",
            "XREAD GROUP g c STREAMS s 0",
            "XREAD NOACK STREAMS s 0",
            "XREAD STREAMS s >",
            "XREAD FOO STREAMS s 0",
            "XREAD COUNT x STREAMS s 0",
            "XREAD BLOCK x STREAMS s 0",
            "XREAD BLOCK -1 STREAMS s 0",
            "XREAD BLOCK 10 STREAMS s 0",
            "XREADGROUP STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS s",
            "XREADGROUP GROUP g c1 STREAMS s $",
            "XREADGROUP GROUP nog c1 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS nokey >",
            "XREADGROUP GROUP g c1 COUNT 2 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS s 0",
            "XREADGROUP GROUP g c2 NOACK COUNT 1 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS s >",
            "XREADGROUP GROUP g c1 STREAMS s >",
            // The largest ID spelled out is Redis's internal `>`.
            "XADD s2 1-1 a 1",
            "XGROUP CREATE s2 g2 0",
            "XREADGROUP GROUP g2 c STREAMS s2 18446744073709551615-18446744073709551615",
            "XPENDING s2 g2",
            "XADD s2 2-1 b 2",
            "XREADGROUP GROUP g2 c STREAMS s2 18446744073709551615-18446744073709551615",
            "XREADGROUP GROUP g2 c STREAMS s2 18446744073709551615-18446744073709551614",
            "XREAD STREAMS s2 18446744073709551615-18446744073709551615",
            "XPENDING s2 g2",
            "XINFO GROUPS s",
            "XPENDING s g",
            "XPENDING s g - + 10",
            "XPENDING s g - + 10 c1",
            "XPENDING s g - + 10 c9",
            "XPENDING s g IDLE 0 - + 10",
            "XPENDING s g IDLE 3600000 - + 10",
            "XPENDING s g IDLE 0 - +",
            "XPENDING s g - + x",
            "XPENDING s g x + 10",
            "XPENDING s g (- + 10",
            "XPENDING s nog",
            "XPENDING nokey g",
            "XPENDING s g - +",
            "XACK s g 7-1 x",
            "XACK s g 7-1 8-0",
            "XACK s nog 1-1",
            "XACK nokey g 1-1",
            "XDEL s 99-0",
            "XREADGROUP GROUP g c1 STREAMS s 0",
            "XCLAIM s g c3 0 1-2 2-0 99-0",
            "XCLAIM s g c3 3600000 1-2",
            "XCLAIM s g c3 0 1-2 JUSTID",
            "XCLAIM s g c3 0 1-2 RETRYCOUNT 7 IDLE 5",
            "XCLAIM s g c3 0 1-2 FOO",
            "XCLAIM s g c3 x 1-2",
            "XCLAIM s g c3 0 1-2 IDLE x",
            "XCLAIM s g c3 0 1-2 TIME x",
            "XCLAIM s g c3 0 1-2 RETRYCOUNT x",
            "XCLAIM s g c3 0 1-2 LASTID x",
            "XCLAIM s g c4 0 100-0 FORCE JUSTID LASTID 200-0",
            "XCLAIM s g c4 0 5-5 FORCE JUSTID LASTID 200-0",
            "XCLAIM s nog c3 0 1-2",
            "XCLAIM nokey g c3 0 1-2",
            "XPENDING s g - + 10",
            "XAUTOCLAIM s g c5 0 0 COUNT 1",
            "XAUTOCLAIM s g c5 0 0 COUNT 2 JUSTID",
            "XAUTOCLAIM s g c5 0 (0-0",
            "XAUTOCLAIM s g c5 3600000 0",
            "XAUTOCLAIM s g c5 0 0 COUNT 0",
            "XAUTOCLAIM s g c5 0 0 FOO",
            "XAUTOCLAIM s g c5 x 0",
            "XAUTOCLAIM s nog c5 0 0",
            "XAUTOCLAIM s g c5 0 x",
            "XINFO GROUPS s",
            "XINFO STREAM s",
            "XRANGE s - + COUNT 9223372036854775807",
            "XREAD COUNT 9223372036854775807 STREAMS s 0",
            "XAUTOCLAIM s g c5 0 0 COUNT 576460752303423487",
            "XAUTOCLAIM s g c5 0 0 COUNT 576460752303423488",
            "XINFO STREAM s FULL COUNT 9223372036854775807",
            "XPENDING s g - + 9223372036854775807",
            "EVAL \"return redis.call('xrange', KEYS[1], '-', '+', 'COUNT', 2)\" 1 s",
            "EVAL \"return redis.call('xread', 'COUNT', 1, 'STREAMS', KEYS[1], '0')\" 1 s",
            "EVAL \"redis.setresp(3); return redis.call('xread', 'STREAMS', KEYS[1], '0')\" 1 s",
            "EVAL \"return redis.call('xread', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')\" 1 s",
            "EVAL \"return redis.call('xreadgroup', 'GROUP', 'g', 'cs', 'STREAMS', KEYS[1], '0')\" 1 s",
            "EVAL \"return redis.pcall('xadd', KEYS[1], '1-1', 'a', 'b')\" 1 s",
            "MULTI",
            "XADD s 1000-0 m 1",
            "XREADGROUP GROUP g cm BLOCK 0 STREAMS s >",
            "XINFO GROUPS s",
            "EXEC",
            "XGROUP DELCONSUMER s g c5",
            "XGROUP DESTROY s g2",
            "XGROUP DESTROY s g2",
            "XGROUP DESTROY nokey g",
            "XINFO GROUPS s",
            "XPENDING s g",
            "COPY s s2",
            "XINFO GROUPS s2",
            "XPENDING s2 g",
            "RENAME s2 s3",
            "XLEN s3",
            "DEL s3",
        ] {
            check_masked_str(&mut p, line);
        }
        p.check_unordered_str("KEYS *");
        p.check_str("SCAN 0 TYPE stream MATCH s COUNT 100");
    }
}

#[test]
fn node_layout_and_approximate_trimming() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    // Small nodes so approximate trims remove whole nodes often.
    for (entries, bytes) in [("100", "4096"), ("7", "4096"), ("0", "200"), ("3", "0")] {
        p.check_str("FLUSHALL");
        p.check_str(&format!("CONFIG SET stream-node-max-entries {entries}"));
        p.check_str(&format!("CONFIG SET stream-node-max-bytes {bytes}"));
        for i in 1..=300 {
            // Short, medium (2-byte listpack header) and long values, and
            // integers of every listpack width.
            let v = match i % 4 {
                0 => "x".repeat(i % 37),
                1 => "y".repeat((i * 13) % 300),
                2 => format!("{}", (i as i64 - 150) * 977_777),
                _ => format!("{}", (i as i64) << (i % 60)),
            };
            let f = if i % 5 == 0 { "other" } else { "f" };
            p.check_str(&format!("XADD s {i}-1 {f} {v} g {i}"));
        }
        p.check_str("XINFO STREAM s");
        p.check_str("XTRIM s MAXLEN ~ 250");
        p.check_str("XTRIM s MAXLEN ~ 200 LIMIT 10");
        p.check_str("XTRIM s MINID ~ 120");
        p.check_str("XDEL s 150-1 151-1 152-1");
        p.check_str("XTRIM s MINID 155");
        p.check_str("XINFO STREAM s");
        p.check_str("XADD s MAXLEN ~ 50 1000-1 a b");
        p.check_str("XADD s MAXLEN = 40 LIMIT 0 1001-1 a b");
        p.check_str("XADD s MINID ~ 1000 LIMIT 0 1002-1 a b");
        p.check_str("XINFO STREAM s FULL COUNT 0");
        p.check_str("XRANGE s - +");
    }
}

struct Gen {
    rng: StdRng,
    ms: u64,
}

impl Gen {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn key(&mut self) -> String {
        if self.chance(0.92) {
            self.pick(&["s0", "s1", "s2"]).into()
        } else {
            self.pick(&["str", "none"]).into()
        }
    }

    fn id(&mut self) -> String {
        let ms = self.rng.random_range(0..self.ms + 3);
        match self.rng.random_range(0..10) {
            0 => "-".into(),
            1 => "+".into(),
            2 => format!("{ms}"),
            3 => format!("({ms}-{}", self.rng.random_range(0..3)),
            4 if self.chance(0.2) => "x".into(),
            _ => format!("{ms}-{}", self.rng.random_range(0..3)),
        }
    }

    fn group(&mut self) -> String {
        self.pick(&["g1", "g1", "g2", "nog"]).into()
    }

    fn consumer(&mut self) -> String {
        self.pick(&["c1", "c2", "c3"]).into()
    }

    fn trim(&mut self, v: &mut Vec<String>) {
        if self.chance(0.5) {
            v.push("MAXLEN".into());
            if self.chance(0.5) {
                v.push(self.pick(&["~", "="]).into());
            }
            v.push(self.rng.random_range(0..40).to_string());
        } else {
            v.push("MINID".into());
            if self.chance(0.5) {
                v.push(self.pick(&["~", "="]).into());
            }
            v.push(format!("{}", self.rng.random_range(0..self.ms + 2)));
        }
        if self.chance(0.2) {
            v.push("LIMIT".into());
            v.push(self.rng.random_range(0..30).to_string());
        }
    }

    fn command(&mut self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        let k = self.key();
        match self.rng.random_range(0..100) {
            0..=29 => {
                v.extend(["XADD".into(), k]);
                if self.chance(0.1) {
                    v.push("NOMKSTREAM".into());
                }
                if self.chance(0.2) {
                    self.trim(&mut v);
                }
                // Mostly increasing explicit IDs.
                if self.chance(0.85) {
                    self.ms += self.rng.random_range(0..3);
                    v.push(if self.chance(0.3) {
                        format!("{}-*", self.ms)
                    } else {
                        format!("{}-{}", self.ms, self.rng.random_range(0..3))
                    });
                } else {
                    v.push(self.id());
                }
                for _ in 0..self.rng.random_range(1..4) {
                    v.push(self.pick(&["a", "b", "c"]).into());
                    v.push(self.rng.random_range(0..1000).to_string());
                }
            }
            30..=34 => {
                let cmd = self.pick(&["XRANGE", "XREVRANGE"]);
                v.extend([cmd.into(), k, self.id(), self.id()]);
                if self.chance(0.5) {
                    v.push("COUNT".into());
                    v.push(self.rng.random_range(-1..6).to_string());
                }
            }
            35..=37 => {
                v.extend(["XDEL".into(), k]);
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id();
                    v.push(id.trim_start_matches('(').into());
                }
            }
            38..=39 => {
                v.extend(["XTRIM".into(), k]);
                self.trim(&mut v);
            }
            40..=41 => v.extend(["XLEN".into(), k]),
            42..=47 => {
                v.push("XREAD".into());
                if self.chance(0.5) {
                    v.extend(["COUNT".into(), self.rng.random_range(0..4).to_string()]);
                }
                v.push("STREAMS".into());
                let k2 = self.key();
                v.extend([k, k2]);
                for _ in 0..2 {
                    let id = if self.chance(0.2) {
                        "$".into()
                    } else {
                        self.id()
                    };
                    v.push(id);
                }
            }
            48..=59 => {
                v.extend([
                    "XREADGROUP".into(),
                    "GROUP".into(),
                    self.group(),
                    self.consumer(),
                ]);
                if self.chance(0.5) {
                    v.extend(["COUNT".into(), self.rng.random_range(0..4).to_string()]);
                }
                if self.chance(0.2) {
                    v.push("NOACK".into());
                }
                v.extend(["STREAMS".into(), k]);
                v.push(if self.chance(0.7) {
                    ">".into()
                } else {
                    self.id()
                });
            }
            60..=65 => {
                let g = self.group();
                match self.rng.random_range(0..7) {
                    0 | 1 => {
                        v.extend(["XGROUP".into(), "CREATE".into(), k, g]);
                        v.push(if self.chance(0.3) {
                            "$".into()
                        } else {
                            self.id()
                        });
                        if self.chance(0.3) {
                            v.push("MKSTREAM".into());
                        }
                        if self.chance(0.2) {
                            v.extend([
                                "ENTRIESREAD".into(),
                                self.rng.random_range(-1..5).to_string(),
                            ]);
                        }
                    }
                    2 => {
                        v.extend(["XGROUP".into(), "SETID".into(), k, g]);
                        v.push(if self.chance(0.3) {
                            "$".into()
                        } else {
                            self.id()
                        });
                        if self.chance(0.3) {
                            v.extend([
                                "ENTRIESREAD".into(),
                                self.rng.random_range(-1..5).to_string(),
                            ]);
                        }
                    }
                    3 => v.extend(["XGROUP".into(), "DESTROY".into(), k, g]),
                    4 => v.extend([
                        "XGROUP".into(),
                        "CREATECONSUMER".into(),
                        k,
                        g,
                        self.consumer(),
                    ]),
                    _ => v.extend(["XGROUP".into(), "DELCONSUMER".into(), k, g, self.consumer()]),
                }
            }
            66..=70 => {
                v.extend(["XACK".into(), k, self.group()]);
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id();
                    v.push(id.trim_start_matches('(').into());
                }
            }
            71..=76 => {
                v.extend(["XPENDING".into(), k, self.group()]);
                if self.chance(0.6) {
                    if self.chance(0.3) {
                        v.extend(["IDLE".into(), self.pick(&["0", "3600000"]).into()]);
                    }
                    v.extend([
                        self.id(),
                        self.id(),
                        self.rng.random_range(0..5).to_string(),
                    ]);
                    if self.chance(0.4) {
                        v.push(self.consumer());
                    }
                }
            }
            77..=82 => {
                v.extend(["XCLAIM".into(), k, self.group(), self.consumer()]);
                v.push(self.pick(&["0", "0", "3600000"]).into());
                for _ in 0..self.rng.random_range(1..4) {
                    let id = self.id();
                    v.push(id.trim_start_matches('(').into());
                }
                for _ in 0..self.rng.random_range(0..3) {
                    match self.rng.random_range(0..5) {
                        0 => v.push("FORCE".into()),
                        1 => v.push("JUSTID".into()),
                        2 => {
                            v.extend(["RETRYCOUNT".into(), self.rng.random_range(0..5).to_string()])
                        }
                        3 => v.extend([
                            "LASTID".into(),
                            format!("{}-0", self.rng.random_range(0..self.ms + 2)),
                        ]),
                        _ => v.extend(["IDLE".into(), "0".into()]),
                    }
                }
            }
            83..=87 => {
                v.extend(["XAUTOCLAIM".into(), k, self.group(), self.consumer()]);
                v.push(self.pick(&["0", "0", "3600000"]).into());
                let id = self.id();
                v.push(if id == "+" { "0".into() } else { id });
                if self.chance(0.6) {
                    v.extend(["COUNT".into(), self.rng.random_range(1..5).to_string()]);
                }
                if self.chance(0.3) {
                    v.push("JUSTID".into());
                }
            }
            88..=91 => match self.rng.random_range(0..4) {
                0 => v.extend(["XINFO".into(), "STREAM".into(), k]),
                1 => v.extend([
                    "XINFO".into(),
                    "STREAM".into(),
                    k,
                    "FULL".into(),
                    "COUNT".into(),
                    self.rng.random_range(0..4).to_string(),
                ]),
                2 => v.extend(["XINFO".into(), "GROUPS".into(), k]),
                _ => v.extend(["XINFO".into(), "CONSUMERS".into(), k, self.group()]),
            },
            92..=93 => {
                v.extend(["XSETID".into(), k]);
                self.ms += 1;
                v.push(format!("{}-{}", self.ms, self.rng.random_range(0..3)));
                if self.chance(0.3) {
                    v.extend([
                        "ENTRIESADDED".into(),
                        self.rng.random_range(0..60).to_string(),
                    ]);
                }
                if self.chance(0.3) {
                    v.extend([
                        "MAXDELETEDID".into(),
                        format!("{}-0", self.rng.random_range(0..self.ms)),
                    ]);
                }
            }
            94 => v.extend(["DEL".into(), k]),
            95 => {
                // Streams only: a string copied over a stream key would
                // leave it answering WRONGTYPE for the rest of the run.
                let (a, b) = (
                    self.pick(&["s0", "s1", "s2"]),
                    self.pick(&["s0", "s1", "s2"]),
                );
                v.extend(["COPY".into(), a.into(), b.into(), "REPLACE".into()]);
            }
            _ => v.extend(["XRANGE".into(), k, "-".into(), "+".into()]),
        }
        v
    }
}

fn run(seed: u64, resp3: bool, node_entries: u32, commands: usize) {
    let _s = Servers::start_redis8(&[]);
    let mut p = _s.pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    p.check_str(&format!(
        "CONFIG SET stream-node-max-entries {node_entries}"
    ));
    p.check_str("SET str value");
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        ms: 1,
    };
    let (mut replies, mut errors) = (0usize, 0usize);
    for _ in 0..commands {
        let cmd = g.command();
        let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
        if std::env::var_os("STREAMS_TRACE").is_some() {
            eprintln!("> {}", show_args(&args));
        }
        let r = check_masked(&mut p, &args);
        replies += 1;
        if r.first() == Some(&b'-') {
            errors += 1;
        }
    }
    assert!(
        errors * 2 < replies,
        "degenerate stream: {errors} errors of {replies}"
    );
    for key in ["s0", "s1", "s2"] {
        check_masked_str(&mut p, &format!("XINFO STREAM {key} FULL COUNT 0"));
    }
}

#[test]
fn random_stream_resp2() {
    run(11, false, 100, 4000);
}

#[test]
fn random_stream_resp3_small_nodes() {
    run(12, true, 4, 4000);
}

#[test]
fn random_stream_resp2_small_nodes() {
    run(13, false, 3, 4000);
}

// ---------------------------------------------------------------------------
// Blocking.

const SETTLE: Duration = Duration::from_millis(150);

fn send_both(p: &mut Pair, line: &str) {
    let args = split_args(line);
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
    let bytes = encode_cmd(&refs);
    p.r.send(&bytes);
    p.z.send(&bytes);
}

fn block(p: &mut Pair, line: &str) {
    send_both(p, line);
    std::thread::sleep(SETTLE);
    assert_eq!(
        p.r.try_read_reply(Duration::from_millis(20)),
        ReadOutcome::Timeout,
        "redis did not block on {line}"
    );
    assert_eq!(
        p.z.try_read_reply(Duration::from_millis(20)),
        ReadOutcome::Timeout,
        "zwindow did not block on {line}"
    );
}

fn still_blocked(p: &mut Pair, what: &str) {
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        p.r.try_read_reply(Duration::from_millis(20)),
        ReadOutcome::Timeout,
        "redis: {what}"
    );
    assert_eq!(
        p.z.try_read_reply(Duration::from_millis(20)),
        ReadOutcome::Timeout,
        "zwindow: {what}"
    );
}

fn woken(p: &mut Pair, what: &str) -> Vec<u8> {
    let r = p.r.read_reply();
    let z = p.z.read_reply();
    assert!(
        replies_equivalent(&r, &z),
        "{what}: redis {} vs zwindow {}",
        escape(&r),
        escape(&z)
    );
    r
}

#[test]
fn blocking_xread_and_xreadgroup() {
    let s = Servers::start_redis8(&[]);
    for resp3 in [false, true] {
        let mut c = s.pair();
        let mut w = s.pair();
        let mut w2 = s.pair();
        if resp3 {
            w.both_str("HELLO 3");
            w2.both_str("HELLO 3");
        }
        c.check_str("FLUSHALL");
        c.check_str("XADD s 1-1 a 1");

        // `$` waits for entries after the ID the stream had when blocking.
        block(&mut w, "XREAD BLOCK 0 STREAMS s $");
        c.check_str("XADD s 2-1 b 2");
        woken(&mut w, "XREAD $ served by XADD");

        // Several keys: served from the key that got data; FIFO.
        block(&mut w, "XREAD COUNT 5 BLOCK 0 STREAMS s t $ $");
        block(&mut w2, "XREAD BLOCK 0 STREAMS t 0");
        c.check_str("XADD t 1-1 x y");
        woken(&mut w, "first waiter");
        woken(&mut w2, "second waiter");

        // Data on several keys at once: the re-run command serves them all
        // (Redis 7.2+ re-executes it; 7.0 served the ready key alone).
        c.check_str("XADD m1 1-1 a 1");
        block(&mut w, "XREAD BLOCK 0 STREAMS m1 m2 $ $");
        c.check_str("MULTI");
        c.check_str("XADD m2 1-2 x z");
        c.check_str("XADD m1 2-5 b 5");
        c.check_str("EXEC");
        woken(&mut w, "two keys ready together");
        // Another key turned into a string: the re-run fails as it would.
        block(&mut w, "XREAD BLOCK 0 STREAMS m1 other $ 0");
        c.check_str("SET other str");
        c.check_str("XADD m1 2-6 b 6");
        woken(&mut w, "another key retyped");
        c.check_str("DEL other m1 m2");

        // A key named twice is served once, with its first ID.
        block(&mut w, "XREAD BLOCK 0 STREAMS s s $ 99-0");
        c.check_str("XADD s 2-2 b 3");
        woken(&mut w, "key named twice");

        // Deleted and retyped keys leave XREAD waiting.
        block(&mut w, "XREAD BLOCK 0 STREAMS s $");
        c.check_str("MULTI");
        c.check_str("XADD s 3-1 c 3");
        c.check_str("DEL s");
        c.check_str("EXEC");
        still_blocked(&mut w, "XADD + DEL must not wake XREAD");
        c.check_str("SET s str");
        still_blocked(&mut w, "SET must not wake XREAD");
        c.check_str("DEL s");
        c.check_str("XADD s 4-1 d 4");
        woken(&mut w, "XREAD after the key came back");

        // `+` waits on a missing or emptied stream and, when data comes,
        // means the last entry then (Redis 7.4).
        block(&mut w, "XREAD BLOCK 0 STREAMS plus +");
        c.check_str("XADD plus 1-1 a 1");
        woken(&mut w, "XREAD + served by XADD");
        c.check_str("XDEL plus 1-1");
        block(&mut w, "XREAD COUNT 3 BLOCK 0 STREAMS plus s + 999-0");
        c.check_str("MULTI");
        c.check_str("XADD plus 2-1 b 2");
        c.check_str("XADD plus 3-1 c 3");
        c.check_str("EXEC");
        woken(&mut w, "XREAD + after two entries: the last one");
        send_both(&mut w, "XREAD BLOCK 0 STREAMS plus +");
        woken(
            &mut w,
            "XREAD BLOCK + on a non-empty stream answers at once",
        );

        // A timeout answers the null array.
        send_both(&mut w, "XREAD BLOCK 100 STREAMS s $");
        woken(&mut w, "timeout");

        // XREADGROUP: `>` is served by XADD; the entries go to the PEL.
        c.check_str("XGROUP CREATE s g $");
        block(&mut w, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >");
        c.check_str("XADD s 5-1 e 5");
        woken(&mut w, "XREADGROUP served");
        c.check_str("XPENDING s g");

        // XDEL of everything new: stays blocked.
        block(&mut w, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >");
        c.check_str("MULTI");
        c.check_str("XADD s 6-1 f 6");
        c.check_str("XDEL s 6-1");
        c.check_str("EXEC");
        // Redis 7.2+ re-runs the blocked command, which finds nothing live
        // and waits on (7.0 answered an empty entry list).
        still_blocked(&mut w, "XADD + XDEL must not wake XREADGROUP");
        c.check_str("XADD s 7-1 g 7");
        woken(&mut w, "XADD after XADD + XDEL");
        // Group destroyed: NOGROUP.
        block(&mut w, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >");
        c.check_str("XGROUP DESTROY s g");
        woken(&mut w, "group destroyed");

        // Key deleted, retyped, flushed: the re-run command's NOGROUP or
        // WRONGTYPE error (7.0 answered UNBLOCKED).
        for how in ["DEL s", "SET s x", "FLUSHALL"] {
            c.check_str("DEL s");
            c.check_str("XADD s 1-1 a 1");
            c.check_str("XGROUP CREATE s g $");
            block(&mut w, "XREADGROUP GROUP g bob BLOCK 0 STREAMS s >");
            c.check_str(how);
            woken(&mut w, how);
        }

        // RENAME onto the key: served with the new stream's group data.
        c.check_str("DEL s s2");
        c.check_str("XGROUP CREATE s g $ MKSTREAM");
        block(&mut w, "XREADGROUP GROUP g bob BLOCK 0 STREAMS s >");
        c.check_str("XGROUP CREATE s2 g $ MKSTREAM");
        c.check_str("XADD s2 100 f1 v1");
        c.check_str("RENAME s2 s");
        woken(&mut w, "RENAME with the group");
        // …and NOGROUP when the new stream lacks the group.
        block(&mut w, "XREADGROUP GROUP g bob BLOCK 0 STREAMS s >");
        c.check_str("XADD s2 100 f1 v1");
        c.check_str("RENAME s2 s");
        woken(&mut w, "RENAME without the group");

        // SWAPDB: the waiter's key is gone or is no stream in the new db.
        for other in ["", "LPUSH s e1"] {
            c.check_str("SELECT 4");
            c.check_str("FLUSHDB");
            if !other.is_empty() {
                c.check_str(other);
            }
            c.check_str("SELECT 9");
            c.check_str("DEL s");
            c.check_str("XADD s 666 f v");
            c.check_str("XGROUP CREATE s g $");
            w.check_str("SELECT 9");
            block(&mut w, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >");
            c.check_str("SWAPDB 4 9");
            woken(&mut w, "SWAPDB");
            w.check_str("SELECT 0");
            c.check_str("SELECT 0");
        }

        // Inside MULTI a blocking read answers at once.
        c.check_str("MULTI");
        c.check_str("XREAD BLOCK 0 STREAMS s $");
        c.check_str("XREADGROUP GROUP g bob BLOCK 0 STREAMS nokey >");
        c.check_str("EXEC");
        c.check_str("INFO errorstats");
    }
}

/// More seeds on demand: `STREAMS_SEEDS=100..120 cargo test --test streams
/// -- --ignored many_seeds`.
#[test]
#[ignore]
fn many_seeds() {
    let spec = std::env::var("STREAMS_SEEDS").unwrap_or_else(|_| "100..110".into());
    let (a, b) = spec.split_once("..").expect("STREAMS_SEEDS=a..b");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    for seed in a..b {
        eprintln!("seed {seed}");
        run(seed, seed % 2 == 1, [2, 5, 100][(seed % 3) as usize], 3000);
    }
}

/// Redis 7.2-8.0 stream changes: XREAD's `+` (the last entry), the error
/// texts around it, and the consumers' two clocks: `seen-time` (every
/// XREADGROUP, XCLAIM, XAUTOCLAIM, served or not, creating the consumer)
/// and `active-time` / `inactive` (-1 until an entry is delivered to or
/// claimed by it; NOACK and history reads do not count).
#[test]
fn xread_last_entry_and_consumer_clocks() {
    let s = Servers::start_redis8(&[]);
    for resp3 in [false, true] {
        let mut p = s.pair();
        if resp3 {
            p.both_str("HELLO 3");
        }
        for line in [
            "FLUSHALL",
            "XREAD STREAMS s +",
            "XREAD COUNT 2 STREAMS s +",
            "XADD s 0-1 a 0",
            "XREAD STREAMS s +",
            "XADD s 1-1 a 1",
            "XADD s 2-1 b 2",
            "XADD s 3-1 c 3",
            "XREAD STREAMS s +",
            "XREAD COUNT 10 STREAMS s +",
            "XREAD STREAMS s t + +",
            "XADD t 5-5 x y",
            "XREAD STREAMS s t + 0",
            "XREAD STREAMS t s $ +",
            "XDEL s 3-1",
            "XREAD STREAMS s +",
            "XDEL s 0-1 1-1 2-1",
            "XLEN s",
            "XREAD STREAMS s +",
            "XREAD STREAMS s",
            "XREAD STREAMS s t +",
            "XREAD COUNT 1 STREAMS",
            "XREADGROUP GROUP g c STREAMS s",
            "XREADGROUP GROUP g c STREAMS s t >",
            "XGROUP CREATE s g 0",
            "XREADGROUP GROUP g c STREAMS s +",
            "XREADGROUP GROUP g c STREAMS s $",
            "SET str x",
            "XREAD STREAMS str +",
            "FLUSHALL",
            "XADD s 1-1 a 1",
            "XADD s 2-1 b 2",
            "XGROUP CREATE s g $",
            "XGROUP CREATECONSUMER s g made",
            // Nothing to serve: created anyway, never active.
            "XREADGROUP GROUP g idle STREAMS s >",
            "XINFO CONSUMERS s g",
            "XADD s 3-1 c 3",
            "XREADGROUP GROUP g reader COUNT 1 STREAMS s >",
            "XREADGROUP GROUP g quiet NOACK STREAMS s >",
            "XREADGROUP GROUP g history STREAMS s 0",
            "XINFO CONSUMERS s g",
            "XINFO STREAM s FULL",
            // Claims create the consumer up front; only a claim activates.
            "XCLAIM s g claimer 3600000 3-1",
            "XCLAIM s g claimer2 0 3-1",
            "XAUTOCLAIM s g auto 3600000 0",
            "XAUTOCLAIM s g auto2 0 0",
            "XCLAIM s g nosuchentry 0 9-9",
            "XINFO CONSUMERS s g",
            "XINFO STREAM s FULL",
            "XINFO GROUPS s",
            "XPENDING s g - + 10 made",
            "XINFO CONSUMERS s g",
            "XINFO CONSUMERS s nogroup",
            "XINFO CONSUMERS s",
            "XINFO CONSUMERS s g extra",
            "XINFO HELP",
            "XINFO HELP extra",
            "XINFO STREAM",
            "XINFO GROUPS s extra",
        ] {
            check_masked_str(&mut p, line);
        }
    }
}

/// The group lag and read counter rules of Redis 7.2+ around tombstones:
/// emptied streams, groups behind the first entry, deletions ahead of the
/// group and behind it.
#[test]
fn group_lag_with_tombstones() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    for line in [
        "XADD x 1-0 data a",
        "XADD x 2-0 data b",
        "XADD x 3-0 data c",
        "XADD x 4-0 data d",
        "XADD x 5-0 data e",
        "XGROUP CREATE x g1 0",
        "XGROUP CREATE x g2 0",
        "XGROUP CREATE x g3 3-0",
        "XREADGROUP GROUP g2 c COUNT 2 STREAMS x >",
        "XINFO GROUPS x",
        "XDEL x 1-0",
        "XINFO GROUPS x",
        "XDEL x 4-0",
        "XINFO GROUPS x",
        "XREADGROUP GROUP g2 c COUNT 1 STREAMS x >",
        "XINFO GROUPS x",
        "XREADGROUP GROUP g1 c STREAMS x >",
        "XINFO GROUPS x",
        "XTRIM x MAXLEN 1",
        "XINFO GROUPS x",
        "XADD x 6-0 data f",
        "XINFO GROUPS x",
        "XREADGROUP GROUP g3 c STREAMS x >",
        "XINFO GROUPS x",
        "XDEL x 5-0 6-0",
        "XINFO GROUPS x",
        "XADD x 7-0 data g",
        "XGROUP SETID x g1 0 ENTRIESREAD 0",
        "XINFO GROUPS x",
        "XREADGROUP GROUP g1 c STREAMS x >",
        "XINFO GROUPS x",
        "XINFO STREAM x",
        "XSETID x 7-0 ENTRIESADDED 7 MAXDELETEDID 3-0",
        "XINFO GROUPS x",
    ] {
        check_masked_str(&mut p, line);
    }
}

/// Sends `line` to zwindow and checks the raw reply.
fn expect(c: &mut RawConn, line: &str, want: &str) {
    let got = c.cmd_str(line);
    assert_eq!(escape(&got), escape(want.as_bytes()), "{line}");
}

/// Entries 1-0..=5-0 in `key`; group `g` has read up to 3-0 and holds 2-0
/// and 3-0 pending (1-0 acknowledged); group `all` has read everything
/// and holds nothing.
fn referenced_stream(c: &mut RawConn, key: &str) {
    for i in 1..=5 {
        expect(
            c,
            &format!("XADD {key} {i}-0 f v{i}"),
            &format!("$3\r\n{i}-0\r\n"),
        );
    }
    expect(c, &format!("XGROUP CREATE {key} g 0"), "+OK\r\n");
    expect(c, &format!("XGROUP CREATE {key} all $"), "+OK\r\n");
    let r = parse_reply(&c.cmd_str(&format!("XREADGROUP GROUP g c COUNT 3 STREAMS {key} >")));
    assert_eq!(r.array()[0].array()[1].array().len(), 3);
    expect(c, &format!("XACK {key} g 1-0"), ":1\r\n");
}

/// Redis 8.2's XDELEX and XACKDEL and the KEEPREF | DELREF | ACKED option
/// of XADD and XTRIM. No Redis 8.2 to compare with: the replies follow
/// redis.io's pages (per ID -1 / 1 / 2; ACKED keeps what a group still has
/// pending or has not read yet), the error texts Redis's other numbered
/// blocks use (HGETDEL's FIELDS), deletions notified as `xdel`.
#[test]
fn reference_policies_of_redis_8_2() {
    let z = ZwindowServer::start(&["--notify-keyspace-events", "KEA"]);
    let mut c = z.conn();
    let c = &mut c;
    let mut sub = z.conn();
    sub.cmd_str("SUBSCRIBE __keyspace@0__:s");

    // XDELEX: a missing key, each policy, missing and repeated IDs.
    expect(c, "XDELEX nokey IDS 2 1-0 2-0", "*2\r\n:-1\r\n:-1\r\n");
    referenced_stream(c, "s");
    expect(
        c,
        "XDELEX s ACKED IDS 5 1-0 2-0 4-0 9-0 1-0",
        "*5\r\n:1\r\n:2\r\n:2\r\n:-1\r\n:-1\r\n",
    );
    expect(c, "XLEN s", ":4\r\n");
    expect(c, "XDELEX s IDS 1 2-0", "*1\r\n:1\r\n");
    expect(
        c,
        "XPENDING s g",
        "*4\r\n:2\r\n$3\r\n2-0\r\n$3\r\n3-0\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n2\r\n",
    );
    // DELREF drops the dangling reference to 2-0 though the entry is gone.
    expect(c, "XDELEX s DELREF IDS 2 2-0 3-0", "*2\r\n:-1\r\n:1\r\n");
    expect(c, "XPENDING s g", "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
    // The IDS block anywhere; max-deleted-entry-id moves as with XDEL.
    expect(c, "XDELEX s IDS 1 4-0 keepref", "*1\r\n:1\r\n");
    let info = parse_reply(&c.cmd_str("XINFO STREAM s"));
    assert_eq!(
        info.field("max-deleted-entry-id")
            .map(|r| r.bulk().to_vec()),
        Some(b"4-0".to_vec())
    );
    assert_eq!(info.field("length").map(Reply::int), Some(1));
    expect(
        c,
        "XDELEX s",
        "-ERR wrong number of arguments for 'xdelex' command\r\n",
    );
    expect(
        c,
        "XDELEX s IDS 0 1-0",
        "-ERR Number of IDs must be a positive integer\r\n",
    );
    expect(
        c,
        "XDELEX s IDS -1 1-0",
        "-ERR Number of IDs must be a positive integer\r\n",
    );
    expect(
        c,
        "XDELEX s IDS x 1-0",
        "-ERR Number of IDs must be a positive integer\r\n",
    );
    expect(
        c,
        "XDELEX s IDS 3 1-0 2-0",
        "-ERR The `numids` parameter must match the number of arguments\r\n",
    );
    expect(c, "XDELEX s IDS 1 1-0 2-0", "-ERR syntax error\r\n");
    expect(
        c,
        "XDELEX s KEEPREF ACKED IDS 1 1-0",
        "-ERR syntax error\r\n",
    );
    expect(c, "XDELEX s KEEPREF 1-0 IDS", "-ERR syntax error\r\n");
    expect(c, "XDELEX s FOO IDS 1 1-0", "-ERR syntax error\r\n");
    expect(c, "XDELEX s IDS 1 1-0 IDS 1 2-0", "-ERR syntax error\r\n");
    expect(
        c,
        "XDELEX s IDS 1 bad",
        "-ERR Invalid stream ID specified as stream command argument\r\n",
    );
    expect(c, "SET str x", "+OK\r\n");
    expect(
        c,
        "XDELEX str IDS 1 1-0",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );

    // XACKDEL: acknowledged in its group, then deleted per the policy.
    expect(c, "DEL s", ":1\r\n");
    referenced_stream(c, "s");
    expect(c, "XACKDEL nokey g IDS 1 1-0", "*1\r\n:-1\r\n");
    expect(c, "XACKDEL s nogroup IDS 1 1-0", "*1\r\n:-1\r\n");
    expect(c, "XACKDEL s g IDS 2 1-0 9-0", "*2\r\n:-1\r\n:-1\r\n");
    expect(c, "XACKDEL s g ACKED IDS 1 2-0", "*1\r\n:1\r\n");
    expect(c, "XLEN s", ":4\r\n");
    // Once `all` has read nothing, every entry is still needed.
    expect(c, "XGROUP SETID s all 0", "+OK\r\n");
    expect(c, "XACKDEL s g ACKED IDS 1 3-0", "*1\r\n:2\r\n");
    expect(c, "XPENDING s g", "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
    expect(c, "XLEN s", ":4\r\n");
    expect(c, "XACKDEL s g IDS 1 3-0", "*1\r\n:-1\r\n");
    expect(
        c,
        "XACKDEL s",
        "-ERR wrong number of arguments for 'xackdel' command\r\n",
    );
    expect(
        c,
        "XACKDEL s g IDS 2 1-0",
        "-ERR The `numids` parameter must match the number of arguments\r\n",
    );
    expect(
        c,
        "XACKDEL str g IDS 1 1-0",
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    );

    // XTRIM and XADD: ACKED trims only what no group needs, DELREF takes
    // the references along.
    expect(c, "DEL s", ":1\r\n");
    referenced_stream(c, "s");
    expect(c, "XTRIM s MAXLEN 0 ACKED", ":1\r\n");
    expect(c, "XTRIM s MAXLEN 0 ACKED", ":0\r\n");
    expect(c, "XTRIM s MAXLEN 0 DELREF", ":4\r\n");
    expect(c, "XPENDING s g", "*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
    expect(c, "XADD s KEEPREF MAXLEN 1 6-0 f v", "$3\r\n6-0\r\n");
    expect(c, "XADD s ACKED MAXLEN 0 7-0 f v", "$3\r\n7-0\r\n");
    expect(c, "XLEN s", ":2\r\n");
    expect(c, "XADD s DELREF MAXLEN 0 8-0 f v", "$3\r\n8-0\r\n");
    expect(c, "XLEN s", ":0\r\n");
    expect(c, "XTRIM s MAXLEN 0 FOO", "-ERR syntax error\r\n");

    // The key specs redis.io gives: XDELEX RW+delete, XACKDEL
    // RW+update+delete.
    expect(
        c,
        "COMMAND GETKEYSANDFLAGS XDELEX s IDS 1 1-0",
        "*1\r\n*2\r\n$1\r\ns\r\n*2\r\n+RW\r\n+delete\r\n",
    );
    expect(
        c,
        "COMMAND GETKEYSANDFLAGS XACKDEL s g IDS 1 1-0",
        "*1\r\n*2\r\n$1\r\ns\r\n*3\r\n+RW\r\n+update\r\n+delete\r\n",
    );
    let info = parse_reply(&c.cmd_str("COMMAND INFO xdelex xackdel"));
    let arities: Vec<i64> = info.array().iter().map(|e| e.array()[1].int()).collect();
    assert_eq!(arities, [-5, -6]);

    // Deletions are `xdel` events; an ACKED refusal or an acknowledgement
    // alone is none.
    let mut events = Vec::new();
    sub.set_timeout(Duration::from_millis(300));
    while let ReadOutcome::Reply(r) = sub.try_read_reply(Duration::from_millis(300)) {
        let r = parse_reply(&r);
        events.push(String::from_utf8_lossy(r.array()[2].bulk()).into_owned());
    }
    let xdels = events.iter().filter(|e| *e == "xdel").count();
    // XDELEX: 1-0, 2-0, 3-0, 4-0; XACKDEL: 2-0.
    assert_eq!(xdels, 5, "{events:?}");
    assert_eq!(
        events.iter().filter(|e| *e == "xtrim").count(),
        3,
        "{events:?}"
    );
}

/// XDELEX, XACKDEL and the trim policies are logged so that a restart from
/// the AOF (approximate trims logged as the exact ones they came to) brings
/// back the same entries, PELs, tombstone mark and groups.
#[test]
fn reference_policies_replay_from_the_aof() {
    let dir = PrivateDir::new("streams-refs-aof");
    let path = dir.0.to_str().unwrap().to_string();
    let args = [
        "--dir",
        path.as_str(),
        "--appendonly",
        "yes",
        "--stream-node-max-entries",
        "2",
    ];
    let state =
        |c: &mut RawConn| common::dataset::masked(&parse_reply(&c.cmd_str("XINFO STREAM s FULL")));
    let z = ZwindowServer::start(&args);
    let mut c = z.conn();
    let c = &mut c;
    referenced_stream(c, "s");
    for i in 6..=12 {
        let id = format!("{i}-0");
        expect(
            c,
            &format!("XADD s {id} f v{i}"),
            &format!("${}\r\n{id}\r\n", id.len()),
        );
    }
    let r = parse_reply(&c.cmd_str("XREADGROUP GROUP all c2 COUNT 2 STREAMS s >"));
    assert_eq!(r.array()[0].array()[1].array().len(), 2);
    expect(
        c,
        "XDELEX s ACKED IDS 3 1-0 2-0 6-0",
        "*3\r\n:1\r\n:2\r\n:2\r\n",
    );
    expect(c, "XACKDEL s all DELREF IDS 1 6-0", "*1\r\n:1\r\n");
    expect(c, "XACKDEL s g KEEPREF IDS 1 2-0", "*1\r\n:1\r\n");
    expect(c, "XDELEX s DELREF IDS 1 3-0", "*1\r\n:1\r\n");
    // `g` has read everything; `all` is at 7-0 with 7-0 pending.
    expect(c, "XGROUP SETID s g 12-0", "+OK\r\n");
    expect(c, "XTRIM s MINID 10-0 ACKED", ":2\r\n");
    expect(c, "XTRIM s MAXLEN 4 DELREF", ":2\r\n");
    c.cmd_str("XADD s ACKED MAXLEN ~ 1 13-0 f v");
    let before = state(c);
    assert!(before.contains("\"c2\""), "{before}");
    drop(z);
    let z = ZwindowServer::start(&args);
    assert_eq!(state(&mut z.conn()), before, "restarted from the AOF");
}

/// XDELEX and XACKDEL reach replicas as what they did, in commands Redis
/// 7.0 has (`XACK` per group whose PEL lost entries, then `XDEL`): a
/// redis-server 7.0 replica of zwindow ends with the same stream.
#[test]
fn xdelex_and_xackdel_reach_a_redis_7_replica_as_xack_and_xdel() {
    let p = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let port = p.port().to_string();
    let r = RedisServer::start_binary(&find_redis_server(), &["--replicaof", "127.0.0.1", &port]);
    let (mut pc, mut rc) = (p.conn(), r.conn());
    eventually("the replica's link", || {
        info_field(&mut rc, "replication", "master_link_status") == "up"
    });
    let c = &mut pc;
    referenced_stream(c, "s");
    for i in 6..=8 {
        expect(
            c,
            &format!("XADD s {i}-0 f v{i}"),
            &format!("$3\r\n{i}-0\r\n"),
        );
    }
    let r2 = parse_reply(&c.cmd_str("XREADGROUP GROUP all c2 COUNT 2 STREAMS s >"));
    assert_eq!(r2.array()[0].array()[1].array().len(), 2);
    // g: 2-0 and 3-0 pending; all: 6-0 and 7-0 pending.
    expect(
        c,
        "XDELEX s ACKED IDS 3 1-0 2-0 6-0",
        "*3\r\n:1\r\n:2\r\n:2\r\n",
    );
    expect(c, "XDELEX s DELREF IDS 2 2-0 9-0", "*2\r\n:1\r\n:-1\r\n");
    expect(
        c,
        "XACKDEL s all DELREF IDS 2 6-0 7-0",
        "*2\r\n:1\r\n:1\r\n",
    );
    expect(
        c,
        "XACKDEL s g KEEPREF IDS 2 3-0 4-0",
        "*2\r\n:1\r\n:-1\r\n",
    );
    expect(c, "XDELEX s IDS 1 5-0", "*1\r\n:1\r\n");
    let acked = c.cmd_str("WAIT 1 10000");
    assert_eq!(acked, b":1\r\n");
    // Redis 7.0 shows no active times (7.2 added them).
    let state = |c: &mut RawConn| {
        common::dataset::masked(&parse_reply(&c.cmd_str("XINFO STREAM s FULL")))
            .replace("\"active-time\" <time> ", "")
    };
    eventually("the replica's stream", || state(&mut rc) == state(&mut pc));
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}
