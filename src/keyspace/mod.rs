//! The keyspace: N shards, each owning the keys whose hash falls to it, in
//! every database, behind its own mutex.
//!
//! A command locks exactly the shards of the keys it names (known from the
//! command table), in ascending shard order, so two multi-key commands can
//! never deadlock and single-key commands on different shards never contend.
//! Commands that need the whole keyspace (KEYS, FLUSHDB, EXEC, scripts) lock
//! every shard, in the same order.
//!
//! A command sees the locked shards through a [`Keyspace`], which hides the
//! sharding entirely: it routes each key to its shard, applies key expiry
//! lazily on every lookup (Redis's `expireIfNeeded`), and carries the
//! command's notion of "now" so that one command, one EXEC and one script see
//! a single instant. The background half of expiry lives in [`expire`].

pub(crate) mod digest;
pub(crate) mod events;
pub(crate) mod evict;
pub(crate) mod expire;
pub(crate) mod hash_ttl;
pub(crate) mod keysizes;
pub(crate) mod lazyfree;
pub(crate) mod propagate;
pub(crate) mod replica;
pub(crate) mod set_ttl;
pub(crate) mod slots;
pub(crate) mod snapshot;
pub(crate) mod value;
pub(crate) mod windows;
pub(crate) mod zset_ttl;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use crate::clock::Clock;
use crate::config::Config;
use crate::types::dict::Dict;
pub(crate) use crate::types::key::{HashedKey, Key, KeyHasher};
pub(crate) use events::Events;
pub(crate) use value::{Str, Value};

pub(crate) use crate::config::MAX_SHARDS;
pub(crate) use crate::notify;

pub(crate) struct Entry {
    pub(crate) value: Value,
    /// Absolute expiry in Unix milliseconds; 0 = persistent.
    pub(crate) expire_at: u64,
    /// The low 24 bits: access metadata for eviction and OBJECT
    /// IDLETIME/FREQ, as Redis's `robj.lru` ([`Entry::lru`]); the high 8:
    /// the [`keysizes::Class`] the entry is counted in.
    meta: u32,
    /// The window rule resolved for this key's name, cached.
    pub(crate) window: crate::keyspace::windows::RuleCache,
}

// Every key pays for an entry, plus the dict's 8-byte hash and link and
// the 16-byte key (its name inline up to 15 bytes, else a pointer to
// it): 80 bytes a key in all. The value is 40 bytes,
// the TTL 8, and the LRU clock (with the size class) and the window cache
// 4 each.
// (Not under `cfg(test)`: the unit tests give sorted sets hook fields.)
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<Entry>() <= 56);
#[cfg(not(test))]
const _: () = assert!(std::mem::size_of::<Value>() <= 40);

impl Entry {
    pub(crate) fn new(value: Value) -> Entry {
        Entry {
            value,
            expire_at: 0,
            meta: 0,
            window: Default::default(),
        }
    }

    /// Access metadata for eviction and OBJECT IDLETIME/FREQ, 24 bits as
    /// Redis's `robj.lru`: the LRU clock of the last access, or under an
    /// LFU policy the access counter and its decrement time (see [`evict`]).
    pub(crate) fn lru(&self) -> u32 {
        self.meta & LRU_BITS
    }

    pub(crate) fn set_lru(&mut self, lru: u32) {
        self.meta = (self.meta & !LRU_BITS) | (lru & LRU_BITS);
    }

    /// The histogram class the entry is counted in (see [`keysizes`]).
    fn class(&self) -> keysizes::Class {
        (self.meta >> 24) as keysizes::Class
    }

    fn set_class(&mut self, class: keysizes::Class) {
        self.meta = (self.meta & LRU_BITS) | (u32::from(class) << 24);
    }

    /// Whether the TTL has passed at `now_ms` (the test lazy expiry applies).
    fn is_expired(&self, now_ms: u64) -> bool {
        self.expire_at != 0 && self.expire_at <= now_ms
    }
}

/// The bits of [`Entry::meta`] that hold the LRU clock.
const LRU_BITS: u32 = (1 << 24) - 1;

/// One database's slice of one shard.
#[derive(Default)]
pub(crate) struct Db {
    pub(crate) keys: Dict<Key, Entry, KeyHasher>,
    /// The keys that have a TTL, so active expiry samples only those.
    pub(crate) expires: Dict<Key, (), KeyHasher>,
    /// How many of `keys` have each type and size class (`INFO keysizes`).
    pub(crate) sizes: keysizes::Hist,
}

impl Db {
    /// Empties the database (FLUSHDB, FLUSHALL, a load's first step).
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
        self.expires.clear();
        self.sizes.clear();
    }
}

/// A flag set when a watched key is modified; EXEC reads it.
pub(crate) type WatchFlag = Arc<AtomicBool>;

/// One client's WATCH of one key.
pub(crate) struct Watcher {
    flag: WatchFlag,
    /// The key was already logically expired when watched, so its later
    /// (lazy or flush) deletion is no change (Redis 7.0's `watchedKey.expired`).
    pub(crate) expired: bool,
}

pub(crate) struct Shard {
    pub(crate) dbs: Box<[Db]>,
    /// Clients blocked on keys of this shard.
    pub(crate) blocked: crate::blocked::Queues,
    /// Windowed keys of this shard, by when their oldest member ages out.
    pub(crate) schedule: crate::keyspace::windows::Schedule,
    /// Clients watching keys of this shard, by (db, key).
    pub(crate) watched: HashMap<(usize, Key), Vec<Watcher>>,
    pub(crate) rng: SmallRng,
    pub(crate) stats: ShardStats,
    /// The running BGSAVE's copy-on-write state (see [`snapshot`]).
    pub(crate) snap: Option<Box<snapshot::Snap>>,
    /// The gate of the batch that last wrote here while others could run
    /// before its replies left (`--threads N`, or a batch that let other
    /// clients run midway), whose replies a reader's must not overtake
    /// (see [`crate::clients::Gate`]); None once it is known open.
    pub(crate) writer: Option<std::sync::Arc<crate::clients::Gate>>,
}

#[derive(Default, Clone, Copy)]
pub(crate) struct ShardStats {
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    pub(crate) expired_keys: u64,
}

impl Shard {
    fn new(databases: usize) -> Shard {
        Shard {
            dbs: (0..databases).map(|_| Db::default()).collect(),
            blocked: Default::default(),
            schedule: Default::default(),
            watched: HashMap::new(),
            rng: SmallRng::from_rng(&mut rand::rng()),
            stats: ShardStats::default(),
            snap: None,
            writer: None,
        }
    }

    /// Flags every client watching `key` (Redis's `touchWatchedKey`). Call
    /// it after the modification: a watcher that saw the key already
    /// expired is not flagged when the "modification" only deleted it.
    pub(crate) fn touch_watched(&mut self, db: usize, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        let exists = self.dbs.get(db).is_some_and(|d| d.keys.contains_key(key));
        if let Some(watchers) = self.watched.get_mut(&(db, Key::from(key))) {
            for w in watchers {
                if w.expired && !exists {
                    w.expired = false;
                    continue;
                }
                w.flag.store(true, Ordering::Release);
            }
        }
    }

