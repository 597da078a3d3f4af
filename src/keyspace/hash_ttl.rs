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

use super::{Keyspace, Value, notify};

impl super::Shard {
    /// Whether some hash of the shard has a field with a TTL (due or not):
    /// such a hash is in the shard's schedule, so this looks at scheduled
    /// keys only, as INFO's `subexpiry` does.
    pub(crate) fn has_field_ttls(&self) -> bool {
        self.schedule.keys().any(|(db, key)| {
            matches!(
                self.dbs[db].keys.get(key).map(|e| &e.value),
                Some(Value::Hash(h)) if h.volatile_fields() != 0
            )
        })
    }
}

/// Removes up to `max` expired fields of the hash at `key` (if it is one),
/// deleting the key if none is left. Returns the number of fields removed.
pub(crate) fn expire(ks: &mut Keyspace<'_>, key: &[u8], max: usize) -> usize {
    expire_subkeys(ks, key, max, Subkeys::HashFields)
}

/// The subkeys with TTLs that expire one by one: hash fields, and set
/// members ([`set_ttl`](super::set_ttl)), which share this path.
#[derive(Clone, Copy)]
pub(crate) enum Subkeys {
    HashFields,
    SetMembers,
}

impl Subkeys {
    /// The earliest deadline among `v`'s subkeys, if `v` is of this kind.
    fn min_deadline(self, v: &Value) -> Option<u64> {
        match (self, v) {
            (Subkeys::HashFields, Value::Hash(h)) => h.min_deadline(),
            (Subkeys::SetMembers, Value::Set(s)) => s.min_deadline(),
            _ => None,
        }
    }

    /// Removes up to `max` due subkeys, telling `gone` each; the number
    /// removed and whether `v` is empty now.
    fn remove_due(
        self,
        v: &mut Value,
        now: u64,
        max: usize,
        gone: impl FnMut(&[u8]),
    ) -> Option<(usize, bool)> {
        match (self, v) {
            (Subkeys::HashFields, Value::Hash(h)) => {
                Some((h.expire_fields_with(now, max, gone), h.is_empty()))
            }
            (Subkeys::SetMembers, Value::Set(s)) => {
                Some((s.expire_members_with(now, max, gone), s.is_empty()))
            }
            _ => None,
        }
    }

    /// The command an expired subkey is logged as, its event's class and
    /// name.
    fn logged(self) -> (&'static [u8], u32, &'static str) {
        match self {
            Subkeys::HashFields => (b"HDEL", notify::HASH, "hexpired"),
            Subkeys::SetMembers => (b"SREM", notify::SET, "sexpired"),
        }
    }
}

/// Removes up to `max` expired subkeys of `kind` of the value at `key` (if
/// it is of that kind), deleting the key if none is left.
pub(crate) fn expire_subkeys(
    ks: &mut Keyspace<'_>,
    key: &[u8],
    max: usize,
    kind: Subkeys,
) -> usize {
    let (now, db) = (ks.now_ms, ks.db);
    let logging = ks.propagating();
    let due = ks.shard(key).dbs[db]
        .keys
        .get_mut(key)
        .and_then(|e| kind.min_deadline(&e.value))
        .is_some_and(|at| at <= now);
    if !due {
        return 0;
    }
    ks.cow(key);
    // A replica leaves due subkeys to its primary's HDEL / SREM.
    if ks.replica_holds() {
        return 0;
    }
    let Some(e) = ks.shard(key).dbs[db].keys.get_mut(key) else {
        return 0;
    };
    // Logged as the HDEL / SREM they amount to.
    let mut gone: Vec<Vec<u8>> = Vec::new();
    let Some((removed, emptied)) = kind.remove_due(&mut e.value, now, max, |f| {
        if logging {
            gone.push(f.to_vec());
        }
    }) else {
        return 0;
    };
    if emptied {
        ks.remove_raw_entry(key);
    }
    let (del, class, event) = kind.logged();
    if removed > 0 {
        // Expiry is not the running command's change: whether that command
        // is logged depends on what it did itself (Redis does not count
        // expired fields in `dirty`).
        let dirty = ks.prop.dirty;
        ks.modified(key);
        ks.prop.dirty = dirty;
        // One HDEL / SREM per subkey, as Redis 8 logs fields; a replayed
        // one of the last subkey deletes the key, so no DEL follows.
        for f in gone {
            ks.also_propagate(|| crate::argv![del, key, f]);
        }
    } else {
        // The bound was stale (a TTL was dropped or pushed back): it is
        // exact now, and no subkey changed.
        super::windows::reschedule(ks, key);
    }
    if removed > 0 {
        ks.env
            .store
            .stats_expired_fields
            .fetch_add(removed as u64, Relaxed);
        ks.notify(class, event, key);
    }
    if emptied {
        ks.notify(notify::GENERIC, "del", key);
    }
    removed
}
