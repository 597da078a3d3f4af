//! Redis 7.0.15's large sorted-set encoding, ported for the structure
//! benchmark: the `zskiplist` of `t_zset.c` (`zslInsert`, `zslDelete`,
//! `zslUpdateScore`, p = 1/4, 32 levels) and the `dict` of `dict.c` (chained
//! buckets of malloc'd entries, power-of-two tables, incremental rehashing
//! one bucket per operation, grow at load 1, shrink under 10 %), keyed by
//! SipHash-1-2 with a random seed as `dictSdsHash` is. `zsetAdd`,
//! `zsetRemoveFromSkiplist` and ZINCRBY's path are reproduced operation by
//! operation.
//!
//! It keeps Redis's memory shape, which is what its speed depends on: one
//! allocation per skiplist node (sized for its level), one for the member
//! string (the sds the node and the dict entry share) and one per dict
//! entry. Raw pointers mirror the C; nothing outside this file sees them.
//! The server's allocator (mimalloc) stands in for jemalloc.

use std::alloc::{Layout, alloc, dealloc};
use std::ptr::{self, null_mut};

const MAXLEVEL: usize = 32;

#[repr(C)]
#[derive(Clone, Copy)]
struct Level {
    forward: *mut Node,
    span: u64,
}

/// `zskiplistNode`: the level array trails the fixed part.
#[repr(C)]
struct Node {
    ele: *mut u8,
    score: f64,
    backward: *mut Node,
    /// Not in Redis's node (its allocator knows the size); Rust's
    /// `dealloc` needs the layout back.
    level: u32,
    levels: [Level; 0],
}

fn node_layout(level: usize) -> Layout {
    Layout::from_size_align(
        std::mem::size_of::<Node>() + level * std::mem::size_of::<Level>(),
        std::mem::align_of::<Node>(),
    )
    .expect("node layout")
}

/// The level array of `n` (`n->level`).
///
/// # Safety
/// `n` must point at a live node allocated with at least `i + 1` levels.
unsafe fn lvl(n: *mut Node, i: usize) -> *mut Level {
    unsafe { (&raw mut (*n).levels).cast::<Level>().add(i) }
}

struct Skiplist {
    header: *mut Node,
    tail: *mut Node,
    length: u64,
    level: usize,
    rng: u64,
}

/// `sdscmp`: memcmp over the common prefix, then the lengths.
fn sdscmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.cmp(b)
}

impl Skiplist {
    fn new() -> Skiplist {
        let header = unsafe { create_node(MAXLEVEL, 0.0, null_mut()) };
        for j in 0..MAXLEVEL {
            unsafe {
                *lvl(header, j) = Level {
                    forward: null_mut(),
                    span: 0,
                };
            }
        }
        Skiplist {
            header,
            tail: null_mut(),
            length: 0,
            level: 1,
            rng: 0x2545_F491_4F6C_DD1D,
        }
    }

