//! Plumbing shared by the examples: command-line options, the connection,
//! the server clock, a per-run key prefix, window rules, and the consistency
//! checks that decide the exit status.
//!
//! Every example runs in two variants against the same server: `--classic`
//! sends exactly what a Redis user sends today (so it also runs against
//! redis-server), the default relies on zwindow's window rules. Both read the
//! time from the server (`TIME`), because window rules age members by the
//! server's clock, and a client clock that drifts from it would make the two
//! variants disagree at the window edges.
#![allow(dead_code)]

use std::fmt::Display;
use std::process::ExitCode;

use clap::Parser;
use redis::aio::MultiplexedConnection;

/// Options every example accepts.
#[derive(Parser, Debug, Clone)]
pub struct Opts {
    /// Server to talk to.
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub url: String,
    /// Send only the commands a Redis user sends today (trimming with
    /// ZREMRANGEBYSCORE, counting with ZCOUNT, …); runs against redis-server too.
    #[arg(long)]
    pub classic: bool,
}

impl Opts {
    pub fn variant(&self) -> &'static str {
        if self.classic { "classic" } else { "windows" }
    }
}

/// Opens a client and one multiplexed connection.
pub async fn connect(url: &str) -> redis::RedisResult<(redis::Client, MultiplexedConnection)> {
    let client = redis::Client::open(url)?;
    let con = client.get_multiplexed_async_connection().await?;
    Ok((client, con))
}

/// The server's clock in Unix milliseconds.
pub async fn server_ms(con: &mut MultiplexedConnection) -> redis::RedisResult<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(con).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// A key prefix unique to this run, so concurrent runs never share keys.
pub fn run_prefix(example: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("ex:{example}:{}-{nanos:x}", std::process::id())
}

/// `ZWINDOW SET pattern ms MS [MOVETO destination]`: members of matching
/// sorted sets, scored in Unix milliseconds, age out `ms` after their score.
pub async fn set_window(
    con: &mut MultiplexedConnection,
    pattern: &str,
    ms: u64,
    moveto: Option<&str>,
) -> redis::RedisResult<()> {
    let mut cmd = redis::cmd("ZWINDOW");
    cmd.arg("SET").arg(pattern).arg(ms).arg("MS");
    if let Some(dest) = moveto {
        cmd.arg("MOVETO").arg(dest);
    }
    cmd.query_async::<()>(con).await
}

/// Removes the rules this run created (rules are server state and would
/// otherwise outlive the run).
pub async fn drop_windows(con: &mut MultiplexedConnection, patterns: &[String]) {
    for p in patterns {
        let _: redis::RedisResult<i64> = redis::cmd("ZWINDOW")
            .arg("DEL")
            .arg(p)
            .query_async(con)
            .await;
    }
}

/// Deletes every key of this run (SCAN, so it is safe on a shared server).
pub async fn cleanup(con: &mut MultiplexedConnection, prefix: &str) -> redis::RedisResult<usize> {
    let mut cursor: u64 = 0;
    let mut n = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(con)
            .await?;
        if !keys.is_empty() {
            n += redis::cmd("DEL")
                .arg(&keys)
                .query_async::<usize>(con)
                .await?;
        }
        if next == 0 {
            return Ok(n);
        }
        cursor = next;
    }
}

/// Consistency checks: each prints its outcome; any failure makes the
/// example exit non-zero.
#[derive(Default)]
pub struct Checks {
    failed: Vec<String>,
    passed: usize,
}

impl Checks {
    pub fn check(&mut self, ok: bool, what: impl Display) {
        if ok {
            self.passed += 1;
            println!("  check ok: {what}");
        } else {
            println!("  CHECK FAILED: {what}");
            self.failed.push(what.to_string());
        }
    }

    /// `got == want`, printing both.
    pub fn equal<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        let ok = got == want;
        self.check(ok, format!("{what}: {got:?} (expected {want:?})"));
    }

    /// Prints the verdict line the tests look for and turns it into the exit status.
    pub fn finish(self, example: &str, variant: &str) -> ExitCode {
        if self.failed.is_empty() {
            println!("{example} [{variant}]: all {} checks passed", self.passed);
            ExitCode::SUCCESS
        } else {
            println!(
                "{example} [{variant}]: {} of {} checks FAILED",
                self.failed.len(),
                self.failed.len() + self.passed
            );
            ExitCode::FAILURE
        }
    }
}

/// Runs an example's async main and maps a Redis error to exit status 2.
pub fn run<F>(example: &str, fut: F) -> ExitCode
where
    F: std::future::Future<Output = redis::RedisResult<ExitCode>>,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match rt.block_on(fut) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{example}: redis error: {e}");
            ExitCode::from(2)
        }
    }
}
