//! A faithful port of Redis's `deps/fpconv/fpconv_dtoa.c` and
//! `fpconv_powers.h` (Redis 7.2+/8.0, night-shift's fpconv, after Florian
//! Loitsch's Grisu2; Boost Software License 1.0), the formatter behind
//! `d2string` and so every `addReplyDouble`.
//!
//! Grisu2 is not always shortest: 38.76549185212588 prints as
//! `38.765491852125876`, as redis-server does. Every step keeps the C's
//! unsigned wrap-around and truncations so the digits are the same for
//! every double; the digit and output buffers are fixed arrays, nothing is
//! allocated.

const FRACMASK: u64 = 0x000F_FFFF_FFFF_FFFF;
const EXPMASK: u64 = 0x7FF0_0000_0000_0000;
const HIDDENBIT: u64 = 0x0010_0000_0000_0000;
const SIGNMASK: u64 = 0x8000_0000_0000_0000;
const EXPBIAS: i32 = 1023 + 52;

const NPOWERS: i32 = 87;
const STEPPOWERS: i32 = 8;
const FIRSTPOWER: i32 = -348; // 10 ^ -348
const EXPMAX: i32 = -32;
const EXPMIN: i32 = -60;

static TENS: [u64; 20] = [
    10000000000000000000,
    1000000000000000000,
    100000000000000000,
    10000000000000000,
    1000000000000000,
    100000000000000,
    10000000000000,
    1000000000000,
    100000000000,
    10000000000,
    1000000000,
    100000000,
    10000000,
    1000000,
    100000,
    10000,
    1000,
    100,
    10,
    1,
];

/// `powers_ten` of fpconv_powers.h: (frac, exp) of 10^-348, 10^-340, …,
/// 10^340 as normalized 64-bit significands.
#[rustfmt::skip]
static POWERS_TEN: [(u64, i32); 87] = [
    (18054884314459144840, -1220), (13451937075301367670, -1193),
    (10022474136428063862, -1166), (14934650266808366570, -1140),
    (11127181549972568877, -1113), (16580792590934885855, -1087),
    (12353653155963782858, -1060), (18408377700990114895, -1034),
    (13715310171984221708, -1007), (10218702384817765436, -980),
    (15227053142812498563, -954), (11345038669416679861, -927),
    (16905424996341287883, -901), (12595523146049147757, -874),
    (9384396036005875287, -847), (13983839803942852151, -821),
    (10418772551374772303, -794), (15525180923007089351, -768),
    (11567161174868858868, -741), (17236413322193710309, -715),
    (12842128665889583758, -688), (9568131466127621947, -661),
    (14257626930069360058, -635), (10622759856335341974, -608),
    (15829145694278690180, -582), (11793632577567316726, -555),
    (17573882009934360870, -529), (13093562431584567480, -502),
    (9755464219737475723, -475), (14536774485912137811, -449),
    (10830740992659433045, -422), (16139061738043178685, -396),
    (12024538023802026127, -369), (17917957937422433684, -343),
    (13349918974505688015, -316), (9946464728195732843, -289),
    (14821387422376473014, -263), (11042794154864902060, -236),
    (16455045573212060422, -210), (12259964326927110867, -183),
    (18268770466636286478, -157), (13611294676837538539, -130),
    (10141204801825835212, -103), (15111572745182864684, -77),
    (11258999068426240000, -50), (16777216000000000000, -24),
    (12500000000000000000, 3), (9313225746154785156, 30),
    (13877787807814456755, 56), (10339757656912845936, 83),
    (15407439555097886824, 109), (11479437019748901445, 136),
    (17105694144590052135, 162), (12744735289059618216, 189),
    (9495567745759798747, 216), (14149498560666738074, 242),
    (10542197943230523224, 269), (15709099088952724970, 295),
    (11704190886730495818, 322), (17440603504673385349, 348),
    (12994262207056124023, 375), (9681479787123295682, 402),
    (14426529090290212157, 428), (10748601772107342003, 455),
    (16016664761464807395, 481), (11933345169920330789, 508),
    (17782069995880619868, 534), (13248674568444952270, 561),
    (9871031767461413346, 588), (14708983551653345445, 614),
    (10959046745042015199, 641), (16330252207878254650, 667),
    (12166986024289022870, 694), (18130221999122236476, 720),
    (13508068024458167312, 747), (10064294952495520794, 774),
    (14996968138956309548, 800), (11173611982879273257, 827),
    (16649979327439178909, 853), (12405201291620119593, 880),
    (9242595204427927429, 907), (13772540099066387757, 933),
    (10261342003245940623, 960), (15290591125556738113, 986),
    (11392378155556871081, 1013), (16975966327722178521, 1039),
    (12648080533535911531, 1066),
];

