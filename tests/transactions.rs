//! Differential tests (zwindow vs redis-server 7.0) of MULTI, EXEC, DISCARD, WATCH and
//! UNWATCH, in RESP2 and RESP3: queueing and its errors, EXECABORT, runtime errors inside
//! EXEC, and WATCH aborts caused by a second connection writing between WATCH and EXEC,
//! by the watching connection itself, by FLUSHDB/FLUSHALL/SWAPDB and by key expiry.
//!
//! Each test drives two connections per server: `a` runs the transaction, `b` interferes.
mod common;

use std::time::Duration;

use common::*;

/// TTL given to keys that must expire during a test, and how far time moves to expire them
/// (zwindow: `DEBUG CLOCK ADVANCE`; redis-server: a real sleep).
const TTL_MS: u64 = 200;
const PAST_TTL_MS: u64 = 350;

fn servers() -> Servers {
    Servers::start_with(&["--enable-debug-command", "yes"])
}

/// A pair of connections speaking RESP2 or RESP3.
fn conn(s: &Servers, resp3: bool) -> Pair {
    let mut p = s.pair();
    if resp3 {
        // HELLO's reply carries the connection id, which differs between the servers.
        let (r, z) = p.both_str("HELLO 3");
        assert!(r.starts_with(b"%") && z.starts_with(b"%"), "HELLO 3 failed");
    }
    p
}

/// Lets keys with a `TTL_MS` TTL expire on both servers (through a connection of its own,
/// as the test's may be inside MULTI).
fn let_expire(s: &Servers) {
    let reply =
        s.z.conn()
            .cmd_str(&format!("DEBUG CLOCK ADVANCE {PAST_TTL_MS}"));
    assert!(
        reply.starts_with(b":"),
        "DEBUG CLOCK ADVANCE: {}",
        escape(&reply)
    );
    std::thread::sleep(Duration::from_millis(PAST_TTL_MS));
}

fn for_both_protocols(f: impl Fn(&Servers, bool)) {
    let s = servers();
    for resp3 in [false, true] {
        conn(&s, resp3).check_str("FLUSHALL");
        f(&s, resp3);
    }
}

#[test]
fn control_errors_and_queueing() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            "EXEC",
            "DISCARD",
            "UNWATCH",
            "WATCH",
            "MULTI x",
            // A rejected EXEC discards the transaction and the watches.
            "EXEC x",
            "WATCH k",
            "MULTI",
            "SET k 0",
            "EXEC x",
            "EXEC",
            "MULTI",
            "MULTI",
            "WATCH k",
            "SET k 1",
            "GET k",
            "EXEC",
            "EXEC",
            "GET k",
            // An empty transaction.
            "MULTI",
            "EXEC",
            // DISCARD drops the queue.
            "MULTI",
            "SET k 2",
            "DISCARD",
            "DISCARD",
            "GET k",
            // Lowercase names, and arguments that need binary safety.
            "multi",
            "set \"a b\" \"\\x00\\r\\n\"",
            "get \"a b\"",
            "exec",
        ]);
    });
}

#[test]
fn queueing_errors_abort_exec() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            "SET k before",
            // Unknown command.
            "MULTI",
            "SET k 1",
            "NOSUCHCOMMAND x y",
            "SET k 2",
            "EXEC",
            "GET k",
            // Wrong arity.
            "MULTI",
            "GET",
            "SET k 3",
            "EXEC",
            "GET k",
            // Unknown subcommand.
            "MULTI",
            "CLIENT NOSUCHSUB",
            "EXEC",
            // A command not allowed in a transaction.
            "MULTI",
            "SHUTDOWN",
            "EXEC",
            // DISCARD after an error works and clears it.
            "MULTI",
            "NOSUCHCOMMAND",
            "DISCARD",
            "MULTI",
            "SET k 4",
            "EXEC",
            "GET k",
            // The errors that run immediately (nested MULTI, WATCH) do not abort.
            "MULTI",
            "MULTI",
            "WATCH k",
            "SET k 5",
            "EXEC",
            "GET k",
        ]);
    });
}

#[test]
fn runtime_errors_stay_inside_exec() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            "MULTI",
            "SET k 1",
            "SET k v EX 0",
            "SET k v NX XX",
            "GET k",
            "SET k 2 GET",
            "ECHO hi",
            "PING",
            "EXEC",
            "GET k",
        ]);
    });
}

