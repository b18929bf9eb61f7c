//! Parse and emit only: every line and frame of the forwarding protocols. Parsers borrow
//! their input and say what was wrong.

pub mod b2f;
pub mod block;
pub mod body;
pub mod mbl;
pub mod proposal;
pub mod sid;
