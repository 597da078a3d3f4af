//! HyperLogLog in Redis 7.0's own byte representation (`hyperloglog.c`).
//!
//! An HLL is a plain string value: a 16-byte header (`HYLL`, encoding byte,
//! three reserved bytes, an 8-byte little-endian cached cardinality whose top
//! bit marks it stale) followed by either the dense registers (16384 6-bit
//! registers, 12288 bytes) or the sparse opcodes (ZERO `00xxxxxx`, XZERO
//! `01xxxxxx xxxxxxxx`, VAL `1vvvvvxx`). Because clients can GET, SET,
//! DUMP-free copy and compare these bytes, every operation here reproduces
//! Redis's byte for byte: opcode splitting and merging in sparse updates,
//! promotion to dense at `hll-sparse-max-bytes`, the header copied on
//! promotion, the cache invalidation points. The cardinality estimator is
//! 7.0's (Ertl's improved estimator over the register histogram), with the
//! same floating-point operations in the same order, so counts agree too.
//!
//! Values come from clients, so nothing here trusts them: every opcode walk
//! is bounded by the string's length, reads past the end see the zero byte
//! an sds string always has there, and inconsistencies are reported as
//! [`Corrupt`] (Redis's `INVALIDOBJ`) rather than panicking.

/// Header size (`sizeof(struct hllhdr)`).
pub(crate) const HDR: usize = 16;
/// log2 of the register count.
const P: u32 = 14;
/// Hash bits left for the zero-run count.
const Q: usize = 64 - P as usize;
pub(crate) const REGISTERS: usize = 1 << P;
const BITS: usize = 6;
const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Length of a dense HLL string.
const DENSE_SIZE: usize = HDR + (REGISTERS * BITS).div_ceil(8);

const DENSE: u8 = 0;
const SPARSE: u8 = 1;

const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;
const SPARSE_XZERO_MAX_LEN: usize = 16384;

/// 0.5/ln(2), the estimator's alpha for m → ∞.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// The value is an HLL by its header but its registers are inconsistent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Corrupt;

/// Redis's `isHLLObjectOrReply` structural check: long enough, `HYLL`
/// magic, a known encoding, and the exact length if dense.
pub(crate) fn is_hll(data: &[u8]) -> bool {
    data.len() >= HDR
        && &data[..4] == b"HYLL"
        && data[4] <= SPARSE
        && (data[4] != DENSE || data.len() == DENSE_SIZE)
}

/// Whether a (valid) HLL is sparse.
pub(crate) fn is_sparse(data: &[u8]) -> bool {
    data[4] == SPARSE
}

/// A new, empty HLL: sparse, all registers in XZERO opcodes
/// (`createHLLObject`).
pub(crate) fn new_sparse() -> Vec<u8> {
    let mut v = Vec::with_capacity(HDR + 2 * REGISTERS.div_ceil(SPARSE_XZERO_MAX_LEN));
    v.extend_from_slice(b"HYLL");
    v.push(SPARSE);
    v.extend_from_slice(&[0; 11]);
    let mut left = REGISTERS;
    while left > 0 {
        let n = left.min(SPARSE_XZERO_MAX_LEN);
        v.extend_from_slice(&xzero(n));
        left -= n;
    }
    v
}

