//! Redis Cluster's hash slots: which of the 16384 slots a key belongs to
//! (Redis's `keyHashSlot`), and, in cluster mode, database 0's keys indexed
//! by slot (Redis 7.0's `slots_to_keys`), so that counting a slot's keys is
//! O(1) and listing or deleting them costs what they are, never a scan of
//! the keyspace (CLUSTER COUNTKEYSINSLOT, GETKEYSINSLOT, FLUSHSLOTS, and
//! a node dropping the keys of slots it lost).
//!
//! The index belongs to the [`Store`](super::Store) and is kept up to date
//! by the keyspace's one insertion and one removal of a key
//! (`Keyspace::set_entry`, `Keyspace::remove_raw`) and by the few places
//! that empty or replace a database wholesale (`Keyspace::db_emptied`,
//! `Keyspace::db_replaced`, `Keyspace::swap_in`). A standalone server has
//! no index and pays one null-pointer test per key inserted or removed:
//! in the optimized code of both, a load of the index pointer, a test and
//! a jump over the rest (the database check and the out-of-line call).
//!
//! Why one lock per slot: the keys of one slot live on every shard (a
//! shard is chosen by the key's own hash), so writers holding different
//! shards' locks meet at the same slot. Each slot's lock is held only for
//! the one insertion or removal, always innermost (never while taking a
//! shard's lock or another slot's), so it cannot deadlock, and writers of
//! different slots never contend.
//!
//! Memory: Redis threads a doubly-linked list through its dict entries (16
//! bytes a key) with a count and a head per slot. Here each slot holds a
//! [`Dict`] of its key names, taking the hash the keyspace already computed
//! ([`HashedKey`]), so nothing is hashed twice: a 24-byte entry and a
//! 4-byte bucket a key, with the tables' growing room 38 bytes a key as
//! measured over 100k and 1M keys, plus a copy of names longer than 15
//! bytes (shorter ones are inline, see [`Key`]); an empty slot allocates
//! nothing, and the slot table is 16384 × 48 bytes (768 KB). Storing each
//! key's 64-bit hash instead of its name would take about a third of
//! that, at the price of looking names up in the shards to list them.

// Wired in by the cluster issue's later steps (CLUSTER KEYSLOT,
// COUNTKEYSINSLOT, GETKEYSINSLOT, the slot checks); until then only the
// tests and the keyspace's bookkeeping use it.
#![cfg_attr(not(test), allow(dead_code))]

use parking_lot::Mutex;

use super::{Keyspace, Store};
use crate::types::dict::Dict;
use crate::types::key::{HashedKey, Key, KeyHasher};

/// The number of hash slots (Redis's `CLUSTER_SLOTS`).
pub(crate) const SLOTS: usize = 16384;

/// CRC16 as Redis's `crc16.c` computes it: the XMODEM variant (polynomial
/// 0x1021, initial value 0, no reflection, no final xor), whose check
/// value for "123456789" is 0x31C3, the test vector in `crc16.c`.
static CRC16: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// Redis's `crc16`.
pub(crate) fn crc16(bytes: &[u8]) -> u16 {
    CRC16.checksum(bytes)
}

/// The hash slot of `key` (Redis's `keyHashSlot`): the CRC16 of the key,
/// or of its hash tag, the bytes between its first `{` and the first `}`
/// after it, when there are any, so that `{user1000}.following` and
/// `{user1000}.followers` share a slot. An empty tag (`foo{}{bar}`) or an
/// unclosed one hashes the whole key.
pub(crate) fn key_hash_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key).unwrap_or(key)) & (SLOTS as u16 - 1)
}

