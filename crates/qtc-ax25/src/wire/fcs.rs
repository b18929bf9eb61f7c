//! The frame check sequence: CRC-16/X.25 (spec §2.5), used over the air and in AXIP/AXUDP.
//!
//! KISS frames carry no FCS: the TNC adds and strips it.

use crate::Error;

/// What a CRC run (without the final XOR) over frame + FCS leaves when the FCS is right.
pub const FCS_RESIDUE: u16 = 0xF0B8;

const fn make_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u16;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x8408
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
}

static TABLE: [u16; 256] = make_table();

fn run(mut crc: u16, data: &[u8]) -> u16 {
    for &b in data {
        crc = (crc >> 8) ^ TABLE[usize::from((crc ^ u16::from(b)) & 0xFF)];
    }
    crc
}

/// The FCS of `data`: reflected poly 0x8408, init FFFF, final XOR FFFF. `"123456789"` gives
/// `0x906E`. It goes on the wire low byte first.
#[must_use]
pub fn fcs(data: &[u8]) -> u16 {
    !run(0xFFFF, data)
}

/// Append the FCS of all of `frame` to it, low byte first (the AXUDP/AXIP payload form).
pub fn append_fcs(frame: &mut Vec<u8>) {
    let f = fcs(frame);
    frame.extend_from_slice(&f.to_le_bytes());
}

/// Check the trailing FCS of `data` and return the frame without it.
pub fn check_fcs(data: &[u8]) -> Result<&[u8], Error> {
    if data.len() < 2 {
        return Err(Error::MissingFcs);
    }
    if run(0xFFFF, data) == FCS_RESIDUE {
        Ok(&data[..data.len() - 2])
    } else {
        Err(Error::BadFcs)
    }
}
