//! Text written by other people (subjects, bodies, names, callsigns from the wire) made safe
//! for a terminal: control characters that a terminal would act on (ESC above all: clear
//! screen, set the title, write the clipboard) are shown as visible escapes instead. This is the
//! one place that decides what is shown raw; every output point calls it.

use std::borrow::Cow;

/// What a control character looks like once neutralised: `\x1B` (C0, DEL), `\u{9B}` (C1).
fn escape(c: char, out: &mut String) {
    let n = c as u32;
    if n < 0x80 {
        out.push_str(&format!("\\x{n:02X}"));
    } else {
        out.push_str(&format!("\\u{{{n:X}}}"));
    }
}

fn is_control(c: char, keep_lines: bool) -> bool {
    match c {
        '\r' | '\n' | '\t' => !keep_lines,
        c => c.is_control(),
    }
}

fn neutralise(s: &str, keep_lines: bool) -> Cow<'_, str> {
    if !s.chars().any(|c| is_control(c, keep_lines)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c, keep_lines) {
            escape(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Multi-line text (a message body): C0 and C1 controls other than CR, LF and TAB escaped.
pub fn visible(s: &str) -> Cow<'_, str> {
    neutralise(s, true)
}

/// One-line text (a subject, a name, a log field): every control escaped, CR and LF too, so
/// it cannot start a fake line.
pub fn visible_line(s: &str) -> Cow<'_, str> {
    neutralise(s, false)
}

/// [`visible`] for bytes that may not be UTF-8 (bodies in Latin-1 or CP437): valid UTF-8 is
/// treated as characters (its C1 controls escaped); a byte that is not UTF-8 passes as it is,
/// since 0x80-0x9F are letters in CP437 (Ç, ü, é...) and a UTF-8 terminal does not act on them.
pub fn visible_bytes(b: &[u8]) -> Cow<'_, [u8]> {
    neutralise_bytes(b, true)
}

/// [`visible_line`] for bytes that may not be UTF-8 (a subject from the wire).
pub fn visible_line_bytes(b: &[u8]) -> Cow<'_, [u8]> {
    neutralise_bytes(b, false)
}

/// [`visible_bytes`] for text live from another station (after `C`): a byte 0x80-0x9F that
/// is not part of UTF-8 is escaped too (`\x9B`), since a terminal taking 8-bit controls or
/// Latin-1 acts on it (0x9B is CSI, the same as ESC `[`). Stored bodies keep such bytes: there
/// they are CP437 letters of a declared or an old charset, shown as the reader asked.
pub fn visible_8bit(b: &[u8]) -> Cow<'_, [u8]> {
    let c1 = |x: &u8| (0x80..=0x9F).contains(x);
    if !b.iter().any(c1) {
        return neutralise_bytes(b, true);
    }
    let mut out = Vec::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        out.extend_from_slice(neutralise(chunk.valid(), true).as_bytes());
        for x in chunk.invalid() {
            match c1(x) {
                true => out.extend_from_slice(format!("\\x{x:02X}").as_bytes()),
                false => out.push(*x),
            }
        }
    }
    Cow::Owned(out)
}

/// The length of `bytes` without an unfinished UTF-8 sequence at its end: text read in pieces
/// is shown as if whole, so no character (a C1 control above all) is split unchecked.
pub fn complete_utf8(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(3) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

fn neutralise_bytes(b: &[u8], keep_lines: bool) -> Cow<'_, [u8]> {
    // ESC and the other C0 controls, DEL, and the lead byte of a UTF-8 C1 control.
    let risky = |&x: &u8| {
        (x < 0x20 && !(keep_lines && matches!(x, b'\r' | b'\n' | b'\t'))) || x == 0x7F || x == 0xC2
    };
    if !b.iter().any(risky) {
        return Cow::Borrowed(b);
    }
    let mut out = Vec::with_capacity(b.len() + 8);
    for chunk in b.utf8_chunks() {
        out.extend_from_slice(neutralise(chunk.valid(), keep_lines).as_bytes());
        out.extend_from_slice(chunk.invalid());
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_character_waits_for_its_end() {
        assert_eq!(complete_utf8(b"ab"), 2);
        assert_eq!(complete_utf8(b"a\xc2"), 1);
        assert_eq!(complete_utf8(b"a\xc2\x9f"), 3);
        assert_eq!(complete_utf8(b"a\xe2\x82"), 1);
        assert_eq!(complete_utf8(b"a\xf0\x9f\x98"), 1);
        assert_eq!(complete_utf8(b"a\xf0\x9f\x98\x80"), 5);
        assert_eq!(complete_utf8(b"\x80\x80\x80\x80"), 4);
        assert_eq!(complete_utf8(b""), 0);
    }

    #[test]
    fn escapes_what_a_terminal_would_act_on() {
        assert_eq!(visible("plain text\r\n\tok"), "plain text\r\n\tok");
        assert_eq!(
            visible("\x1b[2J\x1b]0;pwned\x07"),
            "\\x1B[2J\\x1B]0;pwned\\x07"
        );
        assert_eq!(visible("a\u{9b}31mb\x7f"), "a\\u{9B}31mb\\x7F");
        assert_eq!(visible_line("two\r\nlines"), "two\\x0D\\x0Alines");
        assert!(matches!(visible("clean"), Cow::Borrowed(_)));
        assert_eq!(
            &*visible_bytes(b"caf\xe9 \x1b[31m \x9b \xc2\x9b\r\n"),
            b"caf\xe9 \\x1B[31m \x9b \\u{9B}\r\n"
        );
        assert_eq!(&*visible_line_bytes(b"a\rb\xe9"), b"a\\x0Db\xe9");
        assert_eq!(
            &*visible_8bit(b"caf\xe9 \x9b31m \xc2\x9b \xe2\x82\xac\r\n"),
            b"caf\xe9 \\x9B31m \\u{9B} \xe2\x82\xac\r\n"
        );
    }
}
