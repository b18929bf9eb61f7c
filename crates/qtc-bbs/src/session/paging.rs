//! Listings and reads produced a piece at a time, paced twice: by the reader (the next piece
//! is made only when the transport has sent the last one: [`Session::more_output`]) and by the
//! user (`More?` after `page_len` lines).
//!
//! A paused listing keeps a cursor (the last message number shown) and asks the store for the
//! next page; a paused read keeps the message being shown, how far its body is read and the
//! numbers still to read. A piece is at most [`LIST_PIECE`] lines or [`BODY_PIECE`] bytes of
//! body, so a user who stops reading in the middle of a 2 MB bulletin holds one piece.

use std::collections::VecDeque;

use qtc_mail::{ListFilter, Message, MessageHeader, MessageStore, StoreError};

use super::{Session, State};
use crate::lines::Line;
use crate::store::{Headers, MessageHead, Query};
use crate::view;

/// The question between pages.
pub(super) const MORE: &str = "More? (Enter/A=abort/n=next message)\r";

/// Listing lines asked of the store at once.
const LIST_PIECE: usize = 100;

/// Body bytes asked of the store at once.
pub(super) const BODY_PIECE: usize = 16 * 1024;

/// Output waiting for the reader or behind a `More?` prompt.
pub(super) enum Pager {
    List(ListPager),
    Read(ReadPager),
}

pub(super) struct ListPager {
    /// The user's filter, without page size or cursor.
    pub(super) filter: ListFilter,
    /// The last number shown; the next page starts after it.
    pub(super) cursor: Option<u64>,
    /// Lines still allowed in this listing (`LL n`, or the overall bound).
    pub(super) left: usize,
    /// The bound is ours, not the user's: say so when it cuts the listing.
    pub(super) capped: bool,
    /// Plain `L`: remember the highest number listed.
    pub(super) update_last: bool,
}

pub(super) struct ReadPager {
    pub(super) numbers: VecDeque<u64>,
    pub(super) verbose: bool,
    /// The message whose body is being read.
    pub(super) current: Option<Reading>,
    /// Text made and not sent yet, and how much of it is out.
    pub(super) text: Vec<u8>,
    pub(super) at: usize,
}

/// A message being shown.
pub(super) struct Reading {
    /// Its header, copies and files (no body).
    pub(super) head: Box<Message>,
    /// Body bytes read so far.
    pub(super) offset: u64,
    /// The unfinished UTF-8 character at the end of the last piece.
    pub(super) carry: Vec<u8>,
    /// The body's last byte seen.
    pub(super) last: Option<u8>,
}

/// How the user answered `More?`.
enum Answer {
    Next,
    Abort,
    SkipMessage,
    /// Anything else ends the output and runs as a command.
    Command,
}

fn answer(line: &[u8]) -> Answer {
    match line.trim_ascii() {
        b"" => Answer::Next,
        b"A" | b"a" => Answer::Abort,
        b"N" | b"n" => Answer::SkipMessage,
        _ => Answer::Command,
    }
}

/// `A` typed while output flows: it stops the output.
pub(super) fn is_abort(line: &Line) -> bool {
    matches!(line, Line::Text(t) if matches!(answer(t), Answer::Abort))
}

impl Session {
    /// Lines one page may take (everything when paging is off).
    fn page_budget(&self) -> usize {
        match self.page_len {
            0 => usize::MAX,
            n => n,
        }
    }

    /// Starts an output with a new page.
    pub(super) fn start_output(&mut self, pager: Pager) {
        self.page_left = self.page_budget();
        self.step(pager);
    }

    /// Produces the next piece, or asks the store for it.
    pub(super) fn step(&mut self, pager: Pager) {
        match pager {
            Pager::List(p) => self.list_step(p),
            Pager::Read(p) => self.read_step(p),
        }
    }

    /// After a piece: `More?` when the page is full, otherwise wait for the reader.
    fn pause(&mut self, pager: Pager) {
        if self.page_left == 0 {
            self.say(MORE);
            self.state = State::More(pager);
        } else {
            self.state = State::Flow(pager);
        }
    }

    fn list_step(&mut self, p: ListPager) {
        let mut f = p.filter.clone();
        let (lo, hi) = f.range.unwrap_or((0, u64::MAX));
        f.range = Some(match (p.cursor, f.oldest_first) {
            (None, _) => (lo, hi),
            (Some(c), false) => (lo, hi.min(c.saturating_sub(1))),
            (Some(c), true) => (lo.max(c.saturating_add(1)), hi),
        });
        // The column header is a line of the first page.
        let room = match p.cursor {
            None => self.page_left.saturating_sub(1).max(1),
            Some(_) => self.page_left,
        };
        let want = room.min(p.left).min(LIST_PIECE);
        // One more than shown tells whether another page follows.
        f.last = Some(want + 1);
        self.request(Headers(f), move |s, headers| s.list_page(p, want, headers));
    }

