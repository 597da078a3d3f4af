//! The cluster bus's wire format: Redis 7.0.15's `clusterMsg` (`cluster.h`),
//! byte for byte, so zwindow and redis-server nodes read each other.
//!
//! A message is a fixed header of [`HEADER_LEN`] bytes (`CLUSTERMSG_MIN_LEN`:
//! the signature `RCmb`, the total length, the sender's epochs, offset,
//! name, slots, ports and flags) and a body that depends on its type: the
//! gossip sections and ping extensions of PING/PONG/MEET, a node name for
//! FAIL, channel and message for PUBLISH, and so on ([`Body`]). Every
//! integer is in network order (Redis `htons`/`htonl`/`htonu64`s them), with
//! two exceptions Redis leaves alone: the one-byte `state`, and a MODULE
//! message's `module_id`, which Redis copies in host order ("already endian
//! adjusted") and is therefore kept here as its raw eight bytes.
//!
//! [`encode`] writes a message; [`decode`] reads one off the front of a
//! buffer, as Redis's `clusterReadHandler` and `clusterProcessPacket` do:
//! after eight bytes it checks the signature and that the length covers
//! the header (else the stream cannot be framed and the link must go),
//! then waits for the whole frame and checks the version and that the
//! length is exactly what the type, the gossip count and the extensions
//! add up to (else Redis drops that one frame and keeps the link: so does
//! [`DecodeError::Invalid`], which says how many bytes to skip).
//!
//! Nothing here trusts a length field: the decoder never reserves memory
//! from one (the caller's buffer grows only by bytes that really arrived),
//! and refuses a frame longer than a bound (see [`MAX_MESSAGE_LEN`]).

use std::fmt;

use bytes::{BufMut, Bytes};

/// The signature every message starts with ("Redis Cluster message bus").
pub const SIGNATURE: &[u8; 4] = b"RCmb";
/// `CLUSTER_PROTO_VER`: the only version Redis 7.0 reads.
pub const PROTO_VER: u16 = 1;
/// `CLUSTER_SLOTS`.
pub const SLOTS: usize = 16384;
/// `CLUSTER_NAMELEN`: a node name is 40 hex characters, not NUL-terminated.
pub const NAME_LEN: usize = 40;
/// `NET_IP_STR_LEN`: an IP address field, NUL-padded.
pub const IP_LEN: usize = 46;
/// `CLUSTERMSG_MIN_LEN`: the header, the part every message has.
pub const HEADER_LEN: usize = 2256;
/// `sizeof(clusterMsgDataGossip)`.
pub const GOSSIP_LEN: usize = 104;
/// `sizeof(clusterMsgDataFail)`.
const FAIL_LEN: usize = NAME_LEN;
/// `sizeof(clusterMsgDataUpdate)`: config epoch, node name, slots.
const UPDATE_LEN: usize = 8 + NAME_LEN + SLOTS / 8;
/// PUBLISH's fixed part: `channel_len` and `message_len`
/// (`sizeof(clusterMsgDataPublish) - 8`).
const PUBLISH_FIXED: usize = 8;
/// MODULE's fixed part: `module_id`, `len`, `type`
/// (`sizeof(clusterMsgModule) - 3`).
const MODULE_FIXED: usize = 13;
/// A ping extension's header: `length` (u32) `type` (u16), two unused bytes.
const EXT_HEADER_LEN: usize = 8;
/// `clusterMsgPingExtForgottenNode`: a name and a 64-bit TTL.
const FORGOTTEN_NODE_LEN: usize = NAME_LEN + 8;

/// The longest message [`decode`] accepts. Redis 7.0 has no such bound (it
/// reallocates its receive buffer to whatever `totlen` says, as the bytes
/// come), so a peer claiming 4 GB could make it hold 4 GB. Only PUBLISH and
/// MODULE messages carry payloads of any size (a gossip section is at most
/// 65535 × 104 bytes, under 7 MB); a PUBLISH relays one client command, and
/// a client's bulk string is at most `proto-max-bulk-len` (512 MB by
/// default). So 512 MB plus the header and PUBLISH's fixed part covers
/// every message a default-configured Redis can be asked to relay, while
/// a hostile peer cannot make us hold more. [`decode_limited`] takes
/// another bound (a server with a larger `proto-max-bulk-len`).
pub const MAX_MESSAGE_LEN: usize = 512 * 1024 * 1024 + HEADER_LEN + PUBLISH_FIXED;

// Message types (`CLUSTERMSG_TYPE_*`).
pub const TYPE_PING: u16 = 0;
pub const TYPE_PONG: u16 = 1;
pub const TYPE_MEET: u16 = 2;
pub const TYPE_FAIL: u16 = 3;
pub const TYPE_PUBLISH: u16 = 4;
pub const TYPE_FAILOVER_AUTH_REQUEST: u16 = 5;
pub const TYPE_FAILOVER_AUTH_ACK: u16 = 6;
pub const TYPE_UPDATE: u16 = 7;
pub const TYPE_MFSTART: u16 = 8;
pub const TYPE_MODULE: u16 = 9;
pub const TYPE_PUBLISHSHARD: u16 = 10;

// Node flags (`CLUSTER_NODE_*`), in the header's `flags` and a gossip
// section's.
pub const NODE_MASTER: u16 = 1;
pub const NODE_SLAVE: u16 = 2;
pub const NODE_PFAIL: u16 = 4;
pub const NODE_FAIL: u16 = 8;
pub const NODE_MYSELF: u16 = 16;
pub const NODE_HANDSHAKE: u16 = 32;
pub const NODE_NOADDR: u16 = 64;
pub const NODE_MEET: u16 = 128;
pub const NODE_MIGRATE_TO: u16 = 256;
pub const NODE_NOFAILOVER: u16 = 512;

// The header's `state` (`CLUSTER_OK`, `CLUSTER_FAIL`).
pub const STATE_OK: u8 = 0;
pub const STATE_FAIL: u8 = 1;

// Bits of `mflags[0]` (`CLUSTERMSG_FLAG0_*`).
pub const MFLAG0_PAUSED: u8 = 1 << 0;
pub const MFLAG0_FORCEACK: u8 = 1 << 1;
/// The message carries ping extensions; without it Redis 7.0 does not
/// validate them.
pub const MFLAG0_EXT_DATA: u8 = 1 << 2;

/// `CLUSTERMSG_EXT_TYPE_HOSTNAME`: the one ping extension Redis 7.0 defines.
pub const EXT_HOSTNAME: u16 = 0;
// Later versions' extensions (7.2/8.0: human node name, forgotten node,
// shard id, internal secret). 7.0 logs and skips them; the shard id decodes
// as [`PingExt::ShardId`], the human node name and forgotten nodes as theirs,
// the others as [`PingExt::Other`], kept opaque.
pub const EXT_HUMAN_NODENAME: u16 = 1;
pub const EXT_FORGOTTEN_NODE: u16 = 2;
pub const EXT_SHARDID: u16 = 3;
pub const EXT_INTERNALSECRET: u16 = 4;

