//! One client connection: its private state and its task.
//!
//! The task reads whatever the socket has, runs every complete request in
//! the buffer in order, and writes all their replies with one write — the
//! pipelining that makes Redis fast is simply "parse until the buffer runs
//! dry, then flush". It also delivers pub/sub pushes, waits for blocked
//! commands, and stops on QUIT, CLIENT KILL, protocol errors or shutdown.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::sync::watch::error::RecvError;

use crate::blocking::Waiter;
use crate::client::{ClientHandle, Push};
use crate::commands::{self, Args, Command, OwnedArgs};
use crate::protocol::{Parser, Reply};
use crate::server::{Shared, Stats};
use crate::stats::Gauge;
use crate::store::{Key, WatchFlag};

/// Bytes read per syscall at least; the buffer grows for larger requests.
const READ_CHUNK: usize = 16 * 1024;
/// Output buffers larger than this are released after a flush.
const OUT_KEEP: usize = 1024 * 1024;
/// Pub/sub bytes taken from the push queue per write.
const PUSH_BATCH: usize = 256 * 1024;

/// A blocking command's request to wait for data on `keys`.
#[derive(Debug)]
pub struct Block {
    pub keys: Vec<Key>,
    /// The type the command takes data from, as `TYPE` names it: a key that
    /// becomes ready holding another type leaves the waiter blocked.
    pub kind: &'static str,
    /// None waits forever.
    pub timeout: Option<Duration>,
}

/// A queued waiter, its reply channel and its timeout.
pub type Waiting = (Arc<Waiter>, oneshot::Receiver<Vec<u8>>, Option<Duration>);

/// A connection's private state: what only its own commands change.
pub struct Client {
    pub handle: Arc<ClientHandle>,
    pub db: usize,
    pub authenticated: bool,
    /// Commands queued by MULTI; None outside a transaction.
    pub multi: Option<Vec<OwnedArgs>>,
    /// A queued command failed to parse: EXEC will abort.
    pub multi_error: bool,
    /// True while EXEC runs the queue (blocking commands must not block).
    pub in_exec: bool,
    /// True for the client a script's `redis.call` runs as (TIME answers
    /// the script's frozen instant).
    pub in_script: bool,
    /// Set by a handler that found the script engine held by another
    /// client's script: dispatch undoes the attempt and the connection
    /// retries after the script.
    pub retry_after_script: bool,
    pub watched: Vec<(usize, Key)>,
    pub watch_flag: WatchFlag,
    pub channels: HashSet<Bytes>,
    pub patterns: HashSet<Bytes>,
    pub close_after_reply: bool,
    /// Set by a blocking command that found nothing.
    pub block: Option<Block>,
    /// Commands run since the last flush into the server's counters (one
    /// shared atomic add per batch, not per command).
    pub commands: u64,
    /// Set by dispatch once the waiter is queued.
    pub waiting: Option<Waiting>,
    /// For the stand-in that re-runs a blocked command when one of its keys
    /// got data: that key. Redis serves a waiter from the key that became
    /// ready, whatever its other keys hold (see [`Client::may_take_from`]).
    pub serving_key: Option<Key>,
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, auth_required: bool) -> Client {
        Client {
            handle,
            db: 0,
            authenticated: !auth_required,
            multi: None,
            multi_error: false,
            in_exec: false,
            in_script: false,
            retry_after_script: false,
            watched: Vec::new(),
            watch_flag: Arc::new(AtomicBool::new(false)),
            channels: HashSet::new(),
            patterns: HashSet::new(),
            close_after_reply: false,
            block: None,
            commands: 0,
            waiting: None,
            serving_key: None,
        }
    }

    /// A stand-in for a blocked client while the server serves it.
    pub fn for_waiter(handle: Arc<ClientHandle>, db: usize, resp3: bool, key: Key) -> Client {
        let mut c = Client::new(handle, false);
        c.db = db;
        c.serving_key = Some(key);
        c.handle.resp.store(if resp3 { 3 } else { 2 }, Relaxed);
        c
    }

    pub fn resp3(&self) -> bool {
        self.handle.resp.load(Relaxed) == 3
    }

    pub fn in_subscribed_resp2(&self) -> bool {
        !self.resp3() && (!self.channels.is_empty() || !self.patterns.is_empty())
    }

    /// True when a blocking command may wait (not inside MULTI/EXEC).
    /// Whether a blocking command may take data from `key`: any of its keys
    /// when its client runs it, only the ready key when the server serves
    /// it as a waiter (whose type [`crate::blocking`] has checked).
    pub fn may_take_from(&self, key: &[u8]) -> bool {
        self.serving_key.as_deref().is_none_or(|k| k == key)
    }

    pub fn can_block(&self) -> bool {
        !self.in_exec
    }

    /// Records the command for CLIENT LIST's `cmd=`. The idle clock is not
    /// touched here but once per read and per blocked reply in [`run`] (as
    /// Redis updates `lastinteraction` on socket I/O), which saves a clock
    /// read per pipelined command.
    pub fn note_command(&self, cmd: &'static Command) {
        self.handle
            .last_cmd_ptr
            .store(cmd as *const Command as usize, Relaxed);
    }

    pub fn queue(&mut self, args: Args<'_>) {
        if let Some(q) = &mut self.multi {
            q.push(args.to_owned());
            self.handle.multi.store(q.len() as i32, Relaxed);
        }
    }

    pub fn select(&mut self, db: usize) {
        self.db = db;
        self.handle.db.store(db, Relaxed);
    }
}

