//! The replication family — REPLICAOF, SLAVEOF, FAILOVER, SYNC, PSYNC and
//! REPLCONF.
//!
//! These change the replication state (`crate::replication`) and hand the
//! connection work to the network layer: REPLICAOF sets the primary, whose
//! link `network::link` runs; SYNC/PSYNC attach a replica, which
//! `network::feed` serves once the batch's replies are written; FAILOVER
//! holds writes and lets the replication cron hand over; REPLCONF keeps a
//! replica's handshake on its client.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, int_arg};
use crate::util::{eq_ic, parse_i64};
use std::sync::atomic::Ordering::Relaxed;

const G: &str = "server";

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
    // A cluster node replicates by CLUSTER REPLICATE.
    if ctx.shared.cluster.is_some() {
        return Err(Error::Static("ERR REPLICAOF not allowed in cluster mode."));
    }
    let repl = &ctx.shared.replication;
    if repl.failover.lock().is_some() {
        return Err(Error::Static(
            "ERR REPLICAOF not allowed while failing over.",
        ));
    }
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
    unblock_for_role_change(&ctx.shared.clients);
    let who = super::connection::client_info_line(ctx.shared, &ctx.client.handle);
    tracing::info!("REPLICAOF {host}:{port} enabled (user request from '{who}')");
    ctx.out.ok();
    Ok(Done)
}

