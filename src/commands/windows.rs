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
//!
//! In cluster mode a rule set or deleted here goes to every zwindow node of
//! the cluster (`cluster::window_sync`), which applies it through
//! [`apply_shared`], and each node keeps the rules in its config file (as
//! CONFIG REWRITE writes them). A MOVETO rule must keep its lists in the
//! slot of the sorted set they come from
//! ([`moveto_confined`](crate::keyspace::windows::moveto_confined)).

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};
use crate::cluster::window_sync::{self, Change, RuleSpec};
use crate::keyspace::windows::{Rule, Unit, moveto_confined, parse_duration};
use crate::util::eq_ic;

/// A MOVETO rule refused in cluster mode.
pub(crate) const MOVETO_CROSS_SLOT: &str = "ERR MOVETO destination must hash to the same slot as the key in cluster mode; use a hash tag such as {tag}:* in the pattern and {key} or {tag} in the destination";

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
    if ctx.shared.cluster.is_some() {
        if !moveto_confined(&rule) {
            return Err(Error::Static(MOVETO_CROSS_SLOT));
        }
        if !RuleSpec::of(&rule).fits() {
            return Err(Error::Static(
                "ERR window rule pattern and destination are limited to 65536 bytes in cluster mode",
            ));
        }
    }
    let spec = RuleSpec::of(&rule);
    crate::keyspace::windows::set_rule(ctx.ks, rule);
    // Window rules are part of the dataset: logged like a write.
    ctx.force_propagation();
    share(ctx, Change::Set(spec));
    ctx.out.ok();
    Ok(Done)
}

/// In cluster mode, a change made here (not one replayed from this
/// replica's primary or from the AOF, which the cluster has already) goes
/// to the other nodes, and into the config file, by way of the bus (which
/// then calls [`apply_shared`]).
fn share(ctx: &mut Ctx, change: Change) {
    let Some(cluster) = &ctx.shared.cluster else {
        return;
    };
    if ctx.client.master || ctx.shared.persistence.loading.active() {
        return;
    }
    cluster.window_rule_changed(change);
}

/// Keeps the rules in the config file, if the server has one.
fn persist(shared: &super::Services) {
    if shared.config.config_file.is_none() {
        tracing::debug!("window rules not persisted: no config file");
        return;
    }
    if let Err(e) = super::server::rewrite_config(shared, false) {
        tracing::warn!("Could not save the window rules in the config file: {e}");
    }
}

/// Applies what the cluster's rule table says for `patterns` (changed by
/// a message from another node, or by this node's ZWINDOW, whose change
/// may have raced one from the cluster) to this node's rules, through the
/// path ZWINDOW SET and DEL take: every shard locked, the change propagated
/// to the AOF and replicas as the command, then kept in the config file.
/// The table is read under the shards' locks, so two messages applied
/// in either order leave the rules as the table says.
///
/// `local`: the changes were this node's own (the file must take them
/// even when the rules already agree).
pub(crate) fn apply_shared(shared: &super::Services, patterns: &[Vec<u8>], local: bool) {
    let Some(cluster) = &shared.cluster else {
        return;
    };
    if patterns.is_empty() {
        return;
    }
    let mut changed = false;
    let env = shared.env();
    let guards = env.store.lock(env.store.all_shards());
    let mut ks = crate::keyspace::Keyspace::new(env, guards, 0, env.clock.now_ms());
    {
        let table = cluster.rules.lock();
        for pattern in patterns {
            match table.live(pattern) {
                Some(spec) => {
                    let current = shared.windows.list();
                    let same = current
                        .iter()
                        .any(|r| &*r.pattern == pattern.as_slice() && RuleSpec::of(r) == *spec);
                    if same {
                        continue;
                    }
                    let rule = spec.to_rule();
                    if !moveto_confined(&rule) {
                        // Kept: hand-offs to another slot are never written.
                        tracing::warn!(
                            pattern = %String::from_utf8_lossy(pattern),
                            "window rule from the cluster hands off to another slot"
                        );
                    }
                    tracing::info!(
                        pattern = %String::from_utf8_lossy(pattern),
                        "window rule set by the cluster"
                    );
                    crate::keyspace::windows::set_rule(&mut ks, rule);
                    changed = true;
                    let spec = spec.clone();
                    ks.also_propagate(|| set_argv(&spec));
                }
                None => {
                    if crate::keyspace::windows::del_rule(&mut ks, pattern) {
                        changed = true;
                        tracing::info!(
                            pattern = %String::from_utf8_lossy(pattern),
                            "window rule deleted by the cluster"
                        );
                        ks.also_propagate(|| {
                            vec![b"ZWINDOW".to_vec(), b"DEL".to_vec(), pattern.clone()]
                        });
                    }
                }
            }
        }
    }
    ks.flush_propagated(false);
    drop(ks);
    if changed || local {
        persist(shared);
    }
}

/// `ZWINDOW SET` as the AOF and replicas receive a shared rule.
fn set_argv(spec: &RuleSpec) -> Vec<Vec<u8>> {
    let mut v = vec![
        b"ZWINDOW".to_vec(),
        b"SET".to_vec(),
        spec.pattern.clone(),
        format!("{}ms", spec.duration_ms).into_bytes(),
        spec.unit.name().to_uppercase().into_bytes(),
    ];
    if let Some(dest) = &spec.moveto {
        v.push(b"MOVETO".to_vec());
        v.push(dest.clone());
    }
    v
}

/// The bound a shared rule's fields have (for the error above).
const _: () = assert!(window_sync::MAX_FIELD == 65536);

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
    let pattern = ctx.args.get(2);
    let removed = crate::keyspace::windows::del_rule(ctx.ks, pattern);
    ctx.force_propagation();
    if pattern.len() <= window_sync::MAX_FIELD {
        share(ctx, Change::Del(pattern.to_vec()));
    }
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
