//! `L` and its family (`LL`, `LB`, `L<`, `LM`, `LN`...), and `LC`.

use qtc_mail::{ListFilter, MessageStore, MsgStatus, MsgType, StoreError};

use super::paging::{ListPager, Pager};
use super::{Session, MAX_LIST};
use crate::command::{ListStatus, ListWhat};
use crate::store::{Query, SaveUser};

/// The most bulletins `LC` counts categories over (the newest).
const CATEGORIES_OVER: usize = 1000;

impl Session {
    pub(super) fn list(&mut self, what: ListWhat) {
        let (me, sysop, _) = self.me();
        let update_last = what.is_new_since_last();
        let mut f = ListFilter {
            visible_to: (!sysop).then(|| me.clone()),
            kind: what.kind,
            range: what.range,
            from: what.from,
            to: what.to,
            at: what.at,
            oldest_first: what.oldest_first,
            // The status column shows this user's own read marks, the sysop's too.
            reader: Some(me.clone()),
            ..Default::default()
        };
        if update_last {
            f.after = self.user.as_ref().map(|u| u.last_listed);
        }
        if what.mine {
            f.to_or_copy = Some(me.clone());
        }
        match what.status {
            None => {}
            Some(ListStatus::Held | ListStatus::Killed) if !sysop => {
                self.say("*** Only the sysop may list held or killed messages.\r");
                return;
            }
            // Their own new mail and every bulletin they have not read.
            Some(ListStatus::UnreadMine) => f.unread_by = Some(me),
            Some(ListStatus::Read) => f.status = Some(MsgStatus::Read),
            Some(ListStatus::Held) => f.status = Some(MsgStatus::Held),
            Some(ListStatus::Killed) => f.status = Some(MsgStatus::Killed),
        }
        // A listing is bounded, and read a page at a time: a new user's first L on a big store
        // costs one page's query, and one more per page the user asks for.
        let (left, capped) = match what.last {
            Some(n) if n <= MAX_LIST => (n, false),
            _ => (MAX_LIST, true),
        };
        let pager = ListPager {
            filter: f,
            cursor: None,
            left,
            capped,
            update_last,
        };
        self.start_output(Pager::List(pager));
    }

    /// Plain `L` listed messages up to `highest`: the next plain `L` starts above it.
    pub(super) fn listed_up_to(&mut self, highest: u64) {
        let Some(user) = self.user.as_mut() else {
            return;
        };
        if highest <= user.last_listed {
            return;
        }
        user.last_listed = highest;
        self.save_user();
    }

    /// Keeps what the session changed in the user's record (last listed, page length) for the
    /// next session, without a word to the user.
    pub(super) fn save_user(&mut self) {
        if let Some(user) = self.user.clone() {
            self.save(SaveUser(user));
        }
    }

    /// `LC`: bulletin addressees (categories) among the newest bulletins, with counts.
    pub(super) fn show_categories(&mut self, counts: Vec<(String, usize)>) {
        if counts.is_empty() {
            self.say("No bulletins.\r");
            return;
        }
        let cells: Vec<String> = counts
            .iter()
            .map(|(to, n)| format!("{to:<6} {n:>4}"))
            .collect();
        // Six to a line: 72 columns.
        for row in cells.chunks(6) {
            self.say(&row.join(" "));
            self.say("\r");
        }
        self.say("LB > name lists one category.\r");
    }
}

/// `LC`: bulletin categories with counts, by name.
#[derive(Debug)]
pub(super) struct Categories;

impl Query for Categories {
    type Answer = Vec<(String, usize)>;
    const WRITES: bool = false;
    fn run(self, store: &mut dyn MessageStore) -> Result<Self::Answer, StoreError> {
        let f = ListFilter {
            kind: Some(MsgType::Bulletin),
            last: Some(CATEGORIES_OVER),
            ..Default::default()
        };
        let mut counts = std::collections::BTreeMap::<String, usize>::new();
        for h in store.list(&f)? {
            *counts.entry(h.to).or_default() += 1;
        }
        Ok(counts.into_iter().collect())
    }
}
