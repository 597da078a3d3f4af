//! The stream: entries with `ms-seq` IDs, and consumer groups.
//!
//! Entries live in nodes, each node an ordered run of entries keyed in a
//! B-tree by the ID of the first entry it ever received (Redis's rax of
//! listpacks, keyed by "master ID"). The node layout is not an
//! implementation detail clients cannot see: `MAXLEN ~` and `MINID ~` trim
//! whole nodes only, and `XINFO STREAM` reports the node count. So nodes are
//! cut where Redis cuts its listpacks — when the tail node already holds
//! `stream-node-max-entries` entries (deleted ones included) or its
//! listpack bytes plus the new entry's field/value lengths reach
//! `stream-node-max-bytes` — and each node tracks the byte size its
//! listpack would have (see [`lp_elem_size`]). Deleted entries stay in their
//! node as tombstones, as in Redis, until the node empties and is dropped.
//!
//! Consumer groups keep Redis 7.0's bookkeeping: last delivered ID, logical
//! `entries_read` counter (for `lag`), a group PEL of ID → (consumer,
//! delivery time, delivery count), and per-consumer PELs and seen times.

use std::collections::{BTreeMap, BTreeSet};

use crate::util::parse_i64;

/// A stream entry ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID, or None past the largest.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(StreamId::new(self.ms + 1, 0))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, or None before the smallest.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(StreamId::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(StreamId::new(self.ms, self.seq - 1))
        }
    }

    /// Parses `ms-seq` or `ms` (seq = `missing_seq`) strictly as Redis's
    /// `streamGenericParseIDOrReply` does (no signs, no spaces, u64 parts);
    /// `ms-*` is the caller's business.
    pub fn parse(s: &[u8], missing_seq: u64) -> Option<StreamId> {
        if s.is_empty() || s.len() > 127 {
            return None;
        }
        let u64_of = |p: &[u8]| -> Option<u64> {
            // strtoull accepts a leading '+' / '-' and spaces; Redis's
            // string2ull wraps it but rejects empty and non-digit tails.
            // Redis 7.0 uses string2ull: digits only (a leading '-' is
            // parsed by strtoull and wraps, which Redis does not check).
            if p.is_empty() || p.len() > 20 || !p.iter().all(u8::is_ascii_digit) {
                return None;
            }
            std::str::from_utf8(p).ok()?.parse().ok()
        };
        match s.iter().position(|&c| c == b'-') {
            Some(dash) => Some(StreamId::new(u64_of(&s[..dash])?, u64_of(&s[dash + 1..])?)),
            None => Some(StreamId::new(u64_of(s)?, missing_seq)),
        }
    }

    /// `ms-seq`, as replies show IDs.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut b = itoa::Buffer::new();
        let mut out = b.format(self.ms).as_bytes().to_vec();
        out.push(b'-');
        out.extend_from_slice(b.format(self.seq).as_bytes());
        out
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Bytes a listpack element takes (encoding plus back-length), as Redis's
/// listpack stores the string `s`: integers that round-trip as int64 use the
/// small integer encodings.
pub fn lp_elem_size(s: &[u8]) -> usize {
    let enc = match lp_int(s) {
        Some(v) => lp_int_size(v),
        None if s.len() < 64 => 1 + s.len(),
        None if s.len() < 4096 => 2 + s.len(),
        None => 5 + s.len(),
    };
    enc + lp_backlen_size(enc)
}

fn lp_int_elem_size(v: i64) -> usize {
    let enc = lp_int_size(v);
    enc + lp_backlen_size(enc)
}

fn lp_int(s: &[u8]) -> Option<i64> {
    // lpStringToInt64: canonical decimal only (no '+', no leading zeros).
    if s.is_empty() || s.len() > 20 || s[0] == b'+' {
        return None;
    }
    let v = parse_i64(s)?;
    (itoa::Buffer::new().format(v).as_bytes() == s).then_some(v)
}

fn lp_int_size(v: i64) -> usize {
    if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if (i16::MIN as i64..=i16::MAX as i64).contains(&v) {
        3
    } else if (-8_388_608..=8_388_607).contains(&v) {
        4
    } else if (i32::MIN as i64..=i32::MAX as i64).contains(&v) {
        5
    } else {
        9
    }
}

fn lp_backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..16383 => 2,
        16383..2097151 => 3,
        2097151..268435455 => 4,
        _ => 5,
    }
}

/// One entry: its ID and flat field/value list; `deleted` marks a tombstone.
#[derive(Clone, Debug)]
struct Item {
    id: StreamId,
    fields: Box<[Box<[u8]>]>,
    deleted: bool,
}

