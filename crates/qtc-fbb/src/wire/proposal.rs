//! FBB batch lines (spec §4): `FA`/`FB`/`FC` proposals, the `F> XX` block end and its
//! checksum, `FS` answers in both dialects, `FF` and `FQ`.

use crate::Error;

/// At most this many proposals in one block.
pub const MAX_PROPOSALS: usize = 5;
/// `from` and `to` are at most this long (and contain no `@` or `.`).
pub const MAX_CALL_LEN: usize = 6;
/// `at` is at most this long.
pub const MAX_AT_LEN: usize = 31;
/// A BID (or B2 MID) is at most this long.
pub const MAX_BID_LEN: usize = 12;
/// FBB reads only this many characters of a proposal line.
pub const PROPOSAL_READ_LEN: usize = 80;
/// A block stops growing once its total uncompressed size passes this many bytes.
pub const DEFAULT_BLOCK_BUDGET: usize = 10 * 1024;

pub use qtc_mail::MsgType;

/// The type a proposal's or `S` line's letter gives its message: `P`, `B` or `T` (either case),
/// and `A`, an FBB acknowledgement message, taken as the personal message it is (qtc announces
/// no `A` flag, so it sends none, and one it receives is stored as personal mail).
pub fn type_of(letter: u8) -> Option<MsgType> {
    match letter.to_ascii_uppercase() {
        b'A' => Some(MsgType::Personal),
        b => MsgType::from_letter(char::from(b)),
    }
}

/// An `FA` (compressed) or `FB` (plain text) proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FbbProposal<'a> {
    /// `FA` (true) or `FB` (false).
    pub compressed: bool,
    /// Message type.
    pub kind: MsgType,
    /// Sender callsign.
    pub from: &'a str,
    /// Destination BBS / distribution (`@` field).
    pub at: &'a str,
    /// Addressee.
    pub to: &'a str,
    /// Bulletin / message id.
    pub bid: &'a str,
    /// Uncompressed size in bytes.
    pub size: u32,
}

/// An `FC` (Winlink B2F) proposal: `FC EM <mid> <size> <compressed size> 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct B2Proposal<'a> {
    /// `CM` (CMS traffic) instead of `EM`.
    pub cms: bool,
    /// Message id.
    pub mid: &'a str,
    /// Uncompressed size.
    pub size: u32,
    /// Compressed size.
    pub compressed_size: u32,
}

/// One proposal line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProposalLine<'a> {
    /// `FA` / `FB`.
    Fbb(FbbProposal<'a>),
    /// `FC`.
    B2(B2Proposal<'a>),
}

/// One entry of an `FS` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerCode {
    /// `+` / `Y`: send it.
    Accept,
    /// `-` / `N`: refused, already have it.
    Reject,
    /// `=` / `L`: later.
    Later,
    /// `!off` / `Aoff`: accept, resume at this offset of the compressed file.
    Resume(u32),
    /// `R`: rejected by rule.
    RejectedByRule,
    /// `H`: accepted, held by the receiver.
    Held,
    /// `E`: format error in the proposal.
    FormatError,
}

impl AnswerCode {
    /// Whether the proposer sends the message after this answer.
    pub fn sends(self) -> bool {
        matches!(
            self,
            AnswerCode::Accept | AnswerCode::Resume(_) | AnswerCode::Held
        )
    }
}

/// Which `FS` characters to send: they depend on the peer (spec §4 table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// `+ - = !off` for B0 / plain peers.
    Plain,
    /// `Y N L Aoff` for B1 / B2 peers.
    B1,
}

/// A classified FBB batch line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FbbLine<'a> {
    /// `FA` / `FB` / `FC`.
    Proposal(ProposalLine<'a>),
    /// `F>` with its checksum, if any.
    End(Option<u8>),
    /// `FS ...`.
    Answer(Vec<AnswerCode>),
    /// `FF`: nothing (more) to send.
    NoMore,
    /// `FQ`: quit.
    Quit,
}

fn check_len(field: &'static str, value: &str, max: usize) -> Result<(), Error> {
    if value.len() > max {
        Err(Error::FieldTooLong { field, max })
    } else {
        Ok(())
    }
}

