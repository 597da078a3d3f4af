//! A signal's shutdown, beside redis-server 8.0.2: the signal is acted on
//! by the server's cron, so `DEBUG PAUSE-CRON 1` holds it and `SHUTDOWN
//! ABORT` takes it back; a SIGINT whose save fails leaves the server
//! running with writes flowing ("can't exit"), and a second SIGINT exits
//! at once. zwindow's one deliberate difference: SIGTERM exits even when
//! its save fails (README, "Shutdown").

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Whether the server on `port` still answers after `wait`.
fn alive_after(port: u16, wait: Duration) -> bool {
    std::thread::sleep(wait);
    ping_ok(port)
}

/// Whether the server on `port` is gone within five seconds.
fn gone(port: u16) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if !ping_ok(port) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// SIGTERM while the cron is paused, then SHUTDOWN ABORT: what each step
/// shows.
fn paused_sigterm_aborted(port: u16, pid: u32) -> Vec<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = RawConn::connect(addr, "paused");
    let mut seen = vec![escape(&c.cmd(&[b"DEBUG", b"PAUSE-CRON", b"1"]))];
    signal(pid, "-TERM");
    seen.push(format!(
        "alive: {}",
        alive_after(port, Duration::from_millis(300))
    ));
    seen.push(escape(&c.cmd(&[b"SHUTDOWN", b"ABORT"])));
    seen.push(escape(&c.cmd(&[b"DEBUG", b"PAUSE-CRON", b"0"])));
    seen.push(format!(
        "alive: {}",
        alive_after(port, Duration::from_millis(400))
    ));
    seen.push(escape(&c.cmd(&[b"SHUTDOWN", b"ABORT"])));
    seen
}

#[test]
fn a_paused_cron_holds_sigterm_and_abort_takes_it_back_as_redis_8() {
    let redis = RedisServer::start_binary(&redis8_server(), &["--enable-debug-command", "yes"]);
    let want = paused_sigterm_aborted(redis.port(), redis.pid());
    let z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let got = paused_sigterm_aborted(z.port(), z.pid());
    assert_eq!(got, want);
    assert_eq!(want[5], escape(b"-ERR No shutdown in progress.\r\n"));
    assert!(z.log_tail().contains("Shutdown manually aborted."));
}

/// A SIGINT whose save cannot land (`dump.rdb` is a directory): what the
/// server shows after it, then after SHUTDOWN.
fn failed_sigint_save(port: u16, pid: u32, dir: &std::path::Path) -> Vec<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = RawConn::connect(addr, "save");
    assert_eq!(c.cmd(&[b"SET", b"k", b"1"]), b"+OK\r\n");
    std::fs::create_dir_all(dir.join("dump.rdb")).unwrap();
    signal(pid, "-INT");
    let mut seen = vec![format!(
        "alive: {}",
        alive_after(port, Duration::from_millis(500))
    )];
    // Writes were held for the save and flow again.
    seen.push(escape(&c.cmd(&[b"SET", b"k", b"2"])));
    seen.push(escape(&c.cmd(&[b"SHUTDOWN"])));
    seen.push(escape(&c.cmd(&[b"GET", b"k"])));
    // The failed save took the request back: a new SIGINT is a new
    // request, not the "insist" of a second one.
    signal(pid, "-INT");
    seen.push(format!(
        "alive: {}",
        alive_after(port, Duration::from_millis(500))
    ));
    std::fs::remove_dir(dir.join("dump.rdb")).unwrap();
    signal(pid, "-INT");
    seen.push(format!("gone: {}", gone(port)));
    seen
}

#[test]
fn a_sigint_whose_save_fails_keeps_the_server_up_as_redis_8() {
    let save = ["--save", "900 1"];
    let redis = RedisServer::start_binary(&redis8_server(), &save);
    let want = failed_sigint_save(redis.port(), redis.pid(), redis.dir());
    let mut z = ZwindowServer::start(&save);
    let (port, pid) = (z.port(), z.pid());
    let got = failed_sigint_save(port, pid, z.dir());
    assert_eq!(got, want);
    assert_eq!(want[0], "alive: true");
    assert!(z.exit_status(Duration::from_secs(5)).is_some());
    let log = z.log_tail();
    assert!(
        log.contains("Error trying to save the DB, can't exit"),
        "{log}"
    );
    assert!(log.contains("ready to exit, bye bye"), "{log}");
}

#[test]
fn sigterm_exits_even_when_its_save_fails() {
    let mut z = ZwindowServer::start(&["--save", "900 1"]);
    let mut c = z.conn();
    assert_eq!(c.cmd(&[b"SET", b"k", b"1"]), b"+OK\r\n");
    std::fs::create_dir_all(z.dir().join("dump.rdb")).unwrap();
    signal(z.pid(), "-TERM");
    assert!(
        z.exit_status(Duration::from_secs(2)).is_some(),
        "SIGTERM exits within a second or so, whatever its save does"
    );
    assert!(
        z.log_tail()
            .contains("Error trying to save the DB. Exit anyway.")
    );
}

#[test]
fn a_second_sigint_during_the_save_exits_and_removes_its_temp_file() {
    let mut z = ZwindowServer::start(&["--save", "900 1", "--enable-debug-command", "yes"]);
    let mut c = z.conn();
    for i in 0..20 {
        let k = i.to_string();
        c.cmd(&[b"SET", k.as_bytes(), b"v"]);
    }
    // 100 ms a key: the save takes two seconds.
    c.cmd(&[b"CONFIG", b"SET", b"rdb-key-save-delay", b"100000"]);
    let temp = z.dir().join(format!("temp-{}.rdb", z.pid()));
    signal(z.pid(), "-INT");
    let start = Instant::now();
    while !temp.exists() {
        assert!(start.elapsed() < Duration::from_secs(5), "no save began");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(z.pid(), "-INT");
    let status = z
        .exit_status(Duration::from_secs(2))
        .expect("the second SIGINT exits");
    assert_eq!(status.code(), Some(1));
    assert!(!temp.exists());
    assert!(!z.dir().join("dump.rdb").exists());
}
