//! The cluster's node table as text, as Redis 7.0.15's `cluster.c` reads
//! and writes it: `nodes.conf` (`clusterLoadConfig`, `clusterSaveConfig`)
//! and the `CLUSTER NODES` reply, which share one generator
//! (`clusterGenNodesDescription`).
//!
//! A line is `<id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping_sent>
//! <pong_received> <config_epoch> <connected|disconnected> <slot>...`, where a
//! slot is `N`, `N-M`, or for myself `[N->-<id>]` (migrating to) and
//! `[N-<-<id>]` (importing from); nodes.conf adds a last line `vars
//! currentEpoch N lastVoteEpoch N` and leaves out nodes in handshake.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io::{self, Write as _};
use std::path::Path;

use super::state::{ClusterState, IP_MAX, Node, PORT_INCR};
use super::wire::{
    NODE_FAIL, NODE_HANDSHAKE, NODE_MASTER, NODE_MYSELF, NODE_NOADDR, NODE_NOFAILOVER, NODE_PFAIL,
    NODE_SLAVE, NodeName, SLOTS,
};
use crate::protocol::parser::split_args;
use crate::spec::metadata::c_atoi;

/// Why nodes.conf could not be loaded: each is fatal to Redis (it logs the
/// text of [`LoadError::log_line`] and exits 1, or panics/asserts), and must
/// be to us, or we would join the cluster with a forgotten identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// The file exists but cannot be opened or read.
    Io { path: String, error: String },
    /// `goto fmterr`: a line Redis cannot make sense of, or no `myself`.
    Corrupted,
    /// A flag Redis does not know (`serverPanic`).
    UnknownFlag,
    /// A second `myself` (`serverAssert(server.cluster->myself == NULL)`).
    TwoMyself,
    /// A `[slot...]` entry without a `-` (`serverAssert(p != NULL)`).
    BadSlotEntry,
}

impl LoadError {
    /// What Redis logs (at warning level, or as the panic/assertion).
    pub fn log_line(&self) -> String {
        match self {
            LoadError::Io { path, error } => {
                format!("Loading the cluster node config from {path}: {error}")
            }
            LoadError::Corrupted => "Unrecoverable error: corrupted cluster config file.".into(),
            LoadError::UnknownFlag => "Unknown flag in redis cluster config file".into(),
            LoadError::TwoMyself => {
                "=== ASSERTION FAILED === ==> cluster.c: 'server.cluster->myself == NULL' is not true"
                    .into()
            }
            LoadError::BadSlotEntry => {
                "=== ASSERTION FAILED === ==> cluster.c: 'p != NULL' is not true".into()
            }
        }
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.log_line())
    }
}

impl std::error::Error for LoadError {}

/// A loaded nodes.conf, with the lines Redis logs on the way.
#[derive(Debug)]
pub struct Loaded {
    pub state: ClusterState,
    /// Warnings (`Skipping unknown cluster config variable '...'`) and the
    /// notice `Node configuration loaded, I'm <id>`.
    pub log: Vec<String>,
}

/// Loads `path` as `clusterLoadConfig`: `Ok(None)` if there is no file or
/// it is empty (Redis then starts a new identity and writes one), the
/// state if it parses. `now_ms` is what Redis stamps a nonzero ping/pong
/// time and a FAIL flag with (`mstime()`): the file's times are not kept.
pub fn load_file(path: &Path, now_ms: i64) -> Result<Option<Loaded>, LoadError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LoadError::Io {
                path: path.display().to_string(),
                error: crate::util::strerror(&e),
            });
        }
    };
    if text.is_empty() {
        return Ok(None);
    }
    parse(&text, now_ms).map(Some)
}

