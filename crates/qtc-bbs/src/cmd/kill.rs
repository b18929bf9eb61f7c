//! `K n...` and `KM`.

use std::collections::VecDeque;

use qtc_mail::kill::{kill, KillOutcome};
use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, StoreError};

use super::help::Help;
use crate::session::Session;
use crate::store::{BbsStore, Query};

pub(super) const HELP: Help = Help {
    names: &["K", "KM"],
    usage: "K n [n..] | KM",
    what: "kill messages; KM: your read mail",
    example: "K 12",
};

pub(super) const USAGE: &str = "K n [n...] | KM";

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

impl Query<BbsStore> for Kill {
    type Answer = KillOutcome;
    const WRITES: bool = true;
    fn run(self, store: &mut dyn MessageStore) -> Result<KillOutcome, StoreError> {
        kill(store, self.number, &self.me, self.sysop)
    }
}

/// `KM`: kill every read personal message to `me`.
#[derive(Debug)]
struct KillRead {
    me: String,
}

impl Query<BbsStore> for KillRead {
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
