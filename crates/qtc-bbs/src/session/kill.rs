//! `K n...` and `KM`.

use std::collections::VecDeque;

use super::{Cont, Session};
use crate::request::{KillOutcome, Request};

impl Session {
    /// Kills the numbers one by one, each checked and killed in one step on the store.
    pub(super) fn kill(&mut self, mut numbers: VecDeque<u64>) {
        let Some(number) = numbers.pop_front() else {
            return;
        };
        let (me, sysop, _) = self.me();
        numbers.push_front(number);
        self.request(Request::Kill { number, me, sysop }, Cont::Kill(numbers));
    }

    pub(super) fn killed(&mut self, mut numbers: VecDeque<u64>, outcome: KillOutcome) {
        let Some(n) = numbers.pop_front() else {
            return;
        };
        self.say(&match outcome {
            KillOutcome::Killed => format!("Message #{n} killed.\r"),
            KillOutcome::AlreadyKilled => format!("Message #{n} is already killed.\r"),
            KillOutcome::Forbidden => format!("*** You may not kill message #{n}.\r"),
            KillOutcome::NotYours => format!("No message #{n} for you.\r"),
        });
        self.kill(numbers);
    }

    pub(super) fn killed_read(&mut self, numbers: Vec<u64>) {
        if numbers.is_empty() {
            self.say("You have no read messages to kill.\r");
        }
        for n in numbers {
            self.say(&format!("Message #{n} killed.\r"));
        }
    }
}
