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
pub const HISTORY_LEN: usize = 160;

#[derive(Clone, Copy, Default)]
pub struct Sample {
    /// Unix seconds; 0 marks an unused slot.
    pub time: u32,
    /// Milliseconds.
    pub latency: u32,
}

/// One event's ring of samples.
pub struct Series {
    /// The slot the next sample goes to.
    idx: usize,
    /// The highest latency seen since the event was last reset.
    pub max: u32,
    samples: [Sample; HISTORY_LEN],
}

impl Series {
    /// The used samples, oldest first.
    pub fn samples(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..HISTORY_LEN)
            .map(move |j| self.samples[(self.idx + j) % HISTORY_LEN])
            .filter(|s| s.time != 0)
    }

    /// The newest sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.idx + HISTORY_LEN - 1) % HISTORY_LEN]
    }
}

/// The events, by name (Redis keeps them in a dict: the order LATENCY
/// LATEST lists them in is its hash order; here it is the name's).
#[derive(Default)]
pub struct Monitor {
    events: BTreeMap<String, Series>,
}

impl Monitor {
    /// Records `latency_ms` for `event` when the monitor is on
    /// (`threshold_ms > 0`) and the latency reaches it.
    pub fn add_if_needed(&mut self, threshold_ms: i64, event: &str, latency_ms: u64, now: u64) {
        if threshold_ms > 0 && latency_ms >= threshold_ms as u64 {
            self.add(event, latency_ms, now);
        }
    }

    /// Redis's `latencyAddSample`: a second already sampled keeps its worst.
    pub fn add(&mut self, event: &str, latency_ms: u64, now: u64) {
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
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(e) => self
                .events
                .retain(|name, _| !name.as_bytes().eq_ignore_ascii_case(e)),
        }
        before - self.events.len()
    }

    pub fn get(&self, event: &[u8]) -> Option<(&str, &Series)> {
        self.events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(n, s)| (n.as_str(), s))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Series)> {
        self.events.iter().map(|(n, s)| (n.as_str(), s))
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Redis's `analyzeLatencyForEvent`: figures over an event's samples.
#[derive(Default, Debug, PartialEq)]
pub struct Analysis {
    pub all_time_high: u32,
    pub avg: u32,
    pub min: u32,
    pub max: u32,
    /// Mean absolute deviation.
    pub mad: u32,
    pub samples: u32,
    /// Seconds from the oldest sample to now (at least 1).
    pub period: u64,
}

pub fn analyze(ts: &Series, now: u64) -> Analysis {
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
}
