//! The AX.25 address field (spec §2.2): callsigns ([`Callsign`], qtc-callsign's), C/H and
//! extension bits, the digipeater path.

use core::fmt;

use qtc_callsign::{Callsign, SHIFTED_LEN};

use crate::Error;

/// Most digipeaters an address field may hold (AX.25 2.0; 2.2 cut it to 2, but 8 are accepted).
pub const MAX_DIGIPEATERS: usize = 8;
/// Bytes in one encoded address: a callsign's shifted form.
pub const ADDRESS_LEN: usize = SHIFTED_LEN;
/// Longest address field: destination, source and [`MAX_DIGIPEATERS`] digipeaters.
pub const MAX_ADDRESS_FIELD: usize = ADDRESS_LEN * (2 + MAX_DIGIPEATERS);

/// SSID byte bits the address field adds to a callsign's shifted form (spec §2.2).
const C_OR_H: u8 = 0x80;
const EXTENSION: u8 = 0x01;

/// Placeholder used only to fill unused [`Path`] slots; never observable.
const FILLER: Callsign = match Callsign::new("QTC", 0) {
    Ok(call) => call,
    Err(_) => panic!("QTC is a callsign"),
};

/// Decode one 7-byte address. Returns the callsign and the raw SSID byte (flag bits).
fn decode(bytes: &[u8; ADDRESS_LEN]) -> Result<(Callsign, u8), Error> {
    Ok((Callsign::from_shifted(bytes)?, bytes[ADDRESS_LEN - 1]))
}

/// Encode as 7 bytes with the C/H bit and extension bit given; reserved bits written as 11.
fn encode(call: &Callsign, c_or_h: bool, last: bool) -> [u8; ADDRESS_LEN] {
    let mut out = call.to_shifted();
    out[ADDRESS_LEN - 1] |= if c_or_h { C_OR_H } else { 0 } | if last { EXTENSION } else { 0 };
    out
}

/// One digipeater in the path, with its "has been repeated" (H) bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digipeater {
    /// The digipeater's callsign.
    pub call: Callsign,
    /// The H bit: this digipeater has already repeated the frame.
    pub repeated: bool,
}

impl Digipeater {
    /// A digipeater that has not repeated the frame yet.
    #[must_use]
    pub fn new(call: Callsign) -> Self {
        Digipeater {
            call,
            repeated: false,
        }
    }
}

/// A digipeater path of at most [`MAX_DIGIPEATERS`] hops, stored inline (no allocation).
#[derive(Clone, Copy)]
pub struct Path {
    len: u8,
    hops: [Digipeater; MAX_DIGIPEATERS],
}

impl Path {
    /// The empty path (direct).
    #[must_use]
    pub const fn new() -> Self {
        Path {
            len: 0,
            hops: [Digipeater {
                call: FILLER,
                repeated: false,
            }; MAX_DIGIPEATERS],
        }
    }

    /// Append a hop.
    pub fn push(&mut self, hop: Digipeater) -> Result<(), Error> {
        let slot = self
            .hops
            .get_mut(self.len as usize)
            .ok_or(Error::TooManyDigipeaters)?;
        *slot = hop;
        self.len += 1;
        Ok(())
    }

    /// A path from callsigns, all with H = 0.
    pub fn from_calls(calls: &[Callsign]) -> Result<Self, Error> {
        let mut p = Path::new();
        for &c in calls {
            p.push(Digipeater::new(c))?;
        }
        Ok(p)
    }

    /// The hops in order.
    #[must_use]
    pub fn as_slice(&self) -> &[Digipeater] {
        &self.hops[..self.len as usize]
    }

    /// The hops, mutable (to set H bits).
    pub fn as_mut_slice(&mut self) -> &mut [Digipeater] {
        &mut self.hops[..self.len as usize]
    }

    /// Number of hops.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether the path is direct.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether every hop has repeated the frame (true for the empty path): only then has the
    /// frame reached its destination.
    #[must_use]
    pub fn all_repeated(&self) -> bool {
        self.as_slice().iter().all(|d| d.repeated)
    }

    /// The path for a reply: hops in reverse order, all H bits cleared (spec §2.2).
    #[must_use]
    pub fn reversed(&self) -> Path {
        let mut p = Path::new();
        for d in self.as_slice().iter().rev() {
            // Cannot overflow: same length as self.
            let _ = p.push(Digipeater::new(d.call));
        }
        p
    }
}

