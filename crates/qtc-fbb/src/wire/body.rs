//! A message's text as the text modes (MBL, FBB ASCII) send it, and as B0/B1 compress it: no
//! line of a body is ever read as protocol by the partner, and a qtc partner gets the text back
//! byte for byte (docs/forwarding.md, "A body is never protocol").
//!
//! What each receiver takes out of a body, read from its source:
//! - **JNOS 2.0o.2** (`dosend` in mboxmail.c for MBL and FBB ASCII, `dofbbacceptnote` in
//!   fbbfwd.c for B0/B1): it reads a line in pieces of 127 bytes (`mbxrecvline`, or `fgets`
//!   into `MBXLINE`). A piece that is `/ex` (any case) or starts with ^Z ends the message (in
//!   B0/B1 it is dropped); one that ends with ^Z ends it after the piece. In the text modes NUL
//!   is dropped and BS and DEL erase the byte before them; in B0/B1 a piece ends at a NUL.
//! - **LinFBB 7** (`get_mess_fwd` in fwdutil.c; it stores a B1 file as it decompresses): a
//!   line starting `/EX` ends the message, one starting `/AB` aborts it (any case), and a ^Z
//!   anywhere ends it.
//! - **LinBPQ 6** (`ProcessMsgLine` in BBSUtilities.c): a line `/ex`, or a line that is ^Z.
//! - **qtc** (`session/receive.rs`): a line `/EX` (MBL), a line starting or ending with ^Z.
//!
//! The escape is space-stuffing, as SMTP's dot-stuffing: wherever a receiver starts a line (a
//! line's start, and every 127 bytes for JNOS) and what follows, its spaces aside, is read so,
//! one space more goes before it; a line that ends with ^Z, its spaces aside, gets one space
//! more after it. A qtc receiver takes exactly that space off again ([`unescape_line`]); any
//! other stores it, so the line reads as written with a space before it. Toward anyone but qtc
//! the text modes leave out the bytes those receivers act on wherever they stand (NUL, BS, ^Z,
//! DEL): no escape survives JNOS's editing of them or LinFBB's end at any ^Z. B0/B1 (and B2,
//! which this module does not touch) carry every byte.

use std::borrow::Cow;

const CTRL_Z: u8 = 0x1A;

/// The bytes JNOS reads a line in (`MBXLINE` less its terminating NUL).
pub const JNOS_PIECE: usize = 127;

/// Who reads text sent in a text mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// qtc: takes every byte as written and the escape back off.
    Qtc,
    /// Any other software: gets none of the bytes it would act on (NUL, BS, ^Z, DEL).
    Other,
}

impl Reader {
    /// The reader of a partner whose SID names `software`.
    pub fn of(software: Option<&str>) -> Reader {
        match software {
            Some(s) if s.eq_ignore_ascii_case("QTC") => Reader::Qtc,
            _ => Reader::Other,
        }
    }
}

fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// Whether a receiver would read the rest of a line from where a receiver starts one
/// (`line_start`: the line's own start) as the end of a message, given `core`: that rest from
/// its first byte that is not a space. Leading spaces do not count, so that one space more
/// never changes the answer (what makes the escape reversible).
fn read_as_protocol(core: &[u8], line_start: bool) -> bool {
    // JNOS: a piece `/ex` (in B0/B1 a piece ends at a NUL) or starting with ^Z; LinBPQ and
    // qtc: a line starting with ^Z.
    let ex_piece = starts_with_ci(core, b"/ex") && matches!(core.get(3), None | Some(0));
    if ex_piece || core.first() == Some(&CTRL_Z) {
        return true;
    }
    // LinFBB ends a message at a line starting /EX and aborts it at one starting /AB (which
    // covers JNOS's, LinBPQ's and qtc's `/EX` line).
    line_start && (starts_with_ci(core, b"/ex") || starts_with_ci(core, b"/ab"))
}

/// Where the next byte that is not a space is, from a position that only grows: each byte is
/// looked at once, however long a run of spaces (a line of spaces costs no more than its length).
struct Spaces<'a> {
    line: &'a [u8],
    next: usize,
}

impl Spaces<'_> {
    fn core_from(&mut self, pos: usize) -> &[u8] {
        self.next = self.next.max(pos);
        while self.line.get(self.next) == Some(&b' ') {
            self.next += 1;
        }
        &self.line[self.next..]
    }
}

