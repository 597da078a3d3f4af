//! A killed client is gone for the very next command, on either socket
//! path: Redis frees a client CLIENT KILL names at once, and one it frees
//! asynchronously (a subscriber whose channel permission an ACL SETUSER
//! revoked) before its event loop serves another command, so neither
//! CLIENT LIST, PUBLISH nor PUBSUB NUMSUB sees it afterwards. zwindow's
//! killed connection ends in its own task, which an idle or loaded server
//! may not have run yet when the killer's next command comes.
mod common;

use common::*;

const ROUNDS: usize = 30;

fn listed(list: &[u8], name: &str) -> Vec<u8> {
    let needle = format!("name={name} ");
    let found = String::from_utf8_lossy(list).contains(&needle);
    format!("{name} listed: {found}").into_bytes()
}

fn scenario(conn: &dyn Fn() -> RawConn) -> Vec<Vec<u8>> {
    let mut a = conn();
    let mut out = Vec::new();
    out.push(a.cmd_str("ACL SETUSER psuser on >pspass ~* +@all"));
    for _ in 0..ROUNDS {
        // An idle client, killed by id.
        let mut v = conn();
        v.cmd_str("CLIENT SETNAME victim");
        let id = parse_reply(&v.cmd_str("CLIENT ID")).int();
        out.push(a.cmd_str(&format!("CLIENT KILL ID {id}")));
        out.push(listed(&a.cmd_str("CLIENT LIST"), "victim"));
        // Killing it again finds nobody.
        out.push(a.cmd_str(&format!("CLIENT KILL ID {id}")));

        // An idle subscriber, killed by CLIENT KILL TYPE pubsub.
        let mut s = conn();
        s.cmd_str("CLIENT SETNAME listener");
        s.cmd_str("SUBSCRIBE news");
        out.push(a.cmd_str("CLIENT KILL TYPE pubsub"));
        out.push(a.cmd_str("PUBLISH news hello"));
        out.push(a.cmd_str("PUBSUB NUMSUB news"));
        out.push(listed(&a.cmd_str("CLIENT LIST"), "listener"));

        // A subscriber whose channel permission is revoked.
        out.push(a.cmd_str("ACL SETUSER psuser resetchannels &foo:1"));
        let mut d = conn();
        d.cmd_str("AUTH psuser pspass");
        d.cmd_str("CLIENT SETNAME deathrow");
        d.cmd_str("SUBSCRIBE foo:1");
        out.push(a.cmd_str("ACL SETUSER psuser resetchannels"));
        out.push(listed(&a.cmd_str("CLIENT LIST"), "deathrow"));
        out.push(a.cmd_str("PUBLISH foo:1 hello"));
        out.push(a.cmd_str("PUBSUB NUMSUB foo:1"));
    }
    out
}

fn check(path: &str, expected: &[Vec<u8>], got: &[Vec<u8>]) {
    assert_eq!(expected.len(), got.len(), "reply counts differ ({path})");
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        assert!(
            replies_equivalent(e, g),
            "reply {i} differs on --io-uring {path}\n  redis:   {}\n  zwindow: {}",
            escape(e),
            escape(g)
        );
    }
}

#[test]
fn a_killed_client_is_gone_for_the_next_command_on_both_paths() {
    let redis = RedisServer::start();
    let expected = scenario(&|| redis.conn());
    for path in ["no", "yes"] {
        let z = ZwindowServer::start(&["--io-uring", path]);
        let got = scenario(&|| z.conn());
        check(path, &expected, &got);
    }
}
