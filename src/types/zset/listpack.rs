//! The compact encoding: every element of a small sorted set in one buffer.
//!
//! Small sets are by far the most numerous, so this encoding optimises for
//! bytes rather than asymptotics, like Redis's listpack: a single `Vec<u8>`
//! of records sorted by (score, member), no per-element allocation and no
//! hash index. Every operation is a linear scan, which is cheap at the
//! configured sizes (default <= 128 entries of <= 64 bytes).
//!
//! The buffer starts with the bytes every member shares (the *head*: a
//! lone member is all head, and each new member that differs cuts it back
//! to what they have in common), then the records, each holding only its
//! member's *tail*. Members of one set tend to share a namespace (`user:`,
//! `job:`, `session:`), and ten `memberNNNNNN` members a second apart take
//! 101 bytes instead of 154. Every record stays self-contained, so nothing
//! below changes when the head does but each record's length; the members
//! go out as a [`Member`] (head and tail, both borrowed), and a lookup
//! strips the head from its argument once and compares tails.
//!
//! Record layout: a header byte `len << 3 | form` (`len` is the tail's
//! length), then the tail, then the score in the fixed number of bytes its
//! form names (a tail of 31 bytes or more puts 31 in the header and
//! `varint(len - 31)` after it):
//!
//! - `SAME`: no bytes, the previous record's score (lex sets, ties);
//! - `DELTA1/2/4`: `score - previous` in 1, 2 or 4 little-endian bytes,
//!   both integers (records are sorted, so it is never negative);
//! - `INT1/4/6`: the score as a signed 1, 4 or 6-byte integer;
//! - `F64`: the 8 IEEE bytes, little-endian (fractions, infinities, and
//!   integers beyond 48 bits).
//!
//! Because the header alone gives the record's size, a scan finds the next
//! record without decoding the score, in one 8-byte load and a table
//! lookup (see [`decode_at`]). Each record takes the
//! shortest form its neighbour allows (DELTA only where strictly shorter
//! than INT), so the scores of a set are encoded canonically and
//! [`Listpack::check_invariants`] can check them. Millisecond timestamps a
//! second apart cost 2 bytes of score instead of 8: 10 such members of 12
//! bytes took 220 bytes with 8-byte scores, 154 with these forms.
//!
//! There is no trailing length (listpack's `backlen`): scores depend on the
//! records before them, so a record is only decodable on a forward pass
//! anyway. Reverse iteration ([`Iter::prev`]) notes each record's member
//! and score in one forward pass and pops them.
//!
//! Like Redis, which stores listpack scores as strings and turns `-0` into
//! the integer 0, this encoding normalises negative zero to `0`. NaN is
//! never stored (the caller's `NotNan` rules it out).
//!
//! Member TTLs live beside the buffer, in a sparse table by rank (see
//! [`ttl`](super::ttl)) that every insertion and removal here keeps in step.

use std::cell::Cell;
use std::ops::Range;

use super::member::Member;
use super::ttl::{CompactDeadlines, NO_TTL};

/// Score forms, in the low three bits of a record's header. Each form
/// fixes how many score bytes follow the member ([`width`]), so the next
/// record's offset comes from the header alone and a scan's position chain
/// never waits on decoding a score.
const SAME: u8 = 0;
const DELTA1: u8 = 1;
const DELTA2: u8 = 2;
const DELTA4: u8 = 3;
const INT1: u8 = 4;
const INT4: u8 = 5;
const INT6: u8 = 6;
const F64: u8 = 7;

/// Score byte width of each form, a nibble per form (form 0 lowest):
/// SAME 0, DELTA 1/2/4, INT 1/4/6, F64 8.
const WIDTHS: u32 = 0x8641_4210;

#[inline(always)]
fn width(form: u8) -> usize {
    ((WIDTHS >> (u32::from(form) * 4)) & 0xf) as usize
}

/// Member lengths from this one on take a varint after the header byte.
const LONG: usize = 31;

/// Integer forms hold the 48-bit signed range: millisecond timestamps fit
/// in 6 bytes, and anything wider saves too little over the raw f64.
const INT_BITS: u32 = 48;

/// Writes `v` as LEB128 into `out`, returning the byte count.
fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut n = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[n] = b;
            return n + 1;
        }
        out[n] = b | 0x80;
        n += 1;
    }
}

/// Reads a LEB128 varint at `off`, returning (value, bytes used).
#[cold]
#[inline(never)]
fn get_varint(buf: &[u8], off: usize) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut shift = 0u32;
    let mut i = off;
    loop {
        let b = *buf.get(i)?;
        if shift >= u64::BITS {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return Some((v, i - off));
        }
        shift += 7;
    }
}

/// Writes a record header (member length and score form), returning its
/// byte count.
fn put_header(out: &mut [u8; 11], len: usize, form: u8) -> usize {
    if len < LONG {
        out[0] = ((len as u8) << 3) | form;
        return 1;
    }
    out[0] = ((LONG as u8) << 3) | form;
    1 + put_varint(&mut out[1..], (len - LONG) as u64)
}

/// The score as an integer, if an integer form can hold it exactly.
fn as_int(s: f64) -> Option<i64> {
    let i = s as i64;
    let lim = 1i64 << (INT_BITS - 1);
    (i as f64 == s && (-lim..lim).contains(&i)).then_some(i)
}

/// The little-endian bytes `buf[at..end]` (at most 8), for buffers too
/// short for [`decode_at`]'s 8-byte load.
#[cold]
#[inline(never)]
fn read_short(buf: &[u8], at: usize, end: usize) -> u64 {
    buf.get(at..end)
        .unwrap_or_default()
        .iter()
        .rev()
        .fold(0, |v, &b| (v << 8) | u64::from(b))
}

