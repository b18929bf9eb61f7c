//! MBL/RLI one-at-a-time lines (spec §3): `S<type> <to> [@ <at>] [< <from>] [$<bid>]` and the
//! receiver's answer `OK` / `NO` / `REJECT` / `LATER` (only the first letter counts).

use crate::wire::proposal::{type_of, MsgType, MAX_AT_LEN, MAX_BID_LEN, MAX_CALL_LEN};
use crate::Error;

/// Longest `S` line we accept.
pub const MAX_SEND_LINE: usize = 160;

/// A parsed `S` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendLine<'a> {
    /// Message type.
    pub kind: MsgType,
    /// Addressee.
    pub to: &'a str,
    /// Destination BBS, if given.
    pub at: Option<&'a str>,
    /// Sender, if given.
    pub from: Option<&'a str>,
    /// BID, if given (without `$`).
    pub bid: Option<&'a str>,
}

fn limit(field: &'static str, v: &str, max: usize) -> Result<(), Error> {
    if v.is_empty() {
        return Err(Error::BadMblLine("empty field"));
    }
    if v.len() > max {
        return Err(Error::FieldTooLong { field, max });
    }
    Ok(())
}

impl<'a> SendLine<'a> {
    /// Whether a line is an `S` command (`S` + a type letter + space).
    pub fn is_send_line(line: &[u8]) -> bool {
        matches!(line, [b'S' | b's', t, b' ', ..] if type_of(*t).is_some())
    }

    /// Parse an `S` line (no line end).
    pub fn parse(line: &'a [u8]) -> Result<SendLine<'a>, Error> {
        if line.len() > MAX_SEND_LINE {
            return Err(Error::LineTooLong { max: MAX_SEND_LINE });
        }
        let text = std::str::from_utf8(line).map_err(|_| Error::BadMblLine("not ASCII"))?;
        let mut it = text.split_ascii_whitespace();
        let cmd = it.next().ok_or(Error::BadMblLine("empty line"))?;
        let kind = match cmd.as_bytes() {
            [b'S' | b's', t] => type_of(*t).ok_or(Error::BadMblLine("unknown type"))?,
            _ => return Err(Error::BadMblLine("not an S<type> command")),
        };
        let mut to = it.next().ok_or(Error::BadMblLine("missing addressee"))?;
        let (mut at, mut from, mut bid) = (None, None, None);
        if let Some((t, a)) = to.split_once('@') {
            to = t;
            if !a.is_empty() {
                at = Some(a);
            }
        }
        while let Some(tok) = it.next() {
            let mut value = |prefix: char| -> Result<&'a str, Error> {
                let v = &tok[prefix.len_utf8()..];
                if v.is_empty() {
                    it.next()
                        .ok_or(Error::BadMblLine("missing value after @, < or $"))
                } else {
                    Ok(v)
                }
            };
            if tok.starts_with('@') {
                at = Some(value('@')?);
            } else if tok.starts_with('<') {
                from = Some(value('<')?);
            } else if tok.starts_with('$') {
                bid = Some(value('$')?);
            } else {
                return Err(Error::BadMblLine("unexpected field"));
            }
        }
        limit("to", to, MAX_CALL_LEN)?;
        if let Some(a) = at {
            limit("at", a, MAX_AT_LEN)?;
        }
        if let Some(f) = from {
            limit("from", f, MAX_CALL_LEN)?;
        }
        if let Some(b) = bid {
            limit("BID", b, MAX_BID_LEN)?;
        }
        Ok(SendLine {
            kind,
            to,
            at,
            from,
            bid,
        })
    }

    /// Append the line (no line end), e.g. `SP N0USR @ N0BBS < N0PTR $M1_N0PTR`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let mut s = format!("S{} {}", self.kind.letter(), self.to);
        if let Some(a) = self.at {
            s.push_str(" @ ");
            s.push_str(a);
        }
        if let Some(f) = self.from {
            s.push_str(" < ");
            s.push_str(f);
        }
        if let Some(b) = self.bid {
            s.push_str(" $");
            s.push_str(b);
        }
        out.extend_from_slice(s.as_bytes());
    }
}

