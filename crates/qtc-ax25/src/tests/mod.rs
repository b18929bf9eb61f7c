//! Link and port tests over the simulated channel in `util`.

mod link;
mod port;
pub(crate) mod util;
