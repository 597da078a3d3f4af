//! Starting like redis-server: a config file (quoting, `include`, stdin,
//! command-line overrides), Redis's fatal error for a bad line, CONFIG
//! REWRITE, `dir`, `rename-command`, pidfile/logfile, and the Docker
//! image's entrypoint forms and healthcheck — compared with redis-server
//! 7.0.15 wherever it has the same behaviour.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{PrivateDir, RedisServer, ZwindowServer, free_port, parse_reply, ping_ok};

const ZWINDOW: &str = env!("CARGO_BIN_EXE_zwindow");

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs a server that is expected to refuse to start: (exit code, stderr).
fn refused(exe: &str, dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(exe)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{exe} {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The oracle zwindow answers as: Redis 8.0.
fn redis_server() -> String {
    common::redis8_server()
}

/// Redis 8.0 holds unknown directives that have arguments as possible
/// module settings; with no module to claim them it logs them after its
/// banner and exits 1 (`moduleLoadFromQueue`). Redis logs to stdout,
/// zwindow to stderr: both streams are read.
#[test]
fn unknown_settings_stop_the_server_once_started() {
    let dir = PrivateDir::new("conf-unresolved");
    let d = &dir.0;
    for (i, (text, args, lines)) in [
        ("port 0\nfoo bar\n", vec![], vec![">>> 'foo bar'"]),
        (
            "port 0\nfoo bar\nfoo baz qux\n",
            vec![],
            vec![">>> 'foo baz qux'"],
        ),
        ("port 0\n", vec!["--nosuch", "x"], vec![">>> 'nosuch x'"]),
    ]
    .into_iter()
    .enumerate()
    {
        let file = write(d, &format!("unresolved{i}.conf"), text);
        let mut argv = vec![file.to_str().unwrap()];
        argv.extend(args);
        for exe in [redis_server(), env!("CARGO_BIN_EXE_zwindow").to_string()] {
            let out = Command::new(&exe)
                .args(&argv)
                .current_dir(d)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(1), "{exe} {argv:?}: {text}");
            for want in ["Unresolved Configuration(s) Detected:"]
                .iter()
                .chain(&lines)
                .chain(&["Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting"])
            {
                assert!(text.contains(want), "{exe} {argv:?}: no {want:?} in\n{text}");
            }
        }
    }
}

#[test]
fn bad_config_fails_exactly_as_redis() {
    let dir = PrivateDir::new("conf-fatal");
    let d = &dir.0;
    // An unknown directive with arguments is held as a possible module
    // setting (Redis 8.0): see `unknown_settings_stop_the_server_once_started`.
    write(d, "inc/bad.conf", "# included\nhz 5\nnosuch-directive\n");
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("port 0\n# comment\n\nfoo\n", vec![]),
        ("port abc\n", vec![]),
        ("port 1 2\n", vec![]),
        ("requirepass \"abc\n", vec![]),
        ("requirepass \"abc\"def\n", vec![]),
        ("hz 10\ninclude inc/*.conf\n", vec![]),
        ("timeout -1\n", vec![]),
        ("protected-mode maybe\n", vec![]),
        ("maxclients 0\n", vec![]),
        ("loglevel loud\n", vec![]),
        ("notify-keyspace-events X\n", vec![]),
        ("client-output-buffer-limit normal 1 2\n", vec![]),
        ("rename-command nosuchcommand foo\n", vec![]),
        ("save 900\n", vec![]),
        ("save abc 1\n", vec![]),
        ("appendonly maybe\n", vec![]),
        ("daemonize perhaps\n", vec![]),
        ("supervised bogus\n", vec![]),
        ("oom-score-adj-values 1 2\n", vec![]),
        ("oom-score-adj-values 1 2 9000\n", vec![]),
        ("user alice on\nuser alice off\n", vec![]),
        ("user alice on badrule\n", vec![]),
        ("user alice badrule\n", vec![]),
        ("user alice on (~k +get\n", vec![]),
        ("maxmemory 12x\n", vec![]),
        ("maxmemory-policy bogus\n", vec![]),
        ("maxmemory-samples 0\n", vec![]),
        ("maxmemory-eviction-tenacity 101\n", vec![]),
        ("acl-pubsub-default some\n", vec![]),
        ("acllog-max-len -1\n", vec![]),
        ("slowlog-max-len -1\n", vec![]),
        ("latency-monitor-threshold -1\n", vec![]),
        (
            "port 0\n",
            vec!["--user".into(), "bob".into(), "on".into(), "nope".into()],
        ),
        ("port 0\n", vec!["--hz".into(), "abc".into()]),
        ("\n\n", vec!["--port".into(), "0".into(), "--bogus".into()]),
    ];
    for (i, (text, args)) in cases.iter().enumerate() {
        let file = write(d, &format!("case{i}.conf"), text);
        let mut argv = vec![file.to_str().unwrap().to_string()];
        argv.extend(args.iter().cloned());
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let want = refused(&redis_server(), d, &argv);
        let got = refused(ZWINDOW, d, &argv);
        assert_eq!(want.0, Some(1), "redis-server accepted case {i}: {text:?}");
        assert_eq!(got, want, "case {i}: {text:?} {args:?}");
    }
}

