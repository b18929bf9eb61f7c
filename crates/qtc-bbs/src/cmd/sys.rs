//! `SYS`: over RF (where the link's callsign is no proof), a sysop asks for sysop rights with
//! the password.

use qtc_callsign::Callsign;
use qtc_mail::StoreError;

use super::help::Help;
use crate::session::{Checking, Event, Session};

pub(super) const HELP: Help = Help {
    names: &["SYS"],
    usage: "SYS",
    what: "sysop rights over RF (password)",
    example: "SYS",
};

impl Session {
    pub(super) fn sys(&mut self) {
        if self.sysop_pending {
            self.next_line(Session::got_sys_password);
            self.say("Password:\r");
        } else if self.me().1 {
            self.say("You have sysop rights already.\r");
        } else {
            self.say("*** Only a sysop may use SYS.\r");
        }
    }

    fn got_sys_password(&mut self, text: Vec<u8>) {
        let Some(call) = self.my_call() else {
            return self.prompt();
        };
        let password = String::from_utf8_lossy(&text).trim().to_string();
        self.check_password(call, password, Checking::Sys, move |s, ok| {
            s.sys_checked(call, ok);
            s.prompt();
        });
    }

    fn sys_checked(&mut self, call: Callsign, result: Result<bool, StoreError>) {
        match result {
            Ok(true) => {
                self.sysop_pending = false;
                if let Some(u) = self.user.as_mut() {
                    u.sysop = true;
                }
                tracing::info!(%call, "sysop rights granted");
                self.say("Sysop rights granted.\r");
            }
            Ok(false) => {
                tracing::warn!(%call, "SYS: wrong password");
                self.events
                    .push_back(Event::LoginFailed { call: Some(call) });
                self.say("Wrong password.\r");
            }
            Err(e) => self.store_failed(&e),
        }
    }
}
