//! `Pages`: the dense entry array behind [`Dict`](super::Dict), kept in
//! fixed-size pages instead of one `Vec`.
//!
//! Why: a `Vec` doubles when it fills, so a table of n entries holds room
//! for up to 2n (1.4n on average), and for a shard's keyspace an entry is
//! about a hundred bytes: the spare half of a doubled vector was the largest
//! single cost per key. Pages hold a fixed number of entries (about 16 KB of
//! them), so a large table wastes at most one page, growing never copies
//! the entries already stored (no 2× peak while a big table reallocates),
//! and a table that shrinks gives pages back as they empty. A small table
//! lives in one page that grows by doubling up to the page size, exactly
//! as the `Vec` did, so small sets and hashes pay nothing extra.
//!
//! Invariant: every page but the last is full; the last may be partly full,
//! or empty (kept as a spare so that a table oscillating around a page
//! boundary does not allocate on every insert).

use std::ops::{Index, IndexMut};

/// Bytes of entries per page: exactly one of mimalloc's size classes
/// (16 KiB, a medium-page block), so a page wastes less than one entry.
/// A power-of-two count of entries would round the page down to a
/// non-class size that mimalloc then rounds up again: with 104-byte
/// entries, 128 of them took 13,312 bytes and sat in a 14,336-byte block,
/// a kilobyte (8 bytes per key) lost on every page of a keyspace.
const PAGE_BYTES: usize = 16 * 1024;

/// No length field: it follows from the invariant, and a `Dict` (inline in
/// every set and hash value) stays one word smaller.
#[derive(Clone)]
pub(super) struct Pages<T> {
    pages: Vec<Vec<T>>,
}

impl<T> Default for Pages<T> {
    fn default() -> Self {
        Pages { pages: Vec::new() }
    }
}

impl<T> Pages<T> {
    /// Entries per page: as many as fill `PAGE_BYTES`. A constant divisor,
    /// so the index split compiles to a multiply and shift, not a division.
    const PAGE: usize = {
        let size = if std::mem::size_of::<T>() == 0 {
            1
        } else {
            std::mem::size_of::<T>()
        };
        let n = PAGE_BYTES / size;
        if n < 16 { 16 } else { n }
    };

