//! AX.25 for qtc: the wire format (v2.0 and v2.2) and, on top of it, the connected-mode data
//! link and a port that routes frames to links.
//!
//! Layers, lowest first (smoltcp-style):
//!
//! - [`wire`]: [`Address`] (of [`qtc_callsign::Callsign`]s), [`Control`], [`Frame`], FCS, XID
//!   parameters. Parse and emit only.
//! - [`link`]: [`Link`], the connected-mode state machine of one (local, remote) pair.
//! - [`port`]: [`Port`], which routes frames to links, accepts incoming connects for our
//!   callsigns and answers DM to frames for no link.
//!
//! See the module docs of [`link`] and [`port`] for the `handle_*` / `poll_*` driving order.
//!
//! Everything here is sans-IO: no sockets, no clock, no sleeping. Time comes in as
//! `std::time::Instant` arguments.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod air;
mod error;
pub mod link;
pub mod port;
pub mod wire;

pub use air::{Air, TxQueue};
pub use error::Error;
pub use link::{Config, DisconnectReason, Event, Link, LinkStats, State};
pub use port::{LinkId, Port, PortEvent};
pub use wire::{
    Address, CommandResponse, Control, Digipeater, Frame, Modulo, Path, Pid, Supervisory,
    Unnumbered,
};

#[cfg(test)]
mod tests;
