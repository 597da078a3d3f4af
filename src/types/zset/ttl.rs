//! Member TTLs of a sorted set (Garnet's ZEXPIRE family).
//!
//! Layout: deadlines live sparsely beside the elements they belong to, in
//! the encodings themselves. A [`Deadlines`] table is two parallel sorted
//! vectors — in-place positions and deadlines — plus its earliest deadline.
//! Each skiplist node carries one behind an `Option<Box<…>>` (8 bytes per
//! node, none per element) with u16 positions; a compact set carries one
//! beside its buffer with u16 positions (u32 once a listpack grows past
//! 65,536 entries under a raised `zset-max-listpack-entries`). So a member
//! with a TTL costs its position and its deadline, ~10 bytes plus vector
//! slack (10.4 bytes per member measured by the counting allocator for 1M
//! 12-byte members in one set, 10.6 for 10,000 compact sets of 100:
//! `cargo bench --bench zset_memory`; the side map plus ordered queue this
//! replaced cost ~110), and a member without one costs nothing. Every
//! operation that moves elements — insertion, range removal, node split and
//! merge, a score change, encoding conversion — carries their deadlines, and
//! a removed element's deadline goes with it (no stale entries).
//!
//! Expiry order without a per-member queue: each table knows its earliest
//! deadline, a compact set's is exact, and a skiplist keeps a set-level
//! lower bound ([`ZSet::min_deadline`], what the keyspace schedules the set
//! by: it may be early, never late). [`ZSet::expire_members`] walks the
//! skiplist's node slab with a cursor kept across calls (a node without a
//! due member costs O(1)), removes up to `max` due members, and makes the
//! bound exact when a full pass found nothing more due. The cursor is a
//! slab slot rather than a place in the list because slots are stable
//! across splits, merges and frees; deadlines moved or set behind the
//! cursor during a pass are folded into the pass's minimum, so a completed
//! pass never raises the bound past a live deadline.

use super::skiplist::SkipList;
use super::{Repr, ZSet};

/// No deadline.
pub(crate) const NO_TTL: u64 = 0;

/// Position type of a deadline table.
pub(crate) trait Pos: Copy + Ord {
    /// `i` must fit (callers widen or cap first).
    fn at(i: usize) -> Self;
    fn get(self) -> usize;
}

impl Pos for u16 {
    fn at(i: usize) -> Self {
        debug_assert!(i <= usize::from(u16::MAX));
        i as u16
    }
    fn get(self) -> usize {
        usize::from(self)
    }
}

impl Pos for u32 {
    fn at(i: usize) -> Self {
        debug_assert!(i <= u32::MAX as usize);
        i as u32
    }
    fn get(self) -> usize {
        self as usize
    }
}

/// The deadlines of a run of elements, by position in that run.
#[derive(Clone, Debug)]
pub(crate) struct Deadlines<P> {
    /// Positions of the elements with a deadline, ascending.
    pos: Vec<P>,
    /// Their deadlines (never [`NO_TTL`]).
    at: Vec<u64>,
    /// The earliest of `at` (`u64::MAX` when empty).
    min: u64,
}

impl<P: Pos> Default for Deadlines<P> {
    fn default() -> Self {
        Deadlines {
            pos: Vec::new(),
            at: Vec::new(),
            min: u64::MAX,
        }
    }
}

impl<P: Pos> Deadlines<P> {
    pub(crate) fn len(&self) -> usize {
        self.pos.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The earliest deadline (`u64::MAX` if none).
    pub(crate) fn min(&self) -> u64 {
        self.min
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.pos.capacity() * std::mem::size_of::<P>() + self.at.capacity() * 8
    }

    /// Index in `pos` of the first position at or after `i`.
    fn lower(&self, i: usize) -> usize {
        self.pos.partition_point(|p| p.get() < i)
    }

    fn find(&self, i: usize) -> Option<usize> {
        let k = self.lower(i);
        (self.pos.get(k).map(|p| p.get()) == Some(i)).then_some(k)
    }

    /// The deadline of the element at `i` ([`NO_TTL`] if none).
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.find(i).map_or(NO_TTL, |k| self.at[k])
    }

