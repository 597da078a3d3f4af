//! Differential tests (zwindow vs redis-server 7.0) of the sorted-set
//! commands: every command and option, the error texts, edge-case scores,
//! empty and reversed ranges, wrong types and arities, keyspace events and
//! OBJECT ENCODING at the listpack thresholds. Every script runs twice: in
//! RESP2, then from an empty keyspace in RESP3.
mod common;

use common::*;

/// Runs `lines` in RESP2, then again from an empty keyspace in RESP3.
fn both_protocols(p: &mut Pair, lines: &[&str]) {
    p.script(lines);
    p.check_str("FLUSHALL");
    // HELLO's reply names the server; only the switch matters here.
    p.both_str("HELLO 3");
    p.script(lines);
    p.both_str("HELLO 2");
    p.check_str("FLUSHALL");
}

fn diff(lines: &[&str]) {
    let (_s, mut p) = start_pair();
    both_protocols(&mut p, lines);
}

#[test]
fn zadd_flags_and_errors() {
    diff(&[
        "ZADD z 1 a",
        "ZADD z 1 a 2 b 3 c",
        "ZADD z NX 10 a 4 d",
        "ZADD z XX 10 a 5 e",
        "ZADD z CH 11 a 2 b 6 f",
        "ZADD z GT CH 5 a 20 b",
        "ZADD z LT CH 50 a 1 b",
        "ZADD z XX GT CH 100 c 100 nosuch",
        "ZADD z GT 1 newmember",
        "ZADD z LT CH 1 newmember2",
        "ZADD z INCR 5 a",
        "ZADD z INCR NX 5 a",
        "ZADD z INCR XX 5 nosuch",
        "ZADD z INCR GT -1 a",
        "ZADD z INCR LT -1 a",
        "ZADD z INCR GT 0 a",
        "ZADD z INCR 0 a",
        "ZADD z incr xx ch 2.5 a",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZADD z NX XX 1 a",
        "ZADD z XX NX 1 a",
        "ZADD z GT LT 1 a",
        "ZADD z NX GT 1 a",
        "ZADD z NX LT 1 a",
        "ZADD z NX XX GT 1 a",
        "ZADD z INCR 1 a 2 b",
        "ZADD z INCR NX GT 1 a 2 b",
        "ZADD z 1",
        "ZADD z 1 a 2",
        "ZADD z NX",
        "ZADD z x a",
        "ZADD z 1 a x b",
        "ZADD z",
        "ZADD",
        "ZADD z FOO 1 a",
        "ZADD missing XX 1 a",
        "ZADD missing XX INCR 1 a",
        "EXISTS missing",
        "ZADD z 1 a 1 a 2 a",
        "ZADD z CH 3 a 3 a",
        "ZSCORE z a",
        "ZCARD z",
        "SET s str",
        "ZADD s 1 a",
        "ZADD s XX 1 a",
        "ZADD s x a",
        "ZADD s NX XX 1 a",
    ]);
}

#[test]
fn edge_case_scores() {
    diff(&[
        "ZADD z inf a -inf b +inf c 1e308 d -1e308 e -0 f 0x10 g 1.5e-5 h",
        "ZADD z 0.1 i 1e16 j 1e17 k 123456789.125 l 5e-324 m Infinity n -INF o",
        "ZADD z ' 1' x",
        "ZADD z '1 ' x",
        "ZADD z nan x",
        "ZADD z NaN x",
        "ZADD z 1e309 x",
        "ZADD z 1e-400 x",
        "ZADD z '' x",
        "ZADD z 1.5.5 x",
        "ZADD z 0x x",
        "ZADD z (1 x",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZSCORE z a",
        "ZSCORE z b",
        "ZSCORE z f",
        "ZSCORE z g",
        "ZMSCORE z a b c d e f g h i j k l m n o nosuch",
        "ZINCRBY z 1 a",
        "ZINCRBY z -inf a",
        "ZINCRBY z inf b",
        "ZADD z INCR -inf a",
        "ZADD z INCR inf b",
        "ZSCORE z a",
        "ZINCRBY z 1e308 d",
        "ZINCRBY z 1e308 d",
        "ZINCRBY z x d",
        "ZINCRBY z nan d",
        "ZINCRBY z 1",
        "ZINCRBY z 1 d extra",
        "ZINCRBY newkey 2.5 m",
        "ZINCRBY newkey -2.5 m",
        "ZSCORE newkey m",
        "ZCOUNT z -inf +inf",
        "ZCOUNT z (1 1e308",
        "ZCOUNT z '' 1",
        "ZCOUNT z ' 1' 2",
        "ZCOUNT z 1e400 inf",
        "ZCOUNT z (-inf (inf",
        "ZCOUNT z x 1",
        "ZCOUNT z 1 nan",
        "ZCOUNT z 1 '1 '",
        "ZCOUNT z ( (",
        "ZCOUNT z -0 0",
        "ZRANGEBYSCORE z -inf inf WITHSCORES",
        "ZRANGEBYSCORE z (0 (inf WITHSCORES",
        "ZREVRANGEBYSCORE z (inf (0 WITHSCORES",
        "ZADD sk -0 a",
        "ZSCORE sk a",
        "ZADD sk 0 a",
        "ZADD sk CH -0 a",
        "ZRANGE sk 0 -1 WITHSCORES",
    ]);
}

#[test]
fn zrem_zcard_zscore_zrank() {
    diff(&[
        "ZADD z 1 a 2 b 3 c 4 d",
        "ZREM z a nosuch",
        "ZREM z nosuch",
        "ZCARD z",
        "ZCARD nosuch",
        "ZSCORE z b",
        "ZSCORE z nosuch",
        "ZSCORE nosuch a",
        "ZMSCORE z b nosuch c",
        "ZMSCORE nosuch a b",
        "ZRANK z b",
        "ZRANK z d",
        "ZRANK z nosuch",
        "ZRANK nosuch a",
        "ZREVRANK z b",
        "ZREVRANK z d",
        "ZREVRANK z nosuch",
        // WITHSCORE is Redis 7.2's: zrank_withscore_against_redis8.
        "ZREM z b c d b",
        "EXISTS z",
        "ZREM z a",
        "ZREM",
        "ZREM z",
        "ZCARD",
        "ZCARD a b",
        "ZSCORE z",
        "ZMSCORE z",
        "SET s x",
        "ZREM s a",
        "ZCARD s",
        "ZSCORE s a",
        "ZMSCORE s a",
        "ZRANK s a",
        "ZREVRANK s a",
        "TYPE s",
        "ZADD z 1 a",
        "TYPE z",
        "GET z",
    ]);
}

