//! Layer-4 (transport) frames: what circuits exchange inside datagrams addressed to a node.
//!
//! Every frame starts with five bytes; the fifth is the opcode, whose high nibble holds flags
//! (0x80 choke, 0x40 NAK, 0x20 more follows). The first four depend on the opcode
//! (JNOS nr4hdr.c, Linux nr_subr.c):
//!
//! | opcode | bytes 0-3 | after |
//! |---|---|---|
//! | 0 protocol extension | family, protocol, -, - | data (IP over NET/ROM, JNOS's NRR) |
//! | 1 connect request | my index, my id, -, - | window, user call (7), originating node (7) [, LinBPQ: timeout (2)] |
//! | 2 connect acknowledge | your index, your id, my index, my id | window [, LinBPQ: TTL]; choke set = refused |
//! | 3 disconnect request | your index, your id, -, - | |
//! | 4 disconnect acknowledge | your index, your id, -, - | |
//! | 5 information | your index, your id, N(S), N(R) | data |
//! | 6 information acknowledge | your index, your id, -, N(R) | |
//! | 7 reset (G8PZT, XRouter, Linux) | your index, your id, peer index, peer id | |
//!
//! The reset answers a frame for a circuit that does not exist: with "your" 0/0 it names the
//! circuit by the ids its sender had used for us (Linux `nr_transmit_reset`). JNOS does not
//! know opcode 7 and drops it.

use super::read_call;
use crate::Error;
use qtc_callsign::Callsign;

/// The fixed part of every transport frame.
pub const TRANSPORT_HEADER_LEN: usize = 5;
/// Most data sent in one information frame: 256 bytes of AX.25 I field less the 15-byte
/// network and 5-byte transport headers.
pub const MAX_INFO: usize = 236;
/// Largest window a circuit may use (sequence numbers are 8 bits).
pub const MAX_WINDOW: u8 = 127;
/// Largest information field accepted from a peer (an AX.25 frame's limit).
const MAX_INFO_RECEIVED: usize = qtc_ax25::wire::MAX_INFO_LEN;

const OP_EXTENSION: u8 = 0;
const OP_CONNECT_REQUEST: u8 = 1;
const OP_CONNECT_ACK: u8 = 2;
const OP_DISCONNECT_REQUEST: u8 = 3;
const OP_DISCONNECT_ACK: u8 = 4;
const OP_INFO: u8 = 5;
const OP_INFO_ACK: u8 = 6;
const OP_RESET: u8 = 7;
const CHOKE: u8 = 0x80;
const NAK: u8 = 0x40;
const MORE: u8 = 0x20;

/// The flags in the opcode byte's high nibble.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// The sender's receive buffer is full: stop sending (on a connect acknowledge: refused).
    pub choke: bool,
    /// The sender missed a frame: resend the one its N(R) names.
    pub nak: bool,
    /// More follows (set by some nodes on pieces of one message; carried, not needed).
    pub more: bool,
}

impl Flags {
    fn from_byte(b: u8) -> Flags {
        Flags {
            choke: b & CHOKE != 0,
            nak: b & NAK != 0,
            more: b & MORE != 0,
        }
    }

    fn to_byte(self) -> u8 {
        (if self.choke { CHOKE } else { 0 })
            | (if self.nak { NAK } else { 0 })
            | (if self.more { MORE } else { 0 })
    }
}

