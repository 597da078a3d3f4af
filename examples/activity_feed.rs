//! An activity feed, fan-out on write (seed 003): "Bob liked 3 photos today".
//!
//! - Activities are hashes (`activity:<id>`), the canonical store; each user's
//!   activity ids are a set (`activities:<user>`), followers a set.
//! - Aggregation: a set per (type, user, day) — `agg:<type>:<user>:<day>` —
//!   holding activity ids, so adding the same activity twice changes nothing.
//! - Feeds (`feed:<user>`, and the actor's own `profile:<user>`) are sorted
//!   sets of aggregation keys scored by the latest activity in them, trimmed
//!   to MAX entries with ZREMRANGEBYRANK.
//! - `refs:<type>:<user>:<day>` counts the feeds that hold an aggregation;
//!   every entry and exit is paired with INCR/DECR under WATCH/MULTI/EXEC,
//!   and an aggregation nobody references is garbage-collected.
//! - follow (backfill), unfollow, delete, and idempotent replays.
//!
//! Feeds also forget what is older than WINDOW ("3 days"; one day is a
//! minute in this run — long enough that nothing ages out while the run's
//! checks compare snapshots, even on a loaded machine — and timestamps are
//! the server's clock in ms). `--classic` does that
//! the way a Redis user must: under WATCH, ZRANGEBYSCORE the old entries,
//! then MULTI ZREMRANGEBYSCORE + DECR each. The default binds the feeds to a
//! window with `ZWINDOW SET feed:* 180000 MS MOVETO aged`: zwindow removes old
//! entries itself and hands them to the `aged` list, which the garbage
//! collector drains (DECR, collect) — no age-trimming commands.

mod common;

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::Parser;
use redis::aio::MultiplexedConnection;

use common::{Checks, Opts, server_ms};

const MAX_FEED: i64 = 10;
const DAY_MS: i64 = 60_000;
const WINDOW_MS: i64 = 3 * DAY_MS;

struct Feeds {
    con: MultiplexedConnection,
    p: String,
    classic: bool,
    day_shift: i64,
    /// Aggregations collected (their last reference left a feed).
    collected: u64,
    evicted_by_size: u64,
    aged_out: u64,
    watch_retries: u64,
}

struct Activity<'a> {
    id: &'a str,
    kind: &'a str,
    user: u32,
    ts: i64,
    object: &'a str,
}

impl Feeds {
    /// Day numbers are shifted so the run starts in the middle of a "day":
    /// a 1-second day must not roll over between two activities of "today".
    fn day(&self, ts: i64) -> i64 {
        (ts + self.day_shift).div_euclid(DAY_MS)
    }
    fn agg_key(&self, kind: &str, user: u32, ts: i64) -> String {
        format!("{}:agg:{kind}:{user}:{}", self.p, self.day(ts))
    }
    fn refs_key(&self, agg: &str) -> String {
        agg.replacen(":agg:", ":refs:", 1)
    }
    fn feed(&self, user: u32) -> String {
        format!("{}:feed:{user}", self.p)
    }
    fn profile(&self, user: u32) -> String {
        format!("{}:profile:{user}", self.p)
    }
    fn followers(&self, user: u32) -> String {
        format!("{}:followers:{user}", self.p)
    }
    fn activities(&self, user: u32) -> String {
        format!("{}:activities:{user}", self.p)
    }
    fn aged(&self) -> String {
        format!("{}:aged", self.p)
    }

