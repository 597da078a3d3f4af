//! zwindow: a Redis-compatible server built around time-windowed sorted sets.
//!
//! Layout: [`protocol`] (bytes ⇄ requests/replies), [`server`] and
//! [`connection`] (sockets, client state, pipelining), [`commands`] (one
//! file per command family, one table), [`store`] (the sharded keyspace),
//! [`blocking`] and [`pubsub`] (waiting and pushing), [`config`] and
//! [`clock`] (settings and time), [`scripting`] (Lua), [`stats`] and
//! [`alloc`] (what INFO reports).

pub mod alloc;
pub mod blocking;
pub mod client;
pub mod clock;
pub mod commands;
pub mod config;
pub mod connection;
pub mod dict;
pub mod ldouble;
pub mod protocol;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod stats;
pub mod store;
pub mod types;
pub mod util;
pub mod windows;
pub mod zset;
