//! Throughput of the sorted-set data structure at 1k / 100k / 1M members,
//! plus the time-window steady state (add at `now`, trim below `now - w`).
//!
//! Mutating benchmarks work on clones taken outside the timed region and
//! apply at most N/10 operations per clone, so the measured set size stays
//! close to N.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::{Duration, Instant};
use zwindow::types::zset::{AddFlags, Limits, NotNan, ScoreBound, ScoreRange, ZSet};

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

fn member(i: usize) -> Vec<u8> {
    format!("m:{i:010}").into_bytes()
}

fn build(n: usize) -> ZSet {
    let mut rng = StdRng::seed_from_u64(1);
    let mut z = ZSet::new();
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

/// Runs `op(set, k)` for `iters` operations over fresh clones of `base`,
/// at most `chunk` operations per clone, timing only the operations.
fn chunked(base: &ZSet, iters: u64, chunk: u64, mut op: impl FnMut(&mut ZSet, u64)) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let mut z = base.clone();
        let k = chunk.min(iters - done);
        let t = Instant::now();
        for j in 0..k {
            op(&mut z, done + j);
        }
        total += t.elapsed();
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

criterion_group!(zset, benches);
criterion_main!(zset);
