//! Redis's own test suite against zwindow: the TCL units of Redis 8.0.2
//! (from Debian's source package, built by `.ci/test` into `.cache/` and
//! named by `ZWINDOW_REDIS8_TESTS`, its `tests/` directory) run in external
//! mode, one fresh zwindow per unit, and each unit must pass at least as
//! many tests as `tests/tcl/baseline.txt` says: a ratchet, raised as
//! features land. Redis 8.0.2 is the oracle: zwindow answers as it.
//!
//! The replication units, the Sentinel suite and the cluster suite are
//! 8.0.2's too (`8.0/…` in `baseline-repl.txt` and `baseline-cluster.txt`);
//! a line without the prefix would run Redis 7.0.15's copy
//! (`ZWINDOW_REDIS_TESTS`).
//!
//! `tests/tcl/skip.txt` names the tests the harness skips, each with the
//! reason: tests of commands zwindow does not have yet (without the skip,
//! the first such test aborts the whole unit, hiding everything after it)
//! and the few known differences. Nothing in the server knows about them.
//!
//! Units tagged `external:skip` as a whole (`type/hash-field-expire`,
//! `acl`, `info`, `maxmemory`, the `integration/` units …) run in the
//! harness's own mode instead: it starts each server itself, from its
//! `default.conf` plus each test's overrides, as Redis's CI does
//! ([`run_unit_spawned`]); their ratchet is `tests/tcl/baseline-spawned.txt`.
//!
//! Run one unit by hand: see the README ("Redis's own test suite").
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A unit that runs longer than this is stopped; what passed until then counts.
const UNIT_TIMEOUT: Duration = Duration::from_secs(420);

/// The tag filter: tests that need replication, `DEBUG` internals of
/// redis-server or persistence cannot run externally.
const TAGS: &str = "-needs:repl -needs:debug -needs:save -needs:local-process";

/// Redis 7.0.15's source tree (its `tests/` runs the replication, Sentinel
/// and cluster suites).
fn suite_dir() -> PathBuf {
    let dir = std::env::var_os("ZWINDOW_REDIS_TESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-7.0.15"));
    assert!(
        dir.join("tests/test_helper.tcl").is_file(),
        "Redis's TCL test suite is not at {} (set ZWINDOW_REDIS_TESTS, or run `bash .ci/test`, \
         which fetches it)",
        dir.display()
    );
    dir
}

/// Redis 8.0.2's `tests/` directory: the suite of the external, TLS and
/// spawned ratchets.
fn redis8_tests() -> PathBuf {
    let dir = std::env::var_os("ZWINDOW_REDIS8_TESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-8.0.2/tests"));
    assert!(
        dir.join("test_helper.tcl").is_file(),
        "Redis 8.0's TCL test suite is not at {} (set ZWINDOW_REDIS8_TESTS, or run \
         `bash .ci/test`, which builds it)",
        dir.display()
    );
    dir
}

