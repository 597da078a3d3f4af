//! Mixed clusters: zwindow and redis-server 7.0.15 (and 8.0.2) nodes joined by
//! `redis-cli --cluster create` each way round (redis-server primaries
//! with zwindow replicas, zwindow primaries with redis-server replicas),
//! `--cluster check` clean; a SIGKILLed primary of either kind replaced by
//! its replica of the other kind within twice the node timeout, no
//! WAIT-acknowledged write lost; `--cluster reshard` with keys from a
//! zwindow primary to a redis-server one; `--cluster reshard` of 4000
//! slots from a zwindow to a redis-server primary and back under 50
//! writing connections, every acknowledged write read back (and the same
//! between redis-servers, the baseline); redis-py, ioredis and node-redis
//! cluster clients running the seed apps' sorted-set workloads across a
//! reshard and a failover, on zwindow and on redis-server.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::PrivateDir;
use common::cluster::*;

/// The node timeout of the failover tests: failure detection and the
/// election must fit in twice it. Redis's algorithm (which zwindow's bus
/// follows) takes up to 1.5 timeouts to mark a dead node failing (the
/// next ping goes out half a timeout after the last pong, and fails a
/// timeout later), then the FAIL's gossip and the election's own delay of
/// 0.5 to 1 s: at 3 s that was 4.3 to 5.6 s on an idle machine for either
/// kind of replica, and 6.2 s in a loaded CI run. At 5 s the bound holds
/// with a second to spare.
const FAILOVER_TIMEOUT: u64 = 5000;
/// The node timeout under the cluster clients' workloads: their failover
/// is compared with redis-server's, give or take one node timeout.
const CLIENTS_FAILOVER_TIMEOUT: u64 = 3000;
/// For tests not about failure detection: a loaded machine must not fail
/// nodes over under them.
const CALM_TIMEOUT: u64 = 15000;
/// How long one command may chase its slot (redirections, a dead owner).
const CALL_LIMIT: Duration = Duration::from_secs(30);

use Kind::{Redis as R, Zwindow as Z};

/// One test at a time: each runs six or more nodes and dozens of client
/// connections, and the failover bounds must not pay for a neighbour's load.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn assert_roles(cluster: &Cluster, primaries: Kind, replicas: Kind) {
    let members = cluster.members(0);
    for m in &members {
        let kind = cluster.nodes[cluster.index_of(m.port)].kind();
        let want = if m.primary { primaries } else { replicas };
        assert_eq!(kind, want, "{members:?}");
        if !m.primary {
            // A replica of the other kind's primary.
            let primary = members
                .iter()
                .find(|p| Some(&p.id) == m.replica_of.as_ref())
                .expect("its primary listed");
            assert_eq!(
                cluster.nodes[cluster.index_of(primary.port)].kind(),
                primaries
            );
        }
    }
    assert_eq!(members.iter().filter(|m| m.primary).count(), 3);
}

/// Writes `key:{n}` with WAIT 1 after each SET through `client` until
/// `stop`; the keys both acknowledged and replicated (WAIT said 1).
fn waited_writer(seeds: Vec<u16>, prefix: String, stop: Arc<AtomicBool>) -> Vec<String> {
    let mut client = ClusterClient::new(&seeds);
    let mut acked = Vec::new();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("{prefix}:{n}");
        n += 1;
        let Ok((port, reply)) = client.call(&[b"SET", key.as_bytes(), b"v"], CALL_LIMIT) else {
            continue;
        };
        if reply != b"+OK\r\n" {
            continue;
        }
        if let Ok(r) = client.call_on(port, &[b"WAIT", b"1", b"2000"])
            && r == b":1\r\n"
        {
            acked.push(key);
        }
    }
    acked
}

