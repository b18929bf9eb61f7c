//! Logging in: callsign and password on telnet, the link's callsign on RF, `SYS`, and the
//! greeting.

use qtc_callsign::Callsign;
use qtc_mail::text::visible_line;
use qtc_mail::{GreetingCounts, MessageStore, StoreError, User};

use super::{Access, Checked, Checking, Event, Refusal, Session, State};
use crate::store::{BbsStore, Query};

/// The login prompts: whole lines (CR ended) starting with the word, as Winlink clients (wl2k-go
/// reads up to CR and matches `callsign` / `password`) and the old daemons' scripts expect.
const CALLSIGN_PROMPT: &str = "Callsign:";
const PASSWORD_PROMPT: &str = "Password:";

impl Session {
    /// Takes the answer to [`Event::CheckPassword`]: logs the user in (or grants `SYS`, or goes
    /// on with `PW`) or counts a failure, then interprets the lines that arrived meanwhile.
    pub fn password_checked(&mut self, result: Result<bool, StoreError>, now: i64) {
        let State::Verifying { then, .. } = std::mem::replace(&mut self.state, State::Command)
        else {
            return;
        };
        then(self, result);
        self.take_waiting(now);
    }

    /// The daemon would not check the password of [`Event::CheckPassword`]: too many failures
    /// (a lockout) or too many logins to the account at once. Said as it is, not as a wrong
    /// password, and not counted as one.
    pub fn password_refused(&mut self, why: Refusal, now: i64) {
        let State::Verifying { call, purpose, .. } =
            std::mem::replace(&mut self.state, State::Command)
        else {
            return;
        };
        match (purpose, why) {
            (Checking::Login, Refusal::Locked) => {
                self.say(&format!(
                    "*** Logins to {call} from here are locked after repeated failures. Try again later.\r"
                ));
                self.close();
            }
            (Checking::Login, Refusal::Busy) => {
                self.say(&format!(
                    "*** Too many logins to {call} at once. Try again in a moment.\r"
                ));
                self.state = State::AskCall;
                self.ask_callsign();
            }
            (_, Refusal::Locked) => {
                self.say("*** Locked after repeated failures. Try again later.\r");
                self.prompt();
            }
            (_, Refusal::Busy) => {
                self.say("*** Too many password checks at once. Try again in a moment.\r");
                self.prompt();
            }
        }
        self.take_waiting(now);
    }

    pub(super) fn ask_callsign(&mut self) {
        self.say(&format!("{CALLSIGN_PROMPT}\r"));
    }

    fn login_failed(&mut self, call: Option<Callsign>) {
        self.failures += 1;
        self.events.push_back(Event::LoginFailed { call });
        if self.failures >= self.cfg.max_login_attempts {
            self.say("Too many failed logins. Goodbye.\r");
            self.close();
        } else {
            self.state = State::AskCall;
            self.ask_callsign();
        }
    }

    pub(super) fn got_callsign(&mut self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        // FBB partners log in as `.CALL` to ask for a transparent channel.
        let text = text.trim().trim_start_matches('.');
        if text.is_empty() {
            self.state = State::AskCall;
            self.ask_callsign();
            return;
        }
        match Callsign::parse_station(text) {
            Ok(call) => {
                self.state = State::AskPassword {
                    call: call.without_ssid(),
                };
                self.events.push_back(Event::HideInput(true));
                // A line end first: on telnet the request to stop echoing goes out just before
                // this text, and the prompt must start its own line.
                self.say(&format!("\r{PASSWORD_PROMPT}\r"));
            }
            Err(_) => {
                // Not echoed back nor logged: it may be a password typed a line early.
                self.say("That is not a callsign (3 to 6 letters and digits, one a digit).\r");
                self.login_failed(None);
            }
        }
    }

    pub(super) fn got_password(&mut self, call: Callsign, text: &[u8]) {
        self.events.push_back(Event::HideInput(false));
        // The client did not echo the line end either.
        self.say("\r");
        let password = String::from_utf8_lossy(text).into_owned();
        self.check_password(call, password, Checking::Login, move |s, ok| {
            s.login_checked(call, ok)
        });
    }

