//! `OP [n]`: lines per page before `More?` (0: no paging), kept for the user's next sessions.

use super::help::Help;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["OP"],
    usage: "OP [n]",
    what: "lines per page, 0 = no paging",
    example: "OP 20",
};

pub(super) const USAGE: &str = "OP [n]";

impl Session {
    pub(super) fn page_length(&mut self, n: Option<usize>) {
        if let Some(n) = n {
            self.page_len = n;
            if let Some(user) = self.user.as_mut() {
                user.page_len = Some(n);
                self.save_user();
            }
        }
        match self.page_len {
            0 => self.say("Paging off.\r"),
            n => self.say(&format!("{n} lines per page.\r")),
        }
    }
}
