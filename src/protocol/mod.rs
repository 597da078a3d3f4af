//! The Redis wire protocol: requests in ([`parser`]), replies out ([`reply`]).

pub mod parser;
pub mod reply;

pub use parser::{Parser, ProtocolError, Request};
pub use reply::Reply;