    fn recompute_min(&mut self) {
        self.min = self.at.iter().copied().min().unwrap_or(u64::MAX);
    }

    /// Sets the deadline of the element at `i` (`at` is not [`NO_TTL`]);
    /// returns the previous one. `room` is the most elements the run can
    /// hold, so the table never reserves more entries than that.
    pub(crate) fn set(&mut self, i: usize, at: u64, room: usize) -> u64 {
        debug_assert!(at != NO_TTL);
        let k = self.lower(i);
        if self.pos.get(k).map(|p| p.get()) == Some(i) {
            let old = std::mem::replace(&mut self.at[k], at);
            if old == self.min && at > old {
                self.recompute_min();
            } else {
                self.min = self.min.min(at);
            }
            return old;
        }
        // Grow by a quarter rather than doubling, and never past `room`:
        // tables fill one member at a time and their slack is the
        // feature's whole overhead.
        if self.pos.len() == self.pos.capacity() {
            let len = self.pos.len();
            let step = (len / 4).max(4).min(room.saturating_sub(len)).max(1);
            self.pos.reserve_exact(step);
            self.at.reserve_exact(step);
        }
        self.pos.insert(k, P::at(i));
        self.at.insert(k, at);
        self.min = self.min.min(at);
        NO_TTL
    }

    /// Drops the deadline of the element at `i`; returns it.
    pub(crate) fn clear(&mut self, i: usize) -> u64 {
        let Some(k) = self.find(i) else {
            return NO_TTL;
        };
        self.pos.remove(k);
        let old = self.at.remove(k);
        if old == self.min {
            self.recompute_min();
        }
        self.shrink();
        old
    }

    /// An element was inserted at `i`: later elements move up by one.
    /// `P` must hold the new last position.
    pub(crate) fn shift_insert(&mut self, i: usize) {
        let k = self.lower(i);
        for p in &mut self.pos[k..] {
            *p = P::at(p.get() + 1);
        }
    }

    /// Elements `from..to` were removed: their deadlines go, later ones
    /// move down. Returns the number of deadlines dropped.
    pub(crate) fn remove_range(&mut self, from: usize, to: usize) -> usize {
        let (a, b) = (self.lower(from), self.lower(to));
        let n = to - from;
        for p in &mut self.pos[b..] {
            *p = P::at(p.get() - n);
        }
        if a == b {
            return 0;
        }
        self.pos.drain(a..b);
        let min = self.min;
        if self.at.drain(a..b).any(|x| x == min) {
            self.recompute_min();
        }
        self.shrink();
        b - a
    }

    /// Moves the deadlines of elements `from..` into a new table, their
    /// positions counted from `from`.
    pub(crate) fn split_off(&mut self, from: usize) -> Deadlines<P> {
        let k = self.lower(from);
        let mut moved = Deadlines {
            pos: self.pos.split_off(k),
            at: self.at.split_off(k),
            min: u64::MAX,
        };
        for p in &mut moved.pos {
            *p = P::at(p.get() - from);
        }
        moved.recompute_min();
        if moved.min <= self.min {
            self.recompute_min();
        }
        self.shrink();
        moved
    }

    /// Appends `other`'s deadlines for elements now at `base + position`
    /// (all after this table's elements).
    pub(crate) fn append(&mut self, other: &Deadlines<P>, base: usize) {
        self.pos.reserve_exact(other.len());
        self.at.reserve_exact(other.len());
        self.pos
            .extend(other.pos.iter().map(|p| P::at(p.get() + base)));
        self.at.extend_from_slice(&other.at);
        self.min = self.min.min(other.min);
    }

