//! The large encoding: an unrolled, rank-counting skiplist plus a slim
//! member index.
//!
//! Redis's skiplist spends one heap node (two pointers per level, an sds and
//! a dict entry) per element, ~100+ bytes. Here each skiplist node holds up
//! to `node_cap` elements packed contiguously: scores (u32 offsets from a
//! per-node base when they are exact integers such as millisecond
//! timestamps, f64 otherwise), a byte arena of members (with u16 end
//! offsets only when their lengths differ), and a one-byte hash
//! fingerprint per member. Per-element cost is 5-7 bytes plus the member;
//! pointer/level bookkeeping is amortised over a whole node. Links carry spans counted in *elements*, so rank arithmetic
//! works as in Redis, in O(log n) node hops plus a binary search inside one
//! node.
//!
//! Nodes live in a `Vec` slab addressed by `u32` (no unsafe, no per-node
//! Box), slot 0 being the header. Full nodes split (or start a fresh
//! neighbour when the insertion is at either end, so monotonically
//! increasing scores — the time-window pattern — fill nodes completely);
//! under-full nodes merge with their successor, and range deletions unlink
//! whole nodes without touching their elements one by one beyond the
//! callback.
//!
//! Members are stored once, in the nodes. The member index (`index.rs`) maps a keyed hash
//! to the id of the node holding the member (one 4-byte slot per element,
//! at 60-85% load); a lookup scans that node's fingerprints. Because the index points at
//! nodes, every structural change that moves elements between nodes is
//! reported as an [`Event`] so the index can follow.
//!
//! Member TTLs live in the nodes too: a node whose members have deadlines
//! holds a sparse table of them by in-node position (see
//! [`ttl`](super::ttl)); every move of elements between nodes carries it,
//! and the list keeps a set-level count and lower bound plus the cursor of
//! the expiry pass ([`List::next_due`]).

use super::index::MemberIndex;
use super::listpack::key_less;
use super::ttl::{Deadlines, NO_TTL};
use std::hash::BuildHasher;

const MAX_LEVEL: usize = 24;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;
pub(crate) const DEFAULT_NODE_CAP: usize = 128;
/// Member bytes per node before it counts as full, so huge members do not
/// make every insertion move hundreds of kilobytes.
const NODE_BYTES: usize = 8 * 1024;

#[derive(Clone, Copy, Default)]
struct Link {
    next: u32,
    /// Elements in the nodes after this one up to and including `next`;
    /// for a NIL `next`, the elements remaining after this node.
    span: usize,
}

/// Integers below this magnitude are exact in f64, so `base + offset`
/// reproduces them bit for bit.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

fn int_score(s: f64) -> bool {
    s.fract() == 0.0 && s.abs() < EXACT_INT && !(s == 0.0 && s.is_sign_negative())
}

/// A node's scores. Time-window sets score by integer milliseconds, and
/// one node's scores span a narrow range, so they are usually stored as
/// u32 offsets from a base: half the bytes of the dominant per-element
/// cost after the member itself. Any score that does not fit (fractions,
/// infinities, -0, a spread of 2^32 or more) switches the node to plain
/// f64s; nodes built later by splits start compact again.
#[derive(Clone)]
enum Scores {
    Delta { base: f64, d: Vec<u32> },
    Full(Vec<f64>),
}

impl Default for Scores {
    fn default() -> Self {
        Scores::Delta {
            base: 0.0,
            d: Vec::new(),
        }
    }
}

impl Scores {
    fn with_capacity(n: usize) -> Scores {
        Scores::Delta {
            base: 0.0,
            d: Vec::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        match self {
            Scores::Delta { d, .. } => d.len(),
            Scores::Full(v) => v.len(),
        }
    }

    fn capacity(&self) -> usize {
        match self {
            Scores::Delta { d, .. } => d.capacity(),
            Scores::Full(v) => v.capacity(),
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Scores::Delta { d, .. } => d.capacity() * 4,
            Scores::Full(v) => v.capacity() * 8,
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Scores::Delta { base, d } => base + f64::from(d[i]),
            Scores::Full(v) => v[i],
        }
    }

    fn last(&self) -> Option<f64> {
        let n = self.len();
        if n == 0 { None } else { Some(self.get(n - 1)) }
    }

    fn reserve_exact(&mut self, n: usize) {
        match self {
            Scores::Delta { d, .. } => d.reserve_exact(n),
            Scores::Full(v) => v.reserve_exact(n),
        }
    }

    fn shrink_to(&mut self, n: usize) {
        match self {
            Scores::Delta { d, .. } => d.shrink_to(n),
            Scores::Full(v) => v.shrink_to(n),
        }
    }

    fn remove_range(&mut self, from: usize, to: usize) {
        match self {
            Scores::Delta { d, .. } => {
                d.drain(from..to);
            }
            Scores::Full(v) => {
                v.drain(from..to);
            }
        }
    }

    fn partition_point(&self, before: impl Fn(f64) -> bool) -> usize {
        match self {
            Scores::Delta { base, d } => d.partition_point(|&x| before(base + f64::from(x))),
            Scores::Full(v) => v.partition_point(|&s| before(s)),
        }
    }

    /// Makes `s` representable, rebasing or widening as needed, and
    /// returns its offset when the compact form is kept.
    fn make_room(&mut self, s: f64) -> Option<u32> {
        let Scores::Delta { base, d } = self else {
            return None;
        };
        if int_score(s) {
            if d.is_empty() {
                *base = s;
                return Some(0);
            }
            if s >= *base && s - *base <= f64::from(u32::MAX) {
                return Some((s - *base) as u32);
            }
            // Scores are sorted, so the last offset is the largest.
            let max = *base + f64::from(d.last().copied().unwrap_or(0));
            if s < *base && max - s <= f64::from(u32::MAX) {
                let shift = (*base - s) as u32;
                for x in d.iter_mut() {
                    *x += shift;
                }
                *base = s;
                return Some(0);
            }
        }
        let full: Vec<f64> = {
            let mut v = Vec::with_capacity(d.capacity());
            v.extend(d.iter().map(|&x| *base + f64::from(x)));
            v
        };
        *self = Scores::Full(full);
        None
    }

    fn insert(&mut self, i: usize, s: f64) {
        match (self.make_room(s), self) {
            (Some(x), Scores::Delta { d, .. }) => d.insert(i, x),
            (_, Scores::Full(v)) => v.insert(i, s),
            (None, Scores::Delta { .. }) => {}
        }
    }

    fn push(&mut self, s: f64) {
        self.insert(self.len(), s);
    }

    fn set(&mut self, i: usize, s: f64) {
        match (self.make_room(s), self) {
            (Some(x), Scores::Delta { d, .. }) => d[i] = x,
            (_, Scores::Full(v)) => v[i] = s,
            (None, Scores::Delta { .. }) => {}
        }
    }

    fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}

/// A node's forward links. Three quarters of nodes have one level and
/// almost all have at most two, so those live inline: a descent then reads
/// one slab entry per hop instead of chasing a separate allocation.
#[derive(Clone, Default)]
#[repr(C)]
struct Links {
    low: [Link; 2],
    level: u8,
    high: Vec<Link>,
}

impl Links {
    fn from_vec(v: Vec<Link>) -> Links {
        let mut l = Links {
            level: v.len() as u8,
            ..Links::default()
        };
        for (i, x) in v.into_iter().enumerate() {
            if i < 2 {
                l.low[i] = x;
            } else {
                l.high.push(x);
            }
        }
        l
    }

    fn len(&self) -> usize {
        usize::from(self.level)
    }

    fn is_empty(&self) -> bool {
        self.level == 0
    }