#[test]
fn file_quoting_include_and_command_line_overrides() {
    let dir = PrivateDir::new("conf-load");
    let d = &dir.0;
    write(d, "conf.d/a.conf", "timeout 7\n");
    write(d, "conf.d/b.conf", "maxclients 321\nhz 15\n");
    let text = "\
# a comment
   hz 5
requirepass \"p w\\x21\\n\"
notify-keyspace-events 'KEA'
include {dir}/conf.d/*.conf
include {dir}/empty.d/*.conf
client-output-buffer-limit pubsub 64mb 16mb 90
save \"\"
latency-tracking-info-percentiles 50 99
";
    let file = write(d, "redis.conf", &text.replace("{dir}", d.to_str().unwrap()));
    let overrides = ["--hz", "20", "--list-max-ziplist-size", "-3"];
    let r = RedisServer::start_config_binary(&redis_server(), &file, &overrides);
    let mut cmd = Command::new(ZWINDOW);
    cmd.arg(&file)
        .args(["--bind", "127.0.0.1", "--port", "0"])
        .args(overrides)
        .current_dir(d);
    let z = ZwindowServer::start_command(cmd);
    let pass: &[u8] = b"p w!\n";
    let names = [
        "hz",
        "requirepass",
        "notify-keyspace-events",
        "timeout",
        "maxclients",
        "client-output-buffer-limit",
        "list-max-listpack-size",
        "latency-tracking-info-percentiles",
    ];
    let mut rc = r.conn();
    let mut zc = z.conn();
    for c in [&mut rc, &mut zc] {
        assert_eq!(c.cmd(&[b"AUTH", pass]), b"+OK\r\n");
    }
    for name in names {
        let get: [&[u8]; 3] = [b"CONFIG", b"GET", name.as_bytes()];
        assert_eq!(zc.cmd(&get), rc.cmd(&get), "CONFIG GET {name}");
    }
}

#[test]
fn config_from_stdin() {
    let port = free_port();
    let mut child = Command::new(ZWINDOW)
        .args(["-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        write!(stdin, "port {port}\nbind 127.0.0.1\nhz 7\n").unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ping_ok(port) {
        assert!(Instant::now() < deadline, "zwindow - did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = common::RawConn::connect(([127, 0, 0, 1], port).into(), "zwindow");
    assert_eq!(c.cmd_str("CONFIG GET hz"), b"*2\r\n$2\r\nhz\r\n$1\r\n7\r\n");
    let _ = child.kill();
    let _ = child.wait();
}

/// ACL users and the memory settings through the file and the command
/// line, as redis-server takes them: `user` lines from both (the
/// command line's one-argument and several-word forms), CONFIG GET of the
/// settings, and `aclfile` immutable at runtime.
#[test]
fn users_and_memory_settings_as_redis() {
    let dir = PrivateDir::new("conf-users");
    let d = &dir.0;
    let text = "\
user alice on >apw ~* +@all
maxmemory 100mb
maxmemory-policy allkeys-lru
maxmemory-samples 7
lfu-log-factor 3
slowlog-log-slower-than 500
slowlog-max-len 5
latency-monitor-threshold 20
acllog-max-len 9
acl-pubsub-default allchannels
";
    let file = write(d, "redis.conf", text);
    let overrides = ["--user", "bob", "on", ">bpw", "+get", "~b*"];
    let r = RedisServer::start_config_binary(&redis_server(), &file, &overrides);
    let mut cmd = Command::new(ZWINDOW);
    cmd.arg(&file)
        .args(["--bind", "127.0.0.1", "--port", "0"])
        .args(overrides)
        .args(["--user", "carol on >cpw +@read ~c*"])
        .current_dir(d);
    let z = ZwindowServer::start_command(cmd);
    let mut rc = r.conn();
    let mut zc = z.conn();
    for name in [
        "maxmemory",
        "maxmemory-policy",
        "maxmemory-samples",
        "lfu-log-factor",
        "slowlog-log-slower-than",
        "slowlog-max-len",
        "latency-monitor-threshold",
        "acllog-max-len",
        "acl-pubsub-default",
        "aclfile",
    ] {
        let get: [&[u8]; 3] = [b"CONFIG", b"GET", name.as_bytes()];
        assert_eq!(zc.cmd(&get), rc.cmd(&get), "CONFIG GET {name}");
    }
    for cmd in [
        &[&b"CONFIG"[..], b"SET", b"aclfile", b"/tmp/x.acl"][..],
        &[b"AUTH", b"alice", b"apw"],
        &[b"AUTH", b"bob", b"bpw"],
        &[b"SET", b"bx", b"1"],
        &[b"GET", b"bx"],
    ] {
        assert_eq!(zc.cmd(cmd), rc.cmd(cmd), "{cmd:?}");
    }
    assert_eq!(zc.cmd(&[b"AUTH", b"carol", b"cpw"]), b"+OK\r\n");
    assert_eq!(zc.cmd(&[b"GET", b"cx"]), b"$-1\r\n");
    let denied = zc.cmd(&[b"SET", b"cx", b"1"]);
    assert!(denied.starts_with(b"-NOPERM"), "{denied:?}");
}

/// `user` lines and an `aclfile` together stop the server, as Redis does.
#[test]
fn users_with_an_aclfile_are_refused() {
    let dir = PrivateDir::new("conf-aclfile");
    let d = &dir.0;
    let acl = write(d, "users.acl", "user default on nopass ~* &* +@all\n");
    let file = write(
        d,
        "redis.conf",
        &format!("aclfile {}\nuser bob on\n", acl.display()),
    );
    let file = file.to_str().unwrap();
    // A real port: with `--port 0` redis-server exits before it loads users.
    let port = free_port().to_string();
    let want = refused(&redis_server(), d, &[file, "--port", &port]);
    let got = refused(ZWINDOW, d, &[file, "--port", &port]);
    assert_eq!(want.0, Some(1));
    assert_eq!(got.0, want.0);
    assert!(
        got.1
            .contains("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid."),
        "{}",
        got.1
    );
}

/// The rewritten file, with the lines that differ between two servers by
/// construction (their ports, directories and redis-server's `bind`,
/// which is zwindow's default) left out; the part CONFIG
/// REWRITE appended is sorted (redis-server appends in hash order).
fn rewritten(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    // `io-uring yes` is the test switch's (ZWINDOW_TEST_IO_URING), which
    // redis-server does not take.
    let skip = ["port ", "dir ", "bind ", "io-uring "];
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !skip.iter().any(|s| l.starts_with(s)))
        .map(str::to_string)
        .collect();
    match lines
        .iter()
        .position(|l| l == "# Generated by CONFIG REWRITE")
    {
        Some(i) => {
            let mut tail = lines[i + 1..].to_vec();
            tail.sort();
            lines[..=i].iter().cloned().chain(tail).collect()
        }
        None => lines,
    }
}

#[test]
fn config_rewrite_as_redis() {
    let text = "\
# Redis configuration file example.
# (comments and blank lines stay)

hz 5
timeout 0
save \"\"
maxclients 100
maxclients 200
  # indented comment
tcp-keepalive 60
zset-max-ziplist-entries 64
bgsave-cpulist 0
user bob on >bpw ~* +@all
";
    // redis-server refuses the unknown directive at startup: it is added
    // to both files once the servers run.
    let dir = PrivateDir::new("conf-rewrite");
    let rfile = write(&dir.0, "r/redis.conf", text);
    let zfile = write(&dir.0, "z/redis.conf", text);
    let r = RedisServer::start_config_binary(&redis_server(), &rfile, &[]);
    let start = || {
        let mut cmd = Command::new(ZWINDOW);
        cmd.arg(&zfile)
            .args(["--bind", "127.0.0.1", "--port", "0"])
            .current_dir(zfile.parent().unwrap());
        ZwindowServer::start_command(cmd)
    };
    let z = start();
    for f in [&rfile, &zfile] {
        let mut t = std::fs::read_to_string(f).unwrap();
        t.push_str("unknown-directive-kept-as-comment yes\n");
        std::fs::write(f, t).unwrap();
    }
    let sets = [
        "CONFIG SET hz 33",
        "CONFIG SET maxclients 77",
        "CONFIG SET timeout 9",
        "CONFIG SET notify-keyspace-events KEA",
        "CONFIG SET client-output-buffer-limit pubsub 64mb 16mb 90",
        "CONFIG SET proto-max-bulk-len 1gb",
        "CONFIG SET zset-max-listpack-entries 128",
        "CONFIG SET latency-tracking no",
        "CONFIG SET maxmemory 64mb",
        "CONFIG SET maxmemory-policy allkeys-lru",
        "CONFIG SET slowlog-max-len 7",
        "CONFIG SET hide-user-data-from-log yes",
        "CONFIG SET locale-collate C",
        "CONFIG SET max-new-connections-per-cycle 20",
        "CONFIG SET cluster-announce-human-nodename n1",
        "CONFIG SET replica-full-sync-buffer-limit 1mb",
        "CONFIG SET cluster-compatibility-sample-ratio 5",
        "CONFIG SET repl-rdb-channel no",
        "ACL SETUSER alice on >apw ~a* +get",
        "ACL DELUSER bob",
        "CONFIG REWRITE",
    ];
    let (mut rc, mut zc) = (r.conn(), z.conn());
    for line in sets {
        assert_eq!(zc.cmd_str(line), rc.cmd_str(line), "{line}");
    }
    assert_eq!(rewritten(&zfile), rewritten(&rfile));
    // The rewritten file starts the server with the same settings.
    drop(zc);
    drop(z);
    let z = start();
    let mut zc = z.conn();
    assert_eq!(
        zc.cmd_str("CONFIG GET maxclients"),
        b"*2\r\n$10\r\nmaxclients\r\n$2\r\n77\r\n"
    );
    assert_eq!(zc.cmd_str("AUTH alice apw"), b"+OK\r\n");
}

#[test]
fn rewrite_without_file_and_window_rules() {
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start_binary(&redis_server(), &[]);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    assert_eq!(zc.cmd_str("CONFIG REWRITE"), rc.cmd_str("CONFIG REWRITE"));

    let dir = PrivateDir::new("conf-zwindow");
    let file = write(&dir.0, "z.conf", "zwindow news:* 24h\nzwindow old:* 5s\n");
    let mut cmd = Command::new(ZWINDOW);
    cmd.arg(&file).args(["--bind", "127.0.0.1", "--port", "0"]);
    let z = ZwindowServer::start_command(cmd);
    let mut zc = z.conn();
    zc.cmd_str("ZWINDOW DEL old:*");
    zc.cmd_str("ZWINDOW SET \"beats *\" 500 MS");
    assert_eq!(zc.cmd_str("CONFIG REWRITE"), b"+OK\r\n");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("zwindow news:* 86400s s\n"), "{text}");
    assert!(text.contains("zwindow \"beats *\" 500ms ms\n"), "{text}");
    assert!(!text.contains("old:*"), "{text}");
}

#[test]
fn dir_get_and_set_as_redis() {
    // Redis 7.0 refuses CONFIG SET dir (a protected config) by default.
    let z = ZwindowServer::start(&[]);
    let r = RedisServer::start_binary(&redis_server(), &[]);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    let refused = format!("CONFIG SET dir {}", std::env::temp_dir().display());
    assert_eq!(zc.cmd_str(&refused), rc.cmd_str(&refused));
    let z = ZwindowServer::start(&["--enable-protected-configs", "local"]);
    let r = RedisServer::start_binary(&redis_server(), &["--enable-protected-configs", "local"]);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    let got = parse_reply(&zc.cmd_str("CONFIG GET dir"));
    let cwd = std::fs::canonicalize(z.dir()).unwrap();
    assert_eq!(got.array()[1].bulk(), cwd.to_str().unwrap().as_bytes());
    let target = PrivateDir::new("conf-dir");
    let set = format!("CONFIG SET dir {}", target.0.display());
    assert_eq!(zc.cmd_str(&set), rc.cmd_str(&set));
    assert_eq!(zc.cmd_str("CONFIG GET dir"), rc.cmd_str("CONFIG GET dir"));
    for bad in [
        "CONFIG SET dir /nonexistent/zw",
        "CONFIG SET dir /etc/hostname",
    ] {
        assert_eq!(zc.cmd_str(bad), rc.cmd_str(bad), "{bad}");
    }
}

#[test]
fn info_names_config_file_and_executable() {
    let dir = PrivateDir::new("conf-info");
    let file = write(&dir.0, "my.conf", "hz 11\n");
    let mut cmd = Command::new(ZWINDOW);
    cmd.arg("my.conf")
        .args(["--bind", "127.0.0.1", "--port", "0"])
        .current_dir(&dir.0);
    let z = ZwindowServer::start_command(cmd);
    let info = String::from_utf8(z.conn().cmd_str("INFO server")).unwrap();
    assert!(
        info.contains(&format!("config_file:{}\r\n", file.display())),
        "{info}"
    );
    let exe = std::fs::canonicalize(ZWINDOW).unwrap();
    assert!(
        info.contains(&format!("executable:{}\r\n", exe.display())),
        "{info}"
    );
}

#[test]
fn rename_command_as_redis() {
    let dir = PrivateDir::new("conf-rename");
    let file = write(
        &dir.0,
        "r.conf",
        "rename-command flushall \"\"\nrename-command config my-config\n",
    );
    let r = RedisServer::start_config_binary(&redis_server(), &file, &[]);
    let mut cmd = Command::new(ZWINDOW);
    cmd.arg(&file).args(["--bind", "127.0.0.1", "--port", "0"]);
    let z = ZwindowServer::start_command(cmd);
    let (mut zc, mut rc) = (z.conn(), r.conn());
    for line in [
        "FLUSHALL",
        "CONFIG GET hz",
        "MY-CONFIG GET hz",
        "my-config set hz 12",
        "SET k v",
    ] {
        assert_eq!(zc.cmd_str(line), rc.cmd_str(line), "{line}");
    }
}

#[test]
fn pidfile_and_logfile() {
    let dir = PrivateDir::new("conf-files");
    let port = free_port();
    let pid = dir.0.join("z.pid");
    let log = dir.0.join("z.log");
    let mut child = Command::new(ZWINDOW)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .arg("--pidfile")
        .arg(&pid)
        .arg("--logfile")
        .arg(&log)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ping_ok(port) {
        assert!(Instant::now() < deadline, "did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let written = std::fs::read_to_string(&pid).unwrap();
    assert_eq!(written, format!("{}\n", child.id()));
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("listening on")
    );
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    child.wait().unwrap();
    assert!(!pid.exists(), "pidfile left behind");
    let (code, err) = refused(ZWINDOW, &dir.0, &["--logfile", "/nonexistent/dir/z.log"]);
    let (rcode, rerr) = refused(
        &redis_server(),
        &dir.0,
        &["--logfile", "/nonexistent/dir/z.log"],
    );
    assert_eq!((code, err), (rcode, rerr));
}

/// A directory for PATH holding `redis-server` → the zwindow binary, as
/// the image links it.
fn image_path(dir: &Path) -> String {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(ZWINDOW, bin.join("redis-server")).unwrap();
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn entrypoint() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/docker-entrypoint.sh")
}

fn defaults() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/defaults.conf")
}

#[test]
fn docker_entrypoint_forms() {
    let dir = PrivateDir::new("conf-entry");
    let path = image_path(&dir.0);
    let conf = write(&dir.0, "usr/local/etc/redis/redis.conf", "port 0\nhz 13\n");
    let conf = conf.to_str().unwrap();
    let forms: Vec<(Vec<&str>, &str, &str)> = vec![
        // command: redis-server /usr/local/etc/redis/redis.conf
        (vec!["redis-server", conf], "hz", "13"),
        // command: /usr/local/etc/redis/redis.conf
        (vec![conf], "hz", "13"),
        // command: ["redis-server", "--appendonly", "no", "--port", "0"]
        (
            vec!["redis-server", "--appendonly", "no", "--port", "0"],
            "appendonly",
            "no",
        ),
        // command: ["--port", "0", "--hz", "17"]
        (vec!["--port", "0", "--hz", "17"], "hz", "17"),
        // command: redis-server --requirepass x --port 0 (AUTH first)
        (
            vec!["redis-server", "--requirepass", "x", "--port", "0"],
            "requirepass",
            "x",
        ),
    ];
    for (args, name, want) in forms {
        let mut cmd = Command::new("sh");
        cmd.arg(entrypoint())
            .args(&args)
            .env("PATH", &path)
            .env("ZWINDOW_DEFAULTS", defaults());
        let z = ZwindowServer::start_command(cmd);
        let mut c = z.conn();
        if name == "requirepass" {
            assert_eq!(c.cmd_str("AUTH x"), b"+OK\r\n");
        }
        let got = parse_reply(&c.cmd(&[b"CONFIG", b"GET", name.as_bytes()]));
        assert_eq!(got.array()[1].bulk(), want.as_bytes(), "{args:?}");
        // The image's defaults: every interface, no protected mode.
        let got = parse_reply(&c.cmd_str("CONFIG GET protected-mode"));
        assert_eq!(got.array()[1].bulk(), b"no", "{args:?}");
    }
    // Anything else runs as given.
    let out = Command::new("sh")
        .arg(entrypoint())
        .args(["echo", "hello"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"hello\n");
}

#[test]
fn healthcheck_finds_port_and_ignores_password() {
    let dir = PrivateDir::new("conf-health");
    let path = image_path(&dir.0);
    let port = free_port().to_string();
    let conf = write(
        &dir.0,
        "redis.conf",
        &format!("port {port}\nrequirepass secret\n"),
    );
    let mut cmd = Command::new("sh");
    cmd.arg(entrypoint())
        .args(["redis-server", conf.to_str().unwrap()])
        .env("PATH", &path)
        .env("ZWINDOW_DEFAULTS", defaults());
    let mut z = ZwindowServer::start_command(cmd);
    let check = |pid: u32| {
        Command::new(ZWINDOW)
            .args(["--healthcheck", &pid.to_string()])
            .env("ZWINDOW_DEFAULTS", defaults())
            .output()
            .unwrap()
    };
    let out = check(z.pid());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!(":{port}: -NOAUTH")));
    let pid = z.pid();
    z.terminate(Duration::from_secs(5)).unwrap();
    assert!(!check(pid).status.success());
}

/// Stock configs load: the TCL suite's `default.conf` and, when the
/// redis-server package installed it, Debian's `/etc/redis/redis.conf`
/// (its pidfile, logfile and daemonize overridden, as a test must).
#[test]
fn stock_redis_conf_files_load() {
    let suite =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-7.0.15/tests/assets/default.conf");
    let debian = PathBuf::from("/etc/redis/redis.conf");
    let mut loaded = 0;
    for file in [suite, debian] {
        if !file.is_file() {
            continue;
        }
        let dir = PrivateDir::new("conf-stock");
        let mut cmd = Command::new(ZWINDOW);
        cmd.arg(&file)
            .args(["--bind", "127.0.0.1", "--port", "0", "--daemonize", "no"])
            .args(["--pidfile", "", "--logfile", ""])
            .arg("--dir")
            .arg(&dir.0);
        let z = ZwindowServer::start_command(cmd);
        assert_eq!(z.conn().cmd_str("PING"), b"+PONG\r\n", "{}", file.display());
        loaded += 1;
    }
    assert!(loaded > 0, "no stock config file found to load");
}

/// The values of a compose file's `key:` lines, in the flow-sequence form
/// the examples use (`command: ["redis-server", "--appendonly", "yes"]`),
/// one line each.
fn flow(yaml: &str, key: &str) -> Vec<Vec<String>> {
    yaml.lines()
        .filter_map(|l| l.trim().strip_prefix(key))
        .map(|v| {
            let v = v.trim();
            assert!(v.starts_with('[') && v.ends_with(']'), "{key} {v}");
            v[1..v.len() - 1]
                .split(',')
                .map(|w| w.trim().trim_matches('"').to_string())
                .collect()
        })
        .collect()
}

/// `examples/compose/docker-compose.yml`: every service's `command:` runs
/// through the image's entrypoint as the container would run it (the
/// mounted redis.conf at its own path; the port, `dir` and password
/// overridden on the command line so the test runs anywhere), the server
/// reports the settings the file gives it, and the healthcheck is the
/// image's. The compose file is read for its `command:` and `test:` lines,
/// in the flow-sequence form it uses.
#[test]
fn compose_example_commands_start() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compose");
    let yaml = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap();
    let commands = flow(&yaml, "command:");
    assert_eq!(commands.len(), 2, "{commands:?}");
    for test in flow(&yaml, "test:") {
        assert_eq!(test, ["CMD", "zwindow", "--healthcheck"]);
    }
    assert!(yaml.contains("- cache-data:/data") && yaml.contains("- sessions-data:/data"));
    let dir = PrivateDir::new("conf-compose");
    let path = image_path(&dir.0);
    for command in commands {
        // The mounted file, at the path the compose file mounts it on.
        let args: Vec<String> = command
            .iter()
            .map(|a| match a.as_str() {
                "/usr/local/etc/redis/redis.conf" => root.join("redis.conf").display().to_string(),
                _ => a.clone(),
            })
            .collect();
        let data = dir.0.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let port = free_port().to_string();
        let mut cmd = Command::new("sh");
        cmd.arg(entrypoint())
            .args(&args)
            .args(["--port", &port, "--dir", data.to_str().unwrap()])
            .env("PATH", &path)
            .env("ZWINDOW_DEFAULTS", defaults());
        let z = ZwindowServer::start_command(cmd);
        let mut c = z.conn();
        let get = |c: &mut common::RawConn, name: &str| {
            let r = parse_reply(&c.cmd(&[b"CONFIG", b"GET", name.as_bytes()]));
            String::from_utf8_lossy(r.array()[1].bulk()).into_owned()
        };
        if args.iter().any(|a| a.ends_with("redis.conf")) {
            // Its password, then what the file sets.
            assert_eq!(c.cmd_str("AUTH change-me"), b"+OK\r\n");
            assert_eq!(get(&mut c, "dbfilename"), "sessions.rdb");
            assert_eq!(get(&mut c, "maxmemory-policy"), "allkeys-lru");
            assert_eq!(get(&mut c, "save"), "300 1 60 1000");
        } else {
            assert_eq!(get(&mut c, "save"), "60 1");
        }
        let check = Command::new(ZWINDOW)
            .args(["--healthcheck", &z.pid().to_string()])
            .env("ZWINDOW_DEFAULTS", defaults())
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
}

/// `examples/compose/cluster/docker-compose.yml` without Docker: its six
/// nodes' `command:` lines run through the image's entrypoint as the
/// containers would, each on ports of its own of 127.0.0.1 (in the compose
/// network every container has 6379 and 16379) and with a long node
/// timeout, then its `cluster-create`
/// command with the nodes' service names mapped to those ports. The cluster
/// must form as redis-cli promises: ok on every node, three primaries
/// serving all the slots, each with one replica in sync, and redirections
/// naming the hostnames the nodes announce (what clients in the compose
/// network resolve).
#[test]
fn compose_cluster_example_forms_a_cluster() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/compose/cluster");
    let yaml = std::fs::read_to_string(root.join("docker-compose.yml")).unwrap();
    let commands = flow(&yaml, "command:");
    let (nodes, create): (Vec<_>, Vec<_>) =
        commands.into_iter().partition(|c| c[0] == "redis-server");
    assert_eq!((nodes.len(), create.len()), (6, 1), "{nodes:?} {create:?}");
    let dir = PrivateDir::new("conf-compose-cluster");
    let path = image_path(&dir.0);
    // hostname -> (server, port)
    let mut servers: Vec<(String, ZwindowServer, u16)> = Vec::new();
    for (i, args) in nodes.iter().enumerate() {
        let hostname = args
            .iter()
            .position(|a| a == "--cluster-announce-hostname")
            .map(|p| args[p + 1].clone())
            .expect("each node announces its hostname");
        assert_eq!(hostname, format!("node-{}", i + 1));
        let data = dir.0.join(&hostname);
        std::fs::create_dir_all(&data).unwrap();
        let (z, _) = common::start_on_free_port(|cport| {
            let mut cmd = Command::new("sh");
            cmd.arg(entrypoint())
                .args(args)
                .args(["--port", &free_port().to_string()])
                .args(["--cluster-port", &cport.to_string()])
                .args(["--dir", data.to_str().unwrap()])
                // Failure detection is not tested here: a loaded machine
                // must not fail a primary over while the cluster forms.
                .args(["--cluster-node-timeout", "60000"])
                .env("PATH", &path)
                .env("ZWINDOW_DEFAULTS", defaults());
            ZwindowServer::try_start_command(cmd)
        });
        let port = z.port();
        servers.push((hostname, z, port));
    }
    let address = |host_port: &str| -> String {
        let host = host_port.strip_suffix(":6379").unwrap_or(host_port);
        match servers.iter().find(|(h, _, _)| h == host) {
            Some((_, _, port)) => format!("127.0.0.1:{port}"),
            None => host_port.to_string(),
        }
    };
    let create = &create[0];
    assert_eq!(&create[..3], ["redis-cli", "--cluster", "create"]);
    let args: Vec<String> = create[1..].iter().map(|a| address(a)).collect();
    let out = Command::new("redis-cli")
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run redis-cli");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("[OK] All 16384 slots covered."),
        "redis-cli {args:?}:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Every node ok, three primaries with slots, three replicas of three
    // different primaries, their links up.
    let text_of = |z: &ZwindowServer, args: &[&[u8]]| -> String {
        // Six debug builds syncing replicas on a shared machine: patience.
        let mut c = z.conn();
        c.set_timeout(Duration::from_secs(60));
        let r = parse_reply(&c.cmd(args));
        String::from_utf8_lossy(r.bulk()).into_owned()
    };
    let settled = || {
        let all_ok = servers
            .iter()
            .all(|(_, z, _)| text_of(z, &[b"CLUSTER", b"INFO"]).contains("cluster_state:ok"));
        let nodes = text_of(&servers[0].1, &[b"CLUSTER", b"NODES"]);
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split(' ').collect::<Vec<_>>())
            .collect();
        let primaries: Vec<&str> = lines
            .iter()
            .filter(|f| f.len() > 8 && f[2].contains("master"))
            .map(|f| f[0])
            .collect();
        let mut followed: Vec<&str> = lines
            .iter()
            .filter(|f| f.len() >= 8 && f[2].contains("slave"))
            .map(|f| f[3])
            .collect();
        followed.sort_unstable();
        followed.dedup();
        let linked = servers.iter().all(|(_, z, _)| {
            let info = text_of(z, &[b"INFO", b"replication"]);
            info.contains("role:master") || info.contains("master_link_status:up")
        });
        let shape = primaries.len() == 3
            && followed.len() == 3
            && followed.iter().all(|p| primaries.contains(p));
        (all_ok && shape && linked, nodes)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (done, nodes) = settled();
        if done {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster never settled:\n{nodes}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // A key of another node's: the redirection names it by its hostname
    // (and here its remapped port).
    let (_, first, _) = &servers[0];
    let mut c = first.conn();
    let moved = (0..100)
        .map(|i| {
            String::from_utf8_lossy(&c.cmd(&[b"GET", format!("k{i}").as_bytes()])).into_owned()
        })
        .find(|r| r.starts_with("-MOVED "))
        .expect("some key served by another node");
    let target = moved.trim_end().rsplit(' ').next().unwrap().to_string();
    let (host, port) = target.rsplit_once(':').unwrap();
    assert!(
        servers
            .iter()
            .any(|(h, _, p)| h == host && p.to_string() == port),
        "{moved}"
    );
}

/// Settings given on the command line as redis-server 7.0.15 reads them:
/// `shutdown-on-sig*` flags shown in their declared order (and no value
/// refused: the server does not start), `enable-debug-command local`.
#[test]
fn flag_settings_and_local_debug_match_redis() {
    let args = [
        "--shutdown-on-sigint",
        "nosave force now",
        "--shutdown-on-sigterm",
        "default now",
        "--enable-debug-command",
        "local",
    ];
    let r = RedisServer::start_binary(&redis_server(), &args);
    let z = ZwindowServer::start(&args);
    let queries: [&[&[u8]]; 7] = [
        &[b"CONFIG", b"GET", b"shutdown-on-sigint"],
        &[b"CONFIG", b"GET", b"shutdown-on-sigterm"],
        &[b"CONFIG", b"SET", b"shutdown-on-sigint", b"force save"],
        &[b"CONFIG", b"GET", b"shutdown-on-sigint"],
        &[b"CONFIG", b"SET", b"shutdown-on-sigint", b""],
        &[b"CONFIG", b"GET", b"enable-debug-command"],
        &[b"DEBUG", b"SLEEP", b"0"],
    ];
    let (mut rc, mut zc) = (r.conn(), z.conn());
    for q in queries {
        let (want, got) = (rc.cmd(q), zc.cmd(q));
        assert_eq!(
            parse_reply(&got),
            parse_reply(&want),
            "{}",
            common::show_args(q)
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_zwindow"))
        .args(["--port", &free_port().to_string(), "--shutdown-on-sigint"])
        .stdin(Stdio::null())
        .output()
        .expect("run zwindow");
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("'shutdown-on-sigint'")
            && text.contains("argument(s) must be one of the following"),
        "{text}"
    );
}
