//! Winlink B2F message format: `Name: value` header lines (CR LF), a blank line, the body
//! (`Body:` bytes), then for each `File:` header its bytes, each block ended by CR LF.
//!
//! Known headers: Mid, Date, Type, From, To, Cc, Subject, Mbo, Body, File; others are kept.

use crate::Error;

/// At most this many header lines: Winlink sets no limit of its own; this leaves room for
/// several hundred recipients.
pub const MAX_HEADERS: usize = 1024;
/// A header line is at most this long.
pub const MAX_HEADER_LINE: usize = 1024;
/// At most this many attachments (the message size limit bounds them first).
pub const MAX_FILES: usize = 256;
/// A Mid is at most this long.
pub const MAX_MID_LEN: usize = 12;
/// A Subject is at most this long.
pub const MAX_SUBJECT_LEN: usize = 128;

/// One header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header<'a> {
    /// Name (as written; compare case-insensitively).
    pub name: &'a str,
    /// Value bytes (may be 8-bit, e.g. ISO-8859-1 subjects).
    pub value: &'a [u8],
}

/// One attachment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct File<'a> {
    /// File name from its `File:` header.
    pub name: &'a [u8],
    /// Its bytes.
    pub data: &'a [u8],
}

/// A B2F message borrowing its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message<'a> {
    /// Header lines in order (including `Body:` and `File:`).
    pub headers: Vec<Header<'a>>,
    /// Body bytes.
    pub body: &'a [u8],
    /// Attachments in `File:` header order.
    pub files: Vec<File<'a>>,
}

fn split_line(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let nl = input.iter().position(|&b| b == b'\n')?;
    let line = &input[..nl];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Some((line, &input[nl + 1..]))
}

fn parse_len(v: &[u8], what: &'static str) -> Result<usize, Error> {
    if v.is_empty() || v.len() > 10 || !v.iter().all(u8::is_ascii_digit) {
        return Err(Error::BadB2f(what));
    }
    Ok(v.iter().fold(0usize, |n, d| n * 10 + usize::from(d - b'0')))
}

fn skip_crlf(input: &[u8]) -> &[u8] {
    input
        .strip_prefix(b"\r\n")
        .or_else(|| input.strip_prefix(b"\n"))
        .unwrap_or(input)
}