#[derive(Clone, Copy)]
struct Fp {
    frac: u64,
    exp: i32,
}

fn find_cachedpow10(exp: i32, k: &mut i32) -> Fp {
    const ONE_LOG_TEN: f64 = 0.30102999566398114;
    // C: `const int approx = -(exp + npowers) * one_log_ten;` truncates.
    let approx = (f64::from(-(exp + NPOWERS)) * ONE_LOG_TEN) as i32;
    let mut idx = (approx - FIRSTPOWER) / STEPPOWERS;
    // The C loops until it lands; bounded here by the table.
    for _ in 0..NPOWERS {
        let i = idx.clamp(0, NPOWERS - 1);
        let (frac, pexp) = POWERS_TEN[i as usize];
        let current = exp + pexp + 64;
        if current < EXPMIN && i < NPOWERS - 1 {
            idx = i + 1;
            continue;
        }
        if current > EXPMAX && i > 0 {
            idx = i - 1;
            continue;
        }
        *k = FIRSTPOWER + i * STEPPOWERS;
        return Fp { frac, exp: pexp };
    }
    let i = idx.clamp(0, NPOWERS - 1);
    *k = FIRSTPOWER + i * STEPPOWERS;
    let (frac, exp) = POWERS_TEN[i as usize];
    Fp { frac, exp }
}

fn build_fp(d: f64) -> Fp {
    let bits = d.to_bits();
    let mut fp = Fp {
        frac: bits & FRACMASK,
        exp: ((bits & EXPMASK) >> 52) as i32,
    };
    if fp.exp != 0 {
        fp.frac += HIDDENBIT;
        fp.exp -= EXPBIAS;
    } else {
        fp.exp = -EXPBIAS + 1;
    }
    fp
}

fn normalize(fp: &mut Fp) {
    // Never zero here: fpconv_dtoa filters 0 before.
    while fp.frac & HIDDENBIT == 0 && fp.frac != 0 {
        fp.frac <<= 1;
        fp.exp -= 1;
    }
    let shift = 64 - 52 - 1;
    fp.frac <<= shift;
    fp.exp -= shift;
}

fn get_normalized_boundaries(fp: &Fp) -> (Fp, Fp) {
    let mut upper = Fp {
        frac: (fp.frac << 1) + 1,
        exp: fp.exp - 1,
    };
    while upper.frac & (HIDDENBIT << 1) == 0 {
        upper.frac <<= 1;
        upper.exp -= 1;
    }
    let u_shift = 64 - 52 - 2;
    upper.frac <<= u_shift;
    upper.exp -= u_shift;

    let l_shift = if fp.frac == HIDDENBIT { 2 } else { 1 };
    let mut lower = Fp {
        frac: (fp.frac << l_shift).wrapping_sub(1),
        exp: fp.exp - l_shift,
    };
    lower.frac = lower
        .frac
        .checked_shl((lower.exp - upper.exp) as u32)
        .unwrap_or(0);
    lower.exp = upper.exp;
    (lower, upper)
}

fn multiply(a: &Fp, b: &Fp) -> Fp {
    const LOMASK: u64 = 0x0000_0000_FFFF_FFFF;
    let ah_bl = (a.frac >> 32) * (b.frac & LOMASK);
    let al_bh = (a.frac & LOMASK) * (b.frac >> 32);
    let al_bl = (a.frac & LOMASK) * (b.frac & LOMASK);
    let ah_bh = (a.frac >> 32) * (b.frac >> 32);

    let mut tmp = (ah_bl & LOMASK) + (al_bh & LOMASK) + (al_bl >> 32);
    // round up
    tmp += 1u64 << 31;

    Fp {
        frac: ah_bh
            .wrapping_add(ah_bl >> 32)
            .wrapping_add(al_bh >> 32)
            .wrapping_add(tmp >> 32),
        exp: a.exp + b.exp + 64,
    }
}

fn round_digit(digits: &mut [u8], ndigits: usize, delta: u64, mut rem: u64, kappa: u64, frac: u64) {
    let Some(last) = ndigits.checked_sub(1).and_then(|i| digits.get_mut(i)) else {
        return;
    };
    while rem < frac
        && delta.wrapping_sub(rem) >= kappa
        && (rem.wrapping_add(kappa) < frac
            || frac.wrapping_sub(rem) > rem.wrapping_add(kappa).wrapping_sub(frac))
    {
        *last = last.wrapping_sub(1);
        rem = rem.wrapping_add(kappa);
    }
}