    /// `zslRandomLevel`: each further level with probability 1/4.
    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if (self.rng & 0xFFFF) >= 0x4000 {
                break;
            }
            level += 1;
        }
        level.min(MAXLEVEL)
    }

    /// `x->level[i].forward` precedes (score, ele).
    ///
    /// # Safety
    /// `f` is null or a live node.
    unsafe fn before(f: *mut Node, score: f64, ele: &[u8]) -> bool {
        !f.is_null()
            && unsafe {
                (*f).score < score || ((*f).score == score && sdscmp(sds((*f).ele), ele).is_lt())
            }
    }

    /// `zslInsert`.
    unsafe fn insert(&mut self, score: f64, ele: *mut u8) -> *mut Node {
        unsafe {
            let mut update = [null_mut::<Node>(); MAXLEVEL];
            let mut rank = [0u64; MAXLEVEL];
            let mut x = self.header;
            let key = sds(ele);
            for i in (0..self.level).rev() {
                rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
                while Self::before((*lvl(x, i)).forward, score, key) {
                    rank[i] += (*lvl(x, i)).span;
                    x = (*lvl(x, i)).forward;
                }
                update[i] = x;
            }
            let level = self.random_level();
            if level > self.level {
                for i in self.level..level {
                    rank[i] = 0;
                    update[i] = self.header;
                    (*lvl(self.header, i)).span = self.length;
                }
                self.level = level;
            }
            let x = create_node(level, score, ele);
            for i in 0..level {
                let u = lvl(update[i], i);
                *lvl(x, i) = Level {
                    forward: (*u).forward,
                    span: (*u).span - (rank[0] - rank[i]),
                };
                (*u).forward = x;
                (*u).span = (rank[0] - rank[i]) + 1;
            }
            for (i, u) in update.iter().enumerate().take(self.level).skip(level) {
                (*lvl(*u, i)).span += 1;
            }
            (*x).backward = if update[0] == self.header {
                null_mut()
            } else {
                update[0]
            };
            let f = (*lvl(x, 0)).forward;
            if f.is_null() {
                self.tail = x;
            } else {
                (*f).backward = x;
            }
            self.length += 1;
            x
        }
    }

    /// `zslDeleteNode`.
    unsafe fn delete_node(&mut self, x: *mut Node, update: &[*mut Node; MAXLEVEL]) {
        unsafe {
            for (i, &u) in update.iter().enumerate().take(self.level) {
                let l = lvl(u, i);
                if (*l).forward == x {
                    (*l).span += (*lvl(x, i)).span;
                    (*l).span -= 1;
                    (*l).forward = (*lvl(x, i)).forward;
                } else {
                    (*l).span -= 1;
                }
            }
            let f = (*lvl(x, 0)).forward;
            if f.is_null() {
                self.tail = (*x).backward;
            } else {
                (*f).backward = (*x).backward;
            }
            while self.level > 1 && (*lvl(self.header, self.level - 1)).forward.is_null() {
                self.level -= 1;
            }
            self.length -= 1;
        }
    }

    /// The descent shared by `zslDelete` and `zslUpdateScore`.
    unsafe fn find_update(&self, score: f64, ele: &[u8]) -> [*mut Node; MAXLEVEL] {
        unsafe {
            let mut update = [null_mut::<Node>(); MAXLEVEL];
            let mut x = self.header;
            for i in (0..self.level).rev() {
                while Self::before((*lvl(x, i)).forward, score, ele) {
                    x = (*lvl(x, i)).forward;
                }
                update[i] = x;
            }
            update
        }
    }

    /// `zslDelete` with a NULL `node` out-parameter: the node and its sds
    /// are freed.
    unsafe fn delete(&mut self, score: f64, ele: &[u8]) -> bool {
        unsafe {
            let update = self.find_update(score, ele);
            let x = (*lvl(update[0], 0)).forward;
            if !x.is_null() && (*x).score == score && sdscmp(sds((*x).ele), ele).is_eq() {
                self.delete_node(x, &update);
                free_sds((*x).ele);
                free_node(x);
                return true;
            }
            false
        }
    }

    /// `zslUpdateScore`.
    unsafe fn update_score(&mut self, cur: f64, ele: &[u8], new: f64) -> *mut Node {
        unsafe {
            let update = self.find_update(cur, ele);
            let x = (*lvl(update[0], 0)).forward;
            assert!(!x.is_null() && (*x).score == cur);
            let f = (*lvl(x, 0)).forward;
            if ((*x).backward.is_null() || (*(*x).backward).score < new)
                && (f.is_null() || (*f).score > new)
            {
                (*x).score = new;
                return x;
            }
            self.delete_node(x, &update);
            let n = self.insert(new, (*x).ele);
            free_node(x);
            n
        }
    }
}

impl Drop for Skiplist {
    fn drop(&mut self) {
        unsafe {
            let mut n = (*lvl(self.header, 0)).forward;
            free_node(self.header);
            while !n.is_null() {
                let next = (*lvl(n, 0)).forward;
                free_sds((*n).ele);
                free_node(n);
                n = next;
            }
        }
    }
}

/// `zslCreateNode`: one allocation sized for the level.
unsafe fn create_node(level: usize, score: f64, ele: *mut u8) -> *mut Node {
    unsafe {
        let n = alloc(node_layout(level)).cast::<Node>();
        assert!(!n.is_null());
        ptr::write(
            n,
            Node {
                ele,
                score,
                backward: null_mut(),
                level: level as u32,
                levels: [],
            },
        );
        n
    }
}

unsafe fn free_node(n: *mut Node) {
    unsafe { dealloc(n.cast(), node_layout((*n).level as usize)) }
}

