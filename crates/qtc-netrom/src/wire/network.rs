//! The layer-3 (network) header that starts every NET/ROM datagram carried in an I frame
//! with PID 0xCF: origin node, destination node, time to live.
//!
//! JNOS writes the extension bit set in the destination's SSID byte and clear in the
//! origin's; both are ignored here on input.

use super::read_call;
use crate::Error;
use qtc_callsign::Callsign;

/// Origin (7), destination (7), TTL (1).
pub const NET_HEADER_LEN: usize = 15;

/// The layer-3 header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetHeader {
    /// The node the datagram started from.
    pub origin: Callsign,
    /// The node it is for.
    pub dest: Callsign,
    /// Hops left; a node that would pass it on with 0 drops it.
    pub ttl: u8,
}

impl NetHeader {
    /// Parses the header at the front of a datagram; returns it and the transport part.
    pub fn parse(datagram: &[u8]) -> Result<(NetHeader, &[u8]), Error> {
        let (origin, rest) = read_call(datagram, "origin")?;
        let (dest, rest) = read_call(rest, "destination")?;
        let (&ttl, rest) = rest.split_first().ok_or(Error::TooShort("TTL"))?;
        Ok((NetHeader { origin, dest, ttl }, rest))
    }

    /// Appends the header (destination with its extension bit, as NET/ROM writes it).
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.origin.to_shifted());
        let mut dest = self.dest.to_shifted();
        dest[6] |= 0x01;
        out.extend_from_slice(&dest);
        out.push(self.ttl);
    }

    /// The datagram: this header, then `transport`.
    #[must_use]
    pub fn datagram(&self, transport: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(NET_HEADER_LEN + transport.len());
        self.emit(&mut v);
        v.extend_from_slice(transport);
        v
    }
}
