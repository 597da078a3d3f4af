//! Copy-on-write snapshots: what BGSAVE writes instead of forking.
//!
//! Design. A multi-threaded process cannot `fork()` safely and go on
//! running its own code in the child, so BGSAVE gets its point-in-time
//! view another way (the child it does fork only writes the bytes to the
//! file: see `util::child`):
//!
//! 1. The instant: BGSAVE holds every shard (as EXEC does) and gives each
//!    shard an empty [`Snap`]; that costs O(shards), not O(keys). Every
//!    command either finished before (it held its shards) or starts after
//!    and sees the snapshot, so a transaction is wholly in or wholly out.
//! 2. The writer: a saver thread walks each shard's databases with the
//!    dictionary's SCAN cursor, a chunk of keys per lock hold, writing the
//!    current entries and noting each key as *saved* (the cursor may visit
//!    a key twice across a rehash; the note drops the second visit).
//! 3. Everyone else: before any access that may change a key the saver has
//!    not written yet (every keyspace lookup, store, removal and TTL change
//!    goes through [`Shard::cow`]), the key's entry as it is — which is as
//!    it was at the instant, since it was not changed since — is
//!    *preserved* (cloned), or noted absent if the key did not exist. The
//!    saver skips preserved keys in its walk and writes the preserved
//!    entries at the end of the shard's database. Whole-database commands
//!    (FLUSHDB, FLUSHALL, SWAPDB) preserve every unsaved key first.
//!
//! So only keys touched during the save are copied, once each, and a
//! client waits at most for one chunk of the saver's walk. The costs: one
//! relaxed load per access while no save runs, and during one, a set of the
//! saved key names per database being walked.

use std::sync::atomic::Ordering::Relaxed;

use super::{Entry, Key, Shard, Store, Value};

/// Keys the saver writes per lock hold.
const CHUNK: usize = 128;

/// One shard's snapshot state.
pub(crate) struct Snap {
    /// Per database: keys already written.
    saved: Vec<foldhash::HashSet<Key>>,
    /// Per database: entries as of the instant of keys changed before the
    /// saver reached them (`None`: the key did not exist then).
    preserved: Vec<foldhash::HashMap<Key, Option<(Value, u64)>>>,
    /// Per database: written completely; nothing more to preserve.
    done: Vec<bool>,
}

impl Snap {
    fn new(databases: usize) -> Snap {
        Snap {
            saved: (0..databases).map(|_| Default::default()).collect(),
            preserved: (0..databases).map(|_| Default::default()).collect(),
            done: vec![false; databases],
        }
    }

    fn preserve(&mut self, db: usize, key: &[u8], current: Option<&Entry>) {
        if self.done[db] || self.saved[db].contains(key) || self.preserved[db].contains_key(key) {
            return;
        }
        self.preserved[db].insert(key.into(), current.map(|e| (e.value.clone(), e.expire_at)));
    }
}

impl Shard {
    /// Keeps `key`'s entry as of the snapshot before it may change.
    pub(crate) fn cow(&mut self, db: usize, key: &[u8]) {
        if let Some(s) = self.snap.as_deref_mut() {
            s.preserve(db, key, self.dbs.get(db).and_then(|d| d.keys.get(key)));
        }
    }

    /// Preserves every unsaved key of `db` (before a whole-database change).
    pub(crate) fn cow_db(&mut self, db: usize) {
        if let Some(s) = self.snap.as_deref_mut()
            && let Some(d) = self.dbs.get(db)
        {
            for (k, e) in d.keys.iter() {
                s.preserve(db, k, Some(e));
            }
        }
    }
}

/// What a snapshot walk calls with each key: key, value, expiry (0: none).
pub(crate) type Visit<'f> = dyn FnMut(&[u8], &Value, u64) -> std::io::Result<()> + 'f;
/// What a snapshot walk calls after each chunk, with no lock held.
pub(crate) type Flush<'f> = dyn FnMut() -> std::io::Result<()> + 'f;

/// What a snapshot holds, counted at the instant.
pub(crate) struct Sizes {
    /// Per database: (keys, keys with a TTL).
    pub(crate) dbs: Vec<(usize, usize)>,
    /// Some hash has a field with a TTL (which only RDB 12 can carry).
    pub(crate) field_ttls: bool,
}

impl Store {
    /// Starts a snapshot; the caller holds every shard (`shards`).
    pub(crate) fn begin_snapshot<'s>(&self, shards: impl Iterator<Item = &'s mut Shard>) -> Sizes {
        let mut sizes = Sizes {
            dbs: vec![(0, 0); self.databases],
            field_ttls: false,
        };
        for shard in shards {
            for (db, d) in shard.dbs.iter().enumerate() {
                sizes.dbs[db].0 += d.keys.len();
                sizes.dbs[db].1 += d.expires.len();
            }
            sizes.field_ttls |= shard.has_field_ttls();
            shard.snap = Some(Box::new(Snap::new(self.databases)));
        }
        self.snapshot_active.store(true, Relaxed);
        sizes
    }

    /// Ends the snapshot (done or abandoned), freeing what it kept.
    pub(crate) fn end_snapshot(&self) {
        self.snapshot_active.store(false, Relaxed);
        for idx in 0..self.shard_count() {
            let snap = self.lock_shard(idx).snap.take();
            drop(snap);
        }
    }

    /// Hands `f` every key of shard `idx`'s database `db` as of the
    /// snapshot, a chunk per lock hold, then the preserved ones.
    pub(crate) fn snapshot_db(
        &self,
        idx: usize,
        db: usize,
        f: &mut Visit<'_>,
        flush: &mut Flush<'_>,
    ) -> std::io::Result<()> {
        let gone = || std::io::Error::other("snapshot abandoned");
        let mut cursor = 0;
        loop {
            let mut g = self.lock_shard(idx);
            let Shard { dbs, snap, .. } = &mut *g;
            let snap = snap.as_deref_mut().ok_or_else(gone)?;
            let mut result = Ok(());
            cursor = dbs[db].keys.scan(cursor, CHUNK, |k, e| {
                if result.is_ok()
                    && !snap.preserved[db].contains_key(k)
                    && snap.saved[db].insert(k.clone())
                {
                    result = f(k, &e.value, e.expire_at);
                }
            });
            result?;
            drop(g);
            flush()?;
            if cursor == 0 {
                break;
            }
        }
        let (preserved, saved) = {
            let mut g = self.lock_shard(idx);
            let snap = g.snap.as_deref_mut().ok_or_else(gone)?;
            snap.done[db] = true;
            (
                std::mem::take(&mut snap.preserved[db]),
                std::mem::take(&mut snap.saved[db]),
            )
        };
        // Freed outside the lock: a set of many names takes a while.
        drop(saved);
        for (k, v) in preserved {
            if let Some((v, at)) = v {
                f(&k, &v, at)?;
                flush()?;
            }
        }
        Ok(())
    }
}
