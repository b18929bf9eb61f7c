//! The crate's one error type.

/// Everything that can go wrong in qtc-netrom: malformed wire data and refused operations.
///
/// Parsers return these instead of panicking; every limit has its own variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- wire ----
    /// The bytes ended before the named part was complete.
    #[error("too short: no room for the {0}")]
    TooShort(&'static str),
    /// A NODES broadcast whose first byte is neither 0xFF (routes) nor 0xFE (poll).
    #[error("not a NODES broadcast (signature {0:#04x})")]
    BadSignature(u8),
    /// An alias with a byte that is not printable ASCII.
    #[error("alias has an unprintable byte {0:#04x}")]
    BadAlias(u8),
    /// An alias of no characters or more than six.
    #[error("an alias has 1 to 6 characters")]
    AliasLength,
    /// A callsign field that is no AX.25 callsign.
    #[error("bad callsign in the {what}: {source}")]
    BadCallsign {
        /// Which field.
        what: &'static str,
        /// What is wrong with it.
        source: qtc_callsign::CallsignError,
    },
    /// A transport opcode NET/ROM does not define.
    #[error("unknown transport opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// Information longer than [`MAX_INFO`](crate::wire::MAX_INFO).
    #[error("information field of {0} bytes is too long")]
    InfoTooLong(usize),

    // ---- operations ----
    /// No node of that alias or callsign is known.
    #[error("no such node")]
    UnknownNode,
    /// The node is known but no route to it is usable.
    #[error("no route to that node")]
    NoRoute,
    /// Connecting to this node itself.
    #[error("that is this node")]
    ToSelf,
    /// Every circuit slot is in use.
    #[error("too many circuits")]
    TooManyCircuits,
    /// No circuit with this id.
    #[error("no such circuit")]
    UnknownCircuit,
    /// The circuit is closing or closed.
    #[error("circuit not connected")]
    NotConnected,
    /// The circuit's send buffer would overflow; nothing was queued.
    #[error("send buffer full")]
    SendBufferFull,
}
