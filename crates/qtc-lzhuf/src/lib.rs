//! LZHUF, the compression of FBB compressed forwarding (B0, B1) and Winlink B2F (B2).
//!
//! Pure functions over byte slices: no I/O, no state between calls. [`compress`] and
//! [`compress_with_crc`] parse the input exactly as LinFBB 7.0.12's encoder and Winlink's
//! (wl2k-go) do (the same literals and match lengths, so the same adaptive Huffman codes) and
//! code each match at the nearest position with that length, where theirs sometimes takes a
//! farther one: the output is never longer than theirs (on text, about 1.7 % shorter), and
//! every LZHUF decoder reads it. The decoder reads theirs byte for byte.
//!
//! # Container
//! ```text
//! B1 / B2 payload:  crc16 (u16 LE) | length (u32 LE) | LZHUF bit stream
//! B0 payload:                        length (u32 LE) | LZHUF bit stream
//! ```
//! - `crc16` is CRC-16/XMODEM ([`crc16_xmodem`]) over every byte after it: length and stream.
//! - `length` is the uncompressed size. The decoder stops there (the stream's last match may
//!   reach past it; the extra bytes are dropped) and ignores any bytes after the stream's end.
//! - A zero `length` decodes to an empty message. FBB's encoder still writes one dummy symbol
//!   for empty input (`00 00 00 00 c6 00`), Winlink writes just the header; both are accepted.
//!   (FBB's own decoder refuses a zero length with "File empty"; we are lenient on input and
//!   FBB-identical on output.)
//!
//! # The stream
//! The 1989 Yoshizaki/Okumura LZHUF with FBB's parameters:
//! - LZSS over a ring buffer of [`N`] = 2048 bytes, initially spaces, with the coder starting at
//!   `N - F`; look-ahead [`F`] = 60; matches shorter than [`THRESHOLD`] + 1 = 3 are sent as
//!   literals. The original finds matches with a binary search tree, longest first, nearest
//!   of those on the search path; ours with hash chains, longest first, nearest of all.
//! - Literals (0..=255) and match lengths (3..=60 as symbols 256..=313) share one adaptive
//!   Huffman code (FGK-style, sibling property), rebuilt with halved counts whenever the total
//!   count reaches 0x8000.
//! - A match's distance minus one (11 bits) follows its length symbol: the upper 5 bits through
//!   the fixed prefix code of the original's 6-bit table (3 to 8 bits), the lower 6 bits raw.
//! - Bits are packed MSB first; the last byte is padded with zero bits.
//!
//! # FBB text mode
//! For a BBS message FBB compresses not the stored text but [`fbb_text`] of it: every CR
//! dropped, every LF turned into CR LF. Winlink B2F messages are compressed as they are.
//!
//! # Untrusted input
//! [`decompress`] and [`decompress_with_crc`] never panic. They check the CRC (B1/B2), then the
//! declared length against [`Limits::max_output`] ([`Error::TooLarge`]) and against
//! [`MAX_RATIO`] times the payload size ([`Error::Bomb`]) *before* allocating; the output buffer
//! is the declared length plus 76 bytes of slack, and the work is bounded by the declared length
//! (every symbol yields at least one byte). A stream that ends before the declared length is
//! reached is [`Error::Truncated`]: unlike the original C code, missing bits are not read as
//! zeros. Matches that no encoder can produce (beyond the 2048-byte window, or into the ring
//! buffer's never-written area) are [`Error::Corrupt`]; a B0 payload has no CRC, so this and
//! `Truncated` are its only protection.
//!
//! # Interoperability notes
//! - Huffman codes longer than 16 bits need Fibonacci-like symbol counts and do not occur in
//!   real traffic; the C encoders keep codes in 16 bits and would emit a broken stream there.
//!   Ours codes them correctly (and every decoder, FBB's included, reads codes bit by bit).
//! - The tree rebuild at total count 0x8000 shifts whole table entries, as the 16-bit original
//!   and the JNOS-derived C code do. No golden vector is long enough to reach a rebuild (the
//!   longest, 31 007 symbols, stops at a count of 31 321), so that step is checked only against
//!   this crate's independent reference model (`tests/reference`).
//! - Performance: the encoder searches only where a symbol starts (the original inserts every
//!   position into its tree, searching as it goes), walking hash chains on the first 3 bytes
//!   nearest first and comparing 8 bytes at a time; the decoder descends the adaptive Huffman
//!   tree two bits per lookup and folds the model update into the descent. See
//!   `benches/lzhuf.rs`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod crc;
mod decode;
mod encode;
mod huff;

pub use crc::crc16_xmodem;

/// Size of the ring buffer (the LZSS window) in FBB's variant.
pub const N: usize = 2048;
/// Longest match (the look-ahead size).
pub const F: usize = 60;
/// Matches of this length or shorter are coded as literals.
pub const THRESHOLD: usize = 2;

/// Default cap on the declared uncompressed length: 16 MiB.
pub const DEFAULT_MAX_OUTPUT: usize = 16 << 20;

/// Decompression-bomb guard, as in FBB: a declared length more than this many times the
/// payload size is refused ([`Error::Bomb`]). LZHUF cannot legitimately expand more than about
/// 50 times (a 60-byte match costs at least 10 bits).
pub const MAX_RATIO: usize = 100;

/// Length of the `u32` length header.
const LEN_HEADER: usize = 4;
/// Length of the CRC header of B1/B2 payloads.
const CRC_HEADER: usize = 2;

