//! Sorted-set member TTLs (Garnet's ZEXPIRE family): the keyspace half,
//! built as [`hash_ttl`](super::hash_ttl) is.
//!
//! A member whose deadline has come is gone for every command. Two
//! mechanisms remove expired members, both through [`expire`]:
//! - lazily, [`Keyspace::prepare`] removes a set's due members before any
//!   command sees the key (O(1) when nothing is due: the set's lower bound
//!   on its deadlines is compared with the command's instant first; when
//!   the bound is early, one pass over the set's nodes makes it exact);
//! - in the background, the window [`sweeper`](super::windows::sweeper)
//!   visits each set at the earlier of its window deadline and its earliest
//!   member deadline (see [`reschedule`](super::windows::reschedule)) and
//!   removes a bounded batch per visit.
//!
//! Removing members announces `zexpired` (and `del` when the set empties)
//! as a window trim does, and a window rule with MOVETO hands the expired
//! members off, in score order, through the same path as aged ones (lock
//! planning already adds the hand-off shard of every windowed set with a
//! MOVETO rule, see [`handoff_shard`](super::windows::handoff_shard)).
//!
//! A replica removes none: its primary's ZREMs do, and meanwhile its own
//! clients read a copy of the set without the due members (see
//! [`replica`](super::replica)).

use super::{Entry, Keyspace, Value, notify};

/// Removes up to `max` expired members of the sorted set at `key` (if it
/// is one), deleting the key if none is left. Returns the number removed.
pub(crate) fn expire(ks: &mut Keyspace<'_>, key: &[u8], max: usize) -> usize {
    let (now, db, env) = (ks.now_ms, ks.db, ks.env);
    ks.cow(key);
    let Some(Entry {
        value: Value::ZSet(z),
        window,
        ..
    }) = ks.shard(key).dbs[db].keys.get_mut(key)
    else {
        return 0;
    };
    if z.min_deadline().is_none_or(|at| at > now) {
        return 0;
    }
    let dest = env
        .windows
        .rule_for(window, key)
        .and_then(|r| r.destination(key));
    // A replica leaves due members to its primary's ZREM.
    if ks.replica_holds() {
        return 0;
    }
    if dest.is_some()
        && let Some(shard) = super::windows::handoff_shard(ks, key).filter(|&d| !ks.holds(d))
    {
        // As in a window trim: leave the members for a later pass rather
        // than touch an unlocked shard.
        debug_assert!(false, "member TTL hand-off to unlocked shard {shard}");
        tracing::error!(shard, "member expiry skipped: hand-off shard not locked");
        return 0;
    }
    let Some(Entry {
        value: Value::ZSet(z),
        ..
    }) = ks.shard(key).dbs[db].keys.get_mut(key)
    else {
        return 0;
    };
    let mut moved: Vec<(Vec<u8>, f64)> = Vec::new();
    let logging = env.events.propagating();
    let removed = z.expire_members(now, max, |m, s| {
        if dest.is_some() || logging {
            moved.push((m.to_vec(), s));
        }
    });
    let emptied = z.is_empty();
    if emptied {
        ks.remove_raw_entry(key);
    }
    // Not the running command's change (see hash_ttl::expire).
    let dirty = ks.prop.dirty;
    if removed > 0 {
        ks.modified(key);
        super::windows::propagate_removal(ks, key, &moved);
    } else {
        // The bound was early (its member left by another route) or the
        // batch's node visits ran out: reschedule by the bound as it now
        // stands, exact once a pass completed.
        super::windows::reschedule(ks, key);
    }
    if removed > 0 {
        ks.env
            .store
            .stats_expired_members
            .fetch_add(removed as u64, std::sync::atomic::Ordering::Relaxed);
        ks.notify(notify::ZSET, "zexpired", key);
    }
    if emptied {
        ks.notify(notify::GENERIC, "del", key);
    }
    if let Some(dest) = dest {
        moved.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        super::windows::hand_off(ks, key, &dest, moved);
    }
    ks.prop.dirty = dirty;
    removed
}
