//! The execution layer: the one path every command takes.
//!
//! Whoever runs a command — a connection's request ([`execute`]), EXEC, a
//! script's `redis.call`, a blocked client being served — runs it through
//! here: [`dispatch`] resolves it against the command table, verifies it
//! (auth, arity, MULTI queueing, subscribed mode, a running script), plans
//! and takes the shard locks ([`lock_planned`]), and [`call`] runs the
//! handler and does the after-command work (statistics, error counts);
//! the handler's [`Outcome`] says what became of it (done, block on keys,
//! close, wait for a script). Keyspace notifications and wakeups of blocked
//! clients are collected by the keyspace while the command runs and
//! delivered once its locks are released.
//!
//! [`blocking`] is the one blocking mechanism. A connection's state is the
//! commands layer's [`Client`](crate::commands::session::Client); the
//! registry of connected clients is [`crate::clients`]. Commands that run
//! commands (EXEC, a script's `redis.call`, the AOF's replay) and the
//! serving of blocked clients reach [`call`] through the [`Dispatch`] seam
//! this layer implements ([`Dispatcher`]).

pub(crate) mod blocking;
mod cluster;
pub(crate) use cluster::redirect_blocked;
pub(crate) mod pause;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use tokio::sync::oneshot;

use crate::acl::catalog::Catalog;
use crate::acl::log::Context;
use crate::commands::Services;
use crate::commands::acl::acl_check;
use crate::commands::session::Client;
use crate::commands::{
    Args, CallStats, Command, Ctx, Error, Keys, OOM, Outcome, OwnedArgs, flags, full_name, lookup,
    lookup_sub, lua, resolve, transactions,
};
use crate::dispatch::{Called, Dispatch};
use crate::keyspace::{Guards, HashedKey, Keyspace, ShardSet, evict};
use crate::protocol::Reply;
use blocking::Waiting;

/// The shards a command's keys live on.
fn shards_for(shared: &Services, cmd: &Command, args: &Args<'_>) -> ShardSet {
    plan(shared, cmd, args).shards
}

/// What planning a command's locks found out.
struct Plan<'a> {
    /// The shards its keys live on.
    shards: ShardSet,
    /// Its first key with its hash, which picked the key's shard: the
    /// handler reuses it ([`Ctx::key`](crate::commands::Ctx::key)), so a
    /// single-key command hashes its key once.
    pub(crate) first_key: Option<HashedKey<'a>>,
}

/// Plans a command's locks: the shards of its keys.
fn plan<'a>(shared: &Services, cmd: &Command, args: &Args<'a>) -> Plan<'a> {
    if matches!(cmd.keys, Keys::All | Keys::Script { .. }) {
        return Plan {
            shards: shared.store.all_shards(),
            first_key: None,
        };
    }
    let mut plan = Plan {
        shards: ShardSet::default(),
        first_key: None,
    };
    cmd.key_indices(args, |i| {
        let key = HashedKey::new(args.get(i));
        plan.shards.insert(shared.store.shard_of(key));
        plan.first_key.get_or_insert(key);
    });
    plan
}

/// Locks `set` (a command's key shards) with `lock`, plus the shards its
/// windowed keys may hand members off to when a lookup trims them.
///
/// The hand-off shards are known only from the keys' entries (a rule's
/// MOVETO destination, cached per key), so they are read once the key
/// shards are held; a missing one means releasing and locking the larger
/// set, in order. Rules change only under every shard's lock, so what was
/// read stays true while the locks are held. Two rounds cover every case
/// but a rule change racing the planning; after that, every shard.
fn lock_planned<'s, E>(
    shared: &'s Services,
    db: usize,
    cmd: &Command,
    args: &Args<'_>,
    mut set: ShardSet,
    mut lock: impl FnMut(ShardSet) -> Result<Guards<'s>, E>,
) -> Result<Guards<'s>, E> {
    for round in 0.. {
        let guards = lock(set)?;
        // No MOVETO rule (the common case): nothing else to lock.
        if !shared.windows.has_moveto() {
            return Ok(guards);
        }
        let all = shared.store.all_shards();
        if set == all {
            return Ok(guards);
        }
        let mut ks = Keyspace::new(shared.env(), guards, db, 0);
        let mut missing = ShardSet::default();
        cmd.key_indices(args, |i| {
            if let Some(d) = crate::keyspace::windows::handoff_shard(&mut ks, args.get(i))
                && !set.contains(d)
            {
                missing.insert(d);
            }
        });
        if missing.is_empty() {
            return Ok(ks.into_guards());
        }
        drop(ks);
        set.0 |= missing.0;
        if round >= 2 {
            set = all;
        }
    }
    unreachable!("the loop returns")
}

/// What became of a request.
pub(crate) enum Dispatched {
    /// Ran (or was rejected); the reply is in `out`.
    Done,
    /// A blocking command found nothing: the client waits (already queued).
    Blocked(Waiting),
    /// Ran; the connection closes once the reply is written.
    Close,
    /// Another client's script runs: nothing was done; await
    /// [`Busy::wait_end`](lua::Busy::wait_end) and dispatch again.
    WaitScript,
    /// A script (or an EXEC queuing one): nothing was done; dispatch it
    /// again on the script runner thread.
    ScriptRunner,
    /// CLIENT PAUSE holds the command (true: it may write): nothing was
    /// done; await the pause's end and dispatch it again.
    Paused(bool),
    /// A load that does not answer clients yet began after the batch
    /// started: nothing was done; await it and dispatch again.
    WaitLoad,
    /// MIGRATE ran its first step: run the transfer (no shard held), then
    /// [`crate::commands::migrate::finish`].
    Migrate(Box<crate::migrate::Transfer>),
    /// WAIT: wait for the replicas' ACKs, then answer.
    WaitAcks(crate::commands::WaitAcks),
    /// A blocking flush: the reply is written; await the lazyfree thread.
    AwaitFree(tokio::sync::oneshot::Receiver<()>),
    /// SHUTDOWN waits with the server for lagging replicas.
    AwaitShutdown(tokio::sync::oneshot::Receiver<()>),
}

/// Runs one request from a client: checks, locking, the handler.
pub(crate) fn dispatch(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    args: Args<'_>,
) -> Dispatched {
    // What the command delivers to other clients waits for this
    // connection's batch (see `clients::Gate`).
    // (By pointer: an `Arc` clone would cost every command two atomic
    // operations.)
    let handle = Arc::as_ptr(&client.handle);
    // SAFETY: `client` holds this `Arc` for the whole call (nothing
    // replaces a client's handle while one of its commands runs), so the
    // handle outlives the reference.
    let handle = unsafe { &*handle };
    // ASKING lasts for the next command (outside MULTI), as Redis's
    // `resetClient` clears it after any command but ASKING.
    let clear_asking = client.asking && !args.get(0).eq_ignore_ascii_case(b"asking");
    let dispatched =
        crate::clients::caused_by(handle, || dispatch_caused(shared, client, out, args));
    let ran = !matches!(
        dispatched,
        Dispatched::WaitScript
            | Dispatched::ScriptRunner
            | Dispatched::Paused(_)
            | Dispatched::WaitLoad
    );
    if clear_asking && ran && !client.in_multi() {
        client.asking = false;
    }
    dispatched
}

