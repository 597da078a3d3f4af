//! ACL SETUSER/GETUSER/DELUSER/LIST/USERS/WHOAMI/CAT/LOG/DRYRUN/GENPASS/
//! LOAD/SAVE/HELP, with Redis 7.0's replies (acl.c `aclCommand`).
//!
//! The users and their rules are [`crate::acl`]'s; what these handlers add
//! is the reply shapes and the effect on connected clients: a deleted (or
//! reloaded) user's clients are disconnected, and a user losing channel
//! permissions loses the subscribers that no longer fit.
//!
//! The check of a client's command against its user ([`acl_check`]) is
//! here too, with the ACL log entry a denial leaves: the execution layer
//! runs it before every command, EXEC again for each queued one, a
//! script for each `redis.call`.

use super::flags::*;
use super::{Client, CmdResult, Command, Ctx, Done, Error, Handler, Keys, Outcome, resolve};
use crate::acl::User;
use crate::acl::catalog::{Catalog, category_bit, category_names};
use crate::acl::log::{Context, Reason};
use crate::acl::user::{Denied, has_spaces};
use crate::clients::ClientHandle;
use crate::commands::Services;
use crate::protocol::Args;
use crate::util::eq_ic;

const G: &str = "server";
const ADM: u32 = ADMIN | NOSCRIPT | LOADING | STALE;
const PLAIN: u32 = NOSCRIPT | LOADING | STALE;

pub(crate) static COMMANDS: &[Command] = &[Command::new(
    "acl",
    -2,
    0,
    Keys::None,
    &(super::server::container as Handler),
)
.doc(
    G,
    "6.0.0",
    "Depends on subcommand.",
    "A container for Access List Control commands ",
)
.subcommands(ACL)];

static ACL: &[Command] = &[
    Command::new("cat", -2, PLAIN, Keys::None, &(cat as Handler))
        .doc(
            G,
            "6.0.0",
            "O(1) since the categories and commands are a fixed set.",
            "List the ACL categories or the commands inside a category",
        )
        .syntax("[categoryname]"),
    Command::new("deluser", -3, ADM, Keys::None, &(deluser as Handler))
        .doc(
            G,
            "6.0.0",
            "O(1) amortized time considering the typical user.",
            "Remove the specified ACL users and the associated rules",
        )
        .syntax("username [username ...]"),
    Command::new("dryrun", -4, ADM, Keys::None, &(dryrun as Handler))
        .doc(
            G,
            "7.0.0",
            "O(1).",
            "Returns whether the user can execute the given command without executing the command.",
        )
        .syntax("username command [arg [arg ...]]"),
    Command::new("genpass", -2, PLAIN, Keys::None, &(genpass as Handler))
        .doc(
            G,
            "6.0.0",
            "O(1)",
            "Generate a pseudorandom secure password to use for ACL users",
        )
        .syntax("[bits]"),
    Command::new("getuser", 3, ADM, Keys::None, &(getuser as Handler))
        .doc(
            G,
            "6.0.0",
            "O(N). Where N is the number of password, command and pattern rules that the user has.",
            "Get the rules for a specific ACL user",
        )
        .syntax("username"),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(help as Handler)).doc(
        G,
        "6.0.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    ),
    Command::new("list", 2, ADM, Keys::None, &(list as Handler)).doc(
        G,
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "List the current ACL rules in ACL config file format",
    ),
    Command::new("load", 2, ADM, Keys::None, &(load as Handler)).doc(
        G,
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Reload the ACLs from the configured ACL file",
    ),
    Command::new("log", -2, ADM, Keys::None, &(log as Handler))
        .doc(
            G,
            "6.0.0",
            "O(N) with N being the number of entries shown.",
            "List latest events denied because of ACLs in place",
        )
        .syntax("[count | RESET]"),
    Command::new("save", 2, ADM, Keys::None, &(save as Handler)).doc(
        G,
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "Save the current ACL rules in the configured ACL file",
    ),
    Command::new("setuser", -3, ADM, Keys::None, &(setuser as Handler))
        .doc(
            G,
            "6.0.0",
            "O(N). Where N is the number of rules provided.",
            "Modify or create the rules for a specific ACL user",
        )
        .syntax("username [rule [rule ...]]"),
    Command::new("users", 2, ADM, Keys::None, &(users as Handler)).doc(
        G,
        "6.0.0",
        "O(N). Where N is the number of configured users.",
        "List the username of all the configured ACL rules",
    ),
    Command::new("whoami", 2, PLAIN, Keys::None, &(whoami as Handler)).doc(
        G,
        "6.0.0",
        "O(1)",
        "Return the name of the user associated to the current connection",
    ),
];

