//! Sorted sets with Redis 7.0 semantics, in two encodings.
//!
//! This module owns the data structure only: commands, argument validation
//! and replies belong to the command layer, which calls the API below.
//! [`ZSet`] dispatches between the compact encoding ([`listpack`], one
//! buffer, linear scans, used while the set is small) and the large one
//! ([`skiplist`], an unrolled rank-counting skiplist plus a slim member
//! index). Conversion rules mirror Redis: a compact set converts when an
//! insertion would exceed the caller-supplied [`Limits`]; sets never convert
//! back on their own, only through [`ZSet::maybe_convert_to_compact`] for
//! freshly built results.
//!
//! Every query is expressed through two primitives that both encodings
//! provide — "how many leading elements satisfy a monotonic predicate" and
//! "iterate from a rank in either direction" — so range semantics (scores,
//! lex, offsets, limits, reverse) are implemented once, here.

mod index;
pub(crate) mod listpack;
mod member;
pub(crate) mod score;
pub(crate) mod skiplist;
#[cfg(test)]
mod tests;
pub(crate) mod ttl;

pub use score::ScoreBound;
pub(crate) use score::{LexBound, parse_lex_bound, parse_score, parse_score_bound};

use listpack::Listpack;
pub use member::Member;
pub use ordered_float::NotNan;
use skiplist::{DEFAULT_NODE_CAP, SkipList};

/// Compact-encoding thresholds (`zset-max-listpack-entries` / `-value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_entries: usize,
    pub max_value: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 128,
            max_value: 64,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: ScoreBound,
    pub max: ScoreBound,
}

impl ScoreRange {
    #[cfg(test)]
    pub(crate) fn all() -> Self {
        ScoreRange {
            min: ScoreBound::Inclusive(f64::NEG_INFINITY),
            max: ScoreBound::Inclusive(f64::INFINITY),
        }
    }

    fn below_min(&self, s: f64) -> bool {
        match self.min {
            ScoreBound::Inclusive(v) => s < v,
            ScoreBound::Exclusive(v) => s <= v,
        }
    }

    fn not_above_max(&self, s: f64) -> bool {
        match self.max {
            ScoreBound::Inclusive(v) => s <= v,
            ScoreBound::Exclusive(v) => s < v,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexRange {
    pub(crate) min: LexBound,
    pub(crate) max: LexBound,
}

impl LexRange {
    fn below_min(&self, m: Member<'_>) -> bool {
        match &self.min {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Inclusive(x) => m.cmp_bytes(x).is_lt(),
            LexBound::Exclusive(x) => m.cmp_bytes(x).is_le(),
        }
    }

    fn not_above_max(&self, m: Member<'_>) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Inclusive(x) => m.cmp_bytes(x).is_le(),
            LexBound::Exclusive(x) => m.cmp_bytes(x).is_lt(),
        }
    }
}

/// ZADD option flags; the command layer rejects invalid combinations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub incr: bool,
}

/// What a single-element ZADD did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AddOutcome {
    Added {
        score: f64,
    },
    Updated {
        old: f64,
        score: f64,
    },
    /// The element exists and the (numerically) same score was given.
    Unchanged {
        score: f64,
    },
    /// NX/XX/GT/LT prevented the operation (ZADD INCR replies nil).
    NotPerformed,
}

impl AddOutcome {
    /// The element's score after the operation (the INCR reply).
    #[cfg(test)]
    pub(crate) fn score(&self) -> Option<f64> {
        match *self {
            AddOutcome::Added { score }
            | AddOutcome::Updated { score, .. }
            | AddOutcome::Unchanged { score } => Some(score),
            AddOutcome::NotPerformed => None,
        }
    }
}

/// The requested score (or INCR result) is NaN, e.g. `inf + -inf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NanError;

impl std::fmt::Display for NanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("resulting score is not a number (NaN)")
    }
}

impl std::error::Error for NanError {}

#[derive(Clone)]
enum Repr {
    Compact(Listpack),
    Skip(Box<SkipList>),
}

