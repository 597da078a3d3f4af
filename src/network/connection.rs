//! One client connection: its private state and its task.
//!
//! The task reads whatever the socket has, runs every complete request in
//! the buffer in order, and writes all their replies with one write — the
//! pipelining that makes Redis fast is simply "parse until the buffer runs
//! dry, then flush". It also delivers pub/sub pushes, waits for blocked
//! commands, and stops on QUIT, CLIENT KILL, protocol errors or shutdown.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::sync::oneshot;
use tokio::sync::watch::error::RecvError;

use crate::clients::{ClientHandle, Gate, Push, REPLY_CHUNK};
use crate::commands::Services;
use crate::commands::session::Client;
use crate::execution::blocking::{Waiter, Waiting};
use crate::execution::{Ran, execute_now, execute_rest};
use crate::network::socket::{AfterRead, GROW_BELOW, Socket, Wrote};
use crate::protocol::parser::ProtocolError;
use crate::protocol::{Args, Parser, Reply};
use crate::stats::{Gauge, Stats};

/// Bytes read per syscall at least; the buffer grows for larger requests.
const READ_CHUNK: usize = 16 * 1024;
/// Output buffers larger than this are released after a flush, and read
/// buffers that grew past it for a big request once it is consumed: an idle
/// connection holds what ordinary requests need, not its largest one's.
const OUT_KEEP: usize = 256 * 1024;

/// Read buffers past this are dropped as soon as their requests ran; smaller
/// ones that grew are trimmed by the clients' cron within 100 ms.
const READ_KEEP: usize = 4 * 1024 * 1024;
/// Pub/sub bytes taken from the push queue per write.
const PUSH_BATCH: usize = 256 * 1024;
/// Reply bytes a batch produces between two yields to the other clients
/// (see [`output_turn`]).
const BATCH_YIELD: usize = 256 * 1024;

