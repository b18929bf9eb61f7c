//! How listings and messages look on the user's screen. Every field written by someone else
//! goes through `qtc_mail::text`, so no escape sequence reaches the user's terminal.

use qtc_mail::text::{visible, visible_bytes, visible_line};
use qtc_mail::{charset, Message, MessageHeader, Utc};

/// The listing's column header.
pub(crate) const LIST_HEADER: &str = "Msg#   TSLD   Size To     @BBS    From   Date/Time Subject\r";

/// One listing line: `Msg# TSLD Size To @BBS From Date/Time Subject`.
pub(crate) fn list_line(h: &MessageHeader) -> String {
    let at = match h.at.split('.').next() {
        Some(first) if !first.is_empty() => {
            // Seven columns, counted in characters (stored addresses may hold any bytes).
            format!("@{}", visible_line(first))
                .chars()
                .take(7)
                .collect()
        }
        _ => String::new(),
    };
    format!(
        "{:<6} {}{}   {:>6} {:<6} {:<7} {:<6} {} {}\r",
        h.number,
        h.kind.letter(),
        h.status.letter(),
        h.size,
        visible_line(&h.to),
        at,
        visible_line(&h.from),
        Utc::from_unix(h.created).list_stamp(),
        visible_line(&charset::decode_header(&h.subject)),
    )
}

/// What `R` (and `V`, with the R: lines) shows before the body; the body follows in pieces
/// ([`body_piece`]), then [`message_tail`].
pub(crate) fn message_head(m: &Message, verbose: bool, out: &mut Vec<u8>) {
    let h = &m.header;
    let t = Utc::from_unix(h.created);
    let to = if h.at.is_empty() {
        h.to.clone()
    } else {
        format!("{}@{}", h.to, h.at)
    };
    out.extend_from_slice(
        format!(
            "Msg #{} {}{}  To: {}  From: {}  Date: {:04}-{:02}-{:02} {:02}:{:02}Z\rBID: {}\rSubject: ",
            h.number,
            h.kind.letter(),
            h.status.letter(),
            visible_line(&to),
            visible_line(&h.from),
            t.year,
            t.month,
            t.day,
            t.hour,
            t.minute,
            visible_line(&h.bid)
        )
        .as_bytes(),
    );
    // Winlink subjects may be RFC 2047 encoded: shown decoded (stored as received).
    out.extend_from_slice(visible_line(&charset::decode_header(&h.subject)).as_bytes());
    out.push(b'\r');
    // Further `To:`s are addressees as much as the first; `Cc:`s are copies.
    for (label, calls) in [("To", m.further_to().join(" ")), ("Cc", m.cc.join(" "))] {
        if !calls.is_empty() {
            out.extend_from_slice(format!("{label}: {}\r", visible_line(&calls)).as_bytes());
        }
    }
    out.push(b'\r');
    if verbose {
        out.extend_from_slice(&visible_bytes(&m.rlines));
    }
}

/// A piece of a body. Bodies go out as stored (the transport maps their line ends), unless the
/// sender declared an 8-bit charset (Winlink `Content-Type`): then they are shown decoded, as
/// UTF-8. Control characters are made visible unless the station allows ANSI art.
pub(crate) fn body_piece(charset: &str, bytes: &[u8], raw_bodies: bool, out: &mut Vec<u8>) {
    let decoded = match charset {
        "" | "UTF-8" | "US-ASCII" => None,
        cs => Some(charset::decode_charset(cs, bytes)),
    };
    match (decoded, raw_bodies) {
        (None, true) => out.extend_from_slice(bytes),
        (None, false) => out.extend_from_slice(&visible_bytes(bytes)),
        (Some(text), true) => out.extend_from_slice(text.as_bytes()),
        (Some(text), false) => out.extend_from_slice(visible(&text).as_bytes()),
    }
}

/// What follows the body; `last` is the body's last byte (`None`: empty body).
pub(crate) fn message_tail(m: &Message, last: Option<u8>, out: &mut Vec<u8>) {
    if last.is_some_and(|b| b != b'\n' && b != b'\r') {
        out.push(b'\r');
    }
    if !m.files.is_empty() {
        // Attachments are not sent to a terminal: the sysop's web pages offer them.
        out.extend_from_slice(format!("Attachments ({}):\r", m.files.len()).as_bytes());
        for f in &m.files {
            let name = charset::decode_8bit(&f.name);
            let name = visible_line(&name);
            out.extend_from_slice(format!("  {name} ({} bytes)\r", f.size).as_bytes());
        }
    }
    let h = &m.header;
    out.extend_from_slice(
        format!(
            "[End of message #{} from {}]\r",
            h.number,
            visible_line(&h.from)
        )
        .as_bytes(),
    );
}