fn generate_digits(
    fp: &Fp,
    upper: &Fp,
    lower: &Fp,
    digits: &mut [u8; DIGITS],
    k: &mut i32,
) -> usize {
    let wfrac = upper.frac.wrapping_sub(fp.frac);
    let mut delta = upper.frac.wrapping_sub(lower.frac);

    let shift = (-upper.exp) as u32; // 32..=60 after the cached power
    let one_frac = 1u64 << shift;

    let mut part1 = upper.frac >> shift;
    let mut part2 = upper.frac & (one_frac - 1);

    let mut idx = 0usize;
    let mut kappa: i32 = 10;
    // 1000000000
    let mut divp = 10usize;
    while kappa > 0 {
        let div = TENS[divp];
        // C: `unsigned digit = part1 / div;`
        let digit = (part1 / div) as u32;
        if (digit != 0 || idx != 0) && idx < DIGITS {
            digits[idx] = (digit as u8).wrapping_add(b'0');
            idx += 1;
        }
        part1 = part1.wrapping_sub(u64::from(digit).wrapping_mul(div));
        kappa -= 1;

        let tmp = (part1 << shift).wrapping_add(part2);
        if tmp <= delta {
            *k += kappa;
            round_digit(digits, idx, delta, tmp, div << shift, wfrac);
            return idx;
        }
        divp += 1;
    }

    // 10
    let mut unit = 18usize;
    loop {
        part2 = part2.wrapping_mul(10);
        delta = delta.wrapping_mul(10);
        kappa -= 1;

        let digit = (part2 >> shift) as u32;
        if (digit != 0 || idx != 0) && idx < DIGITS {
            digits[idx] = (digit as u8).wrapping_add(b'0');
            idx += 1;
        }

        part2 &= one_frac - 1;
        if part2 < delta || unit == 0 {
            *k += kappa;
            round_digit(
                digits,
                idx,
                delta,
                part2,
                one_frac,
                wfrac.wrapping_mul(TENS[unit]),
            );
            return idx;
        }
        unit -= 1;
    }
}

const DIGITS: usize = 18;

fn grisu2(d: f64, digits: &mut [u8; DIGITS], big_k: &mut i32) -> usize {
    let mut w = build_fp(d);
    let (mut lower, mut upper) = get_normalized_boundaries(&w);
    normalize(&mut w);

    let mut k = 0;
    let cp = find_cachedpow10(upper.exp, &mut k);

    w = multiply(&w, &cp);
    upper = multiply(&upper, &cp);
    lower = multiply(&lower, &cp);

    lower.frac = lower.frac.wrapping_add(1);
    upper.frac = upper.frac.wrapping_sub(1);

    *big_k = -k;
    generate_digits(&w, &upper, &lower, digits, big_k)
}

/// Writes into `dest` from its start, as the C's `memcpy`/`memset`;
/// writes past the end are dropped (never reached: see [`MAX_LEN`]).
struct Out<'a> {
    dest: &'a mut [u8],
    idx: usize,
}

impl Out<'_> {
    fn push(&mut self, b: u8) {
        if let Some(slot) = self.dest.get_mut(self.idx) {
            *slot = b;
        }
        self.idx += 1;
    }
    fn extend(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push(b);
        }
    }
    fn zeros(&mut self, n: i32) {
        for _ in 0..n.max(0) {
            self.push(b'0');
        }
    }
}

fn emit_digits(digits: &[u8], dest: &mut [u8], k: i32, neg: bool) -> usize {
    let mut ndigits = digits.len() as i32;
    let mut exp = (k + ndigits - 1).abs();
    let mut o = Out { dest, idx: 0 };

    // write plain integer
    if k >= 0 && exp < ndigits + 7 {
        o.extend(digits);
        o.zeros(k);
        return o.idx;
    }

    // write decimal w/o scientific notation
    if k < 0 && (k > -7 || exp < 4) {
        let offset = ndigits - k.abs();
        if offset <= 0 {
            // fp < 1.0 -> write leading zero
            o.extend(b"0.");
            o.zeros(-offset);
            o.extend(digits);
        } else {
            // fp > 1.0
            let cut = offset as usize;
            o.extend(&digits[..cut]);
            o.push(b'.');
            o.extend(&digits[cut..]);
        }
        return o.idx;
    }

    // write decimal w/ scientific notation
    ndigits = ndigits.min(18 - i32::from(neg));
    let nd = ndigits.max(1) as usize;
    o.push(digits[0]);
    if ndigits > 1 {
        o.push(b'.');
        o.extend(&digits[1..nd]);
    }
    o.push(b'e');
    o.push(if k + ndigits - 1 < 0 { b'-' } else { b'+' });

    let mut cent = 0;
    if exp > 99 {
        cent = exp / 100;
        o.push(cent as u8 + b'0');
        exp -= cent * 100;
    }
    if exp > 9 {
        let dec = exp / 10;
        o.push(dec as u8 + b'0');
        exp -= dec * 10;
    } else if cent != 0 {
        o.push(b'0');
    }
    o.push((exp % 10) as u8 + b'0');
    o.idx
}

