//! ARP over AX.25 (RFC 826 with AX.25 hardware addresses), as KA9Q NOS, JNOS and Linux send it
//! in UI frames with PID 0xCD: hardware type 3, protocol type 0xCC (AX.25's PID for IP; 0x0800
//! is read too), 7-byte shifted callsigns and 4-byte addresses.

use std::net::Ipv4Addr;

use qtc_callsign::{Callsign, SHIFTED_LEN};

use crate::Error;

/// AX.25's ARP hardware type.
pub const HARDWARE_AX25: u16 = 3;
/// The protocol type NOS and Linux write for IP over AX.25 (the PID).
pub const PROTOCOL_IP_PID: u16 = 0x00cc;
/// Ethernet's type for IP, which some stations write instead.
pub const PROTOCOL_IP_ETHER: u16 = 0x0800;
/// A packet: 8 bytes of types, lengths and operation, then 7 + 4 + 7 + 4 of addresses.
pub const ARP_LEN: usize = 30;

/// Request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Who has the target address?
    Request,
    /// The sender has it.
    Reply,
}

/// An ARP packet over AX.25.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arp {
    /// Request or reply.
    pub op: Op,
    /// The protocol type as written (answered in kind).
    pub protocol: u16,
    /// The sender's callsign.
    pub sender_call: Callsign,
    /// The sender's address.
    pub sender_ip: Ipv4Addr,
    /// The target's hardware field as written (zeros in a request).
    pub target_hw: [u8; SHIFTED_LEN],
    /// The target's address.
    pub target_ip: Ipv4Addr,
}

impl Arp {
    /// Parses a packet; bytes after the 30 it needs are ignored (JNOS drops them too).
    ///
    /// Never panics; every malformation is an [`Error`].
    pub fn parse(b: &[u8]) -> Result<Arp, Error> {
        if b.len() < ARP_LEN {
            return Err(Error::TooShort("ARP packet"));
        }
        let hardware = u16::from_be_bytes([b[0], b[1]]);
        if hardware != HARDWARE_AX25 {
            return Err(Error::ArpHardware(hardware));
        }
        let protocol = u16::from_be_bytes([b[2], b[3]]);
        if protocol != PROTOCOL_IP_PID && protocol != PROTOCOL_IP_ETHER {
            return Err(Error::ArpProtocol(protocol));
        }
        if b[4] as usize != SHIFTED_LEN || b[5] != 4 {
            return Err(Error::ArpLengths {
                hardware: b[4],
                protocol: b[5],
            });
        }
        let op = match u16::from_be_bytes([b[6], b[7]]) {
            1 => Op::Request,
            2 => Op::Reply,
            other => return Err(Error::ArpOperation(other)),
        };
        let mut sender = [0u8; SHIFTED_LEN];
        sender.copy_from_slice(&b[8..15]);
        let sender_call = Callsign::from_shifted(&sender).map_err(Error::ArpSender)?;
        let mut target_hw = [0u8; SHIFTED_LEN];
        target_hw.copy_from_slice(&b[19..26]);
        Ok(Arp {
            op,
            protocol,
            sender_call,
            sender_ip: Ipv4Addr::new(b[15], b[16], b[17], b[18]),
            target_hw,
            target_ip: Ipv4Addr::new(b[26], b[27], b[28], b[29]),
        })
    }

    /// The packet's 30 bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ARP_LEN);
        out.extend_from_slice(&HARDWARE_AX25.to_be_bytes());
        out.extend_from_slice(&self.protocol.to_be_bytes());
        out.push(SHIFTED_LEN as u8);
        out.push(4);
        let op: u16 = match self.op {
            Op::Request => 1,
            Op::Reply => 2,
        };
        out.extend_from_slice(&op.to_be_bytes());
        out.extend_from_slice(&self.sender_call.to_shifted());
        out.extend_from_slice(&self.sender_ip.octets());
        out.extend_from_slice(&self.target_hw);
        out.extend_from_slice(&self.target_ip.octets());
        out
    }

    /// A request from `call` at `ip` for `target`.
    #[must_use]
    pub fn request(call: Callsign, ip: Ipv4Addr, target: Ipv4Addr) -> Arp {
        Arp {
            op: Op::Request,
            protocol: PROTOCOL_IP_PID,
            sender_call: call,
            sender_ip: ip,
            target_hw: [0; SHIFTED_LEN],
            target_ip: target,
        }
    }

    /// The reply to this request from `call`, which has the address asked for. The target
    /// field gets the asker's callsign with its last byte's extension bit set, as JNOS writes it.
    #[must_use]
    pub fn reply(&self, call: Callsign) -> Arp {
        let mut target_hw = self.sender_call.to_shifted();
        target_hw[SHIFTED_LEN - 1] |= 0x01;
        Arp {
            op: Op::Reply,
            protocol: self.protocol,
            sender_call: call,
            sender_ip: self.target_ip,
            target_hw,
            target_ip: self.sender_ip,
        }
    }
}