#[test]
fn zrange_by_index() {
    diff(&[
        "ZADD z 1 a 2 b 3 c 4 d 5 e",
        "ZRANGE z 0 -1",
        "ZRANGE z 0 -1 WITHSCORES",
        "ZRANGE z 0 -1 withscores",
        "ZRANGE z 1 3",
        "ZRANGE z -2 -1",
        "ZRANGE z -100 100",
        "ZRANGE z 3 1",
        "ZRANGE z 5 10",
        "ZRANGE z 0 -6",
        "ZRANGE z -9223372036854775808 9223372036854775807",
        "ZRANGE z 0 -1 REV",
        "ZRANGE z 0 1 REV WITHSCORES",
        "ZRANGE z 0 1 WITHSCORES REV",
        "ZREVRANGE z 0 -1",
        "ZREVRANGE z 0 1 WITHSCORES",
        "ZREVRANGE z 1 0",
        "ZREVRANGE z 0 -1 REV",
        "ZREVRANGE z 0 -1 LIMIT 0 1",
        "ZRANGE z 0 -1 LIMIT 0 1",
        "ZRANGE z 0 -1 LIMIT 0 -1",
        "ZRANGE z 0 -1 LIMIT 5 -1",
        "ZRANGE z 0 -1 LIMIT 0 -2",
        "ZRANGE z 0 -1 LIMIT",
        "ZRANGE z 0 -1 LIMIT 0",
        "ZRANGE z 0 -1 LIMIT x 1",
        "ZRANGE z 0 -1 LIMIT 0 x",
        "ZRANGE z 0 -1 REV REV",
        "ZRANGE z 0 -1 FOO",
        "ZRANGE z a 1",
        "ZRANGE z 0 1.5",
        "ZRANGE nosuch 0 -1",
        "ZRANGE nosuch 0 -1 WITHSCORES",
        "ZRANGE nosuch a b",
        "ZRANGE z 0",
        "ZREVRANGE z 0",
        "SET s x",
        "ZRANGE s 0 -1",
        "ZREVRANGE s 0 -1",
        "ZRANGE s a b",
    ]);
}

#[test]
fn zrange_by_score() {
    diff(&[
        "ZADD z -inf ninf 1 a 2 b 2 bb 3 c 4 d 5 e inf pinf",
        "ZRANGEBYSCORE z -inf +inf",
        "ZRANGEBYSCORE z -inf +inf WITHSCORES",
        "ZRANGEBYSCORE z 2 4",
        "ZRANGEBYSCORE z (2 4",
        "ZRANGEBYSCORE z (2 (4",
        "ZRANGEBYSCORE z 4 2",
        "ZRANGEBYSCORE z (2 (2",
        "ZRANGEBYSCORE z 2 2",
        "ZRANGEBYSCORE z -inf -inf WITHSCORES",
        "ZRANGEBYSCORE z inf inf",
        "ZRANGEBYSCORE z (inf inf",
        "ZRANGEBYSCORE z -inf inf LIMIT 2 3",
        "ZRANGEBYSCORE z -inf inf LIMIT 2 3 WITHSCORES",
        "ZRANGEBYSCORE z -inf inf WITHSCORES LIMIT 2 -1",
        "ZRANGEBYSCORE z -inf inf LIMIT 100 1",
        "ZRANGEBYSCORE z -inf inf LIMIT 8 1",
        "ZRANGEBYSCORE z -inf inf LIMIT 7 5",
        "ZRANGEBYSCORE z -inf inf LIMIT -1 5",
        "ZRANGEBYSCORE z -inf inf LIMIT 0 0",
        "ZRANGEBYSCORE z -inf inf LIMIT 1 -5",
        "ZRANGEBYSCORE z -inf inf LIMIT 1",
        "ZRANGEBYSCORE z -inf inf LIMIT 1 2 3",
        "ZRANGEBYSCORE z -inf inf BYSCORE",
        "ZRANGEBYSCORE z -inf inf REV",
        "ZRANGEBYSCORE z x 1",
        "ZRANGEBYSCORE z 1 (x",
        "ZRANGEBYSCORE z [1 2",
        "ZREVRANGEBYSCORE z +inf -inf",
        "ZREVRANGEBYSCORE z 4 2 WITHSCORES",
        "ZREVRANGEBYSCORE z (4 (2",
        "ZREVRANGEBYSCORE z 2 4",
        "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2",
        "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2 WITHSCORES",
        "ZREVRANGEBYSCORE z +inf -inf LIMIT 20 2",
        "ZREVRANGEBYSCORE z +inf -inf REV",
        "ZRANGE z 2 4 BYSCORE",
        "ZRANGE z (2 4 BYSCORE WITHSCORES",
        "ZRANGE z 4 2 BYSCORE REV",
        "ZRANGE z 4 2 BYSCORE REV WITHSCORES LIMIT 1 1",
        "ZRANGE z 2 4 BYSCORE REV",
        "ZRANGE z -inf inf BYSCORE LIMIT 3 2",
        "ZRANGE z -inf inf BYSCORE LIMIT -3 2",
        "ZRANGE z -inf inf BYSCORE BYSCORE",
        "ZRANGE z -inf inf BYSCORE BYLEX",
        "ZRANGE z x y BYSCORE",
        "ZRANGE z 0 -1 BYLEX WITHSCORES",
        "ZRANGE z 0 -1 WITHSCORES LIMIT 0 1",
        "ZRANGE nosuch -inf inf BYSCORE",
        "ZRANGEBYSCORE nosuch x y",
        "ZRANGEBYSCORE nosuch 1 2",
        "ZRANGEBYSCORE z 1",
        "SET s x",
        "ZRANGEBYSCORE s 1 2",
        "ZRANGEBYSCORE s x 2",
        "ZREVRANGEBYSCORE s 1 2",
        "ZCOUNT z 2 4",
        "ZCOUNT z (2 4",
        "ZCOUNT z 4 2",
        "ZCOUNT nosuch 1 2",
        "ZCOUNT s 1 2",
        "ZCOUNT s x 2",
        "ZCOUNT z 1",
    ]);
}