/// A sorted set in whichever encoding its size calls for.
///
/// Just the encoding: this struct sits inline in every key's entry, so it
/// carries no field of its own in the server (the unit tests' hooks for
/// the skiplist's shape exist only under `cfg(test)`).
#[derive(Clone)]
pub struct ZSet {
    repr: Repr,
    /// Test hooks: the node capacity and member-hash fragment mask of the
    /// skiplist this set converts to.
    #[cfg(test)]
    shape: (u32, u32),
}

impl Default for ZSet {
    fn default() -> Self {
        Self::new()
    }
}

/// Iterator over a run of consecutive ranks, ascending or descending.
#[derive(Clone)]
pub struct RangeIter<'a> {
    inner: Cursor<'a>,
    remaining: usize,
    reverse: bool,
}

#[derive(Clone)]
enum Cursor<'a> {
    Compact(listpack::Iter<'a>),
    Skip(skiplist::Iter<'a>),
}

impl<'a> RangeIter<'a> {
    /// `f` on every element left: what [`Iterator::for_each`] does, with
    /// a large set's forward ranges walked node by node.
    pub(crate) fn each(mut self, mut f: impl FnMut(Member<'a>, f64)) {
        if let (Cursor::Skip(it), false) = (&mut self.inner, self.reverse) {
            it.each_next(self.remaining, &mut |m, s| f(Member::from(m), s));
            return;
        }
        for (m, s) in self {
            f(m, s);
        }
    }
}

impl<'a> Iterator for RangeIter<'a> {
    type Item = (Member<'a>, f64);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let whole = |(m, s): (&'a [u8], f64)| (Member::from(m), s);
        let r = match (&mut self.inner, self.reverse) {
            (Cursor::Compact(it), false) => it.next(),
            (Cursor::Compact(it), true) => it.prev(),
            (Cursor::Skip(it), false) => it.next().map(whole),
            (Cursor::Skip(it), true) => it.prev().map(whole),
        };
        if r.is_none() {
            self.remaining = 0;
        }
        r
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.remaining))
    }
}

impl ZSet {
    /// An empty set in the compact encoding.
    pub fn new() -> Self {
        ZSet::with_repr(Repr::Compact(Listpack::new()))
    }

    fn with_repr(repr: Repr) -> Self {
        ZSet {
            repr,
            #[cfg(test)]
            shape: (DEFAULT_NODE_CAP as u32, u32::MAX),
        }
    }

    /// Test hook: a set whose skiplist nodes hold at most `node_cap`
    /// elements, to exercise node splits and merges with few elements.
    #[cfg(test)]
    fn with_node_capacity(node_cap: usize) -> Self {
        let mut z = ZSet::new();
        z.shape.0 = node_cap.clamp(2, 1 << 16) as u32;
        z
    }

    /// Test hook: keep only `mask` bits of the member hash fragments, so
    /// the index sees many collisions.
    #[cfg(test)]
    fn with_frag_mask(mut self, mask: u32) -> Self {
        self.shape.1 = mask;
        self
    }

    /// An empty set already in the skiplist encoding, whose nodes hold at
    /// most `node_cap` elements: for benchmarks comparing node sizes.
    pub fn skiplist_with_node_capacity(node_cap: usize) -> Self {
        ZSet::with_repr(Repr::Skip(Box::new(SkipList::new(
            node_cap.clamp(2, 1 << 16),
            u32::MAX,
        ))))
    }

    /// The node capacity and fragment mask a conversion to the skiplist
    /// uses: the defaults, or the unit tests' hooks.
    fn shape(&self) -> (usize, u32) {
        #[cfg(test)]
        return (self.shape.0 as usize, self.shape.1);
        #[cfg(not(test))]
        (DEFAULT_NODE_CAP, u32::MAX)
    }

    /// Picks the encoding for a set about to receive `len` elements whose
    /// longest member is `max_member_len` (Redis `zsetTypeCreate`).
    pub(crate) fn with_capacity_hint(len: usize, max_member_len: usize, limits: Limits) -> Self {
        if len <= limits.max_entries && max_member_len <= limits.max_value {
            let per = max_member_len.min(limits.max_value) + 10;
            ZSet::with_repr(Repr::Compact(Listpack::with_capacity(
                len.saturating_mul(per).min(1 << 16),
            )))
        } else {
            ZSet::with_repr(Repr::Skip(Box::new(SkipList::new(
                DEFAULT_NODE_CAP,
                u32::MAX,
            ))))
        }
    }

