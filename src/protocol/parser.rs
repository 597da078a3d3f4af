//! The request parser: turns the bytes a client sends into argument vectors.
//!
//! It accepts exactly what Redis 7.0's `networking.c` accepts — multibulk
//! arrays of bulk strings and inline commands — with the same limits and the
//! same error texts, because clients and proxies depend on both.
//!
//! The parser is *resumable*: it keeps its position inside the read buffer,
//! so a 2 MB bulk string that arrives in 16 KB pieces costs one length check
//! per read, not a re-parse. Arguments are spans into the read buffer (no
//! copy); inline commands, whose quotes and escapes must be decoded, are
//! copied into a scratch buffer the parser owns.
//!
//! An unfinished request costs nothing beyond its bytes in the read buffer:
//! the parser keeps only where it stands, and indexes the arguments (a span
//! each) once the last one has arrived, by walking the length lines again.
//! A client that announces `*2147483647` and sends empty arguments holds
//! what it sent, which the query buffer limit bounds; the index of a
//! complete request counts against that limit too ([`Parser::set_max_request`]).
//!
//! Client bytes never reach a general-purpose RESP decoder: nothing here
//! recurses, nothing allocates more than the bytes that actually arrived.

use std::fmt;

/// Longest inline request, and longest length line, Redis accepts (`PROTO_INLINE_MAX_SIZE`).
const INLINE_MAX: usize = 64 * 1024;
/// Largest multibulk count Redis 7.0 accepts (`INT_MAX`).
const MAX_MULTIBULK: i64 = i32::MAX as i64;
/// Before authentication Redis refuses larger requests (`authRequired`).
const UNAUTH_MAX_MULTIBULK: i64 = 10;
const UNAUTH_MAX_BULK: i64 = 16384;
/// The fewest bytes an argument takes: `$0\r\n` and the two bytes after its
/// (empty) body. A count the bytes in the buffer cannot back is a request
/// still arriving (or a lie), never indexed ahead of its arguments.
const MIN_ARG_BYTES: usize = 6;
/// What indexing one argument costs.
const SPAN_BYTES: u64 = std::mem::size_of::<(usize, usize)>() as u64;
/// An index that grew past this many spans (a request of many arguments) is
/// released once its batch ran, so an idle connection keeps no more.
const SPANS_KEEP: usize = 1024;

/// A protocol violation. The connection answers with the message and closes,
/// as Redis does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProtocolError {
    TooBigInline,
    TooBigMbulkCount,
    TooBigBulkCount,
    InvalidMultibulkLength,
    InvalidBulkLength,
    UnauthMultibulkLength,
    UnauthBulkLength,
    ExpectedDollar(u8),
    UnbalancedQuotes,
    /// The request's bytes and its argument index would pass the query
    /// buffer limit: the connection closes, as at that limit, without a
    /// reply.
    QueryBufferLimit,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ERR Protocol error: ")?;
        match self {
            ProtocolError::TooBigInline => f.write_str("too big inline request"),
            ProtocolError::TooBigMbulkCount => f.write_str("too big mbulk count string"),
            ProtocolError::TooBigBulkCount => f.write_str("too big bulk count string"),
            ProtocolError::InvalidMultibulkLength => f.write_str("invalid multibulk length"),
            ProtocolError::InvalidBulkLength => f.write_str("invalid bulk length"),
            ProtocolError::UnauthMultibulkLength => f.write_str("unauthenticated multibulk length"),
            ProtocolError::UnauthBulkLength => f.write_str("unauthenticated bulk length"),
            ProtocolError::ExpectedDollar(c) => write!(f, "expected '$', got '{}'", *c as char),
            ProtocolError::UnbalancedQuotes => f.write_str("unbalanced quotes in request"),
            ProtocolError::QueryBufferLimit => f.write_str("query buffer limit reached"),
        }
    }
}

/// Where in a request the parser stands between reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between requests (`spans` holds the last complete one's arguments).
    Start,
    /// Inside a multibulk request with this many bulk strings still to come
    /// (`spans` is empty until it completes).
    Multibulk { remaining: usize },
    /// Waiting for the body of a bulk string of this length.
    Bulk { remaining: usize, len: usize },
}