/// What one unit did.
#[derive(Debug, Default)]
struct UnitResult {
    passed: usize,
    failed: Vec<String>,
    exceptions: Vec<String>,
    timed_out: bool,
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_output(text: &str) -> UnitResult {
    let mut r = UnitResult::default();
    for line in text.lines().map(strip_ansi) {
        if line.starts_with("[ok]: ") {
            r.passed += 1;
        } else if let Some(name) = line.strip_prefix("[err]: ") {
            r.failed.push(name.to_string());
        } else if let Some(what) = line.strip_prefix("[exception]: ") {
            r.exceptions.push(what.to_string());
        }
    }
    r
}

/// Runs `unit` of the suite whose `tests/` directory is `tests` against a
/// fresh zwindow, in a private copy of the suite.
fn run_unit(tests: &Path, unit: &str, skipfile: &Path) -> (UnitResult, String) {
    let work = copy_suite(tests);
    let server = ZwindowServer::start(&["--enable-debug-command", "yes"]);
    let port = server.port().to_string();
    run_harness(
        &work,
        unit,
        &["--host", "127.0.0.1", "--port", &port, "--tags", TAGS],
        Some(skipfile),
    )
}

/// Runs `unit` over TLS (`./runtest --tls`): a fresh zwindow with Redis's
/// harness's TLS settings and the suite's certificates (`tests/tls/`,
/// made by its `utils/gen-test-certs.sh`), its TLS port given to the
/// harness as the server's port. The plain port stays on an ephemeral
/// port (Redis's harness sets `port 0`, which for zwindow means that).
fn run_unit_tls(tests: &Path, unit: &str, skipfile: &Path) -> (UnitResult, String) {
    let work = copy_suite(tests);
    let certs = with_certs(&work);
    let (_server, tls_port) = start_on_free_port(|port| {
        let mut args = vec!["--enable-debug-command".to_string(), "yes".to_string()];
        args.extend(tls_server_args(&certs, port));
        ZwindowServer::try_start(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    let port = tls_port.to_string();
    run_harness(
        &work,
        unit,
        &[
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--tls",
            "--tags",
            TAGS,
        ],
        Some(skipfile),
    )
}

/// The suite copy's `tests/tls`: the certificates `.ci/test` made in Redis
/// 7.0.15's suite (the 8.0.2 tree has none of its own), the same files the
/// harness would make.
fn with_certs(work: &PrivateDir) -> PathBuf {
    let certs = work.0.join("tests/tls");
    if !certs.is_dir() {
        let status = Command::new("cp")
            .arg("-a")
            .arg(tls_certs())
            .arg(&certs)
            .status()
            .expect("run cp");
        assert!(status.success(), "copying the test certificates failed");
    }
    certs
}

/// A private copy of a suite's `tests/` directory (the harness writes into it).
fn copy_suite(tests: &Path) -> PrivateDir {
    let work = PrivateDir::new("tcl");
    let status = Command::new("cp")
        .arg("-a")
        .arg(tests)
        .arg(work.0.join("tests"))
        .status()
        .expect("run cp");
    assert!(status.success(), "copying the suite failed");
    work
}

/// Runs the harness in `work` on `unit` with `mode_args`, up to
/// [`UNIT_TIMEOUT`], and reads what it printed.
fn run_harness(
    work: &PrivateDir,
    unit: &str,
    mode_args: &[&str],
    skipfile: Option<&Path>,
) -> (UnitResult, String) {
    let log = work.0.join("unit.log");
    let mut cmd = Command::new("tclsh");
    cmd.current_dir(&work.0)
        .args(["tests/test_helper.tcl", "--single", &unit_path(unit)])
        .args(mode_args)
        .args(["--clients", "1", "--timeout", "120"])
        // The harness listens on a port of its own (32 below --baseport);
        // a range near a fresh ephemeral port keeps two runs on one
        // machine (two checkouts, a run by hand) apart.
        .args(["--baseport", &harness_base_port().to_string()])
        .args(["--portcount", "64"]);
    if let Some(skip) = skipfile {
        cmd.arg("--skipfile").arg(skip);
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("create the unit log"))
        .stderr(Stdio::null())
        .spawn()
        .expect("run tclsh (installed by .ci/test)");
    let timed_out = wait_or_kill(&mut child, UNIT_TIMEOUT);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut r = parse_output(&text);
    r.timed_out = timed_out;
    (r, text)
}

/// Waits for `child` up to `limit`; true if it had to be killed.
fn wait_or_kill(child: &mut std::process::Child, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// The harness's name of a unit: `unit/X`, or `integration/X` as given.
fn unit_path(unit: &str) -> String {
    if unit.starts_with("integration/") {
        unit.to_string()
    } else {
        format!("unit/{unit}")
    }
}

/// A base port for the harness: it uses 32 ports below it, 64 above, and
/// each of those + 10000 (its TLS check). All of that stays below the
/// kernel's ephemeral range (32768 and up), where the client side of
/// every other test's connections takes ports: a spawned server that
/// lost its port to one of those would never start.
fn harness_base_port() -> u16 {
    use std::net::TcpListener;
    // One random start per test process; runs in this process (which
    // overlap) then take successive slots from it.
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos() as u64)
    });
    // Runs at the same time in this process take successive slots.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
    for _ in 0..200 {
        let slot = seed.wrapping_add(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        // 11000..=22000 in steps of 100: base - 32 .. base + 64 (+ 10000)
        // never reach 32768.
        let base = 11_000 + (slot % 111) as u16 * 100;
        if [base - 32, base, base + 63, base + 10_000]
            .into_iter()
            .all(free)
        {
            return base;
        }
    }
    21_111
}

/// Runs `unit` of the suite whose `tests/` directory is `tests` in the
/// harness's spawned mode: in a private copy of the suite, `src/redis-server`
/// (what the harness starts, with a config file) is a script that runs
/// zwindow with that file and its log on stdout, where the harness waits
/// for Redis's startup lines. The harness's `unixsocket` line stays: zwindow
/// listens there too, as Redis does. The units get the skip file of the
/// external ones.
fn run_unit_spawned(tests: &Path, unit: &str, skipfile: Option<&Path>) -> (UnitResult, String) {
    let work = spawned_copy(tests);
    match unit.strip_prefix("tls:") {
        // `tls:unit`: with the harness's --tls (every server it spawns
        // gets a tls-port, `port 0` unless the unit says otherwise, and
        // the suite's certificates: Redis 7.0.15's, as for the external
        // TLS units, when the suite has none).
        Some(unit) => {
            with_certs(&work);
            run_harness(&work, unit, &["--tls", "--tags", "-needs:repl"], skipfile)
        }
        None => run_harness(&work, unit, &["--tags", "-needs:repl"], skipfile),
    }
}

/// A private copy of the suite whose `src/redis-server` runs zwindow (see
/// [`run_unit_spawned`]), with Redis's tools beside it.
fn spawned_copy(tests: &Path) -> PrivateDir {
    let work = copy_suite(tests);
    let src = work.0.join("src");
    std::fs::create_dir_all(&src).expect("create src/");
    let shim = src.join("redis-server");
    std::fs::write(
        &shim,
        format!(
            // The suite's socket path (ZWINDOW_TEST_IO_URING) goes into the
            // config file the harness wrote, not among the options: tests
            // pass those in every form Redis parses (a last option without
            // its value, bare words after the file), where one more
            // option would change their meaning. Servers started without
            // a file (those error cases) take the default path.
            "#!/bin/sh\n\
             if [ -n '{line}' ] && [ -f \"$1\" ] && ! grep -q '^{line}$' \"$1\"; then\n\
             printf '\\n%s\\n' '{line}' >> \"$1\"\n\
             fi\n\
             exec '{zw}' \"$@\" 2>&1\n",
            zw = env!("CARGO_BIN_EXE_zwindow"),
            line = common::io_uring_args()
                .join(" ")
                .trim_start_matches("--")
                .to_string()
        ),
    )
    .expect("write the server script");
    let made_executable = Command::new("chmod").arg("+x").arg(&shim).status();
    assert!(made_executable.is_ok_and(|s| s.success()), "chmod failed");
    // Some tests run redis-cli and the file checkers from src/ too: the
    // suite's own build of them when there is one (Redis 8.0.2's, which
    // `.ci/test` builds), else Debian's (Redis 7.0.15's suite).
    for tool in [
        "redis-cli",
        "redis-check-aof",
        "redis-check-rdb",
        "redis-sentinel",
        "redis-benchmark",
    ] {
        let own = tests.parent().map(|root| root.join("src").join(tool));
        if let Some(own) = own.filter(|p| p.is_file()) {
            let _ = std::os::unix::fs::symlink(own, src.join(tool));
            continue;
        }
        if let Ok(out) = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
        {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !path.is_empty() {
                let _ = std::os::unix::fs::symlink(path, src.join(tool));
            }
        }
    }
    work
}

/// A replication unit in spawned mode, its `needs:repl` tests included
/// (see `tests/tcl/baseline-repl.txt`); `tls:unit` runs it with `--tls`,
/// where the harness gives every server it spawns a `tls-port` (and
/// `port 0`), the suite's certificates and `tls-replication yes`: its
/// replicas link over TLS.
fn run_repl_unit(tests: &Path, unit: &str, skipfile: &Path) -> (UnitResult, String) {
    let work = spawned_copy(tests);
    match unit.strip_prefix("tls:") {
        Some(unit) => {
            with_certs(&work);
            run_harness(&work, unit, &["--tls"], Some(skipfile))
        }
        None => run_harness(&work, unit, &[], Some(skipfile)),
    }
}

/// Redis 7.0.15's Sentinel suite (`./runtest-sentinel`): five zwindow
/// instances as `src/redis-server`, five of Debian's `redis-sentinel`.
/// Its instances' base ports are moved (24000, 26000) away from the
/// ranges the other units' harnesses take.
fn run_sentinel_suite(tests: &Path) -> (UnitResult, String) {
    run_instances_suite(tests, "sentinel", 24000, 26000, Duration::from_secs(900))
}

/// Redis 7.0.15's cluster suite (`./runtest-cluster`): twenty zwindow
/// instances as `src/redis-server` (bus ports 10000 above), managed by
/// the suite and by `redis-cli --cluster`. Base port 28000 (buses from
/// 38000), away from the other suites' ranges.
fn run_cluster_suite(tests: &Path) -> (UnitResult, String) {
    run_instances_suite(tests, "cluster", 23000, 28000, Duration::from_secs(2400))
}

/// One of the suites built on `tests/instances.tcl` (`tests/SUITE/run.tcl`)
/// in a private copy, its base ports moved, killed past `limit`. Passed:
/// its `OK` lines; failed: its `FAILED` lines.
fn run_instances_suite(
    tests: &Path,
    suite: &str,
    sentinel_port: u16,
    redis_port: u16,
    limit: Duration,
) -> (UnitResult, String) {
    let work = spawned_copy(tests);
    let instances = work.0.join("tests/instances.tcl");
    let text = std::fs::read_to_string(&instances).expect("read instances.tcl");
    let text = text
        .replace(
            "set ::sentinel_base_port 20000",
            &format!("set ::sentinel_base_port {sentinel_port}"),
        )
        .replace(
            "set ::redis_base_port 30000",
            &format!("set ::redis_base_port {redis_port}"),
        );
    std::fs::write(&instances, text).expect("write instances.tcl");
    let log = work.0.join(format!("{suite}.log"));
    let mut child = Command::new("tclsh")
        .current_dir(&work.0)
        .arg(format!("tests/{suite}/run.tcl"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).expect("create the log"))
        .stderr(Stdio::null())
        .spawn()
        .expect("run tclsh");
    let timed_out = wait_or_kill(&mut child, limit);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let mut r = UnitResult {
        timed_out,
        ..Default::default()
    };
    for line in text.lines().map(strip_ansi) {
        // `HH:MM:SS> name: OK` or `…: FAILED: why`.
        let Some((_, rest)) = line.split_once("> ") else {
            continue;
        };
        if rest.ends_with(": OK") || (rest.ends_with(" OK") && rest.contains(": ")) {
            r.passed += 1;
        } else if let Some((name, _)) = rest.split_once(": FAILED") {
            r.failed.push(name.to_string());
        }
    }
    (r, text)
}

/// `unit passed` lines, `#` comments.
fn baseline() -> BTreeMap<String, usize> {
    baseline_from("tests/tcl/baseline.txt")
}

fn baseline_from(file: &str) -> BTreeMap<String, usize> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {file}: {e}"));
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (unit, n) = l.split_once(char::is_whitespace).expect("`unit passed`");
            (unit.to_string(), n.trim().parse().expect("a count"))
        })
        .collect()
}

