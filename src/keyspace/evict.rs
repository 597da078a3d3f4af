//! Eviction: keeping the dataset under `maxmemory` by deleting keys the
//! `maxmemory-policy` picks, with Redis's sampled approximations
//! (`evict.c`).
//!
//! Each key carries 24 bits of access metadata in [`Entry::lru`](super::Entry)
//! (the four bytes of a `u32` the entry already had for OBJECT IDLETIME, so
//! eviction costs no extra byte per key): under the LRU and other policies
//! the LRU clock of its last access (seconds, modulo 2^24, as Redis's
//! `LRU_CLOCK` at its 1000 ms resolution); under the LFU policies a
//! logarithmic access counter (8 bits) and the minute it was last
//! decremented (16 bits).
//!
//! [`perform_evictions`] runs before every command while `maxmemory` is set
//! (the execution layer's verify step, as Redis's `processCommand`) and
//! from the 100 ms background task (Redis's eviction timer). LRU, LFU and
//! TTL policies sample `maxmemory-samples` keys into a pool of the 16 best
//! candidates seen so far and evict the best; the random policies pick a
//! random key. Sampling takes one shard at a time: keys are spread over
//! shards by hash, so a sample of one shard is a sample of the database.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;

use super::{Env, Guards, Key, Keyspace, notify};
use crate::config::{Config, Policy};

/// Candidates kept between evictions (Redis's `EVPOOL_SIZE`).
const POOL_SIZE: usize = 16;
/// The counter a new key starts from (Redis's `LFU_INIT_VAL`), so a new
/// key is not evicted before it had a chance to be used.
const LFU_INIT: u32 = 5;
const LRU_CLOCK_MAX: u64 = (1 << 24) - 1;

/// Redis's `LRU_CLOCK()`: seconds, modulo 2^24.
fn lru_clock(now_ms: u64) -> u32 {
    ((now_ms / 1000) & LRU_CLOCK_MAX) as u32
}

/// Redis's `estimateObjectIdleTime`, in milliseconds.
pub(crate) fn idle_ms(lru: u32, now_ms: u64) -> u64 {
    let clock = u64::from(lru_clock(now_ms));
    let lru = u64::from(lru) & LRU_CLOCK_MAX;
    let ticks = if clock >= lru {
        clock - lru
    } else {
        clock + (LRU_CLOCK_MAX - lru)
    };
    ticks * 1000
}

fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xFFFF) as u32
}

/// Redis's `LFUDecrAndReturn`: the counter, less one per `lfu-decay-time`
/// minutes since it was last decremented.
pub(crate) fn lfu_counter(lru: u32, now_ms: u64, decay_time: u32) -> u32 {
    let ldt = lru >> 8;
    let counter = lru & 0xFF;
    let now = lfu_minutes(now_ms);
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = elapsed.checked_div(decay_time).unwrap_or(0);
    counter.saturating_sub(periods)
}