/// A score's form and the bytes that follow the member.
struct Enc {
    form: u8,
    len: usize,
    bytes: [u8; 8],
}

impl Enc {
    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The shortest form of `score` after a record scored `prev` (None for the
/// first record); on a tie DELTA loses to INT.
fn encode_score(score: f64, prev: Option<f64>) -> Enc {
    let mut e = Enc {
        form: SAME,
        len: 0,
        bytes: [0; 8],
    };
    if prev.is_some_and(|p| p.to_bits() == score.to_bits()) {
        return e;
    }
    let Some(i) = as_int(score) else {
        e.form = F64;
        e.bytes = score.to_le_bytes();
        e.len = 8;
        return e;
    };
    let (mut form, mut v) = if i8::try_from(i).is_ok() {
        (INT1, i as u64)
    } else if i32::try_from(i).is_ok() {
        (INT4, i as u64)
    } else {
        (INT6, i as u64)
    };
    if let Some(p) = prev.and_then(as_int)
        && p <= i
    {
        let d = (i - p) as u64;
        let dform = if d <= 0xff {
            DELTA1
        } else if d <= 0xffff {
            DELTA2
        } else if d <= 0xffff_ffff {
            DELTA4
        } else {
            F64
        };
        if width(dform) < width(form) {
            (form, v) = (dform, d);
        }
    }
    e.form = form;
    e.len = width(form);
    e.bytes = v.to_le_bytes();
    e
}

/// A decoded record: where it sits and what it holds.
#[derive(Clone, Copy)]
struct Rec<'a> {
    member: &'a [u8],
    sc: f64,
    start: usize,
    /// Where the score bytes start (just past the member).
    score_at: usize,
    end: usize,
}

impl Rec<'_> {
    #[inline(always)]
    fn score(&self) -> f64 {
        self.sc
    }
}

/// The member of the record at `off` and where it ends.
#[inline(always)]
fn member_span(buf: &[u8], off: usize) -> Option<(usize, usize)> {
    let b = *buf.get(off)?;
    let mut len = usize::from(b >> 3);
    let mut mstart = off + 1;
    if len == LONG {
        let (x, l) = get_varint(buf, mstart)?;
        len = len.checked_add(usize::try_from(x).ok()?)?;
        mstart += l;
    }
    Some((mstart, mstart.checked_add(len)?))
}

/// Per form, the mask of its score bytes.
const MASKS: [u64; 8] = [
    0,
    0xff,
    0xffff,
    0xffff_ffff,
    0xff,
    0xffff_ffff,
    0xffff_ffff_ffff,
    u64::MAX,
];

/// Per form, the shift that sign-extends its bytes (INT forms only).
const SEXT: [u32; 8] = [0, 0, 0, 0, 56, 32, 16, 0];

/// Decodes the record at `off`, whose predecessor is scored `prev`.
///
/// Scores are carried as f64 throughout: a DELTA adds an integer below
/// 2^32 to one below 2^47, and the sum (an integer form's value) is below
/// 2^53, so the float addition is exact. Every scan step runs this, so a
/// record costs one 8-byte load and table lookups, no branch on its form.
/// (The uncommon cases, long members and tiny buffers, are calls that
/// return scalars: a record merged from two paths went through memory and
/// stalled its reload on store forwarding.)
#[inline(always)]
fn decode_at(buf: &[u8], off: usize, prev: f64) -> Option<Rec<'_>> {
    let h = *buf.get(off)?;
    let (mstart, mend) = member_span(buf, off)?;
    let form = usize::from(h & 7);
    let end = mend.checked_add(width(h & 7))?;
    let n = buf.len();
    if end > n {
        return None;
    }
    // The score bytes from one load at `mend`, or, for the last records,
    // at the buffer's last 8 bytes shifted down (a SAME record ending the
    // buffer shifts by 64, which wraps to 0, and its mask clears it all).
    let raw = if n >= 8 {
        let at = mend.min(n - 8);
        let word = u64::from_le_bytes(buf.get(at..at + 8)?.try_into().ok()?);
        word.wrapping_shr(8 * (mend - at) as u32) & MASKS[form]
    } else {
        read_short(buf, mend, end)
    };
    let sh = SEXT[form];
    let int = ((raw << sh) as i64) >> sh;
    // SAME adds nothing to its predecessor, DELTA its bytes; INT stands
    // alone; F64 is the bits themselves.
    let base = if form < usize::from(INT1) { prev } else { 0.0 };
    let sum = base + int as f64;
    let sc = if form == usize::from(F64) {
        f64::from_bits(raw)
    } else {
        sum
    };
    Some(Rec {
        member: buf.get(mstart..mend)?,
        sc,
        start: off,
        score_at: mend,
        end,
    })
}

/// Replaces `buf[range]` by the concatenation of `parts`, growing the
/// buffer by exactly what it needs.
fn splice_exact(buf: &mut Vec<u8>, range: Range<usize>, parts: &[&[u8]]) {
    let (start, end, len) = (range.start, range.end, buf.len());
    let add: usize = parts.iter().map(|p| p.len()).sum();
    let new_end = start + add;
    if new_end > end {
        buf.reserve_exact(new_end - end);
        buf.resize(len + (new_end - end), 0);
    }
    buf.copy_within(end..len, new_end);
    buf.truncate(len + new_end - end);
    let mut w = start;
    for p in parts {
        buf[w..w + p.len()].copy_from_slice(p);
        w += p.len();
    }
}

/// Forward decoder: each record's score depends on the one before it.
#[derive(Clone)]
struct Records<'a> {
    buf: &'a [u8],
    off: usize,
    /// Score of the record before `off`.
    prev: f64,
}

