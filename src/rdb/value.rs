//! One value in RDB form, per type and encoding: what `DUMP` serializes and
//! what a file holds after each key.
//!
//! Written as Redis 7.0 writes them (RDB 10): strings; lists as quicklists
//! of listpacks (type 18); sets as intsets (11) or plain sets (2); hashes
//! and sorted sets as listpacks (16, 17) while small, else as plain hashes
//! (4) and `ZSET_2` (5, binary doubles); streams as `STREAM_LISTPACKS_2`
//! (19), or under RDB 11+ as `STREAM_LISTPACKS_3` (21, with consumers'
//! active times). Read: everything Redis 2.x to 8.0 writes for these types,
//! including ziplists, zipmaps, 7.2's set listpacks and stream v3, and
//! 7.4's hashes with field TTLs. A hash's field TTLs are written in 7.4's
//! form (types 24/25), which only an RDB 12 reader knows; zwindow's own
//! member TTLs of sets and sorted sets are written as separate AUX records
//! by the file writer.

use std::collections::BTreeSet;

use ordered_float::NotNan;

use super::blobs::{self, Elem, ListpackWriter};
use super::codec::{Reader, put_double, put_int_string, put_len, put_ms, put_string};
use super::{Limits, RdbError, types::*};
use crate::keyspace::{Str, Value};
use crate::types::hash::{Hash, NO_TTL};
use crate::types::list::{End, List};
use crate::types::set::{Member, Set};
use crate::types::stream::{Consumer, Group, Nack, Stream, StreamId};
use crate::types::zset::{AddFlags, ZSet};

/// Appends `value` (without its type byte) as DUMP carries it and returns
/// its RDB type: a hash with field TTLs in Redis 7.4's form, the rest as
/// RDB `version` has it.
pub(crate) fn encode(value: &Value, compress: bool, version: u16, out: &mut Vec<u8>) -> u8 {
    encode_with(value, compress, true, version >= 11, out)
}

/// Appends `value` as an RDB file of `version` holds it and returns its
/// type. Below 12 a hash's field TTLs are left out (the file writer adds
/// them as an AUX record only zwindow reads).
pub(crate) fn encode_as(value: &Value, compress: bool, version: u16, out: &mut Vec<u8>) -> u8 {
    encode_with(value, compress, version >= 12, version >= 11, out)
}

/// `inline_ttls`: a hash's field TTLs in Redis 7.4's types (RDB 12);
/// `stream_v3`: streams in Redis 7.2's type, with consumers' active times
/// (RDB 11).
fn encode_with(
    value: &Value,
    compress: bool,
    inline_ttls: bool,
    stream_v3: bool,
    out: &mut Vec<u8>,
) -> u8 {
    match value {
        Value::Str(s) => {
            put_string(out, &s.data, compress);
            TYPE_STRING
        }
        Value::List(l) => {
            encode_list(l, compress, out);
            TYPE_LIST_QUICKLIST_2
        }
        Value::Set(Set::Intset(v)) => {
            put_string(out, &blobs::write_intset(v), compress);
            TYPE_SET_INTSET
        }
        Value::Set(Set::Listpack(v)) if stream_v3 => {
            // Redis 7.2's set listpack (RDB 11+).
            let mut lp = ListpackWriter::default();
            for m in v {
                lp.push(m);
            }
            put_string(out, &lp.finish_blob(), compress);
            TYPE_SET_LISTPACK
        }
        Value::Set(s) => {
            put_len(out, s.len() as u64);
            for m in s.iter() {
                match m {
                    Member::Int(v) => put_int_string(out, v),
                    Member::Bytes(b) => put_string(out, b, compress),
                }
            }
            TYPE_SET
        }
        Value::Hash(h) => encode_hash(h, compress, inline_ttls, out),
        Value::ZSet(z) => {
            if z.encoding_name() == "listpack" {
                let mut lp = ListpackWriter::default();
                let mut scratch = Vec::new();
                for (m, s) in z.iter() {
                    lp.push(m.joined(&mut scratch));
                    lp.push(score_text(s).as_bytes());
                }
                put_string(out, &lp.finish_blob(), compress);
                TYPE_ZSET_LISTPACK
            } else {
                put_len(out, z.len() as u64);
                // Redis writes from the tail so loading inserts at the head.
                let all: Vec<_> = z.iter().collect();
                let mut scratch = Vec::new();
                for (m, s) in all.into_iter().rev() {
                    put_string(out, m.joined(&mut scratch), compress);
                    put_double(out, s);
                }
                TYPE_ZSET_2
            }
        }
        Value::Stream(s) => {
            encode_stream(s, compress, stream_v3, out);
            if stream_v3 {
                TYPE_STREAM_LISTPACKS_3
            } else {
                TYPE_STREAM_LISTPACKS_2
            }
        }
    }
}

/// A score as a listpack stores it (`d2string`): integers in range as
/// integers, others in the shortest text that reads back the same.
fn score_text(s: f64) -> String {
    if s.is_infinite() {
        return if s > 0.0 { "inf" } else { "-inf" }.into();
    }
    if s == s.trunc() && s.abs() < 4_503_599_627_370_496.0 {
        return (s as i64).to_string();
    }
    format!("{s:e}")
}

fn encode_list(l: &List, compress: bool, out: &mut Vec<u8>) {
    // The quicklist's own nodes; a listpack list as a quicklist of one
    // node (as Redis 7.2+ writes it, so 7.0 loads it).
    let nodes: Vec<_> = l.nodes().into_iter().filter(|n| n.count > 0).collect();
    put_len(out, nodes.len() as u64);
    for n in nodes {
        let mut elems = l.range(n.start, n.start + n.count - 1);
        if n.plain {
            put_len(out, QUICKLIST_NODE_PLAIN);
            put_string(out, elems.next().unwrap_or_default(), compress);
            continue;
        }
        let mut lp = ListpackWriter::default();
        for e in elems {
            lp.push(e);
        }
        put_len(out, QUICKLIST_NODE_PACKED);
        put_string(out, &lp.finish_blob(), compress);
    }
}

