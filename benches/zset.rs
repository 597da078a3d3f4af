//! Throughput of the sorted-set data structure at 1k / 100k / 1M members,
//! plus the time-window steady state (add at `now`, trim below `now - w`).
//!
//! Mutating benchmarks work on clones taken outside the timed region and
//! apply at most N/10 operations per clone, so the measured set size stays
//! close to N.
//!
//! The `write` group runs random-score ZADD (new members), ZREM and ZINCRBY
//! on ours and on a port of Redis 7.0's skiplist + dict
//! (`baseline/redis_zset.rs`) side by side, same data, same allocator
//! (the server's mimalloc), so their ratio is the comparison that counts.
//!
//! The `compact` group times the small-set encoding (10 and 127 members,
//! millisecond-timestamp scores): building a set by single ZADDs, ZADD +
//! ZREM of a middle member, ZSCORE, ZRANK, and ranges in both directions.

#[path = "baseline/redis_zset.rs"]
mod redis_zset;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_zset::RedisZSet;
use std::hint::black_box;
use std::time::Duration;
use zwindow::types::zset::{AddFlags, Limits, NotNan, ScoreBound, ScoreRange, ZSet};

#[global_allocator]
static ALLOC: zwindow::alloc::CountingMimalloc = zwindow::alloc::CountingMimalloc;

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

fn member(i: usize) -> Vec<u8> {
    format!("m:{i:010}").into_bytes()
}

