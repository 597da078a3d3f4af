//! GEO against redis-server 7.0.15: seeded random streams of every GEO
//! command (clustered and world-wide points, poles and the antimeridian,
//! duplicate positions so distances tie, invalid coordinates, units and
//! options, STORE/STOREDIST destinations, sorted sets holding scores that
//! are no geohash), in RESP2 and RESP3, with both sorted-set encodings.
//! GEO replies are compared byte for byte — Redis formats distances
//! (`%.4f`-like) and coordinates (`%.17Lf`) itself, so the text must be
//! the same; only scores read back through sorted-set commands (STOREDIST)
//! compare numerically, since zwindow prints doubles as Redis 7.2 does.
mod common;

use std::time::Duration;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const KEYS: &[&str] = &["g0", "g1", "g2", "str", "none"];
const UNITS: &[&str] = &["m", "km", "ft", "mi", "M", "KM", "yd"];
/// Cluster centres: the points of a stream gather around these.
const CENTRES: &[(f64, f64)] = &[
    (13.361389, 38.115556),
    (-122.27652, 37.80574),
    (179.99, 0.5),
    (-179.99, -0.5),
    (0.0, 84.9),
    (2.35, 48.85),
];

struct Gen {
    rng: StdRng,
    /// Positions already used, to place members on the same spot.
    used: Vec<(String, String)>,
}

