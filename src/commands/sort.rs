//! SORT and SORT_RO (Redis's `sort.c`): sort a list, set or sorted set
//! numerically or with ALPHA, by the elements or by other keys (`BY`
//! pattern, `key->field` for hash fields), fetch other keys per element
//! (`GET`), and return or STORE the result as a list.
//!
//! ```text
//! SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC | DESC] [ALPHA] [STORE destination]
//! ```
//!
//! BY and GET patterns read keys that are not arguments, so both commands
//! are declared `Keys::All` and run holding every shard; COMMAND GETKEYS
//! still reports Redis's key specs (from `meta.rs`).
//!
//! Orders that clients can observe follow Redis 7.0: a BY pattern without
//! `*` skips sorting (lists and sorted sets keep their native order, the
//! LIMIT taken directly from it); a set is then sorted ALPHA anyway when
//! the result is stored or the caller is a script, so replicas and
//! scripts see one order. Ties are broken as Redis does (numeric ties by
//! the elements' bytes; ALPHA BY ties keep the input order, as glibc's
//! stable `qsort` does).

use std::cmp::Ordering;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::keyspace::slots::{key_hash_slot, pattern_hash_slot};
use crate::keyspace::{Entry, Keyspace, Value, notify};
use crate::types::list::{End, List};
use crate::types::zset::score::parse_sort_weight;
use crate::util::eq_ic;

const G: &str = "generic";
const COMPLEXITY: &str = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N).";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("sort", -2, WRITE | DENYOOM, Keys::All, &(sort as Handler))
        .doc(G, "1.0.0", COMPLEXITY, "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.")
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]"),
    Command::new("sort_ro", -2, READONLY, Keys::All, &(sort as Handler))
        .doc(G, "7.0.0", COMPLEXITY, "Returns the sorted elements of a list, a set, or a sorted set.")
        .syntax("key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]"),
];

/// The parsed options.
struct Opts<'a> {
    desc: bool,
    alpha: bool,
    limit: Option<(i64, i64)>,
    by: Option<&'a [u8]>,
    /// BY a pattern without `*`: no sorting at all.
    dontsort: bool,
    gets: Vec<&'a [u8]>,
    store: Option<&'a [u8]>,
}

/// One element being sorted and what it sorts by.
struct Item {
    obj: Vec<u8>,
    score: f64,
    /// ALPHA BY: the looked-up value (None when missing sorts first).
    cmp: Option<Vec<u8>>,
}

/// The text C string functions see: up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or_default()
}

