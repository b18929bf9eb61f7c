//! `CONV [n]`, `CHAT [n]`: the user enters the conference on channel n; the daemon runs it
//! (`qtc_bbs::Conv` and the daemon's conference) and answers when the user leaves.

use super::help::Help;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["CONV", "CHAT"],
    usage: "CONV [n] | CHAT [n]",
    what: "conference, channel n; /W who, /Q quit",
    example: "CONV 1",
};

pub(super) const USAGE: &str = "CONV [channel]";

impl Session {
    /// Back from the conference.
    pub(super) fn conference_left(&mut self) {
        self.say("*** Left the conference.\r");
    }
}
