//! RDB's primitive encodings: lengths, strings (integer-encoded and LZF),
//! doubles, millisecond times, and the CRC-64 every file and DUMP payload
//! ends with.
//!
//! [`Reader`] is the only way bytes of a file or a RESTORE payload are
//! read: every length is checked against the bytes that remain before
//! anything is allocated, so a hostile payload can make a read fail but
//! never panic or allocate more than the payload could hold.

use super::RdbError;

/// Redis's CRC-64 (Jones polynomial, reflected), as `crc64.c` computes it.
pub(crate) static CRC64: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// `RDB_ENCVAL` special string encodings.
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// LZF expands at most about 100 times (a 3-byte back-reference yields up
/// to 264 bytes), which bounds what a compressed string may claim.
const LZF_MAX_RATIO: usize = 100;

/// Appends RDB's length encoding of `len`.
pub(crate) fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(0x40 | (len >> 8) as u8);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// `string2ll`'s canonical form: the integer a string stands for, if it
/// prints back to exactly the same bytes.
pub(crate) fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let v = crate::util::parse_i64(s)?;
    (itoa::Buffer::new().format(v).as_bytes() == s).then_some(v)
}

/// Appends `s` as Redis's `rdbSaveRawString` does: short integers as
/// integers, strings longer than 20 bytes LZF-compressed when `compress`
/// and it saves more than 4 bytes, else raw.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &[u8], compress: bool) {
    if s.len() <= 11
        && let Some(v) = canonical_int(s)
        && put_int_encoded(out, v)
    {
        return;
    }
    if compress
        && s.len() > 20
        && let Some(c) = lzf_compress(s, s.len() - 5)
    {
        out.push(0xC0 | ENC_LZF);
        put_len(out, c.len() as u64);
        put_len(out, s.len() as u64);
        out.extend_from_slice(&c);
        return;
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Hash table slots of the LZF compressor (positions of 3-byte sequences).
const LZF_HLOG: u32 = 14;
/// The farthest back-reference and longest match LZF encodes.
const LZF_MAX_OFF: usize = 1 << 13;
const LZF_MAX_REF: usize = (1 << 8) + (1 << 3);

thread_local! {
    /// The compressor's table, kept between calls: entries carry the call's
    /// generation, so a new call needs no clearing (the `lzf` crate zeroes a
    /// 256 KB table per call, which made a save of 1M short strings take 20 s).
    static LZF_TABLE: std::cell::RefCell<(Vec<u64>, u32)> =
        std::cell::RefCell::new((vec![0; 1 << LZF_HLOG], 0));
}

/// LZF-compresses `input` (liblzf's format, which Redis's `lzf_decompress`
/// reads): runs of up to 32 literals, and back-references of 3 to 264
/// bytes at most 8 kB back, found greedily through a hash of the next 3
/// bytes. None if the output would exceed `max_out` bytes.
fn lzf_compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    LZF_TABLE.with(|t| {
        let mut t = t.borrow_mut();
        let (table, generation) = &mut *t;
        *generation = generation.wrapping_add(1);
        if *generation == 0 {
            table.fill(0);
            *generation = 1;
        }
        let tag = (*generation as u64) << 32;
        let n = input.len();
        let mut out = Vec::with_capacity(max_out.min(n) + 1);
        let mut lit_at = out.len();
        out.push(0);
        let mut lit = 0usize;
        let mut i = 0;
        while i < n {
            let mut matched = 0;
            let mut off = 0;
            if i + 2 < n {
                let v = (input[i] as u32) << 16 | (input[i + 1] as u32) << 8 | input[i + 2] as u32;
                let h = (v.wrapping_mul(2_654_435_761) >> (32 - LZF_HLOG)) as usize;
                let prev = table[h];
                table[h] = tag | (i as u64 + 1);
                if prev >> 32 == tag >> 32 {
                    let r = (prev & 0xFFFF_FFFF) as usize - 1;
                    if r < i && i - r <= LZF_MAX_OFF && input[r..r + 3] == input[i..i + 3] {
                        let max = LZF_MAX_REF.min(n - i);
                        let mut len = 3;
                        while len < max && input[r + len] == input[i + len] {
                            len += 1;
                        }
                        matched = len;
                        off = i - r - 1;
                    }
                }
            }
            if matched == 0 {
                out.push(input[i]);
                lit += 1;
                i += 1;
                if lit == 32 {
                    out[lit_at] = 31;
                    lit_at = out.len();
                    out.push(0);
                    lit = 0;
                }
            } else {
                if lit > 0 {
                    out[lit_at] = (lit - 1) as u8;
                } else {
                    out.pop();
                }
                let l = matched - 2;
                if l < 7 {
                    out.push(((l << 5) | (off >> 8)) as u8);
                } else {
                    out.push(((7 << 5) | (off >> 8)) as u8);
                    out.push((l - 7) as u8);
                }
                out.push(off as u8);
                i += matched;
                lit_at = out.len();
                out.push(0);
                lit = 0;
            }
            if out.len() > max_out + 1 {
                return None;
            }
        }
        if lit > 0 {
            out[lit_at] = (lit - 1) as u8;
        } else {
            out.pop();
        }
        (out.len() <= max_out).then_some(out)
    })
}

