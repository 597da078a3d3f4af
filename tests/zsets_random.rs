//! Randomised differential test of the sorted-set commands: a seeded
//! generator sends the same stream of several thousand commands (5 keys, 30
//! members, a small score alphabet with duplicates, infinities and invalid
//! spellings, every non-blocking command with random and deliberately
//! invalid options) to zwindow and redis-server, and every reply must match.
//! It runs in RESP2 and RESP3, each with the default listpack threshold and
//! with a small one so both encodings (and conversions) are exercised.
//! Only where Redis itself is random (ZRANDMEMBER) are replies compared by
//! shape and membership. Lex ranges are only defined when all scores are
//! equal (Redis's answer on mixed scores depends on its skiplist's random
//! levels), so a lex command aimed at a key with mixed scores is redirected
//! to `lx` or `lu`, keys that only ever hold score 0 (`lu` only members
//! under `user:`, so its compact encoding keeps a long shared head that
//! lex bounds cut before, inside and after).
mod common;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "str", "none"];
const SCORES: &[&str] = &[
    "0", "1", "1", "2", "2.5", "-1", "-0", "3", "10", "inf", "-inf", "+inf", "1e308", "-1e308",
    "0.1", "0x10", "1.5e-5",
];
const BAD_SCORES: &[&str] = &["nan", "x", " 1", "", "1e400", "(1"];
const BOUNDS: &[&str] = &[
    "-inf", "+inf", "inf", "0", "1", "(1", "2.5", "(2.5", "-1", "(-1", "10", "(10", "3", "(inf",
];
const BAD_BOUNDS: &[&str] = &["x", "(x", "nan", "[1"];
const LEX: &[&str] = &[
    "-",
    "+",
    "[m1",
    "(m1",
    "[m15",
    "(m15",
    "[m2",
    "[m29",
    "(m3",
    "[",
    "(",
    "[u",
    "(user:",
    "[user:m1",
    "(user:m2",
    "[user:m29",
    "[v",
];
const BAD_LEX: &[&str] = &["m1", "x", "*", ""];
const INTS: &[&str] = &[
    "0", "1", "2", "-1", "-2", "5", "-5", "10", "29", "-30", "100", "-100",
];

struct Gen {
    rng: StdRng,
}

impl Gen {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn key(&mut self) -> String {
        // Mostly real sorted sets, sometimes a string or a missing key.
        if self.chance(0.9) {
            self.pick(&KEYS[..5]).to_string()
        } else {
            self.pick(KEYS).to_string()
        }
    }

    /// `m0`..`m29`, most under a `user:` namespace: a compact set's
    /// members then share a longer head (stored once), which lex bounds
    /// cut inside of, before and after.
    fn member(&mut self) -> String {
        let ns = if self.chance(0.8) { "user:" } else { "" };
        format!("{ns}m{}", self.rng.random_range(0..30))
    }

    fn score(&mut self) -> String {
        if self.chance(0.03) {
            self.pick(BAD_SCORES).to_string()
        } else {
            self.pick(SCORES).to_string()
        }
    }

    fn bound(&mut self) -> String {
        if self.chance(0.03) {
            self.pick(BAD_BOUNDS).to_string()
        } else {
            self.pick(BOUNDS).to_string()
        }
    }

    fn lex(&mut self) -> String {
        if self.chance(0.03) {
            self.pick(BAD_LEX).to_string()
        } else {
            self.pick(LEX).to_string()
        }
    }

    fn int(&mut self) -> String {
        if self.chance(0.02) {
            "x".to_string()
        } else {
            self.pick(INTS).to_string()
        }
    }

    fn junk(&mut self, v: &mut Vec<String>) {
        if self.chance(0.02) {
            v.push(
                self.pick(&["FOO", "LIMIT", "WITHSCORES", "REV", "1"])
                    .to_string(),
            );
        }
    }

    fn limit(&mut self, v: &mut Vec<String>) {
        if self.chance(0.3) {
            v.push("LIMIT".into());
            v.push(self.int());
            v.push(self.int());
        }
    }

    fn keys_numkeys(&mut self, v: &mut Vec<String>) -> usize {
        let n = self.rng.random_range(1..4);
        v.push(if self.chance(0.02) {
            self.pick(&["0", "-1", "x", "9"]).to_string()
        } else {
            n.to_string()
        });
        for _ in 0..n {
            v.push(self.key());
        }
        n
    }

