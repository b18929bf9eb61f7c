//! `L` and its family (`LL`, `LB`, `L<`, `LM`, `LN`...): a listing, read from the store a page
//! at a time as the user reads it.

use qtc_mail::{ListFilter, MessageHeader, MsgStatus, MsgType};

use super::help::Help;
use super::CommandError;
use crate::session::paging::Pager;
use crate::session::Session;
use crate::store::Headers;
use crate::view;

pub(super) const HELP: Help = Help {
    names: &[
        "L", "LM", "LN", "LY", "LB", "LP", "LT", "LR", "LL", "LH", "LK", "L<", "L>", "L@",
    ],
    usage: "L[M|N|Y|B|P|T|R] [n[-m]] [<|>|@ x]",
    what: "list: new since last L; filters combine",
    example: "LB 100-200 > ALL",
};

const USAGE: &str = "L[M|N|Y|B|P|T|R] [n[-m]] [< call] [> call] [@ area] | LL n";

/// The most lines one listing shows.
pub(crate) const MAX_LIST: usize = 1000;

/// Listing lines asked of the store at once.
const LIST_PIECE: usize = 100;

/// Which messages by status a listing wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStatus {
    /// `LN`: not read by the user: their own new mail and the bulletins they have not read.
    UnreadMine,
    /// `LY`: read.
    Read,
    /// `LH`: held (sysop).
    Held,
    /// `LK`: killed (sysop).
    Killed,
}

/// What to list: the `L` family, whose letters and arguments combine as on MBL, FBB and BPQ
/// (`LB 100-200`, `LB > ALL`, `LR 3`, `L> N0CALL @ WW`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListWhat {
    /// `LM`: addressed to the user.
    pub mine: bool,
    /// `LB`, `LP`, `LT`: of one type.
    pub kind: Option<MsgType>,
    /// `LN`, `LY`, `LH`, `LK`.
    pub status: Option<ListStatus>,
    /// `LL n`: the newest n.
    pub last: Option<usize>,
    /// `L n-m`, or `L n` (from n up).
    pub range: Option<(u64, u64)>,
    /// `L< CALL`: from a sender.
    pub from: Option<String>,
    /// `L> CALL`: to an addressee.
    pub to: Option<String>,
    /// `L@ AREA`: at a BBS or distribution area.
    pub at: Option<String>,
    /// `LR`: oldest first.
    pub oldest_first: bool,
}

impl ListWhat {
    /// Plain `L`: what is new since the user's last `L`.
    pub fn is_new_since_last(&self) -> bool {
        *self == ListWhat::default()
    }
}

/// `word` (`L` and its letters, maybe with a filter attached: `L<N0ABC`) and its arguments.
pub(super) fn parse(word: &str, args: &[&str]) -> Result<ListWhat, CommandError> {
    let upper = word.to_ascii_uppercase();
    // The letters after L, then any `<`, `>`, `@` filter attached to the word (`L<N0ABC`).
    let split = upper[1..]
        .find(['<', '>', '@'])
        .map_or(upper.len(), |i| i + 1);
    let mut w = ListWhat::default();
    let count_next = letters(&mut w, &upper[1..split], word)?;
    let mut tokens: Vec<&str> = Vec::new();
    if split < upper.len() {
        tokens.push(&word[split..]);
    }
    tokens.extend_from_slice(args);
    arguments(&mut w, tokens, count_next)?;
    if count_next && w.last.is_none() {
        return Err(CommandError::Usage(USAGE));
    }
    Ok(w)
}

/// The letters after `L`; true for `LL` (a count follows).
fn letters(w: &mut ListWhat, letters: &str, word: &str) -> Result<bool, CommandError> {
    let mut count_next = false;
    let set_status = |w: &mut ListWhat, s| match w.status.replace(s) {
        None => Ok(()),
        Some(_) => Err(CommandError::Usage(USAGE)),
    };
    for letter in letters.chars() {
        match letter {
            'M' => w.mine = true,
            'B' | 'P' | 'T' if w.kind.is_none() => {
                w.kind = MsgType::from_letter(letter);
            }
            'N' => set_status(w, ListStatus::UnreadMine)?,
            'Y' => set_status(w, ListStatus::Read)?,
            'H' => set_status(w, ListStatus::Held)?,
            'K' => set_status(w, ListStatus::Killed)?,
            'R' => w.oldest_first = true,
            'L' if !count_next => count_next = true,
            _ => return Err(CommandError::Unknown(word.to_string())),
        }
    }
    Ok(count_next)
}

/// The filters (`< CALL`, `>CALL`, `@ AREA`), the count after `LL` and a range.
fn arguments(w: &mut ListWhat, tokens: Vec<&str>, count_next: bool) -> Result<(), CommandError> {
    let usage = || CommandError::Usage(USAGE);
    let mut tokens = tokens.into_iter();
    while let Some(tok) = tokens.next() {
        let op = tok.chars().next().unwrap_or(' ');
        if matches!(op, '<' | '>' | '@') {
            let value = match &tok[1..] {
                "" => tokens.next().ok_or_else(usage)?,
                attached => attached,
            };
            let value = Some(value.to_ascii_uppercase());
            match op {
                '<' => w.from = value,
                '>' => w.to = value,
                _ => w.at = value,
            }
        } else if count_next && w.last.is_none() {
            w.last = Some(tok.parse().map_err(|_| usage())?);
        } else if w.range.is_none() {
            let num = |s: &str| s.parse::<u64>().map_err(|_| usage());
            w.range = Some(match tok.split_once('-') {
                Some((lo, hi)) => (num(lo)?, num(hi)?),
                None => (num(tok)?, u64::MAX),
            });
        } else {
            return Err(usage());
        }
    }
    Ok(())
}

