//! The crate's one error type.

/// Everything that can go wrong in qtc-fbb: malformed wire input (each limit has its own
/// variant), protocol violations by the peer, timeouts and misuse of the session API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A SID line is not of the form `[NAME-VERSION-FLAGS$]`.
    #[error("malformed SID: {0}")]
    BadSid(&'static str),
    /// A proposal line (`FA`/`FB`/`FC`) is malformed.
    #[error("malformed proposal: {0}")]
    BadProposal(&'static str),
    /// A field is longer than the protocol allows.
    #[error("{field} is longer than {max} characters")]
    FieldTooLong {
        /// Which field.
        field: &'static str,
        /// Its limit.
        max: usize,
    },
    /// More proposals in one block than [`crate::wire::proposal::MAX_PROPOSALS`].
    #[error("more than {max} proposals in one block")]
    TooManyProposals {
        /// The limit.
        max: usize,
    },
    /// The `F> XX` checksum does not match the proposals of the block.
    #[error("proposal checksum mismatch: got {got:02X}, block needs {expected:02X}")]
    ProposalChecksum {
        /// What the block's lines require.
        expected: u8,
        /// What the peer sent.
        got: u8,
    },
    /// An `FS` answer line is malformed.
    #[error("malformed FS answer: {0}")]
    BadAnswer(&'static str),
    /// An `FS` answer has a different number of entries than there were proposals.
    #[error("FS answer has {got} entries for {expected} proposals")]
    AnswerCount {
        /// Number of proposals.
        expected: usize,
        /// Number of answers.
        got: usize,
    },
    /// Binary (SOH/STX/EOT) framing is malformed.
    #[error("malformed binary block: {0}")]
    BadBlock(&'static str),
    /// A message (compressed or not) exceeds the configured maximum size.
    #[error("message larger than {max} bytes")]
    MessageTooLarge {
        /// The limit.
        max: usize,
    },
    /// The EOT checksum of a binary transfer does not match its data.
    #[error("message checksum mismatch: got {got:02X}, data needs {expected:02X}")]
    BlockChecksum {
        /// What the data requires.
        expected: u8,
        /// What the peer sent.
        got: u8,
    },
    /// The peer aborted a binary transfer with CAN.
    #[error("peer aborted the transfer: {0}")]
    PeerAborted(String),
    /// A B2F (Winlink) message is malformed.
    #[error("malformed B2F message: {0}")]
    BadB2f(&'static str),
    /// An MBL/RLI `S` line or answer is malformed.
    #[error("malformed MBL line: {0}")]
    BadMblLine(&'static str),
    /// A protocol line is longer than allowed.
    #[error("line longer than {max} bytes")]
    LineTooLong {
        /// The limit.
        max: usize,
    },
    /// The peer sent a line that is not valid at this point of the session.
    #[error("protocol error: {reason} (line {line:?})")]
    Protocol {
        /// The offending line (lossy text, cut to 80 characters).
        line: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The peer reported an error (`*** ...` line) or refused the session.
    #[error("peer reported: {0}")]
    PeerError(String),
    /// A compressed payload failed to decompress or failed its CRC.
    #[error("bad compressed data: {0}")]
    Decompress(String),
    /// A resumed B1 transfer does not continue the partial file we hold.
    #[error("resumed transfer does not match the partial file")]
    ResumeMismatch,
    /// The peer was silent for longer than the idle timeout.
    #[error("timed out waiting for the partner's {waiting_for}")]
    Timeout {
        /// What the session was waiting for.
        waiting_for: &'static str,
    },
    /// The connection closed before the session ended.
    #[error("connection lost")]
    ConnectionLost,

    /// The partner took FBB proposals for MBL (LinBPQ toward anything but BPQ) and ended the
    /// session before our messages could go in MBL.
    #[error("the partner speaks MBL only and ended before our {unsent} message(s) went: set its protocol to mbl")]
    MblOnly {
        /// Our messages still waiting.
        unsent: usize,
    },
    /// The application closed the session.
    #[error("closed locally")]
    LocalClose,
    /// The peer sent more data than we buffer while waiting for the application.
    #[error("more than {max} bytes of input buffered")]
    InputOverflow {
        /// The limit.
        max: usize,
    },
    /// An outgoing message cannot be proposed (bad field).
    #[error("invalid outgoing message: {0}")]
    InvalidOutgoing(String),
    /// A session method was called when the session did not expect it.
    #[error("invalid call: {0}")]
    InvalidCall(&'static str),
    /// A login script step failed.
    #[error("login failed: {0}")]
    Login(&'static str),
}

impl Error {
    /// Build a [`Error::Protocol`] naming `line`.
    pub(crate) fn protocol(line: &[u8], reason: impl Into<String>) -> Self {
        let mut text: String = String::from_utf8_lossy(line).chars().take(80).collect();
        text.retain(|c| c != '\r' && c != '\n');
        Error::Protocol {
            line: text,
            reason: reason.into(),
        }
    }
}
