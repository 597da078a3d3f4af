//! The compact encodings RDB stores as opaque strings: listpacks (written
//! and read), and the older ziplists, intsets and zipmaps (read only, from
//! files and payloads of older Redis versions; intsets also written, as 7.0
//! writes small integer sets).
//!
//! The listpack writer follows the format spec (`listpack.md`): each entry
//! is an encoding byte (7-bit uint, 6/12/32-bit string lengths, 13/16/24/
//! 32/64-bit integers), its data, and its back-length, with strings that are
//! canonical integers stored as integers as Redis's `lpAppend` does. The
//! readers trust nothing: every entry is bounds-checked against the blob.

use super::RdbError;
use super::codec::canonical_int;

/// One element of a listpack or ziplist.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Elem<'a> {
    Int(i64),
    Str(&'a [u8]),
}

impl Elem<'_> {
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        match self {
            Elem::Int(v) => itoa::Buffer::new().format(*v).as_bytes().to_vec(),
            Elem::Str(s) => s.to_vec(),
        }
    }

    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Elem::Int(v) => Some(*v),
            Elem::Str(s) => canonical_int(s),
        }
    }
}

fn corrupt(what: &'static str) -> RdbError {
    RdbError::corrupt(what)
}

/// Builds a listpack.
pub(crate) struct ListpackWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for ListpackWriter {
    fn default() -> Self {
        ListpackWriter {
            buf: vec![0; 6],
            count: 0,
        }
    }
}

impl ListpackWriter {
    /// Appends a string, as an integer when it is a canonical one.
    pub(crate) fn push(&mut self, s: &[u8]) {
        match canonical_int(s) {
            Some(v) => self.push_int(v),
            None => self.push_str(s),
        }
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.push(0xE0 | (n >> 8) as u8);
            self.buf.push(n as u8);
        } else {
            self.buf.push(0xF0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.finish(start);
    }

    pub(crate) fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        let u = v as u64;
        if (0..=127).contains(&v) {
            self.buf.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = u & 0x1FFF;
            self.buf.push(0xC0 | (u >> 8) as u8);
            self.buf.push(u as u8);
        } else if i16::try_from(v).is_ok() {
            self.buf.push(0xF1);
            self.buf.extend_from_slice(&u.to_le_bytes()[..2]);
        } else if (-8_388_608..=8_388_607).contains(&v) {
            self.buf.push(0xF2);
            self.buf.extend_from_slice(&u.to_le_bytes()[..3]);
        } else if i32::try_from(v).is_ok() {
            self.buf.push(0xF3);
            self.buf.extend_from_slice(&u.to_le_bytes()[..4]);
        } else {
            self.buf.push(0xF4);
            self.buf.extend_from_slice(&u.to_le_bytes());
        }
        self.finish(start);
    }

