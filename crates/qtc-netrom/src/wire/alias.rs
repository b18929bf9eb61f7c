//! A node's alias (its "ident"): up to six printable ASCII characters, blank-padded on the wire.

use core::fmt;
use core::str::FromStr;

use crate::Error;

/// Bytes of an alias on the wire.
pub const ALIAS_LEN: usize = 6;

/// A node alias such as `QTCA` or `BBSABC`. Aliases are compared without regard to case (users
/// type them either way); the characters are kept as sent.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Alias([u8; ALIAS_LEN]);

impl Alias {
    /// The alias of a node that has none (all blanks on the wire).
    pub const NONE: Alias = Alias(*b"      ");

    /// Reads the 6-byte wire form: printable ASCII, trailing blanks are padding. A NUL ends
    /// the alias early (some nodes pad with NULs).
    pub fn from_wire(bytes: &[u8; ALIAS_LEN]) -> Result<Alias, Error> {
        let mut out = [b' '; ALIAS_LEN];
        for (o, &b) in out.iter_mut().zip(bytes) {
            match b {
                0 => break,
                0x20..=0x7E => *o = b,
                other => return Err(Error::BadAlias(other)),
            }
        }
        Ok(Alias(out))
    }

    /// The 6-byte wire form, blank-padded.
    #[must_use]
    pub fn to_wire(&self) -> [u8; ALIAS_LEN] {
        self.0
    }

    /// The characters, without padding.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // Only printable ASCII is ever stored.
        core::str::from_utf8(&self.0).unwrap_or("").trim_end()
    }

    /// Whether this node has no alias.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }

    /// Whether `name` (as a user typed it) is this alias, ignoring case.
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        !self.is_empty() && self.as_str().eq_ignore_ascii_case(name)
    }
}

impl FromStr for Alias {
    type Err = Error;

    /// 1 to 6 printable ASCII characters without blanks; upper-cased, as nodes show them.
    fn from_str(s: &str) -> Result<Alias, Error> {
        if s.is_empty() || s.len() > ALIAS_LEN {
            return Err(Error::AliasLength);
        }
        let mut out = [b' '; ALIAS_LEN];
        for (o, b) in out.iter_mut().zip(s.bytes()) {
            if !b.is_ascii_graphic() {
                return Err(Error::BadAlias(b));
            }
            *o = b.to_ascii_uppercase();
        }
        Ok(Alias(out))
    }
}

impl fmt::Display for Alias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Alias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}