/// Limits applied to untrusted compressed payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Refuse payloads declaring more than this many uncompressed bytes ([`Error::TooLarge`]).
    pub max_output: usize,
}

impl Limits {
    /// Limits with the given output cap.
    #[must_use]
    pub const fn new(max_output: usize) -> Self {
        Limits { max_output }
    }
}

impl Default for Limits {
    /// [`DEFAULT_MAX_OUTPUT`].
    fn default() -> Self {
        Limits::new(DEFAULT_MAX_OUTPUT)
    }
}

/// Why a payload could not be decompressed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The payload is shorter than its header, or the stream ends before the declared length.
    #[error("compressed payload is truncated")]
    Truncated,
    /// The CRC in the first two bytes does not match the rest of the payload.
    #[error("CRC mismatch: payload says {expected:#06x}, contents give {actual:#06x}")]
    BadCrc {
        /// CRC carried by the payload.
        expected: u16,
        /// CRC computed over the payload.
        actual: u16,
    },
    /// The declared uncompressed length exceeds [`Limits::max_output`].
    #[error("declared length {declared} exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Length from the header.
        declared: u32,
        /// The limit in force.
        limit: usize,
    },
    /// The declared length is more than [`MAX_RATIO`] times the payload size.
    #[error("declared length {declared} is implausible for {compressed} compressed bytes")]
    Bomb {
        /// Length from the header.
        declared: u32,
        /// Size of the payload as given.
        compressed: usize,
    },
    /// The stream decodes to something no encoder produces.
    #[error("corrupt LZHUF stream: {0}")]
    Corrupt(&'static str),
}

/// Compress `data` into the B0 form: `u32 LE length | stream`.
///
/// # Panics
/// If `data` is 4 GiB or longer (the length header is 32 bits).
#[must_use]
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(LEN_HEADER + data.len() / 2 + 16);
    out.extend_from_slice(&length_header(data));
    encode::encode_stream(data, out)
}

/// Compress `data` into the B1/B2 form: `CRC16 LE | u32 LE length | stream`, the CRC being
/// CRC-16/XMODEM over everything after it.
///
/// # Panics
/// If `data` is 4 GiB or longer (the length header is 32 bits).
#[must_use]
pub fn compress_with_crc(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CRC_HEADER + LEN_HEADER + data.len() / 2 + 16);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&length_header(data));
    let mut out = encode::encode_stream(data, out);
    let crc = crc16_xmodem(&out[CRC_HEADER..]);
    out[..CRC_HEADER].copy_from_slice(&crc.to_le_bytes());
    out
}

fn length_header(data: &[u8]) -> [u8; 4] {
    let len = u32::try_from(data.len()).expect("LZHUF input must be shorter than 4 GiB");
    len.to_le_bytes()
}

/// Decompress a B0 payload (`u32 LE length | stream`).
///
/// The declared length is checked against `limits` and [`MAX_RATIO`] (relative to
/// `payload.len()`) before anything is allocated. A zero length gives an empty vector.
pub fn decompress(payload: &[u8], limits: &Limits) -> Result<Vec<u8>, Error> {
    decompress_inner(payload, payload.len(), limits)
}

/// Decompress a B1/B2 payload (`CRC16 LE | u32 LE length | stream`), checking the CRC first.
///
/// The bomb ratio is taken against the whole payload, CRC included.
pub fn decompress_with_crc(payload: &[u8], limits: &Limits) -> Result<Vec<u8>, Error> {
    let Some((crc, rest)) = payload.split_first_chunk::<CRC_HEADER>() else {
        return Err(Error::Truncated);
    };
    if rest.len() < LEN_HEADER {
        return Err(Error::Truncated);
    }
    let expected = u16::from_le_bytes(*crc);
    let actual = crc16_xmodem(rest);
    if expected != actual {
        return Err(Error::BadCrc { expected, actual });
    }
    decompress_inner(rest, payload.len(), limits)
}

fn decompress_inner(body: &[u8], compressed: usize, limits: &Limits) -> Result<Vec<u8>, Error> {
    let Some((len, stream)) = body.split_first_chunk::<LEN_HEADER>() else {
        return Err(Error::Truncated);
    };
    let declared = u32::from_le_bytes(*len);
    let too_large = || Error::TooLarge {
        declared,
        limit: limits.max_output,
    };
    let size = usize::try_from(declared).map_err(|_| too_large())?;
    if size > limits.max_output {
        return Err(too_large());
    }
    if size > compressed.saturating_mul(MAX_RATIO) {
        return Err(Error::Bomb {
            declared,
            compressed,
        });
    }
    if size == 0 {
        return Ok(Vec::new());
    }
    decode::decode_stream(stream, size)
}

/// FBB's text-mode conversion, applied to a message before compressing it: every CR is
/// dropped and every LF becomes CR LF (so CR LF, LF and LF CR all end up as CR LF, and a lone
/// CR disappears).
#[must_use]
pub fn fbb_text(data: &[u8]) -> Vec<u8> {
    let lf = data.iter().filter(|&&b| b == b'\n').count();
    let mut out = Vec::with_capacity(data.len() + lf);
    for &b in data {
        match b {
            b'\r' => {}
            b'\n' => out.extend_from_slice(b"\r\n"),
            _ => out.push(b),
        }
    }
    out
}