fn dispatch_caused(
    shared: &Arc<Services>,
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
        client.flag_transaction();
        out.error_bytes(msg);
        Dispatched::Done
    };
    // Resolve.
    let cmd = match resolve(&args) {
        Ok(cmd) => cmd,
        Err(e) => return reject(client, out, e.bytes()),
    };
    client.note_command(cmd);
    // Verify.
    match verify(shared, client, cmd, &args) {
        Verdict::Run => {}
        Verdict::Drop => return Dispatched::Close,
        Verdict::Reject(msg) => return reject(client, out, msg.as_bytes()),
        Verdict::Queue => {
            client.queue(args);
            out.simple("QUEUED");
            return Dispatched::Done;
        }
        Verdict::WaitScript => return Dispatched::WaitScript,
        Verdict::ScriptRunner => return Dispatched::ScriptRunner,
        Verdict::Paused(writes) => return Dispatched::Paused(writes),
        Verdict::WaitLoad => return Dispatched::WaitLoad,
        Verdict::Redirect(text) => {
            // Not `reject`: EXEC's transaction is discarded without
            // EXECABORT, as Redis's redirection does.
            if cmd.name == "exec" {
                transactions::discard_transaction(shared, client);
            } else {
                client.flag_transaction();
            }
            CallStats::of(cmd).rejected.fetch_add(1, Relaxed);
            shared.count_error(text.as_bytes());
            out.error(&text);
            return Dispatched::Done;
        }
    }
    // What this command pushes to its own client follows its reply.
    if client.subscribed() || client.handle.tracking.load(Relaxed) & crate::tracking::ON != 0 {
        client.handle.mark_command_runs();
    }
    // Lock, run, after-command work.
    let plan = plan(shared, cmd, &args);
    let guards = if plan.shards.is_empty() {
        Guards::None
    } else {
        match lock_planned(shared, client.db, cmd, &args, plan.shards, |set| {
            lock_or_busy(shared, client, cmd, set)
        }) {
            Ok(g) => g,
            Err(None) => return Dispatched::WaitScript,
            Err(Some(e)) => return reject(client, out, e.as_bytes()),
        }
    };
    let mut guards = guards;
    // What this command reads may come from a batch whose replies have not
    // left (see `clients::Gate`): its own replies wait for them.
    for shard in guards.iter_mut() {
        if let Some(gate) = &shard.writer {
            if gate.is_open() {
                shard.writer = None;
            } else if gate.owner() != client.handle.id {
                client.handle.read_after(gate);
            }
        }
    }
    // The previous command's ending reading, when it ran just before in
    // this batch, dates this one (see `Client::batch_clock`).
    // (Built in place and dated after: the view is large to move.)
    let mut ks = Keyspace::new(shared.env(), guards, client.db, 0);
    // The primary's commands see keys as stored: it sends the deletions
    // of what expired (see `keyspace::replica`).
    ks.from_master = client.master;
    let sys_us = client
        .batch_clock
        .take()
        .unwrap_or_else(crate::clock::system_us);
    ks.now_ms = shared.clock.at_us(sys_us) / 1000;
    ks.fresh_us = Some(sys_us);
    let woff = shared.replication.offset();
    let aof_woff = shared.aof.fed_position();
    let outcome = call(shared, client, out, &mut ks, cmd, args, plan.first_key);
    // What WAIT waits for: the stream's offset after this client's last
    // write (Redis's `c->woff`); and WAITAOF, the AOF's too.
    let now_off = shared.replication.offset();
    if now_off != woff {
        client.woff = now_off;
    }
    let now_aof = shared.aof.fed_position();
    if now_aof != aof_woff {
        client.aof_woff = now_aof;
    }
    let dispatched = match outcome {
        Outcome::Done => Dispatched::Done,
        Outcome::Close => Dispatched::Close,
        Outcome::WaitScript => return Dispatched::WaitScript,
        Outcome::Migrate(t) => Dispatched::Migrate(t),
        Outcome::WaitAcks(w) => Dispatched::WaitAcks(w),
        Outcome::AwaitFree(rx) => Dispatched::AwaitFree(rx),
        Outcome::AwaitShutdown(rx) => Dispatched::AwaitShutdown(rx),
        Outcome::Block(block) => {
            // Queue the waiter while the keys' shards are still locked, so
            // no write can land between "nothing to pop" and "waiting".
            let (waiter, rx) = crate::execution::blocking::Waiter::new(
                client.handle.clone(),
                client.db,
                block.keys,
                block.kind,
                block.rerun.unwrap_or_else(|| args.to_owned()),
                out.resp3,
                block.unblock_on_nokey,
                // Redis looks at the command's own flag (`lastcmd`).
                client.cluster_readonly && !cmd.has(flags::WRITE),
            );
            blocking::register(shared, &mut ks, &waiter);
            Dispatched::Blocked((waiter, rx, block.timeout))
        }
    };
    if ks.prop.dirty > 0 {
        // Batches run side by side, or this one let others run midway: its
        // writes are marked for their readers now; otherwise noted for
        // `before_yield`.
        if client.batch_yielded || shared.config.worker_threads() > 1 {
            let gate = client.handle.writing_gate();
            for shard in ks.guards.iter_mut() {
                shard.writer = Some(gate.clone());
            }
        } else {
            client.batch_written.0 |= ks.guards.shard_set().0;
        }
    }
    let ready = std::mem::take(&mut ks.ready);
    client.tracking_held.append(&mut ks.tracking_pending);
    drop(ks);
    if !ready.is_empty() {
        if shared.scripting.busy.is_running() && !lua::on_runner() {
            // Serving locks the keys' shards, which a script that just
            // started holds: the runner serves them after it instead.
            // It may run after this batch's replies left: the batch's
            // gate is made now for what it delivers.
            let shared2 = shared.clone();
            let cause = crate::clients::deferred_gate();
            shared.scripting.submit(Box::new(move || match &cause {
                Some(batch) => {
                    crate::clients::caused_by_batch(batch, || blocking::serve(&shared2, ready))
                }
                None => blocking::serve(&shared2, ready),
            }));
        } else {
            blocking::serve(shared, ready);
        }
    }
    dispatched
}

/// Before a connection's batch lets other clients run midway (its replies
/// not yet written): the shards it wrote are marked with its gate, so that
/// what others read there waits for its replies, as every command after
/// this in the batch marks its own. False, and nothing done, when the
/// shards are held (a script runs): the batch goes on without a pause.
pub(crate) fn before_yield(shared: &Services, client: &mut Client) -> bool {
    let set = client.batch_written;
    if set.is_empty() {
        client.batch_yielded = true;
        return true;
    }
    let Some(mut guards) = shared.store.try_lock_for(set, std::time::Duration::ZERO) else {
        return false;
    };
    let gate = client.handle.writing_gate();
    for shard in guards.iter_mut() {
        shard.writer = Some(gate.clone());
    }
    client.batch_written = crate::keyspace::ShardSet(0);
    client.batch_yielded = true;
    true
}