/// Whether a line (without its line end) ends with ^Z, its trailing spaces aside.
fn ends_with_ctrl_z(line: &[u8]) -> bool {
    let n = line.iter().rev().take_while(|&&b| b == b' ').count();
    line[..line.len() - n].last() == Some(&CTRL_Z)
}

/// Appends `line` (no line end) escaped: one space more at each place a receiver would read
/// protocol from, and after a line ending with ^Z.
pub fn escape_line(line: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let mut spaces = Spaces { line, next: 0 };
    let mut pos = 0;
    loop {
        if read_as_protocol(spaces.core_from(pos), pos == 0) {
            out.push(b' ');
        }
        let room = JNOS_PIECE - (out.len() - start) % JNOS_PIECE;
        let end = (pos + room).min(line.len());
        out.extend_from_slice(&line[pos..end]);
        pos = end;
        if pos == line.len() {
            break;
        }
    }
    if ends_with_ctrl_z(line) {
        out.push(b' ');
    }
}

/// Appends `line` (no line end), escaped by [`escape_line`], as it was before: each space the
/// escape added is taken off. A line the escape did not write (a space it would have added
/// missing) passes as it is.
pub fn unescape_line(line: &[u8], out: &mut Vec<u8>) {
    let mut line = line;
    if ends_with_ctrl_z(line) && line.last() == Some(&b' ') {
        line = &line[..line.len() - 1];
    }
    let mut spaces = Spaces { line, next: 0 };
    let mut pos = 0;
    while pos < line.len() {
        let added = line[pos] == b' ' && read_as_protocol(spaces.core_from(pos), pos == 0);
        let end = (pos + JNOS_PIECE).min(line.len());
        out.extend_from_slice(&line[pos + usize::from(added)..end]);
        pos = end;
    }
}

/// The lines of `text`, each ended by CR LF, CR or LF (or the text's end).
fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .iter()
            .position(|&b| b == b'\r' || b == b'\n')
            .unwrap_or(rest.len());
        let line = &rest[..end];
        let skip = match rest.get(end..end + 2) {
            Some(b"\r\n") => 2,
            _ => usize::from(end < rest.len()),
        };
        rest = &rest[end + skip..];
        Some(line)
    })
}

/// Appends the text of a message as the text modes send it to `reader`: every line escaped
/// and ended by `eol` (CR LF, CR and LF all end a line), then the ^Z line that ends it. Toward
/// any reader but qtc, NUL, BS, ^Z and DEL are left out first.
pub fn emit_text(text: &[u8], reader: Reader, eol: &[u8], out: &mut Vec<u8>) {
    for line in lines(text) {
        let line: Cow<[u8]> = match reader {
            Reader::Qtc => Cow::Borrowed(line),
            Reader::Other if !line.iter().any(|&b| acted_on(b)) => Cow::Borrowed(line),
            Reader::Other => Cow::Owned(line.iter().copied().filter(|&b| !acted_on(b)).collect()),
        };
        escape_line(&line, out);
        out.extend_from_slice(eol);
    }
    out.push(CTRL_Z);
    out.extend_from_slice(eol);
}

/// The bytes a text-mode receiver acts on wherever they stand.
fn acted_on(b: u8) -> bool {
    matches!(b, 0 | 0x08 | CTRL_Z | 0x7F)
}

/// The text B0 and B1 compress: FBB's text conversion (lines ended by CR LF), each line
/// escaped. JNOS reads a received B0/B1 message by lines too.
pub fn file_text(text: &[u8]) -> Vec<u8> {
    let fbb = qtc_lzhuf::fbb_text(text);
    let mut out = Vec::with_capacity(fbb.len() + 16);
    let mut rest = &fbb[..];
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..nl];
        escape_line(line.strip_suffix(b"\r").unwrap_or(line), &mut out);
        out.extend_from_slice(b"\r\n");
        rest = &rest[nl + 1..];
    }
    escape_line(rest, &mut out);
    out
}

/// [`unescape`] of a text the caller owns: the text itself when nothing in it can be an
/// escape, which is most texts (no copy, and one quick look at each byte).
pub fn unescape_owned(text: Vec<u8>) -> Vec<u8> {
    if may_be_escaped(&text) {
        unescape(&text)
    } else {
        text
    }
}