impl Gen {
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn key(&mut self) -> &'static str {
        if self.chance(0.9) {
            KEYS[self.rng.random_range(0..3)]
        } else {
            self.pick(KEYS)
        }
    }

    fn member(&mut self) -> String {
        format!("m{}", self.rng.random_range(0..40))
    }

    fn unit(&mut self) -> &'static str {
        if self.chance(0.03) {
            "yd"
        } else {
            self.pick(&UNITS[..6])
        }
    }

    /// A longitude/latitude pair: near a centre, anywhere, on a limit, the
    /// same as an earlier one, or (rarely) invalid.
    fn lonlat(&mut self) -> (String, String) {
        let r = self.rng.random_range(0..100);
        let pair = if r < 3 {
            let bad = [
                "200",
                "-180.0001",
                "x",
                "nan",
                "inf",
                "85.1",
                "-90",
                "1e400",
            ];
            if self.chance(0.5) {
                (self.pick(&bad).to_string(), "10".to_string())
            } else {
                ("10".to_string(), self.pick(&bad).to_string())
            }
        } else if r < 10 && !self.used.is_empty() {
            self.used[self.rng.random_range(0..self.used.len())].clone()
        } else if r < 15 {
            let lon = self.pick(&["180", "-180", "0", "179.999999", "-0"]);
            let lat = self.pick(&["85.05112878", "-85.05112878", "0", "-85", "85"]);
            (lon.to_string(), lat.to_string())
        } else if r < 35 {
            (
                format!("{:.6}", self.rng.random_range(-180.0..=180.0)),
                format!("{:.6}", self.rng.random_range(-85.0..=85.0)),
            )
        } else {
            let (cx, cy) = CENTRES[self.rng.random_range(0..CENTRES.len())];
            let lon = (cx + self.rng.random_range(-2.0..2.0)).clamp(-180.0, 180.0);
            let lat = (cy + self.rng.random_range(-2.0..2.0)).clamp(-85.0, 85.0);
            (format!("{lon:.6}"), format!("{lat:.6}"))
        };
        if self.used.len() < 64 {
            self.used.push(pair.clone());
        }
        pair
    }

    fn distance(&mut self) -> String {
        match self.rng.random_range(0..20) {
            0 => self.pick(&["0", "-1", "x", "1e400", "inf"]).to_string(),
            1..4 => format!("{}", self.rng.random_range(1..20000)),
            _ => format!("{:.1}", self.rng.random_range(0.5..600.0)),
        }
    }

    /// The options after a search's shape: WITH*, sort, COUNT [ANY].
    fn options(&mut self, with: bool) -> String {
        let mut o = String::new();
        if with {
            for w in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                if self.chance(0.4) {
                    o.push_str(&format!(" {w}"));
                }
            }
        }
        match self.rng.random_range(0..4) {
            0 => o.push_str(" ASC"),
            1 => o.push_str(" DESC"),
            _ => {}
        }
        if self.chance(0.4) {
            let n = self.pick(&["1", "2", "3", "5", "10", "0", "-1", "x"]);
            o.push_str(&format!(" COUNT {n}"));
            if self.chance(0.3) {
                o.push_str(" ANY");
            }
        } else if self.chance(0.03) {
            o.push_str(" ANY");
        }
        if self.chance(0.03) {
            o.push_str(" COUNT");
        }
        o
    }

    fn from(&mut self) -> String {
        if self.chance(0.5) {
            format!("FROMMEMBER {}", self.member())
        } else {
            let (lon, lat) = self.lonlat();
            format!("FROMLONLAT {lon} {lat}")
        }
    }

    fn by(&mut self) -> String {
        if self.chance(0.5) {
            format!("BYRADIUS {} {}", self.distance(), self.unit())
        } else {
            format!(
                "BYBOX {} {} {}",
                self.distance(),
                self.distance(),
                self.unit()
            )
        }
    }

    fn command(&mut self) -> String {
        let key = self.key();
        match self.rng.random_range(0..100) {
            0..30 => {
                let mut line = format!("GEOADD {key}");
                for o in ["NX", "XX", "CH"] {
                    if self.chance(0.1) {
                        line.push_str(&format!(" {o}"));
                    }
                }
                for _ in 0..self.rng.random_range(1..5) {
                    let (lon, lat) = self.lonlat();
                    line.push_str(&format!(" {lon} {lat} {}", self.member()));
                }
                if self.chance(0.02) {
                    line.push_str(" 1 2");
                }
                line
            }
            30..36 => {
                let u = if self.chance(0.7) {
                    format!(" {}", self.unit())
                } else {
                    String::new()
                };
                format!("GEODIST {key} {} {}{u}", self.member(), self.member())
            }
            36..40 => format!("GEOHASH {key} {} {} nosuch", self.member(), self.member()),
            40..44 => format!("GEOPOS {key} {} {} nosuch", self.member(), self.member()),
            44..60 => {
                let (from, by) = (self.from(), self.by());
                let opts = self.options(true);
                if self.chance(0.5) {
                    format!("GEOSEARCH {key} {from} {by}{opts}")
                } else {
                    format!("GEOSEARCH {key} {by}{opts} {from}")
                }
            }
            60..68 => {
                let dst = self.pick(&["d0", "d1", "str"]);
                let (from, by) = (self.from(), self.by());
                let with = self.chance(0.05);
                let opts = self.options(with);
                let sd = if self.chance(0.4) { " STOREDIST" } else { "" };
                format!("GEOSEARCHSTORE {dst} {key} {from} {by}{opts}{sd}")
            }
            68..78 => {
                let (lon, lat) = self.lonlat();
                let ro = if self.chance(0.3) { "_RO" } else { "" };
                let opts = self.options(true);
                format!(
                    "GEORADIUS{ro} {key} {lon} {lat} {} {}{opts}{}",
                    self.distance(),
                    self.unit(),
                    self.store()
                )
            }
            78..86 => {
                let ro = if self.chance(0.3) { "_RO" } else { "" };
                let opts = self.options(true);
                format!(
                    "GEORADIUSBYMEMBER{ro} {key} {} {} {}{opts}{}",
                    self.member(),
                    self.distance(),
                    self.unit(),
                    self.store()
                )
            }
            86..90 => format!("ZREM {key} {}", self.member()),
            90..93 => {
                // A score that is no geohash: GEO must decode it as Redis.
                let s = self.pick(&[
                    "-1",
                    "0",
                    "1e20",
                    "4503599627370496",
                    "4503599627370495",
                    "3.5",
                    "-1e300",
                    "1e300",
                    "inf",
                    "-inf",
                    "9007199254740993",
                ]);
                format!("ZADD {key} {s} {}", self.member())
            }
            93..96 => format!("ZRANGE {key} 0 -1 WITHSCORES"),
            _ => {
                let d = self.pick(&["d0", "d1"]);
                format!("ZRANGE {d} 0 -1 WITHSCORES")
            }
        }
    }

    fn store(&mut self) -> String {
        match self.rng.random_range(0..10) {
            0 => " STORE d0".into(),
            1 => " STOREDIST d1".into(),
            2 if self.chance(0.3) => " STORE d0 STOREDIST d1".into(),
            _ => String::new(),
        }
    }
}

