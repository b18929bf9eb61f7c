//! BODY and BODYSTRUCTURE of kept messages with nested MIME (a multipart/alternative in a
//! multipart/mixed, a forwarded message/rfc822 with its own attachment), checked against
//! RFC 3501's grammar (section 9) by a parser written from it, and the nested sections
//! (`BODY[1.2]`, `BODY[2.HEADER]`, `BODY[2.2.MIME]`) they name.

use super::fetch::structure;
use super::*;
use crate::kept::rendered;
use crate::render::Rendered;
use crate::testing::{settings, Client};

/// RFC 3501's `body`, read strictly; returns the shape it describes (`MIXED(TEXT/PLAIN ...)`,
/// a message as `MESSAGE/RFC822[...]`), or where it breaks the grammar.
struct Grammar<'a> {
    b: &'a [u8],
    at: usize,
    ext: bool,
}

type Parsed<T> = Result<T, String>;

impl Grammar<'_> {
    fn check(text: &str, ext: bool) -> Parsed<String> {
        let (shape, len) = Grammar::prefix(text, ext)?;
        match len == text.len() {
            true => Ok(shape),
            false => Err(format!("more after the body: {}", &text[len..])),
        }
    }

    /// The `body` at the start of `text`, and its length.
    fn prefix(text: &str, ext: bool) -> Parsed<(String, usize)> {
        let mut g = Grammar {
            b: text.as_bytes(),
            at: 0,
            ext,
        };
        Ok((g.body()?, g.at))
    }

    fn fail<T>(&self, wanted: &str) -> Parsed<T> {
        let rest = String::from_utf8_lossy(&self.b[self.at..]);
        Err(format!("{wanted} wanted at {}: {rest}", self.at))
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    fn byte(&mut self, c: u8) -> Parsed<()> {
        match self.peek() == Some(c) {
            true => {
                self.at += 1;
                Ok(())
            }
            false => self.fail(&format!("{:?}", c as char)),
        }
    }

    fn sp(&mut self) -> Parsed<()> {
        self.byte(b' ')
    }

    fn nil(&mut self) -> bool {
        let yes = self.b[self.at..].starts_with(b"NIL");
        if yes {
            self.at += 3;
        }
        yes
    }

    fn number(&mut self) -> Parsed<u64> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        match std::str::from_utf8(&self.b[start..self.at])
            .unwrap()
            .parse()
        {
            Ok(n) => Ok(n),
            Err(_) => self.fail("number"),
        }
    }

    /// `string`: quoted or a literal.
    fn string(&mut self) -> Parsed<String> {
        match self.peek() {
            Some(b'"') => {
                self.at += 1;
                let start = self.at;
                while self.peek().is_some_and(|c| c != b'"') {
                    match self.peek() {
                        Some(b'\\') => self.at += 2,
                        Some(b'\r' | b'\n') => return self.fail("a quoted character"),
                        _ => self.at += 1,
                    }
                }
                let s = String::from_utf8_lossy(&self.b[start..self.at]).into_owned();
                self.byte(b'"')?;
                Ok(s)
            }
            Some(b'{') => {
                self.at += 1;
                let n = self.number()? as usize;
                self.byte(b'}')?;
                self.byte(b'\r')?;
                self.byte(b'\n')?;
                let s = String::from_utf8_lossy(&self.b[self.at..self.at + n]).into_owned();
                self.at += n;
                Ok(s)
            }
            _ => self.fail("string"),
        }
    }

    fn nstring(&mut self) -> Parsed<()> {
        match self.nil() {
            true => Ok(()),
            false => self.string().map(drop),
        }
    }

    /// `body-fld-param`: a non-empty list of pairs, or NIL.
    fn params(&mut self) -> Parsed<()> {
        if self.nil() {
            return Ok(());
        }
        self.byte(b'(')?;
        loop {
            self.string()?;
            self.sp()?;
            self.string()?;
            if self.peek() == Some(b')') {
                return self.byte(b')');
            }
            self.sp()?;
        }
    }

    /// `body-fld-dsp`.
    fn disposition(&mut self) -> Parsed<()> {
        if self.nil() {
            return Ok(());
        }
        self.byte(b'(')?;
        self.string()?;
        self.sp()?;
        self.params()?;
        self.byte(b')')
    }

    fn body(&mut self) -> Parsed<String> {
        self.byte(b'(')?;
        let shape = match self.peek() {
            Some(b'(') => self.multipart()?,
            _ => self.one_part()?,
        };
        self.byte(b')')?;
        Ok(shape)
    }

    /// `body-type-mpart` with `body-ext-mpart`.
    fn multipart(&mut self) -> Parsed<String> {
        let mut parts = Vec::new();
        while self.peek() == Some(b'(') {
            parts.push(self.body()?);
        }
        self.sp()?;
        let subtype = self.string()?;
        if self.ext {
            self.sp()?;
            self.params()?;
            self.sp()?;
            self.disposition()?;
            self.sp()?;
            self.nstring()?;
        }
        Ok(format!("{subtype}({})", parts.join(" ")))
    }

    /// `body-type-1part` with `body-ext-1part`.
    fn one_part(&mut self) -> Parsed<String> {
        let media = self.string()?;
        self.sp()?;
        let subtype = self.string()?;
        // body-fields
        self.sp()?;
        self.params()?;
        for _ in 0..2 {
            self.sp()?;
            self.nstring()?;
        }
        self.sp()?;
        self.string()?;
        self.sp()?;
        self.number()?;
        let mut shape = format!("{media}/{subtype}");
        if (media.as_str(), subtype.as_str()) == ("MESSAGE", "RFC822") {
            self.sp()?;
            self.envelope()?;
            self.sp()?;
            shape = format!("{shape}[{}]", self.body()?);
            self.sp()?;
            self.number()?;
        } else if media == "TEXT" {
            self.sp()?;
            self.number()?;
        }
        if self.ext {
            self.sp()?;
            self.nstring()?;
            self.sp()?;
            self.disposition()?;
            self.sp()?;
            self.nstring()?;
        }
        Ok(shape)
    }

    /// `envelope`: date, subject, from, sender, reply-to, to, cc, bcc, in-reply-to, message-id.
    fn envelope(&mut self) -> Parsed<()> {
        self.byte(b'(')?;
        self.nstring()?;
        self.sp()?;
        self.nstring()?;
        for _ in 0..6 {
            self.sp()?;
            self.addresses()?;
        }
        for _ in 0..2 {
            self.sp()?;
            self.nstring()?;
        }
        self.byte(b')')
    }

    fn addresses(&mut self) -> Parsed<()> {
        if self.nil() {
            return Ok(());
        }
        self.byte(b'(')?;
        while self.peek() == Some(b'(') {
            self.byte(b'(')?;
            self.nstring()?;
            for _ in 0..3 {
                self.sp()?;
                self.nstring()?;
            }
            self.byte(b')')?;
        }
        self.byte(b')')
    }
}