/// Redis's `LFULogIncr`: the higher the counter, the less likely an
/// access raises it.
fn lfu_log_incr(counter: u32, log_factor: u32) -> u32 {
    if counter >= 255 {
        return 255;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if rand::rng().random::<f64>() < p {
        counter + 1
    } else {
        counter
    }
}

/// The metadata of a key just created (Redis's `createObject`).
pub(crate) fn fresh(config: &Config, now_ms: u64) -> u32 {
    if config.maxmemory_policy().is_lfu() {
        (lfu_minutes(now_ms) << 8) | LFU_INIT
    } else {
        lru_clock(now_ms)
    }
}

/// The metadata after an access (Redis's `lookupKey` touch: `updateLFU`
/// or a fresh LRU clock).
pub(crate) fn touched(c: &Config, lru: u32, now_ms: u64) -> u32 {
    if c.maxmemory_policy().is_lfu() {
        let counter = lfu_counter(lru, now_ms, c.lfu_decay_time());
        (lfu_minutes(now_ms) << 8) | lfu_log_incr(counter, c.lfu_log_factor())
    } else {
        lru_clock(now_ms)
    }
}

/// The metadata RESTORE's `IDLETIME` / `FREQ` (or an RDB file's) ask for,
/// if the policy keeps that kind (Redis's `objectSetLRUOrLFU`): a counter
/// under an LFU policy, else an access time `idle_secs` ago.
pub(crate) fn restored(
    config: &Config,
    now_ms: u64,
    idle_secs: Option<i64>,
    freq: Option<i64>,
) -> Option<u32> {
    if config.maxmemory_policy().is_lfu() {
        let freq = u32::try_from(freq?.clamp(0, 255)).ok()?;
        return Some((lfu_minutes(now_ms) << 8) | freq);
    }
    let idle = u64::try_from(idle_secs?).ok()? & LRU_CLOCK_MAX;
    let clock = u64::from(lru_clock(now_ms));
    // The clock wraps: an access before the wrap sits near its top, as
    // `idle_ms` unwraps it.
    let at = if clock >= idle {
        clock - idle
    } else {
        clock + LRU_CLOCK_MAX - idle
    };
    Some(at as u32)
}

/// What [`perform_evictions`] achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evicted {
    /// Memory is under the limit (or there is none).
    Ok,
    /// Still over, but keys are going: the time budget ran out and the
    /// background task goes on (Redis's `EVICT_RUNNING`); commands run.
    Running,
    /// Over the limit with nothing (more) to evict: deny-OOM commands fail.
    Fail,
}

/// One pool candidate: the higher `idle`, the better to evict.
struct Candidate {
    idle: u64,
    db: usize,
    key: Key,
}

#[derive(Default)]
pub(crate) struct Evictor {
    /// Best candidates, ascending by `idle`; the lock also makes one
    /// eviction pass run at a time.
    pool: Mutex<Vec<Candidate>>,
    /// Where the random policies' and the sampling's round-robins resume.
    next_db: AtomicUsize,
    next_shard: AtomicUsize,
    /// INFO stats `evicted_keys`.
    pub(crate) evicted_keys: AtomicU64,
    /// When memory went over the limit with eviction unfinished (ms since
    /// the epoch; 0: not over) and the total time spent over, in ms
    /// (`current_` / `total_eviction_exceeded_time`).
    pub(crate) over_since_ms: AtomicU64,
    pub(crate) over_total_ms: AtomicU64,
}

/// Bytes allocated (what eviction does not count, the replication backlog
/// and pushes in flight, is taken off by [`excess`]). None when the
/// counting allocator is not installed.
fn used_memory() -> Option<u64> {
    crate::alloc::allocated()
}

/// How far memory is over `maxmemory` (0: under it, or no limit). Pushes
/// on their way to clients that read are not counted (see
/// `Clients::pushes_in_flight`); the clients list is read only when the
/// allocator's figure alone is over.
fn excess(env: Env<'_>) -> u64 {
    let max = env.config.maxmemory();
    let Some(used) = used_memory().filter(|&u| max != 0 && u > max) else {
        return 0;
    };
    used.saturating_sub(env.events.pushes_in_flight())
        .saturating_sub(max)
}

/// Whether memory is over `maxmemory` (and the limit is on).
pub(crate) fn over_limit(env: Env<'_>) -> bool {
    excess(env) > 0
}

/// Redis's `evictionTimeLimitUs`: how long one pass may evict.
fn time_limit(tenacity: u32) -> Duration {
    let us = if tenacity <= 10 {
        50.0 * f64::from(tenacity)
    } else if tenacity < 100 {
        500.0 * 1.15f64.powf(f64::from(tenacity) - 10.0)
    } else {
        return Duration::MAX;
    };
    Duration::from_micros(us as u64)
}