/// One transport frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Opens a circuit.
    ConnectRequest {
        /// The requester's circuit index.
        my_index: u8,
        /// The requester's circuit id.
        my_id: u8,
        /// The window it proposes.
        window: u8,
        /// The user on whose behalf (the caller's own callsign).
        user: Callsign,
        /// The node the user is on.
        node: Callsign,
        /// LinBPQ's extension: the requester's transport timeout, seconds.
        bpq_timeout: Option<u16>,
    },
    /// Answers a connect request.
    ConnectAck {
        /// The requester's circuit index.
        your_index: u8,
        /// The requester's circuit id.
        your_id: u8,
        /// The answerer's circuit index.
        my_index: u8,
        /// The answerer's circuit id.
        my_id: u8,
        /// The window accepted.
        window: u8,
        /// Choke flag set: the request is refused.
        refused: bool,
        /// LinBPQ's extension: the TTL the answerer uses.
        bpq_ttl: Option<u8>,
    },
    /// Asks to close a circuit.
    DisconnectRequest {
        /// The receiver's circuit index.
        your_index: u8,
        /// The receiver's circuit id.
        your_id: u8,
    },
    /// Confirms a close.
    DisconnectAck {
        /// The receiver's circuit index.
        your_index: u8,
        /// The receiver's circuit id.
        your_id: u8,
    },
    /// Data, with the sender's receive state.
    Info {
        /// The receiver's circuit index.
        your_index: u8,
        /// The receiver's circuit id.
        your_id: u8,
        /// N(S): this frame's sequence number.
        tx_seq: u8,
        /// N(R): the next sequence number the sender expects.
        rx_seq: u8,
        /// Choke, NAK, more.
        flags: Flags,
        /// The data.
        data: Vec<u8>,
    },
    /// The sender's receive state alone.
    InfoAck {
        /// The receiver's circuit index.
        your_index: u8,
        /// The receiver's circuit id.
        your_id: u8,
        /// N(R): the next sequence number the sender expects.
        rx_seq: u8,
        /// Choke, NAK.
        flags: Flags,
    },
    /// G8PZT's reset: the circuit is gone at the sender.
    Reset {
        /// The receiver's circuit index (0 when unknown).
        your_index: u8,
        /// The receiver's circuit id (0 when unknown).
        your_id: u8,
        /// The ids the receiver had used for the sender's circuit.
        peer_index: u8,
        /// (second byte of them)
        peer_id: u8,
    },
    /// Opcode 0: another protocol inside NET/ROM (IP, JNOS's route record). Routed, not
    /// interpreted.
    Extension {
        /// Protocol family.
        family: u8,
        /// Protocol.
        proto: u8,
        /// The rest.
        data: Vec<u8>,
    },
}

impl Transport {
    /// Parses a transport frame (the bytes after the network header).
    pub fn parse(bytes: &[u8]) -> Result<Transport, Error> {
        let (h, rest) = bytes
            .split_first_chunk::<TRANSPORT_HEADER_LEN>()
            .ok_or(Error::TooShort("transport header"))?;
        let [b0, b1, b2, b3, op] = *h;
        let flags = Flags::from_byte(op);
        Ok(match op & 0x0F {
            OP_EXTENSION => Transport::Extension {
                family: b0,
                proto: b1,
                data: rest.to_vec(),
            },
            OP_CONNECT_REQUEST => parse_connect_request(b0, b1, rest)?,
            OP_CONNECT_ACK => {
                let (&window, extra) = rest.split_first().ok_or(Error::TooShort("window"))?;
                Transport::ConnectAck {
                    your_index: b0,
                    your_id: b1,
                    my_index: b2,
                    my_id: b3,
                    window,
                    refused: flags.choke,
                    bpq_ttl: extra.first().copied(),
                }
            }
            OP_DISCONNECT_REQUEST => Transport::DisconnectRequest {
                your_index: b0,
                your_id: b1,
            },
            OP_DISCONNECT_ACK => Transport::DisconnectAck {
                your_index: b0,
                your_id: b1,
            },
            OP_INFO => {
                if rest.len() > MAX_INFO_RECEIVED {
                    return Err(Error::InfoTooLong(rest.len()));
                }
                Transport::Info {
                    your_index: b0,
                    your_id: b1,
                    tx_seq: b2,
                    rx_seq: b3,
                    flags,
                    data: rest.to_vec(),
                }
            }
            OP_INFO_ACK => Transport::InfoAck {
                your_index: b0,
                your_id: b1,
                rx_seq: b3,
                flags,
            },
            OP_RESET => Transport::Reset {
                your_index: b0,
                your_id: b1,
                peer_index: b2,
                peer_id: b3,
            },
            other => return Err(Error::UnknownOpcode(other)),
        })
    }

