//! Score parsing and formatting with Redis's exact textual rules.
//!
//! Redis parses scores with C `strtod` and then applies extra checks, and the
//! accepted language differs between *values* (ZADD/ZINCRBY: no surrounding
//! whitespace, overflow/underflow rejected) and *range bounds*
//! (ZRANGEBYSCORE: leading whitespace and even an empty string accepted,
//! overflow saturates to infinity). Rust's `f64::from_str` covers the decimal
//! grammar but not hex floats or strtod's range reporting, so this module
//! wraps it with a small lexer that reproduces both dialects (checked against
//! redis-server 7.0). Formatting follows Redis 7.2: shortest round-trip
//! digits laid out with `%.17g` rules, so `0.1` prints as `0.1` rather than
//! 7.0's `0.10000000000000001`.

/// One end of a score interval; infinities are ordinary values here.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScoreBound {
    Inclusive(f64),
    Exclusive(f64),
}

/// A lexicographic bound as accepted by ZRANGEBYLEX (`-`, `+`, `[x`, `(x`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LexBound {
    NegInf,
    PosInf,
    Inclusive(Vec<u8>),
    Exclusive(Vec<u8>),
}

/// How a strtod-like scan ended, so callers can apply Redis's differing
/// overflow rules.
struct Scanned {
    value: f64,
    /// The literal was finite but the value rounded to +-inf (ERANGE).
    overflow: bool,
    /// Nonzero digits rounded to zero (ERANGE with a zero result).
    underflow: bool,
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Parses the whole of `s` as a strtod literal (no surrounding whitespace).
/// Returns `None` when strtod would not consume every byte, or for NaN.
fn scan_full(s: &[u8]) -> Option<Scanned> {
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
        let v = if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        return Some(Scanned {
            value: v,
            overflow: false,
            underflow: false,
        });
    }
    let mag = if body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x' {
        scan_hex(&body[2..])?
    } else {
        scan_decimal(body)?
    };
    let value = if neg { -mag.value } else { mag.value };
    Some(Scanned { value, ..mag })
}

/// Unsigned decimal literal: digits, optional fraction, optional exponent.
fn scan_decimal(b: &[u8]) -> Option<Scanned> {
    let mut i = 0;
    let mut digits = 0usize;
    let mut nonzero = false;
    // The integer part's value, meaningful while it has at most 15 digits.
    let mut n = 0u64;
    while i < b.len() && b[i].is_ascii_digit() {
        nonzero |= b[i] != b'0';
        n = n.wrapping_mul(10).wrapping_add(u64::from(b[i] - b'0'));
        digits += 1;
        i += 1;
    }
    // A plain integer of up to 15 digits (below 2^53) converts exactly:
    // timestamps, the common score, skip the general conversion.
    if i == b.len() && (1..=15).contains(&digits) {
        return Some(Scanned {
            value: n as f64,
            overflow: false,
            underflow: false,
        });
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            nonzero |= b[i] != b'0';
            digits += 1;
            i += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] | 0x20) == b'e' {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    // The grammar above is a subset of what Rust accepts, so this cannot
    // fail; map an error to rejection anyway rather than trusting that.
    let text = std::str::from_utf8(b).ok()?;
    let value: f64 = text.parse().ok()?;
    Some(Scanned {
        value,
        overflow: value.is_infinite(),
        underflow: value == 0.0 && nonzero,
    })
}

