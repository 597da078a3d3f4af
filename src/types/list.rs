//! The list value: a double-ended queue of byte strings.
//!
//! Redis 7.0 stores every list as a quicklist (a linked list of listpacks)
//! and `OBJECT ENCODING` says `quicklist` whatever the size, so one shape is
//! enough here: a `VecDeque` gives O(1) pushes and pops at both ends and
//! O(1) indexing, and each element is a [`SmallBytes`]: inline up to 15
//! bytes (a job id, a short message), else a buffer of its exact size. The
//! element byte count is kept alongside for `MEMORY USAGE`-style accounting.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::types::small_bytes::SmallBytes;

/// Redis's quicklist `packed_threshold`: an element at least this long gets
/// a node of its own ("plain"). Process-wide as in Redis, where only
/// `DEBUG QUICKLIST-PACKED-THRESHOLD` changes it.
static PACKED_THRESHOLD: AtomicUsize = AtomicUsize::new(DEFAULT_PACKED_THRESHOLD);
const DEFAULT_PACKED_THRESHOLD: usize = 1 << 30;

/// `DEBUG QUICKLIST-PACKED-THRESHOLD`: 0 restores the default; false (and
/// nothing changed) above Redis's limit, just under 4 GB.
pub(crate) fn set_packed_threshold(size: u64) -> bool {
    if size > (1u64 << 32) - (1 << 20) {
        return false;
    }
    let size = if size == 0 {
        DEFAULT_PACKED_THRESHOLD
    } else {
        size as usize
    };
    PACKED_THRESHOLD.store(size, Relaxed);
    true
}

/// Byte limits of a listpack node for `list-max-listpack-size` -1 … -5.
const NODE_SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// The byte cap of a count-limited node (quicklist's `SIZE_SAFETY_LIMIT`).
const NODE_SAFETY_LIMIT: usize = 8192;
/// Quicklist's `SIZE_ESTIMATE_OVERHEAD`: what it adds to an element's
/// length to estimate its listpack entry.
const ENTRY_OVERHEAD: usize = 8;
/// A listpack's header and end byte.
const LISTPACK_EMPTY: usize = 7;

/// One node of the quicklist Redis builds for a list (see [`List::quicklist`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QuicklistNode {
    /// Index of the node's first element.
    pub(crate) start: usize,
    pub(crate) count: usize,
    /// Redis's `node->sz`: the listpack's bytes, or a plain node's element length.
    pub(crate) bytes: usize,
    pub(crate) plain: bool,
}

/// Which end of a list (Redis's `LIST_HEAD` / `LIST_TAIL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    Left,
    Right,
}

impl End {
    /// `LEFT` / `RIGHT`, any case.
    pub(crate) fn parse(arg: &[u8]) -> Option<End> {
        if arg.eq_ignore_ascii_case(b"left") {
            Some(End::Left)
        } else if arg.eq_ignore_ascii_case(b"right") {
            Some(End::Right)
        } else {
            None
        }
    }

    pub(crate) fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    pub(crate) fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub(crate) struct List {
    items: VecDeque<SmallBytes>,
    bytes: usize,
}

impl List {
    pub(crate) fn new() -> List {
        List::default()
    }

