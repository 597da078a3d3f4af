//! Heartbeats from live-stream viewers (seed 004): every viewer calls the
//! heartbeat endpoint every 30 s; each heartbeat
//!
//! - loads the viewer's profile through a cache (`GET`, on a miss `SET … EX 60`);
//! - extends the viewer's viewing session, or starts a new one when the last
//!   one ended more than 2 minutes ago (`session_start` / `session_end`
//!   sorted sets per event, the "DB record" is counted client-side);
//! - logs the heartbeat in `hb:<event>` (and `hb:session:<id>` when the
//!   viewer watches a session), scored in milliseconds: a viewer is alive
//!   when it heartbeated within the last 65 s;
//! - counts the viewer once per 5-minute frame in a stats hash
//!   (`viewerCount`, `group:<id>`, `country:<cc>` via HINCRBY, deduplicated by
//!   a per-frame set);
//! - records attendance (`SADD attendance:<event>`).
//!
//! The run replays six minutes of heartbeats from 2,000 viewers, in time
//! order, 500 heartbeats per pipeline round trip, with timestamps ending at the
//! server's clock. `--classic` counts the alive viewers as the seed does,
//! `ZCOUNT hb:<event> <now-65000> +inf`, and the sets keep every viewer that
//! ever came; the default sets `ZWINDOW SET hb:* 65000 MS` and counts with
//! ZCARD — the set holds only the live viewers.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use common::{Checks, Opts, server_ms};

const VIEWERS: u32 = 2000;
const PERIOD_MS: i64 = 30_000;
const SPAN_MS: i64 = 6 * 60_000;
const ALIVE_MS: i64 = 65_000;
const SESSION_GAP_MS: i64 = 120_000;
const FRAME_MS: i64 = 5 * 60_000;
const BATCH: usize = 500;
const EVENT: &str = "e1";
const GROUPS: [&str; 3] = ["047417b2", "5e1f0c2a", "9d3b7741"];
const COUNTRIES: [&str; 5] = ["HK", "US", "FR", "BR", "JP"];

/// A tiny deterministic generator, so every run replays the same history.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

struct Viewer {
    id: u32,
    group: &'static str,
    country: &'static str,
    watches_session: bool,
    beats: Vec<i64>,
    sessions: u32,
}

/// Viewer histories ending at `now`: 60 % still watching (last beat within
/// 30 s), 30 % left more than 75 s ago, 10 % left for 3 minutes and came back
/// (two viewing sessions). Nobody's last beat falls within 10 s of the 65 s
/// edge, so the few seconds the run takes cannot change the answer.
fn history(now: i64) -> Vec<Viewer> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..VIEWERS)
        .map(|id| {
            let kind = id % 10;
            let phase = rng.below(PERIOD_MS as u64) as i64;
            let last = match kind {
                0..=5 | 9 => now - phase,
                _ => now - 75_000 - rng.below(200_000) as i64,
            };
            let first = now - SPAN_MS + rng.below(60_000) as i64;
            let mut beats: Vec<i64> = (0..)
                .map(|k| last - k * PERIOD_MS)
                .take_while(|t| *t >= first.min(last))
                .collect();
            beats.reverse();
            let mut sessions = 1;
            if kind == 9 && beats.len() > 8 {
                // Away for three minutes in the middle: six beats missing.
                beats.drain(1..7);
                sessions = 2;
            }
            Viewer {
                id,
                group: GROUPS[(id % 3) as usize],
                country: COUNTRIES[(id % 5) as usize],
                watches_session: id % 4 == 0,
                beats,
                sessions,
            }
        })
        .collect()
}