/// The one slot every key matching glob `pattern` hashes to, or None when
/// they may lie in several (Redis's `patternHashSlot`): a wildcard or an
/// escape before a non-empty hash tag closes makes it unknowable; a tag
/// decides it; a pattern without wildcards is one key.
pub(crate) fn pattern_hash_slot(pattern: &[u8]) -> Option<u16> {
    // The index of the first `{`; `Empty` after a `{}`, which stops the
    // search for a tag.
    enum Tag {
        None,
        Open(usize),
        Empty,
    }
    let mut tag = Tag::None;
    for (i, &b) in pattern.iter().enumerate() {
        match b {
            b'*' | b'?' | b'[' | b'\\' => return None,
            b'{' if matches!(tag, Tag::None) => tag = Tag::Open(i),
            b'}' => match tag {
                Tag::Open(s) if i == s + 1 => tag = Tag::Empty,
                Tag::Open(s) => return Some(crc16(&pattern[s + 1..i]) & (SLOTS as u16 - 1)),
                _ => {}
            },
            _ => {}
        }
    }
    Some(crc16(pattern) & (SLOTS as u16 - 1))
}

/// The non-empty bytes between the first `{` and the next `}`.
pub(crate) fn hash_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let rest = &key[open + 1..];
    let close = rest.iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &rest[..close])
}

/// One slot's keys. The keyspace's hasher, so a key's hash is the one its
/// shard lookup made.
type SlotKeys = Dict<Key, (), KeyHasher>;

/// Database 0's keys by slot (see the module's header).
pub(crate) struct SlotIndex {
    slots: Box<[Mutex<SlotKeys>]>,
}

impl Default for SlotIndex {
    fn default() -> SlotIndex {
        SlotIndex {
            slots: (0..SLOTS).map(|_| Mutex::default()).collect(),
        }
    }
}

impl SlotIndex {
    fn slot(&self, slot: u16) -> Option<&Mutex<SlotKeys>> {
        self.slots.get(usize::from(slot))
    }

    /// Notes a key that entered database 0 (it was not there, so it is not
    /// here: added without a look-up). Out of line: the keyspace's call
    /// site stays a test of whether the index exists.
    #[inline(never)]
    pub(crate) fn insert(&self, key: HashedKey<'_>) {
        let slot = &self.slots[usize::from(key_hash_slot(key.bytes()))];
        slot.lock()
            .insert_new_hashed(key.bytes().into(), key.hash(), ());
    }

    /// Brings every slot's table to the size its keys call for (see
    /// [`crate::keyspace::Keyspace::resize_tables`]).
    pub(crate) fn resize_tables(&self) {
        for slot in &self.slots {
            slot.lock().resize_if_needed();
        }
    }

    /// Notes a key that left database 0.
    #[inline(never)]
    pub(crate) fn remove(&self, key: HashedKey<'_>) {
        let slot = &self.slots[usize::from(key_hash_slot(key.bytes()))];
        slot.lock().remove_hashed(key.bytes(), key.hash());
    }

    /// Forgets every key (database 0 was emptied).
    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            // Taken out first: the keys are freed outside the lock.
            drop(std::mem::take(&mut *slot.lock()));
        }
    }

    /// Exchanges the contents with `other`'s, slot by slot (an async load's
    /// data taking the live data's place).
    pub(crate) fn swap(&self, other: &SlotIndex) {
        for (mine, theirs) in self.slots.iter().zip(other.slots.iter()) {
            std::mem::swap(&mut *mine.lock(), &mut *theirs.lock());
        }
    }

    /// The number of keys in `slot` (0 for a slot out of range).
    pub(crate) fn count(&self, slot: u16) -> usize {
        self.slot(slot).map_or(0, |s| s.lock().len())
    }

    /// Up to `count` keys of `slot`, in no particular order.
    pub(crate) fn keys(&self, slot: u16, count: usize) -> Vec<Key> {
        let Some(slot) = self.slot(slot) else {
            return Vec::new();
        };
        let keys = slot.lock();
        keys.iter().take(count).map(|(k, _)| k.clone()).collect()
    }

    /// The number of keys indexed, over every slot (a walk of the slot
    /// table: for tests and checks, not for a command's path).
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().map(|s| s.lock().len()).sum()
    }
}

impl Store {
    /// Keeps database 0's keys indexed by hash slot from now on (cluster
    /// mode, set at startup before the store is shared). Keys already
    /// stored are indexed too.
    pub(crate) fn enable_slot_index(&mut self) {
        if self.slot_index.is_some() {
            return;
        }
        let index = SlotIndex::default();
        for shard in self.shards.iter_mut() {
            if let Some(db) = shard.get_mut().dbs.first() {
                for (key, _) in db.keys.iter() {
                    index.insert(HashedKey::new(key));
                }
            }
        }
        self.slot_index = Some(Box::new(index));
    }