impl<'a> Records<'a> {
    /// A decoder at the first record of `buf`, past its `head`-byte shared
    /// head.
    #[inline]
    fn start(buf: &'a [u8], head: usize) -> Self {
        Records {
            buf,
            off: head,
            prev: 0.0,
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Rec<'a>;
    // Every scan runs through here once per record; left out of line it
    // returns each record through memory (measured ~2x slower scans).
    #[inline(always)]
    fn next(&mut self) -> Option<Rec<'a>> {
        if self.off >= self.buf.len() {
            return None;
        }
        let r = decode_at(self.buf, self.off, self.prev)?;
        self.off = r.end;
        self.prev = r.sc;
        Some(r)
    }
}

/// (score, member) ordering with numeric score comparison (-0 == 0).
pub(crate) fn key_less(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && m1 < m2)
}

#[derive(Clone, Default)]
pub(crate) struct Listpack {
    /// The shared head (`buf[..shared]`), then the records.
    buf: Vec<u8>,
    len: u32,
    /// How many leading bytes every member shares, stored once at the
    /// front of `buf` rather than in each record (0 while empty).
    shared: u32,
    /// Member deadlines by rank; None while no member has one.
    ttl: Option<Box<CompactDeadlines>>,
}

/// Length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Listpack {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Listpack {
            buf: Vec::with_capacity(bytes),
            len: 0,
            shared: 0,
            ttl: None,
        }
    }

    /// The bytes every member starts with.
    #[inline]
    fn head(&self) -> &[u8] {
        &self.buf[..self.shared as usize]
    }

    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    pub(crate) fn mem_usage(&self) -> usize {
        self.buf.capacity()
            + self.ttl.as_ref().map_or(0, |t| {
                std::mem::size_of::<CompactDeadlines>() + t.heap_bytes()
            })
    }

    #[cfg(test)]
    pub(crate) fn max_member_len(&self) -> usize {
        let tail = self.records().map(|r| r.member.len()).max();
        tail.map_or(0, |t| t + self.shared as usize)
    }

    pub(crate) fn iter(&self) -> Iter<'_> {
        Iter::new(self.head(), self.records(), 0)
    }

    /// A decoder at the first record. Records hold only each member's
    /// tail, past the shared head.
    fn records(&self) -> Records<'_> {
        Records::start(&self.buf, self.shared as usize)
    }

    /// A decoder positioned at rank `rank` (at the end if past it).
    // Inlined so the decoder is built in registers: returned through
    // memory, its reload stalled on store forwarding.
    #[inline]
    fn records_from(&self, rank: usize) -> Records<'_> {
        let mut it = self.records();
        if rank >= self.len() {
            it.off = self.buf.len();
            return it;
        }
        for _ in 0..rank {
            if it.next().is_none() {
                break;
            }
        }
        it
    }

    fn find(&self, member: &[u8]) -> Option<(usize, Rec<'_>)> {
        let tail = member.strip_prefix(self.head())?;
        self.records().enumerate().find(|(_, r)| r.member == tail)
    }

    /// Shortens the shared head to its first `keep` bytes: the rest moves
    /// to the front of every record's tail. Rebuilt in one pass; a head
    /// only shrinks until the set empties, so this happens at most once per
    /// byte of it.
    #[cold]
    fn unshare(&mut self, keep: usize) {
        let old = std::mem::take(&mut self.buf);
        let moved = &old[keep..self.shared as usize];
        let records = || Records::start(&old, self.shared as usize);
        let mut hdr = [0; 11];
        // Exactly sized, as every other growth here: each record gains the
        // moved bytes, and its header may gain a length byte.
        let size = records().fold(keep, |n, r| {
            let hl = put_header(&mut hdr, moved.len() + r.member.len(), 0);
            n + hl + moved.len() + r.member.len() + (r.end - r.score_at)
        });
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&old[..keep]);
        for r in records() {
            let hl = put_header(&mut hdr, moved.len() + r.member.len(), old[r.start] & 7);
            out.extend_from_slice(&hdr[..hl]);
            out.extend_from_slice(moved);
            out.extend_from_slice(r.member);
            out.extend_from_slice(&old[r.score_at..r.end]);
        }
        self.buf = out;
        self.shared = keep as u32;
    }

    /// Forgets the shared head once the last member is gone, so the next
    /// first member sets a new one.
    fn reset_if_empty(&mut self) {
        if self.len == 0 {
            self.buf.clear();
            self.shared = 0;
        }
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|(_, r)| r.score())
    }

    pub(crate) fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        self.find(member).map(|(i, r)| (i, r.score()))
    }

    /// Re-encodes the score of `r` for a new predecessor scored `prev`,
    /// `shift` bytes earlier than where `r` was decoded.
    fn relink(&mut self, r: (usize, usize, usize, f64), shift: usize, prev: Option<f64>) {
        let (start, score_at, end, score) = r;
        let e = encode_score(score, prev);
        self.buf[start - shift] = (self.buf[start - shift] & !7) | e.form;
        splice_exact(&mut self.buf, score_at - shift..end - shift, &[e.bytes()]);
    }

    /// Inserts an element known to be absent, keeping the order; returns
    /// its rank.
    pub(crate) fn insert_new(&mut self, member: &[u8], score: f64) -> usize {
        let score = if score == 0.0 { 0.0 } else { score };
        if self.len == 0 {
            // A lone member is all head; the next one that differs cuts it
            // back to what they share. (An empty set's buffer is empty:
            // `reset_if_empty`.)
            self.buf.extend_from_slice(member);
            self.shared = member.len() as u32;
        } else if !member.starts_with(self.head()) {
            self.unshare(common_prefix(self.head(), member));
        }
        let member = &member[self.shared as usize..];
        let mut rank = 0;
        let mut prev = None;
        let mut next = None;
        for r in self.records() {
            if key_less(score, member, r.score(), r.member) {
                next = Some((r.start, r.score_at, r.end, r.score()));
                break;
            }
            prev = Some(r.score());
            rank += 1;
        }
        let at = next.map_or(self.buf.len(), |n| n.0);
        let e = encode_score(score, prev);
        let mut hdr = [0; 11];
        let hl = put_header(&mut hdr, member.len(), e.form);
        // One exact growth for the new record and its successor's new
        // score form: a doubling Vec would waste ~25% on the many small
        // sets this encoding exists for; the realloc is cheap at this size.
        let mut grow = hl + member.len() + e.len;
        if let Some(n) = next {
            grow += encode_score(n.3, Some(score)).len.saturating_sub(n.2 - n.1);
            self.buf.reserve_exact(grow);
            self.relink(n, 0, Some(score));
        } else {
            self.buf.reserve_exact(grow);
        }
        splice_exact(&mut self.buf, at..at, &[&hdr[..hl], member, e.bytes()]);
        self.len += 1;
        let len = self.len();
        if let Some(t) = &mut self.ttl {
            t.shift_insert(rank, len);
        }
        rank
    }

    pub(crate) fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let member = member.strip_prefix(self.head())?;
        let mut recs = self.records();
        let mut prev = None;
        let mut i = 0;
        let r = loop {
            let r = recs.next()?;
            if r.member == member {
                break r;
            }
            prev = Some(r.score());
            i += 1;
        };
        let (start, end, score) = (r.start, r.end, r.score());
        let next = recs.next().map(|n| (n.start, n.score_at, n.end, n.score()));
        self.cut(start..end, next, prev);
        self.len -= 1;
        self.drop_deadlines(i, i + 1);
        self.reset_if_empty();
        self.shrink_if_sparse();
        Some(score)
    }

    /// Removes the records in `range`, then re-encodes the one that
    /// followed (`next`, as decoded before the cut) for its new predecessor
    /// `prev`. Cutting first means the re-encoding, which may grow by a few
    /// bytes, never reallocates.
    fn cut(
        &mut self,
        range: Range<usize>,
        next: Option<(usize, usize, usize, f64)>,
        prev: Option<f64>,
    ) {
        let gone = range.end - range.start;
        splice_exact(&mut self.buf, range, &[]);
        if let Some(n) = next {
            self.relink(n, gone, prev);
        }
    }

    /// Changes a present member's score, keeping its deadline (ZINCRBY).
    pub(crate) fn update(&mut self, member: &[u8], score: f64) {
        let at = self.expire_at(member).unwrap_or(NO_TTL);
        if self.remove(member).is_some() {
            let rank = self.insert_new(member, score);
            self.set_deadline(rank, at);
        }
    }

    /// Drops the deadlines of ranks `from..to`, just removed.
    fn drop_deadlines(&mut self, from: usize, to: usize) {
        if let Some(t) = &mut self.ttl {
            t.remove_range(from, to);
            if t.is_empty() {
                self.ttl = None;
            }
        }
    }

    /// Sets (or with [`NO_TTL`] clears) the deadline of rank `rank`.
    pub(crate) fn set_deadline(&mut self, rank: usize, at: u64) {
        if at == NO_TTL {
            if let Some(t) = &mut self.ttl {
                t.clear(rank);
                if t.is_empty() {
                    self.ttl = None;
                }
            }
        } else {
            let len = self.len();
            self.ttl.get_or_insert_default().set(rank, at, len);
        }
    }

    /// `member`'s deadline ([`NO_TTL`] if none), None if absent.
    pub(crate) fn expire_at(&self, member: &[u8]) -> Option<u64> {
        let (i, _) = self.find(member)?;
        Some(self.ttl.as_ref().map_or(NO_TTL, |t| t.get(i)))
    }

    /// Sets or clears a present member's deadline; false if absent.
    pub(crate) fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        let Some((i, _)) = self.find(member) else {
            return false;
        };
        self.set_deadline(i, at);
        true
    }

    /// The earliest member deadline (exact), None if none has one.
    pub(crate) fn min_deadline(&self) -> Option<u64> {
        self.ttl.as_ref().map(|t| t.min())
    }

    pub(crate) fn ttl_count(&self) -> usize {
        self.ttl.as_ref().map_or(0, |t| t.len())
    }

    /// Visits (rank, deadline) of each member with a TTL, in rank order.
    pub(crate) fn for_each_deadline(&self, f: impl FnMut(usize, u64)) {
        if let Some(t) = &self.ttl {
            t.for_each(f);
        }
    }

    /// Whether `f(score, deadline)` holds for every element.
    pub(crate) fn all_with_deadlines(&self, f: impl Fn(f64, u64) -> bool) -> bool {
        let t = self.ttl.as_deref();
        self.records()
            .enumerate()
            .all(|(i, r)| f(r.score(), t.map_or(NO_TTL, |t| t.get(i))))
    }

    /// Removes up to `max` members due at `now`, reporting them in rank
    /// order; returns how many.
    pub(crate) fn expire_members(
        &mut self,
        now: u64,
        max: usize,
        mut removed: impl FnMut(&[u8], f64),
    ) -> usize {
        let mut due = Vec::new();
        if let Some(t) = &self.ttl {
            t.for_each(|i, at| {
                if at <= now && due.len() < max {
                    due.push(i);
                }
            });
        }
        let mut gone = Vec::with_capacity(due.len());
        // Highest rank first, so the lower ranks stay where they are.
        for &i in due.iter().rev() {
            self.remove_rank_range(i, 1, |m, s| gone.push((m.to_vec(), s)));
        }
        for (m, s) in gone.iter().rev() {
            removed(m, *s);
        }
        gone.len()
    }

    fn shrink_if_sparse(&mut self) {
        if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to_fit();
        }
    }

    /// Number of leading elements for which `before` holds (`before` must
    /// be monotonic: true then false along the order).
    pub(crate) fn count_while(&self, before: impl Fn(f64, Member<'_>) -> bool) -> usize {
        let head = self.head();
        self.records()
            .take_while(|r| before(r.score(), Member::new(head, r.member)))
            .count()
    }

    /// [`count_while`](Self::count_while) for two predicates in one scan:
    /// the ranks where a range starts and ends.
    pub(crate) fn count_while2(
        &self,
        lo: impl Fn(f64, Member<'_>) -> bool,
        hi: impl Fn(f64, Member<'_>) -> bool,
    ) -> (usize, usize) {
        let (mut nlo, mut nhi) = (0, 0);
        let (mut lo_on, mut hi_on) = (true, true);
        let head = self.head();
        for r in self.records() {
            let m = Member::new(head, r.member);
            lo_on = lo_on && lo(r.score(), m);
            hi_on = hi_on && hi(r.score(), m);
            if !(lo_on || hi_on) {
                break;
            }
            nlo += usize::from(lo_on);
            nhi += usize::from(hi_on);
        }
        (nlo, nhi)
    }

    /// Iterator positioned at rank `rank`: `next()` walks upward from it and
    /// `next_back()` walks downward from `rank - 1`.
    #[inline]
    pub(crate) fn iter_at(&self, rank: usize) -> Iter<'_> {
        Iter::new(self.head(), self.records_from(rank), rank.min(self.len()))
    }

    /// Iterator for `prev()` only, from rank `rank` down: unlike
    /// [`iter_at`](Self::iter_at) it does not walk to `rank` first, as the
    /// first `prev()` decodes those records anyway.
    #[inline]
    pub(crate) fn iter_back(&self, rank: usize) -> Iter<'_> {
        let mut fwd = self.records();
        fwd.off = self.buf.len();
        Iter::new(self.head(), fwd, rank.min(self.len()))
    }

    pub(crate) fn get_by_rank(&self, rank: usize) -> Option<(Member<'_>, f64)> {
        let head = self.head();
        self.records_from(rank)
            .next()
            .map(|r| (Member::new(head, r.member), r.score()))
    }

    /// Removes `count` elements starting at `start`, reporting each.
    pub(crate) fn remove_rank_range(
        &mut self,
        start: usize,
        count: usize,
        mut on_removed: impl FnMut(Member<'_>, f64),
    ) -> usize {
        let head = self.head();
        let mut recs = self.records_from(start);
        let (from, prev) = (recs.off, (start > 0).then_some(recs.prev));
        let mut n = 0;
        while n < count {
            let Some(r) = recs.next() else {
                break;
            };
            on_removed(Member::new(head, r.member), r.score());
            n += 1;
        }
        let to = recs.off;
        let next = recs.next().map(|r| (r.start, r.score_at, r.end, r.score()));
        self.cut(from..to, next, prev);
        self.len -= n as u32;
        self.drop_deadlines(start, start + n);
        self.reset_if_empty();
        self.shrink_if_sparse();
        n
    }

    /// Debug check: records decode back to back, sorted, each score in its
    /// canonical form, count matches.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        if self.shared as usize > self.buf.len() || (self.len == 0) != self.buf.is_empty() {
            return Err(format!(
                "shared head {} in {} bytes",
                self.shared,
                self.buf.len()
            ));
        }
        let mut n = 0usize;
        let mut prev: Option<(f64, &[u8])> = None;
        let mut recs = self.records();
        while recs.off < self.buf.len() {
            let r = recs.next().ok_or("undecodable record")?;
            if r.score().is_nan() {
                return Err("NaN stored".into());
            }
            if r.score().to_bits() == (-0.0f64).to_bits() {
                return Err("-0 stored".into());
            }
            if let Some((ps, pm)) = prev
                && !key_less(ps, pm, r.score(), r.member)
            {
                return Err("listpack out of order".into());
            }
            let e = encode_score(r.score(), prev.map(|p| p.0));
            if self.buf[r.start] & 7 != e.form || &self.buf[r.score_at..r.end] != e.bytes() {
                return Err(format!("record {n} not in its shortest score form"));
            }
            prev = Some((r.score(), r.member));
            n += 1;
        }
        if n != self.len() {
            return Err(format!("len {} but {} records", self.len, n));
        }
        if let Some(t) = &self.ttl {
            if t.is_empty() {
                return Err("empty deadline table kept".into());
            }
            t.check(n)?;
        }
        Ok(())
    }
}

