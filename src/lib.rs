//! zwindow: a Redis-compatible server built around time-windowed sorted sets.
//!
//! The layers, each depending only on the ones below it:
//!
//! 1. [`network`]: the accept loop and connection tasks — sockets,
//!    pipelining, blocked clients' waits, pub/sub delivery, shutdown.
//! 2. [`execution`]: the one path every command takes, whoever runs it (a
//!    connection, EXEC, a script's `redis.call`, a blocked client being
//!    served): resolve, verify, lock, run, after-command work. Blocking
//!    and client state live here. Code below it that runs a command of its
//!    own reaches it through the `dispatch` seam it implements.
//! 3. [`commands`]: the command table, one file per command family, and
//!    the Lua engine scripts and functions run in.
//! 4. [`keyspace`]: shards, key TTLs, window rules and the sweeper.
//! 5. [`types`]: the value data structures, each testable alone.
//!
//! Beside them: [`acl`] (users and permissions over the command table),
//! [`spec`] (what each command of the table is — arity, flags, keys,
//! Redis's metadata — and finding it by name: below the handlers, so acl,
//! config and AOF loading read it too),
//! [`protocol`] (bytes ⇄ requests/replies), [`server`] (the
//! shared state and startup), [`config`], [`clock`], [`clients`] (the
//! registry of connected clients), [`pubsub`], [`tracking`] (client-side
//! caching), [`pause`] (CLIENT PAUSE's state), [`migrate`] (MIGRATE's
//! outbound connections), [`util`], [`version`], and [`stats`],
//! [`slowlog`], [`latency`] and [`alloc`] (what INFO, SLOWLOG, LATENCY and
//! MEMORY report).

pub mod acl;
pub mod alloc;
pub mod aof;
pub mod blocked;
pub mod clients;
pub mod clock;
pub mod commands;
pub mod config;
pub mod config_file;
pub(crate) mod dispatch;
pub mod execution;
pub mod healthcheck;
pub mod keyspace;
pub mod latency;
pub mod migrate;
pub mod network;
pub mod notify;
pub mod pause;
pub mod persistence;
pub mod protocol;
pub mod pubsub;
pub mod rdb;
pub mod server;
pub mod slowlog;
pub mod spec;
pub mod stats;
pub mod tracking;
pub mod types;
pub mod util;
pub mod version;