fn setuser(ctx: &mut Ctx) -> CmdResult {
    // Redis hides the user's name and rules from the slow log and
    // MONITOR before it parses them, so a refused SETUSER leaks nothing
    // either.
    for i in 2..ctx.argc() {
        ctx.redact(i);
    }
    let name = ctx.args.get(2);
    if has_spaces(name) {
        return Err(Error::Static(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let ops: Vec<&[u8]> = ctx.args.iter().skip(3).collect();
    let all_channels = ctx.shared.config.acl_pubsub_all();
    let (before, after) = ctx
        .shared
        .acl
        .set_user(name, &ops, all_channels)
        .map_err(Error::Raw)?;
    let mut outcome = Done;
    if let Some(before) = before {
        outcome = kill_pubsub_clients_if_needed(ctx, &before, &after);
    }
    ctx.out.ok();
    Ok(outcome)
}

/// acl.c `ACLKillPubsubClientsIfNeeded`: when a user's channel patterns no
/// longer cover what they did, its subscribers whose subscriptions fall
/// outside the new patterns are disconnected; Close when the caller is one
/// of them (it gets its OK first, as Redis frees it asynchronously).
fn kill_pubsub_clients_if_needed(ctx: &Ctx, before: &User, after: &User) -> Outcome {
    if after.all_channels() {
        return Done;
    }
    let upcoming: Vec<&[u8]> = after.channel_patterns().collect();
    let superset =
        !before.all_channels() && before.channel_patterns().all(|p| upcoming.contains(&p));
    if superset {
        return Done;
    }
    let fits = |channel: &[u8], is_pattern: bool| {
        upcoming.iter().any(|p| {
            if is_pattern {
                *p == channel
            } else {
                crate::util::glob_match(p, channel, false)
            }
        })
    };
    let mut outcome = Done;
    for c in ctx.shared.clients.all() {
        if *c.user.lock() != before.name() || c.subscriptions() == 0 {
            continue;
        }
        let (channels, patterns) = ctx.shared.pubsub.subscriptions_of(c.id);
        let kill =
            patterns.iter().any(|p| !fits(p, true)) || channels.iter().any(|ch| !fits(ch, false));
        if kill {
            if c.id == ctx.client.handle.id {
                outcome = Outcome::Close;
            } else {
                c.kill();
            }
        }
    }
    outcome
}

/// Disconnects the clients authenticated as one of `names`; Close when the
/// caller is one of them (it gets its reply first).
fn kill_users_clients(ctx: &Ctx, names: &[Vec<u8>]) -> Outcome {
    let me = ctx.client.handle.id;
    let mut outcome = Done;
    for c in ctx.shared.clients.all() {
        if names.iter().any(|n| *n == *c.user.lock()) {
            if c.id == me {
                outcome = Outcome::Close;
            } else {
                c.kill();
            }
        }
    }
    outcome
}

fn deluser(ctx: &mut Ctx) -> CmdResult {
    // Redis 7.2+ hides the user names too (SLOWLOG, MONITOR).
    for i in 2..ctx.argc() {
        ctx.redact(i);
    }
    let names: Vec<&[u8]> = ctx.args.iter().skip(2).collect();
    if names.iter().any(|n| *n == b"default") {
        return Err(Error::Static("ERR The 'default' user cannot be removed"));
    }
    let gone = ctx.shared.acl.del_users(&names);
    ctx.out.int(gone.len() as i64);
    Ok(kill_users_clients(ctx, &gone))
}

/// One selector's `commands`, `keys` and `channels` fields.
fn write_selector(ctx: &mut Ctx, s: &crate::acl::user::Selector) {
    ctx.out.bulk(b"commands");
    ctx.out.bulk(&s.commands_text());
    ctx.out.bulk(b"keys");
    ctx.out.bulk(&s.keys_text());
    ctx.out.bulk(b"channels");
    ctx.out.bulk(&s.channels_text());
}

fn getuser(ctx: &mut Ctx) -> CmdResult {
    ctx.redact(2);
    let Some(u) = ctx.shared.acl.get(ctx.args.get(2)) else {
        ctx.out.null();
        return Ok(Done);
    };
    ctx.out.map(6);
    ctx.out.bulk(b"flags");
    let flags = u.flag_names();
    ctx.out.set(flags.len());
    for f in flags {
        ctx.out.bulk(f.as_bytes());
    }
    ctx.out.bulk(b"passwords");
    ctx.out.array(u.passwords().len());
    for p in u.passwords() {
        ctx.out.bulk(p.as_bytes());
    }
    write_selector(ctx, u.root());
    ctx.out.bulk(b"selectors");
    ctx.out.array(u.extra_selectors().len());
    for s in u.extra_selectors() {
        ctx.out.map(3);
        write_selector(ctx, s);
    }
    Ok(Done)
}

fn list(ctx: &mut Ctx) -> CmdResult {
    let users = ctx.shared.acl.all();
    ctx.out.array(users.len());
    for u in users {
        let mut line = b"user ".to_vec();
        line.extend_from_slice(u.name());
        line.push(b' ');
        line.extend(u.describe());
        ctx.out.bulk(&line);
    }
    Ok(Done)
}

fn users(ctx: &mut Ctx) -> CmdResult {
    let users = ctx.shared.acl.all();
    ctx.out.array(users.len());
    for u in users {
        ctx.out.bulk(u.name());
    }
    Ok(Done)
}

fn whoami(ctx: &mut Ctx) -> CmdResult {
    match &ctx.client.user {
        Some(u) => ctx.out.bulk(u.name()),
        None => ctx.out.null(),
    }
    Ok(Done)
}

const NO_ACLFILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn load(ctx: &mut Ctx) -> CmdResult {
    let path = &ctx.shared.config.aclfile;
    if path.is_empty() {
        return Err(Error::Static(NO_ACLFILE));
    }
    let all_channels = ctx.shared.config.acl_pubsub_all();
    let replaced = ctx
        .shared
        .acl
        .load_file(path, all_channels)
        .map_err(|e| Error::Owned(format!("ERR {e}")))?;
    ctx.out.ok();
    // Clients of a user the file still has keep their connection (they
    // move to the new user at their next command), unless their
    // subscriptions are no longer allowed; those of a vanished user go.
    let mut outcome = Done;
    let mut gone = Vec::new();
    for (before, after) in &replaced {
        match after {
            Some(after) => {
                if matches!(
                    kill_pubsub_clients_if_needed(ctx, before, after),
                    Outcome::Close
                ) {
                    outcome = Outcome::Close;
                }
            }
            None => gone.push(before.name().to_vec()),
        }
    }
    if matches!(kill_users_clients(ctx, &gone), Outcome::Close) {
        outcome = Outcome::Close;
    }
    Ok(outcome)
}

fn save(ctx: &mut Ctx) -> CmdResult {
    let path = &ctx.shared.config.aclfile;
    if path.is_empty() {
        return Err(Error::Static(NO_ACLFILE));
    }
    ctx.shared.acl.save_file(path).map_err(|_| {
        Error::Static(
            "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
        )
    })?;
    ctx.out.ok();
    Ok(Done)
}

fn cat(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() == 2 {
        ctx.out.array(category_names().count());
        for c in category_names() {
            ctx.out.bulk(c.as_bytes());
        }
        return Ok(Done);
    }
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let name = ctx.args.get(2);
    let Some(bit) = category_bit(name) else {
        return Err(Error::Owned(format!(
            "ERR Unknown category '{}'",
            String::from_utf8_lossy(&name[..name.len().min(128)])
        )));
    };
    let cat = Catalog::get();
    let names: Vec<&str> = cat
        .entries
        .iter()
        .filter(|e| e.categories & bit != 0)
        .map(|e| e.fullname.as_str())
        .collect();
    ctx.out.array(names.len());
    for n in names {
        ctx.out.bulk(n.as_bytes());
    }
    Ok(Done)
}

fn genpass(ctx: &mut Ctx) -> CmdResult {
    const MAX_BITS: i64 = 4096;
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let bits = if ctx.argc() == 3 {
        super::int_arg(ctx.args.get(2))?
    } else {
        256
    };
    if bits <= 0 || bits > MAX_BITS {
        return Err(Error::Owned(format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {MAX_BITS}"
        )));
    }
    let chars = ((bits + 3) / 4) as usize;
    // The OS's CSPRNG through rand's ThreadRng (ChaCha, reseeded from the
    // OS), as Redis reads /dev/urandom for its `getRandomHexChars`.
    let pass: String = (0..chars)
        .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16)]))
        .collect();
    ctx.out.bulk(pass.as_bytes());
    Ok(Done)
}

