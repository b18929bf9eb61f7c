//! Amateur callsigns as the BBS uses them: a base call of 3 to 6 letters and digits with at least
//! one digit, optionally followed by `-SSID` (0 to 15). Stored upper case.

use std::fmt;

/// A validated callsign, upper case, with an optional SSID.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Callsign {
    base: String,
    ssid: u8,
}

/// Why a string is not a callsign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallsignError {
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
    /// Parses `N0CALL` or `n0call-7`.
    pub fn parse(text: &str) -> Result<Self, CallsignError> {
        let text = text.trim();
        let (base, ssid) = match text.split_once('-') {
            Some((b, s)) => {
                let ssid = s
                    .parse::<u8>()
                    .ok()
                    .filter(|n| *n <= 15 && !s.starts_with('+'))
                    .ok_or_else(|| CallsignError::Ssid(text.to_string()))?;
                (b, ssid)
            }
            None => (text, 0),
        };
        if !(3..=6).contains(&base.len()) {
            return Err(CallsignError::Length(text.to_string()));
        }
        if !base.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(CallsignError::Character(text.to_string()));
        }
        if !base.bytes().any(|b| b.is_ascii_digit()) {
            return Err(CallsignError::NoDigit(text.to_string()));
        }
        Ok(Callsign {
            base: base.to_ascii_uppercase(),
            ssid,
        })
    }

    /// The call without its SSID, e.g. `N0CALL`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The SSID, 0 when none was given.
    pub fn ssid(&self) -> u8 {
        self.ssid
    }

    /// The same call with SSID 0: the identity of a BBS user.
    pub fn without_ssid(&self) -> Callsign {
        Callsign {
            base: self.base.clone(),
            ssid: 0,
        }
    }
}

impl fmt::Display for Callsign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ssid == 0 {
            f.write_str(&self.base)
        } else {
            write!(f, "{}-{}", self.base, self.ssid)
        }
    }
}

impl std::str::FromStr for Callsign {
    type Err = CallsignError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Callsign::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_normalises() {
        let c = Callsign::parse("n0call-7").unwrap();
        assert_eq!(c.base(), "N0CALL");
        assert_eq!(c.ssid(), 7);
        assert_eq!(c.to_string(), "N0CALL-7");
        assert_eq!(Callsign::parse("G8BPQ").unwrap().to_string(), "G8BPQ");
        assert_eq!(c.without_ssid().to_string(), "N0CALL");
    }

    #[test]
    fn rejects_bad_calls() {
        assert!(matches!(
            Callsign::parse("AB"),
            Err(CallsignError::Length(_))
        ));
        assert!(matches!(
            Callsign::parse("N0CALLXX"),
            Err(CallsignError::Length(_))
        ));
        assert!(matches!(
            Callsign::parse("N0/CA"),
            Err(CallsignError::Character(_))
        ));
        assert!(matches!(
            Callsign::parse("ABCDE"),
            Err(CallsignError::NoDigit(_))
        ));
        assert!(matches!(
            Callsign::parse("N0CALL-16"),
            Err(CallsignError::Ssid(_))
        ));
        assert!(matches!(
            Callsign::parse("N0CALL-"),
            Err(CallsignError::Ssid(_))
        ));
        assert!(matches!(
            Callsign::parse("N0CALL-+1"),
            Err(CallsignError::Ssid(_))
        ));
    }
}