fn filter_special(fp: f64, dest: &mut [u8]) -> usize {
    if fp == 0.0 {
        dest[0] = b'0';
        return 1;
    }
    let bits = fp.to_bits();
    if bits & EXPMASK != EXPMASK {
        return 0;
    }
    dest[..3].copy_from_slice(if bits & FRACMASK != 0 { b"nan" } else { b"inf" });
    3
}

/// The longest text: a sign, 17 digits and 7 zeros (`-591999999999999970000000`).
/// One more than the C's `char dest[24]` declares: Redis passes its larger
/// `d2string` buffer.
pub(crate) const MAX_LEN: usize = 25;

/// `fpconv_dtoa(d, dest)`: writes the representation at the start of
/// `dest` (at least [`MAX_LEN`] bytes, else nothing is written) and returns
/// its length.
pub(crate) fn fpconv_dtoa(d: f64, dest: &mut [u8]) -> usize {
    let mut digits = [0u8; DIGITS];
    let mut str_len = 0usize;
    let mut neg = false;

    if dest.len() < MAX_LEN {
        return 0;
    }
    if d.to_bits() & SIGNMASK != 0 {
        dest[0] = b'-';
        str_len += 1;
        neg = true;
    }

    let spec = filter_special(d, &mut dest[str_len..]);
    if spec != 0 {
        return str_len + spec;
    }

    let mut k = 0;
    let ndigits = grisu2(d, &mut digits, &mut k).max(1);
    str_len += emit_digits(&digits[..ndigits], &mut dest[str_len..], k, neg);
    str_len.min(MAX_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dtoa(d: f64) -> String {
        let mut b = [0u8; MAX_LEN];
        let n = fpconv_dtoa(d, &mut b);
        String::from_utf8(b[..n].to_vec()).unwrap()
    }

    /// Expected strings printed by redis-server 8.0.2 (`ZADD k <x> m`,
    /// `ZSCORE k m`) — not by Rust's shortest formatting.
    #[test]
    fn as_redis_8_0_2() {
        let cases: &[(f64, &str)] = &[
            (38.76549185212588, "38.765491852125876"),
            (0.1, "0.1"),
            (0.3333333333333333, "0.3333333333333333"),
            (1e-07, "1e-7"),
            (6.02e+23, "6.02e+23"),
            (-4.2e-300, "-4.2e-300"),
            (1.7976931348623157e+308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
            (4.9407e-320, "4.9407e-320"),
            (1.0000000000000004e+19, "10000000000000004000"),
            (1e+21, "1e+21"),
            (123456789.125, "123456789.125"),
            (0.30000000000000004, "0.30000000000000004"),
            (-1.5e-100, "-1.5e-100"),
            (1e+23, "99999999999999990000000"),
            (9.223372036854776e+18, "9223372036854776000"),
            (1.2345678901234566e-07, "1.2345678901234566e-7"),
            (-9.87654321e+123, "-9.87654321e+123"),
            (1000000000000000.2, "1000000000000000.3"),
            (1e-06, "0.000001"),
            (1.5e-06, "1.5e-6"),
            (5.551115123125783e-17, "5.551115123125783e-17"),
            (14169.626117023414, "1.4169626117023414e+4"),
            (-27862564.327137534, "-2.7862564327137534e+7"),
            (4.5647017935303267e+23, "456470179353032670000000"),
            (7.036870839547745e+177, "7.0368708395477454e+177"),
            (-3.134141599182467e+21, "-3134141599182467000000"),
            (18960.09827864, "1.896009827864e+4"),
            (-6.862210827312862e+22, "-68622108273128620000000"),
            (1657883415.9976318, "1.6578834159976318e+9"),
            (-5.92e23, "-591999999999999970000000"),
            (5.92e23, "591999999999999970000000"),
        ];
        for &(x, want) in cases {
            assert_eq!(dtoa(x), want, "formatting {x:e} ({:#x})", x.to_bits());
        }
    }
}