fn log(ctx: &mut Ctx) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let mut count = 10;
    if ctx.argc() == 3 {
        let a = ctx.args.get(2);
        if eq_ic(a, "reset") {
            ctx.shared.acl.log.lock().reset();
            ctx.out.ok();
            return Ok(Done);
        }
        count = super::int_arg(a)?.max(0) as usize;
    }
    let now = crate::util::unix_ms();
    let log = ctx.shared.acl.log.lock();
    let n = count.min(log.len());
    ctx.out.array(n);
    for e in log.newest(n) {
        let out = &mut *ctx.out;
        out.map(10);
        out.bulk(b"count");
        out.int(e.count as i64);
        out.bulk(b"reason");
        out.bulk(e.reason.name().as_bytes());
        out.bulk(b"context");
        out.bulk(e.context.name().as_bytes());
        out.bulk(b"object");
        out.bulk(&e.object);
        out.bulk(b"username");
        out.bulk(&e.username);
        out.bulk(b"age-seconds");
        out.double(now.saturating_sub(e.ctime_ms) as f64 / 1000.0);
        out.bulk(b"client-info");
        out.bulk(e.client_info.as_bytes());
        out.bulk(b"entry-id");
        out.int(e.entry_id as i64);
        out.bulk(b"timestamp-created");
        out.int(e.created_ms as i64);
        out.bulk(b"timestamp-last-updated");
        out.int(e.ctime_ms as i64);
    }
    Ok(Done)
}

