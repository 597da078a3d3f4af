//! Small byte-string helpers shared by every layer: Redis's number parsing
//! rules (`string2ll`, `strtod` as Redis checks it) and glob matching
//! (`stringmatchlen`), written without recursion so that a hostile pattern
//! cannot exhaust the stack; and small process helpers (the wall clock,
//! the test hook's sleep).

pub(crate) mod child;

/// Parses a signed 64-bit integer with Redis's `string2ll` rules: no
/// whitespace, no leading `+`, no leading zeros, no `-0`.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [] => return None,
        [b'0'] => return Some(0),
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
    }
    if neg {
        if v > i64::MAX as u64 + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Parses a double the way Redis validates `strtod`: the whole string must
/// be a number (decimal, hex, `inf`/`infinity`), no surrounding whitespace,
/// no NaN, no overflow to infinity, no underflow to zero.
pub(crate) fn parse_f64(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    let first = *s.first()?;
    if first.is_ascii_whitespace() {
        return None;
    }
    let unsigned = text.trim_start_matches(['+', '-']);
    if text.len() - unsigned.len() > 1 {
        return None;
    }
    let lower = unsigned.to_ascii_lowercase();
    if lower == "inf" || lower == "infinity" {
        return Some(if first == b'-' {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if let Some(hex) = lower.strip_prefix("0x") {
        let v = parse_hex_float(hex)?;
        return Some(if first == b'-' { -v } else { v });
    }
    // Rust accepts "nan", "inf" spellings we handled above, and nothing
    // strtod would not: restrict to the decimal alphabet first.
    if !unsigned
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_infinite() {
        return None;
    }
    if v == 0.0 {
        let mantissa = unsigned.split(['e', 'E']).next().unwrap_or("");
        if mantissa.bytes().any(|c| (b'1'..=b'9').contains(&c)) {
            return None;
        }
    }
    Some(v)
}

fn parse_hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find('p') {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    if v.is_infinite() { None } else { Some(v) }
}

/// Redis's protection against abusive patterns (`stringmatchlen_impl`
/// gives up below 1000 nested `*`s): a pattern whose match reaches a
/// 1001st `*` group that is not its last character matches nothing.
const MAX_STAR_NESTING: usize = 1000;

/// Glob-style matching as Redis's `stringmatchlen`: `*`, `?`, `[abc]`,
/// `[^a-z]`, `\x`. Iterative with single-star backtracking, so it runs in
/// O(pattern × string) at worst and never recurses.
pub(crate) fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    let (mut p, mut s) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let mut stars = 0usize;
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    while s < string.len() {
        if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    while p < pattern.len() && pattern[p] == b'*' {
                        p += 1;
                    }
                    if p == pattern.len() {
                        return true;
                    }
                    stars += 1;
                    if stars > MAX_STAR_NESTING {
                        return false;
                    }
                    star = Some((p, s));
                    continue;
                }
                b'?' => {
                    p += 1;
                    s += 1;
                    continue;
                }
                b'[' => {
                    let (matched, next) = match_class(pattern, p + 1, string[s], nocase);
                    if matched {
                        p = next;
                        s += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pattern.len() => {
                    if eq(pattern[p + 1], string[s]) {
                        p += 2;
                        s += 1;
                        continue;
                    }
                }
                c => {
                    if eq(c, string[s]) {
                        p += 1;
                        s += 1;
                        continue;
                    }
                }
            }
        }
        match star {
            Some((sp, ss)) => {
                p = sp;
                s = ss + 1;
                star = Some((sp, ss + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches one byte against the class starting after `[` at `p`; returns
/// whether it matched and the pattern index after the class.
fn match_class(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> (bool, usize) {
    let lower = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = lower(c);
    let not = pattern.get(p) == Some(&b'^');
    if not {
        p += 1;
    }
    let mut matched = false;
    loop {
        match pattern.get(p) {
            None => break,
            Some(b']') => {
                p += 1;
                break;
            }
            Some(b'\\') if p + 1 < pattern.len() => {
                if lower(pattern[p + 1]) == c {
                    matched = true;
                }
                p += 2;
            }
            Some(&a) if pattern.get(p + 1) == Some(&b'-') && p + 2 < pattern.len() => {
                let (mut lo, mut hi) = (lower(a), lower(pattern[p + 2]));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                if (lo..=hi).contains(&c) {
                    matched = true;
                }
                p += 3;
            }
            Some(&a) => {
                if lower(a) == c {
                    matched = true;
                }
                p += 1;
            }
        }
    }
    (matched != not, p)
}

/// ASCII case-insensitive comparison of a client argument with a keyword.
pub(crate) fn eq_ic(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// An I/O error as C's `strerror` words it ("No such file or directory"),
/// without Rust's " (os error 2)" suffix, for texts Redis prints.
pub(crate) fn strerror(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// Appends `s` quoted as Redis's `sdscatrepr`: `"…"` with `\\ \" \n \r \t
/// \a \b` and `\xHH` for other unprintable bytes.
pub(crate) fn repr_into(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Wall-clock Unix milliseconds (Redis's `mstime`).
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Redis's `debugDelay`, behind `rdb-key-save-delay` and `key-load-delay`:
/// sleeps `usec` microseconds; a negative value sleeps 1 µs once in
/// `-usec` calls on average (a sleep's system call costs more than a
/// microsecond, so short delays are made by sleeping less often).
pub(crate) fn debug_delay(usec: i32) {
    let usec = if usec < 0 {
        u64::from(rand::random_range(0..usec.unsigned_abs()) == 0)
    } else {
        usec as u64
    };
    if usec > 0 {
        std::thread::sleep(std::time::Duration::from_micros(usec));
    }
}

/// `%.17g`: how Redis turns a Lua number argument into a string and a
/// score into DEBUG DIGEST's text.
pub(crate) fn fmt_g17(x: f64) -> String {
    fmt_g(x, 17)
}

/// C's `%.<prec>g` (Lua prints numbers with `%.14g`).
pub(crate) fn fmt_g(x: f64, prec: usize) -> String {
    let prec = prec.clamp(1, 17);
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{x:.*e}", prec - 1);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if (-4..prec as i32).contains(&exp) {
        if exp >= 0 {
            let int_len = exp as usize + 1;
            s.push_str(&digits[..int_len]);
            let frac = digits[int_len..].trim_end_matches('0');
            if !frac.is_empty() {
                s.push('.');
                s.push_str(frac);
            }
        } else {
            s.push_str("0.");
            for _ in 0..(-exp - 1) {
                s.push('0');
            }
            s.push_str(digits.trim_end_matches('0'));
        }
    } else {
        s.push_str(&digits[..1]);
        let frac = digits[1..].trim_end_matches('0');
        if !frac.is_empty() {
            s.push('.');
            s.push_str(frac);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", exp.unsigned_abs()));
    }
    s
}

/// Waits until `ready()` holds, woken by `notify.notify_waiters()` from
/// whoever makes it true: the wakeup is registered before each test, so a
/// change between the test and the wait is not missed.
pub(crate) async fn wait_until(notify: &tokio::sync::Notify, ready: impl Fn() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if ready() {
            return;
        }
        notified.await;
    }
}

/// Redis's `isValidAuxChar`: what an auxiliary field of nodes.conf (its
/// name, its value: a human node name) may hold: anything but NUL and
/// these punctuation marks.
pub(crate) fn valid_aux_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || (c != 0 && !b"!#$%&()*+:;<>?@[]^{|}~".contains(&c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [
            &b""[..],
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"1a",
            b"-",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn doubles_like_redis_strtod() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"+1e3"), Some(1000.0));
        assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_f64(b"Infinity"), Some(f64::INFINITY));
        assert_eq!(parse_f64(b"0x10"), Some(16.0));
        assert_eq!(parse_f64(b".5"), Some(0.5));
        for bad in [
            &b""[..],
            b"nan",
            b" 1",
            b"1 ",
            b"1e400",
            b"1e-400",
            b"abc",
            b"--1",
            b"1e",
        ] {
            assert_eq!(parse_f64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn abusive_star_nesting_matches_nothing() {
        // Redis 8.0.2's keyspace "Regression for pattern matching very
        // long nested loops": KEYS of 50,000 `*?` finds nothing.
        let key = vec![b'a'; 50_000];
        assert!(!glob_match(&b"*?".repeat(50_000), &key, false));
        // 1000 nested stars still match, and a trailing one is free.
        let ok = [b"*a".repeat(1000), b"*".to_vec()].concat();
        assert!(glob_match(&ok, &key, false));
        assert!(!glob_match(&b"*a".repeat(1001), &key, false));
    }

    #[test]
    fn globs_like_stringmatchlen() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"h\\*llo", b"h*llo", false));
        assert!(!glob_match(b"h\\*llo", b"hello", false));
        assert!(glob_match(b"*a*b*c", b"xxaxxbxxc", false));
        assert!(!glob_match(b"*a*b*c", b"xxaxxbxx", false));
        assert!(glob_match(b"HELLO", b"hello", true));
        assert!(glob_match(b"news.*", b"news.published:1", false));
        let hostile = vec![b'*'; 100_000];
        assert!(glob_match(&hostile, b"abc", false));
    }

    #[test]
    fn g17() {
        assert_eq!(fmt_g17(1.0), "1");
        assert_eq!(fmt_g17(1.5), "1.5");
        assert_eq!(fmt_g17(0.1), "0.10000000000000001");
        assert_eq!(fmt_g17(-3.0), "-3");
        assert_eq!(fmt_g17(1e20), "1e+20");
        assert_eq!(fmt_g17(123456789012.0), "123456789012");
        assert_eq!(fmt_g17(0.0001), "0.0001");
        assert_eq!(fmt_g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(fmt_g(0.1, 14), "0.1");
        assert_eq!(fmt_g(1e15, 14), "1e+15");
        assert_eq!(fmt_g(1.234_567_890_123_45, 14), "1.2345678901235");
    }
}

/// `locale-collate`'s check: whether `name` is a collation locale this
/// system has (`newlocale`, which changes nothing; "" is the
/// environment's).
pub(crate) fn collate_locale_exists(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a valid C string; the locale made is freed at once.
    unsafe {
        let loc = libc::newlocale(libc::LC_COLLATE_MASK, c.as_ptr(), std::ptr::null_mut());
        if loc.is_null() {
            return false;
        }
        libc::freelocale(loc);
    }
    true
}

/// Sets the process's collation locale (Redis's
/// `setlocale(LC_COLLATE, …)`), which [`strcoll`] then follows; false if
/// there is no such locale.
pub(crate) fn set_collate_locale(name: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(name) else {
        return false;
    };
    // SAFETY: a valid C string. Only LC_COLLATE changes, which only
    // `strcoll` reads.
    !unsafe { libc::setlocale(libc::LC_COLLATE, c.as_ptr()) }.is_null()
}

/// C's `strcoll` in the collation locale set: what SORT ALPHA compares
/// with. Like Redis (which hands it the strings' buffers), each side ends
/// at its first NUL byte.
pub(crate) fn strcoll(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let cut = |s: &[u8]| {
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        // No NUL inside after the cut, so this cannot fail.
        std::ffi::CString::new(&s[..end]).unwrap_or_default()
    };
    let (a, b) = (cut(a), cut(b));
    // SAFETY: two valid C strings.
    unsafe { libc::strcoll(a.as_ptr(), b.as_ptr()) }.cmp(&0)
}

/// The CPUs a `*-cpulist` setting names, read as Redis's `setcpuaffinity`
/// (util-linux's `taskset` syntax: `0,2,3`, `0,2-3`, `0-20:2`): None where
/// Redis gives up on the list and pins nothing.
pub(crate) fn parse_cpulist(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (range, stride) = match part.split_once(':') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        let num = |s: &str| -> Option<usize> {
            // strtoul after an isdigit check: leading digits only.
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || digits != s.len() {
                return None;
            }
            s.parse().ok()
        };
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(range)?;
                (a, a)
            }
        };
        // A stride needs a range (`3:2` is not a list).
        let s = match stride {
            Some(s) if range.contains('-') => num(s)?,
            Some(_) => return None,
            None => 1,
        };
        if s == 0 || a > b || b >= libc::CPU_SETSIZE as usize {
            return None;
        }
        cpus.extend((a..=b).step_by(s));
    }
    Some(cpus)
}

/// Pins the calling thread to the CPUs of `list` (Redis's
/// `redisSetCpuAffinity`); a list Redis would not read pins nothing.
/// Threads the caller starts afterwards inherit it.
pub(crate) fn set_cpu_affinity(list: &str) {
    let Some(cpus) = parse_cpulist(list) else {
        return;
    };
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it (each
    // CPU below CPU_SETSIZE); pid 0 is the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in cpus {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod cpulist_tests {
    use super::*;

    #[test]
    fn cpulists_read_as_taskset_does() {
        assert_eq!(parse_cpulist("0"), Some(vec![0]));
        assert_eq!(parse_cpulist("0,2,3"), Some(vec![0, 2, 3]));
        assert_eq!(parse_cpulist("0,2-3"), Some(vec![0, 2, 3]));
        assert_eq!(parse_cpulist("0-6:2"), Some(vec![0, 2, 4, 6]));
        assert_eq!(parse_cpulist("1-2,5-9:3"), Some(vec![1, 2, 5, 8]));
        for bad in ["", "a", "3-1", "0-4:0", "1,", "-1", "1-", "0-2:x", "2:1"] {
            assert_eq!(parse_cpulist(bad), None, "{bad}");
        }
    }

    #[test]
    fn strcoll_stops_at_nul_and_orders_in_c_locale() {
        assert_eq!(strcoll(b"a", b"b"), std::cmp::Ordering::Less);
        assert_eq!(strcoll(b"a\0z", b"a\0b"), std::cmp::Ordering::Equal);
        assert!(collate_locale_exists("C"));
        assert!(!collate_locale_exists("no_such_locale.X"));
    }
}
