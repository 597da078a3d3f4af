//! Stream commands: XADD, XLEN, XRANGE/XREVRANGE, XDEL, XTRIM, XREAD,
//! XREADGROUP, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO, XSETID.
//!
//! Each handler follows the order in which Redis 7.0's `t_stream.c` parses
//! arguments and looks keys up, because that order decides which error a
//! client sees. Blocking XREAD/XREADGROUP return `Outcome::Block` and are
//! re-run from scratch by the blocking machinery when a key is signalled:
//! an XREAD `$` is resolved to a concrete ID at block time and handed back
//! as the arguments to re-run with, and a re-run serves only the key that
//! became ready, with Redis's default COUNT of 1000 for blocked reads.
//!
//! A consumer group changes without its stream changing, so those changes
//! are logged (AOF, replicas) as the idempotent commands Redis's stream
//! code propagates, collected in a [`GroupLog`]: each pending entry a read
//! or a claim touched as `XCLAIM … FORCE JUSTID LASTID`, the group's last
//! ID and read counter as `XGROUP SETID … ENTRIESREAD`, a consumer that
//! nothing else would create as `XGROUP CREATECONSUMER`. The reading or
//! claiming command itself is never logged.

use std::time::Duration;

use super::flags::*;
use super::{
    Args, Block, CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, OwnedArgs, int_arg,
    subcommand_syntax,
};
use crate::keyspace::{Entry, Keyspace, Value, notify};
use crate::protocol::Reply;
use crate::types::stream::{
    Fields, Group, INVALID_ENTRIES_READ, Nack, NodeLimits, RefPolicy, Stream, StreamId, Trim,
};
use crate::util::{eq_ic, parse_i64};

const G: &str = "stream";
const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

// ---------------------------------------------------------------------------
// Logging a consumer group's changes.

/// The commands a group change is logged as, collected while a handler
/// runs, and the changes it counts (Redis's `server.dirty`).
struct GroupLog {
    /// None while nothing listens: then no command is built.
    ops: Option<Vec<Vec<Vec<u8>>>>,
    /// Commands logged so far, built or not (Redis's `propCount`).
    logged: usize,
    changes: u64,
    /// Whether each logged command counts as a change (XCLAIM,
    /// XAUTOCLAIM), or the caller counts them (XREADGROUP: one per stream
    /// served), as Redis counts them.
    per_op: bool,
}

impl GroupLog {
    fn new(ks: &Keyspace<'_>, per_op: bool) -> GroupLog {
        GroupLog {
            ops: ks.propagating().then(Vec::new),
            logged: 0,
            changes: 0,
            per_op,
        }
    }

    /// Logs one command.
    fn op(&mut self, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        self.changes += u64::from(self.per_op);
        self.logged += 1;
        if let Some(ops) = &mut self.ops {
            ops.push(argv());
        }
    }

    /// How many commands are logged so far (a mark for [`insert`](Self::insert)).
    fn len(&self) -> usize {
        self.ops.as_ref().map_or(0, Vec::len)
    }

    /// Logs a command ahead of those logged since `mark`.
    fn insert(&mut self, mark: usize, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        if let Some(ops) = &mut self.ops {
            ops.insert(mark.min(ops.len()), argv());
        }
    }

    /// Hands the commands to the keyspace in place of the command itself
    /// (Redis's `alsoPropagate` then `preventCommandPropagation`).
    fn finish(self, ctx: &mut Ctx) {
        ctx.prevent_propagation();
        ctx.ks.dirty(self.changes);
        for argv in self.ops.into_iter().flatten() {
            ctx.ks.also_propagate(|| argv);
        }
    }
}

/// Redis's `streamPropagateXCLAIM`: pending entry `id` as it stands now,
/// in a form that replays to the same state (or, for an entry gone from
/// the stream, drops its NACK on replay).
fn xclaim_argv(
    key: &[u8],
    group: &[u8],
    id: StreamId,
    nack: &Nack,
    last: StreamId,
) -> Vec<Vec<u8>> {
    let mut n = itoa::Buffer::new();
    let time = n.format(nack.delivery_time).as_bytes().to_vec();
    let count = n.format(nack.delivery_count).as_bytes().to_vec();
    crate::argv![
        b"XCLAIM",
        key,
        group,
        nack.consumer,
        b"0",
        id.to_bytes(),
        b"TIME",
        time,
        b"RETRYCOUNT",
        count,
        b"FORCE",
        b"JUSTID",
        b"LASTID",
        last.to_bytes()
    ]
}

/// Redis's `streamPropagateGroupID`: the group's last ID and read counter.
fn setid_argv(key: &[u8], group: &[u8], g: &Group) -> Vec<Vec<u8>> {
    let mut n = itoa::Buffer::new();
    crate::argv![
        b"XGROUP",
        b"SETID",
        key,
        group,
        g.last_id.to_bytes(),
        b"ENTRIESREAD",
        n.format(g.entries_read)
    ]
}

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("xadd", -5, WRITE | DENYOOM | FAST, Keys::ONE, &(xadd as Handler))
        .doc(G, "5.0.0", "O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.", "Appends a new entry to a stream")
        .syntax("key [NOMKSTREAM] [KEEPREF | DELREF | ACKED] [MAXLEN | MINID [= | ~] threshold [LIMIT count]] * | id field value [field value ...]"),
    Command::new("xlen", 2, READONLY | FAST, Keys::ONE, &(xlen as Handler))
        .doc(G, "5.0.0", "O(1)", "Return the number of entries in a stream")
        .syntax("key"),
    Command::new("xrange", -4, READONLY, Keys::ONE, &(xrange as Handler))
        .doc(G, "5.0.0", "O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Return a range of elements in a stream, with IDs matching the specified IDs interval")
        .syntax("key start end [COUNT count]"),
    Command::new("xrevrange", -4, READONLY, Keys::ONE, &(xrevrange as Handler))
        .doc(G, "5.0.0", "O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE")
        .syntax("key end start [COUNT count]"),
    Command::new("xdel", -3, WRITE | FAST, Keys::ONE, &(xdel as Handler))
        .doc(G, "5.0.0", "O(1) for each single item to delete in the stream, regardless of the stream size.", "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.")
        .syntax("key id [id ...]"),
    Command::new("xdelex", -5, WRITE | FAST, Keys::ONE, &(xdelex as Handler))
        .doc(G, "8.2.0", "O(1) for each single item to delete in the stream, regardless of the stream size.", "Deletes one or multiple entries from the stream.")
        .syntax("key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]"),
    Command::new("xackdel", -6, WRITE | FAST, Keys::ONE, &(xackdel as Handler))
        .doc(G, "8.2.0", "O(1) for each entry ID processed.", "Acknowledges and conditionally deletes one or multiple entries for a stream consumer group.")
        .syntax("key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]"),
    Command::new("xtrim", -4, WRITE, Keys::ONE, &(xtrim as Handler))
        .doc(G, "5.0.0", "O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.", "Trims the stream to (approximately if '~' is passed) a certain size")
        .syntax("key MAXLEN | MINID [= | ~] threshold [LIMIT count] [KEEPREF | DELREF | ACKED]"),
    Command::new("xread", -4, READONLY | BLOCKING, Keys::Streams, &(xread as Handler))
        .doc(G, "5.0.0", "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.", "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.")
        .syntax("[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]"),
    Command::new("xreadgroup", -7, WRITE | BLOCKING, Keys::Streams, &(xreadgroup as Handler))
        .doc(G, "5.0.0", "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.", "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.")
        .syntax("GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]"),
    Command::new("xgroup", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "5.0.0", "Depends on subcommand.", "A container for consumer groups commands")
        .subcommands(XGROUP),
    Command::new("xack", -4, WRITE | FAST, Keys::ONE, &(xack as Handler))
        .doc(G, "5.0.0", "O(1) for each message ID processed.", "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.")
        .syntax("key group id [id ...]"),
    Command::new("xpending", -3, READONLY, Keys::ONE, &(xpending as Handler))
        .doc(G, "5.0.0", "O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.", "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.")
        .syntax("key group [[IDLE min-idle-time] start end count [consumer]]"),
    Command::new("xclaim", -6, WRITE | FAST, Keys::ONE, &(xclaim as Handler))
        .doc(G, "5.0.0", "O(log N) with N being the number of messages in the PEL of the consumer group.", "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.")
        .syntax("key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]"),
    Command::new("xautoclaim", -6, WRITE | FAST, Keys::ONE, &(xautoclaim as Handler))
        .doc(G, "6.2.0", "O(1) if COUNT is small.", "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.")
        .syntax("key group consumer min-idle-time start [COUNT count] [JUSTID]"),
    Command::new("xinfo", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "5.0.0", "Depends on subcommand.", "A container for stream introspection commands")
        .subcommands(XINFO),
    Command::new("xsetid", -3, WRITE | DENYOOM | FAST, Keys::ONE, &(xsetid as Handler))
        .doc(G, "5.0.0", "O(1)", "An internal command for replicating stream values")
        .syntax("key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]"),
];

const SUB_KEY: Keys = Keys::Range {
    first: 2,
    last: 2,
    step: 1,
};