fn check_call(field: &'static str, value: &str) -> Result<(), Error> {
    check_len(field, value, MAX_CALL_LEN)?;
    if value.contains(['@', '.']) {
        return Err(Error::BadProposal("callsign field contains '@' or '.'"));
    }
    Ok(())
}

fn check_token(value: &str) -> Result<(), Error> {
    if value.is_empty() {
        return Err(Error::BadProposal("empty field"));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::BadProposal(
            "field with a space, control or non-ASCII character",
        ));
    }
    Ok(())
}

fn parse_u32(field: &'static str, s: &str) -> Result<u32, Error> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Error::BadProposal(field));
    }
    s.parse().map_err(|_| Error::BadProposal(field))
}

impl FbbProposal<'_> {
    /// Check every field against the limits FBB enforces.
    pub fn validate(&self) -> Result<(), Error> {
        for v in [self.from, self.at, self.to, self.bid] {
            check_token(v)?;
        }
        check_call("from", self.from)?;
        check_call("to", self.to)?;
        check_len("at", self.at, MAX_AT_LEN)?;
        check_len("BID", self.bid, MAX_BID_LEN)?;
        Ok(())
    }
}

impl B2Proposal<'_> {
    /// Check the MID.
    pub fn validate(&self) -> Result<(), Error> {
        check_token(self.mid)?;
        check_len("MID", self.mid, MAX_BID_LEN)
    }
}

impl<'a> ProposalLine<'a> {
    /// Parse a proposal line (no line end). Only the first [`PROPOSAL_READ_LEN`] bytes count.
    pub fn parse(line: &'a [u8]) -> Result<ProposalLine<'a>, Error> {
        let line = &line[..line.len().min(PROPOSAL_READ_LEN)];
        let text = std::str::from_utf8(line).map_err(|_| Error::BadProposal("not ASCII"))?;
        let mut it = text.split_ascii_whitespace();
        let head = it.next().ok_or(Error::BadProposal("empty line"))?;
        let mut next = |what: &'static str| it.next().ok_or(Error::BadProposal(what));
        match head {
            "FA" | "FB" => {
                let kind = next("missing type")?;
                let kind = match kind.as_bytes() {
                    [b] => type_of(*b).ok_or(Error::BadProposal("unknown type"))?,
                    _ => return Err(Error::BadProposal("unknown type")),
                };
                let p = FbbProposal {
                    compressed: head == "FA",
                    kind,
                    from: next("missing from")?,
                    at: next("missing at")?,
                    to: next("missing to")?,
                    bid: next("missing BID")?,
                    size: parse_u32("bad size", next("missing size")?)?,
                };
                p.validate()?;
                Ok(ProposalLine::Fbb(p))
            }
            "FC" => {
                let cms = match next("missing EM/CM")? {
                    "EM" => false,
                    "CM" => true,
                    _ => return Err(Error::BadProposal("FC type is not EM or CM")),
                };
                let p = B2Proposal {
                    cms,
                    mid: next("missing MID")?,
                    size: parse_u32("bad size", next("missing size")?)?,
                    compressed_size: parse_u32(
                        "bad compressed size",
                        next("missing compressed size")?,
                    )?,
                };
                p.validate()?;
                Ok(ProposalLine::B2(p))
            }
            _ => Err(Error::BadProposal("not FA, FB or FC")),
        }
    }

    /// Append the line (no line end) to `out`. Call `validate` first for foreign data.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let s = match self {
            ProposalLine::Fbb(p) => format!(
                "F{} {} {} {} {} {} {}",
                if p.compressed { 'A' } else { 'B' },
                p.kind.letter(),
                p.from,
                p.at,
                p.to,
                p.bid,
                p.size
            ),
            ProposalLine::B2(p) => format!(
                "FC {} {} {} {} 0",
                if p.cms { "CM" } else { "EM" },
                p.mid,
                p.size,
                p.compressed_size
            ),
        };
        out.extend_from_slice(s.as_bytes());
    }

    /// Check the fields.
    pub fn validate(&self) -> Result<(), Error> {
        match self {
            ProposalLine::Fbb(p) => p.validate(),
            ProposalLine::B2(p) => p.validate(),
        }
    }
}

/// Add one line (without line end) and its CR to a running byte sum.
pub fn checksum_add(sum: u8, line: &[u8]) -> u8 {
    line.iter()
        .fold(sum, |s, &b| s.wrapping_add(b))
        .wrapping_add(b'\r')
}