    /// Database 0's keys by hash slot, in cluster mode (see the module's header).
    pub(crate) fn slot_index(&self) -> Option<&SlotIndex> {
        self.slot_index.as_deref()
    }

    /// The number of keys in hash slot `slot` (CLUSTER COUNTKEYSINSLOT):
    /// O(1), no shard locked. 0 outside cluster mode.
    pub(crate) fn count_in_slot(&self, slot: u16) -> usize {
        self.slot_index().map_or(0, |ix| ix.count(slot))
    }

    /// Up to `count` keys of hash slot `slot` (CLUSTER GETKEYSINSLOT):
    /// O(count), no shard locked. Empty outside cluster mode.
    pub(crate) fn keys_in_slot(&self, slot: u16, count: usize) -> Vec<Key> {
        self.slot_index()
            .map_or_else(Vec::new, |ix| ix.keys(slot, count))
    }
}

impl Keyspace<'_> {
    /// Database `db` was emptied in every shard (FLUSHDB, FLUSHALL, a
    /// load's flush): its keys leave the slot index. The view holds every
    /// shard.
    pub(crate) fn db_emptied(&mut self, db: usize) {
        if let Some(index) = self.store().slot_index()
            && db == 0
        {
            debug_assert_eq!(self.guards.shard_set(), self.store().all_shards());
            index.clear();
        }
    }

    /// Database `db`'s contents were replaced wholesale in every shard
    /// (SWAPDB, a failed sync putting the old data back): the slot index
    /// is rebuilt from what database 0 holds now. The view holds every
    /// shard.
    pub(crate) fn db_replaced(&mut self, db: usize) {
        let Some(index) = self.store().slot_index() else {
            return;
        };
        if db != 0 {
            return;
        }
        debug_assert_eq!(self.guards.shard_set(), self.store().all_shards());
        index.clear();
        for shard in self.guards.iter_mut() {
            for (key, _) in shard.dbs[0].keys.iter() {
                index.insert(HashedKey::new(key));
            }
        }
    }

    /// Deletes every key of hash slot `slot` from database 0, returning
    /// how many. `propagate`: as Redis 8.0's `delKeysInSlot` (a primary
    /// losing a slot to a newer claim): each key is its own execution
    /// unit, sent to the replicas and the AOF as DEL (UNLINK with
    /// `lazyfree-lazy-server-del`) and signalled as modified (WATCH,
    /// client-side caches), with no keyspace notification. Otherwise as
    /// `emptyData` (CLUSTER RESET of a replica): nothing propagated,
    /// notified or touched. Waiters on a deleted stream are looked at
    /// again either way. The view holds every shard (the keys of a slot
    /// live on any of them). Nothing outside cluster mode.
    pub(crate) fn delete_keys_in_slot(&mut self, slot: u16, propagate: bool) -> usize {
        let Some(index) = self.store().slot_index() else {
            return 0;
        };
        let keys = index.keys(slot, usize::MAX);
        let db = std::mem::replace(&mut self.db, 0);
        let lazy = self.env.config.lazyfree_lazy_server_del();
        let mut deleted = 0;
        for key in &keys {
            let key = HashedKey::new(key);
            if self.remove_raw(key).is_none() {
                continue;
            }
            deleted += 1;
            if propagate {
                self.modified(key);
                self.also_propagate(|| crate::argv![super::propagate::del_name(lazy), key.bytes()]);
                self.flush_propagated(false);
            }
        }
        self.db = db;
        deleted
    }
}

/// Checks shared by the tests of the index.
#[cfg(test)]
mod tests_support {
    use std::collections::BTreeMap;

    use super::{Key, Store, key_hash_slot};

    /// Database 0's keys by slot, from a walk of every shard.
    pub(super) fn scanned(store: &Store) -> BTreeMap<u16, Vec<Key>> {
        let mut by_slot: BTreeMap<u16, Vec<Key>> = BTreeMap::new();
        for i in 0..store.shard_count() {
            for (k, _) in store.lock_shard(i).dbs[0].keys.iter() {
                by_slot.entry(key_hash_slot(k)).or_default().push(k.clone());
            }
        }
        by_slot
    }

