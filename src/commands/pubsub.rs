//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, the sharded SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, and PUBSUB
//! CHANNELS/NUMSUB/NUMPAT/SHARDCHANNELS/SHARDNUMSUB/HELP.
//!
//! A subscription lives in two places that must agree: the connection's own
//! sets (`client.channels/patterns`, which decide RESP2 subscribed mode and
//! the counts in replies) and the hub (`shared.pubsub`, which publishers
//! read); the handle's `subs/psubs/ssubs` counters mirror the sets for CLIENT LIST.
//! Every (un)subscription goes through [`track`] so the three never drift.
//! Replies to (un)subscriptions are pushes: `*3` arrays in RESP2, `>3` in
//! RESP3, one per channel. As in Redis 7.0, the count in a shard
//! confirmation is the shard channels alone, and in the others the channels
//! and patterns.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;

use super::flags::*;
use super::{CmdResult, Command, Ctx, Done, Error, Handler, Keys};

const G: &str = "pubsub";
const SUB_FLAGS: u32 = PUBSUB | NOSCRIPT | LOADING | STALE | SUBSCRIBED_OK;

pub(crate) static COMMANDS: &[Command] = &[
    Command::new("subscribe", -2, SUB_FLAGS, Keys::None, &(subscribe as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of channels to subscribe to.", "Listen for messages published to the given channels")
        .syntax("channel [channel ...]"),
    Command::new("unsubscribe", -1, SUB_FLAGS, Keys::None, &(unsubscribe as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of clients already subscribed to a channel.", "Stop listening for messages posted to the given channels")
        .syntax("[channel [channel ...]]"),
    Command::new("psubscribe", -2, SUB_FLAGS, Keys::None, &(psubscribe as Handler))
        .doc(G, "2.0.0", "O(N) where N is the number of patterns the client is already subscribed to.", "Listen for messages published to channels matching the given patterns")
        .syntax("pattern [pattern ...]"),
    Command::new("punsubscribe", -1, SUB_FLAGS, Keys::None, &(punsubscribe as Handler))
        .doc(G, "2.0.0", "O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).", "Stop listening for messages posted to channels matching the given patterns")
        .syntax("[pattern [pattern ...]]"),
    Command::new("publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, Keys::None, &(publish as Handler))
        .doc(G, "2.0.0", "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).", "Post a message to a channel")
        .syntax("channel message"),
    Command::new("ssubscribe", -2, SUB_FLAGS, Keys::None, &(ssubscribe as Handler))
        .doc(G, "7.0.0", "O(N) where N is the number of shard channels to subscribe to.", "Listen for messages published to the given shard channels")
        .syntax("shardchannel [shardchannel ...]"),
    Command::new("sunsubscribe", -1, SUB_FLAGS, Keys::None, &(sunsubscribe as Handler))
        .doc(G, "7.0.0", "O(N) where N is the number of clients already subscribed to a shard channel.", "Stop listening for messages posted to the given shard channels")
        .syntax("[shardchannel [shardchannel ...]]"),
    Command::new("spublish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, Keys::None, &(spublish as Handler))
        .doc(G, "7.0.0", "O(N) where N is the number of clients subscribed to the receiving shard channel.", "Post a message to a shard channel")
        .syntax("shardchannel message"),
    Command::new("pubsub", -2, 0, Keys::None, &(super::server::container as Handler))
        .doc(G, "2.8.0", "Depends on subcommand.", "A container for Pub/Sub commands")
        .subcommands(PUBSUB_SUBS),
];

static PUBSUB_SUBS: &[Command] = &[
    Command::new("channels", -2, PUBSUB | LOADING | STALE, Keys::None, &(pubsub_channels as Handler))
        .doc(G, "2.8.0", "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)", "List active channels")
        .syntax("[pattern]"),
    Command::new("numsub", -2, PUBSUB | LOADING | STALE, Keys::None, &(pubsub_numsub as Handler))
        .doc(G, "2.8.0", "O(N) for the NUMSUB subcommand, where N is the number of requested channels", "Get the count of subscribers for channels")
        .syntax("[channel [channel ...]]"),
    Command::new("numpat", 2, PUBSUB | LOADING | STALE, Keys::None, &(pubsub_numpat as Handler))
        .doc(G, "2.8.0", "O(1)", "Get the count of unique patterns pattern subscriptions"),
    Command::new("shardchannels", -2, PUBSUB | LOADING | STALE, Keys::None, &(pubsub_shardchannels as Handler))
        .doc(G, "7.0.0", "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).", "List active shard channels")
        .syntax("[pattern]"),
    Command::new("shardnumsub", -2, PUBSUB | LOADING | STALE, Keys::None, &(pubsub_shardnumsub as Handler))
        .doc(G, "7.0.0", "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels", "Get the count of subscribers for shard channels")
        .syntax("[shardchannel [shardchannel ...]]"),
    Command::new("help", 2, LOADING | STALE, Keys::None, &(pubsub_help as Handler))
        .doc(G, "6.2.0", "O(1)", "Show helpful text about the different subcommands"),
];

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Channel,
    Pattern,
    Shard,
}

/// Adds or removes one subscription in the client's sets, the handle's
/// counters and the hub together; returns whether anything changed.
fn track(ctx: &mut Ctx, kind: Kind, name: &[u8], add: bool) -> bool {
    let (client, hub) = (&mut *ctx.client, &ctx.shared.pubsub);
    let set = match kind {
        Kind::Channel => &mut client.channels,
        Kind::Pattern => &mut client.patterns,
        Kind::Shard => &mut client.shard_channels,
    };
    let changed = if add {
        set.insert(Bytes::copy_from_slice(name))
    } else {
        set.remove(name)
    };
    if changed {
        let id = client.handle.id;
        match (kind, add) {
            (Kind::Channel, true) => hub.subscribe(false, name, &client.handle),
            (Kind::Channel, false) => hub.unsubscribe(false, name, id),
            (Kind::Shard, true) => hub.subscribe(true, name, &client.handle),
            (Kind::Shard, false) => hub.unsubscribe(true, name, id),
            (Kind::Pattern, true) => hub.psubscribe(name, &client.handle),
            (Kind::Pattern, false) => hub.punsubscribe(name, id),
        };
        let counter = match kind {
            Kind::Channel => &client.handle.subs,
            Kind::Pattern => &client.handle.psubs,
            Kind::Shard => &client.handle.ssubs,
        };
        counter.store(set.len() as u32, Relaxed);
    }
    changed
}

/// A shard channel this node dropped with its slot (a
/// `Push::ShardUnsubscribed`, handled by the client's connection, which
/// owns its sets): the client leaves it, as Redis's
/// `pubsubShardUnsubscribeAllClients` unsubscribes it, and the count its
/// `sunsubscribe` push carries is returned; `None` if the client had left
/// the channel already (its own SUNSUBSCRIBE told it). The hub is told too,
/// in case the client subscribed again since: the sets must not drift.
pub(crate) fn shard_channel_dropped(
    shared: &super::Services,
    client: &mut super::session::Client,
    channel: &[u8],
) -> Option<usize> {
    if !client.shard_channels.remove(channel) {
        return None;
    }
    shared.pubsub.unsubscribe(true, channel, client.handle.id);
    let count = client.shard_channels.len();
    client.handle.ssubs.store(count as u32, Relaxed);
    Some(count)
}

/// One `[kind, name, count]` confirmation; `name` None is the null Redis
/// sends when unsubscribing from nothing.
fn confirm(ctx: &mut Ctx, kind: Kind, what: &str, name: Option<&[u8]>) {
    let count = match kind {
        Kind::Shard => ctx.client.shard_channels.len(),
        _ => ctx.client.channels.len() + ctx.client.patterns.len(),
    };
    ctx.out.push(3);
    ctx.out.bulk(what.as_bytes());
    match name {
        Some(n) => ctx.out.bulk(n),
        None => ctx.out.null(),
    }
    ctx.out.int(count as i64);
}

fn subscribe_generic(ctx: &mut Ctx, kind: Kind, what: &str) -> CmdResult {
    let args = ctx.args;
    for i in 1..args.len() {
        let name = args.get(i);
        track(ctx, kind, name, true);
        confirm(ctx, kind, what, Some(name));
    }
    Ok(Done)
}

fn unsubscribe_generic(ctx: &mut Ctx, kind: Kind, what: &str) -> CmdResult {
    let args = ctx.args;
    if args.len() > 1 {
        for i in 1..args.len() {
            let name = args.get(i);
            track(ctx, kind, name, false);
            confirm(ctx, kind, what, Some(name));
        }
        return Ok(Done);
    }
    let all: Vec<Bytes> = match kind {
        Kind::Channel => ctx.client.channels.iter().cloned().collect(),
        Kind::Pattern => ctx.client.patterns.iter().cloned().collect(),
        Kind::Shard => ctx.client.shard_channels.iter().cloned().collect(),
    };
    if all.is_empty() {
        confirm(ctx, kind, what, None);
    }
    for name in all {
        track(ctx, kind, &name, false);
        confirm(ctx, kind, what, Some(&name));
    }
    Ok(Done)
}

fn subscribe(ctx: &mut Ctx) -> CmdResult {
    subscribe_generic(ctx, Kind::Channel, "subscribe")
}

fn unsubscribe(ctx: &mut Ctx) -> CmdResult {
    unsubscribe_generic(ctx, Kind::Channel, "unsubscribe")
}

fn psubscribe(ctx: &mut Ctx) -> CmdResult {
    subscribe_generic(ctx, Kind::Pattern, "psubscribe")
}

fn punsubscribe(ctx: &mut Ctx) -> CmdResult {
    unsubscribe_generic(ctx, Kind::Pattern, "punsubscribe")
}

/// Redis 7.0 refuses SSUBSCRIBE (unlike SUBSCRIBE) to a client that must
/// get one reply per command, which inside EXEC is every client.
fn ssubscribe(ctx: &mut Ctx) -> CmdResult {
    if ctx.client.in_exec {
        return Err(Error::Static(
            "ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client",
        ));
    }
    subscribe_generic(ctx, Kind::Shard, "ssubscribe")
}

fn sunsubscribe(ctx: &mut Ctx) -> CmdResult {
    unsubscribe_generic(ctx, Kind::Shard, "sunsubscribe")
}

fn spublish(ctx: &mut Ctx) -> CmdResult {
    let limit = ctx.shared.config.pubsub_output_limit();
    let n = ctx
        .shared
        .pubsub
        .spublish(limit, ctx.args.get(1), ctx.args.get(2));
    propagate(ctx, true);
    ctx.out.int(n as i64);
    Ok(Done)
}

fn publish(ctx: &mut Ctx) -> CmdResult {
    let limit = ctx.shared.config.pubsub_output_limit();
    let n = ctx
        .shared
        .pubsub
        .publish(limit, ctx.args.get(1), ctx.args.get(2));
    propagate(ctx, false);
    ctx.out.int(n as i64);
    Ok(Done)
}

/// Where a PUBLISH goes beside local subscribers (pubsub.c): in cluster
/// mode over the bus (every node; an SPUBLISH to myself's shard), else to
/// the replicas, for their own subscribers.
fn propagate(ctx: &mut Ctx, shard: bool) {
    match &ctx.shared.cluster {
        Some(cluster) => {
            let channel = bytes::Bytes::copy_from_slice(ctx.args.get(1));
            let message = bytes::Bytes::copy_from_slice(ctx.args.get(2));
            let actions = cluster.read().state.publish(channel, message, shard);
            cluster.submit(actions);
        }
        None => ctx.force_replication(),
    }
}

fn pubsub_channels(ctx: &mut Ctx) -> CmdResult {
    list_channels(ctx, false)
}

fn pubsub_shardchannels(ctx: &mut Ctx) -> CmdResult {
    list_channels(ctx, true)
}

fn list_channels(ctx: &mut Ctx, shard: bool) -> CmdResult {
    if ctx.argc() > 3 {
        return Err(super::subcommand_syntax(&ctx.args));
    }
    let pattern = (ctx.argc() == 3).then(|| ctx.args.get(2));
    let channels = ctx.shared.pubsub.channels(shard, pattern);
    ctx.out.array(channels.len());
    for c in &channels {
        ctx.out.bulk(c);
    }
    Ok(Done)
}

fn pubsub_numsub(ctx: &mut Ctx) -> CmdResult {
    count_subscribers(ctx, false)
}

fn pubsub_shardnumsub(ctx: &mut Ctx) -> CmdResult {
    count_subscribers(ctx, true)
}

fn count_subscribers(ctx: &mut Ctx, shard: bool) -> CmdResult {
    let args = ctx.args;
    ctx.out.array((args.len() - 2) * 2);
    for i in 2..args.len() {
        let ch = args.get(i);
        ctx.out.bulk(ch);
        ctx.out.int(ctx.shared.pubsub.numsub(shard, ch) as i64);
    }
    Ok(Done)
}

fn pubsub_numpat(ctx: &mut Ctx) -> CmdResult {
    ctx.out.int(ctx.shared.pubsub.numpat() as i64);
    Ok(Done)
}

/// Redis 7.0's text.
const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Print this help.",
];

fn pubsub_help(ctx: &mut Ctx) -> CmdResult {
    ctx.out.array(HELP.len());
    for line in HELP {
        ctx.out.simple(line);
    }
    Ok(Done)
}
