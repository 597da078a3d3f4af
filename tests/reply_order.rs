//! Replies in Redis's order across connections (issue 31, part 1).
//!
//! Redis writes every reply produced in one turn of its event loop before
//! it reads more input, so the reply to a command leaves no later than
//! anything that command caused another client to receive (a blocked
//! client served, a published message), and so before anything those
//! clients do in response. Applications rely on it without knowing
//! (bee-queue registers a job when its EVALSHA's reply arrives, and a
//! worker's `succeeded` message must not beat it).
//!
//! Each scenario runs its three clients on one single-threaded event loop
//! that reads all three sockets, so what is measured is the order in which
//! one client process observes the bytes arrive; it is run against
//! redis-server (which must show 0 out-of-order deliveries, or the test
//! measures nothing) and zwindow with `--threads 1` and `--threads 2`, on
//! the socket path `ZWINDOW_TEST_IO_URING` picks.
mod common;

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Duration;

use common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Commands each run pipelines.
const N: usize = 500;
/// Runs per server.
const RUNS: usize = 5;
/// How long one run may take before the test fails.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

const SCRIPT: &str = "local id = redis.call('incr', KEYS[2]) - 1; \
                      redis.call('hset', KEYS[3], id, ARGV[1]); \
                      redis.call('lpush', KEYS[1], id); return id";

#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// A pipelines EVALs that push job ids; B pops each (BRPOPLPUSH) and
    /// publishes it; C is subscribed. C must not see id i before A has the
    /// reply of its i-th EVAL.
    Eval,
    /// A pipelines `MULTI; PUBLISH ch i; EXEC`; C is subscribed. C must not
    /// see message i before A has EXEC's reply i.
    Exec,
    /// A pipelines `LPUSH q i`; B polls `RPOPLPUSH q active` without
    /// blocking and publishes each id it gets; C is subscribed. C must not
    /// see id i before A has the reply of its i-th LPUSH.
    Poll,
}

fn cmd(args: &[&str]) -> Vec<u8> {
    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    encode_cmd(&refs)
}

/// Splits off every complete frame at the front of `buf`.
fn frames(buf: &mut Vec<u8>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(n) = frame_len(buf).expect("a RESP reply") {
        out.push(buf.drain(..n).collect());
    }
    out
}

