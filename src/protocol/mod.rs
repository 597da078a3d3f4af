//! The Redis wire protocol: requests in ([`parser`]), their arguments as
//! handlers read them ([`args`]), replies out ([`reply`]).

pub mod args;
pub mod parser;
pub mod reply;

pub use args::{Args, OwnedArgs};
pub use parser::{Parser, ProtocolError, Request};
pub use reply::Reply;