    /// (position, deadline) pairs in position order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.pos
            .iter()
            .map(|p| p.get())
            .zip(self.at.iter().copied())
    }

    /// Position of the first element (in position order) due at `now`.
    pub(crate) fn first_due(&self, now: u64) -> Option<usize> {
        if self.min > now {
            return None;
        }
        self.iter().find(|&(_, at)| at <= now).map(|(i, _)| i)
    }

    fn shrink(&mut self) {
        if self.pos.capacity() >= 2 * self.pos.len() + 8 {
            let want = self.pos.len() + self.pos.len() / 4;
            self.pos.shrink_to(want);
            self.at.shrink_to(want);
        }
    }

    /// Positions below `len`, strictly ascending, real deadlines, exact
    /// minimum.
    #[cfg(test)]
    pub(crate) fn check(&self, len: usize) -> Result<(), String> {
        if self.pos.len() != self.at.len() {
            return Err("deadline vectors differ in length".into());
        }
        if self.pos.windows(2).any(|w| w[0] >= w[1]) {
            return Err("deadline positions not ascending".into());
        }
        if self.pos.last().is_some_and(|p| p.get() >= len) {
            return Err("deadline position out of range".into());
        }
        if self.at.contains(&NO_TTL) {
            return Err("NO_TTL stored as a deadline".into());
        }
        if self.min != self.at.iter().copied().min().unwrap_or(u64::MAX) {
            return Err("stale deadline minimum".into());
        }
        Ok(())
    }
}

/// A compact set's deadline table: u16 positions unless the listpack has
/// grown past what they address.
#[derive(Clone, Debug)]
pub(crate) enum CompactDeadlines {
    Narrow(Deadlines<u16>),
    Wide(Deadlines<u32>),
}

/// Runs `$e` on the table inside a [`CompactDeadlines`], whichever width.
macro_rules! each {
    ($t:expr, $d:ident => $e:expr) => {
        match $t {
            CompactDeadlines::Narrow($d) => $e,
            CompactDeadlines::Wide($d) => $e,
        }
    };
}

impl Default for CompactDeadlines {
    fn default() -> Self {
        CompactDeadlines::Narrow(Deadlines::default())
    }
}

impl CompactDeadlines {
    pub(crate) fn len(&self) -> usize {
        each!(self, d => d.len())
    }
    pub(crate) fn is_empty(&self) -> bool {
        each!(self, d => d.is_empty())
    }
    pub(crate) fn min(&self) -> u64 {
        each!(self, d => d.min())
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        each!(self, d => d.heap_bytes())
    }
    pub(crate) fn get(&self, i: usize) -> u64 {
        each!(self, d => d.get(i))
    }
    /// Sets a deadline; `len` is the listpack's length (for the width).
    pub(crate) fn set(&mut self, i: usize, at: u64, len: usize) -> u64 {
        self.fit(len);
        each!(self, d => d.set(i, at, len))
    }
    pub(crate) fn clear(&mut self, i: usize) -> u64 {
        each!(self, d => d.clear(i))
    }
    /// An element was inserted at `i`, making the listpack `len` long.
    pub(crate) fn shift_insert(&mut self, i: usize, len: usize) {
        self.fit(len);
        each!(self, d => d.shift_insert(i))
    }
    pub(crate) fn remove_range(&mut self, from: usize, to: usize) -> usize {
        each!(self, d => d.remove_range(from, to))
    }
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, u64)) {
        each!(self, d => d.iter().for_each(|(i, at)| f(i, at)))
    }
    #[cfg(test)]
    pub(crate) fn check(&self, len: usize) -> Result<(), String> {
        each!(self, d => d.check(len))
    }

    /// Widens positions so that a listpack of `len` elements fits.
    fn fit(&mut self, len: usize) {
        if let CompactDeadlines::Narrow(d) = self
            && len > usize::from(u16::MAX) + 1
        {
            let wide = Deadlines {
                pos: d.pos.iter().map(|&p| u32::from(p)).collect(),
                at: std::mem::take(&mut d.at),
                min: d.min,
            };
            *self = CompactDeadlines::Wide(wide);
        }
    }
}