/// A node's name: 40 bytes (hex characters), no terminator. All NULs is
/// `CLUSTER_NODE_NULL_NAME` (e.g. `slaveof` of a master).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeName(pub [u8; NAME_LEN]);

impl NodeName {
    pub const NULL: NodeName = NodeName([0; NAME_LEN]);

    /// The name from its 40 bytes; `None` for another length.
    pub fn from_slice(s: &[u8]) -> Option<NodeName> {
        s.try_into().ok().map(NodeName)
    }

    pub fn is_null(&self) -> bool {
        self.0 == [0; NAME_LEN]
    }

    pub fn as_bytes(&self) -> &[u8; NAME_LEN] {
        &self.0
    }
}

impl fmt::Debug for NodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_null() {
            f.write_str("NodeName(null)")
        } else {
            write!(f, "NodeName({})", String::from_utf8_lossy(&self.0))
        }
    }
}

/// An IP address field: text, NUL-padded to [`IP_LEN`]. All NULs in a
/// header's `myip` means "use the address the packet came from".
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ip(pub [u8; IP_LEN]);

impl Ip {
    pub const NONE: Ip = Ip([0; IP_LEN]);

    /// The field for `text`, cut to `IP_LEN - 1` bytes so it stays
    /// NUL-terminated, as Redis's `strncpy` of the announced IP.
    pub fn new(text: &[u8]) -> Ip {
        let mut ip = [0; IP_LEN];
        let n = text.len().min(IP_LEN - 1);
        ip[..n].copy_from_slice(&text[..n]);
        Ip(ip)
    }

    /// The text up to the first NUL (all of it if there is none: a peer's
    /// bytes need not be terminated).
    pub fn text(&self) -> &[u8] {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(IP_LEN);
        &self.0[..end]
    }
}

impl fmt::Debug for Ip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ip({:?})", String::from_utf8_lossy(self.text()))
    }
}

/// A bitmap of the 16384 slots, as Redis keeps it: slot `s` is bit
/// `s % 8` of byte `s / 8`.
#[derive(Clone, PartialEq, Eq)]
pub struct Slots(Box<[u8; SLOTS / 8]>);

impl Slots {
    pub fn empty() -> Slots {
        Slots(Box::new([0; SLOTS / 8]))
    }

    pub fn from_bytes(bytes: &[u8; SLOTS / 8]) -> Slots {
        Slots(Box::new(*bytes))
    }

    pub fn as_bytes(&self) -> &[u8; SLOTS / 8] {
        &self.0
    }

    /// Whether `slot` is set (`false` past the last slot).
    pub fn contains(&self, slot: u16) -> bool {
        let slot = usize::from(slot);
        self.0
            .get(slot / 8)
            .is_some_and(|byte| byte & (1 << (slot % 8)) != 0)
    }

    /// Set `slot` (ignored past the last slot).
    pub fn insert(&mut self, slot: u16) {
        let slot = usize::from(slot);
        if let Some(byte) = self.0.get_mut(slot / 8) {
            *byte |= 1 << (slot % 8);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&b| b == 0)
    }

    pub fn count(&self) -> usize {
        self.0.iter().map(|b| b.count_ones() as usize).sum()
    }
}

impl Default for Slots {
    fn default() -> Slots {
        Slots::empty()
    }
}

impl fmt::Debug for Slots {
    /// The set slots as ranges: 2048 bytes of zeros help nobody.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut ranges = Vec::new();
        let mut start: Option<usize> = None;
        for slot in 0..=SLOTS {
            let set = slot < SLOTS && self.contains(slot as u16);
            match (set, start) {
                (true, None) => start = Some(slot),
                (false, Some(s)) => {
                    ranges.push(if s == slot - 1 {
                        s.to_string()
                    } else {
                        format!("{s}-{}", slot - 1)
                    });
                    start = None;
                }
                _ => {}
            }
        }
        write!(f, "Slots[{}]", ranges.join(","))
    }
}

/// The header every message carries: who sends it and how it sees itself.
/// `totlen`, `type`, `count` and `extensions` are not here: the encoder
/// derives them from the [`Body`], the decoder checks them against it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Header {
    /// The client port (TLS or plain) the sender announces.
    pub port: u16,
    pub current_epoch: u64,
    /// The sender's config epoch, or its master's if it is a replica.
    pub config_epoch: u64,
    /// The master replication offset, or a replica's processed offset.
    pub offset: u64,
    pub sender: NodeName,
    /// The sender's slots, or its master's if it is a replica.
    pub myslots: Slots,
    /// The sender's master; [`NodeName::NULL`] for a master.
    pub slaveof: NodeName,
    /// The announced IP; [`Ip::NONE`] to let the receiver take the
    /// connection's address.
    pub myip: Ip,
    /// The plaintext client port when `port` is TLS.
    pub pport: u16,
    /// The cluster bus port.
    pub cport: u16,
    /// The sender's `NODE_*` flags.
    pub flags: u16,
    /// The cluster state as the sender sees it ([`STATE_OK`], [`STATE_FAIL`]).
    pub state: u8,
    /// `MFLAG0_*` in the first byte; the other two unused. The encoder
    /// adds [`MFLAG0_EXT_DATA`] when a ping carries extensions.
    pub mflags: [u8; 3],
}

impl Default for NodeName {
    fn default() -> NodeName {
        NodeName::NULL
    }
}

impl Default for Ip {
    fn default() -> Ip {
        Ip::NONE
    }
}

/// One gossip section (`clusterMsgDataGossip`): what the sender knows of
/// another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gossip {
    pub nodename: NodeName,
    /// When the sender last pinged it, in seconds (Redis sends ms / 1000).
    pub ping_sent: u32,
    /// When the sender last had its pong, in seconds.
    pub pong_received: u32,
    pub ip: Ip,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// A ping extension (`clusterMsgPingExt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PingExt {
    /// The sender's announced hostname (`cluster-announce-hostname`),
    /// without its NUL and padding.
    Hostname(Bytes),
    /// The sender's human node name ([`EXT_HUMAN_NODENAME`], Redis 7.2
    /// and later: `cluster-announce-human-nodename`), as the hostname.
    HumanNodename(Bytes),
    /// A node the sender forgot (CLUSTER FORGET) and keeps out for `ttl`
    /// more seconds ([`EXT_FORGOTTEN_NODE`], Redis 7.2 and later: the
    /// name's 40 bytes, then the TTL).
    ForgottenNode { name: NodeName, ttl: u64 },
    /// The sender's shard id ([`EXT_SHARDID`], Redis 7.2 and later: 40
    /// bytes, no terminator). Redis 7.0 skips it as a type it does not
    /// know; 7.2 and later send it in every PING, PONG and MEET.
    ShardId(NodeName),
    /// A type this node does not act on ([`EXT_INTERNALSECRET`]…, or a
    /// forgotten node or shard id too short to hold one): kept
    /// whole, padding included, for the reader to skip as Redis skips an
    /// unknown type. Encoded as is, zero-padded to eight bytes.
    Other { ext_type: u16, data: Bytes },
}

