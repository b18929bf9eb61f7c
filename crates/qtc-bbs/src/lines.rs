//! Splits an input byte stream into lines. Any of CR, CR LF, LF ends a line (telnet's CR NUL has
//! already become CR in the telnet codec), and a CR at the end of one chunk followed by LF at the
//! start of the next counts once. Lines longer than the limit are reported, not kept.
//!
//! Erasing keys are applied, since a character-mode telnet client or a terminal behind a serial
//! bridge sends them as typed: BS and DEL drop the byte before them, Ctrl-U the whole line,
//! Ctrl-W the last word (and the blanks after it). `LX` DEL `B` is the line `LB`.
//!
//! [`without_escapes`] drops terminal escape sequences (ECMA-48: the arrow, Home and function
//! keys send `ESC [ A`, `ESC O P`...) from a line: a line mode terminal sends them inside the
//! line, and echoed back in an answer they would move the user's cursor.

const BS: u8 = 0x08;
const DEL: u8 = 0x7f;
const CTRL_U: u8 = 0x15;
const CTRL_W: u8 = 0x17;
const ESC: u8 = 0x1b;

/// Where a terminal escape sequence being dropped has got to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// Not in one.
    None,
    /// After ESC.
    Start,
    /// After `ESC [` (CSI): parameter and intermediate bytes until a final byte 0x40-0x7E.
    Csi,
    /// After `ESC O` (SS3) or another ESC with an intermediate byte: one more byte.
    OneMore,
}

impl Escape {
    /// Takes `b`; true when it belongs to a sequence (and is dropped).
    fn eat(&mut self, b: u8) -> bool {
        *self = match (*self, b) {
            (Escape::None, ESC) => Escape::Start,
            (Escape::None, _) => return false,
            (Escape::Start, b'[') => Escape::Csi,
            (Escape::Start, b'O' | 0x20..=0x2f) => Escape::OneMore,
            (Escape::Csi, 0x20..=0x3f) => Escape::Csi,
            // The final byte, or ESC and one byte (`ESC c`, Alt-key), or a broken sequence:
            // whatever ends it is dropped with it.
            _ => Escape::None,
        };
        true
    }
}

/// `line` without the terminal escape sequences in it (the keys that send them: arrows,
/// Home, End, function keys, Alt-letter).
pub fn without_escapes(line: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if !line.contains(&ESC) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut state = Escape::None;
    let kept = line.iter().copied().filter(|&b| !state.eat(b)).collect();
    std::borrow::Cow::Owned(kept)
}

/// What the splitter found.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line without its end-of-line bytes.
    Text(Vec<u8>),
    /// A line longer than the limit ended here; its bytes were dropped.
    TooLong,
}

impl Line {
    /// The bytes it holds (none for a line too long).
    pub fn len(&self) -> usize {
        match self {
            Line::Text(t) => t.len(),
            Line::TooLong => 0,
        }
    }

    /// True for an empty line and for one too long (whose bytes were dropped).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Incremental line splitter with a length limit.
#[derive(Debug)]
pub struct LineReader {
    max: usize,
    buf: Vec<u8>,
    overflow: bool,
    after_cr: bool,
}

impl LineReader {
    /// A splitter that refuses lines longer than `max` bytes.
    pub fn new(max: usize) -> Self {
        LineReader {
            max,
            buf: Vec::new(),
            overflow: false,
            after_cr: false,
        }
    }

