//! zwindow: a Redis-compatible server built around time-windowed sorted sets.
pub mod zset;
