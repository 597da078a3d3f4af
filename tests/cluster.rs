//! Cluster mode, as far as it is built (issue 33): the `cluster-*`
//! settings as redis-server 7.0.15 has them — names, aliases, defaults,
//! ranges, texts, mutability — in a config file and through CONFIG; and a
//! node started with `cluster-enabled yes` (no bus yet) side by side with
//! a redis-server started the same way: the CLUSTER subcommands, the
//! routing of keyed commands (MOVED, ASK, TRYAGAIN, CROSSSLOT,
//! CLUSTERDOWN, ASKING, MULTI/EXEC, scripts), nodes.conf saved, reloaded
//! and locked, redis-cli's cluster mode.

mod common;

use common::{PrivateDir, RawConn, RedisServer, ZwindowServer};

fn config(conn: &mut RawConn, line: &str) -> String {
    String::from_utf8_lossy(&conn.cmd_str(line)).into_owned()
}

#[test]
fn cluster_settings_as_redis() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start_binary(&common::redis8_server(), &[]);
    let mut zc = z.conn();
    let mut rc = r.conn();
    let defaults = rc.config_pairs("cluster-*");
    assert_eq!(
        defaults.len(),
        22,
        "redis-server 8.0.2's cluster-* settings"
    );
    assert_eq!(zc.config_pairs("cluster-*"), defaults);
    for line in [
        "CONFIG SET cluster-node-timeout 5000",
        "CONFIG SET cluster-node-timeout -1",
        "CONFIG SET cluster-node-timeout abc",
        "CONFIG SET cluster-enabled yes",
        "CONFIG SET cluster-enabled no",
        "CONFIG SET cluster-port 1234",
        "CONFIG SET cluster-config-file other.conf",
        "CONFIG SET cluster-announce-hostname bad_host",
        "CONFIG SET cluster-announce-hostname node-1.example",
        "CONFIG SET cluster-announce-ip 10.0.0.1",
        "CONFIG SET cluster-announce-port 70000",
        "CONFIG SET cluster-announce-bus-port 16380",
        "CONFIG SET cluster-preferred-endpoint-type HOSTNAME",
        "CONFIG SET cluster-preferred-endpoint-type nowhere",
        "CONFIG SET cluster-slave-validity-factor 5",
        "CONFIG GET cluster-replica-validity-factor",
        "CONFIG SET cluster-replica-no-failover maybe",
        "CONFIG SET cluster-slave-no-failover yes",
        "CONFIG SET cluster-link-sendbuf-limit 1mb",
        "CONFIG SET cluster-migration-barrier -2",
        "CONFIG SET cluster-require-full-coverage no cluster-allow-reads-when-down yes",
    ] {
        assert_eq!(config(&mut zc, line), config(&mut rc, line), "{line}");
    }
    let long = format!("CONFIG SET cluster-announce-hostname {}", "h".repeat(256));
    assert_eq!(config(&mut zc, &long), config(&mut rc, &long));
    assert_eq!(zc.config_pairs("cluster-*"), rc.config_pairs("cluster-*"));
}

/// A config file may carry cluster settings with cluster mode off (Redis
/// reads them and uses none).
#[test]
fn cluster_settings_in_a_config_file() {
    let dir = PrivateDir::new("cluster-conf");
    let file = dir.0.join("zwindow.conf");
    std::fs::write(
        &file,
        "cluster-enabled no\ncluster-config-file nodes-6379.conf\ncluster-node-timeout 5000\n\
         cluster-port 16379\ncluster-announce-hostname node-1\ncluster-slave-validity-factor 0\n",
    )
    .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
    cmd.arg(&file).args(["--bind", "127.0.0.1", "--port", "0"]);
    let z = ZwindowServer::start_command(cmd);
    let mut zc = z.conn();
    assert_eq!(
        config(&mut zc, "CONFIG GET cluster-node-timeout"),
        "*2\r\n$20\r\ncluster-node-timeout\r\n$4\r\n5000\r\n"
    );
    assert_eq!(
        config(&mut zc, "CONFIG GET cluster-replica-validity-factor"),
        "*2\r\n$31\r\ncluster-replica-validity-factor\r\n$1\r\n0\r\n"
    );
    assert!(config(&mut zc, "INFO cluster").contains("cluster_enabled:0"));
}

