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

pub(crate) mod acl;
pub mod alloc;
pub(crate) mod aof;
pub(crate) mod blocked;
pub(crate) mod clients;
pub(crate) mod clock;
pub mod cluster;
pub mod commands;
pub mod config;
pub(crate) mod config_file;
pub mod crash;
pub(crate) mod dispatch;
pub(crate) mod execution;
pub mod healthcheck;
pub(crate) mod keyspace;
pub(crate) mod latency;
pub(crate) mod migrate;
pub mod network;
pub(crate) mod notify;
pub(crate) mod oom;
pub(crate) mod pause;
pub(crate) mod persistence;
pub(crate) mod protocol;
pub(crate) mod pubsub;
pub(crate) mod rdb;
pub(crate) mod replication;
pub mod server;
pub(crate) mod shutdown;
pub(crate) mod slowlog;
pub(crate) mod spec;
pub(crate) mod stats;
pub(crate) mod tracking;
pub mod types;
pub(crate) mod util;
pub mod version;