/// Both replies byte for byte, except sorted-set commands, whose scores
/// are compared as numbers. Returns redis-server's reply.
fn compare(p: &mut Pair, line: &str) -> Vec<u8> {
    if line.starts_with("ZRANGE") || line.starts_with("ZADD") {
        return p.check_str(line);
    }
    let (r, z) = p.both_str(line);
    assert!(
        r == z,
        "zwindow differs from redis-server\n  command: {line}\n  redis:   {}\n  zwindow: {}",
        escape(&r),
        escape(&z)
    );
    r
}

fn run(seed: u64, resp3: bool, max_entries: usize, commands: usize) {
    let (_s, mut p) = start_pair();
    if resp3 {
        p.both_str("HELLO 3");
    }
    p.check_str(&format!(
        "CONFIG SET zset-max-listpack-entries {max_entries}"
    ));
    p.check_str("SET str x");
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed),
        used: Vec::new(),
    };
    // Searches that found something: the stream must exercise real results.
    let mut found = 0;
    for _ in 0..commands {
        let line = g.command();
        let r = compare(&mut p, &line);
        if line.starts_with("GEOS") || line.starts_with("GEOR") {
            found += (r.starts_with(b"*") && !r.starts_with(b"*0\r\n")
                || r.starts_with(b":") && !r.starts_with(b":0\r\n")) as usize;
        }
    }
    assert!(found > commands / 20, "only {found} searches found members");
    for k in ["g0", "g1", "g2", "d0", "d1"] {
        p.check_str(&format!("ZRANGE {k} 0 -1 WITHSCORES"));
        p.check_str(&format!("OBJECT ENCODING {k}"));
    }
}

#[test]
fn random_stream_resp2_listpack() {
    run(0x6e0_0001, false, 128, 3000);
}

#[test]
fn random_stream_resp3_listpack() {
    run(0x6e0_0002, true, 128, 3000);
}

#[test]
fn random_stream_resp2_skiplist() {
    run(0x6e0_0003, false, 4, 3000);
}

#[test]
fn random_stream_resp3_skiplist() {
    run(0x6e0_0004, true, 4, 3000);
}

/// Many members on few spots: sorting ties, COUNT's partial sort (Redis's
/// pqsort) and ANY's early stop must leave equal-distance members in
/// Redis's order.
#[test]
fn ties_and_partial_sorts() {
    for resp3 in [false, true] {
        let (_s, mut p) = start_pair();
        if resp3 {
            p.both_str("HELLO 3");
        }
        let mut rng = StdRng::seed_from_u64(99);
        for i in 0..300 {
            let spot = rng.random_range(0..6) as f64;
            compare(
                &mut p,
                &format!(
                    "GEOADD t {} {} p{i}",
                    10.0 + spot * 0.01,
                    20.0 + spot * 0.005
                ),
            );
        }
        for count in [1, 2, 5, 7, 8, 40, 41, 100, 299, 300, 500] {
            for sort in ["ASC", "DESC", ""] {
                for any in ["", " ANY"] {
                    compare(
                        &mut p,
                        &format!(
                            "GEOSEARCH t FROMLONLAT 10.02 20.01 BYRADIUS 50 km {sort} COUNT {count}{any} WITHDIST"
                        ),
                    );
                    compare(
                        &mut p,
                        &format!(
                            "GEORADIUS t 10.02 20.01 50 km {sort} COUNT {count}{any} STORE st"
                        ),
                    );
                    p.check_str("ZRANGE st 0 -1 WITHSCORES");
                }
            }
        }
        compare(&mut p, "GEOSEARCH t FROMMEMBER p0 BYBOX 100 100 km DESC");
        compare(&mut p, "GEOSEARCH t FROMMEMBER p0 BYBOX 100 100 km");
    }
}

