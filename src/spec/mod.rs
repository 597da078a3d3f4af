//! The command table's description of every command, below the code that
//! runs them: what a command is called, its arity, flags and key positions,
//! its documentation and subcommands ([`Command`]), Redis's own metadata
//! for it ([`metadata`]: ACL categories, key specs, COMMAND INFO's extras),
//! and finding a command by name ([`table`]: lookup, resolution with its
//! unknown-command and arity errors, `rename-command`).
//!
//! The entries themselves are declared in the command families' files
//! beside their handlers (`commands/keys.rs`, …), and `commands::TABLE`
//! strings the families together; the layers below the handlers (ACL
//! rules, the config file, AOF loading) read that table through here once
//! `commands::install` has registered it (see [`table::install`]). A
//! handler is stored opaquely ([`AnyHandler`]): its type names the
//! handlers' context, which lives above this leaf.

// Generated data, laid out by its generator (.ci/gen_command_meta.py).
#[rustfmt::skip]
pub(crate) mod meta;
pub(crate) mod meta_later;
pub(crate) mod metadata;
pub(crate) mod table;

pub(crate) use table::{
    Unresolved, all_commands, install, lookup, lookup_sub, rename_commands, resolve,
};

use crate::protocol::Args;
use crate::util::{eq_ic, parse_i64};

/// A command's handler as the table stores it: the commands layer's
/// `Handler` (a function of its `Ctx`), which this layer cannot name. The
/// commands layer registers a `&(handler as Handler)` per entry and
/// downcasts it back to run it; its unit test holds every entry to that.
type AnyHandler = &'static (dyn std::any::Any + Send + Sync);

/// Command flags, as `COMMAND INFO` reports them.
pub(crate) mod flags {
    pub(crate) const WRITE: u32 = 1 << 0;
    pub(crate) const READONLY: u32 = 1 << 1;
    pub(crate) const DENYOOM: u32 = 1 << 2;
    pub(crate) const ADMIN: u32 = 1 << 3;
    pub(crate) const PUBSUB: u32 = 1 << 4;
    pub(crate) const NOSCRIPT: u32 = 1 << 5;
    pub(crate) const BLOCKING: u32 = 1 << 6;
    pub(crate) const LOADING: u32 = 1 << 7;
    pub(crate) const STALE: u32 = 1 << 8;
    pub(crate) const FAST: u32 = 1 << 9;
    pub(crate) const NO_AUTH: u32 = 1 << 10;
    pub(crate) const ALLOW_BUSY: u32 = 1 << 11;
    pub(crate) const NO_MULTI: u32 = 1 << 12;
    pub(crate) const SKIP_SLOWLOG: u32 = 1 << 13;
    pub(crate) const MAY_REPLICATE: u32 = 1 << 14;
    /// Runs immediately even inside MULTI (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET).
    pub(crate) const TX_CONTROL: u32 = 1 << 15;
    /// Allowed in RESP2 subscribed mode.
    pub(crate) const SUBSCRIBED_OK: u32 = 1 << 16;
    /// Reported only: zwindow has no MONITOR to hide the command from.
    pub(crate) const SKIP_MONITOR: u32 = 1 << 17;
    /// A command that may be given no keys at all (scripts).
    pub(crate) const NO_MANDATORY_KEYS: u32 = 1 << 18;
    /// Never set in the table: `COMMAND INFO` derives it from the key specs
    /// (keys the first/last/step range does not cover).
    pub(crate) const MOVABLEKEYS: u32 = 1 << 19;
    /// Reported only: Redis refuses these while a replica loads its data
    /// asynchronously, which zwindow never does.
    pub(crate) const NO_ASYNC_LOADING: u32 = 1 << 20;
    /// RESTORE-ASKING: a cluster's ASKING state would let it run on an
    /// importing slot (reported only: zwindow has no cluster mode).
    pub(crate) const ASKING: u32 = 1 << 21;
    /// Never reported (Redis hides it): refused by the execution layer
    /// unless its `enable-…-command` setting allows the client (MODULE's
    /// LOAD, LOADEX and UNLOAD).
    pub(crate) const PROTECTED: u32 = 1 << 22;