    /// SWAPDB's variant of [`touch_watched`](Self::touch_watched), called
    /// after the swap for a watched key that existed in `db` before it
    /// (`existed_before`) or exists now: Redis 7.0's `touchAllWatchedKeysInDb`,
    /// where an expired key replaced by an expired one is no change.
    pub(crate) fn touch_swapped(
        &mut self,
        db: usize,
        key: &[u8],
        existed_before: bool,
        now_ms: u64,
    ) {
        let now = self
            .dbs
            .get(db)
            .and_then(|d| d.keys.get(key))
            .map(|e| e.is_expired(now_ms));
        let Some(watchers) = self.watched.get_mut(&(db, Key::from(key))) else {
            return;
        };
        for w in watchers {
            if w.expired {
                match now {
                    None => {
                        w.expired = false;
                        continue;
                    }
                    Some(true) => continue,
                    Some(false) => {}
                }
            } else if !existed_before && now == Some(true) {
                w.expired = true;
                continue;
            }
            w.flag.store(true, Ordering::Release);
        }
    }

    /// Registers `flag` as watching `key`; false if it already was. Notes
    /// whether the key is logically expired right now (WATCH does not
    /// delete it, as Redis's `keyIsExpired` does not).
    pub(crate) fn watch(&mut self, db: usize, key: &[u8], flag: &WatchFlag, now_ms: u64) -> bool {
        let expired = self
            .dbs
            .get(db)
            .and_then(|d| d.keys.get(key))
            .is_some_and(|e| e.is_expired(now_ms));
        let watchers = self.watched.entry((db, key.into())).or_default();
        if watchers.iter().any(|w| Arc::ptr_eq(&w.flag, flag)) {
            return false;
        }
        watchers.push(Watcher {
            flag: flag.clone(),
            expired,
        });
        true
    }

    /// True if `key`, watched by `flag` while it was live, has logically
    /// expired since (EXEC's `isWatchedKeyExpired`).
    pub(crate) fn watched_key_expired(
        &self,
        db: usize,
        key: &[u8],
        flag: &WatchFlag,
        now_ms: u64,
    ) -> bool {
        let live_when_watched = self
            .watched
            .get(&(db, Key::from(key)))
            .and_then(|ws| ws.iter().find(|w| Arc::ptr_eq(&w.flag, flag)))
            .is_some_and(|w| !w.expired);
        live_when_watched
            && self
                .dbs
                .get(db)
                .and_then(|d| d.keys.get(key))
                .is_some_and(|e| e.is_expired(now_ms))
    }

    /// Drops `flag`'s watch of `key`.
    pub(crate) fn unwatch(&mut self, db: usize, key: &[u8], flag: &WatchFlag) {
        let k = (db, Key::from(key));
        if let Some(watchers) = self.watched.get_mut(&k) {
            watchers.retain(|w| !Arc::ptr_eq(&w.flag, flag));
            if watchers.is_empty() {
                self.watched.remove(&k);
            }
        }
    }
}

pub(crate) struct Store {
    shards: Box<[Mutex<Shard>]>,
    pub(crate) databases: usize,
    /// Set once any hash field gets a TTL: from then on every lookup checks
    /// hashes for due fields and the sweeper runs (a server that never uses
    /// field TTLs pays one relaxed load per lookup).
    pub(crate) field_ttls: AtomicBool,
    /// Set once any sorted-set member gets a TTL, as `field_ttls` is.
    pub(crate) member_ttls: AtomicBool,
    /// Set once any set member gets a TTL, as `field_ttls` is.
    pub(crate) set_ttls: AtomicBool,
    /// Hash fields removed because their TTL passed.
    pub(crate) stats_expired_fields: AtomicU64,
    /// Sorted-set members removed because their TTL passed.
    pub(crate) stats_expired_members: AtomicU64,
    /// Background expiry (keys, hash fields, windows) runs; `DEBUG
    /// SET-ACTIVE-EXPIRE 0` turns it off, as in Redis.
    pub(crate) active_expire: AtomicBool,
    /// A BGSAVE snapshot is being written: accesses preserve what they may
    /// change first ([`snapshot`]).
    snapshot_active: AtomicBool,
    /// The AOF is being loaded: nothing expires (Redis's `keyIsExpired`
    /// while loading), so a replay reproduces the logged dataset and keys
    /// expire once the server runs.
    pub(crate) loading: AtomicBool,
    /// This server is a replica (Redis's `server.masterhost != NULL`): it
    /// never deletes on its own. Keys past their TTL, members and fields
    /// past their deadlines and members aged out of their window stay
    /// stored until the primary's DEL / ZREM / HDEL arrive; its clients'
    /// reads do not see them, the primary's commands do
    /// ([`Keyspace::from_master`]); active expiry, the sweeper and (with
    /// `replica-ignore-maxmemory`) eviction stand still. See [`replica`].
    /// Replication flips it; read only where something due was found.
    replica: AtomicBool,
    /// A writable replica's keys its own clients gave a TTL (Redis's
    /// `slaveKeysWithExpire`): the primary knows nothing of them, so the
    /// replica expires them itself ([`expire::local_cycle`]).
    pub(crate) local_expires: parking_lot::Mutex<foldhash::HashSet<(usize, Key)>>,
    /// Cluster mode: database 0's keys by hash slot (see [`slots`]); None
    /// on a standalone server, which then pays one test of this pointer
    /// per key inserted or removed.
    slot_index: Option<Box<slots::SlotIndex>>,
}

/// A set of shard indices, locked in ascending order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ShardSet(pub(crate) u128);

impl ShardSet {
    pub(crate) fn insert(&mut self, shard: usize) {
        self.0 |= 1u128 << shard;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub(crate) fn contains(&self, shard: usize) -> bool {
        shard < 128 && self.0 & (1u128 << shard) != 0
    }
}

impl Store {
    pub(crate) fn new(shards: usize, databases: usize) -> Store {
        let shards = shards.clamp(1, MAX_SHARDS);
        Store {
            shards: (0..shards)
                .map(|_| Mutex::new(Shard::new(databases)))
                .collect(),
            databases,
            field_ttls: AtomicBool::new(false),
            member_ttls: AtomicBool::new(false),
            set_ttls: AtomicBool::new(false),
            stats_expired_fields: AtomicU64::new(0),
            stats_expired_members: AtomicU64::new(0),
            active_expire: AtomicBool::new(true),
            snapshot_active: AtomicBool::new(false),
            loading: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            local_expires: Default::default(),
            slot_index: None,
        }
    }

    /// Makes this store a replica's (true) or a primary's (see
    /// [`Store::replica`]). Nothing due is deleted at the switch: once a
    /// primary again, lookups, active expiry and the sweeper delete (and
    /// propagate) what came due meanwhile, as Redis does after a failover.
    pub(crate) fn set_replica(&self, on: bool) {
        self.replica.store(on, Ordering::Relaxed);
    }