/// Reads what `s` has right now without waiting (bytes that arrived
/// before the ones just read on another socket). Through a duplicate of
/// the socket, read directly: tokio's `try_read` answers `WouldBlock`
/// without asking the kernel until its reactor has seen the socket
/// readable.
fn drain_now(mut s: &std::net::TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 65536];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => panic!("server closed a connection"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// The payload of a `message` push, if `frame` is one.
fn message_payload(frame: &[u8]) -> Option<u64> {
    let r = parse_reply(frame);
    let items = r.array();
    if items.len() == 3 && items[0].bulk() == b"message" {
        std::str::from_utf8(items[2].bulk()).ok()?.parse().ok()
    } else {
        None
    }
}

/// One run of `N`: how many deliveries C observed before the reply to the
/// command of A that caused them.
async fn run(addr: SocketAddr, scenario: Scenario, tag: usize) -> usize {
    let (q, idc, jobs, active, ch) = (
        format!("q{tag}"),
        format!("idc{tag}"),
        format!("jobs{tag}"),
        format!("active{tag}"),
        format!("ch{tag}"),
    );
    let a = TcpStream::connect(addr).await.expect("connect A");
    let mut b = TcpStream::connect(addr).await.expect("connect B");
    let mut c = TcpStream::connect(addr).await.expect("connect C");
    a.set_nodelay(true).ok();
    b.set_nodelay(true).ok();
    c.set_nodelay(true).ok();
    let (mut abuf, mut bbuf, mut cbuf) = (Vec::new(), Vec::new(), Vec::new());

    // C subscribes, and has its confirmation before anything is published.
    c.write_all(&cmd(&["SUBSCRIBE", &ch])).await.unwrap();
    while frames(&mut cbuf).is_empty() {
        let n = c.read_buf(&mut cbuf).await.unwrap();
        assert!(n > 0, "C closed");
    }
    match scenario {
        Scenario::Eval => b
            .write_all(&cmd(&["BRPOPLPUSH", &q, &active, "0"]))
            .await
            .unwrap(),
        Scenario::Poll => b
            .write_all(&cmd(&["RPOPLPUSH", &q, &active]))
            .await
            .unwrap(),
        Scenario::Exec => {}
    }
    // Give B's BRPOPLPUSH time to block (it works either way).
    tokio::time::sleep(Duration::from_millis(20)).await;

    let mut pipeline = Vec::new();
    for i in 0..N {
        match scenario {
            Scenario::Eval => {
                pipeline.extend(cmd(&["EVAL", SCRIPT, "3", &q, &idc, &jobs, "x"]));
            }
            Scenario::Exec => {
                pipeline.extend(cmd(&["MULTI"]));
                pipeline.extend(cmd(&["PUBLISH", &ch, &i.to_string()]));
                pipeline.extend(cmd(&["EXEC"]));
            }
            Scenario::Poll => pipeline.extend(cmd(&["LPUSH", &q, &i.to_string()])),
        }
    }
    // The pipeline is written from a task of its own (the loop below must
    // read meanwhile, or a big pipeline and its replies could deadlock).
    // The same socket, non-blocking as tokio set it.
    let a_dup: std::net::TcpStream = a
        .as_fd()
        .try_clone_to_owned()
        .expect("dup A's socket")
        .into();
    let (mut ar, mut aw) = a.into_split();
    let writer = tokio::spawn(async move { aw.write_all(&pipeline).await.map(|_| aw) });
    // A's replies that completed a command (EXEC's, not MULTI's or QUEUED).
    let per_command = match scenario {
        Scenario::Eval | Scenario::Poll => 1,
        Scenario::Exec => 3,
    };
    let mut a_frames = 0usize;
    let mut seen = 0usize;
    let mut out_of_order = 0usize;
    let mut chunk_b = vec![0u8; 65536];
    let mut chunk_c = vec![0u8; 65536];
    let mut chunk_a = vec![0u8; 65536];
    while seen < N || a_frames < N * per_command {
        tokio::select! {
            // Polled in order, A first: bytes that are there for A are
            // counted before C's.
            biased;
            r = ar.read(&mut chunk_a) => {
                let n = r.unwrap();
                assert!(n > 0, "A closed");
                abuf.extend_from_slice(&chunk_a[..n]);
                a_frames += frames(&mut abuf).len();
            }
            r = b.read(&mut chunk_b) => {
                let n = r.unwrap();
                assert!(n > 0, "B closed");
                bbuf.extend_from_slice(&chunk_b[..n]);
                let mut out = Vec::new();
                for f in frames(&mut bbuf) {
                    // A bulk is a popped id (publish it, and pop the next);
                    // an integer is PUBLISH's count.
                    let nil = f.as_slice() == b"$-1\r\n" || f.as_slice() == b"_\r\n";
                    if f.first() == Some(&b'$') && !nil {
                        let id = String::from_utf8_lossy(parse_reply(&f).bulk()).into_owned();
                        out.extend(cmd(&["PUBLISH", &ch, &id]));
                        match scenario {
                            Scenario::Poll => out.extend(cmd(&["RPOPLPUSH", &q, &active])),
                            _ => out.extend(cmd(&["BRPOPLPUSH", &q, &active, "0"])),
                        }
                    } else if nil {
                        // Nothing yet: poll again.
                        out.extend(cmd(&["RPOPLPUSH", &q, &active]));
                    }
                }
                if !out.is_empty() {
                    b.write_all(&out).await.unwrap();
                }
            }
            r = c.read(&mut chunk_c) => {
                let n = r.unwrap();
                assert!(n > 0, "C closed");
                cbuf.extend_from_slice(&chunk_c[..n]);
                // Whatever reached A before these bytes counts first.
                drain_now(&a_dup, &mut abuf);
                a_frames += frames(&mut abuf).len();
                for f in frames(&mut cbuf) {
                    let i = message_payload(&f).expect("a message push") as usize;
                    // A's reply for command i is its (i+1)-th command reply.
                    if a_frames / per_command <= i {
                        out_of_order += 1;
                    }
                    seen += 1;
                }
            }
        }
    }
    writer.await.unwrap().expect("write the pipeline");
    out_of_order
}

/// `RUNS` runs against the server at `addr`: the out-of-order count of each.
fn runs(addr: SocketAddr, scenario: Scenario) -> Vec<usize> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (0..RUNS)
        .map(|tag| {
            rt.block_on(async {
                tokio::time::timeout(RUN_TIMEOUT, run(addr, scenario, tag))
                    .await
                    .unwrap_or_else(|_| panic!("{scenario:?} run {tag} timed out"))
            })
        })
        .collect()
}