/// The receiver's answer to an `S` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MblAnswer {
    /// `OK`: send it.
    Ok,
    /// `NO` (FBB: `N - BID`): refused, duplicate.
    No,
    /// `REJECT` (R flag): rejected.
    Reject,
    /// `LATER` (R flag): try again later.
    Later,
}

impl MblAnswer {
    /// Parse an answer line by its first letter.
    pub fn parse(line: &[u8]) -> Result<MblAnswer, Error> {
        match line.first().map(u8::to_ascii_uppercase) {
            Some(b'O') => Ok(MblAnswer::Ok),
            Some(b'N') => Ok(MblAnswer::No),
            Some(b'R') => Ok(MblAnswer::Reject),
            Some(b'L') => Ok(MblAnswer::Later),
            _ => Err(Error::BadMblLine("answer is not OK, NO, REJECT or LATER")),
        }
    }

    /// The line we send (no line end): a duplicate gets FBB's `N - BID`; without the peer's
    /// R flag, REJECT and LATER become NO.
    pub fn as_str(self, extended: bool) -> &'static str {
        match (self, extended) {
            (MblAnswer::Ok, _) => "OK",
            (MblAnswer::No, _) => "N - BID",
            (_, false) => "NO",
            (MblAnswer::Reject, true) => "REJECT",
            (MblAnswer::Later, true) => "LATER",
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn transcript_lines() {
        let s = SendLine::parse(b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR").unwrap();
        assert_eq!(
            s,
            SendLine {
                kind: MsgType::Personal,
                to: "N0USR",
                at: Some("N0BBS"),
                from: Some("N0PTR"),
                bid: Some("M1_N0PTR")
            }
        );
        let mut out = Vec::new();
        s.emit(&mut out);
        assert_eq!(out, b"SP N0USR @ N0BBS < N0PTR $M1_N0PTR");
        let s = SendLine::parse(b"SB ALL@WW <N0PTR").unwrap();
        assert_eq!(
            (s.to, s.at, s.from, s.bid),
            ("ALL", Some("WW"), Some("N0PTR"), None)
        );
        assert!(SendLine::is_send_line(b"SB ALL @ WW"));
        assert!(!SendLine::is_send_line(b"SX ALL"));
        assert!(SendLine::parse(b"SP").is_err());
        assert!(SendLine::parse(b"SP N0USR junk").is_err());
        assert!(SendLine::parse(b"SP N0USR $1234567890123").is_err());
        assert_eq!(MblAnswer::parse(b"OK ").unwrap(), MblAnswer::Ok);
        assert_eq!(MblAnswer::parse(b"N - BID").unwrap(), MblAnswer::No);
        assert_eq!(MblAnswer::parse(b"REJECT").unwrap(), MblAnswer::Reject);
        assert_eq!(MblAnswer::parse(b"later").unwrap(), MblAnswer::Later);
        assert!(MblAnswer::parse(b">").is_err());
        assert_eq!(MblAnswer::Later.as_str(false), "NO");
    }

    proptest! {
        #[test]
        fn round_trip(
            k in 0usize..3, to in "[A-Z0-9]{1,6}", at in proptest::option::of("[A-Z0-9.#]{1,31}"),
            from in proptest::option::of("[A-Z0-9]{1,6}"), bid in proptest::option::of("[A-Z0-9_]{1,12}"),
        ) {
            let kind = [MsgType::Personal, MsgType::Bulletin, MsgType::Traffic][k];
            let s = SendLine { kind, to: &to, at: at.as_deref(), from: from.as_deref(), bid: bid.as_deref() };
            let mut out = Vec::new();
            s.emit(&mut out);
            prop_assert_eq!(SendLine::parse(&out).unwrap(), s);
        }
    }
}