/// This server became a replica: clients blocked on keys get
/// `-UNBLOCKED … (master -> replica?)` and are closed, since what they
/// wait for now comes from the primary (Redis's
/// `disconnectAllBlockedClients`).
pub(crate) fn unblock_for_role_change(clients: &crate::clients::Clients) {
    for c in clients.all() {
        c.request_unblock(crate::clients::UNBLOCK_ROLE);
    }
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]: with Redis's
/// checks in its order, holds writes and lets the replication cron
/// (`network::feed::failover_cron`) hand over once a replica has caught
/// up: this server becomes that replica's replica with a `PSYNC …
/// FAILOVER`, which makes the replica a primary.
fn failover(ctx: &mut Ctx) -> CmdResult {
    if ctx.shared.cluster.is_some() {
        return Err(Error::Static(
            "ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.",
        ));
    }
    let repl = &ctx.shared.replication;
    if ctx.argc() == 2 && eq_ic(ctx.arg(1), "abort") {
        if !repl.abort_failover(
            &ctx.shared.pause,
            &ctx.shared.config,
            "Failover manually aborted",
        ) {
            return Err(Error::Static("ERR No failover in progress."));
        }
        ctx.out.ok();
        return Ok(Done);
    }
    let (mut timeout, mut to, mut force) = (0, None, false);
    let mut j = 1;
    while j < ctx.argc() {
        let a = ctx.arg(j);
        if eq_ic(a, "timeout") && j + 1 < ctx.argc() && timeout == 0 {
            timeout = int_arg(ctx.arg(j + 1))?;
            if timeout <= 0 {
                return Err(Error::Static("ERR FAILOVER timeout must be greater than 0"));
            }
            j += 1;
        } else if eq_ic(a, "to") && j + 2 < ctx.argc() && to.is_none() {
            let port = int_arg(ctx.arg(j + 2))?;
            to = Some((String::from_utf8_lossy(ctx.arg(j + 1)).into_owned(), port));
            j += 2;
        } else if eq_ic(a, "force") && !force {
            force = true;
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    if repl.failover.lock().is_some() {
        return Err(Error::Static("ERR FAILOVER already in progress."));
    }
    if repl.is_replica() {
        return Err(Error::Static(
            "ERR FAILOVER is not valid when server is a replica.",
        ));
    }
    if repl.replicas().is_empty() {
        return Err(Error::Static("ERR FAILOVER requires connected replicas."));
    }
    if force && (timeout == 0 || to.is_none()) {
        return Err(Error::Static(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        ));
    }
    let target = match to {
        Some((host, port)) => {
            let port = u16::try_from(port).unwrap_or(0);
            let Some(replica) = repl.find_replica(&host, port) else {
                return Err(Error::Static(
                    "ERR FAILOVER target HOST and PORT is not a replica.",
                ));
            };
            if replica.state() != crate::replication::ReplicaState::Online {
                return Err(Error::Static("ERR FAILOVER target replica is not online."));
            }
            tracing::info!("FAILOVER requested to {host}:{port}.");
            Some(crate::replication::Primary { host, port })
        }
        None => {
            tracing::info!("FAILOVER requested to any replica.");
            None
        }
    };
    let end_ms = if timeout > 0 {
        ctx.shared.clock.now_ms() + timeout as u64
    } else {
        0
    };
    *repl.failover.lock() = Some(crate::replication::Failover {
        target,
        force,
        end_ms,
        in_progress: false,
    });
    ctx.shared.pause.hold_writes_for_failover(true);
    ctx.out.ok();
    Ok(Done)
}

/// SYNC / PSYNC replid offset: a replica asks for the dataset and the
/// stream of writes (Redis's `syncCommand`). A partial resync is answered
/// here (`+CONTINUE`); a full one by the connection's feed once its
/// snapshot starts (`+FULLRESYNC`, then the RDB): either way the
/// connection becomes the replica's feed once this batch's replies leave.
fn sync(ctx: &mut Ctx) -> CmdResult {
    let psync = eq_ic(ctx.arg(0), "psync");
    let repl = &ctx.shared.replication;
    if psync && ctx.argc() > 3 && eq_ic(ctx.arg(3), "failover") {
        // Our primary hands over (its FAILOVER): we take its place if we
        // share its history, and serve its PSYNC as a primary.
        if !repl.is_replica() {
            return Err(Error::Static(
                "ERR PSYNC FAILOVER can't be sent to a master.",
            ));
        }
        if ctx.arg(1) != repl.replid().as_bytes() {
            return Err(Error::Static(
                "ERR PSYNC FAILOVER replid must match my replid.",
            ));
        }
        repl.promote();
        ctx.shared.config.set_replicaof(None);
        tracing::info!(
            "Failover request received for replid {}.",
            String::from_utf8_lossy(ctx.arg(1))
        );
    }
    if ctx.client.attach.is_some() {
        return Ok(Done);
    }
    if repl.is_replica() && repl.link_state() != crate::replication::LinkState::Connected {
        return Err(Error::Static(
            "NOMASTERLINK Can't SYNC while not connected with my master",
        ));
    }
    let addr = ctx.client.handle.addr.clone();
    let ip = addr
        .rsplit_once(':')
        .map_or(addr.as_str(), |(ip, _)| ip)
        .to_string();
    repl.set_backlog_size(ctx.shared.config.repl_backlog_size());
    let capa = ctx.client.replica_capa.clone();
    let name = format!("{ip}:{}", capa.port);
    tracing::info!("Replica {name} asks for synchronization");
    if psync {
        let Some(offset) = parse_i64(ctx.arg(2)) else {
            tracing::warn!("Replica {name} asks for synchronization but with a wrong offset");
            return Err(Error::Static("ERR value is not an integer or out of range"));
        };
        match repl.try_partial(ctx.arg(1), offset) {
            crate::replication::Psync::Continue { from, replid } => {
                let replica = repl.attach(ctx.client.handle.id, ip, &capa);
                repl.start_stream(&replica, from);
                if capa.psync2 {
                    ctx.out.simple(&format!("CONTINUE {replid}"));
                } else {
                    ctx.out.simple("CONTINUE");
                }
                repl.sync_partial_ok.fetch_add(1, Relaxed);
                tracing::info!(
                    "Partial resynchronization request from {name} accepted. Sending {} bytes of backlog starting from offset {from}.",
                    (repl.offset() + 1).saturating_sub(from)
                );
                ctx.client.attach = Some(crate::replication::Attach {
                    replica,
                    full: false,
                    pre_psync: false,
                });
                return Ok(Done);
            }
            crate::replication::Psync::Full => {
                if ctx.arg(1) != b"?" {
                    repl.sync_partial_err.fetch_add(1, Relaxed);
                    tracing::info!(
                        "Partial resynchronization not accepted: Replication ID mismatch or offset out of range (replica {name})"
                    );
                } else {
                    let rdb = if capa.rdb_channel {
                        "(rdb-channel)"
                    } else {
                        ""
                    };
                    tracing::info!("Full resync requested by replica {name} {rdb}");
                }
                if capa.rdb_channel_repl {
                    // The main channel of an rdb-channel replica: it opens
                    // an rdb channel for the RDB and gets the stream here
                    // meanwhile (Redis 8.0's `syncCommand`).
                    let replica = repl.attach(ctx.client.handle.id, ip, &capa);
                    replica.set_state(crate::replication::ReplicaState::WaitRdbChannel);
                    tracing::info!(
                        "Replica {name} is capable of rdb channel synchronization, and partial sync isn't possible. Full sync will continue with dedicated rdb channel."
                    );
                    ctx.out
                        .simple(&format!("RDBCHANNELSYNC {}", ctx.client.handle.id));
                    ctx.client.attach = Some(crate::replication::Attach {
                        replica,
                        full: false,
                        pre_psync: false,
                    });
                    return Ok(Done);
                }
            }
        }
    }
    repl.sync_full.fetch_add(1, Relaxed);
    let replica = repl.attach(ctx.client.handle.id, ip, &capa);
    ctx.client.attach = Some(crate::replication::Attach {
        replica,
        full: true,
        pre_psync: !psync,
    });
    Ok(Done)
}

/// Redis's `NET_HOST_STR_LEN`: the longest `ip-address` a replica may
/// announce, terminator included.
const NET_HOST_STR_LEN: usize = 256;

/// REPLCONF option value …: a replica's handshake before its SYNC/PSYNC
/// (its listening port, announced address, capabilities), kept on its
/// client. `ACK` and `GETACK` from a client that is not an attached
/// replica are answered with nothing, as Redis does (an attached
/// replica's ACKs are read by its feed).
fn replconf(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc().is_multiple_of(2) {
        return Err(Error::Syntax);
    }
    let args = ctx.args;
    for j in (1..ctx.argc()).step_by(2) {
        let (opt, value) = (args.get(j), args.get(j + 1));
        if eq_ic(opt, "listening-port") {
            let port = int_arg(value)?;
            ctx.client.replica_capa.port = port.clamp(0, 65535) as usize;
        } else if eq_ic(opt, "ip-address") {
            if value.len() >= NET_HOST_STR_LEN {
                return Err(Error::Owned(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )));
            }
            ctx.client.replica_capa.ip = Some(String::from_utf8_lossy(value).into_owned());
        } else if eq_ic(opt, "capa") {
            // Capabilities this primary does not know are ignored.
            let capa = &mut ctx.client.replica_capa;
            if eq_ic(value, "eof") {
                capa.eof = true;
            } else if eq_ic(value, "psync2") {
                capa.psync2 = true;
            } else if eq_ic(value, "zwindow") {
                capa.zwindow = true;
            } else if eq_ic(value, "rdb-channel-repl") {
                // Redis 8.0+ (or zwindow) replicas say it; its full syncs
                // go over an rdb channel while this server's
                // `repl-rdb-channel` and `repl-diskless-sync` are on.
                capa.redis8 = true;
                capa.rdb_channel_repl =
                    ctx.shared.config.repl_rdb_channel() && ctx.shared.config.repl_diskless_sync();
            }
        } else if eq_ic(opt, "ack") || eq_ic(opt, "getack") {
            return Ok(Done);
        } else if eq_ic(opt, "rdb-only") {
            ctx.client.replica_capa.rdb_only = zero_or_one(value)?;
        } else if eq_ic(opt, "rdb-channel") {
            let on = zero_or_one(value)?;
            ctx.client.replica_capa.rdb_channel = on;
            ctx.client.handle.rdb_channel.store(on, Relaxed);
        } else if eq_ic(opt, "main-ch-client-id") {
            // The rdb channel names its main channel, which must be
            // waiting for it (`+RDBCHANNELSYNC` told it its ID).
            let id = int_arg(value)?;
            let waits = u64::try_from(id).ok().and_then(|id| {
                ctx.shared.replication.replicas().into_iter().find(|r| {
                    r.client_id == id
                        && r.state() == crate::replication::ReplicaState::WaitRdbChannel
                })
            });
            if waits.is_none() {
                return Err(Error::Owned(format!(
                    "ERR Unrecognized RDB client id: {id}"
                )));
            }
            ctx.client.replica_capa.main_ch = Some(id as u64);
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

/// REPLCONF RDB-ONLY / RDB-CHANNEL's value: 0 or 1.
fn zero_or_one(value: &[u8]) -> Result<bool, Error> {
    match int_arg(value)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::Static(
            "ERR value is out of range, value must between 0 and 1",
        )),
    }
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
