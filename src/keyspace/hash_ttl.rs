//! Hash field TTLs (Redis 7.4's hash field expiration): the keyspace half.
//!
//! A hash's fields carry their own deadlines ([`crate::types::hash`]); a
//! field whose deadline has come is gone for every command. As with window
//! trimming, two mechanisms remove expired fields, both through [`expire`]:
//! - lazily, [`Keyspace::prepare`] removes a hash's due fields before any
//!   command sees the key (O(1) when nothing is due: the hash's earliest
//!   deadline is compared with the command's instant first);
//! - in the background, the window [`sweeper`](super::windows::sweeper)
//!   visits each hash at its earliest field deadline (the hash sits in its
//!   shard's [`Schedule`](super::windows::Schedule) beside windowed keys,
//!   see [`reschedule`](super::windows::reschedule)) and removes a bounded
//!   batch of due fields per visit.
//!
//! Removing fields announces `hexpired`, and `del` when the hash empties
//! (which deletes the key), as Redis 7.4 does; the AOF gets an `HDEL` per
//! field, as Redis 8 writes.
//!
//! A replica removes none: its primary's HDELs do, and meanwhile its own
//! clients read a copy of the hash without the due fields (see
//! [`replica`](super::replica)).

use std::sync::atomic::Ordering::Relaxed;

use super::{Entry, Keyspace, Value, notify};

/// Removes up to `max` expired fields of the hash at `key` (if it is one),
/// deleting the key if none is left. Returns the number of fields removed.
pub(crate) fn expire(ks: &mut Keyspace<'_>, key: &[u8], max: usize) -> usize {
    let (now, db) = (ks.now_ms, ks.db);
    let logging = ks.propagating();
    ks.cow(key);
    let due = |e: Option<&mut Entry>| match e {
        Some(Entry {
            value: Value::Hash(h),
            ..
        }) => h.min_deadline().is_some_and(|at| at <= now),
        _ => false,
    };
    if !due(ks.shard(key).dbs[db].keys.get_mut(key)) {
        return 0;
    }
    // A replica leaves due fields to its primary's HDEL.
    if ks.replica_holds() {
        return 0;
    }
    let Some(Entry {
        value: Value::Hash(h),
        ..
    }) = ks.shard(key).dbs[db].keys.get_mut(key)
    else {
        return 0;
    };
    // Logged as the HDEL they amount to.
    let mut gone: Vec<Vec<u8>> = Vec::new();
    let removed = h.expire_fields_with(now, max, |f| {
        if logging {
            gone.push(f.to_vec());
        }
    });
    let emptied = h.is_empty();
    if emptied {
        ks.remove_raw_entry(key);
    }
    if removed > 0 {
        // Expiry is not the running command's change: whether that command
        // is logged depends on what it did itself (Redis does not count
        // expired fields in `dirty`).
        let dirty = ks.prop.dirty;
        ks.modified(key);
        ks.prop.dirty = dirty;
        // One HDEL per field, as Redis 8 logs them; a replayed HDEL of the
        // last field deletes the key, so no DEL follows.
        for f in gone {
            ks.also_propagate(|| crate::argv![b"HDEL", key, f]);
        }
    } else {
        // The bound was stale (a field's TTL was dropped or pushed back):
        // it is exact now, and no field changed.
        super::windows::reschedule(ks, key);
    }
    if removed > 0 {
        ks.env
            .store
            .stats_expired_fields
            .fetch_add(removed as u64, Relaxed);
        ks.notify(notify::HASH, "hexpired", key);
    }
    if emptied {
        ks.notify(notify::GENERIC, "del", key);
    }
    removed
}
