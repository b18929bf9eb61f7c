//! NET/ROM for qtc: the routing network JNOS, LinBPQ, XRouter and the Linux kernel nodes
//! form. Sans-IO: frames and time in; frames, events and deadlines out.
//!
//! Layers, lowest first:
//!
//! - [`wire`]: NODES broadcasts, the layer-3 header, layer-4 transport frames. Parse and emit.
//! - [`table`]: the node and neighbour tables with qualities, obsolescence and limits.
//! - [`Node`]: broadcasts, routing (and passing on datagrams for other nodes), and the
//!   layer-4 circuits that end here.
//!
//! # Driving a node
//!
//! 1. Input: [`Node::handle_nodes`] for each UI frame to `NODES` with PID 0xCF heard on a
//!    port, [`Node::handle_datagram`] for each I frame with PID 0xCF from a neighbour, and
//!    [`Node::handle_timeout`] when [`Node::poll_timeout`] has passed.
//! 2. Commands: [`Node::connect`], [`Node::send`], [`Node::close`], [`Node::set_busy`].
//! 3. Output, in this order: [`Node::poll_transmit`] until `None` (broadcasts to send as UI
//!    frames, datagrams to send over the AX.25 link to a neighbour), [`Node::poll_event`]
//!    until `None`, then [`Node::poll_timeout`].
//!
//! An idle node has one deadline: its next broadcast. No circuit timer runs while nothing is
//! outstanding.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod circuit;
mod error;
mod node;
mod schedule;
pub mod table;
pub mod wire;

pub use circuit::{CircuitConfig, CircuitState, CircuitStats, CloseReason};
pub use error::Error;
pub use node::{
    CircuitId, CircuitInfo, Config, Event, LockedRoute, Node, NodeStats, Transmit, MAX_CIRCUITS,
    MAX_TABLE_EVENTS, MAX_TX_QUEUE, NETROM_IP,
};
pub use table::{Change, Loss, Neighbour, NodeEntry, Route, RouteKind, Via, SILENT_AFTER};
pub use wire::Alias;

#[cfg(test)]
mod tests;