/// The skip file without its comments, as the harness reads it (one test
/// name or `/regexp` per line).
fn skipfile(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tcl/skip.txt");
    let text = std::fs::read_to_string(&src).expect("read tests/tcl/skip.txt");
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect();
    let out = dir.join("skip.txt");
    std::fs::write(&out, names.join("\n")).expect("write the skip file");
    out
}

/// Runs every unit of `baseline` with `run` and fails, with each unit's
/// failures and the last lines of the short ones, if any passed fewer
/// tests than its number.
fn check_units(
    title: &str,
    baseline: BTreeMap<String, usize>,
    mut run: impl FnMut(&str) -> (UnitResult, String),
) {
    let mut report = String::new();
    let mut short = Vec::new();
    for (unit, want) in baseline {
        let started = Instant::now();
        let (mut r, mut text) = run(&unit);
        // The harness could not bind its port (another run took it between
        // probe and bind): run the unit again, once.
        if text.contains("couldn't open socket: address already in use") {
            (r, text) = run(&unit);
        }
        report.push_str(&format!(
            "{unit:<24} passed {:>4} (baseline {want:>4}), failed {}, exceptions {}{} in {:.0?}\n",
            r.passed,
            r.failed.len(),
            r.exceptions.len(),
            if r.timed_out { ", TIMED OUT" } else { "" },
            started.elapsed()
        ));
        for name in r.failed.iter().chain(&r.exceptions) {
            report.push_str(&format!("    {name}\n"));
        }
        if r.passed < want {
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            short.push(format!(
                "{unit}: {} < {want}; last lines:\n{}",
                r.passed,
                strip_ansi(&tail.join("\n"))
            ));
        }
    }
    println!("{title}:\n{report}");
    record_timings(title, &report);
    assert!(
        short.is_empty(),
        "units below their baseline:\n{}\n\nall units:\n{report}",
        short.join("\n\n")
    );
}