/// An sds: the length in a header before the bytes (sdshdr8/16/32 keep
/// it there too), one allocation.
fn new_sds(b: &[u8]) -> *mut u8 {
    unsafe {
        let p = alloc(sds_layout(b.len()));
        assert!(!p.is_null());
        ptr::write_unaligned(p.cast::<u32>(), b.len() as u32);
        ptr::copy_nonoverlapping(b.as_ptr(), p.add(4), b.len());
        *p.add(4 + b.len()) = 0;
        p
    }
}

fn sds_layout(len: usize) -> Layout {
    Layout::from_size_align(len + 5, 1).expect("sds layout")
}

/// The bytes of an sds.
///
/// # Safety
/// `s` must come from [`new_sds`] and not be freed.
unsafe fn sds<'a>(s: *mut u8) -> &'a [u8] {
    unsafe {
        let len = ptr::read_unaligned(s.cast::<u32>()) as usize;
        std::slice::from_raw_parts(s.add(4), len)
    }
}

unsafe fn free_sds(s: *mut u8) {
    unsafe {
        let len = ptr::read_unaligned(s.cast::<u32>()) as usize;
        dealloc(s, sds_layout(len));
    }
}

/// `dictEntry`: key (the node's sds), value (a pointer to the node's
/// score), chain link.
struct Entry {
    key: *mut u8,
    val: *mut f64,
    next: *mut Entry,
}

/// `dict` with its two tables and `rehashidx`.
struct Dict {
    table: [Vec<*mut Entry>; 2],
    used: [usize; 2],
    rehashidx: Option<usize>,
    seed: [u8; 16],
}

const DICT_HT_INITIAL_SIZE: usize = 4;
const HASHTABLE_MIN_FILL: usize = 10;

