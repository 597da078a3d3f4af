//! A window rule: the keys it covers (a glob pattern), how long their
//! members live (a duration over Unix seconds or milliseconds), and where
//! aged-out members go (`MOVETO`). A value type with its parsing, below the
//! settings that store rules (`config`) and the keyspace that applies them
//! (`keyspace::windows`).

use crate::util::{eq_ic, parse_i64};

/// The clock unit a rule reads scores in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Seconds,
    Millis,
}

impl Unit {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Millis => "ms",
        }
    }

    pub(crate) fn parse(s: &[u8]) -> Option<Unit> {
        if eq_ic(s, "s") {
            Some(Unit::Seconds)
        } else if eq_ic(s, "ms") {
            Some(Unit::Millis)
        } else {
            None
        }
    }
}

#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) pattern: Box<[u8]>,
    pub(crate) duration_ms: u64,
    pub(crate) unit: Unit,
    /// A list key (or template with `{key}`) that receives aged-out members.
    pub(crate) moveto: Option<Box<[u8]>>,
    /// The pattern has no glob characters: it names one key.
    exact: bool,
    /// Bytes before the first glob character.
    prefix_len: usize,
    /// Order of definition; later rules win ties.
    pub(crate) seq: u64,
}

impl Rule {
    pub(crate) fn new(pattern: &[u8], duration_ms: u64, unit: Unit, moveto: Option<&[u8]>) -> Rule {
        let prefix_len = literal_prefix_len(pattern);
        Rule {
            pattern: pattern.into(),
            duration_ms,
            unit,
            moveto: moveto.map(Into::into),
            exact: prefix_len == pattern.len(),
            prefix_len,
            seq: 0,
        }
    }

    /// Scores strictly below this have aged out at `now_ms`.
    pub(crate) fn cutoff(&self, now_ms: u64) -> f64 {
        let live_from_ms = now_ms as f64 - self.duration_ms as f64;
        match self.unit {
            Unit::Seconds => live_from_ms / 1000.0,
            Unit::Millis => live_from_ms,
        }
    }

    /// The first millisecond at which a member of score `score` is aged
    /// out (0: already; `u64::MAX`: never).
    pub(crate) fn deadline_ms(&self, score: f64) -> u64 {
        let score_ms = match self.unit {
            Unit::Seconds => score * 1000.0,
            Unit::Millis => score,
        };
        let at = score_ms + self.duration_ms as f64;
        if at.is_nan() || at < 0.0 {
            0
        } else if at >= u64::MAX as f64 {
            u64::MAX
        } else {
            // Aged out when cutoff > score, i.e. now_ms > score_ms + D.
            at.floor() as u64 + 1
        }
    }

    /// The destination list for members of `key`, if the rule hands off.
    pub(crate) fn destination(&self, key: &[u8]) -> Option<Vec<u8>> {
        let t = self.moveto.as_deref()?;
        let mut out = Vec::with_capacity(t.len() + key.len());
        let mut i = 0;
        while i < t.len() {
            if t[i..].starts_with(b"{key}") {
                out.extend_from_slice(key);
                i += 5;
            } else {
                out.push(t[i]);
                i += 1;
            }
        }
        Some(out)
    }

    /// The duration as written back in the rule's unit (`86400`, `0.5`).
    pub(crate) fn duration_in_unit(&self) -> String {
        match self.unit {
            Unit::Millis => self.duration_ms.to_string(),
            Unit::Seconds if self.duration_ms.is_multiple_of(1000) => {
                (self.duration_ms / 1000).to_string()
            }
            Unit::Seconds => {
                let mut s = format!("{}.{:03}", self.duration_ms / 1000, self.duration_ms % 1000);
                while s.ends_with('0') {
                    s.pop();
                }
                s
            }
        }
    }

    /// Precedence: exact names first, then longer literal prefixes, then
    /// the most recently set.
    pub(crate) fn precedence(&self) -> (bool, usize, u64) {
        (self.exact, self.prefix_len, self.seq)
    }
}

fn literal_prefix_len(pattern: &[u8]) -> usize {
    pattern
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len())
}

/// Parses a duration: an integer in `unit`, or a number with a suffix
/// (`ms`, `s`, `m`, `h`, `d`). Returns milliseconds.
pub(crate) fn parse_duration(s: &[u8], unit: Unit) -> Option<u64> {
    let text = std::str::from_utf8(s).ok()?.to_ascii_lowercase();
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (num, suffix) = text.split_at(split);
    let per_unit_ms = match suffix {
        "" => match unit {
            Unit::Seconds => 1000.0,
            Unit::Millis => 1.0,
        },
        "ms" => 1.0,
        "s" => 1000.0,
        "m" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let n: f64 = if suffix.is_empty() {
        parse_i64(num.as_bytes())? as f64
    } else {
        num.parse().ok()?
    };
    let ms = n * per_unit_ms;
    if !ms.is_finite() || ms <= 0.0 || ms > 1e15 {
        return None;
    }
    Some(ms.round() as u64)
}

/// Parses a command-line rule: `PATTERN=DURATION[:s|:ms][:moveto=DEST]`.
pub(crate) fn parse_cli_rule(spec: &str) -> Result<Rule, String> {
    let bad = || {
        format!("invalid --zwindow rule '{spec}': expected PATTERN=DURATION[:s|:ms][:moveto=DEST]")
    };
    // The first '=' ends the pattern (patterns containing '=' need ZWINDOW SET).
    let (pattern, rest) = spec
        .split_once('=')
        .filter(|(p, _)| !p.is_empty())
        .ok_or_else(bad)?;
    let (rest, moveto) = match rest.split_once(":moveto=") {
        Some((r, dest)) if !dest.is_empty() => (r, Some(dest.as_bytes())),
        Some(_) => return Err(bad()),
        None => (rest, None),
    };
    let mut parts = rest.splitn(2, ':');
    let duration = parts.next().ok_or_else(bad)?;
    let mut unit = Unit::Seconds;
    for part in parts {
        if let Some(u) = Unit::parse(part.as_bytes()) {
            unit = u;
        } else {
            return Err(bad());
        }
    }
    let ms = parse_duration(duration.as_bytes(), unit).ok_or_else(bad)?;
    Ok(Rule::new(pattern.as_bytes(), ms, unit, moveto))
}
