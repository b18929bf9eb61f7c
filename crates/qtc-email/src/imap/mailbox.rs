//! The mailbox as the client sees it: SELECT and EXAMINE, STATUS, and what changed since
//! (NOOP, IDLE). Each reads the selected place from the store ([`List`]).

use super::*;
use crate::folder::{List, Listing};

impl Imap {
    /// Reads `place` (sizes for messages above `sized_after`); `then` goes on with it, or the
    /// command tagged `tag` fails (a folder that is not there: NONEXISTENT).
    fn read_place(
        &mut self,
        tag: Option<String>,
        place: Place,
        sized_after: u64,
        then: impl FnOnce(&mut Imap, Listing) + Send + 'static,
    ) {
        let Some(call) = self.user_for(tag.as_deref().unwrap_or("*")) else {
            return;
        };
        let query = List {
            call,
            place,
            sized_after,
            settings: self.s.clone(),
        };
        self.x.ask(query, move |i: &mut Imap, r| match (r, tag) {
            (Ok(Some(listing)), _) => then(i, listing),
            // The selected folder was deleted or renamed elsewhere: its messages are gone.
            (Ok(None), None) => then(i, Listing::default()),
            (Ok(None), Some(tag)) => i.x.say(&format!("{tag} NO [NONEXISTENT] no such mailbox")),
            (Err(_), Some(tag)) => i.unavailable(&tag),
            (Err(_), None) => {}
        });
    }

    pub(super) fn unavailable(&mut self, tag: &str) {
        self.x.say(&format!(
            "{tag} NO [UNAVAILABLE] the message store is not available"
        ));
    }

    /// Leaves the selected state with nothing said (the folder is gone).
    pub(super) fn unselect_quietly(&mut self) {
        self.state = State::Auth;
        self.place = Place::Inbox;
        self.msgs.clear();
    }

    pub(super) fn select(&mut self, tag: String, mailbox: &Mailbox<'_>, read_only: bool) {
        self.unselect_quietly();
        let place = Place::of(&folders::name_of(mailbox));
        if place == Place::Bulletins(String::new()) {
            return self.x.say(&format!(
                "{tag} NO [NONEXISTENT] Bulletins holds a folder per category"
            ));
        }
        let t = tag.clone();
        self.read_place(Some(tag), place.clone(), 0, move |i, listing| {
            i.place = place;
            i.selected_place(&t, listing, read_only)
        });
    }

    fn selected_place(&mut self, tag: &str, listing: Listing, read_only: bool) {
        self.msgs = listing
            .entries
            .into_iter()
            .map(|entry| Msg {
                entry,
                deleted: false,
            })
            .collect();
        self.validity = match listing.validity {
            0 => self.uid_validity,
            v => v,
        };
        self.uid_next = self.msgs.last().map_or(1, |m| m.entry.number + 1);
        self.uid_next = self.uid_next.max(listing.uid_next);
        self.state = State::Selected { read_only };
        // A bulletin is the BBS's: only the user's own marks are kept on it.
        let permanent = match self.place {
            Place::Bulletins(_) => "\\Seen \\Answered",
            _ => "\\Seen \\Answered \\Deleted",
        };
        self.x
            .say("* FLAGS (\\Seen \\Answered \\Deleted \\Flagged \\Draft)");
        self.x
            .say(&format!("* OK [PERMANENTFLAGS ({permanent})] Limited"));
        self.x.say(&format!("* {} EXISTS", self.msgs.len()));
        self.x.say("* 0 RECENT");
        if let Some(i) = self.msgs.iter().position(|m| !m.entry.seen) {
            self.x.say(&format!("* OK [UNSEEN {}] First unseen", i + 1));
        }
        self.x
            .say(&format!("* OK [UIDVALIDITY {}] UIDs valid", self.validity));
        self.x.say(&format!(
            "* OK [UIDNEXT {}] Predicted next UID",
            self.uid_next
        ));
        let (mode, cmd) = match read_only {
            true => ("READ-ONLY", "EXAMINE"),
            false => ("READ-WRITE", "SELECT"),
        };
        self.x.say(&format!("{tag} OK [{mode}] {cmd} completed"));
    }

