//! An event folder (seed 002): bursts of `post-metric-updated` events are
//! folded per account, and one `post-metric-last-updated` event per account
//! is emitted once the account's burst has been quiet for the folding window.
//!
//! Each event does `SADD metrics:<account> <metric>…` (the superset of the
//! metrics the burst touched) and `ZADD folder <now> <account>`: the score is
//! the time of the account's latest event, so ZADD returns 0 when the event
//! folded into a pending one. The folding ratio is the article's
//! `F_R = N_F / N_E`: N_F = count(ZADD == 0), N_E = fold-eligible events =
//! all events minus the first event of each burst (the generator knows the
//! bursts, the "offline analysis" the article mentions). The article's
//! online estimate `count(ZADD == 0) / N_total` is printed beside it.
//!
//! `--classic`: two consumers poll `ZRANGEBYSCORE folder -inf (now-fold` and
//! claim each due account with `WATCH folder`, a ZSCORE re-check and
//! `MULTI ZREM / SMEMBERS / DEL EXEC`: the seed's note 2 race (two consumers
//! publishing the same fold, or a consumer removing an account whose burst
//! just resumed) becomes an aborted EXEC and a retry. Default: the folder
//! keys are windowed with `ZWINDOW SET folder:* <fold> MS MOVETO due`, so
//! zwindow itself hands each quiet account to the `due` list, and the
//! consumers just BLPOP it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use clap::Parser;
use redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;

use common::{Checks, Opts, server_ms};

const FOLD_MS: u64 = 300;
const EVENT_GAP_MS: u64 = 40;
const QUIET_MS: u64 = 900;
const ACCOUNTS: usize = 6;
const PARTITIONS: usize = 2;
const METRICS: [&str; 6] = [
    "likes",
    "shares",
    "comments",
    "impressions",
    "saves",
    "clicks",
];

/// One post-metric-updated event, at an offset from the start of the run.
struct Event {
    at_ms: u64,
    account: usize,
    post: String,
    metrics: Vec<&'static str>,
    burst: usize,
}

/// Deterministic bursts: account i sends 3+2i events 40 ms apart; accounts
/// 0 and 3 come back after 900 ms of quiet for a second burst.
fn generate() -> (Vec<Event>, Vec<(usize, BTreeSet<String>)>) {
    let mut events = Vec::new();
    let mut bursts: Vec<(usize, BTreeSet<String>)> = Vec::new();
    let mut post = 0;
    let mut burst_of = |account: usize, start: u64, len: usize, events: &mut Vec<Event>| {
        let id = bursts.len();
        let mut superset = BTreeSet::new();
        for k in 0..len {
            let metrics = vec![
                METRICS[(account + k) % 6],
                METRICS[(account * 2 + k / 2) % 6],
            ];
            superset.extend(metrics.iter().map(|m| m.to_string()));
            post += 1;
            events.push(Event {
                at_ms: start + k as u64 * EVENT_GAP_MS,
                account,
                post: format!("post_{post}"),
                metrics,
                burst: id,
            });
        }
        bursts.push((account, superset));
        start + (len as u64 - 1) * EVENT_GAP_MS
    };
    for account in 0..ACCOUNTS {
        let end = burst_of(account, account as u64 * 15, 3 + 2 * account, &mut events);
        if account % 3 == 0 {
            burst_of(account, end + QUIET_MS, 4, &mut events);
        }
    }
    events.sort_by_key(|e| e.at_ms);
    (events, bursts)
}

fn account_id(i: usize) -> String {
    format!("account_{}", i + 1)
}

struct Keys {
    prefix: String,
}

impl Keys {
    /// Classic: one folder. Windows: the folder partitioned in two keys,
    /// both matched by one rule.
    fn folder(&self, classic: bool, account: usize) -> String {
        if classic {
            format!("{}:folder", self.prefix)
        } else {
            format!("{}:folder:{}", self.prefix, account % PARTITIONS)
        }
    }
    fn metrics(&self, account: &str) -> String {
        format!("{}:metrics:{account}", self.prefix)
    }
    fn due(&self) -> String {
        format!("{}:due", self.prefix)
    }
}

/// A folded event: the account, the superset of its updated metrics, and
/// when a consumer emitted it.
type Folded = (String, BTreeSet<String>, Instant);

#[derive(Default)]
struct RaceStats {
    aborted_exec: AtomicU64,
    lost_claims: AtomicU64,
    resumed: AtomicU64,
}

