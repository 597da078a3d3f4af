//! Differential tests (zwindow vs redis-server 7.0) of connection, server and keyspace
//! commands: PING/ECHO/SELECT/DBSIZE/FLUSH*, SET/GET options, DEL/EXISTS/TYPE/KEYS,
//! RENAME/COPY/MOVE, expiry commands, OBJECT, errors, AUTH, HELLO, CONFIG GET, TIME, SCAN.
mod common;

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use common::*;

/// A far-future unix time (2100-01-01) so absolute expiries compare exactly.
const FAR_SECS: &str = "4102444800";
const FAR_MS: &str = "4102444800123";

#[test]
fn ping_and_echo() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "PING",
        "ping",
        "PING hello",
        "PING \"hello world\"",
        "PING a b",
        "ECHO x",
        "ECHO \"\"",
        "ECHO \"\\x00\\xff\\r\\n\"",
        "ECHO",
        "ECHO a b",
    ]);
}

#[test]
fn select_valid_invalid_out_of_range() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SELECT 0",
        "SELECT 15",
        "SELECT 16",
        "SELECT -1",
        "SELECT abc",
        "SELECT 1.5",
        "SELECT",
        "SELECT 1 2",
        "SELECT 99999999999999999999",
        // Databases are isolated.
        "SELECT 1",
        "SET k one",
        "SELECT 0",
        "GET k",
        "SET k zero",
        "SELECT 1",
        "GET k",
    ]);
}

#[test]
fn dbsize_flushdb_flushall() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "DBSIZE",
        "SET a 1",
        "SET b 2",
        "DBSIZE",
        "SELECT 1",
        "SET c 3",
        "DBSIZE",
        "FLUSHDB",
        "DBSIZE",
        "SELECT 0",
        "DBSIZE",
        "SELECT 1",
        "SET c 3",
        "FLUSHALL",
        "DBSIZE",
        "SELECT 0",
        "DBSIZE",
        "SET a 1",
        "FLUSHDB ASYNC",
        "DBSIZE",
        "SET a 1",
        "FLUSHDB SYNC",
        "FLUSHALL ASYNC",
        "FLUSHALL SYNC",
        "FLUSHDB foo",
        "FLUSHALL foo",
        "FLUSHDB SYNC ASYNC",
        "DBSIZE x",
    ]);
}

#[test]
fn set_get_basic_and_nx_xx_get() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "GET missing",
        "SET k v",
        "GET k",
        "SET k \"\"",
        "GET k",
        "SET k \"a b\\r\\n\\x00\"",
        "GET k",
        "SET k v NX",
        "SET n v XX",
        "GET n",
        "SET n v NX",
        "SET n w XX",
        "GET n",
        "SET n x GET",
        "SET fresh y GET",
        "SET n z NX GET",
        "SET n z XX GET",
        "set n lower",
        "GET n",
        "SET k",
        "GET",
        "GET a b",
    ]);
}

#[test]
fn set_expiry_options() {
    let (_s, mut p) = start_pair();
    p.check_str("SET k v EX 100");
    p.check_int_near("TTL k", 1);
    p.check_str("SET k v PX 100000");
    p.check_int_near("PTTL k", 2000);
    p.check_str(&format!("SET k v EXAT {FAR_SECS}"));
    p.check_str("EXPIRETIME k");
    p.check_str(&format!("SET k v PXAT {FAR_MS}"));
    p.check_str("PEXPIRETIME k");
    p.check_str("SET k w KEEPTTL");
    p.check_str("PEXPIRETIME k");
    p.check_str("SET k w");
    p.check_str("TTL k");
    p.check_str("SET k v ex 100");
    p.check_int_near("TTL k", 1);
}

#[test]
fn set_syntax_errors() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SET k v EX",
        "SET k v EX abc",
        "SET k v EX 0",
        "SET k v EX -1",
        "SET k v PX 0",
        "SET k v PX -5",
        "SET k v EX 1.5",
        "SET k v EX 9999999999999999",
        "SET k v PX 9223372036854775807",
        "SET k v EXAT 0",
        "SET k v PXAT 0",
        "SET k v NX XX",
        "SET k v EX 10 PX 10",
        "SET k v EX 10 EX 10",
        "SET k v KEEPTTL EX 10",
        "SET k v EX 10 KEEPTTL",
        "SET k v PXAT 10 EXAT 10",
        "SET k v FOO",
        "SET k v GET GET",
        "SET k v NX NX",
        "GET k",
    ]);
}