/// `redis_strict`: redis-server itself shows 0 (else its figure is only
/// reported).
fn check(scenario: Scenario, redis_strict: bool) {
    let r = RedisServer::start();
    let redis = runs(r.addr(), scenario);
    drop(r);
    let mut report = format!("redis-server {redis:?}");
    let mut failed = false;
    for threads in ["1", "2"] {
        let z = ZwindowServer::start(&["--threads", threads]);
        let counts = runs(z.addr(), scenario);
        report += &format!("; zwindow --threads {threads} {counts:?}");
        failed |= counts.iter().any(|&n| n > 0);
    }
    eprintln!(
        "{scenario:?}, io_uring {:?}: out-of-order deliveries per run of {N}: {report}",
        io_uring_requested()
    );
    assert!(
        !redis_strict || redis.iter().all(|&n| n == 0),
        "redis-server itself misordered, so the test measures nothing: {report}"
    );
    assert!(!failed, "zwindow misordered: {report}");
}

#[test]
fn script_reply_leaves_before_what_it_caused() {
    check(Scenario::Eval, true);
}

/// redis-server is not held to 0 here: it writes one event-loop turn's
/// pending clients newest first, so a message published in a turn can
/// reach its subscriber just before the publisher's replies of that same
/// turn (about half the runs of 500 see the first read's ~257 messages
/// early). What Redis guarantees is the causal chain the EVAL scenario
/// checks; zwindow writes the publisher's reply first, always.
#[test]
fn exec_reply_leaves_before_its_published_message() {
    check(Scenario::Exec, false);
}

