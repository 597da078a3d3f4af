//! The command table and the command families.
//!
//! Every command is one [`Command`] entry in its family's file (`keys.rs`,
//! `strings.rs`, `zsets.rs`, …), declared beside its handler; [`TABLE`]
//! strings the families together and is the only list of commands: the
//! execution layer's resolution, arity errors, key positions (and so shard
//! locking), `COMMAND INFO/DOCS/COUNT/LIST`, ACL rules and unknown-command
//! errors all read it. What an entry says (and finding one by name) is the
//! [`spec`](crate::spec) leaf's, so the layers below the handlers can read
//! the table too: [`install`] registers it there.
//!
//! The [`execution`](crate::execution) layer calls a handler with a [`Ctx`]
//! once the command is verified and its shards are locked. Handlers write
//! their reply through `ctx.out` and return an [`Outcome`] (done, block on
//! keys, close, wait for a script), or an [`Error`], which becomes the
//! error reply; a handler that returns an error has written nothing.

pub(crate) mod acl;
pub(crate) mod bitmaps;
pub(crate) mod cluster;
pub(crate) mod connection;
pub(crate) mod debug;
pub(crate) mod docs;
pub(crate) mod functions;
pub(crate) mod geo;
pub(crate) mod hashes;
pub(crate) mod hyperloglog;
pub(crate) mod info;
pub(crate) mod keys;
pub(crate) mod lcs;
pub(crate) mod lists;
pub(crate) mod lolwut;
pub(crate) mod lua;
pub(crate) mod memory;
pub(crate) mod migrate;
pub(crate) mod modules;
pub(crate) mod monitor;
pub(crate) mod observability;
pub(crate) mod persistence;
pub(crate) mod pubsub;
pub(crate) mod replication;
pub(crate) mod scripting;
pub(crate) mod server;
pub(crate) mod services;
pub(crate) mod session;
pub(crate) mod set_ttl;
pub(crate) mod sets;
pub(crate) mod sort;
pub(crate) mod streams;
pub(crate) mod strings;
pub(crate) mod transactions;
pub(crate) mod windows;
pub(crate) mod zset_ttl;
pub(crate) mod zsets;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use crate::dispatch::Dispatch;
use crate::keyspace::{HashedKey, Key, Keyspace};
use crate::protocol::Reply;
// The arguments' types live in the protocol layer and the table's in the
// spec leaf; the families and the execution layer name them through here,
// beside the rest of a handler's vocabulary.
pub(crate) use crate::protocol::{Args, OwnedArgs};
use crate::spec::Unresolved;
pub(crate) use crate::spec::{Command, Keys, all_commands, flags, lookup, lookup_sub};
use crate::util::parse_i64;
pub(crate) use services::Services;
use session::Client;

/// Every family's commands; the single source of truth.
pub(crate) static TABLE: &[&[Command]] = &[
    connection::COMMANDS,
    server::COMMANDS,
    lolwut::COMMANDS,
    replication::COMMANDS,
    modules::COMMANDS,
    acl::COMMANDS,
    observability::COMMANDS,
    keys::COMMANDS,
    persistence::COMMANDS,
    migrate::COMMANDS,
    scripting::COMMANDS,
    functions::COMMANDS,
    strings::COMMANDS,
    bitmaps::COMMANDS,
    lcs::COMMANDS,
    hashes::COMMANDS,
    sets::COMMANDS,
    sort::COMMANDS,
    transactions::COMMANDS,
    windows::COMMANDS,
    lists::COMMANDS,
    zsets::COMMANDS,
    zset_ttl::COMMANDS,
    set_ttl::COMMANDS,
    geo::COMMANDS,
    hyperloglog::COMMANDS,
    streams::COMMANDS,
    pubsub::COMMANDS,
    cluster::COMMANDS,
];

/// Registers [`TABLE`] with the spec leaf, which the layers below the
/// handlers read it through (ACL rules, `rename-command`, AOF loading).
/// Every entry point calls this before anything looks a command up
/// (`main`, before it reads the config; the server's startup); calling it
/// again changes nothing.
pub fn install() {
    crate::spec::install(TABLE);
}

/// A command's handler. The table stores it opaquely (the spec leaf cannot
/// name [`Ctx`]): an entry declares it as `&(handler as Handler)`, and
/// [`run`] takes it back.
type Handler = fn(&mut Ctx<'_, '_>) -> CmdResult;