fn encode_hash(h: &Hash, compress: bool, inline_ttls: bool, out: &mut Vec<u8>) -> u8 {
    // Only a hash that has (had) field TTLs pays for looking them up (a
    // lookup is a scan in a listpack).
    let ttls: Vec<u64> = if inline_ttls && h.min_deadline().is_some() {
        h.iter()
            .map(|(f, _)| h.expire_at(f).unwrap_or(NO_TTL))
            .collect()
    } else {
        Vec::new()
    };
    let min = inline_ttls
        .then(|| ttls.iter().copied().filter(|&t| t != NO_TTL).min())
        .flatten();
    let listpack = h.encoding() != "hashtable";
    match (listpack, min) {
        (true, None) => {
            let mut lp = ListpackWriter::default();
            for (f, v) in h.iter() {
                lp.push(f);
                lp.push(v);
            }
            put_string(out, &lp.finish_blob(), compress);
            TYPE_HASH_LISTPACK
        }
        (false, None) => {
            put_len(out, h.len() as u64);
            for (f, v) in h.iter() {
                put_string(out, f, compress);
                put_string(out, v, compress);
            }
            TYPE_HASH
        }
        (true, Some(min)) => {
            put_ms(out, min);
            let mut lp = ListpackWriter::default();
            for ((f, v), t) in h.iter().zip(&ttls) {
                lp.push(f);
                lp.push(v);
                lp.push_int(*t as i64);
            }
            put_string(out, &lp.finish_blob(), compress);
            TYPE_HASH_LISTPACK_EX
        }
        (false, Some(min)) => {
            put_ms(out, min);
            put_len(out, h.len() as u64);
            for ((f, v), t) in h.iter().zip(&ttls) {
                put_len(out, if *t == NO_TTL { 0 } else { t - min + 1 });
                put_string(out, f, compress);
                put_string(out, v, compress);
            }
            TYPE_HASH_METADATA
        }
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

fn raw_id(id: StreamId) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&id.ms.to_be_bytes());
    b[8..].copy_from_slice(&id.seq.to_be_bytes());
    b
}

fn encode_stream(s: &Stream, compress: bool, v3: bool, out: &mut Vec<u8>) {
    let nodes: Vec<(StreamId, Vec<u8>)> = s
        .node_entries()
        .map(|(key, entries)| (key, stream_listpack(key, entries)))
        .collect();
    put_len(out, nodes.len() as u64);
    for (key, lp) in nodes {
        put_string(out, &raw_id(key), false);
        put_string(out, &lp, compress);
    }
    put_len(out, s.len());
    put_id(out, s.last_id);
    put_id(out, s.first_id());
    put_id(out, s.max_deleted_id);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(out, name, compress);
        put_id(out, g.last_id);
        put_len(out, g.entries_read as u64);
        put_len(out, g.pel.len() as u64);
        for (id, n) in &g.pel {
            out.extend_from_slice(&raw_id(*id));
            put_ms(out, n.delivery_time);
            put_len(out, n.delivery_count);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname, compress);
            put_ms(out, c.seen_time);
            if v3 {
                // -1 (never active) as Redis writes it: all ones.
                put_ms(out, c.active_time as u64);
            }
            put_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&raw_id(*id));
            }
        }
    }
}

/// One stream node as Redis's listpack: the master entry (live count,
/// deleted count, the first entry's field names, 0), then each entry as
/// flags, ID deltas, fields or values only, and its element count.
fn stream_listpack(
    key: StreamId,
    entries: impl Iterator<Item = (StreamId, bool, Vec<Vec<u8>>)>,
) -> Vec<u8> {
    let entries: Vec<_> = entries.collect();
    let live = entries.iter().filter(|e| !e.1).count();
    let master: Vec<&[u8]> = entries
        .first()
        .map(|e| e.2.iter().step_by(2).map(Vec::as_slice).collect())
        .unwrap_or_default();
    let mut lp = ListpackWriter::default();
    lp.push_int(live as i64);
    lp.push_int((entries.len() - live) as i64);
    lp.push_int(master.len() as i64);
    for f in &master {
        lp.push(f);
    }
    lp.push_int(0);
    for (id, deleted, fields) in &entries {
        let same = fields.len() == master.len() * 2
            && fields
                .iter()
                .step_by(2)
                .zip(&master)
                .all(|(a, b)| a.as_slice() == *b);
        let flags = i64::from(*deleted) | if same { 2 } else { 0 };
        lp.push_int(flags);
        lp.push_int(id.ms.wrapping_sub(key.ms) as i64);
        lp.push_int(id.seq.wrapping_sub(key.seq) as i64);
        let nf = fields.len() / 2;
        if same {
            for v in fields.iter().skip(1).step_by(2) {
                lp.push(v);
            }
            lp.push_int(nf as i64 + 3);
        } else {
            lp.push_int(nf as i64);
            for f in fields {
                lp.push(f);
            }
            lp.push_int(nf as i64 * 2 + 4);
        }
    }
    lp.finish_blob()
}

/// What a decoded value brings beyond the value itself.
#[derive(Default)]
pub(crate) struct Decoded {
    /// The hash has field TTLs (the keyspace must schedule it).
    pub(crate) field_ttls: bool,
    /// Listpacks and intsets Redis would have checked deeply (its
    /// `stat_dump_payload_sanitizations`, counted per blob under
    /// [`Limits::deep`]; ziplists, always checked, are not counted).
    pub(crate) sanitizations: u64,
}

fn corrupt(what: &'static str) -> RdbError {
    RdbError::corrupt(what)
}

/// Redis's reports (`rdbReportCorruptRDB`), with their `rdb.c` lines as
/// the redis-server 7.0.15 the differential tests run (Debian's build)
/// logs them: one to nine lines after upstream's; those of the duplicate
/// group, global PEL and consumer PEL entries, intsets and zipmaps, never
/// seen in its log, are upstream's moved as much as their neighbours. zwindow checks every value in full whatever
/// `sanitize-dump-payload` says (Redis's deep checks only under `yes`):
/// a value it cannot read whole is refused, never kept to fail later.
mod report {
    use super::RdbError;