/// Double-ended cursor over the records: `next()` decodes forward from its
/// position, `prev()` yields the records before it, last first.
#[derive(Clone)]
pub(crate) struct Iter<'a> {
    /// The members' shared head.
    head: &'a [u8],
    fwd: Records<'a>,
    /// The reverse cursor: how many records `prev()` has yet to collect
    /// into `behind` (0 once it has).
    back: usize,
    /// Member span and score of the first `back` records, filled by one
    /// forward pass on the first `prev()` (a record's score needs its
    /// predecessors, so none is decodable backwards); popped from the end,
    /// so each step back is a pop and a slice.
    behind: Vec<Behind>,
}

/// A record as [`Iter::prev`] keeps it: where its member starts and ends,
/// and its score.
#[derive(Clone, Copy)]
struct Behind {
    mstart: usize,
    mend: usize,
    score: f64,
}

thread_local! {
    /// The last finished reverse cursor's `behind`, reused by the next one
    /// so a reverse range allocates nothing once the thread is warm.
    static SPARE: Cell<Vec<Behind>> = const { Cell::new(Vec::new()) };
}

/// Largest `behind` (in records) kept for reuse; a bigger one, from a set
/// under a raised `zset-max-listpack-entries`, is freed instead.
const SPARE_MAX: usize = 1024;