#[test]
fn errors_and_edge_cases() {
    let (_s, mut p) = start_pair();
    for line in [
        "GEOADD k 200 100 m",
        "GEOADD k 10 x m",
        "GEOADD k nan 10 m",
        "GEOADD k NX XX 1 1 m",
        "GEOADD k GT 1 1 m",
        "GEOADD k 1 1",
        "GEOADD k NX CH CH",
        "GEOADD k xx 1 1 m",
        "GEOADD k 1 1 m 2 2",
        "GEOADD k 180 85.05112878 n 180 -85.05112878 s -180 0 w",
        "GEOADD k CH 1 1 m 1 1.5 m2",
        "GEOADD k CH XX 2 2 m 3 3 zz",
        "GEOPOS k n s w m zz",
        "GEOHASH k n s w m",
        "GEODIST k n s",
        "GEODIST k n s km extra",
        "GEODIST k n s parsec",
        "GEODIST k n nosuch",
        "GEODIST nosuch a b",
        "GEODIST nosuch a b parsec",
        "SET str v",
        "GEODIST str a b",
        "GEOPOS str a",
        "GEOHASH str a",
        "GEOPOS nosuch a b",
        "GEOHASH nosuch a b",
        "GEOSEARCH str FROMLONLAT 0 0 BYRADIUS 1 km",
        "GEOSEARCH nosuch FROMLONLAT 0 0 BYRADIUS 1 km",
        "GEOSEARCH nosuch FROMMEMBER x BYRADIUS 1 km",
        "GEOSEARCH k FROMMEMBER nosuch BYRADIUS 1 km",
        "GEOSEARCH k FROMLONLAT 0 0 FROMMEMBER m BYRADIUS 1 km",
        "GEOSEARCH k BYRADIUS 1 km",
        "GEOSEARCH k FROMMEMBER m BYBOX 1 1 km BYRADIUS 1 km",
        "GEOSEARCH k FROMMEMBER m",
        "geosearch k frommember m WITHDIST",
        "GEOSEARCH k FROMMEMBER m BYRADIUS -1 km",
        "GEOSEARCH k FROMMEMBER m BYRADIUS x km",
        "GEOSEARCH k FROMMEMBER m BYBOX x 1 km",
        "GEOSEARCH k FROMMEMBER m BYBOX 1 x km",
        "GEOSEARCH k FROMMEMBER m BYBOX 1 -1 km",
        "GEOSEARCH k FROMMEMBER m BYBOX 1 1 parsec",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km ANY",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km COUNT 0",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km COUNT x",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km COUNT",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km STORE d",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1000 km STOREDIST",
        "GEOSEARCH k FROMLONLAT 200 0 BYRADIUS 1000 km",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 1e6 km WITHCOORD WITHHASH WITHDIST",
        "GEOSEARCH k FROMMEMBER m BYBOX 1e5 1e5 km WITHCOORD WITHHASH WITHDIST DESC",
        "GEOSEARCH k FROMLONLAT 0 0 BYRADIUS inf km",
        "GEOSEARCH k FROMLONLAT 0 0 BYRADIUS 0 km",
        "GEOSEARCH k FROMMEMBER m BYRADIUS 0 m WITHDIST",
        "GEOSEARCHSTORE d k FROMMEMBER m BYRADIUS 1000 km WITHDIST",
        "GEOSEARCHSTORE d k FROMMEMBER m BYRADIUS 1000 km STORE x",
        "GEOSEARCHSTORE d k FROMMEMBER m BYRADIUS 1000 km",
        "GEOSEARCHSTORE d nosuch FROMMEMBER m BYRADIUS 1000 km",
        "EXISTS d",
        "GEOSEARCHSTORE d k FROMMEMBER m BYRADIUS 1000 km STOREDIST",
        "GEOSEARCHSTORE d k FROMLONLAT 100 10 BYRADIUS 1 km",
        "EXISTS d",
        "GEORADIUS k 1 1 1000 km STORE",
        "GEORADIUS k 1 1 1000 km STORE d WITHDIST",
        "GEORADIUS k 1 1 1000 km STOREDIST d WITHCOORD",
        "GEORADIUS_RO k 1 1 1000 km STORE d",
        "GEORADIUS k 1 1 1000 km STORE d",
        "GEORADIUS k 1 1 -5 km",
        "GEORADIUS k 1 1 5 parsec",
        "GEORADIUS k 200 1 5 km",
        "GEORADIUS k 1 1 1000 km FROMMEMBER m",
        "GEORADIUS nosuch 1 1 1000 km STORE d",
        "GEORADIUS nosuch 1 1 1000 km",
        "GEORADIUSBYMEMBER k nosuch 10 km",
        "GEORADIUSBYMEMBER nosuch nosuch 10 km",
        "GEORADIUSBYMEMBER nosuch nosuch 10 km STORE d",
        "GEORADIUSBYMEMBER nosuch nosuch x parsec",
        "GEORADIUSBYMEMBER k m 10 parsec",
        "GEORADIUSBYMEMBER k m 1000 km STORE d STOREDIST e",
        "GEORADIUSBYMEMBER_RO k m 1000 km STOREDIST e",
        "GEORADIUSBYMEMBER str m 1000 km",
        "GEOADD str 1 1 m",
        "ZADD k -1 neg 1e300 huge 3.7 frac",
        "GEOPOS k neg huge frac",
        "GEOHASH k neg huge frac",
        "GEODIST k neg huge",
        "GEORADIUSBYMEMBER k neg 100 km",
        "GEOSEARCH k FROMMEMBER huge BYRADIUS 100 km WITHCOORD",
        "GEOSEARCH k FROMLONLAT 0 -85.05 BYBOX 40000 400 km ASC WITHHASH",
        "GEOSEARCH k FROMLONLAT 179.9 0 BYBOX 1000 400 km ASC WITHHASH",
    ] {
        compare(&mut p, line);
    }
}