/// Runs `cmd`'s handler. Every entry's handler is a [`Handler`] (a unit
/// test holds the whole table to that), so the downcast always succeeds;
/// it costs a type check and the indirect call the handler always took.
#[inline]
pub(crate) fn run(cmd: &'static Command, ctx: &mut Ctx<'_, '_>) -> CmdResult {
    match cmd.handler.downcast_ref::<Handler>() {
        Some(handler) => handler(ctx),
        None => Err(Error::Static("ERR this command has no handler")),
    }
}

/// What INFO commandstats reports for one command.
pub(crate) struct CallStats {
    pub(crate) calls: AtomicU64,
    usec: AtomicU64,
    /// Refused before running (arity, auth, MULTI, BUSY, …).
    pub(crate) rejected: AtomicU64,
    /// Ran and answered an error.
    pub(crate) failed: AtomicU64,
    /// INFO latencystats: the calls' durations.
    pub(crate) latency: crate::stats::LatencyHistogram,
}

impl CallStats {
    /// The counters of `cmd` (a command or subcommand of the table).
    ///
    /// Redis keeps these in its `redisCommand` entries; ours are statics
    /// without interior mutability, so the counters sit in one array beside
    /// the table, found by the entry's address (an identity hash, no
    /// hashing of names on the hot path).
    pub(crate) fn of(cmd: &'static Command) -> &'static CallStats {
        static SLOTS: OnceLock<StatsIndex> = OnceLock::new();
        static NONE: CallStats = CallStats::new();
        let index = SLOTS.get_or_init(StatsIndex::build);
        index.get(cmd).map_or(&NONE, |i| &index.stats[i])
    }

    const fn new() -> CallStats {
        CallStats {
            calls: AtomicU64::new(0),
            usec: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            latency: crate::stats::LatencyHistogram::new(),
        }
    }

    /// CONFIG RESETSTAT.
    pub(crate) fn reset(&self) {
        for c in [&self.calls, &self.usec, &self.rejected, &self.failed] {
            c.store(0, Relaxed);
        }
        self.latency.reset();
    }
}

/// The counters of every command and subcommand, found by the entry's
/// address in an open-addressing table of our own: every call looks its
/// command up here, and a multiply-shift of the address with a probe or
/// two costs less than a general map's hashing and group matching.
struct StatsIndex {
    /// (address, index into `stats`); address 0 marks a free slot.
    slots: Box<[(usize, u32)]>,
    /// `64 - log2(slots.len())`.
    shift: u32,
    stats: Box<[CallStats]>,
}

impl StatsIndex {
    fn build() -> StatsIndex {
        // The table itself, not the spec's registry: counters never depend
        // on whether it was installed yet.
        let all: Vec<&'static Command> = (TABLE.iter().flat_map(|family| family.iter()))
            .flat_map(|c| std::iter::once(c).chain(c.subcommands))
            .collect();
        // At most half full, so probes stay short.
        let size = (all.len() * 2).next_power_of_two();
        let mut index = StatsIndex {
            slots: vec![(0, 0); size].into_boxed_slice(),
            shift: 64 - size.trailing_zeros(),
            stats: all.iter().map(|_| CallStats::new()).collect(),
        };
        for (i, c) in all.iter().enumerate() {
            let addr = *c as *const Command as usize;
            let mut slot = index.home(addr);
            while index.slots[slot].0 != 0 {
                slot = (slot + 1) & (size - 1);
            }
            index.slots[slot] = (addr, i as u32);
        }
        index
    }