#[test]
fn exec_runs_select_and_connection_state_in_order() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            "MULTI",
            "SELECT 1",
            "SET k one",
            "GET k",
            "SELECT 0",
            "SET k zero",
            "SELECT 2",
            "EXEC",
            // The SELECT inside EXEC sticks.
            "GET k",
            "SELECT 1",
            "GET k",
            "SELECT 0",
            "GET k",
            "DBSIZE",
            // Whole-keyspace commands inside EXEC.
            "MULTI",
            "DBSIZE",
            "EXISTS k nosuch",
            "FLUSHDB",
            "DBSIZE",
            "EXEC",
        ]);
    });
}

#[test]
fn quit_and_reset_inside_multi() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&["WATCH w", "MULTI", "SET k 1", "RESET", "EXEC", "GET k"]);
        // RESET dropped the watch: a write to w no longer aborts.
        let mut b = conn(s, resp3);
        let mut a = conn(s, resp3);
        a.script(&["WATCH w", "MULTI"]);
        a.check_str("RESET");
        b.check_str("SET w 1");
        a.script(&["MULTI", "SET k 2", "EXEC", "GET k"]);
        // QUIT inside MULTI closes without running the queue.
        let (_, closed) = a.check_raw_session(b"MULTI\r\nSET q 1\r\nQUIT\r\n");
        assert!(closed);
        b.check_str("GET q");
    });
}

#[test]
fn watch_aborts_on_another_clients_write() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        // Untouched: runs.
        a.script(&["SET k 1", "WATCH k", "MULTI", "SET k 2", "EXEC", "GET k"]);
        // Touched by b between WATCH and EXEC: null reply, nothing runs.
        a.script(&["WATCH k", "GET k", "MULTI", "SET k 3"]);
        b.check_str("SET k 2");
        a.script(&["EXEC", "GET k"]);
        // Touched before MULTI counts too; a same-value write is still a write.
        a.check_str("WATCH k");
        b.check_str("SET k 2");
        a.script(&["MULTI", "SET k 4", "EXEC", "GET k"]);
        // Watching a key that does not exist, then b creates it.
        a.script(&["WATCH new", "MULTI", "PING"]);
        b.check_str("SET new x");
        a.script(&["EXEC"]);
        // Deleting a missing key is no write; a delete of an existing key is.
        a.script(&["WATCH missing", "MULTI", "PING"]);
        b.check_str("DEL missing");
        a.script(&["EXEC"]);
        a.script(&["WATCH new", "MULTI", "PING"]);
        b.check_str("DEL new");
        a.script(&["EXEC"]);
        // A write to another key, or to the same name in another database, is not.
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.script(&["SET other 1", "SELECT 3", "SET k 1", "SELECT 0"]);
        a.script(&["EXEC"]);
        // Several keys; only one touched; duplicates are fine.
        a.script(&["WATCH x y", "WATCH y z y", "MULTI", "PING"]);
        b.check_str("SET z 1");
        a.script(&["EXEC"]);
        // A failed EXEC drops the watches: the next transaction runs.
        b.check_str("SET z 2");
        a.script(&["MULTI", "PING", "EXEC"]);
        // Watching in another database.
        a.script(&["SELECT 5", "WATCH k", "SELECT 0", "MULTI", "PING"]);
        b.script(&["SELECT 5", "SET k v", "SELECT 0"]);
        a.script(&["EXEC"]);
    });
}

#[test]
fn watch_aborts_on_own_write() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            "WATCH w", "SET w 1", "MULTI", "GET w", "EXEC", "GET w",
            // Writes queued inside the transaction do not abort it.
            "WATCH w", "MULTI", "SET w 2", "SET w 3", "EXEC",
        ]);
    });
}

#[test]
fn unwatch_and_discard_drop_watches() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        a.script(&["WATCH k", "UNWATCH"]);
        b.check_str("SET k 1");
        a.script(&["MULTI", "PING", "EXEC"]);
        // UNWATCH after the write clears the dirty state too.
        a.check_str("WATCH k");
        b.check_str("SET k 2");
        a.script(&["UNWATCH", "MULTI", "PING", "EXEC"]);
        // DISCARD unwatches.
        a.script(&["WATCH k", "MULTI", "DISCARD"]);
        b.check_str("SET k 3");
        a.script(&["MULTI", "PING", "EXEC"]);
        // A rejected EXEC (wrong arity), even outside MULTI, unwatches.
        a.script(&["WATCH k", "EXEC x"]);
        b.check_str("SET k 5");
        a.script(&["MULTI", "PING", "EXEC"]);
        // UNWATCH inside MULTI is queued; the EXEC still sees the earlier write.
        a.script(&["WATCH k", "MULTI", "UNWATCH"]);
        b.check_str("SET k 4");
        a.script(&["EXEC"]);
    });
}