impl<'a> Message<'a> {
    /// Parse a whole B2F message.
    pub fn parse(input: &'a [u8]) -> Result<Message<'a>, Error> {
        let mut rest = input;
        let mut headers = Vec::new();
        let mut body_len = None;
        let mut file_specs: Vec<(usize, &'a [u8])> = Vec::new();
        loop {
            let (line, tail) = split_line(rest).ok_or(Error::BadB2f("headers not ended"))?;
            if line.len() > MAX_HEADER_LINE {
                return Err(Error::FieldTooLong {
                    field: "B2F header line",
                    max: MAX_HEADER_LINE,
                });
            }
            rest = tail;
            if line.is_empty() {
                break;
            }
            if headers.len() == MAX_HEADERS {
                return Err(Error::BadB2f("too many header lines"));
            }
            let colon = line
                .iter()
                .position(|&b| b == b':')
                .ok_or(Error::BadB2f("header line without ':'"))?;
            let name = std::str::from_utf8(&line[..colon])
                .map_err(|_| Error::BadB2f("header name not ASCII"))?;
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(Error::BadB2f("bad header name"));
            }
            let value = line[colon + 1..].trim_ascii_start();
            if name.eq_ignore_ascii_case("Mid") && value.len() > MAX_MID_LEN {
                return Err(Error::FieldTooLong {
                    field: "Mid",
                    max: MAX_MID_LEN,
                });
            }
            if name.eq_ignore_ascii_case("Subject") && value.len() > MAX_SUBJECT_LEN {
                return Err(Error::FieldTooLong {
                    field: "Subject",
                    max: MAX_SUBJECT_LEN,
                });
            }
            if name.eq_ignore_ascii_case("Body") {
                if body_len.is_some() {
                    return Err(Error::BadB2f("two Body headers"));
                }
                body_len = Some(parse_len(value.trim_ascii_end(), "bad Body length")?);
            }
            if name.eq_ignore_ascii_case("File") {
                if file_specs.len() == MAX_FILES {
                    return Err(Error::BadB2f("too many files"));
                }
                let sp = value
                    .iter()
                    .position(|&b| b == b' ')
                    .ok_or(Error::BadB2f("File header without a name"))?;
                let len = parse_len(&value[..sp], "bad File length")?;
                file_specs.push((len, value[sp + 1..].trim_ascii()));
            }
            headers.push(Header { name, value });
        }
        if !headers.iter().any(|h| h.name.eq_ignore_ascii_case("Mid")) {
            return Err(Error::BadB2f("no Mid header"));
        }
        let body_len = body_len.unwrap_or(0);
        if body_len > rest.len() {
            return Err(Error::BadB2f("body shorter than its Body header"));
        }
        let (body, mut rest) = rest.split_at(body_len);
        let mut files = Vec::new();
        for (len, name) in file_specs {
            rest = skip_crlf(rest);
            if len > rest.len() {
                return Err(Error::BadB2f("file shorter than its File header"));
            }
            let (data, tail) = rest.split_at(len);
            files.push(File { name, data });
            rest = tail;
        }
        if !skip_crlf(rest).is_empty() {
            return Err(Error::BadB2f("trailing data after the last part"));
        }
        Ok(Message {
            headers,
            body,
            files,
        })
    }

    /// Append the message: headers as stored, blank line, body, then CR LF and each file
    /// followed by CR LF.
    pub fn emit(&self, out: &mut Vec<u8>) {
        for h in &self.headers {
            out.extend_from_slice(h.name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(h.value);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(self.body);
        if !self.files.is_empty() {
            out.extend_from_slice(b"\r\n");
            for f in &self.files {
                out.extend_from_slice(f.data);
                out.extend_from_slice(b"\r\n");
            }
        }
    }

    /// First value of header `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// Every value of header `name` (e.g. several `To:`).
    pub fn get_all<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a [u8]> + 's {
        self.headers
            .iter()
            .filter(move |h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// The `Mid:` value.
    pub fn mid(&self) -> &'a [u8] {
        self.get("Mid").unwrap_or_default()
    }

    /// The `Subject:` value.
    pub fn subject(&self) -> &'a [u8] {
        self.get("Subject").unwrap_or_default()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    const VECTOR: &[u8] = include_bytes!("../../tests/data/LPE5NXDVLVSQ.b2f");

    #[test]
    fn parses_and_reemits_winlink_vector() {
        let m = Message::parse(VECTOR).unwrap();
        assert_eq!(m.mid(), b"LPE5NXDVLVSQ");
        assert_eq!(m.subject(), b"73 fra Brekke");
        assert_eq!(m.get("from"), Some(&b"LA5NTA"[..]));
        assert_eq!(m.get_all("To").collect::<Vec<_>>(), vec![&b"LA4TTA"[..]]);
        assert_eq!(m.body.len(), 104);
        assert_eq!(m.files.len(), 1);
        assert_eq!(m.files[0].name, b"1469042410710.jpg");
        assert_eq!(m.files[0].data.len(), 31028);
        let mut out = Vec::new();
        m.emit(&mut out);
        assert_eq!(out, VECTOR);
    }

    #[test]
    fn errors() {
        assert_eq!(
            Message::parse(b"Body: 3\r\n\r\nabc"),
            Err(Error::BadB2f("no Mid header"))
        );
        assert!(Message::parse(b"Mid: X\r\nBody: 9\r\n\r\nabc").is_err());
        assert!(Message::parse(b"Mid: X\r\nBody: 3\r\n").is_err());
        assert!(Message::parse(b"Mid: 1234567890123\r\n\r\n").is_err());
        assert!(Message::parse(b"Mid: X\r\nno colon\r\n\r\n").is_err());
        assert!(Message::parse(b"Mid: X\r\nFile: 5 a\r\n\r\n\r\nab").is_err());
        assert!(Message::parse(b"Mid: X\r\nBody: 1\r\n\r\nabc").is_err());
        let ok = Message::parse(b"Mid: X\r\nBody: 3\r\n\r\nabc\r\n").unwrap();
        assert_eq!(ok.body, b"abc");
    }

    proptest! {
        #[test]
        fn round_trip(
            subject in proptest::collection::vec(0x20u8..=0xff, 0..100),
            body in proptest::collection::vec(any::<u8>(), 0..300),
            files in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..100), 0..3),
        ) {
            let body_h = body.len().to_string();
            let file_h: Vec<String> =
                files.iter().enumerate().map(|(i, f)| format!("{} f{i}.bin", f.len())).collect();
            let names: Vec<String> = (0..files.len()).map(|i| format!("f{i}.bin")).collect();
            let mut headers = vec![
                Header { name: "Mid", value: b"ABC123" },
                Header { name: "Subject", value: subject.trim_ascii() },
                Header { name: "Body", value: body_h.as_bytes() },
            ];
            for h in &file_h {
                headers.push(Header { name: "File", value: h.as_bytes() });
            }
            let m = Message {
                headers,
                body: &body,
                files: files
                    .iter()
                    .zip(&names)
                    .map(|(d, n)| File { name: n.as_bytes(), data: d })
                    .collect(),
            };
            let mut out = Vec::new();
            m.emit(&mut out);
            prop_assert_eq!(Message::parse(&out).unwrap(), m);
        }

        #[test]
        fn garbage_never_panics(input in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = Message::parse(&input);
        }
    }
}