/// What [`verify`] decided about a resolved command.
enum Verdict {
    Run,
    /// The client's ACL user was deleted: it is being disconnected and
    /// runs nothing more.
    Drop,
    Reject(std::borrow::Cow<'static, str>),
    /// Inside MULTI: queue it and answer `+QUEUED`.
    Queue,
    /// Another client's script runs: retry after it.
    WaitScript,
    /// A script (or an EXEC holding one): run it on the script runner.
    ScriptRunner,
    /// CLIENT PAUSE holds it (true: it may write): retry after the pause.
    Paused(bool),
    /// The dataset loads and does not answer clients yet: retry after.
    WaitLoad,
    /// Cluster mode: another node serves it (`-MOVED`, `-ASK`, …).
    Redirect(String),
}

/// The checks a client's command passes before it may run, in Redis 7.0's
/// order (`processCommand`): protected commands, auth, MULTI's refusals, ACL permissions,
/// cluster redirection (cluster mode), out of memory (evicting first), the tracking table's bound, RESP2
/// subscribed mode, the dataset loading, a busy script, CLIENT PAUSE, then
/// MULTI queueing.
fn verify(
    shared: &Arc<Services>,
    client: &mut Client,
    cmd: &'static Command,
    args: &Args<'_>,
) -> Verdict {
    // Redis checks protected commands first, right after the arity.
    if cmd.has(flags::PROTECTED)
        && let Some(msg) =
            crate::commands::modules::module_command_refused(shared, client.handle.is_local())
    {
        return Verdict::Reject(msg.into());
    }
    if !client.authenticated && !cmd.has(flags::NO_AUTH) && shared.acl.default_needs_auth() {
        return Verdict::Reject("NOAUTH Authentication required.".into());
    }
    if client.in_multi() && cmd.has(flags::NO_MULTI) {
        return Verdict::Reject("ERR Command not allowed inside a transaction".into());
    }
    let context = if client.in_multi() {
        Context::Multi
    } else {
        Context::Toplevel
    };
    match acl_check(shared, client, cmd, args, context) {
        Ok(()) => {}
        Err(None) => return Verdict::Drop,
        Err(Some(denied)) => {
            // Not verbose: the key or channel is not named (acl.c).
            let user = client.user.as_ref().map_or(&b"default"[..], |u| u.name());
            let msg = denied.message(user, Catalog::get().fullname(cmd), b"", false);
            return Verdict::Reject(format!("NOPERM {}", String::from_utf8_lossy(&msg)).into());
        }
    }
    // Cluster mode: a keyed command goes to the node serving its slot
    // (Redis checks right after the ACL; its primary is obeyed).
    if let Some(cl) = &shared.cluster
        && !client.master
        && cluster::routed(cmd)
    {
        let write = is_write(shared, client, cmd, args);
        match cluster::route(shared, cl, client, cmd, args, write) {
            cluster::Routed::Here => {}
            cluster::Routed::Redirect(text) => return Verdict::Redirect(text),
            cluster::Routed::WaitScript => return Verdict::WaitScript,
        }
    }
    // What this server's primary sends is obeyed (Redis's
    // `mustObeyClient`): no memory, disk-error, read-only or stale-data
    // refusal; it waits for a running script as Redis leaves the master's
    // input unread meanwhile, and for a pause as Redis pauses it.
    if client.master {
        client.oom = false;
        if shared.scripting.busy.running_for_other(client.handle.id) {
            return Verdict::WaitScript;
        }
    } else if shared.config.maxmemory() != 0 {
        // A running script holds every shard: no eviction meanwhile.
        let out_of_memory = !shared.scripting.busy.is_running()
            && evict::perform_evictions(shared.env(), &mut |ready| blocking::serve(shared, ready))
                == evict::Evicted::Fail;
        // Deny-OOM commands only, queued in MULTI or not (Redis 7.2+; 7.0
        // refused all queuing), and EXEC when it holds one.
        if out_of_memory && is_denyoom(client, cmd, args) {
            return Verdict::Reject(OOM.into());
        }
        // What a script started by this command checks (Redis's
        // `pre_command_oom_state`).
        client.oom = out_of_memory;
    } else {
        client.oom = false;
    }
    // Client-side caching's table stays within `tracking-table-max-keys`
    // (Redis's `trackingLimitUsedSlots`, right after the memory check).
    if shared.tracking.clients() > 0 {
        shared
            .tracking
            .limit(&shared.clients, shared.config.tracking_table_max_keys());
    }
    if !client.master
        && crate::persistence::writes_denied(&shared.persistence, &shared.config)
        && (is_write(shared, client, cmd, args) || cmd.name == "ping")
    {
        return Verdict::Reject(crate::persistence::MISCONF.into());
    }
    if shared.replication.lacks_good_replicas(&shared.config) && is_write(shared, client, cmd, args)
    {
        return Verdict::Reject(crate::commands::replication::NOREPLICAS.into());
    }
    let replica = shared.replication.is_replica();
    if replica
        && !client.master
        && shared.config.replica_read_only()
        && is_write(shared, client, cmd, args)
    {
        return Verdict::Reject(READONLY.into());
    }
    if client.in_subscribed_resp2() && !cmd.has(flags::SUBSCRIBED_OK) {
        return Verdict::Reject(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
            full_name(args, cmd)
        ).into());
    }
    // A replica whose link is down serves only `stale` commands with
    // `replica-serve-stale-data no` (EXEC: if everything queued is).
    if replica
        && !shared.config.replica_serve_stale_data()
        && shared.replication.link_state() != crate::replication::LinkState::Connected
        && denied_stale(shared, client, cmd, args)
    {
        return Verdict::Reject(MASTERDOWN.into());
    }
    // While the dataset loads only commands flagged `loading` run (Redis's
    // `is_denyloading_command`); EXEC only if everything it queued is.
    // A load that serves no clients yet (a short one: Redis answers
    // -LOADING only from within its load loop, past 2 MB) holds the
    // command instead, as Redis's blocked event loop would: the load may
    // have begun after this batch passed its wait (a replica's full sync
    // started by the client's previous command).
    if shared.persistence.loading.active() && denied_while_loading(client, cmd) {
        if !shared.persistence.loading.served() {
            return Verdict::WaitLoad;
        }
        return Verdict::Reject(crate::persistence::LOADING.into());
    }
    // During an asynchronous replica load, those flagged
    // `no_async_loading` (Redis's `is_deny_async_loading_command`).
    if shared.persistence.loading.asynchronous() && denied_while_async_loading(client, cmd) {
        return Verdict::Reject(crate::persistence::LOADING.into());
    }
    let busy = &shared.scripting.busy;
    if busy.running_for_other(client.handle.id) {
        // Before busy-reply-threshold the client waits, as behind Redis's
        // single thread; after it, only ALLOW_BUSY commands run, and only
        // those that need no shard (the script holds them all).
        let past = busy.elapsed_ms() >= shared.config.busy_reply_threshold();
        if past && !cmd.has(flags::ALLOW_BUSY) {
            return Verdict::Reject(busy_text(busy).into());
        }
        if !past || !matches!(cmd.keys, Keys::None) || client.watching() {
            return Verdict::WaitScript;
        }
    }
    // A paused command waits, after every check that refuses it and
    // before MULTI queues it (Redis's `BLOCKED_POSTPONE`).
    let pause = shared.pause.mode(&shared.clock);
    if pause != crate::pause::OFF {
        let writes = pause::may_replicate(args, client.queued(), &|c, a| {
            shared.scripting.may_write(c, a)
        });
        if pause == crate::pause::ALL || writes {
            return Verdict::Paused(writes);
        }
    }
    // Scripts, and reloads of the dataset (which may replay scripts), run
    // on the runner thread: the connection worker goes on serving the
    // other clients (with -LOADING, during a reload).
    let on_runner = (matches!(cmd.keys, Keys::All | Keys::Script { .. })
        && runs_script(client, cmd))
        || crate::commands::debug::reloads_dataset(cmd, args);
    let to_runner = on_runner && !lua::on_runner();
    // A standalone server's sampled check for what cluster mode would
    // refuse: once per command (on the runner's pass for what goes
    // there); a script's own calls are checked by the script.
    let queues = client.in_multi() && !cmd.has(flags::TX_CONTROL);
    if shared.cluster.is_none() && !client.in_script && (queues || !to_runner) {
        client.compat = if cmd.name == "exec" || cluster::routed(cmd) {
            cluster::sample_compatibility(shared, client, cmd, args)
        } else {
            crate::commands::session::CompatCheck::Off
        };
    }
    if queues {
        return Verdict::Queue;
    }
    if to_runner {
        return Verdict::ScriptRunner;
    }
    Verdict::Run
}

