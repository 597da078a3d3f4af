//! Cluster mode (issue 33): zwindow as a node of a Redis Cluster, beside
//! redis-server nodes, speaking the cluster bus as Redis 7.0 does. Its
//! state (the nodes, the slots, the epochs) and its bus (the links, the
//! gossip, failure detection) are built in steps; for now it holds the
//! bus's wire format, the node table ([`state`]) and its texts
//! ([`nodes_conf`]: nodes.conf and `CLUSTER NODES`).
//!
//! Public so that the integration tests can play a cluster node with the
//! very bytes zwindow writes.

pub mod gossip;
pub mod nodes_conf;
pub mod state;
pub mod wire;