/// redis-cli --cluster create of `kinds` (primaries first), roles checked,
/// `--cluster check` clean; then writers with WAIT 1, a SIGKILLed primary
/// (the first), its replica promoted within twice the node timeout, and
/// every WAIT-acknowledged key there afterwards.
fn mixed_cluster_fails_over(primaries: Kind, replicas: Kind) {
    let _serial = serial();
    let kinds = [
        primaries, primaries, primaries, replicas, replicas, replicas,
    ];
    let mut cluster = Cluster::create(&kinds, 1, CALM_TIMEOUT);
    cluster.set_node_timeout(FAILOVER_TIMEOUT);
    assert_roles(&cluster, primaries, replicas);
    let (clean, shown) = cluster.check(0);
    assert!(clean, "{shown}");
    println!("{primaries:?} primaries, {replicas:?} replicas: --cluster check clean");

    let stop = Arc::new(AtomicBool::new(false));
    let seeds = cluster.live_ports();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (seeds, stop) = (seeds.clone(), stop.clone());
            std::thread::spawn(move || waited_writer(seeds, format!("w{w}"), stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));

    let victim = 0;
    let heir = cluster.replica_of(victim);
    cluster.kill(victim);
    let killed = Instant::now();
    let mut heir_conn = cluster.nodes[heir].conn();
    let mut promoted = None;
    wait_until(
        "the replica promoted, state ok everywhere",
        Duration::from_secs(30),
        || {
            if promoted.is_none() {
                let role = text(&heir_conn.cmd(&[b"INFO", b"replication"]));
                if role.contains("role:master") {
                    promoted = Some(killed.elapsed());
                }
            }
            match promoted {
                Some(_) => cluster.state_ok_everywhere(),
                None => Err(format!(
                    "the replica (port {}) is not a primary yet: {}",
                    cluster.nodes[heir].port(),
                    text(&heir_conn.cmd(&[b"CLUSTER", b"NODES"]))
                )),
            }
        },
    );
    let promoted = promoted.expect("promoted");
    let state_ok = killed.elapsed();
    println!(
        "{replicas:?} replica of a {primaries:?} primary: role:master {} ms, \
         cluster_state:ok everywhere {} ms after SIGKILL (node timeout {FAILOVER_TIMEOUT} ms)",
        promoted.as_millis(),
        state_ok.as_millis()
    );
    assert!(
        state_ok <= Duration::from_millis(2 * FAILOVER_TIMEOUT),
        "failover took {state_ok:?}, more than twice the node timeout"
    );

    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<String> = writers
        .into_iter()
        .flat_map(|w| w.join().expect("writer"))
        .collect();
    assert!(acked.len() > 20, "only {} writes acknowledged", acked.len());
    let mut reader = ClusterClient::new(&cluster.live_ports());
    let lost: Vec<&String> = acked
        .iter()
        .filter(|k| {
            let (_, v) = reader
                .call(&[b"GET", k.as_bytes()], CALL_LIMIT)
                .unwrap_or_else(|e| panic!("GET {k}: {e}"));
            v != b"$1\r\nv\r\n"
        })
        .collect();
    println!(
        "{} WAIT-acknowledged writes, {} lost",
        acked.len(),
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:?}");
}

#[test]
fn redis_server_primaries_zwindow_replicas_fail_over() {
    mixed_cluster_fails_over(R, Z);
}

#[test]
fn zwindow_primaries_redis_server_replicas_fail_over() {
    mixed_cluster_fails_over(Z, R);
}

/// The same with Redis 8.0.2, whose failover reads shard ids: a replica
/// of the other kind is in its primary's shard, so the observers move the
/// old primary's slots to it (`clusterMoveNodeSlots`).
#[test]
fn redis_8_primaries_zwindow_replicas_fail_over() {
    mixed_cluster_fails_over(Kind::Redis8, Z);
}

#[test]
fn zwindow_primaries_redis_8_replicas_fail_over() {
    mixed_cluster_fails_over(Z, Kind::Redis8);
}

