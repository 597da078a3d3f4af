//! redis-py's own test suite (the release `tests/python/requirements.txt` pins, its
//! sdist unpacked by `bash .ci/test` into `.cache/redis-py-<version>/`) against zwindow
//! and against redis-server 8.0 in the same run: every test file except cluster,
//! Sentinel, TLS and module ones. `tests/python/redis_py_suite/compare.py` runs both
//! side by side and fails when a test that redis-server 8.0 passes does not pass on
//! zwindow, except the reasoned list in `tests/python/redis_py_suite/known.tsv`. The
//! suite's client-side cache tests (`test_cache.py`, `cache_config=CacheConfig()`)
//! are among them. About 4,000 tests: several minutes (the figure is printed).
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{RedisServer, ZwindowServer, io_uring_requested, redis8_server};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The redis-py version `tests/python/requirements.txt` pins.
fn pinned_version() -> String {
    let text = std::fs::read_to_string(root().join("tests/python/requirements.txt"))
        .expect("read tests/python/requirements.txt");
    text.lines()
        .find_map(|l| l.trim().strip_prefix("redis=="))
        .map(str::to_string)
        .expect("tests/python/requirements.txt pins redis==VERSION")
}

/// Fails (never skips) when `bash .ci/test` has not unpacked the suite.
fn suite_dir() -> PathBuf {
    let dir = root().join(format!(".cache/redis-py-{}", pinned_version()));
    assert!(
        dir.join("tests/conftest.py").is_file(),
        "{} is missing: run `bash .ci/test`, which unpacks redis-py's sdist (with its tests) there",
        dir.display()
    );
    dir
}

/// Runs once in CI: on the epoll pass (`ZWINDOW_TEST_IO_URING=0`) or with the variable unset;
/// the io_uring pass (which runs the longer TCL units) leaves it out.
#[test]
fn redis_py_suite_zwindow_fails_nothing_redis8_passes() {
    if io_uring_requested() == Some(true) {
        println!("redis-py's suite runs with ZWINDOW_TEST_IO_URING=0 or unset (once per CI run)");
        return;
    }
    let python = root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash .ci/test`",
        python.display()
    );
    let suite = suite_dir();
    // Two of each: one for the sync test files, one for the asyncio ones.
    let args = ["--enable-debug-command", "yes"];
    let z = [ZwindowServer::start(&args), ZwindowServer::start(&args)];
    let r8 = redis8_server();
    let r = [
        RedisServer::start_binary(&r8, &args),
        RedisServer::start_binary(&r8, &args),
    ];
    let here = root().join("tests/python/redis_py_suite");
    let out = Command::new(&python)
        .arg(here.join("compare.py"))
        .arg(&suite)
        .arg(here.join("known.tsv"))
        .arg(format!("{},{}", z[0].url(), z[1].url()))
        .arg(format!("{},{}", r[0].url(), r[1].url()))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "redis-py's suite: zwindow fails tests redis-server 8.0 passes ({}):\n{stdout}\n{}\n\
         --- zwindow log ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        z[0].log_tail()
    );
    // The client-side cache tests ran against zwindow and passed.
    assert!(
        stdout.contains("client-side cache (test_cache.py TestCache) on zwindow:")
            && !stdout.contains("TestCache) on zwindow: 0 passed"),
        "the client-side cache tests did not run against zwindow:\n{stdout}"
    );
}