/// The external ratchet over plain TCP. On the io_uring pass (and when
/// the variable is unset): the epoll pass runs the same units over TLS,
/// whose connections take the epoll path (see
/// [`redis_tcl_units_over_tls_meet_the_baseline`]), and runs the rest of the
/// suite's servers on epoll, so one run of these here keeps CI's time.
#[test]
fn redis_tcl_units_meet_the_baseline() {
    if io_uring_requested() == Some(false) {
        println!(
            "the external units over plain TCP run with ZWINDOW_TEST_IO_URING=1 or unset \
             (the epoll pass runs them over TLS)"
        );
        return;
    }
    let tests = redis8_tests();
    let scratch = PrivateDir::new("tcl-skip");
    let skip = skipfile(&scratch.0);
    check_units(
        "Redis 8.0.2 TCL units against zwindow",
        baseline(),
        |unit| run_unit(&tests, unit, &skip),
    );
}

/// The TLS pass (`tests/tcl/baseline-tls.txt`): `unit/tls` and every unit
/// of the external ratchet, over TLS. TLS connections take the epoll path whatever
/// `io-uring` says (see `network::tls`), so the io_uring pass of the
/// suite (`ZWINDOW_TEST_IO_URING=1`) would only repeat this one: it runs
/// on the epoll pass (and when the variable is unset), and says so.
#[test]
fn redis_tcl_units_over_tls_meet_the_baseline() {
    if io_uring_requested() == Some(true) {
        println!(
            "the TLS pass runs with ZWINDOW_TEST_IO_URING=0 or unset: TLS connections \
             take the epoll path on either"
        );
        return;
    }
    let tests = redis8_tests();
    tls_certs();
    let scratch = PrivateDir::new("tcl-skip");
    let skip = skipfile(&scratch.0);
    check_units(
        "Redis 8.0.2 TCL units over TLS against zwindow",
        baseline_from("tests/tcl/baseline-tls.txt"),
        |unit| run_unit_tls(&tests, unit, &skip),
    );
}

