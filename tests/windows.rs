//! Time windows: the equivalence contract against a real redis-server that
//! is sent the explicit `ZREMRANGEBYSCORE key -inf (<now-D>` before every
//! command, plus the sweeper, notifications, rule precedence and rules that
//! outlive their keys. zwindow's clock is frozen and moved with
//! `DEBUG CLOCK`, so nothing here sleeps to make time pass.

mod common;

use std::time::{Duration, Instant};

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The frozen start of every test's clock (Unix ms).
const T0_MS: u64 = 1_800_000_000_000;

/// A window rule as the test models it.
#[derive(Clone, Copy)]
struct Window {
    duration_ms: u64,
    millis: bool,
}

impl Window {
    /// Scores strictly below this have aged out (zwindow's definition).
    fn cutoff(self, now_ms: u64) -> f64 {
        let live_from = now_ms as f64 - self.duration_ms as f64;
        if self.millis {
            live_from
        } else {
            live_from / 1000.0
        }
    }

    fn now(self, now_ms: u64) -> f64 {
        if self.millis {
            now_ms as f64
        } else {
            now_ms as f64 / 1000.0
        }
    }
}

const SECONDS_RULE: (&str, Window) = (
    "win:*",
    Window {
        duration_ms: 100_000,
        millis: false,
    },
);
const MILLIS_RULE: (&str, Window) = (
    "ms:*",
    Window {
        duration_ms: 5_000,
        millis: true,
    },
);

fn window_of(key: &str) -> Option<Window> {
    if key.starts_with("win:") {
        Some(SECONDS_RULE.1)
    } else if key.starts_with("ms:") {
        Some(MILLIS_RULE.1)
    } else {
        None
    }
}

fn start_windowed() -> (ZwindowServer, RawConn) {
    let z = ZwindowServer::start(&[
        "--enable-debug-command",
        "yes",
        "--zwindow",
        "win:*=100s",
        "--zwindow",
        "ms:*=5000:ms",
    ]);
    let mut c = z.conn();
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    (z, c)
}

/// Drives zwindow (with rules) and redis-server (with explicit trims) in lockstep.
struct Equivalence {
    p: Pair,
    now_ms: u64,
    rng: StdRng,
}