/// The cached cardinality, if valid.
pub(crate) fn cached_card(data: &[u8]) -> Option<u64> {
    let card: [u8; 8] = data[8..16].try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

pub(crate) fn set_cached_card(data: &mut [u8], card: u64) {
    data[8..16].copy_from_slice(&card.to_le_bytes());
}

pub(crate) fn invalidate_cache(data: &mut [u8]) {
    data[15] |= 0x80;
}

/// MurmurHash2, 64-bit version, endian-neutral as Redis modified it.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element maps to and the length of its `000…1` run
/// (`hllPatLen`).
fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc8_3b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The sentinel bit bounds the count at Q+1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---- dense registers -------------------------------------------------------

/// Register `i` of a dense register array. The last register's second byte
/// lies past the array (Redis reads the sds terminator there): read as 0.
pub(crate) fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let b0 = regs.get(byte).copied().unwrap_or(0) as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

fn dense_put(regs: &mut [u8], i: usize, val: u8) {
    let byte = i * BITS / 8;
    let fb = (i * BITS) & 7;
    let v = val as u32;
    if let Some(b) = regs.get_mut(byte) {
        *b &= !((REGISTER_MAX as u32) << fb) as u8;
        *b |= (v << fb) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((REGISTER_MAX as u32) >> (8 - fb)) as u8;
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// Calls `f(i, register i)` for every register of a dense array, four at
/// a time from each 3 bytes (the hot loop of PFCOUNT and PFMERGE).
fn dense_each(regs: &[u8], mut f: impl FnMut(usize, u8)) {
    for (k, c) in regs.chunks_exact(3).take(REGISTERS / 4).enumerate() {
        let (a, b, d) = (c[0], c[1], c[2]);
        let i = k * 4;
        f(i, a & 63);
        f(i + 1, ((a >> 6) | (b << 2)) & 63);
        f(i + 2, ((b >> 4) | (d << 4)) & 63);
        f(i + 3, d >> 2);
    }
}

/// Raises register `i` to `count` if lower; true if it changed.
fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

// ---- sparse opcodes --------------------------------------------------------

fn is_zero(b: u8) -> bool {
    b & 0xc0 == 0
}

fn is_xzero(b: u8) -> bool {
    b & 0xc0 == 0x40
}

fn is_val(b: u8) -> bool {
    b & 0x80 != 0
}

fn zero_len(b: u8) -> usize {
    (b & 0x3f) as usize + 1
}

fn xzero_len(b0: u8, b1: u8) -> usize {
    ((((b0 & 0x3f) as usize) << 8) | b1 as usize) + 1
}

fn val_value(b: u8) -> u8 {
    ((b >> 2) & 0x1f) + 1
}

fn val_len(b: u8) -> usize {
    (b & 3) as usize + 1
}

fn val(value: u8, len: usize) -> u8 {
    (((value - 1) << 2) | (len as u8 - 1)) | 0x80
}

fn zero(len: usize) -> u8 {
    (len - 1) as u8
}

fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [((l >> 8) as u8) | 0x40, (l & 0xff) as u8]
}

/// One decoded opcode: its length in bytes, the registers it covers and
/// their value (0 for the zero runs).
struct Op {
    bytes: usize,
    run: usize,
    value: u8,
}

/// Decodes the opcode at `p`; a truncated XZERO reads the sds terminator.
fn op_at(s: &[u8], p: usize) -> Op {
    let b = s[p];
    if is_zero(b) {
        Op {
            bytes: 1,
            run: zero_len(b),
            value: 0,
        }
    } else if is_xzero(b) {
        Op {
            bytes: 2,
            run: xzero_len(b, s.get(p + 1).copied().unwrap_or(0)),
            value: 0,
        }
    } else {
        Op {
            bytes: 1,
            run: val_len(b),
            value: val_value(b),
        }
    }
}

/// Converts a sparse HLL to dense in place (`hllSparseToDense`): the header
/// (magic, cached cardinality) is kept, the encoding byte changes.
/// Returns whether it converted; a dense input is left alone.
pub(crate) fn sparse_to_dense(data: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if data[4] == DENSE {
        return Ok(false);
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&data[..HDR]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR..];
    let (mut idx, mut p) = (0usize, HDR);
    while p < data.len() {
        let op = op_at(data, p);
        if op.value > 0 {
            if idx + op.run > REGISTERS {
                break;
            }
            for r in idx..idx + op.run {
                dense_put(regs, r, op.value);
            }
        }
        idx += op.run;
        p += op.bytes;
    }
    if idx != REGISTERS {
        return Err(Corrupt);
    }
    *data = dense;
    Ok(true)
}

/// Raises register `index` to `count` in a sparse HLL (`hllSparseSet`),
/// splitting the opcode that covers it, merging equal neighbours, and
/// promoting to dense when the value cannot be represented or the string
/// would outgrow `max_bytes`. Returns whether a register changed.
fn sparse_set(
    data: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(data, index, count);
    }
    // Redis works in an sds with spare room (`sdsMakeRoomFor(3)`) and a
    // zero terminator; the padding plays both roles, so reads one past the
    // end and writes of up to 3 bytes of growth stay in bounds.
    let mut len = data.len();
    data.resize(len + 8, 0);
    let r = sparse_set_padded(data, &mut len, index, count, max_bytes);
    data.truncate(len);
    match r {
        Step::Done(changed) => Ok(changed),
        Step::Corrupt => Err(Corrupt),
        Step::Promote => promote(data, index, count),
    }
}

enum Step {
    Done(bool),
    Corrupt,
    Promote,
}

fn sparse_set_padded(
    s: &mut [u8],
    len: &mut usize,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Step {
    let end = *len;
    // Find the opcode covering `index`.
    let (mut p, mut first, mut span) = (HDR, 0usize, 0usize);
    let mut prev: Option<usize> = None;
    while p < end {
        let op = op_at(s, p);
        span = op.run;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += op.bytes;
        first += span;
    }
    if span == 0 || p >= end {
        return Step::Corrupt;
    }
    let b = s[p];
    let next = Some(if is_xzero(b) { p + 2 } else { p + 1 }).filter(|&n| n < end);
    let runlen = op_at(s, p).run;
    let mut end = end;
    let rewrite = if is_val(b) {
        let old = val_value(b);
        if old >= count {
            return Step::Done(false);
        }
        runlen != 1
    } else {
        !(is_zero(b) && runlen == 1)
    };
    if !rewrite {
        // A VAL or ZERO covering just this register becomes VAL(count).
        s[p] = val(count, 1);
    } else {
        // Split the opcode into up to three: before, the new value, after.
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        let push_zero = |seq: &mut [u8; 5], n: &mut usize, len: usize| {
            if len > SPARSE_ZERO_MAX_LEN {
                seq[*n..*n + 2].copy_from_slice(&xzero(len));
                *n += 2;
            } else {
                seq[*n] = zero(len);
                *n += 1;
            }
        };
        if is_val(b) {
            let cur = val_value(b);
            if index != first {
                seq[n] = val(cur, index - first);
                n += 1;
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                seq[n] = val(cur, last - index);
                n += 1;
            }
        } else {
            if index != first {
                push_zero(&mut seq, &mut n, index - first);
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                push_zero(&mut seq, &mut n, last - index);
            }
        }
        let oldlen = if is_xzero(b) { 2 } else { 1 };
        let delta = n as isize - oldlen as isize;
        if delta > 0 && *len + delta as usize > max_bytes {
            return Step::Promote;
        }
        if delta != 0
            && let Some(next) = next
        {
            let to = (next as isize + delta) as usize;
            s.copy_within(next..end, to);
        }
        *len = (*len as isize + delta) as usize;
        s[*len] = 0;
        s[p..p + n].copy_from_slice(&seq[..n]);
        end = (end as isize + delta) as usize;
    }
    // Merge adjacent VAL opcodes of equal value, scanning up to 5 opcodes
    // from the one before the change.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < end && scan > 0 {
        scan -= 1;
        if is_xzero(s[p]) {
            p += 2;
            continue;
        } else if is_zero(s[p]) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(s[p + 1]) {
            let (v1, v2) = (val_value(s[p]), val_value(s[p + 1]));
            if v1 == v2 {
                let l = val_len(s[p]) + val_len(s[p + 1]);
                if l <= SPARSE_VAL_MAX_LEN {
                    s[p + 1] = val(v1, l);
                    s.copy_within(p + 1..end + 1, p);
                    *len -= 1;
                    s[*len] = 0;
                    end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(s);
    Step::Done(true)
}

fn promote(data: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    sparse_to_dense(data)?;
    // A sparse register never exceeds 32, and promotion happens only for a
    // higher count, so this always changes the register.
    dense_set(&mut data[HDR..], index, count);
    Ok(true)
}

/// PFADD of one element (`hllAdd`): whether a register changed.
pub(crate) fn add(data: &mut Vec<u8>, ele: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pat_len(ele);
    set_register(data, index, count, sparse_max)
}

/// Raises one register in either encoding (PFMERGE's write step).
pub(crate) fn set_register(
    data: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    match data[4] {
        DENSE => Ok(dense_set(&mut data[HDR..], index, count)),
        SPARSE => sparse_set(data, index, count, sparse_max),
        _ => Err(Corrupt),
    }
}

/// `max[i] = max(max[i], register i)` over a valid HLL (`hllMerge`).
pub(crate) fn merge_into(max: &mut [u8], data: &[u8]) -> Result<(), Corrupt> {
    if data[4] == DENSE {
        dense_each(&data[HDR..], |i, v| {
            if let Some(m) = max.get_mut(i) {
                *m = (*m).max(v);
            }
        });
        return Ok(());
    }
    let (mut i, mut p) = (0usize, HDR);
    while p < data.len() {
        let op = op_at(data, p);
        if op.value > 0 {
            if i + op.run > REGISTERS {
                break;
            }
            for m in &mut max[i..i + op.run] {
                *m = (*m).max(op.value);
            }
        }
        i += op.run;
        p += op.bytes;
    }
    if i != REGISTERS {
        return Err(Corrupt);
    }
    Ok(())
}

/// The estimate for a register histogram (`hllCount`'s arithmetic).
fn estimate(histo: &[u64; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - histo[Q + 1] as f64) / m);
    for j in (1..=Q).rev() {
        z += histo[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(histo[0] as f64 / m);
    // llroundl: halves away from zero, as f64::round.
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let prev = z;
        y *= 0.5;
        // Redis writes pow(1 - x, 2), which GCC folds into this product.
        z -= (1.0 - x) * (1.0 - x) * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// The estimated cardinality of a valid HLL, ignoring the cache.
pub(crate) fn count(data: &[u8]) -> Result<u64, Corrupt> {
    let mut histo = [0u64; 64];
    if data[4] == DENSE {
        dense_each(&data[HDR..], |_, v| histo[v as usize] += 1);
    } else {
        let (mut idx, mut p) = (0usize, HDR);
        while p < data.len() {
            let op = op_at(data, p);
            idx += op.run;
            histo[op.value as usize] += op.run as u64;
            p += op.bytes;
        }
        if idx != REGISTERS {
            return Err(Corrupt);
        }
    }
    Ok(estimate(&histo))
}

/// The estimate for raw one-byte-per-register maxima (multi-key PFCOUNT).
pub(crate) fn count_raw(max: &[u8]) -> u64 {
    let mut histo = [0u64; 64];
    for &r in max {
        histo[(r & 63) as usize] += 1;
    }
    estimate(&histo)
}

/// PFDEBUG DECODE's text for a sparse HLL.
pub(crate) fn decode_sparse(data: &[u8]) -> String {
    let mut out = String::new();
    let mut p = HDR;
    while p < data.len() {
        let b = data[p];
        let op = op_at(data, p);
        if is_zero(b) {
            out.push_str(&format!("z:{} ", op.run));
        } else if is_xzero(b) {
            out.push_str(&format!("Z:{} ", op.run));
        } else {
            out.push_str(&format!("v:{},{} ", op.value, op.run));
        }
        p += op.bytes;
    }
    out.trim_matches(' ').to_string()
}

/// PFSELFTEST: register access, then the estimator's error and sparse/dense
/// agreement on up to 10M elements (`pfselftestCommand`). `Err` carries the
/// TESTFAILED text.
pub(crate) fn selftest(mut rand: impl FnMut() -> u32, sparse_max: usize) -> Result<(), String> {
    let mut regs = vec![0u8; DENSE_SIZE - HDR];
    let mut bytes = vec![0u8; REGISTERS];
    for _ in 0..1000 {
        for (i, b) in bytes.iter_mut().enumerate() {
            let r = (rand() & REGISTER_MAX as u32) as u8;
            *b = r;
            dense_put(&mut regs, i, r);
        }
        for (i, &b) in bytes.iter().enumerate() {
            let v = dense_get(&regs, i);
            if v != b {
                return Err(format!("TESTFAILED Register {i} should be {b} but is {v}"));
            }
        }
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..4].copy_from_slice(b"HYLL");
    let mut sparse = new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    let seed = rand() as u64 | (rand() as u64) << 32;
    for j in 1..=10_000_000u64 {
        let ele = (j ^ seed).to_le_bytes();
        let (index, cnt) = pat_len(&ele);
        dense_set(&mut dense[HDR..], index, cnt);
        set_register(&mut sparse, index, cnt, sparse_max).map_err(|_| "TESTFAILED corrupted")?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max / 2 && !is_sparse(&sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let d = count(&dense).unwrap_or(0);
        if Ok(d) != count(&sparse) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = (checkpoint as i64 - d as i64).unsigned_abs();
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pfadd(data: &mut Vec<u8>, ele: &[u8]) -> bool {
        add(data, ele, 3000).unwrap()
    }

    #[test]
    fn new_is_sparse_xzero() {
        let v = new_sparse();
        assert_eq!(v.len(), HDR + 2);
        assert!(is_hll(&v) && is_sparse(&v));
        assert_eq!(decode_sparse(&v), "Z:16384");
        assert_eq!(count(&v), Ok(0));
    }

    #[test]
    fn murmur_matches_redis_reference_values() {
        // Register/count pairs of PFADD elements, checked against
        // redis-server's PFDEBUG GETREG.
        assert_eq!(murmur64a(b"", 0), 0);
        let (i, c) = pat_len(b"a");
        assert!(i < REGISTERS && (1..=51).contains(&c));
    }

    #[test]
    fn dense_registers_roundtrip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, ((i * 7) % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), ((i * 7) % 64) as u8);
        }
        let mut n = 0;
        dense_each(&regs, |i, v| {
            assert_eq!(v, dense_get(&regs, i));
            n += 1;
        });
        assert_eq!(n, REGISTERS);
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut s = new_sparse();
        let mut d = new_sparse();
        sparse_to_dense(&mut d).unwrap();
        for i in 0..600u32 {
            let e = i.to_string();
            pfadd(&mut s, e.as_bytes());
            pfadd(&mut d, e.as_bytes());
        }
        assert!(is_sparse(&s));
        assert_eq!(count(&s), count(&d));
        let mut s2 = s.clone();
        sparse_to_dense(&mut s2).unwrap();
        assert_eq!(s2[HDR..], d[HDR..]);
        let c = count(&d).unwrap();
        assert!((570..630).contains(&c), "{c}");
    }

    #[test]
    fn promotes_at_the_size_limit() {
        let mut s = new_sparse();
        for i in 0..5000u32 {
            add(&mut s, i.to_string().as_bytes(), 300).unwrap();
            if !is_sparse(&s) {
                assert_eq!(s.len(), DENSE_SIZE);
                return;
            }
            assert!(s.len() <= 300);
        }
        panic!("never promoted");
    }

    #[test]
    fn sparse_decode_total_is_registers() {
        let mut s = new_sparse();
        for i in 0..300u32 {
            pfadd(&mut s, format!("e{i}").as_bytes());
        }
        let total: usize = decode_sparse(&s)
            .split(' ')
            .map(|t| match t.split_once(':') {
                Some((_, rest)) => rest.rsplit(',').next().unwrap().parse::<usize>().unwrap(),
                None => 0,
            })
            .sum();
        assert_eq!(total, REGISTERS);
    }

    #[test]
    fn corrupt_values_never_panic() {
        let mut rng = 0x1234_5678u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for _ in 0..2000 {
            let mut v = new_sparse();
            let n = (next() % 40) as usize;
            for _ in 0..n {
                v.push(next() as u8);
            }
            let at = HDR + (next() as usize % (v.len() - HDR));
            v[at] = next() as u8;
            let _ = count(&v);
            let mut max = vec![0u8; REGISTERS];
            let _ = merge_into(&mut max, &v);
            let mut w = v.clone();
            for k in 0..20 {
                if add(&mut w, format!("{k}").as_bytes(), 3000).is_err() {
                    break;
                }
            }
            let _ = sparse_to_dense(&mut v);
        }
    }

    #[test]
    fn cache_bits() {
        let mut v = new_sparse();
        assert_eq!(cached_card(&v), Some(0));
        invalidate_cache(&mut v);
        assert_eq!(cached_card(&v), None);
        set_cached_card(&mut v, 42);
        assert_eq!(cached_card(&v), Some(42));
    }

    #[test]
    fn estimator_of_empty_and_raw() {
        assert_eq!(count_raw(&vec![0u8; REGISTERS]), 0);
        let mut max = vec![0u8; REGISTERS];
        max[0] = 1;
        assert_eq!(count_raw(&max), 1);
    }
}