    fn first(&self) -> Option<&Link> {
        if self.is_empty() {
            None
        } else {
            Some(&self[0])
        }
    }
}

impl std::ops::Index<usize> for Links {
    type Output = Link;
    fn index(&self, i: usize) -> &Link {
        if i < 2 {
            &self.low[i]
        } else {
            &self.high[i - 2]
        }
    }
}

impl std::ops::IndexMut<usize> for Links {
    fn index_mut(&mut self, i: usize) -> &mut Link {
        if i < 2 {
            &mut self.low[i]
        } else {
            &mut self.high[i - 2]
        }
    }
}

/// `repr(C)` and cache-line alignment put what a descent reads of each
/// node it passes (`last_score`, the two inline links) in one cache line.
#[derive(Clone, Default)]
#[repr(C, align(64))]
struct Node {
    /// Copy of the last score, so a descent can usually decide whether to
    /// skip this node without touching its element arrays.
    last_score: f64,
    links: Links,
    scores: Scores,
    /// End offset of each member in `bytes`, or empty while every member
    /// has the same length (`width`): ids, UUIDs and timestamps usually do,
    /// and then the offsets are arithmetic and cost nothing per member.
    /// u16 is enough because a node holding two or more members never
    /// exceeds `NODE_BYTES`; a single larger member gets a node of its own,
    /// whose only end is implicit (`bytes.len()`), so its stored
    /// (truncated) offset or width is never read.
    ends: Vec<u16>,
    /// Length of every member while `ends` is empty.
    width: u16,
    /// One byte of each member's keyed hash: a member lookup scans these
    /// (one cache line or two) instead of comparing up to `node_cap` keys.
    fps: Vec<u8>,
    bytes: Vec<u8>,
    prev: u32,
    /// Deadlines of the members that have one; None (8 bytes, no
    /// allocation) in a node without any.
    ttl: Option<Box<Deadlines<u16>>>,
}

impl Node {
    fn count(&self) -> usize {
        self.scores.len()
    }

    fn end_of(&self, i: usize) -> usize {
        if i + 1 >= self.count() {
            self.bytes.len()
        } else if self.ends.is_empty() {
            (i + 1) * usize::from(self.width)
        } else {
            usize::from(self.ends[i])
        }
    }

    fn start_of(&self, i: usize) -> usize {
        if i == 0 { 0 } else { self.end_of(i - 1) }
    }

    fn member(&self, i: usize) -> &[u8] {
        &self.bytes[self.start_of(i)..self.end_of(i)]
    }

    fn entry(&self, i: usize) -> (&[u8], f64) {
        (self.member(i), self.scores.get(i))
    }

    fn last(&self) -> (&[u8], f64) {
        self.entry(self.count() - 1)
    }

    /// `f` on entries `from..to`, each member starting where the one
    /// before ended.
    fn each_in<'a>(&'a self, from: usize, to: usize, f: &mut impl FnMut(&'a [u8], f64)) {
        let mut start = self.start_of(from);
        match &self.scores {
            Scores::Delta { base, d } => {
                for (i, &delta) in d.iter().enumerate().take(to).skip(from) {
                    let end = self.end_of(i);
                    f(&self.bytes[start..end], base + f64::from(delta));
                    start = end;
                }
            }
            Scores::Full(v) => {
                for (i, &score) in v.iter().enumerate().take(to).skip(from) {
                    let end = self.end_of(i);
                    f(&self.bytes[start..end], score);
                    start = end;
                }
            }
        }
    }