/// The units that run only in spawned mode (see [`run_unit_spawned`]),
/// named `7.0/unit` (Redis 7.0.15's suite, as the external units) or
/// `8.0/unit` (the suite `.ci/test` builds Redis 8.0 from,
/// `ZWINDOW_REDIS8_TESTS`: its `tests/` directory). Long, so on one
/// socket path: the epoll pass (`ZWINDOW_TEST_IO_URING=0`, or unset),
/// which balances the io_uring pass's replication units.
#[test]
fn spawned_units_meet_the_baseline() {
    if io_uring_requested() == Some(true) {
        println!(
            "the spawned units run with ZWINDOW_TEST_IO_URING=0 or unset \
             (the io_uring pass runs the replication units)"
        );
        return;
    }
    let redis7 = suite_dir().join("tests");
    let redis8 = redis8_tests();
    let scratch = PrivateDir::new("tcl-skip");
    let skip = skipfile(&scratch.0);
    check_units(
        "Redis TCL units (spawned mode) against zwindow",
        baseline_from("tests/tcl/baseline-spawned.txt"),
        |name| match name.split_once('/') {
            Some(("7.0", unit)) => run_unit_spawned(&redis7, unit, Some(&skip)),
            Some(("8.0", unit)) => run_unit_spawned(&redis8, unit, Some(&skip)),
            _ => panic!("{name}: spawned units are named 7.0/unit or 8.0/unit"),
        },
    );
}

/// Redis 7.0.15's replication units in spawned mode, their `needs:repl`
/// tests included, and the units of the external ratchet that have
/// `needs:repl` tests, run whole (no tag filter): the ratchet
/// `tests/tcl/baseline-repl.txt` but its Sentinel line (run by
/// `sentinel_suite_meets_the_baseline`). Long, so on one socket path:
/// the io_uring pass (`ZWINDOW_TEST_IO_URING=1`, or unset), the TLS pass
/// being the epoll one's.
#[test]
fn replication_units_meet_the_baseline() {
    if io_uring_requested() == Some(false) {
        println!(
            "the replication units run with ZWINDOW_TEST_IO_URING=1 or unset \
             (the epoll pass runs the TLS units)"
        );
        return;
    }
    let redis7 = suite_dir().join("tests");
    let redis8 = redis8_tests();
    let scratch = PrivateDir::new("tcl-skip");
    let skip = skipfile(&scratch.0);
    let mut units = baseline_from("tests/tcl/baseline-repl.txt");
    units.retain(|unit, _| !is_sentinel(unit));
    check_units("Redis replication units against zwindow", units, |name| {
        // `[tls:]8.0/unit` runs Redis 8.0's suite, `[tls:]unit` 7.0.15's.
        let (tls, unit) = match name.strip_prefix("tls:") {
            Some(unit) => ("tls:", unit),
            None => ("", name),
        };
        match unit.strip_prefix("8.0/") {
            Some(unit) => run_repl_unit(&redis8, &format!("{tls}{unit}"), &skip),
            None => run_repl_unit(&redis7, name, &skip),
        }
    });
}