#[test]
fn get_and_set_get_on_wrong_type() {
    // Needs ZADD to create a non-string key.
    let (_s, mut p) = start_pair();
    p.script(&[
        "ZADD z 1 a",
        "GET z",
        "SET z v GET",
        "TYPE z",
        "SET z v",
        "TYPE z",
    ]);
}

#[test]
fn del_unlink_exists() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SET a 1",
        "SET b 2",
        "SET c 3",
        "EXISTS a",
        "EXISTS a a a",
        "EXISTS a b missing a",
        "EXISTS missing",
        "DEL a missing a",
        "EXISTS a",
        "UNLINK b c b",
        "DBSIZE",
        "DEL",
        "UNLINK",
        "EXISTS",
        "DEL missing",
    ]);
}

#[test]
fn type_of_strings() {
    let (_s, mut p) = start_pair();
    p.script(&["TYPE missing", "SET s v", "TYPE s", "TYPE", "TYPE a b"]);
}

#[test]
fn type_of_sorted_sets() {
    let (_s, mut p) = start_pair();
    p.script(&["ZADD z 1 a", "TYPE z"]);
}

#[test]
fn type_of_other_types() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "RPUSH l a",
        "TYPE l",
        "SADD st a",
        "TYPE st",
        "HSET h f v",
        "TYPE h",
    ]);
}

#[test]
fn keys_glob_patterns() {
    let (_s, mut p) = start_pair();
    for k in [
        "hello",
        "hallo",
        "hxllo",
        "hllo",
        "heeeello",
        "h*llo",
        "h?llo",
        "h[a]llo",
        "a",
        "b",
        "c",
        "ab",
        "abc",
        "\"a b\"",
        "\"x\\\\y\"",
        "-",
        "^",
        "\"\"",
    ] {
        p.check_str(&format!("SET {k} 1"));
    }
    for pat in [
        "*",
        "h?llo",
        "h*llo",
        "h[ae]llo",
        "h[^e]llo",
        "h[!e]llo",
        "h[a-b]llo",
        "h[b-a]llo",
        "\"h\\\\*llo\"",
        "\"h\\\\?llo\"",
        "\"h\\\\[a\\\\]llo\"",
        "[a-c]",
        "[^a]",
        "[abc]*",
        "?",
        "??",
        "*b*",
        "\"a b\"",
        "\"x\\\\\\\\y\"",
        "[-]",
        "[\\\\^]",
        "h[",
        "h[a",
        "*l*l*o",
        "nomatch*",
        "\"\"",
        "\"[\"",
        "\"\\\\\"",
    ] {
        p.check_unordered_str(&format!("KEYS {pat}"));
    }
    p.check_str("KEYS");
    p.check_str("KEYS a b");
}

#[test]
fn rename_and_renamenx() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "RENAME missing x",
        "RENAMENX missing x",
        "SET a 1",
        "RENAME a a",
        "RENAMENX a a",
        "RENAME missing missing",
        "RENAME a b",
        "EXISTS a",
        "GET b",
        "SET c 3",
        "RENAMENX b c",
        "RENAMENX b d",
        "GET d",
        "RENAME d c",
        "GET c",
        "DBSIZE",
        "RENAME a",
        "RENAMENX a",
    ]);
    // The TTL moves with the key.
    p.check_str(&format!("SET t v EXAT {FAR_SECS}"));
    p.check_str("RENAME t u");
    p.check_str("EXPIRETIME u");
    // Renaming over a key with a TTL drops the destination's TTL.
    p.check_str(&format!("SET v v EXAT {FAR_SECS}"));
    p.check_str("SET w w");
    p.check_str("RENAME w v");
    p.check_str("TTL v");
}

