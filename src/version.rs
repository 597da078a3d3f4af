//! The versions the server reports: its own and the Redis version it
//! answers as. A leaf, so that the config file's errors, the RDB header,
//! INFO, HELLO and scripts can name them without depending on the server.

/// zwindow's own version (`--version`, INFO's `zwindow_version`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The Redis version we answer as; clients gate features on it.
pub const REDIS_VERSION: &str = "8.0.2";
