//! Connection commands: PING, ECHO, QUIT, HELLO, AUTH, SELECT, RESET, CLIENT.
//!
//! These change the calling connection's own state (protocol version,
//! database, name, authentication) or look at other connections through the
//! client registry.

use std::sync::atomic::Ordering::Relaxed;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, int_arg};
use crate::commands::Services;
use crate::util::{eq_ic, parse_i64};

const G: &str = "connection";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new(
        "ping",
        -1,
        FAST | SUBSCRIBED_OK,
        Keys::None,
        &(ping as Handler),
    )
    .doc(
        G,
        "1.0.0",
        "O(1)",
        "Returns the server's liveliness response.",
    )
    .syntax("[message]"),
    Command::new(
        "echo",
        2,
        LOADING | STALE | FAST,
        Keys::None,
        &(echo as Handler),
    )
    .doc(G, "1.0.0", "O(1)", "Returns the given string.")
    .syntax("message"),
    Command::new(
        "quit",
        -1,
        NOSCRIPT | LOADING | STALE | NO_AUTH | FAST | TX_CONTROL | SUBSCRIBED_OK | ALLOW_BUSY,
        Keys::None,
        &(quit as Handler),
    )
    .doc(G, "1.0.0", "O(1)", "Closes the connection."),
    Command::new(
        "hello",
        -1,
        NO_AUTH | FAST | NOSCRIPT | STALE | LOADING | ALLOW_BUSY,
        Keys::None,
        &(hello as Handler),
    )
    .doc(G, "6.0.0", "O(1)", "Handshakes with the Redis server.")
    .syntax("[protover [AUTH username password] [SETNAME clientname]]"),
    Command::new(
        "auth",
        -2,
        NO_AUTH | FAST | NOSCRIPT | STALE | LOADING | ALLOW_BUSY,
        Keys::None,
        &(auth as Handler),
    )
    .doc(
        G,
        "1.0.0",
        "O(N) where N is the number of passwords defined for the user",
        "Authenticates the connection.",
    )
    .syntax("[username] password"),
    Command::new(
        "select",
        2,
        FAST | LOADING | STALE,
        Keys::None,
        &(select as Handler),
    )
    .doc(G, "1.0.0", "O(1)", "Changes the selected database.")
    .syntax("index"),
    Command::new(
        "reset",
        1,
        NO_AUTH | FAST | NOSCRIPT | STALE | LOADING | TX_CONTROL | SUBSCRIBED_OK | ALLOW_BUSY,
        Keys::None,
        &(reset as Handler),
    )
    .doc(G, "6.2.0", "O(1)", "Resets the connection."),
    Command::new(
        "client",
        -2,
        0,
        Keys::None,
        &(super::server::container as Handler),
    )
    .doc(
        G,
        "2.4.0",
        "Depends on subcommand.",
        "A container for client connection commands.",
    )
    .subcommands(CLIENT),
];