    /// First index for which `before` is false (`before` monotonic).
    fn partition(&self, before: &impl Fn(f64, &[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if before(self.scores.get(mid), self.member(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Grows the arrays in bounded steps instead of doubling: nodes that
    /// fill slowly (after a split) would otherwise carry up to 50% slack.
    fn reserve_for(&mut self, member_len: usize) {
        const STEP: usize = 16;
        if self.scores.len() == self.scores.capacity() {
            self.scores.reserve_exact(STEP);
        }
        if !self.ends.is_empty() && self.ends.len() == self.ends.capacity() {
            self.ends.reserve_exact(STEP);
        }
        if self.fps.len() == self.fps.capacity() {
            self.fps.reserve_exact(STEP);
        }
        if self.bytes.capacity() - self.bytes.len() < member_len {
            let avg = self.bytes.len() / self.count().max(1);
            self.bytes.reserve_exact(member_len.max(avg * STEP));
        }
    }

    /// The common member length of a node without explicit offsets. A
    /// lone member's is its length (its stored width may be truncated).
    fn uniform_width(&self) -> usize {
        if self.count() == 1 {
            self.bytes.len()
        } else {
            usize::from(self.width)
        }
    }

    /// Switches a node to explicit end offsets.
    fn materialize_ends(&mut self) {
        let c = self.count();
        if !self.ends.is_empty() || c == 0 {
            return;
        }
        let w = self.uniform_width();
        self.ends.reserve_exact(c + 16);
        self.ends.extend((1..c).map(|k| (k * w) as u16));
        self.ends.push(self.bytes.len() as u16);
    }

    /// Keeps the offsets arithmetic if a member of `len` bytes has the
    /// common width, otherwise switches the node to explicit offsets (for
    /// good: elements are re-examined only when they move to a new node).
    fn admit_width(&mut self, len: usize) {
        if !self.ends.is_empty() {
            return;
        }
        if self.count() == 0 {
            self.width = len as u16;
        } else if len == self.uniform_width() {
            // A node taking a second member holds at most NODE_BYTES.
            self.width = len as u16;
        } else {
            self.materialize_ends();
        }
    }

    fn insert_entry(&mut self, i: usize, member: &[u8], score: f64, fp: u8) {
        self.admit_width(member.len());
        self.reserve_for(member.len());
        self.fps.insert(i, fp);
        let at = self.start_of(i);
        // Grow, shift the tail with one memmove, then write the member
        // (`splice` goes through an iterator).
        let old_len = self.bytes.len();
        self.bytes.extend_from_slice(member);
        self.bytes.copy_within(at..old_len, at + member.len());
        self.bytes[at..at + member.len()].copy_from_slice(member);
        if !self.ends.is_empty() {
            let n = member.len() as u16;
            for e in &mut self.ends[i..] {
                *e = e.wrapping_add(n);
            }
            self.ends.insert(i, (at as u16).wrapping_add(n));
        }
        self.scores.insert(i, score);
        self.sync_last();
        if let Some(t) = &mut self.ttl {
            t.shift_insert(i);
        }
    }

    fn deadline(&self, i: usize) -> u64 {
        self.ttl.as_ref().map_or(NO_TTL, |t| t.get(i))
    }

    fn ttl_count(&self) -> usize {
        self.ttl.as_ref().map_or(0, |t| t.len())
    }

    /// Earliest deadline in the node (`u64::MAX` if none).
    fn min_deadline(&self) -> u64 {
        self.ttl.as_ref().map_or(u64::MAX, |t| t.min())
    }

    fn sync_last(&mut self) {
        self.last_score = self.scores.last().unwrap_or(0.0);
    }

    /// Index of the first element not below (score, member); member bytes
    /// are only read on score ties. The score form is matched once, not
    /// per probe, and the halving loop has no data-dependent exit, so it
    /// compiles to conditional moves.
    fn partition_key(&self, score: f64, member: &[u8]) -> usize {
        match &self.scores {
            Scores::Delta { base, d } => {
                let base = *base;
                self.search(d.len(), |i| {
                    let s = base + f64::from(d[i]);
                    s < score || (s == score && self.member(i) < member)
                })
            }
            Scores::Full(v) => self.search(v.len(), |i| {
                let s = v[i];
                s < score || (s == score && self.member(i) < member)
            }),
        }
    }

    /// First index in `0..n` for which `before` is false (`before`
    /// monotonic).
    #[inline(always)]
    fn search(&self, n: usize, before: impl Fn(usize) -> bool) -> usize {
        if n == 0 {
            return 0;
        }
        let (mut lo, mut len) = (0, n);
        while len > 1 {
            let half = len / 2;
            if before(lo + half) {
                lo += half;
            }
            len -= half;
        }
        lo + usize::from(before(lo))
    }

    /// Index of the first element whose score fails `before`.
    fn partition_score(&self, before: &impl Fn(f64) -> bool) -> usize {
        self.scores.partition_point(before)
    }

    fn push_entry(&mut self, member: &[u8], score: f64, fp: u8) {
        self.admit_width(member.len());
        self.fps.push(fp);
        self.reserve_for(member.len());
        self.bytes.extend_from_slice(member);
        if !self.ends.is_empty() {
            self.ends.push(self.bytes.len() as u16);
        }
        self.scores.push(score);
        self.sync_last();
    }

    /// Removes entries `from..to`; returns how many deadlines went with
    /// them.
    fn remove_entries(&mut self, from: usize, to: usize) -> usize {
        let mut dropped = 0;
        if let Some(t) = &mut self.ttl {
            dropped = t.remove_range(from, to);
            if t.is_empty() {
                self.ttl = None;
            }
        }
        let (a, b) = (self.start_of(from), self.start_of(to));
        self.bytes.drain(a..b);
        self.fps.drain(from..to);
        if !self.ends.is_empty() {
            let n = (b - a) as u16;
            self.ends.drain(from..to);
            for e in &mut self.ends[from..] {
                *e = e.wrapping_sub(n);
            }
        }
        self.scores.remove_range(from, to);
        self.sync_last();
        let c = self.count();
        if self.scores.capacity() >= 2 * c + 32 {
            self.scores.shrink_to(c + 16);
            self.ends.shrink_to(c + 16);
            self.fps.shrink_to(c + 16);
            self.bytes
                .shrink_to(self.bytes.len() + self.bytes.len() / 4);
        }
        dropped
    }

    /// Moves entries `from..` into a fresh node (links left empty), with
    /// their deadlines.
    fn split_off(&mut self, from: usize, cap: usize) -> Node {
        let mut n = Node::with_capacity(
            (self.count() - from).min(cap),
            self.bytes.len() - self.start_of(from),
        );
        for i in from..self.count() {
            let (m, s) = self.entry(i);
            n.push_entry(m, s, self.fps[i]);
        }
        if let Some(t) = &mut self.ttl {
            let moved = t.split_off(from);
            if !moved.is_empty() {
                n.ttl = Some(Box::new(moved));
            }
            if t.is_empty() {
                self.ttl = None;
            }
        }
        self.remove_entries(from, self.count());
        // Each half keeps room to grow by a few steps, not a full node.
        self.scores.shrink_to(from + 16);
        self.ends.shrink_to(from + 16);
        self.fps.shrink_to(from + 16);
        self.bytes
            .shrink_to(self.bytes.len() + self.bytes.len() / 4);
        n
    }

    fn with_capacity(cap: usize, bytes: usize) -> Node {
        Node {
            scores: Scores::with_capacity(cap),
            ends: Vec::new(),
            width: 0,
            fps: Vec::with_capacity(cap),
            bytes: Vec::with_capacity(bytes),
            links: Links::default(),
            prev: HEAD,
            last_score: 0.0,
            ttl: None,
        }
    }

    fn heap_bytes(&self) -> usize {
        self.ttl.as_ref().map_or(0, |t| {
            std::mem::size_of::<Deadlines<u16>>() + t.heap_bytes()
        }) + self.scores.heap_bytes()
            + self.ends.capacity() * 2
            + self.fps.capacity()
            + self.bytes.capacity()
            + self.links.high.capacity() * std::mem::size_of::<Link>()
    }
}

/// A structural change to one element, reported so the member index can
/// follow elements between nodes.
pub(crate) enum Event<'a> {
    Moved {
        member: &'a [u8],
        from: u32,
        to: u32,
    },
    Removed {
        member: &'a [u8],
        score: f64,
        node: u32,
    },
}

type Sink<'s> = &'s mut dyn FnMut(Event<'_>);

/// Predecessor of a position at every level, with its end rank.
#[derive(Clone, Copy)]
struct Path {
    node: [u32; MAX_LEVEL],
    end: [usize; MAX_LEVEL],
}

impl Path {
    fn new() -> Path {
        Path {
            node: [HEAD; MAX_LEVEL],
            end: [0; MAX_LEVEL],
        }
    }
}

/// The ordered element store (no member index).
#[derive(Clone)]
pub(crate) struct List {
    nodes: Vec<Node>,
    /// Each slab slot's `last_score`, densely: a descent compares against
    /// the node it might step onto, and a few kilobytes of f64s stay in
    /// cache where the nodes themselves (cache misses, one per
    /// comparison) do not. Only the node actually stepped onto is read.
    last: Vec<f64>,
    free: Vec<u32>,
    level: usize,
    len: usize,
    tail: u32,
    node_cap: usize,
    rng: u64,
    /// Members with a deadline.
    ttl_count: usize,
    /// At or before every member deadline (meaningful while `ttl_count`
    /// is non-zero): lowered by every new deadline, made exact by a
    /// completed expiry pass.
    ttl_bound: u64,
    /// The expiry pass: the next slab slot to visit, and the earliest
    /// deadline seen in (or moved into) the slots already visited.
    ttl_cursor: u32,
    ttl_pass_min: u64,
}

impl List {
    pub(crate) fn new(node_cap: usize) -> List {
        let head = Node {
            links: Links::from_vec(vec![Link { next: NIL, span: 0 }; MAX_LEVEL]),
            ..Node::default()
        };
        List {
            nodes: vec![head],
            last: vec![0.0],
            free: Vec::new(),
            level: 1,
            len: 0,
            tail: NIL,
            node_cap: node_cap.max(2),
            rng: 0x9E37_79B9_7F4A_7C15,
            ttl_count: 0,
            ttl_bound: u64::MAX,
            ttl_cursor: 1,
            ttl_pass_min: u64::MAX,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    /// Copies node `t`'s last score into the dense array; called after
    /// every change to a linked node's elements.
    fn sync_last(&mut self, t: u32) {
        self.last[t as usize] = self.nodes[t as usize].last_score;
    }

    fn random_level(&mut self) -> usize {
        // xorshift64*: level choice needs no quality beyond "geometric".
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let r = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        // p = 1/4 per level, as in Redis.
        ((r.trailing_zeros() / 2) as usize + 1).min(MAX_LEVEL)
    }

    /// Walks down the levels advancing while `advance(next_node_id,
    /// end_of_next)` holds, never stepping onto the tail. Returns the
    /// predecessors and the target node (the first node not advanced past,
    /// NIL if empty).
    fn descend(&self, advance: impl Fn(u32, usize) -> bool) -> (Path, u32) {
        let mut path = Path::new();
        let (_, t) = self.walk_down(advance, |i, x, end| {
            path.node[i] = x;
            path.end[i] = end;
        });
        (path, t)
    }

    /// [`descend`](Self::descend) for a count: the elements before the
    /// target node and the node, without recording the predecessors.
    fn descend_end(&self, advance: impl Fn(u32, usize) -> bool) -> (usize, u32) {
        self.walk_down(advance, |_, _, _| {})
    }

    /// The descent itself; `at_level(level, node, end)` is told where it
    /// left each level.
    #[inline(always)]
    fn walk_down(
        &self,
        advance: impl Fn(u32, usize) -> bool,
        mut at_level: impl FnMut(usize, u32, usize),
    ) -> (usize, u32) {
        let mut x = HEAD;
        let mut end = 0;
        for i in (0..self.level).rev() {
            loop {
                let l = self.node(x).links[i];
                if l.next == NIL || l.next == self.tail {
                    break;
                }
                if !advance(l.next, end + l.span) {
                    break;
                }
                x = l.next;
                end += l.span;
            }
            at_level(i, x, end);
        }
        (end, self.node(x).links[0].next)
    }

    /// Position of the first element for which `before` is false.
    fn seek(&self, before: &impl Fn(f64, &[u8]) -> bool) -> (Path, u32, usize) {
        let (path, t) = self.descend(|n, _| {
            let (m, s) = self.node(n).last();
            before(s, m)
        });
        let idx = if t == NIL {
            0
        } else {
            self.node(t).partition(before)
        };
        (path, t, idx)
    }

    /// The descent towards (score, member): predecessors and target node.
    fn descend_key(&self, score: f64, member: &[u8]) -> (Path, u32) {
        self.descend(|n, _| {
            let last = self.last[n as usize];
            last < score || (last == score && self.node(n).last().0 < member)
        })
    }

    fn seek_key(&self, score: f64, member: &[u8]) -> (Path, u32, usize) {
        let (path, t) = self.descend_key(score, member);
        let idx = if t == NIL {
            0
        } else {
            self.node(t).partition_key(score, member)
        };
        (path, t, idx)
    }

    /// Number of leading elements whose score satisfies `before`.
    pub(crate) fn count_while_score(&self, before: impl Fn(f64) -> bool) -> usize {
        self.score_position(before).0
    }

    /// [`count_while_score`](Self::count_while_score)'s count, with a
    /// cursor already there: a score range's first element is found by one
    /// descent, not a count and then a descent by rank.
    pub(crate) fn seek_score(&self, before: impl Fn(f64) -> bool) -> (usize, Iter<'_>) {
        let (rank, at) = self.score_position(before);
        (rank, self.cursor(at))
    }

    /// The first element whose score fails `before`: its rank, and its node
    /// and place there (`None`: the end of the list).
    fn score_position(&self, before: impl Fn(f64) -> bool) -> (usize, Option<(u32, usize)>) {
        // A window's range usually runs to the newest score (`+inf`) or
        // from before the oldest: the ends answer those without a descent.
        if self.len == 0 || before(self.node(self.tail).last_score) {
            return (self.len, None);
        }
        if self.first().is_some_and(|(_, s)| !before(s)) {
            return (0, Some((self.node(HEAD).links[0].next, 0)));
        }
        // The descent stops at the first node whose last score fails
        // `before` (the tail's does), so the position is inside that node.
        let (end, t) = self.descend_end(|n, _| before(self.last[n as usize]));
        if t == NIL {
            return (end, None);
        }
        let idx = self.node(t).partition_score(&before);
        (end + idx, Some((t, idx)))
    }

    /// Position of the element with rank `rank` (tail end if `rank == len`).
    fn seek_rank(&self, rank: usize) -> (Path, u32, usize) {
        let (path, t) = self.descend(|_, end| end <= rank);
        (path, t, rank - path.end[0])
    }

    /// Number of leading elements for which `before` holds.
    pub(crate) fn count_while(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        let (path, _, idx) = self.seek(&before);
        path.end[0] + idx
    }

    /// Rank of (score, member) if present with exactly these score bits.
    fn rank_of(&self, score: f64, member: &[u8]) -> Option<usize> {
        let (path, t, idx) = self.seek_key(score, member);
        if t == NIL {
            return None;
        }
        let n = self.node(t);
        if idx < n.count()
            && n.scores.get(idx).to_bits() == score.to_bits()
            && n.member(idx) == member
        {
            Some(path.end[0] + idx)
        } else {
            None
        }
    }

    pub(crate) fn first(&self) -> Option<(&[u8], f64)> {
        let f = self.node(HEAD).links[0].next;
        if f == NIL {
            None
        } else {
            Some(self.node(f).entry(0))
        }
    }

    pub(crate) fn get_by_rank(&self, rank: usize) -> Option<(&[u8], f64)> {
        if rank >= self.len {
            return None;
        }
        let (t, idx) = self.find_rank(rank);
        Some(self.node(t).entry(idx))
    }

    /// [`seek_rank`](Self::seek_rank)'s node and place, for a reader.
    fn find_rank(&self, rank: usize) -> (u32, usize) {
        let (end, t) = self.descend_end(|_, end| end <= rank);
        (t, rank - end)
    }

    /// Cursor at `rank`: `next()` yields rank, rank+1, ...; `prev()` yields
    /// rank-1, rank-2, ...
    pub(crate) fn iter_at(&self, rank: usize) -> Iter<'_> {
        if rank >= self.len {
            return self.cursor(None);
        }
        self.cursor(Some(self.find_rank(rank)))
    }

    /// A cursor at element `idx` of node `t`, or with `None` at the end.
    fn cursor(&self, at: Option<(u32, usize)>) -> Iter<'_> {
        let (node, idx, back_node, back_idx) = match at {
            Some((t, idx)) => (t, idx, t, idx),
            None => {
                let t = self.tail;
                let idx = if t == NIL { 0 } else { self.node(t).count() };
                (NIL, 0, t, idx)
            }
        };
        Iter {
            list: self,
            node,
            idx,
            back_node,
            back_idx,
        }
    }

    fn add_spans(&mut self, path: &Path, delta: isize) {
        for i in 0..self.level {
            let l = &mut self.nodes[path.node[i] as usize].links[i];
            l.span = l.span.wrapping_add_signed(delta);
        }
        self.len = self.len.wrapping_add_signed(delta);
    }

    fn alloc(&mut self, n: Node) -> u32 {
        let last = n.last_score;
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = n;
                self.last[i as usize] = last;
                i
            }
            None => {
                self.nodes.push(n);
                self.last.push(last);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Links node `u` (already holding its elements, not yet counted)
    /// directly after `preds.node[0]`; `preds` must be its predecessors.
    // Levels below the new node's height and above it need different
    // updates, so an index loop reads clearer than two zipped iterators.
    #[allow(clippy::needless_range_loop)]
    fn link(&mut self, preds: &mut Path, u: u32) {
        let c = self.node(u).count();
        let lvl = self.random_level();
        if lvl > self.level {
            for i in self.level..lvl {
                self.nodes[0].links[i] = Link {
                    next: NIL,
                    span: self.len,
                };
                preds.node[i] = HEAD;
                preds.end[i] = 0;
            }
            self.level = lvl;
        }
        let p0 = preds.node[0];
        let e0 = preds.end[0];
        let after = self.node(p0).links[0].next;
        let mut links = vec![Link::default(); lvl];
        for i in 0..self.level {
            let x = preds.node[i] as usize;
            let ex = preds.end[i];
            let l = self.nodes[x].links[i];
            if i < lvl {
                links[i] = Link {
                    next: l.next,
                    span: ex + l.span - e0,
                };
                self.nodes[x].links[i] = Link {
                    next: u,
                    span: e0 + c - ex,
                };
            } else {
                self.nodes[x].links[i].span += c;
            }
        }
        let un = self.node_mut(u);
        un.links = Links::from_vec(links);
        un.prev = p0;
        if after == NIL {
            self.tail = u;
        } else {
            self.node_mut(after).prev = u;
        }
        self.len += c;
    }

    /// Unlinks the (now empty) node `t`; `path` holds its predecessors and
    /// stays valid as the predecessors of `t`'s successor.
    fn unlink(&mut self, path: &Path, t: u32) {
        let tn = std::mem::take(self.node_mut(t));
        self.ttl_count -= tn.ttl_count();
        for i in 0..self.level {
            let x = path.node[i] as usize;
            if i < tn.links.len() && self.nodes[x].links[i].next == t {
                let span = self.nodes[x].links[i].span + tn.links[i].span;
                self.nodes[x].links[i] = Link {
                    next: tn.links[i].next,
                    span,
                };
            }
        }
        let after = tn.links.first().map_or(NIL, |l| l.next);
        if after == NIL {
            self.tail = if tn.prev == HEAD { NIL } else { tn.prev };
        } else {
            self.node_mut(after).prev = tn.prev;
        }
        self.free.push(t);
        while self.level > 1 && self.nodes[0].links[self.level - 1].next == NIL {
            self.level -= 1;
        }
        if self.len == 0 {
            // Drop the slab entirely so an emptied set releases memory.
            self.nodes.truncate(1);
            self.last.truncate(1);
            self.free.clear();
            self.level = 1;
            self.nodes[0].links[0] = Link { next: NIL, span: 0 };
        }
    }

    /// Predecessors of the position right after node `t`.
    fn path_after(&self, path: &Path, t: u32) -> Path {
        let mut p = *path;
        let end_t = path.end[0] + self.node(t).count();
        for i in 0..self.node(t).links.len() {
            p.node[i] = t;
            p.end[i] = end_t;
        }
        p
    }

    fn is_full(&self, t: u32, extra_bytes: usize) -> bool {
        let n = self.node(t);
        n.count() >= self.node_cap || (n.count() > 0 && n.bytes.len() + extra_bytes > NODE_BYTES)
    }

    /// Reports every element of node `to` from index `from_idx` on as
    /// having moved there from node `from`.
    fn report_moves(&self, sink: Sink<'_>, from: u32, to: u32, from_idx: usize) {
        let n = self.node(to);
        for i in from_idx..n.count() {
            sink(Event::Moved {
                member: n.member(i),
                from,
                to,
            });
        }
    }

    /// Inserts an element known to be absent (without a deadline); returns
    /// the node holding it and its position there. Elements displaced by a
    /// split are reported to `sink`.
    pub(crate) fn insert(
        &mut self,
        score: f64,
        member: &[u8],
        fp: u8,
        sink: Sink<'_>,
    ) -> (u32, usize) {
        let (mut path, t, idx) = self.seek_key(score, member);
        if t == NIL {
            let mut n = Node::with_capacity(self.node_cap, member.len());
            n.push_entry(member, score, fp);
            let u = self.alloc(n);
            self.link(&mut path, u);
            return (u, 0);
        }
        if !self.is_full(t, member.len()) {
            self.node_mut(t).insert_entry(idx, member, score, fp);
            self.sync_last(t);
            self.add_spans(&path, 1);
            return (t, idx);
        }
        let count = self.node(t).count();
        let bytes_hint = self.node(t).bytes.len();
        if idx == count || idx == 0 {
            // Start a fresh neighbour instead of halving, so sequential
            // inserts leave full nodes behind.
            let mut n = Node::with_capacity(self.node_cap, bytes_hint.max(member.len()));
            n.push_entry(member, score, fp);
            let u = self.alloc(n);
            let mut preds = if idx == 0 {
                path
            } else {
                self.path_after(&path, t)
            };
            self.link(&mut preds, u);
            return (u, 0);
        }
        let mid = count / 2;
        let cap = self.node_cap;
        let half_bytes = {
            let n = self.node(t);
            if idx <= mid {
                n.start_of(mid)
            } else {
                n.bytes.len() - n.start_of(mid)
            }
        };
        if half_bytes + member.len() > NODE_BYTES {
            // Too big to share a node: cut `t` at the insertion point and
            // give the member its own node in between.
            let moved = self.node_mut(t).split_off(idx, cap);
            self.sync_last(t);
            self.add_spans(&path, -(moved.count() as isize));
            let u = self.alloc(moved);
            self.deadlines_moved(u);
            let mut preds = self.path_after(&path, t);
            self.link(&mut preds, u);
            self.report_moves(sink, t, u, 0);
            let mut n = Node::with_capacity(1, member.len());
            n.push_entry(member, score, fp);
            let v = self.alloc(n);
            let mut preds = self.path_after(&path, t);
            self.link(&mut preds, v);
            return (v, 0);
        }
        let moved = self.node_mut(t).split_off(mid, cap);
        self.sync_last(t);
        let c = moved.count();
        self.add_spans(&path, -(c as isize));
        let u = self.alloc(moved);
        self.deadlines_moved(u);
        let mut preds = self.path_after(&path, t);
        self.link(&mut preds, u);
        // Report before inserting: the new element has no index entry yet.
        self.report_moves(sink, t, u, 0);
        if idx <= mid {
            self.node_mut(t).insert_entry(idx, member, score, fp);
            self.sync_last(t);
            self.add_spans(&path, 1);
            (t, idx)
        } else {
            self.node_mut(u).insert_entry(idx - mid, member, score, fp);
            self.sync_last(u);
            self.add_spans(&preds, 1);
            (u, idx - mid)
        }
    }

    /// Deadlines just moved into slot `u`: if the expiry pass has already
    /// visited it, they count towards the pass's minimum.
    fn deadlines_moved(&mut self, u: u32) {
        if u < self.ttl_cursor {
            self.ttl_pass_min = self.ttl_pass_min.min(self.node(u).min_deadline());
        }
    }

    /// Merges `t`'s successor into `t` when both are small, so deletions
    /// cannot leave a long chain of nearly empty nodes.
    fn maybe_merge(&mut self, path: &Path, t: u32, sink: Sink<'_>) {
        if t == NIL || self.node(t).count() == 0 {
            return;
        }
        let tn = self.node(t);
        if tn.count() * 4 > self.node_cap {
            return;
        }
        let n = tn.links[0].next;
        if n == NIL {
            return;
        }
        let nn = self.node(n);
        if tn.count() + nn.count() > self.node_cap * 3 / 4
            || tn.bytes.len() + nn.bytes.len() > NODE_BYTES
        {
            return;
        }
        let old_count = tn.count();
        if tn.ends.is_empty() && nn.ends.is_empty() && tn.uniform_width() == nn.uniform_width() {
            let w = tn.uniform_width() as u16;
            self.node_mut(t).width = w;
        } else {
            self.node_mut(t).materialize_ends();
            self.node_mut(n).materialize_ends();
        }
        let nn = self.node_mut(n);
        let moved = std::mem::take(&mut nn.scores);
        let ends = std::mem::take(&mut nn.ends);
        let fps = std::mem::take(&mut nn.fps);
        let bytes = std::mem::take(&mut nn.bytes);
        let ttl = nn.ttl.take();
        let c = moved.len();
        {
            let tn = self.node_mut(t);
            if let Some(d) = ttl {
                tn.ttl.get_or_insert_default().append(&d, old_count);
            }
            let base = tn.bytes.len() as u16;
            tn.bytes.extend_from_slice(&bytes);
            tn.ends.extend(ends.iter().map(|e| e.wrapping_add(base)));
            tn.fps.extend_from_slice(&fps);
            for s in moved.iter() {
                tn.scores.push(s);
            }
            tn.sync_last();
        }
        self.sync_last(t);
        self.deadlines_moved(t);
        self.report_moves(sink, n, t, old_count);
        // Element totals up to `n` are unchanged; `t` now ends c later.
        for i in 0..self.node(t).links.len() {
            self.nodes[path.node[i] as usize].links[i].span += c;
            self.nodes[t as usize].links[i].span -= c;
        }
        let preds = self.path_after(path, t);
        self.unlink(&preds, n);
    }

    /// Removes the element at a known position.
    fn remove_at(&mut self, path: &Path, t: u32, idx: usize, sink: Sink<'_>) {
        self.ttl_count -= self.node_mut(t).remove_entries(idx, idx + 1);
        self.sync_last(t);
        self.add_spans(path, -1);
        if self.node(t).count() == 0 {
            self.unlink(path, t);
        } else {
            self.maybe_merge(path, t, sink);
        }
    }

    /// Position of (score, member) if present with exactly these bits.
    /// With `hint` (node, position), where the member index placed it, the
    /// descent still gathers the path, but the search inside the node is
    /// skipped when the descent lands on that node.
    fn locate_at(
        &self,
        score: f64,
        member: &[u8],
        hint: Option<(u32, usize)>,
    ) -> Option<(Path, u32, usize)> {
        if let Some((t, idx)) = hint {
            let (path, landed) = self.descend_key(score, member);
            let n = self.node(t);
            if landed == t
                && idx < n.count()
                && n.scores.get(idx).to_bits() == score.to_bits()
                && n.member(idx) == member
            {
                return Some((path, t, idx));
            }
        }
        let (path, t, idx) = self.seek_key(score, member);
        if t == NIL {
            return None;
        }
        let n = self.node(t);
        if idx >= n.count()
            || n.scores.get(idx).to_bits() != score.to_bits()
            || n.member(idx) != member
        {
            return None;
        }
        Some((path, t, idx))
    }

    /// Removes an element, found from `hint` (the node and position it
    /// was last seen at) when there is one; false if it is not there.
    fn remove_placed(
        &mut self,
        score: f64,
        member: &[u8],
        hint: Option<(u32, usize)>,
        sink: Sink<'_>,
    ) -> bool {
        let Some((path, t, idx)) = self.locate_at(score, member, hint) else {
            return false;
        };
        self.remove_at(&path, t, idx, sink);
        true
    }

    /// Changes the score of a present element, in place when the order
    /// allows (as Redis's zslUpdateScore does), found from `hint` (the node
    /// and position it was last seen at) when there is one. Returns the
    /// node now holding it.
    fn update_placed(
        &mut self,
        old: f64,
        member: &[u8],
        new: f64,
        hint: Option<(u32, usize)>,
        sink: Sink<'_>,
    ) -> Option<u32> {
        let (path, t, idx) = self.locate_at(old, member, hint)?;
        let n = self.node(t);
        let prev_ok = if idx > 0 {
            let (pm, ps) = n.entry(idx - 1);
            key_less(ps, pm, new, member)
        } else if n.prev != HEAD {
            let (pm, ps) = self.node(n.prev).last();
            key_less(ps, pm, new, member)
        } else {
            true
        };
        let next_ok = if idx + 1 < n.count() {
            let (nm, ns) = n.entry(idx + 1);
            key_less(new, member, ns, nm)
        } else if n.links[0].next != NIL {
            let (nm, ns) = self.node(n.links[0].next).entry(0);
            key_less(new, member, ns, nm)
        } else {
            true
        };
        if prev_ok && next_ok {
            let n = self.node_mut(t);
            n.scores.set(idx, new);
            n.sync_last();
            self.sync_last(t);
            return Some(t);
        }
        let fp = self.node(t).fps[idx];
        // ZINCRBY keeps the member's deadline across the move.
        let at = self.node(t).deadline(idx);
        self.remove_at(&path, t, idx, sink);
        let (u, i) = self.insert(new, member, fp, sink);
        self.set_deadline(u, i, at);
        Some(u)
    }

    /// Removes `count` elements starting at rank `start`, reporting each in
    /// ascending order; whole nodes inside the range are unlinked in O(1).
    pub(crate) fn remove_rank_range(
        &mut self,
        start: usize,
        count: usize,
        sink: Sink<'_>,
    ) -> usize {
        if start >= self.len || count == 0 {
            return 0;
        }
        let (mut path, mut t, mut idx) = self.seek_rank(start);
        let mut remaining = count.min(self.len - start);
        let total = remaining;
        let mut first_partial: Option<(Path, u32)> = None;
        while remaining > 0 && t != NIL {
            let cnt = self.node(t).count();
            let take = (cnt - idx).min(remaining);
            {
                let n = self.node(t);
                for j in idx..idx + take {
                    let (member, score) = n.entry(j);
                    sink(Event::Removed {
                        member,
                        score,
                        node: t,
                    });
                }
            }
            remaining -= take;
            if take == cnt {
                let next = self.node(t).links[0].next;
                self.add_spans(&path, -(cnt as isize));
                self.unlink(&path, t);
                t = next;
                idx = 0;
            } else {
                self.ttl_count -= self.node_mut(t).remove_entries(idx, idx + take);
                self.sync_last(t);
                self.add_spans(&path, -(take as isize));
                if remaining > 0 {
                    first_partial = Some((path, t));
                    path = self.path_after(&path, t);
                    t = self.node(t).links[0].next;
                    idx = 0;
                } else {
                    self.maybe_merge(&path, t, sink);
                }
            }
        }
        if let Some((p, f)) = first_partial {
            self.maybe_merge(&p, f, sink);
        }
        total - remaining
    }

    /// Index and score of `member` inside node `node`, by a scan of its
    /// fingerprints (the member index only knows which node holds an
    /// element), eight at a time.
    fn find_in_node(&self, node: u32, member: &[u8], fp: u8) -> Option<(usize, f64)> {
        let n = self.nodes.get(node as usize)?;
        let count = n.count().min(n.fps.len());
        let fps = &n.fps[..count];
        let hit = |i: usize| n.member(i) == member;
        let pattern = u64::from(fp) * 0x0101_0101_0101_0101;
        let mut chunks = fps.chunks_exact(8);
        let mut at = 0;
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            // Bytes of `x` that are zero are where the fingerprint matches
            // (the classic has-zero-byte test; a borrow can only mark a
            // byte above a true zero, and candidates are confirmed anyway).
            let x = w ^ pattern;
            let mut m = x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080;
            while m != 0 {
                let i = at + (m.trailing_zeros() / 8) as usize;
                if fps[i] == fp && hit(i) {
                    return Some((i, n.scores.get(i)));
                }
                m &= m - 1;
            }
            at += 8;
        }
        let i = (at..count).find(|&i| fps[i] == fp && hit(i))?;
        Some((i, n.scores.get(i)))
    }

    /// The deadline of element `i` of node `node` ([`NO_TTL`] if none).
    pub(crate) fn deadline(&self, node: u32, i: usize) -> u64 {
        self.node(node).deadline(i)
    }

    /// Sets (or with [`NO_TTL`] clears) the deadline of element `i` of
    /// node `node`.
    pub(crate) fn set_deadline(&mut self, node: u32, i: usize, at: u64) {
        if at == NO_TTL {
            let n = &mut self.nodes[node as usize];
            if let Some(t) = &mut n.ttl {
                if t.clear(i) != NO_TTL {
                    self.ttl_count -= 1;
                }
                if t.is_empty() {
                    n.ttl = None;
                }
            }
            return;
        }
        let room = self.node_cap;
        if self
            .node_mut(node)
            .ttl
            .get_or_insert_default()
            .set(i, at, room)
            == NO_TTL
        {
            self.ttl_count += 1;
            if self.ttl_count == 1 {
                // The only deadline: whatever the bound was is moot.
                self.ttl_bound = at;
            }
        }
        self.ttl_bound = self.ttl_bound.min(at);
        if node < self.ttl_cursor {
            self.ttl_pass_min = self.ttl_pass_min.min(at);
        }
    }

    pub(crate) fn ttl_count(&self) -> usize {
        self.ttl_count
    }

    /// A lower bound on every member deadline; None if none has one.
    pub(crate) fn min_deadline(&self) -> Option<u64> {
        (self.ttl_count > 0).then_some(self.ttl_bound)
    }

    /// The expiry pass: the first member due at `now` in the slab from the
    /// cursor on, visiting at most `visits` nodes (counted down). A node
    /// with nothing due costs O(1) (its minimum is cached). Reaching the
    /// end of the slab completes a pass: the bound becomes the pass's
    /// minimum, exact unless members were removed behind the cursor, and
    /// if that is still due a second pass starts from the first slot
    /// (members that came due behind the cursor since it passed them).
    /// Returns None when nothing is due or the visits ran out.
    pub(crate) fn next_due(&mut self, now: u64, visits: &mut usize) -> Option<&[u8]> {
        if self.ttl_count == 0 {
            self.ttl_cursor = 1;
            self.ttl_pass_min = u64::MAX;
            return None;
        }
        let mut completed = 0;
        loop {
            let c = self.ttl_cursor as usize;
            if c >= self.nodes.len() {
                self.ttl_bound = self.ttl_pass_min;
                self.ttl_pass_min = u64::MAX;
                self.ttl_cursor = 1;
                completed += 1;
                // A pass that started at slot 1 within this call saw
                // everything: a second completion has nothing left due.
                if self.ttl_bound > now || completed == 2 {
                    return None;
                }
                continue;
            }
            if *visits == 0 {
                return None;
            }
            *visits -= 1;
            let n = &self.nodes[c];
            if let Some(t) = &n.ttl {
                if let Some(i) = t.first_due(now) {
                    return Some(self.nodes[c].member(i));
                }
                self.ttl_pass_min = self.ttl_pass_min.min(t.min());
            }
            self.ttl_cursor += 1;
        }
    }

    /// Visits (rank, deadline) of each member with a TTL, in rank order.
    pub(crate) fn for_each_deadline(&self, mut f: impl FnMut(usize, u64)) {
        let mut base = 0;
        let mut x = self.node(HEAD).links[0].next;
        while x != NIL {
            let n = self.node(x);
            if let Some(t) = &n.ttl {
                for (i, at) in t.iter() {
                    f(base + i, at);
                }
            }
            base += n.count();
            x = n.links[0].next;
        }
    }

    /// Whether `f(member, score, deadline)` holds for every element.
    pub(crate) fn all_with_deadlines(&self, f: impl Fn(&[u8], f64, u64) -> bool) -> bool {
        let mut x = self.node(HEAD).links[0].next;
        while x != NIL {
            let n = self.node(x);
            for i in 0..n.count() {
                let (m, s) = n.entry(i);
                if !f(m, s, n.deadline(i)) {
                    return false;
                }
            }
            x = n.links[0].next;
        }
        true
    }

    /// Visits every element with the id of the node holding it.
    fn for_each_with_node(&self, mut f: impl FnMut(&[u8], u32, u8)) {
        let mut x = self.node(HEAD).links[0].next;
        while x != NIL {
            let n = self.node(x);
            for i in 0..n.count() {
                f(n.member(i), x, n.fps.get(i).copied().unwrap_or(0));
            }
            x = n.links[0].next;
        }
    }

    /// An upper bound on any node id the next single change can produce:
    /// one insertion allocates at most two nodes.
    fn max_node_id(&self) -> u64 {
        self.nodes.len() as u64 + 1
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.iter().map(Node::heap_bytes).sum::<usize>()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.last.capacity() * 8
            + self.free.capacity() * 4
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        // Level 0 walk: order, non-empty nodes, prev links, ends, totals.
        let mut ends_at = std::collections::HashMap::new();
        ends_at.insert(HEAD, 0usize);
        let mut x = self.node(HEAD).links[0].next;
        let mut prev = HEAD;
        let mut total = 0;
        let mut last: Option<(Vec<u8>, f64)> = None;
        let mut seen = 0;
        let mut ttls = 0;
        while x != NIL {
            seen += 1;
            if seen > self.nodes.len() {
                return Err("cycle at level 0".into());
            }
            let n = self.node(x);
            if n.count() == 0 {
                return Err("empty node".into());
            }
            if n.count() > self.node_cap {
                return Err("node over capacity".into());
            }
            if n.scores.last().map(|s| s.to_bits()) != Some(n.last_score.to_bits()) {
                return Err("stale last_score".into());
            }
            if self.last.get(x as usize).map(|s| s.to_bits()) != Some(n.last_score.to_bits()) {
                return Err("stale dense last score".into());
            }
            if let Scores::Delta { base, .. } = &n.scores
                && !int_score(*base)
            {
                return Err("non-integer delta base".into());
            }
            if n.prev != prev {
                return Err("bad prev link".into());
            }
            if (!n.ends.is_empty() && n.ends.len() != n.count()) || n.fps.len() != n.count() {
                return Err("bad member offsets".into());
            }
            if n.count() >= 2
                && (n.bytes.len() > NODE_BYTES
                    || (n.ends.is_empty() && n.bytes.len() != n.count() * usize::from(n.width))
                    || (!n.ends.is_empty()
                        && n.ends.last().map(|&e| usize::from(e)) != Some(n.bytes.len())))
            {
                return Err("multi-member node over NODE_BYTES or bad offsets".into());
            }
            if n.links.is_empty() || n.links.len() > self.level {
                return Err("bad node level".into());
            }
            if let Some(t) = &n.ttl {
                if t.is_empty() {
                    return Err("empty deadline table kept".into());
                }
                t.check(n.count())?;
                if n.min_deadline() < self.ttl_bound {
                    return Err("node deadline before the set's bound".into());
                }
                if (x as usize) < self.ttl_cursor as usize && n.min_deadline() < self.ttl_pass_min {
                    return Err("visited node's deadline missed by the pass".into());
                }
                ttls += n.ttl_count();
            }
            for i in 0..n.count() {
                if n.end_of(i) > n.bytes.len() || n.start_of(i) > n.end_of(i) {
                    return Err("bad member range".into());
                }
                let (m, s) = n.entry(i);
                if s.is_nan() {
                    return Err("NaN score".into());
                }
                if let Some((lm, ls)) = &last
                    && !key_less(*ls, lm, s, m)
                {
                    return Err("elements out of order".into());
                }
                last = Some((m.to_vec(), s));
            }
            total += n.count();
            ends_at.insert(x, total);
            prev = x;
            x = n.links[0].next;
        }
        if total != self.len {
            return Err(format!("len {} but {} elements", self.len, total));
        }
        if ttls != self.ttl_count {
            return Err(format!("ttl_count {} but {ttls} deadlines", self.ttl_count));
        }
        if self.free.iter().any(|&f| self.node(f).ttl.is_some()) {
            return Err("freed node keeps deadlines".into());
        }
        if self.tail != if prev == HEAD { NIL } else { prev } {
            return Err("bad tail".into());
        }
        // Every level: spans equal end-rank differences.
        for i in 0..self.level {
            let mut x = HEAD;
            loop {
                let l = self.node(x).links[i];
                let ex = ends_at[&x];
                let en = if l.next == NIL {
                    self.len
                } else {
                    match ends_at.get(&l.next) {
                        Some(&e) => e,
                        None => return Err("link to unlisted node".into()),
                    }
                };
                if en < ex || l.span != en - ex {
                    return Err(format!("bad span at level {i}"));
                }
                if l.next == NIL {
                    break;
                }
                if self.node(l.next).links.len() <= i {
                    return Err("link to lower-level node".into());
                }
                x = l.next;
            }
        }
        Ok(())
    }
}

/// Bidirectional cursor over the list (see [`List::iter_at`]).
#[derive(Clone)]
pub(crate) struct Iter<'a> {
    list: &'a List,
    node: u32,
    idx: usize,
    back_node: u32,
    back_idx: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);
    fn next(&mut self) -> Option<Self::Item> {
        if self.node == NIL {
            return None;
        }
        let n = self.list.node(self.node);
        let e = n.entry(self.idx);
        self.idx += 1;
        if self.idx >= n.count() {
            self.node = n.links[0].next;
            self.idx = 0;
        }
        Some(e)
    }
}

impl<'a> Iter<'a> {
    /// Calls `f` on the next elements, at most `n`, a node at a time: a
    /// range reply walks each node's arrays in one loop instead of finding
    /// its place again for every element.
    pub(crate) fn each_next(&mut self, mut n: usize, f: &mut impl FnMut(&'a [u8], f64)) {
        while n > 0 && self.node != NIL {
            let node = self.list.node(self.node);
            let count = node.count();
            let to = count.min(self.idx.saturating_add(n));
            node.each_in(self.idx, to, f);
            n -= to - self.idx;
            self.idx = to;
            if self.idx >= count {
                self.node = node.links[0].next;
                self.idx = 0;
            }
        }
    }

    pub(crate) fn prev(&mut self) -> Option<(&'a [u8], f64)> {
        loop {
            if self.back_node == NIL || self.back_node == HEAD {
                return None;
            }
            let n = self.list.node(self.back_node);
            if self.back_idx > 0 {
                self.back_idx -= 1;
                return Some(n.entry(self.back_idx));
            }
            self.back_node = n.prev;
            if self.back_node != HEAD {
                self.back_idx = self.list.node(self.back_node).count();
            }
        }
    }
}

/// A present member's position: its index slot and member hash, its node
/// and place there, its score. Valid until the set next changes.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    slot: usize,
    hash: u64,
    node: u32,
    idx: usize,
    score: f64,
}

impl Place {
    pub(crate) fn score(&self) -> f64 {
        self.score
    }
}

/// The skiplist encoding: ordered list + member index + keyed hasher.
#[derive(Clone)]
pub(crate) struct SkipList {
    list: List,
    index: MemberIndex,
    hasher: MemberHasher,
}

/// Keyed 64-bit member hash: the index takes its home slot and tag from
/// it, the nodes a one-byte fingerprint. `mask` exists for tests, which
/// shrink both halves to force the collisions the index must tolerate.
///
/// foldhash rather than std's SipHash-1-3: every ZADD, ZREM, ZSCORE and
/// every element a split moves hashes its member, and for short members
/// foldhash is several times cheaper (SipHash showed in ZADD's profile).
/// It is already the keyspace's hasher (`types/dict.rs`), and like it this
/// one is randomly seeded per set, so clients cannot precompute members
/// that collide (the index is keyed by client bytes).
#[derive(Clone)]
struct MemberHasher {
    state: foldhash::fast::RandomState,
    mask: u32,
}

impl MemberHasher {
    fn hash_only(&self, member: &[u8]) -> u64 {
        self.hash(member).0
    }

    /// (index hash, in-node fingerprint) from one hash computation. The
    /// fingerprint is the lowest byte of the high half, which the home slot
    /// (a multiply-shift of the high half) barely depends on, and the tag
    /// (low half) not at all.
    fn hash(&self, member: &[u8]) -> (u64, u8) {
        let h = self.state.hash_one(member);
        let m = u64::from(self.mask);
        ((h & (m << 32 | m)), (h >> 32) as u8)
    }
}

impl SkipList {
    pub(crate) fn new(node_cap: usize, frag_mask: u32) -> SkipList {
        SkipList {
            list: List::new(node_cap),
            index: MemberIndex::default(),
            hasher: MemberHasher {
                state: foldhash::fast::RandomState::default(),
                mask: frag_mask,
            },
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    pub(crate) fn list(&self) -> &List {
        &self.list
    }

    /// Slot, node, position in the node and score of `member`: one probe
    /// run plus a scan of the candidate node(s).
    fn find(&self, member: &[u8]) -> Option<(usize, u32, usize, f64)> {
        self.place(member).map(|p| (p.slot, p.node, p.idx, p.score))
    }

    /// Where `member` is, for a change that follows its lookup
    /// ([`update_at`](Self::update_at)) without hashing and probing again.
    pub(crate) fn place(&self, member: &[u8]) -> Option<Place> {
        let (hash, fp) = self.hasher.hash(member);
        let mut hit = None;
        let slot = self.index.find(hash, |node| {
            hit = self
                .list
                .find_in_node(node, member, fp)
                .map(|(i, s)| (node, i, s));
            hit.is_some()
        })?;
        hit.map(|(node, idx, score)| Place {
            slot,
            hash,
            node,
            idx,
            score,
        })
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|(_, _, _, s)| s)
    }

    pub(crate) fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let (_, _, _, s) = self.find(member)?;
        self.list.rank_of(s, member).map(|r| (r, s))
    }

    pub(super) fn list_mut(&mut self) -> &mut List {
        &mut self.list
    }

    /// `member`'s deadline ([`NO_TTL`] if none), None if absent.
    pub(crate) fn expire_at(&self, member: &[u8]) -> Option<u64> {
        let (_, node, i, _) = self.find(member)?;
        Some(self.list.deadline(node, i))
    }

    /// Sets or clears a present member's deadline; false if absent.
    pub(crate) fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        let Some((_, node, i, _)) = self.find(member) else {
            return false;
        };
        self.list.set_deadline(node, i, at);
        true
    }

    /// Sets the deadline of a member just placed at `(node, i)` by
    /// [`insert_new`](Self::insert_new).
    pub(super) fn set_deadline_at(&mut self, (node, i): (u32, usize), at: u64) {
        self.list.set_deadline(node, i, at);
    }

    /// Re-lays the index from the list for `want` entries. The index
    /// cannot do it alone: its slots do not keep the bits of the hash that
    /// chose their home.
    fn rebuild_index(&mut self, want: usize) {
        let (list, hasher) = (&self.list, &self.hasher);
        self.index.rebuild(want, list.max_node_id(), |put| {
            list.for_each_with_node(|m, node, _| put(hasher.hash_only(m), node));
        });
    }

    /// Makes room in the index for `extra` more entries and for any node
    /// the next list change can allocate, before that change starts (its
    /// moves are reported while the list is borrowed).
    fn reserve_index(&mut self, extra: usize) {
        if self.index.needs_rebuild(extra, self.list.max_node_id()) {
            self.rebuild_index(self.len() + extra);
        }
    }

    /// Shrinks the index once removals have left it sparse.
    fn settle_index(&mut self) {
        if self.index.wants_shrink() {
            self.rebuild_index(self.len());
        }
    }

    /// Runs a list mutation with a sink that keeps the index in step with
    /// elements moving between (or leaving) nodes.
    fn with_sink<R>(&mut self, op: impl FnOnce(&mut List, Sink<'_>) -> R) -> R {
        let index = &mut self.index;
        let hasher = &self.hasher;
        let mut sink = |e: Event<'_>| match e {
            Event::Moved { member, from, to } => {
                index.relocate(hasher.hash_only(member), from, to);
            }
            Event::Removed { member, node, .. } => {
                index.remove_exact(hasher.hash_only(member), node);
            }
        };
        op(&mut self.list, &mut sink)
    }

    /// Inserts an element the caller knows to be absent; returns its
    /// place (valid until the next change).
    pub(crate) fn insert_new(&mut self, member: &[u8], score: f64) -> (u32, usize) {
        self.reserve_index(1);
        let (h, fp) = self.hasher.hash(member);
        let at = self.with_sink(|list, sink| list.insert(score, member, fp, sink));
        self.index.insert(h, at.0);
        at
    }

    /// Sets a new score for a present element; returns the old one.
    pub(crate) fn update(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let p = self.place(member)?;
        self.update_at(p, member, score);
        Some(p.score)
    }

    /// Sets a new score for `member`, found at `p` by [`place`](Self::place)
    /// with no change to the set since (a deadline change moves nothing).
    pub(crate) fn update_at(&mut self, p: Place, member: &[u8], score: f64) {
        // A rebuild would move the slot `p` names, so it comes first.
        let p = if self.index.needs_rebuild(1, self.list.max_node_id()) {
            self.rebuild_index(self.len() + 1);
            match self.place(member) {
                Some(p) => p,
                None => return,
            }
        } else {
            p
        };
        // The element's own slot leaves the index while the list moves
        // things around, so relocations can only ever touch other slots.
        self.index.remove_slot(p.slot);
        let hint = Some((p.node, p.idx));
        let node =
            self.with_sink(|list, sink| list.update_placed(p.score, member, score, hint, sink));
        if let Some(node) = node {
            self.index.insert(p.hash, node);
        }
    }

    pub(crate) fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (slot, node, idx, old) = self.find(member)?;
        self.index.remove_slot(slot);
        let hint = Some((node, idx));
        self.with_sink(|list, sink| list.remove_placed(old, member, hint, sink));
        self.settle_index();
        Some(old)
    }

    pub(crate) fn remove_rank_range(
        &mut self,
        start: usize,
        count: usize,
        mut on_removed: impl FnMut(&[u8], f64),
    ) -> usize {
        let index = &mut self.index;
        let hasher = &self.hasher;
        let mut sink = |e: Event<'_>| match e {
            Event::Moved { member, from, to } => {
                index.relocate(hasher.hash_only(member), from, to);
            }
            Event::Removed {
                member,
                score,
                node,
            } => {
                index.remove_exact(hasher.hash_only(member), node);
                on_removed(member, score);
            }
        };
        let removed = self.list.remove_rank_range(start, count, &mut sink);
        self.settle_index();
        removed
    }