/// Redis's refusal of a write on a read-only replica.
pub(crate) const READONLY: &str = "READONLY You can't write against a read only replica.";
/// Redis's refusal while the link is down and stale data is not served.
const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// Redis's `is_denystale_command`: not flagged `stale`, or an EXEC whose
/// queue holds one that is not.
fn denied_stale(shared: &Services, client: &Client, cmd: &Command, args: &Args<'_>) -> bool {
    // A script's declared `allow-stale` replaces EVAL's and FCALL's own
    // `stale` flag (Redis's `scriptFlagsToCmdFlags`).
    let stale_ok = |cmd: &Command, args: &Args<'_>| match shared.scripting.declared(cmd, args) {
        Some(d) => d.allow_stale,
        None => cmd.has(flags::STALE),
    };
    if !stale_ok(cmd, args) {
        return true;
    }
    cmd.name == "exec"
        && client.queued().into_iter().flatten().any(|queued| {
            let args = queued.args();
            crate::commands::resolve(&args).is_ok_and(|c| !stale_ok(c, &args))
        })
}

fn denied_while_loading(client: &Client, cmd: &Command) -> bool {
    if !cmd.has(flags::LOADING) {
        return true;
    }
    cmd.name == "exec"
        && client.queued().into_iter().flatten().any(|queued| {
            crate::commands::resolve(&queued.args()).is_ok_and(|c| !c.has(flags::LOADING))
        })
}

fn denied_while_async_loading(client: &Client, cmd: &Command) -> bool {
    cmd.has(flags::NO_ASYNC_LOADING)
        || (cmd.name == "exec"
            && client.queued().into_iter().flatten().any(|queued| {
                crate::commands::resolve(&queued.args())
                    .is_ok_and(|c| c.has(flags::NO_ASYNC_LOADING))
            }))
}

/// Redis's `is_denyoom_command`: a deny-OOM command, or an EXEC whose
/// queue holds one.
fn is_denyoom(client: &Client, cmd: &Command, args: &Args<'_>) -> bool {
    let denies = |cmd: &Command, args: &Args<'_>| {
        cmd.has(flags::DENYOOM)
            // EVAL's flags are its script's (`evalGetCommandFlags`);
            // EVALSHA's and FCALL's are checked as the script starts.
            || (matches!(cmd.name, "eval" | "eval_ro")
                && args.len() > 1
                && lua::script_denies_oom(args.get(1)))
    };
    denies(cmd, args)
        || (cmd.name == "exec"
            && client.queued().is_some_and(|q| {
                q.iter().any(|a| {
                    let args = a.args();
                    resolve(&args).is_ok_and(|c| denies(c, &args))
                })
            }))
}

/// Redis's `is_write_command`: a write, or an EXEC whose queue holds one.
/// A script that declared its flags writes unless it declared
/// `no-writes` (EVAL's and FCALL's own flags do not say `write`).
fn is_write(shared: &Services, client: &Client, cmd: &Command, args: &Args<'_>) -> bool {
    let writes = |cmd: &Command, args: &Args<'_>| match shared.scripting.declared(cmd, args) {
        Some(d) => !d.no_writes,
        None => cmd.has(flags::WRITE),
    };
    writes(cmd, args)
        || (cmd.name == "exec"
            && client.queued().is_some_and(|q| {
                q.iter().any(|a| {
                    let args = a.args();
                    resolve(&args).is_ok_and(|c| writes(c, &args))
                })
            }))
}

fn busy_text(busy: &lua::Busy) -> &'static str {
    if busy.is_function() {
        lua::BUSY_FUNCTION
    } else {
        lua::BUSY_EVAL
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
        && client.queued().is_some_and(|q| {
            q.iter()
                .any(|a| lookup(a.args().get(0)).is_some_and(|c| is_script(c.name)))
        })
}

/// Locks `set`. Never waits behind another client's script: `Err(None)`
/// asks the connection to wait for its end, `Err(Some(BUSY))` once it ran
/// past busy-reply-threshold. On the script runner (scripts are serialized
/// there), it simply locks.
fn lock_or_busy<'s>(
    shared: &'s Services,
    client: &Client,
    cmd: &Command,
    set: ShardSet,
) -> Result<crate::keyspace::Guards<'s>, Option<&'static str>> {
    const TRY: std::time::Duration = std::time::Duration::from_millis(10);
    if lua::on_runner() {
        return Ok(shared.store.lock(set));
    }
    loop {
        if let Some(g) = shared.store.try_lock_for(set, TRY) {
            // Another connection's batch ran a script and its replies have
            // not left: what the script wrote is not seen before them
            // (see `clients::Turn`).
            if shared.clients.turn.held_by_other(client.handle.id) {
                return Err(None);
            }
            return Ok(g);
        }
        let busy = &shared.scripting.busy;
        if busy.running_for_other(client.handle.id) {
            let past = busy.elapsed_ms() >= shared.config.busy_reply_threshold();
            return Err((past && !cmd.has(flags::ALLOW_BUSY)).then(|| busy_text(busy)));
        }
    }
}