    /// The index says what a walk of database 0 finds: every slot's count
    /// and keys, and nothing more.
    pub(super) fn assert_in_step(store: &Store, step: &str) {
        // The key size histograms, kept by the same insertions and
        // removals (and by commands changing values in place).
        crate::keyspace::keysizes::assert_exact(store, step);
        let index = store.slot_index().expect("cluster mode");
        let by_slot = scanned(store);
        let total: usize = by_slot.values().map(Vec::len).sum();
        assert_eq!(index.len(), total, "{step}: keys indexed");
        for (slot, mut keys) in by_slot {
            assert_eq!(store.count_in_slot(slot), keys.len(), "{step}: slot {slot}");
            let mut listed = store.keys_in_slot(slot, usize::MAX);
            listed.sort();
            keys.sort();
            assert_eq!(listed, keys, "{step}: slot {slot}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_is_redis_crc16() {
        // crc16.c: "Output for "123456789" : 31C3".
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(crc16(b""), 0);
    }

    #[test]
    fn pattern_slots_as_redis_computes_them() {
        let slot = |k: &[u8]| Some(key_hash_slot(k));
        // A tag closed before any wildcard decides the slot.
        assert_eq!(pattern_hash_slot(b"w_{user1}*"), slot(b"{user1}"));
        assert_eq!(pattern_hash_slot(b"{user1}*->f"), slot(b"user1"));
        // A wildcard or escape first: any slot.
        assert_eq!(pattern_hash_slot(b"*_{user1}"), None);
        assert_eq!(pattern_hash_slot(b"w?{user1}"), None);
        assert_eq!(pattern_hash_slot(b"w[ab]{user1}"), None);
        assert_eq!(pattern_hash_slot(b"w\\{user1}"), None);
        assert_eq!(pattern_hash_slot(b"{user*}"), None);
        // No wildcard: one key, hashed whole (braces and all when the tag
        // is empty or unclosed; a later tag after `{}` does not count).
        assert_eq!(pattern_hash_slot(b"plain"), slot(b"plain"));
        assert_eq!(pattern_hash_slot(b"a{}{b}"), Some(crc16(b"a{}{b}") & 16383));
        assert_eq!(pattern_hash_slot(b"a{b"), slot(b"a{b"));
        assert_eq!(pattern_hash_slot(b"a{}*"), None);
    }

    fn same_slot(a: &[u8], b: &[u8]) -> bool {
        key_hash_slot(a) == key_hash_slot(b)
    }

    #[test]
    fn hash_tags_as_redis_documents_them() {
        // The cluster specification's examples.
        assert!(same_slot(b"{user1000}.following", b"{user1000}.followers"));
        assert_eq!(
            key_hash_slot(b"{user1000}.following"),
            key_hash_slot(b"user1000")
        );
        // An empty tag: the whole key.
        assert_eq!(key_hash_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 0x3FFF);
        // The tag ends at the first `}` after the first `{`.
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), key_hash_slot(b"{bar"));
        assert_eq!(key_hash_slot(b"foo{{bar}}zap"), crc16(b"{bar") & 0x3FFF);
        // Only the first tag counts.
        assert_eq!(key_hash_slot(b"foo{bar}{zap}"), key_hash_slot(b"bar"));
        // No `{`, no `}` after it, or `}` only before it: the whole key.
        for whole in [
            &b"foo"[..],
            b"foo{bar",
            b"foo}bar{",
            b"}{",
            b"{",
            b"}",
            b"{}",
        ] {
            assert_eq!(key_hash_slot(whole), crc16(whole) & 0x3FFF, "{whole:?}");
        }
        // A tag may be any bytes, braces aside.
        assert_eq!(key_hash_slot(b"a{\x00\xff}b"), key_hash_slot(b"\x00\xff"));
    }

