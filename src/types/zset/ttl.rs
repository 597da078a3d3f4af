//! Member TTLs of a sorted set (Garnet's ZEXPIRE family).
//!
//! Layout: a set that never had a member TTL carries one empty pointer
//! (`Option<Box<Ttls>>`, 8 bytes, no allocation) and pays nothing else.
//! A set with TTLs holds, beside its members, a map member → deadline (for
//! ZTTL, ZPERSIST and the NX/XX/GT/LT checks) and the same pairs ordered by
//! deadline (so the due members are found in O(log n) and removed in
//! bounded batches). The side structures live outside the listpack and the
//! skiplist so that neither encoding's element layout grows for the sets
//! that never use the feature; the cost is per member *with* a TTL only.
//! Both structures hold the member's bytes, though: about 110 bytes per
//! 15-byte member (by `used_memory`), well above the 16 bytes a deadline
//! stored inside the encodings' elements would cost (as `hash.rs` stores
//! field deadlines); that layout is still to be built.
//!
//! Entries may outlive their member (a range removal or a pop does not
//! look here): such a stale entry is dropped when its deadline comes or
//! when a member of that name is added again, and every reader checks that
//! the member exists first.

use std::collections::{BTreeSet, HashMap};

use super::ZSet;

/// No deadline.
pub const NO_TTL: u64 = 0;

#[derive(Clone, Default)]
pub struct Ttls {
    at: HashMap<Box<[u8]>, u64>,
    queue: BTreeSet<(u64, Box<[u8]>)>,
}

impl Ttls {
    pub fn mem_usage(&self) -> usize {
        let per: usize = self.at.keys().map(|k| 2 * k.len() + 64).sum();
        std::mem::size_of::<Ttls>() + per
    }
}

impl ZSet {
    /// `member`'s deadline: None if there is no such member, `Some(NO_TTL)`
    /// if it has none.
    pub fn expire_at(&self, member: &[u8]) -> Option<u64> {
        self.score(member)?;
        Some(
            self.ttl
                .as_ref()
                .and_then(|t| t.at.get(member).copied())
                .unwrap_or(NO_TTL),
        )
    }

