//! What the server tells about itself beyond INFO: SLOWLOG (the slow
//! commands, `crate::slowlog`), LATENCY (latency events,
//! `crate::latency`, and the per-command histograms of `crate::stats`).
//! MEMORY is in `memory.rs`.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::util::parse_i64;

const G: &str = "server";

pub(crate) static COMMANDS: &[Command] = &[
    Command::new(
        "slowlog",
        -2,
        0,
        Keys::None,
        &(super::server::container as Handler),
    )
    .doc(
        G,
        "2.2.12",
        "Depends on subcommand.",
        "A container for slow log commands.",
    )
    .subcommands(SLOWLOG),
    Command::new(
        "latency",
        -2,
        0,
        Keys::None,
        &(super::server::container as Handler),
    )
    .doc(
        G,
        "2.8.13",
        "Depends on subcommand.",
        "A container for latency diagnostics commands.",
    )
    .subcommands(LATENCY),
];

const LAT: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

static LATENCY: &[Command] = &[
    Command::new("doctor", 2, LAT, Keys::None, &(latency_doctor as Handler)).doc(
        G,
        "2.8.13",
        "O(1)",
        "Returns a human-readable latency analysis report.",
    ),
    Command::new("graph", 3, LAT, Keys::None, &(latency_graph as Handler))
        .doc(G, "2.8.13", "O(1)", "Returns a latency graph for an event.")
        .syntax("event"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(latency_help as Handler),
    )
    .doc(
        G,
        "2.8.13",
        "O(1)",
        "Returns helpful text about the different subcommands.",
    ),
    Command::new(
        "histogram",
        -2,
        LAT,
        Keys::None,
        &(latency_histogram as Handler),
    )
    .doc(
        G,
        "7.0.0",
        "O(N) where N is the number of commands with latency information being retrieved.",
        "Returns the cumulative distribution of latencies of a subset or all commands.",
    )
    .syntax("[command [command ...]]"),
    Command::new("history", 3, LAT, Keys::None, &(latency_history as Handler))
        .doc(
            G,
            "2.8.13",
            "O(1)",
            "Returns timestamp-latency samples for an event.",
        )
        .syntax("event"),
    Command::new("latest", 2, LAT, Keys::None, &(latency_latest as Handler)).doc(
        G,
        "2.8.13",
        "O(1)",
        "Returns the latest latency samples for all events.",
    ),
    Command::new("reset", -2, LAT, Keys::None, &(latency_reset as Handler))
        .doc(
            G,
            "2.8.13",
            "O(1)",
            "Resets the latency data for one or more events.",
        )
        .syntax("[event [event ...]]"),
];