#[test]
fn copy_with_db_and_replace() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "COPY missing x",
        "SET a 1",
        "COPY a b",
        "GET b",
        "SET a 2",
        "COPY a b",
        "GET b",
        "COPY a b REPLACE",
        "GET b",
        "COPY a a",
        "COPY a a DB 0",
        "COPY a b DB 1",
        "SELECT 1",
        "GET b",
        "SELECT 0",
        "COPY a b DB 1",
        "COPY a b DB 1 REPLACE",
        "COPY a a DB 1 REPLACE",
        "COPY a b DB 16",
        "COPY a b DB -1",
        "COPY a b DB abc",
        "COPY a b DB",
        "COPY a b FOO",
        "COPY a b REPLACE REPLACE",
        "COPY a",
    ]);
    p.check_str(&format!("SET t v EXAT {FAR_SECS}"));
    p.check_str("COPY t t2");
    p.check_str("EXPIRETIME t2");
}

#[test]
fn move_between_databases() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "MOVE missing 1",
        "SET a 1",
        "MOVE a 0",
        "MOVE a 1",
        "EXISTS a",
        "SELECT 1",
        "GET a",
        "SET b x",
        "SELECT 0",
        "SET b y",
        "MOVE b 1",
        "GET b",
        "MOVE b 16",
        "MOVE b -1",
        "MOVE b abc",
        "MOVE b",
    ]);
}

#[test]
fn touch_counts_existing_keys() {
    let (_s, mut p) = start_pair();
    p.script(&["TOUCH a", "SET a 1", "SET b 1", "TOUCH a b c a", "TOUCH"]);
}

#[test]
fn expire_family_with_flags() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "EXPIRE missing 100",
        "PEXPIRE missing 100",
        "EXPIREAT missing 100",
        "PEXPIREAT missing 100",
        "SET k v",
        "TTL k",
        "PTTL k",
        "EXPIRETIME k",
        "PEXPIRETIME k",
        "EXPIRETIME missing",
        "PEXPIRETIME missing",
        "TTL missing",
        "PTTL missing",
        "EXPIRE k 100 XX",
        "EXPIRE k 100 GT",
        // No TTL counts as infinite: LT sets one.
        "EXPIRE k 100 LT",
    ]);
    p.check_int_near("TTL k", 1);
    p.check_str("PERSIST k");
    p.check_str(&format!("EXPIREAT k {FAR_SECS} NX"));
    p.check_str("EXPIRETIME k");
    p.check_str("EXPIREAT k 4102444900 NX");
    p.check_str("EXPIREAT k 4102444900 XX");
    p.check_str("EXPIRETIME k");
    p.check_str("EXPIREAT k 4102444800 GT");
    p.check_str("EXPIREAT k 4102445000 GT");
    p.check_str("EXPIREAT k 4102445100 LT");
    p.check_str("EXPIREAT k 4102444000 LT");
    p.check_str("EXPIRETIME k");
    p.check_str("PEXPIRETIME k");
    p.check_str(&format!("PEXPIREAT k {FAR_MS}"));
    p.check_str("PEXPIRETIME k");
    p.check_str("EXPIRETIME k");
    p.check_str("EXPIRE k 1000");
    p.check_int_near("TTL k", 1);
    // Later "now" plus a longer relative time: strictly greater whatever the clock.
    p.check_str("PEXPIRE k 1000500 GT");
    p.check_int_near("PTTL k", 2000);
    p.script(&[
        "EXPIRE k 100 NX XX",
        "EXPIRE k 100 GT LT",
        "EXPIRE k 100 NX GT",
        "EXPIRE k 100 NX LT",
        "EXPIRE k 100 FOO",
        "EXPIRE k 100 nx",
        "EXPIRE k abc",
        "EXPIRE k 1.5",
        "EXPIRE k",
        "EXPIRE k 9223372036854775807",
        "EXPIRE k 9223372036854775",
        "PEXPIRE k 9223372036854775807",
        "EXPIREAT k 9223372036854775807",
        "PEXPIREAT k 9223372036854775807",
        "EXPIRE k -9223372036854775808",
        "TTL",
        "PERSIST",
        "PERSIST missing",
        "PERSIST k",
        "PERSIST k",
        "TTL k",
        // A persistent key with GT never gets a TTL; LT always does.
        "EXPIRE k 100 GT",
        "TTL k",
    ]);
    p.check_str("EXPIRE k 100 LT");
    p.check_int_near("TTL k", 1);
    // Non-positive and past times delete the key.
    p.script(&[
        "SET d v",
        "EXPIRE d 0",
        "EXISTS d",
        "SET d v",
        "EXPIRE d -10",
        "EXISTS d",
        "SET d v",
        "PEXPIRE d -1",
        "EXISTS d",
        "SET d v",
        "EXPIREAT d 1",
        "EXISTS d",
        "SET d v",
        "PEXPIREAT d 1000",
        "GET d",
        "SET d v",
        "EXPIRE d 0 NX",
        "EXISTS d",
        "EXPIRE d 0 XX",
        "EXISTS d",
    ]);
}

