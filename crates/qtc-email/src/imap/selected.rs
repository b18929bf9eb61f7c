//! The commands of the selected state: FETCH, STORE, SEARCH, EXPUNGE, CLOSE, UNSELECT, IDLE.

use std::collections::VecDeque;

use imap_codec::imap_types::command::CommandBody;
use imap_codec::imap_types::flag::StoreResponse;

use super::*;

impl Imap {
    pub(super) fn selected(&mut self, tag: String, read_only: bool, body: CommandBody<'_>) {
        match body {
            CommandBody::Fetch {
                sequence_set,
                macro_or_item_names,
                uid,
                ..
            } => {
                let items = fetch::items(&macro_or_item_names, uid);
                let todo = search::select(&sequence_set, &self.msgs, uid).into();
                self.fetch_next(Box::new(FetchJob {
                    tag,
                    uid,
                    items,
                    todo,
                    current: None,
                }));
            }
            CommandBody::Search { criteria, uid, .. } => self.search(&tag, criteria.as_ref(), uid),
            CommandBody::Store { .. } | CommandBody::Expunge | CommandBody::ExpungeUid { .. }
                if read_only =>
            {
                self.line(&format!("{tag} NO [READ-ONLY] selected with EXAMINE"))
            }
            CommandBody::Store {
                sequence_set,
                kind,
                response,
                flags,
                uid,
                ..
            } => self.store(
                tag,
                &sequence_set,
                kind,
                response == StoreResponse::Silent,
                &flags,
                uid,
            ),
            CommandBody::Expunge => self.expunge(tag, false, None),
            CommandBody::ExpungeUid { sequence_set } => {
                self.expunge(tag, false, Some(sequence_set))
            }
            CommandBody::Close if read_only => {
                self.state = State::Auth;
                self.line(&format!("{tag} OK CLOSE completed"));
            }
            CommandBody::Close => self.expunge(tag, true, None),
            CommandBody::Unselect => {
                self.state = State::Auth;
                self.msgs.clear();
                self.line(&format!("{tag} OK UNSELECT completed"));
            }
            CommandBody::Idle => {
                self.line("+ idling");
                self.wait = Wait::Idle(tag);
                self.events.push_back(Event::Watch(true));
            }
            _ => self.line(&format!(
                "{tag} NO [CANNOT] not here: the one mailbox is INBOX"
            )),
        }
    }

    /// The client's DONE ends IDLE; false when more input is needed.
    pub(super) fn idle_done(&mut self) -> bool {
        let input = std::mem::take(&mut self.input);
        match IdleDoneCodec::default().decode(&input) {
            Ok((rest, _)) => {
                self.input = rest.to_vec();
                let Wait::Idle(tag) = std::mem::replace(&mut self.wait, Wait::Nothing) else {
                    return true;
                };
                self.events.push_back(Event::Watch(false));
                self.line(&format!("{tag} OK IDLE terminated"));
                true
            }
            Err(IdleDoneDecodeError::Incomplete) => {
                self.input = input;
                false
            }
            Err(IdleDoneDecodeError::Failed) => {
                let end = input
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(input.len(), |p| p + 1);
                self.input = input[end..].to_vec();
                self.line("* BAD expected DONE");
                true
            }
        }
    }