/// Unsigned hex-float body after `0x`: hex digits, optional `.fraction`,
/// optional binary exponent `p[+-]d+`.
fn scan_hex(b: &[u8]) -> Option<Scanned> {
    let mut i = 0;
    let mut mant: u64 = 0;
    let mut sig_digits = 0u32;
    let mut sticky = false;
    let mut exp2: i64 = 0;
    let mut digits = 0usize;
    let mut seen_dot = false;
    while i < b.len() {
        let c = b[i];
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            b'.' if !seen_dot => {
                seen_dot = true;
                i += 1;
                continue;
            }
            _ => break,
        };
        digits += 1;
        // Keep 15 significant hex digits (60 bits): more than the 53 bits
        // of a double plus guard bits; the rest only feeds a sticky bit.
        if mant == 0 && d == 0 {
            if seen_dot {
                exp2 -= 4;
            }
        } else if sig_digits < 15 {
            mant = (mant << 4) | u64::from(d);
            sig_digits += 1;
            if seen_dot {
                exp2 -= 4;
            }
        } else {
            sticky |= d != 0;
            if !seen_dot {
                exp2 += 4;
            }
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] | 0x20) == b'p' {
        i += 1;
        let mut eneg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            eneg = b[i] == b'-';
            i += 1;
        }
        let start = i;
        let mut e: i64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            e = (e * 10 + i64::from(b[i] - b'0')).min(100_000);
            i += 1;
        }
        if i == start {
            return None;
        }
        exp2 += if eneg { -e } else { e };
    }
    if i != b.len() {
        return None;
    }
    if mant == 0 {
        return Some(Scanned {
            value: 0.0,
            overflow: false,
            underflow: false,
        });
    }
    if sticky {
        mant |= 1;
    }
    // u64 -> f64 rounds to nearest; scaling by powers of two is exact except
    // at the subnormal/overflow edges.
    let mut value = mant as f64;
    let mut e = exp2;
    while e > 0 && value.is_finite() {
        let step = e.min(1000);
        value *= 2f64.powi(step as i32);
        e -= step;
    }
    while e < 0 && value != 0.0 {
        let step = (-e).min(1000);
        value *= 2f64.powi(-(step as i32));
        e += step;
    }
    Some(Scanned {
        value,
        overflow: value.is_infinite(),
        underflow: value == 0.0,
    })
}

/// Parses a score value the way ZADD/ZINCRBY do (Redis `getDoubleFromObject`):
/// the whole string must be a strtod literal, no leading or trailing spaces,
/// no NaN, and a finite literal that overflows or underflows is an error.
pub(crate) fn parse_score(s: &[u8]) -> Option<f64> {
    let r = scan_full(s)?;
    if r.overflow || r.underflow || r.value.is_nan() {
        return None;
    }
    Some(r.value)
}

/// Redis 8.0's `fast_float_strtod`, whose end pointer SORT and the score
/// ranges check: decimal only (no hex, no leading whitespace), `inf`,
/// `infinity` and `nan` in any case, a literal past a double's range
/// saturating to infinity or zero; an empty string converts nothing and
/// leaves the end pointer on the NUL, which both callers take as 0.
fn fast_float(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let unsigned = match s[0] {
        b'+' | b'-' => &s[1..],
        _ => s,
    };
    if unsigned.first().is_none_or(|&c| is_c_space(c))
        || is_c_space(s[0])
        || (unsigned.len() >= 2 && unsigned[0] == b'0' && unsigned[1] | 0x20 == b'x')
    {
        return None;
    }
    Some(scan_full(s)?.value)
}

/// Parses a SORT weight as Redis 8.0's `sortCommandGeneric` checks
/// `fast_float_strtod`: the text is a C string (it ends at a NUL), nothing
/// may follow the number, NaN is rejected.
pub(crate) fn parse_sort_weight(s: &[u8]) -> Option<f64> {
    let s = s.split(|&b| b == 0).next().unwrap_or_default();
    fast_float(s).filter(|v| !v.is_nan())
}

/// Parses one end of a score range (Redis 8.0's `zslParseRange`): optional
/// `(` for exclusive, then [`fast_float`], NaN rejected.
pub(crate) fn parse_score_bound(s: &[u8]) -> Option<ScoreBound> {
    let (exclusive, rest) = match s.first() {
        Some(b'(') => (true, &s[1..]),
        _ => (false, s),
    };
    let v = fast_float(rest).filter(|v| !v.is_nan())?;
    Some(if exclusive {
        ScoreBound::Exclusive(v)
    } else {
        ScoreBound::Inclusive(v)
    })
}