impl Dict {
    fn new() -> Dict {
        let mut seed = [0u8; 16];
        let r = std::collections::hash_map::RandomState::new();
        use std::hash::BuildHasher;
        seed[..8].copy_from_slice(&r.hash_one(1u8).to_le_bytes());
        seed[8..].copy_from_slice(&r.hash_one(2u8).to_le_bytes());
        Dict {
            table: [Vec::new(), Vec::new()],
            used: [0, 0],
            rehashidx: None,
            seed,
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        siphash12(key, &self.seed)
    }

    fn size(&self) -> usize {
        self.used[0] + self.used[1]
    }

    /// `_dictExpand` to the next power of two at or above `size`.
    fn expand(&mut self, size: usize) {
        if self.rehashidx.is_some() || self.used[0] > size {
            return;
        }
        let real = size.next_power_of_two().max(DICT_HT_INITIAL_SIZE);
        if real == self.table[0].len() {
            return;
        }
        let t = vec![null_mut(); real];
        if self.table[0].is_empty() {
            self.table[0] = t;
            return;
        }
        self.table[1] = t;
        self.rehashidx = Some(0);
    }

    /// `dictRehash(d, 1)` as `_dictRehashStep` calls it.
    fn rehash_step(&mut self) {
        let Some(mut idx) = self.rehashidx else {
            return;
        };
        let mut empty_visits = 10;
        if self.used[0] != 0 {
            while self.table[0][idx].is_null() {
                idx += 1;
                empty_visits -= 1;
                if empty_visits == 0 {
                    self.rehashidx = Some(idx);
                    return;
                }
            }
            let mut de = self.table[0][idx];
            let mask = self.table[1].len() - 1;
            while !de.is_null() {
                unsafe {
                    let next = (*de).next;
                    let h = self.hash(sds((*de).key)) as usize & mask;
                    (*de).next = self.table[1][h];
                    self.table[1][h] = de;
                    self.used[0] -= 1;
                    self.used[1] += 1;
                    de = next;
                }
            }
            self.table[0][idx] = null_mut();
            idx += 1;
        }
        if self.used[0] == 0 {
            self.table[0] = std::mem::take(&mut self.table[1]);
            self.used[0] = self.used[1];
            self.used[1] = 0;
            self.rehashidx = None;
        } else {
            self.rehashidx = Some(idx);
        }
    }

    fn tables(&self) -> usize {
        if self.rehashidx.is_some() { 2 } else { 1 }
    }

    /// `dictFind`.
    fn find(&mut self, key: &[u8]) -> *mut Entry {
        if self.size() == 0 {
            return null_mut();
        }
        self.rehash_step();
        let h = self.hash(key) as usize;
        for t in 0..self.tables() {
            let mut he = self.table[t][h & (self.table[t].len() - 1)];
            while !he.is_null() {
                unsafe {
                    if sds((*he).key) == key {
                        return he;
                    }
                    he = (*he).next;
                }
            }
        }
        null_mut()
    }

    /// `dictAdd` of a key known to be absent (`_dictKeyIndex` still
    /// walks the chain, as Redis does).
    fn add(&mut self, key: *mut u8, val: *mut f64) {
        self.rehash_step();
        // _dictExpandIfNeeded
        if self.rehashidx.is_none() {
            if self.table[0].is_empty() {
                self.expand(DICT_HT_INITIAL_SIZE);
            } else if self.used[0] >= self.table[0].len() {
                self.expand(self.used[0] + 1);
            }
        }
        let k = unsafe { sds(key) };
        let h = self.hash(k) as usize;
        let mut idx = 0;
        for t in 0..self.tables() {
            idx = h & (self.table[t].len() - 1);
            let mut he = self.table[t][idx];
            while !he.is_null() {
                unsafe {
                    assert!(sds((*he).key) != k, "dictAdd of a present key");
                    he = (*he).next;
                }
            }
        }
        let t = self.tables() - 1;
        let e = Box::into_raw(Box::new(Entry {
            key,
            val,
            next: self.table[t][idx],
        }));
        self.table[t][idx] = e;
        self.used[t] += 1;
    }

    /// `dictUnlink` followed by `dictFreeUnlinkedEntry`; returns the value.
    fn delete(&mut self, key: &[u8]) -> Option<*mut f64> {
        if self.size() == 0 {
            return None;
        }
        self.rehash_step();
        let h = self.hash(key) as usize;
        for t in 0..self.tables() {
            let idx = h & (self.table[t].len() - 1);
            let mut he = self.table[t][idx];
            let mut prev: *mut Entry = null_mut();
            while !he.is_null() {
                unsafe {
                    if sds((*he).key) == key {
                        if prev.is_null() {
                            self.table[t][idx] = (*he).next;
                        } else {
                            (*prev).next = (*he).next;
                        }
                        self.used[t] -= 1;
                        let v = (*he).val;
                        drop(Box::from_raw(he));
                        return Some(v);
                    }
                    prev = he;
                    he = (*he).next;
                }
            }
        }
        None
    }

    /// `htNeedsResize` then `dictResize`, as `zsetRemoveFromSkiplist`'s
    /// caller does.
    fn maybe_shrink(&mut self) {
        let size = self.table[0].len() + self.table[1].len();
        let used = self.size();
        if size > DICT_HT_INITIAL_SIZE
            && used * 100 / size < HASHTABLE_MIN_FILL
            && self.rehashidx.is_none()
        {
            self.expand(used.max(DICT_HT_INITIAL_SIZE));
        }
    }
}

impl Drop for Dict {
    fn drop(&mut self) {
        for t in &self.table {
            for &b in t {
                let mut he = b;
                while !he.is_null() {
                    unsafe {
                        let next = (*he).next;
                        drop(Box::from_raw(he));
                        he = next;
                    }
                }
            }
        }
    }
}

/// SipHash-1-2, the variant Redis's `siphash.c` implements.
fn siphash12(data: &[u8], k: &[u8; 16]) -> u64 {
    let k0 = u64::from_le_bytes(k[..8].try_into().unwrap_or_default());
    let k1 = u64::from_le_bytes(k[8..].try_into().unwrap_or_default());
    let mut v0 = 0x736f6d6570736575u64 ^ k0;
    let mut v1 = 0x646f72616e646f6du64 ^ k1;
    let mut v2 = 0x6c7967656e657261u64 ^ k0;
    let mut v3 = 0x7465646279746573u64 ^ k1;
    macro_rules! round {
        () => {
            v0 = v0.wrapping_add(v1);
            v1 = v1.rotate_left(13);
            v1 ^= v0;
            v0 = v0.rotate_left(32);
            v2 = v2.wrapping_add(v3);
            v3 = v3.rotate_left(16);
            v3 ^= v2;
            v0 = v0.wrapping_add(v3);
            v3 = v3.rotate_left(21);
            v3 ^= v0;
            v2 = v2.wrapping_add(v1);
            v1 = v1.rotate_left(17);
            v1 ^= v2;
            v2 = v2.rotate_left(32);
        };
    }
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let m = u64::from_le_bytes(c.try_into().unwrap_or_default());
        v3 ^= m;
        round!();
        v0 ^= m;
    }
    let mut b = (data.len() as u64) << 56;
    for (i, &x) in chunks.remainder().iter().enumerate() {
        b |= u64::from(x) << (8 * i);
    }
    v3 ^= b;
    round!();
    v0 ^= b;
    v2 ^= 0xff;
    round!();
    round!();
    v0 ^ v1 ^ v2 ^ v3
}