    /// The new_activity task: store, aggregate, fan out to the actor's
    /// profile and every follower's feed.
    async fn new_activity(&mut self, a: &Activity<'_>) -> redis::RedisResult<()> {
        let agg = self.agg_key(a.kind, a.user, a.ts);
        redis::pipe()
            .cmd("HSET")
            .arg(format!("{}:activity:{}", self.p, a.id))
            .arg(&[("type", a.kind), ("object", a.object)])
            .arg("user")
            .arg(a.user)
            .arg("ts")
            .arg(a.ts)
            .ignore()
            .cmd("SADD")
            .arg(self.activities(a.user))
            .arg(a.id)
            .ignore()
            .cmd("SADD")
            .arg(&agg)
            .arg(a.id)
            .ignore()
            .query_async::<()>(&mut self.con)
            .await?;
        let followers: Vec<u32> = redis::cmd("SMEMBERS")
            .arg(self.followers(a.user))
            .query_async(&mut self.con)
            .await?;
        let mut feeds = vec![self.profile(a.user)];
        feeds.extend(followers.iter().map(|f| self.feed(*f)));
        for feed in feeds {
            self.add_to_feed(&feed, &agg, a.ts).await?;
        }
        Ok(())
    }

    /// Puts `agg` in `feed` (score: the latest activity, ZADD GT), INCR its
    /// counter when it enters, then trims the feed.
    async fn add_to_feed(&mut self, feed: &str, agg: &str, ts: i64) -> redis::RedisResult<()> {
        loop {
            redis::cmd("WATCH")
                .arg(feed)
                .query_async::<()>(&mut self.con)
                .await?;
            let present: Option<f64> = redis::cmd("ZSCORE")
                .arg(feed)
                .arg(agg)
                .query_async(&mut self.con)
                .await?;
            let mut tx = redis::pipe();
            tx.atomic()
                .cmd("ZADD")
                .arg(feed)
                .arg("GT")
                .arg(ts)
                .arg(agg)
                .ignore();
            if present.is_none() {
                tx.cmd("INCR").arg(self.refs_key(agg)).ignore();
            }
            let done: Option<()> = tx.query_async(&mut self.con).await?;
            if done.is_some() {
                break;
            }
            self.watch_retries += 1;
        }
        self.trim(feed).await
    }

    /// Size trim (both variants) and, in classic, age trim; each entry that
    /// leaves is paired with a DECR in the same transaction.
    async fn trim(&mut self, feed: &str) -> redis::RedisResult<()> {
        let evicted = loop {
            redis::cmd("WATCH")
                .arg(feed)
                .query_async::<()>(&mut self.con)
                .await?;
            let mut old: Vec<String> = Vec::new();
            let cutoff = server_ms(&mut self.con).await? - WINDOW_MS;
            if self.classic {
                old = redis::cmd("ZRANGEBYSCORE")
                    .arg(feed)
                    .arg("-inf")
                    .arg(format!("({cutoff}"))
                    .query_async(&mut self.con)
                    .await?;
            }
            let card: i64 = redis::cmd("ZCARD")
                .arg(feed)
                .query_async(&mut self.con)
                .await?;
            let over = card - old.len() as i64 - MAX_FEED;
            let extra: Vec<String> = if over > 0 {
                let from = old.len() as i64;
                redis::cmd("ZRANGE")
                    .arg(feed)
                    .arg(from)
                    .arg(from + over - 1)
                    .query_async(&mut self.con)
                    .await?
            } else {
                Vec::new()
            };
            if old.is_empty() && extra.is_empty() {
                redis::cmd("UNWATCH")
                    .query_async::<()>(&mut self.con)
                    .await?;
                return Ok(());
            }
            let mut tx = redis::pipe();
            tx.atomic();
            if !old.is_empty() {
                tx.cmd("ZREMRANGEBYSCORE")
                    .arg(feed)
                    .arg("-inf")
                    .arg(format!("({cutoff}"))
                    .ignore();
            }
            if over > 0 {
                tx.cmd("ZREMRANGEBYRANK")
                    .arg(feed)
                    .arg(0)
                    .arg(over - 1)
                    .ignore();
            }
            for agg in old.iter().chain(&extra) {
                tx.cmd("DECR").arg(self.refs_key(agg)).ignore();
            }
            if tx.query_async::<Option<()>>(&mut self.con).await?.is_some() {
                self.aged_out += old.len() as u64;
                self.evicted_by_size += extra.len() as u64;
                break old.into_iter().chain(extra).collect::<Vec<_>>();
            }
            self.watch_retries += 1;
        };
        for agg in evicted {
            self.collect(&agg).await?;
        }
        Ok(())
    }

