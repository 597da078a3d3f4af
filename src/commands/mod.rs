//! The command table and dispatch.
//!
//! Every command is one [`Command`] entry in its family's file (`keys.rs`,
//! `strings.rs`, `zsets.rs`, …); [`TABLE`] strings the families together and
//! is the only list of commands: dispatch, arity errors, key positions (and so
//! shard locking), `COMMAND INFO/DOCS/COUNT/LIST` and unknown-command errors
//! all read it.
//!
//! Dispatch runs one request: look the name up, check arity, auth, MULTI
//! queueing and subscribed mode, lock the shards of the keys the table says
//! the command touches, and call the handler with a [`Ctx`]. Handlers write
//! their reply through `ctx.out` or return an [`Error`], which becomes the
//! error reply; a handler that returns an error has written nothing.

pub mod connection;
pub mod docs;
pub mod functions;
pub mod hashes;
pub mod info;
pub mod keys;
pub mod lists;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod strings;
pub mod transactions;
pub mod windows;
pub mod zsets;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use crate::connection::Client;
use crate::protocol::{Reply, Request};
use crate::server::Shared;
use crate::store::{Keyspace, ShardSet};
use crate::util::parse_i64;

/// Every family's commands; the single source of truth.
pub static TABLE: &[&[Command]] = &[
    connection::COMMANDS,
    server::COMMANDS,
    keys::COMMANDS,
    scripting::COMMANDS,
    functions::COMMANDS,
    strings::COMMANDS,
    hashes::COMMANDS,
    sets::COMMANDS,
    transactions::COMMANDS,
    windows::COMMANDS,
    lists::COMMANDS,
    zsets::COMMANDS,
    pubsub::COMMANDS,
];

pub type Handler = fn(&mut Ctx<'_, '_>) -> Result<(), Error>;

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
        (SKIP_SLOWLOG, "skip_slowlog"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (MAY_REPLICATE, "may_replicate"),
        (NO_MULTI, "no_multi"),
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
        type Slots = (
            HashMap<usize, usize, foldhash::fast::FixedState>,
            Box<[CallStats]>,
        );
        static SLOTS: OnceLock<Slots> = OnceLock::new();
        static NONE: CallStats = CallStats::new();
        let (index, stats) = SLOTS.get_or_init(|| {
            let all: Vec<&'static Command> = all_commands()
                .flat_map(|c| std::iter::once(c).chain(c.subcommands))
                .collect();
            let index = all
                .iter()
                .enumerate()
                .map(|(i, c)| (*c as *const Command as usize, i))
                .collect();
            (index, all.iter().map(|_| CallStats::new()).collect())
        });
        index
            .get(&(cmd as *const Command as usize))
            .map_or(&NONE, |&i| &stats[i])
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

/// A request's arguments; `args[0]` is the command name.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    req: Request<'a>,
}

impl<'a> Args<'a> {
    pub fn new(req: Request<'a>) -> Args<'a> {
        Args { req }
    }

    pub fn len(&self) -> usize {
        self.req.len()
    }

    pub fn is_empty(&self) -> bool {
        self.req.is_empty()
    }

    /// The `i`th argument; empty if out of range (arity checks make that a
    /// bug, but never a crash).
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.req.get(i).unwrap_or(&[])
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn to_owned(&self) -> OwnedArgs {
        let mut data = Vec::new();
        let mut spans = Vec::with_capacity(self.len());
        for a in self.iter() {
            spans.push((data.len(), data.len() + a.len()));
            data.extend_from_slice(a);
        }
        OwnedArgs { data, spans }
    }
}

impl std::ops::Index<usize> for Args<'_> {
    type Output = [u8];
    fn index(&self, i: usize) -> &[u8] {
        self.get(i)
    }
}

/// Arguments kept beyond the read buffer (MULTI queue, blocked commands).
#[derive(Debug, Clone, Default)]
pub struct OwnedArgs {
    data: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl OwnedArgs {
    pub fn from_slices(parts: &[&[u8]]) -> OwnedArgs {
        let mut data = Vec::new();
        let mut spans = Vec::new();
        for a in parts {
            spans.push((data.len(), data.len() + a.len()));
            data.extend_from_slice(a);
        }
        OwnedArgs { data, spans }
    }

    pub fn args(&self) -> Args<'_> {
        Args::new(Request {
            data: &self.data,
            spans: &self.spans,
        })
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
}

impl Ctx<'_, '_> {
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
        }
    }
}

impl From<String> for Error {
    fn from(s: String) -> Error {
        Error::Owned(s)
    }
}

pub type CmdResult = Result<(), Error>;

/// Parses an integer argument with Redis's error text.
pub fn int_arg(arg: &[u8]) -> Result<i64, Error> {
    parse_i64(arg).ok_or(Error::NotInteger)
}

