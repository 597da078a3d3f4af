//! Sorted-set commands: the whole Redis 7.0 Z* family, blocking pops
//! included. The data structure lives in `crate::types::zset`; this file owns
//! argument grammar, error texts, reply shapes, key lifecycle (empty sets
//! cease to exist) and keyspace events, each mirroring `t_zset.c`.
//!
//! Replies are written straight from the set's iterators: range replies know
//! their length before the first element (the range iterators are exact), so
//! no element is copied or allocated on the way to the socket. The ZRANGE
//! family is one parser (`zrange_generic`) parameterised like Redis's
//! `zrangeGenericCommand`, and the ZUNION/ZINTER/ZDIFF family is one
//! function over inputs read through [`read_input`], the single place that
//! knows which value types may feed it.

use std::time::Duration;

use super::flags::*;
use super::{
    Block, CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, count_arg, int_arg,
    parse_timeout,
};
use crate::keyspace::{Entry, HashedKey, Keyspace, Value, notify};
use crate::protocol::Reply;
use crate::protocol::reply::{format_double, format_double_g17};
use crate::types::zset::{
    AddFlags, AddOutcome, LexRange, Limits, Member, NotNan, RangeIter, ScoreRange, ZSet,
    parse_lex_bound, parse_score, parse_score_bound,
};
use crate::util::{eq_ic, glob_match};

const G: &str = "sorted-set";

