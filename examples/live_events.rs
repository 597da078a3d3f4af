//! Live events on a crowdfunding project page (seeds 000/001): sorted sets
//! scored by time, one per event type, each with its own window.
//!
//! - `news.published:<project>`: objects (JSON) kept 24 h; unpublishing is ZREM.
//! - `supporters_count.incred:<project>`: a counter over 24 h whose members are
//!   contribution ids, so a contribution delivered twice counts once.
//! - `contributors:<project>`: the latest contributors, 30 min.
//! - `visitors_count.incred:<project>`: pages heartbeat every ~30 s and vanish
//!   one minute after they close (ZREM) or go silent.
//! - a bulk import (one pipeline) of recent contributions, some already too old.
//! - a subscriber told when news is published (PUBLISH) and, in the windows
//!   variant, when it expires (`zexpired` keyspace events) — the seed's
//!   "What doesn't work": with plain Redis nobody is told.
//!
//! The run compresses time (24 h = 2.5 s, 30 min = 1 s, 1 min = 600 ms,
//! heartbeat = 200 ms) and scores members with the server's clock in
//! milliseconds. `--classic` trims with `ZREMRANGEBYSCORE key -inf (now-D`
//! before every read and write, exactly as the seed does; the default sets
//! one `ZWINDOW SET` rule per event type and never trims.

mod common;

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;

use common::{Checks, Opts, server_ms};

const NEWS_MS: u64 = 2500; // "24 h"
const CONTRIB_MS: u64 = 2500; // "24 h"
const CONTRIBUTORS_MS: u64 = 1000; // "30 min"
const VISITORS_MS: u64 = 600; // "1 min"
const HEARTBEAT: Duration = Duration::from_millis(200); // "every ~30 s"
const PROJECT: u32 = 123;

/// One event type: a key and its window.
#[derive(Clone)]
struct Series {
    key: String,
    window_ms: u64,
    classic: bool,
}

impl Series {
    /// `ZADD key now member` (classic: then trim, as the seed does on write).
    async fn add(
        &self,
        con: &mut MultiplexedConnection,
        now: i64,
        member: &str,
    ) -> redis::RedisResult<i64> {
        let mut p = redis::pipe();
        p.cmd("ZADD").arg(&self.key).arg(now).arg(member);
        if self.classic {
            p.cmd("ZREMRANGEBYSCORE")
                .arg(&self.key)
                .arg("-inf")
                .arg(format!("({}", now - self.window_ms as i64))
                .ignore();
        }
        let (added,): (i64,) = p.query_async(con).await?;
        Ok(added)
    }

    /// Classic reads run `ZREMRANGEBYSCORE key -inf (now-D` first.
    fn trim(&self, p: &mut redis::Pipeline, now: i64) {
        if self.classic {
            p.cmd("ZREMRANGEBYSCORE")
                .arg(&self.key)
                .arg("-inf")
                .arg(format!("({}", now - self.window_ms as i64))
                .ignore();
        }
    }

    async fn count(&self, con: &mut MultiplexedConnection) -> redis::RedisResult<i64> {
        let now = server_ms(con).await?;
        let mut p = redis::pipe();
        self.trim(&mut p, now);
        p.cmd("ZCARD").arg(&self.key);
        let (n,): (i64,) = p.query_async(con).await?;
        Ok(n)
    }

    async fn list(&self, con: &mut MultiplexedConnection) -> redis::RedisResult<Vec<String>> {
        let now = server_ms(con).await?;
        let mut p = redis::pipe();
        self.trim(&mut p, now);
        p.cmd("ZRANGE").arg(&self.key).arg(0).arg(-1);
        let (v,): (Vec<String>,) = p.query_async(con).await?;
        Ok(v)
    }
}

/// What the subscriber saw.
#[derive(Debug)]
enum Seen {
    Published(String),
    Expired(String),
}

/// A browser page: heartbeats until told to close (ZREM) or to go silent.
async fn visitor(
    mut con: MultiplexedConnection,
    visitors: Series,
    id: String,
    stop_after: Option<Duration>,
    close_page: bool,
) -> redis::RedisResult<()> {
    let start = Instant::now();
    loop {
        let now = server_ms(&mut con).await?;
        visitors.add(&mut con, now, &id).await?;
        tokio::time::sleep(HEARTBEAT).await;
        if stop_after.is_some_and(|d| start.elapsed() >= d) {
            break;
        }
    }
    if close_page {
        // The page's unload handler: gone at once, not a minute later.
        let mut p = redis::pipe();
        p.cmd("ZREM").arg(&visitors.key).arg(&id).ignore();
        visitors.trim(&mut p, server_ms(&mut con).await?);
        p.query_async::<()>(&mut con).await?;
        println!("  visitor {id} closed the page (ZREM)");
    } else {
        println!("  visitor {id} went silent");
    }
    Ok(())
}

