//! The forwarding modes, and the one table of what each means to the session, the daemon and
//! the store: its name in the config, how it is negotiated, how a message travels in it
//! (its [`Payload`], plain or compressed, proposed how), whether a broken transfer resumes,
//! and which stored compressed form it sends. Outside this crate nothing names a mode: the
//! daemon and the store ask this table.
//!
//! A new mode is a variant here with its rows in each method, and its wire handling in the
//! session (`session/send.rs`, `session/receive.rs`). A mode whose messages travel in a new
//! payload also needs that payload's conversion in the daemon (`forward/payload.rs`) and a
//! table for its compressed form in the store (`qtc-store`'s `FORMS` and a migration).

use std::fmt;

use crate::wire::sid::Flags;

/// Declares [`Mode`] and [`Mode::ALL`] from one list, so the list cannot miss a mode.
macro_rules! modes {
    ($($(#[doc = $doc:literal])* $mode:ident,)*) => {
        /// Forwarding mode agreed for a session, from least to most capable.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Mode {
            $($(#[doc = $doc])* $mode,)*
        }

        impl Mode {
            /// Every mode, from least to most capable: declared with the variants, so it is
            /// complete.
            pub const ALL: [Mode; [$(Mode::$mode),*].len()] = [$(Mode::$mode),*];
        }
    };
}

modes! {
    /// MBL/RLI: `S` lines, one message at a time.
    Mbl,
    /// FBB batch with plain text bodies (FB proposals).
    FbbAscii,
    /// FBB compressed version 0 (FA proposals, no CRC).
    B0,
    /// FBB compressed version 1 (FA proposals, CRC, resume).
    B1,
    /// Winlink B2F (FC proposals).
    B2,
}

/// What a message is on the wire, before any compression: what the application turns a stored
/// message into, and a received one back from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Payload {
    /// FBB text: the type, sender, addressee, `@` and BID travel in the proposal (or `S` line),
    /// the title in the proposal's block header (or the line after the `S` line); the payload
    /// is the R: lines and the body. One addressee per message.
    FbbText,
    /// A Winlink B2F message: its headers carry the type, sender, every To and Cc, the date
    /// and the body's charset; its attachments follow the body.
    B2f,
}

impl Payload {
    /// The name the store keeps this payload's compressed form under (`qtc-store`'s `FORMS`).
    pub fn name(self) -> &'static str {
        match self {
            Payload::FbbText => "fbb",
            Payload::B2f => "b2f",
        }
    }

    /// Whether it carries every recipient and attachment of a message (else one addressee
    /// and the text).
    pub fn carries_every_part(self) -> bool {
        match self {
            Payload::FbbText => false,
            Payload::B2f => true,
        }
    }
}

impl Mode {
    /// The most we offer a partner whose `protocol` is not set, and a BBS account that calls
    /// us without being a configured partner: B1, which LinFBB, JNOS and LinBPQ all speak.
    pub const DEFAULT: Mode = Mode::B1;

    /// The name a sysop writes in `protocol = "..."`, upper case: MBL, FBB, B0, B1, B2.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Mbl => "MBL",
            Mode::FbbAscii => "FBB",
            Mode::B0 => "B0",
            Mode::B1 => "B1",
            Mode::B2 => "B2",
        }
    }

    /// The mode a sysop names (any case), if there is one.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(name))
    }

    /// Negotiate the highest mode both flag sets offer, capped at `max` (spec §2).
    pub fn negotiate(ours: &Flags, theirs: &Flags, max: Mode) -> Mode {
        let f = ours.fbb && theirs.fbb;
        if max >= Mode::B2 && f && ours.b2() && theirs.b2() {
            Mode::B2
        } else if max >= Mode::B1 && f && ours.b1() && theirs.b1() {
            Mode::B1
        } else if max >= Mode::B0 && f && ours.b0() && theirs.b0() {
            Mode::B0
        } else if max >= Mode::FbbAscii && f {
            Mode::FbbAscii
        } else {
            Mode::Mbl
        }
    }

    /// Whether message bodies travel compressed in binary blocks.
    pub fn is_compressed(self) -> bool {
        self >= Mode::B0
    }

    /// Whether the mode is FBB batch (proposals, FS, FF/FQ); else MBL, one message at a time,
    /// each ended by `/EX` or Ctrl-Z.
    pub fn is_batch(self) -> bool {
        self >= Mode::FbbAscii
    }

    /// Whether a message travelling in this mode carries a CRC and can resume a broken
    /// transfer from an offset: a transfer cut half-way is kept (with the mode it came in) and
    /// offered back as a resume when the message is proposed again in the same mode.
    pub fn is_resumable(self) -> bool {
        matches!(self, Mode::B1 | Mode::B2)
    }

    /// How a message proposed with `FA` travels in a session agreed on this mode: B0 in a B0
    /// session, B1 otherwise.
    pub fn fa_travels_as(self) -> Mode {
        if self == Mode::B0 {
            Mode::B0
        } else {
            Mode::B1
        }
    }

    /// What a message is on the wire in this mode (see [`Payload`]).
    pub fn payload(self) -> Payload {
        match self {
            Mode::Mbl | Mode::FbbAscii | Mode::B0 | Mode::B1 => Payload::FbbText,
            Mode::B2 => Payload::B2f,
        }
    }

    /// The stored compressed form this mode sends, named by its payload: B0 and B1 send the
    /// FBB text's (LZHUF with its CRC; B0 drops the CRC), B2 the B2F message's; the plain
    /// modes none. It is made once per message and form, and kept while partners wait for it.
    pub fn packed(self) -> Option<Payload> {
        self.is_compressed().then(|| self.payload())
    }

    /// Whether a partner configured up to this mode is a Winlink station (Pat, Winlink
    /// Express, B2F only): it collects its mail by calling, so local mail for it waits in its
    /// queue.
    pub fn is_winlink(self) -> bool {
        self == Mode::B2
    }
}

/// [`Mode::name`].
impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_name(&m.name().to_ascii_lowercase()), Some(m));
        }
        assert_eq!(Mode::from_name("b3"), None);
    }

    #[test]
    fn the_table() {
        let packed: Vec<_> = Mode::ALL.iter().map(|m| m.packed()).collect();
        use Payload::*;
        assert_eq!(
            packed,
            [None, None, Some(FbbText), Some(FbbText), Some(B2f)]
        );
        assert!(Mode::ALL
            .iter()
            .all(|m| m.payload().carries_every_part() == m.is_winlink()));
    }
}