impl Equivalence {
    fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
        self.p.z.cmd_str(&format!("DEBUG CLOCK ADVANCE {ms}"));
    }

    /// Sends `cmd` to both, first trimming `touched` windowed keys on redis.
    fn run(&mut self, cmd: &str, touched: &[&str]) {
        self.trim_redis(touched);
        self.p.check_str(cmd);
    }

    /// As `run`, for replies whose order Redis leaves to its hash table.
    fn run_unordered(&mut self, cmd: &str, touched: &[&str]) {
        self.trim_redis(touched);
        self.p.check_unordered_str(cmd);
    }

    fn trim_redis(&mut self, touched: &[&str]) {
        for key in touched {
            if let Some(w) = window_of(key) {
                let trim = format!("ZREMRANGEBYSCORE {key} -inf ({}", w.cutoff(self.now_ms));
                self.p.r.cmd_str(&trim);
            }
        }
    }

    fn score_for(&mut self, key: &str) -> String {
        match window_of(key) {
            Some(w) => {
                let cutoff = w.cutoff(self.now_ms);
                let now = w.now(self.now_ms);
                let unit = if w.millis { 1.0 } else { 0.001 };
                let choices = [
                    now,
                    cutoff,
                    cutoff - unit,
                    cutoff + unit,
                    now - (now - cutoff) / 2.0,
                    cutoff - 1000.0,
                    now + 5.0,
                ];
                format!("{}", choices[self.rng.random_range(0..choices.len())])
            }
            None => format!("{}", self.rng.random_range(-5..20)),
        }
    }

    fn step(&mut self) {
        const KEYS: [&str; 5] = ["win:a", "win:b", "ms:a", "ms:b", "plain"];
        if self.rng.random_bool(0.2) {
            let ms = [1, 500, 1_000, 4_000, 30_000, 99_000][self.rng.random_range(0..6)];
            self.advance(ms);
        }
        let k = KEYS[self.rng.random_range(0..KEYS.len())];
        let k2 = KEYS[self.rng.random_range(0..KEYS.len())];
        let m = format!("m{}", self.rng.random_range(0..8));
        let s = self.score_for(k);
        match self.rng.random_range(0..30) {
            0 => return self.run_unordered("KEYS *", &KEYS),
            1 => return self.run_unordered(&format!("ZRANDMEMBER {k} 100 WITHSCORES"), &[k]),
            2 => return self.run(&format!("ZSCAN {k} 0 COUNT 100"), &[k]),
            3 => return self.run(&format!("ZDIFF 2 {k} {k2} WITHSCORES"), &[k, k2]),
            _ => {}
        }
        let (cmd, touched): (String, Vec<&str>) = match self.rng.random_range(0..24) {
            0..=5 => {
                let flags =
                    ["", "NX ", "XX ", "GT ", "LT ", "CH ", "GT CH "][self.rng.random_range(0..7)];
                (format!("ZADD {k} {flags}{s} {m}"), vec![k])
            }
            6 => (
                format!("ZINCRBY {k} {} {m}", self.rng.random_range(-3..4)),
                vec![k],
            ),
            7 => (format!("ZREM {k} {m}"), vec![k]),
            8 => (format!("ZCARD {k}"), vec![k]),
            9 => (format!("ZCOUNT {k} -inf +inf"), vec![k]),
            10 => (format!("ZRANGE {k} 0 -1 WITHSCORES"), vec![k]),
            11 => (
                format!("ZRANGEBYSCORE {k} -inf +inf WITHSCORES LIMIT 0 3"),
                vec![k],
            ),
            12 => (format!("ZREVRANK {k} {m}"), vec![k]),
            13 => (format!("ZSCORE {k} {m}"), vec![k]),
            14 => (format!("ZPOPMIN {k}"), vec![k]),
            15 => (format!("EXISTS {k}"), vec![k]),
            16 => (format!("TYPE {k}"), vec![k]),
            17 => (format!("ZUNIONSTORE {k} 2 {k} {k2}"), vec![k, k2]),
            18 => (format!("ZINTER 2 {k} {k2} WITHSCORES"), vec![k, k2]),
            19 => (format!("RENAME {k} {k2}"), vec![k, k2]),
            20 => (format!("COPY {k} {k2} REPLACE"), vec![k, k2]),
            21 => (format!("ZRANK {k} {m}"), vec![k]),
            22 => (format!("ZMSCORE {k} m1 m2 m3"), vec![k]),
            _ => (format!("ZRANGE {k} 0 -1 REV"), vec![k]),
        };
        self.run(&cmd, &touched);
    }
}

fn equivalence_run(seed: u64, resp3: bool) {
    let (z, mut zc) = start_windowed();
    let r = RedisServer::start();
    let mut p = Pair {
        z: z.conn(),
        r: r.conn(),
    };
    if resp3 {
        p.both_str("HELLO 3");
    }
    zc.cmd_str("PING");
    let mut e = Equivalence {
        p,
        now_ms: T0_MS,
        rng: StdRng::seed_from_u64(seed),
    };
    for _ in 0..3_000 {
        e.step();
    }
}

#[test]
fn windowed_keys_behave_as_if_trimmed_before_every_command_resp2() {
    equivalence_run(1, false);
}

#[test]
fn windowed_keys_behave_as_if_trimmed_before_every_command_resp3() {
    equivalence_run(2, true);
}

