//! The cores' test harness: a session driven the way the daemon drives it, its store requests
//! answered from a memory store ([`crate::fuzzing::sample_store`] and the sysop `N0SYS`),
//! logins checked against the users' passwords.

use qtc_mail::{MessageStore, MsgStatus};

use crate::fuzzing::{pump, sample_store, Pumped};
use crate::memory::MemoryMail;
use crate::{Core, LoginRefused, Settings};

/// The users and their passwords.
const USERS: &[(&str, &str)] = &[("N0OTH", "x"), ("N0USR", "pw"), ("N0SYS", "root")];

/// Settings of a test session: the station N0CALL, mail domain `bbs.example.org`.
pub(crate) fn settings() -> Settings {
    crate::addr::tests::settings()
}

/// A client's session with its store.
pub(crate) struct Client<C: Core> {
    pub(crate) core: C,
    pub(crate) store: MemoryMail,
    pub(crate) state: Pumped,
}

impl<C: Core> Client<C> {
    /// `core` on the sample store.
    pub(crate) fn new(core: C) -> Client<C> {
        let mut store = sample_store();
        store
            .store
            .add_user(
                qtc_callsign::Callsign::parse_station("N0SYS").expect("a callsign"),
                Some("root"),
                true,
                false,
            )
            .expect("a new user");
        Client {
            core,
            store,
            state: Pumped::default(),
        }
    }

    /// Message `n`'s own status in the store (it must be there).
    pub(crate) fn status(&mut self, n: u64) -> MsgStatus {
        let m = self
            .store
            .store
            .message(n)
            .expect("the memory store answers");
        m.expect("the message is there").header.status
    }

    /// Sends `input` (as it is) and answers what the session asks; the output.
    pub(crate) fn send(&mut self, input: &str) -> String {
        self.bytes(input.as_bytes())
    }

    /// [`Client::send`] for bytes.
    pub(crate) fn bytes(&mut self, input: &[u8]) -> String {
        if !input.is_empty() {
            assert!(self.core.wants_input(), "the session takes no input");
            self.core.handle_input(input);
        }
        self.answer()
    }

    /// The store changed (while the session watches it); the output.
    pub(crate) fn change(&mut self) -> String {
        self.core.changed();
        self.answer()
    }

    fn answer(&mut self) -> String {
        let mut login = |call: Option<qtc_callsign::Callsign>, pw: &str| match call {
            Some(c) if USERS.contains(&(c.to_string().as_str(), pw)) => Ok(c),
            _ => Err(LoginRefused::Wrong),
        };
        pump(&mut self.core, &mut self.store, &mut login, &mut self.state);
        let mut out = Vec::new();
        self.core.take_output(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}