/// A set of `n` members with random scores. `ZSET_NODE_CAP` sets the
/// skiplist's node capacity, to compare node sizes with one binary.
fn build(n: usize) -> ZSet {
    let mut rng = StdRng::seed_from_u64(1);
    let mut z = match std::env::var("ZSET_NODE_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(cap) => ZSet::skiplist_with_node_capacity(cap),
        None => ZSet::new(),
    };
    for i in 0..n {
        let s = rng.random_range(0..(n * 10)) as f64;
        z.add(
            &member(i),
            NotNan::new(s).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    z
}

/// This thread's CPU time. The mutating benchmarks report it instead of
/// wall time: on a shared machine other processes' work would otherwise
/// land in the figures (the operations never sleep or wait, so for them
/// the two agree on an idle machine).
fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer for the call's duration.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `op(set, k)` for `iters` operations over fresh clones of `base`,
/// at most `chunk` operations per clone, timing only the operations.
fn chunked<Z: Clone>(
    base: &Z,
    iters: u64,
    chunk: u64,
    mut op: impl FnMut(&mut Z, u64),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let mut z = base.clone();
        let k = chunk.min(iters - done);
        let t = cpu_now();
        for j in 0..k {
            op(&mut z, done + j);
        }
        total += cpu_now().saturating_sub(t);
        done += k;
        drop(z);
    }
    total
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("zset");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for n in SIZES {
        let base = build(n);
        let chunk = (n / 10) as u64;
        let mut rng = StdRng::seed_from_u64(2);
        let fresh: Vec<(Vec<u8>, f64)> = (0..chunk)
            .map(|i| (member(n + i as usize), rng.random_range(0..n * 10) as f64))
            .collect();
        let existing: Vec<Vec<u8>> = (0..chunk as usize)
            .map(|_| member(rng.random_range(0..n)))
            .collect();
        g.bench_with_input(BenchmarkId::new("insert", n), &n, |b, _| {
            b.iter_custom(|iters| {
                chunked(&base, iters, chunk, |z, k| {
                    let (m, s) = &fresh[(k % chunk) as usize];
                    z.add(
                        m,
                        NotNan::new(*s).unwrap_or_default(),
                        AddFlags::default(),
                        Limits::default(),
                    )
                    .ok();
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("remove", n), &n, |b, _| {
            b.iter_custom(|iters| {
                chunked(&base, iters, chunk, |z, k| {
                    black_box(z.remove(&existing[(k % chunk) as usize]));
                })
            })
        });
        g.bench_with_input(BenchmarkId::new("score", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % existing.len();
                black_box(base.score(&existing[k]))
            })
        });
        g.bench_with_input(BenchmarkId::new("rank", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % existing.len();
                black_box(base.rank(&existing[k], false))
            })
        });
        g.bench_with_input(BenchmarkId::new("range_by_score_10", n), &n, |b, _| {
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % fresh.len();
                let r = ScoreRange {
                    min: ScoreBound::Inclusive(fresh[k].1),
                    max: ScoreBound::Inclusive(f64::INFINITY),
                };
                base.range_by_score(&r, false, 0, Some(10))
                    .map(|(_, s)| s)
                    .sum::<f64>()
            })
        });
        g.bench_with_input(
            BenchmarkId::new("remove_range_by_score_10", n),
            &n,
            |b, _| {
                b.iter_custom(|iters| {
                    chunked(&base, iters, (n / 100) as u64, |z, k| {
                        let lo = fresh[(k % chunk) as usize].1;
                        let r = ScoreRange {
                            min: ScoreBound::Inclusive(lo),
                            max: ScoreBound::Exclusive(lo + 100.0),
                        };
                        black_box(z.remove_range_by_score(&r, |_, _| {}));
                    })
                })
            },
        );
    }
    // Time window: 100k live members, each step adds one at `now` and
    // expires everything older than `now - 100k`.
    let w = 100_000u64;
    let mut z = ZSet::new();
    let t0 = 1_700_000_000_000u64;
    for i in 0..w {
        z.add(
            &member(i as usize),
            NotNan::new((t0 + i) as f64).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    let mut now = t0 + w;
    g.bench_function("windowed_add_trim_100k", |b| {
        b.iter(|| {
            now += 1;
            z.add(
                &member(now as usize),
                NotNan::new(now as f64).unwrap_or_default(),
                AddFlags::default(),
                Limits::default(),
            )
            .ok();
            let r = ScoreRange {
                min: ScoreBound::Inclusive(f64::NEG_INFINITY),
                max: ScoreBound::Exclusive((now - w) as f64),
            };
            black_box(z.remove_range_by_score(&r, |_, _| {}))
        })
    });
    assert!((z.len() as u64).abs_diff(w) <= 1);
    g.finish();
}

fn incr(z: &mut ZSet, m: &[u8], by: f64) {
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    z.add(
        m,
        NotNan::new(by).unwrap_or_default(),
        flags,
        Limits::default(),
    )
    .ok();
}

/// The port must agree with ours on a random mix of operations before its
/// timings mean anything.
fn check_port() {
    let mut rng = StdRng::seed_from_u64(9);
    let mut ours = ZSet::new();
    let mut redis = RedisZSet::default();
    for _ in 0..50_000 {
        let m = member(rng.random_range(0..3000));
        let s = rng.random_range(0..1000) as f64;
        match rng.random_range(0..3) {
            0 => {
                let a = ours.score(&m).is_none();
                ours.add(
                    &m,
                    NotNan::new(s).unwrap_or_default(),
                    AddFlags::default(),
                    Limits::default(),
                )
                .ok();
                assert_eq!(a, redis.add(&m, s));
            }
            1 => assert_eq!(ours.remove(&m), redis.remove(&m)),
            _ => {
                incr(&mut ours, &m, s - 500.0);
                redis.incr(&m, s - 500.0);
            }
        }
    }
    let (got, ok) = redis.entries_checked();
    assert!(ok, "port's links or spans are inconsistent");
    let want: Vec<(Vec<u8>, f64)> = ours.iter().map(|(m, s)| (m.to_vec(), s)).collect();
    assert!(got == want, "port disagrees with ZSet");
    for (m, s) in &want {
        assert_eq!(redis.score(m), Some(*s));
    }
}

/// The three write operations, on ours and on the Redis port alike.
trait WriteOps {
    fn zadd(&mut self, m: &[u8], s: f64);
    fn zrem(&mut self, m: &[u8]) -> Option<f64>;
    fn zincrby(&mut self, m: &[u8], by: f64);
}

impl WriteOps for ZSet {
    fn zadd(&mut self, m: &[u8], s: f64) {
        self.add(
            m,
            NotNan::new(s).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    fn zrem(&mut self, m: &[u8]) -> Option<f64> {
        self.remove(m)
    }
    fn zincrby(&mut self, m: &[u8], by: f64) {
        incr(self, m, by);
    }
}

impl WriteOps for RedisZSet {
    fn zadd(&mut self, m: &[u8], s: f64) {
        self.add(m, s);
    }
    fn zrem(&mut self, m: &[u8]) -> Option<f64> {
        self.remove(m)
    }
    fn zincrby(&mut self, m: &[u8], by: f64) {
        self.incr(m, by);
    }
}

/// The operands: new members with random scores, and distinct present
/// members (with their scores) with random increments.
struct Operands {
    fresh: Vec<(Vec<u8>, f64)>,
    existing: Vec<(Vec<u8>, f64)>,
    deltas: Vec<f64>,
}

/// Times `op` on one long-lived set, `iters` operations in batches of at
/// most `ops.len()`, each batch followed by `undo` of the same operations
/// (untimed), so the set stays within 10 % of its size and warm, as a
/// server's set is. `next` carries the position in the operand lists
/// across criterion's calls.
fn batched<Z>(
    z: &mut Z,
    iters: u64,
    len: usize,
    next: &mut usize,
    mut op: impl FnMut(&mut Z, usize),
    mut undo: impl FnMut(&mut Z, usize),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let k = left.min(len - *next);
        let t = cpu_now();
        for i in *next..*next + k {
            op(z, i);
        }
        total += cpu_now().saturating_sub(t);
        for i in *next..*next + k {
            undo(z, i);
        }
        *next = (*next + k) % len;
        left -= k;
    }
    total
}

/// Benchmarks operation `kind` ("zadd", "zrem" or "zincrby") on `z`.
fn bench_writes<Z: WriteOps>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    kind: &str,
    name: &str,
    n: usize,
    z: &mut Z,
    d: &Operands,
) {
    let id = BenchmarkId::new(format!("{kind}/{name}"), n);
    let mut next = 0;
    if kind == "zadd" {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let len = d.fresh.len();
                batched(
                    z,
                    iters,
                    len,
                    &mut next,
                    |z, i| z.zadd(&d.fresh[i].0, d.fresh[i].1),
                    |z, i| {
                        z.zrem(&d.fresh[i].0);
                    },
                )
            })
        });
    } else if kind == "zrem" {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let len = d.existing.len();
                batched(
                    z,
                    iters,
                    len,
                    &mut next,
                    |z, i| {
                        black_box(z.zrem(&d.existing[i].0));
                    },
                    |z, i| z.zadd(&d.existing[i].0, d.existing[i].1),
                )
            })
        });
    } else {
        g.bench_function(id, |b| {
            b.iter_custom(|iters| {
                let len = d.existing.len();
                batched(
                    z,
                    iters,
                    len,
                    &mut next,
                    |z, i| z.zincrby(&d.existing[i].0, d.deltas[i]),
                    |z, i| z.zadd(&d.existing[i].0, d.existing[i].1),
                )
            })
        });
    }
}

