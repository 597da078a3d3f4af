//! The compact encoding: every element of a small sorted set in one buffer.
//!
//! Small sets are by far the most numerous, so this encoding optimises for
//! bytes rather than asymptotics, exactly like Redis's listpack: a single
//! `Vec<u8>` of records sorted by (score, member), no per-element allocation
//! and no hash index. Every operation is a linear scan, which is cheap at the
//! configured sizes (default <= 128 entries of <= 64 bytes).
//!
//! Record layout: `varint(len) member score(f64 LE) rev_varint(len)`. The
//! trailing reversed length lets iteration run backwards (ZREVRANGE) without
//! an offset table, the same trick as listpack's `backlen`.
//!
//! Like Redis, which stores listpack scores as strings and turns `-0` into
//! the integer 0, this encoding normalises negative zero to `0`.
//!
//! Member TTLs live beside the buffer, in a sparse table by rank (see
//! [`ttl`](super::ttl)) that every insertion and removal here keeps in step.

use super::ttl::{CompactDeadlines, NO_TTL};

/// Appends `v` as LEB128.
fn put_varint(out: &mut Vec<u8>, mut v: usize) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn varint_len(mut v: usize) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a LEB128 varint at `off`, returning (value, bytes used).
fn get_varint(buf: &[u8], off: usize) -> Option<(usize, usize)> {
    let mut v: usize = 0;
    let mut shift = 0u32;
    let mut i = off;
    loop {
        let b = *buf.get(i)?;
        if shift >= usize::BITS {
            return None;
        }
        v |= usize::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return Some((v, i - off));
        }
        shift += 7;
    }
}

/// Reads the reversed varint that ends just before `end`.
fn get_rev_varint(buf: &[u8], end: usize) -> Option<(usize, usize)> {
    let mut v: usize = 0;
    let mut shift = 0u32;
    let mut i = end;
    loop {
        i = i.checked_sub(1)?;
        let b = *buf.get(i)?;
        if shift >= usize::BITS {
            return None;
        }
        v |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some((v, end - i));
        }
        shift += 7;
    }
}

fn encode_record(member: &[u8], score: f64) -> Vec<u8> {
    let n = member.len();
    let vl = varint_len(n);
    let mut rec = Vec::with_capacity(2 * vl + n + 8);
    put_varint(&mut rec, n);
    rec.extend_from_slice(member);
    rec.extend_from_slice(&score.to_le_bytes());
    let start = rec.len();
    put_varint(&mut rec, n);
    rec[start..].reverse();
    rec
}

/// A decoded record: where it sits and what it holds.
#[derive(Clone, Copy)]
pub struct Rec<'a> {
    pub member: &'a [u8],
    pub score: f64,
    pub start: usize,
    pub end: usize,
}

fn decode_at(buf: &[u8], off: usize) -> Option<Rec<'_>> {
    let (n, vl) = get_varint(buf, off)?;
    let mstart = off + vl;
    let mend = mstart.checked_add(n)?;
    let member = buf.get(mstart..mend)?;
    let sbytes: [u8; 8] = buf.get(mend..mend + 8)?.try_into().ok()?;
    let score = f64::from_le_bytes(sbytes);
    Some(Rec {
        member,
        score,
        start: off,
        end: mend + 8 + vl,
    })
}

fn decode_before(buf: &[u8], end: usize) -> Option<Rec<'_>> {
    let (n, vl) = get_rev_varint(buf, end)?;
    let send = end - vl;
    let mend = send.checked_sub(8)?;
    let mstart = mend.checked_sub(n)?;
    let start = mstart.checked_sub(vl)?;
    let sbytes: [u8; 8] = buf.get(mend..send)?.try_into().ok()?;
    Some(Rec {
        member: buf.get(mstart..mend)?,
        score: f64::from_le_bytes(sbytes),
        start,
        end,
    })
}

