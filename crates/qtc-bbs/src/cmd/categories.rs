//! `LC`: the bulletin categories (addressees) among the newest bulletins, with counts.

use qtc_mail::{ListFilter, MessageStore, MsgType, StoreError};

use super::help::Help;
use crate::session::Session;
use crate::store::{BbsStore, Query};

pub(super) const HELP: Help = Help {
    names: &["LC"],
    usage: "LC",
    what: "bulletin categories and counts",
    example: "LC",
};

/// The most bulletins `LC` counts categories over (the newest).
const CATEGORIES_OVER: usize = 1000;

/// Bulletin categories with counts, by name.
#[derive(Debug)]
struct Categories;

impl Query<BbsStore> for Categories {
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

impl Session {
    pub(super) fn categories(&mut self) {
        self.request(Categories, Session::show_categories);
    }

    fn show_categories(&mut self, counts: Vec<(String, usize)>) {
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
