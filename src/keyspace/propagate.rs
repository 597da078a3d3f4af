//! What a change of the dataset amounts to as commands: the stream the
//! AOF appends (and replication would send), Redis's `alsoPropagate` /
//! `propagatePendingCommands`.
//!
//! A [`Keyspace`](super::Keyspace) collects the commands of one execution
//! unit (a command, an EXEC, a script, one background expiry) in
//! [`Pending`]: key expiry and eviction add their `DEL`/`UNLINK` as they
//! happen, and the execution layer's after-command step adds each write
//! command that changed something — verbatim, or as the handler rewrote it
//! (`SET … EX` → `SET … PXAT`, `SPOP` → `SREM`, …) so that replaying the
//! stream reproduces the dataset whatever the clock or the random numbers
//! say then. When the outermost call ends, the collected commands go to
//! the sinks as one unit, wrapped in `MULTI`/`EXEC` when there are several.
//! Nothing is collected while no sink listens (one relaxed load per write).

use crate::protocol::Args;

/// One command to propagate, in the database it ran in.
pub(crate) struct Op {
    pub(crate) db: usize,
    pub(crate) argv: Vec<Vec<u8>>,
    /// Where it goes (Redis's `PROPAGATE_AOF` / `PROPAGATE_REPL`).
    pub(crate) target: Target,
}

/// The sinks a command goes to: both, or one only (PUBLISH goes to
/// replicas only, so that a replica's subscribers hear it too; a script's
/// `redis.set_repl` may pick either or none for the commands it calls).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Target {
    #[default]
    All,
    Aof,
    Replicas,
    Nowhere,
}

impl Target {
    pub(crate) fn aof(self) -> bool {
        matches!(self, Target::All | Target::Aof)
    }

    pub(crate) fn replicas(self) -> bool {
        matches!(self, Target::All | Target::Replicas)
    }

    /// The sinks both `self` and `other` allow.
    pub(crate) fn and(self, other: Target) -> Target {
        match (
            self.aof() && other.aof(),
            self.replicas() && other.replicas(),
        ) {
            (true, true) => Target::All,
            (true, false) => Target::Aof,
            (false, true) => Target::Replicas,
            (false, false) => Target::Nowhere,
        }
    }

    /// Redis's `PROPAGATE_AOF` (1) / `PROPAGATE_REPL` (2) bits, as
    /// `redis.set_repl` takes them.
    pub(crate) fn from_bits(bits: i64) -> Target {
        match bits & 3 {
            3 => Target::All,
            1 => Target::Aof,
            2 => Target::Replicas,
            _ => Target::Nowhere,
        }
    }
}

/// The commands collected for the running execution unit.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) ops: Vec<Op>,
    /// Calls running through `execution::call` (nested: EXEC, scripts).
    pub(crate) depth: u32,
    /// Changes so far ([`Keyspace::modified`](super::Keyspace::modified)):
    /// a call that counted none propagates nothing (Redis's `dirty` test).
    pub(crate) dirty: u64,
    /// The running call's own propagation state.
    pub(crate) call: CallProp,
    /// Where the commands a running script calls go (`redis.set_repl`).
    pub(crate) script_target: Target,
}

/// How the running call propagates itself (Redis's client flags
/// `CLIENT_PREVENT_PROP` / `CLIENT_FORCE_*` and its rewritten `argv`).
#[derive(Default)]
pub(crate) struct CallProp {
    /// The command as it must be logged, when not verbatim.
    pub(crate) rewrite: Option<Vec<Vec<u8>>>,
    /// Log nothing for the command itself (what it did went out as
    /// separate commands, or is logged by the commands it ran).
    pub(crate) prevent: bool,
    /// Log it even if it changed nothing (FLUSHALL on an empty server).
    pub(crate) force: bool,
    /// Where it goes (PUBLISH: replicas only).
    pub(crate) target: Target,
}

impl Pending {
    pub(crate) fn push(&mut self, db: usize, argv: Vec<Vec<u8>>) {
        self.push_to(db, argv, Target::All);
    }

    /// A command for some sinks only (see [`Target`]).
    pub(crate) fn push_to(&mut self, db: usize, argv: Vec<Vec<u8>>, target: Target) {
        if target != Target::Nowhere {
            self.ops.push(Op { db, argv, target });
        }
    }
}

/// Builds an argument vector from byte strings of any kind:
/// `argv![b"SET", key, value]`.
#[macro_export]
macro_rules! argv {
    ($($a:expr),* $(,)?) => {
        vec![$(<[u8]>::to_vec(AsRef::<[u8]>::as_ref(&$a))),*]
    };
}

/// `DEL`, or `UNLINK` when the deletion is lazy (a `lazyfree-lazy-*`
/// setting): how Redis logs a key it deleted.
pub(crate) fn del_name(lazy: bool) -> &'static [u8] {
    if lazy { b"UNLINK" } else { b"DEL" }
}

/// A consumer of the propagated stream (the AOF; replication later).
pub(crate) trait Sink: Send + Sync {
    /// Whether anything is to be collected at all.
    fn listening(&self) -> bool;
    /// One execution unit's commands, in order; `transaction`: wrap them
    /// in MULTI/EXEC.
    fn feed(&self, ops: &[Op], transaction: bool);
    /// A unit of one command, as the client sent it: the common write,
    /// handed over borrowed, so no [`Op`] is built of it. A sink that
    /// encodes it straight from `args` overrides this.
    fn feed_args(&self, db: usize, args: &Args<'_>) {
        let argv = args.iter().map(<[u8]>::to_vec).collect();
        self.feed(
            &[Op {
                db,
                argv,
                target: Target::All,
            }],
            false,
        );
    }
}