/// (score, member) ordering with numeric score comparison (-0 == 0).
pub fn key_less(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && m1 < m2)
}

#[derive(Clone, Default)]
pub struct Listpack {
    buf: Vec<u8>,
    len: u32,
    /// Member deadlines by rank; None while no member has one.
    ttl: Option<Box<CompactDeadlines>>,
}

impl Listpack {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(bytes: usize) -> Self {
        Listpack {
            buf: Vec::with_capacity(bytes),
            len: 0,
            ttl: None,
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn mem_usage(&self) -> usize {
        self.buf.capacity()
            + self.ttl.as_ref().map_or(0, |t| {
                std::mem::size_of::<CompactDeadlines>() + t.heap_bytes()
            })
    }

    pub fn max_member_len(&self) -> usize {
        self.iter().map(|(m, _)| m.len()).max().unwrap_or(0)
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            front: 0,
            back: self.buf.len(),
        }
    }

    fn records(&self) -> impl Iterator<Item = Rec<'_>> {
        let buf = &self.buf[..];
        let mut off = 0;
        std::iter::from_fn(move || {
            if off >= buf.len() {
                return None;
            }
            let r = decode_at(buf, off)?;
            off = r.end;
            Some(r)
        })
    }

    fn find(&self, member: &[u8]) -> Option<(usize, Rec<'_>)> {
        self.records().enumerate().find(|(_, r)| r.member == member)
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|(_, r)| r.score)
    }

    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        self.find(member).map(|(i, r)| (i, r.score))
    }

    /// Inserts an element known to be absent, keeping the order; returns
    /// its rank.
    pub fn insert_new(&mut self, member: &[u8], score: f64) -> usize {
        let score = if score == 0.0 { 0.0 } else { score };
        let (rank, at) = self
            .records()
            .enumerate()
            .find(|(_, r)| key_less(score, member, r.score, r.member))
            .map_or((self.len(), self.buf.len()), |(i, r)| (i, r.start));
        let rec = encode_record(member, score);
        // Exact growth: a doubling Vec would waste ~25% on the many small
        // sets this encoding exists for; the realloc is cheap at this size.
        self.buf.reserve_exact(rec.len());
        self.buf.splice(at..at, rec);
        self.len += 1;
        let len = self.len();
        if let Some(t) = &mut self.ttl {
            t.shift_insert(rank, len);
        }
        rank
    }

    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let (i, r) = self.find(member)?;
        let (start, end, score) = (r.start, r.end, r.score);
        self.buf.drain(start..end);
        self.len -= 1;
        self.drop_deadlines(i, i + 1);
        self.shrink_if_sparse();
        Some(score)
    }

    /// Changes a present member's score, keeping its deadline (ZINCRBY).
    pub fn update(&mut self, member: &[u8], score: f64) {
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
    pub fn set_deadline(&mut self, rank: usize, at: u64) {
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
    pub fn expire_at(&self, member: &[u8]) -> Option<u64> {
        let (i, _) = self.find(member)?;
        Some(self.ttl.as_ref().map_or(NO_TTL, |t| t.get(i)))
    }

    /// Sets or clears a present member's deadline; false if absent.
    pub fn set_expire(&mut self, member: &[u8], at: u64) -> bool {
        let Some((i, _)) = self.find(member) else {
            return false;
        };
        self.set_deadline(i, at);
        true
    }

    /// The earliest member deadline (exact), None if none has one.
    pub fn min_deadline(&self) -> Option<u64> {
        self.ttl.as_ref().map(|t| t.min())
    }

    pub fn ttl_count(&self) -> usize {
        self.ttl.as_ref().map_or(0, |t| t.len())
    }

    /// Visits (rank, deadline) of each member with a TTL, in rank order.
    pub fn for_each_deadline(&self, f: impl FnMut(usize, u64)) {
        if let Some(t) = &self.ttl {
            t.for_each(f);
        }
    }

    /// Whether `f(score, deadline)` holds for every element.
    pub fn all_with_deadlines(&self, f: impl Fn(f64, u64) -> bool) -> bool {
        let t = self.ttl.as_deref();
        self.iter()
            .enumerate()
            .all(|(i, (_, s))| f(s, t.map_or(NO_TTL, |t| t.get(i))))
    }

    /// Removes up to `max` members due at `now`, reporting them in rank
    /// order; returns how many.
    pub fn expire_members(
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
    pub fn count_while(&self, before: impl Fn(f64, &[u8]) -> bool) -> usize {
        self.records()
            .take_while(|r| before(r.score, r.member))
            .count()
    }

    /// Byte offset where the element of rank `rank` starts (or the end).
    fn offset_of_rank(&self, rank: usize) -> usize {
        if rank >= self.len() {
            return self.buf.len();
        }
        if rank <= self.len() / 2 {
            self.records().nth(rank).map_or(self.buf.len(), |r| r.start)
        } else {
            let mut end = self.buf.len();
            for _ in rank..self.len() {
                match decode_before(&self.buf, end) {
                    Some(r) => end = r.start,
                    None => break,
                }
            }
            end
        }
    }

    /// Iterator positioned at rank `rank`: `next()` walks upward from it and
    /// `next_back()` walks downward from `rank - 1`.
    pub fn iter_at(&self, rank: usize) -> Iter<'_> {
        let off = self.offset_of_rank(rank);
        Iter {
            buf: &self.buf,
            front: off,
            back: off,
        }
    }

    pub fn get_by_rank(&self, rank: usize) -> Option<(&[u8], f64)> {
        let off = self.offset_of_rank(rank);
        decode_at(&self.buf, off).map(|r| (r.member, r.score))
    }

    /// Removes `count` elements starting at `start`, reporting each.
    pub fn remove_rank_range(
        &mut self,
        start: usize,
        count: usize,
        mut on_removed: impl FnMut(&[u8], f64),
    ) -> usize {
        let from = self.offset_of_rank(start);
        let mut off = from;
        let mut n = 0;
        while n < count {
            let Some(r) = decode_at(&self.buf, off) else {
                break;
            };
            on_removed(r.member, r.score);
            off = r.end;
            n += 1;
        }
        self.buf.drain(from..off);
        self.len -= n as u32;
        self.drop_deadlines(start, start + n);
        self.shrink_if_sparse();
        n
    }

    /// Debug check: records decode back to back, sorted, count matches.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut off = 0;
        let mut n = 0usize;
        let mut prev: Option<(f64, &[u8])> = None;
        while off < self.buf.len() {
            let r = decode_at(&self.buf, off).ok_or("undecodable record")?;
            let back = decode_before(&self.buf, r.end).ok_or("bad backlen")?;
            if back.start != r.start {
                return Err("backlen mismatch".into());
            }
            if let Some((ps, pm)) = prev
                && !key_less(ps, pm, r.score, r.member)
            {
                return Err("listpack out of order".into());
            }
            if r.score.is_nan() {
                return Err("NaN stored".into());
            }
            prev = Some((r.score, r.member));
            off = r.end;
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

/// Double-ended cursor over a byte range of records.
#[derive(Clone)]
pub struct Iter<'a> {
    buf: &'a [u8],
    front: usize,
    back: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], f64);
    fn next(&mut self) -> Option<Self::Item> {
        if self.front >= self.buf.len() {
            return None;
        }
        let r = decode_at(self.buf, self.front)?;
        self.front = r.end;
        Some((r.member, r.score))
    }
}

impl<'a> Iter<'a> {
    /// Steps backwards from the `back` cursor (independent of `front`).
    pub fn prev(&mut self) -> Option<(&'a [u8], f64)> {
        if self.back == 0 {
            return None;
        }
        let r = decode_before(self.buf, self.back)?;
        self.back = r.start;
        Some((r.member, r.score))
    }
}
