//! The one callsign type of qtc: a call of 1 to 6 letters and digits plus an SSID 0–15, as an
//! AX.25 address carries it (spec §2.2).
//!
//! Two ways in, for two questions:
//!
//! - [`Callsign::new`] and [`str::parse`] ask "is this an AX.25 address?": 1 to 6 characters
//!   A–Z/0–9, so `ID`, `CQ`, `BEACON`, `NODES` and NET/ROM aliases pass. The radio side (links,
//!   ports, NET/ROM, the radio config) uses these. [`Callsign::from_shifted`] reads the 7-byte
//!   form addresses and NET/ROM carry on the air.
//! - [`Callsign::parse_station`] asks "is this a station's call?": 3 to 6 characters with at
//!   least one digit. A BBS user, a partner BBS and the station itself are identified this way;
//!   the login prompt, the config, the CLI, the web pages and mail addresses use it. Its errors
//!   quote what was typed, for the user or sysop who typed it.
//!
//! Every station call is an address ([`Callsign::is_station`] tells which addresses are
//! station calls), so one type serves both, and a call heard on the air is a BBS identity
//! without conversion. This crate is a leaf: the AX.25 link layer and the mail side both use it
//! without depending on each other.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::fmt;
use core::str::FromStr;

/// Longest callsign, in characters.
pub const MAX_CALLSIGN_LEN: usize = 6;
/// Highest SSID.
pub const MAX_SSID: u8 = 15;
/// Bytes in the shifted form ([`Callsign::to_shifted`]): six characters and the SSID byte.
pub const SHIFTED_LEN: usize = MAX_CALLSIGN_LEN + 1;
/// Shortest station call ([`Callsign::parse_station`]).
pub const MIN_STATION_LEN: usize = 3;

/// The SSID byte's reserved bits, written as 11 (spec §2.2).
const RESERVED: u8 = 0x60;

/// A callsign: 1–6 characters A–Z/0–9 plus an SSID 0–15.
///
/// Copy, ordered and hashable so it can key maps; calls order as their text does, then by
/// SSID. Displays as `N0CALL-7` (no suffix for SSID 0).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Callsign {
    /// Upper-case ASCII, space padded on the right (a space sorts before every letter and
    /// digit, so the derived order is the text's).
    call: [u8; MAX_CALLSIGN_LEN],
    ssid: u8,
}

/// Why a text or 7-byte field is not an AX.25 address's callsign ([`Callsign::new`],
/// [`str::parse`], [`Callsign::from_shifted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallsignError {
    /// A callsign with no characters.
    #[error("empty callsign")]
    Empty,
    /// More than [`MAX_CALLSIGN_LEN`] characters.
    #[error("callsign longer than 6 characters")]
    TooLong,
    /// A character outside A–Z / 0–9 (or a space that is not trailing padding on the wire).
    #[error("invalid character {0:#04x} in callsign")]
    InvalidChar(u8),
    /// SSID above [`MAX_SSID`], or not a number.
    #[error("invalid SSID")]
    InvalidSsid,
}

/// Why a text is not a station's call ([`Callsign::parse_station`]). Each variant holds the
/// text as given, so the message can show it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StationCallError {
    /// The base call is not 3 to 6 characters.
    #[error("a callsign has 3 to 6 letters and digits, got {0:?}")]
    Length(String),
    /// A character other than A-Z or 0-9.
    #[error("a callsign holds only letters and digits, got {0:?}")]
    Character(String),
    /// No digit in the base call.
    #[error("a callsign has at least one digit, got {0:?}")]
    NoDigit(String),
    /// The SSID is not a number from 0 to 15.
    #[error("an SSID is a number from 0 to 15, got {0:?}")]
    Ssid(String),
}