    /// Encoded length.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        TRANSPORT_HEADER_LEN
            + match self {
                Transport::ConnectRequest { bpq_timeout, .. } => {
                    15 + if bpq_timeout.is_some() { 2 } else { 0 }
                }
                Transport::ConnectAck { bpq_ttl, .. } => 1 + usize::from(bpq_ttl.is_some()),
                Transport::Info { data, .. } | Transport::Extension { data, .. } => data.len(),
                _ => 0,
            }
    }

    /// Appends the frame to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.reserve(self.buffer_len());
        match self {
            Transport::ConnectRequest {
                my_index,
                my_id,
                window,
                user,
                node,
                bpq_timeout,
            } => {
                out.extend_from_slice(&[*my_index, *my_id, 0, 0, OP_CONNECT_REQUEST, *window]);
                out.extend_from_slice(&user.to_shifted());
                out.extend_from_slice(&node.to_shifted());
                if let Some(t) = bpq_timeout {
                    out.extend_from_slice(&t.to_le_bytes());
                }
            }
            Transport::ConnectAck {
                your_index,
                your_id,
                my_index,
                my_id,
                window,
                refused,
                bpq_ttl,
            } => {
                let op = OP_CONNECT_ACK | if *refused { CHOKE } else { 0 };
                out.extend_from_slice(&[*your_index, *your_id, *my_index, *my_id, op, *window]);
                out.extend(bpq_ttl);
            }
            Transport::DisconnectRequest {
                your_index,
                your_id,
            } => {
                out.extend_from_slice(&[*your_index, *your_id, 0, 0, OP_DISCONNECT_REQUEST]);
            }
            Transport::DisconnectAck {
                your_index,
                your_id,
            } => {
                out.extend_from_slice(&[*your_index, *your_id, 0, 0, OP_DISCONNECT_ACK]);
            }
            Transport::Info {
                your_index,
                your_id,
                tx_seq,
                rx_seq,
                flags,
                data,
            } => {
                let op = OP_INFO | flags.to_byte();
                out.extend_from_slice(&[*your_index, *your_id, *tx_seq, *rx_seq, op]);
                out.extend_from_slice(data);
            }
            Transport::InfoAck {
                your_index,
                your_id,
                rx_seq,
                flags,
            } => {
                // Byte 2 carries nothing; zero, as NET/ROM and LinBPQ write it.
                let op = OP_INFO_ACK | flags.to_byte();
                out.extend_from_slice(&[*your_index, *your_id, 0, *rx_seq, op]);
            }
            Transport::Reset {
                your_index,
                your_id,
                peer_index,
                peer_id,
            } => {
                out.extend_from_slice(&[*your_index, *your_id, *peer_index, *peer_id, OP_RESET]);
            }
            Transport::Extension {
                family,
                proto,
                data,
            } => {
                out.extend_from_slice(&[*family, *proto, 0, 0, OP_EXTENSION]);
                out.extend_from_slice(data);
            }
        }
    }

    /// The encoded frame as a new vector.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buffer_len());
        self.emit(&mut v);
        v
    }

    /// The receiver's circuit (index, id) this frame is addressed to; `None` for a connect
    /// request (it opens one) and a protocol extension (no circuit).
    #[must_use]
    pub fn circuit(&self) -> Option<(u8, u8)> {
        match *self {
            Transport::ConnectAck {
                your_index,
                your_id,
                ..
            }
            | Transport::DisconnectRequest {
                your_index,
                your_id,
            }
            | Transport::DisconnectAck {
                your_index,
                your_id,
            }
            | Transport::Info {
                your_index,
                your_id,
                ..
            }
            | Transport::InfoAck {
                your_index,
                your_id,
                ..
            }
            | Transport::Reset {
                your_index,
                your_id,
                ..
            } => Some((your_index, your_id)),
            Transport::ConnectRequest { .. } | Transport::Extension { .. } => None,
        }
    }

    /// A short name, for logs.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Transport::ConnectRequest { .. } => "connect request",
            Transport::ConnectAck { .. } => "connect acknowledge",
            Transport::DisconnectRequest { .. } => "disconnect request",
            Transport::DisconnectAck { .. } => "disconnect acknowledge",
            Transport::Info { .. } => "information",
            Transport::InfoAck { .. } => "information acknowledge",
            Transport::Reset { .. } => "reset",
            Transport::Extension { .. } => "protocol extension",
        }
    }
}

fn parse_connect_request(my_index: u8, my_id: u8, rest: &[u8]) -> Result<Transport, Error> {
    let (&window, rest) = rest.split_first().ok_or(Error::TooShort("window"))?;
    let (user, rest) = read_call(rest, "user")?;
    let (node, rest) = read_call(rest, "originating node")?;
    // LinBPQ adds its timeout (2 bytes, low first); anything further is ignored, as JNOS does.
    let bpq_timeout = rest.first_chunk::<2>().map(|t| u16::from_le_bytes(*t));
    Ok(Transport::ConnectRequest {
        my_index,
        my_id,
        window,
        user,
        node,
        bpq_timeout,
    })
}
