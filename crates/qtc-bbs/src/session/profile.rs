//! The user's own record: `N`, `NH` (saved at once) and `PW`.

use qtc_mail::{StoreError, User};

use super::{Checking, Event, Session, State};
use crate::store::{self, SaveUser};

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

    /// A prompt whose answer the client should not show.
    pub(super) fn ask_hidden(&mut self, prompt: &str) {
        self.events.push_back(Event::HideInput(true));
        self.say(prompt);
    }

    /// The hidden answer arrived: the client shows input again.
    fn hidden_answered(&mut self) {
        self.events.push_back(Event::HideInput(false));
        self.say("\r");
    }

    /// The current password goes to the daemon's password check, like a login's.
    pub(super) fn pw_old(&mut self, text: &[u8]) {
        self.hidden_answered();
        let (me, _, _) = self.me();
        let password = String::from_utf8_lossy(text).into_owned();
        self.check_password(me, password, Checking::Current);
    }

    pub(super) fn pw_old_checked(&mut self, result: Result<bool, StoreError>) {
        match result {
            Ok(true) => {
                self.ask_hidden("New password: ");
                self.state = State::PwNew;
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

    pub(super) fn pw_new(&mut self, new: Vec<u8>) {
        self.hidden_answered();
        if new.trim_ascii().is_empty() {
            self.say("Empty password: not changed.\r");
            self.prompt();
            return;
        }
        self.ask_hidden("Again: ");
        self.state = State::PwAgain { new };
    }

    pub(super) fn pw_again(&mut self, new: Vec<u8>, again: &[u8]) {
        self.hidden_answered();
        if new != again {
            self.say("The two differ: not changed.\r");
            self.prompt();
            return;
        }
        let (call, _, _) = self.me();
        let password = String::from_utf8_lossy(&new).into_owned();
        let then = |s: &mut Session, set: Result<(), StoreError>| match set {
            Ok(()) => s.password_set(),
            Err(e) => s.store_failed(&e),
        };
        self.queue(store::new_password(call, password, Box::new(then)), true);
    }

    fn password_set(&mut self) {
        let (me, _, _) = self.me();
        tracing::info!(call = %me, "password changed by the user");
        self.say("Password changed.\r");
    }
}
