//! ZWINDOW: the window rules that make sorted-set members age out.
//!
//! ```text
//! ZWINDOW SET pattern duration [S | MS] [MOVETO destination]
//! ZWINDOW GET key
//! ZWINDOW DEL pattern
//! ZWINDOW LIST
//! ```
//!
//! `duration` is an integer in the rule's unit (seconds by default) or a
//! number with a suffix: `500ms`, `65s`, `30m`, `24h`, `7d`. With `MOVETO`,
//! members that age out are RPUSHed to `destination` (a list; `{key}` in it
//! stands for the sorted set's name) in the step that removes them. Rules are
//! server state: they outlive the keys they match.

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::keyspace::windows::{Rule, Unit, parse_duration};
use crate::util::eq_ic;

const G: &str = "windows";

pub(crate) static COMMANDS: &[Command] = &[Command::new(
    "zwindow",
    -2,
    0,
    Keys::None,
    &(super::server::container as Handler),
)
.doc(
    G,
    "0.1.0",
    "Depends on subcommand.",
    "A container for time-window rules on sorted sets.",
)
.subcommands(ZWINDOW)];

static ZWINDOW: &[Command] = &[
    // A rule change locks every shard, so no command is between planning
    // its locks from the old rules and trimming by the new ones.
    Command::new("set", -4, WRITE | ADMIN, Keys::All, &(set as Handler))
        .doc(G, "0.1.0", "O(R) where R is the number of rules", "Binds a key pattern to a time window: sorted-set members scored older than now minus the duration age out.")
        .syntax("pattern duration [S | MS] [MOVETO destination]"),
    Command::new("get", 3, READONLY | FAST, Keys::None, &(get as Handler))
        .doc(G, "0.1.0", "O(R) where R is the number of rules", "Returns the rule that applies to a key: pattern, duration and unit, or nil.")
        .syntax("key"),
    Command::new("del", 3, WRITE | ADMIN, Keys::All, &(del as Handler))
        .doc(G, "0.1.0", "O(R) where R is the number of rules", "Deletes the rule with exactly this pattern.")
        .syntax("pattern"),
    Command::new("list", 2, READONLY, Keys::None, &(list as Handler))
        .doc(G, "0.1.0", "O(R) where R is the number of rules", "Lists the rules in precedence order."),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(help as Handler))
        .doc(G, "0.1.0", "O(1)", "Returns helpful text about the different subcommands."),
];

fn set(ctx: &mut Ctx) -> CmdResult {
    let pattern = ctx.arg(2);
    let mut unit = Unit::Seconds;
    let mut moveto = None;
    let mut i = 4;
    while i < ctx.argc() {
        let opt = ctx.arg(i);
        if let (4, Some(u)) = (i, Unit::parse(opt)) {
            unit = u;
            i += 1;
        } else if eq_ic(opt, "MOVETO") && i + 1 < ctx.argc() && moveto.is_none() {
            moveto = Some(ctx.args.get(i + 1));
            i += 2;
        } else {
            return Err(Error::Syntax);
        }
    }
    let ms = parse_duration(ctx.arg(3), unit).ok_or(Error::Static(
        "ERR invalid duration: use a positive integer or a number with ms, s, m, h or d",
    ))?;
    let rule = Rule::new(pattern, ms, unit, moveto);
    crate::keyspace::windows::set_rule(ctx.ks, rule);
    // Window rules are part of the dataset: logged like a write.
    ctx.force_propagation();
    ctx.out.ok();
    Ok(Done)
}

/// `[pattern, duration, unit]`, plus `moveto, destination` for hand-off rules.
fn write_rule(ctx: &mut Ctx, rule: &Rule) {
    ctx.out.array(if rule.moveto.is_some() { 5 } else { 3 });
    ctx.out.bulk(&rule.pattern);
    ctx.out.bulk(rule.duration_in_unit().as_bytes());
    ctx.out.bulk(rule.unit.name().as_bytes());
    if let Some(dest) = &rule.moveto {
        ctx.out.bulk(b"moveto");
        ctx.out.bulk(dest);
    }
}

fn get(ctx: &mut Ctx) -> CmdResult {
    match ctx.shared.windows.resolve(ctx.arg(2)) {
        Some(rule) => write_rule(ctx, &rule),
        None => ctx.out.null_array(),
    }
    Ok(Done)
}

fn del(ctx: &mut Ctx) -> CmdResult {
    let removed = crate::keyspace::windows::del_rule(ctx.ks, ctx.args.get(2));
    ctx.force_propagation();
    ctx.out.int(removed as i64);
    Ok(Done)
}

fn list(ctx: &mut Ctx) -> CmdResult {
    let rules = ctx.shared.windows.list();
    ctx.out.array(rules.len());
    for rule in rules {
        write_rule(ctx, &rule);
    }
    Ok(Done)
}

fn help(ctx: &mut Ctx) -> CmdResult {
    super::server::help(ctx, "ZWINDOW", ZWINDOW);
    Ok(Done)
}
