//! Public types of the forwarding session: configuration, messages, answers and events.

use crate::wire::proposal::{MsgType, DEFAULT_BLOCK_BUDGET, MAX_PROPOSALS};
use crate::wire::sid::SidInfo;
use crate::Error;
use crate::Mode;
use bytes::Bytes;
use qtc_callsign::Callsign;
use std::time::Duration;

/// Default idle timeout while waiting for the peer.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default cap on one message (uncompressed text, and compressed file).
pub const DEFAULT_MAX_MESSAGE: usize = 1 << 20;
/// Longest protocol line (SID, greeting, proposal, answer) we buffer.
pub const MAX_LINE_LEN: usize = 512;
/// Input kept while the session waits for the application (peer should be silent).
pub const MAX_BUFFERED_INPUT: usize = 64 * 1024;
/// At most this many bytes per `poll_transmit` call.
pub const MAX_TRANSMIT_CHUNK: usize = 64 * 1024;

/// Which end of the connection we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// We connected: wait for the prompt, send our SID, propose first.
    Caller,
    /// The partner connected to us: send SID, greeting and prompt, then listen.
    Called,
}

/// How our protocol lines (SIDs, prompts, proposals, answers, the lines of a plain-text
/// message) end on the wire. Compressed blocks are never touched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LineEnd {
    /// A bare CR: the FBB convention (LinFBB, LinBPQ, every AX.25 BBS, JNOS with `cronly`).
    #[default]
    Cr,
    /// CR LF: telnet's line end, which JNOS's telnet ports want unless set `cronly` (a bare
    /// CR leaves JNOS waiting for the LF).
    CrLf,
}

impl LineEnd {
    /// The bytes that end a line.
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            LineEnd::Cr => b"\r",
            LineEnd::CrLf => b"\r\n",
        }
    }
}

/// Session settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Our callsign (used in the prompt `de CALL>`).
    pub callsign: Callsign,
    /// Software name in our SID.
    pub software: String,
    /// Version in our SID.
    pub version: String,
    /// Highest mode we offer.
    pub max_mode: Mode,
    /// Lines sent after our SID and before the prompt (called side).
    pub greeting: Vec<String>,
    /// Silence from the peer longer than this closes the session.
    pub idle_timeout: Duration,
    /// Largest message we accept (text, and compressed file).
    pub max_message_size: usize,
    /// A block stops growing once its total size passes this (spec §4: ~10 KB).
    pub block_budget: usize,
    /// Proposals per block (at most [`MAX_PROPOSALS`]).
    pub max_proposals: usize,
    /// MBL caller: ask the called side to reverse-forward (`F>`) when we are done.
    pub mbl_reverse: bool,
    /// Honour the partner's `A<offset>` answers by sending from the offset; off, we send the
    /// whole message (for a partner that fails every resume, as 64-bit LinFBB does).
    pub send_resumes: bool,
    /// Caller: the secret for the partner's login challenges (FBB `SYS` numbers or MD5 form,
    /// Winlink `;PQ`); `None` answers none.
    pub secret: Option<String>,
    /// How our lines end (see [`crate::Session::set_line_end`] to change it later).
    pub line_end: LineEnd,
}

impl Config {
    /// Defaults for `callsign`: up to B2, 5 minutes idle timeout, 1 MiB messages.
    pub fn new(callsign: Callsign) -> Config {
        Config {
            callsign,
            software: "QTC".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            max_mode: Mode::B2,
            greeting: Vec::new(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_message_size: DEFAULT_MAX_MESSAGE,
            block_budget: DEFAULT_BLOCK_BUDGET,
            max_proposals: MAX_PROPOSALS,
            mbl_reverse: true,
            send_resumes: true,
            secret: None,
            line_end: LineEnd::Cr,
        }
    }
}

/// A message the application wants to forward.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Application id, echoed in [`Event::Acknowledged`].
    pub id: u64,
    /// P, B or T.
    pub kind: MsgType,
    /// Sender callsign (<= 6, no `@` or `.`).
    pub from: String,
    /// Destination BBS or area (<= 31; cut to its first element for peers without H).
    pub at: String,
    /// Addressee (<= 6, no `@` or `.`).
    pub to: String,
    /// BID (<= 12); the MID in B2 mode.
    pub bid: String,
    /// Title (CR/LF become spaces, cut to 80 bytes).
    pub title: Bytes,
    /// R: lines plus body, CR LF line ends. In [`Mode::B2`] the whole B2F message.
    pub text: Bytes,
    /// The B1 file form (`CRC16 | len | stream`) if the application cached it.
    pub compressed: Option<Bytes>,
}