/// Serves one connection until it closes.
pub async fn run(shared: Arc<Shared>, mut stream: TcpStream) {
    let addr = stream
        .peer_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let laddr = stream
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    let _ = stream.set_nodelay(true);
    let (handle, mut pushes) = shared.clients.register(addr, laddr);
    let mut client = Client::new(handle.clone(), shared.config.auth_required());
    let mut shutdown = shared.shutdown_rx();
    let mut rbuf = BytesMut::with_capacity(READ_CHUNK);
    handle.buffer_bytes.store(rbuf.capacity(), Relaxed);
    let mut parser = Parser::new(shared.config.proto_max_bulk_len());
    let mut out = Reply::new();
    // Bytes of pub/sub pushes encoded into `out` but not yet written.
    let mut pushed = 0usize;
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

    'conn: loop {
        out.resp3 = client.resp3();
        // To tell INFO's reply_buffer_expands when this batch grew it.
        let out_capacity = out.buf.capacity();
        if let Some((waiter, mut rx, timeout)) = client.waiting.take() {
            let reply = wait_blocked(
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
            match reply {
                Some(bytes) => out.raw(&bytes),
                None if handle.killed.load(Relaxed) => break,
                None => out.null_array(),
            }
        } else {
            tokio::select! {
                biased;
                _ = &mut killed => break,
                _ = &mut stopping => break,
                Some(msg) = pushes.recv() => {
                    encode_push(&mut out, &msg);
                    pushed += msg.size();
                    // Batches stay bounded so a flood is written as it comes.
                    while pushed < PUSH_BATCH {
                        let Ok(msg) = pushes.try_recv() else { break };
                        encode_push(&mut out, &msg);
                        pushed += msg.size();
                    }
                }
                read = read_some(&shared.stats, &mut stream, &mut rbuf) => {
                    match read {
                        Ok(0) | Err(_) => break,
                        Ok(_) => handle.touch(),
                    }
                }
            }
        }
        if handle.killed.load(Relaxed) {
            break;
        }
        // Run every complete request in the buffer, then flush once.
        loop {
            if client.waiting.is_some() || client.close_after_reply {
                break;
            }
            let auth_required = !client.authenticated;
            match parser.next(&rbuf, auth_required) {
                Ok(Some(req)) => {
                    if req.is_empty() {
                        continue;
                    }
                    out.resp3 = client.resp3();
                    let mark = out.len();
                    execute(&shared, &mut client, &mut out, Args::new(req)).await;
                    if !client.channels.is_empty() || !client.patterns.is_empty() {
                        // What a command published to its own client (PUBLISH,
                        // keyspace events) precedes its reply, as in Redis,
                        // where it lands in the output buffer first.
                        pushed += splice_pushes(&mut out, mark, &mut pushes);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    out.error(&e.to_string());
                    client.close_after_reply = true;
                    break;
                }
            }
        }
        let consumed = parser.consumed();
        rbuf.advance(consumed);
        parser.discard(consumed);
        let stats = &shared.stats;
        stats
            .commands_processed
            .fetch_add(std::mem::take(&mut client.commands), Relaxed);
        if !out.is_empty() {
            if out_capacity > 0 && out.buf.capacity() > out_capacity {
                stats.reply_buffer_expands.fetch_add(1, Relaxed);
            }
            stats.recent_max_output.note(out.len() as u64);
            // A client that stops reading must not pin this task: a kill
            // (e.g. by the output buffer limit) ends the write.
            tokio::select! {
                biased;
                _ = &mut killed => break 'conn,
                written = stream.write_all(&out.buf) => {
                    if written.is_err() {
                        break 'conn;
                    }
                }
            }
            stats.writes_processed.fetch_add(1, Relaxed);
            stats.net_output_bytes.fetch_add(out.len() as u64, Relaxed);
            // Pushes count against the output limit until written.
            handle.push_bytes.fetch_sub(pushed, Relaxed);
            pushed = 0;
            out.buf.clear();
            if out.buf.capacity() > OUT_KEEP {
                out.buf = Vec::new();
                stats.reply_buffer_shrinks.fetch_add(1, Relaxed);
            }
        }
        // What this client's buffers hold, for INFO's mem_clients_normal.
        handle
            .buffer_bytes
            .store(rbuf.capacity() + out.buf.capacity(), Relaxed);
        if client.close_after_reply {
            break;
        }
    }
    let _ = stream.shutdown().await;
    if !client.watched.is_empty() {
        // Unwatching locks the keys' shards: not behind a script.
        while shared.scripting.busy.running_for_other(client.handle.id) {
            shared.scripting.busy.wait_end(client.handle.id, 0).await;
        }
    }
    cleanup(&shared, &mut client);
}

/// Runs one request: on this task, or on the script runner for scripts,
/// waiting (asynchronously) for another client's script where needed.
async fn execute(shared: &Arc<Shared>, client: &mut Client, out: &mut Reply, args: Args<'_>) {
    let mut owned: Option<OwnedArgs> = None;
    loop {
        let a = owned.as_ref().map_or(args, |o| o.args());
        match commands::dispatch(shared, client, out, a) {
            commands::Dispatched::Done => return,
            commands::Dispatched::WaitScript => {
                if owned.is_none() {
                    owned = Some(args.to_owned());
                }
                let threshold = shared.config.busy_reply_threshold();
                shared
                    .scripting
                    .busy
                    .wait_end(client.handle.id, threshold)
                    .await;
            }
            commands::Dispatched::ScriptRunner => {
                let job_args = owned.take().unwrap_or_else(|| args.to_owned());
                if run_on_runner(shared, client, out, job_args).await {
                    return;
                }
                // The runner found another script running: wait and retry.
                owned = Some(args.to_owned());
                let threshold = shared.config.busy_reply_threshold();
                shared
                    .scripting
                    .busy
                    .wait_end(client.handle.id, threshold)
                    .await;
            }
        }
    }
}

/// Moves the client to the script runner, dispatches `args` there and
/// takes it back; false if the runner asked to wait for another script.
async fn run_on_runner(
    shared: &Arc<Shared>,
    client: &mut Client,
    out: &mut Reply,
    args: OwnedArgs,
) -> bool {
    let handle = client.handle.clone();
    let moved = std::mem::replace(client, Client::new(handle.clone(), false));
    let moved_out = std::mem::take(out);
    let (tx, rx) = oneshot::channel();
    let s = shared.clone();
    shared.scripting.submit(Box::new(move || {
        let (mut c, mut o) = (moved, moved_out);
        let d = commands::dispatch(&s, &mut c, &mut o, args.args());
        let _ = tx.send((c, o, d));
    }));
    match rx.await {
        Ok((c, o, d)) => {
            *client = c;
            *out = o;
            d != commands::Dispatched::WaitScript
        }
        Err(_) => {
            // The script panicked: its client state is gone with it.
            tracing::error!("a script failed unexpectedly; closing its connection");
            out.error("ERR internal error while running the script");
            client.close_after_reply = true;
            true
        }
    }
}

/// Reads what the socket has into `rbuf`, counting the read and its bytes
/// for INFO (as Redis, before any command in them runs).
async fn read_some(
    stats: &Stats,
    stream: &mut TcpStream,
    rbuf: &mut BytesMut,
) -> std::io::Result<usize> {
    if rbuf.capacity() - rbuf.len() < READ_CHUNK / 4 {
        rbuf.reserve(READ_CHUNK);
    }
    let read = stream.read_buf(rbuf).await;
    stats.reads_processed.fetch_add(1, Relaxed);
    if let Ok(n) = read {
        stats.net_input_bytes.fetch_add(n as u64, Relaxed);
        stats.recent_max_input.note(rbuf.len() as u64);
    }
    read
}

/// Waits for a blocked command's reply, its timeout, a kill, or the client
/// going away. Bytes the client sends meanwhile are kept for later.
#[allow(clippy::too_many_arguments)]
async fn wait_blocked(
    shared: &Arc<Shared>,
    handle: &Arc<ClientHandle>,
    stream: &mut TcpStream,
    rbuf: &mut BytesMut,
    waiter: &Arc<Waiter>,
    rx: &mut oneshot::Receiver<Vec<u8>>,
    timeout: Option<Duration>,
    mut killed: Pin<&mut tokio::sync::futures::Notified<'_>>,
    mut stopping: Pin<&mut impl Future<Output = Result<(), RecvError>>>,
) -> Option<Vec<u8>> {
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
                    return Some(bytes);
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
                if !matches!(read, Ok(n) if n > 0) {
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
    let served = shared.blocking.cancel(shared, waiter, rx);
    if served.is_none() && unblocked == crate::client::UNBLOCK_ERROR {
        return Some(b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n".to_vec());
    }
    served
}

/// Encodes every queued push and inserts them at `mark`; returns their size.
fn splice_pushes(
    out: &mut Reply,
    mark: usize,
    pushes: &mut tokio::sync::mpsc::UnboundedReceiver<Push>,
) -> usize {
    let mut early = Reply {
        buf: Vec::new(),
        resp3: out.resp3,
    };
    let mut size = 0;
    while let Ok(msg) = pushes.try_recv() {
        encode_push(&mut early, &msg);
        size += msg.size();
    }
    if !early.is_empty() {
        out.buf.splice(mark..mark, early.buf);
    }
    size
}

fn encode_push(out: &mut Reply, msg: &Push) {
    match msg {
        Push::Message { channel, payload } => {
            out.push(3);
            out.bulk(b"message");
            out.bulk(channel);
            out.bulk(payload);
        }
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

fn cleanup(shared: &Shared, client: &mut Client) {
    let id = client.handle.id;
    if !client.channels.is_empty() || !client.patterns.is_empty() {
        shared.pubsub.remove_client(id);
    }
    shared.store.unwatch(&client.watched, &client.watch_flag);
    client.watched.clear();
    shared.clients.unregister(id);
}
