//! System identifier lines `[NAME-VERSION-FLAGS$]` (spec §2) and mode negotiation.

use crate::{Error, Mode};
use std::fmt;

/// Longest SID line we accept (brackets included).
pub const MAX_SID_LEN: usize = 80;

/// The capability flags of a SID (spec §2 table). Unknown letters are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `A`: understands type A (acknowledgement) messages.
    pub ack_messages: bool,
    /// `B[n]`: FBB compressed forwarding; `Some(n)` with the digit after `B` (0 when absent).
    pub compressed: Option<u8>,
    /// `F`: FBB batch protocol (FA/FB proposals, FS answers).
    pub fbb: bool,
    /// `H`: hierarchical addresses.
    pub hierarchical: bool,
    /// `I`: understands `;` comment lines.
    pub comments: bool,
    /// `M`: message identifiers.
    pub mid: bool,
    /// `R`: AA4RE extended MBL answers (REJECT / LATER).
    pub extended_answers: bool,
    /// `X`: XFWD.
    pub xfwd: bool,
    /// `W`: Winlink extension (parsed, not implemented).
    pub winlink: bool,
    /// `J`: BPQ/Winlink extension (parsed, not implemented).
    pub j: bool,
    /// `G`: BPQ extension (parsed, not implemented).
    pub g: bool,
    /// `$`: BIDs supported.
    pub bid: bool,
}

impl Flags {
    /// `B` with any version: B0 capable.
    pub fn b0(&self) -> bool {
        self.compressed.is_some()
    }

    /// `B1` or higher: LinFBB treats every digit >= 1 as B1 capable.
    pub fn b1(&self) -> bool {
        self.compressed.is_some_and(|v| v >= 1)
    }

    /// `B2`: Winlink B2F.
    pub fn b2(&self) -> bool {
        self.compressed.is_some_and(|v| v >= 2)
    }

    /// Parse the flag text after the last `-` (without the closing `]`).
    pub fn parse(text: &str) -> Result<Flags, Error> {
        let mut f = Flags::default();
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let c = bytes[i].to_ascii_uppercase();
            i += 1;
            match c {
                b'A' => f.ack_messages = true,
                b'B' => {
                    let mut v = 0u8;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        v = v.saturating_mul(10).saturating_add(bytes[i] - b'0');
                        i += 1;
                    }
                    f.compressed = Some(f.compressed.map_or(v, |old| old.max(v)));
                }
                b'F' => f.fbb = true,
                b'H' => f.hierarchical = true,
                b'I' => f.comments = true,
                b'M' => f.mid = true,
                b'R' => f.extended_answers = true,
                b'X' => f.xfwd = true,
                b'W' => f.winlink = true,
                b'J' => f.j = true,
                b'G' => f.g = true,
                b'$' => f.bid = true,
                c if c.is_ascii_graphic() => {}
                _ => return Err(Error::BadSid("control or non-ASCII character in flags")),
            }
        }
        Ok(f)
    }

    /// The flags qtc announces when it is configured for at most `max`.
    pub fn ours(max: Mode) -> Flags {
        Flags {
            compressed: match max {
                Mode::Mbl | Mode::FbbAscii => None,
                Mode::B0 => Some(0),
                Mode::B1 => Some(1),
                Mode::B2 => Some(2),
            },
            fbb: max >= Mode::FbbAscii,
            hierarchical: true,
            mid: true,
            extended_answers: true,
            bid: true,
            ..Flags::default()
        }
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ack_messages {
            f.write_str("A")?;
        }
        match self.compressed {
            None => {}
            Some(0) => f.write_str("B")?,
            Some(v) => write!(f, "B{v}")?,
        }
        for (set, c) in [
            (self.fbb, "F"),
            (self.g, "G"),
            (self.hierarchical, "H"),
            (self.comments, "I"),
            (self.j, "J"),
            (self.mid, "M"),
            (self.extended_answers, "R"),
            (self.winlink, "W"),
            (self.xfwd, "X"),
            (self.bid, "$"),
        ] {
            if set {
                f.write_str(c)?;
            }
        }
        Ok(())
    }
}

/// A parsed SID borrowing its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sid<'a> {
    /// Software name (before the first `-`).
    pub name: &'a str,
    /// Version (between the first and the last `-`; may be empty or contain `-`).
    pub version: &'a str,
    /// Flags (after the last `-`).
    pub flags: Flags,
}

/// An owned SID, as kept by a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SidInfo {
    /// Software name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Flags.
    pub flags: Flags,
}

