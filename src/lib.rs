//! zwindow: a Redis-compatible server built around time-windowed sorted sets.
//!
//! The layers, each depending only on the ones below it (`ARCHITECTURE.md`
//! has the full order, what each module owns and the seams; `.ci/layers.py`
//! checks every `crate::` path against it):
//!
//! 1. [`server`]: startup, the accept loop, signals, background tasks.
//! 2. [`network`]: connection tasks — sockets, pipelining, blocked clients'
//!    waits, pub/sub delivery, shutdown.
//! 3. [`execution`]: the one path every command takes, whoever runs it (a
//!    connection, EXEC, a script's `redis.call`, a blocked client being
//!    served): resolve, verify, lock, run, after-command work. Code below
//!    it that runs a command of its own reaches it through the [`dispatch`]
//!    seam it implements.
//! 4. [`commands`]: one file per command family, the Lua engine, the
//!    session state of a client, and [`commands::Services`], the services
//!    they run with.
//! 5. Services below the commands: [`pubsub`], [`tracking`], [`migrate`];
//!    the files: [`rdb`], [`persistence`], [`aof`].
//! 6. [`keyspace`]: shards, key/field/member TTLs, window rules and the
//!    sweeper, eviction; it reads a narrow `Env` and reports through the
//!    `Events` seam.
//! 7. [`clients`] (the registry) and [`blocked`] (who waits on which key);
//!    the settings: [`config`], [`pause`], [`stats`], [`latency`],
//!    [`slowlog`]; [`acl`] (users over the command specs).
//! 8. Leaves: [`spec`] (the command specs), [`types`] (the value data
//!    structures, each testable alone), [`protocol`], [`notify`],
//!    [`clock`], [`alloc`], [`util`], [`version`].

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