#[test]
fn object_encoding_refcount_freq() {
    let (_s, mut p) = start_pair();
    let forty_four = "x".repeat(44);
    let forty_five = "x".repeat(45);
    p.script(&[
        "SET k 12345",
        "OBJECT ENCODING k",
        "SET k -1",
        "OBJECT ENCODING k",
        "SET k 9223372036854775807",
        "OBJECT ENCODING k",
        "SET k 9223372036854775808",
        "OBJECT ENCODING k",
        "SET k 012",
        "OBJECT ENCODING k",
        "SET k \" 1\"",
        "OBJECT ENCODING k",
        "SET k hello",
        "OBJECT ENCODING k",
        "SET k 1.5",
        "OBJECT ENCODING k",
        &format!("SET k {forty_four}"),
        "OBJECT ENCODING k",
        &format!("SET k {forty_five}"),
        "OBJECT ENCODING k",
        "OBJECT ENCODING missing",
        "OBJECT ENCODING",
        "OBJECT",
        "OBJECT FOO k",
        "OBJECT REFCOUNT missing",
        "SET k hello",
        "OBJECT REFCOUNT k",
        "OBJECT FREQ k",
        "OBJECT FREQ missing",
        "OBJECT ENCODING k extra",
    ]);
}

#[test]
fn object_encoding_after_append_is_raw() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SET k hello",
        "APPEND k x",
        "OBJECT ENCODING k",
        "SET n 12",
        "APPEND n 3",
        "OBJECT ENCODING n",
    ]);
}

#[test]
fn wrong_arity_errors() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "GET",
        "GET a b",
        "SET a",
        "DEL",
        "EXISTS",
        "EXPIRE a",
        "TTL",
        "PTTL a b",
        "RENAME a",
        "DBSIZE 1",
        "SELECT",
        "KEYS",
        "SCAN",
        "TYPE",
        "PERSIST",
        "RANDOMKEY x",
        "SWAPDB 0",
        "FLUSHDB a b",
        "TIME x",
        "ECHO",
        "MOVE a",
        "get",
        "Get a b",
    ]);
}

#[test]
fn unknown_command_errors() {
    let long = "y".repeat(300);
    let (_s, mut p) = start_pair();
    p.script(&[
        "FOO",
        "FOO a b",
        "foo a b",
        "FOO \"a b\" c",
        "FOO \"\\xff\"",
        "\"\" a",
        "FOOBAR a b c d e f g h i j k l m n o p q r s t u v w x y z",
        &format!("FOO {long}"),
        &format!("FOO a {long} b"),
        &format!("{long} a"),
        "CONFIG FOO",
        "OBJECT foo",
    ]);
}

#[test]
fn auth_without_password_configured() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "AUTH x",
        "AUTH default x",
        "AUTH nobody x",
        "AUTH",
        "AUTH a b c",
        "PING",
    ]);
}

#[test]
fn auth_with_requirepass() {
    let s = Servers::start_with(&["--requirepass", "pw"]);
    let mut p = s.pair();
    p.script(&[
        "PING",
        "GET k",
        "AUTH wrong",
        "AUTH default wrong",
        "AUTH pw",
        "PING",
        "AUTH default pw",
        "AUTH wrong",
        "PING",
    ]);
}