const NUMKEYS_STORE: Keys = Keys::NumKeys {
    count_at: 2,
    dest: Some(1),
};
const NUMKEYS_1: Keys = Keys::NumKeys {
    count_at: 1,
    dest: None,
};
const NUMKEYS_2: Keys = Keys::NumKeys {
    count_at: 2,
    dest: None,
};
const ALL_BUT_LAST: Keys = Keys::Range {
    first: 1,
    last: -2,
    step: 1,
};

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("zadd", -4, WRITE | DENYOOM | FAST, Keys::ONE, &(zadd as Handler))
        .doc(G, "1.2.0", "O(log(N)) for each item added, where N is the number of elements in the sorted set.", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.")
        .syntax("key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]"),
    Command::new("zincrby", 4, WRITE | DENYOOM | FAST, Keys::ONE, &(zincrby as Handler))
        .doc(G, "1.2.0", "O(log(N)) where N is the number of elements in the sorted set.", "Increments the score of a member in a sorted set.")
        .syntax("key increment member"),
    Command::new("zrem", -3, WRITE | FAST, Keys::ONE, &(zrem as Handler))
        .doc(G, "1.2.0", "O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.")
        .syntax("key member [member ...]"),
    Command::new("zcard", 2, READONLY | FAST, Keys::ONE, &(zcard as Handler))
        .doc(G, "1.2.0", "O(1)", "Returns the number of members in a sorted set.")
        .syntax("key"),
    Command::new("zscore", 3, READONLY | FAST, Keys::ONE, &(zscore as Handler))
        .doc(G, "1.2.0", "O(1)", "Returns the score of a member in a sorted set.")
        .syntax("key member"),
    Command::new("zmscore", -3, READONLY | FAST, Keys::ONE, &(zmscore as Handler))
        .doc(G, "6.2.0", "O(N) where N is the number of members being requested.", "Returns the score of one or more members in a sorted set.")
        .syntax("key member [member ...]"),
    Command::new("zcount", 4, READONLY | FAST, Keys::ONE, &(zcount as Handler))
        .doc(G, "2.0.0", "O(log(N)) with N being the number of elements in the sorted set.", "Returns the count of members in a sorted set that have scores within a range.")
        .syntax("key min max"),
    Command::new("zlexcount", 4, READONLY | FAST, Keys::ONE, &(zlexcount as Handler))
        .doc(G, "2.8.9", "O(log(N)) with N being the number of elements in the sorted set.", "Returns the number of members in a sorted set within a lexicographical range.")
        .syntax("key min max"),
    Command::new("zrank", -3, READONLY | FAST, Keys::ONE, &(zrank as Handler))
        .doc(G, "2.0.0", "O(log(N))", "Returns the index of a member in a sorted set ordered by ascending scores.")
        .syntax("key member [WITHSCORE]"),
    Command::new("zrevrank", -3, READONLY | FAST, Keys::ONE, &(zrank as Handler))
        .doc(G, "2.0.0", "O(log(N))", "Returns the index of a member in a sorted set ordered by descending scores.")
        .syntax("key member [WITHSCORE]"),
    Command::new("zrange", -4, READONLY, Keys::ONE, &(zrange as Handler))
        .doc(G, "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.", "Returns members in a sorted set within a range of indexes.")
        .syntax("key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]"),
    Command::new("zrangestore", -5, WRITE | DENYOOM, Keys::TWO, &(zrangestore as Handler))
        .doc(G, "6.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.", "Stores a range of members from sorted set in a key.")
        .syntax("dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]"),
    Command::new("zrevrange", -4, READONLY, Keys::ONE, &(zrevrange as Handler))
        .doc(G, "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned.", "Returns members in a sorted set within a range of indexes in reverse order.")
        .syntax("key start stop [WITHSCORES]"),
    Command::new("zrangebyscore", -4, READONLY, Keys::ONE, &(zrangebyscore as Handler))
        .doc(G, "1.0.5", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.", "Returns members in a sorted set within a range of scores.")
        .syntax("key min max [WITHSCORES] [LIMIT offset count]"),
    Command::new("zrevrangebyscore", -4, READONLY, Keys::ONE, &(zrevrangebyscore as Handler))
        .doc(G, "2.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.", "Returns members in a sorted set within a range of scores in reverse order.")
        .syntax("key max min [WITHSCORES] [LIMIT offset count]"),
    Command::new("zrangebylex", -4, READONLY, Keys::ONE, &(zrangebylex as Handler))
        .doc(G, "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.", "Returns members in a sorted set within a lexicographical range.")
        .syntax("key min max [LIMIT offset count]"),
    Command::new("zrevrangebylex", -4, READONLY, Keys::ONE, &(zrevrangebylex as Handler))
        .doc(G, "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned.", "Returns members in a sorted set within a lexicographical range in reverse order.")
        .syntax("key max min [LIMIT offset count]"),
    Command::new("zremrangebyscore", 4, WRITE, Keys::ONE, &(zremrangebyscore as Handler))
        .doc(G, "1.2.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.")
        .syntax("key min max"),
    Command::new("zremrangebyrank", 4, WRITE, Keys::ONE, &(zremrangebyrank as Handler))
        .doc(G, "2.0.0", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.")
        .syntax("key start stop"),
    Command::new("zremrangebylex", 4, WRITE, Keys::ONE, &(zremrangebylex as Handler))
        .doc(G, "2.8.9", "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation.", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.")
        .syntax("key min max"),
    Command::new("zpopmin", -2, WRITE | FAST, Keys::ONE, &(zpopmin as Handler))
        .doc(G, "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.")
        .syntax("key [count]"),
    Command::new("zpopmax", -2, WRITE | FAST, Keys::ONE, &(zpopmax as Handler))
        .doc(G, "5.0.0", "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped.", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.")
        .syntax("key [count]"),
    Command::new("bzpopmin", -3, WRITE | BLOCKING | FAST, ALL_BUT_LAST, &(bzpopmin as Handler))
        .doc(G, "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.")
        .syntax("key [key ...] timeout"),
    Command::new("bzpopmax", -3, WRITE | BLOCKING | FAST, ALL_BUT_LAST, &(bzpopmax as Handler))
        .doc(G, "5.0.0", "O(log(N)) with N being the number of elements in the sorted set.", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise. Deletes the sorted set if the last element was popped.")
        .syntax("key [key ...] timeout"),
    Command::new("zmpop", -4, WRITE, NUMKEYS_1, &(zmpop as Handler))
        .doc(G, "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.")
        .syntax("numkeys key [key ...] MIN | MAX [COUNT count]"),
    Command::new("bzmpop", -5, WRITE | BLOCKING, NUMKEYS_2, &(bzmpop as Handler))
        .doc(G, "7.0.0", "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.")
        .syntax("timeout numkeys key [key ...] MIN | MAX [COUNT count]"),
    Command::new("zunion", -3, READONLY, NUMKEYS_1, &(zunion as Handler))
        .doc(G, "6.2.0", "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.", "Returns the union of multiple sorted sets.")
        .syntax("numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX] [WITHSCORES]"),
    Command::new("zinter", -3, READONLY, NUMKEYS_1, &(zinter as Handler))
        .doc(G, "6.2.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.", "Returns the intersect of multiple sorted sets.")
        .syntax("numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX] [WITHSCORES]"),
    Command::new("zdiff", -3, READONLY, NUMKEYS_1, &(zdiff as Handler))
        .doc(G, "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.", "Returns the difference between multiple sorted sets.")
        .syntax("numkeys key [key ...] [WITHSCORES]"),
    Command::new("zunionstore", -4, WRITE | DENYOOM, NUMKEYS_STORE, &(zunionstore as Handler))
        .doc(G, "2.0.0", "O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.", "Stores the union of multiple sorted sets in a key.")
        .syntax("destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX]"),
    Command::new("zinterstore", -4, WRITE | DENYOOM, NUMKEYS_STORE, &(zinterstore as Handler))
        .doc(G, "2.0.0", "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set.", "Stores the intersect of multiple sorted sets in a key.")
        .syntax("destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM | MIN | MAX]"),
    Command::new("zdiffstore", -4, WRITE | DENYOOM, NUMKEYS_STORE, &(zdiffstore as Handler))
        .doc(G, "6.2.0", "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set.", "Stores the difference of multiple sorted sets in a key.")
        .syntax("destination numkeys key [key ...]"),
    Command::new("zintercard", -3, READONLY, NUMKEYS_1, &(zintercard as Handler))
        .doc(G, "7.0.0", "O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.", "Returns the number of members of the intersect of multiple sorted sets.")
        .syntax("numkeys key [key ...] [LIMIT limit]"),
    Command::new("zrandmember", -2, READONLY, Keys::ONE, &(zrandmember as Handler))
        .doc(G, "6.2.0", "O(N) where N is the number of members returned", "Returns one or more random members from a sorted set.")
        .syntax("key [count [WITHSCORES]]"),
    Command::new("zscan", -3, READONLY, Keys::ONE, &(zscan as Handler))
        .doc(G, "2.8.0", "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", "Iterates over members and scores of a sorted set.")
        .syntax("key cursor [MATCH pattern] [COUNT count]"),
];

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
const MINMAX_NOT_FLOAT: &str = "ERR min or max is not a float";
const LEX_RANGE: &str = "ERR min or max not valid string range item";

// ---------------------------------------------------------------------------
// Services helpers
// ---------------------------------------------------------------------------

fn limits(ctx: &Ctx) -> Limits {
    let c = &ctx.shared.config;
    Limits {
        max_entries: c.zset_max_listpack_entries(),
        max_value: c.zset_max_listpack_value(),
    }
}

/// The sorted set at `key` for a read (counts hits/misses); `Ok(None)` if
/// the key does not exist.
fn zset_read<'k, 'n>(
    ks: &'k mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
) -> Result<Option<&'k mut ZSet>, Error> {
    as_zset(ks.get_read(key))
}

/// The sorted set at `key` for a write.
fn zset_write<'k, 'n>(
    ks: &'k mut Keyspace<'_>,
    key: impl Into<HashedKey<'n>>,
) -> Result<Option<&'k mut ZSet>, Error> {
    as_zset(ks.get(key))
}

// Other value types arrive with later families.
#[allow(unreachable_patterns)]
fn as_zset(e: Option<&mut Entry>) -> Result<Option<&mut ZSet>, Error> {
    match e {
        None => Ok(None),
        Some(Entry {
            value: Value::ZSet(z),
            ..
        }) => Ok(Some(z)),
        Some(_) => Err(Error::WrongType),
    }
}

/// After a write that left the set at `key` empty: delete the key with
/// Redis's `del` event (the command's own event was already sent).
fn delete_emptied<'k>(ks: &mut Keyspace<'_>, key: impl Into<HashedKey<'k>>) {
    let key = key.into();
    ks.remove(key);
    ks.notify(notify::GENERIC, "del", key.bytes());
}

/// Writes `n` elements as Redis's range replies do: flat `member` (or
/// `member score` pairs in RESP2), `[member, score]` pairs in RESP3.
fn write_elems<'a>(
    out: &mut Reply,
    n: usize,
    withscores: bool,
    it: impl Iterator<Item = (&'a [u8], f64)>,
) {
    elems_header(out, n, withscores);
    let mut written = 0usize;
    for (m, s) in it.take(n) {
        write_elem(out, withscores, m.into(), s);
        written += 1;
    }
    debug_assert_eq!(written, n, "range iterator shorter than announced");
}

/// [`write_elems`] for a range of a set, walked by [`RangeIter::each`].
fn write_range(out: &mut Reply, withscores: bool, it: RangeIter<'_>) {
    let n = exact_len(&it);
    elems_header(out, n, withscores);
    let mut written = 0usize;
    it.each(|m, s| {
        write_elem(out, withscores, m, s);
        written += 1;
    });
    debug_assert_eq!(written, n, "range iterator shorter than announced");
}

fn elems_header(out: &mut Reply, n: usize, withscores: bool) {
    if withscores && !out.resp3 {
        out.array(n.saturating_mul(2));
    } else {
        out.array(n);
    }
}

fn write_elem(out: &mut Reply, withscores: bool, member: Member<'_>, score: f64) {
    if withscores && out.resp3 {
        out.array(2);
    }
    bulk_member(out, member);
    if withscores {
        out.double(score);
    }
}

/// A member as a bulk string, its two parts written in place.
fn bulk_member(out: &mut Reply, m: Member<'_>) {
    let (head, tail) = m.parts();
    out.bulk_parts(head, tail);
}

/// The exact length of a range iterator (they are exact by construction).
fn exact_len<I: Iterator>(it: &I) -> usize {
    it.size_hint().1.unwrap_or(0)
}

/// `getPositiveLongFromObjectOrReply` with a custom message for both
/// failures (non-integer and negative).
fn positive(arg: &[u8], msg: &'static str) -> Result<i64, Error> {
    match crate::util::parse_i64(arg) {
        Some(n) if n >= 0 => Ok(n),
        _ => Err(Error::Static(msg)),
    }
}

/// `getRangeLongFromObjectOrReply(1, LONG_MAX, msg)`.
fn at_least_one(arg: &[u8], msg: &'static str) -> Result<i64, Error> {
    match crate::util::parse_i64(arg) {
        Some(n) if n >= 1 => Ok(n),
        _ => Err(Error::Static(msg)),
    }
}

fn score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, Error> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
        _ => Err(Error::Static(MINMAX_NOT_FLOAT)),
    }
}

