//! `Dict`: the hash table behind each shard's keyspace and behind set and hash
//! values. It exists because `std::collections::HashMap` cannot provide two
//! things Redis clients rely on. The first is SCAN's guarantee: the cursor is
//! a plain integer the server keeps no state for, yet every element present
//! for the whole scan is returned at least once, even if the table grows or
//! shrinks between calls. The second is picking a random element in O(1), for
//! RANDOMKEY, SRANDMEMBER and active-expiry sampling.
//!
//! SCAN works as in Redis's `dict.c`: the bucket of a key is `hash & mask` in
//! a power-of-two table, and the cursor walks bucket indexes in *reverse-bit*
//! order (increment the bit-reversed cursor). When the table doubles, bucket
//! `b` splits into `b` and `b | old_size`; when it halves, they merge back.
//! Both are later in reverse-bit order than any bucket already visited, so no
//! bucket whose keys were already returned is revisited with new ones, and no
//! unvisited key is skipped; at worst some keys are returned twice (on a
//! shrink). Unlike Redis there is no incremental rehash: tables here are small
//! (one per shard), so a resize rebuilds the index at once, which is still
//! amortised O(1) per insert/remove.
//!
//! Layout: entries live densely in one `Vec`, and buckets hold `u32` indexes
//! of chain heads, with chains linked through a `u32` in each entry. Compared
//! with one `Box` per node this saves the allocator header and the 8-byte
//! pointer per entry, lets `iter`/`retain` run over contiguous memory, and
//! makes `random` exactly uniform in O(1) (Redis has to probe random buckets
//! and then walk a chain, which is neither). Removal swaps the last entry
//! into the hole and repoints the one link that referred to it. Each entry
//! also stores the low 32 bits of its hash: it fits in the padding next to
//! the link for 8-byte-aligned keys, makes a resize never rehash a key, and
//! lets a probe skip key comparisons on hash mismatch.
//!
//! Keys come from untrusted clients, so the hasher is seeded randomly per
//! `Dict` (foldhash) to resist hash flooding. A dict may instead take a
//! hasher shared by many (type parameter `S`): the keyspace's dicts do, so a
//! key hashed once ([`hash_key`]) picks its shard and is looked up with the
//! `*_hashed` methods without being hashed again.

use std::fmt;
use std::hash::{BuildHasher, Hasher};

use foldhash::fast::RandomState;
use rand::Rng;

use pages::Pages;

mod pages;

/// Whether a dict's table may be resized now (Redis's `dictResizeAllowed`).
/// Every dict may, except the keyspace's while `DEBUG DICT-RESIZING 0`
/// holds them (see [`crate::types::key::KeyHasher`]); a held table keeps
/// its size as it fills or empties (its chains grow), and
/// [`Dict::resize_if_needed`] brings it to its size once let go.
pub(crate) trait Resizing {
    fn resize_allowed(&self) -> bool {
        true
    }
}

impl Resizing for RandomState {}

/// End of a chain / empty bucket.
const NIL: u32 = u32::MAX;
/// Smallest non-empty table, as Redis's `DICT_HT_INITIAL_SIZE`.
const MIN_BUCKETS: usize = 4;
/// Entries are addressed by `u32` and `NIL` is reserved. Reaching this needs
/// roughly 100 GB for the table alone, so it is treated like allocation
/// failure rather than a recoverable error.
const MAX_LEN: usize = NIL as usize;

/// In declaration order (`repr(C)`): a probe reads `hash`, then `next` or
/// the key, so they share the entry's first cache line. Left to the
/// compiler, they went after a keyspace value, 128 bytes in, and a lookup in
/// a large keyspace missed the cache on two lines of each entry it passed.
#[derive(Clone)]
#[repr(C)]
struct Entry<K, V> {
    /// Low 32 bits of the key's hash; bucket indexes never need more since
    /// the table never has more than `MAX_LEN` entries.
    hash: u32,
    /// Next entry in the same bucket, or `NIL`.
    next: u32,
    key: K,
    value: V,
}