/// Parses the text of a nodes.conf (see [`load_file`]).
pub fn parse(text: &[u8], now_ms: i64) -> Result<Loaded, LoadError> {
    let mut state = ClusterState::new();
    let mut log = Vec::new();
    // The nodes that had a line of their own, in file order: nodes only
    // named (as a primary or a slot's peer) go after them.
    let mut defined: Vec<NodeName> = Vec::new();
    let mut out = Vec::new();
    let mut spans = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        // fgets stops at a NUL as a C string would; a blank line (the
        // padding of an in-place rewrite) is skipped.
        if matches!(line.first(), None | Some(b'\n') | Some(0)) {
            continue;
        }
        out.clear();
        spans.clear();
        split_args(line, &mut out, &mut spans).map_err(|_| LoadError::Corrupted)?;
        let argv: Vec<&[u8]> = spans.iter().map(|&(s, e)| &out[s..e]).collect();
        // sdssplitargs of a line of blanks gives no words: Redis then
        // reads argv[0] past the end; call it corrupted.
        let Some(first) = argv.first() else {
            return Err(LoadError::Corrupted);
        };
        if first.eq_ignore_ascii_case(b"vars") {
            if argv.len().is_multiple_of(2) {
                return Err(LoadError::Corrupted);
            }
            for pair in argv[1..].chunks(2) {
                let (name, value) = (pair[0], pair[1]);
                if name.eq_ignore_ascii_case(b"currentEpoch") {
                    state.current_epoch = c_strtoull(value);
                } else if name.eq_ignore_ascii_case(b"lastVoteEpoch") {
                    state.last_vote_epoch = c_strtoull(value);
                } else {
                    log.push(format!(
                        "Skipping unknown cluster config variable '{}'",
                        String::from_utf8_lossy(name)
                    ));
                }
            }
            continue;
        }
        if argv.len() < 8 {
            return Err(LoadError::Corrupted);
        }
        let name = node_id(argv[0]).ok_or(LoadError::Corrupted)?;
        state.node_or_create(name);
        if !defined.contains(&name) {
            defined.push(name);
        }
        parse_node_line(&mut state, name, &argv, now_ms)?;
    }
    let Some(myself) = state.myself else {
        return Err(LoadError::Corrupted);
    };
    // The order: lines' nodes in file order, then the merely named ones.
    for name in &defined {
        state.move_to_end(name);
    }
    let named: Vec<NodeName> = state
        .nodes()
        .map(|n| n.name)
        .filter(|n| !defined.contains(n))
        .collect();
    for name in &named {
        state.move_to_end(name);
    }
    // A replica is in its primary's shard, whatever its own line said
    // (`clusterLoadConfig` copies the primary's id, and a primary's
    // `shard-id` gives it to the replicas read before it).
    let replicas: Vec<(NodeName, NodeName)> = state
        .nodes()
        .filter_map(|n| Some((n.name, n.primary?)))
        .collect();
    for (replica, primary) in replicas {
        if let Some(id) = state.node(&primary).map(|p| p.shard_id) {
            state.assign_shard_id(&replica, id);
        }
    }
    state.order_shards_primary_first();
    log.push(format!(
        "Node configuration loaded, I'm {}",
        String::from_utf8_lossy(myself.as_bytes())
    ));
    state.current_epoch = state.max_epoch();
    Ok(Loaded { state, log })
}

