//! A stored message as each forwarding payload carries it ([`qtc_fbb::Payload`]), and a
//! received one back: the one place the daemon tells payloads apart. Which payload a mode
//! carries, and whether it sends a compressed form, is the mode table's to say
//! ([`qtc_fbb::Mode::payload`], [`qtc_fbb::Mode::packed`]). A new payload is an arm in each
//! function here, its conversion beside them (as `b2f.rs` is B2F's), and a table for its
//! compressed form in the store (`qtc_store::FORMS`).

use qtc_callsign::Callsign;
use qtc_fbb::{Bytes, Mode, Payload, Proposal, SidInfo};
use qtc_store::{Incoming, Pending};

use super::{b2f, peer_text};

/// What the session sends for `p` in `payload`: the R: lines and the body (FBB text, taken out
/// of `p` without a copy), or the B2F message; `mbo` is our callsign.
pub(super) fn text(payload: Payload, p: &mut Pending, mbo: &str) -> Bytes {
    match payload {
        Payload::FbbText => Bytes::from(std::mem::take(&mut p.text)),
        Payload::B2f => Bytes::from(b2f::encode(p, mbo)),
    }
}

/// The compressed form of a message whose payload is `text`: LZHUF with its CRC (B1 framing)
/// of the text as FBB sends it (every line ended by CR LF, escaped so that no line of it is
/// protocol: [`qtc_fbb::wire::body`]), or of the B2F message as it is.
pub(super) fn pack(payload: Payload, text: &[u8]) -> Vec<u8> {
    match payload {
        Payload::FbbText => qtc_lzhuf::compress_with_crc(&qtc_fbb::wire::body::file_text(text)),
        Payload::B2f => qtc_lzhuf::compress_with_crc(text),
    }
}

/// A message `partner` sent (`peer` its SID) as the message to store.
pub(super) fn received(
    proposal: &Proposal,
    title: Bytes,
    text: Bytes,
    peer: Option<&SidInfo>,
    partner: Callsign,
) -> Incoming {
    match proposal.mode.payload() {
        Payload::B2f => b2f::decode(&text).map(|mut m| {
            // LinBPQ puts its R: line and the blank line after it in the body (FBBRoutines.c,
            // CreateB2Message), as in its other modes.
            m.text = peer_text::as_written(m.text, peer, proposal.mode);
            m
        }).unwrap_or_else(|| {
            // Never lost, never refused again: kept whole and held for the sysop.
            tracing::warn!(%partner, bid = %proposal.bid, "received B2 payload is not a B2F message: held for the sysop");
            Incoming {
                kind: qtc_mail::MsgType::Personal,
                from: partner.to_string(),
                to: "SYSOP".into(),
                at: String::new(),
                bid: proposal.bid.clone(),
                title: title.into(),
                text: text.into(),
                hold: true,
                recipients: Vec::new(),
                files: Vec::new(),
                charset: String::new(),
            }
        }),
        Payload::FbbText => Incoming {
            kind: proposal.kind,
            from: proposal.from.clone(),
            to: proposal.to.clone(),
            at: proposal.at.clone(),
            bid: proposal.bid.clone(),
            // The session's buffers, taken over without a copy.
            title: title.into(),
            text: peer_text::as_written(text.into(), peer, proposal.mode),
            hold: false,
            recipients: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        },
    }
}

/// A message received in `mode` on a link whose 0xFF rule is a guess (`guessed`: an unknown
/// software that spoke no telnet on the telnet port), whose text may have been changed by the
/// guess: sent as text, and every 0xFF of it comes doubled, as a peer that doubles them would
/// send any 0xFF. It is held for the sysop (who can release it, `qtc msg release`), not stored
/// as if known. A lone 0xFF says the peer doubles nothing; a compressed block that parsed has
/// had its sum and CRC checked.
pub(super) fn hold_if_framing_guessed(
    msg: &mut Incoming,
    mode: Mode,
    guessed: bool,
    partner: Callsign,
) {
    let doubled_or_not = || {
        let mut runs = msg.text.split(|&b| b != 0xff).filter(|r| !r.is_empty());
        let first = runs.next();
        first.is_some() && first.into_iter().chain(runs).all(|r| r.len() % 2 == 0)
    };
    if guessed && !mode.is_compressed() && !msg.hold && doubled_or_not() {
        tracing::warn!(%partner, bid = %msg.bid, "held for the sysop: its 0xFF bytes all come doubled, and whether the partner doubles them is not known (set iac_escaped for it, or have it call the forwarding port)");
        msg.hold = true;
    }
}