/// The gossip and extensions of a PING, PONG or MEET.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Ping {
    pub gossip: Vec<Gossip>,
    pub extensions: Vec<PingExt>,
}

/// What a message says, by type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Ping(Ping),
    Pong(Ping),
    Meet(Ping),
    /// The named node is failing.
    Fail {
        about: NodeName,
    },
    Publish {
        channel: Bytes,
        message: Bytes,
    },
    PublishShard {
        channel: Bytes,
        message: Bytes,
    },
    /// A replica asks for a vote; the header says which epoch and slots.
    FailoverAuthRequest,
    FailoverAuthAck,
    /// A replica asks its master to pause for a manual failover.
    MfStart,
    /// The named node's slots at its config epoch (sent to a node with a
    /// stale view).
    Update {
        config_epoch: u64,
        node: NodeName,
        slots: Slots,
    },
    /// A module's message, kept opaque. `module_id` is Redis's raw bytes
    /// (host order, see the module's header).
    Module {
        module_id: [u8; 8],
        module_type: u8,
        payload: Bytes,
    },
    /// A type 7.0 does not know: Redis takes its length as given and
    /// ignores it; the bytes after the header are kept.
    Unknown {
        msg_type: u16,
        data: Bytes,
    },
}

impl Body {
    /// The `CLUSTERMSG_TYPE_*` of this body.
    pub fn msg_type(&self) -> u16 {
        match self {
            Body::Ping(_) => TYPE_PING,
            Body::Pong(_) => TYPE_PONG,
            Body::Meet(_) => TYPE_MEET,
            Body::Fail { .. } => TYPE_FAIL,
            Body::Publish { .. } => TYPE_PUBLISH,
            Body::PublishShard { .. } => TYPE_PUBLISHSHARD,
            Body::FailoverAuthRequest => TYPE_FAILOVER_AUTH_REQUEST,
            Body::FailoverAuthAck => TYPE_FAILOVER_AUTH_ACK,
            Body::MfStart => TYPE_MFSTART,
            Body::Update { .. } => TYPE_UPDATE,
            Body::Module { .. } => TYPE_MODULE,
            Body::Unknown { msg_type, .. } => *msg_type,
        }
    }

    /// The gossip and extensions of a PING, PONG or MEET.
    pub fn ping(&self) -> Option<&Ping> {
        match self {
            Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => Some(p),
            _ => None,
        }
    }
}

/// One cluster bus message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg {
    pub header: Header,
    pub body: Body,
}

/// A message [`encode`] cannot write: a count past `u16` or a length past
/// `u32` (the wire's field sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cluster bus message too large for its length fields")
    }
}

impl std::error::Error for TooLarge {}

/// Eight-byte alignment of ping extensions (`EIGHT_BYTE_ALIGN`).
fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

impl PingExt {
    /// The extension's bytes after its header: content, NUL (a hostname's)
    /// and zero padding to eight bytes.
    fn payload_len(&self) -> usize {
        match self {
            PingExt::Hostname(h) | PingExt::HumanNodename(h) => align8(h.len() + 1),
            PingExt::ForgottenNode { .. } => FORGOTTEN_NODE_LEN,
            PingExt::ShardId(_) => align8(NAME_LEN),
            PingExt::Other { data, .. } => align8(data.len()),
        }
    }
}

/// The bytes of `msg`, exactly as a Redis 7.0 node writes them.
pub fn encode(msg: &Msg) -> Result<Vec<u8>, TooLarge> {
    let body = &msg.body;
    let (count, extensions) = match body.ping() {
        Some(p) => (
            u16::try_from(p.gossip.len()).map_err(|_| TooLarge)?,
            u16::try_from(p.extensions.len()).map_err(|_| TooLarge)?,
        ),
        None => (0, 0),
    };
    let body_len = match body {
        Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => {
            let mut len = p.gossip.len() * GOSSIP_LEN;
            for ext in &p.extensions {
                len += EXT_HEADER_LEN + ext.payload_len();
            }
            len
        }
        Body::Fail { .. } => FAIL_LEN,
        Body::Publish { channel, message } | Body::PublishShard { channel, message } => {
            u32::try_from(channel.len()).map_err(|_| TooLarge)?;
            u32::try_from(message.len()).map_err(|_| TooLarge)?;
            PUBLISH_FIXED + channel.len() + message.len()
        }
        Body::FailoverAuthRequest | Body::FailoverAuthAck | Body::MfStart => 0,
        Body::Update { .. } => UPDATE_LEN,
        Body::Module { payload, .. } => {
            u32::try_from(payload.len()).map_err(|_| TooLarge)?;
            MODULE_FIXED + payload.len()
        }
        Body::Unknown { data, .. } => data.len(),
    };
    let totlen = HEADER_LEN + body_len;
    let totlen32 = u32::try_from(totlen).map_err(|_| TooLarge)?;

    let h = &msg.header;
    let mut mflags = h.mflags;
    if extensions > 0 {
        mflags[0] |= MFLAG0_EXT_DATA;
    }
    let mut out = Vec::with_capacity(totlen);
    out.put_slice(SIGNATURE);
    out.put_u32(totlen32);
    out.put_u16(PROTO_VER);
    out.put_u16(h.port);
    out.put_u16(body.msg_type());
    out.put_u16(count);
    out.put_u64(h.current_epoch);
    out.put_u64(h.config_epoch);
    out.put_u64(h.offset);
    out.put_slice(&h.sender.0);
    out.put_slice(h.myslots.as_bytes());
    out.put_slice(&h.slaveof.0);
    out.put_slice(&h.myip.0);
    out.put_u16(extensions);
    out.put_bytes(0, 30); // notused1
    out.put_u16(h.pport);
    out.put_u16(h.cport);
    out.put_u16(h.flags);
    out.put_u8(h.state);
    out.put_slice(&mflags);
    debug_assert_eq!(out.len(), HEADER_LEN);

    match body {
        Body::Ping(p) | Body::Pong(p) | Body::Meet(p) => {
            for g in &p.gossip {
                out.put_slice(&g.nodename.0);
                out.put_u32(g.ping_sent);
                out.put_u32(g.pong_received);
                out.put_slice(&g.ip.0);
                out.put_u16(g.port);
                out.put_u16(g.cport);
                out.put_u16(g.flags);
                out.put_u16(g.pport);
                out.put_u16(0); // notused1
            }
            for ext in &p.extensions {
                let payload = ext.payload_len();
                let forgotten;
                let (ext_type, content): (u16, &[u8]) = match ext {
                    PingExt::Hostname(h) => (EXT_HOSTNAME, h),
                    PingExt::HumanNodename(h) => (EXT_HUMAN_NODENAME, h),
                    PingExt::ForgottenNode { name, ttl } => {
                        let mut b = [0; FORGOTTEN_NODE_LEN];
                        b[..NAME_LEN].copy_from_slice(name.as_bytes());
                        b[NAME_LEN..].copy_from_slice(&ttl.to_be_bytes());
                        forgotten = b;
                        (EXT_FORGOTTEN_NODE, &forgotten[..])
                    }
                    PingExt::ShardId(id) => (EXT_SHARDID, id.as_bytes()),
                    PingExt::Other { ext_type, data } => (*ext_type, data),
                };
                // Fits: the whole message's length did.
                out.put_u32((EXT_HEADER_LEN + payload) as u32);
                out.put_u16(ext_type);
                out.put_u16(0); // unused
                out.put_slice(content);
                out.put_bytes(0, payload - content.len());
            }
        }
        Body::Fail { about } => out.put_slice(&about.0),
        Body::Publish { channel, message } | Body::PublishShard { channel, message } => {
            // Checked to fit above.
            out.put_u32(channel.len() as u32);
            out.put_u32(message.len() as u32);
            out.put_slice(channel);
            out.put_slice(message);
        }
        Body::FailoverAuthRequest | Body::FailoverAuthAck | Body::MfStart => {}
        Body::Update {
            config_epoch,
            node,
            slots,
        } => {
            out.put_u64(*config_epoch);
            out.put_slice(&node.0);
            out.put_slice(slots.as_bytes());
        }
        Body::Module {
            module_id,
            module_type,
            payload,
        } => {
            out.put_slice(module_id);
            out.put_u32(payload.len() as u32);
            out.put_u8(*module_type);
            out.put_slice(payload);
        }
        Body::Unknown { data, .. } => out.put_slice(data),
    }
    debug_assert_eq!(out.len(), totlen);
    Ok(out)
}

