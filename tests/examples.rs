//! Runs every example program (`examples/*.rs`) as a user would, in both
//! variants against zwindow and in the classic variant against redis-server,
//! and checks its exit status and the lines that carry its results.
//!
//! The examples are separate binaries: `cargo test` builds them next to this
//! test (`target/<profile>/examples/`); when a test is run in a way that did
//! not build them (e.g. `cargo test --test examples` builds them too, but a
//! copied test binary would not), they are built with the same cargo.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{RedisServer, ZwindowServer};

/// Serialises the fallback `cargo build` so parallel tests do not race on it.
static BUILD: Mutex<()> = Mutex::new(());
/// The examples run on real time (short windows, bursts, heartbeats): one
/// at a time, so the test runner's other threads cannot starve one of CPU
/// long enough to blur its timing.
static RUN: Mutex<()> = Mutex::new(());

/// The path of a built example, building it if it is missing.
fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/examples-<hash> -> target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf();
    let bin = profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        return bin;
    }
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    if !bin.is_file() {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--example", name])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile_dir.file_name().is_some_and(|p| p == "release") {
            cmd.arg("--release");
        }
        if let Some(target) = profile_dir.parent() {
            cmd.env("CARGO_TARGET_DIR", target);
        }
        let status = cmd.status().expect("run cargo build --example");
        assert!(status.success(), "cargo build --example {name} failed");
    }
    assert!(bin.is_file(), "example binary {} not found", bin.display());
    bin
}

/// Runs an example against `url`; its stdout, after asserting exit status 0
/// and that it finished in reasonable time.
fn run_example(name: &str, url: &str, classic: bool) -> String {
    let bin = example_bin(name);
    let mut cmd = Command::new(&bin);
    cmd.args(["--url", url]);
    if classic {
        cmd.arg("--classic");
    }
    let _one_at_a_time = RUN.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let out = cmd.output().expect("run example");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} (classic: {classic}) exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        took < Duration::from_secs(20),
        "{name} took {took:?}\nstdout:\n{stdout}"
    );
    let variant = if classic { "classic" } else { "windows" };
    assert!(
        stdout.contains(&format!("{name} [{variant}]: all ")) && stdout.contains(" checks passed"),
        "{name}: no success verdict\n{stdout}"
    );
    assert!(!stdout.contains("CHECK FAILED"), "{name}: {stdout}");
    stdout
}

fn has(out: &str, line: &str) {
    assert!(out.contains(line), "expected {line:?} in:\n{out}");
}

fn zwindow() -> ZwindowServer {
    ZwindowServer::start(&[])
}

// --- live_events ---

fn live_events_common(out: &str) {
    has(out, "check ok: contributions after import: 150");
    has(
        out,
        "check ok: duplicate contributions not double-counted: (20, 5)",
    );
    has(
        out,
        "check ok: visitors after one closed and one went silent: 1",
    );
    has(out, "check ok: contributions in window: 170");
    has(out, "check ok: news listed after 24 h: 0");
}

#[test]
fn live_events_windows_on_zwindow() {
    let z = zwindow();
    let out = run_example("live_events", &z.url(), false);
    live_events_common(&out);
    has(&out, "ZWINDOW SET");
    has(&out, "zexpired on ");
}

#[test]
fn live_events_classic_on_zwindow() {
    let z = zwindow();
    let out = run_example("live_events", &z.url(), true);
    live_events_common(&out);
    assert!(!out.contains("ZWINDOW"));
}

#[test]
fn live_events_classic_on_redis() {
    let r = RedisServer::start();
    live_events_common(&run_example("live_events", &r.url(), true));
}

// --- event_folder ---

fn event_folder_common(out: &str) {
    has(
        out,
        "produced 56 post-metric-updated events for 6 accounts in 8 bursts",
    );
    has(
        out,
        "events: 56; ZADD returned 1: 8, 0: 48; fold-eligible: 48",
    );
    has(out, "folding ratio F_R = N_F/N_E = 48/48 = 1.000");
    has(
        out,
        "check ok: folded events emitted (one per burst, none twice): 8",
    );
    has(
        out,
        "check ok: each folded event carries its burst's metric superset",
    );
}

#[test]
fn event_folder_windows_on_zwindow() {
    let z = zwindow();
    let out = run_example("event_folder", &z.url(), false);
    event_folder_common(&out);
    has(&out, "MS MOVETO ");
}

#[test]
fn event_folder_classic_on_zwindow() {
    let z = zwindow();
    let out = run_example("event_folder", &z.url(), true);
    event_folder_common(&out);
    has(&out, "races handled:");
}

#[test]
fn event_folder_classic_on_redis() {
    let r = RedisServer::start();
    event_folder_common(&run_example("event_folder", &r.url(), true));
}

// --- activity_feed ---

fn activity_feed_common(out: &str) {
    has(out, "check ok: feed:3 trimmed to MAX: 10");
    has(out, "\"user 1 liked 3 photos today\"");
    has(out, "check ok: replaying 8 activities is idempotent");
    has(out, "check ok: feed:4 after unfollow: 0");
    has(out, "check ok: reference counts match feed membership");
}

#[test]
fn activity_feed_windows_on_zwindow() {
    let z = zwindow();
    let out = run_example("activity_feed", &z.url(), false);
    activity_feed_common(&out);
    has(&out, "MS MOVETO ");
}

#[test]
fn activity_feed_classic_on_zwindow() {
    let z = zwindow();
    activity_feed_common(&run_example("activity_feed", &z.url(), true));
}

#[test]
fn activity_feed_classic_on_redis() {
    let r = RedisServer::start();
    activity_feed_common(&run_example("activity_feed", &r.url(), true));
}

// --- heartbeats ---

fn heartbeats_common(out: &str) {
    has(out, "heartbeats from 2000 viewers");
    has(
        out,
        "alive viewers (heartbeat within 65 s): 1400; in session s1: 300",
    );
    has(out, "check ok: attendance: 2000");
    has(out, "check ok: viewing sessions: 2200");
}

#[test]
fn heartbeats_windows_on_zwindow() {
    let z = zwindow();
    let out = run_example("heartbeats", &z.url(), false);
    heartbeats_common(&out);
    has(&out, "check ok: windowed set holds only live viewers: 1400");
}

#[test]
fn heartbeats_classic_on_zwindow() {
    let z = zwindow();
    heartbeats_common(&run_example("heartbeats", &z.url(), true));
}

#[test]
fn heartbeats_classic_on_redis() {
    let r = RedisServer::start();
    heartbeats_common(&run_example("heartbeats", &r.url(), true));
}