    /// Whether this store is a replica's (see [`Store::replica`]).
    pub(crate) fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Relaxed)
    }

    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Keys in every database (what freeing the store frees).
    pub(crate) fn key_count(&self) -> usize {
        let shards = self.shards.iter().map(|s| s.lock());
        shards
            .map(|s| s.dbs.iter().map(|d| d.keys.len()).sum::<usize>())
            .sum()
    }

    pub(crate) fn shard_of<'k>(&self, key: impl Into<HashedKey<'k>>) -> usize {
        key.into().shard(self.shards.len())
    }

    pub(crate) fn all_shards(&self) -> ShardSet {
        let n = self.shards.len();
        ShardSet(if n == MAX_SHARDS {
            u128::MAX
        } else {
            (1u128 << n) - 1
        })
    }

    pub(crate) fn lock_shard(&self, idx: usize) -> MutexGuard<'_, Shard> {
        self.shards[idx].lock()
    }

    /// Drops a client's WATCHes (UNWATCH, EXEC, disconnect).
    pub(crate) fn unwatch(&self, watched: &[(usize, Key)], flag: &WatchFlag) {
        for (db, key) in watched {
            self.lock_shard(self.shard_of(key)).unwatch(*db, key, flag);
        }
    }

    /// Like [`lock`](Self::lock), giving up (and releasing what it took)
    /// if a shard stays busy for `wait`: dispatch re-checks the busy-script
    /// state between tries instead of sleeping behind a script's locks.
    pub(crate) fn try_lock_for(
        &self,
        set: ShardSet,
        wait: std::time::Duration,
    ) -> Option<Guards<'_>> {
        if set.0.count_ones() == 1 {
            let idx = set.0.trailing_zeros() as usize;
            return self.shards[idx]
                .try_lock_for(wait)
                .map(|g| Guards::One(idx, g));
        }
        let mut v = Vec::with_capacity(set.0.count_ones() as usize);
        let mut bits = set.0;
        while bits != 0 {
            let idx = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            v.push((idx, self.shards[idx].try_lock_for(wait)?));
        }
        Some(Guards::Many(v))
    }

    /// A private copy of every database, taken at one instant (every shard
    /// is held while it is copied): SCRIPT DEBUG YES's dataset, whose
    /// changes are thrown away, as Redis's forked debugging session's.
    pub(crate) fn private_copy(&self) -> Store {
        let mut copy = Store::new(self.shard_count(), self.databases);
        let mut from = self.lock(self.all_shards());
        for idx in 0..self.shard_count() {
            let Some(src) = from.get(idx) else { continue };
            let mut dst = copy.lock_shard(idx);
            for (db, d) in src.dbs.iter().enumerate() {
                for (k, e) in d.keys.iter() {
                    let mut entry = Entry::new(e.value.clone());
                    entry.expire_at = e.expire_at;
                    entry.meta = e.meta;
                    if e.expire_at != 0 {
                        dst.dbs[db].expires.insert(k.clone(), ());
                    }
                    dst.dbs[db].keys.insert(k.clone(), entry);
                }
                dst.dbs[db].sizes = d.sizes.clone();
            }
        }
        // What commands consult about the data goes along with it.
        for (to, from) in [
            (&copy.field_ttls, &self.field_ttls),
            (&copy.member_ttls, &self.member_ttls),
            (&copy.set_ttls, &self.set_ttls),
        ] {
            to.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        copy.set_replica(self.is_replica());
        drop(from);
        if self.slot_index().is_some() {
            copy.enable_slot_index();
        }
        copy
    }

    /// Locks the shards of `set` in ascending order.
    pub(crate) fn lock(&self, set: ShardSet) -> Guards<'_> {
        if set.0.count_ones() == 1 {
            let idx = set.0.trailing_zeros() as usize;
            return Guards::One(idx, self.shards[idx].lock());
        }
        let mut v = Vec::with_capacity(set.0.count_ones() as usize);
        let mut bits = set.0;
        while bits != 0 {
            let idx = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            v.push((idx, self.shards[idx].lock()));
        }
        Guards::Many(v)
    }
}

/// The shards a command holds.
pub(crate) enum Guards<'a> {
    None,
    One(usize, MutexGuard<'a, Shard>),
    Many(Vec<(usize, MutexGuard<'a, Shard>)>),
}

impl<'a> Guards<'a> {
    /// The shards held.
    pub(crate) fn shard_set(&self) -> ShardSet {
        match self {
            Guards::None => ShardSet(0),
            Guards::One(i, _) => ShardSet(1u128 << i),
            Guards::Many(v) => ShardSet(v.iter().fold(0, |set, (i, _)| set | 1u128 << i)),
        }
    }

    fn get(&mut self, idx: usize) -> Option<&mut Shard> {
        match self {
            Guards::None => None,
            Guards::One(i, g) => (*i == idx).then_some(&mut **g),
            Guards::Many(v) => v.iter_mut().find(|(i, _)| *i == idx).map(|(_, g)| &mut **g),
        }
    }

    /// Every held shard, in ascending order.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        let (one, many): (Option<&mut Shard>, &mut [(usize, MutexGuard<'a, Shard>)]) = match self {
            Guards::None => (None, &mut []),
            Guards::One(_, g) => (Some(&mut **g), &mut []),
            Guards::Many(v) => (None, v.as_mut_slice()),
        };
        one.into_iter()
            .chain(many.iter_mut().map(|(_, g)| &mut **g))
    }
}

/// What a keyspace view works with: the data, the settings and services
/// below the keyspace that its rules read, and the [`Events`] seam through
/// which it reports upward. The server builds one per view (a handful of
/// pointers); nothing here can reach a client, a connection or a command.
#[derive(Clone, Copy)]
pub(crate) struct Env<'a> {
    pub(crate) store: &'a Store,
    pub(crate) config: &'a Config,
    pub(crate) clock: &'a Clock,
    pub(crate) windows: &'a windows::Windows,
    pub(crate) evictor: &'a evict::Evictor,
    /// CLIENT PAUSE's state: a paused server expires and evicts nothing.
    pub(crate) pause: &'a crate::pause::Pause,
    /// Redis's `server.dirty`: changes since the last save.
    pub(crate) dirty: &'a AtomicU64,
    pub(crate) expire_stats: &'a crate::stats::ExpireStats,
    pub(crate) latency: &'a Mutex<crate::latency::Monitor>,
    /// Where lazily deleted values are freed (see [`lazyfree`]).
    pub(crate) lazyfree: &'a lazyfree::LazyFree,
    pub(crate) events: &'a dyn Events,
}

/// Frees a removed entry's value: on the lazyfree thread when `lazy` and
/// it is worth it, else at once.
pub(crate) fn free_entry(env: Env<'_>, entry: Entry, lazy: bool) {
    if lazy {
        env.lazyfree.free_value(entry.value);
    }
}

/// A command's view of the keyspace: the shards it locked, one database,
/// one instant.
pub(crate) struct Keyspace<'a> {
    pub(crate) env: Env<'a>,
    pub(crate) guards: Guards<'a>,
    pub(crate) db: usize,
    pub(crate) now_ms: u64,
    /// The system clock's reading `now_ms` came from, when it was read just
    /// for this view (as `execution` dates each command's); the first
    /// command run on the view takes it as its start instead of reading the
    /// clock again.
    pub(crate) fresh_us: Option<u64>,
    /// Keys that received data this command; blocked clients are served
    /// from them once the command's locks are released.
    pub(crate) ready: Vec<(usize, Key)>,
    /// Keys changed (None: everything, a flush) whose client-side caches
    /// must be invalidated, once client tracking was ever used; the
    /// execution layer sends them after each command, and whatever is left
    /// (background expiry, the sweeper) goes out when this view is dropped.
    pub(crate) invalidated: events::Invalidated,
    /// Invalidations for the running client itself, sent after its reply.
    pub(crate) tracking_pending: events::OwnInvalidations,
    /// The commands this view's changes amount to (see [`propagate`]).
    pub(crate) prop: propagate::Pending,
    /// The command runs on behalf of the primary (the replication link's
    /// client, Redis's `CLIENT_MASTER`): on a replica it sees every key,
    /// member and field as stored, due or not, since the stream carries
    /// the primary's deletions itself. The execution layer sets it; false
    /// otherwise (and meaningless on a primary).
    pub(crate) from_master: bool,
    /// Lookups leave keys' LRU/LFU as they are (Redis's `LOOKUP_NOTOUCH`
    /// forced by a `CLIENT NO-TOUCH` client's commands other than TOUCH);
    /// the execution layer sets it per command.
    pub(crate) no_touch: bool,
    /// On a replica, what this view's reads see of keys with due members
    /// or fields (see [`replica`]).
    replica: replica::View,
    /// The key (database, hash) whose value `set_entry` just classed for
    /// the key size histograms, untouched since: the `modified` that
    /// follows a plain overwrite (SET) skips classing it again. Any path
    /// that may change a value passes through [`cow`](Self::cow), which
    /// clears it.
    sized: Option<(usize, u64)>,
}

