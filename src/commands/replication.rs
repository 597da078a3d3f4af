//! The replication family — REPLICAOF, SLAVEOF, FAILOVER, SYNC, PSYNC and
//! REPLCONF.
//!
//! REPLICAOF changes the replication state (`crate::replication`); the
//! link to the primary is the network layer's (`network::link`). FAILOVER
//! parses its arguments and finds no replica, REPLCONF checks its options
//! as for a client that is not a replica.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::util::{eq_ic, parse_i64};

const G: &str = "server";

/// Why SYNC/PSYNC are refused.
const NO_SYNC: &str =
    "ERR zwindow does not replicate: SYNC and PSYNC are not served (no replicas can attach)";
/// Writes refused while `min-replicas-to-write` finds too few good
/// replicas (never fewer than zero here): by the execution layer for a
/// command, by EVAL and FCALL for a script that may write.
pub(crate) const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

#[rustfmt::skip]
pub(crate) static COMMANDS: &[Command] = &[
    Command::new("replicaof", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | STALE, Keys::None, &(replicaof as Handler))
        .doc(G, "5.0.0", "O(1)", "Make the server a replica of another instance, or promote it as master.")
        .syntax("host port"),
    Command::new("slaveof", 3, NO_ASYNC_LOADING | ADMIN | NOSCRIPT | STALE, Keys::None, &(replicaof as Handler))
        .doc(G, "1.0.0", "O(1)", "Make the server a replica of another instance, or promote it as master.")
        .syntax("host port"),
    Command::new("failover", -1, ADMIN | NOSCRIPT | STALE, Keys::None, &(failover as Handler))
        .doc(G, "6.2.0", "O(1)", "Start a coordinated failover between this server and one of its replicas.")
        .syntax("[TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]"),
    Command::new("sync", 1, NO_ASYNC_LOADING | ADMIN | NO_MULTI | NOSCRIPT, Keys::None, &(sync as Handler))
        .doc(G, "1.0.0", "", "Internal command used for replication"),
    Command::new("psync", -3, NO_ASYNC_LOADING | ADMIN | NO_MULTI | NOSCRIPT, Keys::None, &(sync as Handler))
        .doc(G, "2.8.0", "", "Internal command used for replication")
        .syntax("replicationid offset"),
    Command::new("replconf", -1, ADMIN | NOSCRIPT | LOADING | STALE | ALLOW_BUSY, Keys::None, &(replconf as Handler))
        .doc(G, "3.0.0", "O(1)", "An internal command for configuring the replication stream"),
];

/// REPLICAOF (SLAVEOF) host port | NO ONE, as Redis's `replicaofCommand`:
/// the replication state changes here and the network layer's link
/// supervisor (`network::link`), woken by it, connects to the new primary
/// or lets the old one go.
fn replicaof(ctx: &mut Ctx) -> CmdResult {
    let repl = &ctx.shared.replication;
    if eq_ic(ctx.arg(1), "no") && eq_ic(ctx.arg(2), "one") {
        if repl.promote() {
            ctx.shared.config.set_replicaof(None);
            let who = super::connection::client_info_line(ctx.shared, &ctx.client.handle);
            tracing::info!("MASTER MODE enabled (user request from '{who}')");
        }
        ctx.out.ok();
        return Ok(Done);
    }
    let port = match parse_i64(ctx.arg(2)) {
        Some(p) if (0..=65535).contains(&p) => p as u16,
        _ => return Err(Error::Static("ERR Invalid master port")),
    };
    let host = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let primary = crate::replication::Primary {
        host: host.clone(),
        port,
    };
    if !repl.set_primary(primary) {
        tracing::info!(
            "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed."
        );
        ctx.out.simple("OK Already connected to specified master");
        return Ok(Done);
    }
    ctx.shared.config.set_replicaof(Some((&host, port)));
    let who = super::connection::client_info_line(ctx.shared, &ctx.client.handle);
    tracing::info!("REPLICAOF {host}:{port} enabled (user request from '{who}')");
    ctx.out.ok();
    Ok(Done)
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms], with Redis's
/// argument checks in its order; with no replica there is nothing to fail
/// over to, and never a failover in progress to abort.
fn failover(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() == 2 && eq_ic(ctx.arg(1), "abort") {
        return Err(Error::Static("ERR No failover in progress."));
    }
    let (mut timeout, mut to, mut force) = (0, false, false);
    let mut j = 1;
    while j < ctx.argc() {
        let a = ctx.arg(j);
        if eq_ic(a, "timeout") && j + 1 < ctx.argc() && timeout == 0 {
            timeout = int_arg(ctx.arg(j + 1))?;
            if timeout <= 0 {
                return Err(Error::Static("ERR FAILOVER timeout must be greater than 0"));
            }
            j += 1;
        } else if eq_ic(a, "to") && j + 2 < ctx.argc() && !to {
            int_arg(ctx.arg(j + 2))?;
            to = true;
            j += 2;
        } else if eq_ic(a, "force") && !force {
            force = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    Err(Error::Static("ERR FAILOVER requires connected replicas."))
}

/// SYNC / PSYNC: a replica asking for the dataset and the stream of
/// writes. Redis's own refusal of `PSYNC … FAILOVER` comes first.
fn sync(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 3 && eq_ic(ctx.arg(0), "psync") && eq_ic(ctx.arg(3), "failover") {
        return Err(Error::Static(
            "ERR PSYNC FAILOVER can't be sent to a master.",
        ));
    }
    Err(Error::Static(NO_SYNC))
}

/// Redis's `NET_HOST_STR_LEN`: the longest `ip-address` a replica may
/// announce, terminator included.
const NET_HOST_STR_LEN: usize = 256;

/// REPLCONF option value …: what Redis answers a client that is not a
/// replica. The options only shape a replication stream that zwindow never
/// starts, so checking them is all there is to do; `ACK` and `GETACK` are
/// answered with nothing, as Redis does.
fn replconf(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc().is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    for j in (1..ctx.argc()).step_by(2) {
        let (opt, value) = (ctx.arg(j), ctx.arg(j + 1));
        if eq_ic(opt, "listening-port") {
            int_arg(value)?;
        } else if eq_ic(opt, "ip-address") {
            if value.len() >= NET_HOST_STR_LEN {
                return Err(Error::Owned(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )));
            }
        } else if eq_ic(opt, "capa") {
            // Capabilities this master does not know are ignored.
        } else if eq_ic(opt, "ack") || eq_ic(opt, "getack") {
            return Ok(Done);
        } else if eq_ic(opt, "rdb-only") {
            if !(0..=1).contains(&int_arg(value)?) {
                return Err(Error::Static(
                    "ERR value is out of range, value must between 0 and 1",
                ));
            }
        } else if eq_ic(opt, "rdb-filter-only") {
            rdb_filter(value)?;
        } else {
            return Err(Error::Raw(
                [b"ERR Unrecognized REPLCONF option: ", opt].concat(),
            ));
        }
    }
    ctx.out.ok();
    Ok(Done)
}

/// REPLCONF RDB-FILTER-ONLY's value: words split as Redis's `sdssplitargs`
/// splits them; `functions` is the only filter Redis 7.0 knows.
fn rdb_filter(value: &[u8]) -> Result<(), Error> {
    let words = crate::config_file::split_args(value)
        .ok_or(Error::Static("ERR Missing rdb-filter-only values"))?;
    match words.iter().find(|w| !eq_ic(w, "functions")) {
        Some(w) => Err(Error::Raw(
            [&b"ERR Unsupported rdb-filter-only option: "[..], w].concat(),
        )),
        None => Ok(()),
    }
}
