//! Differential tests (zwindow vs redis-server 7.0) of ACL: the ACL
//! subcommands' replies and errors, AUTH/HELLO as ACL users, the NOPERM
//! checks at the top level, in MULTI (queueing and EXEC), in scripts and
//! on pub/sub channels, the ACL log, CLIENT KILL USER and the clients of
//! deleted users, requirepass as the default user's password and the ACL
//! file. Both servers get the same command sequences; replies are compared
//! byte for byte, except where Redis's output depends on its hash-table
//! order (single commands after the categories in a rule description),
//! which those tests avoid.
mod common;

use common::*;

#[test]
fn setuser_getuser_list_and_errors() {
    let s = Servers::start();
    let mut p = s.pair();
    p.script(&[
        "ACL SETUSER alice on >pw ~k* &ch* +@read +set",
        "ACL GETUSER alice",
        "ACL LIST",
        "ACL USERS",
        "ACL WHOAMI",
        "ACL CAT",
        "ACL SETUSER bob on nopass (+get ~b*) (+set ~c*) %R~r* %W~w* %RW~x",
        "ACL GETUSER bob",
        // Redis 7.2+: a permission that grants nothing is a syntax error.
        "ACL SETUSER bob %~",
        "ACL SETUSER bob %",
        "ACL SETUSER bob %RW",
        "ACL LIST",
        "ACL SETUSER carol on +@all -@dangerous",
        "ACL GETUSER carol",
        "ACL SETUSER dave +@all -@write -@read",
        "ACL GETUSER dave",
        "ACL SETUSER eve on +select|0",
        "ACL GETUSER eve",
        "ACL SETUSER frank reset",
        "ACL GETUSER frank",
        "ACL SETUSER g on &x &y resetchannels &z allkeys",
        "ACL GETUSER g",
        "ACL SETUSER h on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b",
        "ACL GETUSER h",
        "ACL SETUSER h !2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b nopass",
        "ACL GETUSER h",
        "ACL GETUSER nosuch",
        // Errors, none of which changes the user.
        "ACL SETUSER bad on bogus",
        "ACL SETUSER bad +nosuch",
        "ACL SETUSER bad +@nosuch",
        "ACL SETUSER bad ~* ~x",
        "ACL SETUSER bad &* &x",
        "ACL SETUSER bad #abc",
        "ACL SETUSER bad <nosuchpass",
        "ACL SETUSER bad (+get",
        "ACL SETUSER bad +config|get|x",
        "ACL SETUSER bad +get|",
        "ACL SETUSER bad -select|0",
        "ACL SETUSER bad %X~k",
        "ACL SETUSER bad (on)",
        "ACL GETUSER bad",
        "ACL SETUSER \"a b\" on",
        "ACL DELUSER default",
        "ACL DELUSER alice nosuch bob",
        "ACL USERS",
        "ACL GENPASS 0",
        "ACL GENPASS 5000",
        "ACL GENPASS x",
        "ACL GENPASS 1 2",
        "ACL CAT nosuch",
        "ACL CAT read write",
        "ACL LOAD",
        "ACL SAVE",
        "ACL HELP",
        "ACL NOSUCH",
        "ACL",
        "ACL GETUSER",
    ]);
    // Random, but of the asked length.
    for (bits, len) in [("", 64), ("1", 1), ("5", 2), ("4096", 1024)] {
        let (r, z) = p.both_str(&format!("ACL GENPASS {bits}"));
        assert_eq!(parse_reply(&r).bulk().len(), len);
        assert_eq!(parse_reply(&z).bulk().len(), len);
    }
}