#[test]
fn watch_and_flushes() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        // FLUSHDB deleting a watched key aborts.
        a.script(&["SET k 1", "WATCH k", "MULTI", "PING"]);
        b.check_str("FLUSHDB");
        a.script(&["EXEC"]);
        // FLUSHDB with the watched key absent does not.
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.script(&["SET other 1", "FLUSHDB"]);
        a.script(&["EXEC"]);
        // FLUSHALL reaches other databases.
        a.script(&[
            "SELECT 2", "SET k 1", "WATCH k", "SELECT 0", "MULTI", "PING",
        ]);
        b.check_str("FLUSHALL");
        a.script(&["EXEC"]);
        // FLUSHDB of another database leaves the watch alone.
        a.script(&["SET k 1", "WATCH k", "MULTI", "PING"]);
        b.script(&["SELECT 4", "SET k 1", "FLUSHDB", "SELECT 0"]);
        a.script(&["EXEC"]);
    });
}

#[test]
fn watch_and_swapdb() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        // The watched key exists on one side of the swap.
        a.script(&["SET k 1", "WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.script(&["EXEC"]);
        // It now lives in db 1 only; watch it in db 0, where the swap brings it back.
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.script(&["EXEC"]);
        // Absent on both sides: no change.
        a.script(&["WATCH nothere", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.script(&["EXEC"]);
        // Swapping a database with itself changes nothing.
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 0");
        a.script(&["EXEC"]);
    });
}

#[test]
fn watched_key_expiring_before_exec_aborts() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        a.script(&[
            &format!("SET k v PX {TTL_MS}"),
            "WATCH k",
            "MULTI",
            "SET done 1",
        ]);
        let_expire(s);
        a.script(&["EXEC", "GET done", "EXISTS k"]);
    });
}

#[test]
fn watching_an_already_expired_key() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        // Expired before WATCH, nothing else happens: EXEC runs.
        a.check_str(&format!("SET k v PX {TTL_MS}"));
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING", "EXEC"]);
        // Expired before WATCH, then lazily deleted by another client's read: no change.
        a.check_str(&format!("SET k v PX {TTL_MS}"));
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("GET k");
        a.check_str("EXEC");
        // Expired before WATCH, then written by another client: aborts.
        a.check_str(&format!("SET k v PX {TTL_MS}"));
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("SET k fresh");
        a.script(&["EXEC", "GET k"]);
        // Expired before WATCH, then flushed: the flush deletes nothing live.
        a.check_str(&format!("SET k v PX {TTL_MS}"));
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("FLUSHDB");
        a.check_str("EXEC");
    });
}

#[test]
fn expired_keys_and_swapdb() {
    for_both_protocols(|s, resp3| {
        let mut a = conn(s, resp3);
        let mut b = conn(s, resp3);
        // Expired in db 0 and in db 1: swapping one expired key for another is no change.
        a.script(&[
            &format!("SET k v PX {TTL_MS}"),
            "SELECT 1",
            &format!("SET k v PX {TTL_MS}"),
            "SELECT 0",
        ]);
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.check_str("EXEC");
        a.check_str("FLUSHALL");
        // Absent in db 0, expired in db 1: the swap brings in an expired key, no change.
        a.script(&["SELECT 1", &format!("SET k v PX {TTL_MS}"), "SELECT 0"]);
        let_expire(s);
        a.script(&["WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.check_str("EXEC");
        a.check_str("FLUSHALL");
        // Live in db 0, expired in db 1: the live key goes away, abort.
        a.script(&["SELECT 1", &format!("SET k v PX {TTL_MS}"), "SELECT 0"]);
        let_expire(s);
        a.script(&["SET k live", "WATCH k", "MULTI", "PING"]);
        b.check_str("SWAPDB 0 1");
        a.check_str("EXEC");
    });
}

#[test]
fn command_info_and_docs_of_transaction_commands() {
    let s = servers();
    let mut a = s.pair();
    for name in ["multi", "exec", "discard", "watch", "unwatch"] {
        let reply = a.z.query(&[b"COMMAND", b"INFO", name.as_bytes()]);
        let info = &reply.array()[0].array();
        let (arity, first, last, step) = match name {
            "watch" => (-2, 1, -1, 1),
            _ => (1, 0, 0, 0),
        };
        assert_eq!(info[1].int(), arity, "{name} arity");
        assert_eq!(
            (info[3].int(), info[4].int(), info[5].int()),
            (first, last, step),
            "{name} key positions"
        );
    }
    a.check_str("COMMAND GETKEYS WATCH a b c");
}

#[test]
fn exec_rejected_before_auth() {
    let s = Servers::start_with(&["--requirepass", "pw"]);
    let mut a = s.pair();
    a.script(&[
        "EXEC", "DISCARD", "MULTI", "AUTH pw", "MULTI", "GET k", "EXEC",
    ]);
}
