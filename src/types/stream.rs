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
//! Inside a node, entries are packed into one byte buffer ([`Node::buf`]),
//! as Redis packs a listpack: each entry's ID as varint deltas from the
//! node's first ID, its values only when its field names are the node's
//! first entry's (the common case: a log's entries share their fields), and
//! values that are canonical integers as varint deltas from that first
//! entry's value of the same field — a sensor reading or a timestamp costs a
//! byte or two. Entries are found by scanning their node (at most
//! `stream-node-max-entries`, 100 by default), as Redis scans a listpack.
//!
//! Consumer groups keep Redis 7.0's bookkeeping: last delivered ID, logical
//! `entries_read` counter (for `lag`), a group PEL of ID → (consumer,
//! delivery time, delivery count), and per-consumer PELs and seen times.

use std::collections::{BTreeMap, BTreeSet};

use crate::util::parse_i64;

/// A stream entry ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub(crate) struct StreamId {
    pub(crate) ms: u64,
    pub(crate) seq: u64,
}

impl StreamId {
    pub(crate) const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub(crate) const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub(crate) const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID, or None past the largest.
    pub(crate) fn incr(self) -> Option<StreamId> {
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
    pub(crate) fn decr(self) -> Option<StreamId> {
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
    #[cfg(test)]
    pub(crate) fn parse(s: &[u8], missing_seq: u64) -> Option<StreamId> {
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
    pub(crate) fn to_bytes(self) -> Vec<u8> {
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
pub(crate) fn lp_elem_size(s: &[u8]) -> usize {
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

pub(crate) fn lp_int(s: &[u8]) -> Option<i64> {
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

/// An entry record's flag bits (its first byte in [`Node::buf`]).
const DELETED: u8 = 1;
/// The entry's field names are the master entry's: only values follow.
const SAME_FIELDS: u8 = 2;

/// One node (a Redis listpack).
#[derive(Clone, Debug)]
struct Node {
    /// The ID the node is keyed by (its first entry's).
    master_id: StreamId,
    /// The field names of the node's first entry (the "master entry").
    master_fields: Box<[Box<[u8]>]>,
    /// The master entry's values that are canonical integers: entries with
    /// the same fields store such values as deltas from these.
    master_ints: Box<[Option<i64>]>,
    /// The entries, each `flags, ms delta, seq delta` then, with
    /// [`SAME_FIELDS`], one value per master field, else a field count and
    /// field/value pairs; names and strings are `len << 1` and the bytes,
    /// integers `1` and a zigzag varint (a delta from the master's value
    /// where there is one).
    buf: Vec<u8>,
    /// Entries, tombstones included.
    count: usize,
    live: usize,
    last_id: StreamId,
    /// Listpack bytes, less the two header counters (live, deleted), which
    /// change size as they change.
    bytes: usize,
}

/// One decoded entry header: where it starts and ends in the node's buffer.
#[derive(Clone, Copy)]
struct Record {
    at: usize,
    id: StreamId,
    flags: u8,
    /// Where its fields start, and where the next record starts.
    body: usize,
    end: usize,
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Reads a varint at `*at`; the buffer is ours, so a short one reads as 0.
fn get_varint(buf: &[u8], at: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    while let Some(&b) = buf.get(*at) {
        *at += 1;
        if shift < 64 {
            v |= u64::from(b & 0x7f) << shift;
        }
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    v
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Appends a string element: an integer (delta from `base`) when it is one.
fn put_elem(buf: &mut Vec<u8>, s: &[u8], base: Option<i64>) {
    match lp_int(s) {
        Some(v) => {
            buf.push(1);
            put_varint(buf, zigzag(v.wrapping_sub(base.unwrap_or(0))));
        }
        None => {
            put_varint(buf, (s.len() as u64) << 1);
            buf.extend_from_slice(s);
        }
    }
}

/// Reads a string element at `*at` and hands its bytes to `f`.
fn get_elem(buf: &[u8], at: &mut usize, base: Option<i64>, f: &mut dyn FnMut(&[u8])) {
    let h = get_varint(buf, at);
    if h & 1 == 1 {
        let v = unzigzag(get_varint(buf, at)).wrapping_add(base.unwrap_or(0));
        f(itoa::Buffer::new().format(v).as_bytes());
    } else {
        let len = (h >> 1) as usize;
        let start = (*at).min(buf.len());
        let end = start.saturating_add(len).min(buf.len());
        *at = end;
        f(&buf[start..end]);
    }
}

/// Moves `*at` past a string element.
fn skip_elem(buf: &[u8], at: &mut usize) {
    let h = get_varint(buf, at);
    if h & 1 == 1 {
        get_varint(buf, at);
    } else {
        *at = at.saturating_add((h >> 1) as usize).min(buf.len());
    }
}

impl Node {
    fn lp_bytes(&self) -> usize {
        self.bytes
            + lp_int_elem_size(self.live as i64)
            + lp_int_elem_size((self.count - self.live) as i64)
    }

    fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The record starting at `at`.
    fn record(&self, at: usize) -> Record {
        let buf = &self.buf;
        let flags = buf.get(at).copied().unwrap_or(0);
        let mut p = at + 1;
        let ms = self
            .master_id
            .ms
            .wrapping_add(unzigzag(get_varint(buf, &mut p)) as u64);
        let seq = self
            .master_id
            .seq
            .wrapping_add(unzigzag(get_varint(buf, &mut p)) as u64);
        let body = p;
        if flags & SAME_FIELDS != 0 {
            for _ in 0..self.master_fields.len() {
                skip_elem(buf, &mut p);
            }
        } else {
            let n = get_varint(buf, &mut p);
            for _ in 0..n.saturating_mul(2) {
                if p >= buf.len() {
                    break;
                }
                skip_elem(buf, &mut p);
            }
        }
        Record {
            at,
            id: StreamId { ms, seq },
            flags,
            body,
            end: p,
        }
    }

    /// Every record, in order.
    fn records(&self) -> impl Iterator<Item = Record> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            (at < self.buf.len()).then(|| {
                let r = self.record(at);
                at = r.end.max(at + 1);
                r
            })
        })
    }

    fn find(&self, id: StreamId) -> Option<Record> {
        self.records()
            .take_while(|r| r.id <= id)
            .find(|r| r.id == id)
    }

    fn fields(&self, r: Record) -> Fields<'_> {
        Fields { node: self, r }
    }

    fn append(&mut self, id: StreamId, fields: &[&[u8]], same: bool) {
        let buf = &mut self.buf;
        buf.push(if same { SAME_FIELDS } else { 0 });
        put_varint(buf, zigzag(id.ms.wrapping_sub(self.master_id.ms) as i64));
        put_varint(buf, zigzag(id.seq.wrapping_sub(self.master_id.seq) as i64));
        if same {
            for (v, base) in fields
                .iter()
                .skip(1)
                .step_by(2)
                .zip(self.master_ints.iter())
            {
                put_elem(buf, v, *base);
            }
        } else {
            put_varint(buf, (fields.len() / 2) as u64);
            for f in fields {
                put_elem(buf, f, None);
            }
        }
        self.count += 1;
        self.live += 1;
        self.last_id = id;
    }
}

/// An entry's fields and values, read from its node's buffer.
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a> {
    node: &'a Node,
    r: Record,
}

impl Fields<'_> {
    /// The number of elements (fields and values).
    pub(crate) fn len(&self) -> usize {
        if self.r.flags & SAME_FIELDS != 0 {
            self.node.master_fields.len() * 2
        } else {
            let mut at = self.r.body;
            get_varint(&self.node.buf, &mut at) as usize * 2
        }
    }

    /// Hands each element, field then value, to `f`.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&[u8])) {
        let node = self.node;
        let buf = &node.buf[..self.r.end.min(node.buf.len())];
        let mut at = self.r.body;
        if self.r.flags & SAME_FIELDS != 0 {
            for (name, base) in node.master_fields.iter().zip(node.master_ints.iter()) {
                f(name);
                get_elem(buf, &mut at, *base, &mut f);
            }
        } else {
            let n = get_varint(buf, &mut at);
            for _ in 0..n.saturating_mul(2) {
                if at >= buf.len() {
                    break;
                }
                get_elem(buf, &mut at, None, &mut f);
            }
        }
    }

    /// The elements, copied (tests, and callers that keep them).
    pub(crate) fn to_vec(self) -> Vec<Vec<u8>> {
        let mut v = Vec::with_capacity(self.len());
        self.for_each(|e| v.push(e.to_vec()));
        v
    }
}

/// A pending entry of a group.
#[derive(Clone, Debug)]
pub(crate) struct Nack {
    pub(crate) consumer: Box<[u8]>,
    pub(crate) delivery_time: u64,
    pub(crate) delivery_count: u64,
}

/// A consumer of a group. Redis 7.2 splits its clock in two: `seen_time`
/// is its last attempted interaction (XREADGROUP, XCLAIM, XAUTOCLAIM, even
/// when they deliver nothing), `active_time` its last successful one (an
/// entry delivered to or claimed by it), -1 while it has had none.
#[derive(Clone, Debug)]
pub(crate) struct Consumer {
    pub(crate) seen_time: u64,
    pub(crate) active_time: i64,
    pub(crate) pel: BTreeSet<StreamId>,
}

impl Consumer {
    /// A consumer just created at `now_ms`: seen, never active.
    pub(crate) fn new(now_ms: u64) -> Consumer {
        Consumer {
            seen_time: now_ms,
            active_time: -1,
            pel: BTreeSet::new(),
        }
    }

    /// XINFO CONSUMERS' `inactive`: ms since the last successful
    /// interaction, or -1 if none.
    pub(crate) fn inactive(&self, now_ms: i64) -> i64 {
        if self.active_time == -1 {
            -1
        } else {
            now_ms - self.active_time
        }
    }
}

/// Redis's `SCG_INVALID_ENTRIES_READ`.
pub(crate) const INVALID_ENTRIES_READ: i64 = -1;

#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub(crate) last_id: StreamId,
    /// Logical count of entries read, or [`INVALID_ENTRIES_READ`].
    pub(crate) entries_read: i64,
    pub(crate) pel: BTreeMap<StreamId, Nack>,
    pub(crate) consumers: BTreeMap<Box<[u8]>, Consumer>,
}

impl Group {
    pub(crate) fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Creates the consumer if missing; true if it did.
    pub(crate) fn create_consumer(&mut self, name: &[u8], now_ms: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(name.into(), Consumer::new(now_ms));
        true
    }

    /// Deletes a consumer and its pending entries; its pending count, or
    /// None if there was no such consumer.
    pub(crate) fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Removes `id` from the group PEL and its owner's; true if pending.
    pub(crate) fn ack(&mut self, id: StreamId) -> bool {
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

/// What deleting or trimming entries does to the consumer groups'
/// references to them (Redis 8.2's KEEPREF | DELREF | ACKED).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum RefPolicy {
    /// Delete the entries; PEL entries for them stay (XDEL's way).
    #[default]
    KeepRef,
    /// Delete the entries and every group's PEL entries for them.
    DelRef,
    /// Delete only entries no group still needs (see
    /// [`Stream::is_referenced`]).
    Acked,
}

/// Trimming strategy of XADD/XTRIM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// Where new nodes start (the two `stream-node-max-*` settings).
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeLimits {
    pub(crate) max_bytes: usize,
    pub(crate) max_entries: usize,
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
pub(crate) struct Stream {
    nodes: BTreeMap<StreamId, Node>,
    len: u64,
    pub(crate) last_id: StreamId,
    pub(crate) max_deleted_id: StreamId,
    pub(crate) entries_added: u64,
    pub(crate) groups: BTreeMap<Box<[u8]>, Group>,
}

impl Stream {
    pub(crate) fn new() -> Stream {
        Stream::default()
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of nodes (XINFO's `radix-tree-keys`).
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The nodes' keys (for XINFO's radix tree node estimate).
    pub(crate) fn node_keys(&self) -> impl Iterator<Item = &StreamId> {
        self.nodes.keys()
    }

    /// Every node by its key (its master ID), with its entries as (ID,
    /// deleted, fields and values), tombstones included: what an RDB file
    /// stores for a stream.
    pub(crate) fn node_entries(
        &self,
    ) -> impl Iterator<
        Item = (
            StreamId,
            impl Iterator<Item = (StreamId, bool, Vec<Vec<u8>>)> + '_,
        ),
    > + '_ {
        self.nodes.iter().map(|(k, node)| {
            (
                *k,
                node.records()
                    .map(move |r| (r.id, r.flags & DELETED != 0, node.fields(r).to_vec())),
            )
        })
    }

    /// The first live entry's ID, or 0-0 when empty (Redis's `first_id`).
    pub(crate) fn first_id(&self) -> StreamId {
        self.first_entry().map_or(StreamId::MIN, |(id, _)| id)
    }

    pub(crate) fn first_entry(&self) -> Option<(StreamId, Fields<'_>)> {
        let mut out = None;
        self.range(StreamId::MIN, StreamId::MAX, false, |id, f| {
            out = Some((id, f));
            false
        });
        out
    }

    pub(crate) fn last_entry(&self) -> Option<(StreamId, Fields<'_>)> {
        let mut out = None;
        self.range(StreamId::MIN, StreamId::MAX, true, |id, f| {
            out = Some((id, f));
            false
        });
        out
    }

    /// Appends an entry with ID `id`, which the caller made sure is greater
    /// than `last_id`. `fields` is flat: field, value, field, value, ….
    pub(crate) fn append(&mut self, id: StreamId, fields: &[&[u8]], limits: NodeLimits) {
        let max_bytes = match limits.max_bytes {
            0 => LP_MAX_SIZE,
            n => n.min(LP_MAX_SIZE),
        };
        let totelelen: usize = fields.iter().map(|f| f.len()).sum();
        let new_node = match self.nodes.last_key_value() {
            None => true,
            Some((_, n)) => {
                n.lp_bytes() + totelelen >= max_bytes
                    || (limits.max_entries != 0 && n.count >= limits.max_entries)
            }
        };
        if new_node {
            // The full node is done growing: give back its spare capacity.
            if let Some(mut last) = self.nodes.last_entry() {
                last.get_mut().buf.shrink_to_fit();
            }
            let master: Box<[Box<[u8]>]> = fields.iter().step_by(2).map(|f| (*f).into()).collect();
            let master_ints = fields
                .iter()
                .skip(1)
                .step_by(2)
                .map(|v| lp_int(v))
                .collect();
            let bytes = 6
                + 1
                + lp_int_elem_size(master.len() as i64)
                + master.iter().map(|f| lp_elem_size(f)).sum::<usize>()
                + lp_int_elem_size(0);
            self.nodes.insert(
                id,
                Node {
                    master_id: id,
                    master_fields: master,
                    master_ints,
                    buf: Vec::new(),
                    count: 0,
                    live: 0,
                    last_id: id,
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
        node.append(id, fields, same);
        self.len += 1;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Visits live entries with `start <= id <= end` in order (reverse if
    /// `rev`) until `f` returns false.
    pub(crate) fn range<'a>(
        &'a self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        mut f: impl FnMut(StreamId, Fields<'a>) -> bool,
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
                if node.last_id < start {
                    continue;
                }
                for r in node.records() {
                    if r.id < start {
                        continue;
                    }
                    if r.id > end {
                        return;
                    }
                    if r.flags & DELETED == 0 && !f(r.id, node.fields(r)) {
                        return;
                    }
                }
            }
        } else {
            // A node's records decode forwards: note where they start.
            let mut starts: Vec<Record> = Vec::new();
            for (_, node) in self.nodes.range(..=end).rev() {
                if node.last_id() < start {
                    break;
                }
                starts.clear();
                starts.extend(node.records().take_while(|r| r.id <= end));
                for r in starts.iter().rev() {
                    if r.id < start {
                        return;
                    }
                    if r.flags & DELETED == 0 && !f(r.id, node.fields(*r)) {
                        return;
                    }
                }
            }
        }
    }

    /// The live entry `id`'s fields.
    pub(crate) fn get(&self, id: StreamId) -> Option<Fields<'_>> {
        let (_, node) = self.nodes.range(..=id).next_back()?;
        let r = node.find(id)?;
        (r.flags & DELETED == 0).then(|| node.fields(r))
    }

    /// Deletes a live entry (a tombstone until its node empties); true if
    /// it existed. Does not touch `max_deleted_id` (XDEL's business).
    pub(crate) fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Some(r) = node.find(id) else {
            return false;
        };
        if r.flags & DELETED != 0 {
            return false;
        }
        node.buf[r.at] |= DELETED;
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
    pub(crate) fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
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
            let records: Vec<Record> = node.records().collect();
            for r in records {
                let stop = match how {
                    Trim::MaxLen(max) => self.len <= max,
                    Trim::MinId(min) => r.id >= min,
                };
                if stop {
                    break;
                }
                if r.flags & DELETED == 0 {
                    node.buf[r.at] |= DELETED;
                    node.live -= 1;
                    self.len -= 1;
                    deleted += 1;
                }
            }
            break;
        }
        deleted
    }

    /// Whether some group still needs entry `id`: it is pending in the
    /// group's PEL, or lies after the group's last delivered ID (not yet
    /// read). Entries past the earliest group position are all needed.
    pub(crate) fn is_referenced(&self, id: StreamId) -> bool {
        self.groups
            .values()
            .any(|g| id > g.last_id || g.pel.contains_key(&id))
    }

    /// Drops every group's PEL entry for `id` (DELREF's clean-up).
    pub(crate) fn drop_refs(&mut self, id: StreamId) {
        for g in self.groups.values_mut() {
            g.ack(id);
        }
    }

    /// Deletes entry `id` under `policy` (XDELEX, XACKDEL): Some(true) if
    /// deleted, Some(false) if ACKED kept it for a group that needs it,
    /// None if there is no such entry (DELREF still drops references to
    /// it). A deletion moves `max_deleted_id` as XDEL's does.
    pub(crate) fn delete_with(&mut self, id: StreamId, policy: RefPolicy) -> Option<bool> {
        if self.get(id).is_none() {
            if policy == RefPolicy::DelRef {
                self.drop_refs(id);
            }
            return None;
        }
        if policy == RefPolicy::Acked && self.is_referenced(id) {
            return Some(false);
        }
        self.delete(id);
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        if policy == RefPolicy::DelRef {
            self.drop_refs(id);
        }
        Some(true)
    }

    /// [`trim`](Self::trim) under a reference policy (XADD/XTRIM's
    /// KEEPREF | DELREF | ACKED, Redis 8.2). DELREF drops the trimmed
    /// entries' PEL entries. ACKED trims only entries no group needs,
    /// passing over the others (a node goes whole only if none of its
    /// entries is needed; an approximate trim stops at the first node that
    /// cannot); it never looks past the earliest group position, after
    /// which every entry is needed. Deleting past a kept entry leaves a
    /// gap, recorded in `max_deleted_id`. Returns entries removed.
    pub(crate) fn trim_with(
        &mut self,
        how: Trim,
        approx: bool,
        limit: u64,
        policy: RefPolicy,
    ) -> u64 {
        if policy == RefPolicy::KeepRef || self.groups.is_empty() {
            return self.trim(how, approx, limit);
        }
        let acked = policy == RefPolicy::Acked;
        let horizon = self.groups.values().map(|g| g.last_id).min();
        let mut removed: Vec<StreamId> = Vec::new();
        let mut kept_before = false;
        let mut max_gap = StreamId::MIN;
        let mut cursor = StreamId::MIN;
        let Stream {
            nodes, groups, len, ..
        } = self;
        let needed = |id: StreamId| {
            acked
                && groups
                    .values()
                    .any(|g| id > g.last_id || g.pel.contains_key(&id))
        };
        'nodes: loop {
            if let Trim::MaxLen(max) = how
                && *len <= max
            {
                break;
            }
            let Some((&key, node)) = nodes.range_mut(cursor..).next() else {
                break;
            };
            if acked && horizon.is_some_and(|h| key > h) {
                break;
            }
            let live = node.live as u64;
            if limit != 0 && (removed.len() as u64) + live > limit {
                break;
            }
            let records: Vec<Record> = node.records().collect();
            let whole = match how {
                Trim::MaxLen(max) => *len - live >= max,
                Trim::MinId(min) => node.last_id() < min,
            };
            if whole
                && !records
                    .iter()
                    .any(|r| r.flags & DELETED == 0 && needed(r.id))
            {
                for r in &records {
                    if r.flags & DELETED == 0 {
                        removed.push(r.id);
                        if kept_before {
                            max_gap = max_gap.max(r.id);
                        }
                    }
                }
                *len -= live;
                nodes.remove(&key);
                match key.incr() {
                    Some(next) => cursor = next,
                    None => break,
                }
                continue;
            }
            if approx {
                break;
            }
            for r in records {
                let stop = match how {
                    Trim::MaxLen(max) => *len <= max,
                    Trim::MinId(min) => r.id >= min,
                };
                if stop || acked && horizon.is_some_and(|h| r.id > h) {
                    break 'nodes;
                }
                if r.flags & DELETED != 0 {
                    continue;
                }
                if needed(r.id) {
                    kept_before = true;
                    continue;
                }
                node.buf[r.at] |= DELETED;
                node.live -= 1;
                *len -= 1;
                removed.push(r.id);
                if kept_before {
                    max_gap = max_gap.max(r.id);
                }
            }
            if node.live == 0 {
                nodes.remove(&key);
            }
            if !acked {
                break;
            }
            match key.incr() {
                Some(next) => cursor = next,
                None => break,
            }
        }
        if max_gap > self.max_deleted_id {
            self.max_deleted_id = max_gap;
        }
        if policy == RefPolicy::DelRef {
            for &id in &removed {
                self.drop_refs(id);
            }
        }
        removed.len() as u64
    }

    /// The last live entry's ID, or 0-0 (Redis's `streamLastValidID`).
    pub(crate) fn last_live_id(&self) -> StreamId {
        self.last_entry().map_or(StreamId::MIN, |(id, _)| id)
    }

    /// Whether `start..=end` (None: open) may hold a tombstone (Redis's
    /// `streamRangeHasTombstones`).
    pub(crate) fn range_has_tombstones(
        &self,
        start: Option<StreamId>,
        end: Option<StreamId>,
    ) -> bool {
        if self.len == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`.
    pub(crate) fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.len == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        // Deleted entries lie between `id` and the last ID (Redis 7.2+).
        if !id.is_zero() && id < self.max_deleted_id {
            return INVALID_ENTRIES_READ;
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

    /// A group's lag, or None when it cannot be known (Redis 8.0's
    /// `streamReplyWithCGLag`): 0 for an emptied stream, the length when the
    /// group and every tombstone are behind the first entry.
    pub(crate) fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 || self.len == 0 {
            return Some(0);
        }
        let first = self.first_id();
        if g.last_id < first && self.max_deleted_id < first {
            return Some(self.len as i64);
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
    pub(crate) fn mem_usage(&self) -> usize {
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

    /// A stream of entries 1-0..=n-0 in nodes of 3, with group `g` at
    /// `last` and `pending` in its PEL (owned by consumer `c`).
    fn grouped(n: u64, last: u64, pending: &[u64]) -> Stream {
        let mut s = Stream::new();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 3,
        };
        for i in 1..=n {
            s.append(id(i, 0), &[b"f", b"v"], limits);
        }
        let mut g = Group::new(id(last, 0), INVALID_ENTRIES_READ);
        g.create_consumer(b"c", 0);
        for &p in pending {
            g.pel.insert(
                id(p, 0),
                Nack {
                    consumer: b"c".as_slice().into(),
                    delivery_time: 0,
                    delivery_count: 1,
                },
            );
            g.consumers
                .get_mut(b"c".as_slice())
                .unwrap()
                .pel
                .insert(id(p, 0));
        }
        s.groups.insert(b"g".as_slice().into(), g);
        s
    }

    fn pel(s: &Stream) -> Vec<StreamId> {
        s.groups[b"g".as_slice()].pel.keys().copied().collect()
    }

    /// An entry is needed while pending somewhere or not yet delivered.
    #[test]
    fn references_are_pending_or_undelivered_entries() {
        let s = grouped(6, 4, &[2]);
        let needed: Vec<u64> = (1..=6).filter(|&i| s.is_referenced(id(i, 0))).collect();
        assert_eq!(needed, [2, 5, 6]);
        assert!(!Stream::new().is_referenced(id(1, 0)));
    }

    /// XDELEX's three policies on one entry each, and on a missing one.
    #[test]
    fn delete_with_each_policy() {
        let mut s = grouped(6, 4, &[2, 3]);
        assert_eq!(s.delete_with(id(2, 0), RefPolicy::Acked), Some(false));
        assert_eq!(s.delete_with(id(5, 0), RefPolicy::Acked), Some(false));
        assert_eq!(s.delete_with(id(1, 0), RefPolicy::Acked), Some(true));
        assert_eq!(s.delete_with(id(2, 0), RefPolicy::KeepRef), Some(true));
        assert_eq!(pel(&s), [id(2, 0), id(3, 0)]);
        assert_eq!(s.delete_with(id(3, 0), RefPolicy::DelRef), Some(true));
        assert_eq!(pel(&s), [id(2, 0)]);
        // A dangling reference goes with DELREF even without the entry.
        assert_eq!(s.delete_with(id(2, 0), RefPolicy::KeepRef), None);
        assert_eq!(pel(&s), [id(2, 0)]);
        assert_eq!(s.delete_with(id(2, 0), RefPolicy::DelRef), None);
        assert!(pel(&s).is_empty());
        assert!(
            s.groups[b"g".as_slice()].consumers[b"c".as_slice()]
                .pel
                .is_empty()
        );
        assert_eq!(ids(&s), [id(4, 0), id(5, 0), id(6, 0)]);
        assert_eq!(s.max_deleted_id, id(3, 0));
    }

    /// Trimming under each policy: KEEPREF as before, DELREF dropping the
    /// trimmed entries' PEL entries, ACKED passing over needed entries
    /// (recording the gap) and never past the group's position.
    #[test]
    fn trim_with_each_policy() {
        let mut s = grouped(9, 6, &[2, 7]);
        assert_eq!(
            s.trim_with(Trim::MaxLen(5), false, 0, RefPolicy::KeepRef),
            4
        );
        assert_eq!(pel(&s), [id(2, 0), id(7, 0)]);

        let mut s = grouped(9, 6, &[2, 7]);
        assert_eq!(s.trim_with(Trim::MaxLen(5), false, 0, RefPolicy::DelRef), 4);
        assert_eq!(pel(&s), [id(7, 0)]);
        assert_eq!(ids(&s), (5..=9).map(|i| id(i, 0)).collect::<Vec<_>>());

        // ACKED keeps 2 (pending) and everything after 6 (undelivered).
        let mut s = grouped(9, 6, &[2, 7]);
        assert_eq!(s.trim_with(Trim::MaxLen(0), false, 0, RefPolicy::Acked), 5);
        assert_eq!(ids(&s), [2, 7, 8, 9].map(|i| id(i, 0)));
        assert_eq!(s.max_deleted_id, id(6, 0));
        assert_eq!(pel(&s), [id(2, 0), id(7, 0)]);

        // MINID under ACKED stops at the threshold too.
        let mut s = grouped(9, 9, &[]);
        assert_eq!(
            s.trim_with(Trim::MinId(id(5, 0)), false, 0, RefPolicy::Acked),
            4
        );
        assert_eq!(ids(&s).first(), Some(&id(5, 0)));
        assert_eq!(s.max_deleted_id, StreamId::MIN);

        // Approximate: whole nodes only (of three entries here), and not
        // one with a needed entry.
        let mut s = grouped(9, 9, &[5]);
        assert_eq!(s.trim_with(Trim::MaxLen(0), true, 0, RefPolicy::Acked), 3);
        assert_eq!(ids(&s).first(), Some(&id(4, 0)));

        // No groups: every policy is KEEPREF.
        let mut s = grouped(9, 9, &[]);
        s.groups.clear();
        assert_eq!(s.trim_with(Trim::MaxLen(2), false, 0, RefPolicy::Acked), 7);
    }

    /// Entries come back byte for byte however they were packed: shared or
    /// own field names, integers (canonical or not, extreme, negative
    /// deltas) and strings, forwards, backwards and by ID, around deletions.
    #[test]
    fn packed_entries_read_back_exactly() {
        let values: &[&[u8]] = &[
            b"42",
            b"-7",
            b"007",
            b"+1",
            b"-0",
            b"",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"99999999999999999999",
            b"1790000000000",
            b"x y",
        ];
        let mut s = Stream::new();
        let mut want: Vec<(StreamId, Vec<Vec<u8>>)> = Vec::new();
        let limits = NodeLimits {
            max_bytes: 4096,
            max_entries: 7,
        };
        for (i, v) in values.iter().cycle().take(60).enumerate() {
            let e: Vec<&[u8]> = if i % 5 == 3 {
                vec![b"other", v, b"ts", b"1"]
            } else {
                vec![b"sensor", v, b"ts", values[(i * 3) % values.len()]]
            };
            // IDs whose seq goes down while ms goes up (negative deltas).
            let eid = id(1000 + i as u64, (7 - i as u64 % 3) * 1000);
            s.append(eid, &e, limits);
            want.push((eid, e.iter().map(|x| x.to_vec()).collect()));
        }
        for k in [4usize, 17, 30, 31] {
            assert!(s.delete(want[k].0));
        }
        let live: Vec<_> = want
            .iter()
            .enumerate()
            .filter(|(k, _)| ![4, 17, 30, 31].contains(k))
            .map(|(_, e)| e.clone())
            .collect();
        let mut fwd = Vec::new();
        s.range(StreamId::MIN, StreamId::MAX, false, |i, f| {
            fwd.push((i, f.to_vec()));
            true
        });
        assert_eq!(fwd, live);
        let mut back = Vec::new();
        s.range(StreamId::MIN, StreamId::MAX, true, |i, f| {
            back.push((i, f.to_vec()));
            true
        });
        back.reverse();
        assert_eq!(back, live);
        for (i, f) in &live {
            assert_eq!(s.get(*i).map(|x| x.to_vec()).as_ref(), Some(f));
        }
        assert!(s.get(want[17].0).is_none());
        assert_eq!(s.len(), live.len() as u64);
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
