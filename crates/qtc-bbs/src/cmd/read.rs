//! `R n...`, `V n...` (with the R: lines) and `RM`/`RN` (your unread mail): reading messages,
//! a piece of body at a time, as fast as the user reads them.

use std::collections::VecDeque;

use qtc_callsign::Callsign;
use qtc_mail::{ListFilter, Message, MessageHeader, MessageStore, MsgStatus, MsgType, StoreError};

use super::help::Help;
use super::{numbers, Command, CommandError};
use crate::session::paging::{Pager, MORE};
use crate::session::{Session, State};
use crate::store::{BbsStore, Headers, MessageHead, Query};
use crate::view;

pub(super) const HELP: Help = Help {
    names: &["R", "RM", "RN", "V"],
    usage: "R n [n..] | RM | RN | V n",
    what: "read; your unread; V with R: lines",
    example: "R 12 13",
};

pub(super) const USAGE: &str = "R n [n...] | RM | V n";

/// Body bytes asked of the store at once.
pub(crate) const BODY_PIECE: usize = 16 * 1024;

/// `R n...` (or `V n...` with `verbose`).
pub(super) fn parse(args: &[&str], verbose: bool) -> Result<Command, CommandError> {
    numbers(args, USAGE).map(|numbers| Command::Read { numbers, verbose })
}

/// The messages being read.
pub(crate) struct ReadPager {
    numbers: VecDeque<u64>,
    verbose: bool,
    /// The message whose body is being read.
    current: Option<Reading>,
    /// Text made and not sent yet, and how much of it is out.
    text: Vec<u8>,
    at: usize,
}

impl ReadPager {
    /// `n` at `More?`: on to the next message.
    pub(crate) fn skip_message(&mut self) {
        self.text.clear();
        self.at = 0;
        self.current = None;
    }
}

/// A message being shown.
struct Reading {
    /// Its header, copies and files (no body).
    head: Box<Message>,
    /// Body bytes read so far.
    offset: u64,
    /// The unfinished UTF-8 character at the end of the last piece.
    carry: Vec<u8>,
    /// The body's last byte seen.
    last: Option<u8>,
}

impl Session {
    /// Whether this user may see a message; `copies` are its other recipients (Winlink Cc).
    pub(super) fn may_read(&self, h: &MessageHeader, copies: &[String]) -> bool {
        let (me, sysop, _) = self.me();
        // Held mail is the sysop's alone until released, even for its sender and addressees.
        sysop
            || (!matches!(h.status, MsgStatus::Killed | MsgStatus::Held)
                && (h.kind != MsgType::Personal
                    || h.to == me
                    || h.from == me
                    || copies.contains(&me)))
    }

    pub(super) fn read(&mut self, numbers: VecDeque<u64>, verbose: bool) {
        let pager = ReadPager {
            numbers,
            verbose,
            current: None,
            text: Vec::new(),
            at: 0,
        };
        self.start_output(Pager::Read(pager));
    }

    /// Sends what is made, up to the page's end; then reads on (body piece, next message).
    pub(crate) fn read_step(&mut self, mut p: ReadPager) {
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
            let reader = self.my_call();
            let query = MessageHead { number, reader };
            self.request(query, move |s, m| s.read_head(p, number, m));
        }
    }

    /// The head of message `n` is here: shown if this user may read it (and their copy marked
    /// read if they are one of its recipients), then its body follows.
    fn read_head(&mut self, mut p: ReadPager, n: u64, m: Option<Box<Message>>) {
        match m {
            Some(m) if self.may_read(&m.header, &m.copies) => {
                view::message_head(&m, p.verbose, &mut p.text);
                if let Some(reader) = self.my_call() {
                    self.save(MarkRead { number: n, reader });
                }
                self.last_read = Some(n);
                p.current = Some(Reading {
                    head: m,
                    offset: 0,
                    carry: Vec::new(),
                    last: None,
                });
            }
            _ => {
                self.say(&format!("No message #{n} for you.\r"));
                self.page_left = self.page_left.saturating_sub(1);
                if self.page_left == 0 && !p.numbers.is_empty() {
                    self.say(MORE);
                    self.state = State::More(Pager::Read(p));
                    return;
                }
            }
        }
        self.read_step(p);
    }

    /// A piece of the current body: made into text, the rest of the message after its end.
    fn read_body(&mut self, mut p: ReadPager, piece: Vec<u8>) {
        let Some(mut r) = p.current.take() else {
            return self.read_step(p);
        };
        r.offset += piece.len() as u64;
        r.last = piece.last().copied().or(r.last);
        let ended = piece.len() < BODY_PIECE;
        let mut bytes = std::mem::take(&mut r.carry);
        bytes.extend_from_slice(&piece);
        if !ended {
            let whole = qtc_mail::text::complete_utf8(&bytes);
            r.carry = bytes.split_off(whole);
        }
        view::body_piece(&r.head.charset, &bytes, self.cfg.raw_bodies, &mut p.text);
        if ended {
            view::message_tail(&r.head, r.last, &mut p.text);
        } else {
            p.current = Some(r);
        }
        self.read_step(p);
    }

    /// `RM`, `RN`: the user's unread mail, oldest first.
    pub(super) fn read_mine(&mut self) {
        let (me, _, _) = self.me();
        let f = ListFilter {
            to_or_copy: Some(me),
            status: Some(MsgStatus::New),
            oldest_first: true,
            ..Default::default()
        };
        self.request(Headers(f), Session::read_mine_listed);
    }

    fn read_mine_listed(&mut self, headers: Vec<MessageHeader>) {
        if headers.is_empty() {
            self.say("You have no unread messages.\r");
            return;
        }
        self.read(headers.iter().map(|h| h.number).collect(), false);
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

impl Query<BbsStore> for Body {
    type Answer = Vec<u8>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Vec<u8>, StoreError> {
        store.body_chunk(self.number, self.offset, self.len)
    }
}

/// `reader` read it: their copy is marked read if they are one of its recipients.
#[derive(Debug)]
struct MarkRead {
    number: u64,
    reader: Callsign,
}

impl Query<BbsStore> for MarkRead {
    type Answer = ();
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<(), StoreError> {
        store.mark_read(self.number, self.reader)
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