/// Redis's `zset` (skiplist encoding): `dict` + `zskiplist`.
pub struct RedisZSet {
    dict: Dict,
    zsl: Skiplist,
}

impl Default for RedisZSet {
    fn default() -> Self {
        RedisZSet {
            dict: Dict::new(),
            zsl: Skiplist::new(),
        }
    }
}

impl RedisZSet {
    pub fn len(&self) -> usize {
        self.zsl.length as usize
    }

    /// `zsetAdd` without flags: true if the member was added.
    pub fn add(&mut self, member: &[u8], score: f64) -> bool {
        let de = self.dict.find(member);
        if !de.is_null() {
            unsafe {
                let cur = *(*de).val;
                if score != cur {
                    let n = self.zsl.update_score(cur, member, score);
                    (*de).val = &raw mut (*n).score;
                }
            }
            return false;
        }
        let ele = new_sds(member);
        let n = unsafe { self.zsl.insert(score, ele) };
        self.dict.add(ele, unsafe { &raw mut (*n).score });
        true
    }

    /// ZINCRBY: `zsetAdd` with the INCR flag; returns the new score.
    pub fn incr(&mut self, member: &[u8], by: f64) -> f64 {
        let de = self.dict.find(member);
        if de.is_null() {
            self.add(member, by);
            return by;
        }
        unsafe {
            let cur = *(*de).val;
            let score = cur + by;
            if score != cur {
                let n = self.zsl.update_score(cur, member, score);
                (*de).val = &raw mut (*n).score;
            }
            score
        }
    }

    /// `zsetRemoveFromSkiplist` plus the resize check of `zsetDel`.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let v = self.dict.delete(member)?;
        let score = unsafe { *v };
        let found = unsafe { self.zsl.delete(score, member) };
        assert!(found);
        self.dict.maybe_shrink();
        Some(score)
    }

    pub fn score(&mut self, member: &[u8]) -> Option<f64> {
        let de = self.dict.find(member);
        (!de.is_null()).then(|| unsafe { *(*de).val })
    }
}

impl RedisZSet {
    /// (member, score) in skiplist order, and whether every span and
    /// backward link agrees with it (for the benchmark's self-check).
    pub fn entries_checked(&self) -> (Vec<(Vec<u8>, f64)>, bool) {
        let mut out = Vec::new();
        let mut ok = true;
        unsafe {
            let mut prev: *mut Node = null_mut();
            let mut n = (*lvl(self.zsl.header, 0)).forward;
            while !n.is_null() {
                ok &= (*n).backward == prev;
                out.push((sds((*n).ele).to_vec(), (*n).score));
                prev = n;
                n = (*lvl(n, 0)).forward;
            }
            // Spans: the rank reached by following each level equals the
            // rank of the node reached.
            let pos: std::collections::HashMap<*mut Node, u64> = {
                let mut m = std::collections::HashMap::new();
                let mut n = (*lvl(self.zsl.header, 0)).forward;
                let mut r = 1;
                while !n.is_null() {
                    m.insert(n, r);
                    r += 1;
                    n = (*lvl(n, 0)).forward;
                }
                m
            };
            for i in 0..self.zsl.level {
                let mut x = self.zsl.header;
                let mut r = 0;
                loop {
                    let l = *lvl(x, i);
                    if l.forward.is_null() {
                        break;
                    }
                    r += l.span;
                    ok &= pos.get(&l.forward) == Some(&r);
                    x = l.forward;
                }
            }
        }
        ok &= out.len() as u64 == self.zsl.length && self.dict.size() == out.len();
        (out, ok)
    }
}

impl Clone for RedisZSet {
    /// A structurally fresh copy (inserted in score order), for the
    /// benchmark's per-chunk clones.
    fn clone(&self) -> Self {
        let mut z = RedisZSet::default();
        unsafe {
            let mut n = (*lvl(self.zsl.header, 0)).forward;
            while !n.is_null() {
                z.add(sds((*n).ele), (*n).score);
                n = (*lvl(n, 0)).forward;
            }
        }
        z
    }
}