/// Serves one connection until it closes. The accept loop registered it
/// (so `maxclients` counts it from the moment it was accepted).
pub(crate) async fn run(
    shared: Arc<Services>,
    mut stream: Socket,
    handle: Arc<ClientHandle>,
    mut pushes: tokio::sync::mpsc::UnboundedReceiver<Push>,
) {
    let mut client = Client::new(handle.clone(), shared.acl.default_needs_auth());
    let generation = shared.acl.generation();
    client.set_user(shared.acl.default_user(), generation);
    client.tally.batching = true;
    let mut shutdown = shared.shutdown_rx();
    // No read buffer until input comes: the thread's reusable one serves
    // each read (see `Socket::read_query`).
    let mut rbuf = BytesMut::new();
    // Whether `rbuf` is the reusable buffer this turn's read took.
    let mut reusing = false;
    let mut parser = Parser::new(shared.config.proto_max_bulk_len());
    // Redis gives each client its 16 KB reply buffer when it connects, so
    // an ordinary reply changes no memory figure (eviction measures what it
    // must free against `used_memory` read by an earlier command).
    let mut out = Reply::new();
    out.buf.reserve(REPLY_CHUNK);
    handle.buffer_bytes.store(out.buf.capacity(), Relaxed);
    // Bytes of pub/sub pushes encoded into `out` but not yet written.
    let mut pushed = 0usize;
    // Whether this turn was woken by pushes alone (no request read).
    let mut pushes_only;
    // Whether this task is registered with the push channel (see `next_push`).
    let mut push_armed = false;
    // The kill and shutdown futures live as long as the connection instead
    // of being rebuilt by every `select!`: a fresh `Notified` locks the
    // Notify's waiter list to register and again to deregister on drop,
    // which cost ~5% of the server's CPU at pipeline depth 1. A `Notified`
    // stays registered once polled, and `notify_one` wakes the oldest
    // waiter, so this must be the connection's only one: the blocked wait
    // and the write poll it too.
    let killed = handle.kill_notify.notified();
    tokio::pin!(killed);
    let stopping = shutdown.changed();
    tokio::pin!(stopping);
    // Both are polled once here, which registers this task with them, and
    // afterwards only where a wait may be long (a blocked command): the
    // loop's turns test flags instead (`stop_requested`), as re-polling
    // a registered `Notified` locks its waiter list each time (about a
    // fifth of a request's instructions at pipeline 1). A kill sets
    // `killed` before it notifies, and shutdown bumps the version
    // `stop_probe` compares before it wakes `stopping`.
    let stop_probe = shared.shutdown_rx();
    std::future::poll_fn(|cx| {
        let _ = killed.as_mut().poll(cx);
        let _ = stopping.as_mut().poll(cx);
        std::task::Poll::Ready(())
    })
    .await;

    // What the last command left the connection to do: wait for a blocked
    // command's data, or close once its reply is written.
    let mut waiting: Option<Waiting> = None;
    let mut close = false;
    // Input read while a write waited, not yet run (see
    // `Socket::write_all_reading`): the next turn runs it without reading.
    let mut read_ahead = false;
    // The input ended (end of stream) while a write waited: what came
    // before it runs, then the connection closes, as if read in turn.
    let mut input_ended = false;
    // What `flush_early` read while the batch had the read buffer.
    let mut ahead = BytesMut::new();
    // Gates of other connections' batches that the pushes this turn
    // writes wait for (see `clients::Gate`).
    let mut hold: Vec<Arc<Gate>> = Vec::new();
    // Whatever way this task ends, what its batch caused is let go.
    let _open = OpenGate(&handle, &shared.clients.turn);
    'conn: loop {
        out.resp3 = client.resp3();
        // To tell INFO's reply_buffer_expands when this batch grew it.
        let out_capacity = out.buf.capacity();
        pushes_only = false;
        if let Some((waiter, mut rx, timeout)) = waiting.take() {
            let (reply, close_after) = wait_blocked(
                &shared,
                &handle,
                &mut stream,
                &mut rbuf,
                &waiter,
                &mut rx,
                timeout,
                killed.as_mut(),
                stopping.as_mut(),
            )
            .await;
            handle.touch();
            // Served by another connection's batch: nothing more runs here
            // until that batch's replies are on their way (waiting now, not
            // at the write, since a command run meanwhile could wait for
            // something of that batch's connection: see `clients::Turn`).
            if let Some(gate) = waiter.take_gate() {
                tokio::select! {
                    biased;
                    _ = stop_requested(&handle, &stop_probe) => break,
                    _ = shared.clients.wait_gate(handle.id, &gate) => {}
                }
            }
            close |= close_after;
            match reply {
                Some(bytes) => out.raw(&bytes),
                None if handle.killed.load(Relaxed) => break,
                None => out.null_array(),
            }
        } else if std::mem::take(&mut read_ahead) {
            if stop_probe.has_changed().unwrap_or(true) {
                break;
            }
        } else if input_ended {
            break;
        } else {
            let had_buffer = rbuf.capacity() != 0;
            tokio::select! {
                biased;
                _ = stop_requested(&handle, &stop_probe) => break,
                Some(msg) = next_push(&mut pushes, &mut push_armed) => {
                    if let Push::ShrinkQuery { idle } = msg {
                        shrink_query_buffer(&handle, &mut rbuf, idle);
                        if shared.config.client_eviction_limit() != 0 {
                            shared.clients.note_memory(&handle);
                        }
                        continue;
                    }
                    hold_for(&mut hold, &msg);
                    encode_push(&shared, &mut client, &mut out, &msg);
                    pushed += msg.size();
                    pushes_only = true;
                    // Batches stay bounded so a flood is written as it comes.
                    while pushed < PUSH_BATCH {
                        let Ok(msg) = pushes.try_recv() else { break };
                        hold_for(&mut hold, &msg);
                        encode_push(&shared, &mut client, &mut out, &msg);
                        pushed += msg.size();
                    }
                }
                read = read_some(&shared.stats, &mut stream, &mut rbuf) => {
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => handle.touch(),
                    }
                    reusing = !had_buffer;
                    if !query_within_limit(&shared, &handle, &rbuf, 0) {
                        break;
                    }
                }
            }
        }
        // An event loop cycle for INFO: from here until the replies are
        // written (a write that waits for a slow reader counts its wait).
        let turn_began = std::time::Instant::now();
        // What other batches caused leaves after their replies; nothing
        // runs here meanwhile (a command run first could wait for the
        // causing connection: see `clients::Turn`).
        for gate in hold.drain(..) {
            tokio::select! {
                biased;
                _ = stop_requested(&handle, &stop_probe) => break 'conn,
                _ = shared.clients.wait_gate(handle.id, &gate) => {}
            }
        }
        // proto-max-bulk-len applies to open connections from their next read.
        parser.set_max_bulk(shared.config.proto_max_bulk_len());
        parser.set_max_request(shared.config.client_query_buffer_limit());
        if handle.killed.load(Relaxed) {
            break;
        }
        // A load that does not answer clients yet holds the batch back (see
        // `persistence::Loading`): one relaxed load when nothing loads.
        if shared.persistence.loading.active() {
            shared.persistence.loading.wait_unless_served().await;
        }
        // Run every complete request in the buffer, then flush once.
        // Time passed since the last batch: its first command reads the
        // clock (see `Client::batch_clock`).
        client.batch_clock = None;
        client.batch_written = crate::keyspace::ShardSet(0);
        client.batch_yielded = false;
        let mut yield_at = out.len() + BATCH_YIELD;
        loop {
            // A killed client (its ACL user deleted, CLIENT KILL) runs
            // nothing more of what it sent, as Redis's freeClientAsync.
            if waiting.is_some() || close || handle.killed.load(Relaxed) || client.attach.is_some()
            {
                break;
            }
            let auth_required = !client.authenticated && shared.acl.default_needs_auth();
            let before = parser.consumed();
            match parser.next(&rbuf, auth_required) {
                Ok(Some(req)) => {
                    if req.is_empty() {
                        continue;
                    }
                    // CLIENT LIST's qbuf: what is left, this request included.
                    handle.qbuf.store(rbuf.len() - before, Relaxed);
                    handle
                        .qbuf_free
                        .store(rbuf.capacity() - rbuf.len(), Relaxed);
                    out.resp3 = client.resp3();
                    // The normal class's hard limit counts what goes past
                    // the fixed reply buffer (see `over_normal_output_limit`).
                    let hard = shared.config.normal_output_limit().hard as usize;
                    out.cap = if hard == 0 || client.subscribed() {
                        0
                    } else {
                        hard + REPLY_CHUNK
                    };
                    let mut mark = out.len();
                    let args = Args::new(req);
                    let ran = match execute_now(&shared, &mut client, &mut out, args) {
                        Ok(ran) => ran,
                        Err(mut pending) => {
                            // Before a wait for something outside the batch (a
                            // pause, MIGRATE's peer, another client's script),
                            // the replies so far are written, as Redis writes
                            // them before a paused client waits; that also
                            // lets go of what the batch holds others back
                            // with (its gate, the turn).
                            if pending.waits_outside() && out.len() == mark {
                                if !flush_early(
                                    &shared,
                                    &handle,
                                    &mut stream,
                                    &mut out,
                                    &mut pushed,
                                    &stop_probe,
                                    (&rbuf, &mut ahead, &mut input_ended),
                                )
                                .await
                                {
                                    break 'conn;
                                }
                                pending.replies_written();
                                mark = 0;
                            }
                            if client.ldb != 0 {
                                // A Lua debugging session may start: what the
                                // client sends meanwhile goes to it.
                                let rest =
                                    execute_rest(&shared, &mut client, &mut out, args, pending);
                                feed_debugger(&shared.stats, &handle, &mut stream, rest).await
                            } else {
                                execute_rest(&shared, &mut client, &mut out, args, pending).await
                            }
                        }
                    };
                    // What was read while the early flush waited follows.
                    if !ahead.is_empty() {
                        rbuf.extend_from_slice(&ahead);
                        ahead = BytesMut::new();
                    }
                    match ran {
                        Ran::Done => {}
                        Ran::Blocked(w) => waiting = Some(w),
                        Ran::Close => close = true,
                    }
                    let tracking = handle.tracking.load(Relaxed) & crate::tracking::ON != 0;
                    if tracking || client.subscribed() {
                        // What a command published to its own client (PUBLISH,
                        // keyspace events, invalidations) follows its reply,
                        // as Redis 7.2+ defers it; invalidations of keys
                        // evicted before it ran precede it.
                        pushed += splice_pushes(&shared, &mut client, &mut out, mark, &mut pushes);
                        // What woke the push channel's registration may have
                        // been taken here: the next turn polls it again.
                        push_armed = false;
                    }
                    if out.unwritten() > REPLY_CHUNK
                        && !output_turn(
                            &shared,
                            &mut client,
                            (&mut out, pushed),
                            &rbuf,
                            &mut yield_at,
                        )
                        .await
                    {
                        break;
                    }
                }
                Ok(None) => break,
                Err(ProtocolError::QueryBufferLimit) => {
                    // Closed without a reply, as at the limit after a read.
                    log_query_limit(&shared.stats, &handle, &rbuf);
                    close = true;
                    break;
                }
                Err(e) => {
                    out.error(&e.to_string());
                    close = true;
                    break;
                }
            }
        }
        let consumed = parser.consumed();
        rbuf.advance(consumed);
        parser.discard(consumed);
        // A consumed view keeps its whole allocation alive: a huge one is
        // dropped at once; one that grew moderately is trimmed by the clients'
        // cron (Redis's query buffer resizing); an ordinary one takes its
        // room back.
        if rbuf.is_empty() && consumed > 0 {
            if consumed > READ_KEEP || rbuf.capacity() > READ_KEEP {
                rbuf = BytesMut::with_capacity(READ_CHUNK);
            } else if !rbuf.try_reclaim(rbuf.capacity() + 1) {
                // The allocation is shared with what the requests kept of
                // it (a big argument stored without a copy, or queued by
                // MULTI): `reserve` would allocate twice its size, held
                // empty (counted by client eviction). Redis hands such a
                // buffer to the argument and reads into its reusable one:
                // so does this connection (see `Socket::read_query`).
                rbuf = BytesMut::new();
            }
            // Otherwise asking for one byte more than is left moved the
            // (empty) view back to the start of its allocation: no copy.
        }
        // A big argument on its way: the buffer takes it whole, sized once
        // (Redis's sdsMakeRoomForNonGreedy for `PROTO_MBULK_BIG_ARG`).
        // One that grew past it before the argument was seen (the io_uring
        // path hands over all the input that arrived at once) is brought
        // down to it too, as Redis's buffer would be.
        if let Some(end) = parser.big_arg_end()
            && (end + GROW_BELOW > rbuf.capacity()
                || rbuf.capacity() - (end + GROW_BELOW) > READ_CHUNK)
        {
            // Exactly (`reserve` may round up to twice the size), plus the
            // room below which a read grows the buffer (see `make_room`):
            // the argument's last bytes must not double it.
            let mut sized = BytesMut::with_capacity(end + GROW_BELOW);
            sized.extend_from_slice(&rbuf);
            rbuf = sized;
        }
        if std::mem::take(&mut reusing) && rbuf.is_empty() && rbuf.capacity() == READ_CHUNK {
            // Redis's resetReusableQueryBuf: the reusable buffer, all
            // consumed, goes back to the thread; one that grew for a big
            // request, or holds an unfinished one, stays the client's own
            // until the clients' cron trims it.
            super::socket::give_query_buffer(std::mem::take(&mut rbuf));
        }
        let parsed = parser.big_arg_start().unwrap_or(0);
        handle.qbuf_parsed.store(parsed, Relaxed);
        handle.qbuf.store(rbuf.len() - parsed, Relaxed);
        handle
            .qbuf_free
            .store(rbuf.capacity() - rbuf.len(), Relaxed);
        let stats = &shared.stats;
        let ran = std::mem::take(&mut client.commands);
        stats.commands_processed.fetch_add(ran, Relaxed);
        crate::stats::note_max(&stats.el_cmds_max, ran);
        if client.cmd_usec > 0 {
            stats
                .el_cmd_usec
                .fetch_add(std::mem::take(&mut client.cmd_usec), Relaxed);
        }
        client.tally.flush();
        // Pushes encoded for a tracking client count too.
        if over_normal_output_limit(&shared, &client, &out) {
            break;
        }
        if shared.config.client_eviction_limit() != 0 {
            handle
                .structures_mem
                .store(client.structures_memory(&shared), Relaxed);
            // The replies about to be written count too.
            handle
                .buffer_bytes
                .store(rbuf.capacity() + out.buf.capacity(), Relaxed);
            crate::commands::session::account_memory(&shared, &handle);
            if handle.killed.load(Relaxed) {
                break;
            }
        }
        if !wait_reads(&shared, &handle, &stop_probe).await {
            break;
        }
        // The batch's writes reach the AOF before its replies leave.
        let aof_began = shared.aof.enabled().then(std::time::Instant::now);
        shared.aof.before_reply(&shared.config).await;
        if let Some(began) = aof_began {
            let ns = began.elapsed().as_nanos() as u64;
            stats.el_aof_ns.fetch_add(ns, Relaxed);
        }
        if out.is_empty() {
            handle.open_gate();
            shared.clients.turn.release(handle.id);
        } else {
            if out_capacity > 0 && out.buf.capacity() > out_capacity {
                stats.reply_buffer_expands.fetch_add(1, Relaxed);
            }
            stats.recent_max_output.note(out.unwritten() as u64);
            // A client that stops reading must not pin this task: a kill
            // (e.g. by the output buffer limit) ends the write.
            handle
                .out_pending
                .store(out.buf.capacity().saturating_sub(pushed), Relaxed);
            handle.write.hold(out.len(), out.written, pushed);
            // While the client does not read, what it sends is read, and
            // run (Redis runs a client's commands whatever its output
            // holds): the write pauses, and the next turn runs them and
            // writes their replies after the rest. Not a request still
            // arriving (a big argument: it would pause at each read), nor
            // where the next turn does not run requests: a blocked
            // command's wait, a close, a replica's stream.
            let pausable = waiting.is_none() && !close && client.attach.is_none();
            let big_arg_end = parser.big_arg_end();
            let before = out.written;
            let mut paused = false;
            tokio::select! {
                biased;
                _ = stop_requested(&handle, &stop_probe) => break 'conn,
                // Once the write is handed to the socket, what the batch
                // caused may follow it.
                written = stream.write_all_reading(&mut out.buf, &mut out.written, &handle.write, || {
                    handle.open_gate();
                    shared.clients.turn.release(handle.id);
                }, &mut rbuf, !input_ended, |rbuf, n| {
                    read_ahead = true;
                    if !read_during_write(&shared, &handle, rbuf, 0, n) {
                        AfterRead::Stop
                    } else if pausable && big_arg_end.is_none_or(|end| rbuf.len() >= end) {
                        AfterRead::Pause
                    } else {
                        AfterRead::Write
                    }
                }) => {
                    match written {
                        Ok(Wrote::All) => {}
                        Ok(Wrote::InputEnded) => input_ended = true,
                        Ok(Wrote::Paused) => paused = true,
                        Ok(Wrote::Stopped) | Err(_) => break 'conn,
                    }
                }
            }
            stats.writes_processed.fetch_add(1, Relaxed);
            stats
                .net_output_bytes
                .fetch_add((out.written - before) as u64, Relaxed);
            if paused {
                // The bytes written go once they are as many as those
                // left (each byte moved at most once on average), so a
                // client that sends a little at a time while a large
                // output waits costs no more than what it reads.
                if out.written >= out.unwritten() {
                    out.buf.drain(..out.written);
                    out.written = 0;
                    handle.write.hold(out.len(), 0, pushed);
                }
            } else {
                // Pushes count against the output limit until written.
                handle
                    .write
                    .finish_with(&handle.push_bytes, std::mem::take(&mut pushed));
                handle.out_pending.store(0, Relaxed);
                out.buf.clear();
                out.written = 0;
                // A burst of pushes to a listener (invalidations, messages) is
                // not kept for the next one: Redis frees what went past its
                // 16 KB reply buffer once written, and many listeners each
                // holding their largest burst would count against maxmemory
                // (evicting keys for the memory of the invalidations of the
                // keys just evicted). Replies keep up to OUT_KEEP for speed.
                let keep = if pushes_only { REPLY_CHUNK } else { OUT_KEEP };
                if out.buf.capacity() > keep
                    && crate::commands::debug::REPLY_BUFFER_RESIZING.load(Relaxed)
                {
                    out.buf = Vec::with_capacity(REPLY_CHUNK);
                    stats.reply_buffer_shrinks.fetch_add(1, Relaxed);
                }
            }
        }
        // What this client's buffers hold, for INFO's mem_clients_normal.
        handle
            .buffer_bytes
            .store(rbuf.capacity() + out.buf.capacity(), Relaxed);
        if shared.config.client_eviction_limit() != 0 {
            shared.clients.note_memory(&handle);
        }
        stats.el_cycle(turn_began);
        if close {
            break;
        }
        // SYNC/PSYNC: what follows on this connection is a replica's feed.
        if let Some(attach) = client.attach.take() {
            super::feed::serve(&shared, &mut stream, &handle, &mut rbuf, attach).await;
            break;
        }
    }
    // A batch left midway (a kill, a protocol error) counts what it ran.
    client.tally.flush();
    // After SHUTDOWN its client finds the server gone, as with Redis, which
    // exits inside the command: the socket closes once the listeners have
    // (the server signals shutdown right after closing them), so a client
    // that reconnects at once is refused rather than served.
    if shared.persistence.shutdown_handled.load(Relaxed) {
        let mut down = shared.shutdown_rx();
        let _ = tokio::time::timeout(Duration::from_secs(1), down.wait_for(|stop| *stop)).await;
    }
    stream.shutdown().await;
    if client.watching() {
        // Unwatching locks the keys' shards: not behind a script.
        while shared.scripting.busy.running_for_other(client.handle.id) {
            shared.scripting.busy.wait_end(client.handle.id, 0).await;
        }
    }
    cleanup(&shared, &mut client);
}