    fn command(&mut self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        let c = self.rng.random_range(0..36);
        match c {
            34 | 35 => {
                let lu = self.chance(0.5);
                v.push("ZADD".into());
                v.push(if lu { "lu" } else { "lx" }.into());
                for flag in ["NX", "XX", "CH"] {
                    if self.chance(0.1) {
                        v.push(flag.into());
                    }
                }
                for _ in 0..self.rng.random_range(1..4) {
                    v.push("0".into());
                    let m = self.member();
                    v.push(match m.strip_prefix("user:") {
                        Some(_) => m,
                        None if lu => format!("user:{m}"),
                        None => m,
                    });
                }
            }
            0..=5 => {
                v.push("ZADD".into());
                v.push(self.key());
                for flag in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
                    if self.chance(0.12) {
                        v.push(flag.into());
                    }
                }
                let pairs = if self.chance(0.5) {
                    1
                } else {
                    self.rng.random_range(1..9)
                };
                for _ in 0..pairs {
                    v.push(self.score());
                    v.push(self.member());
                }
                if self.chance(0.02) {
                    v.pop();
                }
            }
            6 => {
                v.push("ZINCRBY".into());
                v.push(self.key());
                v.push(self.score());
                v.push(self.member());
            }
            7 => {
                v.push("ZREM".into());
                v.push(self.key());
                for _ in 0..self.rng.random_range(1..4) {
                    v.push(self.member());
                }
            }
            8 => {
                v.push(self.pick(&["ZCARD", "OBJECT ENCODING", "TYPE"]).into());
                v.push(self.key());
            }
            9 => {
                v.push(self.pick(&["ZSCORE", "ZRANK", "ZREVRANK"]).into());
                v.push(self.key());
                v.push(self.member());
            }
            10 => {
                v.push("ZMSCORE".into());
                v.push(self.key());
                for _ in 0..self.rng.random_range(1..4) {
                    v.push(self.member());
                }
            }
            11 => {
                v.push("ZCOUNT".into());
                v.push(self.key());
                v.push(self.bound());
                v.push(self.bound());
            }
            12 => {
                v.push("ZLEXCOUNT".into());
                v.push(self.key());
                v.push(self.lex());
                v.push(self.lex());
            }
            13..=15 => {
                let store = self.chance(0.25);
                if store {
                    v.push("ZRANGESTORE".into());
                    v.push(self.key());
                } else {
                    v.push("ZRANGE".into());
                }
                v.push(self.key());
                match self.rng.random_range(0..3) {
                    0 => {
                        v.push(self.int());
                        v.push(self.int());
                        if self.chance(0.05) {
                            self.limit(&mut v);
                        }
                    }
                    1 => {
                        v.push(self.bound());
                        v.push(self.bound());
                        v.push("BYSCORE".into());
                        self.limit(&mut v);
                    }
                    _ => {
                        v.push(self.lex());
                        v.push(self.lex());
                        v.push("BYLEX".into());
                        self.limit(&mut v);
                    }
                }
                if self.chance(0.4) {
                    v.push("REV".into());
                }
                if self.chance(0.4) {
                    v.push("WITHSCORES".into());
                }
                self.junk(&mut v);
            }
            16 => {
                v.push(self.pick(&["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]).into());
                v.push(self.key());
                v.push(self.bound());
                v.push(self.bound());
                if self.chance(0.5) {
                    v.push("WITHSCORES".into());
                }
                self.limit(&mut v);
                self.junk(&mut v);
            }
            17 => {
                v.push(self.pick(&["ZRANGEBYLEX", "ZREVRANGEBYLEX"]).into());
                v.push(self.key());
                v.push(self.lex());
                v.push(self.lex());
                self.limit(&mut v);
                self.junk(&mut v);
            }
            18 => {
                v.push("ZREVRANGE".into());
                v.push(self.key());
                v.push(self.int());
                v.push(self.int());
                if self.chance(0.5) {
                    v.push("WITHSCORES".into());
                }
                self.junk(&mut v);
            }
            19 => {
                v.push("ZREMRANGEBYSCORE".into());
                v.push(self.key());
                v.push(self.bound());
                v.push(self.bound());
            }
            20 => {
                v.push("ZREMRANGEBYRANK".into());
                v.push(self.key());
                v.push(self.int());
                v.push(self.int());
            }
            21 => {
                v.push("ZREMRANGEBYLEX".into());
                v.push(self.key());
                v.push(self.lex());
                v.push(self.lex());
            }
            22 | 23 => {
                v.push(self.pick(&["ZPOPMIN", "ZPOPMAX"]).into());
                v.push(self.key());
                if self.chance(0.5) {
                    v.push(self.int());
                }
            }
            24 => {
                v.push("ZMPOP".into());
                self.keys_numkeys(&mut v);
                v.push(if self.chance(0.97) {
                    self.pick(&["MIN", "MAX", "min"]).into()
                } else {
                    "MID".into()
                });
                if self.chance(0.5) {
                    v.push("COUNT".into());
                    v.push(self.int());
                }
            }
            25..=28 => {
                let ops = [
                    "ZUNION",
                    "ZINTER",
                    "ZDIFF",
                    "ZUNIONSTORE",
                    "ZINTERSTORE",
                    "ZDIFFSTORE",
                ];
                let op = self.pick(&ops);
                v.push(op.into());
                if op.ends_with("STORE") {
                    v.push(self.key());
                }
                let n = self.keys_numkeys(&mut v);
                if self.chance(0.3) {
                    v.push("WEIGHTS".into());
                    for _ in 0..n {
                        v.push(if self.chance(0.9) {
                            self.pick(&["1", "2", "-1", "0", "0.5", "inf", "-inf"])
                                .into()
                        } else {
                            self.score()
                        });
                    }
                }
                if self.chance(0.3) {
                    v.push("AGGREGATE".into());
                    v.push(self.pick(&["SUM", "MIN", "MAX", "max", "AVG"]).into());
                }
                if self.chance(0.4) {
                    v.push("WITHSCORES".into());
                }
                self.junk(&mut v);
            }
            29 => {
                v.push("ZINTERCARD".into());
                self.keys_numkeys(&mut v);
                if self.chance(0.5) {
                    v.push("LIMIT".into());
                    v.push(self.int());
                }
            }
            30 => {
                v.push("ZRANDMEMBER".into());
                v.push(self.key());
                if self.chance(0.7) {
                    v.push(self.int());
                    if self.chance(0.5) {
                        v.push("WITHSCORES".into());
                    }
                }
            }
            31 => {
                v.push("ZSCAN".into());
                v.push(self.key());
                v.push("0".into());
                if self.chance(0.3) {
                    v.push("MATCH".into());
                    v.push(self.pick(&["m1*", "*", "m?", "x"]).into());
                }
                if self.chance(0.3) {
                    v.push("COUNT".into());
                    v.push(self.int());
                }
            }
            32 if self.chance(0.3) => {
                v.push("DEL".into());
                v.push(self.key());
            }
            _ => {
                v.push("ZRANGE".into());
                v.push(self.key());
                v.push("0".into());
                v.push("-1".into());
                v.push("WITHSCORES".into());
            }
        }
        // "OBJECT ENCODING" is two words.
        v.into_iter()
            .flat_map(|a| {
                if a == "OBJECT ENCODING" {
                    vec!["OBJECT".to_string(), "ENCODING".to_string()]
                } else {
                    vec![a]
                }
            })
            .collect()
    }
}

/// ZRANDMEMBER and ZSCAN on a skiplist are not deterministic: compare shape
/// and contents instead of bytes.
fn check_loose(p: &mut Pair, args: &[&[u8]], members: &std::collections::HashSet<Vec<u8>>) {
    let (r, z) = p.both(args);
    if replies_equivalent(&r, &z) {
        return;
    }
    let (pr, pz) = (parse_reply(&r), parse_reply(&z));
    let ok = match (&pr, &pz) {
        (Reply::Bulk(_), Reply::Bulk(b)) => members.contains(b),
        (Reply::Array(a), Reply::Array(b)) if a.len() == b.len() => b.iter().all(|x| match x {
            Reply::Bulk(m) => {
                members.contains(m)
                    || std::str::from_utf8(m).is_ok_and(|s| s.parse::<f64>().is_ok())
            }
            Reply::Array(pair) => {
                pair.len() == 2 && matches!(&pair[0], Reply::Bulk(m) if members.contains(m))
            }
            _ => false,
        }),
        _ => false,
    };
    assert!(
        ok,
        "ZRANDMEMBER differs beyond randomness\n  command: {}\n  redis:   {}\n  zwindow: {}",
        show_args(args),
        escape(&r),
        escape(&z)
    );
}

/// Every element of a full ZSCAN iteration, as a sorted list.
fn full_scan(c: &mut RawConn, key: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut cursor = b"0".to_vec();
    let mut all = Vec::new();
    for _ in 0..1000 {
        let r = parse_reply(&c.cmd(&[b"ZSCAN", key, &cursor]));
        let Reply::Array(parts) = r else {
            return vec![(b"error".to_vec(), format!("{r:?}").into_bytes())];
        };
        cursor = parts[0].bulk().to_vec();
        for pair in parts[1].array().chunks(2) {
            let score: f64 = std::str::from_utf8(pair[1].bulk())
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::NAN);
            all.push((pair[0].bulk().to_vec(), score.to_string().into_bytes()));
        }
        if cursor == b"0" {
            break;
        }
    }
    all.sort();
    all.dedup();
    all
}

/// Where the source key of a lex-range command is.
fn lex_key_at(cmd: &[String]) -> Option<usize> {
    let name = cmd[0].to_ascii_uppercase();
    let bylex = cmd.iter().any(|a| a.eq_ignore_ascii_case("BYLEX"));
    match name.as_str() {
        "ZLEXCOUNT" | "ZRANGEBYLEX" | "ZREVRANGEBYLEX" | "ZREMRANGEBYLEX" => Some(1),
        "ZRANGE" if bylex => Some(1),
        "ZRANGESTORE" if bylex => Some(2),
        _ => None,
    }
}

/// Whether every score of the set at `key` is the same (or it is no set).
fn uniform_scores(c: &mut RawConn, key: &[u8]) -> bool {
    let first = parse_reply(&c.cmd(&[b"ZRANGE", key, b"0", b"0", b"WITHSCORES"]));
    let last = parse_reply(&c.cmd(&[b"ZRANGE", key, b"-1", b"-1", b"WITHSCORES"]));
    let score = |r: &Reply| match r {
        Reply::Array(a) => match a.as_slice() {
            [_, s] => Some(format!("{s:?}")),
            [Reply::Array(pair)] => Some(format!("{:?}", pair.get(1))),
            _ => None,
        },
        _ => None,
    };
    score(&first) == score(&last)
}

fn run(seed: u64, resp3: bool, max_entries: usize, commands: usize) {
    let (_s, mut p) = start_pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    p.check_str(&format!(
        "CONFIG SET zset-max-listpack-entries {max_entries}"
    ));
    p.check_str("SET str value");
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
    };
    let (mut replies, mut errors, mut big) = (0usize, 0usize, 0usize);
    for _ in 0..commands {
        let mut cmd = g.command();
        if let Some(at) = lex_key_at(&cmd)
            && !uniform_scores(&mut p.r, cmd[at].as_bytes())
        {
            cmd[at] = if g.chance(0.5) { "lu" } else { "lx" }.into();
        }
        let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_bytes()).collect();
        let name = cmd[0].to_ascii_uppercase();
        if name == "ZRANDMEMBER" {
            let key = args[1];
            let members: std::collections::HashSet<Vec<u8>> =
                match parse_reply(&p.r.cmd(&[b"ZRANGE", key, b"0", b"-1"])) {
                    Reply::Array(a) => a.iter().map(|m| m.bulk().to_vec()).collect(),
                    _ => Default::default(),
                };
            check_loose(&mut p, &args, &members);
        } else if name == "ZSCAN" {
            let (r, z) = p.both(&args);
            if !replies_equivalent(&r, &z) {
                // Only a skiplist scans in a different order.
                let enc = p.check(&[b"OBJECT", b"ENCODING", args[1]]);
                assert!(
                    enc.ends_with(b"skiplist\r\n"),
                    "ZSCAN differs on a listpack: {} vs {}",
                    escape(&r),
                    escape(&z)
                );
                assert_eq!(full_scan(&mut p.r, args[1]), full_scan(&mut p.z, args[1]));
            }
        } else {
            let r = p.check(&args);
            replies += 1;
            if r.first() == Some(&b'-') {
                errors += 1;
            }
            if r.len() > 40 {
                big += 1;
            }
        }
    }
    // The stream must mostly exercise real work, not error paths.
    assert!(
        errors * 4 < replies && big * 10 > replies,
        "degenerate stream: {errors} errors, {big} non-trivial replies of {replies}"
    );
    // The final states agree too.
    for key in ["k0", "k1", "k2", "k3", "k4", "lx", "lu"] {
        p.check_str(&format!("ZRANGE {key} 0 -1 WITHSCORES"));
        p.check_str(&format!("OBJECT ENCODING {key}"));
    }
}

#[test]
fn random_stream_resp2_listpack() {
    run(0x5eed_0001, false, 128, 2500);
}

#[test]
fn random_stream_resp3_listpack() {
    run(0x5eed_0002, true, 128, 2500);
}

#[test]
fn random_stream_resp2_skiplist() {
    run(0x5eed_0003, false, 6, 2500);
}

#[test]
fn random_stream_resp3_skiplist() {
    run(0x5eed_0004, true, 6, 2500);
}