#[test]
fn a_member_added_outside_the_window_counts_then_is_gone() {
    let (_z, mut c) = start_windowed();
    let old = (T0_MS / 1000) as f64 - 500.0;
    assert_eq!(c.cmd_str(&format!("ZADD win:x {old} a 0 b")), b":2\r\n");
    assert_eq!(c.cmd_str("EXISTS win:x"), b":0\r\n");
    assert_eq!(c.cmd_str("TYPE win:x"), b"+none\r\n");
}

fn info_field(c: &mut RawConn, section: &str, field: &str) -> String {
    let reply = c.cmd_str(&format!("INFO {section}"));
    let text = String::from_utf8_lossy(parse_reply(&reply).bulk()).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("INFO {section} has no {field}: {text}"))
}

#[test]
fn sweeper_reclaims_idle_keys_within_a_second() {
    let (_z, mut c) = start_windowed();
    let live = (T0_MS / 1000) as f64 - 95.0;
    for i in 0..200 {
        c.cmd_str(&format!("ZADD win:idle:{i} {live} a {} b", live + 50.0));
    }
    assert_eq!(c.cmd_str("DBSIZE"), b":200\r\n");
    // 10 s later member `a` of every key has aged out; nobody reads them.
    c.cmd_str("DEBUG CLOCK ADVANCE 10000");
    wait_for(|| info_field(&mut c, "windows", "window_expired_swept") == "200");
    assert_eq!(
        c.cmd_str("DBSIZE"),
        b":200\r\n",
        "keys with live members stay"
    );
    // 60 s more and `b` is gone too: the keys disappear without being touched.
    c.cmd_str("DEBUG CLOCK ADVANCE 60000");
    wait_for(|| c.cmd_str("DBSIZE") == b":0\r\n");
    assert_eq!(info_field(&mut c, "windows", "window_expired_swept"), "400");
    assert_eq!(info_field(&mut c, "windows", "windowed_keys"), "0");
}

/// Polls `f` for at most three seconds (the sweeper promises one; the rest
/// is room for a loaded CI machine).
fn wait_for(mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(3), "not within 3 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn rules_have_precedence_and_outlive_their_keys() {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    for rule in [
        "* 1h",
        "news:* 24h",
        "news:1* 2h",
        "news:123 3h MS",
        "n?ws:* 5m",
    ] {
        assert_eq!(c.cmd_str(&format!("ZWINDOW SET {rule}")), b"+OK\r\n");
    }
    let get = |c: &mut RawConn, k: &str| c.cmd_str(&format!("ZWINDOW GET {k}"));
    assert_eq!(
        get(&mut c, "news:123"),
        b"*3\r\n$8\r\nnews:123\r\n$8\r\n10800000\r\n$2\r\nms\r\n"
    );
    assert_eq!(
        get(&mut c, "news:124"),
        b"*3\r\n$7\r\nnews:1*\r\n$4\r\n7200\r\n$1\r\ns\r\n"
    );
    assert_eq!(
        get(&mut c, "news:9"),
        b"*3\r\n$6\r\nnews:*\r\n$5\r\n86400\r\n$1\r\ns\r\n"
    );
    assert_eq!(
        get(&mut c, "nows:9"),
        b"*3\r\n$6\r\nn?ws:*\r\n$3\r\n300\r\n$1\r\ns\r\n"
    );
    assert_eq!(
        get(&mut c, "other"),
        b"*3\r\n$1\r\n*\r\n$4\r\n3600\r\n$1\r\ns\r\n"
    );
    assert_eq!(c.cmd_str("ZWINDOW DEL *"), b":1\r\n");
    assert_eq!(c.cmd_str("ZWINDOW DEL *"), b":0\r\n");
    assert_eq!(get(&mut c, "other"), b"*-1\r\n");
    assert_eq!(parse_reply(&c.cmd_str("ZWINDOW LIST")).array().len(), 4);
    assert!(
        c.cmd_str("ZWINDOW SET x 0")
            .starts_with(b"-ERR invalid duration")
    );
    assert!(
        c.cmd_str("ZWINDOW SET x 5 HOURS")
            .starts_with(b"-ERR syntax error")
    );

    // A heartbeat set that empties and is re-created is still windowed.
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    c.cmd_str("ZWINDOW SET hb:* 65s MS");
    c.cmd_str(&format!("ZADD hb:1 {T0_MS} u1"));
    c.cmd_str("DEBUG CLOCK ADVANCE 65001");
    assert_eq!(c.cmd_str("ZCARD hb:1"), b":0\r\n");
    let now = T0_MS + 65_001;
    c.cmd_str(&format!("ZADD hb:1 {now} u2"));
    assert_eq!(c.cmd_str("ZCARD hb:1"), b":1\r\n");
    c.cmd_str("DEBUG CLOCK ADVANCE 65000");
    assert_eq!(
        c.cmd_str("ZCARD hb:1"),
        b":1\r\n",
        "exactly D old is still live"
    );
    c.cmd_str("DEBUG CLOCK ADVANCE 1");
    assert_eq!(c.cmd_str("ZCARD hb:1"), b":0\r\n");
}

