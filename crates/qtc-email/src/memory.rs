//! A [`MailStore`] in memory for the cores' tests and fuzz targets: qtc-mail's memory store
//! (messages, users, read marks, the kill rules) with what mail clients keep beside it
//! (attachments with their types, threads, `\Answered`), the partners' routes and a
//! messages-per-hour allowance.

use std::collections::{BTreeMap, HashMap, HashSet};

use qtc_callsign::Callsign;
use qtc_mail::memory::MemoryStore;
use qtc_mail::route::{PartnerRoutes, RouteQuery};
use qtc_mail::{ListFilter, MessageHeader, MessageStore, MsgType, NewMessage, StoreError};

use crate::addr::Dest;
use crate::folder::{Folder, FolderMark, FolderMessage};
use crate::store::{
    Article, Attachment, Entry, GroupInfo, MailStore, Route, Stored, Submission, Thread,
};

/// Messages and users in memory, as a mail session's store.
#[derive(Clone, Debug)]
pub struct MemoryMail {
    /// The BBS's messages and users.
    pub store: MemoryStore,
    /// This BBS's callsign (for routing and BIDs).
    pub call: Callsign,
    /// The forwarding partners' routes.
    pub partners: Vec<PartnerRoutes>,
    /// Messages a user may send (0: no limit); the sysop and BBS accounts are exempt.
    pub per_user: usize,
    /// The store is full: every submission is refused.
    pub full: bool,
    sent: HashMap<Callsign, usize>,
    files: HashMap<u64, Vec<Attachment>>,
    threads: HashMap<u64, Thread>,
    answered: HashSet<(Callsign, u64)>,
    folders: BTreeMap<(Callsign, String), MemFolder>,
    validities: u32,
    time: i64,
}

/// A user's folder: its UIDVALIDITY and next UID, its copies by UID.
#[derive(Clone, Debug, Default)]
struct MemFolder {
    validity: u32,
    uid_next: u64,
    copies: BTreeMap<u64, FolderMessage>,
}

impl MemoryMail {
    /// An empty store of the BBS `call`.
    pub fn new(call: Callsign) -> MemoryMail {
        MemoryMail {
            store: MemoryStore::default(),
            call,
            partners: Vec::new(),
            per_user: 0,
            full: false,
            sent: HashMap::new(),
            files: HashMap::new(),
            threads: HashMap::new(),
            answered: HashSet::new(),
            folders: BTreeMap::new(),
            validities: 0,
            time: 1_796_214_665,
        }
    }

    /// Stores a message with its attachments and thread; its number.
    pub fn insert(
        &mut self,
        msg: &NewMessage,
        files: Vec<Attachment>,
        thread: Thread,
    ) -> Result<u64, StoreError> {
        self.time += 1;
        let n = self.store.insert_message(msg, self.call, self.time)?;
        self.files.insert(n, files);
        self.threads.insert(n, thread);
        Ok(n)
    }

    fn folder(&mut self, call: Callsign, name: &str) -> Result<&mut MemFolder, StoreError> {
        self.folders
            .get_mut(&(call, name.to_string()))
            .ok_or_else(|| StoreError::Database(format!("no folder {name}")))
    }

    /// A listing's rows (newest first) as `call`'s entries, oldest first, with their
    /// `\Answered` marks.
    fn entries(&self, call: Callsign, heads: Vec<MessageHeader>) -> Vec<Entry> {
        heads
            .into_iter()
            .rev()
            .map(|h| {
                let answered = self.answered.contains(&(call, h.number));
                Entry::of(h, answered)
            })
            .collect()
    }

    fn exempt(&mut self, call: Callsign) -> Result<bool, StoreError> {
        Ok(self.store.user(call)?.is_some_and(|u| u.sysop || u.bbs))
    }
}

impl MailStore for MemoryMail {
    fn mailbox(&mut self, call: Callsign, max: usize) -> Result<Vec<Entry>, StoreError> {
        let f = ListFilter {
            to_or_copy: Some(call.to_string()),
            visible_to: Some(call.to_string()),
            last: Some(max),
            ..Default::default()
        };
        let mut heads = self.store.list(&f)?;
        heads.retain(|h| h.kind != MsgType::Bulletin);
        Ok(self.entries(call, heads))
    }