/// One node (a Redis listpack).
#[derive(Clone, Debug)]
struct Node {
    /// The field names of the node's first entry (the "master entry").
    master_fields: Box<[Box<[u8]>]>,
    items: Vec<Item>,
    live: usize,
    /// Listpack bytes, less the two header counters (live, deleted), which
    /// change size as they change.
    bytes: usize,
}

impl Node {
    fn lp_bytes(&self) -> usize {
        self.bytes
            + lp_int_elem_size(self.live as i64)
            + lp_int_elem_size((self.items.len() - self.live) as i64)
    }

    fn last_id(&self) -> StreamId {
        self.items.last().map_or(StreamId::MIN, |i| i.id)
    }
}

/// A pending entry of a group.
#[derive(Clone, Debug)]
pub struct Nack {
    pub consumer: Box<[u8]>,
    pub delivery_time: u64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Consumer {
    pub seen_time: u64,
    pub pel: BTreeSet<StreamId>,
}

/// Redis's `SCG_INVALID_ENTRIES_READ`.
pub const INVALID_ENTRIES_READ: i64 = -1;

#[derive(Clone, Debug)]
pub struct Group {
    pub last_id: StreamId,
    /// Logical count of entries read, or [`INVALID_ENTRIES_READ`].
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Creates the consumer if missing; true if it did.
    pub fn create_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.into(),
            Consumer {
                seen_time: now_ms,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// Deletes a consumer and its pending entries; its pending count, or
    /// None if there was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Removes `id` from the group PEL and its owner's; true if pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }
}

/// Trimming strategy of XADD/XTRIM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// Where new nodes start (the two `stream-node-max-*` settings).
#[derive(Clone, Copy, Debug)]
pub struct NodeLimits {
    pub max_bytes: usize,
    pub max_entries: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_bytes: 4096,
            max_entries: 100,
        }
    }
}

/// Redis caps a listpack at 1 GB whatever the setting says.
const LP_MAX_SIZE: usize = 1 << 30;