/// Parses a ZRANGEBYLEX bound: `-`, `+`, `[member` or `(member`.
pub(crate) fn parse_lex_bound(s: &[u8]) -> Option<LexBound> {
    match s.first()? {
        b'-' if s.len() == 1 => Some(LexBound::NegInf),
        b'+' if s.len() == 1 => Some(LexBound::PosInf),
        b'[' => Some(LexBound::Inclusive(s[1..].to_vec())),
        b'(' => Some(LexBound::Exclusive(s[1..].to_vec())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_fast_path_matches_the_general_conversion() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 1..=20 {
            for _ in 0..200 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let digits: String = x.to_string().chars().cycle().take(len).collect();
                for text in [digits.clone(), format!("-{digits}"), format!("0{digits}")] {
                    let want: f64 = text.parse().unwrap();
                    let got = parse_score(text.as_bytes()).unwrap();
                    assert_eq!(got.to_bits(), want.to_bits(), "{text}");
                }
            }
        }
    }

    #[test]
    fn parse_values_like_redis() {
        let ok: &[(&str, f64)] = &[
            ("1", 1.0),
            ("-0", -0.0),
            ("+.5e1", 5.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("0x10", 16.0),
            ("0x1p-2", 0.25),
            ("-0X.8", -0.5),
            ("0x1P+4", 16.0),
            ("inf", f64::INFINITY),
            ("+inf", f64::INFINITY),
            ("-INF", f64::NEG_INFINITY),
            ("infinity", f64::INFINITY),
            ("-Infinity", f64::NEG_INFINITY),
            ("0e-999", 0.0),
            ("4.9e-324", 5e-324),
            ("1700000000000", 1.7e12),
            ("1E3", 1000.0),
        ];
        for &(s, v) in ok {
            let got = parse_score(s.as_bytes());
            assert_eq!(got.map(f64::to_bits), Some(v.to_bits()), "{s:?}");
        }
        for s in [
            "", " 1", "1 ", "1e400", "-1e400", "1e-400", "nan", "NaN", "-nan", "1e", "0x", "0xg",
            "inf ", "infinit", "1.2.3", "abc", "+", "-", ".", "1\0", "0x1p", "--1", "1e+",
        ] {
            assert_eq!(parse_score(s.as_bytes()), None, "{s:?}");
        }
    }

    #[test]
    fn parse_bounds_like_redis() {
        use ScoreBound::*;
        let cases: &[(&str, Option<ScoreBound>)] = &[
            ("1", Some(Inclusive(1.0))),
            ("(1", Some(Exclusive(1.0))),
            // Redis 8.0 (fast_float): no leading whitespace, no hex.
            (" 1", None),
            ("( 1", None),
            ("+1", Some(Inclusive(1.0))),
            ("(+1", Some(Exclusive(1.0))),
            ("1e", None),
            (".5", Some(Inclusive(0.5))),
            ("", Some(Inclusive(0.0))),
            ("(", Some(Exclusive(0.0))),
            (" ", None),
            ("( ", None),
            ("1e400", Some(Inclusive(f64::INFINITY))),
            ("(1e-400", Some(Exclusive(0.0))),
            ("-inf", Some(Inclusive(f64::NEG_INFINITY))),
            ("(+inf", Some(Exclusive(f64::INFINITY))),
            ("0x1", None),
            ("Infinity", Some(Inclusive(f64::INFINITY))),
            ("1 ", None),
            ("nan", None),
            ("((1", None),
            ("[1", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_score_bound(s.as_bytes()), *want, "{s:?}");
        }
    }

    #[test]
    fn parse_lex_bounds() {
        assert_eq!(parse_lex_bound(b"-"), Some(LexBound::NegInf));
        assert_eq!(parse_lex_bound(b"+"), Some(LexBound::PosInf));
        assert_eq!(
            parse_lex_bound(b"[a"),
            Some(LexBound::Inclusive(b"a".to_vec()))
        );
        assert_eq!(parse_lex_bound(b"("), Some(LexBound::Exclusive(Vec::new())));
        assert_eq!(parse_lex_bound(b"-a"), None);
        assert_eq!(parse_lex_bound(b"a"), None);
        assert_eq!(parse_lex_bound(b""), None);
    }
}