impl ZSet {
    /// `member`'s deadline: None if there is no such member, `Some(NO_TTL)`
    /// if it has none.
    pub(crate) fn expire_at(&self, member: &[u8]) -> Option<u64> {
        match &self.repr {
            Repr::Compact(lp) => lp.expire_at(member),
            Repr::Skip(sl) => sl.expire_at(member),
        }
    }

    /// Sets (or with [`NO_TTL`] clears) an existing member's deadline;
    /// false if there is no such member.
    pub fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        match &mut self.repr {
            Repr::Compact(lp) => lp.set_expire(member, at),
            Repr::Skip(sl) => sl.set_expire(member, at),
        }
    }

    /// Drops `member`'s TTL, if any (the member need not exist).
    pub(super) fn clear_ttl(&mut self, member: &[u8]) {
        if self.has_ttls() {
            self.set_expire(member, NO_TTL);
        }
    }

    /// A lower bound on the earliest member deadline (exact for compact
    /// sets; for skiplist sets it may be early, never late, until
    /// [`expire_members`](Self::expire_members) completes a pass); None if
    /// no member has a TTL.
    pub(crate) fn min_deadline(&self) -> Option<u64> {
        match &self.repr {
            Repr::Compact(lp) => lp.min_deadline(),
            Repr::Skip(sl) => sl.list().min_deadline(),
        }
    }

    /// Number of members with a TTL.
    pub(crate) fn ttl_count(&self) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.ttl_count(),
            Repr::Skip(sl) => sl.list().ttl_count(),
        }
    }

    /// Whether any member has a TTL (RENAME, COPY and DEBUG paths).
    pub(crate) fn has_ttls(&self) -> bool {
        self.ttl_count() > 0
    }

    /// Removes up to `max` members whose deadline is at or before `now`;
    /// `removed` sees each removed member with its score. Returns the
    /// number of members removed. Work is bounded by `max`: a skiplist set
    /// also visits at most a multiple of `max` nodes, resuming where the
    /// previous call stopped, so 0 may mean "not done looking yet" (the
    /// lower bound then stays where it was). With `max == usize::MAX` no
    /// due member is left.
    pub(crate) fn expire_members(
        &mut self,
        now: u64,
        max: usize,
        removed: impl FnMut(&[u8], f64),
    ) -> usize {
        match &mut self.repr {
            Repr::Compact(lp) => lp.expire_members(now, max, removed),
            Repr::Skip(sl) => expire_skip(sl, now, max, removed),
        }
    }

    /// True if the set is non-empty and every member's deadline is at or
    /// before `now` (KEYS and SCAN skip such a key).
    pub(crate) fn all_expired(&self, now: u64) -> bool {
        self.ttl_count() >= self.len() && self.all_gone(now, |_| false)
    }

    /// True if the set is non-empty and every member is either past its
    /// deadline at `now` or `aged` by its score (a window rule's test).
    pub(crate) fn all_gone(&self, now: u64, aged: impl Fn(f64) -> bool) -> bool {
        let gone = |s: f64, at: u64| aged(s) || (at != NO_TTL && at <= now);
        !self.is_empty()
            && match &self.repr {
                Repr::Compact(lp) => lp.all_with_deadlines(gone),
                Repr::Skip(sl) => sl.list().all_with_deadlines(|_, s, at| gone(s, at)),
            }
    }

    /// Checks the deadline tables (called by `check_invariants`).
    #[cfg(test)]
    pub(super) fn check_ttl_invariants(&self) -> Result<(), String> {
        if let Some(at) = self.min_deadline() {
            let mut earliest = u64::MAX;
            self.for_each_deadline(|_, d| earliest = earliest.min(d));
            if at > earliest {
                return Err(format!("deadline bound {at} after earliest {earliest}"));
            }
        } else if self.ttl_count() != 0 {
            return Err("members with TTLs but no bound".into());
        }
        Ok(())
    }

    /// Visits (rank, deadline) for each member with a TTL, in rank order.
    #[cfg(test)]
    pub(crate) fn for_each_deadline(&self, f: impl FnMut(usize, u64)) {
        match &self.repr {
            Repr::Compact(lp) => lp.for_each_deadline(f),
            Repr::Skip(sl) => sl.list().for_each_deadline(f),
        }
    }
}