/// A hash table keyed by byte strings with Redis-style `scan` and `random`.
#[derive(Clone)]
pub(crate) struct Dict<K, V, S = RandomState> {
    entries: Pages<Entry<K, V>>,
    /// Chain heads. Empty (no allocation) until the first insert, otherwise a
    /// power of two >= `MIN_BUCKETS` with `entries.len() <= buckets.len()`.
    buckets: Box<[u32]>,
    hasher: S,
}

/// `key`'s hash under `hasher`, as a [`Dict`] using that hasher computes it:
/// what its `*_hashed` methods take.
#[inline]
pub(crate) fn hash_key(hasher: &impl BuildHasher, key: &[u8]) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(key);
    h.finish()
}

impl<K: AsRef<[u8]>, V, S: BuildHasher + Resizing + Default> Default for Dict<K, V, S> {
    fn default() -> Self {
        Self::with_hasher(S::default())
    }
}

impl<K: AsRef<[u8]> + fmt::Debug, V: fmt::Debug, S: BuildHasher + Resizing> fmt::Debug
    for Dict<K, V, S>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Chain lengths counted one by one in [`DictStats`], the last counting
/// every longer one (Redis's `DICT_STATS_VECTLEN`).
const STATS_VECTLEN: usize = 50;

/// One table's figures, or several tables' summed (Redis's `dictStats`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DictStats {
    /// Buckets.
    pub(crate) size: u64,
    /// Entries.
    pub(crate) used: u64,
    /// Buckets holding a chain.
    pub(crate) slots: u64,
    pub(crate) max_chain: u64,
    pub(crate) total_chain: u64,
    /// Buckets by chain length.
    pub(crate) chains: [u64; STATS_VECTLEN],
}

impl Default for DictStats {
    fn default() -> Self {
        DictStats {
            size: 0,
            used: 0,
            slots: 0,
            max_chain: 0,
            total_chain: 0,
            chains: [0; STATS_VECTLEN],
        }
    }
}

impl DictStats {
    /// Adds another table's figures (`dictCombineStats`).
    pub(crate) fn combine(&mut self, other: &DictStats) {
        self.size += other.size;
        self.used += other.used;
        self.slots += other.slots;
        self.max_chain = self.max_chain.max(other.max_chain);
        self.total_chain += other.total_chain;
        for (a, b) in self.chains.iter_mut().zip(other.chains.iter()) {
            *a += b;
        }
    }

    /// Redis's `dictGetStatsMsg` text for the main table (zwindow's tables
    /// resize at once: there is never a rehashing target).
    pub(crate) fn message(&self, full: bool) -> String {
        use std::fmt::Write;
        let mut out = String::from("Hash table 0 stats (main hash table):\n");
        if self.used == 0 {
            out.push_str("No stats available for empty dictionaries\n");
            return out;
        }
        let _ = write!(
            out,
            " table size: {}\n number of elements: {}\n",
            self.size, self.used
        );
        if full {
            let slots = self.slots.max(1) as f32;
            let _ = write!(
                out,
                " different slots: {}\n max chain length: {}\n avg chain length (counted): {:.2}\n avg chain length (computed): {:.2}\n Chain length distribution:\n",
                self.slots,
                self.max_chain,
                self.total_chain as f32 / slots,
                self.used as f32 / slots,
            );
            for (len, &n) in self.chains[..STATS_VECTLEN - 1].iter().enumerate() {
                if n != 0 {
                    let pct = n as f32 / self.size as f32 * 100.0;
                    let _ = writeln!(out, "   {len}: {n} ({pct:.2}%)");
                }
            }
        }
        out
    }
}

fn bucket_count_for(len: usize) -> usize {
    // On overflow `len` cannot be allocated anyway; saturating keeps this
    // function itself panic-free.
    len.checked_next_power_of_two()
        .unwrap_or(1 << (usize::BITS - 1))
        .max(MIN_BUCKETS)
}