    pub(super) fn set_dup() -> RdbError {
        RdbError::report(1829, "Duplicate set members detected")
    }
    pub(super) fn zset_nan() -> RdbError {
        RdbError::report(1882, "Zset with NAN score detected")
    }
    pub(super) fn zset_dup() -> RdbError {
        RdbError::report(1894, "Duplicate zset fields detected")
    }
    pub(super) fn hash_dup_small() -> RdbError {
        RdbError::report(1951, "Hash with dup elements")
    }
    pub(super) fn hash_dup() -> RdbError {
        RdbError::report(2019, "Duplicate hash fields detected")
    }
    pub(super) fn quicklist() -> RdbError {
        RdbError::report(2048, "Quicklist integrity check failed.")
    }
    pub(super) fn listpack() -> RdbError {
        RdbError::report(2071, "Listpack integrity check failed.")
    }
    pub(super) fn ziplist() -> RdbError {
        RdbError::report(2081, "Ziplist integrity check failed.")
    }
    pub(super) fn zipmap() -> RdbError {
        RdbError::report(2130, "Zipmap integrity check failed.")
    }
    pub(super) fn zipmap_dup(flen: usize) -> RdbError {
        RdbError(
            format!("Hash zipmap with dup elements, or big length ({flen})"),
            2154,
        )
    }
    pub(super) fn list_ziplist() -> RdbError {
        RdbError::report(2189, "List ziplist integrity check failed.")
    }
    pub(super) fn intset() -> RdbError {
        RdbError::report(2214, "Intset integrity check failed.")
    }
    pub(super) fn zset_ziplist() -> RdbError {
        RdbError::report(2229, "Zset ziplist integrity check failed.")
    }
    pub(super) fn zset_listpack() -> RdbError {
        RdbError::report(2255, "Zset listpack integrity check failed.")
    }
    pub(super) fn hash_ziplist() -> RdbError {
        RdbError::report(2275, "Hash ziplist integrity check failed.")
    }
    pub(super) fn hash_listpack() -> RdbError {
        RdbError::report(2301, "Hash listpack integrity check failed.")
    }
    pub(super) fn stream_node_key() -> RdbError {
        RdbError::report(2343, "Stream node key entry is not the size of a stream ID")
    }
    pub(super) fn stream_listpack() -> RdbError {
        RdbError::report(2362, "Stream listpack integrity check failed.")
    }
    pub(super) fn stream_empty_listpack() -> RdbError {
        RdbError::report(2374, "Empty listpack inside stream")
    }
    pub(super) fn stream_node_dup() -> RdbError {
        RdbError::report(2386, "Listpack re-added with existing key")
    }
    pub(super) fn stream_group_dup(name: &[u8]) -> RdbError {
        RdbError(
            format!(
                "Duplicated consumer group name {}",
                String::from_utf8_lossy(name)
            ),
            2480,
        )
    }
    pub(super) fn stream_pel_dup() -> RdbError {
        RdbError::report(
            2516,
            "Duplicated global PEL entry loading stream consumer group",
        )
    }
    pub(super) fn stream_consumer_dup() -> RdbError {
        RdbError::report(2543, "Duplicate stream consumer detected.")
    }
    pub(super) fn stream_consumer_pel_missing() -> RdbError {
        RdbError::report(2580, "Consumer entry not found in group global PEL")
    }
    pub(super) fn stream_consumer_pel_dup() -> RdbError {
        RdbError::report(
            2591,
            "Duplicated consumer PEL entry  loading a stream consumer group",
        )
    }
    pub(super) fn stream_pel_orphan() -> RdbError {
        RdbError::report(2611, "Stream CG PEL entry without consumer")
    }
}

fn not_nan(s: f64) -> Result<NotNan<f64>, RdbError> {
    NotNan::new(s).map_err(|_| report::zset_nan())
}

/// Adds a member, or `dup` if it was there.
fn zadd(
    z: &mut ZSet,
    m: &[u8],
    s: f64,
    lim: &Limits,
    dup: fn() -> RdbError,
) -> Result<(), RdbError> {
    match z.add(m, not_nan(s)?, AddFlags::default(), lim.zset) {
        Ok(crate::types::zset::AddOutcome::Added { .. }) => Ok(()),
        _ => Err(dup()),
    }
}

/// Sets a field, or `dup` if it was there.
fn hset(
    h: &mut Hash,
    f: &[u8],
    v: &[u8],
    lim: &Limits,
    dup: impl FnOnce() -> RdbError,
) -> Result<(), RdbError> {
    if h.set(f, v, lim.hash) {
        Ok(())
    } else {
        Err(dup())
    }
}

fn sadd(s: &mut Set, m: &[u8], lim: &Limits, dup: fn() -> RdbError) -> Result<(), RdbError> {
    if s.add(m, lim.set) {
        Ok(())
    } else {
        Err(dup())
    }
}