/// A forwarded message inside a message with text and HTML: mutt's "forward as attachment"
/// of a message that had a PDF, under a multipart/alternative body.
const NESTED: &str = "From: N0USR@N0CALL\r\n\
To: N0OTH@N0CALL\r\n\
Subject: Fwd: the net report\r\n\
MIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"outer\"\r\n\
\r\n\
--outer\r\n\
Content-Type: multipart/alternative; boundary=\"alt\"\r\n\
\r\n\
--alt\r\n\
Content-Type: text/plain; charset=utf-8\r\n\
\r\n\
See below.\r\n\
--alt\r\n\
Content-Type: text/html; charset=utf-8\r\n\
\r\n\
<p>See below.</p>\r\n\
--alt--\r\n\
--outer\r\n\
Content-Type: message/rfc822\r\n\
\r\n\
From: G8BPQ@GB7BPQ\r\n\
Date: Sun, 6 Dec 2026 20:00:00 +0000\r\n\
Subject: Net report\r\n\
Content-Type: multipart/mixed; boundary=\"inner\"\r\n\
\r\n\
--inner\r\n\
Content-Type: text/plain\r\n\
\r\n\
Twelve stations.\r\n\
--inner\r\n\
Content-Type: application/pdf; name=\"net.pdf\"\r\n\
Content-Transfer-Encoding: base64\r\n\
\r\n\
JVBERi0=\r\n\
--inner--\r\n\
\r\n\
--outer\r\n\
Content-Type: text/plain; name=\"log.txt\"\r\n\
\r\n\
log\r\n\
--outer--\r\n";

