//! IPv4 over AX.25 for qtc: the station as a TCP/IP router between its host (a TUN device the
//! daemon owns) and its radio ports, the way JNOS or a kernel `ax0` interface is one. Sans-IO:
//! datagrams, frames and time in; datagrams, frames, events and deadlines out.
//!
//! Layers, lowest first:
//!
//! - [`wire`]: the IPv4 header (checksum, lengths), the ICMP errors the router sends, ARP over
//!   AX.25 (RFC 826 with callsigns). Parse and emit.
//! - [`frag`]: fragmentation to a link's MTU. The router never reassembles: fragments go on to
//!   their end host.
//! - [`route`]: address prefixes and the routing table (a station on the air, found by ARP,
//!   or a NET/ROM node), with each route's mode (UI frames or a connected link).
//! - [`arp_table`]: the ARP table, bounded, its learned entries aged when read.
//! - [`Router`]: what goes where.
//!
//! # Driving a router
//!
//! 1. Input: [`Router::handle_host`] for each datagram read from the TUN device,
//!    [`Router::handle_frame`] for each UI or I frame with PID 0xCC or 0xCD heard on an IP
//!    port, [`Router::handle_netrom`] for each IP datagram that came over NET/ROM, and
//!    [`Router::handle_timeout`] when [`Router::poll_timeout`] has passed.
//! 2. Output, in this order: [`Router::poll_transmit`] until `None` (datagrams for the host,
//!    frames for the radio ports, datagrams for NET/ROM), [`Router::poll_event`] until `None`,
//!    then [`Router::poll_timeout`].
//!
//! An idle router has no deadline: only an ARP request waiting for its answer sets one. ARP
//! entries expire when read, not on a clock.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arp_table;
mod error;
pub mod frag;
pub mod route;
mod router;
pub mod wire;

pub use error::Error;
pub use route::{Hop, Mode, Prefix, Route};
pub use router::{
    Config, Event, PortConfig, Router, StaticArp, Stats, Transmit, MAX_EVENTS, MAX_PENDING,
    MAX_QUEUED, MAX_TX_QUEUE, NETROM_MTU, QST,
};

#[cfg(test)]
mod tests;
