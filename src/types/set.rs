//! The set value: Redis 7.2+'s `intset` / `listpack` / `hashtable`
//! encodings.
//!
//! While every member is an integer in `string2ll` form and there are at
//! most `set-max-intset-entries` of them, the set is a sorted `Vec<i64>`, as
//! Redis's intset is, so SMEMBERS, SSCAN and the set-algebra replies list
//! small integer sets in exactly Redis's (ascending) order. A small set
//! with other members (at most `set-max-listpack-entries`, none longer than
//! `set-max-listpack-value`) is a `Vec` in insertion order, as Redis's
//! listpack is, so its replies come in that order. Past those limits it
//! becomes a [`Dict`]; like Redis it never converts back (but SINTERSTORE
//! may store an all-integer result as an intset).
//!
//! Member TTLs (Redis 8.12's SEXPIRE family) are laid out as hash field
//! TTLs are ([`crate::types::hash`]): a set that never had one pays nothing;
//! the first TTL turns it into [`Set::Ex`] for good, a table whose members
//! carry an 8-byte deadline each (0: none) — 8 bytes per member, never a
//! second copy of the member in a side map — plus, per set, the same
//! [`Deadlines`] a hash keeps: a lower bound on the earliest deadline (what
//! the keyspace schedules the set by) and the count of members that have
//! one. Expired members are removed by the same bounded table pass as
//! expired hash fields ([`expire_table`]).

use std::borrow::Cow;

use rand::Rng;

use crate::types::dict::Dict;
use crate::types::hash::{Deadlines, NO_TTL, expire_table};
use crate::util::parse_i64;

/// Members, fields and values: inline up to 15 bytes, so a small
/// value's short strings cost no allocation each.
type Bytes = crate::types::small_bytes::SmallBytes;

/// `set-max-intset-entries`, `set-max-listpack-entries` and
/// `set-max-listpack-value`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SetLimits {
    pub(crate) intset: usize,
    pub(crate) lp_entries: usize,
    pub(crate) lp_value: usize,
}

impl SetLimits {
    /// Redis's defaults.
    #[cfg(test)]
    pub(crate) const DEFAULT: SetLimits = SetLimits {
        intset: 512,
        lp_entries: 128,
        lp_value: 64,
    };

    /// Redis's `intsetMaxEntries`: at most 2^30.
    fn intset_max(&self) -> usize {
        self.intset.min(1 << 30)
    }
}

/// Decimal digits of `n` with its sign (Redis's `sdigits10`).
fn sdigits10(n: i64) -> usize {
    itoa::Buffer::new().format(n).len()
}

#[derive(Debug, Clone)]
pub(crate) enum Set {
    Intset(Vec<i64>),
    /// Redis's listpack: members in insertion order (a removal closes the gap).
    Listpack(Vec<Bytes>),
    /// Boxed: the table is twice the size of the intset's `Vec`, and every
    /// key's entry is as large as its largest inline value.
    Table(Box<Dict<Bytes, ()>>),
    /// A set that has (or had) member TTLs: each member with its deadline
    /// (Unix ms; [`NO_TTL`]: none).
    Ex {
        members: Box<Dict<Bytes, u64>>,
        ttl: Box<Deadlines>,
    },
}

/// A member as stored: intsets hold numbers, tables hold bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    pub(crate) fn to_bytes(self) -> Cow<'a, [u8]> {
        match self {
            Member::Int(n) => Cow::Owned(itoa::Buffer::new().format(n).as_bytes().to_vec()),
            Member::Bytes(b) => Cow::Borrowed(b),
        }
    }

    /// Calls `f` with the member's bytes without allocating.
    pub(crate) fn with_bytes<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Member::Int(n) => f(itoa::Buffer::new().format(n).as_bytes()),
            Member::Bytes(b) => f(b),
        }
    }
}

