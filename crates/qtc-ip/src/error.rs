//! The crate's one error type.

/// Everything that can go wrong in qtc-ip: malformed wire data and limits.
///
/// Parsers return these instead of panicking; every limit has its own variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- IPv4 ----
    /// The bytes ended before the named part was complete.
    #[error("too short: no room for the {0}")]
    TooShort(&'static str),
    /// An IP version other than 4.
    #[error("IP version {0}, not 4")]
    Version(u8),
    /// A header length (IHL) below 5 words.
    #[error("header length of {0} bytes is below 20")]
    HeaderLength(usize),
    /// A total length that is shorter than the header or longer than the bytes received.
    #[error("total length {total} does not fit the {received} bytes received")]
    TotalLength {
        /// What the header says.
        total: usize,
        /// What came.
        received: usize,
    },
    /// The header checksum does not add up.
    #[error("header checksum wrong")]
    Checksum,
    /// A fragment that would reach past 65535 bytes once reassembled.
    #[error("fragment reaches past 65535 bytes")]
    FragmentPastEnd,

    // ---- ARP ----
    /// A hardware type other than AX.25's (3).
    #[error("ARP hardware type {0}, not AX.25 (3)")]
    ArpHardware(u16),
    /// A protocol type other than IP (0xCC as NOS and Linux write it, or 0x0800).
    #[error("ARP protocol type {0:#06x}, not IP")]
    ArpProtocol(u16),
    /// Address lengths other than 7 (AX.25) and 4 (IPv4).
    #[error("ARP address lengths {hardware}/{protocol}, not 7/4")]
    ArpLengths {
        /// Hardware address length.
        hardware: u8,
        /// Protocol address length.
        protocol: u8,
    },
    /// An operation other than request (1) or reply (2): RARP and the rest are not served.
    #[error("ARP operation {0} not served")]
    ArpOperation(u16),
    /// The sender's hardware address is no callsign.
    #[error("ARP sender is no callsign: {0}")]
    ArpSender(qtc_callsign::CallsignError),

    // ---- sending ----
    /// A datagram too big for the link with "don't fragment" set.
    #[error("datagram of {len} bytes needs fragmenting below {mtu} but says don't fragment")]
    DontFragment {
        /// Its length.
        len: usize,
        /// The link's MTU.
        mtu: usize,
    },
    /// An MTU below IPv4's minimum of 68 bytes.
    #[error("MTU {0} is below IPv4's minimum of 68")]
    MtuTooSmall(usize),
}
