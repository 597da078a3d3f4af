//! What Redis 8.0 changed in commands zwindow shares with 7.0, compared
//! with redis-server 8.0.2 (`ZWINDOW_REDIS8_SERVER`): ZRANK/ZREVRANK
//! WITHSCORE; blocking commands and WAIT no longer `noscript` (in a script
//! or MULTI they answer at once, as if timed out); COMMAND GETKEYS with a
//! bare command name reaching the arity check.
mod common;

use common::*;

fn redis8_pair() -> (Servers, Pair) {
    let s = Servers::start_redis8(&[]);
    let p = s.pair();
    (s, p)
}

#[test]
fn zrank_withscore_matches_redis8() {
    let (s, _) = redis8_pair();
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        p.script(&[
            "DEL z s",
            "ZADD z 1.5 a 2 b 3e10 c",
            "ZRANK z a",
            "ZRANK z a WITHSCORE",
            "ZREVRANK z a withscore",
            "ZRANK z c WITHSCORE",
            "ZRANK z nosuch WITHSCORE",
            "ZRANK z nosuch",
            "ZRANK nokey a WITHSCORE",
            "ZRANK nokey a",
            "ZRANK z a WITHSCORES",
            "ZRANK nokey a WITHSCORES",
            "ZRANK z a WITHSCORE x",
            "ZREVRANK z a WITHSCORE x",
            "ZREVRANK z a b",
            "SET s v",
            "ZRANK s a WITHSCORE",
            "ZRANK s a BAD",
            "EVAL \"return redis.call('zrank', KEYS[1], 'b', 'withscore')\" 1 z",
            "EVAL \"return redis.call('zrank', KEYS[1], 'x', 'withscore')\" 1 z",
        ]);
    }
}

#[test]
fn blocking_commands_and_wait_run_in_scripts_as_in_redis8() {
    let (_s, mut p) = redis8_pair();
    p.script(&[
        "RPUSH l a b",
        "ZADD z 1 m 2 n",
        "EVAL \"return redis.call('blpop', KEYS[1], 0)\" 1 l",
        "EVAL \"return redis.call('brpop', KEYS[1], 0)\" 1 l",
        "EVAL \"return redis.call('blpop', KEYS[1], 0)\" 1 l",
        "EVAL \"return redis.call('brpoplpush', KEYS[1], KEYS[2], 0)\" 2 l m",
        "RPUSH l c",
        "EVAL \"return redis.call('blmove', KEYS[1], KEYS[2], 'left', 'right', 0)\" 2 l m",
        "EVAL \"return redis.call('bzpopmin', KEYS[1], 0)\" 1 z",
        "EVAL \"return redis.call('bzpopmax', KEYS[1], 0)\" 1 z",
        "EVAL \"return redis.call('bzpopmax', KEYS[1], 0)\" 1 z",
        "EVAL \"return redis.call('wait', 0, 0)\" 0",
        "EVAL \"return redis.call('wait', 1, 0)\" 0",
        "EVAL \"return redis.pcall('wait', 'x', 0)\" 0",
        "MULTI",
        "WAIT 1 0",
        "BLPOP nosuch 0",
        "EXEC",
    ]);
}

#[test]
fn command_getkeys_arity_matches_redis8() {
    let (_s, mut p) = redis8_pair();
    p.script(&[
        "COMMAND GETKEYS GET",
        "COMMAND GETKEYSANDFLAGS GET",
        "COMMAND GETKEYS",
        "COMMAND GETKEYS PING",
        "COMMAND GETKEYS TIME",
        "COMMAND GETKEYS NOSUCH",
        "COMMAND GETKEYS DEL",
        "COMMAND GETKEYS EVAL",
        "CLUSTER SHARDS",
        "CLUSTER SLOTS",
    ]);
}
