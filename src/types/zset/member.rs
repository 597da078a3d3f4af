//! [`Member`]: a sorted-set member as the set hands it out, borrowed in two
//! parts.
//!
//! The compact encoding stores the prefix its members all share once, ahead
//! of the records (see [`listpack`](super::listpack)), so a member there is
//! that shared head followed by the record's own tail. Handing both out as
//! borrowed slices keeps range replies and scans free of copies; a large
//! set's members have an empty head. Comparisons, hashing and equality are
//! those of the whole byte string.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A member's bytes: `head` then `tail`.
#[derive(Clone, Copy)]
pub struct Member<'a> {
    head: &'a [u8],
    tail: &'a [u8],
}

impl<'a> Member<'a> {
    /// The member `head ++ tail`.
    #[inline]
    pub(crate) fn new(head: &'a [u8], tail: &'a [u8]) -> Self {
        Member { head, tail }
    }

    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Unused in the crate; kept beside the public `len` (clippy's
    /// `len_without_is_empty`), which the benches call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The two parts, to be written one after the other.
    #[inline]
    pub(crate) fn parts(&self) -> (&'a [u8], &'a [u8]) {
        (self.head, self.tail)
    }

    /// The bytes, borrowed when the member is in one piece.
    pub fn to_cow(&self) -> Cow<'a, [u8]> {
        if self.head.is_empty() {
            Cow::Borrowed(self.tail)
        } else {
            Cow::Owned(self.to_vec())
        }
    }

    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.len());
        self.append_to(&mut v);
        v
    }

    /// Appends the bytes to `out`.
    pub(crate) fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.head);
        out.extend_from_slice(self.tail);
    }

    /// The bytes in one slice: the member itself when it is in one piece,
    /// else joined in `scratch` (reused across a loop, so walking a
    /// compact set allocates once, not per member).
    pub(crate) fn joined<'s>(&self, scratch: &'s mut Vec<u8>) -> &'s [u8]
    where
        'a: 's,
    {
        if self.head.is_empty() {
            return self.tail;
        }
        scratch.clear();
        self.append_to(scratch);
        scratch
    }

    /// Orders this member against a whole byte string.
    pub(crate) fn cmp_bytes(&self, other: &[u8]) -> Ordering {
        let h = self.head.len().min(other.len());
        // The whole head against as much of `other`: equal only when
        // `other` starts with the whole head; otherwise ordered as the whole
        // member would be (a head that `other` stops inside is the greater).
        match self.head.cmp(&other[..h]) {
            Ordering::Equal => self.tail.cmp(&other[h..]),
            o => o,
        }
    }
}

impl<'a> From<&'a [u8]> for Member<'a> {
    #[inline]
    fn from(b: &'a [u8]) -> Self {
        Member { head: &[], tail: b }
    }
}

impl PartialEq<[u8]> for Member<'_> {
    fn eq(&self, other: &[u8]) -> bool {
        self.len() == other.len() && self.cmp_bytes(other) == Ordering::Equal
    }
}

impl PartialEq<&[u8]> for Member<'_> {
    fn eq(&self, other: &&[u8]) -> bool {
        *self == **other
    }
}

impl PartialEq for Member<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Member<'_> {}

impl PartialOrd for Member<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Member<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        if other.head.is_empty() {
            return self.cmp_bytes(other.tail);
        }
        if self.head.is_empty() {
            return other.cmp_bytes(self.tail).reverse();
        }
        // Both in two parts (two compact sets' members): rare enough that
        // a byte-wise walk will do.
        let a = self.head.iter().chain(self.tail);
        let b = other.head.iter().chain(other.tail);
        a.cmp(b)
    }
}

impl Hash for Member<'_> {
    /// As the whole string's bytes, so the same member hashes alike
    /// whichever way it is split.
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        state.write(self.head);
        state.write(self.tail);
    }
}

impl fmt::Debug for Member<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.to_cow()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn split(s: &[u8], at: usize) -> Member<'_> {
        Member::new(&s[..at], &s[at..])
    }

    #[test]
    fn a_split_member_compares_hashes_and_copies_as_its_bytes() {
        let words: [&[u8]; 7] = [b"", b"a", b"ab", b"abc", b"abd", b"b", b"member01"];
        let h = std::collections::hash_map::RandomState::new();
        for x in words {
            for at in 0..=x.len() {
                let m = split(x, at);
                assert_eq!(m.len(), x.len());
                assert_eq!(m.to_vec(), x);
                assert_eq!(&*m.to_cow(), x);
                assert_eq!(h.hash_one(m), h.hash_one(Member::from(x)));
                for y in words {
                    assert_eq!(m.cmp_bytes(y), x.cmp(y), "{x:?} vs {y:?} split at {at}");
                    assert_eq!(m == *y, x == y);
                    for at2 in 0..=y.len() {
                        assert_eq!(m.cmp(&split(y, at2)), x.cmp(y));
                    }
                }
            }
        }
    }
}
