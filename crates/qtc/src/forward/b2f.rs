//! Our messages as Winlink B2F messages and back (the B2F payload, B2 mode). The R: lines
//! travel at the top of the body, as LinBPQ sends them; `Type:` carries P/B/T, `To:` carries
//! `to@at`.
//!
//! The B2F form of a message depends only on the message and our callsign (`Date:` is when it
//! was stored here), so its compressed form is made once and sent to every B2 partner.

use qtc_fbb::wire::b2f::{File, Header, Message};
use qtc_mail::{MsgType, Utc};
use qtc_store::{Attachment, Incoming, Pending, Recipient};

/// The B2F form of a queued message; `mbo` is our callsign. Its recipients and attachments go
/// in as received; the body's charset is declared (see [`body_charset`]).
pub fn encode(p: &Pending, mbo: &str) -> Vec<u8> {
    let t = Utc::from_unix(p.created);
    let date = format!(
        "{:04}/{:02}/{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    );
    // Mail `@` this BBS is the Winlink station's own: a bare call (wl2k-go reads any
    // `CALL@HOST` as an internet address, `SMTP:CALL@HOST`).
    let here = p.at.split('.').next().unwrap_or("");
    let to = if p.at.is_empty() || here.eq_ignore_ascii_case(mbo) {
        p.to.clone()
    } else {
        format!("{}@{}", p.to, p.at)
    };
    let kind = match p.kind {
        MsgType::Personal => "Private",
        MsgType::Bulletin => "Bulletin",
        MsgType::Traffic => "Traffic",
    };
    let charset = format!("text/plain; charset={}", body_charset(p));
    let len = p.text.len().to_string();
    let file_headers: Vec<String> = p
        .files
        .iter()
        .map(|f| format!("{} {}", f.data.len(), String::from_utf8_lossy(&f.name)))
        .collect();
    let header = |name, value| Header { name, value };
    let mut headers = vec![
        header("Mid", p.bid.as_bytes()),
        header("Date", date.as_bytes()),
        header("Type", kind.as_bytes()),
        header("From", p.from.as_bytes()),
    ];
    if p.recipients.is_empty() {
        headers.push(header("To", to.as_bytes()));
    }
    for r in &p.recipients {
        headers.push(header(if r.cc { "Cc" } else { "To" }, r.addr.as_bytes()));
    }
    headers.extend([
        header("Subject", &p.subject),
        header("Mbo", mbo.as_bytes()),
        header("Content-Type", charset.as_bytes()),
        header("Body", len.as_bytes()),
    ]);
    headers.extend(file_headers.iter().map(|f| header("File", f.as_bytes())));
    let msg = Message {
        headers,
        body: &p.text,
        files: p
            .files
            .iter()
            .map(|f| File {
                name: &f.name,
                data: &f.data,
            })
            .collect(),
    };
    let size = p.text.len() + p.files.iter().map(|f| f.data.len() + 2).sum::<usize>();
    let mut out = Vec::with_capacity(size + 300);
    msg.emit(&mut out);
    out
}

/// A received B2F message as a message to store; `None` when it is not B2F. The first `To:`
/// (else `Cc:`) gives `to`/`at`; every recipient and attachment is kept with it.
pub fn decode(text: &[u8]) -> Option<Incoming> {
    let m = Message::parse(text).ok()?;
    let field = |name: &str| {
        String::from_utf8_lossy(m.get(name).unwrap_or_default())
            .trim()
            .to_string()
    };
    let kind = match field("Type").to_ascii_lowercase().as_str() {
        "bulletin" => MsgType::Bulletin,
        "traffic" => MsgType::Traffic,
        _ => MsgType::Personal,
    };
    let recipients: Vec<Recipient> = m
        .headers
        .iter()
        .filter_map(|h| {
            let cc = h.name.eq_ignore_ascii_case("Cc");
            (cc || h.name.eq_ignore_ascii_case("To")).then(|| Recipient {
                cc,
                addr: String::from_utf8_lossy(h.value).trim().to_string(),
            })
        })
        .collect();
    let first = recipients
        .iter()
        .find(|r| !r.cc)
        .or(recipients.first())
        .map(Recipient::split)
        .unwrap_or_default();
    let (to, at) = first;
    let from = field("From");
    let from = from.split('@').next().unwrap_or_default().to_string();
    let files = m
        .files
        .iter()
        .map(|f| Attachment {
            name: f.name.to_vec(),
            data: f.data.to_vec(),
        })
        .collect();
    Some(Incoming {
        kind,
        from,
        to,
        at,
        bid: String::from_utf8_lossy(m.mid()).trim().to_string(),
        title: m.subject().to_vec(),
        text: m.body.to_vec(),
        hold: false,
        recipients: if recipients.len() > 1 {
            recipients
        } else {
            Vec::new()
        },
        files,
        charset: declared_charset(m.get("Content-Type").unwrap_or_default()),
    })
}

/// The charset to declare for a body: the one it came declared in; else UTF-8 when it is
/// valid UTF-8 (ASCII included); else ISO-8859-1, which Winlink clients assume for a body
/// declared in none (wl2k-go's `DefaultCharset`: Winlink Express writes bodies in it) and the
/// 8-bit set BBS mail is mostly written in.
fn body_charset(p: &Pending) -> &str {
    if !p.charset.is_empty() {
        &p.charset
    } else if std::str::from_utf8(&p.text).is_ok() {
        "UTF-8"
    } else {
        "ISO-8859-1"
    }
}

/// The `charset=` parameter of a `Content-Type` value (`text/plain; charset="ISO-8859-1"`),
/// upper case; empty when there is none.
fn declared_charset(content_type: &[u8]) -> String {
    let text = String::from_utf8_lossy(content_type);
    text.split(';')
        .filter_map(|p| p.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').to_ascii_uppercase())
        .filter(|v| v.len() <= 40 && v.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let p = Pending {
            number: 3,
            kind: MsgType::Bulletin,
            from: "N0AAA".into(),
            to: "ALL".into(),
            at: "WW".into(),
            bid: "3_N0AAA".into(),
            subject: b"Hello \xff".to_vec(),
            text: b"R:261202/1231Z @:N0AAA #:3 $:3_N0AAA\r\nbody \x80\r\n".to_vec(),
            created: 1_796_214_665,
            compressed: None,
            recipients: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        };
        let b2f = encode(&p, "N0AAA");
        assert!(b2f.starts_with(b"Mid: 3_N0AAA\r\nDate: 2026/12/02 12:31\r\nType: Bulletin\r\n"));
        let back = decode(&b2f).unwrap();
        assert_eq!(back.kind, MsgType::Bulletin);
        assert_eq!((back.to.as_str(), back.at.as_str()), ("ALL", "WW"));
        assert_eq!(back.from, "N0AAA");
        assert_eq!(back.bid, "3_N0AAA");
        assert_eq!(back.title, p.subject);
        assert_eq!(back.text, p.text);
    }

    #[test]
    fn every_recipient_and_file_travels_and_the_charset_is_declared() {
        let pat =
            b"Mid: ABCDEFGHIJKL\r\nDate: 2026/12/03 17:11\r\nType: Private\r\nFrom: N0PAT\r\n\
To: N0USR\r\nTo: N0ABC@N0BBS\r\nCc: N0OTH\r\nSubject: =?UTF-8?q?Gr=C3=BC=C3=9Fe?=\r\nMbo: N0PAT\r\n\
Body: 4\r\nFile: 3 a.bin\r\nFile: 2 b c.txt\r\n\r\nK\xf6ln\r\n\x00\xff\x01\r\nhi\r\n";
        let m = decode(pat).unwrap();
        assert_eq!((m.to.as_str(), m.at.as_str()), ("N0USR", ""));
        assert_eq!(m.recipients.len(), 3);
        assert_eq!(m.recipients[1].split(), ("N0ABC".into(), "N0BBS".into()));
        assert!(m.recipients[2].cc);
        assert_eq!(m.files[0].data, b"\x00\xff\x01");
        assert_eq!(m.files[1].name, b"b c.txt");
        let p = Pending {
            number: 1,
            kind: m.kind,
            from: m.from.clone(),
            to: m.to.clone(),
            at: m.at.clone(),
            bid: m.bid.clone(),
            subject: m.title.clone(),
            text: m.text.clone(),
            created: 0,
            compressed: None,
            recipients: m.recipients.clone(),
            files: m.files.clone(),
            charset: m.charset.clone(),
        };
        let out = encode(&p, "N0QTC");
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.contains("To: N0USR\r\nTo: N0ABC@N0BBS\r\nCc: N0OTH\r\n"),
            "{text}"
        );
        assert!(
            text.contains("Content-Type: text/plain; charset=ISO-8859-1\r\n"),
            "{text}"
        );
        let back = decode(&out).unwrap();
        assert_eq!((back.recipients, back.files), (m.recipients, m.files));
        assert_eq!(back.charset, "ISO-8859-1");
        assert_eq!(declared_charset(b"text/plain; charset=\"utf-8\""), "UTF-8");
        assert_eq!(declared_charset(b"text/plain"), "");
    }

    #[test]
    fn a_body_is_declared_in_the_charset_it_came_in_else_guessed() {
        let mut p = Pending {
            number: 1,
            kind: MsgType::Personal,
            from: "N0AAA".into(),
            to: "N0PAT".into(),
            at: String::new(),
            bid: "1_N0AAA".into(),
            subject: b"s".to_vec(),
            text: "K\u{f6}ln\r\n".as_bytes().to_vec(),
            created: 0,
            compressed: None,
            recipients: Vec::new(),
            files: Vec::new(),
            charset: String::new(),
        };
        let declared = |p: &Pending| decode(&encode(p, "N0AAA")).unwrap().charset;
        // Undeclared: UTF-8 when it is, else what Winlink clients assume (ISO-8859-1).
        assert_eq!(declared(&p), "UTF-8");
        p.text = b"K\xf6ln\r\n".to_vec();
        assert_eq!(declared(&p), "ISO-8859-1");
        // Declared when it came (a Winlink Express message in Windows-1252): relayed as such.
        p.text = b"5 \x80\r\n".to_vec();
        p.charset = "WINDOWS-1252".into();
        assert_eq!(declared(&p), "WINDOWS-1252");
    }
}