/// The `F> XX` value for a running sum: its two's complement.
pub fn checksum_value(sum: u8) -> u8 {
    sum.wrapping_neg()
}

/// Append `F> XX` (or `F>` when `checksum` is `None`), no line end.
pub fn emit_end(checksum: Option<u8>, out: &mut Vec<u8>) {
    match checksum {
        Some(c) => out.extend_from_slice(format!("F> {c:02X}").as_bytes()),
        None => out.extend_from_slice(b"F>"),
    }
}

/// Append `FS <answers>` in `dialect`, no line end.
pub fn emit_answer(answers: &[AnswerCode], dialect: Dialect, out: &mut Vec<u8>) {
    out.extend_from_slice(b"FS ");
    for a in answers {
        let plain = dialect == Dialect::Plain;
        match a {
            AnswerCode::Accept | AnswerCode::Resume(0) => out.push(if plain { b'+' } else { b'Y' }),
            AnswerCode::Reject => out.push(if plain { b'-' } else { b'N' }),
            AnswerCode::Later => out.push(if plain { b'=' } else { b'L' }),
            AnswerCode::Resume(off) => {
                out.push(if plain { b'!' } else { b'A' });
                out.extend_from_slice(off.to_string().as_bytes());
            }
            AnswerCode::RejectedByRule => out.push(b'R'),
            AnswerCode::Held => out.push(b'H'),
            AnswerCode::FormatError => out.push(b'E'),
        }
    }
}

fn parse_answers(rest: &[u8]) -> Result<Vec<AnswerCode>, Error> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let c = rest[i];
        i += 1;
        let code = match c {
            b' ' | b'\t' => continue,
            b'+' | b'Y' | b'y' => AnswerCode::Accept,
            b'-' | b'N' | b'n' => AnswerCode::Reject,
            b'=' | b'L' | b'l' => AnswerCode::Later,
            b'R' | b'r' => AnswerCode::RejectedByRule,
            b'H' | b'h' => AnswerCode::Held,
            b'E' | b'e' => AnswerCode::FormatError,
            b'!' | b'A' | b'a' => {
                let start = i;
                while i < rest.len() && rest[i].is_ascii_digit() {
                    i += 1;
                }
                let digits = &rest[start..i];
                if digits.len() > 10 {
                    return Err(Error::BadAnswer("resume offset too large"));
                }
                let mut v: u64 = 0;
                for d in digits {
                    v = v * 10 + u64::from(d - b'0');
                }
                match u32::try_from(v) {
                    // No offset or offset 0 is a plain accept.
                    Ok(0) => AnswerCode::Accept,
                    Ok(off) => AnswerCode::Resume(off),
                    Err(_) => return Err(Error::BadAnswer("resume offset too large")),
                }
            }
            _ => return Err(Error::BadAnswer("unknown answer character")),
        };
        if out.len() == MAX_PROPOSALS {
            return Err(Error::TooManyProposals { max: MAX_PROPOSALS });
        }
        out.push(code);
    }
    if out.is_empty() {
        return Err(Error::BadAnswer("no answers"));
    }
    Ok(out)
}