static XGROUP: &[Command] = &[
    Command::new(
        "create",
        -5,
        WRITE | DENYOOM,
        SUB_KEY,
        &(xgroup_create as Handler),
    )
    .doc(G, "5.0.0", "O(1)", "Create a consumer group.")
    .syntax("key groupname id | $ [MKSTREAM] [ENTRIESREAD entries-read]"),
    Command::new(
        "createconsumer",
        5,
        WRITE | DENYOOM,
        SUB_KEY,
        &(xgroup_createconsumer as Handler),
    )
    .doc(G, "6.2.0", "O(1)", "Create a consumer in a consumer group.")
    .syntax("key groupname consumername"),
    Command::new(
        "delconsumer",
        5,
        WRITE,
        SUB_KEY,
        &(xgroup_delconsumer as Handler),
    )
    .doc(
        G,
        "5.0.0",
        "O(1)",
        "Delete a consumer from a consumer group.",
    )
    .syntax("key groupname consumername"),
    Command::new("destroy", 4, WRITE, SUB_KEY, &(xgroup_destroy as Handler))
        .doc(
            G,
            "5.0.0",
            "O(N) where N is the number of entries in the group's pending entries list (PEL).",
            "Destroy a consumer group.",
        )
        .syntax("key groupname"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(xgroup_help as Handler),
    )
    .doc(
        G,
        "5.0.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    )
    .syntax(""),
    Command::new("setid", -5, WRITE, SUB_KEY, &(xgroup_setid as Handler))
        .doc(
            G,
            "5.0.0",
            "O(1)",
            "Set a consumer group to an arbitrary last delivered ID value.",
        )
        .syntax("key groupname id | $ [ENTRIESREAD entries-read]"),
];

static XINFO: &[Command] = &[
    Command::new(
        "consumers",
        4,
        READONLY,
        SUB_KEY,
        &(xinfo_consumers as Handler),
    )
    .doc(G, "5.0.0", "O(1)", "List the consumers in a consumer group")
    .syntax("key groupname"),
    Command::new("groups", 3, READONLY, SUB_KEY, &(xinfo_groups as Handler))
        .doc(G, "5.0.0", "O(1)", "List the consumer groups of a stream")
        .syntax("key"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(xinfo_help as Handler),
    )
    .doc(
        G,
        "5.0.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    )
    .syntax(""),
    Command::new("stream", -3, READONLY, SUB_KEY, &(xinfo_stream as Handler))
        .doc(G, "5.0.0", "O(1)", "Get information about a stream")
        .syntax("key [FULL [COUNT count]]"),
];

// ---------------------------------------------------------------------------
// Lookups and parsing.

/// The stream at `key` (write lookup): None if missing, WRONGTYPE if not.
fn stream_mut<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Result<Option<&'a mut Stream>, Error> {
    match ks.get(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::Stream(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(Error::WrongType),
    }
}

/// Like [`stream_mut`], counting a keyspace hit or miss (Redis's
/// `lookupKeyRead`).
fn stream_read<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Result<Option<&'a mut Stream>, Error> {
    match ks.get_read(key) {
        None => Ok(None),
        Some(Entry {
            value: Value::Stream(s),
            ..
        }) => Ok(Some(s)),
        Some(_) => Err(Error::WrongType),
    }
}

fn limits(ctx: &Ctx) -> NodeLimits {
    NodeLimits {
        max_bytes: ctx.shared.config.stream_node_max_bytes(),
        max_entries: ctx.shared.config.stream_node_max_entries(),
    }
}

/// Redis's `string2ull`: a canonical integer, else what `strtoull` takes
/// whole (leading spaces, a sign, leading zeros; a minus wraps).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = &s[i..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Redis's `streamGenericParseIDOrReply`: `-`/`+` (unless `strict`),
/// `ms-seq`, `ms` (seq = `missing_seq`), and with `auto_seq` also `ms-*`.
/// Returns the ID and whether the sequence was given.
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    auto_seq: bool,
) -> Result<(StreamId, bool), Error> {
    let invalid = Error::Static(INVALID_ID);
    if arg.len() > 127 {
        return Err(invalid);
    }
    // The C code works on a NUL-terminated copy.
    let s = arg.split(|&b| b == 0).next().unwrap_or(&[]);
    if s == b"-" || s == b"+" {
        if strict {
            return Err(invalid);
        }
        return Ok((
            if s == b"-" {
                StreamId::MIN
            } else {
                StreamId::MAX
            },
            true,
        ));
    }
    match s.iter().position(|&b| b == b'-') {
        Some(dash) => {
            let ms = parse_u64(&s[..dash]).ok_or(invalid.clone())?;
            let rest = &s[dash + 1..];
            if auto_seq && rest == b"*" {
                return Ok((StreamId::new(ms, 0), false));
            }
            let seq = parse_u64(rest).ok_or(invalid)?;
            Ok((StreamId::new(ms, seq), true))
        }
        None => Ok((
            StreamId::new(parse_u64(s).ok_or(invalid)?, missing_seq),
            true,
        )),
    }
}

fn parse_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    parse_id_full(arg, missing_seq, false, false).map(|(id, _)| id)
}

fn parse_strict_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    parse_id_full(arg, missing_seq, true, false).map(|(id, _)| id)
}

/// Redis's `streamParseIntervalIDOrReply`: `(id` is exclusive.
fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Error> {
    if arg.len() > 1 && arg[0] == b'(' {
        Ok((parse_strict_id(&arg[1..], missing_seq)?, true))
    } else {
        Ok((parse_id(arg, missing_seq)?, false))
    }
}

/// The start of an interval, an exclusive one moved past its ID.
fn interval_start(arg: &[u8]) -> Result<StreamId, Error> {
    let (id, ex) = parse_interval(arg, 0)?;
    if ex {
        return id
            .incr()
            .ok_or(Error::Static("ERR invalid start ID for the interval"));
    }
    Ok(id)
}

fn interval_end(arg: &[u8]) -> Result<StreamId, Error> {
    let (id, ex) = parse_interval(arg, u64::MAX)?;
    if ex {
        return id
            .decr()
            .ok_or(Error::Static("ERR invalid end ID for the interval"));
    }
    Ok(id)
}

fn reply_id(out: &mut Reply, id: StreamId) {
    out.bulk(&id.to_bytes());
}

fn reply_entry(out: &mut Reply, id: StreamId, fields: Fields<'_>) {
    out.array(2);
    reply_id(out, id);
    out.array(fields.len());
    fields.for_each(|f| out.bulk(f));
}

/// Replies entries in `start..=end` (at most `count`, 0 = all) as an array;
/// the number written.
fn reply_range(
    out: &mut Reply,
    s: &Stream,
    start: StreamId,
    end: StreamId,
    count: u64,
    rev: bool,
) -> u64 {
    let at = out.defer();
    let mut n = 0u64;
    s.range(start, end, rev, |id, fields| {
        reply_entry(out, id, fields);
        n += 1;
        count == 0 || n < count
    });
    out.fill_array(at, n as usize);
    n
}

fn nogroup_key(key: &[u8], group: &[u8]) -> Error {
    let mut m = b"NOGROUP No such key '".to_vec();
    m.extend_from_slice(key);
    m.extend_from_slice(b"' or consumer group '");
    m.extend_from_slice(group);
    m.push(b'\'');
    Error::Raw(m)
}

fn nogroup_for_key(group: &[u8], key: &[u8]) -> Error {
    let mut m = b"NOGROUP No such consumer group '".to_vec();
    m.extend_from_slice(group);
    m.extend_from_slice(b"' for key name '");
    m.extend_from_slice(key);
    m.push(b'\'');
    Error::Raw(m)
}

// ---------------------------------------------------------------------------
// XADD, XTRIM.

/// Parsed XADD/XTRIM options (Redis's `streamAddTrimArgs`).
#[derive(Default)]
struct AddTrim {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    /// XADD: the explicit ID and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Where the trim threshold is (after MAXLEN/MINID and `~` or `=`).
    trim_at: usize,
    /// KEEPREF | DELREF | ACKED (Redis 8.2).
    policy: RefPolicy,
}

impl AddTrim {
    /// The command as logged: an approximate trim as the exact one it came
    /// to (Redis's `streamRewriteApproxSpecifier` and
    /// `streamRewriteTrimArgument`), so a replay, whatever its stream's node
    /// layout and without LIMIT's cap, trims the same entries; `id`: XADD's
    /// ID as generated.
    fn logged(&self, args: &Args<'_>, s: &Stream, id: Option<(usize, StreamId)>) -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = args.iter().map(|a| a.to_vec()).collect();
        if let Some((at, id)) = id {
            v[at] = id.to_bytes();
        }
        if let Some(trim) = self.trim.filter(|_| self.approx) {
            v[self.trim_at - 1] = b"=".to_vec();
            v[self.trim_at] = match trim {
                Trim::MaxLen(_) => s.len().to_string().into_bytes(),
                Trim::MinId(_) => s
                    .first_entry()
                    .map_or(StreamId::MAX, |(id, _)| id)
                    .to_bytes(),
            };
        }
        v
    }
}

