//! Key names hashed once.
//!
//! One hash of a key's name decides both where it lives — its shard — and
//! where it sits in that shard's dicts. Every shard's dicts therefore share
//! one hasher ([`KeyHasher`], randomly seeded per process: names come from
//! clients, so a guessable hash would let them flood one bucket), and a
//! [`HashedKey`] carries a name with its hash from the command's planning
//! (which shards to lock) through the expiry check to the lookup. The shard
//! takes the hash's high half and the dicts its low half, so the keys of one
//! shard still spread over all of its buckets.
//!
//! A key's stored name is a [`Key`]: [`SmallBytes`], so names of up to 15
//! bytes sit inline in the entry and cost no allocation.

use std::hash::BuildHasher;
use std::sync::LazyLock;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use foldhash::fast::{FixedState, FoldHasher};

use crate::types::dict::{Resizing, hash_key};
use crate::types::small_bytes::SmallBytes;

/// A key's stored name, as the keyspace's dicts and every per-key index
/// (watches, blocked clients, tracking, window schedules) own it.
pub(crate) type Key = SmallBytes;

/// The per-process seed of every key name's hash.
static SEED: LazyLock<FixedState> = LazyLock::new(|| FixedState::with_seed(rand::random()));

/// The hasher of key names, shared by every shard's dicts.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyHasher;

/// `DEBUG DICT-RESIZING`: whether the keyspace's tables (keys, expires,
/// a cluster node's slot indexes) may resize (Redis's `dict_resizing`).
static RESIZING: AtomicBool = AtomicBool::new(true);

/// `DEBUG DICT-RESIZING 0|1` (process-wide, as Redis's flag); the caller
/// brings the held tables to size when they are let go.
pub(crate) fn set_keyspace_resizing(on: bool) {
    RESIZING.store(on, Relaxed);
}

impl Resizing for KeyHasher {
    fn resize_allowed(&self) -> bool {
        RESIZING.load(Relaxed)
    }
}

impl BuildHasher for KeyHasher {
    type Hasher = FoldHasher<'static>;

    fn build_hasher(&self) -> FoldHasher<'static> {
        SEED.build_hasher()
    }
}

/// A key name with its [`KeyHasher`] hash. Only [`HashedKey::new`] makes
/// one, so the hash always belongs to the name; the name stays borrowed
/// (unchanged) for as long as the pair lives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HashedKey<'k> {
    bytes: &'k [u8],
    hash: u64,
}

impl<'k> HashedKey<'k> {
    pub(crate) fn new(bytes: &'k [u8]) -> HashedKey<'k> {
        HashedKey {
            bytes,
            hash: hash_key(&KeyHasher, bytes),
        }
    }

    pub(crate) fn bytes(&self) -> &'k [u8] {
        self.bytes
    }

    /// The full hash, as the shard's dicts take it (`Dict::get_hashed`).
    pub(crate) fn hash(&self) -> u64 {
        self.hash
    }

    /// The shard this key lives on, of `shards` (at most
    /// [`MAX_SHARDS`](crate::config::MAX_SHARDS)): the high half of the hash scaled
    /// to the count (a multiply, not a division).
    pub(crate) fn shard(&self, shards: usize) -> usize {
        (((self.hash >> 32) * shards as u64) >> 32) as usize
    }
}

impl<'k> From<&'k [u8]> for HashedKey<'k> {
    fn from(bytes: &'k [u8]) -> HashedKey<'k> {
        HashedKey::new(bytes)
    }
}

impl<'k, const N: usize> From<&'k [u8; N]> for HashedKey<'k> {
    fn from(bytes: &'k [u8; N]) -> HashedKey<'k> {
        HashedKey::new(bytes)
    }
}

impl<'k> From<&'k Vec<u8>> for HashedKey<'k> {
    fn from(bytes: &'k Vec<u8>) -> HashedKey<'k> {
        HashedKey::new(bytes)
    }
}

impl<'k> From<&'k Box<[u8]>> for HashedKey<'k> {
    fn from(bytes: &'k Box<[u8]>) -> HashedKey<'k> {
        HashedKey::new(bytes)
    }
}

impl<'k> From<&'k Key> for HashedKey<'k> {
    fn from(key: &'k Key) -> HashedKey<'k> {
        HashedKey::new(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_the_dicts_and_the_shard_is_in_range() {
        let mut d = crate::types::dict::Dict::<Box<[u8]>, u32, KeyHasher>::default();
        for i in 0..1000u32 {
            let name = format!("key:{i}");
            let k = HashedKey::new(name.as_bytes());
            assert!(k.shard(16) < 16 && k.shard(1) == 0 && k.shard(128) < 128);
            d.insert_hashed(name.as_bytes().into(), k.hash(), i);
            assert_eq!(d.get(name.as_bytes()), Some(&i));
            assert_eq!(d.get_hashed(name.as_bytes(), k.hash()), Some(&i));
        }
    }

    #[test]
    fn one_shards_keys_reach_all_of_its_buckets() {
        // The shard uses the hash's high half and the buckets its low half.
        // Were the shard taken from the low bits too (`hash % 16`), shard
        // 0's ~4000 keys would all fall in the 4 of these 64 classes that
        // are multiples of 16.
        let mut classes = [0u32; 64];
        for i in 0..64_000u32 {
            let name = format!("k{i}");
            let k = HashedKey::new(name.as_bytes());
            if k.shard(16) == 0 {
                classes[(k.hash() & 63) as usize] += 1;
            }
        }
        assert!(classes.iter().all(|&c| c > 0), "{classes:?}");
    }
}