impl<'a> Iterator for Iter<'a> {
    type Item = (Member<'a>, f64);
    // Out of line and small, a leaf like a plain record decoder: inlined,
    // it made every range cursor's step too big to inline into its caller.
    #[inline(never)]
    fn next(&mut self) -> Option<Self::Item> {
        let head = self.head;
        self.fwd
            .next()
            .map(|r| (Member::new(head, r.member), r.score()))
    }
}

impl<'a> Iter<'a> {
    #[inline]
    fn new(head: &'a [u8], fwd: Records<'a>, back: usize) -> Self {
        Iter {
            head,
            back,
            fwd,
            behind: Vec::new(),
        }
    }

    /// Steps backwards from the `back` cursor (independent of `next`).
    #[inline]
    pub(crate) fn prev(&mut self) -> Option<(Member<'a>, f64)> {
        if self.behind.is_empty() {
            if self.back == 0 {
                return None;
            }
            self.fill_behind();
        }
        let b = self.behind.pop()?;
        let tail = self.fwd.buf.get(b.mstart..b.mend)?;
        Some((Member::new(self.head, tail), b.score))
    }

    /// Decodes the first `back` records into `behind`, in one pass.
    #[inline(never)]
    fn fill_behind(&mut self) {
        let mut v = SPARE.take();
        v.clear();
        v.reserve(self.back);
        let recs = Records::start(self.fwd.buf, self.head.len());
        for r in recs.take(self.back) {
            v.push(Behind {
                mstart: r.score_at - r.member.len(),
                mend: r.score_at,
                score: r.sc,
            });
        }
        self.behind = v;
        self.back = 0;
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.behind);
        if v.capacity() > 0 && v.capacity() <= SPARE_MAX {
            SPARE.set(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const P53: f64 = 9007199254740992.0;

    /// Every element, forward.
    fn all(lp: &Listpack) -> Vec<(Vec<u8>, f64)> {
        lp.iter().map(|(m, s)| (m.to_vec(), s)).collect()
    }

    /// Form kinds, for tests that care about the kind, not the width.
    const DELTA: u8 = DELTA1;
    const INT: u8 = INT4;

    /// The score form kind of each record, in order: SAME, DELTA (any
    /// width), INT (any width) or F64.
    fn forms(lp: &Listpack) -> Vec<u8> {
        lp.records()
            .map(|r| match lp.buf[r.start] & 7 {
                DELTA1..=DELTA4 => DELTA,
                INT1..=INT6 => INT,
                f => f,
            })
            .collect()
    }

    /// Elements walked backwards from rank `rank` (exclusive).
    fn back_from(lp: &Listpack, rank: usize) -> Vec<(Vec<u8>, f64)> {
        let mut it = lp.iter_at(rank);
        std::iter::from_fn(|| it.prev())
            .map(|(m, s)| (m.to_vec(), s))
            .collect()
    }

    fn check(lp: &Listpack) {
        if let Err(e) = lp.check_invariants() {
            panic!("{e}");
        }
    }

    #[test]
    fn scores_round_trip_bit_exactly() {
        let scores = [
            P53,
            P53 - 1.0,
            -P53,
            -P53 + 1.0,
            P53 + 2.0,
            -P53 - 2.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.5,
            -1.25,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            1e300,
            1_764_000_000_000.0,
            1_764_000_000_001.5,
            -1.0,
            1.0,
        ];
        let mut lp = Listpack::new();
        for (i, &s) in scores.iter().enumerate() {
            lp.insert_new(format!("m{i}").as_bytes(), s);
            check(&lp);
        }
        for (i, &s) in scores.iter().enumerate() {
            let got = lp.score(format!("m{i}").as_bytes()).unwrap();
            assert_eq!(got.to_bits(), s.to_bits(), "m{i}");
        }
        let back: Vec<_> = back_from(&lp, lp.len()).into_iter().rev().collect();
        assert_eq!(back, all(&lp));
    }

    #[test]
    fn integer_forms_stop_at_two_to_the_47() {
        let p47 = (1u64 << 47) as f64;
        for (s, form) in [
            (p47 - 1.0, INT6),
            (-p47, INT6),
            (p47, F64),
            (-p47 - 1.0, F64),
            (P53, F64),
            (-P53, F64),
            (2147483647.0, INT4),
            (-2147483648.0, INT4),
            (2147483648.0, INT6),
            (127.0, INT1),
            (-128.0, INT1),
            (128.0, INT4),
            (0.5, F64),
            (f64::INFINITY, F64),
            (0.0, INT1),
        ] {
            let mut lp = Listpack::new();
            lp.insert_new(b"a", s);
            assert_eq!(lp.buf[lp.shared as usize] & 7, form, "{s}");
            assert_eq!(lp.score(b"a").map(f64::to_bits), Some(s.to_bits()));
        }
        // The widest delta: from -2^53 to 2^53.
        let mut lp = Listpack::new();
        lp.insert_new(b"a", -P53);
        lp.insert_new(b"b", P53);
        check(&lp);
        assert_eq!(all(&lp), [(b"a".to_vec(), -P53), (b"b".to_vec(), P53)]);
    }

    #[test]
    fn negative_zero_is_stored_as_zero() {
        let mut lp = Listpack::new();
        lp.insert_new(b"z", -0.0);
        lp.insert_new(b"y", 0.0);
        check(&lp);
        for m in [&b"y"[..], b"z"] {
            assert_eq!(lp.score(m).map(f64::to_bits), Some(0.0f64.to_bits()));
        }
        // Equal scores share one: the second record has no score bytes.
        assert_eq!(forms(&lp), [INT, SAME]);
    }

    #[test]
    fn millisecond_timestamps_take_two_bytes_each() {
        // Ten 12-byte members a second apart, added one by one (the
        // heartbeat pattern): 55 bytes and no slack, the members' shared
        // `member00000` stored once.
        let mut lp = Listpack::new();
        for m in 0..10u64 {
            let s = 1_764_000_000_000 + m * 1000 + 7;
            lp.insert_new(format!("member{m:06}").as_bytes(), s as f64);
        }
        check(&lp);
        assert_eq!(
            forms(&lp),
            [
                INT, DELTA, DELTA, DELTA, DELTA, DELTA, DELTA, DELTA, DELTA, DELTA
            ]
        );
        assert_eq!(lp.head(), b"member00000");
        assert_eq!(lp.buf.len(), 11 + (2 + 6) + 9 * (2 + 2));
        assert_eq!(lp.buf.capacity(), lp.buf.len());
    }

    #[test]
    fn deltas_follow_insertions_and_removals_in_the_middle() {
        let mut lp = Listpack::new();
        for (m, s) in [("a", 1000.0), ("c", 1030.0), ("e", 1050.0)] {
            lp.insert_new(m.as_bytes(), s);
        }
        assert_eq!(forms(&lp), [INT, DELTA, DELTA]);
        // A float between two integers: the next integer loses its delta
        // base and goes back to INT.
        lp.insert_new(b"b", 1015.5);
        check(&lp);
        assert_eq!(forms(&lp), [INT, F64, INT, DELTA]);
        // An integer in the middle: its successor's delta shrinks.
        lp.insert_new(b"d", 1031.0);
        check(&lp);
        assert_eq!(forms(&lp), [INT, F64, INT, DELTA, DELTA]);
        assert_eq!(lp.score(b"e"), Some(1050.0));
        // Removing the float restores the chain.
        assert_eq!(lp.remove(b"b"), Some(1015.5));
        check(&lp);
        assert_eq!(forms(&lp), [INT, DELTA, DELTA, DELTA]);
        // Removing the head turns its successor absolute.
        assert_eq!(lp.remove(b"a"), Some(1000.0));
        check(&lp);
        assert_eq!(forms(&lp), [INT, DELTA, DELTA]);
        assert_eq!(lp.remove_rank_range(0, 2, |_, _| {}), 2);
        check(&lp);
        assert_eq!(all(&lp), [(b"e".to_vec(), 1050.0)]);
        assert_eq!(forms(&lp), [INT]);
        // A big negative then a big positive integer: INT beats DELTA.
        let mut lp = Listpack::new();
        lp.insert_new(b"n", -1e12);
        lp.insert_new(b"p", 3.0);
        check(&lp);
        assert_eq!(forms(&lp), [INT, INT]);
        // SAME after a float, then a float after SAME.
        lp.insert_new(b"q", 3.0);
        lp.insert_new(b"r", 3.5);
        lp.insert_new(b"s", 3.5);
        check(&lp);
        assert_eq!(forms(&lp), [INT, INT, SAME, F64, SAME]);
        assert_eq!(lp.remove(b"r"), Some(3.5));
        check(&lp);
        assert_eq!(forms(&lp), [INT, INT, SAME, F64]);
    }

    #[test]
    fn empty_and_long_members() {
        let mut lp = Listpack::new();
        let long = vec![b'x'; 64];
        let mid = vec![b'y'; 31];
        let wide = vec![b'w'; 32];
        lp.insert_new(b"", 2.0);
        lp.insert_new(&long, 1.0);
        lp.insert_new(&mid, 2.0);
        lp.insert_new(&wide, 2.5);
        check(&lp);
        assert_eq!(
            all(&lp),
            [
                (long.clone(), 1.0),
                (Vec::new(), 2.0),
                (mid.clone(), 2.0),
                (wide.clone(), 2.5)
            ]
        );
        assert_eq!(lp.rank(b""), Some((1, 2.0)));
        assert_eq!(lp.max_member_len(), 64);
        let back: Vec<_> = back_from(&lp, 4).into_iter().rev().collect();
        assert_eq!(back, all(&lp));
        assert_eq!(lp.remove(b""), Some(2.0));
        assert_eq!(lp.remove(&long), Some(1.0));
        check(&lp);
        assert_eq!(all(&lp), [(mid, 2.0), (wide, 2.5)]);
    }

    #[test]
    fn members_share_one_head() {
        let mut lp = Listpack::new();
        // A lone member is all head.
        lp.insert_new(b"user:1001", 5.0);
        check(&lp);
        assert_eq!(lp.head(), b"user:1001");
        assert_eq!(lp.buf.len(), 9 + 2);
        // The next one cuts it back to what they share.
        lp.insert_new(b"user:2002", 6.0);
        lp.insert_new(b"user:1003", 4.0);
        check(&lp);
        assert_eq!(lp.head(), b"user:");
        assert_eq!(lp.buf.capacity(), lp.buf.len());
        assert_eq!(
            all(&lp),
            [
                (b"user:1003".to_vec(), 4.0),
                (b"user:1001".to_vec(), 5.0),
                (b"user:2002".to_vec(), 6.0)
            ]
        );
        // Lookups of what is not there, a prefix of the head among them.
        for absent in [&b"user"[..], b"user:", b"user:1", b"x", b""] {
            assert_eq!(lp.score(absent), None, "{absent:?}");
            assert_eq!(lp.remove(absent), None);
        }
        // A member shorter than the head: an empty tail for it, every
        // other tail one byte longer.
        lp.insert_new(b"use", 7.0);
        check(&lp);
        assert_eq!(lp.head(), b"use");
        assert_eq!(lp.rank(b"use"), Some((3, 7.0)));
        assert_eq!(
            lp.get_by_rank(3).map(|(m, _)| m.to_vec()),
            Some(b"use".to_vec())
        );
        // Tails that grow past 30 bytes take a two-byte header.
        let long = [b'u', b'v'].repeat(20);
        lp.insert_new(&long, 8.0);
        check(&lp);
        assert_eq!(lp.head(), b"u");
        assert_eq!(lp.max_member_len(), 40);
        let back: Vec<_> = back_from(&lp, lp.len()).into_iter().rev().collect();
        assert_eq!(back, all(&lp));
        // Emptied, the head goes too; the next first member sets a new one.
        assert_eq!(lp.remove_rank_range(0, 4, |_, _| {}), 4);
        assert_eq!(lp.remove(&long), Some(8.0));
        check(&lp);
        assert!(lp.buf.is_empty());
        lp.insert_new(b"job:1", 1.0);
        check(&lp);
        assert_eq!(lp.head(), b"job:1");
    }

    #[test]
    fn reverse_iteration_from_every_rank() {
        // Mixed forms, up to past the default entry limit.
        for n in [0, 1, 2, 31, 32, 33, 130] {
            let mut lp = Listpack::new();
            for i in 0..n {
                let s = if i % 7 == 3 {
                    i as f64 + 0.25
                } else {
                    (i / 2) as f64
                };
                lp.insert_new(format!("m{i:03}").as_bytes(), s);
            }
            check(&lp);
            let fwd = all(&lp);
            for rank in 0..=n + 1 {
                let mut want = fwd[..rank.min(n)].to_vec();
                want.reverse();
                assert_eq!(back_from(&lp, rank), want, "n {n} rank {rank}");
                let ahead: Vec<_> = lp.iter_at(rank).map(|(m, s)| (m.to_vec(), s)).collect();
                assert_eq!(ahead, fwd[rank.min(n)..].to_vec());
            }
        }
    }

    fn score_strat() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-20i64..20).prop_map(|i| i as f64),
            (0u64..5000).prop_map(|i| (1_764_000_000_000 + i * 997) as f64),
            (-3i64..3).prop_map(|i| P53 + i as f64 * 2.0),
            (-3i64..3).prop_map(|i| -P53 + i as f64 * 2.0),
            (-40i32..40).prop_map(|i| f64::from(i) / 4.0),
            Just(-0.0),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(1e300),
            Just(5e-324),
        ]
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(usize, f64),
        Remove(usize),
        RemoveRanks(usize, usize),
    }