async fn run(opts: Opts) -> redis::RedisResult<ExitCode> {
    let (client, mut con) = common::connect(&opts.url).await?;
    let classic = opts.classic;
    let prefix = common::run_prefix("live_events");
    let db = client.get_connection_info().redis.db;
    let series = |name: &str, window_ms| Series {
        key: format!("{prefix}:{name}:{PROJECT}"),
        window_ms,
        classic,
    };
    let news = series("news.published", NEWS_MS);
    let contributions = series("supporters_count.incred", CONTRIB_MS);
    let contributors = series("contributors", CONTRIBUTORS_MS);
    let visitors = series("visitors_count.incred", VISITORS_MS);
    let channel = format!("{prefix}:live:{PROJECT}");
    let mut checks = Checks::default();
    println!("live_events [{}] prefix {prefix}", opts.variant());

    let mut rules = Vec::new();
    let mut old_notify: Option<String> = None;
    if !classic {
        for s in [&news, &contributions, &contributors, &visitors] {
            common::set_window(&mut con, &s.key, s.window_ms, None).await?;
            println!("  ZWINDOW SET {} {} MS", s.key, s.window_ms);
            rules.push(s.key.clone());
        }
        // zexpired is class z; K publishes on __keyspace@<db>__:<key>.
        let (_, flags): (String, String) = redis::cmd("CONFIG")
            .arg("GET")
            .arg("notify-keyspace-events")
            .query_async(&mut con)
            .await?;
        let mut want = flags.clone();
        for c in ['K', 'z'] {
            if !want.contains(c) && !want.contains('A') {
                want.push(c);
            }
        }
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg(&want)
            .query_async::<()>(&mut con)
            .await?;
        old_notify = Some(flags);
    }

    // The subscriber: what a websocket gateway would forward to open pages.
    let (tx, mut rx) = mpsc::unbounded_channel::<Seen>();
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(&channel).await?;
    let keyspace_news = format!("__keyspace@{db}__:{}", news.key);
    if !classic {
        pubsub.subscribe(&keyspace_news).await?;
    }
    let sub = tokio::spawn({
        let keyspace_news = keyspace_news.clone();
        async move {
            let mut stream = pubsub.into_on_message();
            while let Some(msg) = stream.next().await {
                let payload: String = msg.get_payload().unwrap_or_default();
                let seen = if msg.get_channel_name() == keyspace_news {
                    // Class z also carries zadd/zrem; only expiry matters here.
                    if payload != "zexpired" {
                        continue;
                    }
                    Seen::Expired(payload)
                } else {
                    Seen::Published(payload)
                };
                if tx.send(seen).is_err() {
                    break;
                }
            }
        }
    });

    let t0 = Instant::now();
    let now0 = server_ms(&mut con).await?;

    // Bulk import (e.g. after widening a window): one pipeline. 150 recent
    // contributions, 50 from before the window that must not count.
    let mut p = redis::pipe();
    for i in 0..150i64 {
        p.cmd("ZADD")
            .arg(&contributions.key)
            .arg(now0 - 500 + i * 3)
            .arg(format!("import-{i}"))
            .ignore();
    }
    for i in 0..50i64 {
        p.cmd("ZADD")
            .arg(&contributions.key)
            .arg(now0 - 5000 + i * 20)
            .arg(format!("stale-{i}"))
            .ignore();
    }
    contributions.trim(&mut p, now0);
    p.query_async::<()>(&mut con).await?;
    let imported = contributions.count(&mut con).await?;
    println!("  bulk import: 200 contributions sent in one pipeline, {imported} inside the window");
    checks.equal("contributions after import", imported, 150);

    // Live contributions; the queue delivers five of them twice.
    let mut new = 0;
    let mut dup = 0;
    for i in 0..20 {
        for _ in 0..(if i % 4 == 0 { 2 } else { 1 }) {
            let now = server_ms(&mut con).await?;
            match contributions
                .add(&mut con, now, &format!("contribution-{i}"))
                .await?
            {
                1 => new += 1,
                _ => dup += 1,
            }
            contributors
                .add(&mut con, now, &format!("user-{}", i % 10))
                .await?;
        }
    }
    println!("  20 contributions (+{dup} redelivered): ZADD returned 1 {new} times, 0 {dup} times");
    checks.equal(
        "duplicate contributions not double-counted",
        (new, dup),
        (20, 5),
    );

    // News: publish three, unpublish one.
    for n in 1..=3 {
        let now = server_ms(&mut con).await?;
        let body = format!("{{\"news\":{n},\"url\":\"https://example.org/p/{PROJECT}/news/{n}\"}}");
        news.add(&mut con, now, &body).await?;
        redis::cmd("PUBLISH")
            .arg(&channel)
            .arg(format!("news.published {body}"))
            .query_async::<i64>(&mut con)
            .await?;
    }
    let unpublished = format!("{{\"news\":2,\"url\":\"https://example.org/p/{PROJECT}/news/2\"}}");
    let removed: i64 = redis::cmd("ZREM")
        .arg(&news.key)
        .arg(&unpublished)
        .query_async(&mut con)
        .await?;
    redis::cmd("PUBLISH")
        .arg(&channel)
        .arg("news.unpublished 2")
        .query_async::<i64>(&mut con)
        .await?;
    let listed = news.list(&mut con).await?;
    println!(
        "  news: 3 published, {removed} unpublished (ZREM), {} listed",
        listed.len()
    );
    checks.equal("news listed after unpublishing", listed.len(), 2);

    // Visitors: a closes the page at 0.5 s, b goes silent at 0.5 s, c stays.
    let mut pages = Vec::new();
    for (id, stop, close) in [
        ("visitor-a", Some(Duration::from_millis(500)), true),
        ("visitor-b", Some(Duration::from_millis(500)), false),
        ("visitor-c", Some(Duration::from_millis(1500)), false),
    ] {
        let c = client.get_multiplexed_async_connection().await?;
        pages.push(tokio::spawn(visitor(
            c,
            visitors.clone(),
            id.to_string(),
            stop,
            close,
        )));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let on_page = visitors.count(&mut con).await?;
    println!(
        "  visitors on the page at {:.1} s: {on_page}",
        t0.elapsed().as_secs_f64()
    );
    checks.equal("visitors while all pages are open", on_page, 3);

    tokio::time::sleep_until((t0 + Duration::from_millis(1350)).into()).await;
    let on_page = visitors.count(&mut con).await?;
    println!(
        "  visitors on the page at {:.1} s: {on_page}",
        t0.elapsed().as_secs_f64()
    );
    checks.equal("visitors after one closed and one went silent", on_page, 1);

    // A second wave of contributors; the first wave is older than "30 min".
    let mut wave2 = BTreeSet::new();
    for i in [10, 11, 12, 3] {
        let now = server_ms(&mut con).await?;
        contributors
            .add(&mut con, now, &format!("user-{i}"))
            .await?;
        wave2.insert(format!("user-{i}"));
    }
    tokio::time::sleep_until((t0 + Duration::from_millis(1450)).into()).await;
    let latest: BTreeSet<String> = contributors.list(&mut con).await?.into_iter().collect();
    println!("  latest contributors (30 min): {latest:?}");
    checks.equal("latest contributors are the second wave", latest, wave2);
    let total = contributions.count(&mut con).await?;
    println!("  contributions in the last 24 h: {total}");
    checks.equal("contributions in window", total, 170);

    for page in pages {
        page.await
            .map_err(|e| redis::RedisError::from(std::io::Error::other(e)))??;
    }

    // Expiry of the news: the windows variant is told; classic only finds out
    // by reading after the client computes the deadline itself.
    let mut published = 0;
    let mut expired = 0;
    let deadline = t0 + Duration::from_millis(NEWS_MS + 2500);
    if classic {
        tokio::time::sleep(Duration::from_millis(NEWS_MS + 200).saturating_sub(t0.elapsed())).await;
    }
    loop {
        let wait = if classic || expired > 0 {
            Duration::from_millis(50)
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(Seen::Published(m))) => {
                published += 1;
                println!("  subscriber: {m}");
            }
            Ok(Some(Seen::Expired(ev))) => {
                expired += 1;
                println!(
                    "  subscriber: {ev} on {} at {:.1} s",
                    news.key,
                    t0.elapsed().as_secs_f64()
                );
            }
            Ok(None) | Err(_) => break,
        }
    }
    let remaining = news.list(&mut con).await?;
    println!(
        "  news listed at {:.1} s: {}",
        t0.elapsed().as_secs_f64(),
        remaining.len()
    );
    checks.equal("publish messages received", published, 4);
    checks.equal("news listed after 24 h", remaining.len(), 0);
    if classic {
        println!("  classic: no expiry notification exists; pages must know every window");
    } else {
        checks.check(
            expired >= 1,
            format!("zexpired notifications for the news key: {expired}"),
        );
    }

    sub.abort();
    if let Some(flags) = old_notify {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("notify-keyspace-events")
            .arg(flags)
            .query_async::<()>(&mut con)
            .await?;
    }
    common::drop_windows(&mut con, &rules).await;
    common::cleanup(&mut con, &prefix).await?;
    Ok(checks.finish("live_events", opts.variant()))
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    common::run("live_events", run(opts))
}