#[test]
fn zrange_by_lex() {
    diff(&[
        "ZADD z 0 a 0 b 0 c 0 d 0 e 0 f 0 '' 0 aa",
        "ZRANGEBYLEX z - +",
        "ZRANGEBYLEX z [b [d",
        "ZRANGEBYLEX z (b (d",
        "ZRANGEBYLEX z (b [d",
        "ZRANGEBYLEX z [d [b",
        "ZRANGEBYLEX z + -",
        "ZRANGEBYLEX z - -",
        "ZRANGEBYLEX z + +",
        "ZRANGEBYLEX z [ +",
        "ZRANGEBYLEX z ( +",
        "ZRANGEBYLEX z - [",
        "ZRANGEBYLEX z [a (b",
        "ZRANGEBYLEX z - + LIMIT 2 3",
        "ZRANGEBYLEX z - + LIMIT 20 3",
        "ZRANGEBYLEX z - + LIMIT -1 3",
        "ZRANGEBYLEX z - + LIMIT 1 -1",
        "ZRANGEBYLEX z - + LIMIT 1 0",
        "ZRANGEBYLEX z - + WITHSCORES",
        "ZRANGEBYLEX z - + LIMIT 1",
        "ZRANGEBYLEX z a c",
        "ZRANGEBYLEX z [a c",
        "ZRANGEBYLEX z -a +",
        "ZRANGEBYLEX z - +b",
        "ZRANGEBYLEX z '' +",
        "ZREVRANGEBYLEX z + -",
        "ZREVRANGEBYLEX z [d [b",
        "ZREVRANGEBYLEX z [b [d",
        "ZREVRANGEBYLEX z + - LIMIT 1 2",
        "ZREVRANGEBYLEX z + - LIMIT 1 2 WITHSCORES",
        "ZREVRANGEBYLEX z + - BYLEX",
        "ZRANGE z [b [d BYLEX",
        "ZRANGE z [d [b BYLEX REV",
        "ZRANGE z + - BYLEX REV LIMIT 2 2",
        "ZRANGE z - + BYLEX WITHSCORES",
        "ZRANGE z x y BYLEX",
        "ZRANGE z [a [z BYLEX BYLEX",
        "ZLEXCOUNT z - +",
        "ZLEXCOUNT z [b (d",
        "ZLEXCOUNT z (d [b",
        "ZLEXCOUNT z x y",
        "ZLEXCOUNT nosuch - +",
        "ZLEXCOUNT nosuch x y",
        "ZLEXCOUNT z -",
        "SET s x",
        "ZLEXCOUNT s - +",
        "ZLEXCOUNT s x +",
        "ZRANGEBYLEX s - +",
        "ZRANGEBYLEX nosuch - +",
        "ZRANGEBYLEX nosuch x +",
    ]);
}

