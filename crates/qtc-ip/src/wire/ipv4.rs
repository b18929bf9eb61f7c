//! The IPv4 header (RFC 791): parsed with every length and the checksum checked, written with
//! the checksum computed. Options are carried as they are; only fragmentation looks into them
//! (which ones each fragment repeats).

use std::net::Ipv4Addr;

use crate::Error;

/// A header without options.
pub const MIN_HEADER_LEN: usize = 20;
/// The most a datagram can be (its total length is 16 bits).
pub const MAX_DATAGRAM: usize = 65535;

/// ICMP's protocol number.
pub const PROTO_ICMP: u8 = 1;
/// TCP's.
pub const PROTO_TCP: u8 = 6;
/// UDP's.
pub const PROTO_UDP: u8 = 17;

/// The flag bits of the fragment field.
const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const OFFSET_MASK: u16 = 0x1fff;

/// An IPv4 header, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Its length in bytes, options included (20 to 60).
    pub header_len: usize,
    /// Type of service (JNOS maps its low-delay and reliability bits to UI and I frames).
    pub tos: u8,
    /// The datagram's length, header included.
    pub total_len: usize,
    /// Identification (shared by a datagram's fragments).
    pub id: u16,
    /// Don't fragment.
    pub dont_fragment: bool,
    /// More fragments follow.
    pub more_fragments: bool,
    /// Where this fragment's data sits in the datagram, in bytes (a multiple of 8).
    pub frag_offset: usize,
    /// Time to live.
    pub ttl: u8,
    /// The protocol of the payload.
    pub protocol: u8,
    /// Source.
    pub src: Ipv4Addr,
    /// Destination.
    pub dst: Ipv4Addr,
}

impl Header {
    /// Parses and checks the header at the front of `datagram`; returns it and the datagram
    /// cut to its total length (a link may pad).
    ///
    /// Never panics; every malformation is an [`Error`].
    pub fn parse(datagram: &[u8]) -> Result<(Header, &[u8]), Error> {
        if datagram.len() < MIN_HEADER_LEN {
            return Err(Error::TooShort("IPv4 header"));
        }
        let b = datagram;
        let version = b[0] >> 4;
        if version != 4 {
            return Err(Error::Version(version));
        }
        let header_len = usize::from(b[0] & 0x0f) * 4;
        if header_len < MIN_HEADER_LEN {
            return Err(Error::HeaderLength(header_len));
        }
        if header_len > b.len() {
            return Err(Error::TooShort("IPv4 options"));
        }
        let total_len = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if total_len < header_len || total_len > b.len() {
            return Err(Error::TotalLength {
                total: total_len,
                received: b.len(),
            });
        }
        if checksum(&b[..header_len]) != 0 {
            return Err(Error::Checksum);
        }
        let frag = u16::from_be_bytes([b[6], b[7]]);
        let h = Header {
            header_len,
            tos: b[1],
            total_len,
            id: u16::from_be_bytes([b[4], b[5]]),
            dont_fragment: frag & FLAG_DF != 0,
            more_fragments: frag & FLAG_MF != 0,
            frag_offset: usize::from(frag & OFFSET_MASK) * 8,
            ttl: b[8],
            protocol: b[9],
            src: Ipv4Addr::new(b[12], b[13], b[14], b[15]),
            dst: Ipv4Addr::new(b[16], b[17], b[18], b[19]),
        };
        if h.frag_offset + h.payload_len() > MAX_DATAGRAM {
            return Err(Error::FragmentPastEnd);
        }
        Ok((h, &datagram[..total_len]))
    }

    /// The bytes after the header.
    #[must_use]
    pub fn payload_len(&self) -> usize {
        self.total_len - self.header_len
    }

    /// Whether this is a piece of a larger datagram.
    #[must_use]
    pub fn is_fragment(&self) -> bool {
        self.more_fragments || self.frag_offset > 0
    }

    /// Appends a 20-byte header (no options; `header_len` is taken as 20) with its checksum.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let frag = fragment_field(self.dont_fragment, self.more_fragments, self.frag_offset);
        out.push(0x45);
        out.push(self.tos);
        out.extend_from_slice(&(self.total_len as u16).to_be_bytes());
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&frag.to_be_bytes());
        out.push(self.ttl);
        out.push(self.protocol);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.src.octets());
        out.extend_from_slice(&self.dst.octets());
        let sum = checksum(&out[start..]);
        out[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
    }
}

/// The 16-bit flags-and-offset field.
fn fragment_field(df: bool, mf: bool, offset: usize) -> u16 {
    let mut v = ((offset / 8) as u16) & OFFSET_MASK;
    if df {
        v |= FLAG_DF;
    }
    if mf {
        v |= FLAG_MF;
    }
    v
}

/// The Internet checksum (RFC 1071): the one's complement of the one's complement sum of the
/// 16-bit words. Over a header that carries its checksum it is 0.
#[must_use]
pub fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Rewrites a checked header (`datagram[..header_len]`) in place: time to live, total length
/// and fragment field, then its checksum. `datagram` must hold at least `header_len` bytes.
pub(crate) fn rewrite(datagram: &mut [u8], h: &Header) {
    let Some(head) = datagram.get_mut(..h.header_len) else {
        return;
    };
    head[2..4].copy_from_slice(&(h.total_len as u16).to_be_bytes());
    let frag = fragment_field(h.dont_fragment, h.more_fragments, h.frag_offset);
    head[6..8].copy_from_slice(&frag.to_be_bytes());
    head[8] = h.ttl;
    head[10..12].copy_from_slice(&[0, 0]);
    let sum = checksum(head);
    head[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// The options a fragment after the first repeats (RFC 791: those with the copy bit), padded
/// to a whole number of words. `options` is the header past its first 20 bytes.
pub(crate) fn copied_options(options: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = options;
    while let Some(&kind) = rest.first() {
        let len = match kind {
            0 => break,
            1 => 1,
            _ => match rest.get(1) {
                Some(&l) if l >= 2 && usize::from(l) <= rest.len() => usize::from(l),
                _ => break,
            },
        };
        if kind & 0x80 != 0 {
            out.extend_from_slice(&rest[..len]);
        }
        rest = &rest[len..];
    }
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}
