//! The mailbox as the client sees it: SELECT and EXAMINE, STATUS, and what changed since
//! (NOOP, IDLE). Each reads the user's INBOX from the store ([`Mailbox`]).

use super::*;
use crate::store::Mailbox as Inbox;

/// The flags a client may set here, and keep.
const PERMANENT: &str = "\\Seen \\Answered \\Deleted";

impl Imap {
    /// Reads the INBOX (sizes for messages above `sized_after`); `then` goes on with it, or the
    /// command tagged `tag` fails.
    fn read_inbox(
        &mut self,
        tag: Option<String>,
        sized_after: u64,
        then: impl FnOnce(&mut Imap, Vec<Entry>) + Send + 'static,
    ) {
        let query = Inbox {
            call: self.user.clone(),
            sized_after,
            settings: self.s.clone(),
        };
        self.x.ask(query, move |i: &mut Imap, r| match (r, tag) {
            (Ok(entries), _) => then(i, entries),
            (Err(_), Some(tag)) => i.unavailable(&tag),
            (Err(_), None) => {}
        });
    }

    pub(super) fn unavailable(&mut self, tag: &str) {
        self.x.say(&format!(
            "{tag} NO [UNAVAILABLE] the message store is not available"
        ));
    }

    pub(super) fn select(&mut self, tag: String, mailbox: &Mailbox<'_>, read_only: bool) {
        self.state = State::Auth;
        self.msgs.clear();
        if !is_inbox(mailbox) {
            return self.x.say(&format!(
                "{tag} NO [NONEXISTENT] only INBOX here, bulletins are on NNTP"
            ));
        }
        let t = tag.clone();
        self.read_inbox(Some(tag), 0, move |i, entries| {
            i.selected_inbox(&t, entries, read_only)
        });
    }

    fn selected_inbox(&mut self, tag: &str, entries: Vec<Entry>, read_only: bool) {
        self.msgs = entries
            .into_iter()
            .map(|entry| Msg {
                entry,
                deleted: false,
            })
            .collect();
        self.uid_next = self
            .msgs
            .last()
            .map_or(1, |m| m.entry.number + 1)
            .max(self.uid_next);
        self.state = State::Selected { read_only };
        self.x
            .say("* FLAGS (\\Seen \\Answered \\Deleted \\Flagged \\Draft)");
        self.x
            .say(&format!("* OK [PERMANENTFLAGS ({PERMANENT})] Limited"));
        self.x.say(&format!("* {} EXISTS", self.msgs.len()));
        self.x.say("* 0 RECENT");
        if let Some(i) = self.msgs.iter().position(|m| !m.entry.seen) {
            self.x.say(&format!("* OK [UNSEEN {}] First unseen", i + 1));
        }
        self.x.say(&format!(
            "* OK [UIDVALIDITY {}] UIDs valid",
            self.uid_validity
        ));
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
        if !is_inbox(mailbox) {
            return self
                .x
                .say(&format!("{tag} NO [NONEXISTENT] only INBOX here"));
        }
        let t = tag.clone();
        self.read_inbox(Some(tag), u64::MAX, move |i, entries| {
            i.status_of(&t, &entries, &items)
        });
    }

    fn status_of(&mut self, tag: &str, entries: &[Entry], items: &str) {
        let unseen = entries.iter().filter(|e| !e.seen).count();
        let next = entries
            .last()
            .map_or(1, |e| e.number + 1)
            .max(self.uid_next);
        let mut parts = Vec::new();
        for (name, value) in [
            ("MESSAGES", entries.len() as u64),
            ("RECENT", 0),
            ("UIDNEXT", next),
            ("UIDVALIDITY", u64::from(self.uid_validity)),
            ("UNSEEN", unseen as u64),
        ] {
            if items.contains(name) {
                parts.push(format!("{name} {value}"));
            }
        }
        self.x.say(&format!("* STATUS INBOX ({})", parts.join(" ")));
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
        self.read_inbox(tag, after, move |i, entries| {
            i.merge(entries);
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
        self.read_inbox(None, after, |i, entries| {
            i.merge(entries);
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
