//! The command table and the command families.
//!
//! Every command is one [`Command`] entry in its family's file (`keys.rs`,
//! `strings.rs`, `zsets.rs`, …); [`TABLE`] strings the families together and
//! is the only list of commands: the execution layer's resolution, arity
//! errors, key positions (and so shard locking), `COMMAND INFO/DOCS/COUNT/
//! LIST` and unknown-command errors all read it.
//!
//! The [`execution`](crate::execution) layer calls a handler with a [`Ctx`]
//! once the command is verified and its shards are locked. Handlers write
//! their reply through `ctx.out` and return an [`Outcome`] (done, block on
//! keys, close, wait for a script), or an [`Error`], which becomes the
//! error reply; a handler that returns an error has written nothing.

pub mod acl;
pub mod bitmaps;
pub mod cluster;
pub mod connection;
pub mod debug;
pub mod docs;
pub mod functions;
pub mod geo;
pub mod hashes;
pub mod hyperloglog;
pub mod info;
pub mod keys;
pub mod lcs;
pub mod lists;
pub mod memory;
pub mod migrate;
pub mod modules;
pub mod observability;
pub mod persistence;
// Generated data, laid out by its generator (.ci/gen_command_meta.py).
#[rustfmt::skip]
pub(crate) mod meta;
pub(crate) mod meta_later;
pub mod pubsub;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod sort;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod windows;
pub mod zset_ttl;
pub mod zsets;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use crate::execution::client::Client;
use crate::keyspace::{HashedKey, Key, Keyspace};
use crate::protocol::Reply;
// The arguments' types live in the protocol layer; the families and the
// execution layer name them through here, beside the rest of a handler's
// vocabulary.
pub use crate::protocol::{Args, OwnedArgs};
use crate::server::Shared;
use crate::util::parse_i64;

/// Every family's commands; the single source of truth.
pub static TABLE: &[&[Command]] = &[
    connection::COMMANDS,
    server::COMMANDS,
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
    geo::COMMANDS,
    hyperloglog::COMMANDS,
    streams::COMMANDS,
    pubsub::COMMANDS,
    cluster::COMMANDS,
];

pub type Handler = fn(&mut Ctx<'_, '_>) -> CmdResult;

/// Command flags, as `COMMAND INFO` reports them.
pub mod flags {
    pub const WRITE: u32 = 1 << 0;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const BLOCKING: u32 = 1 << 6;
    pub const LOADING: u32 = 1 << 7;
    pub const STALE: u32 = 1 << 8;
    pub const FAST: u32 = 1 << 9;
    pub const NO_AUTH: u32 = 1 << 10;
    pub const ALLOW_BUSY: u32 = 1 << 11;
    pub const NO_MULTI: u32 = 1 << 12;
    pub const SKIP_SLOWLOG: u32 = 1 << 13;
    pub const MAY_REPLICATE: u32 = 1 << 14;
    /// Runs immediately even inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
    pub const TX_CONTROL: u32 = 1 << 15;
    /// Allowed in RESP2 subscribed mode.
    pub const SUBSCRIBED_OK: u32 = 1 << 16;
    /// Reported only: zwindow has no MONITOR to hide the command from.
    pub const SKIP_MONITOR: u32 = 1 << 17;
    /// A command that may be given no keys at all (scripts).
    pub const NO_MANDATORY_KEYS: u32 = 1 << 18;
    /// Never set in the table: `COMMAND INFO` derives it from the key specs
    /// (keys the first/last/step range does not cover).
    pub const MOVABLEKEYS: u32 = 1 << 19;
    /// Reported only: Redis refuses these while a replica loads its data
    /// asynchronously, which zwindow never does.
    pub const NO_ASYNC_LOADING: u32 = 1 << 20;
    /// RESTORE-ASKING: a cluster's ASKING state would let it run on an
    /// importing slot (reported only: zwindow has no cluster mode).
    pub const ASKING: u32 = 1 << 21;
    /// Never reported (Redis hides it): refused by the execution layer
    /// unless its `enable-…-command` setting allows the client (MODULE's
    /// LOAD, LOADEX and UNLOAD).
    pub const PROTECTED: u32 = 1 << 22;