    /// The flags `COMMAND INFO` prints, in redis-server's order; Redis hides
    /// `may_replicate`.
    pub(crate) const NAMES: &[(u32, &str)] = &[
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
// `NumKeys` is named for Redis's `numkeys` argument, not after the enum.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keys {
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
    /// `numkeys` at `count_at`, then that many key/value pairs (MSETEX):
    /// the keys are every other argument after the count.
    NumPairs {
        count_at: usize,
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
    /// `STREAMS` option (see [`streams_keys`]).
    Streams,
    /// MIGRATE: the key at 3 unless empty, and every argument after the
    /// first `KEYS` word from 6 on. A password spelled `keys` makes that a
    /// few arguments more (locked, never missed); COMMAND GETKEYS reports
    /// Redis's exact choice from `meta.rs`.
    Migrate,
}

impl Keys {
    pub(crate) const ONE: Keys = Keys::Range {
        first: 1,
        last: 1,
        step: 1,
    };
    pub(crate) const ALL_ARGS: Keys = Keys::Range {
        first: 1,
        last: -1,
        step: 1,
    };
    pub(crate) const TWO: Keys = Keys::Range {
        first: 1,
        last: 2,
        step: 1,
    };
}

/// One command (or subcommand) of the table.
pub(crate) struct Command {
    /// Lowercase name; subcommands carry the bare subcommand name.
    pub(crate) name: &'static str,
    pub(crate) arity: i32,
    pub(crate) flags: u32,
    pub(crate) keys: Keys,
    /// What runs it (see [`AnyHandler`]).
    pub(crate) handler: AnyHandler,
    pub(crate) group: &'static str,
    pub(crate) since: &'static str,
    pub(crate) complexity: &'static str,
    pub(crate) summary: &'static str,
    /// The argument grammar after the name, Redis-doc style
    /// (`key [NX | XX] seconds`); `COMMAND DOCS` derives its arguments from it.
    pub(crate) syntax: &'static str,
    pub(crate) subcommands: &'static [Command],
}

impl Command {
    pub(crate) const fn new(
        name: &'static str,
        arity: i32,
        flags: u32,
        keys: Keys,
        handler: AnyHandler,
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

    pub(crate) const fn doc(
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

    pub(crate) const fn syntax(mut self, syntax: &'static str) -> Command {
        self.syntax = syntax;
        self
    }

    pub(crate) const fn subcommands(mut self, subs: &'static [Command]) -> Command {
        self.subcommands = subs;
        self
    }

    pub(crate) fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }

    /// Whether `argc` arguments (the name included) fit the arity:
    /// exactly `arity`, or at least `-arity` when it is negative.
    pub(crate) fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        if a >= 0 {
            argc == a as usize
        } else {
            argc >= (-a) as usize
        }
    }

    /// Key argument indices for this invocation, in order.
    pub(crate) fn key_indices(&self, args: &Args<'_>, mut f: impl FnMut(usize)) {
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
                if let Some((first, n)) = streams_keys(args) {
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
            Keys::NumPairs { count_at } => {
                let n = parse_i64(args.get(count_at)).unwrap_or(0).max(0) as usize;
                for i in (count_at + 1..argc).step_by(2).take(n) {
                    f(i);
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

/// Where the keys of XREAD/XREADGROUP start and how many there are, as
/// Redis's `xreadGetKeys` finds them (for lock planning).
fn streams_keys(args: &Args<'_>) -> Option<(usize, usize)> {
    let argc = args.len();
    let mut i = 1;
    while i < argc {
        let a = args.get(i);
        if eq_ic(a, "BLOCK") || eq_ic(a, "COUNT") {
            i += 2;
        } else if eq_ic(a, "GROUP") {
            i += 3;
        } else if eq_ic(a, "NOACK") {
            i += 1;
        } else if eq_ic(a, "STREAMS") {
            let num = argc - i - 1;
            if num == 0 || !num.is_multiple_of(2) {
                return None;
            }
            return Some((i + 1, num / 2));
        } else {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::OwnedArgs;

    #[test]
    fn xread_keys_follow_streams() {
        let a =
            OwnedArgs::from_slices(&[b"xread", b"COUNT", b"2", b"STREAMS", b"a", b"b", b"0", b"0"]);
        assert_eq!(streams_keys(&a.args()), Some((4, 2)));
        let a = OwnedArgs::from_slices(&[
            b"xreadgroup",
            b"GROUP",
            b"streams",
            b"c",
            b"STREAMS",
            b"k",
            b">",
        ]);
        assert_eq!(streams_keys(&a.args()), Some((5, 1)));
        let a = OwnedArgs::from_slices(&[b"xread", b"STREAMS", b"a", b"b", b"0"]);
        assert_eq!(streams_keys(&a.args()), None);
    }

    #[test]
    fn numpairs_key_positions() {
        let cmd = Command::new("x", -4, 0, Keys::NumPairs { count_at: 1 }, &());
        let keys = |args: &[&[u8]]| {
            let owned = OwnedArgs::from_slices(args);
            let mut keys = Vec::new();
            cmd.key_indices(&owned.args(), |i| keys.push(i));
            keys
        };
        assert_eq!(
            keys(&[b"msetex", b"2", b"a", b"1", b"b", b"2", b"EX", b"10"]),
            vec![2, 4]
        );
        // A count past the arguments stops at their end; a bad one is none.
        assert_eq!(keys(&[b"msetex", b"9", b"a", b"1"]), vec![2]);
        assert_eq!(keys(&[b"msetex", b"x", b"a", b"1"]), Vec::<usize>::new());
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
            // Never run: any value stands for the handler.
            &(),
        );
        let mut keys = Vec::new();
        cmd.key_indices(&owned.args(), |i| keys.push(i));
        assert_eq!(keys, vec![1, 3, 4]);
    }
}