/// A resumable request parser bound to one connection's read buffer.
#[derive(Debug)]
pub(crate) struct Parser {
    state: State,
    /// First byte not yet consumed.
    pos: usize,
    /// Where the unfinished multibulk request starts (its `*`), and the
    /// arguments it announced: enough to index it once complete.
    req_start: usize,
    count: usize,
    /// Spans of the complete request's arguments, in `buf` or in `scratch`.
    spans: Vec<(usize, usize)>,
    inline: bool,
    scratch: Vec<u8>,
    max_bulk: i64,
    /// The read buffer plus a request's index may not pass this
    /// (`client-query-buffer-limit`).
    max_request: u64,
}

/// One complete request: arguments borrowed from the read buffer or the
/// parser's scratch space.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) spans: &'a [(usize, usize)],
}

impl<'a> Request<'a> {
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    pub(crate) fn get(&self, i: usize) -> Option<&'a [u8]> {
        self.spans.get(i).map(|&(s, e)| &self.data[s..e])
    }
}

/// Redis's `PROTO_MBULK_BIG_ARG`: a bulk argument this long or longer gets
/// a read buffer sized for it (see [`Parser::big_arg_end`]).
const BIG_ARG: usize = 32 * 1024;

impl Parser {
    pub(crate) fn new(max_bulk: i64) -> Parser {
        Parser {
            state: State::Start,
            pos: 0,
            req_start: 0,
            count: 0,
            spans: Vec::with_capacity(8),
            inline: false,
            scratch: Vec::new(),
            max_bulk,
            max_request: u64::MAX,
        }
    }

    pub(crate) fn set_max_bulk(&mut self, max_bulk: i64) {
        self.max_bulk = max_bulk;
    }

    /// `client-query-buffer-limit`: a complete request whose index (a span
    /// per argument) and the buffer holding it would pass this together is
    /// refused with [`ProtocolError::QueryBufferLimit`] before it is indexed.
    pub(crate) fn set_max_request(&mut self, limit: u64) {
        self.max_request = limit;
    }

    /// Bytes of the buffer fully consumed by complete requests.
    pub(crate) fn consumed(&self) -> usize {
        match self.state {
            State::Start => self.pos,
            // A partial request keeps its bytes in the buffer; `discard` only
            // drops what precedes it.
            _ => self.req_start,
        }
    }

    /// While the parser waits for the body of a big bulk argument (Redis's
    /// `PROTO_MBULK_BIG_ARG`, 32 KB, or more): the buffer length that holds
    /// the whole argument, so the caller can size its buffer once, as Redis
    /// does, instead of growing it by doubling as the body arrives.
    pub(crate) fn big_arg_end(&self) -> Option<usize> {
        match self.state {
            State::Bulk { len, .. } if len >= BIG_ARG => Some(self.pos + len + 2),
            _ => None,
        }
    }

    /// While the parser waits for the body of a big bulk argument: where
    /// that body starts in the buffer. Redis drops what precedes it (the
    /// request's header and its earlier arguments, parsed already) from
    /// its query buffer, so CLIENT LIST's `qbuf` counts the body alone.
    pub(crate) fn big_arg_start(&self) -> Option<usize> {
        self.big_arg_end().map(|_| self.pos)
    }

    /// The caller removed the first `n` bytes from the buffer (all consumed).
    /// Called once per batch, after its requests ran: the last one's
    /// index is no longer borrowed, and a large one is given back.
    pub(crate) fn discard(&mut self, n: usize) {
        debug_assert!(n <= self.consumed());
        self.pos -= n;
        if self.state != State::Start {
            self.req_start -= n;
        }
        if self.spans.capacity() > SPANS_KEEP {
            self.spans = Vec::with_capacity(8);
        }
    }

