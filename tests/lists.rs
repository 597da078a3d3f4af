//! Differential tests (zwindow vs redis-server 7.0) of the list commands:
//! every command, option and error, each script run in RESP2 and again in
//! RESP3 on the same pair of servers.
mod common;

use common::*;

/// Runs `script` in RESP2, then flushes and runs it again in RESP3.
fn both_protocols(lines: &[&str]) {
    let (_s, mut p) = start_pair();
    p.script(lines);
    p.check_str("FLUSHALL");
    // HELLO's reply names the server, so it is not compared.
    p.both_str("HELLO 3");
    p.script(lines);
}

#[test]
fn push_and_len() {
    both_protocols(&[
        "LPUSH l a",
        "LPUSH l b c d",
        "RPUSH l e f",
        "LRANGE l 0 -1",
        "LLEN l",
        "LLEN nokey",
        "LPUSHX nokey a",
        "RPUSHX nokey a b",
        "EXISTS nokey",
        "LPUSHX l x y",
        "RPUSHX l z",
        "LRANGE l 0 -1",
        "OBJECT ENCODING l",
        "TYPE l",
        "SET s str",
        "LPUSH s a",
        "RPUSH s a",
        "LPUSHX s a",
        "RPUSHX s a",
        "LLEN s",
        "LPUSH",
        "LPUSH l",
        "RPUSHX l",
        "RPUSH big \"\" \"\\x00\\xff\" 12345 -1",
        "LRANGE big 0 -1",
    ]);
}

#[test]
fn pops_with_and_without_count() {
    both_protocols(&[
        "RPUSH l a b c d e",
        "LPOP l",
        "RPOP l",
        "LPOP l 0",
        "LPOP l 2",
        "RPOP l 5",
        "EXISTS l",
        "LPOP l",
        "RPOP l",
        "LPOP l 0",
        "LPOP l 3",
        "RPOP nokey 1",
        "LPOP nokey -1",
        "LPOP nokey x",
        "RPOP nokey 9223372036854775808",
        "LPOP l 1 2",
        "SET s x",
        "LPOP s",
        "RPOP s 1",
        "LPOP s -1",
        "RPUSH m x",
        "RPOP m 9223372036854775807",
        "EXISTS m",
    ]);
}

#[test]
fn lrange_and_lindex() {
    both_protocols(&[
        "RPUSH l a b c d e",
        "LRANGE l 0 0",
        "LRANGE l 1 3",
        "LRANGE l -2 -1",
        "LRANGE l -100 100",
        "LRANGE l 3 1",
        "LRANGE l 5 10",
        "LRANGE l -9223372036854775808 9223372036854775807",
        "LRANGE l a 1",
        "LRANGE l 0 b",
        "LRANGE nokey 0 -1",
        "LRANGE nokey a 1",
        "LINDEX l 0",
        "LINDEX l -1",
        "LINDEX l 4",
        "LINDEX l 5",
        "LINDEX l -6",
        "LINDEX l abc",
        "LINDEX nokey abc",
        "SET s x",
        "LRANGE s 0 1",
        "LRANGE s a 1",
        "LINDEX s 0",
        "LINDEX s abc",
    ]);
}

#[test]
fn lset_linsert() {
    both_protocols(&[
        "RPUSH l a b c",
        "LSET l 0 A",
        "LSET l -1 C",
        "LSET l 3 x",
        "LSET l -4 x",
        "LSET l abc x",
        "LSET nokey 0 x",
        "LSET nokey abc x",
        "LRANGE l 0 -1",
        "LINSERT l BEFORE b x",
        "LINSERT l after b y",
        "LINSERT l AFTER C z",
        "LINSERT l BEFORE A w",
        "LINSERT l BEFORE nope q",
        "LINSERT l middle b q",
        "LINSERT nokey BEFORE a b",
        "LINSERT nokey middle a b",
        "LRANGE l 0 -1",
        "SET s x",
        "LSET s 0 x",
        "LSET s abc x",
        "LINSERT s BEFORE a b",
        "LINSERT s middle a b",
    ]);
}

#[test]
fn lrem_ltrim() {
    both_protocols(&[
        "RPUSH l x a x b x c x",
        "LREM l 2 x",
        "LRANGE l 0 -1",
        "LREM l -1 x",
        "LRANGE l 0 -1",
        "LREM l 0 x",
        "LREM l 0 nope",
        "LRANGE l 0 -1",
        "LREM l -9223372036854775808 a",
        "LREM l abc a",
        "LREM nokey 1 a",
        "LREM nokey abc a",
        "LREM l 0 b",
        "LREM l 0 c",
        "EXISTS l",
        "RPUSH t a b c d e f",
        "LTRIM t 1 -2",
        "LRANGE t 0 -1",
        "LTRIM t -100 100",
        "LTRIM t 1 1",
        "LRANGE t 0 -1",
        "LTRIM t a 1",
        "LTRIM nokey 0 1",
        "LTRIM nokey a 1",
        "LTRIM t 5 1",
        "EXISTS t",
        "SET s x",
        "LREM s 1 x",
        "LTRIM s 0 1",
    ]);
}