/// Reads one value of RDB type `ty`.
pub(crate) fn decode(
    ty: u8,
    r: &mut Reader<'_>,
    lim: &Limits,
) -> Result<(Value, Decoded), RdbError> {
    let mut extra = Decoded::default();
    let value = match ty {
        TYPE_STRING => Value::Str(Str::new(&r.string()?)),
        TYPE_LIST => {
            let n = r.count(1)?;
            let mut l = List::new_quicklist(lim.list_fill);
            for _ in 0..n {
                l.push(End::Right, &r.string()?);
            }
            l.settle(lim.list_fill);
            Value::List(Box::new(l))
        }
        TYPE_LIST_ZIPLIST => {
            // Redis 7.2+ leaves a converted ziplist a quicklist.
            let mut l = List::new_quicklist(lim.list_fill);
            for e in blobs::ziplist(&r.string()?).map_err(|_| report::list_ziplist())? {
                l.push(End::Right, &e.to_vec());
            }
            Value::List(Box::new(l))
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            let n = r.count(1)?;
            let mut l = List::new_quicklist(lim.list_fill);
            for _ in 0..n {
                let container = if ty == TYPE_LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    QUICKLIST_NODE_PACKED
                };
                if container != QUICKLIST_NODE_PLAIN && container != QUICKLIST_NODE_PACKED {
                    return Err(report::quicklist());
                }
                let blob = r.string()?;
                if blob.is_empty() {
                    // Redis fails it as a short read, without a report.
                    return Err(corrupt("quicklist node of 0 bytes"));
                }
                match container {
                    QUICKLIST_NODE_PLAIN => l.append_node(std::iter::once(&blob[..]), true),
                    QUICKLIST_NODE_PACKED => {
                        if ty == TYPE_LIST_QUICKLIST_2 {
                            extra.sanitizations += u64::from(lim.deep);
                        }
                        let elems = if ty == TYPE_LIST_QUICKLIST_2 {
                            blobs::listpack(&blob).map_err(|_| report::listpack())?
                        } else {
                            blobs::ziplist(&blob).map_err(|_| report::ziplist())?
                        };
                        // Redis keeps the file's nodes, skipping empty ones
                        // (and a list left empty).
                        let elems: Vec<Vec<u8>> = elems.iter().map(|e| e.to_vec()).collect();
                        l.append_node(elems.iter().map(|e| &e[..]), false);
                    }
                    _ => return Err(corrupt("unknown quicklist node container")),
                }
            }
            l.settle(lim.list_fill);
            Value::List(Box::new(l))
        }
        TYPE_SET => {
            let n = r.count(1)?;
            // Redis starts a table when the intset could not hold them all.
            let mut s = if n > lim.set.intset.min(1 << 30) {
                Set::new_table()
            } else {
                Set::new_intset()
            };
            for _ in 0..n {
                sadd(&mut s, &r.string()?, lim, report::set_dup)?;
            }
            Value::Set(s)
        }
        TYPE_SET_INTSET => {
            let blob = r.string()?;
            extra.sanitizations += u64::from(lim.deep);
            let v = blobs::intset(&blob).map_err(|_| report::intset())?;
            let mut s = Set::new_intset();
            for x in v {
                s.add_member(Member::Int(x), lim.set);
            }
            Value::Set(s)
        }
        TYPE_SET_LISTPACK => {
            // Redis 7.2's: checked as 7.2 does it, kept a listpack (in the
            // file's order) unless it has too many entries.
            let bad = || RdbError::report(0, "Set listpack integrity check failed.");
            let members: Vec<Vec<u8>> = blobs::listpack(&r.string()?)
                .map_err(|_| bad())?
                .into_iter()
                .map(|e| e.to_vec())
                .collect();
            let s = Set::from_listpack(members, lim.set).ok_or_else(bad)?;
            Value::Set(s)
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count(2)?;
            let mut z = ZSet::with_capacity_hint(n, 0, lim.zset);
            for _ in 0..n {
                let m = r.string()?;
                let s = if ty == TYPE_ZSET_2 {
                    r.double()?
                } else {
                    r.text_double()?
                };
                zadd(&mut z, &m, s, lim, report::zset_dup)?;
            }
            Value::ZSet(z)
        }
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            extra.sanitizations += u64::from(lim.deep && ty == TYPE_ZSET_LISTPACK);
            let bad = if ty == TYPE_ZSET_LISTPACK {
                report::zset_listpack
            } else {
                report::zset_ziplist
            };
            let elems = if ty == TYPE_ZSET_LISTPACK {
                blobs::listpack(&blob)
            } else {
                blobs::ziplist(&blob)
            }
            .map_err(|_| bad())?;
            if elems.len() % 2 != 0 {
                return Err(bad());
            }
            let mut z = ZSet::new();
            for p in elems.chunks_exact(2) {
                let s = match &p[1] {
                    Elem::Int(v) => *v as f64,
                    Elem::Str(s) => crate::util::parse_f64(s).ok_or_else(bad)?,
                };
                zadd(&mut z, &p[0].to_vec(), s, lim, bad)?;
            }
            Value::ZSet(z)
        }
        TYPE_HASH => {
            let n = r.count(2)?;
            let mut h = Hash::new();
            // Redis's deep check finds the duplicates of a hash small
            // enough to start as a listpack; its table finds the others.
            let dup = if n <= lim.hash.entries {
                report::hash_dup_small
            } else {
                report::hash_dup
            };
            for _ in 0..n {
                let (f, v) = (r.string()?, r.string()?);
                hset(&mut h, &f, &v, lim, dup)?;
            }
            Value::Hash(h)
        }
        TYPE_HASH_ZIPMAP => {
            let blob = r.string()?;
            let mut h = Hash::new();
            for (f, v) in blobs::zipmap(&blob).map_err(|_| report::zipmap())? {
                hset(&mut h, f, v, lim, || report::zipmap_dup(f.len()))?;
            }
            Value::Hash(h)
        }
        TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            extra.sanitizations += u64::from(lim.deep && ty == TYPE_HASH_LISTPACK);
            let bad = if ty == TYPE_HASH_LISTPACK {
                report::hash_listpack
            } else {
                report::hash_ziplist
            };
            let elems = if ty == TYPE_HASH_LISTPACK {
                blobs::listpack(&blob)
            } else {
                blobs::ziplist(&blob)
            }
            .map_err(|_| bad())?;
            if elems.len() % 2 != 0 {
                return Err(bad());
            }
            let mut h = Hash::new();
            for p in elems.chunks_exact(2) {
                hset(&mut h, &p[0].to_vec(), &p[1].to_vec(), lim, bad)?;
            }
            Value::Hash(h)
        }
        TYPE_HASH_METADATA => {
            let min = r.ms()?;
            let n = r.count(3)?;
            let mut h = Hash::new();
            for _ in 0..n {
                let ttl = r.len()?;
                let (f, v) = (r.string()?, r.string()?);
                hset(&mut h, &f, &v, lim, report::hash_dup)?;
                if ttl != 0 {
                    h.set_expire(&f, min.saturating_add(ttl - 1));
                    extra.field_ttls = true;
                }
            }
            Value::Hash(h)
        }
        TYPE_HASH_LISTPACK_EX => {
            r.ms()?;
            let blob = r.string()?;
            let elems = blobs::listpack(&blob)?;
            if elems.len() % 3 != 0 {
                return Err(corrupt("hash listpack with TTLs not in triplets"));
            }
            let mut h = Hash::new();
            let mut ttls = Vec::new();
            for t in elems.chunks_exact(3) {
                let f = t[0].to_vec();
                hset(&mut h, &f, &t[1].to_vec(), lim, report::hash_listpack)?;
                let at = t[2].as_int().ok_or_else(|| corrupt("bad field TTL"))?;
                if at > 0 {
                    ttls.push((f, at as u64));
                }
            }
            // Redis keeps the fields with a TTL first, by deadline (a later
            // one of equal deadline before an earlier one), and loads them
            // in that order. Setting the TTLs from the last one back puts
            // each before those already set: the file's order again, and a
            // valid order whatever the file says.
            for (f, at) in ttls.iter().rev() {
                h.set_expire(f, *at);
            }
            extra.field_ttls |= !ttls.is_empty();
            Value::Hash(h)
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            let (s, nodes) = decode_stream(ty, r, lim)?;
            extra.sanitizations += if lim.deep { nodes } else { 0 };
            Value::Stream(Box::new(s))
        }
        TYPE_MODULE_PRE_GA | TYPE_MODULE_2 => {
            return Err(RdbError::corrupt(
                "module data types are not supported (no modules are loaded)",
            ));
        }
        TYPE_HASH_METADATA_PRE_GA | TYPE_HASH_LISTPACK_EX_PRE_GA => {
            return Err(corrupt("hash field TTLs of a Redis 7.4 release candidate"));
        }
        _ => return Err(RdbError::corrupt("unknown RDB value type")),
    };
    Ok((value, extra))
}

