//! [`SmallBytes`]: the byte strings the server stores by the million,
//! with the short ones inline.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use compact_bytes::CompactBytesSlice;

/// Immutable bytes that are stored by the million: key names, hash fields
/// and values, set members, list elements.
///
/// Why not `Box<[u8]>`: the box is 16 bytes in its slot *and* an
/// allocation of its own, 8 to 16 bytes more for a typical short name.
/// `compact_bytes`'s 16-byte slice keeps up to 15 bytes inline (`z:12345`,
/// `status`, `queued`, a job id) and allocates only longer ones, at exactly
/// their length, as the box did. It behaves as the bytes it holds:
/// equality, order and hash are the slice's, so maps keyed by it are
/// looked up with a `&[u8]`.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SmallBytes(CompactBytesSlice);

impl Deref for SmallBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl AsRef<[u8]> for SmallBytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl Borrow<[u8]> for SmallBytes {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.0.as_slice()
    }
}

// By hand rather than derived: `Borrow<[u8]>` requires the slice's hash and
// order, whatever the wrapped type's own impls do.
impl Hash for SmallBytes {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state)
    }
}

impl PartialOrd for SmallBytes {
    fn partial_cmp(&self, other: &SmallBytes) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SmallBytes {
    fn cmp(&self, other: &SmallBytes) -> std::cmp::Ordering {
        self.0.as_slice().cmp(other.0.as_slice())
    }
}

impl fmt::Debug for SmallBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_slice(), f)
    }
}

impl From<&[u8]> for SmallBytes {
    #[inline]
    fn from(bytes: &[u8]) -> SmallBytes {
        SmallBytes(CompactBytesSlice::new(bytes))
    }
}

impl<const N: usize> From<&[u8; N]> for SmallBytes {
    fn from(bytes: &[u8; N]) -> SmallBytes {
        SmallBytes(CompactBytesSlice::new(bytes))
    }
}

impl From<&Vec<u8>> for SmallBytes {
    fn from(bytes: &Vec<u8>) -> SmallBytes {
        SmallBytes(CompactBytesSlice::new(bytes))
    }
}

impl From<Vec<u8>> for SmallBytes {
    /// Copies a short name inline; a long one keeps the vector's buffer when
    /// it is already exactly sized.
    fn from(bytes: Vec<u8>) -> SmallBytes {
        if bytes.len() <= CompactBytesSlice::MAX_INLINE {
            SmallBytes(CompactBytesSlice::new(&bytes))
        } else {
            SmallBytes(CompactBytesSlice::from(bytes.into_boxed_slice()))
        }
    }
}

impl From<Box<[u8]>> for SmallBytes {
    fn from(bytes: Box<[u8]>) -> SmallBytes {
        if bytes.len() <= CompactBytesSlice::MAX_INLINE {
            SmallBytes(CompactBytesSlice::new(&bytes))
        } else {
            SmallBytes(CompactBytesSlice::from(bytes))
        }
    }
}

impl SmallBytes {
    /// Heap bytes a `SmallBytes` of `len` bytes holds: none when inline.
    pub(crate) fn heap_for(len: usize) -> usize {
        if len <= CompactBytesSlice::MAX_INLINE {
            0
        } else {
            len
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_the_slice_inline_or_not() {
        use std::collections::{BTreeSet, HashMap};
        // Around the 15-byte inline limit, and empty: every constructor
        // yields the same key, equal, ordered and hashed as its bytes.
        let names: Vec<Vec<u8>> = [0usize, 1, 7, 14, 15, 16, 17, 64, 1000]
            .iter()
            .map(|&n| (0..n).map(|i| (i * 7 + n) as u8).collect())
            .collect();
        let mut by_bytes = HashMap::new();
        let mut ordered = BTreeSet::new();
        for (i, name) in names.iter().enumerate() {
            let a = SmallBytes::from(name.as_slice());
            let b = SmallBytes::from(name.clone());
            let c = SmallBytes::from(name.clone().into_boxed_slice());
            assert!(a == b && b == c, "{name:?}");
            assert_eq!(&*a, name.as_slice());
            assert_eq!(a.to_vec(), *name);
            assert_eq!(a.clone(), a);
            by_bytes.insert(c, i);
            ordered.insert(b);
        }
        for (i, name) in names.iter().enumerate() {
            assert_eq!(by_bytes.get(name.as_slice()), Some(&i));
        }
        let mut sorted = names.clone();
        sorted.sort();
        let walked: Vec<Vec<u8>> = ordered.iter().map(|b| b.to_vec()).collect();
        assert_eq!(walked, sorted);
        assert_eq!(std::mem::size_of::<SmallBytes>(), 16);
    }
}