#[test]
fn renamed_keys_follow_the_rule_of_their_new_name() {
    let (_z, mut c) = start_windowed();
    let old = (T0_MS / 1000) as f64 - 150.0;
    c.cmd_str(&format!("ZADD plain {old} a"));
    assert_eq!(c.cmd_str("ZCARD plain"), b":1\r\n");
    c.cmd_str("RENAME plain win:renamed");
    assert_eq!(c.cmd_str("ZCARD win:renamed"), b":0\r\n");
    c.cmd_str(&format!("ZADD win:src {} a", old + 100.0));
    c.cmd_str("RENAME win:src plain2");
    c.cmd_str("DEBUG CLOCK ADVANCE 3600000");
    assert_eq!(
        c.cmd_str("ZCARD plain2"),
        b":1\r\n",
        "no rule matches the new name"
    );
}

#[test]
fn config_file_and_command_line_rules() {
    let dir = std::env::temp_dir().join(format!("zwindow-conf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zwindow.conf");
    std::fs::write(&path, "# rules for the compose service\nzwindow news.published:* 24h\nzwindow heartbeats:* 65s ms\nhz 20\n").unwrap();
    let z = ZwindowServer::start(&["--config", path.to_str().unwrap(), "--zwindow", "cli:*=30m"]);
    let mut c = z.conn();
    assert_eq!(parse_reply(&c.cmd_str("ZWINDOW LIST")).array().len(), 3);
    assert_eq!(
        c.cmd_str("ZWINDOW GET heartbeats:7"),
        b"*3\r\n$12\r\nheartbeats:*\r\n$5\r\n65000\r\n$2\r\nms\r\n"
    );
    assert_eq!(
        c.cmd_str("CONFIG GET hz"),
        b"*2\r\n$2\r\nhz\r\n$2\r\n20\r\n"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn start_moveto() -> (ZwindowServer, RawConn) {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    assert_eq!(
        c.cmd_str("ZWINDOW SET fold:* 5s MOVETO {key}:due"),
        b"+OK\r\n"
    );
    assert_eq!(
        c.cmd_str("ZWINDOW GET fold:a"),
        b"*5\r\n$6\r\nfold:*\r\n$1\r\n5\r\n$1\r\ns\r\n$6\r\nmoveto\r\n$9\r\n{key}:due\r\n"
    );
    (z, c)
}

#[test]
fn moveto_hands_off_in_score_order_and_updates_move_deadlines() {
    let (_z, mut c) = start_moveto();
    let t = (T0_MS / 1000) as f64;
    c.cmd_str(&format!("ZADD fold:a {} m2 {t} m1 {} m3", t + 1.0, t + 2.0));
    c.cmd_str("DEBUG CLOCK ADVANCE 6500");
    // m1 and m2 aged out; nobody touches fold:a, the sweeper hands them off.
    wait_for(|| c.cmd_str("LLEN fold:a:due") == b":2\r\n");
    assert_eq!(
        c.cmd_str("LRANGE fold:a:due 0 -1"),
        b"*2\r\n$2\r\nm1\r\n$2\r\nm2\r\n"
    );
    // m3 is updated before its deadline: it stays.
    c.cmd_str(&format!("ZADD fold:a {} m3", t + 60.0));
    c.cmd_str("DEBUG CLOCK ADVANCE 2000");
    assert_eq!(c.cmd_str("ZRANGE fold:a 0 -1"), b"*1\r\n$2\r\nm3\r\n");
    assert_eq!(c.cmd_str("LLEN fold:a:due"), b":2\r\n");
    // A lazy trim hands off too, in the same step as the removal.
    c.cmd_str("DEBUG CLOCK ADVANCE 60000");
    assert_eq!(c.cmd_str("ZCARD fold:a"), b":0\r\n");
    assert_eq!(
        c.cmd_str("LRANGE fold:a:due 0 -1"),
        b"*3\r\n$2\r\nm1\r\n$2\r\nm2\r\n$2\r\nm3\r\n"
    );
    assert_eq!(info_field(&mut c, "windows", "window_handed_off"), "3");
}

#[test]
fn moveto_is_on_time_and_exactly_once_under_concurrent_consumers() {
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    c.cmd_str("ZWINDOW SET burst:* 1000 MS MOVETO due");
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let mut conn = z.conn();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                loop {
                    let reply = parse_reply(&conn.cmd_str("BLPOP due 2"));
                    match reply {
                        Reply::Array(items) if items.len() == 2 => {
                            got.push(items[1].bulk().to_vec())
                        }
                        _ => return got,
                    }
                }
            })
        })
        .collect();
    let mut n = 0;
    for key in 0..20 {
        let mut cmd = format!("ZADD burst:{key}");
        for m in 0..25 {
            cmd.push_str(&format!(" {} k{key}m{m}", T0_MS + m));
            n += 1;
        }
        c.cmd_str(&cmd);
    }
    let started = Instant::now();
    c.cmd_str("DEBUG CLOCK ADVANCE 1100");
    wait_for(|| c.cmd_str("DBSIZE") == b":0\r\n");
    // The promise is 100 ms; the bound leaves room for a loaded CI machine
    // (tests run in parallel on two cores).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "hand-off took {:?}",
        started.elapsed()
    );
    let mut all: Vec<Vec<u8>> = consumers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(all.len(), n, "every member handed off exactly once");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), n, "no member seen twice");
}

