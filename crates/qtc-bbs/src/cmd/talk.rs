//! `T text`, `TALK text`: the user pages the sysop: a line on every sysop session, in the log
//! and on the web Status page, a few times per session at most.

use super::help::Help;
use crate::session::{Event, Session};

pub(super) const HELP: Help = Help {
    names: &["T", "TALK"],
    usage: "T text",
    what: "page the sysop",
    example: "T are you around?",
};

pub(super) const USAGE: &str = "T text";

/// The longest page to the sysop kept (a line on the sysop's screen).
const MAX_PAGE_TEXT: usize = 60;

/// Pages to the sysop (`T`) a session may send within [`PAGE_WINDOW`]: each one is a line on
/// every sysop session, in the log and on the web.
const MAX_PAGES: usize = 3;

/// The window [`MAX_PAGES`] counts over, in seconds.
const PAGE_WINDOW: i64 = 10 * 60;

impl Session {
    pub(super) fn page_sysop(&mut self, text: String) {
        let now = self.now;
        while self.pages.front().is_some_and(|&t| now - t >= PAGE_WINDOW) {
            self.pages.pop_front();
        }
        if self.pages.len() >= MAX_PAGES {
            self.say(&format!(
                "*** You have paged the sysop {MAX_PAGES} times in {} minutes: try again later.\r",
                PAGE_WINDOW / 60
            ));
            return;
        }
        self.pages.push_back(now);
        let Some(from) = self.my_call() else {
            return;
        };
        let text: String = text.chars().take(MAX_PAGE_TEXT).collect();
        self.events.push_back(Event::PageSysop { from, text });
        self.say("The sysop has been paged.\r");
    }
}
