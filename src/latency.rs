//! The latency monitor: for each event class (`command`, `fast-command`,
//! `expire-cycle`, …) the latest 160 samples at or above
//! `latency-monitor-threshold` milliseconds, one per second at most (the
//! worst of that second), and the all-time maximum (Redis's `latency.c`).
//!
//! LATENCY LATEST/HISTORY/RESET/GRAPH/DOCTOR read it; whoever times an
//! event calls [`Monitor::add_if_needed`] (commands from `execution::call`,
//! the expire cycle from the background task).

use std::collections::BTreeMap;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const HISTORY_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
pub(crate) struct Sample {
    /// Unix seconds; 0 marks an unused slot.
    pub(crate) time: u32,
    /// Milliseconds.
    pub(crate) latency: u32,
}

/// One event's ring of samples.
pub(crate) struct Series {
    /// The slot the next sample goes to.
    idx: usize,
    /// The highest latency seen since the event was last reset.
    pub(crate) max: u32,
    samples: [Sample; HISTORY_LEN],
}

impl Series {
    /// The used samples, oldest first.
    pub(crate) fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..HISTORY_LEN)
            .map(move |j| self.samples[(self.idx + j) % HISTORY_LEN])
            .filter(|s| s.time != 0)
    }

    /// The newest sample.
    pub(crate) fn latest(&self) -> Sample {
        self.samples[(self.idx + HISTORY_LEN - 1) % HISTORY_LEN]
    }
}

/// The events, by name (Redis keeps them in a dict: the order LATENCY
/// LATEST lists them in is its hash order; here it is the name's).
#[derive(Default)]
pub(crate) struct Monitor {
    events: BTreeMap<String, Series>,
}

impl Monitor {
    /// Records `latency_ms` for `event` when the monitor is on
    /// (`threshold_ms > 0`) and the latency reaches it.
    pub(crate) fn add_if_needed(
        &mut self,
        threshold_ms: i64,
        event: &str,
        latency_ms: u64,
        now: u64,
    ) {
        if threshold_ms > 0 && latency_ms >= threshold_ms as u64 {
            self.add(event, latency_ms, now);
        }
    }

    /// Redis's `latencyAddSample`: a second already sampled keeps its worst.
    pub(crate) fn add(&mut self, event: &str, latency_ms: u64, now: u64) {
        let latency = u32::try_from(latency_ms).unwrap_or(u32::MAX);
        let now = u32::try_from(now).unwrap_or(u32::MAX);
        let ts = self.events.entry(event.to_owned()).or_insert(Series {
            idx: 0,
            max: 0,
            samples: [Sample::default(); HISTORY_LEN],
        });
        ts.max = ts.max.max(latency);
        let prev = (ts.idx + HISTORY_LEN - 1) % HISTORY_LEN;
        if ts.samples[prev].time == now {
            ts.samples[prev].latency = ts.samples[prev].latency.max(latency);
            return;
        }
        ts.samples[ts.idx] = Sample { time: now, latency };
        ts.idx = (ts.idx + 1) % HISTORY_LEN;
    }

    /// Drops `event` (case-insensitively, as Redis), or every event for
    /// `None`; returns how many were dropped.
    pub(crate) fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(e) => self
                .events
                .retain(|name, _| !name.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - self.events.len()
    }