/// What a client sees of one pipeline whose last command CLIENT PAUSE
/// holds: (ms until the replies before it arrived, ms another client's read
/// of what the pipeline's script wrote took, ms until the held reply came).
fn paused_pipeline(addr: SocketAddr) -> (u128, u128, u128) {
    use std::io::Write;
    let mut a = std::net::TcpStream::connect(addr).unwrap();
    let mut b = std::net::TcpStream::connect(addr).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut pipeline = cmd(&["EVAL", "redis.call('set', KEYS[1], 'v') return 1", "1", "k"]);
    pipeline.extend(cmd(&["CLIENT", "PAUSE", "1500", "WRITE"]));
    pipeline.extend(cmd(&["SET", "x", "1"]));
    let start = std::time::Instant::now();
    a.write_all(&pipeline).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 256];
    let mut replies = |s: &mut std::net::TcpStream, buf: &mut Vec<u8>, want: usize| {
        while frames(&mut buf.clone()).len() < want {
            let n = s.read(&mut chunk).expect("a reply in time");
            assert!(n > 0, "server closed the connection");
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    replies(&mut a, &mut buf, 2);
    let first = start.elapsed().as_millis();
    let read = std::time::Instant::now();
    b.write_all(&cmd(&["GET", "k"])).unwrap();
    let mut got = Vec::new();
    replies(&mut b, &mut got, 1);
    assert_eq!(got, b"$1\r\nv\r\n");
    let read = read.elapsed().as_millis();
    replies(&mut a, &mut buf, 3);
    assert_eq!(buf, b":1\r\n+OK\r\n+OK\r\n");
    (first, read, start.elapsed().as_millis())
}

/// A pipeline's replies before a command CLIENT PAUSE holds leave at once,
/// as Redis writes them before the paused client waits; and what its script
/// wrote can be read by others during the pause (a write pause lets reads
/// run). zwindow used to hold both until the pause ended.
#[test]
fn replies_before_a_paused_command_leave_at_once() {
    let r = RedisServer::start();
    let redis = paused_pipeline(r.addr());
    drop(r);
    let z = ZwindowServer::start(&[]);
    let zwindow = paused_pipeline(z.addr());
    let report = format!(
        "(replies before, other's read, held reply) ms: redis-server {redis:?}, zwindow {zwindow:?}"
    );
    eprintln!("{report}");
    for (first, read, held) in [redis, zwindow] {
        assert!(first < 750 && read < 750, "{report}");
        assert!(held >= 1000, "the pause held nothing: {report}");
    }
}

#[test]
fn polled_write_reply_leaves_before_what_it_caused() {
    check(Scenario::Poll, true);
}

/// One run of [`reply_leaves_before_a_midway_reader_sees_its_write`]: true
/// if B got the job before A had LPUSH's reply.
fn midway_reader_first(addr: SocketAddr, tag: usize) -> bool {
    use std::io::Write;
    let (q, big) = (format!("mq{tag}"), format!("big{tag}"));
    let mut setup = std::net::TcpStream::connect(addr).unwrap();
    setup
        .write_all(&cmd(&["SET", &big, &"x".repeat(300_000)]))
        .unwrap();
    let mut ok = [0u8; 5];
    setup.read_exact(&mut ok).unwrap();
    let mut a = std::net::TcpStream::connect(addr).unwrap();
    let mut b = std::net::TcpStream::connect(addr).unwrap();
    b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut pipeline = cmd(&["LPUSH", &q, "job"]);
    for _ in 0..40 {
        pipeline.extend(cmd(&["GET", &big]));
    }
    let mut abuf = Vec::new();
    let mut chunk = vec![0u8; 1 << 20];
    // B polls (RPOP answers at once), A's pipeline goes out meanwhile.
    b.write_all(&cmd(&["RPOP", &q])).unwrap();
    a.write_all(&pipeline).unwrap();
    a.set_nonblocking(true).unwrap();
    let mut bbuf = Vec::new();
    loop {
        let n = b.read(&mut chunk).expect("B's reply");
        assert!(n > 0, "server closed B");
        bbuf.extend_from_slice(&chunk[..n]);
        for f in frames(&mut bbuf) {
            if f.as_slice() == b"$3\r\njob\r\n" {
                // What reached A before B's reply counts first.
                drain_now(&a, &mut abuf);
                let mut total = abuf.len();
                let first = frames(&mut abuf).into_iter().next();
                // Drain A fully so the server is not left writing.
                a.set_nonblocking(false).unwrap();
                a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                while first.is_some() && total < 40 * 300_000 {
                    let n = a.read(&mut chunk).expect("A's replies");
                    assert!(n > 0, "server closed A");
                    total += n;
                }
                return first.is_none();
            }
            b.write_all(&cmd(&["RPOP", &q])).unwrap();
        }
    }
}

/// A batch whose replies pass 256 KB lets other clients run midway
/// (a pipeline of big replies must not stall them); what it wrote before
/// that is still seen by others only after its replies leave, as in
/// Redis, where the LPUSH's reply is written before the RPOP that took its
/// job runs. B polls `RPOP q` while A pipelines `LPUSH q job` and 40 GETs
/// of a 300 KB value: B must never have the job before A has LPUSH's reply.
/// redis-server is not held to 0 (only reported): when B's RPOP runs in the
/// same event-loop turn as A's batch, it writes B's reply first (its
/// pending clients newest first), microseconds before A's.
#[test]
fn reply_leaves_before_a_midway_reader_sees_its_write() {
    let r = RedisServer::start();
    let redis = (0..RUNS)
        .filter(|&t| midway_reader_first(r.addr(), t))
        .count();
    drop(r);
    let mut report = format!("redis-server {redis}/{RUNS}");
    let mut failed = false;
    for threads in ["1", "2"] {
        let z = ZwindowServer::start(&["--threads", threads]);
        let n = (0..RUNS)
            .filter(|&t| midway_reader_first(z.addr(), t))
            .count();
        report += &format!("; zwindow --threads {threads} {n}/{RUNS}");
        failed |= n > 0;
    }
    eprintln!("runs where B had the job before A had LPUSH's reply: {report}");
    assert!(!failed, "zwindow misordered: {report}");
}