/// How a session in `mode` (`None`: not agreed yet) reads its partner's queue.
pub(super) fn form(mode: Option<Mode>) -> qtc_store::Form {
    qtc_store::Form {
        packed: mode.and_then(Mode::packed).map(Payload::name),
        every_part: mode.is_some_and(|m| m.payload().carries_every_part()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_compressed_form_a_mode_sends_has_a_table_in_the_store() {
        for m in Mode::ALL {
            if let Some(name) = form(Some(m)).packed {
                assert!(
                    qtc_store::FORMS.iter().any(|(n, _)| *n == name),
                    "{m}: {name}"
                );
            }
        }
    }

    fn bulletin() -> Pending {
        Pending {
            number: 1,
            kind: qtc_mail::MsgType::Bulletin,
            from: "N0USR".into(),
            to: "ALL".into(),
            at: "WW".into(),
            bid: "1_N0AAA".into(),
            subject: b"Hello".to_vec(),
            text: b"R:261202/1231Z @:N0AAA #:1 $:1_N0AAA\r\nbody\r\n".to_vec(),
            created: 1_796_214_665,
            compressed: None,
            recipients: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        }
    }

    #[test]
    fn text_whose_0xff_a_guessed_framing_may_have_doubled_is_held() {
        let incoming = |text: &[u8]| Incoming {
            kind: qtc_mail::MsgType::Personal,
            from: "N0XYZ".into(),
            to: "N0USR".into(),
            at: String::new(),
            bid: "1_N0XYZ".into(),
            title: b"t".to_vec(),
            text: text.to_vec(),
            hold: false,
            recipients: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        };
        let held = |text: &[u8], mode, guessed| {
            let mut m = incoming(text);
            hold_if_framing_guessed(&mut m, mode, guessed, "N0XYZ".parse().unwrap());
            m.hold
        };
        // Every 0xFF doubled, on a guessed link, as text: it may be one 0xFF or two.
        assert!(held(b"a \xff\xff b\xff\xff\xff\xff", Mode::Mbl, true));
        assert!(held(b"\xff\xff", Mode::FbbAscii, true));
        // A lone 0xFF: nothing doubles them. No 0xFF, a known link, a checked block: stored.
        assert!(!held(b"a \xff\xff b \xff c", Mode::Mbl, true));
        assert!(!held(b"plain", Mode::Mbl, true));
        assert!(!held(b"\xff\xff", Mode::Mbl, false));
        assert!(!held(b"\xff\xff", Mode::B1, true));
    }

    #[test]
    fn each_payload_and_its_compressed_form() {
        let limits = qtc_lzhuf::Limits::default();
        // B2: the B2F message (Date: when stored, Mbo: us), compressed; it decodes back.
        let b2f = text(Payload::B2f, &mut bulletin(), "N0AAA");
        assert!(b2f.starts_with(b"Mid: 1_N0AAA\r\nDate: 2026/12/02 12:31\r\n"));
        let packed = pack(Payload::B2f, &b2f);
        assert_eq!(
            qtc_lzhuf::decompress_with_crc(&packed, &limits).unwrap(),
            b2f
        );
        assert_eq!(b2f::decode(&b2f).unwrap().bid, "1_N0AAA");
        // FBB text: as stored; its form is made from the text as it goes on the wire.
        let mut p = bulletin();
        let stored = p.text.clone();
        let fbb = text(Payload::FbbText, &mut p, "N0AAA");
        assert_eq!(fbb, stored);
        let want = qtc_lzhuf::compress_with_crc(&qtc_fbb::wire::body::file_text(&stored));
        assert_eq!(pack(Payload::FbbText, &fbb), want);
    }
}