    /// The flags `COMMAND INFO` prints, in redis-server's order; Redis hides
    /// `may_replicate`.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (MOVABLEKEYS, "movablekeys"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

/// Which arguments are keys: what the dispatcher locks and `COMMAND` reports.
#[derive(Debug, Clone, Copy)]
pub enum Keys {
    None,
    /// Redis's (first, last, step); `last` negative counts from the end.
    Range {
        first: i32,
        last: i32,
        step: i32,
    },
    /// `numkeys` at `count_at`, keys right after it; `dest` is an extra key
    /// before the count (ZUNIONSTORE's destination).
    NumKeys {
        count_at: usize,
        dest: Option<usize>,
    },
    /// Every shard (KEYS, FLUSHDB, EXEC, …).
    All,
    /// Scripts (EVAL, FCALL, …): every shard is locked, since a script may
    /// touch keys it did not declare, but the `numkeys` keys at `count_at`
    /// are what it declares (COMMAND GETKEYS, cluster-aware clients).
    Script {
        count_at: usize,
    },
    /// The key at 1 and, from argument 2 on, whatever follows a `STORE` or
    /// `STOREDIST` word (GEORADIUS, GEORADIUSBYMEMBER). Every candidate is
    /// locked — a member or unit spelled `store` costs one extra lock, never
    /// a missing one — while COMMAND GETKEYS reports Redis's exact choice
    /// from `meta.rs`.
    WithStore,
    /// XREAD/XREADGROUP: the first half of the arguments after the
    /// `STREAMS` option (see [`streams::streams_keys`]).
    Streams,
    /// MIGRATE: the key at 3 unless empty, and every argument after the
    /// first `KEYS` word from 6 on. A password spelled `keys` makes that a
    /// few arguments more (locked, never missed); COMMAND GETKEYS reports
    /// Redis's exact choice from `meta.rs`.
    Migrate,
}

impl Keys {
    pub const ONE: Keys = Keys::Range {
        first: 1,
        last: 1,
        step: 1,
    };
    pub const ALL_ARGS: Keys = Keys::Range {
        first: 1,
        last: -1,
        step: 1,
    };
    pub const TWO: Keys = Keys::Range {
        first: 1,
        last: 2,
        step: 1,
    };
}

/// One command (or subcommand) of the table.
pub struct Command {
    /// Lowercase name; subcommands carry the bare subcommand name.
    pub name: &'static str,
    pub arity: i32,
    pub flags: u32,
    pub keys: Keys,
    pub handler: Handler,
    pub group: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    pub summary: &'static str,
    /// The argument grammar after the name, Redis-doc style
    /// (`key [NX | XX] seconds`); `COMMAND DOCS` derives its arguments from it.
    pub syntax: &'static str,
    pub subcommands: &'static [Command],
}

/// What INFO commandstats reports for one command.
pub struct CallStats {
    pub calls: AtomicU64,
    pub usec: AtomicU64,
    /// Refused before running (arity, auth, MULTI, BUSY, …).
    pub rejected: AtomicU64,
    /// Ran and answered an error.
    pub failed: AtomicU64,
    /// INFO latencystats: the calls' durations.
    pub latency: crate::stats::LatencyHistogram,
}

impl CallStats {
    /// The counters of `cmd` (a command or subcommand of the table).
    ///
    /// Redis keeps these in its `redisCommand` entries; ours are statics
    /// without interior mutability, so the counters sit in one array beside
    /// the table, found by the entry's address (an identity hash, no
    /// hashing of names on the hot path).
    pub fn of(cmd: &'static Command) -> &'static CallStats {
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
    pub fn reset(&self) {
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
        let all: Vec<&'static Command> = all_commands()
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

impl Command {
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u32,
        keys: Keys,
        handler: Handler,
    ) -> Command {
        Command {
            name,
            arity,
            flags,
            keys,
            handler,
            group: "generic",
            since: "1.0.0",
            complexity: "O(1)",
            summary: "",
            syntax: "",
            subcommands: &[],
        }
    }

    pub const fn doc(
        mut self,
        group: &'static str,
        since: &'static str,
        complexity: &'static str,
        summary: &'static str,
    ) -> Command {
        self.group = group;
        self.since = since;
        self.complexity = complexity;
        self.summary = summary;
        self
    }

    pub const fn syntax(mut self, syntax: &'static str) -> Command {
        self.syntax = syntax;
        self
    }

    pub const fn subcommands(mut self, subs: &'static [Command]) -> Command {
        self.subcommands = subs;
        self
    }

    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        if a >= 0 {
            argc == a as usize
        } else {
            argc >= (-a) as usize
        }
    }

    /// Key argument indices for this invocation, in order.
    pub fn key_indices(&self, args: &Args<'_>, mut f: impl FnMut(usize)) {
        let argc = args.len();
        match self.keys {
            Keys::None | Keys::All => {}
            Keys::Script { count_at } => {
                let n = parse_i64(args.get(count_at)).unwrap_or(0).max(0) as usize;
                for i in (count_at + 1..argc).take(n) {
                    f(i);
                }
            }
            Keys::Range { first, last, step } => {
                let last = if last < 0 { argc as i32 + last } else { last };
                let mut i = first;
                while i > 0 && i <= last && (i as usize) < argc {
                    f(i as usize);
                    i += step.max(1);
                }
            }
            Keys::WithStore => {
                if argc > 1 {
                    f(1);
                }
                for i in 2..argc.saturating_sub(1) {
                    let a = args.get(i);
                    if a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist") {
                        f(i + 1);
                    }
                }
            }
            Keys::Streams => {
                if let Some((first, n)) = streams::streams_keys(args) {
                    (first..first + n).for_each(f);
                }
            }
            Keys::Migrate => {
                if !args.get(3).is_empty() {
                    f(3);
                }
                if let Some(at) = (6..argc).find(|&i| args.get(i).eq_ignore_ascii_case(b"keys")) {
                    (at + 1..argc).for_each(f);
                }
            }
            Keys::NumKeys { count_at, dest } => {
                if let Some(d) = dest.filter(|&d| d < argc) {
                    f(d);
                }
                let n = parse_i64(args.get(count_at)).unwrap_or(0).max(0) as usize;
                for i in (count_at + 1..argc).take(n) {
                    f(i);
                }
            }
        }
    }
}

/// What a handler sees.
pub struct Ctx<'c, 'k> {
    pub shared: &'c Arc<Shared>,
    pub client: &'c mut Client,
    pub out: &'c mut Reply,
    pub args: Args<'c>,
    pub ks: &'c mut Keyspace<'k>,
    pub cmd: &'static Command,
    /// Arguments the slow log and MONITOR must not show (passwords), one
    /// bit each; bit 63 stands for every argument from 63 on.
    pub redacted: u64,
    /// The error reply a script wrote as its result, if any: the call
    /// counts as failed, and the error in `errorstats` unless a command
    /// the script ran already counted it (see [`ScriptError`]).
    pub script_error: Option<ScriptError>,
    /// The first of `args`' keys, hashed when the command's locks were
    /// planned (see [`Ctx::key`]).
    pub first_key: Option<HashedKey<'c>>,
}

/// An error a script's run ended with (its reply is already written).
#[derive(Debug)]
pub struct ScriptError {
    pub text: Vec<u8>,
    /// False when the error is a command's error the script passed on
    /// (`ignore_error_stats_update`), already in the statistics.
    pub counted: bool,
}

impl<'c> Ctx<'c, '_> {
    /// Argument `i`, a key, with its hash: the one computed when the
    /// command's locks were planned if it is that key, so a single-key
    /// command hashes its key once for the locking, the expiry check and
    /// the lookup. Pass it to the keyspace instead of the bare argument.
    pub fn key(&self, i: usize) -> HashedKey<'c> {
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
    pub fn propagate_as(&mut self, argv: impl FnOnce() -> Vec<Vec<u8>>) {
        if self.ks.propagating() {
            self.ks.prop.call.rewrite = Some(argv());
        }
    }