static SLOWLOG: &[Command] = &[
    Command::new(
        "get",
        -2,
        ADMIN | LOADING | STALE,
        Keys::None,
        &(slowlog_get as Handler),
    )
    .doc(
        G,
        "2.2.12",
        "O(N) where N is the number of entries returned",
        "Returns the slow log's entries.",
    )
    .syntax("[count]"),
    Command::new(
        "help",
        2,
        LOADING | STALE,
        Keys::None,
        &(slowlog_help as Handler),
    )
    .doc(
        G,
        "6.2.0",
        "O(1)",
        "Show helpful text about the different subcommands",
    ),
    Command::new(
        "len",
        2,
        ADMIN | LOADING | STALE,
        Keys::None,
        &(slowlog_len as Handler),
    )
    .doc(
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
        &(slowlog_reset as Handler),
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
    ctx.out.simple("    Print this help.");
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

fn unix_now(ctx: &Ctx) -> u64 {
    ctx.shared.clock.now_ms() / 1000
}

fn latency_help(ctx: &mut Ctx) -> CmdResult {
    reply_help(
        ctx,
        &[
            "DOCTOR",
            "    Return a human readable latency analysis report.",
            "GRAPH <event>",
            "    Return an ASCII latency graph for the <event> class.",
            "HISTORY <event>",
            "    Return time-latency samples for the <event> class.",
            "LATEST",
            "    Return the latest latency samples for all events.",
            "RESET [<event> ...]",
            "    Reset latency data of one or more <event> classes.",
            "    (default: reset all data for all event classes)",
            "HISTOGRAM [COMMAND ...]",
            "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
            "    If no commands are specified then all histograms are replied.",
        ],
    );
    Ok(Done)
}

/// LATENCY LATEST: per event, its newest sample and its all-time high.
fn latency_latest(ctx: &mut Ctx) -> CmdResult {
    let m = ctx.shared.latency.lock();
    let events: Vec<(String, crate::latency::Sample, u32)> = m
        .iter()
        .map(|(name, ts)| (name.to_owned(), ts.latest(), ts.max))
        .collect();
    drop(m);
    ctx.out.array(events.len());
    for (name, last, max) in events {
        ctx.out.array(4);
        ctx.out.bulk(name.as_bytes());
        ctx.out.int(i64::from(last.time));
        ctx.out.int(i64::from(last.latency));
        ctx.out.int(i64::from(max));
    }
    Ok(Done)
}

/// LATENCY HISTORY event: its samples, oldest first.
fn latency_history(ctx: &mut Ctx) -> CmdResult {
    let m = ctx.shared.latency.lock();
    let samples: Vec<crate::latency::Sample> = m
        .get(ctx.args.get(2))
        .map(|(_, ts)| ts.samples().collect())
        .unwrap_or_default();
    drop(m);
    ctx.out.array(samples.len());
    for s in samples {
        ctx.out.array(2);
        ctx.out.int(i64::from(s.time));
        ctx.out.int(i64::from(s.latency));
    }
    Ok(Done)
}

fn latency_reset(ctx: &mut Ctx) -> CmdResult {
    let mut m = ctx.shared.latency.lock();
    let n = if ctx.argc() == 2 {
        m.reset(None)
    } else {
        (2..ctx.argc())
            .map(|i| m.reset(Some(ctx.args.get(i))))
            .sum()
    };
    drop(m);
    ctx.out.int(n as i64);
    Ok(Done)
}

fn latency_graph(ctx: &mut Ctx) -> CmdResult {
    let now = unix_now(ctx);
    let m = ctx.shared.latency.lock();
    let Some((name, ts)) = m.get(ctx.args.get(2)) else {
        drop(m);
        return Err(Error::Owned(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(ctx.arg(2))
        )));
    };
    let text = crate::latency::graph(name, ts, now);
    drop(m);
    ctx.out.verbatim(text.as_bytes());
    Ok(Done)
}

fn latency_doctor(ctx: &mut Ctx) -> CmdResult {
    let now = unix_now(ctx);
    let c = &ctx.shared.config;
    let (threshold, slower, hz) = (
        c.latency_monitor_threshold(),
        c.slowlog_slower_than(),
        c.hz(),
    );
    let thp = crate::latency::has_huge_pages();
    let text = crate::latency::doctor(&ctx.shared.latency.lock(), now, threshold, slower, hz, thp);
    ctx.out.verbatim(text.as_bytes());
    Ok(Done)
}

/// A command's name, calls and (µs, calls at or below) buckets.
type Histogram = (String, u64, Vec<(u64, u64)>);

/// LATENCY HISTOGRAM [command ...]: each named command's (all commands',
/// when none is named) calls and cumulative latency buckets; a container
/// stands for its subcommands, an unknown name for nothing.
fn latency_histogram(ctx: &mut Ctx) -> CmdResult {
    let mut found: Vec<Histogram> = Vec::new();
    let mut add = |name: String, cmd: &'static Command| {
        if let Some((calls, buckets)) = super::CallStats::of(cmd).latency.cdf() {
            found.push((name, calls, buckets));
        }
    };
    if ctx.argc() == 2 {
        for (name, cmd) in super::info::every_command() {
            add(name, cmd);
        }
    } else {
        for i in 2..ctx.argc() {
            let arg = ctx.args.get(i);
            let (parent, sub) = match arg.iter().position(|&b| b == b'|') {
                Some(p) => (&arg[..p], Some(&arg[p + 1..])),
                None => (arg, None),
            };
            let Some(cmd) = super::lookup(parent) else {
                continue;
            };
            match sub {
                Some(sub) => {
                    if let Some(s) = super::lookup_sub(cmd, sub) {
                        add(format!("{}|{}", cmd.name, s.name), s);
                    }
                }
                None => {
                    add(cmd.name.to_string(), cmd);
                    for s in cmd.subcommands {
                        add(format!("{}|{}", cmd.name, s.name), s);
                    }
                }
            }
        }
    }
    let out = &mut *ctx.out;
    out.map(found.len());
    for (name, calls, buckets) in found {
        out.bulk(name.as_bytes());
        out.map(2);
        out.bulk(b"calls");
        out.int(calls as i64);
        out.bulk(b"histogram_usec");
        out.map(buckets.len());
        for (usec, count) in buckets {
            out.int(usec as i64);
            out.int(count as i64);
        }
    }
    Ok(Done)
}