    fn home(&self, addr: usize) -> usize {
        ((addr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    fn get(&self, cmd: &'static Command) -> Option<usize> {
        let addr = cmd as *const Command as usize;
        let mask = self.slots.len() - 1;
        let mut slot = self.home(addr);
        loop {
            match self.slots[slot] {
                (0, _) => return None,
                (a, i) if a == addr => return Some(i as usize),
                _ => slot = (slot + 1) & mask,
            }
        }
    }
}

/// What a handler sees.
pub(crate) struct Ctx<'c, 'k> {
    pub(crate) shared: &'c Arc<Services>,
    pub(crate) client: &'c mut Client,
    pub(crate) out: &'c mut Reply,
    pub(crate) args: Args<'c>,
    pub(crate) ks: &'c mut Keyspace<'k>,
    pub(crate) cmd: &'static Command,
    /// Arguments the slow log and MONITOR must not show (passwords), one
    /// bit each; bit 63 stands for every argument from 63 on.
    pub(crate) redacted: u64,
    /// The error reply a script wrote as its result, if any: the call
    /// counts as failed, and the error in `errorstats` unless a command
    /// the script ran already counted it (see [`ScriptError`]).
    pub(crate) script_error: Option<ScriptError>,
    /// The first of `args`' keys, hashed when the command's locks were
    /// planned (see [`Ctx::key`]).
    pub(crate) first_key: Option<HashedKey<'c>>,
    /// The execution layer, for a command that runs commands (EXEC, a
    /// script's `redis.call`, DEBUG LOADAOF's replay).
    pub(crate) dispatch: &'c dyn Dispatch<Client>,
}

/// The refusal of a deny-OOM command over `maxmemory`.
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// An error a script's run ended with (its reply is already written).
#[derive(Debug)]
pub(crate) struct ScriptError {
    pub(crate) text: Vec<u8>,
    /// False when the error is a command's error the script passed on
    /// (`ignore_error_stats_update`), already in the statistics.
    pub(crate) counted: bool,
}

impl<'c> Ctx<'c, '_> {
    /// Argument `i`, a key, with its hash: the one computed when the
    /// command's locks were planned if it is that key, so a single-key
    /// command hashes its key once for the locking, the expiry check and
    /// the lookup. Pass it to the keyspace instead of the bare argument.
    pub(crate) fn key(&self, i: usize) -> HashedKey<'c> {
        let bytes = self.args.get(i);
        match self.first_key {
            // The very same borrowed bytes (not merely equal ones), so the
            // hash is theirs.
            Some(k) if std::ptr::eq(k.bytes(), bytes) => k,
            _ => HashedKey::new(bytes),
        }
    }

    /// Logs this command as `argv` instead of verbatim (Redis's
    /// `rewriteClientCommandVector`): what makes its effect deterministic
    /// on replay. `argv` is built only when something listens.
    pub(crate) fn propagate_as(&mut self, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        if self.ks.propagating() {
            self.ks.prop.call.rewrite = Some(argv());
        }
    }

    /// Logs nothing for this command itself: what it did went out through
    /// [`Keyspace::also_propagate`] (Redis's `preventCommandPropagation`).
    pub(crate) fn prevent_propagation(&mut self) {
        // Only while something listens: the call state is this command's
        // own only then (see `execution::call`).
        if !self.ks.propagating() {
            return;
        }
        self.ks.prop.call.prevent = true;
    }

    /// Logs this command even if it changed nothing (Redis's
    /// `forceCommandPropagation`).
    pub(crate) fn force_propagation(&mut self) {
        if !self.ks.propagating() {
            return;
        }
        self.ks.prop.call.force = true;
    }

    /// Sends this command to replicas, not the AOF, even though it changed
    /// nothing (Redis's `forceCommandPropagation(c, PROPAGATE_REPL)`:
    /// PUBLISH).
    pub(crate) fn force_replication(&mut self) {
        if !self.ks.propagating() {
            return;
        }
        self.ks.prop.call.force = true;
        self.ks.prop.call.target = crate::keyspace::propagate::Target::Replicas;
    }

    /// Hides argument `i` from the slow log and MONITOR (Redis's
    /// `redactClientCommandArgument`).
    pub(crate) fn redact(&mut self, i: usize) {
        self.redacted |= 1 << i.min(63);
    }

    pub(crate) fn arg(&self, i: usize) -> &[u8] {
        self.args.get(i)
    }

    pub(crate) fn argc(&self) -> usize {
        self.args.len()
    }
}

/// An error reply. Static texts cost nothing; formatted ones allocate only
/// on the error path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    Syntax,
    WrongType,
    NotInteger,
    NotFloat,
    Static(&'static str),
    Owned(String),
    /// Not a reply: the script engine is held by another client's script,
    /// so the command has done nothing and [`call`] turns this into
    /// [`Outcome::WaitScript`].
    EngineBusy,
    /// Refused before doing anything, for a reason Redis checks before the
    /// command runs (a script's declared flags): counted as a rejected
    /// call, not a failed one.
    Refused(&'static str),
    /// Text that quotes client bytes, which need not be UTF-8.
    Raw(Vec<u8>),
}

impl Error {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Error::Raw(b) => b,
            _ => self.text().as_bytes(),
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            Error::Raw(_) => "ERR",
            Error::Syntax => "ERR syntax error",
            Error::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value",
            Error::NotInteger => "ERR value is not an integer or out of range",
            Error::NotFloat => "ERR value is not a valid float",
            Error::Static(s) => s,
            Error::Owned(s) => s,
            Error::EngineBusy => "BUSY",
            Error::Refused(s) => s,
        }
    }
}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::Owned(s)
    }
}