    pub(crate) fn get(&self, event: &[u8]) -> Option<(&str, &Series)> {
        self.events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(n, s)| (n.as_str(), s))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Series)> {
        self.events.iter().map(|(n, s)| (n.as_str(), s))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Redis's `analyzeLatencyForEvent`: figures over an event's samples.
#[derive(Default, Debug, PartialEq)]
struct Analysis {
    all_time_high: u32,
    avg: u32,
    pub(crate) min: u32,
    pub(crate) max: u32,
    /// Mean absolute deviation.
    mad: u32,
    samples: u32,
    /// Seconds from the oldest sample to now (at least 1).
    period: u64,
}

fn analyze(ts: &Series, now: u64) -> Analysis {
    let mut a = Analysis {
        all_time_high: ts.max,
        ..Analysis::default()
    };
    let mut sum = 0u64;
    let mut oldest = 0u64;
    for s in ts.samples() {
        a.samples += 1;
        if a.samples == 1 {
            a.min = s.latency;
            a.max = s.latency;
        } else {
            a.min = a.min.min(s.latency);
            a.max = a.max.max(s.latency);
        }
        sum += u64::from(s.latency);
        if oldest == 0 || u64::from(s.time) < oldest {
            oldest = u64::from(s.time);
        }
    }
    if a.samples == 0 {
        return a;
    }
    a.avg = (sum / u64::from(a.samples)) as u32;
    a.period = now.saturating_sub(oldest).max(1);
    let dev: u64 = ts
        .samples()
        .map(|s| (i64::from(a.avg) - i64::from(s.latency)).unsigned_abs())
        .sum();
    a.mad = (dev / u64::from(a.samples)) as u32;
    a
}

/// Redis's `latencyCommandGenSparkeline`: LATENCY GRAPH's text.
pub(crate) fn graph(event: &str, ts: &Series, now: u64) -> String {
    let samples: Vec<Sample> = ts.samples().collect();
    let min = samples.iter().map(|s| s.latency).min().unwrap_or(0);
    let max = samples.iter().map(|s| s.latency).max().unwrap_or(0);
    let labels: Vec<String> = samples
        .iter()
        .map(|s| {
            let elapsed = now as i64 - i64::from(s.time);
            if elapsed < 60 {
                format!("{elapsed}s")
            } else if elapsed < 3600 {
                format!("{}m", elapsed / 60)
            } else if elapsed < 3600 * 24 {
                format!("{}h", elapsed / 3600)
            } else {
                format!("{}d", elapsed / (3600 * 24))
            }
        })
        .collect();
    let mut out = format!(
        "{event} - high {max} ms, low {min} ms (all time high {} ms)\n",
        ts.max
    );
    out.push_str(&"-".repeat(GRAPH_COLS));
    out.push('\n');
    let values: Vec<f64> = samples.iter().map(|s| f64::from(s.latency)).collect();
    sparkline(&mut out, &values, &labels, GRAPH_COLS, 4);
    out
}

const GRAPH_COLS: usize = 80;

/// Redis's `sparklineRender` with `SPARKLINE_FILL`: `rows` rows of `_o#|`
/// per chunk of `columns` samples, each sample's label written downwards
/// below it.
fn sparkline(out: &mut String, values: &[f64], labels: &[String], columns: usize, rows: usize) {
    const FILL: &[u8] = b"_o#";
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut relmax = max - min;
    if relmax == 0.0 {
        relmax = 1.0;
    }
    let steps = (FILL.len() * rows) as i64;
    let has_labels = labels.iter().any(|l| !l.is_empty());
    for (chunk, start) in (0..values.len()).step_by(columns).enumerate() {
        if chunk != 0 {
            out.push('\n');
        }
        let len = columns.min(values.len() - start);
        let mut row = 0usize;
        loop {
            let mut any = false;
            let mut chars = vec![b' '; len];
            for (j, c) in chars.iter_mut().enumerate() {
                let value = values[start + j];
                let step = (((value - min) * steps as f64) as i64 as f64 / relmax) as i64;
                let step = step.clamp(0, steps - 1);
                if row < rows {
                    any = true;
                    let idx = step - ((rows - row - 1) * FILL.len()) as i64;
                    if (0..FILL.len() as i64).contains(&idx) {
                        *c = FILL[idx as usize];
                    } else if idx >= FILL.len() as i64 {
                        *c = b'|';
                    }
                } else {
                    // One blank row between the graph and the labels.
                    if has_labels && row - rows < 1 {
                        any = true;
                        break;
                    }
                    let label = labels[start + j].as_bytes();
                    let at = row - rows - 1;
                    if label.len() > at {
                        any = true;
                        *c = label[at];
                    }
                }
            }
            if !any {
                break;
            }
            row += 1;
            out.push_str(&String::from_utf8_lossy(&chars));
            out.push('\n');
        }
    }
}

/// Redis's `createLatencyReport` (LATENCY DOCTOR), for the events zwindow
/// records: `threshold_ms` is `latency-monitor-threshold`, `slower_than`
/// `slowlog-log-slower-than`, `hz` the background frequency, `thp` whether
/// the process has transparent huge pages.
pub(crate) fn doctor(
    m: &Monitor,
    now: u64,
    threshold_ms: i64,
    slower_than: i64,
    hz: u32,
    thp: bool,
) -> String {
    if m.is_empty() && threshold_ms == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/docs/latest/operate/oss_and_stack/management/optimization/latency-monitor.\n".into();
    }
    let mut r = String::new();
    let (mut slowlog_enabled, mut slowlog_tuning, mut slowlog_inspect) = (false, false, false);
    let (mut scheduler, mut hz_advice, mut large, mut mass) = (false, false, false, false);
    let mut advices = 0;
    let mut n = 0;
    for (event, ts) in m.iter() {
        n += 1;
        if n == 1 {
            r.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
        }
        let a = analyze(ts, now);
        r.push_str(&format!(
            "{n}. {event}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). Worst all time event {}ms.",
            a.samples,
            a.avg,
            a.mad,
            a.period as f64 / f64::from(a.samples.max(1)),
            ts.max
        ));
        match event {
            "command" => {
                if slower_than < 0 {
                    slowlog_enabled = true;
                    advices += 1;
                } else if slower_than / 1000 > threshold_ms {
                    slowlog_tuning = true;
                    advices += 1;
                }
                slowlog_inspect = true;
                large = true;
                advices += 2;
            }
            "fast-command" => {
                scheduler = true;
                advices += 1;
            }
            "expire-cycle" => {
                hz_advice = true;
                large = true;
                advices += 2;
            }
            "eviction-del" => {
                large = true;
                advices += 1;
            }
            "eviction-cycle" => {
                mass = true;
                advices += 1;
            }
            _ => {}
        }
        r.push('\n');
    }
    if thp {
        advices += 1;
    }
    if n == 0 && advices == 0 {
        r.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        return r;
    }
    if n > 0 && advices == 0 {
        r.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        return r;
    }
    r.push_str("\nI have a few advices for you:\n\n");
    let suggested = threshold_ms.max(0) as u64 * 1000;
    if slowlog_enabled {
        r.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {suggested}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"));
    }
    if slowlog_tuning {
        r.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {suggested}'.\n"));
    }
    if slowlog_inspect {
        r.push_str("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n");
    }
    if scheduler {
        r.push_str("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n");
    }
    if hz_advice && hz < 100 {
        r.push_str("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n");
    }
    if large {
        r.push_str("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n");
    }
    if mass {
        r.push_str("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n");
    }
    if thp {
        r.push_str("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n");
    }
    r
}