impl<K: AsRef<[u8]>, V> Dict<K, V> {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Self::with_hasher(RandomState::default())
    }

    /// Room for `n` entries without resizing (see
    /// [`with_capacity_and_hasher`](Self::with_capacity_and_hasher)).
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self::with_capacity_and_hasher(n, RandomState::default())
    }
}

impl<K: AsRef<[u8]>, V, S: BuildHasher + Resizing> Dict<K, V, S> {
    fn with_hasher(hasher: S) -> Self {
        Dict {
            entries: Pages::default(),
            buckets: Box::new([]),
            hasher,
        }
    }

    /// Room for `n` entries without resizing. Like Redis, the table may still
    /// shrink once entries are removed. Allocates up front like
    /// `Vec::with_capacity`, so never pass an unvalidated client-supplied size.
    pub(crate) fn with_capacity_and_hasher(n: usize, hasher: S) -> Self {
        let mut d = Self::with_hasher(hasher);
        if n > 0 {
            let n = n.min(MAX_LEN);
            d.entries.reserve_exact(n);
            d.rebuild(bucket_count_for(n));
        }
        d
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The table's figures as Redis's `dictGetStatsHt` gathers them (DEBUG
    /// HTSTATS); the chain figures only when `full` (a walk of the table).
    pub(crate) fn stats(&self, full: bool) -> DictStats {
        let mut st = DictStats {
            size: self.buckets.len() as u64,
            used: self.len() as u64,
            ..Default::default()
        };
        if !full {
            return st;
        }
        for &head in self.buckets.iter() {
            let mut len = 0u64;
            let mut i = head;
            while i != NIL {
                len += 1;
                i = self.entries[i as usize].next;
            }
            st.chains[(len as usize).min(STATS_VECTLEN - 1)] += 1;
            if len > 0 {
                st.slots += 1;
                st.max_chain = st.max_chain.max(len);
                st.total_chain += len;
            }
        }
        st
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn hash(&self, key: &[u8]) -> u32 {
        // foldhash's low bits are well mixed, and those are what `mask` uses.
        hash_key(&self.hasher, key) as u32
    }

    /// The stored form of a precomputed hash, which must be `key`'s under
    /// this dict's hasher ([`hash_key`]); a wrong one would make the key
    /// unfindable, so debug builds check it.
    fn prehashed(&self, key: &[u8], hash: u64) -> u32 {
        debug_assert_eq!(hash as u32, self.hash(key), "hash of another hasher");
        hash as u32
    }

    fn bucket_of(&self, hash: u32) -> usize {
        // Only called with a non-empty bucket table.
        hash as usize & (self.buckets.len() - 1)
    }

    /// Index of `key`'s entry and of its predecessor in the chain (`NIL` if
    /// it is the chain head).
    fn find(&self, key: &[u8], hash: u32) -> Option<(usize, u32)> {
        if self.buckets.is_empty() {
            return None;
        }
        let mut prev = NIL;
        let mut i = self.buckets[self.bucket_of(hash)];
        while i != NIL {
            let e = &self.entries[i as usize];
            if e.hash == hash && e.key.as_ref() == key {
                return Some((i as usize, prev));
            }
            prev = i;
            i = e.next;
        }
        None
    }

    pub(crate) fn get(&self, key: &[u8]) -> Option<&V> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub(crate) fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let (i, _) = self.find(key, self.hash(key))?;
        Some(&mut self.entries[i].value)
    }

    /// [`get`](Self::get) with `key`'s hash already computed ([`hash_key`]).
    pub(crate) fn get_hashed(&self, key: &[u8], hash: u64) -> Option<&V> {
        let (i, _) = self.find(key, self.prehashed(key, hash))?;
        Some(&self.entries[i].value)
    }

    /// [`get_mut`](Self::get_mut) with `key`'s hash already computed.
    pub(crate) fn get_mut_hashed(&mut self, key: &[u8], hash: u64) -> Option<&mut V> {
        let (i, _) = self.find(key, self.prehashed(key, hash))?;
        Some(&mut self.entries[i].value)
    }

    /// [`contains_key`](Self::contains_key) with `key`'s hash already computed.
    pub(crate) fn contains_key_hashed(&self, key: &[u8], hash: u64) -> bool {
        self.find(key, self.prehashed(key, hash)).is_some()
    }

    pub(crate) fn get_key_value(&self, key: &[u8]) -> Option<(&K, &V)> {
        let (i, _) = self.find(key, self.hash(key))?;
        let e = &self.entries[i];
        Some((&e.key, &e.value))
    }

    pub(crate) fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key, self.hash(key)).is_some()
    }

