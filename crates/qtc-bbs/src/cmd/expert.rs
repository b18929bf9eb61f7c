//! `X`: expert mode, the prompt shrinks to `>` (again: back).

use super::help::Help;
use crate::session::Session;

pub(super) const HELP: Help = Help {
    names: &["X"],
    usage: "X",
    what: "expert mode: short prompt on/off",
    example: "X",
};

impl Session {
    pub(super) fn expert(&mut self) {
        self.expert = !self.expert;
        self.say(if self.expert {
            "Expert mode: short prompts.\r"
        } else {
            "Expert mode off.\r"
        });
    }
}
