//! Bit algorithms over a string's raw bytes (Redis's `bitops.c`): popcount,
//! first set/clear bit, bitfield integers and their overflow rules.
//!
//! Bit 0 is the most significant bit of the first byte, as SETBIT and
//! BITFIELD number them. Strings may be up to 512 MB, so the counting and
//! scanning loops work a `u64` at a time; the bitfield helpers touch at
//! most 9 bytes and stay bit by bit for clarity.

/// Bits set in `bytes`.
pub(crate) fn popcount(bytes: &[u8]) -> u64 {
    let mut chunks = bytes.chunks_exact(8);
    let mut total = 0u64;
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        total += u64::from(u64::from_ne_bytes(w).count_ones());
    }
    total
        + chunks
            .remainder()
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum::<u64>()
}

/// Bits set in the bit range `first..=last` of `bytes` (both inside it).
pub(crate) fn popcount_bits(bytes: &[u8], first: u64, last: u64) -> u64 {
    let (fb, lb) = ((first >> 3) as usize, (last >> 3) as usize);
    let mut n = popcount(&bytes[fb..=lb]);
    // Take back the bits of the edge bytes that lie outside the range.
    let head = bytes[fb] & !(0xffu8 >> (first & 7));
    let tail = bytes[lb] & (0xffu16 >> ((last & 7) + 1)) as u8;
    n -= u64::from(head.count_ones());
    n -= u64::from(tail.count_ones());
    n
}

/// The first bit equal to `bit` in the bit range `first..=last` of `bytes`
/// (both inside it), as an absolute bit position.
pub(crate) fn find_bit(bytes: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let skip: u8 = if bit { 0 } else { 0xff };
    let matches = |b: u8, pos: u64| ((b >> (7 - (pos & 7))) & 1 == 1) == bit;
    let mut pos = first;
    // The partial first byte, bit by bit.
    while pos <= last && pos & 7 != 0 {
        if matches(bytes[(pos >> 3) as usize], pos) {
            return Some(pos);
        }
        pos += 1;
    }
    if pos > last {
        return None;
    }
    // Whole bytes, skipping words that cannot hold a match.
    let full_end = ((last + 1) >> 3) as usize; // bytes fully inside the range
    let mut i = (pos >> 3) as usize;
    let word_skip = u64::from_ne_bytes([skip; 8]);
    while i + 8 <= full_end {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[i..i + 8]);
        if u64::from_ne_bytes(w) != word_skip {
            break;
        }
        i += 8;
    }
    while i < full_end && bytes[i] == skip {
        i += 1;
    }
    pos = (i as u64) << 3;
    while pos <= last {
        if matches(bytes[(pos >> 3) as usize], pos) {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

/// Reads the bit at `offset` (0 past the end).
pub(crate) fn get_bit(bytes: &[u8], offset: u64) -> bool {
    bytes
        .get((offset >> 3) as usize)
        .is_some_and(|b| (b >> (7 - (offset & 7))) & 1 == 1)
}

/// Reads a `bits`-wide unsigned integer at bit `offset`; bytes past the end
/// read as zero.
pub(crate) fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for j in 0..u64::from(bits) {
        v = (v << 1) | u64::from(get_bit(bytes, offset + j));
    }
    v
}

/// Reads a `bits`-wide two's complement integer at bit `offset`.
pub(crate) fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let u = get_unsigned(bytes, offset, bits);
    if bits < 64 && u & (1 << (bits - 1)) != 0 {
        (u | (u64::MAX << bits)) as i64
    } else {
        u as i64
    }
}

/// Writes the low `bits` bits of `value` at bit `offset`; the bytes must
/// already cover the field.
pub(crate) fn set_unsigned(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let on = (value >> (u64::from(bits) - 1 - j)) & 1 == 1;
        let pos = offset + j;
        let byte = &mut bytes[(pos >> 3) as usize];
        let mask = 1u8 << (7 - (pos & 7));
        if on {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// BITFIELD's OVERFLOW policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// Redis's `checkUnsignedBitfieldOverflow`: whether `value + incr` leaves
/// the `bits`-wide unsigned range, and the value to store if so (under
/// `Fail` the caller stores nothing).
pub(crate) fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = (value as i64).wrapping_neg();
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if incr < 0 && incr < minincr {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => 0,
        })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, the signed counterpart.
pub(crate) fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    // These may wrap; like Redis, they are only trusted once `value` is
    // known to be in range.
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                (c | mask) as i64
            } else {
                (c & !mask) as i64
            }
        } else {
            c as i64
        }
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => max,
        })
    } else if value < min
        || (bits != 64 && incr < minincr)
        || (value < 0 && incr < 0 && incr < minincr)
    {
        Some(match ow {
            Overflow::Wrap => wrap(),
            _ => min,
        })
    } else {
        None
    }
}