impl From<Unresolved> for Error {
    fn from(e: Unresolved) -> Error {
        match e {
            Unresolved::UnknownCommand(text) => Error::Raw(text),
            Unresolved::UnknownSubcommand(text) | Unresolved::Arity(text) => Error::Owned(text),
        }
    }
}

/// What a handler returns: what became of the command, or its error reply.
type CmdResult = Result<Outcome, Error>;

/// What became of a command that did not fail.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// It ran; its reply is written.
    Done,
    /// A blocking command found nothing and may wait: it wrote nothing, and
    /// the execution layer queues the client on these keys.
    Block(Block),
    /// It ran and answered; the connection closes after the reply (QUIT,
    /// SHUTDOWN, CLIENT KILL of the caller itself).
    Close,
    /// It needs the script engine, which another client's script holds:
    /// nothing was done; the execution layer retries it after the script.
    WaitScript,
    /// MIGRATE's payloads are ready and nothing is written yet: the
    /// execution layer runs the transfer with no shard held, then
    /// [`migrate::finish`].
    Migrate(Box<crate::migrate::Transfer>),
    /// WAIT found too few replicas acknowledging: nothing is written yet;
    /// the execution layer waits for their ACKs, then answers the count.
    WaitAcks(WaitAcks),
    /// A FLUSHALL or FLUSHDB SYNC handed the databases to the lazyfree
    /// thread and wrote its reply: the client waits (the server does not)
    /// until the thread signals they are freed (Redis 7.4+'s blocking
    /// async flush).
    AwaitFree(tokio::sync::oneshot::Receiver<()>),
    /// SHUTDOWN began (or joined) a wait for lagging replicas: the client
    /// waits, answered only if the wait ends without the exit (the sender
    /// dropped).
    AwaitShutdown(tokio::sync::oneshot::Receiver<()>),
}

pub(crate) use Outcome::Done;

/// WAIT's wait: `replicas` must acknowledge `offset` within `timeout`
/// (None: forever). WAITAOF's (`aof`) counts replicas' FACKs instead, and
/// may also wait for the local AOF's fsync.
#[derive(Debug)]
pub(crate) struct WaitAcks {
    pub(crate) offset: u64,
    pub(crate) replicas: usize,
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) aof: Option<WaitAof>,
}

/// What WAITAOF waits for beyond its replicas.
#[derive(Debug)]
pub(crate) struct WaitAof {
    /// numlocal is 1: this server's AOF must have fsynced `position`.
    pub(crate) local: bool,
    /// The client's last write's end in the AOF's stream.
    pub(crate) position: u64,
}

/// A blocking command's request to wait for data on `keys`.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) keys: Vec<Key>,
    /// The type the command takes data from, as `TYPE` names it: a key that
    /// becomes ready holding another type leaves the waiter blocked.
    pub(crate) kind: &'static str,
    /// None waits forever.
    pub(crate) timeout: Option<std::time::Duration>,
    /// The arguments to re-run the command with when a key is ready, when
    /// they differ from the original (XREAD's `$` resolved to an ID).
    pub(crate) rerun: Option<OwnedArgs>,
    /// Whether the waiter re-runs when a key it waits on is deleted or
    /// stops holding `kind` (XREADGROUP, which then fails with NOGROUP or
    /// WRONGTYPE as Redis 7.2+'s re-executed command does); false leaves
    /// it waiting.
    pub(crate) unblock_on_nokey: bool,
}

/// The reply of HTTL/HPTTL/HEXPIRETIME/HPEXPIRETIME and of their
/// sorted-set twins (ZTTL …): one integer per field or member from argument
/// `first` on, `deadline_of` giving its deadline (None: no such subkey;
/// `no_ttl`, the types' marker: none). -2 when the subkey does not exist
/// (or its deadline has come), -1 when it has no TTL, else the time left
/// (`relative`) or the deadline, in seconds rounded up or in milliseconds.
struct SubkeyTtl {
    now: u64,
    no_ttl: u64,
    seconds: bool,
    relative: bool,
}

