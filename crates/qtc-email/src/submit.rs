//! What a client submits (SMTP DATA, NNTP POST) made into a BBS message: the subject, the text
//! (the first text part, as UTF-8 with CR LF line ends) and the other parts as attachments,
//! each kept byte for byte with its type. The subject and text pass the checks of the web's
//! compose form ([`qtc_mail::submitted`]); text and attachments together are held to the
//! `[limits] max_message` size.

use mail_parser::{Encoding, MessageParser, MessagePart, MimeHeaders};

use crate::store::{Attachment, Thread};

/// The most attachments a message may carry (B2F's limit in qtc).
pub const MAX_FILES: usize = 32;
/// The longest `In-Reply-To:` or `References:` kept (the newest ids of a long thread).
const MAX_REFERENCES: usize = 1000;

/// Why a submission is refused, in words for the client.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The parts of a submitted message that the BBS keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Subject bytes (UTF-8), cut to the BBS's 80 bytes.
    pub subject: Vec<u8>,
    /// The text, UTF-8, CR LF line ends.
    pub body: Vec<u8>,
    /// Attachments, byte for byte, with their types.
    pub files: Vec<Attachment>,
    /// What it answers.
    pub thread: Thread,
    /// Its `Newsgroups:` header (NNTP POST), if any.
    pub newsgroups: String,
}

/// Parses a submitted message; `max` bounds text and attachments together.
pub fn parse(raw: &[u8], max: usize) -> Result<Parsed, Refused> {
    let m = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| Refused("the message cannot be parsed".into()))?;
    let refused = |e: qtc_mail::submitted::Refused| Refused(e.0);
    let subject = qtc_mail::submitted::subject(m.subject().unwrap_or("")).map_err(refused)?;
    let text = m.body_text(0).unwrap_or_default();
    let body = qtc_mail::submitted::body(&text, usize::MAX).map_err(refused)?;
    let mut files = Vec::new();
    for a in m.attachments() {
        if files.len() == MAX_FILES {
            return Err(Refused(format!("more than {MAX_FILES} attachments")));
        }
        files.push(attachment(raw, a));
    }
    let size = body.len() + files.iter().map(|f| f.data.len()).sum::<usize>();
    if size > max {
        return Err(Refused(format!(
            "the message is larger than the {max} bytes this BBS takes"
        )));
    }
    let header = |name: &str| references(m.header_raw(name).unwrap_or(""));
    Ok(Parsed {
        subject,
        body,
        files,
        thread: Thread {
            in_reply_to: header("In-Reply-To"),
            references: header("References"),
        },
        newsgroups: m.header_raw("Newsgroups").unwrap_or("").trim().to_string(),
    })
}

/// An attachment as sent: its bytes with only the transfer encoding undone (no charset
/// conversion, no line ends changed), its type and its name.
fn attachment(raw: &[u8], part: &MessagePart<'_>) -> Attachment {
    let name = part.attachment_name().unwrap_or("file").as_bytes().to_vec();
    let (from, to) = (part.offset_body as usize, part.offset_end as usize);
    let encoded = raw.get(from..to.max(from)).unwrap_or_default();
    let decoded = match part.encoding {
        Encoding::Base64 => mail_parser::decoders::base64::base64_decode(encoded),
        Encoding::QuotedPrintable => {
            mail_parser::decoders::quoted_printable::quoted_printable_decode(encoded)
        }
        Encoding::None => Some(encoded.to_vec()),
    };
    let data = decoded.unwrap_or_else(|| part.contents().to_vec());
    Attachment {
        name,
        mime: mime_type(part),
        data,
    }
}

/// A part's type as `type/subtype`, with its charset; empty when it holds anything a header
/// could not carry.
fn mime_type(part: &MessagePart<'_>) -> String {
    let Some(ct) = part.content_type() else {
        return String::new();
    };
    let mut value = format!("{}/{}", ct.ctype(), ct.subtype().unwrap_or(""));
    if let Some(cs) = ct.attribute("charset") {
        value.push_str(&format!("; charset={cs}"));
    }
    qtc_mail::mime_type(&value)
}

/// Message ids of a reply header kept as printable ASCII, the newest ones when too long.
fn references(value: &str) -> String {
    let v: String = value
        .split_whitespace()
        .filter(|w| w.bytes().all(|b| b.is_ascii_graphic()))
        .collect::<Vec<_>>()
        .join(" ");
    if v.len() <= MAX_REFERENCES {
        return v;
    }
    let tail = &v[v.len() - MAX_REFERENCES..];
    tail.find('<')
        .map_or(String::new(), |i| tail[i..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_attachments_and_refusals() {
        let raw = b"From: someone@else\r\nSubject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?=\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\
Content-Transfer-Encoding: quoted-printable\r\n\r\nK=F6ln\r\nline 2\r\n--b\r\nContent-Type: application/octet-stream\r\n\
Content-Disposition: attachment; filename=\"a.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\nAP8B\r\n--b--\r\n";
        let p = parse(raw, 1000).unwrap();
        assert_eq!(p.subject, "Grüße".as_bytes());
        assert_eq!(p.body, "Köln\r\nline 2\r\n".as_bytes());
        assert_eq!(p.files.len(), 1);
        assert_eq!(
            (&p.files[0].name[..], &p.files[0].data[..]),
            (&b"a.bin"[..], &[0u8, 255, 1][..])
        );
        assert_eq!(p.files[0].mime, "application/octet-stream");
        assert!(parse(b"Subject: x\r\n\r\nhi\x1a\r\n", 1000).is_err());
        assert!(parse(b"From: a\r\n\r\nno subject\r\n", 1000).is_err());
        assert!(parse(b"Subject: x\r\n\r\n0123456789\r\n", 5).is_err());
    }

    #[test]
    fn a_text_attachment_keeps_its_bytes_and_its_type() {
        // As mutt sends a file with LF line ends: base64 of the file as it is, and a text
        // attachment in 8 bit, which travels in CR LF.
        let raw = b"Subject: log\r\nMIME-Version: 1.0\r\nIn-Reply-To: <7_N0CALL@bbs>\r\n\
References: <1_N0CALL@bbs> <7_N0CALL@bbs>\r\n\
Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nsee\r\n\
--b\r\nContent-Type: text/plain; charset=us-ascii\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\
Content-Transfer-Encoding: base64\r\n\r\nb25lCnR3bwo=\r\n\
--b\r\nContent-Type: text/x-log; charset=UTF-8\r\nContent-Disposition: attachment; filename=\"b.log\"\r\n\
Content-Transfer-Encoding: 8bit\r\n\r\nx\xc3\xa9\r\ny\r\n--b--\r\n";
        let p = parse(raw, 1000).unwrap();
        assert_eq!(p.files[0].data, b"one\ntwo\n");
        assert_eq!(p.files[0].mime, "text/plain; charset=us-ascii");
        assert_eq!(p.files[1].data, b"x\xc3\xa9\r\ny");
        assert_eq!(p.files[1].mime, "text/x-log; charset=utf-8");
        assert_eq!(p.thread.in_reply_to, "<7_N0CALL@bbs>");
        assert_eq!(p.thread.references, "<1_N0CALL@bbs> <7_N0CALL@bbs>");
        assert_eq!(references(&"<a@b> ".repeat(300)).len(), 995);
    }
}