/// Redis's `performEvictions`: evicts keys until memory is under
/// `maxmemory`, the policy finds nothing to evict, or the pass's time
/// budget (`maxmemory-eviction-tenacity`) runs out.
///
/// Call it holding no shard lock (it takes them one at a time), and not
/// while a script runs: a running script holds every shard, and Redis too
/// skips eviction while a script yields (`isInsideYieldingLongCommand`).
/// Keys whose blocked clients must be looked at again (an evicted stream
/// fails its XREADGROUP waiters) go to `serve` after each eviction, with
/// no lock held.
///
/// A replica with `replica-ignore-maxmemory yes` evicts nothing and is
/// never out of memory: it holds what its primary holds, and deletes only
/// when the primary's DELs say so (Redis's `isSafeToPerformEvictions`).
pub(crate) fn perform_evictions(env: Env<'_>, serve: &mut dyn FnMut(Vec<(usize, Key)>)) -> Evicted {
    let max = env.config.maxmemory();
    if max == 0 || env.store.ignores_maxmemory(env.config) {
        return Evicted::Ok;
    }
    if !over_limit(env) {
        note_over(env, false);
        return Evicted::Ok;
    }
    let policy = env.config.maxmemory_policy();
    if policy == Policy::NoEviction {
        return Evicted::Fail;
    }
    let ev = &env.evictor;
    let mut pool = ev.pool.lock();
    let start = Instant::now();
    let limit = time_limit(env.config.maxmemory_eviction_tenacity());
    // As Redis, the pass frees a fixed amount, what memory is over the
    // limit now, counting only what each deletion itself frees: the
    // invalidation messages and notifications an eviction sends grow other
    // clients' buffers, and counting those would evict key after key to
    // pay for the messages of the last one (a feedback loop that empties
    // the database when many clients track keys).
    let to_free = excess(env) as i64;
    let mut freed = 0i64;
    let mut evicted = 0u64;
    let result = loop {
        if freed >= to_free {
            break Evicted::Ok;
        }
        let victim = match policy {
            Policy::AllkeysRandom | Policy::VolatileRandom => random_key(env, policy),
            _ => best_from_pool(env, policy, &mut pool),
        };
        let Some((db, key)) = victim else {
            break Evicted::Fail;
        };
        let del_start = Instant::now();
        freed += evict(env, db, &key, serve);
        latency(env, "eviction-del", del_start);
        evicted += 1;
        if evicted.is_multiple_of(16) {
            // Other threads free memory too (a connection's buffers): stop
            // once under the limit, as Redis does when it frees lazily.
            if !over_limit(env) {
                break Evicted::Ok;
            }
            if start.elapsed() > limit {
                break Evicted::Running;
            }
        }
    };
    latency(env, "eviction-cycle", start);
    note_over(env, result != Evicted::Ok);
    result
}

/// Records an eviction latency event (Redis's `eviction-del` for one key,
/// `eviction-cycle` for a pass) when the monitor is on.
fn latency(env: Env<'_>, event: &str, since: Instant) {
    let threshold = env.config.latency_monitor_threshold();
    if threshold > 0 {
        let ms = since.elapsed().as_millis() as u64;
        let now = env.clock.now_ms() / 1000;
        env.latency.lock().add_if_needed(threshold, event, ms, now);
    }
}

/// Keeps the time-over-the-limit figures of INFO stats.
fn note_over(env: Env<'_>, over: bool) {
    let ev = &env.evictor;
    let now = env.clock.now_ms().max(1);
    let since = ev.over_since_ms.load(Relaxed);
    if over && since == 0 {
        ev.over_since_ms.store(now, Relaxed);
    } else if !over && since != 0 {
        ev.over_since_ms.store(0, Relaxed);
        ev.over_total_ms
            .fetch_add(now.saturating_sub(since), Relaxed);
    }
}

