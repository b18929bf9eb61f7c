//! The crate's tests: wire formats against known bytes and round trips, fragmentation, and the
//! router driven with datagrams, frames and time.

mod router;
mod util;
mod wire;
