//! `PW`, `PASS`: the user changes their password: the current one (checked by the daemon like
//! a login's), then the new one twice, none of them echoed.

use qtc_mail::StoreError;

use super::help::Help;
use crate::session::{Checking, Event, Session};
use crate::store;

pub(super) const HELP: Help = Help {
    names: &["PW", "PASS"],
    usage: "PW | PASS",
    what: "change your telnet password",
    example: "PW",
};

impl Session {
    pub(super) fn change_password(&mut self) {
        self.ask_hidden("Old password: ");
        self.next_line(Session::pw_old);
    }

    /// A prompt whose answer the client should not show.
    fn ask_hidden(&mut self, prompt: &str) {
        self.events.push_back(Event::HideInput(true));
        self.say(prompt);
    }

    /// The hidden answer arrived: the client shows input again.
    fn hidden_answered(&mut self) {
        self.events.push_back(Event::HideInput(false));
        self.say("\r");
    }

    /// The current password goes to the daemon's password check, like a login's.
    fn pw_old(&mut self, text: Vec<u8>) {
        self.hidden_answered();
        let Some(me) = self.my_call() else {
            return self.prompt();
        };
        let password = String::from_utf8_lossy(&text).into_owned();
        self.check_password(me, password, Checking::Current, Session::pw_old_checked);
    }

    fn pw_old_checked(&mut self, result: Result<bool, StoreError>) {
        match result {
            Ok(true) => {
                self.ask_hidden("New password: ");
                self.next_line(Session::pw_new);
            }
            Ok(false) => {
                self.say("Wrong password: not changed.\r");
                // Not a failed login (the user is in), but no endless guessing either.
                self.failures += 1;
                if self.failures >= self.cfg.max_login_attempts {
                    self.say("Too many wrong passwords. Goodbye.\r");
                    self.close();
                    return;
                }
                self.prompt();
            }
            Err(e) => {
                self.store_failed(&e);
                self.prompt();
            }
        }
    }

    fn pw_new(&mut self, new: Vec<u8>) {
        self.hidden_answered();
        if new.trim_ascii().is_empty() {
            self.say("Empty password: not changed.\r");
            self.prompt();
            return;
        }
        self.ask_hidden("Again: ");
        self.next_line(move |s, again| s.pw_again(new, &again));
    }

    fn pw_again(&mut self, new: Vec<u8>, again: &[u8]) {
        self.hidden_answered();
        if new != again {
            self.say("The two differ: not changed.\r");
            self.prompt();
            return;
        }
        let Some(call) = self.my_call() else {
            return self.prompt();
        };
        let password = String::from_utf8_lossy(&new).into_owned();
        let then = move |s: &mut Session, set: Result<(), StoreError>| match set {
            Ok(()) => {
                tracing::info!(%call, "password changed by the user");
                s.say("Password changed.\r");
            }
            Err(e) => s.store_failed(&e),
        };
        self.queue(store::new_password(call, password, Box::new(then)), true);
    }
}