    fn list_page(&mut self, mut p: ListPager, want: usize, headers: Vec<MessageHeader>) {
        if p.cursor.is_none() {
            if headers.is_empty() {
                self.say("No messages.\r");
                return;
            }
            self.say(view::LIST_HEADER);
            self.page_left = self.page_left.saturating_sub(1).max(1);
        }
        let shown = &headers[..headers.len().min(want)];
        for h in shown {
            self.say(&view::list_line(h));
        }
        self.page_left -= shown.len().min(self.page_left);
        p.left -= shown.len();
        p.cursor = shown.last().map(|h| h.number).or(p.cursor);
        if p.update_last {
            let highest = shown.iter().map(|h| h.number).max().unwrap_or(0);
            self.listed_up_to(highest);
        }
        let more = headers.len() > shown.len();
        if more && p.left == 0 {
            if p.capped {
                let which = if p.filter.oldest_first {
                    "oldest"
                } else {
                    "newest"
                };
                self.say(&format!(
                    "(The {which} {} are shown; L n-m lists others.)\r",
                    super::MAX_LIST
                ));
            }
            return;
        }
        if more {
            self.pause(Pager::List(p));
        }
    }

    /// Sends what is made, up to the page's end; then reads on (body piece, next message).
    pub(super) fn read_step(&mut self, mut p: ReadPager) {
        if p.at < p.text.len() {
            let (bytes, lines) = lines_within(&p.text[p.at..], self.page_left, p.current.is_none());
            self.out.extend_from_slice(&p.text[p.at..p.at + bytes]);
            p.at += bytes;
            self.page_left -= lines.min(self.page_left);
            if p.at >= p.text.len() {
                p.text.clear();
                p.at = 0;
            }
            if p.text.is_empty() && p.current.is_none() && p.numbers.is_empty() {
                return;
            }
            return self.pause(Pager::Read(p));
        }
        if let Some(r) = &p.current {
            let (number, offset) = (r.head.header.number, r.offset);
            let query = Body {
                number,
                offset,
                len: BODY_PIECE,
            };
            return self.request(query, move |s, piece| s.read_body(p, piece));
        }
        if let Some(number) = p.numbers.pop_front() {
            // The status as this user sees it, as their listings show it.
            let reader = Some(self.me().0).filter(|me| !me.is_empty());
            let query = MessageHead { number, reader };
            self.request(query, move |s, m| s.read_head(p, number, m));
        }
    }

    /// Answers `More?` for a paused output.
    pub(super) fn more(&mut self, pager: Pager, line: &[u8]) {
        match (answer(line), pager) {
            (Answer::Next, p) => self.start_output(p),
            (Answer::SkipMessage, Pager::Read(mut p)) => {
                p.text.clear();
                p.at = 0;
                p.current = None;
                self.start_output(Pager::Read(p));
            }
            (Answer::SkipMessage, p) => self.start_output(p),
            (Answer::Abort, _) => {}
            (Answer::Command, _) => self.command(line),
        }
    }
}

/// A piece of a message's body.
#[derive(Debug)]
struct Body {
    number: u64,
    /// From this byte.
    offset: u64,
    /// At most this many bytes.
    len: usize,
}

impl Query for Body {
    type Answer = Vec<u8>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Vec<u8>, StoreError> {
        store.body_chunk(self.number, self.offset, self.len)
    }
}

/// How many bytes of `text` hold its first `max` lines (a line ends in CR, LF or CR LF), and
/// how many lines that is. An unterminated tail counts as a line when `tail_ends` (the text is
/// all there is); otherwise it is the start of a line whose end comes in the next piece.
fn lines_within(text: &[u8], max: usize, tail_ends: bool) -> (usize, usize) {
    let mut at = 0;
    let mut lines = 0;
    while lines < max && at < text.len() {
        match text[at..].iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(i) => {
                let end = at + i + 1;
                at = if text[at + i] == b'\r' && text.get(end) == Some(&b'\n') {
                    end + 1
                } else {
                    end
                };
                lines += 1;
            }
            None => {
                at = text.len();
                lines += usize::from(tail_ends);
            }
        }
    }
    (at, lines)
}

#[cfg(test)]
mod tests {
    use super::lines_within;

    #[test]
    fn pages_split_at_any_line_end() {
        let text = b"a\r\nb\rc\nd";
        assert_eq!(lines_within(text, 1, true), (3, 1));
        assert_eq!(lines_within(text, 2, true), (5, 2));
        assert_eq!(lines_within(text, 3, true), (7, 3));
        assert_eq!(lines_within(text, 9, true), (8, 4));
        assert_eq!(lines_within(b"", 3, true), (0, 0));
        // A line cut between two body pieces is counted once, with its end.
        assert_eq!(lines_within(text, 9, false), (8, 3));
    }
}