/// Appends an integer in RDB's int8/16/32 string encodings; false if it
/// needs more than 32 bits.
fn put_int_encoded(out: &mut Vec<u8>, v: i64) -> bool {
    if let Ok(b) = i8::try_from(v) {
        out.extend_from_slice(&[0xC0 | ENC_INT8, b as u8]);
    } else if let Ok(h) = i16::try_from(v) {
        out.push(0xC0 | ENC_INT16);
        out.extend_from_slice(&h.to_le_bytes());
    } else if let Ok(w) = i32::try_from(v) {
        out.push(0xC0 | ENC_INT32);
        out.extend_from_slice(&w.to_le_bytes());
    } else {
        return false;
    }
    true
}

/// Appends a string that holds an integer (`rdbSaveLongLongAsStringObject`).
pub(crate) fn put_int_string(out: &mut Vec<u8>, v: i64) {
    if !put_int_encoded(out, v) {
        let s = itoa::Buffer::new().format(v).as_bytes().to_vec();
        put_len(out, s.len() as u64);
        out.extend_from_slice(&s);
    }
}

pub(crate) fn put_ms(out: &mut Vec<u8>, ms: u64) {
    out.extend_from_slice(&ms.to_le_bytes());
}

/// A binary double (`rdbSaveBinaryDoubleValue`).
pub(crate) fn put_double(out: &mut Vec<u8>, d: f64) {
    out.extend_from_slice(&d.to_le_bytes());
}

