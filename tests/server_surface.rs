//! Differential tests of the server surface a standalone master answers:
//! WAIT and ROLE, byte for byte against redis-server in RESP2 and RESP3
//! (LOLWUT, which prints the version and random art, has its own tests in
//! `tests/lolwut.rs`); and the process's OOM-killer score the
//! `oom-score-adj` settings set, read from /proc as Redis's
//! `unit/oom-score-adj` reads it.

mod common;

use common::Servers;

const CASES: &[&str] = &[
    "WAIT 0 0",
    "WAIT 0 10",
    "WAIT",
    "WAIT 0",
    "WAIT a 0",
    "WAIT 0 a",
    "WAIT 0 -1",
    "ROLE",
    "ROLE x",
];

#[test]
fn wait_role_match_redis() {
    let s = Servers::start();
    for proto in ["2", "3"] {
        s.pair_resp(proto).script(CASES);
    }
}

/// The server's `/proc/<pid>/oom_score_adj`.
fn oom_score(pid: u32) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj"))
        .expect("read oom_score_adj")
        .trim()
        .parse()
        .expect("a number")
}

fn set_oom_score(pid: u32, score: i64) {
    std::fs::write(format!("/proc/{pid}/oom_score_adj"), format!("{score}\n"))
        .expect("write oom_score_adj");
}

/// Each step's score on zwindow and redis-server: both start from the
/// test's own score, so they must agree at every step.
#[test]
fn oom_score_adj_sets_the_process_score_as_redis() {
    let s = Servers::start();
    let (mut z, mut r) = (s.z.conn(), s.r.conn());
    let (zp, rp) = (s.z.pid(), s.r.pid());
    let base = oom_score(rp);
    assert_eq!(oom_score(zp), base);
    // Words of a line; `_` joins the words of one argument.
    let mut both = |line: &str| {
        let words: Vec<String> = line.split(' ').map(|w| w.replace('_', " ")).collect();
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        let (zr, rr) = (z.cmd(&args), r.cmd(&args));
        assert_eq!(
            String::from_utf8_lossy(&zr),
            String::from_utf8_lossy(&rr),
            "{line}"
        );
        let (zs, rs) = (oom_score(zp), oom_score(rp));
        assert_eq!(zs, rs, "score after {line}");
        zs
    };
    both("CONFIG SET oom-score-adj-values 10_20_30");
    assert_eq!(both("CONFIG SET oom-score-adj yes"), base + 10);
    assert_eq!(both("CONFIG SET oom-score-adj-values 15_20_30"), base + 15);
    // A replica takes the second value, a primary the first again.
    assert_eq!(both("REPLICAOF localhost 1"), base + 20);
    assert_eq!(both("REPLICAOF NO ONE"), base + 15);
    both("CONFIG GET oom-score-adj");
    assert_eq!(both("CONFIG SET oom-score-adj relative"), base + 15);
    both("CONFIG GET oom-score-adj");
    assert_eq!(both("CONFIG SET oom-score-adj absolute"), 15);
    assert_eq!(both("CONFIG SET oom-score-adj-values 2000_2000_2000"), 1000);
    // Off: the score from before the first adjustment comes back.
    assert_eq!(both("CONFIG SET oom-score-adj no"), base);
    // Off, the values do not touch the score.
    set_oom_score(zp, base + 2);
    set_oom_score(rp, base + 2);
    assert_eq!(both("CONFIG SET oom-score-adj-values 1_1_1"), base + 2);
    // The base is read again when the setting turns on.
    assert_eq!(
        both("CONFIG SET oom-score-adj-values 9_9_9 oom-score-adj yes"),
        base + 11
    );
    assert_eq!(both("CONFIG SET oom-score-adj no"), base + 2);
    both("CONFIG SET oom-score-adj-values -2001_0_0");
    both("CONFIG SET oom-score-adj-values 1 2 3");
    both("CONFIG SET oom-score-adj-values 1_2");
    both("CONFIG SET oom-score-adj maybe");
    both("CONFIG GET oom-score-adj-values");
}