impl Default for Path {
    fn default() -> Self {
        Path::new()
    }
}

impl PartialEq for Path {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Path {}

impl fmt::Debug for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// What the two C bits say (spec §2.2, AX.25 2.x figure 6.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandResponse {
    /// Destination C = 1, source C = 0.
    Command,
    /// Destination C = 0, source C = 1.
    Response,
    /// Both bits equal: a "previous version" (v1) frame. The value is the bits' value.
    Legacy(bool),
}

impl CommandResponse {
    fn from_bits(dest_c: bool, src_c: bool) -> Self {
        match (dest_c, src_c) {
            (true, false) => CommandResponse::Command,
            (false, true) => CommandResponse::Response,
            (b, _) => CommandResponse::Legacy(b),
        }
    }

    fn bits(self) -> (bool, bool) {
        match self {
            CommandResponse::Command => (true, false),
            CommandResponse::Response => (false, true),
            CommandResponse::Legacy(b) => (b, b),
        }
    }
}

/// The address field: destination, source, digipeater path and the command/response bits.
///
/// The reserved bits of every SSID byte are written as 11 and ignored on receive, as Direwolf
/// does (Linux's 01-for-modulo-128 hint is therefore not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    /// Destination.
    pub dest: Callsign,
    /// Source.
    pub src: Callsign,
    /// Digipeaters, first hop first.
    pub path: Path,
    /// Command/response bits.
    pub cr: CommandResponse,
}

impl Address {
    /// A direct (no digipeaters) address.
    #[must_use]
    pub fn new(dest: Callsign, src: Callsign, cr: CommandResponse) -> Self {
        Address {
            dest,
            src,
            path: Path::new(),
            cr,
        }
    }

    /// Parse the address field at the start of `bytes`. Returns the address and its length.
    ///
    /// The field ends at the first SSID byte with the extension bit set; it must hold 2 to 10
    /// addresses (spec §2.2).
    pub fn parse(bytes: &[u8]) -> Result<(Address, usize), Error> {
        let mut chunks = bytes.chunks_exact(ADDRESS_LEN);
        let next = |chunks: &mut core::slice::ChunksExact<'_, u8>| -> Result<_, Error> {
            let chunk = chunks.next().ok_or(Error::AddressTooShort)?;
            let arr: &[u8; ADDRESS_LEN] = chunk.try_into().map_err(|_| Error::AddressTooShort)?;
            decode(arr)
        };
        let (dest, dflags) = next(&mut chunks)?;
        if dflags & EXTENSION != 0 {
            return Err(Error::AddressTooShort);
        }
        let (src, sflags) = next(&mut chunks)?;
        let mut path = Path::new();
        let mut last = sflags & EXTENSION != 0;
        while !last {
            if path.len() == MAX_DIGIPEATERS {
                return Err(Error::TooManyDigipeaters);
            }
            let (call, flags) = next(&mut chunks)?;
            path.push(Digipeater {
                call,
                repeated: flags & C_OR_H != 0,
            })?;
            last = flags & EXTENSION != 0;
        }
        let addr = Address {
            dest,
            src,
            path,
            cr: CommandResponse::from_bits(dflags & C_OR_H != 0, sflags & C_OR_H != 0),
        };
        Ok((addr, addr.buffer_len()))
    }

    /// Encoded length: 7 bytes per address.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        ADDRESS_LEN * (2 + self.path.len())
    }

    /// Append the encoded field to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let (dc, sc) = self.cr.bits();
        let hops = self.path.as_slice();
        out.extend_from_slice(&encode(&self.dest, dc, false));
        out.extend_from_slice(&encode(&self.src, sc, hops.is_empty()));
        for (i, d) in hops.iter().enumerate() {
            out.extend_from_slice(&encode(&d.call, d.repeated, i + 1 == hops.len()));
        }
    }

    /// The address for a reply to a frame with this address: source and destination swapped,
    /// path reversed with H bits cleared, and the given command/response bits.
    #[must_use]
    pub fn reply(&self, cr: CommandResponse) -> Address {
        Address {
            dest: self.src,
            src: self.dest,
            path: self.path.reversed(),
            cr,
        }
    }
}
