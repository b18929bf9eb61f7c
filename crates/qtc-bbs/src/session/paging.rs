//! Listings and reads produced a piece at a time, paced twice: by the reader (the next piece
//! is made only when the transport has sent the last one: [`Session::more_output`]) and by the
//! user (`More?` after `page_len` lines).
//!
//! A paused listing keeps a cursor (the last message number shown) and asks the store for the
//! next page (`cmd/list.rs`); a paused read keeps the message being shown, how far its body is
//! read and the numbers still to read (`cmd/read.rs`). A piece is at most a page of listing
//! lines or a piece of body, so a user who stops reading in the middle of a 2 MB bulletin holds
//! one piece.

use super::{Session, State};
use crate::cmd::list::ListPager;
use crate::cmd::read::ReadPager;
use crate::lines::Line;

/// The question between pages.
pub(crate) const MORE: &str = "More? (Enter/A=abort/n=next message)\r";

/// Output waiting for the reader or behind a `More?` prompt.
pub(crate) enum Pager {
    List(ListPager),
    Read(ReadPager),
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
    pub(crate) fn start_output(&mut self, pager: Pager) {
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
    pub(crate) fn pause(&mut self, pager: Pager) {
        if self.page_left == 0 {
            self.say(MORE);
            self.state = State::More(pager);
        } else {
            self.state = State::Flow(pager);
        }
    }

    /// Answers `More?` for a paused output.
    pub(super) fn more(&mut self, pager: Pager, line: &[u8]) {
        match (answer(line), pager) {
            (Answer::Next, p) => self.start_output(p),
            (Answer::SkipMessage, Pager::Read(mut p)) => {
                p.skip_message();
                self.start_output(Pager::Read(p));
            }
            (Answer::SkipMessage, p) => self.start_output(p),
            (Answer::Abort, _) => {}
            (Answer::Command, _) => self.command(line),
        }
    }
}