    /// Garbage-collects an aggregation no feed references any more.
    async fn collect(&mut self, agg: &str) -> redis::RedisResult<()> {
        let refs = self.refs_key(agg);
        loop {
            redis::cmd("WATCH")
                .arg(&refs)
                .query_async::<()>(&mut self.con)
                .await?;
            let n: Option<i64> = redis::cmd("GET")
                .arg(&refs)
                .query_async(&mut self.con)
                .await?;
            if n.is_some_and(|n| n > 0) {
                redis::cmd("UNWATCH")
                    .query_async::<()>(&mut self.con)
                    .await?;
                return Ok(());
            }
            let done: Option<()> = redis::pipe()
                .atomic()
                .cmd("DEL")
                .arg(agg)
                .arg(&refs)
                .ignore()
                .query_async(&mut self.con)
                .await?;
            if done.is_some() {
                self.collected += 1;
                return Ok(());
            }
            self.watch_retries += 1;
        }
    }

    /// Windows variant: zwindow moved aged-out entries to the `aged` list;
    /// each one is one reference fewer.
    async fn drain_aged(&mut self) -> redis::RedisResult<()> {
        loop {
            let batch: Option<Vec<String>> = redis::cmd("LPOP")
                .arg(self.aged())
                .arg(100)
                .query_async(&mut self.con)
                .await?;
            let Some(batch) = batch else { return Ok(()) };
            for agg in batch {
                redis::cmd("DECR")
                    .arg(self.refs_key(&agg))
                    .query_async::<i64>(&mut self.con)
                    .await?;
                self.aged_out += 1;
                self.collect(&agg).await?;
            }
        }
    }

    /// Removes one aggregation from one feed, paired with its DECR.
    async fn remove_from_feed(&mut self, feed: &str, agg: &str) -> redis::RedisResult<()> {
        let (removed,): (i64,) = redis::pipe()
            .atomic()
            .cmd("ZREM")
            .arg(feed)
            .arg(agg)
            .query_async(&mut self.con)
            .await?;
        if removed == 1 {
            redis::cmd("DECR")
                .arg(self.refs_key(agg))
                .query_async::<i64>(&mut self.con)
                .await?;
            self.collect(agg).await?;
        }
        Ok(())
    }