/// Why a buffer does not hold a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The first four bytes are not `RCmb`. The stream cannot be framed:
    /// Redis logs "Bad message length or signature" and frees the link.
    BadSignature([u8; 4]),
    /// `totlen` is shorter than the header: as [`Self::BadSignature`].
    TooShort(u32),
    /// `totlen` is past the bound (see [`MAX_MESSAGE_LEN`]): the link must
    /// go before we hold that much.
    TooLong { totlen: u32, max: usize },
    /// A whole frame of `len` bytes that Redis's `clusterProcessPacket`
    /// drops, keeping the link: skip `len` bytes and read on.
    Invalid { len: usize, why: Invalid },
}

/// Why a well-framed message is dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invalid {
    /// Not [`PROTO_VER`].
    Version(u16),
    /// `totlen` disagrees with what the type, the gossip count, the
    /// lengths and extensions inside add up to (`expected`).
    Length {
        msg_type: u16,
        totlen: usize,
        expected: u64,
    },
    /// A ping extension whose length is not a multiple of eight.
    ExtPadding(u32),
    /// A ping extension that runs past the message's end.
    ExtOverrun(u32),
    /// A ping extension shorter than its own header. Redis 7.0 lets a zero
    /// length through (the next extension is then read at the same place);
    /// no Redis writes one.
    ExtTooShort(u32),
    /// An extension count without [`MFLAG0_EXT_DATA`]: Redis 7.0 would then
    /// read the extensions without checking their lengths; no Redis sends
    /// that.
    ExtWithoutFlag(u16),
}