/// SID names of Winlink software (Pat and other wl2k-go programs, Winlink Express, RMS Trimode,
/// Paclink, the CMS). Their forwarding differs from FBB's in one way: after the partner refuses
/// a whole block the proposer keeps the turn (LinBPQ tells them apart by name the same way).
const WINLINK_NAMES: &[&str] = &[
    "pat",
    "wl2kgo",
    "rms express",
    "winlink express",
    "rms trimode",
    "paclink",
    "wl2k",
];

/// The calls of a Winlink `;FW: CALL[-SSID][@...] ...` line (the stations the sender collects
/// mail for), upper case, SSID and `@` part dropped; `None` for any other line.
pub fn forwards_line(line: &[u8]) -> Option<Vec<String>> {
    let rest = trim_end(line).strip_prefix(b";FW:")?;
    let text = String::from_utf8_lossy(rest);
    Some(
        text.split_ascii_whitespace()
            .filter_map(|w| {
                let call = w.split(['@', '-', '|']).next()?.to_ascii_uppercase();
                (!call.is_empty()
                    && call.len() <= 6
                    && call.bytes().all(|b| b.is_ascii_alphanumeric()))
                .then_some(call)
            })
            .collect(),
    )
}

/// A line before the SID with the telnet commands at its start taken off (`IAC WILL ECHO` and
/// the like, `IAC SB ... IAC SE`): LinBPQ's telnet outward connect in its REALTELNET mode puts
/// `IAC WILL ECHO` before its SID on a link that speaks no telnet. `IAC IAC` (a 0xFF) stays.
pub fn skip_telnet_commands(mut line: &[u8]) -> &[u8] {
    const IAC: u8 = 0xff;
    const SB: u8 = 0xfa;
    const SE: u8 = 0xf0;
    loop {
        line = match line {
            // WILL, WONT, DO, DONT and the option.
            [IAC, 0xfb..=0xfe, _, rest @ ..] => rest,
            [IAC, SB, rest @ ..] => match rest.windows(2).position(|w| w == [IAC, SE]) {
                Some(end) => &rest[end + 2..],
                None => &[],
            },
            // SE, NOP, DM, BRK, IP, AO, AYT, EC, EL, GA.
            [IAC, SE..=0xf9, rest @ ..] => rest,
            _ => return line,
        };
    }
}

impl SidInfo {
    /// Whether the SID names Winlink software (one of `WINLINK_NAMES`).
    pub fn is_winlink_client(&self) -> bool {
        WINLINK_NAMES
            .iter()
            .any(|n| self.name.eq_ignore_ascii_case(n))
    }
}

impl<'a> Sid<'a> {
    /// Whether `line` (without its line end) looks like a SID: starts with `[`, ends with `]`.
    pub fn is_sid_line(line: &[u8]) -> bool {
        let line = trim_end(line);
        line.len() >= 2 && line[0] == b'[' && line[line.len() - 1] == b']'
    }

    /// Parse a SID line (trailing spaces, CR or LF are ignored).
    pub fn parse(line: &'a [u8]) -> Result<Sid<'a>, Error> {
        let line = trim_end(line);
        if line.len() > MAX_SID_LEN {
            return Err(Error::FieldTooLong {
                field: "SID",
                max: MAX_SID_LEN,
            });
        }
        if !Self::is_sid_line(line) {
            return Err(Error::BadSid("not enclosed in [ ]"));
        }
        let inner = &line[1..line.len() - 1];
        let inner = std::str::from_utf8(inner).map_err(|_| Error::BadSid("not ASCII"))?;
        if !inner.bytes().all(|b| b.is_ascii_graphic() || b == b' ') {
            return Err(Error::BadSid("control or non-ASCII character"));
        }
        let last = inner
            .rfind('-')
            .ok_or(Error::BadSid("no '-' before the flags"))?;
        let flags = Flags::parse(&inner[last + 1..])?;
        let head = &inner[..last];
        let (name, version) = match head.find('-') {
            Some(i) => (&head[..i], &head[i + 1..]),
            None => (head, ""),
        };
        if name.is_empty() {
            return Err(Error::BadSid("empty name"));
        }
        Ok(Sid {
            name,
            version,
            flags,
        })
    }

    /// Append `[NAME-VERSION-FLAGS]` (no line end) to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.to_string().as_bytes());
    }

    /// An owned copy.
    pub fn to_info(&self) -> SidInfo {
        SidInfo {
            name: self.name.to_owned(),
            version: self.version.to_owned(),
            flags: self.flags,
        }
    }
}

impl fmt::Display for Sid<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}-{}-{}]", self.name, self.version, self.flags)
    }
}

