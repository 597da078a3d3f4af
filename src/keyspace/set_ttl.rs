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

use super::Keyspace;
use super::hash_ttl::{Subkeys, expire_subkeys};

/// Removes up to `max` expired members of the set at `key` (if it is one),
/// deleting the key if none is left (the path hash fields take). Returns
/// the number of members removed.
pub(crate) fn expire(ks: &mut Keyspace<'_>, key: &[u8], max: usize) -> usize {
    expire_subkeys(ks, key, max, Subkeys::SetMembers)
}