#[test]
fn categories_list_the_same_commands() {
    let s = Servers::start();
    let mut p = s.pair();
    // What zwindow has at all: every command is either fast or slow.
    let mut zwindow_all: Vec<Vec<u8>> = Vec::new();
    for c in ["fast", "slow"] {
        let reply = s.z.conn().cmd_str(&format!("ACL CAT {c}"));
        zwindow_all.extend(
            parse_reply(&reply)
                .array()
                .iter()
                .map(|e| e.bulk().to_vec()),
        );
    }
    for cat in [
        "keyspace",
        "read",
        "write",
        "sortedset",
        "hash",
        "pubsub",
        "connection",
        "scripting",
        "dangerous",
    ] {
        let (r, z) = p.both_str(&format!("ACL CAT {cat}"));
        let names = |reply: &[u8]| {
            let mut v: Vec<Vec<u8>> = parse_reply(reply)
                .array()
                .iter()
                .map(|e| e.bulk().to_vec())
                .collect();
            v.sort();
            v
        };
        // zwindow has commands Redis 7.0 lacks (and lacks a few it has):
        // compare the names both know.
        let (r, z) = (names(&r), names(&z));
        let known = |n: &Vec<u8>| zwindow_all.contains(n);
        let r: Vec<_> = r.into_iter().filter(known).collect();
        for n in &r {
            assert!(
                z.contains(n),
                "@{cat}: {} missing",
                String::from_utf8_lossy(n)
            );
        }
    }
}

#[test]
fn dryrun() {
    let s = Servers::start();
    let mut p = s.pair();
    p.script(&[
        "ACL SETUSER u on nopass %R~r* %W~w* ~rw* &ch* +@all -flushall -config|set +select|0 -select",
        "ACL DRYRUN u get r1",
        "ACL DRYRUN u set r1 v",
        "ACL DRYRUN u set w1 v",
        "ACL DRYRUN u get w1",
        "ACL DRYRUN u copy r1 w1",
        "ACL DRYRUN u copy w1 r1",
        "ACL DRYRUN u lmove rw1 rw2 left right",
        "ACL DRYRUN u sort r1 store w1",
        "ACL DRYRUN u sort r1 store r2",
        "ACL DRYRUN u eval \"\" 1 r1",
        "ACL DRYRUN u flushall",
        "ACL DRYRUN u config set a b",
        "ACL DRYRUN u config get a",
        "ACL DRYRUN u publish ch1 m",
        "ACL DRYRUN u publish other m",
        "ACL DRYRUN u subscribe ch1 other",
        "ACL DRYRUN u psubscribe ch*",
        "ACL DRYRUN u psubscribe ch1",
        "ACL DRYRUN u unsubscribe other",
        "ACL DRYRUN u select 0",
        "ACL DRYRUN nobody get a",
        "ACL DRYRUN u nosuch a",
        "ACL DRYRUN u config nosuch",
        "ACL DRYRUN u get",
        "ACL DRYRUN u config",
        "ACL SETUSER v on nopass -@all +select|0 +get ~a (+set ~b*)",
        "ACL DRYRUN v select 0",
        "ACL DRYRUN v select 1",
        "ACL DRYRUN v get a",
        "ACL DRYRUN v get b1",
        "ACL DRYRUN v set b1 x",
        "ACL DRYRUN v set a x",
        "ACL DRYRUN v hset b1 f v",
    ]);
}

