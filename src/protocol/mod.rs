//! The Redis wire protocol: requests in ([`parser`]), their arguments as
//! handlers read them ([`args`]), replies out ([`reply`]).

pub(crate) mod args;
pub(crate) mod parser;
pub(crate) mod reply;

pub(crate) use args::{Args, OwnedArgs};
pub(crate) use parser::{Parser, Request};
pub(crate) use reply::Reply;