impl Set {
    /// The hash table's figures (DEBUG HTSTATS-KEY), when the set is one.
    pub(crate) fn dict_stats(&self, full: bool) -> Option<crate::types::dict::DictStats> {
        match self {
            Set::Table(d) => Some(d.stats(full)),
            Set::Ex { members, .. } => Some(members.stats(full)),
            Set::Intset(_) | Set::Listpack(_) => None,
        }
    }

    /// An empty set of the encoding Redis's `setTypeCreate` picks for a
    /// first member and `size_hint` members to come.
    pub(crate) fn for_member(member: &[u8], size_hint: usize, lim: SetLimits) -> Set {
        if parse_i64(member).is_some() && size_hint <= lim.intset {
            Set::Intset(Vec::new())
        } else if size_hint <= lim.lp_entries {
            Set::Listpack(Vec::new())
        } else {
            Set::Table(Box::default())
        }
    }

    /// An empty hashtable set (Redis's `createSetObject`).
    pub(crate) fn new_table() -> Set {
        Set::Table(Box::default())
    }

    /// An empty listpack set (Redis's `createSetListpackObject`).
    pub(crate) fn new_listpack() -> Set {
        Set::Listpack(Vec::new())
    }

    /// A set loaded from a set listpack (RDB type 20): in the listpack's
    /// order, a table if it has more than `set-max-listpack-entries`
    /// members (Redis keeps long members there). None on a duplicate.
    pub(crate) fn from_listpack(members: Vec<Vec<u8>>, lim: SetLimits) -> Option<Set> {
        let mut seen = std::collections::HashSet::with_capacity(members.len());
        if !members.iter().all(|m| seen.insert(&m[..])) {
            return None;
        }
        drop(seen);
        let mut s = Set::Listpack(members.iter().map(|m| Bytes::from(&m[..])).collect());
        if s.len() > lim.lp_entries {
            s.convert();
        }
        Some(s)
    }

    /// Before adding `size_hint` members: a compact set that could not hold
    /// them becomes a table (Redis's `setTypeMaybeConvert`).
    pub(crate) fn maybe_convert(&mut self, size_hint: usize, lim: SetLimits) {
        let over = match self {
            Set::Listpack(_) => size_hint > lim.lp_entries,
            Set::Intset(_) => size_hint > lim.intset,
            _ => false,
        };
        if over {
            self.convert();
        }
    }

    /// A set whose members are all integers, and few enough, becomes an
    /// intset (Redis's `maybeConvertToIntset`, for SINTERSTORE results).
    pub(crate) fn maybe_to_intset(&mut self, lim: SetLimits) {
        if matches!(self, Set::Intset(_) | Set::Ex { .. }) || self.len() > lim.intset_max() {
            return;
        }
        let mut v: Vec<i64> = Vec::with_capacity(self.len());
        for m in self.iter() {
            match m {
                Member::Int(n) => v.push(n),
                Member::Bytes(b) => match parse_i64(b) {
                    Some(n) => v.push(n),
                    None => return,
                },
            }
        }
        v.sort_unstable();
        *self = Set::Intset(v);
    }

