//! `WP call`, `W call`: the home BBS the white pages know for a callsign.

use qtc_mail::text::visible_line;
use qtc_mail::{MessageStore, StoreError};

use super::help::Help;
use crate::session::Session;
use crate::store::{BbsStore, Query};

pub(super) const HELP: Help = Help {
    names: &["WP", "W"],
    usage: "WP call",
    what: "white pages: home BBS of a call",
    example: "WP N0XYZ",
};

pub(super) const USAGE: &str = "WP call";

/// The home BBS the white pages know.
#[derive(Debug)]
struct HomeBbs {
    call: String,
}

impl Query<BbsStore> for HomeBbs {
    type Answer = Option<String>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Option<String>, StoreError> {
        store.home_bbs(&self.call)
    }
}

impl Session {
    pub(super) fn white_pages(&mut self, call: String) {
        let query = HomeBbs { call: call.clone() };
        self.request(query, move |s, home| s.show_home(&call, home));
    }

    fn show_home(&mut self, call: &str, home: Option<String>) {
        match home {
            Some(h) => self.say(&format!("{call}: home BBS {}\r", visible_line(&h))),
            None => self.say(&format!("No white pages entry for {call}.\r")),
        }
    }
}
