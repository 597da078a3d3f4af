//! The window sweeper: ages out members of windowed keys nobody reads, and
//! expired fields of hashes nobody reads (hash field TTLs share the
//! schedule: see [`hash_ttl`](crate::keyspace::hash_ttl)).
//!
//! Each shard keeps its windowed keys ordered by the instant their oldest
//! member ages out ([`Schedule`](super::Schedule)), so a tick looks only at
//! keys with something due — never at the whole keyspace. Work is bounded
//! per key (a batch of members, then the key goes back in the queue) and per
//! shard (a time slice), and one shard lock is held at a time, so commands
//! on other shards never wait and commands on the same shard wait at most
//! one slice.
//!
//! A replica sweeps nothing: its primary's ZREMs and HDELs remove what is
//! due (see [`replica`](crate::keyspace::replica)).

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use super::TrimMode;
use crate::keyspace::{Env, Guards, Key, Keyspace, ShardSet};

/// Members removed from one key before it yields to the next: one lock
/// hold stays in the tens of microseconds.
const BATCH: usize = 512;
/// Sweeping time per tick, across all shards: a quarter of the period, as
/// Redis's active expiry allows itself.
pub(crate) const BUDGET: Duration = Duration::from_millis(5);
/// Ticks per second (the server's background thread runs [`cycle`] at this
/// rate): deadlines are met within one period (20 ms).
pub(crate) const DEFAULT_HZ: u64 = 50;

/// Whether a pass has anything to do: a window rule, a field or member TTL,
/// active expiry on, and not a replica.
pub(crate) fn due(env: Env<'_>) -> bool {
    (env.windows.active()
        || env.store.field_ttls.load(Relaxed)
        || env.store.member_ttls.load(Relaxed)
        || env.store.set_ttls.load(Relaxed))
        && env.store.active_expire.load(Relaxed)
        && !env.store.is_replica()
}

/// One pass over every shard, each getting an equal share of `budget`;
/// returns the members removed. Keys whose waiters a hand-off may have fed
/// go to `serve` after each key, with no lock held.
pub(crate) fn cycle(
    env: Env<'_>,
    budget: Duration,
    serve: &mut dyn FnMut(Vec<(usize, Key)>),
) -> usize {
    // The AOF being loaded holds its own trims and expiries (see
    // `Keyspace::prepare`); a replica's primary sends them.
    if env.store.loading.load(Relaxed) || env.store.is_replica() {
        return 0;
    }
    let started = Instant::now();
    let mut removed = 0;
    let shards = env.store.shard_count();
    let share = budget / shards as u32;
    for idx in 0..shards {
        let shard_started = Instant::now();
        while shard_started.elapsed() < share {
            let now = env.clock.now_ms();
            let mut guards = Guards::One(idx, env.store.lock_shard(idx));
            let Some((db, key)) = guards
                .iter_mut()
                .next()
                .and_then(|s| s.schedule.first_due(now))
            else {
                break;
            };
            // The key's shard, plus its hand-off list's shard (known from
            // the entry, so looked up under the key's lock first).
            let mut ks = Keyspace::new(env, guards, db, now);
            if let Some(dest) = super::handoff_shard(&mut ks, &key).filter(|&d| d != idx) {
                drop(ks);
                let mut set = ShardSet::default();
                set.insert(idx);
                set.insert(dest);
                guards = env.store.lock(set);
                ks = Keyspace::new(env, guards, db, now);
            }
            let mut n = super::trim(&mut ks, &key, TrimMode::Sweep(BATCH));
            if n == 0 {
                // A hash with field TTLs, rather than a windowed set.
                n = crate::keyspace::hash_ttl::expire(&mut ks, &key, BATCH);
            }
            if n == 0 {
                // A sorted set with member TTLs.
                n = crate::keyspace::zset_ttl::expire(&mut ks, &key, BATCH);
            }
            if n == 0 {
                // A set with member TTLs.
                n = crate::keyspace::set_ttl::expire(&mut ks, &key, BATCH);
            }
            if n == 0 {
                // Not due after all (the schedule was stale): recompute it,
                // and never let a stale deadline spin the loop.
                super::reschedule(&mut ks, &key);
                let shard = ks.shard_at(idx);
                if let Some(at) = shard.schedule.get(db, &key).filter(|&at| at <= now) {
                    let _ = at;
                    shard.schedule.set(db, &key, Some(now + 1));
                }
            }
            removed += n;
            // Hand-offs may have fed a list somebody is blocked on.
            let ready = std::mem::take(&mut ks.ready);
            drop(ks);
            if !ready.is_empty() {
                serve(ready);
            }
        }
    }
    let w = &env.windows.stats;
    w.sweeper_cycles.fetch_add(1, Relaxed);
    w.sweeper_us
        .fetch_add(started.elapsed().as_micros() as u64, Relaxed);
    removed
}