#[test]
fn lpos_options_and_errors() {
    both_protocols(&[
        "RPUSH l a b c a b c a",
        "LPOS l a",
        "LPOS l c",
        "LPOS l z",
        "LPOS l a RANK 2",
        "LPOS l a RANK -1",
        "LPOS l a RANK -2",
        "LPOS l a RANK 9",
        "LPOS l a COUNT 0",
        "LPOS l a COUNT 2",
        "LPOS l a COUNT 2 RANK 2",
        "LPOS l a COUNT 0 RANK -1",
        "LPOS l a COUNT 1 RANK -2",
        "LPOS l a MAXLEN 3",
        "LPOS l a MAXLEN 3 COUNT 0",
        "LPOS l a RANK -1 MAXLEN 2 COUNT 0",
        "LPOS l c MAXLEN 1",
        "LPOS l z COUNT 3",
        "LPOS l a RANK -9223372036854775808",
        "LPOS l a RANK -9223372036854775808 COUNT 2",
        "LPOS l a rank 1 count 1 maxlen 0 count 3",
        "LPOS l a RANK 0",
        "LPOS l a RANK x",
        "LPOS l a COUNT -1",
        "LPOS l a COUNT x",
        "LPOS l a MAXLEN -1",
        "LPOS l a MAXLEN x",
        "LPOS l a RANK",
        "LPOS l a FOO 1",
        "LPOS nokey a",
        "LPOS nokey a COUNT 1",
        "LPOS nokey a RANK 0",
        "SET s x",
        "LPOS s a",
        "LPOS s a RANK 0",
        "LPOS s a COUNT 1",
    ]);
}

#[test]
fn lmove_and_rpoplpush() {
    both_protocols(&[
        "RPUSH src a b c",
        "LMOVE src dst LEFT RIGHT",
        "LMOVE src dst right left",
        "LRANGE src 0 -1",
        "LRANGE dst 0 -1",
        "RPOPLPUSH src dst",
        "EXISTS src",
        "LMOVE src dst LEFT LEFT",
        "RPOPLPUSH src dst",
        "LMOVE dst dst LEFT RIGHT",
        "LMOVE dst dst RIGHT LEFT",
        "RPOPLPUSH dst dst",
        "LRANGE dst 0 -1",
        "LMOVE dst dst UP LEFT",
        "LMOVE dst dst LEFT DOWN",
        "SET s x",
        "LMOVE s dst LEFT LEFT",
        "LMOVE dst s LEFT LEFT",
        "LMOVE nokey s LEFT LEFT",
        "RPOPLPUSH s dst",
        "RPOPLPUSH dst s",
        "RPOPLPUSH nokey s",
        "LRANGE dst 0 -1",
        "RPUSH one x",
        "RPOPLPUSH one one",
        "LRANGE one 0 -1",
    ]);
}

#[test]
fn lmpop_options_and_errors() {
    both_protocols(&[
        "RPUSH a 1 2 3",
        "RPUSH b 4 5",
        "LMPOP 2 nokey a LEFT",
        "LMPOP 2 nokey b RIGHT COUNT 10",
        "LMPOP 1 a right count 2",
        "EXISTS a b",
        "LMPOP 2 a b LEFT",
        "LMPOP 0 a LEFT",
        "LMPOP -1 a LEFT",
        "LMPOP x a LEFT",
        "LMPOP 2 a LEFT",
        "LMPOP 1 a MIDDLE",
        "LMPOP 1 a LEFT COUNT 0",
        "LMPOP 1 a LEFT COUNT -1",
        "LMPOP 1 a LEFT COUNT x",
        "LMPOP 1 a LEFT COUNT",
        "LMPOP 1 a LEFT COUNT 1 COUNT 2",
        "LMPOP 1 a LEFT FOO",
        "LMPOP 9223372036854775807 a LEFT",
        "LMPOP 1",
        "LMPOP 2 a",
        "SET s x",
        "RPUSH c 1",
        "LMPOP 2 s c LEFT",
        "LMPOP 2 c s LEFT",
        "LMPOP 2 nokey s LEFT",
    ]);
}

#[test]
fn blocking_commands_serve_immediately_and_check_arguments() {
    both_protocols(&[
        "RPUSH a 1 2 3",
        "BLPOP nokey a 0",
        "BRPOP a nokey 1",
        "BLMOVE a b LEFT RIGHT 0",
        "BRPOPLPUSH b a 0.5",
        "BLMPOP 0 2 nokey a RIGHT COUNT 5",
        "EXISTS a",
        "SET s x",
        "BLPOP s 0",
        "BLPOP nokey s 0",
        "BLMOVE s b LEFT LEFT 0",
        "BRPOPLPUSH s b 0",
        "BLMPOP 0 1 s LEFT",
        "BLPOP a -1",
        "BLPOP a x",
        "BLPOP a inf",
        "BLPOP a 1e400",
        "BLPOP a 1e20",
        "BLPOP a nan",
        "BLPOP a 0x",
        "BLPOP a .5e",
        "BLPOP a \" 1\"",
        "BLPOP a 92233720368547758",
        "BLMOVE a b LEFT UP 1",
        "BLMOVE a b LEFT LEFT x",
        "BRPOPLPUSH a b x",
        "BLMPOP x 1 a LEFT",
        "BLMPOP 0 0 a LEFT",
        "BLMPOP -1 1 a LEFT COUNT 0",
        "BLMPOP -1 1 a LEFT",
        "BLMPOP 0 1 a LEFT COUNT 1 COUNT 1",
        "BLPOP a",
        "BLMPOP 0 1 a",
    ]);
}

#[test]
fn keyspace_stats_and_expiry() {
    both_protocols(&[
        "RPUSH l a b",
        "PEXPIRE l 100000",
        "LPUSH l c",
        "TTL l",
        "LPOP l 3",
        "TTL l",
        "RPUSH l x",
        "TTL l",
    ]);
}
