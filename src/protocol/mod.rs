//! The Redis wire protocol: requests in ([`parser`]), their arguments as
//! handlers read them ([`args`]), replies out ([`reply`]).

pub(crate) mod args;
pub(crate) mod parser;
pub(crate) mod reply;

pub(crate) use args::{Args, OwnedArgs};
pub(crate) use parser::{Parser, Request};
pub(crate) use reply::Reply;

/// Appends a command as a client sends it (a RESP multibulk of bulk
/// strings): what the AOF logs and the replication stream carries.
pub(crate) fn encode_command(out: &mut Vec<u8>, argv: &[impl AsRef<[u8]>]) {
    out.push(b'*');
    out.extend_from_slice(argv.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for a in argv {
        let a = a.as_ref();
        out.push(b'$');
        out.extend_from_slice(a.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}
