//! The Redis wire protocol: requests in ([`parser`]), their arguments as
//! handlers read them ([`args`]), replies out ([`reply`]).

pub(crate) mod args;
pub(crate) mod fpconv;
pub(crate) mod parser;
pub(crate) mod reply;

pub(crate) use args::{Args, OwnedArgs};
pub(crate) use parser::{Parser, Request};
pub(crate) use reply::Reply;

/// Appends a command as a client sends it (a RESP multibulk of bulk
/// strings): what the AOF logs and the replication stream carries.
pub(crate) fn encode_command(out: &mut Vec<u8>, argv: &[impl AsRef<[u8]>]) {
    encode_parts(out, argv.len(), argv.iter().map(AsRef::as_ref));
}

/// [`encode_command`] of `argc` parts given one by one (a request's
/// [`Args`] as they are, with no vector built of them). Lengths are
/// formatted on the stack: every write a replica or the AOF receives
/// passes here, so it allocates nothing beyond `out`'s growth.
pub(crate) fn encode_parts<'a>(
    out: &mut Vec<u8>,
    argc: usize,
    parts: impl IntoIterator<Item = &'a [u8]>,
) {
    let mut n = itoa::Buffer::new();
    out.push(b'*');
    out.extend_from_slice(n.format(argc).as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in parts {
        out.push(b'$');
        out.extend_from_slice(n.format(a.len()).as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}