impl DecodeError {
    /// For a dropped frame, its length (skip it and read on); `None` when
    /// the stream cannot be framed any more and the link must close.
    pub fn skip_len(&self) -> Option<usize> {
        match self {
            DecodeError::Invalid { len, .. } => Some(*len),
            _ => None,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::BadSignature(sig) => {
                write!(
                    f,
                    "bad cluster bus signature {:?}",
                    sig.escape_ascii().to_string()
                )
            }
            DecodeError::TooShort(n) => {
                write!(
                    f,
                    "cluster bus message length {n} is shorter than the header"
                )
            }
            DecodeError::TooLong { totlen, max } => {
                write!(
                    f,
                    "cluster bus message length {totlen} is over the {max} bytes allowed"
                )
            }
            DecodeError::Invalid { len, why } => {
                write!(f, "invalid cluster bus message of {len} bytes: ")?;
                match why {
                    Invalid::Version(v) => write!(f, "protocol version {v}"),
                    Invalid::Length {
                        msg_type,
                        totlen,
                        expected,
                    } => write!(
                        f,
                        "type {msg_type} of length {totlen} but expected length {expected}"
                    ),
                    Invalid::ExtPadding(n) => {
                        write!(f, "extension without proper padding ({n} bytes)")
                    }
                    Invalid::ExtOverrun(n) => {
                        write!(f, "extension of {n} bytes exceeds the total packet length")
                    }
                    Invalid::ExtTooShort(n) => {
                        write!(f, "extension of {n} bytes is shorter than its header")
                    }
                    Invalid::ExtWithoutFlag(n) => {
                        write!(f, "{n} extensions without the extension-data flag")
                    }
                }
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Reads the message at the front of `buf`: `Ok(None)` until it is all
/// there, then the message and its length (the bytes to consume). Bounded
/// by [`MAX_MESSAGE_LEN`].
pub fn decode(buf: &[u8]) -> Result<Option<(Msg, usize)>, DecodeError> {
    decode_limited(buf, MAX_MESSAGE_LEN)
}

/// [`decode`] with another bound on a message's length.
pub fn decode_limited(buf: &[u8], max: usize) -> Result<Option<(Msg, usize)>, DecodeError> {
    // As `clusterReadHandler`: the first eight bytes frame the message.
    let Some(start) = buf.get(..8) else {
        return Ok(None);
    };
    let mut r = Reader(start);
    let sig = r.array::<4>().unwrap_or_default();
    let totlen32 = r.u32().unwrap_or_default();
    if &sig != SIGNATURE {
        return Err(DecodeError::BadSignature(sig));
    }
    let totlen = totlen32 as usize;
    if totlen < HEADER_LEN {
        return Err(DecodeError::TooShort(totlen32));
    }
    if totlen > max {
        return Err(DecodeError::TooLong {
            totlen: totlen32,
            max,
        });
    }
    let Some(frame) = buf.get(..totlen) else {
        return Ok(None);
    };
    let invalid = |why| DecodeError::Invalid { len: totlen, why };
    match parse(frame) {
        Ok(msg) => Ok(Some((msg, totlen))),
        Err(why) => Err(invalid(why)),
    }
}

/// A cursor over a frame's bytes; every read checks the length.
struct Reader<'a>(&'a [u8]);

/// A read past the frame's end.
struct Short;

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        if self.0.len() < n {
            return Err(Short);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        self.take(N)?.try_into().map_err(|_| Short)
    }

    fn u8(&mut self) -> Result<u8, Short> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, Short> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, Short> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, Short> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn bytes(&mut self, n: usize) -> Result<Bytes, Short> {
        self.take(n).map(Bytes::copy_from_slice)
    }
}

/// The header's fields that frame the body, beside the [`Header`].
struct Framing {
    ver: u16,
    msg_type: u16,
    count: u16,
    extensions: u16,
}

fn parse_header(r: &mut Reader<'_>) -> Result<(Header, Framing), Short> {
    r.take(8)?; // signature and totlen, already read
    let ver = r.u16()?;
    let port = r.u16()?;
    let msg_type = r.u16()?;
    let count = r.u16()?;
    let current_epoch = r.u64()?;
    let config_epoch = r.u64()?;
    let offset = r.u64()?;
    let sender = NodeName(r.array()?);
    let myslots = Slots::from_bytes(&r.array()?);
    let slaveof = NodeName(r.array()?);
    let myip = Ip(r.array()?);
    let extensions = r.u16()?;
    r.take(30)?; // notused1
    let pport = r.u16()?;
    let cport = r.u16()?;
    let flags = r.u16()?;
    let state = r.u8()?;
    let mflags = r.array()?;
    let header = Header {
        port,
        current_epoch,
        config_epoch,
        offset,
        sender,
        myslots,
        slaveof,
        myip,
        pport,
        cport,
        flags,
        state,
        mflags,
    };
    Ok((
        header,
        Framing {
            ver,
            msg_type,
            count,
            extensions,
        },
    ))
}

/// One whole frame (`totlen` bytes): `clusterProcessPacket`'s checks, then
/// the message.
fn parse(frame: &[u8]) -> Result<Msg, Invalid> {
    let totlen = frame.len();
    let mut r = Reader(frame);
    // The frame holds at least HEADER_LEN bytes (checked by the caller).
    let (header, f) = parse_header(&mut r).map_err(|_| Invalid::Length {
        msg_type: 0,
        totlen,
        expected: HEADER_LEN as u64,
    })?;
    if f.ver != PROTO_VER {
        return Err(Invalid::Version(f.ver));
    }
    let body = frame.get(HEADER_LEN..).unwrap_or_default();
    let wrong_length = |expected: u64| Invalid::Length {
        msg_type: f.msg_type,
        totlen,
        expected,
    };
    let exact = |expected: usize| {
        if totlen == expected {
            Ok(())
        } else {
            Err(wrong_length(expected as u64))
        }
    };
    // A fixed part must be there before the lengths in it can be read.
    let fixed = |len: usize| {
        if body.len() < len {
            Err(wrong_length((HEADER_LEN + len) as u64))
        } else {
            Ok(())
        }
    };
    let mut r = Reader(body);
    // Each body's reads come after its lengths were checked against
    // `totlen`, so this cannot happen: a safety net instead of a panic.
    let wrong = |_: Short| wrong_length(HEADER_LEN as u64);
    let msg_body = match f.msg_type {
        TYPE_PING | TYPE_PONG | TYPE_MEET => {
            let ping = parse_ping(body, &header, &f, totlen)?;
            match f.msg_type {
                TYPE_PING => Body::Ping(ping),
                TYPE_PONG => Body::Pong(ping),
                _ => Body::Meet(ping),
            }
        }
        TYPE_FAIL => {
            exact(HEADER_LEN + FAIL_LEN)?;
            Body::Fail {
                about: NodeName(r.array().map_err(wrong)?),
            }
        }
        TYPE_PUBLISH | TYPE_PUBLISHSHARD => {
            fixed(PUBLISH_FIXED)?;
            let channel_len = r.u32().map_err(wrong)?;
            let message_len = r.u32().map_err(wrong)?;
            // u64: two u32 lengths cannot overflow it.
            let expected = (HEADER_LEN + PUBLISH_FIXED) as u64
                + u64::from(channel_len)
                + u64::from(message_len);
            if totlen as u64 != expected {
                return Err(wrong_length(expected));
            }
            let channel = r.bytes(channel_len as usize).map_err(wrong)?;
            let message = r.bytes(message_len as usize).map_err(wrong)?;
            if f.msg_type == TYPE_PUBLISH {
                Body::Publish { channel, message }
            } else {
                Body::PublishShard { channel, message }
            }
        }
        TYPE_FAILOVER_AUTH_REQUEST | TYPE_FAILOVER_AUTH_ACK | TYPE_MFSTART => {
            exact(HEADER_LEN)?;
            match f.msg_type {
                TYPE_FAILOVER_AUTH_REQUEST => Body::FailoverAuthRequest,
                TYPE_FAILOVER_AUTH_ACK => Body::FailoverAuthAck,
                _ => Body::MfStart,
            }
        }
        TYPE_UPDATE => {
            exact(HEADER_LEN + UPDATE_LEN)?;
            Body::Update {
                config_epoch: r.u64().map_err(wrong)?,
                node: NodeName(r.array().map_err(wrong)?),
                slots: Slots::from_bytes(&r.array().map_err(wrong)?),
            }
        }
        TYPE_MODULE => {
            fixed(MODULE_FIXED)?;
            let module_id = r.array().map_err(wrong)?;
            let len = r.u32().map_err(wrong)?;
            let module_type = r.u8().map_err(wrong)?;
            let expected = (HEADER_LEN + MODULE_FIXED) as u64 + u64::from(len);
            if totlen as u64 != expected {
                return Err(wrong_length(expected));
            }
            Body::Module {
                module_id,
                module_type,
                payload: r.bytes(len as usize).map_err(wrong)?,
            }
        }
        // Redis: "We don't know this type of packet, so we assume it's
        // well formed."
        msg_type => Body::Unknown {
            msg_type,
            data: Bytes::copy_from_slice(body),
        },
    };
    Ok(Msg {
        header,
        body: msg_body,
    })
}

/// The gossip sections and extensions of a PING, PONG or MEET, with
/// `clusterProcessPacket`'s length checks.
fn parse_ping(body: &[u8], header: &Header, f: &Framing, totlen: usize) -> Result<Ping, Invalid> {
    let count = usize::from(f.count);
    let wrong_length = |expected: u64| Invalid::Length {
        msg_type: f.msg_type,
        totlen,
        expected,
    };
    let gossip_len = count * GOSSIP_LEN;
    let Some((gossip_bytes, mut rest)) = body.split_at_checked(gossip_len) else {
        return Err(wrong_length((HEADER_LEN + gossip_len) as u64));
    };
    let mut extensions = Vec::new();
    if header.mflags[0] & MFLAG0_EXT_DATA != 0 {
        for _ in 0..f.extensions {
            let mut r = Reader(rest);
            let (Ok(len), Ok(ext_type)) = (r.u32(), r.u16()) else {
                // Not even an extension header left.
                return Err(Invalid::ExtOverrun(EXT_HEADER_LEN as u32));
            };
            if len % 8 != 0 {
                return Err(Invalid::ExtPadding(len));
            }
            if (len as usize) < EXT_HEADER_LEN {
                return Err(Invalid::ExtTooShort(len));
            }
            let Some((ext, tail)) = rest.split_at_checked(len as usize) else {
                return Err(Invalid::ExtOverrun(len));
            };
            let payload = ext.get(EXT_HEADER_LEN..).unwrap_or_default();
            // A C string: up to its NUL (or the end, unterminated).
            let c_string = || {
                let end = payload
                    .iter()
                    .position(|&b| b == 0)
                    .unwrap_or(payload.len());
                Bytes::copy_from_slice(&payload[..end])
            };
            extensions.push(match ext_type {
                EXT_HOSTNAME => PingExt::Hostname(c_string()),
                EXT_HUMAN_NODENAME => PingExt::HumanNodename(c_string()),
                EXT_FORGOTTEN_NODE if payload.len() >= FORGOTTEN_NODE_LEN => {
                    let mut ttl = [0; 8];
                    ttl.copy_from_slice(&payload[NAME_LEN..FORGOTTEN_NODE_LEN]);
                    PingExt::ForgottenNode {
                        name: NodeName::from_slice(&payload[..NAME_LEN]).unwrap_or(NodeName::NULL),
                        ttl: u64::from_be_bytes(ttl),
                    }
                }
                EXT_SHARDID if payload.len() >= NAME_LEN => PingExt::ShardId(
                    NodeName::from_slice(&payload[..NAME_LEN]).unwrap_or(NodeName::NULL),
                ),
                ext_type => PingExt::Other {
                    ext_type,
                    data: Bytes::copy_from_slice(payload),
                },
            });
            rest = tail;
        }
    } else if f.extensions != 0 {
        return Err(Invalid::ExtWithoutFlag(f.extensions));
    }
    if !rest.is_empty() {
        return Err(wrong_length((totlen - rest.len()) as u64));
    }
    let mut gossip = Vec::with_capacity(count);
    for section in gossip_bytes.chunks_exact(GOSSIP_LEN) {
        let mut r = Reader(section);
        let g = (|| {
            Ok::<_, Short>(Gossip {
                nodename: NodeName(r.array()?),
                ping_sent: r.u32()?,
                pong_received: r.u32()?,
                ip: Ip(r.array()?),
                port: r.u16()?,
                cport: r.u16()?,
                flags: r.u16()?,
                pport: r.u16()?,
            })
        })()
        .map_err(|_| wrong_length((HEADER_LEN + gossip_len) as u64))?;
        gossip.push(g);
    }
    Ok(Ping { gossip, extensions })
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    fn name(c: u8) -> NodeName {
        NodeName([c; NAME_LEN])
    }

    fn header() -> Header {
        let mut myslots = Slots::empty();
        for s in [0, 1, 2, 7, 8, 5000, 16383] {
            myslots.insert(s);
        }
        Header {
            port: 7000,
            current_epoch: 0x0102_0304_0506_0708,
            config_epoch: 42,
            offset: 1234567,
            sender: name(b'a'),
            myslots,
            slaveof: NodeName::NULL,
            myip: Ip::new(b"10.0.0.1"),
            pport: 0,
            cport: 17000,
            flags: NODE_MASTER,
            state: STATE_OK,
            mflags: [0; 3],
        }
    }

    fn gossip(c: u8) -> Gossip {
        Gossip {
            nodename: name(c),
            ping_sent: 11,
            pong_received: 12,
            ip: Ip::new(b"127.0.0.1"),
            port: 7001,
            cport: 17001,
            flags: NODE_SLAVE | NODE_PFAIL,
            pport: 6001,
        }
    }

    /// One message of every type (and a few shapes of the variable ones).
    fn samples() -> Vec<Msg> {
        let h = header();
        let mut ext_header = header();
        ext_header.mflags[0] = MFLAG0_EXT_DATA;
        let mut slots = Slots::empty();
        slots.insert(100);
        let msg = |header: &Header, body| Msg {
            header: header.clone(),
            body,
        };
        vec![
            msg(&h, Body::Ping(Ping::default())),
            msg(
                &h,
                Body::Ping(Ping {
                    gossip: vec![gossip(b'b'), gossip(b'c')],
                    extensions: vec![],
                }),
            ),
            msg(
                &ext_header,
                Body::Pong(Ping {
                    gossip: vec![gossip(b'b')],
                    extensions: vec![
                        PingExt::Hostname(Bytes::from_static(b"host-1.example")),
                        PingExt::HumanNodename(Bytes::from_static(b"1234567")),
                        PingExt::ForgottenNode {
                            name: name(b'z'),
                            ttl: 59,
                        },
                    ],
                }),
            ),
            msg(
                &h,
                Body::Meet(Ping {
                    gossip: vec![gossip(b'd')],
                    extensions: vec![],
                }),
            ),
            msg(&h, Body::Fail { about: name(b'f') }),
            msg(
                &h,
                Body::Publish {
                    channel: Bytes::from_static(b"news"),
                    message: Bytes::from_static(b"hello\0world"),
                },
            ),
            msg(
                &h,
                Body::Publish {
                    channel: Bytes::new(),
                    message: Bytes::new(),
                },
            ),
            msg(
                &h,
                Body::PublishShard {
                    channel: Bytes::from_static(b"{shard}ch"),
                    message: Bytes::from_static(b"m"),
                },
            ),
            msg(&h, Body::FailoverAuthRequest),
            msg(&h, Body::FailoverAuthAck),
            msg(&h, Body::MfStart),
            msg(
                &h,
                Body::Update {
                    config_epoch: 9,
                    node: name(b'u'),
                    slots,
                },
            ),
            msg(
                &h,
                Body::Module {
                    module_id: *b"modid\x01\x02\x03",
                    module_type: 7,
                    payload: Bytes::from_static(b"opaque payload"),
                },
            ),
            msg(
                &h,
                Body::Unknown {
                    msg_type: 77,
                    data: Bytes::from_static(b"future"),
                },
            ),
        ]
    }

    fn enc(m: &Msg) -> Vec<u8> {
        encode(m).expect("encodable")
    }

    #[test]
    fn round_trips_every_type() {
        for m in samples() {
            let bytes = enc(&m);
            let (back, len) = decode(&bytes)
                .unwrap_or_else(|e| panic!("{:?}: {e}", m.body))
                .expect("complete");
            assert_eq!(len, bytes.len());
            assert_eq!(back, m);
            // And the bytes again: nothing lost or invented.
            assert_eq!(enc(&back), bytes);
        }
    }

    /// The shard id extension as Redis 7.2+ writes it
    /// (`clusterMsgPingExtShardId`: 40 bytes, type 3, length 48), read
    /// back; one too short to hold an id is skipped as an unknown type.
    #[test]
    fn shard_id_extension_layout() {
        let mut h = header();
        h.mflags = [MFLAG0_EXT_DATA, 0, 0];
        let id = name(b'5');
        let m = Msg {
            header: h.clone(),
            body: Body::Pong(Ping {
                gossip: vec![],
                extensions: vec![PingExt::ShardId(id)],
            }),
        };
        let b = enc(&m);
        assert_eq!(b.len(), HEADER_LEN + 48);
        let e = HEADER_LEN;
        assert_eq!(u32::from_be_bytes(b[e..e + 4].try_into().unwrap()), 48);
        assert_eq!(u16::from_be_bytes([b[e + 4], b[e + 5]]), EXT_SHARDID);
        assert_eq!(EXT_SHARDID, 3);
        assert_eq!(&b[e + 8..e + 48], id.as_bytes());
        let (back, used) = decode(&b).unwrap().unwrap();
        assert_eq!((back, used), (m, b.len()));
        let short = Msg {
            header: h,
            body: Body::Pong(Ping {
                gossip: vec![],
                extensions: vec![PingExt::Other {
                    ext_type: EXT_SHARDID,
                    data: Bytes::from_static(&[b'5'; 8]),
                }],
            }),
        };
        let (back, _) = decode(&enc(&short)).unwrap().unwrap();
        assert_eq!(back, short);
    }

    #[test]
    fn covers_every_7_0_type() {
        let mut types: Vec<u16> = samples().iter().map(|m| m.body.msg_type()).collect();
        types.sort_unstable();
        types.dedup();
        let known: Vec<u16> = types.iter().copied().filter(|&t| t < 11).collect();
        assert_eq!(known, (0..11).collect::<Vec<_>>());
    }

    /// The offsets of `cluster.h`'s static asserts, and the sizes Redis
    /// computes for each type's `totlen`.
    #[test]
    fn layout_matches_cluster_h() {
        let mut h = header();
        h.pport = 0x0a0b;
        h.state = STATE_FAIL;
        h.mflags = [MFLAG0_PAUSED, 0, 0];
        let m = Msg {
            header: h.clone(),
            body: Body::Ping(Ping {
                gossip: vec![gossip(b'g')],
                extensions: vec![PingExt::Hostname(Bytes::from_static(b"abc"))],
            }),
        };
        let b = enc(&m);
        let be16 = |at: usize| u16::from_be_bytes([b[at], b[at + 1]]);
        let be32 = |at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        let be64 = |at: usize| u64::from_be_bytes(b[at..at + 8].try_into().unwrap());
        assert_eq!(&b[0..4], b"RCmb");
        assert_eq!(be32(4) as usize, b.len());
        assert_eq!(b.len(), HEADER_LEN + GOSSIP_LEN + 8 + 8);
        assert_eq!(be16(8), 1);
        assert_eq!(be16(10), 7000);
        assert_eq!(be16(12), TYPE_PING);
        assert_eq!(be16(14), 1);
        assert_eq!(be64(16), 0x0102_0304_0506_0708);
        assert_eq!(be64(24), 42);
        assert_eq!(be64(32), 1234567);
        assert_eq!(&b[40..80], &[b'a'; 40]);
        // myslots at 80: slots 0, 1, 2, 7 are bits 0, 1, 2, 7 of byte 0.
        assert_eq!(b[80], 0b1000_0111);
        assert_eq!(b[81], 0b0000_0001);
        assert_eq!(b[80 + 16383 / 8], 0b1000_0000);
        assert_eq!(&b[2128..2168], &[0; 40]);
        assert_eq!(&b[2168..2176], b"10.0.0.1");
        assert_eq!(be16(2214), 1); // extensions
        assert_eq!(&b[2216..2246], &[0; 30]);
        assert_eq!(be16(2246), 0x0a0b);
        assert_eq!(be16(2248), 17000);
        assert_eq!(be16(2250), NODE_MASTER);
        assert_eq!(b[2252], STATE_FAIL);
        assert_eq!(b[2253], MFLAG0_PAUSED | MFLAG0_EXT_DATA);
        // The gossip section.
        let g = 2256;
        assert_eq!(&b[g..g + 40], &[b'g'; 40]);
        assert_eq!(be32(g + 40), 11);
        assert_eq!(be32(g + 44), 12);
        assert_eq!(&b[g + 48..g + 57], b"127.0.0.1");
        assert_eq!(be16(g + 94), 7001);
        assert_eq!(be16(g + 96), 17001);
        assert_eq!(be16(g + 98), NODE_SLAVE | NODE_PFAIL);
        assert_eq!(be16(g + 100), 6001);
        assert_eq!(be16(g + 102), 0);
        // The hostname extension: length 16 (8 + "abc\0" padded to 8).
        let e = g + GOSSIP_LEN;
        assert_eq!(be32(e), 16);
        assert_eq!(be16(e + 4), EXT_HOSTNAME);
        assert_eq!(&b[e + 8..e + 16], b"abc\0\0\0\0\0");

        let len_of = |body| {
            enc(&Msg {
                header: h.clone(),
                body,
            })
            .len()
        };
        assert_eq!(len_of(Body::Fail { about: name(b'x') }), 2296);
        assert_eq!(len_of(Body::FailoverAuthRequest), 2256);
        assert_eq!(
            len_of(Body::Update {
                config_epoch: 1,
                node: name(b'x'),
                slots: Slots::empty()
            }),
            4352 // sizeof(clusterMsg): UPDATE is the largest body
        );
        assert_eq!(
            len_of(Body::Publish {
                channel: Bytes::from_static(b"ab"),
                message: Bytes::from_static(b"cde")
            }),
            2256 + 8 + 5
        );
        assert_eq!(
            len_of(Body::Module {
                module_id: [0; 8],
                module_type: 1,
                payload: Bytes::from_static(b"xy")
            }),
            2256 + 13 + 2
        );
    }

    #[test]
    fn truncated_input_needs_more_at_every_boundary() {
        for m in samples() {
            let bytes = enc(&m);
            for cut in 0..bytes.len() {
                assert_eq!(decode(&bytes[..cut]), Ok(None), "{:?} cut at {cut}", m.body);
            }
        }
    }

    #[test]
    fn reads_back_to_back_messages() {
        let all = samples();
        let stream: Vec<u8> = all.iter().flat_map(enc).collect();
        let mut at = 0;
        for m in &all {
            let (got, len) = decode(&stream[at..]).unwrap().unwrap();
            assert_eq!(&got, m);
            at += len;
        }
        assert_eq!(at, stream.len());
        assert_eq!(decode(&stream[at..]), Ok(None));
    }

    fn set_be16(b: &mut [u8], at: usize, v: u16) {
        b[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }

    fn set_be32(b: &mut [u8], at: usize, v: u32) {
        b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    #[test]
    fn framing_errors_close_the_link() {
        let mut b = enc(&samples()[0]);
        b[0] = b'X';
        assert_eq!(decode(&b[..8]), Err(DecodeError::BadSignature(*b"XCmb")));
        assert_eq!(decode(&b[..8]).unwrap_err().skip_len(), None);

        let mut b = enc(&samples()[0]);
        set_be32(&mut b, 4, 2255);
        assert_eq!(decode(&b[..8]), Err(DecodeError::TooShort(2255)));

        // A hostile length is refused at eight bytes, nothing reserved.
        set_be32(&mut b, 4, u32::MAX);
        assert!(matches!(decode(&b[..8]), Err(DecodeError::TooLong { .. })));
        set_be32(&mut b, 4, 5000);
        assert!(matches!(
            decode_limited(&b[..8], 4999),
            Err(DecodeError::TooLong {
                totlen: 5000,
                max: 4999
            })
        ));
    }

    #[test]
    fn wrong_version_is_skipped() {
        let mut b = enc(&samples()[4]);
        set_be16(&mut b, 8, 2);
        let err = decode(&b).unwrap_err();
        assert_eq!(
            err,
            DecodeError::Invalid {
                len: b.len(),
                why: Invalid::Version(2)
            }
        );
        assert_eq!(err.skip_len(), Some(b.len()));
    }

    fn invalid(b: &[u8]) -> Invalid {
        match decode(b) {
            Err(DecodeError::Invalid { len, why }) => {
                assert_eq!(len, b.len());
                why
            }
            other => panic!("expected a dropped frame, got {other:?}"),
        }
    }

    #[test]
    fn gossip_count_must_agree_with_totlen() {
        let m = &samples()[1]; // a PING with two gossip sections
        let mut b = enc(m);
        set_be16(&mut b, 14, 1);
        assert!(matches!(invalid(&b), Invalid::Length { expected, .. } if expected == 2256 + 104));
        set_be16(&mut b, 14, 3);
        assert!(matches!(invalid(&b), Invalid::Length { .. }));
        set_be16(&mut b, 14, u16::MAX);
        assert!(matches!(invalid(&b), Invalid::Length { .. }));
        // One byte more than the sections.
        let mut b = enc(m);
        b.push(0);
        let n = b.len() as u32;
        set_be32(&mut b, 4, n);
        assert!(matches!(invalid(&b), Invalid::Length { .. }));
    }

    #[test]
    fn extensions_must_agree_with_totlen() {
        let m = &samples()[2]; // a PONG with one gossip section, three extensions
        let b = enc(m);
        let ext0 = HEADER_LEN + GOSSIP_LEN;

        // One extension fewer counted: bytes left over.
        let mut x = b.clone();
        set_be16(&mut x, 2214, 2);
        assert!(matches!(invalid(&x), Invalid::Length { .. }));
        // One more counted: it runs past the end.
        set_be16(&mut x, 2214, 4);
        assert!(matches!(invalid(&x), Invalid::ExtOverrun(_)));
        // Counted without the flag.
        let mut x = b.clone();
        x[2253] &= !MFLAG0_EXT_DATA;
        assert_eq!(invalid(&x), Invalid::ExtWithoutFlag(3));
        // Lengths that are unpadded, too short, too long.
        let mut x = b.clone();
        set_be32(&mut x, ext0, 25);
        assert_eq!(invalid(&x), Invalid::ExtPadding(25));
        set_be32(&mut x, ext0, 0);
        assert_eq!(invalid(&x), Invalid::ExtTooShort(0));
        set_be32(&mut x, ext0, 1 << 20);
        assert_eq!(invalid(&x), Invalid::ExtOverrun(1 << 20));
    }

    #[test]
    fn fixed_and_counted_bodies_must_agree_with_totlen() {
        for (i, m) in samples().iter().enumerate() {
            if matches!(m.body, Body::Unknown { .. }) {
                continue; // any length goes
            }
            // One byte added, the length field following: not what the
            // body says.
            let mut b = enc(m);
            b.push(0);
            let n = b.len() as u32;
            set_be32(&mut b, 4, n);
            assert!(
                matches!(invalid(&b), Invalid::Length { .. }),
                "sample {i}: {:?}",
                m.body
            );
        }
        // A PUBLISH whose lengths claim more than there is.
        let mut b = enc(&samples()[5]);
        set_be32(&mut b, HEADER_LEN + 4, u32::MAX);
        assert!(matches!(
            invalid(&b),
            Invalid::Length { expected, .. } if expected == 2264 + 4 + u64::from(u32::MAX)
        ));
        // A PUBLISH or MODULE too short for its fixed part.
        for t in [TYPE_PUBLISH, TYPE_MODULE, TYPE_FAIL, TYPE_UPDATE] {
            let mut b = enc(&samples()[8]); // a bare header
            set_be16(&mut b, 12, t);
            assert!(matches!(invalid(&b), Invalid::Length { .. }), "type {t}");
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = StdRng::seed_from_u64(0x5eed_c1a5);
        let valid: Vec<Vec<u8>> = samples().iter().map(enc).collect();
        for round in 0..3000 {
            let mut buf = match round % 3 {
                // Noise.
                0 => {
                    let n = rng.random_range(0..5000);
                    (0..n).map(|_| rng.random()).collect::<Vec<u8>>()
                }
                // Noise behind a plausible frame start.
                1 => {
                    let n = rng.random_range(HEADER_LEN..6000);
                    let mut b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                    b[..4].copy_from_slice(SIGNATURE);
                    set_be32(&mut b, 4, n as u32);
                    set_be16(&mut b, 8, PROTO_VER);
                    set_be16(&mut b, 12, rng.random_range(0..12));
                    b
                }
                // A valid message with a few bytes changed.
                _ => {
                    let mut b = valid[rng.random_range(0..valid.len())].clone();
                    for _ in 0..rng.random_range(1..6) {
                        let at = rng.random_range(4..b.len());
                        b[at] = rng.random();
                    }
                    b
                }
            };
            if rng.random_bool(0.2) {
                let cut = rng.random_range(0..=buf.len());
                buf.truncate(cut);
            }
            match decode(&buf) {
                Ok(Some((m, len))) => {
                    assert!(len <= buf.len());
                    // Whatever decodes encodes again to a valid message.
                    let again = enc(&m);
                    assert_eq!(decode(&again).unwrap().unwrap().0, m);
                }
                Ok(None) => {}
                Err(e) => {
                    if let Some(len) = e.skip_len() {
                        assert!(len <= buf.len());
                    }
                    let _ = e.to_string();
                }
            }
        }
    }

    #[test]
    fn slots_and_names() {
        let mut s = Slots::empty();
        assert!(s.is_empty());
        s.insert(16383);
        s.insert(16384); // past the end: ignored
        s.insert(3);
        s.insert(4);
        assert!(s.contains(16383) && s.contains(3) && !s.contains(5) && !s.contains(u16::MAX));
        assert_eq!(s.count(), 3);
        assert_eq!(format!("{s:?}"), "Slots[3-4,16383]");
        assert_eq!(Ip::new(b"::1").text(), b"::1");
        assert_eq!(Ip::new(&[b'9'; 60]).text().len(), IP_LEN - 1);
        assert_eq!(Ip([b'1'; IP_LEN]).text().len(), IP_LEN);
        assert!(NodeName::from_slice(b"short").is_none());
        assert!(NodeName::NULL.is_null());
    }
}