/// Reads what the socket has into `rbuf`, counting the read and its bytes
/// for INFO (as Redis, before any command in them runs).
/// Runs `rest` while handing what the client sends to its Lua debugging
/// session (the session reads it from the client's handle).
async fn feed_debugger<F: std::future::Future>(
    stats: &Stats,
    handle: &ClientHandle,
    stream: &mut Socket,
    rest: F,
) -> F::Output {
    tokio::pin!(rest);
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut open = true;
    loop {
        tokio::select! {
            r = &mut rest => return r,
            read = read_some(stats, stream, &mut buf), if open => {
                match read {
                    Ok(n) if n > 0 => handle.debug_input.feed(&buf),
                    _ => {
                        open = false;
                        handle.debug_input.feed(&[]);
                    }
                }
                buf.clear();
            }
        }
    }
}

async fn read_some(
    stats: &Stats,
    stream: &mut Socket,
    rbuf: &mut BytesMut,
) -> std::io::Result<usize> {
    let read = stream.read_query(rbuf).await;
    stats.reads_processed.fetch_add(1, Relaxed);
    if let Ok(n) = read {
        stats.net_input_bytes.fetch_add(n as u64, Relaxed);
        stats.recent_max_input.note(rbuf.len() as u64);
    }
    read
}

/// The next push, as `pushes.recv()`, without touching the channel while
/// it is empty and this task is registered with it (`armed`): polling it
/// costs about as much as parsing a request, on every turn of the loop.
/// A send wakes the registered task and leaves the channel non-empty, so
/// the registration is only trusted until something is taken: a receive
/// here or elsewhere (`splice_pushes`) clears `armed`. A `Pending` counts
/// as registered only if the task had coop budget left (out of budget, the
/// channel answers `Pending` without registering).
fn next_push<'a>(
    pushes: &'a mut tokio::sync::mpsc::UnboundedReceiver<Push>,
    armed: &'a mut bool,
) -> impl Future<Output = Option<Push>> + 'a {
    std::future::poll_fn(move |cx| {
        if *armed && pushes.is_empty() {
            return std::task::Poll::Pending;
        }
        let budget = tokio::task::coop::has_budget_remaining();
        match pushes.poll_recv(cx) {
            std::task::Poll::Ready(msg) => {
                *armed = false;
                std::task::Poll::Ready(msg)
            }
            std::task::Poll::Pending => {
                *armed = budget;
                std::task::Poll::Pending
            }
        }
    })
}

