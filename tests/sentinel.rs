//! Redis's own Sentinel (Debian's `redis-sentinel`) managing zwindow: three
//! Sentinels watch a zwindow primary and its zwindow replica; the primary
//! is killed with SIGKILL while redis-py's `Sentinel` client writes
//! through it; the Sentinels promote the replica, the client follows, and
//! every write a replica acknowledged (WAIT 1) is on the new primary. The
//! old primary, restarted, is turned into a replica of the new one.
//! (`examples/compose/sentinel/` is the same setup in Docker.)

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn eventually(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn info_field(c: &mut RawConn, section: &str, field: &str) -> String {
    let r = c.cmd(&[b"INFO", section.as_bytes()]);
    String::from_utf8_lossy(&r)
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_default()
}

/// A redis-sentinel process, killed on drop.
struct SentinelProc {
    child: Child,
    port: u16,
    _dir: PrivateDir,
}

impl Drop for SentinelProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sentinel(primary_port: u16) -> SentinelProc {
    let dir = PrivateDir::new("sentinel");
    let (child, port) = {
        let mut last = String::new();
        let mut started = None;
        for _ in 0..5 {
            let port = free_port();
            let conf = dir.0.join("sentinel.conf");
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {}\n\
                     sentinel monitor mymaster 127.0.0.1 {primary_port} 2\n\
                     sentinel down-after-milliseconds mymaster 1000\n\
                     sentinel failover-timeout mymaster 10000\n\
                     sentinel parallel-syncs mymaster 1\n",
                    dir.0.display()
                ),
            )
            .unwrap();
            let mut child = Command::new("redis-sentinel")
                .arg(&conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run redis-sentinel (installed by .ci/test)");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                if let Ok(Some(st)) = child.try_wait() {
                    last = format!("redis-sentinel exited: {st}");
                    break;
                }
                if ping_ok(port) {
                    started = Some((child, port));
                    break;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    last = "redis-sentinel did not answer".into();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if started.is_some() {
                break;
            }
        }
        started.unwrap_or_else(|| panic!("{last}"))
    };
    SentinelProc {
        child,
        port,
        _dir: dir,
    }
}

fn sentinel_cmd(port: u16, line: &str) -> Reply {
    let mut c = RawConn::connect(([127, 0, 0, 1], port).into(), "sentinel");
    parse_reply(&c.cmd_str(line))
}

/// The primary's port the Sentinel at `port` names.
fn primary_by(port: u16) -> Option<u16> {
    let r = sentinel_cmd(port, "SENTINEL get-master-addr-by-name mymaster");
    let a = r.array();
    (a.len() == 2).then(|| String::from_utf8_lossy(a[1].bulk()).parse().ok())?
}

fn venv_python() -> PathBuf {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `bash .ci/test`",
        python.display()
    );
    python
}

#[test]
fn sentinel_fails_over_a_killed_zwindow_primary_under_redis_py_writes() {
    let mut primary = ZwindowServer::start(&["--repl-diskless-sync-delay", "0"]);
    let p_port = primary.port();
    let p = p_port.to_string();
    let replica =
        ZwindowServer::start(&["--replicaof", "127.0.0.1", &p, "--replica-priority", "100"]);
    let mut rc = replica.conn();
    eventually("the replica's link", 20, || {
        info_field(&mut rc, "replication", "master_link_status").trim() == "up"
    });
    let sentinels: Vec<SentinelProc> = (0..3).map(|_| sentinel(p_port)).collect();
    // Each Sentinel has found the replica and the two other Sentinels.
    for s in &sentinels {
        eventually("the Sentinels to see the topology", 30, || {
            let replicas = sentinel_cmd(s.port, "SENTINEL replicas mymaster");
            let others = sentinel_cmd(s.port, "SENTINEL sentinels mymaster");
            replicas.array().len() == 1 && others.array().len() == 2
        });
    }
    let ports: Vec<String> = sentinels.iter().map(|s| s.port.to_string()).collect();
    let mut writer = Command::new(venv_python())
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/sentinel_writer.py"))
        .arg(ports.join(","))
        .arg("12")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run the redis-py writer");
    let out = writer.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    std::thread::sleep(Duration::from_secs(2));
    // The primary dies without a word.
    let _ = Command::new("kill")
        .args(["-9", &primary.pid().to_string()])
        .status();
    eventually("the Sentinels to promote the replica", 40, || {
        sentinels
            .iter()
            .all(|s| primary_by(s.port) == Some(replica.port()))
    });
    // Sentinel's promotion ends with CLIENT KILL TYPE normal: a fresh
    // connection.
    let mut rc = replica.conn();
    let role = parse_reply(&rc.cmd_str("ROLE"));
    assert_eq!(role.array()[0].bulk(), b"master");
    let status = writer.wait().unwrap();
    assert!(status.success(), "the writer failed");
    let lines = lines.join().unwrap();
    let primaries: Vec<&String> = lines.iter().filter(|l| l.starts_with("primary ")).collect();
    assert_eq!(
        primaries.last().map(|s| s.as_str()),
        Some(format!("primary 127.0.0.1:{}", replica.port()).as_str()),
        "the client ends on the promoted replica: {primaries:?}"
    );
    let acked: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("acked "))
        .collect();
    let done = lines
        .iter()
        .find(|l| l.starts_with("done "))
        .expect("done line");
    assert!(acked.len() > 20, "few acknowledged writes: {done}");
    for key in &acked {
        let v = rc.cmd(&[b"GET", key.as_bytes()]);
        assert!(
            v.starts_with(b"$"),
            "acknowledged {key} lost: {}",
            escape(&v)
        );
    }
    // The old primary comes back as a master, and the Sentinels make it a
    // replica of the new one.
    let _ = primary.terminate(Duration::from_secs(1));
    let old = ZwindowServer::start(&["--port", &p]);
    // (Sentinel kills normal clients when it reconfigures a server: a
    // fresh connection for each look.)
    eventually("the old primary to be turned into a replica", 40, || {
        info_field(&mut old.conn(), "replication", "master_link_status").trim() == "up"
    });
    assert_eq!(
        info_field(&mut old.conn(), "replication", "master_port").trim(),
        replica.port().to_string()
    );
    println!(
        "{done}; {} acknowledged writes all on the new primary",
        acked.len()
    );
}