/// BITOP's operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// BITOP over `srcs` (missing keys are empty): the result is as long as the
/// longest source, shorter ones read as zero-padded.
pub(crate) fn bitop(op: BitOp, srcs: &[&[u8]]) -> Vec<u8> {
    let maxlen = srcs.iter().map(|s| s.len()).max().unwrap_or(0);
    if op == BitOp::Not {
        return srcs
            .first()
            .map_or_else(Vec::new, |s| s.iter().map(|b| !b).collect());
    }
    let mut res = vec![0u8; maxlen];
    let Some((first, rest)) = srcs.split_first() else {
        return res;
    };
    res[..first.len()].copy_from_slice(first);
    for s in rest {
        match op {
            // AND with a shorter source zeroes the tail.
            BitOp::And => {
                for (i, r) in res.iter_mut().enumerate() {
                    *r &= s.get(i).copied().unwrap_or(0);
                }
            }
            BitOp::Or => res.iter_mut().zip(s.iter()).for_each(|(r, b)| *r |= b),
            BitOp::Xor => res.iter_mut().zip(s.iter()).for_each(|(r, b)| *r ^= b),
            BitOp::Not => {}
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_find(bytes: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
        (first..=last).find(|&p| get_bit(bytes, p) == bit)
    }

    #[test]
    fn popcount_matches_naive() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 251) as u8).collect();
        let naive: u64 = data.iter().map(|b| u64::from(b.count_ones())).sum();
        assert_eq!(popcount(&data), naive);
        for (f, l) in [(0, 7), (3, 5), (5, 100), (8, 8000 - 1), (13, 7001)] {
            let n = (f..=l).filter(|&p| get_bit(&data, p)).count() as u64;
            assert_eq!(popcount_bits(&data, f, l), n, "{f}..{l}");
        }
    }

    #[test]
    fn find_bit_matches_naive() {
        let mut data = vec![0u8; 100];
        data.extend(vec![0xffu8; 100]);
        data.extend([0x0f, 0x80, 0x01, 0]);
        for bit in [false, true] {
            for (f, l) in [
                (0, 7),
                (0, 1631),
                (3, 900),
                (799, 1700),
                (1600, 1631),
                (1601, 1602),
                (805, 805),
            ] {
                assert_eq!(
                    find_bit(&data, f, l, bit),
                    naive_find(&data, f, l, bit),
                    "{bit} {f}..{l}"
                );
            }
        }
    }

    #[test]
    fn bitfields_round_trip() {
        let mut b = vec![0u8; 9];
        set_unsigned(&mut b, 7, 5, 23);
        assert_eq!(&b[..2], &[0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&b, 7, 5), 23);
        set_unsigned(&mut b, 3, 64, (-5i64) as u64);
        assert_eq!(get_signed(&b, 3, 64), -5);
        set_unsigned(&mut b, 0, 4, 0b1010);
        assert_eq!(get_signed(&b, 0, 4), -6);
        assert_eq!(
            get_unsigned(&b[..1], 4, 16),
            get_unsigned(&b[..1], 4, 4) << 12
        );
    }

    #[test]
    fn overflow_rules() {
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), Some(4));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), Some(255));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), Some(0));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Wrap), Some(251));
        assert_eq!(unsigned_overflow(5, 10, 8, Overflow::Fail), None);
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), Some(-126));
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Sat), Some(127));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), Some(-128));
        assert_eq!(
            signed_overflow(i64::MAX, 1, 64, Overflow::Wrap),
            Some(i64::MIN)
        );
        assert_eq!(
            signed_overflow(i64::MIN, -1, 64, Overflow::Sat),
            Some(i64::MIN)
        );
        assert_eq!(signed_overflow(-1, 1, 64, Overflow::Sat), None);
    }

    #[test]
    fn bitops() {
        let (a, b): (&[u8], &[u8]) = (&[0xf0, 0xff], &[0x3c]);
        assert_eq!(bitop(BitOp::And, &[a, b]), vec![0x30, 0]);
        assert_eq!(bitop(BitOp::Or, &[a, b]), vec![0xfc, 0xff]);
        assert_eq!(bitop(BitOp::Xor, &[a, b]), vec![0xcc, 0xff]);
        assert_eq!(bitop(BitOp::Not, &[a]), vec![0x0f, 0]);
        assert_eq!(bitop(BitOp::And, &[b, a]), vec![0x30, 0]);
    }
}