/// Name → command, built once from [`TABLE`]. Every request looks its name
/// up here, so the map hashes with foldhash rather than SipHash (which was
/// ~3% of the server's CPU on pipelined ZADD): the keys are our own command
/// names, so there is no flooding to resist.
type Index = HashMap<&'static [u8], &'static Command, foldhash::fast::FixedState>;

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        TABLE
            .iter()
            .flat_map(|family| family.iter())
            .map(|c| (c.name.as_bytes(), c))
            .collect()
    })
}

/// Looks a command up by (any-case) name without allocating.
pub fn lookup(name: &[u8]) -> Option<&'static Command> {
    let mut buf = [0u8; 32];
    let lower = buf.get_mut(..name.len())?;
    for (d, s) in lower.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    index().get(&*lower).copied()
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

/// The shards a command's keys live on.
pub fn shards_for(shared: &Shared, cmd: &Command, args: &Args<'_>) -> ShardSet {
    if matches!(cmd.keys, Keys::All | Keys::Script { .. }) {
        return shared.store.all_shards();
    }
    let mut set = ShardSet::default();
    cmd.key_indices(args, |i| {
        let key = args.get(i);
        set.insert(shared.store.shard_of(key));
        // A windowed key may hand members off to a list on another shard
        // when a lookup trims it: that shard must be held too.
        if let Some(dest) = shared.windows.destination_of(key) {
            set.insert(shared.store.shard_of(&dest));
        }
    });
    set
}

/// What became of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatched {
    /// Ran (or was rejected); the reply is in `out`.
    Done,
    /// Another client's script runs: nothing was done; await
    /// [`Busy::wait_end`](crate::scripting::Busy::wait_end) and dispatch again.
    WaitScript,
    /// A script (or an EXEC queuing one): nothing was done; dispatch it
    /// again on the script runner thread.
    ScriptRunner,
}

/// Runs one request from a client: checks, locking, the handler.
pub fn dispatch(
    shared: &Arc<Shared>,
    client: &mut Client,
    out: &mut Reply,
    args: Args<'_>,
) -> Dispatched {
    // Every rejection before the command runs also dooms an open
    // transaction (Redis's `rejectCommand` → `flagTransaction`); a rejected
    // EXEC discards it at once.
    let reject = |client: &mut Client, out: &mut Reply, msg: &[u8]| {
        shared.count_error(msg);
        // The command as named, even when its arity was wrong.
        if let Some(cmd) = lookup(args.get(0)) {
            let sub = (args.len() > 1)
                .then(|| lookup_sub(cmd, args.get(1)))
                .flatten();
            CallStats::of(sub.unwrap_or(cmd))
                .rejected
                .fetch_add(1, Relaxed);
        }
        if lookup(args.get(0)).is_some_and(|c| c.name == "exec") {
            transactions::abort_exec(shared, client, out, &String::from_utf8_lossy(msg));
            return Dispatched::Done;
        }
        if client.multi.is_some() {
            client.multi_error = true;
        }
        out.error_bytes(msg);
        Dispatched::Done
    };
    let cmd = match resolve(&args) {
        Ok(cmd) => cmd,
        Err(e) => return reject(client, out, e.bytes()),
    };
    client.note_command(cmd);
    if !client.authenticated && !cmd.has(flags::NO_AUTH) {
        return reject(client, out, b"NOAUTH Authentication required.");
    }
    if client.multi.is_some() && cmd.has(flags::NO_MULTI) {
        return reject(client, out, b"ERR Command not allowed inside a transaction");
    }
    if client.in_subscribed_resp2() && !cmd.has(flags::SUBSCRIBED_OK) {
        let msg = format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            full_name(&args, cmd)
        );
        return reject(client, out, msg.as_bytes());
    }
    let busy = &shared.scripting.busy;
    if busy.running_for_other(client.handle.id) {
        // Before busy-reply-threshold the client waits, as behind Redis's
        // single thread; after it, only ALLOW_BUSY commands run, and only
        // those that need no shard (the script holds them all).
        let past = busy.elapsed_ms() >= shared.config.busy_reply_threshold();
        if past && !cmd.has(flags::ALLOW_BUSY) {
            return reject(client, out, busy_text(busy).as_bytes());
        }
        if !past || !matches!(cmd.keys, Keys::None) || !client.watched.is_empty() {
            return Dispatched::WaitScript;
        }
    }
    // INFO's total_commands_processed counts, as Redis, what runs (or is
    // queued to run in EXEC), not what is rejected.
    client.commands += 1;
    if client.multi.is_some() && !cmd.has(flags::TX_CONTROL) {
        client.queue(args);
        out.simple("QUEUED");
        return Dispatched::Done;
    }
    if matches!(cmd.keys, Keys::All | Keys::Script { .. })
        && runs_script(client, cmd)
        && !crate::scripting::on_runner()
    {
        client.commands -= 1;
        return Dispatched::ScriptRunner;
    }
    let set = shards_for(shared, cmd, &args);
    let guards = if set.is_empty() {
        crate::store::Guards::None
    } else {
        match lock_or_busy(shared, client, cmd, set) {
            Ok(g) => g,
            Err(None) => {
                client.commands -= 1;
                return Dispatched::WaitScript;
            }
            Err(Some(e)) => {
                client.commands -= 1;
                return reject(client, out, e.as_bytes());
            }
        }
    };
    let mark = out.len();
    let mut ks = Keyspace::new(shared, guards, client.db, shared.clock.now_ms());
    call(shared, client, out, &mut ks, cmd, args);
    if std::mem::take(&mut client.retry_after_script) {
        // The handler found the engine held by another client's script.
        out.truncate(mark);
        client.commands -= 1;
        return Dispatched::WaitScript;
    }
    if let Some(block) = client.block.take() {
        // Queue the waiter while the keys' shards are still locked, so no
        // write can land between "nothing to pop" and "waiting".
        let (waiter, rx) = crate::blocking::Waiter::new(
            client.handle.clone(),
            client.db,
            block.keys,
            block.kind,
            args.to_owned(),
            out.resp3,
        );
        shared.blocking.register(&mut ks, &waiter);
        client.waiting = Some((waiter, rx, block.timeout));
    }
    let ready = std::mem::take(&mut ks.ready);
    drop(ks);
    if !ready.is_empty() {
        if busy.is_running() && !crate::scripting::on_runner() {
            // Serving locks the keys' shards, which a script that just
            // started holds: the runner serves them after it instead.
            let shared2 = shared.clone();
            shared
                .scripting
                .submit(Box::new(move || shared2.blocking.serve(&shared2, ready)));
        } else {
            shared.blocking.serve(shared, ready);
        }
    }
    Dispatched::Done
}