    /// Changes the limit for the lines still to come (the one being typed included).
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// Feeds bytes; calls `each` for every line end found, in order.
    pub fn push(&mut self, mut input: &[u8], mut each: impl FnMut(Line)) {
        // A CR ended the last chunk: an LF opening this one belongs to it. An empty chunk
        // leaves the question open.
        if self.after_cr && !input.is_empty() {
            if input[0] == b'\n' {
                input = &input[1..];
            }
            self.after_cr = false;
        }
        while let Some(pos) = input.iter().position(|&b| b == b'\r' || b == b'\n') {
            self.extend(&input[..pos]);
            let line = if self.overflow {
                Line::TooLong
            } else {
                Line::Text(std::mem::take(&mut self.buf))
            };
            self.buf.clear();
            self.overflow = false;
            each(line);
            let cr = input[pos] == b'\r';
            input = &input[pos + 1..];
            if cr {
                match input.first() {
                    Some(b'\n') => input = &input[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.extend(input);
    }

    fn extend(&mut self, bytes: &[u8]) {
        if bytes
            .iter()
            .any(|b| matches!(*b, BS | DEL | CTRL_U | CTRL_W))
        {
            // Byte by byte, so that where a chunk ends never changes what is kept.
            for &b in bytes {
                self.edit(b);
            }
        } else {
            self.keep(bytes);
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.buf.len() + bytes.len() > self.max {
            self.overflow = true;
            self.buf = Vec::new();
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn edit(&mut self, b: u8) {
        match b {
            BS | DEL => {
                self.buf.pop();
            }
            CTRL_U => self.buf.clear(),
            CTRL_W => {
                let end = self
                    .buf
                    .iter()
                    .rposition(|&c| c != b' ')
                    .map_or(0, |i| i + 1);
                let start = self.buf[..end]
                    .iter()
                    .rposition(|&c| c == b' ')
                    .map_or(0, |i| i + 1);
                self.buf.truncate(start);
            }
            _ => self.keep(&[b]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split(reader: &mut LineReader, chunks: &[&[u8]]) -> Vec<Line> {
        let mut out = Vec::new();
        for c in chunks {
            reader.push(c, |l| out.push(l));
        }
        out
    }

    fn text(s: &str) -> Line {
        Line::Text(s.as_bytes().to_vec())
    }

    #[test]
    fn every_line_end_counts_once() {
        let mut r = LineReader::new(100);
        let got = split(&mut r, &[b"a\rb\r\nc\nd\r", b"\ne\r", b"f\n\n"]);
        assert_eq!(
            got,
            vec![
                text("a"),
                text("b"),
                text("c"),
                text("d"),
                text("e"),
                text("f"),
                text("")
            ]
        );
    }

    #[test]
    fn a_blank_line_after_a_split_cr_lf_survives() {
        let mut r = LineReader::new(100);
        let got = split(&mut r, &[b"a\r", b"\n", b"\n", b"", b"b\r"]);
        assert_eq!(got, vec![text("a"), text(""), text("b")]);
    }

    #[test]
    fn long_lines_are_reported_and_dropped() {
        let mut r = LineReader::new(4);
        let got = split(&mut r, &[b"abcd\rabc", b"de\rok\r"]);
        assert_eq!(got, vec![text("abcd"), Line::TooLong, text("ok")]);
    }

    #[test]
    fn erasing_keys_edit_the_line() {
        let mut r = LineReader::new(100);
        let got = split(
            &mut r,
            &[
                b"LX\x7fB\r",
                b"subj\x08\x08",
                b"ok\r",
                b"\x7fL\rjunk\x15R 1\r",
            ],
        );
        assert_eq!(got, vec![text("LB"), text("suok"), text("L"), text("R 1")]);
        let got = split(&mut r, &[b"SP N0CALL  \x17W1AW\r"]);
        assert_eq!(got, vec![text("SP W1AW")]);
    }

    #[test]
    fn a_long_line_erased_back_under_the_limit_is_kept() {
        let mut r = LineReader::new(4);
        let got = split(&mut r, &[b"abc\x7f\x7fdef\r"]);
        assert_eq!(got, vec![text("adef")]);
    }

    #[test]
    fn terminal_escape_sequences_are_dropped() {
        let strip = |l: &[u8]| without_escapes(l).into_owned();
        // Arrow keys (CSI and SS3 forms), a function key with parameters, Alt-x, a lone ESC.
        assert_eq!(strip(b"LL\x1b[A"), b"LL");
        assert_eq!(strip(b"L\x1bOB\x1b[15~B\x1bx"), b"LB");
        assert_eq!(strip(b"ok\x1b"), b"ok");
        assert_eq!(strip(b"caf\xc3\xa9"), b"caf\xc3\xa9");
    }

    #[test]
    fn the_limit_may_change_between_lines() {
        let mut r = LineReader::new(4);
        let mut got = Vec::new();
        r.push(b"abcdefgh\r", |l| got.push(l));
        r.set_max(10);
        r.push(b"abcdefgh\r", |l| got.push(l));
        assert_eq!(got, vec![Line::TooLong, text("abcdefgh")]);
    }

    proptest! {
        #[test]
        fn chunking_does_not_matter(data in proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'x'), any::<u8>()], 0..200), cut in 0usize..200) {
            let cut = cut.min(data.len());
            let mut a = LineReader::new(50);
            let whole = split(&mut a, &[&data]);
            let mut b = LineReader::new(50);
            let parts = split(&mut b, &[&data[..cut], &data[cut..]]);
            prop_assert_eq!(whole, parts);
        }
    }
}
