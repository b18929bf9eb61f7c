//! A BBS message in RFC 5322 / MIME form, as POP3 RETR, IMAP FETCH and NNTP ARTICLE send it.
//!
//! Written here rather than with a builder crate because IMAP needs to know exactly where each
//! part of what it sends starts and ends (BODYSTRUCTURE, `BODY[1]`, `BODY[2.MIME]`), and the
//! form must be the same every time so its size is stable.
//!
//! - The body keeps its bytes: it is sent `8bit` in the charset it was declared in (Winlink
//!   `Content-Type`), else UTF-8 when it is UTF-8, else ISO-8859-1 (as B2F forwarding declares
//!   it); base64 when a line is longer than 998 bytes or holds NUL or a bare CR.
//! - Attachments go base64, so their bytes come back exactly, with the type the client sent
//!   (B2F `File:` parts, which have none, as `application/octet-stream`).
//! - `From:` and `To:` are `CALL@HOME` addresses ([`crate::addr::email`]); `Message-ID:` is
//!   the BID; a reply's `In-Reply-To:` and `References:` are kept; the R: lines go in
//!   `X-BBS-Route:` headers.

use std::fmt::Write as _;
use std::ops::Range;

use base64::Engine as _;
use qtc_mail::{Message, MsgType, Utc};

use crate::store::{Attachment, Stored, Thread};
use crate::Settings;

/// One MIME part of a rendered message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// Its MIME header (with the blank line after it).
    pub mime: Range<usize>,
    /// Its body as sent (encoded).
    pub body: Range<usize>,
    /// Media type and subtype, e.g. `("TEXT", "PLAIN")`.
    pub media: (String, String),
    /// Content-Type parameters.
    pub params: Vec<(String, String)>,
    /// Content-Transfer-Encoding: `8BIT` or `BASE64`.
    pub encoding: &'static str,
    /// Lines of the encoded body.
    pub lines: usize,
    /// The attachment's file name.
    pub name: Option<String>,
    /// What it holds in turn: a multipart's parts, or for `message/rfc822` one part for the
    /// message inside (its `mime` that message's header, its `body` that message's body).
    /// Empty for any other part.
    pub inner: Vec<Part>,
}

/// A rendered message and where its pieces are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    /// The whole message.
    pub bytes: Vec<u8>,
    /// Length of the top header, blank line included.
    pub header_len: usize,
    /// The body parts: one for a plain message, the text then each attachment for a
    /// multipart one.
    pub parts: Vec<Part>,
    /// Multipart.
    pub multipart: bool,
    /// The multipart's subtype (`MIXED`, `ALTERNATIVE`...).
    pub subtype: String,
    /// The multipart boundary.
    pub boundary: String,
}