static CLIENT: &[Command] = &[
    Command::new("id", 2, NOSCRIPT | LOADING | STALE, Keys::None, &(client_id as Handler)).doc(
        G,
        "5.0.0",
        "O(1)",
        "Returns the unique client ID of the connection.",
    ),
    Command::new(
        "setname",
        3,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_setname as Handler),
    )
    .doc(G, "2.6.9", "O(1)", "Sets the connection name.")
    .syntax("connection-name"),
    Command::new(
        "getname",
        2,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_getname as Handler),
    )
    .doc(G, "2.6.9", "O(1)", "Returns the name of the connection."),
    Command::new(
        "setinfo",
        4,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_setinfo as Handler),
    )
    .doc(
        G,
        "7.2.0",
        "O(1)",
        "Sets information specific to the client or connection.",
    )
    .syntax("LIB-NAME libname | LIB-VER libver"),
    Command::new(
        "info",
        2,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_info as Handler),
    )
    .doc(
        G,
        "6.2.0",
        "O(1)",
        "Returns information about the connection.",
    ),
    Command::new(
        "list",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_list as Handler),
    )
    .doc(
        G,
        "2.4.0",
        "O(N) where N is the number of client connections",
        "Lists open connections.",
    )
    .syntax("[TYPE NORMAL | MASTER | REPLICA | PUBSUB] [ID client-id [client-id ...]]"),
    Command::new(
        "kill",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_kill as Handler),
    )
    .doc(
        G,
        "2.4.0",
        "O(N) where N is the number of client connections",
        "Terminates open connections.",
    )
    .syntax("ip:port | [ID client-id] [ADDR ip:port] [LADDR ip:port] [SKIPME yes | no] [MAXAGE maxage]"),
    Command::new(
        "unblock",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_unblock as Handler),
    )
    .doc(
        G,
        "5.0.0",
        "O(log N) where N is the number of client connections",
        "Unblocks a client blocked by a blocking command from a different connection.",
    )
    .syntax("client-id [TIMEOUT | ERROR]"),
    Command::new(
        "no-evict",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_no_evict as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(1)",
        "Sets the client eviction mode of the connection.",
    )
    .syntax("ON | OFF"),
    Command::new(
        "no-touch",
        3,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_no_touch as Handler),
    )
    .doc(
        G,
        "7.2.0",
        "O(1)",
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    )
    .syntax("ON | OFF"),
    Command::new(
        "pause",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_pause as Handler),
    )
    .doc(
        G,
        "2.9.50",
        "O(1)",
        "Suspends commands processing.",
    )
    .syntax("timeout [WRITE | ALL]"),
    Command::new(
        "unpause",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_unpause as Handler),
    )
    .doc(
        G,
        "6.2.0",
        "O(N) Where N is the number of paused clients",
        "Resumes processing commands from paused clients.",
    ),
    Command::new(
        "reply",
        3,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_reply as Handler),
    )
    .doc(
        G,
        "3.2.0",
        "O(1)",
        "Instructs the server whether to reply to commands.",
    )
    .syntax("ON | OFF | SKIP"),
    Command::new(
        "tracking",
        -3,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_tracking as Handler),
    )
    .doc(
        G,
        "6.0.0",
        "O(1). Some options may introduce additional complexity.",
        "Controls server-assisted client-side caching for the connection.",
    )
    .syntax("ON | OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]"),
    Command::new(
        "caching",
        3,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_caching as Handler),
    )
    .doc(
        G,
        "6.0.0",
        "O(1)",
        "Instructs the server whether to track the keys in the next request.",
    )
    .syntax("YES | NO"),
    Command::new(
        "getredir",
        2,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_getredir as Handler),
    )
    .doc(
        G,
        "6.0.0",
        "O(1)",
        "Returns the client ID to which the connection's tracking notifications are redirected.",
    ),
    Command::new(
        "trackinginfo",
        2,
        NOSCRIPT | LOADING | STALE,
        Keys::None,
        &(client_trackinginfo as Handler),
    )
    .doc(
        G,
        "6.2.0",
        "O(1)",
        "Returns information about server-assisted client-side caching for the connection.",
    ),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(client_help as Handler)).doc(
        G,
        "5.0.0",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
];

fn ping(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 2 {
        return Err(Error::Static(
            "ERR wrong number of arguments for 'ping' command",
        ));
    }
    // RESP2 subscribed clients get PING as a pub/sub-style array.
    if ctx.client.in_subscribed_resp2() {
        ctx.out.array(2);
        ctx.out.bulk(b"pong");
        ctx.out.bulk(ctx.args.get(1));
    } else if ctx.argc() == 2 {
        ctx.out.bulk(ctx.args.get(1));
    } else {
        ctx.out.simple("PONG");
    }
    Ok(Done)
}

fn echo(ctx: &mut Ctx) -> CmdResult {
    ctx.out.bulk(ctx.args.get(1));
    Ok(Done)
}

fn quit(ctx: &mut Ctx) -> CmdResult {
    ctx.out.ok();
    Ok(Outcome::Close)
}