// ---------------------------------------------------------------------------
// Cluster mode on one node (no bus yet), beside redis-server 7.0.15 run the
// same way.
// ---------------------------------------------------------------------------

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/// A nodes.conf naming myself (A, slots 0-8191) and a node B at
/// 127.0.0.1:7999 serving 8192-16383, which nobody runs, in Redis 8.0's
/// form (shard ids): redis-server 8.0.2 given 7.0's form asserts on
/// SPUBLISH (`nodes_for_slot != NULL`: no shard known for its own slots).
fn two_node_conf() -> String {
    format!(
        "{A} 127.0.0.1:7000@17000,,tls-port=0,shard-id={S1} myself,master - 0 0 1 connected 0-8191\n\
         {B} 127.0.0.1:7999@17999,,tls-port=0,shard-id={S2} master - 0 0 2 connected 8192-16383\n\
         vars currentEpoch 2 lastVoteEpoch 0\n",
        S1 = "1".repeat(40),
        S2 = "2".repeat(40),
    )
}

/// A directory for the zwindow node and one for the redis-server node,
/// each with [`two_node_conf`].
fn two_node_dirs() -> (PrivateDir, PrivateDir) {
    let (zd, rd) = (PrivateDir::new("cluster-z"), PrivateDir::new("cluster-r"));
    for d in [&zd, &rd] {
        std::fs::write(d.0.join("nodes.conf"), two_node_conf()).unwrap();
    }
    (zd, rd)
}

/// A zwindow command line for a cluster node on `port` (`"0"`: any) in
/// `dir`, with the defaults for the rest.
fn cluster_command(dir: &PrivateDir, port: &str, extra: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"));
    cmd.args(["--bind", "127.0.0.1", "--port", port])
        .args(["--cluster-enabled", "yes"])
        .args(extra)
        .current_dir(&dir.0);
    cmd
}

/// A cluster-enabled zwindow running in `dir` (its nodes.conf there).
/// The node timeout is long so that redis-server, which has a bus, does not
/// flag the absent node B as failing while a test runs.
fn zwindow_node(dir: &PrivateDir, extra: &[&str]) -> ZwindowServer {
    let port = common::free_port().to_string();
    let mut cmd = cluster_command(dir, &port, &["--cluster-node-timeout", "60000"]);
    cmd.args(extra);
    ZwindowServer::start_command(cmd)
}

fn redis_node(dir: &PrivateDir, extra: &[&str]) -> RedisServer {
    let d = dir.0.to_string_lossy().into_owned();
    let mut args = vec![
        "--cluster-enabled",
        "yes",
        "--cluster-node-timeout",
        "60000",
        "--dir",
        &d,
    ];
    args.extend_from_slice(extra);
    // The oracle zwindow answers as: Redis 8.0.
    RedisServer::start_binary(&common::redis8_server(), &args)
}