/// Redis's `streamParseAddOrTrimArgsOrReply`: returns the options and the
/// position of the ID (XADD) or the argument count (XTRIM).
fn parse_add_trim(ctx: &Ctx, xadd: bool) -> Result<(AddTrim, usize), Error> {
    let args = ctx.args;
    let argc = args.len();
    let mut a = AddTrim::default();
    let mut limit: Option<i64> = None;
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = args.get(i);
        if xadd && opt == b"*" {
            break;
        } else if (eq_ic(opt, "MAXLEN") || eq_ic(opt, "MINID")) && more > 0 {
            if a.trim.is_some() {
                return Err(Error::Static(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            a.approx = false;
            let next = args.get(i + 1);
            if more >= 2 && next == b"~" {
                a.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let v = args.get(i + 1);
            a.trim_at = i + 1;
            if eq_ic(opt, "MAXLEN") {
                let n = int_arg(v)?;
                if n < 0 {
                    return Err(Error::Static("ERR The MAXLEN argument must be >= 0."));
                }
                a.trim = Some(Trim::MaxLen(n as u64));
            } else {
                a.trim = Some(Trim::MinId(parse_strict_id(v, 0)?));
            }
            i += 1;
        } else if eq_ic(opt, "LIMIT") && more > 0 {
            let n = int_arg(args.get(i + 1))?;
            if n < 0 {
                return Err(Error::Static("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && eq_ic(opt, "NOMKSTREAM") {
            a.nomkstream = true;
        } else if let Some(p) = ref_policy(opt) {
            a.policy = p;
        } else if xadd {
            a.id = Some(parse_id_full(opt, 0, true, true)?);
            break;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if limit.is_some_and(|l| l != 0) && a.trim.is_none() {
        return Err(Error::Static(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && a.trim.is_none() {
        return Err(Error::Static(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    // What the AOF or the primary's stream holds (Redis: a client it must
    // obey) trims without a work limit, and may pair LIMIT with an exact
    // trim: Redis propagates an approximate trim as the exact one it came
    // to and keeps the LIMIT.
    if ctx.ks.must_obey() {
        a.limit = 0;
        return Ok((a, i));
    }
    match limit {
        Some(_) if !a.approx => {
            return Err(Error::Static(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        Some(l) => a.limit = l as u64,
        None if a.approx => {
            let n = ctx.shared.config.stream_node_max_entries() as u64;
            a.limit = n.saturating_mul(100);
            if a.limit == 0 {
                a.limit = 10_000;
            }
            a.limit = a.limit.min(1_000_000);
        }
        None => a.limit = 0,
    }
    Ok((a, i))
}

fn xadd(ctx: &mut Ctx) -> CmdResult {
    let (opts, idpos) = parse_add_trim(ctx, true)?;
    let args = ctx.args;
    let field_pos = idpos + 1;
    let nargs = args.len().saturating_sub(field_pos);
    if nargs < 2 || nargs % 2 == 1 {
        return Err(Error::Static(
            "ERR wrong number of arguments for 'xadd' command",
        ));
    }
    if let Some((id, true)) = opts.id
        && id.is_zero()
    {
        return Err(Error::Static(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    let key = args.get(1);
    let limits = limits(ctx);
    let now = ctx.ks.now_ms;
    let logging = ctx.ks.propagating();
    if stream_mut(ctx.ks, key)?.is_none() {
        if opts.nomkstream {
            ctx.out.null();
            return Ok(Done);
        }
        ctx.ks.set(key, Value::Stream(Box::default()));
    }
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    if s.last_id == StreamId::MAX {
        return Err(Error::Static(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let too_small = Error::Static(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    );
    let id = match opts.id {
        Some((id, true)) => id,
        Some((id, false)) => {
            if s.last_id.ms == id.ms {
                if s.last_id.seq == u64::MAX {
                    return Err(too_small);
                }
                StreamId::new(id.ms, s.last_id.seq + 1)
            } else {
                id
            }
        }
        None => {
            if now > s.last_id.ms {
                StreamId::new(now, 0)
            } else {
                s.last_id.incr().unwrap_or(StreamId::MAX)
            }
        }
    };
    if id <= s.last_id {
        return Err(too_small);
    }
    let fields: Vec<&[u8]> = (field_pos..args.len()).map(|i| args.get(i)).collect();
    if fields.iter().map(|f| f.len()).sum::<usize>() > 1 << 30 {
        return Err(Error::Static("ERR Elements are too large to be stored"));
    }
    s.append(id, &fields, limits);
    let trimmed = opts
        .trim
        .is_some_and(|t| s.trim_with(t, opts.approx, opts.limit, opts.policy) > 0);
    // A generated ID is logged as the one it came to (the clock differs
    // on replay), an approximate trim as its result.
    let generated = !matches!(opts.id, Some((_, true)));
    let logged = (logging && (generated || opts.approx))
        .then(|| opts.logged(&args, s, generated.then_some((idpos, id))));
    reply_id(ctx.out, id);
    ctx.ks.signal(key, notify::STREAM, "xadd");
    if let Some(argv) = logged {
        ctx.propagate_as(|| argv);
    }
    if trimmed {
        ctx.ks.notify(notify::STREAM, "xtrim", key);
    }
    ctx.ks.signal_ready(key);
    Ok(Done)
}

fn xtrim(ctx: &mut Ctx) -> CmdResult {
    let (opts, _) = parse_add_trim(ctx, false)?;
    let (args, key) = (ctx.args, ctx.args.get(1));
    let logging = ctx.ks.propagating();
    let Some(s) = stream_mut(ctx.ks, key)? else {
        ctx.out.int(0);
        return Ok(Done);
    };
    let Some(trim) = opts.trim else {
        return Err(Error::Syntax);
    };
    let n = s.trim_with(trim, opts.approx, opts.limit, opts.policy);
    let logged = (logging && opts.approx && n > 0).then(|| opts.logged(&args, s, None));
    if n > 0 {
        ctx.ks.notify(notify::STREAM, "xtrim", key);
        // One change per entry trimmed.
        ctx.ks.modified_by(key, n);
    }
    if let Some(argv) = logged {
        ctx.propagate_as(|| argv);
    }
    ctx.out.int(n as i64);
    Ok(Done)
}

// ---------------------------------------------------------------------------
// XLEN, XRANGE, XDEL.

fn xlen(ctx: &mut Ctx) -> CmdResult {
    let key = ctx.args.get(1);
    let n = stream_read(ctx.ks, key)?.map_or(0, |s| s.len());
    ctx.out.int(n as i64);
    Ok(Done)
}

fn range_generic(ctx: &mut Ctx, rev: bool) -> CmdResult {
    let args = ctx.args;
    let (start_arg, end_arg) = if rev {
        (args.get(3), args.get(2))
    } else {
        (args.get(2), args.get(3))
    };
    let start = interval_start(start_arg)?;
    let end = interval_end(end_arg)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if eq_ic(args.get(j), "COUNT") && j + 1 < args.len() {
            count = int_arg(args.get(j + 1))?.max(0);
            j += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let Some(s) = stream_read(ctx.ks, args.get(1))? else {
        ctx.out.array(0);
        return Ok(Done);
    };
    if count == 0 {
        ctx.out.null_array();
        return Ok(Done);
    }
    reply_range(ctx.out, s, start, end, count.max(0) as u64, rev);
    Ok(Done)
}

fn xrange(ctx: &mut Ctx) -> CmdResult {
    range_generic(ctx, false)
}

fn xrevrange(ctx: &mut Ctx) -> CmdResult {
    range_generic(ctx, true)
}

fn xdel(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    if stream_mut(ctx.ks, key)?.is_none() {
        ctx.out.int(0);
        return Ok(Done);
    }
    let ids = (2..args.len())
        .map(|j| parse_strict_id(args.get(j), 0))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    let mut deleted = 0;
    for id in ids {
        if s.delete(id) {
            if id > s.max_deleted_id {
                s.max_deleted_id = id;
            }
            deleted += 1;
        }
    }
    if deleted > 0 {
        ctx.ks
            .signal_by(key, notify::STREAM, "xdel", deleted as u64);
    }
    ctx.out.int(deleted);
    Ok(Done)
}

/// KEEPREF | DELREF | ACKED, any case.
fn ref_policy(arg: &[u8]) -> Option<RefPolicy> {
    if eq_ic(arg, "KEEPREF") {
        Some(RefPolicy::KeepRef)
    } else if eq_ic(arg, "DELREF") {
        Some(RefPolicy::DelRef)
    } else if eq_ic(arg, "ACKED") {
        Some(RefPolicy::Acked)
    } else {
        None
    }
}

/// The `[KEEPREF | DELREF | ACKED] IDS numids id [id ...]` arguments of
/// XDELEX and XACKDEL from `at`, in any order (the IDS block "can be at any
/// position"): the policy (KEEPREF if none) and the parsed IDs.
fn policy_and_ids(args: Args<'_>, at: usize) -> Result<(RefPolicy, Vec<StreamId>), Error> {
    let argc = args.len();
    let mut policy = None;
    let mut ids: Option<(usize, usize)> = None;
    let mut i = at;
    while i < argc {
        let opt = args.get(i);
        if eq_ic(opt, "IDS") && i + 1 < argc && ids.is_none() {
            let n = parse_i64(args.get(i + 1))
                .filter(|&n| n > 0)
                .ok_or(Error::Static(
                    "ERR Number of IDs must be a positive integer",
                ))?;
            let first = i + 2;
            if n as u64 > (argc - first) as u64 {
                return Err(Error::Static(
                    "ERR The `numids` parameter must match the number of arguments",
                ));
            }
            ids = Some((first, n as usize));
            i = first + n as usize;
        } else if let Some(p) = ref_policy(opt)
            && policy.is_none()
        {
            policy = Some(p);
            i += 1;
        } else {
            return Err(Error::Syntax);
        }
    }
    let Some((first, n)) = ids else {
        return Err(Error::Syntax);
    };
    let ids = (first..first + n)
        .map(|j| parse_strict_id(args.get(j), 0))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((policy.unwrap_or_default(), ids))
}

/// The per-ID codes of XDELEX and XACKDEL.
const NOT_FOUND: i64 = -1;
const DELETED: i64 = 1;
const STILL_REFERENCED: i64 = 2;

/// ```text
/// XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id [id ...]
/// ```
/// Redis 8.2: XDEL with a reference policy; per ID -1 (no such entry), 1
/// (deleted) or 2 (kept: ACKED and a group still needs it). A missing key
/// answers -1 for every ID.
fn xdelex(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let (policy, ids) = policy_and_ids(args, 2)?;
    let Some(s) = stream_mut(ctx.ks, key)? else {
        ctx.out.array(ids.len());
        for _ in &ids {
            ctx.out.int(NOT_FOUND);
        }
        return Ok(Done);
    };
    let mut codes = Vec::with_capacity(ids.len());
    let (mut deleted, mut refs_dropped) = (0u64, false);
    let mut log = RefLog::default();
    for id in ids {
        if policy == RefPolicy::DelRef {
            log.note_refs(s, id);
        }
        let pending =
            policy == RefPolicy::DelRef && s.groups.values().any(|g| g.pel.contains_key(&id));
        codes.push(match s.delete_with(id, policy) {
            Some(true) => {
                deleted += 1;
                log.deleted.push(id);
                DELETED
            }
            Some(false) => STILL_REFERENCED,
            None => {
                refs_dropped |= pending;
                NOT_FOUND
            }
        });
    }
    if deleted > 0 {
        ctx.ks.signal_by(key, notify::STREAM, "xdel", deleted);
    } else if refs_dropped {
        ctx.ks.dirty(1);
    }
    log.propagate(ctx, key);
    ctx.out.array(codes.len());
    for c in codes {
        ctx.out.int(c);
    }
    Ok(Done)
}

/// What XDELEX / XACKDEL did, logged as the commands of Redis 7.0 that do
/// the same: `XACK key group id …` for each group whose PEL lost entries,
/// then `XDEL key id …` of the entries deleted (MULTI/EXEC around them).
/// Every replica and AOF reader runs that, Redis 7.0 and 8.0 included,
/// which have neither command, and no replay depends on the PELs' state.
#[derive(Default)]
struct RefLog {
    acks: Vec<(Vec<u8>, Vec<StreamId>)>,
    deleted: Vec<StreamId>,
}

impl RefLog {
    fn note_ack(&mut self, group: &[u8], id: StreamId) {
        match self.acks.iter_mut().find(|(g, _)| g.as_slice() == group) {
            Some((_, ids)) => ids.push(id),
            None => self.acks.push((group.to_vec(), vec![id])),
        }
    }

    /// DELREF: the PEL entries for `id` every group is about to lose.
    fn note_refs(&mut self, s: &Stream, id: StreamId) {
        for (name, g) in &s.groups {
            if g.pel.contains_key(&id) {
                self.note_ack(name, id);
            }
        }
    }

    fn propagate(self, ctx: &mut Ctx, key: &[u8]) {
        ctx.prevent_propagation();
        for (group, ids) in self.acks {
            ctx.ks.also_propagate(|| {
                let mut argv = vec![b"XACK".to_vec(), key.to_vec(), group];
                argv.extend(ids.iter().map(|id| id.to_bytes()));
                argv
            });
        }
        if !self.deleted.is_empty() {
            ctx.ks.also_propagate(|| {
                let mut argv = vec![b"XDEL".to_vec(), key.to_vec()];
                argv.extend(self.deleted.iter().map(|id| id.to_bytes()));
                argv
            });
        }
    }
}

/// ```text
/// XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...]
/// ```
/// Redis 8.2: XACK, then XDELEX of what was acknowledged; per ID -1 (not
/// pending in the group), 1 (acknowledged and deleted, or acknowledged with
/// no entry left to delete) or 2 (acknowledged, kept: ACKED and another
/// group still needs it). A missing key or group answers -1 for every ID.
fn xackdel(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let (key, gname) = (args.get(1), args.get(2));
    let (policy, ids) = policy_and_ids(args, 3)?;
    let s = stream_mut(ctx.ks, key)?;
    let Some(s) = s.filter(|s| s.groups.contains_key(gname)) else {
        ctx.out.array(ids.len());
        for _ in &ids {
            ctx.out.int(NOT_FOUND);
        }
        return Ok(Done);
    };
    let mut codes = Vec::with_capacity(ids.len());
    let (mut acked, mut deleted) = (0u64, 0u64);
    let mut log = RefLog::default();
    for id in ids {
        let was_pending = s.groups.get_mut(gname).is_some_and(|g| g.ack(id));
        if !was_pending {
            codes.push(NOT_FOUND);
            continue;
        }
        log.note_ack(gname, id);
        acked += 1;
        if policy == RefPolicy::DelRef {
            log.note_refs(s, id);
        }
        codes.push(match s.delete_with(id, policy) {
            Some(true) => {
                deleted += 1;
                log.deleted.push(id);
                DELETED
            }
            Some(false) => STILL_REFERENCED,
            None => DELETED,
        });
    }
    if deleted > 0 {
        ctx.ks.signal(key, notify::STREAM, "xdel");
    } else if acked > 0 {
        ctx.ks.dirty(acked);
    }
    log.propagate(ctx, key);
    ctx.out.array(codes.len());
    for c in codes {
        ctx.out.int(c);
    }
    Ok(Done)
}

// ---------------------------------------------------------------------------
// XREAD, XREADGROUP.

/// A stream ID argument of XREAD/XREADGROUP.
#[derive(Clone, Copy)]
enum ReadId {
    /// Entries after this ID.
    After(StreamId),
    /// `>`: entries the group has not delivered yet.
    New,
}

fn xread(ctx: &mut Ctx) -> CmdResult {
    read_generic(ctx, false)
}

fn xreadgroup(ctx: &mut Ctx) -> CmdResult {
    read_generic(ctx, true)
}

fn read_generic(ctx: &mut Ctx, xreadgroup: bool) -> CmdResult {
    let args = ctx.args;
    let argc = args.len();
    let mut timeout: Option<i64> = None;
    let mut count: u64 = 0;
    let mut streams_at = 0;
    let mut nstreams = 0;
    let mut noack = false;
    let mut group_arg: Option<(&[u8], &[u8])> = None;
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let o = args.get(i);
        if eq_ic(o, "BLOCK") && more > 0 {
            i += 1;
            let t = parse_i64(args.get(i)).ok_or(Error::Static(
                "ERR timeout is not an integer or out of range",
            ))?;
            if t < 0 {
                return Err(Error::Static("ERR timeout is negative"));
            }
            if t > 0 && t > i64::MAX - ctx.ks.now_ms as i64 {
                return Err(Error::Static("ERR timeout is out of range"));
            }
            timeout = Some(t);
        } else if eq_ic(o, "COUNT") && more > 0 {
            i += 1;
            count = int_arg(args.get(i))?.max(0) as u64;
        } else if eq_ic(o, "STREAMS") && more > 0 {
            streams_at = i + 1;
            let n = argc - streams_at;
            if !n.is_multiple_of(2) {
                return Err(Error::Static(if xreadgroup {
                    "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
                } else {
                    "ERR Unbalanced 'xread' list of streams: for each stream key an ID, '+', or '$' must be specified."
                }));
            }
            nstreams = n / 2;
            break;
        } else if eq_ic(o, "GROUP") && more >= 2 {
            if !xreadgroup {
                return Err(Error::Static(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group_arg = Some((args.get(i + 1), args.get(i + 2)));
            i += 2;
        } else if eq_ic(o, "NOACK") {
            if !xreadgroup {
                return Err(Error::Static(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(Error::Syntax);
        }
        i += 1;
    }
    if streams_at == 0 {
        return Err(Error::Syntax);
    }
    if xreadgroup && group_arg.is_none() {
        return Err(Error::Static("ERR Missing GROUP option for XREADGROUP"));
    }
    // A waiter being served re-runs the whole command, as Redis 7.2+
    // re-executes it: every key is read (and checked) again, not only the
    // one that became ready.
    let mut ids = Vec::with_capacity(nstreams.min(1024));
    for k in 0..nstreams {
        let key = args.get(streams_at + k);
        let id_arg = args.get(streams_at + nstreams + k);
        let s = stream_read(ctx.ks, key)?;
        if let Some((group, _)) = group_arg {
            let missing = s.as_ref().is_none_or(|s| !s.groups.contains_key(group));
            if missing {
                return Err(nogroup_key_xread(key, group));
            }
        }
        if id_arg == b"$" {
            if xreadgroup {
                return Err(Error::Static(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            ids.push(ReadId::After(s.map_or(StreamId::MIN, |s| s.last_id)));
        } else if id_arg == b"+" {
            if xreadgroup {
                return Err(Error::Static(
                    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.",
                ));
            }
            // Just before the last live entry, so that it is served (Redis
            // 7.4); 0-0 for a missing or empty stream. Not resolved for a
            // wait: when data comes, `+` means the last entry then.
            let last = s.filter(|s| !s.is_empty()).map(|s| s.last_live_id());
            ids.push(ReadId::After(
                last.map_or(StreamId::MIN, |id| id.decr().unwrap_or(StreamId::MIN)),
            ));
        } else if id_arg == b">" {
            if !xreadgroup {
                return Err(Error::Static(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            ids.push(ReadId::New);
        } else {
            let id = parse_strict_id(id_arg, 0)?;
            // Redis stores `>` as the largest ID and tests for that ID, so
            // spelling it out in XREADGROUP means `>` too.
            if xreadgroup && id == StreamId::new(u64::MAX, u64::MAX) {
                ids.push(ReadId::New);
            } else {
                ids.push(ReadId::After(id));
            }
        }
    }
    let now = ctx.ks.now_ms;
    let resp3 = ctx.out.resp3;
    let mut served = 0usize;
    let mut at = None;
    let mut log = GroupLog::new(ctx.ks, false);
    for (k, rid) in ids.iter().enumerate() {
        let key = args.get(streams_at + k);
        // Types and groups were checked by the first pass: nothing here
        // fails, so what was served so far is always logged.
        let Ok(Some(s)) = stream_read(ctx.ks, key) else {
            continue;
        };
        let mut created = false;
        let (start, history) = match (group_arg, *rid) {
            (Some((gname, cname)), rid) => {
                // A waiter being served re-runs the command, as Redis 7.2+
                // does: it is served only what is live.
                let last_valid = s.last_live_id();
                let nonempty = !s.is_empty();
                let Some(g) = s.groups.get_mut(gname) else {
                    continue;
                };
                // Redis 7.2+ creates the consumer and marks it seen on
                // every attempt, served or not.
                created = g.create_consumer(cname, now);
                if let Some(c) = g.consumers.get_mut(cname) {
                    c.seen_time = now;
                }
                let serve = match rid {
                    ReadId::After(id) => Some((id, true)),
                    ReadId::New => {
                        (nonempty && last_valid > g.last_id).then_some((g.last_id, false))
                    }
                };
                match serve {
                    Some(serve) => serve,
                    None => {
                        let mark = log.len();
                        note_consumer(ctx.ks, &mut log, key, (gname, cname), created, noack, mark);
                        continue;
                    }
                }
            }
            (None, ReadId::After(id)) => {
                let newer = !s.is_empty() && s.last_live_id() > id;
                if !newer {
                    continue;
                }
                (id, false)
            }
            (None, ReadId::New) => continue,
        };
        served += 1;
        if served == 1 {
            at = Some(ctx.out.defer());
        }
        if !resp3 {
            ctx.out.array(2);
        }
        ctx.out.bulk(key);
        let mark = log.len();
        let logged = log.logged;
        match (group_arg, start.incr()) {
            (_, None) => ctx.out.array(0),
            (None, Some(start)) => {
                reply_range(ctx.out, s, start, StreamId::MAX, count, false);
            }
            (Some((gname, cname)), Some(start)) => {
                let s: &mut Stream = s;
                let read = GroupRead {
                    key,
                    gname,
                    cname,
                    start,
                    count,
                    now,
                };
                if history {
                    reply_history(ctx.out, s, &read, &mut log);
                } else {
                    deliver_new(ctx.out, s, &read, noack, &mut log);
                }
            }
        }
        if let Some((gname, cname)) = group_arg {
            // Redis counts a change per stream that logged anything; a
            // history read logs nothing there (zwindow logs its renewed
            // claims, but counts no change, as Redis 7.2+'s
            // "XREADGROUP from PEL does not change dirty").
            if !history && log.logged > logged {
                log.changes += 1;
            }
            note_consumer(ctx.ks, &mut log, key, (gname, cname), created, noack, mark);
        }
    }
    if xreadgroup {
        log.finish(ctx);
    }
    if let Some(at) = at {
        if resp3 {
            ctx.out.fill_map(at, served);
        } else {
            ctx.out.fill_array(at, served);
        }
        return Ok(Done);
    }
    let Some(timeout) = timeout else {
        ctx.out.null_array();
        return Ok(Done);
    };
    if !ctx.client.can_block() {
        ctx.out.null_array();
        return Ok(Done);
    }
    // Re-run with `$` resolved, so the wait is for entries after the ID the
    // stream had when the command blocked.
    let rerun_args = (!xreadgroup
        && (0..nstreams).any(|k| args.get(streams_at + nstreams + k) == b"$"))
    .then(|| {
        let parts: Vec<Vec<u8>> = (0..argc)
            .map(|j| {
                let k = j.wrapping_sub(streams_at + nstreams);
                match ids.get(k) {
                    Some(ReadId::After(id))
                        if j >= streams_at + nstreams && args.get(j) == b"$" =>
                    {
                        id.to_bytes()
                    }
                    _ => args.get(j).to_vec(),
                }
            })
            .collect();
        let refs: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        OwnedArgs::from_slices(&refs)
    });
    Ok(Outcome::Block(Block {
        keys: (0..nstreams)
            .map(|k| args.get(streams_at + k).into())
            .collect(),
        kind: "stream",
        timeout: (timeout > 0).then(|| Duration::from_millis(timeout as u64)),
        rerun: rerun_args,
        unblock_on_nokey: xreadgroup,
    }))
}

/// A consumer XREADGROUP created (Redis's `streamCreateConsumer`): the
/// event and a change. A claim logged for it creates it on replay; with
/// none (NOACK, a history read, nothing to serve) it is logged itself,
/// ahead of what was logged since `mark`. Redis 8.0 logs it under NOACK
/// only, so its replicas and AOF lose a consumer that a history read or an
/// unserved read created; zwindow keeps it.
fn note_consumer(
    ks: &mut Keyspace<'_>,
    log: &mut GroupLog,
    key: &[u8],
    (gname, cname): (&[u8], &[u8]),
    created: bool,
    noack: bool,
    mark: usize,
) {
    if !created {
        return;
    }
    ks.notify(notify::STREAM, "xgroup-createconsumer", key);
    log.changes += 1;
    if noack || log.len() == mark {
        log.insert(mark, || {
            crate::argv![b"XGROUP", b"CREATECONSUMER", key, gname, cname]
        });
    }
}

fn nogroup_key_xread(key: &[u8], group: &[u8]) -> Error {
    let mut m = b"NOGROUP No such key '".to_vec();
    m.extend_from_slice(key);
    m.extend_from_slice(b"' or consumer group '");
    m.extend_from_slice(group);
    m.extend_from_slice(b"' in XREADGROUP with GROUP option");
    Error::Raw(m)
}

/// What one XREADGROUP serves from one stream.
struct GroupRead<'a> {
    key: &'a [u8],
    gname: &'a [u8],
    cname: &'a [u8],
    /// The first ID to serve.
    start: StreamId,
    /// At most this many entries (0: all).
    count: u64,
    now: u64,
}

/// Serves entries from `start` the group has not delivered, moving its
/// last ID and read counter and (without NOACK) adding them to the PELs
/// (Redis's `streamReplyWithRange` with a group). Logged as a claim per
/// entry, then the group's new position (as Redis 7.2+ logs it: 7.0 left
/// the read counter out without NOACK, so replay lost it).
fn deliver_new(
    out: &mut Reply,
    s: &mut Stream,
    read: &GroupRead<'_>,
    noack: bool,
    log: &mut GroupLog,
) {
    let mut ids = Vec::new();
    let at = out.defer();
    s.range(read.start, StreamId::MAX, false, |id, fields| {
        reply_entry(out, id, fields);
        ids.push(id);
        read.count == 0 || (ids.len() as u64) < read.count
    });
    out.fill_array(at, ids.len());
    let mut moved = false;
    let first = s.first_id();
    for id in ids {
        let Some(last) = s.groups.get(read.gname).map(|g| g.last_id) else {
            return;
        };
        // Redis 7.2+: the counter stays exact only if the group was not
        // behind the first entry and no tombstone lies after its last ID.
        let exact = last >= first && !s.range_has_tombstones(Some(last), None);
        let estimate = if s.entries_added > 0 {
            Some(s.estimate_distance(id))
        } else {
            None
        };
        let Some(g) = s.groups.get_mut(read.gname) else {
            return;
        };
        if id > g.last_id {
            if g.entries_read != INVALID_ENTRIES_READ && exact {
                g.entries_read += 1;
            } else if let Some(e) = estimate {
                g.entries_read = e;
            }
            g.last_id = id;
            moved = true;
        }
        if !noack {
            claim_to(g, id, read.cname, read.now, 1);
            if let Some(c) = g.consumers.get_mut(read.cname) {
                c.active_time = read.now as i64;
            }
            if let Some(n) = g.pel.get(&id) {
                log.op(|| xclaim_argv(read.key, read.gname, id, n, g.last_id));
            }
        }
    }
    if moved && let Some(g) = s.groups.get(read.gname) {
        log.op(|| setid_argv(read.key, read.gname, g));
    }
}

/// Gives pending entry `id` to `cname` with a fresh delivery (time `now`,
/// `count` deliveries), creating the NACK if needed.
fn claim_to(g: &mut Group, id: StreamId, cname: &[u8], now: u64, count: u64) {
    use crate::types::stream::Nack;
    if let Some(old) = g.pel.get(&id).map(|n| n.consumer.clone())
        && let Some(c) = g.consumers.get_mut(&old)
    {
        c.pel.remove(&id);
    }
    g.pel.insert(
        id,
        Nack {
            consumer: cname.into(),
            delivery_time: now,
            delivery_count: count,
        },
    );
    if let Some(c) = g.consumers.get_mut(cname) {
        c.pel.insert(id);
    }
}

/// The consumer's own pending entries from `start` (Redis's
/// `streamReplyWithRangeFromConsumerPEL`): deleted entries show as nil.
/// Each entry served counts one more delivery, logged as its claim so
/// that replay keeps the count (Redis logs nothing here and loses it).
fn reply_history(out: &mut Reply, s: &mut Stream, read: &GroupRead<'_>, log: &mut GroupLog) {
    let Some(g) = s.groups.get(read.gname) else {
        out.array(0);
        return;
    };
    let ids: Vec<StreamId> = g
        .consumers
        .get(read.cname)
        .map(|c| {
            c.pel
                .range(read.start..)
                .take(if read.count == 0 {
                    usize::MAX
                } else {
                    read.count as usize
                })
                .copied()
                .collect()
        })
        .unwrap_or_default();
    out.array(ids.len());
    let mut delivered = Vec::new();
    for id in ids {
        match s.get(id) {
            Some(fields) => {
                reply_entry(out, id, fields);
                delivered.push(id);
            }
            None => {
                out.array(2);
                reply_id(out, id);
                out.null_array();
            }
        }
    }
    if let Some(g) = s.groups.get_mut(read.gname) {
        for id in delivered {
            if let Some(n) = g.pel.get_mut(&id) {
                n.delivery_time = read.now;
                n.delivery_count += 1;
                log.op(|| xclaim_argv(read.key, read.gname, id, n, g.last_id));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// XGROUP.

/// Redis's `xgroupCommand` preamble: options of CREATE/SETID, then the key
/// (which must exist unless MKSTREAM) and, for some subcommands, the group.
struct GroupArgs {
    mkstream: bool,
    entries_read: i64,
}

fn group_options(ctx: &Ctx, create: bool) -> Result<GroupArgs, Error> {
    let args = ctx.args;
    let mut g = GroupArgs {
        mkstream: false,
        entries_read: INVALID_ENTRIES_READ,
    };
    let mut i = 5;
    while i < args.len() {
        if create && eq_ic(args.get(i), "MKSTREAM") {
            g.mkstream = true;
            i += 1;
        } else if eq_ic(args.get(i), "ENTRIESREAD") && i + 1 < args.len() {
            let n = int_arg(args.get(i + 1))?;
            if n < 0 && n != INVALID_ENTRIES_READ {
                return Err(Error::Static(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            g.entries_read = n;
            i += 2;
        } else {
            return Err(subcommand_syntax(&args));
        }
    }
    Ok(g)
}

/// The stream of an XGROUP subcommand, with Redis's missing-key error.
fn group_stream<'a>(ctx: &'a mut Ctx, mkstream: bool) -> Result<Option<&'a mut Stream>, Error> {
    let key = ctx.args.get(2);
    let s = stream_mut(ctx.ks, key)?;
    if s.is_none() && !mkstream {
        return Err(Error::Static(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ));
    }
    Ok(s)
}

/// The group an XGROUP subcommand needs, with Redis's NOGROUP error.
fn need_group<'a>(ctx: &'a mut Ctx) -> Result<&'a mut Group, Error> {
    let args = ctx.args;
    let (key, group) = (args.get(2), args.get(3));
    let s = group_stream(ctx, false)?.ok_or(Error::Syntax)?;
    s.groups
        .get_mut(group)
        .ok_or_else(|| nogroup_for_key(group, key))
}

fn xgroup_create(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let opts = group_options(ctx, true)?;
    let (key, group) = (args.get(2), args.get(3));
    let last = group_stream(ctx, opts.mkstream)?.map(|s| s.last_id);
    if args.len() > 8 {
        return Err(subcommand_syntax(&args));
    }
    let id = if args.get(4) == b"$" {
        last.unwrap_or(StreamId::MIN)
    } else {
        parse_strict_id(args.get(4), 0)?
    };
    if last.is_none() {
        ctx.ks.set(key, Value::Stream(Box::default()));
        ctx.ks.modified(key);
    }
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    if s.groups.contains_key(group) {
        return Err(Error::Static(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    s.groups
        .insert(group.into(), Group::new(id, opts.entries_read));
    ctx.out.ok();
    ctx.ks.dirty(1);
    ctx.ks.notify(notify::STREAM, "xgroup-create", key);
    Ok(Done)
}

fn xgroup_setid(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let opts = group_options(ctx, false)?;
    let key = args.get(2);
    let id_arg = args.get(4);
    need_group(ctx)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(subcommand_syntax(&args));
    }
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    let id = if id_arg == b"$" {
        s.last_id
    } else {
        parse_id(id_arg, 0)?
    };
    if let Some(g) = s.groups.get_mut(args.get(3)) {
        g.last_id = id;
        g.entries_read = opts.entries_read;
    }
    ctx.out.ok();
    ctx.ks.dirty(1);
    ctx.ks.notify(notify::STREAM, "xgroup-setid", key);
    Ok(Done)
}

fn xgroup_destroy(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(2);
    let s = group_stream(ctx, false)?.ok_or(Error::Syntax)?;
    if s.groups.remove(args.get(3)).is_none() {
        ctx.out.int(0);
        return Ok(Done);
    }
    ctx.out.int(1);
    ctx.ks.dirty(1);
    ctx.ks.notify(notify::STREAM, "xgroup-destroy", key);
    // Blocked XREADGROUP clients of the group get their NOGROUP error.
    ctx.ks.signal_ready(key);
    Ok(Done)
}

fn xgroup_createconsumer(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let now = ctx.ks.now_ms;
    let g = need_group(ctx)?;
    let created = g.create_consumer(args.get(4), now);
    ctx.out.int(created as i64);
    if created {
        ctx.ks.dirty(1);
        ctx.ks
            .notify(notify::STREAM, "xgroup-createconsumer", args.get(2));
    }
    Ok(Done)
}

fn xgroup_delconsumer(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let g = need_group(ctx)?;
    let pending = g.delete_consumer(args.get(4));
    ctx.out.int(pending.unwrap_or(0) as i64);
    if pending.is_some() {
        ctx.ks.dirty(1);
        ctx.ks
            .notify(notify::STREAM, "xgroup-delconsumer", args.get(2));
    }
    Ok(Done)
}

fn xgroup_help(ctx: &mut Ctx) -> CmdResult {
    super::scripting::help_lines(
        ctx,
        &[
            "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
            "HELP",
            "    Print this help.",
        ],
    );
    Ok(Done)
}

// ---------------------------------------------------------------------------
// XACK, XPENDING, XCLAIM, XAUTOCLAIM.

fn xack(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let key = args.get(1);
    let has_group = stream_read(ctx.ks, key)?.is_some_and(|s| s.groups.contains_key(args.get(2)));
    if !has_group {
        ctx.out.int(0);
        return Ok(Done);
    }
    let ids = (3..args.len())
        .map(|j| parse_strict_id(args.get(j), 0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut acked = 0;
    if let Some(g) = stream_mut(ctx.ks, key)?.and_then(|s| s.groups.get_mut(args.get(2))) {
        for id in ids {
            acked += g.ack(id) as i64;
        }
    }
    ctx.ks.dirty(acked as u64);
    ctx.out.int(acked);
    Ok(Done)
}

fn xpending(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let argc = args.len();
    let (key, gname) = (args.get(1), args.get(2));
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(Error::Syntax);
    }
    let mut range = None;
    if argc >= 6 {
        let mut at = 3;
        let mut minidle = 0;
        if eq_ic(args.get(3), "IDLE") {
            minidle = int_arg(args.get(4))?;
            if argc < 8 {
                return Err(Error::Syntax);
            }
            at += 2;
        }
        let count = int_arg(args.get(at + 2))?.max(0) as u64;
        let start = interval_start(args.get(at))?;
        let end = interval_end(args.get(at + 1))?;
        let consumer = (at + 3 < argc).then(|| args.get(at + 3));
        range = Some((minidle, start, end, count, consumer));
    }
    let now = ctx.ks.now_ms as i64;
    let Some(g) = stream_read(ctx.ks, key)?.and_then(|s| s.groups.get(gname)) else {
        return Err(nogroup_key(key, gname));
    };
    let Some((minidle, start, end, mut count, consumer)) = range else {
        ctx.out.array(4);
        ctx.out.int(g.pel.len() as i64);
        match (g.pel.first_key_value(), g.pel.last_key_value()) {
            (Some((first, _)), Some((last, _))) => {
                reply_id(ctx.out, *first);
                reply_id(ctx.out, *last);
                let with: Vec<_> = g
                    .consumers
                    .iter()
                    .filter(|(_, c)| !c.pel.is_empty())
                    .collect();
                ctx.out.array(with.len());
                for (name, c) in with {
                    ctx.out.array(2);
                    ctx.out.bulk(name);
                    ctx.out.bulk_int(c.pel.len() as i64);
                }
            }
            _ => {
                ctx.out.null();
                ctx.out.null();
                ctx.out.null_array();
            }
        }
        return Ok(Done);
    };
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
        Some(c) => match g.consumers.get(c) {
            Some(c) => Box::new(c.pel.range(start..).copied()),
            None => {
                ctx.out.array(0);
                return Ok(Done);
            }
        },
        None => Box::new(g.pel.range(start..).map(|(id, _)| *id)),
    };
    let at = ctx.out.defer();
    let mut n = 0;
    for id in ids {
        if count == 0 || id > end {
            break;
        }
        let Some(nack) = g.pel.get(&id) else {
            continue;
        };
        let idle = now - nack.delivery_time as i64;
        if minidle != 0 && idle < minidle {
            continue;
        }
        n += 1;
        count -= 1;
        ctx.out.array(4);
        reply_id(ctx.out, id);
        ctx.out.bulk(&nack.consumer);
        ctx.out.int(idle.max(0));
        ctx.out.int(nack.delivery_count as i64);
    }
    ctx.out.fill_array(at, n);
    Ok(Done)
}

fn xclaim(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let argc = args.len();
    let (key, gname, cname) = (args.get(1), args.get(2), args.get(3));
    let has_group = stream_read(ctx.ks, key)?.is_some_and(|s| s.groups.contains_key(gname));
    if !has_group {
        return Err(nogroup_key(key, gname));
    }
    let minidle = parse_i64(args.get(4))
        .ok_or(Error::Static(
            "ERR Invalid min-idle-time argument for XCLAIM",
        ))?
        .max(0);
    let mut j = 5;
    let mut ids = Vec::new();
    while j < argc {
        match parse_strict_id(args.get(j), 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = ctx.ks.now_ms as i64;
    let (mut force, mut justid) = (false, false);
    let mut retrycount: i64 = -1;
    let mut delivery: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < argc {
        let more = argc - 1 - j;
        let opt = args.get(j);
        let num = |a: &[u8], what: &'static str| parse_i64(a).ok_or(Error::Static(what));
        if eq_ic(opt, "FORCE") {
            force = true;
        } else if eq_ic(opt, "JUSTID") {
            justid = true;
        } else if eq_ic(opt, "IDLE") && more > 0 {
            j += 1;
            let v = num(args.get(j), "ERR Invalid IDLE option argument for XCLAIM")?;
            delivery = Some(now.wrapping_sub(v));
        } else if eq_ic(opt, "TIME") && more > 0 {
            j += 1;
            delivery = Some(num(
                args.get(j),
                "ERR Invalid TIME option argument for XCLAIM",
            )?);
        } else if eq_ic(opt, "RETRYCOUNT") && more > 0 {
            j += 1;
            retrycount = num(
                args.get(j),
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?;
        } else if eq_ic(opt, "LASTID") && more > 0 {
            j += 1;
            last_id = parse_strict_id(args.get(j), 0)?;
        } else {
            let mut m = b"ERR Unrecognized XCLAIM option '".to_vec();
            m.extend_from_slice(opt.split(|&b| b == 0).next().unwrap_or(&[]));
            m.push(b'\'');
            return Err(Error::Raw(m));
        }
        j += 1;
    }
    let delivery = match delivery {
        Some(t) if (0..=now).contains(&t) => t,
        _ => now,
    } as u64;
    let mut log = GroupLog::new(ctx.ks, true);
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    let created: bool;
    let mut replies: Vec<(StreamId, bool)> = Vec::new();
    {
        let exists: Vec<bool> = ids.iter().map(|id| s.get(*id).is_some()).collect();
        let Some(g) = s.groups.get_mut(gname) else {
            return Ok(Done);
        };
        let advanced = last_id > g.last_id;
        if advanced {
            g.last_id = last_id;
        }
        // Redis 7.2+: the consumer is created and marked seen up front,
        // whether or not anything is claimed.
        created = g.create_consumer(cname, now as u64);
        if let Some(c) = g.consumers.get_mut(cname) {
            c.seen_time = now as u64;
        }
        for (id, exists) in ids.iter().copied().zip(exists) {
            if !exists {
                if let Some(n) = g.pel.get(&id) {
                    log.op(|| xclaim_argv(key, gname, id, n, g.last_id));
                }
                g.ack(id);
                continue;
            }
            let fresh = !g.pel.contains_key(&id);
            if fresh && !force {
                continue;
            }
            if let Some(n) = g.pel.get(&id)
                && minidle != 0
                && now - (n.delivery_time as i64) < minidle
            {
                continue;
            }
            // A NACK that FORCE creates starts at one delivery, to which the
            // claim then adds one, as Redis's `streamCreateNACK` does.
            let prev = g.pel.get(&id).map_or(1, |n| n.delivery_count);
            let count = if retrycount >= 0 {
                retrycount as u64
            } else if !justid {
                prev + 1
            } else {
                prev
            };
            claim_to(g, id, cname, delivery, count);
            if let Some(c) = g.consumers.get_mut(cname) {
                c.active_time = now;
            }
            if let Some(n) = g.pel.get(&id) {
                log.op(|| xclaim_argv(key, gname, id, n, g.last_id));
            }
            replies.push((id, justid));
        }
        // The claims carry LASTID; with none, the new last ID goes alone.
        if advanced && log.changes == 0 {
            log.op(|| setid_argv(key, gname, g));
        }
    }
    let none_claimed = replies.is_empty();
    ctx.out.array(replies.len());
    for (id, justid) in replies {
        if justid {
            reply_id(ctx.out, id);
        } else if let Some(f) = s.get(id) {
            reply_entry(ctx.out, id, f);
        } else {
            ctx.out.null();
        }
    }
    if created {
        ctx.ks.notify(notify::STREAM, "xgroup-createconsumer", key);
        log.changes += 1;
        // A claim creates it on replay; with none it is logged itself
        // (Redis 8.0 logs nothing and its replicas lack the consumer).
        if none_claimed {
            log.insert(0, || {
                crate::argv![b"XGROUP", b"CREATECONSUMER", key, gname, cname]
            });
        }
    }
    log.finish(ctx);
    Ok(Done)
}

fn xautoclaim(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let argc = args.len();
    let (key, gname, cname) = (args.get(1), args.get(2), args.get(3));
    let minidle = parse_i64(args.get(4))
        .ok_or(Error::Static(
            "ERR Invalid min-idle-time argument for XAUTOCLAIM",
        ))?
        .max(0);
    let start = interval_start(args.get(5))?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argc {
        let more = argc - 1 - j;
        let opt = args.get(j);
        if eq_ic(opt, "COUNT") && more > 0 {
            let max = i64::MAX / 16;
            count = parse_i64(args.get(j + 1))
                .filter(|n| (1..=max).contains(n))
                .ok_or(Error::Static("ERR COUNT must be > 0"))?;
            j += 1;
        } else if eq_ic(opt, "JUSTID") {
            justid = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let has_group = stream_read(ctx.ks, key)?.is_some_and(|s| s.groups.contains_key(gname));
    if !has_group {
        return Err(nogroup_key(key, gname));
    }
    // Redis allocates COUNT IDs up front and answers this when the
    // allocation fails, which on x86-64 Linux is past the 128 TiB address
    // space (measured: 10^12 IDs succeed, 10^13 fail). zwindow allocates
    // nothing up front; it keeps the error for the same COUNTs.
    if count as u64 > (1u64 << 47) / 16 {
        return Err(Error::Static(
            "ERR Insufficient memory, failed allocating transient memory, COUNT too high.",
        ));
    }
    let now = ctx.ks.now_ms;
    let mut log = GroupLog::new(ctx.ks, true);
    let Some(s) = stream_mut(ctx.ks, key)? else {
        return Ok(Done);
    };
    let mut attempts = count.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut created = false;
    if let Some(g) = s.groups.get_mut(gname) {
        // As XCLAIM: created and marked seen up front.
        created = g.create_consumer(cname, now);
        if let Some(c) = g.consumers.get_mut(cname) {
            c.seen_time = now;
        }
    }
    let mut cursor = start;
    let mut next = None;
    loop {
        if attempts == 0 || count == 0 {
            next = s
                .groups
                .get(gname)
                .and_then(|g| g.pel.range(cursor..).next().map(|(id, _)| *id));
            break;
        }
        attempts -= 1;
        let Some(g) = s.groups.get(gname) else {
            break;
        };
        let Some((&id, nack)) = g.pel.range(cursor..).next() else {
            break;
        };
        let delivered = nack.delivery_time;
        let prev = nack.delivery_count;
        cursor = match id.incr() {
            Some(c) => c,
            None => {
                count = 0;
                StreamId::MAX
            }
        };
        let exists = s.get(id).is_some();
        let Some(g) = s.groups.get_mut(gname) else {
            break;
        };
        if !exists {
            if let Some(n) = g.pel.get(&id) {
                log.op(|| xclaim_argv(key, gname, id, n, g.last_id));
            }
            g.ack(id);
            deleted.push(id);
            count -= 1;
            continue;
        }
        if minidle != 0 && (now as i64 - delivered as i64) < minidle {
            continue;
        }
        claim_to(g, id, cname, now, if justid { prev } else { prev + 1 });
        if let Some(c) = g.consumers.get_mut(cname) {
            c.active_time = now as i64;
        }
        if let Some(n) = g.pel.get(&id) {
            log.op(|| xclaim_argv(key, gname, id, n, g.last_id));
        }
        claimed.push(id);
        count -= 1;
        if id == StreamId::MAX {
            break;
        }
    }
    let none_claimed = claimed.is_empty();
    ctx.out.array(3);
    reply_id(ctx.out, next.unwrap_or(StreamId::MIN));
    ctx.out.array(claimed.len());
    for id in claimed {
        if justid {
            reply_id(ctx.out, id);
        } else if let Some(f) = s.get(id) {
            reply_entry(ctx.out, id, f);
        } else {
            ctx.out.null();
        }
    }
    ctx.out.array(deleted.len());
    for id in deleted {
        reply_id(ctx.out, id);
    }
    if created {
        ctx.ks.notify(notify::STREAM, "xgroup-createconsumer", key);
        log.changes += 1;
        // A claim creates it on replay; with none it is logged itself
        // (Redis 8.0 logs nothing and its replicas lack the consumer).
        if none_claimed {
            log.insert(0, || {
                crate::argv![b"XGROUP", b"CREATECONSUMER", key, gname, cname]
            });
        }
    }
    log.finish(ctx);
    Ok(Done)
}

// ---------------------------------------------------------------------------
// XINFO, XSETID.

fn xinfo_stream_of<'a>(ks: &'a mut Keyspace<'_>, key: &[u8]) -> Result<&'a mut Stream, Error> {
    stream_read(ks, key)?.ok_or(Error::Static("ERR no such key"))
}

fn reply_lag(out: &mut Reply, s: &Stream, g: &Group) {
    match s.lag(g) {
        Some(l) => out.int(l),
        None => out.null(),
    }
}

fn reply_entries_read(out: &mut Reply, g: &Group) {
    if g.entries_read != INVALID_ENTRIES_READ {
        out.int(g.entries_read);
    } else {
        out.null();
    }
}

fn xinfo_consumers(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let now = ctx.ks.now_ms as i64;
    let s = xinfo_stream_of(ctx.ks, ctx.args.get(2))?;
    let Some(g) = s.groups.get(args.get(3)) else {
        return Err(nogroup_for_key(args.get(3), args.get(2)));
    };
    ctx.out.array(g.consumers.len());
    for (name, c) in &g.consumers {
        ctx.out.map(4);
        ctx.out.bulk(b"name");
        ctx.out.bulk(name);
        ctx.out.bulk(b"pending");
        ctx.out.int(c.pel.len() as i64);
        ctx.out.bulk(b"idle");
        ctx.out.int((now - c.seen_time as i64).max(0));
        ctx.out.bulk(b"inactive");
        ctx.out.int(c.inactive(now));
    }
    Ok(Done)
}

fn xinfo_groups(ctx: &mut Ctx) -> CmdResult {
    let s = xinfo_stream_of(ctx.ks, ctx.args.get(2))?;
    ctx.out.array(s.groups.len());
    for (name, g) in &s.groups {
        ctx.out.map(6);
        ctx.out.bulk(b"name");
        ctx.out.bulk(name);
        ctx.out.bulk(b"consumers");
        ctx.out.int(g.consumers.len() as i64);
        ctx.out.bulk(b"pending");
        ctx.out.int(g.pel.len() as i64);
        ctx.out.bulk(b"last-delivered-id");
        reply_id(ctx.out, g.last_id);
        ctx.out.bulk(b"entries-read");
        reply_entries_read(ctx.out, g);
        ctx.out.bulk(b"lag");
        reply_lag(ctx.out, s, g);
    }
    Ok(Done)
}

/// The number of nodes of Redis's radix tree over the stream's node keys
/// (16-byte big-endian IDs): what XINFO reports as `radix-tree-nodes`.
/// A compressed trie: one node per run of shared bytes, one per branch, one
/// per key end; an empty tree is the root alone.
fn rax_nodes(s: &Stream) -> usize {
    fn count(keys: &[[u8; 16]], depth: usize) -> usize {
        if depth == 16 {
            return 1;
        }
        // Longest common prefix from `depth`.
        let (first, last) = (&keys[0], &keys[keys.len() - 1]);
        let mut p = depth;
        while p < 16 && first[p] == last[p] {
            p += 1;
        }
        if p > depth {
            return 1 + count(keys, p);
        }
        let mut n = 1;
        let mut i = 0;
        while i < keys.len() {
            let b = keys[i][depth];
            let j = i + keys[i..].partition_point(|k| k[depth] == b);
            n += count(&keys[i..j], depth + 1);
            i = j;
        }
        n
    }
    let keys: Vec<[u8; 16]> = s
        .node_keys()
        .map(|id| {
            let mut k = [0u8; 16];
            k[..8].copy_from_slice(&id.ms.to_be_bytes());
            k[8..].copy_from_slice(&id.seq.to_be_bytes());
            k
        })
        .collect();
    if keys.is_empty() {
        return 1;
    }
    count(&keys, 0)
}

fn xinfo_stream(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let optc = args.len() - 3;
    let mut full = false;
    let mut count: i64 = 10;
    if optc > 0 {
        if (optc != 1 && optc != 3) || !eq_ic(args.get(3), "FULL") {
            return Err(subcommand_syntax(&args));
        }
        full = true;
        if optc == 3 {
            if !eq_ic(args.get(4), "COUNT") {
                return Err(subcommand_syntax(&args));
            }
            count = int_arg(args.get(5))?;
            if count < 0 {
                count = 10;
            }
        }
    }
    let s = xinfo_stream_of(ctx.ks, ctx.args.get(2))?;
    let out = &mut *ctx.out;
    out.map(if full { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(rax_nodes(s) as i64);
    out.bulk(b"last-generated-id");
    reply_id(out, s.last_id);
    out.bulk(b"max-deleted-entry-id");
    reply_id(out, s.max_deleted_id);
    out.bulk(b"entries-added");
    out.int(s.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    reply_id(out, s.first_id());
    if !full {
        out.bulk(b"groups");
        out.int(s.groups.len() as i64);
        out.bulk(b"first-entry");
        match s.first_entry() {
            Some((id, f)) => reply_entry(out, id, f),
            None => out.null(),
        }
        out.bulk(b"last-entry");
        match s.last_entry() {
            Some((id, f)) => reply_entry(out, id, f),
            None => out.null(),
        }
        return Ok(Done);
    }
    let count = count as u64;
    let limit = |n: usize| if count == 0 { n } else { n.min(count as usize) };
    out.bulk(b"entries");
    reply_range(out, s, StreamId::MIN, StreamId::MAX, count, false);
    out.bulk(b"groups");
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        reply_id(out, g.last_id);
        out.bulk(b"entries-read");
        reply_entries_read(out, g);
        out.bulk(b"lag");
        reply_lag(out, s, g);
        out.bulk(b"pel-count");
        out.int(g.pel.len() as i64);
        out.bulk(b"pending");
        out.array(limit(g.pel.len()));
        for (id, n) in g.pel.iter().take(limit(g.pel.len())) {
            out.array(4);
            reply_id(out, *id);
            out.bulk(&n.consumer);
            out.int(n.delivery_time as i64);
            out.int(n.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(5);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.int(c.seen_time as i64);
            out.bulk(b"active-time");
            out.int(c.active_time);
            out.bulk(b"pel-count");
            out.int(c.pel.len() as i64);
            out.bulk(b"pending");
            out.array(limit(c.pel.len()));
            for id in c.pel.iter().take(limit(c.pel.len())) {
                // A consumer's PEL is a subset of its group's.
                let (time, count) = g
                    .pel
                    .get(id)
                    .map_or((0, 0), |n| (n.delivery_time, n.delivery_count));
                out.array(3);
                reply_id(out, *id);
                out.int(time as i64);
                out.int(count as i64);
            }
        }
    }
    Ok(Done)
}

fn xinfo_help(ctx: &mut Ctx) -> CmdResult {
    super::scripting::help_lines(
        ctx,
        &[
            "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
            "HELP",
            "    Print this help.",
        ],
    );
    Ok(Done)
}

fn xsetid(ctx: &mut Ctx) -> CmdResult {
    let args = ctx.args;
    let argc = args.len();
    let key = args.get(1);
    let id = parse_strict_id(args.get(2), 0)?;
    let mut entries_added: i64 = -1;
    let mut max_xdel = StreamId::MIN;
    let mut i = 3;
    while i < argc {
        let more = argc - 1 - i;
        let opt = args.get(i);
        if eq_ic(opt, "ENTRIESADDED") && more > 0 {
            entries_added = int_arg(args.get(i + 1))?;
            if entries_added < 0 {
                return Err(Error::Static("ERR entries_added must be positive"));
            }
            i += 2;
        } else if eq_ic(opt, "MAXDELETEDID") && more > 0 {
            max_xdel = parse_strict_id(args.get(i + 1), 0)?;
            if id < max_xdel {
                return Err(Error::Static(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let s = stream_mut(ctx.ks, key)?.ok_or(Error::Static("ERR no such key"))?;
    if id < s.max_deleted_id {
        return Err(Error::Static(
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    if !s.is_empty() {
        if id < s.last_live_id() {
            return Err(Error::Static(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added != -1 && s.len() > entries_added as u64 {
            return Err(Error::Static(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_xdel.is_zero() {
        s.max_deleted_id = max_xdel;
    }
    ctx.out.ok();
    ctx.ks.signal(key, notify::STREAM, "xsetid");
    Ok(Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_like_redis() {
        assert_eq!(parse_u64(b" 7"), Some(7));
        assert_eq!(parse_u64(b"+7"), Some(7));
        assert_eq!(parse_u64(b"007"), Some(7));
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"-0"), Some(0));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Ok((StreamId::new(5, 0), false))
        );
        assert!(parse_id_full(b"-", 0, true, false).is_err());
        assert_eq!(parse_id(b"+", 0), Ok(StreamId::MAX));
        assert_eq!(parse_id(b"3", u64::MAX), Ok(StreamId::new(3, u64::MAX)));
        assert!(parse_id(b"1-2-3", 0).is_err());
    }
}
