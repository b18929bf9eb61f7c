//! Parse and emit only: the IPv4 header, the ICMP errors the router sends, ARP over AX.25.

pub mod arp;
pub mod icmp;
pub mod ipv4;

pub use arp::{Arp, Op};
pub use ipv4::Header;

/// The AX.25 PID of an IP datagram.
pub const PID_IP: u8 = 0xcc;
/// The AX.25 PID of an ARP packet.
pub const PID_ARP: u8 = 0xcd;

/// NET/ROM's protocol family and protocol for IP, in the transport header's first two bytes
/// of a protocol-extension frame (opcode 0), as JNOS's `nr_sendraw` writes them.
pub const NETROM_FAMILY_IP: u8 = 0x0c;
