//! The replication family (REPLICAOF, SLAVEOF, FAILOVER, PSYNC, REPLCONF)
//! and MODULE, byte for byte against a standalone redis-server 7.0.15 in
//! RESP2 and RESP3 where no replica is involved; SYNC and PSYNC from a raw
//! client (tests/replicas.rs and tests/replica.rs run real replicas).

mod common;

use common::*;

const CASES: &[&str] = &[
    "REPLICAOF NO ONE",
    "REPLICAOF no one",
    "SLAVEOF NO ONE",
    "REPLICAOF NO TWO",
    "REPLICAOF localhost abc",
    "REPLICAOF localhost 70000",
    "REPLICAOF localhost -1",
    "REPLICAOF localhost",
    "REPLICAOF a b c",
    "SLAVEOF localhost 1x",
    "FAILOVER",
    "FAILOVER ABORT",
    "FAILOVER abort",
    "FAILOVER ABORT x",
    "FAILOVER TIMEOUT 0",
    "FAILOVER TIMEOUT -5",
    "FAILOVER TIMEOUT x",
    "FAILOVER TIMEOUT 10",
    "FAILOVER TIMEOUT 10 TIMEOUT 5",
    "FAILOVER TO h x",
    "FAILOVER TO h 1",
    "FAILOVER TO h",
    "FAILOVER TO h 1 TO h 2",
    "FAILOVER FORCE",
    "FAILOVER FORCE FORCE",
    "FAILOVER TO h 1 FORCE TIMEOUT 10",
    "FAILOVER foo",
    "PSYNC a",
    "PSYNC a b FAILOVER",
    "PSYNC a b failover x",
    "REPLCONF",
    "REPLCONF a",
    "REPLCONF listening-port 1",
    "REPLCONF listening-port x",
    "REPLCONF listening-port 1 capa eof capa psync2 capa other",
    "REPLCONF ip-address 1.2.3.4",
    "REPLCONF rdb-only 1",
    "REPLCONF rdb-only 2",
    "REPLCONF rdb-only x",
    "REPLCONF rdb-filter-only functions",
    "REPLCONF rdb-filter-only foo",
    "REPLCONF rdb-filter-only \"functions\\x20foo\"",
    "REPLCONF foo bar",
    "REPLCONF listening-port 1 foo",
    "MODULE LIST",
    "MODULE list",
    "MODULE HELP",
    "MODULE LOAD /nonexistent.so",
    "MODULE LOAD /nonexistent.so a b",
    "MODULE LOADEX /nonexistent.so CONFIG a b",
    "MODULE UNLOAD m",
    "MODULE LOAD",
    "MODULE UNLOAD",
    "MODULE UNLOAD a b",
    "MODULE LIST x",
    "MODULE foo",
    "MODULE",
];

#[test]
fn replication_and_module_replies_match_redis() {
    let s = Servers::start();
    for proto in ["2", "3"] {
        let mut p = s.pair_resp(proto);
        p.script(CASES);
        // ACK and GETACK answer nothing to a client that is not a replica.
        p.check_raw_session(&encode_cmd(&[b"REPLCONF", b"ACK", b"5"]));
        p.check_raw_session(&encode_cmd(&[b"REPLCONF", b"GETACK", b"*"]));
        p.check_raw_session(&encode_cmd(&[b"REPLCONF", b"capa", b"eof", b"ack", b"1"]));
        p.check_str("CONFIG GET enable-module-command");
        p.check_str("CONFIG SET enable-module-command yes");
        // Redis's NET_HOST_STR_LEN bounds an announced address.
        for len in [255, 256, 300] {
            let addr = vec![b'a'; len];
            p.check(&[b"REPLCONF", b"ip-address", &addr]);
        }
    }
}

#[test]
fn refusals_in_transactions_and_scripts_match_redis() {
    let s = Servers::start();
    let mut p = s.pair();
    // A protected command is rejected before queuing: EXEC then aborts.
    p.check_str("MULTI");
    p.check_str("MODULE LOAD /x");
    p.check_str("MODULE LIST");
    p.check_str("EXEC");
    p.check_str("MULTI");
    p.check_str("PSYNC a b");
    p.check_str("DISCARD");
    p.check_str("MULTI");
    p.check_str("REPLICAOF NO ONE");
    p.check_str("FAILOVER");
    p.check_str("EXEC");
    p.check_str("EVAL \"return redis.call('replicaof','no','one')\" 0");
    p.check_str("EVAL \"return redis.call('module','list')\" 0");
}