async fn run(opts: Opts) -> redis::RedisResult<ExitCode> {
    let (_client, mut con) = common::connect(&opts.url).await?;
    let p = common::run_prefix("heartbeats");
    let classic = opts.classic;
    println!("heartbeats [{}] prefix {p}", opts.variant());
    let mut rules = Vec::new();
    if !classic {
        let pat = format!("{p}:hb:*");
        common::set_window(&mut con, &pat, ALIVE_MS as u64, None).await?;
        println!("  ZWINDOW SET {pat} {ALIVE_MS} MS");
        rules.push(pat);
    }
    let hb = format!("{p}:hb:{EVENT}");
    let hb_session = format!("{p}:hb:session:s1");
    let start_key = format!("{p}:session_start:{EVENT}");
    let end_key = format!("{p}:session_end:{EVENT}");
    let attendance = format!("{p}:attendance:{EVENT}");
    let frame_seen = |f: i64| format!("{p}:frame_viewers:{EVENT}:{f}");
    let stats = |f: i64| format!("{p}:stats:{EVENT}:{f}");
    let profile = |v: u32| format!("{p}:profile:{v}");

    let now0 = server_ms(&mut con).await?;
    let viewers = history(now0);
    let mut beats: Vec<(i64, u32)> = viewers
        .iter()
        .flat_map(|v| v.beats.iter().map(move |t| (*t, v.id)))
        .collect();
    beats.sort();
    let t0 = Instant::now();
    let (mut misses, mut sessions_created, mut round_trips) = (0u64, 0u64, 0u64);
    // Session ends written earlier in the same batch (the pipeline's reads
    // ran before its writes).
    let mut ends: HashMap<u32, i64> = HashMap::new();
    for batch in beats.chunks(BATCH) {
        let mut reads = redis::pipe();
        for (ts, v) in batch {
            reads.cmd("GET").arg(profile(*v));
            reads.cmd("ZSCORE").arg(&end_key).arg(*v);
            reads
                .cmd("SADD")
                .arg(frame_seen(ts.div_euclid(FRAME_MS)))
                .arg(*v);
        }
        let got: Vec<redis::Value> = reads.query_async(&mut con).await?;
        let mut writes = redis::pipe();
        for (i, (ts, v)) in batch.iter().enumerate() {
            let viewer = &viewers[*v as usize];
            let cached: Option<String> = redis::from_redis_value(&got[3 * i])?;
            if cached.is_none() && !ends.contains_key(v) {
                misses += 1;
                let body = format!(
                    "{{\"id\":{v},\"group\":\"{}\",\"country\":\"{}\"}}",
                    viewer.group, viewer.country
                );
                writes
                    .cmd("SET")
                    .arg(profile(*v))
                    .arg(body)
                    .arg("EX")
                    .arg(60)
                    .ignore();
            }
            let stored: Option<f64> = redis::from_redis_value(&got[3 * i + 1])?;
            let last_end = ends.get(v).copied().or(stored.map(|s| s as i64));
            if last_end.is_none_or(|e| *ts - e > SESSION_GAP_MS) {
                sessions_created += 1;
                writes.cmd("ZADD").arg(&start_key).arg(*ts).arg(*v).ignore();
            }
            writes.cmd("ZADD").arg(&end_key).arg(*ts).arg(*v).ignore();
            ends.insert(*v, *ts);
            writes.cmd("ZADD").arg(&hb).arg(*ts).arg(*v).ignore();
            if viewer.watches_session {
                writes
                    .cmd("ZADD")
                    .arg(&hb_session)
                    .arg(*ts)
                    .arg(*v)
                    .ignore();
            }
            let first_in_frame: i64 = redis::from_redis_value(&got[3 * i + 2])?;
            if first_in_frame == 1 {
                let key = stats(ts.div_euclid(FRAME_MS));
                writes
                    .cmd("HINCRBY")
                    .arg(&key)
                    .arg("viewerCount")
                    .arg(1)
                    .ignore();
                writes
                    .cmd("HINCRBY")
                    .arg(&key)
                    .arg(format!("group:{}", viewer.group))
                    .arg(1)
                    .ignore();
                writes
                    .cmd("HINCRBY")
                    .arg(&key)
                    .arg(format!("country:{}", viewer.country))
                    .arg(1)
                    .ignore();
            }
            writes.cmd("SADD").arg(&attendance).arg(*v).ignore();
        }
        writes.query_async::<()>(&mut con).await?;
        round_trips += 2;
        ends.clear();
    }
    let secs = t0.elapsed().as_secs_f64();
    println!(
        "  {} heartbeats from {VIEWERS} viewers in {round_trips} pipelined round trips, {secs:.2} s ({:.0} heartbeats/s)",
        beats.len(),
        beats.len() as f64 / secs
    );

    let now = server_ms(&mut con).await?;
    let alive_since = now - ALIVE_MS;
    let count = |key: &str| {
        let mut c = if classic {
            redis::cmd("ZCOUNT")
        } else {
            redis::cmd("ZCARD")
        };
        c.arg(key);
        if classic {
            c.arg(alive_since).arg("+inf");
        }
        c
    };
    let alive: i64 = count(&hb).query_async(&mut con).await?;
    let alive_session: i64 = count(&hb_session).query_async(&mut con).await?;
    let stored: i64 = redis::cmd("ZCARD").arg(&hb).query_async(&mut con).await?;
    let want_alive = viewers
        .iter()
        .filter(|v| v.beats.last().is_some_and(|t| *t >= alive_since))
        .count() as i64;
    let want_session = viewers
        .iter()
        .filter(|v| v.watches_session && v.beats.last().is_some_and(|t| *t >= alive_since))
        .count() as i64;
    println!(
        "  alive viewers (heartbeat within 65 s): {alive}; in session s1: {alive_session}; members stored in {}: {stored}",
        hb.trim_start_matches(&p)
    );
    let mut checks = Checks::default();
    checks.equal("alive count", alive, want_alive);
    checks.equal("alive in session s1", alive_session, want_session);
    if !classic {
        checks.equal("windowed set holds only live viewers", stored, want_alive);
    }

    let attended: i64 = redis::cmd("SCARD")
        .arg(&attendance)
        .query_async(&mut con)
        .await?;
    checks.equal("attendance", attended, VIEWERS as i64);
    checks.equal(
        "profile cache misses (one per viewer)",
        misses,
        VIEWERS as u64,
    );
    let want_sessions: u64 = viewers.iter().map(|v| v.sessions as u64).sum();
    let started: i64 = redis::cmd("ZCARD")
        .arg(&start_key)
        .query_async(&mut con)
        .await?;
    println!(
        "  viewing sessions: {sessions_created} created ({} viewers came back after a gap)",
        sessions_created - VIEWERS as u64
    );
    checks.equal("viewing sessions", sessions_created, want_sessions);
    checks.equal("viewers with a session start", started, VIEWERS as i64);

    // 5-minute frames: viewers counted once per frame, grouped two ways.
    let mut want_frames: BTreeMap<i64, BTreeSet<u32>> = BTreeMap::new();
    for (ts, v) in &beats {
        want_frames
            .entry(ts.div_euclid(FRAME_MS))
            .or_default()
            .insert(*v);
    }
    for (frame, who) in &want_frames {
        let h: BTreeMap<String, i64> = redis::cmd("HGETALL")
            .arg(stats(*frame))
            .query_async(&mut con)
            .await?;
        let total = h.get("viewerCount").copied().unwrap_or(0);
        let by_group: i64 = h
            .iter()
            .filter(|(k, _)| k.starts_with("group:"))
            .map(|(_, v)| v)
            .sum();
        let by_country: BTreeMap<&str, i64> = h
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("country:").map(|c| (c, *v)))
            .collect();
        println!(
            "  frame {}: viewerCount {total}, countByViewingCountry {by_country:?}",
            frame * FRAME_MS
        );
        let ok = total == who.len() as i64
            && by_group == total
            && by_country.values().sum::<i64>() == total;
        checks.check(
            ok,
            format!(
                "frame {frame}: {total} viewers = sum by group = sum by country = {}",
                who.len()
            ),
        );
    }

    common::drop_windows(&mut con, &rules).await;
    common::cleanup(&mut con, &p).await?;
    Ok(checks.finish("heartbeats", opts.variant()))
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    common::run("heartbeats", run(opts))
}