    #[test]
    fn slots_as_redis_server_computes_them() {
        // CLUSTER KEYSLOT of redis-server 7.0.15.
        for (key, slot) in [
            (&b"foo"[..], 12182),
            (b"bar", 5061),
            (b"", 0),
            (b"123456789", 0x31C3 & 0x3FFF),
            (b"{user1000}.following", 3443),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"foo{bar}{zap}", 5061),
            (b"a{\x00\xff}b", 7920),
        ] {
            assert_eq!(key_hash_slot(key), slot, "{key:?}");
        }
    }

    /// A fixed stream of keys, the same on every run and in the script
    /// that asked redis-server for their slots: xorshift64*, seeded.
    struct Keys(u64);

    impl Keys {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        /// 0 to 24 bytes, a third of them braces, the rest any byte.
        fn key(&mut self) -> Vec<u8> {
            let len = self.next() % 25;
            (0..len)
                .map(|_| match self.next() % 6 {
                    0 => b'{',
                    1 => b'}',
                    _ => (self.next() >> 56) as u8,
                })
                .collect()
        }
    }

    #[test]
    fn slots_of_random_binary_keys_match_redis_server() {
        // 3000 keys from `Keys(0x5eed)`, folded as `h = h * 31 + slot`:
        // the fold of what redis-server 7.0.15 (cluster-enabled) answered
        // to CLUSTER KEYSLOT for each, and the count of keys whose slot
        // came from a hash tag.
        let mut keys = Keys(0x5eed);
        let (mut fold, mut tagged) = (0u64, 0);
        for _ in 0..3000 {
            let key = keys.key();
            tagged += usize::from(hash_tag(&key).is_some());
            fold = fold
                .wrapping_mul(31)
                .wrapping_add(u64::from(key_hash_slot(&key)));
        }
        assert_eq!((fold, tagged), (REDIS_FOLD, REDIS_TAGGED));
    }

    const REDIS_FOLD: u64 = 891_142_599_378_880_661;
    const REDIS_TAGGED: usize = 1251;

    fn index_of(keys: &[&[u8]]) -> SlotIndex {
        let ix = SlotIndex::default();
        for k in keys {
            ix.insert(HashedKey::new(k));
        }
        ix
    }

    #[test]
    fn the_index_counts_lists_and_forgets_a_slots_keys() {
        let ix = index_of(&[b"{a}1", b"{a}2", b"{a}3", b"b"]);
        let a = key_hash_slot(b"a");
        assert_eq!(ix.count(a), 3);
        assert_eq!(ix.count(key_hash_slot(b"b")), 1);
        assert_eq!(ix.len(), 4);
        let mut two = ix.keys(a, 2);
        assert_eq!(two.len(), 2);
        let mut all = ix.keys(a, usize::MAX);
        all.sort();
        assert_eq!(all, [&b"{a}1"[..], b"{a}2", b"{a}3"].map(Key::from));
        two.retain(|k| all.contains(k));
        assert_eq!(two.len(), 2);

        ix.remove(HashedKey::new(b"{a}2"));
        ix.remove(HashedKey::new(b"{a}absent"));
        assert_eq!(ix.count(a), 2);
        ix.clear();
        assert_eq!((ix.count(a), ix.len()), (0, 0));
    }

    #[test]
    fn slots_out_of_range_are_empty() {
        let ix = index_of(&[b"k"]);
        assert_eq!(ix.count(SLOTS as u16), 0);
        assert!(ix.keys(u16::MAX, 10).is_empty());
    }

    #[test]
    fn swapping_exchanges_contents() {
        let (a, b) = (index_of(&[b"x", b"y"]), index_of(&[b"z"]));
        a.swap(&b);
        assert_eq!((a.len(), b.len()), (1, 2));
        assert_eq!(a.keys(key_hash_slot(b"z"), 5), [Key::from(&b"z"[..])]);
    }

    // The index kept by the keyspace itself.

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::tests::Services;
    use super::super::{Entry, Str, Value};

    const T0: u64 = 1_000_000;

    fn view<'a>(s: &'a Services, store: &'a Store, db: usize) -> Keyspace<'a> {
        let env = s.env(store);
        Keyspace::new(env, store.lock(store.all_shards()), db, env.clock.now_ms())
    }

    fn string(v: &[u8]) -> Value {
        Value::Str(Str::new(v))
    }

    use super::tests_support::{assert_in_step, scanned};

    #[test]
    fn standalone_indexes_nothing() {
        let s = Services::new(T0);
        let store = Store::new(4, 2);
        let mut ks = view(&s, &store, 0);
        ks.set(b"{t}a", string(b"v"));
        ks.set(b"{t}b", string(b"v"));
        ks.remove(b"{t}b");
        assert_eq!(ks.delete_keys_in_slot(key_hash_slot(b"t"), false), 0);
        drop(ks);
        assert!(store.slot_index().is_none());
        assert_eq!(store.count_in_slot(key_hash_slot(b"t")), 0);
        assert!(store.keys_in_slot(key_hash_slot(b"t"), 10).is_empty());
        assert_eq!(scanned(&store).len(), 1, "the key itself is stored");
    }

    #[test]
    fn enabling_indexes_the_keys_already_stored_in_db_0_only() {
        let s = Services::new(T0);
        let mut store = Store::new(4, 2);
        let mut ks = view(&s, &store, 0);
        for i in 0..50 {
            ks.set(format!("k{i}").as_bytes(), string(b"v"));
        }
        ks.db = 1;
        ks.set(b"elsewhere", string(b"v"));
        drop(ks);
        store.enable_slot_index();
        assert_in_step(&store, "enabled");
        assert_eq!(store.count_in_slot(key_hash_slot(b"elsewhere")), 0);
    }

    #[test]
    fn deleting_a_slots_keys_deletes_them_alone_and_quietly() {
        let s = Services::new(T0);
        s.config
            .set_many(&[(b"notify-keyspace-events", b"KEA")])
            .unwrap();
        let mut store = Store::new(4, 2);
        store.enable_slot_index();
        let mut ks = view(&s, &store, 1);
        for i in 0..20 {
            ks.set(format!("{{t}}{i}").as_bytes(), string(b"v"));
        }
        ks.set(b"other", string(b"v"));
        // Database 1's `{t}` keys are not database 0's, and stay.
        ks.db = 0;
        for i in 0..100 {
            ks.set(format!("{{t}}{i}").as_bytes(), string(b"v"));
        }
        ks.set(b"other", string(b"v"));
        s.events.notified.lock().clear();
        let t = key_hash_slot(b"t");
        assert_eq!(ks.delete_keys_in_slot(t, false), 100);
        assert_eq!(ks.db, 0);
        ks.db = 1;
        assert!(ks.exists(b"{t}3"), "database 1 untouched");
        drop(ks);
        // Redis 7.0's `delKeysInSlot` is `dbDelete` alone.
        assert!(s.events.notified.lock().is_empty());
        assert!(s.events.fed.lock().is_empty());
        assert_eq!(store.count_in_slot(t), 0);
        assert_eq!(store.count_in_slot(key_hash_slot(b"other")), 1);
        assert_in_step(&store, "slot deleted");
    }

    /// Key names sharing a few slots (hash tags), some longer than the
    /// 15 bytes kept inline.
    fn name(rng: &mut StdRng) -> Vec<u8> {
        let i = rng.random_range(0..40);
        match i % 4 {
            0 => format!("k{i}").into_bytes(),
            1 => format!("{{tag{}}}k{i}", i % 3).into_bytes(),
            2 => format!("a-rather-long-key-name-{i}").into_bytes(),
            _ => format!("{{tag{}}}a-rather-long-key-name-{i}", i % 3).into_bytes(),
        }
    }

    #[test]
    fn a_random_history_keeps_the_index_in_step_with_database_0() {
        let s = Services::new(T0);
        let mut store = Store::new(4, 2);
        store.enable_slot_index();
        let mut rng = StdRng::seed_from_u64(0x51075);
        for step in 0..3000 {
            let (a, b) = (name(&mut rng), name(&mut rng));
            let db = if rng.random_ratio(1, 4) { 1 } else { 0 };
            let op = rng.random_range(0..100);
            // The view is dropped (its locks released) before the check.
            let mut ks = view(&s, &store, db);
            let what = match op {
                // Insertions and overwrites.
                0..=29 => {
                    ks.set(&a, string(b"v"));
                    "set"
                }
                30..=34 => {
                    ks.set_keep_ttl(&a, string(b"w"));
                    "set keeping the TTL"
                }
                35..=49 => {
                    ks.remove(&a);
                    "remove"
                }
                // RENAME's steps (commands::keys::do_rename).
                50..=57 => {
                    if let Some(e) = ks.remove(&a) {
                        ks.remove(&b);
                        ks.set_entry(&b, e);
                    }
                    "rename"
                }
                // MOVE to the other database, and COPY into it.
                58..=62 => {
                    let other = 1 - db;
                    if let Some(e) = ks.remove(&a) {
                        ks.db = other;
                        if !ks.exists(&a) {
                            ks.set_entry(&a, e);
                        }
                    }
                    "move"
                }
                63..=66 => {
                    if let Some(e) = ks.get(&a) {
                        let mut copy = Entry::new(e.value.clone());
                        copy.expire_at = e.expire_at;
                        ks.db = 1 - db;
                        ks.remove(&b);
                        ks.set_entry(&b, copy);
                    }
                    "copy"
                }
                // A TTL that passes, then a lookup: lazy expiry.
                67..=74 => {
                    ks.set_expire(&a, T0 + 10);
                    ks.now_ms = T0 + 10;
                    ks.exists(&a);
                    ks.now_ms = T0;
                    "expired"
                }
                75..=79 => {
                    ks.evict(&a);
                    "evicted"
                }
                80..=84 => {
                    let n = ks.delete_keys_in_slot(key_hash_slot(&a), true);
                    assert_eq!(store.count_in_slot(key_hash_slot(&a)), 0);
                    let _ = n;
                    "slot deleted"
                }
                // FLUSHDB's steps (commands::server::flush_db).
                85..=86 => {
                    for shard in ks.shards_mut() {
                        shard.cow_db(db);
                        shard.dbs[db].clear();
                        shard.schedule.clear_db(db);
                    }
                    ks.db_emptied(db);
                    "flushed"
                }
                // SWAPDB 0 1's steps (commands::server::swapdb).
                87..=89 => {
                    for shard in ks.shards_mut() {
                        shard.cow_db(0);
                        shard.cow_db(1);
                        shard.dbs.swap(0, 1);
                    }
                    ks.db_replaced(0);
                    ks.db_replaced(1);
                    "swapped databases"
                }
                // An async load's data taking the live data's place, the
                // loaded store indexed (as link.rs makes it) or not.
                _ => {
                    let mut loaded = Store::new(store.shard_count(), 2);
                    let indexed = rng.random_bool(0.5);
                    if indexed {
                        loaded.enable_slot_index();
                    }
                    let mut lk = view(&s, &loaded, 0);
                    for _ in 0..rng.random_range(0..30) {
                        lk.set(&name(&mut rng), string(b"loaded"));
                    }
                    drop(lk);
                    ks.swap_in(&loaded);
                    if indexed {
                        // The old data went to the loaded store.
                        assert_in_step(&loaded, "the old data, swapped out");
                    }
                    "swapped in"
                }
            };
            drop(ks);
            assert_in_step(&store, &format!("step {step}: {what}"));
        }
        assert!(!scanned(&store).is_empty(), "the history left keys");
    }
}

