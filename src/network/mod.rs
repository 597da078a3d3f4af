//! The network layer: connections in, replies out.
//!
//! [`connection`] runs one client's socket: it reads whatever arrived, hands
//! every complete request to the [`execution`](crate::execution) layer in
//! order, and writes all their replies with one write. The accept loop that
//! starts connections is in [`crate::server::run`], beside signal handling.

pub mod connection;
