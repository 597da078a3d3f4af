//! Real client libraries, unmodified, against zwindow: redis-py (RESP2 and RESP3) through
//! pytest in the project's `.venv` (which `bash .ci/test` creates from
//! `tests/python/requirements.txt`), and an ioredis smoke test under node (from
//! `tests/node/node_modules`, which `bash .ci/test` installs). The server runs on an
//! ephemeral port passed in `ZWINDOW_PORT`. BullMQ (tests/node/bullmq.mjs) runs one job-queue
//! scenario against zwindow and against redis-server, whose summaries must be identical;
//! bee-queue (tests/node/bee_queue.mjs) checks that a script's reply leaves before what the
//! script caused other clients to receive, 10 runs in a row.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{RedisServer, ZwindowServer};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn venv_python() -> PathBuf {
    let python = root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/test`, which creates .venv from tests/python/requirements.txt",
        python.display()
    );
    python
}

/// Runs the redis-py suite (the tests pytest's `-k` expression selects) against a fresh zwindow.
fn pytest(selection: &str) {
    let python = venv_python();
    let z = ZwindowServer::start(&[]);
    let out = Command::new(&python)
        .current_dir(root())
        .args([
            "-m",
            "pytest",
            "tests/python",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            selection,
        ])
        .env("ZWINDOW_HOST", "127.0.0.1")
        .env("ZWINDOW_PORT", z.port().to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "redis-py tests ({selection}) failed ({}):\n{}\n{}\n--- zwindow log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        z.log_tail()
    );
}

#[test]
fn redis_py_commands_and_transactions() {
    pytest("not pubsub and not client_side_cache");
}

#[test]
fn redis_py_pubsub() {
    pytest("pubsub");
}

#[test]
fn redis_py_client_side_cache() {
    pytest("client_side_cache");
}

/// node-redis 5's client-side cache (`clientSideCache`) never serves a
/// stale value after writes, expiry, a window trim and FLUSHALL.
#[test]
fn node_redis_client_side_cache() {
    require_node_module("redis");
    let z = ZwindowServer::start(&[]);
    let out = Command::new("node")
        .current_dir(root())
        .arg("tests/node/client_side_cache.mjs")
        .env("ZWINDOW_PORT", z.port().to_string())
        .env("ZWINDOW_WINDOWS", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        out.status.success(),
        "node-redis client-side cache test failed ({}):\n{}\n{}\n--- zwindow log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        z.log_tail()
    );
}

/// Fails (never skips) when `bash .ci/test` has not installed tests/node's `package`.
fn require_node_module(package: &str) {
    let modules = root().join("tests/node/node_modules").join(package);
    assert!(
        modules.exists(),
        "{} is missing: run `bash .ci/test`, which installs tests/node's packages \
         (`npm ci --prefix tests/node`)",
        modules.display()
    );
}

#[test]
fn ioredis_smoke() {
    require_node_module("ioredis");
    let z = ZwindowServer::start(&[]);
    let out = Command::new("node")
        .current_dir(root())
        .arg("tests/node/smoke.mjs")
        .env("ZWINDOW_PORT", z.port().to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        out.status.success(),
        "ioredis smoke test failed ({}):\n{}\n{}\n--- zwindow log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        z.log_tail()
    );
}

/// Runs tests/node/bullmq.mjs against the server on `port`; its stdout (the JSON summary).
fn bullmq_summary(server: &str, port: u16, log: impl Fn() -> String) -> String {
    let out = Command::new("node")
        .current_dir(root())
        .arg("tests/node/bullmq.mjs")
        .arg(port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        out.status.success(),
        "the BullMQ scenario failed against {server} ({}):\n{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        log()
    );
    String::from_utf8(out.stdout).expect("the summary is UTF-8")
}

/// BullMQ end to end: a queue, two workers, QueueEvents on the events stream (XREAD BLOCK),
/// delayed, prioritized, retried and failed jobs, pause/resume, clean and obliterate. The
/// summary (final states, return values, attempts, the events each job went through, job
/// counts) must be the same against zwindow as against redis-server 7.0.
#[test]
fn bullmq_job_queue_matches_redis() {
    require_node_module("bullmq");
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start();
    let expected = bullmq_summary("redis-server", r.port(), String::new);
    let actual = bullmq_summary("zwindow", z.port(), || {
        format!("\n--- zwindow log ---\n{}", z.log_tail())
    });
    // Non-trivial: every job reached its final state (the script prints indented JSON).
    let count = |needle: &str| expected.matches(needle).count();
    assert_eq!(count("\"state\": \"completed\""), 8, "{expected}");
    assert_eq!(count("\"state\": \"failed\""), 1, "{expected}");
    assert!(expected.contains("\"completed\": 8,"), "{expected}");
    assert!(expected.contains("\"attemptsMade\": 2,"), "{expected}");
    assert!(expected.contains("\"retries-exhausted\""), "{expected}");
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(0);
        panic!(
            "BullMQ's summary differs from redis-server's at line {}:\n--- redis-server ---\n{expected}\n--- zwindow ---\n{actual}\n--- zwindow log ---\n{}",
            first + 1,
            z.log_tail()
        );
    }
}

/// Runs tests/node/bee_queue.mjs against the server on `port`: its exit status and summary.
fn bee_queue_run(port: u16) -> (bool, String) {
    let out = Command::new("node")
        .current_dir(root())
        .arg("tests/node/bee_queue.mjs")
        .arg(port.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    let summary = format!(
        "{} {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout).trim(),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), summary)
}

/// bee-queue 2.0 (Lua scripts, BRPOPLPUSH and pub/sub): a producer pipelines the EVALSHAs
/// that save 120 jobs, two workers in the same process pop and finish them and publish
/// `succeeded`. A job object matches its event only once its EVALSHA's reply has arrived,
/// so every job sees its event only if the server writes a script's reply before what the
/// script caused other clients to receive (issue 31). redis-server: all 120, always; zwindow
/// must do the same 10 runs in a row (before the fix, 2 to 72 of 120 in most runs).
#[test]
fn bee_queue_jobs_see_their_events() {
    require_node_module("bee-queue");
    let r = RedisServer::start();
    let (ok, summary) = bee_queue_run(r.port());
    assert!(
        ok,
        "the bee-queue scenario failed against redis-server: {summary}"
    );
    let z = ZwindowServer::start(&[]);
    for run in 1..=10 {
        let (ok, summary) = bee_queue_run(z.port());
        assert!(
            ok,
            "run {run} of 10: bee-queue's job events went missing against zwindow: {summary}\n--- zwindow log ---\n{}",
            z.log_tail()
        );
    }
}