    /// follow_user: backfill the follower's feed with the followed user's
    /// activities (re-creating their aggregations if collected).
    async fn follow(&mut self, follower: u32, user: u32) -> redis::RedisResult<()> {
        redis::cmd("SADD")
            .arg(self.followers(user))
            .arg(follower)
            .query_async::<i64>(&mut self.con)
            .await?;
        let ids: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.activities(user))
            .query_async(&mut self.con)
            .await?;
        let feed = self.feed(follower);
        for id in ids {
            let (kind, ts): (String, i64) = redis::cmd("HMGET")
                .arg(format!("{}:activity:{id}", self.p))
                .arg("type")
                .arg("ts")
                .query_async(&mut self.con)
                .await?;
            let agg = self.agg_key(&kind, user, ts);
            redis::cmd("SADD")
                .arg(&agg)
                .arg(&id)
                .query_async::<i64>(&mut self.con)
                .await?;
            self.add_to_feed(&feed, &agg, ts).await?;
        }
        Ok(())
    }

    /// unfollow_user: take the user's aggregations out of the follower's feed.
    async fn unfollow(&mut self, follower: u32, user: u32) -> redis::RedisResult<()> {
        redis::cmd("SREM")
            .arg(self.followers(user))
            .arg(follower)
            .query_async::<i64>(&mut self.con)
            .await?;
        let feed = self.feed(follower);
        let entries: Vec<String> = redis::cmd("ZRANGE")
            .arg(&feed)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.con)
            .await?;
        // Aggregation keys end in `:<user>:<day>`.
        let by = |a: &&String| a.rsplit(':').nth(1) == Some(user.to_string().as_str());
        for agg in entries.iter().filter(by) {
            self.remove_from_feed(&feed, agg).await?;
        }
        Ok(())
    }

    /// delete_activity: out of its aggregation; an emptied aggregation leaves
    /// every feed that shows it.
    async fn delete_activity(&mut self, id: &str) -> redis::RedisResult<()> {
        let key = format!("{}:activity:{id}", self.p);
        let (kind, user, ts): (Option<String>, Option<u32>, Option<i64>) = redis::cmd("HMGET")
            .arg(&key)
            .arg("type")
            .arg("user")
            .arg("ts")
            .query_async(&mut self.con)
            .await?;
        let (Some(kind), Some(user), Some(ts)) = (kind, user, ts) else {
            return Ok(());
        };
        let agg = self.agg_key(&kind, user, ts);
        let (_, _, _, left): ((), (), (), i64) = redis::pipe()
            .atomic()
            .cmd("SREM")
            .arg(&agg)
            .arg(id)
            .cmd("SREM")
            .arg(self.activities(user))
            .arg(id)
            .cmd("DEL")
            .arg(&key)
            .cmd("SCARD")
            .arg(&agg)
            .query_async(&mut self.con)
            .await?;
        if left == 0 {
            let followers: Vec<u32> = redis::cmd("SMEMBERS")
                .arg(self.followers(user))
                .query_async(&mut self.con)
                .await?;
            let mut feeds = vec![self.profile(user)];
            feeds.extend(followers.iter().map(|f| self.feed(*f)));
            for feed in feeds {
                self.remove_from_feed(&feed, &agg).await?;
            }
        }
        Ok(())
    }

    /// Every key of the run and its value, to compare states.
    async fn snapshot(&mut self) -> redis::RedisResult<BTreeMap<String, String>> {
        let mut keys: Vec<String> = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}:*", self.p))
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut self.con)
                .await?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        let mut out = BTreeMap::new();
        for k in keys {
            let t: String = redis::cmd("TYPE")
                .arg(&k)
                .query_async(&mut self.con)
                .await?;
            let v = match t.as_str() {
                "string" => {
                    redis::cmd("GET")
                        .arg(&k)
                        .query_async::<String>(&mut self.con)
                        .await?
                }
                "set" => {
                    let mut m: Vec<String> = redis::cmd("SMEMBERS")
                        .arg(&k)
                        .query_async(&mut self.con)
                        .await?;
                    m.sort();
                    m.join(",")
                }
                "zset" => {
                    let m: Vec<(String, f64)> = redis::cmd("ZRANGE")
                        .arg(&k)
                        .arg(0)
                        .arg(-1)
                        .arg("WITHSCORES")
                        .query_async(&mut self.con)
                        .await?;
                    format!("{m:?}")
                }
                "hash" => {
                    let m: BTreeMap<String, String> = redis::cmd("HGETALL")
                        .arg(&k)
                        .query_async(&mut self.con)
                        .await?;
                    format!("{m:?}")
                }
                _ => t,
            };
            out.insert(k, v);
        }
        Ok(out)
    }

    /// Entries of a feed, oldest first.
    async fn entries(&mut self, feed: &str) -> redis::RedisResult<Vec<String>> {
        let v: Vec<String> = redis::cmd("ZRANGE")
            .arg(feed)
            .arg(0)
            .arg(-1)
            .query_async(&mut self.con)
            .await?;
        Ok(v.into_iter()
            .map(|a| {
                a.trim_start_matches(&format!("{}:agg:", self.p))
                    .to_string()
            })
            .collect())
    }

    /// Touches every feed (a windowed key trims on lookup) and, in the windows
    /// variant, drains what zwindow handed off.
    async fn settle(&mut self, users: &[u32]) -> redis::RedisResult<()> {
        if !self.classic {
            for u in users {
                for f in [self.feed(*u), self.profile(*u)] {
                    redis::cmd("ZCARD")
                        .arg(&f)
                        .query_async::<i64>(&mut self.con)
                        .await?;
                }
            }
            self.drain_aged().await?;
        }
        Ok(())
    }
}

