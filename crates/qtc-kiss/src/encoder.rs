//! KISS encoder: one frame into a caller-owned buffer.

use crate::{Command, Error, FEND, FESC, MAX_KISS_FRAME, TFEND, TFESC};

/// Append one KISS frame to `out`: `FEND, type byte, payload, FEND`, escaped.
///
/// A FEND goes both before and after the frame (KISS paper), so a receiver that lost sync
/// recovers at our first byte. On error nothing is written.
pub fn encode(port: u8, command: Command, payload: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let type_byte = command.type_byte(port)?;
    if payload.len() > MAX_KISS_FRAME {
        return Err(Error::FrameTooLarge { len: payload.len() });
    }
    out.reserve(encoded_len(type_byte, payload));
    out.push(FEND);
    push_escaped(type_byte, out);
    for &b in payload {
        push_escaped(b, out);
    }
    out.push(FEND);
    Ok(())
}

/// Exact number of bytes [`encode`] writes for this type byte and payload.
#[must_use]
pub fn encoded_len(type_byte: u8, payload: &[u8]) -> usize {
    let escaped = |b: &u8| if matches!(*b, FEND | FESC) { 2 } else { 1 };
    2 + escaped(&type_byte) + payload.iter().map(escaped).sum::<usize>()
}

fn push_escaped(b: u8, out: &mut Vec<u8>) {
    match b {
        FEND => out.extend_from_slice(&[FESC, TFEND]),
        FESC => out.extend_from_slice(&[FESC, TFESC]),
        b => out.push(b),
    }
}