/// One node line (`argv` has at least 8 words, `argv[0]` is `name`).
fn parse_node_line(
    state: &mut ClusterState,
    name: NodeName,
    argv: &[&[u8]],
    now_ms: i64,
) -> Result<(), LoadError> {
    // ip:port[@cport][,hostname][,aux=value]...
    let mut parts = argv[1].split(|&b| b == b',');
    let addr = parts.next().unwrap_or_default();
    let hostname = parts.next().unwrap_or_default().to_vec();
    let mut shard_id = None;
    let mut human_nodename = Vec::new();
    // The port of the other kind (`Node::pport`): `tls-port=` in a file
    // of a plaintext cluster, `tcp-port=` in a TLS cluster's.
    let mut other_port = None;
    for field in parts {
        let mut kv = field.split(|&b| b == b'=');
        let (Some(key), Some(value), None) = (kv.next(), kv.next(), kv.next()) else {
            return Err(LoadError::Corrupted);
        };
        if !key
            .iter()
            .chain(value)
            .all(|&c| crate::util::valid_aux_char(c))
        {
            return Err(LoadError::Corrupted);
        }
        match key {
            b"shard-id" => shard_id = Some(node_id(value).ok_or(LoadError::Corrupted)?),
            // Redis 7.2's human node name.
            b"nodename" => human_nodename = value.to_vec(),
            b"tcp-port" | b"tls-port" => {
                // Redis writes the one of the kind the client port is not.
                let port = aux_port(value).ok_or(LoadError::Corrupted)?;
                if key == b"tcp-port" || other_port.is_none() {
                    other_port = Some(port);
                }
            }
            _ => return Err(LoadError::Corrupted),
        }
    }
    let colon = addr
        .iter()
        .rposition(|&b| b == b':')
        .ok_or(LoadError::Corrupted)?;
    let ip = &addr[..colon];
    let ports = &addr[colon + 1..];
    let (port, cport) = match ports.iter().position(|&b| b == b'@') {
        Some(at) => (c_atoi(&ports[..at]), Some(c_atoi(&ports[at + 1..]))),
        None => (c_atoi(ports), None),
    };
    let mut flags = 0;
    let mut is_myself = false;
    for flag in argv[2].split(|&b| b == b',') {
        let bit = match flag.to_ascii_lowercase().as_slice() {
            b"myself" => {
                if state.myself.is_some() {
                    return Err(LoadError::TwoMyself);
                }
                is_myself = true;
                NODE_MYSELF
            }
            b"master" => NODE_MASTER,
            b"slave" => NODE_SLAVE,
            b"fail?" => NODE_PFAIL,
            b"fail" => NODE_FAIL,
            b"handshake" => NODE_HANDSHAKE,
            b"noaddr" => NODE_NOADDR,
            b"nofailover" => NODE_NOFAILOVER,
            b"noflags" => 0,
            _ => return Err(LoadError::UnknownFlag),
        };
        flags |= bit;
    }
    let primary = if argv[3].first() != Some(&b'-') {
        let p = node_id(argv[3]).ok_or(LoadError::Corrupted)?;
        state.node_or_create(p);
        Some(p)
    } else {
        None
    };
    {
        let n = state.node_or_create(name);
        n.hostname = hostname;
        n.human_nodename = human_nodename;
        n.ip = ip[..ip.len().min(IP_MAX)].to_vec();
        n.port = port;
        n.cport = cport.unwrap_or(port.wrapping_add(PORT_INCR));
        n.flags |= flags;
        if let Some(id) = shard_id {
            n.shard_id = id;
        }
        if let Some(p) = other_port {
            n.pport = p;
        }
        if flags & NODE_FAIL != 0 {
            n.fail_time = now_ms;
        }
        if c_atoi(argv[4]) != 0 {
            n.ping_sent = now_ms;
        }
        if c_atoi(argv[5]) != 0 {
            n.pong_received = now_ms;
        }
    }
    if is_myself {
        state.myself = Some(name);
    }
    if let Some(p) = primary {
        state.attach_replica(&p, &name);
    }
    // A replica's own epoch is not kept: it shows its primary's.
    let replica = state
        .node(&name)
        .is_some_and(|n| n.is_replica() && n.primary.is_some());
    let epoch = if replica { 0 } else { c_strtoull(argv[6]) };
    if let Some(n) = state.node_mut(&name) {
        n.config_epoch = epoch;
    }
    for word in &argv[8..] {
        if word.first() == Some(&b'[') {
            // [slot->-id] or [slot-<-id]
            let dash = word
                .iter()
                .position(|&b| b == b'-')
                .ok_or(LoadError::BadSlotEntry)?;
            let direction = word.get(dash + 1).copied();
            let slot = c_atoi(&word[1..dash]);
            let slot = u16::try_from(slot)
                .ok()
                .filter(|&s| usize::from(s) < SLOTS)
                .ok_or(LoadError::Corrupted)?;
            let rest = word.get(dash + 3..).unwrap_or(&[]);
            let close = rest
                .iter()
                .position(|&b| b == b']')
                .ok_or(LoadError::Corrupted)?;
            let peer = node_id(&rest[..close]).ok_or(LoadError::Corrupted)?;
            state.node_or_create(peer);
            if direction == Some(b'>') {
                state.set_migrating(slot, Some(peer));
            } else {
                state.set_importing(slot, Some(peer));
            }
            continue;
        }
        let (start, stop) = match word.iter().position(|&b| b == b'-') {
            Some(dash) => (c_atoi(&word[..dash]), c_atoi(&word[dash + 1..])),
            None => (c_atoi(word), c_atoi(word)),
        };
        let valid = |s: i32| (0..SLOTS as i32).contains(&s);
        if !valid(start) || !valid(stop) {
            return Err(LoadError::Corrupted);
        }
        for slot in start..=stop {
            // A slot claimed twice stays with its first owner.
            state.add_slot(&name, slot as u16);
        }
    }
    Ok(())
}

/// A `tcp-port`/`tls-port` value (`auxTcpPortSetter`): 1 to 5 characters,
/// `atoi`ed, 0 to 65535.
fn aux_port(value: &[u8]) -> Option<i32> {
    if !(1..=5).contains(&value.len()) {
        return None;
    }
    Some(c_atoi(value)).filter(|p| (0..65536).contains(p))
}

/// A node id as Redis accepts one (`verifyClusterNodeId`): 40 characters
/// of `a-z` and `0-9`.
fn node_id(s: &[u8]) -> Option<NodeName> {
    if s.iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    {
        NodeName::from_slice(s)
    } else {
        None
    }
}

