//! The crate's one error type.

/// Everything that can go wrong in qtc-ax25: malformed wire data and refused link operations.
///
/// Parsers return these instead of panicking; every size limit has its own variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- callsigns ----
    /// A callsign that is not 1–6 characters A–Z/0–9 with an SSID 0–15.
    #[error(transparent)]
    Callsign(#[from] qtc_callsign::CallsignError),

    // ---- address field ----
    /// The address field ended before two complete addresses.
    #[error("address field too short")]
    AddressTooShort,
    /// More than [`MAX_DIGIPEATERS`](crate::wire::MAX_DIGIPEATERS) digipeaters.
    #[error("more than 8 digipeaters")]
    TooManyDigipeaters,

    // ---- frame ----
    /// No control byte (or only the first of two in modulo 128).
    #[error("frame has no control field")]
    MissingControl,
    /// A control field that is no known I, S or U frame.
    #[error("unknown control field {0:#04x}")]
    UnknownControl(u8),
    /// An I or UI frame without a PID byte.
    #[error("I/UI frame has no PID")]
    MissingPid,
    /// Information bytes on a frame type that has no information field.
    #[error("unexpected information field on {0}")]
    UnexpectedInfo(&'static str),
    /// Information field longer than [`MAX_INFO_LEN`](crate::wire::MAX_INFO_LEN).
    #[error("information field of {len} bytes is too long")]
    InfoTooLong {
        /// Length found.
        len: usize,
    },
    /// The frame check sequence did not verify.
    #[error("FCS mismatch")]
    BadFcs,
    /// Too short to hold an FCS.
    #[error("frame too short for an FCS")]
    MissingFcs,

    // ---- XID ----
    /// An XID information field that does not follow section 4.3.3.7.
    #[error("malformed XID: {0}")]
    MalformedXid(&'static str),

    // ---- link operations ----
    /// The operation needs a connected (or connecting) link.
    #[error("link is not connected")]
    NotConnected,
    /// The operation is not possible in the link's current state.
    #[error("operation not valid in state {0}")]
    InvalidState(&'static str),
    /// The send buffer would exceed its configured limit; nothing was queued.
    #[error("send buffer full")]
    SendBufferFull,
    /// The port already has its configured maximum of links.
    #[error("too many links")]
    TooManyLinks,
    /// A link for this (local, remote) pair already exists.
    #[error("a link to this station already exists")]
    LinkExists,
    /// No link with this id.
    #[error("no such link")]
    UnknownLink,
}