fn wait_state(conn: &mut RawConn, state: &str) {
    let want = format!("cluster_state:{state}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let info = config(conn, "CLUSTER INFO");
        if info.contains(&want) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "never {want}: {info}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A reply with the node's own id and port replaced, so that two nodes'
/// replies compare.
fn normalized(reply: &[u8], myid: &str, port: u16) -> String {
    String::from_utf8_lossy(reply)
        .replace(myid, "<myid>")
        .replace(&format!("{}", u32::from(port) + 10000), "<cport>")
        .replace(&port.to_string(), "<port>")
}

struct Pair {
    z: RawConn,
    r: RawConn,
    zid: String,
    rid: String,
    zport: u16,
    rport: u16,
}

impl Pair {
    fn new(z: &ZwindowServer, r: &RedisServer) -> Pair {
        let mut zc = z.conn();
        let mut rc = r.conn();
        let id = |c: &mut RawConn| {
            String::from_utf8_lossy(c.query(&[b"CLUSTER", b"MYID"]).bulk()).into_owned()
        };
        let zid = id(&mut zc);
        let rid = id(&mut rc);
        Pair {
            z: zc,
            r: rc,
            zid,
            rid,
            zport: z.port(),
            rport: r.port(),
        }
    }

    /// Sends `args` to both; their replies, normalized, must be equal.
    fn same(&mut self, args: &[&[u8]]) -> String {
        let z = normalized(&self.z.cmd(args), &self.zid, self.zport);
        let r = normalized(&self.r.cmd(args), &self.rid, self.rport);
        assert_eq!(z, r, "{}", common::show_args(args));
        z
    }

    /// Waits until both nodes call the cluster ok.
    fn wait_ok(&mut self) {
        wait_state(&mut self.z, "ok");
        wait_state(&mut self.r, "ok");
    }

    fn same_str(&mut self, line: &str) -> String {
        let args = common::split_args(line);
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        self.same(&refs)
    }
}

#[test]
fn a_lone_node_given_every_slot_as_redis() {
    let (zd, rd) = (PrivateDir::new("cluster-z"), PrivateDir::new("cluster-r"));
    let z = zwindow_node(&zd, &[]);
    let r = redis_node(&rd, &[]);
    let mut p = Pair::new(&z, &r);
    // No slot served yet: nothing keyed runs.
    assert_eq!(
        p.same_str("GET foo"),
        "-CLUSTERDOWN Hash slot not served\r\n"
    );
    assert_eq!(
        p.same_str("SELECT 1"),
        "-ERR SELECT is not allowed in cluster mode\r\n"
    );
    for line in [
        "CLUSTER INFO",
        "INFO cluster",
        "GET foo",
        "SET foo bar",
        "PING",
        "DBSIZE",
        "SELECT 0",
        "SELECT 1",
        "SELECT 16",
        "SELECT x",
        "CLUSTER NODES",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER LINKS",
        "CLUSTER MYID x",
        "CLUSTER HELP",
        "CLUSTER NOSUCH",
        "CLUSTER KEYSLOT {user1000}.following",
        "CLUSTER KEYSLOT foo{}{bar}",
        "CLUSTER COUNTKEYSINSLOT 16384",
        "CLUSTER GETKEYSINSLOT 0 -1",
        "CLUSTER ADDSLOTS 16384",
        "CLUSTER ADDSLOTS 1 2 1",
        "CLUSTER ADDSLOTSRANGE 10 5",
        "CLUSTER ADDSLOTSRANGE 1 2 3",
        "CLUSTER DELSLOTS 5",
        "CLUSTER SETSLOT 5 MIGRATING x",
        "CLUSTER SETSLOT 5 IMPORTING x",
        "CLUSTER SETSLOT 5 NODE x",
        "CLUSTER SETSLOT 5 BOGUS",
        "CLUSTER FORGET x",
        "CLUSTER REPLICATE x",
        "CLUSTER REPLICAS x",
        "CLUSTER COUNT-FAILURE-REPORTS x",
        "CLUSTER FAILOVER",
        "CLUSTER FAILOVER NOW",
        "CLUSTER MEET 1.2.3.4 x",
        "CLUSTER MEET nohost 7000",
        "CLUSTER RESET MEDIUM",
        "CLUSTER SET-CONFIG-EPOCH -1",
        "CLUSTER BUMPEPOCH",
        "CLUSTER BUMPEPOCH",
        "CLUSTER SET-CONFIG-EPOCH 5",
        "ASKING",
        "READONLY",
        "READWRITE",
        "SWAPDB 0 1",
        "REPLICAOF 127.0.0.1 1",
        "SLAVEOF no one",
    ] {
        p.same_str(line);
    }
    // The announced address, hostname and flags follow CONFIG SET.
    for line in [
        "CONFIG SET cluster-announce-hostname host-1.example",
        "CONFIG SET cluster-announce-ip 10.1.2.3",
        "CONFIG SET cluster-announce-bus-port 20000",
        "CONFIG SET cluster-replica-no-failover yes",
    ] {
        p.same_str(line);
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    for line in ["CLUSTER NODES", "CLUSTER SHARDS"] {
        p.same_str(line);
    }
    // Every slot: the state turns ok (after Redis's delays).
    p.same_str("CLUSTER ADDSLOTSRANGE 0 8000 8001 16383");
    p.wait_ok();
    for line in [
        "CLUSTER INFO",
        "CLUSTER NODES",
        "CLUSTER SLOTS",
        "CLUSTER SHARDS",
        "CLUSTER ADDSLOTS 5",
        "SET foo bar",
        "GET foo",
        "MSET {u}a 1 {u}b 2 {u}c 3",
        "MSET a 1 b 2",
        "MGET {u}a {u}b x",
        "DEL foo bar",
        "CLUSTER COUNTKEYSINSLOT 12182",
        "CLUSTER COUNTKEYSINSLOT 16384",
        "CLUSTER COUNTKEYSINSLOT x",
        "CLUSTER GETKEYSINSLOT 12182 10",
        "CLUSTER GETKEYSINSLOT 12182 x",
        "CLUSTER GETKEYSINSLOT 16384 1",
        "SELECT 1",
        "MOVE foo 1",
        "RPUSH {s}l 3 1 2",
        "SORT {s}l",
        // Patterns follow Redis 8.0's slot rule: tests/sort.rs.
        "SORT {s}l BY nosort",
        "COPY {u}a {u}x DB 1",
        "COPY {u}a {u}x DB 0",
        "MULTI",
        "SET {u}a 5",
        "GET {u}b",
        "EXEC",
        "MULTI",
        "SET {u}a 5",
        "SET {v}a 5",
        "EXEC",
        "EVAL \"return redis.call('get', KEYS[1])\" 1 {u}a",
        "EVAL \"return redis.call('get', KEYS[1])\" 2 {u}a {v}a",
        "EVAL \"redis.call('get', '{u}a'); return redis.call('get', '{v}a')\" 0",
        "FLUSHALL",
        "CLUSTER FLUSHSLOTS",
        "SET foo bar",
        "CLUSTER DELSLOTSRANGE 0 100 200 300",
        "CLUSTER INFO",
        "CLUSTER DELSLOTS 150 100",
        "CLUSTER NODES",
        "SET x 1",
        "CLUSTER RESET",
        "FLUSHALL",
        "CLUSTER RESET SOFT",
        "CLUSTER INFO",
        "CLUSTER NODES",
    ] {
        p.same_str(line);
    }
    // CLUSTER in a transaction and in scripts, as Redis allows it.
    for line in [
        "MULTI",
        "CLUSTER KEYSLOT foo",
        "CLUSTER COUNTKEYSINSLOT 1",
        "ASKING",
        "EXEC",
        "EVAL \"return redis.call('cluster', 'keyslot', 'foo')\" 0",
        "EVAL \"return redis.call('cluster', 'reset')\" 0",
        "EVAL \"return redis.call('asking')\" 0",
        "EVAL \"return redis.call('readonly')\" 0",
        "EVAL \"return redis.call('select', 1)\" 0",
    ] {
        p.same_str(line);
    }
    let z_info = config(&mut p.z, "INFO server");
    assert!(z_info.contains("redis_mode:cluster"), "{z_info}");
    // A script with a #!lua line keeps its keys in one slot.
    let script = b"#!lua\nredis.call('get', '{u}a'); return redis.call('get', '{v}a')";
    p.same_str("CLUSTER ADDSLOTSRANGE 0 16383");
    p.wait_ok();
    p.same(&[b"EVAL", script, b"0"]);
    p.same(&[b"EVAL", b"#!lua flags=allow-cross-slot-keys\nredis.call('get', '{u}a'); return redis.call('get', '{v}a')", b"0"]);
    p.same(&[b"EVAL", b"#!lua flags=no-cluster\nreturn 1", b"0"]);
    // CLUSTER RESET HARD: a new name, epochs back to 0.
    let old = p.zid.clone();
    p.same_str("CLUSTER RESET HARD");
    let new = String::from_utf8_lossy(p.z.query(&[b"CLUSTER", b"MYID"]).bulk()).into_owned();
    assert_ne!(new, old);
}

#[test]
fn cluster_down_as_redis() {
    let (zd, rd) = (PrivateDir::new("cluster-z"), PrivateDir::new("cluster-r"));
    let z = zwindow_node(&zd, &[]);
    let r = redis_node(&rd, &[]);
    let mut p = Pair::new(&z, &r);
    // Half the slots: the served ones are down too (full coverage).
    p.same_str("CLUSTER ADDSLOTSRANGE 0 8191");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    for line in ["CLUSTER INFO", "GET a", "GET foo", "SET a 1", "PING"] {
        p.same_str(line);
    }
    for line in [
        "CONFIG SET cluster-allow-reads-when-down yes",
        "GET a",
        "SET a 1",
        "EVAL \"return redis.call('get', KEYS[1])\" 1 a",
        "CONFIG SET cluster-require-full-coverage no",
    ] {
        p.same_str(line);
    }
    p.wait_ok();
    for line in ["SET a 1", "GET a", "GET foo", "CLUSTER INFO"] {
        p.same_str(line);
    }
}

#[test]
fn redirections_to_a_node_named_in_nodes_conf() {
    let (zd, rd) = two_node_dirs();
    let z = zwindow_node(&zd, &[]);
    let r = redis_node(&rd, &[]);
    let mut p = Pair::new(&z, &r);
    assert_eq!((p.zid.as_str(), p.rid.as_str()), (A, A));
    p.wait_ok();
    assert_eq!(p.same_str("GET foo"), "-MOVED 12182 127.0.0.1:7999\r\n");
    let lines = [
        // foo is slot 12182 (B's), {b} 3300 and {c} 7365 (mine).
        "GET foo",
        "SET foo 1",
        "MGET foo {b}x",
        "SET {b}k1 v",
        "EXISTS {b}k1",
        "CLUSTER SLOTS",
        "CLUSTER COUNTKEYSINSLOT 3300",
        "CLUSTER GETKEYSINSLOT 3300 5",
        // Shard channels are routed as keys.
        "SPUBLISH foo hi",
        "SPUBLISH {b}ch hi",
        "SSUBSCRIBE foo",
        "SSUBSCRIBE {b}a {c}a",
        // A transaction with a key elsewhere: MOVED when queued, then
        // EXECABORT.
        "MULTI",
        "SET {b}k2 v",
        "GET foo",
        "EXEC",
        // Migrating 3300 to B: missing keys ask B, a mix must wait.
        "CLUSTER SETSLOT 3300 MIGRATING bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "GET {b}k1",
        "GET {b}nope",
        "MGET {b}k1 {b}nope",
        "MGET {b}nope {b}nope2",
        "EVAL \"return redis.call('get', KEYS[1])\" 1 {b}nope",
        "EVAL \"return redis.call('get', '{b}nope')\" 0",
        "CLUSTER SETSLOT 3300 NODE bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER SETSLOT 3300 STABLE",
        "CLUSTER SETSLOT 12182 MIGRATING bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER SETSLOT 3300 IMPORTING bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        // Importing 12182 from B: served only after ASKING, for one command.
        "CLUSTER SETSLOT 12182 IMPORTING bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "GET foo",
        "ASKING",
        "SET foo 1",
        "GET foo",
        "ASKING",
        "MGET foo {foo}nope",
        "ASKING",
        "MGET foo {foo}nope",
        "CLUSTER NODES",
        "CLUSTER COUNTKEYSINSLOT 12182",
        "CLUSTER SETSLOT 12182 NODE aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "GET foo",
        "CLUSTER INFO",
        "CLUSTER SETSLOT 100 NODE bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "GET {b}k1",
        "CLUSTER REPLICAS bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER COUNT-FAILURE-REPORTS bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER REPLICATE bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER SET-CONFIG-EPOCH 9",
        "CLUSTER FORGET aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "CLUSTER FORGET bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
        "CLUSTER INFO",
        "GET foo",
    ];
    for line in lines {
        // Redis's bus pings B: its message counters are not compared.
        if line == "CLUSTER INFO" {
            let head = |c: &mut RawConn| {
                let text =
                    String::from_utf8_lossy(c.query(&[b"CLUSTER", b"INFO"]).bulk()).into_owned();
                text.lines().take(9).collect::<Vec<_>>().join("\n")
            };
            assert_eq!(head(&mut p.z), head(&mut p.r));
            continue;
        }
        // Redis lists the nodes in its dict's order: compare as sets.
        if line == "CLUSTER NODES" {
            let sorted = |c: &mut RawConn| {
                let text =
                    String::from_utf8_lossy(c.query(&[b"CLUSTER", b"NODES"]).bulk()).into_owned();
                let mut lines: Vec<String> = text
                    .lines()
                    // The ping time Redis's bus stamps on B.
                    .map(|l| {
                        let mut w: Vec<&str> = l.split(' ').collect();
                        w[4] = "0";
                        w.join(" ")
                    })
                    .collect();
                lines.sort();
                lines
            };
            let (zl, rl) = (sorted(&mut p.z), sorted(&mut p.r));
            let zl: Vec<String> = zl
                .iter()
                .map(|l| normalized(l.as_bytes(), A, p.zport))
                .collect();
            let rl: Vec<String> = rl
                .iter()
                .map(|l| normalized(l.as_bytes(), A, p.rport))
                .collect();
            assert_eq!(zl, rl);
            continue;
        }
        let reply = p.same_str(line);
        // The texts themselves, so that a change on both sides shows.
        let expected = match line {
            "GET foo" | "SET foo 1" => Some(""),
            "MGET foo {b}x" => Some("-CROSSSLOT Keys in request don't hash to the same slot\r\n"),
            "GET {b}nope" => Some("-ASK 3300 127.0.0.1:7999\r\n"),
            "MGET {b}k1 {b}nope" => {
                Some("-TRYAGAIN Multiple keys request during rehashing of slot\r\n")
            }
            "EXEC" => Some("-EXECABORT Transaction discarded because of previous errors.\r\n"),
            _ => None,
        };
        if let Some(e) = expected.filter(|e| !e.is_empty()) {
            assert_eq!(reply, e, "{line}");
        }
    }
    // What was saved, as Redis saved it (bar B's ping time and the order).
    let saved = |d: &PrivateDir| {
        let mut lines: Vec<String> = std::fs::read_to_string(d.0.join("nodes.conf"))
            .unwrap()
            .lines()
            .map(|l| {
                let mut w: Vec<&str> = l.split(' ').collect();
                if w.len() > 4 && w[0] != "vars" {
                    w[4] = "0";
                    w[1] = "ADDR";
                }
                w.join(" ")
            })
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(saved(&zd), saved(&rd));
}

#[test]
fn nodes_conf_survives_a_restart_and_is_locked() {
    let dir = PrivateDir::new("cluster-restart");
    let mut z = zwindow_node(&dir, &[]);
    let mut c = z.conn();
    let myid = String::from_utf8_lossy(c.query(&[b"CLUSTER", b"MYID"]).bulk()).into_owned();
    assert_eq!(myid.len(), 40);
    assert!(
        z.log_tail()
            .contains(&format!("No cluster configuration found, I'm {myid}"))
    );
    config(&mut c, "CLUSTER ADDSLOTSRANGE 0 5000");
    config(&mut c, "CLUSTER SET-CONFIG-EPOCH 7");
    config(&mut c, "SET {x}a 1");
    let nodes = config(&mut c, "CLUSTER NODES");
    let conf = std::fs::read_to_string(dir.0.join("nodes.conf")).unwrap();
    let shard = String::from_utf8_lossy(c.query(&[b"CLUSTER", b"MYSHARDID"]).bulk()).into_owned();
    assert!(
        conf.starts_with(&format!(
            "{myid} :{}@{},,tls-port=0,shard-id={shard} myself,master - 0 0 7 connected 0-5000\n",
            z.port(),
            u32::from(z.port()) + 10000
        )),
        "{conf}"
    );
    assert!(
        conf.ends_with("vars currentEpoch 7 lastVoteEpoch 0\n"),
        "{conf}"
    );
    // A second server cannot use the same file while the first runs.
    let port = common::free_port().to_string();
    let cmd = cluster_command(&dir, &port, &[]);
    let refused = ZwindowServer::try_start_command(cmd)
        .err()
        .expect("two nodes on one nodes.conf");
    assert!(
        refused.contains("Sorry, the cluster configuration file nodes.conf is already used by a different Redis Cluster node. Please make sure that different nodes use different cluster configuration files."),
        "{refused}"
    );
    z.terminate(std::time::Duration::from_secs(5));
    // Restarted on its port: the same node.
    let port = z.port().to_string();
    let cmd = cluster_command(&dir, &port, &[]);
    let z2 = ZwindowServer::start_command(cmd);
    let mut c2 = z2.conn();
    assert_eq!(
        String::from_utf8_lossy(c2.query(&[b"CLUSTER", b"MYID"]).bulk()),
        myid
    );
    assert_eq!(config(&mut c2, "CLUSTER NODES"), nodes);
    assert_eq!(
        String::from_utf8_lossy(c2.query(&[b"CLUSTER", b"MYSHARDID"]).bulk()),
        shard
    );
    assert!(
        z2.log_tail()
            .contains(&format!("Node configuration loaded, I'm {myid}"))
    );
}

#[test]
fn a_bad_nodes_conf_stops_startup_as_redis() {
    let dir = PrivateDir::new("cluster-bad");
    std::fs::write(dir.0.join("nodes.conf"), "garbage line\n").unwrap();
    let cmd = cluster_command(&dir, "0", &[]);
    let refused = ZwindowServer::try_start_command(cmd)
        .err()
        .expect("a corrupted nodes.conf");
    assert!(
        refused.contains("Unrecoverable error: corrupted cluster config file."),
        "{refused}"
    );
}

#[test]
fn replicaof_in_the_config_stops_a_cluster_node() {
    let dir = PrivateDir::new("cluster-replicaof");
    let cmd = cluster_command(&dir, "0", &["--replicaof", "127.0.0.1", "1"]);
    let refused = ZwindowServer::try_start_command(cmd)
        .err()
        .expect("replicaof in cluster mode");
    assert!(
        refused.contains("replicaof directive not allowed in cluster mode"),
        "{refused}"
    );
}

#[test]
fn redis_cli_cluster_mode_against_a_lone_node() {
    let dir = PrivateDir::new("cluster-cli");
    let z = zwindow_node(&dir, &[]);
    let mut c = z.conn();
    config(&mut c, "CLUSTER ADDSLOTSRANGE 0 16383");
    wait_state(&mut c, "ok");
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-c", "-p", &z.port().to_string()])
            .args(args)
            .output()
            .expect("run redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(cli(&["SET", "foo", "bar"]), "OK");
    assert_eq!(cli(&["GET", "foo"]), "bar");
    assert_eq!(
        cli(&["MSET", "a", "1", "b", "2"]),
        "CROSSSLOT Keys in request don't hash to the same slot"
    );
    let check = std::process::Command::new("redis-cli")
        .args(["--cluster", "check", &format!("127.0.0.1:{}", z.port())])
        .output()
        .expect("run redis-cli --cluster check");
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
}

/// redis-py's `RedisCluster` (from the project's `.venv`, which `bash
/// .ci/test` creates) against a lone node serving every slot.
#[test]
fn redis_py_cluster_client_against_a_lone_node() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/test`, which creates .venv from tests/python/requirements.txt",
        python.display()
    );
    let dir = PrivateDir::new("cluster-py");
    let z = zwindow_node(&dir, &[]);
    let mut c = z.conn();
    config(&mut c, "CLUSTER ADDSLOTSRANGE 0 16383");
    wait_state(&mut c, "ok");
    let out = std::process::Command::new(&python)
        .arg(root.join("tests/python/cluster_smoke.py"))
        .env("ZWINDOW_PORT", z.port().to_string())
        .output()
        .expect("run python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}\n{}\n--- zwindow log ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        z.log_tail()
    );
}

/// A dataset saved by a standalone server, with keys in slots 3300
/// (`{b}x`) and 12182 (`foo`), and in database 1 if `db1`.
fn saved_dataset(db1: bool) -> Vec<u8> {
    let z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    config(&mut c, "SET foo 1");
    config(&mut c, "SET {b}x 2");
    if db1 {
        config(&mut c, "SELECT 1");
        config(&mut c, "SET other 3");
    }
    assert_eq!(config(&mut c, "SAVE"), "+OK\r\n");
    std::fs::read(z.dir().join("dump.rdb")).unwrap()
}

#[test]
fn keys_loaded_claim_their_slots_as_redis() {
    let rdb = saved_dataset(false);
    // A new node takes the slots it has keys for; one whose nodes.conf
    // gives a slot to another node imports it.
    for conf in [None, Some(two_node_conf())] {
        let (zd, rd) = (PrivateDir::new("cluster-z"), PrivateDir::new("cluster-r"));
        for d in [&zd, &rd] {
            std::fs::write(d.0.join("dump.rdb"), &rdb).unwrap();
            if let Some(conf) = &conf {
                std::fs::write(d.0.join("nodes.conf"), conf).unwrap();
            }
        }
        let z = zwindow_node(&zd, &[]);
        let r = redis_node(&rd, &["--save", "900 1"]);
        let mut p = Pair::new(&z, &r);
        let mine = |c: &mut RawConn, id: &str| {
            let text =
                String::from_utf8_lossy(c.query(&[b"CLUSTER", b"NODES"]).bulk()).into_owned();
            let line = text
                .lines()
                .find(|l| l.starts_with(id))
                .unwrap()
                .to_string();
            line.split(' ').skip(8).collect::<Vec<_>>().join(" ")
        };
        let (zid, rid) = (p.zid.clone(), p.rid.clone());
        assert_eq!(mine(&mut p.z, &zid), mine(&mut p.r, &rid));
        p.same_str("CLUSTER COUNTKEYSINSLOT 12182");
        if conf.is_none() {
            assert_eq!(mine(&mut p.z, &zid), "3300 12182");
        } else {
            assert!(
                mine(&mut p.z, &zid)
                    .ends_with("[12182-<-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb]")
            );
        }
    }
    // Keys outside database 0 stop a cluster node: Redis 8.0 gives it one
    // database, so the file names a database it does not have.
    let dir = PrivateDir::new("cluster-db1");
    std::fs::write(dir.0.join("dump.rdb"), saved_dataset(true)).unwrap();
    let cmd = cluster_command(&dir, "0", &[]);
    // It listens first (as Redis answers -LOADING), then stops once loaded.
    let refused = match ZwindowServer::try_start_command(cmd) {
        Err(log) => log,
        Ok(mut z) => {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while z.is_running() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            assert!(!z.is_running(), "a cluster node loaded keys of database 1");
            z.log_tail()
        }
    };
    assert!(
        refused.contains(
            "Data file was created with a Redis server configured to handle more than 1 databases"
        ),
        "{refused}"
    );
}

#[test]
fn blocked_clients_follow_their_slot_as_redis() {
    let (zd, rd) = two_node_dirs();
    let z = zwindow_node(&zd, &[]);
    let r = redis_node(&rd, &[]);
    let mut p = Pair::new(&z, &r);
    p.wait_ok();
    // Blocked on {b}l (slot 3300) and {c}l (slot 7365), both mine.
    let mut zb = z.conn();
    let mut rb = r.conn();
    let mut zc = z.conn();
    let mut rc = r.conn();
    for (c, key) in [
        (&mut zb, "{b}l"),
        (&mut rb, "{b}l"),
        (&mut zc, "{c}l"),
        (&mut rc, "{c}l"),
    ] {
        c.send(&common::encode_cmd(&[b"BLPOP", key.as_bytes(), b"0"]));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // 3300 goes to B: its waiter is sent there (Redis's clients' cron
    // checks each client about once a second).
    p.same_str("CLUSTER SETSLOT 3300 NODE bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    zb.set_timeout(std::time::Duration::from_secs(5));
    rb.set_timeout(std::time::Duration::from_secs(5));
    let (zr, rr) = (zb.read_reply(), rb.read_reply());
    assert_eq!(zr, rr);
    assert_eq!(zr, b"-MOVED 3300 127.0.0.1:7999\r\n");
    // Slot 100 unbound: the cluster is down, every wait ends.
    p.same_str("CLUSTER DELSLOTS 100");
    zc.set_timeout(std::time::Duration::from_secs(5));
    rc.set_timeout(std::time::Duration::from_secs(5));
    let (zr, rr) = (zc.read_reply(), rc.read_reply());
    assert_eq!(zr, rr);
    assert_eq!(zr, b"-CLUSTERDOWN The cluster is down\r\n");
    // The connections go on.
    assert_eq!(zb.cmd(&[b"PING"]), b"+PONG\r\n");
    assert_eq!(
        zc.cmd(&[b"BLPOP", b"{c}l", b"0"]),
        rc.cmd(&[b"BLPOP", b"{c}l", b"0"])
    );
    p.same_str("INFO errorstats");
}

/// `CLUSTER KEYSLOT` of 5000 seeded random keys, binary and brace-laden
/// (hash tags, empty tags, nested and unclosed braces), pipelined to a
/// zwindow node and a redis-server node: the same slot for every key.
#[test]
fn keyslot_of_random_keys_as_redis() {
    let zdir = PrivateDir::new("cluster-keyslot-z");
    let rdir = PrivateDir::new("cluster-keyslot-r");
    let z = zwindow_node(&zdir, &[]);
    let r = redis_node(&rdir, &[]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let keys: Vec<Vec<u8>> = (0..5000)
        .map(|_| {
            let len = (next() % 24) as usize;
            (0..len)
                .map(|_| match next() % 8 {
                    0 => b'{',
                    1 => b'}',
                    _ => (next() % 256) as u8,
                })
                .collect()
        })
        .collect();
    let slots = |conn: &mut RawConn| -> Vec<Vec<u8>> {
        let mut pipeline = Vec::new();
        for k in &keys {
            pipeline.extend(common::encode_cmd(&[b"CLUSTER", b"KEYSLOT", k]));
        }
        conn.send(&pipeline);
        keys.iter().map(|_| conn.read_reply()).collect()
    };
    let (zs, rs) = (slots(&mut z.conn()), slots(&mut r.conn()));
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(zs[i], rs[i], "CLUSTER KEYSLOT {}", common::escape(k));
    }
}