/// SYNC (the old protocol: the RDB as `$<len>`, no `+FULLRESYNC`) and
/// PSYNC from a client that announced no capability (`+FULLRESYNC id
/// offset`, then `$<len>`: a disk transfer, since it cannot take `$EOF:`),
/// as redis-cli --rdb and old replicas use them; ROLE then lists no
/// online replica until one acknowledges.
#[test]
fn sync_and_psync_send_the_dataset() {
    let z = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let mut c = z.conn();
    c.cmd_str("SET k v");
    for (line, fullresync) in [("SYNC", false), ("PSYNC ? -1", true)] {
        let mut r = z.conn();
        r.set_timeout(std::time::Duration::from_secs(10));
        let cmd = split_args(line);
        let args: Vec<&[u8]> = cmd.iter().map(|a| a.as_slice()).collect();
        r.send(&encode_cmd(&args));
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // Up to the RDB's header.
        while !got.windows(9).any(|w| w == b"REDIS0010") {
            use std::io::Read;
            let n = r.stream().read(&mut buf).expect("read the transfer");
            assert!(n > 0, "{line}: closed after {}", escape(&got));
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&got).into_owned();
        let text = text.trim_start_matches('\n');
        if fullresync {
            assert!(text.starts_with("+FULLRESYNC "), "{line}: {}", escape(&got));
            let first = text.lines().next().unwrap().trim_end();
            let id = first.split(' ').nth(1).unwrap();
            assert_eq!(id.len(), 40, "{first}");
        }
        let dollar = text.find('$').expect("a bulk transfer");
        assert!(
            text[dollar + 1..].starts_with(|ch: char| ch.is_ascii_digit()),
            "{line}: a `$<len>` transfer: {}",
            escape(&got)
        );
    }
    assert_eq!(c.cmd_str("PING"), b"+PONG\r\n");
}

#[test]
fn module_command_when_enabled() {
    // `yes`: Redis's UNLOAD text for a name never loaded; LOAD says zwindow
    // loads no modules (redis-server would try the file).
    let s = Servers::start_with(&["--enable-module-command", "yes"]);
    let mut p = s.pair();
    p.check_str("CONFIG GET enable-module-command");
    p.check_str("MODULE UNLOAD m");
    p.check_str("MODULE LIST");
    let r = p.z.cmd_str("MODULE LOAD /nonexistent.so");
    assert_eq!(
        r,
        b"-ERR Error loading the extension: zwindow does not load Redis modules.\r\n"
    );
    let r = p.z.cmd_str("MODULE LOADEX /nonexistent.so ARGS a");
    assert!(
        r.starts_with(b"-ERR Error loading the extension"),
        "{}",
        escape(&r)
    );
    // `local`: the tests connect over loopback, which `local` admits.
    let s = Servers::start_with(&["--enable-module-command", "local"]);
    let mut p = s.pair();
    p.check_str("CONFIG GET enable-module-command");
    p.check_str("MODULE UNLOAD m");
}

/// A client in WAIT (no replicas: it would wait forever) released by
/// CLIENT UNBLOCK (the count so far), CLIENT UNBLOCK … ERROR (an UNBLOCKED
/// error) and this server becoming a replica (an UNBLOCKED error, then
/// the connection closes): what redis-server 7.0.15 does.
#[test]
fn wait_ends_on_client_unblock_and_role_change_as_redis() {
    fn run(addr: std::net::SocketAddr, name: &str) -> Vec<String> {
        let mut seen = Vec::new();
        let mut admin = RawConn::connect(addr, name);
        for how in ["", "ERROR", "role"] {
            let mut w = RawConn::connect(addr, name);
            let id = parse_reply(&w.cmd_str("CLIENT ID")).int();
            w.send(&encode_cmd(&[b"WAIT", b"1", b"0"]));
            // WAIT is blocked once CLIENT LIST says so.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !String::from_utf8_lossy(&admin.cmd_str("CLIENT LIST")).contains("cmd=wait") {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{name}: WAIT not seen"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let by = if how == "role" {
                // A primary that is not there: the link never comes up.
                let port = free_port().to_string();
                admin.cmd(&[b"REPLICAOF", b"127.0.0.1", port.as_bytes()])
            } else {
                admin.cmd_str(&format!("CLIENT UNBLOCK {id} {how}"))
            };
            seen.push(format!(
                "{how}: {} -> {}",
                escape(&by),
                escape(&w.read_reply())
            ));
            if how == "role" {
                w.expect_closed();
                admin.cmd_str("REPLICAOF NO ONE");
            } else {
                assert_eq!(w.cmd_str("PING"), b"+PONG\r\n", "{name}");
            }
        }
        seen
    }
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    assert_eq!(run(z.addr(), "zwindow"), run(r.addr(), "redis-server"));
}