    fn search(&mut self, tag: &str, keys: &[SearchKey<'_>], uid: bool) {
        let me = self.user.clone().unwrap_or_default();
        let found: Vec<String> = (0..self.msgs.len())
            .filter(|&i| keys.iter().all(|k| search::matches(k, &self.msgs, i, &me)))
            .map(|i| match uid {
                true => self.msgs[i].entry.number.to_string(),
                false => (i + 1).to_string(),
            })
            .collect();
        let line = match found.is_empty() {
            true => "* SEARCH".to_string(),
            false => format!("* SEARCH {}", found.join(" ")),
        };
        self.line(&line);
        self.line(&format!("{tag} OK SEARCH completed"));
    }

    pub(super) fn fetch_next(&mut self, mut job: Box<FetchJob>) {
        let render = job.items.iter().any(Item::needs_render);
        while let Some(i) = job.todo.pop_front() {
            if render {
                job.current = Some(i);
                let (number, call) = (self.msgs[i].entry.number, self.user.clone());
                self.wait = Wait::Fetch(job);
                self.events
                    .push_back(Event::Store(Request::Render { number, call }));
                return;
            }
            self.fetch_line(&job, i, None);
        }
        self.wait = Wait::Nothing;
        let what = if job.uid { "UID FETCH" } else { "FETCH" };
        self.line(&format!("{} OK {what} completed", job.tag));
    }

    /// Writes one FETCH response; true when it set `\Seen` (a BODY[] without PEEK).
    pub(super) fn fetch_line(&mut self, job: &FetchJob, i: usize, r: Option<&Rendered>) -> bool {
        let sets_seen = !self.msgs[i].entry.seen
            && job
                .items
                .iter()
                .any(|it| matches!(it, Item::Section { peek: false, .. }));
        if sets_seen {
            self.msgs[i].entry.seen = true;
        }
        let mut items = job.items.clone();
        if sets_seen && !items.contains(&Item::Flags) {
            items.push(Item::Flags);
        }
        self.out
            .extend_from_slice(format!("* {} FETCH (", i + 1).as_bytes());
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                self.out.push(b' ');
            }
            let mut out = std::mem::take(&mut self.out);
            fetch::write_item(item, &self.msgs[i], r, &self.s, &mut out);
            self.out = out;
        }
        self.out.extend_from_slice(b")\r\n");
        sets_seen
    }

    fn store(
        &mut self,
        tag: String,
        set: &SequenceSet,
        kind: StoreType,
        silent: bool,
        flags: &[Flag<'_>],
        uid: bool,
    ) {
        let seen = flags.contains(&Flag::Seen);
        let deleted = flags.contains(&Flag::Deleted);
        let mut job = StoreJob {
            tag,
            uid,
            silent,
            todo: VecDeque::new(),
            changed: Vec::new(),
        };
        for i in search::select(set, &self.msgs, uid) {
            let m = &mut self.msgs[i];
            let (want_seen, want_deleted) = match kind {
                StoreType::Replace => (seen, deleted),
                StoreType::Add => (m.entry.seen || seen, m.deleted || deleted),
                StoreType::Remove => (m.entry.seen && !seen, m.deleted && !deleted),
            };
            m.deleted = want_deleted;
            if want_seen != m.entry.seen {
                m.entry.seen = want_seen;
                job.todo.push_back((i, want_seen));
            }
            job.changed.push(i);
        }
        self.store_next(Box::new(job));
    }

    pub(super) fn store_next(&mut self, mut job: Box<StoreJob>) {
        if let Some((i, seen)) = job.todo.pop_front() {
            let (number, call) = (
                self.msgs[i].entry.number,
                self.user.clone().unwrap_or_default(),
            );
            self.wait = Wait::Store(job);
            self.events
                .push_back(Event::Store(Request::Seen { number, call, seen }));
            return;
        }
        self.wait = Wait::Nothing;
        if !job.silent {
            for &i in &job.changed {
                let uid = match job.uid {
                    true => format!(" UID {}", self.msgs[i].entry.number),
                    false => String::new(),
                };
                let line = format!("* {} FETCH ({}{uid})", i + 1, fetch::flags(&self.msgs[i]));
                self.line(&line);
            }
        }
        self.line(&format!("{} OK STORE completed", job.tag));
    }

    fn expunge(&mut self, tag: String, close: bool, only: Option<SequenceSet>) {
        let largest = self.msgs.last().map_or(0, |m| m.entry.number);
        let todo = self
            .msgs
            .iter()
            .filter(|m| m.deleted)
            .filter(|m| {
                only.as_ref()
                    .is_none_or(|s| search::contains(s, m.entry.number, largest))
            })
            .map(|m| m.entry.number)
            .collect();
        self.expunge_next(Box::new(ExpungeJob {
            tag,
            close,
            todo,
            current: None,
        }));
    }

    pub(super) fn expunge_next(&mut self, mut job: Box<ExpungeJob>) {
        if let Some(number) = job.todo.pop_front() {
            let call = self.user.clone().unwrap_or_default();
            job.current = Some(number);
            self.wait = Wait::Expunge(job);
            self.events
                .push_back(Event::Store(Request::Kill { number, call }));
            return;
        }
        self.wait = Wait::Nothing;
        if job.close {
            self.state = State::Auth;
            self.msgs.clear();
            return self.line(&format!("{} OK CLOSE completed", job.tag));
        }
        self.line(&format!("{} OK EXPUNGE completed", job.tag));
    }

    /// A message killed by EXPUNGE: gone from the mailbox (told unless CLOSE).
    pub(super) fn expunged(&mut self, number: u64, close: bool) {
        if let Some(i) = self.msgs.iter().position(|m| m.entry.number == number) {
            self.msgs.remove(i);
            if !close {
                self.line(&format!("* {} EXPUNGE", i + 1));
            }
        }
    }
}