fn read_raw_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    let b = r.bytes(16)?;
    let ms = u64::from_be_bytes(b[..8].try_into().unwrap_or_default());
    let seq = u64::from_be_bytes(b[8..].try_into().unwrap_or_default());
    Ok(StreamId { ms, seq })
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId {
        ms: r.len()?,
        seq: r.len()?,
    })
}

/// A stream, and how many listpack nodes it had.
fn decode_stream(ty: u8, r: &mut Reader<'_>, lim: &Limits) -> Result<(Stream, u64), RdbError> {
    let mut s = Stream::new();
    let nodes = r.count(2)?;
    let mut keys = std::collections::HashSet::new();
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(report::stream_node_key());
        }
        let master = read_raw_id(&mut Reader::new(&key))?;
        let blob = r.string()?;
        let elems = blobs::listpack(&blob).map_err(|_| report::stream_listpack())?;
        if elems.is_empty() {
            return Err(report::stream_empty_listpack());
        }
        if !keys.insert(master) {
            return Err(report::stream_node_dup());
        }
        read_stream_node(&mut s, master, &elems, lim)?;
    }
    let len = r.len()?;
    let last_id = read_id(r)?;
    let (mut max_deleted, mut entries_added) = (StreamId::MIN, s.len());
    if ty != TYPE_STREAM_LISTPACKS {
        let _first = read_id(r)?;
        max_deleted = read_id(r)?;
        entries_added = r.len()?;
    }
    if len != s.len() {
        return Err(corrupt("stream length does not match its entries"));
    }
    s.last_id = last_id;
    s.max_deleted_id = max_deleted;
    s.entries_added = entries_added;
    let ngroups = r.count(1)?;
    for _ in 0..ngroups {
        let name = r.string()?;
        let glast = read_id(r)?;
        let entries_read = if ty != TYPE_STREAM_LISTPACKS {
            r.len()? as i64
        } else {
            // A Redis 6 stream has no read counters: 7.0 estimates them.
            s.estimate_distance(glast)
        };
        let mut g = Group::new(glast, entries_read);
        if s.groups.contains_key(name.as_slice()) {
            return Err(report::stream_group_dup(&name));
        }
        let npel = r.count(17)?;
        for _ in 0..npel {
            let id = read_raw_id(r)?;
            let delivery_time = r.ms()?;
            let delivery_count = r.len()?;
            let nack = Nack {
                consumer: Box::default(),
                delivery_time,
                delivery_count,
            };
            if g.pel.insert(id, nack).is_some() {
                return Err(report::stream_pel_dup());
            }
        }
        let nconsumers = r.count(9)?;
        for _ in 0..nconsumers {
            let cname: Box<[u8]> = r.string()?.into();
            let seen_time = r.ms()?;
            // Before 7.2's type the active time was not kept: Redis takes
            // the seen time for it.
            let active_time = if ty == TYPE_STREAM_LISTPACKS_3 {
                r.ms()? as i64
            } else {
                seen_time as i64
            };
            if g.consumers.contains_key(&cname) {
                return Err(report::stream_consumer_dup());
            }
            let n = r.count(16)?;
            let mut pel = BTreeSet::new();
            for _ in 0..n {
                let id = read_raw_id(r)?;
                let nack = g
                    .pel
                    .get_mut(&id)
                    .ok_or_else(report::stream_consumer_pel_missing)?;
                if !pel.insert(id) {
                    return Err(report::stream_consumer_pel_dup());
                }
                if !nack.consumer.is_empty() {
                    // Redis 7.0 moves the entry to the later consumer and
                    // leaves it in the earlier one's PEL too.
                    return Err(corrupt("stream PEL entry owned by two consumers"));
                }
                nack.consumer = cname.clone();
            }
            g.consumers.insert(
                cname,
                Consumer {
                    seen_time,
                    active_time,
                    pel,
                },
            );
        }
        if g.pel.values().any(|n| n.consumer.is_empty()) {
            return Err(report::stream_pel_orphan());
        }
        s.groups.insert(name.into(), g);
    }
    Ok((s, nodes as u64))
}