#[test]
fn hello_2_and_3_reply_shapes() {
    let (_s, mut p) = start_pair();
    for (args, proto) in [
        (&[&b"HELLO"[..]][..], 2),
        (&[b"HELLO", b"2"], 2),
        (&[b"HELLO", b"3"], 3),
    ] {
        let (r, z) = p.both(args);
        let cmd = show_args(args);
        assert_eq!(
            char::from(z[0]),
            char::from(r[0]),
            "{cmd}: reply type differs; redis {} zwindow {}",
            escape(&r),
            escape(&z)
        );
        let (rv, zv) = (parse_reply(&r), parse_reply(&z));
        if proto == 3 {
            assert!(
                matches!(zv, Reply::Map(_)),
                "{cmd}: not a map: {}",
                escape(&z)
            );
        }
        for field in [
            "server", "version", "proto", "id", "mode", "role", "modules",
        ] {
            assert!(
                zv.field(field).is_some(),
                "{cmd}: zwindow lacks field {field}: {}",
                escape(&z)
            );
        }
        assert_eq!(zv.field("proto"), rv.field("proto"), "{cmd}: proto");
        assert_eq!(zv.field("proto"), Some(&Reply::Int(proto)), "{cmd}: proto");
        assert_eq!(zv.field("mode"), rv.field("mode"), "{cmd}: mode");
        assert_eq!(zv.field("role"), rv.field("role"), "{cmd}: role");
        assert_eq!(zv.field("modules"), rv.field("modules"), "{cmd}: modules");
    }
    // Now in RESP3: null, doubles and maps use RESP3 types.
    p.script(&[
        "GET missing",
        "SET k v",
        "GET k",
        "KEYS k",
        "EXISTS k",
        "CONFIG GET nonexistent-name",
        "HELLO 4",
        "HELLO 1",
        "HELLO abc",
        "HELLO 3 FOO",
        "HELLO 3 AUTH default",
        "PING",
    ]);
    // And back to RESP2.
    let (r, z) = p.both(&[b"HELLO", b"2"]);
    assert_eq!(z[0], r[0], "HELLO 2 type: {} vs {}", escape(&r), escape(&z));
    p.script(&["GET missing", "CONFIG GET nonexistent-name"]);
}

#[test]
fn config_get_unknown_names() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "CONFIG GET nonexistent-name",
        "CONFIG GET nonexistent*",
        "CONFIG GET",
        "CONFIG",
    ]);
}

#[test]
fn time_reply_shape() {
    let (_s, mut p) = start_pair();
    let (r, z) = p.both(&[b"TIME"]);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    for (name, raw) in [("redis", &r), ("zwindow", &z)] {
        let v = parse_reply(raw);
        let a = v.array();
        assert_eq!(a.len(), 2, "{name} TIME: {}", escape(raw));
        let secs: i64 = std::str::from_utf8(a[0].bulk()).unwrap().parse().unwrap();
        let micros: i64 = std::str::from_utf8(a[1].bulk()).unwrap().parse().unwrap();
        assert!(
            (secs - now).abs() <= 2,
            "{name} TIME seconds {secs} vs {now}"
        );
        assert!(
            (0..1_000_000).contains(&micros),
            "{name} TIME micros {micros}"
        );
    }
}

/// Iterate SCAN to completion with the given extra arguments; return the union of keys.
fn scan_all(c: &mut RawConn, extra: &[&str]) -> BTreeSet<Vec<u8>> {
    let mut cursor = b"0".to_vec();
    let mut keys = BTreeSet::new();
    for _ in 0..100_000 {
        let mut args: Vec<&[u8]> = vec![b"SCAN", &cursor];
        args.extend(extra.iter().map(|a| a.as_bytes()));
        let raw = c.cmd(&args);
        let v = parse_reply(&raw);
        let a = v.array();
        assert_eq!(a.len(), 2, "{}: SCAN reply shape {}", c.name, escape(&raw));
        for k in a[1].array() {
            keys.insert(k.bulk().to_vec());
        }
        cursor = a[0].bulk().to_vec();
        if cursor == b"0" {
            return keys;
        }
    }
    panic!("{}: SCAN did not terminate", c.name);
}

