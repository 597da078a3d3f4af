//! Replication over TLS (`tls-replication yes`), with redis-server 7.0.15
//! (Debian's, built with TLS) on either side and the suite's certificates
//! (`common::tls_certs`): a zwindow replica of a zwindow primary and of a
//! redis-server one, a redis-server replica of a zwindow primary, full
//! sync (diskless and through the file), the stream and `+CONTINUE`, all
//! on the primaries' `tls-port`; the port a TLS replica announces; and
//! links that must not come up: a client certificate the primary's CA did
//! not sign (`tls-auth-clients yes`), a primary whose certificate the
//! replica's CA did not sign, a plain-text replica on the TLS port, each
//! beside a redis-server replica in the same place, and `CONFIG SET` of
//! the settings bringing the link up at its next connection.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::dataset::{assert_same, contents, ok, populate};
use common::repl::{digest, eventually, info_field, settle};
use common::*;

fn link_status(c: &mut RawConn) -> String {
    info_field(c, "replication", "master_link_status")
}

/// The suite's TLS arguments with `tls-port` `port`, replication over
/// TLS, then `extra`.
fn tls_args(certs: &Path, port: u16, extra: &[&str]) -> Vec<String> {
    let mut args = tls_server_args(certs, port);
    args.extend(
        [
            "--tls-replication",
            "yes",
            "--enable-debug-command",
            "yes",
            "--repl-diskless-sync-delay",
            "0",
        ]
        .iter()
        .chain(extra)
        .map(|s| s.to_string()),
    );
    args
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A zwindow with TLS and `tls-replication yes`, and its `tls-port`.
fn zwindow(certs: &Path, extra: &[&str]) -> (ZwindowServer, u16) {
    start_on_free_port(|port| ZwindowServer::try_start(&strs(&tls_args(certs, port, extra))))
}

/// The same for redis-server 7.0.15.
fn redis(certs: &Path, extra: &[&str]) -> (RedisServer, u16) {
    start_on_free_port(|port| RedisServer::try_start_with(&strs(&tls_args(certs, port, extra))))
}

/// Writes after the full sync: every kind the stream carries.
fn more_writes(c: &mut RawConn, round: u32) {
    for line in [
        format!("SET after{round} 1"),
        format!("INCRBY after{round} 41"),
        "LPUSH biglist new".into(),
        "SELECT 5".into(),
        format!("HSET h5 a {round} b 2"),
        "SELECT 0".into(),
        "MULTI".into(),
        "SADD strset d".into(),
        "ZINCRBY smallz 1 a".into(),
        "EXEC".into(),
        "EVAL \"redis.call('set', KEYS[1], 'lua'); return redis.call('incr', KEYS[2])\" 2 luakey luactr".into(),
        "SPOP bigset 3".into(),
        "SET px v PX 100000".into(),
        format!("XADD st {}-0 z 1", 10 + round),
    ] {
        ok(c, &line);
    }
    // Past a TLS record (16 KB) several times over, in one command.
    let big = vec![b'y'; 200_000];
    assert_eq!(c.cmd(&[b"SET", b"bigafter", &big]), b"+OK\r\n");
}

/// The primary's view of its one replica: INFO's `slave0` port and state,
/// and the port ROLE lists.
fn replica_port_seen(primary: &mut RawConn) -> (String, String) {
    let slave0 = info_field(primary, "replication", "slave0");
    let port = slave0
        .split(',')
        .find_map(|kv| kv.strip_prefix("port="))
        .unwrap_or("")
        .to_string();
    let role = parse_reply(&primary.cmd_str("ROLE"));
    let listed = role.array()[2].array()[0].array()[1].bulk().to_vec();
    (port, String::from_utf8_lossy(&listed).into_owned())
}

/// The replica's link, from its primary's side: the connection flagged
/// `S` in CLIENT LIST reached `tls_port`.
fn replica_on_port(primary: &mut RawConn, tls_port: u16) -> bool {
    let list = String::from_utf8_lossy(&primary.cmd_str("CLIENT LIST")).into_owned();
    list.lines()
        .any(|l| l.contains(" flags=S ") && l.contains(&format!(" laddr=127.0.0.1:{tls_port} ")))
}

/// A zwindow replica over TLS of `primary` (whose `tls-port` is
/// `primary_tls`): the full sync, the stream, INFO and ROLE on both
/// sides, then the link cut and continued (`+CONTINUE`), all equal by
/// DEBUG DIGEST.
fn zwindow_replica_of(
    certs: &Path,
    primary: &mut RawConn,
    primary_tls: u16,
    replica_extra: &[&str],
) {
    populate(primary);
    let p = primary_tls.to_string();
    let mut extra = vec!["--replicaof", "127.0.0.1", &p];
    extra.extend_from_slice(replica_extra);
    let (replica, replica_tls) = zwindow(certs, &extra);
    let mut rc = replica.conn();
    eventually("the replica's link over TLS", || {
        link_status(&mut rc) == "up"
    });
    more_writes(primary, 1);
    settle(primary, &mut [&mut rc]);
    assert_same(&contents(primary), &contents(&mut rc));
    assert_eq!(digest(primary), digest(&mut rc), "DEBUG DIGEST");
    assert_eq!(info_field(primary, "stats", "sync_full"), "1");
    assert!(
        replica_on_port(primary, primary_tls),
        "replica not on tls-port"
    );
    // Redis's `slaveGetPortStr`: a TLS replica announces its tls-port.
    let announced = replica_tls.to_string();
    assert_eq!(
        replica_port_seen(primary),
        (announced.clone(), announced),
        "the replica's port on the primary"
    );
    assert_eq!(info_field(&mut rc, "replication", "master_port"), p);
    // The link cut from the replica's side: it continues over TLS.
    ok(&mut rc, "CLIENT KILL TYPE master");
    eventually("the link back", || {
        link_status(&mut rc) == "up" && info_field(primary, "stats", "sync_partial_ok") == "1"
    });
    more_writes(primary, 2);
    settle(primary, &mut [&mut rc]);
    assert_eq!(
        digest(primary),
        digest(&mut rc),
        "DEBUG DIGEST after +CONTINUE"
    );
    assert_eq!(info_field(primary, "stats", "sync_full"), "1");
    assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
}

#[test]
fn a_zwindow_replica_of_zwindow_over_tls_diskless() {
    let certs = tls_certs();
    let (p, tls) = zwindow(&certs, &["--repl-diskless-sync", "yes"]);
    zwindow_replica_of(
        &certs,
        &mut p.conn(),
        tls,
        &["--repl-diskless-load", "swapdb"],
    );
}

#[test]
fn a_zwindow_replica_of_zwindow_over_tls_through_the_file() {
    let certs = tls_certs();
    let (p, tls) = zwindow(&certs, &["--repl-diskless-sync", "no"]);
    zwindow_replica_of(&certs, &mut p.conn(), tls, &[]);
}

#[test]
fn a_zwindow_replica_of_redis_over_tls_diskless() {
    let certs = tls_certs();
    let (p, tls) = redis(&certs, &["--repl-diskless-sync", "yes"]);
    zwindow_replica_of(&certs, &mut p.conn(), tls, &[]);
}

#[test]
fn a_zwindow_replica_of_redis_over_tls_through_the_file() {
    let certs = tls_certs();
    let (p, tls) = redis(&certs, &["--repl-diskless-sync", "no"]);
    zwindow_replica_of(
        &certs,
        &mut p.conn(),
        tls,
        &["--repl-diskless-load", "swapdb"],
    );
}

/// A redis-server replica over TLS of a zwindow primary, beside one of a
/// redis-server primary: the same ports seen, the data equal.
#[test]
fn a_redis_replica_of_zwindow_over_tls() {
    let certs = tls_certs();
    for diskless in ["yes", "no"] {
        let (z, z_tls) = zwindow(&certs, &["--repl-diskless-sync", diskless]);
        let mut zc = z.conn();
        populate(&mut zc);
        let p = z_tls.to_string();
        let (r, r_tls) = redis(&certs, &["--replicaof", "127.0.0.1", &p]);
        let mut rc = r.conn();
        eventually("the redis replica's link", || link_status(&mut rc) == "up");
        more_writes(&mut zc, 1);
        settle(&mut zc, &mut [&mut rc]);
        assert_same(&contents(&mut zc), &contents(&mut rc));
        assert_eq!(digest(&mut zc), digest(&mut rc), "DEBUG DIGEST");
        assert!(replica_on_port(&mut zc, z_tls));
        let announced = r_tls.to_string();
        assert_eq!(replica_port_seen(&mut zc), (announced.clone(), announced));
        ok(&mut zc, "CLIENT KILL TYPE replica");
        eventually("the link back", || {
            link_status(&mut rc) == "up" && info_field(&mut zc, "stats", "sync_partial_ok") == "1"
        });
        more_writes(&mut zc, 2);
        settle(&mut zc, &mut [&mut rc]);
        assert_eq!(digest(&mut zc), digest(&mut rc), "after +CONTINUE");
        assert_eq!(info_field(&mut rc, "stats", "total_error_replies"), "0");
    }
}

/// A self-signed certificate and its key, which the suite's CA did not
/// sign.
fn stranger(dir: &Path) -> (PathBuf, PathBuf) {
    let (crt, key) = (dir.join("stranger.crt"), dir.join("stranger.key"));
    let out = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/O=Stranger/CN=stranger", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&crt)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl req: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (crt, key)
}

/// How long a link that must stay down is watched: the replica retries
/// every second.
const DOWN_FOR: Duration = Duration::from_millis(2500);

/// The link of each replica stays down for [`DOWN_FOR`]; the primary
/// lists no replica.
fn stays_down(primary: &mut RawConn, replicas: &mut [&mut RawConn]) {
    let until = Instant::now() + DOWN_FOR;
    while Instant::now() < until {
        for r in replicas.iter_mut() {
            assert_eq!(link_status(r), "down");
        }
        assert_eq!(info_field(primary, "replication", "connected_slaves"), "0");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `tls-auth-clients yes` on the primary: a replica whose client
/// certificate the CA did not sign never gets a link (a redis-server
/// replica beside it neither), until CONFIG SET gives it the right
/// certificate; a replica whose CA did not sign the primary's certificate
/// refuses the primary; a replica without `tls-replication` speaks plain
/// text to the TLS port and is refused, until CONFIG SET tls-replication
/// yes. INFO shows each link down, then up.
#[test]
fn certificates_either_side_must_be_signed_by_the_ca() {
    let certs = tls_certs();
    let dir = PrivateDir::new("stranger");
    let (crt, key) = stranger(&dir.0);
    let (crt, key) = (crt.to_string_lossy(), key.to_string_lossy());
    let (z, z_tls) = zwindow(&certs, &["--tls-auth-clients", "yes"]);
    let mut zc = z.conn();
    ok(&mut zc, "SET k v");
    let p = z_tls.to_string();
    let wrong_cert = [
        "--replicaof",
        "127.0.0.1",
        &p,
        "--tls-client-cert-file",
        &crt,
        "--tls-client-key-file",
        &key,
    ];
    let (zr, _) = zwindow(&certs, &wrong_cert);
    let (rr, _) = redis(&certs, &wrong_cert);
    let (mut zrc, mut rrc) = (zr.conn(), rr.conn());
    stays_down(&mut zc, &mut [&mut zrc, &mut rrc]);
    assert_ne!(
        info_field(&mut zrc, "replication", "master_link_down_since_seconds"),
        ""
    );
    // The right certificate, for the next connection.
    let client = |n: &str| certs.join(n).to_string_lossy().into_owned();
    for c in [&mut zrc, &mut rrc] {
        ok(
            c,
            &format!(
                "CONFIG SET tls-client-cert-file {} tls-client-key-file {}",
                client("client.crt"),
                client("client.key")
            ),
        );
    }
    eventually("the links with the right certificate", || {
        link_status(&mut zrc) == "up" && link_status(&mut rrc) == "up"
    });
    assert_eq!(zrc.cmd_str("GET k"), b"$1\r\nv\r\n");
    assert_eq!(rrc.cmd_str("GET k"), b"$1\r\nv\r\n");
    drop((zr, rr));

    // The replica checks the primary: a CA that did not sign it.
    let wrong_ca = ["--replicaof", "127.0.0.1", &p];
    let args = |port| {
        let mut args = tls_args(&certs, port, &wrong_ca);
        let at = args.iter().position(|a| a == "--tls-ca-cert-file").unwrap();
        args[at + 1] = crt.to_string();
        args
    };
    let (zr, _) = start_on_free_port(|port| ZwindowServer::try_start(&strs(&args(port))));
    let (rr, _) = start_on_free_port(|port| RedisServer::try_start_with(&strs(&args(port))));
    let (mut zrc, mut rrc) = (zr.conn(), rr.conn());
    stays_down(&mut zc, &mut [&mut zrc, &mut rrc]);
    assert!(
        zr.log_tail().contains("certificate verify failed"),
        "{}",
        zr.log_tail()
    );
    drop((zr, rr));

    // No TLS on the replica's side: plain text on the TLS port.
    let plain = ["--replicaof", "127.0.0.1", &p, "--tls-replication", "no"];
    let (zr, _) = zwindow(&certs, &plain);
    let (rr, _) = redis(&certs, &plain);
    let (mut zrc, mut rrc) = (zr.conn(), rr.conn());
    stays_down(&mut zc, &mut [&mut zrc, &mut rrc]);
    for c in [&mut zrc, &mut rrc] {
        ok(c, "CONFIG SET tls-replication yes");
    }
    eventually("the links over TLS", || {
        link_status(&mut zrc) == "up" && link_status(&mut rrc) == "up"
    });
    assert_eq!(info_field(&mut zc, "replication", "connected_slaves"), "2");
    assert_eq!(zrc.cmd_str("GET k"), b"$1\r\nv\r\n");
}