fn parse_opts<'a>(ctx: &Ctx<'a, '_>) -> Result<Opts<'a>, Error> {
    let args = ctx.args;
    let readonly = ctx.cmd.name == "sort_ro";
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit: None,
        by: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    // Patterns read keys no ACL check saw: only a user who may read every
    // key may use them (a connection without a user, the AOF's, may).
    let cluster = ctx.shared.cluster.is_some();
    let full_read = ctx
        .client
        .user
        .as_ref()
        .is_none_or(|u| u.may_read_any_key(ctx.cmd, &args));
    let mut j = 2;
    while j < args.len() {
        let left = args.len() - j - 1;
        let a = args.get(j);
        if eq_ic(a, "asc") {
            o.desc = false;
        } else if eq_ic(a, "desc") {
            o.desc = true;
        } else if eq_ic(a, "alpha") {
            o.alpha = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            o.limit = Some((int_arg(args.get(j + 1))?, int_arg(args.get(j + 2))?));
            j += 2;
        } else if !readonly && eq_ic(a, "store") && left >= 1 {
            o.store = Some(args.get(j + 1));
            j += 1;
        } else if eq_ic(a, "by") && left >= 1 {
            let p = args.get(j + 1);
            o.by = Some(p);
            o.dontsort = !c_str(p).contains(&b'*');
            // In a cluster its keys must share the sorted key's slot
            // (Redis 8.0; 7.0 refused any pattern).
            if !o.dontsort && cluster && !same_slot(p, args.get(1)) {
                return Err(Error::Static(
                    "ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.",
                ));
            }
            if !o.dontsort && !cluster {
                note_incompatible_pattern(ctx.shared, p, args.get(1));
            }
            if !o.dontsort && !full_read {
                return Err(Error::Static(
                    "ERR BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            j += 1;
        } else if eq_ic(a, "get") && left >= 1 {
            // `#` is the element itself.
            let p = args.get(j + 1);
            if cluster && c_str(p) != b"#" && !same_slot(p, args.get(1)) {
                return Err(Error::Static(
                    "ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.",
                ));
            }
            if !cluster && c_str(p) != b"#" {
                note_incompatible_pattern(ctx.shared, p, args.get(1));
            }
            if !full_read {
                return Err(Error::Static(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            o.gets.push(args.get(j + 1));
            j += 1;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// Whether every key `pattern` forms hashes to `key`'s slot.
fn same_slot(pattern: &[u8], key: &[u8]) -> bool {
    pattern_hash_slot(pattern) == Some(key_hash_slot(key))
}

/// A standalone server counts, in the sampled share of SORTs, a BY or
/// GET pattern whose keys may be in another slot than the sorted key's:
/// cluster mode would refuse it (Redis 8.0's `cluster_incompatible_ops`).
fn note_incompatible_pattern(shared: &super::Services, pattern: &[u8], key: &[u8]) {
    if crate::stats::compat_sampled(shared.config.cluster_compat_sample_ratio())
        && !same_slot(pattern, key)
    {
        shared
            .stats
            .cluster_incompatible_ops
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Redis's `lookupKeyByPattern`: `#` is the element itself; otherwise the
/// first `*` is replaced by the element, and a `->field` after it (with a
/// field name) reads a hash field. Missing keys, wrong types and patterns
/// without `*` give None.
fn lookup_by_pattern(ks: &mut Keyspace<'_>, pattern: &[u8], elem: &[u8]) -> Option<Vec<u8>> {
    if c_str(pattern) == b"#" {
        return Some(elem.to_vec());
    }
    let cpat = c_str(pattern);
    let star = cpat.iter().position(|&c| c == b'*')?;
    let field_at = cpat[star + 1..]
        .windows(2)
        .position(|w| w == b"->")
        .map(|p| star + 1 + p)
        .filter(|&f| f + 2 < cpat.len());
    let key_end = field_at.unwrap_or(pattern.len());
    let mut key = Vec::with_capacity(key_end + elem.len());
    key.extend_from_slice(&pattern[..star]);
    key.extend_from_slice(elem);
    key.extend_from_slice(&pattern[star + 1..key_end]);
    match (ks.get_read(&key), field_at) {
        (
            Some(Entry {
                value: Value::Str(s),
                ..
            }),
            None,
        ) => Some(s.data.to_vec()),
        (
            Some(Entry {
                value: Value::Hash(h),
                ..
            }),
            Some(f),
        ) => h.get(&pattern[f + 2..]).map(<[u8]>::to_vec),
        _ => None,
    }
}

/// The elements to sort, in the source's native order; for a list or
/// sorted set that skips sorting, only the LIMIT range (`start..=end`,
/// already clamped), read from the DESC end when asked.
fn load(value: &Value, direct: Option<(usize, usize, bool)>) -> Vec<Vec<u8>> {
    match value {
        Value::List(l) => match direct {
            Some((start, end, desc)) => list_range(l, start, end, desc),
            None => l.iter().map(<[u8]>::to_vec).collect(),
        },
        Value::ZSet(z) => match direct {
            Some((start, end, desc)) => z
                .range_by_rank(start, end, desc)
                .map(|(m, _)| m.to_vec())
                .collect(),
            None => z.iter().map(|(m, _)| m.to_vec()).collect(),
        },
        Value::Set(s) => s.iter().map(|m| m.to_bytes().into_owned()).collect(),
        _ => Vec::new(),
    }
}

fn list_range(l: &List, start: usize, end: usize, desc: bool) -> Vec<Vec<u8>> {
    let n = end + 1 - start;
    if desc {
        l.iter()
            .rev()
            .skip(start)
            .take(n)
            .map(<[u8]>::to_vec)
            .collect()
    } else {
        l.iter().skip(start).take(n).map(<[u8]>::to_vec).collect()
    }
}

/// Redis's `sortCompare`, before DESC reverses it.
fn compare(a: &Item, b: &Item, o: &Opts) -> Ordering {
    if !o.alpha {
        return a
            .score
            .partial_cmp(&b.score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.obj.cmp(&b.obj));
    }
    // strcoll in `locale-collate`'s locale, up to a NUL; a stored result
    // compares whole strings byte by byte (`compareStringObjects`).
    let text = |x: &[u8], y: &[u8]| {
        if o.store.is_some() {
            x.cmp(y)
        } else {
            crate::util::strcoll(x, y)
        }
    };
    if o.by.is_some() {
        match (&a.cmp, &b.cmp) {
            (Some(x), Some(y)) => text(x, y),
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
        }
    } else {
        text(&a.obj, &b.obj)
    }
}

fn sort(ctx: &mut Ctx) -> CmdResult {
    let mut o = parse_opts(ctx)?;
    let key = ctx.args.get(1);
    let source = match ctx.ks.get_read(key) {
        None => None,
        Some(e) if matches!(e.value, Value::List(_) | Value::Set(_) | Value::ZSet(_)) => {
            Some(&e.value)
        }
        Some(_) => return Err(Error::WrongType),
    };
    let is_set = matches!(source, Some(Value::Set(_)));
    if o.dontsort && is_set && (o.store.is_some() || ctx.client.in_script) {
        // A set's native order is arbitrary: give stores and scripts one.
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = match source {
        Some(Value::List(l)) => l.len(),
        Some(Value::Set(s)) => s.len(),
        Some(Value::ZSet(z)) => z.len(),
        _ => 0,
    } as i64;

    // LIMIT, as Redis clamps it (an empty result is start > end).
    let (limit_start, limit_count) = o.limit.unwrap_or((0, -1));
    let mut start = limit_start.max(0);
    let mut end = if limit_count < 0 {
        len - 1
    } else {
        start.saturating_add(limit_count - 1)
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);

    // A list or sorted set that is not sorted yields the LIMIT range
    // straight from its native order (reversed for DESC).
    let direct = o.dontsort && !is_set;
    let objs = match source {
        None => Vec::new(),
        Some(_) if direct && end < start => Vec::new(),
        Some(v) if direct => {
            let got = load(v, Some((start as usize, end as usize, o.desc)));
            end -= start;
            start = 0;
            got
        }
        Some(v) => load(v, None),
    };
    let mut items: Vec<Item> = objs
        .into_iter()
        .map(|obj| Item {
            obj,
            score: 0.0,
            cmp: None,
        })
        .collect();

    if !o.dontsort {
        let mut bad_score = false;
        for it in &mut items {
            let by = match o.by {
                Some(p) => match lookup_by_pattern(ctx.ks, p, &it.obj) {
                    Some(v) => Some(v),
                    None => continue,
                },
                None => None,
            };
            if o.alpha {
                it.cmp = by;
            } else {
                match parse_sort_weight(by.as_deref().unwrap_or(&it.obj)) {
                    Some(s) => it.score = s,
                    None => bad_score = true,
                }
            }
        }
        if bad_score {
            return Err(Error::Static(
                "ERR One or more scores can't be converted into double",
            ));
        }
        items.sort_by(|a, b| {
            let c = compare(a, b, &o);
            if o.desc { c.reverse() } else { c }
        });
    }

    let picked = if end >= start {
        items.get(start as usize..=end as usize).unwrap_or_default()
    } else {
        &[]
    };
    let per = o.gets.len().max(1);
    let outlen = picked.len() * per;
    match o.store {
        None => {
            ctx.out.array(outlen);
            for it in picked {
                if o.gets.is_empty() {
                    ctx.out.bulk(&it.obj);
                }
                for p in &o.gets {
                    match lookup_by_pattern(ctx.ks, p, &it.obj) {
                        Some(v) => ctx.out.bulk(&v),
                        None => ctx.out.null(),
                    }
                }
            }
        }
        Some(dest) => {
            // Redis builds a quicklist and settles its encoding at the end.
            let mut list = List::new_quicklist(ctx.shared.config.list_max_listpack_size());
            for it in picked {
                if o.gets.is_empty() {
                    list.push(End::Right, &it.obj);
                }
                for p in &o.gets {
                    let v = lookup_by_pattern(ctx.ks, p, &it.obj).unwrap_or_default();
                    list.push(End::Right, &v);
                }
            }
            if outlen > 0 {
                list.settle(ctx.shared.config.list_max_listpack_size());
                let existed = ctx.ks.exists(dest);
                ctx.ks.set(dest, Value::List(Box::new(list)));
                // One change per element stored.
                ctx.ks
                    .signal_by(dest, notify::LIST, "sortstore", outlen as u64);
                // Redis's dbAdd wakes waiters on a new list; an overwrite
                // (dbOverwrite in 7.0) does not.
                if !existed {
                    ctx.ks.signal_ready(dest);
                }
            } else if ctx.ks.remove(dest).is_some() {
                ctx.ks.signal(dest, notify::GENERIC, "del");
            }
            ctx.out.int(outlen as i64);
        }
    }
    Ok(Done)
}
