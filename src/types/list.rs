//! The list value: a double-ended queue of byte strings.
//!
//! Redis 7.2+ keeps a small list as one `listpack` and turns it into a
//! `quicklist` (a linked list of listpacks) when a push would take it past
//! `list-max-listpack-size`, and back when it shrinks under half of that.
//! The elements live in one shape here whatever the encoding: a `VecDeque`
//! gives O(1) pushes and pops at both ends and O(1) indexing, and each
//! element is a [`SmallBytes`]: inline up to 15 bytes (a job id, a short
//! message), else a buffer of its exact size. The encoding Redis would have
//! is a flag, changed where Redis converts ([`List::grow`],
//! [`List::shrink`], [`List::settle`]); the element bytes and the bytes of
//! the listpack Redis would hold are kept alongside for those checks and
//! for `MEMORY USAGE`-style accounting.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use crate::types::small_bytes::SmallBytes;
use crate::types::stream::lp_elem_size;

/// Redis's quicklist `packed_threshold` (a test knob): when not 0, an
/// element at least this long gets a node of its own ("plain"); at 0 (the
/// default) an element larger than a node's byte limit does. Process-wide
/// as in Redis, where only `DEBUG QUICKLIST-PACKED-THRESHOLD` changes it.
static PACKED_THRESHOLD: AtomicUsize = AtomicUsize::new(0);

/// `DEBUG QUICKLIST-PACKED-THRESHOLD`: 0 restores the default; false (and
/// nothing changed) above Redis's limit, just under 4 GB.
pub(crate) fn set_packed_threshold(size: u64) -> bool {
    if size > (1u64 << 32) - (1 << 20) {
        return false;
    }
    PACKED_THRESHOLD.store(size as usize, Relaxed);
    true
}

/// Redis's `quicklistNodeLimit`: a node's (and a listpack list's) byte and
/// count limits for `list-max-listpack-size` `fill` (`usize::MAX`: none).
fn node_limits(fill: i64) -> (usize, usize) {
    if fill >= 0 {
        (usize::MAX, fill.clamp(1, i64::from(u32::MAX)) as usize)
    } else {
        let level = usize::try_from(-fill - 1)
            .unwrap_or(usize::MAX)
            .min(NODE_SIZE_LEVELS.len() - 1);
        (NODE_SIZE_LEVELS[level], usize::MAX)
    }
}

/// Redis's `quicklistNodeExceedsLimit`.
fn exceeds_limit(fill: i64, bytes: usize, count: usize) -> bool {
    let (sz, n) = node_limits(fill);
    if sz != usize::MAX {
        bytes > sz
    } else {
        bytes > NODE_SAFETY_LIMIT || count > n
    }
}

/// Redis's `isLargeElement`: whether an element this long gets a plain node.
fn is_large(len: usize, fill: i64) -> bool {
    let threshold = PACKED_THRESHOLD.load(Relaxed);
    if threshold != 0 {
        return len >= threshold;
    }
    match node_limits(fill).0 {
        usize::MAX => len > NODE_SAFETY_LIMIT,
        sz => len > sz,
    }
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

#[derive(Debug, Clone)]
pub(crate) struct List {
    items: VecDeque<SmallBytes>,
    /// The elements' bytes.
    bytes: usize,
    /// The bytes of the listpack holding every element (Redis's `lpBytes`
    /// of a listpack-encoded list).
    lp_bytes: usize,
    /// Whether Redis would hold the list as one listpack (else a quicklist).
    listpack: bool,
    /// As a quicklist: its nodes as Redis's pushes, pops and removals shape
    /// them (an insert or replace in the middle re-cuts them as pushes at
    /// the tail would); empty as a listpack.
    nodes: VecDeque<Node>,
    /// As a quicklist: the `list-max-listpack-size` it was made with (a
    /// quicklist keeps its `fill`).
    ql_fill: i64,
}

/// A quicklist node: how many elements, its `sz` (listpack bytes, or a
/// plain node's element length), and whether it is plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node {
    count: usize,
    bytes: usize,
    plain: bool,
}

