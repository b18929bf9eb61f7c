//! The NET/ROM wire formats: parse and emit only, no state.
//!
//! - [`nodes`]: the NODES routing broadcast, a UI frame to `NODES` with PID 0xCF.
//! - [`network`]: the layer-3 header every datagram starts with (origin, destination, TTL).
//! - [`transport`]: the layer-4 frames of circuits (connect, information, acknowledge...).
//!
//! Callsigns travel in AX.25's shifted 7-byte form ([`qtc_ax25::Callsign::to_shifted`]); the
//! flag bits of their SSID byte are ignored on input, as JNOS and Linux set them differently.
//! Parsers borrow their input and never panic; each limit has its own [`Error`].

mod alias;
pub mod network;
pub mod nodes;
pub mod transport;

pub use alias::{Alias, ALIAS_LEN};
pub use network::{NetHeader, NET_HEADER_LEN};
pub use nodes::{Nodes, NodesEntry, NODES_ENTRY_LEN, NODES_HEADER_LEN, NODES_PER_FRAME};
pub use transport::{Flags, Transport, MAX_INFO, MAX_WINDOW, TRANSPORT_HEADER_LEN};

use crate::Error;
use qtc_ax25::wire::ADDRESS_LEN;
use qtc_ax25::Callsign;

/// Reads one shifted callsign from the front of `bytes`; `what` names the field in errors.
pub(crate) fn read_call<'a>(
    bytes: &'a [u8],
    what: &'static str,
) -> Result<(Callsign, &'a [u8]), Error> {
    let (head, rest) = bytes
        .split_first_chunk::<ADDRESS_LEN>()
        .ok_or(Error::TooShort(what))?;
    let call =
        Callsign::from_shifted(head).map_err(|source| Error::BadCallsign { what, source })?;
    Ok((call, rest))
}

#[cfg(test)]
mod tests;