#[test]
fn noperm_at_top_level_in_multi_and_in_scripts() {
    let s = Servers::start();
    let mut admin = s.pair();
    admin.check_str(
        "ACL SETUSER u on >p ~k* %R~r* &ch* +@all -flushall -config|set +select|0 -select",
    );
    let mut p = s.pair();
    p.script(&[
        "AUTH u p",
        "ACL WHOAMI",
        "GET k1",
        "GET x",
        "SET r1 v",
        "GET r1",
        "FLUSHALL",
        "CONFIG SET maxclients 10",
        "SELECT 0",
        "PUBLISH ch1 m",
        "PUBLISH x m",
        "SUBSCRIBE x",
        "PSUBSCRIBE ch1",
        // Denied while queueing: the transaction is doomed.
        "MULTI",
        "GET x",
        "SET k1 v",
        "EXEC",
        "MULTI",
        "SET k1 v",
        "GET k1",
        "EXEC",
        "EVAL \"return redis.call('get','x')\" 0",
        "EVAL \"return redis.pcall('flushall')\" 0",
        "EVAL \"return redis.pcall('set','r1','v')\" 0",
        "EVAL \"return redis.pcall('publish','x','m')\" 0",
        "EVAL \"return redis.call('set','k2','v')\" 0",
        // redis.acl_check_cmd: the caller's permissions, without logging.
        "EVAL \"return redis.acl_check_cmd('set','k1',1)\" 0",
        "EVAL \"return redis.acl_check_cmd('set','x',1)\" 0",
        "EVAL \"return redis.acl_check_cmd('flushall')\" 0",
        "EVAL \"return redis.acl_check_cmd('config','set','a','b')\" 0",
        "EVAL \"return redis.acl_check_cmd('config','nosuch')\" 0",
        "EVAL \"return redis.acl_check_cmd('nosuch')\" 0",
        "EVAL \"return redis.acl_check_cmd({})\" 0",
    ]);
    // Rules changed between queueing and EXEC.
    p.script(&["MULTI", "SET k1 v", "GET k1", "INCR k3"]);
    admin.check_str("ACL SETUSER u -get resetkeys ~k3");
    p.script(&["EXEC", "ACL LOG RESET", "SET x 1"]);
    p.script(&["HELLO 3 AUTH u wrong", "AUTH nosuch x", "AUTH default x"]);
    // The log: what was denied, in which context, by whom.
    let (r, z) = admin.both_str("ACL LOG");
    for reply in [&r, &z] {
        let log = parse_reply(reply);
        let entries = log.array();
        assert_eq!(entries.len(), 3, "{}", escape(reply));
        let fields: Vec<(String, String, String, String)> = entries
            .iter()
            .map(|e| {
                let f = |k: &str| String::from_utf8_lossy(e.field(k).unwrap().bulk()).into_owned();
                (f("reason"), f("context"), f("object"), f("username"))
            })
            .collect();
        assert_eq!(
            fields,
            vec![
                (
                    "auth".into(),
                    "toplevel".into(),
                    "AUTH".into(),
                    "nosuch".into()
                ),
                ("auth".into(), "toplevel".into(), "HELLO".into(), "u".into()),
                ("key".into(), "toplevel".into(), "x".into(), "u".into()),
            ]
        );
        let count = entries[0].field("count").unwrap().int();
        assert_eq!(count, 1);
    }
}

/// SORT's BY and GET patterns read keys no ACL check sees: Redis takes
/// them only from a user one of whose selectors allows the command and
/// reads every key (`allkeys`, `~*` or `%R~*`); a constant BY pattern
/// (no `*`) reads nothing and is always accepted.
#[test]
fn sort_patterns_need_read_access_to_every_key() {
    let s = Servers::start();
    let mut admin = s.pair();
    admin.script(&["SET v1 1", "SET w1 x", "LPUSH mylist 1", "SADD myset 1"]);
    let mut p = s.pair();
    for (i, rules) in [
        "(+sort ~mylist)",
        "(+sort ~mylist ~v*)",
        "(+sort ~mylist %W~*)",
        "(+sort ~mylist %R~*)",
        "+sort ~mylist ~*",
        "+sort allkeys",
        "+sort ~mylist (+get ~*)",
        "+sort +sort_ro +eval ~mylist ~myset ~dst (+sort_ro %R~*)",
    ]
    .iter()
    .enumerate()
    {
        admin.check_str(&format!("ACL SETUSER s{i} on nopass {rules}"));
        p.script(&[
            &format!("AUTH s{i} x"),
            "SORT mylist BY v*",
            "SORT mylist GET v*",
            "SORT mylist GET # BY nosort",
            "SORT mylist BY nosort GET w*",
            "SORT_RO mylist BY v* GET #",
            "SORT myset BY v*",
            "SORT mylist LIMIT 0 1 BY v*",
            "SORT mylist BY v* GET v* STORE dst",
            "EVAL \"return redis.pcall('sort','mylist','by','v*')\" 0",
        ]);
    }
}