    fn stored(&mut self, number: u64) -> Result<Option<Stored>, StoreError> {
        Ok(self.store.message(number)?.map(|message| Stored {
            message,
            files: self.files.get(&number).cloned().unwrap_or_default(),
            thread: self.threads.get(&number).cloned().unwrap_or_default(),
        }))
    }

    fn set_seen(&mut self, number: u64, call: Callsign, seen: bool) -> Result<(), StoreError> {
        match seen {
            true => self.store.mark_read(number, call),
            false => {
                self.store.mark_unread(number, call);
                Ok(())
            }
        }
    }

    fn set_answered(&mut self, number: u64, call: Callsign, on: bool) -> Result<(), StoreError> {
        let key = (call, number);
        match on {
            true => self.answered.insert(key),
            false => self.answered.remove(&key),
        };
        Ok(())
    }

    fn kill(&mut self, number: u64, call: Callsign) -> Result<bool, StoreError> {
        let outcome = qtc_mail::kill::kill(&mut self.store, number, &call.to_string(), false)?;
        Ok(outcome == qtc_mail::kill::KillOutcome::Killed)
    }

    fn may_send(&mut self, call: Callsign, copies: usize) -> Result<(), StoreError> {
        let sent = self.sent.get(&call).copied().unwrap_or(0);
        if self.per_user > 0 && sent + copies > self.per_user && !self.exempt(call)? {
            return Err(StoreError::OverLimit(format!(
                "You have sent {} messages this hour, the most allowed here",
                self.per_user
            )));
        }
        Ok(())
    }

    fn route(&mut self, dest: &Dest) -> Result<Route, StoreError> {
        let q = RouteQuery {
            kind: dest.kind,
            to: &dest.to,
            at: &dest.at,
            origin: None,
            seen: &[],
        };
        let targets = qtc_mail::route::targets(&q, self.call, &self.partners);
        let local = qtc_mail::route::is_local(&dest.at, self.call);
        Ok(Route::of(targets, local))
    }

    fn submit(&mut self, sub: &Submission) -> Result<Vec<(u64, String)>, StoreError> {
        if self.full {
            return Err(StoreError::Full);
        }
        self.may_send(sub.from, sub.dests.len())?;
        let mut out = Vec::new();
        for msg in sub.messages() {
            let n = self.insert(&msg, sub.files.clone(), sub.thread.clone())?;
            let bid = self.store.message(n)?.map(|m| m.header.bid);
            out.push((n, bid.unwrap_or_default()));
        }
        *self.sent.entry(sub.from).or_default() += out.len();
        Ok(out)
    }

    fn group(&mut self, category: &str, at: &str) -> Result<Option<GroupInfo>, StoreError> {
        Ok(self
            .groups()?
            .into_iter()
            .find(|g| g.category == category && g.at == at))
    }

    fn groups(&mut self) -> Result<Vec<GroupInfo>, StoreError> {
        let mut areas = BTreeMap::<(String, String), GroupInfo>::new();
        for h in self.store.list(&bulletins())? {
            let g = areas
                .entry((h.to.clone(), h.at.clone()))
                .or_insert_with(|| GroupInfo {
                    category: h.to.clone(),
                    at: h.at.clone(),
                    count: 0,
                    low: h.number,
                    high: h.number,
                });
            g.count += 1;
            g.low = g.low.min(h.number);
            g.high = g.high.max(h.number);
        }
        Ok(areas.into_values().collect())
    }

    fn numbers(
        &mut self,
        category: &str,
        at: &str,
        range: (u64, u64),
        limit: usize,
    ) -> Result<Vec<u64>, StoreError> {
        let articles = self.articles(category, at, range, limit)?;
        Ok(articles.iter().map(|a| a.number).collect())
    }