#[derive(Clone, Debug, Default)]
pub struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    len: u64,
    pub last_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of nodes (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes' keys (for XINFO's radix tree node estimate).
    pub fn node_keys(&self) -> impl Iterator<Item = &StreamId> {
        self.nodes.keys()
    }

    /// The first live entry's ID, or 0-0 when empty (Redis's `first_id`).
    pub fn first_id(&self) -> StreamId {
        self.first_entry().map_or(StreamId::MIN, |(id, _)| id)
    }

    pub fn first_entry(&self) -> Option<(StreamId, &[Box<[u8]>])> {
        let mut out = None;
        self.range(StreamId::MIN, StreamId::MAX, false, |id, f| {
            out = Some((id, f));
            false
        });
        out
    }

    pub fn last_entry(&self) -> Option<(StreamId, &[Box<[u8]>])> {
        let mut out = None;
        self.range(StreamId::MIN, StreamId::MAX, true, |id, f| {
            out = Some((id, f));
            false
        });
        out
    }

    /// Appends an entry with ID `id`, which the caller made sure is greater
    /// than `last_id`. `fields` is flat: field, value, field, value, ….
    pub fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: NodeLimits) {
        let max_bytes = match limits.max_bytes {
            0 => LP_MAX_SIZE,
            n => n.min(LP_MAX_SIZE),
        };
        let totelelen: usize = fields.iter().map(|f| f.len()).sum();
        let new_node = match self.nodes.last_key_value() {
            None => true,
            Some((_, n)) => {
                n.lp_bytes() + totelelen >= max_bytes
                    || (limits.max_entries != 0 && n.items.len() >= limits.max_entries)
            }
        };
        if new_node {
            let master: Box<[Box<[u8]>]> = fields.iter().step_by(2).map(|f| (*f).into()).collect();
            let bytes = 6
                + 1
                + lp_int_elem_size(master.len() as i64)
                + master.iter().map(|f| lp_elem_size(f)).sum::<usize>()
                + lp_int_elem_size(0);
            self.nodes.insert(
                id,
                Node {
                    master_fields: master,
                    items: Vec::new(),
                    live: 0,
                    bytes,
                },
            );
        }
        let Some(last) = self.nodes.last_entry() else {
            return;
        };
        let master_id = *last.key();
        let node = last.into_mut();
        let nfields = fields.len() / 2;
        let same = node.master_fields.len() == nfields
            && node
                .master_fields
                .iter()
                .zip(fields.iter().step_by(2))
                .all(|(a, b)| &**a == *b);
        let mut bytes = lp_int_elem_size(if same { 2 } else { 0 })
            + lp_int_elem_size(id.ms.wrapping_sub(master_id.ms) as i64)
            + lp_int_elem_size(id.seq.wrapping_sub(master_id.seq) as i64);
        let lp_count = if same {
            bytes += fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| lp_elem_size(v))
                .sum::<usize>();
            nfields + 3
        } else {
            bytes += lp_int_elem_size(nfields as i64);
            bytes += fields.iter().map(|v| lp_elem_size(v)).sum::<usize>();
            nfields * 2 + 4
        };
        bytes += lp_int_elem_size(lp_count as i64);
        node.bytes += bytes;
        node.items.push(Item {
            id,
            fields: fields.iter().map(|f| (*f).into()).collect(),
            deleted: false,
        });
        node.live += 1;
        self.len += 1;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Visits live entries with `start <= id <= end` in order (reverse if
    /// `rev`) until `f` returns false.
    pub fn range<'a>(
        &'a self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(StreamId, &'a [Box<[u8]>]) -> bool,
    ) {
        if start > end {
            return;
        }
        if !rev {
            let from = self
                .nodes
                .range(..=start)
                .next_back()
                .map_or(start, |(k, _)| *k);
            for (k, node) in self.nodes.range(from..) {
                if *k > end {
                    break;
                }
                let at = node.items.partition_point(|i| i.id < start);
                for it in &node.items[at..] {
                    if it.id > end {
                        return;
                    }
                    if !it.deleted && !f(it.id, &it.fields) {
                        return;
                    }
                }
            }
        } else {
            for (_, node) in self.nodes.range(..=end).rev() {
                if node.last_id() < start {
                    break;
                }
                let at = node.items.partition_point(|i| i.id <= end);
                for it in node.items[..at].iter().rev() {
                    if it.id < start {
                        return;
                    }
                    if !it.deleted && !f(it.id, &it.fields) {
                        return;
                    }
                }
            }
        }
    }

    /// The live entry `id`'s fields.
    pub fn get(&self, id: StreamId) -> Option<&[Box<[u8]>]> {
        let (_, node) = self.nodes.range(..=id).next_back()?;
        let at = node.items.binary_search_by(|i| i.id.cmp(&id)).ok()?;
        let it = &node.items[at];
        (!it.deleted).then_some(&*it.fields)
    }

    /// Deletes a live entry (a tombstone until its node empties); true if
    /// it existed. Does not touch `max_deleted_id` (XDEL's business).
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Ok(at) = node.items.binary_search_by(|i| i.id.cmp(&id)) else {
            return false;
        };
        if node.items[at].deleted {
            return false;
        }
        node.items[at].deleted = true;
        node.live -= 1;
        self.len -= 1;
        if node.live == 0 {
            self.nodes.remove(&key);
        }
        true
    }

    /// Trims as Redis's `streamTrim`: whole nodes first; with `approx`, stop
    /// at the first node that cannot go whole; `limit` (0 = none) caps the
    /// entries removed, counted in whole nodes. Returns entries removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        loop {
            if let Trim::MaxLen(max) = how
                && self.len <= max
            {
                break;
            }
            let Some(mut entry) = self.nodes.first_entry() else {
                break;
            };
            let node = entry.get_mut();
            let live = node.live as u64;
            if limit != 0 && deleted + live > limit {
                break;
            }
            let remove = match how {
                Trim::MaxLen(max) => self.len - live >= max,
                Trim::MinId(min) => node.last_id() < min,
            };
            if remove {
                entry.remove();
                self.len -= live;
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            for it in node.items.iter_mut() {
                let stop = match how {
                    Trim::MaxLen(max) => self.len <= max,
                    Trim::MinId(min) => it.id >= min,
                };
                if stop {
                    break;
                }
                if !it.deleted {
                    it.deleted = true;
                    node.live -= 1;
                    self.len -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        deleted
    }

    /// The last live entry's ID, or 0-0 (Redis's `streamLastValidID`).
    pub fn last_live_id(&self) -> StreamId {
        self.last_entry().map_or(StreamId::MIN, |(id, _)| id)
    }

    /// Whether `start..=end` (None: open) may hold a tombstone (Redis's
    /// `streamRangeHasTombstones`).
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.len == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`.
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.len == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            if id < first {
                return (self.entries_added - self.len) as i64;
            }
            if id == first {
                return (self.entries_added - self.len + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag, or None when it cannot be known (Redis's `streamCGLag`).
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(Some(g.last_id), None)
        {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        let read = self.estimate_distance(g.last_id);
        (read != INVALID_ENTRIES_READ).then(|| self.entries_added as i64 - read)
    }

    /// Approximate heap bytes.
    pub fn mem_usage(&self) -> usize {
        let nodes: usize = self.nodes.values().map(|n| n.bytes + 64).sum();
        let groups: usize = self
            .groups
            .values()
            .map(|g| g.pel.len() * 64 + g.consumers.len() * 64)
            .sum();
        nodes + groups + 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId::new(ms, seq)
    }

    fn ids(s: &Stream) -> Vec<StreamId> {
        let mut v = Vec::new();
        s.range(StreamId::MIN, StreamId::MAX, false, |i, _| {
            v.push(i);
            true
        });
        v
    }

    fn filled(n: u64) -> Stream {
        let mut s = Stream::new();
        for i in 1..=n {
            s.append(id(i, 0), &[b"f", b"v"], NodeLimits::default());
        }
        s
    }

    #[test]
    fn parse_ids() {
        assert_eq!(StreamId::parse(b"1-2", 0), Some(id(1, 2)));
        assert_eq!(StreamId::parse(b"5", 7), Some(id(5, 7)));
        assert_eq!(StreamId::parse(b"-", 0), None);
        assert_eq!(StreamId::parse(b"1-x", 0), None);
        assert_eq!(StreamId::parse(b"18446744073709551616", 0), None);
        assert_eq!(id(1, u64::MAX).incr(), Some(id(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(id(2, 0).decr(), Some(id(1, u64::MAX)));
    }

    #[test]
    fn nodes_cut_at_100_entries() {
        let s = filled(250);
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.len(), 250);
    }

    #[test]
    fn nodes_cut_at_bytes() {
        let mut s = Stream::new();
        let big = vec![b'x'; 1000];
        for i in 1..=10 {
            s.append(id(i, 0), &[b"f", &big], NodeLimits::default());
        }
        // Each entry is ~1 KB: four fit under 4096 bytes.
        assert!(s.node_count() >= 3, "{}", s.node_count());
    }

    #[test]
    fn range_forward_and_reverse() {
        let s = filled(250);
        let mut v = Vec::new();
        s.range(id(98, 0), id(103, 0), false, |i, _| {
            v.push(i.ms);
            true
        });
        assert_eq!(v, vec![98, 99, 100, 101, 102, 103]);
        v.clear();
        s.range(id(98, 0), id(103, 0), true, |i, _| {
            v.push(i.ms);
            true
        });
        assert_eq!(v, vec![103, 102, 101, 100, 99, 98]);
    }

    #[test]
    fn delete_drops_empty_nodes() {
        let mut s = filled(3);
        assert!(s.delete(id(2, 0)));
        assert!(!s.delete(id(2, 0)));
        assert_eq!(ids(&s), vec![id(1, 0), id(3, 0)]);
        assert!(s.delete(id(1, 0)) && s.delete(id(3, 0)));
        assert_eq!(s.node_count(), 0);
        assert_eq!(s.last_id, id(3, 0));
    }

    #[test]
    fn approx_trim_removes_whole_nodes_only() {
        let mut s = filled(250);
        assert_eq!(s.trim(Trim::MaxLen(120), true, 0), 100);
        assert_eq!(s.len(), 150);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id(), id(131, 0));
        let mut s = filled(250);
        assert_eq!(s.trim(Trim::MinId(id(150, 0)), true, 0), 100);
        assert_eq!(s.trim(Trim::MinId(id(150, 0)), false, 0), 49);
        let mut s = filled(250);
        assert_eq!(s.trim(Trim::MaxLen(0), true, 150), 100);
    }

    #[test]
    fn entries_read_estimates() {
        let mut s = filled(5);
        assert_eq!(s.estimate_distance(id(5, 0)), 5);
        assert_eq!(s.estimate_distance(id(1, 0)), 1);
        assert_eq!(s.estimate_distance(id(0, 1)), 0);
        assert_eq!(s.estimate_distance(id(3, 0)), INVALID_ENTRIES_READ);
        s.delete(id(3, 0));
        s.max_deleted_id = id(3, 0);
        assert!(s.range_has_tombstones(Some(id(2, 0)), None));
        assert!(!s.range_has_tombstones(Some(id(4, 0)), None));
    }

    #[test]
    fn listpack_sizes() {
        assert_eq!(lp_elem_size(b"1"), 2);
        assert_eq!(lp_elem_size(b"01"), 4);
        assert_eq!(lp_elem_size(b"1000"), 3);
        assert_eq!(lp_elem_size(&[b'a'; 100]), 102 + 1);
    }
}
