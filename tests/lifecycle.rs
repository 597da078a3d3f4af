//! Server lifecycle contract: startup flags accepted for redis-server compatibility,
//! ephemeral-port logging, `disable-thp`, shutdown on SIGTERM within a second, and
//! Redis's crash report on a fatal signal.
mod common;

use std::time::Duration;

use common::*;

#[test]
fn accepts_redis_style_persistence_flags() {
    let mut z = ZwindowServer::start(&["--save", "", "--appendonly", "no"]);
    assert!(z.port() != 0);
    let mut c = z.conn();
    assert_eq!(escape(&c.cmd(&[b"PING"])), escape(b"+PONG\r\n"));
    assert!(z.is_running());
}

/// A process's `THP_enabled` flag (Linux 5.0+): 0 once THP is disabled for
/// it, a flag its children inherit.
fn thp_enabled(pid: &str) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let line = status
        .lines()
        .find(|l| l.starts_with("THP_enabled:"))
        .expect("the kernel reports THP_enabled");
    line.split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_string()
}

/// `disable-thp yes`, Redis's default, turns transparent huge pages off for
/// the server's process (a huge page makes 2 MB resident for one byte
/// touched); `no` leaves the process as it was started.
#[test]
fn disable_thp_turns_huge_pages_off_for_the_server() {
    let inherited = thp_enabled("self");
    for (args, want) in [
        (&[][..], "0"),
        (&["--disable-thp", "yes"][..], "0"),
        (&["--disable-thp", "no"][..], inherited.as_str()),
    ] {
        let z = ZwindowServer::start(args);
        assert_eq!(thp_enabled(&z.pid().to_string()), want, "{args:?}");
    }
}

#[test]
fn two_servers_get_distinct_ephemeral_ports() {
    let a = ZwindowServer::start(&[]);
    let b = ZwindowServer::start(&[]);
    assert_ne!(a.port(), b.port());
}

#[test]
fn sigterm_shuts_down_within_a_second() {
    let mut z = ZwindowServer::start(&[]);
    // With an idle client connected, too.
    let mut c = z.conn();
    assert_eq!(escape(&c.cmd(&[b"PING"])), escape(b"+PONG\r\n"));
    let status = z.terminate(Duration::from_secs(1));
    assert!(
        status.is_some(),
        "zwindow still running 1 s after SIGTERM; stderr:\n{}",
        z.log_tail()
    );
}

/// SIGTERM ends a server whose script never returns — one that can still
/// be killed and one that wrote (unkillable by SCRIPT KILL) — within a
/// second, with exit status 0.
#[test]
fn sigterm_stops_an_endless_script_within_a_second() {
    for body in [
        "local f = function() while 1 do end end while 1 do pcall(f) end",
        "redis.call('set', 'k', 'v') while 1 do pcall(function() while 1 do end end) end",
    ] {
        let mut z = ZwindowServer::start(&[]);
        let mut admin = z.conn();
        admin.cmd_str("CONFIG SET busy-reply-threshold 50");
        let mut runner = z.conn();
        runner.send(&encode_cmd(&[b"EVAL", body.as_bytes(), b"0"]));
        while !admin.cmd_str("PING").starts_with(b"-BUSY") {}
        let status = z.terminate(Duration::from_secs(1));
        let status = status.unwrap_or_else(|| {
            panic!(
                "still running 1 s after SIGTERM ({body}); stderr:\n{}",
                z.log_tail()
            )
        });
        assert!(status.success(), "{body}: {status:?}");
    }
}

/// The crash report a fatal signal writes to the log (Redis's
/// `sigsegvHandler`), and the process dying of that same signal.
fn crash_report(z: &mut ZwindowServer, sig: i32) -> String {
    use std::os::unix::process::ExitStatusExt;
    let status = z
        .exit_status(Duration::from_secs(10))
        .expect("the server died");
    assert_eq!(status.signal(), Some(sig), "{status:?}");
    // The log reader thread may lag the process's death a little.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let log = z.log_tail();
        if log.contains("=== REDIS BUG REPORT END") || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn debug_segfault_writes_the_crash_report() {
    let mut z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.send(&encode_cmd(&[b"DEBUG", b"SEGFAULT"]));
    let log = crash_report(&mut z, 11);
    for line in [
        "=== REDIS BUG REPORT START: Cut & paste starting from here ===",
        "# Redis 8.0.2 crashed by signal: 11, si_code: 2",
        "# Accessing address: 0x",
        "------ STACK TRACE ------",
        "Backtrace:",
        "=== REDIS BUG REPORT END. Make sure to include from START to END. ===",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
}

#[test]
fn sigabrt_writes_the_crash_report_with_the_sender() {
    let mut z = ZwindowServer::start(&[]);
    let pid = z.pid().to_string();
    let me = std::process::id();
    assert!(
        std::process::Command::new("kill")
            .args(["-ABRT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let log = crash_report(&mut z, 6);
    assert!(log.contains("crashed by signal: 6, si_code: 0"), "{log}");
    // `kill` is a child of this test process.
    assert!(log.contains("Killed by PID: "), "{log}");
    assert!(!log.contains(&format!("Killed by PID: {me},")), "{log}");
    assert!(log.contains("------ STACK TRACE ------"), "{log}");
}

#[test]
fn crash_log_enabled_no_leaves_the_default_action() {
    let mut z = ZwindowServer::start(&[]);
    let mut c = z.conn();
    assert_eq!(
        c.cmd(&[b"CONFIG", b"SET", b"crash-log-enabled", b"no"]),
        b"+OK\r\n"
    );
    let pid = z.pid().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-ABRT", &pid])
            .status()
            .unwrap()
            .success()
    );
    use std::os::unix::process::ExitStatusExt;
    let status = z
        .exit_status(Duration::from_secs(10))
        .expect("the server died");
    assert_eq!(status.signal(), Some(6));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!z.log_tail().contains("crashed by signal"));
}

#[test]
fn crash_report_hides_user_data_when_asked() {
    let mut z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    assert_eq!(
        c.cmd_str("CONFIG SET hide-user-data-from-log yes"),
        b"+OK\r\n"
    );
    c.send(&encode_cmd(&[b"DEBUG", b"SEGFAULT"]));
    let log = crash_report(&mut z, 11);
    // Redis 8.0.2's lines (logging.tcl's patterns).
    for line in [
        "------ CURRENT CLIENT INFO ------",
        "argc: '2'",
        "argv[0]: '\"DEBUG\"'",
        "argv[1]: '*redacted*'",
        "hide-user-data-from-log is on, skip logging stack content to avoid spilling PII.",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
    assert!(!log.contains("SEGFAULT\"'"), "{log}");
}

#[test]
fn crash_report_shows_the_current_command() {
    let mut z = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let mut c = z.conn();
    c.send(&encode_cmd(&[b"DEBUG", b"SEGFAULT"]));
    let log = crash_report(&mut z, 11);
    for line in [
        "argv[0]: '\"DEBUG\"'",
        "argv[1]: '\"SEGFAULT\"'",
        "addr=127.0.0.1",
    ] {
        assert!(log.contains(line), "no {line:?} in:\n{log}");
    }
    assert!(!log.contains("skip logging stack content"), "{log}");
}

#[test]
fn bad_locale_collate_stops_startup_as_redis8() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--port", "0", "--locale-collate", "no_such_locale.X"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("Failed to configure LOCALE for invalid locale name."),
        "{text}"
    );
}
