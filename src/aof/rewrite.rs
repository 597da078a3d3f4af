//! An AOF base in the AOF format (`aof-use-rdb-preamble no`): the dataset
//! as the commands that rebuild it, as Redis's `rewriteAppendOnlyFileRio`
//! writes them — `FUNCTION LOAD` per library, then per non-empty database
//! `SELECT`, and per key `SET`, `RPUSH`/`SADD`/`ZADD`/`HMSET` in batches of
//! 64 items, a stream's `XADD`s, `XSETID`, `XGROUP CREATE`, `XCLAIM`s and
//! `XGROUP CREATECONSUMER`s, then `PEXPIREAT`.
//!
//! zwindow's own state follows the same rule: window rules as `ZWINDOW
//! SET` before the databases (where an RDB base carries them), and member
//! TTLs of sorted sets and sets as `ZPEXPIREAT`/`SPEXPIREAT` after their
//! key, one per member, as Redis writes a hash's field TTLs
//! (`HPEXPIREAT … FIELDS 1 f` after each field's own `HMSET`).

use std::io::Write;

use crate::keyspace::Value;
use crate::protocol::encode_command as encode;
use crate::rdb::file::{Extras, SaveOptions, Source};
use crate::types::stream::{Stream, StreamId};

/// Redis's `AOF_REWRITE_ITEMS_PER_CMD`.
const ITEMS_PER_CMD: usize = 64;

/// Writes the whole dataset of `src` as commands to `w`, starting with a
/// `#TS:` annotation of `ts_secs` when given (`aof-timestamp-enabled`).
pub(crate) fn write(
    mut w: impl Write,
    src: &dyn Source,
    extras: &Extras,
    opts: SaveOptions<'_>,
    ts_secs: Option<u64>,
) -> std::io::Result<()> {
    let mut b = Vec::with_capacity(1 << 16);
    if let Some(secs) = ts_secs {
        b.extend_from_slice(format!("#TS:{secs}\r\n").as_bytes());
    }
    for code in &extras.functions {
        encode(&mut b, &[&b"FUNCTION"[..], b"LOAD", code]);
    }
    for r in &extras.rules {
        let duration = format!("{}ms", r.duration_ms);
        let unit = r.unit.name().to_uppercase();
        let mut argv: Vec<&[u8]> = vec![
            b"ZWINDOW",
            b"SET",
            &r.pattern,
            duration.as_bytes(),
            unit.as_bytes(),
        ];
        if let Some(dest) = &r.moveto {
            argv.extend([&b"MOVETO"[..], dest]);
        }
        encode(&mut b, &argv);
    }
    w.write_all(&b)?;
    for db in 0..src.databases() {
        if src.sizes(db).0 == 0 {
            continue;
        }
        b.clear();
        encode(&mut b, &[&b"SELECT"[..], db.to_string().as_bytes()]);
        w.write_all(&b)?;
        crate::rdb::file::write_keys(
            src,
            db,
            &opts,
            |b| w.write_all(b),
            |b, key, v, expire_at| {
                write_key(b, key, v);
                if expire_at != 0 {
                    encode(
                        b,
                        &[&b"PEXPIREAT"[..], key, expire_at.to_string().as_bytes()],
                    );
                }
            },
        )?;
    }
    w.flush()
}

/// One key's value as commands.
fn write_key(b: &mut Vec<u8>, key: &[u8], v: &Value) {
    match v {
        Value::Str(s) => encode(b, &[&b"SET"[..], key, &s.data]),
        Value::List(l) => batches(b, b"RPUSH", key, 1, l.iter().map(|e| [e.to_vec()])),
        Value::Set(s) => {
            batches(
                b,
                b"SADD",
                key,
                1,
                s.iter().map(|m| [m.with_bytes(<[u8]>::to_vec)]),
            );
            if s.has_ttls() {
                for m in s.iter() {
                    m.with_bytes(|m| {
                        if let Some(at) = s.expire_at(m).filter(|&a| a != NO_TTL) {
                            member_ttl(b, b"SPEXPIREAT", b"MEMBERS", key, at, m);
                        }
                    });
                }
            }
        }
        Value::ZSet(z) => {
            let mut scratch = Vec::new();
            batches(
                b,
                b"ZADD",
                key,
                2,
                z.iter()
                    .map(|(m, s)| [score(s), m.joined(&mut scratch).to_vec()]),
            );
            if z.has_ttls() {
                for (m, _) in z.iter() {
                    let m = m.joined(&mut scratch);
                    if let Some(at) = z
                        .expire_at(m)
                        .filter(|&a| a != crate::types::zset::ttl::NO_TTL)
                    {
                        member_ttl(b, b"ZPEXPIREAT", b"MEMBERS", key, at, m);
                    }
                }
            }
        }
        Value::Hash(h) => {
            if h.min_deadline().is_none() {
                batches(
                    b,
                    b"HMSET",
                    key,
                    2,
                    h.iter().map(|(f, v)| [f.to_vec(), v.to_vec()]),
                );
            } else {
                // Redis's form for a hash with field TTLs: each field on
                // its own, its TTL right after it.
                for (f, v) in h.iter() {
                    encode(b, &[&b"HMSET"[..], key, f, v]);
                    if let Some(at) = h.expire_at(f).filter(|&a| a != NO_TTL) {
                        member_ttl(b, b"HPEXPIREAT", b"FIELDS", key, at, f);
                    }
                }
            }
        }
        Value::Stream(s) => write_stream(b, key, s),
    }
}