/// Compare SCAN key unions for each argument list.
fn scan_compare(p: &mut Pair, extras: &[&[&str]]) {
    for extra in extras {
        let r = scan_all(&mut p.r, extra);
        let z = scan_all(&mut p.z, extra);
        if r != z {
            let show = |s: &BTreeSet<Vec<u8>>| {
                s.iter()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            panic!(
                "SCAN {extra:?} key sets differ\n  redis ({}):   {}\n  zwindow ({}): {}",
                r.len(),
                show(&r),
                z.len(),
                show(&z)
            );
        }
    }
}

#[test]
fn scan_type_filter_with_sorted_sets() {
    let (_s, mut p) = start_pair();
    for i in 0..50 {
        p.check_str(&format!("SET key:{i} v"));
    }
    for i in 0..20 {
        p.check_str(&format!("ZADD zkey:{i} 1 m"));
    }
    scan_compare(
        &mut p,
        &[
            &[][..],
            &["TYPE", "zset", "COUNT", "3"],
            &["TYPE", "string"],
            &["MATCH", "zkey:*", "TYPE", "string"],
            &["MATCH", "zkey:1*", "TYPE", "zset"],
        ],
    );
}

#[test]
fn scan_full_iteration_with_match_count_type() {
    let (_s, mut p) = start_pair();
    for i in 0..300 {
        p.check_str(&format!("SET key:{i} v"));
    }
    scan_compare(
        &mut p,
        &[
            &[][..],
            &["COUNT", "7"],
            &["COUNT", "1000"],
            &["MATCH", "key:1*"],
            &["MATCH", "*:1?", "COUNT", "5"],
            &["TYPE", "string"],
            &["TYPE", "zset"],
            &["TYPE", "list"],
            &["match", "nothing*"],
        ],
    );
    p.script(&[
        "SCAN abc",
        "SCAN 0 COUNT 0",
        "SCAN 0 COUNT -1",
        "SCAN 0 COUNT abc",
        "SCAN 0 COUNT",
        "SCAN 0 MATCH",
        "SCAN 0 TYPE",
        "SCAN 0 FOO bar",
        "SCAN 18446744073709551616",
    ]);
}

#[test]
fn scan_on_empty_db() {
    let (_s, mut p) = start_pair();
    p.script(&["SCAN 0", "SCAN 0 MATCH * COUNT 10 TYPE string"]);
}

#[test]
fn randomkey() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "RANDOMKEY",
        "SET only v",
        "RANDOMKEY",
        "DEL only",
        "RANDOMKEY",
    ]);
}

#[test]
fn swapdb() {
    let (_s, mut p) = start_pair();
    p.script(&[
        "SET a zero",
        "SELECT 1",
        "SET a one",
        "SET b one",
        "SWAPDB 0 1",
        "GET a",
        "DBSIZE",
        "SELECT 0",
        "GET a",
        "DBSIZE",
        "SWAPDB 0 0",
        "GET a",
        "SWAPDB 0 16",
        "SWAPDB -1 0",
        "SWAPDB a 0",
        "SWAPDB 0 b",
        "SWAPDB 0",
    ]);
}

#[test]
fn expired_keys_disappear() {
    let (_s, mut p) = start_pair();
    p.script(&["SET k v PX 30", "SET k2 v PX 30"]);
    std::thread::sleep(std::time::Duration::from_millis(60));
    p.script(&["GET k", "EXISTS k2", "TTL k", "DBSIZE", "KEYS *"]);
}

/// Redis 7.2+ reads all of HELLO's options before acting: the last AUTH
/// and the last SETNAME count, a bad name anywhere refuses the command, and
/// a failed AUTH names nobody.
#[test]
fn hello_option_chains_as_redis8() {
    let (_s, mut p) = start_pair();
    // HELLO's reply names the client's id, which differs: errors are
    // compared whole, successes by their type.
    let hello = |p: &mut Pair, line: &str| {
        let (r, z) = p.both_str(line);
        if r.starts_with(b"-") {
            assert_eq!(escape(&z), escape(&r), "{line}");
        } else {
            assert_eq!(z[0], r[0], "{line}: {} / {}", escape(&r), escape(&z));
        }
    };
    p.script(&[
        "ACL SETUSER su1 >supass on +@all",
        "ACL SETUSER su2 >supass on +@all",
    ]);
    hello(
        &mut p,
        "HELLO 2 AUTH su1 wrong AUTH su2 supass AUTH su1 supass",
    );
    p.check_str("ACL WHOAMI");
    hello(&mut p, "HELLO 2 AUTH su1 supass AUTH su2 wrong");
    p.check_str("ACL WHOAMI");
    hello(&mut p, "HELLO 2 SETNAME c1 SETNAME c2 SETNAME c3");
    p.check_str("CLIENT GETNAME");
    hello(&mut p, "HELLO 2 SETNAME c5 SETNAME \"c 6\" SETNAME c7");
    p.check_str("CLIENT GETNAME");
    p.check_str("CLIENT SETNAME c0");
    hello(&mut p, "HELLO 2 AUTH nobody pass SETNAME c8");
    p.check_str("CLIENT GETNAME");
}