/// Redis's `THPGetAnonHugePagesSize` > 0: the process has anonymous huge
/// pages (Linux; elsewhere, none).
pub(crate) fn has_huge_pages() -> bool {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("AnonHugePages:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .is_some_and(|kb| kb > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_keeps_the_worst() {
        let mut m = Monitor::default();
        m.add_if_needed(0, "command", 500, 10);
        assert!(m.is_empty());
        m.add_if_needed(100, "command", 99, 10);
        assert!(m.is_empty());
        m.add_if_needed(100, "command", 200, 10);
        m.add_if_needed(100, "command", 300, 10);
        m.add_if_needed(100, "command", 150, 11);
        let (_, ts) = m.get(b"command").unwrap();
        let got: Vec<(u32, u32)> = ts.samples().map(|s| (s.time, s.latency)).collect();
        assert_eq!(got, [(10, 300), (11, 150)]);
        assert_eq!(ts.max, 300);
        let a = analyze(ts, 12);
        assert_eq!(
            (a.avg, a.min, a.max, a.mad, a.period),
            (225, 150, 300, 75, 2)
        );
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert!(m.is_empty());
    }

    #[test]
    fn ring_keeps_the_latest() {
        let mut m = Monitor::default();
        for t in 1..=(HISTORY_LEN as u64 + 5) {
            m.add("e", t, t);
        }
        let (_, ts) = m.get(b"e").unwrap();
        assert_eq!(ts.samples().count(), HISTORY_LEN);
        assert_eq!(ts.samples().next().unwrap().time, 6);
        assert_eq!(ts.latest().time, HISTORY_LEN as u32 + 5);
    }

    #[test]
    fn graph_as_redis_draws_it() {
        let mut m = Monitor::default();
        m.add("command", 50, 100);
        m.add("command", 100, 101);
        let (name, ts) = m.get(b"command").unwrap();
        let g = graph(name, ts, 101);
        let want = format!(
            "command - high 100 ms, low 50 ms (all time high 100 ms)\n{}\n #\n |\n |\n_|\n  \n10\nss\n",
            "-".repeat(80)
        );
        assert_eq!(g, want);
    }
}