/// A cursor over untrusted RDB bytes.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Reader<'a> {
        Reader { data, pos: 0 }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes consumed so far.
    pub(crate) fn consumed(&self) -> &'a [u8] {
        &self.data[..self.pos]
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() {
            return Err(RdbError::truncated());
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub(crate) fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.bytes(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    pub(crate) fn u32_le(&mut self) -> Result<u32, RdbError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(crate) fn ms(&mut self) -> Result<u64, RdbError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(crate) fn double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// `rdbLoadDoubleValue`: the old text form of doubles (ZSET type 3).
    pub(crate) fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let s = self.bytes(n as usize)?;
                crate::util::parse_f64(s)
                    .or_else(|| std::str::from_utf8(s).ok()?.trim().parse().ok())
                    .ok_or_else(|| RdbError::corrupt("bad double value"))
            }
        }
    }

    /// A length, or `Err` for a special string encoding where a plain
    /// length is expected.
    pub(crate) fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_enc()? {
            (n, false) => Ok(n),
            (_, true) => Err(RdbError::corrupt("unexpected string encoding")),
        }
    }

    /// A length that counts things at least `min_bytes` each in the input,
    /// checked against the input left (so it can size an allocation).
    pub(crate) fn count(&mut self, min_bytes: usize) -> Result<usize, RdbError> {
        let n = self.len()?;
        if n > (self.remaining() / min_bytes.max(1)) as u64 {
            return Err(RdbError::corrupt("length beyond the end of the input"));
        }
        Ok(n as usize)
    }

    fn len_or_enc(&mut self) -> Result<(u64, bool), RdbError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => ((b & 0x3F) as u64, false),
            1 => ((((b & 0x3F) as u64) << 8) | self.byte()? as u64, false),
            2 => match b {
                0x80 => (u32::from_be_bytes(self.array()?) as u64, false),
                0x81 => (u64::from_be_bytes(self.array()?), false),
                _ => return Err(RdbError::corrupt("unknown length encoding")),
            },
            _ => ((b & 0x3F) as u64, true),
        })
    }

    /// A string in any of RDB's encodings.
    pub(crate) fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        let (n, enc) = self.len_or_enc()?;
        if !enc {
            return Ok(self
                .bytes(usize::try_from(n).unwrap_or(usize::MAX))?
                .to_vec());
        }
        let int = |v: i64| itoa::Buffer::new().format(v).as_bytes().to_vec();
        match n as u8 {
            ENC_INT8 => Ok(int(self.byte()? as i8 as i64)),
            ENC_INT16 => Ok(int(i16::from_le_bytes(self.array()?) as i64)),
            ENC_INT32 => Ok(int(i32::from_le_bytes(self.array()?) as i64)),
            ENC_LZF => {
                let clen = self.len()?;
                let len = self.len()?;
                let clen = usize::try_from(clen).unwrap_or(usize::MAX);
                let compressed = self.bytes(clen)?;
                if len == 0 || len > (clen as u64).saturating_mul(LZF_MAX_RATIO as u64) {
                    return Err(RdbError::corrupt("bad LZF lengths"));
                }
                let out = lzf::decompress(compressed, len as usize)
                    .map_err(|_| RdbError::corrupt("invalid LZF compressed string"))?;
                if out.len() != len as usize {
                    return Err(RdbError::corrupt("invalid LZF compressed string"));
                }
                Ok(out)
            }
            _ => Err(RdbError::corrupt("unknown string encoding")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(s: &[u8], compress: bool) -> Vec<u8> {
        let mut out = Vec::new();
        put_string(&mut out, s, compress);
        let mut r = Reader::new(&out);
        let back = r.string().unwrap();
        assert!(r.is_empty());
        back
    }

    #[test]
    fn strings_round_trip_in_every_encoding() {
        for s in [
            &b""[..],
            b"0",
            b"-1",
            b"127",
            b"-128",
            b"300",
            b"-32768",
            b"70000",
            b"2147483647",
            b"-2147483649",
            b"007",
            b"hello",
        ] {
            assert_eq!(round(s, true), s);
        }
        let long = vec![b'a'; 100_000];
        assert_eq!(round(&long, true), long);
        assert_eq!(round(&long, false), long);
    }

    #[test]
    fn integers_use_the_small_encodings() {
        let mut out = Vec::new();
        put_string(&mut out, b"-5", false);
        assert_eq!(out, [0xC0, 0xFB]);
        out.clear();
        put_string(&mut out, b"05", false);
        assert_eq!(out, [2, b'0', b'5']);
    }

    #[test]
    fn lengths_round_trip() {
        for n in [
            0u64,
            63,
            64,
            16383,
            16384,
            u32::MAX as u64,
            u32::MAX as u64 + 1,
        ] {
            let mut out = Vec::new();
            put_len(&mut out, n);
            assert_eq!(Reader::new(&out).len().unwrap(), n);
        }
    }

    #[test]
    fn hostile_lengths_fail_without_allocating() {
        // A 2^64-1 length, and an LZF string claiming 4 GB from 3 bytes.
        let mut r = Reader::new(&[0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]);
        assert!(r.string().is_err());
        let mut r = Reader::new(&[0xC3, 3, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3]);
        assert!(r.string().is_err());
        let mut r = Reader::new(&[0x80, 0, 0, 0, 9]);
        assert!(r.count(1).is_err());
    }

    #[test]
    fn lzf_output_decompresses_to_the_input() {
        let mut seed = 1u64;
        let mut inputs: Vec<Vec<u8>> =
            vec![vec![b'a'; 100_000], b"abcabcabcabcabcabcabcabc".to_vec()];
        for len in [21usize, 50, 1000, 70_000] {
            let v: Vec<u8> = (0..len)
                .map(|i| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    if i % 7 < 4 {
                        b"hello world"[i % 11]
                    } else {
                        (seed >> 60) as u8
                    }
                })
                .collect();
            inputs.push(v);
        }
        for input in inputs {
            let Some(c) = lzf_compress(&input, input.len()) else {
                continue;
            };
            assert_eq!(lzf::decompress(&c, input.len()).unwrap(), input);
        }
        assert!(lzf_compress(&vec![b'q'; 1000], 1000).unwrap().len() < 40);
    }

    #[test]
    fn crc64_is_redis_jones() {
        // crc64.c's self-test vector.
        assert_eq!(CRC64.checksum(b"123456789"), 0xe9c6d914c4b8d9ca);
    }
}
