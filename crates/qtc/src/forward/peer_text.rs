//! Blank lines a partner's software puts around the text of the messages it forwards, taken
//! back off on arrival so that a message is stored as its author wrote it (docs/forwarding.md):
//! - **JNOS** (every message it forwards, whoever wrote it; `fbbsendmsg` in JNOS's fbbfwd.c):
//!   a blank line between its R: lines and a body whose first line is not empty, and the blank
//!   line that ends each message in its mbox-style area files.
//! - **LinBPQ** and its builds (R: stamp `BPQ6.0.25`, `BPQK6.0.25`, `LinBPQ6.0.25`): a blank
//!   line after its R: line in a message it originated (it has no R: line of its own), in
//!   every mode (in B2 at the top of the B2F body: `CreateB2Message` in FBBRoutines.c);
//!   in MBL, the line end it puts before its closing `/ex` or Ctrl-Z after a body already
//!   ended by one.
//!
//! An author's own blank line in those places cannot be told from the partner's: it goes too.

use qtc_fbb::{Mode, SidInfo};
use qtc_mail::route::{join_rlines, split_rlines};

/// The partner software whose additions are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Software {
    Jnos,
    Bpq,
    Other,
}

fn software(peer: Option<&SidInfo>) -> Software {
    match peer.map(|p| p.name.to_ascii_uppercase()) {
        Some(n) if n == "JNOS" => Software::Jnos,
        Some(n) if n == "BPQ" => Software::Bpq,
        _ => Software::Other,
    }
}

/// Whether an R: line's last word is the stamp of a LinBPQ build (`RlineVer`: `BPQ` or
/// `BPQK` for its KISS-only build, `LinBPQ` on Linux, then the version).
fn bpq_stamp(rline: &[u8]) -> bool {
    let stamp = rline
        .trim_ascii_end()
        .rsplit(|&b| b == b' ')
        .next()
        .unwrap_or_default();
    let stamp = stamp.strip_prefix(b"Lin").unwrap_or(stamp);
    stamp.starts_with(b"BPQ")
        && stamp[3..]
            .first()
            .is_some_and(|&b| b == b'K' || b.is_ascii_digit())
}

/// The text of a plain-text or B0/B1 message `peer` sent in `mode`, or the body of a B2F
/// message (R: lines, then the body, CR LF line ends), as its author wrote it.
pub fn as_written(text: Vec<u8>, peer: Option<&SidInfo>, mode: Mode) -> Vec<u8> {
    let (rlines, body) = split_rlines(&text);
    let oldest = rlines
        .trim_ascii_end()
        .rsplit(|&b| b == b'\n')
        .next()
        .unwrap_or_default();
    let sw = software(peer);
    let gap = match sw {
        Software::Jnos => true,
        _ => !rlines.is_empty() && bpq_stamp(oldest),
    };
    let split = body;
    let mut body = body;
    if gap {
        body = body.strip_prefix(b"\r\n").unwrap_or(body);
    }
    let trailing = sw == Software::Jnos || (sw == Software::Bpq && !mode.is_batch());
    if trailing {
        if body == b"\r\n" {
            body = &[];
        } else if let Some(b) = body.strip_suffix(b"\r\n\r\n") {
            body = &body[..b.len() + 2];
        }
    }
    if body.len() == split.len() {
        return text;
    }
    join_rlines(rlines, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(name: &str) -> SidInfo {
        SidInfo {
            name: name.into(),
            version: "1".into(),
            flags: Default::default(),
        }
    }

    #[test]
    fn jnos_gap_and_mbox_end_are_dropped() {
        let j = sid("JNOS");
        let sent = b"R:261205/1007z @:N0JNS.#TST.USA.NOAM $:B_N0JNS\r\n\r\nline\r\n\r\n".to_vec();
        assert_eq!(
            as_written(sent, Some(&j), Mode::B1),
            b"R:261205/1007z @:N0JNS.#TST.USA.NOAM $:B_N0JNS\r\nline\r\n"
        );
        // An empty body: only the mbox's blank line came.
        let empty = b"R:261205/1007z @:N0JNS $:C_N0JNS\r\n\r\n".to_vec();
        assert_eq!(
            as_written(empty, Some(&j), Mode::Mbl),
            b"R:261205/1007z @:N0JNS $:C_N0JNS\r\n"
        );
        // From anyone else the blank lines are the author's.
        let other = b"R:x @:N0FBB\r\n\r\nline\r\n\r\n".to_vec();
        assert_eq!(
            as_written(other.clone(), Some(&sid("FBB")), Mode::B1),
            other
        );
    }

    #[test]
    fn a_blank_line_before_a_bodys_own_r_line_is_no_partners_gap() {
        // qtc's blank line before a body starting `R:` (route::join_rlines), as JNOS forwards
        // it on: JNOS adds no gap of its own (the body's first line is blank), and the blank
        // line stays, so the store keeps the body's `R:` line in the body.
        let sent = b"R:j @:N0JNS\r\nR:q @:N0QTC\r\n\r\nR:forged @:N0SYS\r\nline\r\n\r\n".to_vec();
        let got = as_written(sent, Some(&sid("JNOS")), Mode::Mbl);
        assert_eq!(
            got,
            b"R:j @:N0JNS\r\nR:q @:N0QTC\r\n\r\nR:forged @:N0SYS\r\nline\r\n"
        );
        assert_eq!(split_rlines(&got).1, b"R:forged @:N0SYS\r\nline\r\n");
    }

    #[test]
    fn every_bpq_build_stamp_is_known() {
        for stamp in ["BPQ6.0.25", "BPQK6.0.25", "LinBPQ6.0.25", "BPQ1.4.48"] {
            let text = format!("R:261203/1712Z 5@N0BPQ.#NCA {stamp}\r\n\r\nfirst\r\n");
            assert_eq!(
                as_written(text.into_bytes(), None, Mode::B1),
                format!("R:261203/1712Z 5@N0BPQ.#NCA {stamp}\r\nfirst\r\n").into_bytes(),
                "{stamp}"
            );
        }
        let not = b"R:261203/1712Z 5@N0BPQ.#NCA BPQUEST\r\n\r\nfirst\r\n".to_vec();
        assert_eq!(as_written(not.clone(), None, Mode::B1), not);
        // No R: lines: a leading blank line is the author's.
        assert_eq!(
            as_written(b"\r\nbody\r\n".to_vec(), None, Mode::B1),
            b"\r\nbody\r\n"
        );
    }

    #[test]
    fn bpq_mbl_drops_the_line_end_before_its_terminator() {
        let bpq = sid("BPQ");
        let text = b"R:261203/1712Z 5@N0BPQ.#NCA LinBPQ6.0.25\r\n\r\nfirst\r\n\r\n".to_vec();
        assert_eq!(
            as_written(text.clone(), Some(&bpq), Mode::Mbl),
            b"R:261203/1712Z 5@N0BPQ.#NCA LinBPQ6.0.25\r\nfirst\r\n"
        );
        // In FBB modes BPQ adds no such line: a last blank line is the author's.
        assert_eq!(
            as_written(text, Some(&bpq), Mode::B1),
            b"R:261203/1712Z 5@N0BPQ.#NCA LinBPQ6.0.25\r\nfirst\r\n\r\n"
        );
    }
}