/// The index kept in step by the commands themselves, run as a client's
/// are (FLUSHDB, SWAPDB and the like empty or replace databases outside
/// the keyspace's own insert and remove).
#[cfg(test)]
mod through_commands {
    use std::sync::Arc;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::tests_support::assert_in_step;
    use crate::commands::services::Services;
    use crate::commands::session::Client;
    use crate::config::Config;
    use crate::protocol::args::OwnedArgs;
    use crate::protocol::reply::Reply;

    struct Server {
        shared: Arc<Services>,
        client: Client,
    }

    impl Server {
        fn cluster() -> Server {
            let mut services = Services::new(Config::defaults(), 4);
            services.store.enable_slot_index();
            let shared = Arc::new(services);
            let (handle, _pushes) =
                shared
                    .clients
                    .register("test:1".into(), "test:2".into(), -1, false, false);
            let client = Client::new(handle, false);
            Server { shared, client }
        }

        /// Runs one command; its reply, as RESP.
        fn run(&mut self, argv: &[&[u8]]) -> Vec<u8> {
            let args = OwnedArgs::from_slices(argv);
            let mut out = Reply::new();
            let ran = crate::execution::execute_now(
                &self.shared,
                &mut self.client,
                &mut out,
                args.args(),
            );
            // What is left (a blocking flush waits for the lazyfree
            // thread) runs to its end, as the connection would.
            if let Err(pending) = ran {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                rt.block_on(crate::execution::execute_rest(
                    &self.shared,
                    &mut self.client,
                    &mut out,
                    args.args(),
                    pending,
                ));
            }
            out.buf
        }

