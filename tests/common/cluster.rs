//! Reading a cluster node's replies: the text of a bulk reply, a node's
//! line in `CLUSTER NODES` (the tests that play a node against
//! redis-server, and those that compare zwindow's texts with it).

use zwindow::cluster::wire::NodeName;

use super::{RedisServer, Reply, parse_reply};

/// The text of a bulk-string reply.
pub fn bulk_text(reply: &[u8]) -> String {
    match parse_reply(reply) {
        Reply::Bulk(b) => String::from_utf8(b).expect("UTF-8 reply"),
        other => panic!("expected a bulk string, got {other:?}"),
    }
}

/// `CLUSTER NODES`' line for `id`, if listed.
pub fn nodes_line(server: &RedisServer, id: &NodeName) -> Option<String> {
    let nodes = bulk_text(&server.conn().cmd(&[b"CLUSTER", b"NODES"]));
    let id = String::from_utf8_lossy(id.as_bytes()).into_owned();
    nodes
        .lines()
        .find(|l| l.split(' ').next() == Some(id.as_str()))
        .map(str::to_owned)
}