    /// Logs nothing for this command itself: what it did went out through
    /// [`Keyspace::also_propagate`] (Redis's `preventCommandPropagation`).
    pub fn prevent_propagation(&mut self) {
        // Only while something listens: the call state is this command's
        // own only then (see `execution::call`).
        if !self.ks.propagating() {
            return;
        }
        self.ks.prop.call.prevent = true;
    }

    /// Logs this command even if it changed nothing (Redis's
    /// `forceCommandPropagation`).
    pub fn force_propagation(&mut self) {
        if !self.ks.propagating() {
            return;
        }
        self.ks.prop.call.force = true;
    }

    /// Hides argument `i` from the slow log and MONITOR (Redis's
    /// `redactClientCommandArgument`).
    pub fn redact(&mut self, i: usize) {
        self.redacted |= 1 << i.min(63);
    }

    pub fn arg(&self, i: usize) -> &[u8] {
        self.args.get(i)
    }

    pub fn argc(&self) -> usize {
        self.args.len()
    }
}

/// An error reply. Static texts cost nothing; formatted ones allocate only
/// on the error path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
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
    pub fn bytes(&self) -> &[u8] {
        match self {
            Error::Raw(b) => b,
            _ => self.text().as_bytes(),
        }
    }

    pub fn text(&self) -> &str {
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

/// What a handler returns: what became of the command, or its error reply.
pub type CmdResult = Result<Outcome, Error>;

/// What became of a command that did not fail.
#[derive(Debug)]
pub enum Outcome {
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
}

pub use Outcome::Done;

/// A blocking command's request to wait for data on `keys`.
#[derive(Debug)]
pub struct Block {
    pub keys: Vec<Key>,
    /// The type the command takes data from, as `TYPE` names it: a key that
    /// becomes ready holding another type leaves the waiter blocked.
    pub kind: &'static str,
    /// None waits forever.
    pub timeout: Option<std::time::Duration>,
    /// The arguments to re-run the command with when a key is ready, when
    /// they differ from the original (XREAD's `$` resolved to an ID).
    pub rerun: Option<OwnedArgs>,
    /// The error the waiter gets when a key it waits on is deleted or
    /// stops holding `kind` (XREADGROUP); None leaves it waiting.
    pub on_gone: Option<&'static str>,
}

/// The reply of HTTL/HPTTL/HEXPIRETIME/HPEXPIRETIME and of their
/// sorted-set twins (ZTTL …): one integer per field or member from argument
/// `first` on, `deadline_of` giving its deadline (None: no such subkey;
/// `no_ttl`, the types' marker: none). -2 when the subkey does not exist
/// (or its deadline has come), -1 when it has no TTL, else the time left
/// (`relative`) or the deadline, in seconds rounded up or in milliseconds.
pub struct SubkeyTtl {
    pub now: u64,
    pub no_ttl: u64,
    pub seconds: bool,
    pub relative: bool,
}

impl SubkeyTtl {
    pub fn reply(
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
pub fn absolute_expire_argv(
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

/// Parses an integer argument with Redis's error text.
pub fn int_arg(arg: &[u8]) -> Result<i64, Error> {
    parse_i64(arg).ok_or(Error::NotInteger)
}

/// Name → command, built once from [`TABLE`]: the commands sorted by
/// (name length, first letter), with where each such bucket starts.
/// Every request looks its name up here, so the lookup hashes nothing and
/// allocates nothing: it picks the bucket from two bytes it already has and
/// compares the name's first eight bytes, lowercased as one word, with
/// those of the one to five commands in it (and the rest of a longer name
/// case-insensitively). (A SipHash map was ~3% of the server's CPU on pipelined ZADD;
/// a foldhash one still ~2% with its lowercased copy of the name.)
struct Index {
    commands: Vec<&'static Command>,
    /// Each command's [`name_word`], by the same index: a bucket is
    /// scanned comparing one word per command rather than its name byte by
    /// byte (that comparison was 5% of a pipelined ZCARD's instructions).
    words: Vec<u64>,
    /// `starts[bucket(len, first)]..starts[bucket + 1]` in `commands`.
    starts: Vec<u16>,
}

/// A name's first eight bytes, lowercased, zero-padded, as one word. Two
/// names of the same length of at most eight bytes are equal ignoring
/// ASCII case exactly when their words are.
fn name_word(name: &[u8]) -> u64 {
    // Gathered from loads of fixed sizes (copying a slice of any other
    // length calls `memcpy`): for 4 to 7 bytes two overlapping 4-byte
    // loads, for 1 to 3 the first, middle and last byte. Overlapping bytes
    // are the same bytes, so OR-ing them is harmless.
    let n = name.len();
    let word = if let Some(eight) = name.first_chunk::<8>() {
        u64::from_le_bytes(*eight)
    } else if let (Some(lo), Some(hi)) = (name.first_chunk::<4>(), name.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*lo)) | (u64::from(u32::from_le_bytes(*hi)) << (8 * (n - 4)))
    } else {
        let byte = |i: usize| name.get(i).map_or(0, |&b| u64::from(b) << (8 * i));
        byte(0) | byte(n / 2) | byte(n.saturating_sub(1))
    };
    lowercase_word(word)
}

/// ASCII-lowercases the eight bytes of `w` at once: a byte in `A..=Z`
/// gains 0x20. Adding 0x3f (or 0x25) to a byte's low seven bits sets its
/// top bit exactly when the byte is at least `A` (or above `Z`), and never
/// carries into the next byte; bytes with the top bit set are not ASCII.
fn lowercase_word(w: u64) -> u64 {
    const EACH: u64 = 0x0101_0101_0101_0101;
    let low7 = w & (0x7f * EACH);
    let at_least_a = low7 + 0x3f * EACH;
    let above_z = low7 + 0x25 * EACH;
    let upper = at_least_a & !above_z & !w & (0x80 * EACH);
    w | (upper >> 2)
}

/// Longest command name looked up (Redis's are at most 20 bytes; renamed
/// ones at most 32).
const MAX_NAME: usize = 32;

impl Index {
    /// The bucket of a name: its length and its first byte folded to 32
    /// values (ASCII letters of either case share one; what else collides
    /// is told apart by the comparison).
    fn bucket(name: &[u8]) -> Option<usize> {
        let first = *name.first()?;
        (name.len() <= MAX_NAME).then(|| name.len() * 32 + (first & 0x1f) as usize)
    }

    fn build() -> Index {
        let mut commands: Vec<&'static Command> =
            TABLE.iter().flat_map(|family| family.iter()).collect();
        let key = |c: &Command| Self::bucket(c.name.as_bytes()).expect("command names fit");
        commands.sort_by_key(|c| key(c));
        let buckets = (MAX_NAME + 1) * 32;
        let mut starts = vec![0u16; buckets + 1];
        for c in &commands {
            starts[key(c) + 1] += 1;
        }
        for b in 0..buckets {
            starts[b + 1] += starts[b];
        }
        let words = commands
            .iter()
            .map(|c| name_word(c.name.as_bytes()))
            .collect();
        Index {
            commands,
            words,
            starts,
        }
    }

    fn get(&self, name: &[u8]) -> Option<&'static Command> {
        let b = Self::bucket(name)?;
        let (from, to) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        // A bucket's names all have `name`'s length: for names of up to
        // eight bytes the word says it all.
        let word = name_word(name);
        let long = name.len() > 8;
        let (words, commands) = (&self.words[from..to], &self.commands[from..to]);
        words
            .iter()
            .zip(commands)
            .find(|&(&w, c)| w == word && (!long || c.name.as_bytes().eq_ignore_ascii_case(name)))
            .map(|(_, &c)| c)
    }
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(Index::build)
}

/// Looks a command up by (any-case) name without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    if let Some(renamed) = RENAMES.get() {
        let mut buf = [0u8; MAX_NAME];
        let lower = buf.get_mut(..name.len())?;
        for (d, s) in lower.iter_mut().zip(name) {
            *d = s.to_ascii_lowercase();
        }
        if let Some(cmd) = renamed.added.get(&*lower) {
            return Some(cmd);
        }
        if renamed.hidden.iter().any(|h| h.as_slice() == &*lower) {
            return None;
        }
    }
    index().get(name)
}