/// Ours against the Redis port: the same operations on the same data.
fn write_paths(c: &mut Criterion) {
    check_port();
    let mut g = c.benchmark_group("write");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in [100_000usize, 1_000_000] {
        let mut ours = build(n);
        let mut redis = RedisZSet::default();
        for (m, s) in ours.iter() {
            redis.add(&m.to_cow(), s);
        }
        assert_eq!(redis.len(), ours.len());
        let mut rng = StdRng::seed_from_u64(3);
        let fresh = (0..n / 10)
            .map(|i| (member(n + i), rng.random_range(0..n * 10) as f64))
            .collect();
        // Distinct present members, so every ZREM finds its member.
        let mut existing: Vec<(Vec<u8>, f64)> = (0..n)
            .step_by(10)
            .map(|i| {
                let m = member(i);
                let s = ours.score(&m).unwrap_or_default();
                (m, s)
            })
            .collect();
        for i in (1..existing.len()).rev() {
            existing.swap(i, rng.random_range(0..=i));
        }
        let deltas = (0..existing.len())
            .map(|_| rng.random_range(0..n * 10) as f64 - (n * 5) as f64)
            .collect();
        let d = Operands {
            fresh,
            existing,
            deltas,
        };
        // Interleaved, so a change in the machine's load hits both sides.
        for kind in ["zadd", "zrem", "zincrby"] {
            bench_writes(&mut g, kind, "ours", n, &mut ours, &d);
            bench_writes(&mut g, kind, "redis", n, &mut redis, &d);
        }
        assert_eq!(redis.len(), ours.len());
    }
    g.finish();
}