/// Deletes `key` of `db` as an eviction: notification, WATCH, statistics.
/// Returns the bytes the deletion freed.
fn evict(env: Env<'_>, db: usize, key: &[u8], serve: &mut dyn FnMut(Vec<(usize, Key)>)) -> i64 {
    let idx = env.store.shard_of(key);
    let guard = env.store.lock_shard(idx);
    let mut ks = Keyspace::new(env, Guards::One(idx, guard), db, env.clock.now_ms());
    let freed = ks.evict(key);
    let ready = std::mem::take(&mut ks.ready);
    drop(ks);
    if !ready.is_empty() {
        serve(ready);
    }
    env.evictor.evicted_keys.fetch_add(1, Relaxed);
    freed
}

/// The allkeys-/volatile-random pick: a random key of the first database
/// (round-robin) that has one.
fn random_key(env: Env<'_>, policy: Policy) -> Option<(usize, Key)> {
    let dbs = env.config.databases;
    let shards = env.store.shard_count();
    let first_shard = rand::rng().random_range(0..shards);
    for _ in 0..dbs {
        let db = env.evictor.next_db.fetch_add(1, Relaxed) % dbs;
        for s in 0..shards {
            let idx = (first_shard + s) % shards;
            let mut shard = env.store.lock_shard(idx);
            let shard = &mut *shard;
            let d = &shard.dbs[db];
            let pick = if policy.volatile() {
                d.expires.random(&mut shard.rng).map(|(k, _)| k.clone())
            } else {
                d.keys.random(&mut shard.rng).map(|(k, _)| k.clone())
            };
            if let Some(k) = pick {
                return Some((db, k));
            }
        }
    }
    None
}

/// The LRU/LFU/TTL pick: fill the pool from a sample, then take its best
/// candidate that still exists (Redis's `evictionPoolPopulate` and the
/// walk back from the pool's end).
fn best_from_pool(env: Env<'_>, policy: Policy, pool: &mut Vec<Candidate>) -> Option<(usize, Key)> {
    let shards = env.store.shard_count();
    // Each round samples one shard; a round over every shard that found
    // no key at all means there is nothing to evict.
    let mut empty_rounds = 0;
    while empty_rounds < shards {
        let idx = env.evictor.next_shard.fetch_add(1, Relaxed) % shards;
        if populate(env, policy, idx, pool) == 0 {
            empty_rounds += 1;
        } else {
            empty_rounds = 0;
        }
        while let Some(c) = pool.pop() {
            let idx = env.store.shard_of(&c.key);
            let shard = env.store.lock_shard(idx);
            let d = &shard.dbs[c.db];
            let exists = if policy.volatile() {
                d.expires.contains_key(&c.key)
            } else {
                d.keys.contains_key(&c.key)
            };
            if exists {
                return Some((c.db, c.key));
            }
            // A ghost: deleted since it was sampled.
        }
    }
    None
}

/// Samples `maxmemory-samples` keys of each database of shard `idx` into
/// the pool; returns how many keys the sampled dictionaries hold.
fn populate(env: Env<'_>, policy: Policy, idx: usize, pool: &mut Vec<Candidate>) -> usize {
    let c = &env.config;
    let (samples, decay) = (c.maxmemory_samples(), c.lfu_decay_time());
    let now = env.clock.now_ms();
    let mut shard = env.store.lock_shard(idx);
    let shard = &mut *shard;
    let mut total = 0;
    for (db, d) in shard.dbs.iter().enumerate() {
        let score = |key: &Key| -> Option<u64> {
            let e = d.keys.get(key)?;
            Some(match policy {
                Policy::AllkeysLfu | Policy::VolatileLfu => {
                    255 - u64::from(lfu_counter(e.lru(), now, decay))
                }
                Policy::VolatileTtl => u64::MAX - e.expire_at,
                _ => idle_ms(e.lru(), now),
            })
        };
        let mut consider = |key: &Key| {
            if let Some(idle) = score(key) {
                insert(pool, idle, db, key);
            }
        };
        if policy.volatile() {
            total += d.expires.len();
            d.expires
                .sample(&mut shard.rng, samples, |k, _| consider(k));
        } else {
            total += d.keys.len();
            d.keys.sample(&mut shard.rng, samples, |k, _| consider(k));
        }
    }
    total
}

