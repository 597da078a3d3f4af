//! Value data structures other than sorted sets.

pub mod list;
