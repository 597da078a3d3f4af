//! The statistics INFO reports: the server-wide counters ([`Stats`]) and,
//! beyond plain counters, the instantaneous rates sampled every 100 ms,
//! recent peaks of client buffers, per-command latency histograms, the
//! active-expiry figures, and the 100 ms task that samples them (Redis's `serverCron` does the same work at `hz`).
//!
//! Everything a command or a connection touches is an atomic updated with
//! `Relaxed` ordering and no allocation; locks are taken only by the
//! sampler, the expiry cycle and INFO itself.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Redis 8.0's `SHOULD_CLUSTER_COMPATIBILITY_SAMPLE`: whether this
/// operation is checked for what cluster mode would refuse, `ratio`
/// percent of the time (`cluster-compatibility-sample-ratio`).
pub(crate) fn compat_sampled(ratio: u64) -> bool {
    ratio >= 100 || (ratio != 0 && rand::random_range(0..100u64) < ratio)
}

/// Server-wide counters for INFO.
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) commands_processed: AtomicU64,
    /// What cluster mode would have refused (Redis 8.0's
    /// `stat_cluster_incompatible_ops`): SELECT, MOVE, COPY or SWAPDB away
    /// from database 0, and the sampled keyed commands whose keys span
    /// slots (`cluster-compatibility-sample-ratio`).
    pub(crate) cluster_incompatible_ops: AtomicU64,
    /// Changes to the dataset (Redis's `server.dirty`), counted as Redis
    /// 8.0 counts them per command (one per element pushed, added, removed
    /// or updated; see `Keyspace::modified_by`): INFO's
    /// `rdb_changes_since_last_save` and the save points'.
    pub(crate) dirty: AtomicU64,
    /// Bytes read from and written to client sockets.
    pub(crate) net_input_bytes: AtomicU64,
    pub(crate) net_output_bytes: AtomicU64,
    /// Replication traffic: the primary's stream read (a replica), the
    /// replicas' RDBs and streams written (a primary).
    pub(crate) net_repl_input_bytes: AtomicU64,
    pub(crate) net_repl_output_bytes: AtomicU64,
    pub(crate) rejected_connections: AtomicU64,
    pub(crate) error_replies: AtomicU64,
    /// Blobs of RESTORE payloads checked in full under Redis's rules for
    /// it (INFO's `dump_payload_sanitizations`).
    pub(crate) dump_payload_sanitizations: AtomicU64,
    /// Socket reads and writes (one add each, beside the byte counts).
    pub(crate) reads_processed: AtomicU64,
    pub(crate) writes_processed: AtomicU64,
    /// Output buffers that grew during a batch / were released after one.
    pub(crate) reply_buffer_expands: AtomicU64,
    pub(crate) reply_buffer_shrinks: AtomicU64,
    /// Clients closed for their query buffer limit (Redis 8's
    /// `client_query_buffer_limit_disconnections`; the output buffer's
    /// count is `Clients::output_limit_disconnections`).
    pub(crate) query_limit_disconnections: AtomicU64,
    /// zwindow's event loop "cycles" (Redis's `duration_stats`): every
    /// turn of a connection task (woken, its batch run, its replies
    /// written) and every tick of the 100 ms cron, with their time (in ns,
    /// so that short cycles do not each lose their fraction of a µs); and
    /// the µs of the commands clients sent (not those run inside EXEC or
    /// scripts, as Redis's `execution_nesting == 0`).
    pub(crate) el_cycles: AtomicU64,
    pub(crate) el_ns: AtomicU64,
    /// `INFO debug`'s: the cron's share of `el_ns`, the AOF writes and
    /// fsyncs before replies, the longest cycle, the most commands one
    /// connection turn ran.
    pub(crate) el_cron_ns: AtomicU64,
    pub(crate) el_aof_ns: AtomicU64,
    pub(crate) el_max_ns: AtomicU64,
    pub(crate) el_cmds_max: AtomicU64,
    pub(crate) el_cmd_usec: AtomicU64,
    /// Clients blocked with a timeout (a gauge).
    pub(crate) clients_in_timeout_table: AtomicU64,
    /// Bytes allocated once the server was set up, and the highest since.
    pub(crate) startup_memory: AtomicU64,
    pub(crate) peak_memory: AtomicU64,
    /// Largest pending request bytes / reply bytes of any client lately.
    pub(crate) recent_max_input: RecentMax,
    pub(crate) recent_max_output: RecentMax,
    pub(crate) instantaneous: Instantaneous,
    pub(crate) expire: ExpireStats,
}

