//! Redis 8.0's key size histograms (`INFO keysizes`): per database and
//! type, how many keys have a length in each power-of-two range.
//!
//! A string's length is its byte count; a list's, set's, sorted set's and
//! hash's the number of its items (streams are not counted). Bin 0 holds
//! the empty strings, bin `i > 0` the lengths in `[2^(i-1), 2^i)`, as
//! Redis's `updateKeysizesHist` (`log2(len) + 1`).
//!
//! The histogram is kept as the data changes, never by a scan: each entry
//! carries the bin it is counted in, its [`Class`] (type and bin in one
//! byte, beside its LRU clock), and each shard's database keeps the counts
//! of its entries' classes ([`Hist`]). A key entering or leaving a database
//! ([`Keyspace::set_entry`](super::Keyspace::set_entry), `remove_raw`, a
//! database emptied or swapped whole) moves its class with it; a value
//! changed in place is re-classed when the change is signalled
//! ([`Keyspace::modified`](super::Keyspace::modified)), which every write
//! and every expiry of fields, members or window-aged members calls. A bin
//! changes only when a length crosses a power of two, so most writes
//! compare two bytes and move nothing. INFO adds the shards' counts up.

use std::collections::BTreeMap;

use super::Value;

/// Bins per type: lengths up to 2^47 - 1 have their own bin; longer ones
/// (beyond any memory) share the last.
pub(crate) const BINS: usize = 48;

/// The counted types, in Redis's `OBJ_*` order (and INFO's).
pub(crate) const TYPES: usize = 5;

/// INFO's name of each type's line.
const TYPE_NAMES: [&str; TYPES] = [
    "distrib_strings_sizes",
    "distrib_lists_items",
    "distrib_sets_items",
    "distrib_zsets_items",
    "distrib_hashes_items",
];

/// INFO's label of each bin (Redis's `expSizeLabels`).
const LABELS: [&str; BINS] = [
    "0", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1K", "2K", "4K", "8K", "16K",
    "32K", "64K", "128K", "256K", "512K", "1M", "2M", "4M", "8M", "16M", "32M", "64M", "128M",
    "256M", "512M", "1G", "2G", "4G", "8G", "16G", "32G", "64G", "128G", "256G", "512G", "1T",
    "2T", "4T", "8T", "16T", "32T", "64T",
];

/// An entry's type and bin in one byte: 0 when it is not counted (a
/// stream, or an entry in no database), else `1 + type * BINS + bin`,
/// which is also its counter's index + 1 in a [`Hist`].
pub(crate) type Class = u8;

const _: () = assert!(TYPES * BINS < Class::MAX as usize);

/// The bin of a length: 0 for 0, else `floor(log2(len)) + 1`.
pub(crate) fn bin(len: usize) -> usize {
    ((usize::BITS - len.leading_zeros()) as usize).min(BINS - 1)
}

/// The class `v` is counted in: O(1) (every type keeps its length).
pub(crate) fn class(v: &Value) -> Class {
    let (ty, len) = match v {
        Value::Str(s) => (0, s.data.len()),
        Value::List(l) => (1, l.len()),
        Value::Set(s) => (2, s.len()),
        Value::ZSet(z) => (3, z.len()),
        Value::Hash(h) => (4, h.len()),
        Value::Stream(_) => return 0,
    };
    (1 + ty * BINS + bin(len)) as Class
}

/// One shard's counts for one database, allocated with its first counted
/// key (a database never written costs a pointer).
#[derive(Default, Clone)]
pub(crate) struct Hist(Option<Box<[u64; TYPES * BINS]>>);

impl Hist {
    /// An entry counted as `old` is now counted as `new` (0: not counted,
    /// so `(0, c)` adds a key and `(c, 0)` removes one).
    #[inline]
    pub(crate) fn moved(&mut self, old: Class, new: Class) {
        if old == new {
            return;
        }
        let counts = self.0.get_or_insert_with(|| Box::new([0; TYPES * BINS]));
        if old != 0 {
            let n = &mut counts[usize::from(old) - 1];
            debug_assert!(*n > 0, "keysizes: class {old} counted below zero");
            *n = n.saturating_sub(1);
        }
        if new != 0 {
            counts[usize::from(new) - 1] += 1;
        }
    }

    /// Forgets every count (the database was emptied). The allocation
    /// stays: a flush then refill must not allocate it again, which
    /// `used_memory` would show past a limit set after the flush (Redis's
    /// histograms are part of its database from the start).
    pub(crate) fn clear(&mut self) {
        if let Some(counts) = &mut self.0 {
            counts.fill(0);
        }
    }
}

/// Every database's counts over every shard, as INFO prints them: only
/// those that are not zero. INFO gathers them before its memory section
/// reads `used_memory`, so what it allocates here shows in that figure;
/// a dense array per database (1920 bytes each, 30 KB for 16 databases)
/// put the `used_memory` INFO reports well above the memory eviction
/// holds under `maxmemory`. (Redis's INFO reads its histograms in place.)
#[derive(Default)]
pub(crate) struct Totals(BTreeMap<(usize, Class), u64>);