    /// Parses the next request from `buf`. `Ok(Some(req))` is a complete
    /// request (possibly of zero arguments, which callers skip); `Ok(None)`
    /// means more bytes are needed.
    pub(crate) fn next<'a>(
        &'a mut self,
        buf: &'a [u8],
        auth_required: bool,
    ) -> Result<Option<Request<'a>>, ProtocolError> {
        if self.parse(buf, auth_required)? {
            let data: &[u8] = if self.inline { &self.scratch } else { buf };
            Ok(Some(Request {
                data,
                spans: &self.spans,
            }))
        } else {
            Ok(None)
        }
    }

    fn parse(&mut self, buf: &[u8], auth_required: bool) -> Result<bool, ProtocolError> {
        if self.state == State::Start {
            self.spans.clear();
            self.inline = false;
            let Some(&first) = buf.get(self.pos) else {
                return Ok(false);
            };
            if first != b'*' {
                return self.parse_inline(buf);
            }
            if self.parse_whole(buf, auth_required) {
                return Ok(true);
            }
            let Some((count, next)) =
                read_line_number(buf, self.pos + 1).map_err(|_| ProtocolError::TooBigMbulkCount)?
            else {
                return Ok(false);
            };
            let count = count.filter(|&n| n <= MAX_MULTIBULK);
            let Some(count) = count else {
                return Err(ProtocolError::InvalidMultibulkLength);
            };
            if count > UNAUTH_MAX_MULTIBULK && auth_required {
                return Err(ProtocolError::UnauthMultibulkLength);
            }
            if count <= 0 {
                // `*0` and `*-1` are accepted and ignored.
                self.pos = next;
                return Ok(true);
            }
            // Nothing is reserved for the arguments announced: they are
            // indexed once they all arrived (`index`).
            self.req_start = self.pos;
            self.count = count as usize;
            self.pos = next;
            self.state = State::Multibulk {
                remaining: self.count,
            };
        }
        loop {
            match self.state {
                State::Start => return self.index(buf).map(|()| true),
                State::Multibulk { remaining } => {
                    let Some(&first) = buf.get(self.pos) else {
                        return Ok(false);
                    };
                    let Some((len, next)) = read_line_number(buf, self.pos + 1)
                        .map_err(|_| ProtocolError::TooBigBulkCount)?
                    else {
                        return Ok(false);
                    };
                    if first != b'$' {
                        return Err(ProtocolError::ExpectedDollar(first));
                    }
                    let len = match len {
                        Some(n) if n >= 0 && n <= self.max_bulk => n,
                        _ => return Err(ProtocolError::InvalidBulkLength),
                    };
                    if len > UNAUTH_MAX_BULK && auth_required {
                        return Err(ProtocolError::UnauthBulkLength);
                    }
                    self.pos = next;
                    self.state = State::Bulk {
                        remaining,
                        len: len as usize,
                    };
                }
                State::Bulk { remaining, len } => {
                    // Redis skips the two bytes after the body without
                    // checking they are CRLF; so do we.
                    if buf.len() < self.pos + len + 2 {
                        return Ok(false);
                    }
                    self.pos += len + 2;
                    self.state = if remaining == 1 {
                        State::Start
                    } else {
                        State::Multibulk {
                            remaining: remaining - 1,
                        }
                    };
                }
            }
        }
    }

    /// The common case in one pass: a whole multibulk request already in
    /// `buf`, with plain lengths (digits, no sign or leading zero, CRLF)
    /// within every limit. Anything else — a request cut short, an error,
    /// `*0` — returns false having changed nothing, and the state machine
    /// above parses it from the start, so this path accepts a subset of
    /// what that one does and answers it identically.
    #[inline]
    fn parse_whole(&mut self, buf: &[u8], auth_required: bool) -> bool {
        let count_limit = if auth_required {
            UNAUTH_MAX_MULTIBULK
        } else {
            MAX_MULTIBULK
        };
        let bulk_limit = if auth_required {
            UNAUTH_MAX_BULK.min(self.max_bulk)
        } else {
            self.max_bulk
        };
        let Some((count, mut pos)) = plain_number(buf, self.pos + 1) else {
            return false;
        };
        if count == 0 || count > count_limit as u64 {
            return false;
        }
        // A count the bytes present cannot back is a request still
        // arriving, followed by the state machine without an index; an
        // index that would pass the query buffer limit is its to refuse.
        let avail = (buf.len() - self.pos) / MIN_ARG_BYTES;
        if count > avail as u64 || buf.len() as u64 + count * SPAN_BYTES > self.max_request {
            return false;
        }
        // Each argument takes at least four bytes or ends the loop, so a
        // client's count cannot make it run past the bytes it sent.
        for _ in 0..count {
            let len = match buf.get(pos) {
                Some(b'$') => plain_number(buf, pos + 1),
                _ => None,
            };
            let Some((len, start)) = len.filter(|&(len, _)| len <= bulk_limit as u64) else {
                self.spans.clear();
                return false;
            };
            let end = start + len as usize;
            if buf.len() < end + 2 {
                self.spans.clear();
                return false;
            }
            self.spans.push((start, end));
            pos = end + 2;
        }
        self.pos = pos;
        true
    }

    /// Indexes the multibulk request that just completed (from
    /// `req_start` to `pos`): a span per argument, from its length lines,
    /// checked as they arrived. Its arguments are all in `buf` now, so the
    /// index is at most `SPAN_BYTES / MIN_ARG_BYTES` times what they
    /// occupy, and it counts with the buffer against the query buffer
    /// limit before it is built.
    fn index(&mut self, buf: &[u8]) -> Result<(), ProtocolError> {
        if buf.len() as u64 + self.count as u64 * SPAN_BYTES > self.max_request {
            return Err(ProtocolError::QueryBufferLimit);
        }
        self.spans.clear();
        self.spans.reserve_exact(self.count);
        // Past the count line, then each `$len` line and its body.
        let mut at = match read_line_number(buf, self.req_start + 1) {
            Ok(Some((_, next))) => next,
            _ => return Err(ProtocolError::InvalidMultibulkLength),
        };
        for _ in 0..self.count {
            let (len, start) = match read_line_number(buf, at + 1) {
                Ok(Some((Some(len), next))) if len >= 0 => (len as usize, next),
                _ => return Err(ProtocolError::InvalidBulkLength),
            };
            self.spans.push((start, start + len));
            at = start + len + 2;
        }
        debug_assert_eq!(at, self.pos);
        Ok(())
    }

    fn parse_inline(&mut self, buf: &[u8]) -> Result<bool, ProtocolError> {
        let rest = &buf[self.pos..];
        // Redis looks for the newline with strchr(), which stops at a NUL:
        // a NUL before the newline hides it, and the request stays incomplete.
        let nl = rest
            .iter()
            .position(|&b| b == b'\n' || b == 0)
            .filter(|&i| rest[i] == b'\n');
        let Some(nl) = nl else {
            if rest.len() > INLINE_MAX {
                return Err(ProtocolError::TooBigInline);
            }
            return Ok(false);
        };
        let mut line = &rest[..nl];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        self.scratch.clear();
        split_args(line, &mut self.scratch, &mut self.spans)?;
        self.inline = true;
        self.pos += nl + 1;
        Ok(true)
    }
}