/// Runs a resolved command on an already-locked keyspace: the step every
/// way of running a command shares (a client's request, EXEC, a script's
/// `redis.call`, a blocked client being served). An error becomes the
/// error reply; [`Outcome::WaitScript`] leaves nothing written.
/// `first_key` is the command's first key as its planning hashed it, if it
/// was planned (see [`plan`]).
pub(crate) fn call<'a>(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    ks: &mut Keyspace<'_>,
    cmd: &'static Command,
    args: Args<'a>,
    first_key: Option<HashedKey<'a>>,
) -> Outcome {
    ks.db = client.db;
    // A CLIENT NO-TOUCH client's commands leave keys' access times alone,
    // TOUCH excepted (db.c `lookupKey`), inside EXEC and scripts too.
    let outer_no_touch = ks.no_touch;
    ks.no_touch = cmd.name != "touch" && client.handle.no_touch.load(Relaxed);
    let mark = out.len();
    let dispatcher = Dispatcher::new(shared);
    let mut ctx = Ctx {
        shared,
        client,
        out,
        args,
        ks,
        cmd,
        redacted: 0,
        script_error: None,
        first_key,
        dispatch: &dispatcher,
    };
    // Scripts are shown before the commands they run (Redis's evalCommand
    // feeds MONITOR itself); other commands after they ran. A blocked
    // client served later was shown when it first ran.
    let monitored = shared.monitors.active() && !ctx.client.serving_waiter;
    let script = matches!(
        cmd.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    );
    if monitored && script {
        let limit = shared.config.normal_output_limit();
        shared
            .monitors
            .feed(ctx.client, ctx.client.db, &args, 0, limit);
    }
    // Redis's `call` reads the clock once for the command's date and its
    // duration's start: a fresh view's reading serves as both.
    let start = ks_fresh_or_now(ctx.ks);
    let propagating = ctx.ks.propagating();
    let outer = if propagating {
        ctx.ks.prop.depth += 1;
        Some((
            std::mem::take(&mut ctx.ks.prop.call),
            ctx.ks.prop.dirty,
            ctx.client.db,
        ))
    } else {
        None
    };
    // What this command may read of the counters includes the calls
    // before it (see `CallTally`).
    ctx.client.tally.before(cmd);
    // Commands run inside this one (EXEC's, a blocked client's) are nested.
    ctx.client.nesting += 1;
    let result = crate::commands::run(cmd, &mut ctx);
    ctx.client.nesting -= 1;
    ctx.ks.no_touch = outer_no_touch;
    if let Some((outer, dirty, db)) = outer {
        propagate(ctx.ks, cmd, &args, &result, outer, dirty, db);
    }
    let redacted = ctx.redacted;
    let script_error = ctx.script_error.take();
    if matches!(result, Err(Error::EngineBusy)) {
        out.truncate(mark);
        return Outcome::WaitScript;
    }
    if monitored && !cmd.has(flags::SKIP_MONITOR) && !cmd.has(flags::ADMIN) {
        let limit = shared.config.normal_output_limit();
        shared
            .monitors
            .feed(client, client.db, &args, redacted, limit);
    }
    if shared.tracking.used() {
        track(shared, client, ks, cmd, &args);
    }
    // Like Redis, every call counts as processed; a command that blocks
    // counts in its command's statistics once it is served.
    client.commands += 1;
    if matches!(result, Ok(Outcome::Block(_))) {
        return result.unwrap_or(Outcome::Done);
    }
    if let Err(Error::Refused(msg)) = result {
        let stats = CallStats::of(cmd);
        stats.rejected.fetch_add(1, Relaxed);
        shared.count_error(msg.as_bytes());
        out.truncate(mark);
        out.error(msg);
        return Outcome::Done;
    }
    let end = crate::clock::system_us();
    let usec = end.saturating_sub(start);
    client.batch_clock = Some(end);
    // INFO's eventloop_duration_cmd_sum: a connection's own commands, not
    // those run inside them (nor scripts', whose client does not batch).
    if client.nesting == 0 && client.tally.batching {
        client.cmd_usec += usec;
    }
    after_command(shared, client, cmd, &args, usec, redacted);
    let latency = shared.config.latency_tracking();
    client.tally.add(cmd, usec, latency);
    if script_error.is_none() && result.is_ok() {
        return result.unwrap_or(Outcome::Done);
    }
    // A failure is counted at once, and the calls before it with it, so
    // no reader sees more failed calls than calls.
    client.tally.flush();
    let stats = CallStats::of(cmd);
    // A script's error result (Redis's afterErrorReply for the script
    // client's reply): a failed call, counted unless already counted.
    if let Some(e) = script_error {
        stats.failed.fetch_add(1, Relaxed);
        if e.counted {
            shared.count_error(&e.text);
        }
    }
    result.unwrap_or_else(|e| {
        stats.failed.fetch_add(1, Relaxed);
        shared.count_error(e.bytes());
        out.truncate(mark);
        out.error_bytes(e.bytes());
        Outcome::Done
    })
}

/// The execution layer as the [`Dispatch`] seam: what EXEC, a script's
/// `redis.call`, the AOF's replay and the serving of blocked clients run
/// their commands through — the same [`call`] as a client's request.
pub(crate) struct Dispatcher<'s> {
    shared: &'s Arc<Services>,
}

impl<'s> Dispatcher<'s> {
    pub(crate) fn new(shared: &'s Arc<Services>) -> Dispatcher<'s> {
        Dispatcher { shared }
    }
}

impl Dispatch<Client> for Dispatcher<'_> {
    fn call<'a>(
        &self,
        client: &mut Client,
        out: &mut Reply,
        ks: &mut Keyspace<'_>,
        cmd: &'static Command,
        args: Args<'a>,
        first_key: Option<HashedKey<'a>>,
    ) -> Called {
        match call(self.shared, client, out, ks, cmd, args, first_key) {
            Outcome::Done => Called::Done,
            Outcome::Close => Called::Close,
            Outcome::Block(_) => Called::Blocked,
            Outcome::WaitScript => Called::WaitScript,
            Outcome::Migrate(_) => Called::Migrate,
            // WAIT and WAITAOF never wait inside EXEC or a script
            // (`Client::can_block`).
            Outcome::WaitAcks(_) => Called::Blocked,
            // A flush blocks only a client that may block: its data is
            // gone, the thread frees it.
            Outcome::AwaitFree(_) => Called::Done,
            // SHUTDOWN waits only outside MULTI and scripts (it is
            // refused there without NOW).
            Outcome::AwaitShutdown(_) => Called::Done,
        }
    }

    fn detached_client(&self) -> Client {
        let (handle, _pushes) =
            self.shared
                .clients
                .register("".into(), "".into(), -1, false, false);
        Client::new(handle, false)
    }

    fn release(&self, client: Client) {
        self.shared.clients.unregister(client.handle.id);
    }
}

/// Propagation's part of the after-command step (Redis's `call` and
/// `afterCommand`): a write that changed the dataset (or forced it) adds
/// itself — as its handler rewrote it — to what its execution unit
/// propagates; EXEC adds nothing itself (what it ran is there, wrapped in
/// MULTI/EXEC). The outermost call sends the unit. `outer`: the enclosing
/// call's state, `dirty`: the change count before the handler ran, `db`:
/// the client's database then.
fn propagate(
    ks: &mut Keyspace<'_>,
    cmd: &Command,
    args: &Args<'_>,
    result: &Result<Outcome, Error>,
    outer: crate::keyspace::propagate::CallProp,
    dirty: u64,
    db: usize,
) {
    let mine = std::mem::replace(&mut ks.prop.call, outer);
    ks.prop.depth -= 1;
    // Commands Redis always logs once they succeed (FLUSHALL, FUNCTION
    // LOAD, …) say so through `Ctx::force_propagation`.
    // A read's lazy trims change the dataset too; they are logged on
    // their own (ZREM/HDEL), the read itself never.
    let writes = cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE);
    let changed = (writes && ks.prop.dirty != dirty) || mine.force;
    let blocked = matches!(result, Ok(Outcome::Block(_)) | Err(Error::EngineBusy));
    // A script is logged as the commands it ran (effects replication,
    // Redis 7.0's only mode); EXEC as what it ran, in MULTI/EXEC.
    let itself = !matches!(
        cmd.name,
        "exec" | "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    );
    if changed && !mine.prevent && !blocked && itself {
        let target = mine.target.and(ks.prop.script_target);
        match mine.rewrite {
            // The common write: to every sink, borrowed.
            None if target == crate::keyspace::propagate::Target::All => {
                ks.propagate_verbatim(db, args)
            }
            rewrite => {
                let argv = rewrite.unwrap_or_else(|| args.iter().map(|a| a.to_vec()).collect());
                ks.prop.push_to(db, argv, target);
            }
        }
    }
    if ks.prop.depth == 0 {
        // A command that may touch arbitrary keys, run directly, sends
        // the deletions of the expired keys it met one by one, as active
        // expiry does (Redis's `CMD_TOUCHES_ARBITRARY_KEYS`: SCAN and
        // RANDOMKEY), not as one transaction.
        let arbitrary = matches!(cmd.name, "scan" | "randomkey");
        ks.flush_propagated(!arbitrary);
    }
}

