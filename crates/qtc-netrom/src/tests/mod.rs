//! Nodes joined by simulated links (seeded loss, a manual clock), and the tables alone.

mod circuit;
mod ip;
mod node;
mod table;
mod transport;
pub(crate) mod util;
