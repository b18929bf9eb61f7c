//! The commands of the selected state: FETCH, STORE, SEARCH, EXPUNGE, CLOSE, UNSELECT, IDLE,
//! COPY and MOVE (`folders.rs`). Each store write (a read mark, an answered mark, an expunged
//! message) is one request; the command goes on with the next message when it is answered.

use std::collections::VecDeque;

use imap_codec::imap_types::command::CommandBody;
use imap_codec::imap_types::flag::StoreResponse;

use super::*;
use crate::folder::{Expunge, FolderMark, SetMark, Text};
use crate::render::Rendered;
use fetch::Item;

/// A FETCH going message by message.
struct FetchJob {
    tag: String,
    uid: bool,
    items: Vec<Item>,
    todo: VecDeque<usize>,
}

/// A mark to write: which message, which mark, set or cleared.
#[derive(Clone, Copy, Debug)]
enum MarkTo {
    Seen(usize, bool),
    Answered(usize, bool),
}

/// STORE: the marks to write, then the messages to tell of.
struct StoreJob {
    tag: String,
    uid: bool,
    silent: bool,
    todo: VecDeque<MarkTo>,
    changed: Vec<usize>,
}

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
                self.fetch_next(FetchJob {
                    tag,
                    uid,
                    items,
                    todo,
                });
            }
            CommandBody::Search { criteria, uid, .. } => self.search(&tag, criteria.as_ref(), uid),
            CommandBody::Store { .. } | CommandBody::Expunge | CommandBody::ExpungeUid { .. }
                if read_only =>
            {
                self.x
                    .say(&format!("{tag} NO [READ-ONLY] selected with EXAMINE"))
            }
            CommandBody::Move { .. } if read_only => {
                self.x
                    .say(&format!("{tag} NO [READ-ONLY] selected with EXAMINE"))
            }
            CommandBody::Store {
                kind: StoreType::Add | StoreType::Replace,
                flags,
                ..
            } if flags.contains(&Flag::Deleted) && matches!(self.place, Place::Bulletins(_)) => {
                self.x.say(&format!(
                    "{tag} NO [CANNOT] a bulletin stays: only your \\Seen and \\Answered are kept here"
                ))
            }
            CommandBody::Store {
                sequence_set,
                kind,
                response,
                flags,
                uid,
                ..
            } => {
                let silent = response == StoreResponse::Silent;
                self.store(tag, &sequence_set, kind, silent, &flags, uid)
            }
            CommandBody::Expunge => self.expunge(tag, "EXPUNGE", None),
            CommandBody::ExpungeUid { sequence_set } => {
                self.expunge(tag, "EXPUNGE", Some(sequence_set))
            }
            CommandBody::Close if read_only => self.unselect(&tag, "CLOSE"),
            CommandBody::Close => self.expunge(tag, "CLOSE", None),
            CommandBody::Copy {
                sequence_set,
                mailbox,
                uid,
            } => self.copy(tag, &sequence_set, &mailbox, uid),
            CommandBody::Move {
                sequence_set,
                mailbox,
                uid,
            } => self.move_to(tag, &sequence_set, &mailbox, uid),
            CommandBody::Unselect => self.unselect(&tag, "UNSELECT"),
            CommandBody::Idle => {
                self.x.say("+ idling");
                self.expecting = Input::Idle(tag);
                self.x.watch(true);
            }
            _ => self.x.say(&format!("{tag} BAD command unknown here")),
        }
    }

    fn unselect(&mut self, tag: &str, cmd: &str) {
        self.unselect_quietly();
        self.x.say(&format!("{tag} OK {cmd} completed"));
    }

    /// The client's DONE ends IDLE; false when more input is needed.
    pub(super) fn idle_done(&mut self) -> bool {
        let input = std::mem::take(&mut self.input);
        match IdleDoneCodec::default().decode(&input) {
            Ok((rest, _)) => {
                self.input = rest.to_vec();
                if let Input::Idle(tag) = std::mem::replace(&mut self.expecting, Input::Commands) {
                    self.x.watch(false);
                    self.x.say(&format!("{tag} OK IDLE terminated"));
                }
                true
            }
            Err(IdleDoneDecodeError::Incomplete) => {
                self.input = input;
                false
            }
            Err(IdleDoneDecodeError::Failed) => {
                self.input = input[line_end(&input)..].to_vec();
                self.x.say("* BAD expected DONE");
                true
            }
        }
    }

    fn search(&mut self, tag: &str, keys: &[SearchKey<'_>], uid: bool) {
        let Some(me) = self.user_for(tag) else {
            return;
        };
        let me = me.to_string();
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
        self.x.say(&line);
        self.x.say(&format!("{tag} OK SEARCH completed"));
    }

    fn fetch_next(&mut self, mut job: FetchJob) {
        let render = job.items.iter().any(Item::needs_render);
        while let Some(i) = job.todo.pop_front() {
            if render {
                let Some(call) = self.user_for(&job.tag) else {
                    return;
                };
                let query = Text {
                    call,
                    place: self.place.clone(),
                    number: self.msgs[i].entry.number,
                    settings: self.s.clone(),
                };
                return self.x.ask(query, move |s: &mut Imap, r| match r {
                    Ok(r) => s.fetched(job, i, r.as_deref()),
                    Err(_) => s.unavailable(&job.tag),
                });
            }
            self.fetch_line(&job, i, None);
        }
        let what = if job.uid { "UID FETCH" } else { "FETCH" };
        self.x.say(&format!("{} OK {what} completed", job.tag));
    }

    /// A rendered message for a FETCH: its line, its read mark written when a body was read
    /// (before the next message is fetched), then the next.
    fn fetched(&mut self, job: FetchJob, i: usize, r: Option<&Rendered>) {
        if !self.fetch_line(&job, i, r) {
            return self.fetch_next(job);
        }
        let Some(call) = self.user_for(&job.tag) else {
            return;
        };
        let query = SetMark {
            call,
            place: self.place.clone(),
            number: self.msgs[i].entry.number,
            mark: FolderMark::Seen,
            on: true,
        };
        self.x.ask(query, move |s: &mut Imap, done| match done {
            Ok(()) => s.fetch_next(job),
            Err(_) => s.unavailable(&job.tag),
        });
    }

    /// Writes one FETCH response; true when it set `\Seen` (a BODY[] without PEEK).
    fn fetch_line(&mut self, job: &FetchJob, i: usize, r: Option<&Rendered>) -> bool {
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
        let out = self.x.out();
        out.extend_from_slice(format!("* {} FETCH (", i + 1).as_bytes());
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push(b' ');
            }
            fetch::write_item(item, &self.msgs[i], r, &self.s, out);
        }
        out.extend_from_slice(b")\r\n");
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
        let has = |f: Flag<'_>| flags.contains(&f);
        let (seen, answered, deleted) = (has(Flag::Seen), has(Flag::Answered), has(Flag::Deleted));
        let mut job = StoreJob {
            tag,
            uid,
            silent,
            todo: VecDeque::new(),
            changed: Vec::new(),
        };
        let apply = |now: bool, named: bool| match kind {
            StoreType::Replace => named,
            StoreType::Add => now || named,
            StoreType::Remove => now && !named,
        };
        for i in search::select(set, &self.msgs, uid) {
            let m = &mut self.msgs[i];
            m.deleted = apply(m.deleted, deleted);
            let want_seen = apply(m.entry.seen, seen);
            if want_seen != m.entry.seen {
                m.entry.seen = want_seen;
                job.todo.push_back(MarkTo::Seen(i, want_seen));
            }
            let want_answered = apply(m.entry.answered, answered);
            if want_answered != m.entry.answered {
                m.entry.answered = want_answered;
                job.todo.push_back(MarkTo::Answered(i, want_answered));
            }
            job.changed.push(i);
        }
        self.store_next(job);
    }

    fn store_next(&mut self, mut job: StoreJob) {
        let Some(mark) = job.todo.pop_front() else {
            return self.stored(&job);
        };
        let (i, mark, on) = match mark {
            MarkTo::Seen(i, on) => (i, FolderMark::Seen, on),
            MarkTo::Answered(i, on) => (i, FolderMark::Answered, on),
        };
        let Some(call) = self.user_for(&job.tag) else {
            return;
        };
        let query = SetMark {
            call,
            place: self.place.clone(),
            number: self.msgs[i].entry.number,
            mark,
            on,
        };
        self.x.ask(query, move |s: &mut Imap, done| match done {
            Ok(()) => s.store_next(job),
            Err(_) => s.unavailable(&job.tag),
        })
    }

    /// STORE is done: the new flags (unless .SILENT), then OK.
    fn stored(&mut self, job: &StoreJob) {
        if !job.silent {
            for &i in &job.changed {
                let uid = match job.uid {
                    true => format!(" UID {}", self.msgs[i].entry.number),
                    false => String::new(),
                };
                let line = format!("* {} FETCH ({}{uid})", i + 1, fetch::flags(&self.msgs[i]));
                self.x.say(&line);
            }
        }
        self.x.say(&format!("{} OK STORE completed", job.tag));
    }

    fn expunge(&mut self, tag: String, cmd: &'static str, only: Option<SequenceSet>) {
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
        self.expunge_next(tag, cmd, todo);
    }

    /// Expunges messages one by one (the `\Deleted` ones for EXPUNGE and CLOSE, the moved
    /// ones for MOVE): a kill in the INBOX, the copy gone in a folder. Each is gone from the
    /// mailbox, and told unless CLOSE.
    pub(super) fn expunge_next(&mut self, tag: String, cmd: &'static str, mut todo: VecDeque<u64>) {
        let close = cmd == "CLOSE";
        let Some(number) = todo.pop_front() else {
            return match close {
                true => self.unselect(&tag, cmd),
                false => self.x.say(&format!("{tag} OK {cmd} completed")),
            };
        };
        let Some(call) = self.user_for(&tag) else {
            return;
        };
        let query = Expunge {
            call,
            place: self.place.clone(),
            number,
        };
        self.x.ask(query, move |s: &mut Imap, gone| match gone {
            Ok(gone) => {
                if gone {
                    s.expunged(number, close);
                }
                s.expunge_next(tag, cmd, todo)
            }
            Err(_) => s.unavailable(&tag),
        });
    }

    fn expunged(&mut self, number: u64, close: bool) {
        if let Some(i) = self.msgs.iter().position(|m| m.entry.number == number) {
            self.msgs.remove(i);
            if !close {
                self.x.say(&format!("* {} EXPUNGE", i + 1));
            }
        }
    }
}
