//! `N name` and `NH homebbs`: the user's own record, saved at once.

use qtc_mail::{StoreError, User};

use super::help::Help;
use crate::session::Session;
use crate::store::SaveUser;

pub(super) const HELP: Help = Help {
    names: &["N", "NH"],
    usage: "N name | NH homebbs",
    what: "set your name or home BBS",
    example: "NH N0BBS.#NCA.CA.USA.NOAM",
};

pub(super) const USAGE: &str = "N name | NH homebbs";

impl Session {
    pub(super) fn set_profile(&mut self, change: impl FnOnce(&mut User)) {
        let Some(user) = self.user.as_mut() else {
            return;
        };
        change(user);
        let user = user.clone();
        self.request_result(SaveUser(user), Session::profile_saved);
    }

    fn profile_saved(&mut self, reply: Result<(), StoreError>) {
        match reply {
            Ok(_) => self.say("Saved.\r"),
            Err(StoreError::NoSuchUser(_)) => {
                self.say("Noted for this session (you have no user record here).\r")
            }
            Err(e) => self.store_failed(&e),
        }
    }
}