fn checked(r: &Rendered) -> String {
    let body = structure(r, false);
    let ext = structure(r, true);
    let shape = Grammar::check(&body, false).unwrap_or_else(|e| panic!("BODY {e}"));
    assert_eq!(
        Grammar::check(&ext, true).unwrap_or_else(|e| panic!("BODYSTRUCTURE {e}")),
        shape
    );
    shape
}

#[test]
fn a_nested_message_has_a_nested_structure_in_the_grammar() {
    let shape = checked(&rendered(NESTED.as_bytes().to_vec()));
    assert_eq!(
        shape,
        "MIXED(ALTERNATIVE(TEXT/PLAIN TEXT/HTML) \
         MESSAGE/RFC822[MIXED(TEXT/PLAIN APPLICATION/PDF)] TEXT/PLAIN)"
    );
    let st = structure(&rendered(NESTED.as_bytes().to_vec()), true);
    // The forwarded message's ENVELOPE, and the attachments' names.
    assert!(
        st.contains(
            "(\"Sun, 6 Dec 2026 20:00:00 +0000\" \"Net report\" ((NIL NIL \"G8BPQ\" \"GB7BPQ\"))"
        ),
        "{st}"
    );
    assert!(st.contains("(\"FILENAME\" \"net.pdf\")"), "{st}");
    assert!(st.contains("(\"BOUNDARY\" \"alt\")"), "{st}");
}

/// The FETCH response line at the start of `got`, read by imap-codec's response parser (a
/// second, independent reading of the grammar): it must take it whole.
fn imap_codec_reads(got: &str) {
    use imap_codec::decode::Decoder;
    let line = &got[..got.find(")\r\n").expect("a FETCH response") + 3];
    match imap_codec::ResponseCodec::default().decode(line.as_bytes()) {
        Ok((rest, _)) => assert!(rest.is_empty(), "left over: {rest:?}"),
        Err(e) => panic!("imap-codec: {e:?}: {line}"),
    }
}

/// N0OTH's session with NESTED appended to its folder Fwd, selected.
fn with_nested() -> Client<Imap> {
    let mut c = Client::new(Imap::new(settings(), 42));
    c.send("");
    assert!(c.send("a LOGIN n0oth x\r\n").starts_with("a OK"));
    assert!(c.send("b CREATE Fwd\r\n").contains("b OK"));
    let append = format!("c APPEND Fwd {{{}+}}\r\n{NESTED}\r\n", NESTED.len());
    assert!(c.send(&append).contains("c OK"));
    assert!(c.send("d SELECT Fwd\r\n").contains("d OK"));
    c
}

/// What `BODY[section]` answers in the session.
fn section(c: &mut Client<Imap>, section: &str) -> String {
    let got = c.send(&format!("s FETCH 1 BODY.PEEK[{section}]\r\n"));
    let literal = got
        .split_once("}\r\n")
        .unwrap_or_else(|| panic!("{section}: {got}"))
        .1;
    literal[..literal.rfind(")\r\ns OK").unwrap()].to_string()
}

#[test]
fn nested_sections_name_the_parts_the_structure_shows() {
    let mut c = with_nested();
    let got = c.send("e FETCH 1 (BODYSTRUCTURE)\r\n");
    imap_codec_reads(&got);
    imap_codec_reads(&c.send("e FETCH 1 (BODY)\r\n"));
    let st = got.strip_prefix("* 1 FETCH (BODYSTRUCTURE ").unwrap();
    let (shape, _) = Grammar::prefix(st, true).unwrap();
    assert!(shape.starts_with("MIXED(ALTERNATIVE("), "{shape}");
    assert_eq!(section(&mut c, "1.2"), "<p>See below.</p>");
    assert_eq!(
        section(&mut c, "1.1.MIME"),
        "Content-Type: text/plain; charset=utf-8\r\n\r\n"
    );
    let header = section(&mut c, "2.HEADER");
    assert!(header.starts_with("From: G8BPQ@GB7BPQ\r\n") && header.ends_with("\r\n\r\n"));
    assert!(section(&mut c, "2.TEXT").starts_with("--inner\r\n"));
    // In the forwarded message, the numbers go on in its own multipart.
    assert_eq!(section(&mut c, "2.1"), "Twelve stations.");
    assert_eq!(section(&mut c, "2.2"), "JVBERi0=");
    assert!(section(&mut c, "2.2.MIME").contains("name=\"net.pdf\""));
    assert_eq!(section(&mut c, "3"), "log");
    // Numbers that name nothing answer nothing.
    for none in ["4", "3.1", "1.3", "2.3", "1.1.1"] {
        assert_eq!(section(&mut c, none), "", "{none}");
    }
}