impl Node {
    /// A node holding just `e` (Redis's `__quicklistCreateNode`).
    fn of(e: &[u8], fill: i64) -> Node {
        let plain = is_large(e.len(), fill);
        Node {
            count: 1,
            bytes: if plain {
                e.len()
            } else {
                LISTPACK_EMPTY + lp_elem_size(e)
            },
            plain,
        }
    }

    /// Redis's `_quicklistNodeAllowInsert`.
    fn allows(&self, e: &[u8], fill: i64) -> bool {
        !self.plain
            && !is_large(e.len(), fill)
            && !exceeds_limit(fill, self.bytes + e.len() + ENTRY_OVERHEAD, self.count + 1)
    }

    /// Takes one element `e` out; false if the node is left empty.
    fn take(&mut self, e: &[u8]) -> bool {
        self.count = self.count.saturating_sub(1);
        if !self.plain {
            self.bytes = self.bytes.saturating_sub(lp_elem_size(e));
        }
        self.count > 0
    }
}

impl Default for List {
    fn default() -> List {
        List::with_capacity(0)
    }
}

impl List {
    /// An empty list as a listpack (Redis's `createListListpackObject`,
    /// what a push or a move creates).
    pub(crate) fn new() -> List {
        List::default()
    }

    /// An empty list as a quicklist of `fill` (Redis's
    /// `createQuicklistObject`, what RDB loading and SORT STORE build, then
    /// [`List::settle`]).
    pub(crate) fn new_quicklist(fill: i64) -> List {
        let mut l = List::new();
        l.listpack = false;
        l.ql_fill = fill;
        l
    }

