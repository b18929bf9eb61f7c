//! `B`, `BYE`: log off.

use super::help::Help;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["B", "BYE"],
    usage: "B | BYE",
    what: "log off",
    example: "B",
};

impl Session {
    pub(super) fn bye(&mut self) {
        let (call, _, _) = self.me();
        self.say(&format!("73 {call}, de {}. Goodbye.\r", self.cfg.callsign));
        self.close();
    }
}
