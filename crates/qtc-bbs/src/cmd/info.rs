//! `I`: about this BBS (its counts and the sysop's text); `V`: the software's version.

use qtc_mail::{MessageStore, StoreError};

use super::help::Help;
use crate::session::Session;
use crate::store::{BbsStore, Query};

pub(super) const HELP_INFO: Help = Help {
    names: &["I"],
    usage: "I",
    what: "about this BBS",
    example: "I",
};

pub(super) const HELP_VERSION: Help = Help {
    names: &["V"],
    usage: "V",
    what: "software version",
    example: "V",
};

/// Active messages and the latest number.
#[derive(Debug)]
struct Counts;

impl Query<BbsStore> for Counts {
    type Answer = (u64, u64);
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<(u64, u64), StoreError> {
        store.counts()
    }
}

impl Session {
    pub(super) fn info(&mut self) {
        self.request(Counts, |s, (active, latest)| s.show_info(active, latest));
    }

    fn show_info(&mut self, active: u64, latest: u64) {
        self.say(&format!(
            "{} BBS, {} - qtc {}.\r{active} active messages, latest #{latest}.\r",
            self.cfg.callsign, self.cfg.haddr, self.cfg.version
        ));
        if !self.cfg.info.is_empty() {
            let info = self.cfg.info.clone();
            self.say(&info);
            if !info.ends_with('\r') && !info.ends_with('\n') {
                self.say("\r");
            }
        }
    }

    pub(super) fn version(&mut self) {
        self.say(&format!("qtc {}\r", self.cfg.version));
    }
}