/// Renders a stored message with its attachments.
pub fn render(stored: &Stored, s: &Settings) -> Rendered {
    let (m, files) = (&stored.message, &stored.files);
    let boundary = format!("=_qtc_{}", m.header.number);
    let mut out = Vec::with_capacity(m.body.len() + 1024);
    out.extend_from_slice(top_header(m, &stored.thread, s).as_bytes());
    let charset = body_charset(m);
    let (text_enc, text) = encode_text(&m.body);
    let text_params = vec![("CHARSET".to_string(), charset)];
    if files.is_empty() {
        out.extend_from_slice(
            format!(
                "MIME-Version: 1.0\r\nContent-Type: text/plain; charset={}\r\nContent-Transfer-Encoding: {}\r\n\r\n",
                text_params[0].1,
                text_enc.to_ascii_lowercase()
            )
            .as_bytes(),
        );
        let header_len = out.len();
        out.extend_from_slice(&text);
        let part = Part {
            mime: 0..0,
            body: header_len..out.len(),
            media: ("TEXT".into(), "PLAIN".into()),
            params: text_params,
            encoding: text_enc,
            lines: count_lines(&text),
            name: None,
            inner: Vec::new(),
        };
        return Rendered {
            bytes: out,
            header_len,
            parts: vec![part],
            multipart: false,
            subtype: String::new(),
            boundary,
        };
    }
    out.extend_from_slice(
        format!(
            "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n"
        )
        .as_bytes(),
    );
    let header_len = out.len();
    out.extend_from_slice(b"This is a multi-part message in MIME format.\r\n");
    let mut parts = Vec::with_capacity(files.len() + 1);
    let head = format!(
        "Content-Type: text/plain; charset={}\r\nContent-Transfer-Encoding: {}\r\n\r\n",
        text_params[0].1,
        text_enc.to_ascii_lowercase()
    );
    parts.push(add_part(&mut out, &boundary, &head, &text, |p| Part {
        media: ("TEXT".into(), "PLAIN".into()),
        params: text_params.clone(),
        encoding: text_enc,
        ..p
    }));
    for f in files {
        parts.push(attachment_part(&mut out, &boundary, f));
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    Rendered {
        bytes: out,
        header_len,
        parts,
        multipart: true,
        subtype: "MIXED".into(),
        boundary,
    }
}

/// Appends an attachment as a base64 part of its own type.
fn attachment_part(out: &mut Vec<u8>, boundary: &str, f: &Attachment) -> Part {
    let name = file_name(&f.name);
    let (media, params) = media_type(&f.mime);
    let mut ctype = format!("{}/{}", media.0, media.1).to_ascii_lowercase();
    for (k, v) in &params {
        let _ = write!(ctype, "; {}={v}", k.to_ascii_lowercase());
    }
    let head = format!(
        "Content-Type: {ctype}; name=\"{name}\"\r\n\
         Content-Disposition: attachment; filename=\"{name}\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n"
    );
    let body = base64_lines(&f.data);
    let mut params = params;
    params.push(("NAME".into(), name.clone()));
    add_part(out, boundary, &head, &body, |p| Part {
        media,
        params,
        encoding: "BASE64",
        name: Some(name),
        ..p
    })
}

/// A stored type (`text/plain; charset=utf-8`) as media type and parameters, upper case;
/// `application/octet-stream` when none is kept (checked again: only tokens reach the header).
fn media_type(mime: &str) -> ((String, String), Vec<(String, String)>) {
    let mime = qtc_mail::mime_type(mime);
    let mut fields = mime.split("; charset=");
    let (t, sub) = fields
        .next()
        .and_then(|t| t.split_once('/'))
        .unwrap_or(("application", "octet-stream"));
    let params = fields
        .next()
        .map(|cs| ("CHARSET".to_string(), cs.to_string()))
        .into_iter()
        .collect();
    ((t.to_ascii_uppercase(), sub.to_ascii_uppercase()), params)
}

/// Appends one part after its boundary line; `fill` completes its description.
fn add_part(
    out: &mut Vec<u8>,
    boundary: &str,
    head: &str,
    body: &[u8],
    fill: impl FnOnce(Part) -> Part,
) -> Part {
    out.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
    let mime_start = out.len();
    out.extend_from_slice(head.as_bytes());
    let body_start = out.len();
    out.extend_from_slice(body);
    let part = Part {
        mime: mime_start..body_start,
        body: body_start..out.len(),
        media: (String::new(), String::new()),
        params: Vec::new(),
        encoding: "8BIT",
        lines: count_lines(body),
        name: None,
        inner: Vec::new(),
    };
    fill(part)
}

fn top_header(m: &Message, thread: &Thread, s: &Settings) -> String {
    let h = &m.header;
    let mut t = String::with_capacity(512);
    for line in String::from_utf8_lossy(&m.rlines).lines() {
        if !line.trim().is_empty() {
            let _ = write!(t, "X-BBS-Route: {}\r\n", ascii_only(line));
        }
    }
    let from_home = crate::addr::origin(&m.rlines);
    let _ = write!(t, "Date: {}\r\n", rfc5322_date(h.created));
    let _ = write!(
        t,
        "From: {}\r\n",
        crate::addr::email(&h.from, &from_home, s)
    );
    let to = match h.kind {
        MsgType::Bulletin => format!(
            "bull/{}@{}",
            h.to,
            if h.at.is_empty() { &s.domain } else { &h.at }
        ),
        _ => crate::addr::email(&h.to, &h.at, s),
    };
    // Further addressees (a Winlink message's second To:) are To:, copies Cc:.
    let (cc, more_to): (Vec<&String>, Vec<&String>) =
        m.copies.iter().partition(|c| m.cc.contains(c));
    let email = |calls: Vec<&String>| -> Vec<String> {
        calls.iter().map(|c| crate::addr::email(c, "", s)).collect()
    };
    let to: Vec<String> = std::iter::once(to).chain(email(more_to)).collect();
    let _ = write!(t, "To: {}\r\n", to.join(", "));
    if !cc.is_empty() {
        let _ = write!(t, "Cc: {}\r\n", email(cc).join(", "));
    }
    let _ = write!(t, "Subject: {}\r\n", encode_header(&h.subject));
    let _ = write!(t, "Message-ID: <{}@{}>\r\n", ascii_only(&h.bid), s.domain);
    for (name, value) in [
        ("In-Reply-To", &thread.in_reply_to),
        ("References", &thread.references),
    ] {
        if !value.is_empty() {
            let _ = write!(t, "{name}: {}\r\n", ascii_only(value));
        }
    }
    let _ = write!(t, "X-BBS-Msg: {} {}\r\n", h.number, h.kind.letter());
    t
}

/// Keeps printable ASCII, replacing anything else with `?` (header fields must be ASCII).
fn ascii_only(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// A file name safe inside a quoted MIME parameter.
fn file_name(name: &[u8]) -> String {
    let n: String = String::from_utf8_lossy(name)
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if n.is_empty() {
        "file".into()
    } else {
        n
    }
}

/// The charset a body is declared in (the rule of B2F forwarding).
fn body_charset(m: &Message) -> String {
    if !m.charset.is_empty() {
        m.charset.clone()
    } else if std::str::from_utf8(&m.body).is_ok() {
        "UTF-8".into()
    } else {
        "ISO-8859-1".into()
    }
}

/// The body as sent: its bytes (`8BIT`) when every line ends in CR LF within 998 bytes and
/// holds no NUL; base64 otherwise.
fn encode_text(body: &[u8]) -> (&'static str, Vec<u8>) {
    let mut clean = true;
    for line in body.split_inclusive(|&b| b == b'\n') {
        let content = line.strip_suffix(b"\r\n").unwrap_or(line);
        if content.len() > 998 || content.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
            clean = false;
            break;
        }
    }
    if !clean {
        return ("BASE64", base64_lines(body));
    }
    let mut text = body.to_vec();
    if !text.is_empty() && !text.ends_with(b"\r\n") {
        text.extend_from_slice(b"\r\n");
    }
    ("8BIT", text)
}

/// Base64 in lines of 76 characters, CR LF ended.
pub fn base64_lines(data: &[u8]) -> Vec<u8> {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    let mut out = Vec::with_capacity(encoded.len() + encoded.len() / 38 + 2);
    for chunk in encoded.as_bytes().chunks(76) {
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn count_lines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

/// Lines of a stored text: its line ends, and a last line without one (NNTP's `:lines`).
pub fn text_lines(b: &[u8]) -> u64 {
    let last = u64::from(!b.is_empty() && !b.ends_with(b"\n"));
    count_lines(b) as u64 + last
}

/// A header value: printable ASCII as it is (Winlink subjects may already hold RFC 2047
/// words); else RFC 2047 base64 words of UTF-8 (or ISO-8859-1 when it is not UTF-8), folded.
pub fn encode_header(v: &[u8]) -> String {
    if v.iter().all(|&b| (0x20..0x7f).contains(&b)) {
        return String::from_utf8_lossy(v).into_owned();
    }
    let (charset, text) = match std::str::from_utf8(v) {
        Ok(t) => ("UTF-8", t.to_string()),
        Err(_) => ("ISO-8859-1", v.iter().map(|&b| char::from(b)).collect()),
    };
    let mut words = Vec::new();
    let mut chunk = Vec::new();
    for c in text.chars() {
        let mut buf = [0u8; 4];
        let bytes: &[u8] = if charset == "UTF-8" {
            c.encode_utf8(&mut buf).as_bytes()
        } else {
            buf[0] = c as u32 as u8;
            &buf[..1]
        };
        if chunk.len() + bytes.len() > 45 {
            words.push(std::mem::take(&mut chunk));
        }
        chunk.extend_from_slice(bytes);
    }
    words.push(chunk);
    words
        .iter()
        .map(|w| {
            format!(
                "=?{charset}?B?{}?=",
                base64::engine::general_purpose::STANDARD.encode(w)
            )
        })
        .collect::<Vec<_>>()
        .join("\r\n ")
}

/// `Wed, 02 Dec 2026 12:31:05 +0000`.
pub fn rfc5322_date(unix: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let t = Utc::from_unix(unix);
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} +0000",
        DAYS[unix.div_euclid(86_400).rem_euclid(7) as usize],
        t.day,
        MONTHS[(t.month as usize).clamp(1, 12) - 1],
        t.year,
        t.hour,
        t.minute,
        t.second
    )
}

/// `02-Dec-2026 12:31:05 +0000` (IMAP INTERNALDATE).
pub fn imap_date(unix: i64) -> String {
    let d = rfc5322_date(unix);
    // "Wed, 02 Dec 2026 12:31:05 +0000" -> "02-Dec-2026 12:31:05 +0000"
    let rest = &d[5..];
    format!("{}-{}-{}", &rest[..2], &rest[3..6], &rest[7..])
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::Attachment;
    use qtc_mail::{FileInfo, MessageHeader, MsgStatus};

    pub(crate) fn stored(body: &[u8], files: Vec<Attachment>) -> Stored {
        Stored {
            message: message(body),
            files,
            thread: Thread::default(),
        }
    }

    pub(crate) fn message(body: &[u8]) -> Message {
        Message {
            header: MessageHeader {
                number: 7,
                kind: MsgType::Personal,
                status: MsgStatus::New,
                to: "N0OTH".into(),
                at: String::new(),
                from: "N0USR".into(),
                bid: "7_N0CALL".into(),
                subject: "Grüße".as_bytes().to_vec(),
                size: body.len() as u64,
                created: 1_796_214_665,
            },
            rlines: b"R:261202/1231Z @:N0CALL.#NCA.CA.USA.NOAM #:7 $:7_N0CALL\r\n".to_vec(),
            body: body.to_vec(),
            read_count: 0,
            copies: Vec::new(),
            cc: Vec::new(),
            files: Vec::<FileInfo>::new(),
            charset: String::new(),
        }
    }

    #[test]
    fn a_plain_message_and_one_with_files() {
        let s = crate::addr::tests::settings();
        let r = render(&stored(b"Hello\r\nK\xf6ln\r\n", Vec::new()), &s);
        let text = String::from_utf8_lossy(&r.bytes);
        assert!(text.contains("From: N0USR@bbs.example.org\r\n"), "{text}");
        assert!(text.contains("To: N0OTH@bbs.example.org\r\n"), "{text}");
        assert!(
            text.contains("Subject: =?UTF-8?B?R3LDvMOfZQ==?=\r\n"),
            "{text}"
        );
        assert!(
            text.contains("Date: Wed, 02 Dec 2026 12:31:05 +0000\r\n"),
            "{text}"
        );
        assert!(text.contains("charset=ISO-8859-1\r\nContent-Transfer-Encoding: 8bit\r\n\r\nHello"));
        assert_eq!(&r.bytes[r.parts[0].body.clone()], b"Hello\r\nK\xf6ln\r\n");
        assert_eq!(imap_date(1_796_214_665), "02-Dec-2026 12:31:05 +0000");
        let file = |mime: &str, data: &[u8]| Attachment {
            name: b"a.bin".to_vec(),
            mime: mime.into(),
            data: data.to_vec(),
        };
        let files = vec![
            file("", &[0u8, 255, 1]),
            file("text/plain; charset=us-ascii", b"one\ntwo\n"),
        ];
        let mut st = stored(b"x\r\n", files);
        st.thread.in_reply_to = "<1_N0CALL@bbs>".into();
        let r = render(&st, &s);
        assert!(r.multipart);
        assert_eq!(r.parts.len(), 3);
        assert_eq!(&r.bytes[r.parts[1].body.clone()], b"AP8B\r\n");
        assert_eq!(r.parts[2].media, ("TEXT".into(), "PLAIN".into()));
        let text = String::from_utf8_lossy(&r.bytes);
        assert!(text.contains("In-Reply-To: <1_N0CALL@bbs>\r\n"), "{text}");
        assert!(
            text.contains("Content-Type: text/plain; charset=us-ascii; name=\"a.bin\""),
            "{text}"
        );
        let parsed = mail_parser::MessageParser::default()
            .parse(&r.bytes)
            .unwrap();
        assert_eq!(parsed.attachment(0).unwrap().contents(), &[0u8, 255, 1]);
        assert_eq!(parsed.attachment(1).unwrap().contents(), b"one\ntwo\n");
        assert_eq!(parsed.body_text(0).unwrap().trim_end(), "x");
        assert_eq!(encode_header(b"plain"), "plain");
    }
}
