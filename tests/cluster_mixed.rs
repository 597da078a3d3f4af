//! Mixed clusters: zwindow and redis-server 7.0.15 nodes joined by
//! `redis-cli --cluster create` each way round (redis-server primaries
//! with zwindow replicas, zwindow primaries with redis-server replicas),
//! `--cluster check` clean; a SIGKILLed primary of either kind replaced by
//! its replica of the other kind within twice the node timeout, no
//! WAIT-acknowledged write lost; `--cluster reshard` with keys from a
//! zwindow primary to a redis-server one.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cluster::*;

/// The node timeout of the failover tests: failure detection and the
/// election must fit in twice it.
const FAILOVER_TIMEOUT: u64 = 3000;
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
