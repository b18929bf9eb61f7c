//! The daemon's answers: logins, mailboxes (SELECT, STATUS, changes for NOOP and IDLE),
//! rendered messages for FETCH, read marks, kills.

use super::*;

impl Imap {
    pub(super) fn mailbox(&mut self, why: MailboxFor, entries: Vec<Entry>) {
        match why {
            MailboxFor::Select { tag, read_only } => {
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
                self.line("* FLAGS (\\Seen \\Deleted \\Answered \\Flagged \\Draft)");
                self.line("* OK [PERMANENTFLAGS (\\Seen \\Deleted)] seen is your BBS read mark, deleted then EXPUNGE kills");
                self.line(&format!("* {} EXISTS", self.msgs.len()));
                self.line("* 0 RECENT");
                if let Some(i) = self.msgs.iter().position(|m| !m.entry.seen) {
                    self.line(&format!("* OK [UNSEEN {}] first unseen", i + 1));
                }
                self.line(&format!(
                    "* OK [UIDVALIDITY {}] UIDs are message numbers",
                    self.uid_validity
                ));
                self.line(&format!("* OK [UIDNEXT {}] next number", self.uid_next));
                let mode = if read_only { "READ-ONLY" } else { "READ-WRITE" };
                let cmd = if read_only { "EXAMINE" } else { "SELECT" };
                self.line(&format!("{tag} OK [{mode}] {cmd} completed"));
            }
            MailboxFor::Status { tag, items } => {
                let mut parts = Vec::new();
                let unseen = entries.iter().filter(|e| !e.seen).count();
                let next = entries
                    .last()
                    .map_or(1, |e| e.number + 1)
                    .max(self.uid_next);
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
                self.line(&format!("* STATUS INBOX ({})", parts.join(" ")));
                self.line(&format!("{tag} OK STATUS completed"));
            }
            MailboxFor::Refresh { tag, text } => {
                self.merge(entries);
                if let Some(tag) = tag {
                    self.line(&format!("{tag} OK {text}"));
                }
            }
        }
    }

    /// Tells the client what changed since its view: kills elsewhere (EXPUNGE), read marks
    /// set or cleared elsewhere (FETCH FLAGS), new mail (EXISTS).
    fn merge(&mut self, entries: Vec<Entry>) {
        let mut i = 0;
        while i < self.msgs.len() {
            let number = self.msgs[i].entry.number;
            match entries.iter().find(|e| e.number == number) {
                None => {
                    self.msgs.remove(i);
                    self.line(&format!("* {} EXPUNGE", i + 1));
                }
                Some(e) => {
                    if e.seen != self.msgs[i].entry.seen {
                        self.msgs[i].entry.seen = e.seen;
                        let f = fetch::flags(&self.msgs[i]);
                        self.line(&format!("* {} FETCH ({f} UID {number})", i + 1));
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
            self.line(&format!("* {} EXISTS", self.msgs.len()));
        }
    }

    pub(super) fn reply_to(&mut self, wait: Wait, reply: Result<Reply, StoreError>) {
        match (wait, reply) {
            (Wait::Mailbox(why), Ok(Reply::Mailbox(entries))) => self.mailbox(why, entries),
            (Wait::Fetch(job), Ok(Reply::Rendered(r))) => {
                let Some(i) = job.current else { return };
                let seen = self.fetch_line(&job, i, r.as_deref());
                if seen {
                    let (number, call) = (
                        self.msgs[i].entry.number,
                        self.user.clone().unwrap_or_default(),
                    );
                    // The mark is written before the next message is fetched.
                    let mut job = job;
                    job.current = None;
                    self.wait = Wait::Fetch(job);
                    self.events.push_back(Event::Store(Request::Seen {
                        number,
                        call,
                        seen: true,
                    }));
                    return;
                }
                self.fetch_next(job);
            }
            (Wait::Fetch(job), Ok(_)) => self.fetch_next(job),
            (Wait::Store(job), Ok(_)) => self.store_next(job),
            (Wait::Expunge(job), Ok(reply)) => {
                if let (Reply::Killed(true), Some(n)) = (&reply, job.current) {
                    self.expunged(n, job.close);
                }
                self.expunge_next(job);
            }
            (
                Wait::Mailbox(MailboxFor::Select { tag, .. } | MailboxFor::Status { tag, .. }),
                Err(_),
            ) => self.line(&format!(
                "{tag} NO [UNAVAILABLE] the message store is not available"
            )),
            (Wait::Mailbox(MailboxFor::Refresh { tag: Some(tag), .. }), Err(_)) => self.line(
                &format!("{tag} NO [UNAVAILABLE] the message store is not available"),
            ),
            (Wait::Fetch(job), Err(_)) => self.line(&format!(
                "{} NO [UNAVAILABLE] the message store is not available",
                job.tag
            )),
            (Wait::Store(job), Err(_)) => self.line(&format!(
                "{} NO [UNAVAILABLE] the message store is not available",
                job.tag
            )),
            (Wait::Expunge(job), Err(_)) => self.line(&format!(
                "{} NO [UNAVAILABLE] the message store is not available",
                job.tag
            )),
            _ => {}
        }
    }
}

impl Core for Imap {
    fn handle_input(&mut self, bytes: &[u8]) {
        self.input.extend_from_slice(bytes);
        self.run();
    }

    fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out);
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    fn login_done(&mut self, result: Result<String, LoginRefused>) {
        let Wait::Login(tag) = std::mem::replace(&mut self.wait, Wait::Nothing) else {
            return;
        };
        match result {
            Ok(call) => {
                self.user = Some(call);
                self.state = State::Auth;
                let caps = self.capabilities();
                self.line(&format!("{tag} OK [CAPABILITY {caps}] logged in"));
            }
            Err(LoginRefused::Wrong) => self.line(&format!(
                "{tag} NO [AUTHENTICATIONFAILED] wrong callsign or password"
            )),
            Err(LoginRefused::Full(why)) => self.line(&format!("{tag} NO [UNAVAILABLE] {why}")),
            Err(LoginRefused::Unavailable) => {
                self.line(&format!("{tag} NO [UNAVAILABLE] try again later"))
            }
        }
        self.run();
    }

    fn answered(&mut self, reply: Result<Reply, StoreError>) {
        let wait = std::mem::replace(&mut self.wait, Wait::Nothing);
        let idle = match wait {
            Wait::Idle(tag) => {
                // A change heard while idling: the mailbox came back.
                self.wait = Wait::Idle(tag);
                if let Ok(Reply::Mailbox(entries)) = reply {
                    self.merge(entries);
                }
                true
            }
            w => {
                self.reply_to(w, reply);
                false
            }
        };
        if !idle || matches!(self.wait, Wait::Idle(_)) {
            self.run();
        }
    }

    fn tls_started(&mut self) {
        self.s.starttls = false;
        self.s.plain_auth = true;
        self.wait = Wait::Nothing;
        self.run();
    }

    fn changed(&mut self) {
        if let Wait::Idle(_) = self.wait {
            if self.events.iter().any(|e| matches!(e, Event::Store(_))) {
                return;
            }
            let call = self.user.clone().unwrap_or_default();
            let after = self.msgs.last().map_or(0, |m| m.entry.number);
            self.events.push_back(Event::Store(Request::Mailbox {
                call,
                sized_after: after,
            }));
        }
    }

    fn wants_input(&self) -> bool {
        matches!(self.wait, Wait::Nothing | Wait::AuthData(_) | Wait::Idle(_))
            && self.state != State::Logout
    }
}
