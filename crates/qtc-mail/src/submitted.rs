//! The subject and text of a message a user submits from a form or a client (the web's
//! compose page, SMTP DATA, NNTP POST), checked the same way for all: a subject, no control
//! characters a terminal or a forwarding partner would act on (`^Z` ends a message in FBB
//! forwarding, ESC drives terminals), CR LF line ends as the BBS stores text, and the
//! `[limits] max_message` size. (At the BBS prompt the interpreter takes typed lines the same
//! way: `^Z` ends the text there.)

use crate::MAX_SUBJECT_LEN;

/// Why a submitted message is refused, in words for the user (lower case, no full stop).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The subject as stored: trimmed, not empty, without control characters, cut to
/// [`MAX_SUBJECT_LEN`] bytes on a character boundary.
pub fn subject(s: &str) -> Result<Vec<u8>, Refused> {
    let s = s.trim();
    if s.is_empty() {
        return Err(Refused("the subject is empty".into()));
    }
    if s.chars().any(char::is_control) {
        return Err(Refused("the subject holds control characters".into()));
    }
    let mut end = s.len().min(MAX_SUBJECT_LEN);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Ok(s.as_bytes()[..end].to_vec())
}

/// The text as stored: no control characters but CR, LF and TAB, every line ended by CR LF
/// (trailing empty lines dropped), at most `max` bytes.
pub fn body(text: &str, max: usize) -> Result<Vec<u8>, Refused> {
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\r' | '\n' | '\t'))
    {
        return Err(Refused("the text holds control characters".into()));
    }
    let mut body = Vec::with_capacity(text.len() + 64);
    for line in text.replace('\r', "").trim_end_matches('\n').split('\n') {
        body.extend_from_slice(line.as_bytes());
        body.extend_from_slice(b"\r\n");
    }
    if body.len() > max {
        return Err(Refused(format!(
            "the text is longer than the {max} bytes this BBS takes"
        )));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_and_texts() {
        assert_eq!(subject("  Hi ").unwrap(), b"Hi");
        assert_eq!(subject(&"ä".repeat(50)).unwrap().len(), 80);
        assert!(subject(" ").is_err());
        assert!(subject("s\x1b[2J").is_err());
        assert_eq!(body("a\r\nb\n\n", 100).unwrap(), b"a\r\nb\r\n");
        assert!(body("end\x1a", 100).is_err());
        assert!(body("\u{9b}2J", 100).is_err());
        assert!(body(&"x".repeat(200), 100).is_err());
    }
}
