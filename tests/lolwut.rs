//! LOLWUT against redis-server 8.0.2: the same errors and reply types for
//! bad arguments, byte for byte the same art where it is not random
//! (Schotter's first two rows of squares are never turned), and for the
//! random pieces the same structure: lines, their widths, the fixed texts.
mod common;

use common::*;

/// The reply's text (bulk or verbatim), its `Redis ver. X` made neutral.
fn text(reply: &[u8], version: &str) -> String {
    let bytes = match parse_reply(reply) {
        Reply::Verbatim(b) => b.strip_prefix(b"txt:").unwrap_or(&b).to_vec(),
        r => r.bulk().to_vec(),
    };
    let body = String::from_utf8(bytes).expect("UTF-8");
    body.replace(&format!("Redis ver. {version}"), "Redis ver. V")
}

fn version(c: &mut RawConn) -> String {
    let info = String::from_utf8_lossy(&c.cmd_str("INFO server")).into_owned();
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .expect("redis_version")
        .trim()
        .to_string()
}

struct Both {
    p: Pair,
    rv: String,
    zv: String,
}

impl Both {
    fn new(s: &Servers) -> Both {
        let mut p = s.pair();
        let rv = version(&mut p.r);
        let zv = version(&mut p.z);
        Both { p, rv, zv }
    }

    /// Both texts of `line`, each server's version made neutral.
    fn texts(&mut self, line: &str) -> (String, String) {
        let (r, z) = self.p.both_str(line);
        // The same reply type: bulk in RESP2, verbatim text in RESP3.
        assert_eq!(r.first(), z.first(), "{line}");
        (text(&r, &self.rv), text(&z, &self.zv))
    }
}

#[test]
fn bad_arguments_fail_as_redis() {
    let s = Servers::start_redis8(&[]);
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        for line in [
            "LOLWUT VERSION abc",
            "LOLWUT VERSION 5.5",
            "LOLWUT VERSION 99999999999999999999",
            "LOLWUT VERSION 5 abc",
            "LOLWUT VERSION 5 10 x",
            "LOLWUT VERSION 5 10 5 1.5",
            "LOLWUT VERSION 6 x",
            "LOLWUT VERSION 6 10 y",
        ] {
            p.check_str(line);
        }
    }
}

/// Schotter with at most two rows of squares has no random part: the
/// same bytes as Redis, whatever the bounds do to the arguments.
#[test]
fn schotter_without_randomness_is_redis_s() {
    let s = Servers::start_redis8(&[]);
    let mut b = Both::new(&s);
    for line in [
        "LOLWUT VERSION 5 66 8 2",
        "LOLWUT VERSION 5 66 8 1",
        "LOLWUT VERSION 5 1 1 1",
        "LOLWUT VERSION 5 2 1 1",
        "LOLWUT VERSION 5 3 2 1",
        "LOLWUT VERSION 5 0 -5 -1",
        "LOLWUT VERSION 5 7 3 2",
        "LOLWUT VERSION 5 100 7 2",
        "LOLWUT VERSION 5 5000 500 2",
        "LOLWUT VERSION 5 40 300 2 extra",
        "lolwut version 4.9",
    ] {
        if line.ends_with("4.9") {
            // Not an integer: an error on both.
            b.p.check_str(line);
            continue;
        }
        let (r, z) = b.texts(line);
        assert_eq!(r, z, "{line}");
    }
}

/// Width and height of each line of a text (characters).
fn shape(text: &str) -> Vec<usize> {
    text.split('\n').map(|l| l.chars().count()).collect()
}