#[test]
fn zrangestore() {
    diff(&[
        "ZADD src 1 a 2 b 3 c 4 d 5 e",
        "ZRANGESTORE dst src 0 -1",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst src 1 2 REV",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst src 2 4 BYSCORE LIMIT 1 5",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst src (4 -inf BYSCORE REV",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst src [b [d BYLEX",
        "ZRANGE dst 0 -1 WITHSCORES",
        "ZRANGESTORE dst src 0 -1 WITHSCORES",
        "ZRANGESTORE dst src 0 -1 LIMIT 0 1",
        "ZRANGESTORE dst src x y BYSCORE",
        "ZRANGESTORE dst src x y BYLEX",
        "ZRANGESTORE dst src 10 20",
        "EXISTS dst",
        "ZRANGESTORE dst src 0 0",
        "EXPIRE dst 100",
        "ZRANGESTORE dst src 0 1",
        "TTL dst",
        "ZRANGESTORE dst nosuch 0 -1",
        "EXISTS dst",
        "ZRANGESTORE src src 1 2",
        "ZRANGE src 0 -1 WITHSCORES",
        "SET s x",
        "ZRANGESTORE dst s 0 -1",
        "ZRANGESTORE s src 0 -1",
        "TYPE s",
        "ZRANGESTORE dst src 0",
        "ZRANGESTORE dst src -inf inf BYSCORE LIMIT -1 2",
        "EXISTS dst",
    ]);
}

#[test]
fn zremrange() {
    diff(&[
        "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
        "ZREMRANGEBYSCORE z (1 2",
        "ZREMRANGEBYSCORE z 10 20",
        "ZREMRANGEBYSCORE z 5 1",
        "ZREMRANGEBYSCORE z x 1",
        "ZREMRANGEBYSCORE nosuch 1 2",
        "ZREMRANGEBYSCORE nosuch x 2",
        "ZRANGE z 0 -1",
        "ZREMRANGEBYRANK z -1 -1",
        "ZREMRANGEBYRANK z 5 10",
        "ZREMRANGEBYRANK z 2 1",
        "ZREMRANGEBYRANK z x 1",
        "ZREMRANGEBYRANK z 0 1.5",
        "ZREMRANGEBYRANK nosuch 0 -1",
        "ZRANGE z 0 -1",
        "ZREMRANGEBYRANK z 0 -1",
        "EXISTS z",
        "ZADD l 0 a 0 b 0 c 0 d",
        "ZREMRANGEBYLEX l [b (d",
        "ZREMRANGEBYLEX l (d +",
        "ZREMRANGEBYLEX l x y",
        "ZREMRANGEBYLEX nosuch - +",
        "ZREMRANGEBYLEX nosuch x y",
        "ZRANGE l 0 -1",
        "ZREMRANGEBYLEX l - +",
        "EXISTS l",
        "ZADD z 1 a",
        "ZREMRANGEBYSCORE z -inf inf",
        "EXISTS z",
        "SET s x",
        "ZREMRANGEBYSCORE s 1 2",
        "ZREMRANGEBYRANK s 0 1",
        "ZREMRANGEBYLEX s - +",
        "ZREMRANGEBYSCORE z 1",
        "ZREMRANGEBYRANK z 1 2 3",
    ]);
}

#[test]
fn zpop_and_zmpop() {
    diff(&[
        "ZADD z 1 a 2 b 3 c 4 d 5 e",
        "ZPOPMIN z",
        "ZPOPMAX z",
        "ZPOPMIN z 2",
        "ZPOPMAX z 0",
        "ZPOPMIN z 1",
        "ZPOPMIN z -1",
        "ZPOPMIN z x",
        "ZPOPMIN z 1 2",
        "ZPOPMIN z",
        "EXISTS z",
        "ZPOPMIN nosuch",
        "ZPOPMIN nosuch 3",
        "ZPOPMAX nosuch 0",
        "ZADD z 1 a 2 b 3 c",
        "ZPOPMAX z 10",
        "EXISTS z",
        "ZADD z 1 a 2 b 3 c",
        "ZMPOP 1 z MIN",
        "ZMPOP 1 z MAX COUNT 1",
        "ZMPOP 2 nosuch z min count 5",
        "ZMPOP 2 nosuch z min",
        "ZMPOP 1 nosuch MAX",
        "ZMPOP 0 z MIN",
        "ZMPOP -1 z MIN",
        "ZMPOP x z MIN",
        "ZMPOP 1 z",
        "ZMPOP 2 z MIN",
        "ZMPOP 5 z MIN",
        "ZMPOP 1 z FOO",
        "ZMPOP 1 z MIN COUNT",
        "ZMPOP 1 z MIN COUNT 0",
        "ZMPOP 1 z MIN COUNT -1",
        "ZMPOP 1 z MIN COUNT x",
        "ZMPOP 1 z MIN COUNT 1 COUNT 1",
        "ZMPOP 1 z MIN FOO 1",
        "ZMPOP 1 z MIN",
        "SET s x",
        "ZPOPMIN s",
        "ZPOPMAX s 2",
        "ZMPOP 1 s MIN",
        "ZADD z2 1 a",
        "ZMPOP 2 s z2 MIN",
        "ZMPOP 2 z2 s MIN",
        "ZADD z2 1 a",
        "ZMPOP 2 z2 s MIN",
        "ZPOPMIN",
        "ZMPOP 1",
    ]);
}

#[test]
fn blocking_pops_that_do_not_block() {
    diff(&[
        "ZADD z 1 a 2 b 3 c",
        "BZPOPMIN z 0",
        "BZPOPMAX z 0",
        "BZPOPMIN nosuch z 1",
        "EXISTS z",
        "ZADD z 1 a 2 b 3 c",
        "BZMPOP 0 1 z MIN",
        "BZMPOP 0 2 nosuch z MAX COUNT 10",
        "BZPOPMIN z x",
        "BZPOPMIN z -1",
        "BZPOPMIN z inf",
        "BZPOPMIN z 1e30",
        "BZPOPMIN z ' 1'",
        "BZPOPMIN z nan",
        "BZPOPMIN z ''",
        "BZMPOP x 1 z MIN",
        "BZMPOP 0 0 z MIN",
        "BZMPOP 0 1 z FOO",
        "BZMPOP -1 1 z MIN",
        "BZMPOP x 1 z FOO",
        "BZMPOP 0 1 z MIN COUNT 0",
        "BZMPOP 0 1 z",
        "SET s x",
        "BZPOPMIN s 0",
        "BZPOPMIN nosuch s 0",
        "BZMPOP 0 1 s MIN",
        "ZADD z 1 a",
        "BZPOPMIN z s 0",
        "BZPOPMIN",
        "BZPOPMIN z",
    ]);
}

#[test]
fn set_algebra() {
    diff(&[
        "ZADD a 1 x 2 y 3 z",
        "ZADD b 10 y 20 z 30 w",
        "ZADD c 100 z 200 v",
        "ZUNION 2 a b",
        "ZUNION 2 a b WITHSCORES",
        "ZUNION 3 a b c WITHSCORES",
        "ZUNION 2 a b WEIGHTS 2 3 WITHSCORES",
        "ZUNION 2 a b WEIGHTS 2 WITHSCORES",
        "ZUNION 2 a b WEIGHTS 2 x",
        "ZUNION 2 a b WEIGHTS 1 inf WITHSCORES",
        "ZUNION 2 a b WEIGHTS 0 -inf WITHSCORES",
        "ZUNION 2 a b AGGREGATE MIN WITHSCORES",
        "ZUNION 2 a b AGGREGATE max WITHSCORES",
        "ZUNION 2 a b AGGREGATE sum WITHSCORES",
        "ZUNION 2 a b AGGREGATE avg",
        "ZUNION 2 a b AGGREGATE",
        "ZUNION 2 a b WITHSCORES AGGREGATE MIN WEIGHTS 1 2",
        "ZUNION 2 a b WITHSCORES WITHSCORES",
        "ZUNION 2 a nosuch WITHSCORES",
        "ZUNION 1 nosuch",
        "ZUNION 0 a",
        "ZUNION -1 a",
        "ZUNION x a",
        "ZUNION 3 a b",
        "ZUNION 2 a b FOO",
        "ZINTER 2 a b",
        "ZINTER 2 a b WITHSCORES",
        "ZINTER 3 a b c WITHSCORES",
        "ZINTER 2 a b WEIGHTS 2 3 WITHSCORES",
        "ZINTER 2 a b AGGREGATE MAX WITHSCORES",
        "ZINTER 2 a b AGGREGATE MIN WITHSCORES",
        "ZINTER 2 a nosuch",
        "ZINTER 2 a a WITHSCORES",
        "ZINTER 0 a",
        "ZDIFF 2 a b",
        "ZDIFF 2 a b WITHSCORES",
        "ZDIFF 3 b a c WITHSCORES",
        "ZDIFF 1 a WITHSCORES",
        "ZDIFF 2 nosuch a",
        "ZDIFF 2 a a",
        "ZDIFF 2 a b WEIGHTS 1 2",
        "ZDIFF 2 a b AGGREGATE MIN",
        "ZDIFF 0 a",
        "ZUNIONSTORE d 2 a b",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZUNIONSTORE d 2 a b WEIGHTS 1 -1 AGGREGATE MAX",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZUNIONSTORE d 2 a b WITHSCORES",
        "ZUNIONSTORE d 0 a",
        "ZUNIONSTORE d 2 nosuch nosuch2",
        "EXISTS d",
        "ZINTERSTORE d 2 a b",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZINTERSTORE d 2 a c WEIGHTS 0.5 0.25",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZINTERSTORE d 2 a nosuch",
        "EXISTS d",
        "ZINTERSTORE d 0 a",
        "ZDIFFSTORE d 2 a b",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZDIFFSTORE d 2 a a",
        "EXISTS d",
        "ZDIFFSTORE d 0 a",
        "ZDIFFSTORE d 1 a WITHSCORES",
        "ZUNIONSTORE a 2 a b",
        "ZRANGE a 0 -1 WITHSCORES",
        "ZINTERCARD 2 a b",
        "ZINTERCARD 3 a b c",
        "ZINTERCARD 2 a b LIMIT 1",
        "ZINTERCARD 2 a b LIMIT 0",
        "ZINTERCARD 2 a b LIMIT 100",
        "ZINTERCARD 2 a b LIMIT -1",
        "ZINTERCARD 2 a b LIMIT x",
        "ZINTERCARD 2 a b LIMIT",
        "ZINTERCARD 2 a b WITHSCORES",
        "ZINTERCARD 2 a b WEIGHTS 1 2",
        "ZINTERCARD 0 a",
        "ZINTERCARD 3 a b",
        "ZINTERCARD 2 a nosuch",
        "SET s x",
        "ZUNION 2 a s",
        "ZUNION 2 a s WEIGHTS x y",
        "ZINTER 2 nosuch s",
        "ZDIFF 2 a s",
        "ZINTERCARD 2 a s",
        "ZUNIONSTORE d 2 a s",
        "ZUNIONSTORE s 1 a",
        "TYPE s",
        "ZUNION",
        "ZUNION 1",
        "ZUNIONSTORE d 1",
    ]);
}

#[test]
fn set_algebra_sum_order_and_nan() {
    // Equal-sized inputs are summed in argument order (Redis sorts stably
    // by size), which decides where inf + -inf turns into 0.
    diff(&[
        "ZADD p 1 m inf x",
        "ZADD q 2 m -inf x",
        "ZADD r 3 m inf x",
        "ZADD big 1 m 1 x 1 y 1 z",
        "ZUNION 3 p q r WITHSCORES",
        "ZUNION 3 p r q WITHSCORES",
        "ZUNION 3 q p r WITHSCORES",
        "ZINTER 3 p q r WITHSCORES",
        "ZINTER 3 p r q WITHSCORES",
        "ZINTER 4 big p q r WITHSCORES",
        "ZUNION 4 big p q r WITHSCORES",
        "ZUNION 2 p q WEIGHTS 0 0 WITHSCORES",
        "ZINTER 2 p q WEIGHTS inf 0 WITHSCORES",
        "ZINTER 2 p q WEIGHTS 0 inf AGGREGATE MIN WITHSCORES",
        "ZINTER 2 p q WEIGHTS 0 inf AGGREGATE MAX WITHSCORES",
        "ZUNION 2 p q WEIGHTS 0 inf AGGREGATE MAX WITHSCORES",
        "ZADD ties 0 b 0 a -0 c 0 '' 1 z",
        "ZUNION 1 ties WITHSCORES",
        "ZUNION 2 ties ties WEIGHTS 1 -1 WITHSCORES",
    ]);
}

#[test]
fn zrandmember_deterministic_parts() {
    diff(&[
        "ZADD z 1 a 2 b 3 c",
        "ZRANDMEMBER z 3",
        "ZRANDMEMBER z 10",
        "ZRANDMEMBER z 10 WITHSCORES",
        "ZRANDMEMBER z 3 withscores",
        "ZRANDMEMBER z 0",
        "ZRANDMEMBER z 0 WITHSCORES",
        "ZRANDMEMBER nosuch",
        "ZRANDMEMBER nosuch 5",
        "ZRANDMEMBER nosuch -5 WITHSCORES",
        "ZRANDMEMBER z x",
        "ZRANDMEMBER z 1 FOO",
        "ZRANDMEMBER z 1 WITHSCORES FOO",
        "ZRANDMEMBER z -9223372036854775808",
        "ZRANDMEMBER z 9223372036854775807 WITHSCORES",
        "ZRANDMEMBER z -4611686018427387904 WITHSCORES",
        "ZRANDMEMBER z 4611686018427387903 WITHSCORES",
        "ZADD one 5 only",
        "ZRANDMEMBER one",
        "ZRANDMEMBER one 1",
        "ZRANDMEMBER one -3",
        "ZRANDMEMBER one -3 WITHSCORES",
        "ZRANDMEMBER one 1 WITHSCORES",
        "SET s x",
        "ZRANDMEMBER s",
        "ZRANDMEMBER s 1",
        "ZRANDMEMBER s x",
        "ZRANDMEMBER",
    ]);
}

/// Random replies: shape and membership must agree.
#[test]
fn zrandmember_random_replies() {
    let (_s, mut p) = start_pair();
    for resp3 in [false, true] {
        if resp3 {
            p.both_str("HELLO 3");
        }
        p.check_str("ZADD z 1 a 2 b 3 c 4 d 5 e");
        for cmd in [
            "ZRANDMEMBER z 2",
            "ZRANDMEMBER z -7",
            "ZRANDMEMBER z 3 WITHSCORES",
            "ZRANDMEMBER z -8 WITHSCORES",
        ] {
            let (r, z) = p.both_str(cmd);
            let (r, z) = (parse_reply(&r), parse_reply(&z));
            assert_eq!(r.array().len(), z.array().len(), "{cmd}");
            let valid = |x: &Reply| match x {
                Reply::Bulk(b) => {
                    b.len() == 1 && (b"a"[0]..=b"e"[0]).contains(&b[0])
                        || std::str::from_utf8(b).is_ok_and(|s| s.parse::<f64>().is_ok())
                }
                Reply::Array(pair) => pair.len() == 2,
                Reply::Double(_) => true,
                _ => false,
            };
            assert!(z.array().iter().all(valid), "{cmd}: {z:?}");
            if cmd.ends_with(" 2") || cmd.ends_with("3 WITHSCORES") {
                // Distinct members for a positive count.
                let mut seen = std::collections::HashSet::new();
                let step = if cmd.contains("WITHSCORES") && !resp3 {
                    2
                } else {
                    1
                };
                for m in z.array().iter().step_by(step) {
                    assert!(seen.insert(format!("{m:?}")), "{cmd}: repeated {m:?}");
                }
            }
        }
        let (_, one) = p.both_str("ZRANDMEMBER z");
        let one = parse_reply(&one);
        assert!(matches!(one, Reply::Bulk(ref b) if b.len() == 1), "{one:?}");
        p.check_str("DEL z");
    }
}

#[test]
fn zscan() {
    diff(&[
        "ZADD z 1 a 2 b 3 c 1.5 dd 0.1 ee",
        "ZSCAN z 0",
        "ZSCAN z 0 COUNT 1",
        "ZSCAN z 0 MATCH ?",
        "ZSCAN z 0 MATCH d*",
        "ZSCAN z 0 MATCH * COUNT 100",
        "ZSCAN z 0 COUNT 0",
        "ZSCAN z 0 COUNT -1",
        "ZSCAN z 0 COUNT x",
        "ZSCAN z 0 MATCH",
        "ZSCAN z 0 TYPE zset",
        "ZSCAN z 0 FOO bar",
        "ZSCAN z x",
        "ZSCAN z -1",
        "ZSCAN z ''",
        "ZSCAN z ' 1'",
        "ZSCAN z 18446744073709551616",
        "ZSCAN nosuch 0",
        "ZSCAN nosuch 0 COUNT 0",
        "ZSCAN nosuch x",
        "SET s x",
        "ZSCAN s 0",
        "ZSCAN s 0 COUNT 0",
        "ZSCAN z",
    ]);
}

/// Skiplist-encoded sets scan in a different order than Redis's dict; a
/// full iteration must still return exactly the same elements.
#[test]
fn zscan_full_iteration_of_a_skiplist() {
    let (_s, mut p) = start_pair();
    let mut args: Vec<String> = vec!["ZADD".into(), "big".into()];
    for i in 0..300 {
        args.push(format!("{}", i % 37));
        args.push(format!("m{i}"));
    }
    let refs: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
    p.check(&refs);
    p.check_str("OBJECT ENCODING big");
    let collect = |c: &mut RawConn| {
        let mut cursor = b"0".to_vec();
        let mut all = std::collections::BTreeMap::new();
        for _ in 0..10_000 {
            let r = parse_reply(&c.cmd(&[b"ZSCAN", b"big", &cursor, b"COUNT", b"7"]));
            let parts = r.array();
            cursor = parts[0].bulk().to_vec();
            let elems = parts[1].array();
            for pair in elems.chunks(2) {
                let score: f64 = std::str::from_utf8(pair[1].bulk())
                    .unwrap()
                    .parse()
                    .unwrap();
                all.insert(pair[0].bulk().to_vec(), score.to_bits());
            }
            if cursor == b"0" {
                return all;
            }
        }
        panic!("ZSCAN never finished");
    };
    let r = collect(&mut p.r);
    let z = collect(&mut p.z);
    assert_eq!(r.len(), 300);
    assert_eq!(r, z);
}

#[test]
fn wrong_arity_everywhere() {
    diff(&[
        "ZADD z",
        "ZINCRBY z 1",
        "ZREM z",
        "ZCARD",
        "ZSCORE z",
        "ZMSCORE z",
        "ZCOUNT z 1",
        "ZLEXCOUNT z -",
        "ZRANK z",
        // ZREVRANK z a b: a syntax error since 8.0 (WITHSCORE), see redis80_changes.rs.
        "ZRANGE z 0",
        "ZRANGESTORE d z 0",
        "ZREVRANGE z 0",
        "ZRANGEBYSCORE z 0",
        "ZREVRANGEBYSCORE z 0",
        "ZRANGEBYLEX z -",
        "ZREVRANGEBYLEX z +",
        "ZREMRANGEBYSCORE z 0",
        "ZREMRANGEBYRANK z 0",
        "ZREMRANGEBYLEX z -",
        "ZPOPMIN",
        "ZPOPMAX",
        "BZPOPMIN z",
        "BZPOPMAX z",
        "ZMPOP 1 z",
        "BZMPOP 0 1 z",
        "ZUNION 1",
        "ZINTER 1",
        "ZDIFF 1",
        "ZUNIONSTORE d 1",
        "ZINTERSTORE d 1",
        "ZDIFFSTORE d 1",
        "ZINTERCARD 1",
        "ZRANDMEMBER",
        "ZSCAN z",
    ]);
}

#[test]
fn encodings_at_the_thresholds() {
    let (_s, mut p) = start_pair();
    let m64 = "x".repeat(64);
    let m65 = "x".repeat(65);
    let mut lines: Vec<String> = Vec::new();
    // 128 entries stay listpack, the 129th converts; never back.
    let mut add = String::from("ZADD z");
    for i in 0..128 {
        add.push_str(&format!(" {i} m{i}"));
    }
    lines.push(add);
    lines.push("OBJECT ENCODING z".into());
    lines.push("ZADD z 128 m128".into());
    lines.push("OBJECT ENCODING z".into());
    lines.push("ZREM z m128 m127".into());
    lines.push("OBJECT ENCODING z".into());
    // Member length: 64 fits, 65 converts, also as the first member.
    lines.push(format!("ZADD v 1 {m64}"));
    lines.push("OBJECT ENCODING v".into());
    lines.push(format!("ZADD v 1 {m65}"));
    lines.push("OBJECT ENCODING v".into());
    lines.push(format!("ZADD w 1 {m65}"));
    lines.push("OBJECT ENCODING w".into());
    // STORE results convert back to listpack when they fit.
    lines.push("ZUNIONSTORE u 1 z".into());
    lines.push("OBJECT ENCODING u".into());
    lines.push("ZRANGESTORE r z 0 9".into());
    lines.push("OBJECT ENCODING r".into());
    lines.push("ZRANGESTORE r z 0 -1".into());
    lines.push("OBJECT ENCODING r".into());
    lines.push("ZRANGESTORE r z 0 127".into());
    lines.push("OBJECT ENCODING r".into());
    lines.push("ZRANGESTORE r z -inf inf BYSCORE".into());
    lines.push("OBJECT ENCODING r".into());
    lines.push("ZRANGESTORE r z 0 9 BYSCORE".into());
    lines.push("OBJECT ENCODING r".into());
    lines.push("ZINTERSTORE i 2 z z".into());
    lines.push("OBJECT ENCODING i".into());
    lines.push("ZDIFFSTORE df 1 z".into());
    lines.push("OBJECT ENCODING df".into());
    lines.push("ZDIFFSTORE df 1 v".into());
    lines.push("OBJECT ENCODING df".into());
    lines.push("ZREMRANGEBYRANK z 10 -1".into());
    lines.push("ZUNIONSTORE u 1 z".into());
    lines.push("OBJECT ENCODING u".into());
    lines.push("ZINTERSTORE i 2 z z".into());
    lines.push("OBJECT ENCODING i".into());
    lines.push("ZDIFFSTORE df 2 z nosuch".into());
    lines.push("OBJECT ENCODING df".into());
    lines.push("COPY z zc".into());
    lines.push("OBJECT ENCODING zc".into());
    // Thresholds are live settings, old names included.
    lines.push("CONFIG SET zset-max-listpack-entries 2".into());
    lines.push("ZADD t 1 a 2 b".into());
    lines.push("OBJECT ENCODING t".into());
    lines.push("ZADD t 3 c".into());
    lines.push("OBJECT ENCODING t".into());
    lines.push("ZUNIONSTORE u2 1 t".into());
    lines.push("OBJECT ENCODING u2".into());
    lines.push("ZRANGESTORE r2 t 0 1".into());
    lines.push("OBJECT ENCODING r2".into());
    lines.push("ZRANGESTORE r2 t 0 2".into());
    lines.push("OBJECT ENCODING r2".into());
    lines.push("ZUNIONSTORE u3 1 v".into());
    lines.push("OBJECT ENCODING u3".into());
    lines.push("CONFIG SET zset-max-ziplist-value 3".into());
    lines.push("ZADD t2 1 abc".into());
    lines.push("OBJECT ENCODING t2".into());
    lines.push("ZADD t3 1 abcd".into());
    lines.push("OBJECT ENCODING t3".into());
    lines.push("ZUNIONSTORE u4 1 t2".into());
    lines.push("OBJECT ENCODING u4".into());
    lines.push("CONFIG SET zset-max-ziplist-entries 0".into());
    lines.push("ZADD t4 1 a".into());
    lines.push("OBJECT ENCODING t4".into());
    lines.push("ZUNIONSTORE u5 1 t4".into());
    lines.push("OBJECT ENCODING u5".into());
    lines.push("ZRANGESTORE r5 t4 0 -1".into());
    lines.push("OBJECT ENCODING r5".into());
    lines.push("ZADD t4 -0 b".into());
    lines.push("ZRANGE t4 0 -1 WITHSCORES".into());
    lines.push("CONFIG SET zset-max-listpack-entries 128".into());
    lines.push("CONFIG SET zset-max-listpack-value 64".into());
    let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
    both_protocols(&mut p, &refs);
}

/// Keyspace events carry Redis's names, in Redis's order.
#[test]
fn keyspace_events() {
    let s = Servers::start();
    let mut p = s.pair();
    p.check_str("CONFIG SET notify-keyspace-events KEA");
    let mut sub = Pair {
        z: s.z.conn(),
        r: s.r.conn(),
    };
    sub.check_str("PSUBSCRIBE __keyevent@0__:*");
    let cmds = [
        "ZADD z 1 a 2 b 3 c",
        "ZADD z 1 a",
        "ZADD z XX 5 nosuch",
        "ZINCRBY z 1 a",
        "ZADD z INCR 0 a",
        "ZADD z INCR 1 a",
        "ZREM z nosuch",
        "ZREM z a",
        "ZREMRANGEBYSCORE z 100 200",
        "ZREMRANGEBYSCORE z 2 2",
        "ZADD z 1 a 2 b",
        "ZREMRANGEBYRANK z 0 0",
        "ZADD l 0 a 0 b",
        "ZREMRANGEBYLEX l [a [a",
        "ZREMRANGEBYLEX l - +",
        "ZPOPMIN z",
        "ZPOPMAX z 5",
        "ZPOPMIN nosuch",
        "ZADD z 1 a 2 b 3 c",
        "ZMPOP 1 z MAX COUNT 2",
        "BZPOPMIN z 0",
        "ZADD a 1 x",
        "ZADD b 1 y",
        "ZUNIONSTORE d 2 a b",
        "ZINTERSTORE d 2 a b",
        "ZDIFFSTORE d 2 a b",
        "ZDIFFSTORE d 2 a a",
        "ZRANGESTORE d a 0 -1",
        "ZRANGESTORE d a 5 6",
        "ZREM a x",
    ];
    for c in cmds {
        p.check_str(c);
    }
    // Read every event up to the sentinel on both sides.
    let drain = |c: &mut RawConn| {
        let mut events = Vec::new();
        loop {
            let r = c.read_reply();
            let items = parse_reply(&r);
            let arr = items.array();
            if arr.len() == 4 && arr[2].bulk() == b"__keyevent@0__:del" && arr[3].bulk() == b"a" {
                events.push(r);
                return events;
            }
            events.push(r);
        }
    };
    let r = drain(&mut sub.r);
    let z = drain(&mut sub.z);
    let show = |v: &Vec<Vec<u8>>| v.iter().map(|e| escape(e)).collect::<Vec<_>>().join("\n");
    assert_eq!(show(&r), show(&z));
}

/// Plain sets feed ZUNION/ZINTER/ZDIFF with score 1. Sets live on another
/// branch: the lead enables this after merging (one arm in `read_input`).
#[test]
fn set_algebra_with_plain_sets() {
    diff(&[
        "SADD s1 a b c",
        "SADD s2 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127 128 129 130",
        "SADD s3 1 b",
        "ZADD z 5 a 7 d 2 1",
        "ZUNION 2 s1 z WITHSCORES",
        "ZUNION 3 s1 s3 z WEIGHTS 2 3 4 AGGREGATE MAX WITHSCORES",
        "ZINTER 2 s1 z WITHSCORES",
        "ZINTER 2 s3 z AGGREGATE MIN WITHSCORES",
        "ZDIFF 2 s1 z WITHSCORES",
        "ZDIFF 2 z s1 WITHSCORES",
        "ZINTERCARD 2 s1 s3",
        "ZINTERCARD 2 s2 z",
        "ZUNIONSTORE d 2 s1 z",
        "ZRANGE d 0 -1 WITHSCORES",
        "OBJECT ENCODING d",
        "ZUNIONSTORE d 1 s2",
        "OBJECT ENCODING d",
        "ZINTERSTORE d 2 s2 s3",
        "ZRANGE d 0 -1 WITHSCORES",
        "ZDIFFSTORE d 2 s2 s3",
        "ZCARD d",
        "OBJECT ENCODING d",
        "ZRANGESTORE d s1 0 -1",
        "ZUNION 1 s1 WITHSCORES",
    ]);
}

/// Lex ranges over members with unequal scores (not in lex order): what
/// Redis's listpack walk finds, forward (the first member not below the
/// minimum, on while not above the maximum) and reverse (from the last
/// member not above the maximum). ZREMRANGEBYLEX and ZRANGESTORE BYLEX
/// reach a redis-server replica as themselves and must do there what
/// they did here.
#[test]
fn lex_ranges_over_unequal_scores_walk_as_redis() {
    let (_s, mut p) = start_pair();
    // A small deterministic generator (xorshift).
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    for _ in 0..300 {
        let mut zadd = String::from("ZADD z");
        for _ in 0..1 + next(8) {
            let score = if next(2) == 0 { next(5) } else { next(1000) };
            zadd += &format!(" {score} m{}", next(9));
        }
        let mut bound = || match next(10) {
            0 => "-".to_string(),
            1 => "+".to_string(),
            _ => format!("{}m{}", if next(2) == 0 { '(' } else { '[' }, next(9)),
        };
        let (lo, hi) = (bound(), bound());
        p.check_str("DEL z d");
        p.check_str(&zadd);
        for q in [
            format!("ZLEXCOUNT z {lo} {hi}"),
            format!("ZRANGEBYLEX z {lo} {hi}"),
            format!("ZRANGEBYLEX z {lo} {hi} LIMIT 1 2"),
            format!("ZREVRANGEBYLEX z {hi} {lo}"),
            format!("ZREVRANGEBYLEX z {hi} {lo} LIMIT 1 2"),
            format!("ZRANGESTORE d z {hi} {lo} BYLEX REV"),
            "ZRANGE d 0 -1".to_string(),
            format!("ZRANGESTORE d z {lo} {hi} BYLEX"),
            "ZRANGE d 0 -1".to_string(),
            format!("ZREMRANGEBYLEX z {lo} {hi}"),
            "ZRANGE z 0 -1".to_string(),
        ] {
            p.check_str(&q);
        }
    }
    // Skiplists (a long member): from `-`, where Redis's descent lands on
    // the first member whatever its levels, then on while in range.
    let long = "q".repeat(100);
    for _ in 0..100 {
        let mut zadd = format!("ZADD z {} {long}", next(1000));
        for _ in 0..1 + next(8) {
            zadd += &format!(" {} m{}", next(1000), next(9));
        }
        let hi = format!("{}m{}", if next(2) == 0 { '(' } else { '[' }, next(9));
        p.check_str("DEL z d");
        p.check_str(&zadd);
        for q in [
            format!("ZRANGEBYLEX z - {hi}"),
            format!("ZRANGESTORE d z - {hi} BYLEX"),
            "ZRANGE d 0 -1".to_string(),
            format!("ZREMRANGEBYLEX z - {hi}"),
            "ZRANGE z 0 -1".to_string(),
        ] {
            p.check_str(&q);
        }
    }
}

/// ZRANK/ZREVRANK WITHSCORE (Redis 7.2) against Redis 8.0: both encodings,
/// score formatting (integers, fractions, infinities, -0), the null array
/// for a missing key or member, and the arity and syntax errors.
#[test]
fn zrank_withscore_against_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    both_protocols(
        &mut p,
        &[
            "ZADD z 1 a 2.5 b -inf c +inf d 0 e 3.0000000000000004 f 1e300 g",
            "ZRANK z a WITHSCORE",
            "ZREVRANK z a withscore",
            "ZRANK z b WITHSCORE",
            "ZRANK z c WITHSCORE",
            "ZREVRANK z d WITHSCORE",
            "ZRANK z e WITHSCORE",
            "ZRANK z f WITHSCORE",
            "ZRANK z g WITHSCORE",
            "ZRANK z nosuch WITHSCORE",
            "ZREVRANK z nosuch WITHSCORE",
            "ZRANK missing a WITHSCORE",
            "ZREVRANK missing a WITHSCORE",
            "ZRANK missing a",
            "ZRANK z a",
            "ZRANK z a WITHSCORES",
            "ZRANK missing a FOO",
            "ZRANK z a WITHSCORE extra",
            "ZREVRANK z a WITHSCORE WITHSCORE",
            "ZRANK z",
            "SET s x",
            "ZRANK s a WITHSCORE",
            "ZRANK s a FOO",
            "CONFIG SET zset-max-listpack-entries 1",
            "ZADD big 5 x 6 y 7 z -0 w",
            "OBJECT ENCODING big",
            "ZRANK big y WITHSCORE",
            "ZREVRANK big y WITHSCORE",
            "ZRANK big w WITHSCORE",
            "ZRANK big nosuch WITHSCORE",
            "CONFIG SET zset-max-listpack-entries 128",
        ],
    );
}