/// C's `strtoull(s, NULL, 10)`: leading blanks, an optional sign (a minus
/// negates modulo 2^64), digits; overflow gives `u64::MAX`.
fn c_strtoull(s: &[u8]) -> u64 {
    let s = s.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: u64 = 0;
    for &d in digits.iter().take_while(|d| d.is_ascii_digit()) {
        match v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
        {
            Some(n) => v = n,
            None => return u64::MAX,
        }
    }
    if neg { v.wrapping_neg() } else { v }
}

/// The flags word (`representClusterNodeFlags`).
fn push_flags(out: &mut Vec<u8>, flags: u16) {
    const TABLE: [(u16, &str); 8] = [
        (NODE_MYSELF, "myself"),
        (NODE_MASTER, "master"),
        (NODE_SLAVE, "slave"),
        (NODE_PFAIL, "fail?"),
        (NODE_FAIL, "fail"),
        (NODE_HANDSHAKE, "handshake"),
        (NODE_NOADDR, "noaddr"),
        (NODE_NOFAILOVER, "nofailover"),
    ];
    let names: Vec<&str> = TABLE
        .iter()
        .filter(|(bit, _)| flags & bit != 0)
        .map(|&(_, name)| name)
        .collect();
    if names.is_empty() {
        out.extend_from_slice(b"noflags");
    } else {
        out.extend_from_slice(names.join(",").as_bytes());
    }
}

/// The description of every node whose flags miss all of `filter`
/// (`clusterGenNodesDescription`): one line each, `\n`-terminated. With
/// `use_pport` (a plaintext client of a TLS cluster) a node's plaintext
/// port is shown where known.
pub fn nodes_description(state: &ClusterState, filter: u16, use_pport: bool) -> Vec<u8> {
    describe(state, filter, use_pport, false)
}

/// [`nodes_description`], with nodes.conf's auxiliary fields if
/// `for_config` (Redis shows them to no client).
fn describe(state: &ClusterState, filter: u16, use_pport: bool, for_config: bool) -> Vec<u8> {
    let ranges = state.slot_ranges();
    let mut out = Vec::new();
    for node in state.nodes() {
        if node.flags & filter != 0 {
            continue;
        }
        let empty = Vec::new();
        let mine = ranges.get(&node.name).unwrap_or(&empty);
        node_description(&mut out, state, node, mine, use_pport, for_config);
        out.push(b'\n');
    }
    out
}

/// One node's line, without its newline (`clusterGenNodeDescription`).
fn node_description(
    out: &mut Vec<u8>,
    state: &ClusterState,
    node: &Node,
    ranges: &[(u16, u16)],
    use_pport: bool,
    for_config: bool,
) {
    let port = if use_pport && node.pport != 0 {
        node.pport
    } else {
        node.port
    };
    out.extend_from_slice(node.name.as_bytes());
    out.push(b' ');
    out.extend_from_slice(&node.ip);
    out.extend_from_slice(format!(":{port}@{}", node.cport).as_bytes());
    if !node.hostname.is_empty() {
        out.push(b',');
        out.extend_from_slice(&node.hostname);
    }
    if for_config {
        // Redis 7.2+'s auxiliary fields, in its order: the hostname's place
        // stays (empty), then the port of the other kind (`tls-port=`, or
        // `tcp-port=` in a TLS cluster), the human node name if any, and
        // the shard id.
        if node.hostname.is_empty() {
            out.push(b',');
        }
        if (0..65536).contains(&node.pport) {
            let field = if state.tls_cluster {
                "tcp-port"
            } else {
                "tls-port"
            };
            out.extend_from_slice(format!(",{field}={}", node.pport).as_bytes());
        }
        if !node.human_nodename.is_empty() {
            out.extend_from_slice(b",nodename=");
            out.extend_from_slice(&node.human_nodename);
        }
        out.extend_from_slice(b",shard-id=");
        out.extend_from_slice(node.shard_id.as_bytes());
    }
    out.push(b' ');
    push_flags(out, node.flags);
    out.push(b' ');
    match node.primary {
        Some(p) => out.extend_from_slice(p.as_bytes()),
        None => out.push(b'-'),
    }
    let link = if node.link || node.is_myself() {
        "connected"
    } else {
        "disconnected"
    };
    let mut text = String::new();
    let _ = write!(
        text,
        " {} {} {} {link}",
        node.ping_sent,
        node.pong_received,
        state.shown_epoch(node)
    );
    for &(start, end) in ranges {
        if start == end {
            let _ = write!(text, " {start}");
        } else {
            let _ = write!(text, " {start}-{end}");
        }
    }
    out.extend_from_slice(text.as_bytes());
    // Myself also lists the slots it is moving, migrating first if both.
    if node.is_myself() {
        for slot in 0..SLOTS as u16 {
            if let Some(to) = state.migrating_to(slot) {
                out.extend_from_slice(format!(" [{slot}->-").as_bytes());
                out.extend_from_slice(to.as_bytes());
                out.push(b']');
            } else if let Some(from) = state.importing_from(slot) {
                out.extend_from_slice(format!(" [{slot}-<-").as_bytes());
                out.extend_from_slice(from.as_bytes());
                out.push(b']');
            }
        }
    }
}