/// Classic consumer: query due accounts, then claim each under WATCH.
async fn classic_consumer(
    mut con: MultiplexedConnection,
    keys: Arc<Keys>,
    out: mpsc::UnboundedSender<Folded>,
    stop: Arc<AtomicBool>,
    races: Arc<RaceStats>,
) -> redis::RedisResult<()> {
    let folder = keys.folder(true, 0);
    while !stop.load(Relaxed) {
        let now = server_ms(&mut con).await?;
        let cutoff = now - FOLD_MS as i64;
        let due: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(&folder)
            .arg("-inf")
            .arg(format!("({cutoff}"))
            .query_async(&mut con)
            .await?;
        for account in due {
            loop {
                redis::cmd("WATCH")
                    .arg(&folder)
                    .query_async::<()>(&mut con)
                    .await?;
                let score: Option<f64> = redis::cmd("ZSCORE")
                    .arg(&folder)
                    .arg(&account)
                    .query_async(&mut con)
                    .await?;
                match score {
                    None => {
                        // Another consumer published it between our query and now.
                        races.lost_claims.fetch_add(1, Relaxed);
                        redis::cmd("UNWATCH").query_async::<()>(&mut con).await?;
                        break;
                    }
                    Some(s) if s >= cutoff as f64 => {
                        // The burst resumed after the query: not due any more.
                        races.resumed.fetch_add(1, Relaxed);
                        redis::cmd("UNWATCH").query_async::<()>(&mut con).await?;
                        break;
                    }
                    Some(_) => {}
                }
                let metrics_key = keys.metrics(&account);
                let claimed: Option<(i64, Vec<String>)> = redis::pipe()
                    .atomic()
                    .cmd("ZREM")
                    .arg(&folder)
                    .arg(&account)
                    .cmd("SMEMBERS")
                    .arg(&metrics_key)
                    .cmd("DEL")
                    .arg(&metrics_key)
                    .ignore()
                    .query_async(&mut con)
                    .await?;
                match claimed {
                    Some((1, metrics)) => {
                        let _ = out.send((
                            account.clone(),
                            metrics.into_iter().collect(),
                            Instant::now(),
                        ));
                        break;
                    }
                    Some(_) => {
                        races.lost_claims.fetch_add(1, Relaxed);
                        break;
                    }
                    // EXEC aborted: the folder changed under WATCH; look again.
                    None => {
                        races.aborted_exec.fetch_add(1, Relaxed);
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(())
}

/// Windows consumer: zwindow moved each quiet account to the due list.
async fn windows_consumer(
    mut con: MultiplexedConnection,
    keys: Arc<Keys>,
    out: mpsc::UnboundedSender<Folded>,
    stop: Arc<AtomicBool>,
) -> redis::RedisResult<()> {
    while !stop.load(Relaxed) {
        let popped: Option<(String, String)> = redis::cmd("BLPOP")
            .arg(keys.due())
            .arg(0.2)
            .query_async(&mut con)
            .await?;
        let Some((_, account)) = popped else { continue };
        let metrics_key = keys.metrics(&account);
        let (metrics,): (Vec<String>,) = redis::pipe()
            .atomic()
            .cmd("SMEMBERS")
            .arg(&metrics_key)
            .cmd("DEL")
            .arg(&metrics_key)
            .ignore()
            .query_async(&mut con)
            .await?;
        let _ = out.send((account, metrics.into_iter().collect(), Instant::now()));
    }
    Ok(())
}

async fn run(opts: Opts) -> redis::RedisResult<ExitCode> {
    let (client, mut con) = common::connect(&opts.url).await?;
    let classic = opts.classic;
    let keys = Arc::new(Keys {
        prefix: common::run_prefix("event_folder"),
    });
    let mut checks = Checks::default();
    println!("event_folder [{}] prefix {}", opts.variant(), keys.prefix);
    let mut rules = Vec::new();
    if !classic {
        let pattern = format!("{}:folder:*", keys.prefix);
        common::set_window(&mut con, &pattern, FOLD_MS, Some(&keys.due())).await?;
        println!("  ZWINDOW SET {pattern} {FOLD_MS} MS MOVETO {}", keys.due());
        rules.push(pattern);
    }

    let (events, bursts) = generate();
    let stop = Arc::new(AtomicBool::new(false));
    let races = Arc::new(RaceStats::default());
    let (tx, mut rx) = mpsc::unbounded_channel::<Folded>();
    let mut consumers = Vec::new();
    for _ in 0..2 {
        // WATCH and BLPOP need a connection of their own.
        let c = client.get_multiplexed_async_connection().await?;
        let (k, t, s) = (Arc::clone(&keys), tx.clone(), Arc::clone(&stop));
        consumers.push(if classic {
            tokio::spawn(classic_consumer(c, k, t, s, Arc::clone(&races)))
        } else {
            tokio::spawn(windows_consumer(c, k, t, s))
        });
    }
    drop(tx);

    // The producer: events arrive on their schedule.
    let t0 = Instant::now();
    let (mut zadd1, mut zadd0) = (0u64, 0u64);
    for e in &events {
        tokio::time::sleep_until((t0 + Duration::from_millis(e.at_ms)).into()).await;
        let account = account_id(e.account);
        let now = server_ms(&mut con).await?;
        // Metrics first: once the account can be due, its superset is complete.
        let (added,): (i64,) = redis::pipe()
            .cmd("SADD")
            .arg(keys.metrics(&account))
            .arg(&e.metrics)
            .ignore()
            .cmd("ZADD")
            .arg(keys.folder(classic, e.account))
            .arg(now)
            .arg(&account)
            .query_async(&mut con)
            .await?;
        if added == 1 {
            zadd1 += 1
        } else {
            zadd0 += 1
        }
        let _ = (&e.post, e.burst);
    }
    println!(
        "  produced {} post-metric-updated events for {ACCOUNTS} accounts in {} bursts",
        events.len(),
        bursts.len()
    );

    // Collect folded events until every burst has been emitted (or too late).
    let mut emitted: Vec<Folded> = Vec::new();
    let deadline = Instant::now() + Duration::from_millis(FOLD_MS + 2000);
    while emitted.len() < bursts.len() {
        match tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            rx.recv(),
        )
        .await
        {
            Ok(Some(f)) => {
                let at = f.2.duration_since(t0).as_secs_f64();
                println!(
                    "  folded at {at:.2} s: {{\"account_id\": \"{}\", \"metrics\": {:?}}}",
                    f.0, f.1
                );
                emitted.push(f);
            }
            _ => break,
        }
    }
    // Any duplicate publication would show up within a few more polls.
    tokio::time::sleep(Duration::from_millis(150)).await;
    while let Ok(f) = rx.try_recv() {
        println!("  folded (late): {} {:?}", f.0, f.1);
        emitted.push(f);
    }
    stop.store(true, Relaxed);
    for c in consumers {
        c.await
            .map_err(|e| redis::RedisError::from(std::io::Error::other(e)))??;
    }

    let total = events.len() as u64;
    let eligible = total - bursts.len() as u64;
    let ratio = zadd0 as f64 / eligible as f64;
    println!("  events: {total}; ZADD returned 1: {zadd1}, 0: {zadd0}; fold-eligible: {eligible}");
    println!(
        "  folding ratio F_R = N_F/N_E = {zadd0}/{eligible} = {ratio:.3} (estimate ZADD==0/N_total = {:.3})",
        zadd0 as f64 / total as f64
    );
    println!(
        "  folded events emitted: {} (one per burst: {})",
        emitted.len(),
        bursts.len()
    );
    if classic {
        println!(
            "  races handled: {} aborted EXEC, {} claims lost to the other consumer, {} bursts resumed after the query",
            races.aborted_exec.load(Relaxed),
            races.lost_claims.load(Relaxed),
            races.resumed.load(Relaxed)
        );
    }

    checks.equal(
        "folded events emitted (one per burst, none twice)",
        emitted.len(),
        bursts.len(),
    );
    // Bursts of one account are emitted in order; match them up.
    let mut want: BTreeMap<String, Vec<BTreeSet<String>>> = BTreeMap::new();
    for (a, set) in &bursts {
        want.entry(account_id(*a)).or_default().push(set.clone());
    }
    let mut got: BTreeMap<String, Vec<BTreeSet<String>>> = BTreeMap::new();
    for (a, set, _) in emitted {
        got.entry(a).or_default().push(set);
    }
    checks.check(
        got == want,
        "each folded event carries its burst's metric superset",
    );
    checks.equal("ZADD returned 1 once per burst", zadd1, bursts.len() as u64);
    checks.check(
        (ratio - 1.0).abs() < 1e-9,
        format!("folding ratio {ratio:.3} = 1.000 (no fake news)"),
    );
    let mut left = 0i64;
    for p in 0..PARTITIONS {
        left += redis::cmd("ZCARD")
            .arg(keys.folder(classic, p))
            .query_async::<i64>(&mut con)
            .await?;
    }
    checks.equal("accounts left in the folder", left, 0);

    common::drop_windows(&mut con, &rules).await;
    common::cleanup(&mut con, &keys.prefix).await?;
    Ok(checks.finish("event_folder", opts.variant()))
}

fn main() -> ExitCode {
    let opts = Opts::parse();
    common::run("event_folder", run(opts))
}