#[test]
fn multi_scripts_and_events() {
    let (s, mut p) = start_pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut subs = s.pair();
    subs.check_str("PSUBSCRIBE __keyevent@0__:*");
    for line in [
        "MULTI",
        "GEOADD k 1 1 a 2 2 b",
        "GEOPOS k a",
        "GEOSEARCHSTORE d k FROMMEMBER a BYRADIUS 1000 km",
        "EXEC",
        "GEORADIUS k 1 1 500 km STORE d2",
        "GEOSEARCHSTORE d k FROMLONLAT 50 50 BYRADIUS 1 km",
        "GEORADIUS nosuch 1 1 1 km STORE d2",
        "GEOADD k XX 1 1 a",
        "EVAL \"return redis.call('geopos', KEYS[1], 'a')\" 1 k",
        "EVAL \"return redis.call('geosearch', KEYS[1], 'FROMMEMBER', 'a', 'BYRADIUS', 500, 'km', 'WITHDIST', 'WITHCOORD')\" 1 k",
        "EVAL \"return redis.call('georadius', KEYS[1], 1, 1, 500, 'km', 'STORE', KEYS[2])\" 2 k d3",
        "EVAL \"return redis.pcall('geoadd', KEYS[1], 500, 1, 'x')\" 1 k",
        "EVAL \"redis.setresp(3); return redis.call('geopos', KEYS[1], 'a', 'zz')\" 1 k",
        "GEOPOS k a zz",
        "GEOSEARCH k FROMMEMBER a BYRADIUS 500 km WITHDIST WITHCOORD WITHHASH",
    ] {
        if line.starts_with("EVAL \"redis.setresp(3)") {
            p.both_str("HELLO 3");
            // The script returns Lua numbers, which the server formats as
            // any double (7.0's %.17g there, 7.2's shortest text here).
            p.check_str(line);
            continue;
        }
        compare(&mut p, line);
    }
    let read = |c: &mut RawConn| {
        let mut out = Vec::new();
        while let ReadOutcome::Reply(r) = c.try_read_reply(Duration::from_millis(300)) {
            out.push(escape(&r));
        }
        out
    };
    let (r, z) = (read(&mut subs.r), read(&mut subs.z));
    assert!(r.len() >= 6, "{r:?}");
    assert_eq!(r, z);
}
