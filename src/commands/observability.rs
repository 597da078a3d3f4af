//! What the server tells about itself beyond INFO: SLOWLOG (the slow
//! commands, `crate::slowlog`), LATENCY (latency events,
//! `crate::latency`, and the per-command histograms of `crate::stats`).
//! MEMORY lives with the other server commands (`server.rs`).

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Keys};
use crate::util::parse_i64;

const G: &str = "server";

pub static COMMANDS: &[Command] =
    &[
        Command::new("slowlog", -2, 0, Keys::None, super::server::container)
            .doc(
                G,
                "2.2.12",
                "Depends on subcommand.",
                "A container for slow log commands.",
            )
            .subcommands(SLOWLOG),
    ];

static SLOWLOG: &[Command] = &[
    Command::new("get", -2, ADMIN | LOADING | STALE, Keys::None, slowlog_get)
        .doc(
            G,
            "2.2.12",
            "O(N) where N is the number of entries returned",
            "Returns the slow log's entries.",
        )
        .syntax("[count]"),
    Command::new("help", 2, LOADING | STALE, Keys::None, slowlog_help).doc(
        G,
        "6.2.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    ),
    Command::new("len", 2, ADMIN | LOADING | STALE, Keys::None, slowlog_len).doc(
        G,
        "2.2.12",
        "O(1)",
        "Returns the number of entries in the slow log.",
    ),
    Command::new(
        "reset",
        2,
        ADMIN | LOADING | STALE,
        Keys::None,
        slowlog_reset,
    )
    .doc(
        G,
        "2.2.12",
        "O(N) where N is the number of entries in the slowlog",
        "Clears all entries from the slow log.",
    ),
];

/// Redis's `addReplyHelp`: the command's own lines between its header and
/// the HELP entry every help ends with.
pub(crate) fn reply_help(ctx: &mut Ctx, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out.simple(&format!(
        "{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        String::from_utf8_lossy(ctx.arg(0)).to_ascii_uppercase()
    ));
    for line in lines {
        ctx.out.simple(line);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}

fn slowlog_help(ctx: &mut Ctx) -> CmdResult {
    reply_help(
        ctx,
        &[
            "GET [<count>]",
            "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
            "    Entries are made of:",
            "    id, timestamp, time in microseconds, arguments array, client IP and port,",
            "    client name",
            "LEN",
            "    Return the length of the slowlog.",
            "RESET",
            "    Reset the slowlog.",
        ],
    );
    Ok(Done)
}

/// SLOWLOG GET [count]: the newest `count` entries (10; -1 for all).
fn slowlog_get(ctx: &mut Ctx) -> CmdResult {
    const BAD: &str = "ERR count should be greater than or equal to -1";
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let log = ctx.shared.slowlog.lock();
    let count = match ctx.argc() {
        3 => match parse_i64(ctx.arg(2)) {
            Some(-1) => log.len(),
            Some(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return Err(Error::Static(BAD)),
        },
        _ => 10,
    };
    let n = count.min(log.len());
    ctx.out.array(n);
    for e in log.iter().take(n) {
        ctx.out.array(6);
        ctx.out.int(e.id as i64);
        ctx.out.int(e.time as i64);
        ctx.out.int(e.duration as i64);
        ctx.out.array(e.args.len());
        for a in &e.args {
            ctx.out.bulk(a);
        }
        ctx.out.bulk(e.peer.as_bytes());
        ctx.out.bulk(&e.name);
    }
    Ok(Done)
}

fn slowlog_len(ctx: &mut Ctx) -> CmdResult {
    let n = ctx.shared.slowlog.lock().len();
    ctx.out.int(n as i64);
    Ok(Done)
}

fn slowlog_reset(ctx: &mut Ctx) -> CmdResult {
    ctx.shared.slowlog.lock().reset();
    ctx.out.ok();
    Ok(Done)
}