/// Random Schotter (more rows), the skyline and the poem: the same shape
/// and fixed parts as Redis's, in RESP2 and RESP3 alike.
#[test]
fn random_pieces_have_redis_structure() {
    let s = Servers::start_redis8(&[]);
    for proto in ["2", "3"] {
        let mut b = Both::new(&s);
        b.p.both_str(&format!("HELLO {proto}"));
        for line in [
            "LOLWUT VERSION 5",
            "LOLWUT VERSION 5 80 10 20",
            "LOLWUT VERSION 5 10 3 7",
            "LOLWUT VERSION 6",
            "LOLWUT VERSION 6 30 7",
            "LOLWUT VERSION 6 1 1",
            "LOLWUT VERSION 6 0 2000",
        ] {
            let (r, z) = b.texts(line);
            if line.starts_with("LOLWUT VERSION 6") {
                // Cells per line (escapes of each gray differ in length).
                let cells = |t: &str| -> Vec<usize> {
                    t.split('\n')
                        .map(|l| l.matches("\x1b[0m").count())
                        .collect()
                };
                assert_eq!(cells(&r), cells(&z), "{line}");
            } else {
                assert_eq!(shape(&r), shape(&z), "{line}");
            }
            // The footer (the last one or two lines, and the end) is fixed.
            let n = if line.starts_with("LOLWUT VERSION 6") {
                3
            } else {
                2
            };
            let tail = |t: &str| {
                t.rsplit('\n')
                    .take(n)
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            assert_eq!(tail(&r), tail(&z), "{line}");
            if line.starts_with("LOLWUT VERSION 6") {
                // Only the four grays' escapes, each cell one blank.
                for t in [&r, &z] {
                    let art = t.split("\nDedicated").next().unwrap_or("");
                    let mut rest = art.replace('\n', "");
                    for gray in ["0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m"] {
                        rest = rest.replace(&format!("\x1b[{gray} \x1b[0m"), "");
                    }
                    assert_eq!(rest, "", "{line}");
                }
            }
        }
        // The poem: up to ten verses of the same sources, then the same note.
        for (line, lang) in [
            ("LOLWUT VERSION 8", "en"),
            ("LOLWUT VERSION 8 it", "it"),
            ("LOLWUT VERSION 8 EN", "en"),
            ("LOLWUT VERSION 7.9", "error"),
        ] {
            if lang == "error" {
                b.p.check_str(line);
                continue;
            }
            // Redis's verses of the language, as printed, from many runs.
            let mut redis_verses = std::collections::BTreeSet::new();
            let mut note = None;
            for _ in 0..60 {
                let (r, _) = b.texts(line);
                let (body, rest) = r.split_once("\n\n").expect("a blank line");
                redis_verses.extend(body.lines().map(str::to_string));
                note = Some(rest.to_string());
            }
            for _ in 0..30 {
                let (_, z) = b.texts(line);
                let (body, rest) = z.split_once("\n\n").expect("a blank line");
                assert_eq!(Some(rest.to_string()), note, "{line}");
                let verses: Vec<&str> = body.lines().collect();
                assert!((1..=10).contains(&verses.len()), "{z}");
                for v in verses {
                    assert!(redis_verses.contains(v), "{line}: {v:?} not Redis's");
                }
            }
        }
    }
}

/// VERSION picks the piece as Redis: other numbers print the version line
/// alone; without VERSION, the piece of the version each server answers as.
#[test]
fn versions_pick_the_same_piece() {
    let s = Servers::start_redis8(&[]);
    let mut b = Both::new(&s);
    for line in [
        "LOLWUT VERSION 1",
        "LOLWUT VERSION 4",
        "LOLWUT VERSION 7",
        "LOLWUT VERSION 9",
        "LOLWUT VERSION 59",
        "LOLWUT VERSION -1",
        "LOLWUT VERSION 0 1 2 3",
        "LOLWUT VERSION",
    ] {
        let (r, z) = b.texts(line);
        if line == "LOLWUT VERSION" {
            // Not the option (one argument): the default piece's argument;
            // the poem is random, the text after it is not.
            if b.rv == b.zv {
                assert_eq!(
                    r.split_once("\n\n").map(|x| x.1),
                    z.split_once("\n\n").map(|x| x.1)
                );
            }
            continue;
        }
        assert_eq!(r, z, "{line}");
    }
    // Plain LOLWUT: Redis 8.0.2's poem; zwindow's piece for its version,
    // the same as VERSION with its major number.
    let (r, z) = b.texts("LOLWUT");
    assert!(r.ends_with("Use: LOLWUT IT for the original Italian output.\n\n"));
    let major = b.zv.split('.').next().unwrap().to_string();
    let (_, same) = b.texts(&format!("LOLWUT VERSION {major}"));
    if b.zv.starts_with("8.") {
        assert_eq!(
            z.split_once("\n\n").map(|x| x.1),
            r.split_once("\n\n").map(|x| x.1)
        );
    } else {
        assert_eq!(z, "Redis ver. V\n");
        assert_eq!(shape(&z), shape(&same));
    }
}