/// The start of a command's duration: the reading its keyspace view was
/// dated by, if no command used it yet, else a new one.
fn ks_fresh_or_now(ks: &mut Keyspace<'_>) -> u64 {
    ks.fresh_us.take().unwrap_or_else(crate::clock::system_us)
}

/// Client-side caching's part of the after-command step: invalidations
/// for the keys the command changed (those of the running client itself
/// held for after its reply), then, after a read, the keys a tracking
/// client may now cache (Redis's `trackingRememberKeys` in `call`; a
/// script's reads remember the keys the script declared).
fn track(
    shared: &Services,
    client: &Client,
    ks: &mut Keyspace<'_>,
    cmd: &Command,
    args: &Args<'_>,
) {
    let me = client.handle.id;
    if !ks.invalidated.is_empty() {
        let mut changed = std::mem::take(&mut ks.invalidated);
        shared.tracking.invalidate(
            &shared.clients,
            &mut changed,
            Some(me),
            &mut ks.tracking_pending,
        );
        ks.invalidated = changed;
    }
    use crate::tracking::{BCAST, CACHING, ON, OPTIN, OPTOUT};
    let f = client.handle.tracking.load(Relaxed);
    if f & ON == 0 || f & BCAST != 0 || !cmd.has(flags::READONLY) || cmd.has(flags::PUBSUB) {
        return;
    }
    if matches!(cmd.name, "eval_ro" | "evalsha_ro" | "fcall_ro") {
        return;
    }
    let caching = f & CACHING != 0;
    if (f & OPTIN != 0 && !caching) || (f & OPTOUT != 0 && caching) {
        return;
    }
    // In a script, the keys of the read command it runs (Redis 7.2+; 7.0
    // remembered every key the script declared).
    let mut keys = Vec::new();
    cmd.key_indices(args, |i| keys.push(args.get(i)));
    shared.tracking.remember(me, keys);
}