impl Callsign {
    /// An address's callsign from its characters and SSID. Lower-case letters are upper-cased.
    pub const fn new(call: &str, ssid: u8) -> Result<Self, CallsignError> {
        if ssid > MAX_SSID {
            return Err(CallsignError::InvalidSsid);
        }
        let bytes = call.as_bytes();
        if bytes.is_empty() {
            return Err(CallsignError::Empty);
        }
        if bytes.len() > MAX_CALLSIGN_LEN {
            return Err(CallsignError::TooLong);
        }
        let mut out = *b"      ";
        // `while`, not an iterator: this is a `const fn` (ax25's `Path` fills its unused slots
        // with a constant callsign).
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i].to_ascii_uppercase();
            if !(c.is_ascii_uppercase() || c.is_ascii_digit()) {
                return Err(CallsignError::InvalidChar(c));
            }
            out[i] = c;
            i += 1;
        }
        Ok(Callsign { call: out, ssid })
    }

    /// A station's call, `N0CALL` or `n0call-7` (surrounding blanks ignored): 3 to 6 letters
    /// and digits with at least one digit, SSID 0 to 15. The identity of a BBS user, a partner
    /// or the station; use [`str::parse`] for addresses that need not be stations (`ID`, `CQ`).
    pub fn parse_station(text: &str) -> Result<Self, StationCallError> {
        let text = text.trim();
        let (base, ssid) = match text.split_once('-') {
            Some((b, s)) => {
                let ssid = s
                    .parse::<u8>()
                    .ok()
                    .filter(|n| *n <= MAX_SSID && !s.starts_with('+'))
                    .ok_or_else(|| StationCallError::Ssid(text.to_string()))?;
                (b, ssid)
            }
            None => (text, 0),
        };
        if !(MIN_STATION_LEN..=MAX_CALLSIGN_LEN).contains(&base.len()) {
            return Err(StationCallError::Length(text.to_string()));
        }
        if !base.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(StationCallError::Character(text.to_string()));
        }
        if !base.bytes().any(|b| b.is_ascii_digit()) {
            return Err(StationCallError::NoDigit(text.to_string()));
        }
        // The checks above are stricter than `new`'s, so this cannot fail.
        Callsign::new(base, ssid).map_err(|_| StationCallError::Character(text.to_string()))
    }

    /// Whether this address is a station's call: 3 to 6 characters with at least one digit
    /// (what [`Callsign::parse_station`] accepts).
    #[must_use]
    pub fn is_station(&self) -> bool {
        let base = self.base();
        base.len() >= MIN_STATION_LEN && base.bytes().any(|b| b.is_ascii_digit())
    }

    /// The call without its SSID, e.g. `N0CALL`.
    #[must_use]
    pub fn base(&self) -> &str {
        let len = self
            .call
            .iter()
            .position(|&c| c == b' ')
            .unwrap_or(MAX_CALLSIGN_LEN);
        // Only ASCII letters and digits are ever stored.
        core::str::from_utf8(&self.call[..len]).unwrap_or("")
    }

    /// The SSID, 0–15 (0 when none was given).
    #[must_use]
    pub fn ssid(&self) -> u8 {
        self.ssid
    }

    /// The same callsign with another SSID.
    pub fn with_ssid(self, ssid: u8) -> Result<Self, CallsignError> {
        if ssid > MAX_SSID {
            return Err(CallsignError::InvalidSsid);
        }
        Ok(Callsign { ssid, ..self })
    }

    /// The same call with SSID 0: the identity of a BBS user.
    #[must_use]
    pub fn without_ssid(self) -> Callsign {
        Callsign { ssid: 0, ..self }
    }

    /// The 7-byte form an AX.25 address field and NET/ROM carry (characters shifted left one
    /// bit, space padded; SSID byte with the reserved bits set, no C/H or extension bit).
    #[must_use]
    pub fn to_shifted(&self) -> [u8; SHIFTED_LEN] {
        let mut out = [0u8; SHIFTED_LEN];
        for (o, &c) in out.iter_mut().zip(&self.call) {
            *o = c << 1;
        }
        out[MAX_CALLSIGN_LEN] = RESERVED | (self.ssid << 1);
        out
    }

    /// Reads the 7-byte shifted form, ignoring the SSID byte's flag bits (C/H, reserved,
    /// extension): the address field keeps those, and NET/ROM peers set them freely.
    pub fn from_shifted(bytes: &[u8; SHIFTED_LEN]) -> Result<Callsign, CallsignError> {
        let mut call = *b"      ";
        let mut ended = false;
        for (slot, &b) in call.iter_mut().zip(&bytes[..MAX_CALLSIGN_LEN]) {
            if b & 1 != 0 {
                // An extension bit inside the callsign characters.
                return Err(CallsignError::InvalidChar(b));
            }
            let c = b >> 1;
            if c == b' ' {
                ended = true;
            } else if ended || !(c.is_ascii_uppercase() || c.is_ascii_digit()) {
                return Err(CallsignError::InvalidChar(c));
            } else {
                *slot = c;
            }
        }
        if call[0] == b' ' {
            return Err(CallsignError::Empty);
        }
        Ok(Callsign {
            call,
            ssid: (bytes[MAX_CALLSIGN_LEN] >> 1) & 0x0F,
        })
    }
}

impl FromStr for Callsign {
    type Err = CallsignError;

    /// Parse an address's `CALL` or `CALL-SSID` (SSID 0–15, decimal). Case-insensitive.
    fn from_str(s: &str) -> Result<Self, CallsignError> {
        match s.split_once('-') {
            None => Callsign::new(s, 0),
            Some((call, ssid)) => {
                if ssid.is_empty() || ssid.len() > 2 || !ssid.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(CallsignError::InvalidSsid);
                }
                let ssid: u8 = ssid.parse().map_err(|_| CallsignError::InvalidSsid)?;
                Callsign::new(call, ssid)
            }
        }
    }
}

impl fmt::Display for Callsign {
    /// `N0CALL` or `N0CALL-7`; widths and alignment (`{:<9}`) pad it as they pad its text.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ssid == 0 {
            f.pad(self.base())
        } else {
            f.pad(&format!("{}-{}", self.base(), self.ssid))
        }
    }
}

impl fmt::Debug for Callsign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests;