    /// Appends the back-length of the entry that starts at `start`.
    fn finish(&mut self, start: usize) {
        let l = (self.buf.len() - start) as u64;
        let b = &mut self.buf;
        if l <= 127 {
            b.push(l as u8);
        } else if l < 16383 {
            b.extend_from_slice(&[(l >> 7) as u8, (l & 127) as u8 | 128]);
        } else if l < 2_097_151 {
            b.extend_from_slice(&[
                (l >> 14) as u8,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else if l < 268_435_455 {
            b.extend_from_slice(&[
                (l >> 21) as u8,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        } else {
            b.extend_from_slice(&[
                (l >> 28) as u8,
                ((l >> 21) & 127) as u8 | 128,
                ((l >> 14) & 127) as u8 | 128,
                ((l >> 7) & 127) as u8 | 128,
                (l & 127) as u8 | 128,
            ]);
        }
        self.count += 1;
    }

    pub(crate) fn finish_blob(mut self) -> Vec<u8> {
        self.buf.push(0xFF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let n = self.count.min(65535) as u16;
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

/// The size of a back-length for an entry of `l` bytes.
fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..16383 => 2,
        16383..2_097_151 => 3,
        2_097_151..268_435_455 => 4,
        _ => 5,
    }
}

fn sign_extend(u: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((u << shift) as i64) >> shift
}

/// The back-length that ends `before` (`lpDecodeBacklen`: read from the
/// last byte back, 7 bits a byte, while the high bit says more follow).
fn decode_backlen(before: &[u8]) -> Option<usize> {
    let mut v = 0usize;
    for (i, &b) in before.iter().rev().take(5).enumerate() {
        v |= ((b & 127) as usize) << (7 * i);
        if b & 128 == 0 {
            return Some(v);
        }
    }
    None
}

/// Reads every element of a listpack blob, checked as Redis's deep
/// `lpValidateIntegrity` checks it: the header's size and count, every
/// entry inside the blob with a back-length that matches it, and the end
/// byte exactly last.
pub(crate) fn listpack(blob: &[u8]) -> Result<Vec<Elem<'_>>, RdbError> {
    if blob.len() < 7
        || u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize != blob.len()
    {
        return Err(corrupt("listpack integrity check failed"));
    }
    let declared = u16::from_le_bytes([blob[4], blob[5]]) as usize;
    let mut out = Vec::new();
    let mut p = 6;
    let get = |from: usize, n: usize| -> Result<&[u8], RdbError> {
        blob.get(
            from..from
                .checked_add(n)
                .ok_or_else(|| corrupt("listpack entry"))?,
        )
        .ok_or_else(|| corrupt("listpack entry beyond its end"))
    };
    loop {
        let b = *blob.get(p).ok_or_else(|| corrupt("listpack without end"))?;
        if b == 0xFF {
            if p + 1 != blob.len() {
                return Err(corrupt("listpack end before its length"));
            }
            break;
        }
        let le = |s: &[u8]| s.iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64);
        let (elem, len) = if b & 0x80 == 0 {
            (Elem::Int((b & 0x7F) as i64), 1)
        } else if b & 0xC0 == 0x80 {
            let n = (b & 0x3F) as usize;
            (Elem::Str(get(p + 1, n)?), 1 + n)
        } else if b & 0xE0 == 0xC0 {
            let u = (((b & 0x1F) as u64) << 8) | get(p + 1, 1)?[0] as u64;
            (Elem::Int(sign_extend(u, 13)), 2)
        } else if b & 0xF0 == 0xE0 {
            let n = (((b & 0x0F) as usize) << 8) | get(p + 1, 1)?[0] as usize;
            (Elem::Str(get(p + 2, n)?), 2 + n)
        } else {
            match b {
                0xF0 => {
                    let n = le(get(p + 1, 4)?) as usize;
                    (Elem::Str(get(p + 5, n)?), 5 + n)
                }
                0xF1 => (Elem::Int(sign_extend(le(get(p + 1, 2)?), 16)), 3),
                0xF2 => (Elem::Int(sign_extend(le(get(p + 1, 3)?), 24)), 4),
                0xF3 => (Elem::Int(sign_extend(le(get(p + 1, 4)?), 32)), 5),
                0xF4 => (Elem::Int(le(get(p + 1, 8)?) as i64), 9),
                _ => return Err(corrupt("unknown listpack encoding")),
            }
        };
        p += len + backlen_size(len);
        if p >= blob.len() {
            return Err(corrupt("listpack entry beyond its end"));
        }
        // `lpValidateNext`: the back-length must say the entry's length.
        if decode_backlen(&blob[..p]) != Some(len) {
            return Err(corrupt("listpack entry with a wrong back-length"));
        }
        out.push(elem);
    }
    if declared != 65535 && declared != out.len() {
        return Err(corrupt("listpack count mismatch"));
    }
    Ok(out)
}

/// Reads every element of a ziplist blob (Redis ≤ 6.2's compact lists),
/// checked as `ziplistValidateIntegrity` checks it (Redis always does it in
/// full for ziplists): the header's size, tail offset and count, every
/// entry's encoding inside the blob, every entry's `prevlen` equal to the
/// previous entry's size, the tail offset on the last entry, and the end
/// byte exactly last.
pub(crate) fn ziplist(blob: &[u8]) -> Result<Vec<Elem<'_>>, RdbError> {
    let bad = || corrupt("ziplist integrity check failed");
    let size = blob.len();
    let le32 = |at: usize| u32::from_le_bytes([blob[at], blob[at + 1], blob[at + 2], blob[at + 3]]);
    if size < 11 || le32(0) as usize != size || blob[size - 1] != 0xFF {
        return Err(bad());
    }
    let tail = le32(4) as usize;
    if tail > size - 1 {
        return Err(bad());
    }
    let header_count = u16::from_le_bytes([blob[8], blob[9]]);
    // The end byte: no entry part may lie at or past it.
    let last = size - 1;
    let le = |s: &[u8]| s.iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64);
    let mut out = Vec::new();
    let (mut p, mut prev, mut prev_size) = (10, None, 0usize);
    while blob[p] != 0xFF {
        let (prevlen, prevlen_size) = if blob[p] < 254 {
            (blob[p] as usize, 1)
        } else {
            if p + 5 > last {
                return Err(bad());
            }
            (le32(p + 1) as usize, 5)
        };
        let h = p + prevlen_size;
        if h > last {
            return Err(bad());
        }
        let enc = blob[h];
        let lensize = match enc >> 6 {
            0 => 1,
            1 => 2,
            2 => 5,
            _ if enc == 0xC0
                || enc == 0xD0
                || enc == 0xE0
                || enc == 0xF0
                || (0xF1..=0xFE).contains(&enc) =>
            {
                1
            }
            _ => return Err(bad()),
        };
        if h + lensize > last {
            return Err(bad());
        }
        let d = h + lensize;
        let (len, str_len) = match enc >> 6 {
            0 => ((enc & 0x3F) as usize, true),
            1 => ((((enc & 0x3F) as usize) << 8) | blob[h + 1] as usize, true),
            2 => (
                u32::from_be_bytes([blob[h + 1], blob[h + 2], blob[h + 3], blob[h + 4]]) as usize,
                true,
            ),
            _ => match enc {
                0xC0 => (2, false),
                0xD0 => (4, false),
                0xE0 => (8, false),
                0xF0 => (3, false),
                0xFE => (1, false),
                _ => (0, false),
            },
        };
        if d.checked_add(len).is_none_or(|e| e > last) || prevlen != prev_size {
            return Err(bad());
        }
        let data = &blob[d..d + len];
        out.push(if str_len {
            Elem::Str(data)
        } else {
            Elem::Int(match enc {
                0xC0 => sign_extend(le(data), 16),
                0xD0 => sign_extend(le(data), 32),
                0xE0 => le(data) as i64,
                0xF0 => sign_extend(le(data), 24),
                0xFE => data[0] as i8 as i64,
                _ => (enc & 0x0F) as i64 - 1,
            })
        });
        prev = Some(p);
        prev_size = prevlen_size + lensize + len;
        p += prev_size;
    }
    if p != last
        || prev.is_some_and(|q| q != tail)
        || (header_count != u16::MAX && out.len() != header_count as usize)
    {
        return Err(bad());
    }
    Ok(out)
}

/// An intset blob's integers.
pub(crate) fn intset(blob: &[u8]) -> Result<Vec<i64>, RdbError> {
    if blob.len() < 8 {
        return Err(corrupt("intset integrity check failed"));
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let n = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || n.checked_mul(width) != Some(blob.len() - 8) || n == 0 {
        return Err(corrupt("intset integrity check failed"));
    }
    let v: Vec<i64> = blob[8..]
        .chunks_exact(width)
        .map(|c| match width {
            2 => i16::from_le_bytes([c[0], c[1]]) as i64,
            4 => i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64,
            _ => i64::from_le_bytes(c.try_into().unwrap_or_default()),
        })
        .collect();
    if v.windows(2).any(|w| w[0] >= w[1]) {
        return Err(corrupt("intset not sorted"));
    }
    Ok(v)
}

/// An intset blob of sorted, distinct integers.
pub(crate) fn write_intset(v: &[i64]) -> Vec<u8> {
    let width: usize = if v.iter().all(|&x| i16::try_from(x).is_ok()) {
        2
    } else if v.iter().all(|&x| i32::try_from(x).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + v.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    for &x in v {
        out.extend_from_slice(&x.to_le_bytes()[..width]);
    }
    out
}

/// A (field, value) pair read from a blob.
type Pair<'a> = (&'a [u8], &'a [u8]);

/// A zipmap blob's (field, value) pairs (Redis ≤ 2.4 hashes), checked as
/// `zipmapValidateIntegrity` checks it: every length and byte inside the
/// blob, at least one pair, the end byte last, and the count byte (unless
/// 254, "too many to count") equal to the pairs found.
pub(crate) fn zipmap(blob: &[u8]) -> Result<Vec<Pair<'_>>, RdbError> {
    let bad = || corrupt("zipmap integrity check failed");
    if blob.len() < 2 || blob[blob.len() - 1] != 0xFF {
        return Err(bad());
    }
    // Every part of an entry lies before the end byte.
    let last = blob.len() - 1;
    let get = |from: usize, n: usize| -> Result<&[u8], RdbError> {
        match from.checked_add(n) {
            Some(end) if end <= last => Ok(&blob[from..end]),
            _ => Err(bad()),
        }
    };
    let len_at = |p: &mut usize| -> Result<usize, RdbError> {
        let b = get(*p, 1)?[0];
        if b < 254 {
            *p += 1;
            Ok(b as usize)
        } else {
            let n = u32::from_le_bytes(get(*p + 1, 4)?.try_into().unwrap_or_default());
            *p += 5;
            Ok(n as usize)
        }
    };
    let mut p = 1;
    let mut out = Vec::new();
    while blob[p] != 0xFF {
        let klen = len_at(&mut p)?;
        let k = get(p, klen)?;
        p += klen;
        let vlen = len_at(&mut p)?;
        let free = get(p, 1)?[0] as usize;
        p += 1;
        let v = get(p, vlen)?;
        get(p, vlen + free)?;
        p += vlen + free;
        out.push((k, v));
    }
    if out.is_empty() || (blob[0] != 254 && blob[0] as usize != out.len()) {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_round_trips_every_encoding() {
        let mut items: Vec<Vec<u8>> = Vec::new();
        for v in [
            0i64,
            127,
            128,
            -1,
            -4096,
            4095,
            4096,
            -32768,
            32767,
            40000,
            -8_388_608,
            8_388_607,
            1 << 30,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ] {
            items.push(v.to_string().into_bytes());
        }
        for n in [0usize, 1, 63, 64, 4095, 4096, 20000] {
            items.push(vec![b'x'; n]);
        }
        items.push(b"-0".to_vec());
        items.push(b"012".to_vec());
        let mut w = ListpackWriter::default();
        for i in &items {
            w.push(i);
        }
        let blob = w.finish_blob();
        let back: Vec<Vec<u8>> = listpack(&blob).unwrap().iter().map(Elem::to_vec).collect();
        assert_eq!(back, items);
    }

    #[test]
    fn listpack_matches_redis_bytes() {
        // lpNew + lpAppend("a"), lpAppend("1024"): what redis-server writes.
        let mut w = ListpackWriter::default();
        w.push(b"a");
        w.push(b"1024");
        assert_eq!(
            w.finish_blob(),
            [13, 0, 0, 0, 2, 0, 0x81, b'a', 2, 0xC4, 0x00, 2, 0xFF]
        );
    }

    #[test]
    fn corrupt_blobs_are_refused_not_panicked_on() {
        let mut w = ListpackWriter::default();
        w.push(b"hello");
        w.push(b"12345678901");
        let blob = w.finish_blob();
        for cut in 0..blob.len() {
            let _ = listpack(&blob[..cut]);
            let mut b = blob.clone();
            b[cut] ^= 0x5A;
            let _ = listpack(&b);
            let _ = ziplist(&b);
            let _ = intset(&b);
            let _ = zipmap(&b);
        }
    }

    /// A ziplist of short strings, as Redis ≤ 6.2 writes it.
    fn ziplist_of(items: &[&[u8]]) -> Vec<u8> {
        let mut b = vec![0u8; 10];
        let (mut prev, mut tail) = (0usize, 10usize);
        for it in items {
            tail = b.len();
            b.push(prev as u8);
            b.push(it.len() as u8);
            b.extend_from_slice(it);
            prev = b.len() - tail;
        }
        b.push(0xFF);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        b[4..8].copy_from_slice(&(tail as u32).to_le_bytes());
        b[8..10].copy_from_slice(&(items.len() as u16).to_le_bytes());
        b
    }

    #[test]
    fn ziplists_are_checked_as_redis_checks_them() {
        let good = ziplist_of(&[b"a", b"bb", b"ccc"]);
        let back: Vec<Vec<u8>> = ziplist(&good).unwrap().iter().map(Elem::to_vec).collect();
        assert_eq!(back, [b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()]);
        // A count of 65535 means "count them".
        let mut b = good.clone();
        b[8..10].copy_from_slice(&[0xFF, 0xFF]);
        assert_eq!(ziplist(&b).unwrap().len(), 3);
        let refused = |what: &str, f: &dyn Fn(&mut Vec<u8>)| {
            let mut b = good.clone();
            f(&mut b);
            assert!(ziplist(&b).is_err(), "{what} accepted");
        };
        refused("zlbytes not the size", &|b| b[0] += 1);
        refused("a wrong count", &|b| b[8] = 2);
        refused("a tail offset off the last entry", &|b| b[4] -= 1);
        refused("a tail offset past the end", &|b| b[4] = 200);
        refused("a prevlen that is not the previous entry's size", &|b| {
            b[13] = 9
        });
        refused("a first entry with a prevlen", &|b| b[10] = 1);
        refused("an entry past the end", &|b| b[11] = 40);
        refused("an unknown encoding", &|b| b[11] = 0xF0 | 0x0F);
        refused("no end byte", &|b| *b.last_mut().unwrap() = 0);
        refused("data after an end byte", &|b| {
            // The unit's "tail followed by extra data which start with 0xff".
            let end = b.len() - 1;
            b.splice(end..end, [0xFF, 1, 2]);
            let n = b.len() as u32;
            b[..4].copy_from_slice(&n.to_le_bytes());
        });
        assert!(ziplist(&good[..good.len() - 1]).is_err());
    }

    #[test]
    fn listpack_back_lengths_must_match_their_entries() {
        let mut w = ListpackWriter::default();
        w.push(b"hello");
        w.push(b"x");
        let good = w.finish_blob();
        assert_eq!(listpack(&good).unwrap().len(), 2);
        // "hello" is 6 bytes: its back-length byte follows it.
        let mut b = good.clone();
        b[6 + 6] = 7;
        assert!(listpack(&b).is_err());
        let mut b = good.clone();
        b[4] = 3;
        assert!(listpack(&b).is_err(), "a wrong count");
    }

    #[test]
    fn zipmaps_are_checked_as_redis_checks_them() {
        // 1 pair: "a" => "bc", with one byte of free space.
        let good = [1u8, 1, b'a', 2, 1, b'b', b'c', 0, 0xFF];
        assert_eq!(zipmap(&good).unwrap(), [(&b"a"[..], &b"bc"[..])]);
        let mut big = good;
        big[0] = 254;
        assert_eq!(zipmap(&big).unwrap().len(), 1, "254: too many to count");
        assert!(zipmap(&[0, 0xFF]).is_err(), "an empty zipmap");
        let mut b = good;
        b[0] = 2;
        assert!(zipmap(&b).is_err(), "a wrong count");
        let mut b = good;
        b[4] = 3;
        assert!(zipmap(&b).is_err(), "free space past the end");
        assert!(zipmap(&good[..8]).is_err(), "no end byte");
    }

    #[test]
    fn empty_or_unsorted_intsets_are_refused() {
        assert!(intset(&write_intset(&[])).is_err());
        let mut b = write_intset(&[1, 2]);
        b.swap(8, 10);
        assert!(intset(&b).is_err());
        let mut b = write_intset(&[1, 2]);
        b[0] = 3;
        assert!(intset(&b).is_err(), "width 3");
    }

    #[test]
    fn intsets_round_trip() {
        for v in [
            vec![1i64, 2, 3],
            vec![-70000, 5],
            vec![i64::MIN, 0, i64::MAX],
        ] {
            assert_eq!(intset(&write_intset(&v)).unwrap(), v);
        }
    }
}
