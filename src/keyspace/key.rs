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
//! It also owns [`Key`], a key's stored name: names of up to 15 bytes sit
//! inline in its 16 bytes, so the common short key costs no allocation.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::LazyLock;

use compact_bytes::CompactBytesSlice;
use foldhash::fast::{FixedState, FoldHasher};

use crate::types::dict::hash_key;

/// The per-process seed of every key name's hash.
static SEED: LazyLock<FixedState> = LazyLock::new(|| FixedState::with_seed(rand::random()));

/// The hasher of key names, shared by every shard's dicts.
#[derive(Clone, Copy, Default)]
pub struct KeyHasher;

impl BuildHasher for KeyHasher {
    type Hasher = FoldHasher<'static>;

    fn build_hasher(&self) -> FoldHasher<'static> {
        SEED.build_hasher()
    }
}

/// A key's stored name, as the keyspace's dicts and every per-key index
/// (watches, blocked clients, tracking, window schedules) own it.
///
/// Why not `Box<[u8]>`: the box is 16 bytes in the entry *and* an
/// allocation of its own, 8 to 16 bytes more for a typical short name.
/// `compact_bytes`'s 16-byte slice keeps names of up to 15 bytes inline
/// (`z:12345`, `user:1234`, `rq:job:42`) and allocates only longer ones, at
/// exactly their length, as the box did. It behaves as the bytes it holds:
/// equality, order and hash are the slice's, so maps keyed by `Key` are
/// looked up with a `&[u8]`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Key(CompactBytesSlice);

impl Deref for Key {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl AsRef<[u8]> for Key {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl Borrow<[u8]> for Key {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.0.as_slice()
    }
}

// By hand rather than derived: `Borrow<[u8]>` requires the slice's hash and
// order, whatever the wrapped type's own impls do.
impl Hash for Key {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state)
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.0.as_slice().cmp(other.0.as_slice())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_slice(), f)
    }
}

impl From<&[u8]> for Key {
    #[inline]
    fn from(bytes: &[u8]) -> Key {
        Key(CompactBytesSlice::new(bytes))
    }
}

impl<const N: usize> From<&[u8; N]> for Key {
    fn from(bytes: &[u8; N]) -> Key {
        Key(CompactBytesSlice::new(bytes))
    }
}

impl From<&Vec<u8>> for Key {
    fn from(bytes: &Vec<u8>) -> Key {
        Key(CompactBytesSlice::new(bytes))
    }
}

impl From<Vec<u8>> for Key {
    /// Copies a short name inline; a long one keeps the vector's buffer when
    /// it is already exactly sized.
    fn from(bytes: Vec<u8>) -> Key {
        if bytes.len() <= CompactBytesSlice::MAX_INLINE {
            Key(CompactBytesSlice::new(&bytes))
        } else {
            Key(CompactBytesSlice::from(bytes.into_boxed_slice()))
        }
    }
}

impl From<Box<[u8]>> for Key {
    fn from(bytes: Box<[u8]>) -> Key {
        if bytes.len() <= CompactBytesSlice::MAX_INLINE {
            Key(CompactBytesSlice::new(&bytes))
        } else {
            Key(CompactBytesSlice::from(bytes))
        }
    }
}

impl Key {
    /// The name as an owned vector.
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.as_slice().to_vec()
    }
}

/// A key name with its [`KeyHasher`] hash. Only [`HashedKey::new`] makes
/// one, so the hash always belongs to the name; the name stays borrowed
/// (unchanged) for as long as the pair lives.
#[derive(Clone, Copy, Debug)]
pub struct HashedKey<'k> {
    bytes: &'k [u8],
    hash: u64,
}

impl<'k> HashedKey<'k> {
    pub fn new(bytes: &'k [u8]) -> HashedKey<'k> {
        HashedKey {
            bytes,
            hash: hash_key(&KeyHasher, bytes),
        }
    }

    pub fn bytes(&self) -> &'k [u8] {
        self.bytes
    }

    /// The full hash, as the shard's dicts take it (`Dict::get_hashed`).
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The shard this key lives on, of `shards` (at most
    /// [`MAX_SHARDS`](super::MAX_SHARDS)): the high half of the hash scaled
    /// to the count (a multiply, not a division).
    pub fn shard(&self, shards: usize) -> usize {
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
    fn a_key_is_its_bytes_inline_or_not() {
        use std::collections::{BTreeSet, HashMap};
        // Around the 15-byte inline limit, and empty: every constructor
        // yields the same key, equal, ordered and hashed as its bytes.
        let names: Vec<Vec<u8>> = [0usize, 1, 7, 14, 15, 16, 17, 64, 1000]
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let mut by_bytes = HashMap::new();
        let mut ordered = BTreeSet::new();
        for (i, name) in names.iter().enumerate() {
            let a = Key::from(name.as_slice());
            let b = Key::from(name.clone());
            let c = Key::from(name.clone().into_boxed_slice());
            assert!(a == b && b == c, "{name:?}");
            assert_eq!(&*a, name.as_slice());
            assert_eq!(a.to_vec(), *name);
            assert_eq!(a.clone(), a);
            by_bytes.insert(c, i);
            ordered.insert(b);
        }
        for (i, name) in names.iter().enumerate() {
            assert_eq!(by_bytes.get(name.as_slice()), Some(&i));
        }
        let mut sorted = names.clone();
        sorted.sort();
        let walked: Vec<Vec<u8>> = ordered.iter().map(Key::to_vec).collect();
        assert_eq!(walked, sorted);
        assert_eq!(std::mem::size_of::<Key>(), 16);
    }

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