    /// Asks the daemon to check a password (argon2, on its password pool); `then` goes on
    /// with the result.
    pub(crate) fn check_password(
        &mut self,
        call: Callsign,
        password: String,
        purpose: Checking,
        then: impl FnOnce(&mut Session, Result<bool, StoreError>) + Send + 'static,
    ) {
        self.events.push_back(Event::CheckPassword {
            call,
            password,
            purpose,
        });
        let then: Checked = Box::new(then);
        self.state = State::Verifying {
            call,
            purpose,
            then,
        };
    }

    fn login_checked(&mut self, call: Callsign, result: Result<bool, StoreError>) {
        match result {
            Ok(true) => self.log_in(call),
            Ok(false) => {
                tracing::info!(%call, "login failed");
                self.say("Login incorrect.\r");
                self.login_failed(Some(call));
            }
            Err(e) => {
                self.store_failed(&e);
                self.close();
            }
        }
    }

    /// Looks the user up; [`Session::logged_in`] goes on with the record.
    pub(super) fn log_in(&mut self, call: Callsign) {
        self.request_result(UserRecord { call }, move |s, user| match user {
            Ok(user) => s.logged_in(call, user),
            Err(e) => {
                s.store_failed(&e);
                s.close();
            }
        });
        // Lines typed meanwhile wait; the greeting sets the state.
        self.state = State::Command;
    }

    fn logged_in(&mut self, call: Callsign, user: Option<User>) {
        // An RF caller we have never seen: a guest with a default profile.
        let mut user = user.unwrap_or_else(|| guest(call));
        if user.bbs && matches!(self.access, Access::Claimed(_)) {
            // A partner's call by a way the sysop did not give for it: a user, no more.
            tracing::info!(call = %user.call, "a BBS account by an unexpected way: user rights only");
            user.bbs = false;
        }
        tracing::info!(call = %user.call, bbs = user.bbs, "logged in");
        self.events.push_back(Event::LoggedIn {
            call: user.call,
            bbs: user.bbs,
        });
        if user.bbs {
            self.user = Some(user);
            self.state = State::Handover;
            return;
        }
        if let Some(n) = user.page_len {
            self.page_len = n;
        }
        if user.sysop && matches!(self.access, Access::Callsign(_) | Access::Claimed(_)) {
            // The link callsign is no proof: sysop rights wait for SYS and a password.
            user.sysop = false;
            self.sysop_pending = true;
        }
        let name = if user.name.is_empty() {
            user.call.to_string()
        } else {
            visible_line(&user.name).into_owned()
        };
        self.say(&format!(
            "Hello {name}, welcome to {} BBS.\r",
            self.cfg.callsign
        ));
        let counts = MailCounts {
            call: user.call,
            sysop: user.sysop,
        };
        self.request_result(counts, Session::greeted);
        // The user is in from now on (the daemon seats them on LoggedIn).
        self.user = Some(user);
    }

    fn greeted(&mut self, counts: Result<GreetingCounts, StoreError>) {
        let last_listed = self.user.as_ref().map_or(0, |u| u.last_listed);
        match counts {
            Ok(GreetingCounts { mine, new, latest }) => {
                let s = if mine == 1 { "" } else { "s" };
                self.say(&format!(
                    "You have {mine} message{s}, {new} new. Latest message is {latest}, last listed is {last_listed}.\r"
                ));
            }
            Err(e) => self.store_failed(&e),
        }
        self.say("Type H for help.\r");
        self.state = State::Command;
    }
}

/// A user's record (the login's lookup).
#[derive(Debug)]
struct UserRecord {
    /// Callsign, no SSID.
    call: Callsign,
}

impl Query<BbsStore> for UserRecord {
    type Answer = Option<User>;
    // A login's lookup queues behind the writes before it: a partner whose link was reset logs
    // in again only after its previous session's last write (and release).
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<Option<User>, StoreError> {
        store.user(self.call)
    }
}

/// The greeting's counts for `call`.
#[derive(Debug)]
struct MailCounts {
    call: Callsign,
    /// Held mail counts too.
    sysop: bool,
}

impl Query<BbsStore> for MailCounts {
    type Answer = GreetingCounts;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<GreetingCounts, StoreError> {
        store.greeting_counts(self.call, self.sysop)
    }
}

fn guest(call: Callsign) -> User {
    User {
        call,
        name: String::new(),
        home_bbs: String::new(),
        sysop: false,
        bbs: false,
        last_listed: 0,
        page_len: None,
    }
}