fn lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, Error> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(Error::Static(LEX_RANGE)),
    }
}

/// Redis's rank sanitising (negative from the end, clamped); None when the
/// range is empty.
fn rank_span(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 {
        start.saturating_add(llen)
    } else {
        start
    };
    let mut end = if end < 0 {
        end.saturating_add(llen)
    } else {
        end
    };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

// ---------------------------------------------------------------------------
// ZADD / ZINCRBY / ZREM
// ---------------------------------------------------------------------------

fn zadd(ctx: &mut Ctx) -> CmdResult {
    zadd_generic(ctx, false)
}

fn zincrby(ctx: &mut Ctx) -> CmdResult {
    zadd_generic(ctx, true)
}

/// Redis `zaddGenericCommand`: flags, validation of every score before any
/// change, then one `add` per pair.
pub(crate) fn zadd_generic(ctx: &mut Ctx, zincrby: bool) -> CmdResult {
    let key = ctx.key(1);
    let argc = ctx.argc();
    let mut f = AddFlags::default();
    let mut ch = false;
    let mut at = 2;
    if zincrby {
        f.incr = true;
    } else {
        while at < argc {
            let a = ctx.args.get(at);
            if eq_ic(a, "nx") {
                f.nx = true;
            } else if eq_ic(a, "xx") {
                f.xx = true;
            } else if eq_ic(a, "ch") {
                ch = true;
            } else if eq_ic(a, "incr") {
                f.incr = true;
            } else if eq_ic(a, "gt") {
                f.gt = true;
            } else if eq_ic(a, "lt") {
                f.lt = true;
            } else {
                break;
            }
            at += 1;
        }
    }
    let elements = argc - at;
    if elements == 0 || !elements.is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    if f.nx && f.xx {
        return Err(Error::Static(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(Error::Static(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && elements > 2 {
        return Err(Error::Static(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    // Validate every score before touching the set (parsing again below is
    // cheaper than allocating a score vector on this hot path).
    for i in (at..argc).step_by(2) {
        parse_score(ctx.args.get(i)).ok_or(Error::NotFloat)?;
    }
    let limits = limits(ctx);
    let mut fresh: Option<ZSet> = None;
    // The encoding is chosen for all the pairs before any is added, as
    // Redis's zsetTypeCreate / zsetTypeMaybeConvert do: a skiplist keeps a
    // `-0` score, a listpack stores it as 0.
    let pairs = elements / 2;
    let z: &mut ZSet = match zset_write(ctx.ks, key)? {
        Some(z) => {
            z.reserve_hint(pairs, limits);
            z
        }
        None if f.xx => {
            if f.incr {
                ctx.out.null();
            } else {
                ctx.out.int(0);
            }
            return Ok(Done);
        }
        None => fresh.insert(ZSet::with_capacity_hint(
            pairs,
            ctx.args.get(at + 1).len(),
            limits,
        )),
    };
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut last = 0.0;
    for i in (at..argc).step_by(2) {
        // Every score was validated above; parse_score never yields NaN.
        let score = parse_score(ctx.args.get(i))
            .and_then(|s| NotNan::new(s).ok())
            .unwrap_or_default();
        match z.add(ctx.args.get(i + 1), score, f, limits) {
            Ok(AddOutcome::Added { score: stored }) => {
                added += 1;
                processed += 1;
                // A new member's score is the given one, which Redis echoes
                // as given: ZINCRBY k -0 m answers -0 (the set stores 0).
                last = if f.incr { score.into_inner() } else { stored };
            }
            Ok(AddOutcome::Updated { score, .. }) => {
                updated += 1;
                processed += 1;
                last = score;
            }
            Ok(AddOutcome::Unchanged { score }) => {
                processed += 1;
                last = score;
            }
            Ok(AddOutcome::NotPerformed) => {}
            // Only INCR can produce NaN (inf + -inf), and it has one pair.
            Err(_) => return Err(Error::Static(NAN_SCORE)),
        }
    }
    if let Some(z) = fresh.filter(|z| !z.is_empty()) {
        ctx.ks.set(key, Value::ZSet(z));
    }
    if added + updated > 0 {
        let event = if f.incr { "zincr" } else { "zadd" };
        ctx.ks
            .signal_by(key, notify::ZSET, event, (added + updated) as u64);
    }
    if added > 0 {
        ctx.ks.signal_ready(key.bytes());
    }
    if f.incr {
        if processed > 0 {
            ctx.out.double(last);
        } else {
            ctx.out.null();
        }
    } else {
        ctx.out.int(if ch { added + updated } else { added });
    }
    Ok(Done)
}

fn zrem(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let Some(z) = zset_write(ctx.ks, key)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let mut deleted = 0;
    for i in 2..ctx.args.len() {
        if z.remove(ctx.args.get(i)).is_some() {
            deleted += 1;
            if z.is_empty() {
                break;
            }
        }
    }
    let emptied = z.is_empty();
    if deleted > 0 {
        ctx.ks.signal_by(key, notify::ZSET, "zrem", deleted as u64);
        if emptied {
            delete_emptied(ctx.ks, key);
        }
    }
    ctx.out.int(deleted);
    Ok(Done)
}

// ---------------------------------------------------------------------------
// Point queries
// ---------------------------------------------------------------------------

fn zcard(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let n = zset_read(ctx.ks, key)?.map_or(0, |z| z.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn zscore(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    match zset_read(ctx.ks, key)?.and_then(|z| z.score(ctx.args.get(2))) {
        Some(s) => ctx.out.double(s),
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn zmscore(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.key(1);
    let z = zset_read(ctx.ks, key)?;
    ctx.out.array(ctx.args.len() - 2);
    for i in 2..ctx.args.len() {
        match z.as_ref().and_then(|z| z.score(ctx.args.get(i))) {
            Some(s) => ctx.out.double(s),
            None => ctx.out.null(),
        }
    }
    Ok(Done)
}

fn zcount(ctx: &mut Ctx) -> CmdResult {
    let r = score_range(ctx.args.get(2), ctx.args.get(3))?;
    let key = ctx.key(1);
    let n = zset_read(ctx.ks, key)?.map_or(0, |z| z.count_in_range(&r));
    ctx.out.int(n as i64);
    Ok(Done)
}

fn zlexcount(ctx: &mut Ctx) -> CmdResult {
    let r = lex_range(ctx.args.get(2), ctx.args.get(3))?;
    let key = ctx.key(1);
    let n = zset_read(ctx.ks, key)?.map_or(0, |z| z.lex_count(&r));
    ctx.out.int(n as i64);
    Ok(Done)
}

/// ZRANK / ZREVRANK key member [WITHSCORE] (t_zset.c
/// `zrankGenericCommand`): WITHSCORE answers [rank, score], or a null
/// array when the member is missing.
fn zrank(ctx: &mut Ctx) -> CmdResult {
    let reverse = ctx.cmd.name == "zrevrank";
    if ctx.argc() > 4 {
        return Err(Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            ctx.cmd.name
        )));
    }
    let withscore = match (ctx.argc() > 3).then(|| ctx.arg(3)) {
        None => false,
        Some(a) if eq_ic(a, "withscore") => true,
        Some(_) => return Err(Error::Syntax),
    };
    let key = ctx.key(1);
    match zset_read(ctx.ks, key)?.and_then(|z| z.rank(ctx.args.get(2), reverse)) {
        Some((r, score)) if withscore => {
            ctx.out.array(2);
            ctx.out.int(r as i64);
            ctx.out.double(score);
        }
        Some((r, _)) => ctx.out.int(r as i64),
        None if withscore => ctx.out.null_array(),
        None => ctx.out.null(),
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// The ZRANGE family
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

enum Span {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

fn zrange(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, None, None)
}

fn zrangestore(ctx: &mut Ctx) -> CmdResult {
    let dst = ctx.args.get(1);
    zrange_generic(ctx, 2, Some(dst), None, None)
}

fn zrevrange(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, Some(By::Rank), Some(true))
}

fn zrangebyscore(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, Some(By::Score), Some(false))
}

fn zrevrangebyscore(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, Some(By::Score), Some(true))
}

fn zrangebylex(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, Some(By::Lex), Some(false))
}

fn zrevrangebylex(ctx: &mut Ctx) -> CmdResult {
    zrange_generic(ctx, 1, None, Some(By::Lex), Some(true))
}

/// Redis `zrangeGenericCommand`: `src` is the source key's index, `dst`
/// makes it ZRANGESTORE, `by`/`rev` are fixed by the legacy commands and
/// left to the options (`BYSCORE`, `BYLEX`, `REV`) by ZRANGE.
fn zrange_generic(
    ctx: &mut Ctx,
    src: usize,
    dst: Option<&[u8]>,
    by: Option<By>,
    rev: Option<bool>,
) -> CmdResult {
    let argc = ctx.argc();
    let store = dst.is_some();
    let (mut by, mut rev) = (by, rev);
    let (mut withscores, mut offset, mut limit) = (false, 0i64, -1i64);
    let mut j = src + 3;
    while j < argc {
        let a = ctx.args.get(j);
        let left = argc - j - 1;
        if !store && eq_ic(a, "withscores") {
            withscores = true;
        } else if eq_ic(a, "limit") && left >= 2 {
            offset = int_arg(ctx.args.get(j + 1))?;
            limit = int_arg(ctx.args.get(j + 2))?;
            j += 2;
        } else if rev.is_none() && eq_ic(a, "rev") {
            rev = Some(true);
        } else if by.is_none() && eq_ic(a, "bylex") {
            by = Some(By::Lex);
        } else if by.is_none() && eq_ic(a, "byscore") {
            by = Some(By::Score);
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let by = by.unwrap_or(By::Rank);
    let rev = rev.unwrap_or(false);
    if limit != -1 && by == By::Rank {
        return Err(Error::Static(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && by == By::Lex {
        return Err(Error::Static(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (ctx.args.get(src + 1), ctx.args.get(src + 2));
    if rev && by != By::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let span = match by {
        By::Rank => Span::Rank(int_arg(lo)?, int_arg(hi)?),
        By::Score => Span::Score(score_range(lo, hi)?),
        By::Lex => Span::Lex(lex_range(lo, hi)?),
    };
    // A negative limit is none.
    let limit = usize::try_from(limit).ok();
    let key = ctx.args.get(src);
    let limits = limits(ctx);
    let Some(z) = zset_read(ctx.ks, key)? else {
        match dst {
            Some(dst) => store_result(ctx, dst, None, "zrangestore"),
            None => ctx.out.array(0),
        }
        return Ok(Done);
    };
    // A negative offset walks off the end of a listpack in Redis 8.0, and
    // counts back from the end of the range in a skiplist
    // (`zslNthInRange`: -1 is the range's last element in range order).
    let offset = match usize::try_from(offset) {
        Ok(off) => Some(off),
        Err(_) if z.encoding_name() == "skiplist" => {
            let in_range = match &span {
                Span::Score(r) => z.count_in_range(r),
                Span::Lex(r) => z.lex_count(r),
                Span::Rank(..) => 0,
            };
            usize::try_from(offset.unsigned_abs())
                .ok()
                .and_then(|k| in_range.checked_sub(k))
        }
        Err(_) => None,
    };
    let Some(dst) = dst else {
        let out = &mut *ctx.out;
        match span {
            Span::Rank(start, end) => match rank_span(start, end, z.len()) {
                Some((s, e)) => {
                    write_range(out, withscores, z.range_by_rank(s, e, rev));
                }
                None => out.array(0),
            },
            Span::Score(r) => match offset {
                Some(off) => {
                    write_range(out, withscores, z.range_by_score(&r, rev, off, limit));
                }
                None => out.array(0),
            },
            Span::Lex(r) => match offset {
                Some(off) => {
                    write_range(out, false, z.range_by_lex(&r, rev, off, limit));
                }
                None => out.array(0),
            },
        }
        return Ok(Done);
    };
    let result = match span {
        Span::Rank(start, end) => rank_span(start, end, z.len()).map(|(s, e)| {
            let it = z.range_by_rank(s, e, rev);
            // Redis sizes the destination from the known range length.
            build_store(exact_len(&it), limits, it)
        }),
        Span::Score(r) => {
            offset.map(|off| build_store(0, limits, z.range_by_score(&r, rev, off, limit)))
        }
        Span::Lex(r) => {
            offset.map(|off| build_store(0, limits, z.range_by_lex(&r, rev, off, limit)))
        }
    };
    store_result(ctx, dst, result, "zrangestore");
    Ok(Done)
}

/// ZRANGESTORE's destination, created as Redis's `zrangeResultBeginStore`
/// does (compact unless the known length exceeds the entry limit).
fn build_store<'a>(
    hint: usize,
    limits: Limits,
    it: impl Iterator<Item = (Member<'a>, f64)>,
) -> ZSet {
    let mut r = ZSet::with_capacity_hint(hint, 0, limits);
    let mut scratch = Vec::new();
    for (m, s) in it {
        // Scores read from a sorted set are never NaN.
        let _ = r.add(
            m.joined(&mut scratch),
            NotNan::new(s).unwrap_or_default(),
            AddFlags::default(),
            limits,
        );
    }
    r
}

/// The end of every *STORE command: a non-empty result replaces `dst`
/// (dropping its TTL) and is announced with `event`; an empty one deletes it.
fn store_result(ctx: &mut Ctx, dst: &[u8], result: Option<ZSet>, event: &str) {
    match result.filter(|z| !z.is_empty()) {
        Some(z) => {
            let n = z.len();
            ctx.ks.set(dst, Value::ZSet(z));
            ctx.out.int(n as i64);
            ctx.ks.signal(dst, notify::ZSET, event);
            ctx.ks.signal_ready(dst);
        }
        None => {
            ctx.out.int(0);
            if ctx.ks.remove(dst).is_some() {
                ctx.ks.signal(dst, notify::GENERIC, "del");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// ZREMRANGEBY*
// ---------------------------------------------------------------------------

fn zremrangebyscore(ctx: &mut Ctx) -> CmdResult {
    let r = score_range(ctx.args.get(2), ctx.args.get(3))?;
    zremrange(ctx, "zremrangebyscore", |z| {
        z.remove_range_by_score(&r, |_, _| {})
    })
}

fn zremrangebylex(ctx: &mut Ctx) -> CmdResult {
    let r = lex_range(ctx.args.get(2), ctx.args.get(3))?;
    zremrange(ctx, "zremrangebylex", |z| {
        z.remove_range_by_lex(&r, |_, _| {})
    })
}

fn zremrangebyrank(ctx: &mut Ctx) -> CmdResult {
    let start = int_arg(ctx.args.get(2))?;
    let end = int_arg(ctx.args.get(3))?;
    zremrange(ctx, "zremrangebyrank", |z| {
        match rank_span(start, end, z.len()) {
            Some((s, e)) => z.remove_range_by_rank(s, e, |_, _| {}),
            None => 0,
        }
    })
}

fn zremrange(ctx: &mut Ctx, event: &str, remove: impl FnOnce(&mut ZSet) -> usize) -> CmdResult {
    let key = ctx.key(1);
    let Some(z) = zset_write(ctx.ks, key)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let deleted = remove(z);
    let emptied = z.is_empty();
    if deleted > 0 {
        ctx.ks.signal_by(key, notify::ZSET, event, deleted as u64);
        if emptied {
            delete_emptied(ctx.ks, key);
        }
    }
    ctx.out.int(deleted as i64);
    Ok(Done)
}

// ---------------------------------------------------------------------------
// Pops, blocking and not
// ---------------------------------------------------------------------------

/// How a pop reply is shaped (Redis `genericZpopCommand` flags).
#[derive(Clone, Copy)]
struct PopShape {
    max: bool,
    /// BZPOP*/ZMPOP/BZMPOP name the key they popped from.
    emit_key: bool,
    /// `[member, score]` pairs (RESP3 ZPOP with count, ZMPOP always).
    nested: bool,
    /// ZMPOP answers a null array, not an empty one, when nothing is there.
    nil_when_empty: bool,
}

fn zpopmin(ctx: &mut Ctx) -> CmdResult {
    zpop(ctx, false)
}

fn zpopmax(ctx: &mut Ctx) -> CmdResult {
    zpop(ctx, true)
}

fn zpop(ctx: &mut Ctx, max: bool) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(Error::Syntax);
    }
    let count = if ctx.argc() == 3 {
        Some(positive(
            ctx.args.get(2),
            "ERR value is out of range, must be positive",
        )?)
    } else {
        None
    };
    let shape = PopShape {
        max,
        emit_key: false,
        nested: ctx.out.resp3 && count.is_some(),
        nil_when_empty: false,
    };
    generic_zpop(ctx, 1, 1, count, shape)
}

/// Pops from the first existing key among `n` keys starting at argument
/// `first` (a wrong type there is an error, as in Redis).
fn generic_zpop(
    ctx: &mut Ctx,
    first: usize,
    n: usize,
    count: Option<i64>,
    shape: PopShape,
) -> CmdResult {
    let mut found = None;
    for i in first..first + n {
        let key = ctx.args.get(i);
        if zset_write(ctx.ks, key)?.is_some() {
            found = Some(key);
            break;
        }
    }
    let Some(key) = found else {
        if shape.nil_when_empty {
            ctx.out.null_array();
        } else {
            ctx.out.array(0);
        }
        return Ok(Done);
    };
    if count == Some(0) {
        ctx.out.array(0);
        return Ok(Done);
    }
    let explicit = count.is_some();
    let count = count.unwrap_or(1);
    let Some(z) = zset_write(ctx.ks, key)? else {
        return Ok(Done);
    };
    let len = z.len();
    let n = usize::try_from(count).unwrap_or(usize::MAX).min(len);
    let out = &mut *ctx.out;
    match (shape.nested, shape.emit_key) {
        (false, false) => out.array(n * 2),
        (true, false) => out.array(n),
        (false, true) => {
            out.array(n * 2 + 1);
            out.bulk(key);
        }
        (true, true) => {
            out.array(2);
            out.bulk(key);
            out.array(n);
        }
    }
    // Reply straight from the set, then drop the popped run in one go.
    let from = if shape.max { len - n } else { 0 };
    for (m, s) in z.range_by_rank(0, n.saturating_sub(1), shape.max).take(n) {
        if shape.nested {
            out.array(2);
        }
        bulk_member(out, m);
        out.double(s);
    }
    if n > 0 {
        z.remove_range_by_rank(from, from + n - 1, |_, _| {});
    }
    let emptied = z.is_empty();
    let event = if shape.max { "zpopmax" } else { "zpopmin" };
    // One change per member popped.
    ctx.ks.signal_by(key, notify::ZSET, event, n as u64);
    if emptied {
        delete_emptied(ctx.ks, key);
    }
    // ZMPOP and the blocking pops are logged as ZPOPMIN/ZPOPMAX.
    if !matches!(ctx.cmd.name, "zpopmin" | "zpopmax") {
        let name: &[u8] = if shape.max { b"ZPOPMAX" } else { b"ZPOPMIN" };
        let n = n.to_string();
        ctx.propagate_as(|| {
            if explicit {
                crate::argv![name, key, n]
            } else {
                crate::argv![name, key]
            }
        });
    }
    Ok(Done)
}

fn bzpopmin(ctx: &mut Ctx) -> CmdResult {
    bzpop(ctx, false)
}

fn bzpopmax(ctx: &mut Ctx) -> CmdResult {
    bzpop(ctx, true)
}

fn bzpop(ctx: &mut Ctx, max: bool) -> CmdResult {
    let argc = ctx.argc();
    let timeout = parse_timeout(ctx.args.get(argc - 1), ctx.ks.now_ms)?;
    let shape = PopShape {
        max,
        emit_key: true,
        nested: false,
        nil_when_empty: false,
    };
    blocking_zpop(ctx, 1, argc - 2, None, timeout, shape)
}

/// Redis `blockingGenericZpopCommand`: pop from the first non-empty key or
/// wait for one (or, where blocking is not allowed, reply the null array).
fn blocking_zpop(
    ctx: &mut Ctx,
    first: usize,
    n: usize,
    count: Option<i64>,
    timeout: Option<Duration>,
    shape: PopShape,
) -> CmdResult {
    for i in first..first + n {
        if zset_write(ctx.ks, ctx.args.get(i))?.is_some_and(|z| !z.is_empty()) {
            return generic_zpop(ctx, i, 1, count, shape);
        }
    }
    if !ctx.client.can_block() {
        ctx.out.null_array();
        return Ok(Done);
    }
    let keys = (first..first + n).map(|i| ctx.args.get(i).into()).collect();
    Ok(Outcome::Block(Block {
        keys,
        timeout,
        kind: "zset",
        rerun: None,
        unblock_on_nokey: false,
    }))
}

/// ZMPOP/BZMPOP arguments after `numkeys` at `at`: (numkeys, max, count).
fn parse_mpop(ctx: &Ctx, at: usize) -> Result<(usize, bool, i64), Error> {
    let numkeys = at_least_one(ctx.args.get(at), "ERR numkeys should be greater than 0")?;
    let argc = ctx.argc();
    let where_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|&w| w < argc)
        .ok_or(Error::Syntax)?;
    let w = ctx.args.get(where_at);
    let max = if eq_ic(w, "min") {
        false
    } else if eq_ic(w, "max") {
        true
    } else {
        return Err(Error::Syntax);
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < argc {
        if count.is_none() && eq_ic(ctx.args.get(j), "count") && j + 1 < argc {
            j += 1;
            count = Some(at_least_one(
                ctx.args.get(j),
                "ERR count should be greater than 0",
            )?);
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Ok((numkeys as usize, max, count.unwrap_or(1)))
}

fn zmpop(ctx: &mut Ctx) -> CmdResult {
    let (n, max, count) = parse_mpop(ctx, 1)?;
    let shape = PopShape {
        max,
        emit_key: true,
        nested: true,
        nil_when_empty: true,
    };
    generic_zpop(ctx, 2, n, Some(count), shape)
}

fn bzmpop(ctx: &mut Ctx) -> CmdResult {
    let (n, max, count) = parse_mpop(ctx, 2)?;
    let timeout = parse_timeout(ctx.args.get(1), ctx.ks.now_ms)?;
    let shape = PopShape {
        max,
        emit_key: true,
        nested: true,
        nil_when_empty: true,
    };
    blocking_zpop(ctx, 3, n, Some(count), timeout, shape)
}

// ---------------------------------------------------------------------------
// ZUNION / ZINTER / ZDIFF (+STORE), ZINTERCARD
// ---------------------------------------------------------------------------

/// One input of the set-algebra commands, copied out of the keyspace so
/// several inputs (on several shards) can be read at once: members laid end
/// to end in one buffer, so an input costs two allocations whatever its size.
#[derive(Default)]
struct Input {
    bytes: Vec<u8>,
    /// (end of the member in `bytes`, score).
    elems: Vec<(usize, f64)>,
}

impl Input {
    fn with_capacity(n: usize) -> Input {
        Input {
            bytes: Vec::new(),
            elems: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, member: Member<'_>, score: f64) {
        member.append_to(&mut self.bytes);
        self.elems.push((self.bytes.len(), score));
    }

    fn len(&self) -> usize {
        self.elems.len()
    }

    fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> {
        let mut start = 0;
        self.elems.iter().map(move |&(end, s)| {
            let m = &self.bytes[start..end];
            start = end;
            (m, s)
        })
    }
}

/// The elements a value contributes to ZUNION/ZINTER/ZDIFF; None for types
/// that cannot take part (WRONGTYPE). Plain sets join with score 1 once the
/// set type exists: add its arm here.
#[allow(unreachable_patterns)]
fn read_input(value: &Value) -> Option<Input> {
    match value {
        Value::ZSet(z) => {
            let mut input = Input::with_capacity(z.len());
            for (m, s) in z.iter() {
                input.push(m, s);
            }
            Some(input)
        }
        // Plain sets take part with every member scored 1.
        Value::Set(s) => {
            let mut input = Input::with_capacity(s.len());
            for m in s.iter() {
                m.with_bytes(|b| input.push(b.into(), 1.0));
            }
            Some(input)
        }
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis `zunionInterAggregate`.
    fn apply(self, target: &mut f64, val: f64) {
        match self {
            Aggregate::Sum => {
                *target += val;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => {
                if val < *target {
                    *target = val;
                }
            }
            Aggregate::Max => {
                if val > *target {
                    *target = val;
                }
            }
        }
    }
}

fn zunion(ctx: &mut Ctx) -> CmdResult {
    setop(ctx, None, 1, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx) -> CmdResult {
    setop(ctx, None, 1, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx) -> CmdResult {
    setop(ctx, None, 1, SetOp::Diff, false)
}

fn zunionstore(ctx: &mut Ctx) -> CmdResult {
    let dst = ctx.args.get(1);
    setop(ctx, Some(dst), 2, SetOp::Union, false)
}

fn zinterstore(ctx: &mut Ctx) -> CmdResult {
    let dst = ctx.args.get(1);
    setop(ctx, Some(dst), 2, SetOp::Inter, false)
}

fn zdiffstore(ctx: &mut Ctx) -> CmdResult {
    let dst = ctx.args.get(1);
    setop(ctx, Some(dst), 2, SetOp::Diff, false)
}

fn zintercard(ctx: &mut Ctx) -> CmdResult {
    setop(ctx, None, 1, SetOp::Inter, true)
}

type Map<'a> = std::collections::HashMap<&'a [u8], f64, foldhash::fast::RandomState>;

fn new_map<'a>(n: usize) -> Map<'a> {
    Map::with_capacity_and_hasher(n, foldhash::fast::RandomState::default())
}

/// Redis `zunionInterDiffGenericCommand`.
fn setop(
    ctx: &mut Ctx,
    dst: Option<&[u8]>,
    numkeys_at: usize,
    op: SetOp,
    card_only: bool,
) -> CmdResult {
    let argc = ctx.argc();
    let setnum = int_arg(ctx.args.get(numkeys_at))?;
    if setnum < 1 {
        return Err(Error::Owned(format!(
            "ERR at least 1 input key is needed for '{}' command",
            ctx.cmd.name
        )));
    }
    let first = numkeys_at + 1;
    if setnum > (argc - first) as i64 {
        return Err(Error::Syntax);
    }
    let setnum = setnum as usize;
    // Inputs are read (and type-checked) before the options are parsed.
    let mut inputs: Vec<(Input, f64)> = Vec::with_capacity(setnum);
    for i in first..first + setnum {
        let input = match ctx.ks.get_read(ctx.args.get(i)) {
            None => Input::default(),
            Some(e) => read_input(&e.value).ok_or(Error::WrongType)?,
        };
        inputs.push((input, 1.0));
    }
    let mut aggregate = Aggregate::Sum;
    let mut withscores = false;
    let mut limit = 0usize;
    let mut j = first + setnum;
    while j < argc {
        let a = ctx.args.get(j);
        let remaining = argc - j;
        if op != SetOp::Diff && !card_only && remaining > setnum && eq_ic(a, "weights") {
            for (k, input) in inputs.iter_mut().enumerate() {
                input.1 = parse_score(ctx.args.get(j + 1 + k))
                    .ok_or(Error::Static("ERR weight value is not a float"))?;
            }
            j += 1 + setnum;
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && eq_ic(a, "aggregate") {
            let v = ctx.args.get(j + 1);
            aggregate = if eq_ic(v, "sum") {
                Aggregate::Sum
            } else if eq_ic(v, "min") {
                Aggregate::Min
            } else if eq_ic(v, "max") {
                Aggregate::Max
            } else {
                return Err(Error::Syntax);
            };
            j += 2;
        } else if dst.is_none() && !card_only && eq_ic(a, "withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && eq_ic(a, "limit") {
            limit = positive(ctx.args.get(j + 1), "ERR LIMIT can't be negative")? as usize;
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    if op != SetOp::Diff {
        // Smallest first, stably (glibc's qsort is a merge sort), so sums
        // of three or more scores add up in Redis's order.
        inputs.sort_by_key(|(input, _)| input.len());
    }

    let mut result: Vec<(&[u8], f64)> = Vec::new();
    let mut cardinality = 0usize;
    match op {
        SetOp::Inter => {
            if !inputs[0].0.is_empty() {
                let others: Vec<Map> = inputs[1..]
                    .iter()
                    .map(|(input, _)| {
                        let mut m = new_map(input.len());
                        m.extend(input.iter());
                        m
                    })
                    .collect();
                let w0 = inputs[0].1;
                'elems: for (m, s) in inputs[0].0.iter() {
                    let mut score = w0 * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    for (k, other) in others.iter().enumerate() {
                        match other.get(m) {
                            Some(&v) => aggregate.apply(&mut score, v * inputs[k + 1].1),
                            None => continue 'elems,
                        }
                    }
                    if card_only {
                        cardinality += 1;
                        if limit != 0 && cardinality >= limit {
                            break;
                        }
                    } else {
                        result.push((m, score));
                    }
                }
            }
        }
        SetOp::Union => {
            let biggest = inputs.last().map_or(0, |(i, _)| i.len());
            let mut acc = new_map(biggest);
            for (input, w) in &inputs {
                for (m, s) in input.iter() {
                    let mut score = w * s;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.entry(m) {
                        std::collections::hash_map::Entry::Vacant(v) => {
                            v.insert(score);
                        }
                        std::collections::hash_map::Entry::Occupied(mut o) => {
                            aggregate.apply(o.get_mut(), score);
                        }
                    }
                }
            }
            result.extend(acc);
        }
        SetOp::Diff => {
            let mut excluded: std::collections::HashSet<&[u8], _> =
                std::collections::HashSet::with_capacity_and_hasher(
                    inputs[1..].iter().map(|(i, _)| i.len()).sum(),
                    foldhash::fast::RandomState::default(),
                );
            for (input, _) in &inputs[1..] {
                excluded.extend(input.iter().map(|(m, _)| m));
            }
            result.extend(inputs[0].0.iter().filter(|(m, _)| !excluded.contains(m)));
        }
    }
    if card_only {
        ctx.out.int(cardinality as i64);
        return Ok(Done);
    }
    // Redis builds a skiplist: score order, ties by member bytes.
    result.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(b.0))
    });
    match dst {
        None => write_elems(ctx.out, result.len(), withscores, result.iter().copied()),
        Some(dst) => {
            let limits = limits(ctx);
            let maxlen = result.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
            let mut z = ZSet::with_capacity_hint(result.len(), maxlen, limits);
            for &(m, s) in &result {
                // Aggregation already turned NaN (inf + -inf) into 0, as Redis does.
                let _ = z.add(
                    m,
                    NotNan::new(s).unwrap_or_default(),
                    AddFlags::default(),
                    limits,
                );
            }
            z.maybe_convert_to_compact(limits);
            let event = match op {
                SetOp::Union => "zunionstore",
                SetOp::Inter => "zinterstore",
                SetOp::Diff => "zdiffstore",
            };
            store_result(ctx, dst, Some(z), event);
        }
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN
// ---------------------------------------------------------------------------

fn zrandmember(ctx: &mut Ctx) -> CmdResult {
    let argc = ctx.argc();
    let key = ctx.key(1);
    if argc < 3 {
        let z = zset_read(ctx.ks, key)?;
        match z.filter(|z| !z.is_empty()) {
            Some(z) => {
                let pick = rand::random_range(0..z.len());
                match z.get_by_rank(pick) {
                    Some((m, _)) => bulk_member(ctx.out, m),
                    None => ctx.out.null(),
                }
            }
            None => ctx.out.null(),
        }
        return Ok(Done);
    }
    let l = count_arg(ctx.args.get(2))?;
    if argc > 4 || (argc == 4 && !eq_ic(ctx.args.get(3), "withscores")) {
        return Err(Error::Syntax);
    }
    let withscores = argc == 4;
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return Err(Error::Static("ERR value is out of range"));
    }
    let Some(z) = zset_read(ctx.ks, key)? else {
        ctx.out.array(0);
        return Ok(Done);
    };
    let len = z.len();
    let n = if l < 0 {
        l.unsigned_abs() as usize
    } else {
        (l as usize).min(len)
    };
    let out = &mut *ctx.out;
    if withscores && !out.resp3 {
        out.array(n * 2);
    } else {
        out.array(n);
    }
    if l < 0 {
        // Independent picks: the client's count sets the reply's size, so
        // past the output limit (where the client is closed) it stops.
        let mut rng = rand::rng();
        for _ in 0..n {
            if out.past_cap() {
                break;
            }
            let Some((m, s)) = z.get_by_rank(rand::Rng::random_range(&mut rng, 0..len)) else {
                break;
            };
            if withscores && out.resp3 {
                out.array(2);
            }
            bulk_member(out, m);
            if withscores {
                out.double(s);
            }
        }
        return Ok(Done);
    }
    let mut emit = |m: Member<'_>, s: f64| {
        if withscores && out.resp3 {
            out.array(2);
        }
        bulk_member(out, m);
        if withscores {
            out.double(s);
        }
    };
    if l > 0 && n == len {
        // The whole set, in the order Redis's `zuiNext` walks it: backwards.
        for (m, s) in z.range_by_rank(0, len - 1, true) {
            emit(m, s);
        }
    } else {
        z.random_members(&mut rand::rng(), l, emit);
    }
    Ok(Done)
}

fn zscan(ctx: &mut Ctx) -> CmdResult {
    let cursor = super::scan_cursor(ctx.args.get(2))?;
    let key = ctx.key(1);
    let Some(z) = zset_read(ctx.ks, key)? else {
        ctx.out.array(2);
        ctx.out.bulk(b"0");
        ctx.out.array(0);
        return Ok(Done);
    };
    let argc = ctx.args.len();
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 3;
    while i < argc {
        let a = ctx.args.get(i);
        if eq_ic(a, "novalues") {
            return Err(super::hashes::NOVALUES_ONLY_HSCAN);
        }
        if eq_ic(a, "count") && i + 1 < argc {
            let n = int_arg(ctx.args.get(i + 1))?;
            if n < 1 {
                return Err(Error::Syntax);
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if eq_ic(a, "match") && i + 1 < argc {
            let p = ctx.args.get(i + 1);
            pattern = (p != b"*").then_some(p);
        } else {
            return Err(Error::Syntax);
        }
        i += 2;
    }
    // The cursor comes first in the reply but is known last: collect the
    // elements' encoding aside, then splice.
    let mut body = Reply::with_resp3(ctx.out.resp3);
    let mut n = 0usize;
    let mut scratch = Vec::new();
    // Redis's scan callback prints a skiplist set's scores with
    // ld2string(LD_STR_AUTO); a listpack's come back as d2string stored them.
    let skiplist = z.encoding_name() == "skiplist";
    let next = z.scan(cursor, count, |m, s| {
        if pattern.is_some_and(|p| !glob_match(p, m.joined(&mut scratch), false)) {
            return;
        }
        bulk_member(&mut body, m);
        let mut tmp = [0u8; 40];
        body.bulk(if skiplist {
            format_double_g17(s, &mut tmp)
        } else {
            format_double(s, &mut tmp)
        });
        n += 2;
    });
    let out = &mut *ctx.out;
    out.array(2);
    out.bulk(itoa::Buffer::new().format(next).as_bytes());
    out.array(n);
    out.raw(&body.buf);
    Ok(Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_like_string2ull() {
        let c = |s: &[u8]| super::super::scan_cursor(s).ok();
        assert_eq!(c(b"0"), Some(0));
        assert_eq!(c(b"+5"), Some(5));
        assert_eq!(c(b" 5"), Some(5));
        assert_eq!(c(b"007"), Some(7));
        assert_eq!(c(b"-0"), Some(0));
        assert_eq!(c(b"-18446744073709551615"), Some(1));
        assert_eq!(c(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"-1",
            b"18446744073709551616",
            b"1 ",
            b"0x10",
            b"+",
            b"-",
            b"a",
        ] {
            assert_eq!(c(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn rank_spans_like_redis() {
        assert_eq!(rank_span(0, -1, 3), Some((0, 2)));
        assert_eq!(rank_span(-100, 100, 3), Some((0, 2)));
        assert_eq!(rank_span(2, 1, 3), None);
        assert_eq!(rank_span(3, 5, 3), None);
        assert_eq!(rank_span(0, -4, 3), None);
        assert_eq!(rank_span(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(rank_span(0, 0, 0), None);
    }

    #[test]
    fn timeouts_like_redis() {
        let t = |s: &str| parse_timeout(s.as_bytes(), 1_000);
        assert_eq!(t("0"), Ok(None));
        assert_eq!(t("0.0001"), Ok(Some(Duration::from_millis(1))));
        assert_eq!(t("1e-300"), Ok(Some(Duration::from_millis(1))));
        // Below a double's range but not a long double's: still 1 ms.
        assert_eq!(t("1e-400"), Ok(Some(Duration::from_millis(1))));
        assert_eq!(t("-0.0001"), Ok(None));
        assert_eq!(t("-0"), Ok(None));
        assert_eq!(t("0.25"), Ok(Some(Duration::from_millis(250))));
        assert_eq!(t("0x1p-2"), Ok(Some(Duration::from_millis(250))));
        for neg in ["-1", "-inf", "-1e30", "-1e400"] {
            assert_eq!(
                t(neg).unwrap_err().text(),
                "ERR timeout is negative",
                "{neg}"
            );
        }
        // Redis 7.2+: above LLONG_MAX ms is out of range (7.0: negative).
        for big in ["inf", "1e30", "1e400"] {
            assert_eq!(
                t(big).unwrap_err().text(),
                "ERR timeout is out of range",
                "{big}"
            );
        }
        for bad in ["x", " 1", "", "nan", "1s"] {
            assert_eq!(
                t(bad).unwrap_err().text(),
                "ERR timeout is not a float or out of range",
                "{bad}"
            );
        }
    }

    #[test]
    fn aggregate_sum_maps_nan_to_zero() {
        let mut x = f64::INFINITY;
        Aggregate::Sum.apply(&mut x, f64::NEG_INFINITY);
        assert_eq!(x, 0.0);
        let mut y = 1.0;
        Aggregate::Min.apply(&mut y, f64::NAN);
        assert_eq!(y, 1.0);
    }

    #[test]
    fn inputs_round_trip() {
        let mut i = Input::default();
        i.push(b"a"[..].into(), 1.0);
        i.push(b""[..].into(), 2.0);
        i.push(b"ccc"[..].into(), 3.0);
        let v: Vec<_> = i.iter().collect();
        assert_eq!(
            v,
            vec![(&b"a"[..], 1.0), (&b""[..], 2.0), (&b"ccc"[..], 3.0)]
        );
    }
}