/// Whether [`unescape`] could change `text`: a ^Z anywhere (the space after a line ending with
/// one), or a line (its line end counted) that starts with a space or is longer than a JNOS
/// piece (a space put where a piece starts).
/// (memchr's vector search: a byte-at-a-time look cost as much as the copy it saves.)
fn may_be_escaped(text: &[u8]) -> bool {
    if memchr::memchr(CTRL_Z, text).is_some() {
        return true;
    }
    let mut start = 0;
    let mut ends = memchr::memchr_iter(b'\n', text).chain(std::iter::once(text.len()));
    ends.any(|end| {
        let line = &text[start..end];
        start = end + 1;
        line.first() == Some(&b' ') || line.len() > JNOS_PIECE
    })
}

/// A message's text from a qtc partner (CR LF line ends, as the session hands it over) as the
/// partner had it: each line's escape taken off.
pub fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
        let line = &rest[..nl];
        let (line, cr) = match line.strip_suffix(b"\r") {
            Some(l) => (l, true),
            None => (line, false),
        };
        unescape_line(line, &mut out);
        out.extend_from_slice(if cr { b"\r\n" } else { b"\n" });
        rest = &rest[nl + 1..];
    }
    unescape_line(rest, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn escaped(line: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        escape_line(line, &mut out);
        out
    }

    fn unescaped(line: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        unescape_line(line, &mut out);
        out
    }

    #[test]
    fn a_line_a_receiver_would_end_a_message_at_gets_a_space() {
        for (line, want) in [
            (&b"/EX"[..], &b" /EX"[..]),
            (b"/ex", b" /ex"),
            (b"  /Ex", b"   /Ex"),
            (b"/EXIT now", b" /EXIT now"),
            (b"/ABORT", b" /ABORT"),
            (b"/ex\0after a NUL", b" /ex\0after a NUL"),
            (b"\x1aSP N0USR", b" \x1aSP N0USR"),
            (b"x\x1a", b"x\x1a "),
            (b"x\x1a  ", b"x\x1a   "),
            // Not read so by anyone: as it is.
            (
                b"SP N0USR @ N0QQQ < N0SYS $FORGED1",
                b"SP N0USR @ N0QQQ < N0SYS $FORGED1",
            ),
            (b"/ACK", b"/ACK"),
            (b"a /EX", b"a /EX"),
            (b"x\x1ay", b"x\x1ay"),
            (b"", b""),
        ] {
            assert_eq!(escaped(line), want, "{:?}", String::from_utf8_lossy(line));
            assert_eq!(unescaped(want), line);
        }
    }

    #[test]
    fn jnos_pieces_of_127_bytes_are_escaped_where_they_start() {
        let mut line = vec![b'a'; JNOS_PIECE];
        line.extend_from_slice(b"/EX");
        let out = escaped(&line);
        assert_eq!(&out[JNOS_PIECE..], b" /EX");
        assert_eq!(unescaped(&out), line);
        // Mid-piece, or the start of a longer piece, it is no line of its own.
        let mut line = vec![b'a'; 100];
        line.extend_from_slice(b"/EX");
        assert_eq!(escaped(&line), line);
        let mut line = vec![b'a'; JNOS_PIECE];
        line.extend_from_slice(b"/EXAMPLE");
        assert_eq!(escaped(&line), line);
    }

    #[test]
    fn text_for_another_reader_leaves_out_what_it_acts_on() {
        let mut out = Vec::new();
        emit_text(
            b"a\x00b\x08c\x7fd\r\n/E\x1aX\nlast",
            Reader::Other,
            b"\r",
            &mut out,
        );
        assert_eq!(out, b"abcd\r /EX\rlast\r\x1a\r");
        out.clear();
        emit_text(b"x\x1ay\r\n\x1a\r\n", Reader::Qtc, b"\r\n", &mut out);
        assert_eq!(out, b"x\x1ay\r\n \x1a \r\n\x1a\r\n");
        out.clear();
        emit_text(b"", Reader::Other, b"\r", &mut out);
        assert_eq!(out, b"\x1a\r");
        assert_eq!(Reader::of(Some("QTC")), Reader::Qtc);
        assert_eq!(Reader::of(Some("JNOS")), Reader::Other);
    }

    #[test]
    fn the_file_text_of_b0_and_b1_is_escaped_and_comes_back() {
        let text = b"R:x\r\n/EX\r\nSP N0USR\n\x1a\r\nend";
        let file = file_text(text);
        assert_eq!(file, b"R:x\r\n /EX\r\nSP N0USR\r\n \x1a \r\nend");
        assert_eq!(unescape(&file), b"R:x\r\n/EX\r\nSP N0USR\r\n\x1a\r\nend");
    }

    /// JNOS's pieces of a line: 127 bytes each (`cnt == MBXLINE - 1`), or `fgets` into 128.
    fn jnos_pieces(line: &[u8]) -> impl Iterator<Item = &[u8]> {
        line.chunks(JNOS_PIECE)
    }

    /// Whether any receiver would read a line of escaped text as protocol (see the module
    /// docs). `text_mode`: read as MBL or FBB ASCII lines, else as a B0/B1 file (JNOS only).
    fn read_as_protocol_by_someone(line: &[u8], text_mode: bool, reader: Reader) -> Option<&str> {
        for piece in jnos_pieces(line) {
            let c_string = piece.split(|&b| b == 0).next().unwrap_or_default();
            if c_string.eq_ignore_ascii_case(b"/ex") || piece.first() == Some(&CTRL_Z) {
                return Some("JNOS");
            }
            if text_mode && reader == Reader::Other && piece.iter().any(|&b| acted_on(b)) {
                return Some("JNOS (a byte it acts on)");
            }
        }
        if !text_mode {
            return None;
        }
        match reader {
            Reader::Other if starts_with_ci(line, b"/ex") || starts_with_ci(line, b"/ab") => {
                Some("LinFBB")
            }
            Reader::Other if line.contains(&CTRL_Z) => Some("LinFBB (^Z)"),
            _ if line.eq_ignore_ascii_case(b"/ex") => Some("LinBPQ, qtc"),
            _ if line.first() == Some(&CTRL_Z) || line.last() == Some(&CTRL_Z) => Some("qtc"),
            _ => None,
        }
    }

    fn hostile_line() -> impl Strategy<Value = Vec<u8>> {
        let token = prop::sample::select(vec![
            &b"/"[..],
            b"e",
            b"E",
            b"x",
            b"X",
            b"/ex",
            b"/EX",
            b"/ab",
            b" ",
            b"  ",
            b"\x1a",
            b"\x00",
            b"\x08",
            b"\x7f",
            b"a",
            b"SP N0USR",
            b"\xff",
        ]);
        let filler = prop::collection::vec(Just(b'a'), 0..300);
        (filler, prop::collection::vec(token, 0..12)).prop_map(|(fill, tokens)| {
            let mut l = Vec::new();
            for t in tokens {
                l.extend_from_slice(t);
            }
            // Put the hostile part at the start, or where a JNOS piece starts.
            if fill.len() % 2 == 0 {
                let mut at = vec![b'a'; fill.len() / JNOS_PIECE * JNOS_PIECE];
                at.extend_from_slice(&l);
                at
            } else {
                l
            }
        })
    }

    proptest! {
        #[test]
        fn escaping_comes_back_byte_for_byte(line in prop::collection::vec(any::<u8>(), 0..600)) {
            let line: Vec<u8> = line.into_iter().filter(|&b| b != b'\r' && b != b'\n').collect();
            prop_assert_eq!(unescaped(&escaped(&line)), line);
        }

        #[test]
        fn a_text_unescaped_in_place_is_the_same(lines in prop::collection::vec(hostile_line(), 0..6)) {
            let text = lines.join(&b"\r\n"[..]);
            prop_assert_eq!(unescape_owned(text.clone()), unescape(&text));
            let mut sent = Vec::new();
            for l in &lines {
                escape_line(l, &mut sent);
                sent.extend_from_slice(b"\r\n");
            }
            prop_assert_eq!(unescape_owned(sent.clone()), unescape(&sent));
        }

        #[test]
        fn hostile_lines_come_back_and_no_receiver_reads_them(line in hostile_line()) {
            let out = escaped(&line);
            prop_assert_eq!(&unescaped(&out), &line);
            prop_assert_eq!(read_as_protocol_by_someone(&out, true, Reader::Qtc), None);
            prop_assert_eq!(read_as_protocol_by_someone(&out, false, Reader::Qtc), None);
            let mut text = Vec::new();
            emit_text(&line, Reader::Other, b"\r", &mut text);
            let sent = text.strip_suffix(b"\x1a\r").unwrap();
            let sent = sent.strip_suffix(b"\r").unwrap_or(sent);
            prop_assert_eq!(read_as_protocol_by_someone(sent, true, Reader::Other), None, "{:?}", String::from_utf8_lossy(sent));
        }
    }
}
