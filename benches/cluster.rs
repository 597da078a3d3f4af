//! What cluster mode costs: a three-primary zwindow cluster beside a
//! three-primary redis-server cluster (`redis-cli --cluster create`, no
//! replicas), same clients, same run (`cargo bench --bench cluster`).
//!
//! Three measurements, each on both servers in turn:
//!
//! 1. **CPU per request across the cluster.** `redis-benchmark --cluster`
//!    (50 clients spread over the three nodes, pipeline 1 and 16) runs SET,
//!    GET, ZADD, ZSCORE and ZCOUNT, in that order after a FLUSHALL on every
//!    node (so GET finds the keys SET wrote, ZSCORE the members ZADD
//!    added). In cluster mode redis-benchmark puts into each key a hash tag
//!    of a random slot of the node the client talks to (`{tag}`), so every
//!    request is served where it lands and the traffic covers every slot.
//!    The figure is the three nodes' CPU time (utime + stime of every
//!    thread, `/proc/<pid>/task/*/stat`) per request.
//! 2. **The cost of a `MOVED`.** A client of this bench (4 connections,
//!    pipeline 1 and 16) sends `GET {t}:<random>` to one node, `{t}` a hash
//!    tag of a slot another node serves, so that every reply is a `-MOVED`
//!    error; then the same with a tag of a slot the node serves itself
//!    (every reply a nil). The figure is that node's CPU time per reply,
//!    and the ratio MOVED / normal. (redis-benchmark cannot drive this: it
//!    exits on the first error reply, or follows the redirection.) Every
//!    reply is checked to be the one expected.
//! 3. **Slot routing on one node.** One node with `cluster-enabled yes`
//!    serving all 16384 slots beside one without cluster mode:
//!    `redis-benchmark -t set` and `-t get` (`-r 1000000`, pipeline 1 and
//!    16, not in cluster mode: every key is the node's own) against each;
//!    the ratio cluster-on / cluster-off of the node's CPU per request is
//!    what routing every keyed command costs.
//!
//! Each figure is printed per round; the tables give the median over the
//! rounds and the minimum (other work on a shared machine only adds CPU
//! time to a run, so the least disturbed round is closest to the requests'
//! own cost), and the ratio zwindow / redis-server of each. The servers run
//! in turn, the order rotating each round. Each redis-benchmark command
//! line is printed, so a figure can be reproduced by hand. The machine is
//! shared and noisy: read the ratios, not the absolute figures.
//!
//! Servers: the release zwindow (`VS_REDIS_ZWINDOW`, `VS_REDIS_ZWINDOW_ARGS`
//! as in `vs_redis`), redis-server (`REDIS_SERVER` or PATH), redis-cli
//! (`REDIS_CLI` or PATH) to create the clusters, redis-benchmark
//! (`REDIS_BENCHMARK` or PATH). Each node runs in a directory of its own
//! under the temp dir (its nodes.conf there), removed at exit. Knobs:
//! `CLUSTER_BENCH_REQUESTS` (per run at pipeline 1; pipeline 16 runs five
//! times as many; default 100,000), `CLUSTER_BENCH_ROUNDS` (default 3),
//! `CLUSTER_BENCH_DEPTHS` (default `1,16`), `CLUSTER_BENCH_QUICK=1` (smoke
//! run: 10,000 requests, one round).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use rand::Rng;

use common::{
    Server, TempDir, clk_tck, cpu_ticks, encode, env_num, find_exe, frame_end, free_port, median,
    zwindow_under_test,
};

/// The primaries of each cluster.
const NODES: usize = 3;
/// redis-benchmark's key space (`-r`) in measurements 1 and 3.
const RANDOM_KEYS: u64 = 1_000_000;
/// The bench's own client in measurement 2: connections, one thread each.
const MOVED_CONNS: usize = 4;
/// How long a cluster may take to call itself ok once created.
const CLUSTER_OK_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// Servers and clusters
// ---------------------------------------------------------------------------

/// One kind of server: how to start it.
struct Exe {
    name: &'static str,
    path: String,
    args: Vec<String>,
}

impl Exe {
    /// A node in cluster mode in `dir` (its bus on a free port of its
    /// own: the default, port + 10000, overflows for high ephemeral
    /// ports). The node timeout is long: failure detection is not measured,
    /// and a loaded machine must not fail a node over mid-run.
    fn cluster_node(&self, dir: &std::path::Path) -> Server {
        let mut args = self.args.clone();
        args.extend(
            [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "60000",
                "--cluster-port",
                &free_port().to_string(),
            ]
            .map(String::from),
        );
        Server::start_in(self.name, &self.path, &args, Some(dir))
    }
}