    /// Sets (or with [`NO_TTL`] clears) an existing member's deadline;
    /// false if there is no such member.
    pub fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        if self.score(member).is_none() {
            return false;
        }
        if at == NO_TTL {
            self.clear_ttl(member);
            return true;
        }
        let t = self.ttl.get_or_insert_with(Default::default);
        if let Some(old) = t.at.insert(member.into(), at) {
            t.queue.remove(&(old, Box::<[u8]>::from(member)));
        }
        t.queue.insert((at, member.into()));
        true
    }

    /// Drops `member`'s TTL, if any (the member need not exist).
    pub(super) fn clear_ttl(&mut self, member: &[u8]) {
        let Some(t) = self.ttl.as_mut() else {
            return;
        };
        if let Some(old) = t.at.remove(member) {
            t.queue.remove(&(old, Box::<[u8]>::from(member)));
        }
        if t.at.is_empty() {
            self.ttl = None;
        }
    }

    /// A lower bound on the earliest member deadline (exact unless stale
    /// entries lead); None if no member has a TTL.
    pub fn min_deadline(&self) -> Option<u64> {
        self.ttl.as_ref()?.queue.first().map(|(at, _)| *at)
    }

    /// How many members have a TTL (INFO).
    pub fn volatile_members(&self) -> usize {
        self.ttl.as_ref().map_or(0, |t| t.at.len())
    }

    /// Whether any member has a TTL (RENAME, COPY and DEBUG paths).
    pub fn has_ttls(&self) -> bool {
        self.ttl.is_some()
    }

    /// Removes members whose deadline is at or before `now`, looking at
    /// up to `max` due entries (stale ones included); `removed` sees each
    /// removed member with its score. Returns the number of members removed.
    pub fn expire_members(
        &mut self,
        now: u64,
        max: usize,
        mut removed: impl FnMut(&[u8], f64),
    ) -> usize {
        let mut n = 0;
        for _ in 0..max.max(1) {
            let Some(t) = self.ttl.as_mut() else {
                break;
            };
            let Some((at, member)) = t.queue.first().filter(|(at, _)| *at <= now).cloned() else {
                break;
            };
            t.queue.remove(&(at, member.clone()));
            t.at.remove(&member);
            if t.at.is_empty() {
                self.ttl = None;
            }
            let score = match &mut self.repr {
                super::Repr::Compact(lp) => lp.remove(&member),
                super::Repr::Skip(sl) => sl.remove(&member),
            };
            if let Some(s) = score {
                removed(&member, s);
                n += 1;
            }
        }
        n
    }

    /// True if the set is non-empty and every member's deadline is at or
    /// before `now` (KEYS and SCAN skip such a key).
    pub fn all_expired(&self, now: u64) -> bool {
        match self.ttl.as_ref() {
            Some(t) if t.at.len() >= self.len() => self.all_gone(now, |_| false),
            _ => false,
        }
    }

    /// True if the set is non-empty and every member is either past its
    /// deadline at `now` or `aged` by its score (a window rule's test).
    pub fn all_gone(&self, now: u64, aged: impl Fn(f64) -> bool) -> bool {
        let t = self.ttl.as_deref();
        !self.is_empty()
            && self
                .iter()
                .all(|(m, s)| aged(s) || t.and_then(|t| t.at.get(m)).is_some_and(|&at| at <= now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::zset::{AddFlags, Limits, NotNan};

    fn add(z: &mut ZSet, m: &[u8], s: f64, flags: AddFlags) {
        z.add(m, NotNan::new(s).unwrap(), flags, Limits::default())
            .unwrap();
    }

    #[test]
    fn deadlines_expire_in_order_and_zadd_clears_them() {
        let mut z = ZSet::new();
        for (i, m) in [&b"a"[..], b"b", b"c"].into_iter().enumerate() {
            add(&mut z, m, i as f64, AddFlags::default());
        }
        assert!(!z.has_ttls());
        assert!(z.set_expire(b"a", 30));
        assert!(z.set_expire(b"b", 10));
        assert!(!z.set_expire(b"x", 10));
        assert_eq!(z.min_deadline(), Some(10));
        assert_eq!(z.expire_at(b"c"), Some(NO_TTL));
        assert_eq!(z.expire_at(b"x"), None);
        // ZINCRBY keeps the TTL, ZADD drops it.
        add(
            &mut z,
            b"b",
            1.0,
            AddFlags {
                incr: true,
                ..Default::default()
            },
        );
        assert_eq!(z.expire_at(b"b"), Some(10));
        add(&mut z, b"a", 7.0, AddFlags::default());
        assert_eq!(z.expire_at(b"a"), Some(NO_TTL));
        let mut seen = Vec::new();
        assert_eq!(
            z.expire_members(100, usize::MAX, |m, s| seen.push((m.to_vec(), s))),
            1
        );
        assert_eq!(seen, vec![(b"b".to_vec(), 2.0)]);
        assert!(!z.has_ttls(), "no TTL left: the side structures are freed");
        assert_eq!(z.len(), 2);
    }

    #[test]
    fn batches_are_bounded_and_stale_entries_do_not_apply() {
        let mut z = ZSet::new();
        for i in 0..10u8 {
            add(&mut z, &[i], i as f64, AddFlags::default());
            z.set_expire(&[i], 5);
        }
        assert!(z.all_expired(5) && !z.all_expired(4));
        assert_eq!(z.expire_members(5, 3, |_, _| {}), 3);
        assert_eq!(z.len(), 7);
        // A popped member re-added does not inherit its old TTL.
        z.pop(true, 1);
        add(&mut z, &[9], 9.0, AddFlags::default());
        assert_eq!(z.expire_at(&[9]), Some(NO_TTL));
        assert_eq!(z.expire_members(5, usize::MAX, |_, _| {}), 6);
        assert_eq!(z.len(), 1);
    }
}