    fn op_strat() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0usize..40, score_strat()).prop_map(|(m, s)| Op::Add(m, s)),
            2 => (0usize..40).prop_map(Op::Remove),
            1 => (0usize..45, 0usize..4).prop_map(|(a, n)| Op::RemoveRanks(a, n)),
        ]
    }

    fn member(i: usize) -> Vec<u8> {
        // Lengths 0..=64, so headers of one and two bytes both occur;
        // a third of the members share a 29-byte namespace, so a set's
        // shared head forms, is cut back, and moves tails across the
        // two-byte header length.
        let n = (i * 13) % 65;
        let mut m = format!("{i:02}").into_bytes();
        m.resize(n.max(2), b'.');
        if i.is_multiple_of(3) {
            m.splice(0..0, *b"ns:00000000000000000000000000:");
        }
        if i == 39 {
            m.clear();
        }
        m
    }

    /// The model's elements in (score, member) order.
    fn sorted(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(Vec<u8>, f64)> {
        let mut v: Vec<_> = model.iter().map(|(m, s)| (m.clone(), *s)).collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        /// Every operation against a BTreeMap model: contents, order,
        /// bit-exact scores, ranks, both iteration directions, and the
        /// canonical encoding after each step.
        #[test]
        fn matches_a_btreemap(ops in prop::collection::vec(op_strat(), 1..150), probe in 0usize..50) {
            let mut lp = Listpack::new();
            let mut model: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Add(i, s) => {
                        let m = member(i);
                        let s = if s == 0.0 { 0.0 } else { s };
                        if model.contains_key(&m) {
                            lp.update(&m, s);
                        } else {
                            lp.insert_new(&m, s);
                        }
                        model.insert(m, s);
                    }
                    Op::Remove(i) => {
                        let m = member(i);
                        prop_assert_eq!(lp.remove(&m), model.remove(&m));
                    }
                    Op::RemoveRanks(start, n) => {
                        let want: Vec<_> = sorted(&model).into_iter().skip(start).take(n).collect();
                        let mut got = Vec::new();
                        lp.remove_rank_range(start, n, |m, s| got.push((m.to_vec(), s)));
                        for (m, _) in &want {
                            model.remove(m);
                        }
                        prop_assert_eq!(got, want);
                    }
                }
                if let Err(e) = lp.check_invariants() {
                    return Err(TestCaseError::fail(e));
                }
                let want = sorted(&model);
                prop_assert_eq!(lp.len(), want.len());
                let got = all(&lp);
                prop_assert_eq!(
                    got.iter().map(|(m, s)| (m, s.to_bits())).collect::<Vec<_>>(),
                    want.iter().map(|(m, s)| (m, s.to_bits())).collect::<Vec<_>>()
                );
                let rank = probe.min(want.len());
                let mut rev = want[..rank].to_vec();
                rev.reverse();
                prop_assert_eq!(back_from(&lp, rank), rev);
                if let Some((m, s)) = want.get(rank) {
                    prop_assert_eq!(lp.rank(m), Some((rank, *s)));
                    prop_assert_eq!(lp.get_by_rank(rank), Some((m[..].into(), *s)));
                }
            }
        }
    }
}
