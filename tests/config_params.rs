//! `CONFIG GET *` lists the settings redis-server 8.0.2 lists, with its
//! defaults; the settings Redis 7.2–8.0 added check their values as 8.0.2
//! does (bounds, immutability, error texts).
mod common;

use common::*;

/// Settings whose value comes from how the harness starts each server
/// (its port, directory, address), not from a default.
const LAUNCH: &[&str] = &["port", "dir", "bind", "save", "appendonly", "daemonize"];

#[test]
fn config_get_all_names_and_defaults_match_redis8() {
    let s = Servers::start_redis8(&[]);
    let (mut z, mut r) = (s.z.conn(), s.r.conn());
    let zp = z.config_pairs("*");
    let rp = r.config_pairs("*");
    let names = |p: &[(String, String)]| p.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    let (zn, rn) = (names(&zp), names(&rp));
    let missing: Vec<_> = rn.iter().filter(|n| !zn.contains(n)).collect();
    let extra: Vec<_> = zn.iter().filter(|n| !rn.contains(n)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, extra {extra:?}"
    );
    let differ: Vec<_> = zp
        .iter()
        .zip(&rp)
        .filter(|((n, zv), (_, rv))| !LAUNCH.contains(&n.as_str()) && zv != rv)
        .map(|((n, zv), (_, rv))| format!("{n}: zwindow {zv:?}, redis {rv:?}"))
        .collect();
    assert!(differ.is_empty(), "defaults differ:\n{}", differ.join("\n"));
    // A hidden setting answers by its exact name only.
    assert_eq!(
        z.config_pairs("repl-rdb-channel"),
        r.config_pairs("repl-rdb-channel")
    );
}

#[test]
fn new_settings_check_values_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    // Pairs in hash order in Redis: compared as sets.
    p.check_unordered_str("CONFIG GET *cpulist*");
    p.script(&[
        "CONFIG SET server-cpulist 0",
        "CONFIG SET bio-cpulist 0",
        "CONFIG SET aof-rewrite-cpulist 0",
        "CONFIG SET bgsave-cpulist 0",
        "CONFIG SET hide-user-data-from-log maybe",
        "CONFIG SET hide-user-data-from-log yes",
        "CONFIG GET hide-user-data-from-log",
        "CONFIG SET locale-collate no_such_locale.X",
        "CONFIG SET locale-collate C",
        "CONFIG GET locale-collate",
        "CONFIG SET locale-collate \"\"",
        "CONFIG SET max-new-connections-per-cycle 0",
        "CONFIG SET max-new-connections-per-cycle 1001",
        "CONFIG SET max-new-connections-per-cycle x",
        "CONFIG SET max-new-connections-per-cycle 1000",
        "CONFIG SET max-new-tls-connections-per-cycle -1",
        "CONFIG SET max-new-tls-connections-per-cycle 5",
        "CONFIG GET max-new-connections-per-cycle",
        "CONFIG GET max-new-tls-connections-per-cycle",
        "CONFIG SET replica-full-sync-buffer-limit 1gb",
        "CONFIG SET replica-full-sync-buffer-limit -1",
        "CONFIG GET replica-full-sync-buffer-limit",
        "CONFIG SET cluster-announce-human-nodename \"node one\"",
        "CONFIG SET cluster-announce-human-nodename bad!name",
        "CONFIG SET cluster-announce-human-nodename a{b}",
        "CONFIG GET cluster-announce-human-nodename",
        "CONFIG SET cluster-compatibility-sample-ratio 101",
        "CONFIG SET cluster-compatibility-sample-ratio 0",
        "CONFIG SET repl-rdb-channel no",
        "CONFIG GET repl-rdb-channel",
        "CONFIG SET repl-rdb-channel yes",
    ]);
}

#[test]
fn sort_alpha_follows_locale_collate() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    p.script(&[
        "RPUSH l b B a A _ 1",
        "CONFIG SET locale-collate C",
        "SORT l ALPHA",
        "SORT l ALPHA DESC",
        "CONFIG SET locale-collate C.utf8",
        "SORT l ALPHA",
        "CONFIG GET locale-collate",
    ]);
}