/// A message the peer proposes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// How its message travels: MBL (`S` line) or FBB (`FB`), plain; B0 or B1 (`FA`),
    /// compressed; B2 (`FC`), a compressed B2F message.
    pub mode: Mode,
    /// Type (B2: Personal).
    pub kind: MsgType,
    /// Sender (empty for B2 and MBL lines without `<`).
    pub from: String,
    /// `@` field (empty if none).
    pub at: String,
    /// Addressee (empty for B2).
    pub to: String,
    /// BID / MID (empty for MBL lines without `$`).
    pub bid: String,
    /// Uncompressed size (0 when unknown: MBL).
    pub size: u32,
    /// Compressed size (B2 only).
    pub compressed_size: Option<u32>,
}

/// The application's answer to one proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Send it.
    Accept,
    /// B1/B2: send it from `offset`; `prefix` holds the first `offset` bytes of the file
    /// kept from an interrupted transfer ([`Event::Partial`]).
    AcceptFrom {
        /// Bytes already held.
        offset: u32,
        /// Those bytes.
        prefix: Bytes,
    },
    /// Refused: we already have it.
    Reject,
    /// Not now (e.g. arriving from another partner).
    Later,
    /// Accept; we will hold it.
    Held,
    /// Rejected by a rule.
    RejectedByRule,
}

/// What became of one of our messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Delivered: the peer took its next turn after receiving it.
    Sent,
    /// Delivered, the peer holds it (`H`).
    Held,
    /// Refused, the peer has it (`-`, `N`, `NO`): mark it forwarded to this partner.
    Rejected,
    /// Deferred (`=`, `L`, `LATER`): offer it again another time.
    Later,
    /// Rejected by rule (`R`, `REJECT`): drop this partner, do not mark it forwarded.
    RejectedByRule,
    /// The peer reported a format error in our proposal (`E`).
    FormatError,
    /// Never proposed: a field cannot be sent (local check, not a protocol answer).
    Unsendable(Error),
}

/// What the session asks of / tells the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// SIDs exchanged, mode agreed.
    Connected {
        /// The peer's SID, if it sent one.
        peer_sid: Option<SidInfo>,
        /// The agreed mode.
        mode: Mode,
    },
    /// Our turn: call [`crate::Session::offer`] with up to `max` messages (empty: none).
    NeedOutgoing {
        /// Messages per block.
        max: usize,
    },
    /// The peer proposes these: call [`crate::Session::answer`] with one answer each.
    Proposals(Vec<Proposal>),
    /// A complete, checked message of the current block.
    Received {
        /// Its proposal.
        proposal: Proposal,
        /// Title line / header title (B2: Subject if the header had none).
        title: Bytes,
        /// R: lines plus body, CR LF line ends (B2: the B2F message).
        text: Bytes,
    },
    /// The last message of the block was received: store the block, then call
    /// [`crate::Session::committed`]. Nothing is sent to the peer until then.
    BlockComplete,
    /// A compressed transfer was cut: keep `data` (start of the file) to resume with
    /// [`Answer::AcceptFrom`]. Empty `data`: the kept start did not match the partner's file;
    /// drop it, so the message is taken from the start next time.
    Partial {
        /// BID / MID of the message.
        bid: String,
        /// The mode it travelled in: a resume is asked only in the same mode (a B2 partial is
        /// another file than the B1 one).
        mode: Mode,
        /// File bytes received so far.
        data: Bytes,
    },
    /// One of our messages was answered or delivered.
    Acknowledged {
        /// [`Outgoing::id`].
        id: u64,
        /// What happened.
        outcome: Outcome,
    },
    /// The session is over. Send what `poll_transmit` still yields, then close.
    Closed {
        /// `None` for a clean end.
        error: Option<Error>,
    },
}