/// The config file's `rename-command`s: new names, and the old names no
/// longer callable. Set once at startup, before any client connects.
struct Renames {
    added: std::collections::HashMap<Vec<u8>, &'static Command>,
    hidden: Vec<Vec<u8>>,
}

static RENAMES: OnceLock<Renames> = OnceLock::new();

/// Applies `rename-command old new` pairs (lower-case; `new` empty removes
/// the command), as Redis edits its command table while loading the config.
pub fn rename_commands(pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut renames = Renames {
        added: Default::default(),
        hidden: Vec::new(),
    };
    for (from, to) in pairs {
        let cmd = renames
            .added
            .remove(from)
            .or_else(|| index().get(from))
            .ok_or("No such command in rename-command")?;
        renames.hidden.push(from.clone());
        if !to.is_empty() {
            if to.len() > 32 {
                return Err("rename-command: the new name is longer than 32 bytes".into());
            }
            renames.hidden.retain(|h| h != to);
            renames.added.insert(to.clone(), cmd);
        }
    }
    RENAMES
        .set(renames)
        .map_err(|_| "rename-command applied twice".to_string())
}

pub fn lookup_sub(parent: &'static Command, name: &[u8]) -> Option<&'static Command> {
    parent
        .subcommands
        .iter()
        .find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

pub fn all_commands() -> impl Iterator<Item = &'static Command> {
    TABLE.iter().flat_map(|family| family.iter())
}

/// Index of a command in the table, for compact per-client bookkeeping.
pub fn command_id(cmd: &'static Command) -> u32 {
    all_commands()
        .position(|c| std::ptr::eq(c, cmd))
        .map_or(u32::MAX, |i| i as u32)
}

pub fn command_by_id(id: u32) -> Option<&'static Command> {
    all_commands().nth(id as usize)
}