    /// Appends the elements of one quicklist node as an RDB file holds it
    /// (Redis's `quicklistAppendListpack` / `quicklistAppendPlainNode`);
    /// an empty node is skipped, as Redis skips it.
    pub(crate) fn append_node<'a>(&mut self, elems: impl Iterator<Item = &'a [u8]>, plain: bool) {
        let mut node = Node {
            count: 0,
            bytes: LISTPACK_EMPTY,
            plain,
        };
        for e in elems {
            self.bytes += e.len();
            self.lp_bytes += lp_elem_size(e);
            node.count += 1;
            node.bytes = if plain {
                e.len()
            } else {
                node.bytes + lp_elem_size(e)
            };
            self.items.push_back(e.into());
        }
        if node.count > 0 && !self.listpack {
            self.nodes.push_back(node);
        }
    }

    /// An empty list with room for exactly `n` elements: what a push of
    /// `n` elements creates (pushed one by one, ten would sit in room for
    /// sixteen).
    pub(crate) fn with_capacity(n: usize) -> List {
        List {
            items: VecDeque::with_capacity(n),
            bytes: 0,
            lp_bytes: LISTPACK_EMPTY,
            listpack: true,
            nodes: VecDeque::new(),
            ql_fill: -2,
        }
    }

    /// To a quicklist of `fill` whose one node is the listpack (Redis's
    /// `quicklistAppendListpack`; an empty listpack gives no node).
    fn become_quicklist(&mut self, fill: i64) {
        self.listpack = false;
        self.ql_fill = fill;
        self.nodes.clear();
        if !self.items.is_empty() {
            self.nodes.push_back(Node {
                count: self.items.len(),
                bytes: self.lp_bytes,
                plain: false,
            });
        }
    }

    /// Re-cuts the nodes as pushes at the tail would (after an insert or
    /// replace in the middle, whose node splits are not modelled).
    fn recut(&mut self) {
        if self.listpack {
            return;
        }
        let fill = self.ql_fill;
        self.nodes = self
            .quicklist(fill)
            .into_iter()
            .map(|n| Node {
                count: n.count,
                bytes: n.bytes,
                plain: n.plain,
            })
            .collect();
    }

    /// `listpack` or `quicklist`, as `OBJECT ENCODING` says.
    pub(crate) fn encoding(&self) -> &'static str {
        if self.listpack {
            "listpack"
        } else {
            "quicklist"
        }
    }

    pub(crate) fn is_listpack(&self) -> bool {
        self.listpack
    }

    /// As a quicklist, its node count (Redis's `quicklist->len`); 0 as a
    /// listpack.
    pub(crate) fn quicklist_len(&self) -> usize {
        self.nodes.len()
    }

    /// Before adding `add_len` elements of `add_bytes` bytes (string
    /// lengths; integers popped from a list count 0): a listpack that
    /// would pass `fill`'s limits becomes a quicklist (Redis's
    /// `listTypeTryConversionAppend`).
    pub(crate) fn grow(&mut self, fill: i64, add_bytes: usize, add_len: usize) {
        if self.listpack
            && exceeds_limit(
                fill,
                self.lp_bytes.saturating_add(add_bytes),
                self.items.len().saturating_add(add_len),
            )
        {
            self.become_quicklist(fill);
        }
    }

    /// [`List::grow`] for the elements `elems`.
    pub(crate) fn grow_for<'a>(&mut self, fill: i64, elems: impl Iterator<Item = &'a [u8]>) {
        if !self.listpack {
            return;
        }
        let (mut bytes, mut n) = (0usize, 0usize);
        for e in elems {
            bytes = bytes.saturating_add(e.len());
            n += 1;
        }
        self.grow(fill, bytes, n);
    }

    /// After removing elements: a quicklist that is one packed node under
    /// half of `fill`'s limits becomes a listpack again (Redis's
    /// `LIST_CONV_SHRINKING`).
    pub(crate) fn shrink(&mut self, fill: i64) {
        self.try_listpack(fill, true);
    }

    /// After building a list whole (RDB load, RESTORE, SORT STORE): the
    /// encoding Redis's `LIST_CONV_AUTO` picks.
    pub(crate) fn settle(&mut self, fill: i64) {
        if self.listpack {
            self.grow(fill, 0, 0);
        } else {
            self.try_listpack(fill, false);
        }
    }

    /// Redis's `listTypeTryConvertQuicklist`: a quicklist of one packed
    /// node within `fill`'s limits (half of them when shrinking) becomes
    /// that listpack.
    fn try_listpack(&mut self, fill: i64, shrinking: bool) {
        if self.listpack || self.nodes.len() != 1 || self.nodes[0].plain {
            return;
        }
        let (mut sz, mut n) = node_limits(fill);
        if shrinking {
            sz /= 2;
            n /= 2;
        }
        if self.nodes[0].bytes > sz || self.items.len() > n {
            return;
        }
        self.listpack = true;
        self.nodes.clear();
    }

    /// The node at `end` as a push there shapes it.
    fn node_push(&mut self, end: End, elem: &[u8]) {
        if self.listpack {
            return;
        }
        let fill = self.ql_fill;
        let node = match end {
            End::Left => self.nodes.front_mut(),
            End::Right => self.nodes.back_mut(),
        };
        match node {
            Some(n) if n.allows(elem, fill) => {
                n.count += 1;
                n.bytes += lp_elem_size(elem);
            }
            _ => match end {
                End::Left => self.nodes.push_front(Node::of(elem, fill)),
                End::Right => self.nodes.push_back(Node::of(elem, fill)),
            },
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
        self.lp_bytes += lp_elem_size(elem);
        self.node_push(end, elem);
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
        self.lp_bytes -= lp_elem_size(&e);
        if !self.listpack {
            let kept = match end {
                End::Left => self.nodes.front_mut().is_some_and(|n| n.take(&e)),
                End::Right => self.nodes.back_mut().is_some_and(|n| n.take(&e)),
            };
            if !kept {
                match end {
                    End::Left => self.nodes.pop_front(),
                    End::Right => self.nodes.pop_back(),
                };
            }
        }
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
        self.lp_bytes = self.lp_bytes - lp_elem_size(slot) + lp_elem_size(elem);
        let old = std::mem::replace(slot, elem.into());
        if !self.listpack {
            // Redis replaces in place inside a packed node when the new
            // element is not large; other cases split nodes.
            match self.node_at(i) {
                Some(n) if !self.nodes[n].plain && !is_large(elem.len(), self.ql_fill) => {
                    let node = &mut self.nodes[n];
                    node.bytes = node.bytes.saturating_sub(lp_elem_size(&old)) + lp_elem_size(elem);
                }
                _ => self.recut(),
            }
        }
        true
    }

    pub(crate) fn insert(&mut self, i: usize, elem: &[u8]) {
        self.bytes += elem.len();
        self.lp_bytes += lp_elem_size(elem);
        self.items.insert(i, elem.into());
        self.recut();
    }

    /// The index of the node holding element `i`.
    fn node_at(&self, i: usize) -> Option<usize> {
        let mut start = 0;
        for (k, n) in self.nodes.iter().enumerate() {
            if i < start + n.count {
                return Some(k);
            }
            start += n.count;
        }
        None
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
        if removed > 0 && !self.listpack {
            // Redis deletes each in its node and drops emptied nodes (no
            // merging).
            let mut at = 0;
            let elem_sz = lp_elem_size(elem);
            self.nodes.retain_mut(|n| {
                let end = (at + n.count).min(keep.len());
                let gone = keep[at.min(end)..end].iter().filter(|k| !**k).count();
                at = end;
                n.count = n.count.saturating_sub(gone);
                if !n.plain {
                    n.bytes = n.bytes.saturating_sub(elem_sz * gone);
                }
                n.count > 0
            });
        }
        if removed > 0 {
            let mut i = 0;
            self.items.retain(|_| {
                i += 1;
                keep[i - 1]
            });
            self.bytes -= elem.len() * removed as usize;
            self.lp_bytes -= lp_elem_size(elem) * removed as usize;
        }
        removed
    }

    /// The quicklist's nodes as DEBUG OBJECT reports them and the RDB
    /// encoder writes them: a listpack as one node.
    pub(crate) fn nodes(&self) -> Vec<QuicklistNode> {
        if self.listpack {
            return vec![QuicklistNode {
                start: 0,
                count: self.items.len(),
                bytes: self.lp_bytes,
                plain: false,
            }];
        }
        let mut start = 0;
        self.nodes
            .iter()
            .map(|n| {
                let node = QuicklistNode {
                    start,
                    count: n.count,
                    bytes: n.bytes,
                    plain: n.plain,
                };
                start += n.count;
                node
            })
            .collect()
    }

    /// The `list-max-listpack-size` a quicklist was made with.
    pub(crate) fn quicklist_fill(&self) -> i64 {
        self.ql_fill
    }

    /// The nodes of the quicklist Redis builds by pushing these elements
    /// at the tail with `list-max-listpack-size` `fill` (Redis's
    /// `_quicklistNodeAllowInsert`). Lists are kept as one deque here, so
    /// this is the layout DEBUG OBJECT reports and the RDB encoder cuts;
    /// a list Redis built by inserts in the middle may have split differently.
    pub(crate) fn quicklist(&self, fill: i64) -> Vec<QuicklistNode> {
        let mut nodes: Vec<QuicklistNode> = Vec::new();
        for (i, e) in self.items.iter().enumerate() {
            let large = is_large(e.len(), fill);
            let fits = match nodes.last() {
                Some(n) if !n.plain && !large => {
                    let new_sz = n.bytes + e.len() + ENTRY_OVERHEAD;
                    !exceeds_limit(fill, new_sz, n.count + 1)
                }
                _ => false,
            };
            let entry = lp_elem_size(e);
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

    #[test]
    fn listpack_until_a_push_passes_the_limit_and_back_under_half() {
        // Count limit 4: the fifth element makes a quicklist.
        let mut l = List::new();
        for i in 0..4 {
            l.grow(4, 1, 1);
            l.push(End::Right, format!("{i}").as_bytes());
        }
        assert_eq!(l.encoding(), "listpack");
        l.grow(4, 1, 1);
        l.push(End::Right, b"x");
        assert_eq!(l.encoding(), "quicklist");
        // Shrinking: back only at half the limit (2 elements).
        l.pop(End::Left);
        l.pop(End::Left);
        l.shrink(4);
        assert_eq!(l.encoding(), "quicklist");
        l.pop(End::Left);
        l.shrink(4);
        assert_eq!(l.encoding(), "quicklist", "nodes [1, 1]: not one node");
        l.pop(End::Left);
        l.shrink(4);
        assert_eq!(l.encoding(), "listpack");
        // Size limit -1 (4096 bytes): string lengths plus the listpack's bytes.
        let mut l = List::new();
        l.grow(-1, 4000, 1);
        l.push(End::Right, &[b'a'; 4000]);
        assert_eq!(l.encoding(), "listpack");
        l.grow(-1, 100, 1);
        assert_eq!(l.encoding(), "quicklist");
        l.push(End::Right, &[b'b'; 100]);
        l.pop(End::Left);
        l.shrink(-1);
        assert_eq!(l.encoding(), "listpack");
    }

    #[test]
    fn settle_after_building_whole() {
        let mut l = List::new_quicklist(10);
        for _ in 0..10 {
            l.push(End::Right, b"abc");
        }
        // AUTO uses the whole limit, not half.
        let mut a = l.clone();
        a.settle(10);
        assert_eq!(a.encoding(), "listpack");
        let mut b = l.clone();
        b.settle(9);
        assert_eq!(b.encoding(), "quicklist");
        let mut c = l;
        c.shrink(10);
        assert_eq!(c.encoding(), "quicklist", "shrinking wants half");
        // A large element sits in a plain node: never a listpack.
        let mut big = List::new_quicklist(128);
        big.push(End::Right, &[b'x'; 9000]);
        big.settle(128);
        assert_eq!(big.encoding(), "quicklist");
    }

    #[test]
    fn quicklist_nodes_follow_pushes_pops_and_removals() {
        let counts = |l: &List| -> Vec<usize> { l.nodes().iter().map(|n| n.count).collect() };
        let mut l = List::new_quicklist(4);
        for e in ["a", "b", "c", "d", "e", "f", "g", "h"] {
            l.push(End::Right, e.as_bytes());
        }
        assert_eq!(counts(&l), [4, 4]);
        for _ in 0..3 {
            l.pop(End::Left);
            l.pop(End::Right);
        }
        assert_eq!(counts(&l), [1, 1]);
        l.shrink(4);
        assert_eq!(
            l.encoding(),
            "quicklist",
            "two nodes never become a listpack"
        );
        l.pop(End::Left);
        l.shrink(4);
        assert_eq!(l.encoding(), "listpack");
        // Head pushes fill the head node; LREM empties nodes in place.
        let mut l = List::new_quicklist(4);
        for e in ["a", "b", "c", "d", "x", "y"] {
            l.push(End::Left, e.as_bytes());
        }
        assert_eq!(counts(&l), [2, 4]);
        assert_eq!(l.remove(b"x", 0, false), 1);
        assert_eq!(l.remove(b"y", 0, false), 1);
        assert_eq!(counts(&l), [4]);
        assert_eq!(l.nodes()[0].bytes, 7 + 4 * 3);
        // A listpack that converts is one node, whatever its size.
        let mut l = List::new();
        for e in ["a", "b", "c", "d"] {
            l.push(End::Right, e.as_bytes());
        }
        l.grow(4, 1, 1);
        assert_eq!(counts(&l), [4]);
        l.push(End::Right, b"e");
        assert_eq!(counts(&l), [4, 1]);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, usize),
        Pop(bool),
        Set(usize, usize),
        Insert(usize, usize),
        Remove(usize, u64),
        Keep(usize, usize),
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (any::<bool>(), 0usize..6).prop_map(|(l, e)| Op::Push(l, e)),
            3 => any::<bool>().prop_map(Op::Pop),
            1 => (0usize..40, 0usize..6).prop_map(|(i, e)| Op::Set(i, e)),
            1 => (0usize..40, 0usize..6).prop_map(|(i, e)| Op::Insert(i, e)),
            1 => (0usize..6, 0u64..3).prop_map(|(e, n)| Op::Remove(e, n)),
            1 => (0usize..5, 0usize..40).prop_map(|(a, n)| Op::Keep(a, n)),
        ]
    }

    /// Elements of a few sizes: integers, short strings, one past a
    /// 4 kB node's limit (a plain node under fill -1).
    fn elem(e: usize) -> Vec<u8> {
        match e {
            0 => b"7".to_vec(),
            1 => b"12345678".to_vec(),
            2 => b"ab".to_vec(),
            3 => vec![b'x'; 100],
            4 => vec![b'y'; 5000],
            _ => vec![b'z'; 1000],
        }
    }

    proptest::proptest! {
        /// Against a plain deque, with the encoding checks Redis's commands
        /// make after each change: the elements, the listpack's bytes and
        /// the nodes (counts summing to the length, a packed node's bytes
        /// those of its elements, a plain node one element) stay in step.
        #[test]
        fn nodes_stay_consistent(fill in proptest::sample::select(vec![-1i64, -2, 2, 3, 5]),
                                 ops in proptest::collection::vec(op(), 1..120)) {
            let mut l = List::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(left, e) => {
                        let e = elem(e);
                        l.grow(fill, e.len(), 1);
                        let end = if left { End::Left } else { End::Right };
                        l.push(end, &e);
                        if left { model.push_front(e) } else { model.push_back(e) }
                    }
                    Op::Pop(left) => {
                        let end = if left { End::Left } else { End::Right };
                        let got = l.pop(end).map(|e| e.to_vec());
                        let want = if left { model.pop_front() } else { model.pop_back() };
                        proptest::prop_assert_eq!(got, want);
                        l.shrink(fill);
                    }
                    Op::Set(i, e) => {
                        let e = elem(e);
                        l.grow(fill, e.len(), 1);
                        proptest::prop_assert_eq!(l.set(i, &e), i < model.len());
                        if i < model.len() {
                            model[i] = e;
                        }
                        l.shrink(fill);
                    }
                    Op::Insert(i, e) => {
                        let e = elem(e);
                        let i = i.min(model.len());
                        l.grow(fill, e.len(), 1);
                        l.insert(i, &e);
                        model.insert(i, e);
                    }
                    Op::Remove(e, n) => {
                        let e = elem(e);
                        let before = model.len();
                        let mut left = n;
                        model.retain(|x| {
                            if *x == e && (n == 0 || left > 0) {
                                left = left.saturating_sub(1);
                                false
                            } else {
                                true
                            }
                        });
                        proptest::prop_assert_eq!(l.remove(&e, n, false), (before - model.len()) as u64);
                        l.shrink(fill);
                    }
                    Op::Keep(a, n) => {
                        l.keep(a, n);
                        let kept: VecDeque<Vec<u8>> = model.iter().skip(a).take(n).cloned().collect();
                        model = kept;
                        l.shrink(fill);
                    }
                }
                let items: Vec<Vec<u8>> = l.iter().map(|e| e.to_vec()).collect();
                proptest::prop_assert_eq!(&items, &model.iter().cloned().collect::<Vec<_>>());
                let lp: usize = LISTPACK_EMPTY + model.iter().map(|e| lp_elem_size(e)).sum::<usize>();
                proptest::prop_assert_eq!(l.lp_bytes, lp);
                let nodes = l.nodes();
                if l.is_listpack() {
                    proptest::prop_assert_eq!(nodes.len(), 1);
                } else {
                    proptest::prop_assert_eq!(nodes.iter().map(|n| n.count).sum::<usize>(), model.len());
                    for n in &nodes {
                        proptest::prop_assert!(n.count > 0);
                        let range = model.range(n.start..n.start + n.count);
                        if n.plain {
                            proptest::prop_assert_eq!(n.count, 1);
                            proptest::prop_assert_eq!(n.bytes, model[n.start].len());
                        } else {
                            let b = LISTPACK_EMPTY + range.map(|e| lp_elem_size(e)).sum::<usize>();
                            proptest::prop_assert_eq!(n.bytes, b);
                        }
                    }
                }
            }
        }
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
