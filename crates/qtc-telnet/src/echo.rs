//! Server-side echo and line editing for a client in character mode.
//!
//! A client that asked us to suppress go-ahead (and agreed to our ECHO) sends every key as it is
//! typed and shows only what we send back. [`Editor`] keeps the line being typed so that erasing
//! keys erase what is on the screen and nothing more (never the prompt): BS and DEL one
//! character, Ctrl-U the line, Ctrl-W the last word. The bytes themselves still go to the
//! application, whose line splitter applies the same edits.

/// Backspace.
pub(crate) const BS: u8 = 0x08;
/// Delete (what most terminals send for the Backspace key).
pub(crate) const DEL: u8 = 0x7f;
/// Ctrl-U: erase the line.
pub(crate) const CTRL_U: u8 = 0x15;
/// Ctrl-W: erase the last word.
pub(crate) const CTRL_W: u8 = 0x17;

/// Longest line echoed; keys past it are not shown (the BBS refuses such lines anyway).
const MAX_ECHO_LINE: usize = 1024;

/// What is on the screen of the line being typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Editor {
    line: Vec<u8>,
    /// The last key was CR: an LF right after it is the same Enter.
    after_cr: bool,
    /// Inside a key's escape sequence (arrow keys: `ESC [ A`), which the BBS drops from the
    /// line: nothing of it is shown.
    escape: Escape,
}

/// How far into an ECMA-48 escape sequence the keys are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Escape {
    #[default]
    None,
    /// After ESC.
    Start,
    /// After `ESC [`: until a final byte 0x40-0x7E.
    Csi,
    /// After `ESC O`: one more byte.
    OneMore,
}

/// ESC.
const ESC: u8 = 0x1b;

impl Editor {
    /// Appends to `echo` what the screen needs for the keys in `typed`.
    pub(crate) fn keys(&mut self, typed: &[u8], echo: &mut Vec<u8>) {
        for &b in typed {
            if self.in_escape(b) {
                continue;
            }
            let after_cr = std::mem::take(&mut self.after_cr);
            match b {
                b'\r' | b'\n' => {
                    if !(b == b'\n' && after_cr) {
                        echo.extend_from_slice(b"\r\n");
                        self.line.clear();
                    }
                    self.after_cr = b == b'\r';
                }
                BS | DEL => self.erase(1, echo),
                CTRL_U => self.erase(self.line.len(), echo),
                CTRL_W => {
                    let kept = last_word_start(&self.line);
                    self.erase(self.line.len() - kept, echo);
                }
                // Other control characters have no glyph to show.
                0..=0x1f => {}
                _ if self.line.len() < MAX_ECHO_LINE => {
                    self.line.push(b);
                    echo.push(b);
                }
                _ => {}
            }
        }
    }

    /// Whether `b` is part of an escape sequence (never shown).
    fn in_escape(&mut self, b: u8) -> bool {
        self.escape = match (self.escape, b) {
            (Escape::None, ESC) => Escape::Start,
            (Escape::None, _) => return false,
            (Escape::Start, b'[') => Escape::Csi,
            (Escape::Start, b'O') => Escape::OneMore,
            (Escape::Csi, 0x20..=0x3f) => Escape::Csi,
            _ => Escape::None,
        };
        true
    }

    /// Forgets the line (it was typed while echo was off).
    pub(crate) fn clear(&mut self) {
        self.line.clear();
        self.after_cr = false;
    }

    fn erase(&mut self, n: usize, echo: &mut Vec<u8>) {
        let n = n.min(self.line.len());
        self.line.truncate(self.line.len() - n);
        for _ in 0..n {
            echo.extend_from_slice(b"\x08 \x08");
        }
    }
}

/// Where the last word of `line` starts: trailing blanks and the word before them go on Ctrl-W.
pub(crate) fn last_word_start(line: &[u8]) -> usize {
    let end = line.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
    line[..end]
        .iter()
        .rposition(|&b| b == b' ')
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(keys: &[u8]) -> Vec<u8> {
        let mut e = Editor::default();
        let mut echo = Vec::new();
        e.keys(keys, &mut echo);
        echo
    }

    #[test]
    fn backspace_erases_what_was_typed_and_never_the_prompt() {
        assert_eq!(screen(b"LX\x7fB"), b"LX\x08 \x08B");
        assert_eq!(screen(b"\x08\x7fA"), b"A");
    }

    #[test]
    fn enter_is_one_new_line_whatever_the_client_sends() {
        assert_eq!(screen(b"a\r\nb\rc\n"), b"a\r\nb\r\nc\r\n");
        assert_eq!(screen(b"ab\r\x7f"), b"ab\r\n", "the new line is empty");
    }

    #[test]
    fn ctrl_u_and_ctrl_w() {
        assert_eq!(screen(b"ab\x15c"), b"ab\x08 \x08\x08 \x08c");
        assert_eq!(screen(b"L  xy \x17"), b"L  xy \x08 \x08\x08 \x08\x08 \x08");
        assert_eq!(last_word_start(b"SP N0CALL  "), 3);
        assert_eq!(last_word_start(b"word"), 0);
    }

    #[test]
    fn arrow_keys_are_not_shown() {
        assert_eq!(screen(b"L\x1b[AL\x1bOB\x1b[15~"), b"LL");
    }

    #[test]
    fn control_characters_are_not_shown_and_lines_are_bounded() {
        assert_eq!(screen(b"a\x01\x1ab"), b"ab");
        assert_eq!(screen(&[b'x'; MAX_ECHO_LINE + 10]).len(), MAX_ECHO_LINE);
    }
}
