//! Active key expiry: the background half of TTLs.
//!
//! Lazy expiry (in [`Keyspace::get`](super::Keyspace::get)) removes a key when
//! somebody looks at it; keys nobody reads would otherwise stay in memory
//! forever. As Redis's `activeExpireCycle` does, every tick samples keys that
//! have a TTL, deletes the expired ones, and repeats while more than a quarter
//! of a sample was expired — but never for longer than a fixed slice of the
//! tick, one shard lock at a time, so commands keep flowing. The server's
//! background thread runs [`cycle`] `hz` times a second. A replica runs no
//! cycle: its primary's DELs expire its keys (see [`replica`](super::replica)).

use std::time::{Duration, Instant};

use super::{Env, Guards, Key, Keyspace};
use crate::stats::ExpireCycle;

/// Keys sampled per round (`ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
const SAMPLE: usize = 20;

/// One pass over every shard and database, bounded by `budget`.
/// Returns the number of keys deleted. What it sampled feeds INFO's
/// `expired_stale_perc`, `expired_time_cap_reached_count`,
/// `expire_cycle_cpu_milliseconds` and each database's `avg_ttl`.
pub(crate) fn cycle(env: Env<'_>, budget: Duration) -> usize {
    if env.store.is_replica() {
        return 0;
    }
    let start = Instant::now();
    let now = env.clock.now_ms();
    let mut deleted = 0;
    let mut sample: Vec<(Key, u64)> = Vec::with_capacity(SAMPLE);
    let mut seen = ExpireCycle {
        sampled: 0,
        expired: 0,
        timed_out: false,
        elapsed: Duration::ZERO,
        ttls: vec![None; env.store.databases],
    };
    for idx in 0..env.store.shard_count() {
        let guard = env.store.lock_shard(idx);
        let mut ks = Keyspace::new(env, Guards::One(idx, guard), 0, now);
        for db in 0..env.store.databases {
            ks.db = db;
            loop {
                sample.clear();
                {
                    let shard = ks.shard_at(idx);
                    let d = &shard.dbs[db];
                    if d.expires.is_empty() {
                        break;
                    }
                    d.expires.sample(&mut shard.rng, SAMPLE, |k, _| {
                        let at = d.keys.get(k).map_or(0, |e| e.expire_at);
                        sample.push((k.clone(), at));
                    });
                }
                let mut expired = 0;
                let ttl = seen.ttls[db].get_or_insert((0, 0));
                for (key, at) in &sample {
                    if ks.expire_if_needed(key) {
                        expired += 1;
                    } else if *at > now {
                        ttl.0 += at - now;
                        ttl.1 += 1;
                    }
                }
                seen.sampled += sample.len() as u64;
                seen.expired += expired as u64;
                deleted += expired;
                if expired * 4 <= sample.len() || start.elapsed() > budget {
                    break;
                }
            }
        }
        if start.elapsed() > budget {
            seen.timed_out = true;
            // Shards not reached may hold TTLs: "none seen" proves nothing.
            for t in seen.ttls.iter_mut().filter(|t| t.is_none()) {
                *t = Some((0, 0));
            }
            break;
        }
    }
    seen.elapsed = start.elapsed();
    env.expire_stats.record(&seen);
    env.latency.lock().add_if_needed(
        env.config.latency_monitor_threshold(),
        "expire-cycle",
        seen.elapsed.as_millis() as u64,
        now / 1000,
    );
    deleted
}

/// A writable replica's own keys with a TTL (Redis's `expireSlaveKeys`):
/// the primary never sends their deletion, so the replica deletes those
/// that came due, as a primary would (notified, logged to its AOF).
/// Keys gone or made persistent meanwhile are forgotten. Returns the
/// number deleted.
pub(crate) fn local_cycle(env: Env<'_>) -> usize {
    if !env.store.is_replica() {
        env.store.local_expires.lock().clear();
        return 0;
    }
    let keys = std::mem::take(&mut *env.store.local_expires.lock());
    if keys.is_empty() {
        return 0;
    }
    let now = env.clock.now_ms();
    let mut keep = Vec::new();
    let mut deleted = 0;
    for (db, key) in keys {
        let idx = env.store.shard_of(&key[..]);
        let guard = env.store.lock_shard(idx);
        let mut ks = Keyspace::new(env, Guards::One(idx, guard), db, now);
        let at = ks.shard_at(idx).dbs[db]
            .keys
            .get(&key[..])
            .map_or(0, |e| e.expire_at);
        if at == 0 {
            continue;
        }
        // A write lookup on a writable replica deletes what is due.
        ks.replica.write = true;
        if at <= now && ks.expire_key(crate::types::key::HashedKey::from(&key[..])) {
            deleted += 1;
        } else {
            keep.push((db, key));
        }
    }
    env.store.local_expires.lock().extend(keep);
    deleted
}
