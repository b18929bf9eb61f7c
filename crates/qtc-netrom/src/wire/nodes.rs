//! The NODES broadcast: the UI frame (to `NODES`, PID 0xCF) by which a node tells its
//! neighbours its alias and the best route it knows to each destination.
//!
//! ```text
//! 0xFF | alias (6) | entry*        entry = dest (7) | alias (6) | best neighbour (7) | quality (1)
//! ```
//!
//! JNOS also sends `0xFE | alias` to ask its neighbours for their broadcast at once (a poll).
//! A trailing piece shorter than an entry is ignored, as JNOS does.

use super::{read_call, Alias, ALIAS_LEN};
use crate::Error;
use qtc_callsign::Callsign;

/// The first byte of a routing broadcast.
pub const NODES_SIGNATURE: u8 = 0xFF;
/// The first byte of a poll (JNOS): "send me your broadcast".
pub const POLL_SIGNATURE: u8 = 0xFE;
/// Signature and alias.
pub const NODES_HEADER_LEN: usize = 1 + ALIAS_LEN;
/// One destination entry.
pub const NODES_ENTRY_LEN: usize = 7 + ALIAS_LEN + 7 + 1;
/// Entries per frame when we send: 7 + 11 × 21 = 238 bytes, within a 256-byte I field (JNOS,
/// LinBPQ and the original NET/ROM all use 11).
pub const NODES_PER_FRAME: usize = 11;

/// One destination in a broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodesEntry {
    /// The destination node.
    pub dest: Callsign,
    /// Its alias.
    pub alias: Alias,
    /// The sender's best neighbour towards it (a node that sees itself here ignores the
    /// entry: the route would loop through it).
    pub neighbour: Callsign,
    /// The sender's quality for that route, 0-255.
    pub quality: u8,
}

/// A NODES frame's information field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    /// A poll (0xFE) rather than a routing broadcast; it carries no entries.
    pub poll: bool,
    /// The sender's alias.
    pub alias: Alias,
    /// The destinations it advertises.
    pub entries: Vec<NodesEntry>,
    /// Entries dropped because a callsign or alias in them was malformed.
    pub skipped: usize,
}

impl Nodes {
    /// Parses a NODES frame's information field. A bad header is an error; a bad entry is
    /// skipped (counted in [`Nodes::skipped`]) so one corrupt line does not lose the rest.
    pub fn parse(info: &[u8]) -> Result<Nodes, Error> {
        let (&sig, rest) = info.split_first().ok_or(Error::TooShort("signature"))?;
        if sig != NODES_SIGNATURE && sig != POLL_SIGNATURE {
            return Err(Error::BadSignature(sig));
        }
        let (alias, mut rest) = rest
            .split_first_chunk::<ALIAS_LEN>()
            .ok_or(Error::TooShort("alias"))?;
        let mut out = Nodes {
            poll: sig == POLL_SIGNATURE,
            alias: Alias::from_wire(alias)?,
            entries: Vec::new(),
            skipped: 0,
        };
        if out.poll {
            return Ok(out);
        }
        while let Some((entry, tail)) = rest.split_first_chunk::<NODES_ENTRY_LEN>() {
            match parse_entry(entry) {
                Ok(e) => out.entries.push(e),
                Err(_) => out.skipped += 1,
            }
            rest = tail;
        }
        Ok(out)
    }

    /// Encoded length.
    #[must_use]
    pub fn buffer_len(&self) -> usize {
        if self.poll {
            NODES_HEADER_LEN
        } else {
            NODES_HEADER_LEN + self.entries.len() * NODES_ENTRY_LEN
        }
    }

    /// Appends the information field to `out`. Callers keep to [`NODES_PER_FRAME`] entries
    /// per frame ([`Nodes::frames`] does).
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.reserve(self.buffer_len());
        out.push(if self.poll {
            POLL_SIGNATURE
        } else {
            NODES_SIGNATURE
        });
        out.extend_from_slice(&self.alias.to_wire());
        if self.poll {
            return;
        }
        for e in &self.entries {
            out.extend_from_slice(&e.dest.to_shifted());
            out.extend_from_slice(&e.alias.to_wire());
            out.extend_from_slice(&e.neighbour.to_shifted());
            out.push(e.quality);
        }
    }

    /// The information field of a poll from a node called `alias`.
    #[must_use]
    pub fn poll(alias: Alias) -> Vec<u8> {
        let mut v = Vec::with_capacity(NODES_HEADER_LEN);
        v.push(POLL_SIGNATURE);
        v.extend_from_slice(&alias.to_wire());
        v
    }

    /// The information fields of the frames that carry `entries` for a node called `alias`:
    /// [`NODES_PER_FRAME`] entries each, and one frame with the alias alone when there are
    /// none.
    #[must_use]
    pub fn frames(alias: Alias, entries: &[NodesEntry]) -> Vec<Vec<u8>> {
        let mut chunks: Vec<&[NodesEntry]> = entries.chunks(NODES_PER_FRAME).collect();
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        chunks
            .into_iter()
            .map(|c| {
                let n = Nodes {
                    poll: false,
                    alias,
                    entries: c.to_vec(),
                    skipped: 0,
                };
                let mut v = Vec::with_capacity(n.buffer_len());
                n.emit(&mut v);
                v
            })
            .collect()
    }
}

fn parse_entry(bytes: &[u8; NODES_ENTRY_LEN]) -> Result<NodesEntry, Error> {
    let (dest, rest) = read_call(bytes, "destination")?;
    let (alias, rest) = rest
        .split_first_chunk::<ALIAS_LEN>()
        .ok_or(Error::TooShort("alias"))?;
    let alias = Alias::from_wire(alias)?;
    let (neighbour, rest) = read_call(rest, "neighbour")?;
    let &quality = rest.first().ok_or(Error::TooShort("quality"))?;
    Ok(NodesEntry {
        dest,
        alias,
        neighbour,
        quality,
    })
}
