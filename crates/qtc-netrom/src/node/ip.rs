//! IP inside NET/ROM, as JNOS carries it (`route add ... netrom`, `nr_sendraw`): a datagram to a
//! node whose transport header is a protocol extension (opcode 0) of IP's family and protocol
//! (0x0C, 0x0C). The node routes such datagrams like any other and hands those for it to the
//! daemon's IP router ([`Event::Ip`]); the router sends through [`Node::send_ip`].

use qtc_callsign::Callsign;

use super::{Event, Node, MAX_TABLE_EVENTS};
use crate::wire::{NetHeader, Transport, MAX_INFO};
use crate::Error;

/// NET/ROM's protocol family and protocol number for IP (JNOS's `NRPROTO_IP`).
pub const NETROM_IP: u8 = 0x0c;

/// Most IP datagrams waiting for the daemon; more are dropped (IP's own retries cover it).
const MAX_IP_EVENTS: usize = 256;

impl Node {
    /// Sends an IP datagram to node `dest`, routed as our circuits' frames are.
    pub fn send_ip(&mut self, dest: Callsign, datagram: &[u8]) -> Result<(), Error> {
        if dest == self.cfg.call {
            return Err(Error::ToSelf);
        }
        if datagram.len() > MAX_INFO {
            return Err(Error::InfoTooLong(datagram.len()));
        }
        let t = Transport::Extension {
            family: NETROM_IP,
            proto: NETROM_IP,
            data: datagram.to_vec(),
        };
        let transport = t.to_bytes();
        let h = NetHeader {
            origin: self.cfg.call,
            dest,
            ttl: self.cfg.ttl,
        };
        self.route(dest, h.datagram(&transport));
        Ok(())
    }

    /// A protocol-extension frame for us from `origin`: IP goes up, the rest is not ours.
    pub(super) fn on_extension(&mut self, origin: Callsign, family: u8, proto: u8, data: Vec<u8>) {
        if family != NETROM_IP || proto != NETROM_IP {
            tracing::trace!(%origin, family, proto, "NET/ROM protocol extension ignored");
            return;
        }
        let waiting = self
            .events
            .iter()
            .filter(|e| matches!(e, Event::Ip { .. }))
            .count();
        if waiting >= MAX_IP_EVENTS || self.events.len() >= MAX_TABLE_EVENTS + MAX_IP_EVENTS {
            self.stats.dropped += 1;
            return;
        }
        self.events.push_back(Event::Ip {
            origin,
            datagram: data,
        });
    }
}
