//! KISS framing for qtc: the byte protocol between a host and a TNC.
//!
//! A KISS frame on the wire is `FEND, type byte, payload..., FEND`, with every byte after the
//! opening FEND (the type byte included) escaped: `C0` becomes `DB DC` and `DB` becomes `DB DD`.
//! The type byte holds the TNC port in its high nibble and a [`Command`] in its low nibble; the
//! whole byte `FF` is [`Command::Return`]. A data frame carries a raw AX.25 frame **without FCS**.
//!
//! This crate is a sans-IO codec: it never reads or writes a device. It has two halves:
//!
//! - [`Decoder`]: incremental. Feed it whatever bytes arrived, in chunks of any size, with
//!   [`Decoder::decode`]; it calls back once per complete [`Frame`]. Bytes before the first FEND
//!   are skipped, `FEND FEND` makes no frame, data frames with no payload are dropped, a byte after
//!   FESC other than TFEND/TFESC is dropped (the frame keeps building, as the KISS paper says), and
//!   a frame longer than [`MAX_KISS_FRAME`] is thrown away whole; the decoder resynchronises at the
//!   next FEND. Every drop is counted in [`Stats`].
//! - [`encode`]: writes one escaped frame, FEND before and after, into a caller-owned `Vec<u8>`.
//!
//! # Driving the decoder
//!
//! ```
//! use qtc_kiss::{encode, Command, Decoder};
//!
//! let mut wire = Vec::new();
//! encode(0, Command::Data, &[0xC0, 0x01, 0xDB], &mut wire).unwrap();
//!
//! let mut decoder = Decoder::new();
//! let mut frames = Vec::new();
//! // Chunk boundaries do not matter: split anywhere.
//! let (a, b) = wire.split_at(3);
//! decoder.decode(a, &mut |f| frames.push(f));
//! decoder.decode(b, &mut |f| frames.push(f));
//! assert_eq!(frames.len(), 1);
//! assert_eq!(frames[0].payload, [0xC0, 0x01, 0xDB]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decoder;
mod encoder;

pub use decoder::{Decoder, Stats};
pub use encoder::{encode, encoded_len};

/// Frame delimiter.
pub const FEND: u8 = 0xC0;
/// Escape byte.
pub const FESC: u8 = 0xDB;
/// After [`FESC`], stands for a data byte [`FEND`].
pub const TFEND: u8 = 0xDC;
/// After [`FESC`], stands for a data byte [`FESC`].
pub const TFESC: u8 = 0xDD;

/// Largest payload (after the type byte, unescaped) the decoder accepts and the encoder writes.
///
/// This is Direwolf's largest AX.25 frame: 10 addresses of 7 bytes, 2 control bytes, 3 more
/// header bytes and a 2048-byte information field. Direwolf's own buffer (2048 escaped bytes)
/// is smaller, so anything that fits there fits here.
pub const MAX_KISS_FRAME: usize = 10 * 7 + 2 + 3 + 2048;

/// Highest TNC port number (the type byte's high nibble).
pub const MAX_PORT: u8 = 15;

/// Errors from the encoder. The decoder never fails: it counts what it drops in [`Stats`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The port does not fit in the type byte's high nibble.
    #[error("KISS port {0} out of range (0..=15)")]
    InvalidPort(u8),
    /// [`Command::Other`] holds a value that is not a free low-nibble command code.
    #[error("KISS command code {0:#x} is not encodable as Command::Other")]
    InvalidCommand(u8),
    /// The payload is longer than [`MAX_KISS_FRAME`].
    #[error("KISS payload of {len} bytes exceeds MAX_KISS_FRAME")]
    FrameTooLarge {
        /// Length of the rejected payload.
        len: usize,
    },
}

/// The command in the low nibble of the type byte (KISS paper, section "commands").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Command {
    /// `x0`: the payload is a raw AX.25 frame without FCS.
    Data,
    /// `x1`: transmitter keyup delay, 1 byte in 10 ms units.
    TxDelay,
    /// `x2`: persistence, 1 byte, P = p×256 − 1.
    Persistence,
    /// `x3`: slot interval, 1 byte in 10 ms units.
    SlotTime,
    /// `x4`: transmit tail, 1 byte in 10 ms units (obsolete in the paper; Direwolf honours it).
    TxTail,
    /// `x5`: 0 = half duplex, anything else = full duplex.
    FullDuplex,
    /// `x6`: TNC-specific (Direwolf: ASCII `CMD:param`).
    SetHardware,
    /// The whole type byte is `FF`: leave KISS mode.
    Return,
    /// Any other low nibble (7..=15), for example the ACKMODE `xC` data frame or the `xE` poll.
    /// The value is the nibble.
    Other(u8),
}

impl Command {
    /// Low-nibble code of this command (`0x0F` for [`Command::Return`]).
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Command::Data => 0,
            Command::TxDelay => 1,
            Command::Persistence => 2,
            Command::SlotTime => 3,
            Command::TxTail => 4,
            Command::FullDuplex => 5,
            Command::SetHardware => 6,
            Command::Return => 0x0F,
            Command::Other(n) => n,
        }
    }

    /// Split a type byte into `(port, command)`. `FF` is `(15, Return)`.
    #[must_use]
    pub fn from_type_byte(b: u8) -> (u8, Command) {
        if b == 0xFF {
            return (MAX_PORT, Command::Return);
        }
        let cmd = match b & 0x0F {
            0 => Command::Data,
            1 => Command::TxDelay,
            2 => Command::Persistence,
            3 => Command::SlotTime,
            4 => Command::TxTail,
            5 => Command::FullDuplex,
            6 => Command::SetHardware,
            n => Command::Other(n),
        };
        (b >> 4, cmd)
    }

    /// Build the type byte for `port`. [`Command::Return`] is always `FF`, whatever the port.
    pub fn type_byte(self, port: u8) -> Result<u8, Error> {
        if port > MAX_PORT {
            return Err(Error::InvalidPort(port));
        }
        match self {
            Command::Return => Ok(0xFF),
            Command::Other(n) if !(7..=15).contains(&n) || (n == 15 && port == MAX_PORT) => {
                Err(Error::InvalidCommand(n))
            }
            c => Ok((port << 4) | c.code()),
        }
    }
}

/// One decoded KISS frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// TNC port, 0..=15 (15 for [`Command::Return`]).
    pub port: u8,
    /// What the frame is.
    pub command: Command,
    /// Unescaped bytes after the type byte (for [`Command::Data`]: an AX.25 frame, no FCS).
    pub payload: Vec<u8>,
}

impl Frame {
    /// Append this frame, escaped and delimited, to `out`. Same as [`encode`].
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        encode(self.port, self.command, &self.payload, out)
    }
}

#[cfg(test)]
mod tests;