#[test]
fn plain_deep_and_broken_messages_stay_in_the_grammar() {
    let plain = "Subject: hi\r\n\r\nline\r\n";
    assert_eq!(checked(&rendered(plain.as_bytes().to_vec())), "TEXT/PLAIN");
    // A message/rfc822 that is the whole body, and one without a header.
    let msg = "Content-Type: message/rfc822\r\n\r\nSubject: in\r\n\r\nx\r\n";
    assert_eq!(
        checked(&rendered(msg.as_bytes().to_vec())),
        "MESSAGE/RFC822[TEXT/PLAIN]"
    );
    let bare = "Content-Type: message/rfc822\r\n\r\n";
    checked(&rendered(bare.as_bytes().to_vec()));
    // A multipart without its boundary is bytes.
    let broken = "Content-Type: multipart/mixed\r\n\r\nx\r\n";
    assert_eq!(
        checked(&rendered(broken.as_bytes().to_vec())),
        "APPLICATION/OCTET-STREAM"
    );
    // Nesting deeper than is read: the deepest is bytes, and the answer stays small.
    let (mut deep, mut closing) = (String::new(), String::new());
    for i in 0..60 {
        deep.push_str(&format!(
            "Content-Type: multipart/mixed; boundary=\"b{i}\"\r\n\r\n--b{i}\r\n"
        ));
        closing = format!("\r\n--b{i}--\r\n{closing}");
    }
    deep.push_str(&format!("\r\nx{closing}"));
    let shape = checked(&rendered(deep.into_bytes()));
    assert_eq!(shape.matches("MIXED(").count(), 8, "{shape}");
    // Many parts: the first 100 are read.
    let mut many = String::from("Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n");
    for _ in 0..500 {
        many.push_str("--m\r\n\r\nx\r\n");
    }
    let shape = checked(&rendered(many.into_bytes()));
    assert_eq!(shape.matches("TEXT/PLAIN").count(), 100);
}

#[test]
fn a_bbs_message_with_an_attachment_is_in_the_grammar() {
    let mut c = Client::new(Imap::new(settings(), 42));
    c.send("");
    assert!(c.send("a LOGIN n0oth x\r\n").starts_with("a OK"));
    assert!(c.send("b SELECT INBOX\r\n").contains("b OK"));
    let got = c.send("c FETCH 1 (BODY BODYSTRUCTURE)\r\n");
    imap_codec_reads(&got);
    let body = got.strip_prefix("* 1 FETCH (BODY ").unwrap();
    let (shape, len) = Grammar::prefix(body, false).unwrap();
    assert_eq!(shape, "MIXED(TEXT/PLAIN APPLICATION/OCTET-STREAM)");
    let ext = body[len..].strip_prefix(" BODYSTRUCTURE ").unwrap();
    assert_eq!(Grammar::prefix(ext, true).unwrap().0, shape);
}
/// The checker refuses what the answers had before: an empty parameter list and a
/// message/rfc822 without its ENVELOPE; a nested multipart written as one part reads as a
/// leaf, the flat shape the tests above would catch.
#[test]
fn the_grammar_checker_refuses_what_the_old_answers_had() {
    let empty_params = "(\"TEXT\" \"PLAIN\" () NIL NIL \"7BIT\" 3 1)";
    assert!(Grammar::check(empty_params, false).is_err());
    let flat = "((\"TEXT\" \"PLAIN\" NIL NIL NIL \"7BIT\" 3 1)\
                (\"MULTIPART\" \"ALTERNATIVE\" NIL NIL NIL \"7BIT\" 3) \"MIXED\")";
    assert_eq!(
        Grammar::check(flat, false).unwrap(),
        "MIXED(TEXT/PLAIN MULTIPART/ALTERNATIVE)"
    );
    let bare_message = "(\"MESSAGE\" \"RFC822\" NIL NIL NIL \"7BIT\" 3)";
    assert!(Grammar::check(bare_message, false).is_err());
}