/// The `CLUSTER NODES` reply's text: every node, handshakes included.
pub fn cluster_nodes(state: &ClusterState, use_pport: bool) -> Vec<u8> {
    nodes_description(state, 0, use_pport)
}

/// The text of nodes.conf (`clusterSaveConfig`): the nodes but those in
/// handshake, client ports as announced (never the plaintext ones), then
/// the `vars` line.
pub fn config_text(state: &ClusterState) -> Vec<u8> {
    let mut out = describe(state, NODE_HANDSHAKE, false, true);
    out.extend_from_slice(
        format!(
            "vars currentEpoch {} lastVoteEpoch {}\n",
            state.current_epoch, state.last_vote_epoch
        )
        .as_bytes(),
    );
    out
}

/// Writes nodes.conf as Redis 7.0.15's `clusterSaveConfig` does: in place,
/// in one `write` from the start of the file, padded with newlines (which
/// the loader skips) if the old file was longer, then truncated to the new
/// length. Not a temp file and a rename: Redis holds an `flock` on the
/// file for its lifetime (`clusterLockConfig`), which a rename would move
/// off the path. A crash mid-write leaves the old content's tail as blank
/// lines or, at worst, a torn file, exactly as Redis's would.
pub fn save(state: &ClusterState, path: &Path, fsync: bool) -> io::Result<()> {
    let mut content = config_text(state);
    let len = content.len();
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    let old = file.metadata()?.len();
    if let Ok(old) = usize::try_from(old)
        && old > len
    {
        content.resize(old, b'\n');
    }
    file.write_all(&content)?;
    if fsync {
        file.sync_all()?;
    }
    if content.len() != len {
        // As Redis, a failed truncate leaves harmless blank lines.
        let _ = file.set_len(len as u64);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::state::{EndpointType, ReplyContext};

    const A: &str = "e81faae933808478353a8cf8ff4a0a1e8e1fd152";
    const B: &str = "d742d0ac7dd46b0ebe17270eff3b0f4fb8e8da3d";
    const C: &str = "a91d3c41d357cfe28872410a2e6e0ade40f8d925";

    fn name(s: &str) -> NodeName {
        NodeName::from_slice(s.as_bytes()).unwrap()
    }

    const SA: &str = "5a0000000000000000000000000000000000000a";
    const SB: &str = "5b0000000000000000000000000000000000000b";

    fn conf() -> String {
        format!(
            "{A} 127.0.0.1:7000@17000,,tls-port=0,shard-id={SA} myself,master - 0 1700000000000 3 connected 0-99 101-5460 [100->-{B}] [200-<-{B}]\n\
             {B} 10.0.0.2:7001@17001,b.example,tls-port=0,shard-id={SB} master - 0 1700000000001 4 connected 100 5461-16383\n\
             {C} 127.0.0.1:7002@17002,,tls-port=0,shard-id={SA} slave {A} 1700000000002 1700000000003 3 disconnected\n\
             vars currentEpoch 7 lastVoteEpoch 5\n"
        )
    }

    /// A nodes.conf text without its auxiliary fields (the shard ids are
    /// random).
    fn without_shard_ids(text: &[u8]) -> String {
        let text = String::from_utf8(text.to_vec()).unwrap();
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(i) = rest.find(",shard-id=") {
            let head = &rest[..i];
            let head = head.strip_suffix(",tls-port=0").unwrap_or(head);
            out.push_str(head.trim_end_matches(','));
            rest = &rest[i + ",shard-id=".len() + 40..];
        }
        out.push_str(rest);
        out
    }

    #[test]
    fn loads_every_field() {
        let loaded = parse(conf().as_bytes(), 42).unwrap();
        let s = &loaded.state;
        assert_eq!(s.myself, Some(name(A)));
        assert_eq!((s.current_epoch, s.last_vote_epoch), (7, 5));
        let a = s.node(&name(A)).unwrap();
        assert_eq!(
            (a.ip.as_slice(), a.port, a.cport),
            (&b"127.0.0.1"[..], 7000, 17000)
        );
        assert_eq!(
            a.flags & (NODE_MYSELF | NODE_MASTER),
            NODE_MYSELF | NODE_MASTER
        );
        assert_eq!((a.ping_sent, a.pong_received, a.config_epoch), (0, 42, 3));
        assert_eq!(a.replicas, vec![name(C)]);
        let b = s.node(&name(B)).unwrap();
        assert_eq!(b.hostname, b"b.example");
        assert_eq!(b.cport, 17001);
        let c = s.node(&name(C)).unwrap();
        // A replica's epoch is not kept; its primary's is shown.
        assert_eq!((c.primary, c.config_epoch), (Some(name(A)), 0));
        assert_eq!((c.ping_sent, c.pong_received), (42, 42));
        assert_eq!(s.slot_owner(0), Some(&name(A)));
        assert_eq!(s.slot_owner(100), Some(&name(B)));
        assert_eq!(s.slot_owner(16383), Some(&name(B)));
        assert_eq!(s.migrating_to(100), Some(&name(B)));
        assert_eq!(s.importing_from(200), Some(&name(B)));
        assert_eq!(
            loaded.log,
            vec![format!("Node configuration loaded, I'm {A}")]
        );
    }

    #[test]
    fn writes_back_what_it_read_times_aside() {
        let mut s = parse(conf().as_bytes(), 42).unwrap().state;
        for (n, ping, pong, link) in [
            (A, 0, 1700000000000, true),
            (B, 0, 1700000000001, true),
            (C, 1700000000002, 1700000000003, false),
        ] {
            let node = s.node_mut(&name(n)).unwrap();
            (node.ping_sent, node.pong_received, node.link) = (ping, pong, link);
        }
        assert_eq!(String::from_utf8(config_text(&s)).unwrap(), conf());
    }

    #[test]
    fn shard_ids_are_kept_and_replicas_take_their_primary_s() {
        let s = parse(conf().as_bytes(), 0).unwrap().state;
        let id = |n| String::from_utf8(s.node(&name(n)).unwrap().shard_id.0.to_vec()).unwrap();
        assert_eq!((id(A), id(B), id(C)), (SA.into(), SB.into(), SA.into()));
        // A replica's own id gives way to its primary's, before or after
        // the primary's line; a file of Redis 7.0 (no ids) gets random
        // ones, a replica its primary's, and saves them.
        for text in [
            format!(
                "{C} 1:3@4,,shard-id={SB} slave {A} 0 0 0 connected\n{A} 1:1@2,,shard-id={SA} myself,master - 0 0 0 connected\n"
            ),
            format!(
                "{A} 1:1@2,,shard-id={SA} myself,master - 0 0 0 connected\n{C} 1:3@4,,shard-id={SB} slave {A} 0 0 0 connected\n"
            ),
        ] {
            let s = parse(text.as_bytes(), 0).unwrap().state;
            assert_eq!(s.node(&name(C)).unwrap().shard_id, name(SA));
        }
        let old = format!(
            "{A} 1:1@2 myself,master - 0 0 0 connected\n{C} 1:3@4 slave {A} 0 0 0 connected\n"
        );
        let s = parse(old.as_bytes(), 0).unwrap().state;
        let a = s.node(&name(A)).unwrap().shard_id;
        assert_eq!(s.node(&name(C)).unwrap().shard_id, a);
        let again = parse(&config_text(&s), 0).unwrap().state;
        assert_eq!(again.node(&name(A)).unwrap().shard_id, a);
        assert_eq!(again.node(&name(C)).unwrap().shard_id, a);
        // Redis 8.0's other aux fields are read; a TLS cluster's
        // `tcp-port` is the plaintext port.
        let text = format!(
            "{A} 1:1@2,h.example,tcp-port=6379,nodename=n1,shard-id={SA} myself,master - 0 0 0 connected\n"
        );
        let s = parse(text.as_bytes(), 0).unwrap().state;
        let a = s.node(&name(A)).unwrap();
        assert_eq!((a.pport, a.hostname.as_slice()), (6379, &b"h.example"[..]));
        for bad in [
            ",,shard-id=xyz",
            ",,shard-id",
            ",,bogus=1",
            ",,tls-port=65536",
            ",,tcp-port=",
            ",,nodename=a!b",
        ] {
            let text = format!("{A} 1:1@2{bad} myself,master - 0 0 0 connected\n");
            assert_eq!(
                parse(text.as_bytes(), 0).unwrap_err(),
                LoadError::Corrupted,
                "{bad}"
            );
        }
    }

    #[test]
    fn older_address_forms() {
        let text = format!(
            "{A} 127.0.0.1:7000 myself,master - 0 0 0 connected 5\n{B} ::1:7001@0 noflags - 0 0 0 connected\n"
        );
        let s = parse(text.as_bytes(), 1).unwrap().state;
        let a = s.node(&name(A)).unwrap();
        assert_eq!((a.port, a.cport), (7000, 17000));
        assert!(a.hostname.is_empty());
        let b = s.node(&name(B)).unwrap();
        assert_eq!(
            (b.ip.as_slice(), b.port, b.cport, b.flags),
            (&b"::1"[..], 7001, 0, 0)
        );
        let out = without_shard_ids(&config_text(&s));
        assert_eq!(
            out,
            format!(
                "{A} 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 5\n\
                 {B} ::1:7001@0 noflags - 0 0 0 disconnected\n\
                 vars currentEpoch 0 lastVoteEpoch 0\n"
            )
        );
    }

    #[test]
    fn current_epoch_is_at_least_the_highest_config_epoch() {
        let text =
            format!("{A} 1.2.3.4:1@2 myself,master - 0 0 9 connected\nvars currentEpoch 3\n");
        assert_eq!(parse(text.as_bytes(), 0).unwrap().state.current_epoch, 9);
    }

    #[test]
    fn blank_lines_and_unknown_vars() {
        let text = format!(
            "\n{A} 1.2.3.4:1@2 myself,master - 0 0 0 connected\nvars foo 1 currentEpoch 2\n\n\n"
        );
        let loaded = parse(text.as_bytes(), 0).unwrap();
        assert_eq!(loaded.state.current_epoch, 2);
        assert_eq!(
            loaded.log[0],
            "Skipping unknown cluster config variable 'foo'"
        );
    }

    #[test]
    fn named_only_nodes_come_last() {
        // C names A as its primary before A's own line.
        let text = format!(
            "{C} 1.2.3.4:3@4 slave {A} 0 0 0 connected\n{A} 1.2.3.4:1@2 myself,master - 0 0 0 connected [7-<-{B}]\n"
        );
        let s = parse(text.as_bytes(), 0).unwrap().state;
        let order: Vec<NodeName> = s.nodes().map(|n| n.name).collect();
        assert_eq!(order, vec![name(C), name(A), name(B)]);
        let out = without_shard_ids(&config_text(&s));
        assert!(
            out.contains(&format!("\n{B} :0@0 noflags - 0 0 0 disconnected\n")),
            "{out}"
        );
    }

    #[test]
    fn handshake_nodes_are_not_saved_but_listed() {
        let text = format!(
            "{A} 1.2.3.4:1@2 myself,master - 0 0 0 connected\n{B} 1.2.3.4:5@6 handshake - 0 0 0 connected\n"
        );
        let s = parse(text.as_bytes(), 0).unwrap().state;
        assert!(!String::from_utf8(config_text(&s)).unwrap().contains(B));
        assert!(
            String::from_utf8(cluster_nodes(&s, false))
                .unwrap()
                .contains(B)
        );
    }

    #[test]
    fn plaintext_ports_only_where_asked_and_known() {
        let text = format!("{A} 1.2.3.4:6380@16380 myself,master - 0 0 0 connected\n");
        let mut s = parse(text.as_bytes(), 0).unwrap().state;
        s.node_mut(&name(A)).unwrap().pport = 6379;
        let line = |pport| String::from_utf8(cluster_nodes(&s, pport)).unwrap();
        assert!(line(true).contains(":6379@16380 "));
        assert!(line(false).contains(":6380@16380 "));
        // nodes.conf keeps the client port, the other one in its field:
        // `tcp-port=` in a TLS cluster, as Redis 8.0 writes it.
        s.tls_cluster = true;
        let saved = String::from_utf8(config_text(&s)).unwrap();
        assert!(
            saved.contains(":6380@16380,,tcp-port=6379,shard-id="),
            "{saved}"
        );
        let again = parse(saved.as_bytes(), 0).unwrap().state;
        assert_eq!(again.node(&name(A)).unwrap().pport, 6379);
    }

    #[test]
    fn redis_refuses_what_it_cannot_read() {
        let ok_line = format!("{A} 1.2.3.4:1@2 myself,master - 0 0 0 connected");
        let cases = [
            // No myself.
            (
                format!("{B} 1.2.3.4:1@2 master - 0 0 0 connected\n"),
                LoadError::Corrupted,
            ),
            // Fewer than eight fields.
            (
                format!("{A} 1.2.3.4:1@2 myself,master - 0 0 0\n"),
                LoadError::Corrupted,
            ),
            // An id that is not 40 of [a-z0-9].
            (
                "ABC 1.2.3.4:1@2 myself,master - 0 0 0 connected\n".into(),
                LoadError::Corrupted,
            ),
            (
                format!("{} 1:2@3 myself - 0 0 0 connected\n", A.to_uppercase()),
                LoadError::Corrupted,
            ),
            // No colon in the address.
            (
                format!("{A} 1.2.3.4 myself,master - 0 0 0 connected\n"),
                LoadError::Corrupted,
            ),
            (
                format!("{A} 1:2@3 myself,boss - 0 0 0 connected\n"),
                LoadError::UnknownFlag,
            ),
            (
                format!("{ok_line}\n{B} 1:2@3 myself - 0 0 0 connected\n"),
                LoadError::TwoMyself,
            ),
            (format!("{ok_line} 16384\n"), LoadError::Corrupted),
            (format!("{ok_line} 5-16384\n"), LoadError::Corrupted),
            (format!("{ok_line} [16384->-{B}]\n"), LoadError::Corrupted),
            (format!("{ok_line} [5->-{B}\n"), LoadError::Corrupted),
            (format!("{ok_line} [5->-abc]\n"), LoadError::Corrupted),
            (format!("{ok_line} [5]\n"), LoadError::BadSlotEntry),
            (
                format!("{ok_line}\nvars currentEpoch\n"),
                LoadError::Corrupted,
            ),
            (format!("{ok_line} \"open\n"), LoadError::Corrupted),
            (
                format!("{A} 1:2@3 myself {B}x 0 0 0 connected\n"),
                LoadError::Corrupted,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text.as_bytes(), 0).unwrap_err(), want, "{text}");
        }
        assert_eq!(
            LoadError::Corrupted.log_line(),
            "Unrecoverable error: corrupted cluster config file."
        );
    }

    #[test]
    fn load_file_missing_or_empty_is_a_fresh_start() {
        let dir = std::env::temp_dir().join(format!("zw-nodes-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("nodes.conf");
        assert!(load_file(&path, 0).unwrap().is_none());
        std::fs::write(&path, "").unwrap();
        assert!(load_file(&path, 0).unwrap().is_none());
        // A save over a longer file leaves exactly the new text.
        std::fs::write(&path, "x".repeat(10_000)).unwrap();
        let s = parse(conf().as_bytes(), 0).unwrap().state;
        save(&s, &path, false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), config_text(&s));
        assert!(load_file(&path, 0).unwrap().is_some());
        let err = load_file(&dir, 0).unwrap_err();
        assert!(
            err.log_line()
                .starts_with("Loading the cluster node config from ")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn slots_and_shards_replies() {
        let mut s = parse(conf().as_bytes(), 0).unwrap().state;
        s.node_mut(&name(C)).unwrap().repl_offset = 5;
        let ctx = ReplyContext {
            endpoint: EndpointType::Hostname,
            master_repl_offset: 9,
            ..ReplyContext::default()
        };
        let slots =
            String::from_utf8(crate::cluster::state::slots_reply_bytes(&s, &ctx, false)).unwrap();
        // 0-99 A (with C), 100 B, 101-5460 A (with C), 5461-16383 B.
        assert!(
            slots.starts_with("*4\r\n*4\r\n:0\r\n:99\r\n*4\r\n$1\r\n?\r\n:7000\r\n"),
            "{slots}"
        );
        assert!(slots.contains("$9\r\nb.example\r\n:7001\r\n"), "{slots}");
        let shards =
            String::from_utf8(crate::cluster::state::shards_reply_bytes(&s, &ctx, false)).unwrap();
        assert!(
            shards.starts_with("*2\r\n*4\r\n$5\r\nslots\r\n*4\r\n:0\r\n:99\r\n:101\r\n:5460\r\n"),
            "{shards}"
        );
        assert!(shards.contains("$4\r\nrole\r\n$7\r\nreplica\r\n$18\r\nreplication-offset\r\n:5\r\n$6\r\nhealth\r\n$6\r\nonline\r\n"), "{shards}");
        assert!(
            shards.contains("$8\r\nendpoint\r\n$9\r\nb.example\r\n$8\r\nhostname\r\n"),
            "{shards}"
        );
    }
}