    /// Converts a compact set about to receive `len` elements that would
    /// not fit to the skiplist first (Redis `zsetTypeMaybeConvert`), so a
    /// `-0` among them keeps its sign as in Redis.
    pub(crate) fn reserve_hint(&mut self, len: usize, limits: Limits) {
        if len > limits.max_entries {
            self.convert_to_skiplist();
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.len(),
            Repr::Skip(sl) => sl.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding_name(&self) -> &'static str {
        match &self.repr {
            Repr::Compact(_) => "listpack",
            Repr::Skip(_) => "skiplist",
        }
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Compact(lp) => lp.score(member),
            Repr::Skip(sl) => sl.score(member),
        }
    }

    fn convert_to_skiplist(&mut self) {
        if let Repr::Compact(lp) = &self.repr {
            let (node_cap, frag_mask) = self.shape();
            let mut sl = SkipList::new(node_cap, frag_mask);
            let mut deadlines = Vec::with_capacity(lp.ttl_count());
            lp.for_each_deadline(|i, at| deadlines.push((i, at)));
            let mut next = deadlines.iter().peekable();
            let mut scratch = Vec::new();
            for (i, (m, s)) in lp.iter().enumerate() {
                let place = sl.insert_new(m.joined(&mut scratch), s);
                // Set right away: the place moves with later insertions.
                if let Some(&(_, at)) = next.next_if(|&&(r, _)| r == i) {
                    sl.set_deadline_at(place, at);
                }
            }
            self.repr = Repr::Skip(Box::new(sl));
        }
    }

    /// Converts a skiplist set back to compact if it fits `limits`
    /// (Redis `zsetConvertToListpackIfNeeded`, used for fresh results).
    pub(crate) fn maybe_convert_to_compact(&mut self, limits: Limits) {
        if let Repr::Skip(sl) = &self.repr {
            if sl.len() > limits.max_entries {
                return;
            }
            let mut bytes = 0;
            for (m, _) in sl.list().iter_at(0) {
                if m.len() > limits.max_value {
                    return;
                }
                bytes += m.len() + 10;
            }
            let mut lp = Listpack::with_capacity(bytes);
            for (m, s) in sl.list().iter_at(0) {
                lp.insert_new(m, s);
            }
            sl.list().for_each_deadline(|i, at| lp.set_deadline(i, at));
            self.repr = Repr::Compact(lp);
        }
    }

    fn insert_new(&mut self, member: &[u8], score: f64, limits: Limits) {
        if let Repr::Compact(lp) = &self.repr
            && (lp.len() + 1 > limits.max_entries || member.len() > limits.max_value)
        {
            self.convert_to_skiplist();
        }
        match &mut self.repr {
            Repr::Compact(lp) => {
                lp.insert_new(member, score);
            }
            Repr::Skip(sl) => {
                sl.insert_new(member, score);
            }
        }
    }

    /// Moves a present member to a new score; its deadline moves with it.
    fn set_score(&mut self, member: &[u8], score: f64) {
        match &mut self.repr {
            Repr::Compact(lp) => lp.update(member, score),
            Repr::Skip(sl) => {
                sl.update(member, score);
            }
        }
    }

    /// The value the current encoding actually stores for `score`.
    fn stored(&self, score: f64) -> f64 {
        match self.repr {
            Repr::Compact(_) if score == 0.0 => 0.0,
            _ => score,
        }
    }

