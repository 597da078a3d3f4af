//! The set value: Redis 7.0's `intset` / `hashtable` pair of encodings
//! (7.0 has no set listpack).
//!
//! While every member is an integer in `string2ll` form and there are at
//! most `set-max-intset-entries` of them, the set is a sorted `Vec<i64>`, as
//! Redis's intset is, so SMEMBERS, SSCAN and the set-algebra replies list
//! small integer sets in exactly Redis's (ascending) order. The first
//! non-integer member or one member too many turns it into a [`Dict`]; like
//! Redis it never converts back.

use std::borrow::Cow;

use rand::Rng;

use crate::types::dict::Dict;
use crate::util::parse_i64;

/// Members, fields and values: inline up to 15 bytes, so a small
/// value's short strings cost no allocation each.
type Bytes = crate::types::small_bytes::SmallBytes;

#[derive(Debug, Clone)]
pub(crate) enum Set {
    Intset(Vec<i64>),
    /// Boxed: the table is twice the size of the intset's `Vec`, and every
    /// key's entry is as large as its largest inline value.
    Table(Box<Dict<Bytes, ()>>),
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
    /// An empty set of the encoding Redis's `setTypeCreate` picks for a
    /// first member.
    pub(crate) fn for_member(member: &[u8]) -> Set {
        if parse_i64(member).is_some() {
            Set::Intset(Vec::new())
        } else {
            Set::Table(Box::default())
        }
    }

    /// The empty intset Redis starts SINTERSTORE/SUNIONSTORE/SDIFFSTORE
    /// results from.
    pub(crate) fn new_intset() -> Set {
        Set::Intset(Vec::new())
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Set::Intset(v) => v.len(),
            Set::Table(d) => d.len(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Set::Intset(_) => "intset",
            Set::Table(_) => "hashtable",
        }
    }

    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        match self {
            Set::Intset(v) => parse_i64(member).is_some_and(|n| v.binary_search(&n).is_ok()),
            Set::Table(d) => d.contains_key(member),
        }
    }

    pub(crate) fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (Set::Intset(v), Member::Int(n)) => v.binary_search(&n).is_ok(),
            (_, m) => m.with_bytes(|b| self.contains(b)),
        }
    }

    fn convert(&mut self) {
        if let Set::Intset(v) = self {
            let mut d = Dict::with_capacity(v.len());
            for n in v.drain(..) {
                d.insert(itoa::Buffer::new().format(n).as_bytes().into(), ());
            }
            *self = Set::Table(Box::new(d));
        }
    }

    /// Adds `member`; true if it is new (Redis's `setTypeAdd`).
    pub(crate) fn add(&mut self, member: &[u8], max_intset: usize) -> bool {
        if let Set::Intset(v) = self {
            match parse_i64(member) {
                Some(n) => {
                    let Err(at) = v.binary_search(&n) else {
                        return false;
                    };
                    v.insert(at, n);
                    if v.len() > max_intset.min(1 << 30) {
                        self.convert();
                    }
                    return true;
                }
                None => self.convert(),
            }
        }
        match self {
            Set::Table(d) => d.insert(member.into(), ()).is_none(),
            Set::Intset(_) => false,
        }
    }

    pub(crate) fn add_member(&mut self, m: Member<'_>, max_intset: usize) -> bool {
        m.with_bytes(|b| self.add(b, max_intset))
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
            Set::Table(d) => d.remove(member).is_some(),
        }
    }

    /// Every member: ascending for an intset, table order otherwise.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = Member<'_>> + '_> {
        match self {
            Set::Intset(v) => Box::new(v.iter().map(|&n| Member::Int(n))),
            Set::Table(d) => Box::new(d.iter().map(|(k, _)| Member::Bytes(k))),
        }
    }

    pub(crate) fn random(&self, rng: &mut impl Rng) -> Option<Member<'_>> {
        match self {
            Set::Intset(v) if v.is_empty() => None,
            Set::Intset(v) => Some(Member::Int(v[rng.random_range(0..v.len())])),
            Set::Table(d) => d.random(rng).map(|(k, _)| Member::Bytes(k)),
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
            Set::Table(d) => d.sample(rng, count, |k, _| f(Member::Bytes(k))),
        }
    }

    /// Removes and returns a random member.
    pub(crate) fn pop(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        let m = self.random(rng)?.to_bytes().into_owned();
        self.remove(&m);
        Some(m)
    }

    /// One SSCAN step: an intset is returned whole with cursor 0, a table
    /// walks from `cursor`.
    pub(crate) fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(Member<'_>)) -> u64 {
        match self {
            Set::Intset(v) => {
                v.iter().for_each(|&n| f(Member::Int(n)));
                0
            }
            Set::Table(d) => d.scan(cursor, count, |k, _| f(Member::Bytes(k))),
        }
    }

    pub(crate) fn mem_usage(&self) -> usize {
        match self {
            Set::Intset(v) => v.capacity() * 8,
            Set::Table(d) => {
                d.mem_usage()
                    + d.iter()
                        .map(|(k, _)| Bytes::heap_for(k.len()))
                        .sum::<usize>()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(s: &Set) -> Vec<Vec<u8>> {
        s.iter().map(|m| m.to_bytes().into_owned()).collect()
    }

    #[test]
    fn intset_is_sorted_and_rejects_non_canonical_integers() {
        let mut s = Set::for_member(b"3");
        assert!(s.add(b"3", 512));
        assert!(s.add(b"-1", 512));
        assert!(s.add(b"10", 512));
        assert!(!s.add(b"10", 512));
        assert_eq!(
            members(&s),
            vec![b"-1".to_vec(), b"3".to_vec(), b"10".to_vec()]
        );
        assert!(s.contains(b"3"));
        assert!(!s.contains(b"03"));
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"007", 512), "not string2ll form: a string member");
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"007") && s.contains(b"3") && !s.contains(b"7"));
    }

    #[test]
    fn converts_above_intset_limit_and_never_back() {
        let mut s = Set::new_intset();
        for i in 0..4 {
            s.add(i.to_string().as_bytes(), 4);
        }
        assert_eq!(s.encoding(), "intset", "exactly at the limit stays compact");
        s.add(b"4", 4);
        assert_eq!(s.encoding(), "hashtable");
        for i in 0..5 {
            assert!(s.remove(i.to_string().as_bytes()));
        }
        assert!(s.is_empty());
        assert_eq!(s.encoding(), "hashtable");
    }

    #[test]
    fn first_member_picks_the_encoding() {
        assert_eq!(Set::for_member(b"12").encoding(), "intset");
        assert_eq!(Set::for_member(b"a").encoding(), "hashtable");
        assert_eq!(Set::for_member(b"-0").encoding(), "hashtable");
    }

    #[test]
    fn pop_sample_and_scan() {
        let mut s = Set::new_intset();
        for i in 0..10 {
            s.add(i.to_string().as_bytes(), 512);
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
}