/// Counts itself in a gauge while it lives.
pub(crate) struct Gauge<'a>(&'a AtomicU64);

impl<'a> Gauge<'a> {
    pub(crate) fn enter(gauge: &'a AtomicU64) -> Gauge<'a> {
        gauge.fetch_add(1, Relaxed);
        Gauge(gauge)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Samples per instantaneous metric (Redis's `STATS_METRIC_SAMPLES`).
const METRIC_SAMPLES: usize = 16;
/// How often the sampler runs (Redis's `run_with_period(100)`).
pub(crate) const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// The rates INFO stats reports as `instantaneous_*`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Metric {
    Commands = 0,
    NetInput = 1,
    NetOutput = 2,
    /// Event loop cycles per second.
    ElCycles = 3,
    /// Mean µs per cycle (see [`Instantaneous::track`]; sampled in ns).
    ElDuration = 4,
}

/// How many metrics [`Instantaneous`] samples.
const METRICS: usize = 5;

#[derive(Default, Clone, Copy)]
struct Samples {
    /// Per-second rates of the last [`METRIC_SAMPLES`] periods.
    rates: [u64; METRIC_SAMPLES],
    next: usize,
    last_reading: u64,
}

impl Samples {
    fn push(&mut self, value: u64, reading: u64) {
        self.rates[self.next] = value;
        self.next = (self.next + 1) % METRIC_SAMPLES;
        self.last_reading = reading;
    }
}

/// Redis's `trackInstantaneousMetric`: every period, the rate since the
/// previous reading goes into a ring; the metric is the ring's mean.
#[derive(Default)]
pub(crate) struct Instantaneous {
    state: Mutex<(Option<Instant>, [Samples; METRICS])>,
}

impl Instantaneous {
    /// Records one reading of every metric: commands, input and output
    /// bytes and event loop cycles as rates per second; the event loop's
    /// time per cycle as Redis's factor-1 metric: the ns added per cycle
    /// added since the last reading.
    pub(crate) fn track(&self, now: Instant, readings: [u64; 4], el_ns: u64) {
        let mut st = self.state.lock();
        let elapsed_ms = st.0.map_or(0, |t| now.duration_since(t).as_millis() as u64);
        st.0 = Some(now);
        let cycles = readings[3];
        let cycles_delta = cycles.saturating_sub(st.1[Metric::ElCycles as usize].last_reading);
        for (s, reading) in st.1.iter_mut().zip(readings) {
            // CONFIG RESETSTAT may have zeroed the counter since.
            let delta = reading.saturating_sub(s.last_reading);
            let rate = (delta * 1000).checked_div(elapsed_ms).unwrap_or(0);
            s.push(rate, reading);
        }
        let s = &mut st.1[Metric::ElDuration as usize];
        let per_cycle = el_ns
            .saturating_sub(s.last_reading)
            .checked_div(cycles_delta)
            .unwrap_or(0);
        s.push(per_cycle, el_ns);
    }

    /// The mean rate per second over the ring (Redis's integer division).
    pub(crate) fn get(&self, metric: Metric) -> u64 {
        let st = self.state.lock();
        let mean = st.1[metric as usize].rates.iter().sum::<u64>() / METRIC_SAMPLES as u64;
        match metric {
            Metric::ElDuration => mean / 1000,
            _ => mean,
        }
    }

    /// CONFIG RESETSTAT: the counters restart from zero.
    pub(crate) fn reset(&self) {
        let mut st = self.state.lock();
        st.0 = Some(Instant::now());
        st.1 = Default::default();
    }
}

/// Slots of [`RecentMax`] (Redis's `CLIENTS_PEAK_MEM_USAGE_SLOTS`).
const PEAK_SLOTS: usize = 8;

/// The largest value seen over the last several seconds, one slot per
/// second (Redis's `client_recent_max_input_buffer` bookkeeping). Noting a
/// value is a load and, only for a new maximum, one atomic max.
#[derive(Default)]
pub(crate) struct RecentMax {
    slots: [AtomicU64; PEAK_SLOTS],
    current: AtomicUsize,
}

impl RecentMax {
    pub(crate) fn note(&self, value: u64) {
        let slot = &self.slots[self.current.load(Relaxed) % PEAK_SLOTS];
        if value > slot.load(Relaxed) {
            slot.fetch_max(value, Relaxed);
        }
    }

    /// Moves to the slot of `unix_secs` and clears the oldest one, which the
    /// next second will use.
    fn rotate(&self, unix_secs: u64) {
        let i = (unix_secs % PEAK_SLOTS as u64) as usize;
        self.slots[(i + 1) % PEAK_SLOTS].store(0, Relaxed);
        self.current.store(i, Relaxed);
    }

    pub(crate) fn get(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.load(Relaxed))
            .max()
            .unwrap_or(0)
    }
}

/// What the active expiry cycle reports (Redis's `stat_expired_*` and
/// each database's `avg_ttl`).
#[derive(Default)]
pub(crate) struct ExpireStats {
    inner: Mutex<ExpireFigures>,
}

#[derive(Default, Clone)]
pub(crate) struct ExpireFigures {
    /// Running estimate of the share of keys with a TTL that are already
    /// expired (0..1).
    pub(crate) stale_perc: f64,
    /// Cycles that stopped at their time budget.
    pub(crate) time_cap_reached: u64,
    /// Microseconds spent in expiry cycles.
    pub(crate) cycle_usec: u64,
    /// Running estimate of the remaining TTL (ms) of each database's keys.
    pub(crate) avg_ttl: Vec<u64>,
}

/// One cycle's observations, folded into [`ExpireStats`].
pub(crate) struct ExpireCycle {
    pub(crate) sampled: u64,
    pub(crate) expired: u64,
    pub(crate) timed_out: bool,
    pub(crate) elapsed: Duration,
    /// Per database: `Some((sum of remaining TTLs in ms, keys))` of the
    /// sampled keys (`(0, 0)`: nothing to conclude), `None` when it has no
    /// key with a TTL.
    pub(crate) ttls: Vec<Option<(u64, u64)>>,
}

impl ExpireStats {
    /// Redis's `activeExpireCycle` bookkeeping: exponential averages of the
    /// stale share (5% new) and of each database's TTL (2% new).
    pub(crate) fn record(&self, c: &ExpireCycle) {
        let mut f = self.inner.lock();
        let current = if c.sampled > 0 {
            c.expired as f64 / c.sampled as f64
        } else {
            0.0
        };
        f.stale_perc = current * 0.05 + f.stale_perc * 0.95;
        f.time_cap_reached += u64::from(c.timed_out);
        f.cycle_usec += c.elapsed.as_micros() as u64;
        if f.avg_ttl.len() < c.ttls.len() {
            f.avg_ttl.resize(c.ttls.len(), 0);
        }
        for (avg, seen) in f.avg_ttl.iter_mut().zip(&c.ttls) {
            match *seen {
                None => *avg = 0,
                Some((_, 0)) => {}
                Some((sum, n)) => {
                    // Redis 8.0's running average (one update per cycle):
                    // the first sample is taken as it is, later ones weigh
                    // 2% against the estimate's 98%.
                    let sample = sum / n;
                    *avg = if *avg == 0 {
                        sample
                    } else {
                        (sample as f64 + (*avg as f64 - sample as f64) * 0.98) as u64
                    };
                }
            }
        }
    }

    pub(crate) fn get(&self) -> ExpireFigures {
        self.inner.lock().clone()
    }

    /// CONFIG RESETSTAT (the TTL estimates are state, not statistics).
    pub(crate) fn reset(&self) {
        let mut f = self.inner.lock();
        f.stale_perc = 0.0;
        f.time_cap_reached = 0;
        f.cycle_usec = 0;
    }
}

/// Redis's latency histograms: HdrHistogram over 1 ns ..= 1 s with two
/// significant digits. The bucket layout is HdrHistogram's own, so the
/// percentiles INFO latencystats prints are the values Redis prints for
/// the same durations. Recording is one atomic add into a fixed array,
/// allocated on a command's first call (24 KiB, as Redis's).
#[derive(Default)]
pub(crate) struct LatencyHistogram {
    counts: OnceLock<Box<[AtomicU64]>>,
}

/// HdrHistogram's configuration for (1, 1e9, 2 significant figures).
mod hdr {
    /// `ceil(log2(2 * 10^2)) - 1`.
    const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = 7;
    const SUB_BUCKET_HALF_COUNT: usize = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
    const SUB_BUCKET_COUNT: usize = SUB_BUCKET_HALF_COUNT * 2;
    const SUB_BUCKET_MASK: u64 = SUB_BUCKET_COUNT as u64 - 1;
    pub(crate) const MIN_VALUE: u64 = 1;
    pub(crate) const MAX_VALUE: u64 = 1_000_000_000;
    /// Buckets needed to cover `MAX_VALUE`: 256 << 22 > 1e9.
    const BUCKET_COUNT: usize = 23;
    pub(crate) const COUNTS_LEN: usize = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT;

    fn bucket_index(value: u64) -> u32 {
        let pow2ceiling = 64 - (value | SUB_BUCKET_MASK).leading_zeros();
        pow2ceiling - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1)
    }

    fn sub_bucket_index(value: u64, bucket: u32) -> u64 {
        value >> bucket
    }

    pub(crate) fn counts_index(value: u64) -> usize {
        let bucket = bucket_index(value);
        let sub = sub_bucket_index(value, bucket) as usize;
        (((bucket + 1) as usize) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub - SUB_BUCKET_HALF_COUNT
    }

    pub(crate) fn value_at_index(index: usize) -> u64 {
        let mut bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
        let mut sub = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
        if bucket < 0 {
            sub -= SUB_BUCKET_HALF_COUNT;
            bucket = 0;
        }
        (sub as u64) << bucket
    }

    pub(crate) fn lowest_equivalent(value: u64) -> u64 {
        let bucket = bucket_index(value);
        sub_bucket_index(value, bucket) << bucket
    }

    pub(crate) fn highest_equivalent(value: u64) -> u64 {
        let bucket = bucket_index(value);
        let sub = sub_bucket_index(value, bucket) as usize;
        let adjusted = if sub >= SUB_BUCKET_COUNT {
            bucket + 1
        } else {
            bucket
        };
        lowest_equivalent(value) + (1u64 << adjusted) - 1
    }
}

impl LatencyHistogram {
    pub(crate) const fn new() -> LatencyHistogram {
        LatencyHistogram {
            counts: OnceLock::new(),
        }
    }

    /// Records one call of `usec` microseconds (as Redis: in nanoseconds,
    /// clamped to the tracked range).
    pub(crate) fn record_usec(&self, usec: u64) {
        self.record_usec_times(usec, 1);
    }

    /// Records `times` calls that each took `usec`.
    pub(crate) fn record_usec_times(&self, usec: u64, times: u64) {
        let ns = usec
            .saturating_mul(1000)
            .clamp(hdr::MIN_VALUE, hdr::MAX_VALUE);
        let counts = self
            .counts
            .get_or_init(|| (0..hdr::COUNTS_LEN).map(|_| AtomicU64::new(0)).collect());
        if let Some(c) = counts.get(hdr::counts_index(ns)) {
            c.fetch_add(times, Relaxed);
        }
    }

    /// The counters' heap bytes (0 until the first call).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.counts
            .get()
            .map_or(0, |c| std::mem::size_of_val::<[AtomicU64]>(c))
    }

    /// CONFIG RESETSTAT: as if never called (Redis frees the histogram).
    pub(crate) fn reset(&self) {
        if let Some(counts) = self.counts.get() {
            for c in counts.iter() {
                c.store(0, Relaxed);
            }
        }
    }

    /// LATENCY HISTOGRAM's buckets: (µs, calls at or below) at 1, 2, 4, …
    /// µs, only where the count grew, and the total number of calls —
    /// HdrHistogram's logarithmic iterator (first bucket 1024 ns, base 2)
    /// as Redis's `fillCommandCDF` walks it. `None` if nothing was
    /// recorded.
    pub(crate) fn cdf(&self) -> Option<(u64, Vec<(u64, u64)>)> {
        let counts: Vec<u64> = self.counts.get()?.iter().map(|c| c.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let len = counts.len();
        // The iterator's state: the bucket it stands on (none yet), its
        // value's highest equivalent, the count up to it.
        let (mut index, mut value, mut highest, mut cumulative) = (None::<usize>, 0u64, 0u64, 0u64);
        let mut level = 1024u64;
        let mut level_low = hdr::lowest_equivalent(level);
        let (mut out, mut previous) = (Vec::new(), 0u64);
        loop {
            let next = index.map_or(0, |i| i + 1);
            let more = cumulative < total || (next < len && hdr::value_at_index(next) > level_low);
            if !more {
                break;
            }
            let mut ended = false;
            loop {
                if value >= level_low {
                    level *= 2;
                    level_low = hdr::lowest_equivalent(level);
                    break;
                }
                let next = index.map_or(0, |i| i + 1);
                if next >= len {
                    ended = true;
                    break;
                }
                index = Some(next);
                cumulative += counts[next];
                value = hdr::value_at_index(next);
                highest = hdr::highest_equivalent(value);
            }
            if cumulative > previous {
                out.push((highest / 1000, cumulative));
            }
            previous = cumulative;
            if ended {
                break;
            }
        }
        Some((total, out))
    }

    /// The value (ns) at each percentile, as HdrHistogram's
    /// `hdr_value_at_percentile`; `None` if nothing was recorded.
    pub(crate) fn percentiles(&self, percentiles: &[f64]) -> Option<Vec<u64>> {
        let counts: Vec<u64> = self.counts.get()?.iter().map(|c| c.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let at = |p: f64| {
            let p = p.min(100.0);
            let wanted = ((p / 100.0 * total as f64) + 0.5) as u64;
            let wanted = wanted.max(1);
            let mut seen = 0;
            let mut value = 0;
            for (i, &c) in counts.iter().enumerate() {
                seen += c;
                if seen >= wanted {
                    value = hdr::value_at_index(i);
                    break;
                }
            }
            if p == 0.0 {
                hdr::lowest_equivalent(value)
            } else {
                hdr::highest_equivalent(value)
            }
        };
        Some(percentiles.iter().map(|&p| at(p)).collect())
    }
}

/// One pass of the 100 ms sampler (the server's background thread runs
/// it): instantaneous rates, the peak of used memory, the client-buffer
/// peak slots.
pub(crate) fn sample(st: &Stats, now_ms: u64) {
    st.instantaneous.track(
        Instant::now(),
        [
            st.commands_processed.load(Relaxed),
            st.net_input_bytes.load(Relaxed),
            st.net_output_bytes.load(Relaxed),
            st.el_cycles.load(Relaxed),
        ],
        st.el_ns.load(Relaxed),
    );
    note_peak_memory(st);
    let secs = now_ms / 1000;
    st.recent_max_input.rotate(secs);
    st.recent_max_output.rotate(secs);
}

impl Stats {
    /// Counts one event loop cycle that began at `began`.
    pub(crate) fn el_cycle(&self, began: Instant) -> u64 {
        let ns = began.elapsed().as_nanos() as u64;
        self.el_cycles.fetch_add(1, Relaxed);
        self.el_ns.fetch_add(ns, Relaxed);
        note_max(&self.el_max_ns, ns);
        ns
    }

    /// Counts the cron's tick that began at `began` as a cycle.
    pub(crate) fn el_cron_cycle(&self, began: Instant) {
        let ns = self.el_cycle(began);
        self.el_cron_ns.fetch_add(ns, Relaxed);
    }
}

/// Raises `max` to `value`: a load, and a write only for a new maximum.
pub(crate) fn note_max(max: &AtomicU64, value: u64) {
    if value > max.load(Relaxed) {
        max.fetch_max(value, Relaxed);
    }
}

pub(crate) fn note_peak_memory(stats: &Stats) -> u64 {
    let used = crate::alloc::allocated().unwrap_or(0);
    stats.peak_memory.fetch_max(used, Relaxed);
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(h: &LatencyHistogram, p: &[f64]) -> Vec<String> {
        h.percentiles(p)
            .unwrap_or_default()
            .iter()
            .map(|v| format!("{:.3}", *v as f64 / 1000.0))
            .collect()
    }

    #[test]
    fn cdf_reports_power_of_two_buckets() {
        let h = LatencyHistogram::new();
        assert!(h.cdf().is_none());
        h.record_usec(3);
        h.record_usec(3);
        h.record_usec(100);
        let (calls, buckets) = h.cdf().unwrap();
        assert_eq!(calls, 3);
        assert_eq!(buckets, [(4, 2), (132, 3)]);
    }

    /// Values redis-server 7.0 printed for the same single calls.
    #[test]
    fn percentiles_match_hdr_histogram() {
        let h = LatencyHistogram::new();
        assert!(h.percentiles(&[50.0]).is_none());
        h.record_usec(3);
        assert_eq!(ms(&h, &[50.0, 99.0, 99.9]), ["3.007", "3.007", "3.007"]);
        let h = LatencyHistogram::new();
        h.record_usec(18);
        assert_eq!(ms(&h, &[50.0]), ["18.047"]);
        let h = LatencyHistogram::new();
        h.record_usec(4);
        assert_eq!(ms(&h, &[0.0, 0.1, 100.0]), ["4.000", "4.015", "4.015"]);
        let h = LatencyHistogram::new();
        h.record_usec(0);
        assert_eq!(ms(&h, &[50.0]), ["0.001"]);
        h.reset();
        assert!(h.percentiles(&[50.0]).is_none());
    }

    #[test]
    fn percentiles_split_a_distribution() {
        let h = LatencyHistogram::new();
        for _ in 0..99 {
            h.record_usec(1);
        }
        h.record_usec(5_000_000);
        let v = h.percentiles(&[50.0, 99.0, 100.0]).unwrap_or_default();
        assert_eq!(v[0], hdr::highest_equivalent(1000));
        assert_eq!(v[1], hdr::highest_equivalent(1000));
        // Clamped to the tracked maximum (1 s).
        assert_eq!(v[2], hdr::highest_equivalent(hdr::MAX_VALUE));
        assert!(hdr::counts_index(hdr::MAX_VALUE) < hdr::COUNTS_LEN);
    }

    #[test]
    fn instantaneous_is_the_mean_of_the_ring() {
        let m = Instantaneous::default();
        let t = Instant::now();
        m.track(t, [0, 0, 0, 0], 0);
        m.track(t + Duration::from_millis(100), [100, 1000, 0, 20], 800_000);
        // 1000/s for one sample out of 16.
        assert_eq!(m.get(Metric::Commands), 1000 / 16);
        assert_eq!(m.get(Metric::NetInput), 10000 / 16);
        assert_eq!(m.get(Metric::ElCycles), 200 / 16);
        // 40 µs per cycle, a sample out of 16 (Redis's factor-1 metric).
        assert_eq!(m.get(Metric::ElDuration), 40 / 16);
        m.reset();
        assert_eq!(m.get(Metric::Commands), 0);
    }

    #[test]
    fn recent_max_forgets_after_the_ring() {
        let r = RecentMax::default();
        r.rotate(0);
        r.note(10);
        r.note(5);
        assert_eq!(r.get(), 10);
        // Kept for the slots' span less the one cleared ahead.
        for s in 1..PEAK_SLOTS as u64 - 1 {
            r.rotate(s);
        }
        assert_eq!(r.get(), 10);
        r.rotate(PEAK_SLOTS as u64 - 1);
        assert_eq!(r.get(), 0);
    }

    #[test]
    fn expire_averages_as_redis() {
        let e = ExpireStats::default();
        e.record(&ExpireCycle {
            sampled: 20,
            expired: 20,
            timed_out: true,
            elapsed: Duration::from_micros(1500),
            ttls: vec![Some((5000, 1)), None],
        });
        let f = e.get();
        assert!((f.stale_perc - 0.05).abs() < 1e-9);
        assert_eq!(f.time_cap_reached, 1);
        assert_eq!(f.cycle_usec, 1500);
        assert_eq!(f.avg_ttl, [5000, 0]);
    }
}
