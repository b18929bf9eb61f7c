//! Where a message a user writes goes: its addressee (a callsign, a bulletin category, an NTS
//! area) and its `@` (a hierarchical address), as the `S` command, mail clients
//! (`N0XYZ@N0BBS.#NCA.CA.USA.NOAM`) and the web's To and @ fields give them. One check for
//! all, so a field that passes anywhere passes everywhere, and none can carry more fields of
//! the forwarding protocols (`<`, `$`, spaces).

use crate::{MAX_AT_LEN, MAX_TO_LEN};

/// Why an addressee or `@` is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DestError {
    /// The addressee is not one word of letters and digits.
    #[error("{0:?} is not a callsign or category (letters and digits)")]
    To(String),
    /// The `@` is not one word of letters, digits, `.`, `#`, `-`, `_`.
    #[error("{0:?} is not a BBS address (letters, digits, . and #)")]
    At(String),
    /// A field longer than the protocols allow.
    #[error("{field} is longer than {max} characters")]
    TooLong {
        /// Which field.
        field: &'static str,
        /// The limit.
        max: usize,
    },
}

/// Checks an addressee and an `@` (either may be given in any case; the `@` may be empty).
pub fn check(to: &str, at: &str) -> Result<(), DestError> {
    if to.is_empty() || !to.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(DestError::To(to.to_string()));
    }
    // A hierarchical address is ASCII: calls, `#REGION`, dots.
    if !at
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'#' | b'-' | b'_'))
    {
        return Err(DestError::At(at.to_string()));
    }
    if to.len() > MAX_TO_LEN {
        return Err(DestError::TooLong {
            field: "the addressee",
            max: MAX_TO_LEN,
        });
    }
    if at.len() > MAX_AT_LEN {
        return Err(DestError::TooLong {
            field: "the @ address",
            max: MAX_AT_LEN,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_each_within_the_limits() {
        assert_eq!(check("N0XYZ", "N0BBS.#NCA.CA.USA.NOAM"), Ok(()));
        assert_eq!(check("ALL", ""), Ok(()));
        for (to, at) in [
            ("", ""),
            ("N0A B", ""),
            ("N0A<", ""),
            ("N0A", "X $BID"),
            ("N0A", "A\u{e9}"),
        ] {
            assert!(check(to, at).is_err(), "{to:?} @ {at:?}");
        }
        assert!(matches!(
            check("TOOLONG", ""),
            Err(DestError::TooLong { max: 6, .. })
        ));
        assert!(matches!(
            check("N0A", &"A".repeat(32)),
            Err(DestError::TooLong { max: 31, .. })
        ));
    }
}