pub(crate) fn trim_end(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., last] = line {
        if matches!(last, b'\r' | b'\n' | b' ' | b'\t') {
            line = rest;
        } else {
            break;
        }
    }
    line
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn telnet_commands_before_a_sid_are_skipped() {
        let sid = b"[BPQ-6.0.25.23-B12FWIHJM$]\r";
        for before in [
            &b"\xff\xfb\x01"[..],
            b"\xff\xfb\x03\xff\xfb\x01",
            b"\xff\xfa\x18\x01\xff\xf0\xff\xf1",
            b"",
        ] {
            let line = [before, &sid[..]].concat();
            assert_eq!(skip_telnet_commands(&line), sid, "{before:?}");
        }
        assert_eq!(skip_telnet_commands(b"\xff\xff[x]"), b"\xff\xff[x]");
        assert_eq!(skip_telnet_commands(b"\xff\xfa\x18 never ends"), b"");
        assert_eq!(skip_telnet_commands(b"\xff\xfb"), b"\xff\xfb");
    }

    #[test]
    fn forwards_lines() {
        assert_eq!(
            forwards_line(b";FW: N0PAT n0aux-7 W1AW@winlink.org|XY\r"),
            Some(vec!["N0PAT".into(), "N0AUX".into(), "W1AW".into()])
        );
        assert_eq!(forwards_line(b";FW:"), Some(vec![]));
        assert_eq!(forwards_line(b";FW: TOOLONGCALL \xff"), Some(vec![]));
        assert_eq!(forwards_line(b"; N0BBS DE N0PAT"), None);
    }

    #[test]
    fn parses_known_sids() {
        let s = Sid::parse(b"[FBB-7.0.12-AB1FHMRX$]\r").unwrap();
        assert_eq!((s.name, s.version), ("FBB", "7.0.12"));
        assert!(s.flags.ack_messages && s.flags.b1() && !s.flags.b2() && s.flags.fbb);
        assert!(s.flags.hierarchical && s.flags.mid && s.flags.extended_answers);
        assert!(s.flags.xfwd && s.flags.bid);

        let s = Sid::parse(b"[BPQ-6.0.25.23-B2FWIHJM$]").unwrap();
        assert_eq!(s.version, "6.0.25.23");
        assert!(s.flags.b2() && s.flags.winlink && s.flags.comments && s.flags.j);

        let s = Sid::parse(b"[JNOS-2.0o.2-B1FHIM$]").unwrap();
        assert_eq!(s.flags.compressed, Some(1));
        let s = Sid::parse(b"[RLI-19.13-HIX$]").unwrap();
        assert!(!s.flags.fbb && s.flags.compressed.is_none());
        let s = Sid::parse(b"[TST-1.0-B1F]").unwrap();
        assert!(!s.flags.bid);
        // Flags come after the LAST '-'.
        let s = Sid::parse(b"[X-1.0-beta-BF$]").unwrap();
        assert_eq!(s.version, "1.0-beta");
        assert_eq!(s.flags.compressed, Some(0));
    }

    #[test]
    fn rejects_non_sids() {
        assert!(Sid::parse(b"Hello [TST-1.0-B1F, you are").is_err());
        assert_eq!(
            Sid::parse(b"[NODASH]"),
            Err(Error::BadSid("no '-' before the flags"))
        );
        assert!(Sid::parse(b"[A-B-\x01]").is_err());
        assert!(Sid::parse(&[b'['; 100]).is_err());
    }

    #[test]
    fn negotiation() {
        let fbb = Sid::parse(b"[FBB-7.0.12-AB1FHMRX$]").unwrap().flags;
        let bpq = Sid::parse(b"[BPQ-6.0.25.23-B2FWIHJM$]").unwrap().flags;
        let rli = Sid::parse(b"[RLI-19.13-HIX$]").unwrap().flags;
        let ours = Flags::ours(Mode::B2);
        assert_eq!(Mode::negotiate(&ours, &bpq, Mode::B2), Mode::B2);
        assert_eq!(Mode::negotiate(&ours, &fbb, Mode::B2), Mode::B1);
        assert_eq!(Mode::negotiate(&ours, &fbb, Mode::B0), Mode::B0);
        assert_eq!(Mode::negotiate(&ours, &fbb, Mode::FbbAscii), Mode::FbbAscii);
        assert_eq!(Mode::negotiate(&ours, &rli, Mode::B2), Mode::Mbl);
        let plain = Flags::ours(Mode::FbbAscii);
        assert_eq!(Mode::negotiate(&plain, &fbb, Mode::B2), Mode::FbbAscii);
    }

    #[test]
    fn ours_round_trips() {
        for m in Mode::ALL {
            let sid = Sid {
                name: "QTC",
                version: "0.1.0",
                flags: Flags::ours(m),
            };
            let text = sid.to_string();
            assert_eq!(Sid::parse(text.as_bytes()).unwrap(), sid, "{text}");
        }
        assert_eq!(Flags::ours(Mode::B1).to_string(), "B1FHMR$");
    }
}