/// The keys of 50 slots moved by `redis-cli --cluster reshard` from a
/// zwindow primary to a redis-server primary: zwindow's MIGRATE sends
/// RESTORE-ASKING, which the importing redis-server accepts (a plain
/// RESTORE it answers with MOVED back to the source).
#[test]
fn reshard_with_keys_from_zwindow_to_redis_server() {
    let _serial = serial();
    let cluster = Cluster::create(&[Z, R, Z], 0, CALM_TIMEOUT);
    let mut client = ClusterClient::new(&cluster.live_ports());
    // Slots 0..49 are the first node's (redis-cli gives it 0-5460).
    let mut keys = Vec::new();
    for i in 0..5000 {
        let key = format!("key:{i}");
        if key_slot(key.as_bytes()) < 50 {
            let (_, r) = client
                .call(&[b"SET", key.as_bytes(), b"v"], CALL_LIMIT)
                .expect("SET");
            assert_eq!(r, b"+OK\r\n");
            keys.push(key);
        }
    }
    assert!(keys.len() > 5, "{keys:?}");
    let (ok, shown) = cluster.reshard(0, 1, 50);
    assert!(ok, "{shown}");
    cluster.wait_check_clean();
    let mut r = cluster.nodes[1].conn();
    for k in &keys {
        assert_eq!(r.cmd(&[b"GET", k.as_bytes()]), b"$1\r\nv\r\n", "{k}");
    }
    println!(
        "{} keys of 50 slots moved zwindow -> redis-server",
        keys.len()
    );
}

/// What one load writer did: keys SET and sorted-set members ZADDed, each
/// acknowledged.
#[derive(Default)]
struct Written {
    keys: Vec<String>,
    members: Vec<(String, String)>,
    redirected: u64,
}

/// A cluster-aware writer: distinct keys and members of its own sorted
/// sets, until `stop`.
fn load_writer(seeds: Vec<u16>, w: String, stop: Arc<AtomicBool>) -> Written {
    let mut client = ClusterClient::new(&seeds);
    let mut done = Written::default();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = format!("k:{w}:{n}");
        let zset = format!("z:{w}:{}", n % 37);
        let member = format!("m{n}");
        let score = n.to_string();
        n += 1;
        if let Ok((_, r)) = client.call(&[b"SET", key.as_bytes(), score.as_bytes()], CALL_LIMIT) {
            assert_eq!(r, b"+OK\r\n", "SET {key}: {}", String::from_utf8_lossy(&r));
            done.keys.push(key);
        }
        let zadd: [&[u8]; 4] = [
            b"ZADD",
            zset.as_bytes(),
            score.as_bytes(),
            member.as_bytes(),
        ];
        if let Ok((_, r)) = client.call(&zadd, CALL_LIMIT) {
            // :0 when a retry (after a lost reply) found its own member.
            assert!(
                r == b":1\r\n" || r == b":0\r\n",
                "ZADD {zset}: {}",
                String::from_utf8_lossy(&r)
            );
            done.members.push((zset, member));
        }
        // Paced like an application's connection, so that the slots keep
        // few keys each and the reshard's time goes to moving slots.
        std::thread::sleep(Duration::from_millis(20));
    }
    done.redirected = client.moved + client.asked;
    done
}