#[test]
fn aging_out_is_announced_with_zexpired_then_del() {
    let (z, mut c) = start_windowed();
    c.cmd_str("CONFIG SET notify-keyspace-events KEA");
    let mut sub = z.conn();
    sub.cmd_str("PSUBSCRIBE __key*__:*");
    let live = (T0_MS / 1000) as f64 - 50.0;
    c.cmd_str(&format!("ZADD win:n {live} a {} b", live + 40.0));
    c.cmd_str("DEBUG CLOCK ADVANCE 60000");
    assert_eq!(
        c.cmd_str("ZCARD win:n"),
        b":1\r\n",
        "the lazy trim removes `a`"
    );
    c.cmd_str("DEBUG CLOCK ADVANCE 60000");
    // Nobody reads win:n now: the sweeper removes `b` and the key.
    let mut events = Vec::new();
    while events.len() < 8 {
        let msg = parse_reply(&sub.read_reply());
        let items = msg.array();
        events.push(format!(
            "{} {}",
            String::from_utf8_lossy(items[2].bulk()),
            String::from_utf8_lossy(items[3].bulk())
        ));
    }
    assert_eq!(
        events,
        [
            "__keyspace@0__:win:n zadd",
            "__keyevent@0__:zadd win:n",
            "__keyspace@0__:win:n zexpired",
            "__keyevent@0__:zexpired win:n",
            "__keyspace@0__:win:n zexpired",
            "__keyevent@0__:zexpired win:n",
            "__keyspace@0__:win:n del",
            "__keyevent@0__:del win:n",
        ]
    );
}

