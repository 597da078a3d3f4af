//! TLS (`tls-port`), side by side with redis-server 7.0.15 (Debian's is
//! built with TLS) started with the same certificates (Redis's own
//! `utils/gen-test-certs.sh`, see `common::tls_certs`): redis-cli `--tls`
//! with and without a client certificate under each `tls-auth-clients`,
//! an OpenSSL client, a plain-text client on the TLS port, CONFIG GET/SET
//! of the `tls-*` settings and their errors, reloading certificates by
//! CONFIG SET, an encrypted key, and redis-py (`ssl=True`) and ioredis
//! (`tls:`) connecting.
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};

/// A server with TLS on a port of its own; the plain port stays too.
struct Tls<S> {
    server: S,
    tls_port: u16,
}

/// The harness's TLS arguments on `tls_port`, then `extra`.
fn tls_args(certs: &Path, tls_port: u16, extra: &[&str]) -> Vec<String> {
    let mut args = tls_server_args(certs, tls_port);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn zwindow_tls(certs: &Path, extra: &[&str]) -> Tls<ZwindowServer> {
    let (server, tls_port) = start_on_free_port(|port| {
        let args = tls_args(certs, port, extra);
        ZwindowServer::try_start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    Tls { server, tls_port }
}

fn redis_tls(certs: &Path, extra: &[&str]) -> Tls<RedisServer> {
    let (server, tls_port) = start_on_free_port(|port| {
        let args = tls_args(certs, port, extra);
        RedisServer::try_start_with(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    Tls { server, tls_port }
}

/// redis-cli `--tls` on `port` running `args`: its output, or its error.
fn cli(certs: &Path, port: u16, client_cert: bool, args: &[&str]) -> String {
    let file = |n: &str| certs.join(n).to_string_lossy().into_owned();
    let mut cmd = Command::new("redis-cli");
    cmd.args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls"])
        .args(["--cacert", &file("ca.crt")]);
    if client_cert {
        cmd.args(["--cert", &file("client.crt"), "--key", &file("client.key")]);
    }
    let out = cmd.args(args).output().expect("run redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text.is_empty() || !out.status.success() {
        // redis-cli prints a failed connection on stderr (and exits 1).
        return format!("failed: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    text
}

/// An OpenSSL client: connects (TLSv1.2+ as the server allows), sends
/// PING and reads the reply. `Err` when the handshake or the reply fails
/// (with TLSv1.3 a refused client certificate shows at the first read).
fn ping(certs: &Path, port: u16, client_cert: bool) -> Result<String, String> {
    let (reply, _) = ping_with_peer(certs, port, client_cert)?;
    Ok(reply)
}

/// [`ping`], with the common name of the server's certificate.
fn ping_with_peer(certs: &Path, port: u16, client_cert: bool) -> Result<(String, String), String> {
    let mut b = SslConnector::builder(SslMethod::tls()).map_err(|e| e.to_string())?;
    b.set_ca_file(certs.join("ca.crt"))
        .map_err(|e| e.to_string())?;
    if client_cert {
        b.set_certificate_file(certs.join("client.crt"), openssl::ssl::SslFiletype::PEM)
            .map_err(|e| e.to_string())?;
        b.set_private_key_file(certs.join("client.key"), openssl::ssl::SslFiletype::PEM)
            .map_err(|e| e.to_string())?;
    }
    b.set_verify(SslVerifyMode::PEER);
    let connector = b.build();
    let tcp = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut cfg = connector.configure().map_err(|e| e.to_string())?;
    // The suite's certificates name no host.
    cfg.set_verify_hostname(false);
    let mut s = cfg.connect("localhost", tcp).map_err(|e| e.to_string())?;
    let peer = s
        .ssl()
        .peer_certificate()
        .and_then(|c| {
            c.subject_name()
                .entries_by_nid(openssl::nid::Nid::COMMONNAME)
                .next()
                .map(|e| String::from_utf8_lossy(e.data().as_slice()).into_owned())
        })
        .unwrap_or_default();
    s.write_all(b"PING\r\n").map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).map_err(|e| e.to_string())?;
    if n == 0 {
        return Err("closed".into());
    }
    Ok((String::from_utf8_lossy(&buf[..n]).into_owned(), peer))
}

fn config(conn: &mut RawConn, line: &str) -> String {
    String::from_utf8_lossy(&conn.cmd_str(line)).into_owned()
}

#[test]
fn redis_cli_with_and_without_client_certificates_as_redis() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let r = redis_tls(&certs, &[]);
    let mut zc = z.server.conn();
    let mut rc = r.server.conn();
    for auth in ["yes", "no", "optional"] {
        let set = format!("CONFIG SET tls-auth-clients {auth}");
        assert_eq!(config(&mut zc, &set), config(&mut rc, &set));
        for client_cert in [true, false] {
            let zr = cli(&certs, z.tls_port, client_cert, &["PING"]);
            let rr = cli(&certs, r.tls_port, client_cert, &["PING"]);
            let expect_ok = client_cert || auth != "yes";
            assert_eq!(
                zr == "PONG",
                expect_ok,
                "tls-auth-clients {auth}, client cert {client_cert}: zwindow said {zr}"
            );
            assert_eq!(
                rr == "PONG",
                expect_ok,
                "tls-auth-clients {auth}, client cert {client_cert}: redis said {rr}"
            );
            let zo = ping(&certs, z.tls_port, client_cert);
            assert_eq!(zo.is_ok(), expect_ok, "openssl client: {zo:?}");
            assert_eq!(ping(&certs, r.tls_port, client_cert).is_ok(), expect_ok);
        }
    }
    // A TLS client is an ordinary client: commands, and CLIENT LIST shows
    // it as a TCP client (its address on the TLS port).
    assert_eq!(
        cli(&certs, z.tls_port, true, &["SET", "k", "v"]),
        cli(&certs, r.tls_port, true, &["SET", "k", "v"])
    );
    assert_eq!(cli(&certs, z.tls_port, true, &["GET", "k"]), "v");
    let list = cli(&certs, z.tls_port, true, &["CLIENT", "LIST"]);
    assert!(
        list.contains(&format!("laddr=127.0.0.1:{} ", z.tls_port)) && list.contains("flags=N"),
        "{list}"
    );
}

#[test]
fn plain_text_client_on_the_tls_port_is_closed() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let mut s = TcpStream::connect(("127.0.0.1", z.tls_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut buf = Vec::new();
    // The server takes the bytes as a broken handshake: it may send an
    // alert, never a reply, and closes.
    let _ = s.read_to_end(&mut buf);
    assert!(!buf.starts_with(b"+PONG"), "{buf:?}");
    // It was never counted past its handshake.
    let mut c = z.server.conn();
    let clients = String::from_utf8_lossy(&c.cmd_str("CLIENT LIST")).into_owned();
    assert_eq!(clients.matches("id=").count(), 1, "{clients}");
}

#[test]
fn a_client_that_never_finishes_its_handshake_is_closed() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let mut s = TcpStream::connect(("127.0.0.1", z.tls_port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "expected the server to close");
    assert!(started.elapsed() < Duration::from_secs(15));
    // Meanwhile others connect (the handshake never blocked the accept loop).
    assert_eq!(ping(&certs, z.tls_port, true).unwrap(), "+PONG\r\n");
}

#[test]
fn accept_loop_is_not_blocked_by_a_pending_handshake() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let _silent = TcpStream::connect(("127.0.0.1", z.tls_port)).unwrap();
    let started = std::time::Instant::now();
    assert_eq!(ping(&certs, z.tls_port, true).unwrap(), "+PONG\r\n");
    assert_eq!(z.server.conn().cmd_str("PING"), b"+PONG\r\n", "plain port");
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// CONFIG GET of every `tls-*` setting, and CONFIG SET's errors, as
/// redis-server's (neither with TLS on, then both with it).
#[test]
fn config_get_and_set_of_tls_settings_as_redis() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let mut zc = z.conn();
    let mut rc = r.conn();
    assert_eq!(zc.config_pairs("tls-*"), rc.config_pairs("tls-*"));
    for line in [
        "CONFIG SET tls-auth-clients maybe",
        "CONFIG SET tls-auth-clients OPTIONAL",
        "CONFIG GET tls-auth-clients",
        "CONFIG SET tls-session-cache-size -1",
        "CONFIG SET tls-session-cache-timeout abc",
        "CONFIG SET tls-port 70000",
        "CONFIG SET tls-prefer-server-ciphers maybe",
        // TLS is off: files are stored without a look, as Redis does.
        "CONFIG SET tls-cert-file /nonexistent/cert.pem",
        "CONFIG GET tls-cert-file",
        "CONFIG SET tls-protocols TLSv9",
        // Turning TLS on needs a context: refused, and nothing changed.
        "CONFIG SET tls-port 0",
        "CONFIG SET tls-replication yes",
        "CONFIG GET tls-replication",
        "CONFIG SET tls-cluster yes tls-session-caching no",
        "CONFIG GET tls-session-caching",
        "CONFIG SET tls-cert-file \"\" tls-protocols \"\"",
        "CONFIG SET tls-key-file-pass secret",
        "CONFIG GET tls-key-file-pass",
        "CONFIG SET tls-ciphers DEFAULT tls-ciphers DEFAULT",
    ] {
        assert_eq!(config(&mut zc, line), config(&mut rc, line), "{line}");
    }
    // A free port: Redis tries the context first, so both refuse alike.
    let line = format!("CONFIG SET tls-port {}", free_port());
    assert_eq!(config(&mut zc, &line), config(&mut rc, &line), "{line}");
    assert_eq!(
        config(&mut zc, "CONFIG GET tls-port"),
        "*2\r\n$8\r\ntls-port\r\n$1\r\n0\r\n"
    );
    // The passphrase in the slow log: redacted, as Redis 7.2+ has it among
    // its sensitive settings (7.0.15, the oracle here, still shows it;
    // Redis 8.0.2's build has no TLS settings to compare with).
    zc.cmd_str("CONFIG SET slowlog-log-slower-than 0");
    zc.cmd_str("SLOWLOG RESET");
    zc.cmd_str("CONFIG SET tls-key-file-pass hunter2");
    let entry = zc.query(&[b"SLOWLOG", b"GET", b"1"]);
    let logged: Vec<Vec<u8>> = entry.array()[0].array()[3]
        .array()
        .iter()
        .map(|a| a.bulk().to_vec())
        .collect();
    let want: Vec<&[u8]> = vec![b"CONFIG", b"SET", b"tls-key-file-pass", b"(redacted)"];
    assert_eq!(logged, want);
}

/// With TLS on: bad files and settings are refused with Redis's text and
/// the old context stays; the same names again reload the files.
#[test]
fn config_set_reloads_the_context_all_or_nothing() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let r = redis_tls(&certs, &[]);
    let mut zc = z.server.conn();
    let mut rc = r.server.conn();
    let file = |n: &str| certs.join(n).to_string_lossy().into_owned();
    for line in [
        "CONFIG SET tls-cert-file /nonexistent/cert.pem".to_string(),
        "CONFIG SET tls-key-file /nonexistent/key.pem".to_string(),
        "CONFIG SET tls-ca-cert-file /nonexistent/ca.pem".to_string(),
        "CONFIG SET tls-dh-params-file /nonexistent/dh.pem".to_string(),
        "CONFIG SET tls-ciphers NOSUCHCIPHER".to_string(),
        "CONFIG SET tls-ciphersuites NOSUCHSUITE".to_string(),
        "CONFIG SET tls-protocols TLSv9".to_string(),
        format!("CONFIG SET tls-dh-params-file {}", file("ca.crt")),
        // A certificate without its key: the pair fails together...
        format!("CONFIG SET tls-cert-file {}", file("redis.crt")),
        // ...and the second name is the one Redis blames for a pair.
        format!(
            "CONFIG SET tls-protocols TLSv1.2 tls-cert-file {}",
            file("redis.crt")
        ),
        "CONFIG SET tls-ca-cert-file \"\"".to_string(),
        "CONFIG GET tls-cert-file".to_string(),
        "CONFIG GET tls-protocols".to_string(),
    ] {
        let zr = config(&mut zc, &line);
        assert_eq!(zr, config(&mut rc, &line), "{line}");
    }
    // The old context still serves new connections.
    let (reply, peer) = ping_with_peer(&certs, z.tls_port, true).unwrap();
    assert_eq!(
        (reply.as_str(), peer.as_str()),
        ("+PONG\r\n", "Server-only")
    );
    // A certificate and its key in one CONFIG SET: new connections get it,
    // connections already open keep going.
    let line = format!(
        "CONFIG SET tls-cert-file {} tls-key-file {}",
        file("redis.crt"),
        file("redis.key")
    );
    assert_eq!(config(&mut zc, &line), "+OK\r\n");
    let (_, peer) = ping_with_peer(&certs, z.tls_port, true).unwrap();
    assert_eq!(peer, "Generic-cert");
    // The same names again reload the files (renewed on disk).
    let dir = PrivateDir::new("tls-reload");
    let (crt, key) = (dir.0.join("cur.crt"), dir.0.join("cur.key"));
    std::fs::copy(certs.join("server.crt"), &crt).unwrap();
    std::fs::copy(certs.join("server.key"), &key).unwrap();
    let line = format!(
        "CONFIG SET tls-cert-file {} tls-key-file {}",
        crt.display(),
        key.display()
    );
    assert_eq!(config(&mut zc, &line), "+OK\r\n");
    assert_eq!(
        ping_with_peer(&certs, z.tls_port, true).unwrap().1,
        "Server-only"
    );
    std::fs::copy(certs.join("redis.crt"), &crt).unwrap();
    std::fs::copy(certs.join("redis.key"), &key).unwrap();
    assert_eq!(config(&mut zc, &line), "+OK\r\n");
    assert_eq!(
        ping_with_peer(&certs, z.tls_port, true).unwrap().1,
        "Generic-cert"
    );
}

/// `tls-port` by CONFIG SET: binds the new port, closes the old; a port
/// in use is refused and the listener stays.
#[test]
fn config_set_tls_port_moves_the_listener() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let r = redis_tls(&certs, &[]);
    let mut zc = z.server.conn();
    let mut rc = r.server.conn();
    let new = free_port();
    assert_eq!(
        config(&mut zc, &format!("CONFIG SET tls-port {new}")),
        "+OK\r\n"
    );
    assert_eq!(ping(&certs, new, true).unwrap(), "+PONG\r\n");
    assert!(ping(&certs, z.tls_port, true).is_err());
    // A port in use (the plain one): Redis's text, the listener stays.
    let taken = format!("CONFIG SET tls-port {}", z.server.port());
    let taken_r = format!("CONFIG SET tls-port {}", r.server.port());
    assert_eq!(config(&mut zc, &taken), config(&mut rc, &taken_r));
    assert_eq!(
        config(&mut zc, "CONFIG GET tls-port"),
        format!(
            "*2\r\n$8\r\ntls-port\r\n${}\r\n{new}\r\n",
            new.to_string().len()
        )
    );
    assert_eq!(ping(&certs, new, true).unwrap(), "+PONG\r\n");
    assert_eq!(config(&mut zc, "CONFIG SET tls-port 0"), "+OK\r\n");
    assert!(ping(&certs, new, true).is_err());
    assert_eq!(zc.cmd_str("PING"), b"+PONG\r\n");
}

/// An encrypted key: refused without `tls-key-file-pass`, served with it
/// (redis-server alike), and a server started with it serves.
#[test]
fn encrypted_key_with_tls_key_file_pass() {
    let certs = tls_certs();
    let dir = PrivateDir::new("tls-enc");
    let enc: PathBuf = dir.0.join("server.key.enc");
    let made = Command::new("openssl")
        .args(["rsa", "-in"])
        .arg(certs.join("server.key"))
        .arg("-out")
        .arg(&enc)
        .args(["-aes256", "-passout", "pass:1234"])
        .output()
        .expect("run openssl");
    assert!(made.status.success(), "{made:?}");
    let z = zwindow_tls(&certs, &[]);
    let r = redis_tls(&certs, &[]);
    let mut zc = z.server.conn();
    let mut rc = r.server.conn();
    let set = format!("CONFIG SET tls-key-file {}", enc.display());
    for line in [
        set.clone(),
        "CONFIG SET tls-key-file-pass wrong".into(),
        set.clone(),
        "CONFIG SET tls-key-file-pass 1234".into(),
        set.clone(),
    ] {
        assert_eq!(config(&mut zc, &line), config(&mut rc, &line), "{line}");
    }
    assert_eq!(ping(&certs, z.tls_port, true).unwrap(), "+PONG\r\n");
    let started = zwindow_tls(
        &certs,
        &[
            "--tls-key-file",
            &enc.to_string_lossy(),
            "--tls-key-file-pass",
            "1234",
        ],
    );
    assert_eq!(ping(&certs, started.tls_port, true).unwrap(), "+PONG\r\n");
}

/// A server whose TLS settings cannot make a context does not start, as
/// redis-server ("Failed to configure TLS").
#[test]
fn bad_tls_settings_stop_startup() {
    let certs = tls_certs();
    let dir = PrivateDir::new("tls-bad");
    let mut args = tls_server_args(&certs, free_port());
    let i = args.iter().position(|a| a == "--tls-cert-file").unwrap();
    args[i + 1] = "/nonexistent/cert.pem".into();
    let out = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .current_dir(&dir.0)
        .args(["--port", "0", "--save", ""])
        .args(&args)
        .output()
        .expect("run zwindow");
    assert!(!out.status.success());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("Failed to configure TLS. Check logs for more info."),
        "{log}"
    );
    assert!(
        log.contains("Failed to load certificate: /nonexistent/cert.pem"),
        "{log}"
    );
}

/// Large values both ways over TLS (records split and joined, partial
/// writes) and a pipeline of small commands.
#[test]
fn large_values_and_pipelines_over_tls() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &[]);
    let py = r#"import sys, redis
r = redis.Redis(host='127.0.0.1', port=int(sys.argv[1]), ssl=True, ssl_ca_certs=sys.argv[2],
                ssl_certfile=sys.argv[3], ssl_keyfile=sys.argv[4], ssl_check_hostname=False,
                socket_timeout=20)
for n in (1, 16383, 16384, 16385, 1 << 20, 5 << 20):
    v = bytes(i % 251 for i in range(n))
    assert r.set('big', v) is True
    assert r.get('big') == v, n
p = r.pipeline(transaction=False)
for i in range(2000):
    p.set(f'k{i}', str(i))
    p.get(f'k{i}')
out = p.execute()
assert out[1::2] == [str(i).encode() for i in range(2000)]
print('ok')
"#;
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(python.exists(), "run `bash .ci/test` (it creates .venv)");
    let scratch = PrivateDir::new("tls-py");
    let out = Command::new(python)
        .current_dir(&scratch.0)
        .args(["-c", py, &z.tls_port.to_string()])
        .arg(certs.join("ca.crt"))
        .arg(certs.join("client.crt"))
        .arg(certs.join("client.key"))
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        z.server.log_tail()
    );
}

/// redis-py `ssl=True` (tests/python/tls_check.py) and ioredis `tls:`
/// (tests/node/tls.mjs), with a client certificate and, under
/// `tls-auth-clients optional`, without.
#[test]
fn redis_py_and_ioredis_connect_over_tls() {
    let certs = tls_certs();
    let z = zwindow_tls(&certs, &["--tls-auth-clients", "optional"]);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    assert!(python.exists(), "run `bash .ci/test` (it creates .venv)");
    assert!(
        root.join("tests/node/node_modules/ioredis").exists(),
        "run `bash .ci/test` (it installs tests/node's packages)"
    );
    for (prog, script) in [
        (
            python.to_string_lossy().into_owned(),
            "tests/python/tls_check.py",
        ),
        ("node".to_string(), "tests/node/tls.mjs"),
    ] {
        let out = Command::new(&prog)
            .current_dir(root)
            .arg(script)
            .env("ZWINDOW_TLS_PORT", z.tls_port.to_string())
            .env("ZWINDOW_TLS_CERTS", &certs)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"));
        assert!(
            out.status.success(),
            "{script} failed ({}):\n{}\n{}\n--- zwindow log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            z.server.log_tail()
        );
    }
}
