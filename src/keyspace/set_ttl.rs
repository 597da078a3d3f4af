//! Set member TTLs (Redis 8.12's SEXPIRE family): the keyspace half, built
//! as [`hash_ttl`](super::hash_ttl) is and on the same schedule.
//!
//! A member whose deadline has come is gone for every command. Two
//! mechanisms remove expired members, both through [`expire`]:
//! - lazily, [`Keyspace::prepare`] removes a set's due members before any
//!   command sees the key (O(1) when nothing is due: the set's earliest
//!   deadline bound is compared with the command's instant first);
//! - in the background, the window [`sweeper`](super::windows::sweeper)
//!   visits each set at its earliest member deadline (the set sits in its
//!   shard's schedule beside hashes with field TTLs, see
//!   [`reschedule`](super::windows::reschedule)) and removes a bounded
//!   batch per visit.
//!
//! Removing members announces `sexpired`, and `del` when the set empties
//! (which deletes the key), as hashes announce `hexpired`; the AOF and
//! replicas get an `SREM` per member, as hash fields get an `HDEL`.
//!
//! A replica removes none: its primary's SREMs do, and meanwhile its own
//! clients read a copy of the set without the due members (see
//! [`replica`](super::replica)).

use std::sync::atomic::Ordering::Relaxed;

use super::{Entry, Keyspace, Value, notify};

/// Removes up to `max` expired members of the set at `key` (if it is one),
/// deleting the key if none is left. Returns the number of members removed.
pub(crate) fn expire(ks: &mut Keyspace<'_>, key: &[u8], max: usize) -> usize {
    let (now, db) = (ks.now_ms, ks.db);
    let logging = ks.propagating();
    let due = |e: Option<&mut Entry>| match e {
        Some(Entry {
            value: Value::Set(s),
            ..
        }) => s.min_deadline().is_some_and(|at| at <= now),
        _ => false,
    };
    if !due(ks.shard(key).dbs[db].keys.get_mut(key)) {
        return 0;
    }
    ks.cow(key);
    // A replica leaves due members to its primary's SREM.
    if ks.replica_holds() {
        return 0;
    }
    let Some(Entry {
        value: Value::Set(s),
        ..
    }) = ks.shard(key).dbs[db].keys.get_mut(key)
    else {
        return 0;
    };
    let mut gone: Vec<Vec<u8>> = Vec::new();
    let removed = s.expire_members_with(now, max, |m| {
        if logging {
            gone.push(m.to_vec());
        }
    });
    let emptied = s.is_empty();
    if emptied {
        ks.remove_raw_entry(key);
    }
    if removed > 0 {
        // Not the running command's change (see hash_ttl::expire).
        let dirty = ks.prop.dirty;
        ks.modified(key);
        ks.prop.dirty = dirty;
        // One SREM per member; a replayed SREM of the last member deletes
        // the key, so no DEL follows.
        for m in gone {
            ks.also_propagate(|| crate::argv![b"SREM", key, m]);
        }
    } else {
        // The bound was stale: it is exact now, and no member changed.
        super::windows::reschedule(ks, key);
    }
    if removed > 0 {
        ks.env
            .store
            .stats_expired_fields
            .fetch_add(removed as u64, Relaxed);
        ks.notify(notify::SET, "sexpired", key);
    }
    if emptied {
        ks.notify(notify::GENERIC, "del", key);
    }
    removed
}
