//! The ICMP messages the router sends about datagrams it cannot pass on (RFC 792, RFC 1191):
//! destination unreachable (no route, no answer to ARP, too big with "don't fragment") and
//! time exceeded. Each quotes the datagram's header and its first 8 bytes of data.

use std::net::Ipv4Addr;

use super::ipv4::{checksum, Header, PROTO_ICMP};

/// Destination unreachable.
pub const TYPE_UNREACHABLE: u8 = 3;
/// Time exceeded.
pub const TYPE_TIME_EXCEEDED: u8 = 11;
/// Echo request.
pub const TYPE_ECHO_REQUEST: u8 = 8;
/// Echo reply.
pub const TYPE_ECHO_REPLY: u8 = 0;

/// The data of the original datagram an error quotes beyond its header (RFC 792).
const QUOTED_DATA: usize = 8;

/// Why a datagram went no further.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// No route to its network (code 0).
    NetUnreachable,
    /// Its host did not answer ARP (code 1).
    HostUnreachable,
    /// Too big for the next link and "don't fragment" is set (code 4, with the link's MTU).
    NeedsFragmenting {
        /// The next link's MTU.
        mtu: u16,
    },
    /// Its time to live ran out here (type 11, code 0).
    TtlExceeded,
}

impl Problem {
    fn type_code(self) -> (u8, u8) {
        match self {
            Problem::NetUnreachable => (TYPE_UNREACHABLE, 0),
            Problem::HostUnreachable => (TYPE_UNREACHABLE, 1),
            Problem::NeedsFragmenting { .. } => (TYPE_UNREACHABLE, 4),
            Problem::TtlExceeded => (TYPE_TIME_EXCEEDED, 0),
        }
    }
}

/// Whether an error may be sent about this datagram (RFC 1122 3.2.2): never about an ICMP
/// error, a fragment other than the first, a broadcast or multicast, or an unspecified source.
#[must_use]
pub fn may_answer(h: &Header, datagram: &[u8], subnet_broadcast: Ipv4Addr) -> bool {
    if h.frag_offset > 0
        || h.src.is_unspecified()
        || h.src.is_broadcast()
        || h.src.is_multicast()
        || h.dst.is_broadcast()
        || h.dst.is_multicast()
        || h.dst == subnet_broadcast
    {
        return false;
    }
    if h.protocol == PROTO_ICMP {
        let kind = datagram.get(h.header_len).copied().unwrap_or(0xff);
        return matches!(kind, TYPE_ECHO_REQUEST | TYPE_ECHO_REPLY);
    }
    true
}

/// The ICMP error datagram from `from` to the original's source about `original` (its header
/// `h`), with time to live `ttl` and identification `id`.
#[must_use]
pub fn error(
    from: Ipv4Addr,
    h: &Header,
    original: &[u8],
    problem: Problem,
    ttl: u8,
    id: u16,
) -> Vec<u8> {
    let quoted = &original[..original.len().min(h.header_len + QUOTED_DATA)];
    let (kind, code) = problem.type_code();
    let mut icmp = vec![kind, code, 0, 0, 0, 0, 0, 0];
    if let Problem::NeedsFragmenting { mtu } = problem {
        icmp[6..8].copy_from_slice(&mtu.to_be_bytes());
    }
    icmp.extend_from_slice(quoted);
    let sum = checksum(&icmp);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    let header = Header {
        header_len: 20,
        tos: 0,
        total_len: 20 + icmp.len(),
        id,
        dont_fragment: false,
        more_fragments: false,
        frag_offset: 0,
        ttl,
        protocol: PROTO_ICMP,
        src: from,
        dst: h.src,
    };
    let mut out = Vec::with_capacity(header.total_len);
    header.emit(&mut out);
    out.extend_from_slice(&icmp);
    out
}