impl SubkeyTtl {
    pub(crate) fn reply(
        &self,
        out: &mut Reply,
        args: Args<'_>,
        first: usize,
        deadline_of: impl Fn(&[u8]) -> Option<u64>,
    ) {
        let base = if self.relative { self.now } else { 0 };
        out.array(args.len() - first);
        for i in first..args.len() {
            out.int(match deadline_of(args.get(i)) {
                None => -2,
                Some(at) if at == self.no_ttl => -1,
                Some(at) if at <= self.now => -2,
                Some(at) if self.seconds => ((at + 999 - base) / 1000) as i64,
                Some(at) => (at - base) as i64,
            });
        }
    }
}

/// How the HEXPIRE and ZEXPIRE families are logged: as `name` (HPEXPIREAT,
/// ZPEXPIREAT) with the absolute deadline `at` in milliseconds, so a replay
/// keeps it, the condition as given (`args` up to `list_at`, where
/// FIELDS/MEMBERS stands) and only the subkeys in `set`.
fn absolute_expire_argv(
    name: &[u8],
    args: Args<'_>,
    list_at: usize,
    at: u64,
    set: &[&[u8]],
) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = args.iter().take(list_at + 1).map(|a| a.to_vec()).collect();
    v[0] = name.to_vec();
    v[2] = at.to_string().into_bytes();
    v.push(set.len().to_string().into_bytes());
    v.extend(set.iter().map(|f| f.to_vec()));
    v
}

/// Parses a blocking timeout in seconds as redis-server 8.0 does: a long
/// double, rounded *up* to whole milliseconds (measured: `0.0001` times out
/// at once, `-0.0001` waits forever like `0`); 0 waits forever.
fn parse_timeout(arg: &[u8], now_ms: u64) -> Result<Option<std::time::Duration>, Error> {
    let not_float = Error::Static("ERR timeout is not a float or out of range");
    let secs = match crate::util::parse_f64(arg) {
        Some(v) => v,
        // Out of a double's range but inside a long double's: huge values
        // end up "negative" below, tiny ones round to forever.
        None => std::str::from_utf8(arg)
            .ok()
            .filter(|t| {
                !t.is_empty()
                    && t.bytes().all(|c| {
                        c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')
                    })
            })
            .and_then(|t| t.parse::<f64>().ok())
            // A non-zero value that underflows a double is a positive
            // sliver to Redis's long double: it rounds up to 1 ms.
            .map(|v| {
                let nonzero = arg
                    .split(|&c| c == b'e' || c == b'E')
                    .next()
                    .is_some_and(|m| m.iter().any(|c| (b'1'..=b'9').contains(c)));
                if v == 0.0 && nonzero && arg.first() != Some(&b'-') {
                    f64::MIN_POSITIVE
                } else {
                    v
                }
            })
            .ok_or(not_float)?,
    };
    let ms = (secs * 1000.0).ceil();
    // Redis 7.2+ refuses a value above LLONG_MAX ms before its cast; C's
    // (long long) cast of a value below LLONG_MIN yields LLONG_MIN on
    // x86-64, which Redis then reports as negative.
    let two63 = i64::MAX as f64;
    if ms >= two63 {
        return Err(Error::Static("ERR timeout is out of range"));
    }
    if ms < -two63 {
        return Err(Error::Static("ERR timeout is negative"));
    }
    let ms = ms as i64;
    if ms < 0 {
        return Err(Error::Static("ERR timeout is negative"));
    }
    if ms > i64::MAX - now_ms as i64 {
        return Err(Error::Static("ERR timeout is out of range"));
    }
    Ok((ms > 0).then(|| std::time::Duration::from_millis(ms as u64)))
}