fn select(ctx: &mut Ctx) -> CmdResult {
    let db = int_arg(ctx.arg(1)).map_err(|_| Error::NotInteger)?;
    // A cluster node has one database (Redis checks before the range).
    if ctx.shared.cluster.is_some() && db != 0 {
        return Err(Error::Static("ERR SELECT is not allowed in cluster mode"));
    }
    if db < 0 || db as usize >= ctx.shared.config.databases {
        return Err(Error::Static("ERR DB index is out of range"));
    }
    if db != 0 {
        ctx.shared
            .stats
            .cluster_incompatible_ops
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    ctx.client.select(db as usize);
    ctx.out.ok();
    Ok(Done)
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// acl.c `ACLAuthenticateUser`: on success the connection runs as `user`
/// from now on; a failure is logged in the ACL log (reason `auth`).
fn authenticate(ctx: &mut Ctx, user: &[u8], pass: &[u8]) -> CmdResult {
    let acl = &ctx.shared.acl;
    let generation = acl.generation();
    if let Some(u) = acl.authenticate(user, pass) {
        ctx.client.authenticated = true;
        ctx.client.set_user(u, generation);
        return Ok(Done);
    }
    let context = if ctx.client.in_exec {
        crate::acl::log::Context::Multi
    } else {
        crate::acl::log::Context::Toplevel
    };
    super::acl::log_denial(
        ctx.shared,
        &ctx.client.handle,
        crate::acl::log::Reason::Auth,
        context,
        ctx.args.get(0),
        user,
    );
    Err(Error::Static(WRONGPASS))
}

/// AUTH [username] password.
fn auth(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(Error::Syntax);
    }
    ctx.redact(1);
    if ctx.argc() == 3 {
        ctx.redact(2);
    }
    let (user, pass): (&[u8], &[u8]) = if ctx.argc() == 3 {
        (ctx.args.get(1), ctx.args.get(2))
    } else {
        if ctx.shared.acl.default_user().nopass() {
            return Err(Error::Static(
                "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
            ));
        }
        (b"default", ctx.args.get(1))
    };
    authenticate(ctx, user, pass)?;
    ctx.out.ok();
    Ok(Done)
}

fn hello(ctx: &mut Ctx) -> CmdResult {
    let mut proto = None;
    let mut i = 1;
    if ctx.argc() >= 2 {
        let v = ctx.args.get(1);
        let n = int_arg(v)
            .map_err(|_| Error::Static("ERR Protocol version is not an integer or out of range"))?;
        if !(2..=3).contains(&n) {
            return Err(Error::Static("NOPROTO unsupported protocol version"));
        }
        proto = Some(n as u8);
        i = 2;
    }
    // Redis 7.2+: the options are read first (the last AUTH and the last
    // SETNAME count, every name is checked as it comes), then the client
    // authenticates once, then it is named.
    let mut setname = None;
    let mut auth = None;
    while i < ctx.argc() {
        let opt = ctx.args.get(i);
        let more = ctx.argc() - i - 1;
        if eq_ic(opt, "AUTH") && more >= 2 {
            ctx.redact(i + 1);
            ctx.redact(i + 2);
            auth = Some((i + 1, i + 2));
            i += 3;
        } else if eq_ic(opt, "SETNAME") && more >= 1 {
            validate_name(ctx.args.get(i + 1))?;
            setname = Some(ctx.args.get(i + 1));
            i += 2;
        } else {
            return Err(Error::Owned(format!(
                "ERR Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if let Some((user, pass)) = auth {
        let (user, pass) = (ctx.args.get(user), ctx.args.get(pass));
        authenticate(ctx, user, pass)?;
    }
    if !ctx.client.authenticated {
        return Err(Error::Static(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = setname {
        *ctx.client.handle.name.lock() = (!name.is_empty()).then(|| name.to_vec());
    }
    if let Some(p) = proto {
        ctx.client.handle.resp.store(p, Relaxed);
        ctx.out.resp3 = p == 3;
    }
    let out = &mut *ctx.out;
    out.map(7);
    out.bulk(b"server");
    out.bulk(b"redis");
    out.bulk(b"version");
    out.bulk(crate::version::REDIS_VERSION.as_bytes());
    out.bulk(b"proto");
    out.int(if out.resp3 { 3 } else { 2 });
    out.bulk(b"id");
    out.int(ctx.client.handle.id as i64);
    let cluster = ctx.shared.cluster.is_some();
    let replica = ctx.shared.replication.is_replica();
    let out = &mut *ctx.out;
    out.bulk(b"mode");
    out.bulk(if cluster {
        &b"cluster"[..]
    } else {
        b"standalone"
    });
    out.bulk(b"role");
    out.bulk(if replica { &b"replica"[..] } else { b"master" });
    out.bulk(b"modules");
    out.array(0);
    Ok(Done)
}

fn reset(ctx: &mut Ctx) -> CmdResult {
    let c = &mut *ctx.client;
    c.multi = None;
    c.multi_error = false;
    c.asking = false;
    c.cluster_readonly = false;
    c.handle.multi.store(-1, Relaxed);
    c.handle.multi_mem.store(0, Relaxed);
    ctx.shared.store.unwatch(&c.watched, &c.watch_flag);
    c.watched.clear();
    c.handle.watching.store(0, Relaxed);
    c.watch_flag.store(false, Relaxed);
    if c.subscribed() {
        ctx.shared.pubsub.remove_client(c.handle.id);
        c.channels.clear();
        c.patterns.clear();
        c.shard_channels.clear();
        c.handle.subs.store(0, Relaxed);
        c.handle.psubs.store(0, Relaxed);
        c.handle.ssubs.store(0, Relaxed);
    }
    ctx.shared.tracking.disable(&c.handle);
    ctx.shared.monitors.remove(c.handle.id);
    c.select(0);
    c.handle.resp.store(2, Relaxed);
    ctx.out.resp3 = false;
    *c.handle.name.lock() = None;
    // lib-name and lib-ver stay: they describe the library, not the state.
    c.handle.no_evict.store(false, Relaxed);
    c.handle.no_touch.store(false, Relaxed);
    // networking.c `clientSetDefaultAuth`.
    let acl = &ctx.shared.acl;
    let default = acl.default_user();
    c.authenticated = default.nopass() && default.enabled();
    c.set_user(default, acl.generation());
    ctx.out.simple("RESET");
    Ok(Done)
}

fn client_id(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(ctx.client.handle.id as i64);
    Ok(Done)
}

fn validate_name(name: &[u8]) -> CmdResult {
    if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Error::Static(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    Ok(Done)
}

fn client_setname(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.args.get(2);
    validate_name(name)?;
    *ctx.client.handle.name.lock() = (!name.is_empty()).then(|| name.to_vec());
    ctx.out.ok();
    Ok(Done)
}

fn client_getname(ctx: &mut Ctx) -> CmdResult {
    match &*ctx.client.handle.name.lock() {
        Some(n) => ctx.out.bulk(n),
        None => ctx.out.null(),
    }
    Ok(Done)
}

fn client_setinfo(ctx: &mut Ctx) -> CmdResult {
    let (attr, value) = (ctx.args.get(2), ctx.args.get(3));
    let slot = if eq_ic(attr, "lib-name") {
        &ctx.client.handle.lib_name
    } else if eq_ic(attr, "lib-ver") {
        &ctx.client.handle.lib_ver
    } else {
        return Err(Error::Owned(format!(
            "ERR Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    };
    if value.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
        return Err(Error::Owned(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr).to_ascii_lowercase()
        )));
    }
    *slot.lock() = (!value.is_empty()).then(|| value.to_vec());
    ctx.out.ok();
    Ok(Done)
}

/// A client's CLIENT LIST line without its newline (networking.c
/// `catClientInfoString`), as the ACL log records it (without the
/// denied command's `argv-mem`, which the log does not need).
pub(crate) fn client_info_line(shared: &Services, c: &crate::clients::ClientHandle) -> String {
    let mut s = String::new();
    client_line(shared, c, 0, &mut s);
    s.pop();
    s
}

/// The running command's argument bytes when `c` is the caller (CLIENT
/// LIST's `argv-mem`; other clients are between commands).
fn argv_mem(ctx: &Ctx, c: &crate::clients::ClientHandle) -> usize {
    if c.id == ctx.client.handle.id {
        ctx.args.iter().map(|a| a.len()).sum()
    } else {
        0
    }
}

/// One CLIENT LIST / CLIENT INFO line, with the fields Redis 7.0 prints.
fn client_line(
    shared: &Services,
    c: &crate::clients::ClientHandle,
    argv_mem: usize,
    out: &mut String,
) {
    use std::fmt::Write;
    let name = c
        .name
        .lock()
        .as_ref()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    let cmd_ptr = c.last_cmd_ptr.load(Relaxed);
    let cmd = super::all_commands()
        .flat_map(|p| {
            std::iter::once((p, None)).chain(p.subcommands.iter().map(move |s| (s, Some(p))))
        })
        .find(|(s, _)| *s as *const Command as usize == cmd_ptr)
        .map(|(s, p)| match p {
            Some(p) => format!("{}|{}", p.name, s.name),
            None => s.name.to_string(),
        })
        .unwrap_or_else(|| "NULL".into());
    let subscribed = c.subscriptions() > 0;
    let multi = c.multi.load(Relaxed);
    // Redis prints one letter per flag, in this order, or N for none.
    let mut flags = String::new();
    let role = c.role.load(Relaxed);
    if shared.monitors.is_monitor(c.id) {
        flags.push('O');
    } else if role == crate::clients::ROLE_REPLICA {
        flags.push('S');
    }
    if role == crate::clients::ROLE_MASTER {
        flags.push('M');
    }
    if subscribed {
        flags.push('P');
    }
    if multi >= 0 {
        flags.push('x');
    }
    if c.blocked.load(Relaxed) || c.paused.load(Relaxed) {
        flags.push('b');
    }
    let tracking = c.tracking.load(Relaxed);
    if tracking & crate::tracking::ON != 0 {
        flags.push('t');
    }
    if tracking & crate::tracking::BROKEN_REDIR != 0 {
        flags.push('R');
    }
    if tracking & crate::tracking::BCAST != 0 {
        flags.push('B');
    }
    if c.unix {
        flags.push('U');
    }
    if c.no_evict.load(Relaxed) {
        flags.push('e');
    }
    if c.no_touch.load(Relaxed) {
        flags.push('T');
    }
    if c.rdb_channel.load(Relaxed) {
        flags.push('C');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    // The fields Redis 8.0.2 prints, in its order (`io-thread` is 0, the
    // main thread's, as in a Redis without I/O threads). Memory figures are this connection's buffers: the
    // request bytes not yet run (the running request included, as Redis
    // counts it), the read buffer's spare room, the running command's
    // arguments, MULTI's queue, the reply buffer and unwritten pushes.
    let qbuf = c.qbuf.load(Relaxed);
    let qbuf_free = c.qbuf_free.load(Relaxed);
    let rbs = c.reply_buffer();
    let omem = c.output_buffer_usage();
    let oll = usize::from(omem > 0);
    let redir = if tracking & crate::tracking::ON != 0 {
        c.tracking_redirect.load(Relaxed) as i64
    } else {
        -1
    };
    let user = String::from_utf8_lossy(&c.user.lock()).into_owned();
    let lib = |v: &parking_lot::Mutex<Option<Vec<u8>>>| {
        v.lock()
            .as_ref()
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} watch={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl=0 oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={} io-thread=0",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        name,
        c.age_secs(),
        c.idle_secs(),
        flags,
        c.db.load(Relaxed),
        c.subs.load(Relaxed),
        c.psubs.load(Relaxed),
        c.ssubs.load(Relaxed),
        multi,
        c.watching.load(Relaxed),
        qbuf,
        qbuf_free,
        argv_mem,
        c.multi_mem.load(Relaxed),
        rbs,
        rbs,
        oll,
        omem,
        c.memory() + argv_mem,
        cmd,
        user,
        redir,
        c.resp.load(Relaxed),
        lib(&c.lib_name),
        lib(&c.lib_ver),
    );
}

fn client_info(ctx: &mut Ctx) -> CmdResult {
    let mut s = String::new();
    client_line(
        ctx.shared,
        &ctx.client.handle,
        argv_mem(ctx, &ctx.client.handle),
        &mut s,
    );
    ctx.out.verbatim(s.as_bytes());
    Ok(Done)
}

/// Redis's client types (`getClientTypeByName`); zwindow has no master or
/// replica connections, so those types match no client.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClientType {
    Normal,
    Replica,
    Pubsub,
    Master,
}

fn client_type(name: &[u8]) -> Result<ClientType, Error> {
    Ok(if eq_ic(name, "normal") {
        ClientType::Normal
    } else if eq_ic(name, "slave") || eq_ic(name, "replica") {
        ClientType::Replica
    } else if eq_ic(name, "pubsub") {
        ClientType::Pubsub
    } else if eq_ic(name, "master") {
        ClientType::Master
    } else {
        return Err(Error::Owned(format!(
            "ERR Unknown client type '{}'",
            String::from_utf8_lossy(name)
        )));
    })
}

/// Redis's `getClientType`: a subscribed client is `pubsub` (a MONITOR
/// client is `normal`).
fn type_of(c: &crate::clients::ClientHandle) -> ClientType {
    let role = c.role.load(Relaxed);
    if role == crate::clients::ROLE_REPLICA {
        ClientType::Replica
    } else if role == crate::clients::ROLE_MASTER {
        ClientType::Master
    } else if c.subscriptions() > 0 {
        ClientType::Pubsub
    } else {
        ClientType::Normal
    }
}

/// CLIENT LIST [TYPE t] | [ID id …]: as 7.0, TYPE only alone, and IDs
/// listed in the order given (unknown ones skipped).
fn client_list(ctx: &mut Ctx) -> CmdResult {
    let mut s = String::new();
    let argc = ctx.argc();
    if argc == 4 && eq_ic(ctx.args.get(2), "type") {
        let t = client_type(ctx.args.get(3))?;
        for c in ctx.shared.clients.all() {
            if type_of(&c) == t {
                client_line(ctx.shared, &c, argv_mem(ctx, &c), &mut s);
            }
        }
    } else if argc > 3 && eq_ic(ctx.args.get(2), "id") {
        let mut ids = Vec::with_capacity(argc - 3);
        for a in ctx.args.iter().skip(3) {
            ids.push(int_arg(a).map_err(|_| Error::Static("ERR Invalid client ID"))?);
        }
        for id in ids {
            if let Some(c) = u64::try_from(id)
                .ok()
                .and_then(|id| ctx.shared.clients.get(id))
            {
                client_line(ctx.shared, &c, argv_mem(ctx, &c), &mut s);
            }
        }
    } else if argc != 2 {
        return Err(Error::Syntax);
    } else {
        for c in ctx.shared.clients.all() {
            client_line(ctx.shared, &c, argv_mem(ctx, &c), &mut s);
        }
    }
    ctx.out.verbatim(s.as_bytes());
    Ok(Done)
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 if the client was blocked and is
/// now released (with its timeout reply or `-UNBLOCKED`), 0 otherwise.
fn client_unblock(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 4 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let id = int_arg(ctx.args.get(2))?;
    let how = match ctx.argc() {
        3 => crate::clients::UNBLOCK_TIMEOUT,
        _ if eq_ic(ctx.args.get(3), "TIMEOUT") => crate::clients::UNBLOCK_TIMEOUT,
        _ if eq_ic(ctx.args.get(3), "ERROR") => crate::clients::UNBLOCK_ERROR,
        _ => {
            return Err(Error::Static(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    };
    let done = u64::try_from(id)
        .ok()
        .and_then(|id| ctx.shared.clients.get(id))
        .is_some_and(|c| c.request_unblock(how));
    ctx.out.int(done as i64);
    Ok(Done)
}

/// CLIENT KILL ip:port | [ID id] [TYPE t] [USER u] [ADDR ip:port]
/// [LADDR ip:port] [SKIPME yes|no] …, as Redis 7.0's `clientCommand`.
fn client_kill(ctx: &mut Ctx) -> CmdResult {
    let me = ctx.client.handle.id;
    let argc = ctx.argc();
    let (mut id, mut kind, mut addr, mut laddr, mut user) = (None, None, None, None, None);
    let mut max_age = None;
    let mut skipme = true;
    if argc == 3 {
        // The old form, which may kill the caller itself.
        addr = Some(ctx.args.get(2));
        skipme = false;
    } else {
        let mut i = 2;
        while i < argc {
            if i + 1 >= argc {
                return Err(Error::Syntax);
            }
            let (opt, val) = (ctx.args.get(i), ctx.args.get(i + 1));
            if eq_ic(opt, "id") {
                match int_arg(val) {
                    Ok(n) if n > 0 => id = Some(n as u64),
                    _ => return Err(Error::Static("ERR client-id should be greater than 0")),
                }
            } else if eq_ic(opt, "maxage") {
                match parse_i64(val) {
                    Some(n) if n > 0 => max_age = Some(n as u64),
                    Some(_) => return Err(Error::Static("ERR maxage should be greater than 0")),
                    None => {
                        return Err(Error::Static(
                            "ERR maxage is not an integer or out of range",
                        ));
                    }
                }
            } else if eq_ic(opt, "type") {
                kind = Some(client_type(val)?);
            } else if eq_ic(opt, "addr") {
                addr = Some(val);
            } else if eq_ic(opt, "laddr") {
                laddr = Some(val);
            } else if eq_ic(opt, "user") {
                if ctx.shared.acl.get(val).is_none() {
                    return Err(Error::Raw([b"ERR No such user '", val, b"'"].concat()));
                }
                user = Some(val);
            } else if eq_ic(opt, "skipme") {
                skipme = if eq_ic(val, "yes") {
                    true
                } else if eq_ic(val, "no") {
                    false
                } else {
                    return Err(Error::Syntax);
                };
            } else {
                return Err(Error::Syntax);
            }
            i += 2;
        }
    }
    let mut killed = 0;
    let mut outcome = Done;
    for c in ctx.shared.clients.all() {
        if addr.is_some_and(|a| a != c.addr.as_bytes())
            || laddr.is_some_and(|a| a != c.laddr.as_bytes())
            || kind.is_some_and(|t| t != type_of(&c))
            || id.is_some_and(|id| id != c.id)
            || user.is_some_and(|u| u != c.user.lock().as_slice())
            || (c.id == me && skipme)
            || max_age.is_some_and(|a| c.age_secs() < a)
        {
            continue;
        }
        if c.id == me {
            outcome = Outcome::Close;
        } else {
            c.kill();
            ctx.shared
                .replication
                .detach_client(c.id, ctx.shared.clock.now_ms() / 1000);
        }
        killed += 1;
    }
    if argc == 3 {
        if killed == 0 {
            return Err(Error::Static("ERR No such client"));
        }
        ctx.out.ok();
    } else {
        ctx.out.int(killed);
    }
    Ok(outcome)
}

/// CLIENT NO-EVICT ON|OFF: the flag CLIENT LIST shows as `e` (zwindow
/// never evicts clients for memory, so nothing else reads it).
fn client_no_evict(ctx: &mut Ctx) -> CmdResult {
    let v = ctx.args.get(2);
    let on = if eq_ic(v, "on") {
        true
    } else if eq_ic(v, "off") {
        false
    } else {
        return Err(Error::Syntax);
    };
    ctx.client.handle.no_evict.store(on, Relaxed);
    ctx.out.ok();
    Ok(Done)
}

/// CLIENT NO-TOUCH ON|OFF: the client's commands, TOUCH excepted, leave
/// the LRU/LFU of the keys they access as it was (`T` in CLIENT LIST).
fn client_no_touch(ctx: &mut Ctx) -> CmdResult {
    let v = ctx.args.get(2);
    let on = if eq_ic(v, "on") {
        true
    } else if eq_ic(v, "off") {
        false
    } else {
        return Err(Error::Syntax);
    };
    ctx.client.handle.no_touch.store(on, Relaxed);
    ctx.out.ok();
    Ok(Done)
}

/// CLIENT PAUSE timeout [WRITE|ALL]: the mode is checked before the
/// timeout, as in Redis.
fn client_pause(ctx: &mut Ctx) -> CmdResult {
    use crate::pause::{ALL, WRITE};
    if ctx.argc() > 4 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let mut mode = ALL;
    if ctx.argc() == 4 {
        let m = ctx.args.get(3);
        if eq_ic(m, "write") {
            mode = WRITE;
        } else if !eq_ic(m, "all") {
            return Err(Error::Static("ERR CLIENT PAUSE mode must be WRITE or ALL"));
        }
    }
    let now = ctx.shared.clock.now_ms();
    let ms = super::parse_ms_timeout(ctx.args.get(2), now)?;
    let end = if ms > 0 {
        (now as i64).saturating_add(ms) as u64
    } else {
        0
    };
    ctx.shared.pause.pause(mode, end);
    ctx.out.ok();
    Ok(Done)
}

fn client_unpause(ctx: &mut Ctx) -> CmdResult {
    ctx.shared.pause.unpause();
    ctx.out.ok();
    Ok(Done)
}

/// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing themselves; the
/// execution layer drops the replies they silence (pushes still go out).
fn client_reply(ctx: &mut Ctx) -> CmdResult {
    use crate::commands::session::ReplyMode;
    let v = ctx.args.get(2);
    let c = &mut *ctx.client;
    if eq_ic(v, "on") {
        c.reply = ReplyMode::On;
        ctx.out.ok();
    } else if eq_ic(v, "off") {
        c.reply = ReplyMode::Off;
    } else if eq_ic(v, "skip") {
        if c.reply != ReplyMode::Off {
            c.reply = ReplyMode::SkipNext;
        }
    } else {
        return Err(Error::Syntax);
    }
    Ok(Done)
}

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p …] [BCAST] [OPTIN]
/// [OPTOUT] [NOLOOP], with Redis 7.0's checks in its order.
fn client_tracking(ctx: &mut Ctx) -> CmdResult {
    use crate::tracking::{BCAST, NOLOOP, ON, OPTIN, OPTOUT};
    let mut redirect = 0u64;
    let mut options = 0u32;
    let mut prefixes: Vec<&[u8]> = Vec::new();
    let mut j = 3;
    while j < ctx.argc() {
        let opt = ctx.args.get(j);
        let more = j + 1 < ctx.argc();
        if eq_ic(opt, "redirect") && more {
            j += 1;
            if redirect != 0 {
                return Err(Error::Static(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = int_arg(ctx.args.get(j))?;
            let found = u64::try_from(id)
                .ok()
                .and_then(|id| ctx.shared.clients.get(id));
            if found.is_none() {
                return Err(Error::Static(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            redirect = id as u64;
        } else if eq_ic(opt, "bcast") {
            options |= BCAST;
        } else if eq_ic(opt, "optin") {
            options |= OPTIN;
        } else if eq_ic(opt, "optout") {
            options |= OPTOUT;
        } else if eq_ic(opt, "noloop") {
            options |= NOLOOP;
        } else if eq_ic(opt, "prefix") && more {
            j += 1;
            prefixes.push(ctx.args.get(j));
        } else {
            return Err(Error::Syntax);
        }
        j += 1;
    }
    let h = &ctx.client.handle;
    let tracking = &ctx.shared.tracking;
    let mode = ctx.args.get(2);
    if eq_ic(mode, "on") {
        let cur = h.tracking.load(Relaxed);
        if options & BCAST == 0 && !prefixes.is_empty() {
            return Err(Error::Static(
                "ERR PREFIX option requires BCAST mode to be enabled",
            ));
        }
        if cur & ON != 0 && (cur & BCAST != 0) != (options & BCAST != 0) {
            return Err(Error::Static(
                "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        if options & BCAST != 0 && options & (OPTIN | OPTOUT) != 0 {
            return Err(Error::Static(
                "ERR OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if options & OPTIN != 0 && options & OPTOUT != 0 {
            return Err(Error::Static(
                "ERR You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if (options & OPTIN != 0 && cur & OPTOUT != 0)
            || (options & OPTOUT != 0 && cur & OPTIN != 0)
        {
            return Err(Error::Static(
                "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        if options & BCAST != 0
            && let Some(msg) = tracking.prefix_collision(h.id, &prefixes)
        {
            return Err(Error::Owned(msg));
        }
        tracking.enable(h, redirect, options, &prefixes);
    } else if eq_ic(mode, "off") {
        tracking.disable(h);
    } else {
        return Err(Error::Syntax);
    }
    ctx.out.ok();
    Ok(Done)
}

fn client_caching(ctx: &mut Ctx) -> CmdResult {
    use crate::tracking::{CACHING, ON, OPTIN, OPTOUT};
    let h = &ctx.client.handle;
    let f = h.tracking.load(Relaxed);
    if f & ON == 0 {
        return Err(Error::Static(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    }
    let opt = ctx.args.get(2);
    if eq_ic(opt, "yes") {
        if f & OPTIN == 0 {
            return Err(Error::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if eq_ic(opt, "no") {
        if f & OPTOUT == 0 {
            return Err(Error::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(Error::Syntax);
    }
    h.tracking.fetch_or(CACHING, Relaxed);
    ctx.out.ok();
    Ok(Done)
}

fn client_getredir(ctx: &mut Ctx) -> CmdResult {
    let h = &ctx.client.handle;
    if h.tracking.load(Relaxed) & crate::tracking::ON != 0 {
        ctx.out.int(h.tracking_redirect.load(Relaxed) as i64);
    } else {
        ctx.out.int(-1);
    }
    Ok(Done)
}

fn client_trackinginfo(ctx: &mut Ctx) -> CmdResult {
    use crate::tracking::{BCAST, BROKEN_REDIR, CACHING, NOLOOP, ON, OPTIN, OPTOUT};
    let h = &ctx.client.handle;
    let f = h.tracking.load(Relaxed);
    let mut flags: Vec<&[u8]> = vec![if f & ON != 0 { b"on" } else { b"off" }];
    if f & BCAST != 0 {
        flags.push(b"bcast");
    }
    if f & OPTIN != 0 {
        flags.push(b"optin");
        if f & CACHING != 0 {
            flags.push(b"caching-yes");
        }
    }
    if f & OPTOUT != 0 {
        flags.push(b"optout");
        if f & CACHING != 0 {
            flags.push(b"caching-no");
        }
    }
    if f & NOLOOP != 0 {
        flags.push(b"noloop");
    }
    if f & BROKEN_REDIR != 0 {
        flags.push(b"broken_redirect");
    }
    let prefixes = ctx.shared.tracking.prefixes_of(h.id);
    let out = &mut *ctx.out;
    out.map(3);
    out.bulk(b"flags");
    out.set(flags.len());
    for fl in flags {
        out.bulk(fl);
    }
    out.bulk(b"redirect");
    if f & ON != 0 {
        out.int(h.tracking_redirect.load(Relaxed) as i64);
    } else {
        out.int(-1);
    }
    out.bulk(b"prefixes");
    out.array(prefixes.len());
    for p in &prefixes {
        out.bulk(p);
    }
    Ok(Done)
}

fn client_help(ctx: &mut Ctx) -> CmdResult {
    // Redis 8.0.2's text (`clientCommand`'s help).
    super::observability::reply_help(
        ctx,
        &[
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "    * ID <client-id>",
            "      Kill connections by client id.",
            "    * MAXAGE <maxage>",
            "      Kill connections older than the specified age.",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "SETINFO <option> <value>",
            "    Set client meta attr. Options are:",
            "    * LIB-NAME: the client lib name.",
            "    * LIB-VER: the client lib version.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            "NO-TOUCH (ON|OFF)",
            "    Will not touch LRU/LFU stats when this mode is on.",
        ],
    );
    Ok(Done)
}