/// What a command leaves behind in the latency monitor and the slow log
/// (Redis's `call`: the `command` / `fast-command` latency event, then
/// `slowlogPushCurrentCommand`, which skips `skip_slowlog` commands such as
/// EXEC — whose queued commands are logged one by one as they run).
fn after_command(
    shared: &Services,
    client: &Client,
    cmd: &Command,
    args: &Args<'_>,
    usec: u64,
    redacted: u64,
) {
    let threshold = shared.config.latency_monitor_threshold();
    if threshold > 0 && usec / 1000 >= threshold as u64 {
        let event = if cmd.has(flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        shared
            .latency
            .lock()
            .add(event, usec / 1000, shared.clock.now_ms() / 1000);
    }
    let slower_than = shared.config.slowlog_slower_than();
    if cmd.has(flags::SKIP_SLOWLOG) || slower_than < 0 || usec < slower_than as u64 {
        return;
    }
    let arg = |i: usize| {
        if redacted & (1 << i.min(63)) != 0 {
            b"(redacted)".to_vec()
        } else {
            args.get(i).to_vec()
        }
    };
    shared.slowlog.lock().push_if_needed(
        slower_than,
        shared.config.slowlog_max_len(),
        usec,
        args.len(),
        arg,
        // A script's commands run as Redis's Lua client: no address, no name.
        || {
            if client.in_script {
                "?:0".into()
            } else {
                client.handle.addr.clone()
            }
        },
        || {
            if client.in_script {
                Vec::new()
            } else {
                client.handle.name.lock().clone().unwrap_or_default()
            }
        },
        shared.clock.now_ms() / 1000,
    );
}

/// What a request left its connection to do.
pub(crate) enum Ran {
    Done,
    Blocked(Waiting),
    Close,
}

/// What the reply-related steps after a request need to know of its name.
#[derive(Clone, Copy)]
struct Named {
    /// A CLIENT subcommand (CLIENT CACHING's flag survives it).
    client_cmd: bool,
    /// (Un)subscribe confirmations are pushes: CLIENT REPLY keeps them.
    pushes_reply: bool,
}

impl Named {
    fn of(args: &Args<'_>) -> Named {
        let name = args.get(0);
        // "subscribe" … "punsubscribe": 9 to 12 bytes; most commands are
        // told apart by their length alone.
        let pushes_reply = (9..=12).contains(&name.len())
            && [
                "subscribe",
                "psubscribe",
                "ssubscribe",
                "unsubscribe",
                "punsubscribe",
                "sunsubscribe",
            ]
            .iter()
            .any(|n| crate::util::eq_ic(name, n));
        Named {
            client_cmd: crate::util::eq_ic(name, "client"),
            pushes_reply,
        }
    }
}

/// A request [`execute_now`] could not finish without waiting: hand it
/// to [`execute_rest`].
pub(crate) struct Pending {
    dispatched: Dispatched,
    mark: usize,
    named: Named,
}

impl Pending {
    /// Whether what is left waits for something outside this connection's
    /// batch (a pause's end, MIGRATE's peer, another client's script)
    /// rather than running a script of its own.
    pub(crate) fn waits_outside(&self) -> bool {
        !matches!(self.dispatched, Dispatched::ScriptRunner)
    }

    /// The replies before this request were written (none of its own had
    /// been produced): its reply starts at the front of the emptied buffer.
    pub(crate) fn replies_written(&mut self) {
        self.mark = 0;
    }
}

/// Runs one request as far as it goes without waiting — all of it, for
/// everything but scripts, MIGRATE, CLIENT PAUSE and another client's
/// running script. The connection's loop calls this for every request
/// and awaits [`execute_rest`] only for the rest, so the common request
/// builds no future.
pub(crate) fn execute_now(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    args: Args<'_>,
) -> Result<Ran, Pending> {
    let mark = out.len();
    let named = Named::of(&args);
    let dispatched = dispatch(shared, client, out, args);
    settle(shared, client, out, mark, named, dispatched).map_err(|dispatched| Pending {
        dispatched,
        mark,
        named,
    })
}

/// The reply steps of a request that ran (or was rejected); a request
/// still to be waited for comes back as `Err`.
fn settle(
    shared: &Services,
    client: &mut Client,
    out: &mut Reply,
    mark: usize,
    named: Named,
    dispatched: Dispatched,
) -> Result<Ran, Dispatched> {
    let ran = match dispatched {
        Dispatched::Done => Ran::Done,
        Dispatched::Blocked(w) => Ran::Blocked(w),
        Dispatched::Close => Ran::Close,
        other => return Err(other),
    };
    forget_caching(client, named.client_cmd);
    after_reply(shared, client, out, (!named.pushes_reply).then_some(mark));
    Ok(ran)
}

/// Finishes what [`execute_now`] left: runs a script on the script
/// runner, MIGRATE's transfer, or waits for a pause or another client's
/// script to end and dispatches the request again.
pub(crate) async fn execute_rest(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    args: Args<'_>,
    pending: Pending,
) -> Ran {
    let Pending {
        dispatched,
        mark,
        named,
    } = pending;
    let mut owned: Option<OwnedArgs> = None;
    let mut next = Some(dispatched);
    loop {
        let a = owned.as_ref().map_or(args, |o| o.args());
        let dispatched = next
            .take()
            .unwrap_or_else(|| dispatch(shared, client, out, a));
        let dispatched = match dispatched {
            Dispatched::ScriptRunner => {
                let job_args = owned.take().unwrap_or_else(|| args.to_owned());
                if debugs_forked(client, &job_args) {
                    run_forked_debug(shared, client, out, job_args).await
                } else {
                    run_on_runner(shared, client, out, job_args).await
                }
            }
            Dispatched::Migrate(t) => migrate(shared, client, out, t).await,
            Dispatched::WaitAcks(w) => wait_acks(shared, client, out, w).await,
            Dispatched::AwaitFree(rx) => {
                let _ = rx.await;
                Dispatched::Done
            }
            Dispatched::AwaitShutdown(rx) => {
                // Blocked as Redis's `blockClientShutdown` (CLIENT LIST `b`).
                let handle = client.handle.clone();
                handle.blocked.store(true, Relaxed);
                let ended = rx.await;
                handle.blocked.store(false, Relaxed);
                if ended.is_err() {
                    out.error("ERR Errors trying to SHUTDOWN. Check logs.");
                }
                Dispatched::Done
            }
            d => d,
        };
        // Time passed: the next command reads the clock afresh.
        client.batch_clock = None;
        let dispatched = match settle(shared, client, out, mark, named, dispatched) {
            Ok(ran) => return ran,
            Err(d) => d,
        };
        match dispatched {
            Dispatched::WaitLoad => {
                if owned.is_none() {
                    owned = Some(args.to_owned());
                }
                shared.persistence.loading.wait_unless_served().await;
            }
            Dispatched::Paused(writes) => {
                let h = client.handle.clone();
                shared
                    .pause
                    .wait(&shared.clock, writes, &h.paused, &h.killed)
                    .await;
                if h.killed.load(Relaxed) {
                    return Ran::Close;
                }
            }
            _ => {
                if owned.is_none() {
                    owned = Some(args.to_owned());
                }
                // A running script first (its BUSY replies start at the
                // threshold), then a batch holding the turn after its
                // script (see `clients::Turn`).
                let id = client.handle.id;
                if shared.scripting.busy.running_for_other(id) {
                    let threshold = shared.config.busy_reply_threshold();
                    shared.scripting.busy.wait_end(id, threshold).await;
                } else {
                    shared.clients.turn.wait(id).await;
                }
            }
        }
    }
}

/// After a request's reply: CLIENT REPLY OFF/SKIP drop it (Redis's
/// `prepareClientToWrite`), then the tracking invalidations held for the
/// client's own keys follow it (pushes, sent whatever CLIENT REPLY says).
/// `mark`: where the reply starts, None when it is made of pushes.
fn after_reply(shared: &Services, client: &mut Client, out: &mut Reply, mark: Option<usize>) {
    use crate::commands::session::ReplyMode;
    match client.reply {
        ReplyMode::On => {}
        ReplyMode::Off => {
            if let Some(mark) = mark {
                out.truncate(mark);
            }
        }
        ReplyMode::Skip => {
            if let Some(mark) = mark {
                out.truncate(mark);
            }
            client.reply = ReplyMode::On;
        }
        // CLIENT REPLY SKIP itself: the next command's reply goes.
        ReplyMode::SkipNext => client.reply = ReplyMode::Skip,
    }
    if !client.tracking_held.is_empty() {
        let mut held = std::mem::take(&mut client.tracking_held);
        shared
            .tracking
            .send_pending(&shared.clients, &client.handle, &mut held, out);
    }
}

/// CLIENT CACHING applies to the next command or transaction only
/// (Redis's `resetClient`): cleared after any command but a CLIENT
/// subcommand, unless in MULTI.
fn forget_caching(client: &Client, is_client_cmd: bool) {
    let h = &client.handle;
    if h.tracking.load(Relaxed) & crate::tracking::CACHING != 0
        && !client.in_multi()
        && !is_client_cmd
    {
        h.tracking.fetch_and(!crate::tracking::CACHING, Relaxed);
    }
}

/// MIGRATE's transfer, on a blocking thread so this connection's task
/// waits without holding a shard or a runtime worker, then its last step
/// with the keys' shards locked again.
/// WAIT's wait: asks every replica for an ACK (`REPLCONF GETACK *` into
/// the stream), then waits until enough acknowledged `w.offset`, the
/// timeout passed or the client was killed; answers how many did.
/// WAITAOF's counts the replicas' FACKs and may wait for the local fsync
/// too; it answers [local, replicas].
async fn wait_acks(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    w: crate::commands::WaitAcks,
) -> Dispatched {
    let repl = &shared.replication;
    repl.feed_command(&[b"REPLCONF", b"GETACK", b"*"]);
    let deadline = w.timeout.map(|t| tokio::time::Instant::now() + t);
    let handle = client.handle.clone();
    handle.unblock.store(0, Relaxed);
    handle.blocked.store(true, Relaxed);
    // Counted as blocked until this returns, whichever way.
    struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
    impl Drop for Waiting<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Relaxed);
        }
    }
    repl.waiting.fetch_add(1, Relaxed);
    let _waiting = Waiting(&repl.waiting);
    loop {
        let acked = repl.acked.notified();
        tokio::pin!(acked);
        // Registered before the count: an ACK in between wakes it.
        acked.as_mut().enable();
        let unblocked = handle.unblock_notify.notified();
        tokio::pin!(unblocked);
        unblocked.as_mut().enable();
        let fsynced = shared.aof.fsync_notified();
        tokio::pin!(fsynced);
        fsynced.as_mut().enable();
        // WAITAOF's local AOF turned off under it: Redis's error.
        if w.aof.as_ref().is_some_and(|a| a.local) && !shared.config.appendonly() {
            handle.blocked.store(false, Relaxed);
            let msg = "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.";
            shared.count_error(msg.as_bytes());
            out.error(msg);
            return Dispatched::Done;
        }
        let (n, local) = match &w.aof {
            None => (repl.acked_count(w.offset), true),
            Some(a) => (
                repl.aof_acked_count(w.offset),
                shared.aof.fsynced(a.position),
            ),
        };
        let local_done = local || !w.aof.as_ref().is_some_and(|a| a.local);
        let now = tokio::time::Instant::now();
        // CLIENT UNBLOCK ends it as a timeout would, or with an error, and
        // a role change with an error and the connection's end (Redis's
        // `replyToBlockedClientTimedOut`, `disconnectAllBlockedClients`).
        let how = handle.unblock.swap(0, Relaxed);
        if how == crate::clients::UNBLOCK_ERROR || how == crate::clients::UNBLOCK_ROLE {
            handle.blocked.store(false, Relaxed);
            let msg = blocking::unblocked_error(how);
            shared.count_error(msg.as_bytes());
            out.error(msg);
            return if how == crate::clients::UNBLOCK_ROLE {
                Dispatched::Close
            } else {
                Dispatched::Done
            };
        }
        if (n >= w.replicas && local_done)
            || how != 0
            || deadline.is_some_and(|d| now >= d)
            || handle.killed.load(Relaxed)
        {
            handle.blocked.store(false, Relaxed);
            if w.aof.is_some() {
                out.array(2);
                out.int(i64::from(local));
            }
            out.int(n as i64);
            return Dispatched::Done;
        }
        // A kill (or the AOF turned off) is seen within this tick.
        let tick = now + std::time::Duration::from_millis(100);
        let until = deadline.map_or(tick, |d| d.min(tick));
        tokio::select! {
            _ = acked => {}
            _ = unblocked => {}
            _ = fsynced => {}
            _ = tokio::time::sleep_until(until) => {}
        }
    }
}

