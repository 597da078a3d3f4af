//! Cluster mode, as far as it is built (issue 33): the `cluster-*`
//! settings as redis-server 7.0.15 has them — names, aliases, defaults,
//! ranges, texts, mutability — in a config file and through CONFIG.

mod common;

use common::{PrivateDir, RawConn, RedisServer, ZwindowServer};

fn config(conn: &mut RawConn, line: &str) -> String {
    String::from_utf8_lossy(&conn.cmd_str(line)).into_owned()
}

#[test]
fn cluster_settings_as_redis() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let mut zc = z.conn();
    let mut rc = r.conn();
    let defaults = rc.config_pairs("cluster-*");
    assert_eq!(
        defaults.len(),
        20,
        "redis-server 7.0.15's cluster-* settings"
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
