//! Listings and reads produced one page at a time.
//!
//! A paused listing keeps a cursor (the last message number shown) and asks the store for the
//! next page when the user presses Enter; a paused read keeps the message being shown and the
//! numbers still to read. Nothing else is held, so a user who walks away at `More?` costs a few
//! bytes and no work.

use std::collections::VecDeque;

use qtc_mail::{ListFilter, MessageStore, StoreError};

use super::{Session, State};
use crate::view;

/// The question between pages.
pub(super) const MORE: &str = "More? (Enter/A=abort/n=next message)\r";

/// Output waiting behind a `More?` prompt.
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
    /// The message being shown and how much of it is out.
    pub(super) text: Vec<u8>,
    pub(super) at: usize,
}

/// How the user answered `More?`.
pub(super) enum Answer {
    Next,
    Abort,
    SkipMessage,
    /// Anything else ends the output and runs as a command.
    Command,
}

pub(super) fn answer(line: &[u8]) -> Answer {
    match line.trim_ascii() {
        b"" => Answer::Next,
        b"A" | b"a" => Answer::Abort,
        b"N" | b"n" => Answer::SkipMessage,
        _ => Answer::Command,
    }
}

impl Session {
    /// Lines one page may take (everything when paging is off).
    fn page_budget(&self) -> usize {
        match self.page_len {
            0 => usize::MAX,
            n => n,
        }
    }

    /// Produces the next page; leaves the session at `More?` if anything is left.
    pub(super) fn page(
        &mut self,
        pager: Pager,
        store: &mut dyn MessageStore,
    ) -> Result<(), StoreError> {
        let more = match pager {
            Pager::List(p) => self.list_page(p, store)?.map(Pager::List),
            Pager::Read(p) => self.read_page(p, store)?.map(Pager::Read),
        };
        if let Some(p) = more {
            self.say(MORE);
            self.state = State::More(p);
        }
        Ok(())
    }

    fn list_page(
        &mut self,
        mut p: ListPager,
        store: &mut dyn MessageStore,
    ) -> Result<Option<ListPager>, StoreError> {
        let mut budget = self.page_budget();
        let mut f = p.filter.clone();
        let (lo, hi) = f.range.unwrap_or((0, u64::MAX));
        f.range = Some(match (p.cursor, f.oldest_first) {
            (None, _) => (lo, hi),
            (Some(c), false) => (lo, hi.min(c.saturating_sub(1))),
            (Some(c), true) => (lo.max(c.saturating_add(1)), hi),
        });
        if p.cursor.is_none() {
            // The column header is a line of the first page.
            budget = budget.saturating_sub(1).max(1);
        }
        let want = budget.min(p.left);
        // One more than shown tells whether another page follows.
        f.last = Some(want.saturating_add(1));
        let headers = store.list(&f)?;
        if p.cursor.is_none() {
            if headers.is_empty() {
                self.say("No messages.\r");
                return Ok(None);
            }
            self.say(view::LIST_HEADER);
        }
        let shown = &headers[..headers.len().min(want)];
        for h in shown {
            self.say(&view::list_line(h));
        }
        p.left -= shown.len();
        p.cursor = shown.last().map(|h| h.number).or(p.cursor);
        if p.update_last {
            let highest = shown.iter().map(|h| h.number).max().unwrap_or(0);
            self.listed_up_to(highest, store);
        }
        let more = headers.len() > shown.len();
        if more && p.left == 0 {
            if p.capped {
                let which = if f.oldest_first { "oldest" } else { "newest" };
                self.say(&format!(
                    "(The {which} {} are shown; L n-m lists others.)\r",
                    super::MAX_LIST
                ));
            }
            return Ok(None);
        }
        Ok(more.then_some(p))
    }

    fn read_page(
        &mut self,
        mut p: ReadPager,
        store: &mut dyn MessageStore,
    ) -> Result<Option<ReadPager>, StoreError> {
        let mut budget = self.page_budget();
        while budget > 0 {
            if p.at >= p.text.len() {
                let Some(n) = p.numbers.pop_front() else {
                    return Ok(None);
                };
                p.text.clear();
                p.at = 0;
                if !self.open_message(n, p.verbose, &mut p.text, store)? {
                    self.say(&format!("No message #{n} for you.\r"));
                    budget -= 1;
                    continue;
                }
            }
            let (bytes, lines) = lines_within(&p.text[p.at..], budget);
            self.out.extend_from_slice(&p.text[p.at..p.at + bytes]);
            p.at += bytes;
            budget -= lines;
        }
        let done = p.at >= p.text.len() && p.numbers.is_empty();
        Ok((!done).then_some(p))
    }

    /// Answers `More?` for a paused output.
    pub(super) fn more(
        &mut self,
        pager: Pager,
        line: &[u8],
        store: &mut dyn MessageStore,
    ) -> Result<(), StoreError> {
        match (answer(line), pager) {
            (Answer::Next, p) => self.page(p, store),
            (Answer::SkipMessage, Pager::Read(mut p)) => {
                p.at = p.text.len();
                self.page(Pager::Read(p), store)
            }
            (Answer::SkipMessage, p) => self.page(p, store),
            (Answer::Abort, _) => Ok(()),
            (Answer::Command, _) => {
                self.command(line, store);
                Ok(())
            }
        }
    }
}

/// How many bytes of `text` hold its first `max` lines (a line ends in CR, LF or CR LF; an
/// unterminated tail counts as a line), and how many lines that is.
fn lines_within(text: &[u8], max: usize) -> (usize, usize) {
    let mut at = 0;
    let mut lines = 0;
    while lines < max && at < text.len() {
        at = match text[at..].iter().position(|&b| b == b'\r' || b == b'\n') {
            Some(i) => {
                let end = at + i + 1;
                if text[at + i] == b'\r' && text.get(end) == Some(&b'\n') {
                    end + 1
                } else {
                    end
                }
            }
            None => text.len(),
        };
        lines += 1;
    }
    (at, lines)
}

#[cfg(test)]
mod tests {
    use super::lines_within;

    #[test]
    fn pages_split_at_any_line_end() {
        let text = b"a\r\nb\rc\nd";
        assert_eq!(lines_within(text, 1), (3, 1));
        assert_eq!(lines_within(text, 2), (5, 2));
        assert_eq!(lines_within(text, 3), (7, 3));
        assert_eq!(lines_within(text, 9), (8, 4));
        assert_eq!(lines_within(b"", 3), (0, 0));
    }
}