async fn migrate(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    transfer: Box<crate::migrate::Transfer>,
) -> Dispatched {
    let s = shared.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let outcome = crate::migrate::run(&s.migrate, &transfer);
        (transfer, outcome)
    })
    .await;
    let Ok((transfer, outcome)) = joined else {
        out.error("ERR internal error while migrating");
        return Dispatched::Done;
    };
    // The acknowledged keys, as a MIGRATE … KEYS invocation, so their
    // shards are planned as any command's (window hand-off shards too).
    let cmd = crate::commands::migrate::command();
    let mut parts: Vec<&[u8]> = vec![b"migrate", b"", b"", b"", b"", b"", b"KEYS"];
    if !transfer.copy {
        let acked = outcome.acked.iter().filter_map(|&i| transfer.items.get(i));
        parts.extend(acked.map(|item| &item.key[..]));
    }
    let keys = OwnedArgs::from_slices(&parts);
    let set = shards_for(shared, cmd, &keys.args());
    // A script holds every shard while it runs: wait for it without
    // blocking this task's worker.
    let guards = loop {
        if set.is_empty() {
            break crate::keyspace::Guards::None;
        }
        let try_lock = |set| {
            shared
                .store
                .try_lock_for(set, std::time::Duration::from_millis(10))
                .ok_or(())
        };
        if let Ok(g) = lock_planned(shared, transfer.source_db, cmd, &keys.args(), set, try_lock) {
            break g;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    };
    let mut ks = Keyspace::new(
        shared.env(),
        guards,
        transfer.source_db,
        shared.clock.now_ms(),
    );
    let mark = out.len();
    if let Err(e) = crate::commands::migrate::finish(&mut ks, &transfer, &outcome, out) {
        out.truncate(mark);
        shared.count_error(e.bytes());
        CallStats::of(cmd).failed.fetch_add(1, Relaxed);
        out.error_bytes(e.bytes());
    }
    // The keys it removed, as their DEL (before the reply leaves).
    ks.flush_propagated(false);
    if shared.tracking.used() && !ks.invalidated.is_empty() {
        let mut changed = std::mem::take(&mut ks.invalidated);
        shared.tracking.invalidate(
            &shared.clients,
            &mut changed,
            Some(client.handle.id),
            &mut ks.tracking_pending,
        );
    }
    client.tracking_held.append(&mut ks.tracking_pending);
    Dispatched::Done
}

/// An EVAL (not queued) of a client in `SCRIPT DEBUG YES`: Redis forks
/// for it, zwindow runs it on a thread of its own over a private copy of
/// the data (see [`run_forked_debug`]).
fn debugs_forked(client: &Client, args: &OwnedArgs) -> bool {
    let a = args.args();
    client.ldb == lua::ldb::YES
        && !client.in_multi()
        && (a.get(0).eq_ignore_ascii_case(b"eval") || a.get(0).eq_ignore_ascii_case(b"eval_ro"))
}

/// Runs a SCRIPT DEBUG YES session as Redis's forked one: on a thread of
/// its own, over a copy of the data taken at one instant, whose changes
/// nobody sees (no propagation, notification, tracking or wake-up: see
/// [`crate::keyspace::events::Silent`]) and which is dropped at the end.
/// No shard stays held and the script runner stays free, so the other
/// clients and their scripts are served meanwhile.
async fn run_forked_debug(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    args: OwnedArgs,
) -> Dispatched {
    let handle = client.handle.clone();
    let moved = std::mem::replace(client, Client::new(handle.clone(), false));
    let moved_out = std::mem::take(out);
    let (tx, rx) = oneshot::channel();
    let s = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("zwindow-ldb".into())
        .stack_size(32 << 20)
        .spawn(move || {
            let (mut c, mut o) = (moved, moved_out);
            let a = args.args();
            let mut d = Dispatched::Done;
            if let Some(cmd) = crate::commands::lookup(a.get(0)) {
                let store = s.store.private_copy();
                let dirty = std::sync::atomic::AtomicU64::new(0);
                let env = crate::keyspace::Env {
                    store: &store,
                    dirty: &dirty,
                    events: &crate::keyspace::events::Silent,
                    ..s.env()
                };
                let guards = store.lock(store.all_shards());
                let mut ks = Keyspace::new(env, guards, c.db, env.clock.now_ms());
                if matches!(
                    call(&s, &mut c, &mut o, &mut ks, cmd, a, None),
                    Outcome::Close
                ) {
                    d = Dispatched::Close;
                }
            }
            let _ = tx.send((c, o, d));
        });
    if let Err(e) = spawned {
        tracing::warn!("Can't start the Lua debugging session: {e}");
    }
    match rx.await {
        Ok((c, o, d)) => {
            *client = c;
            *out = o;
            d
        }
        Err(_) => {
            // The session's thread could not start or failed: its client
            // state is gone with it.
            out.error("ERR Fork() failed: can't run EVAL in debugging mode");
            Dispatched::Close
        }
    }
}

/// Moves the client to the script runner, dispatches `args` there and
/// takes it back with what became of the request.
async fn run_on_runner(
    shared: &Arc<Services>,
    client: &mut Client,
    out: &mut Reply,
    args: OwnedArgs,
) -> Dispatched {
    let handle = client.handle.clone();
    // The batch holds the turn from its first script until its replies
    // are handed to the socket (see `clients::Turn`).
    while !shared.clients.turn.take(handle.id) {
        shared.clients.turn.wait(handle.id).await;
    }
    let moved = std::mem::replace(client, Client::new(handle.clone(), false));
    let moved_out = std::mem::take(out);
    let (tx, rx) = oneshot::channel();
    let s = shared.clone();
    shared.scripting.submit(Box::new(move || {
        let (mut c, mut o) = (moved, moved_out);
        let d = dispatch(&s, &mut c, &mut o, args.args());
        let _ = tx.send((c, o, d));
    }));
    match rx.await {
        Ok((c, o, d)) => {
            *client = c;
            *out = o;
            d
        }
        Err(_) => {
            // The script panicked: its client state is gone with it.
            tracing::error!("a script failed unexpectedly; closing its connection");
            out.error("ERR internal error while running the script");
            Dispatched::Close
        }
    }
}