fn busy_text(busy: &crate::scripting::Busy) -> &'static str {
    if busy.is_function() {
        crate::scripting::BUSY_FUNCTION
    } else {
        crate::scripting::BUSY_EVAL
    }
}

/// Whether `cmd` runs a script: EVAL/FCALL and their variants, or an EXEC
/// whose queue holds one.
fn runs_script(client: &Client, cmd: &Command) -> bool {
    let is_script = |name: &str| {
        matches!(
            name,
            "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
        )
    };
    if is_script(cmd.name) {
        return true;
    }
    cmd.name == "exec"
        && client.multi.as_ref().is_some_and(|q| {
            q.iter()
                .any(|a| lookup(a.args().get(0)).is_some_and(|c| is_script(c.name)))
        })
}

/// Locks `set`. Never waits behind another client's script: `Err(None)`
/// asks the connection to wait for its end, `Err(Some(BUSY))` once it ran
/// past busy-reply-threshold. On the script runner (scripts are serialized
/// there), it simply locks.
fn lock_or_busy<'s>(
    shared: &'s Shared,
    client: &Client,
    cmd: &Command,
    set: ShardSet,
) -> Result<crate::store::Guards<'s>, Option<&'static str>> {
    const TRY: std::time::Duration = std::time::Duration::from_millis(10);
    if crate::scripting::on_runner() {
        return Ok(shared.store.lock(set));
    }
    loop {
        if let Some(g) = shared.store.try_lock_for(set, TRY) {
            return Ok(g);
        }
        let busy = &shared.scripting.busy;
        if busy.running_for_other(client.handle.id) {
            let past = busy.elapsed_ms() >= shared.config.busy_reply_threshold();
            return Err((past && !cmd.has(flags::ALLOW_BUSY)).then(|| busy_text(busy)));
        }
    }
}

/// Runs a resolved command on an already-locked keyspace (also EXEC's path).
pub fn call(
    shared: &Arc<Shared>,
    client: &mut Client,
    out: &mut Reply,
    ks: &mut Keyspace<'_>,
    cmd: &'static Command,
    args: Args<'_>,
) {
    ks.db = client.db;
    let mark = out.len();
    let mut ctx = Ctx {
        shared,
        client,
        out,
        args,
        ks,
        cmd,
    };
    let start = std::time::Instant::now();
    let result = (cmd.handler)(&mut ctx);
    let usec = start.elapsed().as_micros() as u64;
    let stats = CallStats::of(cmd);
    stats.calls.fetch_add(1, Relaxed);
    stats.usec.fetch_add(usec, Relaxed);
    // As Redis, a command that blocked is recorded once it is served.
    if ctx.client.block.is_none() && shared.config.latency_tracking() {
        stats.latency.record_usec(usec);
    }
    if let Err(e) = result {
        stats.failed.fetch_add(1, Relaxed);
        shared.count_error(e.bytes());
        out.truncate(mark);
        out.error_bytes(e.bytes());
    }
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
    }

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
            |_| Ok(()),
        );
        let mut keys = Vec::new();
        cmd.key_indices(&owned.args(), |i| keys.push(i));
        assert_eq!(keys, vec![1, 3, 4]);
    }
}