fn dryrun(ctx: &mut Ctx) -> CmdResult {
    let name = ctx.args.get(2);
    let Some(user) = ctx.shared.acl.get(name) else {
        return Err(Error::Raw([b"ERR User '", name, b"' not found"].concat()));
    };
    let owned = {
        let rest: Vec<&[u8]> = ctx.args.iter().skip(3).collect();
        super::OwnedArgs::from_slices(&rest)
    };
    let args = owned.args();
    let cmd = match resolve(&args) {
        Ok(c) => c,
        Err(e) if e.text().starts_with("ERR wrong number") => {
            return Err(Error::Owned(e.text().to_string()));
        }
        Err(_) => {
            return Err(Error::Raw(
                [b"ERR Command '", args.get(0), b"' not found"].concat(),
            ));
        }
    };
    match user.check(cmd, &args) {
        Ok(()) => ctx.out.ok(),
        Err((denied, pos)) => ctx.out.bulk(&denied.message(
            user.name(),
            Catalog::get().fullname(cmd),
            args.get(pos),
            true,
        )),
    }
    Ok(Done)
}

fn help(ctx: &mut Ctx) -> CmdResult {
    const LINES: &[&str] = &[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help.",
    ];
    ctx.out.array(LINES.len());
    for l in LINES {
        ctx.out.simple(l);
    }
    Ok(Done)
}

/// Brings the client's ACL user up to date after any ACL change; false if
/// the user is gone (deleted, or replaced by ACL LOAD): the client is
/// then disconnected, as Redis frees the clients of a freed user.
fn refresh_user(shared: &Services, client: &mut Client) -> bool {
    let generation = shared.acl.generation();
    if generation == client.acl_generation {
        return true;
    }
    let Some(name) = client.user.as_ref().map(|u| u.name().to_vec()) else {
        return true;
    };
    match shared.acl.get(&name) {
        Some(u) => {
            client.set_user(u, generation);
            true
        }
        None => {
            client.authenticated = false;
            client.set_user(shared.acl.default_user(), generation);
            client.handle.kill();
            false
        }
    }
}

/// The ACL check of one command (acl.c `ACLCheckAllPerm`), logging a
/// denial in the ACL log: `Err(None)` when the client's user is gone.
/// Costs a generation compare and a flag test for an unrestricted user.
pub(crate) fn acl_check(
    shared: &Services,
    client: &mut Client,
    cmd: &'static Command,
    args: &Args<'_>,
    context: Context,
) -> Result<(), Option<Denied>> {
    if !refresh_user(shared, client) {
        return Err(None);
    }
    let Some(user) = &client.user else {
        return Ok(());
    };
    if user.unrestricted() {
        return Ok(());
    }
    let (denied, pos) = match user.check(cmd, args) {
        Ok(()) => return Ok(()),
        Err(e) => e,
    };
    let (reason, object) = match denied {
        Denied::Command => (Reason::Command, Catalog::get().fullname(cmd).as_bytes()),
        Denied::Key => (Reason::Key, args.get(pos)),
        Denied::Channel => (Reason::Channel, args.get(pos)),
    };
    let username = user.name().to_vec();
    log_denial(shared, &client.handle, reason, context, object, &username);
    Err(Some(denied))
}

/// Adds an ACL LOG entry for a denial by `handle`'s client.
pub(crate) fn log_denial(
    shared: &Services,
    handle: &ClientHandle,
    reason: Reason,
    context: Context,
    object: &[u8],
    username: &[u8],
) {
    let entry = crate::acl::log::Entry {
        count: 1,
        reason,
        context,
        object: object.to_vec(),
        username: username.to_vec(),
        ctime_ms: crate::util::unix_ms(),
        client_info: super::connection::client_info_line(shared, handle),
        entry_id: 0,
        created_ms: 0,
    };
    let max = shared.config.acllog_max_len();
    shared.acl.log.lock().add(entry, max);
}