        fn flush_as_a_load_does(&self) {
            let env = self.shared.env();
            let guards = env.store.lock(env.store.all_shards());
            let mut ks = crate::keyspace::Keyspace::new(env, guards, 0, env.clock.now_ms());
            crate::persistence::flush_all(&*self.shared, &mut ks);
        }
    }

    fn name(rng: &mut StdRng) -> Vec<u8> {
        let i = rng.random_range(0..24);
        match i % 3 {
            0 => format!("k{i}").into_bytes(),
            1 => format!("{{tag{}}}k{i}", i % 2).into_bytes(),
            _ => format!("{{tag{}}}a-rather-long-key-name-{i}", i % 2).into_bytes(),
        }
    }

    #[test]
    fn commands_keep_the_index_in_step_with_database_0() {
        let mut server = Server::cluster();
        let mut rng = StdRng::seed_from_u64(0xc1a5);
        let mut written = 0;
        for step in 0..2500 {
            let (a, b) = (name(&mut rng), name(&mut rng));
            let db: &[u8] = if rng.random_ratio(1, 4) { b"1" } else { b"0" };
            let argv: Vec<&[u8]> = match rng.random_range(0..33) {
                0..=5 => vec![b"SET", &a, b"v"],
                6 => vec![b"SELECT", db],
                7 => vec![b"DEL", &a, &b],
                8 => vec![b"UNLINK", &a],
                9 => vec![b"GETDEL", &a],
                10 => vec![b"RENAME", &a, &b],
                11 => vec![b"RENAMENX", &a, &b],
                12 => vec![b"MOVE", &a, db],
                13 => vec![b"COPY", &a, &b, b"DB", db, b"REPLACE"],
                14 => vec![b"PEXPIREAT", &a, b"1"],
                15 => vec![b"EXPIRE", &a, b"100"],
                16 => vec![b"RPUSH", &a, b"x", b"y"],
                17 => vec![b"LPOP", &a],
                18 => vec![b"LMOVE", &a, &b, b"LEFT", b"RIGHT"],
                19 => vec![b"SADD", &a, b"m"],
                20 => vec![b"SPOP", &a],
                21 => vec![b"SMOVE", &a, &b, b"m"],
                22 => vec![b"HSET", &a, b"f", b"v"],
                23 => vec![b"HDEL", &a, b"f"],
                24 => vec![b"ZADD", &a, b"1", b"m"],
                25 => vec![b"ZPOPMIN", &a],
                26 => vec![b"SUNIONSTORE", &a, &b],
                27 => vec![b"SET", &a, b"v", b"PX", b"100000"],
                28 => vec![b"SWAPDB", b"0", b"1"],
                29 => vec![b"FLUSHDB"],
                30 => vec![b"FLUSHALL"],
                31 => vec![b"EXEC"],
                // No command: the flush before a load (DEBUG RELOAD, a
                // replica's full sync).
                _ => vec![],
            };
            let reply = if argv.is_empty() {
                server.flush_as_a_load_does();
                Vec::new()
            } else {
                server.run(&argv)
            };
            written += usize::from(reply.starts_with(b"+OK") || reply.starts_with(b":1"));
            let what = format!(
                "step {step}: {:?}",
                argv.iter()
                    .map(|a| String::from_utf8_lossy(a))
                    .collect::<Vec<_>>()
            );
            assert_in_step(&server.shared.store, &what);
        }
        assert!(written > 500, "the commands did something: {written}");
    }
}