/// The name of the Sentinel suite's line in `tests/tcl/baseline-repl.txt`.
const SENTINEL: &str = "sentinel";

/// Redis's Sentinel suite, its line of `tests/tcl/baseline-repl.txt`:
/// a test of its own so that, on the io_uring pass, it runs beside the
/// replication units once the external units are done, instead of after
/// them (about five minutes off CI's longest pass).
#[test]
fn sentinel_suite_meets_the_baseline() {
    if io_uring_requested() == Some(false) {
        println!(
            "the Sentinel suite runs with ZWINDOW_TEST_IO_URING=1 or unset \
             (the epoll pass runs the TLS units)"
        );
        return;
    }
    let mut units = baseline_from("tests/tcl/baseline-repl.txt");
    units.retain(|unit, _| is_sentinel(unit));
    assert!(
        !units.is_empty(),
        "baseline-repl.txt has a `{SENTINEL}` line"
    );
    check_units("Redis's Sentinel suite against zwindow", units, |unit| {
        // `8.0/sentinel`: Redis 8.0's suite and its redis-sentinel.
        match unit.strip_prefix("8.0/") {
            Some(_) => run_sentinel_suite(&redis8_tests()),
            None => run_sentinel_suite(&suite_dir().join("tests")),
        }
    });
}

/// The Sentinel suite's line, of Redis 7.0.15's suite or 8.0's.
fn is_sentinel(unit: &str) -> bool {
    unit.trim_start_matches("8.0/") == SENTINEL
}

/// Redis 7.0.15's cluster suite (`tests/tcl/baseline-cluster.txt`).
/// Long (about 12 minutes), so on one socket path: the epoll pass
/// (`ZWINDOW_TEST_IO_URING=0`, or unset), whose other TCL units are the
/// shorter set.
#[test]
fn cluster_suite_meets_the_baseline() {
    if io_uring_requested() == Some(true) {
        println!(
            "Redis's cluster suite runs with ZWINDOW_TEST_IO_URING=0 or unset \
             (the io_uring pass runs the replication units)"
        );
        return;
    }
    let tests = suite_dir().join("tests");
    check_units(
        "Redis's cluster suite against zwindow",
        baseline_from("tests/tcl/baseline-cluster.txt"),
        |unit| match unit {
            "cluster" => run_cluster_suite(&tests),
            "8.0/cluster" => run_cluster_suite(&redis8_tests()),
            unit => {
                panic!("{unit}: baseline-cluster.txt names the suite `cluster` or `8.0/cluster`")
            }
        },
    );
}

/// Appends a run's per-unit report to `target/tmp/tcl-report.txt`, which
/// `.ci/test` prints at its end: where CI's time goes, without
/// `--nocapture`'s flood.
fn record_timings(title: &str, report: &str) {
    use std::io::Write;
    let pass = match io_uring_requested() {
        Some(true) => "io_uring",
        Some(false) => "epoll",
        None => "default",
    };
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tcl-report.txt");
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = write!(file, "{title} ({pass} pass):\n{report}\n");
    }
}

#[test]
fn output_parsing() {
    let text = "\u{1b}[0;32;49mok\u{1b}[0m]: x (1 ms)\n[\u{1b}[0;32;49mok\u{1b}[0m]: a (1 ms)\n[err]: b in tests/unit/x.tcl\n[exception]: Executing test client: boom\n[ignore]: c: Tag denied\n[ok]: d (0 ms)";
    let r = parse_output(text);
    assert_eq!(r.passed, 2);
    assert_eq!(r.failed, vec!["b in tests/unit/x.tcl".to_string()]);
    assert_eq!(r.exceptions.len(), 1);
}