/// A hundred MOVETO rule changes race lazy trims (ZCARD, ZADD), the sweeper
/// and the clock: no deadlock (every thread finishes; the read timeouts of
/// the connections would fail a hung one), and every member that ages out
/// lands in exactly one destination list exactly once.
#[test]
fn moveto_rule_changes_racing_trims_hand_off_every_member_once() {
    const KEYS: usize = 16;
    const DESTS: usize = 5;
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.cmd_str(&format!("DEBUG CLOCK FREEZE {T0_MS}"));
    c.cmd_str("ZWINDOW SET race:* 50 MS MOVETO dest:0");
    let mut members = 0;
    for key in 0..KEYS {
        let mut cmd = format!("ZADD race:{key}");
        for m in 0..40 {
            cmd.push_str(&format!(" {} k{key}m{m}", T0_MS + 10 * m));
            members += 1;
        }
        assert!(c.cmd_str(&cmd).starts_with(b":"));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::new();
    // The rule changer: a hundred destination changes.
    {
        let mut conn = z.conn();
        threads.push(std::thread::spawn(move || {
            for n in 1..=100 {
                let reply = conn.cmd_str(&format!(
                    "ZWINDOW SET race:* 50 MS MOVETO dest:{}",
                    n % DESTS
                ));
                assert_eq!(reply, b"+OK\r\n");
                // Members age out between rule changes whatever the other
                // threads' scheduling: hand-offs go to several lists.
                conn.cmd_str("DEBUG CLOCK ADVANCE 2");
                conn.cmd_str(&format!("ZCARD race:{}", n % KEYS));
            }
            0
        }));
    }
    // The clock: members age out a few at a time while the rules change.
    {
        let mut conn = z.conn();
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            for _ in 0..200 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                conn.cmd_str("DEBUG CLOCK ADVANCE 2");
            }
            0
        }));
    }
    // Readers trim lazily; writers add members that age out too.
    for t in 0..3 {
        let mut conn = z.conn();
        let stop = stop.clone();
        threads.push(std::thread::spawn(move || {
            let mut added = 0;
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 400 {
                let key = (i * 7 + t) % KEYS;
                if t == 0 && i % 4 == 0 {
                    conn.cmd_str(&format!("ZADD race:{key} {} w{t}i{i}", T0_MS + i as u64));
                    added += 1;
                } else {
                    assert!(conn.cmd_str(&format!("ZCARD race:{key}")).starts_with(b":"));
                }
                i += 1;
            }
            added
        }));
    }
    let first = threads.remove(0);
    assert_eq!(first.join().unwrap(), 0, "the rule changer finished");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        members += t.join().unwrap();
    }
    // Age everything out and let the sweeper and lookups finish.
    c.cmd_str("DEBUG CLOCK ADVANCE 100000");
    for key in 0..KEYS {
        c.cmd_str(&format!("ZCARD race:{key}"));
    }
    let mut all: Vec<Vec<u8>> = Vec::new();
    let mut used = 0;
    for d in 0..DESTS {
        let Reply::Array(items) = parse_reply(&c.cmd_str(&format!("LRANGE dest:{d} 0 -1"))) else {
            panic!("dest:{d} is not a list");
        };
        used += usize::from(!items.is_empty());
        all.extend(items.iter().map(|i| i.bulk().to_vec()));
    }
    assert!(used >= 2, "hand-offs interleaved with rule changes");
    assert_eq!(all.len(), members, "every member handed off exactly once");
    all.sort();
    all.dedup();
    assert_eq!(all.len(), members, "no member handed off twice");
}