    pub(crate) fn mem_usage(&self) -> usize {
        self.list.heap_bytes() + self.index.mem_usage()
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        self.list.check_invariants()?;
        self.index.check_invariants()?;
        if self.index.len() != self.list.len() {
            return Err("index and list lengths differ".into());
        }
        let mut want: Vec<(u32, u32)> = Vec::with_capacity(self.len());
        let mut bad_fp = false;
        let mut lost = false;
        self.list.for_each_with_node(|m, node, fp| {
            let (h, want_fp) = self.hasher.hash(m);
            bad_fp |= fp != want_fp;
            want.push(self.index.entry_of(h, node));
            lost |= self.place(m).is_none_or(|p| p.node != node);
        });
        if bad_fp {
            return Err("stale member fingerprint".into());
        }
        if lost {
            return Err("member not found through the index".into());
        }
        let mut have = self.index.entries();
        want.sort_unstable();
        have.sort_unstable();
        if want != have {
            return Err("index entries do not match list".into());
        }
        Ok(())
    }
}

#[cfg(test)]
#[test]
fn node_layout() {
    // The descent's fields share the first cache line of every node.
    assert_eq!(std::mem::align_of::<Node>(), 64);
    assert!(std::mem::offset_of!(Node, links) + std::mem::size_of::<[Link; 2]>() <= 64);
    eprintln!("Node is {} bytes", std::mem::size_of::<Node>());
}