/// Ready once the client is killed or the server shuts down, from flags
/// alone: the connection's `Notified` and shutdown future, registered when
/// it started, wake its task (see `run`).
fn stop_requested<'a>(
    handle: &'a ClientHandle,
    stop_probe: &'a tokio::sync::watch::Receiver<bool>,
) -> impl Future<Output = ()> + 'a {
    std::future::poll_fn(move |_| {
        if handle.killed.load(Relaxed) || stop_probe.has_changed().unwrap_or(true) {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
}

/// Waits for a blocked command's reply, its timeout, a kill, or the client
/// going away. Bytes the client sends meanwhile are kept for later.
#[allow(clippy::too_many_arguments)]
async fn wait_blocked(
    shared: &Arc<Services>,
    handle: &Arc<ClientHandle>,
    stream: &mut Socket,
    rbuf: &mut BytesMut,
    waiter: &Arc<Waiter>,
    rx: &mut oneshot::Receiver<Vec<u8>>,
    timeout: Option<Duration>,
    mut killed: Pin<&mut tokio::sync::futures::Notified<'_>>,
    mut stopping: Pin<&mut impl Future<Output = Result<(), RecvError>>>,
) -> (Option<Vec<u8>>, bool) {
    let sleep = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    handle.unblock.store(0, Relaxed);
    handle.blocked.store(true, Relaxed);
    // Redis's clients_in_timeout_table: the blocked clients with a timeout.
    let _in_timeout_table = timeout
        .is_some()
        .then(|| Gauge::enter(&shared.stats.clients_in_timeout_table));
    let mut unblocked = 0;
    loop {
        tokio::select! {
            // A stale permit from an earlier wait carries no request.
            _ = handle.unblock_notify.notified() => {
                unblocked = handle.unblock.swap(0, Relaxed);
                if unblocked != 0 {
                    break;
                }
            }
            reply = &mut *rx => {
                if let Ok(bytes) = reply {
                    handle.blocked.store(false, Relaxed);
                    return (Some(bytes), false);
                }
                break;
            }
            _ = &mut sleep => break,
            _ = &mut killed => break,
            _ = &mut stopping => {
                handle.kill();
                break;
            }
            read = read_some(&shared.stats, stream, rbuf) => {
                if !matches!(read, Ok(n) if n > 0) || !query_within_limit(shared, handle, rbuf, 0) {
                    handle.kill();
                    break;
                }
            }
        }
    }
    handle.blocked.store(false, Relaxed);
    // Cancelling locks the keys' shards: not behind a script.
    while shared.scripting.busy.running_for_other(handle.id) {
        shared.scripting.busy.wait_end(handle.id, 0).await;
    }
    // Served while cancelling: that reply wins, as the data was taken.
    let served = crate::execution::blocking::cancel(shared, waiter, rx);
    if served.is_none() && !handle.killed.load(Relaxed) {
        // Unblocked because this server became a replica: the connection
        // closes after the error, as in Redis.
        let close = unblocked == crate::clients::UNBLOCK_ROLE;
        return (
            crate::execution::blocking::unserved(shared, waiter, unblocked),
            close,
        );
    }
    (served, false)
}

/// Writes the replies a batch has so far, before it waits for something
/// outside it (see where it is called); false when the connection must end.
/// What the client sends meanwhile is read into `ahead` (the batch holds
/// the read buffer, `rbuf`), to be appended to it once the command ran.
async fn flush_early(
    shared: &Services,
    handle: &ClientHandle,
    stream: &mut Socket,
    out: &mut Reply,
    pushed: &mut usize,
    stop_probe: &tokio::sync::watch::Receiver<bool>,
    (rbuf, ahead, input_ended): (&BytesMut, &mut BytesMut, &mut bool),
) -> bool {
    if !wait_reads(shared, handle, stop_probe).await {
        return false;
    }
    // The batch's writes reach the AOF before its replies leave.
    shared.aof.before_reply(&shared.config).await;
    if out.is_empty() {
        handle.open_gate();
        shared.clients.turn.release(handle.id);
        return true;
    }
    let stats = &shared.stats;
    stats.recent_max_output.note(out.unwritten() as u64);
    handle
        .out_pending
        .store(out.buf.capacity().saturating_sub(*pushed), Relaxed);
    handle.write.hold(out.len(), out.written, *pushed);
    let before = out.written;
    // Mid-command: what is read waits for the command's end (no pause).
    tokio::select! {
        biased;
        _ = stop_requested(handle, stop_probe) => return false,
        written = stream.write_all_reading(&mut out.buf, &mut out.written, &handle.write, || {
            handle.open_gate();
            shared.clients.turn.release(handle.id);
        }, ahead, !*input_ended, |ahead, n| {
            if read_during_write(shared, handle, rbuf, ahead.len(), n) {
                AfterRead::Write
            } else {
                AfterRead::Stop
            }
        }) => {
            match written {
                Ok(Wrote::All) => {}
                Ok(Wrote::InputEnded) => *input_ended = true,
                Ok(Wrote::Stopped | Wrote::Paused) | Err(_) => return false,
            }
        }
    }
    handle
        .write
        .finish_with(&handle.push_bytes, std::mem::take(pushed));
    handle.out_pending.store(0, Relaxed);
    stats.writes_processed.fetch_add(1, Relaxed);
    stats
        .net_output_bytes
        .fetch_add((out.len() - before) as u64, Relaxed);
    out.buf.clear();
    out.written = 0;
    true
}

/// Waits until the batches whose writes this batch read
/// have handed their replies to their sockets (see `clients::Gate`); false
/// when the connection must end.
async fn wait_reads(
    shared: &Services,
    handle: &ClientHandle,
    stop_probe: &tokio::sync::watch::Receiver<bool>,
) -> bool {
    let mut gates = Vec::new();
    handle.take_reads_after(&mut gates);
    for gate in gates {
        tokio::select! {
            biased;
            _ = stop_requested(handle, stop_probe) => return false,
            _ = shared.clients.wait_gate(handle.id, &gate) => {}
        }
    }
    true
}

/// The normal class's output limit (subscribers are measured by their
/// pushes, as they are queued): true if the client was closed for it. As in
/// Redis, it counts what goes past the client's fixed 16 KB reply buffer.
fn over_normal_output_limit(shared: &Services, client: &Client, out: &Reply) -> bool {
    let beyond = out.unwritten().saturating_sub(REPLY_CHUNK) as u64;
    if beyond == 0 || client.subscribed() {
        return false;
    }
    // A client that has not authenticated may hold 1 KB past its reply
    // buffer (Redis's `checkClientOutputBufferLimits`), and Redis's first
    // block past it counts 16 KB: closed at once, so one that pipelines
    // without reading its -NOAUTH replies holds no memory.
    if !client.authenticated && shared.acl.default_needs_auth() {
        client
            .handle
            .kill_for_output_limit(beyond, "unauthenticated");
        return true;
    }
    client
        .handle
        .over_output_limit(beyond, shared.config.normal_output_limit())
}

/// After a command that left more than the fixed reply buffer in `out`:
/// the output limit as Redis applies it, each time a reply is added, not
/// once the batch ran (false: the client is closed and runs nothing more;
/// the soft limit's time counts from the first reply over it); and once
/// the replies grew by [`BATCH_YIELD`] since the last turn, a turn for the
/// other clients, so a pipeline of big replies does not hold them up. The
/// batch then goes on where it was: nothing is written or reordered.
async fn output_turn(
    shared: &Services,
    client: &mut Client,
    (out, pushed): (&mut Reply, usize),
    rbuf: &BytesMut,
    yield_at: &mut usize,
) -> bool {
    if over_normal_output_limit(shared, client, out) {
        return false;
    }
    let hard = shared.config.normal_output_limit().hard as usize;
    if hard != 0 && out.unwritten() > hard / 4 && out.buf.capacity() - out.written < 2 * hard {
        // Replies a quarter of the way to the hard limit: room for twice
        // the limit at once (address space: pages cost memory only once
        // written), and what the buffer's earlier doublings left given
        // back. Growing by doubling to the limit would hold each earlier
        // copy until the allocator purges it, and the last doubling both
        // full buffers: three times the limit for a client closed at it.
        let _ = out.buf.try_reserve_exact(2 * hard - out.unwritten());
        crate::alloc::release_free_memory();
    }
    // Others may read what the batch wrote only after its replies: its
    // written shards are marked first (or it goes on without a pause).
    if out.len() >= *yield_at && crate::execution::before_yield(shared, client) {
        // The replies count as this client's memory before the others run
        // (their commands may evict keys for it): client eviction sees
        // them first, as at the batch's end.
        if shared.config.client_eviction_limit() != 0 {
            let handle = &client.handle;
            handle
                .buffer_bytes
                .store(rbuf.capacity() + out.buf.capacity(), Relaxed);
            crate::commands::session::account_memory(shared, handle);
            if handle.killed.load(Relaxed) {
                return false;
            }
        }
        // The replies so far are this client's output while others run
        // (CLIENT LIST's omem, the clients' cron's output limit check).
        client.handle.write.hold(out.len(), out.written, pushed);
        // On the io_uring path the other connections' sends leave, and
        // their arrivals are seen, when the thread parks: not while this
        // task has work. Do it now (nothing on the epoll path).
        super::uring::on_park();
        tokio::task::yield_now().await;
        // Time passed: the next command reads the clock afresh.
        client.batch_clock = None;
        *yield_at = out.len() + BATCH_YIELD;
    }
    true
}

/// Opens the connection's batch gate, and gives back the turn, when it
/// drops: a connection that ends (or whose task is dropped) holds nobody
/// back.
struct OpenGate<'a>(&'a ClientHandle, &'a crate::clients::Turn);

impl Drop for OpenGate<'_> {
    fn drop(&mut self) {
        self.0.open_gate();
        self.1.release(self.0.id);
    }
}

/// Notes the gate a push waits for, unless it is open already.
fn hold_for(hold: &mut Vec<Arc<Gate>>, msg: &Push) {
    if let Push::After(gate) = msg
        && !gate.is_open()
    {
        hold.push(gate.clone());
    }
}

/// Redis's `client-query-buffer-limit`, checked as bytes arrive whatever
/// the client is doing (a blocked client reads too): the request bytes
/// waiting, with the commands MULTI queued, which are requests not yet run
/// (as Redis 7.2+ counts them). False when the client must be closed, said
/// in Redis's log line; otherwise the bytes waiting count as the client's
/// memory (`maxmemory-clients`).
/// `ahead`: bytes read but not yet appended to `rbuf` (see `flush_early`).
fn query_within_limit(
    shared: &Services,
    handle: &ClientHandle,
    rbuf: &BytesMut,
    ahead: usize,
) -> bool {
    let held = (rbuf.len() + ahead) as u64 + handle.multi_mem.load(Relaxed) as u64;
    if held > shared.config.client_query_buffer_limit() {
        log_query_limit(&shared.stats, handle, rbuf);
        return false;
    }
    let waiting = (rbuf.len() + ahead).saturating_sub(handle.qbuf_parsed.load(Relaxed));
    handle.qbuf.store(waiting, Relaxed);
    handle.qbuf_peak.fetch_max(rbuf.len() + ahead, Relaxed);
    handle
        .qbuf_free
        .store(rbuf.capacity() - rbuf.len(), Relaxed);
    crate::commands::session::account_memory(shared, handle);
    true
}

/// A read made while a write waited (see `Socket::write_all_reading`),
/// counted as `read_some` counts one, with the query buffer limit applied
/// as after any read (`ahead`: see `query_within_limit`): false when the
/// client must be closed.
fn read_during_write(
    shared: &Services,
    handle: &ClientHandle,
    rbuf: &BytesMut,
    ahead: usize,
    n: usize,
) -> bool {
    let stats = &shared.stats;
    stats.reads_processed.fetch_add(1, Relaxed);
    stats.net_input_bytes.fetch_add(n as u64, Relaxed);
    stats.recent_max_input.note((rbuf.len() + ahead) as u64);
    handle.touch();
    query_within_limit(shared, handle, rbuf, ahead) && !handle.killed.load(Relaxed)
}

fn log_query_limit(stats: &Stats, handle: &ClientHandle, rbuf: &BytesMut) {
    stats.query_limit_disconnections.fetch_add(1, Relaxed);
    tracing::warn!(
        "Closing client that reached max query buffer length: id={} addr={} (qbuf initial bytes: {:?})",
        handle.id,
        handle.addr,
        String::from_utf8_lossy(&rbuf[..rbuf.len().min(64)])
    );
}

/// Encodes every queued push and inserts them at `mark`; returns their size.
///
/// Their gates are not waited for: these pushes go out with this
/// connection's own replies, and waiting there for a batch that may wait
/// for this one (two subscribers publishing to each other) would never end.
fn splice_pushes(
    shared: &Services,
    client: &mut Client,
    out: &mut Reply,
    mark: usize,
    pushes: &mut tokio::sync::mpsc::UnboundedReceiver<Push>,
) -> usize {
    let mut early = Reply::with_resp3(out.resp3);
    let mut size = 0;
    let mut after_reply = false;
    while let Ok(msg) = pushes.try_recv() {
        if matches!(msg, Push::CommandRuns) {
            after_reply = true;
            continue;
        }
        // What the command itself caused follows its reply (Redis 7.2+).
        let into = if after_reply { &mut *out } else { &mut early };
        encode_push(shared, client, into, &msg);
        size += msg.size();
    }
    if !early.is_empty() {
        out.buf.splice(mark..mark, early.buf);
    }
    size
}

/// Gives back the read buffer's room once its requests are consumed: all of
/// it for an idle client, what passes the usual read size otherwise.
fn shrink_query_buffer(handle: &ClientHandle, rbuf: &mut BytesMut, idle: bool) {
    let before = rbuf.capacity();
    if !rbuf.is_empty() {
        // An unfinished request idle for long keeps its bytes, not the
        // room it was given (Redis's sdsRemoveFreeSpace): the parser's
        // offsets stay valid, the bytes keep their places.
        if idle {
            *rbuf = BytesMut::from(&rbuf[..]);
            handle.qbuf_free.store(0, Relaxed);
            let total = handle.buffer_bytes.load(Relaxed);
            handle
                .buffer_bytes
                .store(total.saturating_sub(before) + rbuf.capacity(), Relaxed);
        }
        return;
    }
    *rbuf = if idle {
        BytesMut::new()
    } else {
        BytesMut::with_capacity(READ_CHUNK)
    };
    handle.qbuf_free.store(rbuf.capacity(), Relaxed);
    // The buffers' total shrinks with it (CLIENT LIST's rbs is what is
    // left of that total beyond the query buffer).
    let total = handle.buffer_bytes.load(Relaxed);
    handle
        .buffer_bytes
        .store(total.saturating_sub(before) + rbuf.capacity(), Relaxed);
}

/// Encodes one push; a shard channel dropped with its slot first leaves
/// the client's own set, which gives its `sunsubscribe`'s count.
fn encode_push(shared: &Services, client: &mut Client, out: &mut Reply, msg: &Push) {
    match msg {
        Push::ShrinkQuery { .. } | Push::After(_) | Push::CommandRuns => {}
        Push::ShardUnsubscribed { channel } => {
            if let Some(count) =
                crate::commands::pubsub::shard_channel_dropped(shared, client, channel)
            {
                out.push(3);
                out.bulk(b"sunsubscribe");
                out.bulk(channel);
                out.int(count as i64);
            }
        }
        Push::Message { channel, payload } => {
            out.push(3);
            out.bulk(b"message");
            out.bulk(channel);
            out.bulk(payload);
        }
        Push::SMessage { channel, payload } => {
            out.push(3);
            out.bulk(b"smessage");
            out.bulk(channel);
            out.bulk(payload);
        }
        Push::Raw(bytes) => out.raw(bytes),
        Push::PMessage {
            pattern,
            channel,
            payload,
        } => {
            out.push(4);
            out.bulk(b"pmessage");
            out.bulk(pattern);
            out.bulk(channel);
            out.bulk(payload);
        }
    }
}

fn cleanup(shared: &Services, client: &mut Client) {
    let id = client.handle.id;
    shared.tracking.disable(&client.handle);
    shared.monitors.remove(id);
    if client.subscribed() {
        shared.pubsub.remove_client(id);
    }
    client.unwatch_on_close(&shared.store);
    shared.clients.unregister(id);
}