/// `Cpus_allowed_list` of a process's main thread.
fn cpus_allowed(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn server_cpulist_pins_the_server_as_redis8() {
    let s = Servers::start_redis8(&["--server-cpulist", "0"]);
    assert_eq!(cpus_allowed(s.z.pid()), "0");
    assert_eq!(cpus_allowed(s.z.pid()), cpus_allowed(s.r.pid()));
    // Every thread the server started runs there too.
    for task in std::fs::read_dir(format!("/proc/{}/task", s.z.pid())).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        assert!(status.contains("Cpus_allowed_list:\t0\n"), "{status}");
    }
}

fn incompatible_ops(c: &mut RawConn) -> Option<String> {
    let info = String::from_utf8_lossy(&c.cmd_str("INFO stats")).into_owned();
    info.lines()
        .find(|l| l.starts_with("cluster_incompatible_ops:"))
        .map(str::to_string)
}

#[test]
fn cluster_incompatible_ops_counted_as_redis8() {
    let s = Servers::start_redis8(&[]);
    let mut p = s.pair();
    let check = |p: &mut Pair, what: &str| {
        assert_eq!(
            incompatible_ops(&mut p.z),
            incompatible_ops(&mut p.r),
            "{what}"
        );
    };
    check(&mut p, "ratio 0: no field");
    p.script(&[
        "SELECT 1",
        "SELECT 0",
        "CONFIG SET cluster-compatibility-sample-ratio 100",
    ]);
    check(&mut p, "after SELECT 1");
    let mut in_multi = false;
    for line in [
        "CONFIG RESETSTAT",
        "SELECT 1",
        "SELECT 0",
        "MSET a 1 b 2",
        "MSET {t}a 1 {t}b 2",
        "GET a",
        "SET k v",
        "MOVE k 1",
        "COPY a a2",
        "COPY a a DB 1",
        "SWAPDB 0 1",
        "SWAPDB 0 1",
        "SINTERSTORE d x y",
        "EXISTS a b",
        "PING",
        // EXEC's queue is checked as one; an EXEC without MULTI is not.
        "EXEC",
        "MULTI",
        "SET foo bar",
        "DEL bar",
        "EXEC",
        "MULTI",
        "SET {t}x 1",
        "DEL {t}y",
        "EXEC",
        // Scripts: `no-cluster` counts whatever the keys; a script's calls
        // are checked from its declared keys' slot, once per run.
        "EVAL \"#!lua flags=no-cluster\nreturn 1\" 0",
        "EVAL \"#!lua\nreturn 1\" 0",
        "EVAL \"redis.call('mset', KEYS[1], 0, KEYS[2], 0)\" 2 foo bar",
        "EVAL \"#!lua\nredis.call('mset', 'foo', 0, 'bar', 0)\" 0",
        "EVAL \"#!lua\nredis.call('set', 'foo', 0) redis.call('set', 'bar', 0)\" 0",
        "EVAL \"#!lua flags=allow-cross-slot-keys\nredis.call('set', 'foo', 0) redis.call('set', 'bar', 0)\" 0",
        "EVAL \"#!lua flags=allow-cross-slot-keys\nredis.call('mset', 'foo', 0, 'bar', 0) redis.call('mset', KEYS[1], 0, KEYS[2], 0)\" 2 foo bar{foo}",
        "EVAL \"#!lua\nredis.call('get', KEYS[1]) redis.call('get', 'bar')\" 1 foo",
        "MULTI",
        "EVAL \"return redis.call('mset', 'foo', 1, 'bar', 1)\" 0",
        "EXEC",
        "FUNCTION LOAD \"#!lua name=cl\nredis.register_function{function_name='nc', callback=function() return 1 end, flags={'no-cluster'}}\nredis.register_function{function_name='ok', callback=function() return 1 end}\"",
        "FCALL nc 0",
        "FCALL ok 0",
        // SORT: a BY or GET pattern whose keys may be in another slot.
        "RPUSH mylist 1 2 3",
        "SORT mylist BY weight_*",
        "SORT mylist BY weight{mylist}_*",
        "SORT mylist BY nosort",
        "SORT mylist BY weight{mylist}_* GET object_*",
        "SORT mylist BY weight{mylist}_* GET object{mylist}_* GET #",
    ] {
        p.check_str(line);
        // (INFO would be queued inside a transaction.)
        in_multi = (in_multi || line == "MULTI") && line != "EXEC";
        if !in_multi {
            check(&mut p, line);
        }
    }
}