    /// ZADD for one element (Redis `zsetAdd`).
    /// ZADD semantics for one element. The score cannot be NaN by type;
    /// an INCR that would produce NaN (`inf + -inf`) is refused.
    pub fn add(
        &mut self,
        member: &[u8],
        score: NotNan<f64>,
        flags: AddFlags,
        limits: Limits,
    ) -> Result<AddOutcome, NanError> {
        let score = score.into_inner();
        // A skiplist set remembers where the member is, so an update does
        // not look it up a second time.
        let (found, place) = match &self.repr {
            Repr::Compact(lp) => (lp.score(member), None),
            Repr::Skip(sl) => {
                let p = sl.place(member);
                (p.map(|p| p.score()), p)
            }
        };
        match found {
            Some(cur) => {
                if flags.nx {
                    return Ok(AddOutcome::NotPerformed);
                }
                let mut new = score;
                if flags.incr {
                    new += cur;
                    if new.is_nan() {
                        return Err(NanError);
                    }
                }
                if (flags.lt && new >= cur) || (flags.gt && new <= cur) {
                    return Ok(AddOutcome::NotPerformed);
                }
                // ZADD drops the member's TTL (as HSET drops a field's);
                // ZINCRBY (and ZADD INCR) keep it, as HINCRBY does.
                if !flags.incr && self.has_ttls() {
                    self.clear_ttl(member);
                }
                // -0 == 0 here, as in Redis: no update, old sign kept.
                if new == cur {
                    return Ok(AddOutcome::Unchanged { score: cur });
                }
                // Clearing a deadline moves no element, so `place` holds.
                match (&mut self.repr, place) {
                    (Repr::Skip(sl), Some(p)) => sl.update_at(p, member, new),
                    _ => self.set_score(member, new),
                }
                Ok(AddOutcome::Updated {
                    old: cur,
                    score: self.stored(new),
                })
            }
            None => {
                if flags.xx {
                    return Ok(AddOutcome::NotPerformed);
                }
                self.insert_new(member, score, limits);
                Ok(AddOutcome::Added {
                    score: self.stored(score),
                })
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Compact(lp) => lp.remove(member),
            Repr::Skip(sl) => sl.remove(member),
        }
    }

    /// (rank, score); with `reverse`, rank 0 is the highest element.
    pub fn rank(&self, member: &[u8], reverse: bool) -> Option<(usize, f64)> {
        let (r, s) = match &self.repr {
            Repr::Compact(lp) => lp.rank(member),
            Repr::Skip(sl) => sl.rank(member),
        }?;
        Some((if reverse { self.len() - 1 - r } else { r }, s))
    }

    fn count_while(&self, before: impl Fn(f64, Member<'_>) -> bool) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.count_while(before),
            Repr::Skip(sl) => sl.list().count_while(|s, m| before(s, Member::from(m))),
        }
    }

    fn count_while_score(&self, before: impl Fn(f64) -> bool) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.count_while(|s, _| before(s)),
            Repr::Skip(sl) => sl.list().count_while_score(before),
        }
    }

    /// Ranks `[lo, hi)` of the elements inside a score range.
    fn score_span(&self, r: &ScoreRange) -> (usize, usize) {
        let (lo, hi) = match &self.repr {
            // One scan for both ends: each is a full decode here.
            Repr::Compact(lp) => lp.count_while2(|s, _| r.below_min(s), |s, _| r.not_above_max(s)),
            Repr::Skip(_) => (
                self.count_while_score(|s| r.below_min(s)),
                self.count_while_score(|s| r.not_above_max(s)),
            ),
        };
        (lo, hi.max(lo))
    }

    /// Ranks `[lo, hi)` of the elements inside a lex range (meaningful when
    /// all scores are equal, as in Redis).
    ///
    /// With unequal scores the members are not in lex order and the answer
    /// is the walk Redis's listpack takes (`zzlIsInLexRange`, then
    /// `zzlFirstInLexRange` and on while in range): ZREMRANGEBYLEX and
    /// ZRANGESTORE BYLEX reach a redis-server replica as themselves, which
    /// must remove or store what zwindow did.
    fn lex_span(&self, r: &LexRange) -> (usize, usize) {
        let len = self.len();
        match self.get_by_rank(len.wrapping_sub(1)) {
            Some((last, _)) if !r.below_min(last) => {}
            _ => return (0, 0),
        }
        let (lo, hi) = match &self.repr {
            Repr::Compact(lp) => {
                // The first member not below the minimum, then on while
                // not above the maximum.
                let mut it = lp.iter().enumerate();
                let (mut lo, mut hi) = (len, len);
                for (i, (m, _)) in it.by_ref() {
                    if !r.below_min(m) {
                        lo = i;
                        hi = if r.not_above_max(m) { len } else { i };
                        break;
                    }
                }
                if hi > lo {
                    for (i, (m, _)) in it {
                        if !r.not_above_max(m) {
                            hi = i;
                            break;
                        }
                    }
                }
                (lo, hi)
            }
            // The first member by a descent (Redis's `zslFirstInLexRange`:
            // with unequal scores where it lands depends on the levels),
            // then on while not above the maximum (`zslDeleteRangeByLex`).
            Repr::Skip(_) => {
                let lo = self.count_while(|_, m| r.below_min(m));
                let n = self
                    .iter_ranks(lo, len - lo, false)
                    .take_while(|(m, _)| r.not_above_max(*m))
                    .count();
                (lo, lo + n)
            }
        };
        (lo, hi.max(lo))
    }

    /// [`lex_span`](Self::lex_span) for a reverse range: with unequal
    /// scores, Redis's listpack walk from the tail (`zzlLastInLexRange`:
    /// the last member not above the maximum, then back while not below
    /// the minimum).
    fn lex_span_rev(&self, r: &LexRange) -> (usize, usize) {
        let Repr::Compact(lp) = &self.repr else {
            return self.lex_span(r);
        };
        let members: Vec<Member<'_>> = lp.iter().map(|(m, _)| m).collect();
        // zzlIsInLexRange: the last member not below the minimum, the
        // first not above the maximum.
        match (members.first(), members.last()) {
            (Some(first), Some(last)) if r.not_above_max(*first) && !r.below_min(*last) => {}
            _ => return (0, 0),
        }
        let Some(top) = members.iter().rposition(|m| r.not_above_max(*m)) else {
            return (0, 0);
        };
        let below = members[..=top]
            .iter()
            .rposition(|m| r.below_min(*m))
            .map_or(0, |i| i + 1);
        (below, (top + 1).max(below))
    }

    pub(crate) fn count_in_range(&self, r: &ScoreRange) -> usize {
        let (lo, hi) = self.score_span(r);
        hi - lo
    }

    pub(crate) fn lex_count(&self, r: &LexRange) -> usize {
        if let Repr::Skip(_) = &self.repr {
            // Two descents, without walking the range (Redis's ZLEXCOUNT
            // ranks the first and the last member in range).
            let lo = self.count_while(|_, m| r.below_min(m));
            let hi = self.count_while(|_, m| r.not_above_max(m));
            return hi.saturating_sub(lo);
        }
        let (lo, hi) = self.lex_span(r);
        hi - lo
    }

    /// Iterates `count` elements from forward rank `rank`, going up, or
    /// (reverse) going down from `rank`.
    fn iter_ranks(&self, rank: usize, count: usize, reverse: bool) -> RangeIter<'_> {
        // A reverse cursor yields the element *before* its position.
        let at = if reverse {
            rank.saturating_add(1)
        } else {
            rank
        };
        let inner = match &self.repr {
            Repr::Compact(lp) if reverse => Cursor::Compact(lp.iter_back(at)),
            Repr::Compact(lp) => Cursor::Compact(lp.iter_at(at)),
            Repr::Skip(sl) => Cursor::Skip(sl.list().iter_at(at)),
        };
        RangeIter {
            inner,
            remaining: count,
            reverse,
        }
    }

    /// Elements `[lo, hi)` after `offset`/`limit`, in the requested order.
    fn window(
        &self,
        lo: usize,
        hi: usize,
        reverse: bool,
        offset: usize,
        limit: Option<usize>,
    ) -> RangeIter<'_> {
        let avail = (hi - lo).saturating_sub(offset);
        let n = limit.map_or(avail, |l| l.min(avail));
        if n == 0 {
            return self.iter_ranks(0, 0, false);
        }
        if reverse {
            self.iter_ranks(hi - 1 - offset, n, true)
        } else {
            self.iter_ranks(lo + offset, n, false)
        }
    }

    /// ZRANGE by index; with `reverse`, indexes count from the highest.
    pub fn range_by_rank(
        &self,
        start: usize,
        end_inclusive: usize,
        reverse: bool,
    ) -> RangeIter<'_> {
        let len = self.len();
        if start >= len || start > end_inclusive {
            return self.iter_ranks(0, 0, false);
        }
        let end = end_inclusive.min(len - 1);
        let n = end - start + 1;
        if reverse {
            self.iter_ranks(len - 1 - start, n, true)
        } else {
            self.iter_ranks(start, n, false)
        }
    }

    pub fn range_by_score(
        &self,
        r: &ScoreRange,
        reverse: bool,
        offset: usize,
        limit: Option<usize>,
    ) -> RangeIter<'_> {
        // From the start of the range (or, reversed, its end) a large set
        // needs no second descent by rank.
        if let Repr::Skip(sl) = &self.repr
            && offset == 0
        {
            let list = sl.list();
            let (lo, hi, cursor) = if reverse {
                let (hi, at) = list.seek_score(|s| r.not_above_max(s));
                (list.count_while_score(|s| r.below_min(s)), hi, at)
            } else {
                let (lo, at) = list.seek_score(|s| r.below_min(s));
                (lo, list.count_while_score(|s| r.not_above_max(s)), at)
            };
            let avail = hi.saturating_sub(lo);
            return RangeIter {
                inner: Cursor::Skip(cursor),
                remaining: limit.map_or(avail, |l| l.min(avail)),
                reverse,
            };
        }
        let (lo, hi) = self.score_span(r);
        self.window(lo, hi, reverse, offset, limit)
    }

    pub(crate) fn range_by_lex(
        &self,
        r: &LexRange,
        reverse: bool,
        offset: usize,
        limit: Option<usize>,
    ) -> RangeIter<'_> {
        let (lo, hi) = if reverse {
            self.lex_span_rev(r)
        } else {
            self.lex_span(r)
        };
        self.window(lo, hi, reverse, offset, limit)
    }

    fn remove_ranks(
        &mut self,
        start: usize,
        count: usize,
        mut on_removed: impl FnMut(Member<'_>, f64),
    ) -> usize {
        match &mut self.repr {
            Repr::Compact(lp) => lp.remove_rank_range(start, count, on_removed),
            Repr::Skip(sl) => {
                sl.remove_rank_range(start, count, |m, s| on_removed(Member::from(m), s))
            }
        }
    }

    pub fn remove_range_by_score(
        &mut self,
        r: &ScoreRange,
        on_removed: impl FnMut(Member<'_>, f64),
    ) -> usize {
        let (lo, hi) = self.score_span(r);
        self.remove_ranks(lo, hi - lo, on_removed)
    }

    pub(crate) fn remove_range_by_rank(
        &mut self,
        start: usize,
        end_inclusive: usize,
        on_removed: impl FnMut(Member<'_>, f64),
    ) -> usize {
        let len = self.len();
        if start >= len || start > end_inclusive {
            return 0;
        }
        let end = end_inclusive.min(len - 1);
        self.remove_ranks(start, end - start + 1, on_removed)
    }

    pub(crate) fn remove_range_by_lex(
        &mut self,
        r: &LexRange,
        on_removed: impl FnMut(Member<'_>, f64),
    ) -> usize {
        let (lo, hi) = self.lex_span(r);
        self.remove_ranks(lo, hi - lo, on_removed)
    }

    /// ZPOPMIN (ascending) / ZPOPMAX (descending) of up to `count`.
    #[cfg(test)]
    pub(crate) fn pop(&mut self, max: bool, count: usize) -> Vec<(Vec<u8>, f64)> {
        let len = self.len();
        let n = count.min(len);
        let mut out = Vec::with_capacity(n);
        let start = if max { len - n } else { 0 };
        self.remove_ranks(start, n, |m, s| out.push((m.to_vec(), s)));
        if max {
            out.reverse();
        }
        out
    }

    pub(crate) fn min_score(&self) -> Option<f64> {
        match &self.repr {
            Repr::Compact(lp) => lp.iter().next().map(|(_, s)| s),
            Repr::Skip(sl) => sl.list().first().map(|(_, s)| s),
        }
    }

    /// Element at forward rank `rank`.
    pub(crate) fn get_by_rank(&self, rank: usize) -> Option<(Member<'_>, f64)> {
        match &self.repr {
            Repr::Compact(lp) => lp.get_by_rank(rank),
            Repr::Skip(sl) => sl.list().get_by_rank(rank).map(|(m, s)| (m.into(), s)),
        }
    }

    /// ZRANDMEMBER: `count > 0` gives distinct elements (the whole set if
    /// `count >= len`), `count < 0` gives `|count|` independent picks.
    pub(crate) fn random_members(
        &self,
        rng: &mut impl rand::Rng,
        count: i64,
        mut emit: impl FnMut(Member<'_>, f64),
    ) {
        let len = self.len();
        if len == 0 || count == 0 {
            return;
        }
        if count < 0 {
            for _ in 0..count.unsigned_abs() {
                if let Some((m, s)) = self.get_by_rank(rng.random_range(0..len)) {
                    emit(m, s);
                }
            }
            return;
        }
        let k = usize::try_from(count).unwrap_or(usize::MAX);
        if k >= len {
            for (m, s) in self.iter() {
                emit(m, s);
            }
            return;
        }
        for r in rand::seq::index::sample(rng, len, k) {
            if let Some((m, s)) = self.get_by_rank(r) {
                emit(m, s);
            }
        }
    }

    /// All elements, ascending.
    pub fn iter(&self) -> RangeIter<'_> {
        self.iter_ranks(0, self.len(), false)
    }

    /// ZSCAN. Compact sets return everything with cursor 0. Skiplist sets
    /// scan in score order: the cursor encodes the next score to visit and
    /// each call finishes its last score group, so every element present
    /// (with an unchanged score) for the whole scan is returned at least
    /// once whatever is added or removed in between.
    pub(crate) fn scan(
        &self,
        cursor: u64,
        count: usize,
        mut emit: impl FnMut(Member<'_>, f64),
    ) -> u64 {
        let sl = match &self.repr {
            Repr::Compact(lp) => {
                for (m, s) in lp.iter() {
                    emit(m, s);
                }
                return 0;
            }
            Repr::Skip(sl) => sl,
        };
        let from = if cursor == 0 {
            f64::NEG_INFINITY
        } else {
            let s = cursor_to_score(cursor);
            if s.is_nan() {
                return 0;
            }
            s
        };
        let lo = sl.list().count_while_score(|s| s < from);
        let mut last: Option<f64> = None;
        for (emitted, (m, s)) in sl.list().iter_at(lo).enumerate() {
            if emitted >= count.max(1) && last.is_some_and(|l| l != s) {
                return score_to_cursor(s);
            }
            emit(Member::from(m), s);
            last = Some(s);
        }
        0
    }

    /// Approximate heap bytes owned by this set.
    pub fn mem_usage(&self) -> usize {
        match &self.repr {
            Repr::Compact(lp) => lp.mem_usage(),
            Repr::Skip(sl) => std::mem::size_of::<SkipList>() + sl.mem_usage(),
        }
    }

    /// Debug check of every structural invariant of the current encoding.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        match &self.repr {
            Repr::Compact(lp) => lp.check_invariants(),
            Repr::Skip(sl) => sl.check_invariants(),
        }?;
        self.check_ttl_invariants()
    }
}

/// Order-preserving map from scores to non-zero cursors (-0 folds into 0
/// because the two compare equal).
fn score_to_cursor(s: f64) -> u64 {
    let s = if s == 0.0 { 0.0 } else { s };
    let b = s.to_bits();
    if b >> 63 == 1 { !b } else { b | (1 << 63) }
}

fn cursor_to_score(c: u64) -> f64 {
    let b = if c >> 63 == 1 { c & !(1 << 63) } else { !c };
    f64::from_bits(b)
}
