//! Real client libraries, unmodified, against zwindow: redis-py (RESP2 and RESP3) through
//! pytest in the project's `.venv` (which `bash .ci/test` creates from
//! `tests/python/requirements.txt`), and an ioredis smoke test under node (from
//! `tests/node/node_modules`, which `bash .ci/test` installs). The server runs on an
//! ephemeral port passed in `ZWINDOW_PORT`.
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::ZwindowServer;

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
    pytest("not pubsub");
}

#[test]
fn redis_py_pubsub() {
    pytest("pubsub");
}

#[test]
fn ioredis_smoke() {
    let modules = root().join("tests/node/node_modules/ioredis");
    assert!(
        modules.exists(),
        "{} is missing: run `bash .ci/test`, which installs tests/node's packages",
        modules.display()
    );
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