/// A listing being shown.
pub(crate) struct ListPager {
    /// The user's filter, without page size or cursor.
    filter: ListFilter,
    /// The last number shown; the next page starts after it.
    cursor: Option<u64>,
    /// Lines still allowed in this listing (`LL n`, or the overall bound).
    left: usize,
    /// The bound is ours, not the user's: say so when it cuts the listing.
    capped: bool,
    /// Plain `L`: remember the highest number listed.
    update_last: bool,
}

impl Session {
    pub(super) fn list(&mut self, what: ListWhat) {
        let (me, sysop, _) = self.me();
        let update_last = what.is_new_since_last();
        let mut f = ListFilter {
            visible_to: (!sysop).then(|| me.clone()),
            kind: what.kind,
            range: what.range,
            from: what.from,
            to: what.to,
            at: what.at,
            oldest_first: what.oldest_first,
            // The status column shows this user's own read marks, the sysop's too.
            reader: Some(me.clone()),
            ..Default::default()
        };
        if update_last {
            f.after = self.user.as_ref().map(|u| u.last_listed);
        }
        if what.mine {
            f.to_or_copy = Some(me.clone());
        }
        match what.status {
            None => {}
            Some(ListStatus::Held | ListStatus::Killed) if !sysop => {
                self.say("*** Only the sysop may list held or killed messages.\r");
                return;
            }
            // Their own new mail and every bulletin they have not read.
            Some(ListStatus::UnreadMine) => f.unread_by = Some(me),
            Some(ListStatus::Read) => f.status = Some(MsgStatus::Read),
            Some(ListStatus::Held) => f.status = Some(MsgStatus::Held),
            Some(ListStatus::Killed) => f.status = Some(MsgStatus::Killed),
        }
        // A listing is bounded, and read a page at a time: a new user's first L on a big store
        // costs one page's query, and one more per page the user asks for.
        let (left, capped) = match what.last {
            Some(n) if n <= MAX_LIST => (n, false),
            _ => (MAX_LIST, true),
        };
        let pager = ListPager {
            filter: f,
            cursor: None,
            left,
            capped,
            update_last,
        };
        self.start_output(Pager::List(pager));
    }

    /// Asks the store for the next page.
    pub(crate) fn list_step(&mut self, p: ListPager) {
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
                    "(The {which} {MAX_LIST} are shown; L n-m lists others.)\r"
                ));
            }
            return;
        }
        if more {
            self.pause(Pager::List(p));
        }
    }

    /// Plain `L` listed messages up to `highest`: the next plain `L` starts above it.
    fn listed_up_to(&mut self, highest: u64) {
        let Some(user) = self.user.as_mut() else {
            return;
        };
        if highest <= user.last_listed {
            return;
        }
        user.last_listed = highest;
        self.save_user();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::{parse, Command};

    fn list(line: &str) -> ListWhat {
        match parse(line) {
            Ok(Command::List(w)) => w,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn list_forms() {
        assert!(list("l").is_new_since_last());
        assert_eq!(list("LL 20").last, Some(20));
        assert_eq!(list("L 5-9").range, Some((5, 9)));
        assert_eq!(list("L 5").range, Some((5, u64::MAX)));
        for l in ["L< n0abc", "L<N0ABC", "L < N0ABC", "l <n0abc"] {
            assert_eq!(list(l).from.as_deref(), Some("N0ABC"), "{l}");
        }
        assert_eq!(list("L> N0X").to.as_deref(), Some("N0X"));
        assert_eq!(list("L@ ww").at.as_deref(), Some("WW"));
        assert_eq!(list("LB").kind, Some(MsgType::Bulletin));
        assert!(list("LM").mine);
        assert_eq!(list("LN").status, Some(ListStatus::UnreadMine));
        assert_eq!(list("LY").status, Some(ListStatus::Read));
        assert_eq!(list("LK").status, Some(ListStatus::Killed));
        assert!(list("LR").oldest_first);
        assert_eq!(parse("LC"), Ok(Command::Categories));
        assert!(matches!(parse("LL x"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LL"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("L<"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("L 1 2"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LNY"), Err(CommandError::Usage(_))));
        assert!(matches!(parse("LQ"), Err(CommandError::Unknown(_))));
    }

    #[test]
    fn list_filters_combine() {
        let w = list("LB 100-200 > ALL @WW");
        assert_eq!(w.kind, Some(MsgType::Bulletin));
        assert_eq!(w.range, Some((100, 200)));
        assert_eq!(w.to.as_deref(), Some("ALL"));
        assert_eq!(w.at.as_deref(), Some("WW"));
        let w = list("LBR 3");
        assert!(w.oldest_first && w.range == Some((3, u64::MAX)));
        let w = list("LL 5 < N0ABC");
        assert_eq!((w.last, w.from.as_deref()), (Some(5), Some("N0ABC")));
        let w = list("L>N0X 7");
        assert_eq!(
            (w.to.as_deref(), w.range),
            (Some("N0X"), Some((7, u64::MAX)))
        );
    }
}