impl Drop for Keyspace<'_> {
    fn drop(&mut self) {
        // Background work (active expiry, eviction, the sweeper) sends its
        // deletions here, still under its locks so the stream keeps the
        // order of the changes; each one stands alone (no MULTI).
        self.flush_propagated(false);
        self.send_invalidations();
    }
}

impl Keyspace<'_> {
    /// Sends the client-side caching invalidations this view collected
    /// that no command's after-command step took.
    fn send_invalidations(&mut self) {
        let events = self.env.events;
        if events.tracking_used() {
            events.send_invalidations(&mut self.invalidated, &mut self.tracking_pending);
        }
    }
}

impl<'a> Keyspace<'a> {
    pub(crate) fn new(env: Env<'a>, guards: Guards<'a>, db: usize, now_ms: u64) -> Keyspace<'a> {
        Keyspace {
            env,
            guards,
            db,
            now_ms,
            fresh_us: None,
            ready: Vec::new(),
            invalidated: Vec::new(),
            tracking_pending: Vec::new(),
            prop: Default::default(),
            from_master: false,
            no_touch: false,
            replica: Default::default(),
            sized: None,
        }
    }

    /// Whether the AOF is being loaded (nothing expires meanwhile).
    pub(crate) fn loading(&self) -> bool {
        self.store().loading.load(Ordering::Relaxed)
    }

    /// Whether the command comes from a source the server must obey
    /// rather than check (Redis's `mustObeyClient`): the AOF being loaded,
    /// or the primary's stream on a replica.
    pub(crate) fn must_obey(&self) -> bool {
        self.from_master || self.loading()
    }

    /// The instant a deadline given by a command is checked against, to
    /// apply one already past at once: None while the AOF loads, when a
    /// deadline is only stored (Redis's `checkAlreadyExpired`), as the file
    /// holds the deletion that followed it as a command of its own; None
    /// on a replica too, which deletes nothing on its own (the key or
    /// field is stored, and hidden from reads).
    pub(crate) fn expiry_now(&self) -> Option<u64> {
        (!self.loading() && !self.store().is_replica()).then_some(self.now_ms)
    }

    /// Whether changes are collected as commands (an AOF is written).
    pub(crate) fn propagating(&self) -> bool {
        self.env.events.propagating()
    }

    /// Adds a command to propagate in the current database (Redis's
    /// `alsoPropagate`), when anything listens.
    pub(crate) fn also_propagate(&mut self, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        if self.propagating() {
            let db = self.db;
            self.prop.push(db, argv());
        }
    }

    /// A key deleted by expiry (or `eviction`): `DEL`, or `UNLINK` when
    /// the matching `lazyfree-lazy-*` setting is on (Redis's
    /// `propagateDeletion`).
    fn propagate_deletion(&mut self, key: &[u8], eviction: bool) {
        let config = self.env.config;
        self.also_propagate(|| {
            let lazy = if eviction {
                config.lazyfree_lazy_eviction()
            } else {
                config.lazyfree_lazy_expire()
            };
            crate::argv![propagate::del_name(lazy), key]
        });
    }

    /// The running command as the client sent it, in database `db`, as
    /// what its execution unit propagates (Redis's `call` propagating
    /// `c->argv`). When it is the unit's only command and the outermost
    /// call, the common write, it goes to the sinks at once, borrowed:
    /// no copy of its arguments is made for the stream's sake.
    pub(crate) fn propagate_verbatim(&mut self, db: usize, args: &crate::protocol::Args<'_>) {
        if self.prop.depth == 0 && self.prop.ops.is_empty() {
            if self.propagating() {
                self.env.events.feed_args(db, args);
            }
            return;
        }
        self.prop
            .push(db, args.iter().map(<[u8]>::to_vec).collect());
    }

    /// Sends what was collected to the sinks, as one unit.
    pub(crate) fn flush_propagated(&mut self, transaction: bool) {
        if self.prop.ops.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.prop.ops);
        if self.propagating() {
            self.env.events.feed(&ops, transaction && ops.len() > 1);
        }
    }

    fn store(&self) -> &'a Store {
        self.env.store
    }

    /// The shard owning `key`. The dispatcher locked it from the command
    /// table's key positions; a command reaching outside its declared keys
    /// is a bug, caught in debug builds and survived in release by locking
    /// the shard late.
    ///
    /// This and the other methods taking a key take it hashed or not: a
    /// handler passing the [`HashedKey`] its command's planning made
    /// (`Ctx::key`) has it hashed once for the locking, the expiry check
    /// and the lookup.
    pub(crate) fn shard<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> &mut Shard {
        let idx = self.store().shard_of(key);
        self.shard_at(idx)
    }

    pub(crate) fn shard_at(&mut self, idx: usize) -> &mut Shard {
        if self.guards.get(idx).is_none() {
            self.lock_late(idx);
        }
        match self.guards.get(idx) {
            Some(s) => s,
            None => unreachable!("shard was just locked"),
        }
    }

    /// [`shard_at`](Self::shard_at)'s way out of a bug, kept out of line:
    /// that runs for every key a command touches.
    #[cold]
    #[inline(never)]
    fn lock_late(&mut self, idx: usize) {
        debug_assert!(false, "shard {idx} used without being locked");
        tracing::error!(shard = idx, "command touched a shard it did not lock");
        let g = self.store().lock_shard(idx);
        match std::mem::replace(&mut self.guards, Guards::None) {
            Guards::None => self.guards = Guards::One(idx, g),
            Guards::One(i, g0) => self.guards = Guards::Many(vec![(i, g0), (idx, g)]),
            Guards::Many(mut v) => {
                v.push((idx, g));
                self.guards = Guards::Many(v);
            }
        }
    }

    fn db_of(&mut self, key: HashedKey<'_>) -> &mut Db {
        let db = self.db;
        &mut self.shard(key).dbs[db]
    }

    /// Looks a key up for a write, deleting it first if its TTL has
    /// passed (on a replica, see [`replica`]).
    pub(crate) fn get<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<&mut Entry> {
        let key = key.into();
        match self.prepare_as(key, true) {
            replica::Seen::Live => {}
            replica::Seen::Gone => return None,
            replica::Seen::Copy(i) => return self.copy_hit(key, i, false),
        }
        let (config, now, touch) = (self.env.config, self.now_ms, !self.no_touch);
        let e = self
            .db_of(key)
            .keys
            .get_mut_hashed(key.bytes(), key.hash())?;
        if touch {
            e.set_lru(evict::touched(config, e.lru(), now));
        }
        Some(e)
    }

    /// Like [`get`](Self::get) for a read, counting keyspace hits and
    /// misses.
    pub(crate) fn get_read<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<&mut Entry> {
        let key = key.into();
        let hidden = match self.prepare_as(key, false) {
            replica::Seen::Live => false,
            replica::Seen::Gone => true,
            replica::Seen::Copy(i) => return self.copy_hit(key, i, true),
        };
        let (db, config, now, touch) = (self.db, self.env.config, self.now_ms, !self.no_touch);
        let shard = self.shard(key);
        let entry = shard.dbs[db].keys.get_mut_hashed(key.bytes(), key.hash());
        match entry.filter(|_| !hidden) {
            Some(e) => {
                shard.stats.hits += 1;
                if touch {
                    e.set_lru(evict::touched(config, e.lru(), now));
                }
                Some(e)
            }
            None => {
                shard.stats.misses += 1;
                None
            }
        }
    }

    /// A lookup on a replica met a key with due members or fields: the
    /// stored entry counts the access (and the hit, for a read), the
    /// command gets the view's trimmed copy `i` (see [`replica`]).
    #[cold]
    fn copy_hit(&mut self, key: HashedKey<'_>, i: usize, read: bool) -> Option<&mut Entry> {
        let (db, config, now, touch) = (self.db, self.env.config, self.now_ms, !self.no_touch);
        let shard = self.shard(key);
        if let Some(e) = shard.dbs[db].keys.get_mut_hashed(key.bytes(), key.hash()) {
            if touch {
                e.set_lru(evict::touched(config, e.lru(), now));
            }
            if read {
                shard.stats.hits += 1;
            }
        }
        self.replica.copy(i)
    }

    /// Whether this command holds shard `idx`'s lock.
    pub(crate) fn holds(&mut self, idx: usize) -> bool {
        self.guards.get(idx).is_some()
    }

    /// Gives the locks back without releasing them (lock planning that
    /// looked at entries before deciding the set is complete).
    pub(crate) fn into_guards(mut self) -> Guards<'a> {
        std::mem::replace(&mut self.guards, Guards::None)
    }

    /// Looks a key up without touching its access time (OBJECT, TYPE-free paths).
    pub(crate) fn peek<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<&mut Entry> {
        let key = key.into();
        match self.prepare_as(key, false) {
            replica::Seen::Live => self.db_of(key).keys.get_mut_hashed(key.bytes(), key.hash()),
            replica::Seen::Gone => None,
            replica::Seen::Copy(i) => self.replica.copy(i),
        }
    }

    /// Looks a key up as stored: no expiry, trimming or access time.
    pub(crate) fn peek_raw<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<&mut Entry> {
        let key = key.into();
        self.cow(key);
        self.db_of(key).keys.get_mut_hashed(key.bytes(), key.hash())
    }

    pub(crate) fn exists<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> bool {
        let key = key.into();
        if self.prepare_as(key, false) == replica::Seen::Gone {
            return false;
        }
        self.db_of(key)
            .keys
            .contains_key_hashed(key.bytes(), key.hash())
    }

    /// Sets a key's value, dropping any TTL (Redis's `setKey`).
    pub(crate) fn set<'k>(&mut self, key: impl Into<HashedKey<'k>>, value: Value) {
        self.set_entry(key, Entry::new(value));
    }

    /// Sets a key's value, keeping its TTL if it had one.
    pub(crate) fn set_keep_ttl<'k>(&mut self, key: impl Into<HashedKey<'k>>, value: Value) {
        let key = key.into();
        let expire_at = self.get(key).map_or(0, |e| e.expire_at);
        let mut entry = Entry::new(value);
        entry.expire_at = expire_at;
        self.set_entry(key, entry);
    }

    /// A replica's own client gave `key` a TTL: the replica expires it
    /// itself (see [`Store::local_expires`]).
    fn note_local_expire(&mut self, key: HashedKey<'_>) {
        if self.env.store.is_replica() && !self.from_master {
            let db = self.db;
            self.env
                .store
                .local_expires
                .lock()
                .insert((db, key.bytes().into()));
        }
    }

    /// Stores a whole entry (value and TTL), replacing any existing one.
    /// The one place a key enters a database (besides a database's
    /// contents replaced wholesale): the slot index relies on it.
    pub(crate) fn set_entry<'k>(&mut self, key: impl Into<HashedKey<'k>>, mut entry: Entry) {
        let key = key.into();
        entry.set_lru(evict::fresh(self.env.config, self.now_ms));
        let class = keysizes::class(&entry.value);
        entry.set_class(class);
        // A renamed or copied value is windowed by its new name's rule.
        entry.window = Default::default();
        let has_ttl = entry.expire_at != 0;
        if has_ttl {
            self.note_local_expire(key);
        }
        self.cow(key);
        self.replica.forget();
        let lfu = self.env.config.maxmemory_policy().is_lfu();
        let (config, now_ms, touch) = (self.env.config, self.now_ms, !self.no_touch);
        self.signal_replaced(key);
        let (bytes, hash) = (key.bytes(), key.hash());
        let db = self.db_of(key);
        if let Some(old) = db.keys.get_mut_hashed(bytes, hash) {
            let had_ttl = old.expire_at != 0;
            if lfu {
                // An overwritten key keeps its access counter (Redis's
                // dbSetValue), so a hot key stays hot, counting the write
                // lookup Redis makes before overwriting as an access.
                entry.set_lru(if touch {
                    evict::touched(config, old.lru(), now_ms)
                } else {
                    old.lru()
                });
            }
            db.sizes.moved(old.class(), class);
            let prev = std::mem::replace(old, entry);
            if had_ttl && !has_ttl {
                db.expires.remove_hashed(bytes, hash);
            } else if has_ttl && !had_ttl {
                db.expires.insert_hashed(bytes.into(), hash, ());
            }
            // Redis's dbSetValue: the old value is a server deletion.
            free_entry(self.env, prev, config.lazyfree_lazy_server_del());
        } else {
            db.keys.insert_hashed(bytes.into(), hash, entry);
            db.sizes.moved(0, class);
            if has_ttl {
                db.expires.insert_hashed(bytes.into(), hash, ());
            }
            if let Some(index) = self.env.store.slot_index.as_deref()
                && self.db == 0
            {
                index.insert(key);
            }
            // Redis's dbAdd: class `n`, which `A` leaves out.
            self.notify(notify::NEW, "new", bytes);
        }
        // The command's `modified` need not class the value again.
        self.sized = Some((self.db, hash));
    }

    /// Removes a key, returning its entry.
    pub(crate) fn remove<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<Entry> {
        let key = key.into();
        self.prepare(key);
        self.remove_raw(key)
    }

    /// Removes a key as [`remove`](Self::remove) does and frees its value,
    /// on the lazyfree thread when `lazy` and the value is large (Redis's
    /// `dbAsyncDelete`; else `dbSyncDelete`). True if it existed.
    pub(crate) fn delete<'k>(&mut self, key: impl Into<HashedKey<'k>>, lazy: bool) -> bool {
        match self.remove(key) {
            Some(e) => {
                free_entry(self.env, e, lazy);
                true
            }
            None => false,
        }
    }

    /// Removes a key with no expiry check and no notification.
    pub(crate) fn remove_raw_entry<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> Option<Entry> {
        self.remove_raw(key.into())
    }

    /// The one place a key leaves a database (besides a database emptied
    /// or replaced wholesale): the slot index relies on it.
    fn remove_raw(&mut self, key: HashedKey<'_>) -> Option<Entry> {
        self.cow(key);
        self.replica.forget();
        self.signal_replaced(key);
        let (bytes, hash) = (key.bytes(), key.hash());
        let db = self.db_of(key);
        let (_, e) = db.keys.remove_hashed(bytes, hash)?;
        db.sizes.moved(e.class(), 0);
        if e.expire_at != 0 {
            db.expires.remove_hashed(bytes, hash);
        }
        if let Some(index) = self.env.store.slot_index.as_deref()
            && self.db == 0
        {
            index.remove(key);
        }
        Some(e)
    }

    /// Sets or clears (`at_ms == 0`) the TTL of an existing key.
    pub(crate) fn set_expire<'k>(&mut self, key: impl Into<HashedKey<'k>>, at_ms: u64) -> bool {
        let key = key.into();
        self.cow(key);
        let (bytes, hash) = (key.bytes(), key.hash());
        let db = self.db_of(key);
        let Some(e) = db.keys.get_mut_hashed(bytes, hash) else {
            return false;
        };
        let had = e.expire_at != 0;
        e.expire_at = at_ms;
        if at_ms != 0 && !had {
            db.expires.insert_hashed(bytes.into(), hash, ());
        } else if at_ms == 0 && had {
            db.expires.remove_hashed(bytes, hash);
        }
        if at_ms != 0 {
            self.note_local_expire(key);
        }
        true
    }

    /// Brings a key up to date before a command reads it: TTL expiry, then
    /// window trimming, field and member expiry. True if the key is gone
    /// for the command: its TTL has passed (deleted, or only hidden while
    /// CLIENT PAUSE holds expiry back or on a replica), or on a replica
    /// nothing would be left of it (see [`replica`]).
    pub(crate) fn prepare<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> bool {
        self.prepare_as(key.into(), false) == replica::Seen::Gone
    }

    /// [`prepare`](Self::prepare) for a read or (`write`) a write lookup,
    /// which differ on a writable replica only. On a replica, a key with
    /// due members or fields is left as stored and the view's reads get a
    /// trimmed copy of it (`Seen::Copy`).
    fn prepare_as(&mut self, key: HashedKey<'_>, write: bool) -> replica::Seen {
        self.cow(key);
        // While the AOF loads nothing expires or ages out: the file holds
        // those deletions (and hand-offs) as commands of their own, and
        // doing them here too would do them twice.
        if self.loading() {
            return replica::Seen::Live;
        }
        self.replica.write = write;
        if self.expire_key(key) {
            return replica::Seen::Gone;
        }
        let bytes = key.bytes();
        let (windows, fields, members, set_members) = (
            self.env.windows.active(),
            self.field_ttls(),
            self.member_ttls(),
            self.set_ttls(),
        );
        if !(windows || fields || members || set_members) {
            return replica::Seen::Live;
        }
        self.replica.held = false;
        if windows {
            crate::keyspace::windows::trim(self, bytes, crate::keyspace::windows::TrimMode::Lazy);
        }
        if fields {
            hash_ttl::expire(self, bytes, usize::MAX);
        }
        if members {
            zset_ttl::expire(self, bytes, usize::MAX);
        }
        if set_members {
            set_ttl::expire(self, bytes, usize::MAX);
        }
        if std::mem::take(&mut self.replica.held) {
            return replica::read_copy(self, key);
        }
        replica::Seen::Live
    }

    /// Preserves `key` for a running BGSAVE before it may change (see
    /// [`snapshot`]); one relaxed load when none runs.
    ///
    /// Every path that may change a stored value comes here first, so it
    /// also forgets that `set_entry` just classed one (see `Keyspace::sized`).
    pub(crate) fn cow<'k>(&mut self, key: impl Into<HashedKey<'k>>) {
        self.sized = None;
        if self.store().snapshot_active.load(Ordering::Relaxed) {
            let key = key.into();
            let db = self.db;
            self.shard(key).cow(db, key.bytes());
        }
    }

    /// Whether any sorted-set member ever had a TTL (see [`Store::member_ttls`]).
    pub(crate) fn member_ttls(&self) -> bool {
        self.store().member_ttls.load(Ordering::Relaxed)
    }

    /// Whether any set member ever had a TTL (see [`Store::set_ttls`]).
    pub(crate) fn set_ttls(&self) -> bool {
        self.store().set_ttls.load(Ordering::Relaxed)
    }

    /// Whether any hash field ever had a TTL (see [`Store::field_ttls`]).
    pub(crate) fn field_ttls(&self) -> bool {
        self.store().field_ttls.load(Ordering::Relaxed)
    }

    /// Deletes `key` if its TTL has passed; true if it has passed. While
    /// CLIENT PAUSE is in force the key is only reported expired, not
    /// deleted (Redis's `expireIfNeeded`): a pause stops every change. On
    /// a replica it is not deleted either, and reported expired only to
    /// the replica's own clients (see [`replica`]).
    pub(crate) fn expire_if_needed<'k>(&mut self, key: impl Into<HashedKey<'k>>) -> bool {
        self.replica.write = false;
        self.expire_key(key.into())
    }

    /// [`expire_if_needed`](Self::expire_if_needed), for the lookup kind
    /// `self.replica.write` says.
    fn expire_key(&mut self, key: HashedKey<'_>) -> bool {
        let (now, dbi) = (self.now_ms, self.db);
        if self.loading() {
            return false;
        }
        let db = self.db_of(key);
        if db.expires.is_empty() {
            return false;
        }
        match db.keys.get_hashed(key.bytes(), key.hash()) {
            Some(e) if e.is_expired(now) => {}
            _ => return false,
        }
        match self.on_due() {
            replica::Due::Delete => {}
            replica::Due::Keep => return false,
            replica::Due::Hide => return true,
        }
        if self.expiry_paused() {
            return true;
        }
        if let Some(e) = self.remove_raw(key) {
            free_entry(self.env, e, self.env.config.lazyfree_lazy_expire());
        }
        let bytes = key.bytes();
        let shard = self.shard(key);
        shard.stats.expired_keys += 1;
        shard.touch_watched(dbi, bytes);
        self.propagate_deletion(bytes, false);
        self.notify(notify::EXPIRED, "expired", bytes);
        self.invalidate_tracking(bytes);
        true
    }

    /// A key was modified: invalidate WATCHes (Redis's `signalModifiedKey`),
    /// counting one change. A value changed in place is counted in its new
    /// size class here.
    pub(crate) fn modified<'k>(&mut self, key: impl Into<HashedKey<'k>>) {
        self.modified_by(key, 1);
    }

    /// A key was modified by `changes` changes as Redis counts them in
    /// `server.dirty` (`LPUSH k a b c` adds 3, `SADD` the members added):
    /// what `rdb_changes_since_last_save` and the save points see.
    pub(crate) fn modified_by<'k>(&mut self, key: impl Into<HashedKey<'k>>, changes: u64) {
        let key = key.into();
        if self.sized != Some((self.db, key.hash())) {
            self.reclass(key);
        }
        self.replica.forget();
        self.prop.dirty += changes;
        self.env
            .dirty
            .fetch_add(changes, std::sync::atomic::Ordering::Relaxed);
        let db = self.db;
        self.shard(key).touch_watched(db, key.bytes());
        self.invalidate_tracking(key.bytes());
        if self.env.windows.active() || self.field_ttls() || self.member_ttls() || self.set_ttls() {
            crate::keyspace::windows::reschedule(self, key.bytes());
        }
    }

    /// Moves `key`'s entry to the histogram bin its value's length falls
    /// in now, if that changed (see [`keysizes`]).
    fn reclass(&mut self, key: HashedKey<'_>) {
        let db = self.db_of(key);
        if let Some(e) = db.keys.get_mut_hashed(key.bytes(), key.hash()) {
            let class = keysizes::class(&e.value);
            let old = e.class();
            if class != old {
                e.set_class(class);
                db.sizes.moved(old, class);
            }
        }
    }

    /// Counts `n` changes that no WATCH and no client cache sees (Redis's
    /// bare `server.dirty++`): a stream group's state moving (XACK, XGROUP,
    /// XREADGROUP, XCLAIM). Enough for the save points, and for the
    /// command to be propagated (Redis's dirty test in `call`).
    pub(crate) fn dirty(&mut self, n: u64) {
        self.prop.dirty += n;
        self.env
            .dirty
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Client-side caches of `key` must go (Redis's `trackingInvalidateKey`
    /// from `signalModifiedKey`): every change of a key calls it, through
    /// [`modified`](Self::modified) or key expiry; eviction calls it too.
    pub(crate) fn invalidate_tracking(&mut self, key: &[u8]) {
        if self.env.events.tracking_used() {
            self.invalidated.push(Some(key.into()));
        }
    }

    /// Every client-side cache must go (FLUSHALL, FLUSHDB).
    pub(crate) fn invalidate_tracking_all(&mut self) {
        if self.env.events.tracking_used() {
            self.invalidated.push(None);
        }
    }

    /// Publishes a keyspace notification if the class is enabled.
    pub(crate) fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let flags = self.env.config.notify_flags();
        if flags & class == 0 || flags & (notify::KEYSPACE | notify::KEYEVENT) == 0 {
            return;
        }
        self.env.events.notify_keyspace(flags, self.db, event, key);
    }

    /// The common pair after a write: WATCH invalidation and notification.
    pub(crate) fn signal<'k>(&mut self, key: impl Into<HashedKey<'k>>, class: u32, event: &str) {
        self.signal_by(key, class, event, 1);
    }

    /// [`signal`](Self::signal) for a write that Redis counts as
    /// `changes` changes (see [`modified_by`](Self::modified_by)).
    pub(crate) fn signal_by<'k>(
        &mut self,
        key: impl Into<HashedKey<'k>>,
        class: u32,
        event: &str,
        changes: u64,
    ) {
        let key = key.into();
        self.modified_by(key, changes);
        self.notify(class, event, key.bytes());
    }

    /// Records that `key` received elements blocked clients may want.
    pub(crate) fn signal_ready(&mut self, key: &[u8]) {
        if self.env.events.has_waiters() {
            self.ready.push((self.db, key.into()));
        }
    }

    /// A key clients wait on is deleted or replaced: its waiters are
    /// looked at again, since some fail when their key goes away (Redis's
    /// `signalDeletedKeyAsReady`, for XREADGROUP).
    fn signal_replaced(&mut self, key: HashedKey<'_>) {
        if !self.env.events.has_waiters() {
            return;
        }
        let k = (self.db, Key::from(key.bytes()));
        let db = self.db;
        let shard = self.shard(key);
        if shard.blocked.contains_key(&k)
            && shard.dbs[db]
                .keys
                .contains_key_hashed(key.bytes(), key.hash())
        {
            self.ready.push(k);
        }
    }

    /// Every locked shard's slice of the current database.
    pub(crate) fn dbs_mut(&mut self) -> impl Iterator<Item = &mut Db> {
        let db = self.db;
        self.guards.iter_mut().map(move |s| &mut s.dbs[db])
    }

    pub(crate) fn shards_mut(&mut self) -> impl Iterator<Item = &mut Shard> {
        self.guards.iter_mut()
    }

    /// Brings every table of the held shards (keys and expires of each
    /// database) and the slot index to the size their entries call for,
    /// after `DEBUG DICT-RESIZING 1` let them go (Redis's cron resizes
    /// them on its next runs).
    pub(crate) fn resize_tables(&mut self) {
        for shard in self.guards.iter_mut() {
            for db in shard.dbs.iter_mut() {
                db.keys.resize_if_needed();
                db.expires.resize_if_needed();
            }
        }
        if let Some(index) = self.env.store.slot_index.as_deref() {
            index.resize_tables();
        }
    }

    /// Takes every database's contents from `new`, a store of the same
    /// shape that an async load filled while clients went on reading this
    /// one, and leaves the old contents there (Redis's
    /// `swapMainDbWithTempDb`): dropping `new` afterwards frees them
    /// outside these locks. The view holds every shard. Watched keys that
    /// existed before or exist now are touched, every client-side cache
    /// is invalidated, and a running snapshot keeps the old contents. The
    /// slot index (cluster mode) follows the contents.
    pub(crate) fn swap_in(&mut self, new: &Store) {
        debug_assert_eq!(self.guards.shard_set(), self.store().all_shards());
        let mut fresh = new.lock(new.all_shards());
        for (shard, other) in self.guards.iter_mut().zip(fresh.iter_mut()) {
            for db in 0..shard.dbs.len() {
                shard.cow_db(db);
            }
            let touched: Vec<(usize, Key)> = shard
                .watched
                .keys()
                .filter(|(d, k)| {
                    shard.dbs[*d].keys.contains_key(k) || other.dbs[*d].keys.contains_key(k)
                })
                .cloned()
                .collect();
            std::mem::swap(&mut shard.dbs, &mut other.dbs);
            std::mem::swap(&mut shard.schedule, &mut other.schedule);
            for (d, k) in touched {
                shard.touch_watched(d, &k);
            }
        }
        drop(fresh);
        let store = self.store();
        match (store.slot_index(), new.slot_index()) {
            (Some(live), Some(loaded)) => live.swap(loaded),
            (Some(_), None) => self.db_replaced(0),
            (None, _) => {}
        }
        if new.field_ttls.load(Ordering::Relaxed) {
            store.field_ttls.store(true, Ordering::Relaxed);
        }
        if new.member_ttls.load(Ordering::Relaxed) {
            store.member_ttls.store(true, Ordering::Relaxed);
        }
        if new.set_ttls.load(Ordering::Relaxed) {
            store.set_ttls.store(true, Ordering::Relaxed);
        }
        store.local_expires.lock().clear();
        self.invalidate_tracking_all();
    }

    /// Visits every shard, through this command's guard where it holds one
    /// and by locking it briefly where it does not. For whole-server
    /// commands (INFO, CONFIG RESETSTAT) that run both on their own (holding
    /// nothing) and inside EXEC (holding everything): locking one shard
    /// while holding only some could deadlock, so use it in those two
    /// situations only.
    pub(crate) fn for_each_shard(&mut self, mut f: impl FnMut(&mut Shard)) {
        for idx in 0..self.store().shard_count() {
            match self.guards.get(idx) {
                Some(shard) => f(shard),
                None => f(&mut self.store().lock_shard(idx)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a keyspace reported through its [`Events`] seam.
    #[derive(Default)]
    pub(super) struct Recorder {
        pub(super) notified: Mutex<Vec<(usize, String, Vec<u8>)>>,
        pub(super) fed: Mutex<Vec<Vec<Vec<u8>>>>,
    }

    impl Events for Recorder {
        fn tracking_used(&self) -> bool {
            false
        }
        fn send_invalidations(
            &self,
            _: &mut events::Invalidated,
            _: &mut events::OwnInvalidations,
        ) {
        }
        fn notify_keyspace(&self, _flags: u32, db: usize, event: &str, key: &[u8]) {
            self.notified.lock().push((db, event.into(), key.to_vec()));
        }
        fn has_waiters(&self) -> bool {
            false
        }
        fn pushes_in_flight(&self) -> u64 {
            0
        }
        fn propagating(&self) -> bool {
            true
        }
        fn feed(&self, ops: &[propagate::Op], _transaction: bool) {
            self.fed.lock().extend(ops.iter().map(|op| op.argv.clone()));
        }
        fn feed_args(&self, _db: usize, args: &crate::protocol::Args<'_>) {
            self.fed
                .lock()
                .push(args.iter().map(<[u8]>::to_vec).collect());
        }
    }

    /// The services a view reads, owned by the test instead of a server.
    pub(super) struct Services {
        pub(super) config: Config,
        pub(super) clock: Clock,
        pub(super) windows: windows::Windows,
        evictor: evict::Evictor,
        pause: crate::pause::Pause,
        dirty: AtomicU64,
        expire_stats: crate::stats::ExpireStats,
        latency: Mutex<crate::latency::Monitor>,
        lazyfree: lazyfree::LazyFree,
        pub(super) events: Recorder,
    }

    impl Services {
        /// Default settings, a clock frozen at `now_ms`, nothing reported.
        pub(super) fn new(now_ms: u64) -> Services {
            let services = Services {
                config: Config::defaults(),
                clock: Clock::default(),
                windows: Default::default(),
                evictor: Default::default(),
                pause: Default::default(),
                dirty: AtomicU64::new(0),
                expire_stats: Default::default(),
                latency: Default::default(),
                lazyfree: Default::default(),
                events: Recorder::default(),
            };
            services.clock.freeze_at(now_ms);
            services
        }

        pub(super) fn env<'a>(&'a self, store: &'a Store) -> Env<'a> {
            Env {
                store,
                config: &self.config,
                clock: &self.clock,
                windows: &self.windows,
                evictor: &self.evictor,
                pause: &self.pause,
                dirty: &self.dirty,
                expire_stats: &self.expire_stats,
                latency: &self.latency,
                lazyfree: &self.lazyfree,
                events: &self.events,
            }
        }
    }

    #[test]
    fn a_private_copy_is_a_separate_dataset() {
        let services = Services::new(1_000_000);
        let store = Store::new(4, 2);
        let env = services.env(&store);
        let now = env.clock.now_ms();
        let mut ks = Keyspace::new(env, store.lock(store.all_shards()), 1, now);
        ks.set(&b"k"[..], Value::Str(Str::new(b"v")));
        assert!(ks.set_expire(&b"k"[..], now + 100_000));
        drop(ks);
        let copy = store.private_copy();
        let copy_env = Env {
            store: &copy,
            ..env
        };
        let mut c = Keyspace::new(copy_env, copy.lock(copy.all_shards()), 1, now);
        assert!(c.exists(&b"k"[..]));
        assert_eq!(c.get(&b"k"[..]).map(|e| e.expire_at), Some(now + 100_000));
        c.remove(&b"k"[..]);
        c.set(&b"new"[..], Value::Str(Str::new(b"x")));
        drop(c);
        let mut ks = Keyspace::new(env, store.lock(store.all_shards()), 1, now);
        assert!(ks.exists(&b"k"[..]));
        assert!(!ks.exists(&b"new"[..]));
    }

    #[test]
    fn a_view_runs_without_a_server_and_reports_through_its_seam() {
        let services = Services::new(1_000_000);
        services
            .config
            .set_many(&[(b"notify-keyspace-events", b"KEA")])
            .unwrap();
        let store = Store::new(4, 2);
        let env = services.env(&store);
        let mut ks = Keyspace::new(env, store.lock(store.all_shards()), 1, env.clock.now_ms());
        ks.set(&b"k"[..], Value::Str(Str::new(b"v")));
        ks.signal(&b"k"[..], notify::STRING, "set");
        assert!(ks.set_expire(&b"k"[..], 1_000_500));
        assert!(ks.exists(&b"k"[..]));
        assert_eq!(services.dirty.load(Ordering::Relaxed), 1);

        // Lazy expiry, seen by a later view: the key goes, with its
        // notification and the DEL that logs it.
        drop(ks);
        services.clock.freeze_at(1_000_500);
        let mut ks = Keyspace::new(env, store.lock(store.all_shards()), 1, env.clock.now_ms());
        assert!(!ks.exists(&b"k"[..]));
        drop(ks);
        let notified = services.events.notified.lock().clone();
        assert_eq!(
            notified,
            [
                (1, "set".to_string(), b"k".to_vec()),
                (1, "expired".to_string(), b"k".to_vec())
            ]
        );
        let fed = services.events.fed.lock().clone();
        assert_eq!(fed, [vec![b"DEL".to_vec(), b"k".to_vec()]]);
    }

    fn shard_with(key: &[u8], expire_at: u64) -> Shard {
        let mut shard = Shard::new(2);
        let mut e = Entry::new(Value::Str(Str::new(b"v")));
        e.expire_at = expire_at;
        shard.dbs[0].keys.insert(key.into(), e);
        shard
    }

    #[test]
    fn touching_a_watched_key_flags_its_watchers_only() {
        let mut shard = shard_with(b"k", 0);
        let (a, b): (WatchFlag, WatchFlag) = Default::default();
        assert!(shard.watch(0, b"k", &a, 100));
        assert!(
            !shard.watch(0, b"k", &a, 100),
            "second WATCH of the same key"
        );
        assert!(shard.watch(0, b"other", &b, 100));
        shard.touch_watched(1, b"k");
        assert!(!a.load(Ordering::Acquire), "another database");
        shard.touch_watched(0, b"k");
        assert!(a.load(Ordering::Acquire) && !b.load(Ordering::Acquire));
        shard.unwatch(0, b"k", &a);
        shard.unwatch(0, b"other", &b);
        assert!(shard.watched.is_empty());
    }

    #[test]
    fn a_key_expired_when_watched_may_be_deleted_but_not_rewritten() {
        let mut shard = shard_with(b"k", 50);
        let flag = WatchFlag::default();
        shard.watch(0, b"k", &flag, 100);
        assert!(!shard.watched_key_expired(0, b"k", &flag, 200));
        // Its deletion is no change...
        shard.dbs[0].keys.remove(b"k".as_slice());
        shard.touch_watched(0, b"k");
        assert!(!flag.load(Ordering::Acquire));
        // ...but writing it afterwards is.
        shard.dbs[0].keys.insert(
            b"k".as_slice().into(),
            Entry::new(Value::Str(Str::new(b"w"))),
        );
        shard.touch_watched(0, b"k");
        assert!(flag.load(Ordering::Acquire));
    }

    #[test]
    fn a_live_watched_key_that_expires_is_reported() {
        let mut shard = shard_with(b"k", 150);
        let flag = WatchFlag::default();
        shard.watch(0, b"k", &flag, 100);
        assert!(!shard.watched_key_expired(0, b"k", &flag, 120));
        assert!(shard.watched_key_expired(0, b"k", &flag, 150));
    }
}
