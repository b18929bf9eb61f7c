//! Fragmentation (RFC 791 3.2, RFC 815's limits): a datagram bigger than the next link's MTU is
//! cut into fragments that each fit, unless it says "don't fragment". The router never
//! reassembles: fragments travel to their end host (the host's kernel behind the TUN device,
//! or a station on the air), which puts them together within its own limits.

use crate::wire::ipv4::{copied_options, rewrite, Header, MIN_HEADER_LEN};
use crate::Error;

/// IPv4's smallest MTU (RFC 791): a 60-byte header and 8 bytes of data.
pub const MIN_MTU: usize = 68;

/// Cuts `datagram` (checked, header `h`) into fragments of at most `mtu` bytes; the datagram
/// itself when it fits. A fragment may be cut again: offsets add up.
pub fn fragment(h: &Header, datagram: &[u8], mtu: usize) -> Result<Vec<Vec<u8>>, Error> {
    if datagram.len() <= mtu {
        return Ok(vec![datagram.to_vec()]);
    }
    if mtu < MIN_MTU {
        return Err(Error::MtuTooSmall(mtu));
    }
    if h.dont_fragment {
        return Err(Error::DontFragment {
            len: datagram.len(),
            mtu,
        });
    }
    let head = &datagram[..h.header_len];
    let data = &datagram[h.header_len..];
    let later_head = {
        let mut v = head[..MIN_HEADER_LEN].to_vec();
        v.extend(copied_options(&head[MIN_HEADER_LEN..]));
        v[0] = 0x40 | (v.len() / 4) as u8;
        v
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let this_head = if at == 0 { head } else { &later_head[..] };
        // Every fragment but the last carries a multiple of 8 bytes.
        let room = (mtu - this_head.len()) / 8 * 8;
        let n = room.min(data.len() - at);
        let last = at + n == data.len();
        let mut f = Vec::with_capacity(this_head.len() + n);
        f.extend_from_slice(this_head);
        f.extend_from_slice(&data[at..at + n]);
        let fh = Header {
            header_len: this_head.len(),
            total_len: f.len(),
            more_fragments: !last || h.more_fragments,
            frag_offset: h.frag_offset + at,
            ..*h
        };
        rewrite(&mut f, &fh);
        out.push(f);
        at += n;
    }
    Ok(out)
}