/// Skiplist half of [`ZSet::expire_members`].
fn expire_skip(
    sl: &mut SkipList,
    now: u64,
    max: usize,
    mut removed: impl FnMut(&[u8], f64),
) -> usize {
    // Nodes with nothing due cost O(1) each; a multiple of `max` of them
    // per call keeps a sweeper batch bounded however large the set.
    let mut visits = max.saturating_mul(4).max(64);
    let mut n = 0;
    let mut member = Vec::new();
    while n < max {
        let Some(m) = sl.list_mut().next_due(now, &mut visits) else {
            break;
        };
        member.clear();
        member.extend_from_slice(m);
        match sl.remove(&member) {
            Some(score) => removed(&member, score),
            None => break,
        }
        n += 1;
    }
    n
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
        for cap in [None, Some(2)] {
            let mut z = match cap {
                None => ZSet::new(),
                Some(c) => {
                    let mut z = ZSet::with_node_capacity(c);
                    z.convert_to_skiplist();
                    z
                }
            };
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
            z.check_invariants().unwrap();
            let mut seen = Vec::new();
            assert_eq!(
                z.expire_members(100, usize::MAX, |m, s| seen.push((m.to_vec(), s))),
                1
            );
            assert_eq!(seen, vec![(b"b".to_vec(), 2.0)]);
            assert!(!z.has_ttls());
            assert_eq!(z.min_deadline(), None);
            assert_eq!(z.len(), 2);
            z.check_invariants().unwrap();
        }
    }

    #[test]
    fn batches_are_bounded_and_removed_members_leave_nothing() {
        let mut z = ZSet::new();
        for i in 0..10u8 {
            add(&mut z, &[i], i as f64, AddFlags::default());
            z.set_expire(&[i], 5);
        }
        assert!(z.all_expired(5) && !z.all_expired(4));
        assert_eq!(z.expire_members(5, 3, |_, _| {}), 3);
        assert_eq!(z.len(), 7);
        // A popped member takes its deadline with it.
        z.pop(true, 1);
        assert_eq!(z.ttl_count(), 6);
        add(&mut z, &[9], 9.0, AddFlags::default());
        assert_eq!(z.expire_at(&[9]), Some(NO_TTL));
        assert_eq!(z.expire_members(5, usize::MAX, |_, _| {}), 6);
        assert_eq!(z.len(), 1);
        assert!(!z.has_ttls());
    }

    #[test]
    fn skiplist_bound_is_early_then_exact_and_sweeps_resume() {
        let mut z = ZSet::with_node_capacity(4);
        z.convert_to_skiplist();
        for i in 0..400u32 {
            let m = i.to_be_bytes();
            add(&mut z, &m, f64::from(i), AddFlags::default());
            z.set_expire(&m, 1000 + u64::from(i));
        }
        assert_eq!(z.min_deadline(), Some(1000));
        // Range removals drop their deadlines; the bound may stay early.
        z.remove_range_by_rank(0, 99, |_, _| {});
        assert_eq!(z.ttl_count(), 300);
        assert!(z.min_deadline().is_some_and(|b| b <= 1100));
        z.check_invariants().unwrap();
        // Small batches with nothing due make progress and end exact.
        let mut calls = 0;
        while z.min_deadline() != Some(1100) {
            assert_eq!(z.expire_members(999, 1, |_, _| {}), 0);
            calls += 1;
            assert!(calls < 1000, "the pass never completed");
        }
        assert!(calls > 1, "one small batch visited every node");
        // Then everything due goes, across calls.
        let mut gone = 0;
        while gone < 50 {
            gone += z.expire_members(1149, 7, |_, _| {});
        }
        assert_eq!(gone, 50);
        assert_eq!(z.expire_members(1149, usize::MAX, |_, _| {}), 0);
        assert_eq!(z.len(), 250);
        z.check_invariants().unwrap();
    }
}
