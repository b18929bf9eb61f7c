//! The crate's error type.

/// A protocol anomaly seen by [`crate::Telnet::receive`]. None of them stops decoding; they are
/// reported through [`crate::Telnet::poll_error`] for logging.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A subnegotiation ran past [`crate::MAX_SUBNEGOTIATION`] bytes (it is discarded anyway).
    #[error("subnegotiation of option {option} longer than {limit} bytes")]
    SubnegotiationTooLong {
        /// The option being subnegotiated.
        option: u8,
        /// The limit, [`crate::MAX_SUBNEGOTIATION`].
        limit: usize,
    },
    /// A subnegotiation was ended by `IAC <command>` instead of `IAC SE`; the command was obeyed.
    #[error("subnegotiation of option {option} ended by IAC {command:#04x} instead of IAC SE")]
    UnterminatedSubnegotiation {
        /// The option being subnegotiated.
        option: u8,
        /// The command byte that followed IAC.
        command: u8,
    },
    /// `IAC SE` outside a subnegotiation.
    #[error("IAC SE outside a subnegotiation")]
    StraySe,
    /// `IAC` followed by a byte that is no telnet command (below 240).
    #[error("IAC followed by unknown command byte {0:#04x}")]
    UnknownCommand(u8),
    /// The peer answered our request to disable an option by enabling it (RFC 1143 error case).
    #[error("option {option}: our disable request was answered by an enable")]
    NegotiationMismatch {
        /// The option concerned.
        option: u8,
    },
}