/// A timeout in whole milliseconds as Redis's `getTimeoutFromObjectOrReply`
/// (`UNIT_MILLISECONDS`) reads it (WAIT, WAITAOF, CLIENT PAUSE): an
/// integer, not negative, whose deadline fits a `long long`; 0 is forever.
fn parse_ms_timeout(arg: &[u8], now_ms: u64) -> Result<i64, Error> {
    let ms = crate::util::parse_i64(arg).ok_or(Error::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    if ms < 0 {
        return Err(Error::Static("ERR timeout is negative"));
    }
    if ms > i64::MAX - now_ms as i64 {
        return Err(Error::Static("ERR timeout is out of range"));
    }
    Ok(ms)
}

/// Redis's `getRangeLongFromObjectOrReply(…, -LONG_MAX, LONG_MAX, …)`:
/// an integer other than LLONG_MIN (a count or rank whose negation must
/// exist).
fn count_arg(arg: &[u8]) -> Result<i64, Error> {
    match int_arg(arg)? {
        i64::MIN => Err(Error::Static(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        )),
        n => Ok(n),
    }
}

/// A SCAN-family cursor as Redis 8.0's `parseScanCursorOrReply`
/// (`string2ull`): a non-negative `string2ll` integer, or else what
/// `strtoull` reads in full (leading spaces, a sign — a minus wraps —,
/// leading zeros; no overflow, not empty).
fn scan_cursor(arg: &[u8]) -> Result<u64, Error> {
    let invalid = Error::Static("ERR invalid cursor");
    if let Some(n) = crate::util::parse_i64(arg) {
        return u64::try_from(n).map_err(|_| invalid);
    }
    let start = arg
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
        .unwrap_or(arg.len());
    let rest = &arg[start..];
    let (neg, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid);
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(Error::Static("ERR invalid cursor"))?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses an integer argument with Redis's error text.
fn int_arg(arg: &[u8]) -> Result<i64, Error> {
    parse_i64(arg).ok_or(Error::NotInteger)
}

/// Resolves `args` to the command (or subcommand) to run, or the
/// unknown-command or arity error reply if there is none (see
/// [`spec::resolve`](crate::spec::resolve)).
#[inline]
pub(crate) fn resolve(args: &Args<'_>) -> Result<&'static Command, Error> {
    crate::spec::resolve(args).map_err(Error::from)
}

/// Redis's `addReplySubcommandSyntaxError`: a subcommand given too many
/// arguments, quoted as the client typed it (`'RESTORE'`, `'restore'`).
fn subcommand_syntax(args: &Args<'_>) -> Error {
    let sub = args.get(1);
    Error::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)]),
        String::from_utf8_lossy(args.get(0)).to_ascii_uppercase()
    ))
}

/// `parent|sub` for subcommands, the name otherwise (as Redis prints them).
pub(crate) fn full_name(args: &Args<'_>, cmd: &Command) -> String {
    if lookup(args.get(0)).is_some_and(|p| !p.subcommands.is_empty())
        && !std::ptr::eq(lookup(args.get(0)).unwrap_or(cmd), cmd)
    {
        format!(
            "{}|{}",
            String::from_utf8_lossy(args.get(0)).to_lowercase(),
            cmd.name
        )
    } else {
        cmd.name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for c in all_commands() {
            assert_eq!(c.name, c.name.to_lowercase());
            assert!(seen.insert(c.name), "duplicate command {}", c.name);
            assert!(!c.summary.is_empty(), "{} has no summary", c.name);
            for s in c.subcommands {
                assert!(
                    !s.summary.is_empty(),
                    "{}|{} has no summary",
                    c.name,
                    s.name
                );
            }
        }
    }

    #[test]
    fn every_syntax_parses() {
        for c in all_commands() {
            for cmd in std::iter::once(c).chain(c.subcommands) {
                docs::parse_syntax(cmd.syntax).unwrap_or_else(|e| panic!("{}: {e}", cmd.name));
            }
        }
    }

    #[test]
    fn every_command_is_found_with_its_counters() {
        for cmd in all_commands() {
            let found = lookup(cmd.name.to_ascii_uppercase().as_bytes());
            assert!(found.is_some_and(|c| std::ptr::eq(c, cmd)), "{}", cmd.name);
            for sub in std::iter::once(cmd).chain(cmd.subcommands) {
                let stats = CallStats::of(sub);
                assert!(
                    !std::ptr::eq(stats, CallStats::of(&UNKNOWN)),
                    "{}",
                    sub.name
                );
            }
        }
        assert!(std::ptr::eq(
            CallStats::of(&UNKNOWN),
            CallStats::of(&UNKNOWN)
        ));
    }

    /// A command outside the table: it has no counters of its own.
    static UNKNOWN: Command = Command::new(
        "unknown",
        1,
        0,
        Keys::None,
        &((|_| Ok(Outcome::Done)) as Handler),
    );

    /// [`run`] finds every entry's handler: each is declared as a
    /// [`Handler`] (a bare `&handler` would be a type of its own).
    #[test]
    fn every_handler_is_a_handler() {
        for family in TABLE {
            for c in family.iter() {
                for cmd in std::iter::once(c).chain(c.subcommands) {
                    assert!(cmd.handler.is::<Handler>(), "{}", cmd.name);
                }
            }
        }
    }
}