/// A compact set of `n` members with millisecond-timestamp scores about a
/// second apart, as a heartbeat or window key holds.
fn small_scores(n: usize) -> Vec<(Vec<u8>, f64)> {
    let mut rng = StdRng::seed_from_u64(4);
    (0..n)
        .map(|i| {
            let s = 1_764_000_000_000u64 + i as u64 * 1000 + rng.random_range(0..1000);
            (member(i), s as f64)
        })
        .collect()
}

fn small_set(items: &[(Vec<u8>, f64)]) -> ZSet {
    let mut z = ZSet::new();
    for (m, s) in items {
        z.add(
            m,
            NotNan::new(*s).unwrap_or_default(),
            AddFlags::default(),
            Limits::default(),
        )
        .ok();
    }
    z
}

/// The compact encoding, where every operation is a scan of one buffer.
fn compact_paths(c: &mut Criterion) {
    let mut g = c.benchmark_group("compact");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for n in [10usize, 127] {
        let items = small_scores(n);
        let base = small_set(&items);
        assert_eq!(base.encoding_name(), "listpack");
        let lim = Limits::default();
        g.bench_with_input(BenchmarkId::new("build", n), &n, |b, _| {
            b.iter(|| black_box(small_set(&items)))
        });
        let mut z = base.clone();
        let mid = items[n / 2].1 + 1.0;
        g.bench_with_input(BenchmarkId::new("add_rem", n), &n, |b, _| {
            b.iter(|| {
                z.add(
                    b"new-member",
                    NotNan::new(mid).unwrap_or_default(),
                    AddFlags::default(),
                    lim,
                )
                .ok();
                black_box(z.remove(b"new-member"))
            })
        });
        let mut k = 0;
        g.bench_with_input(BenchmarkId::new("score", n), &n, |b, _| {
            b.iter(|| {
                k = (k + 7) % n;
                black_box(base.score(&items[k].0))
            })
        });
        g.bench_with_input(BenchmarkId::new("rank", n), &n, |b, _| {
            b.iter(|| {
                k = (k + 7) % n;
                black_box(base.rank(&items[k].0, false))
            })
        });
        for reverse in [false, true] {
            let dir = if reverse { "rev" } else { "fwd" };
            g.bench_with_input(
                BenchmarkId::new(format!("range_all_{dir}"), n),
                &n,
                |b, _| {
                    b.iter(|| {
                        base.range_by_rank(0, n - 1, reverse)
                            .map(|(m, s)| s + m.len() as f64)
                            .sum::<f64>()
                    })
                },
            );
            g.bench_with_input(
                BenchmarkId::new(format!("range_by_score_10_{dir}"), n),
                &n,
                |b, _| {
                    b.iter(|| {
                        k = (k + 7) % n;
                        let r = ScoreRange {
                            min: ScoreBound::Inclusive(items[k].1),
                            max: ScoreBound::Inclusive(f64::INFINITY),
                        };
                        base.range_by_score(&r, reverse, 0, Some(10))
                            .map(|(_, s)| s)
                            .sum::<f64>()
                    })
                },
            );
        }
    }
    g.finish();
}

criterion_group!(zset, benches, write_paths, compact_paths);
criterion_main!(zset);