#[test]
fn log_counts_and_contexts() {
    let s = Servers::start();
    let mut admin = s.pair();
    admin.check_str("ACL SETUSER u on nopass ~k* +@all");
    let mut p = s.pair();
    p.script(&[
        "AUTH u x",
        "GET x",
        "GET x",
        "GET x",
        "MULTI",
        "GET y",
        "DISCARD",
        "EVAL \"return redis.pcall('get','z')\" 0",
    ]);
    let (r, z) = admin.both_str("ACL LOG 10");
    for reply in [&r, &z] {
        let log = parse_reply(reply);
        let summary: Vec<(i64, String, String)> = log
            .array()
            .iter()
            .map(|e| {
                let f = |k: &str| String::from_utf8_lossy(e.field(k).unwrap().bulk()).into_owned();
                (e.field("count").unwrap().int(), f("context"), f("object"))
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, "lua".to_string(), "z".to_string()),
                (1, "multi".to_string(), "y".to_string()),
                (3, "toplevel".to_string(), "x".to_string()),
            ]
        );
    }
    admin.script(&["ACL LOG -1", "ACL LOG x", "ACL LOG RESET", "ACL LOG"]);
}

#[test]
fn auth_and_requirepass() {
    let s = Servers::start();
    let mut p = s.pair();
    p.script(&[
        "AUTH x",
        "AUTH default anything",
        "AUTH a b c",
        "ACL SETUSER alice on >pw +@all ~*",
        "ACL SETUSER off1 off >pw +@all ~*",
        "AUTH alice nope",
        "AUTH off1 pw",
        "AUTH alice pw",
        "ACL WHOAMI",
        "AUTH default x",
        "ACL WHOAMI",
        "CONFIG SET requirepass secret",
        "ACL LIST",
        "AUTH secret",
        "ACL WHOAMI",
        "RESET",
        "ACL WHOAMI",
        "GET a",
        "HELLO 2 AUTH alice nope",
        "AUTH alice pw",
        "ACL WHOAMI",
        "CONFIG SET requirepass \"\"",
        "ACL LIST",
    ]);
    let mut q = s.pair();
    q.script(&["GET a", "AUTH x"]);
}

/// Both servers closed the connection without answering a PING.
fn closed(p: &mut Pair) {
    for c in [&mut p.r, &mut p.z] {
        let _ = c.try_send(&encode_cmd(&[b"PING"]));
        let outcome = c.try_read_reply(std::time::Duration::from_secs(2));
        assert!(matches!(outcome, ReadOutcome::Closed), "still open");
    }
}

#[test]
fn deleted_and_killed_users_lose_their_clients() {
    let s = Servers::start();
    let mut admin = s.pair();
    admin.check_str("ACL SETUSER k1 on nopass +@all ~* &*");
    let mut a = s.pair();
    let mut b = s.pair();
    a.check_str("AUTH k1 x");
    b.check_str("AUTH k1 x");
    admin.script(&["CLIENT KILL USER nosuch", "CLIENT KILL USER k1"]);
    closed(&mut a);
    let mut c = s.pair();
    c.check_str("AUTH k1 x");
    // Disabling a user does not log its clients out (Redis 7.0).
    admin.check_str("ACL SETUSER k1 off");
    c.check_str("PING");
    admin.check_str("ACL DELUSER k1");
    closed(&mut c);
    // Deleting one's own user: the reply, then the close.
    admin.check_str("ACL SETUSER me on nopass +@all ~*");
    let mut d = s.pair();
    d.check_str("AUTH me x");
    d.check_raw_closes(&encode_cmd(&[b"ACL", b"DELUSER", b"me"]));
}