/// Reads `<number>\r\n` starting at `start`. `Ok(None)`: incomplete.
/// `Ok(Some((None, _)))`: the line is complete but not a valid number.
/// `Err(())`: no line end within the inline limit.
#[allow(clippy::type_complexity)]
fn read_line_number(buf: &[u8], start: usize) -> Result<Option<(Option<i64>, usize)>, ()> {
    let rest = buf.get(start..).unwrap_or(&[]);
    let Some(cr) = memchr(b'\r', rest) else {
        if rest.len() > INLINE_MAX {
            return Err(());
        }
        return Ok(None);
    };
    // Like Redis, the '\n' after '\r' must have arrived too.
    if cr + 1 >= rest.len() {
        return Ok(None);
    }
    Ok(Some((crate::util::parse_i64(&rest[..cr]), start + cr + 2)))
}

/// A length line of [`Parser::parse_whole`]'s common case at `start`:
/// 1 to 18 digits without a leading zero (or `0` alone), then CRLF, all in
/// `buf`. Returns the number and the offset after the line; `None` leaves
/// the line to [`read_line_number`].
#[inline(always)]
fn plain_number(buf: &[u8], start: usize) -> Option<(u64, usize)> {
    let rest = buf.get(start..)?;
    let mut v = 0u64;
    let mut i = 0;
    loop {
        let digit = rest.get(i)?.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        v = v * 10 + u64::from(digit);
        i += 1;
        if i > 18 {
            return None;
        }
    }
    let plain = i > 0 && (i == 1 || rest[0] != b'0');
    if !plain || rest.get(i..i + 2) != Some(&b"\r\n"[..]) {
        return None;
    }
    Some((v, start + i + 2))
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Splits an inline command line the way Redis's `sdssplitargs` does:
/// whitespace-separated words, "double quotes" with C escapes (`\n`, `\xHH`,
/// …) and 'single quotes' with `\'`. A closing quote must be followed by
/// whitespace or the end of the line.
pub(crate) fn split_args(
    line: &[u8],
    out: &mut Vec<u8>,
    spans: &mut Vec<(usize, usize)>,
) -> Result<(), ProtocolError> {
    let mut i = 0;
    let n = line.len();
    loop {
        while i < n && is_space(line[i]) {
            i += 1;
        }
        // sdssplitargs works on a C string: a NUL ends the line.
        if i >= n || line[i] == 0 {
            return Ok(());
        }
        let start = out.len();
        let mut in_dq = false;
        let mut in_sq = false;
        loop {
            if in_dq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\'
                    && i + 3 < n
                    && line[i + 1] == b'x'
                    && line[i + 2].is_ascii_hexdigit()
                    && line[i + 3].is_ascii_hexdigit()
                {
                    out.push(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                    i += 3;
                } else if c == b'\\' && i + 1 < n {
                    i += 1;
                    out.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else if in_sq {
                if i >= n {
                    return Err(ProtocolError::UnbalancedQuotes);
                }
                let c = line[i];
                if c == b'\\' && i + 1 < n && line[i + 1] == b'\'' {
                    i += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < n && !line[i + 1].is_ascii_whitespace() {
                        return Err(ProtocolError::UnbalancedQuotes);
                    }
                    i += 1;
                    break;
                } else {
                    out.push(c);
                }
            } else {
                if i >= n {
                    break;
                }
                match line[i] {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => out.push(c),
                }
            }
            i += 1;
        }
        spans.push((start, out.len()));
    }
}

/// C's `isspace`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.wrapping_sub(b'A').wrapping_add(10),
    }
}

#[cfg(test)]
mod tests {
    use proptest::strategy::Strategy;

    use super::*;

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = Parser::new(512 * 1024 * 1024);
        let mut out = Vec::new();
        while let Some(req) = p.next(input, false)? {
            out.push(
                (0..req.len())
                    .map(|i| req.get(i).unwrap().to_vec())
                    .collect(),
            );
        }
        Ok(out)
    }

    #[test]
    fn multibulk_and_inline_mix() {
        let reqs = parse_all(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING\r\n").unwrap();
        assert_eq!(
            reqs,
            vec![
                vec![b"ECHO".to_vec(), b"hi".to_vec()],
                vec![b"PING".to_vec()]
            ]
        );
    }

    #[test]
    fn inline_quotes_and_escapes() {
        let reqs = parse_all(b"SET k \"a\\x41\\n b\" 'it\\'s'\r\n").unwrap();
        assert_eq!(
            reqs[0],
            vec![
                b"SET".to_vec(),
                b"k".to_vec(),
                b"aA\n b".to_vec(),
                b"it's".to_vec()
            ]
        );
        assert_eq!(
            parse_all(b"SET a \"b\r\n"),
            Err(ProtocolError::UnbalancedQuotes)
        );
        assert_eq!(
            parse_all(b"SET a 'b'c\r\n"),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn nul_bytes_never_loop() {
        // A NUL hides the newline after it, as strchr() does in Redis.
        assert_eq!(parse_all(b"PI\0NG\r\n").unwrap().len(), 0);
        let mut spans = Vec::new();
        let mut out = Vec::new();
        split_args(b"a \0 b", &mut out, &mut spans).unwrap();
        assert_eq!(spans.len(), 1);
        split_args(b"\x0b\x0cword", &mut out, &mut spans).unwrap();
        assert_eq!(spans.len(), 2);
    }

    #[test]
    fn empty_and_negative_counts_are_skipped() {
        let reqs = parse_all(b"*0\r\n*-1\r\n\r\nPING\n").unwrap();
        assert_eq!(reqs.iter().filter(|r| !r.is_empty()).count(), 1);
    }

    #[test]
    fn errors_match_redis() {
        assert_eq!(
            parse_all(b"*abc\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*3000000000\r\n"),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\n+foo\r\n"),
            Err(ProtocolError::ExpectedDollar(b'+'))
        );
        assert_eq!(
            parse_all(b"*1\r\n$-1\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\n$600000000\r\n"),
            Err(ProtocolError::InvalidBulkLength)
        );
        let big = vec![b'A'; INLINE_MAX + 10];
        assert_eq!(parse_all(&big), Err(ProtocolError::TooBigInline));
        let mut count = b"*".to_vec();
        count.extend(vec![b'1'; INLINE_MAX + 10]);
        assert_eq!(parse_all(&count), Err(ProtocolError::TooBigMbulkCount));
    }

    #[test]
    fn unauthenticated_limits() {
        let mut p = Parser::new(1 << 29);
        assert_eq!(
            p.next(b"*11\r\n", true).err(),
            Some(ProtocolError::UnauthMultibulkLength)
        );
        let mut p = Parser::new(1 << 29);
        assert_eq!(
            p.next(b"*1\r\n$16385\r\n", true).err(),
            Some(ProtocolError::UnauthBulkLength)
        );
    }

    #[test]
    fn resumes_across_reads_without_reparsing() {
        let mut body = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n".to_vec();
        body.extend(vec![b'x'; 100_000]);
        body.extend(b"\r\n");
        let mut p = Parser::new(1 << 29);
        let mut buf = Vec::new();
        let mut done = 0;
        for chunk in body.chunks(4096) {
            buf.extend_from_slice(chunk);
            if let Some(req) = p.next(&buf, false).unwrap() {
                assert_eq!(req.get(2).unwrap().len(), 100_000);
                done += 1;
            }
        }
        assert_eq!(done, 1);
        assert_eq!(p.consumed(), body.len());
    }

    /// Every request (or error) from `input` arrived whole, then again
    /// arriving a byte at a time: the second way never takes the one-pass
    /// path for a request whose count line came alone.
    fn whole_and_trickled(
        input: &[u8],
        auth: bool,
    ) -> [Vec<Result<Vec<Vec<u8>>, ProtocolError>>; 2] {
        let collect = |p: &mut Parser, buf: &[u8], out: &mut Vec<_>| loop {
            match p.next(buf, auth) {
                Ok(Some(req)) => {
                    out.push(Ok((0..req.len())
                        .map(|i| req.get(i).unwrap().to_vec())
                        .collect()));
                }
                Ok(None) => return false,
                Err(e) => {
                    out.push(Err(e));
                    return true;
                }
            }
        };
        let mut whole = Vec::new();
        collect(&mut Parser::new(1000), input, &mut whole);
        let mut trickled = Vec::new();
        let mut p = Parser::new(1000);
        for n in 1..=input.len() {
            if collect(&mut p, &input[..n], &mut trickled) {
                break;
            }
        }
        [whole, trickled]
    }

    #[test]
    fn one_pass_path_agrees_with_the_state_machine() {
        for input in [
            &b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n*1\r\n$4\r\nPING\r\n"[..],
            b"*1\r\n$04\r\nPING\r\n",
            b"*01\r\n$4\r\nPING\r\n",
            b"*1\r\n$4\rxPING\r\n",
            b"*1\r\n$4\r\nPINGxx*1\r\n$1\r\na\r\n",
            b"*1\r\n$1001\r\n",
            b"*2\r\n$1\r\na\r\n+x\r\n",
            b"*11\r\n",
        ] {
            for auth in [false, true] {
                let [whole, trickled] = whole_and_trickled(input, auth);
                assert_eq!(whole, trickled, "{:?}", String::from_utf8_lossy(input));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn one_pass_path_agrees_on_any_bytes(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::sample::select(vec![
                        &b"*"[..], b"$", b"\r\n", b"\r", b"\n", b"0", b"1", b"2", b"3",
                        b"12", b"-", b"x", b" ", b"*1\r\n", b"*2\r\n", b"$1\r\n",
                        b"$3\r\nabc\r\n", b"$0\r\n\r\n",
                    ]).prop_map(|b| b.to_vec()),
                    proptest::collection::vec(proptest::num::u8::ANY, 0..4),
                ],
                0..24,
            ),
            auth in proptest::bool::ANY,
        ) {
            let input = parts.concat();
            let [whole, trickled] = whole_and_trickled(&input, auth);
            proptest::prop_assert_eq!(whole, trickled);
        }
    }

    #[test]
    fn announced_arguments_cost_nothing_until_they_arrive() {
        let mut buf = b"*2147483647\r\n".to_vec();
        for _ in 0..100_000 {
            buf.extend_from_slice(b"$0\r\n\r\n");
        }
        let mut p = Parser::new(1 << 29);
        // Arriving whole (the one-pass path's turn) and in pieces.
        assert!(p.next(&buf, false).unwrap().is_none());
        assert!(p.spans.capacity() <= 8, "{}", p.spans.capacity());
        buf.extend_from_slice(b"$0\r\n\r\n");
        assert!(p.next(&buf, false).unwrap().is_none());
        assert!(p.spans.capacity() <= 8);
        assert_eq!(p.consumed(), 0);
        // A request that completes is indexed then, and its index given
        // back once its batch ran.
        let mut buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk".to_vec();
        let mut p = Parser::new(1 << 29);
        assert!(p.next(&buf, false).unwrap().is_none());
        buf.extend_from_slice(b"\r\n$2\r\nvv\r\n");
        let req = p.next(&buf, false).unwrap().unwrap();
        assert_eq!(req.get(2), Some(&b"vv"[..]));
        let mut many = format!("*{}\r\n", 5000).into_bytes();
        for _ in 0..5000 {
            many.extend_from_slice(b"$1\r\nx\r\n");
        }
        let mut p = Parser::new(1 << 29);
        assert_eq!(p.next(&many, false).unwrap().unwrap().len(), 5000);
        p.discard(many.len());
        assert!(p.spans.capacity() <= SPANS_KEEP);
    }

    #[test]
    fn an_index_over_the_query_buffer_limit_is_refused() {
        let mut many = format!("*{}\r\n", 1000).into_bytes();
        for _ in 0..1000 {
            many.extend_from_slice(b"$0\r\n\r\n");
        }
        // 6 kB of arguments and 16 kB of index: 30 kB holds both, 20 kB not.
        for (limit, ok) in [(30_000, true), (20_000, false)] {
            let mut p = Parser::new(1 << 29);
            p.set_max_request(limit);
            let whole = p.next(&many, false).map(|r| r.map(|r| r.len()));
            let mut p = Parser::new(1 << 29);
            p.set_max_request(limit);
            assert!(p.next(&many[..100], false).unwrap().is_none());
            let pieces = p.next(&many, false).map(|r| r.map(|r| r.len()));
            let want = if ok {
                Ok(Some(1000))
            } else {
                Err(ProtocolError::QueryBufferLimit)
            };
            assert_eq!((whole, pieces), (want.clone(), want), "limit {limit}");
        }
    }

    #[test]
    fn discard_rebases_a_partial_request() {
        let mut buf = b"PING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhel".to_vec();
        let mut p = Parser::new(1 << 29);
        assert!(p.next(&buf, false).unwrap().is_some());
        assert!(p.next(&buf, false).unwrap().is_none());
        let n = p.consumed();
        assert!(n >= 6, "the completed PING is consumable");
        buf.drain(..n);
        p.discard(n);
        buf.extend_from_slice(b"lo\r\n");
        let req = p.next(&buf, false).unwrap().unwrap();
        assert_eq!(req.get(1).unwrap(), b"hello");
    }

    /// While a big argument's body arrives, its start is where Redis's
    /// query buffer begins (CLIENT LIST's `qbuf` counts the body alone);
    /// a small argument, or none pending, has none.
    #[test]
    fn a_big_arguments_body_starts_after_what_was_parsed() {
        let mut p = Parser::new(1 << 29);
        let small = b"*2\r\n$3\r\nSET\r\n$5\r\nab".to_vec();
        assert!(p.next(&small, false).unwrap().is_none());
        assert_eq!(p.big_arg_start(), None);

        let mut p = Parser::new(1 << 29);
        let head = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", BIG_ARG);
        let mut buf = head.clone().into_bytes();
        buf.extend_from_slice(b"vvvv");
        assert!(p.next(&buf, false).unwrap().is_none());
        assert_eq!(p.big_arg_start(), Some(head.len()));
        assert_eq!(p.big_arg_end(), Some(head.len() + BIG_ARG + 2));
        buf.resize(head.len() + BIG_ARG, b'v');
        buf.extend_from_slice(b"\r\n");
        assert!(p.next(&buf, false).unwrap().is_some());
        assert_eq!(p.big_arg_start(), None);
    }
}
