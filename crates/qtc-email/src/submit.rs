//! What a client submits (SMTP DATA, NNTP POST) made into a BBS message: the subject, the text
//! (the first text part, as UTF-8 with CR LF line ends) and the other parts as attachments
//! (B2F `File:` parts). The same checks as the web's compose form and the `S` command: a
//! subject, no control characters, the `[limits] max_message` size.

use mail_parser::{MessageParser, MimeHeaders};
use qtc_mail::{MsgStatus, NewMessage, MAX_SUBJECT_LEN};

use crate::addr::Dest;
use crate::Submission;

/// The most attachments a message may carry (B2F's limit in qtc).
pub const MAX_FILES: usize = 32;

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
    /// Attachments: name and bytes.
    pub files: Vec<(Vec<u8>, Vec<u8>)>,
    /// Its `Newsgroups:` header (NNTP POST), if any.
    pub newsgroups: String,
}

/// Parses a submitted message; `max` bounds text and attachments together.
pub fn parse(raw: &[u8], max: usize) -> Result<Parsed, Refused> {
    let m = MessageParser::default()
        .parse(raw)
        .ok_or_else(|| Refused("the message cannot be parsed".into()))?;
    let subject = m.subject().unwrap_or("").trim();
    if subject.is_empty() {
        return Err(Refused("the message has no subject".into()));
    }
    if subject.chars().any(char::is_control) {
        return Err(Refused("the subject holds control characters".into()));
    }
    let text = m.body_text(0).unwrap_or_default();
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\r' | '\n' | '\t'))
    {
        return Err(Refused("the text holds control characters".into()));
    }
    let mut body = Vec::with_capacity(text.len() + 64);
    for line in text.replace('\r', "").trim_end_matches('\n').split('\n') {
        body.extend_from_slice(line.as_bytes());
        body.extend_from_slice(b"\r\n");
    }
    let mut files = Vec::new();
    for a in m.attachments() {
        if files.len() == MAX_FILES {
            return Err(Refused(format!("more than {MAX_FILES} attachments")));
        }
        let name = a.attachment_name().unwrap_or("file").as_bytes().to_vec();
        files.push((name, a.contents().to_vec()));
    }
    let size = body.len() + files.iter().map(|(_, d)| d.len()).sum::<usize>();
    if size > max {
        return Err(Refused(format!(
            "the message is larger than the {max} bytes this BBS takes"
        )));
    }
    let newsgroups = m.header_raw("Newsgroups").unwrap_or("").trim().to_string();
    Ok(Parsed {
        subject: cut(subject, MAX_SUBJECT_LEN).as_bytes().to_vec(),
        body,
        files,
        newsgroups,
    })
}

/// The message to store for one destination, from `from` (the logged-in call).
pub fn submission(p: &Parsed, dest: &Dest, from: &str) -> Submission {
    Submission {
        msg: NewMessage {
            kind: dest.kind,
            status: MsgStatus::New,
            to: dest.to.clone(),
            at: dest.at.clone(),
            from: from.to_ascii_uppercase(),
            bid: None,
            subject: p.subject.clone(),
            rlines: Vec::new(),
            body: p.body.clone(),
        },
        files: p.files.clone(),
    }
}

/// The longest prefix of `s` within `max` bytes, on a character boundary.
fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
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
        assert_eq!(p.files, vec![(b"a.bin".to_vec(), vec![0, 255, 1])]);
        assert!(parse(b"Subject: x\r\n\r\nhi\x1a\r\n", 1000).is_err());
        assert!(parse(b"From: a\r\n\r\nno subject\r\n", 1000).is_err());
        assert!(parse(b"Subject: x\r\n\r\n0123456789\r\n", 5).is_err());
    }
}