#[test]
fn revoked_channels_disconnect_subscribers() {
    let s = Servers::start();
    let mut admin = s.pair();
    admin.check_str("ACL SETUSER k2 on nopass +@all ~* &foo &bar");
    let mut a = s.pair();
    a.script(&["AUTH k2 x", "SUBSCRIBE foo"]);
    let mut b = s.pair();
    b.script(&["AUTH k2 x", "SUBSCRIBE bar"]);
    admin.check_str("ACL SETUSER k2 resetchannels &bar &baz");
    closed(&mut a);
    b.check_str("PING");
}

#[test]
fn user_lines_and_acl_file() {
    let dir = PrivateDir::new("acl");
    let file = dir.0.join("users.acl");
    std::fs::write(
        &file,
        "user alice on >pw ~a* +get\nuser default on nopass ~* &* +@all\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let z = ZwindowServer::start(&["--aclfile", path]);
    let mut c = z.conn();
    let list = c.cmd_str("ACL LIST");
    assert_eq!(
        parse_reply(&list)
            .array()
            .iter()
            .map(|e| String::from_utf8_lossy(e.bulk()).into_owned())
            .collect::<Vec<_>>(),
        vec![
            "user alice on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a* resetchannels -@all +get",
            "user default on nopass sanitize-payload ~* &* +@all",
        ]
    );
    assert_eq!(c.cmd_str("ACL SETUSER bob on nopass"), b"+OK\r\n");
    assert_eq!(c.cmd_str("ACL SAVE"), b"+OK\r\n");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved.contains("user bob on nopass sanitize-payload resetchannels -@all\n"),
        "{saved}"
    );
    std::fs::write(&file, "user carol on nopass\nbad line\n").unwrap();
    let err = c.cmd_str("ACL LOAD");
    assert!(
        err.starts_with(b"-ERR ") && err.ends_with(b"WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n"),
        "{}",
        escape(&err)
    );
    std::fs::write(&file, "user carol on nopass\n").unwrap();
    assert_eq!(c.cmd_str("ACL LOAD"), b"+OK\r\n");
    assert_eq!(
        c.cmd_str("ACL USERS"),
        b"*2\r\n$5\r\ncarol\r\n$7\r\ndefault\r\n"
    );
    drop(c);
    let z = ZwindowServer::start(&["--user", "alice on >pw ~* +@all", "--requirepass", "rp"]);
    let mut c = z.conn();
    assert_eq!(c.cmd_str("PING"), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(c.cmd_str("AUTH alice pw"), b"+OK\r\n");
    assert_eq!(c.cmd_str("AUTH rp"), b"+OK\r\n");
}

#[test]
fn resp3_replies() {
    let s = Servers::start();
    let mut p = s.pair();
    let (r, z) = p.both_str("HELLO 3");
    assert!(r.starts_with(b"%") && z.starts_with(b"%"));
    p.script(&[
        "ACL SETUSER bob on >x (+get ~b*) %R~r* &c",
        "ACL GETUSER bob",
        "ACL GETUSER nosuch",
        "ACL LIST",
        "ACL CAT",
        "AUTH bob wrong",
        "ACL DRYRUN bob get b",
        "ACL DRYRUN bob get x",
        "ACL LOG -1",
    ]);
    let (r, z) = p.both_str("ACL LOG");
    for reply in [&r, &z] {
        let log = parse_reply(reply);
        assert_eq!(log.array().len(), 1);
        assert_eq!(log.array()[0].field("reason").unwrap().bulk(), b"auth");
    }
}

/// Redis 7.2+ (here redis-server 8.0) keeps a selector's command and
/// category rules as given (each replacing an earlier rule about the same
/// command, category or `cmd|…`) and describes them after `+@all`/`-@all`,
/// where 7.0 rebuilt a folded description. Only the `commands` field is
/// compared: 8.0's flags (`sanitize-payload`) are another change.
#[test]
fn command_rules_are_kept_as_given_like_redis8() {
    let s = Servers::start_redis8(&[]);
    let (mut z, mut r) = (s.z.conn(), s.r.conn());
    for rules in [
        "+@all -@geo +geoadd -@set +@set -get +get -@hash",
        "+set +@hash -@geo +get +mget -hset",
        "-@all +memory|doctor +memory",
        "+@all +client|id",
        "+@all -client|kill",
        "-@all +select|0 +select|1 -select",
        "-@all +select|0 +select|0 +get +select|1",
        "+@all -config|set +config",
        "+@all -@string +incr -debug +debug|digest",
        "+@ALL -GET +@Hash -CONFIG|Get +config|SET",
        "-@all +debug|object +debug|segfault -debug +debug",
        "+@all -@all +get allcommands -set nocommands +ping",
    ] {
        let line = format!("ACL SETUSER x reset {rules}");
        assert_eq!(z.cmd_str(&line), r.cmd_str(&line), "{line}");
        let commands = |c: &mut RawConn| {
            let reply = parse_reply(&c.cmd_str("ACL GETUSER x"));
            reply.field("commands").map(|f| f.bulk().to_vec())
        };
        let (zc, rc) = (commands(&mut z), commands(&mut r));
        assert!(rc.is_some(), "{line}: no commands field from redis-server");
        assert_eq!(
            zc.as_deref().map(String::from_utf8_lossy),
            rc.as_deref().map(String::from_utf8_lossy),
            "{line}"
        );
    }
}

/// Redis 7.2+'s ACL LOAD: a client whose user the file still has stays
/// connected (and takes the new rules), one whose subscriptions the new
/// rules no longer allow is disconnected, and one whose user is gone is
/// too. Before, zwindow disconnected every client of every user but
/// `default` (Redis 7.0), which stopped Redis 8.0.2's `unit/acl` at "ACL
/// LOAD only disconnects affected clients".
#[test]
fn acl_load_disconnects_only_the_affected_clients() {
    let dir = PrivateDir::new("acl-load");
    let file = dir.0.join("users.acl");
    let rules = |doug: &str| {
        format!(
            "user alice on allcommands allkeys &* >alice\n\
             user doug on resetchannels {doug} +@all ~* >doug\n\
             user gone on nopass +@all ~*\n\
             user default on nopass ~* &* +@all\n"
        )
    };
    std::fs::write(&file, rules("&test*")).unwrap();
    let s = Servers::start_with(&["--aclfile", file.to_str().unwrap()]);
    let mut alice = s.pair();
    alice.script(&["AUTH alice alice", "SUBSCRIBE test1"]);
    let mut doug = s.pair();
    doug.script(&["AUTH doug doug", "SUBSCRIBE test1"]);
    let mut idle_doug = s.pair();
    idle_doug.check_str("AUTH doug doug");
    let mut gone = s.pair();
    gone.check_str("AUTH gone x");
    std::fs::write(
        &file,
        rules("&test").replace("user gone on nopass +@all ~*\n", ""),
    )
    .unwrap();
    let mut admin = s.pair();
    admin.check_str("ACL LOAD");
    admin.check_str("PUBLISH test1 test-message");
    // alice's rules did not change: she is still subscribed.
    let (z, r) = (alice.z.read_reply(), alice.r.read_reply());
    assert_eq!(z, r);
    assert_eq!(
        z,
        b"*3\r\n$7\r\nmessage\r\n$5\r\ntest1\r\n$12\r\ntest-message\r\n"
    );
    alice.check_str("PING");
    closed(&mut doug);
    closed(&mut gone);
    // doug without subscriptions stays, under his new rules.
    idle_doug.check_str("ACL WHOAMI");
    idle_doug.check_str("PUBLISH test1 x");
    idle_doug.check_str("PUBLISH test x");
}