/// Appends the live entries of one stream listpack node, checked as
/// Redis's deep `streamValidateListpackIntegrity` checks it: the master
/// entry (live and deleted counts, field names, a 0), exactly as many
/// entries as its counts say, each with integer flags and ID deltas and an
/// `lp-count` that counts its elements, and nothing after the last.
fn read_stream_node(
    s: &mut Stream,
    master: StreamId,
    e: &[Elem<'_>],
    lim: &Limits,
) -> Result<(), RdbError> {
    let bad = report::stream_listpack;
    let int = |i: usize| e.get(i).and_then(Elem::as_int).ok_or_else(bad);
    let count = |i: usize| usize::try_from(int(i)?).map_err(|_| bad());
    let entries = count(0)?
        .checked_add(count(1)?)
        .filter(|&n| n <= e.len())
        .ok_or_else(bad)?;
    let nmaster = count(2)?;
    if nmaster > e.len() {
        return Err(bad());
    }
    let master_fields: Vec<Vec<u8>> = (0..nmaster)
        .map(|i| e.get(3 + i).map(Elem::to_vec).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    let mut p = 3 + nmaster;
    if int(p)? != 0 {
        return Err(bad());
    }
    p += 1;
    for _ in 0..entries {
        let flags = int(p)?;
        let id = StreamId {
            ms: master.ms.wrapping_add(int(p + 1)? as u64),
            seq: master.seq.wrapping_add(int(p + 2)? as u64),
        };
        p += 3;
        let mut fields: Vec<Vec<u8>> = Vec::new();
        if flags & 2 != 0 {
            for f in &master_fields {
                fields.push(f.clone());
                fields.push(e.get(p).ok_or_else(bad)?.to_vec());
                p += 1;
            }
        } else {
            let n = usize::try_from(int(p)?).map_err(|_| bad())?;
            p += 1;
            if n > e.len() {
                return Err(bad());
            }
            for _ in 0..n * 2 {
                fields.push(e.get(p).ok_or_else(bad)?.to_vec());
                p += 1;
            }
        }
        let expected = if flags & 2 != 0 {
            master_fields.len() + 3
        } else {
            fields.len() + 4
        };
        if usize::try_from(int(p)?).ok() != Some(expected) {
            return Err(bad());
        }
        p += 1;
        if flags & 1 == 0 {
            if id <= s.last_id && !s.is_empty() {
                return Err(corrupt("stream entries out of order"));
            }
            let refs: Vec<&[u8]> = fields.iter().map(Vec::as_slice).collect();
            s.append(id, &refs, lim.stream);
        }
    }
    if p != e.len() {
        return Err(bad());
    }
    Ok(())
}

/// The zwindow-only part of a value that RDB has no place for: a sorted
/// set's member TTLs, as `member, deadline` pairs.
pub(crate) fn member_ttls(z: &ZSet) -> Option<Vec<u8>> {
    if !z.has_ttls() {
        return None;
    }
    let mut out = Vec::new();
    let mut n = 0u64;
    let mut body = Vec::new();
    let mut scratch = Vec::new();
    for (m, _) in z.iter() {
        let m = m.joined(&mut scratch);
        if let Some(at) = z
            .expire_at(m)
            .filter(|&a| a != crate::types::zset::ttl::NO_TTL)
        {
            put_string(&mut body, m, false);
            put_ms(&mut body, at);
            n += 1;
        }
    }
    put_len(&mut out, n);
    out.extend_from_slice(&body);
    Some(out)
}

/// The zwindow-only part of a hash in a file: its field TTLs, as `field,
/// deadline` pairs.
pub(crate) fn field_ttls(h: &Hash) -> Option<Vec<u8>> {
    h.min_deadline()?;
    let mut body = Vec::new();
    let mut n = 0u64;
    for (f, _) in h.iter() {
        if let Some(at) = h.expire_at(f).filter(|&a| a != NO_TTL) {
            put_string(&mut body, f, false);
            put_ms(&mut body, at);
            n += 1;
        }
    }
    let mut out = Vec::new();
    put_len(&mut out, n);
    out.extend_from_slice(&body);
    Some(out)
}

/// Applies [`field_ttls`]'s record to a loaded hash.
pub(crate) fn apply_field_ttls(h: &mut Hash, record: &[u8]) -> Result<(), RdbError> {
    let mut r = Reader::new(record);
    let n = r.count(9)?;
    for _ in 0..n {
        let f = r.string()?;
        let at = r.ms()?;
        h.set_expire(&f, at);
    }
    Ok(())
}

/// The zwindow-only part of a set: its member TTLs, as `member, deadline`
/// pairs (the record [`member_ttls`] writes for a sorted set).
pub(crate) fn set_member_ttls(s: &Set) -> Option<Vec<u8>> {
    if !s.has_ttls() {
        return None;
    }
    let mut body = Vec::new();
    let mut n = 0u64;
    for m in s.iter() {
        m.with_bytes(|m| {
            if let Some(at) = s.expire_at(m).filter(|&a| a != NO_TTL) {
                put_string(&mut body, m, false);
                put_ms(&mut body, at);
                n += 1;
            }
        });
    }
    let mut out = Vec::new();
    put_len(&mut out, n);
    out.extend_from_slice(&body);
    Some(out)
}

/// Applies [`set_member_ttls`]'s record to a loaded set.
pub(crate) fn apply_set_member_ttls(s: &mut Set, record: &[u8]) -> Result<(), RdbError> {
    let mut r = Reader::new(record);
    let n = r.count(9)?;
    for _ in 0..n {
        let m = r.string()?;
        let at = r.ms()?;
        s.set_expire(&m, at);
    }
    Ok(())
}

/// Applies [`member_ttls`]'s record to a loaded sorted set.
pub(crate) fn apply_member_ttls(z: &mut ZSet, record: &[u8]) -> Result<(), RdbError> {
    let mut r = Reader::new(record);
    let n = r.count(9)?;
    for _ in 0..n {
        let m = r.string()?;
        let at = r.ms()?;
        z.set_expire(&m, at);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            zset: Default::default(),
            hash: crate::types::hash::Limits {
                entries: 128,
                value: 64,
            },
            set: crate::types::set::SetLimits::DEFAULT,
            list_fill: -2,
            stream: Default::default(),
            deep: true,
        }
    }

    /// Every kind of value and encoding zwindow writes.
    fn samples() -> Vec<Value> {
        let lim = limits();
        let mut v = vec![
            Value::Str(Str::new(b"hello")),
            Value::Str(Str::new(b"-123456789012")),
            Value::Str(Str::new(&vec![b'z'; 10_000])),
        ];
        let mut l = List::new();
        for i in 0..3000 {
            l.push(End::Right, format!("item{i}").as_bytes());
        }
        l.push(End::Right, &vec![b'x'; 20_000]);
        l.settle(-2);
        v.push(Value::List(Box::new(l)));
        let mut ints = Set::new_intset();
        let mut strs = Set::new_intset();
        for i in 0..100 {
            ints.add(
                format!("{}", i * 1000 - 7).as_bytes(),
                crate::types::set::SetLimits::DEFAULT,
            );
            strs.add(
                format!("m{i}").as_bytes(),
                crate::types::set::SetLimits::DEFAULT,
            );
        }
        v.push(Value::Set(ints));
        v.push(Value::Set(strs));
        for n in [5, 500] {
            let mut h = Hash::new();
            let mut z = ZSet::new();
            for i in 0..n {
                h.set(
                    format!("f{i}").as_bytes(),
                    format!("{i}").as_bytes(),
                    lim.hash,
                );
                let s = [f64::NEG_INFINITY, -0.5, 1e300, 3.0, 1.0 / 3.0][i % 5] + i as f64;
                zadd(
                    &mut z,
                    format!("m{i}").as_bytes(),
                    s,
                    &lim,
                    report::zset_dup,
                )
                .unwrap();
            }
            v.push(Value::Hash(h));
            v.push(Value::ZSet(z));
        }
        let mut s = Stream::new();
        for i in 1..300u64 {
            let f = if i % 3 == 0 {
                b"other".as_slice()
            } else {
                b"a"
            };
            s.append(
                StreamId::new(i, 0),
                &[f, format!("{i}").as_bytes()],
                lim.stream,
            );
        }
        s.delete(StreamId::new(5, 0));
        let mut g = Group::new(StreamId::new(10, 0), 10);
        g.create_consumer(b"alice", 42);
        // The 7.0 stream type written keeps no active time: it loads as
        // the seen time (Redis's rule), so the sample's consumer was active
        // when last seen.
        g.consumers
            .get_mut(b"alice".as_slice())
            .unwrap()
            .active_time = 42;
        for i in 1..4 {
            let id = StreamId::new(i, 0);
            g.pel.insert(
                id,
                Nack {
                    consumer: b"alice".as_slice().into(),
                    delivery_time: 7,
                    delivery_count: i,
                },
            );
            g.consumers
                .get_mut(b"alice".as_slice())
                .unwrap()
                .pel
                .insert(id);
        }
        s.groups.insert(b"g".as_slice().into(), g);
        v.push(Value::Stream(Box::new(s)));
        v
    }

    fn describe(v: &Value) -> String {
        match v {
            Value::Str(s) => format!("{:?}", s.data),
            Value::List(l) => format!("{:?}", l.iter().collect::<Vec<_>>()),
            Value::Set(s) => {
                let mut m: Vec<Vec<u8>> = s.iter().map(|m| m.to_bytes().into_owned()).collect();
                m.sort();
                format!("{} {m:?}", s.encoding())
            }
            Value::Hash(h) => format!("{} {:?}", h.encoding(), h.iter().collect::<Vec<_>>()),
            Value::ZSet(z) => format!("{} {:?}", z.encoding_name(), z.iter().collect::<Vec<_>>()),
            Value::Stream(s) => {
                let mut e = Vec::new();
                s.range(StreamId::MIN, StreamId::MAX, false, |id, f| {
                    e.push((id, f.to_vec()));
                    true
                });
                format!(
                    "{e:?} {:?} {:?} {} {:?}",
                    s.last_id, s.max_deleted_id, s.entries_added, s.groups
                )
            }
        }
    }

    #[test]
    fn every_value_round_trips() {
        for v in samples() {
            for (compress, version) in [(false, 10), (true, 10), (false, 12), (true, 12)] {
                let mut out = Vec::new();
                let ty = encode_as(&v, compress, version, &mut out);
                let mut r = Reader::new(&out);
                let (back, _) = decode(ty, &mut r, &limits()).unwrap();
                assert!(r.is_empty());
                assert_eq!(describe(&back), describe(&v));
            }
        }
    }

    #[test]
    fn hash_field_ttls_round_trip_in_74s_form() {
        let mut h = Hash::new();
        for i in 0..3 {
            h.set(format!("f{i}").as_bytes(), b"v", limits().hash);
        }
        h.set_expire(b"f1", 5_000);
        let v = Value::Hash(h);
        let mut out = Vec::new();
        assert_eq!(encode(&v, false, 10, &mut out), TYPE_HASH_LISTPACK_EX);
        let (back, extra) =
            decode(TYPE_HASH_LISTPACK_EX, &mut Reader::new(&out), &limits()).unwrap();
        assert!(extra.field_ttls);
        let Value::Hash(b) = back else { panic!() };
        assert_eq!(b.expire_at(b"f1"), Some(5_000));
        assert_eq!(b.expire_at(b"f0"), Some(NO_TTL));
    }

    /// Redis loads a `listpackex` in the file's order (TTL fields first by
    /// deadline, the later-set first on a tie): so does zwindow.
    #[test]
    fn listpackex_field_order_survives_a_round_trip() {
        let mut h = Hash::new();
        for f in ["f", "g", "k", "m"] {
            h.set(f.as_bytes(), b"v", limits().hash);
        }
        h.set_expire(b"m", 9_000);
        h.set_expire(b"f", 5_000);
        h.set_expire(b"k", 5_000);
        let order = |h: &Hash| h.iter().map(|(f, _)| f.to_vec()).collect::<Vec<_>>();
        let want = order(&h);
        assert_eq!(want, [&b"k"[..], b"f", b"m", b"g"]);
        let mut out = Vec::new();
        let ty = encode(&Value::Hash(h), false, 12, &mut out);
        let (back, _) = decode(ty, &mut Reader::new(&out), &limits()).unwrap();
        let Value::Hash(b) = back else { panic!() };
        assert_eq!(order(&b), want);
    }

    #[test]
    fn set_member_ttls_round_trip_through_their_record() {
        let mut s = Set::new_intset();
        for m in ["1", "2", "a"] {
            s.add(m.as_bytes(), crate::types::set::SetLimits::DEFAULT);
        }
        assert!(set_member_ttls(&s).is_none(), "no TTL, no record");
        s.set_expire(b"2", 5_000);
        s.set_expire(b"a", 7_000);
        let record = set_member_ttls(&s).unwrap();
        let v = Value::Set(s);
        let mut out = Vec::new();
        let ty = encode(&v, false, 10, &mut out);
        let (back, _) = decode(ty, &mut Reader::new(&out), &limits()).unwrap();
        let Value::Set(mut b) = back else { panic!() };
        assert_eq!(b.expire_at(b"2"), Some(NO_TTL), "the value alone has none");
        apply_set_member_ttls(&mut b, &record).unwrap();
        assert_eq!(b.expire_at(b"1"), Some(NO_TTL));
        assert_eq!(b.expire_at(b"2"), Some(5_000));
        assert_eq!(b.expire_at(b"a"), Some(7_000));
        assert_eq!(b.min_deadline(), Some(5_000));
        // A truncated record is refused, not half applied past its end.
        assert!(apply_set_member_ttls(&mut b, &record[..record.len() - 3]).is_err());
    }

    /// A one-node stream (RDB type 19) whose node is `lp`, claiming `len`
    /// entries, with `groups` appended as they are.
    fn stream_payload(lp: &[u8], len: u64, groups: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        put_len(&mut out, 1);
        put_string(&mut out, &raw_id(StreamId::new(5, 0)), false);
        put_string(&mut out, lp, false);
        put_len(&mut out, len);
        for v in [5, 0, 5, 0, 0, 0, len] {
            put_len(&mut out, v);
        }
        out.extend_from_slice(groups);
        out
    }

    /// A stream node: master entry (1 live, 0 deleted, field "f"), one
    /// entry with the master's fields and `lp_count`, then `extra`.
    fn node(lp_count: i64, live: i64, extra: &[i64]) -> Vec<u8> {
        let mut w = ListpackWriter::default();
        for v in [live, 0, 1] {
            w.push_int(v);
        }
        w.push(b"f");
        for v in [0, 2, 0, 0] {
            w.push_int(v);
        }
        w.push(b"v");
        w.push_int(lp_count);
        for &v in extra {
            w.push_int(v);
        }
        w.finish_blob()
    }

    fn decode_err(ty: u8, payload: &[u8]) -> RdbError {
        match decode(ty, &mut Reader::new(payload), &limits()) {
            Ok(_) => panic!("type {ty} payload accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn stream_nodes_are_checked_as_redis_deep_check_does() {
        let groups = [0u8];
        let ok = stream_payload(&node(4, 1, &[]), 1, &groups);
        assert!(decode(TYPE_STREAM_LISTPACKS_2, &mut Reader::new(&ok), &limits()).is_ok());
        let line = report::stream_listpack().1;
        for (what, lp) in [
            ("a wrong lp-count", node(5, 1, &[])),
            ("more entries claimed than held", node(4, 2, &[])),
            ("elements after the last entry", node(4, 1, &[7])),
        ] {
            let e = decode_err(TYPE_STREAM_LISTPACKS_2, &stream_payload(&lp, 1, &groups));
            assert_eq!(e.1, line, "{what}: {e:?}");
            assert_eq!(e.0, "Stream listpack integrity check failed.");
        }
    }

    #[test]
    fn duplicate_stream_consumers_are_refused() {
        // One group "g", an empty PEL, consumer "a" twice.
        let mut groups = Vec::new();
        put_len(&mut groups, 1);
        put_string(&mut groups, b"g", false);
        put_id(&mut groups, StreamId::new(5, 0));
        put_len(&mut groups, 1);
        put_len(&mut groups, 0);
        put_len(&mut groups, 2);
        for _ in 0..2 {
            put_string(&mut groups, b"a", false);
            put_ms(&mut groups, 1);
            put_len(&mut groups, 0);
        }
        let e = decode_err(
            TYPE_STREAM_LISTPACKS_2,
            &stream_payload(&node(4, 1, &[]), 1, &groups),
        );
        assert_eq!(e, report::stream_consumer_dup());
    }

    #[test]
    fn quicklist_nodes_of_unknown_containers_or_no_bytes_are_refused() {
        let mut lp = ListpackWriter::default();
        lp.push(b"x");
        let mut bad = Vec::new();
        put_len(&mut bad, 1);
        put_len(&mut bad, 3);
        put_string(&mut bad, &lp.finish_blob(), false);
        assert_eq!(decode_err(TYPE_LIST_QUICKLIST_2, &bad), report::quicklist());
        // A plain node of 0 bytes (the unit's "encoded_len is 0").
        let e = decode_err(TYPE_LIST_QUICKLIST_2, &[1, 1, 0]);
        assert_eq!(e.1, 0, "Redis reports none: {e:?}");
    }

    #[test]
    fn duplicates_get_redis_reports() {
        let mut h = Vec::new();
        put_len(&mut h, 2);
        for f in [b"a", b"a"] {
            put_string(&mut h, f, false);
            put_string(&mut h, b"v", false);
        }
        assert_eq!(decode_err(TYPE_HASH, &h), report::hash_dup_small());
        let mut lp = ListpackWriter::default();
        for e in [b"a", b"1", b"a", b"2"] {
            lp.push(e);
        }
        let mut out = Vec::new();
        put_string(&mut out, &lp.finish_blob(), false);
        assert_eq!(
            decode_err(TYPE_HASH_LISTPACK, &out),
            report::hash_listpack()
        );
        assert_eq!(
            decode_err(TYPE_ZSET_LISTPACK, &out),
            report::zset_listpack()
        );
        let mut z = Vec::new();
        put_len(&mut z, 1);
        put_string(&mut z, b"m", false);
        put_double(&mut z, f64::NAN);
        assert_eq!(decode_err(TYPE_ZSET_2, &z), report::zset_nan());
    }

    /// Mutated payloads never panic, and never allocate past their size
    /// (a failure would show as an abort or a hang here).
    #[test]
    fn mutated_values_fail_cleanly() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        for v in samples() {
            let mut out = Vec::new();
            let ty = encode(&v, true, 12, &mut out);
            for _ in 0..300 {
                let mut m = out.clone();
                for _ in 0..rng.random_range(1..4) {
                    let i = rng.random_range(0..m.len());
                    m[i] = rng.random();
                }
                if rng.random_bool(0.2) {
                    m.truncate(rng.random_range(0..m.len()));
                }
                let t = if rng.random_bool(0.1) {
                    rng.random_range(0..30)
                } else {
                    ty
                };
                let _ = decode(t, &mut Reader::new(&m), &limits());
            }
        }
    }
}