use crate::types::hash::NO_TTL;

/// `name key item…` commands of at most [`ITEMS_PER_CMD`] items, each item
/// `width` arguments (a sorted set's score and member).
fn batches<const N: usize>(
    b: &mut Vec<u8>,
    name: &[u8],
    key: &[u8],
    width: usize,
    items: impl Iterator<Item = [Vec<u8>; N]>,
) {
    debug_assert_eq!(width, N);
    let mut argv: Vec<Vec<u8>> = Vec::with_capacity(2 + ITEMS_PER_CMD * N);
    for item in items {
        if argv.is_empty() {
            argv.push(name.to_vec());
            argv.push(key.to_vec());
        }
        argv.extend(item);
        if argv.len() == 2 + ITEMS_PER_CMD * N {
            encode(b, &argv);
            argv.clear();
        }
    }
    if !argv.is_empty() {
        encode(b, &argv);
    }
}

/// `name key at kw 1 member`: one member's or field's TTL.
fn member_ttl(b: &mut Vec<u8>, name: &[u8], kw: &[u8], key: &[u8], at: u64, member: &[u8]) {
    encode(b, &[name, key, at.to_string().as_bytes(), kw, b"1", member]);
}

/// A score as Redis's `rioWriteBulkDouble` writes it (`fpconv_dtoa`).
fn score(s: f64) -> Vec<u8> {
    let mut buf = [0u8; 32];
    let n = crate::protocol::fpconv::fpconv_dtoa(s, &mut buf);
    buf[..n].to_vec()
}

/// Redis's `rewriteStreamObject`.
fn write_stream(b: &mut Vec<u8>, key: &[u8], s: &Stream) {
    let id = |i: StreamId| i.to_string().into_bytes();
    if !s.is_empty() {
        s.range(StreamId::MIN, StreamId::MAX, false, |entry, fields| {
            let mut argv: Vec<Vec<u8>> = Vec::with_capacity(3 + fields.len());
            argv.extend([b"XADD".to_vec(), key.to_vec(), id(entry)]);
            fields.for_each(|e| argv.push(e.to_vec()));
            encode(b, &argv);
            true
        });
    } else {
        // An empty stream: XADD MAXLEN 0 makes the key with no entry.
        encode(b, &[&b"XADD"[..], key, b"MAXLEN", b"0", b"0-1", b"x", b"y"]);
    }
    encode(
        b,
        &[
            &b"XSETID"[..],
            key,
            &id(s.last_id),
            b"ENTRIESADDED",
            s.entries_added.to_string().as_bytes(),
            b"MAXDELETEDID",
            &id(s.max_deleted_id),
        ],
    );
    for (name, g) in &s.groups {
        encode(
            b,
            &[
                &b"XGROUP"[..],
                b"CREATE",
                key,
                name,
                &id(g.last_id),
                b"ENTRIESREAD",
                g.entries_read.to_string().as_bytes(),
            ],
        );
        for (cname, c) in &g.consumers {
            if c.pel.is_empty() {
                encode(b, &[&b"XGROUP"[..], b"CREATECONSUMER", key, name, cname]);
                continue;
            }
            for pending in &c.pel {
                let Some(nack) = g.pel.get(pending) else {
                    continue;
                };
                encode(
                    b,
                    &[
                        &b"XCLAIM"[..],
                        key,
                        name,
                        cname,
                        b"0",
                        &id(*pending),
                        b"TIME",
                        nack.delivery_time.to_string().as_bytes(),
                        b"RETRYCOUNT",
                        nack.delivery_count.to_string().as_bytes(),
                        b"JUSTID",
                        b"FORCE",
                    ],
                );
            }
        }
    }
}