impl<'a> FbbLine<'a> {
    /// Classify and parse a batch-protocol line (no line end).
    pub fn parse(line: &'a [u8]) -> Result<FbbLine<'a>, Error> {
        let line = crate::wire::sid::trim_end(line);
        match line {
            [b'F', b'A' | b'B' | b'C', ..] => ProposalLine::parse(line).map(FbbLine::Proposal),
            [b'F', b'>', rest @ ..] => {
                let hex = rest.trim_ascii();
                if hex.is_empty() {
                    return Ok(FbbLine::End(None));
                }
                if hex.len() > 2 || !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(Error::BadProposal("F> checksum is not two hex digits"));
                }
                let s = std::str::from_utf8(hex).map_err(|_| Error::BadProposal("F> checksum"))?;
                let v = u8::from_str_radix(s, 16)
                    .map_err(|_| Error::BadProposal("F> checksum is not two hex digits"))?;
                Ok(FbbLine::End(Some(v)))
            }
            [b'F', b'S', rest @ ..] => parse_answers(rest).map(FbbLine::Answer),
            b"FF" => Ok(FbbLine::NoMore),
            b"FQ" => Ok(FbbLine::Quit),
            _ => Err(Error::BadProposal("not an FBB batch line")),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    fn block_sum(lines: &[&[u8]]) -> u8 {
        checksum_value(lines.iter().fold(0, |s, l| checksum_add(s, l)))
    }

    #[test]
    fn transcript_checksums() {
        // protocol_probes_transcript.txt, session B: `F> 9B`.
        let b: [&[u8]; 3] = [
            b"FB P N0PTR N0BBS N0USR A1_N0PTR 40",
            b"FB P N0PTR N0BBS N0USR M1_N0PTR 40",
            b"FB B N0PTR WW ALL A2_N0PTR 30",
        ];
        assert_eq!(block_sum(&b), 0x9B);
        // b1_inbound_transcript.txt: `F> 52`.
        assert_eq!(block_sum(&[b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000"]), 0x52);
        let mut out = Vec::new();
        emit_end(Some(0x9B), &mut out);
        assert_eq!(out, b"F> 9B");
    }

    #[test]
    fn parses_lines() {
        let l = FbbLine::parse(b"FA P N0PTR N0BBS N0USR 1_N0PTR 5000").unwrap();
        assert_eq!(
            l,
            FbbLine::Proposal(ProposalLine::Fbb(FbbProposal {
                compressed: true,
                kind: MsgType::Personal,
                from: "N0PTR",
                at: "N0BBS",
                to: "N0USR",
                bid: "1_N0PTR",
                size: 5000
            }))
        );
        // An acknowledgement message (`A`) is taken as the personal message it is.
        match FbbLine::parse(b"FB A N0ABC N0XYZ N0XYZ 12345_N0ABC 100").unwrap() {
            FbbLine::Proposal(ProposalLine::Fbb(p)) => assert_eq!(p.kind, MsgType::Personal),
            other => panic!("{other:?}"),
        }
        assert_eq!(FbbLine::parse(b"F>").unwrap(), FbbLine::End(None));
        assert_eq!(FbbLine::parse(b"F> 00").unwrap(), FbbLine::End(Some(0)));
        assert_eq!(FbbLine::parse(b"FF").unwrap(), FbbLine::NoMore);
        assert_eq!(FbbLine::parse(b"FQ").unwrap(), FbbLine::Quit);
        assert_eq!(
            FbbLine::parse(b"FS +-+").unwrap(),
            FbbLine::Answer(vec![
                AnswerCode::Accept,
                AnswerCode::Reject,
                AnswerCode::Accept
            ])
        );
        assert_eq!(
            FbbLine::parse(b"FS NY").unwrap(),
            FbbLine::Answer(vec![AnswerCode::Reject, AnswerCode::Accept])
        );
        assert_eq!(
            FbbLine::parse(b"FS A120!5=RH").unwrap(),
            FbbLine::Answer(vec![
                AnswerCode::Resume(120),
                AnswerCode::Resume(5),
                AnswerCode::Later,
                AnswerCode::RejectedByRule,
                AnswerCode::Held
            ])
        );
        let l = FbbLine::parse(b"FC EM LPE5NXDVLVSQ 31380 31209 0").unwrap();
        assert_eq!(
            l,
            FbbLine::Proposal(ProposalLine::B2(B2Proposal {
                cms: false,
                mid: "LPE5NXDVLVSQ",
                size: 31380,
                compressed_size: 31209
            }))
        );
    }

    #[test]
    fn limits() {
        assert_eq!(
            ProposalLine::parse(b"FB P N0PTR12 N0BBS N0USR A1 40"),
            Err(Error::FieldTooLong {
                field: "from",
                max: 6
            })
        );
        assert!(ProposalLine::parse(b"FB P N0@TR N0BBS N0USR A1 40").is_err());
        assert!(ProposalLine::parse(b"FB P N0TR N0BBS N0.SR A1 40").is_err());
        assert_eq!(
            ProposalLine::parse(b"FB P N0TR N0BBS N0USR 1234567890123 40"),
            Err(Error::FieldTooLong {
                field: "BID",
                max: 12
            })
        );
        let at = "A".repeat(32);
        let l = format!("FB P N0 {at} N0 B 4");
        assert_eq!(
            ProposalLine::parse(l.as_bytes()),
            Err(Error::FieldTooLong {
                field: "at",
                max: 31
            })
        );
        // Only the first 80 characters are read: the size is cut off here.
        let l = format!("FB P N0 {} N0 B{} 4", "A".repeat(31), " ".repeat(40));
        assert_eq!(
            ProposalLine::parse(l.as_bytes()),
            Err(Error::BadProposal("missing size"))
        );
        assert!(ProposalLine::parse(b"FB X N0 AT N0 B 4").is_err());
        assert!(ProposalLine::parse(b"FB P N0 AT N0 B -4").is_err());
        assert!(ProposalLine::parse(b"FB P N0 AT N0 B 99999999999").is_err());
        assert!(FbbLine::parse(b"FS +-+-+-").is_err());
        assert!(FbbLine::parse(b"FS ").is_err());
        // Found by fuzzing: `A` without digits is an accept, as it is emitted.
        assert_eq!(
            FbbLine::parse(b"FSA").unwrap(),
            FbbLine::Answer(vec![AnswerCode::Accept])
        );
        assert!(FbbLine::parse(b"FS +?").is_err());
        assert!(FbbLine::parse(b"F> 1234").is_err());
        assert!(FbbLine::parse(b"FX").is_err());
    }

    #[test]
    fn answer_dialects() {
        let a = [
            AnswerCode::Accept,
            AnswerCode::Reject,
            AnswerCode::Later,
            AnswerCode::Resume(77),
            AnswerCode::Held,
        ];
        let mut out = Vec::new();
        emit_answer(&a, Dialect::Plain, &mut out);
        assert_eq!(out, b"FS +-=!77H");
        out.clear();
        emit_answer(&a, Dialect::B1, &mut out);
        assert_eq!(out, b"FS YNLA77H");
    }

    fn call() -> impl Strategy<Value = String> {
        "[A-Z0-9]{1,6}"
    }

    fn answer() -> impl Strategy<Value = AnswerCode> {
        prop_oneof![
            Just(AnswerCode::Accept),
            Just(AnswerCode::Reject),
            Just(AnswerCode::Later),
            (1u32..).prop_map(AnswerCode::Resume),
            Just(AnswerCode::RejectedByRule),
            Just(AnswerCode::Held),
            Just(AnswerCode::FormatError),
        ]
    }

    proptest! {
        #[test]
        fn proposal_round_trip(
            compressed: bool, k in 0usize..3, from in call(), to in call(),
            at in "[A-Z0-9.#]{1,31}", bid in "[A-Z0-9_]{1,12}", size: u32,
        ) {
            let kind = [MsgType::Personal, MsgType::Bulletin, MsgType::Traffic][k];
            let p = ProposalLine::Fbb(FbbProposal {
                compressed, kind, from: &from, at: &at, to: &to, bid: &bid, size,
            });
            let mut out = Vec::new();
            p.emit(&mut out);
            prop_assert!(out.len() <= PROPOSAL_READ_LEN);
            prop_assert_eq!(ProposalLine::parse(&out).unwrap(), p);
        }

        #[test]
        fn b2_round_trip(cms: bool, mid in "[A-Z0-9]{1,12}", size: u32, csize: u32) {
            let p = ProposalLine::B2(B2Proposal { cms, mid: &mid, size, compressed_size: csize });
            let mut out = Vec::new();
            p.emit(&mut out);
            prop_assert_eq!(ProposalLine::parse(&out).unwrap(), p);
        }

        #[test]
        fn fs_round_trip(a in proptest::collection::vec(answer(), 1..=MAX_PROPOSALS), b1: bool) {
            let mut out = Vec::new();
            emit_answer(&a, if b1 { Dialect::B1 } else { Dialect::Plain }, &mut out);
            prop_assert_eq!(FbbLine::parse(&out).unwrap(), FbbLine::Answer(a));
        }

        #[test]
        fn checksum_closes(lines in proptest::collection::vec("[ -~]{0,80}", 0..6)) {
            let sum = lines.iter().fold(0u8, |s, l| checksum_add(s, l.as_bytes()));
            prop_assert_eq!(sum.wrapping_add(checksum_value(sum)), 0);
        }

        #[test]
        fn parse_never_panics(line in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = FbbLine::parse(&line);
        }
    }
}