    pub(super) fn len(&self) -> usize {
        match self.pages.last() {
            Some(last) => (self.pages.len() - 1) * Self::PAGE + last.len(),
            None => 0,
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` more entries, up to a page (used by
    /// `Dict::with_capacity`): only the last page may grow, as pages after
    /// a partly full one would break the index split; a larger table gets
    /// its further pages as it fills.
    pub(super) fn reserve_exact(&mut self, n: usize) {
        if self.pages.is_empty() {
            self.pages.push(Vec::new());
        }
        if let Some(last) = self.pages.last_mut() {
            let want = last.len().saturating_add(n).min(Self::PAGE);
            last.reserve_exact(want.saturating_sub(last.len()));
        }
    }

    pub(super) fn push(&mut self, value: T) {
        let page = Self::PAGE;
        match self.pages.last_mut() {
            Some(last) if last.len() < page => {
                if last.len() == last.capacity() {
                    // The only page of a small table grows as a Vec would.
                    let want = (last.capacity() * 2).clamp(4, page);
                    last.reserve_exact(want - last.len());
                }
                last.push(value);
            }
            // The first page starts small; later ones are whole pages.
            _ => {
                let first = self.pages.is_empty();
                let mut fresh = Vec::with_capacity(if first { 4 } else { page });
                fresh.push(value);
                self.pages.push(fresh);
            }
        }
    }

    pub(super) fn pop(&mut self) -> Option<T> {
        // A spare empty page goes when the page before it starts emptying.
        if self.pages.last().is_some_and(Vec::is_empty) {
            self.pages.pop();
        }
        let value = self.pages.last_mut()?.pop();
        if self.pages.len() == 1 && self.pages[0].is_empty() {
            self.pages = Vec::new();
        }
        value
    }

    /// Removes entry `i`, moving the last entry into its place.
    pub(super) fn swap_remove(&mut self, i: usize) -> T {
        assert!(i < self.len(), "Pages::swap_remove out of bounds");
        let last = self.pop().expect("not empty");
        if i == self.len() {
            last
        } else {
            std::mem::replace(&mut self[i], last)
        }
    }

    /// Keeps the entries for which `f` is true, in order.
    #[cfg(test)]
    pub(super) fn retain_mut(&mut self, mut f: impl FnMut(&mut T) -> bool) {
        let old = std::mem::take(self);
        for mut v in old {
            if f(&mut v) {
                self.push(v);
            }
        }
    }

    /// Gives memory back: a lone page much larger than its entries shrinks
    /// (leaving room to grow), a spare empty page goes.
    pub(super) fn shrink(&mut self) {
        if self.pages.len() > 1 && self.pages.last().is_some_and(Vec::is_empty) {
            self.pages.pop();
        }
        if let [only] = self.pages.as_mut_slice()
            && only.capacity() > 64
            && only.len() * 4 < only.capacity()
        {
            only.shrink_to(only.len() * 2);
        }
    }

    pub(super) fn capacity(&self) -> usize {
        self.pages.iter().map(Vec::capacity).sum()
    }

    pub(super) fn iter(&self) -> Counted<impl Iterator<Item = &T>> {
        Counted {
            left: self.len(),
            inner: self.pages.iter().flatten(),
        }
    }

    pub(super) fn iter_mut(&mut self) -> Counted<impl Iterator<Item = &mut T>> {
        Counted {
            left: self.len(),
            inner: self.pages.iter_mut().flatten(),
        }
    }
}

impl<T> Index<usize> for Pages<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.pages[i / Self::PAGE][i % Self::PAGE]
    }
}

impl<T> IndexMut<usize> for Pages<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.pages[i / Self::PAGE][i % Self::PAGE]
    }
}

impl<T> IntoIterator for Pages<T> {
    type Item = T;
    type IntoIter = Counted<std::iter::Flatten<std::vec::IntoIter<Vec<T>>>>;
    fn into_iter(self) -> Self::IntoIter {
        Counted {
            left: self.len(),
            inner: self.pages.into_iter().flatten(),
        }
    }
}

/// An iterator whose length is known (flattened pages are not
/// `ExactSizeIterator` by themselves).
pub(crate) struct Counted<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;
    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next()?;
        self.left -= 1;
        Some(item)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Counted<I> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_a_vec_across_page_boundaries() {
        let page = Pages::<u64>::PAGE;
        let mut p = Pages::default();
        let mut v = Vec::new();
        for i in 0..(3 * page + 7) as u64 {
            p.push(i);
            v.push(i);
        }
        assert_eq!(p.len(), v.len());
        assert!(p.iter().copied().eq(v.iter().copied()));
        // Swap-removes from the front, the middle and the end.
        for i in [0, page, 2 * page - 1, usize::MAX, 5] {
            let i = i.min(p.len() - 1);
            assert_eq!(p.swap_remove(i), v.swap_remove(i));
        }
        assert!(p.iter().copied().eq(v.iter().copied()));
        p.retain_mut(|x| *x % 3 != 0);
        v.retain(|x| *x % 3 != 0);
        assert!(p.iter().copied().eq(v.iter().copied()));
        assert_eq!(p.iter().len(), v.len());
        while let Some(x) = p.pop() {
            assert_eq!(Some(x), v.pop());
        }
        assert_eq!(p.capacity(), 0, "an empty table holds no pages");
    }

    #[test]
    fn a_large_table_wastes_at_most_two_pages() {
        let page = Pages::<[u64; 4]>::PAGE;
        let mut p = Pages::default();
        for i in 0..(10 * page + 1) {
            p.push([i as u64; 4]);
        }
        assert!(p.capacity() - p.len() < page);
        // Oscillating at a boundary keeps a spare page but never more.
        for _ in 0..5 {
            p.pop();
            p.pop();
            p.push([0; 4]);
            p.push([0; 4]);
        }
        assert!(p.capacity() - p.len() < 2 * page);
    }

    #[test]
    fn a_small_table_grows_like_a_vec() {
        let mut p = Pages::default();
        for i in 0..5u32 {
            p.push(i);
        }
        assert_eq!(p.capacity(), 8);
    }
}