/// Resolves `args` to the command (or subcommand) to run, writing the
/// unknown-command or arity error if there is none.
pub fn resolve(args: &Args<'_>) -> Result<&'static Command, Error> {
    let name = args.get(0);
    let Some(cmd) = lookup(name) else {
        return Err(unknown_command(args));
    };
    if !cmd.arity_ok(args.len()) {
        return Err(arity_error(cmd, None));
    }
    if cmd.subcommands.is_empty() || args.len() < 2 {
        return Ok(cmd);
    }
    let Some(sub) = lookup_sub(cmd, args.get(1)) else {
        return Err(Error::Owned(format!(
            "ERR unknown subcommand '{}'. Try {} HELP.",
            String::from_utf8_lossy(&args.get(1)[..args.get(1).len().min(128)]),
            cmd.name.to_ascii_uppercase()
        )));
    };
    if !sub.arity_ok(args.len()) {
        return Err(arity_error(sub, Some(cmd)));
    }
    Ok(sub)
}

fn arity_error(cmd: &Command, parent: Option<&Command>) -> Error {
    match parent {
        Some(p) => Error::Owned(format!(
            "ERR wrong number of arguments for '{}|{}' command",
            p.name, cmd.name
        )),
        None => Error::Owned(format!(
            "ERR wrong number of arguments for '{}' command",
            cmd.name
        )),
    }
}

/// Redis's `addReplySubcommandSyntaxError`: a subcommand given too many
/// arguments, quoted as the client typed it (`'RESTORE'`, `'restore'`).
pub fn subcommand_syntax(args: &Args<'_>) -> Error {
    let sub = args.get(1);
    Error::Owned(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)]),
        String::from_utf8_lossy(args.get(0)).to_ascii_uppercase()
    ))
}