    pub(super) fn status(&mut self, tag: String, mailbox: &Mailbox<'_>, items: String) {
        let name = folders::name_of(mailbox);
        let t = tag.clone();
        self.read_place(Some(tag), Place::of(&name), u64::MAX, move |i, listing| {
            i.status_of(&t, &name, &listing, &items)
        });
    }

    fn status_of(&mut self, tag: &str, name: &str, listing: &Listing, items: &str) {
        let entries = &listing.entries;
        let unseen = entries.iter().filter(|e| !e.seen).count();
        let next = entries.last().map_or(1, |e| e.number + 1);
        let next = next.max(listing.uid_next);
        let validity = match listing.validity {
            0 => self.uid_validity,
            v => v,
        };
        let mut parts = Vec::new();
        for (item, value) in [
            ("MESSAGES", entries.len() as u64),
            ("RECENT", 0),
            ("UIDNEXT", next),
            ("UIDVALIDITY", u64::from(validity)),
            ("UNSEEN", unseen as u64),
        ] {
            if items.contains(item) {
                parts.push(format!("{item} {value}"));
            }
        }
        let name = match Place::of(name) {
            Place::Inbox => "INBOX".to_string(),
            _ => folders::quoted(name),
        };
        self.x
            .say(&format!("* STATUS {name} ({})", parts.join(" ")));
        self.x.say(&format!("{tag} OK STATUS completed"));
    }

    /// Reads the mailbox again and tells the client what changed (NOOP, CHECK).
    pub(super) fn refresh(&mut self, tag: Option<String>, text: &str) {
        let text = text.to_string();
        if !matches!(self.state, State::Selected { .. }) {
            if let Some(tag) = tag {
                self.x.say(&format!("{tag} OK {text}"));
            }
            return;
        }
        let after = self.msgs.last().map_or(0, |m| m.entry.number);
        let t = tag.clone();
        self.read_place(tag, self.place.clone(), after, move |i, listing| {
            i.merge(listing.entries);
            if let Some(tag) = t {
                i.x.say(&format!("{tag} OK {text}"));
            }
        });
    }

    /// The store changed while idling: read the mailbox again (once more if it changed again
    /// meanwhile).
    pub(super) fn refresh_while_idle(&mut self) {
        if self.x.asking() {
            self.changed_meanwhile = true;
            return;
        }
        self.changed_meanwhile = false;
        let after = self.msgs.last().map_or(0, |m| m.entry.number);
        self.read_place(None, self.place.clone(), after, |i, listing| {
            i.merge(listing.entries);
            if i.changed_meanwhile && matches!(i.expecting, Input::Idle(_)) {
                i.refresh_while_idle();
            }
        });
    }

    /// Tells the client what changed since its view: kills elsewhere (EXPUNGE), marks set or
    /// cleared elsewhere (FETCH FLAGS), new mail (EXISTS).
    fn merge(&mut self, entries: Vec<Entry>) {
        let mut i = 0;
        while i < self.msgs.len() {
            let number = self.msgs[i].entry.number;
            match entries.iter().find(|e| e.number == number) {
                None => {
                    self.msgs.remove(i);
                    self.x.say(&format!("* {} EXPUNGE", i + 1));
                }
                Some(e) => {
                    let m = &mut self.msgs[i].entry;
                    if (e.seen, e.answered) != (m.seen, m.answered) {
                        (m.seen, m.answered) = (e.seen, e.answered);
                        let f = fetch::flags(&self.msgs[i]);
                        self.x.say(&format!("* {} FETCH ({f} UID {number})", i + 1));
                    }
                    i += 1;
                }
            }
        }
        let last = self.msgs.last().map_or(0, |m| m.entry.number);
        let before = self.msgs.len();
        for e in entries.into_iter().filter(|e| e.number > last) {
            self.msgs.push(Msg {
                entry: e,
                deleted: false,
            });
        }
        if self.msgs.len() != before {
            self.uid_next = self
                .uid_next
                .max(self.msgs.last().map_or(1, |m| m.entry.number + 1));
            self.x.say(&format!("* {} EXISTS", self.msgs.len()));
        }
    }
}
