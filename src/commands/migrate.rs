//! MIGRATE: moves keys to another Redis (or zwindow) instance, as Redis
//! 7.0's `migrateCommand`.
//!
//! ```text
//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//!         [AUTH password | AUTH2 username password] [KEYS key [key ...]]
//! ```
//!
//! It runs in two steps around the network I/O ([`crate::migrate`]), so no
//! shard is held while the target is slow or silent:
//! - [`migrate`], with the keys' shards locked: the arguments, in Redis's
//!   order of checks, then each live key's DUMP payload and TTL;
//! - the transfer, by the execution layer on a blocking thread (only the
//!   calling client waits), or in place inside EXEC and scripts and in
//!   cluster mode, where a write in between would leave its key on both
//!   nodes;
//! - [`finish`], with the shards locked again: the keys the target
//!   acknowledged are removed (unless COPY) and the reply is written. A key
//!   written meanwhile by another client no longer holds what was sent and
//!   is kept — the one case where zwindow's answer can differ from a
//!   single-threaded Redis, which lets nothing run in between (outside
//!   cluster mode only).

use std::time::Duration;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, int_arg};
use crate::keyspace::{Keyspace, notify};
use crate::migrate::{Item, Transfer};
use crate::protocol::Reply;
use crate::util::eq_ic;

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("migrate", -6, WRITE, Keys::Migrate, &(migrate as Handler))
        .doc("generic", "2.6.0", "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.", "Atomically transfer a key from a Redis instance to another one.")
        .syntax("host port key | \"\" destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]"),
];

/// MIGRATE's table entry (its statistics, and the key plan of its last
/// step).
pub(crate) fn command() -> &'static Command {
    &COMMANDS[0]
}

/// The first step: checks, then the payloads; the transfer and the
/// reply follow (see the module's doc).
fn migrate(ctx: &mut Ctx) -> CmdResult {
    let (mut copy, mut replace) = (false, false);
    let mut auth: Option<(Option<Vec<u8>>, Vec<u8>)> = None;
    let (mut first_key, mut num_keys) = (3, 1);
    let mut j = 6;
    while j < ctx.argc() {
        let more = ctx.argc() - 1 - j;
        let a = ctx.arg(j);
        if eq_ic(a, "copy") {
            copy = true;
        } else if eq_ic(a, "replace") {
            replace = true;
        } else if eq_ic(a, "auth") {
            if more == 0 {
                return Err(Error::Syntax);
            }
            j += 1;
            auth = Some((None, ctx.arg(j).to_vec()));
            ctx.redact(j);
        } else if eq_ic(a, "auth2") {
            if more < 2 {
                return Err(Error::Syntax);
            }
            auth = Some((Some(ctx.arg(j + 1).to_vec()), ctx.arg(j + 2).to_vec()));
            ctx.redact(j + 1);
            ctx.redact(j + 2);
            j += 2;
        } else if eq_ic(a, "keys") {
            if !ctx.arg(3).is_empty() {
                return Err(Error::Static(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            first_key = j + 1;
            num_keys = ctx.argc() - j - 1;
            break;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let timeout = int_arg(ctx.arg(5))?;
    let db = int_arg(ctx.arg(4))?;
    let timeout = if timeout <= 0 { 1000 } else { timeout as u64 };
    let now = ctx.ks.now_ms;
    let mut items = Vec::new();
    for i in first_key..first_key + num_keys {
        let key = ctx.args.get(i);
        if let Some(e) = ctx.ks.get_read(key) {
            let ttl = if e.expire_at == 0 {
                0
            } else {
                e.expire_at.saturating_sub(now).max(1)
            };
            items.push(Item {
                key: key.to_vec(),
                ttl,
                payload: crate::rdb::dump(&e.value, ctx.shared.config.rdb_version()),
            });
        }
    }
    if items.is_empty() {
        ctx.out.simple("NOKEY");
        return Ok(Done);
    }
    let transfer = Box::new(Transfer {
        host: ctx.arg(1).to_vec(),
        port: port(ctx.arg(2)),
        db,
        timeout: Duration::from_millis(timeout),
        replace,
        copy,
        auth,
        items,
        source_db: ctx.ks.db,
        asking: ctx.shared.cluster.is_some(),
    });
    // In cluster mode the keys stay locked through the transfer, as in
    // Redis, whose whole server waits: a write landing in between would
    // leave its key on both nodes (the changed one kept here, the old one
    // restored there), and `--cluster reshard` stops on the target's
    // BUSYKEY when it moves the key again.
    if ctx.client.can_block() && ctx.shared.cluster.is_none() {
        return Ok(Outcome::Migrate(transfer));
    }
    // Inside EXEC or a script nothing may wait (and in cluster mode nothing
    // may come between): the transfer runs here, holding the shards, as
    // Redis runs it holding its whole server.
    let outcome = crate::migrate::run(&ctx.shared.migrate, &transfer);
    // Logged as the DEL `finish` adds, never as itself.
    ctx.prevent_propagation();
    finish(ctx.ks, &transfer, &outcome, ctx.out)
}

/// Redis's `atoi` of the port: leading digits, 0 (which no connection
/// reaches) for anything else or a port out of range.
fn port(arg: &[u8]) -> u16 {
    let digits = arg.iter().take_while(|b| b.is_ascii_digit()).take(6);
    let n = digits.fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
    u16::try_from(n).unwrap_or(0)
}

/// The last step, with the keys' shards locked: removes the keys the
/// target acknowledged (unless COPY) that still hold what was sent —
/// logged as one `DEL` of them, as Redis rewrites MIGRATE — then writes
/// the reply, or returns the error.
pub(crate) fn finish(
    ks: &mut Keyspace<'_>,
    t: &Transfer,
    outcome: &crate::migrate::Outcome,
    out: &mut Reply,
) -> CmdResult {
    if !t.copy {
        let db = std::mem::replace(&mut ks.db, t.source_db);
        let mut deleted: Vec<&[u8]> = Vec::new();
        for &i in &outcome.acked {
            let Some(item) = t.items.get(i) else {
                continue;
            };
            // Looked at, not read: no keyspace hit, no access time.
            let unchanged = ks.peek(&item.key).is_some_and(|e| {
                let version = crate::rdb::payload_version(&item.payload);
                crate::rdb::dump(&e.value, version) == item.payload
            });
            if unchanged && ks.remove(&item.key).is_some() {
                ks.signal(&item.key, notify::GENERIC, "del");
                deleted.push(&item.key);
            }
        }
        if !deleted.is_empty() {
            ks.also_propagate(|| {
                let mut argv = vec![b"DEL".to_vec()];
                argv.extend(deleted.iter().map(|k| k.to_vec()));
                argv
            });
        }
        ks.db = db;
    }
    match &outcome.error {
        Some(e) => Err(Error::Raw(e.clone())),
        None => {
            out.ok();
            Ok(Done)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::port;

    #[test]
    fn ports_parse_as_atoi() {
        assert_eq!(port(b"6379"), 6379);
        assert_eq!(port(b"6379x"), 6379);
        assert_eq!(port(b"x"), 0);
        assert_eq!(port(b"70000"), 0);
        assert_eq!(port(b"99999999999"), 0);
    }
}