/// `--cluster reshard` of 4000 slots from `from` to `to` while 50
/// connections write (keys named after `pass`); every acknowledged write
/// read back. Returns how many keys the pass made.
fn reshard_under_load(cluster: &Cluster, pass: usize, from: usize, to: usize) -> i64 {
    let stop = Arc::new(AtomicBool::new(false));
    let seeds = cluster.live_ports();
    let writers: Vec<_> = (0..50)
        .map(|w| {
            let (seeds, stop) = (seeds.clone(), stop.clone());
            std::thread::spawn(move || load_writer(seeds, format!("{pass}.{w}"), stop))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let started = Instant::now();
    let (ok, shown) = cluster.reshard(from, to, 4000);
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let written: Vec<Written> = writers
        .into_iter()
        .map(|w| w.join().expect("writer"))
        .collect();
    let tail: String = shown.lines().rev().take(20).collect::<Vec<_>>().join("\n");
    assert!(ok, "reshard failed:\n{tail}");
    cluster.wait_check_clean();

    let keys: usize = written.iter().map(|w| w.keys.len()).sum();
    let members: usize = written.iter().map(|w| w.members.len()).sum();
    let redirected: u64 = written.iter().map(|w| w.redirected).sum();
    let mut reader = ClusterClient::new(&cluster.live_ports());
    let mut missing = Vec::new();
    for w in &written {
        for k in &w.keys {
            let (_, r) = reader
                .call(&[b"EXISTS", k.as_bytes()], CALL_LIMIT)
                .unwrap_or_else(|e| panic!("EXISTS {k}: {e}"));
            if r != b":1\r\n" {
                missing.push(k.clone());
            }
        }
        for (z, m) in &w.members {
            let (_, r) = reader
                .call(&[b"ZSCORE", z.as_bytes(), m.as_bytes()], CALL_LIMIT)
                .unwrap_or_else(|e| panic!("ZSCORE {z}: {e}"));
            if r.starts_with(b"$-1") {
                missing.push(format!("{z} {m}"));
            }
        }
    }
    let zsets: usize = written
        .iter()
        .map(|w| {
            w.members
                .iter()
                .map(|(z, _)| z)
                .collect::<std::collections::HashSet<_>>()
                .len()
        })
        .sum();
    let (by_slot, dbsize) = cluster.count_keys();
    println!(
        "reshard of 4000 slots {:?} -> {:?} in {} ms under 50 writers: {keys} keys and \
         {members} members acknowledged ({redirected} MOVED/ASK followed), {} missing; \
         COUNTKEYSINSLOT total {by_slot}, DBSIZE total {dbsize}",
        cluster.nodes[from].kind(),
        cluster.nodes[to].kind(),
        took.as_millis(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "acknowledged writes missing: {:?}",
        &missing[..missing.len().min(20)]
    );
    assert!(
        keys > 500 && members > 500,
        "too little load: {keys} keys, {members} members"
    );
    assert_eq!(by_slot, dbsize);
    (keys + zsets) as i64
}

/// The long runs (minutes on a debug build) run on the epoll pass of
/// `.ci/test` only, as Redis's cluster suite does: nodes talk over the bus
/// and MIGRATE, which take the epoll path on either pass, and the clients'
/// socket path is covered by the shorter tests above on both.
fn on_the_epoll_pass(name: &str) -> bool {
    if common::io_uring_requested() == Some(true) {
        println!("{name} runs on the epoll pass (ZWINDOW_TEST_IO_URING=0 or unset)");
        return false;
    }
    true
}

/// 4000 slots moved by `--cluster reshard` from a zwindow primary to a
/// redis-server primary and then back, 50 connections writing throughout.
#[test]
fn reshard_between_zwindow_and_redis_server_under_load() {
    if !on_the_epoll_pass("the 4000-slot reshard") {
        return;
    }
    let _serial = serial();
    // Primaries: zwindow, redis-server, zwindow; replicas of both kinds.
    let cluster = Cluster::create(&[Z, R, Z, R, Z, Z], 1, CALM_TIMEOUT);
    let there = reshard_under_load(&cluster, 1, 0, 1);
    let back = reshard_under_load(&cluster, 2, 1, 0);
    assert_eq!(cluster.count_keys().0, there + back);
}

/// The baseline: the same reshard between two redis-server primaries.
#[test]
fn reshard_between_redis_servers_under_load() {
    if !on_the_epoll_pass("the redis-server reshard baseline") {
        return;
    }
    let _serial = serial();
    let cluster = Cluster::create(&[R; 6], 1, CALM_TIMEOUT);
    let made = reshard_under_load(&cluster, 1, 0, 1);
    assert_eq!(cluster.count_keys().0, made);
}

/// What one client library's workload reported (its JSON line).
#[derive(Debug)]
struct Report {
    client: String,
    ops: i64,
    errors: i64,
    error_windows: i64,
    line: String,
}

/// The integer after `"field":` in a flat JSON line.
fn json_int(line: &str, field: &str) -> i64 {
    let at = line
        .find(&format!("\"{field}\":"))
        .unwrap_or_else(|| panic!("no {field} in {line}"));
    let rest = line[at + field.len() + 3..].trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .unwrap_or_else(|_| panic!("{field} in {line}"))
}

/// The seed workloads through redis-py, ioredis and node-redis on a 3+3
/// cluster of `kind`, across a reshard (slots moved mid-run) and the
/// SIGKILL of a primary: what each library surfaced to the application.
fn client_workloads(kind: Kind) -> Vec<Report> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/test`, which creates .venv from tests/python/requirements.txt",
        python.display()
    );
    for package in ["ioredis", "redis"] {
        let dir = root.join("tests/node/node_modules").join(package);
        assert!(
            dir.exists(),
            "{} is missing: run `bash .ci/test` (npm ci --prefix tests/node)",
            dir.display()
        );
    }
    let mut cluster = Cluster::create(&[kind; 6], 1, CALM_TIMEOUT);
    cluster.set_node_timeout(CLIENTS_FAILOVER_TIMEOUT);
    let dir = PrivateDir::new("cluster-clients");
    let stop = dir.0.join("stop");
    let seeds: Vec<String> = cluster.live_ports().iter().map(u16::to_string).collect();
    let seeds = seeds.join(",");
    let spawn = |program: &std::path::Path, args: &[&str]| {
        std::process::Command::new(program)
            .args(args)
            .current_dir(root)
            .env("SEED_PORTS", &seeds)
            .env("STOP_FILE", &stop)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start a client workload")
    };
    let node = std::path::Path::new("node");
    let children = vec![
        spawn(&python, &["tests/python/cluster_workload.py"]),
        spawn(node, &["tests/node/cluster_workload.mjs", "ioredis"]),
        spawn(node, &["tests/node/cluster_workload.mjs", "node-redis"]),
    ];
    std::thread::sleep(Duration::from_secs(3));
    // Slots moved mid-run: the clients meet MOVED and ASK.
    let (ok, shown) = cluster.reshard(0, 1, 100);
    assert!(ok, "reshard: {shown}");
    // A primary dies mid-run: its replica takes over.
    let victim = 2;
    let heir = cluster.replica_of(victim);
    cluster.kill(victim);
    wait_until("the replica promoted", Duration::from_secs(30), || {
        let info = text(&cluster.nodes[heir].conn().cmd(&[b"INFO", b"replication"]));
        if info.contains("role:master") {
            cluster.state_ok_everywhere()
        } else {
            Err(info)
        }
    });
    std::thread::sleep(Duration::from_secs(3));
    std::fs::write(&stop, b"").expect("write the stop file");
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("a client workload");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let line = stdout
                .lines()
                .find(|l| l.starts_with('{'))
                .unwrap_or_else(|| {
                    panic!(
                        "no report ({}):\n{stdout}\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    )
                })
                .to_string();
            assert!(out.status.success(), "{line}");
            let client = line.split('"').nth(3).unwrap_or("?").to_string();
            Report {
                client,
                ops: json_int(&line, "ops"),
                errors: json_int(&line, "errors"),
                error_windows: json_int(&line, "error_windows"),
                line,
            }
        })
        .collect()
}

#[test]
fn cluster_clients_across_a_reshard_and_a_failover() {
    if !on_the_epoll_pass("the cluster clients' workloads") {
        return;
    }
    let _serial = serial();
    let zwindow = client_workloads(Z);
    let redis = client_workloads(R);
    for (z, r) in zwindow.iter().zip(&redis) {
        println!("zwindow:      {}", z.line);
        println!("redis-server: {}", r.line);
        assert_eq!(z.client, r.client);
        assert!(z.ops > 100, "{z:?}");
        println!(
            "{}: errors surfaced to the application: zwindow {} (in {} 100 ms windows, \
             {} ops), redis-server {} (in {} windows, {} ops)",
            z.client, z.errors, z.error_windows, z.ops, r.errors, r.error_windows, r.ops
        );
        // Counts follow each run's timing (how fast a debug zwindow
        // serves, when the election ends): what must hold is that zwindow's
        // errors last no longer than redis-server's, give or take one node
        // timeout.
        let slack = (CLIENTS_FAILOVER_TIMEOUT / 100) as i64;
        assert!(
            z.error_windows <= r.error_windows + slack,
            "{}: zwindow surfaced errors in {} 100 ms windows, redis-server in {}",
            z.client,
            z.error_windows,
            r.error_windows
        );
    }
}