/// The setup and checks this bench adds to the shared `Server`.
impl Server {
    /// The reply as text, panicking on an error reply.
    fn text(&self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let reply = self
            .command(&args)
            .unwrap_or_else(|e| panic!("{}: {:?}: {e}", self.name, args));
        String::from_utf8_lossy(&reply).into_owned()
    }

    fn cluster_ok(&self) -> bool {
        self.command(&[b"CLUSTER", b"INFO"])
            .is_ok_and(|r| String::from_utf8_lossy(&r).contains("cluster_state:ok"))
    }

    fn wait_cluster_ok(&self) {
        let deadline = Instant::now() + CLUSTER_OK_TIMEOUT;
        while !self.cluster_ok() {
            assert!(
                Instant::now() < deadline,
                "{} on port {}: cluster_state not ok after {CLUSTER_OK_TIMEOUT:?}",
                self.name,
                self.port()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `redis-cli --cluster create` over three new nodes of `exe`; returns once
/// every node calls the cluster ok.
fn create_cluster(exe: &Exe, cli: &str, tmp: &TempDir) -> Vec<Server> {
    let nodes: Vec<Server> = (0..NODES)
        .map(|i| exe.cluster_node(&tmp.sub(&format!("{}-{i}", exe.name))))
        .collect();
    let mut args = vec!["--cluster".to_string(), "create".to_string()];
    args.extend(nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())));
    args.push("--cluster-yes".into());
    println!("  $ {cli} {}", args.join(" "));
    let out = Command::new(cli)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("spawn {cli}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("[OK] All 16384 slots covered."),
        "{}: redis-cli --cluster create failed:\n{text}{}",
        exe.name,
        String::from_utf8_lossy(&out.stderr)
    );
    for n in &nodes {
        n.wait_cluster_ok();
    }
    nodes
}

/// FLUSHALL on every node.
fn flush(nodes: &[Server]) {
    for n in nodes {
        n.text(&["FLUSHALL"]);
    }
}

/// The nodes' CPU time so far, in clock ticks.
fn ticks(nodes: &[&Server]) -> u64 {
    nodes.iter().map(|n| cpu_ticks(n.pid())).sum()
}

/// Microseconds of CPU per request from a tick count.
fn us_per(ticks: u64, requests: u64) -> f64 {
    ticks as f64 / clk_tck() * 1e6 / requests as f64
}

// ---------------------------------------------------------------------------
// Measurement 1: the cluster under redis-benchmark --cluster
// ---------------------------------------------------------------------------

/// The commands of measurement 1: (name, redis-benchmark's arguments).
fn cluster_tests() -> Vec<(&'static str, Vec<String>)> {
    let t = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        ("SET", t(&["-t", "set"])),
        ("GET", t(&["-t", "get"])),
        (
            "ZADD",
            t(&["ZADD", "z:{tag}", "__rand_int__", "m:__rand_int__"]),
        ),
        ("ZSCORE", t(&["ZSCORE", "z:{tag}", "m:__rand_int__"])),
        ("ZCOUNT", t(&["ZCOUNT", "z:{tag}", "0", "500000"])),
    ]
}

/// Runs redis-benchmark with `args` (the printed command line), checking
/// that it reported one test; its requests per second.
fn run_benchmark(bench: &str, args: &[String]) -> f64 {
    println!("  $ {bench} {}", args.join(" "));
    let out = Command::new(bench)
        .args(args)
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("spawn {bench}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('"') && !l.starts_with("\"test\""))
        .collect();
    let rps = rows
        .first()
        .and_then(|r| r.split(',').nth(1))
        .and_then(|v| v.trim_matches('"').parse().ok());
    match (out.status.success(), rows.len(), rps) {
        (true, 1, Some(rps)) => rps,
        _ => panic!("unreadable redis-benchmark output:\n{text}"),
    }
}

/// Measurement 1, one round: each test's CPU per request summed over the
/// nodes, µs, in [`cluster_tests`]' order.
fn cluster_round(bench: &str, nodes: &[Server], depth: usize, requests: u64) -> Vec<f64> {
    flush(nodes);
    let all: Vec<&Server> = nodes.iter().collect();
    cluster_tests()
        .into_iter()
        .map(|(_, test)| {
            let mut args = vec!["--cluster".to_string()];
            args.extend(test);
            measure(bench, &all, depth, requests, &args)
        })
        .collect()
}

/// One redis-benchmark run against `nodes[0]` (50 clients, `depth`,
/// `requests`, `-r` [`RANDOM_KEYS`]) with `test`'s arguments last (a
/// command given must be): the CPU per request of `nodes` together, µs.
fn measure(bench: &str, nodes: &[&Server], depth: usize, requests: u64, test: &[String]) -> f64 {
    let mut args: Vec<String> = [
        "-h",
        "127.0.0.1",
        "-p",
        &nodes[0].port().to_string(),
        "-c",
        "50",
        "-n",
        &requests.to_string(),
        "-P",
        &depth.to_string(),
        "-r",
        &RANDOM_KEYS.to_string(),
        "--csv",
    ]
    .map(String::from)
    .to_vec();
    args.extend_from_slice(test);
    let t0 = ticks(nodes);
    run_benchmark(bench, &args);
    us_per(ticks(nodes).saturating_sub(t0), requests)
}

// ---------------------------------------------------------------------------
// Measurement 2: MOVED
// ---------------------------------------------------------------------------

/// Hash tags for node `n`: one of a slot it serves and one of a slot
/// another node serves (told apart by the reply to a GET).
fn tags(node: &Server) -> (String, String) {
    let (mut own, mut foreign) = (None, None);
    for i in 0.. {
        let tag = format!("t{i}");
        let reply = node.raw(&get_request(&tag, 0), 1);
        match reply {
            Ok(r) if r.starts_with(b"$-1") => own = own.or(Some(tag)),
            Err(e) if e.to_string().starts_with("-MOVED") => foreign = foreign.or(Some(tag)),
            other => panic!("{}: GET {{{tag}}}: {other:?}", node.name),
        }
        if let (Some(o), Some(f)) = (&own, &foreign) {
            return (o.clone(), f.clone());
        }
    }
    unreachable!()
}

fn get_request(tag: &str, k: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    encode(&mut buf, &[b"GET", format!("{{{tag}}}:{k}").as_bytes()]);
    buf
}

/// Sends `requests` `GET {tag}:<random>` to `addr` over [`MOVED_CONNS`]
/// connections, `depth` at a time each, checking that every reply starts
/// with `expect` (`-MOVED` or `$-1`).
fn drive_gets(addr: SocketAddr, tag: &str, depth: usize, requests: u64, expect: &'static [u8]) {
    let per_conn = requests / MOVED_CONNS as u64;
    let threads: Vec<_> = (0..MOVED_CONNS)
        .map(|_| {
            let tag = tag.to_string();
            std::thread::spawn(move || {
                let mut rng = rand::rng();
                // A few dozen batches of random keys, sent in turn: the
                // keys vary without building each request in the loop.
                let batches: Vec<Vec<u8>> = (0..64)
                    .map(|_| {
                        (0..depth)
                            .flat_map(|_| get_request(&tag, rng.random_range(0..RANDOM_KEYS)))
                            .collect()
                    })
                    .collect();
                let mut s = TcpStream::connect(addr).expect("connect");
                s.set_nodelay(true).expect("nodelay");
                s.set_read_timeout(Some(Duration::from_secs(60)))
                    .expect("timeout");
                let mut inb = Vec::new();
                let mut chunk = vec![0u8; 1 << 16];
                let mut sent = 0;
                while sent < per_conn {
                    s.write_all(&batches[(sent / depth as u64) as usize % batches.len()])
                        .expect("write");
                    sent += depth as u64;
                    inb.clear();
                    let (mut pos, mut replies) = (0, 0);
                    while replies < depth {
                        match frame_end(&inb, pos).expect("a reply") {
                            Some(end) => {
                                assert!(
                                    inb[pos..].starts_with(expect),
                                    "expected {:?}, got {:?}",
                                    String::from_utf8_lossy(expect),
                                    String::from_utf8_lossy(&inb[pos..end])
                                );
                                pos = end;
                                replies += 1;
                            }
                            None => {
                                let n = s.read(&mut chunk).expect("read");
                                assert!(n > 0, "connection closed");
                                inb.extend_from_slice(&chunk[..n]);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
}

/// Measurement 2, one round: node 0's CPU per reply, µs, for (normal
/// replies, MOVED replies).
fn moved_round(
    nodes: &[Server],
    tags: &(String, String),
    depth: usize,
    requests: u64,
) -> (f64, f64) {
    let node = &nodes[0];
    let total = requests / MOVED_CONNS as u64 * MOVED_CONNS as u64;
    let one = |tag: &str, expect: &'static [u8]| {
        let t0 = ticks(&[node]);
        drive_gets(node.addr, tag, depth, requests, expect);
        us_per(ticks(&[node]).saturating_sub(t0), total)
    };
    let normal = one(&tags.0, b"$-1");
    let moved = one(&tags.1, b"-MOVED ");
    (normal, moved)
}

// ---------------------------------------------------------------------------
// Measurement 3: one node, cluster mode off and on
// ---------------------------------------------------------------------------

/// Measurement 3, one round for one node: CPU per request of `-t set`,
/// then `-t get`, µs.
fn single_round(bench: &str, node: &Server, depth: usize, requests: u64) -> [f64; 2] {
    node.text(&["FLUSHALL"]);
    ["set", "get"].map(|test| measure(bench, &[node], depth, requests, &["-t".into(), test.into()]))
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

/// Everything one server kind runs on: its cluster, its lone nodes.
struct Setup {
    exe: Exe,
    cluster: Vec<Server>,
    tags: (String, String),
    off: Server,
    on: Server,
}

/// The figures of one server kind, per depth, per round.
#[derive(Default, Clone)]
struct Figures {
    /// Measurement 1: per test.
    cluster: Vec<Vec<f64>>,
    /// Measurement 2: (normal, MOVED).
    moved: Vec<(f64, f64)>,
    /// Measurement 3: (off, on) per test (set, get).
    single: Vec<([f64; 2], [f64; 2])>,
}

fn least(v: Vec<f64>) -> f64 {
    v.into_iter().fold(f64::NAN, f64::min)
}

fn main() {
    let quick = std::env::var("CLUSTER_BENCH_QUICK").is_ok_and(|v| v == "1");
    let requests =
        env_num("CLUSTER_BENCH_REQUESTS").unwrap_or(if quick { 10_000 } else { 100_000 });
    let rounds = env_num("CLUSTER_BENCH_ROUNDS").unwrap_or(if quick { 1 } else { 3 }) as usize;
    let depths: Vec<usize> = std::env::var("CLUSTER_BENCH_DEPTHS")
        .ok()
        .map(|v| v.split(',').filter_map(|d| d.trim().parse().ok()).collect())
        .filter(|d: &Vec<usize>| !d.is_empty())
        .unwrap_or_else(|| vec![1, 16]);
    let (Some(bench), Some(cli), Some(redis)) = (
        find_exe("REDIS_BENCHMARK", "redis-benchmark"),
        find_exe("REDIS_CLI", "redis-cli"),
        find_exe("REDIS_SERVER", "redis-server"),
    ) else {
        println!("redis-benchmark, redis-cli or redis-server is not on PATH: nothing to measure");
        return;
    };
    let (zw_path, zw_args) = zwindow_under_test();
    let exes = [
        Exe {
            name: "zwindow",
            path: zw_path,
            args: zw_args,
        },
        Exe {
            name: "redis",
            path: redis,
            args: ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
                .map(String::from)
                .to_vec(),
        },
    ];
    let tmp = TempDir::new("cluster_bench");
    println!(
        "cluster: {NODES} primaries each, {requests} requests per run at pipeline 1 (x5 at 16), depths {depths:?}, {rounds} round(s)"
    );
    let setups: Vec<Setup> = exes
        .into_iter()
        .map(|exe| {
            println!(
                "  {:8} {} {}",
                exe.name,
                exe.path,
                exe.args
                    .iter()
                    .map(|a| if a.is_empty() { "\"\"" } else { a })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            let cluster = create_cluster(&exe, &cli, &tmp);
            let tags = tags(&cluster[0]);
            let off = Server::start_in(
                exe.name,
                &exe.path,
                &exe.args,
                Some(&tmp.sub(&format!("{}-off", exe.name))),
            );
            let on = exe.cluster_node(&tmp.sub(&format!("{}-on", exe.name)));
            on.text(&["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
            on.wait_cluster_ok();
            Setup {
                exe,
                cluster,
                tags,
                off,
                on,
            }
        })
        .collect();

    let n = setups.len();
    // figures[depth][server]
    let mut figures = vec![vec![Figures::default(); n]; depths.len()];
    for round in 0..rounds {
        for (di, &depth) in depths.iter().enumerate() {
            let reqs = if depth > 1 { requests * 5 } else { requests };
            for k in 0..n {
                let si = (k + round) % n;
                let s = &setups[si];
                let name = s.exe.name;
                let c = cluster_round(&bench, &s.cluster, depth, reqs);
                let m = moved_round(&s.cluster, &s.tags, depth, reqs);
                let (off, on) = if round % 2 == 0 {
                    let off = single_round(&bench, &s.off, depth, reqs);
                    (off, single_round(&bench, &s.on, depth, reqs))
                } else {
                    let on = single_round(&bench, &s.on, depth, reqs);
                    (single_round(&bench, &s.off, depth, reqs), on)
                };
                let tests = cluster_tests();
                let shown: Vec<String> = tests
                    .iter()
                    .zip(&c)
                    .map(|((t, _), us)| format!("{t} {us:.3}"))
                    .collect();
                println!(
                    "round {} P{depth:<2} {name:8} cluster us/req: {}; GET normal {:.3} MOVED {:.3}; one node off/on: SET {:.3}/{:.3} GET {:.3}/{:.3}",
                    round + 1,
                    shown.join(", "),
                    m.0,
                    m.1,
                    off[0],
                    on[0],
                    off[1],
                    on[1]
                );
                let f = &mut figures[di][si];
                f.cluster.push(c);
                f.moved.push(m);
                f.single.push((off, on));
            }
        }
    }

    println!();
    println!(
        "Over {rounds} round(s). CPU time per request in µs; ratios zwindow / redis-server in the same run. Ratios, not absolute figures: the machine is shared."
    );
    let names: Vec<&str> = cluster_tests().iter().map(|(t, _)| *t).collect();
    for (label, pick) in [
        ("median", &median as &dyn Fn(Vec<f64>) -> f64),
        ("minimum", &least),
    ] {
        for (di, depth) in depths.iter().enumerate() {
            let f = &figures[di];
            println!();
            println!(
                "1. Three-primary cluster, redis-benchmark --cluster -c 50 -P {depth} -r {RANDOM_KEYS}: CPU per request summed over the nodes ({label} over the rounds)"
            );
            println!();
            println!("| command | zwindow | redis | zwindow / redis |");
            println!("|---|---|---|---|");
            for (t, name) in names.iter().enumerate() {
                let z = pick(f[0].cluster.iter().map(|r| r[t]).collect());
                let r = pick(f[1].cluster.iter().map(|r| r[t]).collect());
                println!("| {name} | {z:.3} | {r:.3} | {:.2} |", z / r);
            }
            println!();
            println!(
                "2. GET to a node: CPU per reply, normal (nil) vs MOVED, {MOVED_CONNS} connections, pipeline {depth} ({label})"
            );
            println!();
            println!("| server | normal | MOVED | MOVED / normal |");
            println!("|---|---|---|---|");
            let mut rows = Vec::new();
            for (si, s) in setups.iter().enumerate() {
                let normal = pick(f[si].moved.iter().map(|m| m.0).collect());
                let moved = pick(f[si].moved.iter().map(|m| m.1).collect());
                println!(
                    "| {} | {normal:.3} | {moved:.3} | {:.2} |",
                    s.exe.name,
                    moved / normal
                );
                rows.push((normal, moved));
            }
            println!(
                "| zwindow / redis | {:.2} | {:.2} | |",
                rows[0].0 / rows[1].0,
                rows[0].1 / rows[1].1
            );
            println!();
            println!(
                "3. One node, cluster-enabled no vs yes (all slots its own), redis-benchmark -c 50 -P {depth} -r {RANDOM_KEYS} ({label})"
            );
            println!();
            println!("| server | command | off | on | on / off |");
            println!("|---|---|---|---|---|");
            let mut on_ratio = vec![[0.0; 2]; n];
            let mut on_abs = vec![[0.0; 2]; n];
            for (si, s) in setups.iter().enumerate() {
                for (t, name) in ["SET", "GET"].iter().enumerate() {
                    let off = pick(f[si].single.iter().map(|x| x.0[t]).collect());
                    let on = pick(f[si].single.iter().map(|x| x.1[t]).collect());
                    on_ratio[si][t] = on / off;
                    on_abs[si][t] = on;
                    println!(
                        "| {} | {name} | {off:.3} | {on:.3} | {:.2} |",
                        s.exe.name,
                        on / off
                    );
                }
            }
            for (t, name) in ["SET", "GET"].iter().enumerate() {
                println!(
                    "{name}: cluster on, zwindow / redis {:.2}; routing's own cost (on/off), zwindow's / redis's {:.2}",
                    on_abs[0][t] / on_abs[1][t],
                    on_ratio[0][t] / on_ratio[1][t]
                );
            }
        }
    }
    drop(setups);
    drop(tmp);
}
