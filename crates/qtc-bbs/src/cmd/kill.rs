//! `K n...` and `KM`.

use std::collections::VecDeque;

use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, StoreError};

use super::help::Help;
use crate::session::Session;
use crate::store::Query;

pub(super) const HELP: Help = Help {
    names: &["K", "KM"],
    usage: "K n [n..] | KM",
    what: "kill messages; KM: your read mail",
    example: "K 12",
};

pub(super) const USAGE: &str = "K n [n...] | KM";

/// What `K n` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillOutcome {
    /// Killed now.
    Killed,
    /// It was killed before.
    AlreadyKilled,
    /// The user may read it but not kill it (someone else's bulletin).
    Forbidden,
    /// No such message, or none this user may see.
    NotYours,
}

impl Session {
    /// Kills the numbers one by one, each checked and killed in one step on the store.
    pub(super) fn kill(&mut self, mut numbers: VecDeque<u64>) {
        let Some(number) = numbers.pop_front() else {
            return;
        };
        let (me, sysop, _) = self.me();
        let query = Kill { number, me, sysop };
        self.request(query, move |s, outcome| s.killed(number, numbers, outcome));
    }

    fn killed(&mut self, n: u64, rest: VecDeque<u64>, outcome: KillOutcome) {
        self.say(&match outcome {
            KillOutcome::Killed => format!("Message #{n} killed.\r"),
            KillOutcome::AlreadyKilled => format!("Message #{n} is already killed.\r"),
            KillOutcome::Forbidden => format!("*** You may not kill message #{n}.\r"),
            KillOutcome::NotYours => format!("No message #{n} for you.\r"),
        });
        self.kill(rest);
    }

    /// `KM`: every read personal message to the user.
    pub(super) fn kill_mine(&mut self) {
        let (me, _, _) = self.me();
        self.request(KillRead { me }, Session::killed_read);
    }

    fn killed_read(&mut self, numbers: Vec<u64>) {
        if numbers.is_empty() {
            self.say("You have no read messages to kill.\r");
        }
        for n in numbers {
            self.say(&format!("Message #{n} killed.\r"));
        }
    }
}

/// `K n`: kill it if `me` may (the check and the kill in one step on the writer).
#[derive(Debug)]
struct Kill {
    number: u64,
    me: String,
    sysop: bool,
}

impl Query for Kill {
    type Answer = KillOutcome;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<KillOutcome, StoreError> {
        kill(store, self.number, &self.me, self.sysop)
    }
}

/// Kills message `number` if `me` (with sysop rights or not) may: the check and the kill run
/// back to back on the one writer, so nothing changes between. `K n` runs it, and so do
/// IMAP's EXPUNGE and POP3's DELE.
pub fn kill(
    store: &mut dyn MessageStore,
    number: u64,
    me: &str,
    sysop: bool,
) -> Result<KillOutcome, StoreError> {
    let Some(m) = store.message_head(number)? else {
        return Ok(KillOutcome::NotYours);
    };
    let h = &m.header;
    Ok(match h.status {
        MsgStatus::Killed => KillOutcome::AlreadyKilled,
        // Held mail is the sysop's alone until released.
        MsgStatus::Held if !sysop => KillOutcome::NotYours,
        _ if sysop || h.to == me || h.from == me => {
            store.set_status(number, MsgStatus::Killed)?;
            KillOutcome::Killed
        }
        // Someone else's bulletin is readable, not killable; their personal mail is unseen.
        _ if h.kind != MsgType::Personal => KillOutcome::Forbidden,
        _ => KillOutcome::NotYours,
    })
}

/// `KM`: kill every read personal message to `me`.
#[derive(Debug)]
struct KillRead {
    me: String,
}

impl Query for KillRead {
    type Answer = Vec<u64>;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<Vec<u64>, StoreError> {
        // The addressee's alone: a copy's reader killing it would kill it for the addressee.
        let f = ListFilter {
            to: Some(self.me),
            status: Some(MsgStatus::Read),
            kind: Some(MsgType::Personal),
            oldest_first: true,
            ..Default::default()
        };
        let numbers: Vec<u64> = store.list(&f)?.iter().map(|h| h.number).collect();
        for &n in &numbers {
            store.set_status(n, MsgStatus::Killed)?;
        }
        Ok(numbers)
    }
}