    fn articles(
        &mut self,
        category: &str,
        at: &str,
        (from, to): (u64, u64),
        limit: usize,
    ) -> Result<Vec<Article>, StoreError> {
        let mut out = Vec::new();
        for h in self.store.list(&bulletins())? {
            if h.to == category && h.at == at && (from..=to).contains(&h.number) {
                let body = self.store.message(h.number)?.map(|m| m.body);
                out.push(Article {
                    number: h.number,
                    from: h.from,
                    subject: h.subject,
                    created: h.created,
                    bid: h.bid,
                    size: h.size,
                    lines: body.map_or(0, |b| crate::render::text_lines(&b)),
                });
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    fn bulletins(
        &mut self,
        call: Callsign,
        category: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let f = ListFilter {
            kind: Some(MsgType::Bulletin),
            to: Some(category.to_string()),
            visible_to: Some(call.to_string()),
            last: Some(max),
            ..Default::default()
        };
        let heads = self.store.list(&f)?;
        Ok(self.entries(call, heads))
    }

    fn folders(&mut self, call: Callsign) -> Result<Vec<Folder>, StoreError> {
        Ok(self
            .folders
            .iter()
            .filter(|((c, _), _)| *c == call)
            .map(|((_, name), f)| Folder {
                name: name.clone(),
                validity: f.validity,
                uid_next: f.uid_next,
                messages: f.copies.len() as u64,
                unseen: f.copies.values().filter(|c| !c.seen).count() as u64,
                bytes: f.copies.values().map(|c| c.bytes.len() as u64).sum(),
            })
            .collect())
    }

    fn create_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        self.validities += 1;
        let f = MemFolder {
            validity: self.validities,
            uid_next: 1,
            copies: BTreeMap::new(),
        };
        self.folders.insert((call, name.to_string()), f);
        Ok(())
    }

    fn delete_folder(&mut self, call: Callsign, name: &str) -> Result<(), StoreError> {
        self.folders.remove(&(call, name.to_string()));
        Ok(())
    }

    fn rename_folder(&mut self, call: Callsign, from: &str, to: &str) -> Result<(), StoreError> {
        if let Some(f) = self.folders.remove(&(call, from.to_string())) {
            self.folders.insert((call, to.to_string()), f);
        }
        Ok(())
    }

    fn folder_entries(
        &mut self,
        call: Callsign,
        name: &str,
        max: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        let f = self.folder(call, name)?;
        let skip = f.copies.len().saturating_sub(max);
        Ok(f.copies
            .iter()
            .skip(skip)
            .map(|(&uid, c)| Entry::kept(uid, c.bytes.len() as u64, c.clone()))
            .collect())
    }

    fn folder_text(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .folder(call, name)?
            .copies
            .get(&uid)
            .map(|c| c.bytes.clone()))
    }

    fn keep_copies(
        &mut self,
        call: Callsign,
        name: &str,
        copies: &[FolderMessage],
    ) -> Result<Vec<u64>, StoreError> {
        if self.full {
            return Err(StoreError::Full);
        }
        let now = self.time;
        let f = self.folder(call, name)?;
        let mut uids = Vec::with_capacity(copies.len());
        for c in copies {
            let mut c = c.clone();
            if c.created == 0 {
                c.created = now;
            }
            f.copies.insert(f.uid_next, c);
            uids.push(f.uid_next);
            f.uid_next += 1;
        }
        Ok(uids)
    }

    fn set_folder_mark(
        &mut self,
        call: Callsign,
        name: &str,
        uid: u64,
        mark: FolderMark,
        on: bool,
    ) -> Result<(), StoreError> {
        if let Some(c) = self.folder(call, name)?.copies.get_mut(&uid) {
            match mark {
                FolderMark::Seen => c.seen = on,
                FolderMark::Answered => c.answered = on,
            }
        }
        Ok(())
    }

    fn expunge_copy(&mut self, call: Callsign, name: &str, uid: u64) -> Result<bool, StoreError> {
        Ok(self.folder(call, name)?.copies.remove(&uid).is_some())
    }
}

/// Every bulletin anyone may read, oldest first.
fn bulletins() -> ListFilter {
    ListFilter {
        kind: Some(MsgType::Bulletin),
        visible_to: Some(String::new()),
        oldest_first: true,
        ..Default::default()
    }
}