impl Totals {
    /// Adds one shard's counts for database `db`.
    pub(crate) fn add(&mut self, db: usize, hist: &Hist) {
        let Some(counts) = &hist.0 else {
            return;
        };
        for (i, &c) in counts.iter().enumerate() {
            if c != 0 {
                *self.0.entry((db, (i + 1) as Class)).or_default() += c;
            }
        }
    }

    /// Database `db`'s lines (`db0_distrib_strings_sizes:2=1,4=3`), one
    /// per type with a key, each ending in CRLF.
    pub(crate) fn write_lines(&self, db: usize, out: &mut String) {
        use std::fmt::Write as _;
        let mut line = None;
        for (&(_, class), &c) in self.0.range((db, 1)..(db + 1, 0)) {
            let (ty, bin) = (
                (usize::from(class) - 1) / BINS,
                (usize::from(class) - 1) % BINS,
            );
            if line == Some(ty) {
                out.push(',');
            } else {
                if line.is_some() {
                    out.push_str("\r\n");
                }
                let _ = write!(out, "db{db}_{}:", TYPE_NAMES[ty]);
                line = Some(ty);
            }
            let _ = write!(out, "{}={c}", LABELS[bin]);
        }
        if line.is_some() {
            out.push_str("\r\n");
        }
    }
}

/// Checks that every entry of `store` is counted in its value's class and
/// that each shard's histograms count exactly its entries (for the
/// keyspace's randomized tests).
#[cfg(test)]
pub(crate) fn assert_exact(store: &super::Store, step: &str) {
    for idx in 0..store.shard_count() {
        let shard = store.lock_shard(idx);
        for (db, d) in shard.dbs.iter().enumerate() {
            let mut want = [0u64; TYPES * BINS];
            for (k, e) in d.keys.iter() {
                let c = class(&e.value);
                assert_eq!(e.class(), c, "{step}: db {db} key {k:?} classed");
                if c != 0 {
                    want[usize::from(c) - 1] += 1;
                }
            }
            let have = d.sizes.0.as_deref().copied().unwrap_or([0; TYPES * BINS]);
            assert!(have == want, "{step}: shard {idx} db {db} histogram");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::Str;

    #[test]
    fn bins_are_powers_of_two_as_redis_counts_them() {
        assert_eq!(bin(0), 0);
        assert_eq!(bin(1), 1);
        for i in 1..47 {
            let lo = 1usize << i;
            assert_eq!(bin(lo), i + 1, "{lo}");
            assert_eq!(bin(lo - 1), i, "{}", lo - 1);
            assert_eq!(bin(lo + lo / 2), i + 1);
        }
        // Labels name a bin's lower bound.
        assert_eq!(LABELS[bin(1023)], "512");
        assert_eq!(LABELS[bin(1024)], "1K");
        assert_eq!(LABELS[bin(3 << 20)], "2M");
        assert_eq!(bin(usize::MAX), BINS - 1);
    }

    #[test]
    fn moves_and_lines() {
        let mut h = Hist::default();
        let s = |n: usize| class(&Value::Str(Str::new(&vec![b'x'; n])));
        h.moved(0, s(0));
        h.moved(0, s(3));
        h.moved(0, s(2));
        h.moved(0, s(1500));
        h.moved(s(1500), s(1024));
        // Two shards with the same counts.
        let mut t = Totals::default();
        t.add(3, &h);
        t.add(3, &h);
        let mut out = String::new();
        t.write_lines(3, &mut out);
        assert_eq!(out, "db3_distrib_strings_sizes:0=2,2=4,1K=2\r\n");
        h.moved(s(3), 0);
        h.moved(s(2), 0);
        h.moved(s(0), 0);
        h.moved(s(1024), 0);
        let mut t = Totals::default();
        t.add(0, &h);
        let mut out = String::new();
        t.write_lines(0, &mut out);
        assert_eq!(out, "");
    }

    /// The totals keep only what is counted: each database's lines list
    /// its types in Redis's order, and no other database's counts.
    #[test]
    fn totals_by_database_and_type() {
        let c = |ty: usize, len: usize| (1 + ty * BINS + bin(len)) as Class;
        let mut shard_a = Hist::default();
        for (ty, len) in [(4, 3), (1, 1), (3, 1 << 40)] {
            shard_a.moved(0, c(ty, len));
        }
        let mut shard_b = Hist::default();
        for (ty, len) in [(1, 300), (0, 5)] {
            shard_b.moved(0, c(ty, len));
        }
        let mut other = Hist::default();
        other.moved(0, c(2, 7));
        let mut t = Totals::default();
        t.add(1, &shard_a);
        t.add(0, &other);
        t.add(1, &shard_b);
        t.add(2, &Hist::default());
        t.add(15, &other);
        assert_eq!(t.0.len(), 7, "only the counts that are not zero");
        let mut out = String::new();
        t.write_lines(1, &mut out);
        assert_eq!(
            out,
            "db1_distrib_strings_sizes:4=1\r\n\
             db1_distrib_lists_items:1=1,256=1\r\n\
             db1_distrib_zsets_items:1T=1\r\n\
             db1_distrib_hashes_items:2=1\r\n"
        );
        let mut out = String::new();
        t.write_lines(15, &mut out);
        assert_eq!(out, "db15_distrib_sets_items:4=1\r\n");
        let mut out = String::new();
        t.write_lines(2, &mut out);
        assert_eq!(out, "");
    }
}