/// Redis's unknown-command text, quoting at most the first arguments.
pub fn unknown_command(args: &Args<'_>) -> Error {
    // Mirrors Redis's `%.*s` formatting: each argument is clipped to what is
    // left of a 128-byte budget, and C strings end at the first NUL.
    let cstr = |a: &'_ [u8]| -> Vec<u8> { a.split(|&b| b == 0).next().unwrap_or(&[]).to_vec() };
    let mut quoted: Vec<u8> = Vec::new();
    for a in args.iter().skip(1) {
        if quoted.len() >= 128 {
            break;
        }
        let mut a = cstr(a);
        a.truncate(128 - quoted.len());
        quoted.push(b'\'');
        quoted.extend(a);
        quoted.extend_from_slice(b"' ");
    }
    let mut name = cstr(args.get(0));
    name.truncate(128);
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend(name);
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend(quoted);
    Error::Raw(msg)
}

/// `parent|sub` for subcommands, the name otherwise (as Redis prints them).
pub fn full_name(args: &Args<'_>, cmd: &Command) -> String {
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
    fn lookup_is_case_insensitive() {
        assert_eq!(lookup(b"GeT").map(|c| c.name), Some("get"));
        assert!(lookup(b"nosuchcommand").is_none());
        assert!(lookup(&[b'a'; 100]).is_none());
        assert!(lookup(b"").is_none());
        // Names that share a bucket (length and first letter) with others,
        // and bytes that fold onto a letter's bucket.
        assert_eq!(
            lookup(b"ZRANGEBYSCORE").map(|c| c.name),
            Some("zrangebyscore")
        );
        assert!(lookup(b"\x1aadd").is_none());
        assert!(lookup(b"z@dd").is_none());
        // Past the first eight bytes (one word) the rest of the name counts.
        assert!(lookup(b"ZRANGEBYSCORX").is_none());
        assert_eq!(lookup(b"zCaRd").map(|c| c.name), Some("zcard"));
        assert!(lookup(b"zcar\0").is_none());
    }

    #[test]
    fn a_name_word_is_its_first_eight_bytes_lowercased() {
        for name in [
            &b""[..],
            b"a",
            b"Ab",
            b"aBc",
            b"GET",
            b"zcard",
            b"ZADDxy",
            b"ZCOUNTx",
        ] {
            let mut want = [0u8; 8];
            want[..name.len()].copy_from_slice(name);
            want.make_ascii_lowercase();
            assert_eq!(name_word(name), u64::from_le_bytes(want), "{name:?}");
        }
        assert_eq!(
            name_word(b"ZRANGEBYSCORE"),
            u64::from_le_bytes(*b"zrangeby")
        );
        // Every byte value, in every position.
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = *b"GeT zCaR";
                bytes[at] = b;
                let mut want = bytes;
                want.make_ascii_lowercase();
                let got = lowercase_word(u64::from_le_bytes(bytes));
                assert_eq!(got, u64::from_le_bytes(want), "{b:#x} at {at}");
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
    static UNKNOWN: Command = Command::new("unknown", 1, 0, Keys::None, |_| Ok(Outcome::Done));

    #[test]
    fn numkeys_key_positions() {
        let owned = OwnedArgs::from_slices(&[
            b"zunionstore",
            b"d",
            b"2",
            b"a",
            b"b",
            b"WEIGHTS",
            b"1",
            b"2",
        ]);
        let cmd = Command::new(
            "x",
            -4,
            0,
            Keys::NumKeys {
                count_at: 2,
                dest: Some(1),
            },
            |_| Ok(Done),
        );
        let mut keys = Vec::new();
        cmd.key_indices(&owned.args(), |i| keys.push(i));
        assert_eq!(keys, vec![1, 3, 4]);
    }
}