async fn run(opts: Opts) -> redis::RedisResult<ExitCode> {
    let (client, mut con) = common::connect(&opts.url).await?;
    let p = common::run_prefix("activity_feed");
    println!("activity_feed [{}] prefix {p}", opts.variant());
    let mut rules = Vec::new();
    if !opts.classic {
        for pat in [format!("{p}:feed:*"), format!("{p}:profile:*")] {
            common::set_window(&mut con, &pat, WINDOW_MS as u64, Some(&format!("{p}:aged")))
                .await?;
            println!("  ZWINDOW SET {pat} {WINDOW_MS} MS MOVETO {p}:aged");
            rules.push(pat);
        }
    }
    let now = server_ms(&mut con).await?;
    // WATCH needs a connection nobody else sends on.
    let own = client.get_multiplexed_async_connection().await?;
    let mut f = Feeds {
        con: own,
        p: p.clone(),
        classic: opts.classic,
        day_shift: DAY_MS / 2 - now.rem_euclid(DAY_MS),
        collected: 0,
        evicted_by_size: 0,
        aged_out: 0,
        watch_retries: 0,
    };
    let mut checks = Checks::default();
    let users = [1, 2, 3, 4, 5];

    for (follower, user) in [(2, 1), (3, 1), (4, 1), (3, 2)] {
        f.follow(follower, user).await?;
    }
    // Today, yesterday, and five days ago (outside the 3-day window).
    let today = now - 300;
    let yesterday = now - DAY_MS - 300;
    let old = now - 5 * DAY_MS;
    let day_shift = f.day_shift;
    let day = |ts: i64| (ts + day_shift).div_euclid(DAY_MS);
    let mut acts: Vec<(String, &str, u32, i64, String)> = Vec::new();
    for (i, photo) in ["p1", "p2", "p3"].iter().enumerate() {
        acts.push((
            format!("like-{photo}"),
            "like",
            1,
            today - i as i64 * 10,
            photo.to_string(),
        ));
    }
    for (i, pic) in ["pic1", "pic2"].iter().enumerate() {
        acts.push((
            format!("post-{pic}"),
            "picture",
            1,
            today - 100 + i as i64 * 10,
            pic.to_string(),
        ));
    }
    for (i, photo) in ["p4", "p5"].iter().enumerate() {
        acts.push((
            format!("like-{photo}"),
            "like",
            1,
            yesterday + i as i64 * 10,
            photo.to_string(),
        ));
    }
    acts.push(("comment-c1".into(), "comment", 1, old, "c1".into()));
    for k in 0..12 {
        acts.push((
            format!("u2-{k}"),
            ["like", "picture", "comment", "share"][k % 4],
            2,
            today - 200 - (k as i64) * DAY_MS / 6,
            format!("o{k}"),
        ));
    }
    for (id, kind, user, ts, object) in &acts {
        f.new_activity(&Activity {
            id,
            kind,
            user: *user,
            ts: *ts,
            object,
        })
        .await?;
    }
    f.settle(&users).await?;
    let feed3 = f.entries(&f.feed(3)).await?;
    println!(
        "  {} activities fanned out; feed:3 (follows 1 and 2) holds {} entries: {feed3:?}",
        acts.len(),
        feed3.len()
    );
    checks.equal("feed:3 trimmed to MAX", feed3.len() as i64, MAX_FEED);
    let feed2 = f.entries(&f.feed(2)).await?;
    let want2 = vec![
        format!("like:1:{}", day(yesterday)),
        format!("picture:1:{}", day(today - 100)),
        format!("like:1:{}", day(today)),
    ];
    println!("  feed:2 (follows 1): {feed2:?}");
    checks.equal(
        "feed:2 aggregated by (type, user, day), 5-day-old comment gone",
        feed2,
        want2,
    );
    let likes: i64 = redis::cmd("SCARD")
        .arg(f.agg_key("like", 1, today))
        .query_async(&mut con)
        .await?;
    println!("  \"user 1 liked {likes} photos today\"");
    checks.equal("today's like aggregation", likes, 3);

    // Replay: the queue delivers activities again; nothing may change.
    let before = f.snapshot().await?;
    for (id, kind, user, ts, object) in acts.iter().take(8) {
        f.new_activity(&Activity {
            id,
            kind,
            user: *user,
            ts: *ts,
            object,
        })
        .await?;
    }
    f.settle(&users).await?;
    let after = f.snapshot().await?;
    checks.check(
        before == after,
        format!(
            "replaying 8 activities is idempotent ({} keys unchanged)",
            before.len()
        ),
    );

    // Follow with backfill, unfollow, delete.
    f.follow(5, 1).await?;
    f.settle(&users).await?;
    let feed5 = f.entries(&f.feed(5)).await?;
    println!("  user 5 follows user 1: feed:5 = {feed5:?}");
    checks.equal(
        "backfilled feed:5 equals feed:2",
        feed5.clone(),
        f.entries(&f.feed(2)).await?,
    );
    f.unfollow(4, 1).await?;
    let feed4 = f.entries(&f.feed(4)).await?;
    println!("  user 4 unfollows user 1: feed:4 = {feed4:?}");
    checks.equal("feed:4 after unfollow", feed4.len(), 0);
    f.delete_activity("post-pic1").await?;
    f.delete_activity("post-pic2").await?;
    f.settle(&users).await?;
    let feed2 = f.entries(&f.feed(2)).await?;
    println!("  both pictures deleted: feed:2 = {feed2:?}");
    checks.check(
        !feed2.iter().any(|a| a.starts_with("picture:1:")),
        "the emptied picture aggregation left every feed",
    );

    // Reference counts: every aggregation's counter equals the number of
    // feeds holding it; unreferenced aggregations are gone.
    let snap = f.snapshot().await?;
    let mut held: BTreeMap<String, i64> = BTreeMap::new();
    for u in users {
        for feed in [f.feed(u), f.profile(u)] {
            let v: Vec<String> = redis::cmd("ZRANGE")
                .arg(&feed)
                .arg(0)
                .arg(-1)
                .query_async(&mut con)
                .await?;
            checks.check(
                v.len() as i64 <= MAX_FEED,
                format!(
                    "{} has {} <= {MAX_FEED} entries",
                    feed.trim_start_matches(&p),
                    v.len()
                ),
            );
            for a in v {
                *held.entry(a).or_default() += 1;
            }
        }
    }
    let mut refs_ok = true;
    for (k, v) in &snap {
        if k.contains(":refs:") {
            let agg = k.replacen(":refs:", ":agg:", 1);
            let n: i64 = v.parse().unwrap_or(-1);
            if n != held.get(&agg).copied().unwrap_or(0) || (n > 0) != snap.contains_key(&agg) {
                println!(
                    "  refcount mismatch: {k} = {n}, held by {:?}",
                    held.get(&agg)
                );
                refs_ok = false;
            }
        }
        if k.contains(":agg:") && !held.contains_key(k) {
            println!("  unreferenced aggregation left behind: {k}");
            refs_ok = false;
        }
    }
    for agg in held.keys() {
        refs_ok &= snap.contains_key(&f.refs_key(agg));
    }
    checks.check(
        refs_ok,
        format!(
            "reference counts match feed membership for {} aggregations",
            held.len()
        ),
    );
    println!(
        "  entries evicted by size: {}, aged out: {}, aggregations collected: {}, WATCH retries: {}",
        f.evicted_by_size, f.aged_out, f.collected, f.watch_retries
    );

    common::drop_windows(&mut con, &rules).await;
    common::cleanup(&mut con, &p).await?;
    Ok(checks.finish("activity_feed", opts.variant()))
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    common::run("activity_feed", run(opts))
}