/// Puts a candidate in the pool, kept sorted by `idle` and at most
/// [`POOL_SIZE`] long: a full pool drops its worst candidate for a better
/// one, and ignores one no better than all it holds.
fn insert(pool: &mut Vec<Candidate>, idle: u64, db: usize, key: &Key) {
    if pool.iter().any(|c| c.db == db && c.key == *key) {
        return;
    }
    let k = pool.partition_point(|c| c.idle < idle);
    if pool.len() >= POOL_SIZE {
        if k == 0 {
            return;
        }
        pool.remove(0);
        pool.insert(
            k - 1,
            Candidate {
                idle,
                db,
                key: key.clone(),
            },
        );
    } else {
        pool.insert(
            k,
            Candidate {
                idle,
                db,
                key: key.clone(),
            },
        );
    }
}

impl Keyspace<'_> {
    /// Deletes `key` because memory is over `maxmemory` (Redis's
    /// `deleteEvictedKeyAndPropagate` and what follows it): WATCH and
    /// client-side caching invalidation (`signalModifiedKey`, sent at once,
    /// as Redis does, before the `evicted` notification).
    ///
    /// The one place every evicted key passes. Returns the bytes freed by
    /// the deletion alone, not counting the messages sent after it.
    pub(crate) fn evict(&mut self, key: &[u8]) -> i64 {
        let before = crate::alloc::thread_net();
        let Some(entry) = self.remove_raw_entry(key) else {
            return 0;
        };
        // Lazily: the thread frees it later; Redis's eviction loop then
        // counts what the value held as freed.
        let estimate = entry.value.mem_usage() as i64;
        let lazy = self.env.config.lazyfree_lazy_eviction();
        let freed = if lazy && super::lazyfree::effort(&entry.value) > super::lazyfree::THRESHOLD {
            super::free_entry(self.env, entry, true);
            estimate
        } else {
            drop(entry);
            before - crate::alloc::thread_net()
        };
        let db = self.db;
        self.shard(key).touch_watched(db, key);
        self.propagate_deletion(key, true);
        self.invalidate_tracking(key);
        self.send_invalidations();
        self.notify(notify::EVICTED, "evicted", key);
        freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_idle_wraps_as_redis() {
        let now = 100_000;
        assert_eq!(idle_ms(lru_clock(now), now), 0);
        assert_eq!(idle_ms(lru_clock(now - 7_000), now), 7_000);
        // The clock wrapped past 2^24 seconds since the access.
        let lru = LRU_CLOCK_MAX as u32 - 1;
        assert_eq!(idle_ms(lru, 3_000), (3 + 1) * 1000);
    }

    #[test]
    fn lfu_decays_per_period() {
        let now = 60_000 * 100;
        let lru = (lfu_minutes(now) << 8) | 20;
        assert_eq!(lfu_counter(lru, now, 1), 20);
        assert_eq!(lfu_counter(lru, now + 5 * 60_000, 1), 15);
        assert_eq!(lfu_counter(lru, now + 5 * 60_000, 2), 18);
        assert_eq!(lfu_counter(lru, now + 5 * 60_000, 0), 20);
        assert_eq!(lfu_counter(lru, now + 500 * 60_000, 1), 0);
        // With log factor 0 every access counts, up to 255.
        assert_eq!(lfu_log_incr(7, 0), 8);
        assert_eq!(lfu_log_incr(255, 0), 255);
    }

    #[test]
    fn pool_keeps_the_best_sorted() {
        let mut pool = Vec::new();
        for i in 0..40u64 {
            let idle = (i * 7919) % 40;
            insert(&mut pool, idle, 0, &Key::from(idle.to_string().as_bytes()));
        }
        assert_eq!(pool.len(), POOL_SIZE);
        let idles: Vec<u64> = pool.iter().map(|c| c.idle).collect();
        assert_eq!(idles, (24..40).collect::<Vec<_>>());
        assert!(time_limit(10) == Duration::from_micros(500));
    }
}