    /// An empty list with room for exactly `n` elements: what a push of
    /// `n` elements creates (pushed one by one, ten would sit in room for
    /// sixteen).
    pub(crate) fn with_capacity(n: usize) -> List {
        List {
            items: VecDeque::with_capacity(n),
            bytes: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn push(&mut self, end: End, elem: &[u8]) {
        self.bytes += elem.len();
        let elem: SmallBytes = elem.into();
        match end {
            End::Left => self.items.push_front(elem),
            End::Right => self.items.push_back(elem),
        }
    }

    pub(crate) fn pop(&mut self, end: End) -> Option<SmallBytes> {
        let e = match end {
            End::Left => self.items.pop_front(),
            End::Right => self.items.pop_back(),
        }?;
        self.bytes -= e.len();
        Some(e)
    }

    pub(crate) fn get(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(|e| &**e)
    }

    /// Replaces element `i`; false if out of range.
    pub(crate) fn set(&mut self, i: usize, elem: &[u8]) -> bool {
        let Some(slot) = self.items.get_mut(i) else {
            return false;
        };
        self.bytes = self.bytes - slot.len() + elem.len();
        *slot = elem.into();
        true
    }

    pub(crate) fn insert(&mut self, i: usize, elem: &[u8]) {
        self.bytes += elem.len();
        self.items.insert(i, elem.into());
    }

    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &[u8]> + ExactSizeIterator {
        self.items.iter().map(|e| &**e)
    }

    pub(crate) fn range(&self, start: usize, end_inclusive: usize) -> impl Iterator<Item = &[u8]> {
        self.items.range(start..=end_inclusive).map(|e| &**e)
    }

    /// Keeps only `[start, start + len)`.
    pub(crate) fn keep(&mut self, start: usize, len: usize) {
        for _ in 0..start.min(self.items.len()) {
            self.pop(End::Left);
        }
        while self.items.len() > len {
            self.pop(End::Right);
        }
    }

    /// Removes up to `limit` (0 = all) elements equal to `elem`, scanning
    /// from the head or (`from_tail`) the tail; returns how many went.
    pub(crate) fn remove(&mut self, elem: &[u8], limit: u64, from_tail: bool) -> u64 {
        let mut removed = 0u64;
        let n = self.items.len();
        let mut keep = vec![true; n];
        let order: Box<dyn Iterator<Item = usize>> = if from_tail {
            Box::new((0..n).rev())
        } else {
            Box::new(0..n)
        };
        for i in order {
            if limit != 0 && removed == limit {
                break;
            }
            if *self.items[i] == *elem {
                keep[i] = false;
                removed += 1;
            }
        }
        if removed > 0 {
            let mut i = 0;
            self.items.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            self.bytes -= elem.len() * removed as usize;
        }
        removed
    }

    /// The nodes of the quicklist Redis 7.0 builds by pushing these elements
    /// at the tail with `list-max-listpack-size` `fill` (Redis's
    /// `_quicklistNodeAllowInsert`). Lists are kept as one deque here, so
    /// this is the layout DEBUG OBJECT reports and the RDB encoder cuts;
    /// a list Redis built by inserts in the middle may have split differently.
    pub(crate) fn quicklist(&self, fill: i64) -> Vec<QuicklistNode> {
        let threshold = PACKED_THRESHOLD.load(Relaxed);
        let mut nodes: Vec<QuicklistNode> = Vec::new();
        for (i, e) in self.items.iter().enumerate() {
            let large = e.len() >= threshold;
            let fits = match nodes.last() {
                Some(n) if !n.plain && !large => {
                    let new_sz = n.bytes + e.len() + ENTRY_OVERHEAD;
                    let level = usize::try_from(-fill - 1)
                        .ok()
                        .and_then(|l| NODE_SIZE_LEVELS.get(l));
                    match level {
                        Some(&limit) => new_sz <= limit,
                        None => new_sz <= NODE_SAFETY_LIMIT && (n.count as i64) < fill,
                    }
                }
                _ => false,
            };
            let entry = crate::types::stream::lp_elem_size(e);
            match nodes.last_mut() {
                Some(n) if fits => {
                    n.count += 1;
                    n.bytes += entry;
                }
                _ => nodes.push(QuicklistNode {
                    start: i,
                    count: 1,
                    bytes: if large {
                        e.len()
                    } else {
                        LISTPACK_EMPTY + entry
                    },
                    plain: large,
                }),
            }
        }
        nodes
    }

    /// Approximate heap bytes held.
    pub(crate) fn mem_usage(&self) -> usize {
        self.bytes + self.items.capacity() * std::mem::size_of::<SmallBytes>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> List {
        let mut l = List::new();
        for i in items {
            l.push(End::Right, i.as_bytes());
        }
        l
    }

    #[test]
    fn quicklist_nodes_as_redis_cuts_them() {
        let l = list(&["a"; 5]);
        // fill 2: two elements a node; -2: one 8 kB node.
        let counts = |fill| -> Vec<usize> { l.quicklist(fill).iter().map(|n| n.count).collect() };
        assert_eq!(counts(2), [2, 2, 1]);
        assert_eq!(counts(-2), [5]);
        // Each "a" takes 3 bytes (header, byte, back-length) plus the listpack's 7.
        assert_eq!(l.quicklist(-2)[0].bytes, 22);
        let mut big = List::new();
        for _ in 0..3 {
            big.push(End::Right, &[b'x'; 3000]);
        }
        // 3000-byte elements: two fit under 8 kB.
        assert_eq!(big.quicklist(-2).len(), 2);
    }

    fn items(l: &List) -> Vec<String> {
        l.iter()
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect()
    }

    #[test]
    fn push_pop_both_ends() {
        let mut l = List::new();
        l.push(End::Left, b"b");
        l.push(End::Left, b"a");
        l.push(End::Right, b"c");
        assert_eq!(items(&l), ["a", "b", "c"]);
        assert_eq!(l.pop(End::Right).as_deref(), Some(&b"c"[..]));
        assert_eq!(l.pop(End::Left).as_deref(), Some(&b"a"[..]));
        assert!(l.mem_usage() >= 1);
    }

    #[test]
    fn remove_limits_and_direction() {
        let mut l = list(&["x", "a", "x", "b", "x"]);
        assert_eq!(l.remove(b"x", 2, true), 2);
        assert_eq!(items(&l), ["x", "a", "b"]);
        let mut l = list(&["x", "a", "x", "b", "x"]);
        assert_eq!(l.remove(b"x", 0, false), 3);
        assert_eq!(items(&l), ["a", "b"]);
        assert_eq!(l.bytes, 2);
    }

    #[test]
    fn keep_trims_both_sides() {
        let mut l = list(&["a", "b", "c", "d"]);
        l.keep(1, 2);
        assert_eq!(items(&l), ["b", "c"]);
        l.keep(5, 0);
        assert!(l.is_empty());
        assert_eq!(l.bytes, 0);
    }
}