    /// Inserts or replaces the value; on replace the existing key is kept
    /// (the caller's `key` is dropped) and the old value returned.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let hash = self.hash(key.as_ref());
        self.insert_at(hash, key, value)
    }

    /// [`insert`](Self::insert) with the key's hash already computed.
    pub(crate) fn insert_hashed(&mut self, key: K, hash: u64, value: V) -> Option<V> {
        let hash = self.prehashed(key.as_ref(), hash);
        self.insert_at(hash, key, value)
    }

    /// Adds `key`, which the caller knows is absent (a dict that mirrors
    /// another's keys, told of each new one), without looking for it
    /// first: no walk of its bucket's chain.
    pub(crate) fn insert_new_hashed(&mut self, key: K, hash: u64, value: V) {
        let hash = self.prehashed(key.as_ref(), hash);
        debug_assert!(self.find(key.as_ref(), hash).is_none(), "Dict: key present");
        self.push(hash, key, value);
    }

    fn insert_at(&mut self, hash: u32, key: K, value: V) -> Option<V> {
        match self.find(key.as_ref(), hash) {
            Some((i, _)) => Some(std::mem::replace(&mut self.entries[i].value, value)),
            None => {
                self.push(hash, key, value);
                None
            }
        }
    }

    /// Returns the value for `key`, inserting `make_value()` under
    /// `make_key()` if missing; the key is only built (and allocated) on a
    /// miss. `make_key()` must return a key equal to `key`.
    #[cfg(test)]
    pub(crate) fn get_or_insert_with(
        &mut self,
        key: &[u8],
        make_key: impl FnOnce() -> K,
        make_value: impl FnOnce() -> V,
    ) -> (&mut V, bool) {
        let hash = self.hash(key);
        let (i, inserted) = match self.find(key, hash) {
            Some((i, _)) => (i, false),
            None => {
                let k = make_key();
                debug_assert!(k.as_ref() == key, "make_key built a different key");
                (self.push(hash, k, make_value()), true)
            }
        };
        (&mut self.entries[i].value, inserted)
    }

    /// Appends a key known to be absent and returns its index.
    fn push(&mut self, hash: u32, key: K, value: V) -> usize {
        let i = self.entries.len();
        assert!(i < MAX_LEN, "Dict: more than {MAX_LEN} entries");
        if i >= self.buckets.len() && (self.buckets.is_empty() || self.hasher.resize_allowed()) {
            // Load factor 1 like Redis; doubling keeps this amortised O(1).
            self.rebuild(bucket_count_for(i + 1));
        }
        let b = self.bucket_of(hash);
        self.entries.push(Entry {
            key,
            value,
            hash,
            next: self.buckets[b],
        });
        self.buckets[b] = i as u32;
        i
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<(K, V)> {
        self.remove_at(key, self.hash(key))
    }

    /// [`remove`](Self::remove) with `key`'s hash already computed.
    pub(crate) fn remove_hashed(&mut self, key: &[u8], hash: u64) -> Option<(K, V)> {
        self.remove_at(key, self.prehashed(key, hash))
    }

    fn remove_at(&mut self, key: &[u8], hash: u32) -> Option<(K, V)> {
        let (i, prev) = self.find(key, hash)?;
        let next = self.entries[i].next;
        if prev == NIL {
            let b = self.bucket_of(hash);
            self.buckets[b] = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        let last = self.entries.len() - 1;
        if i != last {
            // swap_remove moves `last` into slot `i`; exactly one link (a
            // bucket head or a predecessor's `next`) points at it.
            self.repoint(last as u32, i as u32);
        }
        let e = self.entries.swap_remove(i);
        self.shrink_if_sparse();
        Some((e.key, e.value))
    }

    fn repoint(&mut self, from: u32, to: u32) {
        let b = self.bucket_of(self.entries[from as usize].hash);
        if self.buckets[b] == from {
            self.buckets[b] = to;
            return;
        }
        let mut j = self.buckets[b];
        while j != NIL {
            let e = &mut self.entries[j as usize];
            if e.next == from {
                e.next = to;
                return;
            }
            j = e.next;
        }
        debug_assert!(false, "entry {from} not linked from its bucket");
    }

    /// Shrinks when under 1/8 full, like Redis's `htNeedsResize`; the gap
    /// between this and the grow threshold keeps resizes amortised O(1).
    fn shrink_if_sparse(&mut self) {
        let len = self.entries.len();
        if self.buckets.len() > MIN_BUCKETS
            && len * 8 < self.buckets.len()
            && self.hasher.resize_allowed()
        {
            self.rebuild(bucket_count_for(len));
        }
        // After a mass delete (e.g. expiry of most of a shard) the memory
        // should come back: emptied pages already went; a lone page much
        // larger than its entries shrinks.
        self.entries.shrink();
    }

    /// Brings a table held at its size (see [`Resizing`]) to the size its
    /// entries call for: grown to a load factor of at most 1, or shrunk
    /// if under 1/8 full (Redis's cron `tryResizeHashTables`).
    pub(crate) fn resize_if_needed(&mut self) {
        if !self.hasher.resize_allowed() {
            return;
        }
        let len = self.entries.len();
        if len > self.buckets.len() {
            self.rebuild(bucket_count_for(len));
        } else {
            self.shrink_if_sparse();
        }
    }

    /// Re-threads every entry into a fresh table of `n` buckets (a power of
    /// two). Uses the stored hashes, so no key is rehashed.
    fn rebuild(&mut self, n: usize) {
        let mut buckets = vec![NIL; n].into_boxed_slice();
        let mask = n - 1;
        for (i, e) in self.entries.iter_mut().enumerate() {
            let b = e.hash as usize & mask;
            e.next = buckets[b];
            buckets[b] = i as u32;
        }
        self.buckets = buckets;
    }

    /// Removes everything and frees the table (FLUSHDB should return memory).
    pub(crate) fn clear(&mut self) {
        self.entries = Pages::default();
        self.buckets = Box::new([]);
    }

    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = (&K, &V)> {
        self.entries.iter().map(|e| (&e.key, &e.value))
    }

    pub(crate) fn iter_mut(&mut self) -> impl ExactSizeIterator<Item = (&K, &mut V)> {
        self.entries.iter_mut().map(|e| (&e.key, &mut e.value))
    }

    /// Removes and yields every entry; the dict is empty afterwards even if
    /// the iterator is dropped early.
    #[cfg(test)]
    pub(crate) fn drain(&mut self) -> impl ExactSizeIterator<Item = (K, V)> {
        self.buckets = Box::new([]);
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|e| (e.key, e.value))
    }

    /// Keeps only the entries for which `f` returns true.
    #[cfg(test)]
    pub(crate) fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        // Compacting the entries invalidates every index, so the buckets are
        // rebuilt afterwards, in a guard so that a panicking `f` cannot leave
        // links pointing past the end.
        struct Reindex<'a, K: AsRef<[u8]>, V, S: BuildHasher + Resizing> {
            dict: &'a mut Dict<K, V, S>,
            before: usize,
        }
        impl<K: AsRef<[u8]>, V, S: BuildHasher + Resizing> Drop for Reindex<'_, K, V, S> {
            fn drop(&mut self) {
                let d = &mut *self.dict;
                let len = d.entries.len();
                if len == self.before {
                    return;
                }
                let mut n = d.buckets.len();
                if n > MIN_BUCKETS && len * 8 < n {
                    n = bucket_count_for(len);
                }
                d.rebuild(n);
                d.shrink_if_sparse();
            }
        }
        let before = self.entries.len();
        let guard = Reindex { dict: self, before };
        guard.dict.entries.retain_mut(|e| f(&e.key, &mut e.value));
    }

    /// One step of Redis's `dictScan`: visits buckets from `cursor` on, in
    /// reverse-bit order, calling `f` for every entry in them, until at least
    /// `count` entries were emitted or `10 * count` buckets were looked at
    /// (Redis's SCAN loop bounds). Returns the next cursor; 0 means done.
    /// Any `u64` is accepted as a cursor.
    pub(crate) fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&K, &V)) -> u64 {
        if self.entries.is_empty() {
            return 0;
        }
        let mask = (self.buckets.len() - 1) as u64;
        let mut v = cursor;
        let mut emitted = 0usize;
        let mut budget = count.max(1).saturating_mul(10);
        loop {
            let mut i = self.buckets[(v & mask) as usize];
            while i != NIL {
                let e = &self.entries[i as usize];
                f(&e.key, &e.value);
                emitted += 1;
                i = e.next;
            }
            // Set the bits above the mask so the increment of the reversed
            // cursor carries straight into the masked bits.
            v |= !mask;
            v = v.reverse_bits().wrapping_add(1).reverse_bits();
            budget -= 1;
            if v == 0 || emitted >= count || budget == 0 {
                return v;
            }
        }
    }

    /// A uniformly random entry in O(1) (exactly fair, unlike Redis's
    /// bucket-then-chain pick, thanks to the dense entry array).
    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<(&K, &V)> {
        if self.entries.is_empty() {
            return None;
        }
        let e = &self.entries[rng.random_range(0..self.entries.len())];
        Some((&e.key, &e.value))
    }

    /// Calls `f` on `min(count, len)` distinct entries chosen at random (the
    /// role of Redis's `dictGetSomeKeys`, for active expiry and SRANDMEMBER).
    pub(crate) fn sample(&self, rng: &mut impl Rng, count: usize, mut f: impl FnMut(&K, &V)) {
        let n = self.entries.len();
        if count >= n {
            self.entries.iter().for_each(|e| f(&e.key, &e.value));
            return;
        }
        for i in rand::seq::index::sample(rng, n, count) {
            let e = &self.entries[i];
            f(&e.key, &e.value);
        }
    }

    /// Approximate heap bytes of the table itself: entry slots (including
    /// the inline `K` and `V`) and buckets, not what keys/values point to.
    pub(crate) fn mem_usage(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry<K, V>>()
            + self.buckets.len() * std::mem::size_of::<u32>()
    }
}

/// Owning iterator returned by `Dict::into_iter`.
pub(crate) struct IntoIter<K, V>(<Pages<Entry<K, V>> as IntoIterator>::IntoIter);

impl<K, V> Iterator for IntoIter<K, V> {
    type Item = (K, V);
    fn next(&mut self) -> Option<(K, V)> {
        self.0.next().map(|e| (e.key, e.value))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<K, V> ExactSizeIterator for IntoIter<K, V> {}

impl<K, V, S> IntoIterator for Dict<K, V, S> {
    type Item = (K, V);
    type IntoIter = IntoIter<K, V>;
    fn into_iter(self) -> IntoIter<K, V> {
        IntoIter(self.entries.into_iter())
    }
}

#[cfg(test)]
mod tests;
