//! `INFO keysizes` (Redis 8.0's key size histograms): differential against
//! Redis 8.0.2 after a long pseudo-random run of writes over every counted
//! type and the commands that move or drop keys wholesale (DEL, EXPIRE in
//! the past, RENAME, COPY, MOVE, SWAPDB, FLUSHDB, DEBUG RELOAD), the text
//! compared byte for byte after every step; and zwindow-only checks that
//! its own removals (sorted-set member TTLs, window trims and their MOVETO
//! hand-offs, set member TTLs, hash fields swept in the background) keep
//! the histograms exact, against the lengths the data itself reports.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;

/// A small deterministic generator (xorshift64*): the same run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[self.below(v.len() as u64) as usize]
    }
}

/// Lengths around powers of two, where bins change.
const LENGTHS: &[usize] = &[
    0, 1, 2, 3, 4, 7, 8, 9, 15, 16, 31, 33, 64, 127, 129, 1023, 1025,
];

fn items(rng: &mut Rng, prefix: &str, max: u64) -> String {
    let n = 1 + rng.below(max);
    (0..n)
        .map(|_| format!("{prefix}{}", rng.below(40)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One random write, as a command line.
fn step(rng: &mut Rng) -> String {
    let keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"];
    let k = rng.pick(&keys);
    let k2 = rng.pick(&keys);
    match rng.below(34) {
        0..=2 => {
            let n = LENGTHS[rng.below(LENGTHS.len() as u64) as usize];
            if n == 0 {
                format!("SET {k} \"\"")
            } else {
                format!("SET {k} {}", "x".repeat(n))
            }
        }
        3 => format!("APPEND {k} {}", "y".repeat(1 + rng.below(20) as usize)),
        4 => format!("SETRANGE {k} {} z", rng.below(70)),
        5 => format!("INCRBY {k} {}", rng.below(100_000)),
        6 => format!("SETBIT {k} {} 1", rng.below(600)),
        7 => format!("PFADD {k} {}", items(rng, "e", 30)),
        8..=9 => format!("RPUSH {k} {}", items(rng, "", 12)),
        10 => format!("LPOP {k} {}", 1 + rng.below(6)),
        11 => format!("LTRIM {k} 0 {}", rng.below(8)),
        12 => format!("LMOVE {k} {k2} LEFT RIGHT"),
        13..=14 => format!("SADD {k} {}", items(rng, "m", 12)),
        15 => format!("SREM {k} {}", items(rng, "m", 8)),
        16 => format!("SINTERSTORE {k} {k} {k2}"),
        17 => format!("SUNIONSTORE {k} {k} {k2}"),
        18..=19 => {
            let n = 1 + rng.below(10);
            let pairs: Vec<String> = (0..n)
                .map(|_| format!("{} m{}", rng.below(50), rng.below(40)))
                .collect();
            format!("ZADD {k} {}", pairs.join(" "))
        }
        20 => format!("ZREMRANGEBYRANK {k} 0 {}", rng.below(5)),
        21 => format!("ZUNIONSTORE {k} 2 {k} {k2}"),
        22..=23 => {
            let n = 1 + rng.below(8);
            let pairs: Vec<String> = (0..n).map(|_| format!("f{} v", rng.below(40))).collect();
            format!("HSET {k} {}", pairs.join(" "))
        }
        24 => format!("HDEL {k} {}", items(rng, "f", 8)),
        25 => format!(
            "HGETEX {k} PXAT 1 FIELDS 2 f{} f{}",
            rng.below(40),
            rng.below(40)
        ),
        26 => format!("DEL {k}"),
        27 => format!("PEXPIREAT {k} 1"),
        28 => format!("EXPIRE {k} 100000"),
        29 => format!("RENAME {k} {k2}"),
        30 => format!("COPY {k} {k2} DB {}", rng.below(3)),
        31 => format!("MOVE {k} {}", rng.below(3)),
        32 => format!("SWAPDB {} {}", rng.below(3), rng.below(3)),
        _ => match rng.below(8) {
            0 => "FLUSHDB".to_string(),
            n => format!("SELECT {}", n % 3),
        },
    }
}

/// `line`, or a write of the same kind Redis 8.0.2 counts right. It
/// counts a key APPEND or SETRANGE creates twice, a SETBIT growing an
/// empty string in two bins, and a sorted set a ZREM… empties in the bin
/// of its old length (with bin 0 wrapping below zero; fixed after 8.0.2:
/// redis/redis#14028, #15597): those writes are made on non-empty strings
/// and sets they do not empty only. zwindow counts them exactly (see
/// `writes_redis_8_0_2_miscounts_are_counted_exactly`).
fn around_redis_bugs(p: &mut Pair, line: String) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    let (cmd, key) = (words[0], words.get(1).copied().unwrap_or_default());
    if ["APPEND", "SETRANGE", "SETBIT"].contains(&cmd)
        && p.check_str(&format!("STRLEN {key}")) == b":0\r\n"
    {
        return format!("SET {key} x");
    }
    if cmd == "ZREMRANGEBYRANK" {
        let card = p.check_str(&format!("ZCARD {key}"));
        if let Some(n) = std::str::from_utf8(&card[1..])
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
        {
            let last: i64 = words[3].parse().unwrap_or(0);
            return match n {
                0 | 1 => format!("ZCARD {key}"),
                n => format!("ZREMRANGEBYRANK {key} 0 {}", last.min(n - 2)),
            };
        }
    }
    line
}

#[test]
fn keysizes_match_redis8_through_random_writes() {
    let (_s, mut p) = start_pair();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    p.check_str("INFO keysizes");
    for i in 0..1500 {
        let line = around_redis_bugs(&mut p, step(&mut rng));
        eprintln!("step {i}: {line}");
        p.check_str(&line);
        let info = p.check_str("INFO keysizes");
        if i % 300 == 299 {
            // Reloading rebuilds the histograms from the file.
            p.check_str("DEBUG RELOAD");
            let after = p.check_str("INFO keysizes");
            assert_eq!(after, info, "DEBUG RELOAD changed the histograms");
        }
    }
    // The run reached every type in more than one database.
    let text = String::from_utf8_lossy(&p.check_str("INFO keysizes")).to_string();
    p.check_str("SELECT 0");
    p.check_str("FLUSHALL");
    let empty = p.check_str("INFO keysizes");
    assert!(
        String::from_utf8_lossy(&empty).ends_with("# Keysizes\r\n\r\n"),
        "{}",
        escape(&empty)
    );
    assert!(text.contains("_distrib_"), "{text}");
}

/// What Redis 8.0.2 miscounts (see above), against the lengths the data
/// reports.
#[test]
fn writes_redis_8_0_2_miscounts_are_counted_exactly() {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    for line in [
        "APPEND a hello",
        "SETRANGE b 10 xyz",
        "SET e \"\"",
        "SETBIT e 100 1",
        "SET f \"\"",
        "BITFIELD f SET u8 64 255",
        "SETRANGE f 100 z",
        "APPEND a \" world!\"",
        "ZADD z 1 a 2 b",
        "ZREMRANGEBYRANK z 0 0",
        "ZREM z b",
        "ZADD z 1 a",
        "ZREMRANGEBYSCORE z -inf +inf",
    ] {
        ok(&mut c, line);
        assert_eq!(keysizes(&mut c), expected(&mut c), "after {line}");
    }
    assert_eq!(
        keysizes(&mut c),
        "# Keysizes\r\ndb0_distrib_strings_sizes:8=3,64=1\r\n"
    );
    for k in ["a", "b", "e", "f"] {
        ok(&mut c, &format!("DEL {k}"));
    }
    assert_eq!(keysizes(&mut c), "# Keysizes\r\n");
}

#[test]
fn keysizes_is_a_default_section_as_in_redis8() {
    let (_s, mut p) = start_pair();
    p.script(&["SET s abcde", "RPUSH l a b", "SELECT 2", "HSET h f v"]);
    for args in ["", "default", "all", "everything", "keysizes"] {
        let (r, z) = p.both_str(&format!("INFO {args}"));
        let pick = |b: &[u8]| {
            let t = String::from_utf8_lossy(b).to_string();
            let from = t
                .find("# Keysizes")
                .unwrap_or_else(|| panic!("INFO {args}: {t}"));
            let rest = &t[from..];
            rest[..rest.find("\r\n\r\n").unwrap_or(rest.len())].to_string()
        };
        assert_eq!(pick(&r), pick(&z), "INFO {args}");
        assert_eq!(
            pick(&z),
            "# Keysizes\r\ndb0_distrib_strings_sizes:4=1\r\ndb0_distrib_lists_items:2=1\r\n\
             db2_distrib_hashes_items:1=1"
        );
    }
    let (r, z) = p.both_str("INFO server");
    assert!(!String::from_utf8_lossy(&r).contains("Keysizes"));
    assert!(!String::from_utf8_lossy(&z).contains("Keysizes"));
}

/// The histogram lines the data itself calls for (as the TCL unit's
/// `eval_db_histogram`): every key's type and length, read back.
fn expected(c: &mut RawConn) -> String {
    let labels = |n: i64| -> String {
        if n == 0 {
            return "0".into();
        }
        let p = 1i64 << (63 - n.leading_zeros());
        match p {
            p if p >= 1 << 20 => format!("{}M", p >> 20),
            p if p >= 1 << 10 => format!("{}K", p >> 10),
            p => p.to_string(),
        }
    };
    let mut by_type: BTreeMap<usize, BTreeMap<i64, u64>> = BTreeMap::new();
    let keys = parse_reply(&c.cmd_str("KEYS *"));
    for k in keys.array() {
        let k = String::from_utf8_lossy(k.bulk()).to_string();
        let ty = String::from_utf8_lossy(&c.cmd_str(&format!("TYPE {k}"))).to_string();
        let (order, len_cmd) = match ty.trim() {
            "+string" => (0, "STRLEN"),
            "+list" => (1, "LLEN"),
            "+set" => (2, "SCARD"),
            "+zset" => (3, "ZCARD"),
            "+hash" => (4, "HLEN"),
            _ => continue,
        };
        let n = parse_reply(&c.cmd_str(&format!("{len_cmd} {k}"))).int();
        let bin = if n == 0 {
            0
        } else {
            1i64 << (63 - n.leading_zeros())
        };
        *by_type.entry(order).or_default().entry(bin).or_default() += 1;
    }
    let names = [
        "distrib_strings_sizes",
        "distrib_lists_items",
        "distrib_sets_items",
        "distrib_zsets_items",
        "distrib_hashes_items",
    ];
    let mut out = String::from("# Keysizes\r\n");
    for (ty, bins) in by_type {
        let parts: Vec<String> = bins
            .iter()
            .map(|(b, n)| format!("{}={n}", labels(*b)))
            .collect();
        out.push_str(&format!("db0_{}:{}\r\n", names[ty], parts.join(",")));
    }
    out
}

/// `INFO keysizes`'s text.
fn keysizes(c: &mut RawConn) -> String {
    let reply = c.cmd_str("INFO keysizes");
    let text = String::from_utf8_lossy(&reply).to_string();
    let from = text.find("# Keysizes").expect("a # Keysizes section");
    text[from..].trim_end_matches("\r\n").to_string() + "\r\n"
}

/// Waits for the background (sweeper) to bring the histogram to `want`.
fn wait_for(c: &mut RawConn, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = keysizes(c);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "want {want:?}, got {got:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ok(c: &mut RawConn, line: &str) {
    let r = c.cmd_str(line);
    assert!(!r.starts_with(b"-"), "{line}: {}", escape(&r));
}

#[test]
fn zwindow_removals_keep_the_histograms_exact() {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    let t0: u64 = 1_000_000_000_000;
    ok(&mut c, &format!("DEBUG CLOCK FREEZE {t0}"));
    // Sorted-set member TTLs: 9 members (bin 8), 2 expire (7: bin 4).
    ok(&mut c, "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f 7 g 8 h 9 i");
    ok(&mut c, "ZPEXPIRE z 1000 MEMBERS 2 a b");
    // A window of 10 s over millisecond scores (6 members: bin 4), aged
    // members handed to the list `done`.
    ok(&mut c, "ZWINDOW SET w:* 10s MS MOVETO done");
    let scores: Vec<String> = (0..6).map(|i| format!("{} m{i}", t0 + i * 1000)).collect();
    ok(&mut c, &format!("ZADD w:1 {}", scores.join(" ")));
    // Set member TTLs: 5 members (bin 4), 4 expire (1: bin 1).
    ok(&mut c, "SADD s a b c d e");
    ok(&mut c, "SPEXPIRE s 1000 MEMBERS 4 a b c d");
    // Hash field TTLs: 3 fields (bin 2), 2 expire (1: bin 1).
    ok(&mut c, "HSET h f1 v f2 v f3 v");
    ok(&mut c, "HPEXPIRE h 1000 FIELDS 2 f1 f2");
    assert_eq!(
        keysizes(&mut c),
        "# Keysizes\r\ndb0_distrib_sets_items:4=1\r\ndb0_distrib_zsets_items:4=1,8=1\r\n\
         db0_distrib_hashes_items:2=1\r\n"
    );
    assert_eq!(keysizes(&mut c), expected(&mut c));
    // 12.5 s later: the TTLs have passed and m0..m2 aged out of w:1. The
    // sweeper removes them with no command touching the keys.
    ok(&mut c, "DEBUG CLOCK ADVANCE 12500");
    wait_for(
        &mut c,
        "# Keysizes\r\ndb0_distrib_lists_items:2=1\r\ndb0_distrib_sets_items:1=1\r\n\
         db0_distrib_zsets_items:2=1,4=1\r\ndb0_distrib_hashes_items:1=1\r\n",
    );
    assert_eq!(keysizes(&mut c), expected(&mut c));
    // A lazy trim on access: two more members age out when w:1 is read.
    ok(&mut c, "DEBUG SET-ACTIVE-EXPIRE 0");
    ok(&mut c, "DEBUG CLOCK ADVANCE 2000");
    ok(&mut c, "ZCARD w:1");
    assert_eq!(
        keysizes(&mut c),
        "# Keysizes\r\ndb0_distrib_lists_items:4=1\r\ndb0_distrib_sets_items:1=1\r\n\
         db0_distrib_zsets_items:1=1,4=1\r\ndb0_distrib_hashes_items:1=1\r\n"
    );
    assert_eq!(keysizes(&mut c), expected(&mut c));
    // The last windowed member and the last set member go: their keys too.
    ok(&mut c, "SPEXPIRE s 1 MEMBERS 1 e");
    ok(&mut c, "DEBUG CLOCK ADVANCE 3000");
    ok(&mut c, "ZCARD w:1");
    ok(&mut c, "SCARD s");
    assert_eq!(
        keysizes(&mut c),
        "# Keysizes\r\ndb0_distrib_lists_items:4=1\r\ndb0_distrib_zsets_items:4=1\r\n\
         db0_distrib_hashes_items:1=1\r\n"
    );
    assert_eq!(keysizes(&mut c), expected(&mut c));
}
