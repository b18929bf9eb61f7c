//! Link and port tests over the simulated channels in `util` (queues with loss, duplication
//! and reordering) and `radio` (half-duplex air time, KISS modems).

mod air;
mod link;
mod port;
pub(crate) mod radio;
pub(crate) mod util;