    /// The empty intset Redis starts SINTERSTORE/SUNIONSTORE/SDIFFSTORE
    /// results from.
    pub(crate) fn new_intset() -> Set {
        Set::Intset(Vec::new())
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Set::Intset(v) => v.len(),
            Set::Listpack(v) => v.len(),
            Set::Table(d) => d.len(),
            Set::Ex { members, .. } => members.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Set::Intset(_) => "intset",
            Set::Listpack(_) => "listpack",
            Set::Table(_) | Set::Ex { .. } => "hashtable",
        }
    }

    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Intset(v) => parse_i64(member).is_some_and(|n| v.binary_search(&n).is_ok()),
            Set::Listpack(v) => v.iter().any(|m| **m == *member),
            Set::Table(d) => d.contains_key(member),
            Set::Ex { members, .. } => members.contains_key(member),
        }
    }

    pub(crate) fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (Set::Intset(v), Member::Int(n)) => v.binary_search(&n).is_ok(),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    /// To a table, members added in the current order.
    fn convert(&mut self) {
        match self {
            Set::Intset(v) => {
                let mut d = Dict::with_capacity(v.len());
                for n in v.drain(..) {
                    d.insert(itoa::Buffer::new().format(n).as_bytes().into(), ());
                }
                *self = Set::Table(Box::new(d));
            }
            Set::Listpack(v) => {
                let mut d = Dict::with_capacity(v.len());
                for m in v.drain(..) {
                    d.insert(m, ());
                }
                *self = Set::Table(Box::new(d));
            }
            _ => {}
        }
    }

    /// Adds `member`; true if it is new (Redis's `setTypeAdd`).
    pub(crate) fn add(&mut self, member: &[u8], lim: SetLimits) -> bool {
        if let Set::Intset(v) = self {
            match parse_i64(member) {
                Some(n) => {
                    let Err(at) = v.binary_search(&n) else {
                        return false;
                    };
                    v.insert(at, n);
                    if v.len() > lim.intset_max() {
                        self.convert();
                    }
                    return true;
                }
                None => {
                    let widest = match (v.first(), v.last()) {
                        (Some(&a), Some(&b)) => sdigits10(a).max(sdigits10(b)),
                        _ => 0,
                    };
                    if v.len() < lim.lp_entries
                        && member.len() <= lim.lp_value
                        && widest <= lim.lp_value
                    {
                        let mut lp: Vec<Bytes> = Vec::with_capacity(v.len() + 1);
                        for &n in v.iter() {
                            lp.push(itoa::Buffer::new().format(n).as_bytes().into());
                        }
                        lp.push(member.into());
                        *self = Set::Listpack(lp);
                        return true;
                    }
                    self.convert();
                }
            }
        }
        if let Set::Listpack(v) = self {
            if v.iter().any(|m| **m == *member) {
                return false;
            }
            if v.len() < lim.lp_entries && member.len() <= lim.lp_value {
                v.push(member.into());
                return true;
            }
            self.convert();
        }
        match self {
            Set::Table(d) => d.insert(member.into(), ()).is_none(),
            Set::Ex { members, .. } => {
                if members.contains_key(member) {
                    return false;
                }
                members.insert(member.into(), NO_TTL);
                true
            }
            Set::Intset(_) | Set::Listpack(_) => false,
        }
    }

    pub(crate) fn add_member(&mut self, m: Member<'_>, lim: SetLimits) -> bool {
        m.with_bytes(|b| self.add(b, lim))
    }

    /// Removes `member`; true if it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            Set::Intset(v) => match parse_i64(member).map(|n| v.binary_search(&n)) {
                Some(Ok(i)) => {
                    v.remove(i);
                    true
                }
                _ => false,
            },
            Set::Listpack(v) => match v.iter().position(|m| **m == *member) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            Set::Table(d) => d.remove(member).is_some(),
            Set::Ex { members, ttl } => match members.remove(member) {
                Some((_, at)) => {
                    ttl.changed(at, NO_TTL);
                    true
                }
                None => false,
            },
        }
    }

    /// Every member: ascending for an intset, insertion order for a
    /// listpack, table order otherwise.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Intset(v) => Box::new(v.iter().map(|&n| Member::Int(n))),
            Set::Listpack(v) => Box::new(v.iter().map(|m| Member::Bytes(m))),
            Set::Table(d) => Box::new(d.iter().map(|(k, _)| Member::Bytes(k))),
            Set::Ex { members, .. } => Box::new(members.iter().map(|(k, _)| Member::Bytes(k))),
        }
    }

    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<Member<'_>> {
        match self {
            Set::Intset(v) if v.is_empty() => None,
            Set::Intset(v) => Some(Member::Int(v[rng.random_range(0..v.len())])),
            Set::Listpack(v) if v.is_empty() => None,
            Set::Listpack(v) => Some(Member::Bytes(&v[rng.random_range(0..v.len())])),
            Set::Table(d) => d.random(rng).map(|(k, _)| Member::Bytes(k)),
            Set::Ex { members, .. } => members.random(rng).map(|(k, _)| Member::Bytes(k)),
        }
    }

    /// Calls `f` on `min(count, len)` distinct random members.
    pub(crate) fn sample(&self, rng: &mut impl Rng, count: usize, mut f: impl FnMut(Member<'_>)) {
        match self {
            Set::Intset(v) => {
                let n = v.len();
                for i in rand::seq::index::sample(rng, n, count.min(n)) {
                    f(Member::Int(v[i]));
                }
            }
            Set::Listpack(v) => {
                let n = v.len();
                for i in rand::seq::index::sample(rng, n, count.min(n)) {
                    f(Member::Bytes(&v[i]));
                }
            }
            Set::Table(d) => d.sample(rng, count, |k, _| f(Member::Bytes(k))),
            Set::Ex { members, .. } => members.sample(rng, count, |k, _| f(Member::Bytes(k))),
        }
    }

    /// Removes and returns a random member.
    pub(crate) fn pop(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        let m = self.random(rng)?.to_bytes().into_owned();
        self.remove(&m);
        Some(m)
    }

    /// One SSCAN step: an intset or a listpack is returned whole with
    /// cursor 0, a table walks from `cursor`.
    pub(crate) fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            Set::Intset(v) => {
                v.iter().for_each(|&n| f(Member::Int(n)));
                0
            }
            Set::Listpack(v) => {
                v.iter().for_each(|m| f(Member::Bytes(m)));
                0
            }
            Set::Table(d) => d.scan(cursor, count, |k, _| f(Member::Bytes(k))),
            Set::Ex { members, .. } => members.scan(cursor, count, |k, _| f(Member::Bytes(k))),
        }
    }

    pub(crate) fn mem_usage(&self) -> usize {
        match self {
            Set::Intset(v) => v.capacity() * 8,
            Set::Listpack(v) => {
                v.capacity() * std::mem::size_of::<Bytes>()
                    + v.iter().map(|m| Bytes::heap_for(m.len())).sum::<usize>()
            }
            Set::Table(d) => {
                d.mem_usage()
                    + d.iter()
                        .map(|(k, _)| Bytes::heap_for(k.len()))
                        .sum::<usize>()
            }
            Set::Ex { members, .. } => {
                members.mem_usage()
                    + std::mem::size_of::<Deadlines>()
                    + members
                        .iter()
                        .map(|(k, _)| Bytes::heap_for(k.len()))
                        .sum::<usize>()
            }
        }
    }

    /// Makes the set able to hold member TTLs; for good (as a hash becomes
    /// a `listpackex`).
    pub(crate) fn make_ex(&mut self) {
        if matches!(self, Set::Ex { .. }) {
            return;
        }
        self.convert();
        if let Set::Table(d) = self {
            let mut members = Dict::with_capacity(d.len());
            for (k, ()) in *std::mem::take(d) {
                members.insert(k, NO_TTL);
            }
            *self = Set::Ex {
                members: Box::new(members),
                ttl: Box::new(Deadlines::NONE),
            };
        }
    }

    /// `member`'s deadline: None if there is no such member, `Some(NO_TTL)`
    /// if it has none.
    pub(crate) fn expire_at(&self, member: &[u8]) -> Option<u64> {
        match self {
            Set::Ex { members, .. } => members.get(member).copied(),
            s => s.contains(member).then_some(NO_TTL),
        }
    }

    /// Sets (or with [`NO_TTL`] clears) an existing member's deadline;
    /// false if there is no such member. Makes the set an `Ex` set first
    /// when a deadline is set.
    pub(crate) fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        if at == NO_TTL && !matches!(self, Set::Ex { .. }) {
            return self.contains(member);
        }
        if !self.contains(member) {
            return false;
        }
        self.make_ex();
        let Set::Ex { members, ttl } = self else {
            return false;
        };
        match members.get_mut(member) {
            Some(cur) => {
                ttl.changed(*cur, at);
                *cur = at;
                true
            }
            None => false,
        }
    }

    /// Whether the set is of the TTL-holding kind and some member has one.
    pub(crate) fn has_ttls(&self) -> bool {
        self.volatile_members() > 0
    }

    /// How many members have a deadline.
    pub(crate) fn volatile_members(&self) -> usize {
        match self {
            Set::Ex { ttl, .. } => ttl.volatile(),
            _ => 0,
        }
    }

    /// A lower bound on the earliest member deadline; None if no member
    /// has one (as far as the bound knows).
    pub(crate) fn min_deadline(&self) -> Option<u64> {
        match self {
            Set::Ex { ttl, .. } => ttl.min(),
            _ => None,
        }
    }

    /// Removes up to `max` members whose deadline is at or before `now`,
    /// telling `removed` each (what the AOF logs as SREM). `usize::MAX` (a
    /// command is about to see the set) removes every due member and makes
    /// the bound exact; a smaller `max` (the sweeper) bounds the work as
    /// for hash fields.
    pub(crate) fn expire_members_with(
        &mut self,
        now: u64,
        max: usize,
        removed: impl FnMut(&[u8]),
    ) -> usize {
        let Set::Ex { members, ttl } = self else {
            return 0;
        };
        if ttl.min().is_none_or(|m| m > now) {
            return 0;
        }
        let n = expire_table(members, ttl, now, max, |&at| at, removed);
        ttl.expired(n);
        n
    }

    /// True if every member has a deadline at or before `now` (the set is
    /// logically gone; KEYS, SCAN and DBSIZE skip it).
    pub(crate) fn all_expired(&self, now: u64) -> bool {
        match self {
            Set::Ex { members, ttl } if ttl.min().is_some_and(|m| m <= now) => {
                members.iter().all(|(_, &at)| at != NO_TTL && at <= now)
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(intset: usize) -> SetLimits {
        SetLimits {
            intset,
            ..SetLimits::DEFAULT
        }
    }

    fn members(s: &Set) -> Vec<Vec<u8>> {
        s.iter().map(|m| m.to_bytes().into_owned()).collect()
    }

    #[test]
    fn intset_is_sorted_and_rejects_non_canonical_integers() {
        let mut s = Set::for_member(b"3", 1, lim(512));
        assert!(s.add(b"3", lim(512)));
        assert!(s.add(b"-1", lim(512)));
        assert!(s.add(b"10", lim(512)));
        assert!(!s.add(b"10", lim(512)));
        assert_eq!(
            members(&s),
            vec![b"-1".to_vec(), b"3".to_vec(), b"10".to_vec()]
        );
        assert!(s.contains(b"3"));
        assert!(!s.contains(b"03"));
        assert_eq!(s.encoding(), "intset");
        assert!(
            s.add(b"007", lim(512)),
            "not string2ll form: a string member"
        );
        assert_eq!(s.encoding(), "listpack");
        assert_eq!(
            members(&s),
            vec![
                b"-1".to_vec(),
                b"3".to_vec(),
                b"10".to_vec(),
                b"007".to_vec()
            ],
            "the intset's order, then insertion order"
        );
        assert!(s.contains(b"007") && s.contains(b"3") && !s.contains(b"7"));
    }

    #[test]
    fn converts_above_intset_limit_and_never_back() {
        let mut s = Set::new_intset();
        for i in 0..4 {
            s.add(i.to_string().as_bytes(), lim(4));
        }
        assert_eq!(s.encoding(), "intset", "exactly at the limit stays compact");
        s.add(b"4", lim(4));
        assert_eq!(s.encoding(), "hashtable");
        for i in 0..5 {
            assert!(s.remove(i.to_string().as_bytes()));
        }
        assert!(s.is_empty());
        assert_eq!(s.encoding(), "hashtable");
    }

    #[test]
    fn first_member_picks_the_encoding() {
        let d = SetLimits::DEFAULT;
        assert_eq!(Set::for_member(b"12", 1, d).encoding(), "intset");
        assert_eq!(Set::for_member(b"a", 1, d).encoding(), "listpack");
        assert_eq!(Set::for_member(b"-0", 1, d).encoding(), "listpack");
        assert_eq!(Set::for_member(b"12", 513, d).encoding(), "hashtable");
        assert_eq!(
            Set::for_member(b"12", 200, lim(100)).encoding(),
            "hashtable"
        );
        assert_eq!(Set::for_member(b"12", 100, lim(50)).encoding(), "listpack");
    }

    #[test]
    fn listpack_keeps_insertion_order_until_a_limit() {
        let l = SetLimits {
            intset: 512,
            lp_entries: 3,
            lp_value: 5,
        };
        let mut s = Set::new_listpack();
        for m in ["c", "a", "b"] {
            assert!(s.add(m.as_bytes(), l));
        }
        assert!(!s.add(b"a", l));
        assert!(s.remove(b"a"));
        assert!(s.add(b"z", l));
        assert_eq!(
            members(&s),
            vec![b"c".to_vec(), b"b".to_vec(), b"z".to_vec()]
        );
        assert_eq!(s.encoding(), "listpack");
        assert!(s.add(b"d", l), "a fourth member passes 3 entries");
        assert_eq!(s.encoding(), "hashtable");
        let mut s = Set::new_listpack();
        assert!(s.add(b"123456", l), "longer than 5 bytes");
        assert_eq!(s.encoding(), "hashtable");
        // An intset whose widest integer is too long goes straight to a table.
        let mut s = Set::new_intset();
        s.add(b"-12345", l);
        s.add(b"x", l);
        assert_eq!(s.encoding(), "hashtable");
        // SINTERSTORE's integer results.
        let mut s = Set::new_listpack();
        s.add(b"5", l);
        s.add(b"1", l);
        s.maybe_to_intset(l);
        assert_eq!(s.encoding(), "intset");
        assert_eq!(members(&s), vec![b"1".to_vec(), b"5".to_vec()]);
    }

    #[test]
    fn pop_sample_and_scan() {
        let mut s = Set::new_intset();
        for i in 0..10 {
            s.add(i.to_string().as_bytes(), lim(512));
        }
        let mut rng = rand::rng();
        let mut got = std::collections::HashSet::new();
        s.sample(&mut rng, 4, |m| {
            got.insert(m.to_bytes().into_owned());
        });
        assert_eq!(got.len(), 4);
        let popped = s.pop(&mut rng).unwrap();
        assert!(!s.contains(&popped));
        assert_eq!(s.len(), 9);
        let mut n = 0;
        assert_eq!(s.scan(999, 1, |_| n += 1), 0);
        assert_eq!(n, 9);
        assert!(Set::new_intset().pop(&mut rng).is_none());
    }

    #[test]
    fn first_ttl_makes_an_ex_set_and_members_keep_their_order_of_kind() {
        let mut s = Set::new_intset();
        for i in 0..3 {
            s.add(i.to_string().as_bytes(), lim(512));
        }
        assert_eq!(s.expire_at(b"1"), Some(NO_TTL));
        assert!(s.set_expire(b"1", NO_TTL), "clearing nothing is fine");
        assert_eq!(s.encoding(), "intset", "no deadline: no conversion");
        assert!(!s.set_expire(b"9", 100));
        assert!(s.set_expire(b"1", 100));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!((s.len(), s.volatile_members()), (3, 1));
        assert_eq!(s.min_deadline(), Some(100));
        assert!(!s.add(b"1", lim(512)), "SADD of a member keeps its TTL");
        assert_eq!(s.expire_at(b"1"), Some(100));
        assert!(s.remove(b"1"));
        assert_eq!(s.volatile_members(), 0);
        assert!(s.set_expire(b"2", 50));
        assert!(!s.all_expired(60));
        assert_eq!(s.expire_members_with(60, usize::MAX, |_| {}), 1);
        assert_eq!((s.len(), s.min_deadline()), (1, None));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Add(u8),
        Remove(u8),
        Expire(u8, u64),
        Persist(u8),
        Tick(u64, usize),
        Pop,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            (0u8..40).prop_map(Op::Add),
            (0u8..40).prop_map(Op::Remove),
            (0u8..40, 1u64..200).prop_map(|(m, d)| Op::Expire(m, d)),
            (0u8..40).prop_map(Op::Persist),
            (0u64..30, prop_oneof![Just(usize::MAX), 1usize..4]).prop_map(|(d, n)| Op::Tick(d, n)),
            Just(Op::Pop),
        ]
    }

    fn name(m: u8) -> Vec<u8> {
        // Half integers (intset first), half strings.
        if m.is_multiple_of(2) {
            m.to_string().into_bytes()
        } else {
            format!("m{m}").into_bytes()
        }
    }

    proptest::proptest! {
        /// Against a map of member -> deadline: what is visible, the
        /// deadlines, the volatile count, the bound, and that expiry passes
        /// remove only due members (all of them when unbounded).
        #[test]
        fn member_ttls_model_based(ops in proptest::collection::vec(op(), 1..200)) {
            use std::collections::BTreeMap;
            let mut s = Set::new_intset();
            let mut model: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
            let mut now = 1000u64;
            let mut rng = rand::rng();
            for op in ops {
                match op {
                    Op::Add(m) => {
                        let m = name(m);
                        proptest::prop_assert_eq!(s.add(&m, lim(8)), !model.contains_key(&m));
                        model.entry(m).or_insert(NO_TTL);
                    }
                    Op::Remove(m) => {
                        let m = name(m);
                        proptest::prop_assert_eq!(s.remove(&m), model.remove(&m).is_some());
                    }
                    Op::Expire(m, d) => {
                        let m = name(m);
                        proptest::prop_assert_eq!(s.set_expire(&m, now + d), model.contains_key(&m));
                        if let Some(at) = model.get_mut(&m) {
                            *at = now + d;
                        }
                    }
                    Op::Persist(m) => {
                        let m = name(m);
                        proptest::prop_assert_eq!(s.set_expire(&m, NO_TTL), model.contains_key(&m));
                        if let Some(at) = model.get_mut(&m) {
                            *at = NO_TTL;
                        }
                    }
                    Op::Tick(d, max) => {
                        now += d;
                        let mut gone = Vec::new();
                        s.expire_members_with(now, max, |m| gone.push(m.to_vec()));
                        proptest::prop_assert!(gone.len() <= max);
                        for m in gone {
                            let at = model.remove(&m);
                            proptest::prop_assert!(at.is_some_and(|at| at != NO_TTL && at <= now));
                        }
                        if max == usize::MAX {
                            proptest::prop_assert!(model.values().all(|&at| at == NO_TTL || at > now));
                            // The bound is exact after a pass; a stale one is
                            // still in the future (nothing due is left behind).
                            proptest::prop_assert!(s.min_deadline().is_none_or(|b| b > now));
                        }
                    }
                    Op::Pop => {
                        let popped = s.pop(&mut rng);
                        proptest::prop_assert_eq!(popped.is_some(), !model.is_empty());
                        if let Some(m) = popped {
                            proptest::prop_assert!(model.remove(&m).is_some());
                        }
                    }
                }
                proptest::prop_assert_eq!(s.len(), model.len());
                let volatile = model.values().filter(|&&a| a != NO_TTL).count();
                proptest::prop_assert_eq!(s.volatile_members(), volatile);
                if let Some(first) = model.values().copied().filter(|&a| a != NO_TTL).min() {
                    proptest::prop_assert!(s.min_deadline().is_some_and(|b| b <= first));
                }
                for (m, &at) in &model {
                    proptest::prop_assert_eq!(s.expire_at(m), Some(at));
                }
                let all = !model.is_empty() && model.values().all(|&a| a != NO_TTL && a <= now);
                proptest::prop_assert_eq!(s.all_expired(now), all);
            }
        }
    }
}
