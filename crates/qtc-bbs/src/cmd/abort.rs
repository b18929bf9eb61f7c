//! `A`, `ABORT`: stops a listing or a read, at `More?` or while it is still arriving
//! (`session/paging.rs` takes it there); at the prompt there is nothing left to stop.

use super::help::Help;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["A", "ABORT"],
    usage: "A",
    what: "abort output (also at More?)",
    example: "A",
};

impl Session {
    pub(super) fn abort(&mut self) {
        self.say("Nothing to abort.\r");
    }
}
